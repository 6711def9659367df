/*
 * The compile queue: runs jobs on libuv's thread pool and hands out a future per request.
 *
 * The queue is generic over its work: a job is a function, an argument and a 128-bit key. The
 * runtime plugs NVRTC compiles into it; nothing here knows about CUDA.
 *
 * Threads. The queue owns one uv_loop_t and one thread (the queue thread) that runs it. Jobs
 * run on libuv's thread pool through uv_queue_work. That pool is global to the process and
 * shared with every other libuv user in it (the host's fs and DNS work included). libuv sizes
 * it from the UV_THREADPOOL_SIZE environment variable, read once when the first work item of
 * the process is queued (default 4, at most 1024): set it before the process first uses libuv,
 * or it is silently ignored (reliability plan FM-25). To leave threads for the host, the queue
 * hands at most max_in_flight jobs to the pool at a time and keeps the rest in its own FIFO
 * (FM-24).
 *
 * Stack size. NVRTC needs about 1.5 MiB of stack (NVIDIA/cccl#10839). libuv 1.44 creates its
 * pool threads with uv_thread_create and no explicit size, which on Linux means
 * uv__thread_stack_size(): the RLIMIT_STACK soft limit rounded down to a page (8 MiB under the
 * usual `ulimit -s 8192`), or the glibc default of 2 MiB (4 MiB on PowerPC) when the limit is
 * unlimited (src/unix/thread.c at v1.44.2). libuv 1.45 and later fix the pool's stacks at 8 MiB
 * (src/threadpool.c). So pool threads have at least 2 MiB unless a host lowers `ulimit -s`
 * below that; tests/unit/cache/test_queue.c checks it. The queue thread itself runs no jobs.
 *
 * Submission is thread-safe: any thread may submit, cancel, poll or wait. A submission goes on
 * a mutex-protected list and uv_async_send wakes the queue thread, which drains the whole list
 * (uv_async_send coalesces wake-ups, FM-28).
 *
 * Deduplication. While a job with key K is waiting or running, a new request with key K joins
 * it instead of queueing a second execution: both futures get the same status, message and
 * result pointer, and the queue's dedup_joined counter counts the join. Once the job has
 * finished, a request with K runs the job again (remembering results is the cache's business).
 *
 * Callbacks. A request's completion callback is called exactly once, on the queue thread,
 * before the future reads as finished (so when tirx__future_wait returns, the callback has
 * returned). When tirx__queue_submit returns an error, the callback is never called (libuv's
 * rule). The progress callback is called on the pool thread that runs the job. The destructors
 * a job names (arg_free, result_free) run on whichever thread lets go of the last reference:
 * the queue thread, a thread that cancels or releases a future, or a submitter.
 *
 * fork(). The queue remembers the process that created it. In a child of fork() every queue
 * and future function returns TIRX_E_FORKED ("... was created in another process")
 * without touching a lock, a libuv handle or the parent's threads, none of which exist in the
 * child, and tirx__queue_destroy and tirx__future_release leave the parent's memory alone.
 * Beware that libuv 1.44's own library destructor (uv_library_shutdown, run by exit()) joins
 * the parent's pool threads and never returns in such a child (FM-29, libuv/libuv#4443): a
 * forked child that used no libuv itself must leave with _exit() or exec().
 */
#ifndef TIRX_CACHE_QUEUE_H
#define TIRX_CACHE_QUEUE_H

#include "../core/internal.h"
#include "key.h"

typedef struct tirx__queue tirx__queue;
typedef struct tirx__future tirx__future;

/* What tirx__future_poll returns while a request has not finished. Not a tirx_status code. */
#define TIRX__PENDING ((tirx_status)-1)

/* max_in_flight value for "hand every job to the pool at once". */
#define TIRX__QUEUE_UNLIMITED UINT32_MAX

/*
 * A job's work, run on a libuv pool thread. It returns TIRX_OK and may store a result in
 * *result, or returns an error and may store a malloc'ed message in *message (the queue frees
 * it). When it fails without a message, the queue uses the pool thread's tirx_last_error()
 * if the job recorded one there (tirx__error), else a generic one. A result stored by a failing
 * job is freed at once with result_free.
 */
typedef tirx_status (*tirx__job_fn)(void *arg, void **result, char **message);

