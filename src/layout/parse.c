/*
 * The parser of the layout text form, the exact inverse of the printer in layout.c:
 *
 *     layout  := shape ':' strides [ '+' '[' replica {',' replica} ']' ] { offset } [ swizzle ]
 *     shape   := '(' ')' | '(' extent {',' extent} ')' | '(' group {',' group} ')'
 *     group   := '(' [ extent {',' extent} ] ')'
 *     strides := the same nesting as shape, with a stride in place of each extent
 *     stride  := integer [ '@' axis ]              (no axis means m)
 *     replica := extent ':' stride
 *     offset  := '+' integer [ '@' axis ] | '-' digits [ '@' axis ]
 *     swizzle := '^' 'sw' '(' bytes ',' elem_bytes ')'
 *
 * Whitespace (space, tab, CR, LF) may appear between any two tokens, never inside a number or
 * a name. A negative offset is written "+-3@m", as the printer writes it, or "-3@m". Each axis
 * may carry one offset. Axis names are looked up with the aliases of tirx_axis_lookup().
 *
 * Errors carry the 0-based position of the offending character (the text's length at its end):
 *   TIRX_E_PARSE         "tirx_layout_parse: at 4: expected ',' or ')'"
 *   TIRX_E_OVERFLOW      "tirx_layout_parse: at 1: integer does not fit in int64"
 *   TIRX_E_UNKNOWN_AXIS  "tirx_layout_parse: at 6: unknown axis 'bogus'"
 *   TIRX_E_LIMIT         more than TIRX_LAYOUT_MAX_TEXT characters, iters or dims
 * and then those of tirx__layout_make() (a coordinate that overflows int64, for example).
 *
 * The parser does not recurse and never looks past the terminating NUL, so any input is safe.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layout_internal.h"

static const char fn[] = "tirx_layout_parse";

typedef struct parser {
  const char *s;
  size_t n;   /* length of s */
  size_t pos; /* the next character to read; never beyond n */
} parser;

static bool fail(size_t at, tirx_status status, const char *fmt, ...) TIRX_PRINTF(3, 4);

static bool fail(size_t at, tirx_status status, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  tirx__error(status, "%s: at %zu: %s", fn, at, what);
  return false;
}

