/*
 * fuzz_layout.c: libFuzzer harness for the layout parser, the layout algebra and scopes.
 *
 * Built by tests/fuzz/meson.build with -Dfuzz=true (clang, -fsanitize=fuzzer,address,
 * undefined; the library is compiled again with the sanitizers). tools/fuzz.sh runs it.
 *
 * Input format (the seed files in tests/fuzz/corpus/layout/ use it too)
 * ---------------------------------------------------------------------
 *
 *     TEXT SEP OPS
 *
 *   TEXT  the bytes before SEP, copied, NUL-terminated and fed to tirx_layout_parse().
 *   SEP   the first byte of the input that is '\n' or NUL (so TEXT holds neither). With no
 *         separator the whole input is TEXT and OPS is empty.
 *   OPS   the remaining bytes, read as a program: one opcode byte (taken modulo the number of
 *         operations, table below) followed by the operand bytes that operation reads. Reading
 *         past the end yields zero bytes, so every byte string is a valid program. At most
 *         MAX_OPS operations run.
 *
 * A seed file is therefore written as a layout on the first line followed by arbitrary op
 * bytes (printable characters are fine: 'a' = 97 is opcode 97 % N_OPS).
 *
 * The harness keeps a pool of layouts (the parsed one first; a row-major 4x8 when the parse
 * fails) and a pool of scopes. Operations pick their operands from the pools by an operand
 * byte and put their results back, so later operations work on derived layouts.
 *
 *   op  name          operands                           result / checks
 *   0   CANON         layout                             canonicalize: same size, grouping and
 *                                                        swizzle, same point sets at sampled x,
 *                                                        idempotent, equal() to the input
 *   1   EQUAL         layout, variant recipe             equal(a, b) true implies the same
 *                                                        point sets; on small layouts it must
 *                                                        agree with brute force
 *   2   GROUP         layout, shape recipe               same points, rank and shape as asked
 *   3   FLATTEN       layout                             rank 0, same points
 *   4   PERMUTE       layout, permutation                shape and points permuted
 *   5   SLICE         layout, shape, begin/extent        result(y) == parent(begin + y)
 *   6   TILE          outer/inner recipe                 tile/tile_dense shapes and points
 *   7   COMPOSE       layout, index-map recipe           (l o f)(x) == l(f(x))
 *   8   STORAGE_VIEW  layout, keep mask                  points projected on the kept axes
 *   9   VECTOR_WIDTH  layout, elem/max bytes             sampled runs contiguous and aligned
 *   10  CONTIGUOUS    layout                             sampled neighbours adjacent on m
 *   11  SWIZZLE       layout, bytes, elem, m             points swizzled; apply() an involution
 *   12  SPAN          layout, axis                       sampled coordinates inside the span
 *   13  EVAL          layout, index and cap recipes      statuses and counts as documented;
 *                                                        eval_m and eval_nd agree with eval
 *   14  STR           layout, format cap                 parse(str(l)) is tirx_layout_same as l
 *   15  NEW           iters, replicas, offsets           tirx_layout_new from raw parts
 *   16  FRAGMENT      kind and sizes                     mma/wgmma/ldmatrix/smem/strided layouts
 *   17  SCOPE_NEW     warps, cluster size, clusters      threads == teams * team size, ...
 *   18  SCOPE_FILTER  scope, axis, lo, hi                A' = A restricted to [lo, hi) on axis
 *   19  SCOPE_TEAM    scope, team kind                   same threads, unique (team, rank)
 *   20  COORD         layout, index, cap                 digits in range, rebuild the index
 *   21  TILE_RECOVER  layout, given half, which          the recovered half tiles back to l
 *   22  DIRECT_SUM    x, y                               points are x(i) + y(j); split sums back
 *   23  PACK          layout, axis, factor               pack(unpack(l)) == l; pack(l)(x) is
 *                                                        l(x * factor) / factor on the axis
 *   24  CUTE          layouts, op, cosize                complement injective and large enough;
 *                                                        logical_divide/product sizes and copies
 *   25  VERIFY        scope, layout recipe               tirx_layout_verify: the same answer for
 *                                                        the canonical form; brute force over
 *                                                        every point on small layouts
 *   26  TMEM          acc or ld, sizes                   tmem_acc/tmem_ld accept what their
 *                                                        comments say; PTX formulas at samples
 *   27  COMPOSE_EXT   layout, index-map recipe           (l o f)(x) == l_ext(f(x)), l's outermost
 *                                                        iter grown; never fails where compose
 *                                                        succeeds
 *   28  SLICE_RUN     iters whose carries coincide       long runs: slice law at samples; runs
 *                                                        up to 256: accepted exactly when
 *                                                        brute force finds a layout
 *
 * Every call must succeed or fail with a status its documentation allows. The harness
 * abort()s only on a violated invariant (the checks above, or a broken error contract); a
 * returned error is never a finding by itself. TIRX_E_INTERNAL is always a finding. Set
 * TIRX_FUZZ_LAX=1 in the environment to keep only the algebraic invariants (no status-set,
 * error-message or brute-force completeness checks) when the contract checks get in the way
 * of finding memory errors.
 *
 * Each input gets a fresh arena, destroyed at the end; strings from tirx_layout_str() and
 * tirx_scope_str() are freed, so LeakSanitizer reports real leaks only.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tirx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- failure reporting ---------------------------------------------------------------------- */

static const char *cur_text = ""; /* the TEXT part of the current input, for messages */
static bool strict = true;        /* contract checks on (TIRX_FUZZ_LAX unset) */

static void fail_(int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void fail_(int line, const char *cond, const char *fmt, ...) {
  fprintf(stderr, "\nfuzz_layout: INVARIANT violated (fuzz_layout.c:%d): %s\n  ", line, cond);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n  input text: \"%s\"\n  last error: %s: %s\n", cur_text,
          tirx_status_name(tirx_last_status()), tirx_last_error());
  fflush(stderr);
  abort();
}

#define INVARIANT(cond, ...)                                                                 \
  do {                                                                                       \
    if (!(cond)) fail_(__LINE__, #cond, __VA_ARGS__);                                        \
  } while (0)

/* A layout's text for messages (four rotating static buffers). */
static const char *show(const tirx_layout *l) {
  static char buf[4][1024];
  static int k;
  char *b = buf[k++ & 3];
  if (!l) return "(null)";
  if (tirx_layout_format(l, b, sizeof buf[0]) < 0) snprintf(b, sizeof buf[0], "(unprintable)");
  return b;
}

/* ---- documented statuses -------------------------------------------------------------------- */

#define BIT(s) (1u << (unsigned)(TIRX_##s))
/* What every layout constructor may return (the errors of tirx_layout_new, and memory). */
#define S_MAKE                                                                               \
  (BIT(E_NULL_ARG) | BIT(E_INVALID_ARG) | BIT(E_UNKNOWN_AXIS) | BIT(E_LIMIT) |               \
   BIT(E_OVERFLOW) | BIT(E_NO_MEMORY))
#define S_PARSE (S_MAKE | BIT(E_PARSE))
#define S_CANON (BIT(E_NULL_ARG) | BIT(E_OVERFLOW) | BIT(E_NO_MEMORY)) /* layout.h: issue 18 */
#define S_GROUP (S_MAKE | BIT(E_NOT_REPRESENTABLE))
#define S_SLICE (S_GROUP | BIT(E_OUT_OF_RANGE))
#define S_TILE (S_MAKE | BIT(E_NOT_REPRESENTABLE) | BIT(E_NOT_SUPPORTED))
#define S_COMPOSE (S_MAKE | BIT(E_OUT_OF_RANGE) | BIT(E_NOT_REPRESENTABLE))
#define S_FRAGMENT (S_MAKE | BIT(E_NOT_SUPPORTED))
#define S_EVAL                                                                               \
  (BIT(E_NULL_ARG) | BIT(E_INVALID_ARG) | BIT(E_OUT_OF_RANGE) | BIT(E_BUFFER_TOO_SMALL))
#define S_SPAN (BIT(E_NULL_ARG) | BIT(E_UNKNOWN_AXIS) | BIT(E_OVERFLOW))
#define S_SCOPE (S_MAKE | BIT(E_SCOPE))

/*
 * Checks a failed call's error: it must be recorded (tirx_last_status() != OK), must not be
 * TIRX_E_INTERNAL, and (strict mode) must be one of the allowed statuses with a message that
 * starts with a tirx function name.
 */
static void check_failure(const char *fn, unsigned allowed, const char *args) {
  tirx_status st = tirx_last_status();
  INVARIANT(st != TIRX_E_INTERNAL, "%s(%s) reported an internal error", fn, args);
  if (!strict) return;
  INVARIANT(st != TIRX_OK, "%s(%s) failed without recording an error", fn, args);
  INVARIANT((unsigned)st < 32 && (allowed & (1u << (unsigned)st)),
            "%s(%s) returned %s, which its documentation does not list", fn, args,
            tirx_status_name(st));
  INVARIANT(strncmp(tirx_last_error(), "tirx_", 5) == 0,
            "%s(%s): the error message does not start with a function name", fn, args);
}

/* For object-returning calls: true when p is non-NULL, else checks the failure. */
static bool ok_obj(const void *p, const char *fn, unsigned allowed, const char *args) {
  if (p) return true;
  check_failure(fn, allowed, args);
  return false;
}

static bool ok_status(tirx_status st, const char *fn, unsigned allowed, const char *args) {
  if (st == TIRX_OK) return true;
  INVARIANT(!strict || tirx_last_status() == st, "%s(%s) returned %s but recorded %s", fn, args,
            tirx_status_name(st), tirx_status_name(tirx_last_status()));
  check_failure(fn, allowed, args);
  return false;
}

/* ---- input reader ---------------------------------------------------------------------------- */

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static uint8_t u8(reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}

static uint64_t u64(reader *r) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)u8(r) << (8 * i);
  return v;
}

/* A value that is usually small, sometimes a boundary of int64. */
static int64_t interesting(reader *r) {
  uint8_t k = u8(r);
  switch (k % 16) {
  case 0: return 0;
  case 1: return 1;
  case 2: return -1;
  case 3: return INT64_MAX;
  case 4: return INT64_MIN;
  case 5: return INT64_MAX / 2 + 1;
  case 6: return (int64_t)1 << (u8(r) % 63);
  case 7: return -((int64_t)1 << (u8(r) % 63));
  case 8: return (int64_t)u64(r);
  case 9: return 32;
  case 10: return 128;
  default: return (int8_t)u8(r);
  }
}

/* ---- harness state --------------------------------------------------------------------------- */

enum { POOL = 16, SPOOL = 8, MAX_OPS = 48, MAXP = 64, NSAMPLES = 4, MAXR = TIRX_LAYOUT_MAX_RANK + 2 };

typedef struct fscope {
  const tirx_scope *s;
  int warps, csize;
  int64_t nclusters;
} fscope;

typedef struct fz {
  tirx_arena *a;
  reader in;
  uint64_t rng;
  const tirx_layout *pool[POOL];
  int np, lnext;
  fscope scopes[SPOOL];
  int ns, snext;
} fz;

static uint64_t rnd(fz *f) { /* xorshift64*, seeded from the input */
  f->rng ^= f->rng >> 12;
  f->rng ^= f->rng << 25;
  f->rng ^= f->rng >> 27;
  return f->rng * 2685821657736338717ULL;
}

static void add_layout(fz *f, const tirx_layout *l) {
  if (!l) return;
  if (f->np < POOL) f->pool[f->np++] = l;
  else f->pool[f->lnext++ % POOL] = l;
}

static const tirx_layout *pick(fz *f) { return f->pool[u8(&f->in) % f->np]; }

/* The i-th sample index of [0, n): 0, n - 1, then pseudo-random. */
static int64_t sample(fz *f, int64_t n, int i) {
  if (i == 0) return 0;
  if (i == 1) return n - 1;
  return (int64_t)(rnd(f) % (uint64_t)n);
}

/* ---- point sets ------------------------------------------------------------------------------ */

typedef struct pset {
  int64_t n;
  tirx_coord p[MAXP * MAXP];
} pset;

static pset PS[4]; /* static: too big for the stack */

static int coord_cmp(const void *a, const void *b) {
  const tirx_coord *x = a, *y = b;
  for (int i = 0; i < TIRX_AXIS_MAX; i++)
    if (x->v[i] != y->v[i]) return x->v[i] > y->v[i] ? 1 : -1;
  return 0;
}

static void pset_norm(pset *s) {
  qsort(s->p, (size_t)s->n, sizeof s->p[0], coord_cmp);
  int64_t k = 0;
  for (int64_t i = 0; i < s->n; i++)
    if (k == 0 || coord_cmp(&s->p[k - 1], &s->p[i]) != 0) s->p[k++] = s->p[i];
  s->n = k;
}

static bool pset_eq(const pset *a, const pset *b) {
  return a->n == b->n && memcmp(a->p, b->p, (size_t)a->n * sizeof a->p[0]) == 0;
}

static bool small_replicas(const tirx_layout *l) {
  int64_t rc = tirx_layout_replica_count(l);
  INVARIANT(rc >= 1, "replica_count of %s is %lld", show(l), (long long)rc);
  return rc <= MAXP;
}

