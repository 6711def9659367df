/* tirx_kernel_build: validation, then the frozen kernel (source, hash, IR text, launch info). */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../ir/kernel_abi.h"
#include "builder_internal.h"

static const char fn[] = "tirx_kernel_build";

_Static_assert((int)TIRX_BUILDER_MAX_SPECIALIZED == (int)TIRX__MAX_SPEC,
               "the public limit of specialised parameters is the launch plan's");

static const char *decl_origin(int kind) {
  switch (kind) {
  case TIRX__DECL_LET: return "tirx_let";
  case TIRX__DECL_VAR: return "tirx_var";
  case TIRX__DECL_LOOP: return "tirx_for_begin";
  case TIRX__DECL_LOCAL: return "tirx_alloc_local";
  default: return "a parameter";
  }
}

/* ---- scope validation ---- */

static bool check_decl(tirx_builder *b, const tirx__decl *d) {
  if (d->live) return true;
  tirx__b_fail(b, TIRX_E_BUILD, "%s: %s \"%s\" (from %s) is used outside its scope", fn,
               d->kind == TIRX__DECL_LOCAL ? "tensor" : "variable", d->name,
               decl_origin(d->kind));
  return false;
}

static bool check_expr(tirx_builder *b, const tirx_expr *e) {
  if (!e) return true;
  if (e->kind == TIRX__EX_VAR && !check_decl(b, e->decl)) return false;
  if (e->kind == TIRX__EX_LOAD) {
    if (!check_decl(b, &e->tensor->decl)) return false;
    for (int k = 0; k < e->tensor->rank; k++)
      if (!check_expr(b, e->index[k])) return false;
  }
  return check_expr(b, e->a) && check_expr(b, e->b) && check_expr(b, e->c);
}

static bool check_block(tirx_builder *b, const tirx__block *blk);

static bool check_elem(tirx_builder *b, const tirx__elem *e) {
  if (!check_decl(b, &e->tensor->decl)) return false;
  for (int k = 0; k < e->tensor->rank; k++)
    if (!check_expr(b, e->index[k])) return false;
  return true;
}

/* A native statement's operands, as its op lists them. */
static bool check_native(tirx_builder *b, const tirx__stmt *s) {
  const tirx__native_op *r = s->native.op;
  if (!r || !s->native.p) return true;
  for (int i = 0; i < TIRX__NATIVE_MAX_OPS && r->ops[i].kind != TIRX__OPND_NONE; i++) {
    const tirx__opnd *o = &r->ops[i];
    const void *p = (const char *)s->native.p + o->at;
    bool ok = true;
    switch (o->kind) {
    case TIRX__OPND_ELEM: ok = check_elem(b, p); break;
    case TIRX__OPND_LOAD:
    case TIRX__OPND_EXPR: ok = check_expr(b, *(tirx_expr *const *)p); break;
    case TIRX__OPND_TENSOR: ok = check_decl(b, &(*(tirx_tensor *const *)p)->decl); break;
    case TIRX__OPND_LOADS: {
      tirx_expr *const *v = *(tirx_expr **const *)p;
      int32_t n = *(const int32_t *)((const char *)s->native.p + o->count);
      for (int j = 0; ok && j < n; j++) ok = check_expr(b, v[j]);
      break;
    }
    default: break;
    }
    if (!ok) return false;
  }
  return true;
}

static bool check_stmt(tirx_builder *b, tirx__stmt *s) {
  switch (s->kind) {
  case TIRX__ST_FOR:
    if (!check_expr(b, s->loop.lo) || !check_expr(b, s->loop.hi) ||
        !check_expr(b, s->loop.step))
      return false;
    s->loop.var->live = true;
    if (!check_block(b, &s->loop.body)) return false;
    s->loop.var->live = false;
    return true;
  case TIRX__ST_IF:
    return check_expr(b, s->branch.cond) && check_block(b, &s->branch.then) &&
           check_block(b, &s->branch.orelse);
  case TIRX__ST_LET:
  case TIRX__ST_VAR:
    if (!check_expr(b, s->var.value)) return false;
    s->var.decl->live = true;
    return true;
  case TIRX__ST_ASSIGN:
    return check_decl(b, s->var.decl) && check_expr(b, s->var.value);
  case TIRX__ST_STORE:
  case TIRX__ST_ATOMIC_ADD:
    if (!check_decl(b, &s->store.dst.tensor->decl) || !check_expr(b, s->store.value))
      return false;
    return check_elem(b, &s->store.dst);
  case TIRX__ST_LOCAL:
    s->local.tensor->decl.live = true;
    return true;
  case TIRX__ST_PRIM: /* its lowering (prim.c) reads the operands */
    return check_block(b, &s->prim.body);
  case TIRX__ST_NATIVE: return check_native(b, s);
  default:
    return true;
  }
}

