/*
 * bench_dist: the tensor-parallel linear layer of examples/tp.h (the builder's GEMM on K
 * shards, then tirx_collective_run's reduce-scatter) against cuBLAS (cublasGemmEx, dlopen)
 * followed by ncclReduceScatter called directly on a communicator of its own
 * (ncclCommInitRank, dlopen).
 *
 *   bench_dist [out.csv] [reps] [--quick] [--rank R --size P --id-file PATH] [--device D]
 *
 * Shapes: M = 8192 with the (N, K) of LLaMA-3.1-8B and 70B (bench/gemm.c), bf16, K split over
 * the P ranks (world size 1 by default; several processes as for examples/tp_linear: same PATH,
 * ranks 0 .. P-1, rank r on device r unless --device or LOCAL_RANK says otherwise; the
 * environment may give TIRX_TP_RANK, TIRX_TP_SIZE, TIRX_TP_ID_FILE, TIRX_TP_DEVICE, or RANK,
 * WORLD_SIZE, LOCAL_RANK). Each shape: both paths run once on poisoned outputs and are checked
 * on 512 sampled elements of this rank's rows against a float64 reference; then warm-up and
 * `reps` samples of 5 back-to-back forward passes followed by a synchronize, median per pass,
 * for the whole layer and for its two halves (GEMM alone, reduce-scatter alone). Rank 0 prints
 * the table and the geometric mean of the ratio (baseline time / tirx time: above 1, tirx is
 * faster) and writes CSV columns m,n,k,ranks,dtype,tirx_us,base_us,ratio,tirx_gemm_us,
 * cublas_us,tirx_rs_us,nccl_rs_us,tirx_max_rel_err,base_max_rel_err. --quick: the first two
 * shapes. Without a GPU, NCCL or cuBLAS it says so and exits 0.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "tp_ref.h"

static int my_rank;

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != TIRX_OK) {                                                                       \
      fprintf(stderr, "bench_dist: rank %d: %s: %s\n", my_rank, #call, tirx_last_error());       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* ---- cuBLAS, NCCL and the device's primary context, loaded at run time ---- */

typedef int (*cublas_create_fn)(void **);
typedef int (*cublas_destroy_fn)(void *);
typedef int (*cublas_gemm_ex_fn)(void *, int, int, int, int, int, const void *, const void *, int,
                                 int, const void *, int, int, const void *, void *, int, int, int,
                                 int);
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14,
       CUBLAS_COMPUTE_32F = 68, CUBLAS_GEMM_DEFAULT = -1 };
static struct {
  void *lib, *handle;
  cublas_create_fn create;
  cublas_destroy_fn destroy;
  cublas_gemm_ex_fn gemm_ex;
} cublas;

typedef struct nccl_id {
  char internal[TIRX_COMM_ID_BYTES];
} nccl_id;
enum { NCCL_FLOAT16 = 6, NCCL_BFLOAT16 = 9, NCCL_SUM = 0 };
static struct {
  void *lib, *comm;
  int (*init_rank)(void **, int, nccl_id, int);
  int (*reduce_scatter)(const void *, void *, size_t, int, int, void *, void *);
  int (*destroy)(void *);
  const char *(*error_string)(int);
} nccl;

static const char *cublas_load(void) {
  const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  for (int i = 0; i < 3 && !cublas.lib; i++) cublas.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!cublas.lib) return dlerror();
  *(void **)&cublas.create = dlsym(cublas.lib, "cublasCreate_v2");
  *(void **)&cublas.destroy = dlsym(cublas.lib, "cublasDestroy_v2");
  *(void **)&cublas.gemm_ex = dlsym(cublas.lib, "cublasGemmEx");
  if (!cublas.create || !cublas.destroy || !cublas.gemm_ex)
    return "a cuBLAS entry point is missing";
  return cublas.create(&cublas.handle) == 0 ? NULL : "cublasCreate failed";
}

static const char *nccl_load(void) {
  const char *path = getenv("TIRX_NCCL_LIBRARY");
  nccl.lib = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!nccl.lib) return dlerror();
  *(void **)&nccl.init_rank = dlsym(nccl.lib, "ncclCommInitRank");
  *(void **)&nccl.reduce_scatter = dlsym(nccl.lib, "ncclReduceScatter");
  *(void **)&nccl.destroy = dlsym(nccl.lib, "ncclCommDestroy");
  *(void **)&nccl.error_string = dlsym(nccl.lib, "ncclGetErrorString");
  if (!nccl.init_rank || !nccl.reduce_scatter || !nccl.destroy || !nccl.error_string)
    return "an NCCL entry point is missing";
  return NULL;
}

