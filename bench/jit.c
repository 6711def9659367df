/*
 * jit: the kernel cache's figures, in one run.
 *
 *   jit [out.csv] [--launches N] [--only SECTIONS] [--rounds R]
 *       SECTIONS: letters of 0 (a0) a b c d e f g, e.g. --only d; R: (d)'s rounds (1 to 15), its
 *       three figures interleaved in each, medians reported (a shared machine's load then
 *       reaches them alike)
 *
 *   (a0) the host path without the driver: kernel plan + memory-table probe, lock-free against
 *       the same probe under a pthread_rwlock read lock, on 1 thread and on every CPU.
 *   (a) tirx_launch of a variant in the memory table against a raw cuLaunchKernel of the same
 *       CUfunction with the same parameters (medians, extra us; target <= 0.3 us).
 *   (b) time to first launch in a NEW process whose disk cache holds the kernels: this program
 *       re-executes itself (/proc/self/exe --first-launch-child DIR OUT) and times runtime
 *       creation, then per example kernel the build and the first launch + synchronise (target
 *       <= 0.5 ms per kernel beyond runtime creation), with the child's compile count (must be 0)
 *       and whether it started the compile queue (must not: a disk hit loads on the caller).
 *   (c) cold compile of each example kernel's launch variant, NVRTC separated from the rest:
 *       kernel build (builder + codegen), variant source, cache key, NVRTC, disk write
 *       (publish with fsync), module load (GPU only). NVRTC's one-time start-up is reported on its
 *       own line.
 *   (d) 64 distinct variants (one VALUE-specialised kernel, 64 values) warmed up through the
 *       compile queue: NVRTC in the process one at a time (max_parallel_compiles 1), in the
 *       process on as many threads as libuv's pool has, and in compile worker processes (one per
 *       CPU, as many at once; the workers' start-up is inside the figure), and the same pool
 *       already running (one other variant per worker compiled first, untimed: what a server
 *       that started its pool pays): each one's speedup over one at a time, against the
 *       issue's target of 0.8 x CPUs. The worker program is
 *       $TIRX_COMPILE_WORKER, else tirx-compile-worker in the directory above this program's
 *       (the build tree), else the library's own search; without one the row says so.
 *       UV_THREADPOOL_SIZE is set to the number of online CPUs + 1 when unset (before libuv
 *       starts).
 *
 *   (e) single flight across processes: P processes (this program re-executed, so no CUDA state
 *       is forked) miss the same K new kernels in one fresh cache directory at once and compile
 *       them with NVRTC, with per-key claims (tirx__store_claim) and without: NVRTC runs and
 *       wall time of each.
 *
 *   (g) warm start for a fleet: 100 variants compiled into one cache directory, `tirx cache
 *       export`'s bundle of it written, imported into an empty directory (every entry checked
 *       as a load checks it), then a NEW process on the imported directory makes each variant
 *       ready once (with a GPU: tirx_launch + synchronise; without: tirx_runtime_warmup, a disk
 *       hit loaded into the memory table): export and import times, the new process's runtime
 *       creation and first launches (total, mean, worst), and its compile count (must be 0).
 *
 *   (f) hot launches under background compiles (GPU): 8 threads launch a warm kernel, each on
 *       its own stream, and time every tirx_launch call on the host: p50 and p99, first with
 *       nothing else running, then while 64 new variants compile in the background
 *       (tirx_prepare_async); once with the compiles in compile workers (niced), once with
 *       NVRTC on the runtime's threads. The gap between the quiet and the compiling p99 is
 *       what compiles cost the launching threads.
 *
 * Without a GPU, (a), (b) and (f) are skipped (said so on stdout and in the CSV) and (c), (d),
 * (e) and (g) run ((g)'s new process then warms up instead of launching). The CSV has one row per figure: section,name,metric,value,unit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/store.h"
#include "jit/jit.h"
#include "bench_util.h"
#include "demo_kernels.h"

static FILE *csv;
/* --only: the sections to run ("a0" is 0; NULL: all). */
static const char *only;
static bool section(char c) { return !only || strchr(only, c) != NULL; }

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void row(const char *section, const char *name, const char *metric, double value,
                const char *unit) {
  if (csv)
    fprintf(csv, "%s,%s,%s,%.6g,%s\n", section, name, metric, value, unit);
}

static void mkdtemp_in(char *buf, size_t len, const char *what) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, len, "%s/tirx-bench-%s-XXXXXX", t && t[0] ? t : "/tmp", what);
  if (!mkdtemp(buf)) {
    perror("mkdtemp");
    exit(1);
  }
}

static void rm_cache_dir(const char *dir) {
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = dir;
  tirx__store *s = NULL;
  tirx__store_open(&o, &s);
  if (s && tirx__store_enabled(s))
    tirx__store_clear(s, NULL);
  tirx__store_close(s);
  rmdir(dir);
}

/* ---- launch arguments for every example kernel (one shared device buffer) ---- */

enum { N = 4096, M2 = 64, N2 = 64, BUF_FLOATS = N * 4 };

typedef struct kargs {
  tirx_arg a[6];
  int n;
  int64_t s1[1], s2[2], s3[1], s4[1];
} kargs;

static void make_args(const char *name, void *buf, kargs *k) {
  memset(k, 0, sizeof *k);
  k->s1[0] = N;
  k->s2[0] = M2;
  k->s2[1] = N2;
  k->s3[0] = M2;
  k->s4[0] = N2;
  if (!strcmp(name, "vector_add")) {
    k->a[0] = tirx_arg_i64(N);
    for (int i = 1; i < 4; i++)
      k->a[i] = tirx_arg_tensor(buf, TIRX_F32, 1, k->s1, NULL);
    k->n = 4;
  } else if (!strcmp(name, "saxpy")) {
    k->a[0] = tirx_arg_i64(N);
    k->a[1] = tirx_arg_f32(1.5f);
    k->a[2] = tirx_arg_tensor(buf, TIRX_F32, 1, k->s1, NULL);
    k->a[3] = tirx_arg_tensor(buf, TIRX_F32, 1, k->s1, NULL);
    k->n = 4;
  } else if (!strcmp(name, "broadcast2d")) {
    k->a[0] = tirx_arg_i64(M2);
    k->a[1] = tirx_arg_i64(N2);
    k->a[2] = tirx_arg_tensor(buf, TIRX_F32, 2, k->s2, NULL);
    k->a[3] = tirx_arg_tensor(buf, TIRX_F32, 1, k->s3, NULL);
    k->a[4] = tirx_arg_tensor(buf, TIRX_F32, 1, k->s4, NULL);
    k->a[5] = tirx_arg_tensor(buf, TIRX_F32, 2, k->s2, NULL);
    k->n = 6;
  } else if (!strcmp(name, "softmax")) {
    k->a[0] = tirx_arg_i64(M2);
    k->a[1] = tirx_arg_i64(N2);
    k->a[2] = tirx_arg_tensor(buf, TIRX_F32, 2, k->s2, NULL);
    k->a[3] = tirx_arg_tensor(buf, TIRX_F32, 2, k->s2, NULL);
    k->n = 4;
  } else { /* empty */
    k->a[0] = tirx_arg_i32(0);
    k->n = 1;
  }
}

/* ---- (a) memory hit against raw cuLaunchKernel ---- */

