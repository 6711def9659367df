/*
 * Dispatch: validating a call, forming its key, walking the registry, checking the data
 * constraints every rule declares, and choosing the shape (dispatch.h has the contract).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/layout_internal.h"
#include "dispatch.h"

static const char FN[] = "tirx_dispatch";

/* ---- Names ----------------------------------------------------------------------------------- */

/* Per primitive: its name and its operands' names, dst first. */
static const struct {
  const char *name;
  int count;
  const char *operands[TIRX__MAX_OPERANDS];
} PRIMS[TIRX__PRIM_COUNT] = {
    [TIRX__PRIM_COPY] = {"copy", 2, {"dst", "src"}},
    [TIRX__PRIM_UNARY] = {"unary", 2, {"dst", "a"}},
    [TIRX__PRIM_BINARY] = {"binary", 3, {"dst", "a", "b"}},
    [TIRX__PRIM_TERNARY] = {"ternary", 4, {"dst", "a", "b", "c"}},
    [TIRX__PRIM_CAST] = {"cast", 2, {"dst", "src"}},
    [TIRX__PRIM_FILL] = {"fill", 2, {"dst", "value"}},
    [TIRX__PRIM_SELECT] = {"select", 4, {"dst", "cond", "a", "b"}},
    [TIRX__PRIM_REDUCE] = {"reduce", 2, {"dst", "src"}},
    [TIRX__PRIM_COPY_ASYNC] = {"copy_async", 2, {"dst", "src"}},
    [TIRX__PRIM_GEMM] = {"gemm", 3, {"d", "a", "b"}},
    [TIRX__PRIM_GEMM_ASYNC] = {"gemm_async", 3, {"d", "a", "b"}},
};

static const char *const ROLES[TIRX__ROLE_COUNT] = {"global", "shared", "local", "scalar"};

static const char *const OPS[TIRX__PRIM_OP_COUNT] = {
#define TIRX__PRIM_OP_NAME_(name, text) text,
    TIRX__PRIM_OP_MAP(TIRX__PRIM_OP_NAME_)
#undef TIRX__PRIM_OP_NAME_
};

static const char *const HINTS[TIRX__HINT_COUNT] = {"", ".cs", ".lu", ".nc"};

const char *tirx__prim_name(tirx__prim p) {
  return (unsigned)p < TIRX__PRIM_COUNT ? PRIMS[p].name : NULL;
}
int tirx__prim_operand_count(tirx__prim p) {
  return (unsigned)p < TIRX__PRIM_COUNT ? PRIMS[p].count : 0;
}
const char *tirx__prim_operand_name(tirx__prim p, int i) {
  if ((unsigned)p >= TIRX__PRIM_COUNT || i < 0 || i >= PRIMS[p].count) return NULL;
  return PRIMS[p].operands[i];
}
const char *tirx__role_name(tirx__role r) {
  return (unsigned)r < TIRX__ROLE_COUNT ? ROLES[r] : NULL;
}
const char *tirx__prim_op_name(tirx__prim_op op) {
  return (unsigned)op < TIRX__PRIM_OP_COUNT ? OPS[op] : NULL;
}
const char *tirx__hint_name(tirx__hint h) {
  return (unsigned)h < TIRX__HINT_COUNT ? HINTS[h] : NULL;
}

/* ---- Small helpers --------------------------------------------------------------------------- */

