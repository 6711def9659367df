/* The runtime object: creation with or without a device, the table of loaded kernels,
 * tirx_compile, sticky failure, dumps and logging. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "jit.h"
#include "workers.h"

/* ---- fork ---- */

_Atomic unsigned tirx__fork_generation;

static void on_fork_child(void) {
  atomic_fetch_add_explicit(&tirx__fork_generation, 1, memory_order_relaxed);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void register_fork_handler(void) { pthread_atfork(NULL, NULL, on_fork_child); }

tirx_status tirx__forked_error(const char *fn, const char *what, long pid) {
  return tirx__error(TIRX_E_FORKED,
                     "%s: the %s was created in another process (pid %ld); a forked child "
                     "cannot use it",
                     fn, what, pid);
}

/* ---- logging and dumps ---- */

void tirx__log(const tirx_runtime *rt, int level, const char *fmt, ...) {
  if (!rt || rt->log_level < level)
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "tirx: %s\n", line);
}

void tirx__hash_hex(const uint64_t hash[2], char buf[33]) {
  snprintf(buf, 33, "%016llx%016llx", (unsigned long long)hash[0], (unsigned long long)hash[1]);
}

/* Writes text to dir/base.ext through a temporary file in dir renamed into place, so a reader
 * (or another process dumping the same kernel) never sees a half-written file. */
static void dump_file(const char *dir, const char *base, const char *ext, const char *text) {
  if (!text)
    return;
  char path[4096], tmp[4200];
  int n = snprintf(path, sizeof path, "%s/%s.%s", dir, base, ext);
  if (n < 0 || (size_t)n >= sizeof path) {
    fprintf(stderr, "tirx: dump path too long in TIRX_DUMP_DIR '%s'\n", dir);
    return;
  }
  static _Atomic unsigned seq;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(),
           atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed));
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "tirx: cannot write dump file %s: %s\n", path, strerror(errno));
    return;
  }
  size_t len = strlen(text);
  bool ok = fwrite(text, 1, len, f) == len;
  if (!ok)
    fprintf(stderr, "tirx: cannot write dump file %s: %s\n", path, strerror(errno));
  if (fclose(f) != 0) {
    fprintf(stderr, "tirx: cannot close dump file %s\n", path);
    ok = false;
  }
  if (ok && rename(tmp, path) != 0) {
    fprintf(stderr, "tirx: cannot rename dump file into %s: %s\n", path, strerror(errno));
    ok = false;
  }
  if (!ok)
    unlink(tmp);
}

/* The dump files of kernel k as base.{ir,cu,ptx,dispatch} in the dump directory; source is the
 * CUDA that was compiled. */
static void dump_files(const tirx_runtime *rt, const tirx_kernel *k, const char *base,
                       const char *source, const char *ptx) {
  if (rt->dump_filter && !strstr(tirx__kernel_entry(k) ? tirx__kernel_entry(k) : "",
                                 rt->dump_filter))
    return;
  if (mkdir(rt->dump_dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "tirx: cannot create TIRX_DUMP_DIR '%s': %s\n", rt->dump_dir, strerror(errno));
    return;
  }
  dump_file(rt->dump_dir, base, "ir", tirx__kernel_ir(k));
  dump_file(rt->dump_dir, base, "cu", source);
  dump_file(rt->dump_dir, base, "ptx", ptx);
  const char *report = tirx_kernel_dispatch_report(k);
  if (report && *report) dump_file(rt->dump_dir, base, "dispatch", report);
  tirx__log(rt, 1, "dumped %s/%s.{ir,cu,ptx%s}", rt->dump_dir, base,
            report && *report ? ",dispatch" : "");
}

void tirx__dump_kernel(const tirx_runtime *rt, const tirx_kernel *k, const char *ptx) {
  if (!rt->dump_dir)
    return;
  uint64_t hash[2];
  tirx__kernel_hash(k, hash);
  char hex[33], base[160];
  tirx__hash_hex(hash, hex);
  snprintf(base, sizeof base, "%.100s-%s", tirx__kernel_entry(k), hex);
  dump_files(rt, k, base, tirx__kernel_source(k), ptx);
}

void tirx__dump_variant(const tirx_runtime *rt, const tirx_kernel *k, const char *source,
                        const char *arch, const char key_hex[33], const char *ptx) {
  if (!rt->dump_dir)
    return;
  char base[200];
  snprintf(base, sizeof base, "%.100s.%.16s-%s", tirx__kernel_entry(k), arch, key_hex);
  dump_files(rt, k, base, source, ptx);
}

