/* NCCL through dlopen: one table per library path, loaded once and kept for the process. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

#define DEFAULT_LIBRARY "libnccl.so.2"

/* Loaded tables, newest first. Never freed: NCCL keeps threads and must stay mapped. */
typedef struct loaded {
  tirx__nccl table;
  struct loaded *next;
} loaded;

static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static loaded *loaded_list;
static bool env_done;

const char *tirx__nccl_path(const char *path) {
  if (path && *path) return path;
  const char *env = getenv("TIRX_NCCL_LIBRARY");
  return env && *env ? env : DEFAULT_LIBRARY;
}

static tirx_status missing_entry(const char *fn, const char *path, void *lib, const char *name) {
  dlclose(lib);
  return tirx__error(TIRX_E_NOT_SUPPORTED,
                     "%s: %s has no entry point %s; tirx needs NCCL 2.14 or newer", fn, path, name);
}

static tirx_status open_table(const char *fn, const char *path, tirx__nccl *t) {
  memset(t, 0, sizeof *t);
  dlerror();
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    return tirx__error(TIRX_E_NOT_SUPPORTED,
                       "%s: cannot load NCCL (%s): %s; install NCCL 2.14 or newer, or name the "
                       "library in TIRX_NCCL_LIBRARY",
                       fn, path, why ? why : "unknown error");
  }
  void *sym = dlsym(lib, "ncclGetErrorString");
  if (!sym) return missing_entry(fn, path, lib, "ncclGetErrorString");
  memcpy(&t->GetErrorString, &sym, sizeof sym);
#define TIRX__NCCL_RESOLVE_(name, params)                                                          \
  sym = dlsym(lib, "nccl" #name);                                                                  \
  if (!sym) return missing_entry(fn, path, lib, "nccl" #name);                                     \
  memcpy(&t->name, &sym, sizeof sym);
  TIRX__NCCL_FUNCS(TIRX__NCCL_RESOLVE_)
#undef TIRX__NCCL_RESOLVE_
  int version = 0;
  if (t->GetVersion(&version) != TIRX__NCCL_SUCCESS || version < TIRX__NCCL_MIN_VERSION) {
    dlclose(lib);
    return tirx__error(TIRX_E_NOT_SUPPORTED,
                       "%s: %s is NCCL %d; tirx needs NCCL 2.14 (21400) or newer", fn, path,
                       version);
  }
  t->version = version;
  t->lib = lib;
  return TIRX_OK;
}

tirx_status tirx__nccl_load(const char *fn, const char *path, const tirx__nccl **out) {
  path = tirx__nccl_path(path);
  *out = NULL;
  pthread_mutex_lock(&loaded_lock);
  for (loaded *l = loaded_list; l; l = l->next)
    if (strcmp(l->table.path, path) == 0) {
      *out = &l->table;
      pthread_mutex_unlock(&loaded_lock);
      return TIRX_OK;
    }
  loaded *l = calloc(1, sizeof *l);
  char *copy = strdup(path);
  if (!l || !copy) {
    free(l);
    free(copy);
    pthread_mutex_unlock(&loaded_lock);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory loading NCCL", fn);
  }
  tirx_status st = open_table(fn, path, &l->table);
  if (st != TIRX_OK) {
    free(l);
    free(copy);
    pthread_mutex_unlock(&loaded_lock);
    return st;
  }
  /* NVLink multicast (NVLS) is off on the machines tirx targets; NCCL reads the variable when
   * it initialises, so it is set before any communicator exists. setenv is not thread-safe
   * against a concurrent getenv in another thread: hosts that care set it themselves first. */
  if (!env_done) {
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    env_done = true;
  }
  l->table.path = copy;
  l->next = loaded_list;
  loaded_list = l;
  *out = &l->table;
  pthread_mutex_unlock(&loaded_lock);
  return TIRX_OK;
}

static const char *result_name(tirx__nccl_result r) {
  switch (r) {
  case TIRX__NCCL_SUCCESS: return "ncclSuccess";
  case TIRX__NCCL_UNHANDLED_CUDA_ERROR: return "ncclUnhandledCudaError";
  case TIRX__NCCL_SYSTEM_ERROR: return "ncclSystemError";
  case TIRX__NCCL_INTERNAL_ERROR: return "ncclInternalError";
  case TIRX__NCCL_INVALID_ARGUMENT: return "ncclInvalidArgument";
  case TIRX__NCCL_INVALID_USAGE: return "ncclInvalidUsage";
  case TIRX__NCCL_REMOTE_ERROR: return "ncclRemoteError";
  case TIRX__NCCL_IN_PROGRESS: return "ncclInProgress";
  default: return "ncclResult";
  }
}

void tirx__nccl_describe(const tirx__nccl *n, tirx__nccl_result r, char *buf, size_t size) {
  const char *text = n && n->GetErrorString ? n->GetErrorString(r) : NULL;
  snprintf(buf, size, "%s (%d): %s", result_name(r), (int)r, text ? text : "unknown error");
}

tirx_status tirx_nccl_version(const char *library, int *out) {
  static const char fn[] = "tirx_nccl_version";
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = 0;
  const tirx__nccl *n;
  tirx_status st = tirx__nccl_load(fn, library, &n);
  if (st != TIRX_OK) return st;
  *out = n->version;
  return TIRX_OK;
}
