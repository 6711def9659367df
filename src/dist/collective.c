/*
 * Collectives: selection through the rule table (rules.c) with a report in the spirit of
 * tirx_kernel_dispatch_report, and execution on a communicator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../jit/jit.h"
#include "dist.h"

typedef struct rejection {
  const tirx__coll_rule *rule;
  int nreasons;
  const char *reasons[TIRX__COLL_MAX_REASONS];
} rejection;

static void reasons_text(tirx__strbuf *sb, const rejection *rej, int n, bool names) {
  for (int i = 0; i < n; i++) {
    if (i) tirx__sb_append(sb, "; ");
    if (names) tirx__sb_printf(sb, "%s: ", rej[i].rule->name);
    for (int k = 0; k < rej[i].nreasons; k++)
      tirx__sb_printf(sb, "%s%s", k ? "; " : "", rej[i].reasons[k]);
  }
}

static const char *args_text(char *buf, size_t cap, const tirx__coll_rule *rule,
                             const tirx__coll_args *a, tirx_partial partial) {
  size_t n = 0;
  if (strcmp(rule->name, "all_reduce") == 0 || strcmp(rule->name, "reduce_scatter") == 0)
    n = (size_t)snprintf(buf, cap, "op=%s ", tirx_partial_name(partial));
  if (strcmp(rule->name, "broadcast") == 0 && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, "root=%d ", a->root);
  if (n < cap) snprintf(buf + n, cap - n, "count=%lld", (long long)a->count);
  return buf;
}

static bool same_shape(const tirx_dtensor *a, const tirx_dtensor *b) {
  if (a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->shape[k] != b->shape[k]) return false;
  return true;
}

static char *shape_str(const tirx_dtensor *t) {
  tirx__strbuf sb = {0};
  tirx__sb_append(&sb, "(");
  for (int k = 0; k < t->rank; k++) tirx__sb_printf(&sb, "%s%lld", k ? "," : "", (long long)t->shape[k]);
  tirx__sb_append(&sb, ")");
  return tirx__sb_finish(&sb);
}

static const char *const RULE_NAMES =
    "all_reduce, reduce_scatter, all_gather, all_to_all, broadcast";

static tirx_status check_pair(const char *fn, const tirx_dtensor *src, const tirx_dtensor *dst) {
  if (src->dtype != dst->dtype)
    return tirx__error(TIRX_E_TYPE, "%s: src is %s, dst is %s; a collective keeps the dtype", fn,
                       tirx_dtype_name(src->dtype), tirx_dtype_name(dst->dtype));
  if (!same_shape(src, dst)) {
    char *a = shape_str(src), *b = shape_str(dst);
    tirx__error(TIRX_E_INVALID_ARG, "%s: src has global shape %s, dst %s; a collective keeps "
                                    "the global shape",
                fn, a ? a : "?", b ? b : "?");
    free(a);
    free(b);
    return TIRX_E_INVALID_ARG;
  }
  if (src->nranks != dst->nranks)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: src is on a mesh of %d ranks, dst of %d", fn,
                       src->nranks, dst->nranks);
  return TIRX_OK;
}

tirx_status tirx_collective_create(const tirx_dtensor *src, const tirx_dtensor *dst,
                                   const char *rule, tirx_collective **out) {
  static const char fn[] = "tirx_collective_create";
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!src) return tirx__error(TIRX_E_NULL_ARG, "%s: src is NULL", fn);
  if (!dst) return tirx__error(TIRX_E_NULL_ARG, "%s: dst is NULL", fn);
  tirx_status st = check_pair(fn, src, dst);
  if (st != TIRX_OK) return st;
  int nrules;
  const tirx__coll_rule *const *rules = tirx__coll_rules(&nrules);
  const tirx__coll_rule *forced = NULL;
  if (rule) {
    for (int i = 0; i < nrules; i++)
      if (strcmp(rules[i]->name, rule) == 0) forced = rules[i];
    if (!forced)
      return tirx__error(TIRX_E_INVALID_ARG, "%s: rule '%s' is not one of %s", fn, rule,
                         RULE_NAMES);
  }
  tirx_arena *a = tirx_arena_create();
  if (!a) return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  rejection rej[8];
  int nrej = 0;
  const tirx__coll_rule *chosen = NULL;
  tirx__coll_args args = {0};
  for (int i = 0; i < nrules && !chosen; i++) {
    if (forced && rules[i] != forced) continue;
    tirx__coll_ctx ctx = {.src = src, .dst = dst, .arena = a};
    ctx.args.dtype = tirx__nccl_dtype(src->dtype);
    rules[i]->check(&ctx);
    if (ctx.nreasons == 0) {
      chosen = rules[i];
      args = ctx.args;
      break;
    }
    rej[nrej].rule = rules[i];
    rej[nrej].nreasons = ctx.nreasons;
    memcpy(rej[nrej].reasons, ctx.reasons, sizeof ctx.reasons);
    nrej++;
  }
  char *ts = tirx_dtensor_str(src), *td = tirx_dtensor_str(dst);
  tirx__strbuf sb = {0};
  tirx__sb_append(&sb, "");
  if (!chosen) {
    if (forced)
      tirx__sb_printf(&sb, "rule %s cannot turn src %s into dst %s: ", forced->name,
                      ts ? ts : "?", td ? td : "?");
    else
      tirx__sb_printf(&sb, "no collective turns src %s into dst %s: ", ts ? ts : "?",
                      td ? td : "?");
    reasons_text(&sb, rej, nrej, !forced);
    char *msg = tirx__sb_finish(&sb);
    st = forced ? TIRX_E_INVALID_ARG : TIRX_E_NO_RULE;
    tirx__error(st, "%s: %s", fn, msg ? msg : "(out of memory)");
    free(msg);
    free(ts);
    free(td);
    tirx_arena_destroy(a);
    return st;
  }
  char targs[96];
  tirx__sb_printf(&sb, "%s\n  -> %s\n  = %s %s%s\n", ts ? ts : "?", td ? td : "?", chosen->name,
                  args_text(targs, sizeof targs, chosen, &args, src->partial),
                  forced ? " (forced)" : "");
  for (int i = 0; i < nrej; i++)
    for (int k = 0; k < rej[i].nreasons; k++)
      tirx__sb_printf(&sb, "  rejected %s: %s\n", rej[i].rule->name, rej[i].reasons[k]);
  free(ts);
  free(td);
  char *report = tirx__sb_finish(&sb);
  tirx_arena_destroy(a);
  tirx_collective *c = calloc(1, sizeof *c);
  if (!report || !c) {
    free(report);
    free(c);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  c->rule = chosen;
  c->args = args;
  c->report = report;
  c->src = tirx__dtensor_clone(src, fn);
  c->dst = c->src ? tirx__dtensor_clone(dst, fn) : NULL;
  if (!c->dst) {
    tirx_collective_destroy(c);
    return TIRX_E_NO_MEMORY;
  }
  *out = c;
  return TIRX_OK;
}

void tirx_collective_destroy(tirx_collective *c) {
  if (!c) return;
  tirx_dtensor_destroy(c->src);
  tirx_dtensor_destroy(c->dst);
  free(c->report);
  free(c);
}

const char *tirx_collective_rule(const tirx_collective *c) { return c ? c->rule->name : NULL; }

const char *tirx_collective_report(const tirx_collective *c) { return c ? c->report : ""; }

/* tirx_dtensor_check, re-worded for tirx_collective_run: "tirx_collective_run: src: ...". */
static tirx_status check_buffer(const char *fn, const char *name, const tirx_dtensor *t,
                                int rank, const tirx_tensor_arg *buf) {
  tirx_status st = tirx_dtensor_check(t, rank, buf);
  if (st == TIRX_OK) return TIRX_OK;
  static const char prefix[] = "tirx_dtensor_check: ";
  const char *msg = tirx_last_error();
  if (strncmp(msg, prefix, sizeof prefix - 1) == 0) msg += sizeof prefix - 1;
  char copy[TIRX__ERROR_MAX];
  snprintf(copy, sizeof copy, "%s", msg);
  return tirx__error(st, "%s: %s: %s", fn, name, copy);
}

