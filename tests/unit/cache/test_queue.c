/* The compile queue (src/cache/queue.c): shutdown with pending work (T9a), exactly-once
 * callbacks under cancel/complete races (T9b), one execution per key (T9b/T9e), 64 producer
 * threads (T9e), fork (T9f), wait timeouts, poll, the in-flight cap, progress events, pool
 * stack size, and the exact message of every documented error. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "../helpers.h"
#include "cache/queue.h"

/* Every test runs in its own process: fix libuv's pool size before its first use. */
static void setup(void) { setenv("UV_THREADPOOL_SIZE", "4", 1); }
TestSuite(queue, .init = setup, .timeout = 120);

/* ---- fixtures ------------------------------------------------------------------------ */

static tirx__cache_key key_of(uint64_t n) {
  tirx__cache_key k;
  memset(&k, 0, sizeof k);
  memcpy(k.bytes, &n, sizeof n);
  k.bytes[15] = 0xA5;
  return k;
}

static void sleep_ms(int ms) { uv_sleep((unsigned)ms); }

static tirx__queue *new_queue(uint32_t max_in_flight) {
  tirx__queue_options o;
  tirx__queue_options_init(&o);
  o.max_in_flight = max_in_flight;
  tirx__queue *q = NULL;
  cr_assert_eq(tirx__queue_create(&o, &q), TIRX_OK, "%s", tirx_last_error());
  cr_assert_not_null(q);
  return q;
}

/* What a callback saw. */
typedef struct rec {
  atomic_int calls;
  tirx_status status;
  void *result;
  uv_thread_t thread;
  char message[256];
} rec;

static void on_done(tirx__future *f, tirx_status st, void *result, void *data) {
  rec *r = data;
  r->status = st;
  r->result = result;
  r->thread = uv_thread_self();
  snprintf(r->message, sizeof r->message, "%s", tirx__future_message(f));
  atomic_fetch_add(&r->calls, 1);
}

/* Result values: malloc'ed, counted when made and freed. */
static atomic_int results_made, results_freed, args_freed;

static void free_result(void *p) {
  atomic_fetch_add(&results_freed, 1);
  free(p);
}
static void free_arg(void *p) {
  atomic_fetch_add(&args_freed, 1);
  free(p);
}

/* arg: a malloc'ed uint64_t; result: a malloc'ed copy of it. */
static tirx_status job_echo(void *arg, void **result, char **message) {
  (void)message;
  uint64_t *v = malloc(sizeof *v);
  *v = *(uint64_t *)arg;
  atomic_fetch_add(&results_made, 1);
  *result = v;
  return TIRX_OK;
}

static uint64_t *u64(uint64_t v) {
  uint64_t *p = malloc(sizeof *p);
  *p = v;
  return p;
}

static tirx__job echo_job(uint64_t key, uint64_t value) {
  tirx__job j = {.key = key_of(key), .run = job_echo, .arg = u64(value), .arg_free = free_arg,
                 .result_free = free_result};
  return j;
}

/* A gate that blocked jobs wait on. */
typedef struct gate {
  uv_sem_t sem;
  atomic_int started;
  atomic_int finished;
} gate;

static void gate_init(gate *g) {
  cr_assert_eq(uv_sem_init(&g->sem, 0), 0);
  atomic_init(&g->started, 0);
  atomic_init(&g->finished, 0);
}
static void gate_open(gate *g, int n) {
  for (int i = 0; i < n; i++) uv_sem_post(&g->sem);
}
static void gate_wait_started(gate *g, int n) {
  for (int i = 0; i < 20000 && atomic_load(&g->started) < n; i++) sleep_ms(1);
  cr_assert_eq(atomic_load(&g->started), n, "only %d of %d jobs started",
               atomic_load(&g->started), n);
}

/* arg: a gate. Blocks until the gate opens; result: the gate itself. */
static tirx_status job_block(void *arg, void **result, char **message) {
  (void)message;
  gate *g = arg;
  atomic_fetch_add(&g->started, 1);
  uv_sem_wait(&g->sem);
  atomic_fetch_add(&g->finished, 1);
  *result = g;
  return TIRX_OK;
}

static tirx__job block_job(uint64_t key, gate *g) {
  tirx__job j = {.key = key_of(key), .run = job_block, .arg = g};
  return j;
}

static atomic_int forbidden_runs;
static tirx_status job_must_not_run(void *arg, void **result, char **message) {
  (void)arg;
  (void)result;
  (void)message;
  atomic_fetch_add(&forbidden_runs, 1);
  return TIRX_OK;
}

static tirx_status job_nop(void *arg, void **result, char **message) {
  (void)arg;
  (void)result;
  (void)message;
  return TIRX_OK;
}

/* ---- T9a: shutdown with pending work -------------------------------------------------- */

/* Opens the gate from the first cancelled callback, so the blocked jobs finish only after
 * shutdown has cancelled everything else. */
typedef struct t9a_ctx {
  gate *g;
  atomic_int opened;
  rec recs[1000];
} t9a_ctx;

static void t9a_done(tirx__future *f, tirx_status st, void *result, void *data) {
  rec *r = data;
  t9a_ctx *ctx = r->result; /* stashed before submit */
  on_done(f, st, result, data);
  if (st == TIRX_E_CANCELLED && atomic_exchange(&ctx->opened, 1) == 0) gate_open(ctx->g, 4);
}

