/*
 * The compile worker pool (workers.h).
 *
 * Threads and locks. w->mu guards every slot and the pool's flags; w->cv is broadcast whenever
 * a slot changes state. libuv calls other than uv_async_send happen on the pool's loop thread
 * only (FM-27). Compiling threads do their socket I/O without the lock, on a slot they own
 * (BUSY or STARTED).
 *
 * A slot's life: FREE -> SPAWNING (a compiling thread asks the loop thread to spawn) ->
 * STARTED (spawned; the asking thread reads the worker's HELLO) -> BUSY (a compile) <-> IDLE
 * -> DEAD (its socket closed by its owner; waiting for the process handle to close) -> FREE.
 * The process handle (proc_open) is closed by the loop thread after the exit callback, which
 * records how the worker ended.
 */
#include "workers.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "jit.h"

enum { W_FREE, W_SPAWNING, W_STARTED, W_IDLE, W_BUSY, W_DEAD };

enum {
  HELLO_TIMEOUT_MS = 10000, /* a worker's start-up: exec, libnvrtc's load, the HELLO */
  EXIT_WAIT_MS = 2000,      /* after a worker's socket closed, for its exit status */
  STOP_WAIT_MS = 2000,      /* at destroy, for workers to leave on their own, then again after
                               SIGKILL */
  WHY_MAX = 256
};

typedef struct slot {
  int state;
  uv_process_t proc;
  bool proc_open; /* proc is a live handle (spawned, not closed yet) */
  bool exited;    /* its exit callback ran */
  int64_t exit_status;
  int term_signal;
  bool kill_wanted;
  int spawn_error; /* a uv error of the last spawn, 0 when it worked */
  int fd;          /* the parent's end of the socket, -1 when closed */
  int pid;
} slot;

struct tirx__workers {
  uv_loop_t loop;
  uv_async_t async;
  uv_thread_t thread;
  uv_mutex_t mu;
  uv_cond_t cv;
  char *path;
  unsigned max;
  int nice;
  slot *slots;
  int nvrtc_version;
  tirx__workers_hook hook;
  void *hook_user;

  /* Under mu. */
  bool stopping;   /* destroy has begun */
  bool loop_stop;  /* the loop thread closes async and leaves */
  bool off;
  char off_reason[512];
  unsigned busy;   /* slots owned by compiling threads (STARTED or BUSY) */
  uint64_t spawned, compiles, deaths, retries;
};

static void on_async(uv_async_t *h);

/* ---- the loop thread ---- */

static void on_close(uv_handle_t *h) {
  slot *s = h->data;
  tirx__workers *w = (tirx__workers *)h->loop->data;
  uv_mutex_lock(&w->mu);
  s->proc_open = false;
  if (s->state == W_DEAD)
    s->state = W_FREE;
  uv_cond_broadcast(&w->cv);
  uv_mutex_unlock(&w->mu);
}

static void on_worker_exit(uv_process_t *p, int64_t exit_status, int term_signal) {
  slot *s = p->data;
  tirx__workers *w = (tirx__workers *)p->loop->data;
  uv_mutex_lock(&w->mu);
  s->exited = true;
  s->exit_status = exit_status;
  s->term_signal = term_signal;
  uv_cond_broadcast(&w->cv);
  uv_mutex_unlock(&w->mu);
  uv_close((uv_handle_t *)p, on_close);
}

