/*
 * fuzz_common.h: what tools/fuzz_ops.c and tools/fuzz_api.c share: the PRNG, the description
 * of the call being made (for the watchdog and the sanitizers' death callback), interesting
 * values, the failure and message-shape bookkeeping, check_result and RUN. Included once, by
 * one tool, after it defines FUZZ_TOOL (its name, for the messages), FUZZ_DESC_BYTES (the
 * call description's buffer) and FUZZ_CHECK_OK(fn) (what a call that returned TIRX_OK must
 * also satisfy; it may call fail()).
 */
#ifndef TIRX_FUZZ_COMMON_H
#define TIRX_FUZZ_COMMON_H

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tirx.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define HAVE_SANITIZER_DEATH 1
#endif

/* ---- the PRNG (xorshift64*) ---- */

static uint64_t rng_state = 1;
static uint64_t rnd(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}
static int rint_below(int n) { return (int)(rnd() % (uint64_t)n); }
static bool chance(int percent) { return rint_below(100) < percent; }
#define PICK(arr) ((arr)[rint_below((int)(sizeof(arr) / sizeof((arr)[0])))])

/* ---- the call being made, for the watchdog and the sanitizers' death callback ---- */

static char desc[FUZZ_DESC_BYTES];
static size_t desc_len;
static void desc_reset(void) { desc_len = 0, desc[0] = '\0'; }
static void descf(const char *fmt, ...) {
  if (desc_len >= sizeof desc - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(desc + desc_len, sizeof desc - desc_len, fmt, ap);
  va_end(ap);
  if (n > 0) desc_len += (size_t)n < sizeof desc - desc_len ? (size_t)n : sizeof desc - desc_len - 1;
}
static void print_desc(void) {
  static const char head[] = "\n" FUZZ_TOOL ": the call was: ";
  (void)!write(2, head, sizeof head - 1);
  (void)!write(2, desc, strlen(desc));
  (void)!write(2, "\n", 1);
}
static int watchdog_s = 60;
static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "\n" FUZZ_TOOL ": HANG: the call did not return within the watchdog";
  (void)!write(2, msg, sizeof msg - 1);
  print_desc();
  _exit(3);
}

/* ---- interesting values ---- */

static int64_t mut_i64(int64_t orig) {
  static const int64_t vals[] = {0, -1, 1, 2, 3, 7, 8, 15, 16, 17, 63, 64, 65, 255, 256, 1023,
                                 1024, 1025, 65535, 65536, INT32_MAX, (int64_t)INT32_MAX + 1,
                                 (int64_t)UINT32_MAX, (int64_t)1 << 40, (int64_t)1 << 62,
                                 INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1, -2, -64,
                                 INT32_MIN};
  switch (rint_below(5)) {
  case 0: return orig + 1;
  case 1: return orig - 1;
  case 2: return orig * 2;
  case 3: return (int64_t)(rnd() % 5000) - 100;
  default: return PICK(vals);
  }
}
static int mut_int(int orig) {
  static const int vals[] = {0,    -1,  1,   2,    3,    4,    5,     7,      8,       9,
                             16,   17,  31,  32,   33,   63,   64,    65,     96,      127,
                             128,  255, 256, 257,  1023, 1024, 1025,  4096,   65535,   65536,
                             -64,  -2,  99,  1000, 100000, INT_MAX, INT_MIN, INT_MAX - 1,
                             INT_MIN + 1};
  switch (rint_below(4)) {
  case 0: return orig + 1;
  case 1: return orig - 1;
  case 2: return (int)(rnd() % 300) - 20;
  default: return PICK(vals);
  }
}
static double mut_double(void) {
  const double vals[] = {0, -0.0, -1, 1e-30, 0.125, 1, 1e30, INFINITY, -INFINITY, NAN,
                         DBL_MAX, -DBL_MAX, DBL_MIN, 5e-324};
  return PICK(vals);
}
static size_t mut_size(size_t cur) {
  const size_t vals[] = {0, 1, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 128, 4096, SIZE_MAX,
                         SIZE_MAX - 7, (size_t)INT_MAX + 1};
  switch (rint_below(3)) {
  case 0: return cur + 8;
  case 1: return cur ? cur - 8 : 7;
  default: return PICK(vals);
  }
}
static tirx_dtype mut_dtype(void) {
  const int vals[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 99, -1, INT_MAX, INT_MIN};
  return (tirx_dtype)PICK(vals);
}

