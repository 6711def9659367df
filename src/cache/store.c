/* The on-disk cubin store: publish by rename, validate before returning bytes (see store.h). */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

static const unsigned char store_magic[8] = {0x89, 'T', 'I', 'R', 'X', '\r', '\n', 0x1a};

/* Conditions that are reported once per store. */
enum {
  WARN_REFUSED = 1u << 0,
  WARN_WRITES_OFF = 1u << 1,
  WARN_PUBLISH = 1u << 2,
  WARN_CORRUPT = 1u << 3,
  WARN_READ = 1u << 4,
  WARN_LIMIT = 1u << 5,
  WARN_KEPT = 1u << 6,
  WARN_CLAIM = 1u << 7,
};

enum { REASON_MAX = 1024, TMP_NAME_MAX = 64 };

static const char tmp_prefix[] = ".tmp.";

struct tirx__store {
  int root_fd; /* -1 when disabled */
  bool enabled;
  uid_t uid;
  char *path;
  char reason[REASON_MAX];
  uint64_t max_bytes, max_entry_bytes;
  int tmp_max_age_s;
  bool fsync;
  tirx__store_log_fn log;
  void *log_user;
  atomic_bool writes_off;
  atomic_uint warned;
  _Atomic uint64_t hits, misses, puts, publish_failed, evictions, tmp_swept, corrupt_kept,
      claims, claim_waited_hits, claim_timeouts;
  _Atomic uint64_t corrupt[TIRX__STORE_CORRUPT_COUNT];
};

/* ------------------------------------------------------------------------------------------ */
/* The system call shim and its fault injection                                                */
/* ------------------------------------------------------------------------------------------ */

static _Thread_local struct {
  unsigned ops;
  int64_t nth;
  int err;
  bool sticky;
  uint64_t calls;
  bool has_nonce;
  uint64_t nonce;
} fault;

void tirx__store_fault_set(unsigned ops, int64_t nth, int err, bool sticky) {
  fault.ops = ops;
  fault.nth = nth;
  fault.err = err;
  fault.sticky = sticky;
  fault.calls = 0;
}

uint64_t tirx__store_fault_calls(void) { return fault.calls; }

void tirx__store_fault_next_nonce(uint64_t nonce) {
  fault.has_nonce = true;
  fault.nonce = nonce;
}

/* True (with errno set) when this call is the one to fail. */
static bool fault_hit(unsigned op) {
  if (TIRX_LIKELY(!(fault.ops & op))) return false;
  uint64_t i = fault.calls++;
  if (fault.nth < 0) return false;
  uint64_t n = (uint64_t)fault.nth;
  if (i == n || (fault.sticky && i > n)) {
    errno = fault.err;
    return true;
  }
  return false;
}

static int sys_openat(int dfd, const char *name, int flags, mode_t mode) {
  if (fault_hit(TIRX__SYS_OPENAT)) return -1;
  return openat(dfd, name, flags, mode);
}
static ssize_t sys_write(int fd, const void *buf, size_t n) {
  if (fault_hit(TIRX__SYS_WRITE)) return -1;
  return write(fd, buf, n);
}
static ssize_t sys_pread(int fd, void *buf, size_t n, off_t off) {
  if (fault_hit(TIRX__SYS_PREAD)) return -1;
  return pread(fd, buf, n, off);
}
static int sys_fstat(int fd, struct stat *st) {
  if (fault_hit(TIRX__SYS_FSTAT)) return -1;
  return fstat(fd, st);
}
static int sys_fsync(int fd) {
  if (fault_hit(TIRX__SYS_FSYNC)) return -1;
  return fsync(fd);
}
static int sys_fchmod(int fd, mode_t mode) {
  if (fault_hit(TIRX__SYS_FCHMOD)) return -1;
  return fchmod(fd, mode);
}
/* The descriptor is released even when the injected failure is reported (as Linux does). */
static int sys_close(int fd) {
  int r = close(fd);
  if (fault_hit(TIRX__SYS_CLOSE)) return -1;
  return r;
}
static int sys_renameat(int odfd, const char *oname, int ndfd, const char *nname) {
  if (fault_hit(TIRX__SYS_RENAMEAT)) return -1;
  return renameat(odfd, oname, ndfd, nname);
}
static int sys_unlinkat(int dfd, const char *name, int flags) {
  if (fault_hit(TIRX__SYS_UNLINKAT)) return -1;
  return unlinkat(dfd, name, flags);
}
static int sys_futimens(int fd) {
  if (fault_hit(TIRX__SYS_FUTIMENS)) return -1;
  return futimens(fd, NULL);
}
static int sys_mkdir(const char *path, mode_t mode) {
  if (fault_hit(TIRX__SYS_MKDIR)) return -1;
  return mkdir(path, mode);
}

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void count(_Atomic uint64_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

static void warn_once(tirx__store *s, unsigned cond, const char *fmt, ...) TIRX_PRINTF(3, 4);
static void warn_once(tirx__store *s, unsigned cond, const char *fmt, ...) {
  if (atomic_fetch_or(&s->warned, cond) & cond) return;
  if (!s->log) return;
  char msg[REASON_MAX + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  s->log(s->log_user, msg);
}

/* Errors after which this store stops writing: the directory cannot take more entries. */
static bool is_persistent_write_error(int e) {
  return e == EROFS || e == ENOSPC || e == EDQUOT || e == EACCES || e == EPERM || e == EFBIG;
}

static bool arch_ok(const char *arch, size_t len) {
  if (len == 0 || len > TIRX__STORE_ARCH_MAX) return false;
  for (size_t i = 0; i < len; i++)
    if (arch[i] < 0x21 || arch[i] > 0x7e) return false;
  return true;
}

/* An entry's file name: exactly the key's lowercase hex. */
static bool is_key_name(const char *name, tirx__cache_key *key) {
  tirx__cache_key k;
  if (!tirx__cache_key_parse(name, &k)) return false;
  char hex[TIRX__CACHE_KEY_HEX + 1];
  tirx__cache_key_hex(&k, hex);
  if (strcmp(hex, name) != 0) return false;
  if (key) *key = k;
  return true;
}

static bool is_tmp_name(const char *name) {
  return strncmp(name, tmp_prefix, sizeof tmp_prefix - 1) == 0;
}

static const char lock_prefix[] = ".lock.";

static bool is_lock_name(const char *name) {
  return strncmp(name, lock_prefix, sizeof lock_prefix - 1) == 0;
}

/* Removes the lock file name when no process holds its lock (flock LOCK_NB) and it is still
 * the file that was locked. Returns true when it was removed. */
static bool remove_unheld_lock(int root_fd, const char *name) {
  int fd = sys_openat(root_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
  if (fd < 0) return false;
  bool removed = false;
  struct stat a, b;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 &&
      fstatat(root_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
      a.st_ino == b.st_ino)
    removed = sys_unlinkat(root_fd, name, 0) == 0;
  sys_close(fd);
  return removed;
}

static uint64_t next_nonce(void) {
  if (fault.has_nonce) {
    fault.has_nonce = false;
    return fault.nonce;
  }
  uint64_t v;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v) return v;
  static _Atomic uint64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t mix[4] = {(uint64_t)getpid(), atomic_fetch_add(&counter, 1), (uint64_t)ts.tv_sec,
                     (uint64_t)ts.tv_nsec};
  return XXH3_64bits(mix, sizeof mix);
}

/* ------------------------------------------------------------------------------------------ */
/* Options, names                                                                              */
/* ------------------------------------------------------------------------------------------ */

void tirx__store_options_init(tirx__store_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->fsync = true;
}

const char *tirx__store_corrupt_name(tirx__store_corrupt r) {
  switch (r) {
#define TIRX__STORE_CORRUPT_NAME_(name, text) \
  case TIRX__STORE_CORRUPT_##name:            \
    return #name;
    TIRX__STORE_CORRUPT_MAP(TIRX__STORE_CORRUPT_NAME_)
#undef TIRX__STORE_CORRUPT_NAME_
  case TIRX__STORE_CORRUPT_COUNT:
    break;
  }
  return "UNKNOWN";
}

const char *tirx__store_corrupt_str(tirx__store_corrupt r) {
  switch (r) {
#define TIRX__STORE_CORRUPT_STR_(name, text) \
  case TIRX__STORE_CORRUPT_##name:           \
    return text;
    TIRX__STORE_CORRUPT_MAP(TIRX__STORE_CORRUPT_STR_)
#undef TIRX__STORE_CORRUPT_STR_
  case TIRX__STORE_CORRUPT_COUNT:
    break;
  }
  return "unknown reason";
}

/* ------------------------------------------------------------------------------------------ */
/* Open and close                                                                              */
/* ------------------------------------------------------------------------------------------ */

static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *p = malloc(la + lb + 2);
  if (!p) return NULL;
  memcpy(p, a, la);
  size_t n = la;
  if (n == 0 || p[n - 1] != '/') p[n++] = '/';
  memcpy(p + n, b, lb + 1);
  return p;
}

static char *dup_str(const char *a) {
  size_t n = strlen(a) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, a, n);
  return p;
}

