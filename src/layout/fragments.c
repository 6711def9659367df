/*
 * Ready-made layouts: the register fragments of mma.sync, wgmma and ldmatrix as the PTX ISA
 * draws them, Blackwell's tensor-memory accumulator and tcgen05.ld/st fragments, a
 * row-per-thread warpgroup layout and swizzled shared-memory tiles.
 *
 * Register fragments use the reg axis element by element: a 32-bit register holding two
 * 16-bit values is two reg slots. All results are grouped to the logical tile.
 */
#include <stdio.h>
#include <string.h>

#include "layout_internal.h"

enum {
  LANE = TIRX_AXIS_LANEID,
  REG = TIRX_AXIS_REG,
  TID = TIRX_AXIS_TID_IN_WG,
  M = TIRX_AXIS_M,
  TLANE = TIRX_AXIS_TLANE,
  TCOL = TIRX_AXIS_TCOL
};

/* Builds a grouped layout from a list of iters split into dims of the given iter counts. */
static tirx_layout *grouped(tirx_arena *a, const char *fn, int nd, const tirx_iter *d, int rank,
                            const int *dim_iters, int swizzle_bytes, int swizzle_elem) {
  int32_t begin[TIRX_LAYOUT_MAX_RANK + 1] = {0};
  for (int k = 0; k < rank; k++) begin[k + 1] = begin[k] + dim_iters[k];
  return tirx__layout_make(a, fn, nd, d, 0, NULL, 0, NULL, rank, begin, swizzle_bytes,
                           swizzle_elem);
}

static bool arena_ok(tirx_arena *a, const char *fn) {
  if (a) return true;
  tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
  return false;
}

/*
 * A: (M16,K16) -> (T32,V8). Row i: lane 4*(i%8), reg 2*(i/8). Column j: lane (j%8)/2,
 * reg 4*(j/8) + j%2.
 *   ((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))
 */
tirx_layout *tirx_layout_mma_m16n8k16_a(tirx_arena *a) {
  static const char fn[] = "tirx_layout_mma_m16n8k16_a";
  if (!arena_ok(a, fn)) return NULL;
  static const tirx_iter d[] = {{2, 2, REG}, {8, 4, LANE}, {2, 4, REG}, {4, 1, LANE}, {2, 1, REG}};
  return grouped(a, fn, 5, d, 2, (const int[]){2, 3}, 0, 0);
}

/*
 * B: (K16,N8) -> (T32,V4). Row k: lane (k%8)/2, reg 2*(k/8) + k%2. Column n: lane 4*n.
 *   ((2,4,2),(8)):((2@reg,1@laneid,1@reg),(4@laneid))
 */
tirx_layout *tirx_layout_mma_m16n8k16_b(tirx_arena *a) {
  static const char fn[] = "tirx_layout_mma_m16n8k16_b";
  if (!arena_ok(a, fn)) return NULL;
  static const tirx_iter d[] = {{2, 2, REG}, {4, 1, LANE}, {2, 1, REG}, {8, 4, LANE}};
  return grouped(a, fn, 4, d, 2, (const int[]){3, 1}, 0, 0);
}

/*
 * C/D: (M16,N8) -> (T32,V4). Row i: lane 4*(i%8), reg 2*(i/8). Column j: lane j/2, reg j%2.
 *   ((2,8),(4,2)):((2@reg,4@laneid),(1@laneid,1@reg))
 */
tirx_layout *tirx_layout_mma_m16n8k16_c(tirx_arena *a) {
  static const char fn[] = "tirx_layout_mma_m16n8k16_c";
  if (!arena_ok(a, fn)) return NULL;
  static const tirx_iter d[] = {{2, 2, REG}, {8, 4, LANE}, {4, 1, LANE}, {2, 1, REG}};
  return grouped(a, fn, 4, d, 2, (const int[]){2, 2}, 0, 0);
}

/*
 * The wgmma accumulator: (M64,Nn) -> (T128,V(n/2)). Warp w = i/16 of the warpgroup holds rows
 * 16w..16w+15 as the m16n8 C fragment, repeated n/8 times along the columns.
 *   ((4,2,8),(n/8,4,2)):((32@tid_in_wg,2@reg,4@tid_in_wg),(4@reg,1@tid_in_wg,1@reg))
 * The (n/8) iter is left out when n is 8. m = 64 * s (s m64 slabs, one wgmma each) puts slab
 * q at registers q * n/2: an outer (s):(n/2@reg) iter on the rows. m and n are checked by
 * the callers.
 */
