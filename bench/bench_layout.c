/*
 * bench_layout.c: timing of the layout algebra's hot paths on a 6-iter layout.
 *
 *   bench_layout [--quick] [CSV_PATH]
 *
 * Times tirx_layout_canonicalize, tirx_layout_slice, tirx_layout_group, tirx_layout_parse,
 * tirx_layout_str (with the free) and tirx_layout_eval on the layout below, and the operations
 * of issue 19 on small fixed operands: slice_wrap (rows and columns [4, 12) of the paper's
 * (2,8,3,8):(192,8,64,1), both wrapping), coord (of the layout below), tile_outer (a (64,64)
 * row-major tensor by an (8,8) tile), direct_sum (the layout below (+) the paper's), pack (the
 * mma C fragment, 2 per register), complement ((3,4):(8,1) into 96) and logical_divide (the
 * flat (64,64) tensor by (8):(1)); and verify_wg (tirx_layout_verify of the wgmma m64n256
 * accumulator at warpgroup scope of an 8-warp CTA), verify_cta ((32,32,8):(1@laneid,1@warpid,
 * 1@reg) at the scope of a 32-warp CTA: 1024 ranks), tmem_acc (m 128, n 256, cta_group 1),
 * tmem_ld (16x256b.x8), compose_ext (CuTe's (4,3):(3,1) o 24:1, extending the last mode) and
 * slice_run (elements [1024, 2049) of (3,2,2,1024):(1124,1124,100,1), a run past 1024 elements
 * factored in closed form). The base layout is
 *
 *     (2,4,3,8,2,16):(4@warpid,1@warpid,6@reg,4@laneid,3@reg,1@m)+[2:32@m]+8@m
 *
 * (six shard iters on four axes, a replica and an offset; canonicalize merges the two warpid
 * iters; grouped to (8,24,32) and sliced to the region begin (4,8,16), extent (4,8,16)).
 *
 * Each case runs ITERS operations per run, in batches: an arena is created before a batch and
 * destroyed after it, inside the timed region, so the arena's cost is included but amortised.
 * The batch holds about ARENA_TARGET bytes of results (the case's arena bytes per operation
 * are measured first; at most 10000 operations): a batch of 10k results (~3 MB) would be fresh
 * memory every time, and its page faults, not the algebra, would dominate the timing. The
 * result is the median over RUNS runs (after one warm-up run) of ns/op, measured with
 * clock_gettime(CLOCK_MONOTONIC). A table goes to stdout, a CSV (op,layout,iterations,runs,
 * batch,arena_bytes_per_op,median_ns,min_ns,max_ns,cpu_median_ns) to CSV_PATH when given
 * (cpu: the thread's CPU time, CLOCK_THREAD_CPUTIME_ID, to tell a slow library from a busy
 * machine; the verdict uses the wall-clock median), and the last line is a verdict against
 * the target "canonicalize and slice of a 6-iter layout well under 1 us" (PASS: both at most
 * 500 ns; MARGINAL: both under 1000 ns; FAIL otherwise). The exit
 * status is 0 unless an operation fails or the CSV cannot be written; a slow verdict does not
 * fail the run. --quick runs fewer iterations (for `meson test --benchmark`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tirx.h"

enum { MAX_BATCH = 10000, ARENA_TARGET = 32 * 1024, MAX_RUNS = 15 };

static const char LAYOUT_TEXT[] =
    "(2,4,3,8,2,16):(4@warpid,1@warpid,6@reg,4@laneid,3@reg,1@m)+[2:32@m]+8@m";
static const int64_t SHAPE[3] = {8, 24, 32};
static const int64_t BEGIN[3] = {4, 8, 16};
static const int64_t EXTENT[3] = {4, 8, 16};

typedef struct ctx {
  const tirx_layout *l; /* the parsed layout, in its own arena */
  int64_t size;
  tirx_coord out[4];
  /* The operands of issue 19's operations (built once, in the base arena). */
  const tirx_layout *paper; /* (2,8,3,8):(192,8,64,1), a (16,24) tensor */
  const tirx_layout *rm64, *tile8, *mma_c, *cute_a, *tiler8;
  /* The operands of the rest of issue 19. */
  const tirx_layout *acc, *cta_frag, *ext_a, *ext_f, *run;
  const tirx_scope *wg, *cta;
} ctx;

static volatile uintptr_t sink; /* keeps results observable */

