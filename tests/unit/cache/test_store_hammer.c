/*
 * T1, scaled for CI: P processes x T threads publish and read the same few keys in one fresh
 * directory per round, with and without eviction churn. Pass: every child exits cleanly, 0
 * corrupt loads, every hit carries exactly the right bytes, 0 temp files left after a round.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "cache_helpers.h"

enum { PROCS = 4, THREADS = 4, KEYS = 4, ROUNDS = 6, ITERS = 150 };

typedef struct child_report {
  uint64_t gets, hits, puts, put_failed, wrong_bytes, corrupt, evictions;
  uint64_t by_reason[TIRX__STORE_CORRUPT_COUNT];
  int done;
} child_report;

typedef struct expected {
  tirx__cache_key key;
  size_t meta_len, payload_len;
  unsigned char meta[64];
  unsigned char *payload;
} expected;

static expected want[KEYS];

static void make_expected(void) {
  for (int i = 0; i < KEYS; i++) {
    want[i].key = tc_key(100 + i);
    want[i].meta_len = 16 + (size_t)i;
    want[i].payload_len = 2000 + (size_t)i * 7919;
    tc_fill(want[i].meta, want[i].meta_len, (uint64_t)(1000 + i));
    want[i].payload = malloc(want[i].payload_len);
    tc_fill(want[i].payload, want[i].payload_len, (uint64_t)(2000 + i));
  }
}

typedef struct worker {
  tirx__store *s;
  pthread_barrier_t *barrier;
  uint64_t seed;
  child_report local;
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  pthread_barrier_wait(w->barrier);
  for (int it = 0; it < ITERS; it++) {
    int k = (int)(test_rand(&w->seed) % KEYS);
    const expected *x = &want[k];
    tirx__store_entry e;
    w->local.gets++;
    bool hit = tirx__store_get(w->s, &x->key, tc_info(), &e);
    if (hit) {
      w->local.hits++;
      if (e.meta_len != x->meta_len || e.payload_len != x->payload_len ||
          memcmp(e.meta, x->meta, x->meta_len) != 0 ||
          memcmp(e.payload, x->payload, x->payload_len) != 0 || strcmp(e.arch, "sm_90a") != 0 ||
          e.nvrtc_major != 12 || e.nvrtc_minor != 8)
        w->local.wrong_bytes++;
      tirx__store_entry_free(&e);
    }
    /* Publish on a miss, and now and then over an existing entry (concurrent renames). */
    if (!hit || test_rand(&w->seed) % 8 == 0) {
      tirx_status st =
          tirx__store_put(w->s, &x->key, tc_info(), x->meta, x->meta_len, x->payload,
                          x->payload_len);
      if (st == TIRX_OK) w->local.puts++;
      else w->local.put_failed++;
    }
  }
  return NULL;
}

/* One child process: its own store over root, THREADS workers. Never returns. */
static void child_main(const char *root, uint64_t max_bytes, int start_fd, child_report *rep,
                       int id) {
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = root;
  o.fsync = false;
  o.max_bytes = max_bytes;
  tirx__store *s = NULL;
  char go;
  if (read(start_fd, &go, 1) < 0) _exit(3); /* all children start together */
  if (tirx__store_open(&o, &s) != TIRX_OK) _exit(2);
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, THREADS);
  worker w[THREADS];
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) {
    memset(&w[t], 0, sizeof w[t]);
    w[t].s = s;
    w[t].barrier = &barrier;
    w[t].seed = (uint64_t)(id * THREADS + t + 1) * 0x9E3779B97F4A7C15ull;
    if (pthread_create(&th[t], NULL, worker_main, &w[t]) != 0) _exit(4);
  }
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    rep->gets += w[t].local.gets;
    rep->hits += w[t].local.hits;
    rep->puts += w[t].local.puts;
    rep->put_failed += w[t].local.put_failed;
    rep->wrong_bytes += w[t].local.wrong_bytes;
  }
  tirx__store_counters c;
  tirx__store_counters_get(s, &c);
  rep->corrupt = c.corrupt_detected;
  memcpy(rep->by_reason, c.corrupt_by_reason, sizeof rep->by_reason);
  rep->evictions = c.evictions;
  rep->done = 1;
  tirx__store_close(s);
  _exit(0);
}

