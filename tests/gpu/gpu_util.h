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
#include "bounded_sync.h"

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

/* ---- synchronisation with a 10-second host timeout (bounded_sync.h) ---- */

static void sync_or_fail(tirx_runtime *rt) { sync_within(rt, 10, GPU_HANG); }

#endif