static char *arena_printf(tirx_arena *a, const char *fmt, ...) TIRX_PRINTF(2, 3);
static char *arena_printf(tirx_arena *a, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  if ((size_t)n < sizeof small) return tirx__arena_strdup(a, small, FN);
  char *s = tirx__arena_alloc(a, (size_t)n + 1, FN);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

static char *sb_arena(tirx_arena *a, tirx__strbuf *sb) {
  char *s = tirx__sb_finish(sb);
  if (!s) return NULL;
  char *copy = tirx__arena_strdup(a, s, FN);
  free(s);
  return copy;
}

static bool is_region(tirx__role r) { return r != TIRX__ROLE_SCALAR; }

static void shape_text(tirx__strbuf *sb, const tirx_layout *l) {
  int64_t shape[TIRX_LAYOUT_MAX_RANK];
  int rank = tirx_layout_rank(l);
  tirx_layout_shape(l, shape, TIRX_LAYOUT_MAX_RANK);
  tirx__sb_append(sb, "(");
  for (int k = 0; k < rank; k++) tirx__sb_printf(sb, "%s%lld", k ? "," : "", (long long)shape[k]);
  tirx__sb_append(sb, ")");
}

/* ---- Rule reasons ---------------------------------------------------------------------------- */

void tirx__reason(tirx__rule_ctx *ctx, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (ctx->nreasons < TIRX__MAX_REASONS) {
    const char *s = tirx__arena_strdup(ctx->arena, buf, FN);
    ctx->reasons[ctx->nreasons++] = s ? s : "(out of memory)";
  } else {
    ctx->nreasons++; /* counted; rendered as "... and N more" by reasons_of */
  }
}

const char *tirx__rule_operand_name(const tirx__rule_ctx *ctx, int i) {
  return tirx__prim_operand_name(ctx->call->prim, i);
}

/* ---- Operand views --------------------------------------------------------------------------- */

/*
 * One thread's slots of a local layout, on m: iters and replicas on reg move to m, those on m
 * stay, those on thread axes become broadcasts (stride 0) or are dropped. An array that uses
 * both reg and m has two independent slot spaces: NULL (the callers treat it as width 1).
 */
static const tirx_layout *local_slots(tirx_arena *a, const tirx_layout *l) {
  bool uses_reg = false, uses_m = false;
  for (int i = 0; i < l->nd; i++) {
    if (l->d[i].stride == 0 || l->d[i].extent == 1) continue;
    uses_reg |= l->d[i].axis == TIRX_AXIS_REG;
    uses_m |= l->d[i].axis == TIRX_AXIS_M;
  }
  if (uses_reg && uses_m) return NULL;
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS], r[TIRX_LAYOUT_MAX_ITERS];
  int nr = 0;
  for (int i = 0; i < l->nd; i++) {
    bool slot = l->d[i].axis == TIRX_AXIS_REG || l->d[i].axis == TIRX_AXIS_M;
    d[i] = (tirx_iter){l->d[i].extent, slot ? l->d[i].stride : 0, TIRX_AXIS_M};
  }
  for (int i = 0; i < l->nr; i++)
    if (l->r[i].axis == TIRX_AXIS_REG || l->r[i].axis == TIRX_AXIS_M)
      r[nr++] = (tirx_iter){l->r[i].extent, l->r[i].stride, TIRX_AXIS_M};
  tirx_axis_offset o = {TIRX_AXIS_M,
                        tirx_layout_offset(l, TIRX_AXIS_M) + tirx_layout_offset(l, TIRX_AXIS_REG)};
  return tirx__layout_make(a, FN, l->nd, d, nr, r, 1, &o, l->rank, l->dim_begin, 0, 0);
}

const tirx_layout *tirx__operand_slots(tirx__rule_ctx *ctx, int i) {
  const tirx__operand *op = &ctx->call->operands[i];
  if (!op->layout) return NULL;
  if (op->role == TIRX__ROLE_LOCAL) return local_slots(ctx->arena, op->layout);
  return tirx_layout_storage_view(ctx->arena, op->layout, TIRX__AXIS_BIT(TIRX_AXIS_M));
}

int64_t tirx__operand_vector_width(tirx__rule_ctx *ctx, int i, int max_bytes) {
  const tirx__operand *op = &ctx->call->operands[i];
  if (!is_region(op->role)) return 0;
  int bytes = tirx_dtype_size(op->dtype);
  if (bytes < 1 || max_bytes < bytes) return 1;
  const tirx_layout *s = tirx__operand_slots(ctx, i);
  if (!s) return 1;
  int64_t v = tirx_layout_vector_width(s, bytes, max_bytes);
  return v < 1 ? 1 : v;
}

