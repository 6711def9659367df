/*
 * The runtime's kernel cache: the memory table of variants, the miss path (disk store, then an
 * NVRTC compile on the compile queue, then the module loader), tiered selection, public futures,
 * warm-up and the counters.
 *
 * Memory table. A variant is (kernel content hash, specialisation key). The table is an
 * open-addressing array of variant pointers published as an immutable snapshot: a launch loads
 * the snapshot pointer (acquire), probes, and reads the variant's state (acquire); no lock, no
 * atomic read-modify-write, no allocation (tirx__variant_lookup in jit.h). Inserts happen under
 * rt->mu on the miss path only. Variants and snapshots are freed by tirx_runtime_destroy only.
 *
 * Miss path. The variant's source (tirx__kernel_variant_source) gives its cache key (key.h);
 * a runtime module with that key is reused at once (two specialisation keys may give one
 * source). Otherwise the calling thread looks the key up in the disk store (which validates
 * every byte before returning it) and hands a hit to the module loader itself: a variant on
 * disk is ready when the call returns, with no queue, no thread hand-off and no NVRTC (the
 * variant reads LOADING meanwhile and other threads that want it wait for the outcome). Only a
 * disk miss (or an entry the store or the loader rejected) becomes a request to the compile
 * queue, keyed by the cache key, so requests for one key share one job; the queue (a thread
 * and libuv's pool) is started by the first such request, so a process that finds everything
 * on disk never starts it. The job (on a libuv pool thread) looks for a module again, else
 * compiles with NVRTC, publishes to the store, hands the image to the loader and records the
 * module. The request's completion callback (queue thread) marks the variant READY. Recording
 * a module whose key another thread recorded first drops the newcomer (module_publish), and a
 * job for a key whose module exists returns it, so a runtime holds one module per key and
 * compiles each key at most once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../cache/queue.h"
#include "jit.h"
#include "workers.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- events ---- */

static void emit(tirx_runtime *rt, tirx_event_kind kind, const char *kernel,
                 const tirx__cache_key *key, tirx_status st, double ms, double nvrtc_ms,
                 const char *msg) {
  if (!rt->on_event)
    return;
  char hex[TIRX__CACHE_KEY_HEX + 1] = "";
  if (key)
    tirx__cache_key_hex(key, hex);
  tirx_event ev = {kind, kernel ? kernel : "", hex, st, ms, nvrtc_ms, msg ? msg : ""};
  rt->on_event(&ev, rt->event_user);
}

static void store_log(void *user, const char *msg) {
  tirx_runtime *rt = user;
  tirx__log(rt, 1, "cache: %s", msg);
  emit(rt, TIRX_EVENT_CACHE_WARNING, NULL, NULL, TIRX_OK, 0, 0, msg);
}

/* ---- the store and the queue, each created on first need ---- */

tirx_status tirx__runtime_store(tirx_runtime *rt, const char *fn) {
  if (TIRX_LIKELY(atomic_load_explicit(&rt->store_ready, memory_order_acquire)))
    return TIRX_OK;
  tirx_status st = TIRX_OK;
  pthread_mutex_lock(&rt->mu);
  if (!rt->store_ready) {
    if (!rt->cache_disabled) {
      /* A disabled store is not an error (the cache is best effort): keep the caller's last
       * error as it was. */
      tirx_status saved_st = tirx_last_status();
      char *saved = strdup(tirx_last_error());
      tirx__store_options so;
      tirx__store_options_init(&so);
      so.path = rt->cache_dir;
      so.max_bytes = rt->cache_max_bytes;
      so.fsync = rt->cache_fsync;
      so.log = store_log;
      so.log_user = rt;
      tirx__store *s = NULL;
      tirx__store_open(&so, &s);
      if (!s)
        st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory opening the disk cache", fn);
      else if (saved_st == TIRX_OK || !saved)
        tirx_clear_error();
      else
        tirx__error(saved_st, "%s", saved);
      free(saved);
      rt->store = s;
      if (s)
        tirx__log(rt, 1, "cache: %s%s%s", tirx__store_enabled(s) ? tirx__store_path(s) : "off",
                  tirx__store_enabled(s) ? "" : ": ", tirx__store_disabled_reason(s));
    }
    if (st == TIRX_OK)
      atomic_store_explicit(&rt->store_ready, true, memory_order_release);
  }
  pthread_mutex_unlock(&rt->mu);
  return st;
}

tirx_status tirx__runtime_queue(tirx_runtime *rt, const char *fn) {
  if (TIRX_LIKELY(atomic_load_explicit(&rt->queue_ready, memory_order_acquire)))
    return TIRX_OK;
  tirx_status st = TIRX_OK;
  pthread_mutex_lock(&rt->mu);
  if (!rt->queue_ready) {
    tirx__queue_options qo;
    tirx__queue_options_init(&qo);
    qo.max_in_flight = rt->max_parallel;
    if (!qo.max_in_flight && rt->worker_path) {
      /* With workers, a compile waits for its worker on one of libuv's threads: as many at once
       * as there are workers, leaving the host at least one of the pool's threads. */
      uint32_t pool = tirx__queue_pool_size(), half = (pool + 1) / 2;
      uint32_t cap = rt->worker_count < pool - 1 ? rt->worker_count : pool - 1;
      qo.max_in_flight = cap > half ? cap : half;
    }
    st = tirx__queue_create(&qo, &rt->queue);
    if (st != TIRX_OK)
      st = tirx__error(st, "%s: cannot start the compile queue: %s", fn, tirx_last_error());
    else
      atomic_store_explicit(&rt->queue_ready, true, memory_order_release);
  }
  pthread_mutex_unlock(&rt->mu);
  return st;
}

bool tirx__runtime_queue_started(const tirx_runtime *rt) {
  return rt && atomic_load_explicit(&rt->queue_ready, memory_order_acquire);
}

/* ---- modules and the memory table (under rt->mu) ---- */

static tirx__module *module_find_locked(tirx_runtime *rt, const tirx__cache_key *key) {
  for (tirx__module *m = rt->modules; m; m = m->next)
    if (tirx__cache_key_equal(&m->ckey, key))
      return m;
  return NULL;
}

static void vtable_put(tirx__vtable *t, tirx__variant *v) {
  size_t i = (size_t)v->h & t->mask;
  while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
    i = (i + 1) & t->mask;
  atomic_store_explicit(&t->slots[i], v, memory_order_release);
}

