/*
 * gemm_async.wgmma and gemm_async.wgmma_rs: a full warpgroup issues
 * wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} (sm_90a), B from shared memory through a
 * 64-bit matrix descriptor and A either from shared memory as well (the SS form) or from
 * registers (the RS form). One instruction, so one file and one family ("wgmma"): which rule
 * a call gets follows from where its a operand lives (the rules' key patterns), and
 * config.family = "wgmma" forces either.
 *
 * The instruction, as data:
 *   d: a local f32 tile (M, N), M a multiple of 64: each 64-row slab is the warpgroup's m64nN
 *      accumulator fragment (tirx_layout_wgmma_acc: warp w holds rows 16w..16w+15 as the m16n8
 *      C fragment repeated along N) at some register offset, N a multiple of 8 up to 256;
 *   a (M, K): SS: shared, K-major (each row holds K consecutive elements) in a 32/64/128-byte
 *      swizzled or interleaved tile (gemm_common.h); RS: local, every (64, 16) block (m64 slab,
 *      k16 step) the wgmma A fragment (tirx_layout_wgmma_a(64, 16): per warp the mma.sync
 *      m16n8k16 A fragment, the four warps stacked by 16 rows) at some register offset: eight
 *      16-bit values of each thread, packed in pairs into the instruction's four 32-bit
 *      registers. The A fragment is K-major by construction: the RS form has no transpose bit
 *      for A;
 *   b (K, N): shared, K-major (each column holds K consecutive elements), as a in the SS form;
 *   a and b one dtype (f16 or bf16), K a multiple of 16; team: a full warpgroup.
 * Shape: (m=64, n, k=16), n = N or N/2, N/4, ... (a multiple of 8): one instruction covers an
 * m64 slab and n columns; the lowering (below) issues M/64 * N/n * K/16 of them after a
 * wgmma.fence, between register fences of d (and of a in the RS form). Its completion is the
 * caller's: tirx_wgmma_commit and tirx_wgmma_wait.
 */
#include <string.h>

#include "../../layout/layout_internal.h"

#include "../lower.h"
#include "gemm_common.h"

static const char FN[] = "tirx_kernel_build";

/* What both forms require of d, the dtypes and M, N, K; ctx->scratch[0..2] = M, N, K. */
static bool check_common(tirx__rule_ctx *ctx) {
  const tirx__call *c = ctx->call;
  int64_t m, n, k;
  if (!tirx__gemm_shape(ctx, &m, &n, &k)) return false;
  if (c->operands[0].dtype != TIRX_F32)
    tirx__reason(ctx, "d dtype %s is not f32: wgmma accumulates in f32 here",
                 tirx_dtype_name(c->operands[0].dtype));
  tirx_dtype at = c->operands[1].dtype, bt = c->operands[2].dtype;
  if ((at != TIRX_F16 && at != TIRX_BF16) || at != bt)
    tirx__reason(ctx, "a and b have dtypes %s and %s: the instruction needs both f16 or both bf16",
                 tirx_dtype_name(at), tirx_dtype_name(bt));
  if (m % 64)
    tirx__reason(ctx, "M is %lld: a warpgroup's wgmma covers slabs of 64 rows", (long long)m);
  if (n % 8 || n > 256)
    tirx__reason(ctx, "N is %lld: the instruction's N is a multiple of 8 up to 256", (long long)n);
  if (k % 16) tirx__reason(ctx, "K is %lld: not a multiple of 16 (k16 steps)", (long long)k);
  if (ctx->nreasons) return false;
  ctx->scratch[0] = m;
  ctx->scratch[1] = n;
  ctx->scratch[2] = k;
  /* The accumulator: every 64-row slab is the m64nN fragment at some register offset. */
  const tirx_layout *d = c->operands[0].layout;
  const tirx_layout *frag = tirx_layout_wgmma_acc(ctx->arena, 64, (int)n);
  for (int64_t s = 0; s < m / 64 && frag; s++) {
    if (!tirx__block_is_fragment(ctx->arena, d, m, n, 64 * s, 0, 64, n, frag)) {
      tirx__reason(ctx,
                   "d rows %lld..%lld are not the wgmma m64n%lld accumulator fragment "
                   "(tirx_layout_wgmma_acc) of a warpgroup",
                   (long long)(64 * s), (long long)(64 * s + 63), (long long)n);
      return false;
    }
  }
  return true;
}

