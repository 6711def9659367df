/*
 * tirx/runtime.h: the JIT runtime: NVRTC compilation, the CUDA device, launches and device
 * memory.
 *
 * A runtime owns one device's primary context (retained, never created), a table of loaded
 * kernels keyed by their content hash, and its options. It is thread-safe: any number of
 * threads may compile, launch and copy through one runtime at once.
 *
 * A runtime also works without a GPU or without a CUDA driver: then compiling works (NVRTC
 * needs no GPU) and everything that needs the device returns TIRX_E_NO_DEVICE with the
 * reason the device is missing. The CUDA driver (libcuda.so.1) is loaded with dlopen when the
 * runtime is created, never at library load and never linked.
 *
 * NVRTC is not linked either: it is loaded with dlopen once per process, at the first call that
 * needs it (a compile, or an arch check), from the first of libnvrtc.so.13, libnvrtc.so.12,
 * libnvrtc.so and the build's toolkit directory (<cuda-root>/lib64/libnvrtc.so) that opens and
 * is NVRTC 12.0 or newer, so one build serves the CUDA 12.x and 13.x toolkits. The version
 * found is part of every cache key. Without NVRTC a runtime is still created, and every compile
 * (tirx_compile, and a launch, prepare or warm-up that needs one) fails with TIRX_E_NO_NVRTC and a message naming the function and each library tried with the dynamic
 * linker's reason:
 *
 *     tirx_compile: cannot load NVRTC; tried libnvrtc.so.13 (libnvrtc.so.13: cannot open
 *     shared object file: No such file or directory), libnvrtc.so.12 (...), ...
 *
 * Environment:
 *   TIRX_DRIVER_LIBRARY  the driver library to dlopen instead of "libcuda.so.1" (tests)
 *   TIRX_NVRTC_LIBRARY   the NVRTC library to dlopen (a path or a soname) instead of the list
 *                        above, and the only one tried; read once, at NVRTC's first use in
 *                        the process (compile workers inherit it)
 *   TIRX_DUMP_DIR        when set, every compiled kernel writes .ir, .cu, .ptx and, for
 *                        kernels with tile primitives, .dispatch (the dispatch report) into
 *                        this directory (created if missing): tirx_compile as
 *                        <entry>-<kernel hash>.*, each variant a launch, prepare or warm-up
 *                        compiles as <entry>.<arch>-<cache key>.* with its specialised source
 *                        (each file written to a temporary name and renamed into place)
 *   TIRX_DUMP_FILTER     with TIRX_DUMP_DIR: dump only kernels whose name contains this text
 *   TIRX_LOG             stderr verbosity, a number or a name: 0 or "silent" (default), 1 or
 *                        "compiles", 2 or "launches" (also "off", "info", "debug"); anything
 *                        else is reported once on stderr and keeps logging off
 *   TIRX_ATTN_SCHEDULE   the KV-block schedule of the default attention kernel
 *                        (tirx_op_attention, tirx_kernels_attention_build): unset, empty or
 *                        "serial" (the default) waits for each GEMM before the next step;
 *                        "overlap" is FlashAttention-3's intra-warpgroup overlap (S of block
 *                        n + 1 and P V of block n in flight together, the softmax under P V);
 *                        "pingpong" its inter-warpgroup ping-pong (the two consumer
 *                        warpgroups take turns issuing their GEMMs, one's softmax under the
 *                        other's GEMMs); "pingpong_overlap" both; anything else fails the
 *                        call with TIRX_E_INVALID_ARG, and so does a schedule other than
 *                        serial at head dim 256 (their kernels spill there). Read at each op
 *                        call and build, and part of the op's kernel key and of the generated
 *                        source, so kernels of every schedule live in one process (set it
 *                        before the call; not while another thread reads it)
 *   TIRX_CACHE_DIR       the disk cache directory (see tirx_runtime_options.cache_dir)
 *   TIRX_CACHE_DISABLE   set (and not 0/no/false/off): no disk cache, as options.cache_disabled
 *                        (to rule the cache out while debugging)
 *   UV_THREADPOOL_SIZE   the threads of libuv's pool that compiles run on (read by libuv once,
 *                        at the process's first use of the pool; default 4)
 *   TIRX_COMPILE_WORKERS the compile workers' count when options.compile_workers is 0: a
 *                        number from 1 to 64, or 0 / "off" for NVRTC in the process (as
 *                        options.compile_in_process); anything else is reported on stderr and
 *                        ignored
 *   TIRX_COMPILE_WORKER  the compile worker program when options.compile_worker is NULL; one
 *                        that is not an executable file is reported on stderr, and NVRTC then
 *                        runs in the process
 *   TIRX_COMPILE_WORKER_NICE  what compile workers add to the host's nice value, 0 to 19
 *                        (default 10; the sum at most 19); anything else is reported on stderr
 *                        and the default kept
 *
 * Compile workers. NVRTC runs in worker processes (the tirx-compile-worker program installed with
 * the library, in its libexecdir) rather than on the runtime's threads: NVRTC serialises part of
 * its work between threads of one process, so processes compile at the speed of the cores, and a
 * crash inside NVRTC costs a worker, not the host. Workers are started with libuv's uv_spawn
 * (fork and exec at once: no child runs on with the host's CUDA state), one when a compile finds
 * none idle, up to the pool's size (options.compile_workers), at a nice value 10 above the host's
 * (TIRX_COMPILE_WORKER_NICE) so they yield the cores to launching threads (in the host's session:
 * Linux's autogroups are per session), in their own process group (a terminal's ^C reaches the
 * host only); they leave when the runtime is destroyed (or their host dies: their socket closes).
 * The bytes compiled, the cache keys and the messages are those of NVRTC in the process. A worker
 * that dies during a compile (killed, crashed) is replaced and the compile retried once; a second
 * death fails the compile with TIRX_E_COMPILE:
 *   tirx_launch: the compile worker (pid 12, /usr/libexec/tirx-compile-worker) was killed by
 *   signal 9 (Killed) while compiling 'k'; the retry on a fresh worker (pid 13) was killed by
 *   signal 9 (Killed) too. ...
 * NVRTC runs in the process instead when no worker program is found, when the first worker
 * cannot be started or is not a tirx compile worker of this NVRTC version (the pool then turns
 * itself off, said once with TIRX_LOG=compiles), or when options.compile_in_process (or
 * TIRX_COMPILE_WORKERS=0) says so. A compile waiting for its worker holds one of libuv's pool
 * threads, so at most UV_THREADPOOL_SIZE - 1 run at once by default (max_parallel_compiles).
 * Each runtime has its own pool: a process with a runtime per GPU sets compile_workers so that
 * the pools together fit the cores. A host that reaps every child itself (waitpid(-1), SIGCHLD
 * ignored) should compile in the process: libuv needs the workers' exit statuses.
 *
 * Kernel cache. A launch binds the kernel's parameters, forms the variant's specialisation key
 * (tirx_param_set_policy) and looks the variant up in the runtime's memory table (no lock);
 * on a miss it looks in the disk cache (a content-hashed directory that many processes share:
 * every entry is checked, length, checksum, key, arch and NVRTC version, before its bytes reach
 * the driver; a corrupt or foreign entry is counted, removed and recompiled), and only then
 * compiles with NVRTC on the compile queue (libuv's thread pool) and publishes the cubin.
 * Requests for one variant share one compile. The disk cache is best effort: a read-only, full
 * or unusable directory never fails a compile. tirx_runtime_cache_stats() has the counters.
 *
 * fork(). A runtime (and a future) belongs to the process that created it. In a child of
 * fork() every function taking it returns TIRX_E_FORKED, and tirx_runtime_destroy() leaves it
 * alone; the child creates its own runtime. A child that inherited a runtime with compile
 * threads should leave with _exit() or exec(): libuv's exit-time destructor would wait for the
 * parent's threads.
 *
 * Included by <tirx.h>; do not include it on its own.
 */
