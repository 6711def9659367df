/*
 * copy.ldmatrix: one warp moves 8x8 matrices of 16-bit elements from shared memory into
 * registers (ldmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16, sm_75). Its mirror copy.stmatrix
 * (copy_stmatrix.c: registers to shared memory, sm_90) has the same instruction data, so the
 * checks, shapes and lowering below serve both (tirx__matrix_check, _shapes, _emit).
 *
 * The instruction, as data:
 *   register side: every 8x8 block of the 2-D tile is the fragment
 *       ((8),(4,2)):((4@laneid),(1@laneid,1@reg))   (tirx_layout_ldmatrix(1))
 *       (T32,V2) -> (M8,N8): lane l holds row l/4, columns 2*(l%4)+{0,1},
 *     at some register offset, and the tile uses only laneid and reg (one tile per warp);
 *   shared side: every row of 8 elements is 16 bytes, contiguous and 16-byte aligned
 *     (each lane gives one row address);
 *   team: a full warp; dtype f16 or bf16; no cache hints.
 *   both also at warpgroup scope: a tile on tid_in_wg and reg whose 8x8 blocks are each one
 *   warp's fragment, the four warps holding one pattern of blocks moved down by a fixed number
 *   of rows per warp (tirx__matrix_wg_blocks): stmatrix of the wgmma accumulator cast to 16
 *   bits, ldmatrix of the wgmma A operand in registers (tirx_layout_wgmma_a, the RS form of
 *   gemm_async.wgmma).
 * Shape: (num) matrices per instruction, 4, 2 or 1, dividing the number of 8x8 blocks.
 * Lowering (below, tirx__lower_matrix): TIRX__ST_MATRIX statements, the prelude's
 * tirx_ldmatrix_xN / tirx_stmatrix_xN, in an unrolled loop when the tile holds more matrices.
 */
#include <stddef.h>
#include <string.h>

#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "families.h"

/* ---- the native statements: ldmatrix, stmatrix ---- */

/* row is this lane's shared row address; n matrices (1, 2, 4); regs[i] (a load of the local
 * array) the first of the two 16-bit elements of matrix i's register */
typedef struct matrix_payload {
  tirx__elem row;
  tirx_expr **regs;
  int32_t n;
} matrix_payload;

static void regs_of(tirx__writer *w, const matrix_payload *p) {
  for (int i = 0; i < p->n; i++) {
    if (i) tirx__sb_append(w->sb, ", ");
    w->expr(w, p->regs[i]);
  }
}

/* ldmatrix: {regs} = ldmatrix.xN(s[row]); stmatrix the other way */
static void print_matrix(tirx__writer *w, const tirx__stmt *s) {
  const matrix_payload *p = s->native.p;
  bool st = s->native.op == &tirx__nv_stmatrix;
  if (!st) {
    tirx__sb_append(w->sb, "{");
    regs_of(w, p);
    tirx__sb_append(w->sb, "} = ");
  }
  tirx__sb_printf(w->sb, "%s.x%d(", s->native.op->name, (int)p->n);
  w->elem(w, p->row.tensor, p->row.index);
  if (st) {
    tirx__sb_append(w->sb, ", {");
    regs_of(w, p);
    tirx__sb_append(w->sb, "}");
  }
  tirx__sb_append(w->sb, ")");
}

static void emit_matrix(tirx__writer *w, const tirx__stmt *s) {
  const matrix_payload *p = s->native.p;
  tirx__sb_printf(w->sb, "%s_x%d(", s->native.op->helper, (int)p->n);
  w->elem(w, p->row.tensor, p->row.index);
  for (int i = 0; i < p->n; i++) {
    tirx__sb_append(w->sb, ", ");
    w->elem(w, p->regs[i]->tensor, p->regs[i]->index);
  }
  tirx__sb_append(w->sb, ");");
}

const tirx__native_op tirx__nv_ldmatrix = {
    .name = "ldmatrix", .helper = "tirx_ldmatrix", .need = TIRX__NEED(TIRX__FEAT(LDMATRIX)),
    .size = sizeof(matrix_payload),
    .ops = {TIRX__ELEM(matrix_payload, row), TIRX__LOADS(matrix_payload, regs, n)},
    .print = print_matrix, .emit = emit_matrix};

