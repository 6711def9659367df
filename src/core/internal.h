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

/*
 * Arch features (arch.c): what tirx's emitted code and its prelude helpers need of a compile
 * target, as a small bitset. X(NAME, "text", since): since is the oldest compute capability
 * that has the feature. Generic features exist on every target from `since` on; the
 * arch-specific ones (the "a" features: wgmma, setmaxnreg, tcgen05) exist only on the targets
 * arch.c's table lists (sm_90a's are not on sm_100a), so `since` is only the oldest of those.
 */
#define TIRX__FEATURE_MAP(X)                                                                       \
  X(LDMATRIX, "ldmatrix", 75)     /* ldmatrix.sync */                                              \
  X(CP_ASYNC, "cp.async", 80)     /* cp.async, its commit and wait groups */                       \
  X(MMA_SYNC, "mma.sync", 80)     /* mma.sync m16n8k16 with f16/bf16 operands */                   \
  X(REDUX, "redux.sync", 80)      /* redux.sync: warp reductions of 32-bit integers */             \
  X(TMA, "tma", 90)               /* cp.async.bulk.tensor, bulk groups, fence.proxy.async */       \
  X(MBARRIER, "mbarrier", 90)     /* mbarriers with transaction counts, try_wait.parity */         \
  X(CLUSTER, "cluster", 90)       /* clusters: barrier.cluster, %cluster_ctarank, mapa, DSMEM */   \
  X(ELECT, "elect", 90)           /* elect.sync */                                                 \
  X(STMATRIX, "stmatrix", 90)     /* stmatrix.sync */                                              \
  X(WGMMA, "wgmma", 90)           /* wgmma.mma_async and its fence/commit/wait: sm_90a */          \
  X(SETMAXNREG, "setmaxnreg", 90) /* setmaxnreg: sm_90a (tirx's helper is under SM90_ALL) */       \
  X(GRIDDEP, "griddepcontrol", 90) /* griddepcontrol: programmatic dependent launch */            \
  X(TCGEN05, "tcgen05", 100)      /* tcgen05 and TMEM: sm_100a/f (no rule uses it yet) */
typedef enum tirx__feature {
#define TIRX__FEATURE_ENUM_(name, text, since) TIRX__FEAT_##name,
  TIRX__FEATURE_MAP(TIRX__FEATURE_ENUM_)
#undef TIRX__FEATURE_ENUM_
  TIRX__FEAT_COUNT
} tirx__feature;
typedef uint32_t tirx__features; /* bit f: feature f */
#define TIRX__FEAT(name) ((tirx__features)1 << TIRX__FEAT_##name)

/* The features of target (number, suffix) as tirx__arch_parse gives them: "sm_90a" is
 * (90, 'a'). A target without an arch-specific row in arch.c's table has exactly the generic
 * features of its number. */
tirx__features tirx__arch_features(int number, char suffix);
/* "wgmma", "tma"; NULL out of range. Static. */
const char *tirx__feature_name(tirx__feature f);
/* Whether f is arch-specific (exists only on the targets arch.c's table lists). */
bool tirx__feature_specific(tirx__feature f);
/* Where f exists, for messages: "sm_90 or newer", or for an arch-specific feature the targets
 * that have it, "sm_90a" ("sm_100a or sm_100f"). Static; NULL out of range. */
const char *tirx__feature_where(tirx__feature f);
/* The same as a parenthesis for messages: "sm_90 or newer", "sm_90a only". Static. */
const char *tirx__feature_where_only(tirx__feature f);
/* The oldest compute capability any target with all of fs has: the largest `since` among them
 * (0 for none). A target older than this lacks fs whatever its suffix. */
int tirx__features_min_arch(tirx__features fs);
/* The feature of need that have lacks and that is hardest to get, or -1 when none is missing:
 * an arch-specific feature before a generic one, then the newest `since`, then table order.
 * Messages name this one. */
int tirx__features_missing(tirx__features have, tirx__features need);

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
