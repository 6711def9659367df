/*
 * reduce.dsmem: a cluster reduces register tiles: a CTA reduction (as reduce.smem), then the
 * CTAs' partials pushed into every peer through distributed shared memory (mapa +
 * st.shared::cluster), a cluster barrier (barrier.cluster.arrive.release/wait.acquire) and a
 * fold in rank order, sm_90 (lowering: tirx__lower_reduce_dsmem below, tirx__reduce_smem in reduce_smem.c). The cluster
 * must be one-dimensional (x CTAs) and the reduced cbx iters must cover it; f32 accumulators.
 *
 * The instruction, as data: team cluster, arch >= 90; source and destination in registers;
 * any numeric dtype; every reduced iter on reg/m or on a thread axis inside the cluster
 * (laneid, warpid, wid_in_wg, wgid, tid_in_wg, tid, cbx, cby, cbz).
 * Shape: (ctas) whose partials are combined.
 */
#include "../lower.h"
#include "families.h"

#define AXES_CLUSTER                                                                               \
  (TIRX__AXIS_BIT(TIRX_AXIS_LANEID) | TIRX__AXIS_BIT(TIRX_AXIS_WARPID) |                           \
   TIRX__AXIS_BIT(TIRX_AXIS_WID_IN_WG) | TIRX__AXIS_BIT(TIRX_AXIS_WGID) |                          \
   TIRX__AXIS_BIT(TIRX_AXIS_TID_IN_WG) | TIRX__AXIS_BIT(TIRX_AXIS_TID) | AXES_CB)
#define AXES_CB                                                                                    \
  (TIRX__AXIS_BIT(TIRX_AXIS_CBX) | TIRX__AXIS_BIT(TIRX_AXIS_CBY) | TIRX__AXIS_BIT(TIRX_AXIS_CBZ))

/* The product of the reduced iters' extents on cbx, cby and cbz. */
static int64_t ctas(tirx__rule_ctx *ctx) {
  tirx__reduced_iter it[TIRX_LAYOUT_MAX_ITERS];
  int n = tirx__reduced_iters(ctx, it, TIRX_LAYOUT_MAX_ITERS);
  int64_t c = 1;
  for (int i = 0; i < n; i++)
    if (it[i].iter.stride != 0 && (AXES_CB >> it[i].iter.axis & 1)) c *= it[i].iter.extent;
  return c;
}

static void check(tirx__rule_ctx *ctx) {
  tirx__reduce_check_axes(ctx, AXES_CLUSTER,
                          "a cluster reduction combines threads of one cluster only");
  ctx->scratch[0] = ctas(ctx);
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)cap;
  out[0] = (tirx__shape){{ctx->scratch[0]}};
  return 1;
}

/*
 * reduce.dsmem: as reduce.smem within each CTA (reduced iters on cbx are left to the last
 * step), then thread 0 of every CTA stores its CTA's partial into its own slot
 * [kept][rank] of a shared scratch in every CTA of the cluster (mapa + st.shared::cluster);
 * a cluster barrier (arrive.release, wait.acquire) publishes them; every thread folds the
 * slots in rank order, so all CTAs get the same bits. Inside a for loop, a second cluster
 * barrier keeps a peer from writing the slots of the next iteration before every CTA has read
 * this one's; a call outside loops ends at the fold.
 * The reduced cbx iters must cover the whole cluster (one dimension of x CTAs).
 */
tirx_status tirx__lower_reduce_dsmem(tirx__lower *lw) { return tirx__reduce_smem(lw, true); }

static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                                    const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  (void)shape;
  return tirx__lower_reduce_dsmem(emitter);
}

/* ---- the native statements: the cluster barrier and the DSMEM store ---- */

/* value (f32) into shared element dst of the cluster's CTA cta */
typedef struct dsmem_payload {
  tirx__elem dst;
  tirx_expr *cta, *value;
} dsmem_payload;

typedef struct none_payload {
  int32_t unused;
} none_payload;