static void check_b(tirx__rule_ctx *ctx) {
  tirx__wgmma_operand op;
  const char *why = NULL;
  if (!tirx__wgmma_operand_of(ctx->arena, &ctx->call->operands[2], 0, &op, &why))
    tirx__reason(ctx, "b: %s", why);
}

/* The SS form: a from shared memory through a descriptor, as b. */
static void check(tirx__rule_ctx *ctx) {
  if (!check_common(ctx)) return;
  tirx__wgmma_operand op;
  const char *why = NULL;
  if (!tirx__wgmma_operand_of(ctx->arena, &ctx->call->operands[1], 1, &op, &why))
    tirx__reason(ctx, "a: %s", why);
  check_b(ctx);
}

/* The first axis other than tid_in_wg and reg that l's iters or offsets use, or -1. */
static tirx_axis foreign_axis(const tirx_layout *l) {
  for (int i = 0; i < l->nd; i++)
    if (l->d[i].extent > 1 && l->d[i].stride != 0 && l->d[i].axis != TIRX_AXIS_TID_IN_WG &&
        l->d[i].axis != TIRX_AXIS_REG)
      return l->d[i].axis;
  for (int i = 0; i < l->no; i++)
    if (l->o[i].axis != TIRX_AXIS_TID_IN_WG && l->o[i].axis != TIRX_AXIS_REG) return l->o[i].axis;
  return -1;
}

/* Whether every (64, 16) block of a (m, k) is the wgmma A fragment at some register offset; a
 * reason naming the first block that is not otherwise. */
static bool a_fragments(tirx__rule_ctx *ctx, const tirx_layout *a, int64_t m, int64_t k) {
  const tirx_layout *frag = tirx_layout_wgmma_a(ctx->arena, 64, 16);
  for (int64_t s = 0; s < m / 64 && frag; s++)
    for (int64_t ks = 0; ks < k / 16; ks++) {
      if (!tirx__block_is_fragment(ctx->arena, a, m, k, 64 * s, 16 * ks, 64, 16, frag)) {
        tirx__reason(ctx,
                     "a rows %lld..%lld, K %lld..%lld are not the wgmma A fragment "
                     "(tirx_layout_wgmma_a) of a warpgroup: thread 32w+l must hold rows "
                     "16w+l/4 and +8, K 2*(l%%4)+{0,1} and +8 of the k16 step in 8 "
                     "consecutive registers",
                     (long long)(64 * s), (long long)(64 * s + 63), (long long)(16 * ks),
                     (long long)(16 * ks + 15));
        return false;
      }
    }
  return frag != NULL;
}

/* The RS form: a, a warpgroup's register tile of A fragments, b from shared memory. */
static void check_rs(tirx__rule_ctx *ctx) {
  if (!check_common(ctx)) return;
  const tirx_layout *a = ctx->call->operands[1].layout;
  tirx_axis bad = foreign_axis(a);
  if (bad >= 0)
    tirx__reason(ctx,
                 "a uses %s: the RS form takes a warpgroup's register tile on tid_in_wg and reg "
                 "(tirx_layout_wgmma_a)",
                 tirx_axis_name(bad));
  else if (tirx_layout_replica_count(a) != 1)
    tirx__reason(ctx, "a is replicated: the RS form takes one warpgroup's register tile "
                      "(tirx_layout_wgmma_a)");
  else
    a_fragments(ctx, a, ctx->scratch[0], ctx->scratch[2]);
  check_b(ctx);
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  int c = 0;
  int64_t n = ctx->scratch[1];
  for (int64_t v = n; v >= 8 && v % 8 == 0 && n % v == 0 && c < cap; v /= 2)
    out[c++] = (tirx__shape){{64, v, 16}};
  return c;
}

/* ---- the native statements: wgmma and the register fence ---- */

/* The instruction of a wgmma.mma_async m64nNk16 (all int32_t: statements compare it with
 * memcmp to join k16 steps into one asm statement). */