static void t9a_run(uint32_t max_in_flight) {
  gate g;
  gate_init(&g);
  t9a_ctx *ctx = calloc(1, sizeof *ctx);
  ctx->g = &g;
  atomic_store(&forbidden_runs, 0);
  tirx__queue *q = new_queue(max_in_flight);

  /* Saturate the pool (libuv's test-threadpool-cancel.c): 4 jobs blocked on the gate. */
  rec blocked[4];
  memset(blocked, 0, sizeof blocked);
  for (int i = 0; i < 4; i++) {
    tirx__job j = block_job((uint64_t)i, &g);
    cr_assert_eq(tirx__queue_submit(q, &j, on_done, &blocked[i], NULL), TIRX_OK);
  }
  gate_wait_started(&g, 4);
  for (int i = 0; i < 1000; i++) {
    ctx->recs[i].result = ctx;
    tirx__job j = {.key = key_of(100 + (uint64_t)i), .run = job_must_not_run,
                   .arg = u64((uint64_t)i), .arg_free = free_arg};
    cr_assert_eq(tirx__queue_submit(q, &j, t9a_done, &ctx->recs[i], NULL), TIRX_OK);
  }
  tirx__queue_stats st;
  uint64_t t0 = uv_hrtime();
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK, "%s", tirx_last_error());
  cr_assert_lt(uv_hrtime() - t0, 5000000000ull, "shutdown took too long");

  for (int i = 0; i < 1000; i++) {
    cr_assert_eq(atomic_load(&ctx->recs[i].calls), 1, "request %d: %d callbacks", i,
                 atomic_load(&ctx->recs[i].calls));
    cr_assert_eq(ctx->recs[i].status, TIRX_E_CANCELLED);
    cr_assert_null(ctx->recs[i].result);
    cr_assert_str_eq(ctx->recs[i].message,
                     "compile queue destroy: the queue shut down before the request ran");
  }
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(atomic_load(&blocked[i].calls), 1);
    cr_assert_eq(blocked[i].status, TIRX_OK);
    cr_assert_eq(blocked[i].result, &g);
  }
  cr_assert_eq(atomic_load(&forbidden_runs), 0);
  cr_assert_eq(atomic_load(&args_freed), 1000);
  cr_assert_eq(st.submitted, 1004);
  cr_assert_eq(st.executed, 4);
  cr_assert_eq(st.cancelled, 1000);
  cr_assert_eq(st.completed, 4);
  cr_assert_eq(st.waiting, 0);
  cr_assert_eq(st.in_flight, 0);
  uv_sem_destroy(&g.sem);
  free(ctx);
}

/* Every job is handed to libuv at once: shutdown uv_cancels the 1,000 queued in the pool. */
Test(queue, t9a_shutdown_uv_cancels_pool_work) { t9a_run(TIRX__QUEUE_UNLIMITED); }

/* With the cap at 4, the 1,000 wait in the queue's FIFO and shutdown drops them. */
Test(queue, t9a_shutdown_drops_fifo) { t9a_run(4); }

/* A host loop next to the queue closes cleanly after the queue shuts down. */
static void host_work(uv_work_t *w) { (void)w; }
static void host_after(uv_work_t *w, int status) {
  (void)status;
  *(int *)w->data += 1;
}

Test(queue, host_loop_closes_after_shutdown) {
  uv_loop_t host;
  cr_assert_eq(uv_loop_init(&host), 0);
  tirx__queue *q = new_queue(0);
  tirx__job j = echo_job(1, 7);
  tirx__future *f;
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &f), TIRX_OK);
  int done = 0;
  uv_work_t w = {.data = &done};
  cr_assert_eq(uv_queue_work(&host, &w, host_work, host_after), 0);
  cr_assert_eq(uv_run(&host, UV_RUN_DEFAULT), 0);
  cr_assert_eq(done, 1);
  cr_assert_eq(tirx__future_wait(f, -1), TIRX_OK);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  cr_assert_eq(uv_loop_close(&host), 0);
  tirx__future_release(f);
}

/* ---- T9b: exactly once under churn ---------------------------------------------------- */

typedef struct churn_req {
  rec r;
  tirx__future *f;
  uint64_t key;
  bool cancel_took;
} churn_req;

typedef struct churn_thread {
  tirx__queue *q;
  churn_req *reqs;
  int n;
  uint64_t seed;
  atomic_int *errors;
} churn_thread;

/* arg: a malloc'ed key; spins a little; result: a malloc'ed copy of the key. */
static tirx_status job_spin_echo(void *arg, void **result, char **message) {
  (void)message;
  uint64_t v = *(uint64_t *)arg;
  for (volatile uint64_t i = 0; i < (v % 7) * 300; i++) {
  }
  uint64_t *out = malloc(sizeof *out);
  *out = v;
  atomic_fetch_add(&results_made, 1);
  *result = out;
  return TIRX_OK;
}

static void churn_main(void *arg) {
  churn_thread *t = arg;
  uint64_t s = t->seed;
  for (int i = 0; i < t->n; i++) {
    churn_req *r = &t->reqs[i];
    tirx__job j = {.key = key_of(r->key), .run = job_spin_echo, .arg = u64(r->key),
                   .arg_free = free_arg, .result_free = free_result};
    if (tirx__queue_submit(t->q, &j, on_done, &r->r, &r->f) != TIRX_OK) {
      atomic_fetch_add(t->errors, 1);
      continue;
    }
    /* Cancel about half, some at once, some a little later. */
    if (test_rand(&s) % 2 == 0) {
      int back = (int)(test_rand(&s) % 8);
      churn_req *c = &t->reqs[i >= back ? i - back : i];
      bool took = false;
      if (c->f && tirx__future_cancel(c->f, &took) != TIRX_OK) atomic_fetch_add(t->errors, 1);
      if (took) c->cancel_took = true;
    }
    if (test_rand(&s) % 64 == 0) uv_sleep(0);
  }
}

