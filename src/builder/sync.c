/*
 * Synchronisation and asynchronous-hardware statements (builder.h, "Synchronisation"):
 * mbarriers, fences, cluster barriers, elect.sync, setmaxnreg, named barriers and the wgmma
 * group statements. Each becomes one native statement (a generic op of native.c, its payload in native.h) that
 * codegen prints as a call of an inline-PTX helper of the prelude; the two expressions are
 * TIRX__EX_SPECIAL nodes. The build-time checks are here: ranges of the constants, dtypes of
 * the expressions, and, for the statements the whole warpgroup executes (.sync.aligned), that
 * the active threads at the call are whole warpgroups.
 */
#include "builder_internal.h"

/* The row's need (native.h): bar.sync/bar.arrive run anywhere; setmaxnreg and the wgmma
 * groups are sm_90a only; the other helpers of tirx__prelude_sync are sm_90. */
static tirx__stmt *native(tirx_builder *b, const char *fn, const tirx__native_op *op) {
  return tirx__b_native(b, fn, op);
}

/* The block size, or false with TIRX_E_BUILD recorded. */
static bool block_threads(tirx_builder *b, const char *fn, int64_t *threads) {
  if (!b->block_set) {
    tirx__b_fail(b, TIRX_E_BUILD, "%s: the block size is not set (call tirx_set_block first)",
                 fn);
    return false;
  }
  *threads = (int64_t)b->block[0] * b->block[1] * b->block[2];
  return true;
}

/* The active threads at the insertion point are whole warpgroups: every thread of each
 * warpgroup executes a .sync.aligned warpgroup instruction. */
static bool whole_warpgroups(tirx_builder *b, const char *fn, const char *what) {
  int64_t threads;
  if (!block_threads(b, fn, &threads)) return false;
  if (threads % 128) {
    tirx__b_fail(b, TIRX_E_SCOPE,
                 "%s: the block has %lld threads: %s needs whole warpgroups (a multiple of 128)",
                 fn, (long long)threads, what);
    return false;
  }
  const tirx_scope *s = tirx__b_scope(b, fn);
  if (!s) return false;
  const tirx_scope *wg = tirx_scope_team(b->arena, s, TIRX_TEAM_WARPGROUP);
  if (!wg || tirx_scope_team_size(wg) != 128) {
    tirx__b_fail(b, TIRX_E_SCOPE,
                 "%s: the active threads are not whole warpgroups: %s is executed by all 128 "
                 "threads of a warpgroup",
                 fn, what);
    return false;
  }
  return true;
}

/* An integer (not bool) expression argument of this builder (builder_internal.h). */
bool tirx__b_int_arg(tirx_builder *b, const char *fn, const tirx_expr *e, const char *arg) {
  if (!tirx__b_expr(b, fn, e, arg)) return false;
  if (!tirx__dtype_is_int(e->dtype)) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected an integer", fn, arg,
                 tirx_dtype_name((tirx_dtype)e->dtype));
    return false;
  }
  return true;
}

/* A statement on the one mbarrier of region bar: tensor and index set. */
static tirx__stmt *mbar_stmt(tirx_builder *b, const char *fn, tirx_region *bar, const tirx__native_op *op) {
  if (!tirx__b_region(b, fn, bar, "bar", false)) return NULL;
  const tirx_tensor *t = bar->tensor;
  if (!t) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: bar is a broadcast: expected a region of one mbarrier", fn);
    return NULL;
  }
  if (t->storage != TIRX__SHARED || t->dtype != TIRX_I64) {
    static const char *const where[] = {"global", "shared", "local"};
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: bar is a region of %s, a %s %s tensor: expected an element of a shared "
                 "i64 tensor (tirx_alloc_mbarrier)",
                 fn, t->decl.name, where[t->storage], tirx_dtype_name((tirx_dtype)t->dtype));
    return NULL;
  }
  int64_t n = 1;
  for (int k = 0; k < t->rank; k++) n *= bar->extent[k];
  if (n != 1) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: bar has %lld elements of %s: expected exactly one mbarrier", fn,
                 (long long)n, t->decl.name);
    return NULL;
  }
  tirx_expr **idx = tirx__b_index_list(b, fn, bar->tensor, t->rank, bar->begin);
  if (!idx) return NULL;
  tirx__stmt *s = native(b, fn, op);
  if (!s) return NULL;
  tirx__nv_mbar *m = s->native.p;
  m->bar.tensor = bar->tensor;
  m->bar.index = idx;
  return s;
}