static int bench_launch(tirx_runtime *rt, long launches) {
  enum { BLOCK = 256, WARMUP = 2000 };
  tirx_kernel *k = example_empty();
  tirx_arg args[] = {tirx_arg_i32(0)};
  double *tt = malloc((size_t)launches * sizeof *tt), *tr = malloc((size_t)launches * sizeof *tr);
  double *tn = malloc((size_t)launches * sizeof *tn);
  int rc = 1;
  bool pushed = false;
  if (!k || !tt || !tr || !tn)
    goto done;
  for (int i = 0; i < WARMUP; i++) /* compiles or loads, then warms the paths */
    if (tirx_launch(rt, k, args, 1, NULL) != TIRX_OK) {
      fprintf(stderr, "jit (a): %s\n", tirx_last_error());
      goto done;
    }
  tirx_runtime_synchronize(rt, NULL);
  /* Without a current context: tirx pushes and pops the primary context per call. */
  for (long b = 0; b < launches; b += BLOCK) {
    for (int i = 0; i < BLOCK; i++) {
      double t0 = now_ms();
      tirx_launch(rt, k, args, 1, NULL);
      tn[b + i] = now_ms() - t0;
    }
    tirx_runtime_synchronize(rt, NULL);
  }
  /* The raw path: the very CUfunction tirx launches, with the plan's parameters. */
  static tirx__launch_plan plan;
  if (tirx__kernel_plan(k, "jit", args, 1, &plan) != TIRX_OK) {
    fprintf(stderr, "jit (a): %s\n", tirx_last_error());
    goto done;
  }
  uint64_t kh[2];
  tirx__kernel_hash(k, kh);
  tirx__variant *v =
      tirx__variant_lookup(rt, kh, tirx__variant_hash(kh, plan.nspec, plan.spec), plan.nspec,
                           plan.spec);
  if (!v || atomic_load(&v->state) != TIRX__VARIANT_READY || !v->mod->function) {
    fprintf(stderr, "jit (a): the variant is not in the memory table\n");
    goto done;
  }
  CUfunction fn = v->mod->function;
  if (rt->drv.CtxPushCurrent(rt->ctx) != CUDA_SUCCESS)
    goto done;
  pushed = true;
  for (int i = 0; i < WARMUP; i++)
    rt->drv.LaunchKernel(fn, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                         plan.block[1], plan.block[2], plan.shared_bytes, NULL, plan.params, NULL);
  tirx_runtime_synchronize(rt, NULL);
  for (long b = 0; b < launches; b += BLOCK) {
    for (int i = 0; i < BLOCK; i++) {
      double t0 = now_ms();
      tirx_launch(rt, k, args, 1, NULL);
      tt[b + i] = now_ms() - t0;
    }
    tirx_runtime_synchronize(rt, NULL);
    for (int i = 0; i < BLOCK; i++) {
      double t0 = now_ms();
      rt->drv.LaunchKernel(fn, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                           plan.block[1], plan.block[2], plan.shared_bytes, NULL, plan.params,
                           NULL);
      tr[b + i] = now_ms() - t0;
    }
    tirx_runtime_synchronize(rt, NULL);
  }
  double mt = median(tt, (int)launches) * 1e3, mr = median(tr, (int)launches) * 1e3;
  double mn = median(tn, (int)launches) * 1e3;
  printf("(a) memory hit, %ld launches each, medians:\n", launches);
  printf("    tirx_launch (context current)   %8.3f us\n", mt);
  printf("    tirx_launch (no current ctx)    %8.3f us\n", mn);
  printf("    cuLaunchKernel, same function   %8.3f us\n", mr);
  printf("    extra per launch                %8.3f us (target <= 0.3 us): %s\n", mt - mr,
         mt - mr <= 0.3 ? "met" : "NOT met");
  row("a_launch", "empty", "tirx_launch_median", mt, "us");
  row("a_launch", "empty", "tirx_launch_no_ctx_median", mn, "us");
  row("a_launch", "empty", "cuLaunchKernel_median", mr, "us");
  row("a_launch", "empty", "extra", mt - mr, "us");
  row("a_launch", "empty", "extra_no_ctx", mn - mr, "us");
  rc = 0;
done:
  if (pushed) {
    CUcontext c;
    rt->drv.CtxPopCurrent(&c);
  }
  free(tt);
  free(tr);
  free(tn);
  tirx_kernel_release(k);
  return rc;
}

/* ---- (a0) the host path without the driver: plan + memory-table probe ---- */

typedef struct probe_arg {
  tirx_runtime *rt;
  tirx_kernel *k;
  pthread_rwlock_t *lock; /* NULL: the lock-free probe */
  long iters;
  double ns;
} probe_arg;

static void *probe_thread(void *p) {
  probe_arg *a = p;
  tirx_arg args[] = {tirx_arg_i32(0)};
  static _Thread_local tirx__launch_plan plan;
  uint64_t kh[2];
  long found = 0;
  double t0 = now_ms();
  for (long i = 0; i < a->iters; i++) {
    tirx__kernel_plan(a->k, "jit", args, 1, &plan);
    tirx__kernel_hash(a->k, kh);
    if (a->lock)
      pthread_rwlock_rdlock(a->lock);
    tirx__variant *v = tirx__variant_lookup(
        a->rt, kh, tirx__variant_hash(kh, plan.nspec, plan.spec), plan.nspec, plan.spec);
    found += v && atomic_load_explicit(&v->state, memory_order_acquire) == TIRX__VARIANT_READY;
    if (a->lock)
      pthread_rwlock_unlock(a->lock);
  }
  a->ns = (now_ms() - t0) * 1e6 / (double)a->iters;
  if (found != a->iters)
    a->ns = -1;
  return NULL;
}

/* Median of 5 runs of threads x iters probes; ns per probe (per thread). */
static double probe_ns(tirx_runtime *rt, tirx_kernel *k, pthread_rwlock_t *lock, int threads) {
  double runs[5];
  for (int r = 0; r < 5; r++) {
    probe_arg a[16];
    pthread_t th[16];
    for (int i = 0; i < threads; i++) {
      a[i] = (probe_arg){rt, k, lock, 200000, 0};
      pthread_create(&th[i], NULL, probe_thread, &a[i]);
    }
    double sum = 0;
    for (int i = 0; i < threads; i++) {
      pthread_join(th[i], NULL);
      sum += a[i].ns;
    }
    runs[r] = sum / threads;
  }
  return median(runs, 5);
}

static int bench_host_path(void) {
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  tirx_runtime *rt = NULL;
  tirx_kernel *k = example_empty();
  if (!k || tirx_runtime_create(&o, &rt) != TIRX_OK)
    return 1;
  tirx_arg args[] = {tirx_arg_i32(0)};
  const tirx_arg *lists[] = {args};
  if (tirx_runtime_warmup(rt, k, lists, (int[]){1}, 1) != TIRX_OK) {
    fprintf(stderr, "jit (a0): %s\n", tirx_last_error());
    return 1;
  }
  pthread_rwlock_t lock;
  pthread_rwlock_init(&lock, NULL);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int many = cpus < 2 ? 2 : cpus > 16 ? 16 : (int)cpus;
  double free1 = probe_ns(rt, k, NULL, 1), lock1 = probe_ns(rt, k, &lock, 1);
  double freen = probe_ns(rt, k, NULL, many), lockn = probe_ns(rt, k, &lock, many);
  printf("(a0) host path without the driver (plan + memory-table probe), ns per call:\n");
  printf("    1 thread:   lock-free %7.1f   under a pthread_rwlock read lock %7.1f\n", free1,
         lock1);
  printf("    %2d threads: lock-free %7.1f   under a pthread_rwlock read lock %7.1f\n", many,
         freen, lockn);
  row("a0_host_path", "empty", "lock_free_1_thread", free1, "ns");
  row("a0_host_path", "empty", "rwlock_1_thread", lock1, "ns");
  row("a0_host_path", "empty", "lock_free_n_threads", freen, "ns");
  row("a0_host_path", "empty", "rwlock_n_threads", lockn, "ns");
  row("a0_host_path", "empty", "threads", many, "count");
  pthread_rwlock_destroy(&lock);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  return free1 < 0 || freen < 0;
}

