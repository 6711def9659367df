/*
 * tirx: the command-line tool. Inspects and cleans the disk kernel cache, and prints the
 * dispatch report and generated source of built kernels (dump.c).
 *
 *   tirx cache stats  [--dir D]   entries, bytes, archs, temp files, limits
 *   tirx cache ls     [--dir D]   one line per entry: key, bytes, arch, NVRTC, age, kernel
 *   tirx cache verify [--dir D]   checks every entry as a runtime would; removes bad ones
 *   tirx cache clear  [--dir D]   removes every entry and temp file
 *   tirx cache export FILE [--dir D]  every valid entry into one bundle (warm start a fleet)
 *   tirx cache import FILE [--dir D]  a bundle's entries, all checked first; a bad one changes
 *                                     nothing
 *   tirx dump DIR [NAME]          each kernel a runtime dumped into DIR (TIRX_DUMP_DIR)
 *   tirx dump --example E         an example kernel, built in-process (no GPU)
 *   tirx warmup [FILE|-] [-e LINE] the kernel library's ops compiled into the disk cache for
 *                                 a list of shapes, no GPU needed (warmup.c has the format)
 *   tirx --version                tirx's version and the NVRTC it compiles with (version and
 *                                 the library loaded), or why no NVRTC loads
 *
 * The directory is D, else $TIRX_CACHE_DIR, else $XDG_CACHE_HOME/tirx, else ~/.cache/tirx,
 * exactly as a runtime resolves it; a cache command never creates it (a missing directory is an
 * error). Exit status: 0 success, 1 failure (or corrupt entries
 * found by verify, or no kernel found by dump), 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/store.h"
#include "dump.h"
#include "warmup.h"
#include "jit/jit.h"
#include "jit/nvrtc_lib.h"
#include "tirx.h"

static const char usage_head[] =
    "usage: tirx <command> [options]\n"
    "\n"
    "commands:\n"
    "  cache stats  [--dir D]   entries, bytes, archs and temp files of the disk cache\n"
    "  cache ls     [--dir D]   one line per entry: key, bytes, arch, NVRTC version, age,\n"
    "                           kernel name\n"
    "  cache verify [--dir D]   check every entry as a runtime would; remove the bad ones\n"
    "                           (exit status 1 when some were bad)\n"
    "  cache clear  [--dir D]   remove every entry and temp file\n"
    "  cache export FILE [--dir D]\n"
    "                           write every valid entry into the bundle FILE\n"
    "  cache import FILE [--dir D]\n"
    "                           add the bundle FILE's entries, every one checked as a\n"
    "                           runtime checks a load; a bad bundle changes nothing\n";
static const char usage_tail[] =
    "  --version                tirx's version and the NVRTC it compiles with\n"
    "  help                     this text\n"
    "\n"
    "The cache directory is D, else $TIRX_CACHE_DIR, else $XDG_CACHE_HOME/tirx, else\n"
    "~/.cache/tirx. A running program's hit, miss and compile counters live in that program\n"
    "(tirx_runtime_cache_stats); this tool reports what is on disk.\n";

static void print_usage(FILE *f) {
  fprintf(f, "%s%s%s%s", usage_head, tirx_dump_usage, tirx_warmup_usage, usage_tail);
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "tirx: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n");
  print_usage(stderr);
  return 2;
}

/* The store's message without its operation ("disk cache list: cannot read ...": the command
 * already names itself). */
static const char *store_error(void) {
  const char *m = tirx_last_error();
  if (strncmp(m, "disk cache ", 11) == 0) {
    const char *colon = strstr(m, ": ");
    if (colon)
      return colon + 2;
  }
  return m;
}

/* ---- stats and ls ---- */

enum { MAX_ARCHS = 16 };

typedef struct scan {
  uint64_t entries, bytes, bad_headers;
  int64_t oldest, newest;
  int narchs;
  char archs[MAX_ARCHS][TIRX__STORE_ARCH_MAX + 24];
  uint64_t arch_count[MAX_ARCHS];
  bool list;
  time_t now;
  const char *dir;
} scan;

