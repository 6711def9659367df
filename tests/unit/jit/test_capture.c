/* What a C++ server needs around launches, without a GPU (src/jit/launch.c, memory.c,
 * variant.c): the graph-capture policy of the miss path (tirx__runtime_select_ex with a fake
 * module loader), where a launch's function came from (tirx_launch_info), tirx_runtime_drain,
 * and the exact errors of the stream-taking calls, tirx_launch_ex and the new options. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../helpers.h"
#include "jit/jit.h"

TestSuite(capture, .timeout = 120);

#define FAKE_PTR ((void *)(uintptr_t)0x10000)

/* x[i] = 3 * x[i] for i < n, n specialised on its value. */
static tirx_kernel *triple_kernel(void) {
  tirx_builder *b = tirx_builder_create("capture_triple");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_set_policy(b, n, TIRX_SPECIALIZE_VALUE);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 64)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 64)),
                                           tirx_thread_idx(b, 0)));
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_store(b, x, TIRX_EXPRS(i),
             tirx_mul(b, tirx_load(b, x, TIRX_EXPRS(i)), tirx_float(b, 3.0, TIRX_F32)));
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static void make_dir(char *buf, size_t len) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, len, "%s/tirx-capture-XXXXXX", t && t[0] ? t : "/tmp");
  cr_assert_not_null(mkdtemp(buf), "mkdtemp: %s", strerror(errno));
}

static void rm_dir(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
        continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", path, de->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(path);
}

static tirx_runtime *runtime(const char *dir, tirx_runtime_options o) {
  o.compile_only = true;
  o.cache_dir = dir;
  o.cache_disabled = dir == NULL;
  o.cache_no_fsync = true;
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static tirx_cache_stats stats(tirx_runtime *rt) {
  tirx_cache_stats s = {0};
  cr_assert_eq(tirx_runtime_cache_stats(rt, &s), TIRX_OK, "%s", tirx_last_error());
  return s;
}

/* A loader that hands out fake handles; while gated it blocks every key but open_key. */
typedef struct gate_loader {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool gated, open;
  tirx__cache_key open_key;
  int loads;
} gate_loader;

static void gate_init(gate_loader *l) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
}

static void gate_open(gate_loader *l) {
  pthread_mutex_lock(&l->mu);
  l->open = true;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

static void gate_free(gate_loader *l) {
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
}

static tirx_status gate_load(tirx_runtime *rt, void *user, const char *fn,
                             const tirx__cache_key *key, const void *image, size_t size,
                             const char *entry, CUmodule *module, CUfunction *function) {
  (void)rt, (void)fn, (void)image, (void)size, (void)entry;
  gate_loader *l = user;
  pthread_mutex_lock(&l->mu);
  while (l->gated && !l->open && !tirx__cache_key_equal(key, &l->open_key))
    pthread_cond_wait(&l->cv, &l->mu);
  int i = ++l->loads;
  pthread_mutex_unlock(&l->mu);
  *module = (CUmodule)(uintptr_t)(0x1000 + 16 * i);
  *function = (CUfunction)(uintptr_t)(0x2000 + 16 * i);
  return TIRX_OK;
}

typedef struct binding {
  int64_t shape[1];
  tirx_arg args[1];
  tirx__launch_plan plan;
} binding;

static binding *bind(const tirx_kernel *k, int64_t n) {
  binding *b = calloc(1, sizeof *b);
  b->shape[0] = n;
  b->args[0] = tirx_arg_tensor(FAKE_PTR, TIRX_F32, 1, b->shape, NULL);
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", b->args, 1, &b->plan), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_eq(b->plan.nspec, 1);
  return b;
}

static tirx_launch_info info_new(void) {
  tirx_launch_info i;
  memset(&i, 0xAB, sizeof i);
  i.size = sizeof i;
  return i;
}

static const char refuse_msg[] =
    "tirx_launch: kernel 'capture_triple' is not ready and its stream is capturing a CUDA graph "
    "(capture_policy TIRX_CAPTURE_REFUSE): launch it once, or warm it up, before capturing";

/* ---- the capture policy ---- */

Test(capture, refuse_compiles_and_loads_nothing_until_warmed_up) {
  tirx_kernel *k = triple_kernel();
  gate_loader l;
  gate_init(&l);
  tirx_runtime *rt = runtime(NULL, (tirx_runtime_options){.capture_policy = TIRX_CAPTURE_REFUSE});
  tirx__runtime_set_loader(rt, gate_load, &l);
  binding *b = bind(k, 40);
  tirx__module *m = NULL;
  tirx_launch_info info = info_new();
  expect_error(tirx__runtime_select_ex(rt, k, &b->plan, "tirx_launch", true, &m, &info),
               TIRX_E_CAPTURE, refuse_msg);
  cr_assert_null(m);
  cr_assert_eq(stats(rt).compiles, 0);
  cr_assert_eq(stats(rt).variants, 0);
  cr_assert_eq(l.loads, 0);
  /* The warm-up, outside the capture: a compile. */
  info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(rt, k, &b->plan, "tirx_launch", false, &m, &info), TIRX_OK,
               "%s", tirx_last_error());
  cr_assert_eq(info.source, TIRX_LAUNCH_FROM_COMPILE);
  cr_assert(!info.fell_back);
  cr_assert(!info.capturing);
  /* Now the capture finds it in memory. */
  tirx__module *again = NULL;
  info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(rt, k, &b->plan, "tirx_launch", true, &again, &info),
               TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(again, m);
  cr_assert_eq(info.source, TIRX_LAUNCH_FROM_MEMORY);
  cr_assert(info.capturing);
  cr_assert_eq(stats(rt).compiles, 1);
  tirx_runtime_destroy(rt);
  gate_free(&l);
  free(b);
  tirx_kernel_release(k);
}