/* ---- (b) first launch in a new process ---- */

/* The child: writes "name,build_ms,first_launch_ms" lines and a "create,ms" and "compiles,n"
 * line to out. */
static int first_launch_child(const char *dir, const char *out_path) {
  FILE *out = fopen(out_path, "w");
  if (!out)
    return 2;
  double t0 = now_ms();
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.cache_dir = dir};
  if (tirx_runtime_create(&o, &rt) != TIRX_OK || !tirx_runtime_has_device(rt)) {
    fprintf(stderr, "jit (b) child: %s\n", rt ? tirx_runtime_device_error(rt) : tirx_last_error());
    return 3;
  }
  fprintf(out, "create,%.4f\n", now_ms() - t0);
  void *buf = NULL;
  if (tirx_runtime_alloc(rt, BUF_FLOATS * sizeof(float), &buf) != TIRX_OK)
    return 4;
  tirx_runtime_fill32(rt, buf, 0, BUF_FLOATS);
  tirx_runtime_synchronize(rt, NULL);
  int rc = 0;
  for (int i = 0; i < example_kernel_count; i++) {
    double b0 = now_ms();
    tirx_kernel *k = example_kernels[i].make();
    double b1 = now_ms();
    kargs a;
    make_args(example_kernels[i].name, buf, &a);
    tirx_status st = tirx_launch(rt, k, a.a, a.n, NULL);
    if (st == TIRX_OK)
      st = tirx_runtime_synchronize(rt, NULL);
    double b2 = now_ms();
    if (st != TIRX_OK) {
      fprintf(stderr, "jit (b) child: %s: %s\n", example_kernels[i].name, tirx_last_error());
      rc = 5;
    }
    fprintf(out, "%s,%.4f,%.4f\n", example_kernels[i].name, b1 - b0, b2 - b1);
    tirx_kernel_release(k);
  }
  tirx_cache_stats s = {0};
  tirx_runtime_cache_stats(rt, &s);
  fprintf(out, "compiles,%llu\nhits,%llu\nqueue,%d\n", (unsigned long long)s.compiles,
          (unsigned long long)s.hits, tirx__runtime_queue_started(rt) ? 1 : 0);
  fclose(out);
  tirx_runtime_free(rt, buf);
  tirx_runtime_destroy(rt);
  return rc;
}

/* ---- (e) single flight across processes ---- */

enum { E_PROCS = 8, E_KEYS = 20 }; /* issue 18: 8 processes x 20 new keys, at most 22 compiles */

static void e_source(int i, char *buf, size_t cap) {
  snprintf(buf, cap,
           "extern \"C\" __global__ void e%d(float *x, int n) {\n"
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  if (i < n) x[i] = x[i] * %d.0f + 1.0f;\n"
           "}\n",
           i, i + 2);
}

/* One process of (e): every key in order; writes its NVRTC run count to out_path. */
static int claim_child(const char *dir, const char *arch, const char *mode, const char *out_path) {
  bool claims = !strcmp(mode, "claims");
  tirx__store_options so;
  tirx__store_options_init(&so);
  so.path = dir;
  tirx__store *store = NULL;
  if (tirx__store_open(&so, &store) != TIRX_OK)
    return 3;
  int v = tirx__nvrtc_version();
  int nv_major = v / 1000, nv_minor = v % 1000 / 10;
  tirx__store_info info = {arch, nv_major, nv_minor};
  int compiles = 0;
  for (int i = 0; i < E_KEYS; i++) {
    char src[512];
    e_source(i, src, sizeof src);
    tirx__cache_key_input in;
    tirx__cache_key_input_init(&in);
    in.source = src;
    in.source_len = strlen(src);
    in.arch = arch;
    in.nvrtc_major = nv_major;
    in.nvrtc_minor = nv_minor;
    tirx__cache_key key;
    tirx__cache_key_compute(&in, &key);
    tirx__store_entry e;
    if (tirx__store_get(store, &key, &info, &e)) {
      tirx__store_entry_free(&e);
      continue;
    }
    tirx__claim c = {.fd = -1};
    if (claims && tirx__store_claim(store, &key, &info, 120000, &c, &e) == TIRX__CLAIM_HIT) {
      tirx__store_entry_free(&e);
      continue;
    }
    char name[16];
    snprintf(name, sizeof name, "e%d", i);
    tirx__nvrtc_output o;
    if (tirx__nvrtc_compile("jit", name, src, arch, false, &o) != TIRX_OK) {
      fprintf(stderr, "jit (e) child: %s\n", tirx_last_error());
      return 4;
    }
    compiles++;
    tirx__store_put(store, &key, &info, name, strlen(name), o.cubin, o.cubin_size);
    tirx__nvrtc_output_free(&o);
    tirx__store_claim_release(store, &c);
  }
  tirx__store_close(store);
  FILE *out = fopen(out_path, "w");
  if (!out)
    return 2;
  fprintf(out, "%d\n", compiles);
  fclose(out);
  return 0;
}

