/*
 * The compile queue (queue.h): a libuv loop on its own thread, jobs on libuv's thread pool,
 * a future per request, one execution per key at a time.
 *
 * Locks. q->mu guards the queue's lists, the key table, every job's state and waiter list and
 * every future until it is decided (its status chosen). f->mu only pairs with f->cv for
 * tirx__future_wait. The one place that holds both takes f->mu first (tirx__future_cancel);
 * the queue thread never takes f->mu while it holds q->mu. Every libuv call other than
 * uv_async_send happens on the queue thread (libuv's loop and pool functions are not
 * thread-safe, FM-27).
 *
 * A request's life: submit decides whether it joins a job already in the table or brings a new
 * job, which waits in the queue's FIFO. The queue thread hands waiting jobs to uv_queue_work
 * while fewer than cap are in flight. When a job's work is back (after_work), every future
 * still attached to it is decided. tirx__future_cancel decides a future on the caller's thread.
 * Decided futures go on the delivery list, which only the queue thread drains: it calls the
 * callback, counts, marks the future ready and wakes its waiters. So each future is decided
 * once, under q->mu, and delivered once, on the queue thread.
 *
 * References. A job is held by the queue (from submit until its work is back or it is
 * dropped), by every future attached to it or decided with its outcome (for the result and
 * message), and by the cancel list while it waits for uv_cancel. A future is held by the
 * caller (when it asked for one) and by the queue until delivery.
 */
#include "queue.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <uv.h>

enum job_state {
  JOB_WAITING, /* in q's FIFO */
  JOB_QUEUED,  /* handed to uv_queue_work, not back yet (it may be running) */
  JOB_DONE,    /* its work is back */
  JOB_DROPPED, /* removed from the FIFO before it was handed to libuv */
};

typedef struct job job;
struct job {
  uv_work_t work; /* work.data == this */
  tirx__queue *q;
  _Atomic size_t refs;
  tirx__cache_key key;
  tirx__job_fn run;
  void *arg;
  void (*arg_free)(void *arg);
  void (*result_free)(void *result);
  char *label;

  /* Under q->mu. */
  enum job_state state;
  bool in_table;
  job *hnext;             /* key-table chain */
  job *prev, *next;       /* the FIFO or the in-flight list */
  job *cnext;             /* the cancel list */
  bool in_cancel_list;
  bool uv_cancel_tried;   /* uv_cancel was called once; a second call could re-queue it */
  tirx__future *waiters, *waiters_tail; /* undecided futures attached to the job */
  size_t nwaiters;

  /* Written by the pool thread; read on the queue thread once the work is back. */
  tirx_status status;
  void *result;
  char *message;
};

struct tirx__future {
  _Atomic size_t refs;
  atomic_bool settled; /* status, message and result are final (set just before the callback) */
  atomic_bool ready;   /* the callback has returned: the request reads as finished */
  uv_mutex_t mu;
  uv_cond_t cv;
  pid_t pid;
  uv_thread_t qthread;
  tirx__queue *q; /* valid until ready */
  tirx__future_cb cb;
  void *cb_data;

  /* Under q->mu until decided, then immutable. */
  bool decided;
  job *job;                     /* attached job, or the job whose outcome this reports */
  tirx__future *wprev, *wnext;  /* in job->waiters while undecided */
  tirx__future *dnext;          /* the delivery list */
  tirx_status status;
  const char *message;
  void *result;
};

struct tirx__queue {
  uv_loop_t loop;
  uv_async_t async;
  uv_thread_t thread;
  pid_t pid;
  tirx__queue_options opts;
  uint32_t cap, pool_size;
  uv_mutex_t mu;

  /* Under mu. */
  bool stopping;      /* tirx__queue_destroy has begun: no more submissions */
  bool async_closed;  /* the queue thread has closed `async`; don't send to it */
  job *wait_head, *wait_tail;
  size_t nwaiting;
  job *fly_head;
  size_t nflight;
  job **table;
  size_t nbuckets, nentries;
  job *cancel_head;
  tirx__future *dhead, *dtail;

  _Atomic uint64_t submitted, executed, joined, cancelled, completed;
};

static const char msg_cancelled[] = "compile request cancel: the request was cancelled";
static const char msg_shutdown[] =
    "compile queue destroy: the queue shut down before the request ran";