/* The declaration statement s makes (a let, var or local), else NULL. */
static tirx__decl *declared(tirx__stmt *s) {
  switch (s->kind) {
  case TIRX__ST_FOR: return s->loop.var;
  case TIRX__ST_LET:
  case TIRX__ST_VAR: return s->var.decl;
  case TIRX__ST_LOCAL: return &s->local.tensor->decl;
  default: return NULL;
  }
}

static void kill_block(const tirx__block *blk) {
  for (tirx__stmt *s = blk->first; s; s = s->next) {
    tirx__decl *d = declared(s);
    if (d) d->live = false;
  }
}

static bool check_block(tirx_builder *b, const tirx__block *blk) {
  bool ok = true;
  for (tirx__stmt *s = blk->first; s && ok; s = s->next) ok = check_stmt(b, s);
  kill_block(blk);
  return ok;
}

/* ---- the kernel IR ---- */

void tirx__b_ir_kernel(const tirx_builder *b, tirx__ir_kernel *out) {
  *out = (tirx__ir_kernel){
      .name = b->name, .nparams = b->nparams, .params = b->params, .ndecls = b->ndecls,
      .nshared = b->nshared, .shared = b->shared, .shared_bytes = b->shared_bytes,
      .shared_extra = b->shared_extra, .body = &b->body, .min_blocks = b->min_blocks,
      .uses_setmaxnreg = b->uses_setmaxnreg, .preludes = b->preludes, .ntmaps = b->ntmaps,
      .tmap_tensor = b->tmap_tensor, .tmap = b->tmap};
  for (int i = 0; i < 3; i++) out->grid[i] = b->grid[i], out->block[i] = b->block[i];
}

/* ---- the kernel's launch information ---- */

typedef struct hx_buf {
  tirx__hexpr *v;
  int n, cap;
  bool failed;
} hx_buf;

static int32_t flatten(hx_buf *hb, const tirx_expr *e) {
  if (hb->failed) return -1;
  tirx__hexpr h = {0};
  h.kind = e->kind;
  h.op = e->op;
  h.dtype = e->dtype;
  h.a = h.b = h.c = -1;
  switch (e->kind) {
  case TIRX__EX_INT: h.v = e->i; break;
  case TIRX__EX_PARAM: h.v = e->decl->param_index; break;
  default:
    if (e->a) h.a = flatten(hb, e->a);
    if (e->b) h.b = flatten(hb, e->b);
    if (e->c) h.c = flatten(hb, e->c);
    break;
  }
  if (hb->failed) return -1;
  if (hb->n == hb->cap) {
    int cap = hb->cap ? 2 * hb->cap : 32;
    tirx__hexpr *n = realloc(hb->v, (size_t)cap * sizeof *n);
    if (!n) {
      hb->failed = true;
      return -1;
    }
    hb->v = n;
    hb->cap = cap;
  }
  hb->v[hb->n] = h;
  return hb->n++;
}

static char *k_strdup(tirx_kernel *k, const char *s) {
  return tirx__arena_strdup(k->arena, s, fn);
}

