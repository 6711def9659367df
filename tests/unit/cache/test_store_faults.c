/*
 * The on-disk store under failing system calls (T5): read-only, full and over-quota disks,
 * simulated with the store's fault shim at every injection point in turn (tests run as root in
 * CI, and root ignores permission bits), plus a real RLIMIT_FSIZE and, when not root, a real
 * mode-0500 directory. Nothing may escape as a failure, and no temp file may remain.
 */
#include <signal.h>
#include <sys/resource.h>

#include "cache_helpers.h"

static const int write_errnos[] = {EROFS, ENOSPC, EDQUOT, EACCES, EIO, EFBIG};
enum { NERRNOS = sizeof write_errnos / sizeof write_errnos[0] };

static bool persistent(int e) { return e != EIO; }

typedef struct rig {
  char dir[256];
  char root[320];
  tirx__store *s;
  tc_log log;
} rig;

/* A store over root with fsync on (so fsync is an injection point too) and a size limit that
 * makes every put evict the one entry already there (so eviction's unlink is one as well). */
static void rig_open(rig *r) {
  memset(&r->log, 0, sizeof r->log);
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = r->root;
  o.fsync = true;
  o.max_bytes = 2000;
  o.log = tc_log_fn;
  o.log_user = &r->log;
  r->s = NULL;
  cr_assert_eq(tirx__store_open(&o, &r->s), TIRX_OK, "%s", tirx_last_error());
}

static void rig_init(rig *r) {
  memset(r, 0, sizeof *r);
  tc_mkdtemp(r->dir, sizeof r->dir);
  snprintf(r->root, sizeof r->root, "%s/root", r->dir);
  rig_open(r);
}

static void rig_fini(rig *r) {
  tirx__store_close(r->s);
  tc_rmtree(r->dir);
}

static unsigned char payload_a[1200], payload_b[1200];

static void put_plain(rig *r, int key, const unsigned char *p) {
  tirx__cache_key k = tc_key(key);
  cr_assert_eq(tirx__store_put(r->s, &k, tc_info(), "meta", 4, p, sizeof payload_a), TIRX_OK,
               "%s", r->log.last);
}

/* get without faults: a hit must carry exactly p; returns whether it hit. */
static bool get_check(rig *r, int key, const unsigned char *p) {
  tirx__cache_key k = tc_key(key);
  tirx__store_entry e;
  bool hit = tirx__store_get(r->s, &k, tc_info(), &e);
  if (hit) {
    cr_assert_eq(e.payload_len, sizeof payload_a);
    cr_assert_eq(memcmp(e.payload, p, sizeof payload_a), 0, "a hit returned other bytes");
    cr_assert_eq(e.meta_len, 4);
  }
  tirx__store_entry_free(&e);
  return hit;
}

/* Counts the shimmed calls one put makes in the rig's steady state. */
static uint64_t calls_in_one_put(unsigned ops) {
  rig r;
  rig_init(&r);
  put_plain(&r, 0, payload_a);
  tirx__store_fault_set(ops, -1, 0, false);
  put_plain(&r, 1, payload_b);
  uint64_t n = tirx__store_fault_calls();
  tirx__store_fault_set(0, -1, 0, false);
  rig_fini(&r);
  return n;
}