typedef struct wgmma_instr {
  int32_t n;                /* the instruction's N */
  int32_t dtype;            /* TIRX_F16 or TIRX_BF16 */
  int32_t trans_a, trans_b; /* transpose bits: 0 K-major, 1 MN-major */
  int32_t lbo_a, sbo_a, swz_a; /* descriptor fields in bytes, and the swizzle code (0 none, */
  int32_t lbo_b, sbo_b, swz_b; /* 1 128B, 2 64B, 3 32B) */
  int32_t rs;               /* 1: A from registers (the RS form; trans_a and the A fields unused) */
} wgmma_instr;

/* acc a load of the local accumulator at the slab's corner (its first register); b a load of
 * the B element whose shared address starts its descriptor; a the same for A, or in the RS
 * form a load of the local A array at the fragment's corner (the first of its 8 registers);
 * scale_d the scale-d predicate (bool) */
typedef struct wgmma_payload {
  tirx_expr *acc, *a, *b, *scale_d;
  wgmma_instr in;
} wgmma_payload;

/* An empty asm that reads and writes the first n registers of the local array regs
 * (DeepGEMM's warpgroup_fence_operand): no read or write of them moves across it */
typedef struct fence_regs_payload {
  tirx_tensor *regs;
  int32_t n;
} fence_regs_payload;

static const wgmma_payload *wg(const tirx__stmt *s) { return s->native.p; }

static void put(tirx__writer *w, const char *s) { tirx__sb_append(w->sb, s); }

static void indent(tirx__writer *w, int depth) {
  for (int i = 0; i < depth; i++) put(w, "  ");
}

static void load(tirx__writer *w, const tirx_expr *e) { w->elem(w, e->tensor, e->index); }

static void print_desc(tirx__writer *w, const tirx_expr *e, int lbo, int sbo, int swz) {
  static const char *const modes[] = {"interleave", "sw128", "sw64", "sw32"};
  w->expr(w, e);
  tirx__sb_printf(w->sb, " %s lbo=%d sbo=%d", modes[swz & 3], lbo, sbo);
}

static void print_wgmma(tirx__writer *w, const tirx__stmt *s) {
  const wgmma_instr *in = &wg(s)->in;
  tirx__sb_printf(w->sb, "wgmma%s.m64n%dk16.%s(", in->rs ? "_rs" : "", (int)in->n,
                  tirx_dtype_name((tirx_dtype)in->dtype));
  w->expr(w, wg(s)->acc);
  put(w, ", ");
  if (in->rs) /* the A fragment's first register */
    w->expr(w, wg(s)->a);
  else
    print_desc(w, wg(s)->a, in->lbo_a, in->sbo_a, in->swz_a);
  put(w, ", ");
  print_desc(w, wg(s)->b, in->lbo_b, in->sbo_b, in->swz_b);
  put(w, ", accumulate ");
  w->expr(w, wg(s)->scale_d);
  put(w, ")");
}

/* tirx_wgmma_desc(tirx_smem_addr(&t[index]), lbo, sbo, swz) for the load e */
static void emit_desc(tirx__writer *w, const tirx_expr *e, int lbo, int sbo, int swz) {
  put(w, "tirx_wgmma_desc(tirx_smem_addr(");
  load(w, e);
  tirx__sb_printf(w->sb, "), %d, %d, %d)", lbo, sbo, swz);
}

enum { WGMMA_GROUP_MAX = 8 };

static bool same_index(const tirx_expr *x, const tirx_expr *y) {
  return x == y || (x->kind == TIRX__EX_INT && y->kind == TIRX__EX_INT && x->i == y->i);
}

static const tirx__native_op nv_wgmma;

/* Whether wgmma t can join the asm statement of wgmma s: the same accumulator registers, the
 * same instruction and descriptor fields, and scale-d the constant true. */