static char *oom_check(char *p, char *why, size_t why_len) {
  if (!p) snprintf(why, why_len, "out of memory");
  return p;
}

/* The root's path (malloc'ed), or NULL with why filled in. */
static char *resolve_path(const tirx__store_options *opt, char *why, size_t why_len) {
  if (opt && opt->path) {
    if (!opt->path[0]) {
      snprintf(why, why_len, "the cache path is empty");
      return NULL;
    }
    return oom_check(dup_str(opt->path), why, why_len);
  }
  const char *env = getenv("TIRX_CACHE_DIR");
  if (env && env[0]) return oom_check(dup_str(env), why, why_len);
  env = getenv("XDG_CACHE_HOME");
  if (env && env[0] == '/') /* XDG: relative values are ignored */
    return oom_check(join(env, "tirx"), why, why_len);
  const char *home = getenv("HOME");
  char pwbuf[4096];
  struct passwd pw, *res = NULL;
  if ((!home || !home[0]) && getpwuid_r(geteuid(), &pw, pwbuf, sizeof pwbuf, &res) == 0 && res)
    home = res->pw_dir;
  if (!home || !home[0]) {
    snprintf(why, why_len,
             "no cache directory: TIRX_CACHE_DIR, XDG_CACHE_HOME and HOME are unset and the "
             "user has no home directory");
    return NULL;
  }
  return oom_check(join(home, ".cache/tirx"), why, why_len);
}

/* mkdir -p with mode 0700. Returns 1 when the last component was created, 0 when it existed,
 * -1 with errno on failure. When a parent could not be created (EACCES on its own parent,
 * say) and the last mkdir then fails with ENOENT, that parent's errno is the one returned and
 * its path is copied into failed (failed_len bytes; "" when the last component itself failed),
 * so the caller reports the real cause. A parent made here is set to exactly 0700, so a
 * restrictive umask (0277, say) cannot leave it unwritable for the next component. */
static int make_dirs(char *path, char *failed, size_t failed_len) {
  int parent_err = 0;
  failed[0] = '\0';
  for (char *p = path + 1; *p; p++) {
    if (*p != '/' || p[-1] == '/') continue;
    *p = '\0';
    if (sys_mkdir(path, 0700) == 0) {
      int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
      if (fd >= 0) {
        (void)sys_fchmod(fd, 0700);
        sys_close(fd);
      }
    } else if (errno != EEXIST && !parent_err) {
      parent_err = errno;
      snprintf(failed, failed_len, "%s", path);
    }
    *p = '/';
  }
  if (sys_mkdir(path, 0700) == 0) return 1;
  if (errno == EEXIST) return 0;
  if (errno == ENOENT && parent_err) {
    errno = parent_err;
  } else {
    failed[0] = '\0';
  }
  return -1;
}

static tirx_status refuse(tirx__store *s, const char *fmt, ...) TIRX_PRINTF(2, 3);
static tirx_status refuse(tirx__store *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->reason, sizeof s->reason, fmt, ap);
  va_end(ap);
  if (s->root_fd >= 0) sys_close(s->root_fd);
  s->root_fd = -1;
  s->enabled = false;
  warn_once(s, WARN_REFUSED, "%s", s->reason);
  return tirx__error(TIRX_E_IO, "%s", s->reason);
}