/* P children at once on one fresh directory; returns the wall time, *compiles their sum. */
static double claim_round(const char *arch, const char *mode, int *compiles) {
  char dir[256];
  mkdtemp_in(dir, sizeof dir, "claims");
  pid_t pids[E_PROCS];
  char outs[E_PROCS][300];
  double t0 = now_ms();
  for (int p = 0; p < E_PROCS; p++) {
    snprintf(outs[p], sizeof outs[p], "%s.out%d", dir, p);
    pids[p] = fork();
    if (pids[p] == 0) {
      execl("/proc/self/exe", "jit", "--claim-child", dir, arch, mode, outs[p], (char *)NULL);
      _exit(127);
    }
  }
  *compiles = 0;
  bool ok = true;
  for (int p = 0; p < E_PROCS; p++) {
    int st = 0;
    if (pids[p] < 0 || waitpid(pids[p], &st, 0) != pids[p] || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
      ok = false;
    FILE *f = fopen(outs[p], "r");
    int n = 0;
    if (f && fscanf(f, "%d", &n) == 1)
      *compiles += n;
    if (f)
      fclose(f);
    unlink(outs[p]);
  }
  double ms = now_ms() - t0;
  rm_cache_dir(dir);
  return ok ? ms : -1;
}

static int bench_claims(const char *arch) {
  int c_off = 0, c_on = 0;
  double off = claim_round(arch, "none", &c_off);
  double on = claim_round(arch, "claims", &c_on);
  if (off < 0 || on < 0) {
    fprintf(stderr, "jit (e): a child failed\n");
    return 1;
  }
  printf("(e) %d processes miss the same %d new kernels at once (%ld CPUs):\n", E_PROCS, E_KEYS,
         sysconf(_SC_NPROCESSORS_ONLN));
  printf("    without claims         %9.1f ms (%d NVRTC runs)\n", off, c_off);
  printf("    with per-key claims    %9.1f ms (%d NVRTC runs; target <= %d): %s\n", on, c_on,
         E_KEYS + 2, c_on <= E_KEYS + 2 ? "met" : "NOT met");
  char label[32];
  snprintf(label, sizeof label, "%dx%d", E_PROCS, E_KEYS);
  row("e_claims", label, "wall_without", off, "ms");
  row("e_claims", label, "compiles_without", c_off, "count");
  row("e_claims", label, "wall_with", on, "ms");
  row("e_claims", label, "compiles_with", c_on, "count");
  return 0;
}

static int bench_first_launch(void) {
  char dir[256], out_path[300];
  mkdtemp_in(dir, sizeof dir, "first");
  snprintf(out_path, sizeof out_path, "%s.out", dir);
  /* Fill the cache: a runtime that launches every example once. */
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.cache_dir = dir};
  if (tirx_runtime_create(&o, &rt) != TIRX_OK)
    return 1;
  void *buf = NULL;
  if (tirx_runtime_alloc(rt, BUF_FLOATS * sizeof(float), &buf) != TIRX_OK)
    return 1;
  tirx_runtime_fill32(rt, buf, 0, BUF_FLOATS);
  for (int i = 0; i < example_kernel_count; i++) {
    tirx_kernel *k = example_kernels[i].make();
    kargs a;
    make_args(example_kernels[i].name, buf, &a);
    if (tirx_launch(rt, k, a.a, a.n, NULL) != TIRX_OK) {
      fprintf(stderr, "jit (b): %s: %s\n", example_kernels[i].name, tirx_last_error());
      return 1;
    }
    tirx_kernel_release(k);
  }
  tirx_runtime_synchronize(rt, NULL);
  tirx_runtime_free(rt, buf);
  tirx_runtime_destroy(rt);

  pid_t pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", "jit", "--first-launch-child", dir, out_path, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  FILE *in = fopen(out_path, "r");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !in) {
    fprintf(stderr, "jit (b): the child failed (status 0x%x)\n", status);
    if (in)
      fclose(in);
    rm_cache_dir(dir);
    return 1;
  }
  printf("(b) first launch in a new process whose cache holds the kernels:\n");
  char line[256];
  double total = 0;
  int nk = 0;
  while (fgets(line, sizeof line, in)) {
    char name[64];
    double x = 0, y = 0;
    unsigned long long n = 0;
    if (sscanf(line, "create,%lf", &x) == 1) {
      printf("    runtime creation              %8.3f ms\n", x);
      row("b_first_launch", "runtime", "create", x, "ms");
    } else if (sscanf(line, "compiles,%llu", &n) == 1) {
      printf("    compiles in the new process   %8llu (must be 0)\n", n);
      row("b_first_launch", "all", "compiles", (double)n, "count");
    } else if (sscanf(line, "hits,%llu", &n) == 1) {
      printf("    disk hits in the new process  %8llu\n", n);
      row("b_first_launch", "all", "disk_hits", (double)n, "count");
    } else if (sscanf(line, "queue,%llu", &n) == 1) {
      printf("    compile queue started         %8s (must be no: disk hits load on the caller)\n",
             n ? "yes" : "no");
      row("b_first_launch", "all", "queue_started", (double)n, "bool");
    } else if (sscanf(line, "%63[^,],%lf,%lf", name, &x, &y) == 3) {
      printf("    %-12s build %7.3f ms, first launch + sync %7.3f ms\n", name, x, y);
      row("b_first_launch", name, "build", x, "ms");
      row("b_first_launch", name, "first_launch", y, "ms");
      total += y;
      nk++;
    }
  }
  fclose(in);
  if (nk) {
    printf("    mean first launch per kernel  %8.3f ms (target <= 0.5 ms): %s\n", total / nk,
           total / nk <= 0.5 ? "met" : "NOT met");
    row("b_first_launch", "mean", "first_launch", total / nk, "ms");
  }
  unlink(out_path);
  rm_cache_dir(dir);
  return 0;
}

/* ---- (c) cold compile, by phase ---- */

static int bench_cold_compile(tirx_runtime *rt) {
  char dir[256];
  mkdtemp_in(dir, sizeof dir, "cold");
  tirx__store_options so;
  tirx__store_options_init(&so);
  so.path = dir;
  tirx__store *store = NULL;
  tirx__store_open(&so, &store);
  /* NVRTC's one-time start-up, on its own. */
  tirx__nvrtc_output o;
  double t0 = now_ms();
  tirx_status st = tirx__nvrtc_compile("jit", "warm", "extern \"C\" __global__ void warm() {}\n",
                                       rt->arch, false, &o);
  double init = now_ms() - t0;
  tirx__nvrtc_output_free(&o);
  if (st != TIRX_OK) {
    fprintf(stderr, "jit (c): %s\n", tirx_last_error());
    return 1;
  }
  printf("(c) cold compile for %s (NVRTC %d.%d; first NVRTC call in the process %.1f ms):\n",
         rt->arch, rt->nvrtc_major, rt->nvrtc_minor, init);
  row("c_cold_compile", "nvrtc", "first_call", init, "ms");
  printf("    %-12s %8s %8s %8s %9s %8s %8s %9s\n", "kernel", "build", "variant", "key", "NVRTC",
         "publish", "load", "total");
  void *buf = (void *)(uintptr_t)0x10000;
  for (int i = 0; i < example_kernel_count; i++) {
    const char *name = example_kernels[i].name;
    double a0 = now_ms();
    tirx_kernel *k = example_kernels[i].make(); /* builder, validation, codegen */
    double a1 = now_ms();
    kargs ka;
    make_args(name, buf, &ka);
    static tirx__launch_plan plan;
    if (!k || tirx__kernel_plan(k, "jit", ka.a, ka.n, &plan) != TIRX_OK) {
      fprintf(stderr, "jit (c): %s: %s\n", name, tirx_last_error());
      return 1;
    }
    char *src = NULL;
    tirx__kernel_variant_source(k, plan.nspec, plan.spec, &src);
    double a2 = now_ms();
    tirx__cache_key key;
    tirx__variant_cache_key(rt, k, plan.nspec, plan.spec, &key); /* includes a second source */
    double a3 = now_ms();
    st = tirx__nvrtc_compile("jit", tirx__kernel_entry(k), src, rt->arch, false, &o);
    double a4 = now_ms();
    if (st != TIRX_OK) {
      fprintf(stderr, "jit (c): %s: %s\n", name, tirx_last_error());
      return 1;
    }
    tirx__store_info info = {rt->arch, rt->nvrtc_major, rt->nvrtc_minor};
    tirx__store_put(store, &key, &info, name, strlen(name), o.cubin, o.cubin_size);
    double a5 = now_ms();
    double load = -1;
    if (rt->has_device) {
      CUmodule mod = NULL;
      CUfunction fn = NULL;
      double l0 = now_ms();
      if (tirx__default_loader(rt, NULL, "jit", &key, o.cubin, o.cubin_size,
                               tirx__kernel_entry(k), &mod, &fn) == TIRX_OK) {
        load = now_ms() - l0;
        tirx__ctx_guard g;
        if (tirx__ctx_enter(rt, "jit", &g) == TIRX_OK) {
          rt->drv.ModuleUnload(mod);
          tirx__ctx_leave(rt, &g);
        }
      }
    }
    double total = (a5 - a0) + (load > 0 ? load : 0);
    printf("    %-12s %8.3f %8.3f %8.3f %9.3f %8.3f %8s %9.3f ms\n", name, a1 - a0, a2 - a1,
           a3 - a2, a4 - a3, a5 - a4, load >= 0 ? "" : "n/a", total);
    if (load >= 0)
      printf("    %-12s %55s load %.3f ms\n", "", "", load);
    row("c_cold_compile", name, "build_codegen", a1 - a0, "ms");
    row("c_cold_compile", name, "variant_source", a2 - a1, "ms");
    row("c_cold_compile", name, "cache_key", a3 - a2, "ms");
    row("c_cold_compile", name, "nvrtc", a4 - a3, "ms");
    row("c_cold_compile", name, "disk_publish", a5 - a4, "ms");
    if (load >= 0)
      row("c_cold_compile", name, "module_load", load, "ms");
    row("c_cold_compile", name, "non_nvrtc", total - (a4 - a3), "ms");
    row("c_cold_compile", name, "total", total, "ms");
    tirx__nvrtc_output_free(&o);
    free(src);
    tirx_kernel_release(k);
  }
  tirx__store_close(store);
  rm_cache_dir(dir);
  return 0;
}

