/* NVRTC (src/jit/nvrtc.c) and tirx_compile: every example kernel compiles for sm_90a and
 * sm_80 without a GPU, deterministically; compile errors carry the log and the offending
 * source lines; architectures are checked. */
#include <pthread.h>

#include "../helpers.h"
#include "jit/jit.h"
#include "jit/nvrtc_lib.h"
#include "demo_kernels.h"

static tirx_runtime *compile_only_runtime(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static tirx_kernel *make(int i) {
  tirx_kernel *k = example_kernels[i].make();
  cr_assert_not_null(k, "example kernel %s did not build: %s", example_kernels[i].name,
                     tirx_last_error());
  return k;
}

Test(nvrtc, compiles_every_example_kernel_for_sm_90a_and_sm_80) {
  tirx_runtime *rt = compile_only_runtime();
  static const char *const archs[] = {"sm_90a", "sm_80"};
  for (int i = 0; i < example_kernel_count; i++) {
    tirx_kernel *k = make(i);
    for (int a = 0; a < 2; a++) {
      tirx_compiled *c = NULL;
      cr_assert_eq(tirx_compile(rt, k, archs[a], &c), TIRX_OK, "%s for %s: %s",
                   example_kernels[i].name, archs[a], tirx_last_error());
      size_t size = 0;
      const unsigned char *cubin = tirx_compiled_cubin(c, &size);
      cr_assert(size > 64 && memcmp(cubin, "\177ELF", 4) == 0, "%s: not an ELF cubin",
                example_kernels[i].name);
      char entry[128], target[64];
      snprintf(entry, sizeof entry, ".entry %s(", example_kernels[i].name);
      snprintf(target, sizeof target, ".target %s", archs[a]);
      cr_assert_not_null(strstr(tirx_compiled_ptx(c), entry), "%s: no '%s' in the PTX",
                         example_kernels[i].name, entry);
      cr_assert_not_null(strstr(tirx_compiled_ptx(c), target), "%s: no '%s' in the PTX",
                         example_kernels[i].name, target);
      cr_assert_str_eq(tirx_compiled_arch(c), archs[a]);
      cr_assert_str_eq(tirx_compiled_entry(c), example_kernels[i].name);
      cr_assert_not_null(tirx_compiled_log(c));
      tirx_compiled_destroy(c);
    }
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

Test(nvrtc, default_arch_is_the_runtimes) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(
      tirx_runtime_create(&(tirx_runtime_options){.compile_only = true, .arch = "sm_80"}, &rt),
      TIRX_OK);
  tirx_kernel *k = make(0);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_str_eq(tirx_compiled_arch(c), "sm_80");
  cr_assert_not_null(strstr(tirx_compiled_ptx(c), ".target sm_80"));
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

Test(nvrtc, output_is_deterministic) {
  tirx_runtime *rt = compile_only_runtime();
  tirx_kernel *k = make(3);  /* softmax: loops and shuffles */
  tirx_kernel *k2 = make(3); /* built again from a fresh builder */
  tirx_compiled *a = NULL, *b = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &a), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_compile(rt, k2, "sm_90a", &b), TIRX_OK, "%s", tirx_last_error());
  size_t na, nb;
  const void *ca = tirx_compiled_cubin(a, &na), *cb = tirx_compiled_cubin(b, &nb);
  cr_assert_eq(na, nb);
  cr_assert(memcmp(ca, cb, na) == 0, "cubins differ");
  cr_assert_str_eq(tirx_compiled_ptx(a), tirx_compiled_ptx(b));
  tirx_compiled_destroy(a);
  tirx_compiled_destroy(b);
  tirx_kernel_release(k);
  tirx_kernel_release(k2);
  tirx_runtime_destroy(rt);
}

static const char bad_source[] = "extern \"C\" __global__ void bad(float *x) {\n"
                                 "  x[0] = 1.0f;\n"
                                 "  undefined_thing = 1;\n"
                                 "  int z = \"text\";\n"
                                 "}\n";

Test(nvrtc, compile_error_quotes_log_and_source_lines) {
  tirx__nvrtc_output o;
  tirx_clear_error();
  tirx_status st = tirx__nvrtc_compile("tirx_compile", "bad", bad_source, "sm_90a", true, &o);
  cr_assert_eq(st, TIRX_E_COMPILE, "%s", tirx_status_name(st));
  const char *msg = tirx_last_error();
  static const char prefix[] =
      "tirx_compile: NVRTC could not compile 'bad' for sm_90a (NVRTC_ERROR_COMPILATION):\n"
      "kernel.cu(3): error: identifier \"undefined_thing\" is undefined\n"
      "  > 3 |   undefined_thing = 1;\n";
  cr_assert(strncmp(msg, prefix, strlen(prefix)) == 0, "message:\n%s", msg);
  cr_assert_not_null(strstr(msg, "kernel.cu(4): error: a value of type \"const char *\""),
                     "message:\n%s", msg);
  cr_assert_not_null(strstr(msg, "  > 4 |   int z = \"text\";\n"), "message:\n%s", msg);
  cr_assert_not_null(strstr(msg, "2 errors detected"), "message:\n%s", msg);
  cr_assert_null(o.cubin);
  tirx__nvrtc_output_free(&o);
}

Test(nvrtc, compile_error_in_last_line_without_newline) {
  tirx__nvrtc_output o;
  tirx_status st = tirx__nvrtc_compile(
      "tirx_compile", "k", "extern \"C\" __global__ void k() { nope(); }", "sm_80", false, &o);
  cr_assert_eq(st, TIRX_E_COMPILE);
  cr_assert_not_null(
      strstr(tirx_last_error(), "  > 1 | extern \"C\" __global__ void k() { nope(); }\n"),
      "message:\n%s", tirx_last_error());
}

Test(nvrtc, success_keeps_the_thread_error) {
  tirx__nvrtc_output o;
  tirx__error(TIRX_E_PARSE, "earlier");
  cr_assert_eq(
      tirx__nvrtc_compile("f", "k", "extern \"C\" __global__ void k() {}", "sm_90a", false, &o),
      TIRX_OK, "%s", tirx_last_error());
  cr_assert_str_eq(tirx_last_error(), "earlier");
  cr_assert_not_null(o.cubin);
  cr_assert_null(o.ptx);
  cr_assert_not_null(o.log);
  tirx__nvrtc_output_free(&o);
}

/* --minimal (src/jit/nvrtc.c) for the sources codegen writes, a variant's #define lines before
 * them included; a kernel's own CUDA text keeps NVRTC's whole built-in header. */
Test(nvrtc, options_add_minimal_only_for_generated_sources) {
  static const char *const generated[] = {
      "/* Generated by tirx 0.1.0: kernel k. */\nextern \"C\" __global__ void k() {}\n",
      "#define TIRX_DIV16_M 1\n#define TIRX_SPEC_n 64\n/* Generated by tirx 0.1.0: kernel k. */\n"};
  static const char *const raw[] = {"extern \"C\" __global__ void k() {}\n",
                                    "#define TIRX_SPEC_n 64\nextern \"C\" __global__ void k() {}\n",
                                    "#define TIRX_SPEC_n 64", "",
                                    "// Generated by tirx\n/* Generated by tirx */\n"};
  char arch[64];
  const char *opts[TIRX__NVRTC_MAX_OPTIONS];
  for (size_t i = 0; i < sizeof generated / sizeof generated[0]; i++) {
    cr_assert_eq(tirx__nvrtc_options("sm_90a", generated[i], arch, opts), 4, "generated %zu", i);
    cr_assert_str_eq(opts[0], "--gpu-architecture=sm_90a");
    cr_assert_str_eq(opts[3], "--minimal");
  }
  for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
    cr_assert_eq(tirx__nvrtc_options("sm_90a", raw[i], arch, opts), 3, "raw %zu", i);
    cr_assert_str_eq(opts[2], "-lineinfo");
  }
}

