/* Device memory and synchronisation through the runtime's context: a small convenience so
 * hosts, examples and tests never link libcuda themselves. */
#include <stdio.h>

#include "jit.h"

/* The runtime is usable (a device, not sticky, not forked) and its context is current on
 * this thread until tirx__ctx_leave(rt, g). */
static tirx_status device_enter(tirx_runtime *rt, const char *fn, tirx__ctx_guard *g) {
  tirx_status st = tirx__runtime_ready(rt, fn);
  if (st != TIRX_OK)
    return st;
  return tirx__ctx_enter(rt, fn, g);
}

tirx_status tirx_runtime_alloc(tirx_runtime *rt, size_t bytes, void **out) {
  static const char *const fn = "tirx_runtime_alloc";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (bytes == 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: bytes is 0, expected > 0", fn);
  tirx__ctx_guard g;
  tirx_status st = device_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  CUdeviceptr p = 0;
  CUresult r = rt->drv.MemAlloc(&p, bytes);
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
    return tirx__driver_error(rt, fn, what, r);
  }
  *out = (void *)(uintptr_t)p;
  return TIRX_OK;
}

tirx_status tirx_runtime_free(tirx_runtime *rt, void *ptr) {
  static const char *const fn = "tirx_runtime_free";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!ptr)
    return TIRX_OK;
  tirx__ctx_guard g;
  tirx_status st = device_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  CUresult r = rt->drv.MemFree((CUdeviceptr)(uintptr_t)ptr);
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, "cuMemFree", r);
  return TIRX_OK;
}

tirx_status tirx_runtime_copy(tirx_runtime *rt, void *dst, const void *src, size_t bytes,
                              tirx_copy_kind kind) {
  static const char *const fn = "tirx_runtime_copy";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (kind != TIRX_COPY_HOST_TO_DEVICE && kind != TIRX_COPY_DEVICE_TO_HOST &&
      kind != TIRX_COPY_DEVICE_TO_DEVICE)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: kind %d is not a tirx_copy_kind", fn, (int)kind);
  if (bytes == 0)
    return TIRX_OK;
  if (!dst)
    return tirx__error(TIRX_E_NULL_ARG, "%s: dst is NULL", fn);
  if (!src)
    return tirx__error(TIRX_E_NULL_ARG, "%s: src is NULL", fn);
  tirx__ctx_guard g;
  tirx_status st = device_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  CUresult r;
  const char *what;
  switch (kind) {
  case TIRX_COPY_HOST_TO_DEVICE:
    what = "cuMemcpyHtoD";
    r = rt->drv.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes);
    break;
  case TIRX_COPY_DEVICE_TO_HOST:
    what = "cuMemcpyDtoH";
    r = rt->drv.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes);
    break;
  default:
    what = "cuMemcpyDtoD";
    r = rt->drv.MemcpyDtoD((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes);
    break;
  }
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, what, r);
  return TIRX_OK;
}

tirx_status tirx_runtime_fill32(tirx_runtime *rt, void *dst, uint32_t value, size_t count) {
  static const char *const fn = "tirx_runtime_fill32";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (count == 0)
    return TIRX_OK;
  if (!dst)
    return tirx__error(TIRX_E_NULL_ARG, "%s: dst is NULL", fn);
  if ((uintptr_t)dst % 4 != 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dst %p is not 4-byte aligned", fn, dst);
  tirx__ctx_guard g;
  tirx_status st = device_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  CUresult r = rt->drv.MemsetD32((CUdeviceptr)(uintptr_t)dst, value, count);
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, "cuMemsetD32", r);
  return TIRX_OK;
}

tirx_status tirx_runtime_synchronize(tirx_runtime *rt, void *stream) {
  static const char *const fn = "tirx_runtime_synchronize";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  tirx__ctx_guard g;
  tirx_status st = device_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  CUresult r = stream ? rt->drv.StreamSynchronize((CUstream)stream) : rt->drv.CtxSynchronize();
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, stream ? "cuStreamSynchronize" : "cuCtxSynchronize", r);
  return TIRX_OK;
}