/* TIRX_LOG: a number, or a level's name. Anything else keeps logging off, said once. */
static int log_level_from(const char *v) {
  static const char *const names[][3] = {{"0", "silent", "off"},
                                         {"1", "compiles", "info"},
                                         {"2", "launches", "debug"}};
  if (!v || !*v)
    return 0;
  for (int level = 0; level < 3; level++)
    for (int i = 0; i < 3; i++)
      if (strcasecmp(v, names[level][i]) == 0)
        return level;
  char *end = NULL;
  long n = strtol(v, &end, 10);
  if (end != v && *end == 0 && n >= 0)
    return n > 2 ? 2 : (int)n;
  fprintf(stderr,
          "tirx: TIRX_LOG='%s' is not a level (0 or silent, 1 or compiles, 2 or launches); "
          "logging stays off\n",
          v);
  return 0;
}

/* A true-ish environment switch: set, not empty, not "0", "no", "false" or "off". */
static bool env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "no") != 0 &&
         strcasecmp(v, "false") != 0 && strcasecmp(v, "off") != 0;
}

/* ---- sticky failure and device access ---- */

void tirx__runtime_fail(tirx_runtime *rt, const char *message) {
  pthread_mutex_lock(&rt->failed_lock);
  if (!rt->failed_message) {
    rt->failed_message = strdup(message);
    atomic_store(&rt->failed, true);
  }
  pthread_mutex_unlock(&rt->failed_lock);
  tirx__log(rt, 1, "runtime failed: %s", message);
}

static tirx_status sticky_error(const tirx_runtime *rt, const char *fn) {
  return tirx__error(TIRX_E_STICKY,
                     "%s: the runtime failed earlier and the CUDA context is unusable "
                     "(restart the process): %s",
                     fn, rt->failed_message ? rt->failed_message : "out of memory");
}

tirx_status tirx__runtime_ready(tirx_runtime *rt, const char *fn) {
  if (TIRX_UNLIKELY(tirx__runtime_forked(rt)))
    return tirx__forked_error(fn, "runtime", rt->pid);
  if (TIRX_UNLIKELY(!rt->has_device))
    return tirx__error(TIRX_E_NO_DEVICE, "%s: no CUDA device: %s", fn, rt->device_error);
  if (TIRX_UNLIKELY(atomic_load_explicit(&rt->failed, memory_order_acquire)))
    return sticky_error(rt, fn);
  return TIRX_OK;
}

tirx_status tirx__runtime_usable(tirx_runtime *rt, const char *fn) {
  if (TIRX_UNLIKELY(tirx__runtime_forked(rt)))
    return tirx__forked_error(fn, "runtime", rt->pid);
  if (TIRX_UNLIKELY(atomic_load_explicit(&rt->failed, memory_order_acquire)))
    return sticky_error(rt, fn);
  return TIRX_OK;
}

tirx_status tirx__driver_error(tirx_runtime *rt, const char *fn, const char *what, CUresult r) {
  char text[512];
  tirx__driver_describe(&rt->drv, r, text, sizeof text);
  if (tirx__driver_is_sticky(r)) {
    char msg[800];
    snprintf(msg, sizeof msg, "%s: %s", what, text);
    tirx__runtime_fail(rt, msg);
    return tirx__error(TIRX_E_STICKY,
                       "%s: %s: %s (a fatal device error: the runtime is now "
                       "unusable; restart the process)",
                       fn, what, text);
  }
  return tirx__error(r == CUDA_ERROR_OUT_OF_MEMORY ? TIRX_E_NO_MEMORY : TIRX_E_DRIVER, "%s: %s: %s",
                     fn, what, text);
}

tirx_status tirx__ctx_enter(tirx_runtime *rt, const char *fn, tirx__ctx_guard *g) {
  g->pushed = false;
  CUcontext cur = NULL;
  CUresult r = rt->drv.CtxGetCurrent(&cur);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, "cuCtxGetCurrent", r);
  if (cur == rt->ctx)
    return TIRX_OK;
  r = rt->drv.CtxPushCurrent(rt->ctx);
  if (r != CUDA_SUCCESS)
    return tirx__driver_error(rt, fn, "cuCtxPushCurrent", r);
  g->pushed = true;
  return TIRX_OK;
}