#ifndef TIRX_RUNTIME_H
#define TIRX_RUNTIME_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A runtime: one device's context, kernel cache and compile queue (thread-safe). */
typedef struct tirx_runtime tirx_runtime;

/* What a runtime reports through tirx_runtime_options.on_event. */
typedef enum tirx_event_kind {
  TIRX_EVENT_COMPILE_STARTED = 0,  /* a variant is neither in memory nor on disk: NVRTC starts */
  TIRX_EVENT_COMPILE_FINISHED = 1, /* status; millis (disk lookup, NVRTC, publish, load) and
                                      nvrtc_millis (NVRTC alone) */
  TIRX_EVENT_DISK_HIT = 2,         /* a variant was found valid on disk (millis: read + load) */
  TIRX_EVENT_CACHE_WARNING = 3     /* message: a disk cache problem; compiles go on */
} tirx_event_kind;

/* One event. Strings are borrowed for the duration of the callback. */
typedef struct tirx_event {
  tirx_event_kind kind; /* what happened */
  const char *kernel;  /* the kernel's name; "" for warnings */
  const char *key;     /* the variant's cache key, 32 hex digits; "" for warnings */
  tirx_status status;  /* COMPILE_FINISHED: the outcome; TIRX_OK otherwise */
  double millis;       /* COMPILE_FINISHED, DISK_HIT: the time it took (tirx_event_kind) */
  double nvrtc_millis; /* COMPILE_FINISHED: NVRTC's part of millis */
  const char *message; /* the error (COMPILE_FINISHED) or the warning; "" otherwise */
} tirx_event;