static bool wgmma_joins(const tirx__stmt *s, const tirx__stmt *t) {
  if (!t || t->kind != TIRX__ST_NATIVE || t->native.op != &nv_wgmma) return false;
  const tirx_expr *ds = wg(s)->acc, *dt = wg(t)->acc;
  if (ds->tensor != dt->tensor || !same_index(ds->index[0], dt->index[0]) ||
      !same_index(ds->index[1], dt->index[1]))
    return false;
  const wgmma_instr *a = &wg(s)->in, *b = &wg(t)->in;
  if (memcmp(a, b, sizeof *a) != 0 || a->rs) return false;
  const tirx_expr *c = wg(t)->scale_d;
  return c->kind == TIRX__EX_INT && c->i == 1;
}

/* The lowering emits a primitive's k16 steps back to back; with one accumulator block (one
 * m64 slab, one n block) they all join. */
static int wgmma_run(const tirx__stmt *s) {
  int g = 1;
  for (const tirx__stmt *t = s->next; g < WGMMA_GROUP_MAX && wgmma_joins(s, t); t = t->next) g++;
  return g;
}

/* With the statements that join it (codegen skips them). */
static void emit_wgmma(tirx__writer *w, const tirx__stmt *s) {
  const wgmma_instr *in = &wg(s)->in;
  const char *ty = in->dtype == TIRX_F16 ? "f16" : "bf16";
  if (in->rs) { /* RS: the A fragment's first register, one instruction */
    tirx__sb_printf(w->sb, "tirx_wgmma_rs_m64n%dk16_%s<%d>(", (int)in->n, ty, (int)in->trans_b);
    load(w, wg(s)->acc);
    put(w, ",\n");
    indent(w, w->depth + 2);
    load(w, wg(s)->a);
    put(w, ",\n");
    indent(w, w->depth + 2);
    emit_desc(w, wg(s)->b, in->lbo_b, in->sbo_b, in->swz_b);
    put(w, ", ");
    w->expr(w, wg(s)->scale_d);
    put(w, ");");
    return;
  }
  int g = wgmma_run(s);
  /* A group's later steps as the first step's descriptors plus constants where the writer
   * shows their addresses differ by constant multiples of 16 bytes (CUTLASS steps its
   * descriptors the same way): two descriptors built instead of 2 g (each from a generic
   * pointer: ~8 instructions), which is what bounds the issue of the narrow tiles' k-blocks
   * (PERF-NOTES, session 11). */
  int64_t da[WGMMA_GROUP_MAX] = {0}, db[WGMMA_GROUP_MAX] = {0};
  bool step = g > 1 && w->elem_delta;
  const tirx__stmt *t = s;
  for (int j = 1; step && j < g; j++) {
    t = t->next;
    const tirx_expr *a0 = wg(s)->a, *b0 = wg(s)->b, *aj = wg(t)->a, *bj = wg(t)->b;
    step = a0->tensor == aj->tensor && b0->tensor == bj->tensor &&
           w->elem_delta(w, a0->tensor, a0->index, aj->index, &da[j]) &&
           w->elem_delta(w, b0->tensor, b0->index, bj->index, &db[j]) && da[j] % 16 == 0 &&
           db[j] % 16 == 0 && da[j] >= 0 && db[j] >= 0;
  }
  if (step) {
    put(w, "{\n");
    indent(w, w->depth + 1);
    put(w, "const unsigned long long tirx_da = ");
    emit_desc(w, wg(s)->a, in->lbo_a, in->sbo_a, in->swz_a);
    put(w, ",\n");
    indent(w, w->depth + 3);
    put(w, "tirx_db = ");
    emit_desc(w, wg(s)->b, in->lbo_b, in->sbo_b, in->swz_b);
    put(w, ";\n");
    indent(w, w->depth + 1);
    tirx__sb_printf(w->sb, "tirx_wgmma_m64n%dk16_%s_x%d<%d, %d>(", (int)in->n, ty, g,
                    (int)in->trans_a, (int)in->trans_b);
    load(w, wg(s)->acc);
    for (int j = 0; j < g; j++) {
      if (j) tirx__sb_printf(w->sb, ", tirx_da + %lld, tirx_db + %lld", (long long)(da[j] / 16),
                             (long long)(db[j] / 16));
      else put(w, ", tirx_da, tirx_db");
    }
    put(w, ", ");
    w->expr(w, wg(s)->scale_d);
    put(w, ");\n");
    indent(w, w->depth);
    put(w, "}");
    return;
  }
  tirx__sb_printf(w->sb, "tirx_wgmma_m64n%dk16_%s", (int)in->n, ty);
  if (g > 1) tirx__sb_printf(w->sb, "_x%d", g);
  tirx__sb_printf(w->sb, "<%d, %d>(", (int)in->trans_a, (int)in->trans_b);
  load(w, wg(s)->acc);
  t = s;
  for (int j = 0; j < g; j++, t = t->next) {
    put(w, ",\n");
    indent(w, w->depth + 2);
    emit_desc(w, wg(t)->a, in->lbo_a, in->sbo_a, in->swz_a);
    put(w, ",\n");
    indent(w, w->depth + 2);
    emit_desc(w, wg(t)->b, in->lbo_b, in->sbo_b, in->swz_b);
  }
  put(w, ", ");
  w->expr(w, wg(s)->scale_d);
  put(w, ");");
}