const tirx__native_op tirx__nv_stmatrix = {
    .name = "stmatrix", .helper = "tirx_stmatrix", .need = TIRX__NEED(TIRX__FEAT(STMATRIX)),
    .size = sizeof(matrix_payload),
    .ops = {TIRX__ELEM(matrix_payload, row), TIRX__LOADS(matrix_payload, regs, n)},
    .print = print_matrix, .emit = emit_matrix};

tirx__stmt *tirx__matrix_stmt(tirx__emit *e, bool store, tirx_tensor *t, tirx_expr **index,
                              tirx_expr **regs, int n) {
  tirx__stmt *s = tirx__emit_native(e, store ? &tirx__nv_stmatrix : &tirx__nv_ldmatrix);
  if (!s) return NULL;
  matrix_payload *p = s->native.p;
  p->row.tensor = t;
  p->row.index = index;
  p->regs = regs;
  p->n = (int32_t)n;
  return s;
}

/* In every kernel's core (for now: byte-identical generated code; making them conditional on
 * the ops is a follow-up): the comment, then after the core's shared-address helpers (order
 * 310) the helpers. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
/* ldmatrix/stmatrix: the comment */
static const tirx__prelude_frag ldm_comment = {.order = 300, .when = TIRX__PRE_ALWAYS, .text =
    "/* ldmatrix/stmatrix of tile primitives (TIRX__ST_MATRIX): s is this lane's row address (8\n"
    " * 16-bit elements, 16 bytes); r0.. the first of the two elements of each matrix's register\n"
    " * (T: tirx_f16 or tirx_bf16). Templates, so stmatrix (sm_90) is only emitted where used. */\n"
};
/* ldmatrix/stmatrix: the helpers */
static const tirx__prelude_frag ldm_frag = {.order = 320, .when = TIRX__PRE_ALWAYS, .text =
    "template <class T> __device__ __forceinline__ void tirx_ldmatrix_x1(const T *s, T *r0) {\n"
    "  unsigned u0;\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\" : \"=r\"(u0) : \"r\"(tirx_smem_addr(s)) : \"memory\");\n"
    "  tirx_unpack2(r0, u0);\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void tirx_ldmatrix_x2(const T *s, T *r0, T *r1) {\n"
    "  unsigned u0, u1;\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\" : \"=r\"(u0), \"=r\"(u1) : \"r\"(tirx_smem_addr(s)) : \"memory\");\n"
    "  tirx_unpack2(r0, u0); tirx_unpack2(r1, u1);\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void tirx_ldmatrix_x4(const T *s, T *r0, T *r1, T *r2, T *r3) {\n"
    "  unsigned u0, u1, u2, u3;\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(u0), \"=r\"(u1), \"=r\"(u2), \"=r\"(u3) : \"r\"(tirx_smem_addr(s)) : \"memory\");\n"
    "  tirx_unpack2(r0, u0); tirx_unpack2(r1, u1); tirx_unpack2(r2, u2); tirx_unpack2(r3, u3);\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void tirx_stmatrix_x1(T *s, const T *r0) {\n"
    "  asm volatile(\"stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};\" :: \"r\"(tirx_smem_addr(s)), \"r\"(tirx_pack2(r0)) : \"memory\");\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void tirx_stmatrix_x2(T *s, const T *r0, const T *r1) {\n"
    "  asm volatile(\"stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};\" :: \"r\"(tirx_smem_addr(s)), \"r\"(tirx_pack2(r0)), \"r\"(tirx_pack2(r1)) : \"memory\");\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void tirx_stmatrix_x4(T *s, const T *r0, const T *r1, const T *r2, const T *r3) {\n"
    "  asm volatile(\"stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\" :: \"r\"(tirx_smem_addr(s)), \"r\"(tirx_pack2(r0)), \"r\"(tirx_pack2(r1)), \"r\"(tirx_pack2(r2)), \"r\"(tirx_pack2(r3)) : \"memory\");\n"
    "}\n"
};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const frags[] = {&ldm_comment, &ldm_frag, NULL};


static const char FN[] = "tirx_kernel_build";

