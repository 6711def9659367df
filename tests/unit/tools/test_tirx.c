/* The tirx command line (tools/tirx.c), run as a program: --version, and cache commands that
 * never create a directory for a mistyped --dir. Skips when the tool is not built. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helpers.h"
#include "demo_kernels.h"
#include "jit/jit.h"
#include "jit/nvrtc_lib.h"

/* build/tools/tirx: $TIRX_TOOL, else beside this binary's build directory. */
static void tool(char *buf, size_t cap) {
  const char *env = getenv("TIRX_TOOL");
  if (env && *env) {
    snprintf(buf, cap, "%s", env);
  } else {
    char self[400];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(n, 0);
    self[n] = 0;
    char *slash = strrchr(self, '/'); /* build/tests/unit/test_unit */
    cr_assert_not_null(slash);
    *slash = 0;
    snprintf(buf, cap, "%s/../../tools/tirx", self);
  }
  if (access(buf, X_OK) != 0)
    cr_skip_test("the tirx tool is not built (set TIRX_TOOL)");
}

/* Runs the tool with args; its stdout and stderr together go into out (malloc'ed). */
static int run(const char *args, char **out) {
  char t[512], path[64], cmd[2048];
  tool(t, sizeof t);
  snprintf(path, sizeof path, "/tmp/tirx-tool-XXXXXX");
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>&1", t, args, path);
  int st = system(cmd);
  cr_assert(WIFEXITED(st));
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  size_t len = 0;
  *out = NULL;
  FILE *m = open_memstream(out, &len);
  int c;
  while ((c = fgetc(f)) != EOF)
    fputc(c, m);
  fclose(m);
  fclose(f);
  unlink(path);
  return WEXITSTATUS(st);
}

Test(tool, version) {
  char *out = NULL;
  cr_assert_eq(run("--version", &out), 0, "%s", out);
  const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
  cr_assert_not_null(nv, "%s", tirx__nvrtc_lib_error());
  char tail[512];
  snprintf(tail, sizeof tail, " (NVRTC %d.%d, %s)\n", nv->version / 1000, nv->version % 1000 / 10,
           nv->path);
  cr_assert(strncmp(out, "tirx ", 5) == 0, "%s", out);
  cr_assert(strstr(out, tail) && strlen(strstr(out, tail)) == strlen(tail), "%s", out);
  free(out);
}

Test(tool, version_without_nvrtc_says_why) {
  char *out = NULL;
  setenv("TIRX_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
  cr_assert_eq(run("--version", &out), 0, "%s", out);
  cr_assert(strncmp(out, "tirx ", 5) == 0, "%s", out);
  cr_assert(strstr(out, " (no NVRTC: cannot load NVRTC; tried "
                        "TIRX_NVRTC_LIBRARY=/nonexistent/libnvrtc.so (/nonexistent/libnvrtc.so: "
                        "cannot open shared object file: No such file or directory); the "
                        "variable names the only file tried: fix or unset it)\n") != NULL,
            "%s", out);
  free(out);
}

Test(tool, cache_commands_never_create_a_mistyped_directory) {
  char base[] = "/tmp/tirx-tool-dir-XXXXXX";
  cr_assert_not_null(mkdtemp(base));
  static const char *const subs[] = {"ls", "stats", "verify", "clear"};
  for (int i = 0; i < 4; i++) {
    char args[512], want[512], *out = NULL;
    snprintf(args, sizeof args, "cache %s --dir %s/typo/deep/path", subs[i], base);
    cr_assert_eq(run(args, &out), 1, "%s: %s", subs[i], out);
    snprintf(want, sizeof want, "tirx cache %s: no cache directory at '%s/typo/deep/path': %s\n",
             subs[i], base, strerror(ENOENT));
    cr_assert_str_eq(out, want);
    free(out);
    char typo[512];
    snprintf(typo, sizeof typo, "%s/typo", base);
    struct stat sb;
    cr_assert_neq(stat(typo, &sb), 0, "cache %s created %s", subs[i], typo);
  }
  /* A file is not a cache directory. */
  char file[512], args[600], want[700], *out = NULL;
  snprintf(file, sizeof file, "%s/file", base);
  FILE *f = fopen(file, "w");
  cr_assert_not_null(f);
  fclose(f);
  snprintf(args, sizeof args, "cache ls --dir %s", file);
  cr_assert_eq(run(args, &out), 1, "%s", out);
  snprintf(want, sizeof want, "tirx cache ls: '%s' is not a directory\n", file);
  cr_assert_str_eq(out, want);
  free(out);
  unlink(file);
  /* An existing, empty one lists nothing. */
  chmod(base, 0700);
  snprintf(args, sizeof args, "cache ls --dir %s", base);
  cr_assert_eq(run(args, &out), 0, "%s", out);
  cr_assert_str_eq(out, "");
  free(out);
  rmdir(base);
}

Test(tool, cache_ls_names_each_entry_kernel) {
  char dir[] = "/tmp/tirx-tool-ls-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true, .cache_dir = dir,
                                                           .cache_no_fsync = true},
                                   &rt),
               TIRX_OK, "%s", tirx_last_error());
  tirx_kernel *k = example_vector_add();
  cr_assert_not_null(k);
  int64_t shape[1] = {100};
  void *p = (void *)(uintptr_t)0x10000;
  tirx_arg args[4] = {tirx_arg_i64(100), tirx_arg_tensor(p, TIRX_F32, 1, shape, NULL),
                      tirx_arg_tensor(p, TIRX_F32, 1, shape, NULL),
                      tirx_arg_tensor(p, TIRX_F32, 1, shape, NULL)};
  const tirx_arg *lists[1] = {args};
  int nargs[1] = {4};
  cr_assert_eq(tirx_runtime_warmup(rt, k, lists, nargs, 1), TIRX_OK, "%s", tirx_last_error());
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  char cmd[256], *out = NULL;
  snprintf(cmd, sizeof cmd, "cache ls --dir %s", dir);
  cr_assert_eq(run(cmd, &out), 0, "%s", out);
  size_t n = strlen(out);
  cr_assert(n > 13 && strcmp(out + n - 13, "  vector_add\n") == 0, "%s", out);
  cr_assert_eq(strchr(out, '\n'), out + n - 1, "one entry expected: %s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "cache clear --dir %s", dir);
  cr_assert_eq(run(cmd, &out), 0, "%s", out);
  free(out);
  rmdir(dir);
}

