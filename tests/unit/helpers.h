/* Shared helpers for the CPU tests: brute-force evaluation and random layouts. */
#ifndef TIRX_TEST_HELPERS_H
#define TIRX_TEST_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tirx.h"

/* Asserts a call failed with status st and exactly the message msg. */
#define expect_error(call, st, msg)                                                          \
  do {                                                                                       \
    tirx_clear_error();                                                                      \
    tirx_status got_ = (call);                                                               \
    cr_assert_eq(got_, (st), "status %s, expected %s (%s)", tirx_status_name(got_),          \
                 tirx_status_name(st), tirx_last_error());                                   \
    cr_assert_str_eq(tirx_last_error(), (msg));                                              \
  } while (0)

/* Asserts an object-returning call returned NULL with status st and message msg. */
#define expect_null(call, st, msg)                                                           \
  do {                                                                                       \
    tirx_clear_error();                                                                      \
    const void *got_ = (call);                                                               \
    cr_assert_null(got_, "expected NULL");                                                   \
    cr_assert_eq(tirx_last_status(), (st), "status %s, expected %s (%s)",                    \
                 tirx_status_name(tirx_last_status()), tirx_status_name(st),                 \
                 tirx_last_error());                                                         \
    cr_assert_str_eq(tirx_last_error(), (msg));                                              \
  } while (0)

/* The ptxas -v report of ptx for sm_90a (malloc'ed), or NULL when ptxas cannot run here
 * (TIRX_PTXAS: the build's toolkit ptxas, a definition of the unit tests' build). */
static inline char *test_ptxas_report(const char *ptx) {
#ifdef TIRX_PTXAS
  if (access(TIRX_PTXAS, X_OK) != 0) return NULL;
  char path[] = "/tmp/tirx_test_ptxas_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  cr_assert_not_null(f);
  fputs(ptx, f);
  fclose(f);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90a -v '%s' -o /dev/null 2>&1", TIRX_PTXAS, path);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t cap = 1 << 16, n = 0;
  char *out = malloc(cap);
  cr_assert_not_null(out);
  for (size_t got; (got = fread(out + n, 1, cap - 1 - n, p)) > 0;) n += got;
  out[n] = '\0';
  int rc = pclose(p);
  unlink(path);
  cr_assert_eq(rc, 0, "ptxas failed:\n%s", out);
  return out;
#else
  (void)ptx;
  return NULL;
#endif
}

/* A deterministic PRNG for tests (xorshift64*), seeded per test. */
static inline uint64_t test_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}
static inline int64_t test_rand_range(uint64_t *s, int64_t lo, int64_t hi) { /* [lo, hi] */
  return lo + (int64_t)(test_rand(s) % (uint64_t)(hi - lo + 1));
}

/* Lexicographic comparison of coordinates, for sorting point sets. */
static inline int test_coord_cmp(const void *a, const void *b) {
  const tirx_coord *x = a, *y = b;
  for (int i = 0; i < TIRX_AXIS_MAX; i++)
    if (x->v[i] != y->v[i]) return x->v[i] > y->v[i] ? 1 : -1;
  return 0;
}

/* The set L(x) as a sorted, de-duplicated array (malloc'ed), its length in *n. */
static inline tirx_coord *test_point_set(const tirx_layout *l, int64_t x, int64_t *n) {
  int64_t count = 0;
  tirx_layout_eval(l, x, NULL, 0, &count);
  tirx_coord *pts = calloc((size_t)(count ? count : 1), sizeof *pts);
  cr_assert_eq(tirx_layout_eval(l, x, pts, count, &count), TIRX_OK, "%s", tirx_last_error());
  qsort(pts, (size_t)count, sizeof *pts, test_coord_cmp);
  int64_t k = 0;
  for (int64_t i = 0; i < count; i++)
    if (k == 0 || test_coord_cmp(&pts[k - 1], &pts[i]) != 0) pts[k++] = pts[i];
  *n = k;
  return pts;
}

/* True when a(xa) and b(xb) are the same point sets. */
static inline bool test_same_points(const tirx_layout *a, int64_t xa, const tirx_layout *b,
                                    int64_t xb) {
  int64_t na, nb;
  tirx_coord *pa = test_point_set(a, xa, &na), *pb = test_point_set(b, xb, &nb);
  bool same = na == nb && memcmp(pa, pb, (size_t)na * sizeof *pa) == 0;
  free(pa);
  free(pb);
  return same;
}

/* Asserts a and b map every flat index to the same point set (brute force). */
static inline void assert_same_placement(const tirx_layout *a, const tirx_layout *b) {
  cr_assert_eq(tirx_layout_size(a), tirx_layout_size(b), "sizes differ");
  for (int64_t x = 0; x < tirx_layout_size(a); x++)
    if (!test_same_points(a, x, b, x)) {
      char *sa = tirx_layout_str(a), *sb = tirx_layout_str(b);
      cr_assert_fail("placements differ at x=%lld: %s vs %s", (long long)x, sa, sb);
    }
}

/* A random small layout: up to max_nd shard iters with extents in [1, 6] (non-powers of two
 * included), strides in [-8, 24] on a few axes, up to 2 replicas, up to 2 offsets. */
static inline tirx_layout *test_random_layout(tirx_arena *a, uint64_t *s, int max_nd,
                                              bool memory_only) {
  static const tirx_axis axes[] = {TIRX_AXIS_M, TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_REG};
  tirx_iter d[8], r[2];
  tirx_axis_offset o[2];
  int nd = (int)test_rand_range(s, 1, max_nd), nr = memory_only ? 0 : (int)test_rand_range(s, 0, 2);
  int no = (int)test_rand_range(s, 0, memory_only ? 1 : 2);
  for (int i = 0; i < nd; i++) {
    d[i].extent = test_rand_range(s, 1, 6);
    d[i].stride = test_rand_range(s, -2, 24);
    d[i].axis = memory_only ? TIRX_AXIS_M : axes[test_rand(s) % 4];
  }
  for (int i = 0; i < nr; i++) {
    r[i].extent = test_rand_range(s, 1, 3);
    r[i].stride = test_rand_range(s, -4, 8);
    r[i].axis = axes[test_rand(s) % 4];
  }
  for (int i = 0; i < no; i++) {
    o[i].axis = memory_only ? TIRX_AXIS_M : axes[i * 2 + (int)(test_rand(s) % 2)];
    o[i].value = test_rand_range(s, -5, 20);
  }
  tirx_layout *l = tirx_layout_new(a, nd, d, nr, r, no, o);
  cr_assert_not_null(l, "%s", tirx_last_error());
  return l;
}

#endif