/* The first axis other than laneid and reg that l uses (iters, replicas, offsets), or -1. */
static tirx_axis foreign_axis(const tirx_layout *l) {
  for (int i = 0; i < l->nd; i++)
    if (l->d[i].extent > 1 && l->d[i].stride != 0 && l->d[i].axis != TIRX_AXIS_LANEID &&
        l->d[i].axis != TIRX_AXIS_REG)
      return l->d[i].axis;
  for (int i = 0; i < l->nr; i++)
    if (l->r[i].extent > 1 && l->r[i].stride != 0) return l->r[i].axis;
  for (int i = 0; i < l->no; i++)
    if (l->o[i].axis != TIRX_AXIS_LANEID && l->o[i].axis != TIRX_AXIS_REG) return l->o[i].axis;
  return -1;
}

/* The 8x8 fragment moved to register offset reg. */
static const tirx_layout *fragment_at(tirx__rule_ctx *ctx, const tirx_layout *frag, int64_t reg) {
  tirx_axis_offset o = {TIRX_AXIS_REG, reg};
  return tirx__layout_make(ctx->arena, "tirx_dispatch", frag->nd, frag->d, 0, NULL, 1, &o,
                           frag->rank, frag->dim_begin, 0, 0);
}

static void check_matrix(tirx__rule_ctx *ctx, int reg, int smem, const char *instr) {
  const tirx_layout *rl = ctx->call->operands[reg].layout;
  const char *rn = tirx__rule_operand_name(ctx, reg), *sn = tirx__rule_operand_name(ctx, smem);
  int64_t shape[2];
  tirx_layout_shape(rl, shape, 2);
  if (shape[0] % 8 || shape[1] % 8) {
    tirx__reason(ctx, "tile (%lld,%lld) is not made of 8x8 matrices", (long long)shape[0],
                 (long long)shape[1]);
    return;
  }
  tirx_axis bad = foreign_axis(rl);
  if (bad >= 0)
    tirx__reason(ctx, "%s uses %s: %s needs a per-warp tile on laneid and reg", rn,
                 tirx_axis_name(bad), instr);
  int64_t v = tirx__operand_vector_width(ctx, smem, 16);
  if (v < 8)
    tirx__reason(ctx,
                 "%s rows are not 16-byte contiguous and aligned: vector width %lld < 8 "
                 "elements",
                 sn, (long long)v);
  if (bad >= 0) return;
  const tirx_layout *frag = tirx_layout_ldmatrix(ctx->arena, 1);
  for (int64_t r = 0; r < shape[0] && frag; r += 8)
    for (int64_t col = 0; col < shape[1]; col += 8) {
      const tirx_layout *blk =
          tirx_layout_slice(ctx->arena, rl, 2, shape, (int64_t[]){r, col}, (int64_t[]){8, 8});
      const tirx_layout *want =
          blk ? fragment_at(ctx, frag, tirx_layout_offset(blk, TIRX_AXIS_REG)) : NULL;
      if (!want || !tirx_layout_equal(blk, want)) {
        tirx__reason(ctx,
                     "%s matrix at (%lld,%lld) is not an %s fragment: lane l must hold row "
                     "l/4, columns 2*(l%%4)+{0,1}",
                     rn, (long long)r, (long long)col, instr);
        return;
      }
    }
  ctx->scratch[0] = shape[0] / 8 * (shape[1] / 8);
}

/* ---- ldmatrix/stmatrix of a warpgroup tile (wgmma A operands, accumulators cast) ---- */

/*
 * A warpgroup tile: each 8x8 block is the ldmatrix fragment of one warp w (on tid_in_wg, lane
 * 32w + l holding row l/4, columns 2*(l%4)+{0,1}) at some register offset. The blocks of warp
 * w, in row-major order, must be warp 0's moved down by w * rows_per_warp rows at the same
 * columns and registers, so one instruction stream (warp 0's blocks, the row offset added per
 * warp) serves all four warps. Fills blocks[] with warp 0's blocks, *per_warp and
 * *rows_per_warp; false with *why set otherwise.
 */