Test(queue, t9b_exactly_once_under_churn) {
  enum { ROUNDS = 24, THREADS = 8, PER_THREAD = 250, N = THREADS * PER_THREAD };
  uint64_t seed = 0x5eed;
  churn_req *reqs = calloc(N, sizeof *reqs);
  for (int round = 0; round < ROUNDS; round++) {
    memset(reqs, 0, N * sizeof *reqs);
    atomic_store(&results_made, 0);
    atomic_store(&results_freed, 0);
    atomic_store(&args_freed, 0);
    static const uint32_t caps[] = {1, 2, 4, TIRX__QUEUE_UNLIMITED};
    tirx__queue *q = new_queue(caps[round % 4]);
    for (int i = 0; i < N; i++) reqs[i].key = (uint64_t)test_rand_range(&seed, 0, N / 3);
    atomic_int errors = 0;
    churn_thread th[THREADS];
    uv_thread_t tid[THREADS];
    for (int t = 0; t < THREADS; t++) {
      th[t] = (churn_thread){q, reqs + t * PER_THREAD, PER_THREAD, test_rand(&seed), &errors};
      cr_assert_eq(uv_thread_create(&tid[t], churn_main, &th[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) uv_thread_join(&tid[t]);
    cr_assert_eq(atomic_load(&errors), 0);
    /* Wait for some, then shut down with the rest still pending. */
    for (int i = 0; i < N; i += 3) {
      tirx_status st = tirx__future_wait(reqs[i].f, -1);
      cr_assert(st == TIRX_OK || st == TIRX_E_CANCELLED, "%s", tirx_status_name(st));
    }
    tirx__queue_stats st;
    cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
    cr_assert_eq(st.submitted, N);
    cr_assert_eq(st.cancelled + st.completed, N);
    int ok = 0, cancelled = 0;
    for (int i = 0; i < N; i++) {
      churn_req *r = &reqs[i];
      cr_assert_eq(atomic_load(&r->r.calls), 1, "round %d request %d: %d callbacks", round, i,
                   atomic_load(&r->r.calls));
      cr_assert_eq(tirx__future_poll(r->f), r->r.status);
      if (r->r.status == TIRX_OK) {
        ok++;
        cr_assert(!r->cancel_took, "a cancel that took effect ended as OK");
        cr_assert_not_null(r->r.result);
        cr_assert_eq(*(uint64_t *)r->r.result, r->key);
        cr_assert_eq(tirx__future_result(r->f), r->r.result);
      } else {
        cancelled++;
        cr_assert_eq(r->r.status, TIRX_E_CANCELLED, "%s", tirx_status_name(r->r.status));
        cr_assert_null(tirx__future_result(r->f));
      }
      tirx__future_release(r->f);
    }
    cr_assert_eq((uint64_t)ok, st.completed);
    cr_assert_eq((uint64_t)cancelled, st.cancelled);
    cr_assert_leq(st.executed, st.submitted - st.dedup_joined);
    /* Every result made was freed once; every argument freed once. */
    cr_assert_eq(atomic_load(&results_made), atomic_load(&results_freed));
    cr_assert_eq(atomic_load(&args_freed), N);
  }
  free(reqs);
}

/* ---- one execution per key ------------------------------------------------------------- */

/* arg: a gate; blocks; result: a malloc'ed value 42. */
static tirx_status job_block_value(void *arg, void **result, char **message) {
  (void)message;
  gate *g = arg;
  atomic_fetch_add(&g->started, 1);
  uv_sem_wait(&g->sem);
  uint64_t *v = malloc(sizeof *v);
  *v = 42;
  atomic_fetch_add(&results_made, 1);
  *result = v;
  return TIRX_OK;
}

typedef struct dedup_thread {
  tirx__queue *q;
  gate *g;
  tirx__future **fs;
  rec *recs;
  int n;
  atomic_int *errors;
} dedup_thread;

static void dedup_main(void *arg) {
  dedup_thread *t = arg;
  for (int i = 0; i < t->n; i++) {
    tirx__job j = {.key = key_of(77), .run = job_block_value, .arg = t->g,
                   .result_free = free_result};
    if (tirx__queue_submit(t->q, &j, on_done, &t->recs[i], &t->fs[i]) != TIRX_OK)
      atomic_fetch_add(t->errors, 1);
  }
}

/* T9b/T9e: 1,000 concurrent requests for one key from 8 threads cause 1 execution. */
Test(queue, dedup_1000_same_key_one_execution) {
  enum { THREADS = 8, PER = 125, N = THREADS * PER };
  gate g;
  gate_init(&g);
  tirx__queue *q = new_queue(0);
  tirx__future **fs = calloc(N, sizeof *fs);
  rec *recs = calloc(N, sizeof *recs);
  /* The first request starts the job; the rest arrive while it is blocked. */
  dedup_thread first = {q, &g, fs, recs, 1, NULL};
  atomic_int errors = 0;
  first.errors = &errors;
  dedup_main(&first);
  gate_wait_started(&g, 1);
  dedup_thread th[THREADS];
  uv_thread_t tid[THREADS];
  for (int t = 0; t < THREADS; t++) {
    int lo = 1 + t * PER, n = t == THREADS - 1 ? N - lo : PER;
    th[t] = (dedup_thread){q, &g, fs + lo, recs + lo, n, &errors};
    cr_assert_eq(uv_thread_create(&tid[t], dedup_main, &th[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) uv_thread_join(&tid[t]);
  cr_assert_eq(atomic_load(&errors), 0);
  tirx__queue_stats st;
  cr_assert_eq(tirx__queue_stats_get(q, &st), TIRX_OK);
  cr_assert_eq(st.submitted, N);
  cr_assert_eq(st.dedup_joined, N - 1);
  cr_assert_eq(tirx__future_poll(fs[N - 1]), TIRX__PENDING);
  gate_open(&g, 1);
  void *shared = NULL;
  for (int i = 0; i < N; i++) {
    cr_assert_eq(tirx__future_wait(fs[i], -1), TIRX_OK, "%s", tirx_last_error());
    if (i == 0) shared = tirx__future_result(fs[i]);
    cr_assert_eq(tirx__future_result(fs[i]), shared);
    cr_assert_eq(recs[i].result, shared);
    cr_assert_eq(atomic_load(&recs[i].calls), 1);
  }
  cr_assert_eq(*(uint64_t *)shared, 42);
  cr_assert_eq(atomic_load(&g.started), 1);
  cr_assert_eq(tirx__queue_stats_get(q, &st), TIRX_OK);
  cr_assert_eq(st.executed, 1);
  cr_assert_eq(st.completed, N);
  /* The result lives until the last future goes. */
  for (int i = 0; i < N - 1; i++) tirx__future_release(fs[i]);
  cr_assert_eq(atomic_load(&results_freed), 0);
  cr_assert_eq(*(uint64_t *)tirx__future_result(fs[N - 1]), 42);
  tirx__future_release(fs[N - 1]);
  /* The queue thread lets go of its own reference just after the request reads as finished. */
  for (int i = 0; i < 10000 && atomic_load(&results_freed) == 0; i++) sleep_ms(1);
  cr_assert_eq(atomic_load(&results_freed), 1);

  /* Once finished, the same key runs again. */
  tirx__future *again;
  tirx__job j = {.key = key_of(77), .run = job_block_value, .arg = &g, .result_free = free_result};
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &again), TIRX_OK);
  gate_open(&g, 1);
  cr_assert_eq(tirx__future_wait(again, -1), TIRX_OK);
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
  cr_assert_eq(st.executed, 2);
  cr_assert_eq(st.dedup_joined, N - 1);
  tirx__future_release(again);
  cr_assert_eq(atomic_load(&results_freed), 2);
  uv_sem_destroy(&g.sem);
  free(fs);
  free(recs);
}

/* A joined request's argument is freed at once (it never runs); the job's own is freed once
 * the job is done. */
Test(queue, dedup_frees_joined_argument) {
  gate g;
  gate_init(&g);
  tirx__queue *q = new_queue(1);
  tirx__future *b, *f1, *f2;
  tirx__job blk = block_job(1, &g);
  cr_assert_eq(tirx__queue_submit(q, &blk, NULL, NULL, &b), TIRX_OK);
  tirx__job j1 = echo_job(2, 5), j2 = echo_job(2, 6);
  cr_assert_eq(tirx__queue_submit(q, &j1, NULL, NULL, &f1), TIRX_OK);
  cr_assert_eq(tirx__queue_submit(q, &j2, NULL, NULL, &f2), TIRX_OK);
  cr_assert_eq(atomic_load(&args_freed), 1);
  gate_open(&g, 1);
  cr_assert_eq(tirx__future_wait(f2, -1), TIRX_OK);
  cr_assert_eq(tirx__future_wait(f1, -1), TIRX_OK);
  cr_assert_eq(*(uint64_t *)tirx__future_result(f2), 5, "the first request's job ran");
  cr_assert_eq(tirx__future_result(f1), tirx__future_result(f2));
  cr_assert_eq(atomic_load(&args_freed), 2);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  tirx__future_release(b);
  tirx__future_release(f1);
  tirx__future_release(f2);
  uv_sem_destroy(&g.sem);
}

/* ---- T9e: cross-thread wake-ups -------------------------------------------------------- */

typedef struct producer {
  tirx__queue *q;
  int id, n;
  atomic_int *callbacks;
  atomic_int *errors;
} producer;

static void count_done(tirx__future *f, tirx_status st, void *result, void *data) {
  (void)f;
  (void)result;
  if (st == TIRX_OK) atomic_fetch_add((atomic_int *)data, 1);
}

static void producer_main(void *arg) {
  producer *p = arg;
  for (int i = 0; i < p->n; i++) {
    tirx__job j = {.key = key_of(((uint64_t)p->id << 32) | (uint64_t)i), .run = job_nop};
    if (tirx__queue_submit(p->q, &j, count_done, p->callbacks, NULL) != TIRX_OK)
      atomic_fetch_add(p->errors, 1);
  }
}

/* 64 producer threads; uv_async_send coalesces wake-ups, yet no completion is lost. */
Test(queue, t9e_64_producers_no_lost_completion) {
  enum { THREADS = 64, PER = 500, N = THREADS * PER };
  tirx__queue *q = new_queue(TIRX__QUEUE_UNLIMITED);
  atomic_int callbacks = 0, errors = 0;
  producer p[THREADS];
  uv_thread_t tid[THREADS];
  for (int t = 0; t < THREADS; t++) {
    p[t] = (producer){q, t, PER, &callbacks, &errors};
    cr_assert_eq(uv_thread_create(&tid[t], producer_main, &p[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) uv_thread_join(&tid[t]);
  cr_assert_eq(atomic_load(&errors), 0);
  for (int i = 0; i < 60000 && atomic_load(&callbacks) < N; i++) sleep_ms(1);
  cr_assert_eq(atomic_load(&callbacks), N);
  tirx__queue_stats st;
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
  cr_assert_eq(st.submitted, N);
  cr_assert_eq(st.executed, N);
  cr_assert_eq(st.completed, N);
  cr_assert_eq(st.cancelled, 0);
  cr_assert_eq(st.dedup_joined, 0);
}

/* ---- futures: wait, poll, cancel, messages -------------------------------------------- */

Test(queue, wait_timeout_then_completes) {
  gate g;
  gate_init(&g);
  tirx__queue *q = new_queue(0);
  tirx__future *f;
  tirx__job j = block_job(1, &g);
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &f), TIRX_OK);
  expect_error(tirx__future_wait(f, 0), TIRX_E_TIMEOUT,
               "compile request wait: the request did not finish within 0 ms");
  uint64_t t0 = uv_hrtime();
  expect_error(tirx__future_wait(f, 60), TIRX_E_TIMEOUT,
               "compile request wait: the request did not finish within 60 ms");
  cr_assert_geq(uv_hrtime() - t0, 60000000ull);
  cr_assert_eq(tirx__future_poll(f), TIRX__PENDING);
  cr_assert_str_eq(tirx__future_message(f), "");
  cr_assert_null(tirx__future_result(f));
  gate_open(&g, 1);
  cr_assert_eq(tirx__future_wait(f, 10000), TIRX_OK);
  cr_assert_eq(tirx__future_poll(f), TIRX_OK);
  cr_assert_eq(tirx__future_result(f), &g);
  cr_assert_str_eq(tirx__future_message(f), "");
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  /* A finished future outlives its queue. */
  cr_assert_eq(tirx__future_wait(f, 0), TIRX_OK);
  bool took = true;
  cr_assert_eq(tirx__future_cancel(f, &took), TIRX_OK);
  cr_assert(!took);
  tirx__future_release(f);
  uv_sem_destroy(&g.sem);
}

Test(queue, poll_until_done) {
  tirx__queue *q = new_queue(0);
  tirx__future *f;
  tirx__job j = echo_job(3, 9);
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &f), TIRX_OK);
  tirx_status st = TIRX__PENDING;
  for (int i = 0; i < 10000 && st == TIRX__PENDING; i++) {
    st = tirx__future_poll(f);
    if (st == TIRX__PENDING) sleep_ms(1);
  }
  cr_assert_eq(st, TIRX_OK);
  cr_assert_eq(*(uint64_t *)tirx__future_result(f), 9);
  tirx__future_release(f);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  cr_assert_eq(atomic_load(&results_freed), 1);
  cr_assert_eq(atomic_load(&args_freed), 1);
}

/* Cancelling the only request of a running job delivers the cancellation at once; the job's
 * result is discarded when it finishes. */
Test(queue, cancel_running_job_discards_result) {
  gate g;
  gate_init(&g);
  tirx__queue *q = new_queue(0);
  rec r = {0};
  tirx__future *f;
  tirx__job j = {.key = key_of(5), .run = job_block_value, .arg = &g,
                 .result_free = free_result};
  cr_assert_eq(tirx__queue_submit(q, &j, on_done, &r, &f), TIRX_OK);
  gate_wait_started(&g, 1);
  bool took = false;
  cr_assert_eq(tirx__future_cancel(f, &took), TIRX_OK);
  cr_assert(took);
  expect_error(tirx__future_wait(f, 10000), TIRX_E_CANCELLED,
               "compile request cancel: the request was cancelled");
  cr_assert_eq(atomic_load(&r.calls), 1);
  cr_assert_eq(r.status, TIRX_E_CANCELLED);
  cr_assert_str_eq(tirx__future_message(f), "compile request cancel: the request was cancelled");
  cr_assert_eq(atomic_load(&g.started), 1, "the job is still running");
  /* Cancelling twice changes nothing. */
  cr_assert_eq(tirx__future_cancel(f, &took), TIRX_OK);
  cr_assert(!took);
  /* A new request for the key does not join the discarded job. */
  rec r2 = {0};
  tirx__future *f2;
  tirx__job j2 = j;
  cr_assert_eq(tirx__queue_submit(q, &j2, on_done, &r2, &f2), TIRX_OK);
  gate_open(&g, 2);
  cr_assert_eq(tirx__future_wait(f2, 10000), TIRX_OK);
  tirx__queue_stats st;
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
  cr_assert_eq(st.executed, 2);
  cr_assert_eq(st.dedup_joined, 0);
  cr_assert_eq(st.cancelled, 1);
  cr_assert_eq(st.completed, 1);
  cr_assert_eq(atomic_load(&results_freed), 1, "the discarded result is freed");
  cr_assert_eq(atomic_load(&r.calls), 1);
  cr_assert_null(tirx__future_result(f));
  tirx__future_release(f);
  tirx__future_release(f2);
  cr_assert_eq(atomic_load(&results_freed), 2);
  uv_sem_destroy(&g.sem);
}

/* A job queued in libuv's pool behind 4 blocked ones is uv_cancel'ed and never runs. */
Test(queue, cancel_job_queued_in_pool) {
  gate g;
  gate_init(&g);
  atomic_store(&forbidden_runs, 0);
  tirx__queue *q = new_queue(TIRX__QUEUE_UNLIMITED);
  for (int i = 0; i < 4; i++) {
    tirx__job b = block_job((uint64_t)i, &g);
    cr_assert_eq(tirx__queue_submit(q, &b, NULL, NULL, NULL), TIRX_OK);
  }
  gate_wait_started(&g, 4);
  rec r = {0};
  tirx__future *f;
  tirx__job j = {.key = key_of(99), .run = job_must_not_run, .arg = u64(1), .arg_free = free_arg};
  cr_assert_eq(tirx__queue_submit(q, &j, on_done, &r, &f), TIRX_OK);
  tirx__queue_stats st;
  for (int i = 0; i < 10000; i++) { /* wait until it is handed to libuv */
    cr_assert_eq(tirx__queue_stats_get(q, &st), TIRX_OK);
    if (st.in_flight == 5) break;
    sleep_ms(1);
  }
  cr_assert_eq(st.in_flight, 5);
  bool took = false;
  cr_assert_eq(tirx__future_cancel(f, &took), TIRX_OK);
  cr_assert(took);
  cr_assert_eq(tirx__future_wait(f, 10000), TIRX_E_CANCELLED);
  /* uv_cancel returns the work before the pool frees up. */
  for (int i = 0; i < 10000; i++) {
    cr_assert_eq(tirx__queue_stats_get(q, &st), TIRX_OK);
    if (st.in_flight == 4) break;
    sleep_ms(1);
  }
  cr_assert_eq(st.in_flight, 4);
  cr_assert_eq(atomic_load(&args_freed), 1);
  gate_open(&g, 4);
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
  cr_assert_eq(atomic_load(&forbidden_runs), 0);
  cr_assert_eq(st.executed, 4);
  cr_assert_eq(st.cancelled, 1);
  cr_assert_eq(st.completed, 4);
  cr_assert_eq(atomic_load(&r.calls), 1);
  tirx__future_release(f);
  uv_sem_destroy(&g.sem);
}

/* Cancelling one of two joined requests leaves the job running for the other. */
Test(queue, cancel_one_joined_request) {
  gate g;
  gate_init(&g);
  tirx__queue *q = new_queue(0);
  tirx__future *a, *b;
  tirx__job j = {.key = key_of(8), .run = job_block_value, .arg = &g, .result_free = free_result};
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &a), TIRX_OK);
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &b), TIRX_OK);
  bool took = false;
  cr_assert_eq(tirx__future_cancel(a, &took), TIRX_OK);
  cr_assert(took);
  cr_assert_eq(tirx__future_wait(a, 10000), TIRX_E_CANCELLED);
  gate_open(&g, 1);
  cr_assert_eq(tirx__future_wait(b, 10000), TIRX_OK);
  cr_assert_eq(*(uint64_t *)tirx__future_result(b), 42);
  tirx__queue_stats st;
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
  cr_assert_eq(st.executed, 1);
  cr_assert_eq(st.dedup_joined, 1);
  tirx__future_release(a);
  tirx__future_release(b);
  uv_sem_destroy(&g.sem);
}

