/*
 * The example kernels, built with the public builder API. Shared by the example programs,
 * the CPU tests (which compile each with NVRTC) and the GPU tests (which launch each against
 * a float64 CPU reference).
 *
 * Each function returns a new kernel (one reference, the caller releases it) or NULL with the
 * builder's first error printed to stderr.
 */
#ifndef TIRX_SUPPORT_DEMO_KERNELS_H
#define TIRX_SUPPORT_DEMO_KERNELS_H

#include <tirx.h>

/* out[i] = x[i] + y[i], i < n.
 * Parameters: n (i64), x, y, out (f32 [n], dense). Block 256, grid ceil(n / 256). */
tirx_kernel *example_vector_add(void);

/* y[i] = a * x[i] + y[i], i < n.
 * Parameters: n (i64), a (f32), x, y (f32 [n], any stride). Block 256, grid ceil(n / 256). */
tirx_kernel *example_saxpy(void);

/* out[i, j] = x[i, j] * col[i] + row[j]: a 2-D broadcast with runtime shapes.
 * Parameters: M, N (i64), x (f32 [M, N], any strides), col (f32 [M]), row (f32 [N]),
 * out (f32 [M, N], dense). Block 32 x 8, grid (ceil(N / 32), ceil(M / 8)). */
tirx_kernel *example_broadcast2d(void);

/* out[r, :] = softmax(x[r, :]) over each row, one warp per row, native statements only:
 * strided loops, warp shuffles for the max and the sum.
 * Parameters: M, N (i64), x, out (f32 [M, N], dense). Block 32, grid M. */
tirx_kernel *example_softmax(void);

/* A kernel with one i32 parameter and an empty body, for launch-overhead benchmarks. */
tirx_kernel *example_empty(void);

/* Every kernel above, by name, for loops in tests. */
typedef struct example_kernel {
  const char *name;
  tirx_kernel *(*make)(void);
} example_kernel;
extern const example_kernel example_kernels[];
extern const int example_kernel_count;

#endif
