/*
 * Extensible public structs (README.md, "ABI policy"): a public struct that may grow begins
 * with `size_t size`. 0 means version 1 (the struct as tirx 0.1 declared it); any other value
 * must be the sizeof of a version this library knows, and anything else is TIRX_E_INVALID_ARG:
 *
 *   tirx_op_gemm: opts->size is 12, expected 0, 40 or 48 (sizeof(tirx_gemm_options))
 *
 * A struct grows only by appending fields; its table in ext.c gains the new size (the older
 * sizes stay, written as offsetof(T, first new field)), so that a caller compiled against an
 * older header keeps working: the fields it does not have read as 0, their default.
 */
#ifndef TIRX_CORE_EXT_H
#define TIRX_CORE_EXT_H

#include "internal.h"

/* An extensible struct: its name and the sizes of its versions, oldest first (sizes[0] is
 * version 1, sizes[count - 1] the struct as this library declares it). */
typedef struct tirx__ext_type {
  const char *name;
  const size_t *sizes;
  int count;
} tirx__ext_type;

/* Every extensible struct of the public headers (ext.c). */
extern const tirx__ext_type tirx__ext_runtime_options, tirx__ext_cache_stats,
    tirx__ext_comm_options, tirx__ext_gemm_options, tirx__ext_gemm_plan,
    tirx__ext_row_options, tirx__ext_row_plan, tirx__ext_rope_options,
    tirx__ext_attention_options, tirx__ext_decode_options, tirx__ext_decode_plan,
    tirx__ext_tp_spec;
/* The same, as one list (for tests). */
extern const tirx__ext_type *const tirx__ext_types[];
extern const int tirx__ext_type_count;

/*
 * Reads the caller's struct src (NULL: every field 0, the defaults) into dst, a struct of the
 * current version: dst is zeroed, the caller's bytes of its version are copied, and dst's size
 * is set to the current sizeof. arg names the pointer in messages ("opts", "options"), or an
 * embedded struct with a trailing dot ("spec->gemm."). Errors: TIRX_E_INVALID_ARG for a size that is neither 0 nor a known version's.
 */
tirx_status tirx__ext_in(const char *fn, const char *arg, const tirx__ext_type *t,
                         const void *src, void *dst);

/* Checks the caller's output struct out (not NULL) and sets *bytes to how many bytes of it the
 * library may write (its version's size). Errors as tirx__ext_in. */
tirx_status tirx__ext_out(const char *fn, const char *arg, const tirx__ext_type *t,
                          const void *out, size_t *bytes);

/* Writes the first bytes of full (a current-version struct) to out and sets out's size to
 * bytes. */
void tirx__ext_write(void *out, const void *full, size_t bytes);

#endif
