/*
 * fuzz_api: a randomized robustness harness for the public API outside the kernel library:
 * the builder (tirx/builder.h), the runtime's launch, argument, future, stream and memory calls
 * (tirx/runtime.h), layouts (tirx/layout.h: misuse, not the algebra, which tools/fuzz.sh
 * covers), scopes (tirx/scope.h) and tirx/core.h.
 *
 *   fuzz_api [-s SEED] [-n ITERATIONS] [-t SECONDS] [-m build|launch|misc] [-p MUTATE_PCT] [-v]
 *            [-w WATCHDOG_S]
 *
 * Modes:
 *   build   Each iteration builds a small random kernel (parameters, tensors, shared and local
 *           buffers, expressions, loops, ifs, lets, vars, stores, syncs, teams, filters, tile
 *           primitives, mbarriers, rings, launch settings) and mutates some of its calls: NULL
 *           for each pointer, expressions and tensors of another builder or of the wrong dtype,
 *           variables out of scope, names that are NULL, empty, huge, reserved or not
 *           identifiers (some carry a code-injection marker), extreme integers, unknown enum
 *           values, blocks closed that were never opened or left open, calls after an error,
 *           after tirx_kernel_build and on a NULL builder (-p: the percentage of calls mutated,
 *           default 6). Then it builds, and sometimes goes on after the build and builds again.
 *   launch  tirx_prepare_async, tirx_launch(_ex), tirx_compile and tirx_runtime_warmup with
 *           mutated argument lists of a small kernel, the future calls, the runtime's accessors,
 *           stream and memory calls with NULL and garbage arguments, tirx_runtime_create with
 *           garbage options. Run with TIRX_NVRTC_LIBRARY=/nonexistent to keep NVRTC out.
 *   misc    layout, scope, axis, arena, status and dtype calls with NULL, out-of-range and
 *           garbage arguments (mutated layout text included).
 *
 * What it checks is the project's promise for bad input (docs/ARCHITECTURE.md, "Errors and
 * ownership"): no crash, abort, sanitizer report or hang (a watchdog names the calls), a
 * builder's first error whose message starts with the name of the public function that was
 * called, a returned error whose message starts with the function's name and agrees with
 * tirx_last_status, no message naming an internal function, and no injection marker in a
 * built kernel's source. Run it in a sanitizer build (meson setup ...
 * -Db_sanitize=address,undefined) with UBSAN_OPTIONS=halt_on_error=1. At exit it prints every
 * distinct message shape (numbers as #) with its count, for a reader to check that each names
 * the argument and what was expected. Exit status: 0 clean, 1 when a check failed.
 */
#define _GNU_SOURCE
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tirx.h"

#define FUZZ_TOOL "fuzz_api"
#define FUZZ_DESC_BYTES (1 << 16)
#define FUZZ_CHECK_OK(fn) ((void)(fn))
#include "fuzz_common.h"

/* An object-returning call that is not a builder's: NULL must come with an error naming fn. */
static void check_object(const char *fn, const void *obj) {
  ncalls++;
  if (obj) return;
  tirx_status st = tirx_last_status();
  if (st == TIRX_OK) {
    fail("NULL returned without an error", fn);
    return;
  }
  check_result(fn, st, 0);
  ncalls--;
}
#define RUNP(fn_, T_, var, expr)                                                             \
  do {                                                                                       \
    tirx_clear_error();                                                                      \
    if (verbose) fprintf(stderr, "CALL %s\n", desc);                                         \
    alarm((unsigned)watchdog_s);                                                             \
    var = (T_)(expr);                                                                        \
    alarm(0);                                                                                \
    check_object((fn_), (const void *)(var));                                                \
  } while (0)

/* ---- build mode: random kernels with mutated calls ---- */

enum { MAXE = 48, MAXTS = 8, MAXOPEN = 80 };

/* Names: valid and unique ones, and bad ones. INJECT marks a name whose text must never reach the
 * generated source. */
#define INJECT "TRAPMARK"
static const char *const bad_names[] = {
    NULL, "", "1abc", "a-b", "a b", "int", "float", "__syncthreads", "tirx_x", "TIRX_Y", "_",
    "threadIdx", "x; asm(\"trap\"); //" INJECT, "x\n#define " INJECT " 1\n", "x*/" INJECT "/*",
    "\"" INJECT, "a\\", "\xc3\xa9t\xc3\xa9", "ok_name_but_" INJECT "_and;", "return", "extern",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 64 */
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",  /* 63: valid */
    "%s%s%n", "n", "x", "blockIdx", "main", "__half", "$x", "x\t", "const", "Trapmark"};

typedef struct env {
  tirx_builder *b, *other;
  tirx_expr *ie[MAXE]; int ni;  /* integer (i32, i64) expressions in scope */
  tirx_expr *fe[MAXE]; int nf;  /* f32 */
  tirx_expr *be[MAXE]; int nb;  /* bool */
  tirx_expr *me[MAXE]; int nm;  /* other dtypes (f16, f64, u8, ...) */
  tirx_expr *ve[MAXE]; int nv;  /* variables (tirx_var) */
  tirx_expr *stale[MAXE]; int nstale; /* out of scope now */
  tirx_expr *pint[MAXE]; int npint;   /* integer parameters */
  tirx_tensor *gt[MAXTS]; int ngt;    /* global f32 */
  tirx_tensor *sh[MAXTS]; int nsh;    /* shared f32 2-d */
  tirx_tensor *lo[MAXTS]; int nlo;    /* local f32 */
  tirx_tensor *bar[MAXTS]; int nbar;  /* mbarriers */
  tirx_ring *ring[4]; int nring;
  tirx_region *rg[MAXE]; int nrg;
  /* foreign objects (of e->other) */
  tirx_expr *o_i, *o_f;
  tirx_tensor *o_t, *o_s;
  tirx_region *o_r;
  tirx_ring *o_ring;
  /* open blocks: kind and the pool sizes to restore */
  struct { char kind; int ni, nf, nb, nm, nv, nrg; } open[MAXOPEN];
  int nopen;
  bool mut;      /* the current call is mutated */
  bool bnull;    /* the current call gets a NULL builder */
  int serial;
  char lastname[80];
  tirx_status st0;
  char *first_error;
  bool injected; /* an injection marker was passed in some name */
} env;

static int mut_pct = 6; /* -p: the percentage of builder calls mutated */

static tirx_builder *B(env *e) { return e->bnull ? NULL : e->b; }
static bool M(env *e, int pct) { return e->mut && chance(pct); }

static const char *name_of(env *e, const char *base) {
  static char bufs[16][96];
  static int nb;
  char *s = bufs[nb++ % 16];
  if (M(e, 40)) {
    if (chance(15) && e->lastname[0]) return strcpy(s, e->lastname); /* a duplicate */
    const char *n = PICK(bad_names);
    if (n && strstr(n, INJECT)) e->injected = true;
    return n;
  }
  snprintf(s, 96, "%s%d", base, e->serial++);
  snprintf(e->lastname, sizeof e->lastname, "%s", s);
  return s;
}

static void add(tirx_expr **pool, int *n, tirx_expr *x) {
  if (!x) return;
  if (*n < MAXE) pool[(*n)++] = x;
  else pool[rint_below(MAXE)] = x;
}

/* A wrong expression: NULL, another builder's, another dtype's, out of scope. */
static tirx_expr *bad_expr(env *e, char want) {
  switch (rint_below(6)) {
  case 0: return NULL;
  case 1: return want == 'f' ? e->o_f : e->o_i;
  case 2: return e->nf && want != 'f' ? e->fe[rint_below(e->nf)] : NULL;
  case 3: return e->nb && want != 'b' ? e->be[rint_below(e->nb)] : e->o_f;
  case 4: return e->nstale ? e->stale[rint_below(e->nstale)] : NULL;
  default: return e->nm ? e->me[rint_below(e->nm)] : (e->ni && want != 'i' ? e->ie[0] : NULL);
  }
}
static tirx_expr *XI(env *e) {
  if (M(e, 35)) return bad_expr(e, 'i');
  if (e->ni && chance(75)) return e->ie[rint_below(e->ni)];
  return tirx_int(e->b, rint_below(40));
}
static tirx_expr *XF(env *e) {
  if (M(e, 35)) return bad_expr(e, 'f');
  if (e->nf && chance(75)) return e->fe[rint_below(e->nf)];
  return tirx_float(e->b, 0.5 * rint_below(8), TIRX_F32);
}
static tirx_expr *XB(env *e) {
  if (M(e, 35)) return bad_expr(e, 'b');
  if (e->nb && chance(80)) return e->be[rint_below(e->nb)];
  return tirx_lt(e->b, tirx_thread_idx(e->b, 0), tirx_int(e->b, 1 + rint_below(64)));
}
static int IV(env *e, int v) { return M(e, 30) ? mut_int(v) : v; }
static int64_t LV(env *e, int64_t v) { return M(e, 30) ? mut_i64(v) : v; }
static tirx_dtype DT(env *e, tirx_dtype t) { return M(e, 25) ? mut_dtype() : t; }

static tirx_tensor *bad_tensor(env *e) {
  switch (rint_below(5)) {
  case 0: return NULL;
  case 1: return e->o_t;
  case 2: return e->o_s;
  case 3: return e->nsh ? e->sh[rint_below(e->nsh)] : NULL;
  default: return e->nlo ? e->lo[rint_below(e->nlo)] : e->ngt ? e->gt[0] : NULL;
  }
}
static tirx_tensor *TG(env *e) {
  if (M(e, 35) || !e->ngt) return bad_tensor(e);
  return e->gt[rint_below(e->ngt)];
}
static tirx_tensor *TS(env *e) {
  if (M(e, 35) || !e->nsh) return bad_tensor(e);
  return e->sh[rint_below(e->nsh)];
}
static tirx_region *RG(env *e) {
  if (M(e, 30) || !e->nrg) return chance(50) ? NULL : e->o_r;
  return e->rg[rint_below(e->nrg)];
}
static tirx_region *BAR(env *e) {
  if (M(e, 35) || !e->nbar) return M(e, 50) ? RG(e) : e->o_r;
  tirx_tensor *t = e->bar[rint_below(e->nbar)];
  return tirx_region_new(e->b, t, TIRX_EXPRS(tirx_int(e->b, 0)), (int64_t[]){1});
}
static const tirx_ring *RING(env *e) {
  if (M(e, 35) || !e->nring) return chance(50) ? NULL : e->o_ring;
  return e->ring[rint_below(e->nring)];
}

static void bcall_begin(env *e, const char *fn) {
  e->st0 = tirx_builder_status(e->b);
  descf("%s%s%s ", fn, e->mut ? "*" : "", e->bnull ? "(NULL)" : "");
  if (verbose) fprintf(stderr, "CALL %s%s%s\n", fn, e->mut ? " (mutated)" : "", e->bnull ? " (b NULL)" : "");
  tirx_clear_error();
  alarm((unsigned)watchdog_s);
}

