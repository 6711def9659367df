/*
 * Bundles (issue 18, warm start for a fleet): tirx__store_export and tirx__store_import. A
 * bundle round-trips byte for byte; every damaged bundle (each truncation, each flipped bit)
 * is rejected with an exact message and changes nothing; a failure while publishing removes
 * what the import created.
 */
#include "cache_helpers.h"

#include <sys/wait.h>
#include <xxhash.h>

typedef struct fx {
  char dir[256], a[320], b[320], file[320];
  tirx__store *sa, *sb;
  tc_log log;
} fx;

static void fx_open(fx *f) {
  memset(f, 0, sizeof *f);
  tc_mkdtemp(f->dir, sizeof f->dir);
  snprintf(f->a, sizeof f->a, "%s/a", f->dir);
  snprintf(f->b, sizeof f->b, "%s/b", f->dir);
  snprintf(f->file, sizeof f->file, "%s/warm.tirxb", f->dir);
  f->sa = tc_open(f->a, NULL);
  f->sb = tc_open(f->b, &f->log);
}

static void fx_close(fx *f) {
  tirx__store_close(f->sa);
  tirx__store_close(f->sb);
  tc_rmtree(f->dir);
}

static void put(tirx__store *s, int i, const tirx__store_info *info) {
  tirx__cache_key k = tc_key(i);
  unsigned char p[300];
  tc_fill(p, sizeof p, (uint64_t)i);
  cr_assert_eq(tirx__store_put(s, &k, info, "meta", 4, p, 50 + (size_t)i), TIRX_OK);
}

static void expect_hit(tirx__store *s, int i) {
  tirx__cache_key k = tc_key(i);
  unsigned char p[300];
  tc_fill(p, sizeof p, (uint64_t)i);
  tirx__store_entry e;
  cr_assert(tirx__store_get(s, &k, tc_info(), &e), "entry %d missing", i);
  cr_assert_eq(e.payload_len, 50 + (size_t)i);
  cr_assert_eq(memcmp(e.payload, p, e.payload_len), 0);
  cr_assert_eq(e.meta_len, 4);
  tirx__store_entry_free(&e);
}