/* The raw points of L(x) in replica order; false (check skipped) when there are too many. */
static bool eval_raw(const tirx_layout *l, int64_t x, pset *s) {
  if (!small_replicas(l)) return false;
  int64_t cnt = -1, rc = tirx_layout_replica_count(l);
  tirx_clear_error();
  tirx_status st = tirx_layout_eval(l, x, s->p, MAXP, &cnt);
  INVARIANT(st == TIRX_OK, "eval(%s, %lld) failed with %s for an index in range", show(l),
            (long long)x, tirx_status_name(st));
  INVARIANT(cnt == rc, "eval(%s, %lld) gave %lld points, replica_count is %lld", show(l),
            (long long)x, (long long)cnt, (long long)rc);
  s->n = cnt;
  return true;
}

/* L(x) as a sorted set without duplicates. */
static bool points(const tirx_layout *l, int64_t x, pset *s) {
  if (!eval_raw(l, x, s)) return false;
  pset_norm(s);
  return true;
}

/* Asserts a(xa) == b(xb) as point sets (skipped when either has too many replicas). */
static void same_points(const tirx_layout *a, int64_t xa, const tirx_layout *b, int64_t xb,
                        const char *what) {
  if (!points(a, xa, &PS[0]) || !points(b, xb, &PS[1])) return;
  INVARIANT(pset_eq(&PS[0], &PS[1]), "%s: %s at %lld and %s at %lld place different points",
            what, show(a), (long long)xa, show(b), (long long)xb);
}

/* Asserts l2 maps every sampled x to the points l maps x to (same sizes required). */
static void same_placement_sampled(fz *f, const tirx_layout *l, const tirx_layout *l2,
                                   const char *what) {
  INVARIANT(tirx_layout_size(l) == tirx_layout_size(l2), "%s: size %lld of %s became %lld (%s)",
            what, (long long)tirx_layout_size(l), show(l), (long long)tirx_layout_size(l2),
            show(l2));
  int64_t n = tirx_layout_size(l);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t x = sample(f, n, i);
    same_points(l, x, l2, x, what);
  }
}

/* The logical shape of a grouped layout into shape[MAXR]; returns the rank. */
static int shape_of(const tirx_layout *l, int64_t *shape) {
  int rank = tirx_layout_rank(l);
  INVARIANT(rank >= 0 && rank <= TIRX_LAYOUT_MAX_RANK, "rank %d of %s", rank, show(l));
  tirx_clear_error();
  tirx_status st = tirx_layout_shape(l, shape, MAXR);
  INVARIANT(st == TIRX_OK, "tirx_layout_shape(%s) failed: %s", show(l), tirx_status_name(st));
  int64_t p = 1;
  for (int k = 0; k < rank; k++) {
    INVARIANT(shape[k] >= 1, "shape[%d] of %s is %lld", k, show(l), (long long)shape[k]);
    INVARIANT(!__builtin_mul_overflow(p, shape[k], &p), "shape of %s overflows", show(l));
  }
  INVARIANT(rank == 0 || p == tirx_layout_size(l), "shape product %lld of %s differs from size",
            (long long)p, show(l));
  return rank;
}

/* Row-major flat index of idx in shape (no overflow: the caller checked the product). */
static int64_t flat_index(int rank, const int64_t *shape, const int64_t *idx) {
  int64_t x = 0;
  for (int k = 0; k < rank; k++) x = x * shape[k] + idx[k];
  return x;
}

static void multi_index(int rank, const int64_t *shape, int64_t x, int64_t *idx) {
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = x % shape[k];
    x /= shape[k];
  }
}

/* ---- shapes and other recipes ------------------------------------------------------------- */

/*
 * A logical shape for l: one of cutting l's iters into consecutive runs, factoring the size by
 * small divisors, a long rank (limits), or raw values. Returns the rank (0 to MAXR - 1).
 */
static int make_shape(fz *f, const tirx_layout *l, int64_t *shape) {
  uint8_t m = u8(&f->in);
  int rank = 1 + (m >> 2) % 4;
  int64_t size = tirx_layout_size(l);
  switch (m & 3) {
  case 0: { /* runs of iters */
    int nd = tirx_layout_num_iters(l), prev = 0;
    for (int k = 0; k < rank; k++) {
      int end = k == rank - 1 ? nd : prev + u8(&f->in) % (nd - prev + 1);
      int64_t e = 1;
      for (int i = prev; i < end; i++) {
        tirx_iter it;
        INVARIANT(tirx_layout_iter(l, i, &it) == TIRX_OK, "iter %d of %s", i, show(l));
        e *= it.extent;
      }
      shape[k] = e;
      prev = end;
    }
    break;
  }
  case 1: { /* factor the size */
    int64_t rem = size;
    for (int k = 0; k < rank - 1; k++) {
      int64_t d = 1 + u8(&f->in) % 16;
      if (rem % d == 0) {
        shape[k] = d;
        rem /= d;
      } else {
        shape[k] = 1;
      }
    }
    shape[rank - 1] = rem;
    break;
  }
  case 2: /* a long rank of ones, size last: may exceed TIRX_LAYOUT_MAX_RANK */
    rank = 1 + u8(&f->in) % (MAXR - 1);
    for (int k = 0; k < rank; k++) shape[k] = 1;
    shape[u8(&f->in) % rank] = size;
    break;
  default: /* raw */
    rank = (m >> 2) % 5;
    for (int k = 0; k < rank; k++) shape[k] = interesting(&f->in);
    break;
  }
  return rank;
}

static void args_shape(char *buf, size_t cap, int rank, const int64_t *shape) {
  size_t n = 0;
  buf[0] = '\0';
  for (int k = 0; k < rank && n + 1 < cap; k++)
    n += (size_t)snprintf(buf + n, cap - n, k ? ",%lld" : "%lld", (long long)shape[k]);
}

/* ---- operations ------------------------------------------------------------------------------ */

static void op_canon(fz *f) {
  const tirx_layout *l = pick(f);
  tirx_clear_error();
  tirx_layout *c = tirx_layout_canonicalize(f->a, l);
  if (!ok_obj(c, "tirx_layout_canonicalize", S_CANON, show(l))) return;
  add_layout(f, c);
  int64_t sl[MAXR], sc[MAXR];
  int rl = shape_of(l, sl), rc = shape_of(c, sc);
  INVARIANT(rl == rc && memcmp(sl, sc, (size_t)rl * sizeof sl[0]) == 0,
            "canonicalize changed the grouping: %s -> %s", show(l), show(c));
  INVARIANT(tirx_layout_swizzle_bytes(l) == tirx_layout_swizzle_bytes(c) &&
                tirx_layout_swizzle_elem_bytes(l) == tirx_layout_swizzle_elem_bytes(c),
            "canonicalize changed the swizzle: %s -> %s", show(l), show(c));
  same_placement_sampled(f, l, c, "canonicalize");
  if (!strict) return;
  INVARIANT(tirx_layout_num_iters(c) <= tirx_layout_num_iters(l) &&
                tirx_layout_num_replicas(c) <= tirx_layout_num_replicas(l),
            "canonicalize added iters: %s -> %s", show(l), show(c));
  tirx_clear_error();
  tirx_layout *c2 = tirx_layout_canonicalize(f->a, c);
  if (!ok_obj(c2, "tirx_layout_canonicalize", S_CANON, show(c))) return;
  INVARIANT(tirx_layout_same(c, c2), "canonicalize is not idempotent: %s -> %s -> %s", show(l),
            show(c), show(c2));
  INVARIANT(tirx_layout_equal(l, c), "equal(l, canonicalize(l)) is false: %s vs %s", show(l),
            show(c));
}

static bool same_swizzle(const tirx_layout *a, const tirx_layout *b) {
  return tirx_layout_swizzle_bytes(a) == tirx_layout_swizzle_bytes(b) &&
         tirx_layout_swizzle_elem_bytes(a) == tirx_layout_swizzle_elem_bytes(b);
}

static void op_equal(fz *f) {
  const tirx_layout *a = pick(f), *b = NULL;
  switch (u8(&f->in) % 5) {
  case 0: b = pick(f); break;
  case 1: b = tirx_layout_canonicalize(f->a, a); break;
  case 2: b = tirx_layout_flatten(f->a, a); break;
  case 3: b = tirx_layout_storage_view(f->a, a, 0); break;
  default: {
    char *s = tirx_layout_str(a);
    if (s) b = tirx_layout_parse(f->a, s);
    free(s);
    break;
  }
  }
  if (!b) return;
  tirx_clear_error();
  bool e = tirx_layout_equal(a, b), e2 = tirx_layout_equal(b, a);
  INVARIANT(e == e2, "equal is not symmetric: %s vs %s", show(a), show(b));
  INVARIANT(tirx_layout_equal(a, a), "equal(a, a) is false: %s", show(a));
  INVARIANT(tirx_layout_same(a, a), "same(a, a) is false: %s", show(a));
  if (tirx_layout_same(a, b))
    INVARIANT(e, "same(a, b) but not equal(a, b): %s vs %s", show(a), show(b));
  int64_t n = tirx_layout_size(a);
  if (e) {
    INVARIANT(n == tirx_layout_size(b) && same_swizzle(a, b),
              "equal() for different sizes or swizzles: %s vs %s", show(a), show(b));
    for (int i = 0; i < NSAMPLES; i++) {
      int64_t x = sample(f, n, i);
      same_points(a, x, b, x, "equal() is true but");
    }
  }
  /* Completeness on small layouts: equal exactly when every index places the same set. */
  if (!strict || n != tirx_layout_size(b) || !same_swizzle(a, b) || n > 64 || !small_replicas(a) ||
      !small_replicas(b))
    return;
  bool brute = true;
  for (int64_t x = 0; x < n && brute; x++) {
    points(a, x, &PS[0]);
    points(b, x, &PS[1]);
    brute = pset_eq(&PS[0], &PS[1]);
  }
  INVARIANT(e == brute, "equal() is %d, brute force says %d: %s vs %s", (int)e, (int)brute,
            show(a), show(b));
}

static void op_group(fz *f) {
  const tirx_layout *l = pick(f);
  int64_t shape[MAXR], got[MAXR];
  int rank = make_shape(f, l, shape);
  char args[256];
  args_shape(args, sizeof args, rank, shape);
  tirx_clear_error();
  tirx_layout *g = tirx_layout_group(f->a, l, rank, shape);
  if (!ok_obj(g, "tirx_layout_group", S_GROUP, args)) return;
  add_layout(f, g);
  int rg = shape_of(g, got);
  INVARIANT(rg == rank && memcmp(got, shape, (size_t)rank * sizeof shape[0]) == 0,
            "group(%s, (%s)) gave %s", show(l), args, show(g));
  same_placement_sampled(f, l, g, "group");
}

static void op_flatten(fz *f) {
  const tirx_layout *l = pick(f);
  tirx_clear_error();
  tirx_layout *g = tirx_layout_flatten(f->a, l);
  if (!ok_obj(g, "tirx_layout_flatten", S_MAKE, show(l))) return;
  add_layout(f, g);
  INVARIANT(tirx_layout_rank(g) == 0, "flatten(%s) has rank %d", show(l), tirx_layout_rank(g));
  same_placement_sampled(f, l, g, "flatten");
}

static void op_permute(fz *f) {
  const tirx_layout *l = pick(f);
  int64_t shape[MAXR], pshape[MAXR], perm[MAXR];
  int rank = shape_of(l, shape);
  uint8_t mode = u8(&f->in);
  int prank = (mode & 7) == 7 ? (int)(u8(&f->in) % MAXR) : rank;
  for (int k = 0; k < prank; k++) perm[k] = k;
  for (int k = prank - 1; k > 0; k--) { /* Fisher-Yates from the input */
    int j = u8(&f->in) % (k + 1);
    int64_t t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
  if ((mode & 7) == 6 && prank > 0) perm[u8(&f->in) % prank] = interesting(&f->in);
  char args[256];
  args_shape(args, sizeof args, prank, perm);
  tirx_clear_error();
  tirx_layout *p = tirx_layout_permute(f->a, l, prank, perm);
  if (!ok_obj(p, "tirx_layout_permute", S_MAKE, args)) return;
  add_layout(f, p);
  INVARIANT(prank == rank && rank > 0, "permute(%s, %d-perm) accepted a rank mismatch", show(l),
            prank);
  int rp = shape_of(p, pshape);
  INVARIANT(rp == rank, "permute(%s, (%s)) gave rank %d", show(l), args, rp);
  for (int k = 0; k < rank; k++)
    INVARIANT(perm[k] >= 0 && perm[k] < rank && pshape[k] == shape[perm[k]],
              "permute(%s, (%s)) gave %s", show(l), args, show(p));
  int64_t n = tirx_layout_size(p);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t y = sample(f, n, i), iy[MAXR], ix[MAXR];
    multi_index(rank, pshape, y, iy);
    for (int k = 0; k < rank; k++) ix[perm[k]] = iy[k];
    same_points(p, y, l, flat_index(rank, shape, ix), "permute");
  }
}

