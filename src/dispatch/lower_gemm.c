/*
 * Lowering of gemm.mma and gemm_async.wgmma (the rules in families/gemm_*.c say what is
 * legal). Both write native statements (native.h: TIRX__NV_WGMMA, TIRX__NV_MMA) whose
 * operands are loads of the tiles at the elements the instruction starts from: codegen turns
 * the local ones into register pointers (constant slots once loops are unrolled) and the shared
 * ones into addresses. Regions of shared tensors may begin at a non-constant index (stage s):
 * the begins are added to every index, so a stage's tile is addressed like stage 0's.
 */
#include <string.h>

#include "families/gemm_common.h"
#include "lower.h"

static const char FN[] = "tirx_kernel_build";

/* The load of region r at begin + (i, j). */
static tirx_expr *at(tirx_builder *b, const tirx_region *r, int64_t i, int64_t j) {
  tirx_expr *idx[2];
  int64_t off[2] = {i, j};
  for (int k = 0; k < 2; k++) {
    const tirx_expr *bk = r->begin[k];
    idx[k] = bk->kind == TIRX__EX_INT ? tirx_int(b, bk->i + off[k])
             : off[k]                 ? tirx_add(b, r->begin[k], tirx_int(b, off[k]))
                                      : r->begin[k];
  }
  return tirx_load(b, r->tensor, 2, idx);
}

static tirx__stmt *native(tirx_builder *b, int op) {
  return tirx__b_lowered_native(b, FN, op);
}

/* A register fence on every register of the local array t (f32, or 16-bit in pairs). */
static void fence_regs(tirx_builder *b, tirx_tensor *t) {
  tirx__stmt *s = native(b, TIRX__NV_FENCE_REGS);
  if (!s) return;
  s->native.fence_regs.regs = t;
  s->native.fence_regs.n = (int32_t)t->elems;
}

/* ---- gemm_async.wgmma, gemm_async.wgmma_rs ---- */

/*
 * For each k16 step, each m64 slab and each n-column block one wgmma.mma_async (scale-d: the
 * call's accumulate predicate on the first k step, 1 after), after one wgmma.fence. Register
 * fences (DeepGEMM's warpgroup_fence_operand) on the accumulator, and in the RS form on the A
 * tile, before the wgmma.fence and after the last instruction: every write of those registers
 * that precedes the call in the program stays above the wgmma.fence, which is what the PTX ISA
 * asks of registers written before a wgmma reads them, and nothing after the call moves into
 * it (codegen fences them again after tirx_wgmma_wait). SS descriptors start at the slab's row
 * 0 and the step's column: inside a swizzle row that is +32 bytes per k16 (row 0 of a swizzle
 * atom is unswizzled). RS: the A operand is the local tile at the (slab, step) block's corner,
 * its fragment's 8 registers from there on (check_rs in families/gemm_wgmma.c).
 */
tirx_status tirx__emit_wgmma(const tirx__rule *rule, const tirx__call *call,
                             const tirx__shape *shape, void *emitter) {
  (void)rule;
  tirx__lower *lw = emitter;
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *d = p->ops[0], *a = p->ops[1], *bm = p->ops[2];
  bool rs = call->operands[1].role == TIRX__ROLE_LOCAL;
  tirx__wgmma_operand da = {0, 0, 0}, db;
  const char *why = NULL;
  if ((!rs && !tirx__wgmma_operand_of(lw->arena, &call->operands[1], 1, &da, &why)) ||
      !tirx__wgmma_operand_of(lw->arena, &call->operands[2], 0, &db, &why))
    return tirx__b_fail(b, TIRX_E_INTERNAL, "%s: gemm_async.wgmma: %s", FN, why);
  int64_t m = d->extent[0], n = d->extent[1], k = a->extent[1], in = shape->v[1];
  tirx_expr *yes = tirx_bool(b, true), *first = p->scale_d ? p->scale_d : yes;
  fence_regs(b, d->tensor);
  if (rs) fence_regs(b, a->tensor);
  native(b, TIRX__NV_WGMMA_FENCE);
  for (int64_t ks = 0; ks < k / 16; ks++)
    for (int64_t s = 0; s < m / 64; s++)
      for (int64_t nb = 0; nb < n / in; nb++) {
        tirx__stmt *w = native(b, TIRX__NV_WGMMA);
        if (!w) return b->status;
        w->native.wgmma.acc = at(b, d, 64 * s, nb * in);
        w->native.wgmma.a = at(b, a, 64 * s, 16 * ks);
        w->native.wgmma.b = at(b, bm, 16 * ks, nb * in);
        w->native.wgmma.scale_d = ks ? yes : first;
        w->native.wgmma.in = (tirx__wgmma_instr){
            .n = (int32_t)in, .dtype = call->operands[1].dtype, .rs = rs,
            .lbo_a = (int32_t)da.lbo, .sbo_a = (int32_t)da.sbo, .swz_a = da.swizzle,
            .lbo_b = (int32_t)db.lbo, .sbo_b = (int32_t)db.sbo, .swz_b = db.swizzle};
      }
  fence_regs(b, d->tensor);
  if (rs) fence_regs(b, a->tensor);
  return b->status;
}