static tirx_layout *wgmma_frag(tirx_arena *a, const char *fn, int m, int n) {
  tirx_iter d[7] = {{m / 64, n / 2, REG}, {4, 32, TID}, {2, 2, REG}, {8, 4, TID},
                    {n / 8, 4, REG},      {4, 1, TID},  {2, 1, REG}};
  int rows = 4, nd = 7;
  if (n == 8) { /* drop (n/8) */
    d[4] = d[5];
    d[5] = d[6];
    nd--;
  }
  tirx_iter *first = d;
  if (m == 64) { /* drop (m/64) */
    first++;
    rows--;
    nd--;
  }
  return grouped(a, fn, nd, first, 2, (const int[]){rows, nd - rows}, 0, 0);
}

static bool slabs_ok(const char *fn, int m) {
  if (m >= 64 && m <= 256 && m % 64 == 0) return true;
  tirx__error(TIRX_E_INVALID_ARG, "%s: m is %d, expected 64, 128, 192 or 256", fn, m);
  return false;
}

tirx_layout *tirx_layout_wgmma_acc(tirx_arena *a, int m, int n) {
  static const char fn[] = "tirx_layout_wgmma_acc";
  if (!arena_ok(a, fn) || !slabs_ok(fn, m)) return NULL;
  if (n < 8 || n > 256 || n % 8 != 0) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: n is %d, expected a multiple of 8 in [8, 256]", fn, n);
    return NULL;
  }
  return wgmma_frag(a, fn, m, n);
}

tirx_layout *tirx_layout_wgmma_rows(tirx_arena *a, int n) {
  static const char fn[] = "tirx_layout_wgmma_rows";
  if (!arena_ok(a, fn)) return NULL;
  if (n < 1 || n > 4096) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: n is %d, expected 1 to 4096", fn, n);
    return NULL;
  }
  char text[128];
  snprintf(text, sizeof text,
           "((4,2,8),(%d)):((32@tid_in_wg,1@reg,4@tid_in_wg),(0@reg))+[4:1@tid_in_wg]", n);
  return tirx_layout_parse(a, text);
}

/*
 * The wgmma A operand in registers (RS form): (M64,K16) -> (T128,V8) per k16 step. Warp w = i/16
 * holds rows 16w..16w+15 as the mma.sync m16n8k16 A fragment (a0..a7 of step s in registers
 * 8s..8s+7): row i at 2@reg (+8 rows), column j at lane (j%8)/2, reg 4*(j/8) + j%2 of its step.
 * That is the accumulator's placement with n = k, so both are built by wgmma_frag:
 *   ((4,2,8),(k/8,4,2)):((32@tid_in_wg,2@reg,4@tid_in_wg),(4@reg,1@tid_in_wg,1@reg))
 * with slab q of m = 64 * s at registers q * k/2.
 */
tirx_layout *tirx_layout_wgmma_a(tirx_arena *a, int m, int k) {
  static const char fn[] = "tirx_layout_wgmma_a";
  if (!arena_ok(a, fn) || !slabs_ok(fn, m)) return NULL;
  if (k < 16 || k > 256 || k % 16 != 0) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: k is %d, expected a multiple of 16 in [16, 256]", fn, k);
    return NULL;
  }
  return wgmma_frag(a, fn, m, k);
}

/*
 * ldmatrix .x1/.x2/.x4: (8*num, 8) -> (T32, V(2*num)). Matrix q = i/8 lands in regs 2q, 2q+1;
 * lane l holds row l/4, columns 2*(l%4) + {0,1} of each matrix.
 *   ((num,8),(4,2)):((2@reg,4@laneid),(1@laneid,1@reg)), the (num) iter left out for .x1.
 */
tirx_layout *tirx_layout_ldmatrix(tirx_arena *a, int num) {
  static const char fn[] = "tirx_layout_ldmatrix";
  if (!arena_ok(a, fn)) return NULL;
  if (num != 1 && num != 2 && num != 4) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: num is %d, expected 1, 2 or 4", fn, num);
    return NULL;
  }
  tirx_iter d[] = {{num, 2, REG}, {8, 4, LANE}, {4, 1, LANE}, {2, 1, REG}};
  if (num == 1) return grouped(a, fn, 3, d + 1, 2, (const int[]){1, 2}, 0, 0);
  return grouped(a, fn, 4, d, 2, (const int[]){2, 2}, 0, 0);
}

