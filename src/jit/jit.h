/* Internals of the JIT shared by nvrtc.c, runtime.c, launch.c and memory.c. */
#ifndef TIRX_JIT_JIT_H
#define TIRX_JIT_JIT_H

#include <pthread.h>
#include <stdatomic.h>

#include <string.h>

#include "../cache/key.h"
#include "../core/ext.h"
#include "../cache/store.h"
#include "../ir/kernel_abi.h"
#include "driver.h"
#include "worker_proto.h"

/* ---- NVRTC (nvrtc.c) ---- */

/* The file name NVRTC reports in its log: "kernel.cu(12): error: ...". */
#define TIRX__NVRTC_FILE "kernel.cu"

typedef struct tirx__nvrtc_output {
  void *cubin; /* malloc'ed */
  size_t cubin_size;
  char *ptx;     /* malloc'ed, NUL-terminated; NULL unless asked for */
  char *log;     /* malloc'ed, never NULL on success ("" when NVRTC said nothing) */
  double millis; /* wall time of the compile */
} tirx__nvrtc_output;

/*
 * Compiles source (the translation unit of the kernel called name) to a cubin for arch, and to
 * PTX when want_ptx. Runs NVRTC on a helper thread with an 8 MiB stack when the calling
 * thread's stack is smaller than 4 MiB. The options are fixed and ordered, so the same source
 * and arch give the same bytes. fn names the public function in messages.
 * Errors: TIRX_E_INVALID_ARG / TIRX_E_NOT_SUPPORTED (arch, see tirx__nvrtc_check_arch),
 * TIRX_E_NO_NVRTC (no NVRTC could be loaded: tirx__nvrtc_require's message), TIRX_E_COMPILE ("<fn>: NVRTC could not compile '<name>' for <arch>: ..." with each error
 * line of the log followed by the source line it names), TIRX_E_NO_MEMORY.
 */
tirx_status tirx__nvrtc_compile(const char *fn, const char *name, const char *source,
                                const char *arch, bool want_ptx, tirx__nvrtc_output *out);
void tirx__nvrtc_output_free(tirx__nvrtc_output *out);

/* Runs the raw NVRTC call on this thread, or on a helper thread with an 8 MiB stack when this
 * thread's stack is under 4 MiB. False when the helper thread cannot start. */
bool tirx__nvrtc_run_raw(const char *source, int nopts, const char *const *opts, bool want_ptx,
                         tirx__nvrtc_raw *raw);

/* Turns a raw NVRTC result (from this process or a compile worker) into *out, or into the
 * error tirx__nvrtc_compile documents; takes over raw's buffers (raw is left empty). */
tirx_status tirx__nvrtc_finish(const char *fn, const char *name, const char *source,
                               const char *arch, bool want_ptx, tirx__nvrtc_raw *raw,
                               double millis, tirx__nvrtc_output *out);

/* Checks arch is "sm_<digits>" with an optional "a" or "f" suffix and that this NVRTC can
 * target it. Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG, TIRX_E_NO_NVRTC (as
 * tirx__nvrtc_require), TIRX_E_NOT_SUPPORTED. */
tirx_status tirx__nvrtc_check_arch(const char *fn, const char *arch);

/* The form check of tirx__nvrtc_check_arch alone, which needs no NVRTC.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG. */
tirx_status tirx__nvrtc_check_arch_form(const char *fn, const char *arch);

/* TIRX_OK when the process's NVRTC is loaded (nvrtc_lib.h: loaded on the first call), else
 * TIRX_E_NO_NVRTC with "<fn>: cannot load NVRTC; tried libnvrtc.so.13 (<dlerror>), ...". */
tirx_status tirx__nvrtc_require(const char *fn);

/* The loaded NVRTC's version as major * 1000 + minor * 10 (13000 for 13.0); 0 when none
 * loads. */
int tirx__nvrtc_version(void);

/* The options a compile of source passes to NVRTC for arch, in order; they are part of the
 * cache key. Generated sources (tirx__codegen_wrote) also get --minimal; a kernel's own CUDA
 * text keeps NVRTC's whole built-in header (textures, the device runtime API). Writes up to
 * TIRX__NVRTC_MAX_OPTIONS pointers into opts (the arch option is formatted into arch_buf) and
 * returns their count. */
