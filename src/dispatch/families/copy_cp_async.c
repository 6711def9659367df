/*
 * copy_async.cp_async: global -> shared tile copies with cp.async (sm_80).
 *
 *   16 bytes  cp.async.cg.shared.global [smem], [gmem], 16{, src-size}   (L2 only)
 *   4, 8      cp.async.ca.shared.global [smem], [gmem], N{, src-size}    (through L1)
 *
 * The instruction, as data: a vector of vec elements, consecutive along the innermost logical
 * dimension in both operands and vec-aligned in both (the common vector width of the two
 * layouts, tirx__common_vector_width), of 4, 8 or 16 bytes. The threads of the team share the
 * vectors round-robin (tirx__lower_elementwise's memory-to-memory loop, so the team must be
 * complete); each issues its cp.async instructions and the copy joins its open cp.async group.
 *
 * Tails. Along each dimension of the global tensor whose bounds the build cannot prove (a
 * non-constant begin or extent), the copy is guarded by the src-size operand instead of a
 * branch: a vector whose row is past the end, or whose first element is, reads nothing and
 * its shared bytes are zero-filled (the address is clamped to the tensor's first element); a
 * vector that straddles the innermost extent reads its valid elements only. So the shared tile
 * holds what TMA would have loaded (zeros outside the tensor). Begins are taken to be >= 0.
 *
 * Protocol. A call with cfg->barrier is TMA's protocol (the caller waits on an mbarrier's
 * transaction bytes, which cp.async never completes): rejected here, as copy_async.tma rejects
 * a load without one. Registered after copy_async.tma as its fallback: on sm_90 targets a
 * cp.async load is reported as a fallback with TMA's reason; on sm_80 it is the only rule.
 *
 * Shape: (vec) elements per instruction, from the widest legal width down to 4 bytes.
 */
#include <stdio.h>

#include "../lower.h"
#include "families.h"

/* ---- the native statement: the cp.async copy ---- */

/* shared dst <- bytes at the address of the global load src; src_bytes the bytes to read (the
 * rest zero-filled), NULL: all */
typedef struct cp_async_payload {
  tirx__elem dst;
  tirx_expr *src, *src_bytes;
  int32_t bytes;
} cp_async_payload;

static const tirx__native_op nv_cp_async = {
    .name = "cp_async", .helper = "tirx_cp_async", .need = TIRX__NEED(TIRX__FEAT(CP_ASYNC)),
    .section = TIRX__PRE_CP_ASYNC, .size = sizeof(cp_async_payload),
    .ops = {TIRX__ELEM(cp_async_payload, dst), TIRX__LOAD(cp_async_payload, src),
            TIRX__EXPR(cp_async_payload, src_bytes), TIRX__IMM(cp_async_payload, bytes)},
    .print_fmt = "$n.$3 $0 <- $1{ zfill past $2}",
    .emit_fmt = "$h<$3>($0, $1{, (unsigned)($2)});"};

/* The copy of bytes (4, 8, 16) from the global load src into shared dst[index]; src_bytes
 * (NULL: all) says how many of them to read, the rest being zero-filled. */
static void cp_async(tirx__emit *e, tirx_tensor *dst, tirx_expr *const *index, tirx_expr *src,
                     int bytes, tirx_expr *src_bytes) {
  static const char fn[] = "tirx_kernel_build";
  tirx_builder *b = e->b;
  tirx_expr **ix = tirx__b_index_list(b, fn, dst, dst->rank, index);
  if (!ix || b->status != TIRX_OK) return;
  tirx__stmt *s = tirx__b_native_in(b, fn, &nv_cp_async, tirx__emit_block(e));
  if (!s) return;
  cp_async_payload *p = s->native.p;
  p->dst.tensor = dst;
  p->dst.index = ix;
  p->src = src;
  if (bytes > src->tensor->vec_bytes) src->tensor->vec_bytes = bytes; /* the launch checks it */
  p->src_bytes = src_bytes;
  p->bytes = bytes;
}