const char *tirx__operand_vector_why(tirx__rule_ctx *ctx, int i) {
  const tirx__operand *op = &ctx->call->operands[i];
  bool local = op->role == TIRX__ROLE_LOCAL;
  const tirx_layout *s = tirx__operand_slots(ctx, i);
  if (!s) return local ? "local layout uses both reg and m" : "no storage view";
  int64_t run = tirx_layout_contiguous(s);
  if (run == 0)
    return local ? "innermost elements are not in consecutive registers"
                 : "innermost run not contiguous on m";
  if (run == 1) return "innermost contiguous run is 1 element";
  if (run % 2)
    return arena_printf(ctx->arena, "innermost contiguous run of %lld elements is odd",
                        (long long)run);
  return arena_printf(ctx->arena,
                      "innermost run of %lld contiguous elements is not 2-element aligned",
                      (long long)run);
}

const tirx_layout *tirx__canon_of(tirx__rule_ctx *ctx, const tirx_layout *l) {
  return l ? tirx_layout_canonicalize(ctx->arena, l) : NULL;
}

/* ---- Validation ------------------------------------------------------------------------------ */

static tirx_status validate_reduce(const tirx__call *c) {
  const tirx_layout *dst = c->operands[0].layout, *src = c->operands[1].layout;
  int rank = tirx_layout_rank(src), drank = tirx_layout_rank(dst);
  uint32_t axes = c->config.reduce_axes;
  if (axes == 0 || (rank < 32 && axes >> rank))
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: reduce axes 0x%x are not a non-empty subset of src's %d dims", FN,
                       (unsigned)axes, rank);
  int64_t ss[TIRX_LAYOUT_MAX_RANK], ds[TIRX_LAYOUT_MAX_RANK];
  tirx_layout_shape(src, ss, TIRX_LAYOUT_MAX_RANK);
  tirx_layout_shape(dst, ds, TIRX_LAYOUT_MAX_RANK);
  bool ok = true;
  if (drank == rank) { /* kept dims: reduced ones have extent 1 */
    for (int k = 0; k < rank; k++) ok &= ds[k] == (axes >> k & 1 ? 1 : ss[k]);
  } else if (drank == rank - __builtin_popcount(axes)) { /* squeezed */
    for (int k = 0, j = 0; k < rank; k++)
      if (!(axes >> k & 1)) ok &= ds[j++] == ss[k];
  } else {
    ok = false;
  }
  if (!ok) {
    tirx__strbuf sb = {0};
    tirx__sb_append(&sb, "dst shape ");
    shape_text(&sb, dst);
    tirx__sb_append(&sb, " does not match src shape ");
    shape_text(&sb, src);
    tirx__sb_printf(&sb, " reduced over axes 0x%x", (unsigned)axes);
    char *msg = tirx__sb_finish(&sb);
    tirx__error(TIRX_E_INVALID_ARG, "%s: %s", FN, msg ? msg : "(out of memory)");
    free(msg);
    return TIRX_E_INVALID_ARG;
  }
  return TIRX_OK;
}

