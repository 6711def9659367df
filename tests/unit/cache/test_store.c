/*
 * The on-disk store (src/cache/store.c): round trips, corruption injection (T3), permissions
 * and poisoning (T6), LRU eviction, the temp sweep and the ls/verify/clear functions.
 */
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <xxhash.h>

#include "cache_helpers.h"

/* One scratch directory per test; the store's root is <dir>/root so open creates it. */
typedef struct fixture {
  char dir[256];
  char root[320];
  tirx__store *s;
  tc_log log;
} fixture;

static void fx_open(fixture *f) {
  memset(f, 0, sizeof *f);
  tc_mkdtemp(f->dir, sizeof f->dir);
  snprintf(f->root, sizeof f->root, "%s/root", f->dir);
  f->s = tc_open(f->root, &f->log);
}

static void fx_close(fixture *f) {
  tirx__store_close(f->s);
  f->s = NULL;
  tc_rmtree(f->dir);
}

static tirx__store_counters counters(const fixture *f) {
  tirx__store_counters c;
  tirx__store_counters_get(f->s, &c);
  return c;
}

/* Publishes an entry for key index i with meta_len and payload_len deterministic bytes. */
static void put_entry(fixture *f, int i, size_t meta_len, size_t payload_len) {
  tirx__cache_key k = tc_key(i);
  unsigned char *meta = malloc(meta_len + 1), *payload = malloc(payload_len + 1);
  tc_fill(meta, meta_len, (uint64_t)i * 2 + 1);
  tc_fill(payload, payload_len, (uint64_t)i * 2 + 2);
  cr_assert_eq(tirx__store_put(f->s, &k, tc_info(), meta, meta_len, payload, payload_len),
               TIRX_OK, "put %d: %s / %s", i, tirx_last_error(), f->log.last);
  free(meta);
  free(payload);
}

/* Asserts get of key index i hits with exactly the bytes put_entry wrote. */
static void expect_hit(fixture *f, int i, size_t meta_len, size_t payload_len) {
  tirx__cache_key k = tc_key(i);
  tirx__store_entry e;
  cr_assert(tirx__store_get(f->s, &k, tc_info(), &e), "entry %d missed (%s)", i, f->log.last);
  unsigned char *meta = malloc(meta_len + 1), *payload = malloc(payload_len + 1);
  tc_fill(meta, meta_len, (uint64_t)i * 2 + 1);
  tc_fill(payload, payload_len, (uint64_t)i * 2 + 2);
  cr_assert_eq(e.meta_len, meta_len);
  cr_assert_eq(e.payload_len, payload_len);
  cr_assert_eq(memcmp(e.meta, meta, meta_len), 0);
  cr_assert_eq(memcmp(e.payload, payload, payload_len), 0);
  for (int j = 0; j < TIRX__STORE_PAYLOAD_PAD; j++) cr_assert_eq(e.payload[payload_len + j], 0);
  cr_assert_str_eq(e.arch, "sm_90a");
  cr_assert_eq(e.nvrtc_major, 12);
  cr_assert_eq(e.nvrtc_minor, 8);
  free(meta);
  free(payload);
  tirx__store_entry_free(&e);
}

/*
 * Asserts that get of key index i (expecting info, tc_info() when NULL) is a miss that returns
 * no bytes, counts exactly one corrupt entry (with the given reason unless reason < 0) and
 * leaves nothing at the entry's path (unless keep).
 */
static void expect_rejected_as(fixture *f, int i, const tirx__store_info *info, int reason,
                               bool keep, const char *what) {
  tirx__cache_key k = tc_key(i);
  tirx__store_counters before = counters(f);
  tirx__store_entry e;
  memset(&e, 0xAB, sizeof e);
  bool hit = tirx__store_get(f->s, &k, info ? info : tc_info(), &e);
  cr_assert(!hit, "%s: a corrupt entry was returned as a hit", what);
  cr_assert(e.payload == NULL && e.meta == NULL && e.payload_len == 0 && e.meta_len == 0,
            "%s: a miss returned bytes", what);
  tirx__store_counters after = counters(f);
  cr_assert_eq(after.corrupt_detected, before.corrupt_detected + 1,
               "%s: corrupt_detected %llu -> %llu", what,
               (unsigned long long)before.corrupt_detected,
               (unsigned long long)after.corrupt_detected);
  cr_assert_eq(after.misses, before.misses + 1, "%s: not counted as a miss", what);
  cr_assert_eq(after.hits, before.hits, "%s", what);
  if (reason >= 0)
    cr_assert_eq(after.corrupt_by_reason[reason], before.corrupt_by_reason[reason] + 1,
                 "%s: expected reason %s", what,
                 tirx__store_corrupt_name((tirx__store_corrupt)reason));
  char path[512];
  tc_entry_path(path, sizeof path, f->root, &k);
  if (!keep) cr_assert(!tc_exists(path), "%s: the bad file is still there", what);
}

static void expect_rejected(fixture *f, int i, int reason, const char *what) {
  expect_rejected_as(f, i, NULL, reason, false, what);
}

static void entry_path(const fixture *f, int i, char *buf, size_t len) {
  tirx__cache_key k = tc_key(i);
  tc_entry_path(buf, len, f->root, &k);
}

/* Rewrites the trailing checksum so that only the intended change remains. */
static void fix_checksum(unsigned char *buf, size_t len) {
  uint64_t h = XXH3_64bits(buf, len - 8);
  for (int b = 0; b < 8; b++) buf[len - 8 + (size_t)b] = (unsigned char)(h >> (8 * b));
}

static void put_u64_le(unsigned char *p, uint64_t v) {
  for (int b = 0; b < 8; b++) p[b] = (unsigned char)(v >> (8 * b));
}

enum { META = 40, PAYLOAD = 300 };

/* The entry's file after put_entry(f, 0, META, PAYLOAD). */
static unsigned char *fresh_entry(fixture *f, size_t *len) {
  put_entry(f, 0, META, PAYLOAD);
  char path[512];
  entry_path(f, 0, path, sizeof path);
  return tc_read_file(path, len);
}

/* ---- round trips ---- */

