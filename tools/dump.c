/*
 * tirx dump: prints, for each built kernel, a header line, its dispatch report ("no tile
 * primitives" for a kernel without any) and its generated CUDA; --ir and --ptx add those,
 * --report-only leaves the CUDA out.
 *
 *   tirx dump DIR [NAME]    the kernels a runtime dumped into DIR (TIRX_DUMP_DIR): the files
 *                           <entry>-<hash>.{dispatch,cu,ir,ptx}, in file-name order; NAME
 *                           (a glob, or a full <entry>-<hash>) keeps the matching entries
 *   tirx dump --example E   builds library row kernel or demo kernel E in-process (no GPU needed; --ptx compiles
 *                           it with NVRTC)
 *
 * Only regular files are read (symbolic links and the rest are skipped with a warning), and
 * at most TIRX_DUMP_MAX_BYTES (or --max-bytes) of each is printed.
 */
#include "dump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "demo_kernels.h"
#include "tirx.h"

const char tirx_dump_usage[] =
    "  dump DIR [NAME] [--ir] [--ptx] [--report-only]\n"
    "                           each kernel dumped into DIR (TIRX_DUMP_DIR): a header, the\n"
    "                           dispatch report and the generated CUDA, in file-name order;\n"
    "                           NAME (a glob, or <entry>-<hash>) keeps the matching kernels.\n"
    "                           --ir, --ptx add those; --report-only leaves the CUDA out;\n"
    "                           --max-bytes N prints at most N bytes of a file (64 MiB)\n"
    "  dump --example E [--dtype T] [--width W] [--scalar] [--ir] [--ptx] [--report-only]\n"
    "                           builds example kernel E in-process (no GPU; --ptx compiles it\n"
    "                           with NVRTC): the library's row kernels (rmsnorm, layernorm,\n"
    "                           softmax, ...; dtype T, default bf16; row width W, default\n"
    "                           8192; --scalar forces the scalar families) and the kernels of\n"
    "                           tests/support/demo_kernels.h as kernels.NAME (vector_add, ...\n"
    "                           also without the prefix where no row kernel has the name).\n"
    "                           --example list prints the names\n";

enum { EXT_DISPATCH, EXT_CU, EXT_IR, EXT_PTX, EXT_COUNT };
static const char *const EXTS[EXT_COUNT] = {"dispatch", "cu", "ir", "ptx"};

typedef struct opts {
  bool ir, ptx, report_only, scalar;
  const char *dir, *name, *example, *dtype_arg, *width_arg;
  size_t max_bytes;
} opts;

static int dump_usage(FILE *err, const char *msg, const char *arg) {
  fprintf(err, "tirx dump: ");
  fprintf(err, msg, arg);
  fprintf(err, "\n\nusage:\n%s", tirx_dump_usage);
  return 2;
}

/* ---- printing ---- */

static void print_text(FILE *out, const char *text) {
  size_t n = text ? strlen(text) : 0;
  if (n)
    fwrite(text, 1, n, out);
  if (!n || text[n - 1] != '\n')
    fputc('\n', out);
}

static void print_report(FILE *out, const char *report) {
  fprintf(out, "--- dispatch report\n");
  print_text(out, report && *report ? report : "no tile primitives");
}

/* Copies at most max bytes of the regular file name (in directory dfd) to out. A file that is
 * not regular (a symbolic link, a FIFO, ...) is refused without being read. False (with a
 * message on err) when it cannot be read. */
static bool print_file(FILE *out, FILE *err, int dfd, const char *dir, const char *name,
                       size_t max) {
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    fprintf(err, "tirx dump: cannot read %s/%s: %s\n", dir, name,
            fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0)
      close(fd);
    return false;
  }
  char buf[65536];
  size_t total = 0;
  char last = '\n';
  bool ok = true, cut = false;
  for (;;) {
    size_t want = sizeof buf;
    if (total >= max) {
      char probe;
      ssize_t r = read(fd, &probe, 1);
      cut = r > 0;
      break;
    }
    if (want > max - total)
      want = max - total;
    ssize_t r = read(fd, buf, want);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      fprintf(err, "tirx dump: cannot read %s/%s: %s\n", dir, name, strerror(errno));
      ok = false;
      break;
    }
    if (r == 0)
      break;
    fwrite(buf, 1, (size_t)r, out);
    total += (size_t)r;
    last = buf[r - 1];
  }
  close(fd);
  if (last != '\n')
    fputc('\n', out);
  if (cut)
    fprintf(out, "[... cut after %zu bytes of %lld]\n", total, (long long)st.st_size);
  return ok;
}