static void skip_ws(parser *p) {
  while (p->pos < p->n) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

/* The next non-blank character, or '\0' at the end of the text. */
static char peek(parser *p) {
  skip_ws(p);
  return p->pos < p->n ? p->s[p->pos] : '\0';
}

/* Consumes c when it is the next non-blank character. */
static bool accept(parser *p, char c) {
  if (peek(p) != c) return false;
  p->pos++;
  return true;
}

static bool expect(parser *p, char c) {
  if (accept(p, c)) return true;
  return fail(p->pos, TIRX_E_PARSE, "expected '%c'", c);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* An optionally negative decimal integer; `what` names it in the error when there is none. */
static bool parse_int(parser *p, const char *what, int64_t *out) {
  size_t start = (skip_ws(p), p->pos), i = start;
  bool neg = i < p->n && p->s[i] == '-';
  if (neg) i++;
  if (i >= p->n || !is_digit(p->s[i])) return fail(start, TIRX_E_PARSE, "expected %s", what);
  /* Accumulate the magnitude; -2^63 is the one value whose magnitude exceeds INT64_MAX. */
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
  for (; i < p->n && is_digit(p->s[i]); i++) {
    uint64_t digit = (uint64_t)(p->s[i] - '0');
    if (v > (limit - digit) / 10)
      return fail(start, TIRX_E_OVERFLOW, "integer does not fit in int64");
    v = v * 10 + digit;
  }
  p->pos = i;
  if (neg)
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  else
    *out = (int64_t)v;
  return true;
}

static bool parse_extent(parser *p, int64_t *out) {
  size_t start = (skip_ws(p), p->pos);
  if (!parse_int(p, "an extent", out)) return false;
  if (*out < 1) return fail(start, TIRX_E_PARSE, "expected an extent >= 1");
  return true;
}

/* An axis name after '@'. */
static bool parse_axis(parser *p, tirx_axis *out) {
  size_t start = (skip_ws(p), p->pos), i = start;
  if (i >= p->n || !is_name_start(p->s[i])) return fail(start, TIRX_E_PARSE, "expected an axis name");
  while (i < p->n && (is_name_start(p->s[i]) || is_digit(p->s[i]))) i++;
  int axis = tirx__axis_find(p->s + start, i - start);
  if (axis < 0) {
    size_t len = i - start;
    return fail(start, TIRX_E_UNKNOWN_AXIS, "unknown axis '%.*s'", (int)(len > 64 ? 64 : len),
                p->s + start);
  }
  p->pos = i;
  *out = axis;
  return true;
}

/* integer ['@' axis]: a stride or an offset value with its axis (m when none is written). */
static bool parse_on_axis(parser *p, const char *what, int64_t *value, tirx_axis *axis) {
  if (!parse_int(p, what, value)) return false;
  *axis = TIRX_AXIS_M;
  return accept(p, '@') ? parse_axis(p, axis) : true;
}

/* ---- the shape --------------------------------------------------------------------------- */

typedef struct parsed {
  int nd, nr, no, rank;
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS];
  tirx_iter r[TIRX_LAYOUT_MAX_ITERS];
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int32_t dim_begin[TIRX_LAYOUT_MAX_RANK + 1];
  int swizzle_bytes, swizzle_elem;
} parsed;

static bool push_extent(parser *p, parsed *l) {
  size_t at = (skip_ws(p), p->pos);
  int64_t e;
  if (!parse_extent(p, &e)) return false;
  if (l->nd == TIRX_LAYOUT_MAX_ITERS)
    return fail(at, TIRX_E_LIMIT, "expected at most %d shard iters", (int)TIRX_LAYOUT_MAX_ITERS);
  l->d[l->nd++] = (tirx_iter){e, 0, TIRX_AXIS_M};
  return true;
}

/* The rest of a list of extents after its '(': [extent {',' extent}] ')'. */
static bool parse_extent_list(parser *p, parsed *l, bool allow_empty) {
  if (allow_empty && accept(p, ')')) return true;
  for (;;) {
    if (!push_extent(p, l)) return false;
    if (accept(p, ')')) return true;
    if (!accept(p, ',')) return fail(p->pos, TIRX_E_PARSE, "expected ',' or ')'");
  }
}

static bool parse_shape(parser *p, parsed *l) {
  if (!expect(p, '(')) return false;
  char c = peek(p);
  if (c == ')') { /* a scalar */
    p->pos++;
    return true;
  }
  if (c != '(') {
    if (c != '-' && !is_digit(c))
      return fail(p->pos, TIRX_E_PARSE, "expected an extent, '(' or ')'");
    return parse_extent_list(p, l, false);
  }
  /* Grouped: one parenthesised list of extents per logical dimension. */
  for (;;) {
    size_t at = (skip_ws(p), p->pos);
    if (!accept(p, '(')) return fail(at, TIRX_E_PARSE, "expected '('");
    if (l->rank == TIRX_LAYOUT_MAX_RANK)
      return fail(at, TIRX_E_LIMIT, "expected at most %d dims", (int)TIRX_LAYOUT_MAX_RANK);
    l->dim_begin[l->rank++] = l->nd;
    if (peek(p) != ')' && peek(p) != '-' && !is_digit(peek(p)))
      return fail(p->pos, TIRX_E_PARSE, "expected an extent or ')'");
    if (!parse_extent_list(p, l, true)) return false;
    if (accept(p, ')')) break;
    if (!accept(p, ',')) return fail(p->pos, TIRX_E_PARSE, "expected ',' or ')'");
  }
  l->dim_begin[l->rank] = l->nd;
  return true;
}

/* ---- the strides, which must mirror the shape ------------------------------------------- */

/*
 * Reads the separator before item i of n in a list whose '(' has been read: nothing before the
 * first item, else ','. A ')' where an item is due is a count mismatch; `what` is "stride" or
 * "dim" and `where` a suffix such as " in dim 1".
 */
static bool list_next(parser *p, int i, int n, const char *what, const char *where) {
  char c = peek(p);
  if (c == ')')
    return fail(p->pos, TIRX_E_PARSE, "expected %d %s%s%s to match the extents, found %d", n, what,
                n == 1 ? "" : "s", where, i);
  if (i == 0) return true;
  if (c != ',') return fail(p->pos, TIRX_E_PARSE, "expected ',' or ')'");
  p->pos++;
  return true;
}

/* Reads the ')' that closes a list of n items; a ',' there means too many items. */
static bool list_end(parser *p, int n, const char *what, const char *where) {
  char c = peek(p);
  if (c == ')') {
    p->pos++;
    return true;
  }
  if (c == ',')
    return fail(p->pos, TIRX_E_PARSE, "expected %d %s%s%s to match the extents, found more", n,
                what, n == 1 ? "" : "s", where);
  return fail(p->pos, TIRX_E_PARSE, n == 0 ? "expected ')'" : "expected ',' or ')'");
}

static bool parse_stride_list(parser *p, parsed *l, int begin, int end, const char *where) {
  for (int i = begin; i < end; i++) {
    if (!list_next(p, i - begin, end - begin, "stride", where)) return false;
    if (!parse_on_axis(p, "a stride", &l->d[i].stride, &l->d[i].axis)) return false;
  }
  return list_end(p, end - begin, "stride", where);
}

static bool parse_strides(parser *p, parsed *l) {
  if (!expect(p, ':') || !expect(p, '(')) return false;
  if (l->rank == 0) return parse_stride_list(p, l, 0, l->nd, "");
  for (int k = 0; k < l->rank; k++) {
    if (!list_next(p, k, l->rank, "dim", "")) return false;
    if (!expect(p, '(')) return false;
    char where[32];
    snprintf(where, sizeof where, " in dim %d", k);
    if (!parse_stride_list(p, l, l->dim_begin[k], l->dim_begin[k + 1], where)) return false;
  }
  return list_end(p, l->rank, "dim", "");
}

/* ---- replicas, offsets, swizzle ---------------------------------------------------------- */

/* The rest of "+[...]" after the '['. */
static bool parse_replicas(parser *p, parsed *l) {
  for (;;) {
    size_t at = (skip_ws(p), p->pos);
    tirx_iter it;
    if (!parse_extent(p, &it.extent)) return false;
    if (l->nr == TIRX_LAYOUT_MAX_ITERS)
      return fail(at, TIRX_E_LIMIT, "expected at most %d replica iters",
                  (int)TIRX_LAYOUT_MAX_ITERS);
    if (!expect(p, ':')) return false;
    if (!parse_on_axis(p, "a stride", &it.stride, &it.axis)) return false;
    l->r[l->nr++] = it;
    if (accept(p, ']')) return true;
    if (!accept(p, ',')) return fail(p->pos, TIRX_E_PARSE, "expected ',' or ']'");
  }
}

/* One offset; p is at its value (the sign of "-3@m" included). */
static bool parse_offset(parser *p, parsed *l) {
  tirx_axis_offset o;
  if (!parse_on_axis(p, "an offset", &o.value, &o.axis)) return false;
  for (int i = 0; i < l->no; i++)
    if (l->o[i].axis == o.axis) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: offset on axis %s given twice", fn,
                  tirx_axis_name(o.axis));
      return false;
    }
  l->o[l->no++] = o; /* at most one per axis, so never more than TIRX_AXIS_MAX */
  return true;
}