/* Receives events. Called on compile threads (libuv's pool), several at once: it must be
 * thread-safe and quick, and must not call back into the runtime. */
typedef void (*tirx_event_fn)(const tirx_event *event, void *user);

/*
 * What a launch does when its stream is being captured into a CUDA graph
 * (cuStreamBeginCapture, any mode: global, thread-local or relaxed) and the variant it needs is
 * not ready in the runtime's memory table. A launch whose variant is ready is captured like any
 * other kernel launch, with no check (the capture check runs on the miss path only).
 *
 * The rule for servers: warm up before capturing. Launch every shape once outside the capture,
 * or call tirx_runtime_warmup() (with tiered compilation, then tirx_runtime_drain()), and only
 * then capture; a graph holds the variant that was ready at capture time for as long as it is
 * replayed.
 */
typedef enum tirx_capture_policy {
  /* The default (and the behaviour before this option existed): the launch finds, compiles and
   * loads the variant inside the capture, waiting for it (a first compile stalls the capturing
   * thread for the NVRTC time, tens to hundreds of milliseconds). With tiered compilation it
   * waits for the specialised variant rather than baking the dynamic one into the graph.
   * Whether loading a module during a global-mode capture invalidates the capture is an open
   * question (no GPU run has answered it; tests/gpu/test_capture.c,
   * gpu_capture::module_load_during_a_global_capture, records the outcome): prefer a warm-up,
   * or TIRX_CAPTURE_REFUSE, under which no module is loaded inside a capture. */
  TIRX_CAPTURE_WAIT = 0,
  /* The launch fails with TIRX_E_CAPTURE and records nothing into the capture; nothing is
   * compiled, read from disk or loaded (the capture stays valid; the caller may end it, warm up
   * and capture again). With tiered compilation this also applies while the specialised
   * variant is still compiling, even when the dynamic one is ready. Message:
   *   tirx_launch: kernel 'k' is not ready and its stream is capturing a CUDA graph
   *   (capture_policy TIRX_CAPTURE_REFUSE): launch it once, or warm it up, before capturing */
  TIRX_CAPTURE_REFUSE = 1
} tirx_capture_policy;

/* Options of tirx_runtime_create. Zero-initialise and set the fields you need. An extensible
 * struct (README.md, "ABI policy"): size is 0 (version 1: the fields up to context),
 * offsetof(tirx_runtime_options, compile_workers) (the same) or sizeof(tirx_runtime_options)
 * (version 2, issue 18: the compile worker fields too). */
typedef struct tirx_runtime_options {
  /* 0, or sizeof(tirx_runtime_options) to use fields added after version 1 (a version-1 caller's
   * compile worker fields read as 0, the defaults). Other values: TIRX_E_INVALID_ARG
   * ("tirx_runtime_create: options->size is 3, expected 0, 112 or 128
   * (sizeof(tirx_runtime_options))" on x86-64). */
  size_t size;
  /* CUDA device ordinal, 0 by default. */
  int device;
  /* Target architecture, "sm_90a", "sm_80", ... NULL: the device's own (sm_90a for compute
   * capability 9.0, sm_100a for 10.0, sm_80 for 8.0); without a device, "sm_90a". */
  const char *arch;
  /* The driver library to dlopen. NULL: $TIRX_DRIVER_LIBRARY, else "libcuda.so.1". */
  const char *driver_library;
  /* True: never load the driver (a compile-only runtime, for tools and CPU machines). */
  bool compile_only;
  /* Directory for kernel dumps. NULL: $TIRX_DUMP_DIR (no dumps when unset or empty). */
  const char *dump_dir;
  /* The disk cache directory. NULL: $TIRX_CACHE_DIR, else $XDG_CACHE_HOME/tirx, else
   * ~/.cache/tirx. Created 0700 on first use; refused (the cache is then off, with one
   * CACHE_WARNING) when it is a symbolic link, owned by another user or writable by others. */
  const char *cache_dir;
  /* True: no disk cache; variants live in memory only. */
  bool cache_disabled;
  /* True: entries are not fsync'ed before they are published (faster; after a power cut an
   * entry may be lost, never accepted corrupt). */
  bool cache_no_fsync;
  /* Soft limit on the disk cache's size in bytes, least recently used entries evicted first.
   * 0: 1 GiB. */
  uint64_t cache_max_bytes;
  /* Tiered compilation: when a launch needs a specialised variant that is not compiled yet,
   * it starts compiling it in the background and runs the dynamic variant (the same
   * parameters, compiled for any value; compiled first when absent). Later launches run the
   * specialised variant once it is ready. */
  bool tiered;
  /* The most compiles this runtime runs at once on libuv's pool. 0: half the pool (rounded
   * up), leaving threads to a host that shares the pool; with compile workers, as many as
   * there are workers, at most the pool's size - 1 (and at least half of it). */
  unsigned max_parallel_compiles;
  /* Progress and cache warnings (optional), with its user pointer. */
  tirx_event_fn on_event;
  void *event_user;
  /* Launches on a capturing stream whose variant is not ready (tirx_capture_policy); 0 is
   * TIRX_CAPTURE_WAIT. Other values: TIRX_E_INVALID_ARG from tirx_runtime_create. */
  tirx_capture_policy capture_policy;
  /* A CUcontext of the host's to run in instead of the device's primary context (NULL: the
   * primary context, retained). The runtime does not retain it: the host keeps it alive until
   * tirx_runtime_destroy() has returned. Its device is the runtime's (device must be 0 or that
   * device's ordinal). Errors: TIRX_E_INVALID_ARG with compile_only, or when device names
   * another device; TIRX_E_NO_DEVICE as ever without a driver; TIRX_E_DRIVER when the driver
   * refuses the context. */
  void *context;
  /* Version 2 (set size to sizeof(tirx_runtime_options) to use them). */
  /* The most compile worker processes (see "Compile workers" above). 0: $TIRX_COMPILE_WORKERS,
   * else one per core (uv_available_parallelism), at most 64. More than 64:
   * TIRX_E_INVALID_ARG. */
  unsigned compile_workers;
  /* True: no compile workers; NVRTC runs on the runtime's threads (as TIRX_COMPILE_WORKERS=0). */
  bool compile_in_process;
  /* The compile worker program. NULL: $TIRX_COMPILE_WORKER, else tirx-compile-worker in the
   * library's installed libexecdir, else tirx-compile-worker in the directory of the library
   * (the build tree's libtirx.so); none found: NVRTC in the process. A path that is not an
   * executable file: TIRX_E_INVALID_ARG from tirx_runtime_create. */
  const char *compile_worker;
} tirx_runtime_options;