enum { TIRX__NVRTC_MAX_OPTIONS = 8 };
int tirx__nvrtc_options(const char *arch, const char *source, char arch_buf[64],
                        const char *opts[TIRX__NVRTC_MAX_OPTIONS]);

/* ---- the runtime (runtime.c) and its kernel cache (variant.c) ---- */

/*
 * A module loaded from one cubin, that is one cache key. Created by a compile job (variant.c)
 * under rt->mu, owned by the runtime and freed (unloaded) by tirx_runtime_destroy. Immutable
 * after publication except smem_allowed. Several variants may share one module when their
 * sources are equal (a DIV16 key of all zeros is the dynamic variant's source).
 */
typedef struct tirx__module {
  tirx__cache_key ckey;
  CUmodule module;     /* NULL when nothing was loaded (compile-only runtime) */
  CUfunction function; /* NULL when nothing was loaded */
  _Atomic uint32_t smem_allowed; /* dynamic shared memory the function is allowed (48 KiB) */
  char *entry;
  struct tirx__module *next; /* the runtime's list, under rt->mu */
} tirx__module;

/* Tiered background compiles that failed (a load, the driver, memory; never an NVRTC error,
 * which would fail again) are retried this many times, the n-th retry no sooner than
 * TIRX__RETRY_BASE_MS * 4^(n-1) after the failure. */
enum { TIRX__RETRY_MAX = 3, TIRX__RETRY_BASE_MS = 250 };

/* States of a variant. IDLE: neither loaded nor being compiled (also after a failed compile).
 * PENDING: a compile runs on the queue. READY: mod is set and usable. LOADING: a thread is
 * looking it up in the disk store and loading it, synchronously, on its own thread (others that
 * want it wait on rt->cv, so one process reads each variant from disk once). */
enum {
  TIRX__VARIANT_IDLE = 0,
  TIRX__VARIANT_PENDING = 1,
  TIRX__VARIANT_READY = 2,
  TIRX__VARIANT_LOADING = 3
};

/* One entry of the memory table: a kernel (its content hash) and a specialisation key. Entries
 * are never removed before tirx_runtime_destroy, so a reader holding one never sees it freed. */
typedef struct tirx__variant {
  uint64_t khash[2];
  uint64_t h; /* tirx__variant_hash of the identity */
  int nspec;
  int64_t spec[TIRX__MAX_SPEC];
  _Atomic int state;
  tirx__module *mod; /* valid once state reads READY (release/acquire) */
  atomic_bool failed; /* the last compile failed (tiered mode then retries it, bounded) */
  /* Under rt->mu: failed compiles or loads, when a tiered background retry may start (a
   * CLOCK_MONOTONIC millisecond), the last failure's status and message (NULL before one). */
  int failures;
  double retry_at_ms;
  tirx_status last_status;
  char *last_error;
  /* Under rt->mu. */
  bool have_ckey;
  tirx__cache_key ckey;
} tirx__variant;

/* An immutable snapshot of the memory table: open addressing on h. Readers load the snapshot
 * pointer with acquire and probe slots with acquire loads, taking no lock; the one writer (under
 * rt->mu) fills empty slots with release stores, or builds a bigger snapshot, copies and
 * publishes it. Retired snapshots stay allocated (chained by older) until destroy, so a reader
 * on an old snapshot stays safe; they total less than the live one. */
typedef struct tirx__vtable {
  size_t mask;
  struct tirx__vtable *older;
  _Atomic(tirx__variant *) slots[];
} tirx__vtable;

/*
 * The module loader: turns a validated cubin image (NUL-padded after size bytes) into a loaded
 * function. The default calls cuModuleLoadDataEx and cuModuleGetFunction in the runtime's
 * context; tests replace it (tirx__runtime_set_loader) to see every image that would reach the
 * driver. Called on compile threads, possibly several at once. On failure it records an error
 * (tirx__error, message starting with fn) and returns its status.
 */
typedef tirx_status (*tirx__loader_fn)(tirx_runtime *rt, void *user, const char *fn,
                                       const tirx__cache_key *key, const void *image, size_t size,
                                       const char *entry, CUmodule *module, CUfunction *function);

/* Answers whether stream is capturing (tests replace the driver's cuStreamIsCapturing with it,
 * tirx__runtime_set_capture_probe). On failure records an error and returns its status. */
typedef tirx_status (*tirx__capture_probe_fn)(tirx_runtime *rt, void *stream, bool *capturing);

