/*
 * The runtime's kernel cache without a GPU (src/jit/variant.c): compile-only warm-up publishes
 * to disk; a second runtime and a second process find every variant there with no compile and
 * without starting the compile queue (the disk is read on the calling thread); concurrent disk
 * loads of one variant read it once, of one key keep one module;
 * corruption is caught before the bytes reach the loader (T3, through an interposed loader);
 * 8 processes x 8 threads on one fresh directory (T1, scaled); tiered selection with a fake
 * loader; futures (poll, wait, timeout, callbacks exactly once, cancel, shutdown with pending
 * work); a fork child's clean errors; exact messages for bad arguments.
 *
 * Processes that need libuv after a fork are forked before this test process first uses it
 * (libuv's pool threads do not survive fork, FM-29), and leave with _exit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../helpers.h"
#include "cache/store.h"
#include "jit/jit.h"

TestSuite(cache_runtime, .timeout = 240);

/* ---- fixtures ---- */

/* x[i] = op(x[i]) for i < n, with n under the given policy. */
static tirx_kernel *policy_kernel(const char *name, tirx_specialize policy, bool scale) {
  tirx_builder *b = tirx_builder_create(name);
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_set_policy(b, n, policy);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 64)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 64)),
                                           tirx_thread_idx(b, 0)));
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_expr *v = tirx_load(b, x, TIRX_EXPRS(i));
  tirx_store(b, x, TIRX_EXPRS(i),
             scale ? tirx_mul(b, v, tirx_float(b, 2.0, TIRX_F32))
                   : tirx_add(b, v, tirx_float(b, 1.0, TIRX_F32)));
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* x[i] = 2 * x[i], n specialised on its value: one variant per n. */
static tirx_kernel *scale_kernel(void) {
  return policy_kernel("cache_scale", TIRX_SPECIALIZE_VALUE, true);
}

/* x[i] = x[i] + 1, n specialised on its divisibility by 16: variant {0} (n % 16 != 0) has the
 * dynamic variant's source, so two variants share one cache key. */
static tirx_kernel *div16_kernel(void) {
  return policy_kernel("cache_div16", TIRX_SPECIALIZE_DIV16, false);
}

#define FAKE_PTR ((void *)(uintptr_t)0x10000)

/* Launch arguments binding n (shape only; the data pointer is never read). */
typedef struct binding {
  int64_t shape[1];
  tirx_arg args[1];
} binding;

static void bind_n(binding *b, int64_t n) {
  b->shape[0] = n;
  b->args[0] = tirx_arg_tensor(FAKE_PTR, TIRX_F32, 1, b->shape, NULL);
}

/* Warms up variants n = base, base + 16, ... (count of them) and asserts success. */
static void warm(tirx_runtime *rt, const tirx_kernel *k, int64_t base, int count) {
  binding *bs = calloc((size_t)count, sizeof *bs);
  const tirx_arg **lists = calloc((size_t)count, sizeof *lists);
  int *nargs = calloc((size_t)count, sizeof *nargs);
  for (int i = 0; i < count; i++) {
    bind_n(&bs[i], base + 16 * i);
    lists[i] = bs[i].args;
    nargs[i] = 1;
  }
  cr_assert_eq(tirx_runtime_warmup(rt, k, lists, nargs, count), TIRX_OK, "%s", tirx_last_error());
  free(bs);
  free(lists);
  free(nargs);
}

static tirx_runtime *compile_only(const char *dir, const tirx_runtime_options *extra) {
  tirx_runtime_options o = extra ? *extra : (tirx_runtime_options){0};
  o.compile_only = true;
  o.cache_dir = dir;
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

static void make_dir(char *buf, size_t len) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, len, "%s/tirx-rtcache-XXXXXX", t && t[0] ? t : "/tmp");
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

/* Entry files (32 hex digits) and temp files (".tmp.") in dir; entry names sorted into names. */
static int scan_dir(const char *dir, char names[][40], int max, int *temps) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
  int n = 0, t = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strncmp(de->d_name, ".tmp", 4) == 0)
      t++;
    else if (strlen(de->d_name) == 32 && n < max)
      snprintf(names[n++], 40, "%s", de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
  if (temps)
    *temps = t;
  return n;
}

/* ---- an interposed loader ---- */

enum { MAX_REF = 64 };

/* Records the first image seen per cache key (the reference: a fresh NVRTC compile) and counts
 * every later image that differs from it (a corrupt load). Optionally blocks every image but
 * the one of `open_key` until the gate opens. */
typedef struct fake_loader {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int nref;
  tirx__cache_key keys[MAX_REF];
  unsigned char *images[MAX_REF];
  size_t sizes[MAX_REF];
  int loads, mismatches, not_elf;
  int entered; /* calls that reached the loader (counted before the gate) */
  bool gated, gate_open;
  tirx__cache_key open_key;
} fake_loader;

static void loader_init(fake_loader *l) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
}

static void loader_free(fake_loader *l) {
  for (int i = 0; i < l->nref; i++)
    free(l->images[i]);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
}

