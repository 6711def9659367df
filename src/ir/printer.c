/* The readable text form of the IR, used by tests, diagnostics and dumps. */
#include <stdio.h>
#include <stdlib.h>

#include "ir.h"
#include "../dispatch/dispatch.h" /* tirx__prim_op_name: packed math (TIRX__ST_PACKED) */

static const char *const op_names[TIRX__OP_COUNT] = {
    "+",   "-",   "*",    "/",  "%",  "min", "max", "ceildiv", "&",  "|",   "^",  "<<",
    ">>",  "==",  "!=",   "<",  "<=", ">",   ">=",  "&&",      "||", "pow", "-",  "!"};

const char *tirx__op_name(int op) {
  return op >= 0 && op < TIRX__OP_COUNT ? op_names[op] : "?";
}

bool tirx__op_is_compare(int op) { return op >= TIRX__OP_EQ && op <= TIRX__OP_GE; }

static bool op_is_call(int op) {
  return op == TIRX__OP_MIN || op == TIRX__OP_MAX || op == TIRX__OP_CEILDIV ||
         op == TIRX__OP_POW;
}

const char *tirx__math_name(int op) {
  static const char *const names[TIRX_MATH_COUNT] = {
      "exp", "exp2", "log",  "log2",  "sqrt", "rsqrt", "tanh",
      "erf", "fabs", "sin",  "cos",   "floor", "ceil", "sigmoid"};
  return op >= 0 && op < TIRX_MATH_COUNT ? names[op] : "?";
}

const char *tirx__special_name(int sp) {
  static const char *const names[] = {"thread_idx", "block_idx",  "block_dim", "grid_dim",
                                      "thread_linear", "lane_id", "warp_id",
                                      "cluster_ctarank", "cluster_id", "elect_one"};
  return sp >= 0 && sp <= TIRX__SP_ELECT_ONE ? names[sp] : "?";
}

static const char *dn(int t) { return tirx_dtype_name((tirx_dtype)t); }

static void expr(tirx__strbuf *sb, const tirx_expr *e, bool top) {
  if (!e) {
    tirx__sb_append(sb, "<null>");
    return;
  }
  switch (e->kind) {
  case TIRX__EX_INT:
    if (e->dtype == TIRX_BOOL)
      tirx__sb_append(sb, e->i ? "true" : "false");
    else
      tirx__sb_printf(sb, "%lld", (long long)e->i);
    break;
  case TIRX__EX_FLOAT:
    if (e->dtype == TIRX_F32)
      tirx__sb_printf(sb, "%.9gf", e->f);
    else if (e->dtype == TIRX_F64)
      tirx__sb_printf(sb, "%.17g", e->f);
    else
      tirx__sb_printf(sb, "%s(%.9g)", dn(e->dtype), e->f);
    break;
  case TIRX__EX_PARAM:
  case TIRX__EX_VAR: tirx__sb_append(sb, e->decl->name); break;
  case TIRX__EX_SPECIAL:
    tirx__sb_append(sb, tirx__special_name(e->op));
    if (e->op <= TIRX__SP_GRID_DIM || e->op == TIRX__SP_CLUSTER_ID)
      tirx__sb_printf(sb, ".%c", "xyz"[e->i]);
    break;
  case TIRX__EX_UNARY:
    tirx__sb_append(sb, tirx__op_name(e->op));
    expr(sb, e->a, false);
    break;
  case TIRX__EX_BINARY:
    if (op_is_call(e->op)) {
      tirx__sb_printf(sb, "%s(", tirx__op_name(e->op));
      expr(sb, e->a, true);
      tirx__sb_append(sb, ", ");
      expr(sb, e->b, true);
      tirx__sb_append(sb, ")");
      break;
    }
    if (!top) tirx__sb_append(sb, "(");
    expr(sb, e->a, false);
    tirx__sb_printf(sb, " %s ", tirx__op_name(e->op));
    expr(sb, e->b, false);
    if (!top) tirx__sb_append(sb, ")");
    break;
  case TIRX__EX_SELECT:
    tirx__sb_append(sb, "select(");
    expr(sb, e->a, true);
    tirx__sb_append(sb, ", ");
    expr(sb, e->b, true);
    tirx__sb_append(sb, ", ");
    expr(sb, e->c, true);
    tirx__sb_append(sb, ")");
    break;
  case TIRX__EX_CAST:
    tirx__sb_printf(sb, "%s(", dn(e->dtype));
    expr(sb, e->a, true);
    tirx__sb_append(sb, ")");
    break;
  case TIRX__EX_MATH:
    tirx__sb_printf(sb, "%s(", tirx__math_name(e->op));
    expr(sb, e->a, true);
    tirx__sb_append(sb, ")");
    break;
  case TIRX__EX_LOAD:
    tirx__sb_printf(sb, "%s[", e->tensor->decl.name);
    for (int k = 0; k < e->tensor->rank; k++) {
      if (k) tirx__sb_append(sb, ", ");
      expr(sb, e->index[k], true);
    }
    tirx__sb_append(sb, "]");
    break;
  case TIRX__EX_SHFL:
    tirx__sb_append(sb, e->op ? "shfl_down(" : "shfl_xor(");
    expr(sb, e->a, true);
    tirx__sb_append(sb, ", ");
    expr(sb, e->b, true);
    tirx__sb_append(sb, ")");
    break;
  default: tirx__sb_append(sb, "?"); break;
  }
}

