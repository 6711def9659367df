/* The runtime without a device (src/jit/runtime.c, launch.c, memory.c, driver.c): creation
 * without a driver, TIRX_E_NO_DEVICE from everything that needs the device, exact messages
 * for bad arguments to every public function, dumps, and the driver helpers. Deterministic on
 * GPU machines too: the driver is either never loaded or pointed at a missing file. */
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../helpers.h"
#include "jit/jit.h"
#include "demo_kernels.h"

#define MISSING_DRIVER "/nonexistent/libcuda.so.1"

/* What dlopen says about path, as the runtime will quote it. */
static const char *dlopen_error(const char *path) {
  static char text[512];
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  cr_assert_null(h, "%s unexpectedly exists", path);
  snprintf(text, sizeof text, "%s", dlerror());
  return text;
}

static tirx_runtime *no_driver_runtime(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.driver_library = MISSING_DRIVER};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static tirx_kernel *vector_add(void) {
  tirx_kernel *k = example_vector_add();
  cr_assert_not_null(k, "%s", tirx_last_error());
  return k;
}

Test(runtime, compile_only) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  cr_assert(!tirx_runtime_has_device(rt));
  cr_assert_str_eq(tirx_runtime_arch(rt), "sm_90a");
  cr_assert_str_eq(tirx_runtime_device_name(rt), "");
  cr_assert_str_eq(tirx_runtime_device_error(rt), "the runtime was created compile-only");
  cr_assert_eq(tirx_runtime_health(rt), TIRX_OK);
  tirx_kernel *k = vector_add();
  tirx_arg args[] = {tirx_arg_i64(1)};
  expect_error(tirx_launch(rt, k, args, 1, NULL), TIRX_E_NO_DEVICE,
               "tirx_launch: no CUDA device: the runtime was created compile-only");
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

Test(runtime, no_driver_gives_no_device_on_launch) {
  char want[1024];
  snprintf(want, sizeof want, "tirx_launch: no CUDA device: cannot load the CUDA driver '%s': %s",
           MISSING_DRIVER, dlopen_error(MISSING_DRIVER));
  tirx_runtime *rt = no_driver_runtime();
  cr_assert(!tirx_runtime_has_device(rt));
  cr_assert_str_eq(tirx_runtime_arch(rt), "sm_90a");
  tirx_kernel *k = vector_add();
  float *fake = (float *)(uintptr_t)0x10000;
  tirx_arg args[] = {
      tirx_arg_i64(4),
      tirx_arg_tensor(fake, TIRX_F32, 1, (int64_t[]){4}, NULL),
      tirx_arg_tensor(fake, TIRX_F32, 1, (int64_t[]){4}, NULL),
      tirx_arg_tensor(fake, TIRX_F32, 1, (int64_t[]){4}, NULL),
  };
  expect_error(tirx_launch(rt, k, args, 4, NULL), TIRX_E_NO_DEVICE, want);
  /* Compiling still works. */
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

Test(runtime, driver_library_from_the_environment) {
  cr_assert_eq(setenv("TIRX_DRIVER_LIBRARY", MISSING_DRIVER, 1), 0);
  char want[1024];
  snprintf(want, sizeof want, "cannot load the CUDA driver '%s': %s", MISSING_DRIVER,
           dlopen_error(MISSING_DRIVER));
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(NULL, &rt), TIRX_OK, "%s", tirx_last_error());
  cr_assert(!tirx_runtime_has_device(rt));
  cr_assert_str_eq(tirx_runtime_device_error(rt), want);
  tirx_runtime_destroy(rt);
  unsetenv("TIRX_DRIVER_LIBRARY");
}

Test(runtime, a_library_that_is_not_a_driver) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.driver_library = "libm.so.6"}, &rt),
               TIRX_OK, "%s", tirx_last_error());
  cr_assert(!tirx_runtime_has_device(rt));
  cr_assert_str_eq(tirx_runtime_device_error(rt),
                   "the CUDA driver 'libm.so.6' has no cuGetProcAddress_v2: a CUDA 12.0 or newer "
                   "driver is needed");
  tirx_runtime_destroy(rt);
}

