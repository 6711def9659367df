/* The compile worker pool (src/jit/workers.c), its program (worker_main.c) and frames
 * (worker_proto.c): the bytes and messages of a compile in a worker are those of NVRTC in the
 * process; a worker killed during a compile costs one retry, two deaths give a clear error and
 * the runtime goes on; a missing or foreign program means NVRTC in the process; destroy with
 * compiles in flight leaves no process behind; bad options, frames and requests are refused; a
 * worker keeps its heap between compiles and gives it back when idle; a frame larger than the
 * stream's buffer goes out whole. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "../helpers.h"
#include "demo_kernels.h"
#include "jit/jit.h"
#include "jit/worker_proto.h"
#include "jit/workers.h"

TestSuite(workers, .timeout = 240);

#ifndef TIRX_TEST_WORKER
#error "TIRX_TEST_WORKER names the build tree's tirx-compile-worker (tests/unit/meson.build)"
#endif

#define FAKE_PTR ((void *)(uintptr_t)0x10000)

static tirx_runtime *runtime(bool workers, unsigned count) {
  tirx_runtime_options o = {.size = sizeof o, .compile_only = true, .cache_disabled = true};
  if (workers) {
    o.compile_worker = TIRX_TEST_WORKER;
    o.compile_workers = count;
  } else {
    o.compile_in_process = true;
  }
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static tirx_cache_stats stats(tirx_runtime *rt) {
  tirx_cache_stats s = {.size = sizeof s};
  cr_assert_eq(tirx_runtime_cache_stats(rt, &s), TIRX_OK, "%s", tirx_last_error());
  return s;
}

static tirx_kernel *raw_kernel(const char *name, const char *source) {
  tirx_builder *b = tirx_builder_create(name);
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_set_policy(b, n, TIRX_SPECIALIZE_VALUE);
  tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 64)), NULL, NULL);
  tirx_set_source(b, source);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static const char scale_source[] =
    "extern \"C\" __global__ void wk_scale(long long n, float *x) {\n"
    "  long long i = blockIdx.x * 64ll + threadIdx.x;\n"
    "#ifdef TIRX_SPEC_n\n"
    "  if (i < TIRX_SPEC_n) x[i] *= 2.0f;\n"
    "#else\n"
    "  if (i < n) x[i] *= 2.0f;\n"
    "#endif\n"
    "}\n";

/* ---- the same bytes as in the process ---- */

Test(workers, compiles_give_the_bytes_and_logs_of_nvrtc_in_the_process) {
  tirx_runtime *in = runtime(false, 0), *wk = runtime(true, 2);
  cr_assert_eq(tirx_runtime_compile_workers(in), 0);
  cr_assert_eq(tirx_runtime_compile_workers(wk), 2);
  static const char *const archs[] = {"sm_90a", "sm_80"};
  int n = 0;
  for (int i = 0; i < example_kernel_count; i++) {
    tirx_kernel *k = example_kernels[i].make();
    cr_assert_not_null(k, "%s", tirx_last_error());
    for (int a = 0; a < 2; a++, n++) {
      tirx_compiled *c1 = NULL, *c2 = NULL;
      cr_assert_eq(tirx_compile(in, k, archs[a], &c1), TIRX_OK, "%s", tirx_last_error());
      cr_assert_eq(tirx_compile(wk, k, archs[a], &c2), TIRX_OK, "%s", tirx_last_error());
      size_t s1 = 0, s2 = 0;
      const void *b1 = tirx_compiled_cubin(c1, &s1), *b2 = tirx_compiled_cubin(c2, &s2);
      cr_assert(s1 > 64 && s1 == s2 && memcmp(b1, b2, s1) == 0, "%s for %s: cubins differ",
                example_kernels[i].name, archs[a]);
      cr_assert_str_eq(tirx_compiled_ptx(c1), tirx_compiled_ptx(c2));
      cr_assert_str_eq(tirx_compiled_log(c1), tirx_compiled_log(c2));
      tirx_compiled_destroy(c1);
      tirx_compiled_destroy(c2);
    }
    tirx_kernel_release(k);
  }
  cr_assert_eq(stats(wk).worker_compiles, (uint64_t)n);
  cr_assert_eq(stats(in).worker_compiles, 0);
  tirx_runtime_destroy(in);
  tirx_runtime_destroy(wk);
}

