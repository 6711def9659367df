/* The divisor analysis of dispatch (tirx__known_divisor, src/dispatch/lower_driver.c): what a
 * region's begin is known to be a multiple of. */
#include "../helpers.h"
#include "dispatch/lower.h"

static tirx_builder *B;
static void setup(void) { B = tirx_builder_create("div"); }
static void teardown(void) { tirx_builder_destroy(B); }
TestSuite(divisor, .init = setup, .fini = teardown);

static tirx_expr *I(int64_t v) { return tirx_int(B, v); }
static tirx_expr *bx(void) { return tirx_block_idx(B, 0); }

#define DIV(e, want)                                                                               \
  do {                                                                                             \
    tirx_expr *e_ = (e);                                                                           \
    cr_assert_not_null(e_, "%s", tirx_last_error());                                               \
    cr_expect_eq(tirx__known_divisor(e_), (want), "%s: %lld, expected %lld", #e,                    \
                 (long long)tirx__known_divisor(e_), (long long)(want));                          \
  } while (0)

Test(divisor, constants) {
  DIV(I(48), 48);
  DIV(I(-12), 12);
  DIV(I(0), 0);
  DIV(tirx_int_typed(B, INT64_MIN, TIRX_I64), INT64_C(1) << 62);
}

Test(divisor, sums_and_products) {
  DIV(tirx_mul(B, bx(), I(64)), 64);
  DIV(tirx_add(B, tirx_mul(B, bx(), I(64)), I(32)), 32);
  DIV(tirx_sub(B, tirx_mul(B, bx(), I(6)), tirx_mul(B, bx(), I(4))), 2);
  DIV(tirx_mul(B, tirx_mul(B, bx(), I(8)), I(5)), 40);
  DIV(tirx_mul(B, bx(), I(0)), 0);
  DIV(tirx_add(B, bx(), I(0)), 1);
}

/* What the two former analyses disagreed on. */
Test(divisor, large_and_odd_divisors_are_exact) {
  /* Region layouts capped divisors at 2^20 (gcd 2^20: the factor 3 lost). */
  DIV(tirx_mul(B, bx(), I(3 << 21)), 3 << 21);
  DIV(tirx_mul(B, bx(), I(5000 * 300)), 5000 * 300);
  /* TMA's analysis said 1 for these. */
  DIV(tirx_neg(B, tirx_mul(B, bx(), I(96))), 96);
  DIV(tirx_shl(B, tirx_mul(B, bx(), I(3)), I(4)), 48);
  DIV(tirx_shl(B, tirx_mul(B, bx(), I(8)), tirx_thread_idx(B, 0)), 8);
  /* An overflowing product of divisors: the larger factor still divides. */
  tirx_expr *big = tirx_mul(B, tirx_cast(B, bx(), TIRX_I64), tirx_int_typed(B, INT64_C(1) << 40, TIRX_I64));
  DIV(tirx_mul(B, big, tirx_int_typed(B, INT64_C(3) << 40, TIRX_I64)), INT64_C(3) << 40);
}

Test(divisor, unknown_values) {
  DIV(tirx_let(B, "i", tirx_mul(B, bx(), I(64))), 1); /* a let hides its value */
  DIV(tirx_param_int(B, "n", TIRX_I32), 1);
  DIV(tirx_div(B, tirx_mul(B, bx(), I(64)), I(2)), 1);
  DIV(tirx_cast(B, tirx_mul(B, bx(), I(64)), TIRX_I64), 64);
}