struct tirx_runtime {
  /* Fixed after creation. */
  int ordinal;
  char arch[16];
  char device_name[128];
  char *device_error; /* why there is no device; "" when there is one */
  char *dump_dir;     /* NULL: no dumps */
  char *dump_filter;  /* $TIRX_DUMP_FILTER: dump only kernels whose name contains it */
  int log_level;
  bool has_device;
  tirx__driver drv;
  CUdevice device;
  CUcontext ctx;      /* the retained primary context, or the host's (own_ctx false) */
  bool own_ctx;       /* ctx is the primary context this runtime retained */
  int max_smem_optin; /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  long pid;           /* the creating process */
  unsigned fork_gen;  /* tirx__fork_generation at creation */
  /* Cache options. */
  char *cache_dir;    /* NULL: the store's default */
  bool cache_disabled, cache_fsync, tiered;
  uint64_t cache_max_bytes;
  uint32_t max_parallel;
  tirx_event_fn on_event;
  void *event_user;
  tirx_capture_policy capture_policy;
  tirx__capture_probe_fn capture_probe; /* NULL: cuStreamIsCapturing */
  tirx__loader_fn loader; /* NULL: nothing is loaded (compile-only) */
  void *loader_user;
  int nvrtc_major, nvrtc_minor;

  /* Sticky failure: set once, never cleared. */
  atomic_bool failed;
  pthread_mutex_t failed_lock;
  char *failed_message;

  /* The memory table (lock-free reads), and under mu: its inserts, the module list, the
   * disk store and the compile queue (each created once, on first need; see store_ready and
   * queue_ready), variant states LOADING -> anything else (broadcast on cv). */
  _Atomic(tirx__vtable *) vtable;
  size_t nvariants;
  pthread_mutex_t mu;
  pthread_cond_t cv;   /* a variant left LOADING */
  tirx__module *modules;
  size_t nloaded;      /* modules loaded into the context (for tests) */
  /* The store is opened at creation when options->cache_dir names it, else on the first
   * memory-table miss (never by a runtime that prepares nothing: ~/.cache/tirx is not created
   * for nothing). The queue (its thread and libuv's pool) starts on the first compile only: a
   * process whose variants all come from disk never starts it. Both are fixed once their
   * flag reads true (release/acquire). */
  atomic_bool store_ready; /* store opened (NULL when the cache is disabled) */
  atomic_bool queue_ready; /* queue created */
  tirx__store *store;  /* NULL when the cache is disabled */
  struct tirx__queue *queue;

  /* Requests submitted to the compile queue and not finished yet (under mu; idle_cv is
   * broadcast when it drops to 0, for tirx_runtime_drain). */
  uint64_t in_flight;
  pthread_cond_t idle_cv;

  /* The kernel library's scratch buffers (tirx__runtime_scratch in memory.c: the split-K
   * GEMM's workspace), one current buffer per stream, under scratch_lock; all freed by
   * tirx_runtime_destroy. */
  pthread_mutex_t scratch_lock;
  struct tirx__scratch *scratch;

  /* Compile workers (workers.c), fixed at creation: the program (NULL: NVRTC in the process)
   * and the pool's size; the pool is started on the first compile (workers_ready, under mu). */
  char *worker_path;
  unsigned worker_count;
  int worker_nice; /* added to the host's nice value: TIRX__WORKER_NICE or the environment's */
  atomic_bool workers_ready;
  struct tirx__workers *workers; /* NULL: none (no program, or it could not start) */

  /* Counters. */
  _Atomic uint64_t worker_compiles, in_process_compiles;
  _Atomic uint64_t compiles, compile_failures, loads, tiered_fallbacks, nvrtc_ns, disk_hits;
};

/* Incremented in every child of fork() (pthread_atfork); a runtime or future whose fork_gen
 * differs was created in another process. */
extern _Atomic unsigned tirx__fork_generation;

/* True when rt was created by another process (this is a child of fork()). */
static inline bool tirx__runtime_forked(const tirx_runtime *rt) {
  return TIRX_UNLIKELY(rt->fork_gen !=
                       atomic_load_explicit(&tirx__fork_generation, memory_order_relaxed));
}
/* TIRX_E_FORKED: "<fn>: the <what> was created in another process (pid N); a forked child
 * cannot use it". */
