/* Messages a user sees never name internal (tirx__) functions: a sample of errors from the
 * public API, the runtime's cache warnings and the messages of cancelled requests. The tool's
 * output is scanned in tests/unit/tools/test_tirx.c. */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "demo_kernels.h"
#include "helpers.h"

#define PTR(v) ((void *)(uintptr_t)(v))

/* Asserts that msg is a non-empty message that names no internal function. */
static void clean(const char *what, const char *msg) {
  cr_assert(msg && msg[0], "%s: no message", what);
  cr_assert_null(strstr(msg, "tirx__"), "%s: the message names an internal function: %s", what,
                 msg);
}

/* The last error of a call that must fail. */
#define FAILS(call)                                                                          \
  do {                                                                                       \
    tirx_clear_error();                                                                      \
    cr_assert_neq((call), TIRX_OK, "%s succeeded", #call);                                   \
    clean(#call, tirx_last_error());                                                         \
  } while (0)

typedef struct events {
  pthread_mutex_t mu;
  int warnings;
  char bad[512]; /* the first warning that named an internal function */
} events;

static void on_event(const tirx_event *ev, void *user) {
  events *e = user;
  if (ev->kind != TIRX_EVENT_CACHE_WARNING && ev->kind != TIRX_EVENT_COMPILE_FINISHED)
    return;
  pthread_mutex_lock(&e->mu);
  if (ev->kind == TIRX_EVENT_CACHE_WARNING)
    e->warnings++;
  if (strstr(ev->message, "tirx__") && !e->bad[0])
    snprintf(e->bad, sizeof e->bad, "%s", ev->message);
  pthread_mutex_unlock(&e->mu);
}

Test(messages, the_checker_catches_an_internal_name) {
  /* clean() is what every test below relies on: it must reject such a message. */
  const char *m = "tirx__store_get: removed a corrupt entry";
  cr_assert_not_null(strstr(m, "tirx__"));
}

Test(messages, a_sample_of_public_errors) {
  tirx_runtime *rt = NULL;
  FAILS(tirx_runtime_create(&(tirx_runtime_options){.size = 1}, &rt));
  FAILS(tirx_runtime_create(&(tirx_runtime_options){.capture_policy = 9}, &rt));
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  FAILS(tirx_runtime_cache_stats(rt, &(tirx_cache_stats){.size = 2}));
  FAILS(tirx_runtime_drain(rt, -5));
  FAILS(tirx_runtime_alloc(rt, 64, &(void *){NULL}));
  FAILS(tirx_runtime_synchronize(rt, NULL));
  FAILS(tirx_runtime_stream_create(rt, &(void *){NULL}));
  tirx_kernel *k = example_vector_add();
  cr_assert_not_null(k);
  int64_t n = 1000;
  tirx_arg args[4] = {tirx_arg_i64(n), tirx_arg_tensor(PTR(0x10000), TIRX_F32, 1, &n, NULL),
                      tirx_arg_tensor(PTR(0x20000), TIRX_F32, 1, &n, NULL),
                      tirx_arg_tensor(PTR(0x30000), TIRX_F16, 1, &n, NULL)};
  FAILS(tirx_launch(rt, k, args, 4, NULL));       /* a dtype mismatch */
  FAILS(tirx_launch(rt, k, args, 3, NULL));       /* nargs */
  FAILS(tirx_compile(rt, k, "sm_9", &(tirx_compiled *){NULL}));
  FAILS(tirx_launch_ex(rt, k, args, 4, NULL, &(tirx_launch_info){.size = 1}));
  tirx_future *f = NULL;
  FAILS(tirx_prepare_async(rt, k, args, 4, &f));
  FAILS(tirx_future_wait(NULL, 0));
  tirx_kernel_release(k);

  /* The kernel library. */
  tirx_tensor_arg x = {PTR(0x10000), TIRX_F32, 2, (int64_t[]){4, 256}, NULL};
  tirx_tensor_arg w = {PTR(0x20008), TIRX_F32, 1, (int64_t[]){256}, NULL};
  FAILS(tirx_op_rmsnorm(rt, NULL, &x, &w, &x, 1e-6f, NULL));
  FAILS(tirx_op_gemm(rt, &(tirx_gemm_options){.family = "nope"}, &x, &x, NULL, &x, NULL));
  FAILS(tirx_op_attention(rt, &(tirx_attention_options){.path = "nope"}, &x, &x, &x, &x, NULL,
                          NULL, NULL));
  FAILS(tirx_op_decode_attention(rt, NULL, &x, &x, &x, &x, &x, &x, NULL, NULL));
  FAILS(tirx_kernels_gemm_plan(NULL, 0, 1, 1, &(tirx_gemm_plan){0}));
  FAILS(tirx_kernels_row_build(TIRX_ROW_OP_COUNT, NULL, TIRX_F32, 64, &(tirx_kernel *){NULL}));
  FAILS(tirx_comm_id_generate(&(tirx_comm_options){.nccl_library = "/nonexistent/libnccl.so"},
                              &(tirx_comm_id){{0}}));
  tirx_runtime_destroy(rt);
}

/* Flips the last byte (the checksum's) of every entry-sized file under a cache directory. */
static int damaged;
static int damage(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)ftw;
  if (type != FTW_F || st->st_size < 100)
    return 0;
  FILE *f = fopen(path, "r+");
  if (!f)
    return 0;
  fseek(f, -1, SEEK_END);
  int c = fgetc(f);
  fseek(f, -1, SEEK_END);
  fputc(c ^ 0xff, f);
  fclose(f);
  damaged++;
  return 0;
}

/* Cache warnings: a directory that is a file, and a corrupt entry found by a later runtime. */
Test(messages, cache_warnings) {
  char dir[] = "/tmp/tirx-messages-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char file[600];
  snprintf(file, sizeof file, "%s/not-a-dir", dir);
  FILE *fp = fopen(file, "w");
  cr_assert_not_null(fp);
  fclose(fp);

  events e = {.mu = PTHREAD_MUTEX_INITIALIZER};
  tirx_runtime_options o = {.compile_only = true, .cache_dir = file, .on_event = on_event,
                            .event_user = &e, .cache_no_fsync = true};
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  cr_assert_str_eq(tirx_runtime_cache_dir(rt), "");
  tirx_runtime_destroy(rt);
  cr_assert_geq(e.warnings, 1, "the unusable directory was not reported");
  cr_assert_str_eq(e.bad, "", "a warning names an internal function: %s", e.bad);

  /* Publish one variant, damage it, and let a new runtime find it. */
  char cache[600];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  o.cache_dir = cache;
  e.warnings = 0;
  tirx_kernel *k = example_vector_add();
  int64_t n = 1024;
  tirx_arg args[4] = {tirx_arg_i64(n), tirx_arg_tensor(PTR(0x10000), TIRX_F32, 1, &n, NULL),
                      tirx_arg_tensor(PTR(0x20000), TIRX_F32, 1, &n, NULL),
                      tirx_arg_tensor(PTR(0x30000), TIRX_F32, 1, &n, NULL)};
  const tirx_arg *lists[1] = {args};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_runtime_warmup(rt, k, lists, (int[]){4}, 1), TIRX_OK, "%s",
               tirx_last_error());
  tirx_runtime_destroy(rt);
  damaged = 0;
  cr_assert_eq(nftw(cache, damage, 8, FTW_PHYS), 0);
  cr_assert_geq(damaged, 1, "no cache entry found under %s", cache);
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_runtime_warmup(rt, k, lists, (int[]){4}, 1), TIRX_OK, "%s",
               tirx_last_error());
  tirx_cache_stats s = {0};
  cr_assert_eq(tirx_runtime_cache_stats(rt, &s), TIRX_OK);
  tirx_runtime_destroy(rt);
  cr_assert_eq(s.corrupt_detected, 1);
  cr_assert_geq(e.warnings, 1, "the corrupt entry was not reported");
  cr_assert_str_eq(e.bad, "", "a warning names an internal function: %s", e.bad);
  tirx_kernel_release(k);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* Requests cancelled by tirx_future_cancel or by tirx_runtime_destroy. */
