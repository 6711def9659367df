/*
 * Misuse of builder calls that tools/fuzz_api found reported under another function's name, or
 * read out of bounds: each asserts the status and the exact message of the function called.
 * No kernel is built (tirx_builder_error carries the first error).
 */
#include "../helpers.h"

static tirx_builder *B, *O;
static void setup(void) {
  tirx_clear_error();
  B = tirx_builder_create("k");
  O = tirx_builder_create("other");
  tirx_set_block(B, 128, 1, 1);
  tirx_set_block(O, 128, 1, 1);
}
static void teardown(void) {
  tirx_builder_destroy(B);
  tirx_builder_destroy(O);
}
TestSuite(misuse, .init = setup, .fini = teardown);

#define expect_first(st, msg)                                                                \
  do {                                                                                       \
    cr_assert_eq(tirx_builder_status(B), (st), "status %s, expected %s (%s)",               \
                 tirx_status_name(tirx_builder_status(B)), tirx_status_name(st),            \
                 tirx_builder_error(B));                                                     \
    cr_assert_str_eq(tirx_builder_error(B), (msg));                                          \
    cr_assert_str_eq(tirx_last_error(), (msg));                                              \
  } while (0)

static tirx_region *smem(tirx_builder *b, const char *name) {
  return tirx_whole(b, tirx_alloc_shared(b, name, TIRX_F32, TIRX_DIMS(16, 16), NULL));
}

/* tirx_unary, _binary and _ternary name themselves and their arguments a, x, y (they named
 * tirx_map and srcs[i]). */
Test(misuse, fixed_arity_maps_name_themselves) {
  tirx_region *d = smem(B, "d");
  tirx_unary(B, NULL, TIRX_OP_EXP, d, NULL);
  expect_first(TIRX_E_NULL_ARG, "tirx_unary: dst is NULL");
}
Test(misuse, binary_names_its_second_source) {
  tirx_region *d = smem(B, "d");
  tirx_binary(B, d, TIRX_OP_ADD, d, smem(O, "s"), NULL);
  expect_first(TIRX_E_INVALID_ARG, "tirx_binary: x belongs to another builder");
}
Test(misuse, ternary_names_its_arity) {
  tirx_region *d = smem(B, "d");
  tirx_ternary(B, d, TIRX_OP_ADD, d, d, d, NULL);
  expect_first(TIRX_E_INVALID_ARG, "tirx_ternary: op add takes 2 sources, got 3");
}
Test(misuse, unary_on_a_null_builder) {
  tirx_clear_error();
  tirx_unary(NULL, NULL, TIRX_OP_EXP, NULL, NULL);
  cr_assert_str_eq(tirx_last_error(), "tirx_unary: b is NULL");
}

/* tirx_exp and its siblings name themselves (they named tirx_math). */
Test(misuse, math_forms_name_themselves) {
  cr_assert_null(tirx_sqrt(B, tirx_int_typed(B, 4, TIRX_I32)));
  expect_first(TIRX_E_TYPE, "tirx_sqrt: x has dtype i32, expected a floating-point type (sqrt)");
}
Test(misuse, math_forms_on_a_null_builder) {
  tirx_clear_error();
  cr_assert_null(tirx_exp(NULL, NULL));
  cr_assert_str_eq(tirx_last_error(), "tirx_exp: b is NULL");
}

/* Ring calls check their own arguments (they failed inside tirx_region_new, tirx_alloc_mbarrier,
 * tirx_mbarrier_init or tirx_mbarrier_expect_tx, under those names). */