static tirx_status validate(const tirx__call *c) {
  if ((unsigned)c->prim >= TIRX__PRIM_COUNT)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: primitive %d is out of range", FN, (int)c->prim);
  const char *pn = PRIMS[c->prim].name;
  if (c->noperands != PRIMS[c->prim].count)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s takes %d operands, got %d", FN, pn,
                       PRIMS[c->prim].count, c->noperands);
  if (!c->scope) return tirx__error(TIRX_E_NULL_ARG, "%s: scope is NULL", FN);
  if (c->arch < 10)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: arch %d is not a compute capability (80, 90)", FN,
                       c->arch);
  if ((unsigned)c->config.op >= TIRX__PRIM_OP_COUNT || (unsigned)c->config.hint >= TIRX__HINT_COUNT)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: config op %d or hint %d is out of range", FN,
                       (int)c->config.op, (int)c->config.hint);
  for (int i = 0; i < c->noperands; i++) {
    const tirx__operand *op = &c->operands[i];
    const char *on = PRIMS[c->prim].operands[i];
    if ((unsigned)op->role >= TIRX__ROLE_COUNT)
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s role %d is out of range", FN, on,
                         (int)op->role);
    if ((unsigned)op->dtype >= TIRX_DTYPE_COUNT)
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s dtype %d is out of range", FN, on,
                         (int)op->dtype);
    if (i == 0 && !is_region(op->role))
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: dst is a scalar: the destination must be a region", FN);
    if (!is_region(op->role)) continue;
    if (!op->layout)
      return tirx__error(TIRX_E_NULL_ARG, "%s: %s (%s) has no layout", FN, on, ROLES[op->role]);
    if (tirx_layout_rank(op->layout) < 1)
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: %s layout is not grouped to the region's logical shape", FN, on);
  }
  bool region_src = c->prim == TIRX__PRIM_COPY || c->prim == TIRX__PRIM_COPY_ASYNC ||
                    c->prim == TIRX__PRIM_CAST || c->prim == TIRX__PRIM_REDUCE;
  if (region_src && !is_region(c->operands[1].role))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: src of %s is a scalar: the source must be a region",
                       FN, pn);
  if (c->prim == TIRX__PRIM_REDUCE) return validate_reduce(c);
  /* gemm operands have shapes (M,N), (M,K), (K,N): their rules will check them. */
  if (c->prim == TIRX__PRIM_GEMM || c->prim == TIRX__PRIM_GEMM_ASYNC) return TIRX_OK;
  /* Every other primitive is elementwise over one logical shape. */
  int64_t ds[TIRX_LAYOUT_MAX_RANK], s[TIRX_LAYOUT_MAX_RANK];
  const tirx_layout *dst = c->operands[0].layout;
  int drank = tirx_layout_rank(dst);
  tirx_layout_shape(dst, ds, TIRX_LAYOUT_MAX_RANK);
  for (int i = 1; i < c->noperands; i++) {
    const tirx_layout *l = c->operands[i].layout;
    if (!is_region(c->operands[i].role)) continue;
    tirx_layout_shape(l, s, TIRX_LAYOUT_MAX_RANK);
    if (tirx_layout_rank(l) != drank || memcmp(s, ds, (size_t)drank * sizeof *s) != 0) {
      tirx__strbuf sb = {0};
      tirx__sb_printf(&sb, "%s shape ", PRIMS[c->prim].operands[i]);
      shape_text(&sb, l);
      tirx__sb_append(&sb, " differs from dst shape ");
      shape_text(&sb, dst);
      char *msg = tirx__sb_finish(&sb);
      tirx__error(TIRX_E_INVALID_ARG, "%s: %s", FN, msg ? msg : "(out of memory)");
      free(msg);
      return TIRX_E_INVALID_ARG;
    }
  }
  if ((c->prim == TIRX__PRIM_COPY || c->prim == TIRX__PRIM_COPY_ASYNC) &&
      c->operands[0].dtype != c->operands[1].dtype)
    return tirx__error(TIRX_E_TYPE, "%s: %s from %s to %s: use cast", FN, pn,
                       tirx_dtype_name(c->operands[1].dtype),
                       tirx_dtype_name(c->operands[0].dtype));
  return TIRX_OK;
}

/* ---- Key ------------------------------------------------------------------------------------- */