/* Images the loader sees, by call order. */
typedef struct images {
  pthread_mutex_t mu;
  int n;
  tirx__cache_key keys[16];
  void *bytes[16];
  size_t sizes[16];
} images;

static tirx_status capture_load(tirx_runtime *rt, void *user, const char *fn,
                                const tirx__cache_key *key, const void *image, size_t size,
                                const char *entry, CUmodule *module, CUfunction *function) {
  (void)rt, (void)fn, (void)entry;
  images *im = user;
  pthread_mutex_lock(&im->mu);
  int i = im->n < 16 ? im->n++ : 15;
  im->keys[i] = *key;
  im->bytes[i] = malloc(size);
  memcpy(im->bytes[i], image, size);
  im->sizes[i] = size;
  pthread_mutex_unlock(&im->mu);
  *module = (CUmodule)(uintptr_t)(0x1000 + 16 * i);
  *function = (CUfunction)(uintptr_t)(0x2000 + 16 * i);
  return TIRX_OK;
}

/* The variants a launch prepares: one cache key and one image per variant on both paths. */
static void prepare_variants(tirx_runtime *rt, images *im, const tirx_kernel *k) {
  pthread_mutex_init(&im->mu, NULL);
  tirx__runtime_set_loader(rt, capture_load, im);
  for (int64_t n = 64; n <= 64 * 4; n += 64) {
    int64_t shape[1] = {n};
    tirx_arg a = tirx_arg_tensor(FAKE_PTR, TIRX_F32, 1, shape, NULL);
    tirx_future *f = NULL;
    cr_assert_eq(tirx_prepare_async(rt, k, &a, 1, &f), TIRX_OK, "%s", tirx_last_error());
    cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK, "%s", tirx_last_error());
    tirx_future_release(f);
  }
}

Test(workers, variants_have_the_keys_and_images_of_the_in_process_path) {
  tirx_kernel *k = raw_kernel("wk_scale", scale_source);
  tirx_runtime *in = runtime(false, 0), *wk = runtime(true, 2);
  images a = {0}, b = {0};
  prepare_variants(in, &a, k);
  prepare_variants(wk, &b, k);
  cr_assert_eq(a.n, 4);
  cr_assert_eq(b.n, 4);
  for (int i = 0; i < 4; i++) {
    cr_assert(tirx__cache_key_equal(&a.keys[i], &b.keys[i]), "variant %d: keys differ", i);
    cr_assert(a.sizes[i] == b.sizes[i] && memcmp(a.bytes[i], b.bytes[i], a.sizes[i]) == 0,
              "variant %d: images differ", i);
    free(a.bytes[i]);
    free(b.bytes[i]);
  }
  cr_assert_eq(stats(wk).worker_compiles, 4);
  cr_assert_eq(stats(in).worker_compiles, 0);
  tirx_runtime_destroy(in);
  tirx_runtime_destroy(wk);
  tirx_kernel_release(k);
}

Test(workers, a_compile_error_reads_as_in_the_process) {
  tirx_kernel *k = raw_kernel("wk_broken",
                              "extern \"C\" __global__ void wk_broken(long long n, float *x) {\n"
                              "  x[0] = undeclared_thing;\n"
                              "}\n");
  tirx_runtime *in = runtime(false, 0), *wk = runtime(true, 1);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(in, k, NULL, &c), TIRX_E_COMPILE);
  char *expected = strdup(tirx_last_error());
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_E_COMPILE);
  cr_assert_str_eq(tirx_last_error(), expected);
  cr_assert_not_null(strstr(expected, "  > 2 |   x[0] = undeclared_thing;"), "%s", expected);
  cr_assert_eq(stats(wk).worker_compiles, 1);
  free(expected);
  tirx_runtime_destroy(in);
  tirx_runtime_destroy(wk);
  tirx_kernel_release(k);
}

/* ---- workers killed during a compile ---- */

typedef struct killer {
  int kill_attempts; /* kill the worker on attempts below this */
  int killed[2];
  int calls;
} killer;

static void kill_hook(void *user, int pid, int attempt) {
  killer *kl = user;
  kl->calls++;
  if (attempt < kl->kill_attempts) {
    kl->killed[attempt] = pid;
    usleep(20000); /* the worker has read the request and is inside NVRTC */
    kill(pid, SIGKILL);
  }
}

