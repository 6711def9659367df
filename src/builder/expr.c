/* Expressions: constants, indices, operators with their type rules, loads and shuffles. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "builder_internal.h"

tirx_expr *tirx__b_expr_new(tirx_builder *b, const char *fn, int kind, int op, tirx_dtype dtype,
                            tirx_expr *x, tirx_expr *y, tirx_expr *z) {
  uint32_t depth = 0;
  uint64_t size = 1;
  bool host = true;
  tirx_expr *kids[3] = {x, y, z};
  for (int i = 0; i < 3; i++) {
    if (!kids[i]) continue;
    if (kids[i]->depth > depth) depth = kids[i]->depth;
    size += kids[i]->size;
    host = host && kids[i]->host;
  }
  if (depth + 1 > TIRX_BUILDER_MAX_EXPR_DEPTH) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: the expression is nested more than %d deep", fn,
                 TIRX_BUILDER_MAX_EXPR_DEPTH);
    return NULL;
  }
  if (size > TIRX_BUILDER_MAX_EXPR_SIZE) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: the expression has more than %d nodes", fn,
                 TIRX_BUILDER_MAX_EXPR_SIZE);
    return NULL;
  }
  tirx_expr *e = tirx__b_node(b, fn, sizeof *e);
  if (!e) return NULL;
  e->kind = (uint8_t)kind;
  e->op = (uint8_t)op;
  e->dtype = (uint8_t)dtype;
  e->owner = b;
  e->depth = (uint16_t)(depth + 1);
  e->size = (uint32_t)size;
  e->host = host && !tirx__dtype_is_float(dtype);
  e->a = x;
  e->b = y;
  e->c = z;
  return e;
}

static bool int_fits(int64_t v, int t) {
  switch (t) {
  case TIRX_I8: return v >= -128 && v <= 127;
  case TIRX_U8: return v >= 0 && v <= 255;
  case TIRX_I32: return v >= INT32_MIN && v <= INT32_MAX;
  case TIRX_U32: return v >= 0 && v <= (int64_t)UINT32_MAX;
  case TIRX_I64: return true;
  case TIRX_BOOL: return v == 0 || v == 1;
  default: return false;
  }
}

/* True when |v| has at most bits significant bits (then a binary floating-point type with a
 * bits-bit significand represents v exactly, range permitting). */
static bool significand_fits(int64_t v, int bits) {
  uint64_t a = v < 0 ? -(uint64_t)v : (uint64_t)v;
  if (a >> bits == 0) return true;
  int width = 64 - __builtin_clzll(a); /* a's significant bits from the top one */
  return (a & ((UINT64_C(1) << (width - bits)) - 1)) == 0;
}

bool tirx__b_weak_exact(int64_t v, int dtype) {
  switch (dtype) {
  case TIRX_F64: return significand_fits(v, 53);
  case TIRX_F32: return significand_fits(v, 24);
  case TIRX_BF16: return significand_fits(v, 8);
  case TIRX_F16: return v >= -65504 && v <= 65504 && significand_fits(v, 11);
  default: return tirx__dtype_is_int(dtype) && int_fits(v, dtype);
  }
}

tirx_expr *tirx__b_const(tirx_builder *b, const char *fn, int64_t v, tirx_dtype dtype) {
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_INT, 0, dtype, NULL, NULL, NULL);
  if (e) e->i = v;
  return e;
}

static tirx_expr *float_const(tirx_builder *b, const char *fn, double v, tirx_dtype dtype) {
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_FLOAT, 0, dtype, NULL, NULL, NULL);
  if (!e) return NULL;
  e->f = dtype == TIRX_F32 ? (double)(float)v : v;
  e->host = false;
  return e;
}

tirx_expr *tirx__b_convert(tirx_builder *b, const char *fn, tirx_expr *e, tirx_dtype dtype) {
  if (!e) return NULL;
  if (e->dtype == dtype && !(e->weak && dtype == TIRX_I64)) return e;
  if (e->kind == TIRX__EX_INT && (e->weak || e->dtype == dtype)) {
    if (tirx__dtype_is_float(dtype)) return float_const(b, fn, (double)e->i, dtype);
    return tirx__b_const(b, fn, e->i, dtype);
  }
  if (e->dtype == dtype) return e;
  return tirx__b_expr_new(b, fn, TIRX__EX_CAST, 0, dtype, e, NULL, NULL);
}

