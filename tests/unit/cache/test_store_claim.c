/*
 * Single flight across processes (issue 18): per-key claims on one cache directory, with
 * forked processes (the CPU tests have no CUDA state to lose in a fork). Children use the
 * store only, report through shared memory and leave with _exit (no libuv in them).
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "cache_helpers.h"

enum { NPROC = 8, NKEYS = 20, PAYLOAD = 2000 };

typedef struct shared {
  atomic_int start;
  atomic_int compiles;
  atomic_int per_key[NKEYS];
  atomic_int hits, owners, nones, bad;
} shared;

static shared *map_shared(void) {
  void *p = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  memset(p, 0, sizeof(shared));
  return p;
}

static void payload_for(int key, unsigned char *p) { tc_fill(p, PAYLOAD, (uint64_t)key + 77); }

/* One process's work: every key in order; a "compile" is a counted sleep of compile_us. */
static int child_run(const char *root, shared *sh, int compile_us, int wait_ms) {
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  o.fsync = false;
  tirx__store *s = NULL;
  if (tirx__store_open(&o, &s) != TIRX_OK) return 10;
  while (!atomic_load(&sh->start)) {
  }
  unsigned char want[PAYLOAD];
  for (int k = 0; k < NKEYS; k++) {
    tirx__cache_key key = tc_key(k);
    payload_for(k, want);
    tirx__store_entry e;
    if (tirx__store_get(s, &key, tc_info(), &e)) {
      if (e.payload_len != PAYLOAD || memcmp(e.payload, want, PAYLOAD))
        atomic_fetch_add(&sh->bad, 1);
      tirx__store_entry_free(&e);
      atomic_fetch_add(&sh->hits, 1);
      continue;
    }
    tirx__claim c;
    tirx__store_claim_result r = tirx__store_claim(s, &key, tc_info(), wait_ms, &c, &e);
    if (r == TIRX__CLAIM_HIT) {
      if (e.payload_len != PAYLOAD || memcmp(e.payload, want, PAYLOAD))
        atomic_fetch_add(&sh->bad, 1);
      tirx__store_entry_free(&e);
      atomic_fetch_add(&sh->hits, 1);
      continue;
    }
    atomic_fetch_add(r == TIRX__CLAIM_OWNER ? &sh->owners : &sh->nones, 1);
    atomic_fetch_add(&sh->compiles, 1);
    atomic_fetch_add(&sh->per_key[k], 1);
    usleep((useconds_t)compile_us);
    tirx__store_put(s, &key, tc_info(), "m", 1, want, PAYLOAD);
    tirx__store_claim_release(s, &c);
  }
  tirx__store_close(s);
  return 0;
}

static void spawn(pid_t *pids, const char *root, shared *sh, int compile_us, int wait_ms) {
  for (int i = 0; i < NPROC; i++) {
    pids[i] = fork();
    cr_assert_geq(pids[i], 0, "fork: %s", strerror(errno));
    if (pids[i] == 0) _exit(child_run(root, sh, compile_us, wait_ms));
  }
}

static int count_prefix(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return n;
}

Test(cache_claim, eight_processes_twenty_new_keys_compile_each_once) {
  char dir[256], root[320];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  tirx__store *s = tc_open(root, NULL); /* create the directory before the race */
  shared *sh = map_shared();
  pid_t pids[NPROC];
  spawn(pids, root, sh, 3000, 10000);
  atomic_store(&sh->start, 1);
  for (int i = 0; i < NPROC; i++) {
    int status;
    cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", i, status);
  }
  int compiles = atomic_load(&sh->compiles);
  tirx__store_counters sc;
  tirx__store_counters_get(s, &sc);
  cr_log_info("%d compiles, %d hits, %d claims taken for %d requests", compiles,
              atomic_load(&sh->hits), atomic_load(&sh->owners), NPROC * NKEYS);
  cr_assert_leq(compiles, NKEYS + 2, "%d compiles for %d keys", compiles, NKEYS);
  cr_assert_geq(compiles, NKEYS);
  cr_assert_eq(atomic_load(&sh->nones), 0, "a waiter gave up on a live holder");
  cr_assert_eq(atomic_load(&sh->bad), 0, "a hit returned other bytes");
  cr_assert_eq(atomic_load(&sh->hits) + atomic_load(&sh->owners), NPROC * NKEYS);
  tirx__store_verify_counts vc;
  cr_assert_eq(tirx__store_verify(s, &vc), TIRX_OK);
  cr_assert_eq(vc.ok, NKEYS);
  cr_assert_eq(vc.corrupt, 0);
  cr_assert_eq(count_prefix(root, ".lock."), 0, "a successful holder left its lock file");
  cr_assert_eq(count_prefix(root, ".tmp."), 0);
  tirx__store_close(s);
  munmap(sh, sizeof *sh);
  tc_rmtree(dir);
}