static void loader_open_gate(fake_loader *l) {
  pthread_mutex_lock(&l->mu);
  l->gate_open = true;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

/* Waits until n calls have reached the loader. */
static void loader_wait_entered(fake_loader *l, int n) {
  pthread_mutex_lock(&l->mu);
  while (l->entered < n)
    pthread_cond_wait(&l->cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
}

static tirx_status fake_load(tirx_runtime *rt, void *user, const char *fn,
                             const tirx__cache_key *key, const void *image, size_t size,
                             const char *entry, CUmodule *module, CUfunction *function) {
  (void)rt;
  (void)fn;
  (void)entry;
  fake_loader *l = user;
  pthread_mutex_lock(&l->mu);
  l->entered++;
  pthread_cond_broadcast(&l->cv);
  while (l->gated && !l->gate_open && !tirx__cache_key_equal(key, &l->open_key))
    pthread_cond_wait(&l->cv, &l->mu);
  l->loads++;
  if (size < 4 || memcmp(image, "\x7f" "ELF", 4) != 0)
    l->not_elf++;
  int i = 0;
  while (i < l->nref && !tirx__cache_key_equal(&l->keys[i], key))
    i++;
  if (i == l->nref && i < MAX_REF) {
    l->keys[i] = *key;
    l->images[i] = malloc(size);
    memcpy(l->images[i], image, size);
    l->sizes[i] = size;
    l->nref++;
  } else if (i < MAX_REF && (l->sizes[i] != size || memcmp(l->images[i], image, size) != 0)) {
    l->mismatches++;
  }
  /* Distinct fake handles per key (never dereferenced: nothing is launched). */
  *module = (CUmodule)(uintptr_t)(0x1000 + 16 * i);
  *function = (CUfunction)(uintptr_t)(0x2000 + 16 * i);
  pthread_mutex_unlock(&l->mu);
  return TIRX_OK;
}

/* ---- compile-only warm-up, a second runtime, a second process ---- */

Test(cache_runtime, warmup_publishes_and_a_second_runtime_compiles_nothing) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  tirx_runtime *rt = compile_only(dir, NULL);
  cr_assert_str_eq(tirx_runtime_cache_dir(rt), dir);
  warm(rt, k, 16, 4);
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(s.compiles, 4);
  cr_assert_eq(s.misses, 4);
  cr_assert_eq(s.hits, 0);
  cr_assert_eq(s.variants, 4);
  cr_assert_eq(s.corrupt_detected, 0);
  cr_assert_eq(s.publish_failed, 0);
  cr_assert(s.nvrtc_millis > 0);
  /* Again in the same runtime: the memory table answers. */
  warm(rt, k, 16, 4);
  cr_assert_eq(stats(rt).compiles, 4);
  cr_assert_eq(stats(rt).misses, 4);
  tirx_runtime_destroy(rt);

  char names[8][40];
  int temps = -1;
  cr_assert_eq(scan_dir(dir, names, 8, &temps), 4);
  cr_assert_eq(temps, 0);

  rt = compile_only(dir, NULL);
  warm(rt, k, 16, 4);
  s = stats(rt);
  cr_assert_eq(s.compiles, 0, "a second runtime compiled %llu variants",
               (unsigned long long)s.compiles);
  cr_assert_eq(s.hits, 4);
  cr_assert_eq(s.misses, 0);
  /* A new variant still compiles (and only it). */
  warm(rt, k, 16, 5);
  cr_assert_eq(stats(rt).compiles, 1);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  rm_dir(dir);
}

/* The child: wait for the go byte, warm the same variants, report the counters. */
static void second_process(int go_fd, int out_fd, const char *dir) {
  char c;
  if (read(go_fd, &c, 1) != 1)
    _exit(3);
  tirx_kernel *k = scale_kernel();
  tirx_runtime_options o = {.compile_only = true, .cache_dir = dir, .cache_no_fsync = true};
  tirx_runtime *rt = NULL;
  if (tirx_runtime_create(&o, &rt) != TIRX_OK)
    _exit(4);
  binding bs[4];
  const tirx_arg *lists[4];
  int nargs[4];
  for (int i = 0; i < 4; i++) {
    bind_n(&bs[i], 16 + 16 * i);
    lists[i] = bs[i].args;
    nargs[i] = 1;
  }
  if (tirx_runtime_warmup(rt, k, lists, nargs, 4) != TIRX_OK)
    _exit(5);
  tirx_cache_stats s = {0};
  tirx_runtime_cache_stats(rt, &s);
  bool queue = tirx__runtime_queue_started(rt);
  if (write(out_fd, &s, sizeof s) != (ssize_t)sizeof s ||
      write(out_fd, &queue, sizeof queue) != (ssize_t)sizeof queue)
    _exit(6);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  _exit(0);
}

Test(cache_runtime, a_second_process_launches_from_disk_with_zero_compiles) {
  char dir[256];
  make_dir(dir, sizeof dir);
  int go[2], res[2];
  cr_assert_eq(pipe(go), 0);
  cr_assert_eq(pipe(res), 0);
  pid_t pid = fork(); /* before this process uses libuv */
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(go[1]);
    close(res[0]);
    second_process(go[0], res[1], dir);
  }
  close(go[0]);
  close(res[1]);
  tirx_kernel *k = scale_kernel();
  tirx_runtime *rt = compile_only(dir, NULL);
  warm(rt, k, 16, 4);
  cr_assert_eq(stats(rt).compiles, 4);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  cr_assert_eq(write(go[1], "g", 1), 1);
  tirx_cache_stats s = {0};
  memset(&s, 0xff, sizeof s);
  ssize_t got = read(res[0], &s, sizeof s);
  bool queue = true;
  ssize_t got_queue = read(res[0], &queue, sizeof queue);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
  cr_assert_eq(got, (ssize_t)sizeof s);
  cr_assert_eq(got_queue, (ssize_t)sizeof queue);
  cr_assert_eq(s.compiles, 0, "the second process compiled %llu", (unsigned long long)s.compiles);
  cr_assert_eq(s.hits, 4);
  cr_assert_eq(s.misses, 0);
  cr_assert_eq(s.corrupt_detected, 0);
  cr_assert(!queue, "the second process started the compile queue");
  close(go[1]);
  close(res[0]);
  rm_dir(dir);
}

/* ---- the disk path runs on the calling thread ---- */

/* Fills dir with variants n = 16, 32, ... (count of them) from a compile-only runtime. */
static void fill(const char *dir, const tirx_kernel *k, int count) {
  tirx_runtime *rt = compile_only(dir, NULL);
  warm(rt, k, 16, count);
  cr_assert_eq(stats(rt).compiles, (uint64_t)count);
  cr_assert(tirx__runtime_queue_started(rt));
  tirx_runtime_destroy(rt);
}

Test(cache_runtime, a_warm_cache_never_starts_the_queue) {
  enum { K = 6 };
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  fill(dir, k, K);

  fake_loader l;
  loader_init(&l);
  tirx_runtime *rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, fake_load, &l);
  cr_assert(!tirx__runtime_queue_started(rt));
  /* The launch path (tirx_launch's miss without a GPU): ready when it returns. */
  binding b;
  bind_n(&b, 16);
  static tirx__launch_plan plan;
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", b.args, 1, &plan), TIRX_OK, "%s",
               tirx_last_error());
  tirx__module *m = NULL;
  cr_assert_eq(tirx__runtime_select(rt, k, &plan, "tirx_launch", &m), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_not_null(m);
  cr_assert_not_null(m->function);
  tirx__cache_key key;
  cr_assert_eq(tirx__variant_cache_key(rt, k, plan.nspec, plan.spec, &key), TIRX_OK);
  cr_assert(tirx__cache_key_equal(&m->ckey, &key));
  uint64_t kh[2];
  tirx__kernel_hash(k, kh);
  tirx__variant *v = tirx__variant_lookup(rt, kh, tirx__variant_hash(kh, 1, plan.spec), 1,
                                          plan.spec);
  cr_assert_not_null(v);
  cr_assert_eq(atomic_load(&v->state), TIRX__VARIANT_READY);
  /* tirx_prepare_async: a future that is finished at once. */
  bind_n(&b, 32);
  tirx_future *f = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b.args, 1, &f), TIRX_OK, "%s", tirx_last_error());
  cr_assert(tirx_future_poll(f));
  cr_assert_eq(tirx_future_status(f), TIRX_OK);
  tirx_future_release(f);
  /* Warm-up of all of them (two in memory already). */
  warm(rt, k, 16, K);
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(s.compiles, 0);
  cr_assert_eq(s.hits, K);
  cr_assert_eq(s.misses, 0);
  cr_assert_eq(s.loads, K);
  cr_assert_eq(s.variants, K);
  cr_assert_eq(s.dedup_joined, 0);
  cr_assert_eq(l.loads, K);
  cr_assert_eq(l.not_elf, 0);
  cr_assert(!tirx__runtime_queue_started(rt), "a runtime that only hit the disk started the queue");
  /* The first variant that is not on disk starts it. */
  warm(rt, k, 16, K + 1);
  cr_assert_eq(stats(rt).compiles, 1);
  cr_assert_eq(stats(rt).misses, 1);
  cr_assert(tirx__runtime_queue_started(rt));
  tirx_runtime_destroy(rt);
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