/* Under w->mu, on the loop thread. */
static void spawn_locked(tirx__workers *w, slot *s) {
  uv_os_sock_t fds[2];
  int rc = uv_socketpair(SOCK_STREAM, 0, fds, 0, 0);
  if (rc != 0) {
    s->spawn_error = rc;
    s->state = W_FREE;
    return;
  }
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_INHERIT_FD;
  stdio[0].data.fd = fds[1];
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = fds[1];
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = 2;
  char *args[] = {w->path, NULL};
  uv_process_options_t o;
  memset(&o, 0, sizeof o);
  o.exit_cb = on_worker_exit;
  o.file = w->path;
  o.args = args;
  o.stdio_count = 3;
  o.stdio = stdio;
  /* Not UV_PROCESS_DETACHED: a new session would be a new autogroup of Linux's scheduler,
   * where the worker's nice value would count for nothing against the host's threads. The
   * worker leaves the host's process group itself (worker_main.c), so a terminal's ^C goes to
   * the host only. */
  o.flags = 0;
  s->exited = false;
  s->kill_wanted = false;
  s->proc.data = s;
  rc = uv_spawn(&w->loop, &s->proc, &o);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    s->spawn_error = rc;
    /* uv_spawn initialised the handle: it is closed like a live one. */
    s->proc_open = true;
    s->state = W_DEAD;
    uv_close((uv_handle_t *)&s->proc, on_close);
    return;
  }
  s->proc_open = true;
  s->spawn_error = 0;
  s->fd = fds[0];
  s->pid = s->proc.pid;
  int prio = 0;
  if (w->nice > 0 && uv_os_getpriority(0, &prio) == 0) {
    int nice = prio + w->nice > 19 ? 19 : prio + w->nice;
    uv_os_setpriority(s->pid, nice); /* best effort */
  }
  w->spawned++;
  s->state = W_STARTED;
}

static void on_async(uv_async_t *h) {
  tirx__workers *w = h->data;
  uv_mutex_lock(&w->mu);
  for (unsigned i = 0; i < w->max; i++) {
    slot *s = &w->slots[i];
    if (s->state == W_SPAWNING)
      spawn_locked(w, s);
    if (s->kill_wanted && s->proc_open && !s->exited)
      uv_process_kill(&s->proc, SIGKILL);
    s->kill_wanted = false;
  }
  if (w->loop_stop && !uv_is_closing((uv_handle_t *)&w->async))
    uv_close((uv_handle_t *)&w->async, NULL);
  uv_cond_broadcast(&w->cv);
  uv_mutex_unlock(&w->mu);
}

static void loop_main(void *arg) {
  tirx__workers *w = arg;
  uv_run(&w->loop, UV_RUN_DEFAULT);
}

/* ---- creation and destruction ---- */

tirx_status tirx__workers_create(const char *path, unsigned max, int nice, tirx__workers **out) {
  *out = NULL;
  if (max == 0)
    max = 1;
  tirx__workers *w = calloc(1, sizeof *w);
  if (!w || !(w->path = strdup(path)) || !(w->slots = calloc(max, sizeof *w->slots))) {
    if (w)
      free(w->path);
    free(w);
    return tirx__error(TIRX_E_NO_MEMORY, "compile workers: out of memory");
  }
  w->max = max;
  w->nice = nice < 0 ? 0 : nice > 19 ? 19 : nice;
  w->nvrtc_version = tirx__nvrtc_version();
  for (unsigned i = 0; i < max; i++)
    w->slots[i].fd = -1;
  int rc = uv_mutex_init(&w->mu);
  if (rc == 0 && (rc = uv_cond_init(&w->cv)) != 0)
    uv_mutex_destroy(&w->mu);
  const char *what = "uv_mutex_init";
  if (rc == 0) {
    what = "uv_loop_init";
    rc = uv_loop_init(&w->loop);
    if (rc == 0) {
      w->loop.data = w;
      what = "uv_async_init";
      rc = uv_async_init(&w->loop, &w->async, on_async);
      if (rc == 0) {
        w->async.data = w;
        what = "uv_thread_create";
        rc = uv_thread_create(&w->thread, loop_main, w);
        if (rc == 0) {
          *out = w;
          return TIRX_OK;
        }
        uv_close((uv_handle_t *)&w->async, NULL);
        uv_run(&w->loop, UV_RUN_DEFAULT);
      }
      uv_loop_close(&w->loop);
    }
    uv_cond_destroy(&w->cv);
    uv_mutex_destroy(&w->mu);
  }
  free(w->slots);
  free(w->path);
  free(w);
  return tirx__error(TIRX_E_INTERNAL, "compile workers: %s failed: %s", what,
                     uv_strerror(rc));
}