Test(cache_store, round_trip_is_byte_identical) {
  fixture f;
  fx_open(&f);
  static const size_t sizes[][2] = {{0, 0}, {0, 1}, {1, 0}, {17, 4096}, {300, 100003},
                                    {TIRX__STORE_META_MAX, 5}, {3, (1u << 20) + 3}};
  int n = (int)(sizeof sizes / sizeof sizes[0]);
  for (int i = 0; i < n; i++) put_entry(&f, i, sizes[i][0], sizes[i][1]);
  for (int i = 0; i < n; i++) expect_hit(&f, i, sizes[i][0], sizes[i][1]);
  tirx__store_counters c = counters(&f);
  cr_assert_eq(c.puts, (uint64_t)n);
  cr_assert_eq(c.hits, (uint64_t)n);
  cr_assert_eq(c.misses, 0);
  cr_assert_eq(c.corrupt_detected, 0);

  /* An absent key is a plain miss. */
  tirx__cache_key k = tc_key(99);
  tirx__store_entry e;
  cr_assert(!tirx__store_get(f.s, &k, tc_info(), &e));
  c = counters(&f);
  cr_assert_eq(c.misses, 1);
  cr_assert_eq(c.corrupt_detected, 0);

  /* A second put replaces the entry. */
  put_entry(&f, 0, 5, 77);
  expect_hit(&f, 0, 5, 77);
  cr_assert_eq(tc_count_tmp(f.root), 0);
  cr_assert_eq(f.log.n, 0, "unexpected warning: %s", f.log.last);
  fx_close(&f);
}

Test(cache_store, round_trip_with_fsync_and_a_second_store) {
  fixture f;
  fx_open(&f);
  tirx__store_options o;
  tirx__store_options_init(&o);
  cr_assert(o.fsync, "fsync is on by default");
  o.path = f.root;
  tirx__store *s2 = NULL;
  cr_assert_eq(tirx__store_open(&o, &s2), TIRX_OK);
  tirx__cache_key k = tc_key(1);
  cr_assert_eq(tirx__store_put(s2, &k, tc_info(), "m", 1, "cubin", 5), TIRX_OK);
  put_entry(&f, 2, 3, 1000);
  /* Each store sees the other's entries. */
  tirx__store_entry e;
  cr_assert(tirx__store_get(f.s, &k, tc_info(), &e));
  cr_assert_eq(e.payload_len, 5);
  cr_assert_eq(memcmp(e.payload, "cubin", 6), 0); /* NUL padded */
  tirx__store_entry_free(&e);
  tirx__cache_key k2 = tc_key(2);
  cr_assert(tirx__store_get(s2, &k2, tc_info(), &e));
  tirx__store_entry_free(&e);
  tirx__store_entry_free(NULL);
  tirx__store_close(s2);
  fx_close(&f);
}

Test(cache_store, file_layout_matches_the_documented_format) {
  fixture f;
  fx_open(&f);
  size_t len;
  unsigned char *b = fresh_entry(&f, &len);
  size_t arch_len = strlen("sm_90a");
  cr_assert_eq(len, TIRX__STORE_HEADER_BYTES + arch_len + META + PAYLOAD + 8);
  cr_assert_eq(memcmp(b, "\x89TIRX\r\n\x1a", 8), 0);
  cr_assert_eq(b[8], TIRX__STORE_FORMAT_VERSION);
  cr_assert_eq(b[12], arch_len);
  tirx__cache_key k = tc_key(0);
  cr_assert_eq(memcmp(b + 16, k.bytes, 16), 0);
  cr_assert_eq(b[32], 12);
  cr_assert_eq(b[36], 8);
  cr_assert_eq(b[40], META);
  cr_assert_eq(b[48] | b[49] << 8, PAYLOAD);
  cr_assert_eq(memcmp(b + 56, "sm_90a", arch_len), 0);
  uint64_t h = XXH3_64bits(b, len - 8), got = 0;
  for (int i = 7; i >= 0; i--) got = got << 8 | b[len - 8 + (size_t)i];
  cr_assert_eq(got, h);
  free(b);
  fx_close(&f);
}

Test(cache_store, argument_errors) {
  fixture f;
  fx_open(&f);
  tirx__cache_key k = tc_key(0);
  tirx__store_info info = {"sm_90a", 12, 8};
  expect_error(tirx__store_put(NULL, &k, &info, "", 0, "", 0), TIRX_E_NULL_ARG,
               "disk cache write: s is NULL");
  expect_error(tirx__store_put(f.s, NULL, &info, "", 0, "", 0), TIRX_E_NULL_ARG,
               "disk cache write: key is NULL");
  expect_error(tirx__store_put(f.s, &k, NULL, "", 0, "", 0), TIRX_E_NULL_ARG,
               "disk cache write: info is NULL");
  expect_error(tirx__store_put(f.s, &k, &info, NULL, 3, "", 0), TIRX_E_NULL_ARG,
               "disk cache write: meta is NULL but meta_len is 3");
  expect_error(tirx__store_put(f.s, &k, &info, NULL, 0, NULL, 9), TIRX_E_NULL_ARG,
               "disk cache write: payload is NULL but payload_len is 9");
  info.arch = NULL;
  expect_error(tirx__store_put(f.s, &k, &info, NULL, 0, NULL, 0), TIRX_E_NULL_ARG,
               "disk cache write: info->arch is NULL");
  info.arch = "sm 90";
  expect_error(tirx__store_put(f.s, &k, &info, NULL, 0, NULL, 0), TIRX_E_INVALID_ARG,
               "disk cache write: arch 'sm 90' must be 1 to 63 printable characters without "
               "spaces");
  info.arch = "";
  expect_error(tirx__store_put(f.s, &k, &info, NULL, 0, NULL, 0), TIRX_E_INVALID_ARG,
               "disk cache write: arch '' must be 1 to 63 printable characters without spaces");
  info.arch = "sm_90a";
  static unsigned char big[TIRX__STORE_META_MAX + 1];
  cr_assert_eq(tirx__store_put(f.s, &k, &info, big, sizeof big, "", 0), TIRX_E_LIMIT);
  cr_assert_eq(f.log.n, 1);
  cr_assert(strstr(f.log.last, "disk cache write: entry ") == f.log.last, "%s", f.log.last);
  expect_error(tirx__store_open(NULL, NULL), TIRX_E_NULL_ARG, "disk cache open: out is NULL");

  /* NULL arguments to get are misses, never crashes. */
  tirx__store_entry e;
  cr_assert(!tirx__store_get(NULL, &k, &info, &e));
  cr_assert(!tirx__store_get(f.s, NULL, &info, &e));
  cr_assert(!tirx__store_get(f.s, &k, NULL, &e));
  cr_assert(!tirx__store_get(f.s, &k, &info, NULL));
  cr_assert_eq(tc_count_files(f.root), 0);
  fx_close(&f);
}