/* ---- (d) 64 variants through the queue ---- */

static tirx_kernel *value_kernel(void) {
  tirx_builder *b = tirx_builder_create("bench_scale");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_set_policy(b, n, TIRX_SPECIALIZE_VALUE);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 128)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 128)),
                                           tirx_thread_idx(b, 0)));
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_store(b, x, TIRX_EXPRS(i),
             tirx_add(b, tirx_mul(b, tirx_load(b, x, TIRX_EXPRS(i)), tirx_float(b, 2.0, TIRX_F32)),
                      tirx_float(b, 1.0, TIRX_F32)));
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK)
    fprintf(stderr, "jit (d): %s\n", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* The compile worker program for (d) and (f): $TIRX_COMPILE_WORKER, else the build tree's
 * (beside this program's directory), else NULL (the library's own search). */
static char worker_path[4096];

static void find_worker(const char *argv0) {
  const char *env = getenv("TIRX_COMPILE_WORKER");
  if (env && *env) {
    snprintf(worker_path, sizeof worker_path, "%s", env);
    return;
  }
  char exe[4000];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(exe, sizeof exe, "%s", argv0);
    n = (ssize_t)strlen(exe);
  }
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash)
    return;
  *slash = '\0';
  snprintf(worker_path, sizeof worker_path, "%s/../tirx-compile-worker", exe);
  if (access(worker_path, X_OK) != 0)
    worker_path[0] = '\0';
}

/* workers: 0 for NVRTC in the process, else the pool's size; warm: that many other variants
 * compiled first, untimed (a server's pool that is already running: every worker started and
 * past NVRTC's first call), and left out of *compiles. */
static double run_variants(tirx_kernel *k, unsigned parallel, unsigned workers, int64_t base,
                           int count, uint64_t *compiles, int warm) {
  tirx_runtime_options o = {.size = sizeof o, .compile_only = true, .cache_disabled = true,
                            .max_parallel_compiles = parallel};
  if (workers) {
    o.compile_workers = workers;
    o.compile_worker = worker_path[0] ? worker_path : NULL;
  } else {
    o.compile_in_process = true;
  }
  tirx_runtime *rt = NULL;
  if (tirx_runtime_create(&o, &rt) != TIRX_OK)
    return -1;
  int64_t shapes[128];
  tirx_arg args[128];
  const tirx_arg *lists[128];
  int nargs[128];
  if (warm > 64) warm = 64;
  for (int i = 0; i < count + warm; i++) {
    shapes[i] = i < warm ? base + 500 + i : base + i - warm;
    args[i] = tirx_arg_tensor((void *)(uintptr_t)0x10000, TIRX_F32, 1, &shapes[i], NULL);
    lists[i] = &args[i];
    nargs[i] = 1;
  }
  uint64_t before = 0;
  if (warm) {
    if (tirx_runtime_warmup(rt, k, lists, nargs, warm) != TIRX_OK)
      fprintf(stderr, "jit (d): warm-up: %s\n", tirx_last_error());
    tirx_cache_stats w = {.size = sizeof w};
    tirx_runtime_cache_stats(rt, &w);
    before = w.compiles;
  }
  double t0 = now_ms();
  tirx_status st = tirx_runtime_warmup(rt, k, lists + warm, nargs + warm, count);
  double ms = now_ms() - t0;
  if (st != TIRX_OK)
    fprintf(stderr, "jit (d): %s\n", tirx_last_error());
  tirx_cache_stats s = {.size = sizeof s};
  tirx_runtime_cache_stats(rt, &s);
  *compiles = s.compiles - before;
  if (workers && s.worker_compiles != s.compiles) {
    fprintf(stderr, "jit (d): %llu of %llu compiles ran in workers (%u workers available)\n",
            (unsigned long long)s.worker_compiles, (unsigned long long)s.compiles,
            tirx_runtime_compile_workers(rt));
    st = TIRX_E_INTERNAL;
  }
  tirx_runtime_destroy(rt);
  return st == TIRX_OK ? ms : -1;
}

/* --rounds: how many times (d) runs its three figures, interleaved (medians reported). */
static int rounds = 1;