/* ---- constants and indices ---- */

tirx_expr *tirx_int(tirx_builder *b, int64_t v) {
  static const char fn[] = "tirx_int";
  if (!tirx__b_ok(b, fn)) return NULL;
  tirx_expr *e = tirx__b_const(b, fn, v, TIRX_I64);
  if (e) e->weak = true;
  return e;
}

tirx_expr *tirx_int_typed(tirx_builder *b, int64_t v, tirx_dtype dtype) {
  static const char fn[] = "tirx_int_typed";
  if (!tirx__b_ok(b, fn) || !tirx__b_dtype(b, fn, dtype, "dtype")) return NULL;
  if (!tirx__dtype_is_int(dtype) && dtype != TIRX_BOOL) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: dtype is %s, expected an integer type or bool", fn,
                 tirx_dtype_name(dtype));
    return NULL;
  }
  if (!int_fits(v, dtype)) {
    tirx__b_fail(b, TIRX_E_OUT_OF_RANGE, "%s: v is %lld, out of range for %s", fn,
                 (long long)v, tirx_dtype_name(dtype));
    return NULL;
  }
  return tirx__b_const(b, fn, v, dtype);
}

tirx_expr *tirx_float(tirx_builder *b, double v, tirx_dtype dtype) {
  static const char fn[] = "tirx_float";
  if (!tirx__b_ok(b, fn) || !tirx__b_dtype(b, fn, dtype, "dtype")) return NULL;
  if (!tirx__dtype_is_float(dtype)) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: dtype is %s, expected f32, f64, f16 or bf16", fn,
                 tirx_dtype_name(dtype));
    return NULL;
  }
  return float_const(b, fn, v, dtype);
}

tirx_expr *tirx_bool(tirx_builder *b, bool v) {
  static const char fn[] = "tirx_bool";
  if (!tirx__b_ok(b, fn)) return NULL;
  return tirx__b_const(b, fn, v ? 1 : 0, TIRX_BOOL);
}

static tirx_expr *special(tirx_builder *b, const char *fn, int sp, int dim) {
  if (!tirx__b_ok(b, fn)) return NULL;
  if (dim < 0 || dim > 2) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: dim is %d, expected 0, 1 or 2", fn, dim);
    return NULL;
  }
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_SPECIAL, sp, TIRX_I32, NULL, NULL, NULL);
  if (!e) return NULL;
  e->i = dim;
  e->host = false;
  return e;
}

tirx_expr *tirx_thread_idx(tirx_builder *b, int dim) {
  return special(b, "tirx_thread_idx", TIRX__SP_THREAD_IDX, dim);
}
tirx_expr *tirx_block_idx(tirx_builder *b, int dim) {
  return special(b, "tirx_block_idx", TIRX__SP_BLOCK_IDX, dim);
}
tirx_expr *tirx_block_dim(tirx_builder *b, int dim) {
  return special(b, "tirx_block_dim", TIRX__SP_BLOCK_DIM, dim);
}
tirx_expr *tirx_grid_dim(tirx_builder *b, int dim) {
  return special(b, "tirx_grid_dim", TIRX__SP_GRID_DIM, dim);
}
tirx_expr *tirx_thread_linear(tirx_builder *b) {
  return special(b, "tirx_thread_linear", TIRX__SP_THREAD_LINEAR, 0);
}
tirx_expr *tirx_elem_index(tirx_builder *b, int dim) {
  static const char fn[] = "tirx_elem_index";
  if (!tirx__b_ok(b, fn)) return NULL;
  if (dim < 0 || dim >= TIRX_BUILDER_MAX_RANK) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: dim is %d, expected 0 to %d", fn, dim,
                 TIRX_BUILDER_MAX_RANK - 1);
    return NULL;
  }
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_SPECIAL, TIRX__SP_ELEM_INDEX, TIRX_I32, NULL,
                                  NULL, NULL);
  if (!e) return NULL;
  e->i = dim;
  e->host = false;
  return e;
}

tirx_expr *tirx_lane_id(tirx_builder *b) { return special(b, "tirx_lane_id", TIRX__SP_LANE, 0); }
tirx_expr *tirx_warp_id(tirx_builder *b) { return special(b, "tirx_warp_id", TIRX__SP_WARP, 0); }

/* ---- type rules ---- */

