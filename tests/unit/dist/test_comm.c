/*
 * src/dist/nccl.c and comm.c on the CPU: loading NCCL (present on this machine, or named by
 * TIRX_NCCL_LIBRARY), the clear error of a missing or foreign library, NCCL_NVLS_ENABLE, the
 * declared types against nccl.h, and every argument error of the communicator functions.
 * Criterion runs each test in its own process, so environment changes stay in the test.
 */
#include <stddef.h>

#include "../helpers.h"
#include "dist/dist.h"

#if defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
#define HAVE_NCCL_H 1
#endif
#endif

/* Skips when this machine has no NCCL to load. */
static void need_nccl(void) {
  int v = 0;
  if (tirx_nccl_version(NULL, &v) != TIRX_OK) cr_skip_test("no NCCL here: %s", tirx_last_error());
}

#ifdef HAVE_NCCL_H
Test(dist_comm, declared_types_match_nccl_h) {
  cr_assert_eq(sizeof(tirx__nccl_unique_id), sizeof(ncclUniqueId));
  cr_assert_eq(sizeof(tirx__nccl_comm_t), sizeof(ncclComm_t));
  cr_assert_eq(TIRX__NCCL_SUCCESS, ncclSuccess);
  cr_assert_eq(TIRX__NCCL_INVALID_USAGE, ncclInvalidUsage);
  cr_assert_eq(TIRX__NCCL_REMOTE_ERROR, ncclRemoteError);
  cr_assert_eq(TIRX__NCCL_IN_PROGRESS, ncclInProgress);
  cr_assert_eq(TIRX__NCCL_SUM, ncclSum);
  cr_assert_eq(TIRX__NCCL_PROD, ncclProd);
  cr_assert_eq(TIRX__NCCL_MAX, ncclMax);
  cr_assert_eq(TIRX__NCCL_MIN, ncclMin);
  cr_assert_eq(TIRX__NCCL_INT8, ncclInt8);
  cr_assert_eq(TIRX__NCCL_UINT8, ncclUint8);
  cr_assert_eq(TIRX__NCCL_INT32, ncclInt32);
  cr_assert_eq(TIRX__NCCL_UINT32, ncclUint32);
  cr_assert_eq(TIRX__NCCL_INT64, ncclInt64);
  cr_assert_eq(TIRX__NCCL_FLOAT16, ncclFloat16);
  cr_assert_eq(TIRX__NCCL_FLOAT32, ncclFloat32);
  cr_assert_eq(TIRX__NCCL_FLOAT64, ncclFloat64);
  cr_assert_eq(TIRX__NCCL_BFLOAT16, ncclBfloat16);
  /* The 2.14 config prefix lines up with today's ncclConfig_t. */
  cr_assert_eq(offsetof(tirx__nccl_config, magic), offsetof(ncclConfig_t, magic));
  cr_assert_eq(offsetof(tirx__nccl_config, version), offsetof(ncclConfig_t, version));
  cr_assert_eq(offsetof(tirx__nccl_config, blocking), offsetof(ncclConfig_t, blocking));
  cr_assert_eq(offsetof(tirx__nccl_config, pad), offsetof(ncclConfig_t, cgaClusterSize));
  cr_assert_eq(TIRX__NCCL_MIN_VERSION, NCCL_VERSION(2, 14, 0));
}
#endif

Test(dist_comm, nccl_loads_and_sets_nvls_off) {
  unsetenv("NCCL_NVLS_ENABLE");
  need_nccl();
  int v = 0;
  cr_assert_eq(tirx_nccl_version(NULL, &v), TIRX_OK);
  cr_assert_geq(v, TIRX__NCCL_MIN_VERSION);
  cr_log_info("NCCL %d", v);
  cr_assert_str_eq(getenv("NCCL_NVLS_ENABLE"), "0");
  /* A unique id needs no GPU. */
  tirx_comm_id a, b;
  cr_assert_eq(tirx_comm_id_generate(NULL, &a), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_comm_id_generate(NULL, &b), TIRX_OK, "%s", tirx_last_error());
  cr_assert_neq(memcmp(a.bytes, b.bytes, sizeof a.bytes), 0);
}

Test(dist_comm, a_host_setting_of_nvls_is_kept) {
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  need_nccl();
  cr_assert_str_eq(getenv("NCCL_NVLS_ENABLE"), "1");
}

Test(dist_comm, a_missing_library_is_a_clear_error) {
  int v = 7;
  expect_error(tirx_nccl_version("/nonexistent/libnccl.so.2", &v), TIRX_E_NOT_SUPPORTED,
               "tirx_nccl_version: cannot load NCCL (/nonexistent/libnccl.so.2): "
               "/nonexistent/libnccl.so.2: cannot open shared object file: No such file or "
               "directory; install NCCL 2.14 or newer, or name the library in TIRX_NCCL_LIBRARY");
  cr_assert_eq(v, 0);
  setenv("TIRX_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  tirx_comm_id id;
  expect_error(tirx_comm_id_generate(NULL, &id), TIRX_E_NOT_SUPPORTED,
               "tirx_comm_id_generate: cannot load NCCL (/nonexistent/libnccl.so.2): "
               "/nonexistent/libnccl.so.2: cannot open shared object file: No such file or "
               "directory; install NCCL 2.14 or newer, or name the library in TIRX_NCCL_LIBRARY");
  tirx_runtime_options o = {.compile_only = true};
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK);
  tirx_comm *c = NULL;
  expect_error(tirx_comm_create(rt, &id, 0, 1, NULL, &c), TIRX_E_NOT_SUPPORTED,
               "tirx_comm_create: cannot load NCCL (/nonexistent/libnccl.so.2): "
               "/nonexistent/libnccl.so.2: cannot open shared object file: No such file or "
               "directory; install NCCL 2.14 or newer, or name the library in TIRX_NCCL_LIBRARY");
  cr_assert_null(c);
  /* The rest of tirx works without NCCL. */
  cr_assert_str_eq(tirx_runtime_arch(rt), "sm_90a");
  tirx_runtime_destroy(rt);
}