static int bench_queue(void) {
  enum { V = 64, MAX_ROUNDS = 15 };
  tirx_kernel *k = value_kernel();
  if (!k)
    return 1;
  unsigned pool = 4;
  const char *env = getenv("UV_THREADPOOL_SIZE");
  if (env && atoi(env) > 0)
    pool = (unsigned)atoi(env);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned nw = cpus > 0 ? (unsigned)cpus : 1;
  int R = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
  uint64_t cs = 0, cp = 0, cw = 0, cx = 0;
  run_variants(k, 1, 0, 1000, 2, &cx, 0); /* NVRTC start-up and the pool's threads, untimed */
  double ser[MAX_ROUNDS], par[MAX_ROUNDS], wrk[MAX_ROUNDS], sp_par[MAX_ROUNDS],
      sp_wrk[MAX_ROUNDS], hot[MAX_ROUNDS], sp_hot[MAX_ROUNDS];
  uint64_t ch = 0;
  bool have_workers = true;
  for (int r = 0; r < R; r++) {
    /* Interleaved, so that a load that changes during the run reaches each figure alike. */
    ser[r] = run_variants(k, 1, 0, 1 + 1000 * r, V, &cs, 0);
    par[r] = run_variants(k, pool, 0, 101 + 1000 * r, V, &cp, 0);
    /* Fresh workers: their start-up (exec, libnvrtc, NVRTC's first call) is in the figure. */
    wrk[r] = run_variants(k, nw, nw, 201 + 1000 * r, V, &cw, 0);
    /* A running pool: nw other variants first, untimed, so that every worker is up. */
    hot[r] = run_variants(k, nw, nw, 301 + 1000 * r, V, &ch, (int)nw);
    if (ser[r] < 0 || par[r] < 0) {
      tirx_kernel_release(k);
      return 1;
    }
    have_workers &= wrk[r] >= 0 && hot[r] >= 0;
    sp_par[r] = ser[r] / par[r];
    sp_wrk[r] = ser[r] / wrk[r];
    sp_hot[r] = ser[r] / hot[r];
    if (R > 1)
      printf("    round %d: one at a time %.1f ms, %u threads %.1f ms (%.2fx), %u workers "
             "%.1f ms (%.2fx), running pool %.1f ms (%.2fx)\n",
             r + 1, ser[r], pool, par[r], sp_par[r], nw, wrk[r], sp_wrk[r], hot[r], sp_hot[r]);
  }
  tirx_kernel_release(k);
  double serial = median(ser, R), parallel = median(par, R);
  double s_par = median(sp_par, R);
  double target = 0.8 * (double)nw;
  printf("(d) %d distinct variants warmed up (libuv pool of %u threads, %ld CPUs)%s:\n", V,
         pool, cpus, R > 1 ? ", medians of the rounds" : "");
  printf("    in the process, one at a time   %9.1f ms (%llu compiles, %.1f ms each)\n", serial,
         (unsigned long long)cs, serial / V);
  printf("    in the process, %2u threads      %9.1f ms (%llu compiles): %.2fx\n", pool, parallel,
         (unsigned long long)cp, s_par);
  row("d_queue", "64_variants", "serial", serial, "ms");
  row("d_queue", "64_variants", "parallel", parallel, "ms");
  row("d_queue", "64_variants", "threads", pool, "count");
  row("d_queue", "64_variants", "speedup", s_par, "x");
  row("d_queue", "64_variants", "rounds", R, "count");
  if (!have_workers) {
    printf("    compile workers                 n/a (no tirx-compile-worker: set "
           "TIRX_COMPILE_WORKER)\n");
    row("d_queue", "64_variants", "workers_missing", 1, "flag");
    return 0;
  }
  double workers = median(wrk, R), s_wrk = median(sp_wrk, R);
  printf("    %2u compile workers              %9.1f ms (%llu compiles): %.2fx (target >= "
         "%.1fx): %s\n",
         nw, workers, (unsigned long long)cw, s_wrk, target, s_wrk >= target ? "met" : "NOT met");
  row("d_queue", "64_variants", "workers", workers, "ms");
  row("d_queue", "64_variants", "worker_count", nw, "count");
  row("d_queue", "64_variants", "workers_speedup", s_wrk, "x");
  row("d_queue", "64_variants", "workers_target", target, "x");
  double running = median(hot, R), s_hot = median(sp_hot, R);
  printf("    %2u workers, pool running        %9.1f ms (%llu compiles): %.2fx (started and "
         "past their first compile before the clock)\n",
         nw, running, (unsigned long long)ch, s_hot);
  row("d_queue", "64_variants", "running_pool", running, "ms");
  row("d_queue", "64_variants", "running_pool_speedup", s_hot, "x");
  return 0;
}

/* ---- (g) warm start for a fleet: export, import, first launches in a new process ---- */

enum { G_ENTRIES = 100, G_BASE = 20000 };

/* The new process of (g), on the imported directory: each variant made ready once, timed;
 * writes what it measured to out_path. */
static int bundle_child(const char *dir, const char *out_path) {
  FILE *out = fopen(out_path, "w");
  if (!out)
    return 2;
  double t0 = now_ms();
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.size = sizeof o, .cache_dir = dir};
  if (tirx_runtime_create(&o, &rt) != TIRX_OK) {
    fprintf(stderr, "jit (g) child: %s\n", tirx_last_error());
    fclose(out);
    return 3;
  }
  fprintf(out, "create,%.4f\n", now_ms() - t0);
  bool gpu = tirx_runtime_has_device(rt);
  tirx_kernel *k = value_kernel();
  void *buf = NULL;
  if (!k || (gpu && tirx_runtime_alloc(rt, (G_BASE + G_ENTRIES) * sizeof(float), &buf) != TIRX_OK)) {
    fprintf(stderr, "jit (g) child: %s\n", tirx_last_error());
    fclose(out);
    return 4;
  }
  int rc = 0;
  double total = 0, worst = 0;
  for (int i = 0; i < G_ENTRIES && rc == 0; i++) {
    int64_t shape = G_BASE + i;
    tirx_arg a = tirx_arg_tensor(gpu ? buf : (void *)(uintptr_t)0x10000, TIRX_F32, 1, &shape, NULL);
    double s0 = now_ms();
    tirx_status st;
    if (gpu) {
      st = tirx_launch(rt, k, &a, 1, NULL);
      if (st == TIRX_OK)
        st = tirx_runtime_synchronize(rt, NULL);
    } else {
      const tirx_arg *list = &a;
      int one = 1;
      st = tirx_runtime_warmup(rt, k, &list, &one, 1);
    }
    double ms = now_ms() - s0;
    total += ms;
    if (ms > worst)
      worst = ms;
    if (st != TIRX_OK) {
      fprintf(stderr, "jit (g) child: variant %d: %s\n", i, tirx_last_error());
      rc = 5;
    }
  }
  tirx_cache_stats s = {.size = sizeof s};
  tirx_runtime_cache_stats(rt, &s);
  fprintf(out, "gpu,%d\ntotal,%.4f\nworst,%.4f\ncompiles,%llu\nhits,%llu\n", gpu ? 1 : 0, total,
          worst, (unsigned long long)s.compiles, (unsigned long long)s.hits);
  fclose(out);
  tirx_kernel_release(k);
  if (buf)
    tirx_runtime_free(rt, buf);
  tirx_runtime_destroy(rt);
  return rc;
}

/* Opens the store at dir; NULL (with the error printed) when it cannot be used. */
static tirx__store *open_store(const char *dir) {
  tirx__store_options so;
  tirx__store_options_init(&so);
  so.path = dir;
  tirx__store *st = NULL;
  if (tirx__store_open(&so, &st) != TIRX_OK || !tirx__store_enabled(st)) {
    fprintf(stderr, "jit (g): the cache at %s: %s\n", dir, tirx_last_error());
    tirx__store_close(st);
    return NULL;
  }
  return st;
}

