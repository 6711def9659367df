/* The status table, the per-thread error message, and the version string. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *tirx_status_name(tirx_status s) {
  switch (s) {
#define TIRX_STATUS_NAME_(name, value, text) \
  case TIRX_##name:                          \
    return "TIRX_" #name;
    TIRX_STATUS_MAP(TIRX_STATUS_NAME_)
#undef TIRX_STATUS_NAME_
  }
  return "TIRX_UNKNOWN_STATUS";
}

const char *tirx_status_str(tirx_status s) {
  switch (s) {
#define TIRX_STATUS_STR_(name, value, text) \
  case TIRX_##name:                         \
    return text;
    TIRX_STATUS_MAP(TIRX_STATUS_STR_)
#undef TIRX_STATUS_STR_
  }
  return "unknown status code";
}

static _Thread_local char last_error[TIRX__ERROR_MAX];
static _Thread_local tirx_status last_status = TIRX_OK;

/* Formats into a local buffer first: callers that wrap an error pass tirx_last_error() (or a
 * pointer into it) as an argument, and formatting into the buffer being read is undefined. */
tirx_status tirx__verror(tirx_status status, const char *fmt, va_list ap) {
  char buf[TIRX__ERROR_MAX];
  vsnprintf(buf, sizeof buf, fmt, ap);
  memcpy(last_error, buf, sizeof last_error);
  last_status = status;
  return status;
}

tirx_status tirx__error(tirx_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tirx__verror(status, fmt, ap);
  va_end(ap);
  return status;
}

const char *tirx_last_error(void) { return last_error; }

tirx_status tirx_last_status(void) { return last_status; }

void tirx_clear_error(void) {
  last_error[0] = '\0';
  last_status = TIRX_OK;
}

const char *tirx_version(void) { return "0.1.0"; }

/* ---- string builder ---- */

#include <stdlib.h>

static bool sb_reserve(tirx__strbuf *sb, size_t extra) {
  if (sb->failed) return false;
  if (sb->len + extra + 1 <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < sb->len + extra + 1) {
    if (cap > SIZE_MAX / 2) {
      sb->failed = true;
      return false;
    }
    cap *= 2;
  }
  char *p = realloc(sb->data, cap);
  if (!p) {
    sb->failed = true;
    return false;
  }
  sb->data = p;
  sb->cap = cap;
  return true;
}

void tirx__sb_append(tirx__strbuf *sb, const char *s) {
  size_t n = strlen(s);
  if (!sb_reserve(sb, n)) return;
  memcpy(sb->data + sb->len, s, n + 1);
  sb->len += n;
}

void tirx__sb_printf(tirx__strbuf *sb, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    sb->failed = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    tirx__sb_append(sb, small);
    return;
  }
  if (!sb_reserve(sb, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

char *tirx__sb_finish(tirx__strbuf *sb) {
  if (sb->failed) {
    free(sb->data);
    sb->data = NULL;
    return NULL;
  }
  if (!sb->data && !sb_reserve(sb, 0)) return NULL;
  if (sb->len == 0) sb->data[0] = '\0';
  return sb->data;
}

/* ---- dtypes ---- */

const char *tirx_dtype_name(tirx_dtype t) {
  static const char *const names[TIRX_DTYPE_COUNT] = {
      "f32", "f16", "bf16", "f64", "i8", "u8", "i32", "u32", "i64", "bool", "fp8_e4m3", "fp8_e5m2"};
  if ((int)t < 0 || t >= TIRX_DTYPE_COUNT) return NULL;
  return names[t];
}

int tirx_dtype_size(tirx_dtype t) {
  static const int sizes[TIRX_DTYPE_COUNT] = {4, 2, 2, 8, 1, 1, 4, 4, 8, 1, 1, 1};
  if ((int)t < 0 || t >= TIRX_DTYPE_COUNT) return 0;
  return sizes[t];
}