/* Waits on w->cv (w->mu held) until pred(w) or deadline_ns (uv_hrtime) passes. */
static bool wait_until(tirx__workers *w, bool (*pred)(tirx__workers *), uint64_t deadline_ns) {
  while (!pred(w)) {
    uint64_t now = uv_hrtime();
    if (now >= deadline_ns)
      return false;
    uv_cond_timedwait(&w->cv, &w->mu, deadline_ns - now);
  }
  return true;
}

static bool all_closed(tirx__workers *w) {
  if (w->busy)
    return false;
  for (unsigned i = 0; i < w->max; i++)
    if (w->slots[i].proc_open || w->slots[i].state == W_SPAWNING)
      return false;
  return true;
}

static bool none_busy(tirx__workers *w) { return w->busy == 0; }

void tirx__workers_destroy(tirx__workers *w) {
  if (!w)
    return;
  uv_mutex_lock(&w->mu);
  w->stopping = true;
  /* Idle workers read the end of their input and leave; any other is killed (a compile in
   * flight then fails with TIRX_E_CANCELLED on its thread). */
  for (unsigned i = 0; i < w->max; i++) {
    slot *s = &w->slots[i];
    if (s->state == W_IDLE) {
      close(s->fd);
      s->fd = -1;
      s->state = s->proc_open ? W_DEAD : W_FREE;
    } else if (s->state == W_BUSY || s->state == W_STARTED) {
      s->kill_wanted = true;
    }
  }
  uv_async_send(&w->async);
  wait_until(w, none_busy, uv_hrtime() + (uint64_t)STOP_WAIT_MS * 1000000u * 2);
  bool closed = wait_until(w, all_closed, uv_hrtime() + (uint64_t)STOP_WAIT_MS * 1000000u);
  if (!closed) {
    for (unsigned i = 0; i < w->max; i++)
      if (w->slots[i].proc_open)
        w->slots[i].kill_wanted = true;
    uv_async_send(&w->async);
    closed = wait_until(w, all_closed, uv_hrtime() + (uint64_t)STOP_WAIT_MS * 1000000u);
  }
  w->loop_stop = true;
  uv_async_send(&w->async);
  uv_mutex_unlock(&w->mu);
  if (!closed) {
    /* A worker that SIGKILL did not end (stuck in the kernel): the pool is leaked rather than
     * freed under its loop. */
    fprintf(stderr, "tirx: a compile worker did not exit; its pool is left running\n");
    return;
  }
  uv_thread_join(&w->thread);
  int rc = uv_loop_close(&w->loop);
  if (rc != 0) { /* a bug: a handle left open; the loop is leaked rather than freed under it */
    fprintf(stderr, "tirx: the compile workers' loop did not close: %s\n", uv_strerror(rc));
    return;
  }
  uv_cond_destroy(&w->cv);
  uv_mutex_destroy(&w->mu);
  free(w->slots);
  free(w->path);
  free(w);
}

/* ---- compiles ---- */

static void turn_off_locked(tirx__workers *w, const char *fmt, ...) TIRX_PRINTF(2, 3);
static void turn_off_locked(tirx__workers *w, const char *fmt, ...) {
  if (w->off)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->off_reason, sizeof w->off_reason, fmt, ap);
  va_end(ap);
  w->off = true;
  uv_cond_broadcast(&w->cv);
}

/* Gives up the socket of a slot this thread owns; the process is killed unless it exited. */
static void retire_locked(tirx__workers *w, slot *s) {
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  if (s->proc_open && !s->exited) {
    s->kill_wanted = true;
    uv_async_send(&w->async);
  }
  s->state = s->proc_open ? W_DEAD : W_FREE;
  w->busy--;
  uv_cond_broadcast(&w->cv);
}