void tirx__ctx_leave(tirx_runtime *rt, tirx__ctx_guard *g) {
  if (!g->pushed)
    return;
  CUcontext popped = NULL;
  rt->drv.CtxPopCurrent(&popped);
  g->pushed = false;
}

/* ---- compile workers ---- */

#ifndef TIRX_LIBEXECDIR
#define TIRX_LIBEXECDIR "/usr/local/libexec"
#endif
#define WORKER_NAME "tirx-compile-worker"
enum { WORKERS_MAX = 64 };

static bool is_program(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Where the compile worker is: options->compile_worker, $TIRX_COMPILE_WORKER, the install
 * location, beside the library (the build tree). Sets rt->worker_path (NULL: in the process)
 * and rt->worker_count. Errors: TIRX_E_INVALID_ARG (the options), TIRX_E_NO_MEMORY. */
static tirx_status resolve_workers(tirx_runtime *rt, const tirx_runtime_options *o,
                                   const char *fn) {
  if (o->compile_workers > WORKERS_MAX)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: options->compile_workers is %u, expected 0 (one per core) to %d", fn,
                       o->compile_workers, WORKERS_MAX);
  if (o->compile_worker && !is_program(o->compile_worker))
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: options->compile_worker '%.200s' is not an executable file", fn,
                       o->compile_worker);
  unsigned count = o->compile_workers;
  bool off = o->compile_in_process;
  const char *env = getenv("TIRX_COMPILE_WORKERS");
  if (!off && env && *env) {
    char *end = NULL;
    long n = strtol(env, &end, 10);
    if (strcasecmp(env, "off") == 0 || strcasecmp(env, "no") == 0 ||
        strcasecmp(env, "false") == 0 || (end != env && *end == 0 && n == 0))
      off = true;
    else if (end != env && *end == 0 && n > 0 && n <= WORKERS_MAX)
      count = count ? count : (unsigned)n;
    else
      fprintf(stderr,
              "tirx: TIRX_COMPILE_WORKERS='%.40s' is not 0, off or a count from 1 to %d; "
              "ignored\n",
              env, WORKERS_MAX);
  }
  if (off)
    return TIRX_OK;
  rt->worker_nice = TIRX__WORKER_NICE;
  const char *nice = getenv("TIRX_COMPILE_WORKER_NICE");
  if (nice && *nice) {
    char *end = NULL;
    long n = strtol(nice, &end, 10);
    if (end != nice && *end == 0 && n >= 0 && n <= 19)
      rt->worker_nice = (int)n;
    else
      fprintf(stderr,
              "tirx: TIRX_COMPILE_WORKER_NICE='%.40s' is not a number from 0 to 19; the "
              "workers' nice value stays the host's + %d\n",
              nice, TIRX__WORKER_NICE);
  }
  if (count == 0) {
    count = uv_available_parallelism();
    if (count == 0)
      count = 1;
    if (count > WORKERS_MAX)
      count = WORKERS_MAX;
  }
  char found[4096] = "";
  const char *path = o->compile_worker;
  const char *env_path = getenv("TIRX_COMPILE_WORKER");
  if (!path && env_path && *env_path) {
    if (is_program(env_path))
      path = env_path;
    else {
      fprintf(stderr,
              "tirx: TIRX_COMPILE_WORKER='%.200s' is not an executable file; compiling in "
              "the process\n",
              env_path);
      return TIRX_OK;
    }
  }
  if (!path && is_program(TIRX_LIBEXECDIR "/" WORKER_NAME))
    path = TIRX_LIBEXECDIR "/" WORKER_NAME;
  Dl_info info;
  if (!path && dladdr((const void *)&tirx__fork_generation, &info) && info.dli_fname &&
      strlen(info.dli_fname) < sizeof found - sizeof WORKER_NAME - 1) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", info.dli_fname);
    snprintf(found, sizeof found, "%s/%s", dirname(copy), WORKER_NAME);
    if (is_program(found))
      path = found;
  }
  if (!path) {
    tirx__log(rt, 1, "no %s (not in %s, nor beside the library): compiling in the process",
              WORKER_NAME, TIRX_LIBEXECDIR);
    return TIRX_OK;
  }
  rt->worker_path = strdup(path);
  if (!rt->worker_path)
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  rt->worker_count = count;
  return TIRX_OK;
}