static void key_text(tirx__strbuf *sb, const tirx__call *c) {
  const char *pn = tirx__prim_name(c->prim);
  tirx__sb_printf(sb, "%s(arch=sm_%d, roles=", pn ? pn : "?", c->arch);
  int n = c->noperands < 0                    ? 0
          : c->noperands > TIRX__MAX_OPERANDS ? TIRX__MAX_OPERANDS
                                              : c->noperands;
  for (int i = 1; i < n; i++) {
    const char *rn = tirx__role_name(c->operands[i].role);
    tirx__sb_printf(sb, "%s%s", i > 1 ? "," : "", rn ? rn : "?");
  }
  const char *dn = n > 0 ? tirx__role_name(c->operands[0].role) : NULL;
  tirx__sb_printf(sb, "%s%s", n > 1 ? "->" : "", dn ? dn : "?");
  const char *tn = c->scope ? tirx_team_name(tirx_scope_team_kind(c->scope)) : NULL;
  tirx__sb_printf(sb, ", team=%s", tn ? tn : "?");
  if (c->config.family) tirx__sb_printf(sb, ", family=%s", c->config.family);
  tirx__sb_append(sb, ")");
}

const char *tirx__dispatch_key_str(tirx_arena *a, const tirx__call *call) {
  if (!a || !call) return NULL;
  tirx__strbuf sb = {0};
  key_text(&sb, call);
  return sb_arena(a, &sb);
}

/* ---- Matching and the data constraints ------------------------------------------------------- */

int tirx__rule_min_arch(const tirx__rule *rule) {
  return tirx__features_min_arch(rule->needs.features);
}

static bool on_axis(const tirx_layout *l, tirx_axis ax) {
  for (int i = 0; i < l->nd; i++)
    if (l->d[i].axis == ax && l->d[i].extent > 1 && l->d[i].stride != 0) return true;
  for (int i = 0; i < l->nr; i++)
    if (l->r[i].axis == ax && l->r[i].extent > 1 && l->r[i].stride != 0) return true;
  for (int i = 0; i < l->no; i++)
    if (l->o[i].axis == ax) return true;
  return false;
}

tirx__features tirx__call_features(const tirx__call *call) {
  tirx__features fs = 0;
  for (int i = 0; call && i < call->noperands && i < TIRX__MAX_OPERANDS; i++)
    if (call->operands[i].layout && on_axis(call->operands[i].layout, TIRX_AXIS_CBX))
      fs |= TIRX__FEAT(CLUSTER);
  return fs;
}

bool tirx__rule_matches(const tirx__rule *rule, tirx__prim prim, int arch, int noperands,
                        const tirx__role *roles, tirx_team team) {
  if ((unsigned)prim >= TIRX__PRIM_COUNT || !(rule->prims & TIRX__BIT(prim))) return false;
  if (arch < tirx__rule_min_arch(rule)) return false;
  if ((unsigned)team > TIRX_TEAM_CLUSTER || !(rule->teams & TIRX__BIT(team))) return false;
  for (int i = 1; i < noperands; i++)
    if (!(rule->flows & TIRX__FLOW(roles[i], roles[0]))) return false;
  for (int i = 0; i < noperands && i < TIRX__MAX_OPERANDS; i++)
    if (rule->roles[i] && !(rule->roles[i] & TIRX__BIT(roles[i]))) return false;
  return true;
}