static void op_slice(fz *f) {
  const tirx_layout *l = pick(f);
  int64_t shape[MAXR], begin[MAXR], ext[MAXR], got[MAXR];
  int rank = make_shape(f, l, shape);
  for (int k = 0; k < rank; k++) {
    int64_t s = shape[k];
    uint8_t mode = u8(&f->in) % 4;
    if (s < 1) mode = 3;
    switch (mode) {
    case 0: /* anywhere inside */
      ext[k] = 1 + (int64_t)(u8(&f->in) % (uint64_t)s);
      begin[k] = (int64_t)(u8(&f->in) % (uint64_t)(s - ext[k] + 1));
      break;
    case 1: { /* aligned to a divisor */
      int64_t d = 1 + u8(&f->in) % 8;
      if (s % d == 0) {
        ext[k] = s / d;
        begin[k] = (u8(&f->in) % d) * ext[k];
      } else {
        ext[k] = s;
        begin[k] = 0;
      }
      break;
    }
    case 2:
      ext[k] = s;
      begin[k] = 0;
      break;
    default:
      begin[k] = interesting(&f->in);
      ext[k] = interesting(&f->in);
      break;
    }
  }
  char args[512], a1[160], a2[160], a3[160];
  args_shape(a1, sizeof a1, rank, shape);
  args_shape(a2, sizeof a2, rank, begin);
  args_shape(a3, sizeof a3, rank, ext);
  snprintf(args, sizeof args, "%s, shape (%s), begin (%s), extent (%s)", show(l), a1, a2, a3);
  tirx_clear_error();
  tirx_layout *s = tirx_layout_slice(f->a, l, rank, shape, begin, ext);
  if (!ok_obj(s, "tirx_layout_slice", S_SLICE, args)) return;
  add_layout(f, s);
  int64_t prod = 1;
  for (int k = 0; k < rank; k++) {
    INVARIANT(shape[k] >= 1 && begin[k] >= 0 && ext[k] >= 1 && begin[k] <= shape[k] - ext[k],
              "slice accepted a bad region: %s", args);
    INVARIANT(!__builtin_mul_overflow(prod, shape[k], &prod), "slice: shape overflows: %s", args);
  }
  INVARIANT(rank >= 1 && prod == tirx_layout_size(l), "slice accepted a wrong shape: %s", args);
  int rs = shape_of(s, got);
  INVARIANT(rs == rank && memcmp(got, ext, (size_t)rank * sizeof ext[0]) == 0,
            "slice(%s) is not grouped to the extent: %s", args, show(s));
  int64_t n = tirx_layout_size(s);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t y = sample(f, n, i), iy[MAXR];
    multi_index(rank, ext, y, iy);
    for (int k = 0; k < rank; k++) iy[k] += begin[k];
    if (!points(s, y, &PS[0]) || !points(l, flat_index(rank, shape, iy), &PS[1])) continue;
    INVARIANT(pset_eq(&PS[0], &PS[1]), "slice(%s) = %s: element %lld is not parent(begin + y)",
              args, show(s), (long long)y);
  }
}

static void op_tile(fz *f) {
  uint8_t mode = u8(&f->in) % 4;
  const tirx_layout *inner = pick(f), *outer = NULL;
  int64_t is[MAXR], os[MAXR], ts[MAXR];
  int ri = shape_of(inner, is);
  if (mode == 3) { /* tile_dense */
    int rank = (u8(&f->in) & 7) == 7 ? (int)(u8(&f->in) % MAXR) : ri;
    int64_t reps[MAXR];
    for (int k = 0; k < rank; k++) reps[k] = (u8(&f->in) & 15) == 15 ? interesting(&f->in) : 1 + u8(&f->in) % 4;
    char args[256];
    args_shape(args, sizeof args, rank, reps);
    tirx_clear_error();
    tirx_layout *t = tirx_layout_tile_dense(f->a, inner, rank, reps);
    if (!ok_obj(t, "tirx_layout_tile_dense", S_TILE, args)) return;
    add_layout(f, t);
    int rt = shape_of(t, ts);
    INVARIANT(rt == ri && rank == ri, "tile_dense(%s, (%s)) has rank %d", show(inner), args, rt);
    for (int k = 0; k < rank; k++) {
      int64_t want = 0;
      INVARIANT(!__builtin_mul_overflow(is[k], reps[k], &want) && ts[k] == want,
                "tile_dense(%s, (%s)) = %s: wrong shape", show(inner), args, show(t));
    }
    /* The first tile is the inner layout itself. */
    int64_t ni = tirx_layout_size(inner);
    for (int i = 0; i < NSAMPLES; i++) {
      int64_t y = sample(f, ni, i), idx[MAXR];
      multi_index(rank, is, y, idx);
      same_points(t, flat_index(rank, ts, idx), inner, y, "tile_dense first tile");
    }
    return;
  }
  if (mode == 0 || ri == 0) {
    outer = pick(f);
  } else { /* a strided outer layout of the inner layout's rank */
    int64_t shape[MAXR], strides[MAXR];
    for (int k = 0; k < ri; k++) {
      shape[k] = 1 + u8(&f->in) % 4;
      strides[k] = mode == 2 ? interesting(&f->in) : (int8_t)u8(&f->in);
    }
    outer = tirx_layout_strided(f->a, ri, shape, strides);
    if (!outer) return;
    add_layout(f, outer);
  }
  int ro = shape_of(outer, os);
  tirx_clear_error();
  tirx_layout *t = tirx_layout_tile(f->a, outer, inner);
  char args[64];
  snprintf(args, sizeof args, "ranks %d and %d", ro, ri);
  if (!ok_obj(t, "tirx_layout_tile", S_TILE, args)) return;
  add_layout(f, t);
  INVARIANT(ro == ri && ri > 0, "tile(%s, %s) accepted ranks %d and %d", show(outer), show(inner),
            ro, ri);
  int rt = shape_of(t, ts);
  INVARIANT(rt == ri, "tile(%s, %s) has rank %d", show(outer), show(inner), rt);
  for (int k = 0; k < ri; k++) {
    int64_t want = 0;
    INVARIANT(!__builtin_mul_overflow(os[k], is[k], &want) && ts[k] == want,
              "tile(%s, %s) = %s: wrong shape", show(outer), show(inner), show(t));
  }
  if (tirx_layout_swizzle_bytes(outer) || tirx_layout_swizzle_bytes(inner)) return;
  if (!small_replicas(outer) || !small_replicas(inner) ||
      tirx_layout_replica_count(outer) * tirx_layout_replica_count(inner) > MAXP)
    return;
  /* t(i) = outer(i / is) + inner(i % is), as sets: the sum of every pair. */
  int64_t n = tirx_layout_size(t);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t x = sample(f, n, i), idx[MAXR], io[MAXR], ii[MAXR];
    multi_index(ri, ts, x, idx);
    for (int k = 0; k < ri; k++) {
      io[k] = idx[k] / is[k];
      ii[k] = idx[k] % is[k];
    }
    if (!points(outer, flat_index(ri, os, io), &PS[0]) ||
        !points(inner, flat_index(ri, is, ii), &PS[1]) || !points(t, x, &PS[2]))
      continue;
    PS[3].n = 0;
    for (int64_t p = 0; p < PS[0].n; p++)
      for (int64_t q = 0; q < PS[1].n; q++) {
        tirx_coord *c = &PS[3].p[PS[3].n++];
        for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
          c->v[ax] = (int64_t)((uint64_t)PS[0].p[p].v[ax] + (uint64_t)PS[1].p[q].v[ax]);
      }
    pset_norm(&PS[3]);
    INVARIANT(pset_eq(&PS[2], &PS[3]), "tile(%s, %s) = %s: element %lld is not outer + inner",
              show(outer), show(inner), show(t), (long long)x);
  }
}

static void op_compose(fz *f) {
  const tirx_layout *l = pick(f), *fm = NULL;
  int64_t size = tirx_layout_size(l);
  uint8_t mode = u8(&f->in) % 3;
  if (mode == 0) {
    fm = pick(f);
  } else if (mode == 1) { /* a permutation of [0, size): factor, then permute row-major strides */
    int64_t shape[MAXR], st[MAXR], ps[MAXR], pst[MAXR];
    int rank = 1 + u8(&f->in) % 4;
    int64_t rem = size;
    for (int k = 0; k < rank - 1; k++) {
      int64_t d = 1 + u8(&f->in) % 8;
      shape[k] = rem % d == 0 ? d : 1;
      rem /= shape[k];
    }
    shape[rank - 1] = rem;
    int64_t step = 1;
    for (int k = rank - 1; k >= 0; k--) {
      st[k] = step;
      step *= shape[k];
    }
    int perm[MAXR];
    for (int k = 0; k < rank; k++) perm[k] = k;
    for (int k = rank - 1; k > 0; k--) {
      int j = u8(&f->in) % (k + 1), t = perm[k];
      perm[k] = perm[j];
      perm[j] = t;
    }
    for (int k = 0; k < rank; k++) {
      ps[k] = shape[perm[k]];
      pst[k] = st[perm[k]];
    }
    fm = tirx_layout_strided(f->a, rank, ps, pst);
  } else { /* every step-th element */
    int64_t step = 1 + u8(&f->in) % 4, n = 1 + (size - 1) / step;
    fm = tirx_layout_strided(f->a, 1, &n, &step);
  }
  if (!fm) return;
  tirx_clear_error();
  tirx_layout *c = tirx_layout_compose(f->a, l, fm);
  char args[64];
  snprintf(args, sizeof args, "recipe %d", (int)mode);
  if (!ok_obj(c, "tirx_layout_compose", S_COMPOSE, args)) return;
  add_layout(f, c);
  tirx_layout *fc = strict ? tirx_layout_canonicalize(f->a, fm) : NULL;
  if (fc) { /* f must be an index map, up to extent-1 and stride-0 iters */
    bool map = tirx_layout_num_replicas(fc) == 0 && tirx_layout_num_offsets(fc) == 0 &&
               tirx_layout_swizzle_bytes(fc) == 0;
    for (int i = 0; map && i < tirx_layout_num_iters(fc); i++) {
      tirx_iter it;
      map = tirx_layout_iter(fc, i, &it) == TIRX_OK && (it.axis == TIRX_AXIS_M || it.stride == 0);
    }
    INVARIANT(map, "compose(%s, %s) accepted f that is not an index map", show(l), show(fm));
  }
  int64_t fs[MAXR], cs[MAXR];
  int rf = shape_of(fm, fs), rc = shape_of(c, cs);
  INVARIANT(rf == rc && memcmp(fs, cs, (size_t)rf * sizeof fs[0]) == 0,
            "compose(%s, %s) = %s does not have f's grouping", show(l), show(fm), show(c));
  INVARIANT(tirx_layout_size(c) == tirx_layout_size(fm), "compose(%s, %s) = %s: wrong size",
            show(l), show(fm), show(c));
  int64_t n = tirx_layout_size(c);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t x = sample(f, n, i), fx = -1;
    INVARIANT(tirx_layout_eval_m(fm, x, &fx) == TIRX_OK, "eval_m(%s, %lld)", show(fm),
              (long long)x);
    INVARIANT(fx >= 0 && fx < size, "compose(%s, %s) accepted f(%lld) = %lld outside [0, %lld)",
              show(l), show(fm), (long long)x, (long long)fx, (long long)size);
    same_points(c, x, l, fx, "compose: (l o f)(x) != l(f(x))");
  }
}

static void op_storage_view(fz *f) {
  const tirx_layout *l = pick(f);
  uint64_t mask;
  switch (u8(&f->in) % 4) {
  case 0: mask = 0; break;
  case 1: mask = (uint64_t)u8(&f->in) | (uint64_t)u8(&f->in) << 8; break;
  case 2: mask = (uint64_t)1 << (u8(&f->in) % 64); break;
  default: mask = u64(&f->in); break;
  }
  char args[64];
  snprintf(args, sizeof args, "keep_mask 0x%llx", (unsigned long long)mask);
  tirx_clear_error();
  tirx_layout *v = tirx_layout_storage_view(f->a, l, mask);
  if (!ok_obj(v, "tirx_layout_storage_view", S_MAKE, args)) return;
  add_layout(f, v);
  uint64_t keep = mask ? mask
                       : ((uint64_t)1 << TIRX_AXIS_M | (uint64_t)1 << TIRX_AXIS_REG |
                          (uint64_t)1 << TIRX_AXIS_TLANE | (uint64_t)1 << TIRX_AXIS_TCOL);
  INVARIANT(tirx_layout_size(v) == tirx_layout_size(l), "storage_view(%s, %s) changed the size",
            show(l), args);
  int64_t n = tirx_layout_size(l);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t x = sample(f, n, i);
    if (!points(l, x, &PS[0]) || !points(v, x, &PS[1])) continue;
    for (int64_t p = 0; p < PS[0].n; p++)
      for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
        if (!(keep >> ax & 1)) PS[0].p[p].v[ax] = 0;
    pset_norm(&PS[0]);
    INVARIANT(pset_eq(&PS[0], &PS[1]),
              "storage_view(%s, %s) = %s: element %lld is not the projection", show(l), args,
              show(v), (long long)x);
  }
}

static void op_vector_width(fz *f) {
  static const int elems[] = {1, 2, 4, 8, 0, 3, 16, -1};
  static const int maxes[] = {16, 8, 4, 32, 2, 0, 1, -16};
  const tirx_layout *l = pick(f);
  uint8_t k = u8(&f->in);
  int eb = elems[k & 7], mb = maxes[(k >> 3) & 7];
  tirx_clear_error();
  int64_t v = tirx_layout_vector_width(l, eb, mb);
  if (v == 0) {
    INVARIANT(!strict || tirx_last_status() != TIRX_OK,
              "vector_width(%s, %d, %d) returned 0 without an error", show(l), eb, mb);
    check_failure("tirx_layout_vector_width", S_MAKE, show(l));
    return;
  }
  INVARIANT(v >= 1 && (v & (v - 1)) == 0, "vector_width(%s, %d, %d) = %lld is not a power of two",
            show(l), eb, mb, (long long)v);
  INVARIANT(v == 1 || v * eb <= mb, "vector_width(%s, %d, %d) = %lld is too wide", show(l), eb, mb,
            (long long)v);
  int64_t n = tirx_layout_size(l);
  if (v == 1 || n < v) return;
  for (int i = 0; i < 2; i++) {
    int64_t x0 = sample(f, n / v, i) * v;
    if (!eval_raw(l, x0, &PS[0])) return;
    for (int64_t r = 0; r < PS[0].n; r++)
      INVARIANT(PS[0].p[r].v[TIRX_AXIS_M] % v == 0,
                "vector_width(%s, %d, %d) = %lld: run at %lld starts at m = %lld", show(l), eb, mb,
                (long long)v, (long long)x0, (long long)PS[0].p[r].v[TIRX_AXIS_M]);
    for (int64_t j = 1; j < v && j < 16; j++) {
      eval_raw(l, x0 + j, &PS[1]);
      for (int64_t r = 0; r < PS[0].n; r++)
        INVARIANT(PS[1].p[r].v[TIRX_AXIS_M] == PS[0].p[r].v[TIRX_AXIS_M] + j,
                  "vector_width(%s, %d, %d) = %lld: element %lld replica %lld is not contiguous",
                  show(l), eb, mb, (long long)v, (long long)(x0 + j), (long long)r);
    }
  }
}

