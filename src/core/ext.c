/* Extensible public structs: the sizes of every version and their checks (ext.h). */
#include "ext.h"

#include <stdio.h>
#include <string.h>

/* One table per struct. When a struct grows, append its new sizeof and write the older ones as
 * offsetof(T, the first field the next version added): a sizeof written here must never change. */
#define EXT_V1(id, T)                                                                          \
  _Static_assert(offsetof(T, size) == 0, #T " starts with its size");                         \
  static const size_t id##_sizes[] = {sizeof(T)};                                              \
  const tirx__ext_type tirx__ext_##id = {#T, id##_sizes, 1};

/* Two versions: version 1 ends before `added`, the first field version 2 appended. */
#define EXT_V2(id, T, added)                                                                   \
  _Static_assert(offsetof(T, size) == 0, #T " starts with its size");                         \
  static const size_t id##_sizes[] = {offsetof(T, added), sizeof(T)};                          \
  const tirx__ext_type tirx__ext_##id = {#T, id##_sizes, 2};

/* Version 2 (issue 18): compile_workers, compile_in_process, compile_worker. */
EXT_V2(runtime_options, tirx_runtime_options, compile_workers)
/* Version 2 (issue 18): worker_compiles, worker_deaths. */
EXT_V2(cache_stats, tirx_cache_stats, worker_compiles)
EXT_V1(comm_options, tirx_comm_options)
/* Version 2 (issue 16): cluster_m, cluster_n (thread-block clusters with TMA multicast). */
EXT_V2(gemm_options, tirx_gemm_options, cluster_m)
EXT_V2(gemm_plan, tirx_gemm_plan, cluster_m)
EXT_V1(row_options, tirx_row_options)
/* Version 2 (issue 20): elementwise (the elementwise form of silu_mul and chain). */
EXT_V2(row_plan, tirx_row_plan, elementwise)
/* Version 2 (issue 20): q_strides, k_strides. */
EXT_V2(rope_options, tirx_rope_options, q_strides)
EXT_V1(attention_options, tirx_attention_options)
EXT_V1(decode_options, tirx_decode_options)
/* Version 2 (issue 15): ctas, the persistent grid of the tensor-core kernel. */
EXT_V2(decode_plan, tirx_decode_plan, ctas)
EXT_V1(tp_spec, tirx_tp_spec)

const tirx__ext_type *const tirx__ext_types[] = {
    &tirx__ext_runtime_options, &tirx__ext_cache_stats,   &tirx__ext_comm_options,
    &tirx__ext_gemm_options,    &tirx__ext_gemm_plan,     &tirx__ext_row_options,
    &tirx__ext_row_plan,        &tirx__ext_rope_options,  &tirx__ext_attention_options,
    &tirx__ext_decode_options,  &tirx__ext_decode_plan,   &tirx__ext_tp_spec,
};
const int tirx__ext_type_count = (int)(sizeof tirx__ext_types / sizeof tirx__ext_types[0]);

/* The bytes of the caller's version, or 0 (with the error recorded) for an unknown size. */
static size_t version_bytes(const char *fn, const char *arg, const tirx__ext_type *t,
                            size_t size, bool output) {
  if (size == 0)
    return t->sizes[0];
  for (int i = 0; i < t->count; i++)
    if (size == t->sizes[i])
      return size;
  /* "expected 0 or 40 (sizeof(T))"; with older versions: "expected 0, 32 or 40 (sizeof(T))". */
  char list[160] = "0";
  size_t len = 1;
  for (int i = 0; i < t->count && len < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%zu",
                            i == t->count - 1 ? " or " : ", ", t->sizes[i]);
  size_t alen = strlen(arg);
  const char *sep = alen && arg[alen - 1] == '.' ? "" : "->"; /* "opts->size", "spec->gemm.size" */
  (void)tirx__error(TIRX_E_INVALID_ARG, "%s: %s%ssize is %zu, expected %s (sizeof(%s))%s", fn,
                    arg, sep, size, list, t->name,
                    output ? ": zero the struct or set its size before the call" : "");
  return 0;
}

tirx_status tirx__ext_in(const char *fn, const char *arg, const tirx__ext_type *t,
                         const void *src, void *dst) {
  size_t current = t->sizes[t->count - 1];
  memset(dst, 0, current);
  if (src) {
    size_t size;
    memcpy(&size, src, sizeof size);
    size_t n = version_bytes(fn, arg, t, size, false);
    if (n == 0)
      return TIRX_E_INVALID_ARG;
    memcpy(dst, src, n);
  }
  memcpy(dst, &current, sizeof current);
  return TIRX_OK;
}

tirx_status tirx__ext_out(const char *fn, const char *arg, const tirx__ext_type *t,
                          const void *out, size_t *bytes) {
  size_t size;
  memcpy(&size, out, sizeof size);
  *bytes = version_bytes(fn, arg, t, size, true);
  return *bytes ? TIRX_OK : TIRX_E_INVALID_ARG;
}

void tirx__ext_write(void *out, const void *full, size_t bytes) {
  memcpy(out, full, bytes);
  memcpy(out, &bytes, sizeof bytes);
}