/* A live holder past the waiter's deadline is ignored: the waiter compiles. */
Test(cache_claim, live_holder_past_the_deadline_is_ignored) {
  char dir[256], root[320];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  tirx__store *a = tc_open(root, NULL), *b = tc_open(root, NULL);
  tirx__cache_key key = tc_key(1);
  tirx__claim ca, cb;
  tirx__store_entry e;
  cr_assert_eq(tirx__store_claim(a, &key, tc_info(), 0, &ca, &e), TIRX__CLAIM_OWNER);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(tirx__store_claim(b, &key, tc_info(), 50, &cb, &e), TIRX__CLAIM_NONE);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  cr_assert(ms >= 49 && ms < 2000, "waited %.1f ms for a 50 ms deadline", ms);
  tirx__store_counters c;
  tirx__store_counters_get(b, &c);
  cr_assert_eq(c.claim_timeouts, 1);
  tirx__store_claim_release(b, &cb); /* not held: a no-op */
  /* The holder publishes: a later claim is a hit; the release removes the lock file. */
  unsigned char p[PAYLOAD];
  payload_for(1, p);
  cr_assert_eq(tirx__store_put(a, &key, tc_info(), "m", 1, p, PAYLOAD), TIRX_OK);
  tirx__store_claim_release(a, &ca);
  cr_assert_eq(count_prefix(root, ".lock."), 0);
  cr_assert_eq(tirx__store_claim(b, &key, tc_info(), 50, &cb, &e), TIRX__CLAIM_HIT);
  cr_assert_eq(e.payload_len, PAYLOAD);
  tirx__store_entry_free(&e);
  /* Arguments. */
  cr_assert_eq(tirx__store_claim(NULL, &key, tc_info(), 0, &cb, &e), TIRX__CLAIM_NONE);
  cr_assert_str_eq(tirx_last_error(), "disk cache lock: s is NULL");
  cr_assert_eq(tirx__store_claim(b, NULL, tc_info(), 0, &cb, &e), TIRX__CLAIM_NONE);
  cr_assert_eq(cb.fd, -1);
  tirx__store_claim_release(NULL, NULL);
  tirx__store_close(a);
  tirx__store_close(b);
  tc_rmtree(dir);
}

/* A dead holder's claim is broken at once: a holder killed with SIGKILL does not make the
 * waiter sit out its deadline. */
Test(cache_claim, dead_holder_is_broken_at_once) {
  char dir[256], root[320];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  tirx__store *s = tc_open(root, NULL);
  shared *sh = map_shared();
  tirx__cache_key key = tc_key(3);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    tirx__store *cs = NULL;
    tirx__store_options o;
    tirx__store_options_init(&o);
    o.path = root;
    if (tirx__store_open(&o, &cs) != TIRX_OK) _exit(10);
    tirx__claim c;
    tirx__store_entry e;
    if (tirx__store_claim(cs, &key, tc_info(), 0, &c, &e) != TIRX__CLAIM_OWNER) _exit(11);
    atomic_store(&sh->start, 1);
    for (;;) pause(); /* "compiling" forever */
  }
  while (!atomic_load(&sh->start)) usleep(100);
  tirx__claim c;
  tirx__store_entry e;
  cr_assert_eq(tirx__store_claim(s, &key, tc_info(), 30, &c, &e), TIRX__CLAIM_NONE,
               "the live holder must keep the claim");
  kill(pid, SIGKILL);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(tirx__store_claim(s, &key, tc_info(), 10000, &c, &e), TIRX__CLAIM_OWNER);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  cr_assert_lt(ms, 500, "took %.1f ms to break a dead holder's claim (polls every <= 16 ms)",
               ms);
  tirx__store_claim_release(s, &c);
  cr_assert_eq(count_prefix(root, ".lock."), 0);
  tirx__store_close(s);
  munmap(sh, sizeof *sh);
  tc_rmtree(dir);
}

/* SIGKILL of holders at random moments loses nothing: afterwards every key can be claimed or
 * hit at once, verify finds nothing corrupt, and clear leaves the directory empty. */
Test(cache_claim, sigkill_of_holders_at_random_moments_loses_nothing) {
  char dir[256], root[320];
  tc_mkdtemp(dir, sizeof dir);
  snprintf(root, sizeof root, "%s/root", dir);
  tirx__store *s = tc_open(root, NULL);
  uint64_t rng = 12345;
  for (int round = 0; round < 4; round++) {
    shared *sh = map_shared();
    pid_t pids[NPROC];
    spawn(pids, root, sh, 2000, 10000);
    atomic_store(&sh->start, 1);
    for (int i = 0; i < NPROC; i++) {
      usleep((useconds_t)(test_rand(&rng) % 8000));
      if (test_rand(&rng) % 2) kill(pids[i], SIGKILL);
    }
    for (int i = 0; i < NPROC; i++) {
      int status;
      cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
      cr_assert((WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
                    (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL),
                "round %d child %d: status %d", round, i, status);
    }
    cr_assert_eq(atomic_load(&sh->bad), 0);
    cr_assert_eq(atomic_load(&sh->nones), 0, "a waiter sat out its deadline");
    munmap(sh, sizeof *sh);
    tirx__store_verify_counts vc;
    cr_assert_eq(tirx__store_verify(s, &vc), TIRX_OK);
    cr_assert_eq(vc.corrupt, 0, "round %d", round);
    cr_assert_eq(vc.kept, 0);
  }
  /* Every key: a hit or a claim taken at once (no live holder is left). */
  for (int k = 0; k < NKEYS; k++) {
    tirx__cache_key key = tc_key(k);
    tirx__claim c;
    tirx__store_entry e;
    tirx__store_claim_result r = tirx__store_claim(s, &key, tc_info(), 0, &c, &e);
    cr_assert_neq(r, TIRX__CLAIM_NONE, "key %d is still claimed by a dead process", k);
    if (r == TIRX__CLAIM_HIT) {
      unsigned char want[PAYLOAD];
      payload_for(k, want);
      cr_assert_eq(e.payload_len, PAYLOAD);
      cr_assert_eq(memcmp(e.payload, want, PAYLOAD), 0);
      tirx__store_entry_free(&e);
    }
    tirx__store_claim_release(s, &c);
  }
  uint64_t removed;
  cr_assert_eq(tirx__store_clear(s, &removed), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tc_count_files(root), 0, "clear left lock or temp files");
  tirx__store_close(s);
  tc_rmtree(dir);
}
