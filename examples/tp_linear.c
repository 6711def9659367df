/*
 * tp_linear: a tensor-parallel linear layer Y = X W^T with K split over the ranks (examples/tp.h):
 * each rank multiplies its shards with the builder's Hopper GEMM (examples/gemm.h) into a partial
 * Y_r, and a reduce-scatter chosen from the layouts of Y sums the partials and leaves each rank
 * its block of rows. Every rank checks its rows against a float64 reference of the whole layer
 * on sampled elements (the global X and W are generated from one seed on every rank).
 *
 *   tp_linear [--m M] [--n N] [--k K] [--dtype bf16|f16] [--samples S]
 *             [--rank R --size P (--id-file PATH | --id HEX)] [--device D]
 *   tp_linear --print-id
 *
 * Defaults: world size 1 (one process, ncclCommInitRank with nranks = 1), the down projection of
 * LLaMA-3.1-8B at M = 2048: N = 4096, K = 14336, bf16. Without a GPU or NCCL it prints the
 * layouts and the chosen collective, says why it cannot run, and exits 0.
 *
 * Several processes (one GPU each): start P copies with the same PATH, rank 0 .. P-1.
 * Rank 0 writes the NCCL unique id to PATH (through a temporary file and a rename), the others
 * wait for it (2 minutes at most); rank 0 removes PATH once the communicator is up. Remove a
 * stale PATH of a crashed run first. Rank r uses device r unless --device or LOCAL_RANK says
 * otherwise. Instead of the file, a launcher may hand every rank the id itself: --print-id
 * prints a fresh one as 256 hex digits, and --id HEX (or TIRX_TP_ID) takes it. Every option also
 * comes from the environment: TIRX_TP_RANK, TIRX_TP_SIZE, TIRX_TP_ID_FILE, TIRX_TP_ID,
 * TIRX_TP_DEVICE, and torchrun's RANK, WORLD_SIZE, LOCAL_RANK. For example, two GPUs of one host:
 *
 *   rm -f /tmp/tp.id
 *   for r in 0 1; do ./build/examples/tp_linear --rank $r --size 2 --id-file /tmp/tp.id & done
 *   wait
 *
 * or, with the id in the environment:
 *
 *   export TIRX_TP_ID=$(./build/examples/tp_linear --print-id) TIRX_TP_SIZE=2
 *   for r in 0 1; do TIRX_TP_RANK=$r ./build/examples/tp_linear & done; wait
 *
 * TIRX_SEED fixes the inputs (every rank must see the same value); without it the seed is drawn
 * from the NCCL unique id, which every rank shares.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_ref.h"

typedef struct options {
  int64_t m, n, k;
  tirx_dtype dtype;
  int samples, rank, size, device;
  const char *id_file, *id_hex;
  bool print_id;
} options;

static const char *env2(const char *a, const char *b) {
  const char *v = getenv(a);
  if (!v || !*v) v = b ? getenv(b) : NULL;
  return v && *v ? v : NULL;
}

static bool parse_int(const char *text, const char *what, int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) {
    fprintf(stderr, "tp_linear: %s is '%s', expected an integer in [%lld, %lld]\n", what, text,
            (long long)lo, (long long)hi);
    return false;
  }
  *out = v;
  return true;
}

static bool parse_options(int argc, char **argv, options *o) {
  *o = (options){.m = 2048, .n = 4096, .k = 14336, .dtype = TIRX_BF16, .samples = 512,
                 .rank = 0, .size = 1, .device = -1};
  int64_t v = 0;
  const char *e;
  if ((e = env2("TIRX_TP_RANK", "RANK")) && !parse_int(e, "the rank (environment)", 0, 65535, &v))
    return false;
  else if (e) o->rank = (int)v;
  if ((e = env2("TIRX_TP_SIZE", "WORLD_SIZE")) &&
      !parse_int(e, "the world size (environment)", 1, TIRX_DIST_MAX_RANKS, &v))
    return false;
  else if (e) o->size = (int)v;
  if ((e = env2("TIRX_TP_DEVICE", "LOCAL_RANK")) &&
      !parse_int(e, "the device (environment)", 0, 1023, &v))
    return false;
  else if (e) o->device = (int)v;
  o->id_file = env2("TIRX_TP_ID_FILE", NULL);
  o->id_hex = env2("TIRX_TP_ID", NULL);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("usage: tp_linear [--m M] [--n N] [--k K] [--dtype bf16|f16] [--samples S]\n"
             "                 [--rank R --size P (--id-file PATH | --id HEX)] [--device D]\n"
             "       tp_linear --print-id\n");
      exit(0);
    }
    if (strcmp(a, "--print-id") == 0) {
      o->print_id = true;
      continue;
    }
    if (!val) {
      fprintf(stderr, "tp_linear: %s: expected an option with a value (--help)\n", a);
      return false;
    }
    i++;
    bool ok = true;
    if (strcmp(a, "--m") == 0) ok = parse_int(val, a, 1, INT32_MAX, &o->m);
    else if (strcmp(a, "--n") == 0) ok = parse_int(val, a, 1, INT32_MAX, &o->n);
    else if (strcmp(a, "--k") == 0) ok = parse_int(val, a, 1, INT32_MAX, &o->k);
    else if (strcmp(a, "--samples") == 0)
      ok = parse_int(val, a, 0, 1 << 20, &v), o->samples = (int)v;
    else if (strcmp(a, "--rank") == 0) ok = parse_int(val, a, 0, 65535, &v), o->rank = (int)v;
    else if (strcmp(a, "--size") == 0)
      ok = parse_int(val, a, 1, TIRX_DIST_MAX_RANKS, &v), o->size = (int)v;
    else if (strcmp(a, "--device") == 0) ok = parse_int(val, a, 0, 1023, &v), o->device = (int)v;
    else if (strcmp(a, "--id-file") == 0) o->id_file = val;
    else if (strcmp(a, "--id") == 0) o->id_hex = val;
    else if (strcmp(a, "--dtype") == 0 && strcmp(val, "bf16") == 0) o->dtype = TIRX_BF16;
    else if (strcmp(a, "--dtype") == 0 && strcmp(val, "f16") == 0) o->dtype = TIRX_F16;
    else {
      fprintf(stderr, "tp_linear: %s %s: unknown option or value (--help)\n", a, val);
      return false;
    }
    if (!ok) return false;
  }
  if (o->rank >= o->size) {
    fprintf(stderr, "tp_linear: rank %d is outside [0, %d)\n", o->rank, o->size);
    return false;
  }
  if (o->size > 1 && !o->id_file && !o->id_hex) {
    fprintf(stderr, "tp_linear: a world of %d ranks needs --id-file PATH (TIRX_TP_ID_FILE) or "
                    "--id HEX (TIRX_TP_ID) to pass the NCCL unique id to every rank\n",
            o->size);
    return false;
  }
  if (o->device < 0) o->device = o->size > 1 ? o->rank : 0;
  return true;
}

/* 256 hex digits into id. */
static bool id_from_hex(const char *hex, tirx_comm_id *id) {
  if (strlen(hex) != 2 * sizeof id->bytes) {
    fprintf(stderr, "tp_linear: the id has %zu characters, expected %zu hex digits\n",
            strlen(hex), 2 * sizeof id->bytes);
    return false;
  }
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < 2 * sizeof id->bytes; i++) {
    const char *d = strchr(digits, tolower((unsigned char)hex[i]));
    if (!d || !*d) {
      fprintf(stderr, "tp_linear: the id's character %zu is not a hex digit\n", i);
      return false;
    }
    unsigned v = (unsigned)(d - digits);
    id->bytes[i / 2] = (unsigned char)(i % 2 ? (id->bytes[i / 2] << 4) | v : v);
  }
  return true;
}

