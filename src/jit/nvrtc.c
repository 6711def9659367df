/* NVRTC: CUDA C++ to cubin (and PTX) for a named architecture. Needs no GPU. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jit.h"

enum {
  NVRTC_STACK_NEEDED = 4 << 20, /* compile inline when the caller's stack is at least this */
  NVRTC_STACK_GIVEN = 8 << 20,  /* the helper thread's stack (NVIDIA/cccl#10839: 1-1.5 MiB) */
  QUOTED_ERRORS_MAX = 16        /* source lines quoted in a compile error */
};

int tirx__nvrtc_version(void) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return 0;
  return major * 1000 + minor * 10;
}

tirx_status tirx__nvrtc_check_arch(const char *fn, const char *arch) {
  if (!arch)
    return tirx__error(TIRX_E_NULL_ARG, "%s: arch is NULL", fn);
  int number = tirx__arch_parse(arch, NULL);
  if (number < 0)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: arch '%.32s' is not of the form sm_<major><minor>[a|f] (sm_90a, sm_80)",
                       fn, arch);
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 256)
    return tirx__error(TIRX_E_INTERNAL, "%s: nvrtcGetNumSupportedArchs failed", fn);
  int archs[256];
  if (nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS)
    return tirx__error(TIRX_E_INTERNAL, "%s: nvrtcGetSupportedArchs failed", fn);
  for (int i = 0; i < n; i++)
    if (archs[i] == number)
      return TIRX_OK;
  return tirx__error(TIRX_E_NOT_SUPPORTED,
                     "%s: arch '%s' is not supported by NVRTC %d.%d (sm_%d to sm_%d)", fn, arch,
                     tirx__nvrtc_version() / 1000, tirx__nvrtc_version() % 1000 / 10, archs[0],
                     archs[n - 1]);
}

int tirx__nvrtc_options(const char *arch, char arch_buf[64],
                        const char *opts[TIRX__NVRTC_MAX_OPTIONS]) {
  snprintf(arch_buf, 64, "--gpu-architecture=%s", arch);
  /* Fixed and ordered: the same source and arch give the same bytes. */
  opts[0] = arch_buf;
  opts[1] = "--std=c++17";
  opts[2] = "-lineinfo";
  return 3;
}

/* ---- the compile itself ---- */