Test(workers, a_worker_killed_during_a_compile_costs_one_retry) {
  tirx_runtime *wk = runtime(true, 2);
  tirx__workers *w = tirx__runtime_workers(wk);
  cr_assert_not_null(w);
  killer kl = {.kill_attempts = 1};
  tirx__workers_set_hook(w, kill_hook, &kl);
  tirx_kernel *k = example_kernels[0].make();
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(kl.calls, 2);
  cr_assert_eq(kill(kl.killed[0], 0), -1, "the killed worker %d still exists", kl.killed[0]);
  tirx_cache_stats s = stats(wk);
  cr_assert_eq(s.worker_deaths, 1);
  cr_assert_eq(s.worker_compiles, 1);
  tirx__workers_stats ws;
  tirx__workers_stats_get(w, &ws);
  cr_assert_eq(ws.spawned, 2);
  cr_assert_eq(ws.retries, 1);
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(wk);
}

Test(workers, two_deaths_fail_the_compile_clearly_and_the_runtime_goes_on) {
  tirx_runtime *wk = runtime(true, 2);
  tirx__workers *w = tirx__runtime_workers(wk);
  killer kl = {.kill_attempts = 2};
  tirx__workers_set_hook(w, kill_hook, &kl);
  tirx_kernel *k = example_kernels[0].make();
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_E_COMPILE);
  char expected[1024];
  snprintf(expected, sizeof expected,
           "tirx_compile: the compile worker (pid %d, %s) was killed by signal 9 (%s) while "
           "compiling '%s'; the retry on a fresh worker (pid %d) was killed by signal 9 (%s) "
           "too. NVRTC crashed on this source, or something kills the workers (out of "
           "memory?); TIRX_COMPILE_WORKERS=0 compiles in the process instead",
           kl.killed[0], TIRX_TEST_WORKER, strsignal(SIGKILL), example_kernels[0].name,
           kl.killed[1], strsignal(SIGKILL));
  cr_assert_str_eq(tirx_last_error(), expected);
  cr_assert_eq(stats(wk).worker_deaths, 2);
  /* The next compile runs on a fresh worker. */
  tirx__workers_set_hook(w, NULL, NULL);
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(stats(wk).worker_compiles, 1);
  cr_assert_eq(tirx_runtime_compile_workers(wk), 2);
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(wk);
}

/* ---- no usable program: NVRTC in the process ---- */

static void compiles_in_process(tirx_runtime *rt) {
  tirx_kernel *k = example_kernels[0].make();
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(stats(rt).worker_compiles, 0);
  cr_assert_eq(tirx_runtime_compile_workers(rt), 0);
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
}

Test(workers, a_missing_program_in_the_environment_means_nvrtc_in_the_process) {
  setenv("TIRX_COMPILE_WORKER", "/nonexistent/tirx-compile-worker", 1);
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  compiles_in_process(rt);
  tirx_runtime_destroy(rt);
}

Test(workers, a_program_that_is_not_a_worker_turns_the_pool_off) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.size = sizeof(tirx_runtime_options),
                                                           .compile_only = true,
                                                           .compile_worker = "/bin/true"},
                                   &rt),
               TIRX_OK, "%s", tirx_last_error());
  compiles_in_process(rt);
  const char *why = tirx__workers_off_reason(tirx__runtime_workers(rt));
  cr_assert(strncmp(why, "/bin/true (pid ", 15) == 0 &&
                strstr(why, ") is not a usable compile worker: it closed its output without a "
                            "greeting") != NULL,
            "%s", why);
  tirx_runtime_destroy(rt);
}

/* A worker that cannot load NVRTC (its environment names a missing library; this process had
 * loaded its own before) greets with version 0: the pool turns off, compiles run here. */
Test(workers, a_worker_without_nvrtc_turns_the_pool_off) {
  cr_assert_neq(tirx__nvrtc_version(), 0);
  setenv("TIRX_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13", 1);
  tirx_runtime *rt = runtime(true, 1);
  compiles_in_process(rt);
  const char *why = tirx__workers_off_reason(tirx__runtime_workers(rt));
  cr_assert(strstr(why, ") is not a usable compile worker: it cannot load NVRTC (its "
                        "environment or run path differs)") != NULL,
            "%s", why);
  tirx_runtime_destroy(rt);
}

