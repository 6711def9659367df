/*
 * tirx-compile-worker: runs NVRTC for the tirx library (src/jit/workers.c starts it), one
 * request at a time, over the socket it gets as stdin and stdout (worker_proto.h has the
 * frames). Its stdout is kept for replies only: anything else printing to fd 1 goes to stderr.
 * It holds no CUDA context and needs no GPU; it loads NVRTC with dlopen, as the library does
 * (nvrtc_lib.h, $TIRX_NVRTC_LIBRARY inherited). Not meant to be run by hand.
 *
 * Memory. NVRTC allocates and frees some megabytes per compile (6 MiB for a small kernel, 50 MiB
 * for an attention kernel). glibc's defaults hand that back to the kernel after each compile
 * (trimming the heap's top, munmap of large blocks), so the next compile faults every page in
 * again: 1,500 faults and 2.5-3 ms of system time on a 25 ms compile. The worker keeps its heap
 * between compiles instead (one arena, large blocks from the heap, no trim) and gives the free
 * part back with malloc_trim once it has been idle for IDLE_TRIM_MS: a burst of compiles reuses
 * warm pages, an idle pool holds no more than it did before.
 *
 * Exit status: 0 at the end of input, 2 after a malformed request (answered with ERROR), 3 when
 * a reply cannot be written (the library went away), 64 when started on a terminal.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "nvrtc_lib.h"
#include "worker_proto.h"

enum {
  STACK = 8 << 20,
  MAX_OPTIONS = TIRX__WFRAME_MAX_FIELDS - 4,
  IDLE_TRIM_MS = 1000 /* idle this long after a reply, the worker gives its free heap back */
};

/* Keeps freed memory in the process between compiles (the file's comment, "Memory"). */
static void keep_heap(void) {
#ifdef __GLIBC__
  mallopt(M_ARENA_MAX, 1);                /* the compile thread allocates from the main heap */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);    /* blocks up to 32 MiB (glibc's most) from the heap */
  mallopt(M_TRIM_THRESHOLD, 1024 << 20); /* the heap's top is trimmed when idle, not per free */
#endif
}

/* Waits up to IDLE_TRIM_MS for the next request; when none comes, gives the free heap back. */
static void trim_when_idle(int in) {
  struct pollfd p = {.fd = in, .events = POLLIN};
  int rc;
  do
    rc = poll(&p, 1, IDLE_TRIM_MS);
  while (rc < 0 && errno == EINTR);
#ifdef __GLIBC__
  if (rc == 0)
    malloc_trim(0);
#endif
}

typedef struct job {
  const char *source;
  int nopts;
  const char *opts[MAX_OPTIONS];
  bool want_ptx;
  tirx__nvrtc_raw raw;
} job;

static void *run(void *arg) {
  job *j = arg;
  tirx__nvrtc_raw_compile(j->source, j->nopts, j->opts, j->want_ptx, &j->raw);
  return NULL;
}

static int refuse(int out, const char *why) {
  tirx__wfield f = {why, strlen(why)};
  tirx__wframe_write(out, TIRX__WFRAME_ERROR, &f, 1);
  fprintf(stderr, "tirx-compile-worker: %s\n", why);
  return 2;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc > 1 || isatty(0)) {
    fprintf(stderr, "tirx-compile-worker: runs NVRTC for the tirx library, which starts it; "
                    "not for use by hand\n");
    return 64;
  }
  keep_heap();
  signal(SIGPIPE, SIG_IGN);
  /* Out of the host's process group (a terminal's ^C is the host's to handle), in its session
   * (the scheduler's autogroup, where the nice value the library gave us counts). */
  setpgid(0, 0);
  int in = 0, out = dup(1);
  if (out < 0 || dup2(2, 1) < 0)
    return 3;
  /* NVRTC through dlopen (nvrtc_lib.h), as the library loads it. Without it the greeting says
   * version 0 and the library compiles in its own process. */
  const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
  if (!nv)
    fprintf(stderr, "tirx-compile-worker: %s\n", tirx__nvrtc_lib_error());
  tirx__whello hello = {TIRX__WPROTOCOL, nv ? nv->version : 0, (int32_t)getpid(), 0};
  static const char name[] = "tirx-compile-worker";
  tirx__wfield hf[2] = {{name, sizeof name - 1}, {&hello, sizeof hello}};
  if (tirx__wframe_write(out, TIRX__WFRAME_HELLO, hf, 2) != 0)
    return 3;
  for (;;) {
    tirx__wframe f;
    char why[256];
    int rc = tirx__wframe_read(in, &f, why, sizeof why);
    if (rc == 0)
      return 0;
    if (rc < 0)
      return refuse(out, why);
    if (f.kind != TIRX__WFRAME_REQUEST || f.nfields < 4 || f.nfields - 4 > MAX_OPTIONS) {
      tirx__wframe_free(&f);
      return refuse(out, "expected a request frame of 4 to 16 fields");
    }
    job j;
    memset(&j, 0, sizeof j);
    j.source = tirx__wframe_field(&f, 2);
    const char *flags = tirx__wframe_field(&f, 3);
    bool ok = f.len[3] == 1 && (flags[0] == 0 || flags[0] == 1) && f.len[2] > 0 &&
              strlen(j.source) == f.len[2];
    j.want_ptx = ok && flags[0] == 1;
    j.nopts = f.nfields - 4;
    for (int i = 0; ok && i < j.nopts; i++) {
      j.opts[i] = tirx__wframe_field(&f, 4 + i);
      ok = strlen(j.opts[i]) == f.len[4 + i];
    }
    if (!ok) {
      tirx__wframe_free(&f);
      return refuse(out, "malformed request: empty source, a NUL inside the source or an "
                         "option, or flags other than 0 or 1");
    }
    double t0 = now_ms();
    pthread_attr_t attr;
    pthread_t th;
    bool started = pthread_attr_init(&attr) == 0 &&
                   pthread_attr_setstacksize(&attr, STACK) == 0 &&
                   pthread_create(&th, &attr, run, &j) == 0;
    pthread_attr_destroy(&attr);
    if (started)
      pthread_join(th, NULL);
    else
      run(&j); /* the main thread's stack is the process's (8 MiB unless ulimit says less) */
    tirx__wreply_head h = {j.raw.stage, j.raw.result, now_ms() - t0};
    const char *log = j.raw.log ? j.raw.log : "";
    const char *ptx = j.raw.ptx ? j.raw.ptx : "";
    tirx__wfield rf[4] = {{&h, sizeof h},
                          {log, strlen(log)},
                          {j.raw.cubin, j.raw.cubin ? j.raw.cubin_size : 0},
                          {ptx, strlen(ptx)}};
    rc = tirx__wframe_write(out, TIRX__WFRAME_REPLY, rf, 4);
    tirx__nvrtc_raw_free(&j.raw);
    tirx__wframe_free(&f);
    if (rc != 0)
      return 3;
    trim_when_idle(in);
  }
}