tirx_status tirx__forked_error(const char *fn, const char *what, long pid);

/* TIRX_OK, or TIRX_E_FORKED or TIRX_E_STICKY: the checks of tirx__runtime_ready that do not
 * need a device (compile-only work). */
tirx_status tirx__runtime_usable(tirx_runtime *rt, const char *fn);

/* Frees the scratch list of rt and, when device (rt's context current), its device buffers;
 * tirx_runtime_destroy's. */
void tirx__runtime_scratch_free(tirx_runtime *rt, bool device);
/* The kernel library's scratch buffer for stream (declared for src/kernels in
 * kernels_internal.h, which says what it does). */
tirx_status tirx__runtime_scratch(tirx_runtime *rt, const char *fn, void *stream, size_t bytes,
                                  void **out);

/* The hash of a variant's identity (kernel hash and specialisation key). */
static inline uint64_t tirx__variant_hash(const uint64_t khash[2], int nspec,
                                          const int64_t *spec) {
  uint64_t h = khash[0] ^ (khash[1] * 0x9E3779B97F4A7C15ull) ^ (uint64_t)nspec;
  for (int i = 0; i < nspec; i++) {
    h = (h ^ (uint64_t)spec[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  h ^= h >> 29;
  return h;
}

/* The hot path: the variant for (khash, spec) when it is in the table, else NULL. No lock. */
static inline tirx__variant *tirx__variant_lookup(tirx_runtime *rt, const uint64_t khash[2],
                                                  uint64_t h, int nspec, const int64_t *spec) {
  tirx__vtable *t = atomic_load_explicit(&rt->vtable, memory_order_acquire);
  if (TIRX_UNLIKELY(!t))
    return NULL;
  for (size_t i = (size_t)h & t->mask;; i = (i + 1) & t->mask) {
    tirx__variant *v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
    if (!v)
      return NULL;
    if (v->h == h && v->khash[0] == khash[0] && v->khash[1] == khash[1] && v->nspec == nspec &&
        (nspec == 0 || memcmp(v->spec, spec, (size_t)nspec * sizeof *spec) == 0))
      return v;
  }
}

/*
 * The module a launch with plan runs: the memory table, then (slow path) the disk store, read
 * and loaded synchronously on the calling thread, then a compile through the queue, waiting for
 * it. With tiered compilation, a specialised variant that
 * is not ready starts compiling in the background and the dynamic variant's module is returned
 * (compiled synchronously when absent). fn names the public function in messages.
 */
tirx_status tirx__runtime_select(tirx_runtime *rt, const tirx_kernel *k,
                                 const tirx__launch_plan *plan, const char *fn,
                                 tirx__module **out);

/* tirx__runtime_select for a launch on a stream that is being captured into a CUDA graph when
 * capturing is true: then under TIRX_CAPTURE_REFUSE nothing is compiled, read or loaded and the
 * call fails with TIRX_E_CAPTURE, and under TIRX_CAPTURE_WAIT a tiered runtime waits for the
 * specialised variant instead of running the dynamic one. info (optional) receives where the
 * module came from and whether the dynamic variant ran in its place. */
tirx_status tirx__runtime_select_ex(tirx_runtime *rt, const tirx_kernel *k,
                                    const tirx__launch_plan *plan, const char *fn, bool capturing,
                                    tirx__module **out, tirx_launch_info *info);

/* Whether stream (NULL: the legacy default stream) is capturing into a graph, through the
 * runtime's probe; the runtime's context must be current. The legacy stream counts as
 * capturing while another stream of the context captures in a mode that forbids it
 * (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). Errors: those of tirx__driver_error. */
tirx_status tirx__stream_capturing(tirx_runtime *rt, const char *fn, void *stream, bool *out);

/* Replaces the capture probe (NULL: cuStreamIsCapturing). For tests. */
void tirx__runtime_set_capture_probe(tirx_runtime *rt, tirx__capture_probe_fn probe);

/* The cache key of a kernel's variant for this runtime (source, NVRTC version, options, arch,
 * format version). */
tirx_status tirx__variant_cache_key(const tirx_runtime *rt, const tirx_kernel *k, int nspec,
                                    const int64_t *spec, tirx__cache_key *out);

/* Replaces the module loader (NULL: the default; in a compile-only runtime NULL means nothing is
 * loaded). Call before the runtime compiles anything. For tests. */
void tirx__runtime_set_loader(tirx_runtime *rt, tirx__loader_fn loader, void *user);

/* The default loader (cuModuleLoadDataEx in the runtime's context). */
tirx_status tirx__default_loader(tirx_runtime *rt, void *user, const char *fn,
                                 const tirx__cache_key *key, const void *image, size_t size,
                                 const char *entry, CUmodule *module, CUfunction *function);

/* Opens the disk store on first use (under rt->mu inside); TIRX_OK with rt->store NULL when
 * the cache is disabled. A directory the store refuses is not an error (the store is then
 * disabled, the caller's last error is kept). Errors: TIRX_E_NO_MEMORY. */
tirx_status tirx__runtime_store(tirx_runtime *rt, const char *fn);

/* Starts the compile queue on first use (under rt->mu inside). Errors: those of
 * tirx__queue_create, "<fn>: cannot start the compile queue: ...". */
tirx_status tirx__runtime_queue(tirx_runtime *rt, const char *fn);

/* True once the compile queue was started (for tests and benchmarks: a process whose variants
 * all came from disk never starts it). */
bool tirx__runtime_queue_started(const tirx_runtime *rt);

/* Shuts the queue down (cancelling what has not started), then frees the memory table and the
 * modules (unloading them when unload). False when the queue refused to shut down (called from
 * its own thread): then nothing is freed. */
bool tirx__runtime_cache_destroy(tirx_runtime *rt, bool unload);

/* Compiles source for arch like tirx__nvrtc_compile, in one of the runtime's compile workers
 * when it has them (starting the pool on first use), else (no program, the pool turned itself
 * off) in the process. The bytes and messages are those of tirx__nvrtc_compile. Errors: those
 * of tirx__nvrtc_compile and of tirx__workers_compile. */
tirx_status tirx__runtime_nvrtc(tirx_runtime *rt, const char *fn, const char *name,
                                const char *source, const char *arch, bool want_ptx,
                                tirx__nvrtc_output *out);

/* The pool, started on first use; NULL when the runtime compiles in the process. */
struct tirx__workers *tirx__runtime_workers(tirx_runtime *rt);

/* Records the first sticky failure (message without the function name). */
void tirx__runtime_fail(tirx_runtime *rt, const char *message);

/* TIRX_OK, or the errors a device call returns when the runtime cannot reach the device:
 * TIRX_E_NO_DEVICE ("<fn>: no CUDA device: <why>") or TIRX_E_STICKY. */
tirx_status tirx__runtime_ready(tirx_runtime *rt, const char *fn);

/* Makes the runtime's context current on this thread when it is not, and restores the
 * previous state afterwards. */
typedef struct tirx__ctx_guard {
  bool pushed;
} tirx__ctx_guard;
tirx_status tirx__ctx_enter(tirx_runtime *rt, const char *fn, tirx__ctx_guard *g);
void tirx__ctx_leave(tirx_runtime *rt, tirx__ctx_guard *g);

/* Turns a failed driver call into a tirx error "<fn>: <what>: CUDA_ERROR_X (n): text",
 * making the runtime sticky when the error is. TIRX_E_NO_MEMORY for out of memory,
 * TIRX_E_STICKY for sticky errors, TIRX_E_DRIVER otherwise. */
tirx_status tirx__driver_error(tirx_runtime *rt, const char *fn, const char *what, CUresult r);

/* Writes the dumps of a compiled kernel when the runtime has a dump directory (failures to
 * write are reported on stderr and otherwise ignored). */
void tirx__dump_kernel(const tirx_runtime *rt, const tirx_kernel *k, const char *ptx);

/* The dumps of one compiled variant: <entry>.<arch>-<cache key>.{ir,cu,ptx,dispatch}, the .cu
 * being the variant's own (specialised) source, so the variants of one kernel and its archs
 * never overwrite each other. */
void tirx__dump_variant(const tirx_runtime *rt, const tirx_kernel *k, const char *source,
                        const char *arch, const char key_hex[33], const char *ptx);

/* "0123...": the 32 hex digits of a kernel hash, into buf[33]. */
void tirx__hash_hex(const uint64_t hash[2], char buf[33]);

/* Prints to stderr when the runtime's log level is at least level. */
void tirx__log(const tirx_runtime *rt, int level, const char *fmt, ...) TIRX_PRINTF(3, 4);

#endif
