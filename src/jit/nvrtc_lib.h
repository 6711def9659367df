/*
 * NVRTC, loaded at run time: libnvrtc is opened with dlopen and every entry point tirx calls is
 * resolved with dlsym, once per process, so that one build of tirx serves the CUDA 12.x and
 * 13.x toolkits (their entry points have the same signatures) and libtirx links no NVRTC.
 *
 * The library files tried, in order (the first that opens and has every entry point wins):
 *
 *   $TIRX_NVRTC_LIBRARY            when set and not empty: that file (a path or a soname) and
 *                                  nothing else, so an explicit choice never falls back
 *   libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so
 *                                  through the dynamic linker's search (LD_LIBRARY_PATH, the
 *                                  run path of the object that calls dlopen, ld.so.cache)
 *   <toolkit>/libnvrtc.so          the toolkit tirx was built against (TIRX_NVRTC_LIBDIR, from
 *                                  meson's -Dcuda-root)
 *
 * This file and nvrtc_lib.c use libc and libdl only (no tirx__error): the compile worker
 * (worker_main.c) links them without libtirx. nvrtc.h is included for its types only; its
 * functions are never called by name (the link would fail: libtirx has no -lnvrtc).
 */
#ifndef TIRX_JIT_NVRTC_LIB_H
#define TIRX_JIT_NVRTC_LIB_H

#include <nvrtc.h>
#include <stddef.h>

/* Every NVRTC entry point tirx, its compile worker and bench/compile_time call, by name without
 * the "nvrtc" prefix. The member types are those of nvrtc.h's declarations (__typeof__), so a
 * signature cannot drift from the header. */
#define TIRX__NVRTC_FUNCS(X)                                                                       \
  X(Version)                                                                                       \
  X(GetErrorString)                                                                                \
  X(GetNumSupportedArchs)                                                                          \
  X(GetSupportedArchs)                                                                             \
  X(CreateProgram)                                                                                 \
  X(CompileProgram)                                                                                \
  X(DestroyProgram)                                                                                \
  X(GetProgramLogSize)                                                                             \
  X(GetProgramLog)                                                                                 \
  X(GetCUBINSize)                                                                                  \
  X(GetCUBIN)                                                                                      \
  X(GetPTXSize)                                                                                    \
  X(GetPTX)

typedef struct tirx__nvrtc_lib {
  void *handle;   /* the dlopen handle; never closed once loaded */
  char path[256]; /* the name that was opened ("libnvrtc.so.13", or the override) */
  int version;    /* nvrtcVersion as major * 1000 + minor * 10 (13000 for 13.0) */
#define TIRX__NVRTC_MEMBER_(name) __typeof__(nvrtc##name) *name;
  TIRX__NVRTC_FUNCS(TIRX__NVRTC_MEMBER_)
#undef TIRX__NVRTC_MEMBER_
} tirx__nvrtc_lib;

enum { TIRX__NVRTC_WHY_MAX = 2048 }; /* the longest explanation of a failed load */

/*
 * Loads NVRTC from the candidates above into *out (zeroed first), with override in place of
 * $TIRX_NVRTC_LIBRARY (NULL: read the environment; "" means none). Touches no global state:
 * tests call it with their own override. Returns 0, or -1 with why[] saying which names were
 * tried and the dynamic linker's message (dlerror) or the missing entry point of each; a
 * library that opened but failed a check is closed again.
 */
int tirx__nvrtc_lib_load(const char *override, tirx__nvrtc_lib *out, char *why, size_t why_len);

/*
 * The process's NVRTC: loaded on the first call (pthread_once, from $TIRX_NVRTC_LIBRARY as
 * then set), the same table afterwards. NULL when no candidate loads; tirx__nvrtc_lib_error
 * then says why. Thread-safe; the table lives until the process exits.
 */
const tirx__nvrtc_lib *tirx__nvrtc_lib_get(void);

/* Why tirx__nvrtc_lib_get returned NULL ("" when it did not, or before the first call). */
const char *tirx__nvrtc_lib_error(void);

#endif