static const char msg_no_message[] = "compile queue: the job failed and left no message";

/* The queue whose job or progress callback runs on this thread, for tirx__queue_destroy. */
static _Thread_local const tirx__queue *tls_running_queue;

static tirx_status forked_error(const char *fn, const char *what, pid_t pid) {
  return tirx__error(TIRX_E_FORKED,
                     "%s: the %s was created in another process (pid %ld); a forked child "
                     "cannot use it",
                     fn, what, (long)pid);
}

/* ---- jobs ---------------------------------------------------------------------------- */

static void job_ref(job *j) { atomic_fetch_add_explicit(&j->refs, 1, memory_order_relaxed); }

static void job_free(job *j) {
  if (j->arg_free && j->arg) j->arg_free(j->arg);
  if (j->result_free && j->result) j->result_free(j->result);
  free(j->message);
  free(j->label);
  free(j);
}

static void job_release(job *j) {
  if (j && atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) == 1) job_free(j);
}

/* Drops a reference that is known not to be the last one (the queue still holds the job). */
static void job_unref_held(job *j) {
  atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel);
}

static job *job_new(tirx__queue *q, const tirx__job *desc) {
  job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  if (desc->label) {
    j->label = strdup(desc->label);
    if (!j->label) {
      free(j);
      return NULL;
    }
  }
  j->work.data = j;
  j->q = q;
  atomic_init(&j->refs, 1);
  j->key = desc->key;
  j->run = desc->run;
  j->arg = desc->arg;
  j->arg_free = desc->arg_free;
  j->result_free = desc->result_free;
  j->state = JOB_WAITING;
  return j;
}

/* Frees a job that was never queued, leaving its argument to the caller. NULL is a no-op. */
static void job_discard(job *j) {
  if (!j) return;
  j->arg = NULL;
  job_free(j);
}

/* ---- the key table (under q->mu) ----------------------------------------------------- */

static size_t key_hash(const tirx__cache_key *k) {
  uint64_t a, b;
  memcpy(&a, k->bytes, sizeof a);
  memcpy(&b, k->bytes + sizeof a, sizeof b);
  uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
  return (size_t)(h ^ (h >> 31));
}

static job *table_find(tirx__queue *q, const tirx__cache_key *key) {
  for (job *j = q->table[key_hash(key) & (q->nbuckets - 1)]; j; j = j->hnext)
    if (memcmp(j->key.bytes, key->bytes, sizeof key->bytes) == 0) return j;
  return NULL;
}

/* Doubles the table when it is full; on allocation failure it keeps the old one (chains just
 * get longer). */
static void table_grow(tirx__queue *q) {
  size_t n = q->nbuckets * 2;
  job **t = calloc(n, sizeof *t);
  if (!t) return;
  for (size_t i = 0; i < q->nbuckets; i++) {
    job *j = q->table[i];
    while (j) {
      job *next = j->hnext;
      size_t b = key_hash(&j->key) & (n - 1);
      j->hnext = t[b];
      t[b] = j;
      j = next;
    }
  }
  free(q->table);
  q->table = t;
  q->nbuckets = n;
}

static void table_insert(tirx__queue *q, job *j) {
  if (q->nentries >= q->nbuckets) table_grow(q);
  size_t b = key_hash(&j->key) & (q->nbuckets - 1);
  j->hnext = q->table[b];
  q->table[b] = j;
  j->in_table = true;
  q->nentries++;
}

static void table_remove(tirx__queue *q, job *j) {
  if (!j->in_table) return;
  job **p = &q->table[key_hash(&j->key) & (q->nbuckets - 1)];
  while (*p != j) p = &(*p)->hnext;
  *p = j->hnext;
  j->hnext = NULL;
  j->in_table = false;
  q->nentries--;
}

/* ---- lists (under q->mu) ------------------------------------------------------------- */

static void fifo_push(tirx__queue *q, job *j) {
  j->next = NULL;
  j->prev = q->wait_tail;
  if (q->wait_tail)
    q->wait_tail->next = j;
  else
    q->wait_head = j;
  q->wait_tail = j;
  q->nwaiting++;
}