Test(cache_store, entry_size_limit_is_enforced_on_put) {
  char dir[256], root[300];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  o.fsync = false;
  o.max_entry_bytes = 4096;
  tirx__store *s = NULL;
  cr_assert_eq(tirx__store_open(&o, &s), TIRX_OK);
  static unsigned char payload[8192];
  tirx__cache_key k = tc_key(0);
  size_t fits = 4096 - TIRX__STORE_HEADER_BYTES - 6 - 8;
  cr_assert_eq(tirx__store_put(s, &k, tc_info(), NULL, 0, payload, fits), TIRX_OK);
  cr_assert_eq(tirx__store_put(s, &k, tc_info(), NULL, 0, payload, fits + 1), TIRX_E_LIMIT);
  cr_assert_eq(tirx__store_put(s, &k, tc_info(), NULL, 0, payload, sizeof payload), TIRX_E_LIMIT);
  tirx__store_entry e;
  cr_assert(tirx__store_get(s, &k, tc_info(), &e));
  cr_assert_eq(e.payload_len, fits);
  tirx__store_entry_free(&e);
  tirx__store_close(s);
  tc_rmtree(dir);
}

/* ---- T3: corruption injection ---- */

Test(cache_store, truncation_at_every_offset_is_detected) {
  fixture f;
  fx_open(&f);
  size_t len;
  unsigned char *orig = fresh_entry(&f, &len);
  char path[512];
  entry_path(&f, 0, path, sizeof path);
  for (size_t off = 0; off < len; off++) {
    tc_write_file(path, orig, off);
    char what[64];
    snprintf(what, sizeof what, "truncated to %zu of %zu bytes", off, len);
    expect_rejected(&f, 0,
                    off < TIRX__STORE_HEADER_BYTES + 1 + 8 ? TIRX__STORE_CORRUPT_TOO_SMALL
                                                           : TIRX__STORE_CORRUPT_LENGTH,
                    what);
  }
  /* Appending garbage is detected too. */
  unsigned char *longer = malloc(len + 3);
  memcpy(longer, orig, len);
  memcpy(longer + len, "xyz", 3);
  tc_write_file(path, longer, len + 3);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_LENGTH, "garbage appended");
  free(longer);
  /* And the untouched file still hits. */
  tc_write_file(path, orig, len);
  expect_hit(&f, 0, META, PAYLOAD);
  free(orig);
  cr_assert_eq(counters(&f).corrupt_detected, len + 1);
  fx_close(&f);
}

/* The reason a one-bit flip at offset off must be rejected for. */
static int flip_reason(size_t off) {
  if (off < 8) return TIRX__STORE_CORRUPT_MAGIC;
  if (off < 12) return TIRX__STORE_CORRUPT_VERSION;
  if (off < 16) return TIRX__STORE_CORRUPT_LENGTH; /* arch_len */
  if (off < 40) return TIRX__STORE_CORRUPT_CHECKSUM; /* key echo, NVRTC version */
  if (off < 56) return TIRX__STORE_CORRUPT_LENGTH;   /* meta_len, payload_len */
  return TIRX__STORE_CORRUPT_CHECKSUM;               /* arch, meta, payload, checksum */
}

static const char *region_of(size_t off, size_t len) {
  if (off < 8) return "magic";
  if (off < 12) return "version";
  if (off < 16) return "arch length";
  if (off < 32) return "key";
  if (off < 40) return "nvrtc version";
  if (off < 56) return "lengths";
  if (off < 62) return "arch";
  if (off < 62 + META) return "metadata";
  if (off < len - 8) return "payload";
  return "checksum";
}

Test(cache_store, every_flipped_bit_in_every_region_is_detected) {
  fixture f;
  fx_open(&f);
  size_t len;
  unsigned char *orig = fresh_entry(&f, &len);
  unsigned char *bad = malloc(len);
  char path[512];
  entry_path(&f, 0, path, sizeof path);
  int regions_seen[10] = {0};
  static const char *const names[] = {"magic",   "version", "arch length", "key",
                                      "nvrtc version", "lengths", "arch", "metadata",
                                      "payload", "checksum"};
  for (size_t off = 0; off < len; off++) {
    for (int bit = 0; bit < 8; bit++) {
      memcpy(bad, orig, len);
      bad[off] ^= (unsigned char)(1u << bit);
      tc_write_file(path, bad, len);
      char what[96];
      snprintf(what, sizeof what, "bit %d of byte %zu (%s)", bit, off, region_of(off, len));
      expect_rejected(&f, 0, flip_reason(off), what);
    }
    for (int r = 0; r < 10; r++)
      if (!strcmp(region_of(off, len), names[r])) regions_seen[r]++;
  }
  for (int r = 0; r < 10; r++) cr_assert_gt(regions_seen[r], 0, "region %s not covered", names[r]);
  cr_assert_eq(counters(&f).corrupt_detected, len * 8);
  free(bad);
  free(orig);
  fx_close(&f);
}

Test(cache_store, crafted_headers_with_valid_checksums_are_detected) {
  fixture f;
  fx_open(&f);
  size_t len;
  unsigned char *orig = fresh_entry(&f, &len);
  unsigned char *bad = malloc(len + 64);
  char path[512];
  entry_path(&f, 0, path, sizeof path);
  struct {
    const char *what;
    size_t off;
    int reason;
  } cases[] = {
      {"wrong magic", 0, TIRX__STORE_CORRUPT_MAGIC},
      {"format version + 1", 8, TIRX__STORE_CORRUPT_VERSION},
      {"arch length 0", 12, TIRX__STORE_CORRUPT_LENGTH},
      {"arch length 64", 12, TIRX__STORE_CORRUPT_LENGTH},
      {"another key in the echo", 16, TIRX__STORE_CORRUPT_KEY},
      {"nvrtc major 13", 32, TIRX__STORE_CORRUPT_NVRTC},
      {"nvrtc minor 9", 36, TIRX__STORE_CORRUPT_NVRTC},
      {"huge metadata length", 40, TIRX__STORE_CORRUPT_LENGTH},
      {"huge payload length", 48, TIRX__STORE_CORRUPT_LENGTH},
      {"payload length - 1", 48, TIRX__STORE_CORRUPT_LENGTH},
      {"payload length = 2^64 - 1", 48, TIRX__STORE_CORRUPT_LENGTH},
      {"arch sm_90b", 56, TIRX__STORE_CORRUPT_ARCH},
      {"arch with a control character", 56, TIRX__STORE_CORRUPT_ARCH},
      {"zero-filled payload", 62 + META, TIRX__STORE_CORRUPT_CHECKSUM},
  };
  int n = (int)(sizeof cases / sizeof cases[0]);
  for (int c = 0; c < n; c++) {
    memcpy(bad, orig, len);
    unsigned char *p = bad + cases[c].off;
    bool fix = true;
    switch (c) {
    case 0: memcpy(p, "TIRXTIRX", 8); break;
    case 1: p[0]++; break;
    case 2: memset(p, 0, 4); break;
    case 3: p[0] = 64; break;
    case 4: p[3] ^= 0x10; break;
    case 5: p[0] = 13; break;
    case 6: p[0] = 9; break;
    case 7: put_u64_le(p, (uint64_t)1 << 62); break;
    case 8: put_u64_le(p, (uint64_t)1 << 62); break;
    case 9: put_u64_le(p, PAYLOAD - 1); break;
    case 10: put_u64_le(p, UINT64_MAX); break;
    case 11: p[5] = 'b'; break;
    case 12: p[2] = '\n'; break;
    case 13: memset(p, 0, PAYLOAD); fix = false; break;
    default: break;
    }
    if (fix) fix_checksum(bad, len);
    tc_write_file(path, bad, len);
    expect_rejected(&f, 0, cases[c].reason, cases[c].what);
  }
  free(bad);
  free(orig);
  fx_close(&f);
}