/* ---- a dump directory ---- */

typedef struct dfile {
  char *base; /* <entry>-<hash> */
  int ext;
} dfile;

typedef struct kern {
  const char *base;
  bool has[EXT_COUNT];
} kern;

static int dfile_cmp(const void *a, const void *b) {
  const dfile *x = a, *y = b;
  int c = strcmp(x->base, y->base);
  return c ? c : x->ext - y->ext;
}

/* The length of the entry name in base: up to a final "-<32 hex digits>", else all of it. */
static size_t entry_len(const char *base) {
  size_t n = strlen(base);
  if (n < 34 || base[n - 33] != '-')
    return n;
  for (size_t i = n - 32; i < n; i++)
    if (!strchr("0123456789abcdef", base[i]))
      return n;
  return n - 33;
}

static int dump_dir(const opts *o, FILE *out, FILE *err) {
  DIR *d = opendir(o->dir);
  if (!d) {
    fprintf(err, "tirx dump: cannot open directory '%s': %s\n", o->dir, strerror(errno));
    return 1;
  }
  int dfd = dirfd(d);
  dfile *files = NULL;
  size_t nfiles = 0, cap = 0;
  int rc = 0;
  struct dirent *e;
  for (;;) {
    errno = 0;
    if (!(e = readdir(d)))
      break;
    const char *dot = strrchr(e->d_name, '.');
    if (e->d_name[0] == '.' || !dot || dot == e->d_name)
      continue;
    int ext = 0;
    while (ext < EXT_COUNT && strcmp(dot + 1, EXTS[ext]))
      ext++;
    if (ext == EXT_COUNT)
      continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      fprintf(err, "tirx dump: warning: skipping %s/%s: not a regular file\n", o->dir,
              e->d_name);
      continue;
    }
    if (nfiles == cap) {
      size_t ncap = cap ? 2 * cap : 64;
      dfile *nf = realloc(files, ncap * sizeof *nf);
      if (!nf) {
        rc = 1;
        break;
      }
      files = nf;
      cap = ncap;
    }
    char *base = strndup(e->d_name, (size_t)(dot - e->d_name));
    if (!base) {
      rc = 1;
      break;
    }
    files[nfiles++] = (dfile){base, ext};
  }
  if (rc == 0 && errno != 0) {
    fprintf(err, "tirx dump: cannot list '%s': %s\n", o->dir, strerror(errno));
    rc = 1;
  } else if (rc) {
    fprintf(err, "tirx dump: out of memory\n");
  }
  kern *ks = rc ? NULL : calloc(nfiles ? nfiles : 1, sizeof *ks);
  if (!rc && !ks) {
    fprintf(err, "tirx dump: out of memory\n");
    rc = 1;
  }
  size_t nk = 0;
  if (!rc) {
    qsort(files, nfiles, sizeof *files, dfile_cmp);
    bool cur = false; /* the current base matched NAME */
    for (size_t i = 0; i < nfiles; i++) {
      const char *b = files[i].base;
      if (i == 0 || strcmp(files[i - 1].base, b)) {
        char *entry = strndup(b, entry_len(b));
        cur = !o->name || (entry && fnmatch(o->name, entry, 0) == 0) || !strcmp(o->name, b);
        free(entry);
        if (cur)
          ks[nk++].base = b;
      }
      if (cur)
        ks[nk - 1].has[files[i].ext] = true;
    }
    if (!nk) {
      if (o->name)
        fprintf(err, "tirx dump: no kernel matching '%s' in '%s'\n", o->name, o->dir);
      else
        fprintf(err, "tirx dump: no kernel dumps (*.dispatch, *.cu, *.ir, *.ptx) in '%s'\n",
                o->dir);
      rc = 1;
    }
  }
  for (size_t k = 0; k < nk; k++) {
    const kern *kk = &ks[k];
    size_t el = entry_len(kk->base);
    if (k)
      fputc('\n', out);
    if (kk->base[el])
      fprintf(out, "=== kernel %.*s  hash %s  (%s/%s.*)\n", (int)el, kk->base, kk->base + el + 1,
              o->dir, kk->base);
    else
      fprintf(out, "=== kernel %s  (%s/%s.*)\n", kk->base, o->dir, kk->base);
    static const char *const TITLES[EXT_COUNT] = {"dispatch report", "CUDA source", "IR", "PTX"};
    bool want[EXT_COUNT] = {true, !o->report_only, o->ir, o->ptx};
    for (int x = 0; x < EXT_COUNT; x++) {
      if (!want[x])
        continue;
      if (!kk->has[x]) {
        if (x == EXT_DISPATCH)
          print_report(out, NULL);
        else
          fprintf(out, "--- %s: no %s.%s\n", TITLES[x], kk->base, EXTS[x]);
        continue;
      }
      size_t len = strlen(kk->base) + strlen(EXTS[x]) + 2;
      char *fname = malloc(len);
      if (!fname) {
        fprintf(err, "tirx dump: out of memory\n");
        rc = 1;
        break;
      }
      snprintf(fname, len, "%s.%s", kk->base, EXTS[x]);
      if (x == EXT_DISPATCH)
        fprintf(out, "--- dispatch report\n");
      else
        fprintf(out, "--- %s (%s)\n", TITLES[x], fname);
      if (!print_file(out, err, dfd, o->dir, fname, o->max_bytes))
        rc = 1;
      free(fname);
    }
  }
  for (size_t i = 0; i < nfiles; i++)
    free(files[i].base);
  free(files);
  free(ks);
  closedir(d);
  return rc;
}

