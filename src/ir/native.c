/*
 * The table of native statements (native.h): the rows, the format interpreter, and the print
 * and emit functions of the rows a format cannot say. Both the IR printer and codegen write
 * through a tirx__writer, so a row's two spellings sit side by side here.
 */
#include <stddef.h>
#include <string.h>

#include "ir.h"
#include "../dispatch/dispatch.h" /* tirx__prim_op_name: packed math */

static void put(tirx__writer *w, const char *s) { tirx__sb_append(w->sb, s); }

static void indent(tirx__writer *w, int depth) {
  for (int i = 0; i < depth; i++) put(w, "  ");
}

static void load(tirx__writer *w, const tirx_expr *e) { w->elem(w, e->tensor, e->index); }

/* ---- mbarriers, wgmma ---- */

static void emit_wgmma_wait(tirx__writer *w, const tirx__stmt *s) {
  /* The accumulators in scope are fenced after the wait, so that no read of them moves
   * above it (CUTLASS: warpgroup_wait; warpgroup_fence_operand). */
  tirx__sb_printf(w->sb, "tirx_wgmma_wait<%d>();", (int)s->native.wait.n);
  if (w->wgmma_wait_fences) w->wgmma_wait_fences(w);
}

static void print_desc(tirx__writer *w, const tirx_expr *e, int lbo, int sbo, int swz) {
  static const char *const modes[] = {"interleave", "sw128", "sw64", "sw32"};
  w->expr(w, e);
  tirx__sb_printf(w->sb, " %s lbo=%d sbo=%d", modes[swz & 3], lbo, sbo);
}