/*
 * Creates a runtime. options may be NULL (all defaults). The runtime is created even when no
 * driver or no device is present; tirx_runtime_has_device() tells which, and
 * tirx_runtime_device_error() why not. The caller destroys it with tirx_runtime_destroy().
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (negative device, malformed arch, device
 * ordinal beyond the devices present), TIRX_E_NOT_SUPPORTED (an arch NVRTC cannot target),
 * TIRX_E_DRIVER (the driver failed after it reported a device), TIRX_E_NO_MEMORY. Without
 * NVRTC the runtime is created and options->arch is checked for its form only.
 */
TIRX_API tirx_status tirx_runtime_create(const tirx_runtime_options *options, tirx_runtime **out);

/* Unloads the runtime's modules, releases its primary context and frees it. The caller must
 * have finished every launch it made (synchronize first). Compiles still queued are cancelled
 * (their futures finish with TIRX_E_CANCELLED, callbacks called once), running ones are waited
 * for. NULL, or a runtime inherited across fork() (left alone), is a no-op. */
TIRX_API void tirx_runtime_destroy(tirx_runtime *rt);

/* The most compile worker processes the runtime runs (see "Compile workers" above), or 0 when
 * NVRTC runs in the process: no worker program, compile_in_process, or the pool turned itself
 * off. 0 for NULL. */
TIRX_API unsigned tirx_runtime_compile_workers(tirx_runtime *rt);

/* True when the runtime has a usable device (a driver, a device, a retained context). */
TIRX_API bool tirx_runtime_has_device(const tirx_runtime *rt);

/* The target architecture, "sm_90a". Owned by the runtime; NULL when rt is NULL. */
TIRX_API const char *tirx_runtime_arch(const tirx_runtime *rt);

/* The device's name ("NVIDIA H200"), or "" without a device. Owned by the runtime. */
TIRX_API const char *tirx_runtime_device_name(const tirx_runtime *rt);

/* Why the runtime has no device ("cannot load libcuda.so.1: ..."), or "" when it has one.
 * Owned by the runtime. */
TIRX_API const char *tirx_runtime_device_error(const tirx_runtime *rt);

/*
 * Health: TIRX_OK while the runtime works; TIRX_E_STICKY (with the original driver message in
 * tirx_last_error()) once a fatal device error (an illegal address, a trap, ...) was seen.
 * After such an error the CUDA context is unusable for the life of the process: every call
 * that needs the device fails fast with TIRX_E_STICKY. A supervisor should restart the process.
 */
TIRX_API tirx_status tirx_runtime_health(const tirx_runtime *rt);

/* ------------------------------------------------------------------------------------------ */
/* Compilation                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* The result of tirx_compile: a cubin, its PTX and the NVRTC log. Immutable; the caller
 * destroys it. */
typedef struct tirx_compiled tirx_compiled;