/* Jobs report errors through *message, through tirx__error on the pool thread, or not at all. */
static tirx_status job_fail_message(void *arg, void **result, char **message) {
  (void)arg;
  *result = u64(1); /* freed by the queue: failing jobs have no result */
  atomic_fetch_add(&results_made, 1);
  *message = strdup("nvrtc: kernel.cu(3): error: expected a \";\"");
  return TIRX_E_COMPILE;
}
static tirx_status job_fail_tirx_error(void *arg, void **result, char **message) {
  (void)arg;
  (void)result;
  (void)message;
  return tirx__error(TIRX_E_IO, "tirx__cache_store_put: rename failed: No space left");
}
static tirx_status job_fail_silent(void *arg, void **result, char **message) {
  (void)arg;
  (void)result;
  (void)message;
  return TIRX_E_DRIVER;
}

Test(queue, job_errors_carry_their_message) {
  tirx__queue *q = new_queue(0);
  tirx__future *f1, *f2, *f3, *f4;
  rec r = {0};
  tirx__job j1 = {.key = key_of(1), .run = job_fail_message, .result_free = free_result};
  tirx__job j2 = {.key = key_of(2), .run = job_fail_tirx_error};
  tirx__job j3 = {.key = key_of(3), .run = job_fail_silent, .label = "gemm_128x128"};
  tirx__job j4 = {.key = key_of(4), .run = job_fail_silent};
  cr_assert_eq(tirx__queue_submit(q, &j1, on_done, &r, &f1), TIRX_OK);
  cr_assert_eq(tirx__queue_submit(q, &j2, NULL, NULL, &f2), TIRX_OK);
  cr_assert_eq(tirx__queue_submit(q, &j3, NULL, NULL, &f3), TIRX_OK);
  cr_assert_eq(tirx__queue_submit(q, &j4, NULL, NULL, &f4), TIRX_OK);
  expect_error(tirx__future_wait(f1, -1), TIRX_E_COMPILE,
               "nvrtc: kernel.cu(3): error: expected a \";\"");
  cr_assert_eq(r.status, TIRX_E_COMPILE);
  cr_assert_null(r.result);
  cr_assert_str_eq(r.message, "nvrtc: kernel.cu(3): error: expected a \";\"");
  cr_assert_null(tirx__future_result(f1));
  cr_assert_eq(atomic_load(&results_freed), 1);
  expect_error(tirx__future_wait(f2, -1), TIRX_E_IO,
               "tirx__cache_store_put: rename failed: No space left");
  expect_error(tirx__future_wait(f3, -1), TIRX_E_DRIVER,
               "compile queue: the job gemm_128x128 failed with TIRX_E_DRIVER (CUDA driver call "
               "failed)");
  expect_error(tirx__future_wait(f4, -1), TIRX_E_DRIVER,
               "compile queue: the job failed with TIRX_E_DRIVER (CUDA driver call failed)");
  cr_assert_str_eq(tirx__future_message(f4),
                   "compile queue: the job failed with TIRX_E_DRIVER (CUDA driver call failed)");
  /* The pool thread's own last error was left clean: a later success has no message. */
  tirx__queue_stats st;
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
  cr_assert_eq(st.completed, 4);
  cr_assert_eq(st.cancelled, 0);
  tirx__future_release(f1);
  tirx__future_release(f2);
  tirx__future_release(f3);
  tirx__future_release(f4);
}