/* The variant for the identity, inserted when absent; NULL when out of memory. */
static tirx__variant *variant_intern_locked(tirx_runtime *rt, const uint64_t khash[2], uint64_t h,
                                            int nspec, const int64_t *spec) {
  tirx__variant *v = tirx__variant_lookup(rt, khash, h, nspec, spec);
  if (v)
    return v;
  tirx__vtable *t = atomic_load_explicit(&rt->vtable, memory_order_relaxed);
  if (!t || (rt->nvariants + 1) * 2 > t->mask + 1) {
    size_t n = t ? (t->mask + 1) * 2 : 64;
    tirx__vtable *nt = calloc(1, sizeof *nt + n * sizeof nt->slots[0]);
    if (!nt)
      return NULL;
    nt->mask = n - 1;
    nt->older = t;
    for (size_t i = 0; i < n; i++)
      atomic_init(&nt->slots[i], NULL);
    if (t)
      for (size_t i = 0; i <= t->mask; i++) {
        tirx__variant *old = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
        if (old)
          vtable_put(nt, old);
      }
    atomic_store_explicit(&rt->vtable, nt, memory_order_release);
    t = nt;
  }
  v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->khash[0] = khash[0];
  v->khash[1] = khash[1];
  v->h = h;
  v->nspec = nspec;
  if (nspec > 0)
    memcpy(v->spec, spec, (size_t)nspec * sizeof *spec);
  atomic_init(&v->state, TIRX__VARIANT_IDLE);
  vtable_put(t, v);
  rt->nvariants++;
  return v;
}

/* ---- sources and keys ---- */

static tirx_status source_and_key(const tirx_runtime *rt, const tirx_kernel *k, int nspec,
                                  const int64_t *spec, char **source, tirx__cache_key *key) {
  char *src = NULL;
  tirx_status st = tirx__kernel_variant_source(k, nspec, spec, &src);
  if (st != TIRX_OK)
    return st;
  char arch_opt[64];
  const char *opts[TIRX__NVRTC_MAX_OPTIONS];
  tirx__cache_key_input in;
  tirx__cache_key_input_init(&in);
  in.source = src;
  in.source_len = strlen(src);
  in.nvrtc_major = rt->nvrtc_major;
  in.nvrtc_minor = rt->nvrtc_minor;
  in.noptions = tirx__nvrtc_options(rt->arch, src, arch_opt, opts);
  in.options = opts;
  in.arch = rt->arch;
  st = tirx__cache_key_compute(&in, key);
  if (st != TIRX_OK || !source)
    free(src);
  else
    *source = src;
  return st;
}

tirx_status tirx__variant_cache_key(const tirx_runtime *rt, const tirx_kernel *k, int nspec,
                                    const int64_t *spec, tirx__cache_key *out) {
  return source_and_key(rt, k, nspec, spec, NULL, out);
}

/* ---- the module loader ---- */