/*
 * Compiles a built kernel with NVRTC for arch (NULL: the runtime's arch), to a cubin and PTX.
 * Works without a GPU. With TIRX_DUMP_DIR set, writes the dump files.
 * The kernel's code must exist on arch: arch must not be older than what the rules dispatch
 * chose and the native statements need (builder.h, tirx_set_target), and a kernel with wgmma
 * or setmaxnreg compiles for sm_90a only. A kernel dispatched for sm_80 compiles for sm_90a;
 * one dispatched for sm_90a with wgmma is refused for sm_80:
 *
 *     tirx_compile: arch is sm_80, expected sm_90 or newer: kernel 'k' (dispatched for
 *     sm_90a) uses gemm_async.wgmma, which needs sm_90
 *
 * Launches (tirx_launch, tirx_prepare_async, tirx_runtime_warmup) check the runtime's arch the
 * same way before they compile ("tirx_launch: the runtime's arch is sm_80, expected ...").
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (malformed arch), TIRX_E_NOT_SUPPORTED (arch
 * unknown to this NVRTC, or older than the kernel needs), TIRX_E_NO_NVRTC (no NVRTC library
 * could be loaded: the message lists each one tried and why it failed), TIRX_E_COMPILE (the
 * message holds the NVRTC log with the offending lines of the generated source quoted),
 * TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_status tirx_compile(tirx_runtime *rt, const tirx_kernel *kernel, const char *arch,
                                  tirx_compiled **out);

/* The cubin: its bytes (owned by c) and size in *size. NULL (size 0) when c is NULL. */
TIRX_API const void *tirx_compiled_cubin(const tirx_compiled *c, size_t *size);
/* The PTX text, the NVRTC log ("" when empty), the arch and the entry point's name. Owned by
 * c; NULL when c is NULL. */
TIRX_API const char *tirx_compiled_ptx(const tirx_compiled *c);
TIRX_API const char *tirx_compiled_log(const tirx_compiled *c);
TIRX_API const char *tirx_compiled_arch(const tirx_compiled *c);
TIRX_API const char *tirx_compiled_entry(const tirx_compiled *c);
/* Frees c. NULL is a no-op. */
TIRX_API void tirx_compiled_destroy(tirx_compiled *c);

/* ------------------------------------------------------------------------------------------ */
/* Launch                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/*
 * Launches kernel on stream (a CUstream; NULL: the legacy default stream) with args, which
 * match the kernel's parameters in order. Binds symbolic sizes from the arguments, checks
 * every argument against its declaration (an error, never a launch, on a mismatch), finds the
 * loaded kernel (compiling and loading it on first use; later launches of the same kernel
 * reuse it) and calls cuLaunchKernel. Asynchronous: errors inside the kernel show at the next
 * synchronising call. The calling thread's current CUDA context is left as it was.
 * A launch on a stream that is capturing a CUDA graph follows the runtime's capture_policy
 * when its variant is not ready (tirx_capture_policy).
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (nargs), TIRX_E_NO_DEVICE, TIRX_E_STICKY,
 * TIRX_E_LAUNCH_ARG, TIRX_E_LIMIT, TIRX_E_NOT_SUPPORTED (the runtime's arch is older than the
 * kernel needs, as for tirx_compile), TIRX_E_COMPILE, TIRX_E_DRIVER, TIRX_E_FORKED,
 * TIRX_E_CAPTURE (TIRX_CAPTURE_REFUSE).
 * A launch whose variant is in memory takes no lock and allocates nothing.
 */
TIRX_API tirx_status tirx_launch(tirx_runtime *rt, const tirx_kernel *kernel, const tirx_arg *args,
                                 int nargs, void *stream);

/* Where the function a launch ran came from (tirx_launch_info.source). */
typedef enum tirx_launch_source {
  TIRX_LAUNCH_FROM_MEMORY = 0,   /* already loaded in the runtime: the fast path */
  TIRX_LAUNCH_FROM_DISK = 1,     /* read from the disk cache and loaded by this launch */
  TIRX_LAUNCH_FROM_COMPILE = 2   /* this launch waited for an NVRTC compile (its own or one it
                                    joined) */
} tirx_launch_source;

/* What one launch did, for a server's logs (tirx_launch_ex). Set size to sizeof(tirx_launch_info)
 * before the call: the runtime writes only the fields that fit in size, so a caller compiled
 * against an older, shorter struct keeps working. */
typedef struct tirx_launch_info {
  size_t size;               /* set by the caller */
  tirx_launch_source source; /* of the function that ran */
  bool fell_back;            /* tiered: the dynamic variant ran while the specialised one
                                compiles in the background */
  bool capturing;            /* the stream was capturing a graph (looked up on the miss path
                                only: false on the fast path, which never asks the driver) */
  double millis;             /* host time of the call, lookup, compile and launch included */
  /* fell_back because the specialised variant's background compile or load failed: the
   * first such error (owned by the runtime, valid until tirx_runtime_destroy; NULL otherwise). A failure
   * other than an NVRTC error (TIRX_E_COMPILE, which would fail again) is retried in the
   * background up to 3 times, 0.25 s, 1 s and 4 s after each failure; until then, and for
   * good after that, launches run the dynamic variant. */
  const char *background_error;
} tirx_launch_info;

