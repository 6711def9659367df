/*
 * tirx/types.h: element types and launch arguments, shared by the builder and the runtime.
 *
 * Included by <tirx.h>; do not include it on its own.
 */
#ifndef TIRX_TYPES_H
#define TIRX_TYPES_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A built kernel: immutable and reference-counted (tirx/builder.h). */
typedef struct tirx_kernel tirx_kernel;

/* Element types. fp8 types are declared for later use; the builder rejects them for now. */
typedef enum tirx_dtype {
  TIRX_F32 = 0,
  TIRX_F16 = 1,
  TIRX_BF16 = 2,
  TIRX_F64 = 3,
  TIRX_I8 = 4,
  TIRX_U8 = 5,
  TIRX_I32 = 6,
  TIRX_U32 = 7,
  TIRX_I64 = 8,
  TIRX_BOOL = 9,
  TIRX_FP8_E4M3 = 10,
  TIRX_FP8_E5M2 = 11,
  TIRX_DTYPE_COUNT = 12
} tirx_dtype;

/* "f32", "bf16", ...; NULL for values outside the enum. Static. */
TIRX_API const char *tirx_dtype_name(tirx_dtype t);
/* Bytes per element; 0 for values outside the enum. */
TIRX_API int tirx_dtype_size(tirx_dtype t);

/* One launch argument: a scalar, a tensor given by pointer + shape + strides, or a DLPack
 * tensor (an unversioned DLTensor, or DLPack 1.x's DLManagedTensorVersioned). Tensor shapes and
 * strides are in elements and borrowed for the call only. */
typedef enum tirx_arg_kind {
  TIRX_ARG_I32 = 0,
  TIRX_ARG_I64 = 1,
  TIRX_ARG_F32 = 2,
  TIRX_ARG_F64 = 3,
  TIRX_ARG_TENSOR = 4,
  TIRX_ARG_DLPACK = 5,          /* u.dlpack is a const DLTensor * */
  TIRX_ARG_DLPACK_VERSIONED = 6 /* u.dlpack is a const DLManagedTensorVersioned * (DLPack 1.x) */
} tirx_arg_kind;

/* A tensor argument: a device pointer with its element type, shape and strides. */
typedef struct tirx_tensor_arg {
  void *data;             /* device pointer */
  tirx_dtype dtype;       /* element type */
  int rank;               /* number of dimensions */
  const int64_t *shape;   /* rank entries */
  const int64_t *strides; /* rank entries, in elements; NULL means dense row-major */
} tirx_tensor_arg;

/* A launch argument; make one with the tirx_arg_* functions below. */
typedef struct tirx_arg {
  tirx_arg_kind kind; /* which member of u holds the value */
  union {
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    tirx_tensor_arg tensor;
    const void *dlpack; /* a const DLTensor * or DLManagedTensorVersioned * (dlpack.h), as
                           kind says, borrowed for the call */
  } u;                  /* the value */
} tirx_arg;

/* An int32 scalar argument. */
static inline tirx_arg tirx_arg_i32(int32_t v) {
  tirx_arg a;
  a.kind = TIRX_ARG_I32;
  a.u.i32 = v;
  return a;
}
/* An int64 scalar argument. */
static inline tirx_arg tirx_arg_i64(int64_t v) {
  tirx_arg a;
  a.kind = TIRX_ARG_I64;
  a.u.i64 = v;
  return a;
}
/* A float scalar argument. */
static inline tirx_arg tirx_arg_f32(float v) {
  tirx_arg a;
  a.kind = TIRX_ARG_F32;
  a.u.f32 = v;
  return a;
}
/* A double scalar argument. */
static inline tirx_arg tirx_arg_f64(double v) {
  tirx_arg a;
  a.kind = TIRX_ARG_F64;
  a.u.f64 = v;
  return a;
}
/* A tensor argument: pointer, dtype, rank, shape and strides (NULL: dense), borrowed for the
 * call. */
static inline tirx_arg tirx_arg_tensor(void *data, tirx_dtype dtype, int rank,
                                       const int64_t *shape, const int64_t *strides) {
  tirx_arg a;
  a.kind = TIRX_ARG_TENSOR;
  a.u.tensor.data = data;
  a.u.tensor.dtype = dtype;
  a.u.tensor.rank = rank;
  a.u.tensor.shape = shape;
  a.u.tensor.strides = strides;
  return a;
}
/*
 * A DLPack argument: a const DLTensor * (dlpack.h, any version), borrowed for the call. Its
 * device type must be kDLCUDA (device_id the runtime's device) or kDLCUDAManaged, its dtype one
 * of tirx's with one lane; data + byte_offset is the base. tirx_launch checks it as a tensor
 * argument and names the argument in its errors ("tirx_launch: argument 0 (x): DLPack device
 * type is 1, expected kDLCUDA (2)").
 */
static inline tirx_arg tirx_arg_dlpack(const void *dltensor) {
  tirx_arg a;
  a.kind = TIRX_ARG_DLPACK;
  a.u.dlpack = dltensor;
  return a;
}

/*
 * A DLPack 1.x argument: a const DLManagedTensorVersioned * (what a producer's __dlpack__ gives
 * under max_version (1, x)), borrowed for the call: tirx never calls its deleter and keeps no
 * pointer into it after the call returns; the caller still owns it. Checked as
 * tirx_arg_dlpack's DLTensor (its dl_tensor), and before that:
 *   - version.major must be 1 (any minor); with another major version no other field is read
 *     ("tirx_launch: argument 0 (x): DLPack version is 2.0, expected major version 1");
 *   - a tensor whose flags have DLPACK_FLAG_BITMASK_READ_ONLY is refused for a parameter the
 *     kernel stores to (tirx_store, tirx_atomic_add, a tile primitive's destination, a TMA
 *     store), and for every tensor of a kernel with caller-written source (tirx_set_source),
 *     which tirx cannot see into; read-only tensors are fine for parameters it only reads.
 * Errors (from tirx_launch and the calls that plan a launch: TIRX_E_NULL_ARG for a NULL pointer,
 * TIRX_E_LAUNCH_ARG otherwise) name the function, the argument and what was expected.
 */
static inline tirx_arg tirx_arg_dlpack_versioned(const void *managed) {
  tirx_arg a;
  a.kind = TIRX_ARG_DLPACK_VERSIONED;
  a.u.dlpack = managed;
  return a;
}

#ifdef __cplusplus
}
#endif
#endif /* TIRX_TYPES_H */