static int int_rank(int t) { return t == TIRX_I64 ? 3 : t == TIRX_U32 ? 2 : 1; }

static const char *dn(int t) { return tirx_dtype_name((tirx_dtype)t); }

/* The common type of x and y for arithmetic, or TIRX_DTYPE_COUNT with an error recorded. */
static int unify(tirx_builder *b, const char *fn, const tirx_expr *x, const tirx_expr *y) {
  if (x->dtype == y->dtype && !(x->weak && y->weak)) {
    if (tirx__dtype_is_int(x->dtype) && int_rank(x->dtype) == 1) return TIRX_I32;
    return x->dtype;
  }
  if (x->weak && y->weak) return TIRX_I64;
  const tirx_expr *w = x->weak ? x : y->weak ? y : NULL;
  const tirx_expr *o = w == x ? y : x;
  if (w && o->dtype != TIRX_BOOL) {
    if (tirx__dtype_is_float(o->dtype)) return o->dtype;
    int t = int_rank(o->dtype) == 1 ? TIRX_I32 : o->dtype;
    return int_fits(w->i, t) ? t : TIRX_I64;
  }
  if (tirx__dtype_is_int(x->dtype) && tirx__dtype_is_int(y->dtype)) {
    int r = int_rank(x->dtype) > int_rank(y->dtype) ? int_rank(x->dtype) : int_rank(y->dtype);
    return r == 3 ? TIRX_I64 : r == 2 ? TIRX_U32 : TIRX_I32;
  }
  tirx__b_fail(b, TIRX_E_TYPE, "%s: y has dtype %s, expected %s (the dtype of x)", fn,
               dn(y->dtype), dn(x->dtype));
  return TIRX_DTYPE_COUNT;
}

static bool two(tirx_builder *b, const char *fn, tirx_expr *x, tirx_expr *y) {
  return tirx__b_ok(b, fn) && tirx__b_expr(b, fn, x, "x") && tirx__b_expr(b, fn, y, "y");
}

static bool fold(int op, int64_t x, int64_t y, int64_t *out) {
  switch (op) {
  case TIRX__OP_ADD: return tirx__add_ok(x, y, out);
  case TIRX__OP_SUB: return !__builtin_sub_overflow(x, y, out);
  case TIRX__OP_MUL: return tirx__mul_ok(x, y, out);
  case TIRX__OP_MIN: *out = x < y ? x : y; return true;
  case TIRX__OP_MAX: *out = x > y ? x : y; return true;
  default: return false;
  }
}

static int64_t int_min(int t) { return t == TIRX_I64 ? INT64_MIN : INT32_MIN; }

/*
 * Rejects constant operands whose C++ meaning is undefined in type t (the operands' common
 * type), as a constant division by zero is: a shift count outside 0..width-1, INT_MIN / -1
 * and INT_MIN % -1, and signed overflow of +, -, * or ceildiv's x + y - 1 between two
 * constants. Unsigned (u32) arithmetic wraps, which C++ defines, and is left alone.
 */
static bool const_defined(tirx_builder *b, const char *fn, int op, const tirx_expr *x,
                          const tirx_expr *y, int t) {
  if (!tirx__dtype_is_int(t)) return true;
  bool xc = x->kind == TIRX__EX_INT, yc = y->kind == TIRX__EX_INT;
  bool sgn = t == TIRX_I32 || t == TIRX_I64;
  if ((op == TIRX__OP_SHL || op == TIRX__OP_SHR) && yc) {
    int width = t == TIRX_I64 ? 64 : 32;
    if (y->i < 0 || y->i >= width) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG,
                   "%s: y is the constant %lld, outside 0 to %d for %s (shift count out of "
                   "range)",
                   fn, (long long)y->i, width - 1, dn(t));
      return false;
    }
    return true;
  }
  if (!sgn) return true;
  if ((op == TIRX__OP_DIV || op == TIRX__OP_MOD || op == TIRX__OP_CEILDIV) && xc && yc &&
      x->i == int_min(t) && y->i == -1) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: x is the constant %lld and y the constant -1 (the quotient overflows %s)",
                 fn, (long long)x->i, dn(t));
    return false;
  }
  if (!xc || !yc) return true;
  int64_t r;
  bool ok;
  const char *sym;
  switch (op) {
  case TIRX__OP_ADD: ok = tirx__add_ok(x->i, y->i, &r); sym = "x + y"; break;
  case TIRX__OP_SUB: ok = !__builtin_sub_overflow(x->i, y->i, &r); sym = "x - y"; break;
  case TIRX__OP_MUL: ok = tirx__mul_ok(x->i, y->i, &r); sym = "x * y"; break;
  case TIRX__OP_CEILDIV: /* emitted as ((x + y - 1) / y) */
    ok = !__builtin_sub_overflow(y->i, 1, &r) && int_fits(r, t) && tirx__add_ok(x->i, r, &r);
    sym = "x + y - 1";
    break;
  default: return true;
  }
  if (ok && int_fits(r, t)) return true;
  tirx__b_fail(b, TIRX_E_INVALID_ARG,
               "%s: the constants x = %lld and y = %lld overflow %s in %s (signed overflow)",
               fn, (long long)x->i, (long long)y->i, dn(t), sym);
  return false;
}