static void export_n(fx *f, int n) {
  for (int i = 0; i < n; i++) put(f->sa, i, tc_info());
  uint64_t got = 0;
  cr_assert_eq(tirx__store_export(f->sa, f->file, &got), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(got, (uint64_t)n);
}

/* An import of bytes that must fail with exactly msg ('%s' is the file) and change nothing. */
static void expect_rejected(fx *f, const unsigned char *bytes, size_t len, const char *msg_fmt,
                            const char *what) {
  tc_write_file(f->file, bytes, len);
  int before = tc_count_files(f->b);
  uint64_t n = 99;
  tirx_status st = tirx__store_import(f->sb, f->file, &n);
  cr_assert_eq(st, TIRX_E_INVALID_ARG, "%s: %s (%s)", what, tirx_status_name(st),
               tirx_last_error());
  cr_assert_eq(n, 0);
  if (msg_fmt) {
    char want[1024];
    snprintf(want, sizeof want, msg_fmt, f->file);
    cr_assert_str_eq(tirx_last_error(), want, "%s", what);
  } else {
    cr_assert(strncmp(tirx_last_error(), "disk cache import: '", 20) == 0, "%s: %s", what,
              tirx_last_error());
  }
  cr_assert_eq(tc_count_files(f->b), before, "%s: the store changed", what);
}

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void reseal(unsigned char *b, size_t len) { put64(b + len - 8, XXH3_64bits(b, len - 8)); }

Test(cache_bundle, round_trip_of_valid_entries_only) {
  fx f;
  fx_open(&f);
  for (int i = 0; i < 10; i++) put(f.sa, i, tc_info());
  static const tirx__store_info other = {"sm_80", 12, 4};
  put(f.sa, 10, &other); /* another arch: exported and imported, used by an sm_80 runtime */
  char path[512];
  tirx__cache_key k = tc_key(3);
  tc_entry_path(path, sizeof path, f.a, &k);
  cr_assert_eq(truncate(path, 70), 0); /* corrupt: not exported (and removed, as by a load) */
  uint64_t n = 0;
  cr_assert_eq(tirx__store_export(f.sa, f.file, &n), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(n, 10);
  cr_assert(!tc_exists(path));
  cr_assert_eq(tc_count_tmp(f.dir), 0);
  cr_assert_eq(tirx__store_import(f.sb, f.file, &n), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(n, 10);
  for (int i = 0; i < 10; i++)
    if (i != 3) expect_hit(f.sb, i);
  tirx__store_entry e;
  k = tc_key(10);
  cr_assert(tirx__store_get(f.sb, &k, &other, &e));
  tirx__store_entry_free(&e);
  tirx__store_verify_counts vc;
  cr_assert_eq(tirx__store_verify(f.sb, &vc), TIRX_OK);
  cr_assert_eq(vc.ok, 10);
  cr_assert_eq(vc.corrupt, 0);
  /* Entries are byte-identical files, and importing again is harmless. */
  k = tc_key(5);
  char pa[512], pb[512];
  tc_entry_path(pa, sizeof pa, f.a, &k);
  tc_entry_path(pb, sizeof pb, f.b, &k);
  size_t la, lb;
  unsigned char *ba = tc_read_file(pa, &la), *bb = tc_read_file(pb, &lb);
  cr_assert_eq(la, lb);
  cr_assert_eq(memcmp(ba, bb, la), 0);
  free(ba);
  free(bb);
  cr_assert_eq(tirx__store_import(f.sb, f.file, &n), TIRX_OK);
  cr_assert_eq(tc_count_files(f.b), 10);
  /* An empty store exports an empty bundle, which imports as 0 entries. */
  uint64_t removed;
  cr_assert_eq(tirx__store_clear(f.sa, &removed), TIRX_OK);
  cr_assert_eq(tirx__store_export(f.sa, f.file, &n), TIRX_OK);
  cr_assert_eq(n, 0);
  cr_assert_eq(tirx__store_import(f.sb, f.file, &n), TIRX_OK);
  cr_assert_eq(n, 0);
  fx_close(&f);
}

Test(cache_bundle, bad_bundles_are_rejected_with_exact_messages) {
  fx f;
  fx_open(&f);
  export_n(&f, 3);
  size_t len;
  unsigned char *good = tc_read_file(f.file, &len);
  unsigned char *b = malloc(len + 16);

  expect_rejected(&f, good, 0, "disk cache import: '%s' is not a tirx cache bundle (shorter "
                               "than a bundle header)", "empty");
  memcpy(b, good, len);
  b[1] = 'X';
  expect_rejected(&f, b, len, "disk cache import: '%s' is not a tirx cache bundle (bad magic)",
                  "magic");
  memcpy(b, good, len);
  b[8] = 7;
  expect_rejected(&f, b, len,
                  "disk cache import: '%s' has bundle format version 7; this tirx reads "
                  "version 1",
                  "version");
  expect_rejected(&f, good, 30, "disk cache import: '%s' is truncated in entry 1 of 3",
                  "truncated");
  expect_rejected(&f, good, len - 8,
                  "disk cache import: '%s' is truncated before its checksum", "no checksum");
  memcpy(b, good, len);
  b[len - 1] ^= 1;
  expect_rejected(&f, b, len,
                  "disk cache import: '%s' fails its checksum (the bundle is damaged)",
                  "checksum");
  memcpy(b, good, len);
  b[len] = 0;
  expect_rejected(&f, b, len + 1, "disk cache import: '%s' has bytes after its checksum",
                  "trailing");
  /* A corrupt entry inside a resealed bundle: the entry's own checks catch it. */
  memcpy(b, good, len);
  b[24 + 8 + 60] ^= 0x10;
  reseal(b, len);
  expect_rejected(&f, b, len,
                  "disk cache import: '%s': entry 1 of 3 is corrupt (checksum mismatch)",
                  "entry checksum");
  memcpy(b, good, len);
  put64(b + 24, UINT64_C(999999999999));
  reseal(b, len);
  expect_rejected(&f, b, len,
                  "disk cache import: '%s': entry 1 of 3 is 999999999999 bytes, over the entry "
                  "size limit of 268435456",
                  "huge length");
  /* Every truncation and every flipped bit is rejected and changes nothing. */
  for (size_t cut = 0; cut < len; cut++) expect_rejected(&f, good, cut, NULL, "a truncation");
  for (size_t i = 0; i < len; i++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(b, good, len);
      b[i] ^= (unsigned char)(1u << bit);
      expect_rejected(&f, b, len, NULL, "a flipped bit");
    }
  cr_assert_eq(tc_count_files(f.b), 0);
  /* A missing file and argument errors. */
  char missing[400];
  snprintf(missing, sizeof missing, "%s/nope", f.dir);
  cr_assert_eq(tirx__store_import(f.sb, missing, NULL), TIRX_E_IO);
  char want[600];
  snprintf(want, sizeof want, "disk cache import: cannot open '%s': No such file or directory",
           missing);
  cr_assert_str_eq(tirx_last_error(), want);
  expect_error(tirx__store_import(NULL, f.file, NULL), TIRX_E_NULL_ARG,
               "disk cache import: s is NULL");
  expect_error(tirx__store_import(f.sb, NULL, NULL), TIRX_E_NULL_ARG,
               "disk cache import: file is NULL");
  expect_error(tirx__store_export(f.sa, NULL, NULL), TIRX_E_NULL_ARG,
               "disk cache export: file is NULL");
  free(b);
  free(good);
  fx_close(&f);
}

/* A failure while publishing (pass 2) removes every entry this import created and leaves an
 * entry that was there before; no temp file remains. */
Test(cache_bundle, a_failed_publish_leaves_nothing_partial) {
  fx f;
  fx_open(&f);
  export_n(&f, 5);
  put(f.sb, 2, tc_info()); /* already there: must survive */
  tirx__store_fault_set(TIRX__SYS_RENAMEAT, 3, EIO, false);
  uint64_t n = 99;
  tirx_status st = tirx__store_import(f.sb, f.file, &n);
  tirx__store_fault_set(0, -1, 0, false);
  cr_assert_eq(st, TIRX_E_IO, "%s", tirx_last_error());
  cr_assert_eq(n, 0);
  static const char pub[] = "disk cache import: cannot publish entry 4 of 5 (";
  cr_assert(strncmp(tirx_last_error(), pub, sizeof pub - 1) == 0, "%s", tirx_last_error());
  cr_assert_eq(tc_count_files(f.b), 1, "only the entry that was there before remains");
  expect_hit(f.sb, 2);
  /* Export into a directory that does not exist fails and leaves nothing. */
  char bad[400];
  snprintf(bad, sizeof bad, "%s/no/such/dir/x.tirxb", f.dir);
  cr_assert_eq(tirx__store_export(f.sa, bad, &n), TIRX_E_IO);
  cr_assert(strstr(tirx_last_error(), "disk cache export: cannot create '") ==
                tirx_last_error(),
            "%s", tirx_last_error());
  fx_close(&f);
}

/* ---- the tool binary: cache export, import, verify, clear ---- */

static bool tool_path(char *buf, size_t cap) {
  const char *env = getenv("TIRX_TOOL");
  if (env && *env) {
    snprintf(buf, cap, "%s", env);
  } else {
    char self[400];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return false;
    self[n] = 0;
    char *slash = strrchr(self, '/'); /* build/tests/unit/test_unit */
    if (!slash) return false;
    *slash = 0;
    snprintf(buf, cap, "%s/../../tools/tirx", self);
  }
  return access(buf, X_OK) == 0;
}

/* Runs the tool with args; returns its exit status and its output in out (malloc'ed). */
static int tool(const char *bin, const char *args, char **out) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", bin, args);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (cap - len < 2) buf = realloc(buf, cap *= 2);
  }
  buf[len] = 0;
  int st = pclose(p);
  cr_assert(WIFEXITED(st));
  *out = buf;
  return WEXITSTATUS(st);
}

Test(cache_bundle, the_tool_exports_imports_verifies_and_clears) {
  char bin[512];
  if (!tool_path(bin, sizeof bin)) cr_skip_test("the tirx tool is not built (set TIRX_TOOL)");
  fx f;
  fx_open(&f);
  for (int i = 0; i < 4; i++) put(f.sa, i, tc_info());
  char args[1200], want[1200], *out;
  snprintf(args, sizeof args, "cache export '%s' --dir '%s'", f.file, f.a);
  cr_assert_eq(tool(bin, args, &out), 0, "%s", out);
  snprintf(want, sizeof want, "exported 4 entries from %s to %s\n", f.a, f.file);
  cr_assert_str_eq(out, want);
  free(out);
  snprintf(args, sizeof args, "cache import '%s' --dir '%s'", f.file, f.b);
  cr_assert_eq(tool(bin, args, &out), 0, "%s", out);
  snprintf(want, sizeof want, "imported 4 entries from %s into %s\n", f.file, f.b);
  cr_assert_str_eq(out, want);
  free(out);
  for (int i = 0; i < 4; i++) expect_hit(f.sb, i);
  /* A bad bundle: exit 1, the exact reason, nothing changed. */
  tc_write_file(f.file, "not a bundle at all, not at all", 31);
  cr_assert_eq(tool(bin, args, &out), 1);
  snprintf(want, sizeof want,
           "tirx cache import: '%s' is not a tirx cache bundle (bad magic)\n",
           f.file);
  cr_assert_str_eq(out, want);
  free(out);
  cr_assert_eq(tc_count_files(f.b), 4);
  snprintf(args, sizeof args, "cache import --dir '%s'", f.b);
  cr_assert_eq(tool(bin, args, &out), 2);
  free(out);
  /* A non-empty directory at an entry's name: verify removes it and says so, clear empties. */
  char path[600], inner[700];
  tirx__cache_key k = tc_key(9);
  tc_entry_path(path, sizeof path, f.b, &k);
  cr_assert_eq(mkdir(path, 0700), 0);
  snprintf(inner, sizeof inner, "%s/inner", path);
  tc_write_file(inner, "x", 1);
  snprintf(args, sizeof args, "cache verify --dir '%s'", f.b);
  cr_assert_eq(tool(bin, args, &out), 1);
  cr_assert(strstr(out, "checked 5, ok 4, corrupt 1 (removed)\n"), "%s", out);
  free(out);
  cr_assert(!tc_exists(path));
  cr_assert_eq(mkdir(path, 0700), 0);
  tc_write_file(inner, "x", 1);
  snprintf(args, sizeof args, "cache clear --dir '%s'", f.b);
  cr_assert_eq(tool(bin, args, &out), 0, "%s", out);
  snprintf(want, sizeof want, "removed 5 files from %s\n", f.b);
  cr_assert_str_eq(out, want);
  free(out);
  cr_assert_eq(tc_count_files(f.b), 0);
  fx_close(&f);
}