/* The kernel's name: an entry's metadata (store.h's file layout: the header, the arch, then
 * meta_len bytes that the runtime fills with the entry point's name). Read with O_NOFOLLOW and
 * cut at size; non-printable bytes shown as '?'; "?" when it cannot be read. */
static void entry_kernel(const char *dir, const tirx__store_item *it, char *out, size_t size) {
  snprintf(out, size, "?");
  char path[4200];
  if (snprintf(path, sizeof path, "%s/%s", dir, it->name) >= (int)sizeof path)
    return;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return;
  size_t want = it->meta_len < size - 1 ? (size_t)it->meta_len : size - 1;
  off_t at = (off_t)TIRX__STORE_HEADER_BYTES + (off_t)strlen(it->arch);
  ssize_t n = want ? pread(fd, out, want, at) : 0;
  close(fd);
  if (n <= 0) {
    snprintf(out, size, "?");
    return;
  }
  out[n] = 0;
  for (ssize_t i = 0; i < n; i++)
    if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e)
      out[i] = '?';
}

static bool on_item(void *user, const tirx__store_item *it) {
  scan *s = user;
  s->entries++;
  s->bytes += it->file_bytes;
  if (s->entries == 1 || it->mtime_s < s->oldest)
    s->oldest = it->mtime_s;
  if (s->entries == 1 || it->mtime_s > s->newest)
    s->newest = it->mtime_s;
  char label[TIRX__STORE_ARCH_MAX + 24];
  if (it->header_ok)
    snprintf(label, sizeof label, "%s (NVRTC %d.%d)", it->arch, it->nvrtc_major, it->nvrtc_minor);
  else
    snprintf(label, sizeof label, "unreadable header");
  if (!it->header_ok)
    s->bad_headers++;
  int i = 0;
  while (i < s->narchs && strcmp(s->archs[i], label) != 0)
    i++;
  if (i == s->narchs && i < MAX_ARCHS)
    snprintf(s->archs[s->narchs++], sizeof s->archs[0], "%s", label);
  if (i < MAX_ARCHS)
    s->arch_count[i]++;
  if (s->list) {
    long age = (long)(s->now - it->mtime_s);
    char kernel[128];
    if (it->header_ok)
      entry_kernel(s->dir, it, kernel, sizeof kernel);
    if (it->header_ok)
      printf("%s  %10llu  %-8s  NVRTC %d.%d  %6ld s ago  %s\n", it->name,
             (unsigned long long)it->file_bytes, it->arch, it->nvrtc_major, it->nvrtc_minor, age,
             kernel);
    else
      printf("%s  %10llu  (unreadable header)  %6ld s ago\n", it->name,
             (unsigned long long)it->file_bytes, age);
  }
  return true;
}

static int cmd_stats(tirx__store *st, bool list) {
  scan s;
  memset(&s, 0, sizeof s);
  s.list = list;
  s.now = time(NULL);
  s.dir = tirx__store_path(st);
  size_t count = 0;
  if (tirx__store_list(st, on_item, &s, &count) != TIRX_OK) {
    fprintf(stderr, "tirx cache %s: %s\n", list ? "ls" : "stats", store_error());
    return 1;
  }
  if (list)
    return 0;
  tirx__store_counters c;
  tirx__store_counters_get(st, &c);
  printf("directory      %s\n", tirx__store_path(st));
  printf("writable       %s\n", tirx__store_writable(st) ? "yes" : "no");
  printf("entries        %llu\n", (unsigned long long)s.entries);
  printf("bytes          %llu (%.2f MiB; limit %.0f MiB unless a runtime sets another)\n",
         (unsigned long long)s.bytes, (double)s.bytes / 1048576.0,
         (double)TIRX__STORE_DEFAULT_MAX_BYTES / 1048576.0);
  if (s.entries)
    printf("ages           newest %lld s, oldest %lld s\n", (long long)(s.now - s.newest),
           (long long)(s.now - s.oldest));
  for (int i = 0; i < s.narchs; i++)
    printf("  %-30s %llu\n", s.archs[i], (unsigned long long)s.arch_count[i]);
  printf("stale temp files swept now  %llu\n", (unsigned long long)c.tmp_swept);
  return 0;
}