/* Arithmetic and bitwise: operands of one numeric type. kinds: 0 any numeric, 1 integer,
 * 2 float. */
static tirx_expr *arith(tirx_builder *b, const char *fn, int op, tirx_expr *x, tirx_expr *y,
                        int kinds) {
  if (!two(b, fn, x, y)) return NULL;
  static const char *const names[2] = {"x", "y"};
  tirx_expr *v[2] = {x, y};
  for (int i = 0; i < 2; i++) {
    int t = v[i]->dtype;
    bool ok = kinds == 1 ? tirx__dtype_is_int(t)
              : kinds == 2 ? tirx__dtype_is_float(t)
                           : (tirx__dtype_is_int(t) || tirx__dtype_is_float(t));
    if (!ok) {
      tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected %s", fn, names[i], dn(t),
                   kinds == 1   ? "an integer"
                   : kinds == 2 ? "a floating-point type"
                                : "a number");
      return NULL;
    }
  }
  int t = unify(b, fn, x, y);
  if (t == TIRX_DTYPE_COUNT) return NULL;
  bool weak = x->weak && y->weak;
  if ((op == TIRX__OP_DIV || op == TIRX__OP_MOD || op == TIRX__OP_CEILDIV) &&
      y->kind == TIRX__EX_INT && y->i == 0) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: y is the constant 0 (division by zero)", fn);
    return NULL;
  }
  if (!const_defined(b, fn, op, x, y, t)) return NULL;
  if (x->kind == TIRX__EX_INT && y->kind == TIRX__EX_INT && tirx__dtype_is_int(t)) {
    int64_t r;
    if (fold(op, x->i, y->i, &r) && int_fits(r, t)) {
      tirx_expr *e = tirx__b_const(b, fn, r, (tirx_dtype)t);
      if (e) e->weak = weak;
      return e;
    }
  }
  x = tirx__b_convert(b, fn, x, (tirx_dtype)t);
  y = tirx__b_convert(b, fn, y, (tirx_dtype)t);
  if (!x || !y) return NULL;
  return tirx__b_expr_new(b, fn, TIRX__EX_BINARY, op, (tirx_dtype)t, x, y, NULL);
}

tirx_expr *tirx_add(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_add", TIRX__OP_ADD, x, y, 0);
}
tirx_expr *tirx_sub(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_sub", TIRX__OP_SUB, x, y, 0);
}
tirx_expr *tirx_mul(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_mul", TIRX__OP_MUL, x, y, 0);
}
tirx_expr *tirx_div(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_div", TIRX__OP_DIV, x, y, 0);
}
tirx_expr *tirx_mod(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_mod", TIRX__OP_MOD, x, y, 1);
}
tirx_expr *tirx_min(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_min", TIRX__OP_MIN, x, y, 0);
}
tirx_expr *tirx_max(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_max", TIRX__OP_MAX, x, y, 0);
}
tirx_expr *tirx_ceildiv(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_ceildiv", TIRX__OP_CEILDIV, x, y, 1);
}
tirx_expr *tirx_bit_and(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_bit_and", TIRX__OP_BAND, x, y, 1);
}
tirx_expr *tirx_bit_or(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_bit_or", TIRX__OP_BOR, x, y, 1);
}
tirx_expr *tirx_bit_xor(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_bit_xor", TIRX__OP_BXOR, x, y, 1);
}
tirx_expr *tirx_shl(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_shl", TIRX__OP_SHL, x, y, 1);
}
tirx_expr *tirx_shr(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_shr", TIRX__OP_SHR, x, y, 1);
}
tirx_expr *tirx_pow(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return arith(b, "tirx_pow", TIRX__OP_POW, x, y, 2);
}

