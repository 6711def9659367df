/*
 * copy_async.tma: TMA tile copies between global and shared memory (sm_90).
 *
 *   load   cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
 *          [smem], [tmap, {c0..}], [mbar]  (+ .multicast::cluster with a u16 CTA mask)
 *   store  cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [tmap, {c0..}], [smem]
 *
 * The tensor map is derived from the layouts (../tma.h: the shared layout's dense chain is the
 * box, the rest are residual loops) and passed to the kernel as a hidden
 * `const __grid_constant__ tirx_tmap` parameter, one per (global tensor, map), encoded at
 * launch with cuTensorMapEncodeTiled from the actual pointer, shape and strides, with
 * out-of-bounds elements zero-filled on loads and clipped on stores.
 *
 * Protocol: a load needs cfg->barrier (config.barrier); a load without one is cp.async's
 * (copy_cp_async.c, this rule's fallback), and the reason says so.
 *
 * Hint: a load with cfg->hint TIRX_HINT_STREAM (data read once) carries an L2 evict_first
 * policy (.L2::cache_hint with createpolicy.fractional.L2::evict_first, 1.0): the helpers
 * tirx_tma_load_ef_Nd, emitted only in kernels that use them. Other hints, and hints on
 * stores, are refused.
 *
 * Scope: one thread issues the copy. The rule requires exactly one active thread in the CTA,
 * as a filter makes it: tirx_filter_begin(b, TIRX_AXIS_TID, t, t + 1) (an elect-one or any
 * run-time condition is not visible to the scope model, so it does not satisfy the rule: put
 * the filter inside it or use the filter alone). Synchronisation is the caller's: a load
 * arrives on cfg.barrier's mbarrier with complete_tx (the caller does arrive.expect_tx with
 * the box bytes and waits on the phase); a store is tracked by tirx_bulk_commit /
 * tirx_bulk_wait, and shared-memory writes it reads need a proxy fence before it.
 *
 * Shape: (box) elements moved by one instruction. The loop form (whole logical dimensions,
 * exact out-of-bounds handling) is always listed; the split form (fewer, larger boxes: a
 * logical dimension split into several map dimensions) is listed first only when every split
 * dimension's global extent is a build-time constant it divides, and otherwise after it (ask
 * for it with config.shape; the launch then checks the divisibility). Where the loop form is
 * not legal (its boxes would not start 128-byte aligned) and the split form is known safe,
 * the split form is the only shape.
 */
#include <stdio.h>
#include <string.h>

#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "../tensor_map.h"
#include "families.h"

/* ---- the native statements: TMA load and store ---- */

/* smem <- the tensor map at coords (rank loads of the coordinates), mbarrier bar (a load),
 * multicast the u16 CTA mask (NULL: none); the store: map at coords <- smem */
typedef struct tma_payload {
  tirx__elem smem;
  tirx_expr **coords;
  int32_t rank;
  int32_t map; /* the kernel's tensor-map index */
  tirx_expr *bar, *multicast;
} tma_payload;

static const tirx__native_op nv_tma_load, nv_tma_store;

static void print_tma(tirx__writer *w, const tirx__stmt *s) {
  const tma_payload *p = s->native.p;
  bool ld = s->native.op != &nv_tma_store;
  tirx__sb_append(w->sb, ld ? "tma_load " : "tma_store ");
  w->elem(w, p->smem.tensor, p->smem.index);
  tirx__sb_printf(w->sb, " %s tmap%d(", ld ? "<-" : "->", (int)p->map);
  for (int i = 0; i < p->rank; i++) {
    if (i) tirx__sb_append(w->sb, ", ");
    w->expr(w, p->coords[i]);
  }
  tirx__sb_append(w->sb, ")");
  if (p->bar) {
    tirx__sb_append(w->sb, " bar ");
    w->elem(w, p->bar->tensor, p->bar->index);
  }
  if (p->multicast) {
    tirx__sb_append(w->sb, " multicast ");
    w->expr(w, p->multicast);
  }
}

