/* The runtime's debugging switches (src/jit/runtime.c): TIRX_LOG level names, TIRX_CACHE_DISABLE,
 * TIRX_DUMP_FILTER and dumps written through a temporary file. Each Criterion test runs in its
 * own process, so the environment it sets dies with it. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../helpers.h"
#include <criterion/redirect.h>
#include "demo_kernels.h"
#include "jit/jit.h"

static tirx_runtime *create(const tirx_runtime_options *extra) {
  tirx_runtime_options o = extra ? *extra : (tirx_runtime_options){0};
  o.compile_only = true;
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static int level_of(const char *value) {
  setenv("TIRX_LOG", value, 1);
  tirx_runtime *rt = create(&(tirx_runtime_options){.cache_disabled = true});
  int level = rt->log_level;
  tirx_runtime_destroy(rt);
  return level;
}

Test(runtime_env, log_levels_by_number_and_name) {
  cr_assert_eq(level_of("0"), 0);
  cr_assert_eq(level_of("1"), 1);
  cr_assert_eq(level_of("2"), 2);
  cr_assert_eq(level_of("7"), 2);
  cr_assert_eq(level_of("silent"), 0);
  cr_assert_eq(level_of("off"), 0);
  cr_assert_eq(level_of("compiles"), 1);
  cr_assert_eq(level_of("INFO"), 1);
  cr_assert_eq(level_of("launches"), 2);
  cr_assert_eq(level_of("debug"), 2);
  cr_assert_eq(level_of(""), 0);
}

Test(runtime_env, an_unknown_log_level_is_reported_and_keeps_logging_off,
     .init = cr_redirect_stderr) {
  cr_assert_eq(level_of("verbose"), 0);
  fflush(stderr);
  cr_assert_stderr_eq_str("tirx: TIRX_LOG='verbose' is not a level (0 or silent, 1 or compiles, "
                          "2 or launches); logging stays off\n");
}

static void make_dir(char *buf, size_t len) {
  snprintf(buf, len, "/tmp/tirx-env-XXXXXX");
  cr_assert_not_null(mkdtemp(buf), "mkdtemp: %s", strerror(errno));
}

/* The names in dir, sorted, joined with spaces; files removed when rm. */
static void list_dir(const char *dir, char *out, size_t cap, bool rm) {
  char names[32][256];
  int n = 0;
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  struct dirent *de;
  while ((de = readdir(d)) != NULL && n < 32)
    if (de->d_name[0] != '.')
      snprintf(names[n++], sizeof names[0], "%s", de->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", i ? " " : "", names[i]);
    if (rm) {
      char p[600];
      snprintf(p, sizeof p, "%.300s/%.255s", dir, names[i]);
      unlink(p);
    }
  }
}

Test(runtime_env, cache_disable_switch_turns_the_disk_cache_off) {
  char dir[64];
  make_dir(dir, sizeof dir);
  tirx_runtime *rt = create(&(tirx_runtime_options){.cache_dir = dir});
  cr_assert_str_eq(tirx_runtime_cache_dir(rt), dir);
  tirx_runtime_destroy(rt);
  static const char *const off[] = {"0", "no", "false", "off", ""};
  for (int i = 0; i < 5; i++) {
    setenv("TIRX_CACHE_DISABLE", off[i], 1);
    rt = create(&(tirx_runtime_options){.cache_dir = dir});
    cr_assert_str_eq(tirx_runtime_cache_dir(rt), dir, "TIRX_CACHE_DISABLE='%s'", off[i]);
    tirx_runtime_destroy(rt);
  }
  setenv("TIRX_CACHE_DISABLE", "1", 1);
  rt = create(&(tirx_runtime_options){.cache_dir = dir});
  cr_assert_str_eq(tirx_runtime_cache_dir(rt), "");
  tirx_runtime_destroy(rt);
  char names[2048];
  list_dir(dir, names, sizeof names, true);
  rmdir(dir);
}

