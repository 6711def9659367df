/*
 * Native statements (native.h): the generic ops of the public builder API, the format
 * interpreter, and printing and emitting through an op's descriptor. Both the IR printer and
 * codegen write through a tirx__writer, so an op's two spellings sit side by side. The ops
 * only an instruction family's lowering emits are in that family's file.
 */
#include <stddef.h>
#include <string.h>

#include "ir.h"

static void put(tirx__writer *w, const char *s) { tirx__sb_append(w->sb, s); }

/* The register operands ops collected are fenced after the wait, so that no read of them
 * moves above it (CUTLASS: warpgroup_wait; warpgroup_fence_operand). */
static void emit_wgmma_wait(tirx__writer *w, const tirx__stmt *s) {
  tirx__sb_printf(w->sb, "tirx_wgmma_wait<%d>();", (int)((const tirx__nv_imm *)s->native.p)->n);
  if (w->wait_fences) w->wait_fences(w);
}

static void emit_prefetch(tirx__writer *w, const tirx__stmt *s) {
  const tirx_tensor *t = ((const tirx__nv_tensor *)s->native.p)->tensor;
  int n = 0;
  for (const char *m; (m = w->tmap(w, t, -1, n)) != NULL;)
    tirx__sb_printf(w->sb, "%stirx_tmap_prefetch(&%s);", n++ ? " " : "", m);
  if (!n) tirx__sb_printf(w->sb, "/* %s has no tensor map to prefetch */", t->decl.name);
}

/* ---- the generic ops ---- */

#define OP(id, nm, hp, fs, sec, T, pf, pfn, ef, efn, ...)                                  \
  const tirx__native_op tirx__nv_##id = {.name = nm, .helper = hp, .need = TIRX__NEED(fs),         \
                                         .section = sec, .size = sizeof(T), .ops = {__VA_ARGS__}, \
                                         .print_fmt = pf, .print = pfn, .emit_fmt = ef,          \
                                         .emit = efn};
#define MBAR tirx__nv_mbar
#define IMMS tirx__nv_imm
#define NBAR tirx__nv_named_bar
#define F TIRX__FEAT
#define S TIRX__PRE_SYNC
#define B TIRX__PRE_BULK
#define C TIRX__PRE_CP_ASYNC

/* mbarriers, fences, clusters (builder/sync.c) */
OP(mbar_init, "mbarrier_init", "tirx_mbar_init", F(MBARRIER), S, MBAR, "$n($0, $1)", NULL,
   "$h($0, $1);", NULL, TIRX__ELEM(MBAR, bar), TIRX__EXPR(MBAR, value))
OP(mbar_arrive, "mbarrier_arrive", "tirx_mbar_arrive", F(MBARRIER), S, MBAR, "$n($0)", NULL,
   "$h($0);", NULL, TIRX__ELEM(MBAR, bar))
OP(mbar_arrive_cluster, "mbarrier_arrive_cluster", "tirx_mbar_arrive_cluster", F(MBARRIER) | F(CLUSTER), S,
   MBAR, "$n($0, $1)", NULL, "$h($0, $1);", NULL, TIRX__ELEM(MBAR, bar), TIRX__EXPR(MBAR, value))
OP(mbar_expect_tx, "mbarrier_expect_tx", "tirx_mbar_expect_tx", F(MBARRIER), S, MBAR,
   "$n($0, $1)", NULL, "$h($0, $1);", NULL, TIRX__ELEM(MBAR, bar), TIRX__EXPR(MBAR, value))
OP(mbar_wait, "mbarrier_wait", "tirx_mbar_wait", F(MBARRIER), S, MBAR, "$n($0, $1)", NULL,
   "$h($0, $1);", NULL, TIRX__ELEM(MBAR, bar), TIRX__EXPR(MBAR, value))
OP(fence_proxy_async, "fence_proxy_async", "tirx_fence_proxy_async", F(TMA), S, IMMS, "$n()",
   NULL, "$h();", NULL, {0})
OP(fence_mbar_init, "fence_mbarrier_init", "tirx_fence_mbarrier_init", F(MBARRIER), S, IMMS,
   "$n()", NULL, "$h();", NULL, {0})
