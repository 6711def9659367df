/* tirx_launch: plan from the caller's arguments, find the variant's loaded function (the memory
 * table without a lock; variant.c on a miss), cuLaunchKernel. */
#include <stdio.h>

#include "jit.h"

tirx_status tirx_launch(tirx_runtime *rt, const tirx_kernel *kernel, const tirx_arg *args,
                        int nargs, void *stream) {
  static const char *const fn = "tirx_launch";
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
  } else {
    st = tirx__runtime_select(rt, kernel, &plan, fn, &e);
    if (st != TIRX_OK)
      return st;
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
  if (TIRX_UNLIKELY(rt->log_level >= 2))
    tirx__log(rt, 2, "launch %s grid (%u,%u,%u) block (%u,%u,%u) smem %u stream %p", e->entry,
              plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0], plan.block[1], plan.block[2],
              plan.shared_bytes, stream);
  r = rt->drv.LaunchKernel(e->function, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                           plan.block[1], plan.block[2], plan.shared_bytes, (CUstream)stream,
                           plan.params, NULL);
  tirx__ctx_leave(rt, &g);
  if (TIRX_UNLIKELY(r != CUDA_SUCCESS)) {
    char what[160];
    snprintf(what, sizeof what, "cuLaunchKernel('%.100s')", e->entry);
    return tirx__driver_error(rt, fn, what, r);
  }
  return TIRX_OK;
}
