/*
 * The registry: every dispatch rule, in the order tirx__dispatch tries them. For each key the
 * default (specialised) rule comes before the registered fallbacks, and the most general
 * fallback of a primitive comes last; tests/unit/dispatch/test_registry.c walks the table and
 * checks that, and that no key has two defaults. No static constructors: this table is the
 * whole registry.
 */
#include "families/families.h"

static const tirx__rule *const TABLE[] = {
    /* copy: ldmatrix/stmatrix, then vector and scalar ld/st (paper table 2) */
    &tirx__rule_copy_ldmatrix,
    &tirx__rule_copy_stmatrix,
    &tirx__rule_copy_vec,
    &tirx__rule_copy_scalar,
    /* pointwise (unary, binary, ternary), cast, fill, select */
    &tirx__rule_pointwise_vec,
    &tirx__rule_pointwise_scalar,
    /* reduce: warp shuffle, warpgroup/CTA through shared memory, cluster through DSMEM */
    &tirx__rule_reduce_shuffle,
    &tirx__rule_reduce_smem,
    &tirx__rule_reduce_dsmem,
    &tirx__rule_reduce_scalar,
    /* copy_async: TMA, then cp.async. The two synchronise differently, so each rejects the
     * other's protocol (config.barrier): the fallback never changes how a copy completes. */
    &tirx__rule_copy_tma,
    &tirx__rule_copy_cp_async,
    /* gemm: mma.sync with ldmatrix operands, then FMA loops; gemm_async: wgmma with a in shared
     * memory (SS) or in registers (RS), disjoint keys (no fallback) */
    &tirx__rule_gemm_mma,
    &tirx__rule_gemm_scalar,
    &tirx__rule_gemm_async_wgmma,
    &tirx__rule_gemm_async_wgmma_rs,
};

const tirx__rule *const *tirx__registry(int *count) {
  if (count) *count = (int)(sizeof TABLE / sizeof TABLE[0]);
  return TABLE;
}