Test(runtime, the_toolkit_stub_library) {
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0)
    cr_skip_test("no stub library at %s", stub);
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.driver_library = stub}, &rt), TIRX_OK,
               "%s", tirx_last_error());
  cr_assert(!tirx_runtime_has_device(rt));
  char want[512];
  snprintf(want, sizeof want,
           "'%s' is the CUDA toolkit's stub library, not a driver (CUDA_ERROR_STUB_LIBRARY)", stub);
  cr_assert_str_eq(tirx_runtime_device_error(rt), want);
  tirx_runtime_destroy(rt);
}

Test(runtime, create_rejects_bad_options) {
  tirx_runtime *rt = (tirx_runtime *)&rt;
  expect_error(tirx_runtime_create(NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_runtime_create: out is NULL");
  expect_error(tirx_runtime_create(&(tirx_runtime_options){.device = -1}, &rt), TIRX_E_INVALID_ARG,
               "tirx_runtime_create: options->device is -1, expected >= 0");
  cr_assert_null(rt);
  expect_error(tirx_runtime_create(&(tirx_runtime_options){.arch = "sm_9"}, &rt),
               TIRX_E_INVALID_ARG,
               "tirx_runtime_create: arch 'sm_9' is not of the form sm_<major><minor>[a|f] "
               "(sm_90a, sm_80)");
  expect_error(tirx_runtime_create(&(tirx_runtime_options){.arch = ""}, &rt), TIRX_E_INVALID_ARG,
               "tirx_runtime_create: arch '' is not of the form sm_<major><minor>[a|f] "
               "(sm_90a, sm_80)");
  cr_assert_null(rt);
  cr_assert_eq(
      tirx_runtime_create(&(tirx_runtime_options){.compile_only = true, .arch = "sm_80"}, &rt),
      TIRX_OK);
  cr_assert_str_eq(tirx_runtime_arch(rt), "sm_80");
  tirx_runtime_destroy(rt);
}

Test(runtime, null_runtime_accessors) {
  cr_assert(!tirx_runtime_has_device(NULL));
  cr_assert_null(tirx_runtime_arch(NULL));
  cr_assert_null(tirx_runtime_device_name(NULL));
  cr_assert_null(tirx_runtime_device_error(NULL));
  expect_error(tirx_runtime_health(NULL), TIRX_E_NULL_ARG, "tirx_runtime_health: rt is NULL");
  tirx_runtime_destroy(NULL);
}

Test(runtime, launch_rejects_bad_arguments) {
  tirx_runtime *rt = no_driver_runtime();
  tirx_kernel *k = vector_add();
  tirx_arg args[] = {tirx_arg_i64(1)};
  expect_error(tirx_launch(NULL, k, args, 1, NULL), TIRX_E_NULL_ARG, "tirx_launch: rt is NULL");
  expect_error(tirx_launch(rt, NULL, args, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_launch: kernel is NULL");
  expect_error(tirx_launch(rt, k, args, -1, NULL), TIRX_E_INVALID_ARG,
               "tirx_launch: nargs is -1, expected >= 0");
  expect_error(tirx_launch(rt, k, NULL, 2, NULL), TIRX_E_NULL_ARG,
               "tirx_launch: args is NULL but nargs is 2");
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

Test(runtime, memory_calls_reject_bad_arguments) {
  tirx_runtime *rt = no_driver_runtime();
  char host[16];
  void *p = host;
  expect_error(tirx_runtime_alloc(rt, 16, NULL), TIRX_E_NULL_ARG,
               "tirx_runtime_alloc: out is NULL");
  expect_error(tirx_runtime_alloc(NULL, 16, &p), TIRX_E_NULL_ARG, "tirx_runtime_alloc: rt is NULL");
  cr_assert_null(p, "out is set to NULL on failure");
  expect_error(tirx_runtime_alloc(rt, 0, &p), TIRX_E_INVALID_ARG,
               "tirx_runtime_alloc: bytes is 0, expected > 0");
  expect_error(tirx_runtime_free(NULL, host), TIRX_E_NULL_ARG, "tirx_runtime_free: rt is NULL");
  cr_assert_eq(tirx_runtime_free(rt, NULL), TIRX_OK);
  expect_error(tirx_runtime_copy(NULL, host, host, 4, TIRX_COPY_HOST_TO_DEVICE), TIRX_E_NULL_ARG,
               "tirx_runtime_copy: rt is NULL");
  expect_error(tirx_runtime_copy(rt, host, host, 4, (tirx_copy_kind)7), TIRX_E_INVALID_ARG,
               "tirx_runtime_copy: kind 7 is not a tirx_copy_kind");
  expect_error(tirx_runtime_copy(rt, NULL, host, 4, TIRX_COPY_HOST_TO_DEVICE), TIRX_E_NULL_ARG,
               "tirx_runtime_copy: dst is NULL");
  expect_error(tirx_runtime_copy(rt, host, NULL, 4, TIRX_COPY_DEVICE_TO_HOST), TIRX_E_NULL_ARG,
               "tirx_runtime_copy: src is NULL");
  cr_assert_eq(tirx_runtime_copy(rt, NULL, NULL, 0, TIRX_COPY_DEVICE_TO_DEVICE), TIRX_OK);
  expect_error(tirx_runtime_fill32(NULL, host, 0, 1), TIRX_E_NULL_ARG,
               "tirx_runtime_fill32: rt is NULL");
  expect_error(tirx_runtime_fill32(rt, NULL, 0, 1), TIRX_E_NULL_ARG,
               "tirx_runtime_fill32: dst is NULL");
  char want[128];
  snprintf(want, sizeof want, "tirx_runtime_fill32: dst %p is not 4-byte aligned",
           (void *)(host + 1));
  expect_error(tirx_runtime_fill32(rt, host + 1, 0, 1), TIRX_E_INVALID_ARG, want);
  cr_assert_eq(tirx_runtime_fill32(rt, NULL, 0, 0), TIRX_OK);
  expect_error(tirx_runtime_synchronize(NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_runtime_synchronize: rt is NULL");
  tirx_runtime_destroy(rt);
}

Test(runtime, memory_calls_without_a_device) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  char host[16];
  void *p;
  expect_error(tirx_runtime_alloc(rt, 16, &p), TIRX_E_NO_DEVICE,
               "tirx_runtime_alloc: no CUDA device: the runtime was created compile-only");
  expect_error(tirx_runtime_free(rt, host), TIRX_E_NO_DEVICE,
               "tirx_runtime_free: no CUDA device: the runtime was created compile-only");
  expect_error(tirx_runtime_copy(rt, host, host, 4, TIRX_COPY_DEVICE_TO_DEVICE), TIRX_E_NO_DEVICE,
               "tirx_runtime_copy: no CUDA device: the runtime was created compile-only");
  expect_error(tirx_runtime_fill32(rt, host, 0, 4), TIRX_E_NO_DEVICE,
               "tirx_runtime_fill32: no CUDA device: the runtime was created compile-only");
  expect_error(tirx_runtime_synchronize(rt, NULL), TIRX_E_NO_DEVICE,
               "tirx_runtime_synchronize: no CUDA device: the runtime was created compile-only");
  tirx_runtime_destroy(rt);
}

/* ---- dumps and logs ---- */

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = calloc((size_t)n + 1, 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return s;
}

static void check_dump(const char *dir, const tirx_kernel *k, const char *ptx) {
  uint64_t hash[2];
  tirx__kernel_hash(k, hash);
  char hex[33], path[512];
  tirx__hash_hex(hash, hex);
  static const char *const exts[] = {"ir", "cu", "ptx"};
  const char *want[] = {tirx_kernel_ir_str(k), tirx_kernel_source(k), ptx};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s-%s.%s", dir, tirx_kernel_name(k), hex, exts[i]);
    char *got = read_file(path);
    cr_assert_not_null(got, "no dump file %s", path);
    cr_assert_str_eq(got, want[i], "dump file %s differs", path);
    free(got);
    unlink(path);
  }
}

Test(runtime, dump_dir_option_writes_ir_cu_and_ptx) {
  char dir[] = "/tmp/tirx-dump-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char sub[64];
  snprintf(sub, sizeof sub, "%s/new", dir); /* created on demand */
  tirx_runtime *rt = NULL;
  cr_assert_eq(
      tirx_runtime_create(&(tirx_runtime_options){.compile_only = true, .dump_dir = sub}, &rt),
      TIRX_OK);
  tirx_kernel *k = vector_add();
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  check_dump(sub, k, tirx_compiled_ptx(c));
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  rmdir(sub);
  rmdir(dir);
}

Test(runtime, dump_dir_from_the_environment_and_log) {
  char dir[] = "/tmp/tirx-dump-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  setenv("TIRX_DUMP_DIR", dir, 1);
  setenv("TIRX_LOG", "1", 1);
  char logpath[] = "/tmp/tirx-log-XXXXXX";
  int fd = mkstemp(logpath);
  cr_assert(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  tirx_kernel *k = vector_add();
  tirx_compiled *c = NULL;
  tirx_status st = tirx_compile(rt, k, "sm_80", &c);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  cr_assert_eq(st, TIRX_OK, "%s", tirx_last_error());
  check_dump(dir, k, tirx_compiled_ptx(c));
  char *log = read_file(logpath);
  cr_assert_not_null(strstr(log, "tirx: runtime: no device, arch sm_90a: the runtime was "
                                 "created compile-only\n"),
                     "log:\n%s", log);
  cr_assert_not_null(strstr(log, "tirx: compiled vector_add for sm_80 in "), "log:\n%s", log);
  free(log);
  unlink(logpath);
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  rmdir(dir);
}

Test(runtime, no_dump_without_dump_dir) {
  unsetenv("TIRX_DUMP_DIR");
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  cr_assert_null(rt->dump_dir);
  tirx_runtime_destroy(rt);
}

/* ---- driver helpers ---- */

Test(driver, arch_names) {
  char buf[16];
  static const struct {
    int major, minor;
    const char *arch;
  } cases[] = {{9, 0, "sm_90a"},   {8, 0, "sm_80"},    {8, 6, "sm_86"},    {8, 9, "sm_89"},
               {10, 0, "sm_100a"}, {10, 3, "sm_103a"}, {12, 0, "sm_120a"}, {7, 5, "sm_75"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx__arch_for_cc(cases[i].major, cases[i].minor, buf, sizeof buf);
    cr_assert_str_eq(buf, cases[i].arch);
  }
}

Test(driver, sticky_errors) {
  cr_assert(tirx__driver_is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
  cr_assert(tirx__driver_is_sticky(CUDA_ERROR_LAUNCH_FAILED));
  cr_assert(tirx__driver_is_sticky(CUDA_ERROR_ILLEGAL_INSTRUCTION));
  cr_assert(tirx__driver_is_sticky(CUDA_ERROR_MISALIGNED_ADDRESS));
  cr_assert(tirx__driver_is_sticky(CUDA_ERROR_ASSERT));
  cr_assert(!tirx__driver_is_sticky(CUDA_SUCCESS));
  cr_assert(!tirx__driver_is_sticky(CUDA_ERROR_INVALID_VALUE));
  cr_assert(!tirx__driver_is_sticky(CUDA_ERROR_OUT_OF_MEMORY));
  cr_assert(!tirx__driver_is_sticky(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
}

Test(driver, describe_without_a_driver) {
  tirx__driver d;
  memset(&d, 0, sizeof d);
  char buf[128];
  tirx__driver_describe(&d, CUDA_ERROR_ILLEGAL_ADDRESS, buf, sizeof buf);
  cr_assert_str_eq(buf, "CUDA_ERROR_UNRECOGNIZED (700): unrecognized error code");
}

Test(driver, missing_library) {
  tirx__driver d;
  char why[512];
  cr_assert_eq(tirx__driver_load(&d, MISSING_DRIVER, why, sizeof why), TIRX_E_NO_DRIVER);
  char want[512];
  snprintf(want, sizeof want, "cannot load the CUDA driver '%s': %s", MISSING_DRIVER,
           dlopen_error(MISSING_DRIVER));
  cr_assert_str_eq(why, want);
  cr_assert_null(d.lib);
}
