/*
 * The matrix-multiply primitives tirx_gemm and tirx_gemm_async (builder.h, "Matrix
 * multiply"): argument checks, then a TIRX__ST_PRIM statement like the other primitives, with
 * the accumulate predicate kept on it (tirx__prim_stmt.scale_d) for the lowering. Shapes,
 * dtypes, layouts and scope are the rules' business (dispatch/families/gemm_*.c), so their
 * failures appear in the dispatch report.
 */
#include "../dispatch/dispatch.h"
#include "builder_internal.h"

static void gemm(tirx_builder *b, const char *fn, int prim, tirx_region *d, tirx_region *a,
                 tirx_region *bm, const tirx_gemm_config *cfg) {
  if (!tirx__b_ok(b, fn)) return;
  static const char *const names[3] = {"d", "a", "bm"};
  tirx_region *ops[3] = {d, a, bm};
  for (int i = 0; i < 3; i++) {
    if (!tirx__b_region(b, fn, ops[i], names[i], false)) return;
    if (!ops[i]->tensor) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG,
                   "%s: %s is a broadcast: gemm operands are regions of tensors", fn, names[i]);
      return;
    }
  }
  tirx_config c = {0};
  tirx_expr *acc = NULL;
  if (cfg) {
    c.family = cfg->family;
    for (int k = 0; k < 3; k++) c.shape[k] = cfg->shape[k];
    acc = cfg->accumulate;
    if (acc) {
      if (!tirx__b_expr(b, fn, acc, "cfg->accumulate")) return;
      if (acc->dtype != TIRX_BOOL) {
        tirx__b_fail(b, TIRX_E_TYPE, "%s: cfg->accumulate has dtype %s, expected bool", fn,
                     tirx_dtype_name((tirx_dtype)acc->dtype));
        return;
      }
    }
  }
  tirx__prim_stmt *p = tirx__b_add_prim(b, fn, prim, TIRX__PRIM_OP_NONE, 3,
                                        (tirx_region *[]){d, a, bm}, &c, 0, acc != NULL);
  if (p) p->scale_d = acc;
}

void tirx_gemm(tirx_builder *b, tirx_region *d, tirx_region *a, tirx_region *bm,
               const tirx_gemm_config *cfg) {
  gemm(b, "tirx_gemm", TIRX__PRIM_GEMM, d, a, bm, cfg);
}

void tirx_gemm_async(tirx_builder *b, tirx_region *d, tirx_region *a, tirx_region *bm,
                     const tirx_gemm_config *cfg) {
  gemm(b, "tirx_gemm_async", TIRX__PRIM_GEMM_ASYNC, d, a, bm, cfg);
}