Test(workers, the_environment_turns_workers_off_and_sizes_the_pool) {
  setenv("TIRX_COMPILE_WORKER", TIRX_TEST_WORKER, 1);
  tirx_runtime *rt = NULL;
  setenv("TIRX_COMPILE_WORKERS", "off", 1);
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  compiles_in_process(rt);
  tirx_runtime_destroy(rt);
  setenv("TIRX_COMPILE_WORKERS", "3", 1);
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  cr_assert_eq(tirx_runtime_compile_workers(rt), 3);
  tirx_runtime_destroy(rt);
  setenv("TIRX_COMPILE_WORKERS", "many", 1); /* reported on stderr, ignored */
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  cr_assert(tirx_runtime_compile_workers(rt) >= 1);
  tirx_runtime_destroy(rt);
}

Test(workers, bad_options_are_refused) {
  tirx_runtime *rt = NULL;
  expect_error(tirx_runtime_create(&(tirx_runtime_options){.size = sizeof(tirx_runtime_options),
                                                        .compile_workers = 65}, &rt),
               TIRX_E_INVALID_ARG,
               "tirx_runtime_create: options->compile_workers is 65, expected 0 (one per core) "
               "to 64");
  expect_error(tirx_runtime_create(&(tirx_runtime_options){.size = sizeof(tirx_runtime_options),
                                                        .compile_worker = "/nonexistent/w"},
                                   &rt),
               TIRX_E_INVALID_ARG,
               "tirx_runtime_create: options->compile_worker '/nonexistent/w' is not an "
               "executable file");
  expect_error(tirx_runtime_create(&(tirx_runtime_options){.size = sizeof(tirx_runtime_options),
                                                        .compile_worker = "/tmp"}, &rt),
               TIRX_E_INVALID_ARG,
               "tirx_runtime_create: options->compile_worker '/tmp' is not an executable file");
  cr_assert_null(rt);
  cr_assert_eq(tirx_runtime_compile_workers(NULL), 0);
}

/* ---- destroy with compiles in flight ---- */

Test(workers, destroy_with_compiles_in_flight_leaves_no_worker_behind) {
  tirx_kernel *k = raw_kernel("wk_scale", scale_source);
  tirx_runtime *wk = runtime(true, 2);
  enum { N = 12 };
  tirx_future *f[N];
  for (int i = 0; i < N; i++) {
    int64_t shape[1] = {1000 + i};
    tirx_arg a = tirx_arg_tensor(FAKE_PTR, TIRX_F32, 1, shape, NULL);
    cr_assert_eq(tirx_prepare_async(wk, k, &a, 1, &f[i]), TIRX_OK, "%s", tirx_last_error());
  }
  /* Wait until the workers are running (the first compile has started). */
  tirx__workers *w = tirx__runtime_workers(wk);
  int pids[8], n = 0;
  for (int t = 0; t < 2000 && n < 1; t++) {
    n = tirx__workers_pids(w, pids, 8);
    usleep(5000);
  }
  cr_assert(n >= 1, "no worker started");
  n = tirx__workers_pids(w, pids, 8);
  tirx_runtime_destroy(wk);
  for (int i = 0; i < n; i++)
    cr_assert(kill(pids[i], 0) == -1 && errno == ESRCH, "worker %d is left behind", pids[i]);
  int ok = 0, cancelled = 0;
  for (int i = 0; i < N; i++) {
    cr_assert(tirx_future_poll(f[i]));
    tirx_status st = tirx_future_status(f[i]);
    ok += st == TIRX_OK;
    cancelled += st == TIRX_E_CANCELLED;
    tirx_future_release(f[i]);
  }
  cr_assert_eq(ok + cancelled, N, "%d ok, %d cancelled", ok, cancelled);
  cr_assert(ok >= 1);
  tirx_kernel_release(k);
}

/* ---- frames and the program's bad input ---- */

/* Reads what was written to a pipe as one frame. */
static int read_back(const void *bytes, size_t len, tirx__wframe *f, char *why, size_t wlen) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  cr_assert_eq(write(fds[1], bytes, len), (ssize_t)len);
  close(fds[1]);
  int rc = tirx__wframe_read(fds[0], f, why, wlen);
  close(fds[0]);
  return rc;
}