tirx_tensor *tirx_alloc_mbarrier(tirx_builder *b, const char *name, int64_t n) {
  static const char fn[] = "tirx_alloc_mbarrier";
  if (!tirx__b_ok(b, fn)) return NULL;
  if (n < 1) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: n is %lld, expected >= 1", fn, (long long)n);
    return NULL;
  }
  return tirx__b_alloc_in(b, NULL, fn, TIRX__SHARED, name, TIRX_I64, 1, &n, NULL);
}

void tirx_mbarrier_init(tirx_builder *b, tirx_region *bar, int64_t count) {
  static const char fn[] = "tirx_mbarrier_init";
  if (!tirx__b_ok(b, fn)) return;
  if (count < 1 || count > TIRX__MBAR_MAX_COUNT) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: count is %lld, expected 1 to %d", fn,
                 (long long)count, TIRX__MBAR_MAX_COUNT);
    return;
  }
  tirx_expr *c = tirx__b_const(b, fn, count, TIRX_I32);
  if (!c) return;
  tirx__stmt *s = mbar_stmt(b, fn, bar, &tirx__nv_mbar_init);
  if (s) ((tirx__nv_mbar *)s->native.p)->value = c;
}

void tirx_mbarrier_arrive(tirx_builder *b, tirx_region *bar) {
  static const char fn[] = "tirx_mbarrier_arrive";
  if (tirx__b_ok(b, fn)) mbar_stmt(b, fn, bar, &tirx__nv_mbar_arrive);
}

void tirx_mbarrier_arrive_cluster(tirx_builder *b, tirx_region *bar, tirx_expr *cta_rank) {
  static const char fn[] = "tirx_mbarrier_arrive_cluster";
  if (!tirx__b_ok(b, fn) || !tirx__b_int_arg(b, fn, cta_rank, "cta_rank")) return;
  if (cta_rank->kind == TIRX__EX_INT && (cta_rank->i < 0 || cta_rank->i > 15)) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: cta_rank is %lld, expected 0 to 15", fn,
                 (long long)cta_rank->i);
    return;
  }
  tirx__stmt *s = mbar_stmt(b, fn, bar, &tirx__nv_mbar_arrive_cluster);
  if (s) ((tirx__nv_mbar *)s->native.p)->value = cta_rank;
}

void tirx_mbarrier_expect_tx(tirx_builder *b, tirx_region *bar, tirx_expr *bytes) {
  static const char fn[] = "tirx_mbarrier_expect_tx";
  if (!tirx__b_ok(b, fn) || !tirx__b_int_arg(b, fn, bytes, "bytes")) return;
  if (bytes->kind == TIRX__EX_INT && (bytes->i < 0 || bytes->i > TIRX__MBAR_MAX_TX)) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: bytes is %lld, expected 0 to %d", fn,
                 (long long)bytes->i, TIRX__MBAR_MAX_TX);
    return;
  }
  tirx__stmt *s = mbar_stmt(b, fn, bar, &tirx__nv_mbar_expect_tx);
  if (s) ((tirx__nv_mbar *)s->native.p)->value = bytes;
}

void tirx_mbarrier_wait(tirx_builder *b, tirx_region *bar, tirx_expr *phase) {
  static const char fn[] = "tirx_mbarrier_wait";
  if (!tirx__b_ok(b, fn) || !tirx__b_int_arg(b, fn, phase, "phase")) return;
  tirx__stmt *s = mbar_stmt(b, fn, bar, &tirx__nv_mbar_wait);
  if (s) ((tirx__nv_mbar *)s->native.p)->value = phase;
}

static void plain(tirx_builder *b, const char *fn, const tirx__native_op *op) {
  if (tirx__b_ok(b, fn)) native(b, fn, op);
}

void tirx_fence_proxy_async(tirx_builder *b) {
  plain(b, "tirx_fence_proxy_async", &tirx__nv_fence_proxy_async);
}
void tirx_fence_mbarrier_init(tirx_builder *b) {
  plain(b, "tirx_fence_mbarrier_init", &tirx__nv_fence_mbar_init);
}
void tirx_cluster_sync(tirx_builder *b) { plain(b, "tirx_cluster_sync", &tirx__nv_cluster_sync); }
void tirx_grid_dependency_wait(tirx_builder *b) {
  static const char fn[] = "tirx_grid_dependency_wait";
  if (!tirx__b_ok(b, fn)) return;
  native(b, fn, &tirx__nv_griddep_wait);
  b->pdl = true;
}
void tirx_grid_launch_dependents(tirx_builder *b) {
  plain(b, "tirx_grid_launch_dependents", &tirx__nv_griddep_launch);
}