/*
 * tirx_launch, and when info is not NULL, fills *info on success (the fields past info->size are
 * not written). Errors: those of tirx_launch, and TIRX_E_INVALID_ARG when info->size is below
 * offsetof(tirx_launch_info, fell_back), the smallest struct that holds source:
 *   tirx_launch_ex: info->size is 4, expected at least 12 (sizeof(tirx_launch_info) is 32)
 */
TIRX_API tirx_status tirx_launch_ex(tirx_runtime *rt, const tirx_kernel *kernel,
                                    const tirx_arg *args, int nargs, void *stream,
                                    tirx_launch_info *info);

/* ------------------------------------------------------------------------------------------ */
/* Kernel cache, asynchronous preparation, warm-up                                            */
/* ------------------------------------------------------------------------------------------ */

/* Counters of a runtime's kernel cache since its creation. An extensible struct (README.md,
 * "ABI policy"): zero it (or set size) before the call. */
typedef struct tirx_cache_stats {
  /* In: 0 (version 1: the fields up to nvrtc_millis), offsetof(tirx_cache_stats,
   * worker_compiles) (the same) or sizeof(tirx_cache_stats) (version 2, issue 18: the worker
   * counters too); the runtime writes that version's fields. Out: the bytes written. */
  size_t size;
  uint64_t hits;             /* variants found valid in the disk cache */
  uint64_t misses;           /* disk lookups that found no usable entry */
  uint64_t compiles;         /* NVRTC compiles this runtime ran (failed ones included) */
  uint64_t corrupt_detected; /* disk entries rejected (corrupt or foreign), removed, recompiled */
  uint64_t publish_failed;   /* disk writes that failed (the compile still succeeded) */
  uint64_t evictions;        /* disk entries removed by the size limit */
  uint64_t dedup_joined;     /* requests that joined a compile already queued or running */
  uint64_t cancelled;        /* requests that finished cancelled */
  uint64_t compile_failures; /* compiles that failed (NVRTC errors) */
  uint64_t loads;            /* modules loaded into the device context */
  uint64_t tiered_fallbacks; /* launches that ran the dynamic variant while the specialised one
                                compiled */
  uint64_t variants;         /* variants in the memory table */
  double nvrtc_millis;       /* time spent in NVRTC */
  /* Version 2. */
  uint64_t worker_compiles;  /* compiles (of those counted in compiles, and tirx_compile's) that
                                ran in a compile worker process */
  uint64_t worker_deaths;    /* compile workers that died (or answered garbage) during a
                                compile, each replaced and its compile retried once */
} tirx_cache_stats;

/* Copies the counters into *out, as many as out->size holds. Errors: TIRX_E_NULL_ARG,
 * TIRX_E_INVALID_ARG (out->size none of 0 and the two versions' sizes), TIRX_E_FORKED. */
TIRX_API tirx_status tirx_runtime_cache_stats(tirx_runtime *rt, tirx_cache_stats *out);

/* The disk cache's directory, "" when the cache is disabled or unusable (the reason went to
 * on_event and TIRX_LOG). Opens the cache if nothing did yet. Owned by the runtime; NULL when rt
 * is NULL. */
TIRX_API const char *tirx_runtime_cache_dir(tirx_runtime *rt);

/* A request to make a kernel variant ready: reference counted, thread-safe, independent of the
 * runtime's lifetime once created (release it even after tirx_runtime_destroy). */
typedef struct tirx_future tirx_future;

/* Called exactly once when the request finishes, with its final status. */
typedef void (*tirx_future_fn)(tirx_future *f, tirx_status status, void *user);

/*
 * Starts making the variant that a launch with args would run ready (from memory, disk or a
 * compile), without waiting for a compile: a variant found in memory or in the disk cache is
 * loaded before this returns, and *out (release it) is then already finished; otherwise the
 * compile runs on the queue and *out finishes when the variant is ready. Works on a compile-only runtime (compile and publish to disk). args must
 * pass the launch checks (tensor data pointers non-NULL and aligned; they are not read).
 * Errors (then *out is NULL): TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG, TIRX_E_LAUNCH_ARG,
 * TIRX_E_LIMIT, TIRX_E_NOT_SUPPORTED (as tirx_launch), TIRX_E_STICKY, TIRX_E_FORKED,
 * TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_status tirx_prepare_async(tirx_runtime *rt, const tirx_kernel *kernel,
                                        const tirx_arg *args, int nargs, tirx_future **out);

/* True once the request has finished (false for NULL). */
TIRX_API bool tirx_future_poll(const tirx_future *f);

