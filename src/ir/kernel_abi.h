/*
 * The contract between a built kernel (src/ir, src/builder: the producer) and the JIT
 * (src/jit: the consumer). The JIT never looks inside the IR: it asks the kernel for its
 * generated source and for a launch plan built from the caller's arguments.
 */
#ifndef TIRX_IR_KERNEL_ABI_H
#define TIRX_IR_KERNEL_ABI_H

#include "../core/internal.h"

enum {
  TIRX__MAX_SPEC = 16,           /* integer parameters with a specialisation policy */
  TIRX__MAX_PARAMS = 128,        /* kernel parameters after lowering (pointers, strides, ints) */
  TIRX__PARAM_STORAGE = 4096     /* bytes of kernel parameter values (CUDA's classic limit) */
};

/* A TMA tensor map to encode at launch (cuTensorMapEncodeTiled) into storage + offset. The
 * plan checks every value against TMA's rules, so encoding fails only on a driver error. */
typedef struct tirx__tmap_request {
  void *data;            /* the tensor's base pointer, 16-byte aligned */
  uint32_t offset;       /* where its 128 bytes go in the plan's storage (64-byte aligned) */
  uint8_t dtype;         /* tirx_dtype */
  uint8_t rank;          /* 1..5 */
  int16_t swizzle;       /* 0, 32, 64, 128 bytes */
  uint64_t dim[5];       /* globalDim, innermost first */
  uint64_t stride[4];    /* globalStrides in bytes of dims 1..rank-1 */
  uint32_t box[5];       /* boxDim */
} tirx__tmap_request;

enum { TIRX__PLAN_MAX_TMAPS = 8 };

/* Everything cuLaunchKernel needs for one call, computed from the caller's arguments. */
typedef struct tirx__launch_plan {
  uint32_t cluster[3];            /* cluster shape; 0: a plain launch */
  bool pdl;                       /* the programmatic stream serialization attribute */
  int ntmaps;                     /* tensor maps to encode into storage before launching */
  tirx__tmap_request tmaps[TIRX__PLAN_MAX_TMAPS];
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;          /* dynamic shared memory */
  int nparams;                    /* entries used in params */
  void *params[TIRX__MAX_PARAMS]; /* params[i] points into storage, as cuLaunchKernel wants */
  /*
   * The specialisation key of this call: one entry per integer parameter whose policy is not
   * dynamic, in declaration order. TIRX_SPECIALIZE_VALUE stores the value, TIRX_SPECIALIZE_DIV16
   * stores 1 when the value is divisible by 16, else 0. Two calls with equal nspec/spec arrays
   * run the same compiled variant. The parameter list (params) is the same for every variant
   * of a kernel, so a launch may run the dynamic variant with the same plan (tiered compile).
   */
  int nspec;
  int64_t spec[TIRX__MAX_SPEC];
  _Alignas(64) unsigned char storage[TIRX__PARAM_STORAGE];
} tirx__launch_plan;

/*
 * Binds the caller's arguments to the kernel's parameters (symbolic sizes from tensor shapes
 * and scalar arguments), checks each argument against its declaration (kind, dtype, rank,
 * shape consistency, strides against the declared layout, alignment, non-NULL data), and
 * fills plan: the launch dimensions evaluated from the kernel's launch expressions and the
 * parameter values in the order the generated entry point declares them.
 * fn is the public function to name in messages ("tirx_launch").
 * Errors: TIRX_E_NULL_ARG, TIRX_E_LAUNCH_ARG ("tirx_launch: argument 1 (x): dtype is f16,
 * expected f32"), TIRX_E_LIMIT (a grid or block dimension out of range).
 */
tirx_status tirx__kernel_plan(const tirx_kernel *k, const char *fn, const tirx_arg *args,
                              int nargs, tirx__launch_plan *plan);

/* The generated CUDA C++ translation unit (NUL-terminated, owned by the kernel, immutable,
 * deterministic) and the name of its extern "C" __global__ entry point. */
const char *tirx__kernel_source(const tirx_kernel *k);
const char *tirx__kernel_entry(const tirx_kernel *k);

/*
 * The source of the variant that plan's specialisation key selects: the kernel's source with a
 * deterministic prefix of #define lines (TIRX_SPEC_<param> <value> and TIRX_DIV16_<param>)
 * that the generated code reads; nspec == 0 gives the plain source. malloc'ed; the caller
 * frees it. Errors: TIRX_E_NO_MEMORY, TIRX_E_INVALID_ARG (a key that does not fit the kernel).
 */
tirx_status tirx__kernel_variant_source(const tirx_kernel *k, int nspec, const int64_t *spec,
                                        char **out);

/* The dynamic variant's source is tirx__kernel_source(k). */

/*
 * Whether k's code may be compiled for arch: arch has every feature (internal.h) of the rules
 * dispatch chose and of the native statements the kernel uses. A kernel that uses only generic
 * features passes for every newer arch; one that uses an arch-specific feature (wgmma,
 * setmaxnreg) only for the targets that have it (sm_90a); one dispatched for sm_90a passes for
 * sm_80 when it uses nothing of sm_90. fn and what name the public function and its argument
 * in messages ("tirx_compile", "arch"). The message names the missing feature that is hardest
 * to get (tirx__features_missing) and its first use.
 * Errors: TIRX_E_INVALID_ARG (arch malformed), TIRX_E_NOT_SUPPORTED ("tirx_compile: arch is
 * sm_90, expected sm_90a: kernel 'k' (dispatched for sm_90a) uses gemm_async.wgmma, which
 * needs wgmma").
 */
tirx_status tirx__kernel_check_arch(const tirx_kernel *k, const char *fn, const char *what,
                                    const char *arch);

/* A 128-bit content hash of the source (XXH3-128), for caches. */
void tirx__kernel_hash(const tirx_kernel *k, uint64_t out[2]);

/* The textual IR (owned by the kernel), for dumps. */
const char *tirx__kernel_ir(const tirx_kernel *k);

#endif