Test(cache_store, foreign_and_mismatched_entries_are_detected) {
  fixture f;
  fx_open(&f);
  put_entry(&f, 1, 10, 100);
  put_entry(&f, 2, 10, 100);
  char p1[512], p2[512];
  entry_path(&f, 1, p1, sizeof p1);
  entry_path(&f, 2, p2, sizeof p2);
  /* Entry 2's file copied under entry 1's name: valid bytes for the wrong key. */
  size_t len;
  unsigned char *b2 = tc_read_file(p2, &len);
  tc_write_file(p1, b2, len);
  expect_rejected(&f, 1, TIRX__STORE_CORRUPT_KEY, "entry copied under another key's name");
  expect_hit(&f, 2, 10, 100);
  free(b2);

  /* A valid entry compiled for another arch or NVRTC than the caller asks for. */
  tirx__store_info other_arch = {"sm_90", 12, 8}, other_nvrtc = {"sm_90a", 12, 9};
  put_entry(&f, 3, 1, 2);
  expect_rejected_as(&f, 3, &other_arch, TIRX__STORE_CORRUPT_ARCH, false, "another arch");
  put_entry(&f, 3, 1, 2);
  expect_rejected_as(&f, 3, &other_nvrtc, TIRX__STORE_CORRUPT_NVRTC, false, "another NVRTC");
  fx_close(&f);
}

Test(cache_store, non_files_in_place_of_an_entry_are_detected) {
  fixture f;
  fx_open(&f);
  char path[512], outside[512], link_target[600];
  entry_path(&f, 0, path, sizeof path);

  cr_assert_eq(mkdir(path, 0700), 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_NOT_REGULAR, "an empty directory");

  /* A non-empty directory is removed with its contents (issue 18: it used to be counted as
   * removed and left there, so every process recompiled the key), without following a
   * symbolic link inside it; the next put publishes and hits. */
  cr_assert_eq(mkdir(path, 0700), 0);
  snprintf(link_target, sizeof link_target, "%s/inner", path);
  tc_write_file(link_target, "x", 1);
  snprintf(link_target, sizeof link_target, "%s/sub", path);
  cr_assert_eq(mkdir(link_target, 0700), 0);
  snprintf(link_target, sizeof link_target, "%s/sub/deeper", path);
  tc_write_file(link_target, "y", 1);
  snprintf(outside, sizeof outside, "%s/outside-dir", f.dir);
  cr_assert_eq(mkdir(outside, 0700), 0);
  snprintf(link_target, sizeof link_target, "%s/keep-me", outside);
  tc_write_file(link_target, "z", 1);
  char inlink[600];
  snprintf(inlink, sizeof inlink, "%s/sub/link", path);
  cr_assert_eq(symlink(outside, inlink), 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_NOT_REGULAR, "a non-empty directory");
  cr_assert(tc_exists(link_target), "a symlink inside the directory was followed");
  cr_assert_eq(counters(&f).corrupt_kept, 0);
  cr_assert(strstr(f.log.last, "removed a corrupt cache entry"), "%s", f.log.last);
  put_entry(&f, 0, META, PAYLOAD);
  expect_hit(&f, 0, META, PAYLOAD);
  unlink(path);
  tc_rmtree(outside);

  cr_assert_eq(mkfifo(path, 0600), 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_NOT_REGULAR, "a FIFO (must not block)");

  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) < sizeof sa.sun_path) {
    memcpy(sa.sun_path, path, strlen(path) + 1);
    cr_assert_eq(bind(sock, (struct sockaddr *)&sa, sizeof sa), 0, "%s", strerror(errno));
    expect_rejected(&f, 0, TIRX__STORE_CORRUPT_NOT_REGULAR, "a socket");
  }
  close(sock);

  /* A symlink to a valid entry (attacker bytes outside the cache) is not followed. */
  size_t len;
  unsigned char *valid = fresh_entry(&f, &len);
  snprintf(outside, sizeof outside, "%s/attacker.bin", f.dir);
  tc_write_file(outside, valid, len);
  unlink(path);
  cr_assert_eq(symlink(outside, path), 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_SYMLINK, "a symlink to a valid entry");
  cr_assert(tc_exists(outside), "the symlink's target must not be touched");
  cr_assert_eq(symlink("/nonexistent/nowhere", path), 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_SYMLINK, "a dangling symlink");

  /* A hard link (someone else's name for the same inode). */
  tc_write_file(path, valid, len);
  snprintf(link_target, sizeof link_target, "%s/hardlink", f.dir);
  cr_assert_eq(link(path, link_target), 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_LINKS, "a hard link");
  cr_assert(tc_exists(link_target));

  /* Wrong permissions. */
  tc_write_file(path, valid, len);
  cr_assert_eq(chmod(path, 0644), 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_MODE, "mode 0644");
  tc_write_file(path, valid, len);
  cr_assert_eq(chmod(path, 0), 0);
  if (geteuid() == 0) expect_rejected(&f, 0, TIRX__STORE_CORRUPT_MODE, "mode 0000");
  unlink(path);

  /* Zero length. */
  tc_write_file(path, "", 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_TOO_SMALL, "a zero-length file");
  free(valid);
  fx_close(&f);
}

Test(cache_store, entry_owned_by_another_user_is_detected) {
  if (geteuid() != 0) cr_skip_test("needs root to chown");
  fixture f;
  fx_open(&f);
  put_entry(&f, 0, 4, 4);
  char path[512];
  entry_path(&f, 0, path, sizeof path);
  cr_assert_eq(chown(path, 65534, 65534), 0);
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_OWNER, "owned by uid 65534");
  fx_close(&f);
}