tirx_expr *tirx_neg(tirx_builder *b, tirx_expr *x) {
  static const char fn[] = "tirx_neg";
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, x, "x")) return NULL;
  if (!tirx__dtype_is_int(x->dtype) && !tirx__dtype_is_float(x->dtype)) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: x has dtype %s, expected a number", fn, dn(x->dtype));
    return NULL;
  }
  if (x->kind == TIRX__EX_INT && x->i != INT64_MIN) {
    tirx_expr *e = tirx__b_const(b, fn, -x->i, (tirx_dtype)x->dtype);
    if (e) e->weak = x->weak;
    if (e && !x->weak && !int_fits(-x->i, x->dtype)) e = NULL; /* fall through below */
    if (e) return e;
  }
  int t = tirx__dtype_is_int(x->dtype) && int_rank(x->dtype) == 1 ? TIRX_I32 : x->dtype;
  x = tirx__b_convert(b, fn, x, (tirx_dtype)t);
  if (!x) return NULL;
  return tirx__b_expr_new(b, fn, TIRX__EX_UNARY, TIRX__OP_NEG, (tirx_dtype)t, x, NULL, NULL);
}

static tirx_expr *compare(tirx_builder *b, const char *fn, int op, tirx_expr *x, tirx_expr *y) {
  if (!two(b, fn, x, y)) return NULL;
  int t;
  if (x->dtype == TIRX_BOOL || y->dtype == TIRX_BOOL) {
    if (x->dtype != y->dtype || (op != TIRX__OP_EQ && op != TIRX__OP_NE)) {
      if (x->dtype != y->dtype)
        tirx__b_fail(b, TIRX_E_TYPE, "%s: y has dtype %s, expected %s (the dtype of x)", fn,
                     dn(y->dtype), dn(x->dtype));
      else
        tirx__b_fail(b, TIRX_E_TYPE, "%s: x has dtype bool, expected a number", fn);
      return NULL;
    }
    t = TIRX_BOOL;
  } else {
    t = unify(b, fn, x, y);
    if (t == TIRX_DTYPE_COUNT) return NULL;
  }
  x = tirx__b_convert(b, fn, x, (tirx_dtype)t);
  y = tirx__b_convert(b, fn, y, (tirx_dtype)t);
  if (!x || !y) return NULL;
  return tirx__b_expr_new(b, fn, TIRX__EX_BINARY, op, TIRX_BOOL, x, y, NULL);
}

tirx_expr *tirx_eq(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return compare(b, "tirx_eq", TIRX__OP_EQ, x, y);
}
tirx_expr *tirx_ne(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return compare(b, "tirx_ne", TIRX__OP_NE, x, y);
}
tirx_expr *tirx_lt(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return compare(b, "tirx_lt", TIRX__OP_LT, x, y);
}
tirx_expr *tirx_le(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return compare(b, "tirx_le", TIRX__OP_LE, x, y);
}
tirx_expr *tirx_gt(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return compare(b, "tirx_gt", TIRX__OP_GT, x, y);
}
tirx_expr *tirx_ge(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return compare(b, "tirx_ge", TIRX__OP_GE, x, y);
}

static bool want_bool(tirx_builder *b, const char *fn, const tirx_expr *x, const char *arg) {
  if (x->dtype != TIRX_BOOL) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected bool", fn, arg, dn(x->dtype));
    return false;
  }
  return true;
}

static tirx_expr *logical(tirx_builder *b, const char *fn, int op, tirx_expr *x, tirx_expr *y) {
  if (!two(b, fn, x, y) || !want_bool(b, fn, x, "x") || !want_bool(b, fn, y, "y")) return NULL;
  return tirx__b_expr_new(b, fn, TIRX__EX_BINARY, op, TIRX_BOOL, x, y, NULL);
}

tirx_expr *tirx_and(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return logical(b, "tirx_and", TIRX__OP_AND, x, y);
}
tirx_expr *tirx_or(tirx_builder *b, tirx_expr *x, tirx_expr *y) {
  return logical(b, "tirx_or", TIRX__OP_OR, x, y);
}
tirx_expr *tirx_not(tirx_builder *b, tirx_expr *x) {
  static const char fn[] = "tirx_not";
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, x, "x") || !want_bool(b, fn, x, "x"))
    return NULL;
  return tirx__b_expr_new(b, fn, TIRX__EX_UNARY, TIRX__OP_NOT, TIRX_BOOL, x, NULL, NULL);
}