typedef struct select_thread {
  tirx_runtime *rt;
  const tirx_kernel *k;
  const tirx__launch_plan *plan;
  tirx__module *m;
  tirx_status st;
} select_thread;

static void *select_worker(void *p) {
  select_thread *t = p;
  t->st = tirx__runtime_select(t->rt, t->k, t->plan, "tirx_launch", &t->m);
  return NULL;
}

Test(cache_runtime, threads_missing_one_variant_read_the_disk_once) {
  enum { N = 6 };
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  fill(dir, k, 1);
  fake_loader l;
  loader_init(&l);
  l.gated = true;
  memset(&l.open_key, 0xee, sizeof l.open_key);
  tirx_runtime *rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, fake_load, &l);
  binding b;
  bind_n(&b, 16);
  static tirx__launch_plan plan;
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", b.args, 1, &plan), TIRX_OK);
  select_thread ts[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    ts[i] = (select_thread){rt, k, &plan, NULL, TIRX_E_INTERNAL};
    cr_assert_eq(pthread_create(&th[i], NULL, select_worker, &ts[i]), 0);
  }
  loader_wait_entered(&l, 1); /* one thread loads; the others wait for it */
  usleep(50 * 1000);
  loader_open_gate(&l);
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(ts[i].st, TIRX_OK, "thread %d", i);
    cr_assert_eq(ts[i].m, ts[0].m);
  }
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(l.entered, 1, "the variant was read from disk %d times", l.entered);
  cr_assert_eq(s.hits, 1);
  cr_assert_eq(s.loads, 1);
  cr_assert_eq(s.compiles, 0);
  cr_assert(!tirx__runtime_queue_started(rt));
  tirx_runtime_destroy(rt);
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

Test(cache_runtime, two_disk_loads_of_one_key_keep_one_module) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = div16_kernel();
  /* Variant {0} (n = 17) and the dynamic variant have one source, so one key. */
  binding b;
  bind_n(&b, 17);
  static tirx__launch_plan spec0, dyn;
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", b.args, 1, &spec0), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_eq(spec0.nspec, 1);
  cr_assert_eq(spec0.spec[0], 0);
  dyn = spec0;
  dyn.nspec = 0;
  {
    tirx_runtime *rt = compile_only(dir, NULL);
    const tirx_arg *lists[] = {b.args};
    cr_assert_eq(tirx_runtime_warmup(rt, k, lists, (int[]){1}, 1), TIRX_OK, "%s",
                 tirx_last_error());
    tirx__cache_key a, c;
    cr_assert_eq(tirx__variant_cache_key(rt, k, 1, spec0.spec, &a), TIRX_OK);
    cr_assert_eq(tirx__variant_cache_key(rt, k, 0, NULL, &c), TIRX_OK);
    cr_assert(tirx__cache_key_equal(&a, &c));
    tirx_runtime_destroy(rt);
  }
  fake_loader l;
  loader_init(&l);
  l.gated = true;
  memset(&l.open_key, 0xee, sizeof l.open_key);
  tirx_runtime *rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, fake_load, &l);
  select_thread ts[2] = {{rt, k, &spec0, NULL, TIRX_E_INTERNAL},
                         {rt, k, &dyn, NULL, TIRX_E_INTERNAL}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, select_worker, &ts[i]), 0);
  loader_wait_entered(&l, 2); /* both variants were read from disk and are in the loader */
  loader_open_gate(&l);
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(ts[i].st, TIRX_OK, "thread %d: %s", i, tirx_last_error());
  }
  cr_assert_eq(ts[0].m, ts[1].m, "two modules for one key");
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(l.loads, 2);
  cr_assert_eq(s.hits, 2);
  cr_assert_eq(s.loads, 1); /* the loser was dropped */
  cr_assert_eq(s.compiles, 0);
  cr_assert_eq(s.variants, 2);
  pthread_mutex_lock(&rt->mu);
  size_t modules = 0;
  for (tirx__module *m = rt->modules; m; m = m->next)
    modules++;
  cr_assert_eq(modules, 1);
  cr_assert_eq(rt->nloaded, 1);
  pthread_mutex_unlock(&rt->mu);
  cr_assert(!tirx__runtime_queue_started(rt));
  tirx_runtime_destroy(rt);
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

Test(cache_runtime, the_default_directory_is_created_by_the_first_kernel_only) {
  char home[256], cache[512], named[512];
  make_dir(home, sizeof home);
  snprintf(cache, sizeof cache, "%s/.cache", home);
  snprintf(named, sizeof named, "%s/named", home);
  setenv("HOME", home, 1);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("TIRX_CACHE_DIR");
  tirx_kernel *k = scale_kernel();
  /* The default directory: nothing on disk until a kernel is prepared. */
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(s.hits + s.misses + s.compiles, 0);
  cr_assert(!exists(cache), "runtime creation created %s", cache);
  warm(rt, k, 16, 1);
  cr_assert(exists(cache));
  tirx_runtime_destroy(rt);
  /* A directory named in the options is opened (created) with the runtime. */
  cr_assert(!exists(named));
  cr_assert_eq(tirx_runtime_create(
                   &(tirx_runtime_options){.compile_only = true, .cache_dir = named}, &rt),
               TIRX_OK);
  cr_assert(exists(named));
  cr_assert(!tirx__runtime_queue_started(rt));
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  rm_dir(named);
  char tirx_dir[600];
  snprintf(tirx_dir, sizeof tirx_dir, "%s/tirx", cache);
  rm_dir(tirx_dir);
  rmdir(cache);
  rmdir(home);
}

/* ---- T3: corruption is caught before the loader ---- */