static void print_fence_regs(tirx__writer *w, const tirx__stmt *s) {
  const fence_regs_payload *p = s->native.p;
  tirx__sb_printf(w->sb, "fence_regs(%s[0..%d))", w->tensor(w, p->regs), (int)p->n);
}

/* tirx_fence_regs<n>(t) for an f32 array, tirx_fence_regs16<n>(t) for a 16-bit one. */
static void fence(tirx__writer *w, const tirx_tensor *t, int64_t n) {
  tirx__sb_printf(w->sb, "tirx_fence_regs%s<%lld>(%s);", t->dtype == TIRX_F32 ? "" : "16",
                  (long long)n, w->tensor(w, t));
}

static void emit_fence_regs(tirx__writer *w, const tirx__stmt *s) {
  const fence_regs_payload *p = s->native.p;
  fence(w, p->regs, p->n);
}

/* After tirx_wgmma_wait: every register of a wgmma register operand. */
static void fence_after_wait(tirx__writer *w, const tirx_tensor *t) { fence(w, t, t->elems); }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
/* The shared-memory matrix descriptor, inside the sync section's sm_90a block. The start
 * address goes in unmasked: a CTA's shared addresses are below 2^18 (228 KiB on sm_90), so a
 * mask would only cost an instruction. */
static const tirx__prelude_frag desc_frag = {.order = 710, .when = TIRX__PRE_SYNC, .text =
    "/* The shared-memory matrix descriptor: start address, leading and stride byte offsets (all\n"
    " * >> 4), swizzle code in bits 62-63 (1 128B, 2 64B, 3 32B, 0 none). */\n"
    "__device__ __forceinline__ unsigned long long tirx_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned swz) {\n"
    "  return (unsigned long long)(addr >> 4) | (unsigned long long)((lbo >> 4) & 0x3fffu) << 16 |\n"
    "         (unsigned long long)((sbo >> 4) & 0x3fffu) << 32 | (unsigned long long)swz << 62;\n"
    "}\n"
};
/* The register fences, after the sync section's sm_90a block. */
static const tirx__prelude_frag fence_frag = {.order = 730, .when = TIRX__PRE_SYNC, .text =
    "/* An empty asm that reads and writes N f32 registers (DeepGEMM's warpgroup_fence_operand):\n"
    " * the compiler cannot move their uses across the asynchronous MMA. */\n"
    "template <int N> __device__ __forceinline__ void tirx_fence_regs(float *d) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < N; ++i) asm volatile(\"\" : \"+f\"(d[i]) :: \"memory\");\n"
    "}\n"
    "/* The same for N 16-bit values (a wgmma A tile in registers), as the 32-bit pairs the\n"
    " * instruction reads. */\n"
    "template <int N, class T> __device__ __forceinline__ void tirx_fence_regs16(T *a) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i + 1 < N; i += 2) {\n"
    "    unsigned u = tirx_pack2(a + i);\n"
    "    asm volatile(\"\" : \"+r\"(u) :: \"memory\");\n"
    "    tirx_unpack2(a + i, u);\n"
    "  }\n"
    "  if (N % 2) asm volatile(\"\" : \"+h\"(a[N - 1].bits) :: \"memory\");\n"
    "}\n"
};
#pragma GCC diagnostic pop