static void coords(tirx__writer *w, const tma_payload *p) {
  for (int i = 0; i < p->rank; i++) {
    tirx__sb_append(w->sb, ", ");
    w->expr(w, p->coords[i]);
  }
  tirx__sb_append(w->sb, ");");
}

static void emit_tma_load(tirx__writer *w, const tirx__stmt *s) {
  const tma_payload *p = s->native.p;
  const tirx_expr *mc = p->multicast;
  tirx__sb_printf(w->sb, "tirx_tma_load_%s%dd(", mc ? "mc_" : "", (int)p->rank);
  w->elem(w, p->smem.tensor, p->smem.index);
  tirx__sb_printf(w->sb, ", &%s, ", w->tmap(w, NULL, p->map, 0));
  w->elem(w, p->bar->tensor, p->bar->index);
  if (mc) {
    tirx__sb_append(w->sb, ", (unsigned short)(");
    w->expr(w, mc);
    tirx__sb_append(w->sb, ")");
  }
  coords(w, p);
}

static void emit_tma_store(tirx__writer *w, const tirx__stmt *s) {
  const tma_payload *p = s->native.p;
  tirx__sb_printf(w->sb, "tirx_tma_store_%dd(&%s, ", (int)p->rank, w->tmap(w, NULL, p->map, 0));
  w->elem(w, p->smem.tensor, p->smem.index);
  coords(w, p);
}

static const tirx__native_op nv_tma_load = {
    .name = "tma_load", .helper = "tirx_tma_load",
    .need = TIRX__NEED(TIRX__FEAT(TMA) | TIRX__FEAT(MBARRIER)),
    .section = TIRX__PRE_BULK, .size = sizeof(tma_payload),
    .ops = {TIRX__ELEM(tma_payload, smem), TIRX__LOADS(tma_payload, coords, rank),
            TIRX__LOAD(tma_payload, bar), TIRX__EXPR(tma_payload, multicast)},
    .print = print_tma, .emit = emit_tma_load};

/* The evict-first loads: emitted only where used, so other kernels' code is unchanged. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
static const tirx__prelude_frag tma_ef_frag = {.order = 560, .when = 0, .text =
    "/* TMA loads of data read once (cfg->hint TIRX_HINT_STREAM): an L2 evict_first policy. */\n"
    "__device__ __forceinline__ unsigned long long tirx_l2_evict_first() {\n"
    "  unsigned long long p;\n"
    "  asm(\"createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\" : \"=l\"(p));\n"
    "  return p;\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_ef_1d(void *d, const tirx_tmap *m, void *bar, int c0) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3}], [%2], %4;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"l\"(tirx_l2_evict_first()) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_ef_2d(void *d, const tirx_tmap *m, void *bar, int c0, int c1) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"r\"(c1), \"l\"(tirx_l2_evict_first()) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_ef_3d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4, %5}], [%2], %6;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"l\"(tirx_l2_evict_first()) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_ef_4d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2, int c3) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4, %5, %6}], [%2], %7;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"l\"(tirx_l2_evict_first()) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_ef_5d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2, int c3, int c4) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4, %5, %6, %7}], [%2], %8;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(c4), \"l\"(tirx_l2_evict_first()) : \"memory\");\n"
    "}\n"};
#pragma GCC diagnostic pop
static const tirx__prelude_frag *const ef_frags[] = {&tma_ef_frag, NULL};

static void emit_tma_load_ef(tirx__writer *w, const tirx__stmt *s) {
  const tma_payload *p = s->native.p;
  tirx__sb_printf(w->sb, "tirx_tma_load_ef_%dd(", (int)p->rank);
  w->elem(w, p->smem.tensor, p->smem.index);
  tirx__sb_printf(w->sb, ", &%s, ", w->tmap(w, NULL, p->map, 0));
  w->elem(w, p->bar->tensor, p->bar->index);
  coords(w, p);
}

static void print_tma_ef(tirx__writer *w, const tirx__stmt *s) {
  print_tma(w, s);
  tirx__sb_append(w->sb, " evict_first");
}

