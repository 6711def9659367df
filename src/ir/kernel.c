/* The built kernel: reference counting, accessors, the kernel ABI's accessors and the
 * evaluation of launch-time expressions. */
#include <stdlib.h>

#include "ir.h"
#include "kernel_abi.h"

tirx_kernel *tirx_kernel_retain(tirx_kernel *k) {
  if (k) atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed);
  return k;
}

void tirx_kernel_release(tirx_kernel *k) {
  if (!k) return;
  if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) != 1) return;
  tirx_arena_destroy(k->arena);
  free(k);
}

const char *tirx_kernel_name(const tirx_kernel *k) { return k ? k->name : NULL; }
const char *tirx_kernel_ir_str(const tirx_kernel *k) { return k ? k->ir : NULL; }
const char *tirx_kernel_source(const tirx_kernel *k) { return k ? k->source : NULL; }
int tirx_kernel_num_params(const tirx_kernel *k) { return k ? k->nparams : 0; }
const char *tirx_kernel_param_name(const tirx_kernel *k, int i) {
  return k && i >= 0 && i < k->nparams ? k->params[i].name : NULL;
}

tirx_specialize tirx_kernel_param_policy(const tirx_kernel *k, int i) {
  if (!k || i < 0 || i >= k->nparams || k->params[i].kind != TIRX__KP_INT)
    return TIRX_SPECIALIZE_DYNAMIC;
  return (tirx_specialize)k->params[i].policy;
}

const char *tirx__kernel_source(const tirx_kernel *k) { return k ? k->source : NULL; }

tirx_status tirx__kernel_variant_source(const tirx_kernel *k, int nspec, const int64_t *spec,
                                        char **out) {
  static const char fn[] = "kernel variant source";
  if (out) *out = NULL;
  if (!k) return tirx__error(TIRX_E_NULL_ARG, "%s: k is NULL", fn);
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  if (nspec != 0 && nspec != k->nspec)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: the key has %d entries, expected %d (the kernel's specialised "
                       "parameters) or 0",
                       fn, nspec, k->nspec);
  if (nspec && !spec) return tirx__error(TIRX_E_NULL_ARG, "%s: spec is NULL", fn);
  /* The #define lines, then the plain source. */
  tirx__strbuf sb = {0};
  for (int j = 0; j < nspec; j++) {
    const tirx__kparam *p = &k->params[k->spec[j]];
    int64_t v = spec[j];
    if (p->policy == TIRX_SPECIALIZE_DIV16) {
      if (v != 0 && v != 1) {
        free(tirx__sb_finish(&sb));
        return tirx__error(TIRX_E_INVALID_ARG,
                           "%s: spec[%d] (%s, divisibility by 16) is %lld, expected 0 or 1", fn,
                           j, p->name, (long long)v);
      }
      if (v) tirx__sb_printf(&sb, "#define TIRX_DIV16_%s 1\n", p->cname);
      continue;
    }
    if (p->dtype == TIRX_I32 && (v < INT32_MIN || v > INT32_MAX)) {
      free(tirx__sb_finish(&sb));
      return tirx__error(TIRX_E_INVALID_ARG, "%s: spec[%d] (%s) is %lld, which does not fit i32",
                         fn, j, p->name, (long long)v);
    }
    const char *suffix = p->dtype == TIRX_I64 ? "LL" : "";
    if (v == INT64_MIN)
      tirx__sb_printf(&sb, "#define TIRX_SPEC_%s (-9223372036854775807LL - 1)\n", p->cname);
    else if (v == INT32_MIN && p->dtype == TIRX_I32)
      tirx__sb_printf(&sb, "#define TIRX_SPEC_%s (-2147483647 - 1)\n", p->cname);
    else
      tirx__sb_printf(&sb,
                      v < 0 ? "#define TIRX_SPEC_%s (%lld%s)\n" : "#define TIRX_SPEC_%s %lld%s\n",
                      p->cname, (long long)v, suffix);
  }
  tirx__sb_append(&sb, k->source);
  char *s = tirx__sb_finish(&sb);
  if (!s) return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  *out = s;
  return TIRX_OK;
}
const char *tirx_kernel_target(const tirx_kernel *k) { return k ? k->target : NULL; }

tirx_status tirx__kernel_check_arch(const tirx_kernel *k, const char *fn, const char *what,
                                    const char *arch) {
  char suffix = 0;
  int number = tirx__arch_parse(arch, &suffix);
  if (number < 0)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: %s is '%.32s', expected sm_<major><minor>[a|f] (sm_90a, sm_80)", fn,
                       what, arch ? arch : "(null)");
  int lack = tirx__features_missing(tirx__arch_features(number, suffix), k->need);
  if (lack >= 0)
    return tirx__error(TIRX_E_NOT_SUPPORTED,
                       "%s: %s is %s, expected %s: kernel '%s' (dispatched for %s) uses %s, "
                       "which needs %s",
                       fn, what, arch, tirx__feature_where((tirx__feature)lack), k->name,
                       k->target, k->need_what[lack], tirx__feature_name((tirx__feature)lack));
  return TIRX_OK;
}

const char *tirx__kernel_entry(const tirx_kernel *k) { return k ? k->name : NULL; }
const char *tirx__kernel_ir(const tirx_kernel *k) { return k ? k->ir : NULL; }

void tirx__kernel_hash(const tirx_kernel *k, uint64_t out[2]) {
  if (!out) return;
  out[0] = k ? k->hash[0] : 0;
  out[1] = k ? k->hash[1] : 0;
}

