/*
 * Shared by the GPU tests of asynchronous copies (test_tma.c, test_cp_async.c): the runtime
 * (skipping the test without a device), the random seed (TIRX_SEED replays it), and a
 * synchronize with a 10-second host timeout, so that a kernel that hangs fails the test
 * instead of blocking it. Define GPU_HANG (what a hang means, for the message) first.
 */
#ifndef TIRX_TESTS_GPU_UTIL_H
#define TIRX_TESTS_GPU_UTIL_H
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tirx.h"

#ifndef GPU_HANG
#define GPU_HANG "a hang"
#endif
#ifndef OK
#define OK(call) cr_assert_eq((call), TIRX_OK, "%s: %s", #call, tirx_last_error())
#endif

static uint64_t rng;

static tirx_runtime *gpu(void) {
  tirx_runtime *rt = NULL;
  OK(tirx_runtime_create(NULL, &rt));
  if (!tirx_runtime_has_device(rt)) {
    char why[512];
    snprintf(why, sizeof why, "%s", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    cr_skip_test("no CUDA device: %s", why);
  }
  const char *s = getenv("TIRX_SEED");
  rng = s && *s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) * 2654435761u + 1;
  cr_log_info("device %s (%s), seed %llu (TIRX_SEED replays it)", tirx_runtime_device_name(rt),
              tirx_runtime_arch(rt), (unsigned long long)rng);
  return rt;
}

static uint32_t rnd32(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

/* ---- synchronisation with a 10-second host timeout ---- */

typedef struct sync_job {
  tirx_runtime *rt;
  tirx_status st;
  char msg[512];
  bool done;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} sync_job;

static void *sync_thread(void *arg) {
  sync_job *j = arg;
  tirx_status st = tirx_runtime_synchronize(j->rt, NULL);
  pthread_mutex_lock(&j->mu);
  j->st = st;
  snprintf(j->msg, sizeof j->msg, "%s", st == TIRX_OK ? "" : tirx_last_error());
  j->done = true;
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

static void sync_or_fail(tirx_runtime *rt) {
  static sync_job j; /* leaked on a timeout: the process is about to fail */
  memset(&j, 0, sizeof j);
  j.rt = rt;
  pthread_mutex_init(&j.mu, NULL);
  pthread_cond_init(&j.cv, NULL);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, sync_thread, &j), 0);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock(&j.mu);
  while (!j.done)
    if (pthread_cond_timedwait(&j.cv, &j.mu, &until) != 0) break;
  bool done = j.done;
  pthread_mutex_unlock(&j.mu);
  if (!done) cr_assert_fail("the kernel did not finish within 10 s (" GPU_HANG ")");
  pthread_join(t, NULL);
  cr_assert_eq(j.st, TIRX_OK, "synchronize: %s", j.msg);
}

#endif
