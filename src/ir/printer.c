/* The readable text form of the IR, used by tests, diagnostics and dumps. */
#include <stdio.h>
#include <stdlib.h>

#include "ir.h"

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
      "erf", "fabs", "sin",  "cos",   "floor", "ceil", "sigmoid", "exp2_approx"};
  return op >= 0 && op < TIRX_MATH_COUNT ? names[op] : "?";
}

const char *tirx__special_name(int sp) {
  static const char *const names[] = {"thread_idx", "block_idx",  "block_dim", "grid_dim",
                                      "thread_linear", "lane_id", "warp_id",
                                      "cluster_ctarank", "cluster_id", "elect_one",
                                      "elem_index"};
  return sp >= 0 && sp <= TIRX__SP_ELEM_INDEX ? names[sp] : "?";
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
    /* x, y, z; an element index's dim may be up to TIRX_BUILDER_MAX_RANK - 1: past z, a number */
    if (e->op <= TIRX__SP_GRID_DIM || e->op == TIRX__SP_CLUSTER_ID || e->op == TIRX__SP_ELEM_INDEX) {
      if (e->i >= 0 && e->i < 3)
        tirx__sb_printf(sb, ".%c", "xyz"[e->i]);
      else
        tirx__sb_printf(sb, ".%lld", (long long)e->i);
    }
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

static void element(tirx__strbuf *sb, const tirx_tensor *t, tirx_expr *const *index) {
  tirx__sb_printf(sb, "%s[", t->decl.name);
  for (int k = 0; k < t->rank; k++) {
    if (k) tirx__sb_append(sb, ", ");
    expr(sb, index[k], true);
  }
  tirx__sb_append(sb, "]");
}

/* ---- native statements (native.c writes them through these) ---- */

static void w_expr(tirx__writer *w, const tirx_expr *e) { expr(w->sb, e, true); }
static void w_elem(tirx__writer *w, const tirx_tensor *t, tirx_expr *const *index) {
  element(w->sb, t, index);
}
static const char *w_tensor(tirx__writer *w, const tirx_tensor *t) {
  (void)w;
  return t->decl.name;
}

static void native(tirx__strbuf *sb, const tirx__stmt *s) {
  tirx__writer w = {.sb = sb, .expr = w_expr, .elem = w_elem, .tensor = w_tensor};
  tirx__native_print(&w, s);
  tirx__sb_append(sb, "\n");
}

static void stmt(tirx__strbuf *sb, const tirx__stmt *s, int depth) {
  indent(sb, depth);
  switch (s->kind) {
  case TIRX__ST_FOR: {
    const tirx_expr *step = s->loop.step;
    tirx__sb_printf(sb, "for %s: %s in [", s->loop.var->name, dn(s->loop.var->dtype));
    expr(sb, s->loop.lo, true);
    tirx__sb_append(sb, ", ");
    expr(sb, s->loop.hi, true);
    tirx__sb_append(sb, ")");
    if (!(step->kind == TIRX__EX_INT && step->i == 1)) {
      tirx__sb_append(sb, " step ");
      expr(sb, step, true);
    }
    if (s->loop.kind == TIRX_LOOP_UNROLL) tirx__sb_append(sb, " unroll");
    tirx__sb_append(sb, " {\n");
    block(sb, &s->loop.body, depth + 1);
    indent(sb, depth);
    tirx__sb_append(sb, "}\n");
    break;
  }
  case TIRX__ST_IF:
    tirx__sb_append(sb, "if ");
    expr(sb, s->branch.cond, true);
    tirx__sb_append(sb, " {\n");
    block(sb, &s->branch.then, depth + 1);
    indent(sb, depth);
    if (s->branch.has_else) {
      tirx__sb_append(sb, "} else {\n");
      block(sb, &s->branch.orelse, depth + 1);
      indent(sb, depth);
    }
    tirx__sb_append(sb, "}\n");
    break;
  case TIRX__ST_LET:
  case TIRX__ST_VAR:
    tirx__sb_printf(sb, "%s %s: %s", s->kind == TIRX__ST_LET ? "let" : "var", s->var.decl->name,
                    dn(s->var.decl->dtype));
    if (s->var.value) {
      tirx__sb_append(sb, " = ");
      expr(sb, s->var.value, true);
    }
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__ST_ASSIGN:
    tirx__sb_printf(sb, "%s = ", s->var.decl->name);
    expr(sb, s->var.value, true);
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__ST_STORE:
  case TIRX__ST_ATOMIC_ADD:
    if (s->kind == TIRX__ST_ATOMIC_ADD) tirx__sb_append(sb, "atomic_add ");
    element(sb, s->store.dst.tensor, s->store.dst.index);
    tirx__sb_append(sb, s->kind == TIRX__ST_STORE ? " = " : " += ");
    expr(sb, s->store.value, true);
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__ST_SYNC: tirx__sb_append(sb, "sync_threads\n"); break;
  case TIRX__ST_SYNCWARP: tirx__sb_append(sb, "sync_warp\n"); break;
  case TIRX__ST_LOCAL:
    tirx__sb_printf(sb, "local %s: ", s->local.tensor->decl.name);
    tensor_type(sb, s->local.tensor);
    tirx__sb_append(sb, "\n");
    break;
  case TIRX__ST_PRIM: /* after lowering: the rule, then the native IR it wrote */
    tirx__sb_printf(sb, "prim #%d %s {\n", (int)s->prim.call->number,
                    s->prim.call->comment ? s->prim.call->comment : "(not lowered)");
    block(sb, &s->prim.body, depth + 1);
    indent(sb, depth);
    tirx__sb_append(sb, "}\n");
    break;
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

char *tirx__ir_print(const tirx__ir_kernel *k) {
  tirx__strbuf sb = {0};
  tirx__sb_printf(&sb, "kernel %s(", k->name);
  for (int i = 0; i < k->nparams; i++) {
    const tirx__decl *d = k->params[i];
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
    if (k->grid[i])
      expr(&sb, k->grid[i], true);
    else
      tirx__sb_append(&sb, "1");
  }
  tirx__sb_printf(&sb, ") block (%d, %d, %d) shared %lld", k->block[0], k->block[1], k->block[2],
                  (long long)k->shared_bytes);
  if (k->shared_extra) {
    tirx__sb_append(&sb, " + ");
    expr(&sb, k->shared_extra, false);
  }
  tirx__sb_append(&sb, "\n");
  for (int i = 0; i < k->nshared; i++) {
    const tirx_tensor *t = k->shared[i];
    tirx__sb_printf(&sb, "  shared %s: ", t->decl.name);
    tensor_type(&sb, t);
    tirx__sb_printf(&sb, " at %lld\n", (long long)t->smem_offset);
  }
  tirx__sb_append(&sb, "{\n");
  block(&sb, k->body, 1);
  tirx__sb_append(&sb, "}\n");
  return tirx__sb_finish(&sb);
}