bool tirx__matrix_wg_blocks(tirx_arena *a, const tirx_layout *rl, tirx__matrix_block *blocks,
                            int cap, int *per_warp, int64_t *rows_per_warp, const char **why) {
  int64_t shape[2];
  tirx_layout_shape(rl, shape, 2);
  for (int i = 0; i < rl->nd; i++)
    if (rl->d[i].extent > 1 && rl->d[i].stride != 0 && rl->d[i].axis != TIRX_AXIS_TID_IN_WG &&
        rl->d[i].axis != TIRX_AXIS_REG) {
      *why = "the tile uses axes other than tid_in_wg and reg";
      return false;
    }
  if (rl->nr) {
    *why = "the tile is replicated";
    return false;
  }
  const tirx_layout *f = tirx_layout_ldmatrix(a, 1);
  if (!f) return false;
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS];
  for (int i = 0; i < f->nd; i++) {
    d[i] = f->d[i];
    if (d[i].axis == TIRX_AXIS_LANEID) d[i].axis = TIRX_AXIS_TID_IN_WG;
  }
  int count[4] = {0, 0, 0, 0};
  tirx__matrix_block first[4];
  for (int64_t r = 0; r < shape[0]; r += 8)
    for (int64_t c = 0; c < shape[1]; c += 8) {
      const tirx_layout *blk =
          tirx_layout_slice(a, rl, 2, shape, (int64_t[]){r, c}, (int64_t[]){8, 8});
      int64_t tid = blk ? tirx_layout_offset(blk, TIRX_AXIS_TID_IN_WG) : -1;
      int64_t reg = blk ? tirx_layout_offset(blk, TIRX_AXIS_REG) : 0;
      tirx_axis_offset o[2] = {{TIRX_AXIS_TID_IN_WG, tid}, {TIRX_AXIS_REG, reg}};
      const tirx_layout *want =
          tid >= 0 && tid % 32 == 0 && tid < 128
              ? tirx__layout_make(a, "tirx_dispatch", f->nd, d, 0, NULL, 2, o, f->rank,
                                  f->dim_begin, 0, 0)
              : NULL;
      if (!want || !tirx_layout_equal(blk, want)) {
        *why = "a block is not an ldmatrix fragment of one warp: lane l of the warp must hold "
               "row l/4, columns 2*(l%4)+{0,1}";
        return false;
      }
      int w = (int)(tid / 32), j = count[w]++;
      tirx__matrix_block cur = {r, c, reg};
      if (j == 0) first[w] = cur;
      if (w == 0) {
        if (j >= cap) {
          *why = "the tile has too many blocks";
          return false;
        }
        blocks[j] = cur;
      }
    }
  for (int w = 1; w < 4; w++)
    if (count[w] != count[0] || count[0] == 0) {
      *why = "the four warps do not hold equally many blocks";
      return false;
    }
  int64_t step = first[1].row - first[0].row;
  /* Second walk: warp w's j-th block is warp 0's j-th, w * step rows down. */
  int seen[4] = {0, 0, 0, 0};
  for (int64_t r = 0; r < shape[0]; r += 8)
    for (int64_t c = 0; c < shape[1]; c += 8) {
      const tirx_layout *blk =
          tirx_layout_slice(a, rl, 2, shape, (int64_t[]){r, c}, (int64_t[]){8, 8});
      int w = (int)(tirx_layout_offset(blk, TIRX_AXIS_TID_IN_WG) / 32), j = seen[w]++;
      const tirx__matrix_block *z = &blocks[j];
      if (r != z->row + w * step || c != z->col ||
          tirx_layout_offset(blk, TIRX_AXIS_REG) != z->reg) {
        *why = "the warps' blocks are not one pattern moved down by a whole number of rows per "
               "warp";
        return false;
      }
    }
  *per_warp = count[0];
  *rows_per_warp = step;
  return true;
}