void tirx__ir_print_expr(tirx__strbuf *sb, const tirx_expr *e) { expr(sb, e, true); }

static void layout_text(tirx__strbuf *sb, const tirx_layout *l) {
  char *s = tirx_layout_str(l);
  if (!s) {
    sb->failed = true;
    return;
  }
  tirx__sb_append(sb, s);
  free(s);
}

static void tensor_type(tirx__strbuf *sb, const tirx_tensor *t) {
  tirx__sb_printf(sb, "%s[", dn(t->dtype));
  for (int k = 0; k < t->rank; k++) {
    if (k) tirx__sb_append(sb, ", ");
    expr(sb, t->shape[k], true);
  }
  tirx__sb_append(sb, "]");
  if (t->storage != TIRX__GLOBAL || t->layout) {
    tirx__sb_append(sb, " layout ");
    layout_text(sb, t->layout);
  } else if (!t->dense) {
    tirx__sb_append(sb, " strides [");
    for (int k = 0; k < t->rank; k++) {
      if (k) tirx__sb_append(sb, ", ");
      if (t->stride[k])
        expr(sb, t->stride[k], true);
      else
        tirx__sb_append(sb, "?");
    }
    tirx__sb_append(sb, "]");
  }
}

static void indent(tirx__strbuf *sb, int depth) {
  for (int i = 0; i < depth; i++) tirx__sb_append(sb, "  ");
}

static void block(tirx__strbuf *sb, const tirx__block *blk, int depth);

/* ---- TMA and bulk async copies ---- */
/* ---- synchronisation and tensor cores (TIRX__ST_NATIVE): "mbarrier_wait(full[s], phase)",
 * "wgmma.m64n128k16.bf16(acc[0], As[0, 0] sw128 sbo=1024, Bs[0, 0] ..., scale_d)" ---- */

static void element(tirx__strbuf *sb, const tirx_tensor *t, tirx_expr *const *index) {
  tirx__sb_printf(sb, "%s[", t->decl.name);
  for (int k = 0; k < t->rank; k++) {
    if (k) tirx__sb_append(sb, ", ");
    expr(sb, index[k], true);
  }
  tirx__sb_append(sb, "]");
}

static void async_stmt(tirx__strbuf *sb, const tirx__stmt *s) {
  switch (s->flags) {
  case TIRX__AS_TMA_LOAD:
  case TIRX__AS_TMA_STORE: {
    bool load = s->flags == TIRX__AS_TMA_LOAD;
    tirx__sb_append(sb, load ? "tma_load " : "tma_store ");
    element(sb, s->tensor, s->index);
    tirx__sb_printf(sb, " %s tmap%d(", load ? "<-" : "->", (int)s->vec);
    for (int i = 0; i < s->loop; i++) {
      if (i) tirx__sb_append(sb, ", ");
      expr(sb, s->regs[i], true);
    }
    tirx__sb_append(sb, ")");
    if (s->a) {
      tirx__sb_append(sb, " bar ");
      element(sb, s->a->tensor, s->a->index);
    }
    if (s->b) {
      tirx__sb_append(sb, " multicast ");
      expr(sb, s->b, true);
    }
    tirx__sb_append(sb, "\n");
    break;
  }
  case TIRX__AS_CP_ASYNC: /* cp_async.16 s[i, j] <- A[r, c] (zfill past <bytes>) */
    tirx__sb_printf(sb, "cp_async.%d ", (int)s->vec);
    element(sb, s->tensor, s->index);
    tirx__sb_append(sb, " <- ");
    element(sb, s->a->tensor, s->a->index);
    if (s->b) {
      tirx__sb_append(sb, " zfill past ");
      expr(sb, s->b, true);
    }
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__AS_CP_COMMIT: tirx__sb_append(sb, "cp_async_commit\n"); break;
  case TIRX__AS_CP_WAIT:
    if (s->loop)
      tirx__sb_append(sb, "cp_async_wait_all\n");
    else
      tirx__sb_printf(sb, "cp_async_wait %d\n", (int)s->vec);
    break;
  case TIRX__AS_COMMIT: tirx__sb_append(sb, "bulk_commit\n"); break;
  case TIRX__AS_WAIT: tirx__sb_printf(sb, "bulk_wait%s %d\n", s->loop ? ".read" : "", (int)s->vec); break;
  case TIRX__AS_PREFETCH: tirx__sb_printf(sb, "tmap_prefetch %s\n", s->tensor->decl.name); break;
  case TIRX__AS_CLUSTER_SYNC: tirx__sb_append(sb, "cluster_sync\n"); break;
  case TIRX__AS_DSMEM_ST:
    tirx__sb_printf(sb, "dsmem_store %s[", s->tensor->decl.name);
    for (int k = 0; k < s->tensor->rank; k++) {
      if (k) tirx__sb_append(sb, ", ");
      expr(sb, s->index[k], true);
    }
    tirx__sb_append(sb, "] of cta ");
    expr(sb, s->b, true);
    tirx__sb_append(sb, " = ");
    expr(sb, s->a, true);
    tirx__sb_append(sb, "\n");
    break;
  default: tirx__sb_printf(sb, "async %d\n", (int)s->flags); break; /* not made */
  }
}

