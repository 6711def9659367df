/* The runtime object: creation with or without a device, the table of loaded kernels,
 * tirx_compile, sticky failure, dumps and logging. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jit.h"

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

static void dump_file(const char *dir, const char *base, const char *ext, const char *text) {
  if (!text)
    return;
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/%s.%s", dir, base, ext);
  if (n < 0 || (size_t)n >= sizeof path) {
    fprintf(stderr, "tirx: dump path too long in TIRX_DUMP_DIR '%s'\n", dir);
    return;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "tirx: cannot write dump file %s: %s\n", path, strerror(errno));
    return;
  }
  size_t len = strlen(text);
  if (fwrite(text, 1, len, f) != len)
    fprintf(stderr, "tirx: cannot write dump file %s: %s\n", path, strerror(errno));
  if (fclose(f) != 0)
    fprintf(stderr, "tirx: cannot close dump file %s\n", path);
}

void tirx__dump_kernel(const tirx_runtime *rt, const tirx_kernel *k, const char *ptx) {
  if (!rt->dump_dir)
    return;
  if (mkdir(rt->dump_dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "tirx: cannot create TIRX_DUMP_DIR '%s': %s\n", rt->dump_dir, strerror(errno));
    return;
  }
  uint64_t hash[2];
  tirx__kernel_hash(k, hash);
  char hex[33], base[160];
  tirx__hash_hex(hash, hex);
  snprintf(base, sizeof base, "%.100s-%s", tirx__kernel_entry(k), hex);
  dump_file(rt->dump_dir, base, "ir", tirx__kernel_ir(k));
  dump_file(rt->dump_dir, base, "cu", tirx__kernel_source(k));
  dump_file(rt->dump_dir, base, "ptx", ptx);
  tirx__log(rt, 1, "dumped %s/%s.{ir,cu,ptx}", rt->dump_dir, base);
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
  if (TIRX_UNLIKELY(!rt->has_device))
    return tirx__error(TIRX_E_NO_DEVICE, "%s: no CUDA device: %s", fn, rt->device_error);
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
      if ((r = rt->drv.DeviceGet(&rt->device, o->device)) != CUDA_SUCCESS)
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
      if ((r = rt->drv.DevicePrimaryCtxRetain(&rt->ctx, rt->device)) != CUDA_SUCCESS)
        return tirx__driver_error(rt, fn, "cuDevicePrimaryCtxRetain", r);
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
  tirx_runtime_options defaults = {0};
  const tirx_runtime_options *o = options ? options : &defaults;
  if (o->device < 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: options->device is %d, expected >= 0", fn,
                       o->device);
  if (o->arch) {
    tirx_status st = tirx__nvrtc_check_arch(fn, o->arch);
    if (st != TIRX_OK)
      return st;
  }
  tirx_runtime *rt = calloc(1, sizeof *rt);
  if (!rt)
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  rt->ordinal = o->device;
  snprintf(rt->arch, sizeof rt->arch, "%s", o->arch ? o->arch : "sm_90a");
  pthread_mutex_init(&rt->lock, NULL);
  pthread_mutex_init(&rt->compile_lock, NULL);
  pthread_mutex_init(&rt->failed_lock, NULL);
  atomic_init(&rt->failed, false);
  const char *dump = o->dump_dir ? o->dump_dir : getenv("TIRX_DUMP_DIR");
  if (dump && *dump && !(rt->dump_dir = strdup(dump))) {
    tirx_runtime_destroy(rt);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  const char *log = getenv("TIRX_LOG");
  rt->log_level = log ? atoi(log) : 0;

  tirx_status st = open_device(rt, o, fn);
  if (st != TIRX_OK) {
    tirx_runtime_destroy(rt);
    return st;
  }
  tirx__log(rt, 1, "runtime: %s, arch %s%s%s", rt->has_device ? rt->device_name : "no device",
            rt->arch, rt->has_device ? "" : ": ", rt->device_error);
  *out = rt;
  return TIRX_OK;
}

void tirx_runtime_destroy(tirx_runtime *rt) {
  if (!rt)
    return;
  bool sticky = atomic_load(&rt->failed);
  tirx__ctx_guard g = {false};
  bool entered = rt->has_device && !sticky && rt->drv.CtxGetCurrent &&
                 tirx__ctx_enter(rt, "tirx_runtime_destroy", &g) == TIRX_OK;
  for (size_t i = 0; i < rt->nslots; i++) {
    tirx__loaded *e = rt->slots ? rt->slots[i] : NULL;
    if (!e)
      continue;
    if (entered)
      rt->drv.ModuleUnload(e->module);
    free(e->entry);
    free(e);
  }
  if (entered)
    tirx__ctx_leave(rt, &g);
  if (rt->has_device)
    rt->drv.DevicePrimaryCtxRelease(rt->device);
  free(rt->slots);
  free(rt->device_error);
  free(rt->dump_dir);
  free(rt->failed_message);
  pthread_mutex_destroy(&rt->lock);
  pthread_mutex_destroy(&rt->compile_lock);
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
  if (!arch)
    arch = rt->arch;
  tirx_compiled *c = calloc(1, sizeof *c);
  if (!c)
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  const char *entry = tirx__kernel_entry(kernel);
  tirx_status st = tirx__nvrtc_compile(fn, entry, tirx__kernel_source(kernel), arch, true, &c->out);
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

/* ---- the table of loaded kernels ---- */