static void op_contiguous(fz *f) {
  const tirx_layout *l = pick(f);
  tirx_clear_error();
  int64_t c = tirx_layout_contiguous(l);
  int64_t n = tirx_layout_size(l);
  INVARIANT(c >= 0 && c <= n, "contiguous(%s) = %lld", show(l), (long long)c);
  if (c < 2) return;
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t x = sample(f, n, i), m0, m1;
    if (x % c == c - 1 || x + 1 >= n) continue;
    INVARIANT(tirx_layout_eval_m(l, x, &m0) == TIRX_OK && tirx_layout_eval_m(l, x + 1, &m1) == TIRX_OK,
              "eval_m(%s, %lld)", show(l), (long long)x);
    INVARIANT(m1 == m0 + 1, "contiguous(%s) = %lld but m(%lld) = %lld, m(%lld) = %lld", show(l),
              (long long)c, (long long)x, (long long)m0, (long long)(x + 1), (long long)m1);
  }
}

static bool valid_swizzle(int sb, int eb) {
  return (sb == 32 || sb == 64 || sb == 128) && (eb == 1 || eb == 2 || eb == 4 || eb == 8);
}

static void op_swizzle(fz *f) {
  static const int sbs[] = {0, 32, 64, 128, 16, 256, 128, 64};
  static const int ebs[] = {1, 2, 4, 8, 0, 3, 2, 16};
  const tirx_layout *l = pick(f);
  uint8_t k = u8(&f->in);
  int sb = sbs[k & 7], eb = ebs[(k >> 3) & 7];
  /* The pure function: identity for 0, -1 for bad arguments, an involution otherwise (checked
   * where m * elem_bytes fits in int64; beyond that only UBSan's view matters). */
  int64_t m = interesting(&f->in);
  int64_t r = tirx_swizzle_apply(sb, eb, m);
  if (sb == 0)
    INVARIANT(r == m, "swizzle_apply(0, %d, %lld) = %lld", eb, (long long)m, (long long)r);
  else if (!valid_swizzle(sb, eb))
    INVARIANT(r == -1, "swizzle_apply(%d, %d, %lld) = %lld for bad arguments", sb, eb,
              (long long)m, (long long)r);
  else if (m >= -(INT64_MAX / 8) && m <= INT64_MAX / 8)
    INVARIANT(tirx_swizzle_apply(sb, eb, r) == m,
              "swizzle_apply(%d, %d, .) is not an involution at %lld", sb, eb, (long long)m);

  char args[64];
  snprintf(args, sizeof args, "%d, %d", sb, eb);
  tirx_clear_error();
  tirx_layout *s = tirx_layout_swizzle(f->a, l, sb, eb);
  if (!ok_obj(s, "tirx_layout_swizzle", S_MAKE, args)) return;
  add_layout(f, s);
  INVARIANT(sb == 0 || valid_swizzle(sb, eb), "swizzle(%s, %s) accepted bad arguments", show(l),
            args);
  INVARIANT(tirx_layout_swizzle_bytes(s) == sb && (sb == 0 || tirx_layout_swizzle_elem_bytes(s) == eb),
            "swizzle(%s, %s) = %s", show(l), args, show(s));
  tirx_layout *base = tirx_layout_swizzle(f->a, l, 0, 0);
  INVARIANT(base != NULL, "swizzle(%s, 0, 0) failed", show(l));
  int64_t n = tirx_layout_size(l);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t x = sample(f, n, i);
    if (!points(base, x, &PS[0]) || !points(s, x, &PS[1])) continue;
    for (int64_t p = 0; p < PS[0].n; p++)
      PS[0].p[p].v[TIRX_AXIS_M] = tirx_swizzle_apply(sb, eb, PS[0].p[p].v[TIRX_AXIS_M]);
    pset_norm(&PS[0]);
    INVARIANT(pset_eq(&PS[0], &PS[1]), "swizzle(%s, %s) = %s: element %lld", show(l), args,
              show(s), (long long)x);
  }
}

static void op_span(fz *f) {
  const tirx_layout *l = pick(f);
  tirx_axis axis = (tirx_axis)(u8(&f->in) % 36) - 2;
  int64_t lo = 0, span = 0;
  tirx_clear_error();
  tirx_status st = tirx_layout_span(l, axis, &lo, &span);
  char args[32];
  snprintf(args, sizeof args, "axis %d", (int)axis);
  if (!ok_status(st, "tirx_layout_span", S_SPAN, args)) {
    INVARIANT(!strict || st != TIRX_E_UNKNOWN_AXIS || !tirx_axis_name(axis),
              "span(%s, %d) rejected a valid axis", show(l), (int)axis);
    return;
  }
  INVARIANT(tirx_axis_name(axis) != NULL, "span(%s) accepted unknown axis %d", show(l), (int)axis);
  INVARIANT(span >= 1, "span(%s, %s) = %lld", show(l), args, (long long)span);
  if (axis == TIRX_AXIS_M && tirx_layout_swizzle_bytes(l)) return;
  int64_t n = tirx_layout_size(l);
  for (int i = 0; i < NSAMPLES; i++) {
    if (!eval_raw(l, sample(f, n, i), &PS[0])) return;
    for (int64_t p = 0; p < PS[0].n; p++) {
      int64_t v = PS[0].p[p].v[axis];
      uint64_t d = (uint64_t)v - (uint64_t)lo;
      INVARIANT(v >= lo && d < (uint64_t)span, "span(%s, %s) = [%lld, +%lld) misses %lld", show(l),
                args, (long long)lo, (long long)span, (long long)v);
    }
  }
}

static void op_eval(fz *f) {
  const tirx_layout *l = pick(f);
  int64_t n = tirx_layout_size(l), rc = tirx_layout_replica_count(l);
  uint8_t mode = u8(&f->in);
  int64_t x;
  switch (mode % 4) {
  case 0: x = (int64_t)(u64(&f->in) % (uint64_t)n); break;
  case 1: x = n; break;
  case 2: x = -1 - (int64_t)(u8(&f->in) % 4); break;
  default: x = interesting(&f->in); break;
  }
  int64_t cap;
  switch ((mode >> 2) % 5) {
  case 0: cap = MAXP; break;
  case 1: cap = 0; break;
  case 2: cap = rc - 1; break;
  case 3: cap = -1; break;
  default: cap = rc <= MAXP ? rc : MAXP; break;
  }
  int64_t count = -7;
  tirx_clear_error();
  tirx_status st = tirx_layout_eval(l, x, cap > 0 ? PS[0].p : NULL, cap, &count);
  char args[96];
  snprintf(args, sizeof args, "x %lld, cap %lld", (long long)x, (long long)cap);
  bool in_range = x >= 0 && x < n;
  if (strict) {
    if (cap < 0) INVARIANT(st == TIRX_E_INVALID_ARG, "eval(%s, %s) returned %s", show(l), args, tirx_status_name(st));
    else if (!in_range) INVARIANT(st == TIRX_E_OUT_OF_RANGE, "eval(%s, %s) returned %s", show(l), args, tirx_status_name(st));
    else if (cap < rc) {
      INVARIANT(st == TIRX_E_BUFFER_TOO_SMALL && count == rc, "eval(%s, %s) returned %s, count %lld",
                show(l), args, tirx_status_name(st), (long long)count);
    } else {
      INVARIANT(st == TIRX_OK && count == rc, "eval(%s, %s) returned %s, count %lld", show(l), args,
                tirx_status_name(st), (long long)count);
    }
  }
  ok_status(st, "tirx_layout_eval", S_EVAL, args);

  /* eval_m is replica 0's m (the first point in replica order), swizzled. */
  int64_t m = 0;
  tirx_clear_error();
  st = tirx_layout_eval_m(l, x, &m);
  if (ok_status(st, "tirx_layout_eval_m", S_EVAL, args)) {
    INVARIANT(in_range, "eval_m(%s, %s) accepted an index out of range", show(l), args);
    if (eval_raw(l, x, &PS[0]))
      INVARIANT(PS[0].p[0].v[TIRX_AXIS_M] == m, "eval_m(%s, %lld) = %lld, eval gives m = %lld",
                show(l), (long long)x, (long long)m, (long long)PS[0].p[0].v[TIRX_AXIS_M]);
  } else {
    INVARIANT(!strict || !in_range, "eval_m(%s, %s) failed in range", show(l), args);
  }

  /* eval_nd over the logical shape. */
  int64_t shape[MAXR], idx[MAXR] = {0};
  int rank = shape_of(l, shape);
  if (rank == 0) {
    tirx_clear_error();
    st = tirx_layout_eval_nd(l, idx, NULL, 0, &count);
    INVARIANT(st != TIRX_OK, "eval_nd(%s) accepted an ungrouped layout", show(l));
    ok_status(st, "tirx_layout_eval_nd", S_EVAL, "ungrouped");
    return;
  }
  bool nd_in_range = true;
  if (in_range) multi_index(rank, shape, x, idx);
  else
    for (int k = 0; k < rank; k++) {
      idx[k] = (mode & 0x80) ? interesting(&f->in) : (int64_t)(u8(&f->in) % ((uint64_t)shape[k] + 1));
      nd_in_range = nd_in_range && idx[k] >= 0 && idx[k] < shape[k];
    }
  tirx_clear_error();
  st = tirx_layout_eval_nd(l, idx, PS[1].p, MAXP, &count);
  if (ok_status(st, "tirx_layout_eval_nd", S_EVAL, "index")) {
    INVARIANT(nd_in_range, "eval_nd(%s) accepted an index out of range", show(l));
    if (rc <= MAXP) {
      PS[1].n = count;
      pset_norm(&PS[1]);
      if (points(l, flat_index(rank, shape, idx), &PS[0]))
        INVARIANT(pset_eq(&PS[0], &PS[1]), "eval_nd(%s) disagrees with eval", show(l));
    }
  } else {
    INVARIANT(!strict || !nd_in_range || rc > MAXP, "eval_nd(%s) failed in range: %s", show(l),
              tirx_status_name(st));
  }
}

/* parse(str(l)) must give back a structurally identical layout. */
static void round_trip(fz *f, const tirx_layout *l, size_t cap) {
  tirx_clear_error();
  char *s = tirx_layout_str(l);
  if (!ok_obj(s, "tirx_layout_str", BIT(E_NO_MEMORY), "")) return;
  tirx_clear_error();
  tirx_layout *l2 = tirx_layout_parse(f->a, s);
  INVARIANT(l2 != NULL, "parse(str(l)) failed: str(l) = \"%s\"", s);
  INVARIANT(tirx_layout_same(l, l2), "parse(str(l)) differs from l: \"%s\" re-prints as \"%s\"",
            s, show(l2));
  INVARIANT(tirx_layout_equal(l, l2), "parse(str(l)) is not equal() to l: \"%s\"", s);
  /* tirx_layout_format agrees with str at any capacity. */
  char buf[600];
  size_t len = strlen(s);
  if (cap > sizeof buf) cap = sizeof buf;
  memset(buf, 'X', sizeof buf);
  int64_t need = tirx_layout_format(l, cap ? buf : NULL, cap);
  INVARIANT(need == (int64_t)len, "format(%s) needs %lld, strlen(str) is %zu", s, (long long)need,
            len);
  if (cap > 0) {
    size_t k = len < cap - 1 ? len : cap - 1;
    INVARIANT(buf[k] == '\0' && memcmp(buf, s, k) == 0 && (k + 1 >= sizeof buf || buf[k + 1] == 'X'),
              "format(%s, cap %zu) wrote \"%.*s\"", s, cap, (int)k, buf);
  }
  free(s);
}

static void op_str(fz *f) {
  const tirx_layout *l = pick(f);
  round_trip(f, l, u8(&f->in) * 3u);
}