/* ---- verify and clear ---- */

static int cmd_verify(tirx__store *st) {
  tirx__store_verify_counts v;
  if (tirx__store_verify(st, &v) != TIRX_OK) {
    fprintf(stderr, "tirx cache verify: %s\n", store_error());
    return 1;
  }
  tirx__store_counters c;
  tirx__store_counters_get(st, &c);
  printf("checked %llu, ok %llu, corrupt %llu (removed)", (unsigned long long)v.checked,
         (unsigned long long)v.ok, (unsigned long long)v.corrupt);
  if (v.kept)
    printf(", corrupt but not removable %llu (left in place; see the warning)",
           (unsigned long long)v.kept);
  printf("\n");
  for (int r = 0; r < TIRX__STORE_CORRUPT_COUNT; r++)
    if (c.corrupt_by_reason[r])
      printf("  %-12s %llu  %s\n", tirx__store_corrupt_name((tirx__store_corrupt)r),
             (unsigned long long)c.corrupt_by_reason[r],
             tirx__store_corrupt_str((tirx__store_corrupt)r));
  return v.corrupt || v.kept ? 1 : 0;
}

static int cmd_clear(tirx__store *st) {
  uint64_t removed = 0;
  if (tirx__store_clear(st, &removed) != TIRX_OK) {
    fprintf(stderr, "tirx cache clear: %s\n", store_error());
    return 1;
  }
  printf("removed %llu file%s from %s\n", (unsigned long long)removed, removed == 1 ? "" : "s",
         tirx__store_path(st));
  return 0;
}

static int cmd_bundle(tirx__store *st, bool export_, const char *file) {
  uint64_t n = 0;
  tirx_status s = export_ ? tirx__store_export(st, file, &n) : tirx__store_import(st, file, &n);
  if (s != TIRX_OK) {
    fprintf(stderr, "tirx cache %s: %s\n", export_ ? "export" : "import", store_error());
    return 1;
  }
  if (export_)
    printf("exported %llu entr%s from %s to %s\n", (unsigned long long)n, n == 1 ? "y" : "ies",
           tirx__store_path(st), file);
  else
    printf("imported %llu entr%s from %s into %s\n", (unsigned long long)n, n == 1 ? "y" : "ies",
           file, tirx__store_path(st));
  return 0;
}

/* Warnings from the store go to stderr, except while opening: an unusable directory is then
 * reported once, as the command's error. */
static bool opening;
static void print_warning(void *user, const char *msg) {
  (void)user;
  if (!opening)
    fprintf(stderr, "tirx: warning: %s\n", msg);
}

/* The directory a runtime would use, as the store resolves it (src/cache/store.c): dir, else
 * $TIRX_CACHE_DIR, else $XDG_CACHE_HOME/tirx, else $HOME/.cache/tirx. False when none is set. */
