/*
 * tirx/core.h: status codes, the per-thread error message, arenas and named axes.
 *
 * Included by <tirx.h>; do not include it on its own.
 */
#ifndef TIRX_CORE_H
#define TIRX_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's exported functions (default visibility; everything else is hidden). */
#if defined(_WIN32)
#define TIRX_API
#elif defined(__GNUC__)
#define TIRX_API __attribute__((visibility("default")))
#else
#define TIRX_API
#endif

/* ------------------------------------------------------------------------------------------ */
/* Status codes                                                                                */
/* ------------------------------------------------------------------------------------------ */

/*
 * One table generates the enum, tirx_status_name() and tirx_status_str() (libuv's
 * UV_ERRNO_MAP). Values are stable: new codes are appended.
 */
#define TIRX_STATUS_MAP(X)                                                                     \
  X(OK, 0, "success")                                                                          \
  X(E_INVALID_ARG, 1, "invalid argument")                                                      \
  X(E_NULL_ARG, 2, "required argument is NULL")                                                \
  X(E_NO_MEMORY, 3, "out of memory")                                                           \
  X(E_OVERFLOW, 4, "integer overflow")                                                         \
  X(E_PARSE, 5, "malformed text")                                                              \
  X(E_UNKNOWN_AXIS, 6, "unknown axis")                                                         \
  X(E_OUT_OF_RANGE, 7, "index or region out of range")                                         \
  X(E_NOT_REPRESENTABLE, 8, "result is not representable as a layout")                         \
  X(E_SCOPE, 9, "execution scope rule violated")                                               \
  X(E_LIMIT, 10, "a resource limit was exceeded")                                              \
  X(E_BUFFER_TOO_SMALL, 11, "output buffer too small")                                         \
  X(E_BUILD, 12, "kernel failed validation")                                                   \
  X(E_TYPE, 13, "type mismatch")                                                               \
  X(E_NO_DRIVER, 14, "CUDA driver library not available")                                      \
  X(E_NO_DEVICE, 15, "no CUDA device available")                                               \
  X(E_DRIVER, 16, "CUDA driver call failed")                                                   \
  X(E_COMPILE, 17, "NVRTC compilation failed")                                                 \
  X(E_LAUNCH_ARG, 18, "launch argument does not match the kernel")                             \
  X(E_NO_RULE, 19, "no dispatch rule for this primitive")                                      \
  X(E_IO, 20, "file system error")                                                             \
  X(E_CANCELLED, 21, "operation cancelled")                                                    \
  X(E_TIMEOUT, 22, "operation timed out")                                                      \
  X(E_COMM_ABORTED, 23, "communicator aborted")                                                \
  X(E_NOT_SUPPORTED, 24, "not supported")                                                      \
  X(E_STICKY, 25, "runtime is in a failed state after a fatal device error")                   \
  X(E_INTERNAL, 26, "internal error (a bug in tirx)")                                         \
  X(E_FORKED, 27, "object was created in another process (before a fork)")                    \
  X(E_CAPTURE, 28, "the stream is capturing a CUDA graph and the kernel is not ready")         \
  X(E_NO_NVRTC, 29, "NVRTC library not available (libnvrtc could not be loaded)")

/* A status code: TIRX_OK, or one of the errors of TIRX_STATUS_MAP (TIRX_E_INVALID_ARG, ...). */
typedef enum tirx_status {
#define TIRX_STATUS_ENUM_(name, value, text) TIRX_##name = value,
  TIRX_STATUS_MAP(TIRX_STATUS_ENUM_)
#undef TIRX_STATUS_ENUM_
} tirx_status;

/* "TIRX_E_PARSE" for TIRX_E_PARSE; "TIRX_UNKNOWN_STATUS" for values not in the table.
 * The string is static. */
TIRX_API const char *tirx_status_name(tirx_status s);

/* A short English description of the code, static. */
TIRX_API const char *tirx_status_str(tirx_status s);