/* What --minimal leaves out still compiles in a kernel's own CUDA text: a texture fetch. */
Test(nvrtc, raw_sources_keep_textures) {
  static const char source[] =
      "extern \"C\" __global__ void raw_tex(long long t, float *y) {\n"
      "  y[threadIdx.x] = tex1Dfetch<float>((cudaTextureObject_t)t, (int)threadIdx.x);\n"
      "}\n";
  tirx_builder *b = tirx_builder_create("raw_tex");
  tirx_param_int(b, "t", TIRX_I64);
  tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(tirx_int(b, 32)), NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_set_source(b, source);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  tirx_runtime *rt = compile_only_runtime();
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_not_null(strstr(tirx_compiled_ptx(c), "tex.1d"), "%s", tirx_compiled_ptx(c));
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

Test(nvrtc, arch_checks) {
  expect_error(
      tirx__nvrtc_check_arch("tirx_compile", "sm_9"), TIRX_E_INVALID_ARG,
      "tirx_compile: arch 'sm_9' is not of the form sm_<major><minor>[a|f] (sm_90a, sm_80)");
  expect_error(tirx__nvrtc_check_arch("tirx_compile", "compute_90"), TIRX_E_INVALID_ARG,
               "tirx_compile: arch 'compute_90' is not of the form sm_<major><minor>[a|f] "
               "(sm_90a, sm_80)");
  expect_error(tirx__nvrtc_check_arch("tirx_compile", "sm_90b"), TIRX_E_INVALID_ARG,
               "tirx_compile: arch 'sm_90b' is not of the form sm_<major><minor>[a|f] "
               "(sm_90a, sm_80)");
  expect_error(tirx__nvrtc_check_arch("tirx_compile", "sm_90a --evil"), TIRX_E_INVALID_ARG,
               "tirx_compile: arch 'sm_90a --evil' is not of the form sm_<major><minor>[a|f] "
               "(sm_90a, sm_80)");
  expect_error(tirx__nvrtc_check_arch("tirx_compile", NULL), TIRX_E_NULL_ARG,
               "tirx_compile: arch is NULL");
  cr_assert_eq(tirx__nvrtc_check_arch("f", "sm_90a"), TIRX_OK);
  cr_assert_eq(tirx__nvrtc_check_arch("f", "sm_80"), TIRX_OK);
  cr_assert_eq(tirx__nvrtc_check_arch("f", "sm_100a"), TIRX_OK);

  /* An arch this NVRTC does not know: the message names its version and range. */
  const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
  cr_assert_not_null(nv, "%s", tirx__nvrtc_lib_error());
  int n = 0;
  nv->GetNumSupportedArchs(&n);
  int archs[256];
  nv->GetSupportedArchs(archs);
  char want[256];
  snprintf(want, sizeof want,
           "tirx_compile: arch 'sm_35' is not supported by NVRTC %d.%d (sm_%d to sm_%d)",
           tirx__nvrtc_version() / 1000, tirx__nvrtc_version() % 1000 / 10, archs[0], archs[n - 1]);
  expect_error(tirx__nvrtc_check_arch("tirx_compile", "sm_35"), TIRX_E_NOT_SUPPORTED, want);
}

Test(nvrtc, public_compile_rejects_bad_arguments) {
  tirx_runtime *rt = compile_only_runtime();
  tirx_kernel *k = make(0);
  tirx_compiled *c = (tirx_compiled *)&c;
  expect_error(tirx_compile(rt, k, "sm_90a", NULL), TIRX_E_NULL_ARG, "tirx_compile: out is NULL");
  expect_error(tirx_compile(NULL, k, "sm_90a", &c), TIRX_E_NULL_ARG, "tirx_compile: rt is NULL");
  cr_assert_null(c, "out is set to NULL on failure");
  expect_error(tirx_compile(rt, NULL, "sm_90a", &c), TIRX_E_NULL_ARG,
               "tirx_compile: kernel is NULL");
  expect_error(
      tirx_compile(rt, k, "sm90", &c), TIRX_E_INVALID_ARG,
      "tirx_compile: arch 'sm90' is not of the form sm_<major><minor>[a|f] (sm_90a, sm_80)");
  cr_assert_null(c);
  /* The accessors and destroy accept NULL. */
  size_t size = 7;
  cr_assert_null(tirx_compiled_cubin(NULL, &size));
  cr_assert_eq(size, 0);
  cr_assert_null(tirx_compiled_cubin(NULL, NULL));
  cr_assert_null(tirx_compiled_ptx(NULL));
  cr_assert_null(tirx_compiled_log(NULL));
  cr_assert_null(tirx_compiled_arch(NULL));
  cr_assert_null(tirx_compiled_entry(NULL));
  tirx_compiled_destroy(NULL);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- threads ---- */

typedef struct compile_arg {
  tirx_runtime *rt;
  tirx_kernel *k;
  tirx_status status;
  char message[256];
  size_t cubin_size;
  unsigned char *cubin;
} compile_arg;

static void *compile_on_thread(void *p) {
  compile_arg *a = p;
  tirx_compiled *c = NULL;
  a->status = tirx_compile(a->rt, a->k, "sm_90a", &c);
  snprintf(a->message, sizeof a->message, "%s", tirx_last_error());
  if (a->status == TIRX_OK) {
    const void *bytes = tirx_compiled_cubin(c, &a->cubin_size);
    a->cubin = malloc(a->cubin_size);
    memcpy(a->cubin, bytes, a->cubin_size);
  }
  tirx_compiled_destroy(c);
  return NULL;
}

Test(nvrtc, compiles_on_a_thread_with_a_small_stack) {
  /* 256 KiB is far less than NVRTC needs: tirx must move the compile to a larger stack. */
  tirx_runtime *rt = compile_only_runtime();
  compile_arg a = {.rt = rt, .k = make(3)};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, &attr, compile_on_thread, &a), 0);
  pthread_join(th, NULL);
  pthread_attr_destroy(&attr);
  cr_assert_eq(a.status, TIRX_OK, "%s", a.message);
  cr_assert(a.cubin_size > 0);
  free(a.cubin);
  tirx_kernel_release(a.k);
  tirx_runtime_destroy(rt);
}

Test(nvrtc, concurrent_compiles_give_identical_cubins) {
  enum { N = 6 };
  tirx_runtime *rt = compile_only_runtime();
  tirx_kernel *k = make(1);
  compile_arg a[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    a[i] = (compile_arg){.rt = rt, .k = k};
    cr_assert_eq(pthread_create(&th[i], NULL, compile_on_thread, &a[i]), 0);
  }
  for (int i = 0; i < N; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < N; i++) {
    cr_assert_eq(a[i].status, TIRX_OK, "thread %d: %s", i, a[i].message);
    cr_assert_eq(a[i].cubin_size, a[0].cubin_size);
    cr_assert(memcmp(a[i].cubin, a[0].cubin, a[0].cubin_size) == 0, "thread %d differs", i);
  }
  for (int i = 0; i < N; i++)
    free(a[i].cubin);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}