/* (rows,cols) -> (T rows, V cols): ((rows),(cols)):((1@tid_in_wg),(1@reg)). */
tirx_layout *tirx_layout_warpgroup_rows(tirx_arena *a, int64_t rows, int64_t cols) {
  static const char fn[] = "tirx_layout_warpgroup_rows";
  if (!arena_ok(a, fn)) return NULL;
  if (rows < 1 || rows > 128) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: rows is %lld, expected 1 to 128", fn, (long long)rows);
    return NULL;
  }
  if (cols < 1) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: cols is %lld, expected >= 1", fn, (long long)cols);
    return NULL;
  }
  tirx_iter d[] = {{rows, 1, TID}, {cols, 1, REG}};
  return grouped(a, fn, 2, d, 2, (const int[]){1, 1}, 0, 0);
}

/*
 * (rows,cols) -> m, in column blocks of w = swizzle_bytes / elem_bytes columns, each block
 * rows x w row-major, the blocks one after another, then swizzled:
 *   ((rows),(cols/w,w)):((w@m),(rows*w@m,1@m))^sw(swizzle_bytes,elem_bytes)
 * With one block the (cols/w) iter is left out; with no swizzle the tile is row-major.
 */
tirx_layout *tirx_layout_smem_tile(tirx_arena *a, int64_t rows, int64_t cols, int elem_bytes,
                                   int swizzle_bytes) {
  static const char fn[] = "tirx_layout_smem_tile";
  if (!arena_ok(a, fn)) return NULL;
  if (rows < 1 || cols < 1) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: shape (%lld,%lld) has an extent < 1", fn,
                (long long)rows, (long long)cols);
    return NULL;
  }
  if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: elem_bytes is %d, expected 1, 2, 4 or 8", fn,
                elem_bytes);
    return NULL;
  }
  if (swizzle_bytes != 0 && swizzle_bytes != 32 && swizzle_bytes != 64 && swizzle_bytes != 128) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: swizzle_bytes is %d, expected 0, 32, 64 or 128", fn,
                swizzle_bytes);
    return NULL;
  }
  int64_t w = swizzle_bytes ? swizzle_bytes / elem_bytes : cols, block;
  if (cols % w != 0) {
    tirx__error(TIRX_E_INVALID_ARG,
                "%s: cols is %lld, expected a multiple of the swizzle width %lld", fn,
                (long long)cols, (long long)w);
    return NULL;
  }
  if (!tirx__mul_ok(rows, w, &block)) {
    tirx__error(TIRX_E_OVERFLOW, "%s: the tile's size overflows int64", fn);
    return NULL;
  }
  tirx_iter d[] = {{rows, w, M}, {cols / w, block, M}, {w, 1, M}};
  if (cols == w) {
    d[1] = d[2];
    return grouped(a, fn, 2, d, 2, (const int[]){1, 1}, swizzle_bytes, elem_bytes);
  }
  return grouped(a, fn, 3, d, 2, (const int[]){1, 2}, swizzle_bytes, elem_bytes);
}

/*
 * The tcgen05.mma accumulator D in tensor memory (PTX ISA, "data path layout organization"),
 * (M/cta_group, N) -> (TLane, TCol) for this CTA, one 32-bit cell per element, relative to
 * the allocation's base:
 *   m 128, cta_group 1 (layout D) and m 256, cta_group 2 (layout A): row i in lane i,
 *     ((128),(n)):((1@TLane),(1@TCol));
 *   m 64, cta_group 1 (layout F): lanes 0-15 of each warp's 32-lane quarter,
 *     ((4,16),(n)):((32@TLane,1@TLane),(1@TCol));
 *   m 128, cta_group 2 (layout B): 64 rows, the column halves folded onto the lane halves,
 *     ((64),(2,n/2)):((1@TLane),(64@TLane,1@TCol)).
 */