tirx_status tirx__store_open(const tirx__store_options *opt, tirx__store **out) {
  static const char fn[] = "disk cache open";
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  tirx__store *s = calloc(1, sizeof *s);
  if (!s) return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  tirx__store_options defaults;
  tirx__store_options_init(&defaults);
  if (!opt) opt = &defaults;
  s->root_fd = -1;
  s->uid = geteuid();
  s->max_bytes = opt->max_bytes ? opt->max_bytes : TIRX__STORE_DEFAULT_MAX_BYTES;
  s->max_entry_bytes =
      opt->max_entry_bytes ? opt->max_entry_bytes : TIRX__STORE_DEFAULT_MAX_ENTRY_BYTES;
  s->tmp_max_age_s =
      opt->tmp_max_age_s > 0 ? opt->tmp_max_age_s : TIRX__STORE_DEFAULT_TMP_MAX_AGE_S;
  s->fsync = opt->fsync;
  s->log = opt->log;
  s->log_user = opt->log_user;
  atomic_init(&s->writes_off, false);
  atomic_init(&s->warned, 0u);
  *out = s;

  char why[512];
  s->path = resolve_path(opt, why, sizeof why);
  if (!s->path)
    return refuse(s, "%s: %s; the disk cache is disabled", fn, why);
  char failed[512];
  int made = make_dirs(s->path, failed, sizeof failed);
  if (made < 0) {
    int e = errno;
    if (failed[0])
      return refuse(s,
                    "%s: cannot create cache directory '%s': cannot create its parent '%s': %s; "
                    "the disk cache is disabled",
                    fn, s->path, failed, strerror(e));
    return refuse(s, "%s: cannot create cache directory '%s': %s; the disk cache is disabled",
                  fn, s->path, strerror(e));
  }
  s->root_fd = sys_openat(AT_FDCWD, s->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (s->root_fd < 0) {
    int e = errno;
    struct stat lst;
    if (lstat(s->path, &lst) == 0 && S_ISLNK(lst.st_mode))
      return refuse(s,
                    "%s: cache directory '%s' is a symbolic link; give the real path; the disk "
                    "cache is disabled",
                    fn, s->path);
    return refuse(s, "%s: cannot open cache directory '%s': %s; the disk cache is disabled", fn,
                  s->path, strerror(e));
  }
  /* A directory we just made gets exactly 0700 whatever the umask. */
  if (made == 1) (void)sys_fchmod(s->root_fd, 0700);
  struct stat st;
  if (sys_fstat(s->root_fd, &st) != 0) {
    int e = errno;
    return refuse(s, "%s: cannot stat cache directory '%s': %s; the disk cache is disabled", fn,
                  s->path, strerror(e));
  }
  if (st.st_uid != s->uid)
    return refuse(s,
                  "%s: cache directory '%s' is owned by uid %u, not by this process's uid %u; "
                  "the disk cache is disabled",
                  fn, s->path, (unsigned)st.st_uid, (unsigned)s->uid);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return refuse(s,
                  "%s: cache directory '%s' is writable by group or others (mode %04o); the "
                  "disk cache is disabled (chmod 700 it to use it)",
                  fn, s->path, (unsigned)(st.st_mode & 07777));
  s->enabled = true;
  tirx__store_maintain(s);
  return TIRX_OK;
}

void tirx__store_close(tirx__store *s) {
  if (!s) return;
  if (s->root_fd >= 0) close(s->root_fd);
  free(s->path);
  free(s);
}

bool tirx__store_enabled(const tirx__store *s) { return s && s->enabled; }

bool tirx__store_writable(const tirx__store *s) {
  return s && s->enabled && !atomic_load(&s->writes_off);
}

const char *tirx__store_path(const tirx__store *s) { return s && s->path ? s->path : ""; }

const char *tirx__store_disabled_reason(const tirx__store *s) {
  return s && !s->enabled ? s->reason : "";
}

void tirx__store_counters_get(const tirx__store *s, tirx__store_counters *out) {
  memset(out, 0, sizeof *out);
  if (!s) return;
  tirx__store *m = (tirx__store *)s; /* atomic loads take non-const pointers */
  out->hits = atomic_load(&m->hits);
  out->misses = atomic_load(&m->misses);
  out->puts = atomic_load(&m->puts);
  out->publish_failed = atomic_load(&m->publish_failed);
  out->evictions = atomic_load(&m->evictions);
  out->tmp_swept = atomic_load(&m->tmp_swept);
  out->corrupt_kept = atomic_load(&m->corrupt_kept);
  out->claims = atomic_load(&m->claims);
  out->claim_waited_hits = atomic_load(&m->claim_waited_hits);
  out->claim_timeouts = atomic_load(&m->claim_timeouts);
  for (int i = 0; i < TIRX__STORE_CORRUPT_COUNT; i++) {
    out->corrupt_by_reason[i] = atomic_load(&m->corrupt[i]);
    out->corrupt_detected += out->corrupt_by_reason[i];
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Reading and validating                                                                      */
/* ------------------------------------------------------------------------------------------ */

enum { READ_OK, READ_MISS, READ_CORRUPT, READ_KEPT };

enum { REMOVE_DEPTH_MAX = 16 };

/* Removes name under dfd; st is its lstat. A directory is removed with its contents, never
 * following a symbolic link and never crossing into another filesystem (a mount point is left
 * alone: EXDEV), at most REMOVE_DEPTH_MAX levels deep (ELOOP beyond). Returns 0 (also when
 * the name is already gone) or the errno of the first failure. */
static int remove_at(int dfd, const char *name, const struct stat *st, int depth) {
  if (!S_ISDIR(st->st_mode)) {
    if (sys_unlinkat(dfd, name, 0) == 0 || errno == ENOENT) return 0;
    return errno;
  }
  if (sys_unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return 0;
  if (errno != ENOTEMPTY && errno != EEXIST) return errno;
  if (depth >= REMOVE_DEPTH_MAX) return ELOOP;
  int fd = sys_openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) return errno == ENOENT ? 0 : errno;
  struct stat dst;
  if (fstat(fd, &dst) != 0 || dst.st_dev != st->st_dev || dst.st_ino != st->st_ino) {
    close(fd);
    return EXDEV; /* replaced meanwhile, or a mount point */
  }
  int err = 0;
  DIR *d = fdopendir(fd);
  if (!d) {
    err = errno;
    close(fd);
    return err;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    struct stat cst;
    if (fstatat(dirfd(d), de->d_name, &cst, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(cst.st_mode) && cst.st_dev != st->st_dev) {
      if (!err) err = EXDEV;
      continue;
    }
    int e = remove_at(dirfd(d), de->d_name, &cst, depth + 1);
    if (e && !err) err = e;
  }
  closedir(d);
  if (err) return err;
  if (sys_unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return 0;
  return errno;
}
enum { VALID = -1 };

/* The fields of a structurally valid entry, pointing into the file's bytes. */
typedef struct entry_view {
  const unsigned char *key;
  const char *arch;
  uint32_t arch_len;
  int32_t nvrtc_major, nvrtc_minor;
  const unsigned char *meta, *payload;
  uint64_t meta_len, payload_len;
} entry_view;

/* Checks magic, version, lengths and checksum; VALID or a tirx__store_corrupt. */
static int parse_entry(const unsigned char *buf, uint64_t size, entry_view *v) {
  if (size < TIRX__STORE_HEADER_BYTES + 1 + TIRX__STORE_TRAILER_BYTES)
    return TIRX__STORE_CORRUPT_TOO_SMALL;
  if (memcmp(buf, store_magic, sizeof store_magic) != 0) return TIRX__STORE_CORRUPT_MAGIC;
  if (get_u32(buf + 8) != TIRX__STORE_FORMAT_VERSION) return TIRX__STORE_CORRUPT_VERSION;
  uint64_t arch_len = get_u32(buf + 12);
  uint64_t meta_len = get_u64(buf + 40), payload_len = get_u64(buf + 48);
  /* Each bound keeps the sum below 2^63, so it cannot wrap. */
  if (arch_len < 1 || arch_len > TIRX__STORE_ARCH_MAX || meta_len > TIRX__STORE_META_MAX ||
      payload_len > size ||
      TIRX__STORE_HEADER_BYTES + arch_len + meta_len + payload_len + TIRX__STORE_TRAILER_BYTES !=
          size)
    return TIRX__STORE_CORRUPT_LENGTH;
  uint64_t body = size - TIRX__STORE_TRAILER_BYTES;
  if (XXH3_64bits(buf, (size_t)body) != get_u64(buf + body)) return TIRX__STORE_CORRUPT_CHECKSUM;
  v->key = buf + 16;
  v->nvrtc_major = (int32_t)get_u32(buf + 32);
  v->nvrtc_minor = (int32_t)get_u32(buf + 36);
  v->arch_len = (uint32_t)arch_len;
  v->arch = (const char *)buf + TIRX__STORE_HEADER_BYTES;
  v->meta_len = meta_len;
  v->meta = buf + TIRX__STORE_HEADER_BYTES + arch_len;
  v->payload_len = payload_len;
  v->payload = v->meta + meta_len;
  if (!arch_ok(v->arch, arch_len)) return TIRX__STORE_CORRUPT_ARCH;
  return VALID;
}

/* Checks a parsed entry against what the caller asked for (expect may be NULL). */
static int match_entry(const entry_view *v, const tirx__cache_key *key,
                       const tirx__store_info *expect) {
  if (memcmp(v->key, key->bytes, TIRX__CACHE_KEY_BYTES) != 0) return TIRX__STORE_CORRUPT_KEY;
  if (!expect) return VALID;
  size_t alen = strlen(expect->arch);
  if (alen != v->arch_len || memcmp(v->arch, expect->arch, alen) != 0)
    return TIRX__STORE_CORRUPT_ARCH;
  if (v->nvrtc_major != expect->nvrtc_major || v->nvrtc_minor != expect->nvrtc_minor)
    return TIRX__STORE_CORRUPT_NVRTC;
  return VALID;
}

/* Counts a rejected entry and removes it when the name still refers to the file that was
 * examined (seen), or, without seen, when it is not a regular file: a valid entry renamed
 * into place meanwhile is never removed. A directory is removed with its contents
 * (remove_at). When the removal fails the entry is counted as kept, not removed, and the
 * warning says so. */
static int discard(tirx__store *s, const char *fn, const char *name, const struct stat *seen,
                   tirx__store_corrupt reason) {
  count(&s->corrupt[reason]);
  struct stat now;
  int err = 0;
  if (fstatat(s->root_fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0) {
    bool same = seen ? now.st_dev == seen->st_dev && now.st_ino == seen->st_ino
                     : !S_ISREG(now.st_mode);
    if (same) err = remove_at(s->root_fd, name, &now, 0);
  }
  if (err) {
    count(&s->corrupt_kept);
    warn_once(s, WARN_KEPT,
              "%s: cannot remove the corrupt cache entry '%s/%s' (%s): %s; it is skipped and "
              "its key is compiled without the disk cache",
              fn, s->path, name, tirx__store_corrupt_str(reason), strerror(err));
    return READ_KEPT;
  }
  warn_once(s, WARN_CORRUPT, "%s: removed a corrupt cache entry '%s/%s' (%s); it will be rebuilt",
            fn, s->path, name, tirx__store_corrupt_str(reason));
  return READ_CORRUPT;
}

static int read_miss(tirx__store *s, const char *fn, const char *what, const char *name, int e) {
  if (e != ENOENT && e != ESTALE)
    warn_once(s, WARN_READ, "%s: %s of cache entry '%s/%s' failed: %s; treated as a miss", fn,
              what, s->path, name, strerror(e));
  return READ_MISS;
}

/* Reads, validates and (on success, with out) returns an entry. */
static int read_entry_raw(tirx__store *s, const char *fn, const char *name,
                          const tirx__cache_key *key, const tirx__store_info *expect, bool touch,
                          tirx__store_entry *out, unsigned char **raw, size_t *raw_len);

static int read_entry(tirx__store *s, const char *fn, const char *name,
                      const tirx__cache_key *key, const tirx__store_info *expect, bool touch,
                      tirx__store_entry *out) {
  return read_entry_raw(s, fn, name, key, expect, touch, out, NULL, NULL);
}

/* As read_entry; with raw, a valid entry's whole file is handed over in *raw (malloc'ed). */
static int read_entry_raw(tirx__store *s, const char *fn, const char *name,
                          const tirx__cache_key *key, const tirx__store_info *expect, bool touch,
                          tirx__store_entry *out, unsigned char **raw, size_t *raw_len) {
  int fd = sys_openat(s->root_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
                      0);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP) return discard(s, fn, name, NULL, TIRX__STORE_CORRUPT_SYMLINK);
    if (e == ENXIO) return discard(s, fn, name, NULL, TIRX__STORE_CORRUPT_NOT_REGULAR);
    return read_miss(s, fn, "open", name, e);
  }
  struct stat st;
  if (sys_fstat(fd, &st) != 0) {
    int e = errno;
    sys_close(fd);
    return read_miss(s, fn, "fstat", name, e);
  }
  int reason = VALID;
  if (!S_ISREG(st.st_mode)) reason = TIRX__STORE_CORRUPT_NOT_REGULAR;
  else if (st.st_uid != s->uid) reason = TIRX__STORE_CORRUPT_OWNER;
  else if ((st.st_mode & 07777) != 0600) reason = TIRX__STORE_CORRUPT_MODE;
  /* 0 links is fine: a writer replaced, or an evictor removed, the file after we opened it,
   * and its bytes are as immutable as ever. */
  else if (st.st_nlink > 1) reason = TIRX__STORE_CORRUPT_LINKS;
  else if (st.st_size < TIRX__STORE_HEADER_BYTES + 1 + TIRX__STORE_TRAILER_BYTES)
    reason = TIRX__STORE_CORRUPT_TOO_SMALL;
  else if ((uint64_t)st.st_size > s->max_entry_bytes) reason = TIRX__STORE_CORRUPT_TOO_LARGE;
  if (reason != VALID) {
    sys_close(fd);
    return discard(s, fn, name, &st, (tirx__store_corrupt)reason);
  }
  size_t size = (size_t)st.st_size;
  unsigned char *buf = malloc(size);
  if (!buf) {
    sys_close(fd);
    return read_miss(s, fn, "allocation for the read", name, ENOMEM);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t n = sys_pread(fd, buf + got, size - got, (off_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      free(buf);
      sys_close(fd);
      return read_miss(s, fn, "read", name, e);
    }
    if (n == 0) break;
    got += (size_t)n;
  }
  entry_view v;
  if (got != size) reason = TIRX__STORE_CORRUPT_SHORT_READ;
  else reason = parse_entry(buf, size, &v);
  if (reason == VALID) reason = match_entry(&v, key, expect);
  if (reason != VALID) {
    free(buf);
    sys_close(fd);
    return discard(s, fn, name, &st, (tirx__store_corrupt)reason);
  }
  if (out) {
    out->meta = malloc((size_t)v.meta_len + 1);
    out->payload = malloc((size_t)v.payload_len + TIRX__STORE_PAYLOAD_PAD);
    if (!out->meta || !out->payload) {
      tirx__store_entry_free(out);
      free(buf);
      sys_close(fd);
      return read_miss(s, fn, "allocation for the entry", name, ENOMEM);
    }
    memcpy(out->meta, v.meta, (size_t)v.meta_len);
    out->meta[v.meta_len] = 0;
    out->meta_len = (size_t)v.meta_len;
    memcpy(out->payload, v.payload, (size_t)v.payload_len);
    memset(out->payload + v.payload_len, 0, TIRX__STORE_PAYLOAD_PAD);
    out->payload_len = (size_t)v.payload_len;
    memcpy(out->arch, v.arch, v.arch_len);
    out->arch[v.arch_len] = '\0';
    out->nvrtc_major = v.nvrtc_major;
    out->nvrtc_minor = v.nvrtc_minor;
  }
  if (raw) {
    *raw = buf;
    *raw_len = size;
  } else {
    free(buf);
  }
  if (touch) (void)sys_futimens(fd); /* the LRU clock; a read-only directory just skips it */
  sys_close(fd);
  return READ_OK;
}

void tirx__store_entry_free(tirx__store_entry *e) {
  if (!e) return;
  free(e->meta);
  free(e->payload);
  memset(e, 0, sizeof *e);
}

bool tirx__store_get(tirx__store *s, const tirx__cache_key *key, const tirx__store_info *expect,
                     tirx__store_entry *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!s) return false;
  if (!key || !expect || !expect->arch || !out || !s->enabled) {
    count(&s->misses);
    return false;
  }
  char name[TIRX__CACHE_KEY_HEX + 1];
  tirx__cache_key_hex(key, name);
  if (read_entry(s, "disk cache read", name, key, expect, true, out) == READ_OK) {
    count(&s->hits);
    return true;
  }
  count(&s->misses);
  return false;
}

/* ------------------------------------------------------------------------------------------ */
/* Publishing                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void maintain(tirx__store *s, const char *protect);

static tirx_status publish_failed(tirx__store *s, const char *what, const char *name, int e) {
  count(&s->publish_failed);
  if (is_persistent_write_error(e)) {
    atomic_store(&s->writes_off, true);
    warn_once(s, WARN_WRITES_OFF,
              "disk cache write: %s of '%s/%s' failed: %s; the disk cache stops writing for this "
              "process (entries already there are still used)",
              what, s->path, name, strerror(e));
  } else {
    warn_once(s, WARN_PUBLISH,
              "disk cache write: %s of '%s/%s' failed: %s; the entry was not cached", what,
              s->path, name, strerror(e));
  }
  return TIRX_E_IO;
}

/* Writes buf to a fresh temp file and renames it over name; on any failure the temp file is
 * removed. */
static tirx_status publish(tirx__store *s, const char *name, const unsigned char *buf,
                           size_t len) {
  char tmp[TMP_NAME_MAX];
  int fd = -1;
  for (int attempt = 0; attempt < 8; attempt++) {
    snprintf(tmp, sizeof tmp, "%s%s.%016llx", tmp_prefix, name, (unsigned long long)next_nonce());
    fd = sys_openat(s->root_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) return publish_failed(s, "create", tmp, errno);
  int err = 0;
  const char *what = NULL;
  if (sys_fchmod(fd, 0600) != 0) {
    err = errno;
    what = "chmod";
  }
  for (size_t off = 0; !err && off < len;) {
    ssize_t n = sys_write(fd, buf + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      what = "write";
      break;
    }
    off += (size_t)n;
  }
  if (!err && s->fsync && sys_fsync(fd) != 0) {
    err = errno;
    what = "fsync";
  }
  if (sys_close(fd) != 0 && !err) {
    err = errno;
    what = "close";
  }
  if (!err && sys_renameat(s->root_fd, tmp, s->root_fd, name) != 0) {
    err = errno;
    what = "rename";
  }
  if (err) {
    (void)sys_unlinkat(s->root_fd, tmp, 0); /* a leftover is swept by a later maintenance */
    return publish_failed(s, what, tmp, err);
  }
  return TIRX_OK;
}

tirx_status tirx__store_put(tirx__store *s, const tirx__cache_key *key,
                            const tirx__store_info *info, const void *meta, size_t meta_len,
                            const void *payload, size_t payload_len) {
  static const char fn[] = "disk cache write";
  if (!s) return tirx__error(TIRX_E_NULL_ARG, "%s: s is NULL", fn);
  if (!key) return tirx__error(TIRX_E_NULL_ARG, "%s: key is NULL", fn);
  if (!info) return tirx__error(TIRX_E_NULL_ARG, "%s: info is NULL", fn);
  if (!info->arch) return tirx__error(TIRX_E_NULL_ARG, "%s: info->arch is NULL", fn);
  if (!meta && meta_len)
    return tirx__error(TIRX_E_NULL_ARG, "%s: meta is NULL but meta_len is %zu", fn, meta_len);
  if (!payload && payload_len)
    return tirx__error(TIRX_E_NULL_ARG, "%s: payload is NULL but payload_len is %zu", fn,
                       payload_len);
  size_t arch_len = strlen(info->arch);
  if (!arch_ok(info->arch, arch_len))
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: arch '%s' must be 1 to %d printable characters without spaces", fn,
                       info->arch, TIRX__STORE_ARCH_MAX);
  if (!s->enabled || atomic_load(&s->writes_off)) return TIRX_E_NOT_SUPPORTED;
  char name[TIRX__CACHE_KEY_HEX + 1];
  tirx__cache_key_hex(key, name);
  uint64_t total = (uint64_t)TIRX__STORE_HEADER_BYTES + arch_len + (uint64_t)meta_len +
                   (uint64_t)payload_len + TIRX__STORE_TRAILER_BYTES;
  if (meta_len > TIRX__STORE_META_MAX || payload_len > s->max_entry_bytes ||
      total > s->max_entry_bytes) {
    warn_once(s, WARN_LIMIT,
              "%s: entry %s (%zu bytes of metadata, %zu of payload) exceeds the cache's size "
              "limits; it was not cached",
              fn, name, meta_len, payload_len);
    return TIRX_E_LIMIT;
  }
  unsigned char *buf = malloc((size_t)total);
  if (!buf) {
    warn_once(s, WARN_LIMIT, "%s: out of memory for entry %s; it was not cached", fn, name);
    return TIRX_E_NO_MEMORY;
  }
  memcpy(buf, store_magic, sizeof store_magic);
  put_u32(buf + 8, TIRX__STORE_FORMAT_VERSION);
  put_u32(buf + 12, (uint32_t)arch_len);
  memcpy(buf + 16, key->bytes, TIRX__CACHE_KEY_BYTES);
  put_u32(buf + 32, (uint32_t)info->nvrtc_major);
  put_u32(buf + 36, (uint32_t)info->nvrtc_minor);
  put_u64(buf + 40, meta_len);
  put_u64(buf + 48, payload_len);
  unsigned char *p = buf + TIRX__STORE_HEADER_BYTES;
  memcpy(p, info->arch, arch_len);
  p += arch_len;
  if (meta_len) memcpy(p, meta, meta_len);
  p += meta_len;
  if (payload_len) memcpy(p, payload, payload_len);
  p += payload_len;
  put_u64(p, XXH3_64bits(buf, (size_t)(total - TIRX__STORE_TRAILER_BYTES)));
  tirx_status st = publish(s, name, buf, (size_t)total);
  free(buf);
  if (st == TIRX_OK) {
    count(&s->puts);
    maintain(s, name);
  }
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Directory scans: maintenance, list, verify, clear                                           */
/* ------------------------------------------------------------------------------------------ */

typedef struct name_list {
  char (*names)[TMP_NAME_MAX];
  size_t n, cap;
} name_list;

/* Collects the entry and temp names in the directory (so callers may unlink while walking).
 * dfd is consumed. Returns 0 or an errno. */
static int collect_names(int dfd, name_list *out) {
  memset(out, 0, sizeof *out);
  DIR *d = fdopendir(dfd);
  if (!d) {
    int e = errno;
    close(dfd);
    return e;
  }
  struct dirent *de;
  int err = 0;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    if (!is_key_name(nm, NULL) && !is_tmp_name(nm) && !is_lock_name(nm)) continue;
    if (strlen(nm) >= TMP_NAME_MAX) continue; /* not one of ours */
    if (out->n == out->cap) {
      size_t cap = out->cap ? out->cap * 2 : 64;
      void *p = realloc(out->names, cap * sizeof *out->names);
      if (!p) {
        err = ENOMEM;
        break;
      }
      out->names = p;
      out->cap = cap;
    }
    memcpy(out->names[out->n++], nm, strlen(nm) + 1);
  }
  closedir(d);
  if (err) {
    free(out->names);
    memset(out, 0, sizeof *out);
  }
  return err;
}

/* A fresh descriptor for the root, so readdir positions and flock are private to the caller. */
static int open_root_again(tirx__store *s) {
  return sys_openat(s->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

/* The entry and temp names in the cache directory, for the tools (list, verify, clear).
 * Records TIRX_E_IO naming fn when the directory cannot be read. */
static tirx_status read_names(tirx__store *s, const char *fn, name_list *names) {
  int dfd = open_root_again(s);
  int err = dfd < 0 ? errno : collect_names(dfd, names);
  if (err)
    return tirx__error(TIRX_E_IO, "%s: cannot read cache directory '%s': %s", fn, s->path,
                       strerror(err));
  return TIRX_OK;
}

typedef struct evict_item {
  char name[TIRX__CACHE_KEY_HEX + 1];
  uint64_t bytes;
  struct timespec mtime;
  dev_t dev;
  ino_t ino;
} evict_item;

static int evict_cmp(const void *a, const void *b) {
  const evict_item *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

void tirx__store_maintain(tirx__store *s) { maintain(s, NULL); }

/* The maintenance pass; protect (may be NULL) names the entry a put just published, which is
 * the most recently used by definition and never evicted (mtimes can tie). */
static void maintain(tirx__store *s, const char *protect) {
  if (!s || !s->enabled) return;
  int dfd = open_root_again(s);
  if (dfd < 0) return;
  /* One maintainer at a time across processes and threads (each open is its own lock). */
  if (flock(dfd, LOCK_EX | LOCK_NB) != 0) {
    close(dfd);
    return;
  }
  int lock_fd = dup(dfd); /* collect_names consumes dfd; keep the lock until the end */
  name_list names;
  int err = collect_names(dfd, &names);
  if (err) {
    if (lock_fd >= 0) close(lock_fd);
    return;
  }
  time_t now = time(NULL);
  evict_item *items = NULL;
  size_t nitems = 0;
  uint64_t total = 0;
  if (names.n) items = malloc(names.n * sizeof *items);
  for (size_t i = 0; i < names.n; i++) {
    const char *nm = names.names[i];
    struct stat st;
    if (fstatat(s->root_fd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (is_lock_name(nm)) {
      if (now - st.st_mtime > s->tmp_max_age_s && remove_unheld_lock(s->root_fd, nm))
        count(&s->tmp_swept);
      continue;
    }
    if (is_tmp_name(nm)) {
      if (now - st.st_mtime > s->tmp_max_age_s &&
          sys_unlinkat(s->root_fd, nm, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0)
        count(&s->tmp_swept);
      continue;
    }
    if (!S_ISREG(st.st_mode) || !items) continue;
    if (protect && strcmp(nm, protect) == 0) {
      total += (uint64_t)st.st_size;
      continue;
    }
    evict_item *it = &items[nitems++];
    memcpy(it->name, nm, sizeof it->name);
    it->bytes = (uint64_t)st.st_size;
    it->mtime = st.st_mtim;
    it->dev = st.st_dev;
    it->ino = st.st_ino;
    total += it->bytes;
  }
  if (total > s->max_bytes && items) {
    uint64_t low = s->max_bytes - s->max_bytes / 10;
    qsort(items, nitems, sizeof *items, evict_cmp);
    for (size_t i = 0; i < nitems && total > low; i++) {
      struct stat st;
      if (fstatat(s->root_fd, items[i].name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        total -= items[i].bytes; /* already gone */
        continue;
      }
      if (st.st_dev != items[i].dev || st.st_ino != items[i].ino) continue; /* republished */
      if (sys_unlinkat(s->root_fd, items[i].name, 0) == 0) {
        count(&s->evictions);
        total -= items[i].bytes;
      }
    }
  }
  free(items);
  free(names.names);
  if (lock_fd >= 0) close(lock_fd);
}

tirx_status tirx__store_list(tirx__store *s, tirx__store_list_fn fn, void *user,
                             size_t *count_out) {
  static const char fname[] = "disk cache list";
  if (count_out) *count_out = 0;
  if (!s) return tirx__error(TIRX_E_NULL_ARG, "%s: s is NULL", fname);
  if (!fn) return tirx__error(TIRX_E_NULL_ARG, "%s: fn is NULL", fname);
  if (!s->enabled)
    return tirx__error(TIRX_E_NOT_SUPPORTED, "%s: the cache is disabled: %s", fname, s->reason);
  name_list names;
  tirx_status rst = read_names(s, fname, &names);
  if (rst != TIRX_OK) return rst;
  size_t listed = 0;
  for (size_t i = 0; i < names.n; i++) {
    tirx__store_item it;
    memset(&it, 0, sizeof it);
    if (!is_key_name(names.names[i], &it.key)) continue;
    memcpy(it.name, names.names[i], sizeof it.name);
    int fd = sys_openat(s->root_fd, it.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
    struct stat st;
    if (fd >= 0 && sys_fstat(fd, &st) == 0) {
      it.file_bytes = (uint64_t)st.st_size;
      it.mtime_s = (int64_t)st.st_mtime;
      unsigned char h[TIRX__STORE_HEADER_BYTES + TIRX__STORE_ARCH_MAX];
      ssize_t n = S_ISREG(st.st_mode) ? sys_pread(fd, h, sizeof h, 0) : -1;
      if (n >= TIRX__STORE_HEADER_BYTES && memcmp(h, store_magic, sizeof store_magic) == 0 &&
          get_u32(h + 8) == TIRX__STORE_FORMAT_VERSION) {
        uint32_t alen = get_u32(h + 12);
        if (alen >= 1 && alen <= TIRX__STORE_ARCH_MAX && n >= TIRX__STORE_HEADER_BYTES + alen &&
            arch_ok((const char *)h + TIRX__STORE_HEADER_BYTES, alen)) {
          it.header_ok = true;
          memcpy(it.arch, h + TIRX__STORE_HEADER_BYTES, alen);
          it.nvrtc_major = (int32_t)get_u32(h + 32);
          it.nvrtc_minor = (int32_t)get_u32(h + 36);
          it.meta_len = get_u64(h + 40);
          it.payload_len = get_u64(h + 48);
        }
      }
    }
    if (fd >= 0) sys_close(fd);
    listed++;
    if (!fn(user, &it)) break;
  }
  free(names.names);
  if (count_out) *count_out = listed;
  return TIRX_OK;
}

tirx_status tirx__store_verify(tirx__store *s, tirx__store_verify_counts *out) {
  static const char fn[] = "disk cache verify";
  if (out) memset(out, 0, sizeof *out);
  if (!s) return tirx__error(TIRX_E_NULL_ARG, "%s: s is NULL", fn);
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  if (!s->enabled)
    return tirx__error(TIRX_E_NOT_SUPPORTED, "%s: the cache is disabled: %s", fn, s->reason);
  name_list names;
  tirx_status rst = read_names(s, fn, &names);
  if (rst != TIRX_OK) return rst;
  for (size_t i = 0; i < names.n; i++) {
    tirx__cache_key key;
    if (!is_key_name(names.names[i], &key)) continue;
    out->checked++;
    int r = read_entry(s, fn, names.names[i], &key, NULL, false, NULL);
    if (r == READ_OK) out->ok++;
    else if (r == READ_CORRUPT) out->corrupt++;
    else if (r == READ_KEPT) out->kept++;
  }
  free(names.names);
  return TIRX_OK;
}

tirx_status tirx__store_clear(tirx__store *s, uint64_t *removed) {
  static const char fn[] = "disk cache clear";
  if (removed) *removed = 0;
  if (!s) return tirx__error(TIRX_E_NULL_ARG, "%s: s is NULL", fn);
  if (!s->enabled)
    return tirx__error(TIRX_E_NOT_SUPPORTED, "%s: the cache is disabled: %s", fn, s->reason);
  name_list names;
  tirx_status rst = read_names(s, fn, &names);
  if (rst != TIRX_OK) return rst;
  uint64_t n = 0, failed = 0;
  int first_err = 0;
  char first_name[TMP_NAME_MAX] = "";
  for (size_t i = 0; i < names.n; i++) {
    struct stat st;
    if (fstatat(s->root_fd, names.names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    int e = remove_at(s->root_fd, names.names[i], &st, 0);
    if (e == 0) {
      n++;
      continue;
    }
    if (!failed++) {
      first_err = e;
      memcpy(first_name, names.names[i], sizeof first_name);
    }
  }
  free(names.names);
  if (removed) *removed = n;
  if (failed)
    return tirx__error(TIRX_E_IO, "%s: removed %llu of %llu entries from '%s'; cannot remove "
                       "'%s'%s: %s",
                       fn, (unsigned long long)n, (unsigned long long)(n + failed), s->path,
                       first_name, failed > 1 ? " (and others)" : "", strerror(first_err));
  return TIRX_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Single flight across processes: per-key claims                                              */
/* ------------------------------------------------------------------------------------------ */

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* A hit without counting a miss when there is none yet (the poll loop looks many times). */
static bool claim_peek(tirx__store *s, const char *name, const tirx__cache_key *key,
                       const tirx__store_info *expect, tirx__store_entry *out) {
  if (read_entry(s, "disk cache lock", name, key, expect, true, out) != READ_OK) return false;
  count(&s->hits);
  return true;
}

tirx__store_claim_result tirx__store_claim(tirx__store *s, const tirx__cache_key *key,
                                           const tirx__store_info *expect, int wait_ms,
                                           tirx__claim *claim, tirx__store_entry *out) {
  if (claim) claim->fd = -1;
  if (out) memset(out, 0, sizeof *out);
  if (!s || !key || !expect || !expect->arch || !claim || !out) {
    if (!s) (void)tirx__error(TIRX_E_NULL_ARG, "disk cache lock: s is NULL");
    else (void)tirx__error(TIRX_E_NULL_ARG, "disk cache lock: key, expect, claim or out is NULL");
    return TIRX__CLAIM_NONE;
  }
  if (!s->enabled || atomic_load(&s->writes_off)) return TIRX__CLAIM_NONE;
  char hex[TIRX__CACHE_KEY_HEX + 1];
  tirx__cache_key_hex(key, hex);
  snprintf(claim->name, sizeof claim->name, "%s%s", lock_prefix, hex);
  int64_t deadline = mono_ms() + (wait_ms > 0 ? wait_ms : 0);
  int nap = 1;
  bool waited = false;
  for (;;) {
    if (claim_peek(s, hex, key, expect, out)) {
      if (waited) count(&s->claim_waited_hits);
      return TIRX__CLAIM_HIT;
    }
    int fd = sys_openat(s->root_fd, claim->name,
                        O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) {
      int e = errno;
      warn_once(s, WARN_CLAIM,
                "disk cache lock: cannot create the lock file '%s/%s': %s; processes may "
                "compile the same kernel at once",
                s->path, claim->name, strerror(e));
      return TIRX__CLAIM_NONE;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      struct stat a, b;
      if (fstat(fd, &a) == 0 && fstatat(s->root_fd, claim->name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
          a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        /* The holder may have published between the peek and the lock. */
        if (claim_peek(s, hex, key, expect, out)) {
          (void)sys_unlinkat(s->root_fd, claim->name, 0);
          sys_close(fd);
          if (waited) count(&s->claim_waited_hits);
          return TIRX__CLAIM_HIT;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid, (size_t)n, 0); /* for people only */
        claim->fd = fd;
        count(&s->claims);
        return TIRX__CLAIM_OWNER;
      }
      /* Locked a file its holder had already unlinked: look again. */
      sys_close(fd);
      continue;
    }
    int e = errno;
    sys_close(fd);
    if (e != EWOULDBLOCK && e != EINTR) {
      warn_once(s, WARN_CLAIM,
                "disk cache lock: cannot lock '%s/%s': %s; processes may compile the same "
                "kernel at once",
                s->path, claim->name, strerror(e));
      return TIRX__CLAIM_NONE;
    }
    /* A live holder (a dead one's flock is gone with its descriptors). */
    int64_t left = deadline - mono_ms();
    if (left <= 0) {
      count(&s->claim_timeouts);
      return TIRX__CLAIM_NONE;
    }
    waited = true;
    sleep_ms(nap < left ? nap : (int)left);
    if (nap < 16) nap *= 2;
  }
}

void tirx__store_claim_release(tirx__store *s, tirx__claim *claim) {
  if (!claim || claim->fd < 0) return;
  /* Unlink first, then unlock: a waiter that locked the old inode sees it gone and retries. */
  if (s && s->root_fd >= 0) (void)sys_unlinkat(s->root_fd, claim->name, 0);
  sys_close(claim->fd);
  claim->fd = -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Bundles: export and import                                                                  */
/* ------------------------------------------------------------------------------------------ */

static const unsigned char bundle_magic[8] = {0x89, 'T', 'X', 'B', 'N', 'D', 'L', '\n'};

enum { BUNDLE_HEADER = 24, BUNDLE_TRAILER = 8 };

/* Appends the XXH3-64 of the file's first len bytes to it (re-read from the start). */
static int seal_bundle(FILE *f, uint64_t len) {
  XXH3_state_t *h = XXH3_createState();
  unsigned char *chunk = malloc(1 << 16);
  int e = 0;
  if (!h || !chunk || XXH3_64bits_reset(h) != XXH_OK) e = ENOMEM;
  if (!e && fflush(f) != 0) e = errno;
  if (!e && fseeko(f, 0, SEEK_SET) != 0) e = errno;
  for (uint64_t done = 0; !e && done < len;) {
    size_t want = len - done < (1 << 16) ? (size_t)(len - done) : (size_t)1 << 16;
    size_t got = fread(chunk, 1, want, f);
    if (got != want) {
      e = EIO;
      break;
    }
    XXH3_64bits_update(h, chunk, got);
    done += got;
  }
  if (!e && fseeko(f, (off_t)len, SEEK_SET) != 0) e = errno;
  if (!e) {
    unsigned char sum[8];
    put_u64(sum, XXH3_64bits_digest(h));
    if (fwrite(sum, 1, 8, f) != 8) e = errno ? errno : EIO;
  }
  free(chunk);
  XXH3_freeState(h);
  return e;
}

tirx_status tirx__store_export(tirx__store *s, const char *file, uint64_t *exported) {
  static const char fn[] = "disk cache export";
  if (exported) *exported = 0;
  if (!s) return tirx__error(TIRX_E_NULL_ARG, "%s: s is NULL", fn);
  if (!file) return tirx__error(TIRX_E_NULL_ARG, "%s: file is NULL", fn);
  if (!s->enabled)
    return tirx__error(TIRX_E_NOT_SUPPORTED, "%s: the cache is disabled: %s", fn, s->reason);
  name_list names;
  tirx_status rst = read_names(s, fn, &names);
  if (rst != TIRX_OK) return rst;
  size_t plen = strlen(file);
  char *tmp = malloc(plen + 32);
  if (!tmp) {
    free(names.names);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  snprintf(tmp, plen + 32, "%s.tmp.%016llx", file, (unsigned long long)next_nonce());
  int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "w+b") : NULL;
  if (!f) {
    int e = errno;
    if (fd >= 0) {
      close(fd);
      unlink(tmp);
    }
    free(names.names);
    tirx_status st = tirx__error(TIRX_E_IO, "%s: cannot create '%s': %s", fn, tmp, strerror(e));
    free(tmp);
    return st;
  }
  /* The header with a zero count, each valid entry (read and checked as a load checks it;
   * arch and NVRTC version kept, not compared) streamed after it, then the count, then the
   * checksum over everything, re-read from the file: one entry in memory at a time. */
  unsigned char hdr[BUNDLE_HEADER];
  memcpy(hdr, bundle_magic, 8);
  put_u32(hdr + 8, TIRX__STORE_BUNDLE_VERSION);
  put_u32(hdr + 12, 0);
  put_u64(hdr + 16, 0);
  int e = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr ? 0 : (errno ? errno : EIO);
  uint64_t n = 0, len = sizeof hdr;
  for (size_t i = 0; !e && i < names.n; i++) {
    tirx__cache_key key;
    if (!is_key_name(names.names[i], &key)) continue;
    unsigned char *raw = NULL;
    size_t raw_len = 0;
    if (read_entry_raw(s, fn, names.names[i], &key, NULL, false, NULL, &raw, &raw_len) != READ_OK)
      continue;
    unsigned char lb[8];
    put_u64(lb, raw_len);
    if (fwrite(lb, 1, 8, f) != 8 || fwrite(raw, 1, raw_len, f) != raw_len) e = errno ? errno : EIO;
    free(raw);
    len += 8 + raw_len;
    n++;
  }
  free(names.names);
  if (!e) {
    put_u64(hdr + 16, n);
    if (fflush(f) != 0 || fseeko(f, 16, SEEK_SET) != 0 || fwrite(hdr + 16, 1, 8, f) != 8)
      e = errno ? errno : EIO;
  }
  if (!e) e = seal_bundle(f, len);
  if (!e && fflush(f) != 0) e = errno;
  if (!e && s->fsync && fsync(fileno(f)) != 0) e = errno;
  if (fclose(f) != 0 && !e) e = errno;
  if (!e && rename(tmp, file) != 0) e = errno;
  tirx_status st = TIRX_OK;
  if (e) {
    unlink(tmp);
    st = tirx__error(TIRX_E_IO, "%s: cannot write '%s': %s", fn, file, strerror(e));
  }
  free(tmp);
  if (st == TIRX_OK && exported) *exported = n;
  return st;
}

/* Reads exactly n bytes; false at end of file or on error (errno 0 at end of file). */
static bool read_exact(FILE *f, void *p, size_t n) {
  errno = 0;
  return n == 0 || fread(p, 1, n, f) == n;
}

/*
 * One pass over a bundle: checks its structure, every entry as a load does and the checksum;
 * with publish, also publishes each entry (recording the names it created in made).
 */
static tirx_status bundle_pass(tirx__store *s, const char *file, bool publish_entries,
                               name_list *made, uint64_t *count_out) {
  static const char fn[] = "disk cache import";
  FILE *f = fopen(file, "rbe");
  if (!f) return tirx__error(TIRX_E_IO, "%s: cannot open '%s': %s", fn, file, strerror(errno));
  tirx_status st = TIRX_OK;
  XXH3_state_t *h = XXH3_createState();
  unsigned char *buf = NULL;
  if (!h || XXH3_64bits_reset(h) != XXH_OK) {
    st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    goto done;
  }
  unsigned char hdr[BUNDLE_HEADER];
  if (!read_exact(f, hdr, sizeof hdr)) {
    st = tirx__error(TIRX_E_INVALID_ARG, "%s: '%s' is not a tirx cache bundle (%s)", fn, file,
                     errno ? strerror(errno) : "shorter than a bundle header");
    goto done;
  }
  if (memcmp(hdr, bundle_magic, 8) != 0) {
    st = tirx__error(TIRX_E_INVALID_ARG, "%s: '%s' is not a tirx cache bundle (bad magic)", fn,
                     file);
    goto done;
  }
  uint32_t ver = get_u32(hdr + 8);
  if (ver != TIRX__STORE_BUNDLE_VERSION) {
    st = tirx__error(TIRX_E_INVALID_ARG,
                     "%s: '%s' has bundle format version %u; this tirx reads version %d", fn,
                     file, (unsigned)ver, TIRX__STORE_BUNDLE_VERSION);
    goto done;
  }
  XXH3_64bits_update(h, hdr, sizeof hdr);
  uint64_t n = get_u64(hdr + 16);
  for (uint64_t i = 0; i < n; i++) {
    unsigned char lenb[8];
    if (!read_exact(f, lenb, 8)) {
      st = tirx__error(TIRX_E_INVALID_ARG, "%s: '%s' is truncated in entry %llu of %llu", fn,
                       file, (unsigned long long)i + 1, (unsigned long long)n);
      goto done;
    }
    XXH3_64bits_update(h, lenb, 8);
    uint64_t len = get_u64(lenb);
    if (len > s->max_entry_bytes) {
      st = tirx__error(TIRX_E_INVALID_ARG,
                       "%s: '%s': entry %llu of %llu is %llu bytes, over the entry size limit "
                       "of %llu",
                       fn, file, (unsigned long long)i + 1, (unsigned long long)n,
                       (unsigned long long)len, (unsigned long long)s->max_entry_bytes);
      goto done;
    }
    free(buf);
    buf = malloc(len ? (size_t)len : 1);
    if (!buf) {
      st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
      goto done;
    }
    if (!read_exact(f, buf, (size_t)len)) {
      st = tirx__error(TIRX_E_INVALID_ARG, "%s: '%s' is truncated in entry %llu of %llu", fn,
                       file, (unsigned long long)i + 1, (unsigned long long)n);
      goto done;
    }
    XXH3_64bits_update(h, buf, (size_t)len);
    entry_view v;
    int reason = parse_entry(buf, len, &v);
    if (reason != VALID) {
      st = tirx__error(TIRX_E_INVALID_ARG, "%s: '%s': entry %llu of %llu is corrupt (%s)", fn,
                       file, (unsigned long long)i + 1, (unsigned long long)n,
                       tirx__store_corrupt_str((tirx__store_corrupt)reason));
      goto done;
    }
    if (publish_entries) {
      tirx__cache_key key;
      memcpy(key.bytes, v.key, TIRX__CACHE_KEY_BYTES);
      char name[TIRX__CACHE_KEY_HEX + 1];
      tirx__cache_key_hex(&key, name);
      struct stat old;
      bool existed = fstatat(s->root_fd, name, &old, AT_SYMLINK_NOFOLLOW) == 0;
      if (publish(s, name, buf, (size_t)len) != TIRX_OK) {
        st = tirx__error(TIRX_E_IO, "%s: cannot publish entry %llu of %llu (%s) into '%s': %s",
                         fn, (unsigned long long)i + 1, (unsigned long long)n, name, s->path,
                         atomic_load(&s->writes_off) ? "writes are off (see the warning)"
                                                     : "see the warning");
        goto done;
      }
      count(&s->puts);
      if (!existed) {
        if (made->n == made->cap) {
          size_t cap = made->cap ? made->cap * 2 : 64;
          void *p = realloc(made->names, cap * sizeof *made->names);
          if (!p) {
            (void)sys_unlinkat(s->root_fd, name, 0);
            st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
            goto done;
          }
          made->names = p;
          made->cap = cap;
        }
        memcpy(made->names[made->n++], name, sizeof name);
      }
    }
  }
  unsigned char sum[8];
  if (!read_exact(f, sum, 8)) {
    st = tirx__error(TIRX_E_INVALID_ARG, "%s: '%s' is truncated before its checksum", fn, file);
    goto done;
  }
  if (get_u64(sum) != XXH3_64bits_digest(h)) {
    st = tirx__error(TIRX_E_INVALID_ARG, "%s: '%s' fails its checksum (the bundle is damaged)",
                     fn, file);
    goto done;
  }
  if (fgetc(f) != EOF) {
    st = tirx__error(TIRX_E_INVALID_ARG, "%s: '%s' has bytes after its checksum", fn, file);
    goto done;
  }
  if (count_out) *count_out = n;
done:
  free(buf);
  XXH3_freeState(h);
  fclose(f);
  return st;
}

tirx_status tirx__store_import(tirx__store *s, const char *file, uint64_t *imported) {
  static const char fn[] = "disk cache import";
  if (imported) *imported = 0;
  if (!s) return tirx__error(TIRX_E_NULL_ARG, "%s: s is NULL", fn);
  if (!file) return tirx__error(TIRX_E_NULL_ARG, "%s: file is NULL", fn);
  if (!s->enabled)
    return tirx__error(TIRX_E_NOT_SUPPORTED, "%s: the cache is disabled: %s", fn, s->reason);
  if (atomic_load(&s->writes_off))
    return tirx__error(TIRX_E_NOT_SUPPORTED, "%s: writes to '%s' have stopped (see the warning)",
                       fn, s->path);
  /* Pass 1 checks the whole bundle, so a bad one changes nothing. */
  uint64_t n = 0;
  tirx_status st = bundle_pass(s, file, false, NULL, &n);
  if (st != TIRX_OK) return st;
  /* Pass 2 publishes; should it fail (the file changed, the disk filled), the entries it
   * created are removed again. */
  name_list made;
  memset(&made, 0, sizeof made);
  st = bundle_pass(s, file, true, &made, &n);
  if (st != TIRX_OK)
    for (size_t i = 0; i < made.n; i++) (void)sys_unlinkat(s->root_fd, made.names[i], 0);
  free(made.names);
  if (st != TIRX_OK) return st;
  maintain(s, NULL);
  if (imported) *imported = n;
  return TIRX_OK;
}