static bool cache_dir_path(const char *dir, char *buf, size_t size) {
  const char *env = getenv("TIRX_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (dir)
    n = snprintf(buf, size, "%s", dir);
  else if (env && *env)
    n = snprintf(buf, size, "%s", env);
  else if (xdg && *xdg)
    n = snprintf(buf, size, "%s/tirx", xdg);
  else if (home && *home)
    n = snprintf(buf, size, "%s/.cache/tirx", home);
  else
    return false;
  return n > 0 && (size_t)n < size;
}

static int cmd_cache(int argc, char **argv) {
  if (argc < 1)
    return usage_error("%s",
                       "cache: a subcommand is needed (stats, ls, verify, clear, export, import)");
  const char *sub = argv[0];
  if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
    print_usage(stdout);
    return 0;
  }
  bool bundle = !strcmp(sub, "export") || !strcmp(sub, "import");
  if (strcmp(sub, "stats") && strcmp(sub, "ls") && strcmp(sub, "verify") && strcmp(sub, "clear") &&
      !bundle)
    return usage_error("cache: unknown subcommand '%s'", sub);
  const char *dir = NULL, *file = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--dir")) {
      if (i + 1 >= argc)
        return usage_error("%s", "--dir needs a directory");
      dir = argv[++i];
    } else if (!strncmp(argv[i], "--dir=", 6)) {
      dir = argv[i] + 6;
    } else if (bundle && !file && argv[i][0] != '-') {
      file = argv[i];
    } else {
      return usage_error("cache: unknown option '%s'", argv[i]);
    }
  }
  if (bundle && !file)
    return usage_error("cache %s: a bundle FILE is needed", sub);
  if (dir && !*dir)
    return usage_error("%s", "--dir needs a non-empty directory");
  /* Opening the store creates a missing directory (a runtime wants that, and so does import,
   * which fills a new cache); a command that only looks, exports or removes must not turn a
   * mistyped --dir into a new, empty cache. */
  char where[4096];
  if (!strcmp(sub, "import")) {
    /* creates the directory when missing */
  } else if (!cache_dir_path(dir, where, sizeof where)) {
    fprintf(stderr, "tirx cache %s: no cache directory: $TIRX_CACHE_DIR, $XDG_CACHE_HOME and "
                    "$HOME are all unset (use --dir)\n",
            sub);
    return 1;
  } else {
    struct stat sb;
    if (stat(where, &sb) != 0) {
      fprintf(stderr, "tirx cache %s: no cache directory at '%s': %s\n", sub, where,
              strerror(errno));
      return 1;
    }
    if (!S_ISDIR(sb.st_mode)) {
      fprintf(stderr, "tirx cache %s: '%s' is not a directory\n", sub, where);
      return 1;
    }
  }
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = dir;
  o.log = print_warning;
  tirx__store *st = NULL;
  opening = true;
  tirx__store_open(&o, &st);
  opening = false;
  if (!st) {
    fprintf(stderr, "tirx cache %s: out of memory\n", sub);
    return 1;
  }
  int rc;
  if (!tirx__store_enabled(st)) {
    fprintf(stderr, "tirx cache %s: the cache directory cannot be used: %s\n", sub,
            tirx__store_disabled_reason(st));
    rc = 1;
  } else if (!strcmp(sub, "stats")) {
    rc = cmd_stats(st, false);
  } else if (!strcmp(sub, "ls")) {
    rc = cmd_stats(st, true);
  } else if (!strcmp(sub, "verify")) {
    rc = cmd_verify(st);
  } else if (bundle) {
    rc = cmd_bundle(st, !strcmp(sub, "export"), file);
  } else {
    rc = cmd_clear(st);
  }
  tirx__store_close(st);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage_error("%s", "a command is needed");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    print_usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
    if (nv)
      printf("tirx %s (NVRTC %d.%d, %s)\n", tirx_version(), nv->version / 1000,
             nv->version % 1000 / 10, nv->path);
    else
      printf("tirx %s (no NVRTC: %s)\n", tirx_version(), tirx__nvrtc_lib_error());
    return 0;
  }
  if (!strcmp(cmd, "cache"))
    return cmd_cache(argc - 2, argv + 2);
  if (!strcmp(cmd, "dump"))
    return tirx_dump_main(argc - 2, (const char *const *)(argv + 2), stdout, stderr);
  if (!strcmp(cmd, "warmup"))
    return tirx_warmup_main(argc - 2, (const char *const *)(argv + 2), stdout, stderr);
  return usage_error("unknown command '%s'", cmd);
}
