/* Shared fixtures for the cache tests: scratch directories, a logging store, file surgery. */
#ifndef TIRX_TEST_CACHE_HELPERS_H
#define TIRX_TEST_CACHE_HELPERS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../helpers.h"
#include "cache/key.h"
#include "cache/store.h"

/* A fresh scratch directory (0700, under $TMPDIR or /tmp); path written into buf. */
static inline void tc_mkdtemp(char *buf, size_t len) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, len, "%s/tirx-cache-test-XXXXXX", t && t[0] ? t : "/tmp");
  cr_assert_not_null(mkdtemp(buf), "mkdtemp: %s", strerror(errno));
}

/* rm -rf (no symlinks followed), restoring write permission first where tests took it away. */
static inline void tc_rmtree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path);
    return;
  }
  chmod(path, 0700);
  DIR *d = opendir(path);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
      size_t n = strlen(path) + strlen(de->d_name) + 2;
      char *child = malloc(n);
      snprintf(child, n, "%s/%s", path, de->d_name);
      tc_rmtree(child);
      free(child);
    }
    closedir(d);
  }
  rmdir(path);
}

/* Log capture: counts messages and keeps the last one. */
typedef struct tc_log {
  atomic_int n;
  char last[2048];
} tc_log;

static inline void tc_log_fn(void *user, const char *msg) {
  tc_log *l = user;
  atomic_fetch_add(&l->n, 1);
  snprintf(l->last, sizeof l->last, "%s", msg);
}

/* Opens a store on path with fsync off (tests do not need durability), asserting success. */
static inline tirx__store *tc_open(const char *path, tc_log *log) {
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = path;
  o.fsync = false;
  if (log) {
    o.log = tc_log_fn;
    o.log_user = log;
  }
  tirx__store *s = NULL;
  tirx_status st = tirx__store_open(&o, &s);
  cr_assert_eq(st, TIRX_OK, "disk cache open: %s", tirx_last_error());
  cr_assert(tirx__store_enabled(s));
  return s;
}

/* A key derived from a small integer. */
static inline tirx__cache_key tc_key(int i) {
  char src[64];
  snprintf(src, sizeof src, "__global__ void k%d() {}", i);
  tirx__cache_key_input in;
  tirx__cache_key_input_init(&in);
  in.source = src;
  in.source_len = strlen(src);
  in.nvrtc_major = 12;
  in.nvrtc_minor = 8;
  in.arch = "sm_90a";
  tirx__cache_key k;
  cr_assert_eq(tirx__cache_key_compute(&in, &k), TIRX_OK);
  return k;
}

/* The arch and NVRTC version every test entry is compiled for. */
static inline const tirx__store_info *tc_info(void) {
  static const tirx__store_info info = {"sm_90a", 12, 8};
  return &info;
}

/* Deterministic payload bytes for (key index, length). */
static inline void tc_fill(unsigned char *p, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(test_rand(&s) >> 56);
}

/* Path of an entry (or any name) in dir. */
static inline void tc_entry_path(char *buf, size_t len, const char *dir, const tirx__cache_key *k) {
  char hex[TIRX__CACHE_KEY_HEX + 1];
  tirx__cache_key_hex(k, hex);
  snprintf(buf, len, "%s/%s", dir, hex);
}

/* Number of names in dir starting with ".tmp.". */
static inline int tc_count_tmp(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (strncmp(de->d_name, ".tmp.", 5) == 0) n++;
  closedir(d);
  return n;
}

/* Number of names in dir other than . and .. */
static inline int tc_count_files(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* Whole-file read (malloc'ed) and write (mode 0600). */
static inline unsigned char *tc_read_file(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY);
  cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
  struct stat st;
  cr_assert_eq(fstat(fd, &st), 0);
  unsigned char *p = malloc((size_t)st.st_size + 1);
  cr_assert_eq(read(fd, p, (size_t)st.st_size), (ssize_t)st.st_size);
  close(fd);
  *len = (size_t)st.st_size;
  return p;
}

static inline void tc_write_file(const char *path, const void *p, size_t len) {
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
  cr_assert_eq(fchmod(fd, 0600), 0);
  cr_assert_eq(write(fd, p, len), (ssize_t)len);
  close(fd);
}

static inline bool tc_exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* Sets a file's atime and mtime to `sec` seconds since the epoch (no symlink following). */
static inline void tc_set_mtime(const char *path, time_t sec) {
  struct timespec ts[2] = {{sec, 0}, {sec, 0}};
  cr_assert_eq(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0, "utimensat %s: %s", path,
               strerror(errno));
}

#endif