Test(cache_store, oversized_file_is_rejected_before_reading) {
  char dir[256], root[300];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  fixture f;
  memset(&f, 0, sizeof f);
  snprintf(f.dir, sizeof f.dir, "%s", dir);
  snprintf(f.root, sizeof f.root, "%s", root);
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  o.fsync = false;
  o.max_entry_bytes = 1 << 20;
  cr_assert_eq(tirx__store_open(&o, &f.s), TIRX_OK);
  put_entry(&f, 0, 4, 4);
  char path[512];
  entry_path(&f, 0, path, sizeof path);
  cr_assert_eq(truncate(path, (1 << 20) + 1), 0); /* sparse */
  expect_rejected(&f, 0, TIRX__STORE_CORRUPT_TOO_LARGE, "larger than max_entry_bytes");
  fx_close(&f);
}

Test(cache_store, random_corruptions_are_all_detected) {
  fixture f;
  fx_open(&f);
  uint64_t seed = 0x5eed;
  char path[512];
  entry_path(&f, 0, path, sizeof path);
  int detected = 0;
  for (int t = 0; t < 1500; t++) {
    size_t meta = (size_t)test_rand_range(&seed, 0, 64);
    size_t payload = (size_t)test_rand_range(&seed, 0, 3000);
    put_entry(&f, 0, meta, payload);
    size_t len;
    unsigned char *orig = tc_read_file(path, &len);
    unsigned char *bad = malloc(len + 16);
    memcpy(bad, orig, len);
    size_t blen = len;
    switch (test_rand(&seed) % 5) {
    case 0: /* k random bit flips */
      for (int k = (int)test_rand_range(&seed, 1, 8); k > 0; k--)
        bad[test_rand(&seed) % len] ^= (unsigned char)(1u << (test_rand(&seed) % 8));
      break;
    case 1: /* one whole byte replaced */
      bad[test_rand(&seed) % len] ^= (unsigned char)test_rand_range(&seed, 1, 255);
      break;
    case 2: /* truncated */
      blen = (size_t)test_rand_range(&seed, 0, (int64_t)len - 1);
      break;
    case 3: { /* a zeroed range */
      size_t a = test_rand(&seed) % len, b = a + (size_t)test_rand_range(&seed, 1, 64);
      memset(bad + a, 0, (b > len ? len : b) - a);
      break;
    }
    default: /* appended bytes */
      blen = len + (size_t)test_rand_range(&seed, 1, 16);
      memset(bad + len, 0x5a, blen - len);
      break;
    }
    if (blen == len && memcmp(bad, orig, len) == 0) { /* the corruption undid itself */
      free(orig);
      free(bad);
      continue;
    }
    tc_write_file(path, bad, blen);
    char what[64];
    snprintf(what, sizeof what, "random corruption %d", t);
    expect_rejected(&f, 0, -1, what);
    detected++;
    free(orig);
    free(bad);
  }
  cr_assert_gt(detected, 1400);
  cr_assert_eq(counters(&f).corrupt_detected, (uint64_t)detected);
  fx_close(&f);
}

Test(cache_store, corrupt_entry_warns_once) {
  fixture f;
  fx_open(&f);
  char path[512];
  entry_path(&f, 0, path, sizeof path);
  for (int i = 0; i < 3; i++) {
    tc_write_file(path, "junk", 4);
    expect_rejected(&f, 0, TIRX__STORE_CORRUPT_TOO_SMALL, "junk");
  }
  cr_assert_eq(f.log.n, 1);
  char expect[1024];
  snprintf(expect, sizeof expect,
           "disk cache read: removed a corrupt cache entry '%s' (shorter than a header and "
           "checksum); it will be rebuilt",
           path);
  cr_assert_str_eq(f.log.last, expect);
  /* After rejection the key can be published again and hits. */
  put_entry(&f, 0, 2, 2);
  expect_hit(&f, 0, 2, 2);
  fx_close(&f);
}

/* ---- T6: permissions and poisoning ---- */

Test(cache_store, fresh_root_is_0700_and_entries_0600_whatever_the_umask) {
  static const mode_t masks[] = {0, 022, 0277};
  for (size_t m = 0; m < 3; m++) {
    char dir[256], root[320];
    tc_mkdtemp(dir, sizeof dir);
    snprintf(root, sizeof root, "%s/a/b/tirx", dir);
    mode_t old = umask(masks[m]);
    tirx__store *s = tc_open(root, NULL);
    tirx__cache_key k = tc_key(0);
    cr_assert_eq(tirx__store_put(s, &k, tc_info(), "m", 1, "p", 1), TIRX_OK);
    umask(old);
    struct stat st;
    cr_assert_eq(stat(root, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0700, "umask %03o: root mode %04o", masks[m],
                 st.st_mode & 07777);
    char path[512];
    tc_entry_path(path, sizeof path, root, &k);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0600, "umask %03o: entry mode %04o", masks[m],
                 st.st_mode & 07777);
    cr_assert_eq(st.st_uid, geteuid());
    tirx__store_entry e;
    cr_assert(tirx__store_get(s, &k, tc_info(), &e));
    tirx__store_entry_free(&e);
    tirx__store_close(s);
    tc_rmtree(dir);
  }
}

/* Opens root expecting refusal with message msg; checks the store is disabled and inert. */
static void expect_refused(const char *root, const char *msg) {
  tc_log log;
  memset(&log, 0, sizeof log);
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  o.log = tc_log_fn;
  o.log_user = &log;
  tirx__store *s = NULL;
  struct stat rst;
  bool is_dir = stat(root, &rst) == 0 && S_ISDIR(rst.st_mode);
  int files_before = is_dir ? tc_count_files(root) : 0;
  expect_error(tirx__store_open(&o, &s), TIRX_E_IO, msg);
  cr_assert_not_null(s, "a refused open still returns a (disabled) store");
  cr_assert(!tirx__store_enabled(s));
  cr_assert(!tirx__store_writable(s));
  cr_assert_str_eq(tirx__store_disabled_reason(s), msg);
  cr_assert_eq(log.n, 1);
  cr_assert_str_eq(log.last, msg);
  tirx__cache_key k = tc_key(0);
  cr_assert_eq(tirx__store_put(s, &k, tc_info(), "m", 1, "p", 1), TIRX_E_NOT_SUPPORTED);
  tirx__store_entry e;
  cr_assert(!tirx__store_get(s, &k, tc_info(), &e));
  tirx__store_verify_counts vc;
  cr_assert_eq(tirx__store_verify(s, &vc), TIRX_E_NOT_SUPPORTED);
  cr_assert_eq(tirx__store_clear(s, NULL), TIRX_E_NOT_SUPPORTED);
  cr_assert_eq(tirx__store_list(s, NULL, NULL, NULL), TIRX_E_NULL_ARG);
  if (is_dir) cr_assert_eq(tc_count_files(root), files_before, "a refused store wrote files");
  tirx__store_counters c;
  tirx__store_counters_get(s, &c);
  cr_assert_eq(c.misses, 1);
  tirx__store_close(s);
}