static const tirx__native_op nv_tma_load_ef = {
    .name = "tma_load_ef", .helper = "tirx_tma_load_ef",
    .need = TIRX__NEED(TIRX__FEAT(TMA) | TIRX__FEAT(MBARRIER)),
    .section = TIRX__PRE_BULK, .size = sizeof(tma_payload),
    .ops = {TIRX__ELEM(tma_payload, smem), TIRX__LOADS(tma_payload, coords, rank),
            TIRX__LOAD(tma_payload, bar)},
    .print = print_tma_ef, .emit = emit_tma_load_ef, .prelude = ef_frags};

static const tirx__native_op nv_tma_store = {
    .name = "tma_store", .helper = "tirx_tma_store", .need = TIRX__NEED(TIRX__FEAT(TMA)),
    .section = TIRX__PRE_BULK, .size = sizeof(tma_payload),
    .ops = {TIRX__ELEM(tma_payload, smem), TIRX__LOADS(tma_payload, coords, rank)},
    .print = print_tma, .emit = emit_tma_store};

/* In the sm_90 section, for every kernel that uses it (byte-identical generated code): the
 * comment that opens the section, the copies inside its sm_90 block, and the old minimal
 * mbarrier helpers for TMA loads around reduce.dsmem's (order 550). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
/* the section's opening comment */
static const tirx__prelude_frag tma_comment = {.order = 500, .when = TIRX__PRE_BULK | TIRX__PRE_SYNC, .text =
    "/* TMA (copy_async.tma, TIRX__ST_ASYNC): tensor maps are 128-byte opaque parameters\n"
    " * (const __grid_constant__), encoded at launch with cuTensorMapEncodeTiled. One thread issues\n"
    " * each copy; loads complete on an mbarrier (complete_tx), stores in bulk groups. Templates\n"
    " * and #if guards, so nothing here is compiled for an arch without TMA unless used. */\n"
};
/* tirx_tma_load_*, tirx_tma_store_* */
static const tirx__prelude_frag tma_frag = {.order = 520, .when = TIRX__PRE_BULK | TIRX__PRE_SYNC, .text =
    "__device__ __forceinline__ void tirx_tma_load_1d(void *d, const tirx_tmap *m, void *bar, int c0) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_mc_1d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4}], [%2], %3;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"h\"(mask), \"r\"(c0) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_store_1d(const tirx_tmap *m, const void *s, int c0) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%2}], [%1];\" :: \"l\"(m), \"r\"(tirx_smem_addr(s)), \"r\"(c0) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_2d(void *d, const tirx_tmap *m, void *bar, int c0, int c1) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"r\"(c1) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_mc_2d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0, int c1) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"h\"(mask), \"r\"(c0), \"r\"(c1) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_store_2d(const tirx_tmap *m, const void *s, int c0, int c1) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\" :: \"l\"(m), \"r\"(tirx_smem_addr(s)), \"r\"(c0), \"r\"(c1) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_3d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"r\"(c1), \"r\"(c2) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_mc_3d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0, int c1, int c2) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"h\"(mask), \"r\"(c0), \"r\"(c1), \"r\"(c2) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_store_3d(const tirx_tmap *m, const void *s, int c0, int c1, int c2) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\" :: \"l\"(m), \"r\"(tirx_smem_addr(s)), \"r\"(c0), \"r\"(c1), \"r\"(c2) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_4d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2, int c3) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_mc_4d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0, int c1, int c2, int c3) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6, %7}], [%2], %3;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"h\"(mask), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_store_4d(const tirx_tmap *m, const void *s, int c0, int c1, int c2, int c3) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\" :: \"l\"(m), \"r\"(tirx_smem_addr(s)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_5d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2, int c3, int c4) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(c4) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_load_mc_5d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0, int c1, int c2, int c3, int c4) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;\" :: \"r\"(tirx_smem_addr(d)), \"l\"(m), \"r\"(tirx_smem_addr(bar)), \"h\"(mask), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(c4) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tma_store_5d(const tirx_tmap *m, const void *s, int c0, int c1, int c2, int c3, int c4) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\" :: \"l\"(m), \"r\"(tirx_smem_addr(s)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3), \"r\"(c4) : \"memory\");\n"
    "}\n"
};
/* minimal mbarrier helpers (1 of 2) */
static const tirx__prelude_frag tma_mbar = {.order = 540, .when = TIRX__PRE_BULK | TIRX__PRE_SYNC, .text =
    "/* Minimal mbarrier helpers for TMA loads (tirx__mbar_*; the public mbarrier statements\n"
    " * supersede them). */\n"
    "__device__ __forceinline__ void tirx_mbar_init(void *bar, unsigned count) {\n"
    "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(tirx_smem_addr(bar)), \"r\"(count) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_fence_mbar_init() {\n"
    "  asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
    "}\n"
};
/* minimal mbarrier helpers (2 of 2) */
static const tirx__prelude_frag tma_mbar2 = {.order = 555, .when = TIRX__PRE_BULK | TIRX__PRE_SYNC, .text =
    "__device__ __forceinline__ void tirx_mbar_expect_tx(void *bar, unsigned bytes) {\n"
    "  asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(tirx_smem_addr(bar)), \"r\"(bytes) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_mbar_wait(void *bar, unsigned parity) {\n"
    "  unsigned done = 0;\n"
    "  while (!done)\n"
    "    asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\" : \"=r\"(done) : \"r\"(tirx_smem_addr(bar)), \"r\"(parity) : \"memory\");\n"
    "}\n"
};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const frags[] = {&tma_comment, &tma_frag, &tma_mbar, &tma_mbar2,
                                                  NULL};