Test(cache_hammer, processes_and_threads_share_one_directory, .timeout = 120) {
  make_expected();
  child_report *reps =
      mmap(NULL, sizeof(child_report) * PROCS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0);
  cr_assert_neq(reps, MAP_FAILED);
  char dir[256];
  tc_mkdtemp(dir, sizeof dir);
  uint64_t total_hits = 0, total_evictions = 0, total_gets = 0;
  for (int round = 0; round < ROUNDS; round++) {
    char root[320];
    snprintf(root, sizeof root, "%s/round%d", dir, round);
    /* Odd rounds: room for about two of the four keys, so eviction races with readers. */
    uint64_t max_bytes = round % 2 ? 20000 : 0;
    memset(reps, 0, sizeof(child_report) * PROCS);
    int pipefd[2];
    cr_assert_eq(pipe(pipefd), 0);
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
      pids[p] = fork();
      cr_assert_geq(pids[p], 0, "fork: %s", strerror(errno));
      if (pids[p] == 0) {
        close(pipefd[1]);
        child_main(root, max_bytes, pipefd[0], &reps[p], round * PROCS + p);
      }
    }
    close(pipefd[0]);
    close(pipefd[1]); /* releases every child at once (read returns 0) */
    for (int p = 0; p < PROCS; p++) {
      int status = 0;
      cr_assert_eq(waitpid(pids[p], &status, 0), pids[p]);
      cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "round %d child %d: status 0x%x", round, p, status);
      cr_assert(reps[p].done, "round %d child %d did not report", round, p);
      cr_assert_eq(reps[p].wrong_bytes, 0, "round %d child %d: %llu hits with wrong bytes",
                   round, p, (unsigned long long)reps[p].wrong_bytes);
      for (int r = 0; r < TIRX__STORE_CORRUPT_COUNT; r++)
        cr_assert_eq(reps[p].by_reason[r], 0, "round %d child %d: %llu corrupt loads (%s)", round,
                     p, (unsigned long long)reps[p].by_reason[r],
                     tirx__store_corrupt_name((tirx__store_corrupt)r));
      cr_assert_eq(reps[p].corrupt, 0);
      cr_assert_eq(reps[p].put_failed, 0, "round %d child %d: %llu failed puts", round, p,
                   (unsigned long long)reps[p].put_failed);
      cr_assert_eq(reps[p].gets, THREADS * ITERS);
      total_hits += reps[p].hits;
      total_gets += reps[p].gets;
      total_evictions += reps[p].evictions;
    }
    cr_assert_eq(tc_count_tmp(root), 0, "round %d left temp files", round);
    /* Whatever is left on disk verifies clean. */
    tirx__store *s = tc_open(root, NULL);
    tirx__store_verify_counts vc;
    cr_assert_eq(tirx__store_verify(s, &vc), TIRX_OK);
    cr_assert_eq(vc.corrupt, 0);
    cr_assert_eq(vc.ok, vc.checked);
    cr_assert_gt(vc.checked, 0);
    if (max_bytes == 0) cr_assert_eq(vc.checked, KEYS);
    tirx__store_close(s);
  }
  cr_assert_gt(total_hits, total_gets / 2, "the cache should mostly hit: %llu of %llu",
               (unsigned long long)total_hits, (unsigned long long)total_gets);
  cr_assert_gt(total_evictions, 0, "the churn rounds must evict");
  munmap(reps, sizeof(child_report) * PROCS);
  tc_rmtree(dir);
  for (int i = 0; i < KEYS; i++) free(want[i].payload);
}
