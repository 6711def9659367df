/* The CUDA driver loaded with dlopen: the entry-point table, error text, arch names. */
#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*get_proc_address_fn)(const char *symbol, void **pfn, int cuda_version,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult *status);
typedef CUresult (*driver_get_version_fn)(int *version);

/* dlsym returns void *; ISO C has no conversion from object to function pointers, so the
 * pointers below are copied bytewise (POSIX guarantees the same representation). */

tirx_status tirx__driver_load(tirx__driver *d, const char *path, char *why, size_t why_size) {
  memset(d, 0, sizeof *d);
  if (!path || !*path)
    path = "libcuda.so.1";
  dlerror();
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(why, why_size, "cannot load the CUDA driver '%s': %s", path, e ? e : "unknown error");
    return TIRX_E_NO_DRIVER;
  }

  void *sym = dlsym(lib, "cuGetProcAddress_v2");
  void *ver_sym = dlsym(lib, "cuDriverGetVersion");
  if (!sym || !ver_sym) {
    snprintf(why, why_size, "the CUDA driver '%s' has no %s: a CUDA 12.0 or newer driver is needed",
             path, sym ? "cuDriverGetVersion" : "cuGetProcAddress_v2");
    dlclose(lib);
    return TIRX_E_NO_DRIVER;
  }
  get_proc_address_fn get_proc;
  driver_get_version_fn get_version;
  memcpy(&get_proc, &sym, sizeof sym);
  memcpy(&get_version, &ver_sym, sizeof ver_sym);

  int version = 0;
  CUresult r = get_version(&version);
  if (r != CUDA_SUCCESS || version < 12000) {
    if (r == CUDA_ERROR_STUB_LIBRARY)
      snprintf(why, why_size,
               "'%s' is the CUDA toolkit's stub library, not a driver "
               "(CUDA_ERROR_STUB_LIBRARY)",
               path);
    else if (r != CUDA_SUCCESS)
      snprintf(why, why_size, "cuDriverGetVersion failed in '%s' with error %d", path, (int)r);
    else
      snprintf(why, why_size, "the CUDA driver '%s' is version %d.%d: 12.0 or newer is needed",
               path, version / 1000, version % 1000 / 10);
    dlclose(lib);
    return TIRX_E_NO_DRIVER;
  }
#define TIRX__DRIVER_RESOLVE_(name, sym_version, params)                                           \
  {                                                                                                \
    void *p_ = NULL;                                                                               \
    CUdriverProcAddressQueryResult st_ = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                     \
    CUresult rr_ =                                                                                 \
        get_proc("cu" #name, &p_, sym_version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st_);           \
    if (rr_ != CUDA_SUCCESS || st_ != CU_GET_PROC_ADDRESS_SUCCESS || !p_) {                        \
      snprintf(why, why_size,                                                                      \
               "the CUDA driver '%s' (version %d) has no entry point cu" #name " of version %d"    \
               " (cuGetProcAddress error %d, status %d)",                                          \
               path, version, sym_version, (int)rr_, (int)st_);                                    \
      dlclose(lib);                                                                                \
      memset(d, 0, sizeof *d);                                                                     \
      return TIRX_E_NO_DRIVER;                                                                     \
    }                                                                                              \
    memcpy(&d->name, &p_, sizeof p_);                                                              \
  }
  TIRX__DRIVER_FUNCS(TIRX__DRIVER_RESOLVE_)
#undef TIRX__DRIVER_RESOLVE_

  d->lib = lib;
  d->driver_version = version;

  r = d->Init(0);
  if (r != CUDA_SUCCESS) {
    char text[256];
    tirx__driver_describe(d, r, text, sizeof text);
    if (r == CUDA_ERROR_STUB_LIBRARY) {
      snprintf(why, why_size, "'%s' is the CUDA toolkit's stub library, not a driver: cuInit: %s",
               path, text);
      dlclose(lib);
      memset(d, 0, sizeof *d);
      return TIRX_E_NO_DRIVER;
    }
    snprintf(why, why_size, "cuInit failed: %s", text);
    /* Keep the library open: closing libcuda after cuInit ran is not safe. */
    return TIRX_E_NO_DEVICE;
  }
  return TIRX_OK;
}

void tirx__driver_describe(const tirx__driver *d, CUresult r, char *buf, size_t size) {
  const char *name = NULL, *text = NULL;
  if (d && d->GetErrorName && d->GetErrorName(r, &name) != CUDA_SUCCESS)
    name = NULL;
  if (d && d->GetErrorString && d->GetErrorString(r, &text) != CUDA_SUCCESS)
    text = NULL;
  snprintf(buf, size, "%s (%d): %s", name ? name : "CUDA_ERROR_UNRECOGNIZED", (int)r,
           text ? text : "unrecognized error code");
}

bool tirx__driver_is_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_NVLINK_UNCORRECTABLE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    return true;
  default:
    return false;
  }
}

void tirx__arch_for_cc(int major, int minor, char *buf, size_t size) {
  snprintf(buf, size, "sm_%d%d%s", major, minor, major >= 9 ? "a" : "");
}