/*
 * Waits at most timeout_ms milliseconds (-1: forever, 0: just look) and returns the final
 * status: TIRX_OK, or the request's error (TIRX_E_COMPILE, TIRX_E_CANCELLED, ...), also recorded
 * as the thread's last error with the request's message. TIRX_E_TIMEOUT when it has not
 * finished in time (it goes on). Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (timeout_ms < -1,
 * or a wait from a completion callback for a request that has not finished), TIRX_E_FORKED.
 */
TIRX_API tirx_status tirx_future_wait(tirx_future *f, int64_t timeout_ms);

/* The final status, or TIRX_E_TIMEOUT while the request runs. TIRX_E_NULL_ARG for NULL. Records
 * no error. */
TIRX_API tirx_status tirx_future_status(const tirx_future *f);

/* The final message: "" for TIRX_OK and while pending, else the error's text (whole, not cut
 * to the last-error limit). Lives as long as the future; "" for NULL. */
TIRX_API const char *tirx_future_message(const tirx_future *f);

/*
 * Sets f's completion callback, called exactly once: at once on this thread when f has already
 * finished, else on the runtime's queue thread when it finishes (then it must not wait for an
 * unfinished request, destroy the runtime, or launch a kernel that is not ready).
 * Errors (cb never called): TIRX_E_NULL_ARG (f, cb), TIRX_E_INVALID_ARG (a callback was already
 * set), TIRX_E_FORKED.
 */
TIRX_API tirx_status tirx_future_on_complete(tirx_future *f, tirx_future_fn cb, void *user);

/* Cancels the request when it has not finished: it finishes with TIRX_E_CANCELLED (a compile
 * that other requests share goes on for them). TIRX_OK also when it had finished. Errors:
 * TIRX_E_NULL_ARG, TIRX_E_FORKED. */
TIRX_API tirx_status tirx_future_cancel(tirx_future *f);

/* Drops the caller's reference. NULL is a no-op. */
TIRX_API void tirx_future_release(tirx_future *f);

/*
 * Makes count variants of kernel ready in parallel, one per shape binding: arg_lists[i] holds
 * nargs[i] arguments as for tirx_launch (data pointers are checked, never read). On a
 * compile-only runtime this compiles and publishes to the disk cache, so a later process that
 * uses the same cache launches with no compile. Waits for all of them. Returns TIRX_OK, or the
 * first failure in binding order: "tirx_runtime_warmup: binding 2: <the error>".
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (count < 0), those of tirx_prepare_async and of
 * the compiles.
 */
TIRX_API tirx_status tirx_runtime_warmup(tirx_runtime *rt, const tirx_kernel *kernel,
                                         const tirx_arg *const *arg_lists, const int *nargs,
                                         int count);

/*
 * Waits until the runtime's compile queue is idle: every compile that was submitted (by
 * launches, tiered background compiles, tirx_prepare_async, warm-ups) has finished, and its
 * variant is ready or has failed. timeout_ms: -1 forever, 0 just look. A server calls it after a
 * tiered warm-up and before capturing graphs. Compiles submitted while it waits are waited for
 * too. Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (timeout_ms < -1, or a call from a completion
 * callback, which runs on the queue's thread and would wait for itself), TIRX_E_TIMEOUT ("...:
 * 2 compiles still running after 10 ms"), TIRX_E_FORKED.
 */
TIRX_API tirx_status tirx_runtime_drain(tirx_runtime *rt, int64_t timeout_ms);

/* ------------------------------------------------------------------------------------------ */
/* Device memory (a small convenience for hosts and tests)                                     */
/* ------------------------------------------------------------------------------------------ */

/*
 * Streams. Every function below that takes a stream takes a CUstream (void *, so that no CUDA
 * header is needed) of the runtime's context, tirx_runtime_context(); NULL is the legacy default
 * stream. A host that has no CUDA runtime of its own makes streams with
 * tirx_runtime_stream_create(); one that has (cudaStream_t is a CUstream) passes its own,
 * created in the device's primary context, which is the one the CUDA runtime API uses.
 *
 * The same convention everywhere: a function that queues work on the device takes the stream as
 * its last argument (tirx_launch, tirx_launch_ex before its info, the _async copies and fills,
 * every tirx_op_* of tirx/kernels.h, tirx_op_tp_linear); NULL means the legacy default stream;
 * work queued on one stream runs in order, and a capturing stream records it (so do tirx/dist.h's
 * tirx_collective_run and tirx_comm_synchronize). The one exception is tirx_runtime_synchronize,
 * where NULL waits for every stream of the context. The functions
 * without a stream (tirx_runtime_copy, tirx_runtime_fill32) are the driver's synchronous forms
 * (cuMemcpy*, cuMemsetD32), ordered after the legacy default stream.
 */

/* The runtime's CUDA context (a CUcontext: options->context, else the device's primary context,
 * retained by the runtime until tirx_runtime_destroy), or NULL without a device (and in a
 * forked child). */