/* What a request asks the queue to run. The struct is read during tirx__queue_submit only. */
typedef struct tirx__job {
  tirx__cache_key key;                /* requests with equal keys share one execution */
  tirx__job_fn run;                   /* required */
  void *arg;                          /* passed to run */
  void (*arg_free)(void *arg);        /* optional; called once when the queue is done with arg */
  void (*result_free)(void *result);  /* optional; called once when no future needs it */
  const char *label;                  /* optional; copied; shown in progress events */
} tirx__job;

/*
 * Called exactly once per successfully submitted request, on the queue thread. status is
 * TIRX_OK, the job's error or TIRX_E_CANCELLED; result is the job's result for TIRX_OK, else
 * NULL. f is valid during the call (retain it to keep it). The callback may submit, cancel,
 * poll and release; it must not wait on a pending future or destroy the queue (both would wait
 * for the queue thread, which is running the callback; they return TIRX_E_INVALID_ARG).
 */
typedef void (*tirx__future_cb)(tirx__future *f, tirx_status status, void *result, void *data);

typedef enum tirx__queue_event_kind {
  TIRX__QUEUE_JOB_STARTED = 0,
  TIRX__QUEUE_JOB_FINISHED = 1,
} tirx__queue_event_kind;

/* A progress event. Strings and the key are borrowed for the duration of the call. */
typedef struct tirx__queue_event {
  tirx__queue_event_kind kind;
  const tirx__cache_key *key;
  const char *label;     /* the job's label, "" when it has none */
  tirx_status status;    /* FINISHED: what run returned; STARTED: TIRX_OK */
  uint64_t duration_ns;  /* FINISHED: wall time of run; STARTED: 0 */
} tirx__queue_event;

/* Called on the pool thread running the job, possibly from several threads at once. It must be
 * thread-safe and quick, and must not destroy the queue. */
typedef void (*tirx__queue_progress_fn)(const tirx__queue_event *ev, void *data);

typedef struct tirx__queue_options {
  /*
   * The most jobs handed to libuv's pool at once; more wait in the queue's own FIFO.
   * 0 (the default) picks ceil(n/2) for the pool size n that UV_THREADPOOL_SIZE asks for (4 when
   * unset), leaving half the shared pool to the host (FM-24). TIRX__QUEUE_UNLIMITED hands every
   * job to libuv as soon as it arrives.
   */
  uint32_t max_in_flight;
  tirx__queue_progress_fn progress;  /* optional */
  void *progress_data;
} tirx__queue_options;

/* Counters since creation. Every successful submission ends as exactly one of cancelled or
 * completed; after tirx__queue_destroy, submitted == cancelled + completed. */
typedef struct tirx__queue_stats {
  uint64_t submitted;     /* successful tirx__queue_submit calls */
  uint64_t executed;      /* calls of a job's run function */
  uint64_t dedup_joined;  /* submissions that joined a waiting or running job */
  uint64_t cancelled;     /* callbacks delivered with TIRX_E_CANCELLED */
  uint64_t completed;     /* callbacks delivered with the job's own status (OK or error) */
  uint64_t waiting;       /* jobs in the queue's FIFO now */
  uint64_t in_flight;     /* jobs handed to libuv's pool and not yet back */
  uint32_t max_in_flight; /* the effective cap */
  uint32_t pool_size;     /* the pool size UV_THREADPOOL_SIZE asks for (libuv may differ: FM-25) */
} tirx__queue_stats;

/* Zeroes *opts (the defaults). */
void tirx__queue_options_init(tirx__queue_options *opts);

/*
 * Creates a queue and starts its thread. opts may be NULL for the defaults; it is copied.
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_NO_MEMORY, TIRX_E_INTERNAL (libuv failed; the message
 * carries libuv's text). *out is NULL on failure.
 */
/* The size of libuv's pool as libuv derives it from UV_THREADPOOL_SIZE (default 4). */
uint32_t tirx__queue_pool_size(void);

tirx_status tirx__queue_create(const tirx__queue_options *opts, tirx__queue **out);

