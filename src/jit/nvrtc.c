/* NVRTC: CUDA C++ to cubin (and PTX) for a named architecture. Needs no GPU. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ir/ir.h" /* tirx__codegen_wrote */
#include "jit.h"
#include "nvrtc_lib.h"
#include "worker_proto.h"

enum {
  NVRTC_STACK_NEEDED = 4 << 20, /* compile inline when the caller's stack is at least this */
  NVRTC_STACK_GIVEN = 8 << 20,  /* the helper thread's stack (NVIDIA/cccl#10839: 1-1.5 MiB) */
  QUOTED_ERRORS_MAX = 16        /* source lines quoted in a compile error */
};

int tirx__nvrtc_version(void) {
  const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
  return nv ? nv->version : 0;
}

tirx_status tirx__nvrtc_require(const char *fn) {
  if (tirx__nvrtc_lib_get())
    return TIRX_OK;
  return tirx__error(TIRX_E_NO_NVRTC, "%s: %s", fn, tirx__nvrtc_lib_error());
}

tirx_status tirx__nvrtc_check_arch_form(const char *fn, const char *arch) {
  if (!arch)
    return tirx__error(TIRX_E_NULL_ARG, "%s: arch is NULL", fn);
  if (tirx__arch_parse(arch, NULL) < 0)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: arch '%.32s' is not of the form sm_<major><minor>[a|f] (sm_90a, sm_80)",
                       fn, arch);
  return TIRX_OK;
}

tirx_status tirx__nvrtc_check_arch(const char *fn, const char *arch) {
  tirx_status st = tirx__nvrtc_check_arch_form(fn, arch);
  if (st != TIRX_OK || (st = tirx__nvrtc_require(fn)) != TIRX_OK)
    return st;
  const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
  int number = tirx__arch_parse(arch, NULL);
  int n = 0;
  if (nv->GetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 256)
    return tirx__error(TIRX_E_INTERNAL, "%s: nvrtcGetNumSupportedArchs failed", fn);
  int archs[256];
  if (nv->GetSupportedArchs(archs) != NVRTC_SUCCESS)
    return tirx__error(TIRX_E_INTERNAL, "%s: nvrtcGetSupportedArchs failed", fn);
  for (int i = 0; i < n; i++)
    if (archs[i] == number)
      return TIRX_OK;
  return tirx__error(TIRX_E_NOT_SUPPORTED,
                     "%s: arch '%s' is not supported by NVRTC %d.%d (sm_%d to sm_%d)", fn, arch,
                     tirx__nvrtc_version() / 1000, tirx__nvrtc_version() % 1000 / 10, archs[0],
                     archs[n - 1]);
}

int tirx__nvrtc_options(const char *arch, const char *source, char arch_buf[64],
                        const char *opts[TIRX__NVRTC_MAX_OPTIONS]) {
  snprintf(arch_buf, 64, "--gpu-architecture=%s", arch);
  /* Fixed and ordered: the same source and arch give the same bytes. --minimal leaves out of
   * NVRTC's built-in header what generated code never uses (texture and surface functions,
   * the device runtime API, device-side launches, the runtime's and driver's types): 4 to 6 ms
   * less front end per compile of the GEMM kernels, the same SASS (PERF-NOTES, "GEMM cold
   * compile, third pass"). */
  opts[0] = arch_buf;
  opts[1] = "--std=c++17";
  opts[2] = "-lineinfo";
  if (!tirx__codegen_wrote(source))
    return 3;
  opts[3] = "--minimal";
  return 4;
}

/* ---- the compile itself ---- */

