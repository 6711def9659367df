/* Device memory and synchronisation through the runtime's context: a small convenience so
 * hosts, examples and tests never link libcuda themselves. */
#include <stdio.h>
#include <stdlib.h>

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

/* ---- scratch buffers of the kernel library (kernels_internal.h) ---- */

/* One buffer; `current` is the one handed out for its stream, the others were outgrown and
 * are kept until the runtime is destroyed (work queued before the growth may still use them;
 * freeing them would need a synchronisation of the stream). */
struct tirx__scratch {
  struct tirx__scratch *next;
  void *stream;
  void *ptr;
  size_t bytes;
  bool current;
};

tirx_status tirx__runtime_scratch(tirx_runtime *rt, const char *fn, void *stream, size_t bytes,
                                  void **out) {
  *out = NULL;
  pthread_mutex_lock(&rt->scratch_lock);
  struct tirx__scratch *cur = NULL;
  for (struct tirx__scratch *s = rt->scratch; s; s = s->next)
    if (s->current && s->stream == stream) cur = s;
  if (cur && cur->bytes >= bytes) {
    *out = cur->ptr;
    pthread_mutex_unlock(&rt->scratch_lock);
    return TIRX_OK;
  }
  /* Grown to at least twice the outgrown size: a sequence of growing calls allocates
   * O(log) buffers. */
  size_t want = bytes, twice = cur && cur->bytes <= SIZE_MAX / 2 ? cur->bytes * 2 : 0;
  if (twice > want) want = twice;
  struct tirx__scratch *n = calloc(1, sizeof *n);
  void *p = NULL;
  tirx_status st = n ? tirx_runtime_alloc(rt, want, &p) : TIRX_E_NO_MEMORY;
  if (st != TIRX_OK) {
    free(n);
    pthread_mutex_unlock(&rt->scratch_lock);
    if (st == TIRX_E_NO_MEMORY && !n)
      return tirx__error(st, "%s: out of memory", fn);
    return tirx__error(st, "%s: the workspace of %zu bytes: %s", fn, want, tirx_last_error());
  }
  if (cur) cur->current = false;
  *n = (struct tirx__scratch){rt->scratch, stream, p, want, true};
  rt->scratch = n;
  *out = p;
  pthread_mutex_unlock(&rt->scratch_lock);
  return TIRX_OK;
}

void tirx__runtime_scratch_free(tirx_runtime *rt, bool device) {
  struct tirx__scratch *s = rt->scratch;
  rt->scratch = NULL;
  while (s) {
    struct tirx__scratch *next = s->next;
    if (device) rt->drv.MemFree((CUdeviceptr)(uintptr_t)s->ptr);
    free(s);
    s = next;
  }
}

static bool copy_kind_valid(tirx_copy_kind kind) {
  return kind == TIRX_COPY_HOST_TO_DEVICE || kind == TIRX_COPY_DEVICE_TO_HOST ||
         kind == TIRX_COPY_DEVICE_TO_DEVICE;
}

/* The copy of tirx_runtime_copy (async false: the synchronous calls, ordered after the legacy
 * default stream) and of tirx_runtime_copy_async (on stream). */
static tirx_status copy_on(tirx_runtime *rt, const char *fn, void *dst, const void *src,
                           size_t bytes, tirx_copy_kind kind, bool async, void *stream) {
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!copy_kind_valid(kind))
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
  CUstream s = (CUstream)stream;
  CUdeviceptr ddst = (CUdeviceptr)(uintptr_t)dst, dsrc = (CUdeviceptr)(uintptr_t)src;
  CUresult r;
  const char *what;
  switch (kind) {
  case TIRX_COPY_HOST_TO_DEVICE:
    what = async ? "cuMemcpyHtoDAsync" : "cuMemcpyHtoD";
    r = async ? rt->drv.MemcpyHtoDAsync(ddst, src, bytes, s) : rt->drv.MemcpyHtoD(ddst, src, bytes);
    break;
  case TIRX_COPY_DEVICE_TO_HOST:
    what = async ? "cuMemcpyDtoHAsync" : "cuMemcpyDtoH";
    r = async ? rt->drv.MemcpyDtoHAsync(dst, dsrc, bytes, s) : rt->drv.MemcpyDtoH(dst, dsrc, bytes);
    break;
  default:
    what = async ? "cuMemcpyDtoDAsync" : "cuMemcpyDtoD";
    r = async ? rt->drv.MemcpyDtoDAsync(ddst, dsrc, bytes, s)
              : rt->drv.MemcpyDtoD(ddst, dsrc, bytes);
    break;
  }
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, what, r);
  return TIRX_OK;
}