/* ---- an example built in-process ---- */

static void list_examples(FILE *out) {
  for (int k = 0; k < TIRX_ROW_OP_COUNT; k++)
    fprintf(out, "%s\n", tirx_kernels_row_name((tirx_row_op)k));
  for (int i = 0; i < example_kernel_count; i++)
    fprintf(out, "kernels.%s\n", example_kernels[i].name);
}

static int dump_example(const opts *o, FILE *out, FILE *err) {
  if (!strcmp(o->example, "list")) {
    list_examples(out);
    return 0;
  }
  int mk = -1, ex = -1;
  const char *name = o->example;
  bool qualified = !strncmp(name, "kernels.", 8);
  if (qualified)
    name += 8;
  for (int k = 0; !qualified && k < TIRX_ROW_OP_COUNT; k++)
    if (!strcmp(name, tirx_kernels_row_name((tirx_row_op)k)))
      mk = k;
  for (int i = 0; mk < 0 && i < example_kernel_count; i++)
    if (!strcmp(name, example_kernels[i].name))
      ex = i;
  if (mk < 0 && ex < 0)
    return dump_usage(err, "unknown example '%s' (tirx dump --example list names them)",
                      o->example);
  tirx_dtype dtype = TIRX_BF16;
  int64_t width = 8192;
  if (ex >= 0 && (o->dtype_arg || o->width_arg || o->scalar))
    return dump_usage(err, "--dtype, --width and --scalar apply to the membound examples, not '%s'",
                      o->example);
  if (o->dtype_arg) {
    int t = 0;
    while (t < TIRX_DTYPE_COUNT && strcmp(o->dtype_arg, tirx_dtype_name((tirx_dtype)t)))
      t++;
    if (t == TIRX_DTYPE_COUNT)
      return dump_usage(err, "unknown dtype '%s' (f32, f16, bf16, ...)", o->dtype_arg);
    dtype = (tirx_dtype)t;
  }
  if (o->width_arg) {
    char *end;
    errno = 0;
    long long w = strtoll(o->width_arg, &end, 10);
    if (errno || end == o->width_arg || *end || w < 1 || w > ((long long)1 << 30))
      return dump_usage(err, "--width needs a positive integer, not '%s'", o->width_arg);
    width = w;
  }
  tirx_kernel *k = NULL;
  char msg[512] = "";
  if (mk >= 0) {
    tirx_row_options ro = {.scalar = o->scalar};
    if (tirx_kernels_row_build((tirx_row_op)mk, &ro, dtype, width, &k) != TIRX_OK)
      snprintf(msg, sizeof msg, "%s", tirx_last_error());
  } else {
    k = example_kernels[ex].make(); /* prints the builder's error to stderr */
    snprintf(msg, sizeof msg, "%s", tirx_last_error());
  }
  if (!k) {
    fprintf(err, "tirx dump: cannot build example '%s': %s\n", o->example, msg);
    return 1;
  }
  if (mk >= 0)
    fprintf(out, "=== kernel %s  (example %s, %s, width %lld%s)\n", tirx_kernel_name(k),
            o->example, tirx_dtype_name(dtype), (long long)width, o->scalar ? ", scalar" : "");
  else
    fprintf(out, "=== kernel %s  (example kernels.%s)\n", tirx_kernel_name(k), name);
  print_report(out, tirx_kernel_dispatch_report(k));
  if (!o->report_only) {
    fprintf(out, "--- CUDA source\n");
    print_text(out, tirx_kernel_source(k));
  }
  if (o->ir) {
    fprintf(out, "--- IR\n");
    print_text(out, tirx_kernel_ir_str(k));
  }
  int rc = 0;
  if (o->ptx) {
    tirx_runtime *rt = NULL;
    tirx_compiled *c = NULL;
    tirx_runtime_options ro = {.compile_only = true, .cache_disabled = true};
    if (tirx_runtime_create(&ro, &rt) != TIRX_OK || tirx_compile(rt, k, NULL, &c) != TIRX_OK) {
      fprintf(err, "tirx dump: cannot compile example '%s': %s\n", o->example,
              tirx_last_error());
      rc = 1;
    } else {
      fprintf(out, "--- PTX (%s)\n", tirx_compiled_arch(c));
      print_text(out, tirx_compiled_ptx(c));
    }
    tirx_compiled_destroy(c);
    tirx_runtime_destroy(rt);
  }
  tirx_kernel_release(k);
  return rc;
}