static void print_wgmma(tirx__writer *w, const tirx__stmt *s) {
  const tirx__wgmma_instr *in = &s->native.wgmma.in;
  tirx__sb_printf(w->sb, "wgmma%s.m64n%dk16.%s(", in->rs ? "_rs" : "", (int)in->n,
                  tirx_dtype_name((tirx_dtype)in->dtype));
  w->expr(w, s->native.wgmma.acc);
  put(w, ", ");
  if (in->rs) /* the A fragment's first register */
    w->expr(w, s->native.wgmma.a);
  else
    print_desc(w, s->native.wgmma.a, in->lbo_a, in->sbo_a, in->swz_a);
  put(w, ", ");
  print_desc(w, s->native.wgmma.b, in->lbo_b, in->sbo_b, in->swz_b);
  put(w, ", accumulate ");
  w->expr(w, s->native.wgmma.scale_d);
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

static bool is_wgmma(const tirx__stmt *t) {
  return t && t->kind == TIRX__ST_NATIVE && t->native.op == TIRX__NV_WGMMA;
}

/* Whether wgmma t can join the asm statement of wgmma s: the same accumulator registers, the
 * same instruction and descriptor fields, and scale-d the constant true. */
static bool wgmma_joins(const tirx__stmt *s, const tirx__stmt *t) {
  if (!is_wgmma(t)) return false;
  const tirx_expr *ds = s->native.wgmma.acc, *dt = t->native.wgmma.acc;
  if (ds->tensor != dt->tensor || !same_index(ds->index[0], dt->index[0]) ||
      !same_index(ds->index[1], dt->index[1]))
    return false;
  const tirx__wgmma_instr *a = &s->native.wgmma.in, *b = &t->native.wgmma.in;
  if (memcmp(a, b, sizeof *a) != 0 || a->rs) return false;
  const tirx_expr *c = t->native.wgmma.scale_d;
  return c->kind == TIRX__EX_INT && c->i == 1;
}

/* The lowering emits a primitive's k16 steps back to back; with one accumulator block (one
 * m64 slab, one n block) they all join. */
int tirx__wgmma_run(const tirx__stmt *s) {
  if (!is_wgmma(s)) return 1;
  int g = 1;
  for (const tirx__stmt *t = s->next; g < WGMMA_GROUP_MAX && wgmma_joins(s, t); t = t->next) g++;
  return g;
}

/* With the statements that join it (codegen skips them). */
static void emit_wgmma(tirx__writer *w, const tirx__stmt *s) {
  const tirx__wgmma_instr *in = &s->native.wgmma.in;
  const char *ty = in->dtype == TIRX_F16 ? "f16" : "bf16";
  if (in->rs) { /* RS: the A fragment's first register, one instruction */
    tirx__sb_printf(w->sb, "tirx_wgmma_rs_m64n%dk16_%s<%d>(", (int)in->n, ty, (int)in->trans_b);
    load(w, s->native.wgmma.acc);
    put(w, ",\n");
    indent(w, w->depth + 2);
    load(w, s->native.wgmma.a);
    put(w, ",\n");
    indent(w, w->depth + 2);
    emit_desc(w, s->native.wgmma.b, in->lbo_b, in->sbo_b, in->swz_b);
    put(w, ", ");
    w->expr(w, s->native.wgmma.scale_d);
    put(w, ");");
    return;
  }
  int g = tirx__wgmma_run(s);
  tirx__sb_printf(w->sb, "tirx_wgmma_m64n%dk16_%s", (int)in->n, ty);
  if (g > 1) tirx__sb_printf(w->sb, "_x%d", g);
  tirx__sb_printf(w->sb, "<%d, %d>(", (int)in->trans_a, (int)in->trans_b);
  load(w, s->native.wgmma.acc);
  const tirx__stmt *t = s;
  for (int j = 0; j < g; j++, t = t->next) {
    put(w, ",\n");
    indent(w, w->depth + 2);
    emit_desc(w, t->native.wgmma.a, in->lbo_a, in->sbo_a, in->swz_a);
    put(w, ",\n");
    indent(w, w->depth + 2);
    emit_desc(w, t->native.wgmma.b, in->lbo_b, in->sbo_b, in->swz_b);
  }
  put(w, ", ");
  w->expr(w, s->native.wgmma.scale_d);
  put(w, ");");
}

static void print_mma(tirx__writer *w, const tirx__stmt *s) {
  tirx__sb_printf(w->sb, "mma.m16n8k16.%s(", tirx_dtype_name((tirx_dtype)s->native.mma.dtype));
  const tirx_expr *r[3] = {s->native.mma.c, s->native.mma.a, s->native.mma.b};
  for (int i = 0; i < 3; i++) {
    w->expr(w, r[i]);
    put(w, ", ");
  }
  put(w, "accumulate ");
  w->expr(w, s->native.mma.accumulate);
  put(w, ")");
}

static void print_fence_regs(tirx__writer *w, const tirx__stmt *s) {
  tirx__sb_printf(w->sb, "fence_regs(%s[0..%d))", w->tensor(w, s->native.fence_regs.regs),
                  (int)s->native.fence_regs.n);
}

/* tirx_fence_regs<n>(t) for an f32 array, tirx_fence_regs16<n>(t) for a 16-bit one. */
static void emit_fence_regs(tirx__writer *w, const tirx__stmt *s) {
  const tirx_tensor *t = s->native.fence_regs.regs;
  tirx__sb_printf(w->sb, "tirx_fence_regs%s<%lld>(%s);", t->dtype == TIRX_F32 ? "" : "16",
                  (long long)s->native.fence_regs.n, w->tensor(w, t));
}

/* ---- TMA ---- */

static void print_tma(tirx__writer *w, const tirx__stmt *s) {
  bool ld = s->native.op == TIRX__NV_TMA_LOAD;
  put(w, ld ? "tma_load " : "tma_store ");
  w->elem(w, s->native.tma.smem.tensor, s->native.tma.smem.index);
  tirx__sb_printf(w->sb, " %s tmap%d(", ld ? "<-" : "->", (int)s->native.tma.map);
  for (int i = 0; i < s->native.tma.rank; i++) {
    if (i) put(w, ", ");
    w->expr(w, s->native.tma.coords[i]);
  }
  put(w, ")");
  if (s->native.tma.bar) {
    put(w, " bar ");
    load(w, s->native.tma.bar);
  }
  if (s->native.tma.multicast) {
    put(w, " multicast ");
    w->expr(w, s->native.tma.multicast);
  }
}

static void coords(tirx__writer *w, const tirx__stmt *s) {
  for (int i = 0; i < s->native.tma.rank; i++) {
    put(w, ", ");
    w->expr(w, s->native.tma.coords[i]);
  }
  put(w, ");");
}

static void emit_tma_load(tirx__writer *w, const tirx__stmt *s) {
  const tirx_expr *mc = s->native.tma.multicast;
  tirx__sb_printf(w->sb, "tirx_tma_load_%s%dd(", mc ? "mc_" : "", (int)s->native.tma.rank);
  w->elem(w, s->native.tma.smem.tensor, s->native.tma.smem.index);
  tirx__sb_printf(w->sb, ", &%s, ", w->tmap(w, NULL, s->native.tma.map, 0));
  load(w, s->native.tma.bar);
  if (mc) {
    put(w, ", (unsigned short)(");
    w->expr(w, mc);
    put(w, ")");
  }
  coords(w, s);
}

static void emit_tma_store(tirx__writer *w, const tirx__stmt *s) {
  tirx__sb_printf(w->sb, "tirx_tma_store_%dd(&%s, ", (int)s->native.tma.rank,
                  w->tmap(w, NULL, s->native.tma.map, 0));
  w->elem(w, s->native.tma.smem.tensor, s->native.tma.smem.index);
  coords(w, s);
}

static void emit_prefetch(tirx__writer *w, const tirx__stmt *s) {
  const tirx_tensor *t = s->native.prefetch.tensor;
  int n = 0;
  for (const char *m; (m = w->tmap(w, t, -1, n)) != NULL;)
    tirx__sb_printf(w->sb, "%stirx_tmap_prefetch(&%s);", n++ ? " " : "", m);
  if (!n) tirx__sb_printf(w->sb, "/* %s has no tensor map to prefetch */", t->decl.name);
}

/* ---- vector moves, ldmatrix/stmatrix, packed math ---- */

static void print_vcopy(tirx__writer *w, const tirx__stmt *s) {
  int h = s->native.vcopy.hints;
  w->elem(w, s->native.vcopy.dst.tensor, s->native.vcopy.dst.index);
  tirx__sb_printf(w->sb, " = vec%d(", (int)s->native.vcopy.n);
  w->expr(w, s->native.vcopy.src);
  tirx__sb_printf(w->sb, ")%s%s", h & (TIRX__VC_LD_CS | TIRX__VC_ST_CS) ? " .cs" : "",
                  h & TIRX__VC_LD_NC ? " .nc" : h & TIRX__VC_LD_LU ? " .lu" : "");
}

static void emit_vcopy(tirx__writer *w, const tirx__stmt *s) {
  const tirx__elem *d = &s->native.vcopy.dst;
  tirx__sb_printf(w->sb, "tirx_vcopy<%s, %d, %d>(", w->ctype(d->tensor->dtype),
                  (int)s->native.vcopy.n, (int)s->native.vcopy.hints);
  w->elem(w, d->tensor, d->index);
  put(w, ", ");
  load(w, s->native.vcopy.src);
  put(w, ");");
}

static void regs(tirx__writer *w, const tirx__stmt *s) {
  for (int i = 0; i < s->native.matrix.n; i++) {
    if (i) put(w, ", ");
    w->expr(w, s->native.matrix.regs[i]);
  }
}

/* ldmatrix: {regs} = ldmatrix.xN(s[row]); stmatrix the other way */
static void print_matrix(tirx__writer *w, const tirx__stmt *s) {
  bool st = s->native.op == TIRX__NV_STMATRIX;
  const tirx__elem *r = &s->native.matrix.row;
  if (!st) {
    put(w, "{");
    regs(w, s);
    put(w, "} = ");
  }
  tirx__sb_printf(w->sb, "%s.x%d(", tirx__native_row(s->native.op)->name,
                  (int)s->native.matrix.n);
  w->elem(w, r->tensor, r->index);
  if (st) {
    put(w, ", {");
    regs(w, s);
    put(w, "}");
  }
  put(w, ")");
}

static void emit_matrix(tirx__writer *w, const tirx__stmt *s) {
  const tirx__elem *r = &s->native.matrix.row;
  tirx__sb_printf(w->sb, "%s_x%d(", tirx__native_row(s->native.op)->helper,
                  (int)s->native.matrix.n);
  w->elem(w, r->tensor, r->index);
  for (int i = 0; i < s->native.matrix.n; i++) {
    put(w, ", ");
    load(w, s->native.matrix.regs[i]);
  }
  put(w, ");");
}

/* "out[0..2] = x2.add(src[0..2], b)" */
static void print_packed(tirx__writer *w, const tirx__stmt *s) {
  const tirx__elem *d = &s->native.packed.dst;
  tirx__sb_printf(w->sb, "%s[", w->tensor(w, d->tensor)); /* "t[i, j +0..2]" */
  for (int k = 0; k < d->tensor->rank; k++) {
    if (k) put(w, ", ");
    w->expr(w, d->index[k]);
  }
  tirx__sb_printf(w->sb, " +0..2] = x2.%s(",
                  tirx__prim_op_name((tirx__prim_op)s->native.packed.op));
  for (int i = 0; i < 3 && s->native.packed.src[i]; i++) {
    if (i) put(w, ", ");
    w->expr(w, s->native.packed.src[i]);
    if (s->native.packed.pairs >> i & 1) put(w, " +0..2");
  }
  put(w, ")");
}

static void emit_packed(tirx__writer *w, const tirx__stmt *s) {
  const tirx__elem *d = &s->native.packed.dst;
  put(w, "tirx_x2_st(");
  w->elem(w, d->tensor, d->index);
  tirx__sb_printf(w->sb, ", tirx_x2_%s_%s(", d->tensor->dtype == TIRX_F16 ? "f16x2" : "bf16x2",
                  tirx__prim_op_name((tirx__prim_op)s->native.packed.op));
  for (int i = 0; i < 3 && s->native.packed.src[i]; i++) {
    const tirx_expr *e = s->native.packed.src[i];
    if (i) put(w, ", ");
    if (s->native.packed.pairs >> i & 1) { /* the pair at a load */
      put(w, "tirx_x2_ld(");
      load(w, e);
      put(w, ")");
    } else { /* a value broadcast to both halves */
      put(w, "tirx_x2_dup(");
      w->expr(w, e);
      put(w, ")");
    }
  }
  put(w, "));");
}

/* ---- the table ---- */

#define OPS(...) {__VA_ARGS__ NONE_OP}
#define NONE_OP {TIRX__OPND_NONE, 0, 0}
#define OPND(k, f) {TIRX__OPND_##k, (uint16_t)offsetof(tirx__native_stmt, f), 0},
#define ELEM(f) OPND(ELEM, f)
#define LOAD(f) OPND(LOAD, f)
#define EXPR(f) OPND(EXPR, f)
#define TENSOR(f) OPND(TENSOR, f)
#define IMM(f) OPND(IMM, f)
#define LOADS(f, n)                                                                            \
  {TIRX__OPND_LOADS, (uint16_t)offsetof(tirx__native_stmt, f),                                \
   (uint16_t)offsetof(tirx__native_stmt, n)},
#define ROW(id, nm, hp, nd, pre, opl, pf, pfn, ef, efn)                                        \
  [TIRX__NV_##id] = {.name = nm, .helper = hp, .need = nd, .prelude = pre, .ops = opl,        \
                     .print_fmt = pf, .print = pfn, .emit_fmt = ef, .emit = efn},

static const tirx__native_info rows[TIRX__NV_COUNT] = {TIRX__NATIVE_OPS(ROW)};

const tirx__native_info *tirx__native_row(int op) {
  return op >= 0 && op < TIRX__NV_COUNT ? &rows[op] : NULL;
}

/* ---- the format interpreter ---- */

static const void *field(const tirx__stmt *s, const tirx__opnd *o) {
  return (const char *)&s->native + o->at;
}

static bool present(const tirx__stmt *s, const tirx__opnd *o) {
  if (o->kind == TIRX__OPND_LOAD || o->kind == TIRX__OPND_EXPR)
    return *(tirx_expr *const *)field(s, o) != NULL;
  return true;
}

static void operand(tirx__writer *w, const tirx__stmt *s, const tirx__opnd *o) {
  const void *p = field(s, o);
  switch (o->kind) {
  case TIRX__OPND_ELEM: {
    const tirx__elem *e = p;
    w->elem(w, e->tensor, e->index);
    break;
  }
  case TIRX__OPND_LOAD: load(w, *(tirx_expr *const *)p); break;
  case TIRX__OPND_EXPR: w->expr(w, *(tirx_expr *const *)p); break;
  case TIRX__OPND_TENSOR: put(w, w->tensor(w, *(tirx_tensor *const *)p)); break;
  case TIRX__OPND_IMM: tirx__sb_printf(w->sb, "%d", (int)*(const int32_t *)p); break;
  default: put(w, "?"); break;
  }
}

static void format(tirx__writer *w, const tirx__stmt *s, const tirx__native_info *r,
                   const char *f) {
  for (; *f; f++) {
    if (*f == '{') { /* an optional part: skipped when an operand it names is absent */
      const char *end = strchr(f, '}');
      bool all = end != NULL;
      for (const char *q = f; all && q < end; q++)
        if (q[0] == '$' && q[1] >= '0' && q[1] <= '4') all = present(s, &r->ops[q[1] - '0']);
      if (!all) {
        if (!end) return;
        f = end;
      }
      continue;
    }
    if (*f == '}') continue;
    if (*f != '$' || !f[1]) {
      tirx__sb_printf(w->sb, "%c", *f);
      continue;
    }
    f++;
    if (*f == 'n')
      put(w, r->name);
    else if (*f == 'h')
      put(w, r->helper);
    else if (*f >= '0' && *f <= '4')
      operand(w, s, &r->ops[*f - '0']);
  }
}

void tirx__native_print(tirx__writer *w, const tirx__stmt *s) {
  const tirx__native_info *r = tirx__native_row(s->native.op);
  if (!r)
    put(w, "?");
  else if (r->print)
    r->print(w, s);
  else
    format(w, s, r, r->print_fmt);
}

void tirx__native_emit(tirx__writer *w, const tirx__stmt *s) {
  const tirx__native_info *r = tirx__native_row(s->native.op);
  if (!r)
    put(w, "/* ? */");
  else if (r->emit)
    r->emit(w, s);
  else
    format(w, s, r, r->emit_fmt);
}