tirx_status tirx_runtime_copy(tirx_runtime *rt, void *dst, const void *src, size_t bytes,
                              tirx_copy_kind kind) {
  return copy_on(rt, "tirx_runtime_copy", dst, src, bytes, kind, false, NULL);
}

tirx_status tirx_runtime_copy_async(tirx_runtime *rt, void *dst, const void *src, size_t bytes,
                                    tirx_copy_kind kind, void *stream) {
  return copy_on(rt, "tirx_runtime_copy_async", dst, src, bytes, kind, true, stream);
}

static tirx_status fill_on(tirx_runtime *rt, const char *fn, void *dst, uint32_t value,
                           size_t count, bool async, void *stream) {
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
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst;
  CUresult r = async ? rt->drv.MemsetD32Async(d, value, count, (CUstream)stream)
                     : rt->drv.MemsetD32(d, value, count);
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, async ? "cuMemsetD32Async" : "cuMemsetD32", r);
  return TIRX_OK;
}

tirx_status tirx_runtime_fill32(tirx_runtime *rt, void *dst, uint32_t value, size_t count) {
  return fill_on(rt, "tirx_runtime_fill32", dst, value, count, false, NULL);
}

tirx_status tirx_runtime_fill32_async(tirx_runtime *rt, void *dst, uint32_t value, size_t count,
                                      void *stream) {
  return fill_on(rt, "tirx_runtime_fill32_async", dst, value, count, true, stream);
}

void *tirx_runtime_context(const tirx_runtime *rt) {
  return rt && rt->has_device && !tirx__runtime_forked(rt) ? (void *)rt->ctx : NULL;
}

tirx_status tirx_runtime_stream_create(tirx_runtime *rt, void **out) {
  static const char *const fn = "tirx_runtime_stream_create";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  tirx__ctx_guard g;
  tirx_status st = device_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  CUstream s = NULL;
  CUresult r = rt->drv.StreamCreate(&s, CU_STREAM_NON_BLOCKING);
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, "cuStreamCreate", r);
  *out = (void *)s;
  return TIRX_OK;
}

tirx_status tirx_runtime_stream_destroy(tirx_runtime *rt, void *stream) {
  static const char *const fn = "tirx_runtime_stream_destroy";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!stream)
    return TIRX_OK;
  tirx__ctx_guard g;
  tirx_status st = device_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  CUresult r = rt->drv.StreamDestroy((CUstream)stream);
  tirx__ctx_leave(rt, &g);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, "cuStreamDestroy", r);
  return TIRX_OK;
}

tirx_status tirx__stream_capturing(tirx_runtime *rt, const char *fn, void *stream, bool *out) {
  *out = false;
  if (rt->capture_probe)
    return rt->capture_probe(rt, stream, out);
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = rt->drv.StreamIsCapturing((CUstream)stream, &cs);
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) {
    /* The legacy default stream while another stream captures in global or thread-local
     * mode: any work on it would join (and break) that capture. */
    *out = true;
    return TIRX_OK;
  }
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, "cuStreamIsCapturing", r);
  *out = cs != CU_STREAM_CAPTURE_STATUS_NONE; /* ACTIVE, or INVALIDATED (still capturing) */
  return TIRX_OK;
}

tirx_status tirx_runtime_stream_is_capturing(tirx_runtime *rt, void *stream, bool *out) {
  static const char *const fn = "tirx_runtime_stream_is_capturing";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = false;
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  tirx__ctx_guard g;
  tirx_status st = device_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  st = tirx__stream_capturing(rt, fn, stream, out);
  tirx__ctx_leave(rt, &g);
  return st;
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