/* ---- arguments ---- */

/* Matches "--opt V" and "--opt=V"; advances *i past the value. 1 matched, 0 not, -1 usage
 * error (no value). */
static int opt_value(int argc, const char *const *argv, int *i, const char *opt,
                     const char **val) {
  size_t n = strlen(opt);
  if (strncmp(argv[*i], opt, n))
    return 0;
  if (argv[*i][n] == '=') {
    *val = argv[*i] + n + 1;
    return 1;
  }
  if (argv[*i][n])
    return 0;
  if (*i + 1 >= argc)
    return -1;
  *val = argv[++*i];
  return 1;
}

int tirx_dump_main(int argc, const char *const *argv, FILE *out, FILE *err) {
  opts o = {.max_bytes = TIRX_DUMP_MAX_BYTES};
  const char *max_arg = NULL;
  int npos = 0;
  static const char *const VALUED[] = {"--example", "--dtype", "--width", "--max-bytes"};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fprintf(out, "usage:\n%s", tirx_dump_usage);
      return 0;
    }
    if (!strcmp(a, "--ir")) {
      o.ir = true;
      continue;
    }
    if (!strcmp(a, "--ptx")) {
      o.ptx = true;
      continue;
    }
    if (!strcmp(a, "--report-only")) {
      o.report_only = true;
      continue;
    }
    if (!strcmp(a, "--scalar")) {
      o.scalar = true;
      continue;
    }
    const char **dest[] = {&o.example, &o.dtype_arg, &o.width_arg, &max_arg};
    int m = 0, v = 0;
    for (; v < 4 && !(m = opt_value(argc, argv, &i, VALUED[v], dest[v])); v++) {
    }
    if (m < 0)
      return dump_usage(err, "%s needs a value", VALUED[v]);
    if (m > 0)
      continue;
    if (a[0] == '-' && a[1])
      return dump_usage(err, "unknown option '%s'", a);
    if (npos == 0)
      o.dir = a;
    else if (npos == 1)
      o.name = a;
    else
      return dump_usage(err, "unexpected argument '%s'", a);
    npos++;
  }
  if (max_arg) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(max_arg, &end, 10);
    if (errno || end == max_arg || *end || n < 1 || max_arg[0] == '-')
      return dump_usage(err, "--max-bytes needs a positive integer, not '%s'", max_arg);
    o.max_bytes = (size_t)n;
  }
  if (o.example) {
    if (npos)
      return dump_usage(err, "--example takes no directory ('%s')", o.dir);
    if (!*o.example)
      return dump_usage(err, "%s", "--example needs a name");
    return dump_example(&o, out, err);
  }
  if (o.dtype_arg || o.width_arg || o.scalar)
    return dump_usage(err, "%s", "--dtype, --width and --scalar go with --example");
  if (!o.dir)
    return dump_usage(err, "%s", "a dump directory (or --example NAME) is needed");
  if (!*o.dir)
    return dump_usage(err, "%s", "the dump directory must not be empty");
  return dump_dir(&o, out, err);
}