static void op_new(fz *f) {
  tirx_iter d[8], r[3];
  tirx_axis_offset o[3];
  uint8_t k = u8(&f->in);
  int nd = k % 7, nr = (k >> 3) % 3, no = (k >> 5) % 4;
  for (int i = 0; i < nd + nr; i++) {
    tirx_iter *it = i < nd ? &d[i] : &r[i - nd];
    uint8_t e = u8(&f->in);
    it->extent = e < 240 ? 1 + e % 8 : interesting(&f->in);
    uint8_t s = u8(&f->in);
    it->stride = s < 250 ? (int8_t)s : interesting(&f->in);
    uint8_t ax = u8(&f->in);
    it->axis = ax < 250 ? ax % 16 : (tirx_axis)(int8_t)ax;
  }
  for (int i = 0; i < no; i++) {
    uint8_t ax = u8(&f->in);
    o[i].axis = ax < 250 ? ax % 16 : (tirx_axis)(int8_t)ax;
    uint8_t v = u8(&f->in);
    o[i].value = v < 250 ? (int8_t)v : interesting(&f->in);
  }
  char args[48];
  snprintf(args, sizeof args, "nd %d, nr %d, no %d", nd, nr, no);
  tirx_clear_error();
  tirx_layout *l = tirx_layout_new(f->a, nd, d, nr, r, no, o);
  if (!ok_obj(l, "tirx_layout_new", S_MAKE, args)) return;
  add_layout(f, l);
  INVARIANT(tirx_layout_num_iters(l) == nd && tirx_layout_num_replicas(l) == nr,
            "new(%s) = %s", args, show(l));
}

static void op_fragment(fz *f) {
  static const int64_t cols[] = {8, 16, 32, 64, 128, 24, 256, 3};
  uint8_t k = u8(&f->in);
  tirx_layout *l = NULL;
  const char *fn = "";
  char args[96] = "";
  tirx_clear_error();
  switch (k % 10) {
  case 0: fn = "tirx_layout_mma_m16n8k16_a"; l = tirx_layout_mma_m16n8k16_a(f->a); break;
  case 1: fn = "tirx_layout_mma_m16n8k16_b"; l = tirx_layout_mma_m16n8k16_b(f->a); break;
  case 2: fn = "tirx_layout_mma_m16n8k16_c"; l = tirx_layout_mma_m16n8k16_c(f->a); break;
  case 3: {
    int m = (k & 0x80) ? (int)(int8_t)u8(&f->in) : 64, n = (int)u8(&f->in) + 1;
    snprintf(args, sizeof args, "%d, %d", m, n);
    fn = (k & 0x40) ? "tirx_layout_wgmma_a" : "tirx_layout_wgmma_acc";
    l = (k & 0x40) ? tirx_layout_wgmma_a(f->a, m, n) : tirx_layout_wgmma_acc(f->a, m, n);
    break;
  }
  case 4: {
    int num = (int)(int8_t)u8(&f->in);
    snprintf(args, sizeof args, "%d", num);
    fn = "tirx_layout_ldmatrix";
    l = tirx_layout_ldmatrix(f->a, num);
    break;
  }
  case 5: {
    int64_t rows = (k & 0x80) ? interesting(&f->in) : 1 + u8(&f->in) % 160;
    int64_t c = (k & 0x40) ? interesting(&f->in) : 1 + u8(&f->in) % 64;
    snprintf(args, sizeof args, "%lld, %lld", (long long)rows, (long long)c);
    fn = "tirx_layout_warpgroup_rows";
    l = tirx_layout_warpgroup_rows(f->a, rows, c);
    break;
  }
  case 6: {
    static const int sws[] = {0, 32, 64, 128, 16, 128, 64, 128};
    static const int ebs[] = {1, 2, 4, 8, 2, 2, 3, 0};
    uint8_t p = u8(&f->in);
    int64_t rows = (k & 0x80) ? interesting(&f->in) : 1 + u8(&f->in) % 128;
    int64_t c = cols[u8(&f->in) & 7];
    int eb = ebs[p & 7], sw = sws[(p >> 3) & 7];
    snprintf(args, sizeof args, "%lld, %lld, %d, %d", (long long)rows, (long long)c, eb, sw);
    fn = "tirx_layout_smem_tile";
    l = tirx_layout_smem_tile(f->a, rows, c, eb, sw);
    break;
  }
  default: { /* row-major, col-major or strided */
    int64_t shape[4], strides[4];
    int rank = 1 + u8(&f->in) % 4;
    for (int i = 0; i < rank; i++) {
      shape[i] = (k & 0x80) ? interesting(&f->in) : 1 + u8(&f->in) % 8;
      strides[i] = (int8_t)u8(&f->in);
    }
    args_shape(args, sizeof args, rank, shape);
    if (k % 10 == 7) {
      fn = "tirx_layout_row_major";
      l = tirx_layout_row_major(f->a, rank, shape);
    } else if (k % 10 == 8) {
      fn = "tirx_layout_col_major";
      l = tirx_layout_col_major(f->a, rank, shape);
    } else {
      fn = "tirx_layout_strided";
      l = tirx_layout_strided(f->a, rank, shape, strides);
    }
    if (l) {
      int64_t got[MAXR];
      int rl = shape_of(l, got);
      INVARIANT(rl == rank && memcmp(got, shape, (size_t)rank * sizeof shape[0]) == 0,
                "%s(%s) = %s", fn, args, show(l));
      for (int i = 0; i < NSAMPLES; i++) { /* the m address of index i */
        int64_t x = sample(f, tirx_layout_size(l), i), idx[4], m = 0, want = 0;
        multi_index(rank, shape, x, idx);
        for (int j = 0; j < rank; j++) {
          int64_t s = 1;
          if (k % 10 == 9) s = strides[j];
          else if (k % 10 == 7)
            for (int q = j + 1; q < rank; q++) s *= shape[q];
          else
            for (int q = 0; q < j; q++) s *= shape[q];
          want += idx[j] * s;
        }
        INVARIANT(tirx_layout_eval_m(l, x, &m) == TIRX_OK && m == want,
                  "%s(%s) = %s: index %lld at m = %lld, expected %lld", fn, args, show(l),
                  (long long)x, (long long)m, (long long)want);
      }
    }
    break;
  }
  }
  if (!ok_obj(l, fn, S_FRAGMENT, args)) return;
  add_layout(f, l);
}

/* ---- scopes ---------------------------------------------------------------------------------- */

static void add_scope(fz *f, const tirx_scope *s, int warps, int csize, int64_t ncl) {
  fscope e = {s, warps, csize, ncl};
  if (f->ns < SPOOL) f->scopes[f->ns++] = e;
  else f->scopes[f->snext++ % SPOOL] = e;
}

/* The coordinate of thread (lane, warp, cta) on a filterable axis; -1 for other axes. */
static int64_t thread_coord(tirx_axis axis, int64_t lane, int64_t warp, int64_t cta, int csize) {
  switch (axis) {
  case TIRX_AXIS_LANEID: return lane;
  case TIRX_AXIS_WARPID: return warp;
  case TIRX_AXIS_WID_IN_WG: return warp % 4;
  case TIRX_AXIS_WGID: return warp / 4;
  case TIRX_AXIS_TID_IN_WG: return (warp % 4) * 32 + lane;
  case TIRX_AXIS_TID: return warp * 32 + lane;
  case TIRX_AXIS_CTA: return cta;
  case TIRX_AXIS_CBX: return cta % csize;
  case TIRX_AXIS_CLUSTER: return cta / csize;
  default: return -1;
  }
}

/* Checks a scope's counts, its active layout, and (small launches) locate() by brute force. */
static void check_scope(fz *f, const fscope *e) {
  const tirx_scope *s = e->s;
  int64_t nt = tirx_scope_num_threads(s), nteams = tirx_scope_num_teams(s),
          tsz = tirx_scope_team_size(s);
  INVARIANT(nt >= 1 && nteams >= 1 && tsz >= 1, "scope counts %lld threads, %lld teams of %lld",
            (long long)nt, (long long)nteams, (long long)tsz);
  if (strict)
    INVARIANT(nt == nteams * tsz, "scope: %lld threads but %lld teams of %lld", (long long)nt,
              (long long)nteams, (long long)tsz);
  const tirx_layout *A = tirx_scope_active(s), *I = tirx_scope_inter(s), *T = tirx_scope_intra(s);
  INVARIANT(A && I && T, "scope without active/inter/intra layouts");
  add_layout(f, A);
  add_layout(f, u8(&f->in) & 1 ? I : T);
  char *str = tirx_scope_str(s);
  INVARIANT(str != NULL, "tirx_scope_str failed");
  free(str);
  /* Every point of A is an active thread. */
  int64_t na = tirx_layout_size(A);
  for (int i = 0; strict && i < NSAMPLES; i++) {
    if (!eval_raw(A, sample(f, na, i), &PS[0])) break;
    for (int64_t p = 0; p < PS[0].n; p++) {
      const tirx_coord *c = &PS[0].p[p];
      bool only = true;
      for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
        if (ax != TIRX_AXIS_LANEID && ax != TIRX_AXIS_WARPID && ax != TIRX_AXIS_CTA && c->v[ax])
          only = false;
      if (!only) continue; /* a composite axis: not checked */
      INVARIANT(tirx_scope_contains(s, c->v[TIRX_AXIS_LANEID], c->v[TIRX_AXIS_WARPID],
                                    c->v[TIRX_AXIS_CTA]),
                "active layout %s has inactive thread (%lld, %lld, %lld)", show(A),
                (long long)c->v[TIRX_AXIS_LANEID], (long long)c->v[TIRX_AXIS_WARPID],
                (long long)c->v[TIRX_AXIS_CTA]);
    }
  }
  /* Sampled threads, in and out of range: locate succeeds exactly for active threads. */
  int64_t ncta = (int64_t)e->csize * e->nclusters;
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t lane = (int64_t)(rnd(f) % 34) - 1, warp = (int64_t)(rnd(f) % (uint64_t)(e->warps + 2)) - 1;
    int64_t cta = ncta < 64 ? (int64_t)(rnd(f) % (uint64_t)(ncta + 2)) - 1 : (int64_t)(rnd(f) % 64);
    bool in = tirx_scope_contains(s, lane, warp, cta);
    bool valid = lane >= 0 && lane < 32 && warp >= 0 && warp < e->warps && cta >= 0 && cta < ncta;
    INVARIANT(valid || !in, "scope contains out-of-range thread (%lld, %lld, %lld)",
              (long long)lane, (long long)warp, (long long)cta);
    int64_t team = -1, rank = -1;
    tirx_clear_error();
    tirx_status st = tirx_scope_locate(s, lane, warp, cta, &team, &rank);
    if (in) {
      INVARIANT(st == TIRX_OK && team >= 0 && team < nteams && rank >= 0 && rank < tsz,
                "locate(%lld, %lld, %lld) of an active thread: %s, team %lld, rank %lld",
                (long long)lane, (long long)warp, (long long)cta, tirx_status_name(st),
                (long long)team, (long long)rank);
    } else {
      INVARIANT(st != TIRX_OK, "locate(%lld, %lld, %lld) of an inactive thread succeeded",
                (long long)lane, (long long)warp, (long long)cta);
      ok_status(st, "tirx_scope_locate", BIT(E_OUT_OF_RANGE) | BIT(E_NULL_ARG), "inactive");
    }
  }
  /* Brute force on small launches: the count, and (team, rank) unique per active thread. */
  int64_t total = 32 * (int64_t)e->warps * ncta;
  if (!strict || total > 1024 || nt > 1024) return;
  static unsigned char seen[1024];
  memset(seen, 0, sizeof seen);
  int64_t count = 0;
  for (int64_t cta = 0; cta < ncta; cta++)
    for (int64_t w = 0; w < e->warps; w++)
      for (int64_t ln = 0; ln < 32; ln++) {
        if (!tirx_scope_contains(s, ln, w, cta)) continue;
        count++;
        int64_t team = -1, rank = -1;
        INVARIANT(tirx_scope_locate(s, ln, w, cta, &team, &rank) == TIRX_OK && team >= 0 &&
                      team < nteams && rank >= 0 && rank < tsz,
                  "locate(%lld, %lld, %lld) failed for an active thread", (long long)ln,
                  (long long)w, (long long)cta);
        int64_t slot = team * tsz + rank;
        INVARIANT(slot < 1024 && !seen[slot], "threads share team %lld rank %lld",
                  (long long)team, (long long)rank);
        seen[slot] = 1;
      }
  INVARIANT(count == nt, "scope reports %lld threads, %lld are active", (long long)nt,
            (long long)count);
}

static void op_scope_new(fz *f) {
  uint8_t k = u8(&f->in);
  int warps = (k & 0x80) ? (int)(int8_t)u8(&f->in) : 1 + u8(&f->in) % 34;
  int csize = (k & 0x40) ? (int)(int8_t)u8(&f->in) : 1 + (u8(&f->in) % 4 ? 0 : u8(&f->in) % 17);
  int64_t ncl = (k & 0x20) ? interesting(&f->in) : 1 + u8(&f->in) % 3;
  char args[96];
  snprintf(args, sizeof args, "%d, %d, %lld", warps, csize, (long long)ncl);
  tirx_clear_error();
  tirx_scope *s = tirx_scope_new(f->a, warps, csize, ncl);
  if (!ok_obj(s, "tirx_scope_new", S_SCOPE, args)) return;
  INVARIANT(warps >= 1 && warps <= 32 && csize >= 1 && csize <= 16 && ncl >= 1,
            "scope_new(%s) accepted bad counts", args);
  INVARIANT(tirx_scope_team_kind(s) == TIRX_TEAM_CTA, "scope_new(%s): team kind %d", args,
            (int)tirx_scope_team_kind(s));
  fscope e = {s, warps, csize, ncl};
  if (strict)
    INVARIANT(tirx_scope_num_threads(s) == 32 * (int64_t)warps * csize * ncl,
              "scope_new(%s) has %lld threads", args, (long long)tirx_scope_num_threads(s));
  add_scope(f, s, warps, csize, ncl);
  check_scope(f, &e);
}