Test(workers, frames_round_trip_and_malformed_ones_are_refused) {
  int sv[2];
  cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  tirx__wfield in[3] = {{"abc", 3}, {"", 0}, {"\0\1\2", 3}};
  cr_assert_eq(tirx__wframe_write(sv[0], TIRX__WFRAME_REPLY, in, 3), 0);
  tirx__wframe f;
  char why[256] = "";
  cr_assert_eq(tirx__wframe_read(sv[1], &f, why, sizeof why), 1, "%s", why);
  cr_assert_eq(f.kind, TIRX__WFRAME_REPLY);
  cr_assert_eq(f.nfields, 3);
  cr_assert_str_eq(tirx__wframe_field(&f, 0), "abc");
  cr_assert_eq(f.len[1], 0);
  cr_assert(f.len[2] == 3 && memcmp(tirx__wframe_field(&f, 2), "\0\1\2", 3) == 0);
  tirx__wframe_free(&f);
  close(sv[0]);
  cr_assert_eq(tirx__wframe_read(sv[1], &f, why, sizeof why), 0); /* clean end */
  close(sv[1]);
  cr_assert_eq(tirx__wframe_write(-1, 1, in, TIRX__WFRAME_MAX_FIELDS + 1), -EINVAL);

  uint32_t head[4] = {TIRX__WFRAME_MAGIC, TIRX__WFRAME_VERSION | (2u << 16), 1, 0};
  uint64_t lens[2] = {5, 0};
  char buf[64];
  /* wrong magic, wrong version, too many fields, too large, truncated */
  uint32_t bad[4];
  memcpy(bad, head, sizeof bad);
  bad[0] = 0x12345678;
  cr_assert_eq(read_back(bad, sizeof bad, &f, why, sizeof why), -2);
  cr_assert_str_eq(why, "not a tirx worker frame (wrong magic)");
  memcpy(bad, head, sizeof bad);
  bad[1] = 7 | (2u << 16);
  cr_assert_eq(read_back(bad, sizeof bad, &f, why, sizeof why), -2);
  cr_assert_str_eq(why, "frame of another protocol version");
  memcpy(bad, head, sizeof bad);
  bad[2] = 1000;
  cr_assert_eq(read_back(bad, sizeof bad, &f, why, sizeof why), -2);
  cr_assert_str_eq(why, "frame with too many fields");
  memcpy(buf, head, sizeof head);
  lens[0] = (uint64_t)1 << 40;
  memcpy(buf + sizeof head, lens, 8);
  cr_assert_eq(read_back(buf, sizeof head + 8, &f, why, sizeof why), -2);
  cr_assert_str_eq(why, "frame larger than 1 GiB");
  lens[0] = 5;
  memcpy(buf + sizeof head, lens, 8);
  memcpy(buf + sizeof head + 8, "ab", 2);
  cr_assert_eq(read_back(buf, sizeof head + 10, &f, why, sizeof why), -1);
  cr_assert_str_eq(why, "input ends inside a frame's fields");
  cr_assert_eq(read_back(head, 7, &f, why, sizeof why), -1);
  cr_assert_str_eq(why, "input ends inside a frame header");
}

/* Runs the worker program on the bytes in input; its exit status, and its output in *out. */
static int run_worker_on(const void *input, size_t len, tirx__wframe out[2], int *nout) {
  char in_path[] = "/tmp/tirx-wk-in-XXXXXX", out_path[] = "/tmp/tirx-wk-out-XXXXXX";
  int in = mkstemp(in_path), o = mkstemp(out_path);
  cr_assert(in >= 0 && o >= 0);
  cr_assert_eq(write(in, input, len), (ssize_t)len);
  close(in);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s < %s > %s 2>/dev/null", TIRX_TEST_WORKER, in_path, out_path);
  int status = system(cmd);
  *nout = 0;
  char why[256];
  while (*nout < 2 && tirx__wframe_read(o, &out[*nout], why, sizeof why) == 1)
    (*nout)++;
  close(o);
  unlink(in_path);
  unlink(out_path);
  cr_assert(WIFEXITED(status), "the worker did not exit normally (status %d)", status);
  return WEXITSTATUS(status);
}

static size_t frame_bytes(char *buf, size_t cap, int kind, const tirx__wfield *f, int n) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  cr_assert_eq(tirx__wframe_write(fds[1], kind, f, n), 0);
  close(fds[1]);
  ssize_t got = read(fds[0], buf, cap);
  close(fds[0]);
  cr_assert(got > 0);
  return (size_t)got;
}

