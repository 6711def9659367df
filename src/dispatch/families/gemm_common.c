/* Shapes and operand analyses shared by the gemm rules and lowerings (gemm_common.h). */
#include <stdio.h>

#include "../../layout/layout_internal.h"
#include "gemm_common.h"

static const char FN[] = "tirx_dispatch";

bool tirx__gemm_shape(tirx__rule_ctx *ctx, int64_t *m, int64_t *n, int64_t *k) {
  int64_t s[3][2];
  for (int i = 0; i < 3; i++) {
    const tirx_layout *l = ctx->call->operands[i].layout;
    if (tirx_layout_rank(l) != 2) {
      tirx__reason(ctx, "%s has rank %d: gemm operands are matrices (rank 2)",
                   tirx__rule_operand_name(ctx, i), tirx_layout_rank(l));
      return false;
    }
    tirx_layout_shape(l, s[i], 2);
  }
  if (s[1][0] != s[0][0] || s[2][1] != s[0][1] || s[1][1] != s[2][0]) {
    tirx__reason(ctx,
                 "shapes d (%lld,%lld), a (%lld,%lld), b (%lld,%lld) are not (M,N), (M,K), "
                 "(K,N)",
                 (long long)s[0][0], (long long)s[0][1], (long long)s[1][0], (long long)s[1][1],
                 (long long)s[2][0], (long long)s[2][1]);
    return false;
  }
  *m = s[0][0];
  *n = s[0][1];
  *k = s[1][1];
  return true;
}

/* The m coordinate of element (row, k) (kdim says which index is K), in bytes; false when
 * the layout does not give one point. */
static bool byte_at(const tirx_layout *l, int kdim, int64_t row, int64_t k, int esize,
                    int64_t *out) {
  int64_t idx[2];
  idx[kdim] = k;
  idx[1 - kdim] = row;
  tirx_coord c[1];
  int64_t count = 0;
  if (tirx_layout_eval_nd(l, idx, c, 1, &count) != TIRX_OK || count != 1) return false;
  *out = c[0].v[TIRX_AXIS_M] * esize;
  return true;
}

/*
 * The MN-major form (the transpose bit): the MN index contiguous. For an S-byte swizzle (W = S /
 * elem_bytes elements) the canonical layout (CuTe's ((T,S/16,m),(8,k)):((1,T,LBO),(S/16*T,SBO)))
 * puts (mn, k) at byte (mn % W) * elem_bytes + (mn / W) * lbo + (k % 8) * S + (k / 8) * sbo:
 * atoms of W MN-elements by 8 K-rows, lbo between atoms along MN, sbo between 8-row K groups.
 * The start, lbo and sbo multiples of 8 * S (whole atoms), lbo unused with one atom along MN.
 */
static bool mn_major_of(const tirx_layout *u, int kdim, int64_t rows, int64_t ks, int sw, int esize,
                        tirx__wgmma_operand *out) {
  int64_t w = sw / esize;
  if (!sw || rows % w || ks % 8) return false;
  int64_t base, at_mn = 0, at_k = 0;
  if (!byte_at(u, kdim, 0, 0, esize, &base) ||
      (rows > w && !byte_at(u, kdim, w, 0, esize, &at_mn)) ||
      (ks > 8 && !byte_at(u, kdim, 0, 8, esize, &at_k)))
    return false;
  int64_t lbo = rows > w ? at_mn - base : 8 * (int64_t)sw, sbo = ks > 8 ? at_k - base : 8 * (int64_t)sw;
  int64_t align = 8 * (int64_t)sw;
  if (base % align || lbo % align || sbo % align || lbo <= 0 || sbo <= 0 ||
      lbo >= ((int64_t)1 << 18) || sbo >= ((int64_t)1 << 18))
    return false;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t k = 0; k < ks; k++) {
      int64_t got = 0, want = base + (r % w) * esize + (r / w) * lbo + (k % 8) * sw + (k / 8) * sbo;
      if (!byte_at(u, kdim, r, k, esize, &got) || got != want) return false;
    }
  out->swizzle = sw == 128 ? 1 : sw == 64 ? 2 : 3;
  out->lbo = lbo;
  out->sbo = sbo;
  out->mn_major = 1;
  return true;
}