tirx_expr *tirx_select(tirx_builder *b, tirx_expr *cond, tirx_expr *x, tirx_expr *y) {
  static const char fn[] = "tirx_select";
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, cond, "cond") || !two(b, fn, x, y) ||
      !want_bool(b, fn, cond, "cond"))
    return NULL;
  int t = x->dtype;
  if (x->dtype == TIRX_BOOL || y->dtype == TIRX_BOOL) {
    if (x->dtype != y->dtype) {
      tirx__b_fail(b, TIRX_E_TYPE, "%s: y has dtype %s, expected %s (the dtype of x)", fn,
                   dn(y->dtype), dn(x->dtype));
      return NULL;
    }
  } else {
    t = unify(b, fn, x, y);
    if (t == TIRX_DTYPE_COUNT) return NULL;
  }
  x = tirx__b_convert(b, fn, x, (tirx_dtype)t);
  y = tirx__b_convert(b, fn, y, (tirx_dtype)t);
  if (!x || !y) return NULL;
  return tirx__b_expr_new(b, fn, TIRX__EX_SELECT, 0, (tirx_dtype)t, cond, x, y);
}

tirx_expr *tirx_cast(tirx_builder *b, tirx_expr *x, tirx_dtype dtype) {
  static const char fn[] = "tirx_cast";
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, x, "x") || !tirx__b_dtype(b, fn, dtype, "dtype"))
    return NULL;
  if (x->kind == TIRX__EX_INT && tirx__dtype_is_int(dtype) && int_fits(x->i, dtype))
    return tirx__b_const(b, fn, x->i, dtype);
  if (x->dtype == dtype && !x->weak) return x;
  return tirx__b_expr_new(b, fn, TIRX__EX_CAST, 0, dtype, x, NULL, NULL);
}

/* ---- math ---- */

/* tirx_math and its named forms (tirx_exp, ...), whose messages name the function called. */
static tirx_expr *math_in(tirx_builder *b, const char *fn, tirx_math_op op, tirx_expr *x) {
  if (!tirx__b_ok(b, fn)) return NULL;
  if ((int)op < 0 || op >= TIRX_MATH_COUNT) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: op is %d, not a tirx_math_op", fn, (int)op);
    return NULL;
  }
  if (!tirx__b_expr(b, fn, x, "x")) return NULL;
  if (!tirx__dtype_is_float(x->dtype)) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: x has dtype %s, expected a floating-point type (%s)", fn,
                 dn(x->dtype), tirx__math_name(op));
    return NULL;
  }
  return tirx__b_expr_new(b, fn, TIRX__EX_MATH, op, (tirx_dtype)x->dtype, x, NULL, NULL);
}

tirx_expr *tirx_math(tirx_builder *b, tirx_math_op op, tirx_expr *x) {
  return math_in(b, "tirx_math", op, x);
}

tirx_expr *tirx_exp(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_exp", TIRX_MATH_EXP, x);
}
tirx_expr *tirx_exp2(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_exp2", TIRX_MATH_EXP2, x);
}
tirx_expr *tirx_log(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_log", TIRX_MATH_LOG, x);
}
tirx_expr *tirx_log2(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_log2", TIRX_MATH_LOG2, x);
}
tirx_expr *tirx_sqrt(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_sqrt", TIRX_MATH_SQRT, x);
}
tirx_expr *tirx_rsqrt(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_rsqrt", TIRX_MATH_RSQRT, x);
}
tirx_expr *tirx_tanh(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_tanh", TIRX_MATH_TANH, x);
}
tirx_expr *tirx_erf(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_erf", TIRX_MATH_ERF, x);
}
tirx_expr *tirx_fabs(tirx_builder *b, tirx_expr *x) {
  return math_in(b, "tirx_fabs", TIRX_MATH_FABS, x);
}

/* ---- memory and warps ---- */