static const char FN[] = "tirx_kernel_build";

/* Operand indices of the global and the shared side. */
static void sides(const tirx__call *c, int *gi, int *si) {
  *gi = c->operands[0].role == TIRX__ROLE_GLOBAL ? 0 : 1;
  *si = 1 - *gi;
}

/* What is known of the global side: the builder's description, or (a bare call) the global
 * layout's strides as constants, extents known at launch, begins zero. */
static bool global_of(tirx__rule_ctx *ctx, int gi, tirx__tma_global *g) {
  if (ctx->call->tma) {
    *g = *ctx->call->tma;
    return true;
  }
  const tirx_layout *l = tirx__canon_of(ctx, ctx->call->operands[gi].layout);
  if (!l) {
    tirx__reason(ctx, "src has no canonical form");
    return false;
  }
  for (int k = 0; k < l->rank; k++) {
    int n = l->dim_begin[k + 1] - l->dim_begin[k];
    if (n > 1) {
      tirx__reason(ctx, "%s dim %d is not one strided dimension: TMA walks strided tensors",
                   tirx__rule_operand_name(ctx, gi), k);
      return false;
    }
    g->stride[k] = n ? l->d[l->dim_begin[k]].stride : TIRX__TMA_UNKNOWN;
    g->size[k] = TIRX__TMA_UNKNOWN;
    g->begin_div[k] = 0;
  }
  return true;
}

static bool derive(tirx__rule_ctx *ctx, const tirx__call *c, bool split, tirx__tma_plan *plan,
                   char *why, size_t cap) {
  int gi, si;
  sides(c, &gi, &si);
  tirx__tma_global g;
  if (!global_of(ctx, gi, &g)) return false;
  const tirx_layout *sl = c->operands[si].layout;
  int64_t extent[TIRX_LAYOUT_MAX_RANK];
  int rank = tirx_layout_rank(sl);
  tirx_layout_shape(sl, extent, TIRX_LAYOUT_MAX_RANK);
  return tirx__tma_derive(ctx->arena, rank, extent, &g, sl, tirx_dtype_size(c->operands[si].dtype),
                          split, plan, why, cap) == TIRX_OK;
}

/* scratch[0]: the loop form's box; [1]: the split form's (0: not legal or the same); [2]: the
 * split form is known safe at build time. */