static const tirx__native_op nv_cluster_sync = {
    .name = "cluster_sync", .helper = "tirx_cluster_sync_all", .need = TIRX__NEED(TIRX__FEAT(CLUSTER)),
    .section = TIRX__PRE_BULK, .size = sizeof(none_payload), .print_fmt = "$n",
    .emit_fmt = "$h();"};

static const tirx__native_op nv_dsmem_store = {
    .name = "dsmem_store", .helper = "tirx_dsmem_st_f32", .need = TIRX__NEED(TIRX__FEAT(CLUSTER)),
    .section = TIRX__PRE_BULK, .size = sizeof(dsmem_payload),
    .ops = {TIRX__ELEM(dsmem_payload, dst), TIRX__EXPR(dsmem_payload, cta),
            TIRX__EXPR(dsmem_payload, value)},
    .print_fmt = "$n $0 of cta $1 = $2", .emit_fmt = "$h($0, (unsigned)($1), $2);"};

void tirx__dsmem_cluster_barrier(tirx__emit *e) {
  if (tirx__emit_native(e, &nv_cluster_sync)) tirx__b_need(e->b, nv_cluster_sync.need, "reduce.dsmem");
}

void tirx__dsmem_store(tirx__emit *e, tirx_tensor *t, tirx_expr *const *index, tirx_expr *rank,
                       tirx_expr *value) {
  static const char fn[] = "reduce.dsmem";
  tirx_builder *b = e->b;
  if (!tirx__b_ok(b, fn) || !tirx__b_tensor(b, fn, t, "t") || !tirx__b_expr(b, fn, rank, "rank") ||
      !tirx__b_expr(b, fn, value, "value"))
    return;
  if (t->storage != TIRX__SHARED || t->dtype != TIRX_F32) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: t is not a shared f32 tensor", fn);
    return;
  }
  tirx_expr **ix = tirx__b_node(b, fn, sizeof *ix * (size_t)t->rank);
  tirx__stmt *s = ix ? tirx__b_native_in(b, fn, &nv_dsmem_store, tirx__emit_block(e)) : NULL;
  if (!s) return;
  for (int k = 0; k < t->rank; k++) {
    if (!tirx__b_expr(b, fn, index[k], "index")) return;
    ix[k] = index[k];
  }
  dsmem_payload *p = s->native.p;
  p->dst.tensor = t;
  p->dst.index = ix;
  p->value = value;
  p->cta = rank;
}

/* In the sm_90 section (for every kernel that uses it: byte-identical generated code). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
/* tirx_cluster_sync_all, tirx_dsmem_st_f32 */
static const tirx__prelude_frag dsmem_frag = {.order = 550, .when = TIRX__PRE_BULK | TIRX__PRE_SYNC, .text =
    "__device__ __forceinline__ void tirx_cluster_sync_all() {\n"
    "  asm volatile(\"barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
    "}\n"
    "/* v into the f32 at p's offset in the shared memory of cluster CTA rank (DSMEM). */\n"
    "__device__ __forceinline__ void tirx_dsmem_st_f32(float *p, unsigned rank, float v) {\n"
    "  unsigned a;\n"
    "  asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(a) : \"r\"(tirx_smem_addr(p)), \"r\"(rank));\n"
    "  asm volatile(\"st.shared::cluster.f32 [%0], %1;\" :: \"r\"(a), \"f\"(v) : \"memory\");\n"
    "}\n"
};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const frags[] = {&dsmem_frag, NULL};


const tirx__rule tirx__rule_reduce_dsmem = {
    .name = "reduce.dsmem",
    .family = "dsmem",
    .summary = "CTA reduction, then partials through distributed shared memory",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_REDUCE),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_CLUSTER),
    .needs = {.dtypes = TIRX__DTYPES_NUMERIC, .ops = TIRX__OPS_REDUCE,
              .features = TIRX__FEAT(CLUSTER)},
    .shape_dims = {"ctas"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
    .prelude = frags,
};