/* Reads the HELLO of a STARTED slot (no lock held). Returns true, or false with why. */
static bool read_hello(tirx__workers *w, slot *s, char *why, size_t why_len) {
  struct pollfd p = {.fd = s->fd, .events = POLLIN};
  int rc;
  do
    rc = poll(&p, 1, HELLO_TIMEOUT_MS);
  while (rc < 0 && errno == EINTR);
  if (rc == 0) {
    snprintf(why, why_len, "it sent no greeting within %d s", HELLO_TIMEOUT_MS / 1000);
    return false;
  }
  tirx__wframe f;
  char fwhy[WHY_MAX] = "";
  rc = tirx__wframe_read(s->fd, &f, fwhy, sizeof fwhy);
  if (rc <= 0) {
    snprintf(why, why_len, "%s", rc == 0 ? "it closed its output without a greeting" : fwhy);
    return false;
  }
  bool ok = false;
  tirx__whello h;
  if (f.kind != TIRX__WFRAME_HELLO || f.nfields != 2 ||
      strcmp(tirx__wframe_field(&f, 0), "tirx-compile-worker") != 0 || f.len[1] != sizeof h) {
    snprintf(why, why_len, "its greeting is not a tirx compile worker's");
  } else {
    memcpy(&h, tirx__wframe_field(&f, 1), sizeof h);
    if (h.protocol != TIRX__WPROTOCOL)
      snprintf(why, why_len, "it speaks protocol %d, expected %d", (int)h.protocol,
               TIRX__WPROTOCOL);
    else if (h.nvrtc_version == 0 && w->nvrtc_version != 0)
      snprintf(why, why_len, "it cannot load NVRTC (its environment or run path differs)");
    else if (h.nvrtc_version != w->nvrtc_version)
      snprintf(why, why_len, "it runs NVRTC %d.%d, this process NVRTC %d.%d (the cache key "
                             "names the version)",
               h.nvrtc_version / 1000, h.nvrtc_version % 1000 / 10, w->nvrtc_version / 1000,
               w->nvrtc_version % 1000 / 10);
    else
      ok = true;
  }
  tirx__wframe_free(&f);
  return ok;
}

/* Takes a worker for a compile: TIRX_OK with *out (BUSY, owned by the caller),
 * TIRX__WORKERS_FALLBACK when the pool is off, TIRX_E_CANCELLED when it stops. */
static tirx_status acquire(tirx__workers *w, const char *fn, slot **out) {
  uv_mutex_lock(&w->mu);
  for (;;) {
    if (w->stopping) {
      uv_mutex_unlock(&w->mu);
      return tirx__error(TIRX_E_CANCELLED, "%s: the compile workers are shutting down", fn);
    }
    if (w->off) {
      uv_mutex_unlock(&w->mu);
      return TIRX__WORKERS_FALLBACK;
    }
    slot *idle = NULL, *free_slot = NULL;
    for (unsigned i = 0; i < w->max; i++) {
      slot *s = &w->slots[i];
      if (s->state == W_IDLE && s->exited) { /* died while idle */
        w->busy++;
        retire_locked(w, s);
      }
      if (s->state == W_IDLE && !idle)
        idle = s;
      if (s->state == W_FREE && !free_slot)
        free_slot = s;
    }
    if (idle) {
      idle->state = W_BUSY;
      w->busy++;
      uv_mutex_unlock(&w->mu);
      *out = idle;
      return TIRX_OK;
    }
    if (!free_slot) {
      uv_cond_wait(&w->cv, &w->mu);
      continue;
    }
    slot *s = free_slot;
    s->state = W_SPAWNING;
    w->busy++;
    uv_async_send(&w->async);
    while (s->state == W_SPAWNING)
      uv_cond_wait(&w->cv, &w->mu);
    if (s->state != W_STARTED) {
      w->busy--;
      turn_off_locked(w, "cannot start the compile worker %s: %s", w->path,
                      uv_strerror(s->spawn_error));
      continue;
    }
    uv_mutex_unlock(&w->mu);
    char why[WHY_MAX];
    bool ok = read_hello(w, s, why, sizeof why);
    uv_mutex_lock(&w->mu);
    if (!ok) {
      turn_off_locked(w, "%s (pid %d) is not a usable compile worker: %s", w->path, s->pid, why);
      retire_locked(w, s);
      continue;
    }
    s->state = W_BUSY;
    uv_mutex_unlock(&w->mu);
    *out = s;
    return TIRX_OK;
  }
}