/* The id given (--id), or rank 0 publishes a new one in the id file (written to a temporary
 * file and renamed) and the others wait for it. */
static bool exchange_id(const options *o, tirx_comm_id *id) {
  if (o->id_hex) return id_from_hex(o->id_hex, id);
  if (o->size == 1) return tirx_comm_id_generate(NULL, id) == TIRX_OK;
  if (o->rank == 0) {
    if (tirx_comm_id_generate(NULL, id) != TIRX_OK) return false;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", o->id_file, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(id->bytes, 1, sizeof id->bytes, f) == sizeof id->bytes;
    if (f && fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, o->id_file) != 0) {
      fprintf(stderr, "tp_linear: cannot write %s: %s\n", o->id_file, strerror(errno));
      remove(tmp);
      return false;
    }
    return true;
  }
  for (int waited_ms = 0; waited_ms < 120000; waited_ms += 10) {
    FILE *f = fopen(o->id_file, "rb");
    if (f) {
      size_t got = fread(id->bytes, 1, sizeof id->bytes, f);
      fclose(f);
      if (got == sizeof id->bytes) return true;
    }
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  fprintf(stderr, "tp_linear: rank %d: no id in %s after 2 minutes (is rank 0 running?)\n",
          o->rank, o->id_file);
  return false;
}