/* The register operand reg of a warpgroup copy with shared operand smem. */
static void check_matrix_wg(tirx__rule_ctx *ctx, int reg, int smem, const char *instr) {
  const tirx_layout *rl = ctx->call->operands[reg].layout;
  const char *rn = tirx__rule_operand_name(ctx, reg), *sn = tirx__rule_operand_name(ctx, smem);
  int64_t shape[2];
  tirx_layout_shape(rl, shape, 2);
  if (shape[0] % 8 || shape[1] % 8) {
    tirx__reason(ctx, "tile (%lld,%lld) is not made of 8x8 matrices", (long long)shape[0],
                 (long long)shape[1]);
    return;
  }
  int64_t v = tirx__operand_vector_width(ctx, smem, 16);
  if (v < 8)
    tirx__reason(ctx,
                 "%s rows are not 16-byte contiguous and aligned: vector width %lld < 8 "
                 "elements",
                 sn, (long long)v);
  int n = 0;
  int64_t step = 0;
  const char *why = NULL;
  tirx__matrix_block *blocks =
      tirx__arena_array(ctx->arena, (size_t)(shape[0] / 8 * (shape[1] / 8)), sizeof *blocks,
                        "tirx_dispatch");
  if (!blocks) return;
  if (!tirx__matrix_wg_blocks(ctx->arena, rl, blocks, (int)(shape[0] / 8 * (shape[1] / 8)), &n,
                              &step, &why))
    tirx__reason(ctx, "%s is not a warpgroup %s tile: %s", rn, instr, why);
  ctx->scratch[0] = n;
}

/* ---- end ldmatrix/stmatrix of a warpgroup tile ---- */

void tirx__matrix_check(tirx__rule_ctx *ctx, bool store) {
  int reg = store ? 1 : 0, smem = store ? 0 : 1;
  const char *instr = store ? "stmatrix" : "ldmatrix";
  if (tirx_scope_team_kind(ctx->call->scope) == TIRX_TEAM_WARPGROUP)
    check_matrix_wg(ctx, reg, smem, instr);
  else
    check_matrix(ctx, reg, smem, instr);
}

static void check_ldmatrix(tirx__rule_ctx *ctx) { tirx__matrix_check(ctx, false); }

int tirx__matrix_shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  int n = 0;
  for (int64_t num = 4; num >= 1 && n < cap; num /= 2)
    if (ctx->scratch[0] % num == 0) out[n++] = (tirx__shape){{num}};
  return n;
}

/* ---- ldmatrix / stmatrix (copy.ldmatrix, copy.stmatrix) ---- */

/*
 * The register tile's 8x8 blocks, row-major, go num at a time into one instruction (an
 * unrolled residual loop over the instructions when there are several). For instruction g,
 * lanes 8i..8i+7 give the row addresses of block g*num + i (lanes past 8*num repeat them: their
 * addresses are ignored but stay in bounds); register i of every lane is block g*num + i's, at
 * the register slots its fragment puts it (check_matrix proved lane l holds row l/4, columns
 * 2*(l%4)+{0,1} of every block, at a slot of that block's and the next). The local array is
 * addressed at the block's corner: its slots do not depend on the lane, so they are constants
 * once the loop is unrolled.
 */
