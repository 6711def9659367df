/* Helpers shared by the tests of src/layout/ops.c (group, slice, tile): shapes, flat indices,
 * and the printed form of a result. */
#ifndef TIRX_TEST_LAYOUT_OPS_H
#define TIRX_TEST_LAYOUT_OPS_H

#include "../helpers.h"

/* A random factorization of size into rank extents (extent 1 included). */
static inline void random_shape(uint64_t *s, int64_t size, int rank, int64_t *shape) {
  for (int k = 0; k < rank; k++) shape[k] = 1;
  for (int64_t p = 2; size > 1; p++)
    while (size % p == 0) {
      shape[test_rand(s) % (uint64_t)rank] *= p;
      size /= p;
    }
}

/* The flat index of a multi-index. */
static inline int64_t ravel(int rank, const int64_t *shape, const int64_t *idx) {
  int64_t x = 0;
  for (int k = 0; k < rank; k++) x = x * shape[k] + idx[k];
  return x;
}

static inline void unravel(int64_t x, int rank, const int64_t *shape, int64_t *idx) {
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = x % shape[k];
    x /= shape[k];
  }
}

/* Asserts the structure of a grouped layout in the paper's notation. */
static inline void expect_str(const tirx_layout *l, const char *want) {
  cr_assert_not_null(l, "%s", tirx_last_error());
  char *s = tirx_layout_str(l);
  cr_assert_str_eq(s, want);
  free(s);
}

#endif