/* Corrupts the entry file at path in way w (0..7). */
static void corrupt(const char *path, int w) {
  int fd = open(path, O_RDWR);
  cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
  struct stat st;
  cr_assert_eq(fstat(fd, &st), 0);
  size_t size = (size_t)st.st_size;
  unsigned char *buf = malloc(size + 64);
  cr_assert_eq(pread(fd, buf, size, 0), (ssize_t)size);
  uint32_t arch_len;
  uint64_t meta_len, payload_len;
  memcpy(&arch_len, buf + 12, 4);
  memcpy(&meta_len, buf + 40, 8);
  memcpy(&payload_len, buf + 48, 8);
  size_t payload = TIRX__STORE_HEADER_BYTES + arch_len + meta_len;
  cr_assert_eq(payload + payload_len + TIRX__STORE_TRAILER_BYTES, size, "unexpected layout");
  switch (w) {
  case 0: /* truncated to nothing */
    cr_assert_eq(ftruncate(fd, 0), 0);
    break;
  case 1: /* truncated in the middle of the payload */
    cr_assert_eq(ftruncate(fd, (off_t)(payload + payload_len / 2)), 0);
    break;
  case 2: /* one bit flipped in the payload */
    buf[payload + payload_len / 3] ^= 0x10;
    cr_assert_eq(pwrite(fd, buf + payload + payload_len / 3, 1, (off_t)(payload + payload_len / 3)),
                 1);
    break;
  case 3: /* the payload zero-filled, length kept (ext4 delalloc after a power cut) */
    memset(buf + payload, 0, payload_len);
    cr_assert_eq(pwrite(fd, buf + payload, payload_len, (off_t)payload), (ssize_t)payload_len);
    break;
  case 4: /* garbage appended */
    memset(buf, 0xa5, 64);
    cr_assert_eq(pwrite(fd, buf, 64, (off_t)size), 64);
    break;
  case 5: /* one bit flipped in the magic */
    buf[1] ^= 1;
    cr_assert_eq(pwrite(fd, buf + 1, 1, 1), 1);
    break;
  case 6: /* one bit flipped in the checksum */
    buf[size - 1] ^= 0x80;
    cr_assert_eq(pwrite(fd, buf + size - 1, 1, (off_t)(size - 1)), 1);
    break;
  default: /* the key echo changed */
    buf[16] ^= 0xff;
    cr_assert_eq(pwrite(fd, buf + 16, 1, 16), 1);
    break;
  }
  free(buf);
  close(fd);
}

Test(cache_runtime, corrupt_entries_never_reach_the_loader) {
  enum { K = 8 };
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  fake_loader l;
  loader_init(&l);

  /* Fill: the loader records each fresh compile's cubin as the reference. */
  tirx_runtime *rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, fake_load, &l);
  warm(rt, k, 16, K);
  cr_assert_eq(stats(rt).compiles, K);
  cr_assert_eq(stats(rt).loads, K);
  cr_assert_eq(l.nref, K);
  tirx_runtime_destroy(rt);

  char names[K + 4][40];
  cr_assert_eq(scan_dir(dir, names, K + 4, NULL), K);
  for (int i = 0; i < K; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    corrupt(path, i);
  }

  /* Every corrupt entry is detected, removed and recompiled; the loader sees only good bytes. */
  rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, fake_load, &l);
  warm(rt, k, 16, K);
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(s.corrupt_detected, K, "detected %llu of %d", (unsigned long long)s.corrupt_detected,
               K);
  cr_assert_eq(s.compiles, K);
  cr_assert_eq(s.hits, 0);
  cr_assert_eq(l.mismatches, 0, "%d corrupt images reached the loader", l.mismatches);
  cr_assert_eq(l.not_elf, 0);
  tirx_runtime_destroy(rt);

  /* The rewritten entries are good. */
  rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, fake_load, &l);
  warm(rt, k, 16, K);
  s = stats(rt);
  cr_assert_eq(s.hits, K);
  cr_assert_eq(s.compiles, 0);
  cr_assert_eq(s.corrupt_detected, 0);
  cr_assert_eq(l.mismatches, 0);
  cr_assert_eq(l.loads, 3 * K);
  tirx_runtime_destroy(rt);
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

/* ---- T1, scaled: 8 processes x 8 threads, one fresh directory per round ---- */

enum { T1_PROCS = 8, T1_THREADS = 8, T1_KEYS = 4, T1_ROUNDS = 2 };

typedef struct t1_thread {
  tirx_runtime *rt;
  const tirx_kernel *k;
  int index;
  int failures;
} t1_thread;

static void *t1_worker(void *p) {
  t1_thread *t = p;
  for (int j = 0; j < T1_KEYS; j++) {
    binding b;
    bind_n(&b, 16 + 16 * ((j + t->index) % T1_KEYS)); /* each thread its own order */
    tirx_future *f = NULL;
    if (tirx_prepare_async(t->rt, t->k, b.args, 1, &f) != TIRX_OK ||
        tirx_future_wait(f, -1) != TIRX_OK)
      t->failures++;
    tirx_future_release(f);
  }
  return NULL;
}

/* NVRTC runs of every process of a round (shared memory, set up before the fork). */
static _Atomic uint64_t *t1_compiles;

/* Exit code: 0 good, 10 + reason otherwise. */
static void t1_process(int go_fd, const char *dir) {
  char c;
  if (read(go_fd, &c, 1) != 1)
    _exit(11);
  tirx_kernel *k = scale_kernel();
  tirx_runtime_options o = {.compile_only = true, .cache_dir = dir};
  tirx_runtime *rt = NULL;
  if (tirx_runtime_create(&o, &rt) != TIRX_OK)
    _exit(12);
  t1_thread ts[T1_THREADS];
  pthread_t th[T1_THREADS];
  for (int i = 0; i < T1_THREADS; i++) {
    ts[i] = (t1_thread){rt, k, i, 0};
    if (pthread_create(&th[i], NULL, t1_worker, &ts[i]) != 0)
      _exit(13);
  }
  int failures = 0;
  for (int i = 0; i < T1_THREADS; i++) {
    pthread_join(th[i], NULL);
    failures += ts[i].failures;
  }
  tirx_cache_stats s = {0};
  tirx_runtime_cache_stats(rt, &s);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  atomic_fetch_add(t1_compiles, s.compiles);
  if (failures)
    _exit(14);
  if (s.compiles > T1_KEYS)
    _exit(15); /* more than one compile per key in this process */
  if (s.corrupt_detected)
    _exit(16);
  if (s.hits + s.compiles != T1_KEYS)
    _exit(17);
  _exit(0);
}

