/*
 * tirx.h: the public API of tirx, an embeddable JIT runtime for GPU tile kernels.
 *
 * C11, usable from C++, and free of CUDA headers (streams are void *). Every public function
 * either returns a tirx_status or an object that is NULL on failure; on failure the calling
 * thread's message is in tirx_last_error(), naming the function, the argument and what was
 * expected. Nothing a caller passes in makes the library crash, abort or corrupt memory.
 *
 *   tirx/core.h    status codes, errors, arenas, named axes
 *   tirx/layout.h  the layout algebra (D/R/O over named axes, swizzles, fragments)
 *   tirx/scope.h   execution scopes (active thread sets and team kinds)
 *   tirx/types.h   element types and launch arguments
 *   tirx/builder.h building kernels, and the built kernel
 *   tirx/runtime.h compiling (NVRTC), launching, device memory
 *   tirx/dist.h    distributed tensors and NCCL collectives
 *   tirx/kernels.h the kernel library: GEMM, row kernels, tensor-parallel linear, tirx_op_*
 */
#ifndef TIRX_H
#define TIRX_H

#include "tirx/core.h"
#include "tirx/layout.h"
#include "tirx/scope.h"
#include "tirx/types.h"
#include "tirx/builder.h"
#include "tirx/runtime.h"
#include "tirx/dist.h"
#include "tirx/kernels.h"

/* The version of these headers (tirx_version() gives the library's). */
#define TIRX_VERSION_MAJOR 0
#define TIRX_VERSION_MINOR 1
#define TIRX_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version string, "0.1.0". */
TIRX_API const char *tirx_version(void);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_H */