bool tirx__wgmma_operand_of(tirx_arena *a, const tirx__operand *op, int kdim,
                            tirx__wgmma_operand *out, const char **why) {
  out->mn_major = 0;
  int esize = tirx_dtype_size(op->dtype);
  int64_t shape[2];
  tirx_layout_shape(op->layout, shape, 2);
  int64_t rows = shape[1 - kdim], ks = shape[kdim];
  int sw = tirx_layout_swizzle_bytes(op->layout);
  const tirx_layout *u = tirx_layout_swizzle(a, op->layout, 0, 0);
  char buf[256];
  if (!u) {
    *why = "its layout cannot be analysed";
    return false;
  }
  if (rows % 8 || ks % 16) {
    snprintf(buf, sizeof buf, "%lld rows of %lld K elements are not 8-row groups of k16 steps",
             (long long)rows, (long long)ks);
    *why = tirx__arena_strdup(a, buf, FN);
    return false;
  }
  int64_t base, at8 = 0, atk = 0;
  /* The core group: 8 rows of S bytes (swizzled) or of 16 bytes (interleaved). */
  int64_t row_bytes = sw ? sw : 16, cols = row_bytes / esize;
  if (!byte_at(u, kdim, 0, 0, esize, &base) ||
      (rows > 8 && !byte_at(u, kdim, 8, 0, esize, &at8)) ||
      (ks > cols && !byte_at(u, kdim, 0, cols, esize, &atk))) {
    *why = "its layout is not single-valued on m";
    return false;
  }
  int64_t sbo = rows > 8 ? at8 - base : 8 * row_bytes, kb = ks > cols ? atk - base : 0;
  int64_t align = sw ? 8 * (int64_t)sw : 16;
  const char *form = sw == 128 ? "128-byte swizzled" : sw == 64 ? "64-byte swizzled"
                     : sw == 32 ? "32-byte swizzled" : "interleaved (8x16-byte core matrices)";
  for (int64_t r = 0; r < rows; r++)
    for (int64_t k = 0; k < ks; k++) {
      int64_t got = 0, want = base + (r % 8) * row_bytes + (r / 8) * sbo + (k / cols) * kb +
                          (k % cols) * esize;
      if (!byte_at(u, kdim, r, k, esize, &got) || got != want) {
        if (mn_major_of(u, kdim, rows, ks, sw, esize, out)) return true;
        int64_t i = kdim ? r : k, j = kdim ? k : r;
        snprintf(buf, sizeof buf,
                 "it is not a K-major %s wgmma tile: element (%lld,%lld) is %lld bytes from "
                 "the start, expected %lld",
                 form, (long long)i, (long long)j, (long long)(got - base),
                 (long long)(want - base));
        *why = tirx__arena_strdup(a, buf, FN);
        return false;
      }
    }
  if (base % align || (ks > cols && kb % align) || sbo % 16 || sbo <= 0 ||
      sbo >= ((int64_t)1 << 18) || (!sw && (kb % 16 || kb <= 0 || kb >= ((int64_t)1 << 18)))) {
    snprintf(buf, sizeof buf,
             "its %s tile starts at byte %lld with 8-row groups %lld and K blocks %lld bytes "
             "apart: the start and K blocks must be multiples of %lld bytes, the strides "
             "positive multiples of 16 below 2^18",
             form, (long long)base, (long long)sbo, (long long)kb, (long long)align);
    *why = tirx__arena_strdup(a, buf, FN);
    return false;
  }
  out->swizzle = sw == 128 ? 1 : sw == 64 ? 2 : sw == 32 ? 3 : 0;
  out->sbo = sbo;
  out->lbo = sw ? 16 : kb; /* K-major swizzled: unused (16, as fast.cu); interleaved: K step */
  return true;
}

bool tirx__ldmatrix_rows(tirx_arena *a, const tirx__operand *op, int kdim, const char **why) {
  int esize = tirx_dtype_size(op->dtype);
  int64_t shape[2];
  tirx_layout_shape(op->layout, shape, 2);
  int64_t rows = shape[1 - kdim], ks = shape[kdim];
  char buf[200];
  for (int64_t r = 0; r < rows; r++)
    for (int64_t k = 0; k < ks; k += 8) {
      int64_t idx[2], first = 0;
      bool ok = true;
      for (int64_t j = 0; j < 8 && ok; j++) {
        idx[kdim] = k + j;
        idx[1 - kdim] = r;
        int64_t x = 0, m;
        for (int d = 0; d < 2; d++) x = x * shape[d] + idx[d];
        ok = tirx_layout_eval_m(op->layout, x, &m) == TIRX_OK;
        if (j == 0) first = m;
        ok = ok && m == first + j && (first * esize) % 16 == 0;
      }
      if (!ok) {
        snprintf(buf, sizeof buf,
                 "row %lld, K elements %lld..%lld are not 16 contiguous bytes, 16-byte aligned",
                 (long long)r, (long long)k, (long long)k + 7);
        *why = tirx__arena_strdup(a, buf, FN);
        return false;
      }
    }
  return true;
}

bool tirx__block_is_fragment(tirx_arena *a, const tirx_layout *l, int64_t m, int64_t n,
                             int64_t r, int64_t c, int64_t h, int64_t w, const tirx_layout *frag) {
  const tirx_layout *blk = tirx_layout_slice(a, l, 2, (int64_t[]){m, n}, (int64_t[]){r, c},
                                             (int64_t[]){h, w});
  if (!blk || !frag) return false;
  tirx_axis_offset o = {TIRX_AXIS_REG, tirx_layout_offset(blk, TIRX_AXIS_REG)};
  const tirx_layout *want = tirx__layout_make(a, FN, frag->nd, frag->d, 0, NULL, 1, &o,
                                              frag->rank, frag->dim_begin, 0, 0);
  return want && tirx_layout_equal(blk, want);
}

/* ---- lowering helpers of gemm.mma and gemm_async.wgmma (gemm_common.h) ---- */

/* The load of region r at begin + (i, j). */
tirx_expr *tirx__gemm_at(tirx_builder *b, const tirx_region *r, int64_t i, int64_t j) {
  tirx_expr *idx[2];
  int64_t off[2] = {i, j};
  for (int k = 0; k < 2; k++) {
    const tirx_expr *bk = r->begin[k];
    idx[k] = bk->kind == TIRX__EX_INT ? tirx_int(b, bk->i + off[k])
             : off[k]                 ? tirx_add(b, r->begin[k], tirx_int(b, off[k]))
                                      : r->begin[k];
  }
  return tirx_load(b, r->tensor, 2, idx);
}
