/*
 * Communicators: created from an ncclUniqueId (non-blocking initialisation with a deadline) or
 * wrapping a host's ncclComm_t. Every wait polls ncclCommGetAsyncError; a failure or a passed
 * deadline aborts the communicator (ncclCommAbort) and turns every later call into
 * TIRX_E_COMM_ABORTED (reliability plan T12, FM-41..45).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../jit/jit.h"
#include "dist.h"

enum { DEFAULT_TIMEOUT_MS = 300000 };

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Sleeps between polls: 20 us doubling to 1 ms (so at least 1000 polls a second once slow). */
static void backoff(long *ns) {
  struct timespec ts = {0, *ns};
  nanosleep(&ts, NULL);
  if (*ns < 1000000) *ns *= 2;
  if (*ns > 1000000) *ns = 1000000;
}

static tirx_status options_timeout(const char *fn, const tirx_comm_options *o, int64_t *out) {
  int64_t t = o ? o->timeout_ms : 0;
  if (t < -1)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: options->timeout_ms is %lld, expected -1 or more",
                       fn, (long long)t);
  *out = t == 0 ? DEFAULT_TIMEOUT_MS : t;
  return TIRX_OK;
}

/* ---- Aborting ----------------------------------------------------------------------------- */

/* With c->mu held: marks c aborted, records why and aborts the NCCL communicator. */
static void abort_locked(tirx_comm *c, const char *reason) {
  atomic_store_explicit(&c->state, TIRX__COMM_ABORTED, memory_order_release);
  if (!c->reason[0]) snprintf(c->reason, sizeof c->reason, "%s", reason);
  if (c->comm) {
    c->nccl->CommAbort(c->comm); /* also frees it, for owned and wrapped communicators alike */
    c->comm = NULL;
  }
}

tirx_status tirx__comm_check(tirx_comm *c, const char *fn) {
  if (TIRX_LIKELY(atomic_load_explicit(&c->state, memory_order_acquire) == TIRX__COMM_OK))
    return TIRX_OK;
  char reason[sizeof c->reason];
  pthread_mutex_lock(&c->mu);
  snprintf(reason, sizeof reason, "%s", c->reason[0] ? c->reason : "tirx_comm_abort was called");
  pthread_mutex_unlock(&c->mu);
  return tirx__error(TIRX_E_COMM_ABORTED, "%s: the communicator was aborted: %s", fn, reason);
}

tirx_status tirx__comm_enter(tirx_comm *c, const char *fn, tirx__comm_guard *g) {
  g->pushed = false;
  tirx_status st = tirx__comm_check(c, fn);
  if (st == TIRX_OK) st = tirx__runtime_ready(c->rt, fn);
  if (st != TIRX_OK) return st;
  tirx__ctx_guard cg;
  st = tirx__ctx_enter(c->rt, fn, &cg);
  if (st != TIRX_OK) return st;
  g->pushed = cg.pushed;
  pthread_mutex_lock(&c->mu);
  if (!c->comm) { /* aborted by another thread meanwhile */
    tirx__comm_leave(c, g);
    return tirx__comm_check(c, fn);
  }
  return TIRX_OK;
}

void tirx__comm_leave(tirx_comm *c, tirx__comm_guard *g) {
  pthread_mutex_unlock(&c->mu);
  tirx__ctx_guard cg = {g->pushed};
  tirx__ctx_leave(c->rt, &cg);
  g->pushed = false;
}

/* Aborts c (mu held) and records "<fn>: <what>; the communicator was aborted". */
static tirx_status fail_locked(tirx_comm *c, const char *fn, const char *what) {
  abort_locked(c, what);
  return tirx__error(TIRX_E_COMM_ABORTED, "%s: %s; the communicator was aborted", fn, what);
}

/* One poll of NCCL's asynchronous error: TIRX_OK (ncclSuccess), TIRX_E_TIMEOUT (in progress)
 * or TIRX_E_COMM_ABORTED (c aborted). mu held. */
static tirx_status poll_async(tirx_comm *c, const char *fn, const char *what) {
  tirx__nccl_result async = TIRX__NCCL_SUCCESS;
  tirx__nccl_result r = c->nccl->CommGetAsyncError(c->comm, &async);
  if (r != TIRX__NCCL_SUCCESS) async = r;
  if (async == TIRX__NCCL_SUCCESS) return TIRX_OK;
  if (async == TIRX__NCCL_IN_PROGRESS) return TIRX_E_TIMEOUT;
  char text[256], msg[400];
  tirx__nccl_describe(c->nccl, async, text, sizeof text);
  snprintf(msg, sizeof msg, "%s: NCCL reported %s", what, text);
  return fail_locked(c, fn, msg);
}

