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
 * Environment:
 *   TIRX_DRIVER_LIBRARY  the driver library to dlopen instead of "libcuda.so.1" (tests)
 *   TIRX_DUMP_DIR        when set, every compiled kernel writes <entry>-<hash>.ir, .cu and
 *                        .ptx into this directory (created if missing)
 *   TIRX_LOG             stderr verbosity: 0 silent (default), 1 compiles, 2 launches too
 *
 * Included by <tirx.h>; do not include it on its own.
 */
#ifndef TIRX_RUNTIME_H
#define TIRX_RUNTIME_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tirx_runtime tirx_runtime;

/* Options of tirx_runtime_create. Zero-initialise and set the fields you need. */
typedef struct tirx_runtime_options {
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
} tirx_runtime_options;

/*
 * Creates a runtime. options may be NULL (all defaults). The runtime is created even when no
 * driver or no device is present; tirx_runtime_has_device() tells which, and
 * tirx_runtime_device_error() why not. The caller destroys it with tirx_runtime_destroy().
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (negative device, malformed arch, device
 * ordinal beyond the devices present), TIRX_E_NOT_SUPPORTED (an arch NVRTC cannot target),
 * TIRX_E_DRIVER (the driver failed after it reported a device), TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_status tirx_runtime_create(const tirx_runtime_options *options, tirx_runtime **out);

/* Unloads the runtime's modules, releases its primary context and frees it. The caller must
 * have finished every launch it made (synchronize first). NULL is a no-op. */
TIRX_API void tirx_runtime_destroy(tirx_runtime *rt);

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
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (malformed arch), TIRX_E_NOT_SUPPORTED (arch
 * unknown to this NVRTC), TIRX_E_COMPILE (the message holds the NVRTC log with the offending
 * lines of the generated source quoted), TIRX_E_NO_MEMORY.
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
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (nargs), TIRX_E_NO_DEVICE, TIRX_E_STICKY,
 * TIRX_E_LAUNCH_ARG, TIRX_E_LIMIT, TIRX_E_COMPILE, TIRX_E_DRIVER.
 */
TIRX_API tirx_status tirx_launch(tirx_runtime *rt, const tirx_kernel *kernel, const tirx_arg *args,
                                 int nargs, void *stream);

/* ------------------------------------------------------------------------------------------ */
/* Device memory (a small convenience for hosts and tests)                                     */
/* ------------------------------------------------------------------------------------------ */

/* Allocates bytes (> 0) of device memory (256-byte aligned) into *out. Free with
 * tirx_runtime_free(). Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG, TIRX_E_NO_DEVICE,
 * TIRX_E_STICKY, TIRX_E_NO_MEMORY (device memory exhausted), TIRX_E_DRIVER. */
TIRX_API tirx_status tirx_runtime_alloc(tirx_runtime *rt, size_t bytes, void **out);

/* Frees memory from tirx_runtime_alloc(). NULL ptr is a no-op (TIRX_OK). */
TIRX_API tirx_status tirx_runtime_free(tirx_runtime *rt, void *ptr);

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

/* Sets count 32-bit words at dst (4-byte aligned device memory) to value (poisoning outputs in
 * tests, zeroing). Errors as tirx_runtime_copy, and TIRX_E_INVALID_ARG for a misaligned dst. */
TIRX_API tirx_status tirx_runtime_fill32(tirx_runtime *rt, void *dst, uint32_t value, size_t count);

/* Waits for stream (NULL: every stream of the context). This is where faults inside kernels
 * surface: a fatal one turns the runtime sticky (see tirx_runtime_health).
 * Errors: TIRX_E_NULL_ARG, TIRX_E_NO_DEVICE, TIRX_E_STICKY, TIRX_E_DRIVER. */
TIRX_API tirx_status tirx_runtime_synchronize(tirx_runtime *rt, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_RUNTIME_H */