/* Makes the device's primary context (the one tirx's runtime uses) current on this thread, so
 * that cuBLAS and NCCL (through their CUDA runtime) work on that device. */
static const char *device_current(int device) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return dlerror();
  int (*init)(unsigned) = NULL;
  int (*get)(int *, int) = NULL;
  int (*retain)(void **, int) = NULL;
  int (*set)(void *) = NULL;
  *(void **)&init = dlsym(lib, "cuInit");
  *(void **)&get = dlsym(lib, "cuDeviceGet");
  *(void **)&retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void **)&set = dlsym(lib, "cuCtxSetCurrent");
  int dev = 0;
  void *ctx = NULL;
  if (!init || !get || !retain || !set) return "a driver entry point is missing";
  if (init(0) || get(&dev, device) || retain(&ctx, dev) || set(ctx))
    return "the device's primary context cannot be made current";
  return NULL;
}

static void nccl_check(int r, const char *what) {
  if (r != 0) {
    fprintf(stderr, "bench_dist: rank %d: %s: %s\n", my_rank, what, nccl.error_string(r));
    exit(1);
  }
}

/* ---- options and the unique ids ---- */

typedef struct options {
  const char *csv, *id_file;
  int reps, rank, size, device;
  bool quick;
} options;

static int env_int(const char *a, const char *b, int dflt) {
  const char *v = getenv(a);
  if (!v || !*v) v = getenv(b);
  return v && *v ? atoi(v) : dflt;
}

static bool parse_options(int argc, char **argv, options *o) {
  *o = (options){.reps = 9, .device = -1};
  o->rank = env_int("TIRX_TP_RANK", "RANK", 0);
  o->size = env_int("TIRX_TP_SIZE", "WORLD_SIZE", 1);
  o->device = env_int("TIRX_TP_DEVICE", "LOCAL_RANK", -1);
  o->id_file = getenv("TIRX_TP_ID_FILE");
  int positional = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--quick") == 0) o->quick = true;
    else if (strcmp(a, "--rank") == 0 && v) o->rank = atoi(v), i++;
    else if (strcmp(a, "--size") == 0 && v) o->size = atoi(v), i++;
    else if (strcmp(a, "--device") == 0 && v) o->device = atoi(v), i++;
    else if (strcmp(a, "--id-file") == 0 && v) o->id_file = v, i++;
    else if (strncmp(a, "--", 2) != 0 && positional == 0) o->csv = a, positional++;
    else if (strncmp(a, "--", 2) != 0 && positional == 1) o->reps = atoi(a), positional++;
    else {
      fprintf(stderr, "usage: bench_dist [out.csv] [reps] [--quick] [--rank R --size P "
                      "--id-file PATH] [--device D]\n");
      return false;
    }
  }
  if (o->reps < 3) o->reps = 3;
  if (o->size < 1 || o->size > TIRX_DIST_MAX_RANKS || o->rank < 0 || o->rank >= o->size) {
    fprintf(stderr, "bench_dist: rank %d of %d: expected 0 <= rank < size\n", o->rank, o->size);
    return false;
  }
  if (o->size > 1 && (!o->id_file || !*o->id_file)) {
    fprintf(stderr, "bench_dist: %d ranks need --id-file PATH (or TIRX_TP_ID_FILE)\n", o->size);
    return false;
  }
  if (o->device < 0) o->device = o->size > 1 ? o->rank : 0;
  return true;
}

/* Two unique ids (tirx's communicator, the direct one): rank 0 writes them to the id file, the
 * others wait for it. */
static bool exchange_ids(const options *o, tirx_comm_id ids[2]) {
  if (o->rank == 0) {
    CHECK(tirx_comm_id_generate(NULL, &ids[0]));
    CHECK(tirx_comm_id_generate(NULL, &ids[1]));
    if (o->size == 1) return true;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", o->id_file, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(ids, sizeof ids[0], 2, f) == 2;
    if (f && fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, o->id_file) != 0) {
      fprintf(stderr, "bench_dist: cannot write %s: %s\n", o->id_file, strerror(errno));
      remove(tmp);
      return false;
    }
    return true;
  }
  for (int waited_ms = 0; waited_ms < 120000; waited_ms += 10) {
    FILE *f = fopen(o->id_file, "rb");
    if (f) {
      size_t got = fread(ids, sizeof ids[0], 2, f);
      fclose(f);
      if (got == 2) return true;
    }
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  fprintf(stderr, "bench_dist: rank %d: no ids in %s after 2 minutes\n", o->rank, o->id_file);
  return false;
}

