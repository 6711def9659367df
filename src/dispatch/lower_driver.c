/*
 * The lowering driver: at tirx_kernel_build, every TIRX__ST_PRIM statement of the builder
 * becomes a tirx__call (operand layouts: the tensor's layout sliced to the region), goes
 * through tirx__dispatch, gets its report line, and the chosen rule's emit hook writes native
 * IR into the statement's body, which codegen prints under a comment naming the rule.
 *
 * Global tensors without a layout (shape and strides, possibly symbolic) are described to
 * dispatch as one iter per dimension, (extent_k):(stride_k), with an m offset standing for
 * the region's start: the part of the start's alignment known at build time (the gcd of
 * begin_k * stride_k over constant begins and d_k * stride_k over symbolic ones, d_k what the
 * begin is known to be a multiple of: 64 for block_idx * 64, 1 for a tirx_let; base pointers
 * are 16-byte aligned). A symbolic stride is a constant only for the innermost dimension of a
 * dense tensor (1); any other symbolic stride under an extent > 1, or under a symbolic
 * begin, makes the start's alignment unknown (vector width 1: the scalar fallbacks). So
 * vector accesses on global memory need constant inner dimensions: a kernel specialised on its
 * row width vectorises, one with a symbolic width falls back to scalar accesses, correctly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/layout_internal.h"
#include "lower.h"
#include "tensor_map.h"

static const char *strip_fn(const char *msg) {
  const char *c = strstr(msg, ": ");
  return c ? c + 2 : msg;
}
/* ---- dispatch and lowering at build time ---- */

static const char FN[] = "tirx_kernel_build";