/* kind: 'v' void, 'o' returned an object (obj), 'i' returned an int-like value */
static void bcall_end(env *e, const char *fn, char kind, const void *obj) {
  alarm(0);
  ncalls++;
  if (e->bnull) {
    const char *msg = tirx_last_error();
    if (kind == 'o' && obj) fail("an object returned for a NULL builder", fn);
    if (tirx_last_status() != TIRX_E_NULL_ARG) fail("a NULL builder did not set TIRX_E_NULL_ARG", fn);
    else {
      size_t fl = strlen(fn);
      if (strncmp(msg, fn, fl) != 0 || msg[fl] != ':') fail("NULL builder: message does not start with the function's name", msg);
      note_message(msg);
    }
    return;
  }
  tirx_status s1 = tirx_builder_status(e->b);
  const char *msg = tirx_builder_error(e->b);
  if (verbose && s1 != e->st0) fprintf(stderr, "  -> %s %s\n", tirx_status_name(s1), msg);
  if (e->st0 != TIRX_OK) {
    if (s1 != e->st0) fail("the first error did not stick (status)", fn);
    else if (strcmp(msg, e->first_error) != 0) fail("the first error did not stick (message)", msg);
    if (kind == 'o' && obj) fail("an object returned after the builder's first error", fn);
    return;
  }
  if (s1 == TIRX_OK) {
    if (kind == 'o' && !obj) fail("NULL returned without an error", fn);
    return;
  }
  nstatus[(unsigned)s1 < 64 ? (unsigned)s1 : 63]++;
  free(e->first_error);
  e->first_error = strdup(msg);
  if (kind == 'o' && obj) fail("an object returned by the call that failed", fn);
  if (strcmp(tirx_status_name(s1), "TIRX_UNKNOWN_STATUS") == 0) fail("unknown status", msg);
  if (!*msg) {
    fail("empty message", fn);
    return;
  }
  size_t fl = strlen(fn);
  if (strncmp(msg, fn, fl) != 0 || msg[fl] != ':') fail("message does not start with the function's name", msg);
  if (strstr(msg, "tirx__")) fail("message names an internal function", msg);
  if (tirx_last_status() != s1 || strcmp(tirx_last_error(), msg) != 0)
    fail("tirx_last_error differs from the builder's first error", msg);
  if (strstr(msg, INJECT) && !strstr(msg, "\"")) fail("an injected name in a message, unquoted", msg);
  note_message(msg);
}

#define BV(fn_, call_)                                                                       \
  do {                                                                                       \
    bcall_begin(e, fn_);                                                                     \
    call_;                                                                                   \
    bcall_end(e, fn_, 'v', NULL);                                                            \
  } while (0)
#define BO(fn_, var, call_)                                                                  \
  do {                                                                                       \
    bcall_begin(e, fn_);                                                                     \
    var = (call_);                                                                           \
    bcall_end(e, fn_, 'o', (const void *)(var));                                             \
  } while (0)

static void push_block(env *e, char kind) {
  if (e->nopen == MAXOPEN) return;
  e->open[e->nopen].kind = kind;
  e->open[e->nopen].ni = e->ni, e->open[e->nopen].nf = e->nf, e->open[e->nopen].nb = e->nb;
  e->open[e->nopen].nm = e->nm, e->open[e->nopen].nv = e->nv, e->open[e->nopen].nrg = e->nrg;
  e->nopen++;
}
static void pop_block(env *e) {
  if (!e->nopen) return;
  e->nopen--;
  for (int i = e->open[e->nopen].ni; i < e->ni; i++) add(e->stale, &e->nstale, e->ie[i]);
  for (int i = e->open[e->nopen].nf; i < e->nf; i++) add(e->stale, &e->nstale, e->fe[i]);
  e->ni = e->open[e->nopen].ni, e->nf = e->open[e->nopen].nf, e->nb = e->open[e->nopen].nb;
  e->nm = e->open[e->nopen].nm, e->nv = e->open[e->nopen].nv, e->nrg = e->open[e->nopen].nrg;
}

static int nidx(env *e, int rank) { return M(e, 30) ? mut_int(rank) : rank; }

/* An index list of rank entries (within 8). */
static tirx_expr **idx_list(env *e, tirx_expr **buf, int rank) {
  if (M(e, 10)) return NULL;
  for (int i = 0; i < 8; i++) buf[i] = i < rank ? XI(e) : NULL;
  return buf;
}

static void close_one(env *e, bool mutated_order) {
  char k = e->nopen ? e->open[e->nopen - 1].kind : "fiets"[rint_below(5)];
  if (mutated_order) k = "fiets"[rint_below(5)];
  switch (k) {
  case 'f': BV("tirx_for_end", tirx_for_end(B(e))); break;
  case 'i': case 'e': BV("tirx_if_end", tirx_if_end(B(e))); break;
  case 't': BV("tirx_team_end", tirx_team_end(B(e))); break;
  default: BV("tirx_filter_end", tirx_filter_end(B(e))); break;
  }
  pop_block(e);
}

static void prim_cfg(env *e, tirx_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (M(e, 30)) {
    const char *fams[] = {"vec", "scalar", "shuffle", "", "nonexistent", "tma", NULL};
    cfg->family = PICK(fams);
    cfg->shape[rint_below(3)] = mut_i64(0);
    cfg->hint = (tirx_hint)mut_int(0);
    if (chance(30)) cfg->barrier = RG(e);
    if (chance(30)) cfg->multicast = XI(e);
  }
}