OP(cluster_sync, "cluster_sync", "tirx_cluster_sync", F(CLUSTER), S, IMMS, "$n()", NULL, "$h();",
   NULL, {0})
/* setmaxnreg, named barriers, wgmma groups (builder/sync.c) */
OP(setmaxnreg_inc, "setmaxnreg.inc", "tirx_setmaxnreg_inc", F(SETMAXNREG), S, IMMS, "$n $0", NULL,
   "$h<$0>();", NULL, TIRX__IMM(IMMS, n))
OP(setmaxnreg_dec, "setmaxnreg.dec", "tirx_setmaxnreg_dec", F(SETMAXNREG), S, IMMS, "$n $0", NULL,
   "$h<$0>();", NULL, TIRX__IMM(IMMS, n))
OP(named_bar_sync, "named_barrier_sync", "tirx_named_bar_sync", 0, S, NBAR, "$n($0, $1)",
   NULL, "$h($0, $1);", NULL, TIRX__IMM(NBAR, id), TIRX__IMM(NBAR, threads))
OP(named_bar_arrive, "named_barrier_arrive", "tirx_named_bar_arrive", 0, S, NBAR,
   "$n($0, $1)", NULL, "$h($0, $1);", NULL, TIRX__IMM(NBAR, id), TIRX__IMM(NBAR, threads))
OP(wgmma_fence, "wgmma_fence", "tirx_wgmma_fence", F(WGMMA), S, IMMS, "$n()", NULL, "$h();",
   NULL, {0})
OP(wgmma_commit, "wgmma_commit", "tirx_wgmma_commit", F(WGMMA), S, IMMS, "$n()", NULL, "$h();",
   NULL, {0})
OP(wgmma_wait, "wgmma_wait", "tirx_wgmma_wait", F(WGMMA), S, IMMS, "$n($0)", NULL, NULL,
   emit_wgmma_wait, TIRX__IMM(IMMS, n))
/* bulk groups, tensor-map prefetch (builder/bulk.c) */
OP(bulk_commit, "bulk_commit", "tirx_bulk_commit", F(TMA), B, IMMS, "$n", NULL, "$h();", NULL,
   {0})
OP(bulk_wait, "bulk_wait", "tirx_bulk_wait", F(TMA), B, IMMS, "$n $0", NULL, "$h<$0, 0>();",
   NULL, TIRX__IMM(IMMS, n))
OP(bulk_wait_read, "bulk_wait.read", "tirx_bulk_wait", F(TMA), B, IMMS, "$n $0", NULL,
   "$h<$0, 1>();", NULL, TIRX__IMM(IMMS, n))
OP(tmap_prefetch, "tmap_prefetch", "tirx_tmap_prefetch", F(TMA), B, tirx__nv_tensor, "$n $0",
   NULL, NULL, emit_prefetch, TIRX__TENSOR(tirx__nv_tensor, tensor))
/* cp.async groups (builder/cp_async.c) */
OP(cp_async_commit, "cp_async_commit", "tirx_cp_async_commit", F(CP_ASYNC), C, IMMS, "$n", NULL,
   "$h();", NULL, {0})
OP(cp_async_wait, "cp_async_wait", "tirx_cp_async_wait", F(CP_ASYNC), C, IMMS, "$n $0", NULL,
   "$h<$0>();", NULL, TIRX__IMM(IMMS, n))
OP(cp_async_wait_all, "cp_async_wait_all", "tirx_cp_async_wait_all", F(CP_ASYNC), C, IMMS, "$n",
   NULL, "$h();", NULL, {0})

/* programmatic dependent launch (builder/sync.c): helpers emitted only where used, just
 * before the sync section, in an sm_90 block of their own */