static bool parse_swizzle(parser *p, parsed *l) {
  size_t at = (skip_ws(p), p->pos);
  if (p->n - at < 2 || p->s[at] != 's' || p->s[at + 1] != 'w')
    return fail(at, TIRX_E_PARSE, "expected 'sw'");
  p->pos = at + 2;
  if (!expect(p, '(')) return false;
  int64_t v;
  at = (skip_ws(p), p->pos);
  if (!parse_int(p, "swizzle bytes 32, 64 or 128", &v)) return false;
  if (v != 32 && v != 64 && v != 128)
    return fail(at, TIRX_E_PARSE, "expected swizzle bytes 32, 64 or 128");
  l->swizzle_bytes = (int)v;
  if (!expect(p, ',')) return false;
  at = (skip_ws(p), p->pos);
  if (!parse_int(p, "element bytes 1, 2, 4 or 8", &v)) return false;
  if (v != 1 && v != 2 && v != 4 && v != 8)
    return fail(at, TIRX_E_PARSE, "expected element bytes 1, 2, 4 or 8");
  l->swizzle_elem = (int)v;
  return expect(p, ')');
}

static bool parse_tail(parser *p, parsed *l) {
  bool replicas_allowed = true;
  for (;;) {
    char c = peek(p);
    if (c == '\0') return true;
    if (c == '^') {
      p->pos++;
      if (!parse_swizzle(p, l)) return false;
      if (peek(p) != '\0') return fail(p->pos, TIRX_E_PARSE, "expected end of text");
      return true;
    }
    if (c == '-') {
      replicas_allowed = false;
      if (!parse_offset(p, l)) return false;
      continue;
    }
    if (c != '+') return fail(p->pos, TIRX_E_PARSE, "expected '+', '-', '^' or end of text");
    p->pos++;
    if (replicas_allowed && accept(p, '[')) {
      replicas_allowed = false;
      if (!parse_replicas(p, l)) return false;
      continue;
    }
    replicas_allowed = false;
    if (!parse_offset(p, l)) return false;
  }
}

tirx_layout *tirx_layout_parse(tirx_arena *a, const char *text) {
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return NULL;
  }
  if (!text) {
    tirx__error(TIRX_E_NULL_ARG, "%s: text is NULL", fn);
    return NULL;
  }
  size_t n = strnlen(text, (size_t)TIRX_LAYOUT_MAX_TEXT + 1);
  if (n > TIRX_LAYOUT_MAX_TEXT) {
    tirx__error(TIRX_E_LIMIT, "%s: text is longer than %d characters", fn,
                (int)TIRX_LAYOUT_MAX_TEXT);
    return NULL;
  }
  parser p = {text, n, 0};
  parsed l;
  memset(&l, 0, sizeof l);
  if (!parse_shape(&p, &l) || !parse_strides(&p, &l) || !parse_tail(&p, &l)) return NULL;
  return tirx__layout_make(a, fn, l.nd, l.d, l.nr, l.r, l.no, l.o, l.rank,
                           l.rank ? l.dim_begin : NULL, l.swizzle_bytes, l.swizzle_elem);
}