static void one_op(env *e) {
  tirx_builder *b = e->b;
  e->mut = chance(mut_pct);
  e->bnull = e->mut && chance(6);
  tirx_expr *x = NULL, *ib[8];
  tirx_tensor *t = NULL;
  tirx_region *r = NULL;
  int w = rint_below(100);
  if (chance(1)) { /* the limits: a deep expression, deep nesting */
    if (chance(50)) {
      tirx_expr *acc = e->ni ? e->ie[0] : tirx_int(b, 1);
      int depth = TIRX_BUILDER_MAX_EXPR_DEPTH - 4 + rint_below(12);
      for (int i = 0; i < depth && acc; i++) BO("tirx_add", acc, tirx_add(B(e), acc, tirx_int(b, 1)));
      add(e->ie, &e->ni, acc);
    } else {
      int depth = TIRX_BUILDER_MAX_NESTING - 4 + rint_below(12);
      for (int i = 0; i < depth; i++) {
        tirx_expr *c = XB(e);
        BV("tirx_if_begin", tirx_if_begin(B(e), c));
        if (tirx_builder_status(b) != TIRX_OK || e->bnull) break;
        push_block(e, 'i');
      }
    }
    e->mut = e->bnull = false;
    return;
  }
  if (w < 4) { /* parameters */
    switch (rint_below(5)) {
    case 0: case 1:
      BO("tirx_param_int", x, tirx_param_int(B(e), name_of(e, "n"), DT(e, chance(50) ? TIRX_I32 : TIRX_I64)));
      add(e->ie, &e->ni, x), add(e->pint, &e->npint, x);
      if (x && chance(30)) {
        tirx_specialize p = (tirx_specialize)IV(e, rint_below(3));
        bcall_begin(e, "tirx_param_set_policy");
        (void)tirx_param_set_policy(B(e), M(e, 40) ? XI(e) : x, p);
        bcall_end(e, "tirx_param_set_policy", 'v', NULL);
      }
      break;
    case 2:
      BO("tirx_param_scalar", x, tirx_param_scalar(B(e), name_of(e, "s"), DT(e, TIRX_F32)));
      add(e->fe, &e->nf, x);
      break;
    case 3: {
      int rank = 1 + rint_below(2);
      tirx_expr *shape[8] = {0};
      for (int i = 0; i < rank; i++)
        shape[i] = e->npint && chance(70) ? e->pint[rint_below(e->npint)] : tirx_int(b, 1 + rint_below(300));
      if (M(e, 30)) shape[rint_below(rank)] = chance(50) ? bad_expr(e, 'i') : tirx_int(b, mut_i64(8));
      const tirx_layout *lay = NULL;
      if (M(e, 30)) lay = tirx_layout_parse(tirx_builder_arena(b), chance(50) ? "(8,8):(8,1)" : "(4,32):(1@lane,4)");
      BO("tirx_param_tensor", t, tirx_param_tensor(B(e), name_of(e, "g"), DT(e, TIRX_F32), nidx(e, rank),
                                                   M(e, 10) ? NULL : shape, lay));
      if (t && e->ngt < MAXTS && tirx_tensor_dtype(t) == TIRX_F32 && !lay) e->gt[e->ngt++] = t;
      break;
    }
    default: {
      int rank = 1 + rint_below(2);
      tirx_expr *shape[8] = {0}, *strides[8] = {0};
      for (int i = 0; i < rank; i++) {
        shape[i] = e->npint && chance(70) ? e->pint[rint_below(e->npint)] : tirx_int(b, 1 + rint_below(300));
        strides[i] = e->npint && chance(50) ? e->pint[rint_below(e->npint)] : tirx_int(b, 1 + rint_below(300));
      }
      if (M(e, 30)) strides[rint_below(rank)] = chance(50) ? bad_expr(e, 'i') : tirx_int(b, mut_i64(8));
      BO("tirx_param_tensor_strided", t,
         tirx_param_tensor_strided(B(e), name_of(e, "g"), DT(e, TIRX_F32), nidx(e, rank),
                                   M(e, 10) ? NULL : shape, M(e, 10) ? NULL : strides));
      if (t && e->ngt < MAXTS && tirx_tensor_dtype(t) == TIRX_F32) e->gt[e->ngt++] = t;
      break;
    }
    }
  } else if (w < 8) { /* allocations */
    switch (rint_below(5)) {
    case 0: case 1: {
      int64_t shape[8] = {chance(50) ? 16 : 8, chance(50) ? 16 : 32};
      if (M(e, 40)) shape[rint_below(2)] = mut_i64(shape[0]);
      const tirx_layout *lay = NULL;
      if (chance(20)) {
        const char *texts[] = {"(16,16):(16,1)", "(8,32):(32,1)", "(16,16):(1,16)", "(8,8):(8,1)", "(4,4):(1@lane,1)"};
        lay = tirx_layout_parse(tirx_builder_arena(b), PICK(texts));
      }
      BO("tirx_alloc_shared", t, tirx_alloc_shared(B(e), name_of(e, "sm"), DT(e, TIRX_F32), nidx(e, 2),
                                                  M(e, 10) ? NULL : shape, lay));
      if (t && e->nsh < MAXTS && tirx_tensor_dtype(t) == TIRX_F32 && tirx_tensor_rank(t) == 2) e->sh[e->nsh++] = t;
      break;
    }
    case 2: {
      int64_t shape[8] = {8, 8};
      BO("tirx_alloc_shared_view", t,
         tirx_alloc_shared_view(B(e), name_of(e, "sv"), TS(e), LV(e, 0), DT(e, TIRX_F32), nidx(e, 2),
                                M(e, 10) ? NULL : shape, NULL));
      if (t && e->nsh < MAXTS && tirx_tensor_dtype(t) == TIRX_F32 && tirx_tensor_rank(t) == 2) e->sh[e->nsh++] = t;
      break;
    }
    case 3: {
      int64_t shape[8] = {1 + rint_below(8)};
      if (M(e, 40)) shape[0] = mut_i64(4);
      BO("tirx_alloc_local", t, tirx_alloc_local(B(e), name_of(e, "lc"), DT(e, TIRX_F32), nidx(e, 1),
                                                M(e, 10) ? NULL : shape, NULL));
      if (t && e->nlo < MAXTS && tirx_tensor_dtype(t) == TIRX_F32 && tirx_tensor_rank(t) == 1) e->lo[e->nlo++] = t;
      break;
    }
    default:
      BO("tirx_alloc_mbarrier", t, tirx_alloc_mbarrier(B(e), name_of(e, "bar"), LV(e, 1 + rint_below(4))));
      if (t && e->nbar < MAXTS) e->bar[e->nbar++] = t;
      break;
    }
  } else if (w < 12) { /* constants and builtins */
    switch (rint_below(12)) {
    case 0: BO("tirx_int", x, tirx_int(B(e), LV(e, rint_below(100)))); add(e->ie, &e->ni, x); break;
    case 1: {
      tirx_dtype dt = DT(e, chance(50) ? TIRX_I32 : TIRX_I64);
      BO("tirx_int_typed", x, tirx_int_typed(B(e), LV(e, rint_below(100)), dt));
      add(dt == TIRX_I32 || dt == TIRX_I64 ? e->ie : e->me, dt == TIRX_I32 || dt == TIRX_I64 ? &e->ni : &e->nm, x);
      break;
    }
    case 2: {
      tirx_dtype dt = DT(e, TIRX_F32);
      BO("tirx_float", x, tirx_float(B(e), M(e, 50) ? mut_double() : 1.5, dt));
      add(dt == TIRX_F32 ? e->fe : e->me, dt == TIRX_F32 ? &e->nf : &e->nm, x);
      break;
    }
    case 3: BO("tirx_bool", x, tirx_bool(B(e), chance(50))); add(e->be, &e->nb, x); break;
    case 4: BO("tirx_thread_idx", x, tirx_thread_idx(B(e), IV(e, rint_below(3)))); add(e->ie, &e->ni, x); break;
    case 5: BO("tirx_block_idx", x, tirx_block_idx(B(e), IV(e, rint_below(3)))); add(e->ie, &e->ni, x); break;
    case 6: BO("tirx_block_dim", x, tirx_block_dim(B(e), IV(e, rint_below(3)))); add(e->ie, &e->ni, x); break;
    case 7: BO("tirx_grid_dim", x, tirx_grid_dim(B(e), IV(e, rint_below(3)))); add(e->ie, &e->ni, x); break;
    case 8: BO("tirx_thread_linear", x, tirx_thread_linear(B(e))); add(e->ie, &e->ni, x); break;
    case 9: BO("tirx_lane_id", x, tirx_lane_id(B(e))); add(e->ie, &e->ni, x); break;
    case 10: BO("tirx_warp_id", x, tirx_warp_id(B(e))); add(e->ie, &e->ni, x); break;
    default: {
      tirx_tensor *tt = chance(50) ? TG(e) : TS(e);
      BO("tirx_tensor_dim", x, tirx_tensor_dim(B(e), tt, IV(e, 0)));
      add(e->ie, &e->ni, x);
      break;
    }
    }
  } else if (w < 30) { /* expressions */
    switch (rint_below(10)) {
    case 0: case 1: case 2: {
      static const struct { const char *n; tirx_expr *(*f)(tirx_builder *, tirx_expr *, tirx_expr *); } ops[] = {
          {"tirx_add", tirx_add}, {"tirx_sub", tirx_sub}, {"tirx_mul", tirx_mul}, {"tirx_div", tirx_div},
          {"tirx_mod", tirx_mod}, {"tirx_min", tirx_min}, {"tirx_max", tirx_max}, {"tirx_ceildiv", tirx_ceildiv},
          {"tirx_bit_and", tirx_bit_and}, {"tirx_bit_or", tirx_bit_or}, {"tirx_bit_xor", tirx_bit_xor},
          {"tirx_shl", tirx_shl}, {"tirx_shr", tirx_shr}};
      int o = rint_below((int)(sizeof ops / sizeof ops[0]));
      tirx_expr *p = XI(e), *q = XI(e);
      BO(ops[o].n, x, ops[o].f(B(e), p, q));
      add(e->ie, &e->ni, x);
      break;
    }
    case 3: case 4: {
      static const struct { const char *n; tirx_expr *(*f)(tirx_builder *, tirx_expr *, tirx_expr *); } ops[] = {
          {"tirx_add", tirx_add}, {"tirx_sub", tirx_sub}, {"tirx_mul", tirx_mul}, {"tirx_div", tirx_div},
          {"tirx_min", tirx_min}, {"tirx_max", tirx_max}, {"tirx_pow", tirx_pow}, {"tirx_mod", tirx_mod}};
      int o = rint_below((int)(sizeof ops / sizeof ops[0]));
      tirx_expr *p = XF(e), *q = XF(e);
      BO(ops[o].n, x, ops[o].f(B(e), p, q));
      add(e->fe, &e->nf, x);
      break;
    }
    case 5: {
      static const struct { const char *n; tirx_expr *(*f)(tirx_builder *, tirx_expr *, tirx_expr *); } ops[] = {
          {"tirx_eq", tirx_eq}, {"tirx_ne", tirx_ne}, {"tirx_lt", tirx_lt}, {"tirx_le", tirx_le},
          {"tirx_gt", tirx_gt}, {"tirx_ge", tirx_ge}, {"tirx_and", tirx_and}, {"tirx_or", tirx_or}};
      int o = rint_below((int)(sizeof ops / sizeof ops[0]));
      tirx_expr *p, *q;
      if (o >= 6) p = XB(e), q = XB(e);
      else if (chance(50)) p = XI(e), q = XI(e);
      else p = XF(e), q = XF(e);
      BO(ops[o].n, x, ops[o].f(B(e), p, q));
      add(e->be, &e->nb, x);
      break;
    }
    case 6: {
      int k = rint_below(4);
      if (k == 0) { tirx_expr *p = XB(e); BO("tirx_not", x, tirx_not(B(e), p)); add(e->be, &e->nb, x); }
      else if (k == 1) { tirx_expr *p = XI(e); BO("tirx_neg", x, tirx_neg(B(e), p)); add(e->ie, &e->ni, x); }
      else if (k == 2) { tirx_expr *c = XB(e), *p = XF(e), *q = XF(e); BO("tirx_select", x, tirx_select(B(e), c, p, q)); add(e->fe, &e->nf, x); }
      else { tirx_expr *c = XB(e), *p = XI(e), *q = XI(e); BO("tirx_select", x, tirx_select(B(e), c, p, q)); add(e->ie, &e->ni, x); }
      break;
    }
    case 7: {
      static const tirx_dtype dts[] = {TIRX_F32, TIRX_I32, TIRX_I64, TIRX_F16, TIRX_BF16, TIRX_F64, TIRX_U8, TIRX_U32, TIRX_BOOL};
      tirx_dtype dt = M(e, 40) ? mut_dtype() : PICK(dts);
      tirx_expr *p = chance(50) ? XI(e) : XF(e);
      BO("tirx_cast", x, tirx_cast(B(e), p, dt));
      if (dt == TIRX_F32) add(e->fe, &e->nf, x);
      else if (dt == TIRX_I32 || dt == TIRX_I64) add(e->ie, &e->ni, x);
      else if (dt == TIRX_BOOL) add(e->be, &e->nb, x);
      else add(e->me, &e->nm, x);
      break;
    }
    case 8: {
      static const struct { const char *n; tirx_expr *(*f)(tirx_builder *, tirx_expr *); } ops[] = {
          {"tirx_exp", tirx_exp}, {"tirx_exp2", tirx_exp2}, {"tirx_log", tirx_log}, {"tirx_log2", tirx_log2},
          {"tirx_sqrt", tirx_sqrt}, {"tirx_rsqrt", tirx_rsqrt}, {"tirx_tanh", tirx_tanh}, {"tirx_erf", tirx_erf},
          {"tirx_fabs", tirx_fabs}};
      tirx_expr *p = XF(e);
      if (chance(40)) {
        tirx_math_op op = (tirx_math_op)(M(e, 50) ? mut_int(3) : rint_below(TIRX_MATH_COUNT));
        BO("tirx_math", x, tirx_math(B(e), op, p));
      } else {
        int o = rint_below((int)(sizeof ops / sizeof ops[0]));
        BO(ops[o].n, x, ops[o].f(B(e), p));
      }
      add(e->fe, &e->nf, x);
      break;
    }
    default: {
      int k = rint_below(5);
      if (k < 3) {
        tirx_tensor *tt = k == 0 ? TG(e) : k == 1 ? TS(e) : (e->nlo && !M(e, 40) ? e->lo[rint_below(e->nlo)] : bad_tensor(e));
        int rank = tt ? tirx_tensor_rank(tt) : 1;
        tirx_expr **ix = idx_list(e, ib, rank);
        BO("tirx_load", x, tirx_load(B(e), tt, nidx(e, rank), ix));
        add(e->fe, &e->nf, x);
      } else {
        tirx_expr *p = chance(70) ? XF(e) : XI(e), *q = XI(e);
        if (k == 3) BO("tirx_shfl_xor", x, tirx_shfl_xor(B(e), p, q));
        else BO("tirx_shfl_down", x, tirx_shfl_down(B(e), p, q));
        add(e->fe, &e->nf, x);
      }
      break;
    }
    }
  } else if (w < 46) { /* control flow and statements */
    switch (rint_below(12)) {
    case 0: case 1: {
      tirx_expr *lo = XI(e), *hi = XI(e), *st = chance(70) && !e->mut ? NULL : XI(e);
      tirx_loop_kind kd = (tirx_loop_kind)(M(e, 30) ? mut_int(1) : rint_below(2));
      if (kd == TIRX_LOOP_UNROLL && !e->mut) lo = tirx_int(b, 0), hi = tirx_int(b, 1 + rint_below(4));
      BO("tirx_for_begin", x, tirx_for_begin(B(e), name_of(e, "i"), lo, hi, st, kd));
      if (tirx_builder_status(b) == TIRX_OK && !e->bnull) { push_block(e, 'f'); add(e->ie, &e->ni, x); }
      break;
    }
    case 2: {
      tirx_expr *c = XB(e);
      BV("tirx_if_begin", tirx_if_begin(B(e), c));
      if (tirx_builder_status(b) == TIRX_OK && !e->bnull) push_block(e, 'i');
      break;
    }
    case 3:
      if (e->nopen && e->open[e->nopen - 1].kind == 'i') {
        BV("tirx_else", tirx_else(B(e)));
        if (tirx_builder_status(b) == TIRX_OK && !e->bnull) {
          pop_block(e);
          push_block(e, 'e');
        }
      } else if (e->mut) BV("tirx_else", tirx_else(B(e)));
      else if (e->nopen) close_one(e, false);
      break;
    case 4:
      if (e->nopen || e->mut) close_one(e, e->mut);
      break;
    case 5: {
      tirx_expr *v = chance(50) ? XI(e) : XF(e);
      BO("tirx_let", x, tirx_let(B(e), name_of(e, "l"), v));
      if (x) add(v && e->nf && v == e->fe[e->nf - 1] ? e->fe : e->ie, v && e->nf && v == e->fe[e->nf - 1] ? &e->nf : &e->ni, NULL);
      /* the let's dtype is its value's: file it by where the value came from */
      if (x) {
        bool isf = false;
        for (int i = 0; i < e->nf; i++) if (e->fe[i] == v) isf = true;
        bool isi = false;
        for (int i = 0; i < e->ni; i++) if (e->ie[i] == v) isi = true;
        if (isf) add(e->fe, &e->nf, x);
        else if (isi) add(e->ie, &e->ni, x);
        else add(e->me, &e->nm, x);
      }
      break;
    }
    case 6: {
      bool fl = chance(50);
      tirx_dtype dt = DT(e, fl ? TIRX_F32 : TIRX_I32);
      tirx_expr *init = chance(30) ? NULL : fl ? XF(e) : XI(e);
      BO("tirx_var", x, tirx_var(B(e), name_of(e, "v"), dt, init));
      if (x) {
        add(e->ve, &e->nv, x);
        if (dt == TIRX_F32) add(e->fe, &e->nf, x);
        else if (dt == TIRX_I32) add(e->ie, &e->ni, x);
        else add(e->me, &e->nm, x);
      }
      break;
    }
    case 7: {
      tirx_expr *v = e->nv && !M(e, 40) ? e->ve[rint_below(e->nv)] : bad_expr(e, 'i');
      bool isf = false;
      for (int i = 0; i < e->nf; i++) if (e->fe[i] == v) isf = true;
      tirx_expr *val = isf ? XF(e) : XI(e);
      BV("tirx_assign", tirx_assign(B(e), v, val));
      break;
    }
    case 8: case 9: {
      tirx_tensor *tt = chance(60) ? TG(e) : chance(50) ? TS(e) : (e->nlo && !M(e, 40) ? e->lo[rint_below(e->nlo)] : bad_tensor(e));
      int rank = tt ? tirx_tensor_rank(tt) : 1;
      tirx_expr **ix = idx_list(e, ib, rank);
      tirx_expr *val = XF(e);
      if (chance(80)) BV("tirx_store", tirx_store(B(e), tt, nidx(e, rank), ix, val));
      else BV("tirx_atomic_add", tirx_atomic_add(B(e), tt, nidx(e, rank), ix, val));
      break;
    }
    case 10: BV("tirx_sync_threads", tirx_sync_threads(B(e))); break;
    default: BV("tirx_sync_warp", tirx_sync_warp(B(e))); break;
    }
  } else if (w < 56) { /* launch settings */
    switch (rint_below(8)) {
    case 0: {
      tirx_expr *gx = chance(80) ? XI(e) : NULL, *gy = chance(30) ? XI(e) : NULL, *gz = chance(20) ? XI(e) : NULL;
      BV("tirx_set_grid", tirx_set_grid(B(e), gx, gy, gz));
      break;
    }
    case 1: case 2: {
      int bx = IV(e, PICK(((int[]){32, 64, 128, 256}))), by = IV(e, 1), bz = IV(e, 1);
      BV("tirx_set_block", tirx_set_block(B(e), bx, by, bz));
      break;
    }
    case 3: BV("tirx_set_min_blocks", tirx_set_min_blocks(B(e), IV(e, 1 + rint_below(2)))); break;
    case 4: { tirx_expr *s = XI(e); BV("tirx_set_shared_bytes", tirx_set_shared_bytes(B(e), s)); break; }
    case 5: {
      const char *arches[] = {"sm_80", "sm_90", "sm_90a", "sm_100a", "sm_75", "sm_", "", NULL, "sm_90a;" INJECT, "sm_9999999999", "compute_90", "sm_90x", "sm_100f"};
      BV("tirx_set_target", tirx_set_target(B(e), M(e, 60) ? PICK(arches) : "sm_90a"));
      break;
    }
    case 6: BV("tirx_set_cluster", tirx_set_cluster(B(e), IV(e, 1 + rint_below(2)), IV(e, 1), IV(e, 1))); break;
    default:
      if (e->mut) {
        const char *srcs[] = {NULL, "", "extern \"C\" __global__ void k() {}", "garbage"};
        BV("tirx_set_source", tirx_set_source(B(e), PICK(srcs)));
      }
      break;
    }
  } else if (w < 66) { /* teams, filters, regions */
    switch (rint_below(8)) {
    case 0: {
      tirx_team tm = (tirx_team)(M(e, 50) ? mut_int(2) : rint_below(4));
      BV("tirx_team_begin", tirx_team_begin(B(e), tm));
      if (tirx_builder_status(b) == TIRX_OK && !e->bnull) push_block(e, 't');
      break;
    }
    case 1: {
      static const tirx_axis axes[] = {TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_TID, TIRX_AXIS_WGID, TIRX_AXIS_TID_IN_WG};
      tirx_axis ax = M(e, 40) ? (tirx_axis)mut_int(1) : PICK(axes);
      int64_t lo = LV(e, 0), hi = LV(e, 1 + rint_below(32));
      BV("tirx_filter_begin", tirx_filter_begin(B(e), ax, lo, hi));
      if (tirx_builder_status(b) == TIRX_OK && !e->bnull) push_block(e, 'l');
      break;
    }
    case 2: case 3: {
      tirx_tensor *tt = chance(50) ? TS(e) : TG(e);
      int rank = tt ? tirx_tensor_rank(tt) : 2;
      tirx_expr *begins[8];
      int64_t ext[8];
      for (int i = 0; i < 8; i++) begins[i] = chance(70) && !e->mut ? tirx_int(b, 0) : XI(e), ext[i] = LV(e, 1 + rint_below(8));
      BO("tirx_region_new", r, tirx_region_new(B(e), tt, nidx(e, rank), M(e, 10) ? NULL : begins, M(e, 10) ? NULL : ext));
      if (r && e->nrg < MAXE) e->rg[e->nrg++] = r;
      break;
    }
    case 4: {
      tirx_tensor *tt = chance(70) ? TS(e) : (e->nlo ? e->lo[rint_below(e->nlo)] : TG(e));
      BO("tirx_whole", r, tirx_whole(B(e), tt));
      if (r && e->nrg < MAXE) e->rg[e->nrg++] = r;
      break;
    }
    case 5: {
      tirx_expr *v = XF(e);
      BO("tirx_broadcast", r, tirx_broadcast(B(e), v));
      if (r && e->nrg < MAXE) e->rg[e->nrg++] = r;
      break;
    }
    case 6: BO("tirx_elem_index", x, tirx_elem_index(B(e), IV(e, rint_below(2)))); if (e->mut) add(e->ie, &e->ni, x); break;
    default: {
      int k = rint_below(3);
      if (k == 0) BO("tirx_cluster_ctarank", x, tirx_cluster_ctarank(B(e)));
      else if (k == 1) BO("tirx_cluster_id", x, tirx_cluster_id(B(e), IV(e, 0)));
      else BO("tirx_elect_one", x, tirx_elect_one(B(e)));
      if (k < 2) add(e->ie, &e->ni, x);
      else add(e->be, &e->nb, x);
      break;
    }
    }
  } else if (w < 80) { /* tile primitives */
    tirx_config cfg;
    prim_cfg(e, &cfg);
    const tirx_config *cp = chance(70) ? NULL : &cfg;
    tirx_region *d = RG(e), *s = RG(e), *s2 = RG(e), *s3 = RG(e);
    tirx_op op = (tirx_op)(M(e, 40) ? mut_int(3) : 1 + rint_below(23));
    switch (rint_below(12)) {
    case 0: case 1: BV("tirx_copy", tirx_copy(B(e), d, s, cp)); break;
    case 2: {
      tirx_region *srcs[4] = {s, s2, s3, RG(e)};
      int n = IV(e, 1 + rint_below(3));
      BV("tirx_map", tirx_map(B(e), d, op, n, M(e, 10) ? NULL : srcs, cp));
      break;
    }
    case 3: BV("tirx_unary", tirx_unary(B(e), d, op, s, cp)); break;
    case 4: BV("tirx_binary", tirx_binary(B(e), d, op, s, s2, cp)); break;
    case 5: BV("tirx_ternary", tirx_ternary(B(e), d, op, s, s2, s3, cp)); break;
    case 6: BV("tirx_cast_region", tirx_cast_region(B(e), d, s, cp)); break;
    case 7: { tirx_expr *v = XF(e); BV("tirx_fill", tirx_fill(B(e), d, v, cp)); break; }
    case 8: BV("tirx_select_region", tirx_select_region(B(e), d, s, s2, s3, cp)); break;
    case 9: {
      uint32_t axes = M(e, 40) ? (uint32_t)rnd() : 1u << rint_below(2);
      BV("tirx_reduce", tirx_reduce(B(e), d, s, M(e, 30) ? op : (tirx_op)(17 + rint_below(3)), axes, chance(50), cp));
      break;
    }
    case 10: BV("tirx_copy_async", tirx_copy_async(B(e), d, s, cp)); break;
    default: {
      tirx_gemm_config g = {0};
      if (M(e, 40)) {
        g.family = PICK(((const char *[]){"wgmma", "mma", "scalar", "", "zzz", NULL}));
        g.shape[rint_below(3)] = mut_i64(16);
        g.accumulate = chance(50) ? XB(e) : XI(e);
      }
      if (chance(50)) BV("tirx_gemm", tirx_gemm(B(e), d, s, s2, chance(50) ? &g : NULL));
      else BV("tirx_gemm_async", tirx_gemm_async(B(e), d, s, s2, chance(50) ? &g : NULL));
      break;
    }
    }
  } else if (w < 92) { /* native statements */
    switch (rint_below(22)) {
    case 0: BV("tirx_bulk_commit", tirx_bulk_commit(B(e))); break;
    case 1: BV("tirx_bulk_wait", tirx_bulk_wait(B(e), IV(e, 0), chance(50))); break;
    case 2: { tirx_tensor *tt = TG(e); BV("tirx_tmap_prefetch", tirx_tmap_prefetch(B(e), tt)); break; }
    case 3: BV("tirx_cp_async_commit", tirx_cp_async_commit(B(e))); break;
    case 4: BV("tirx_cp_async_wait", tirx_cp_async_wait(B(e), IV(e, 0))); break;
    case 5: BV("tirx_cp_async_wait_all", tirx_cp_async_wait_all(B(e))); break;
    case 6: { tirx_region *br = BAR(e); BV("tirx_mbarrier_init", tirx_mbarrier_init(B(e), br, LV(e, 1))); break; }
    case 7: { tirx_region *br = BAR(e); BV("tirx_mbarrier_arrive", tirx_mbarrier_arrive(B(e), br)); break; }
    case 8: { tirx_region *br = BAR(e); tirx_expr *c = XI(e); BV("tirx_mbarrier_arrive_cluster", tirx_mbarrier_arrive_cluster(B(e), br, c)); break; }
    case 9: { tirx_region *br = BAR(e); tirx_expr *c = XI(e); BV("tirx_mbarrier_expect_tx", tirx_mbarrier_expect_tx(B(e), br, c)); break; }
    case 10: { tirx_region *br = BAR(e); tirx_expr *c = XI(e); BV("tirx_mbarrier_wait", tirx_mbarrier_wait(B(e), br, c)); break; }
    case 11: BV("tirx_fence_proxy_async", tirx_fence_proxy_async(B(e))); break;
    case 12: BV("tirx_fence_mbarrier_init", tirx_fence_mbarrier_init(B(e))); break;
    case 13: BV("tirx_cluster_sync", tirx_cluster_sync(B(e))); break;
    case 14: BV("tirx_grid_dependency_wait", tirx_grid_dependency_wait(B(e))); break;
    case 15: BV("tirx_grid_launch_dependents", tirx_grid_launch_dependents(B(e))); break;
    case 16: BV("tirx_setmaxnreg", tirx_setmaxnreg(B(e), IV(e, PICK(((int[]){24, 40, 232, 240}))), chance(50))); break;
    case 17: BV("tirx_named_barrier_sync", tirx_named_barrier_sync(B(e), IV(e, 1 + rint_below(15)), IV(e, 128))); break;
    case 18: BV("tirx_named_barrier_arrive", tirx_named_barrier_arrive(B(e), IV(e, 1 + rint_below(15)), IV(e, 128))); break;
    case 19: BV("tirx_wgmma_fence", tirx_wgmma_fence(B(e))); break;
    case 20: BV("tirx_wgmma_commit", tirx_wgmma_commit(B(e))); break;
    default: BV("tirx_wgmma_wait", tirx_wgmma_wait(B(e), IV(e, 0))); break;
    }
  } else { /* rings */
    switch (rint_below(10)) {
    case 0: case 1: {
      tirx_ring *rr;
      BO("tirx_ring_new", rr, tirx_ring_new(B(e), name_of(e, "rg"), IV(e, 1 + rint_below(4)), LV(e, 1), LV(e, 1 + rint_below(2))));
      if (rr && e->nring < 4) e->ring[e->nring++] = rr;
      if (rr && tirx_ring_stages(rr) < 1) fail("tirx_ring_stages < 1", "tirx_ring_new");
      (void)tirx_ring_stages(NULL);
      break;
    }
    case 2: {
      tirx_ring *rs[4] = {NULL, NULL, NULL, NULL};
      int n = 0;
      for (int i = 0; i < e->nring; i++) rs[n++] = e->ring[i];
      if (M(e, 40)) rs[n < 4 && chance(50) ? n++ : n ? rint_below(n) : n++] = chance(50) ? NULL : e->o_ring;
      int nn = M(e, 30) ? mut_int(n) : n; /* past n: NULL entries, within the array */
      BV("tirx_rings_init", tirx_rings_init(B(e), M(e, 10) ? NULL : rs, nn > 4 ? 4 : nn));
      break;
    }
    case 3: { const tirx_ring *rr = RING(e); tirx_expr *n = XI(e); BO("tirx_ring_stage", x, tirx_ring_stage(B(e), rr, n)); add(e->ie, &e->ni, x); break; }
    case 4: { const tirx_ring *rr = RING(e); tirx_expr *n = XI(e); BO("tirx_ring_phase", x, tirx_ring_phase(B(e), rr, n, chance(50))); add(e->ie, &e->ni, x); break; }
    case 5: { const tirx_ring *rr = RING(e); tirx_expr *n = XI(e); BO("tirx_ring_full", r, tirx_ring_full(B(e), rr, n)); if (r && e->nrg < MAXE) e->rg[e->nrg++] = r; break; }
    case 6: { const tirx_ring *rr = RING(e); tirx_expr *n = XI(e); BO("tirx_ring_empty", r, tirx_ring_empty(B(e), rr, n)); if (r && e->nrg < MAXE) e->rg[e->nrg++] = r; break; }
    case 7: { const tirx_ring *rr = RING(e); tirx_expr *s = XI(e), *p = XI(e), *by = XI(e); BV("tirx_ring_acquire", tirx_ring_acquire(B(e), rr, s, p, by)); break; }
    case 8: { const tirx_ring *rr = RING(e); tirx_expr *s = XI(e), *p = XI(e); BV("tirx_ring_wait", tirx_ring_wait(B(e), rr, s, p)); break; }
    default: { const tirx_ring *rr = RING(e); tirx_expr *s = XI(e); BV("tirx_ring_release", tirx_ring_release(B(e), rr, s)); break; }
    }
  }
  e->mut = e->bnull = false;
}