typedef struct compile_job {
  const char *source;
  int nopts;
  const char *const *opts;
  bool want_ptx;
  tirx__nvrtc_raw raw;
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

static const char *result_text(int r) {
  const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
  const char *text = nv ? nv->GetErrorString((nvrtcResult)r) : NULL;
  return text ? text : "an unknown NVRTC result";
}

tirx_status tirx__nvrtc_finish(const char *fn, const char *name, const char *source,
                               const char *arch, bool want_ptx, tirx__nvrtc_raw *raw,
                               double millis, tirx__nvrtc_output *out) {
  memset(out, 0, sizeof *out);
  tirx_status st = TIRX_OK;
  bool oom = raw->result == (int)NVRTC_ERROR_OUT_OF_MEMORY;
  switch (raw->stage) {
  case TIRX__RAW_OK:
    if (!raw->cubin || raw->cubin_size == 0 || (want_ptx && !raw->ptx)) {
      st = tirx__error(TIRX_E_INTERNAL, "%s: NVRTC's result for '%s' has no %s", fn, name,
                       raw->cubin ? "PTX" : "cubin");
      break;
    }
    out->cubin = raw->cubin;
    out->cubin_size = raw->cubin_size;
    out->ptx = raw->ptx;
    out->log = raw->log ? raw->log : calloc(1, 1);
    out->millis = millis;
    raw->cubin = NULL;
    raw->ptx = NULL;
    raw->log = NULL;
    if (!out->log) {
      tirx__nvrtc_output_free(out);
      st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory reading the NVRTC log", fn);
    }
    break;
  case TIRX__RAW_CREATE:
    st = tirx__error(oom ? TIRX_E_NO_MEMORY : TIRX_E_COMPILE,
                     "%s: nvrtcCreateProgram failed for '%s': %s", fn, name,
                     result_text(raw->result));
    break;
  case TIRX__RAW_LOG_OOM:
    st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory reading the NVRTC log", fn);
    break;
  case TIRX__RAW_COMPILE: {
    const char *log = raw->log ? raw->log : "";
    char *annotated = annotate_log(log, source);
    st = tirx__error(oom ? TIRX_E_NO_MEMORY : TIRX_E_COMPILE,
                     "%s: NVRTC could not compile '%s' for %s (%s):\n%s", fn, name, arch,
                     result_text(raw->result), annotated ? annotated : log);
    free(annotated);
    break;
  }
  case TIRX__RAW_OUTPUT:
    st = tirx__error(TIRX_E_COMPILE, "%s: NVRTC produced no cubin for '%s' (%s): %s", fn, name,
                     arch, result_text(raw->result));
    break;
  case TIRX__RAW_OUTPUT_OOM:
    st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory copying the cubin of '%s'", fn, name);
    break;
  case TIRX__RAW_NO_NVRTC: /* the compile worker's NVRTC; this process's is checked before */
    st = tirx__error(TIRX_E_NO_NVRTC, "%s: the compile of '%s' found no NVRTC: %s", fn, name,
                     raw->log && *raw->log ? raw->log : "cannot load NVRTC");
    break;
  default:
    st = tirx__error(TIRX_E_INTERNAL, "%s: NVRTC's result for '%s' has an unknown stage %d", fn,
                     name, raw->stage);
    break;
  }
  tirx__nvrtc_raw_free(raw);
  return st;
}

static void *compile_thread(void *arg) {
  compile_job *j = arg;
  tirx__nvrtc_raw_compile(j->source, j->nopts, j->opts, j->want_ptx, &j->raw);
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

bool tirx__nvrtc_run_raw(const char *source, int nopts, const char *const *opts, bool want_ptx,
                         tirx__nvrtc_raw *raw) {
  compile_job job = {source, nopts, opts, want_ptx, {0}};
  if (current_stack_size() >= NVRTC_STACK_NEEDED) {
    compile_thread(&job);
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
      return false;
    pthread_join(th, NULL);
  }
  *raw = job.raw;
  return true;
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
  char arch_opt[64];
  const char *opts[TIRX__NVRTC_MAX_OPTIONS];
  int nopts = tirx__nvrtc_options(arch, source, arch_opt, opts);
  double t0 = now_ms();
  tirx__nvrtc_raw raw;
  if (!tirx__nvrtc_run_raw(source, nopts, opts, want_ptx, &raw))
    return tirx__error(TIRX_E_NO_MEMORY, "%s: cannot start a compile thread with an 8 MiB stack",
                       fn);
  return tirx__nvrtc_finish(fn, name, source, arch, want_ptx, &raw, now_ms() - t0, out);
}

void tirx__nvrtc_output_free(tirx__nvrtc_output *out) {
  if (!out)
    return;
  free(out->cubin);
  free(out->ptx);
  free(out->log);
  memset(out, 0, sizeof *out);
}