Test(cache_faults, put_survives_a_failure_at_every_injection_point) {
  tc_fill(payload_a, sizeof payload_a, 1);
  tc_fill(payload_b, sizeof payload_b, 2);
  uint64_t ncalls = calls_in_one_put(TIRX__SYS_ALL);
  /* create, chmod, write, fsync, close, rename, the maintenance open, the eviction unlink */
  cr_assert_geq(ncalls, 8, "only %llu injection points", (unsigned long long)ncalls);
  int cases = 0;
  for (int ei = 0; ei < NERRNOS; ei++) {
    int err = write_errnos[ei];
    for (uint64_t at = 0; at < ncalls; at++) {
      rig r;
      rig_init(&r);
      put_plain(&r, 0, payload_a); /* the old entry, evicted by the next put */
      tirx__store_fault_set(TIRX__SYS_ALL, (int64_t)at, err, false);
      tirx__cache_key k = tc_key(1);
      tirx_status st = tirx__store_put(r.s, &k, tc_info(), "meta", 4, payload_b, sizeof payload_b);
      uint64_t seen = tirx__store_fault_calls();
      tirx__store_fault_set(0, -1, 0, false);
      cr_assert_gt(seen, at, "injection point %llu was not reached", (unsigned long long)at);
      cr_assert(st == TIRX_OK || st == TIRX_E_IO, "%s at call %llu: status %s",
                strerror(err), (unsigned long long)at, tirx_status_name(st));
      cr_assert_eq(tc_count_tmp(r.root), 0, "%s at call %llu left a temp file", strerror(err),
                   (unsigned long long)at);
      tirx__store_counters c;
      tirx__store_counters_get(r.s, &c);
      if (st == TIRX_E_IO) {
        cr_assert_eq(c.publish_failed, 1);
        cr_assert_eq(r.log.n, 1, "exactly one warning, got %d", r.log.n);
        cr_assert(strncmp(r.log.last, "disk cache write: ", 18) == 0, "%s", r.log.last);
        cr_assert(strstr(r.log.last, strerror(err)), "%s", r.log.last);
        cr_assert(!get_check(&r, 1, payload_b), "a failed put published the entry");
        cr_assert_eq(tirx__store_writable(r.s), !persistent(err));
        if (persistent(err)) {
          /* Writes stop, silently from now on; reads still work. */
          cr_assert_eq(tirx__store_put(r.s, &k, tc_info(), "meta", 4, payload_b,
                                       sizeof payload_b),
                       TIRX_E_NOT_SUPPORTED);
          cr_assert_eq(r.log.n, 1);
          cr_assert(get_check(&r, 0, payload_a), "read-only mode must still serve hits");
        }
      } else {
        cr_assert(get_check(&r, 1, payload_b), "%s at call %llu: put said OK but no entry",
                  strerror(err), (unsigned long long)at);
      }
      tirx__store_counters_get(r.s, &c);
      cr_assert_eq(c.corrupt_detected, 0);
      rig_fini(&r);
      cases++;
    }
  }
  cr_assert_eq(cases, NERRNOS * (int)ncalls);
}

Test(cache_faults, a_disk_that_stays_full_from_any_point_on) {
  tc_fill(payload_a, sizeof payload_a, 1);
  tc_fill(payload_b, sizeof payload_b, 2);
  /* Everything that allocates or writes fails from the nth call on; unlink still works, as it
   * does on a full disk. */
  unsigned ops = TIRX__SYS_ALL & ~(unsigned)TIRX__SYS_UNLINKAT;
  uint64_t ncalls = calls_in_one_put(ops);
  for (int ei = 0; ei < NERRNOS; ei++)
    for (uint64_t at = 0; at < ncalls; at++) {
      rig r;
      rig_init(&r);
      put_plain(&r, 0, payload_a);
      tirx__store_fault_set(ops, (int64_t)at, write_errnos[ei], true);
      tirx__cache_key k = tc_key(1);
      for (int again = 0; again < 3; again++) {
        tirx_status st =
            tirx__store_put(r.s, &k, tc_info(), "meta", 4, payload_b, sizeof payload_b);
        cr_assert(st == TIRX_OK || st == TIRX_E_IO || st == TIRX_E_NOT_SUPPORTED);
      }
      tirx__store_fault_set(0, -1, 0, false);
      cr_assert_eq(tc_count_tmp(r.root), 0, "%s from call %llu left a temp file",
                   strerror(write_errnos[ei]), (unsigned long long)at);
      cr_assert_leq(r.log.n, 2);
      rig_fini(&r);
    }
}

