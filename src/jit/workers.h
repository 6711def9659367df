/*
 * The compile worker pool: NVRTC in child processes (tirx-compile-worker), so that compiles run
 * at the speed of the cores (NVRTC partly serialises threads of one process, reliability plan
 * A10), a crash inside NVRTC costs a worker rather than the host, and a host holding CUDA state
 * never forks a child that goes on running (workers are started with uv_spawn, which execs at
 * once).
 *
 * A pool owns a libuv loop on its own thread: it spawns workers (uv_spawn, each with one end of
 * a uv_socketpair as its stdin and stdout, its stderr the host's, in the host's session but
 * its own process group, its nice value raised by the pool's nice (TIRX__WORKER_NICE by
 * default, $TIRX_COMPILE_WORKER_NICE) so it yields the cores to
 * launching threads) and reaps
 * them (exit callbacks). A compile runs on the caller's thread: it takes an idle worker
 * (spawning one, up to the pool's size, when none is idle), writes the request to the socket
 * and blocks reading the reply. Workers live until the pool is destroyed.
 *
 * A worker that dies during a compile (killed, crashed) or answers garbage is replaced and the
 * compile is retried once on a fresh worker; a second failure is the compile's error. A pool
 * whose worker cannot be started (spawn failed, or the program is not a tirx compile worker
 * speaking this protocol with this process's NVRTC version) turns itself off: then every
 * compile returns TIRX__WORKERS_FALLBACK and runs in the process.
 *
 * libuv reaps its children from a SIGCHLD handler (uv_spawn installs it process-wide). A host
 * that reaps every child itself (waitpid(-1, ...), or SIGCHLD set to SIG_IGN) takes the
 * workers' exit statuses away: a death is then described as "closed its socket and did not
 * exit", and destroy gives up on the process handles after its deadlines (leaking the pool
 * rather than hanging). Such a host sets TIRX_COMPILE_WORKERS=0.
 */
#ifndef TIRX_JIT_WORKERS_H
#define TIRX_JIT_WORKERS_H

#include <tirx.h>

#include "worker_proto.h"

typedef struct tirx__workers tirx__workers;

/* What tirx__workers_compile returns when the pool is off: compile in the process. */
#define TIRX__WORKERS_FALLBACK ((tirx_status)-2)

/* The default of what workers add to the host's nice value (the sum at most 19). */
enum { TIRX__WORKER_NICE = 10 };

/* Creates a pool of at most max (>= 1) workers of the program at path (copied), each at the
 * host's nice value + nice (0..19; the sum at most 19). Starts the pool's loop thread; no
 * worker is spawned before the first compile. Errors: TIRX_E_NO_MEMORY, TIRX_E_INTERNAL
 * (libuv failed). */
tirx_status tirx__workers_create(const char *path, unsigned max, int nice, tirx__workers **out);

/*
 * Compiles source with NVRTC in a worker, as tirx__nvrtc_raw_compile would in the process, into
 * *raw (free it with tirx__nvrtc_raw_free) and the time in *millis. fn and name are for
 * messages. Returns TIRX_OK (whatever NVRTC said: raw->stage tells), TIRX__WORKERS_FALLBACK
 * when the pool is off (nothing recorded), or an error:
 *   TIRX_E_COMPILE  the worker died (or answered garbage) and so did the retry:
 *                   "<fn>: the compile worker (pid 12, .../tirx-compile-worker) was killed by
 *                   signal 9 (Killed) while compiling 'k'; the retry on a fresh worker
 *                   (pid 13) was killed by signal 9 (Killed) too ..."
 *   TIRX_E_CANCELLED the pool is shutting down
 *   TIRX_E_INTERNAL the worker refused the request as malformed (a bug)
 *   TIRX_E_NO_MEMORY
 */
tirx_status tirx__workers_compile(tirx__workers *w, const char *fn, const char *name,
                                  const char *arch, const char *source, int nopts, const char *const *opts,
                                  bool want_ptx, tirx__nvrtc_raw *raw, double *millis);

/* Closes every worker's socket (an idle worker exits at once), waits for them to exit (a
 * deadline, then SIGKILL), stops the loop thread and frees the pool. The caller must have no
 * compile in flight. NULL is a no-op. */
void tirx__workers_destroy(tirx__workers *w);

typedef struct tirx__workers_stats {
  uint64_t spawned;  /* workers started */
  uint64_t compiles; /* requests answered by a worker */
  uint64_t deaths;   /* workers that died or answered garbage during a request */
  uint64_t retries;  /* requests retried on a fresh worker */
  unsigned alive;    /* workers running now */
  unsigned max;      /* the pool's size */
  bool off;          /* the pool turned itself off (off_reason says why) */
} tirx__workers_stats;

void tirx__workers_stats_get(tirx__workers *w, tirx__workers_stats *out);

/* Why the pool is off ("" while it is on). Valid until destroy. */
const char *tirx__workers_off_reason(tirx__workers *w);

/* The pids of the running workers into pids[0..cap), their count as the return value. */
int tirx__workers_pids(tirx__workers *w, int *pids, int cap);

/* For tests: called on the compiling thread after a request was written to worker pid, before
 * its reply is read; attempt is 0, then 1 for the retry. NULL removes it. */
typedef void (*tirx__workers_hook)(void *user, int pid, int attempt);
void tirx__workers_set_hook(tirx__workers *w, tirx__workers_hook hook, void *user);

#endif