/* The copy helper, before the cp.async groups of the section (order 610), in every kernel
 * that uses the section (byte-identical generated code). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
/* tirx_cp_async */
static const tirx__prelude_frag cp_async_frag = {.order = 600, .when = TIRX__PRE_CP_ASYNC, .text =
    "/* cp.async (copy_async.cp_async): N bytes (4, 8, 16) from global s to shared d, completing\n"
    " * in this thread's cp.async groups (commit_group, wait_group). 16 bytes bypass L1 (.cg), 4\n"
    " * and 8 go through it (.ca). With n, only the first n bytes are read and the rest of d is\n"
    " * zero-filled (the tails of tiles at a tensor's edge; n = 0 reads nothing). sm_80. */\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "template <int N, class T> __device__ __forceinline__ void tirx_cp_async(T *d, const T *s) {\n"
    "  if (N == 16) asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(s) : \"memory\");\n"
    "  else asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(s), \"n\"(N) : \"memory\");\n"
    "}\n"
    "template <int N, class T> __device__ __forceinline__ void tirx_cp_async(T *d, const T *s, unsigned n) {\n"
    "  if (N == 16) asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(s), \"r\"(n) : \"memory\");\n"
    "  else asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2, %3;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(s), \"n\"(N), \"r\"(n) : \"memory\");\n"
    "}\n"
};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const frags[] = {&cp_async_frag, NULL};


/* The widest vector (elements) both operands allow, at most 16 bytes, dividing the innermost
 * extent (tirx__lower_elementwise walks the innermost dim in whole vectors). */
static int64_t widest(tirx__rule_ctx *ctx, int64_t esize, int64_t *extent) {
  const tirx_layout *dst = ctx->call->operands[0].layout;
  int64_t shape[TIRX_LAYOUT_MAX_RANK];
  int rank = tirx_layout_rank(dst);
  tirx_layout_shape(dst, shape, TIRX_LAYOUT_MAX_RANK);
  *extent = shape[rank - 1];
  int64_t v = tirx__common_vector_width(ctx, 16, 1);
  if (v > 16 / esize) v = 16 / esize;
  while (v > 1 && *extent % v) v /= 2;
  return v;
}

/* scratch[0]: the widest legal vector in elements. */
static void check(tirx__rule_ctx *ctx) {
  const tirx__call *c = ctx->call;
  if (c->config.barrier) {
    tirx__reason(ctx, "cfg->barrier is set: a cp.async load completes in cp.async groups "
                      "(tirx_cp_async_commit, tirx_cp_async_wait), not on an mbarrier");
    return;
  }
  int64_t esize = tirx_dtype_size(c->operands[0].dtype), extent;
  int64_t v = widest(ctx, esize, &extent);
  if (v * esize >= 4) {
    ctx->scratch[0] = v;
    return;
  }
  /* Too narrow: say whether the extent or which operand limits it. */
  int64_t by_extent = 16 / esize;
  while (by_extent > 1 && extent % by_extent) by_extent /= 2;
  if (by_extent * esize < 4) {
    tirx__reason(ctx, "the innermost extent %lld allows %lld-byte vectors: cp.async moves 4, 8 "
                      "or 16 bytes", (long long)extent, (long long)(by_extent * esize));
    return;
  }
  bool named = false;
  for (int i = 0; i < 2; i++) {
    int64_t w = tirx__operand_vector_width(ctx, i, 16);
    if (w * esize < 4) {
      tirx__reason(ctx, "%s vector width %lld x %lld bytes < 4 bytes: %s; cp.async moves 4, 8 "
                        "or 16 bytes", tirx__rule_operand_name(ctx, i), (long long)w,
                   (long long)esize, tirx__operand_vector_why(ctx, i));
      named = true;
    }
  }
  if (!named)
    tirx__reason(ctx, "the innermost extent %lld allows %lld-byte vectors: cp.async moves 4, 8 "
                      "or 16 bytes", (long long)extent, (long long)(v * esize));
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  int64_t esize = tirx_dtype_size(ctx->call->operands[0].dtype);
  int n = 0;
  for (int64_t v = ctx->scratch[0]; v * esize >= 4 && n < cap; v /= 2)
    out[n++] = (tirx__shape){{v}};
  return n;
}

/* ---- lowering ---- */

/* Whether dim k of global region r may reach past the tensor at run time. */
static bool guarded(const tirx_region *r, int k) {
  const tirx_tensor *t = r->tensor;
  /* Constant begins into constant dims were checked by tirx_region_new. */
  return r->begin[k]->kind != TIRX__EX_INT || t->shape[k]->kind != TIRX__EX_INT;
}

/* One cp.async of vec elements at logical index idx. */
static void element(tirx__lower *lw, tirx_expr *const *idx, int64_t vec) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx_region *dst = lw->p->ops[0], *src = lw->p->ops[1];
  tirx_tensor *g = src->tensor;
  int rank = g->rank;
  int64_t esize = tirx_dtype_size((tirx_dtype)g->dtype);
  tirx_expr *di[TIRX_BUILDER_MAX_RANK], *si[TIRX_BUILDER_MAX_RANK];
  tirx__lower_tensor_index(lw, dst, idx, 0, di);
  tirx__lower_tensor_index(lw, src, idx, 0, si);
  tirx_expr *inb = NULL, *avail = NULL; /* in bounds; elements left on the innermost dim */
  for (int k = 0; k < rank; k++) {
    if (!guarded(src, k)) continue;
    char name[16]; /* g0, g1: the global index on dim k */
    snprintf(name, sizeof name, "g%d", k);
    si[k] = tirx__emit_let(e, name, si[k]);
    tirx_expr *cond = tirx_lt(b, si[k], g->shape[k]);
    inb = inb ? tirx_and(b, inb, cond) : cond;
    if (k == rank - 1) avail = tirx_sub(b, g->shape[k], si[k]);
  }
  tirx_expr *bytes = NULL;
  if (inb) {
    inb = tirx__emit_let(e, "inb", inb);
    for (int k = 0; k < rank; k++) si[k] = tirx_select(b, inb, si[k], tirx_int(b, 0));
    tirx_expr *n = avail ? tirx_mul(b, tirx_min(b, avail, tirx_int(b, vec)), tirx_int(b, esize))
                         : tirx_int(b, vec * esize);
    bytes = tirx_select(b, inb, n, tirx_int(b, 0));
  }
  tirx_expr *from = tirx_load(b, g, rank, si);
  if (b->status != TIRX_OK) return;
  cp_async(e, dst->tensor, di, from, (int)(vec * esize), bytes);
}