static fscope *pick_scope(fz *f) {
  if (f->ns == 0) {
    tirx_scope *s = tirx_scope_new(f->a, 8, 2, 2);
    INVARIANT(s != NULL, "scope_new(8, 2, 2) failed");
    add_scope(f, s, 8, 2, 2);
  }
  return &f->scopes[u8(&f->in) % f->ns];
}

static void op_scope_filter(fz *f) {
  static const tirx_axis axes[] = {
      TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_WID_IN_WG, TIRX_AXIS_WGID, TIRX_AXIS_TID_IN_WG,
      TIRX_AXIS_TID,    TIRX_AXIS_CTA,    TIRX_AXIS_CBX,       TIRX_AXIS_CLUSTER, TIRX_AXIS_LANEID,
      TIRX_AXIS_WARPID, TIRX_AXIS_M,      TIRX_AXIS_REG,       TIRX_AXIS_PID,  TIRX_AXIS_CBY, 99};
  fscope *e = pick_scope(f);
  uint8_t k = u8(&f->in);
  tirx_axis axis = axes[k & 15];
  int64_t lo, hi;
  if (k & 0x80) {
    lo = interesting(&f->in);
    hi = interesting(&f->in);
  } else {
    lo = (int64_t)(u8(&f->in) % 48) - 1;
    hi = lo + (int64_t)(u8(&f->in) % 40);
  }
  char args[96];
  snprintf(args, sizeof args, "axis %d, [%lld, %lld)", (int)axis, (long long)lo, (long long)hi);
  tirx_clear_error();
  tirx_scope *c = tirx_scope_filter(f->a, e->s, axis, lo, hi);
  if (!ok_obj(c, "tirx_scope_filter", S_SCOPE, args)) return;
  fscope ce = {c, e->warps, e->csize, e->nclusters};
  INVARIANT(lo >= 0 && lo < hi, "scope_filter(%s) accepted a bad range", args);
  INVARIANT(thread_coord(axis, 0, 0, 0, 1) >= 0, "scope_filter(%s) accepted a non-thread axis", args);
  INVARIANT(tirx_scope_team_kind(c) == tirx_scope_team_kind(e->s), "scope_filter(%s) changed the team", args);
  INVARIANT(tirx_scope_num_threads(c) <= tirx_scope_num_threads(e->s), "scope_filter(%s) grew A", args);
  /* A' = A restricted to [lo, hi) on axis, at sampled threads. */
  int64_t ncta = (int64_t)e->csize * e->nclusters;
  for (int i = 0; i < 4 * NSAMPLES; i++) {
    int64_t lane = (int64_t)(rnd(f) % 32), warp = (int64_t)(rnd(f) % (uint64_t)e->warps);
    int64_t cta = (int64_t)(rnd(f) % (uint64_t)(ncta < 64 ? ncta : 64));
    int64_t v = thread_coord(axis, lane, warp, cta, e->csize);
    bool want = tirx_scope_contains(e->s, lane, warp, cta) && v >= lo && v < hi;
    INVARIANT(tirx_scope_contains(c, lane, warp, cta) == want,
              "scope_filter(%s): thread (%lld, %lld, %lld) should be %s", args, (long long)lane,
              (long long)warp, (long long)cta, want ? "active" : "inactive");
  }
  add_scope(f, c, e->warps, e->csize, e->nclusters);
  check_scope(f, &ce);
}

static void op_scope_team(fz *f) {
  fscope *e = pick_scope(f);
  tirx_team k = (tirx_team)(u8(&f->in) % 7);
  char args[32];
  snprintf(args, sizeof args, "team %d", (int)k);
  tirx_clear_error();
  tirx_scope *c = tirx_scope_team(f->a, e->s, k);
  if (!ok_obj(c, "tirx_scope_team", S_SCOPE, args)) return;
  fscope ce = {c, e->warps, e->csize, e->nclusters};
  INVARIANT(k <= TIRX_TEAM_CLUSTER && tirx_team_name(k), "scope_team accepted %s", args);
  INVARIANT(tirx_scope_team_kind(c) == k, "scope_team(%s) has kind %d", args,
            (int)tirx_scope_team_kind(c));
  INVARIANT(tirx_scope_num_threads(c) == tirx_scope_num_threads(e->s),
            "scope_team(%s) changed the thread count", args);
  int64_t ncta = (int64_t)e->csize * e->nclusters;
  for (int i = 0; i < 2 * NSAMPLES; i++) {
    int64_t lane = (int64_t)(rnd(f) % 32), warp = (int64_t)(rnd(f) % (uint64_t)e->warps);
    int64_t cta = (int64_t)(rnd(f) % (uint64_t)(ncta < 64 ? ncta : 64));
    INVARIANT(tirx_scope_contains(c, lane, warp, cta) == tirx_scope_contains(e->s, lane, warp, cta),
              "scope_team(%s) changed the active set at (%lld, %lld, %lld)", args,
              (long long)lane, (long long)warp, (long long)cta);
  }
  add_scope(f, c, e->warps, e->csize, e->nclusters);
  check_scope(f, &ce);
}

/* ---- the algebra of issue 19: coord, tile recovery, direct sum, pack, CuTe ---- */

#define S_RELATE (S_MAKE | BIT(E_NOT_REPRESENTABLE))

static void op_coord(fz *f) {
  const tirx_layout *l = pick(f);
  int64_t shape[MAXR], idx[MAXR], dg[TIRX_LAYOUT_MAX_ITERS];
  int rank = shape_of(l, shape), n = -1, cap = (u8(&f->in) & 7) == 7 ? u8(&f->in) % 4 : 64;
  int64_t x = (u8(&f->in) & 7) == 7 ? interesting(&f->in) : sample(f, tirx_layout_size(l), 2);
  if (rank) multi_index(rank, shape, x < 0 ? 0 : x % tirx_layout_size(l), idx);
  else idx[0] = x;
  if (rank && (x < 0 || x >= tirx_layout_size(l))) idx[0] = x; /* out of range on purpose */
  tirx_clear_error();
  tirx_status st = tirx_layout_coord(l, idx, dg, cap, &n);
  if (!ok_status(st, "tirx_layout_coord", S_EVAL, show(l))) return;
  INVARIANT(n == tirx_layout_num_iters(l), "coord(%s): %d digits", show(l), n);
  int64_t y = 0;
  for (int i = 0; i < n; i++) {
    tirx_iter it;
    tirx_layout_iter(l, i, &it);
    INVARIANT(dg[i] >= 0 && dg[i] < it.extent, "coord(%s): digit %d out of range", show(l), i);
    y = y * it.extent + dg[i];
  }
  int64_t want = rank ? flat_index(rank, shape, idx) : idx[0];
  INVARIANT(y == want, "coord(%s): digits give %lld, not %lld", show(l), (long long)y,
            (long long)want);
}

static void op_tile_recover(fz *f) {
  const tirx_layout *l = pick(f), *given = pick(f);
  bool outer = u8(&f->in) & 1;
  tirx_clear_error();
  tirx_layout *r = outer ? tirx_layout_tile_inner(f->a, l, given)
                         : tirx_layout_tile_outer(f->a, l, given);
  const char *fn = outer ? "tirx_layout_tile_inner" : "tirx_layout_tile_outer";
  if (!ok_obj(r, fn, S_RELATE, show(l))) return;
  add_layout(f, r);
  tirx_layout *t = outer ? tirx_layout_tile(f->a, given, r) : tirx_layout_tile(f->a, r, given);
  INVARIANT(t != NULL, "%s(%s, %s) = %s does not tile back: %s", fn, show(l), show(given),
            show(r), tirx_last_error());
  same_placement_sampled(f, l, t, fn);
}

static void op_direct_sum(fz *f) {
  const tirx_layout *x = pick(f), *y = pick(f);
  tirx_clear_error();
  tirx_layout *s = tirx_layout_direct_sum(f->a, x, y);
  if (!ok_obj(s, "tirx_layout_direct_sum", S_MAKE, show(x))) return;
  add_layout(f, s);
  int64_t ny = tirx_layout_size(y), n = tirx_layout_size(s);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t z = sample(f, n, i);
    if (!eval_raw(s, z, &PS[0]) || !eval_raw(x, z / ny, &PS[1]) || !eval_raw(y, z % ny, &PS[2]))
      continue;
    /* Replica order: x's replicas outermost, then y's. */
    INVARIANT(PS[0].n == PS[1].n * PS[2].n, "direct_sum: point count");
    for (int64_t a = 0; a < PS[1].n; a++)
      for (int64_t b = 0; b < PS[2].n; b++)
        for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
          INVARIANT(PS[0].p[a * PS[2].n + b].v[ax] == PS[1].p[a].v[ax] + PS[2].p[b].v[ax],
                    "direct_sum(%s, %s) = %s differs at %lld", show(x), show(y), show(s),
                    (long long)z);
  }
  tirx_layout *p = NULL, *q = NULL;
  int k = tirx_layout_rank(x) ? tirx_layout_rank(x) : 1;
  tirx_clear_error();
  if (!ok_status(tirx_layout_direct_sum_split(f->a, s, k, &p, &q),
                 "tirx_layout_direct_sum_split", S_MAKE, show(s)))
    return;
  tirx_layout *s2 = tirx_layout_direct_sum(f->a, p, q);
  INVARIANT(s2 != NULL, "direct_sum_split(%s) does not sum back", show(s));
  same_placement_sampled(f, s, s2, "direct_sum_split");
}

static void op_pack(fz *f) {
  const tirx_layout *l = pick(f);
  tirx_axis axis = (u8(&f->in) & 1) ? TIRX_AXIS_REG : TIRX_AXIS_M;
  int64_t fac = (u8(&f->in) & 15) == 15 ? interesting(&f->in) : 1 + u8(&f->in) % 8;
  tirx_clear_error();
  tirx_layout *u = tirx_layout_unpack(f->a, l, axis, fac);
  if (ok_obj(u, "tirx_layout_unpack", S_RELATE, show(l))) {
    add_layout(f, u);
    tirx_layout *p = tirx_layout_pack(f->a, u, axis, fac);
    INVARIANT(p != NULL, "pack(unpack(%s)) failed: %s", show(l), tirx_last_error());
    same_placement_sampled(f, l, p, "pack(unpack(l))");
  }
  tirx_clear_error();
  tirx_layout *p = tirx_layout_pack(f->a, l, axis, fac);
  if (!ok_obj(p, "tirx_layout_pack", S_RELATE, show(l))) return;
  add_layout(f, p);
  int64_t n = tirx_layout_size(p);
  for (int i = 0; i < NSAMPLES; i++) {
    int64_t x = sample(f, n, i);
    if (!eval_raw(p, x, &PS[0]) || !eval_raw(l, x * fac, &PS[1])) continue;
    for (int64_t r = 0; r < PS[0].n; r++)
      INVARIANT(PS[0].p[r].v[axis] * fac == PS[1].p[r].v[axis],
                "pack(%s, %lld) = %s differs at %lld", show(l), (long long)fac, show(p),
                (long long)x);
  }
}

static int64_t eval_m_or(const tirx_layout *l, int64_t x) {
  int64_t m = -1;
  INVARIANT(tirx_layout_eval_m(l, x, &m) == TIRX_OK, "eval_m(%s, %lld) failed", show(l),
            (long long)x);
  return m;
}

static void op_cute(fz *f) {
  const tirx_layout *l = pick(f), *t = pick(f);
  uint8_t mode = u8(&f->in) % 3;
  tirx_clear_error();
  if (mode == 0) {
    int64_t m = (u8(&f->in) & 7) == 7 ? interesting(&f->in) : 1 + u8(&f->in) * 4;
    tirx_layout *c = tirx_layout_complement(f->a, l, m);
    if (!ok_obj(c, "tirx_layout_complement", S_RELATE, show(l))) return;
    add_layout(f, c);
    /* b + a is injective: sampled pairs of distinct (a, b) never coincide. size(l) * size(B)
     * may exceed INT64_MAX (the last iter rounds cosize up), so the sums are formed in 128 bits. */
    int64_t na = tirx_layout_size(l), nb = tirx_layout_size(c);
    INVARIANT(nb >= 1 && (na > INT64_MAX / nb || na * nb >= m), "complement too small");
    for (int i = 0; i + 1 < NSAMPLES; i += 2) {
      int64_t a1 = sample(f, na, i), b1 = sample(f, nb, i + 1);
      int64_t a2 = sample(f, na, i + 1), b2 = sample(f, nb, i);
      __int128 v1 = (__int128)eval_m_or(l, a1) + eval_m_or(c, b1),
               v2 = (__int128)eval_m_or(l, a2) + eval_m_or(c, b2);
      INVARIANT((a1 == a2 && b1 == b2) || v1 != v2 || tirx_layout_size(l) == 1 ||
                    eval_m_or(l, a1) == eval_m_or(l, a2),
                "complement(%s) = %s is not injective", show(l), show(c));
    }
  } else if (mode == 1) {
    tirx_layout *d = tirx_layout_logical_divide(f->a, l, t);
    if (!ok_obj(d, "tirx_layout_logical_divide", S_RELATE | BIT(E_OUT_OF_RANGE), show(l)))
      return;
    add_layout(f, d);
    INVARIANT(tirx_layout_size(d) == tirx_layout_size(l), "logical_divide size");
    tirx_layout *c = tirx_layout_complement(f->a, t, tirx_layout_size(l));
    INVARIANT(c != NULL, "logical_divide(%s, %s) succeeded, complement fails", show(l), show(t));
    int64_t nt = tirx_layout_size(t), n = tirx_layout_size(d);
    for (int i = 0; i < NSAMPLES; i++) {
      int64_t z = sample(f, n, i);
      same_points(d, z, l, eval_m_or(c, z / nt) + eval_m_or(t, z % nt), "logical_divide");
    }
  } else {
    tirx_layout *p = tirx_layout_logical_product(f->a, l, t);
    if (!ok_obj(p, "tirx_layout_logical_product", S_RELATE | BIT(E_OUT_OF_RANGE), show(l)))
      return;
    add_layout(f, p);
    int64_t nl = tirx_layout_size(l);
    INVARIANT(tirx_layout_size(p) == nl * tirx_layout_size(t), "logical_product size");
    for (int i = 0; i < NSAMPLES; i++) {
      int64_t i0 = sample(f, nl, i);
      INVARIANT(eval_m_or(p, i0) == eval_m_or(l, i0),
                "logical_product(%s, %s) = %s: the first copy is not the layout", show(l),
                show(t), show(p));
    }
  }
}