unsigned tirx_runtime_compile_workers(tirx_runtime *rt) {
  if (!rt || tirx__runtime_forked(rt) || !rt->worker_path)
    return 0;
  if (!atomic_load_explicit(&rt->workers_ready, memory_order_acquire))
    return rt->worker_count; /* not started yet */
  tirx__workers *w = rt->workers;
  if (!w)
    return 0;
  tirx__workers_stats s;
  tirx__workers_stats_get(w, &s);
  return s.off ? 0 : s.max;
}

/* ---- creation ---- */

static tirx_status open_device(tirx_runtime *rt, const tirx_runtime_options *o, const char *fn) {
  const char *lib = o->driver_library;
  if (!lib)
    lib = getenv("TIRX_DRIVER_LIBRARY");
  char why[1024] = "";
  if (o->compile_only) {
    snprintf(why, sizeof why, "the runtime was created compile-only");
  } else if (tirx__driver_load(&rt->drv, lib, why, sizeof why) == TIRX_OK) {
    int count = 0;
    CUresult r = rt->drv.DeviceGetCount(&count);
    if (r != CUDA_SUCCESS)
      return tirx__driver_error(rt, fn, "cuDeviceGetCount", r);
    if (count == 0) {
      snprintf(why, sizeof why, "the CUDA driver reports no devices");
    } else if (o->device >= count) {
      return tirx__error(TIRX_E_INVALID_ARG, "%s: device %d is out of range (%d CUDA device%s)", fn,
                         o->device, count, count == 1 ? "" : "s");
    } else {
      if (o->context) {
        /* The host's context: its device is the runtime's. */
        CUcontext prev = NULL;
        if ((r = rt->drv.CtxPushCurrent((CUcontext)o->context)) != CUDA_SUCCESS)
          return tirx__driver_error(rt, fn, "cuCtxPushCurrent(options->context)", r);
        CUdevice dev = 0;
        r = rt->drv.CtxGetDevice(&dev);
        rt->drv.CtxPopCurrent(&prev);
        if (r != CUDA_SUCCESS)
          return tirx__driver_error(rt, fn, "cuCtxGetDevice(options->context)", r);
        int ordinal = -1;
        for (int i = 0; i < count && ordinal < 0; i++) {
          CUdevice d = 0;
          if (rt->drv.DeviceGet(&d, i) == CUDA_SUCCESS && d == dev)
            ordinal = i;
        }
        if (o->device != 0 && o->device != ordinal)
          return tirx__error(TIRX_E_INVALID_ARG,
                             "%s: options->device is %d but options->context belongs to device "
                             "%d",
                             fn, o->device, ordinal);
        rt->ordinal = ordinal < 0 ? 0 : ordinal;
      }
      if ((r = rt->drv.DeviceGet(&rt->device, rt->ordinal)) != CUDA_SUCCESS)
        return tirx__driver_error(rt, fn, "cuDeviceGet", r);
      int major = 0, minor = 0;
      if ((r = rt->drv.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                          rt->device)) != CUDA_SUCCESS ||
          (r = rt->drv.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                          rt->device)) != CUDA_SUCCESS ||
          (r = rt->drv.DeviceGetAttribute(&rt->max_smem_optin,
                                          CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                          rt->device)) != CUDA_SUCCESS)
        return tirx__driver_error(rt, fn, "cuDeviceGetAttribute", r);
      if ((r = rt->drv.DeviceGetName(rt->device_name, (int)sizeof rt->device_name, rt->device)) !=
          CUDA_SUCCESS)
        return tirx__driver_error(rt, fn, "cuDeviceGetName", r);
      if (!o->arch)
        tirx__arch_for_cc(major, minor, rt->arch, sizeof rt->arch);
      if (o->context) {
        rt->ctx = (CUcontext)o->context;
      } else {
        if ((r = rt->drv.DevicePrimaryCtxRetain(&rt->ctx, rt->device)) != CUDA_SUCCESS)
          return tirx__driver_error(rt, fn, "cuDevicePrimaryCtxRetain", r);
        rt->own_ctx = true;
      }
      rt->has_device = true;
    }
  }
  rt->device_error = strdup(rt->has_device ? "" : why);
  if (!rt->device_error)
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  return TIRX_OK;
}