static void die(const char *what) {
  fprintf(stderr, "bench_layout: %s failed: %s: %s\n", what, tirx_status_name(tirx_last_status()),
          tirx_last_error());
  exit(1);
}

/* One operation; i is the iteration number. Returns false on failure. */
typedef bool (*op_fn)(ctx *c, tirx_arena *a, int64_t i);

static bool op_canonicalize(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_canonicalize(a, c->l);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_slice(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_slice(a, c->l, 3, SHAPE, BEGIN, EXTENT);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_group(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_group(a, c->l, 3, SHAPE);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_parse(ctx *c, tirx_arena *a, int64_t i) {
  (void)c;
  (void)i;
  tirx_layout *r = tirx_layout_parse(a, LAYOUT_TEXT);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_str(ctx *c, tirx_arena *a, int64_t i) {
  (void)a;
  (void)i;
  char *s = tirx_layout_str(c->l);
  sink ^= (uintptr_t)s;
  free(s);
  return s != NULL;
}

static bool op_eval(ctx *c, tirx_arena *a, int64_t i) {
  (void)a;
  int64_t count = 0;
  if (tirx_layout_eval(c->l, i % c->size, c->out, 4, &count) != TIRX_OK) return false;
  sink ^= (uintptr_t)c->out[count - 1].v[TIRX_AXIS_M];
  return true;
}

/* ---- issue 19: the algebra completed ---- */

static const int64_t P_SHAPE[2] = {16, 24}, P_BEGIN[2] = {4, 4}, P_EXTENT[2] = {8, 8};

static bool op_slice_wrap(ctx *c, tirx_arena *a, int64_t i) { /* both dims wrap an iter */
  (void)i;
  tirx_layout *r = tirx_layout_slice(a, c->paper, 2, P_SHAPE, P_BEGIN, P_EXTENT);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_coord(ctx *c, tirx_arena *a, int64_t i) {
  (void)a;
  int64_t x = i % c->size, dg[8];
  int n;
  if (tirx_layout_coord(c->l, &x, dg, 8, &n) != TIRX_OK) return false;
  sink ^= (uintptr_t)dg[n - 1];
  return true;
}

static bool op_tile_outer(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_tile_outer(a, c->rm64, c->tile8);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_direct_sum(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_direct_sum(a, c->l, c->paper);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_pack(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_pack(a, c->mma_c, TIRX_AXIS_REG, 2);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_complement(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_complement(a, c->cute_a, 96);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_logical_divide(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_logical_divide(a, c->rm64, c->tiler8);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_verify_wg(ctx *c, tirx_arena *a, int64_t i) {
  (void)a;
  (void)i;
  return tirx_layout_verify(c->acc, c->wg) == TIRX_OK;
}

static bool op_verify_cta(ctx *c, tirx_arena *a, int64_t i) {
  (void)a;
  (void)i;
  return tirx_layout_verify(c->cta_frag, c->cta) == TIRX_OK;
}

static bool op_tmem_acc(ctx *c, tirx_arena *a, int64_t i) {
  (void)c;
  (void)i;
  tirx_layout *r = tirx_layout_tmem_acc(a, 128, 256, 1);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_tmem_ld(ctx *c, tirx_arena *a, int64_t i) {
  (void)c;
  (void)i;
  tirx_layout *r = tirx_layout_tmem_ld(a, TIRX_TMEM_16X256B, 8);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static bool op_compose_ext(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_compose_extended(a, c->ext_a, c->ext_f);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static const int64_t R_SHAPE = 12288, R_BEGIN = 1024, R_EXTENT = 1025;

static bool op_slice_run(ctx *c, tirx_arena *a, int64_t i) {
  (void)i;
  tirx_layout *r = tirx_layout_slice(a, c->run, 1, &R_SHAPE, &R_BEGIN, &R_EXTENT);
  sink ^= (uintptr_t)r;
  return r != NULL;
}

static double clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One run: iters operations in arena batches of batch; returns wall ns/op (CLOCK_MONOTONIC)
 * and the thread's CPU ns/op in *cpu (shows how much a busy machine inflates the wall time). */
static double run_once(ctx *c, op_fn fn, const char *name, int64_t iters, int64_t batch,
                       double *cpu) {
  double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = clock_ns(CLOCK_MONOTONIC);
  for (int64_t done = 0; done < iters;) {
    tirx_arena *a = tirx_arena_create();
    if (!a) die("tirx_arena_create");
    int64_t n = iters - done < batch ? iters - done : batch;
    for (int64_t i = 0; i < n; i++)
      if (!fn(c, a, done + i)) die(name);
    tirx_arena_destroy(a);
    done += n;
  }
  double wall = (clock_ns(CLOCK_MONOTONIC) - t0) / (double)iters;
  *cpu = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)iters;
  return wall;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct result {
  const char *name;
  int64_t batch, bytes_per_op;
  double median, min, max, cpu; /* cpu: median thread CPU ns/op */
} result;

static result bench(ctx *c, const char *name, op_fn fn, int64_t iters, int runs) {
  result res = {name, MAX_BATCH, 0, 0, 0, 0, 0};
  /* Arena bytes per operation, to size the batches. */
  tirx_arena *a = tirx_arena_create();
  if (!a) die("tirx_arena_create");
  for (int i = 0; i < 100; i++)
    if (!fn(c, a, i)) die(name);
  res.bytes_per_op = (int64_t)(tirx_arena_bytes(a) + 99) / 100;
  tirx_arena_destroy(a);
  if (res.bytes_per_op > 0) res.batch = ARENA_TARGET / res.bytes_per_op;
  if (res.batch < 8) res.batch = 8;
  if (res.batch > MAX_BATCH) res.batch = MAX_BATCH;

  double t[MAX_RUNS], cpu[MAX_RUNS];
  run_once(c, fn, name, iters / 4 > 0 ? iters / 4 : 1, res.batch, &cpu[0]); /* warm-up */
  for (int r = 0; r < runs; r++) t[r] = run_once(c, fn, name, iters, res.batch, &cpu[r]);
  qsort(t, (size_t)runs, sizeof t[0], cmp_double);
  qsort(cpu, (size_t)runs, sizeof cpu[0], cmp_double);
  res.cpu = runs % 2 ? cpu[runs / 2] : (cpu[runs / 2 - 1] + cpu[runs / 2]) / 2;
  res.median = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
  res.min = t[0];
  res.max = t[runs - 1];
  return res;
}

int main(int argc, char **argv) {
  const char *csv_path = NULL;
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("usage: %s [--quick] [CSV_PATH]\n", argv[0]);
      return 0;
    } else if (!csv_path) {
      csv_path = argv[i];
    } else {
      fprintf(stderr, "usage: %s [--quick] [CSV_PATH]\n", argv[0]);
      return 2;
    }
  }
  int64_t iters = quick ? 20000 : 200000;
  int runs = quick ? 3 : 9;

  tirx_arena *base = tirx_arena_create();
  if (!base) die("tirx_arena_create");
  ctx c;
  memset(&c, 0, sizeof c);
  if (!(c.l = tirx_layout_parse(base, LAYOUT_TEXT))) die("tirx_layout_parse");
  c.size = tirx_layout_size(c.l);
  if (!(c.paper = tirx_layout_parse(base, "(2,8,3,8):(192,8,64,1)"))) die("parse (paper)");
  if (!(c.rm64 = tirx_layout_row_major(base, 2, (int64_t[]){64, 64}))) die("row_major");
  if (!(c.tile8 = tirx_layout_strided(base, 2, (int64_t[]){8, 8}, (int64_t[]){64, 1})))
    die("strided");
  if (!(c.mma_c = tirx_layout_mma_m16n8k16_c(base))) die("mma_c");
  if (!(c.cute_a = tirx_layout_parse(base, "(3,4):(8,1)"))) die("parse (cute)");
  if (!(c.tiler8 = tirx_layout_parse(base, "(8):(1)"))) die("parse (tiler)");
  if (!(c.acc = tirx_layout_wgmma_acc(base, 64, 256))) die("wgmma_acc");
  if (!(c.cta_frag = tirx_layout_parse(base, "(32,32,8):(1@laneid,1@warpid,1@reg)")))
    die("parse (cta fragment)");
  if (!(c.ext_a = tirx_layout_parse(base, "(3,4):(1,3)"))) die("parse (extended)");
  if (!(c.ext_f = tirx_layout_parse(base, "(24):(1)"))) die("parse (index map)");
  if (!(c.run = tirx_layout_parse(base, "(3,2,2,1024):(1124,1124,100,1)"))) die("parse (run)");
  tirx_scope *cta8 = tirx_scope_new(base, 8, 1, 1);
  if (!cta8 || !(c.wg = tirx_scope_team(base, cta8, TIRX_TEAM_WARPGROUP))) die("scope (wg)");
  if (!(c.cta = tirx_scope_new(base, 32, 1, 1))) die("scope (cta)");

  /* Check the cases once before timing them, and show what they produce. */
  tirx_layout *canon = tirx_layout_canonicalize(base, c.l);
  if (!canon) die("tirx_layout_canonicalize");
  tirx_layout *sliced = tirx_layout_slice(base, c.l, 3, SHAPE, BEGIN, EXTENT);
  if (!sliced) die("tirx_layout_slice");
  char *s_l = tirx_layout_str(c.l), *s_c = tirx_layout_str(canon), *s_s = tirx_layout_str(sliced);
  if (!s_l || !s_c || !s_s) die("tirx_layout_str");
  printf("layout:       %s (%d iters, size %lld)\n", s_l, tirx_layout_num_iters(c.l),
         (long long)c.size);
  printf("canonical:    %s\n", s_c);
  printf("slice:        %s (shape (8,24,32), begin (4,8,16), extent (4,8,16))\n", s_s);
  free(s_l);
  free(s_c);
  free(s_s);

  static const struct {
    const char *name;
    op_fn fn;
  } cases[] = {
      {"canonicalize", op_canonicalize}, {"slice", op_slice}, {"group", op_group},
      {"parse", op_parse},               {"str", op_str},     {"eval", op_eval},
      {"slice_wrap", op_slice_wrap},     {"coord", op_coord}, {"tile_outer", op_tile_outer},
      {"direct_sum", op_direct_sum},     {"pack", op_pack},   {"complement", op_complement},
      {"logical_divide", op_logical_divide}, {"verify_wg", op_verify_wg},
      {"verify_cta", op_verify_cta},     {"tmem_acc", op_tmem_acc}, {"tmem_ld", op_tmem_ld},
      {"compose_ext", op_compose_ext},   {"slice_run", op_slice_run},
  };
  enum { NCASES = sizeof cases / sizeof cases[0] };
  result res[NCASES];
  printf("\n%-14s %12s %10s %10s %10s %8s %8s   (%lld ops/run, median of %d runs)\n", "op",
         "median ns/op", "min", "max", "cpu ns/op", "B/op", "batch", (long long)iters, runs);
  bool busy = false;
  for (int i = 0; i < NCASES; i++) {
    res[i] = bench(&c, cases[i].name, cases[i].fn, iters, runs);
    printf("%-14s %12.1f %10.1f %10.1f %10.1f %8lld %8lld\n", res[i].name, res[i].median,
           res[i].min, res[i].max, res[i].cpu, (long long)res[i].bytes_per_op,
           (long long)res[i].batch);
    fflush(stdout);
    if (res[i].median > 1.3 * res[i].cpu) busy = true;
  }
  if (busy)
    printf("note: wall time exceeds this thread's CPU time by over 30%%: the machine is busy and "
           "the wall-clock numbers are inflated\n");

  if (csv_path) {
    FILE *f = fopen(csv_path, "w");
    if (!f) {
      perror(csv_path);
      return 1;
    }
    fprintf(f, "op,layout,iterations,runs,batch,arena_bytes_per_op,median_ns,min_ns,max_ns,"
               "cpu_median_ns\n");
    for (int i = 0; i < NCASES; i++)
      fprintf(f, "%s,\"%s\",%lld,%d,%lld,%lld,%.1f,%.1f,%.1f,%.1f\n", res[i].name, LAYOUT_TEXT,
              (long long)iters, runs, (long long)res[i].batch, (long long)res[i].bytes_per_op,
              res[i].median, res[i].min, res[i].max, res[i].cpu);
    if (fclose(f) != 0) {
      perror(csv_path);
      return 1;
    }
    printf("\nwrote %s\n", csv_path);
  }

  double worst = res[0].median > res[1].median ? res[0].median : res[1].median;
  const char *verdict = worst <= 500 ? "PASS" : worst < 1000 ? "MARGINAL" : "FAIL";
  printf("verdict: %s: canonicalize %.0f ns/op, slice %.0f ns/op of a 6-iter layout "
         "(target: well under 1 us, i.e. at most 500 ns; %.1fx headroom to 1 us)\n",
         verdict, res[0].median, res[1].median, 1000.0 / worst);
  tirx_arena_destroy(base);
  return 0;
}