static tirx_builder *make_other(env *e) {
  tirx_builder *o = tirx_builder_create("other");
  tirx_expr *n = tirx_param_int(o, "n", TIRX_I32);
  e->o_i = n;
  e->o_f = tirx_param_scalar(o, "f", TIRX_F32);
  e->o_t = tirx_param_tensor(o, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(o, 128, 1, 1);
  e->o_s = tirx_alloc_shared(o, "s", TIRX_F32, TIRX_DIMS(16, 16), NULL);
  e->o_r = tirx_whole(o, e->o_s);
  e->o_ring = tirx_ring_new(o, "r", 2, 1, 1);
  if (tirx_builder_status(o) != TIRX_OK) {
    fprintf(stderr, "fuzz_api: cannot build the foreign builder: %s\n", tirx_builder_error(o));
    exit(2);
  }
  return o;
}

static long nbuilt, nbuild_failed_clean;

static void check_kernel(env *e, tirx_kernel *k) {
  const char *src = tirx_kernel_source(k), *ir = tirx_kernel_ir_str(k);
  if (!src || !ir || !tirx_kernel_name(k) || !tirx_kernel_target(k)) fail("a built kernel lacks a string", "tirx_kernel_*");
  if (src && strstr(src, INJECT)) fail("an injection marker reached the generated source", INJECT);
  int np = tirx_kernel_num_params(k);
  for (int i = -2; i <= np + 1; i++) {
    (void)tirx_kernel_param_name(k, i);
    (void)tirx_kernel_param_policy(k, i);
  }
  (void)tirx_kernel_param_name(k, INT_MIN), (void)tirx_kernel_param_name(k, INT_MAX);
  (void)tirx_kernel_dispatch_report(k);
  (void)e;
}

static void fuzz_build(void) {
  env E;
  memset(&E, 0, sizeof E);
  env *e = &E;
  desc_reset();
  const char *kname = "k";
  if (chance(8)) {
    kname = PICK(bad_names);
    if (kname && strstr(kname, INJECT)) e->injected = true;
  }
  descf("tirx_builder_create(%s%s%s) ", kname ? "\"" : "", kname ? kname : "NULL", kname ? "\"" : "");
  tirx_clear_error();
  e->b = tirx_builder_create(kname);
  if (!e->b) {
    fail("tirx_builder_create returned NULL", kname ? kname : "NULL");
    return;
  }
  ncalls++;
  if (tirx_builder_status(e->b) != TIRX_OK) {
    const char *msg = tirx_builder_error(e->b);
    if (strncmp(msg, "tirx_builder_create:", 20) != 0) fail("message does not start with the function's name", msg);
    note_message(msg);
    e->first_error = strdup(msg);
  }
  e->other = make_other(e);
  /* the usual prologue, mostly */
  if (chance(90)) {
    e->mut = false;
    BV("tirx_set_block", tirx_set_block(e->b, PICK(((int[]){32, 64, 128, 256})), 1, 1));
    tirx_expr *n;
    BO("tirx_param_int", n, tirx_param_int(e->b, "n", TIRX_I32));
    add(e->ie, &e->ni, n), add(e->pint, &e->npint, n);
    tirx_tensor *t;
    BO("tirx_param_tensor", t, tirx_param_tensor(e->b, "x", TIRX_F32, TIRX_EXPRS(n), NULL));
    if (t) e->gt[e->ngt++] = t;
    BO("tirx_alloc_shared", t, tirx_alloc_shared(e->b, "s", TIRX_F32, TIRX_DIMS(16, 16), NULL));
    if (t) e->sh[e->nsh++] = t;
  }
  int nops = 5 + rint_below(60);
  for (int i = 0; i < nops; i++) one_op(e);
  /* close what is open, mostly */
  while (e->nopen && !chance(3)) close_one(e, false);
  tirx_kernel *k = (tirx_kernel *)&k;
  bool outnull = chance(2);
  desc_len < sizeof desc - 40 ? descf("tirx_kernel_build ") : (void)0;
  tirx_status s0 = tirx_builder_status(e->b);
  tirx_clear_error();
  alarm((unsigned)watchdog_s);
  tirx_status st = tirx_kernel_build(e->b, outnull ? NULL : &k);
  alarm(0);
  ncalls++;
  if (outnull) k = NULL;
  if (st == TIRX_OK) {
    nbuilt++;
    if (!k || k == (tirx_kernel *)&k) fail("tirx_kernel_build: OK without a kernel", "");
    else check_kernel(e, k);
  } else {
    if (!outnull && k) fail("tirx_kernel_build failed but *out is not NULL", tirx_status_name(st));
    const char *msg = tirx_last_error();
    if (s0 != TIRX_OK && outnull) {
      note_message(msg); /* a NULL out may be reported instead of the first error */
    } else if (s0 != TIRX_OK) {
      if (st != s0 || strcmp(msg, e->first_error) != 0) fail("tirx_kernel_build did not report the first error", msg);
    } else {
      nbuild_failed_clean++;
      nstatus[(unsigned)st < 64 ? (unsigned)st : 63]++;
      if (strncmp(msg, "tirx_kernel_build:", 18) != 0) fail("message does not start with the function's name", msg);
      if (strstr(msg, "tirx__")) fail("message names an internal function", msg);
      if (strcmp(tirx_builder_error(e->b), msg) != 0) fail("tirx_builder_error differs from tirx_kernel_build's message", msg);
      note_message(msg);
    }
  }
  /* use after build: the builder stays usable */
  if (chance(30)) {
    free(e->first_error);
    e->first_error = tirx_builder_status(e->b) != TIRX_OK ? strdup(tirx_builder_error(e->b)) : NULL;
    for (int i = rint_below(8); i > 0; i--) one_op(e);
    while (e->nopen && !chance(3)) close_one(e, false);
    tirx_kernel *k2 = NULL;
    alarm((unsigned)watchdog_s);
    st = tirx_kernel_build(e->b, &k2);
    alarm(0);
    if (st == TIRX_OK) check_kernel(e, k2);
    else if (strncmp(tirx_last_error(), "tirx_", 5) != 0) fail("rebuild: message does not name a function", tirx_last_error());
    tirx_kernel_release(k2);
  }
  tirx_kernel_release(k);
  /* NULL kernels and builders: documented as NULL or no-ops */
  if (chance(5)) {
    (void)tirx_kernel_name(NULL), (void)tirx_kernel_source(NULL), (void)tirx_kernel_ir_str(NULL);
    (void)tirx_kernel_target(NULL), (void)tirx_kernel_num_params(NULL), (void)tirx_kernel_param_name(NULL, 0);
    (void)tirx_kernel_param_policy(NULL, 0), (void)tirx_kernel_dispatch_report(NULL);
    (void)tirx_kernel_retain(NULL), tirx_kernel_release(NULL);
    (void)tirx_builder_arena(NULL), (void)tirx_builder_error(NULL), (void)tirx_builder_status(NULL);
    (void)tirx_tensor_rank(NULL), (void)tirx_tensor_dtype(NULL), (void)tirx_tensor_name(NULL);
    tirx_builder_destroy(NULL);
  }
  tirx_builder_destroy(e->b);
  tirx_builder_destroy(e->other);
  free(e->first_error);
}

/* ---- launch mode: argument lists, futures, runtime calls ---- */

static tirx_runtime *rt;
static tirx_kernel *lk; /* n (i64), x, y (f32 [n]), alpha (f32) */

static void make_launch_kernel(void) {
  tirx_builder *b = tirx_builder_create("axpy");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_expr *a = tirx_param_scalar(b, "alpha", TIRX_F32);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 128)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_cast(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 128)), TIRX_I64),
                                          tirx_cast(b, tirx_thread_idx(b, 0), TIRX_I64)));
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_store(b, y, TIRX_EXPRS(i), tirx_add(b, tirx_mul(b, a, tirx_load(b, x, TIRX_EXPRS(i))), tirx_load(b, y, TIRX_EXPRS(i))));
  tirx_if_end(b);
  if (tirx_kernel_build(b, &lk) != TIRX_OK) {
    fprintf(stderr, "fuzz_api: cannot build the launch kernel: %s\n", tirx_builder_error(b));
    exit(2);
  }
  tirx_builder_destroy(b);
}