static tirx_kernel *make_kernel(tirx_builder *b, const char *source, const char *ir,
                               const char *const *param_names) {
  tirx_kernel *k = calloc(1, sizeof *k);
  hx_buf hb = {0};
  if (!k || !(k->arena = tirx_arena_create())) goto oom;
  atomic_init(&k->refs, 1);
  k->name = k_strdup(k, b->name);
  k->source = k_strdup(k, source);
  k->ir = k_strdup(k, ir);
  k->dispatch_report = k_strdup(k, b->dispatch_report ? b->dispatch_report : "");
  if (!k->name || !k->source || !k->ir || !k->dispatch_report) goto oom;
  XXH128_hash_t h = XXH3_128bits(source, strlen(source));
  k->hash[0] = h.low64;
  k->hash[1] = h.high64;
  k->nparams = b->nparams;
  k->params = tirx__arena_array(k->arena, (size_t)(b->nparams ? b->nparams : 1),
                                sizeof *k->params, fn);
  k->slots = tirx__arena_array(k->arena, TIRX__MAX_PARAMS, sizeof *k->slots, fn);
  if (!k->params || !k->slots) goto oom;
  for (int i = 0; i < b->nparams; i++) {
    const tirx__decl *d = b->params[i];
    tirx__kparam *p = &k->params[i];
    p->name = k_strdup(k, d->name);
    if (!p->name) goto oom;
    p->dtype = d->dtype;
    if (d->kind == TIRX__DECL_PARAM_TENSOR) {
      const tirx_tensor *t = d->tensor;
      p->kind = TIRX__KP_TENSOR;
      p->rank = t->rank;
      p->dense = t->dense;
      p->opaque = t->layout && !t->stride[0];
      p->align = tirx_dtype_size((tirx_dtype)t->dtype);
      /* Dispatch took the base to be 16-byte aligned; the launch checks what the vector
       * accesses of the chosen rules need of it. */
      if (t->vec_bytes > p->align) p->align = t->vec_bytes;
      p->writes = b->raw_source ? TIRX__KP_WRITES_MAYBE
                  : t->written  ? TIRX__KP_WRITES_YES
                                : TIRX__KP_WRITES_NO;
      for (int kk = 0; kk < t->rank; kk++) {
        p->shape[kk] = flatten(&hb, t->shape[kk]);
        p->stride[kk] = t->stride[kk] ? flatten(&hb, t->stride[kk]) : -1;
      }
    } else {
      p->kind = d->kind == TIRX__DECL_PARAM_INT ? TIRX__KP_INT : TIRX__KP_SCALAR;
      if (p->kind == TIRX__KP_INT && d->policy != TIRX_SPECIALIZE_DYNAMIC) {
        p->policy = d->policy;
        p->cname = k_strdup(k, param_names[i]);
        if (!p->cname) goto oom;
        k->spec[k->nspec++] = i;
      }
    }
  }
  for (int i = 0; i < b->nparams; i++) {
    const tirx__decl *d = b->params[i];
    if (d->kind != TIRX__DECL_PARAM_TENSOR) continue;
    const tirx_tensor *t = d->tensor;
    for (int kk = 0; kk < t->rank; kk++) {
      tirx__decl *bp = tirx__bare_param(t->shape[kk]);
      if (bp && bp->kind == TIRX__DECL_PARAM_INT) k->params[bp->param_index].bindable = true;
      bp = tirx__bare_param(t->stride[kk]);
      if (bp && bp->kind == TIRX__DECL_PARAM_INT) k->params[bp->param_index].bindable = true;
    }
  }
  /* The entry point's parameters (the kernel ABI) and the TMA tensor maps. */
  tirx__ir_kernel kir;
  tirx__b_ir_kernel(b, &kir);
  k->nslots = tirx__kernel_slots(&kir, k->slots, TIRX__MAX_PARAMS);
  k->ntmaps = b->ntmaps;
  k->tmaps = tirx__arena_array(k->arena, (size_t)(b->ntmaps ? b->ntmaps : 1), sizeof *k->tmaps, fn);
  if (!k->tmaps) goto oom;
  for (int i = 0; i < b->ntmaps; i++) {
    k->tmaps[i] = b->tmap[i];
    int tp = b->tmap[i].param; /* a TMA store writes through the map, not the pointer */
    if (b->tmap[i].store && tp >= 0 && tp < k->nparams && !b->raw_source)
      k->params[tp].writes = TIRX__KP_WRITES_YES;
  }
  for (int i = 0; i < 3; i++) k->cluster[i] = (uint32_t)b->cluster[i];
  k->pdl = b->pdl;
  k->target = k_strdup(k, b->target_name);
  if (!k->target) goto oom;
  k->need = b->need;
  for (int f = 0; f < TIRX__FEAT_COUNT; f++)
    if (b->need_what[f] && !(k->need_what[f] = k_strdup(k, b->need_what[f]))) goto oom;
  for (int i = 0; i < 3; i++) {
    k->grid[i] = b->grid[i] ? flatten(&hb, b->grid[i]) : -1;
    k->block[i] = (uint32_t)b->block[i];
  }
  k->shared_static = b->shared_bytes;
  k->shared_extra = b->shared_extra ? flatten(&hb, b->shared_extra) : -1;
  if (hb.failed) goto oom;
  k->nhx = hb.n;
  k->hx = tirx__arena_array(k->arena, (size_t)(hb.n ? hb.n : 1), sizeof *k->hx, fn);
  if (!k->hx) goto oom;
  if (hb.n) memcpy(k->hx, hb.v, (size_t)hb.n * sizeof *k->hx);
  free(hb.v);
  return k;
oom:
  free(hb.v);
  if (k) tirx_arena_destroy(k->arena);
  free(k);
  tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  return NULL;
}

/* The entry point's parameters but the TMA tensor maps (the lowering adds those). */
static int count_slots(const tirx_builder *b) {
  tirx__ir_kernel k;
  tirx__b_ir_kernel(b, &k);
  return tirx__kernel_slots(&k, NULL, 0) - b->ntmaps;
}