Test(cache_runtime, t1_processes_and_threads_share_a_fresh_directory, .timeout = 300) {
  t1_compiles = mmap(NULL, sizeof *t1_compiles, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq((void *)t1_compiles, MAP_FAILED);
  for (int round = 0; round < T1_ROUNDS; round++) {
    atomic_store(t1_compiles, 0);
    char dir[256];
    make_dir(dir, sizeof dir);
    int go[2];
    cr_assert_eq(pipe(go), 0);
    pid_t pids[T1_PROCS];
    for (int p = 0; p < T1_PROCS; p++) {
      pids[p] = fork(); /* this process never uses libuv */
      cr_assert_geq(pids[p], 0);
      if (pids[p] == 0) {
        close(go[1]);
        t1_process(go[0], dir);
      }
    }
    close(go[0]);
    char start[T1_PROCS];
    memset(start, 'g', sizeof start);
    cr_assert_eq(write(go[1], start, sizeof start), (ssize_t)sizeof start); /* the barrier */
    close(go[1]);
    int bad = 0;
    for (int p = 0; p < T1_PROCS; p++) {
      int status = 0;
      cr_assert_eq(waitpid(pids[p], &status, 0), pids[p]);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        cr_log_error("round %d process %d: status 0x%x (exit %d)", round, p, status,
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        bad++;
      }
    }
    cr_assert_eq(bad, 0, "round %d: %d of %d processes failed", round, bad, T1_PROCS);
    /* Single flight across processes (issue 18): per-key claims make the 8 processes compile
     * each new key once (a holder past a deadline could add one). */
    uint64_t total = atomic_load(t1_compiles);
    cr_log_info("round %d: %llu NVRTC runs for %d keys in %d processes", round,
                (unsigned long long)total, T1_KEYS, T1_PROCS);
    cr_assert_leq(total, T1_KEYS + 2, "round %d: %llu compiles for %d keys", round,
                  (unsigned long long)total, T1_KEYS);
    char names[T1_KEYS + 4][40];
    int temps = -1;
    cr_assert_eq(scan_dir(dir, names, T1_KEYS + 4, &temps), T1_KEYS);
    cr_assert_eq(temps, 0, "round %d: %d temp files left", round, temps);
    rm_dir(dir);
  }
  munmap((void *)t1_compiles, sizeof *t1_compiles);
}

/* ---- tiered selection (fake loader, no GPU) ---- */

Test(cache_runtime, tiered_runs_the_dynamic_variant_until_the_specialised_one_is_ready) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  fake_loader l;
  loader_init(&l);
  tirx_runtime *rt =
      compile_only(dir, &(tirx_runtime_options){.tiered = true, .max_parallel_compiles = 2});
  binding b;
  bind_n(&b, 48);
  static tirx__launch_plan plan;
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", b.args, 1, &plan), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_eq(plan.nspec, 1);
  cr_assert_eq(plan.spec[0], 48);
  tirx__cache_key dyn, spec;
  cr_assert_eq(tirx__variant_cache_key(rt, k, 0, NULL, &dyn), TIRX_OK);
  cr_assert_eq(tirx__variant_cache_key(rt, k, 1, plan.spec, &spec), TIRX_OK);
  cr_assert(!tirx__cache_key_equal(&dyn, &spec));
  /* Only the dynamic variant may load until the gate opens. */
  l.gated = true;
  l.open_key = dyn;
  tirx__runtime_set_loader(rt, fake_load, &l);

  tirx__module *m = NULL;
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(tirx__runtime_select(rt, k, &plan, "tirx_launch", &m), TIRX_OK, "%s",
                 tirx_last_error());
    cr_assert(tirx__cache_key_equal(&m->ckey, &dyn), "call %d did not run the dynamic variant", i);
    cr_assert_not_null(m->function);
  }
  cr_assert_eq(stats(rt).tiered_fallbacks, 3);
  loader_open_gate(&l);
  /* The specialised variant arrives; from then on every call uses it. */
  bool switched = false;
  for (int i = 0; i < 6000 && !switched; i++) {
    cr_assert_eq(tirx__runtime_select(rt, k, &plan, "tirx_launch", &m), TIRX_OK);
    switched = tirx__cache_key_equal(&m->ckey, &spec);
    if (!switched)
      usleep(10000);
  }
  cr_assert(switched, "the specialised variant never became ready");
  uint64_t fallbacks = stats(rt).tiered_fallbacks;
  for (int i = 0; i < 10; i++) {
    cr_assert_eq(tirx__runtime_select(rt, k, &plan, "tirx_launch", &m), TIRX_OK);
    cr_assert(tirx__cache_key_equal(&m->ckey, &spec));
  }
  cr_assert_eq(stats(rt).tiered_fallbacks, fallbacks);
  /* The hot path sees it too. */
  uint64_t kh[2];
  tirx__kernel_hash(k, kh);
  tirx__variant *v = tirx__variant_lookup(rt, kh, tirx__variant_hash(kh, 1, plan.spec), 1,
                                          plan.spec);
  cr_assert_not_null(v);
  cr_assert_eq(atomic_load(&v->state), TIRX__VARIANT_READY);
  cr_assert_eq(v->mod, m);
  cr_assert_eq(stats(rt).compiles, 2);
  tirx_runtime_destroy(rt);
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

Test(cache_runtime, without_tiering_a_miss_waits_for_the_specialised_variant) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  fake_loader l;
  loader_init(&l);
  tirx_runtime *rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, fake_load, &l);
  binding b;
  bind_n(&b, 64);
  static tirx__launch_plan plan;
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", b.args, 1, &plan), TIRX_OK);
  tirx__cache_key spec;
  cr_assert_eq(tirx__variant_cache_key(rt, k, plan.nspec, plan.spec, &spec), TIRX_OK);
  tirx__module *m = NULL;
  cr_assert_eq(tirx__runtime_select(rt, k, &plan, "tirx_launch", &m), TIRX_OK);
  cr_assert(tirx__cache_key_equal(&m->ckey, &spec));
  cr_assert_eq(stats(rt).tiered_fallbacks, 0);
  cr_assert_eq(stats(rt).compiles, 1);
  tirx_runtime_destroy(rt);
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

/* ---- futures ---- */

typedef struct cb_count {
  atomic_int calls, ok, cancelled;
} cb_count;

static void count_cb(tirx_future *f, tirx_status st, void *user) {
  (void)f;
  cb_count *c = user;
  atomic_fetch_add(&c->calls, 1);
  if (st == TIRX_OK)
    atomic_fetch_add(&c->ok, 1);
  if (st == TIRX_E_CANCELLED)
    atomic_fetch_add(&c->cancelled, 1);
}