/* ---- callbacks: thread, re-entrancy, submit errors ------------------------------------ */

typedef struct reentrant {
  tirx__queue *q;
  tirx__future *pending;
  tirx_status wait_status, destroy_status, submit_status;
  char wait_msg[256], destroy_msg[256], submit_msg[256];
  atomic_int calls, submit_cb_calls;
  uv_thread_t thread;
} reentrant;

static void never_called(tirx__future *f, tirx_status st, void *result, void *data) {
  (void)f;
  (void)st;
  (void)result;
  atomic_fetch_add(&((reentrant *)data)->submit_cb_calls, 1);
}

static void reentrant_done(tirx__future *f, tirx_status st, void *result, void *data) {
  (void)f;
  (void)st;
  (void)result;
  reentrant *r = data;
  r->thread = uv_thread_self();
  tirx_clear_error();
  r->wait_status = tirx__future_wait(r->pending, -1);
  snprintf(r->wait_msg, sizeof r->wait_msg, "%s", tirx_last_error());
  r->destroy_status = tirx__queue_destroy(r->q, NULL);
  snprintf(r->destroy_msg, sizeof r->destroy_msg, "%s", tirx_last_error());
  atomic_fetch_add(&r->calls, 1);
}

Test(queue, callback_on_queue_thread_cannot_wait_or_destroy) {
  gate g;
  gate_init(&g);
  tirx__queue *q = new_queue(0);
  reentrant r = {.q = q};
  tirx__job b = block_job(1, &g);
  cr_assert_eq(tirx__queue_submit(q, &b, NULL, NULL, &r.pending), TIRX_OK);
  tirx__future *f;
  tirx__job j = echo_job(2, 2);
  cr_assert_eq(tirx__queue_submit(q, &j, reentrant_done, &r, &f), TIRX_OK);
  cr_assert_eq(tirx__future_wait(f, 10000), TIRX_OK);
  cr_assert_eq(atomic_load(&r.calls), 1);
  uv_thread_t self = uv_thread_self();
  cr_assert(!uv_thread_equal(&self, &r.thread), "callbacks run on the queue thread");
  cr_assert_eq(r.wait_status, TIRX_E_INVALID_ARG);
  cr_assert_str_eq(r.wait_msg, "compile request wait: called on the queue's thread while the "
                               "request is pending; it would never finish");
  cr_assert_eq(r.destroy_status, TIRX_E_INVALID_ARG);
  cr_assert_str_eq(r.destroy_msg, "compile queue destroy: called on the queue's own thread (from "
                                  "a completion callback); it would wait for itself");
  gate_open(&g, 1);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  tirx__future_release(f);
  tirx__future_release(r.pending);
  uv_sem_destroy(&g.sem);
}