Test(dist_comm, a_library_that_is_not_nccl) {
  expect_error(tirx_nccl_version("libm.so.6", &(int){0}), TIRX_E_NOT_SUPPORTED,
               "tirx_nccl_version: libm.so.6 has no entry point ncclGetErrorString; tirx needs "
               "NCCL 2.14 or newer");
}

Test(dist_comm, argument_errors) {
  tirx_runtime_options o = {.compile_only = true};
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK);
  tirx_comm_id id = {{0}};
  tirx_comm *c = NULL;
  expect_error(tirx_nccl_version(NULL, NULL), TIRX_E_NULL_ARG, "tirx_nccl_version: out is NULL");
  expect_error(tirx_comm_id_generate(NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_comm_id_generate: out is NULL");
  expect_error(tirx_comm_create(rt, &id, 0, 1, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_comm_create: out is NULL");
  expect_error(tirx_comm_create(NULL, &id, 0, 1, NULL, &c), TIRX_E_NULL_ARG,
               "tirx_comm_create: rt is NULL");
  expect_error(tirx_comm_create(rt, NULL, 0, 1, NULL, &c), TIRX_E_NULL_ARG,
               "tirx_comm_create: id is NULL");
  expect_error(tirx_comm_create(rt, &id, 0, 0, NULL, &c), TIRX_E_INVALID_ARG,
               "tirx_comm_create: size is 0, expected 1 to 65536");
  expect_error(tirx_comm_create(rt, &id, 4, 4, NULL, &c), TIRX_E_INVALID_ARG,
               "tirx_comm_create: rank is 4, expected 0 to 3");
  expect_error(tirx_comm_create(rt, &id, -1, 4, NULL, &c), TIRX_E_INVALID_ARG,
               "tirx_comm_create: rank is -1, expected 0 to 3");
  expect_error(tirx_comm_create(rt, &id, 0, 1, &(tirx_comm_options){.timeout_ms = -5}, &c),
               TIRX_E_INVALID_ARG,
               "tirx_comm_create: options->timeout_ms is -5, expected -1 or more");
  setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  expect_error(tirx_comm_create(rt, &id, 0, 2, NULL, &c), TIRX_E_NOT_SUPPORTED,
               "tirx_comm_create: CUDA_LAUNCH_BLOCKING=1 deadlocks NCCL with more than one rank; "
               "unset it");
  unsetenv("CUDA_LAUNCH_BLOCKING");
  expect_error(tirx_comm_wrap(rt, (void *)1, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_comm_wrap: out is NULL");
  expect_error(tirx_comm_wrap(NULL, (void *)1, NULL, &c), TIRX_E_NULL_ARG,
               "tirx_comm_wrap: rt is NULL");
  expect_error(tirx_comm_wrap(rt, NULL, NULL, &c), TIRX_E_NULL_ARG,
               "tirx_comm_wrap: nccl_comm is NULL");
  expect_error(tirx_comm_wrap(rt, (void *)1, &(tirx_comm_options){.timeout_ms = -2}, &c),
               TIRX_E_INVALID_ARG, "tirx_comm_wrap: options->timeout_ms is -2, expected -1 or more");
  expect_error(tirx_comm_abort(NULL), TIRX_E_NULL_ARG, "tirx_comm_abort: c is NULL");
  expect_error(tirx_comm_abort_all(NULL, 2), TIRX_E_NULL_ARG, "tirx_comm_abort_all: comms is NULL");
  expect_error(tirx_comm_abort_all(NULL, -1), TIRX_E_INVALID_ARG,
               "tirx_comm_abort_all: count is -1, expected >= 0");
  cr_assert_eq(tirx_comm_abort_all(NULL, 0), TIRX_OK);
  cr_assert_eq(tirx_comm_abort_all((tirx_comm *[]){NULL, NULL}, 2), TIRX_OK);
  expect_error(tirx_comm_synchronize(NULL, NULL, 0), TIRX_E_NULL_ARG,
               "tirx_comm_synchronize: c is NULL");
  expect_error(tirx_comm_health(NULL), TIRX_E_NULL_ARG, "tirx_comm_health: c is NULL");
  cr_assert_eq(tirx_comm_rank(NULL), -1);
  cr_assert_eq(tirx_comm_size(NULL), -1);
  cr_assert_null(tirx_comm_nccl(NULL));
  tirx_comm_destroy(NULL);
  cr_assert_null(c);
  tirx_runtime_destroy(rt);
}

Test(dist_comm, no_device_is_reported_after_nccl_loads) {
  need_nccl();
  tirx_runtime_options o = {.compile_only = true};
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK);
  tirx_comm_id id;
  cr_assert_eq(tirx_comm_id_generate(NULL, &id), TIRX_OK, "%s", tirx_last_error());
  tirx_comm *c = NULL;
  expect_error(tirx_comm_create(rt, &id, 0, 1, NULL, &c), TIRX_E_NO_DEVICE,
               "tirx_comm_create: no CUDA device: the runtime was created compile-only");
  expect_error(tirx_comm_wrap(rt, (void *)1, NULL, &c), TIRX_E_NO_DEVICE,
               "tirx_comm_wrap: no CUDA device: the runtime was created compile-only");
  cr_assert_null(c);
  tirx_runtime_destroy(rt);
}