static tirx__loaded *table_find(const tirx_runtime *rt, const uint64_t hash[2]) {
  if (!rt->nslots)
    return NULL;
  size_t mask = rt->nslots - 1;
  for (size_t i = (size_t)hash[0] & mask;; i = (i + 1) & mask) {
    tirx__loaded *e = rt->slots[i];
    if (!e)
      return NULL;
    if (e->hash[0] == hash[0] && e->hash[1] == hash[1])
      return e;
  }
}

static bool table_insert(tirx_runtime *rt, tirx__loaded *e) {
  if ((rt->nloaded + 1) * 2 > rt->nslots) {
    size_t n = rt->nslots ? rt->nslots * 2 : 64;
    tirx__loaded **slots = calloc(n, sizeof *slots);
    if (!slots)
      return false;
    for (size_t i = 0; i < rt->nslots; i++) {
      tirx__loaded *old = rt->slots[i];
      if (!old)
        continue;
      size_t j = (size_t)old->hash[0] & (n - 1);
      while (slots[j])
        j = (j + 1) & (n - 1);
      slots[j] = old;
    }
    free(rt->slots);
    rt->slots = slots;
    rt->nslots = n;
  }
  size_t j = (size_t)e->hash[0] & (rt->nslots - 1);
  while (rt->slots[j])
    j = (j + 1) & (rt->nslots - 1);
  rt->slots[j] = e;
  rt->nloaded++;
  return true;
}

/* Compiles k and loads its cubin into the runtime's context (current on this thread). */
static tirx_status load_kernel(tirx_runtime *rt, const tirx_kernel *k, const uint64_t hash[2],
                               const char *fn, tirx__loaded **out) {
  const char *entry = tirx__kernel_entry(k);
  tirx__nvrtc_output o;
  tirx_status st =
      tirx__nvrtc_compile(fn, entry, tirx__kernel_source(k), rt->arch, rt->dump_dir != NULL, &o);
  if (st != TIRX_OK)
    return st;
  tirx__log(rt, 1, "compiled %s for %s in %.1f ms (cubin %zu bytes)", entry, rt->arch, o.millis,
            o.cubin_size);
  tirx__dump_kernel(rt, k, o.ptx);

  tirx__loaded *e = calloc(1, sizeof *e);
  if (!e || !(e->entry = strdup(entry))) {
    free(e);
    tirx__nvrtc_output_free(&o);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  e->hash[0] = hash[0];
  e->hash[1] = hash[1];
  atomic_init(&e->smem_allowed, 48u * 1024u);

  char info[1024] = "", errlog[2048] = "";
  CUjit_option jo[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                       CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *jv[] = {info, (void *)(uintptr_t)sizeof info, errlog, (void *)(uintptr_t)sizeof errlog};
  CUresult r = rt->drv.ModuleLoadDataEx(&e->module, o.cubin, 4, jo, jv);
  tirx__nvrtc_output_free(&o);
  if (r != CUDA_SUCCESS) {
    char what[2300];
    snprintf(what, sizeof what, "cuModuleLoadDataEx of '%s' for %s%s%s", entry, rt->arch,
             errlog[0] ? ": " : "", errlog);
    free(e->entry);
    free(e);
    return tirx__driver_error(rt, fn, what, r);
  }
  r = rt->drv.ModuleGetFunction(&e->function, e->module, entry);
  if (r != CUDA_SUCCESS) {
    rt->drv.ModuleUnload(e->module);
    free(e->entry);
    free(e);
    char what[256];
    snprintf(what, sizeof what, "cuModuleGetFunction('%.100s')", entry);
    return tirx__driver_error(rt, fn, what, r);
  }
  *out = e;
  return TIRX_OK;
}

tirx_status tirx__runtime_function(tirx_runtime *rt, const tirx_kernel *k, const char *fn,
                                   tirx__loaded **out) {
  uint64_t hash[2];
  tirx__kernel_hash(k, hash);
  pthread_mutex_lock(&rt->lock);
  tirx__loaded *e = table_find(rt, hash);
  pthread_mutex_unlock(&rt->lock);
  if (TIRX_LIKELY(e != NULL)) {
    *out = e;
    return TIRX_OK;
  }

  pthread_mutex_lock(&rt->compile_lock);
  pthread_mutex_lock(&rt->lock);
  e = table_find(rt, hash); /* another thread may have loaded it meanwhile */
  pthread_mutex_unlock(&rt->lock);
  tirx_status st = TIRX_OK;
  if (!e) {
    st = load_kernel(rt, k, hash, fn, &e);
    if (st == TIRX_OK) {
      pthread_mutex_lock(&rt->lock);
      bool ok = table_insert(rt, e);
      pthread_mutex_unlock(&rt->lock);
      if (!ok) {
        rt->drv.ModuleUnload(e->module);
        free(e->entry);
        free(e);
        e = NULL;
        st = tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
      }
    }
  }
  pthread_mutex_unlock(&rt->compile_lock);
  if (st == TIRX_OK)
    *out = e;
  return st;
}