static const tirx__prelude_frag griddep_frag = {.order = 690, .text =
    "/* Programmatic dependent launch: wait for the grids this one depends on (complete, their\n"
    " * memory visible); let the dependents of this one be scheduled. */\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "__device__ __forceinline__ void tirx_griddep_wait() {\n"
    "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_griddep_launch() {\n"
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "}\n"
    "#endif\n"};
static const tirx__prelude_frag *const griddep_frags[] = {&griddep_frag, NULL};
const tirx__native_op tirx__nv_griddep_wait = {
    .name = "grid_dependency_wait", .helper = "tirx_griddep_wait", .need = TIRX__NEED(F(GRIDDEP)),
    .section = S, .size = sizeof(IMMS), .ops = {{0}}, .print_fmt = "$n()", .emit_fmt = "$h();",
    .prelude = griddep_frags};
const tirx__native_op tirx__nv_griddep_launch = {
    .name = "grid_launch_dependents", .helper = "tirx_griddep_launch",
    .need = TIRX__NEED(F(GRIDDEP)), .section = S, .size = sizeof(IMMS), .ops = {{0}},
    .print_fmt = "$n()", .emit_fmt = "$h();", .prelude = griddep_frags};

const tirx__native_op *const tirx__native_generic_ops[] = {
    &tirx__nv_mbar_init, &tirx__nv_mbar_arrive, &tirx__nv_mbar_arrive_cluster,
    &tirx__nv_mbar_expect_tx, &tirx__nv_mbar_wait, &tirx__nv_fence_proxy_async,
    &tirx__nv_fence_mbar_init, &tirx__nv_cluster_sync, &tirx__nv_setmaxnreg_inc,
    &tirx__nv_setmaxnreg_dec, &tirx__nv_named_bar_sync, &tirx__nv_named_bar_arrive,
    &tirx__nv_wgmma_fence, &tirx__nv_wgmma_commit, &tirx__nv_wgmma_wait, &tirx__nv_bulk_commit,
    &tirx__nv_bulk_wait, &tirx__nv_bulk_wait_read, &tirx__nv_tmap_prefetch,
    &tirx__nv_cp_async_commit, &tirx__nv_cp_async_wait, &tirx__nv_cp_async_wait_all,
    &tirx__nv_griddep_wait, &tirx__nv_griddep_launch, NULL};

/* ---- the format interpreter ---- */

static const void *field(const tirx__stmt *s, const tirx__opnd *o) {
  return (const char *)s->native.p + o->at;
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
  case TIRX__OPND_LOAD: {
    const tirx_expr *e = *(tirx_expr *const *)p;
    w->elem(w, e->tensor, e->index);
    break;
  }
  case TIRX__OPND_EXPR: w->expr(w, *(tirx_expr *const *)p); break;
  case TIRX__OPND_TENSOR: put(w, w->tensor(w, *(tirx_tensor *const *)p)); break;
  case TIRX__OPND_IMM: tirx__sb_printf(w->sb, "%d", (int)*(const int32_t *)p); break;
  default: put(w, "?"); break;
  }
}

static void format(tirx__writer *w, const tirx__stmt *s, const tirx__native_op *r,
                   const char *f) {
  if (!f) {
    put(w, "?");
    return;
  }
  for (; *f; f++) {
    if (*f == '{') { /* an optional part: skipped when an operand it names is absent */
      const char *end = strchr(f, '}');
      bool all = end != NULL;
      for (const char *q = f; all && q < end; q++)
        if (q[0] == '$' && q[1] >= '0' && q[1] - '0' < TIRX__NATIVE_MAX_OPS) all = present(s, &r->ops[q[1] - '0']);
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
    else if (*f >= '0' && *f - '0' < TIRX__NATIVE_MAX_OPS)
      operand(w, s, &r->ops[*f - '0']);
  }
}

void tirx__native_print(tirx__writer *w, const tirx__stmt *s) {
  const tirx__native_op *r = s->native.op;
  if (!r || !s->native.p)
    put(w, "?");
  else if (r->print)
    r->print(w, s);
  else
    format(w, s, r, r->print_fmt);
}

void tirx__native_emit(tirx__writer *w, const tirx__stmt *s) {
  const tirx__native_op *r = s->native.op;
  if (!r || !s->native.p)
    put(w, "/* ? */");
  else if (r->emit)
    r->emit(w, s);
  else
    format(w, s, r, r->emit_fmt);
}

int tirx__native_run(const tirx__stmt *s) {
  if (!s || s->kind != TIRX__ST_NATIVE || !s->native.op || !s->native.op->run) return 1;
  int g = s->native.op->run(s);
  return g > 1 ? g : 1;
}