/* The RS form (A from registers): tirx_wgmma_rs_m64n<n>k16_<t><TB>(d, a, db, acc), one
 * instruction per call (codegen does not group RS calls). Operands: d's registers
 * %0..%(regs-1), the four packed A registers, db, acc, TB. */
static void prelude_wgmma_rs(tirx__strbuf *sb, int n, const char *ty) {
  int regs = n / 2, acc = regs + 5;
  tirx__sb_printf(sb,
                  "/* wgmma.mma_async m64n%dk16, f32 += %s x %s with A from registers (RS): d "
                  "the warpgroup's\n"
                  " * %d accumulator registers, a this thread's 8 values of the A fragment "
                  "(a0..a7), db the\n"
                  " * shared-memory descriptor of B, acc the scale-d predicate, TB the transpose "
                  "bit of B. */\n"
                  "#ifdef __CUDA_ARCH_FEAT_SM90_ALL\n"
                  "template <int TB>\n"
                  "__device__ __forceinline__ void tirx_wgmma_rs_m64n%dk16_%s(float *d, const "
                  "tirx_%s *a, unsigned long long db, bool acc) {\n",
                  n, ty, ty, regs, n, ty, ty);
  tirx__sb_printf(sb,
                  "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n"
                  "    \"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
                  acc, n, ty, ty);
  for (int i = 0; i < regs; i++) tirx__sb_printf(sb, "%s%%%d", i ? ", " : "", i);
  tirx__sb_printf(sb, "}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1, %%%d;\\n}\\n\"\n    : ", regs,
                  regs + 1, regs + 2, regs + 3, regs + 4, regs + 6);
  for (int i = 0; i < regs; i++)
    tirx__sb_printf(sb, "%s\"+f\"(d[%d])", i == 0 ? "" : i % 8 ? ", " : ",\n      ", i);
  tirx__sb_append(sb, "\n    : \"r\"(tirx_pack2(a)), \"r\"(tirx_pack2(a + 2)), "
                      "\"r\"(tirx_pack2(a + 4)), \"r\"(tirx_pack2(a + 6)),\n"
                      "      \"l\"(db), \"r\"((int)acc), \"n\"(TB));\n"
                      "}\n#endif\n");
}

/*
 * One asm statement for `group` wgmma.mma_async on the same accumulators (a run of emit_wgmma
 * above: the k16 steps of one tile primitive): NVVM then handles one call with the warpgroup's n/2 "+f"
 * operands instead of `group`, and the PTX, hence the SASS, is the same instructions in the
 * same order. Operands: d[0..regs) the accumulators, then da_j, db_j for each j, then acc (the
 * first instruction's scale-d), TA, TB; the later instructions' scale-d is the predicate q = 1,
 * as the separate calls passed true.
 */