Test(messages, cancelled_requests) {
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true,
                            .max_parallel_compiles = 1};
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  tirx_kernel *k = example_vector_add();
  enum { COUNT = 6 };
  tirx_future *f[COUNT];
  int64_t n[COUNT];
  for (int i = 0; i < COUNT; i++) {
    n[i] = 4096 + 16 * i;
    tirx_arg args[4] = {tirx_arg_i64(n[i]),
                        tirx_arg_tensor(PTR(0x10000), TIRX_F32, 1, &n[i], NULL),
                        tirx_arg_tensor(PTR(0x20000), TIRX_F32, 1, &n[i], NULL),
                        tirx_arg_tensor(PTR(0x30000), TIRX_F32, 1, &n[i], NULL)};
    cr_assert_eq(tirx_prepare_async(rt, k, args, 4, &f[i]), TIRX_OK, "%s", tirx_last_error());
  }
  /* One compile runs at a time: the last request is still queued and cancels; destroying the
   * runtime cancels whatever else is queued. */
  cr_assert_eq(tirx_future_cancel(f[COUNT - 1]), TIRX_OK, "%s", tirx_last_error());
  tirx_runtime_destroy(rt);
  int cancelled = 0;
  for (int i = 0; i < COUNT; i++) {
    tirx_status st = tirx_future_wait(f[i], -1);
    if (st != TIRX_OK) {
      cr_assert_eq(st, TIRX_E_CANCELLED, "%s", tirx_future_message(f[i]));
      clean("a cancelled request", tirx_future_message(f[i]));
      clean("its wait", tirx_last_error());
      cancelled++;
    }
    tirx_future_release(f[i]);
  }
  cr_assert_geq(cancelled, 1);
  tirx_kernel_release(k);
}