/* ---- well-formedness, TMEM, extending composition, long runs ----------------------------- */

/* The oracle's tables for tirx_layout_verify (independent of src/layout/verify.c). */
static const tirx_axis thread_axes[] = {TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_WID_IN_WG,
                                        TIRX_AXIS_WGID,   TIRX_AXIS_TID_IN_WG, TIRX_AXIS_TID,
                                        TIRX_AXIS_CBX,    TIRX_AXIS_CTA,  TIRX_AXIS_CLUSTER,
                                        TIRX_AXIS_CBY,    TIRX_AXIS_CBZ,  TIRX_AXIS_PID};
enum { N_TAXES = sizeof thread_axes / sizeof thread_axes[0] };

static bool team_may(tirx_team k, tirx_axis ax) {
  if (ax == TIRX_AXIS_LANEID) return k >= TIRX_TEAM_WARP;
  if (ax == TIRX_AXIS_WID_IN_WG || ax == TIRX_AXIS_TID_IN_WG) return k >= TIRX_TEAM_WARPGROUP;
  if (ax == TIRX_AXIS_WARPID || ax == TIRX_AXIS_WGID || ax == TIRX_AXIS_TID)
    return k >= TIRX_TEAM_CTA;
  return ax == TIRX_AXIS_CBX && k == TIRX_TEAM_CLUSTER;
}

static int64_t view_of(tirx_axis ax, int64_t lane, int64_t warp, int64_t cbx) {
  int64_t t = warp * 32 + lane;
  switch (ax) {
  case TIRX_AXIS_LANEID: return lane;
  case TIRX_AXIS_WARPID: return warp;
  case TIRX_AXIS_WID_IN_WG: return warp % 4;
  case TIRX_AXIS_WGID: return warp / 4;
  case TIRX_AXIS_TID_IN_WG: return t % 128;
  case TIRX_AXIS_TID: return t;
  default: return cbx;
  }
}

static int64_t TEAM[32 * 32 * 16][3];

/* The active threads (lane, warp, cbx) of the team of the first active thread. */
static int64_t team_members(const fscope *e) {
  const tirx_scope *s = e->s;
  tirx_team k = tirx_scope_team_kind(s);
  int64_t nctas = e->csize * (e->nclusters < 4 ? e->nclusters : 4); /* a bounded search */
  for (int64_t x = 0; x < nctas; x++)
    for (int64_t w = 0; w < e->warps; w++)
      for (int64_t l = 0; l < 32; l++) {
        if (!tirx_scope_contains(s, l, w, x)) continue;
        /* The team's box of CTAs, warps and lanes. */
        int64_t x0 = x, x1 = x + 1, w0 = w, w1 = w + 1, l0 = l, l1 = l + 1, n = 0;
        if (k >= TIRX_TEAM_WARP) l0 = 0, l1 = 32;
        if (k == TIRX_TEAM_WARPGROUP) w0 = w / 4 * 4, w1 = w0 + 4;
        if (k >= TIRX_TEAM_CTA) w0 = 0, w1 = e->warps;
        if (k == TIRX_TEAM_CLUSTER) x0 = x / e->csize * e->csize, x1 = x0 + e->csize;
        for (int64_t x2 = x0; x2 < x1; x2++)
          for (int64_t w2 = w0; w2 < w1; w2++)
            for (int64_t l2 = l0; l2 < l1; l2++)
              if (tirx_scope_contains(s, l2, w2, x2)) {
                TEAM[n][0] = l2, TEAM[n][1] = w2, TEAM[n][2] = x2 % e->csize;
                n++;
              }
        return n;
      }
  return 0;
}

/* Brute force over every point of every element: whether l is well formed for e's scope. */
static bool verify_oracle(const tirx_layout *l, const fscope *e) {
  tirx_team k = tirx_scope_team_kind(e->s);
  int64_t n = tirx_layout_size(l);
  bool used[N_TAXES] = {false};
  for (int64_t x = 0; x < n; x++) {
    if (!eval_raw(l, x, &PS[0])) return false;
    for (int64_t p = 0; p < PS[0].n; p++)
      for (int a = 0; a < N_TAXES; a++) used[a] |= PS[0].p[p].v[thread_axes[a]] != 0;
  }
  for (int a = 0; a < N_TAXES; a++)
    if (used[a] && !team_may(k, thread_axes[a])) return false;
  int64_t nt = team_members(e);
  if (nt == 0) return tirx_layout_verify(l, e->s) == TIRX_OK; /* no team in the CTAs searched */
  for (int64_t x = 0; x < n; x++) {
    eval_raw(l, x, &PS[0]);
    for (int64_t p = 0; p < PS[0].n; p++) {
      const int64_t *v = PS[0].p[p].v;
      if (v[TIRX_AXIS_REG] < 0 || v[TIRX_AXIS_TLANE] < 0 || v[TIRX_AXIS_TLANE] >= 128 ||
          v[TIRX_AXIS_TCOL] < 0 || v[TIRX_AXIS_TCOL] >= 512)
        return false;
      bool placed = false;
      for (int64_t i = 0; i < nt && !placed; i++) {
        bool same = true;
        for (int a = 0; a < 7 && same; a++)
          if (used[a])
            same = v[thread_axes[a]] == view_of(thread_axes[a], TEAM[i][0], TEAM[i][1], TEAM[i][2]);
        placed = same;
      }
      if (!placed) return false;
    }
  }
  return true;
}

/* A layout mostly on the axes a team may name, small enough for the oracle. */
static const tirx_layout *thread_layout(fz *f, tirx_team k) {
  static const tirx_axis extra[] = {TIRX_AXIS_REG, TIRX_AXIS_M, TIRX_AXIS_TLANE, TIRX_AXIS_TCOL};
  tirx_iter it[6];
  tirx_axis_offset o[2];
  int nd = 1 + u8(&f->in) % 4, nr = u8(&f->in) % 3, no = u8(&f->in) % 3;
  for (int i = 0; i < nd + nr; i++) {
    uint8_t b = u8(&f->in);
    tirx_axis ax = b % 8 == 7 ? thread_axes[u8(&f->in) % N_TAXES]
                   : b % 8 >= 4 ? extra[b % 4]
                                : thread_axes[u8(&f->in) % 7];
    if (b % 8 < 4 && !team_may(k, ax) && b & 0x80) ax = TIRX_AXIS_LANEID;
    it[i] = (tirx_iter){1 + u8(&f->in) % 5, (int8_t)u8(&f->in) % 12, ax};
  }
  for (int i = 0; i < no; i++) {
    uint8_t b = u8(&f->in);
    o[i] = (tirx_axis_offset){b % 2 ? extra[b / 2 % 4] : thread_axes[b / 2 % 7],
                              (int8_t)u8(&f->in) % 40};
  }
  if (no == 2 && o[0].axis == o[1].axis) no = 1;
  tirx_clear_error();
  tirx_layout *l = tirx_layout_new(f->a, nd, it, nr, it + nd, no, o);
  if (!ok_obj(l, "tirx_layout_new", S_MAKE, "thread layout")) return NULL;
  return l;
}

static void op_verify(fz *f) {
  fscope *e = pick_scope(f);
  tirx_team k = tirx_scope_team_kind(e->s);
  const tirx_layout *l = u8(&f->in) % 3 ? thread_layout(f, k) : pick(f);
  if (!l) return;
  tirx_clear_error();
  tirx_status st = tirx_layout_verify(l, e->s);
  char args[96];
  snprintf(args, sizeof args, "%s, team %s", show(l), tirx_team_name(k));
  ok_status(st, "tirx_layout_verify", BIT(E_NULL_ARG) | BIT(E_SCOPE) | BIT(E_NO_MEMORY), args);
  /* The answer depends on the placement only. */
  tirx_layout *c = tirx_layout_canonicalize(f->a, l);
  if (c) {
    tirx_status sc = tirx_layout_verify(c, e->s);
    INVARIANT(sc == st || sc == TIRX_E_NO_MEMORY || st == TIRX_E_NO_MEMORY,
              "verify(%s) is %s, of its canonical form %s: %s", args, tirx_status_name(st),
              show(c), tirx_status_name(sc));
  }
  /* Brute force where the layout and the launch are small. */
  int64_t size = tirx_layout_size(l), reps = tirx_layout_replica_count(l);
  if (strict && size <= 256 && reps <= MAXP && size * reps <= 256 &&
      e->warps * e->csize <= 32 && st != TIRX_E_NO_MEMORY) {
    bool want = verify_oracle(l, e);
    INVARIANT(want == (st == TIRX_OK), "verify(%s) is %s, brute force says %s (%s)", args,
              tirx_status_name(st), want ? "well formed" : "not", tirx_last_error());
  }
}

static void op_tmem(fz *f) {
  uint8_t k = u8(&f->in);
  tirx_clear_error();
  if (k % 2 == 0) {
    static const int ms[] = {64, 128, 256, 64, 128, 0, 32, 192};
    int m = (k & 0x80) ? (int)(int8_t)u8(&f->in) : ms[u8(&f->in) % 8];
    int n = (k & 0x40) ? (int)(int16_t)(u8(&f->in) | u8(&f->in) << 8) : 8 * (1 + u8(&f->in) % 33);
    int cg = (k & 0x20) ? (int)(int8_t)u8(&f->in) : 1 + u8(&f->in) % 2;
    char args[64];
    snprintf(args, sizeof args, "%d, %d, %d", m, n, cg);
    tirx_layout *l = tirx_layout_tmem_acc(f->a, m, n, cg);
    if (!ok_obj(l, "tirx_layout_tmem_acc", BIT(E_NULL_ARG) | BIT(E_INVALID_ARG) | BIT(E_NO_MEMORY),
                args))
      return;
    INVARIANT((cg == 1 && (m == 64 || m == 128)) || (cg == 2 && (m == 128 || m == 256)),
              "tmem_acc(%s) accepted", args);
    INVARIANT(n >= 8 && n <= 256 && n % (m == 64 ? 8 : 16) == 0, "tmem_acc(%s) accepted n", args);
    add_layout(f, l);
    int64_t shape[MAXR];
    INVARIANT(shape_of(l, shape) == 2 && shape[0] == m / cg && shape[1] == n,
              "tmem_acc(%s) = %s: shape", args, show(l));
    for (int i = 0; i < NSAMPLES; i++) { /* the PTX data path layouts */
      int64_t x = sample(f, m / cg * n, i), r = x / n, c = x % n, lane = r, col = c;
      if (m == 64) lane = 32 * (r / 16) + r % 16;
      else if (m == 128 && cg == 2) lane = r + 64 * (c / (n / 2)), col = c % (n / 2);
      if (!eval_raw(l, x, &PS[0])) continue;
      INVARIANT(PS[0].n == 1 && PS[0].p[0].v[TIRX_AXIS_TLANE] == lane &&
                    PS[0].p[0].v[TIRX_AXIS_TCOL] == col,
                "tmem_acc(%s) = %s: element (%lld, %lld)", args, show(l), (long long)r,
                (long long)c);
    }
  } else {
    int shape = (k & 0x80) ? (int)(int8_t)u8(&f->in) : u8(&f->in) % 4;
    int num = (k & 0x40) ? (int)(int8_t)u8(&f->in) : 1 << (u8(&f->in) % 8);
    char args[64];
    snprintf(args, sizeof args, "%d, %d", shape, num);
    tirx_layout *l = tirx_layout_tmem_ld(f->a, (tirx_tmem_shape)shape, num);
    if (!ok_obj(l, "tirx_layout_tmem_ld", BIT(E_NULL_ARG) | BIT(E_INVALID_ARG) | BIT(E_NO_MEMORY),
                args))
      return;
    static const int most[] = {128, 128, 64, 32}, cols[] = {1, 2, 4, 8}, regs[] = {1, 1, 2, 4};
    INVARIANT(shape >= 0 && shape < 4 && num >= 1 && num <= most[shape] && !(num & (num - 1)),
              "tmem_ld(%s) accepted", args);
    add_layout(f, l);
    int64_t sh[MAXR];
    INVARIANT(shape_of(l, sh) == 2 && sh[0] == (shape ? 16 : 32) && sh[1] == cols[shape] * num,
              "tmem_ld(%s) = %s: shape", args, show(l));
    for (int i = 0; i < NSAMPLES; i++) { /* register r of lane t holds the PTX element */
      int64_t t = (int64_t)(rnd(f) % 32), r = (int64_t)(rnd(f) % (uint64_t)(regs[shape] * num));
      int64_t row = t, col = r;
      if (shape == 1) row = t / 4 + 8 * (t % 2), col = (t / 2) % 2 + 2 * r;
      if (shape == 2) row = t / 4 + 8 * (r % 2), col = t % 4 + 4 * (r / 2);
      if (shape == 3) row = t / 4 + 8 * ((r / 2) % 2), col = r % 2 + 2 * (t % 4) + 8 * (r / 4);
      if (!eval_raw(l, row * sh[1] + col, &PS[0])) continue;
      INVARIANT(PS[0].n == 1 && PS[0].p[0].v[TIRX_AXIS_LANEID] == t &&
                    PS[0].p[0].v[TIRX_AXIS_REG] == r,
                "tmem_ld(%s) = %s: lane %lld reg %lld", args, show(l), (long long)t, (long long)r);
    }
  }
}