/* The failures and the messages seen. */
static int failures;
static long ncalls, nstatus[64];
typedef struct shape_entry {
  char *shape;
  char *example;
  long count;
} shape_entry;
static shape_entry *shapes;
static int nshapes, capshapes;

static void note_message(const char *msg) {
  char buf[600];
  size_t n = 0;
  for (const char *p = msg; *p && n < sizeof buf - 2; p++) {
    if ((p[0] == '0' && p[1] == 'x')) {
      buf[n++] = 'P';
      p += 2;
      while (*p && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) p++;
      p--;
      continue;
    }
    if ((*p >= '0' && *p <= '9') || (*p == '-' && p[1] >= '0' && p[1] <= '9')) {
      buf[n++] = '#';
      while (p[1] >= '0' && p[1] <= '9') p++;
      continue;
    }
    buf[n++] = *p;
  }
  buf[n] = '\0';
  for (int i = 0; i < nshapes; i++)
    if (strcmp(shapes[i].shape, buf) == 0) {
      shapes[i].count++;
      return;
    }
  if (nshapes == capshapes) {
    capshapes = capshapes ? capshapes * 2 : 256;
    shapes = realloc(shapes, (size_t)capshapes * sizeof *shapes);
  }
  shapes[nshapes].shape = strdup(buf);
  shapes[nshapes].example = strdup(msg);
  shapes[nshapes].count = 1;
  nshapes++;
}

static void fail(const char *what, const char *detail) {
  failures++;
  const char *d = desc_len > 3000 ? desc + desc_len - 3000 : desc;
  fprintf(stderr, "FAIL: %s: %s\n  call: %s%s\n", what, detail, desc_len > 3000 ? "..." : "", d);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double slow_s = 5.0;
static bool verbose;

/* Checks what a call returned. fn: the name its message must start with. */
static void check_result(const char *fn, tirx_status st, double secs) {
  ncalls++;
  nstatus[(unsigned)st < 64 ? (unsigned)st : 63]++;
  if (secs > slow_s) {
    char d[64];
    snprintf(d, sizeof d, "%.1f s", secs);
    fprintf(stderr, "SLOW: %s\n  call: %s\n", d, desc);
  }
  if (st == TIRX_OK) {
    FUZZ_CHECK_OK(fn);
    return;
  }
  if (strcmp(tirx_status_name(st), "TIRX_UNKNOWN_STATUS") == 0) {
    char d[64];
    snprintf(d, sizeof d, "status %d", (int)st);
    fail("unknown status", d);
  }
  const char *msg = tirx_last_error();
  if (!msg || !*msg) {
    fail("empty message", tirx_status_name(st));
    return;
  }
  if (tirx_last_status() != st) fail("tirx_last_status differs from the returned status", msg);
  size_t fl = strlen(fn);
  if (strncmp(msg, fn, fl) != 0 || msg[fl] != ':') fail("message does not start with the function's name", msg);
  if (strstr(msg, "tirx__")) fail("message names an internal function", msg);
  note_message(msg);
}

#define RUN(fn_, expr)                                                                       \
  do {                                                                                       \
    tirx_clear_error();                                                                      \
    if (verbose) fprintf(stderr, "CALL %s\n", desc);                                         \
    alarm((unsigned)watchdog_s);                                                             \
    double t0_ = now_s();                                                                    \
    tirx_status st_ = (expr);                                                                \
    double t1_ = now_s();                                                                    \
    alarm(0);                                                                                \
    if (verbose) fprintf(stderr, "  -> %s %s\n", tirx_status_name(st_), tirx_last_error());  \
    check_result((fn_), st_, t1_ - t0_);                                                     \
  } while (0)

static int cmp_shape(const void *a, const void *b) {
  const shape_entry *x = a, *y = b;
  return strcmp(x->shape, y->shape);
}

#ifdef HAVE_SANITIZER_DEATH
static void on_death(void) { print_desc(); }
#endif

/* After the summary line: the count of each status, then each message shape with its count
 * (sorted), for a reader to check that every one names its argument and what was expected. */
static void print_shapes(void) {
  qsort(shapes, (size_t)nshapes, sizeof *shapes, cmp_shape);
  for (int s = 0; s < 64; s++)
    if (nstatus[s]) printf("  %-24s %ld\n", tirx_status_name((tirx_status)s), nstatus[s]);
  for (int s = 0; s < nshapes; s++) {
    printf("%6ld  %s\n", shapes[s].count, shapes[s].shape);
    free(shapes[s].shape);
    free(shapes[s].example);
  }
  free(shapes);
}

#endif