Test(misuse, ring_of_another_builder) {
  tirx_ring *r = tirx_ring_new(O, "r", 2, 1, 1);
  cr_assert_null(tirx_ring_full(B, r, tirx_int(B, 0)));
  expect_first(TIRX_E_INVALID_ARG, "tirx_ring_full: ring belongs to another builder");
}
Test(misuse, ring_stage_out_of_range) {
  tirx_ring *r = tirx_ring_new(B, "r", 2, 1, 1);
  tirx_ring_release(B, r, tirx_int(B, 2));
  expect_first(TIRX_E_OUT_OF_RANGE,
               "tirx_ring_release: stage is 2, expected 0 to 1 (the ring's stages less one)");
}
Test(misuse, ring_stage_of_the_wrong_dtype) {
  tirx_ring *r = tirx_ring_new(B, "r", 2, 1, 1);
  tirx_ring_wait(B, r, tirx_float(B, 1, TIRX_F32), tirx_int(B, 0));
  expect_first(TIRX_E_TYPE, "tirx_ring_wait: stage has dtype f32, expected an integer");
}
Test(misuse, ring_counter_of_the_wrong_dtype) {
  tirx_ring *r = tirx_ring_new(B, "r", 2, 1, 1);
  cr_assert_null(tirx_ring_stage(B, r, tirx_float(B, 1, TIRX_F32)));
  expect_first(TIRX_E_TYPE, "tirx_ring_stage: n has dtype f32, expected an integer");
}
Test(misuse, ring_acquire_bytes_out_of_range) {
  tirx_ring *r = tirx_ring_new(B, "r", 2, 1, 1);
  tirx_ring_acquire(B, r, tirx_int(B, 0), tirx_int(B, 0), tirx_int(B, -24));
  expect_first(TIRX_E_INVALID_ARG, "tirx_ring_acquire: bytes is -24, expected 0 to 1048575");
}
Test(misuse, ring_name_too_long_for_its_barriers) {
  const char *name = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"; /* 58 */
  cr_assert_null(tirx_ring_new(B, name, 2, 1, 1));
  expect_first(TIRX_E_INVALID_ARG,
               "tirx_ring_new: name \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" "
               "is too long: at most 57 characters (the ring's barriers are name_full and "
               "name_empty)");
}
Test(misuse, ring_barrier_names_taken) {
  cr_assert_not_null(tirx_ring_new(B, "r", 2, 1, 1));
  cr_assert_null(tirx_ring_new(B, "r", 2, 1, 1));
  expect_first(TIRX_E_INVALID_ARG, "tirx_ring_new: a shared tensor named \"r_full\" already exists");
}
Test(misuse, ring_arrivals_past_an_mbarrier_count) {
  cr_assert_null(tirx_ring_new(B, "r", 2, (int64_t)1 << 31, 1));
  expect_first(TIRX_E_INVALID_ARG,
               "tirx_ring_new: producers and consumers are 2147483648 and 1, expected 1 to "
               "1048575 (the arrivals that complete a stage's full and empty barrier)");
}

/* An element index past z prints its number (the printer read "xyz"[dim] out of bounds; found
 * by tools/fuzz_api under UBSan, through tirx_set_shared_bytes' message). */
Test(misuse, elem_index_past_z_prints_its_dim) {
  tirx_set_shared_bytes(B, tirx_elem_index(B, 5));
  cr_assert_eq(tirx_builder_status(B), TIRX_E_INVALID_ARG, "%s", tirx_builder_error(B));
  cr_assert(strstr(tirx_builder_error(B), "elem_index.5") != NULL, "%s", tirx_builder_error(B));
}

/* A counter deep enough that the ring's own arithmetic passes the depth limit is refused naming
 * the ring call (it failed as tirx_bit_xor, which the caller never called). */
Test(misuse, ring_counter_too_deep_for_the_rings_arithmetic) {
  tirx_ring *r = tirx_ring_new(B, "r", 2, 1, 1);
  tirx_expr *n = tirx_param_int(B, "n", TIRX_I32);
  for (int i = 0; i < 253; i++) n = tirx_add(B, n, tirx_int(B, 1));
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
  cr_assert_null(tirx_ring_phase(B, r, n, true));
  expect_first(TIRX_E_LIMIT, "tirx_ring_phase: n is nested 254 deep with 507 nodes: the ring's "
               "arithmetic on it would pass 256 deep or 65536 nodes");
}

/* A region whose constant begin plus extent overflows int64 says so without computing the sum
 * (the message's [begin, begin + extent) overflowed: UBSan, found by tools/fuzz_api). */
Test(misuse, region_end_past_int64) {
  tirx_tensor *s = tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(16, 16), NULL);
  cr_assert_null(tirx_region_new(B, s, TIRX_EXPRS(tirx_int(B, 5), tirx_int(B, 0)),
                                 (int64_t[]){INT64_MAX, 1}));
  expect_first(TIRX_E_OUT_OF_RANGE, "tirx_region_new: region dim 0 begins at 5 with extent "
               "9223372036854775807: it exceeds the extent of s");
}