/*
 * Shuts the queue down and frees it. Requests that have not started are cancelled: their
 * callbacks get TIRX_E_CANCELLED, "compile queue destroy: the queue shut down before the request
 * ran". Jobs already running are waited for and delivered with their own status. Every
 * callback has been called exactly once, the queue thread joined and the loop closed when
 * this returns. Futures the caller holds stay valid until released. final, when not NULL,
 * receives the last counters. NULL q is a no-op.
 * Errors (the queue is then left alone): TIRX_E_INVALID_ARG when called on the queue thread
 * (from a completion callback) or from one of the queue's own jobs or progress callbacks;
 * TIRX_E_FORKED in a forked child (the parent's memory is not freed); TIRX_E_INTERNAL
 * if libuv refuses to close the loop (a bug; the queue is then leaked rather than freed under
 * libuv).
 */
tirx_status tirx__queue_destroy(tirx__queue *q, tirx__queue_stats *final);

/*
 * Submits a request for job. cb (optional) is called exactly once when the request finishes;
 * out (optional) receives a future with one reference for the caller, to be released.
 * On success the queue owns job->arg: it is freed with arg_free when the job is done with it,
 * or before this returns when the request joins an existing job with the same key.
 * Errors (cb is then never called and the caller keeps arg): TIRX_E_NULL_ARG (q, job,
 * job->run), TIRX_E_CANCELLED (the queue is shutting down, e.g. a submission from a callback
 * during tirx__queue_destroy), TIRX_E_NO_MEMORY, TIRX_E_FORKED (forked child).
 */
tirx_status tirx__queue_submit(tirx__queue *q, const tirx__job *job, tirx__future_cb cb,
                               void *cb_data, tirx__future **out);

/* The queue's counters. Errors: TIRX_E_NULL_ARG, TIRX_E_FORKED (forked child). */
tirx_status tirx__queue_stats_get(tirx__queue *q, tirx__queue_stats *out);

/*
 * Non-blocking: TIRX__PENDING while the request has not finished, else its status (TIRX_OK,
 * the job's error or TIRX_E_CANCELLED). Records an error and returns it for a NULL future
 * (TIRX_E_NULL_ARG) or in a forked child (TIRX_E_FORKED).
 */
tirx_status tirx__future_poll(const tirx__future *f);

/*
 * Waits until the request has finished, at most timeout_ms milliseconds (-1: forever, 0: just
 * look), and returns its status: TIRX_OK, or the job's error or TIRX_E_CANCELLED, which are
 * also recorded as the calling thread's last error with the request's message (cut to
 * TIRX__ERROR_MAX there; tirx__future_message has it whole). Other errors:
 * TIRX_E_TIMEOUT (not finished in time; the request goes on), TIRX_E_NULL_ARG,
 * TIRX_E_INVALID_ARG (timeout_ms < -1, or waiting on the queue thread for a pending request),
 * TIRX_E_FORKED (forked child).
 */
tirx_status tirx__future_wait(tirx__future *f, int64_t timeout_ms);

/*
 * Cancels the request if it has not finished. When the cancellation takes effect (*took_effect
 * = true, optional), the request finishes with TIRX_E_CANCELLED, "compile request cancel: the
 * request was cancelled"; its callback is called soon after on the queue thread, without
 * waiting for the job. The job itself is dropped when no other request shares it: a job still
 * in the queue's FIFO is removed, one handed to libuv is uv_cancel'ed if it has not started,
 * and one already running finishes with its result discarded (freed with result_free).
 * Cancelling a finished request does nothing (*took_effect = false) and returns TIRX_OK.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_FORKED (forked child).
 */
tirx_status tirx__future_cancel(tirx__future *f, bool *took_effect);

/* The request's message once finished: "" for TIRX_OK, else the job's or the cancellation's
 * message. "" while pending or for NULL. Final already inside the request's callback. Lives as
 * long as the future. */
const char *tirx__future_message(const tirx__future *f);

/* The job's result once finished with TIRX_OK, else NULL (also inside the callback). Requests
 * joined on one job return the same pointer. Borrowed: it lives as long as the future. */
void *tirx__future_result(const tirx__future *f);

/* Reference counting; both are thread-safe and accept NULL. Release frees the future when the
 * last reference goes (the queue holds one until the callback has returned). */
void tirx__future_retain(tirx__future *f);
void tirx__future_release(tirx__future *f);

#endif