static void fifo_unlink(tirx__queue *q, job *j) {
  if (j->prev)
    j->prev->next = j->next;
  else
    q->wait_head = j->next;
  if (j->next)
    j->next->prev = j->prev;
  else
    q->wait_tail = j->prev;
  j->prev = j->next = NULL;
  q->nwaiting--;
}

static void flight_push(tirx__queue *q, job *j) {
  j->prev = NULL;
  j->next = q->fly_head;
  if (q->fly_head) q->fly_head->prev = j;
  q->fly_head = j;
  q->nflight++;
}

static void flight_unlink(tirx__queue *q, job *j) {
  if (j->prev)
    j->prev->next = j->next;
  else
    q->fly_head = j->next;
  if (j->next) j->next->prev = j->prev;
  j->prev = j->next = NULL;
  q->nflight--;
}

/* Waiters are kept in submission order, so joined requests are called back in that order. */
static void waiter_attach(job *j, tirx__future *f) {
  f->job = j;
  job_ref(j);
  f->wnext = NULL;
  f->wprev = j->waiters_tail;
  if (j->waiters_tail)
    j->waiters_tail->wnext = f;
  else
    j->waiters = f;
  j->waiters_tail = f;
  j->nwaiters++;
}

static void waiter_detach(job *j, tirx__future *f) {
  if (f->wprev)
    f->wprev->wnext = f->wnext;
  else
    j->waiters = f->wnext;
  if (f->wnext)
    f->wnext->wprev = f->wprev;
  else
    j->waiters_tail = f->wprev;
  f->wprev = f->wnext = NULL;
  j->nwaiters--;
}

/* Chooses f's outcome and puts it on the delivery list. */
static void decide(tirx__queue *q, tirx__future *f, tirx_status status, const char *message,
                   void *result) {
  f->decided = true;
  f->status = status;
  f->message = message;
  f->result = result;
  f->dnext = NULL;
  if (q->dtail)
    q->dtail->dnext = f;
  else
    q->dhead = f;
  q->dtail = f;
}

/* Decides every future still attached to j as cancelled with message. */
static void cancel_waiters(tirx__queue *q, job *j, const char *message) {
  while (j->waiters) {
    tirx__future *f = j->waiters;
    waiter_detach(j, f);
    f->job = NULL;
    job_unref_held(j);
    decide(q, f, TIRX_E_CANCELLED, message, NULL);
  }
}

static tirx__future *take_deliveries(tirx__queue *q) {
  tirx__future *list = q->dhead;
  q->dhead = q->dtail = NULL;
  return list;
}

/* ---- the queue thread ---------------------------------------------------------------- */

/* Calls the callbacks of decided futures and marks them ready. Queue thread, no lock held. */
static void deliver(tirx__queue *q, tirx__future *list) {
  while (list) {
    tirx__future *f = list;
    list = f->dnext;
    atomic_store_explicit(&f->settled, true, memory_order_release);
    if (f->cb) f->cb(f, f->status, f->result, f->cb_data);
    atomic_fetch_add_explicit(f->status == TIRX_E_CANCELLED ? &q->cancelled : &q->completed, 1,
                              memory_order_relaxed);
    uv_mutex_lock(&f->mu);
    atomic_store_explicit(&f->ready, true, memory_order_release);
    uv_cond_broadcast(&f->cv);
    uv_mutex_unlock(&f->mu);
    tirx__future_release(f);
  }
}

static void release_jobs(job *list) {
  while (list) {
    job *j = list;
    list = j->cnext;
    job_release(j);
  }
}

static void work_cb(uv_work_t *w) {
  job *j = w->data;
  tirx__queue *q = j->q;
  const char *label = j->label ? j->label : "";
  tls_running_queue = q;
  atomic_fetch_add_explicit(&q->executed, 1, memory_order_relaxed);
  if (q->opts.progress) {
    tirx__queue_event ev = {TIRX__QUEUE_JOB_STARTED, &j->key, label, TIRX_OK, 0};
    q->opts.progress(&ev, q->opts.progress_data);
  }
  uint64_t t0 = uv_hrtime();
  void *result = NULL;
  char *message = NULL;
  tirx_clear_error();
  tirx_status st = j->run(j->arg, &result, &message);
  uint64_t elapsed = uv_hrtime() - t0;
  if (st == TIRX__PENDING) st = TIRX_E_INTERNAL;
  if (st != TIRX_OK) {
    if (!message && tirx_last_status() != TIRX_OK && tirx_last_error()[0])
      message = strdup(tirx_last_error());
    if (!message) {
      char buf[160];
      snprintf(buf, sizeof buf, "compile queue: the job%s%s failed with %s (%s)",
               label[0] ? " " : "", label, tirx_status_name(st), tirx_status_str(st));
      message = strdup(buf);
    }
    if (result && j->result_free) j->result_free(result);
    result = NULL;
  } else {
    free(message);
    message = NULL;
  }
  tirx_clear_error();
  j->status = st;
  j->result = result;
  j->message = message;
  if (q->opts.progress) {
    tirx__queue_event ev = {TIRX__QUEUE_JOB_FINISHED, &j->key, label, st, elapsed};
    q->opts.progress(&ev, q->opts.progress_data);
  }
  tls_running_queue = NULL;
}