/* How a worker ended, into buf: waits up to EXIT_WAIT_MS for its exit callback. w->mu held. */
static void describe_end_locked(tirx__workers *w, slot *s, const char *what, char *buf,
                                size_t len) {
  uint64_t deadline = uv_hrtime() + (uint64_t)EXIT_WAIT_MS * 1000000u;
  while (!s->exited && uv_hrtime() < deadline)
    uv_cond_timedwait(&w->cv, &w->mu, deadline - uv_hrtime());
  if (what)
    snprintf(buf, len, "%s", what);
  else if (!s->exited)
    snprintf(buf, len, "closed its socket and did not exit");
  else if (s->term_signal)
    snprintf(buf, len, "was killed by signal %d (%s)", s->term_signal, strsignal(s->term_signal));
  else
    snprintf(buf, len, "exited with status %lld", (long long)s->exit_status);
}

/* One request on slot s. Returns 1 with *raw (a reply), 0 when the worker failed (end[] says
 * how; s is retired), or -1 with an error recorded (s is retired). */
static int request(tirx__workers *w, slot *s, const char *fn, const char *name,
                   const char *arch, const char *source, int nopts, const char *const *opts, bool want_ptx,
                   int attempt, tirx__nvrtc_raw *raw, double *millis, char *end, size_t end_len) {
  tirx__wfield fields[TIRX__WFRAME_MAX_FIELDS];
  char flags = want_ptx ? 1 : 0;
  int n = 0;
  fields[n++] = (tirx__wfield){name, strlen(name)};
  fields[n++] = (tirx__wfield){arch, strlen(arch)};
  fields[n++] = (tirx__wfield){source, strlen(source)};
  fields[n++] = (tirx__wfield){&flags, 1};
  for (int i = 0; i < nopts && n < TIRX__WFRAME_MAX_FIELDS; i++)
    fields[n++] = (tirx__wfield){opts[i], strlen(opts[i])};
  int wrc = tirx__wframe_write(s->fd, TIRX__WFRAME_REQUEST, fields, n);
  uv_mutex_lock(&w->mu);
  tirx__workers_hook hook = w->hook;
  uv_mutex_unlock(&w->mu);
  if (hook && wrc == 0)
    hook(w->hook_user, s->pid, attempt);
  tirx__wframe f;
  char why[WHY_MAX] = "";
  int rc = wrc == 0 ? tirx__wframe_read(s->fd, &f, why, sizeof why) : -1;
  if (wrc == -EINVAL) {
    uv_mutex_lock(&w->mu);
    retire_locked(w, s);
    uv_mutex_unlock(&w->mu);
    tirx__error(TIRX_E_LIMIT, "%s: the source of '%s' is too large for a compile worker (%zu "
                              "bytes, at most 1 GiB)",
                fn, name, strlen(source));
    return -1;
  }
  const char *garbage = NULL;
  char gbuf[WHY_MAX + 64];
  if (rc == 1 && f.kind == TIRX__WFRAME_ERROR) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", f.nfields >= 1 ? tirx__wframe_field(&f, 0) : "");
    tirx__wframe_free(&f);
    uv_mutex_lock(&w->mu);
    retire_locked(w, s);
    uv_mutex_unlock(&w->mu);
    tirx__error(TIRX_E_INTERNAL, "%s: the compile worker refused the request for '%s': %s", fn,
                name, msg);
    return -1;
  }
  if (rc == 1) {
    tirx__wreply_head h;
    if (f.kind != TIRX__WFRAME_REPLY || f.nfields != 4 || f.len[0] != sizeof h) {
      garbage = "answered with a frame that is not a reply";
    } else {
      memcpy(&h, tirx__wframe_field(&f, 0), sizeof h);
      if (h.stage < 0 || h.stage >= TIRX__RAW_STAGES ||
          (h.stage == TIRX__RAW_OK && (f.len[2] == 0 || (want_ptx && f.len[3] == 0))))
        garbage = "answered with an inconsistent reply";
    }
    if (!garbage) {
      memset(raw, 0, sizeof *raw);
      raw->stage = h.stage;
      raw->result = h.result;
      *millis = h.millis;
      bool oom = false;
      if (h.stage >= TIRX__RAW_COMPILE) {
        raw->log = malloc(f.len[1] + 1);
        oom |= !raw->log;
        if (raw->log)
          memcpy(raw->log, tirx__wframe_field(&f, 1), f.len[1] + 1);
      }
      if (h.stage == TIRX__RAW_OK) {
        raw->cubin = malloc(f.len[2]);
        raw->cubin_size = f.len[2];
        oom |= !raw->cubin;
        if (raw->cubin)
          memcpy(raw->cubin, tirx__wframe_field(&f, 2), f.len[2]);
        if (want_ptx) {
          raw->ptx = malloc(f.len[3] + 1);
          oom |= !raw->ptx;
          if (raw->ptx)
            memcpy(raw->ptx, tirx__wframe_field(&f, 3), f.len[3] + 1);
        }
      }
      tirx__wframe_free(&f);
      uv_mutex_lock(&w->mu);
      w->compiles++;
      s->state = W_IDLE;
      w->busy--;
      uv_cond_broadcast(&w->cv);
      uv_mutex_unlock(&w->mu);
      if (oom) {
        tirx__nvrtc_raw_free(raw);
        tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory copying the compile of '%s'", fn, name);
        return -1;
      }
      return 1;
    }
    tirx__wframe_free(&f);
  } else if (rc == -2) {
    snprintf(gbuf, sizeof gbuf, "answered garbage (%s)", why);
    garbage = gbuf;
  }
  uv_mutex_lock(&w->mu);
  w->deaths++;
  if (garbage) {
    /* It is alive but not trusted: killed before its exit is described. */
    s->kill_wanted = true;
    uv_async_send(&w->async);
  }
  describe_end_locked(w, s, garbage, end, end_len);
  retire_locked(w, s);
  uv_mutex_unlock(&w->mu);
  return 0;
}