/* Submitting from a callback during shutdown fails, and that callback is never called. */
static void submit_during_shutdown(tirx__future *f, tirx_status st, void *result, void *data) {
  (void)f;
  (void)result;
  reentrant *r = data;
  if (st != TIRX_E_CANCELLED || atomic_fetch_add(&r->calls, 1) != 0) return;
  tirx__job j = {.key = key_of(1000), .run = job_nop};
  tirx_clear_error();
  r->submit_status = tirx__queue_submit(r->q, &j, never_called, r, NULL);
  snprintf(r->submit_msg, sizeof r->submit_msg, "%s", tirx_last_error());
}

Test(queue, submit_error_never_calls_back) {
  gate g;
  gate_init(&g);
  tirx__queue *q = new_queue(1);
  reentrant r = {.q = q};
  tirx__job b = block_job(1, &g);
  cr_assert_eq(tirx__queue_submit(q, &b, NULL, NULL, NULL), TIRX_OK);
  gate_wait_started(&g, 1);
  for (int i = 0; i < 10; i++) {
    tirx__job j = {.key = key_of(10 + (uint64_t)i), .run = job_nop};
    cr_assert_eq(tirx__queue_submit(q, &j, submit_during_shutdown, &r, NULL), TIRX_OK);
  }
  gate_open(&g, 1);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  cr_assert_eq(r.submit_status, TIRX_E_CANCELLED);
  cr_assert_str_eq(r.submit_msg, "compile queue submit: the queue is shutting down");
  cr_assert_eq(atomic_load(&r.submit_cb_calls), 0);
  uv_sem_destroy(&g.sem);
}

static tirx_status job_destroys_queue(void *arg, void **result, char **message) {
  (void)result;
  (void)message;
  reentrant *r = arg;
  r->destroy_status = tirx__queue_destroy(r->q, NULL);
  snprintf(r->destroy_msg, sizeof r->destroy_msg, "%s", tirx_last_error());
  return TIRX_OK;
}