static void check(tirx__rule_ctx *ctx) {
  const tirx__call *c = ctx->call;
  if (c->operands[1].role == TIRX__ROLE_GLOBAL && !c->config.barrier) {
    /* The caller wrote the cp.async protocol (groups): TMA's other needs do not matter. */
    tirx__reason(ctx, "the load has no cfg->barrier: a TMA load completes on an mbarrier (a "
                      "load without one is a cp.async load)");
    return;
  }
  if (c->config.hint != TIRX__HINT_NONE &&
      (c->config.hint != TIRX__HINT_STREAM || c->operands[1].role != TIRX__ROLE_GLOBAL))
    tirx__reason(ctx, "a TMA copy takes cache hint .cs (TIRX_HINT_STREAM) on loads only (an "
                      "L2 evict_first policy)");
  int64_t threads = tirx_scope_num_threads(c->scope);
  if (threads != 1)
    tirx__reason(ctx,
                 "the call has %lld active threads: one thread issues a TMA copy (wrap it in "
                 "tirx_filter_begin(b, TIRX_AXIS_TID, t, t + 1))",
                 (long long)threads);
  tirx__tma_plan loop, split;
  char why[320] = "", why_loop[320] = "";
  bool have_loop = derive(ctx, c, false, &loop, why_loop, sizeof why_loop);
  ctx->scratch[0] = have_loop ? loop.box_elems : 0;
  ctx->scratch[1] = 0;
  ctx->scratch[2] = 0;
  int reasons = ctx->nreasons;
  if (derive(ctx, c, true, &split, why, sizeof why) &&
      (!have_loop || split.box_elems > loop.box_elems)) {
    ctx->scratch[1] = split.box_elems;
    bool safe = true;
    int gi, si;
    sides(c, &gi, &si);
    for (int i = 0; i < split.map.rank; i++)
      if (split.map.d[i].kind == TIRX__TMAP_OUTER)
        safe = safe && c->tma && c->tma->size[split.map.d[i].dim] != TIRX__TMA_UNKNOWN;
    ctx->scratch[2] = safe;
  }
  ctx->nreasons = reasons; /* the split form failing is not a failed constraint */
  /* Without a loop form (its boxes would start off the 128-byte alignment: 5000 bf16 as
   * boxes of 200 elements), only a split form known safe at build time is legal. */
  if (!have_loop && !ctx->scratch[2] && why_loop[0])
    tirx__reason(ctx, "%s%s", why_loop,
                 ctx->scratch[1] ? " (the split form, one box, needs the split dimension's "
                                   "global extent known at build time)"
                                 : "");
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)cap;
  tirx__shape loop = {{ctx->scratch[0]}}, split = {{ctx->scratch[1]}};
  if (!ctx->scratch[0]) { /* only the split form (check) */
    out[0] = split;
    return 1;
  }
  if (!ctx->scratch[1]) {
    out[0] = loop;
    return 1;
  }
  out[0] = ctx->scratch[2] ? split : loop;
  out[1] = ctx->scratch[2] ? loop : split;
  return 2;
}

/* ---- lowering ---- */

static tirx_status fail(tirx__lower *lw, const char *msg) {
  return tirx__b_fail(lw->b, TIRX_E_NOT_SUPPORTED, "%s: [%s:%d] %s: %s", FN, lw->b->name,
                      (int)lw->p->number, lw->rule, msg);
}