static void desc(tirx__strbuf *sb, const tirx_expr *e, int lbo, int sbo, int swz) {
  static const char *const modes[] = {"interleave", "sw128", "sw64", "sw32"};
  expr(sb, e, true);
  tirx__sb_printf(sb, " %s lbo=%d sbo=%d", modes[swz & 3], lbo, sbo);
}

static void native(tirx__strbuf *sb, const tirx__stmt *s) {
  static const char *const names[TIRX__NV_COUNT] = {
      "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_cluster", "mbarrier_expect_tx",
      "mbarrier_wait", "fence_proxy_async", "fence_mbarrier_init", "cluster_sync",
      "setmaxnreg", "named_barrier_sync", "named_barrier_arrive", "wgmma_fence",
      "wgmma_commit", "wgmma_wait", "wgmma", "mma", "fence_regs"};
  const int *im = s->imm;
  switch (s->native) {
  case TIRX__NV_SETMAXNREG:
    tirx__sb_printf(sb, "setmaxnreg.%s %d\n", im[1] ? "inc" : "dec", im[0]);
    return;
  case TIRX__NV_NAMED_BAR_SYNC:
  case TIRX__NV_NAMED_BAR_ARRIVE:
    tirx__sb_printf(sb, "%s(%d, %d)\n", names[s->native], im[0], im[1]);
    return;
  case TIRX__NV_WGMMA_WAIT: tirx__sb_printf(sb, "wgmma_wait(%d)\n", im[0]); return;
  case TIRX__NV_WGMMA:
    tirx__sb_printf(sb, "wgmma%s.m64n%dk16.%s(", im[TIRX__WG_RS] ? "_rs" : "", im[TIRX__WG_N],
                    dn(im[TIRX__WG_DTYPE]));
    expr(sb, s->regs[0], true);
    tirx__sb_append(sb, ", ");
    if (im[TIRX__WG_RS]) /* the A fragment's first register */
      expr(sb, s->a, true);
    else
      desc(sb, s->a, im[TIRX__WG_LBO_A], im[TIRX__WG_SBO_A], im[TIRX__WG_SWZ_A]);
    tirx__sb_append(sb, ", ");
    desc(sb, s->b, im[TIRX__WG_LBO_B], im[TIRX__WG_SBO_B], im[TIRX__WG_SWZ_B]);
    tirx__sb_append(sb, ", accumulate ");
    expr(sb, s->c, true);
    tirx__sb_append(sb, ")\n");
    return;
  case TIRX__NV_MMA:
    tirx__sb_printf(sb, "mma.m16n8k16.%s(", dn(im[0]));
    for (int i = 0; i < 3; i++) {
      expr(sb, s->regs[i], true);
      tirx__sb_append(sb, ", ");
    }
    tirx__sb_append(sb, "accumulate ");
    expr(sb, s->c, true);
    tirx__sb_append(sb, ")\n");
    return;
  case TIRX__NV_FENCE_REGS:
    tirx__sb_printf(sb, "fence_regs(%s[0..%d))\n", s->tensor->decl.name, (int)s->vec);
    return;
  default: break;
  }
  tirx__sb_printf(sb, "%s(", s->native < TIRX__NV_COUNT ? names[s->native] : "?");
  if (s->tensor) element(sb, s->tensor, s->index);
  if (s->a) {
    tirx__sb_append(sb, ", ");
    expr(sb, s->a, true);
  }
  tirx__sb_append(sb, ")\n");
}

