/* The example kernels (see kernels.h). */
#include "demo_kernels.h"

#include <float.h>
#include <stdio.h>

/* Finishes a kernel: builds it, reports the builder's first error, destroys the builder. */
static tirx_kernel *finish(tirx_builder *b) {
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK)
    fprintf(stderr, "building kernel failed: %s\n", b ? tirx_builder_error(b) : tirx_last_error());
  tirx_builder_destroy(b);
  return k;
}

/* The global index block_idx.x * block + thread_idx.x, in i64 so that it never wraps. */
static tirx_expr *global_index(tirx_builder *b, int block) {
  return tirx_let(
      b, "i",
      tirx_add(b, tirx_mul(b, tirx_cast(b, tirx_block_idx(b, 0), TIRX_I64), tirx_int(b, block)),
               tirx_cast(b, tirx_thread_idx(b, 0), TIRX_I64)));
}

tirx_kernel *example_vector_add(void) {
  tirx_builder *b = tirx_builder_create("vector_add");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_tensor *out = tirx_param_tensor(b, "out", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 256, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 256)), NULL, NULL);
  tirx_expr *i = global_index(b, 256);
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_store(b, out, TIRX_EXPRS(i),
             tirx_add(b, tirx_load(b, x, TIRX_EXPRS(i)), tirx_load(b, y, TIRX_EXPRS(i))));
  tirx_if_end(b);
  return finish(b);
}

tirx_kernel *example_saxpy(void) {
  tirx_builder *b = tirx_builder_create("saxpy");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_expr *a = tirx_param_scalar(b, "a", TIRX_F32);
  tirx_tensor *x = tirx_param_tensor_strided(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_tensor *y = tirx_param_tensor_strided(b, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 256, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 256)), NULL, NULL);
  tirx_expr *i = global_index(b, 256);
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_store(
      b, y, TIRX_EXPRS(i),
      tirx_add(b, tirx_mul(b, a, tirx_load(b, x, TIRX_EXPRS(i))), tirx_load(b, y, TIRX_EXPRS(i))));
  tirx_if_end(b);
  return finish(b);
}

tirx_kernel *example_broadcast2d(void) {
  tirx_builder *b = tirx_builder_create("broadcast2d");
  tirx_expr *m = tirx_param_int(b, "M", TIRX_I64);
  tirx_expr *n = tirx_param_int(b, "N", TIRX_I64);
  tirx_tensor *x = tirx_param_tensor_strided(b, "x", TIRX_F32, TIRX_EXPRS(m, n), NULL);
  tirx_tensor *col = tirx_param_tensor(b, "col", TIRX_F32, TIRX_EXPRS(m), NULL);
  tirx_tensor *row = tirx_param_tensor(b, "row", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_tensor *out = tirx_param_tensor(b, "out", TIRX_F32, TIRX_EXPRS(m, n), NULL);
  tirx_set_block(b, 32, 8, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 32)), tirx_ceildiv(b, m, tirx_int(b, 8)), NULL);
  tirx_expr *j = tirx_let(
      b, "j",
      tirx_add(b, tirx_mul(b, tirx_cast(b, tirx_block_idx(b, 0), TIRX_I64), tirx_int(b, 32)),
               tirx_cast(b, tirx_thread_idx(b, 0), TIRX_I64)));
  tirx_expr *i = tirx_let(
      b, "i",
      tirx_add(b, tirx_mul(b, tirx_cast(b, tirx_block_idx(b, 1), TIRX_I64), tirx_int(b, 8)),
               tirx_cast(b, tirx_thread_idx(b, 1), TIRX_I64)));
  tirx_if_begin(b, tirx_and(b, tirx_lt(b, i, m), tirx_lt(b, j, n)));
  tirx_store(
      b, out, TIRX_EXPRS(i, j),
      tirx_add(b, tirx_mul(b, tirx_load(b, x, TIRX_EXPRS(i, j)), tirx_load(b, col, TIRX_EXPRS(i))),
               tirx_load(b, row, TIRX_EXPRS(j))));
  tirx_if_end(b);
  return finish(b);
}

/* v = max or sum of v over the 32 lanes of the warp, by butterfly shuffles. */
static void warp_allreduce(tirx_builder *b, tirx_expr *v, bool is_max) {
  for (int mask = 16; mask >= 1; mask /= 2) {
    tirx_expr *other = tirx_shfl_xor(b, v, tirx_int(b, mask));
    tirx_assign(b, v, is_max ? tirx_max(b, v, other) : tirx_add(b, v, other));
  }
}

tirx_kernel *example_softmax(void) {
  tirx_builder *b = tirx_builder_create("softmax");
  tirx_expr *m = tirx_param_int(b, "M", TIRX_I64);
  tirx_expr *n = tirx_param_int(b, "N", TIRX_I64);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(m, n), NULL);
  tirx_tensor *out = tirx_param_tensor(b, "out", TIRX_F32, TIRX_EXPRS(m, n), NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_set_grid(b, m, NULL, NULL);
  tirx_expr *r = tirx_let(b, "r", tirx_cast(b, tirx_block_idx(b, 0), TIRX_I64));
  tirx_expr *lane = tirx_let(b, "lane", tirx_cast(b, tirx_lane_id(b), TIRX_I64));
  tirx_expr *step = tirx_int(b, 32);

  /* The row maximum. */
  tirx_expr *mx = tirx_var(b, "mx", TIRX_F32, tirx_float(b, -FLT_MAX, TIRX_F32));
  tirx_expr *j = tirx_for_begin(b, "j", lane, n, step, TIRX_LOOP_SERIAL);
  tirx_assign(b, mx, tirx_max(b, mx, tirx_load(b, x, TIRX_EXPRS(r, j))));
  tirx_for_end(b);
  warp_allreduce(b, mx, true);

  /* The sum of exp(x - max). */
  tirx_expr *sum = tirx_var(b, "sum", TIRX_F32, NULL);
  j = tirx_for_begin(b, "j", lane, n, step, TIRX_LOOP_SERIAL);
  tirx_assign(b, sum,
              tirx_add(b, sum, tirx_exp(b, tirx_sub(b, tirx_load(b, x, TIRX_EXPRS(r, j)), mx))));
  tirx_for_end(b);
  warp_allreduce(b, sum, false);

  /* Normalise. */
  tirx_expr *inv = tirx_let(b, "inv", tirx_div(b, tirx_float(b, 1.0, TIRX_F32), sum));
  j = tirx_for_begin(b, "j", lane, n, step, TIRX_LOOP_SERIAL);
  tirx_store(b, out, TIRX_EXPRS(r, j),
             tirx_mul(b, tirx_exp(b, tirx_sub(b, tirx_load(b, x, TIRX_EXPRS(r, j)), mx)), inv));
  tirx_for_end(b);
  return finish(b);
}

tirx_kernel *example_empty(void) {
  tirx_builder *b = tirx_builder_create("empty");
  tirx_param_int(b, "unused", TIRX_I32);
  tirx_set_block(b, 32, 1, 1);
  return finish(b);
}

const example_kernel example_kernels[] = {
    {"vector_add", example_vector_add},
    {"saxpy", example_saxpy},
    {"broadcast2d", example_broadcast2d},
    {"softmax", example_softmax},
    {"empty", example_empty},
};
const int example_kernel_count = (int)(sizeof example_kernels / sizeof example_kernels[0]);
