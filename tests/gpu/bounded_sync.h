/*
 * A synchronize with a host timeout for the GPU tests: a kernel that hangs fails its test
 * within the given seconds, with a message naming what was running, instead of holding the
 * suite until Criterion's per-test timeout (a hung GEMM held session 15's first suite run for
 * 380 s). The waiting thread is left behind on a timeout: the test process fails right after.
 */
#ifndef TIRX_TESTS_GPU_BOUNDED_SYNC_H
#define TIRX_TESTS_GPU_BOUNDED_SYNC_H
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tirx.h"

typedef struct bounded_sync_job {
  tirx_runtime *rt;
  tirx_status st;
  char msg[512];
  bool done;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} bounded_sync_job;

static void *bounded_sync_thread(void *arg) {
  bounded_sync_job *j = arg;
  tirx_status st = tirx_runtime_synchronize(j->rt, NULL);
  pthread_mutex_lock(&j->mu);
  j->st = st;
  snprintf(j->msg, sizeof j->msg, "%s", st == TIRX_OK ? "" : tirx_last_error());
  j->done = true;
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

/* tirx_runtime_synchronize(rt, NULL) within `seconds`, or the test fails naming `what`. */
static inline void sync_within(tirx_runtime *rt, int seconds, const char *what) {
  static bounded_sync_job j; /* outlives this frame if the kernel hangs */
  memset(&j, 0, sizeof j);
  j.rt = rt;
  pthread_mutex_init(&j.mu, NULL);
  pthread_cond_init(&j.cv, NULL);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, bounded_sync_thread, &j), 0);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += seconds;
  pthread_mutex_lock(&j.mu);
  while (!j.done)
    if (pthread_cond_timedwait(&j.cv, &j.mu, &until) != 0) break;
  bool done = j.done;
  pthread_mutex_unlock(&j.mu);
  if (!done) cr_assert_fail("the kernel did not finish within %d s (%s)", seconds, what);
  pthread_join(t, NULL);
  cr_assert_eq(j.st, TIRX_OK, "%s: synchronize: %s", what, j.msg);
}

#endif