Test(runtime_env, dump_filter_dumps_only_matching_kernels_and_leaves_no_temp_files) {
  char dir[64];
  make_dir(dir, sizeof dir);
  setenv("TIRX_DUMP_FILTER", "saxp", 1);
  tirx_runtime *rt = create(&(tirx_runtime_options){.dump_dir = dir, .cache_disabled = true});
  tirx_kernel *add = example_vector_add(), *saxpy = example_saxpy();
  cr_assert(add && saxpy);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, add, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  tirx_compiled_destroy(c);
  cr_assert_eq(tirx_compile(rt, saxpy, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  tirx_compiled_destroy(c);
  uint64_t h[2];
  tirx__kernel_hash(saxpy, h);
  char hex[33], want[512], names[2048];
  tirx__hash_hex(h, hex);
  snprintf(want, sizeof want, "%s-%s.cu %s-%s.ir %s-%s.ptx", tirx_kernel_name(saxpy), hex,
           tirx_kernel_name(saxpy), hex, tirx_kernel_name(saxpy), hex);
  list_dir(dir, names, sizeof names, true);
  cr_assert_str_eq(names, want);
  tirx_kernel_release(add);
  tirx_kernel_release(saxpy);
  tirx_runtime_destroy(rt);
  rmdir(dir);
}

/* x[i] = -x[i] for i < n, n specialised on its value. */
static tirx_kernel *negate_kernel(void) {
  tirx_builder *b = tirx_builder_create("env_negate");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_set_policy(b, n, TIRX_SPECIALIZE_VALUE);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 32)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 32)),
                                           tirx_thread_idx(b, 0)));
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_store(b, x, TIRX_EXPRS(i), tirx_neg(b, tirx_load(b, x, TIRX_EXPRS(i))));
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "no file %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = calloc((size_t)n + 1, 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return s;
}

Test(runtime_env, each_compiled_variant_dumps_its_own_source_under_its_arch_and_key) {
  char dir[64];
  make_dir(dir, sizeof dir);
  tirx_runtime *rt = create(&(tirx_runtime_options){.dump_dir = dir, .cache_disabled = true});
  tirx_kernel *k = negate_kernel();
  char want[4096] = "";
  const int64_t ns[2] = {40, 41};
  char keys[2][33];
  for (int v = 0; v < 2; v++) {
    int64_t shape[1] = {ns[v]};
    tirx_arg a[1] = {tirx_arg_tensor((void *)(uintptr_t)0x10000, TIRX_F32, 1, shape, NULL)};
    tirx_future *f = NULL;
    cr_assert_eq(tirx_prepare_async(rt, k, a, 1, &f), TIRX_OK, "%s", tirx_last_error());
    cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK, "%s", tirx_last_error());
    tirx_future_release(f);
    tirx__cache_key key;
    cr_assert_eq(tirx__variant_cache_key(rt, k, 1, &ns[v], &key), TIRX_OK);
    tirx__cache_key_hex(&key, keys[v]);
  }
  /* Sorted names: the two keys in order. */
  int lo = strcmp(keys[0], keys[1]) < 0 ? 0 : 1;
  for (int o = 0; o < 2; o++) {
    const char *hex = keys[o == 0 ? lo : 1 - lo];
    size_t len = strlen(want);
    snprintf(want + len, sizeof want - len, "%senv_negate.sm_90a-%s.cu env_negate.sm_90a-%s.ir "
             "env_negate.sm_90a-%s.ptx", o ? " " : "", hex, hex, hex);
  }
  for (int v = 0; v < 2; v++) {
    char path[256], *src = NULL;
    snprintf(path, sizeof path, "%s/env_negate.sm_90a-%s.cu", dir, keys[v]);
    char *got = slurp(path);
    cr_assert_eq(tirx__kernel_variant_source(k, 1, &ns[v], &src), TIRX_OK);
    cr_assert_str_eq(got, src, "%s is not the source of variant n = %lld", path,
                     (long long)ns[v]);
    free(got);
    free(src);
  }
  char names[4096];
  list_dir(dir, names, sizeof names, true);
  cr_assert_str_eq(names, want);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  rmdir(dir);
}