tirx_status tirx__workers_compile(tirx__workers *w, const char *fn, const char *name,
                                  const char *arch, const char *source, int nopts, const char *const *opts,
                                  bool want_ptx, tirx__nvrtc_raw *raw, double *millis) {
  memset(raw, 0, sizeof *raw);
  *millis = 0;
  char first[WHY_MAX + 64] = "";
  int first_pid = 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    slot *s = NULL;
    tirx_status st = acquire(w, fn, &s);
    if (st != TIRX_OK)
      return st;
    int pid = s->pid;
    char end[WHY_MAX + 64] = "";
    uint64_t t0 = uv_hrtime();
    int rc = request(w, s, fn, name, arch, source, nopts, opts, want_ptx, attempt, raw, millis, end,
                     sizeof end);
    if (rc == 1) {
      *millis = (double)(uv_hrtime() - t0) / 1e6;
      return TIRX_OK;
    }
    if (rc < 0)
      return tirx_last_status();
    uv_mutex_lock(&w->mu);
    bool stopping = w->stopping;
    if (attempt == 0 && !stopping)
      w->retries++;
    uv_mutex_unlock(&w->mu);
    if (stopping)
      return tirx__error(TIRX_E_CANCELLED,
                         "%s: the compile workers shut down while compiling '%s'", fn, name);
    if (attempt == 0) {
      snprintf(first, sizeof first, "%s", end);
      first_pid = pid;
      continue;
    }
    return tirx__error(TIRX_E_COMPILE,
                       "%s: the compile worker (pid %d, %s) %s while compiling '%s'; the retry "
                       "on a fresh worker (pid %d) %s too. NVRTC crashed on this source, or "
                       "something kills the workers (out of memory?); TIRX_COMPILE_WORKERS=0 "
                       "compiles in the process instead",
                       fn, first_pid, w->path, first, name, pid, end);
  }
  return tirx__error(TIRX_E_INTERNAL, "%s: unreachable", fn);
}

/* ---- queries ---- */