typedef struct compile_job {
  const char *fn, *name, *source, *arch;
  bool want_ptx;
  tirx__nvrtc_output *out;
  tirx_status status;
  /* The error message when status != TIRX_OK, malloc'ed (the helper thread's own last error
   * is thread-local and would be lost). */
  char *message;
} compile_job;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The text of line `line` (1-based) of source, as pointer and length; false when absent. */
static bool source_line(const char *source, long line, const char **begin, size_t *len) {
  const char *p = source;
  for (long i = 1; i < line && p; i++) {
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  if (!p || !*p || line < 1)
    return false;
  const char *end = strchr(p, '\n');
  *begin = p;
  *len = end ? (size_t)(end - p) : strlen(p);
  return true;
}

/* The log with every "kernel.cu(N): error" line followed by "  > N | <source line N>". */
static char *annotate_log(const char *log, const char *source) {
  tirx__strbuf sb = {0};
  const char *prefix = TIRX__NVRTC_FILE "(";
  size_t plen = strlen(prefix);
  int quoted = 0;
  for (const char *p = log; *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    tirx__sb_printf(&sb, "%.*s\n", (int)len, p);
    if (len > plen && strncmp(p, prefix, plen) == 0 && quoted < QUOTED_ERRORS_MAX) {
      char *after = NULL;
      long line = strtol(p + plen, &after, 10);
      const char *b;
      size_t n;
      if (after && strncmp(after, "): error", 8) == 0 && source_line(source, line, &b, &n)) {
        tirx__sb_printf(&sb, "  > %ld | %.*s\n", line, (int)(n > 300 ? 300 : n), b);
        quoted++;
      }
    }
    p += len;
    if (*p == '\n')
      p++;
  }
  return tirx__sb_finish(&sb);
}

static void job_fail(compile_job *j, tirx_status st, const char *fmt, ...) TIRX_PRINTF(3, 4);
static void job_fail(compile_job *j, tirx_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tirx__verror(st, fmt, ap);
  va_end(ap);
  j->status = st;
  j->message = strdup(tirx_last_error());
}

static char *program_log(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size == 0)
    size = 1;
  char *log = calloc(size + 1, 1);
  if (log && size > 1 && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
    log[0] = '\0';
  return log;
}

static void compile_run(compile_job *j) {
  double t0 = now_ms();
  nvrtcProgram prog = NULL;
  char arch_opt[64];
  const char *opts[TIRX__NVRTC_MAX_OPTIONS];
  int nopts = tirx__nvrtc_options(j->arch, arch_opt, opts);
  nvrtcResult r = nvrtcCreateProgram(&prog, j->source, TIRX__NVRTC_FILE, 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    job_fail(j, r == NVRTC_ERROR_OUT_OF_MEMORY ? TIRX_E_NO_MEMORY : TIRX_E_COMPILE,
             "%s: nvrtcCreateProgram failed for '%s': %s", j->fn, j->name, nvrtcGetErrorString(r));
    return;
  }
  r = nvrtcCompileProgram(prog, nopts, opts);
  char *log = program_log(prog);
  if (!log) {
    nvrtcDestroyProgram(&prog);
    job_fail(j, TIRX_E_NO_MEMORY, "%s: out of memory reading the NVRTC log", j->fn);
    return;
  }
  if (r != NVRTC_SUCCESS) {
    char *annotated = annotate_log(log, j->source);
    job_fail(j, r == NVRTC_ERROR_OUT_OF_MEMORY ? TIRX_E_NO_MEMORY : TIRX_E_COMPILE,
             "%s: NVRTC could not compile '%s' for %s (%s):\n%s", j->fn, j->name, j->arch,
             nvrtcGetErrorString(r), annotated ? annotated : log);
    free(annotated);
    free(log);
    nvrtcDestroyProgram(&prog);
    return;
  }
  size_t cubin_size = 0, ptx_size = 0;
  void *cubin = NULL;
  char *ptx = NULL;
  r = nvrtcGetCUBINSize(prog, &cubin_size);
  if (r == NVRTC_SUCCESS && cubin_size > 0) {
    cubin = malloc(cubin_size);
    if (cubin)
      r = nvrtcGetCUBIN(prog, cubin);
  }
  if (r == NVRTC_SUCCESS && cubin && j->want_ptx) {
    r = nvrtcGetPTXSize(prog, &ptx_size);
    if (r == NVRTC_SUCCESS) {
      ptx = calloc(ptx_size + 1, 1);
      if (ptx)
        r = nvrtcGetPTX(prog, ptx);
    }
  }
  nvrtcDestroyProgram(&prog);
  if (r != NVRTC_SUCCESS || !cubin || cubin_size == 0 || (j->want_ptx && !ptx)) {
    if (r != NVRTC_SUCCESS)
      job_fail(j, TIRX_E_COMPILE, "%s: NVRTC produced no cubin for '%s' (%s): %s", j->fn, j->name,
               j->arch, nvrtcGetErrorString(r));
    else
      job_fail(j, TIRX_E_NO_MEMORY, "%s: out of memory copying the cubin of '%s'", j->fn, j->name);
    free(cubin);
    free(ptx);
    free(log);
    return;
  }
  j->out->cubin = cubin;
  j->out->cubin_size = cubin_size;
  j->out->ptx = ptx;
  j->out->log = log;
  j->out->millis = now_ms() - t0;
  j->status = TIRX_OK;
}

static void *compile_thread(void *arg) {
  compile_run(arg);
  return NULL;
}

static size_t current_stack_size(void) {
  pthread_attr_t attr;
  size_t size = 0;
  void *addr = NULL;
  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    return 0;
  if (pthread_attr_getstack(&attr, &addr, &size) != 0)
    size = 0;
  pthread_attr_destroy(&attr);
  return size;
}

tirx_status tirx__nvrtc_compile(const char *fn, const char *name, const char *source,
                                const char *arch, bool want_ptx, tirx__nvrtc_output *out) {
  memset(out, 0, sizeof *out);
  if (!source)
    return tirx__error(TIRX_E_NULL_ARG, "%s: source is NULL", fn);
  if (!name)
    name = "(unnamed)";
  tirx_status st = tirx__nvrtc_check_arch(fn, arch);
  if (st != TIRX_OK)
    return st;
  compile_job job = {fn, name, source, arch, want_ptx, out, TIRX_E_INTERNAL, NULL};
  if (current_stack_size() >= NVRTC_STACK_NEEDED) {
    compile_run(&job);
  } else {
    pthread_attr_t attr;
    pthread_t th;
    bool started = false;
    if (pthread_attr_init(&attr) == 0) {
      if (pthread_attr_setstacksize(&attr, NVRTC_STACK_GIVEN) == 0 &&
          pthread_create(&th, &attr, compile_thread, &job) == 0)
        started = true;
      pthread_attr_destroy(&attr);
    }
    if (!started)
      return tirx__error(TIRX_E_NO_MEMORY, "%s: cannot start a compile thread with an 8 MiB stack",
                         fn);
    pthread_join(th, NULL);
  }
  if (job.status != TIRX_OK) {
    if (job.message)
      tirx__error(job.status, "%s", job.message);
    else
      tirx__error(job.status, "%s: out of memory reporting a compile error", fn);
    free(job.message);
    return job.status;
  }
  return TIRX_OK;
}

void tirx__nvrtc_output_free(tirx__nvrtc_output *out) {
  if (!out)
    return;
  free(out->cubin);
  free(out->ptx);
  free(out->log);
  memset(out, 0, sizeof *out);
}