Test(capture, wait_with_tiering_bakes_the_specialised_variant_not_the_dynamic_one) {
  tirx_kernel *k = triple_kernel();
  gate_loader l;
  gate_init(&l);
  tirx_runtime *rt = runtime(NULL, (tirx_runtime_options){.tiered = true});
  tirx__runtime_set_loader(rt, gate_load, &l);
  binding *b = bind(k, 48);
  tirx__cache_key spec;
  cr_assert_eq(tirx__variant_cache_key(rt, k, 1, b->plan.spec, &spec), TIRX_OK);
  tirx__module *m = NULL;
  tirx_launch_info info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(rt, k, &b->plan, "tirx_launch", true, &m, &info), TIRX_OK,
               "%s", tirx_last_error());
  cr_assert(tirx__cache_key_equal(&m->ckey, &spec), "the capture got the dynamic variant");
  cr_assert(!info.fell_back);
  cr_assert_eq(info.source, TIRX_LAUNCH_FROM_COMPILE);
  cr_assert_eq(stats(rt).tiered_fallbacks, 0);
  cr_assert_eq(stats(rt).compiles, 1, "the dynamic variant was compiled too");
  tirx_runtime_destroy(rt);
  gate_free(&l);
  free(b);
  tirx_kernel_release(k);
}

Test(capture, refuse_with_tiering_refuses_while_the_specialised_variant_compiles) {
  tirx_kernel *k = triple_kernel();
  gate_loader l;
  gate_init(&l);
  tirx_runtime *rt = runtime(
      NULL, (tirx_runtime_options){.tiered = true, .capture_policy = TIRX_CAPTURE_REFUSE});
  binding *b = bind(k, 56);
  tirx__cache_key dyn, spec;
  cr_assert_eq(tirx__variant_cache_key(rt, k, 0, NULL, &dyn), TIRX_OK);
  cr_assert_eq(tirx__variant_cache_key(rt, k, 1, b->plan.spec, &spec), TIRX_OK);
  l.gated = true;
  l.open_key = dyn;
  tirx__runtime_set_loader(rt, gate_load, &l);
  /* Outside a capture: the dynamic variant runs while the specialised one compiles. */
  tirx__module *m = NULL;
  tirx_launch_info info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(rt, k, &b->plan, "tirx_launch", false, &m, &info), TIRX_OK,
               "%s", tirx_last_error());
  cr_assert(tirx__cache_key_equal(&m->ckey, &dyn));
  cr_assert(info.fell_back);
  cr_assert_eq(info.source, TIRX_LAUNCH_FROM_COMPILE);
  /* Inside one: refused, although the dynamic variant is ready. */
  expect_error(tirx__runtime_select_ex(rt, k, &b->plan, "tirx_launch", true, &m, NULL),
               TIRX_E_CAPTURE, refuse_msg);
  expect_error(tirx_runtime_drain(rt, 0), TIRX_E_TIMEOUT,
               "tirx_runtime_drain: 1 compile still running after 0 ms");
  expect_error(tirx_runtime_drain(rt, 20), TIRX_E_TIMEOUT,
               "tirx_runtime_drain: 1 compile still running after 20 ms");
  gate_open(&l);
  cr_assert_eq(tirx_runtime_drain(rt, -1), TIRX_OK, "%s", tirx_last_error());
  info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(rt, k, &b->plan, "tirx_launch", true, &m, &info), TIRX_OK,
               "%s", tirx_last_error());
  cr_assert(tirx__cache_key_equal(&m->ckey, &spec));
  cr_assert_eq(info.source, TIRX_LAUNCH_FROM_MEMORY);
  cr_assert(!info.fell_back);
  tirx_runtime_destroy(rt);
  gate_free(&l);
  free(b);
  tirx_kernel_release(k);
}