Test(workers, the_program_refuses_malformed_requests_without_crashing) {
  tirx__wframe out[2];
  int n = 0;
  /* Garbage: HELLO, then ERROR, exit 2. */
  cr_assert_eq(run_worker_on("garbage bytes, not a frame", 26, out, &n), 2);
  cr_assert_eq(n, 2);
  cr_assert_eq(out[0].kind, TIRX__WFRAME_HELLO);
  cr_assert_eq(out[1].kind, TIRX__WFRAME_ERROR);
  cr_assert_str_eq(tirx__wframe_field(&out[1], 0), "not a tirx worker frame (wrong magic)");
  tirx__wframe_free(&out[0]);
  tirx__wframe_free(&out[1]);
  /* A request with a NUL inside its source. */
  char flags = 0, buf[512];
  tirx__wfield req[5] = {{"k", 1}, {"sm_90a", 6}, {"a\0b", 3}, {&flags, 1},
                         {"--gpu-architecture=sm_90a", 26}};
  size_t len = frame_bytes(buf, sizeof buf, TIRX__WFRAME_REQUEST, req, 5);
  cr_assert_eq(run_worker_on(buf, len, out, &n), 2);
  cr_assert_eq(n, 2);
  cr_assert_not_null(strstr(tirx__wframe_field(&out[1], 0), "malformed request"));
  tirx__wframe_free(&out[0]);
  tirx__wframe_free(&out[1]);
  /* A frame of the wrong kind. */
  len = frame_bytes(buf, sizeof buf, TIRX__WFRAME_HELLO, req, 1);
  cr_assert_eq(run_worker_on(buf, len, out, &n), 2);
  cr_assert_str_eq(tirx__wframe_field(&out[1], 0),
                   "expected a request frame of 4 to 16 fields");
  tirx__wframe_free(&out[0]);
  tirx__wframe_free(&out[1]);
  /* No input: HELLO only, exit 0. */
  cr_assert_eq(run_worker_on("", 0, out, &n), 0);
  cr_assert_eq(n, 1);
  tirx__wframe_free(&out[0]);
}

/* ---- workers yield the cores to launching threads ---- */

Test(workers, workers_run_at_a_lower_priority_in_the_hosts_session) {
  tirx_runtime *wk = runtime(true, 1);
  tirx_kernel *k = example_kernels[0].make();
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  int pids[4];
  cr_assert_eq(tirx__workers_pids(tirx__runtime_workers(wk), pids, 4), 1);
  int mine = 0, theirs = 0;
  cr_assert_eq(uv_os_getpriority(0, &mine), 0);
  cr_assert_eq(uv_os_getpriority(pids[0], &theirs), 0);
  int want = mine + TIRX__WORKER_NICE > 19 ? 19 : mine + TIRX__WORKER_NICE;
  cr_assert_eq(theirs, want, "worker nice %d, expected %d", theirs, want);
  /* The host's session (the scheduler's autogroup, where the nice value counts), its own
   * process group (a terminal's ^C is the host's). */
  cr_assert_eq(getsid(pids[0]), getsid(0));
  cr_assert_eq(getpgid(pids[0]), pids[0]);
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(wk);
}

/* ---- a worker that answers garbage ---- */

/* A fake worker: a shell script that sends a real greeting (this NVRTC's version) and then
 * answers every request with bytes that are not a frame. */
static void fake_worker(char *script, size_t cap, char *data, size_t dcap) {
  snprintf(data, dcap, "/tmp/tirx-fake-worker-XXXXXX");
  int fd = mkstemp(data);
  cr_assert_geq(fd, 0);
  tirx__whello h = {TIRX__WPROTOCOL, tirx__nvrtc_version(), 1, 0};
  static const char name[] = "tirx-compile-worker";
  tirx__wfield f[2] = {{name, sizeof name - 1}, {&h, sizeof h}};
  cr_assert_eq(tirx__wframe_write(fd, TIRX__WFRAME_HELLO, f, 2), 0);
  cr_assert_eq(write(fd, "this is not a reply frame", 25), 25);
  close(fd);
  cr_assert_lt(strlen(data) + 4, cap);
  memcpy(script, data, strlen(data));
  memcpy(script + strlen(data), ".sh", 4);
  FILE *sh = fopen(script, "w");
  cr_assert_not_null(sh);
  fprintf(sh, "#!/bin/sh\ncat '%s'\nexec cat >/dev/null\n", data);
  fclose(sh);
  chmod(script, 0755);
}