Test(cache_runtime, futures_poll_wait_timeout_and_callbacks) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  fake_loader l;
  loader_init(&l);
  l.gated = true; /* every load waits for the gate */
  memset(&l.open_key, 0xee, sizeof l.open_key);
  tirx_runtime *rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, fake_load, &l);
  binding b;
  bind_n(&b, 32);
  tirx_future *f = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b.args, 1, &f), TIRX_OK, "%s", tirx_last_error());
  cr_assert(!tirx_future_poll(f));
  cr_assert_eq(tirx_future_status(f), TIRX_E_TIMEOUT);
  cr_assert_str_eq(tirx_future_message(f), "");
  expect_error(tirx_future_wait(f, 0), TIRX_E_TIMEOUT,
               "tirx_future_wait: the request has not finished after 0 ms");
  expect_error(tirx_future_wait(f, 30), TIRX_E_TIMEOUT,
               "tirx_future_wait: the request has not finished after 30 ms");
  cb_count c = {0};
  cr_assert_eq(tirx_future_on_complete(f, count_cb, &c), TIRX_OK);
  expect_error(tirx_future_on_complete(f, count_cb, &c), TIRX_E_INVALID_ARG,
               "tirx_future_on_complete: the future already has a completion callback");
  /* A second request for the same variant joins the first compile. */
  tirx_future *g = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b.args, 1, &g), TIRX_OK);
  loader_open_gate(&l);
  cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_future_wait(g, 60000), TIRX_OK, "%s", tirx_last_error());
  cr_assert(tirx_future_poll(f));
  cr_assert_eq(tirx_future_status(f), TIRX_OK);
  cr_assert_str_eq(tirx_future_message(f), "");
  cr_assert_eq(atomic_load(&c.calls), 1);
  cr_assert_eq(atomic_load(&c.ok), 1);
  /* The callback registered before completion ran; a second one, after it, is refused too
   * (it once slipped through because completion cleared the registration). */
  expect_error(tirx_future_on_complete(f, count_cb, &c), TIRX_E_INVALID_ARG,
               "tirx_future_on_complete: the future already has a completion callback");
  cr_assert_eq(atomic_load(&c.calls), 1);
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(s.compiles, 1);
  cr_assert_eq(s.dedup_joined, 1);
  /* A ready variant gives a finished future; its callback runs at once, once. */
  tirx_future *h = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b.args, 1, &h), TIRX_OK);
  cr_assert(tirx_future_poll(h));
  cr_assert_eq(tirx_future_wait(h, 0), TIRX_OK);
  cb_count c2 = {0};
  cr_assert_eq(tirx_future_on_complete(h, count_cb, &c2), TIRX_OK);
  cr_assert_eq(atomic_load(&c2.calls), 1);
  cr_assert_eq(tirx_future_cancel(h), TIRX_OK); /* finished: nothing to do */
  cr_assert_eq(tirx_future_status(h), TIRX_OK);
  tirx_future_release(f);
  tirx_future_release(g);
  tirx_future_release(h);
  tirx_runtime_destroy(rt);
  cr_assert_eq(atomic_load(&c.calls), 1);
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

Test(cache_runtime, cancel_a_queued_request) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  fake_loader l;
  loader_init(&l);
  l.gated = true;
  memset(&l.open_key, 0xee, sizeof l.open_key);
  tirx_runtime *rt = compile_only(dir, &(tirx_runtime_options){.max_parallel_compiles = 1});
  tirx__runtime_set_loader(rt, fake_load, &l);
  binding b1, b2;
  bind_n(&b1, 16);
  bind_n(&b2, 32);
  tirx_future *running = NULL, *queued = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b1.args, 1, &running), TIRX_OK);
  cr_assert_eq(tirx_prepare_async(rt, k, b2.args, 1, &queued), TIRX_OK);
  cb_count c = {0};
  cr_assert_eq(tirx_future_on_complete(queued, count_cb, &c), TIRX_OK);
  cr_assert_eq(tirx_future_cancel(queued), TIRX_OK);
  expect_error(tirx_future_wait(queued, -1), TIRX_E_CANCELLED,
               "tirx_future_cancel: the request was cancelled");
  cr_assert_str_eq(tirx_future_message(queued), "tirx_future_cancel: the request was cancelled");
  cr_assert_eq(atomic_load(&c.cancelled), 1);
  loader_open_gate(&l);
  cr_assert_eq(tirx_future_wait(running, -1), TIRX_OK);
  /* The cancelled variant can be asked for again. */
  tirx_future *again = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b2.args, 1, &again), TIRX_OK);
  cr_assert_eq(tirx_future_wait(again, -1), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(stats(rt).cancelled, 1);
  cr_assert_eq(atomic_load(&c.calls), 1);
  tirx_future_release(running);
  tirx_future_release(queued);
  tirx_future_release(again);
  tirx_runtime_destroy(rt);
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

static void *open_gate_later(void *p) {
  usleep(200 * 1000);
  loader_open_gate(p);
  return NULL;
}

Test(cache_runtime, destroy_with_pending_requests_calls_every_callback_once) {
  enum { N = 24 };
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  fake_loader l;
  loader_init(&l);
  l.gated = true;
  memset(&l.open_key, 0xee, sizeof l.open_key);
  tirx_runtime *rt = compile_only(dir, &(tirx_runtime_options){.max_parallel_compiles = 1});
  tirx__runtime_set_loader(rt, fake_load, &l);
  tirx_future *fs[N];
  cb_count c = {0};
  for (int i = 0; i < N; i++) {
    binding b;
    bind_n(&b, 16 * (i + 1));
    cr_assert_eq(tirx_prepare_async(rt, k, b.args, 1, &fs[i]), TIRX_OK, "%s", tirx_last_error());
    cr_assert_eq(tirx_future_on_complete(fs[i], count_cb, &c), TIRX_OK);
  }
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, open_gate_later, &l), 0);
  tirx_runtime_destroy(rt); /* waits for the running compile, cancels the rest */
  pthread_join(th, NULL);
  cr_assert_eq(atomic_load(&c.calls), N);
  cr_assert_eq(atomic_load(&c.ok) + atomic_load(&c.cancelled), N);
  cr_assert_geq(atomic_load(&c.cancelled), N - 2);
  int cancelled = 0;
  for (int i = 0; i < N; i++) {
    cr_assert(tirx_future_poll(fs[i]));
    if (tirx_future_status(fs[i]) == TIRX_E_CANCELLED) {
      cancelled++;
      cr_assert_str_eq(tirx_future_message(fs[i]),
                       "tirx_runtime_destroy: the runtime shut down before the request ran");
    }
    tirx_future_release(fs[i]); /* after the runtime is gone */
  }
  cr_assert_eq(cancelled, atomic_load(&c.cancelled));
  loader_free(&l);
  tirx_kernel_release(k);
  rm_dir(dir);
}

static atomic_int failing_loads;