/* l with its outermost iter grown to cover [0, n) (1:0 for a scalar): CuTe's extension. */
static const tirx_layout *grown(fz *f, const tirx_layout *l, int64_t n) {
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS], r[TIRX_LAYOUT_MAX_ITERS];
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int nd = tirx_layout_num_iters(l), nr = tirx_layout_num_replicas(l);
  int no = tirx_layout_num_offsets(l);
  for (int i = 0; i < nd; i++) tirx_layout_iter(l, i, &d[i]);
  for (int i = 0; i < nr; i++) tirx_layout_replica(l, i, &r[i]);
  for (int i = 0; i < no; i++) tirx_layout_offset_at(l, i, &o[i]);
  if (nd == 0) d[nd++] = (tirx_iter){1, 0, TIRX_AXIS_M};
  int64_t inner = 1;
  for (int i = 1; i < nd; i++) inner *= d[i].extent;
  int64_t need = n / inner + 1;
  if (need > d[0].extent) d[0].extent = need;
  tirx_layout *g = tirx_layout_new(f->a, nd, d, nr, r, no, o);
  if (g && tirx_layout_swizzle_bytes(l))
    g = tirx_layout_swizzle(f->a, g, tirx_layout_swizzle_bytes(l),
                            tirx_layout_swizzle_elem_bytes(l));
  return g; /* NULL when the grown layout overflows: no check */
}

static void op_compose_ext(fz *f) {
  const tirx_layout *l = pick(f), *fm = NULL;
  int64_t size = tirx_layout_size(l);
  uint8_t mode = u8(&f->in) % 3;
  if (mode == 0) {
    fm = pick(f);
  } else { /* strides that often reach past size(l) */
    int64_t e[3], st[3];
    int n = 1 + u8(&f->in) % 3;
    for (int i = 0; i < n; i++) {
      e[i] = 1 + u8(&f->in) % 9;
      uint8_t b = u8(&f->in);
      st[i] = b % 13;
      if (mode == 2 && (__builtin_mul_overflow(b % 4 + 1, size / (1 + u8(&f->in) % 4), &st[i]) ||
                        __builtin_add_overflow(st[i], b / 64, &st[i])))
        return;
    }
    fm = tirx_layout_strided(f->a, n, e, st);
  }
  if (!fm) return;
  tirx_clear_error();
  tirx_layout *c = tirx_layout_compose_extended(f->a, l, fm);
  char args[64];
  snprintf(args, sizeof args, "recipe %d", (int)mode);
  if (!ok_obj(c, "tirx_layout_compose_extended", S_COMPOSE, args)) {
    tirx_status st = tirx_last_status();
    tirx_clear_error();
    tirx_layout *plain = tirx_layout_compose(f->a, l, fm);
    INVARIANT(!plain || st == TIRX_E_NO_MEMORY || st == TIRX_E_LIMIT,
              "compose(%s, %s) = %s but the extending composition fails with %s", show(l),
              show(fm), show(plain), tirx_status_name(st));
    return;
  }
  add_layout(f, c);
  int64_t fs[MAXR], cs[MAXR];
  int rf = shape_of(fm, fs), rc = shape_of(c, cs);
  INVARIANT(rf == rc && memcmp(fs, cs, (size_t)rf * sizeof fs[0]) == 0,
            "compose_extended(%s, %s) = %s does not have f's grouping", show(l), show(fm), show(c));
  int64_t n = tirx_layout_size(c), hi = 0, xs[NSAMPLES], fx[NSAMPLES];
  for (int i = 0; i < NSAMPLES; i++) {
    xs[i] = sample(f, n, i);
    INVARIANT(tirx_layout_eval_m(fm, xs[i], &fx[i]) == TIRX_OK && fx[i] >= 0,
              "compose_extended(%s, %s) accepted f(%lld) = %lld", show(l), show(fm),
              (long long)xs[i], (long long)fx[i]);
    if (fx[i] > hi) hi = fx[i];
  }
  const tirx_layout *g = hi < size ? l : grown(f, l, hi);
  tirx_clear_error();
  for (int i = 0; g && i < NSAMPLES; i++)
    same_points(c, xs[i], g, fx[i], "compose_extended: (l o f)(x) != l_ext(f(x))");
}

/* Long runs over iters whose carries coincide (the closed-form factoring of slice): the slice
 * law at sampled elements, and brute force over the run's points when it is short enough. */
enum { RUN_BRUTE = 256 };

static bool run_points_layout(const tirx_coord *p, int64_t n, int depth) {
  if (n == 1) return true;
  int axes = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) axes += p[1].v[ax] != p[0].v[ax];
  if (axes > 1 || depth > 12) return false;
  for (int64_t fct = 2; fct <= n; fct++) {
    if (n % fct) continue;
    bool ok = true;
    for (int64_t j = 0; j < n && ok; j++)
      for (int ax = 0; ax < TIRX_AXIS_MAX && ok; ax++)
        ok = (__int128)p[j].v[ax] - p[j - j % fct].v[ax] ==
             (__int128)(j % fct) * ((__int128)p[1].v[ax] - p[0].v[ax]);
    if (!ok) continue;
    static tirx_coord q[13][RUN_BRUTE];
    for (int64_t u = 0; u < n / fct; u++) q[depth][u] = p[u * fct];
    if (run_points_layout(q[depth], n / fct, depth + 1)) return true;
  }
  return false;
}

static void op_slice_run(fz *f) {
  tirx_iter d[5];
  int nd = 2 + u8(&f->in) % 3;
  int64_t reach = 0, size = 1;
  bool big = u8(&f->in) % 4 == 0;
  for (int i = nd - 1; i >= 0; i--) {
    uint8_t b = u8(&f->in);
    int64_t e = i == nd - 1 ? 2 + (big ? (int64_t)u8(&f->in) << (u8(&f->in) % 24) : b % 40)
                            : 2 + b % 4;
    int64_t s0 = i == nd - 1 ? 1 + b % 3 : d[nd - 1].stride, s = s0;
    if (i != nd - 1 && __builtin_add_overflow(reach, b & 0x10 ? s0 : (int8_t)u8(&f->in) % 4, &s))
      return;
    if (b & 0x20) s = interesting(&f->in);
    d[i] = (tirx_iter){e, s, (b & 0xc0) == 0xc0 ? TIRX_AXIS_LANEID : TIRX_AXIS_M};
    if (__builtin_mul_overflow(size, e, &size)) return;
    int64_t add;
    if (__builtin_mul_overflow(e - 1, s, &add) || __builtin_add_overflow(reach, add, &reach))
      return;
  }
  tirx_clear_error();
  tirx_layout *l = tirx_layout_new(f->a, nd, d, 0, NULL, 0, NULL);
  if (!ok_obj(l, "tirx_layout_new", S_MAKE, "run layout")) return;
  int64_t e = 1 + (int64_t)(rnd(f) % (uint64_t)size), b = (int64_t)(rnd(f) % (uint64_t)(size - e + 1));
  if (u8(&f->in) % 2 && size > 2) { /* a short run, for brute force */
    e = 2 + (int64_t)(rnd(f) % (uint64_t)(size - 1 < RUN_BRUTE - 1 ? size - 1 : RUN_BRUTE - 1));
    b = (int64_t)(rnd(f) % (uint64_t)(size - e + 1));
  }
  char args[256];
  snprintf(args, sizeof args, "%s, [%lld, %lld)", show(l), (long long)b, (long long)(b + e));
  tirx_clear_error();
  tirx_layout *s = tirx_layout_slice(f->a, l, 1, &size, &b, &e);
  if (!s) check_failure("tirx_layout_slice", S_SLICE, args);
  else add_layout(f, s);
  for (int i = 0; s && i < NSAMPLES; i++) {
    int64_t y = sample(f, e, i);
    same_points(s, y, l, b + y, "slice of a run: element y is not parent(begin + y)");
  }
  if (strict && e <= RUN_BRUTE) { /* exactly when the points are a layout */
    static tirx_coord pts[RUN_BRUTE];
    for (int64_t j = 0; j < e; j++) {
      int64_t cnt;
      INVARIANT(tirx_layout_eval(l, b + j, &pts[j], 1, &cnt) == TIRX_OK, "eval %s", args);
      for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) /* differences must fit, as strides */
        if (pts[j].v[ax] > INT64_MAX / 4 || pts[j].v[ax] < -(INT64_MAX / 4)) return;
    }
    bool want = run_points_layout(pts, e, 0);
    INVARIANT(want == (s != NULL) || (!s && tirx_last_status() != TIRX_E_NOT_REPRESENTABLE),
              "slice(%s) %s, brute force says %s (%s)", args, s ? "accepted" : "refused",
              want ? "a layout" : "no layout", tirx_last_error());
  }
}

/* ---- driver ---------------------------------------------------------------------------------- */

typedef void (*op_fn)(fz *f);
static const op_fn ops[] = {
    op_canon,        op_equal,      op_group,   op_flatten, op_permute,  op_slice,
    op_tile,         op_compose,    op_storage_view,        op_vector_width,
    op_contiguous,   op_swizzle,    op_span,    op_eval,    op_str,      op_new,
    op_fragment,     op_scope_new,  op_scope_filter,        op_scope_team,
    op_coord,        op_tile_recover,              op_direct_sum,          op_pack,
    op_cute,         op_verify,     op_tmem,    op_compose_ext,         op_slice_run,
};
enum { N_OPS = sizeof ops / sizeof ops[0] };

/* TIRX_FUZZ_OPS=25,26 restricts the opcodes to a list (the opcode byte indexes the list);
 * TIRX_FUZZ_COUNTS=1 prints how often each operation ran when the process exits. */
static int op_sel[N_OPS], n_sel;
static uint64_t op_runs[N_OPS];
static bool print_counts;

static void report_counts(void) {
  fprintf(stderr, "fuzz_layout: operation counts:");
  for (int i = 0; i < N_OPS; i++)
    if (op_runs[i]) fprintf(stderr, " %d:%llu", i, (unsigned long long)op_runs[i]);
  fprintf(stderr, "\n");
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *lax = getenv("TIRX_FUZZ_LAX");
  strict = !(lax && *lax && strcmp(lax, "0") != 0);
  const char *sel = getenv("TIRX_FUZZ_OPS");
  for (const char *p = sel; p && *p && n_sel < N_OPS;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p) break;
    if (v >= 0 && v < N_OPS) op_sel[n_sel++] = (int)v;
    p = *end == ',' ? end + 1 : end;
  }
  const char *counts = getenv("TIRX_FUZZ_COUNTS");
  print_counts = counts && *counts && strcmp(counts, "0") != 0;
  if (print_counts) atexit(report_counts);
  /* Two backend axes (tensor memory), registered once so that inputs stay reproducible. */
  tirx_axis ax;
  tirx_axis_register("Lane", &ax);
  tirx_axis_register("Col", &ax);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t tlen = 0;
  while (tlen < size && data[tlen] != '\n' && data[tlen] != 0) tlen++;
  const uint8_t *sep = tlen < size ? data + tlen : NULL;
  char *text = malloc(tlen + 1);
  if (!text) return 0;
  memcpy(text, data, tlen);
  text[tlen] = '\0';
  cur_text = text;

  fz f;
  memset(&f, 0, sizeof f);
  f.in.p = sep ? sep + 1 : data + size;
  f.in.n = sep ? size - tlen - 1 : 0;
  f.rng = 1469598103934665603ULL; /* FNV-1a of the input seeds the sample indices */
  for (size_t i = 0; i < size; i++) f.rng = (f.rng ^ data[i]) * 1099511628211ULL;
  f.rng |= 1;
  f.a = tirx_arena_create();
  if (!f.a) {
    free(text);
    return 0;
  }

  tirx_clear_error();
  tirx_layout *l = tirx_layout_parse(f.a, text);
  if (ok_obj(l, "tirx_layout_parse", S_PARSE, text)) {
    add_layout(&f, l);
    round_trip(&f, l, tlen / 2 + 1);
    /* canonicalize preserves the placement. */
    tirx_layout *c = tirx_layout_canonicalize(f.a, l);
    if (ok_obj(c, "tirx_layout_canonicalize", S_CANON, text)) {
      same_placement_sampled(&f, l, c, "canonicalize");
      add_layout(&f, c);
    }
  } else {
    int64_t shape[2] = {4, 8};
    tirx_layout *rm = tirx_layout_row_major(f.a, 2, shape);
    INVARIANT(rm != NULL, "row_major(4, 8) failed");
    add_layout(&f, rm);
  }

  for (int n = 0; n < MAX_OPS && f.in.n > 0; n++) {
    int op = n_sel ? op_sel[u8(&f.in) % n_sel] : u8(&f.in) % N_OPS;
    op_runs[op]++;
    ops[op](&f);
  }

  tirx_arena_destroy(f.a);
  free(text);
  cur_text = "";
  return 0;
}