static tirx_status emit(const tirx__rule *rule, const tirx__call *call, const tirx__shape *shape,
                        void *emitter) {
  (void)rule;
  (void)call;
  tirx__lower *lw = emitter;
  lw->element = element;
  return tirx__lower_elementwise(lw, shape->v[0]);
}

const tirx__rule tirx__rule_copy_cp_async = {
    .name = "copy_async.cp_async",
    .family = "cp_async",
    .summary = "cp.async.{cg,ca}.shared.global of 16, 8 or 4 bytes, zero-filled tails, groups",
    .kind = TIRX__RULE_FALLBACK,
    .prims = TIRX__BIT(TIRX__PRIM_COPY_ASYNC),
    .flows = TIRX__FLOW(TIRX__ROLE_GLOBAL, TIRX__ROLE_SHARED),
    .teams = TIRX__BIT(TIRX_TEAM_THREAD) | TIRX__BIT(TIRX_TEAM_WARP) |
             TIRX__BIT(TIRX_TEAM_WARPGROUP) | TIRX__BIT(TIRX_TEAM_CTA),
    .needs = {.dtypes = TIRX__DTYPES_ALL, .full_team = true, .features = TIRX__FEAT(CP_ASYNC)},
    .shape_dims = {"vec"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
    .prelude = frags,
};