tirx_layout *tirx_layout_tmem_acc(tirx_arena *a, int m, int n, int cta_group) {
  static const char fn[] = "tirx_layout_tmem_acc";
  if (!arena_ok(a, fn)) return NULL;
  if (cta_group != 1 && cta_group != 2) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: cta_group is %d, expected 1 or 2", fn, cta_group);
    return NULL;
  }
  if (cta_group == 1 ? m != 64 && m != 128 : m != 128 && m != 256) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: m is %d, expected %s for cta_group %d", fn, m,
                cta_group == 1 ? "64 or 128" : "128 or 256", cta_group);
    return NULL;
  }
  int step = m == 64 ? 8 : 16;
  if (n < step || n > 256 || n % step != 0) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: n is %d, expected a multiple of %d in [%d, 256]", fn, n,
                step, step);
    return NULL;
  }
  if (m == 64) {
    tirx_iter d[] = {{4, 32, TLANE}, {16, 1, TLANE}, {n, 1, TCOL}};
    return grouped(a, fn, 3, d, 2, (const int[]){2, 1}, 0, 0);
  }
  if (m == 128 && cta_group == 2) {
    tirx_iter d[] = {{64, 1, TLANE}, {2, 64, TLANE}, {n / 2, 1, TCOL}};
    return grouped(a, fn, 3, d, 2, (const int[]){1, 2}, 0, 0);
  }
  tirx_iter d[] = {{128, 1, TLANE}, {n, 1, TCOL}};
  return grouped(a, fn, 2, d, 2, (const int[]){1, 1}, 0, 0);
}

/*
 * The register side of tcgen05.ld/st .shape.xN for one warp: the tile of TMEM lanes (rows) and
 * 32-bit columns the instruction moves, (rows, cols) -> (laneid, reg), register r of lane l
 * holding (PTX ISA "matrix fragments for tcgen05.ld/st"):
 *   32x32b  (32, N):   (l, r)                                ((32),(N)):((1@laneid),(1@reg))
 *   16x64b  (16, 2N):  (l/4 + 8(l%2), (l/2)%2 + 2r)
 *                                          ((2,8),(N,2)):((1@laneid,4@laneid),(1@reg,2@laneid))
 *   16x128b (16, 4N):  (l/4 + 8(r%2), l%4 + 4(r/2))
 *                                          ((2,8),(N,4)):((1@reg,4@laneid),(2@reg,1@laneid))
 *   16x256b (16, 8N):  (l/4 + 8((r/2)%2), r%2 + 2(l%4) + 8(r/4))
 *                                  ((2,8),(N,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))
 * The (N) iter is left out for .x1.
 */
tirx_layout *tirx_layout_tmem_ld(tirx_arena *a, tirx_tmem_shape shape, int num) {
  static const char fn[] = "tirx_layout_tmem_ld";
  if (!arena_ok(a, fn)) return NULL;
  if ((int)shape < 0 || (int)shape > (int)TIRX_TMEM_16X256B) {
    tirx__error(TIRX_E_INVALID_ARG,
                "%s: shape is %d, expected TIRX_TMEM_32X32B, _16X64B, _16X128B or _16X256B", fn,
                (int)shape);
    return NULL;
  }
  /* Registers per lane are at most 128: .x128 for 32x32b and 16x64b, .x64 and .x32 above. */
  int most = shape == TIRX_TMEM_16X128B ? 64 : shape == TIRX_TMEM_16X256B ? 32 : 128;
  if (num < 1 || num > most || (num & (num - 1)) != 0) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: num is %d, expected a power of two from 1 to %d", fn,
                num, most);
    return NULL;
  }
  tirx_iter d[6];
  int nd = 0, rows;
  switch (shape) {
  case TIRX_TMEM_32X32B:
    d[nd++] = (tirx_iter){32, 1, LANE};
    rows = 1;
    d[nd++] = (tirx_iter){num, 1, REG};
    break;
  case TIRX_TMEM_16X64B:
    d[nd++] = (tirx_iter){2, 1, LANE};
    d[nd++] = (tirx_iter){8, 4, LANE};
    rows = 2;
    d[nd++] = (tirx_iter){num, 1, REG};
    d[nd++] = (tirx_iter){2, 2, LANE};
    break;
  case TIRX_TMEM_16X128B:
    d[nd++] = (tirx_iter){2, 1, REG};
    d[nd++] = (tirx_iter){8, 4, LANE};
    rows = 2;
    d[nd++] = (tirx_iter){num, 2, REG};
    d[nd++] = (tirx_iter){4, 1, LANE};
    break;
  default:
    d[nd++] = (tirx_iter){2, 2, REG};
    d[nd++] = (tirx_iter){8, 4, LANE};
    rows = 2;
    d[nd++] = (tirx_iter){num, 4, REG};
    d[nd++] = (tirx_iter){4, 1, LANE};
    d[nd++] = (tirx_iter){2, 1, REG};
    break;
  }
  if (num == 1) { /* drop (N) */
    memmove(&d[rows], &d[rows + 1], (size_t)(nd - rows - 1) * sizeof d[0]);
    nd--;
  }
  return grouped(a, fn, nd, d, 2, (const int[]){rows, nd - rows}, 0, 0);
}