Test(queue, job_cannot_destroy_its_queue) {
  tirx__queue *q = new_queue(0);
  reentrant r = {.q = q};
  tirx__future *f;
  tirx__job j = {.key = key_of(1), .run = job_destroys_queue, .arg = &r};
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &f), TIRX_OK);
  cr_assert_eq(tirx__future_wait(f, -1), TIRX_OK);
  cr_assert_eq(r.destroy_status, TIRX_E_INVALID_ARG);
  cr_assert_str_eq(r.destroy_msg, "compile queue destroy: called from one of the queue's jobs or "
                                  "progress callbacks; it would wait for itself");
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  tirx__future_release(f);
}

/* ---- the in-flight cap, progress events, pool stacks ----------------------------------- */

Test(queue, default_cap_is_half_the_pool) {
  setenv("UV_THREADPOOL_SIZE", "6", 1);
  tirx__queue *q = NULL;
  cr_assert_eq(tirx__queue_create(NULL, &q), TIRX_OK);
  tirx__queue_stats st;
  cr_assert_eq(tirx__queue_stats_get(q, &st), TIRX_OK);
  cr_assert_eq(st.pool_size, 6);
  cr_assert_eq(st.max_in_flight, 3);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  unsetenv("UV_THREADPOOL_SIZE");
  cr_assert_eq(tirx__queue_create(NULL, &q), TIRX_OK);
  cr_assert_eq(tirx__queue_stats_get(q, &st), TIRX_OK);
  cr_assert_eq(st.pool_size, 4);
  cr_assert_eq(st.max_in_flight, 2);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
}

Test(queue, cap_limits_jobs_in_flight) {
  gate g;
  gate_init(&g);
  tirx__queue *q = new_queue(2);
  tirx__future *fs[6];
  for (int i = 0; i < 6; i++) {
    tirx__job j = block_job((uint64_t)i, &g);
    cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &fs[i]), TIRX_OK);
  }
  gate_wait_started(&g, 2);
  sleep_ms(50);
  cr_assert_eq(atomic_load(&g.started), 2);
  tirx__queue_stats st;
  cr_assert_eq(tirx__queue_stats_get(q, &st), TIRX_OK);
  cr_assert_eq(st.in_flight, 2);
  cr_assert_eq(st.waiting, 4);
  cr_assert_eq(st.max_in_flight, 2);
  gate_open(&g, 6);
  for (int i = 0; i < 6; i++) cr_assert_eq(tirx__future_wait(fs[i], 10000), TIRX_OK);
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
  cr_assert_eq(st.executed, 6);
  for (int i = 0; i < 6; i++) tirx__future_release(fs[i]);
  uv_sem_destroy(&g.sem);
}

typedef struct progress_log {
  uv_mutex_t mu;
  int n;
  tirx__queue_event ev[8];
  char label[8][32];
  uv_thread_t thread[8];
} progress_log;

static void on_progress(const tirx__queue_event *ev, void *data) {
  progress_log *log = data;
  uv_mutex_lock(&log->mu);
  if (log->n < 8) {
    log->ev[log->n] = *ev;
    snprintf(log->label[log->n], sizeof log->label[0], "%s", ev->label);
    log->thread[log->n] = uv_thread_self();
    log->n++;
  }
  uv_mutex_unlock(&log->mu);
}

static tirx_status job_sleep_20ms(void *arg, void **result, char **message) {
  (void)arg;
  (void)result;
  (void)message;
  uv_sleep(20);
  return TIRX_OK;
}

Test(queue, progress_reports_start_and_finish) {
  progress_log log = {0};
  cr_assert_eq(uv_mutex_init(&log.mu), 0);
  tirx__queue_options o;
  tirx__queue_options_init(&o);
  o.progress = on_progress;
  o.progress_data = &log;
  tirx__queue *q;
  cr_assert_eq(tirx__queue_create(&o, &q), TIRX_OK);
  tirx__future *f1, *f2;
  tirx__job j1 = {.key = key_of(1), .run = job_sleep_20ms, .label = "saxpy_f32"};
  cr_assert_eq(tirx__queue_submit(q, &j1, NULL, NULL, &f1), TIRX_OK);
  cr_assert_eq(tirx__future_wait(f1, -1), TIRX_OK);
  tirx__job j2 = {.key = key_of(2), .run = job_fail_silent};
  cr_assert_eq(tirx__queue_submit(q, &j2, NULL, NULL, &f2), TIRX_OK);
  cr_assert_eq(tirx__future_wait(f2, -1), TIRX_E_DRIVER);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  cr_assert_eq(log.n, 4);
  cr_assert_eq(log.ev[0].kind, TIRX__QUEUE_JOB_STARTED);
  cr_assert_str_eq(log.label[0], "saxpy_f32");
  cr_assert_eq(log.ev[0].duration_ns, 0);
  cr_assert_eq(log.ev[1].kind, TIRX__QUEUE_JOB_FINISHED);
  cr_assert_str_eq(log.label[1], "saxpy_f32");
  cr_assert_eq(log.ev[1].status, TIRX_OK);
  cr_assert_geq(log.ev[1].duration_ns, 20000000ull);
  cr_assert(uv_thread_equal(&log.thread[0], &log.thread[1]), "both on the job's pool thread");
  cr_assert_eq(log.ev[2].kind, TIRX__QUEUE_JOB_STARTED);
  cr_assert_str_eq(log.label[2], "");
  cr_assert_eq(log.ev[3].kind, TIRX__QUEUE_JOB_FINISHED);
  cr_assert_eq(log.ev[3].status, TIRX_E_DRIVER);
  tirx__future_release(f1);
  tirx__future_release(f2);
  uv_mutex_destroy(&log.mu);
}

/* NVRTC needs ~1.5 MiB of stack; libuv 1.44's pool threads get RLIMIT_STACK (or 2 MiB when
 * unlimited), 1.45+ 8 MiB. */
static tirx_status job_stack_size(void *arg, void **result, char **message) {
  (void)arg;
  (void)message;
  pthread_attr_t attr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstacksize(&attr, &size);
    pthread_attr_destroy(&attr);
  }
  *result = u64(size);
  return TIRX_OK;
}