tirx_status tirx_kernel_build(tirx_builder *b, tirx_kernel **out) {
  if (out) *out = NULL;
  if (!b) return tirx__error(TIRX_E_NULL_ARG, "%s: b is NULL", fn);
  /* Recorded like any argument error (the builder's first error when it has none). */
  if (!out) return tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  if (b->status != TIRX_OK) return tirx__error(b->status, "%s", b->error);
  if (b->nscopes > 0) return tirx__prim_lower_all(b); /* reports the open scope */
  if (b->depth > 0) {
    const tirx__frame *f = &b->frames[b->depth];
    if (f->kind == TIRX__FRAME_FOR)
      return tirx__b_fail(b, TIRX_E_BUILD, "%s: tirx_for_begin (%s) is not closed by tirx_for_end",
                          fn, f->stmt->loop.var->name);
    return tirx__b_fail(b, TIRX_E_BUILD, "%s: tirx_if_begin is not closed by tirx_if_end", fn);
  }
  if (!b->block_set)
    return tirx__b_fail(b, TIRX_E_BUILD, "%s: the block size is not set (call tirx_set_block)",
                        fn);
  int threads = b->block[0] * b->block[1] * b->block[2];
  if (b->min_blocks * threads > 2048)
    return tirx__b_fail(b, TIRX_E_BUILD,
                        "%s: tirx_set_min_blocks asks for %d CTAs of %d threads on one SM, "
                        "expected at most 2048 threads", fn, b->min_blocks, threads);
  if (count_slots(b) > TIRX__MAX_PARAMS)
    return tirx__b_fail(b, TIRX_E_LIMIT, "%s: the entry point would have %d parameters, limit %d",
                        fn, count_slots(b), TIRX__MAX_PARAMS);
  if (count_slots(b) * 8 > TIRX__PARAM_STORAGE)
    return tirx__b_fail(b, TIRX_E_LIMIT, "%s: the parameters would exceed %d bytes", fn,
                        TIRX__PARAM_STORAGE);
  if (tirx__prim_lower_all(b) != TIRX_OK) return b->status;
  if (b->min_blocks > 1 && b->uses_setmaxnreg)
    return tirx__b_fail(b, TIRX_E_BUILD,
                        "%s: tirx_set_min_blocks(%d) with tirx_setmaxnreg: setmaxnreg needs one "
                        "CTA per SM (expected n = 1)", fn, b->min_blocks);
  /* Dispatch chose rules the target has; native statements may still need more. */
  int lack = tirx__features_missing(tirx__arch_features(b->target, b->target_suffix), b->need);
  if (lack >= 0)
    return tirx__b_fail(b, TIRX_E_NOT_SUPPORTED,
                        "%s: %s needs %s (%s): the target is %s (tirx_set_target)", fn,
                        b->need_what[lack], tirx__feature_name((tirx__feature)lack),
                        tirx__feature_where_only((tirx__feature)lack), b->target_name);
  /* TMA tensor maps (registered by the lowering): 128 bytes each, 64-byte aligned. */
  if (b->ntmaps && (count_slots(b) + b->ntmaps > TIRX__MAX_PARAMS ||
                    (count_slots(b) * 8 + 64) / 64 * 64 + b->ntmaps * 128 > TIRX__PARAM_STORAGE))
    return tirx__b_fail(b, TIRX_E_LIMIT, "%s: the parameters and %d TMA tensor maps would exceed "
                        "%d bytes", fn, b->ntmaps, TIRX__PARAM_STORAGE);
  if (!check_block(b, &b->body)) return b->status;
  char *source;
  const char *param_names[TIRX_BUILDER_MAX_PARAMS];
  tirx__ir_kernel kir;
  tirx__b_ir_kernel(b, &kir);
  tirx_status st;
  if (b->raw_source) {
    /* tirx_set_source: the caller's text is the code; the parameters name the spec macros. */
    if (b->body.first || b->nshared || b->nprims)
      return tirx__b_fail(b, TIRX_E_BUILD,
                          "%s: kernel '%s' has a CUDA source (tirx_set_source) and also %s; a "
                          "kernel is one or the other",
                          fn, b->name, b->nshared ? "shared buffers" : "statements");
    source = strdup(b->raw_source);
    if (!source) return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    for (int i = 0; i < b->nparams; i++) param_names[i] = b->params[i]->name;
  } else {
    st = tirx__codegen(&kir, b->arena, param_names, &source);
    if (st != TIRX_OK) return tirx__b_fail(b, st, "%s", tirx_last_error());
  }
  char *ir = tirx__ir_print(&kir);
  if (!ir) {
    free(source);
    return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  tirx_kernel *k = make_kernel(b, source, ir, param_names);
  free(source);
  free(ir);
  if (!k) return b->status;
  *out = k;
  return TIRX_OK;
}
