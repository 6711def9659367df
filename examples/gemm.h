/*
 * A Hopper GEMM written with the builder (examples/gemm.c): C = A B^T [+ bias] [then SiLU or
 * GeLU], A [M, K] and B [N, K] both K-major (row-major with K innermost), C [M, N] row-major,
 * f16 or bf16 in and out, f32 accumulation. Shared by the CPU tests (dispatch, PTX golden
 * checks), the GPU tests (float64 reference) and bench/gemm.
 *
 * Family "wgmma" (the default, sm_90a): warp-specialised and persistent. One producer
 * warpgroup whose single elected thread issues TMA loads of A and B tiles into a ring of
 * shared-memory stages (full/empty mbarriers, one arrive per consumer warpgroup), one or two
 * consumer warpgroups issuing wgmma.mma_async on their rows of the tile, setmaxnreg to move
 * registers from the producer to the consumers, and an epilogue that adds the bias and applies
 * the activation on the f32 accumulators, casts them, writes them to a swizzled shared tile
 * and stores it with TMA (tails clipped by the tensor map). With a bias, warp 1 of the
 * producer warpgroup stages each tile's bias columns in shared memory as f32. The grid is one
 * CTA per SM at most; tiles are visited in groups of rows for L2 reuse. The tile shape is
 * chosen at build time from the shape in the spec (gemm_pick): 128x256 over 3 stages when
 * that gives every SM four tiles or more, else (decode-like M, narrow N) 64 or 128 rows and a
 * BLOCK_N in steps of 16 that fills the SMs, with as many stages as shared memory holds.
 * Families "mma" (mma.sync m16n8k16) and "scalar" (FMA loops): the same answer, slower; one
 * CTA of four warps per 64x64 tile, one TMA stage, the same epilogues.
 *
 * Launch parameters, in order: M, N, K (i32), A [M, K], B as its (K, N) view (shape (K, N),
 * strides (1, ldb): B [N, K] stored row-major with leading dimension ldb), C [M, N], and for
 * the epilogues with a bias, bias [1, N] (dense). The leading dimensions of A, B and C come
 * from the arguments' strides and must be multiples of 16 bytes (TMA); the logical M, N, K
 * need not be, nor need N for the bias. Grid and block are set by the kernel.
 */
#ifndef TIRX_EXAMPLES_GEMM_H
#define TIRX_EXAMPLES_GEMM_H

#include <tirx.h>

typedef enum gemm_epilogue {
  GEMM_PLAIN = 0,     /* C = A B^T */
  GEMM_BIAS = 1,      /* C = A B^T + bias */
  GEMM_BIAS_SILU = 2, /* C = silu(A B^T + bias) */
  GEMM_BIAS_GELU = 3  /* C = gelu(A B^T + bias), erf form */
} gemm_epilogue;

typedef struct gemm_spec {
  tirx_dtype dtype;       /* TIRX_F16 or TIRX_BF16: A, B, C and bias */
  int64_t m, n, k;        /* the shape the tile shape is chosen for (> 0) */
  gemm_epilogue epilogue;
  const char *family;     /* NULL or "wgmma"; "mma"; "scalar" */
  int sms;                /* streaming multiprocessors to fill (0: 132, an H200) */
} gemm_spec;

/* The tile shape gemm_build uses for spec (wgmma): block_m x block_n x block_k (64), stages
 * of the TMA ring, consumer warpgroups (each block_m / consumers rows). */
typedef struct gemm_tiles {
  int block_m, block_n, block_k, stages, consumers;
} gemm_tiles;
gemm_tiles gemm_pick(const gemm_spec *spec);

/* A new kernel (the caller releases it), or NULL with the reason in err[cap]: a NULL spec,
 * a dtype other than f16/bf16, m, n or k < 1, an epilogue out of the enum, a family other
 * than NULL, "wgmma", "mma" and "scalar", or the builder's error. */
tirx_kernel *gemm_build(const gemm_spec *spec, char *err, size_t cap);

/* The epilogue applied to one f32 value (the CPU reference uses it too). */
double gemm_epilogue_ref(gemm_epilogue e, double x);

#endif