/* ---- the two paths ---- */

typedef struct bench_ctx {
  const tirx_tp_linear *t;
  tirx_runtime *rt;
  tirx_comm *comm;
  tirx_tp_buffers b;
} bench_ctx;

enum { WHOLE = 0, GEMM_ONLY = 1, RS_ONLY = 2 };

static void tirx_pass(const bench_ctx *c, int part) {
  if (part == WHOLE) {
    CHECK(tirx_op_tp_linear(c->rt, c->t, c->comm, &c->b, NULL));
  } else if (part == GEMM_ONLY) {
    tirx_arg args[6];
    tirx_kernels_tp_linear_gemm_args(c->t, &c->b, args);
    CHECK(tirx_launch(c->rt, c->t->gemm, args, 6, NULL));
  } else {
    const tirx_tp_linear *t = c->t;
    tirx_tensor_arg yp = {c->b.y_partial, t->spec.dtype, 2, t->yp_shape, t->yp_strides};
    tirx_tensor_arg y = {c->b.y, t->spec.dtype, 2, t->y_shape, t->y_strides};
    CHECK(tirx_collective_run(t->reduce, c->comm, &yp, &y, NULL));
  }
}

/* cuBLAS on the shards (C^T = B A^T in its column-major terms), then ncclReduceScatter. */
static void base_pass(const bench_ctx *c, int part) {
  const tirx_tp_linear *t = c->t;
  const int dt = t->spec.dtype == TIRX_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  if (part != RS_ONLY) {
    float one = 1.0f, zero = 0.0f;
    int r = cublas.gemm_ex(cublas.handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)t->spec.n,
                           (int)t->spec.m, (int)t->k_local, &one, c->b.w, dt, (int)t->ldw,
                           c->b.x, dt, (int)t->ldx, &zero, c->b.y_partial, dt, (int)t->spec.n,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (r != 0) {
      fprintf(stderr, "bench_dist: rank %d: cublasGemmEx: status %d\n", my_rank, r);
      exit(1);
    }
  }
  if (part != GEMM_ONLY)
    nccl_check(nccl.reduce_scatter(c->b.y_partial, c->b.y, (size_t)(t->m_local * t->spec.n),
                                   t->spec.dtype == TIRX_BF16 ? NCCL_BFLOAT16 : NCCL_FLOAT16,
                                   NCCL_SUM, nccl.comm, NULL),
               "ncclReduceScatter");
}

static void sync_all(const bench_ctx *c, bool tirx_side) {
  if (tirx_side) CHECK(tirx_comm_synchronize(c->comm, NULL, -2));
  else CHECK(tirx_runtime_synchronize(c->rt, NULL));
}

/* Median microseconds per pass over reps samples of 5 passes. */
static double time_pass(const bench_ctx *c, bool tirx_side, int part, int reps) {
  void (*pass)(const bench_ctx *, int) = tirx_side ? tirx_pass : base_pass;
  for (int i = 0; i < 3; i++) pass(c, part);
  sync_all(c, tirx_side);
  double *t = malloc((size_t)reps * sizeof *t);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < 5; i++) pass(c, part);
    sync_all(c, tirx_side);
    t[r] = (now_us() - t0) / 5;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  double us = t[reps / 2];
  free(t);
  return us;
}

/* One pass of a path on poisoned outputs, then this rank's rows against float64. */
static tp_check_result verify(const bench_ctx *c, bool tirx_side, const uint16_t *hx,
                              const uint16_t *hw, uint16_t *hy, uint64_t seed) {
  const tirx_tp_linear *t = c->t;
  CHECK(tirx_runtime_fill32(c->rt, c->b.y_partial, 0xffffffffu,
                            tirx_kernels_tp_linear_bytes(t, TIRX_TP_BUFFER_Y_PARTIAL) / 4));
  CHECK(tirx_runtime_fill32(c->rt, c->b.y, 0xffffffffu, tirx_kernels_tp_linear_bytes(t, TIRX_TP_BUFFER_Y) / 4));
  (tirx_side ? tirx_pass : base_pass)(c, WHOLE);
  sync_all(c, tirx_side);
  CHECK(tirx_runtime_copy(c->rt, hy, c->b.y, tirx_kernels_tp_linear_bytes(t, TIRX_TP_BUFFER_Y), TIRX_COPY_DEVICE_TO_HOST));
  return tp_linear_check(t, c->comm ? tirx_comm_rank(c->comm) : 0, hx, hw, hy, 512, &seed);
}