static bool aborted_elsewhere(tirx_comm *c) {
  return atomic_load_explicit(&c->state, memory_order_acquire) != TIRX__COMM_OK;
}

tirx_status tirx__comm_settle(tirx_comm *c, const char *fn, const char *what,
                              tirx__nccl_result r) {
  if (r == TIRX__NCCL_SUCCESS) return TIRX_OK;
  if (r != TIRX__NCCL_IN_PROGRESS) {
    char text[256], msg[400];
    tirx__nccl_describe(c->nccl, r, text, sizeof text);
    snprintf(msg, sizeof msg, "%s failed: %s", what, text);
    return fail_locked(c, fn, msg);
  }
  double deadline = c->timeout_ms < 0 ? -1 : now_ms() + (double)c->timeout_ms;
  for (long ns = 20000;; backoff(&ns)) {
    tirx_status st = poll_async(c, fn, what);
    if (st != TIRX_E_TIMEOUT) return st;
    if (aborted_elsewhere(c)) return tirx__error(TIRX_E_COMM_ABORTED, "%s: %s: the communicator "
                                                 "was aborted by another thread", fn, what);
    if (deadline >= 0 && now_ms() > deadline) {
      char msg[400];
      snprintf(msg, sizeof msg, "%s did not finish within %lld ms", what,
               (long long)c->timeout_ms);
      return fail_locked(c, fn, msg);
    }
  }
}

/* ---- Creation ----------------------------------------------------------------------------- */

