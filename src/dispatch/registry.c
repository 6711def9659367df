/*
 * The registry: every dispatch rule, in the order tirx__dispatch tries them. For each key the
 * default (specialised) rule comes before the registered fallbacks, and the most general
 * fallback of a primitive comes last; tests/unit/dispatch/test_registry.c walks the table and
 * checks that, and that no key has two defaults. No static constructors: this table is the
 * whole registry.
 */
#include "families/families.h"

/* The rules, one line each: RULE(x) names tirx__rule_x, defined in families/. The list both
 * declares them and fills the table, so registering a rule is its line here. */
#define RULES(RULE)                                                                            \
  /* copy: ldmatrix/stmatrix, then vector and scalar ld/st (paper table 2) */                  \
  RULE(copy_ldmatrix)                                                                          \
  RULE(copy_stmatrix)                                                                          \
  RULE(copy_vec)                                                                               \
  RULE(copy_scalar)                                                                            \
  /* pointwise (unary, binary, ternary), cast, fill, select */                                 \
  RULE(pointwise_vec)                                                                          \
  RULE(pointwise_scalar)                                                                       \
  /* reduce: warp shuffle, warpgroup/CTA through shared memory, cluster through DSMEM */       \
  RULE(reduce_redux)                                                                           \
  RULE(reduce_smem)                                                                            \
  RULE(reduce_shuffle)                                                                         \
  RULE(reduce_dsmem)                                                                           \
  RULE(reduce_scalar)                                                                          \
  /* copy_async: TMA, then cp.async. The two synchronise differently, so each rejects the      \
   * other's protocol (config.barrier): the fallback never changes how a copy completes. */    \
  RULE(copy_tma)                                                                               \
  RULE(copy_cp_async)                                                                          \
  /* gemm: mma.sync with ldmatrix operands, then FMA loops; gemm_async: wgmma with a in shared \
   * memory (SS) or in registers (RS), disjoint keys (no fallback) */                          \
  RULE(gemm_mma)                                                                               \
  RULE(gemm_scalar)                                                                            \
  RULE(gemm_async_wgmma)                                                                       \
  RULE(gemm_async_wgmma_rs)

#define DECLARE(x) extern const tirx__rule tirx__rule_##x;
#define ENTRY(x) &tirx__rule_##x,
RULES(DECLARE)
static const tirx__rule *const TABLE[] = {RULES(ENTRY)};

const tirx__rule *const *tirx__registry(int *count) {
  if (count) *count = (int)(sizeof TABLE / sizeof TABLE[0]);
  return TABLE;
}