Test(cache_faults, get_survives_a_failure_at_every_injection_point) {
  tc_fill(payload_a, sizeof payload_a, 1);
  static const int read_errnos[] = {EIO, EACCES, EMFILE, ENOMEM, ESTALE, ENOENT};
  rig r;
  rig_init(&r);
  put_plain(&r, 0, payload_a);
  tirx__store_fault_set(TIRX__SYS_ALL, -1, 0, false);
  cr_assert(get_check(&r, 0, payload_a));
  uint64_t ncalls = tirx__store_fault_calls();
  tirx__store_fault_set(0, -1, 0, false);
  cr_assert_geq(ncalls, 4, "open, fstat, pread, futimens, close");
  char path[512];
  tirx__cache_key k = tc_key(0);
  tc_entry_path(path, sizeof path, r.root, &k);
  for (size_t ei = 0; ei < sizeof read_errnos / sizeof read_errnos[0]; ei++)
    for (uint64_t at = 0; at < ncalls; at++) {
      tirx__store_fault_set(TIRX__SYS_ALL, (int64_t)at, read_errnos[ei], false);
      bool hit = get_check(&r, 0, payload_a);
      tirx__store_fault_set(0, -1, 0, false);
      (void)hit; /* a failed touch or close after validation may still hit */
      tirx__store_counters c;
      tirx__store_counters_get(r.s, &c);
      cr_assert_eq(c.corrupt_detected, 0, "an I/O error is not corruption");
      cr_assert(tc_exists(path), "%s at call %llu removed a good entry",
                strerror(read_errnos[ei]), (unsigned long long)at);
      cr_assert(get_check(&r, 0, payload_a), "the entry still hits afterwards");
    }
  cr_assert_leq(r.log.n, 1, "one warning for read errors");
  rig_fini(&r);
}