static void dtype_list(char *buf, size_t cap, uint32_t mask) {
  size_t n = 0;
  buf[0] = '\0';
  for (int t = 0; t < TIRX_DTYPE_COUNT && n < cap; t++)
    if (mask >> t & 1)
      n +=
          (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", tirx_dtype_name((tirx_dtype)t));
}

/* The number of threads a complete team of kind k has, where that is fixed; 0 otherwise. */
static int64_t full_team_size(tirx_team k) {
  return k == TIRX_TEAM_THREAD ? 1 : k == TIRX_TEAM_WARP ? 32 : k == TIRX_TEAM_WARPGROUP ? 128 : 0;
}

static void check_needs(tirx__rule_ctx *ctx) {
  const tirx__call *c = ctx->call;
  const tirx__needs *n = &ctx->rule->needs;
  for (int i = 0; i < c->noperands; i++) {
    const tirx__operand *op = &c->operands[i];
    if (!is_region(op->role)) continue;
    if (n->dtypes && !(n->dtypes & TIRX__BIT(op->dtype))) {
      char list[256];
      dtype_list(list, sizeof list, n->dtypes);
      tirx__reason(ctx, "%s dtype %s is not one of %s", tirx__rule_operand_name(ctx, i),
                   tirx_dtype_name(op->dtype), list);
    }
    if (n->rank && tirx_layout_rank(op->layout) != n->rank)
      tirx__reason(ctx, "%s has rank %d: the instruction needs rank %d",
                   tirx__rule_operand_name(ctx, i), tirx_layout_rank(op->layout), n->rank);
  }
  tirx_team team = tirx_scope_team_kind(c->scope);
  int64_t full = full_team_size(team), have = tirx_scope_team_size(c->scope);
  if (n->full_team && full && have != full)
    tirx__reason(ctx, "the %s team has %lld active threads: the instruction needs all %lld",
                 tirx_team_name(team), (long long)have, (long long)full);
  if (c->config.hint != TIRX__HINT_NONE) {
    bool global = false;
    for (int i = 0; i < c->noperands; i++) global |= c->operands[i].role == TIRX__ROLE_GLOBAL;
    if (!n->hints)
      tirx__reason(ctx, "cache hint %s is not supported", HINTS[c->config.hint]);
    else if (!global)
      tirx__reason(ctx, "cache hint %s needs a global operand", HINTS[c->config.hint]);
  }
  if (n->ops && !(n->ops >> c->config.op & 1))
    tirx__reason(ctx, "op %s is not supported", OPS[c->config.op]);
  int lack = tirx__features_missing(tirx__arch_features(c->arch, c->generic ? 0 : 'a'),
                                    n->features);
  if (lack >= 0)
    tirx__reason(ctx, "needs %s (%s): the target is sm_%d%s",
                 tirx__feature_name((tirx__feature)lack),
                 tirx__feature_where_only((tirx__feature)lack), c->arch,
                 c->generic ? "" : c->arch >= 90 ? "a" : "");
}

/* Runs the data constraints and then the rule's own check. True when legal. */
static bool check_rule(tirx__rule_ctx *ctx) {
  check_needs(ctx);
  if (ctx->nreasons == 0 && ctx->rule->check) ctx->rule->check(ctx);
  return ctx->nreasons == 0;
}

/* The reasons of a rejected rule, copied into the arena ("... and N more" past the cap). */
static bool keep_rejection(tirx__rule_ctx *ctx, tirx__rejection *rej) {
  int n = ctx->nreasons > TIRX__MAX_REASONS ? TIRX__MAX_REASONS : ctx->nreasons;
  rej->rule = ctx->rule;
  rej->nreasons = n;
  rej->reasons = tirx__arena_array(ctx->arena, (size_t)(n ? n : 1), sizeof *rej->reasons, FN);
  if (!rej->reasons) return false;
  for (int i = 0; i < n; i++) rej->reasons[i] = ctx->reasons[i];
  if (ctx->nreasons > n) {
    const char *more =
        arena_printf(ctx->arena, "%s (and %d more)", ctx->reasons[n - 1], ctx->nreasons - n);
    if (more) rej->reasons[n - 1] = more;
  }
  return true;
}

/* "rule: reason; reason; rule: reason", or the reasons alone without names. */
static void reasons_text(tirx__strbuf *sb, const tirx__rejection *rej, int n, bool names) {
  for (int i = 0; i < n; i++) {
    if (i) tirx__sb_append(sb, "; ");
    if (names) tirx__sb_printf(sb, "%s: ", rej[i].rule->name);
    for (int k = 0; k < rej[i].nreasons; k++)
      tirx__sb_printf(sb, "%s%s", k ? "; " : "", rej[i].reasons[k]);
  }
}

/* ---- Shapes ---------------------------------------------------------------------------------- */

char *tirx__shape_str(const tirx__rule *rule, const tirx__shape *shape) {
  tirx__strbuf sb = {0};
  for (int k = 0; k < TIRX__SHAPE_DIMS && rule->shape_dims[k]; k++)
    tirx__sb_printf(&sb, "%s%s=%lld", k ? "," : "", rule->shape_dims[k], (long long)shape->v[k]);
  return tirx__sb_finish(&sb);
}

static bool shape_set(const tirx__shape *s) {
  for (int k = 0; k < TIRX__SHAPE_DIMS; k++)
    if (s->v[k]) return true;
  return false;
}

/* A requested shape matches a legal one on every dimension it sets. */
static bool shape_fits(const tirx__shape *want, const tirx__shape *legal) {
  for (int k = 0; k < TIRX__SHAPE_DIMS; k++)
    if (want->v[k] && want->v[k] != legal->v[k]) return false;
  return true;
}

static tirx_status choose_shape(tirx__rule_ctx *ctx, tirx__shape *out) {
  tirx__shape legal[TIRX__MAX_SHAPES];
  int n = 1;
  if (ctx->rule->shapes) {
    n = ctx->rule->shapes(ctx, legal, TIRX__MAX_SHAPES);
  } else {
    memset(legal, 0, sizeof legal[0]);
    legal[0].v[0] = 1;
  }
  if (n < 1)
    return tirx__error(TIRX_E_INTERNAL, "%s: rule %s is legal but lists no shape", FN,
                       ctx->rule->name);
  const tirx__shape *want = &ctx->call->config.shape;
  if (!shape_set(want)) {
    *out = legal[0];
    return TIRX_OK;
  }
  for (int i = 0; i < n; i++)
    if (shape_fits(want, &legal[i])) {
      *out = legal[i];
      return TIRX_OK;
    }
  tirx__strbuf sb = {0};
  char *w = tirx__shape_str(ctx->rule, want);
  tirx__sb_printf(&sb, "shape %s is not legal for %s: legal shapes are ", w ? w : "?",
                  ctx->rule->name);
  free(w);
  for (int i = 0; i < n; i++) {
    char *s = tirx__shape_str(ctx->rule, &legal[i]);
    tirx__sb_printf(&sb, "%s%s", i ? ", " : "", s ? s : "?");
    free(s);
  }
  char *msg = tirx__sb_finish(&sb);
  tirx__error(TIRX_E_INVALID_ARG, "%s: %s", FN, msg ? msg : "(out of memory)");
  free(msg);
  return TIRX_E_INVALID_ARG;
}

/* ---- Dispatch -------------------------------------------------------------------------------- */

tirx_status tirx__dispatch(tirx_arena *a, const tirx__call *call, tirx__dispatch_result *out) {
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", FN);
  memset(out, 0, sizeof *out);
  if (!a) return tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", FN);
  if (!call) return tirx__error(TIRX_E_NULL_ARG, "%s: call is NULL", FN);
  out->key = tirx__dispatch_key_str(a, call);
  if (!out->key) return TIRX_E_NO_MEMORY;
  if (call->where && !(out->where = tirx__arena_strdup(a, call->where, FN)))
    return TIRX_E_NO_MEMORY;
  tirx_status st = validate(call);
  if (st != TIRX_OK) return st;

  int count = 0;
  const tirx__rule *const *table = tirx__registry(&count);
  tirx__role roles[TIRX__MAX_OPERANDS];
  for (int i = 0; i < call->noperands; i++) roles[i] = call->operands[i].role;
  tirx_team team = tirx_scope_team_kind(call->scope);
  const char *family = call->config.family;

  out->rejected = tirx__arena_array(a, (size_t)count, sizeof *out->rejected, FN);
  if (!out->rejected) return TIRX_E_NO_MEMORY;
  int candidates = 0, newer = 0; /* newer: rules of the key that need a newer arch */
  const tirx__rule *need_newer[TIRX__MAX_REASONS];
  for (int i = 0; i < count; i++) {
    const tirx__rule *rule = table[i];
    if (!tirx__rule_matches(rule, call->prim, INT_MAX, call->noperands, roles, team)) continue;
    if (family ? strcmp(family, rule->family) != 0 : rule->kind == TIRX__RULE_EXPLICIT) continue;
    if (call->arch < tirx__rule_min_arch(rule)) {
      if (newer < TIRX__MAX_REASONS) need_newer[newer++] = rule;
      continue;
    }
    candidates++;
    tirx__rule_ctx ctx = {.call = call, .rule = rule, .arena = a};
    if (check_rule(&ctx)) {
      st = choose_shape(&ctx, &out->shape);
      if (st != TIRX_OK) return st;
      out->rule = rule;
      out->forced = family != NULL;
      out->fallback = out->nrejected > 0;
      return TIRX_OK;
    }
    if (!keep_rejection(&ctx, &out->rejected[out->nrejected++])) return TIRX_E_NO_MEMORY;
    if (family) break; /* a family names one rule per key */
  }
  tirx__strbuf sb = {0};
  if (candidates == 0)
    tirx__sb_printf(&sb, "no rule for %s", out->key);
  else if (family)
    tirx__sb_printf(&sb, "family '%s' is not legal for %s: ", family, out->key);
  else
    tirx__sb_printf(&sb, "no legal rule for %s: ", out->key);
  reasons_text(&sb, out->rejected, out->nrejected, family == NULL);
  /* The rules a newer target would have tried. */
  for (int i = 0; i < newer; i++)
    tirx__sb_printf(&sb, "%s%s: needs sm_%d or newer", i || candidates ? "; " : ": ",
                    need_newer[i]->name, tirx__rule_min_arch(need_newer[i]));
  char *msg = tirx__sb_finish(&sb);
  st = family && candidates ? TIRX_E_INVALID_ARG : TIRX_E_NO_RULE;
  tirx__error(st, "%s: %s", FN, msg ? msg : "(out of memory)");
  free(msg);
  return st;
}

/* ---- Helpers for rule files ------------------------------------------------------------------ */

int64_t tirx__common_vector_width(tirx__rule_ctx *ctx, int max_bytes, int64_t min_elems) {
  const tirx__call *c = ctx->call;
  int64_t width[TIRX__MAX_OPERANDS], common = 0;
  for (int i = 0; i < c->noperands; i++) {
    width[i] = tirx__operand_vector_width(ctx, i, max_bytes);
    if (width[i] && (common == 0 || width[i] < common)) common = width[i];
  }
  if (common == 0) {
    int bytes = tirx_dtype_size(c->operands[0].dtype);
    common = bytes > 0 ? max_bytes / bytes : 1;
  }
  if (common >= min_elems) return common;
  for (int i = 0; i < c->noperands; i++)
    if (width[i] && width[i] < min_elems)
      tirx__reason(ctx, "%s vector width %lld < %lld elements: %s", tirx__rule_operand_name(ctx, i),
                   (long long)width[i], (long long)min_elems, tirx__operand_vector_why(ctx, i));
  return common;
}

int tirx__reduced_iters(tirx__rule_ctx *ctx, tirx__reduced_iter *out, int cap) {
  const tirx_layout *src = tirx__canon_of(ctx, ctx->call->operands[1].layout);
  if (!src) return 0;
  int n = 0;
  for (int k = 0; k < src->rank; k++) {
    if (!(ctx->call->config.reduce_axes >> k & 1)) continue;
    for (int i = src->dim_begin[k]; i < src->dim_begin[k + 1] && n < cap; i++)
      if (src->d[i].extent > 1) out[n++] = (tirx__reduced_iter){k, src->d[i]};
  }
  return n;
}

const char *tirx__iter_text(char *buf, size_t cap, const tirx_iter *it) {
  const char *ax = tirx_axis_name(it->axis);
  snprintf(buf, cap, "(%lld):(%lld@%s)", (long long)it->extent, (long long)it->stride,
           ax ? ax : "?");
  return buf;
}