void tirx__workers_stats_get(tirx__workers *w, tirx__workers_stats *out) {
  memset(out, 0, sizeof *out);
  if (!w)
    return;
  uv_mutex_lock(&w->mu);
  out->spawned = w->spawned;
  out->compiles = w->compiles;
  out->deaths = w->deaths;
  out->retries = w->retries;
  out->max = w->max;
  out->off = w->off;
  for (unsigned i = 0; i < w->max; i++)
    if (w->slots[i].proc_open && !w->slots[i].exited)
      out->alive++;
  uv_mutex_unlock(&w->mu);
}

const char *tirx__workers_off_reason(tirx__workers *w) {
  if (!w)
    return "";
  uv_mutex_lock(&w->mu);
  const char *r = w->off ? w->off_reason : "";
  uv_mutex_unlock(&w->mu);
  return r;
}

int tirx__workers_pids(tirx__workers *w, int *pids, int cap) {
  int n = 0;
  uv_mutex_lock(&w->mu);
  for (unsigned i = 0; i < w->max; i++)
    if (w->slots[i].proc_open && !w->slots[i].exited && n < cap)
      pids[n++] = w->slots[i].pid;
  uv_mutex_unlock(&w->mu);
  return n;
}

void tirx__workers_set_hook(tirx__workers *w, tirx__workers_hook hook, void *user) {
  uv_mutex_lock(&w->mu);
  w->hook = hook;
  w->hook_user = user;
  uv_mutex_unlock(&w->mu);
}

/* ---- the runtime's compiles ---- */

struct tirx__workers *tirx__runtime_workers(tirx_runtime *rt) {
  if (!rt->worker_path)
    return NULL;
  if (TIRX_LIKELY(atomic_load_explicit(&rt->workers_ready, memory_order_acquire)))
    return rt->workers;
  pthread_mutex_lock(&rt->mu);
  if (!rt->workers_ready) {
    tirx_status saved_st = tirx_last_status();
    char *saved = strdup(tirx_last_error());
    if (tirx__workers_create(rt->worker_path, rt->worker_count, rt->worker_nice, &rt->workers) !=
        TIRX_OK)
      tirx__log(rt, 1, "compile workers: %s; compiling in the process", tirx_last_error());
    else
      tirx__log(rt, 1, "compile workers: up to %u of %s", rt->worker_count, rt->worker_path);
    /* The pool is best effort: the caller's last error stays as it was. */
    if (saved_st == TIRX_OK || !saved)
      tirx_clear_error();
    else
      tirx__error(saved_st, "%s", saved);
    free(saved);
    atomic_store_explicit(&rt->workers_ready, true, memory_order_release);
  }
  pthread_mutex_unlock(&rt->mu);
  return rt->workers;
}

tirx_status tirx__runtime_nvrtc(tirx_runtime *rt, const char *fn, const char *name,
                                const char *source, const char *arch, bool want_ptx,
                                tirx__nvrtc_output *out) {
  tirx__workers *w = tirx__runtime_workers(rt);
  if (w && source && arch) {
    memset(out, 0, sizeof *out);
    if (!name)
      name = "(unnamed)";
    tirx_status st = tirx__nvrtc_check_arch(fn, arch);
    if (st != TIRX_OK)
      return st;
    char arch_opt[64];
    const char *opts[TIRX__NVRTC_MAX_OPTIONS];
    int nopts = tirx__nvrtc_options(arch, source, arch_opt, opts);
    tirx__nvrtc_raw raw;
    double millis = 0;
    st = tirx__workers_compile(w, fn, name, arch, source, nopts, opts, want_ptx, &raw, &millis);
    if (st == TIRX_OK) {
      atomic_fetch_add(&rt->worker_compiles, 1);
      return tirx__nvrtc_finish(fn, name, source, arch, want_ptx, &raw, millis, out);
    }
    if (st != TIRX__WORKERS_FALLBACK)
      return st;
    static _Atomic bool said;
    if (!atomic_exchange(&said, true))
      tirx__log(rt, 1, "compile workers off (%s): compiling in the process",
                tirx__workers_off_reason(w));
  }
  atomic_fetch_add(&rt->in_process_compiles, 1);
  return tirx__nvrtc_compile(fn, name, source, arch, want_ptx, out);
}