Test(capture, launch_info_tells_a_disk_hit_from_a_compile_and_a_memory_hit) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = triple_kernel();
  gate_loader l;
  gate_init(&l);
  binding *b = bind(k, 72);
  tirx_runtime *first = runtime(dir, (tirx_runtime_options){0});
  tirx__runtime_set_loader(first, gate_load, &l);
  tirx__module *m = NULL;
  tirx_launch_info info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(first, k, &b->plan, "tirx_launch", false, &m, &info),
               TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(info.source, TIRX_LAUNCH_FROM_COMPILE);
  tirx_runtime_destroy(first);
  tirx_runtime *second = runtime(dir, (tirx_runtime_options){0});
  tirx__runtime_set_loader(second, gate_load, &l);
  info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(second, k, &b->plan, "tirx_launch", false, &m, &info),
               TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(info.source, TIRX_LAUNCH_FROM_DISK);
  info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(second, k, &b->plan, "tirx_launch", false, &m, &info),
               TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(info.source, TIRX_LAUNCH_FROM_MEMORY);
  cr_assert_eq(stats(second).compiles, 0);
  tirx_runtime_destroy(second);
  gate_free(&l);
  free(b);
  tirx_kernel_release(k);
  rm_dir(dir);
}

/* ---- tirx_runtime_drain ---- */

typedef struct drain_probe {
  tirx_runtime *rt;
  tirx_status st;
  char msg[256];
} drain_probe;

static void drain_from_callback(tirx_future *f, tirx_status st, void *user) {
  (void)f, (void)st;
  drain_probe *p = user;
  p->st = tirx_runtime_drain(p->rt, -1);
  snprintf(p->msg, sizeof p->msg, "%s", tirx_last_error());
}

Test(capture, drain_waits_for_prepared_compiles_and_refuses_bad_calls) {
  expect_error(tirx_runtime_drain(NULL, 0), TIRX_E_NULL_ARG, "tirx_runtime_drain: rt is NULL");
  tirx_kernel *k = triple_kernel();
  gate_loader l;
  gate_init(&l);
  l.gated = true; /* nothing opens early: open_key is all zeros */
  tirx_runtime *rt = runtime(NULL, (tirx_runtime_options){0});
  tirx__runtime_set_loader(rt, gate_load, &l);
  expect_error(tirx_runtime_drain(rt, -2), TIRX_E_INVALID_ARG,
               "tirx_runtime_drain: timeout_ms is -2, expected >= -1");
  cr_assert_eq(tirx_runtime_drain(rt, 0), TIRX_OK, "an idle runtime drains at once");
  binding *b1 = bind(k, 8), *b2 = bind(k, 9);
  tirx_future *f1 = NULL, *f2 = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b1->args, 1, &f1), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_prepare_async(rt, k, b2->args, 1, &f2), TIRX_OK, "%s", tirx_last_error());
  drain_probe p = {rt, TIRX_E_INTERNAL, ""};
  cr_assert_eq(tirx_future_on_complete(f1, drain_from_callback, &p), TIRX_OK);
  expect_error(tirx_runtime_drain(rt, 5), TIRX_E_TIMEOUT,
               "tirx_runtime_drain: 2 compiles still running after 5 ms");
  gate_open(&l);
  cr_assert_eq(tirx_runtime_drain(rt, -1), TIRX_OK, "%s", tirx_last_error());
  cr_assert(tirx_future_poll(f1) && tirx_future_poll(f2));
  cr_assert_eq(p.st, TIRX_E_INVALID_ARG);
  cr_assert_str_eq(p.msg,
                   "tirx_runtime_drain: called from a completion callback, which runs on the "
                   "compile queue's thread; it would wait for itself");
  tirx_future_release(f1);
  tirx_future_release(f2);
  tirx_runtime_destroy(rt);
  gate_free(&l);
  free(b1);
  free(b2);
  tirx_kernel_release(k);
}