static void after_work_cb(uv_work_t *w, int uv_status);

/* Hands waiting jobs to libuv while the cap allows. */
static void start_jobs_locked(tirx__queue *q) {
  while (!q->stopping && q->nflight < q->cap && q->wait_head) {
    job *j = q->wait_head;
    fifo_unlink(q, j);
    j->state = JOB_QUEUED;
    flight_push(q, j);
    /* uv_queue_work fails only for a NULL work callback. */
    int rc = uv_queue_work(&q->loop, &j->work, work_cb, after_work_cb);
    (void)rc;
  }
}

/* Asks libuv to take back a job it has not started. UV_EBUSY (started, or back) is fine: the
 * job then finishes and after_work discards or delivers its result. */
static void try_uv_cancel(job *j) {
  if (j->uv_cancel_tried) return;
  j->uv_cancel_tried = true;
  uv_cancel((uv_req_t *)&j->work);
}

/* uv_cancel for jobs that lost every request before starting. Returns the jobs to release. */
static job *process_cancels_locked(tirx__queue *q) {
  job *list = q->cancel_head;
  q->cancel_head = NULL;
  for (job *j = list; j; j = j->cnext) {
    j->in_cancel_list = false;
    if (j->state == JOB_QUEUED) try_uv_cancel(j);
  }
  return list;
}

/* The first half of shutdown: drops the FIFO, uv_cancels every job in flight and closes the
 * async handle. The loop then runs until the jobs in flight are back. */
static job *shutdown_locked(tirx__queue *q) {
  job *dead = NULL;
  q->async_closed = true;
  while (q->wait_head) {
    job *j = q->wait_head;
    fifo_unlink(q, j);
    table_remove(q, j);
    j->state = JOB_DROPPED;
    cancel_waiters(q, j, msg_shutdown);
    j->cnext = dead;
    dead = j;
  }
  for (job *j = q->fly_head; j; j = j->next) try_uv_cancel(j);
  uv_close((uv_handle_t *)&q->async, NULL);
  return dead;
}

static void on_async(uv_async_t *h) {
  tirx__queue *q = h->data;
  uv_mutex_lock(&q->mu);
  job *release = process_cancels_locked(q);
  job *dead = NULL;
  if (q->stopping && !q->async_closed)
    dead = shutdown_locked(q);
  else
    start_jobs_locked(q);
  tirx__future *list = take_deliveries(q);
  uv_mutex_unlock(&q->mu);
  release_jobs(release);
  release_jobs(dead);
  deliver(q, list);
}

static void after_work_cb(uv_work_t *w, int uv_status) {
  job *j = w->data;
  tirx__queue *q = j->q;
  uv_mutex_lock(&q->mu);
  flight_unlink(q, j);
  j->state = JOB_DONE;
  table_remove(q, j);
  if (uv_status == UV_ECANCELED) {
    /* uv_cancel succeeded: at shutdown, or for a job no request wants any more. */
    cancel_waiters(q, j, msg_shutdown);
  } else {
    const char *message = j->status == TIRX_OK ? "" : j->message ? j->message : msg_no_message;
    while (j->waiters) {
      tirx__future *f = j->waiters;
      waiter_detach(j, f); /* f keeps its reference to j for the result and message */
      decide(q, f, j->status, message, j->result);
    }
  }
  start_jobs_locked(q);
  tirx__future *list = take_deliveries(q);
  uv_mutex_unlock(&q->mu);
  /* The work is back: nobody reads arg again. */
  if (j->arg_free && j->arg) j->arg_free(j->arg);
  j->arg = NULL;
  job_release(j);
  deliver(q, list);
}