Test(workers, a_worker_answering_garbage_is_replaced_then_the_compile_fails) {
  char script[320], data[300];
  fake_worker(script, sizeof script, data, sizeof data);
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.size = sizeof(tirx_runtime_options),
                                                           .compile_only = true,
                                                           .cache_disabled = true,
                                                           .compile_worker = script,
                                                           .compile_workers = 1},
                                   &rt),
               TIRX_OK, "%s", tirx_last_error());
  tirx_kernel *k = example_kernels[0].make();
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, NULL, &c), TIRX_E_COMPILE);
  const char *msg = tirx_last_error();
  cr_assert(strstr(msg, "tirx_compile: the compile worker (pid ") == msg, "%s", msg);
  cr_assert_not_null(strstr(msg, ") answered garbage (not a tirx worker frame (wrong magic)) "
                                 "while compiling '"),
                     "%s", msg);
  cr_assert_not_null(strstr(msg, ") answered garbage (not a tirx worker frame (wrong magic)) "
                                 "too."),
                     "%s", msg);
  cr_assert_eq(stats(rt).worker_deaths, 2);
  cr_assert_eq(stats(rt).worker_compiles, 0);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  unlink(script);
  unlink(data);
}

/* ---- many threads, few workers ---- */

typedef struct compile_arg {
  tirx_runtime *rt;
  tirx_kernel *k;
  tirx_status st;
  size_t size;
} compile_arg;

static void *compile_thread(void *p) {
  compile_arg *a = p;
  tirx_compiled *c = NULL;
  a->st = tirx_compile(a->rt, a->k, NULL, &c);
  tirx_compiled_cubin(c, &a->size);
  tirx_compiled_destroy(c);
  return NULL;
}

Test(workers, eight_threads_share_two_workers) {
  enum { T = 8 };
  tirx_runtime *wk = runtime(true, 2);
  pthread_t th[T];
  compile_arg args[T];
  char names[T][32], sources[T][600];
  for (int i = 0; i < T; i++) {
    snprintf(names[i], sizeof names[i], "wk_scale%d", i);
    snprintf(sources[i], sizeof sources[i],
             "extern \"C\" __global__ void wk_scale%d(long long n, float *x) {\n"
             "  long long i = blockIdx.x * 64ll + threadIdx.x;\n"
             "  if (i < n) x[i] *= %d.0f;\n"
             "}\n",
             i, i + 2);
    args[i] = (compile_arg){wk, raw_kernel(names[i], sources[i]), TIRX_E_INTERNAL, 0};
  }
  for (int i = 0; i < T; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, compile_thread, &args[i]), 0);
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(args[i].st, TIRX_OK, "thread %d: %s", i, tirx_status_name(args[i].st));
    cr_assert_gt(args[i].size, 64);
    tirx_kernel_release(args[i].k);
  }
  tirx__workers_stats ws;
  tirx__workers_stats_get(tirx__runtime_workers(wk), &ws);
  cr_assert_eq(ws.compiles, T);
  cr_assert(ws.spawned >= 1 && ws.spawned <= 2, "%llu workers spawned",
            (unsigned long long)ws.spawned);
  cr_assert_eq(ws.deaths, 0);
  tirx_runtime_destroy(wk);
}

Test(workers, the_environment_sets_the_workers_nice_value) {
  setenv("TIRX_COMPILE_WORKER_NICE", "3", 1);
  tirx_runtime *wk = runtime(true, 1);
  tirx_kernel *k = example_kernels[0].make();
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  int pids[4], mine = 0, theirs = 0;
  cr_assert_eq(tirx__workers_pids(tirx__runtime_workers(wk), pids, 4), 1);
  cr_assert_eq(uv_os_getpriority(0, &mine), 0);
  cr_assert_eq(uv_os_getpriority(pids[0], &theirs), 0);
  cr_assert_eq(theirs, mine + 3 > 19 ? 19 : mine + 3);
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(wk);
  setenv("TIRX_COMPILE_WORKER_NICE", "twenty", 1); /* reported, the default kept */
  wk = runtime(true, 1);
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx__workers_pids(tirx__runtime_workers(wk), pids, 4), 1);
  cr_assert_eq(uv_os_getpriority(pids[0], &theirs), 0);
  cr_assert_eq(theirs, mine + TIRX__WORKER_NICE > 19 ? 19 : mine + TIRX__WORKER_NICE);
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(wk);
}

/* ---- a worker keeps its heap between compiles and gives it back when idle ---- */