Test(cache_faults, open_survives_a_failure_at_every_injection_point) {
  char dir[256], root[400];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/a/b/root", dir);
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  tirx__store *s = NULL;
  tirx__store_fault_set(TIRX__SYS_ALL, -1, 0, false);
  cr_assert_eq(tirx__store_open(&o, &s), TIRX_OK);
  uint64_t ncalls = tirx__store_fault_calls();
  tirx__store_fault_set(0, -1, 0, false);
  tirx__store_close(s);
  cr_assert_geq(ncalls, 5, "mkdir x3, open, chmod, fstat, maintenance open");
  for (uint64_t at = 0; at < ncalls; at++) {
    char sub[64];
    tc_rmtree(dir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    tirx__store_fault_set(TIRX__SYS_ALL, (int64_t)at, EROFS, false);
    tirx_status st = tirx__store_open(&o, &s);
    tirx__store_fault_set(0, -1, 0, false);
    snprintf(sub, sizeof sub, "call %llu", (unsigned long long)at);
    cr_assert_not_null(s, "%s", sub);
    if (st == TIRX_OK) {
      cr_assert(tirx__store_enabled(s), "%s", sub);
    } else {
      cr_assert_eq(st, TIRX_E_IO, "%s", sub);
      cr_assert(!tirx__store_enabled(s), "%s", sub);
      cr_assert(strncmp(tirx_last_error(), "disk cache open: ", 17) == 0, "%s",
                tirx_last_error());
    }
    /* Whatever happened, the store is safe to use. */
    tirx__cache_key k = tc_key(0);
    tirx_status pst = tirx__store_put(s, &k, tc_info(), "m", 1, "p", 1);
    cr_assert(pst == TIRX_OK || pst == TIRX_E_NOT_SUPPORTED, "%s: %s", sub,
              tirx_status_name(pst));
    tirx__store_entry e;
    cr_assert_eq(tirx__store_get(s, &k, tc_info(), &e), pst == TIRX_OK, "%s", sub);
    tirx__store_entry_free(&e);
    tirx__store_close(s);
  }
  tc_rmtree(dir);
}

Test(cache_faults, file_size_limit_stops_writes_with_one_warning) {
  tc_fill(payload_a, sizeof payload_a, 1);
  rig r;
  rig_init(&r);
  put_plain(&r, 0, payload_a);
  /* ulimit -f 0 (nodejs/node#65473): the write fails with EFBIG once SIGXFSZ is ignored. */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old, lim;
  cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = 0;
  cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  tirx__cache_key k = tc_key(1);
  tirx_status st = tirx__store_put(r.s, &k, tc_info(), "meta", 4, payload_a, sizeof payload_a);
  tirx_status st2 = tirx__store_put(r.s, &k, tc_info(), "meta", 4, payload_a, sizeof payload_a);
  cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
  cr_assert_eq(st, TIRX_E_IO);
  cr_assert_eq(st2, TIRX_E_NOT_SUPPORTED);
  cr_assert(!tirx__store_writable(r.s));
  cr_assert_eq(r.log.n, 1);
  cr_assert(strstr(r.log.last, "write of '") && strstr(r.log.last, "stops writing"), "%s",
            r.log.last);
  cr_assert_eq(tc_count_tmp(r.root), 0);
  cr_assert(get_check(&r, 0, payload_a), "hits are still served");
  rig_fini(&r);
}

Test(cache_faults, real_read_only_directory) {
  if (geteuid() == 0) cr_skip_test("root ignores mode 0500; the fault shim covers it");
  tc_fill(payload_a, sizeof payload_a, 1);
  rig r;
  rig_init(&r);
  put_plain(&r, 0, payload_a);
  cr_assert_eq(chmod(r.root, 0500), 0);
  tirx__store_close(r.s);
  rig_open(&r); /* 0500 is not writable by others: accepted */
  tirx__cache_key k = tc_key(1);
  cr_assert_eq(tirx__store_put(r.s, &k, tc_info(), "m", 1, payload_a, 10), TIRX_E_IO);
  cr_assert(!tirx__store_writable(r.s));
  cr_assert_eq(r.log.n, 1);
  cr_assert(get_check(&r, 0, payload_a));
  cr_assert_eq(tc_count_tmp(r.root), 0);
  chmod(r.root, 0700);
  rig_fini(&r);
}

/* The real cause of a failed open: EACCES on a parent that has to be created, not the ENOENT
 * that the last mkdir then sees (issue 18). Injected through the shim (root ignores 0500). */
Test(cache_faults, eacces_on_a_parent_is_reported_as_the_cause) {
  char dir[256], root[400], parent[320];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(parent, sizeof parent, "%s/p", dir);
  snprintf(root, sizeof root, "%s/q/root", parent);
  int slashes = 0;
  for (const char *c = dir; *c; c++) slashes += *c == '/';
  tc_log log = {0};
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  o.log = tc_log_fn;
  o.log_user = &log;
  tirx__store *s = NULL;
  /* mkdir calls: one per component of dir (they exist), then <dir>/p: that one fails. */
  tirx__store_fault_set(TIRX__SYS_MKDIR, slashes, EACCES, false);
  tirx_status st = tirx__store_open(&o, &s);
  tirx__store_fault_set(0, -1, 0, false);
  cr_assert_eq(st, TIRX_E_IO);
  cr_assert_not(tirx__store_enabled(s));
  char want[1400];
  snprintf(want, sizeof want,
           "disk cache open: cannot create cache directory '%s': cannot create its parent "
           "'%s': Permission denied; the disk cache is disabled",
           root, parent);
  cr_assert_str_eq(tirx_last_error(), want);
  cr_assert_str_eq(tirx__store_disabled_reason(s), want);
  cr_assert_str_eq(log.last, want);
  tirx__store_close(s);
  cr_assert(!tc_exists(parent));

  /* The last component's own failure is still reported as it was. */
  s = NULL;
  tirx__store_fault_set(TIRX__SYS_MKDIR, slashes + 2, EACCES, false);
  cr_assert_eq(tirx__store_open(&o, &s), TIRX_E_IO);
  tirx__store_fault_set(0, -1, 0, false);
  snprintf(want, sizeof want,
           "disk cache open: cannot create cache directory '%s': Permission denied; the disk "
           "cache is disabled",
           root);
  cr_assert_str_eq(tirx_last_error(), want);
  tirx__store_close(s);
  tc_rmtree(dir);
}

/* The same with real permission bits, where they bind (not root). */
Test(cache_faults, real_mode_0500_parent_is_reported_as_the_cause) {
  if (geteuid() == 0) cr_skip_test("root ignores mode 0500; the fault shim covers it");
  char dir[256], root[400], parent[320];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(parent, sizeof parent, "%s/p", dir);
  snprintf(root, sizeof root, "%s/q/root", parent);
  cr_assert_eq(chmod(dir, 0500), 0);
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  tirx__store *s = NULL;
  cr_assert_eq(tirx__store_open(&o, &s), TIRX_E_IO);
  char want[1400];
  snprintf(want, sizeof want,
           "disk cache open: cannot create cache directory '%s': cannot create its parent "
           "'%s': Permission denied; the disk cache is disabled",
           root, parent);
  cr_assert_str_eq(tirx_last_error(), want);
  tirx__store_close(s);
  tc_rmtree(dir);
}