static void loop_main(void *arg) {
  tirx__queue *q = arg;
  uv_run(&q->loop, UV_RUN_DEFAULT);
  /* Everything is decided now; deliver what cancellations decided after the last wake-up. */
  uv_mutex_lock(&q->mu);
  job *release = q->cancel_head;
  q->cancel_head = NULL;
  tirx__future *list = take_deliveries(q);
  uv_mutex_unlock(&q->mu);
  release_jobs(release);
  deliver(q, list);
}

/* ---- the queue ----------------------------------------------------------------------- */

void tirx__queue_options_init(tirx__queue_options *opts) {
  if (opts) memset(opts, 0, sizeof *opts);
}

/* The pool size libuv 1.44 derives from UV_THREADPOOL_SIZE (src/threadpool.c, init_threads). */
static uint32_t pool_size_from_env(void) {
  const char *v = getenv("UV_THREADPOOL_SIZE");
  unsigned n = v ? (unsigned)atoi(v) : 4u;
  if (n == 0) n = 1;
  if (n > 1024) n = 1024;
  return n;
}

uint32_t tirx__queue_pool_size(void) { return pool_size_from_env(); }

tirx_status tirx__queue_create(const tirx__queue_options *opts, tirx__queue **out) {
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "compile queue create: out is NULL");
  *out = NULL;
  tirx__queue *q = calloc(1, sizeof *q);
  if (!q) return tirx__error(TIRX_E_NO_MEMORY, "compile queue create: out of memory");
  if (opts) q->opts = *opts;
  q->pool_size = pool_size_from_env();
  q->cap = q->opts.max_in_flight ? q->opts.max_in_flight : (q->pool_size + 1) / 2;
  q->nbuckets = 64;
  q->table = calloc(q->nbuckets, sizeof *q->table);
  if (!q->table || uv_mutex_init(&q->mu) != 0) {
    free(q->table);
    free(q);
    return tirx__error(TIRX_E_NO_MEMORY, "compile queue create: out of memory");
  }
  const char *what = "uv_loop_init";
  int rc = uv_loop_init(&q->loop);
  if (rc == 0) {
    what = "uv_async_init";
    rc = uv_async_init(&q->loop, &q->async, on_async);
    if (rc == 0) {
      q->async.data = q;
      q->pid = getpid();
      what = "uv_thread_create";
      rc = uv_thread_create(&q->thread, loop_main, q);
      if (rc == 0) {
        *out = q;
        return TIRX_OK;
      }
      uv_close((uv_handle_t *)&q->async, NULL);
      uv_run(&q->loop, UV_RUN_DEFAULT);
    }
    uv_loop_close(&q->loop);
  }
  uv_mutex_destroy(&q->mu);
  free(q->table);
  free(q);
  return tirx__error(TIRX_E_INTERNAL, "compile queue create: %s failed: %s", what,
                     uv_strerror(rc));
}

static void stats_locked(tirx__queue *q, tirx__queue_stats *out) {
  out->submitted = atomic_load(&q->submitted);
  out->executed = atomic_load(&q->executed);
  out->dedup_joined = atomic_load(&q->joined);
  out->cancelled = atomic_load(&q->cancelled);
  out->completed = atomic_load(&q->completed);
  out->waiting = q->nwaiting;
  out->in_flight = q->nflight;
  out->max_in_flight = q->cap;
  out->pool_size = q->pool_size;
}

tirx_status tirx__queue_stats_get(tirx__queue *q, tirx__queue_stats *out) {
  if (!q) return tirx__error(TIRX_E_NULL_ARG, "compile queue stats: queue is NULL");
  if (q->pid != getpid()) return forked_error("compile queue stats", "queue", q->pid);
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "compile queue stats: out is NULL");
  uv_mutex_lock(&q->mu);
  stats_locked(q, out);
  uv_mutex_unlock(&q->mu);
  return TIRX_OK;
}