/* Field 10 of /proc/PID/stat: the process's minor page faults, its exited threads included. */
static long minor_faults(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* after the command name, which may hold spaces */
  cr_assert_not_null(p);
  long minflt = 0; /* after: state ppid pgrp session tty_nr tpgid flags */
  cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %ld", &minflt), 1);
  return minflt;
}

static long rss_kib(int pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
      break;
  fclose(f);
  cr_assert_geq(kib, 0);
  return kib;
}

#ifdef __GLIBC__
Test(workers, a_worker_reuses_its_heap_then_gives_it_back_when_idle) {
  tirx_runtime *wk = runtime(true, 1);
  tirx_kernel *k = example_kernels[0].make();
  tirx_compiled *c = NULL;
  /* The first compile grows the heap (and runs NVRTC's one-time start-up). */
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  tirx_compiled_destroy(c);
  int pid = 0;
  cr_assert_eq(tirx__workers_pids(tirx__runtime_workers(wk), &pid, 1), 1);
  /* The next, at once, finds its pages in place: glibc's defaults gave them back after each
   * compile, and a compile of this kernel faulted in 1,500 pages. */
  long before = minor_faults(pid);
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  long faults = minor_faults(pid) - before;
  cr_assert_lt(faults, 400, "a compile on a warm worker faulted in %ld pages", faults);
  tirx_compiled_destroy(c);
  /* Idle past IDLE_TRIM_MS (worker_main.c), the worker hands the free heap back. */
  long busy = rss_kib(pid);
  usleep(1500 * 1000);
  long idle = rss_kib(pid);
  cr_assert_lt(idle + 1024, busy, "resident %ld KiB after the compile, %ld KiB idle", busy, idle);
  /* And compiles as before. */
  cr_assert_eq(tirx_compile(wk, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(stats(wk).worker_compiles, 3);
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(wk);
}
#endif

/* A frame far larger than a socket's buffer goes out whole: the writer's vector of fields is
 * advanced over partial writes, on a socket (sendmsg) and on a pipe (writev). */
typedef struct big_write {
  int fd;
  const tirx__wfield *fields;
  int n, rc;
} big_write;

static void *big_writer(void *p) {
  big_write *b = p;
  b->rc = tirx__wframe_write(b->fd, TIRX__WFRAME_REPLY, b->fields, b->n);
  close(b->fd);
  return NULL;
}

Test(workers, frames_larger_than_the_stream_buffer_go_out_whole) {
  enum { BIG = (4 << 20) + 3, SMALL = 777 };
  char *big = malloc(BIG), *small = malloc(SMALL);
  cr_assert(big && small);
  for (size_t i = 0; i < BIG; i++)
    big[i] = (char)(i * 31 + i / 4093);
  for (size_t i = 0; i < SMALL; i++)
    small[i] = (char)(i ^ 0x5a);
  tirx__wfield in[4] = {{small, SMALL}, {big, BIG}, {"", 0}, {small, 5}};
  for (int kind = 0; kind < 2; kind++) {
    int fds[2];
    if (kind == 0)
      cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    else
      cr_assert_eq(pipe(fds), 0);
    big_write b = {fds[kind == 0 ? 0 : 1], in, 4, 1};
    int rd = fds[kind == 0 ? 1 : 0];
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, big_writer, &b), 0);
    tirx__wframe f;
    char why[256] = "";
    cr_assert_eq(tirx__wframe_read(rd, &f, why, sizeof why), 1, "%s", why);
    pthread_join(th, NULL);
    cr_assert_eq(b.rc, 0, "%s", strerror(-b.rc));
    cr_assert_eq(f.nfields, 4);
    cr_assert(f.len[0] == SMALL && memcmp(tirx__wframe_field(&f, 0), small, SMALL) == 0);
    cr_assert(f.len[1] == BIG && memcmp(tirx__wframe_field(&f, 1), big, BIG) == 0,
              "the %s lost or reordered bytes", kind == 0 ? "socket" : "pipe");
    cr_assert_eq(f.len[2], 0);
    cr_assert(f.len[3] == 5 && memcmp(tirx__wframe_field(&f, 3), small, 5) == 0);
    tirx__wframe_free(&f);
    cr_assert_eq(tirx__wframe_read(rd, &f, why, sizeof why), 0); /* nothing after it */
    close(rd);
  }
  free(big);
  free(small);
}
