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
 * DLTensor. Tensor shapes and strides are in elements and borrowed for the call only. */
typedef enum tirx_arg_kind {
  TIRX_ARG_I32 = 0,
  TIRX_ARG_I64 = 1,
  TIRX_ARG_F32 = 2,
  TIRX_ARG_F64 = 3,
  TIRX_ARG_TENSOR = 4,
  TIRX_ARG_DLPACK = 5
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
    const void *dlpack; /* a const DLTensor * (dlpack.h), borrowed for the call */
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
/* A DLPack argument: a const DLTensor *, borrowed for the call. */
static inline tirx_arg tirx_arg_dlpack(const void *dltensor) {
  tirx_arg a;
  a.kind = TIRX_ARG_DLPACK;
  a.u.dlpack = dltensor;
  return a;
}

#ifdef __cplusplus
}
#endif
#endif /* TIRX_TYPES_H */
