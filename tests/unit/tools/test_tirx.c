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
  int nv = tirx__nvrtc_version();
  char tail[64];
  snprintf(tail, sizeof tail, " (NVRTC %d.%d)\n", nv / 1000, nv % 1000 / 10);
  cr_assert(strncmp(out, "tirx ", 5) == 0, "%s", out);
  cr_assert(strstr(out, tail) && strlen(strstr(out, tail)) == strlen(tail), "%s", out);
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