static void print_dtensor(const char *name, const tirx_dtensor *t) {
  char *s = tirx_dtensor_str(t);
  int64_t shape[2], strides[2];
  tirx_dtensor_local_shape(t, shape, strides, 2);
  printf("  %-3s %s\n      local part (%lld,%lld) strides (%lld,%lld)\n", name, s ? s : "?",
         (long long)shape[0], (long long)shape[1], (long long)strides[0], (long long)strides[1]);
  free(s);
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != TIRX_OK) {                                                                       \
      fprintf(stderr, "tp_linear: rank %d: %s failed: %s\n", o.rank, #call, tirx_last_error());   \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  options o;
  if (!parse_options(argc, argv, &o)) return 2;
  tirx_comm_id given;
  if (o.id_hex && !id_from_hex(o.id_hex, &given)) return 2;
  if (o.print_id) {
    tirx_comm_id id;
    if (tirx_comm_id_generate(NULL, &id) != TIRX_OK) {
      fprintf(stderr, "tp_linear: %s\n", tirx_last_error());
      return 1;
    }
    for (size_t i = 0; i < sizeof id.bytes; i++) printf("%02x", id.bytes[i]);
    printf("\n");
    return 0;
  }
  tirx_tp_spec spec = {.dtype = o.dtype, .m = o.m, .n = o.n, .k = o.k, .nranks = o.size};
  tirx_tp_linear t;
  if (tirx_kernels_tp_linear_create(&spec, &t) != TIRX_OK) {
    fprintf(stderr, "tp_linear: %s\n", tirx_last_error());
    return 2;
  }
  bool talk = o.rank == 0;
  if (talk) {
    printf("tensor-parallel linear Y = X W^T, %s, M=%lld N=%lld K=%lld over %d rank%s\n",
           tirx_dtype_name(o.dtype), (long long)o.m, (long long)o.n, (long long)o.k, o.size,
           o.size == 1 ? "" : "s");
    print_dtensor("X", t.x);
    print_dtensor("W", t.w);
    print_dtensor("Y_r", t.y_partial);
    print_dtensor("Y", t.y);
    printf("  per rank: GEMM %lld x %lld x %lld (tirx_kernels_gemm_build, B = W_r as (%lld,%lld) with "
           "strides (%lld,%lld)), then\n%s",
           (long long)o.m, (long long)o.n, (long long)t.k_local, (long long)t.b_shape[0],
           (long long)t.b_shape[1], (long long)t.b_strides[0], (long long)t.b_strides[1],
           tirx_collective_report(t.reduce));
  }

  int version = 0, status = 1;
  if (tirx_nccl_version(NULL, &version) != TIRX_OK) {
    printf("tp_linear: no NCCL on this machine (%s): nothing to run\n", tirx_last_error());
    tirx_kernels_tp_linear_destroy(&t);
    return 0;
  }
  /* Kernels load before collectives start (tirx/dist.h); the warm-up below does it, and eager
   * module loading keeps the driver from loading anything later. */
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  tirx_runtime *rt = NULL;
  tirx_runtime_options ro = {.device = o.device};
  if (tirx_runtime_create(&ro, &rt) != TIRX_OK) {
    printf("tp_linear: rank %d: no runtime on device %d (%s): nothing to run\n", o.rank, o.device,
           tirx_last_error());
    tirx_kernels_tp_linear_destroy(&t);
    return 0;
  }
  if (!tirx_runtime_has_device(rt)) {
    printf("tp_linear: no GPU on this machine (%s): nothing to run\n",
           tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    tirx_kernels_tp_linear_destroy(&t);
    return 0;
  }

  tirx_comm *comm = NULL;
  tirx_tp_buffers b = {0};
  uint16_t *hx = NULL, *hw = NULL, *hy = NULL;
  tirx_comm_id id;
  if (!exchange_id(&o, &id)) {
    fprintf(stderr, "tp_linear: rank %d: no NCCL unique id: %s\n", o.rank, tirx_last_error());
    goto done;
  }
  tirx_comm_options co = {.timeout_ms = 120000};
  CHECK(tirx_comm_create(rt, &id, o.rank, o.size, &co, &comm));
  if (o.size > 1 && o.rank == 0 && !o.id_hex) remove(o.id_file); /* every rank has joined */
  printf("rank %d of %d on %s (device %d), NCCL %d\n", o.rank, o.size,
         tirx_runtime_device_name(rt), o.device, version);

  uint64_t seed = 0;
  const char *se = getenv("TIRX_SEED");
  if (se && *se) seed = strtoull(se, NULL, 0);
  else
    for (size_t i = 0; i < sizeof id.bytes; i++) seed = seed * 1099511628211ull ^ id.bytes[i];
  if (talk) printf("seed %llu (TIRX_SEED=%llu replays it)\n", (unsigned long long)seed,
                   (unsigned long long)seed);
  size_t nx = (size_t)(o.m * o.k), nw = (size_t)(o.n * o.k);
  hx = malloc(nx * 2), hw = malloc(nw * 2), hy = malloc(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y));
  if (!hx || !hw || !hy) {
    fprintf(stderr, "tp_linear: out of host memory\n");
    goto done;
  }
  uint64_t s = seed;
  tp_random16(o.dtype, hx, nx, &s);
  tp_random16(o.dtype, hw, nw, &s);
  CHECK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_X), &b.x));
  CHECK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_W), &b.w));
  CHECK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y_PARTIAL), &b.y_partial));
  CHECK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y), &b.y));
  CHECK(tp_linear_upload(&t, rt, o.rank, hx, hw, &b));
  /* NaN in both dtypes: an element nobody writes fails the check. */
  CHECK(tirx_runtime_fill32(rt, b.y_partial, 0xffffffffu, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y_PARTIAL) / 4));
  CHECK(tirx_runtime_fill32(rt, b.y, 0xffffffffu, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y) / 4));

  CHECK(tirx_kernels_tp_linear_prepare(&t, rt, &b));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK(tirx_op_tp_linear(rt, &t, comm, &b, NULL));
  CHECK(tirx_comm_synchronize(comm, NULL, -2));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHECK(tirx_runtime_copy(rt, hy, b.y, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y), TIRX_COPY_DEVICE_TO_HOST));
  uint64_t cs = seed ^ (uint64_t)(o.rank + 1) * 0x9e3779b97f4a7c15ull;
  tp_check_result r = tp_linear_check(&t, o.rank, hx, hw, hy, o.samples, &cs);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  printf("rank %d: GEMM %lldx%lldx%lld + reduce_scatter -> rows %lld..%lld in %.3f ms (first "
         "call); %d sampled elements against float64, max rel err %.2e: %s%s\n",
         o.rank, (long long)o.m, (long long)o.n, (long long)t.k_local,
         (long long)(o.rank * t.m_local), (long long)((o.rank + 1) * t.m_local - 1), ms,
         r.samples, r.max_rel_err, r.wrong ? "MISMATCH: " : "all results match", r.first);
  status = r.wrong ? 1 : 0;
done:
  if (b.x) tirx_runtime_free(rt, b.x);
  if (b.w) tirx_runtime_free(rt, b.w);
  if (b.y_partial) tirx_runtime_free(rt, b.y_partial);
  if (b.y) tirx_runtime_free(rt, b.y);
  free(hx), free(hw), free(hy);
  tirx_comm_destroy(comm);
  tirx_runtime_destroy(rt);
  tirx_kernels_tp_linear_destroy(&t);
  return status;
}