TIRX_API void *tirx_runtime_context(const tirx_runtime *rt);

/* Creates a stream in the runtime's context (CU_STREAM_NON_BLOCKING: it does not synchronise
 * with the legacy default stream) into *out. Destroy it with tirx_runtime_stream_destroy().
 * Errors: TIRX_E_NULL_ARG, TIRX_E_NO_DEVICE, TIRX_E_STICKY, TIRX_E_DRIVER, TIRX_E_FORKED. */
TIRX_API tirx_status tirx_runtime_stream_create(tirx_runtime *rt, void **out);

/* Destroys a stream from tirx_runtime_stream_create() (work queued on it still completes).
 * NULL is a no-op. Errors: TIRX_E_NULL_ARG (rt), TIRX_E_NO_DEVICE, TIRX_E_STICKY,
 * TIRX_E_DRIVER, TIRX_E_FORKED. */
TIRX_API tirx_status tirx_runtime_stream_destroy(tirx_runtime *rt, void *stream);

/* Whether stream (NULL: the legacy default stream) is capturing into a CUDA graph, into *out
 * (cuStreamIsCapturing). The legacy stream reads true while another stream captures in global
 * or thread-local mode (work on it would join that capture). Errors: TIRX_E_NULL_ARG,
 * TIRX_E_NO_DEVICE, TIRX_E_STICKY, TIRX_E_DRIVER, TIRX_E_FORKED. */
TIRX_API tirx_status tirx_runtime_stream_is_capturing(tirx_runtime *rt, void *stream, bool *out);

/* Allocates bytes (> 0) of device memory (256-byte aligned) into *out. Free with
 * tirx_runtime_free(). Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG, TIRX_E_NO_DEVICE,
 * TIRX_E_STICKY, TIRX_E_NO_MEMORY (device memory exhausted), TIRX_E_DRIVER. */
TIRX_API tirx_status tirx_runtime_alloc(tirx_runtime *rt, size_t bytes, void **out);

/* Frees memory from tirx_runtime_alloc(). NULL ptr is a no-op (TIRX_OK). */
TIRX_API tirx_status tirx_runtime_free(tirx_runtime *rt, void *ptr);

/* The direction of a copy. */
typedef enum tirx_copy_kind {
  TIRX_COPY_HOST_TO_DEVICE = 0,
  TIRX_COPY_DEVICE_TO_HOST = 1,
  TIRX_COPY_DEVICE_TO_DEVICE = 2
} tirx_copy_kind;

/* Copies bytes from src to dst, synchronously with respect to the host (after the work on
 * the legacy default stream). bytes == 0 is a no-op. Errors: TIRX_E_NULL_ARG,
 * TIRX_E_INVALID_ARG (kind), TIRX_E_NO_DEVICE, TIRX_E_STICKY, TIRX_E_DRIVER. */
TIRX_API tirx_status tirx_runtime_copy(tirx_runtime *rt, void *dst, const void *src, size_t bytes,
                                       tirx_copy_kind kind);

/* tirx_runtime_copy queued on stream (NULL: the legacy default stream; a capturing stream
 * records it into the graph), asynchronous with respect to the host: src and dst must stay
 * valid until the stream reaches the copy. Host memory that is not page-locked makes the driver
 * stage it, and the call may return only once the host side was read. Errors as
 * tirx_runtime_copy (named tirx_runtime_copy_async). */
TIRX_API tirx_status tirx_runtime_copy_async(tirx_runtime *rt, void *dst, const void *src,
                                             size_t bytes, tirx_copy_kind kind, void *stream);

/* Sets count 32-bit words at dst (4-byte aligned device memory) to value (poisoning outputs in
 * tests, zeroing), ordered after the legacy default stream. Errors as tirx_runtime_copy, and
 * TIRX_E_INVALID_ARG for a misaligned dst. */
TIRX_API tirx_status tirx_runtime_fill32(tirx_runtime *rt, void *dst, uint32_t value, size_t count);

/* tirx_runtime_fill32 queued on stream (NULL: the legacy default stream), asynchronous with
 * respect to the host. Errors as tirx_runtime_fill32 (named tirx_runtime_fill32_async). */
TIRX_API tirx_status tirx_runtime_fill32_async(tirx_runtime *rt, void *dst, uint32_t value,
                                               size_t count, void *stream);

/* Waits for stream (NULL: every stream of the context). This is where faults inside kernels
 * surface: a fatal one turns the runtime sticky (see tirx_runtime_health).
 * Errors: TIRX_E_NULL_ARG, TIRX_E_NO_DEVICE, TIRX_E_STICKY, TIRX_E_DRIVER. */
TIRX_API tirx_status tirx_runtime_synchronize(tirx_runtime *rt, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_RUNTIME_H */