static tirx_comm *comm_new(tirx_runtime *rt, const tirx__nccl *n, int64_t timeout_ms,
                           const char *fn) {
  tirx_comm *c = calloc(1, sizeof *c);
  if (!c) {
    tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  c->rt = rt;
  c->nccl = n;
  c->timeout_ms = timeout_ms;
  c->device = rt->ordinal;
  atomic_init(&c->state, TIRX__COMM_OK);
  pthread_mutex_init(&c->mu, NULL);
  return c;
}

static void comm_free(tirx_comm *c) {
  pthread_mutex_destroy(&c->mu);
  free(c);
}

tirx_status tirx_comm_id_generate(const tirx_comm_options *options, tirx_comm_id *out) {
  static const char fn[] = "tirx_comm_id_generate";
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  memset(out, 0, sizeof *out);
  tirx_comm_options copy;
  if (tirx__ext_in(fn, "options", &tirx__ext_comm_options, options, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  options = &copy;
  const tirx__nccl *n;
  tirx_status st = tirx__nccl_load(fn, options ? options->nccl_library : NULL, &n);
  if (st != TIRX_OK) return st;
  tirx__nccl_unique_id id;
  tirx__nccl_result r = n->GetUniqueId(&id);
  if (r != TIRX__NCCL_SUCCESS) {
    char text[256];
    tirx__nccl_describe(n, r, text, sizeof text);
    return tirx__error(TIRX_E_IO, "%s: ncclGetUniqueId failed: %s", fn, text);
  }
  memcpy(out->bytes, id.internal, sizeof out->bytes);
  return TIRX_OK;
}

tirx_status tirx_comm_create(tirx_runtime *rt, const tirx_comm_id *id, int rank, int size,
                             const tirx_comm_options *options, tirx_comm **out) {
  static const char fn[] = "tirx_comm_create";
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!rt) return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!id) return tirx__error(TIRX_E_NULL_ARG, "%s: id is NULL", fn);
  if (size < 1 || size > TIRX_DIST_MAX_RANKS)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: size is %d, expected 1 to %d", fn, size,
                       TIRX_DIST_MAX_RANKS);
  if (rank < 0 || rank >= size)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: rank is %d, expected 0 to %d", fn, rank, size - 1);
  tirx_comm_options copy;
  if (tirx__ext_in(fn, "options", &tirx__ext_comm_options, options, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  options = &copy;
  int64_t timeout = 0;
  tirx_status st = options_timeout(fn, options, &timeout);
  if (st != TIRX_OK) return st;
  const char *blocking = getenv("CUDA_LAUNCH_BLOCKING");
  if (size > 1 && blocking && strcmp(blocking, "1") == 0)
    return tirx__error(TIRX_E_NOT_SUPPORTED,
                       "%s: CUDA_LAUNCH_BLOCKING=1 deadlocks NCCL with more than one rank; unset it",
                       fn);
  const tirx__nccl *n;
  st = tirx__nccl_load(fn, options ? options->nccl_library : NULL, &n);
  if (st == TIRX_OK) st = tirx__runtime_ready(rt, fn);
  if (st != TIRX_OK) return st;
  tirx_comm *c = comm_new(rt, n, timeout, fn);
  if (!c) return TIRX_E_NO_MEMORY;
  c->owned = true;
  c->rank = rank;
  c->size = size;
  tirx__ctx_guard g;
  st = tirx__ctx_enter(rt, fn, &g);
  if (st != TIRX_OK) {
    comm_free(c);
    return st;
  }
  tirx__nccl_unique_id uid;
  memcpy(uid.internal, id->bytes, sizeof uid.internal);
  tirx__nccl_config config = {sizeof config, 0xcafebeefu, TIRX__NCCL_MIN_VERSION, 0, INT_MIN};
  pthread_mutex_lock(&c->mu);
  tirx__nccl_result r = n->CommInitRankConfig(&c->comm, size, uid, rank, &config);
  char what[96];
  snprintf(what, sizeof what, "NCCL initialisation (rank %d of %d)", rank, size);
  st = tirx__comm_settle(c, fn, what, r);
  pthread_mutex_unlock(&c->mu);
  tirx__ctx_leave(rt, &g);
  if (st != TIRX_OK) {
    comm_free(c);
    return st;
  }
  *out = c;
  return TIRX_OK;
}

tirx_status tirx_comm_wrap(tirx_runtime *rt, void *nccl_comm, const tirx_comm_options *options,
                           tirx_comm **out) {
  static const char fn[] = "tirx_comm_wrap";
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!rt) return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!nccl_comm) return tirx__error(TIRX_E_NULL_ARG, "%s: nccl_comm is NULL", fn);
  tirx_comm_options copy;
  if (tirx__ext_in(fn, "options", &tirx__ext_comm_options, options, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  options = &copy;
  int64_t timeout = 0;
  tirx_status st = options_timeout(fn, options, &timeout);
  if (st != TIRX_OK) return st;
  const tirx__nccl *n;
  st = tirx__nccl_load(fn, options ? options->nccl_library : NULL, &n);
  if (st == TIRX_OK) st = tirx__runtime_ready(rt, fn);
  if (st != TIRX_OK) return st;
  tirx__nccl_comm_t comm = nccl_comm;
  int size = 0, rank = 0, device = 0;
  tirx__nccl_result r = n->CommCount(comm, &size);
  const char *what = "ncclCommCount";
  if (r == TIRX__NCCL_SUCCESS) {
    r = n->CommUserRank(comm, &rank);
    what = "ncclCommUserRank";
  }
  if (r == TIRX__NCCL_SUCCESS) {
    r = n->CommCuDevice(comm, &device);
    what = "ncclCommCuDevice";
  }
  if (r != TIRX__NCCL_SUCCESS) {
    char text[256];
    tirx__nccl_describe(n, r, text, sizeof text);
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: NCCL does not accept nccl_comm: %s returned %s (wrap a communicator "
                       "once its initialisation has finished)",
                       fn, what, text);
  }
  if (device != rt->ordinal)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: nccl_comm is on device %d, the runtime on device %d",
                       fn, device, rt->ordinal);
  tirx_comm *c = comm_new(rt, n, timeout, fn);
  if (!c) return TIRX_E_NO_MEMORY;
  c->comm = comm;
  c->rank = rank;
  c->size = size;
  *out = c;
  return TIRX_OK;
}

void tirx_comm_destroy(tirx_comm *c) {
  if (!c) return;
  tirx__comm_guard g;
  if (c->owned && tirx__comm_enter(c, "tirx_comm_destroy", &g) == TIRX_OK) {
    /* Finalize (non-blocking: settled with the deadline), then destroy; a failure aborts. */
    tirx__nccl_result r = c->nccl->CommFinalize(c->comm);
    if (tirx__comm_settle(c, "tirx_comm_destroy", "ncclCommFinalize", r) == TIRX_OK) {
      c->nccl->CommDestroy(c->comm);
      c->comm = NULL;
    }
    tirx__comm_leave(c, &g);
  }
  comm_free(c);
}

int tirx_comm_rank(const tirx_comm *c) { return c ? c->rank : -1; }
int tirx_comm_size(const tirx_comm *c) { return c ? c->size : -1; }

void *tirx_comm_nccl(const tirx_comm *c) {
  if (!c || atomic_load_explicit(&c->state, memory_order_acquire) != TIRX__COMM_OK) return NULL;
  return c->comm;
}

tirx_status tirx_comm_health(tirx_comm *c) {
  static const char fn[] = "tirx_comm_health";
  if (!c) return tirx__error(TIRX_E_NULL_ARG, "%s: c is NULL", fn);
  tirx__comm_guard g;
  tirx_status st = tirx__comm_enter(c, fn, &g);
  if (st != TIRX_OK) return st;
  st = poll_async(c, fn, "the communicator");
  tirx__comm_leave(c, &g);
  return st == TIRX_E_TIMEOUT ? TIRX_OK : st;
}

/* Marks, then aborts: the order FM-44 asks for when several are aborted together. */
static void mark(tirx_comm *c) {
  atomic_store_explicit(&c->state, TIRX__COMM_ABORTED, memory_order_release);
}

static void finish_abort(tirx_comm *c) {
  tirx__ctx_guard g = {false};
  bool entered = c->rt->has_device && tirx__ctx_enter(c->rt, "tirx_comm_abort", &g) == TIRX_OK;
  pthread_mutex_lock(&c->mu);
  abort_locked(c, "tirx_comm_abort was called");
  pthread_mutex_unlock(&c->mu);
  if (entered) tirx__ctx_leave(c->rt, &g);
}

tirx_status tirx_comm_abort(tirx_comm *c) {
  if (!c) return tirx__error(TIRX_E_NULL_ARG, "tirx_comm_abort: c is NULL");
  mark(c);
  finish_abort(c);
  return TIRX_OK;
}

tirx_status tirx_comm_abort_all(tirx_comm *const *comms, int count) {
  static const char fn[] = "tirx_comm_abort_all";
  if (count < 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: count is %d, expected >= 0", fn, count);
  if (count > 0 && !comms) return tirx__error(TIRX_E_NULL_ARG, "%s: comms is NULL", fn);
  for (int i = 0; i < count; i++)
    if (comms[i]) mark(comms[i]);
  for (int i = 0; i < count; i++)
    if (comms[i]) finish_abort(comms[i]);
  return TIRX_OK;
}

tirx_status tirx_comm_synchronize(tirx_comm *c, void *stream, int64_t timeout_ms) {
  static const char fn[] = "tirx_comm_synchronize";
  if (!c) return tirx__error(TIRX_E_NULL_ARG, "%s: c is NULL", fn);
  if (timeout_ms < -2)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: timeout_ms is %lld, expected -2 or more", fn,
                       (long long)timeout_ms);
  if (timeout_ms == -2) timeout_ms = c->timeout_ms;
  tirx__comm_guard g;
  tirx_status st = tirx__comm_enter(c, fn, &g);
  if (st != TIRX_OK) return st;
  double deadline = timeout_ms < 0 ? -1 : now_ms() + (double)timeout_ms;
  const tirx__driver *d = &c->rt->drv;
  for (long ns = 20000;; backoff(&ns)) {
    CUresult r = d->StreamQuery((CUstream)stream);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
      st = tirx__driver_error(c->rt, fn, "cuStreamQuery", r);
      abort_locked(c, "the stream failed (a CUDA error)");
      break;
    }
    st = poll_async(c, fn, "the stream's collectives");
    if (st == TIRX_E_COMM_ABORTED) break;
    if (r == CUDA_SUCCESS) {
      st = TIRX_OK;
      break;
    }
    if (aborted_elsewhere(c)) {
      st = tirx__error(TIRX_E_COMM_ABORTED, "%s: the communicator was aborted by another thread",
                       fn);
      break;
    }
    if (deadline >= 0 && now_ms() > deadline) {
      char msg[160];
      snprintf(msg, sizeof msg, "the stream did not finish within %lld ms", (long long)timeout_ms);
      st = fail_locked(c, fn, msg);
      break;
    }
  }
  tirx__comm_leave(c, &g);
  return st;
}