int main(int argc, char **argv) {
  options o;
  if (!parse_options(argc, argv, &o)) return 2;
  my_rank = o.rank;
  bool talk = o.rank == 0;
  int version = 0;
  const char *why = NULL;
  if (tirx_nccl_version(NULL, &version) != TIRX_OK) {
    printf("bench_dist: no NCCL (%s): nothing measured\n", tirx_last_error());
    return 0;
  }
  if ((why = nccl_load())) {
    printf("bench_dist: NCCL cannot be called directly (%s): nothing measured\n", why);
    return 0;
  }
  setenv("CUDA_MODULE_LOADING", "EAGER", 0); /* tirx/dist.h: no module loads next to NCCL */
  setenv("NCCL_NVLS_ENABLE", "0", 0);        /* the direct communicator too */
  tirx_runtime *rt = NULL;
  tirx_runtime_options ro = {.device = o.device};
  if (tirx_runtime_create(&ro, &rt) != TIRX_OK) {
    printf("bench_dist: no runtime on device %d (%s): nothing measured\n", o.device,
           tirx_last_error());
    return 0;
  }
  if (!tirx_runtime_has_device(rt)) {
    printf("bench_dist: no CUDA device (%s): nothing measured\n", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    return 0;
  }
  if ((why = device_current(o.device)) || (why = cublas_load())) {
    printf("bench_dist: cuBLAS cannot run (%s): nothing measured\n", why);
    tirx_runtime_destroy(rt);
    return 0;
  }
  tirx_comm_id ids[2];
  if (!exchange_ids(&o, ids)) return 1;
  tirx_comm *comm = NULL;
  tirx_comm_options co = {.timeout_ms = 300000};
  CHECK(tirx_comm_create(rt, &ids[0], o.rank, o.size, &co, &comm));
  nccl_id raw;
  memcpy(raw.internal, ids[1].bytes, sizeof raw.internal);
  nccl_check(nccl.init_rank(&nccl.comm, o.size, raw, o.rank), "ncclCommInitRank");
  if (o.size > 1 && talk) remove(o.id_file); /* every rank has joined both communicators */

  const char *se = getenv("TIRX_SEED");
  uint64_t seed = se && *se ? strtoull(se, NULL, 0) : 0;
  for (size_t i = 0; !(se && *se) && i < sizeof ids[0].bytes; i++)
    seed = seed * 1099511628211ull ^ ids[0].bytes[i]; /* the same on every rank */
  FILE *f = talk && o.csv ? fopen(o.csv, "w") : NULL;
  if (f)
    fprintf(f, "m,n,k,ranks,dtype,tirx_us,base_us,ratio,tirx_gemm_us,cublas_us,tirx_rs_us,"
               "nccl_rs_us,tirx_max_rel_err,base_max_rel_err\n");
  if (talk) {
    printf("bench_dist: %d rank%s, %s, NCCL %d, seed %llu (TIRX_SEED replays it)\n", o.size,
           o.size == 1 ? "" : "s", tirx_runtime_device_name(rt), version,
           (unsigned long long)seed);
    printf("%5s %6s %6s %9s %9s %6s %9s %9s %8s %8s %9s %9s\n", "M", "N", "K", "tirx_us",
           "base_us", "ratio", "tirx_gemm", "cublas", "tirx_rs", "nccl_rs", "tirx_err",
           "base_err");
  }

  static const int64_t nk[8][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336},
                                   {10240, 8192}, {8192, 8192}, {57344, 8192}, {8192, 28672}};
  const int64_t M = 8192;
  const tirx_dtype dt = TIRX_BF16;
  double lg = 0, worst = 1e9;
  int counted = 0, failures = 0;
  for (int s = 0; s < (o.quick ? 2 : 8); s++) {
    const int64_t N = nk[s][0], K = nk[s][1];
    tirx_tp_spec spec = {.dtype = dt, .m = M, .n = N, .k = K, .nranks = o.size};
    tirx_tp_linear t;
    if (tirx_kernels_tp_linear_create(&spec, &t) != TIRX_OK) {
      fprintf(stderr, "bench_dist: %lldx%lldx%lld: %s\n", (long long)M, (long long)N,
              (long long)K, tirx_last_error());
      failures++;
      continue;
    }
    bench_ctx c = {.t = &t, .rt = rt, .comm = comm};
    CHECK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_X), &c.b.x));
    CHECK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_W), &c.b.w));
    CHECK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y_PARTIAL), &c.b.y_partial));
    CHECK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y), &c.b.y));
    size_t nx = (size_t)(M * K), nw = (size_t)(N * K);
    uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2), *hy = malloc(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y));
    if (!hx || !hw || !hy) {
      fprintf(stderr, "bench_dist: out of host memory\n");
      return 1;
    }
    uint64_t ds = seed + (uint64_t)s;
    tp_random16(dt, hx, nx, &ds);
    tp_random16(dt, hw, nw, &ds);
    CHECK(tp_linear_upload(&t, rt, o.rank, hx, hw, &c.b));
    CHECK(tirx_kernels_tp_linear_prepare(&t, rt, &c.b));
    tp_check_result rt_res = verify(&c, true, hx, hw, hy, seed ^ 0x51ull);
    tp_check_result rb_res = verify(&c, false, hx, hw, hy, seed ^ 0x52ull);
    if (rt_res.wrong)
      fprintf(stderr, "bench_dist: rank %d: tirx %lldx%lldx%lld WRONG: %d of %d, first %s\n",
              o.rank, (long long)M, (long long)N, (long long)K, rt_res.wrong, rt_res.samples,
              rt_res.first);
    if (rb_res.wrong)
      fprintf(stderr, "bench_dist: rank %d: cuBLAS+NCCL %lldx%lldx%lld WRONG: %d of %d, first %s\n",
              o.rank, (long long)M, (long long)N, (long long)K, rb_res.wrong, rb_res.samples,
              rb_res.first);
    failures += (rt_res.wrong != 0) + (rb_res.wrong != 0);
    double tus = time_pass(&c, true, WHOLE, o.reps), bus = time_pass(&c, false, WHOLE, o.reps);
    double tg = time_pass(&c, true, GEMM_ONLY, o.reps);
    double bg = time_pass(&c, false, GEMM_ONLY, o.reps);
    double tr = time_pass(&c, true, RS_ONLY, o.reps), br = time_pass(&c, false, RS_ONLY, o.reps);
    double ratio = bus / tus;
    lg += log(ratio), counted++;
    if (ratio < worst) worst = ratio;
    if (talk) {
      printf("%5lld %6lld %6lld %9.1f %9.1f %6.3f %9.1f %9.1f %8.1f %8.1f %9.2e %9.2e%s\n",
             (long long)M, (long long)N, (long long)K, tus, bus, ratio, tg, bg, tr, br,
             rt_res.max_rel_err, rb_res.max_rel_err, rt_res.wrong ? "  WRONG" : "");
      fflush(stdout);
    }
    if (f)
      fprintf(f, "%lld,%lld,%lld,%d,bf16,%.2f,%.2f,%.4f,%.2f,%.2f,%.2f,%.2f,%.3e,%.3e\n",
              (long long)M, (long long)N, (long long)K, o.size, tus, bus, ratio, tg, bg, tr, br,
              rt_res.max_rel_err, rb_res.max_rel_err);
    free(hx), free(hw), free(hy);
    tirx_runtime_free(rt, c.b.x), tirx_runtime_free(rt, c.b.w);
    tirx_runtime_free(rt, c.b.y_partial), tirx_runtime_free(rt, c.b.y);
    tirx_kernels_tp_linear_destroy(&t);
  }
  if (talk && counted)
    printf("geomean ratio (cuBLAS + NCCL time / tirx time), M=8192 bf16 over %d rank%s: %.3f "
           "(lowest %.3f, %d shapes)\n",
           o.size, o.size == 1 ? "" : "s", exp(lg / counted), worst, counted);
  if (talk) printf("wrong results: %d\n", failures);
  if (f) fclose(f);
  nccl.destroy(nccl.comm);
  tirx_comm_destroy(comm);
  cublas.destroy(cublas.handle);
  tirx_runtime_destroy(rt);
  return failures ? 1 : 0;
}