static int64_t gcd64(int64_t a, int64_t b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/*
 * What every value of the integer expression e is known to be a multiple of (lower.h). The
 * one divisor analysis of dispatch: region layouts (the alignment of a region's start) and
 * TMA's split form (begins that must be multiples of a box factor) both use it.
 *
 * It used to be two: region layouts capped every divisor at 2^20 (gcd(d, 2^20)), which loses
 * the odd part of large divisors (block_idx * 3 * 2^21 read as a multiple of 2^20 only) and
 * so understates what TMA's split form may take, while TMA's copy gave up (1) on a negation, a
 * shift by a non-constant, an overflowing product or INT64_MIN, each of which has a divisor.
 * This one keeps exact divisors; its callers handle a product with a stride that overflows.
 */
int64_t tirx__known_divisor(const tirx_expr *e) {
  if (!e) return 1;
  int64_t x, y, v;
  switch (e->kind) {
  case TIRX__EX_INT:
    if (e->i == INT64_MIN) return INT64_C(1) << 62; /* |INT64_MIN| / 2 divides it */
    return e->i < 0 ? -e->i : e->i;
  case TIRX__EX_CAST: /* between integers: the value is kept (no overflow, as below) */
    return tirx__dtype_is_int(e->dtype) && tirx__dtype_is_int(e->a->dtype)
               ? tirx__known_divisor(e->a)
               : 1;
  case TIRX__EX_UNARY: return e->op == TIRX__OP_NEG ? tirx__known_divisor(e->a) : 1;
  case TIRX__EX_BINARY:
    x = tirx__known_divisor(e->a);
    y = tirx__known_divisor(e->b);
    switch (e->op) {
    case TIRX__OP_ADD:
    case TIRX__OP_SUB: return gcd64(x, y);
    case TIRX__OP_MUL:
      if (x == 0 || y == 0) return 0;
      return tirx__mul_ok(x, y, &v) ? v : x > y ? x : y; /* each factor divides the product */
    case TIRX__OP_SHL: /* a * 2^s: a's divisor divides it for any shift s >= 0 */
      if (e->b->kind != TIRX__EX_INT || e->b->i < 0 || e->b->i > 62) return x;
      return tirx__mul_ok(x, INT64_C(1) << e->b->i, &v) ? v : x;
    default: return 1;
    }
  default: return 1;
  }
}

/* ---- shared regions with non-constant begins ---- */

/*
 * The layout for dispatch of a region of a laid-out tensor with non-constant begins: sliced
 * at begin 0 on those dims, whose layout must be one iter (e):(s@m). The start then moves by
 * begin * s, a multiple of g * s (g: tirx__known_divisor of the begin). Rules care about the start
 * modulo 1024 bytes at most (vector alignment, the swizzle atom): when every such move is a
 * multiple of 1024 bytes the slice at 0 is exact; otherwise an unswizzled layout gets the
 * start's known alignment as its m offset (as for global tensors), and a swizzled one is
 * rejected (its swizzle phase would differ from stage to stage).
 */
static const tirx_layout *dynamic_start(tirx_arena *a, const tirx_region *r,
                                        const tirx_layout *l) {
  const tirx_tensor *t = r->tensor;
  const tirx_layout *tl = t->layout;
  int64_t esize = tirx_dtype_size((tirx_dtype)t->dtype), align = 0;
  for (int k = 0; k < t->rank; k++) {
    if (r->begin[k]->kind == TIRX__EX_INT) continue;
    int64_t stride = 0, n = 0;
    for (int j = tl->dim_begin[k]; j < tl->dim_begin[k + 1]; j++)
      if (tl->d[j].extent > 1) {
        n++;
        stride = tl->d[j].stride;
      }
    if (n > 1) {
      tirx__error(TIRX_E_NOT_SUPPORTED,
                  "tirx_region_new: begin of dim %d is not a constant and the layout of %s splits "
                  "that dim into %lld iters: a non-constant begin needs one iter",
                  k, t->decl.name, (long long)n);
      return NULL;
    }
    int64_t unit; /* a product that overflows: the begin as a multiple of 1 */
    if (!tirx__mul_ok(tirx__known_divisor(r->begin[k]), stride, &unit)) unit = stride;
    align = gcd64(align, unit);
  }
  int64_t bytes;
  if (align == 0 || (tirx__mul_ok(align, esize, &bytes) && bytes % 1024 == 0)) return l;
  if (tl->swizzle_bytes) {
    tirx__error(TIRX_E_NOT_SUPPORTED,
                "tirx_region_new: a non-constant begin moves the start of swizzled %s by "
                "multiples of %lld bytes: it must move by multiples of 1024 (the swizzle atom); "
                "write the begin as a multiple (i * 8, ...)",
                t->decl.name, (long long)(align * esize));
    return NULL;
  }
  int64_t off = tirx_layout_offset(l, TIRX_AXIS_M), known = off | align;
  tirx_axis_offset o = {TIRX_AXIS_M, known & -known};
  return tirx__layout_make(a, "tirx_region_new", l->nd, l->d, l->nr, l->r, 1, &o, l->rank,
                           l->dim_begin, 0, 0);
}

/* ---- end shared regions with non-constant begins ---- */

/* The layout of region r for dispatch (file comment), in arena a; NULL with the error set. */
static const tirx_layout *region_layout(tirx_arena *a, const tirx_region *r) {
  const tirx_tensor *t = r->tensor;
  int rank = t->rank;
  int64_t begin[TIRX_BUILDER_MAX_RANK];
  if (t->layout) {
    bool dynamic = false; /* shared tensors only (tirx_region_new) */
    for (int k = 0; k < rank; k++) {
      dynamic |= r->begin[k]->kind != TIRX__EX_INT;
      begin[k] = r->begin[k]->kind == TIRX__EX_INT ? r->begin[k]->i : 0;
    }
    const tirx_layout *l = tirx_layout_slice(a, t->layout, rank, t->const_shape, begin,
                                             r->extent);
    return l && dynamic ? dynamic_start(a, r, l) : l;
  }
  tirx_iter d[TIRX_BUILDER_MAX_RANK];
  int64_t total = 1, align = 0;
  bool unknown = false;
  for (int k = 0; k < rank; k++) tirx__mul_ok(total, r->extent[k], &total);
  for (int k = 0; k < rank; k++) {
    bool known = tirx__stride_kind(t, k) == TIRX__STRIDE_CONST;
    int64_t s = known ? t->stride[k]->i : 2 * total + 1; /* odd: never contiguous */
    d[k] = (tirx_iter){r->extent[k], r->extent[k] > 1 ? s : 0, TIRX_AXIS_M};
    bool cbegin = r->begin[k]->kind == TIRX__EX_INT;
    if (cbegin && r->begin[k]->i == 0) continue;
    if (!known) {
      unknown = true;
      continue;
    }
    /* A non-constant begin moves the start by multiples of its known divisor (block_idx *
     * 64: 64) times the stride. */
    int64_t term;
    if (!tirx__mul_ok(cbegin ? r->begin[k]->i : tirx__known_divisor(r->begin[k]), s, &term)) {
      if (cbegin) unknown = true;
      else term = s; /* the product overflows: the begin as a multiple of 1 */
    }
    align = gcd64(align, term);
  }
  for (int k = 0; k + 1 < rank; k++)
    if (tirx__stride_kind(t, k) != TIRX__STRIDE_CONST && r->extent[k] > 1) unknown = true;
  tirx_axis_offset o = {TIRX_AXIS_M, unknown ? 1 : align % 1024 ? align % 1024 : 0};
  if (!unknown && align && o.value == 0) o.value = 1024; /* keeps the known alignment */
  tirx_layout *flat = tirx_layout_new(a, rank, d, 0, NULL, o.value ? 1 : 0, &o);
  return flat ? tirx_layout_group(a, flat, rank, r->extent) : NULL;
}

/* What the build knows of a strided global tensor's region, for copy_async.tma. */
static void tma_global_of(const tirx_region *r, tirx__tma_global *g) {
  const tirx_tensor *t = r->tensor;
  for (int k = 0; k < t->rank; k++) {
    g->stride[k] =
        tirx__stride_kind(t, k) == TIRX__STRIDE_CONST ? t->stride[k]->i : TIRX__TMA_UNKNOWN;
    g->size[k] = t->shape[k]->kind == TIRX__EX_INT ? t->shape[k]->i : TIRX__TMA_UNKNOWN;
    g->begin_div[k] = tirx__known_divisor(r->begin[k]);
  }
}

static tirx__role role_of(const tirx_region *r) {
  if (!r->tensor) return TIRX__ROLE_SCALAR;
  return r->tensor->storage == TIRX__GLOBAL   ? TIRX__ROLE_GLOBAL
         : r->tensor->storage == TIRX__SHARED ? TIRX__ROLE_SHARED
                                              : TIRX__ROLE_LOCAL;
}

static tirx_status lower_one(tirx_builder *b, tirx_arena *a, tirx__stmt *s, int loops,
                             tirx__dispatch_report *rep) {
  tirx__prim_stmt *p = s->prim.call;
  char where[TIRX_BUILDER_MAX_NAME + 24];
  snprintf(where, sizeof where, "%s:%d", b->name, (int)p->number);
  tirx__call call = {.prim = (tirx__prim)p->prim, .arch = b->target,
                     .generic = b->target_suffix != 'a', .noperands = p->nops,
                     .scope = p->scope, .where = where};
  call.config.family = p->family;
  for (int k = 0; k < 3; k++) call.config.shape.v[k] = p->shape[k];
  call.config.op = (tirx__prim_op)p->op;
  call.config.reduce_axes = p->axes;
  call.config.accumulate = p->accumulate;
  call.config.hint = (tirx__hint)p->hint;
  call.config.barrier = p->barrier != NULL;
  tirx__tma_global tg;
  for (int i = 0; i < p->nops && call.prim == TIRX__PRIM_COPY_ASYNC; i++)
    if (p->ops[i]->tensor && p->ops[i]->tensor->storage == TIRX__GLOBAL) {
      tma_global_of(p->ops[i], &tg);
      call.tma = &tg;
    }
  for (int i = 0; i < p->nops; i++) {
    const tirx_region *r = p->ops[i];
    call.operands[i].role = role_of(r);
    call.operands[i].dtype = (tirx_dtype)(r->tensor ? r->tensor->dtype : r->value->dtype);
    if (!r->tensor) continue;
    call.operands[i].layout = region_layout(a, r);
    if (!call.operands[i].layout)
      return tirx__b_fail(b, tirx_last_status(), "%s: [%s] %s: operand %d: %s", FN, where,
                          tirx__prim_name(call.prim), i, strip_fn(tirx_last_error()));
  }
  tirx__dispatch_result res;
  tirx_status st = tirx__dispatch(a, &call, &res);
  if (tirx__dispatch_report_add(rep, &res) != TIRX_OK)
    return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  if (st != TIRX_OK)
    return tirx__b_fail(b, st, "%s: [%s] %s", FN, where, strip_fn(tirx_last_error()));
  if (!res.rule->emit)
    return tirx__b_fail(b, TIRX_E_NOT_SUPPORTED, "%s: [%s] rule %s has no lowering yet", FN,
                        where, res.rule->name);
  tirx__features declared = res.rule->needs.features | tirx__call_features(&call);
  tirx__b_need(b, declared, res.rule->name);
  char *shape = tirx__shape_str(res.rule, &res.shape);
  char text[512];
  snprintf(text, sizeof text, "%s %s: %s", res.rule->name, shape ? shape : "?", res.key);
  free(shape);
  p->comment = tirx__arena_strdup(b->arena, text, FN);
  if (!p->comment) return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  /* The rule writes native IR into the statement's body through its own emitter; the
   * builder's insertion stack is not touched. */
  s->prim.body.first = s->prim.body.last = NULL;
  tirx__emit em;
  tirx__emit_init(&em, b, &s->prim.body);
  tirx__lower lw = {.b = b, .e = &em, .p = p, .call = &call, .rule = res.rule->name, .arena = a,
                    .loops = loops};
  st = res.rule->emit(res.rule, &call, &res.shape, &lw);
  if (st == TIRX_OK) st = tirx__emit_finish(&em, res.rule->name);
  if (st != TIRX_OK && b->status == TIRX_OK)
    return tirx__b_fail(b, st, "%s: [%s] %s: %s", FN, where, res.rule->name,
                        strip_fn(tirx_last_error()));
  /* The rule's declared features (with the call's own: operands on cbx) must cover what its
   * lowering wrote: dispatch chose it because the target has the declared ones, so anything
   * more would fail inside NVRTC (issue 13: gemm_async.wgmma_rs on sm_90). An internal error,
   * on every target: the unit suite's kernels (tests/unit/dispatch/test_registry.c covers
   * every rule) catch a wrong rule. */
  int extra = tirx__features_missing(declared, tirx__block_features(&s->prim.body));
  if (b->status == TIRX_OK && extra >= 0)
    return tirx__b_fail(b, TIRX_E_INTERNAL,
                        "%s: [%s] rule %s wrote code that needs %s, which the rule does not "
                        "declare in its needs (its features)",
                        FN, where, res.rule->name, tirx__feature_name((tirx__feature)extra));
  return b->status;
}

/* Lowers the primitives of blk, which sits inside `loops` for loops of the kernel. */
static tirx_status lower_block(tirx_builder *b, tirx_arena *a, tirx__block *blk, int loops,
                               tirx__dispatch_report *rep) {
  for (tirx__stmt *s = blk->first; s; s = s->next) {
    tirx_status st = TIRX_OK;
    int in = loops + (s->kind == TIRX__ST_FOR);
    if (s->kind == TIRX__ST_PRIM)
      st = lower_one(b, a, s, loops, rep);
    else if (s->kind == TIRX__ST_FOR)
      st = lower_block(b, a, &s->loop.body, in, rep);
    else if (s->kind == TIRX__ST_IF)
      st = lower_block(b, a, &s->branch.then, in, rep) != TIRX_OK
               ? b->status
               : lower_block(b, a, &s->branch.orelse, in, rep);
    if (st != TIRX_OK) return st;
  }
  return TIRX_OK;
}

tirx_status tirx__prim_lower_all(tirx_builder *b) {
  if (b->nscopes > 0) {
    const tirx__scope_frame *f = &b->scopes[b->nscopes - 1];
    return tirx__b_fail(b, TIRX_E_BUILD, "%s: %s is not closed by %s", FN,
                        f->filter ? "tirx_filter_begin" : "tirx_team_begin",
                        f->filter ? "tirx_filter_end" : "tirx_team_end");
  }
  b->dispatch_report = "";
  if (b->nprims == 0) return TIRX_OK;
  tirx_arena *a = tirx_arena_create();
  if (!a) return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  tirx__dispatch_report rep;
  tirx__dispatch_report_init(&rep, a);
  tirx_status st = lower_block(b, a, &b->body, 0, &rep);
  char *text = tirx__dispatch_report_str(&rep);
  const char *copy = text ? tirx__arena_strdup(b->arena, text, FN) : NULL;
  free(text);
  tirx_arena_destroy(a);
  if (copy) b->dispatch_report = copy;
  if (st != TIRX_OK) return st;
  if (!copy) return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  return TIRX_OK;
}