tirx_status tirx_collective_run(const tirx_collective *c, tirx_comm *comm,
                                const tirx_tensor_arg *src, const tirx_tensor_arg *dst,
                                void *stream) {
  static const char fn[] = "tirx_collective_run";
  if (!c) return tirx__error(TIRX_E_NULL_ARG, "%s: c is NULL", fn);
  if (!comm) return tirx__error(TIRX_E_NULL_ARG, "%s: comm is NULL", fn);
  if (comm->size != c->src->nranks)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: the communicator has %d ranks, the tensors a mesh of %d", fn,
                       comm->size, c->src->nranks);
  tirx_status st = check_buffer(fn, "src", c->src, comm->rank, src);
  if (st == TIRX_OK) st = check_buffer(fn, "dst", c->dst, comm->rank, dst);
  if (st != TIRX_OK) return st;
  tirx__comm_guard g;
  st = tirx__comm_enter(comm, fn, &g);
  if (st != TIRX_OK) return st;
  /* Every rule's dst is on every rank (so dst was checked non-NULL); src may be absent. */
  const void *sp = src && tirx_dtensor_on_rank(c->src, comm->rank) ? src->data : NULL;
  void *dp = dst ? dst->data : NULL;
  tirx__nccl_result r = c->rule->run(comm->nccl, comm->comm, &c->args, comm->size,
                                     tirx_dtype_size(c->src->dtype), sp, dp, stream);
  st = tirx__comm_settle(comm, fn, c->rule->call, r);
  tirx__comm_leave(comm, &g);
  return st;
}