static void mut_tensor_arg(tirx_tensor_arg *t, int64_t *shape, int64_t *strides) {
  switch (rint_below(8)) {
  case 0: t->data = NULL; break;
  case 1: t->dtype = mut_dtype(); break;
  case 2: t->rank = mut_int(t->rank); if (t->rank > 8 || t->rank < 0) t->shape = chance(50) ? NULL : t->shape; break;
  case 3: t->shape = NULL; break;
  case 4: shape[0] = mut_i64(shape[0]); break;
  case 5: strides[0] = mut_i64(1); t->strides = strides; break;
  case 6: t->data = (void *)((uintptr_t)t->data + 2); break;
  default: shape[0] = INT64_MAX; break;
  }
  if (t->rank > 1 && t->shape == shape) t->rank = 1; /* the arrays hold one entry */
}

static void fuzz_launch(void) {
  int64_t n = 1000;
  int64_t sx[1] = {n}, sy[1] = {n}, tx[1] = {1}, ty[1] = {1};
  tirx_arg args[8];
  int nargs = 4;
  args[0] = tirx_arg_i64(n);
  args[1] = tirx_arg_tensor((void *)(uintptr_t)0x10000000, TIRX_F32, 1, sx, NULL);
  args[2] = tirx_arg_tensor((void *)(uintptr_t)0x20000000, TIRX_F32, 1, sy, NULL);
  args[3] = tirx_arg_f32(2.0f);
  args[4] = args[5] = args[6] = args[7] = tirx_arg_i32(0);
  if (chance(20)) { /* n left out: bound from the shapes */
    args[0] = args[1], args[1] = args[2], args[2] = args[3];
    nargs = 3;
  }
  bool rt_null = false, k_null = false, args_null = false;
  for (int m = 1 + (chance(50) ? 0 : rint_below(3)); m > 0; m--) {
    switch (rint_below(12)) {
    case 0: rt_null = chance(50); k_null = !rt_null; break;
    case 1: args_null = true; break;
    case 2: nargs = mut_int(nargs); break;
    case 3: args[rint_below(4)].kind = (tirx_arg_kind)mut_int(0); break;
    case 4: { int i = rint_below(4); args[i].kind = chance(50) ? TIRX_ARG_DLPACK : TIRX_ARG_DLPACK_VERSIONED; args[i].u.dlpack = NULL; break; }
    case 5: args[0] = chance(50) ? tirx_arg_i32(mut_int(1000)) : tirx_arg_i64(mut_i64(n)); break;
    case 6: args[3] = chance(50) ? tirx_arg_f64(mut_double()) : tirx_arg_f32((float)mut_double()); break;
    default: {
      int i = nargs == 3 ? rint_below(2) : 1 + rint_below(2);
      mut_tensor_arg(&args[i].u.tensor, i == 1 || (nargs == 3 && i == 0) ? sx : sy, i == 1 ? tx : ty);
      args[i].kind = TIRX_ARG_TENSOR;
      break;
    }
    }
  }
  for (int i = 0; i < 8; i++) /* a DLPack kind holds a pointer: NULL (garbage would be the caller's bug) */
    if (args[i].kind == TIRX_ARG_DLPACK || args[i].kind == TIRX_ARG_DLPACK_VERSIONED) args[i].u.dlpack = NULL;
  int nn = nargs < 0 ? nargs : nargs > 8 ? 8 : nargs;
  desc_reset();
  descf("(rt=%s k=%s args=%s nargs=%d kinds=[%d,%d,%d,%d])", rt_null ? "NULL" : "rt", k_null ? "NULL" : "k",
        args_null ? "NULL" : "args", nn, args[0].kind, args[1].kind, args[2].kind, args[3].kind);
  tirx_runtime *r = rt_null ? NULL : rt;
  const tirx_kernel *k = k_null ? NULL : lk;
  const tirx_arg *a = args_null ? NULL : args;
  switch (rint_below(6)) {
  case 0: case 1: {
    tirx_future *f = NULL;
    RUN("tirx_prepare_async", tirx_prepare_async(r, k, a, nn, chance(95) ? &f : NULL));
    if (f) {
      (void)tirx_future_poll(f);
      (void)tirx_future_wait(f, chance(50) ? -1 : 0);
      (void)tirx_future_wait(f, -1);
      (void)tirx_future_status(f), (void)tirx_future_message(f);
      if (chance(30)) RUN("tirx_future_cancel", tirx_future_cancel(f));
      if (chance(30)) RUN("tirx_future_on_complete", tirx_future_on_complete(f, NULL, NULL));
      tirx_future_release(f);
    }
    break;
  }
  case 2: RUN("tirx_launch", tirx_launch(r, k, a, nn, chance(80) ? NULL : (void *)(uintptr_t)(rnd() | 1))); break;
  case 3: {
    tirx_launch_info info = {.size = chance(80) ? sizeof info : mut_size(sizeof info)};
    RUN("tirx_launch_ex", tirx_launch_ex(r, k, a, nn, NULL, chance(80) ? &info : NULL));
    break;
  }
  case 4: {
    const tirx_arg *lists[3] = {a, a, chance(50) ? NULL : a};
    int counts[3] = {nn, nn, nn};
    int count = chance(70) ? 2 : mut_int(2);
    if (count > 3) count = 3;
    RUN("tirx_runtime_warmup", tirx_runtime_warmup(r, k, chance(90) ? lists : NULL, chance(90) ? counts : NULL, count));
    break;
  }
  default: {
    tirx_compiled *c = NULL;
    const char *arches[] = {NULL, "sm_90a", "sm_80", "sm_", "", "sm_75", "garbage", "sm_90a;" INJECT};
    RUN("tirx_compile", tirx_compile(r, k, PICK(arches), chance(95) ? &c : NULL));
    tirx_compiled_destroy(c);
    break;
  }
  }
  if (chance(5)) { /* the future and compiled calls on NULL */
    (void)tirx_future_poll(NULL), (void)tirx_future_status(NULL), (void)tirx_future_message(NULL);
    desc_reset();
    descf("future calls on NULL");
    RUN("tirx_future_wait", tirx_future_wait(NULL, 0));
    RUN("tirx_future_cancel", tirx_future_cancel(NULL));
    RUN("tirx_future_on_complete", tirx_future_on_complete(NULL, NULL, NULL));
    tirx_future_release(NULL);
    (void)tirx_compiled_cubin(NULL, NULL), (void)tirx_compiled_ptx(NULL), (void)tirx_compiled_log(NULL);
    (void)tirx_compiled_arch(NULL), (void)tirx_compiled_entry(NULL), tirx_compiled_destroy(NULL);
  }
  if (chance(10)) { /* runtime accessors, streams and memory */
    desc_reset();
    descf("runtime calls (rt=%s)", rt_null ? "NULL" : "rt");
    (void)tirx_runtime_compile_workers(r), (void)tirx_runtime_has_device(r), (void)tirx_runtime_arch(r);
    (void)tirx_runtime_device_name(r), (void)tirx_runtime_device_error(r), (void)tirx_runtime_context(r);
    (void)tirx_runtime_cache_dir(r);
    RUN("tirx_runtime_health", tirx_runtime_health(r));
    tirx_cache_stats cs = {.size = chance(80) ? sizeof cs : mut_size(sizeof cs)};
    RUN("tirx_runtime_cache_stats", tirx_runtime_cache_stats(r, chance(90) ? &cs : NULL));
    RUN("tirx_runtime_drain", tirx_runtime_drain(r, chance(50) ? 0 : 10));
    void *s = NULL, *p = NULL;
    bool cap = false;
    RUN("tirx_runtime_stream_create", tirx_runtime_stream_create(r, chance(80) ? &s : NULL));
    RUN("tirx_runtime_stream_is_capturing", tirx_runtime_stream_is_capturing(r, s, chance(80) ? &cap : NULL));
    RUN("tirx_runtime_stream_destroy", tirx_runtime_stream_destroy(r, s));
    RUN("tirx_runtime_alloc", tirx_runtime_alloc(r, mut_size(64), chance(80) ? &p : NULL));
    char host[64];
    RUN("tirx_runtime_copy", tirx_runtime_copy(r, chance(50) ? host : NULL, chance(50) ? host : NULL, mut_size(64), (tirx_copy_kind)mut_int(0)));
    RUN("tirx_runtime_copy_async", tirx_runtime_copy_async(r, host, host, 64, (tirx_copy_kind)mut_int(1), NULL));
    RUN("tirx_runtime_fill32", tirx_runtime_fill32(r, chance(50) ? p : NULL, 7, mut_size(16)));
    RUN("tirx_runtime_fill32_async", tirx_runtime_fill32_async(r, p, 7, 16, NULL));
    RUN("tirx_runtime_synchronize", tirx_runtime_synchronize(r, NULL));
    RUN("tirx_runtime_free", tirx_runtime_free(r, p));
  }
  if (chance(2)) { /* tirx_runtime_create with garbage options */
    tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
    for (int m = 1 + rint_below(3); m > 0; m--) {
      switch (rint_below(9)) {
      case 0: o.size = mut_size(sizeof o); break;
      case 1: o.device = mut_int(0); break;
      case 2: o.arch = PICK(((const char *[]){"", "sm_", "sm_75", "sm_90a", "x", "sm_99999999999999"})); break;
      case 3: o.driver_library = PICK(((const char *[]){"", "/nonexistent", "libc.so.6"})); break;
      case 4: o.compile_only = chance(50); break;
      case 5: o.cache_disabled = false, o.cache_dir = PICK(((const char *[]){"", "/proc/nonexistent/x", "/dev/null"})); break;
      case 6: o.capture_policy = (tirx_capture_policy)mut_int(0); break;
      case 7: o.max_parallel_compiles = (unsigned)mut_int(1); break;
      default: o.context = (void *)(uintptr_t)0x1234; o.compile_only = true; break;
      }
    }
    o.compile_workers = 0; /* no worker processes */
    o.compile_in_process = true;
    desc_reset();
    descf("tirx_runtime_create(size=%zu device=%d arch=%s drv=%s co=%d cache=%s cap=%d)", o.size, o.device,
          o.arch ? o.arch : "NULL", o.driver_library ? o.driver_library : "NULL", o.compile_only,
          o.cache_dir ? o.cache_dir : "NULL", (int)o.capture_policy);
    tirx_runtime *r2 = NULL;
    bool optnull = chance(10);
    RUN("tirx_runtime_create", tirx_runtime_create(optnull ? NULL : &o, chance(95) ? &r2 : NULL));
    tirx_runtime_destroy(r2);
  }
}