tirx_status tirx__queue_destroy(tirx__queue *q, tirx__queue_stats *final) {
  if (!q) return TIRX_OK;
  if (q->pid != getpid()) return forked_error("compile queue destroy", "queue", q->pid);
  uv_thread_t self = uv_thread_self();
  if (uv_thread_equal(&self, &q->thread))
    return tirx__error(TIRX_E_INVALID_ARG,
                       "compile queue destroy: called on the queue's own thread (from a "
                       "completion callback); it would wait for itself");
  if (tls_running_queue == q)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "compile queue destroy: called from one of the queue's jobs or progress "
                       "callbacks; it would wait for itself");
  uv_mutex_lock(&q->mu);
  q->stopping = true;
  uv_async_send(&q->async); /* only the queue thread closes it, after seeing `stopping` */
  uv_mutex_unlock(&q->mu);
  uv_thread_join(&q->thread);
  if (final) stats_locked(q, final);
  int rc = uv_loop_close(&q->loop);
  if (rc != 0) /* a bug: the loop is left allocated rather than freed under libuv's feet */
    return tirx__error(TIRX_E_INTERNAL, "compile queue destroy: uv_loop_close failed: %s",
                       uv_strerror(rc));
  uv_mutex_destroy(&q->mu);
  free(q->table);
  free(q);
  return TIRX_OK;
}

tirx_status tirx__queue_submit(tirx__queue *q, const tirx__job *desc, tirx__future_cb cb,
                               void *cb_data, tirx__future **out) {
  if (out) *out = NULL;
  if (!q) return tirx__error(TIRX_E_NULL_ARG, "compile queue submit: queue is NULL");
  if (q->pid != getpid()) return forked_error("compile queue submit", "queue", q->pid);
  if (!desc) return tirx__error(TIRX_E_NULL_ARG, "compile queue submit: job is NULL");
  if (!desc->run) return tirx__error(TIRX_E_NULL_ARG, "compile queue submit: job->run is NULL");

  tirx__future *f = calloc(1, sizeof *f);
  job *nj = job_new(q, desc);
  bool have_mu = f && uv_mutex_init(&f->mu) == 0;
  bool have_cv = have_mu && uv_cond_init(&f->cv) == 0;
  if (!nj || !have_cv) {
    if (have_mu) uv_mutex_destroy(&f->mu);
    free(f);
    job_discard(nj);
    return tirx__error(TIRX_E_NO_MEMORY, "compile queue submit: out of memory");
  }
  atomic_init(&f->refs, out ? 2 : 1);
  atomic_init(&f->settled, false);
  atomic_init(&f->ready, false);
  f->pid = q->pid;
  f->qthread = q->thread;
  f->q = q;
  f->cb = cb;
  f->cb_data = cb_data;

  uv_mutex_lock(&q->mu);
  if (q->stopping) {
    uv_mutex_unlock(&q->mu);
    uv_cond_destroy(&f->cv);
    uv_mutex_destroy(&f->mu);
    free(f);
    job_discard(nj);
    return tirx__error(TIRX_E_CANCELLED, "compile queue submit: the queue is shutting down");
  }
  job *j = table_find(q, &desc->key);
  bool joined = j != NULL;
  if (joined) {
    atomic_fetch_add_explicit(&q->joined, 1, memory_order_relaxed);
  } else {
    j = nj;
    table_insert(q, j);
    fifo_push(q, j);
    uv_async_send(&q->async);
  }
  waiter_attach(j, f);
  atomic_fetch_add_explicit(&q->submitted, 1, memory_order_relaxed);
  uv_mutex_unlock(&q->mu);

  if (joined) {
    job_discard(nj);
    if (desc->arg_free && desc->arg) desc->arg_free(desc->arg);
  }
  if (out) *out = f;
  return TIRX_OK;
}

/* ---- futures ------------------------------------------------------------------------- */

tirx_status tirx__future_poll(const tirx__future *f) {
  if (!f) return tirx__error(TIRX_E_NULL_ARG, "compile request poll: future is NULL");
  if (f->pid != getpid()) return forked_error("compile request poll", "future", f->pid);
  if (!atomic_load_explicit(&f->ready, memory_order_acquire)) return TIRX__PENDING;
  return f->status;
}

