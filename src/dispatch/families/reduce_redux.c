/*
 * reduce.redux: a full warp reduces register tiles of 32-bit integers with an in-thread loop
 * over the reduced registers (as reduce.shuffle) and then one redux.sync.{add,min,max}.{s32,u32}
 * per value instead of the five-step shfl butterfly; every lane gets the result. sm_80.
 *
 * The instruction, as data: team warp, complete (32 lanes: the full member mask); source and
 * destination in registers; dtype i32 or u32; op sum, min or max; the reduced iters on reg/m
 * or on laneid, the laneid ones covering all 32 lanes (distinct power-of-two extents and
 * strides whose lane bits make 0x1f); every element of the destination held by lanes of the
 * warp that reduced it. Preferred over reduce.shuffle (registered before it, its default);
 * a sub-warp reduction, a float or a 64-bit integer stays on reduce.shuffle.
 * Shape: (lanes) = 32.
 *
 * One file: the rule, its lowering, its native statement (acc = redux(acc)) and its prelude
 * fragment, which only kernels that use the statement carry.
 */
#include <stdlib.h>

#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "families.h"

/* ---- the native statement: acc = redux.sync.<op>(acc) over the full warp ---- */

typedef struct redux_payload {
  tirx_expr *acc; /* a variable of dtype: read and written */
  int32_t op;     /* TIRX__PRIM_OP_SUM, _MIN or _MAX */
  int32_t dtype;  /* TIRX_I32 or TIRX_U32 */
} redux_payload;

static const char *redux_op(int op) {
  return op == TIRX__PRIM_OP_MIN ? "min" : op == TIRX__PRIM_OP_MAX ? "max" : "add";
}

/* "acc = redux.add.s32(acc)" */
static void print_redux(tirx__writer *w, const tirx__stmt *s) {
  const redux_payload *p = s->native.p;
  w->expr(w, p->acc);
  tirx__sb_printf(w->sb, " = redux.%s.%s(", redux_op(p->op), p->dtype == TIRX_U32 ? "u32" : "s32");
  w->expr(w, p->acc);
  tirx__sb_append(w->sb, ")");
}

/* "acc = tirx_redux_add(acc);": the helper's overload follows acc's C++ type */
static void emit_redux(tirx__writer *w, const tirx__stmt *s) {
  const redux_payload *p = s->native.p;
  w->expr(w, p->acc);
  tirx__sb_printf(w->sb, " = tirx_redux_%s(", redux_op(p->op));
  w->expr(w, p->acc);
  tirx__sb_append(w->sb, ");");
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
static const tirx__prelude_frag redux_frag = {.order = 900, .text =
    "/* redux.sync over the full warp (reduce.redux): every lane gets the sum, min or max of v\n"
    " * over the 32 lanes. sm_80. */\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "#define TIRX_REDUX(name, T, ins) __device__ __forceinline__ T name(T v) { T r; asm volatile(ins \" %0, %1, 0xffffffff;\" : \"=r\"(r) : \"r\"(v)); return r; }\n"
    "TIRX_REDUX(tirx_redux_add, int, \"redux.sync.add.s32\")\n"
    "TIRX_REDUX(tirx_redux_add, unsigned, \"redux.sync.add.u32\")\n"
    "TIRX_REDUX(tirx_redux_min, int, \"redux.sync.min.s32\")\n"
    "TIRX_REDUX(tirx_redux_min, unsigned, \"redux.sync.min.u32\")\n"
    "TIRX_REDUX(tirx_redux_max, int, \"redux.sync.max.s32\")\n"
    "TIRX_REDUX(tirx_redux_max, unsigned, \"redux.sync.max.u32\")\n"
    "#undef TIRX_REDUX\n"
    "#endif\n"};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const op_frags[] = {&redux_frag, NULL};

static const tirx__native_op nv_redux = {
    .name = "redux", .helper = "tirx_redux", .need = TIRX__NEED(TIRX__FEAT(REDUX)),
    .size = sizeof(redux_payload), .ops = {TIRX__EXPR(redux_payload, acc)},
    .print = print_redux, .emit = emit_redux, .prelude = op_frags};

/* ---- the rule ---- */

enum { FULL_WARP = 31 };

/* The lane bits the reduction covers, or -1 after recording why they are not a butterfly. */
static int64_t lane_mask(tirx__rule_ctx *ctx) {
  return tirx__reduce_lane_mask(ctx, "does not cover distinct lane bits");
}

/* Every dst element is held by lanes of the warp that reduced it: the same coordinates as the
 * source's first element of its group on every thread axis but laneid. */
static bool dst_in_warp(tirx__rule_ctx *ctx, int64_t x, const tirx_coord *p, const tirx_coord *q,
                        int64_t nq, int64_t arg) {
  (void)arg;
  if (nq == 0) return false; /* nothing to compare with: not checked */
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (tirx_axis_is_thread(ax) && ax != TIRX_AXIS_LANEID && p->v[ax] != q[0].v[ax]) {
      tirx__reason(ctx, "dst element %lld is held outside the warp that reduces it",
                   (long long)x);
      return false;
    }
  return true;
}

static void check(tirx__rule_ctx *ctx) {
  tirx__reduce_check_axes(ctx, TIRX__AXIS_BIT(TIRX_AXIS_LANEID),
                          "redux.sync reduces over laneid and registers only");
  if (ctx->nreasons) return;
  int64_t mask = lane_mask(ctx);
  if (mask < 0) return;
  if (mask != FULL_WARP) {
    tirx__reason(ctx,
                 "not a full warp reduction: the reduced lane bits are 0x%llx, and redux.sync "
                 "combines all 32 lanes (0x1f)",
                 (unsigned long long)mask);
    return;
  }
  tirx__reduce_check_dst(ctx, dst_in_warp, 0);
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)ctx;
  (void)cap;
  out[0] = (tirx__shape){{32}};
  return 1;
}

/* The cross-lane step: one redux.sync on the accumulator. */
static void lanes(tirx__emit *e, tirx_expr *acc, int op, int dt, int64_t lane_mask) {
  (void)lane_mask;
  tirx__stmt *s = tirx__emit_native(e, &nv_redux);
  if (!s) return;
  redux_payload *p = s->native.p;
  p->acc = acc;
  p->op = op;
  p->dtype = dt;
}

static tirx_status emit(const tirx__rule *rule, const tirx__call *call, const tirx__shape *shape,
                        void *emitter) {
  (void)rule;
  (void)call;
  (void)shape;
  return tirx__lower_reduce_with(emitter, FULL_WARP, lanes);
}

const tirx__rule tirx__rule_reduce_redux = {
    .name = "reduce.redux",
    .family = "redux",
    .summary = "in-thread loop, then redux.sync.{add,min,max}.{s32,u32} over the full warp",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_REDUCE),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARP),
    .needs = {.dtypes = TIRX__DT(I32) | TIRX__DT(U32),
              .full_team = true,
              .ops = TIRX__OPBIT(SUM) | TIRX__OPBIT(MIN) | TIRX__OPBIT(MAX),
              .features = TIRX__FEAT(REDUX)},
    .shape_dims = {"lanes"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
};