/* Nothing the tool prints names an internal (tirx__) function: the output of every failing
 * command of a sample, and of the working ones over a damaged cache. */
Test(tool, output_names_no_internal_function) {
  char base[] = "/tmp/tirx-tool-names-XXXXXX";
  cr_assert_not_null(mkdtemp(base));
  chmod(base, 0700);
  char file[512], bundle[512], cache[512];
  snprintf(file, sizeof file, "%s/file", base);
  snprintf(bundle, sizeof bundle, "%s/bundle", base);
  snprintf(cache, sizeof cache, "%s/cache", base);
  FILE *f = fopen(file, "w");
  cr_assert_not_null(f);
  fputs("not a bundle, not a cache", f);
  fclose(f);
  /* A cache with one entry, then damaged. */
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true,
                                                           .cache_dir = cache,
                                                           .cache_no_fsync = true},
                                   &rt),
               TIRX_OK, "%s", tirx_last_error());
  tirx_kernel *k = example_vector_add();
  int64_t shape[1] = {100};
  void *p = (void *)(uintptr_t)0x10000;
  tirx_arg args[4] = {tirx_arg_i64(100), tirx_arg_tensor(p, TIRX_F32, 1, shape, NULL),
                      tirx_arg_tensor(p, TIRX_F32, 1, shape, NULL),
                      tirx_arg_tensor(p, TIRX_F32, 1, shape, NULL)};
  const tirx_arg *lists[1] = {args};
  cr_assert_eq(tirx_runtime_warmup(rt, k, lists, (int[]){4}, 1), TIRX_OK, "%s",
               tirx_last_error());
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  char cmd[1200];
  snprintf(cmd, sizeof cmd,
           "for e in '%s'/*; do [ -f \"$e\" ] && printf x | dd of=\"$e\" bs=1 seek=60 conv=notrunc "
           "2>/dev/null; done", cache);
  cr_assert_eq(system(cmd), 0);

  struct {
    const char *fmt; /* one %s: the file, bundle or cache path */
    const char *path;
    int status;      /* the tool's exit status */
  } cases[] = {
      {"cache ls --dir %s/missing", base, 1},
      {"cache stats --dir %s", file, 1},
      {"cache verify --dir %s", file, 1},
      {"cache clear --dir %s", file, 1},
      {"cache import %s --dir %s", file, 1},
      {"cache export %s/none/bundle", base, 1},
      {"cache ls --dir %s", cache, 0},
      {"cache verify --dir %s", cache, 1}, /* finds and removes the damaged entry */
      {"cache nope", "", 2},
      {"dump %s/missing", base, 1},
      {"dump --example nope", "", 2},
      {"warmup -e 'gemmm bf16'%s", "", 2},
      {"warmup --dir %s --in-process -e 'gemm f32 m=1 n=2 k=3'", cache, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char a[1200], *out = NULL;
    snprintf(a, sizeof a, cases[i].fmt, cases[i].path, cache);
    int st = run(a, &out);
    cr_assert(out && out[0], "tirx %s printed nothing", a);
    cr_assert_null(strstr(out, "tirx__"), "tirx %s names an internal function:\n%s", a, out);
    cr_assert_eq(st, cases[i].status, "tirx %s: exit %d, expected %d:\n%s", a, st,
                 cases[i].status, out);
    free(out);
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  cr_assert_eq(system(cmd), 0);
}

/* ---- tirx warmup ---- */

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

Test(tool, warmup_compiles_ops_into_the_cache_and_a_second_run_compiles_nothing,
     .timeout = 300) {
  char dir[] = "/tmp/tirx-tool-warm-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char shapes[300];
  snprintf(shapes, sizeof shapes, "%s.shapes", dir);
  FILE *f = fopen(shapes, "w");
  cr_assert_not_null(f);
  fputs("# the shapes of a small model\n"
        "rmsnorm bf16 rows=1,16 w=4096   # two shapes\n"
        "\n"
        "silu_mul f16 rows=8 w=1024\n",
        f);
  fclose(f);
  char args[800], want[1400], *out = NULL;
  snprintf(args, sizeof args,
           "warmup --dir %s --progress lines %s -e 'gemm bf16 m=128 n=256 k=512'", dir, shapes);
  cr_assert_eq(run(args, &out), 0, "%s", out);
  snprintf(want, sizeof want,
           "[1/4] rmsnorm bf16 rows=1 w=4096: ok (1 kernel)\n"
           "[2/4] rmsnorm bf16 rows=16 w=4096: ok (1 kernel)\n"
           "[3/4] silu_mul f16 rows=8 w=1024: ok (1 kernel)\n"
           "[4/4] gemm bf16 m=128 n=256 k=512: ok (2 kernels)\n"
           "tirx warmup: 4 shapes, 5 kernel launches prepared: 5 compiled (5 in compile "
           "workers), 0 from the disk cache, 0 shapes failed; cache %s, arch sm_90a\n",
           dir);
  cr_assert_str_eq(out, want);
  free(out);
  /* Five entries, named by their kernels. */
  char cmd[400];
  snprintf(cmd, sizeof cmd, "cache ls --dir %s", dir);
  cr_assert_eq(run(cmd, &out), 0, "%s", out);
  cr_assert_eq(count_lines(out), 5, "%s", out);
  cr_assert(strstr(out, "  rmsnorm\n") && strstr(out, "  silu_mul\n") &&
                strstr(out, "  gemm_reduce_bf16\n") && strstr(out, "  gemm_bf16_"),
            "%s", out);
  free(out);
  /* Again: everything comes from the disk. */
  cr_assert_eq(run(args, &out), 0, "%s", out);
  snprintf(want, sizeof want,
           "tirx warmup: 4 shapes, 5 kernel launches prepared: 0 compiled (0 in compile "
           "workers), 5 from the disk cache, 0 shapes failed; cache %s, arch sm_90a\n",
           dir);
  cr_assert_not_null(strstr(out, want), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "cache clear --dir %s", dir);
  cr_assert_eq(run(cmd, &out), 0, "%s", out);
  free(out);
  unlink(shapes);
  rmdir(dir);
}

Test(tool, warmup_draws_a_bar_and_reports_a_failed_shape) {
  char dir[] = "/tmp/tirx-tool-bar-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char args[600], *out = NULL;
  snprintf(args, sizeof args,
           "warmup --dir %s --progress bar --in-process -e 'softmax f32 rows=4 w=128' "
           "-e 'gemm f32 m=1 n=2 k=3'",
           dir);
  cr_assert_eq(run(args, &out), 1, "%s", out);
  cr_assert_not_null(strstr(out, "\r[..............................] 0/2 \033[K"), "%s", out);
  cr_assert_not_null(strstr(out, "\r[###############...............] 1/2 softmax f32 rows=4 "
                                 "w=128\033[K"),
                     "%s", out);
  cr_assert_not_null(strstr(out, "\r\033[K[2/2] gemm f32 m=1 n=2 k=3: FAILED: tirx_op_gemm: a "
                                 "has dtype f32, expected f16 or bf16\n"),
                     "%s", out);
  cr_assert_not_null(strstr(out, "\r[##############################] 2/2 gemm f32 m=1 n=2 "
                                 "k=3\033[K\n"),
                     "%s", out);
  cr_assert_not_null(strstr(out, ": 1 compiled (0 in compile workers), 0 from the disk cache, "
                                 "1 shape failed;"),
                     "%s", out);
  free(out);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "cache clear --dir %s", dir);
  cr_assert_eq(run(cmd, &out), 0, "%s", out);
  free(out);
  rmdir(dir);
}