/* Checks an index list against t; returns a copy in the arena. */
tirx_expr **tirx__b_index_list(tirx_builder *b, const char *fn, tirx_tensor *t, int n,
                              tirx_expr *const *index) {
  if (!tirx__b_tensor(b, fn, t, "t")) return NULL;
  if (n != t->rank) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %d indices, expected %d (the rank of %s)", fn, n,
                 t->rank, t->decl.name);
    return NULL;
  }
  if (!index) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: index is NULL", fn);
    return NULL;
  }
  tirx_expr **copy = tirx__arena_array(b->arena, (size_t)n, sizeof *copy, fn);
  if (!copy) {
    tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  char arg[32];
  for (int k = 0; k < n; k++) {
    snprintf(arg, sizeof arg, "index[%d]", k);
    if (!tirx__b_expr(b, fn, index[k], arg)) return NULL;
    if (!tirx__dtype_is_int(index[k]->dtype)) {
      tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected an integer", fn, arg,
                   dn(index[k]->dtype));
      return NULL;
    }
    copy[k] = index[k]->weak ? tirx__b_convert(b, fn, index[k], TIRX_I32) : index[k];
    if (index[k]->weak && !int_fits(index[k]->i, TIRX_I32))
      copy[k] = tirx__b_convert(b, fn, index[k], TIRX_I64);
    if (!copy[k]) return NULL;
    /* A constant index into a constant dimension is checked here: it would address memory
     * outside the tensor whatever the launch (and codegen folds it into the offset). */
    const tirx_expr *dim = t->shape[k];
    if (copy[k]->kind == TIRX__EX_INT && dim && dim->kind == TIRX__EX_INT &&
        (copy[k]->i < 0 || copy[k]->i >= dim->i)) {
      tirx__b_fail(b, TIRX_E_OUT_OF_RANGE,
                   "%s: %s is %lld, out of range for dimension %d of %s (extent %lld)", fn, arg,
                   (long long)copy[k]->i, k, t->decl.name, (long long)dim->i);
      return NULL;
    }
  }
  return copy;
}

tirx_expr *tirx_load(tirx_builder *b, tirx_tensor *t, int n, tirx_expr *const *index) {
  static const char fn[] = "tirx_load";
  if (!tirx__b_ok(b, fn)) return NULL;
  tirx_expr **idx = tirx__b_index_list(b, fn, t, n, index);
  if (!idx) return NULL;
  uint32_t depth = 0;
  uint64_t size = 1;
  for (int k = 0; k < n; k++) {
    if (idx[k]->depth > depth) depth = idx[k]->depth;
    size += idx[k]->size;
  }
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_LOAD, 0, (tirx_dtype)t->dtype, NULL, NULL, NULL);
  if (!e) return NULL;
  if (depth + 1 > TIRX_BUILDER_MAX_EXPR_DEPTH || size > TIRX_BUILDER_MAX_EXPR_SIZE) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: the expression is too large", fn);
    return NULL;
  }
  e->depth = (uint16_t)(depth + 1);
  e->size = (uint32_t)size;
  e->host = false;
  e->tensor = t;
  e->index = idx;
  return e;
}

static tirx_expr *shfl(tirx_builder *b, const char *fn, int op, tirx_expr *x, tirx_expr *y,
                       const char *yname) {
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, x, "x") || !tirx__b_expr(b, fn, y, yname))
    return NULL;
  if (x->dtype != TIRX_F32 && x->dtype != TIRX_F64 && x->dtype != TIRX_I32 &&
      x->dtype != TIRX_U32 && x->dtype != TIRX_I64) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: x has dtype %s, expected f32, f64, i32, u32 or i64", fn,
                 dn(x->dtype));
    return NULL;
  }
  if (!tirx__dtype_is_int(y->dtype)) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected an integer", fn, yname,
                 dn(y->dtype));
    return NULL;
  }
  if (x->weak) x = tirx__b_convert(b, fn, x, TIRX_I32);
  y = tirx__b_convert(b, fn, y, TIRX_I32);
  if (!x || !y) return NULL;
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_SHFL, op, (tirx_dtype)x->dtype, x, y, NULL);
  if (e) e->host = false;
  return e;
}

tirx_expr *tirx_shfl_xor(tirx_builder *b, tirx_expr *x, tirx_expr *mask) {
  return shfl(b, "tirx_shfl_xor", 0, x, mask, "mask");
}
tirx_expr *tirx_shfl_down(tirx_builder *b, tirx_expr *x, tirx_expr *delta) {
  return shfl(b, "tirx_shfl_down", 1, x, delta, "delta");
}