tirx_status tirx__future_wait(tirx__future *f, int64_t timeout_ms) {
  if (!f) return tirx__error(TIRX_E_NULL_ARG, "compile request wait: future is NULL");
  if (timeout_ms < -1)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "compile request wait: timeout_ms is %lld; expected -1 (forever) or >= 0",
                       (long long)timeout_ms);
  if (f->pid != getpid()) return forked_error("compile request wait", "future", f->pid);
  if (!atomic_load_explicit(&f->ready, memory_order_acquire)) {
    uv_thread_t self = uv_thread_self();
    if (uv_thread_equal(&self, &f->qthread))
      return tirx__error(TIRX_E_INVALID_ARG,
                         "compile request wait: called on the queue's thread while the request "
                         "is pending; it would never finish");
    /* Waits longer than ~292 years are forever. */
    bool forever = timeout_ms < 0 || (uint64_t)timeout_ms > UINT64_MAX / 2 / 1000000u;
    uint64_t deadline = forever ? 0 : uv_hrtime() + (uint64_t)timeout_ms * 1000000u;
    uv_mutex_lock(&f->mu);
    while (!atomic_load_explicit(&f->ready, memory_order_acquire)) {
      if (forever) {
        uv_cond_wait(&f->cv, &f->mu);
        continue;
      }
      uint64_t now = uv_hrtime();
      if (now >= deadline) break;
      uv_cond_timedwait(&f->cv, &f->mu, deadline - now);
    }
    bool ready = atomic_load_explicit(&f->ready, memory_order_acquire);
    uv_mutex_unlock(&f->mu);
    if (!ready)
      return tirx__error(TIRX_E_TIMEOUT,
                         "compile request wait: the request did not finish within %lld ms",
                         (long long)timeout_ms);
  }
  if (f->status != TIRX_OK) return tirx__error(f->status, "%s", f->message);
  return TIRX_OK;
}

tirx_status tirx__future_cancel(tirx__future *f, bool *took_effect) {
  if (took_effect) *took_effect = false;
  if (!f) return tirx__error(TIRX_E_NULL_ARG, "compile request cancel: future is NULL");
  if (f->pid != getpid()) return forked_error("compile request cancel", "future", f->pid);
  if (atomic_load_explicit(&f->ready, memory_order_acquire)) return TIRX_OK;
  /* Holding f->mu keeps the queue thread from marking f ready, so q stays alive. */
  uv_mutex_lock(&f->mu);
  if (atomic_load_explicit(&f->ready, memory_order_acquire)) {
    uv_mutex_unlock(&f->mu);
    return TIRX_OK;
  }
  tirx__queue *q = f->q;
  job *drop = NULL;
  uv_mutex_lock(&q->mu);
  if (!f->decided) {
    job *j = f->job;
    waiter_detach(j, f);
    f->job = NULL;
    decide(q, f, TIRX_E_CANCELLED, msg_cancelled, NULL);
    if (j->nwaiters == 0) {
      /* Nobody wants the job any more: later requests with its key start afresh. */
      table_remove(q, j);
      if (j->state == JOB_WAITING) {
        fifo_unlink(q, j);
        j->state = JOB_DROPPED;
        drop = j; /* takes over the queue's reference */
      } else if (j->state == JOB_QUEUED && !j->in_cancel_list && !q->async_closed) {
        job_ref(j);
        j->in_cancel_list = true;
        j->cnext = q->cancel_head;
        q->cancel_head = j;
      }
    }
    job_unref_held(j); /* f's reference; the queue's (or drop's) remains */
    if (!q->async_closed) uv_async_send(&q->async);
    if (took_effect) *took_effect = true;
  }
  uv_mutex_unlock(&q->mu);
  uv_mutex_unlock(&f->mu);
  job_release(drop);
  return TIRX_OK;
}

const char *tirx__future_message(const tirx__future *f) {
  if (!f || !atomic_load_explicit(&f->settled, memory_order_acquire)) return "";
  return f->message;
}

void *tirx__future_result(const tirx__future *f) {
  if (!f || !atomic_load_explicit(&f->settled, memory_order_acquire)) return NULL;
  return f->status == TIRX_OK ? f->result : NULL;
}

void tirx__future_retain(tirx__future *f) {
  if (f) atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

void tirx__future_release(tirx__future *f) {
  if (!f || f->pid != getpid()) return;
  if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1) return;
  job_release(f->job);
  uv_cond_destroy(&f->cv);
  uv_mutex_destroy(&f->mu);
  free(f);
}