static tirx_expr *special(tirx_builder *b, const char *fn, int sp, tirx_dtype dtype) {
  if (!tirx__b_ok(b, fn)) return NULL;
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_SPECIAL, sp, dtype, NULL, NULL, NULL);
  if (!e) return NULL;
  e->host = false;
  b->preludes |= TIRX__PRE_SYNC;
  tirx__b_need(b, tirx__special_features(sp), fn);
  return e;
}

tirx_expr *tirx_cluster_ctarank(tirx_builder *b) {
  return special(b, "tirx_cluster_ctarank", TIRX__SP_CLUSTER_CTARANK, TIRX_I32);
}
tirx_expr *tirx_elect_one(tirx_builder *b) {
  return special(b, "tirx_elect_one", TIRX__SP_ELECT_ONE, TIRX_BOOL);
}

void tirx_setmaxnreg(tirx_builder *b, int regs, bool inc) {
  static const char fn[] = "tirx_setmaxnreg";
  if (!tirx__b_ok(b, fn)) return;
  if (regs < 24 || regs > 256 || regs % 8) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: regs is %d, expected a multiple of 8 in [24, 256]",
                 fn, regs);
    return;
  }
  if (!whole_warpgroups(b, fn, "setmaxnreg")) return;
  tirx__stmt *s = native(b, fn, inc ? &tirx__nv_setmaxnreg_inc : &tirx__nv_setmaxnreg_dec);
  if (!s) return;
  ((tirx__nv_imm *)s->native.p)->n = regs;
  b->uses_setmaxnreg = true;
}

static void named_barrier(tirx_builder *b, const char *fn, const tirx__native_op *op, int id,
                          int nthreads) {
  if (!tirx__b_ok(b, fn)) return;
  if (id < 1 || id > 15) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: id is %d, expected 1 to 15 (0 is tirx_sync_threads's)", fn, id);
    return;
  }
  int64_t threads;
  if (!block_threads(b, fn, &threads)) return;
  if (nthreads < 32 || nthreads % 32 || nthreads > threads) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: nthreads is %d, expected a multiple of 32 in [32, %lld] (the block size)",
                 fn, nthreads, (long long)threads);
    return;
  }
  tirx__stmt *s = native(b, fn, op);
  if (!s) return;
  tirx__nv_named_bar *nb = s->native.p;
  nb->id = id;
  nb->threads = nthreads;
}

void tirx_named_barrier_sync(tirx_builder *b, int id, int nthreads) {
  named_barrier(b, "tirx_named_barrier_sync", &tirx__nv_named_bar_sync, id, nthreads);
}
void tirx_named_barrier_arrive(tirx_builder *b, int id, int nthreads) {
  named_barrier(b, "tirx_named_barrier_arrive", &tirx__nv_named_bar_arrive, id, nthreads);
}

static tirx__stmt *wgmma_group(tirx_builder *b, const char *fn, const tirx__native_op *op,
                               const char *what) {
  if (!tirx__b_ok(b, fn) || !whole_warpgroups(b, fn, what)) return NULL;
  return native(b, fn, op);
}

void tirx_wgmma_fence(tirx_builder *b) {
  wgmma_group(b, "tirx_wgmma_fence", &tirx__nv_wgmma_fence, "wgmma.fence");
}
void tirx_wgmma_commit(tirx_builder *b) {
  wgmma_group(b, "tirx_wgmma_commit", &tirx__nv_wgmma_commit, "wgmma.commit_group");
}
void tirx_wgmma_wait(tirx_builder *b, int n) {
  static const char fn[] = "tirx_wgmma_wait";
  if (!tirx__b_ok(b, fn)) return;
  if (n < 0 || n > 7) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: n is %d, expected 0 to 7", fn, n);
    return;
  }
  tirx__stmt *s = wgmma_group(b, fn, &tirx__nv_wgmma_wait, "wgmma.wait_group");
  if (s) ((tirx__nv_imm *)s->native.p)->n = n;
}