/* ---- end synchronisation and tensor cores ---- */

static void stmt(tirx__strbuf *sb, const tirx__stmt *s, int depth) {
  indent(sb, depth);
  switch (s->kind) {
  case TIRX__ST_FOR:
    tirx__sb_printf(sb, "for %s: %s in [", s->decl->name, dn(s->decl->dtype));
    expr(sb, s->a, true);
    tirx__sb_append(sb, ", ");
    expr(sb, s->b, true);
    tirx__sb_append(sb, ")");
    if (!(s->c->kind == TIRX__EX_INT && s->c->i == 1)) {
      tirx__sb_append(sb, " step ");
      expr(sb, s->c, true);
    }
    if (s->loop == TIRX_LOOP_UNROLL) tirx__sb_append(sb, " unroll");
    tirx__sb_append(sb, " {\n");
    block(sb, &s->body, depth + 1);
    indent(sb, depth);
    tirx__sb_append(sb, "}\n");
    break;
  case TIRX__ST_IF:
    tirx__sb_append(sb, "if ");
    expr(sb, s->a, true);
    tirx__sb_append(sb, " {\n");
    block(sb, &s->body, depth + 1);
    indent(sb, depth);
    if (s->has_else) {
      tirx__sb_append(sb, "} else {\n");
      block(sb, &s->orelse, depth + 1);
      indent(sb, depth);
    }
    tirx__sb_append(sb, "}\n");
    break;
  case TIRX__ST_LET:
  case TIRX__ST_VAR:
    tirx__sb_printf(sb, "%s %s: %s", s->kind == TIRX__ST_LET ? "let" : "var", s->decl->name,
                    dn(s->decl->dtype));
    if (s->a) {
      tirx__sb_append(sb, " = ");
      expr(sb, s->a, true);
    }
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__ST_ASSIGN:
    tirx__sb_printf(sb, "%s = ", s->decl->name);
    expr(sb, s->a, true);
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__ST_STORE:
  case TIRX__ST_ATOMIC_ADD:
    if (s->kind == TIRX__ST_ATOMIC_ADD) tirx__sb_append(sb, "atomic_add ");
    tirx__sb_printf(sb, "%s[", s->tensor->decl.name);
    for (int k = 0; k < s->tensor->rank; k++) {
      if (k) tirx__sb_append(sb, ", ");
      expr(sb, s->index[k], true);
    }
    tirx__sb_append(sb, s->kind == TIRX__ST_STORE ? "] = " : "] += ");
    expr(sb, s->a, true);
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__ST_SYNC: tirx__sb_append(sb, "sync_threads\n"); break;
  case TIRX__ST_SYNCWARP: tirx__sb_append(sb, "sync_warp\n"); break;
  case TIRX__ST_LOCAL:
    tirx__sb_printf(sb, "local %s: ", s->tensor->decl.name);
    tensor_type(sb, s->tensor);
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__ST_PRIM: /* after lowering: the rule, then the native IR it wrote */
    tirx__sb_printf(sb, "prim #%d %s {\n", (int)s->prim->number,
                    s->prim->comment ? s->prim->comment : "(not lowered)");
    block(sb, &s->body, depth + 1);
    indent(sb, depth);
    tirx__sb_append(sb, "}\n");
    break;
  case TIRX__ST_VCOPY:
    tirx__sb_printf(sb, "%s[", s->tensor->decl.name);
    for (int k = 0; k < s->tensor->rank; k++) {
      if (k) tirx__sb_append(sb, ", ");
      expr(sb, s->index[k], true);
    }
    tirx__sb_printf(sb, "] = vec%d(", (int)s->vec);
    expr(sb, s->a, true);
    tirx__sb_printf(sb, ")%s%s\n", s->flags & (TIRX__VC_LD_CS | TIRX__VC_ST_CS) ? " .cs" : "",
                    s->flags & TIRX__VC_LD_NC ? " .nc" : s->flags & TIRX__VC_LD_LU ? " .lu" : "");
    break;
  case TIRX__ST_MATRIX: { /* ldmatrix: {regs} = ldmatrix.xN(s[row]); stmatrix the other way */
    bool st = s->flags & TIRX__MX_STORE;
    if (st) {
      tirx__sb_printf(sb, "stmatrix.x%d(%s[", (int)s->vec, s->tensor->decl.name);
    } else {
      tirx__sb_append(sb, "{");
      for (int i = 0; i < s->vec; i++) {
        if (i) tirx__sb_append(sb, ", ");
        expr(sb, s->regs[i], true);
      }
      tirx__sb_printf(sb, "} = ldmatrix.x%d(%s[", (int)s->vec, s->tensor->decl.name);
    }
    for (int k = 0; k < s->tensor->rank; k++) {
      if (k) tirx__sb_append(sb, ", ");
      expr(sb, s->index[k], true);
    }
    tirx__sb_append(sb, "]");
    if (st) {
      tirx__sb_append(sb, ", {");
      for (int i = 0; i < s->vec; i++) {
        if (i) tirx__sb_append(sb, ", ");
        expr(sb, s->regs[i], true);
      }
      tirx__sb_append(sb, "}");
    }
    tirx__sb_append(sb, ")\n");
    break;
  }
  /* ---- packed f16x2/bf16x2 math: "out[0..2] = x2.add(src[0..2], b)" ---- */
  case TIRX__ST_PACKED: {
    tirx__sb_printf(sb, "%s[", s->tensor->decl.name);
    for (int k = 0; k < s->tensor->rank; k++) {
      if (k) tirx__sb_append(sb, ", ");
      expr(sb, s->index[k], true);
    }
    tirx__sb_printf(sb, " +0..2] = x2.%s(", tirx__prim_op_name((tirx__prim_op)s->flags));
    const tirx_expr *src[3] = {s->a, s->b, s->c};
    for (int i = 0; i < 3 && src[i]; i++) {
      if (i) tirx__sb_append(sb, ", ");
      expr(sb, src[i], true);
      if (s->vec >> i & 1) tirx__sb_append(sb, " +0..2");
    }
    tirx__sb_append(sb, ")\n");
    break;
  }
  /* ---- end packed math ---- */
  /* ---- TMA and bulk async copies (TIRX__ST_ASYNC) ---- */
  case TIRX__ST_ASYNC: async_stmt(sb, s); break;
  case TIRX__ST_NATIVE: native(sb, s); break;
  default: tirx__sb_append(sb, "?\n"); break;
  }
}