/* ---- options and the calls that need a device, without one ---- */

#define NO_DEVICE ": no CUDA device: the runtime was created compile-only"

Test(capture, create_rejects_an_unknown_capture_policy) {
  tirx_runtime *rt = (tirx_runtime *)&rt;
  expect_error(
      tirx_runtime_create(&(tirx_runtime_options){.capture_policy = (tirx_capture_policy)5}, &rt),
      TIRX_E_INVALID_ARG,
      "tirx_runtime_create: options->capture_policy is 5, expected TIRX_CAPTURE_WAIT (0) or "
      "TIRX_CAPTURE_REFUSE (1)");
  cr_assert_null(rt);
  cr_assert_str_eq(tirx_status_name(TIRX_E_CAPTURE), "TIRX_E_CAPTURE");
  cr_assert_str_eq(tirx_status_str(TIRX_E_CAPTURE),
                   "the stream is capturing a CUDA graph and the kernel is not ready");
}

Test(capture, launch_ex_checks_info_size) {
  tirx_runtime *rt = runtime(NULL, (tirx_runtime_options){0});
  tirx_kernel *k = triple_kernel();
  int64_t shape[1] = {8};
  tirx_arg args[1] = {tirx_arg_tensor(FAKE_PTR, TIRX_F32, 1, shape, NULL)};
  tirx_launch_info info = {.size = 4};
  char want[160];
  snprintf(want, sizeof want,
           "tirx_launch_ex: info->size is 4, expected at least %zu (sizeof(tirx_launch_info) is "
           "%zu)",
           offsetof(tirx_launch_info, fell_back), sizeof(tirx_launch_info));
  expect_error(tirx_launch_ex(rt, k, args, 1, NULL, &info), TIRX_E_INVALID_ARG, want);
  cr_assert_eq(info.size, 4);
  info = info_new();
  expect_error(tirx_launch_ex(rt, k, args, 1, NULL, &info), TIRX_E_NO_DEVICE,
               "tirx_launch_ex" NO_DEVICE);
  expect_error(tirx_launch_ex(rt, k, args, 1, NULL, NULL), TIRX_E_NO_DEVICE,
               "tirx_launch_ex" NO_DEVICE);
  expect_error(tirx_launch_ex(NULL, k, args, 1, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_launch_ex: rt is NULL");
  expect_error(tirx_launch_ex(rt, k, args, -1, NULL, &info), TIRX_E_INVALID_ARG,
               "tirx_launch_ex: nargs is -1, expected >= 0");
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

Test(capture, stream_calls_check_arguments_and_need_a_device) {
  tirx_runtime *rt = runtime(NULL, (tirx_runtime_options){0});
  char host[16];
  void *s = host;
  bool capturing = true;
  cr_assert_null(tirx_runtime_context(rt));
  cr_assert_null(tirx_runtime_context(NULL));
  expect_error(tirx_runtime_stream_create(rt, NULL), TIRX_E_NULL_ARG,
               "tirx_runtime_stream_create: out is NULL");
  expect_error(tirx_runtime_stream_create(NULL, &s), TIRX_E_NULL_ARG,
               "tirx_runtime_stream_create: rt is NULL");
  cr_assert_null(s, "out is set to NULL on failure");
  expect_error(tirx_runtime_stream_create(rt, &s), TIRX_E_NO_DEVICE,
               "tirx_runtime_stream_create" NO_DEVICE);
  expect_error(tirx_runtime_stream_destroy(NULL, host), TIRX_E_NULL_ARG,
               "tirx_runtime_stream_destroy: rt is NULL");
  cr_assert_eq(tirx_runtime_stream_destroy(rt, NULL), TIRX_OK);
  expect_error(tirx_runtime_stream_destroy(rt, host), TIRX_E_NO_DEVICE,
               "tirx_runtime_stream_destroy" NO_DEVICE);
  expect_error(tirx_runtime_stream_is_capturing(rt, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_runtime_stream_is_capturing: out is NULL");
  expect_error(tirx_runtime_stream_is_capturing(NULL, NULL, &capturing), TIRX_E_NULL_ARG,
               "tirx_runtime_stream_is_capturing: rt is NULL");
  cr_assert(!capturing, "out is set to false on failure");
  expect_error(tirx_runtime_stream_is_capturing(rt, NULL, &capturing), TIRX_E_NO_DEVICE,
               "tirx_runtime_stream_is_capturing" NO_DEVICE);

  expect_error(tirx_runtime_copy_async(NULL, host, host, 4, TIRX_COPY_HOST_TO_DEVICE, NULL),
               TIRX_E_NULL_ARG, "tirx_runtime_copy_async: rt is NULL");
  expect_error(tirx_runtime_copy_async(rt, host, host, 4, (tirx_copy_kind)9, NULL),
               TIRX_E_INVALID_ARG, "tirx_runtime_copy_async: kind 9 is not a tirx_copy_kind");
  expect_error(tirx_runtime_copy_async(rt, NULL, host, 4, TIRX_COPY_HOST_TO_DEVICE, NULL),
               TIRX_E_NULL_ARG, "tirx_runtime_copy_async: dst is NULL");
  expect_error(tirx_runtime_copy_async(rt, host, NULL, 4, TIRX_COPY_DEVICE_TO_HOST, NULL),
               TIRX_E_NULL_ARG, "tirx_runtime_copy_async: src is NULL");
  cr_assert_eq(tirx_runtime_copy_async(rt, NULL, NULL, 0, TIRX_COPY_DEVICE_TO_DEVICE, host),
               TIRX_OK);
  expect_error(tirx_runtime_copy_async(rt, host, host, 4, TIRX_COPY_DEVICE_TO_DEVICE, host),
               TIRX_E_NO_DEVICE, "tirx_runtime_copy_async" NO_DEVICE);
  expect_error(tirx_runtime_fill32_async(NULL, host, 0, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_runtime_fill32_async: rt is NULL");
  expect_error(tirx_runtime_fill32_async(rt, NULL, 0, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_runtime_fill32_async: dst is NULL");
  char want[128];
  snprintf(want, sizeof want, "tirx_runtime_fill32_async: dst %p is not 4-byte aligned",
           (void *)(host + 2));
  expect_error(tirx_runtime_fill32_async(rt, host + 2, 0, 1, NULL), TIRX_E_INVALID_ARG, want);
  cr_assert_eq(tirx_runtime_fill32_async(rt, NULL, 0, 0, NULL), TIRX_OK);
  expect_error(tirx_runtime_fill32_async(rt, host, 0, 4, host), TIRX_E_NO_DEVICE,
               "tirx_runtime_fill32_async" NO_DEVICE);
  tirx_runtime_destroy(rt);
}

/* ---- bounded retry of a failed background compile ---- */

typedef struct flaky_loader {
  tirx__cache_key bad_key;
  int fails_left;
  tirx_status status;
  int calls;
} flaky_loader;

static tirx_status flaky_load(tirx_runtime *rt, void *user, const char *fn,
                              const tirx__cache_key *key, const void *image, size_t size,
                              const char *entry, CUmodule *module, CUfunction *function) {
  (void)rt, (void)image, (void)size, (void)entry;
  flaky_loader *l = user;
  if (tirx__cache_key_equal(key, &l->bad_key) && l->fails_left > 0) {
    l->fails_left--;
    return tirx__error(l->status, "%s: the fake driver refused the module", fn);
  }
  l->calls++;
  *module = (CUmodule)(uintptr_t)(0x1000 + 16 * l->calls);
  *function = (CUfunction)(uintptr_t)(0x2000 + 16 * l->calls);
  return TIRX_OK;
}

/* One tiered select of b's variant: fell_back and background_error into *info. */
static tirx__module *tiered_select(tirx_runtime *rt, const tirx_kernel *k, binding *b,
                                   tirx_launch_info *info) {
  tirx__module *m = NULL;
  *info = info_new();
  cr_assert_eq(tirx__runtime_select_ex(rt, k, &b->plan, "tirx_launch", false, &m, info), TIRX_OK,
               "%s", tirx_last_error());
  return m;
}

Test(capture, a_failed_background_load_is_retried_after_a_backoff_and_its_error_kept) {
  tirx_kernel *k = triple_kernel();
  tirx_runtime *rt = runtime(NULL, (tirx_runtime_options){.tiered = true});
  binding *b = bind(k, 88);
  flaky_loader l = {.fails_left = 1, .status = TIRX_E_DRIVER};
  cr_assert_eq(tirx__variant_cache_key(rt, k, 1, b->plan.spec, &l.bad_key), TIRX_OK);
  tirx__runtime_set_loader(rt, flaky_load, &l);
  tirx_launch_info info;
  tiered_select(rt, k, b, &info);
  cr_assert(info.fell_back);
  cr_assert_null(info.background_error);
  cr_assert_eq(tirx_runtime_drain(rt, -1), TIRX_OK);
  cr_assert_eq(stats(rt).compiles, 2);
  /* Failed: the dynamic variant runs, with the error, and no retry before the backoff. */
  tiered_select(rt, k, b, &info);
  cr_assert(info.fell_back);
  cr_assert_not_null(info.background_error);
  cr_assert_str_eq(info.background_error, "tirx_launch: the fake driver refused the module");
  cr_assert_eq(tirx_runtime_drain(rt, -1), TIRX_OK);
  cr_assert_eq(stats(rt).compiles, 2, "retried before the backoff");
  usleep((TIRX__RETRY_BASE_MS + 100) * 1000);
  tiered_select(rt, k, b, &info);
  cr_assert(info.fell_back);
  cr_assert_eq(tirx_runtime_drain(rt, -1), TIRX_OK);
  cr_assert_eq(stats(rt).compiles, 3, "no retry after the backoff");
  tirx__cache_key spec = l.bad_key;
  tirx__module *m = tiered_select(rt, k, b, &info);
  cr_assert(!info.fell_back);
  cr_assert_null(info.background_error);
  cr_assert(tirx__cache_key_equal(&m->ckey, &spec));
  tirx_runtime_destroy(rt);
  free(b);
  tirx_kernel_release(k);
}

Test(capture, an_nvrtc_failure_in_the_background_is_never_retried) {
  tirx_kernel *k = triple_kernel();
  tirx_runtime *rt = runtime(NULL, (tirx_runtime_options){.tiered = true});
  binding *b = bind(k, 96);
  flaky_loader l = {.fails_left = 100, .status = TIRX_E_COMPILE};
  cr_assert_eq(tirx__variant_cache_key(rt, k, 1, b->plan.spec, &l.bad_key), TIRX_OK);
  tirx__runtime_set_loader(rt, flaky_load, &l);
  tirx_launch_info info;
  tiered_select(rt, k, b, &info);
  cr_assert_eq(tirx_runtime_drain(rt, -1), TIRX_OK);
  usleep((TIRX__RETRY_BASE_MS + 100) * 1000);
  for (int i = 0; i < 3; i++) {
    tiered_select(rt, k, b, &info);
    cr_assert(info.fell_back);
    cr_assert_str_eq(info.background_error, "tirx_launch: the fake driver refused the module");
  }
  cr_assert_eq(tirx_runtime_drain(rt, -1), TIRX_OK);
  cr_assert_eq(stats(rt).compiles, 2);
  tirx_runtime_destroy(rt);
  free(b);
  tirx_kernel_release(k);
}

Test(capture, a_host_context_needs_a_device_runtime) {
  tirx_runtime *rt = (tirx_runtime *)&rt;
  int fake_ctx;
  expect_error(tirx_runtime_create(&(tirx_runtime_options){.context = &fake_ctx,
                                                           .compile_only = true},
                                   &rt),
               TIRX_E_INVALID_ARG,
               "tirx_runtime_create: options->context is set but options->compile_only is true");
  cr_assert_null(rt);
  /* Without a driver the context is never touched: a runtime without a device. */
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.context = &fake_ctx,
                                                           .driver_library =
                                                               "/nonexistent/libcuda.so.1"},
                                   &rt),
               TIRX_OK, "%s", tirx_last_error());
  cr_assert(!tirx_runtime_has_device(rt));
  cr_assert_null(tirx_runtime_context(rt));
  tirx_runtime_destroy(rt);
}
