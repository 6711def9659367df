/* NVRTC through dlopen (src/jit/nvrtc_lib.c): the candidates, the override, the reasons a load
 * fails, and a process without NVRTC: every compile says why, nothing crashes. Each Criterion
 * test runs in its own process, so the process-wide NVRTC (loaded once) and the environment
 * a test sets die with it. */
#include <stdlib.h>
#include <string.h>

#include "../helpers.h"
#include "demo_kernels.h"
#include "jit/jit.h"
#include "jit/nvrtc_lib.h"

Test(nvrtc_lib, the_default_search_finds_this_toolkits_nvrtc) {
  tirx__nvrtc_lib nv = {0};
  char why[TIRX__NVRTC_WHY_MAX] = {0};
  cr_assert_eq(tirx__nvrtc_lib_load("", &nv, why, sizeof why), 0, "%s", why);
  cr_assert_str_eq(why, "");
  cr_assert_geq(nv.version, 12000);
  cr_assert(strstr(nv.path, "libnvrtc.so") != NULL, "%s", nv.path);
  int major = 0, minor = 0;
  cr_assert_eq(nv.Version(&major, &minor), NVRTC_SUCCESS);
  cr_assert_eq(nv.version, major * 1000 + minor * 10);
  /* The process's table is the same library, and the cache key's version is read through it. */
  const tirx__nvrtc_lib *p = tirx__nvrtc_lib_get();
  cr_assert_not_null(p, "%s", tirx__nvrtc_lib_error());
  cr_assert_eq(p->version, nv.version);
  cr_assert_eq(tirx__nvrtc_version(), nv.version);
  cr_assert_str_eq(tirx__nvrtc_lib_error(), "");
}

Test(nvrtc_lib, an_override_is_the_only_file_tried) {
  tirx__nvrtc_lib nv = {0};
  char why[TIRX__NVRTC_WHY_MAX] = {0};
  cr_assert_eq(tirx__nvrtc_lib_load("/nonexistent/libnvrtc.so.13", &nv, why, sizeof why), -1);
  cr_assert_str_eq(why, "cannot load NVRTC; tried TIRX_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13 "
                        "(/nonexistent/libnvrtc.so.13: cannot open shared object file: No such "
                        "file or directory); the variable names the only file tried: fix or "
                        "unset it");
  cr_assert_null(nv.handle);
  cr_assert_null(nv.CreateProgram);
  /* NULL reads the environment. */
  setenv("TIRX_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.12", 1);
  cr_assert_eq(tirx__nvrtc_lib_load(NULL, &nv, why, sizeof why), -1);
  cr_assert(strstr(why, "tried TIRX_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.12 (") != NULL, "%s",
            why);
}

Test(nvrtc_lib, a_library_without_the_entry_points_is_refused) {
  tirx__nvrtc_lib nv = {0};
  char why[TIRX__NVRTC_WHY_MAX] = {0};
  cr_assert_eq(tirx__nvrtc_lib_load("libm.so.6", &nv, why, sizeof why), -1);
  cr_assert_str_eq(why, "cannot load NVRTC; tried TIRX_NVRTC_LIBRARY=libm.so.6 (it has no "
                        "nvrtcVersion); the variable names the only file tried: fix or unset it");
  cr_assert_null(nv.handle);
}

Test(nvrtc_lib, a_short_buffer_is_truncated_not_overrun) {
  tirx__nvrtc_lib nv = {0};
  char why[24];
  memset(why, 'x', sizeof why);
  cr_assert_eq(tirx__nvrtc_lib_load("/nonexistent/libnvrtc.so", &nv, why, sizeof why), -1);
  cr_assert_eq(strlen(why), sizeof why - 1);
  cr_assert_eq(tirx__nvrtc_lib_load("/nonexistent/libnvrtc.so", &nv, NULL, 0), -1);
}

/* A process whose NVRTC cannot be loaded: the runtime is created (an arch is checked for its
 * form only), every compile fails with TIRX_E_NO_NVRTC naming the function and what was tried,
 * and the raw call (the compile worker's) reports the stage instead of calling through NULL. */
Test(nvrtc_lib, without_nvrtc_every_compile_says_why) {
  setenv("TIRX_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13", 1);
  static const char tried[] =
      "cannot load NVRTC; tried TIRX_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13 "
      "(/nonexistent/libnvrtc.so.13: cannot open shared object file: No such file or "
      "directory); the variable names the only file tried: fix or unset it";
  char want[1024];

  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .arch = "sm_90a"};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  cr_assert_null(tirx__nvrtc_lib_get());
  cr_assert_str_eq(tirx__nvrtc_lib_error(), tried);
  cr_assert_eq(tirx__nvrtc_version(), 0);
  tirx_runtime *bad = NULL;
  expect_error(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true, .arch = "sm9"},
                                   &bad),
               TIRX_E_INVALID_ARG,
               "tirx_runtime_create: arch 'sm9' is not of the form sm_<major><minor>[a|f] "
               "(sm_90a, sm_80)");
  cr_assert_null(bad);

  tirx_kernel *k = example_kernels[0].make();
  cr_assert_not_null(k, "%s", tirx_last_error());
  tirx_compiled *c = NULL;
  snprintf(want, sizeof want, "tirx_compile: %s", tried);
  for (int i = 0; i < 2; i++) { /* loaded once: the second call gives the same answer */
    expect_error(tirx_compile(rt, k, NULL, &c), TIRX_E_NO_NVRTC, want);
    cr_assert_null(c);
  }
  tirx__nvrtc_output out = {0};
  snprintf(want, sizeof want, "tirx_prepare: %s", tried);
  expect_error(tirx__nvrtc_compile("tirx_prepare", "k", "extern \"C\" __global__ void k() {}",
                                   "sm_90a", false, &out),
               TIRX_E_NO_NVRTC, want);
  cr_assert_null(out.cubin);

  tirx__nvrtc_raw raw = {0};
  const char *opts[1] = {"--gpu-architecture=sm_90a"};
  tirx__nvrtc_raw_compile("extern \"C\" __global__ void k() {}", 1, opts, false, &raw);
  cr_assert_eq(raw.stage, TIRX__RAW_NO_NVRTC);
  cr_assert_str_eq(raw.log, tried);
  cr_assert_null(raw.cubin);
  snprintf(want, sizeof want, "tirx_launch: the compile of 'k' found no NVRTC: %s", tried);
  expect_error(tirx__nvrtc_finish("tirx_launch", "k", "", "sm_90a", false, &raw, 0, &out),
               TIRX_E_NO_NVRTC, want);
  cr_assert_null(raw.log); /* taken over and freed */

  cr_assert_str_eq(tirx_status_name(TIRX_E_NO_NVRTC), "TIRX_E_NO_NVRTC");
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}