Test(tool, warmup_refuses_bad_input_with_the_line_and_the_reason) {
  char dir[] = "/tmp/tirx-tool-bad-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  static const struct {
    const char *args;
    int rc;
    const char *out;
  } cases[] = {
      {"", 2, "tirx warmup: no shapes given (a FILE, - for stdin, or -e LINE)\n"},
      {"-e 'gemmm bf16'", 2,
       "tirx warmup: -e:1: unknown op 'gemmm' (expected gemm, rmsnorm, layernorm, "
       "add_rmsnorm, softmax, silu_mul, row_sum, row_max, attention or rope)\n"},
      {"-e 'attention bf16 b=1 sq=1 sk=1 h=1 hkv=1 d=64 causal=maybe'", 2,
       "tirx warmup: -e:1: causal 'maybe' is not no or yes\n"},
      {"-e 'rope bf16 t=1 h=1 d=64'", 2, "tirx warmup: -e:1: missing key 'hkv'\n"},
      {"-e 'gemm'", 2, "tirx warmup: -e:1: gemm has no dtype (f32, f16 or bf16)\n"},
      {"-e 'gemm i8 m=1'", 2,
       "tirx warmup: -e:1: unknown dtype 'i8' (expected f32, f16 or bf16)\n"},
      {"-e 'gemm bf16 m=1 n=2'", 2, "tirx warmup: -e:1: missing key 'k'\n"},
      {"-e 'softmax f32 rows=1 w=4' -e 'rmsnorm bf16 rows=0 w=4'", 2,
       "tirx warmup: -e:2: '0' is not a list of integers from 1 to 2^31 - 1 (at most 64)\n"},
      {"-e 'rmsnorm bf16 rows=1, w=4'", 2,
       "tirx warmup: -e:1: '1,' is not a list of integers from 1 to 2^31 - 1 (at most 64)\n"},
      {"-e 'rmsnorm bf16 rows=1 rows=2 w=4'", 2, "tirx warmup: -e:1: key 'rows' given twice\n"},
      {"-e 'rmsnorm bf16 cols=1'", 2, "tirx warmup: -e:1: unknown key 'cols' for this op\n"},
      {"-e 'rmsnorm bf16 rows'", 2, "tirx warmup: -e:1: 'rows' is not KEY=VALUE\n"},
      {"-e 'gemm bf16 m=1 n=1 k=1 epilogue=relu'", 2,
       "tirx warmup: -e:1: epilogue 'relu' is not none, bias, bias_silu or bias_gelu\n"},
      {"--workers 0 -e 'softmax f32 rows=1 w=4'", 2,
       "tirx warmup: --workers '0' is not a count from 1 to 64\n"},
      {"--progress fancy -e 'softmax f32 rows=1 w=4'", 2,
       "tirx warmup: --progress 'fancy' is not bar or lines\n"},
      {"--bogus", 2, "tirx warmup: unknown or incomplete option '--bogus'\n"},
      {"-e", 2, "tirx warmup: unknown or incomplete option '-e'\n"},
      {"--arch x86 -e 'softmax f32 rows=1 w=4'", 2,
       "tirx warmup: tirx_runtime_create: arch 'x86' is not of the form "
       "sm_<major><minor>[a|f] (sm_90a, sm_80)\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char args[600], *out = NULL;
    snprintf(args, sizeof args, "warmup --dir %s %s", dir, cases[i].args);
    cr_assert_eq(run(args, &out), cases[i].rc, "%s: %s", cases[i].args, out);
    cr_assert_str_eq(out, cases[i].out, "%s", cases[i].args);
    free(out);
  }
  char args[600], want[600], *out = NULL;
  snprintf(args, sizeof args, "warmup --dir %s %s/no-such-file", dir, dir);
  cr_assert_eq(run(args, &out), 1, "%s", out);
  snprintf(want, sizeof want, "tirx warmup: cannot read %s/no-such-file: %s\n", dir,
           strerror(ENOENT));
  cr_assert_str_eq(out, want);
  free(out);
  rmdir(dir);
}

Test(tool, warmup_covers_attention_and_rope) {
  char dir[] = "/tmp/tirx-tool-attn-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char args[600], *out = NULL;
  snprintf(args, sizeof args,
           "warmup --dir %s --progress lines "
           "-e 'attention bf16 b=1 sq=128 sk=128 h=8 hkv=2 d=128 causal=yes' "
           "-e 'rope f16 t=16 h=32 hkv=8 d=128 max_pos=2048'",
           dir);
  cr_assert_eq(run(args, &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "[1/2] attention bf16 b=1 sq=128 sk=128 h=8 hkv=2 d=128 "
                                 "causal=yes: ok (1 kernel)\n"
                                 "[2/2] rope f16 t=16 h=32 hkv=8 d=128 max_pos=2048: ok "
                                 "(1 kernel)\n"),
                     "%s", out);
  cr_assert_not_null(strstr(out, ": 2 compiled ("), "%s", out);
  free(out);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "cache clear --dir %s", dir);
  cr_assert_eq(run(cmd, &out), 0, "%s", out);
  free(out);
  rmdir(dir);
}