static void block(tirx__strbuf *sb, const tirx__block *blk, int depth) {
  for (const tirx__stmt *s = blk->first; s; s = s->next) stmt(sb, s, depth);
}

/* An integer parameter's specialisation policy when it is not the default (div16). */
static const char *policy_note(const tirx__decl *d) {
  if (d->kind != TIRX__DECL_PARAM_INT) return "";
  return d->policy == TIRX_SPECIALIZE_VALUE     ? " [value]"
         : d->policy == TIRX_SPECIALIZE_DYNAMIC ? " [dynamic]"
                                                : "";
}

char *tirx__ir_print(const tirx_builder *b) {
  tirx__strbuf sb = {0};
  tirx__sb_printf(&sb, "kernel %s(", b->name);
  for (int i = 0; i < b->nparams; i++) {
    const tirx__decl *d = b->params[i];
    tirx__sb_printf(&sb, "%s%s: ", i ? ", " : "", d->name);
    if (d->kind == TIRX__DECL_PARAM_TENSOR)
      tensor_type(&sb, d->tensor);
    else
      tirx__sb_printf(&sb, "%s%s%s", d->kind == TIRX__DECL_PARAM_INT ? "int " : "",
                      dn(d->dtype), policy_note(d));
  }
  tirx__sb_append(&sb, ")\n  grid (");
  for (int i = 0; i < 3; i++) {
    if (i) tirx__sb_append(&sb, ", ");
    if (b->grid[i])
      expr(&sb, b->grid[i], true);
    else
      tirx__sb_append(&sb, "1");
  }
  tirx__sb_printf(&sb, ") block (%d, %d, %d) shared %lld", b->block[0], b->block[1], b->block[2],
                  (long long)b->shared_bytes);
  if (b->shared_extra) {
    tirx__sb_append(&sb, " + ");
    expr(&sb, b->shared_extra, false);
  }
  tirx__sb_append(&sb, "\n");
  for (int i = 0; i < b->nshared; i++) {
    const tirx_tensor *t = b->shared[i];
    tirx__sb_printf(&sb, "  shared %s: ", t->decl.name);
    tensor_type(&sb, t);
    tirx__sb_printf(&sb, " at %lld\n", (long long)t->smem_offset);
  }
  tirx__sb_append(&sb, "{\n");
  block(&sb, &b->body, 1);
  tirx__sb_append(&sb, "}\n");
  return tirx__sb_finish(&sb);
}