static tirx_status emit(const tirx__rule *rule, const tirx__call *call, const tirx__shape *shape,
                        void *emitter) {
  tirx__lower *lw = emitter;
  tirx_builder *b = lw->b;
  tirx__emit *em = lw->e;
  const tirx__prim_stmt *p = lw->p;
  tirx__rule_ctx ctx = {.call = call, .rule = rule, .arena = lw->arena};
  tirx__tma_plan plan;
  char why[320] = "rule check failed";
  bool loop = derive(&ctx, call, false, &plan, why, sizeof why);
  if ((!loop || shape->v[0] != plan.box_elems) && !derive(&ctx, call, true, &plan, why, sizeof why))
    return fail(lw, why);
  int gi, si;
  sides(call, &gi, &si);
  bool load = gi == 1;
  const tirx_region *gr = p->ops[gi], *sr = p->ops[si];
  if (load && !p->barrier) return fail(lw, "a TMA load needs cfg->barrier (its mbarrier)");
  if (p->multicast && !b->cluster[0])
    return fail(lw, "a multicast TMA load needs a cluster launch (tirx_set_cluster)");
  plan.map.dtype = (uint8_t)gr->tensor->dtype;
  plan.map.store = !load;
  int map = tirx__b_tmap(b, gr->tensor, &plan.map);
  if (map < 0) return b->status;

  tirx_expr *j[TIRX_LAYOUT_MAX_ITERS];
  for (int l = 0; l < plan.nloops; l++)
    j[l] = tirx__emit_for_begin(em, "i", tirx_int(b, 0), tirx_int(b, plan.loop[l].extent), NULL,
                          TIRX_LOOP_UNROLL);
  tirx_expr **coords = tirx__arena_array(b->arena, TIRX__TMAP_MAX_RANK, sizeof *coords, FN);
  if (!coords) return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  for (int i = 0; i < plan.map.rank; i++) {
    const tirx__tmap_dim *d = &plan.map.d[i];
    if (d->kind == TIRX__TMAP_INNER) {
      coords[i] = tirx_int_typed(b, 0, TIRX_I32);
      continue;
    }
    tirx_expr *e = tirx_cast(b, gr->begin[d->dim], TIRX_I32);
    if (plan.coord_div[i] > 1) e = tirx_div(b, e, tirx_int(b, plan.coord_div[i]));
    for (int l = 0; l < plan.nloops; l++)
      if (plan.loop[l].mapdim == i)
        e = tirx_add(b, e, tirx_mul(b, j[l], tirx_int(b, plan.loop[l].coord_step)));
    coords[i] = e;
  }
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK];
  for (int k = 0; k < sr->tensor->rank; k++) {
    idx[k] = sr->begin[k];
    for (int l = 0; l < plan.nloops; l++)
      if (plan.loop[l].dim == k)
        idx[k] = tirx_add(b, idx[k], tirx_mul(b, j[l], tirx_int(b, plan.loop[l].f)));
  }
  tirx_expr **index = tirx__b_index_list(b, FN, sr->tensor, sr->tensor->rank, idx);
  tirx_expr *bar = NULL;
  if (load) {
    const tirx_region *br = p->barrier;
    bar = tirx_load(b, br->tensor, br->tensor->rank, br->begin);
  }
  if (b->status != TIRX_OK) return b->status;
  bool ef = load && call->config.hint == TIRX__HINT_STREAM;
  if (ef && p->multicast)
    return fail(lw, "a multicast TMA load takes no cache hint (no instruction has both)");
  tirx__stmt *s = tirx__emit_native(em, ef ? &nv_tma_load_ef : load ? &nv_tma_load : &nv_tma_store);
  if (!s) return b->status;
  tma_payload *q = s->native.p;
  q->map = map;
  q->smem.tensor = sr->tensor;
  q->smem.index = index;
  q->coords = coords;
  q->rank = plan.map.rank;
  q->bar = bar;
  q->multicast = load ? p->multicast : NULL;
  for (int l = 0; l < plan.nloops; l++) tirx__emit_for_end(em);
  return b->status;
}

const tirx__rule tirx__rule_copy_tma = {
    .name = "copy_async.tma",
    .family = "tma",
    .summary = "cp.async.bulk.tensor (TMA) tile load/store, mbarrier or bulk-group completion",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_COPY_ASYNC),
    .flows = TIRX__FLOW(TIRX__ROLE_GLOBAL, TIRX__ROLE_SHARED) |
             TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_GLOBAL),
    .teams = TIRX__TEAMS_ALL,
    .needs = {.dtypes = TIRX__DTYPES_ALL, .hints = true,
              .features = TIRX__FEAT(TMA) | TIRX__FEAT(MBARRIER)},
    .shape_dims = {"box"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
    .prelude = frags,
};