/* Wraps v to the integer type t, as the device would. */
static int64_t wrap(int64_t v, int t) {
  switch (t) {
  case TIRX_I8: return (int8_t)v;
  case TIRX_U8: return (uint8_t)v;
  case TIRX_I32: return (int32_t)v;
  case TIRX_U32: return (uint32_t)v;
  case TIRX_BOOL: return v != 0;
  default: return v;
  }
}

bool tirx__hexpr_eval(const tirx_kernel *k, int32_t idx, const int64_t *vals, int64_t *out,
                      const char **why) {
  const tirx__hexpr *h = &k->hx[idx];
  int64_t a = 0, b = 0, r = 0;
  switch (h->kind) {
  case TIRX__EX_INT: *out = h->v; return true;
  case TIRX__EX_PARAM: *out = vals[h->v]; return true;
  case TIRX__EX_CAST:
    if (!tirx__hexpr_eval(k, h->a, vals, &a, why)) return false;
    *out = wrap(a, h->dtype);
    return true;
  case TIRX__EX_SELECT:
    if (!tirx__hexpr_eval(k, h->a, vals, &a, why)) return false;
    return tirx__hexpr_eval(k, a ? h->b : h->c, vals, out, why);
  case TIRX__EX_UNARY:
    if (!tirx__hexpr_eval(k, h->a, vals, &a, why)) return false;
    if (h->op == TIRX__OP_NOT) {
      *out = !a;
      return true;
    }
    if (a == INT64_MIN) goto overflow;
    *out = wrap(-a, h->dtype);
    return true;
  case TIRX__EX_BINARY: break;
  default: *why = "not computable at launch"; return false;
  }
  if (!tirx__hexpr_eval(k, h->a, vals, &a, why) || !tirx__hexpr_eval(k, h->b, vals, &b, why))
    return false;
  int t = k->hx[h->a].dtype;
  bool uns = t == TIRX_U32 || t == TIRX_U8;
  switch (h->op) {
  case TIRX__OP_ADD: if (!tirx__add_ok(a, b, &r)) goto overflow; break;
  case TIRX__OP_SUB: if (__builtin_sub_overflow(a, b, &r)) goto overflow; break;
  case TIRX__OP_MUL: if (!tirx__mul_ok(a, b, &r)) goto overflow; break;
  case TIRX__OP_DIV:
  case TIRX__OP_MOD:
  case TIRX__OP_CEILDIV:
    if (b == 0) {
      *why = "division by zero";
      return false;
    }
    if (a == INT64_MIN && b == -1) goto overflow;
    if (h->op == TIRX__OP_DIV) r = a / b;
    else if (h->op == TIRX__OP_MOD) r = a % b;
    else {
      if (!tirx__add_ok(a, b - 1, &r)) goto overflow;
      r /= b;
    }
    break;
  case TIRX__OP_MIN: r = a < b ? a : b; break;
  case TIRX__OP_MAX: r = a > b ? a : b; break;
  case TIRX__OP_BAND: r = a & b; break;
  case TIRX__OP_BOR: r = a | b; break;
  case TIRX__OP_BXOR: r = a ^ b; break;
  case TIRX__OP_SHL:
    if (b < 0 || b > 63) goto overflow;
    r = (int64_t)((uint64_t)a << b);
    break;
  case TIRX__OP_SHR:
    if (b < 0 || b > 63) goto overflow;
    r = uns ? (int64_t)((uint64_t)a >> b) : a >> b;
    break;
  case TIRX__OP_EQ: r = a == b; break;
  case TIRX__OP_NE: r = a != b; break;
  case TIRX__OP_LT: r = a < b; break;
  case TIRX__OP_LE: r = a <= b; break;
  case TIRX__OP_GT: r = a > b; break;
  case TIRX__OP_GE: r = a >= b; break;
  case TIRX__OP_AND: r = a && b; break;
  case TIRX__OP_OR: r = a || b; break;
  default: *why = "not computable at launch"; return false;
  }
  *out = wrap(r, h->dtype);
  return true;
overflow:
  *why = "integer overflow";
  return false;
}

/* ---- the kernel ABI: the entry point's parameters ---- */

int tirx__kernel_slots(const tirx__ir_kernel *k, tirx__slot *out, int cap) {
  int n = 0;
#define SLOT(...)                                                                              \
  do {                                                                                         \
    if (n < cap) out[n] = (tirx__slot){__VA_ARGS__};                                           \
    n++;                                                                                       \
  } while (0)
  for (int i = 0; i < k->nparams; i++) {
    const tirx__decl *d = k->params[i];
    SLOT(.kind = d->kind == TIRX__DECL_PARAM_TENSOR ? TIRX__SLOT_POINTER : TIRX__SLOT_VALUE,
         .dtype = d->dtype, .param = i);
  }
  for (int i = 0; i < k->nparams; i++) {
    const tirx__decl *d = k->params[i];
    if (d->kind != TIRX__DECL_PARAM_TENSOR || d->tensor->layout) continue;
    for (int j = 0; j < d->tensor->rank; j++)
      if (tirx__stride_kind(d->tensor, j) == TIRX__STRIDE_HIDDEN)
        SLOT(.kind = TIRX__SLOT_STRIDE, .dtype = TIRX_I64, .param = i, .dim = j);
  }
  for (int i = 0; i < k->ntmaps; i++)
    SLOT(.kind = TIRX__SLOT_TMAP, .dtype = k->tmap[i].dtype, .param = k->tmap[i].param, .dim = i);
#undef SLOT
  return n;
}