static tirx_status failing_load(tirx_runtime *rt, void *user, const char *fn,
                                const tirx__cache_key *key, const void *image, size_t size,
                                const char *entry, CUmodule *module, CUfunction *function) {
  (void)rt, (void)user, (void)key, (void)image, (void)size, (void)module, (void)function;
  atomic_fetch_add(&failing_loads, 1);
  return tirx__error(TIRX_E_DRIVER, "%s: cuModuleLoadDataEx of '%s' failed (injected)", fn,
                     entry);
}

Test(cache_runtime, job_errors_reach_futures_and_warmup_and_are_retried) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  tirx_runtime *rt = compile_only(dir, NULL);
  tirx__runtime_set_loader(rt, failing_load, NULL);
  binding b;
  bind_n(&b, 16);
  tirx_future *f = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b.args, 1, &f), TIRX_OK);
  expect_error(tirx_future_wait(f, -1), TIRX_E_DRIVER,
               "tirx_prepare_async: cuModuleLoadDataEx of 'cache_scale' failed (injected)");
  cr_assert_eq(tirx_future_status(f), TIRX_E_DRIVER);
  cr_assert_str_eq(tirx_future_message(f),
                   "tirx_prepare_async: cuModuleLoadDataEx of 'cache_scale' failed (injected)");
  tirx_future_release(f);
  /* Not remembered as ready: the next request tries again; the entry on disk is refused by the
   * loader too (twice: on the calling thread, and by the compile job, which looks again when it
   * takes the key's claim in case another process replaced it), so it is compiled once more. */
  const tirx_arg *lists[] = {b.args};
  expect_error(tirx_runtime_warmup(rt, k, lists, (int[]){1}, 1), TIRX_E_DRIVER,
               "tirx_runtime_warmup: binding 0: cuModuleLoadDataEx of 'cache_scale' failed "
               "(injected)");
  cr_assert_eq(atomic_load(&failing_loads), 4);
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(s.compiles, 2);
  cr_assert_eq(s.hits, 2); /* the disk returned the (refused) entry twice */
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  rm_dir(dir);
}

/* ---- disk trouble and events ---- */

typedef struct event_log {
  atomic_int started, finished, hits, warnings;
} event_log;

static void on_event(const tirx_event *ev, void *user) {
  event_log *e = user;
  switch (ev->kind) {
  case TIRX_EVENT_COMPILE_STARTED: atomic_fetch_add(&e->started, 1); break;
  case TIRX_EVENT_COMPILE_FINISHED:
    atomic_fetch_add(&e->finished, 1);
    cr_expect_eq(strlen(ev->key), 32);
    cr_expect_str_eq(ev->kernel, "cache_scale");
    cr_expect(ev->nvrtc_millis > 0 && ev->millis >= ev->nvrtc_millis);
    break;
  case TIRX_EVENT_DISK_HIT: atomic_fetch_add(&e->hits, 1); break;
  case TIRX_EVENT_CACHE_WARNING: atomic_fetch_add(&e->warnings, 1); break;
  }
}

Test(cache_runtime, events_report_compiles_and_disk_hits) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  event_log e = {0};
  tirx_runtime_options o = {.on_event = on_event, .event_user = &e};
  tirx_runtime *rt = compile_only(dir, &o);
  warm(rt, k, 16, 2);
  cr_assert_eq(atomic_load(&e.started), 2);
  cr_assert_eq(atomic_load(&e.finished), 2);
  cr_assert_eq(atomic_load(&e.hits), 0);
  tirx_runtime_destroy(rt);
  rt = compile_only(dir, &o);
  warm(rt, k, 16, 2);
  cr_assert_eq(atomic_load(&e.hits), 2);
  cr_assert_eq(atomic_load(&e.started), 2);
  cr_assert_eq(atomic_load(&e.warnings), 0);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  rm_dir(dir);
}

Test(cache_runtime, a_read_only_directory_never_fails_a_compile) {
  if (geteuid() == 0)
    cr_skip_test("root ignores directory permissions");
  char dir[256];
  make_dir(dir, sizeof dir);
  cr_assert_eq(chmod(dir, 0500), 0);
  tirx_kernel *k = scale_kernel();
  event_log e = {0};
  tirx_runtime *rt = compile_only(dir, &(tirx_runtime_options){.on_event = on_event,
                                                                .event_user = &e});
  warm(rt, k, 16, 3);
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(s.compiles, 3);
  cr_assert_geq(s.publish_failed, 1);
  cr_assert_geq(atomic_load(&e.warnings), 1);
  tirx_runtime_destroy(rt);
  chmod(dir, 0700);
  tirx_kernel_release(k);
  rm_dir(dir);
}

Test(cache_runtime, a_disabled_cache_compiles_in_memory_only) {
  tirx_kernel *k = scale_kernel();
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true,
                                                            .cache_disabled = true},
                                   &rt),
               TIRX_OK);
  cr_assert_str_eq(tirx_runtime_cache_dir(rt), "");
  warm(rt, k, 16, 2);
  warm(rt, k, 16, 2);
  tirx_cache_stats s = stats(rt);
  cr_assert_eq(s.compiles, 2);
  cr_assert_eq(s.hits + s.misses, 0);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

/* ---- fork ---- */

static int forked_checks(tirx_runtime *rt, tirx_kernel *k, tirx_future *f, pid_t parent) {
  int bad = 0;
  char want[256];
#define EXPECT_FORKED(call, fname, what)                                                        \
  do {                                                                                         \
    tirx_clear_error();                                                                        \
    bad += (call) != TIRX_E_FORKED;                                                            \
    snprintf(want, sizeof want,                                                                \
             "%s: the %s was created in another process (pid %ld); a forked child cannot use " \
             "it",                                                                             \
             fname, what, (long)parent);                                                       \
    if (strcmp(tirx_last_error(), want) != 0) {                                                \
      fprintf(stderr, "child: got '%s'\nwant '%s'\n", tirx_last_error(), want);                \
      bad++;                                                                                   \
    }                                                                                          \
  } while (0)
  binding b;
  bind_n(&b, 16);
  tirx_future *g = NULL;
  EXPECT_FORKED(tirx_launch(rt, k, b.args, 1, NULL), "tirx_launch", "runtime");
  EXPECT_FORKED(tirx_prepare_async(rt, k, b.args, 1, &g), "tirx_prepare_async", "runtime");
  bad += g != NULL;
  const tirx_arg *lists[] = {b.args};
  EXPECT_FORKED(tirx_runtime_warmup(rt, k, lists, (int[]){1}, 1), "tirx_runtime_warmup",
                "runtime");
  tirx_cache_stats s = {0};
  EXPECT_FORKED(tirx_runtime_cache_stats(rt, &s), "tirx_runtime_cache_stats", "runtime");
  tirx_compiled *c = NULL;
  EXPECT_FORKED(tirx_compile(rt, k, NULL, &c), "tirx_compile", "runtime");
  EXPECT_FORKED(tirx_runtime_health(rt), "tirx_runtime_health", "runtime");
  void *p = NULL;
  EXPECT_FORKED(tirx_runtime_alloc(rt, 16, &p), "tirx_runtime_alloc", "runtime");
  EXPECT_FORKED(tirx_future_wait(f, -1), "tirx_future_wait", "future");
  EXPECT_FORKED(tirx_future_cancel(f), "tirx_future_cancel", "future");
  bad += tirx_future_status(f) != TIRX_E_FORKED;
  tirx_future_release(f);   /* leaves the parent's memory alone */
  tirx_runtime_destroy(rt); /* likewise */
#undef EXPECT_FORKED
  return bad;
}