static void prelude_wgmma(tirx__strbuf *sb, int n, int dtype, bool rs, int group) {
  const char *ty = dtype == TIRX_F16 ? "f16" : "bf16";
  if (rs) {
    prelude_wgmma_rs(sb, n, ty);
    return;
  }
  int regs = n / 2, acc = regs + 2 * group, ta = acc + 1, tb = acc + 2;
  if (group > 1)
    tirx__sb_printf(sb,
                    "/* %d x wgmma.mma_async m64n%dk16, f32 += %s x %s, in one asm statement: d\n"
                    " * the warpgroup's %d accumulator registers, (da, db) each instruction's\n"
                    " * shared-memory descriptors, acc the first one's scale-d predicate (the\n"
                    " * others accumulate), TA/TB the transpose bits. */\n",
                    group, n, ty, ty, regs);
  else
    tirx__sb_printf(sb,
                    "/* wgmma.mma_async m64n%dk16, f32 += %s x %s: d the warpgroup's %d "
                    "accumulator\n"
                    " * registers, da/db the shared-memory descriptors, acc the scale-d "
                    "predicate, TA/TB\n"
                    " * the transpose bits. */\n",
                    n, ty, ty, regs);
  tirx__sb_printf(sb,
                  "#ifdef __CUDA_ARCH_FEAT_SM90_ALL\n"
                  "template <int TA, int TB>\n"
                  "__device__ __forceinline__ void tirx_wgmma_m64n%dk16_%s",
                  n, ty);
  if (group > 1) tirx__sb_printf(sb, "_x%d", group);
  tirx__sb_append(sb, "(float *d");
  if (group == 1) tirx__sb_append(sb, ", unsigned long long da, unsigned long long db");
  for (int j = 0; group > 1 && j < group; j++)
    tirx__sb_printf(sb, ", unsigned long long da%d, unsigned long long db%d", j, j);
  tirx__sb_printf(sb, ", bool acc) {\n  asm volatile(\"{\\n.reg .pred p%s;\\nsetp.ne.b32 p, %%%d, 0;\\n%s\"\n",
                  group > 1 ? ", q" : "", acc, group > 1 ? "setp.ne.b32 q, 1, 0;\\n" : "");
  for (int j = 0; j < group; j++) {
    tirx__sb_printf(sb, "    \"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {", n, ty, ty);
    for (int i = 0; i < regs; i++) tirx__sb_printf(sb, "%s%%%d", i ? ", " : "", i);
    tirx__sb_printf(sb, "}, %%%d, %%%d, %s, 1, 1, %%%d, %%%d;\\n%s\"\n", regs + 2 * j,
                    regs + 2 * j + 1, j ? "q" : "p", ta, tb, j + 1 == group ? "}\\n" : "");
  }
  tirx__sb_append(sb, "    : ");
  for (int i = 0; i < regs; i++)
    tirx__sb_printf(sb, "%s\"+f\"(d[%d])", i == 0 ? "" : i % 8 ? ", " : ",\n      ", i);
  tirx__sb_append(sb, "\n    : ");
  if (group == 1) tirx__sb_append(sb, "\"l\"(da), \"l\"(db), ");
  for (int j = 0; group > 1 && j < group; j++) tirx__sb_printf(sb, "\"l\"(da%d), \"l\"(db%d), ", j, j);
  tirx__sb_append(sb, "\"r\"((int)acc), \"n\"(TA), \"n\"(TB));\n}\n#endif\n");
}


/* The helper variants as keys: N (8..256), dtype, form and group size as
 * ((n * 32 + dtype) * 2 + rs) * 16 + group. */
static void gen_variant(tirx__strbuf *sb, int v) {
  prelude_wgmma(sb, v / 32 / 32, v / 32 % 32, v / 16 % 2 != 0, v % 16);
}

/* Each helper variant a kernel uses, after the sync section, in first-use order. */
static const tirx__prelude_frag variants = {.order = 800, .gen = gen_variant};

/* The helper variant of s's run, and its register operands (accumulators, RS A tiles), fenced
 * after a wait. */
static void collect(tirx__uses *u, const tirx__stmt *s) {
  const wgmma_instr *in = &wg(s)->in;
  int g = wgmma_run(s);
  u->variant(u, &variants, ((in->n * 32 + in->dtype) * 2 + (in->rs != 0)) * 16 + g);
  for (int j = 1; j < g; j++) s = s->next; /* the run's last */
  u->fence(u, wg(s)->acc->tensor, fence_after_wait);
  if (wg(s)->in.rs) u->fence(u, wg(s)->a->tensor, fence_after_wait);
}

static const tirx__native_op nv_wgmma = {
    .name = "wgmma", .helper = "tirx_wgmma", .need = TIRX__NEED(TIRX__FEAT(WGMMA)),
    .section = TIRX__PRE_SYNC, .size = sizeof(wgmma_payload),
    .ops = {TIRX__LOAD(wgmma_payload, acc), TIRX__EXPR(wgmma_payload, a),
            TIRX__LOAD(wgmma_payload, b), TIRX__EXPR(wgmma_payload, scale_d)},
    .print = print_wgmma, .emit = emit_wgmma, .run = wgmma_run, .collect = collect};

static const tirx__native_op nv_fence_regs = {
    .name = "fence_regs", .helper = "tirx_fence_regs", .need = TIRX__NEED(0),
    .section = TIRX__PRE_SYNC, .size = sizeof(fence_regs_payload),
    .ops = {TIRX__TENSOR(fence_regs_payload, regs)},
    .print = print_fence_regs, .emit = emit_fence_regs};

