/* The op table (src/kernels/table.c): one build per key when many threads ask at once, a failed
 * build is not remembered, and clearing releases the kernels. */
#include <pthread.h>
#include <stdatomic.h>

#include "../helpers.h"
#include "kernels/kernels_internal.h"

static atomic_int builds;

/* Both keys build the same source (the golden tests record it in build order, which the
 * threads decide); the table must still keep two kernels. */
static tirx_status build_counted(const void *ctx, tirx_kernel **out) {
  (void)ctx;
  atomic_fetch_add(&builds, 1);
  return tirx_kernels_row_build(TIRX_ROW_OP_SOFTMAX, NULL, TIRX_F32, 8192, out);
}

static tirx_status build_failing(const void *ctx, tirx_kernel **out) {
  (void)ctx;
  atomic_fetch_add(&builds, 1);
  *out = NULL;
  return tirx__error(TIRX_E_BUILD, "build_failing: no");
}

typedef struct job {
  int key;
  tirx_kernel *k;
  tirx_status st;
} job;

static void *ask(void *arg) {
  job *j = arg;
  j->st = tirx__kernels_get(&j->key, sizeof j->key, build_counted, NULL, &j->k);
  return NULL;
}

Test(kernels_table, one_build_per_key_from_many_threads, .timeout = 120) {
  enum { N = 16 };
  job jobs[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    jobs[i] = (job){.key = i % 2};
    cr_assert_eq(pthread_create(&th[i], NULL, ask, &jobs[i]), 0);
  }
  for (int i = 0; i < N; i++)
    pthread_join(th[i], NULL);
  cr_assert_eq(atomic_load(&builds), 2, "%d builds for 2 keys", atomic_load(&builds));
  cr_assert_eq(tirx_kernels_cached(), 2);
  for (int i = 0; i < N; i++) {
    cr_assert_eq(jobs[i].st, TIRX_OK);
    cr_assert_eq(jobs[i].k, jobs[i % 2].k, "thread %d got another kernel for its key", i);
  }
  cr_assert_neq(jobs[0].k, jobs[1].k);
  tirx_kernels_clear(); /* the threads' references keep their kernels alive */
  cr_assert_eq(tirx_kernels_cached(), 0);
  cr_assert_not_null(tirx_kernel_source(jobs[0].k));
  for (int i = 0; i < N; i++)
    tirx_kernel_release(jobs[i].k);
}

Test(kernels_table, a_failed_build_is_reported_and_not_remembered) {
  int key = 7;
  tirx_kernel *k = NULL;
  expect_error(tirx__kernels_get(&key, sizeof key, build_failing, NULL, &k), TIRX_E_BUILD,
               "build_failing: no");
  cr_assert_null(k);
  expect_error(tirx__kernels_get(&key, sizeof key, build_failing, NULL, &k), TIRX_E_BUILD,
               "build_failing: no");
  cr_assert_eq(atomic_load(&builds), 2);
  cr_assert_eq(tirx_kernels_cached(), 0);
  unsigned char big[TIRX__KERNELS_KEY_MAX + 1] = {0};
  char want[64];
  snprintf(want, sizeof want, "kernel table: key of %d bytes", TIRX__KERNELS_KEY_MAX + 1);
  expect_error(tirx__kernels_get(big, sizeof big, build_failing, NULL, &k), TIRX_E_INTERNAL, want);
}