tirx_status tirx_runtime_create(const tirx_runtime_options *options, tirx_runtime **out) {
  static const char *const fn = "tirx_runtime_create";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  tirx_runtime_options copy;
  if (tirx__ext_in(fn, "options", &tirx__ext_runtime_options, options, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  const tirx_runtime_options *o = &copy;
  if (o->device < 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: options->device is %d, expected >= 0", fn,
                       o->device);
  if (o->context && o->compile_only)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: options->context is set but options->compile_only is true", fn);
  if (o->capture_policy != TIRX_CAPTURE_WAIT && o->capture_policy != TIRX_CAPTURE_REFUSE)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: options->capture_policy is %d, expected TIRX_CAPTURE_WAIT (0) or "
                       "TIRX_CAPTURE_REFUSE (1)",
                       fn, (int)o->capture_policy);
  if (o->arch) {
    /* Without NVRTC only the form: the runtime exists, its compiles say why they fail. */
    tirx_status st = tirx__nvrtc_version() ? tirx__nvrtc_check_arch(fn, o->arch)
                                           : tirx__nvrtc_check_arch_form(fn, o->arch);
    if (st != TIRX_OK)
      return st;
  }
  pthread_once(&fork_once, register_fork_handler);
  tirx_runtime *rt = calloc(1, sizeof *rt);
  if (!rt)
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  rt->ordinal = o->device;
  rt->pid = (long)getpid();
  rt->fork_gen = atomic_load(&tirx__fork_generation);
  snprintf(rt->arch, sizeof rt->arch, "%s", o->arch ? o->arch : "sm_90a");
  pthread_mutex_init(&rt->mu, NULL);
  pthread_mutex_init(&rt->scratch_lock, NULL);
  pthread_cond_init(&rt->cv, NULL);
  pthread_cond_init(&rt->idle_cv, NULL);
  pthread_mutex_init(&rt->failed_lock, NULL);
  atomic_init(&rt->failed, false);
  atomic_init(&rt->vtable, NULL);
  rt->cache_disabled = o->cache_disabled;
  rt->cache_fsync = !o->cache_no_fsync;
  rt->cache_max_bytes = o->cache_max_bytes;
  rt->tiered = o->tiered;
  rt->capture_policy = o->capture_policy;
  rt->max_parallel = o->max_parallel_compiles;
  rt->on_event = o->on_event;
  rt->event_user = o->event_user;
  int nv = tirx__nvrtc_version();
  rt->nvrtc_major = nv / 1000;
  rt->nvrtc_minor = nv % 1000 / 10;
  const char *dump = o->dump_dir ? o->dump_dir : getenv("TIRX_DUMP_DIR");
  if ((dump && *dump && !(rt->dump_dir = strdup(dump))) ||
      (o->cache_dir && !(rt->cache_dir = strdup(o->cache_dir)))) {
    tirx_runtime_destroy(rt);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  rt->log_level = log_level_from(getenv("TIRX_LOG"));
  const char *filter = getenv("TIRX_DUMP_FILTER");
  if (filter && *filter && !(rt->dump_filter = strdup(filter))) {
    tirx_runtime_destroy(rt);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  if (env_on("TIRX_CACHE_DISABLE"))
    rt->cache_disabled = true;

  tirx_status st = resolve_workers(rt, o, fn);
  if (st == TIRX_OK)
    st = open_device(rt, o, fn);
  if (st != TIRX_OK) {
    tirx_runtime_destroy(rt);
    return st;
  }
  if (rt->has_device)
    rt->loader = tirx__default_loader;
  /* A cache directory named here is opened now, so that the first kernel does not pay for it
   * (creating the directory and the store's maintenance pass). The default directory stays
   * lazy: a runtime that never prepares a kernel creates no ~/.cache/tirx. */
  if (rt->cache_dir && !rt->cache_disabled && (st = tirx__runtime_store(rt, fn)) != TIRX_OK) {
    tirx_runtime_destroy(rt);
    return st;
  }
  tirx__log(rt, 1, "runtime: %s, arch %s%s%s", rt->has_device ? rt->device_name : "no device",
            rt->arch, rt->has_device ? "" : ": ", rt->device_error);
  *out = rt;
  return TIRX_OK;
}

void tirx_runtime_destroy(tirx_runtime *rt) {
  if (!rt || tirx__runtime_forked(rt))
    return; /* a forked child leaves the parent's runtime alone */
  bool sticky = atomic_load(&rt->failed);
  tirx__ctx_guard g = {false};
  bool entered = rt->has_device && !sticky && rt->drv.CtxGetCurrent &&
                 tirx__ctx_enter(rt, "tirx_runtime_destroy", &g) == TIRX_OK;
  bool freed = tirx__runtime_cache_destroy(rt, entered);
  if (freed)
    tirx__runtime_scratch_free(rt, entered); /* device memory only in the context */
  if (entered)
    tirx__ctx_leave(rt, &g);
  if (!freed)
    return; /* called from a compile-queue callback: leaked rather than freed under it */
  tirx__workers_destroy(rt->workers); /* after the queue: no compile is in flight */
  free(rt->worker_path);
  if (rt->has_device && rt->own_ctx)
    rt->drv.DevicePrimaryCtxRelease(rt->device);
  free(rt->device_error);
  free(rt->dump_dir);
  free(rt->dump_filter);
  free(rt->cache_dir);
  free(rt->failed_message);
  pthread_mutex_destroy(&rt->mu);
  pthread_mutex_destroy(&rt->scratch_lock);
  pthread_cond_destroy(&rt->cv);
  pthread_cond_destroy(&rt->idle_cv);
  pthread_mutex_destroy(&rt->failed_lock);
  free(rt);
}

bool tirx_runtime_has_device(const tirx_runtime *rt) { return rt && rt->has_device; }

const char *tirx_runtime_arch(const tirx_runtime *rt) { return rt ? rt->arch : NULL; }

const char *tirx_runtime_device_name(const tirx_runtime *rt) { return rt ? rt->device_name : NULL; }

const char *tirx_runtime_device_error(const tirx_runtime *rt) {
  return rt ? rt->device_error : NULL;
}

tirx_status tirx_runtime_health(const tirx_runtime *rt) {
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "tirx_runtime_health: rt is NULL");
  if (tirx__runtime_forked(rt))
    return tirx__forked_error("tirx_runtime_health", "runtime", rt->pid);
  if (atomic_load(&rt->failed))
    return sticky_error(rt, "tirx_runtime_health");
  return TIRX_OK;
}

/* ---- tirx_compile ---- */

struct tirx_compiled {
  tirx__nvrtc_output out;
  char arch[16];
  char *entry;
};

tirx_status tirx_compile(tirx_runtime *rt, const tirx_kernel *kernel, const char *arch,
                         tirx_compiled **out) {
  static const char *const fn = "tirx_compile";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!kernel)
    return tirx__error(TIRX_E_NULL_ARG, "%s: kernel is NULL", fn);
  if (tirx__runtime_forked(rt))
    return tirx__forked_error(fn, "runtime", rt->pid);
  if (!arch)
    arch = rt->arch;
  tirx_status st = tirx__nvrtc_check_arch(fn, arch);
  if (st == TIRX_OK)
    st = tirx__kernel_check_arch(kernel, fn, "arch", arch);
  if (st != TIRX_OK)
    return st;
  tirx_compiled *c = calloc(1, sizeof *c);
  if (!c)
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  const char *entry = tirx__kernel_entry(kernel);
  st = tirx__runtime_nvrtc(rt, fn, entry, tirx__kernel_source(kernel), arch, true, &c->out);
  if (st != TIRX_OK) {
    free(c);
    return st;
  }
  snprintf(c->arch, sizeof c->arch, "%s", arch);
  c->entry = strdup(entry ? entry : "");
  if (!c->entry) {
    tirx_compiled_destroy(c);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  tirx__log(rt, 1, "compiled %s for %s in %.1f ms (cubin %zu bytes, ptx %zu bytes)", c->entry, arch,
            c->out.millis, c->out.cubin_size, strlen(c->out.ptx));
  tirx__dump_kernel(rt, kernel, c->out.ptx);
  *out = c;
  return TIRX_OK;
}

const void *tirx_compiled_cubin(const tirx_compiled *c, size_t *size) {
  if (size)
    *size = c ? c->out.cubin_size : 0;
  return c ? c->out.cubin : NULL;
}
const char *tirx_compiled_ptx(const tirx_compiled *c) { return c ? c->out.ptx : NULL; }
const char *tirx_compiled_log(const tirx_compiled *c) { return c ? c->out.log : NULL; }
const char *tirx_compiled_arch(const tirx_compiled *c) { return c ? c->arch : NULL; }
const char *tirx_compiled_entry(const tirx_compiled *c) { return c ? c->entry : NULL; }

void tirx_compiled_destroy(tirx_compiled *c) {
  if (!c)
    return;
  tirx__nvrtc_output_free(&c->out);
  free(c->entry);
  free(c);
}

