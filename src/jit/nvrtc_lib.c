/* NVRTC through dlopen (nvrtc_lib.h). libc and libdl only: the compile worker links it. */
#include "nvrtc_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TIRX_NVRTC_LIBDIR
#define TIRX_NVRTC_LIBDIR "/usr/local/cuda/lib64"
#endif

enum { MIN_VERSION = 12000 }; /* sm_90a and the options tirx passes need NVRTC 12.0 */

static const char *const default_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                            TIRX_NVRTC_LIBDIR "/libnvrtc.so"};

/* Appends to why[] (always NUL-terminated, truncated when full). */
static void say(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t why_len, const char *fmt, ...) {
  if (!why || why_len == 0)
    return;
  size_t used = strnlen(why, why_len - 1);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why + used, why_len - used, fmt, ap);
  va_end(ap);
}

/* Opens one candidate and resolves the table; 0, or -1 with the reason appended to why. */
static int try_one(const char *name, tirx__nvrtc_lib *out, char *why, size_t why_len) {
  memset(out, 0, sizeof *out);
  dlerror();
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    say(why, why_len, "%s (%s)", name, e ? e : "dlopen failed");
    return -1;
  }
  /* dlsym returns void *; ISO C has no conversion from object to function pointers, so the
   * pointers are copied bytewise (POSIX guarantees the same representation). */
#define TIRX__NVRTC_RESOLVE_(fname)                                                                \
  {                                                                                                \
    void *p_ = dlsym(h, "nvrtc" #fname);                                                           \
    if (!p_) {                                                                                     \
      say(why, why_len, "%s (it has no nvrtc" #fname ")", name);                                   \
      dlclose(h);                                                                                  \
      memset(out, 0, sizeof *out);                                                                 \
      return -1;                                                                                   \
    }                                                                                              \
    memcpy(&out->fname, &p_, sizeof p_);                                                           \
  }
  TIRX__NVRTC_FUNCS(TIRX__NVRTC_RESOLVE_)
#undef TIRX__NVRTC_RESOLVE_
  int major = 0, minor = 0;
  if (out->Version(&major, &minor) != NVRTC_SUCCESS || major * 1000 + minor * 10 < MIN_VERSION) {
    say(why, why_len, "%s (NVRTC %d.%d: 12.0 or newer is needed)", name, major, minor);
    dlclose(h);
    memset(out, 0, sizeof *out);
    return -1;
  }
  out->handle = h;
  out->version = major * 1000 + minor * 10;
  snprintf(out->path, sizeof out->path, "%s", name);
  return 0;
}

int tirx__nvrtc_lib_load(const char *override, tirx__nvrtc_lib *out, char *why, size_t why_len) {
  memset(out, 0, sizeof *out);
  if (why && why_len)
    why[0] = '\0';
  if (!override)
    override = getenv("TIRX_NVRTC_LIBRARY");
  say(why, why_len, "cannot load NVRTC; tried ");
  if (override && *override) {
    say(why, why_len, "TIRX_NVRTC_LIBRARY=");
    if (try_one(override, out, why, why_len) == 0) {
      if (why && why_len)
        why[0] = '\0';
      return 0;
    }
    say(why, why_len, "; the variable names the only file tried: fix or unset it");
    return -1;
  }
  size_t n = sizeof default_names / sizeof default_names[0];
  for (size_t i = 0; i < n; i++) {
    if (i)
      say(why, why_len, ", ");
    if (try_one(default_names[i], out, why, why_len) == 0) {
      if (why && why_len)
        why[0] = '\0';
      return 0;
    }
  }
  say(why, why_len, "; install the CUDA toolkit's NVRTC (12.x or 13.x) or set TIRX_NVRTC_LIBRARY");
  return -1;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static tirx__nvrtc_lib process_lib;
static const tirx__nvrtc_lib *process_ptr;
static char process_why[TIRX__NVRTC_WHY_MAX];

static void load_once(void) {
  if (tirx__nvrtc_lib_load(NULL, &process_lib, process_why, sizeof process_why) == 0)
    process_ptr = &process_lib;
}

const tirx__nvrtc_lib *tirx__nvrtc_lib_get(void) {
  pthread_once(&once, load_once);
  return process_ptr;
}

const char *tirx__nvrtc_lib_error(void) { return process_why; }
