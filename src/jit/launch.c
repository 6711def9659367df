/* tirx_launch: plan from the caller's arguments, find the variant's loaded function (the memory
 * table without a lock; variant.c on a miss), cuLaunchKernel. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../ir/dlpack_abi.h"
#include "jit.h"

static CUtensorMapDataType tmap_dtype(int t) {
  switch (t) {
  case TIRX_F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case TIRX_BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case TIRX_F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case TIRX_F64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  case TIRX_I32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case TIRX_U32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
  case TIRX_I64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
  default: return CU_TENSOR_MAP_DATA_TYPE_UINT8; /* i8, u8, bool: bytes */
  }
}

/* One tensor map into out (128 bytes): zero fill out of bounds, 128-byte L2 promotion. */
static CUresult encode_tmap(tirx_runtime *rt, const tirx__tmap_request *q, unsigned char *out) {
  CUtensorMap map;
  cuuint64_t dim[5], stride[4];
  cuuint32_t box[5], estride[5];
  for (int i = 0; i < q->rank; i++) {
    dim[i] = q->dim[i];
    box[i] = q->box[i];
    estride[i] = 1;
    if (i) stride[i - 1] = q->stride[i - 1];
  }
  CUtensorMapSwizzle sw = q->swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                          : q->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                          : q->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                             : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUresult r = rt->drv.TensorMapEncodeTiled(&map, tmap_dtype(q->dtype), q->rank, q->data, dim,
                                            stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r == CUDA_SUCCESS) memcpy(out, &map, sizeof map);
  return r;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Whether stream captures a graph, with the runtime's context current for the question. */
static tirx_status capturing_now(tirx_runtime *rt, const char *fn, void *stream, bool *out) {
  tirx__ctx_guard g;
  tirx_status st = tirx__ctx_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  st = tirx__stream_capturing(rt, fn, stream, out);
  tirx__ctx_leave(rt, &g);
  return st;
}

static tirx_status launch(tirx_runtime *rt, const tirx_kernel *kernel, const tirx_arg *args,
                          int nargs, void *stream, const char *fn, tirx_launch_info *info) {
  if (TIRX_UNLIKELY(!rt))
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (TIRX_UNLIKELY(!kernel))
    return tirx__error(TIRX_E_NULL_ARG, "%s: kernel is NULL", fn);
  if (TIRX_UNLIKELY(nargs < 0))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: nargs is %d, expected >= 0", fn, nargs);
  if (TIRX_UNLIKELY(!args && nargs > 0))
    return tirx__error(TIRX_E_NULL_ARG, "%s: args is NULL but nargs is %d", fn, nargs);
  tirx_status st = tirx__runtime_ready(rt, fn);
  if (TIRX_UNLIKELY(st != TIRX_OK))
    return st;

  tirx__launch_plan plan;
  st = tirx__kernel_plan(kernel, fn, args, nargs, &plan);
  if (st != TIRX_OK)
    return st;
  /* The plan checked each DLTensor's device type; its ordinal needs the runtime. Managed
   * memory is reachable from every device. */
  for (int i = 0; i < nargs; i++)
    if (TIRX_UNLIKELY(args[i].kind == TIRX_ARG_DLPACK ||
                      args[i].kind == TIRX_ARG_DLPACK_VERSIONED)) {
      const DLTensor *t = tirx__arg_dltensor(&args[i]);
      if (t->device.device_type == kDLCUDA && t->device.device_id != rt->ordinal)
        return tirx__error(TIRX_E_LAUNCH_ARG,
                           "%s: argument %d: DLPack device_id is %d, expected %d (the runtime's "
                           "device)",
                           fn, i, (int)t->device.device_id, rt->ordinal);
    }
  if (TIRX_UNLIKELY(plan.shared_bytes > (uint32_t)rt->max_smem_optin))
    return tirx__error(TIRX_E_LIMIT,
                       "%s: kernel '%s' needs %u bytes of dynamic shared memory, the device "
                       "allows %d",
                       fn, tirx__kernel_entry(kernel), plan.shared_bytes, rt->max_smem_optin);

  /* The hot path: one lock-free probe of the memory table. */
  tirx__module *e;
  uint64_t khash[2];
  tirx__kernel_hash(kernel, khash);
  tirx__variant *v = tirx__variant_lookup(
      rt, khash, tirx__variant_hash(khash, plan.nspec, plan.spec), plan.nspec, plan.spec);
  if (TIRX_LIKELY(v && atomic_load_explicit(&v->state, memory_order_acquire) ==
                           TIRX__VARIANT_READY)) {
    e = v->mod;
    if (info)
      info->source = TIRX_LAUNCH_FROM_MEMORY;
  } else {
    /* The miss path: only here is the driver asked about graph capture, so the fast path
     * costs nothing more. */
    bool capturing = false;
    if ((st = capturing_now(rt, fn, stream, &capturing)) != TIRX_OK)
      return st;
    st = tirx__runtime_select_ex(rt, kernel, &plan, fn, capturing, &e, info);
    if (st != TIRX_OK)
      return st;
    if (TIRX_UNLIKELY(capturing))
      tirx__log(rt, 1, "%s: kernel '%s' became ready during a graph capture on stream %p", fn,
                tirx__kernel_entry(kernel), stream);
  }
  if (TIRX_UNLIKELY(!e->function))
    return tirx__error(TIRX_E_INTERNAL, "%s: kernel '%s' has no loaded function", fn,
                       tirx__kernel_entry(kernel));

  tirx__ctx_guard g;
  st = tirx__ctx_enter(rt, fn, &g);
  if (st != TIRX_OK)
    return st;
  CUresult r;
  if (TIRX_UNLIKELY(plan.shared_bytes >
                    atomic_load_explicit(&e->smem_allowed, memory_order_relaxed))) {
    r = rt->drv.FuncSetAttribute(e->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 (int)plan.shared_bytes);
    if (r != CUDA_SUCCESS) {
      tirx__ctx_leave(rt, &g);
      return tirx__driver_error(rt, fn, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", r);
    }
    /* Concurrent raisers may race; the attribute only grows, so keep the larger value. */
    uint32_t cur = atomic_load(&e->smem_allowed);
    while (cur < plan.shared_bytes &&
           !atomic_compare_exchange_weak(&e->smem_allowed, &cur, plan.shared_bytes)) {
    }
  }
  /* TMA tensor maps: encoded on every launch from the checked plan (a host-only driver call;
   * not cached: the encode was not measured here, no GPU on the build machine). */
  for (int i = 0; i < plan.ntmaps; i++) {
    r = encode_tmap(rt, &plan.tmaps[i], plan.storage + plan.tmaps[i].offset);
    if (r != CUDA_SUCCESS) {
      tirx__ctx_leave(rt, &g);
      return tirx__driver_error(rt, fn, "cuTensorMapEncodeTiled", r);
    }
  }
  if (TIRX_UNLIKELY(rt->log_level >= 2))
    tirx__log(rt, 2, "launch %s grid (%u,%u,%u) block (%u,%u,%u) smem %u stream %p", e->entry,
              plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0], plan.block[1], plan.block[2],
              plan.shared_bytes, stream);
  if (plan.cluster[0] || plan.pdl) {
    /* cuLaunchKernelEx with the cluster's dimension and/or programmatic stream serialization
     * (the kernel may start before the stream's previous kernel ends; it waits for it with
     * griddepcontrol.wait before reading what that kernel wrote) */
    CUlaunchAttribute attr[2];
    unsigned nattr = 0;
    memset(attr, 0, sizeof attr);
    if (plan.cluster[0]) {
      attr[nattr].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attr[nattr].value.clusterDim.x = plan.cluster[0];
      attr[nattr].value.clusterDim.y = plan.cluster[1];
      attr[nattr++].value.clusterDim.z = plan.cluster[2];
    }
    if (plan.pdl) {
      attr[nattr].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attr[nattr++].value.programmaticStreamSerializationAllowed = 1;
    }
    CUlaunchConfig cfg = {plan.grid[0],  plan.grid[1],      plan.grid[2],      plan.block[0],
                          plan.block[1], plan.block[2],     plan.shared_bytes, (CUstream)stream,
                          attr,          nattr};
    r = rt->drv.LaunchKernelEx(&cfg, e->function, plan.params, NULL);
  } else {
    r = rt->drv.LaunchKernel(e->function, plan.grid[0], plan.grid[1], plan.grid[2],
                             plan.block[0], plan.block[1], plan.block[2], plan.shared_bytes,
                             (CUstream)stream, plan.params, NULL);
  }
  tirx__ctx_leave(rt, &g);
  if (TIRX_UNLIKELY(r != CUDA_SUCCESS)) {
    char what[160];
    snprintf(what, sizeof what, "cuLaunchKernel('%.100s')", e->entry);
    return tirx__driver_error(rt, fn, what, r);
  }
  return TIRX_OK;
}

tirx_status tirx_launch(tirx_runtime *rt, const tirx_kernel *kernel, const tirx_arg *args,
                        int nargs, void *stream) {
  return launch(rt, kernel, args, nargs, stream, "tirx_launch", NULL);
}

tirx_status tirx_launch_ex(tirx_runtime *rt, const tirx_kernel *kernel, const tirx_arg *args,
                           int nargs, void *stream, tirx_launch_info *info) {
  static const char *const fn = "tirx_launch_ex";
  if (!info)
    return launch(rt, kernel, args, nargs, stream, fn, NULL);
  const size_t min = offsetof(tirx_launch_info, fell_back);
  if (info->size < min)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: info->size is %zu, expected at least %zu (sizeof(tirx_launch_info) "
                       "is %zu)",
                       fn, info->size, min, sizeof(tirx_launch_info));
  double t0 = now_ms();
  tirx_launch_info full;
  memset(&full, 0, sizeof full);
  full.size = sizeof full;
  tirx_status st = launch(rt, kernel, args, nargs, stream, fn, &full);
  if (st != TIRX_OK)
    return st;
  full.millis = now_ms() - t0;
  size_t n = info->size < sizeof full ? info->size : sizeof full;
  size_t keep = info->size;
  memcpy(info, &full, n);
  info->size = keep;
  return TIRX_OK;
}