tirx_status tirx__default_loader(tirx_runtime *rt, void *user, const char *fn,
                                 const tirx__cache_key *key, const void *image, size_t size,
                                 const char *entry, CUmodule *module, CUfunction *function) {
  (void)user;
  (void)key;
  (void)size;
  tirx_status st = tirx__runtime_ready(rt, fn);
  if (st != TIRX_OK)
    return st;
  tirx__ctx_guard g;
  if ((st = tirx__ctx_enter(rt, fn, &g)) != TIRX_OK)
    return st;
  char info[1024] = "", errlog[2048] = "";
  CUjit_option jo[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                       CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *jv[] = {info, (void *)(uintptr_t)sizeof info, errlog, (void *)(uintptr_t)sizeof errlog};
  CUresult r = rt->drv.ModuleLoadDataEx(module, image, 4, jo, jv);
  if (r != CUDA_SUCCESS) {
    tirx__ctx_leave(rt, &g);
    char what[2300];
    snprintf(what, sizeof what, "cuModuleLoadDataEx of '%.100s' for %s%s%s", entry, rt->arch,
             errlog[0] ? ": " : "", errlog);
    return tirx__driver_error(rt, fn, what, r);
  }
  r = rt->drv.ModuleGetFunction(function, *module, entry);
  if (r != CUDA_SUCCESS) {
    rt->drv.ModuleUnload(*module);
    *module = NULL;
    tirx__ctx_leave(rt, &g);
    char what[256];
    snprintf(what, sizeof what, "cuModuleGetFunction('%.100s')", entry);
    return tirx__driver_error(rt, fn, what, r);
  }
  tirx__ctx_leave(rt, &g);
  return TIRX_OK;
}

void tirx__runtime_set_loader(tirx_runtime *rt, tirx__loader_fn loader, void *user) {
  rt->loader = loader ? loader : (rt->has_device ? tirx__default_loader : NULL);
  rt->loader_user = user;
}

/* ---- publishing a loaded module ---- */

/* Unloads a module that lost a race (its key was loaded by another thread meanwhile). */
static void drop_module(tirx_runtime *rt, CUmodule module, const char *fn) {
  if (!module || !rt->has_device)
    return; /* nothing loaded, or a test loader's fake handle */
  tirx__ctx_guard g;
  if (tirx__ctx_enter(rt, fn, &g) != TIRX_OK)
    return; /* the context is gone (sticky): the module goes with it */
  rt->drv.ModuleUnload(module);
  tirx__ctx_leave(rt, &g);
}

/* Records the module the loader made for key (module and function NULL when nothing was loaded)
 * and returns it in *out. When another thread recorded one for key first (two variants with the
 * same source, or a disk load racing a compile), that one is returned and this one unloaded, so
 * a runtime holds one module per key. Takes rt->mu. Errors: TIRX_E_NO_MEMORY (module unloaded). */
static tirx_status module_publish(tirx_runtime *rt, const tirx__cache_key *key, CUmodule module,
                                  CUfunction function, const char *entry, const char *fn,
                                  tirx__module **out) {
  *out = NULL;
  tirx__module *m = calloc(1, sizeof *m);
  char *name = m ? strdup(entry) : NULL;
  if (!name) {
    free(m);
    drop_module(rt, module, fn);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  m->ckey = *key;
  m->module = module;
  m->function = function;
  m->entry = name;
  atomic_init(&m->smem_allowed, 48u * 1024u);
  pthread_mutex_lock(&rt->mu);
  tirx__module *won = module_find_locked(rt, key);
  if (!won) {
    m->next = rt->modules;
    rt->modules = m;
    if (module) {
      rt->nloaded++;
      atomic_fetch_add(&rt->loads, 1);
    }
  }
  pthread_mutex_unlock(&rt->mu);
  if (won) {
    tirx__log(rt, 1, "%s was loaded twice at once; keeping the first", entry);
    drop_module(rt, module, fn);
    free(m->entry);
    free(m);
    m = won;
  }
  *out = m;
  return TIRX_OK;
}

/* ---- the disk path of a miss (the calling thread) ---- */

/*
 * Looks key up in the disk store (every check of tirx__store_get: a corrupt or foreign entry is
 * counted, removed and reported as a miss, never handed on) and loads a hit through the
 * runtime's loader, on the calling thread: no queue, no NVRTC. *out receives the module on a
 * hit, NULL on a miss or when the loader refused the entry (the caller compiles then).
 * Errors: the loader's TIRX_E_STICKY and TIRX_E_FORKED (others turn into a recompile, as an
 * entry the driver refuses may come from a broken tool), TIRX_E_NO_MEMORY.
 */
static tirx_status disk_load(tirx_runtime *rt, const char *entry, const tirx__cache_key *key,
                             const char *fn, tirx__module **out) {
  *out = NULL;
  double t0 = now_ms();
  tirx__store_info info = {rt->arch, rt->nvrtc_major, rt->nvrtc_minor};
  tirx__store_entry ent;
  memset(&ent, 0, sizeof ent);
  if (!tirx__store_get(rt->store, key, &info, &ent))
    return TIRX_OK;
  atomic_fetch_add(&rt->disk_hits, 1);
  CUmodule module = NULL;
  CUfunction function = NULL;
  tirx_status st = TIRX_OK;
  if (rt->loader)
    st = rt->loader(rt, rt->loader_user, fn, key, ent.payload, ent.payload_len, entry, &module,
                    &function);
  tirx__store_entry_free(&ent);
  if (st != TIRX_OK) {
    if (st == TIRX_E_STICKY || st == TIRX_E_FORKED)
      return st;
    tirx__log(rt, 1, "cached %s refused by the loader (%s): recompiling", entry,
              tirx_last_error());
    return TIRX_OK;
  }
  st = module_publish(rt, key, module, function, entry, fn, out);
  if (st != TIRX_OK)
    return st;
  double ms = now_ms() - t0;
  tirx__log(rt, 1, "%s for %s from the disk cache in %.3f ms", entry, rt->arch, ms);
  emit(rt, TIRX_EVENT_DISK_HIT, entry, key, TIRX_OK, ms, 0, NULL);
  return TIRX_OK;
}

/* ---- the compile job (libuv pool thread) ---- */

typedef struct compile_job {
  tirx_runtime *rt;
  tirx_kernel *kernel; /* retained, for dumps */
  char *source;
  char *entry;
  tirx__cache_key ckey;
  char fn[48];
} compile_job;

static void job_free(void *p) {
  compile_job *j = p;
  tirx_kernel_release(j->kernel);
  free(j->source);
  free(j->entry);
  free(j);
}

/* How long a compile job waits for another process that holds the key's claim (it compiles
 * itself after that: a hung holder costs one duplicate compile, never a hang). */
enum { CLAIM_WAIT_MS = 120000 };

/* A claim's hit: the entry another process published while this job waited. Loaded like a disk
 * hit; false (compile instead) when the loader refuses it. */
static bool claim_hit_load(tirx_runtime *rt, compile_job *j, tirx__store_entry *hit,
                           tirx_status *st, void **result) {
  CUmodule module = NULL;
  CUfunction function = NULL;
  *st = TIRX_OK;
  if (rt->loader)
    *st = rt->loader(rt, rt->loader_user, j->fn, &j->ckey, hit->payload, hit->payload_len,
                     j->entry, &module, &function);
  tirx__store_entry_free(hit);
  if (*st != TIRX_OK && *st != TIRX_E_STICKY && *st != TIRX_E_FORKED)
    return false;
  atomic_fetch_add(&rt->disk_hits, 1);
  tirx__module *m = NULL;
  if (*st == TIRX_OK)
    *st = module_publish(rt, &j->ckey, module, function, j->entry, j->fn, &m);
  if (*st == TIRX_OK) {
    emit(rt, TIRX_EVENT_DISK_HIT, j->entry, &j->ckey, TIRX_OK, 0, 0, NULL);
    *result = m;
  }
  return true;
}

static tirx_status compile_claimed(tirx_runtime *rt, compile_job *j, const tirx__store_info *ip,
                                   double t0, void **result);

/* Compiles, publishes to the store, loads. The submitter has already looked in the store (or
 * the loader refused what it found there); the job takes the key's claim first
 * (tirx__store_claim), so that processes missing the same key compile it once: the others
 * wait for the entry on this pool thread, never on a launching thread. */
static tirx_status job_run(void *arg, void **result, char **message) {
  (void)message; /* failures leave their message as this thread's last error */
  compile_job *j = arg;
  tirx_runtime *rt = j->rt;
  double t0 = now_ms();
  pthread_mutex_lock(&rt->mu);
  tirx__module *m = module_find_locked(rt, &j->ckey);
  pthread_mutex_unlock(&rt->mu);
  if (m) {
    *result = m;
    return TIRX_OK;
  }
  tirx__store_info info = {rt->arch, rt->nvrtc_major, rt->nvrtc_minor};
  tirx__claim claim = {.fd = -1};
  if (rt->store && !atomic_load(&rt->failed)) {
    tirx__store_entry hit;
    if (tirx__store_claim(rt->store, &j->ckey, &info, CLAIM_WAIT_MS, &claim, &hit) ==
        TIRX__CLAIM_HIT) {
      tirx_status hst;
      if (claim_hit_load(rt, j, &hit, &hst, result))
        return hst;
    }
  }
  tirx_status st = compile_claimed(rt, j, &info, t0, result);
  tirx__store_claim_release(rt->store, &claim);
  return st;
}

/* The compile itself, with the claim (if any) held by job_run. */
static tirx_status compile_claimed(tirx_runtime *rt, compile_job *j, const tirx__store_info *ip,
                                   double t0, void **result) {
  tirx__store_info info = *ip;
  tirx__module *m = NULL;
  tirx__nvrtc_output out;
  memset(&out, 0, sizeof out);
  emit(rt, TIRX_EVENT_COMPILE_STARTED, j->entry, &j->ckey, TIRX_OK, 0, 0, NULL);
  atomic_fetch_add(&rt->compiles, 1);
  double c0 = now_ms();
  tirx_status st =
      tirx__runtime_nvrtc(rt, j->fn, j->entry, j->source, rt->arch, rt->dump_dir != NULL, &out);
  double nvrtc_ms = now_ms() - c0;
  atomic_fetch_add(&rt->nvrtc_ns, (uint64_t)(nvrtc_ms * 1e6));
  if (st != TIRX_OK) {
    atomic_fetch_add(&rt->compile_failures, 1);
    tirx__log(rt, 1, "compile of %s failed: %s", j->entry, tirx_last_error());
    emit(rt, TIRX_EVENT_COMPILE_FINISHED, j->entry, &j->ckey, st, now_ms() - t0, nvrtc_ms,
         tirx_last_error());
    return st;
  }
  if (rt->dump_dir) {
    char hex[TIRX__CACHE_KEY_HEX + 1];
    tirx__cache_key_hex(&j->ckey, hex);
    tirx__dump_variant(rt, j->kernel, j->source, rt->arch, hex, out.ptx);
  }
  /* Only what NVRTC accepted is published, and nothing after a fatal device error. */
  if (rt->store && !atomic_load(&rt->failed))
    tirx__store_put(rt->store, &j->ckey, &info, j->entry, strlen(j->entry), out.cubin,
                    out.cubin_size);
  CUmodule module = NULL;
  CUfunction function = NULL;
  if (rt->loader)
    st = rt->loader(rt, rt->loader_user, j->fn, &j->ckey, out.cubin, out.cubin_size, j->entry,
                    &module, &function);
  tirx__nvrtc_output_free(&out);
  if (st == TIRX_OK)
    st = module_publish(rt, &j->ckey, module, function, j->entry, j->fn, &m);
  double ms = now_ms() - t0;
  if (st != TIRX_OK) {
    emit(rt, TIRX_EVENT_COMPILE_FINISHED, j->entry, &j->ckey, st, ms, nvrtc_ms,
         tirx_last_error());
    return st;
  }
  tirx__log(rt, 1, "compiled %s for %s in %.1f ms (NVRTC %.1f ms)", j->entry, rt->arch, ms,
            nvrtc_ms);
  emit(rt, TIRX_EVENT_COMPILE_FINISHED, j->entry, &j->ckey, TIRX_OK, ms, nvrtc_ms, NULL);
  *result = m;
  return TIRX_OK;
}

/* ---- public futures ---- */

struct tirx_future {
  _Atomic int refs;
  pthread_mutex_t mu;
  bool done;
  tirx_status status;
  char *message;
  tirx_future_fn cb;
  void *cb_user;
  tirx__future *qf; /* the queue's request; NULL when finished at creation */
  long pid;
  unsigned fork_gen;
};

static tirx_future *future_new(const tirx_runtime *rt) {
  tirx_future *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  atomic_init(&f->refs, 1);
  pthread_mutex_init(&f->mu, NULL);
  f->pid = rt->pid;
  f->fork_gen = rt->fork_gen;
  return f;
}

static bool future_forked(const tirx_future *f) {
  return f->fork_gen != atomic_load_explicit(&tirx__fork_generation, memory_order_relaxed);
}

static void future_free(tirx_future *f) {
  tirx__future_release(f->qf);
  pthread_mutex_destroy(&f->mu);
  free(f->message);
  free(f);
}

static void future_unref(tirx_future *f) {
  if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1)
    future_free(f);
}

/* Finishes f (once) and calls its callback. */
static void future_complete(tirx_future *f, tirx_status st, const char *msg) {
  pthread_mutex_lock(&f->mu);
  if (f->done) {
    pthread_mutex_unlock(&f->mu);
    return;
  }
  f->message = strdup(msg ? msg : "");
  f->status = st;
  tirx_future_fn cb = f->cb;
  void *user = f->cb_user;
  /* f->cb stays set: done guarantees one call, and a set cb is what makes a second
   * tirx_future_on_complete fail as documented. */
  f->done = true;
  pthread_mutex_unlock(&f->mu);
  if (cb)
    cb(f, st, user);
}

/* ---- requests ---- */

typedef struct request {
  tirx_runtime *rt;
  tirx__variant *v;
  tirx_future *pub; /* one reference, or NULL */
} request;

/* True on the queue's thread while it runs a public completion callback (tirx_runtime_drain
 * from there would wait for itself). */
static _Thread_local bool in_queue_callback;

static void on_request_done(tirx__future *qf, tirx_status st, void *result, void *data) {
  request *rq = data;
  tirx_runtime *rt = rq->rt;
  tirx__variant *v = rq->v;
  pthread_mutex_lock(&rt->mu);
  /* Several requests can share one job, so this runs once per request. Only the first
   * success publishes mod (lock-free launches read it once state is READY), and a failure
   * only undoes PENDING: LOADING belongs to a thread reading the disk, and READY is final. */
  int state = atomic_load(&v->state);
  if (st == TIRX_OK) {
    if (state != TIRX__VARIANT_READY) {
      v->mod = result;
      atomic_store_explicit(&v->state, TIRX__VARIANT_READY, memory_order_release);
    }
  } else if (state == TIRX__VARIANT_PENDING) {
    atomic_store(&v->state, TIRX__VARIANT_IDLE);
    if (st != TIRX_E_CANCELLED) {
      atomic_store(&v->failed, true);
      v->failures++;
      double backoff = TIRX__RETRY_BASE_MS;
      for (int i = 1; i < v->failures; i++)
        backoff *= 4;
      v->retry_at_ms = now_ms() + backoff;
      v->last_status = st;
      /* The first failure's message stays: tirx_launch_info hands it out until destroy. */
      if (!v->last_error)
        v->last_error = strdup(tirx__future_message(qf));
    }
  }
  pthread_mutex_unlock(&rt->mu);
  if (rq->pub) {
    const char *msg = tirx__future_message(qf);
    /* Cancellations carry the queue's internal names; say it in public terms. */
    if (st == TIRX_E_CANCELLED)
      msg = strstr(msg, "compile queue destroy")
                ? "tirx_runtime_destroy: the runtime shut down before the request ran"
                : "tirx_future_cancel: the request was cancelled";
    in_queue_callback = true;
    future_complete(rq->pub, st, msg);
    in_queue_callback = false;
    future_unref(rq->pub);
  }
  free(rq);
  /* Last: tirx_runtime_drain returns once every request's callbacks have run. */
  pthread_mutex_lock(&rt->mu);
  if (--rt->in_flight == 0)
    pthread_cond_broadcast(&rt->idle_cv);
  pthread_mutex_unlock(&rt->mu);
}

/*
 * Makes sure variant (nspec, spec) of k is ready or on its way. *v_out receives the variant.
 * When it is READY, *qf_out is NULL; otherwise a request was submitted (joining any compile of
 * the same key) and *qf_out holds a reference to its queue future. pub (optional) is finished by
 * the request's callback; it is not touched when the variant is already READY.
 *
 * A variant that is neither ready nor compiling is first looked up in the disk store and loaded
 * on this thread (state LOADING; other threads that want it wait for the outcome on rt->cv), so
 * a variant found on disk is READY on return and never touches the compile queue, which is only
 * started for a compile. A disk miss, or an entry rejected by the store or by the loader, goes
 * to the queue.
 */
static tirx_status variant_prepare(tirx_runtime *rt, const tirx_kernel *k, int nspec,
                                   const int64_t *spec, const char *fn, tirx_future *pub,
                                   tirx__variant **v_out, tirx__future **qf_out,
                                   tirx_launch_source *origin) {
  *qf_out = NULL;
  tirx_launch_source origin_unused;
  if (!origin)
    origin = &origin_unused;
  *origin = TIRX_LAUNCH_FROM_MEMORY;
  uint64_t khash[2];
  tirx__kernel_hash(k, khash);
  uint64_t h = tirx__variant_hash(khash, nspec, spec);
  tirx__variant *v = tirx__variant_lookup(rt, khash, h, nspec, spec);
  if (v && atomic_load_explicit(&v->state, memory_order_acquire) == TIRX__VARIANT_READY) {
    *v_out = v;
    return TIRX_OK;
  }
  /* A kernel whose code needs a newer arch than the runtime's is never compiled. */
  tirx_status st = tirx__kernel_check_arch(k, fn, "the runtime's arch", rt->arch);
  if (st != TIRX_OK)
    return st;
  st = tirx__runtime_store(rt, fn);
  if (st != TIRX_OK)
    return st;
  const bool use_disk = rt->store && tirx__store_enabled(rt->store);
  const char *entry = tirx__kernel_entry(k);
  if (!entry)
    entry = "";

  char *source = NULL;
  tirx__cache_key ckey;
  bool looked = false; /* this call read the disk for v */
  pthread_mutex_lock(&rt->mu);
  v = variant_intern_locked(rt, khash, h, nspec, spec);
  if (!v) {
    pthread_mutex_unlock(&rt->mu);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  *v_out = v;
  for (;;) {
    int state = atomic_load(&v->state);
    if (state == TIRX__VARIANT_READY) {
      pthread_mutex_unlock(&rt->mu);
      free(source);
      return TIRX_OK;
    }
    if (v->have_ckey) {
      tirx__module *m = module_find_locked(rt, &v->ckey);
      if (m) { /* another variant with the same source is loaded */
        v->mod = m;
        atomic_store_explicit(&v->state, TIRX__VARIANT_READY, memory_order_release);
        continue;
      }
    }
    if (state == TIRX__VARIANT_LOADING) { /* another thread reads it from disk */
      pthread_cond_wait(&rt->cv, &rt->mu);
      continue;
    }
    if (!v->have_ckey || !source) {
      /* The key needs the source; a compile needs it too. Made before the disk read so that a
       * miss goes on to PENDING without letting go of the lock. */
      pthread_mutex_unlock(&rt->mu);
      free(source);
      source = NULL;
      st = source_and_key(rt, k, nspec, spec, &source, &ckey);
      if (st != TIRX_OK)
        return st;
      pthread_mutex_lock(&rt->mu);
      v->ckey = ckey;
      v->have_ckey = true;
      continue;
    }
    if (state != TIRX__VARIANT_IDLE || !use_disk || looked)
      break; /* to the queue: compile, or join the compile under way */
    looked = true;
    ckey = v->ckey;
    atomic_store(&v->state, TIRX__VARIANT_LOADING);
    pthread_mutex_unlock(&rt->mu);
    tirx__module *m = NULL;
    st = disk_load(rt, entry, &ckey, fn, &m);
    pthread_mutex_lock(&rt->mu);
    /* Only this thread's LOADING is resolved here: a compile that another thread started
     * meanwhile may already have made the variant READY, which stays. */
    if (atomic_load(&v->state) == TIRX__VARIANT_LOADING) {
      if (m) {
        *origin = TIRX_LAUNCH_FROM_DISK;
        v->mod = m;
        atomic_store_explicit(&v->state, TIRX__VARIANT_READY, memory_order_release);
      } else {
        atomic_store(&v->state, TIRX__VARIANT_IDLE);
        if (st != TIRX_OK)
          atomic_store(&v->failed, true);
      }
    }
    pthread_cond_broadcast(&rt->cv);
    if (st != TIRX_OK) {
      pthread_mutex_unlock(&rt->mu);
      free(source);
      return st;
    }
    /* A miss: round once more, still under the lock, to PENDING, so that threads waiting for
     * the disk read join the compile rather than read the disk again. */
  }
  ckey = v->ckey;
  atomic_store(&v->state, TIRX__VARIANT_PENDING);
  rt->in_flight++; /* this request, until on_request_done (or the undo below) */
  pthread_mutex_unlock(&rt->mu);
  *origin = TIRX_LAUNCH_FROM_COMPILE;

  compile_job *j = calloc(1, sizeof *j);
  request *rq = calloc(1, sizeof *rq);
  char *entry_copy = strdup(entry);
  if (!j || !rq || !entry_copy) {
    free(j);
    free(rq);
    free(entry_copy);
    free(source);
    st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    goto undo;
  }
  j->rt = rt;
  j->kernel = tirx_kernel_retain((tirx_kernel *)k);
  j->source = source;
  j->entry = entry_copy;
  j->ckey = ckey;
  snprintf(j->fn, sizeof j->fn, "%s", fn);
  rq->rt = rt;
  rq->v = v;
  rq->pub = pub;
  if (pub)
    atomic_fetch_add(&pub->refs, 1);
  st = tirx__runtime_queue(rt, fn);
  if (st == TIRX_OK) {
    tirx__job job = {.key = j->ckey, .run = job_run, .arg = j, .arg_free = job_free,
                     .label = j->entry};
    st = tirx__queue_submit(rt->queue, &job, on_request_done, rq, qf_out);
    if (st == TIRX_OK)
      return TIRX_OK;
  }
  job_free(j);
  if (pub)
    future_unref(pub);
  free(rq);
undo:
  pthread_mutex_lock(&rt->mu);
  if (atomic_load(&v->state) == TIRX__VARIANT_PENDING)
    atomic_store(&v->state, TIRX__VARIANT_IDLE);
  if (--rt->in_flight == 0)
    pthread_cond_broadcast(&rt->idle_cv);
  pthread_mutex_unlock(&rt->mu);
  return st;
}

/* The variant's module, waiting for its compile. */
static tirx_status variant_get(tirx_runtime *rt, const tirx_kernel *k, int nspec,
                               const int64_t *spec, const char *fn, tirx__module **out,
                               tirx_launch_source *origin) {
  tirx__variant *v = NULL;
  tirx__future *qf = NULL;
  tirx_status st = variant_prepare(rt, k, nspec, spec, fn, NULL, &v, &qf, origin);
  if (st != TIRX_OK)
    return st;
  if (!qf) {
    *out = v->mod;
    return TIRX_OK;
  }
  st = tirx__future_wait(qf, -1);
  if (st == TIRX_OK)
    *out = tirx__future_result(qf);
  else if (st == TIRX_E_INVALID_ARG)
    st = tirx__error(st,
                     "%s: kernel '%s' is not compiled yet and this thread cannot wait for it "
                     "(a completion callback runs on the compile queue's thread)",
                     fn, tirx__kernel_entry(k));
  tirx__future_release(qf);
  return st;
}

tirx_status tirx__runtime_select(tirx_runtime *rt, const tirx_kernel *k,
                                 const tirx__launch_plan *plan, const char *fn,
                                 tirx__module **out) {
  return tirx__runtime_select_ex(rt, k, plan, fn, false, out, NULL);
}

tirx_status tirx__runtime_select_ex(tirx_runtime *rt, const tirx_kernel *k,
                                    const tirx__launch_plan *plan, const char *fn, bool capturing,
                                    tirx__module **out, tirx_launch_info *info) {
  tirx_launch_source origin_unused;
  tirx_launch_source *origin = info ? &info->source : &origin_unused;
  if (info) {
    info->fell_back = false;
    info->capturing = capturing;
    info->background_error = NULL;
  }
  if (capturing) {
    uint64_t khash[2];
    tirx__kernel_hash(k, khash);
    tirx__variant *v = tirx__variant_lookup(
        rt, khash, tirx__variant_hash(khash, plan->nspec, plan->spec), plan->nspec, plan->spec);
    if (v && atomic_load_explicit(&v->state, memory_order_acquire) == TIRX__VARIANT_READY) {
      *origin = TIRX_LAUNCH_FROM_MEMORY;
      *out = v->mod;
      return TIRX_OK;
    }
    if (rt->capture_policy == TIRX_CAPTURE_REFUSE)
      return tirx__error(TIRX_E_CAPTURE,
                         "%s: kernel '%s' is not ready and its stream is capturing a CUDA graph "
                         "(capture_policy TIRX_CAPTURE_REFUSE): launch it once, or warm it up, "
                         "before capturing",
                         fn, tirx__kernel_entry(k));
    /* TIRX_CAPTURE_WAIT: the graph gets the specialised variant, never the dynamic one. */
    return variant_get(rt, k, plan->nspec, plan->spec, fn, out, origin);
  }
  if (!rt->tiered || plan->nspec == 0)
    return variant_get(rt, k, plan->nspec, plan->spec, fn, out, origin);
  uint64_t khash[2];
  tirx__kernel_hash(k, khash);
  tirx__variant *v = tirx__variant_lookup(
      rt, khash, tirx__variant_hash(khash, plan->nspec, plan->spec), plan->nspec, plan->spec);
  int state = v ? atomic_load_explicit(&v->state, memory_order_acquire) : TIRX__VARIANT_IDLE;
  bool start = state == TIRX__VARIANT_IDLE;
  if (start && v && atomic_load(&v->failed)) {
    /* A bounded retry with backoff, never of an NVRTC error; the error is kept for
     * tirx_launch_info either way. */
    pthread_mutex_lock(&rt->mu);
    start = v->last_status != TIRX_E_COMPILE && v->failures <= TIRX__RETRY_MAX &&
            now_ms() >= v->retry_at_ms;
    if (info && v->last_error)
      info->background_error = v->last_error;
    int failures = v->failures;
    const char *first_error = v->last_error; /* never freed before destroy */
    pthread_mutex_unlock(&rt->mu);
    if (start)
      tirx__log(rt, 1, "retrying the background compile of %s after %d failure%s: %s",
                tirx__kernel_entry(k), failures, failures == 1 ? "" : "s",
                first_error ? first_error : "");
  }
  if (start) {
    /* Start the specialised variant in the background. */
    tirx__future *qf = NULL;
    tirx_status st = variant_prepare(rt, k, plan->nspec, plan->spec, fn, NULL, &v, &qf, origin);
    if (st != TIRX_OK)
      return st;
    tirx__future_release(qf);
    state = atomic_load_explicit(&v->state, memory_order_acquire);
  }
  if (state == TIRX__VARIANT_READY) {
    *out = v->mod;
    return TIRX_OK;
  }
  atomic_fetch_add_explicit(&rt->tiered_fallbacks, 1, memory_order_relaxed);
  if (info)
    info->fell_back = true;
  return variant_get(rt, k, 0, NULL, fn, out, origin);
}

void tirx__runtime_set_capture_probe(tirx_runtime *rt, tirx__capture_probe_fn probe) {
  rt->capture_probe = probe;
}

/* ---- public: futures ---- */

tirx_status tirx_prepare_async(tirx_runtime *rt, const tirx_kernel *kernel, const tirx_arg *args,
                               int nargs, tirx_future **out) {
  static const char *const fn = "tirx_prepare_async";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!kernel)
    return tirx__error(TIRX_E_NULL_ARG, "%s: kernel is NULL", fn);
  if (nargs < 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: nargs is %d, expected >= 0", fn, nargs);
  if (!args && nargs > 0)
    return tirx__error(TIRX_E_NULL_ARG, "%s: args is NULL but nargs is %d", fn, nargs);
  tirx_status st = tirx__runtime_usable(rt, fn);
  if (st != TIRX_OK)
    return st;
  tirx__launch_plan *plan = malloc(sizeof *plan);
  tirx_future *f = future_new(rt);
  if (!plan || !f) {
    free(plan);
    free(f);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  st = tirx__kernel_plan(kernel, fn, args, nargs, plan);
  tirx__variant *v = NULL;
  tirx__future *qf = NULL;
  if (st == TIRX_OK)
    st = variant_prepare(rt, kernel, plan->nspec, plan->spec, fn, f, &v, &qf, NULL);
  free(plan);
  if (st != TIRX_OK) {
    future_free(f);
    return st;
  }
  if (!qf)
    future_complete(f, TIRX_OK, "");
  else
    f->qf = qf; /* nobody else can see f yet */
  *out = f;
  return TIRX_OK;
}

bool tirx_future_poll(const tirx_future *f) {
  if (!f || future_forked(f))
    return false;
  pthread_mutex_lock((pthread_mutex_t *)&f->mu);
  bool done = f->done;
  pthread_mutex_unlock((pthread_mutex_t *)&f->mu);
  return done;
}

tirx_status tirx_future_status(const tirx_future *f) {
  if (!f)
    return TIRX_E_NULL_ARG;
  if (future_forked(f))
    return TIRX_E_FORKED;
  pthread_mutex_lock((pthread_mutex_t *)&f->mu);
  tirx_status st = f->done ? f->status : TIRX_E_TIMEOUT;
  pthread_mutex_unlock((pthread_mutex_t *)&f->mu);
  return st;
}

const char *tirx_future_message(const tirx_future *f) {
  if (!f || future_forked(f))
    return "";
  pthread_mutex_lock((pthread_mutex_t *)&f->mu);
  const char *m = f->done && f->message ? f->message : "";
  pthread_mutex_unlock((pthread_mutex_t *)&f->mu);
  return m;
}

tirx_status tirx_future_wait(tirx_future *f, int64_t timeout_ms) {
  static const char *const fn = "tirx_future_wait";
  if (!f)
    return tirx__error(TIRX_E_NULL_ARG, "%s: f is NULL", fn);
  if (future_forked(f))
    return tirx__forked_error(fn, "future", f->pid);
  if (timeout_ms < -1)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: timeout_ms is %lld, expected >= -1", fn,
                       (long long)timeout_ms);
  if (!tirx_future_poll(f) && f->qf) {
    /* The queue's request finishes after its callback (which finishes f) has returned. */
    tirx_status st = tirx__future_wait(f->qf, timeout_ms);
    if (st == TIRX_E_TIMEOUT)
      return tirx__error(TIRX_E_TIMEOUT, "%s: the request has not finished after %lld ms", fn,
                         (long long)timeout_ms);
    if (st == TIRX_E_INVALID_ARG)
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: called from a completion callback for a request that has not "
                         "finished; it would wait for itself",
                         fn);
  }
  pthread_mutex_lock(&f->mu);
  bool done = f->done;
  tirx_status st = f->status;
  pthread_mutex_unlock(&f->mu);
  if (!done) /* cannot happen: a request always finishes f before its future reads finished */
    return tirx__error(TIRX_E_INTERNAL, "%s: the request finished without its future", fn);
  if (st != TIRX_OK)
    return tirx__error(st, "%s", f->message && f->message[0] ? f->message : tirx_status_str(st));
  return TIRX_OK;
}

tirx_status tirx_future_on_complete(tirx_future *f, tirx_future_fn cb, void *user) {
  static const char *const fn = "tirx_future_on_complete";
  if (!f)
    return tirx__error(TIRX_E_NULL_ARG, "%s: f is NULL", fn);
  if (!cb)
    return tirx__error(TIRX_E_NULL_ARG, "%s: cb is NULL", fn);
  if (future_forked(f))
    return tirx__forked_error(fn, "future", f->pid);
  pthread_mutex_lock(&f->mu);
  if (f->cb) {
    pthread_mutex_unlock(&f->mu);
    return tirx__error(TIRX_E_INVALID_ARG, "%s: the future already has a completion callback",
                       fn);
  }
  if (f->done) {
    tirx_status st = f->status;
    /* A marker so that a second call is refused. */
    f->cb = cb;
    f->cb_user = user;
    pthread_mutex_unlock(&f->mu);
    cb(f, st, user);
    return TIRX_OK;
  }
  f->cb = cb;
  f->cb_user = user;
  pthread_mutex_unlock(&f->mu);
  return TIRX_OK;
}

tirx_status tirx_future_cancel(tirx_future *f) {
  static const char *const fn = "tirx_future_cancel";
  if (!f)
    return tirx__error(TIRX_E_NULL_ARG, "%s: f is NULL", fn);
  if (future_forked(f))
    return tirx__forked_error(fn, "future", f->pid);
  if (f->qf && !tirx_future_poll(f))
    return tirx__future_cancel(f->qf, NULL);
  return TIRX_OK;
}

void tirx_future_release(tirx_future *f) {
  if (!f || future_forked(f))
    return; /* a forked child leaves the parent's memory alone */
  future_unref(f);
}

/* ---- public: warm-up, counters ---- */

/* The message without a leading "<fn>: ". */
static const char *strip_fn(const char *msg, const char *fn) {
  size_t n = strlen(fn);
  return strncmp(msg, fn, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

tirx_status tirx_runtime_warmup(tirx_runtime *rt, const tirx_kernel *kernel,
                                const tirx_arg *const *arg_lists, const int *nargs, int count) {
  static const char *const fn = "tirx_runtime_warmup";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!kernel)
    return tirx__error(TIRX_E_NULL_ARG, "%s: kernel is NULL", fn);
  if (count < 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: count is %d, expected >= 0", fn, count);
  if (count > 0 && !arg_lists)
    return tirx__error(TIRX_E_NULL_ARG, "%s: arg_lists is NULL but count is %d", fn, count);
  if (count > 0 && !nargs)
    return tirx__error(TIRX_E_NULL_ARG, "%s: nargs is NULL but count is %d", fn, count);
  tirx_status st = tirx__runtime_usable(rt, fn);
  if (st != TIRX_OK || count == 0)
    return st;
  tirx__future **qfs = calloc((size_t)count, sizeof *qfs);
  tirx__launch_plan *plan = malloc(sizeof *plan);
  if (!qfs || !plan) {
    free(qfs);
    free(plan);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  /* Submit everything first (the compiles run in parallel), then wait in order. */
  int first_bad = -1;
  tirx_status first_st = TIRX_OK;
  char *first_msg = NULL;
  for (int i = 0; i < count; i++) {
    tirx__variant *v = NULL;
    if (nargs[i] < 0)
      st = tirx__error(TIRX_E_INVALID_ARG, "%s: nargs[%d] is %d, expected >= 0", fn, i,
                       nargs[i]);
    else if (!arg_lists[i] && nargs[i] > 0)
      st = tirx__error(TIRX_E_NULL_ARG, "%s: arg_lists[%d] is NULL but nargs[%d] is %d", fn, i,
                       i, nargs[i]);
    else if ((st = tirx__kernel_plan(kernel, fn, arg_lists[i], nargs[i], plan)) == TIRX_OK)
      st = variant_prepare(rt, kernel, plan->nspec, plan->spec, fn, NULL, &v, &qfs[i], NULL);
    if (st != TIRX_OK && first_bad < 0) {
      first_bad = i;
      first_st = st;
      first_msg = strdup(strip_fn(tirx_last_error(), fn));
    }
  }
  free(plan);
  for (int i = 0; i < count; i++) {
    if (!qfs[i])
      continue;
    st = tirx__future_wait(qfs[i], -1);
    if (st != TIRX_OK && (first_bad < 0 || i < first_bad)) {
      free(first_msg);
      first_bad = i;
      first_st = st;
      first_msg = strdup(strip_fn(tirx__future_message(qfs[i]), fn));
    }
    tirx__future_release(qfs[i]);
  }
  free(qfs);
  if (first_bad < 0)
    return TIRX_OK;
  st = tirx__error(first_st, "%s: binding %d: %s", fn, first_bad,
                   first_msg ? first_msg : tirx_status_str(first_st));
  free(first_msg);
  return st;
}

tirx_status tirx_runtime_drain(tirx_runtime *rt, int64_t timeout_ms) {
  static const char *const fn = "tirx_runtime_drain";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (tirx__runtime_forked(rt))
    return tirx__forked_error(fn, "runtime", rt->pid);
  if (timeout_ms < -1)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: timeout_ms is %lld, expected >= -1", fn,
                       (long long)timeout_ms);
  if (in_queue_callback)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: called from a completion callback, which runs on the compile "
                       "queue's thread; it would wait for itself",
                       fn);
  struct timespec deadline;
  if (timeout_ms > 0) {
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)(timeout_ms / 1000);
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock(&rt->mu);
  while (rt->in_flight > 0 && timeout_ms != 0) {
    if (timeout_ms < 0)
      pthread_cond_wait(&rt->idle_cv, &rt->mu);
    else if (pthread_cond_timedwait(&rt->idle_cv, &rt->mu, &deadline) == ETIMEDOUT)
      break;
  }
  uint64_t left = rt->in_flight;
  pthread_mutex_unlock(&rt->mu);
  if (left > 0)
    return tirx__error(TIRX_E_TIMEOUT, "%s: %llu compile%s still running after %lld ms", fn,
                       (unsigned long long)left, left == 1 ? "" : "s", (long long)timeout_ms);
  return TIRX_OK;
}

tirx_status tirx_runtime_cache_stats(tirx_runtime *rt, tirx_cache_stats *out) {
  static const char *const fn = "tirx_runtime_cache_stats";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  if (tirx__runtime_forked(rt))
    return tirx__forked_error(fn, "runtime", rt->pid);
  size_t bytes;
  if (tirx__ext_out(fn, "out", &tirx__ext_cache_stats, out, &bytes) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  tirx_cache_stats full = {0};
  tirx_cache_stats *const user = out;
  out = &full;
  if (atomic_load_explicit(&rt->store_ready, memory_order_acquire) && rt->store) {
    tirx__store_counters c;
    tirx__store_counters_get(rt->store, &c);
    out->hits = c.hits;
    out->misses = c.misses;
    out->corrupt_detected = c.corrupt_detected;
    out->publish_failed = c.publish_failed;
    out->evictions = c.evictions;
  }
  if (atomic_load_explicit(&rt->queue_ready, memory_order_acquire)) {
    tirx__queue_stats q;
    if (tirx__queue_stats_get(rt->queue, &q) == TIRX_OK) {
      out->dedup_joined = q.dedup_joined;
      out->cancelled = q.cancelled;
    }
  }
  out->compiles = atomic_load(&rt->compiles);
  out->compile_failures = atomic_load(&rt->compile_failures);
  out->loads = atomic_load(&rt->loads);
  out->tiered_fallbacks = atomic_load(&rt->tiered_fallbacks);
  out->nvrtc_millis = (double)atomic_load(&rt->nvrtc_ns) / 1e6;
  out->worker_compiles = atomic_load(&rt->worker_compiles);
  if (atomic_load_explicit(&rt->workers_ready, memory_order_acquire) && rt->workers) {
    tirx__workers_stats ws;
    tirx__workers_stats_get(rt->workers, &ws);
    out->worker_deaths = ws.deaths;
  }
  pthread_mutex_lock(&rt->mu);
  out->variants = rt->nvariants;
  pthread_mutex_unlock(&rt->mu);
  tirx__ext_write(user, &full, bytes);
  return TIRX_OK;
}

const char *tirx_runtime_cache_dir(tirx_runtime *rt) {
  if (!rt)
    return NULL;
  if (tirx__runtime_forked(rt) || rt->cache_disabled ||
      tirx__runtime_store(rt, "tirx_runtime_cache_dir") != TIRX_OK || !rt->store ||
      !tirx__store_enabled(rt->store))
    return "";
  return tirx__store_path(rt->store);
}

/* ---- teardown ---- */

bool tirx__runtime_cache_destroy(tirx_runtime *rt, bool unload) {
  if (rt->queue) {
    tirx_status st = tirx__queue_destroy(rt->queue, NULL);
    if (st != TIRX_OK) {
      tirx__log(rt, 1, "tirx_runtime_destroy: %s (the runtime is leaked)", tirx_last_error());
      return false;
    }
    rt->queue = NULL;
  }
  tirx__store_close(rt->store);
  rt->store = NULL;
  for (tirx__module *m = rt->modules, *next; m; m = next) {
    next = m->next;
    if (unload && m->module)
      rt->drv.ModuleUnload(m->module);
    free(m->entry);
    free(m);
  }
  rt->modules = NULL;
  tirx__vtable *t = atomic_load(&rt->vtable);
  if (t)
    for (size_t i = 0; i <= t->mask; i++) {
      tirx__variant *v = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
      if (v)
        free(v->last_error);
      free(v);
    }
  while (t) {
    tirx__vtable *older = t->older;
    free(t);
    t = older;
  }
  atomic_store(&rt->vtable, NULL);
  return true;
}