Test(queue, pool_threads_have_room_for_nvrtc) {
  tirx__queue *q = new_queue(0);
  tirx__future *f;
  tirx__job j = {.key = key_of(1), .run = job_stack_size, .result_free = free};
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &f), TIRX_OK);
  cr_assert_eq(tirx__future_wait(f, -1), TIRX_OK);
  uint64_t size = *(uint64_t *)tirx__future_result(f);
  cr_assert_geq(size, 1536u * 1024u, "pool thread stack is %llu bytes", (unsigned long long)size);
  tirx__future_release(f);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
}

/* ---- fork ---------------------------------------------------------------------------- */

/* In the child every call fails cleanly; the child leaves with _exit because libuv 1.44's
 * exit-time destructor would join the parent's pool threads (FM-29). */
static int child_checks(tirx__queue *q, tirx__future *done, pid_t parent) {
  char want[256];
  int bad = 0;
  tirx__job j = {.key = key_of(50), .run = job_nop};
  tirx__future *f = (tirx__future *)1;
  tirx_clear_error();
  bad += tirx__queue_submit(q, &j, NULL, NULL, &f) != TIRX_E_FORKED;
  bad += f != NULL;
  snprintf(want, sizeof want,
           "compile queue submit: the queue was created in another process (pid %ld); a forked "
           "child cannot use it",
           (long)parent);
  bad += strcmp(tirx_last_error(), want) != 0;
  bad += tirx__future_wait(done, -1) != TIRX_E_FORKED;
  snprintf(want, sizeof want,
           "compile request wait: the future was created in another process (pid %ld); a forked "
           "child cannot use it",
           (long)parent);
  bad += strcmp(tirx_last_error(), want) != 0;
  bad += tirx__future_poll(done) != TIRX_E_FORKED;
  bad += tirx__future_cancel(done, NULL) != TIRX_E_FORKED;
  tirx__queue_stats st;
  bad += tirx__queue_stats_get(q, &st) != TIRX_E_FORKED;
  tirx__future_release(done); /* leaves the parent's memory alone */
  bad += tirx__queue_destroy(q, NULL) != TIRX_E_FORKED;
  snprintf(want, sizeof want,
           "compile queue destroy: the queue was created in another process (pid %ld); a forked "
           "child cannot use it",
           (long)parent);
  bad += strcmp(tirx_last_error(), want) != 0;
  /* A queue created in the child works. */
  tirx__queue *cq = NULL;
  bad += tirx__queue_create(NULL, &cq) != TIRX_OK;
  if (cq) {
    tirx__future *cf = NULL;
    bad += tirx__queue_submit(cq, &j, NULL, NULL, &cf) != TIRX_OK;
    bad += tirx__future_wait(cf, 10000) != TIRX_OK;
    tirx__future_release(cf);
    bad += tirx__queue_destroy(cq, NULL) != TIRX_OK;
  }
  return bad;
}

Test(queue, fork_child_gets_clean_errors) {
  tirx__queue *q = new_queue(0);
  tirx__future *done;
  tirx__job j = echo_job(1, 1);
  cr_assert_eq(tirx__queue_submit(q, &j, NULL, NULL, &done), TIRX_OK);
  cr_assert_eq(tirx__future_wait(done, -1), TIRX_OK);
  for (int round = 0; round < 20; round++) {
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) _exit(child_checks(q, done, parent) == 0 ? 0 : 1);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
  }
  /* The parent is unaffected. */
  tirx__future *f;
  tirx__job j2 = echo_job(2, 2);
  cr_assert_eq(tirx__queue_submit(q, &j2, NULL, NULL, &f), TIRX_OK);
  cr_assert_eq(tirx__future_wait(f, -1), TIRX_OK);
  cr_assert_eq(tirx__queue_destroy(q, NULL), TIRX_OK);
  tirx__future_release(f);
  tirx__future_release(done);
}

/* ---- bad arguments ------------------------------------------------------------------- */

Test(queue, bad_arguments) {
  expect_error(tirx__queue_create(NULL, NULL), TIRX_E_NULL_ARG,
               "compile queue create: out is NULL");
  tirx__queue *q = new_queue(0);
  tirx__job j = {.key = key_of(1), .run = job_nop};
  tirx__job no_run = {.key = key_of(1)};
  tirx__future *f = (tirx__future *)1;
  rec r = {0};
  expect_error(tirx__queue_submit(NULL, &j, on_done, &r, &f), TIRX_E_NULL_ARG,
               "compile queue submit: queue is NULL");
  cr_assert_null(f);
  expect_error(tirx__queue_submit(q, NULL, on_done, &r, &f), TIRX_E_NULL_ARG,
               "compile queue submit: job is NULL");
  expect_error(tirx__queue_submit(q, &no_run, on_done, &r, &f), TIRX_E_NULL_ARG,
               "compile queue submit: job->run is NULL");
  tirx__queue_stats st;
  expect_error(tirx__queue_stats_get(NULL, &st), TIRX_E_NULL_ARG,
               "compile queue stats: queue is NULL");
  expect_error(tirx__queue_stats_get(q, NULL), TIRX_E_NULL_ARG,
               "compile queue stats: out is NULL");
  expect_error(tirx__future_poll(NULL), TIRX_E_NULL_ARG, "compile request poll: future is NULL");
  expect_error(tirx__future_wait(NULL, -1), TIRX_E_NULL_ARG,
               "compile request wait: future is NULL");
  expect_error(tirx__future_cancel(NULL, NULL), TIRX_E_NULL_ARG,
               "compile request cancel: future is NULL");
  cr_assert_eq(tirx__queue_submit(q, &j, on_done, &r, &f), TIRX_OK);
  expect_error(tirx__future_wait(f, -2), TIRX_E_INVALID_ARG,
               "compile request wait: timeout_ms is -2; expected -1 (forever) or >= 0");
  cr_assert_eq(tirx__future_wait(f, -1), TIRX_OK);
  cr_assert_str_eq(tirx__future_message(NULL), "");
  cr_assert_null(tirx__future_result(NULL));
  tirx__future_retain(NULL);
  tirx__future_release(NULL);
  tirx__future_retain(f);
  tirx__future_release(f);
  tirx__future_release(f);
  cr_assert_eq(tirx__queue_destroy(NULL, NULL), TIRX_OK);
  cr_assert_eq(tirx__queue_destroy(q, &st), TIRX_OK);
  /* Only the one good submission counted, and only it called back. */
  cr_assert_eq(st.submitted, 1);
  cr_assert_eq(atomic_load(&r.calls), 1);
}