/* ---- gemm.mma ---- */

/* ldmatrix.x<num> (TIRX__NV_LDMATRIX) from sm at (row, col) into frag[first + 2i], i < num. */
static void ldmatrix(tirx_builder *b, const tirx_region *sm, tirx_expr *row, tirx_expr *col,
                     tirx_tensor *frag, int64_t first, int num) {
  tirx_expr *six[2] = {tirx_add(b, sm->begin[0], row), tirx_add(b, sm->begin[1], col)};
  tirx_expr **index = tirx__b_index_list(b, FN, sm->tensor, 2, six);
  tirx_expr **regs = tirx__arena_array(b->arena, (size_t)num, sizeof *regs, FN);
  if (!index || !regs) {
    if (b->status == TIRX_OK) tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
    return;
  }
  for (int i = 0; i < num; i++) {
    tirx_expr *x = tirx_int(b, first + 2 * i);
    regs[i] = tirx_load(b, frag, 1, &x);
  }
  tirx__stmt *s = b->status == TIRX_OK ? tirx__b_lowered_native(b, FN, TIRX__NV_LDMATRIX) : NULL;
  if (!s) return;
  s->native.matrix.row.tensor = sm->tensor;
  s->native.matrix.row.index = index;
  s->native.matrix.regs = regs;
  s->native.matrix.n = num;
}

/*
 * For each k16 step (a loop): every B fragment of the step by ldmatrix.x2 (lanes 0-7 address
 * the columns' K elements 0-7, lanes 8-15 elements 8-15: the m16n8k16 B fragment, the other
 * lanes repeat them), then per m16 block the A fragment by ldmatrix.x4 (lanes 8q..8q+7 rows
 * (q % 2) * 8 + 0..7 at K (q / 2) * 8: registers a0a1, a2a3, a4a5, a6a7) and one mma per n8
 * block. The accumulate predicate holds on the first step only as the call's; d's block
 * (r, c) starts at the register of its element (r, c).
 */
tirx_status tirx__emit_mma(const tirx__rule *rule, const tirx__call *call,
                           const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)shape;
  tirx__lower *lw = emitter;
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *d = p->ops[0], *a = p->ops[1], *bm = p->ops[2];
  int64_t m = d->extent[0], n = d->extent[1], k = a->extent[1];
  tirx_dtype dt = call->operands[1].dtype;
  tirx_expr *lane = tirx_let(b, "lane", tirx_lane_id(b));
  tirx_expr *r8 = tirx_bit_and(b, lane, tirx_int(b, 7));
  tirx_expr *half = tirx_mul(b, tirx_bit_and(b, tirx_shr(b, lane, tirx_int(b, 3)), tirx_int(b, 1)),
                             tirx_int(b, 8));
  tirx_tensor *af = tirx_alloc_local(b, "afrag", dt, 1, (int64_t[]){8}, NULL);
  tirx_tensor *bf = tirx_alloc_local(b, "bfrag", dt, 1, (int64_t[]){n / 8 * 4}, NULL);
  tirx_expr *ki = tirx_for_begin(b, "kstep", tirx_int(b, 0), tirx_int(b, k / 16), NULL,
                                 TIRX_LOOP_SERIAL);
  if (!ki || !af || !bf) return b->status;
  tirx_expr *k0 = tirx_mul(b, ki, tirx_int(b, 16));
  /* B fragments of the step: column n0 + lane % 8, K k0 + (lane / 8 % 2) * 8. */
  for (int64_t nb = 0; nb < n / 8; nb++)
    ldmatrix(b, bm, tirx_add(b, k0, half), tirx_add(b, r8, tirx_int(b, 8 * nb)), bf, 4 * nb, 2);
  tirx_expr *acc = p->scale_d ? tirx_or(b, p->scale_d, tirx_gt(b, ki, tirx_int(b, 0)))
                              : tirx_bool(b, true);
  tirx_expr *acol = tirx_add(b, k0, tirx_mul(b, tirx_shr(b, lane, tirx_int(b, 4)), tirx_int(b, 8)));
  for (int64_t mb = 0; mb < m / 16; mb++) {
    ldmatrix(b, a, tirx_add(b, tirx_add(b, r8, half), tirx_int(b, 16 * mb)), acol, af, 0, 4);
    for (int64_t nb = 0; nb < n / 8; nb++) {
      tirx__stmt *s = native(b, TIRX__NV_MMA);
      if (!s) return b->status;
      tirx_expr *zero = tirx_int(b, 0), *bx = tirx_int(b, 4 * nb);
      s->native.mma.c = at(b, d, 16 * mb, 8 * nb);
      s->native.mma.a = tirx_load(b, af, 1, &zero);
      s->native.mma.b = tirx_load(b, bf, 1, &bx);
      s->native.mma.accumulate = acc;
      s->native.mma.dtype = dt;
    }
  }
  tirx_for_end(b);
  return b->status;
}