Test(cache_store, root_writable_by_others_is_refused) {
  char dir[256], root[320], msg[1024];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  cr_assert_eq(mkdir(root, 0700), 0);
  static const mode_t bad[] = {0777, 0770, 0702, 01777};
  for (size_t i = 0; i < 4; i++) {
    cr_assert_eq(chmod(root, bad[i]), 0);
    snprintf(msg, sizeof msg,
             "disk cache open: cache directory '%s' is writable by group or others (mode "
             "%04o); the disk cache is disabled (chmod 700 it to use it)",
             root, (unsigned)bad[i]);
    expect_refused(root, msg);
  }
  /* Readable but not writable by others is accepted. */
  cr_assert_eq(chmod(root, 0755), 0);
  tirx__store *s = tc_open(root, NULL);
  tirx__store_close(s);
  tc_rmtree(dir);
}

Test(cache_store, root_owned_by_another_user_is_refused) {
  if (geteuid() != 0) cr_skip_test("needs root to chown");
  char dir[256], root[320], msg[1024];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  cr_assert_eq(mkdir(root, 0700), 0);
  cr_assert_eq(chown(root, 65534, 65534), 0);
  snprintf(msg, sizeof msg,
           "disk cache open: cache directory '%s' is owned by uid 65534, not by this "
           "process's uid 0; the disk cache is disabled",
           root);
  expect_refused(root, msg);
  tc_rmtree(dir);
}

Test(cache_store, root_that_is_a_symlink_or_a_file_is_refused) {
  char dir[256], root[320], real[320], msg[1024];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  snprintf(real, sizeof real, "%s/real", dir);
  cr_assert_eq(mkdir(real, 0700), 0);
  cr_assert_eq(symlink(real, root), 0);
  snprintf(msg, sizeof msg,
           "disk cache open: cache directory '%s' is a symbolic link; give the real path; the "
           "disk cache is disabled",
           root);
  expect_refused(root, msg);
  cr_assert_eq(tc_count_files(real), 0);

  char file[320];
  snprintf(file, sizeof file, "%s/file", dir);
  tc_write_file(file, "x", 1);
  snprintf(msg, sizeof msg,
           "disk cache open: cannot open cache directory '%s': Not a directory; the disk cache "
           "is disabled",
           file);
  expect_refused(file, msg);
  tc_rmtree(dir);
}

Test(cache_store, planted_symlink_at_the_entry_path_is_replaced_not_followed_by_put) {
  fixture f;
  fx_open(&f);
  char path[512], target[512];
  entry_path(&f, 0, path, sizeof path);
  snprintf(target, sizeof target, "%s/victim", f.dir);
  tc_write_file(target, "precious", 8);
  cr_assert_eq(symlink(target, path), 0);
  put_entry(&f, 0, 3, 30);
  size_t len;
  unsigned char *t = tc_read_file(target, &len);
  cr_assert_eq(len, 8);
  cr_assert_eq(memcmp(t, "precious", 8), 0, "put wrote through a symlink");
  free(t);
  struct stat st;
  cr_assert_eq(lstat(path, &st), 0);
  cr_assert(S_ISREG(st.st_mode));
  expect_hit(&f, 0, 3, 30);
  fx_close(&f);
}

Test(cache_store, planted_symlink_at_the_temp_path_is_not_followed) {
  fixture f;
  fx_open(&f);
  tirx__cache_key k = tc_key(0);
  char hex[TIRX__CACHE_KEY_HEX + 1], tmp[512], target[512];
  tirx__cache_key_hex(&k, hex);
  snprintf(tmp, sizeof tmp, "%s/.tmp.%s.%016llx", f.root, hex, 0x1234ull);
  snprintf(target, sizeof target, "%s/victim", f.dir);
  tc_write_file(target, "precious", 8);
  cr_assert_eq(symlink(target, tmp), 0);
  /* A dangling one too: O_CREAT through it would create the target. */
  char tmp2[512], target2[512];
  snprintf(tmp2, sizeof tmp2, "%s/.tmp.%s.%016llx", f.root, hex, 0x5678ull);
  snprintf(target2, sizeof target2, "%s/created", f.dir);
  cr_assert_eq(symlink(target2, tmp2), 0);

  tirx__store_fault_next_nonce(0x1234);
  put_entry(&f, 0, 3, 30);
  tirx__store_fault_next_nonce(0x5678);
  put_entry(&f, 0, 3, 30);
  size_t len;
  unsigned char *t = tc_read_file(target, &len);
  cr_assert_eq(len, 8);
  cr_assert_eq(memcmp(t, "precious", 8), 0, "put wrote through a planted temp symlink");
  free(t);
  cr_assert(!tc_exists(target2), "put created a file through a dangling temp symlink");
  expect_hit(&f, 0, 3, 30);
  fx_close(&f);
}