tirx_status tirx__lower_matrix(tirx__lower *lw, int64_t num, bool store) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *reg = p->ops[store ? 1 : 0], *sm = p->ops[store ? 0 : 1];
  if (!reg->tensor || !sm->tensor || reg->tensor->rank != 2 || sm->tensor->rank != 2)
    return tirx__lower_fail(lw, "operands of rank other than 2 are not lowered yet");
  if (num != 1 && num != 2 && num != 4) return tirx__lower_fail(lw, "num=%lld is not 1, 2 or 4", (long long)num);
  int64_t rows = reg->extent[0], cols = reg->extent[1];
  if (rows % 8 || cols % 8 || sm->extent[0] != rows || sm->extent[1] != cols)
    return tirx__lower_fail(lw, "the tile is not made of 8x8 matrices");
  int64_t cb = cols / 8, nblk = rows / 8 * cb;
  if (nblk % num) return tirx__lower_fail(lw, "%lld matrices are not a multiple of %lld", (long long)nblk,
                              (long long)num);
  int64_t ninstr = nblk / num;
  tirx_expr *lane = tirx__emit_let(e, "lane", tirx_lane_id(b));
  tirx_expr *g = ninstr > 1 ? tirx__lower_loop(e, ninstr, TIRX_LOOP_UNROLL) : NULL;
  if (b->status != TIRX_OK) return b->status;
  tirx_expr *base = g && num > 1 ? tirx_mul(b, g, tirx_int(b, num)) : g;
  /* This lane's row address: row lane%8 of block base + (lane/8)%num. */
  tirx_expr *mine = num > 1 ? tirx_bit_and(b, tirx_shr(b, lane, tirx_int(b, 3)), tirx_int(b, num - 1))
                            : NULL;
  tirx_expr *j = base && mine ? tirx_add(b, base, mine) : base ? base : mine;
  tirx_expr *r8 = tirx_bit_and(b, lane, tirx_int(b, 7));
  tirx_expr *sidx[2];
  if (!j) {
    sidx[0] = r8;
    sidx[1] = NULL;
  } else {
    sidx[0] = cb == 1 ? tirx_mul(b, j, tirx_int(b, 8))
                      : tirx_mul(b, tirx_div(b, j, tirx_int(b, cb)), tirx_int(b, 8));
    sidx[0] = tirx_add(b, sidx[0], r8);
    sidx[1] = cb == 1 ? NULL : tirx_mul(b, tirx_mod(b, j, tirx_int(b, cb)), tirx_int(b, 8));
  }
  tirx_expr *six[2];
  tirx__lower_tensor_index(lw, sm, sidx, 0, six);
  tirx_expr **index = tirx__b_index_list(b, FN, sm->tensor, 2, six);
  tirx_expr **regs = tirx__arena_array(b->arena, (size_t)num, sizeof *regs, FN);
  if (!index || !regs) return b->status != TIRX_OK ? b->status : tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  for (int64_t i = 0; i < num; i++) {
    /* Block base + i, at its corner. */
    tirx_expr *ridx[2];
    if (base) {
      tirx_expr *ji = i ? tirx_add(b, base, tirx_int(b, i)) : base;
      ridx[0] = tirx_mul(b, tirx_div(b, ji, tirx_int(b, cb)), tirx_int(b, 8));
      ridx[1] = tirx_mul(b, tirx_mod(b, ji, tirx_int(b, cb)), tirx_int(b, 8));
    } else {
      ridx[0] = tirx_int(b, i / cb * 8);
      ridx[1] = tirx_int(b, i % cb * 8);
    }
    regs[i] = tirx__lower_load(lw, reg, ridx, 0);
    if (!regs[i]) return b->status;
  }
  if (!tirx__matrix_stmt(e, store, sm->tensor, index, regs, (int)num)) return b->status;
  if (g) tirx__emit_for_end(e);
  return b->status;
}

/*
 * ldmatrix/stmatrix at warpgroup scope (on a tid_in_wg tile): warp 0's blocks
 * (tirx__matrix_wg_blocks), num per instruction, unrolled; lanes 8i..8i+7 address rows of
 * block g*num + i of their warp (warp w's rows are w * rows_per_warp further down), and every
 * register operand is the block's corner in the local array (its slots do not depend on the
 * lane or the warp).
 */
/* This lane's block's row (or column: field) among m[0..num): m[q]'s, as q * step + m[0]'s
 * when they are evenly spaced, as m[0]'s + (q & 1) * c + (q >> 1) * r for four blocks on a
 * 2x2 grid (the wgmma A fragment of one k16 step: c = 8 columns, r = 8 rows), else a select
 * chain. */
static tirx_expr *wg_coord(tirx_builder *b, tirx_expr *q, const tirx__matrix_block *m,
                           int64_t num, size_t field) {
  int64_t v[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < num; i++) memcpy(&v[i], (const char *)&m[i] + field, sizeof v[i]);
  bool even = true;
  for (int64_t i = 2; i < num; i++) even &= v[i] - v[i - 1] == v[1] - v[0];
  if (num == 1 || (even && v[1] == v[0])) return tirx_int(b, v[0]);
  if (even) return tirx_add(b, tirx_mul(b, q, tirx_int(b, v[1] - v[0])), tirx_int(b, v[0]));
  if (num == 4 && v[3] - v[2] == v[1] - v[0]) {
    tirx_expr *t[3] = {
        v[2] != v[0] ? tirx_mul(b, tirx_shr(b, q, tirx_int(b, 1)), tirx_int(b, v[2] - v[0])) : NULL,
        v[1] != v[0] ? tirx_mul(b, tirx_bit_and(b, q, tirx_int(b, 1)), tirx_int(b, v[1] - v[0]))
                     : NULL,
        v[0] ? tirx_int(b, v[0]) : NULL};
    tirx_expr *e = NULL;
    for (int i = 0; i < 3; i++)
      if (t[i]) e = e ? tirx_add(b, e, t[i]) : t[i];
    return e ? e : tirx_int(b, 0);
  }
  tirx_expr *e = tirx_int(b, v[num - 1]);
  for (int64_t i = num - 2; i >= 0; i--)
    e = tirx_select(b, tirx_eq(b, q, tirx_int(b, i)), tirx_int(b, v[i]), e);
  return e;
}