static int bench_bundle(void) {
  char src[256], dst[256], file[300], out_path[300];
  mkdtemp_in(src, sizeof src, "export");
  mkdtemp_in(dst, sizeof dst, "import");
  snprintf(file, sizeof file, "%s.bundle", src);
  snprintf(out_path, sizeof out_path, "%s.out", dst);
  int rc = 1;
  /* The machine that compiled: G_ENTRIES variants into src (in parallel, through the pool). */
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.size = sizeof o, .cache_dir = src,
                            .compile_worker = worker_path[0] ? worker_path : NULL};
  tirx_kernel *k = value_kernel();
  if (!k || tirx_runtime_create(&o, &rt) != TIRX_OK) {
    fprintf(stderr, "jit (g): %s\n", tirx_last_error());
    tirx_kernel_release(k);
    goto done;
  }
  int64_t shapes[G_ENTRIES];
  tirx_arg args[G_ENTRIES];
  const tirx_arg *lists[G_ENTRIES];
  int nargs[G_ENTRIES];
  for (int i = 0; i < G_ENTRIES; i++) {
    shapes[i] = G_BASE + i;
    args[i] = tirx_arg_tensor((void *)(uintptr_t)0x10000, TIRX_F32, 1, &shapes[i], NULL);
    lists[i] = &args[i];
    nargs[i] = 1;
  }
  double t0 = now_ms();
  tirx_status st = tirx_runtime_warmup(rt, k, lists, nargs, G_ENTRIES);
  double fill_ms = now_ms() - t0;
  tirx_cache_stats cs = {.size = sizeof cs};
  tirx_runtime_cache_stats(rt, &cs);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  if (st != TIRX_OK) {
    fprintf(stderr, "jit (g): filling the cache: %s\n", tirx_last_error());
    goto done;
  }
  /* tirx cache export, then import into an empty directory (what the command line tool calls) */
  uint64_t exported = 0, imported = 0;
  tirx__store *s = open_store(src);
  if (!s)
    goto done;
  t0 = now_ms();
  st = tirx__store_export(s, file, &exported);
  double export_ms = now_ms() - t0;
  tirx__store_close(s);
  struct stat fst;
  if (st != TIRX_OK || stat(file, &fst) != 0) {
    fprintf(stderr, "jit (g): export: %s\n", tirx_last_error());
    goto done;
  }
  if (!(s = open_store(dst)))
    goto done;
  t0 = now_ms();
  st = tirx__store_import(s, file, &imported);
  double import_ms = now_ms() - t0;
  tirx__store_close(s);
  if (st != TIRX_OK) {
    fprintf(stderr, "jit (g): import: %s\n", tirx_last_error());
    goto done;
  }
  /* The new machine: a new process on the imported directory. */
  pid_t pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", "jit", "--bundle-child", dst, out_path, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "jit (g): the new process failed (status 0x%x)\n", status);
    goto done;
  }
  FILE *in = fopen(out_path, "r");
  double create = 0, total = 0, worst = 0;
  unsigned long long compiles = ~0ull, hits = 0;
  int gpu = 0;
  if (!in || fscanf(in, "create,%lf\ngpu,%d\ntotal,%lf\nworst,%lf\ncompiles,%llu\nhits,%llu", &create,
                    &gpu, &total, &worst, &compiles, &hits) != 6) {
    fprintf(stderr, "jit (g): the new process's figures are unreadable\n");
    if (in)
      fclose(in);
    goto done;
  }
  fclose(in);
  printf("(g) warm start from a bundle, %d variants:\n", G_ENTRIES);
  printf("    compiled into one cache      %8.1f ms (%llu compiles)\n", fill_ms,
         (unsigned long long)cs.compiles);
  printf("    tirx cache export            %8.1f ms (%llu entries, %lld bytes)\n", export_ms,
         (unsigned long long)exported, (long long)fst.st_size);
  printf("    tirx cache import            %8.1f ms (%llu entries, each checked, into an empty "
         "directory)\n", import_ms, (unsigned long long)imported);
  printf("    new process: runtime         %8.3f ms\n", create);
  printf("    new process: %d %s %8.1f ms (mean %.3f ms, worst %.3f ms)\n", G_ENTRIES,
         gpu ? "first launches + sync" : "warm-ups (no GPU)", total, total / G_ENTRIES, worst);
  printf("    new process: compiles        %8llu (must be 0), disk hits %llu\n", compiles, hits);
  row("g_bundle", "fill", "wall", fill_ms, "ms");
  row("g_bundle", "export", "wall", export_ms, "ms");
  row("g_bundle", "export", "entries", (double)exported, "count");
  row("g_bundle", "export", "bytes", (double)fst.st_size, "bytes");
  row("g_bundle", "import", "wall", import_ms, "ms");
  row("g_bundle", "import", "entries", (double)imported, "count");
  row("g_bundle", "new_process", "create", create, "ms");
  row("g_bundle", "new_process", gpu ? "first_launch_mean" : "warmup_mean", total / G_ENTRIES, "ms");
  row("g_bundle", "new_process", gpu ? "first_launch_worst" : "warmup_worst", worst, "ms");
  row("g_bundle", "new_process", "compiles", (double)compiles, "count");
  rc = exported == G_ENTRIES && imported == G_ENTRIES && compiles == 0 ? 0 : 1;
  if (rc)
    fprintf(stderr, "jit (g): expected %d entries exported and imported and 0 compiles\n",
            G_ENTRIES);
done:
  unlink(file);
  unlink(out_path);
  rm_cache_dir(src);
  rm_cache_dir(dst);
  return rc;
}

/* ---- (f) hot launches under background compiles ---- */

enum { F_THREADS = 8, F_LAUNCHES = 20000, F_SYNC_EVERY = 256 };

typedef struct hot_arg {
  tirx_runtime *rt;
  tirx_kernel *k;
  void *buf;
  double *ns; /* F_LAUNCHES per thread */
  pthread_barrier_t *go;
  int failed;
} hot_arg;

static void *hot_thread(void *p) {
  hot_arg *a = p;
  void *stream = NULL;
  if (tirx_runtime_stream_create(a->rt, &stream) != TIRX_OK) {
    a->failed = 1;
    pthread_barrier_wait(a->go);
    return NULL;
  }
  kargs ka;
  make_args("vector_add", a->buf, &ka);
  pthread_barrier_wait(a->go);
  for (int i = 0; i < F_LAUNCHES; i++) {
    double t0 = now_ms();
    tirx_status st = tirx_launch(a->rt, a->k, ka.a, ka.n, stream);
    a->ns[i] = (now_ms() - t0) * 1e6;
    if (st != TIRX_OK)
      a->failed = 1;
    if (i % F_SYNC_EVERY == F_SYNC_EVERY - 1)
      tirx_runtime_synchronize(a->rt, stream); /* outside the timed calls */
  }
  tirx_runtime_synchronize(a->rt, stream);
  tirx_runtime_stream_destroy(a->rt, stream);
  return NULL;
}

/* One round of F_THREADS threads: p50 and p99 of the calls in ns. */
static int hot_round(tirx_runtime *rt, tirx_kernel *k, void *buf, double *p50, double *p99) {
  size_t total = (size_t)F_THREADS * F_LAUNCHES;
  double *ns = malloc(total * sizeof *ns);
  pthread_t th[F_THREADS];
  hot_arg args[F_THREADS];
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, F_THREADS);
  for (int t = 0; t < F_THREADS; t++) {
    args[t] = (hot_arg){rt, k, buf, ns + (size_t)t * F_LAUNCHES, &go, 0};
    pthread_create(&th[t], NULL, hot_thread, &args[t]);
  }
  int failed = 0;
  for (int t = 0; t < F_THREADS; t++) {
    pthread_join(th[t], NULL);
    failed += args[t].failed;
  }
  pthread_barrier_destroy(&go);
  qsort(ns, total, sizeof *ns, cmp_double);
  *p50 = ns[total / 2];
  *p99 = ns[total * 99 / 100];
  free(ns);
  return failed;
}