/* A register fence on every register of the local array t (f32, or 16-bit in pairs). */
static void fence_regs(tirx__emit *e, tirx_tensor *t) {
  tirx__stmt *s = tirx__emit_native(e, &nv_fence_regs);
  if (!s) return;
  fence_regs_payload *p = s->native.p;
  p->regs = t;
  p->n = (int32_t)t->elems;
}

static const tirx__prelude_frag *const frags[] = {&desc_frag, &fence_frag, NULL};


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
static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                             const tirx__shape *shape, void *emitter) {
  (void)rule;
  tirx__lower *lw = emitter;
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *d = p->ops[0], *a = p->ops[1], *bm = p->ops[2];
  bool rs = call->operands[1].role == TIRX__ROLE_LOCAL;
  tirx__wgmma_operand da = {0, 0, 0, 0}, db;
  const char *why = NULL;
  if ((!rs && !tirx__wgmma_operand_of(lw->arena, &call->operands[1], 1, &da, &why)) ||
      !tirx__wgmma_operand_of(lw->arena, &call->operands[2], 0, &db, &why))
    return tirx__b_fail(b, TIRX_E_INTERNAL, "%s: gemm_async.wgmma: %s", FN, why);
  int64_t m = d->extent[0], n = d->extent[1], k = a->extent[1], in = shape->v[1];
  tirx_expr *yes = tirx_bool(b, true), *first = p->scale_d ? p->scale_d : yes;
  fence_regs(e, d->tensor);
  if (rs) fence_regs(e, a->tensor);
  tirx__emit_native(e, &tirx__nv_wgmma_fence);
  for (int64_t ks = 0; ks < k / 16; ks++)
    for (int64_t s = 0; s < m / 64; s++)
      for (int64_t nb = 0; nb < n / in; nb++) {
        tirx__stmt *st = tirx__emit_native(e, &nv_wgmma);
        if (!st) return b->status;
        wgmma_payload *w = st->native.p;
        w->acc = tirx__gemm_at(b, d, 64 * s, nb * in);
        w->a = tirx__gemm_at(b, a, 64 * s, 16 * ks);
        w->b = tirx__gemm_at(b, bm, 16 * ks, nb * in);
        w->scale_d = ks ? yes : first;
        w->in = (wgmma_instr){
            .n = (int32_t)in, .dtype = call->operands[1].dtype, .rs = rs,
            .lbo_a = (int32_t)da.lbo, .sbo_a = (int32_t)da.sbo, .swz_a = da.swizzle,
            .lbo_b = (int32_t)db.lbo, .sbo_b = (int32_t)db.sbo, .swz_b = db.swizzle,
            .trans_a = da.mn_major, .trans_b = db.mn_major};
      }
  fence_regs(e, d->tensor);
  if (rs) fence_regs(e, a->tensor);
  return b->status;
}

const tirx__rule tirx__rule_gemm_async_wgmma = {
    .name = "gemm_async.wgmma",
    .family = "wgmma",
    .summary = "wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}, both operands in shared",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_GEMM_ASYNC),
    .flows = TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARPGROUP),
    .needs = {.dtypes = TIRX__DT(F32) | TIRX__DTYPES_16BIT, .rank = 2, .full_team = true,
              .features = TIRX__FEAT(WGMMA)},
    .shape_dims = {"m", "n", "k"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
    .prelude = frags,
};

const tirx__rule tirx__rule_gemm_async_wgmma_rs = {
    .name = "gemm_async.wgmma_rs",
    .family = "wgmma",
    .summary = "wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}, a in registers, b in shared",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_GEMM_ASYNC),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL) |
             TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL),
    .roles = {0, TIRX__BIT(TIRX__ROLE_LOCAL), TIRX__BIT(TIRX__ROLE_SHARED)},
    .teams = TIRX__BIT(TIRX_TEAM_WARPGROUP),
    .needs = {.dtypes = TIRX__DT(F32) | TIRX__DTYPES_16BIT, .rank = 2, .full_team = true,
              .features = TIRX__FEAT(WGMMA)},
    .shape_dims = {"m", "n", "k"},
    .check = check_rs,
    .shapes = shapes,
    .emit = emit,
    .prelude = frags,
};