/* ---- misc mode: layouts, scopes, axes, arenas, statuses ---- */

static const char *const layout_texts[] = {
    "(8,8):(8,1)", "(4,32):(1@lane,4)", "(8,2,4,2):(4@lane,1@warp,1@lane,1@reg)",
    "(16,16):(16,1)+[2:4@warp]", "(8,8):(8,1)+5@warp", "(2,3):(3,1)", "((2,4),8):((1,16),2)"};

static char *mut_text(const char *src) {
  size_t n = strlen(src);
  char *s = malloc(n + 64);
  memcpy(s, src, n + 1);
  for (int m = 1 + rint_below(3); m > 0; m--) {
    size_t len = strlen(s);
    int k = rint_below(5);
    size_t pos = len ? (size_t)rint_below((int)len) : 0;
    if (k == 0 && len) memmove(s + pos, s + pos + 1, len - pos);             /* delete */
    else if (k == 1 && len < n + 50) {                                        /* insert */
      const char cs[] = "()[],:+@0123456789-xlanewarpregm ";
      memmove(s + pos + 1, s + pos, len - pos + 1);
      s[pos] = cs[rint_below((int)sizeof cs - 1)];
    } else if (k == 2 && len) s[pos] = "()[],:+@9"[rint_below(9)];            /* replace */
    else if (k == 3) { s[pos] = '\0'; }                                       /* truncate */
    else if (len + 20 < n + 64) strcat(s, PICK(((const char *[]){"99999999999999999999", ",0", ":0", "@nope", "+[0:1@warp]"})));
  }
  return s;
}