static tirx_status lower_matrix_wg(tirx__lower *lw, int64_t num, bool store) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  int ri = store ? 1 : 0;
  const tirx_region *reg = p->ops[ri], *sm = p->ops[1 - ri];
  int64_t rows = reg->extent[0], cols = reg->extent[1], step = 0;
  int n = 0, cap = (int)(rows / 8 * (cols / 8));
  const char *why = NULL;
  tirx__matrix_block *blk = tirx__arena_array(lw->arena, (size_t)cap, sizeof *blk, FN);
  if (!blk || !tirx__matrix_wg_blocks(lw->arena, lw->call->operands[ri].layout, blk, cap, &n,
                                      &step, &why))
    return tirx__lower_fail(lw, "%s", why ? why : "out of memory");
  tirx_expr *lane = tirx__emit_let(e, "lane", tirx_lane_id(b));
  tirx_expr *wid = tirx__lower_axis_coord(b, TIRX_AXIS_WID_IN_WG);
  tirx_expr *wrow = tirx__emit_let(e, "wrow", tirx_mul(b, wid, tirx_int(b, step)));
  tirx_expr *q =
      num > 1 ? tirx_bit_and(b, tirx_shr(b, lane, tirx_int(b, 3)), tirx_int(b, num - 1)) : NULL;
  tirx_expr *r8 = tirx_bit_and(b, lane, tirx_int(b, 7));
  for (int64_t g = 0; g < n / num && b->status == TIRX_OK; g++) {
    const tirx__matrix_block *m = &blk[g * num];
    tirx_expr *row = wg_coord(b, q, m, num, offsetof(tirx__matrix_block, row));
    tirx_expr *col = wg_coord(b, q, m, num, offsetof(tirx__matrix_block, col));
    tirx_expr *sidx[2] = {tirx_add(b, tirx_add(b, row, r8), wrow), col}, *six[2];
    tirx__lower_tensor_index(lw, sm, sidx, 0, six);
    tirx_expr **index = tirx__b_index_list(b, FN, sm->tensor, 2, six);
    tirx_expr **regs = tirx__arena_array(b->arena, (size_t)num, sizeof *regs, FN);
    if (!index || !regs)
      return b->status != TIRX_OK ? b->status
                                  : tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
    for (int64_t i = 0; i < num; i++) {
      tirx_expr *ridx[2] = {tirx_int(b, m[i].row), tirx_int(b, m[i].col)};
      regs[i] = tirx__lower_load(lw, reg, ridx, 0);
    }
    if (b->status != TIRX_OK || !tirx__matrix_stmt(e, store, sm->tensor, index, regs, (int)num))
      return b->status;
  }
  return b->status;
}

tirx_status tirx__matrix_emit(const tirx__call *call, const tirx__shape *shape, void *emitter,
                              bool store) {
  if (tirx_scope_team_kind(call->scope) == TIRX_TEAM_WARPGROUP)
    return lower_matrix_wg(emitter, shape->v[0], store);
  return tirx__lower_matrix(emitter, shape->v[0], store);
}

static tirx_status emit_ldmatrix(const tirx__rule *rule, const tirx__call *call,
                                const tirx__shape *shape, void *emitter) {
  (void)rule;
  return tirx__matrix_emit(call, shape, emitter, false);
}

/* ---- end ldmatrix / stmatrix ---- */

const tirx__rule tirx__rule_copy_ldmatrix = {
    .name = "copy.ldmatrix",
    .family = "ldmatrix",
    .summary = "ldmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_COPY),
    .flows = TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARP) | TIRX__BIT(TIRX_TEAM_WARPGROUP),
    .needs = {.dtypes = TIRX__DTYPES_16BIT, .rank = 2, .full_team = true,
              .features = TIRX__FEAT(LDMATRIX)},
    .shape_dims = {"num"},
    .check = check_ldmatrix,
    .shapes = tirx__matrix_shapes,
    .emit = emit_ldmatrix,
    .prelude = frags,
};
