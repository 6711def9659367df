/*
 * The CUDA driver, loaded at run time: libcuda.so.1 is opened with dlopen and every entry point
 * is resolved through cuGetProcAddress (CUDA 12+ signature). tirx never links libcuda, so it
 * loads and compiles on machines without a driver.
 *
 * The table uses the types of cuda.h but calls only through these pointers. Members drop the
 * "cu" prefix (d->MemAlloc is cuMemAlloc) so that cuda.h's version macros (cuMemAlloc ->
 * cuMemAlloc_v2) never rename them.
 */
#ifndef TIRX_JIT_DRIVER_H
#define TIRX_JIT_DRIVER_H

#include <cuda.h>

#include "../core/internal.h"

/* name, version, parameters. Resolved as "cu" #name at that CUDA version: the version pins
 * the signature (CUDA 13.0 gave cuCtxSynchronize a context parameter at version 13000, so
 * asking for "the newest" would silently change what the pointer expects). The versions are
 * those of cudaTypedefs.h's PFN_cu<name>_v<version> for the signatures below. */
#define TIRX__DRIVER_FUNCS(X)                                                                      \
  X(Init, 2000, (unsigned int flags))                                                              \
  X(GetErrorString, 6000, (CUresult error, const char **str))                                      \
  X(GetErrorName, 6000, (CUresult error, const char **str))                                        \
  X(DeviceGetCount, 2000, (int *count))                                                            \
  X(DeviceGet, 2000, (CUdevice * device, int ordinal))                                             \
  X(DeviceGetName, 2000, (char *name, int len, CUdevice dev))                                      \
  X(DeviceGetAttribute, 2000, (int *pi, CUdevice_attribute attrib, CUdevice dev))                  \
  X(DevicePrimaryCtxRetain, 7000, (CUcontext * pctx, CUdevice dev))                                \
  X(DevicePrimaryCtxRelease, 11000, (CUdevice dev))                                                \
  X(CtxGetCurrent, 4000, (CUcontext * pctx))                                                       \
  X(CtxGetDevice, 2000, (CUdevice * device))                                                       \
  X(CtxPushCurrent, 4000, (CUcontext ctx))                                                         \
  X(CtxPopCurrent, 4000, (CUcontext * pctx))                                                       \
  X(CtxSynchronize, 2000, (void))                                                                  \
  X(StreamSynchronize, 2000, (CUstream stream))                                                    \
  X(StreamQuery, 2000, (CUstream hStream))                                                         \
  X(ModuleLoadDataEx, 2010,                                                                        \
    (CUmodule * module, const void *image, unsigned int numOptions, CUjit_option *options,         \
     void **optionValues))                                                                         \
  X(ModuleUnload, 2000, (CUmodule hmod))                                                           \
  X(ModuleGetFunction, 2000, (CUfunction * hfunc, CUmodule hmod, const char *name))                \
  X(FuncSetAttribute, 9000, (CUfunction hfunc, CUfunction_attribute attrib, int value))            \
  X(LaunchKernel, 4000,                                                                            \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,            \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                       \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))            \
  X(MemAlloc, 3020, (CUdeviceptr * dptr, size_t bytesize))                                         \
  X(MemFree, 3020, (CUdeviceptr dptr))                                                             \
  X(MemcpyHtoD, 3020, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))              \
  X(MemcpyDtoH, 3020, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))                    \
  X(MemcpyDtoD, 3020, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount))            \
  X(MemsetD32, 3020, (CUdeviceptr dstDevice, unsigned int ui, size_t N))                          \
  /* streams: the _async copies, streams made for a host, capture detection */                    \
  X(MemcpyHtoDAsync, 3020,                                                                         \
    (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream))              \
  X(MemcpyDtoHAsync, 3020,                                                                         \
    (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))                    \
  X(MemcpyDtoDAsync, 3020,                                                                         \
    (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))            \
  X(MemsetD32Async, 3020, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream))    \
  X(StreamCreate, 2000, (CUstream * phStream, unsigned int Flags))                                 \
  X(StreamDestroy, 4000, (CUstream hStream))                                                       \
  X(StreamIsCapturing, 10000, (CUstream hStream, CUstreamCaptureStatus * captureStatus))          \
  /* TMA tensor maps and cluster launches (copy_async.tma, tirx_set_cluster) */                   \
  X(TensorMapEncodeTiled, 12000,                                                                   \
    (CUtensorMap * tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,           \
     void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,            \
     const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave, \
     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,                               \
     CUtensorMapFloatOOBfill oobFill))                                                             \
  X(LaunchKernelEx, 11060,                                                                         \
    (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra))

typedef struct tirx__driver {
  void *lib;          /* the dlopen handle; never closed once the driver works */
  int driver_version; /* cuDriverGetVersion, 13000 for CUDA 13.0 */
#define TIRX__DRIVER_MEMBER_(name, version, params) CUresult(*name) params;
  TIRX__DRIVER_FUNCS(TIRX__DRIVER_MEMBER_)
#undef TIRX__DRIVER_MEMBER_
} tirx__driver;

/*
 * Opens the driver library at path (NULL: "libcuda.so.1"), resolves the table and calls
 * cuInit(0). On failure writes a sentence saying why into why (no function name, no trailing
 * period) and returns TIRX_E_NO_DRIVER (library or entry point missing, or the toolkit's stub
 * library) or TIRX_E_NO_DEVICE (cuInit found no device); the calling thread's error is not
 * touched.
 */
tirx_status tirx__driver_load(tirx__driver *d, const char *path, char *why, size_t why_size);

/* "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered" into buf. */
void tirx__driver_describe(const tirx__driver *d, CUresult r, char *buf, size_t size);

/* True for errors that leave the context unusable for the life of the process. */
bool tirx__driver_is_sticky(CUresult r);

/* The arch string for a compute capability: 9.0 -> "sm_90a", 10.0 -> "sm_100a", 8.6 ->
 * "sm_86". Architectures from 9.0 get the "a" suffix (their arch-specific features: wgmma,
 * setmaxnreg, tcgen05). */
void tirx__arch_for_cc(int major, int minor, char *buf, size_t size);

#endif