static void fuzz_misc(void) {
  tirx_arena *a = chance(95) ? tirx_arena_create() : NULL;
  tirx_arena *an = chance(90) ? a : NULL;
  tirx_layout *l = NULL, *l2 = NULL;
  desc_reset();
  char *text = NULL;
  const char *tx = PICK(layout_texts);
  if (chance(60)) tx = text = mut_text(tx);
  if (chance(3)) tx = NULL;
  descf("tirx_layout_parse(%s, \"%s\")", an ? "a" : "NULL", tx ? tx : "(NULL)");
  RUNP("tirx_layout_parse", tirx_layout *, l, tirx_layout_parse(an, tx));
  RUNP("tirx_layout_parse", tirx_layout *, l2, tirx_layout_parse(a, PICK(layout_texts)));
  int64_t shape[4] = {4, 8, 2, 2}, strides[4] = {16, 2, 1, 1};
  int rank = chance(80) ? 2 : mut_int(2);
  if (rank > 4) rank = 4;
  if (chance(30)) shape[rint_below(2)] = mut_i64(4);
  if (chance(30)) strides[rint_below(2)] = mut_i64(1);
  tirx_layout *l3 = NULL;
  switch (rint_below(4)) {
  case 0: RUNP("tirx_layout_row_major", tirx_layout *, l3, tirx_layout_row_major(an, rank, chance(95) ? shape : NULL)); break;
  case 1: RUNP("tirx_layout_col_major", tirx_layout *, l3, tirx_layout_col_major(an, rank, chance(95) ? shape : NULL)); break;
  case 2: RUNP("tirx_layout_strided", tirx_layout *, l3, tirx_layout_strided(an, rank, chance(95) ? shape : NULL, chance(95) ? strides : NULL)); break;
  default: {
    tirx_iter d[3] = {{4, 1, TIRX_AXIS_M}, {8, 4, TIRX_AXIS_M}, {2, 1, TIRX_AXIS_LANEID}};
    tirx_iter rr[1] = {{2, 1, TIRX_AXIS_WARPID}};
    tirx_axis_offset off[1] = {{TIRX_AXIS_WARPID, 1}};
    if (chance(40)) d[rint_below(3)].extent = mut_i64(4);
    if (chance(40)) d[rint_below(3)].axis = (tirx_axis)mut_int(0);
    if (chance(30)) rr[0].extent = mut_i64(2);
    if (chance(30)) off[0].axis = (tirx_axis)mut_int(2);
    int nd = chance(80) ? 3 : mut_int(3), nr = chance(80) ? rint_below(2) : mut_int(1), no = chance(80) ? rint_below(2) : mut_int(1);
    if (nd > 3) nd = 3;
    if (nr > 1) nr = 1;
    if (no > 1) no = 1;
    RUNP("tirx_layout_new", tirx_layout *, l3, tirx_layout_new(an, nd, chance(95) ? d : NULL, nr, chance(95) ? rr : NULL, no, chance(95) ? off : NULL));
    break;
  }
  }
  tirx_layout *ls[4] = {l, l2, l3, NULL};
  const tirx_layout *L = ls[rint_below(4)], *L2 = ls[rint_below(4)];
  /* accessors (NULL and out of range) */
  (void)tirx_layout_num_iters(L), (void)tirx_layout_num_replicas(L), (void)tirx_layout_num_offsets(L);
  (void)tirx_layout_offset(L, (tirx_axis)mut_int(0)), (void)tirx_layout_size(L), (void)tirx_layout_replica_count(L);
  (void)tirx_layout_rank(L), (void)tirx_layout_swizzle_bytes(L), (void)tirx_layout_swizzle_elem_bytes(L);
  (void)tirx_layout_contiguous(L), (void)tirx_layout_equal(L, L2), (void)tirx_layout_same(L, L2);
  (void)tirx_layout_vector_width(L, mut_int(4), mut_int(16));
  tirx_iter it;
  tirx_axis_offset ao;
  int i = mut_int(0);
  RUN("tirx_layout_iter", tirx_layout_iter(L, i, chance(90) ? &it : NULL));
  RUN("tirx_layout_replica", tirx_layout_replica(L, i, chance(90) ? &it : NULL));
  RUN("tirx_layout_offset_at", tirx_layout_offset_at(L, i, chance(90) ? &ao : NULL));
  int64_t out[16];
  int cap = chance(70) ? 16 : mut_int(1);
  if (cap > 16) cap = 16;
  RUN("tirx_layout_shape", tirx_layout_shape(L, chance(90) ? out : NULL, cap));
  char *str = tirx_layout_str(L);
  free(str);
  char buf[64];
  size_t bc = chance(50) ? sizeof buf : (size_t)rint_below(8);
  (void)tirx_layout_format(L, chance(90) ? buf : NULL, bc);
  tirx_coord co[8];
  int64_t cnt = 0, ccap = chance(70) ? 8 : mut_i64(1);
  if (ccap > 8) ccap = 8;
  RUN("tirx_layout_eval", tirx_layout_eval(L, mut_i64(3), chance(90) ? co : NULL, ccap, chance(90) ? &cnt : NULL));
  int64_t index[16] = {1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (chance(40)) index[rint_below(3)] = mut_i64(1);
  RUN("tirx_layout_eval_nd", tirx_layout_eval_nd(L, chance(90) ? index : NULL, chance(90) ? co : NULL, ccap, chance(90) ? &cnt : NULL));
  int64_t m;
  RUN("tirx_layout_eval_m", tirx_layout_eval_m(L, mut_i64(3), chance(90) ? &m : NULL));
  int64_t digits[16];
  int nd = 0;
  RUN("tirx_layout_coord", tirx_layout_coord(L, chance(90) ? index : NULL, chance(90) ? digits : NULL, cap, chance(90) ? &nd : NULL));
  int64_t mn, sp;
  RUN("tirx_layout_span", tirx_layout_span(L, (tirx_axis)(chance(70) ? 0 : mut_int(0)), chance(90) ? &mn : NULL, chance(90) ? &sp : NULL));
  /* transformations: the result is NULL with an error, or a layout */
  tirx_layout *res;
  int64_t perm[4] = {1, 0, 2, 3}, beg[4] = {0, 0, 0, 0}, ext[4] = {2, 2, 1, 1};
  if (chance(40)) perm[rint_below(2)] = mut_i64(0);
  if (chance(40)) beg[rint_below(2)] = mut_i64(0);
  if (chance(40)) ext[rint_below(2)] = mut_i64(2);
  int grank = chance(70) ? 2 : mut_int(2);
  if (grank > 4) grank = 4;
  switch (rint_below(22)) {
  case 0: RUNP("tirx_layout_canonicalize", tirx_layout *, res, tirx_layout_canonicalize(an, L)); break;
  case 1: RUNP("tirx_layout_group", tirx_layout *, res, tirx_layout_group(an, L, grank, chance(90) ? shape : NULL)); break;
  case 2: RUNP("tirx_layout_flatten", tirx_layout *, res, tirx_layout_flatten(an, L)); break;
  case 3: RUNP("tirx_layout_permute", tirx_layout *, res, tirx_layout_permute(an, L, grank, chance(90) ? perm : NULL)); break;
  case 4: RUNP("tirx_layout_slice", tirx_layout *, res, tirx_layout_slice(an, L, grank, chance(90) ? shape : NULL, chance(90) ? beg : NULL, chance(90) ? ext : NULL)); break;
  case 5: RUNP("tirx_layout_tile", tirx_layout *, res, tirx_layout_tile(an, L, L2)); break;
  case 6: RUNP("tirx_layout_tile_dense", tirx_layout *, res, tirx_layout_tile_dense(an, L, grank, chance(90) ? ext : NULL)); break;
  case 7: RUNP("tirx_layout_compose", tirx_layout *, res, tirx_layout_compose(an, L, L2)); break;
  case 8: RUNP("tirx_layout_compose_extended", tirx_layout *, res, tirx_layout_compose_extended(an, L, L2)); break;
  case 9: RUNP("tirx_layout_tile_outer", tirx_layout *, res, tirx_layout_tile_outer(an, L, L2)); break;
  case 10: RUNP("tirx_layout_tile_inner", tirx_layout *, res, tirx_layout_tile_inner(an, L, L2)); break;
  case 11: RUNP("tirx_layout_direct_sum", tirx_layout *, res, tirx_layout_direct_sum(an, L, L2)); break;
  case 12: {
    tirx_layout *x = NULL, *y = NULL;
    RUN("tirx_layout_direct_sum_split", tirx_layout_direct_sum_split(an, L, mut_int(1), chance(90) ? &x : NULL, chance(90) ? &y : NULL));
    res = x;
    break;
  }
  case 13: RUNP("tirx_layout_pack", tirx_layout *, res, tirx_layout_pack(an, L, (tirx_axis)mut_int(0), mut_i64(2))); break;
  case 14: RUNP("tirx_layout_unpack", tirx_layout *, res, tirx_layout_unpack(an, L, (tirx_axis)mut_int(0), mut_i64(2))); break;
  case 15: RUNP("tirx_layout_complement", tirx_layout *, res, tirx_layout_complement(an, L, mut_i64(64))); break;
  case 16: RUNP("tirx_layout_logical_divide", tirx_layout *, res, tirx_layout_logical_divide(an, L, L2)); break;
  case 17: RUNP("tirx_layout_logical_product", tirx_layout *, res, tirx_layout_logical_product(an, L, L2)); break;
  case 18: RUNP("tirx_layout_storage_view", tirx_layout *, res, tirx_layout_storage_view(an, L, rnd())); break;
  case 19: RUNP("tirx_layout_swizzle", tirx_layout *, res, tirx_layout_swizzle(an, L, mut_int(128), mut_int(2))); break;
  case 20: {
    switch (rint_below(11)) {
    case 0: RUNP("tirx_layout_mma_m16n8k16_a", tirx_layout *, res, tirx_layout_mma_m16n8k16_a(an)); break;
    case 1: RUNP("tirx_layout_wgmma_acc", tirx_layout *, res, tirx_layout_wgmma_acc(an, mut_int(64), mut_int(64))); break;
    case 2: RUNP("tirx_layout_wgmma_rows", tirx_layout *, res, tirx_layout_wgmma_rows(an, mut_int(64))); break;
    case 3: RUNP("tirx_layout_wgmma_a", tirx_layout *, res, tirx_layout_wgmma_a(an, mut_int(64), mut_int(16))); break;
    case 4: RUNP("tirx_layout_tmem_acc", tirx_layout *, res, tirx_layout_tmem_acc(an, mut_int(128), mut_int(64), mut_int(1))); break;
    case 5: RUNP("tirx_layout_tmem_ld", tirx_layout *, res, tirx_layout_tmem_ld(an, (tirx_tmem_shape)mut_int(0), mut_int(1))); break;
    case 6: RUNP("tirx_layout_ldmatrix", tirx_layout *, res, tirx_layout_ldmatrix(an, mut_int(4))); break;
    case 7: RUNP("tirx_layout_warpgroup_rows", tirx_layout *, res, tirx_layout_warpgroup_rows(an, mut_i64(64), mut_i64(64))); break;
    case 8: RUNP("tirx_layout_smem_tile", tirx_layout *, res, tirx_layout_smem_tile(an, mut_i64(64), mut_i64(64), mut_int(2), mut_int(128))); break;
    case 9: RUNP("tirx_layout_mma_m16n8k16_b", tirx_layout *, res, tirx_layout_mma_m16n8k16_b(an)); break;
    default: RUNP("tirx_layout_mma_m16n8k16_c", tirx_layout *, res, tirx_layout_mma_m16n8k16_c(an)); break;
    }
    break;
  }
  default: (void)tirx_swizzle_apply(mut_int(128), mut_int(2), mut_i64(100)); res = NULL; break;
  }
  (void)res;
  /* scopes */
  tirx_scope *s = NULL, *s2 = NULL;
  RUNP("tirx_scope_new", tirx_scope *, s, tirx_scope_new(an, chance(70) ? 4 : mut_int(4), chance(70) ? 1 : mut_int(1), chance(70) ? 1 : mut_i64(1)));
  const tirx_scope *S = chance(90) ? s : NULL;
  static const tirx_axis faxes[] = {TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_TID, TIRX_AXIS_WGID};
  if (chance(50)) RUNP("tirx_scope_filter", tirx_scope *, s2, tirx_scope_filter(an, S, chance(70) ? PICK(faxes) : (tirx_axis)mut_int(1), mut_i64(0), mut_i64(16)));
  else RUNP("tirx_scope_team", tirx_scope *, s2, tirx_scope_team(an, S, (tirx_team)(chance(60) ? rint_below(5) : mut_int(1))));
  const tirx_scope *S2 = chance(50) ? S : s2;
  (void)tirx_scope_team_kind(S2), (void)tirx_scope_active(S2), (void)tirx_scope_inter(S2), (void)tirx_scope_intra(S2);
  (void)tirx_scope_num_threads(S2), (void)tirx_scope_num_teams(S2), (void)tirx_scope_team_size(S2);
  (void)tirx_scope_contains(S2, mut_i64(0), mut_i64(0), mut_i64(0));
  int64_t tm, rk;
  RUN("tirx_scope_locate", tirx_scope_locate(S2, mut_i64(0), mut_i64(1), mut_i64(0), chance(90) ? &tm : NULL, chance(90) ? &rk : NULL));
  free(tirx_scope_str(S2));
  RUN("tirx_layout_verify", tirx_layout_verify(L, S2));
  /* names and enums */
  (void)tirx_team_name((tirx_team)mut_int(0)), (void)tirx_axis_name((tirx_axis)mut_int(0));
  (void)tirx_axis_is_thread((tirx_axis)mut_int(0));
  (void)tirx_status_name((tirx_status)mut_int(0)), (void)tirx_status_str((tirx_status)mut_int(0));
  (void)tirx_dtype_name(mut_dtype()), (void)tirx_dtype_size(mut_dtype());
  tirx_axis ax;
  const char *an_names[] = {NULL, "", "lane", "laneid", "warp", "nope", "m", "x y", "TRAPMARK"};
  const char *nm = PICK(an_names);
  desc_reset();
  descf("tirx_axis_lookup(%s)", nm ? nm : "NULL");
  RUN("tirx_axis_lookup", tirx_axis_lookup(nm, chance(90) ? &ax : NULL));
  if (chance(1)) {
    char reg[80];
    snprintf(reg, sizeof reg, "fz%d", rint_below(40));
    const char *rn = chance(70) ? reg : PICK(an_names);
    descf(" tirx_axis_register(%s)", rn ? rn : "NULL");
    RUN("tirx_axis_register", tirx_axis_register(rn, chance(90) ? &ax : NULL));
  }
  (void)tirx_arena_bytes(an);
  free(text);
  tirx_arena_destroy(a);
  if (chance(5)) tirx_arena_destroy(NULL);
}

/* ---- main ---- */

int main(int argc, char **argv) {
  uint64_t seed = 1;
  long iters = -1;
  double seconds = 60;
  const char *mode = "build";
  int opt;
  while ((opt = getopt(argc, argv, "s:n:t:m:vw:p:")) != -1) {
    switch (opt) {
    case 's': seed = strtoull(optarg, NULL, 0); break;
    case 'n': iters = strtol(optarg, NULL, 0); break;
    case 't': seconds = strtod(optarg, NULL); break;
    case 'm': mode = optarg; break;
    case 'v': verbose = true; break;
    case 'w': watchdog_s = atoi(optarg); break;
    case 'p': mut_pct = atoi(optarg); break;
    default:
      fprintf(stderr, "usage: %s [-s SEED] [-n ITERATIONS] [-t SECONDS] [-m build|launch|misc] [-p MUTATE_PCT] [-v] [-w WATCHDOG_S]\n", argv[0]);
      return 2;
    }
  }
  bool build = strcmp(mode, "build") == 0, launch = strcmp(mode, "launch") == 0, misc = strcmp(mode, "misc") == 0;
  if (!build && !launch && !misc) {
    fprintf(stderr, "fuzz_api: unknown mode %s\n", mode);
    return 2;
  }
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
  signal(SIGALRM, on_alarm);
#ifdef HAVE_SANITIZER_DEATH
  __sanitizer_set_death_callback(on_death);
#endif
  if (launch) {
    tirx_runtime_options ro = {.compile_only = true, .cache_disabled = true};
    if (tirx_runtime_create(&ro, &rt) != TIRX_OK) {
      fprintf(stderr, "fuzz_api: tirx_runtime_create: %s\n", tirx_last_error());
      return 2;
    }
    make_launch_kernel();
  }
  double t0 = now_s();
  long i = 0;
  for (; iters < 0 ? now_s() - t0 < seconds : i < iters; i++) {
    if (build) fuzz_build();
    else if (launch) fuzz_launch();
    else fuzz_misc();
  }
  double took = now_s() - t0;
  printf("fuzz_api: mode %s, seed %" PRIu64 ", %ld iterations, %ld calls in %.1f s, %d failures, %d message shapes",
         mode, seed, i, ncalls, took, failures, nshapes);
  if (build) printf(", %ld kernels built, %ld builds refused at tirx_kernel_build", nbuilt, nbuild_failed_clean);
  printf("\n");
  print_shapes();
  tirx_kernel_release(lk);
  tirx_runtime_destroy(rt);
  return failures ? 1 : 0;
}
