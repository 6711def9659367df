/* Internal helpers shared by every part of tirx: errors, arenas, checked arithmetic. */
#ifndef TIRX_CORE_INTERNAL_H
#define TIRX_CORE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tirx.h"

#if defined(__GNUC__)
#define TIRX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TIRX_LIKELY(x) __builtin_expect(!!(x), 1)
#define TIRX_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TIRX_PRINTF(f, a)
#define TIRX_LIKELY(x) (x)
#define TIRX_UNLIKELY(x) (x)
#endif

enum { TIRX__ERROR_MAX = 4096 };

/* Records the calling thread's error: status and a printf-style message that starts with the
 * function name. Returns status so callers can write `return tirx__error(...)`. */
tirx_status tirx__error(tirx_status status, const char *fmt, ...) TIRX_PRINTF(2, 3);
tirx_status tirx__verror(tirx_status status, const char *fmt, va_list ap);

/* Arena allocation: zeroed, 16-byte aligned; NULL (with TIRX_E_NO_MEMORY recorded, naming fn)
 * on failure. */
void *tirx__arena_alloc(tirx_arena *a, size_t size, const char *fn);
void *tirx__arena_array(tirx_arena *a, size_t n, size_t elem, const char *fn);
char *tirx__arena_strdup(tirx_arena *a, const char *s, const char *fn);

/* Test hook: make the n-th next arena allocation (0 = the next one) fail, -1 to disable.
 * Applies to every arena on the calling thread. */
void tirx__arena_fail_after(int64_t n);

/* Lookup of an axis name of n bytes (not NUL-terminated); -1 when unknown. */
int tirx__axis_find(const char *name, size_t n);

/* A target architecture name "sm_<major><minor>[a|f]" (2 to 4 digits): its number
 * (compute capability * 10 + minor: "sm_90a" -> 90, "sm_100f" -> 100), its suffix ('a', 'f' or 0)
 * in *suffix when not NULL; -1 when arch is NULL or not of that form (arch.c). */
int tirx__arch_parse(const char *arch, char *suffix);

/* Checked int64 arithmetic: false on overflow. */
static inline bool tirx__mul_ok(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline bool tirx__add_ok(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

/* Floor division and modulo for a positive divisor. */
static inline int64_t tirx__floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
static inline int64_t tirx__floormod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

/* A growable malloc'ed string, for printers. On allocation failure `failed` is set and
 * further appends are ignored. */
typedef struct tirx__strbuf {
  char *data;
  size_t len, cap;
  bool failed;
} tirx__strbuf;
void tirx__sb_append(tirx__strbuf *sb, const char *s);
void tirx__sb_printf(tirx__strbuf *sb, const char *fmt, ...) TIRX_PRINTF(2, 3);
/* Returns the malloc'ed string (caller frees) or NULL if any append failed. */
char *tirx__sb_finish(tirx__strbuf *sb);

#endif