Test(cache_runtime, a_fork_child_gets_clean_errors) {
  char dir[256];
  make_dir(dir, sizeof dir);
  tirx_kernel *k = scale_kernel();
  tirx_runtime *rt = compile_only(dir, NULL);
  warm(rt, k, 16, 1); /* the queue's threads are running */
  binding b;
  bind_n(&b, 16);
  tirx_future *f = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, b.args, 1, &f), TIRX_OK);
  pid_t parent = getpid();
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0)
    _exit(forked_checks(rt, k, f, parent) ? 1 : 0); /* _exit: see FM-29 */
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
  /* The parent is unaffected. */
  cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK);
  warm(rt, k, 16, 2);
  cr_assert_eq(stats(rt).compiles, 2);
  tirx_future_release(f);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  rm_dir(dir);
}

/* ---- bad arguments ---- */

Test(cache_runtime, bad_arguments_have_exact_messages) {
  tirx_kernel *k = scale_kernel();
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true,
                                                            .cache_disabled = true},
                                   &rt),
               TIRX_OK);
  binding b;
  bind_n(&b, 16);
  tirx_future *f = (tirx_future *)&f;
  expect_error(tirx_prepare_async(rt, k, b.args, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_prepare_async: out is NULL");
  expect_error(tirx_prepare_async(NULL, k, b.args, 1, &f), TIRX_E_NULL_ARG,
               "tirx_prepare_async: rt is NULL");
  cr_assert_null(f);
  expect_error(tirx_prepare_async(rt, NULL, b.args, 1, &f), TIRX_E_NULL_ARG,
               "tirx_prepare_async: kernel is NULL");
  expect_error(tirx_prepare_async(rt, k, b.args, -1, &f), TIRX_E_INVALID_ARG,
               "tirx_prepare_async: nargs is -1, expected >= 0");
  expect_error(tirx_prepare_async(rt, k, NULL, 1, &f), TIRX_E_NULL_ARG,
               "tirx_prepare_async: args is NULL but nargs is 1");

  const tirx_arg *lists[] = {b.args, NULL};
  expect_error(tirx_runtime_warmup(NULL, k, lists, (int[]){1}, 1), TIRX_E_NULL_ARG,
               "tirx_runtime_warmup: rt is NULL");
  expect_error(tirx_runtime_warmup(rt, NULL, lists, (int[]){1}, 1), TIRX_E_NULL_ARG,
               "tirx_runtime_warmup: kernel is NULL");
  expect_error(tirx_runtime_warmup(rt, k, lists, (int[]){1}, -1), TIRX_E_INVALID_ARG,
               "tirx_runtime_warmup: count is -1, expected >= 0");
  expect_error(tirx_runtime_warmup(rt, k, NULL, (int[]){1}, 1), TIRX_E_NULL_ARG,
               "tirx_runtime_warmup: arg_lists is NULL but count is 1");
  expect_error(tirx_runtime_warmup(rt, k, lists, NULL, 1), TIRX_E_NULL_ARG,
               "tirx_runtime_warmup: nargs is NULL but count is 1");
  expect_error(tirx_runtime_warmup(rt, k, lists, (int[]){1, -1}, 2), TIRX_E_INVALID_ARG,
               "tirx_runtime_warmup: binding 1: nargs[1] is -1, expected >= 0");
  expect_error(tirx_runtime_warmup(rt, k, lists, (int[]){1, 1}, 2), TIRX_E_NULL_ARG,
               "tirx_runtime_warmup: binding 1: arg_lists[1] is NULL but nargs[1] is 1");
  cr_assert_eq(tirx_runtime_warmup(rt, k, NULL, NULL, 0), TIRX_OK);
  /* A binding the kernel rejects: the plan's message, after the binding's index. */
  tirx_arg wrong = tirx_arg_tensor(FAKE_PTR, TIRX_F16, 1, b.shape, NULL);
  const tirx_arg *wl[] = {b.args, &wrong};
  tirx_clear_error();
  cr_assert_eq(tirx_runtime_warmup(rt, k, wl, (int[]){1, 1}, 2), TIRX_E_LAUNCH_ARG);
  cr_assert(strncmp(tirx_last_error(), "tirx_runtime_warmup: binding 1: argument", 40) == 0, "%s",
            tirx_last_error());

  tirx_cache_stats s = {0};
  expect_error(tirx_runtime_cache_stats(NULL, &s), TIRX_E_NULL_ARG,
               "tirx_runtime_cache_stats: rt is NULL");
  expect_error(tirx_runtime_cache_stats(rt, NULL), TIRX_E_NULL_ARG,
               "tirx_runtime_cache_stats: out is NULL");
  cr_assert_null(tirx_runtime_cache_dir(NULL));

  expect_error(tirx_future_wait(NULL, 0), TIRX_E_NULL_ARG, "tirx_future_wait: f is NULL");
  expect_error(tirx_future_cancel(NULL), TIRX_E_NULL_ARG, "tirx_future_cancel: f is NULL");
  expect_error(tirx_future_on_complete(NULL, count_cb, NULL), TIRX_E_NULL_ARG,
               "tirx_future_on_complete: f is NULL");
  cr_assert(!tirx_future_poll(NULL));
  cr_assert_eq(tirx_future_status(NULL), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_future_message(NULL), "");
  tirx_future_release(NULL);

  cr_assert_eq(tirx_prepare_async(rt, k, b.args, 1, &f), TIRX_OK, "%s", tirx_last_error());
  expect_error(tirx_future_wait(f, -2), TIRX_E_INVALID_ARG,
               "tirx_future_wait: timeout_ms is -2, expected >= -1");
  expect_error(tirx_future_on_complete(f, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_future_on_complete: cb is NULL");
  cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK);
  tirx_future_release(f);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}