/* One runtime's figures; label names where its compiles run. */
static int bench_hot_launch(tirx_runtime *rt, const char *label) {
  tirx_kernel *k = NULL;
  for (int i = 0; i < example_kernel_count; i++)
    if (!strcmp(example_kernels[i].name, "vector_add"))
      k = example_kernels[i].make();
  tirx_kernel *bg = value_kernel();
  void *buf = NULL;
  if (!k || !bg || tirx_runtime_alloc(rt, BUF_FLOATS * sizeof(float), &buf) != TIRX_OK) {
    fprintf(stderr, "jit (f): %s\n", tirx_last_error());
    return 1;
  }
  kargs ka;
  make_args("vector_add", buf, &ka);
  if (tirx_launch(rt, k, ka.a, ka.n, NULL) != TIRX_OK ||
      tirx_runtime_synchronize(rt, NULL) != TIRX_OK) { /* warm */
    fprintf(stderr, "jit (f): %s\n", tirx_last_error());
    return 1;
  }
  double q50, q99, b50, b99;
  int failed = hot_round(rt, k, buf, &q50, &q99);
  enum { V = 64 };
  tirx_future *f[V];
  int64_t shapes[V];
  tirx_arg bargs[V];
  tirx_cache_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
  tirx_runtime_cache_stats(rt, &s0);
  for (int i = 0; i < V; i++) {
    shapes[i] = 5000 + i;
    bargs[i] = tirx_arg_tensor(buf, TIRX_F32, 1, &shapes[i], NULL);
    if (tirx_prepare_async(rt, bg, &bargs[i], 1, &f[i]) != TIRX_OK)
      f[i] = NULL;
  }
  failed += hot_round(rt, k, buf, &b50, &b99);
  int pending = 0;
  for (int i = 0; i < V; i++)
    pending += f[i] && !tirx_future_poll(f[i]);
  for (int i = 0; i < V; i++) {
    if (f[i])
      tirx_future_wait(f[i], -1);
    tirx_future_release(f[i]);
  }
  tirx_runtime_cache_stats(rt, &s1);
  unsigned nw = tirx_runtime_compile_workers(rt);
  char name[64];
  snprintf(name, sizeof name, "%s_%u_workers", label, nw);
  printf("(f) hot tirx_launch, %d threads x %d launches, host time per call, compiles %s "
         "(%u workers):\n",
         F_THREADS, F_LAUNCHES, label, nw);
  printf("    quiet                       p50 %8.0f ns   p99 %8.0f ns\n", q50, q99);
  printf("    during %d compiles          p50 %8.0f ns   p99 %8.0f ns (%d compiles still "
         "running at the end of the round)\n",
         V, b50, b99, pending);
  printf("    p99 ratio                   %8.2fx\n", b99 / q99);
  row("f_hot_launch", name, "quiet_p50", q50, "ns");
  row("f_hot_launch", name, "quiet_p99", q99, "ns");
  row("f_hot_launch", name, "compiling_p50", b50, "ns");
  row("f_hot_launch", name, "compiling_p99", b99, "ns");
  row("f_hot_launch", name, "compiles", (double)(s1.compiles - s0.compiles), "count");
  row("f_hot_launch", name, "still_running_at_end", pending, "count");
  tirx_runtime_free(rt, buf);
  tirx_kernel_release(k);
  tirx_kernel_release(bg);
  return failed ? 1 : 0;
}

int main(int argc, char **argv) {
  /* NVRTC's own cache off unless TIRX_BENCH_NVRTC_CACHE=1 (on a GPU host it answers a repeated
   * compile of one source after the front end alone), for the child processes too. */
  bench_nvrtc_cache_off();
  if (argc == 4 && !strcmp(argv[1], "--first-launch-child"))
    return first_launch_child(argv[2], argv[3]);
  if (argc == 6 && !strcmp(argv[1], "--claim-child"))
    return claim_child(argv[2], argv[3], argv[4], argv[5]);
  if (argc == 4 && !strcmp(argv[1], "--bundle-child"))
    return bundle_child(argv[2], argv[3]);
  const char *csv_path = NULL;
  long launches = 100000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--launches") && i + 1 < argc)
      launches = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (argv[i][0] != '-' && !csv_path)
      csv_path = argv[i];
    else {
      fprintf(stderr, "usage: jit [out.csv] [--launches N] [--only SECTIONS] [--rounds R]\n");
      return 2;
    }
  }
  if (launches < 256)
    launches = 256;
  launches -= launches % 256;
  find_worker(argv[0]);
  /* Before libuv's pool first starts: one thread per CPU (and one for the host) unless the
   * caller chose. */
  if (!getenv("UV_THREADPOOL_SIZE")) {
    char n[32];
    snprintf(n, sizeof n, "%ld", sysconf(_SC_NPROCESSORS_ONLN) + 1);
    setenv("UV_THREADPOOL_SIZE", n, 1);
  }
  if (csv_path) {
    csv = fopen(csv_path, "w");
    if (!csv) {
      fprintf(stderr, "jit: cannot write %s: %s\n", csv_path, strerror(errno));
      return 1;
    }
    fprintf(csv, "section,name,metric,value,unit\n");
  }
  tirx_runtime *rt = NULL;
  char tmp_cache[256];
  mkdtemp_in(tmp_cache, sizeof tmp_cache, "main");
  tirx_runtime_options o = {.size = sizeof o, .cache_dir = tmp_cache,
                            .compile_worker = worker_path[0] ? worker_path : NULL};
  if (tirx_runtime_create(&o, &rt) != TIRX_OK) {
    fprintf(stderr, "jit: %s\n", tirx_last_error());
    return 1;
  }
  int failures = section('0') ? bench_host_path() != 0 : 0;
  if (tirx_runtime_has_device(rt)) {
    printf("jit on %s (%s)\n", tirx_runtime_device_name(rt), tirx_runtime_arch(rt));
    if (section('a'))
      failures += bench_launch(rt, launches) != 0;
    if (section('b'))
      failures += bench_first_launch() != 0;
    if (section('f')) {
      failures += bench_hot_launch(rt, "in_workers") != 0;
      /* The same with NVRTC on the runtime's threads, for the comparison. */
      tirx_runtime *in = NULL;
      char in_cache[256];
      mkdtemp_in(in_cache, sizeof in_cache, "hot");
      tirx_runtime_options io = {.size = sizeof io, .cache_dir = in_cache,
                                 .compile_in_process = true};
      if (tirx_runtime_create(&io, &in) == TIRX_OK) {
        failures += bench_hot_launch(in, "in_process") != 0;
        tirx_runtime_destroy(in);
      } else {
        failures++;
      }
      rm_cache_dir(in_cache);
    }
  } else {
    printf("jit: no GPU (%s): skipping (a) launch overhead, (b) first launch in a new "
           "process and (f) hot launches under compiles\n",
           tirx_runtime_device_error(rt));
    row("a_launch", "skipped", "no_gpu", 1, "flag");
    row("b_first_launch", "skipped", "no_gpu", 1, "flag");
    row("f_hot_launch", "skipped", "no_gpu", 1, "flag");
  }
  if (section('c'))
    failures += bench_cold_compile(rt) != 0;
  if (section('d'))
    failures += bench_queue() != 0;
  if (section('e'))
    failures += bench_claims(rt->arch) != 0;
  if (section('g'))
    failures += bench_bundle() != 0;
  tirx_runtime_destroy(rt);
  rm_cache_dir(tmp_cache);
  if (csv) {
    fclose(csv);
    printf("wrote %s\n", csv_path);
  }
  return failures ? 1 : 0;
}