/*
 * The calling thread's last error message, set by every public function that fails. It starts
 * with the name of the function that failed and names the argument and what was expected:
 *   "tirx_layout_slice: region dim 1 [0, 12) exceeds extent 8"
 * The string lives until the next failing tirx call on the same thread. Never NULL: "" when
 * no call on this thread has failed. Functions that succeed leave it unchanged.
 */
TIRX_API const char *tirx_last_error(void);

/* The status of the calling thread's last failure (TIRX_OK when none). */
TIRX_API tirx_status tirx_last_status(void);

/* Clears the calling thread's last error. */
TIRX_API void tirx_clear_error(void);

/* ------------------------------------------------------------------------------------------ */
/* Arenas                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/*
 * An arena owns layouts, scopes and every other object a builder hands out. Objects are freed
 * all together by tirx_arena_destroy(). An arena is not thread-safe; objects in it are
 * immutable once returned and may be read from several threads.
 */
typedef struct tirx_arena tirx_arena;

/* Returns a new arena or NULL (TIRX_E_NO_MEMORY). The caller destroys it. */
TIRX_API tirx_arena *tirx_arena_create(void);

/* Frees the arena and everything allocated in it. NULL is a no-op. */
TIRX_API void tirx_arena_destroy(tirx_arena *a);

/* Bytes currently held by the arena (for tests and diagnostics). */
TIRX_API size_t tirx_arena_bytes(const tirx_arena *a);

/* ------------------------------------------------------------------------------------------ */
/* Named axes (paper section 3, table 1)                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Axes are small integers. The built-in ones are listed here; a backend may register more. */
typedef int32_t tirx_axis;
enum {
  TIRX_AXIS_M = 0,         /* linear memory coordinate, in elements */
  TIRX_AXIS_LANEID = 1,    /* lane within a warp, 32 */
  TIRX_AXIS_WARPID = 2,    /* warp within a CTA, launch-defined */
  TIRX_AXIS_WID_IN_WG = 3, /* warp within a warpgroup, 4 */
  TIRX_AXIS_TID_IN_WG = 4, /* thread within a warpgroup, 128 */
  TIRX_AXIS_WGID = 5,      /* warpgroup within a CTA */
  TIRX_AXIS_TID = 6,       /* thread within a CTA */
  TIRX_AXIS_CTA = 7,       /* CTA within the grid */
  TIRX_AXIS_CBX = 8,       /* CTA coordinate in a cluster */
  TIRX_AXIS_CBY = 9,
  TIRX_AXIS_CBZ = 10,
  TIRX_AXIS_PID = 11,      /* device coordinate in a mesh */
  TIRX_AXIS_REG = 12,      /* register slot within a thread */
  TIRX_AXIS_CLUSTER = 13,  /* cluster within the grid */
  TIRX_AXIS_TLANE = 14,    /* Blackwell tensor memory (TMEM) lane, 128 */
  TIRX_AXIS_TCOL = 15,     /* TMEM column of 32-bit cells, 512 */
  TIRX_AXIS_BUILTIN_COUNT = 16,
  TIRX_AXIS_MAX = 32       /* built-in plus registered axes */
};

/* The axis's name ("m", "laneid", ...) or NULL when the axis does not exist. Static. */
TIRX_API const char *tirx_axis_name(tirx_axis axis);

/*
 * Looks an axis up by name. Accepts the built-in names, the aliases "lane" (laneid), "warp"
 * (warpid), "wg" (wgid), and registered names. Returns TIRX_E_UNKNOWN_AXIS or TIRX_E_NULL_ARG.
 */
TIRX_API tirx_status tirx_axis_lookup(const char *name, tirx_axis *out);

/*
 * Registers a backend axis (for example "Lane" and "Col" for tensor memory). Names are
 * [A-Za-z_][A-Za-z0-9_]*, at most 31 characters. Registering an existing name returns its id.
 * Thread-safe. Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (bad name), TIRX_E_LIMIT (full).
 */
TIRX_API tirx_status tirx_axis_register(const char *name, tirx_axis *out);

/* True for the axes that name threads, CTAs or devices rather than storage (m, reg, TLane,
 * TCol and registered axes). */
TIRX_API bool tirx_axis_is_thread(tirx_axis axis);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_CORE_H */
