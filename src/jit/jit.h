/* Internals of the JIT shared by nvrtc.c, runtime.c, launch.c and memory.c. */
#ifndef TIRX_JIT_JIT_H
#define TIRX_JIT_JIT_H

#include <pthread.h>
#include <stdatomic.h>

#include "../ir/kernel_abi.h"
#include "driver.h"

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
 * TIRX_E_COMPILE ("<fn>: NVRTC could not compile '<name>' for <arch>: ..." with each error
 * line of the log followed by the source line it names), TIRX_E_NO_MEMORY.
 */
tirx_status tirx__nvrtc_compile(const char *fn, const char *name, const char *source,
                                const char *arch, bool want_ptx, tirx__nvrtc_output *out);
void tirx__nvrtc_output_free(tirx__nvrtc_output *out);

/* Checks arch is "sm_<digits>" with an optional "a" or "f" suffix and that this NVRTC can
 * target it. Errors: TIRX_E_INVALID_ARG, TIRX_E_NOT_SUPPORTED. */
tirx_status tirx__nvrtc_check_arch(const char *fn, const char *arch);

/* The NVRTC version as major * 1000 + minor * 10 (13000 for 13.0). */
int tirx__nvrtc_version(void);

/* ---- the runtime (runtime.c) ---- */

/* One loaded kernel, keyed by its content hash. */
typedef struct tirx__loaded {
  uint64_t hash[2];
  CUmodule module;
  CUfunction function;
  _Atomic uint32_t smem_allowed; /* dynamic shared memory the function is allowed (48 KiB) */
  char *entry;
} tirx__loaded;

struct tirx_runtime {
  /* Fixed after creation. */
  int ordinal;
  char arch[16];
  char device_name[128];
  char *device_error; /* why there is no device; "" when there is one */
  char *dump_dir;     /* NULL: no dumps */
  int log_level;
  bool has_device;
  tirx__driver drv;
  CUdevice device;
  CUcontext ctx;      /* the retained primary context */
  int max_smem_optin; /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */

  /* Sticky failure: set once, never cleared. */
  atomic_bool failed;
  pthread_mutex_t failed_lock;
  char *failed_message;

  /* Loaded kernels: open addressing on hash[0], guarded by lock. Compiles of a missing
   * kernel are serialised by compile_lock (NVRTC serialises most of its work anyway), with
   * the table re-checked after taking it. */
  pthread_mutex_t lock;
  pthread_mutex_t compile_lock;
  tirx__loaded **slots;
  size_t nslots, nloaded;
};

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

/* Finds the loaded kernel for k, compiling and loading it on first use. */
tirx_status tirx__runtime_function(tirx_runtime *rt, const tirx_kernel *k, const char *fn,
                                   tirx__loaded **out);

/* Writes the dumps of a compiled kernel when the runtime has a dump directory (failures to
 * write are reported on stderr and otherwise ignored). */
void tirx__dump_kernel(const tirx_runtime *rt, const tirx_kernel *k, const char *ptx);

/* "0123...": the 32 hex digits of a kernel hash, into buf[33]. */
void tirx__hash_hex(const uint64_t hash[2], char buf[33]);

/* Prints to stderr when the runtime's log level is at least level. */
void tirx__log(const tirx_runtime *rt, int level, const char *fmt, ...) TIRX_PRINTF(3, 4);

#endif