Test(cache_store, directory_resolution_from_the_environment) {
  char dir[256], want[512];
  tc_mkdtemp(dir, sizeof dir);
  char tdir[300], xdg[300], home[300];
  snprintf(tdir, sizeof tdir, "%s/explicit-env", dir);
  snprintf(xdg, sizeof xdg, "%s/xdg", dir);
  snprintf(home, sizeof home, "%s/home", dir);

  setenv("TIRX_CACHE_DIR", tdir, 1);
  setenv("XDG_CACHE_HOME", xdg, 1);
  setenv("HOME", home, 1);
  tirx__store *s = NULL;
  cr_assert_eq(tirx__store_open(NULL, &s), TIRX_OK, "%s", tirx_last_error());
  cr_assert_str_eq(tirx__store_path(s), tdir);
  tirx__store_close(s);

  /* An explicit path wins over the environment. */
  tirx__store_options o;
  tirx__store_options_init(&o);
  snprintf(want, sizeof want, "%s/given", dir);
  o.path = want;
  cr_assert_eq(tirx__store_open(&o, &s), TIRX_OK);
  cr_assert_str_eq(tirx__store_path(s), want);
  tirx__store_close(s);

  setenv("TIRX_CACHE_DIR", "", 1); /* empty counts as unset */
  cr_assert_eq(tirx__store_open(NULL, &s), TIRX_OK);
  snprintf(want, sizeof want, "%s/tirx", xdg);
  cr_assert_str_eq(tirx__store_path(s), want);
  tirx__store_close(s);

  unsetenv("TIRX_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "relative/path", 1); /* ignored, per the XDG spec */
  cr_assert_eq(tirx__store_open(NULL, &s), TIRX_OK);
  snprintf(want, sizeof want, "%s/.cache/tirx", home);
  cr_assert_str_eq(tirx__store_path(s), want);
  struct stat st;
  snprintf(want, sizeof want, "%s/.cache", home);
  cr_assert_eq(stat(want, &st), 0);
  cr_assert_eq(st.st_mode & 077, 0, "parents are created private too");
  tirx__store_close(s);

  o.path = "";
  expect_error(tirx__store_open(&o, &s), TIRX_E_IO,
               "disk cache open: the cache path is empty; the disk cache is disabled");
  cr_assert(!tirx__store_enabled(s));
  cr_assert_str_eq(tirx__store_path(s), "");
  tirx__store_close(s);
  tc_rmtree(dir);
}

/* ---- eviction and the temp sweep ---- */

Test(cache_store, lru_eviction_removes_the_least_recently_used) {
  char dir[256], root[320];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  fixture f;
  memset(&f, 0, sizeof f);
  snprintf(f.dir, sizeof f.dir, "%s", dir);
  snprintf(f.root, sizeof f.root, "%s", root);
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  o.fsync = false;
  size_t entry = TIRX__STORE_HEADER_BYTES + 6 + 0 + 1000 + 8; /* 1070 bytes per file */
  o.max_bytes = 5000;                                         /* four fit, five do not */
  cr_assert_eq(tirx__store_open(&o, &f.s), TIRX_OK);
  for (int i = 0; i < 4; i++) put_entry(&f, i, 0, 1000);
  cr_assert_eq(counters(&f).evictions, 0);
  char path[512];
  for (int i = 0; i < 4; i++) {
    entry_path(&f, i, path, sizeof path);
    tc_set_mtime(path, 1000000 + i * 1000); /* 0 oldest ... 3 newest */
  }
  expect_hit(&f, 0, 0, 1000); /* a hit makes entry 0 the most recent */
  entry_path(&f, 0, path, sizeof path);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_gt(st.st_mtime, 2000000, "a hit touches the mtime");

  put_entry(&f, 4, 0, 1000); /* 5 x 1070 > 5000: evict down to 4500, i.e. one entry */
  cr_assert_eq(counters(&f).evictions, 1);
  bool present[5];
  for (int i = 0; i < 5; i++) {
    entry_path(&f, i, path, sizeof path);
    present[i] = tc_exists(path);
  }
  cr_assert(present[0] && !present[1] && present[2] && present[3] && present[4],
            "expected entry 1 (least recently used) evicted: %d %d %d %d %d", present[0],
            present[1], present[2], present[3], present[4]);
  (void)entry;

  /* Far over the limit: evict down to 90% of it. */
  for (int i = 5; i < 12; i++) put_entry(&f, i, 0, 1000);
  int left = 0;
  for (int i = 0; i < 12; i++) {
    entry_path(&f, i, path, sizeof path);
    left += tc_exists(path);
  }
  cr_assert_eq(left, 4);
  entry_path(&f, 11, path, sizeof path);
  cr_assert(tc_exists(path), "the newest entry survives");
  cr_assert_eq(counters(&f).evictions, 8);
  fx_close(&f);
}

Test(cache_store, stale_temp_files_are_swept_fresh_ones_kept) {
  char dir[256], root[320], old1[400], old2[400], fresh[400], other[400];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  cr_assert_eq(mkdir(root, 0700), 0);
  snprintf(old1, sizeof old1, "%s/.tmp.deadbeef.0000000000000001", root);
  snprintf(old2, sizeof old2, "%s/.tmp.crashed", root);
  snprintf(fresh, sizeof fresh, "%s/.tmp.writing.0000000000000002", root);
  snprintf(other, sizeof other, "%s/README", root);
  tc_write_file(old1, "partial", 7);
  tc_write_file(old2, "", 0);
  tc_write_file(fresh, "in flight", 9);
  tc_write_file(other, "not ours", 8);
  time_t now = time(NULL);
  tc_set_mtime(old1, now - 601);
  tc_set_mtime(old2, now - 100000);
  tc_set_mtime(other, now - 100000);
  tirx__store *s = tc_open(root, NULL); /* open runs the sweep */
  tirx__store_counters c;
  tirx__store_counters_get(s, &c);
  cr_assert_eq(c.tmp_swept, 2);
  cr_assert(!tc_exists(old1) && !tc_exists(old2));
  cr_assert(tc_exists(fresh), "a writer's fresh temp file must survive");
  cr_assert(tc_exists(other), "files with other names are left alone");
  tirx__store_close(s);

  /* A shorter age applies through the options. */
  tc_set_mtime(fresh, now - 61);
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  o.tmp_max_age_s = 60;
  cr_assert_eq(tirx__store_open(&o, &s), TIRX_OK);
  cr_assert(!tc_exists(fresh));
  tirx__store_close(s);
  tc_rmtree(dir);
}

/* ---- list, verify, clear ---- */

typedef struct list_acc {
  int n, ok, sized;
  uint64_t payload_total;
} list_acc;

static bool list_cb(void *user, const tirx__store_item *it) {
  list_acc *a = user;
  a->n++;
  if (it->header_ok) {
    a->ok++;
    a->payload_total += it->payload_len;
    cr_assert_str_eq(it->arch, "sm_90a");
    cr_assert_eq(it->nvrtc_major, 12);
    if (it->file_bytes == TIRX__STORE_HEADER_BYTES + 6 + it->meta_len + it->payload_len + 8)
      a->sized++;
    char hex[TIRX__CACHE_KEY_HEX + 1];
    tirx__cache_key_hex(&it->key, hex);
    cr_assert_str_eq(hex, it->name);
  }
  return true;
}

static bool list_stop(void *user, const tirx__store_item *it) {
  (void)it;
  return ++*(int *)user < 3;
}

Test(cache_store, list_verify_and_clear) {
  fixture f;
  fx_open(&f);
  for (int i = 0; i < 20; i++) put_entry(&f, i, (size_t)i, 100 + (size_t)i);
  char path[512], other[512], tmp[512];
  snprintf(other, sizeof other, "%s/README", f.root);
  tc_write_file(other, "keep", 4);
  snprintf(tmp, sizeof tmp, "%s/.tmp.x.y", f.root);
  tc_write_file(tmp, "t", 1);

  list_acc acc = {0};
  size_t n = 0;
  cr_assert_eq(tirx__store_list(f.s, list_cb, &acc, &n), TIRX_OK);
  cr_assert_eq(n, 20);
  cr_assert_eq(acc.ok, 20);
  cr_assert_eq(acc.payload_total, 20 * 100 + 190);
  int stop = 0;
  cr_assert_eq(tirx__store_list(f.s, list_stop, &stop, &n), TIRX_OK);
  cr_assert_eq(n, 3);

  /* Corrupt five entries in different ways; verify finds and removes exactly those. */
  entry_path(&f, 0, path, sizeof path);
  tc_write_file(path, "", 0);
  entry_path(&f, 1, path, sizeof path);
  cr_assert_eq(truncate(path, 80), 0);
  entry_path(&f, 2, path, sizeof path);
  size_t len;
  unsigned char *b = tc_read_file(path, &len);
  b[len / 2] ^= 1;
  tc_write_file(path, b, len);
  free(b);
  char p4[512];
  entry_path(&f, 3, path, sizeof path);
  entry_path(&f, 4, p4, sizeof p4);
  b = tc_read_file(p4, &len);
  tc_write_file(path, b, len); /* foreign key */
  free(b);
  entry_path(&f, 5, path, sizeof path);
  unlink(path);
  cr_assert_eq(mkfifo(path, 0600), 0);

  acc = (list_acc){0};
  cr_assert_eq(tirx__store_list(f.s, list_cb, &acc, &n), TIRX_OK);
  cr_assert_eq(acc.n, 20);
  /* list reads headers only: the empty file and the FIFO have none, the truncated one has the
   * wrong size, the flipped and foreign ones look fine until verified. */
  cr_assert_eq(acc.ok, 18);
  cr_assert_eq(acc.sized, 17);

  tirx__store_verify_counts vc;
  cr_assert_eq(tirx__store_verify(f.s, &vc), TIRX_OK);
  cr_assert_eq(vc.checked, 20);
  cr_assert_eq(vc.ok, 15);
  cr_assert_eq(vc.corrupt, 5);
  cr_assert_eq(counters(&f).corrupt_detected, 5);
  cr_assert_eq(counters(&f).hits, 0, "verify is not a lookup");
  cr_assert_eq(tirx__store_verify(f.s, &vc), TIRX_OK);
  cr_assert_eq(vc.checked, 15);
  cr_assert_eq(vc.corrupt, 0);
  for (int i = 6; i < 20; i++) expect_hit(&f, i, (size_t)i, 100 + (size_t)i);

  uint64_t removed = 0;
  cr_assert_eq(tirx__store_clear(f.s, &removed), TIRX_OK);
  cr_assert_eq(removed, 16, "15 entries and 1 temp file");
  cr_assert_eq(tc_count_files(f.root), 1);
  cr_assert(tc_exists(other));
  cr_assert_eq(tirx__store_list(f.s, list_cb, &acc, &n), TIRX_OK);
  cr_assert_eq(n, 0);

  expect_error(tirx__store_list(NULL, list_cb, NULL, NULL), TIRX_E_NULL_ARG,
               "disk cache list: s is NULL");
  expect_error(tirx__store_list(f.s, NULL, NULL, NULL), TIRX_E_NULL_ARG,
               "disk cache list: fn is NULL");
  expect_error(tirx__store_verify(f.s, NULL), TIRX_E_NULL_ARG,
               "disk cache verify: out is NULL");
  expect_error(tirx__store_clear(NULL, NULL), TIRX_E_NULL_ARG, "disk cache clear: s is NULL");
  fx_close(&f);
}

/* A directory at an entry's name that cannot be removed is reported as kept, never as
 * removed: get misses and says so, verify counts it as kept, clear removes everything else and
 * names what it could not remove. Removal failure is injected (tests run as root). */
Test(cache_store, unremovable_directory_is_reported_not_counted_as_removed) {
  fixture f;
  fx_open(&f);
  put_entry(&f, 1, 4, 10);
  char path[512], inner[600];
  entry_path(&f, 0, path, sizeof path);
  cr_assert_eq(mkdir(path, 0700), 0);
  snprintf(inner, sizeof inner, "%s/inner", path);
  tc_write_file(inner, "x", 1);

  tirx__store_fault_set(TIRX__SYS_UNLINKAT, 0, EACCES, true);
  expect_rejected_as(&f, 0, NULL, TIRX__STORE_CORRUPT_NOT_REGULAR, true, "an unremovable dir");
  tirx__store_fault_set(0, -1, 0, false);
  cr_assert(tc_exists(inner));
  cr_assert_eq(counters(&f).corrupt_kept, 1);
  char want[1200];
  snprintf(want, sizeof want,
           "disk cache read: cannot remove the corrupt cache entry '%s' (not a regular file "
           "(directory, FIFO, socket, device)): Permission denied; it is skipped and its key is "
           "compiled without the disk cache",
           path);
  cr_assert_str_eq(f.log.last, want);

  tirx__store_verify_counts vc;
  tirx__store_fault_set(TIRX__SYS_UNLINKAT, 0, EACCES, true);
  cr_assert_eq(tirx__store_verify(f.s, &vc), TIRX_OK);
  tirx__store_fault_set(0, -1, 0, false);
  cr_assert_eq(vc.checked, 2);
  cr_assert_eq(vc.ok, 1);
  cr_assert_eq(vc.corrupt, 0);
  cr_assert_eq(vc.kept, 1);

  /* clear: the good entry goes, the directory stays and is named. */
  uint64_t removed = 99;
  char hex[TIRX__CACHE_KEY_HEX + 1];
  tirx__cache_key k0 = tc_key(0);
  tirx__cache_key_hex(&k0, hex);
  tirx__store_fault_set(TIRX__SYS_UNLINKAT, 2, EACCES, true); /* entry 1 goes, the rest fails */
  tirx_status st = tirx__store_clear(f.s, &removed);
  tirx__store_fault_set(0, -1, 0, false);
  cr_assert_eq(st, TIRX_E_IO);
  /* Directory order decides whether entry 1 is unlinked before the faults start. */
  cr_assert(removed <= 1);
  snprintf(want, sizeof want,
           "disk cache clear: removed %d of 2 entries from '%s'; cannot remove '%s'%s: "
           "Permission denied",
           (int)removed, f.root, hex, removed ? "" : " (and others)");
  cr_assert_str_eq(tirx_last_error(), want);
  cr_assert(tc_exists(path));

  /* Without the fault, clear empties the cache, the directory's contents included. */
  cr_assert_eq(tirx__store_clear(f.s, &removed), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tc_count_files(f.root), 0);
  fx_close(&f);
}

Test(cache_store, corrupt_reason_names) {
  cr_assert_str_eq(tirx__store_corrupt_name(TIRX__STORE_CORRUPT_CHECKSUM), "CHECKSUM");
  cr_assert_str_eq(tirx__store_corrupt_str(TIRX__STORE_CORRUPT_KEY),
                   "key echo differs from the requested key");
  cr_assert_str_eq(tirx__store_corrupt_name(TIRX__STORE_CORRUPT_COUNT), "UNKNOWN");
  for (int r = 0; r < TIRX__STORE_CORRUPT_COUNT; r++)
    cr_assert_neq(strcmp(tirx__store_corrupt_name((tirx__store_corrupt)r), "UNKNOWN"), 0);
}
