/* src/builder: every validation error, with its status and exact message; the sticky error. */
#include "../helpers.h"

void tirx__arena_fail_after(int64_t n); /* src/core/internal.h */

static tirx_builder *B;
static void setup(void) {
  tirx_clear_error();
  B = tirx_builder_create("k");
  cr_assert_not_null(B);
}
static void teardown(void) { tirx_builder_destroy(B); }
TestSuite(builder, .init = setup, .fini = teardown);

/* The builder holds the first error with msg; tirx_kernel_build reports it. */
#define expect_sticky(b, st, msg)                                                            \
  do {                                                                                       \
    cr_assert_eq(tirx_builder_status(b), (st), "status %s, expected %s (%s)",               \
                 tirx_status_name(tirx_builder_status(b)), tirx_status_name(st),            \
                 tirx_builder_error(b));                                                     \
    cr_assert_str_eq(tirx_builder_error(b), (msg));                                          \
    tirx_kernel *k_ = (tirx_kernel *)&k_;                                                    \
    tirx_clear_error();                                                                      \
    cr_assert_eq(tirx_kernel_build(b, &k_), (st));                                           \
    cr_assert_null(k_);                                                                      \
    cr_assert_str_eq(tirx_last_error(), (msg));                                              \
  } while (0)

static tirx_expr *I(int64_t v) { return tirx_int(B, v); }

/* A valid vector kernel's pieces. */
static tirx_expr *n;
static tirx_tensor *x, *y;
static void vec(void) {
  n = tirx_param_int(B, "n", TIRX_I64);
  x = tirx_param_tensor(B, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  y = tirx_param_tensor(B, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(B, 128, 1, 1);
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
}

Test(builder, valid_kernel_builds) {
  vec();
  tirx_expr *i = tirx_thread_idx(B, 0);
  tirx_store(B, y, TIRX_EXPRS(i), tirx_load(B, x, TIRX_EXPRS(i)));
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(B, &k), TIRX_OK, "%s", tirx_builder_error(B));
  cr_assert_str_eq(tirx_kernel_name(k), "k");
  cr_assert_eq(tirx_kernel_num_params(k), 3);
  cr_assert_str_eq(tirx_kernel_param_name(k, 1), "x");
  cr_assert_null(tirx_kernel_param_name(k, 3));
  cr_assert_eq(tirx_kernel_retain(k), k);
  tirx_kernel_release(k);
  tirx_builder_destroy(B); /* the kernel outlives the builder */
  B = NULL;
  cr_assert_not_null(strstr(tirx_kernel_source(k), "k("));
  tirx_kernel_release(k);
  cr_assert_str_eq(tirx_builder_error(NULL), "tirx_builder_error: b is NULL");
  cr_assert_eq(tirx_builder_status(NULL), TIRX_E_NULL_ARG);
}

/* ---- NULLs and foreign objects ---- */

Test(builder, null_builder) {
  expect_null(tirx_add(NULL, NULL, NULL), TIRX_E_NULL_ARG, "tirx_add: b is NULL");
  expect_null(tirx_param_int(NULL, "n", TIRX_I64), TIRX_E_NULL_ARG, "tirx_param_int: b is NULL");
  expect_null(tirx_builder_arena(NULL), TIRX_E_NULL_ARG, "tirx_builder_arena: b is NULL");
  tirx_kernel *k = NULL;
  expect_error(tirx_kernel_build(NULL, &k), TIRX_E_NULL_ARG, "tirx_kernel_build: b is NULL");
  tirx_clear_error();
  tirx_store(NULL, NULL, 0, NULL, NULL);
  cr_assert_str_eq(tirx_last_error(), "tirx_store: b is NULL");
  tirx_for_end(NULL);
  tirx_if_end(NULL);
  tirx_builder_destroy(NULL);
  tirx_kernel_release(NULL);
  cr_assert_null(tirx_kernel_retain(NULL));
  cr_assert_null(tirx_kernel_source(NULL));
}

Test(builder, build_null_out) {
  /* Recorded like any argument error: the builder's first error when it has none. */
  expect_error(tirx_kernel_build(B, NULL), TIRX_E_NULL_ARG, "tirx_kernel_build: out is NULL");
  expect_sticky(B, TIRX_E_NULL_ARG, "tirx_kernel_build: out is NULL");
}

Test(builder, build_null_out_keeps_the_first_error) {
  tirx_thread_idx(B, 7);
  expect_error(tirx_kernel_build(B, NULL), TIRX_E_NULL_ARG, "tirx_kernel_build: out is NULL");
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_thread_idx: dim is 7, expected 0, 1 or 2");
}

Test(builder, null_expr) {
  tirx_add(B, I(1), NULL);
  expect_sticky(B, TIRX_E_NULL_ARG, "tirx_add: y is NULL");
}

Test(builder, expr_from_another_builder) {
  tirx_builder *other = tirx_builder_create("other");
  tirx_expr *e = tirx_int(other, 1);
  tirx_mul(B, e, I(2));
  tirx_builder_destroy(other);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_mul: x belongs to another builder");
}

Test(builder, tensor_from_another_builder) {
  tirx_builder *other = tirx_builder_create("other");
  tirx_tensor *t = tirx_alloc_shared(other, "s", TIRX_F32, TIRX_DIMS(4), NULL);
  tirx_load(B, t, TIRX_EXPRS(I(0)));
  tirx_builder_destroy(other);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_load: t belongs to another builder");
}

Test(builder, null_tensor) {
  tirx_store(B, NULL, TIRX_EXPRS(I(0)), I(1));
  expect_sticky(B, TIRX_E_NULL_ARG, "tirx_store: t is NULL");
}

/* ---- names ---- */

Test(builder, bad_kernel_name) {
  tirx_builder *b = tirx_builder_create("1abc");
  expect_sticky(b, TIRX_E_INVALID_ARG,
                "tirx_builder_create: name \"1abc\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*, "
                "at most 63 characters)");
  tirx_builder_destroy(b);
  b = tirx_builder_create(NULL);
  expect_sticky(b, TIRX_E_NULL_ARG, "tirx_builder_create: name is NULL");
  tirx_builder_destroy(b);
}

Test(builder, reserved_kernel_names) {
  tirx_builder *b = tirx_builder_create("tirx_add");
  expect_sticky(b, TIRX_E_INVALID_ARG,
                "tirx_builder_create: name \"tirx_add\" uses the reserved prefix tirx_");
  tirx_builder_destroy(b);
  b = tirx_builder_create("TIRX_SPEC_n");
  expect_sticky(b, TIRX_E_INVALID_ARG,
                "tirx_builder_create: name \"TIRX_SPEC_n\" uses the reserved prefix TIRX_");
  tirx_builder_destroy(b);
  b = tirx_builder_create("float");
  expect_sticky(b, TIRX_E_INVALID_ARG, "tirx_builder_create: name \"float\" is reserved in CUDA C++");
  tirx_builder_destroy(b);
  /* The entry point cannot be renamed: reserved identifiers and NVRTC's macros are refused. */
  static const char *const macros[] = {"NULL",           "__CUDA_ARCH__", "__LINE__",
                                       "__cplusplus",    "__CUDACC__",    "__restrict__",
                                       "__noinline__",   "__host__",      "_Bool",
                                       "CUDART_VERSION", "NV_IS_HOST",    "cudaStreamLegacy",
                                       "assert",         "va_arg",        "fmodf",
                                       "_",              "printf",        "dim3",
                                       "size_t"};
  for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++) {
    char msg[128];
    snprintf(msg, sizeof msg, "tirx_builder_create: name \"%s\" is reserved in CUDA C++",
             macros[i]);
    b = tirx_builder_create(macros[i]);
    expect_sticky(b, TIRX_E_INVALID_ARG, msg);
    tirx_builder_destroy(b);
  }
  /* Near misses are fine. */
  static const char *const fine[] = {"_x", "x__y", "cuda_kernel", "NULLx", "CUx", "nv_x"};
  for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
    b = tirx_builder_create(fine[i]);
    cr_assert_eq(tirx_builder_status(b), TIRX_OK, "%s: %s", fine[i], tirx_builder_error(b));
    tirx_builder_destroy(b);
  }
}

Test(builder, long_name) {
  char name[80];
  memset(name, 'a', 64);
  name[64] = '\0';
  tirx_param_int(B, name, TIRX_I32);
  char msg[256];
  snprintf(msg, sizeof msg,
           "tirx_param_int: name \"%s\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 "
           "characters)",
           name);
  expect_sticky(B, TIRX_E_INVALID_ARG, msg);
}

Test(builder, duplicate_param) {
  tirx_param_int(B, "n", TIRX_I64);
  tirx_param_scalar(B, "n", TIRX_F32);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_param_scalar: a parameter named \"n\" already exists");
}

/* ---- dtypes ---- */

Test(builder, param_int_dtype) {
  tirx_param_int(B, "n", TIRX_F32);
  expect_sticky(B, TIRX_E_TYPE, "tirx_param_int: dtype is f32, expected i32 or i64");
}

Test(builder, param_int_bad_enum) {
  tirx_param_int(B, "n", (tirx_dtype)99);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_param_int: dtype is 99, expected i32 or i64");
}

Test(builder, param_scalar_dtype) {
  tirx_param_scalar(B, "a", TIRX_F16);
  expect_sticky(B, TIRX_E_TYPE, "tirx_param_scalar: dtype is f16, expected f32, f64, i32 or i64");
}

Test(builder, fp8_rejected) {
  tirx_param_tensor(B, "x", TIRX_FP8_E4M3, TIRX_EXPRS(I(4)), NULL);
  expect_sticky(B, TIRX_E_NOT_SUPPORTED, "tirx_param_tensor: dtype fp8_e4m3 is not supported yet");
}

Test(builder, tensor_bad_dtype_enum) {
  tirx_alloc_local(B, "v", (tirx_dtype)-1, TIRX_DIMS(4), NULL);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_alloc_local: dtype is -1, not a tirx_dtype");
}

/* ---- tensors ---- */

Test(builder, tensor_rank) {
  tirx_param_tensor(B, "x", TIRX_F32, 0, NULL, NULL);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_param_tensor: rank is 0, expected 1 to 8");
}

Test(builder, tensor_shape_null) {
  tirx_param_tensor(B, "x", TIRX_F32, 2, NULL, NULL);
  expect_sticky(B, TIRX_E_NULL_ARG, "tirx_param_tensor: shape is NULL");
}

Test(builder, tensor_shape_not_host) {
  tirx_param_tensor(B, "x", TIRX_F32, TIRX_EXPRS(I(4), tirx_thread_idx(B, 0)), NULL);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_param_tensor: shape[1] (thread_idx.x) is not computable at launch: use "
                "constants, integer parameters and arithmetic on them");
}

Test(builder, tensor_shape_float) {
  tirx_param_tensor(B, "x", TIRX_F32, TIRX_EXPRS(tirx_float(B, 4.0, TIRX_F32)), NULL);
  expect_sticky(B, TIRX_E_TYPE, "tirx_param_tensor: shape[0] has dtype f32, expected an integer");
}

Test(builder, tensor_shape_negative) {
  tirx_param_tensor(B, "x", TIRX_F32, TIRX_EXPRS(I(-3)), NULL);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_param_tensor: shape[0] is -3, expected >= 0");
}

Test(builder, layout_needs_constant_shape) {
  tirx_expr *m = tirx_param_int(B, "m", TIRX_I32);
  tirx_layout *l = tirx_layout_parse(tirx_builder_arena(B), "(8):(1)");
  tirx_param_tensor(B, "x", TIRX_F32, TIRX_EXPRS(m), l);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_param_tensor: shape[0] (m) is not a constant: a tensor with a layout needs "
                "a constant shape");
}

Test(builder, layout_size_mismatch) {
  tirx_layout *l = tirx_layout_parse(tirx_builder_arena(B), "(8,4):(4,1)");
  tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(8, 8), l);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_alloc_shared: layout has size 32, expected 64 (the product of the shape)");
}

Test(builder, shared_layout_thread_axis) {
  tirx_layout *l = tirx_layout_parse(tirx_builder_arena(B), "(32,4):(1@laneid,1)");
  tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(32, 4), l);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_alloc_shared: layout has an iter on laneid: a shared tensor is addressed on "
                "m only");
}

Test(builder, shared_layout_replica) {
  tirx_layout *l = tirx_layout_parse(tirx_builder_arena(B), "(8):(1)+[2:1@warpid]");
  tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(8), l);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_alloc_shared: layout has a replica on warpid: a shared tensor needs a "
                "single-valued layout");
}

Test(builder, local_swizzle_rejected) {
  tirx_arena *a = tirx_builder_arena(B);
  tirx_layout *l = tirx_layout_swizzle(a, tirx_layout_row_major(a, 2, (int64_t[]){8, 64}), 128, 2);
  tirx_alloc_local(B, "v", TIRX_F16, TIRX_DIMS(8, 64), l);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_alloc_local: layout is swizzled: only shared tensors may be");
}

Test(builder, alloc_shape) {
  tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(4, 0), NULL);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_alloc_shared: shape[1] is 0, expected >= 1");
}

Test(builder, shared_limit) {
  tirx_alloc_shared(B, "a", TIRX_F32, TIRX_DIMS(32768), NULL);
  tirx_alloc_shared(B, "b", TIRX_F32, TIRX_DIMS(32768), NULL);
  expect_sticky(B, TIRX_E_LIMIT, "tirx_alloc_shared: shared memory would be 262144 bytes, limit 232448");
}

Test(builder, local_limit) {
  tirx_alloc_local(B, "v", TIRX_F64, TIRX_DIMS(4096), NULL);
  expect_sticky(B, TIRX_E_LIMIT, "tirx_alloc_local: local array \"v\" is 32768 bytes, limit 16384");
}

Test(builder, tensor_dim_out_of_range) {
  vec();
  cr_assert_eq(tirx_tensor_dim(B, x, 0), n);
  tirx_tensor_dim(B, x, 1);
  expect_sticky(B, TIRX_E_OUT_OF_RANGE, "tirx_tensor_dim: dim is 1, expected 0 to 0 (the rank of x)");
}

/* ---- expression types ---- */

Test(builder, add_float_to_int) {
  tirx_add(B, tirx_thread_idx(B, 0), tirx_float(B, 1.0, TIRX_F32));
  expect_sticky(B, TIRX_E_TYPE, "tirx_add: y has dtype f32, expected i32 (the dtype of x)");
}

Test(builder, add_f16_to_f32) {
  tirx_expr *a = tirx_param_scalar(B, "a", TIRX_F32);
  tirx_sub(B, a, tirx_float(B, 1.0, TIRX_F16));
  expect_sticky(B, TIRX_E_TYPE, "tirx_sub: y has dtype f16, expected f32 (the dtype of x)");
}

Test(builder, add_bool) {
  tirx_add(B, tirx_bool(B, true), I(1));
  expect_sticky(B, TIRX_E_TYPE, "tirx_add: x has dtype bool, expected a number");
}

Test(builder, mod_float) {
  tirx_mod(B, tirx_float(B, 1.0, TIRX_F32), tirx_float(B, 2.0, TIRX_F32));
  expect_sticky(B, TIRX_E_TYPE, "tirx_mod: x has dtype f32, expected an integer");
}

Test(builder, divide_by_constant_zero) {
  tirx_div(B, tirx_thread_idx(B, 0), I(0));
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_div: y is the constant 0 (division by zero)");
}

/* Constant operands whose C++ meaning is undefined are rejected like a constant division by
 * zero (NVRTC would only warn and the kernel would compute garbage). */
Test(builder, shift_count_64) {
  tirx_shl(B, tirx_param_int(B, "a", TIRX_I64), I(64));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_shl: y is the constant 64, outside 0 to 63 for i64 (shift count out of range)");
}

Test(builder, shift_count_negative) {
  tirx_shl(B, tirx_thread_idx(B, 0), I(-1));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_shl: y is the constant -1, outside 0 to 31 for i32 (shift count out of range)");
}

Test(builder, shift_count_32_of_i32) {
  tirx_shr(B, tirx_thread_idx(B, 0), tirx_int_typed(B, 32, TIRX_I32));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_shr: y is the constant 32, outside 0 to 31 for i32 (shift count out of range)");
}

Test(builder, shift_count_32_of_u32) {
  tirx_shl(B, tirx_cast(B, tirx_thread_idx(B, 0), TIRX_U32), tirx_int_typed(B, 32, TIRX_U32));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_shl: y is the constant 32, outside 0 to 31 for u32 (shift count out of range)");
}

Test(builder, int64_min_div_minus_one) {
  tirx_div(B, I(INT64_MIN), I(-1));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_div: x is the constant -9223372036854775808 and y the constant -1 (the "
                "quotient overflows i64)");
}

Test(builder, int64_min_mod_minus_one) {
  tirx_mod(B, I(INT64_MIN), I(-1));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_mod: x is the constant -9223372036854775808 and y the constant -1 (the "
                "quotient overflows i64)");
}

Test(builder, int32_min_div_minus_one) {
  tirx_div(B, tirx_int_typed(B, INT32_MIN, TIRX_I32), tirx_int_typed(B, -1, TIRX_I32));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_div: x is the constant -2147483648 and y the constant -1 (the quotient "
                "overflows i32)");
}

Test(builder, constant_mul_overflow) {
  tirx_mul(B, I(INT64_MAX / 2 + 1), I(2));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_mul: the constants x = 4611686018427387904 and y = 2 overflow i64 in x * y "
                "(signed overflow)");
}

Test(builder, constant_add_overflow) {
  tirx_add(B, I(INT64_MAX), I(1));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_add: the constants x = 9223372036854775807 and y = 1 overflow i64 in x + y "
                "(signed overflow)");
}

Test(builder, constant_sub_overflow) {
  tirx_sub(B, I(INT64_MIN), I(1));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_sub: the constants x = -9223372036854775808 and y = 1 overflow i64 in x - y "
                "(signed overflow)");
}

Test(builder, constant_i32_add_overflow) {
  tirx_add(B, tirx_int_typed(B, INT32_MAX, TIRX_I32), tirx_int_typed(B, 1, TIRX_I32));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_add: the constants x = 2147483647 and y = 1 overflow i32 in x + y (signed "
                "overflow)");
}

Test(builder, constant_ceildiv_overflow) {
  tirx_ceildiv(B, I(INT64_MAX), I(2));
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_ceildiv: the constants x = 9223372036854775807 and y = 2 overflow i64 in x "
                "+ y - 1 (signed overflow)");
}

/* The defined neighbours still build: the widest shifts, u32 wrap-around, a runtime operand. */
Test(builder, defined_constant_operands_accepted) {
  tirx_expr *a = tirx_param_int(B, "a", TIRX_I64);
  tirx_expr *u = tirx_cast(B, tirx_thread_idx(B, 0), TIRX_U32);
  cr_assert_not_null(tirx_shl(B, a, I(63)));
  cr_assert_not_null(tirx_shr(B, tirx_thread_idx(B, 0), I(31)));
  cr_assert_not_null(tirx_shl(B, u, I(0)));
  cr_assert_not_null(tirx_sub(B, tirx_int_typed(B, 0, TIRX_U32), tirx_int_typed(B, 1, TIRX_U32)));
  cr_assert_not_null(tirx_mul(B, tirx_int_typed(B, 65536, TIRX_U32),
                              tirx_int_typed(B, 65536, TIRX_U32)));
  cr_assert_not_null(tirx_div(B, a, I(-1)));
  cr_assert_not_null(tirx_div(B, I(INT64_MIN), I(1)));
  cr_assert_not_null(tirx_mod(B, I(INT64_MIN + 1), I(-1)));
  cr_assert_not_null(tirx_add(B, I(INT64_MAX - 1), I(1)));
  cr_assert_not_null(tirx_ceildiv(B, I(INT64_MAX - 1), I(2)));
  cr_assert_not_null(tirx_shl(B, a, u)); /* a runtime count is the caller's business */
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
}

Test(builder, compare_bool_with_int) {
  tirx_eq(B, tirx_bool(B, true), I(1));
  expect_sticky(B, TIRX_E_TYPE, "tirx_eq: y has dtype i64, expected bool (the dtype of x)");
}

Test(builder, logical_needs_bool) {
  tirx_and(B, tirx_bool(B, true), tirx_thread_idx(B, 0));
  expect_sticky(B, TIRX_E_TYPE, "tirx_and: y has dtype i32, expected bool");
}

Test(builder, select_cond) {
  tirx_select(B, I(1), I(2), I(3));
  expect_sticky(B, TIRX_E_TYPE, "tirx_select: cond has dtype i64, expected bool");
}

Test(builder, math_on_int) {
  tirx_exp(B, tirx_thread_idx(B, 0));
  expect_sticky(B, TIRX_E_TYPE, "tirx_exp: x has dtype i32, expected a floating-point type (exp)");
}

Test(builder, math_bad_op) {
  tirx_math(B, (tirx_math_op)77, tirx_float(B, 1.0, TIRX_F32));
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_math: op is 77, not a tirx_math_op");
}

Test(builder, special_dim) {
  tirx_block_idx(B, 3);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_block_idx: dim is 3, expected 0, 1 or 2");
}

Test(builder, int_typed_range) {
  tirx_int_typed(B, 300, TIRX_U8);
  expect_sticky(B, TIRX_E_OUT_OF_RANGE, "tirx_int_typed: v is 300, out of range for u8");
}

Test(builder, float_dtype) {
  tirx_float(B, 1.0, TIRX_I32);
  expect_sticky(B, TIRX_E_TYPE, "tirx_float: dtype is i32, expected f32, f64, f16 or bf16");
}

Test(builder, shfl_f16) {
  tirx_shfl_xor(B, tirx_float(B, 1.0, TIRX_F16), I(1));
  expect_sticky(B, TIRX_E_TYPE, "tirx_shfl_xor: x has dtype f16, expected f32, f64, i32, u32 or i64");
}

Test(builder, weak_constants_adapt) {
  tirx_expr *t = tirx_thread_idx(B, 0);
  cr_assert_eq(tirx_builder_status(B), TIRX_OK);
  tirx_expr *e = tirx_add(B, t, I(5));             /* i32 */
  tirx_expr *f = tirx_mul(B, tirx_float(B, 2.0, TIRX_F16), I(3)); /* f16 */
  tirx_expr *g = tirx_add(B, t, I((int64_t)1 << 40)); /* too big for i32: i64 */
  cr_assert_not_null(e);
  cr_assert_not_null(f);
  cr_assert_not_null(g);
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
}

/* ---- loads and stores ---- */

Test(builder, load_index_count) {
  vec();
  tirx_load(B, x, TIRX_EXPRS(I(0), I(1)));
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_load: 2 indices, expected 1 (the rank of x)");
}

Test(builder, load_index_null) {
  vec();
  tirx_load(B, x, 1, NULL);
  expect_sticky(B, TIRX_E_NULL_ARG, "tirx_load: index is NULL");
}

Test(builder, load_index_float) {
  vec();
  tirx_load(B, x, TIRX_EXPRS(tirx_float(B, 0.0, TIRX_F32)));
  expect_sticky(B, TIRX_E_TYPE, "tirx_load: index[0] has dtype f32, expected an integer");
}

Test(builder, store_needs_cast) {
  vec();
  tirx_store(B, y, TIRX_EXPRS(I(0)), tirx_float(B, 1.0, TIRX_F16));
  expect_sticky(B, TIRX_E_TYPE, "tirx_store: value has dtype f16, expected f32 (the dtype of y)");
}

Test(builder, store_cast_ok) {
  vec();
  tirx_store(B, y, TIRX_EXPRS(I(0)), tirx_cast(B, tirx_float(B, 1.0, TIRX_F16), TIRX_F32));
  tirx_store(B, y, TIRX_EXPRS(I(1)), I(7)); /* a weak constant adapts */
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
}

Test(builder, store_index_count) {
  vec();
  tirx_store(B, y, 0, NULL, I(0));
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_store: 0 indices, expected 1 (the rank of y)");
}

Test(builder, atomic_add_dtype) {
  tirx_tensor *h = tirx_param_tensor(B, "h", TIRX_F16, TIRX_EXPRS(I(4)), NULL);
  tirx_atomic_add(B, h, TIRX_EXPRS(I(0)), tirx_float(B, 1.0, TIRX_F16));
  expect_sticky(B, TIRX_E_TYPE, "tirx_atomic_add: h has dtype f16, expected f32, f64, i32, u32 or i64");
}

Test(builder, atomic_add_local) {
  tirx_tensor *v = tirx_alloc_local(B, "v", TIRX_F32, TIRX_DIMS(4), NULL);
  tirx_atomic_add(B, v, TIRX_EXPRS(I(0)), tirx_float(B, 1.0, TIRX_F32));
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_atomic_add: v is a local tensor, expected global or shared");
}

/* ---- statements and structure ---- */

Test(builder, if_cond_not_bool) {
  tirx_if_begin(B, tirx_thread_idx(B, 0));
  expect_sticky(B, TIRX_E_TYPE, "tirx_if_begin: cond has dtype i32, expected bool");
}

Test(builder, for_bounds_float) {
  tirx_for_begin(B, "i", I(0), tirx_float(B, 4.0, TIRX_F32), NULL, TIRX_LOOP_SERIAL);
  expect_sticky(B, TIRX_E_TYPE, "tirx_for_begin: hi has dtype f32, expected an integer");
}

Test(builder, for_step_zero) {
  tirx_for_begin(B, "i", I(0), I(4), I(0), TIRX_LOOP_SERIAL);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_for_begin: step is 0, expected > 0");
}

Test(builder, for_bad_kind) {
  tirx_for_begin(B, "i", I(0), I(4), NULL, (tirx_loop_kind)5);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_for_begin: kind is 5, not a tirx_loop_kind");
}

Test(builder, for_end_without_begin) {
  tirx_for_end(B);
  expect_sticky(B, TIRX_E_BUILD, "tirx_for_end: no open tirx_for_begin");
}

Test(builder, for_end_closes_if) {
  tirx_if_begin(B, tirx_bool(B, true));
  tirx_for_end(B);
  expect_sticky(B, TIRX_E_BUILD, "tirx_for_end: the innermost open block is a tirx_if_begin");
}

Test(builder, if_end_closes_for) {
  tirx_for_begin(B, "i", I(0), I(4), NULL, TIRX_LOOP_SERIAL);
  tirx_if_end(B);
  expect_sticky(B, TIRX_E_BUILD, "tirx_if_end: the innermost open block is a tirx_for_begin");
}

Test(builder, else_twice) {
  tirx_if_begin(B, tirx_bool(B, true));
  tirx_else(B);
  tirx_else(B);
  expect_sticky(B, TIRX_E_BUILD, "tirx_else: the innermost if already has an else");
}

Test(builder, else_without_if) {
  tirx_else(B);
  expect_sticky(B, TIRX_E_BUILD, "tirx_else: no open tirx_if_begin");
}

Test(builder, unclosed_for) {
  tirx_set_block(B, 32, 1, 1);
  tirx_for_begin(B, "row", I(0), I(4), NULL, TIRX_LOOP_SERIAL);
  tirx_kernel *k = NULL;
  expect_error(tirx_kernel_build(B, &k), TIRX_E_BUILD,
               "tirx_kernel_build: tirx_for_begin (row) is not closed by tirx_for_end");
  cr_assert_null(k);
  cr_assert_str_eq(tirx_builder_error(B),
                   "tirx_kernel_build: tirx_for_begin (row) is not closed by tirx_for_end");
}

Test(builder, unclosed_if) {
  tirx_set_block(B, 32, 1, 1);
  tirx_if_begin(B, tirx_bool(B, true));
  tirx_kernel *k = NULL;
  expect_error(tirx_kernel_build(B, &k), TIRX_E_BUILD,
               "tirx_kernel_build: tirx_if_begin is not closed by tirx_if_end");
}

Test(builder, block_not_set) {
  tirx_kernel *k = NULL;
  expect_error(tirx_kernel_build(B, &k), TIRX_E_BUILD,
               "tirx_kernel_build: the block size is not set (call tirx_set_block)");
}

Test(builder, loop_var_out_of_scope) {
  vec();
  tirx_expr *i = tirx_for_begin(B, "i", I(0), n, NULL, TIRX_LOOP_SERIAL);
  tirx_for_end(B);
  tirx_store(B, y, TIRX_EXPRS(i), tirx_float(B, 0.0, TIRX_F32));
  tirx_kernel *k = NULL;
  expect_error(tirx_kernel_build(B, &k), TIRX_E_BUILD,
               "tirx_kernel_build: variable \"i\" (from tirx_for_begin) is used outside its scope");
}

Test(builder, let_out_of_scope) {
  vec();
  tirx_if_begin(B, tirx_lt(B, tirx_thread_idx(B, 0), n));
  tirx_expr *v = tirx_let(B, "v", tirx_load(B, x, TIRX_EXPRS(I(0))));
  tirx_if_end(B);
  tirx_store(B, y, TIRX_EXPRS(I(0)), v);
  tirx_kernel *k = NULL;
  expect_error(tirx_kernel_build(B, &k), TIRX_E_BUILD,
               "tirx_kernel_build: variable \"v\" (from tirx_let) is used outside its scope");
}

Test(builder, local_out_of_scope) {
  vec();
  tirx_for_begin(B, "i", I(0), I(2), NULL, TIRX_LOOP_SERIAL);
  tirx_tensor *v = tirx_alloc_local(B, "v", TIRX_F32, TIRX_DIMS(4), NULL);
  tirx_for_end(B);
  tirx_store(B, v, TIRX_EXPRS(I(0)), tirx_float(B, 0.0, TIRX_F32));
  tirx_kernel *k = NULL;
  expect_error(tirx_kernel_build(B, &k), TIRX_E_BUILD,
               "tirx_kernel_build: tensor \"v\" (from tirx_alloc_local) is used outside its scope");
}

Test(builder, assign_to_let) {
  tirx_expr *v = tirx_let(B, "v", I(1));
  tirx_assign(B, v, I(2));
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_assign: var is not a variable from tirx_var");
}

Test(builder, assign_type) {
  tirx_expr *v = tirx_var(B, "acc", TIRX_F32, NULL);
  tirx_assign(B, v, tirx_thread_idx(B, 0));
  expect_sticky(B, TIRX_E_TYPE, "tirx_assign: value has dtype i32, expected f32 (the dtype of var)");
}

Test(builder, var_init_type) {
  tirx_var(B, "acc", TIRX_I32, tirx_float(B, 0.0, TIRX_F64));
  expect_sticky(B, TIRX_E_TYPE, "tirx_var: init has dtype f64, expected i32 (the variable's dtype)");
}

/* ---- launch configuration ---- */

Test(builder, block_dims) {
  tirx_set_block(B, 0, 1, 1);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_set_block: x is 0, expected 1 to 1024");
}

Test(builder, block_product) {
  tirx_set_block(B, 64, 32, 1);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_set_block: 64 x 32 x 1 threads, expected at most 1024");
}

Test(builder, block_cannot_change_under_statements) {
  vec();
  tirx_expr *i = tirx_thread_idx(B, 0);
  tirx_store(B, y, TIRX_EXPRS(i), tirx_load(B, x, TIRX_EXPRS(i)));
  tirx_set_block(B, 64, 1, 1); /* plain statements do not depend on the block */
  tirx_set_block(B, 128, 1, 1);
  tirx_fence_proxy_async(B); /* a native statement */
  tirx_set_block(B, 128, 1, 1); /* the same block: fine */
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
  tirx_set_block(B, 1000, 1, 1);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_set_block: the block is already 128 x 1 x 1 and tile primitives or native "
                "statements were built for it, expected the same block (set it before them)");
}

Test(builder, block_may_change_before_statements) {
  vec();
  tirx_set_block(B, 256, 1, 1);
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
}

Test(builder, min_blocks_is_a_launch_bound) {
  vec();
  tirx_set_min_blocks(B, 6);
  tirx_expr *i = tirx_thread_idx(B, 0);
  tirx_store(B, y, TIRX_EXPRS(i), tirx_load(B, x, TIRX_EXPRS(i)));
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(B, &k), TIRX_OK, "%s", tirx_builder_error(B));
  cr_assert_not_null(strstr(tirx_kernel_source(k), "void __launch_bounds__(128, 6) k("), "%s",
                     tirx_kernel_source(k));
  tirx_kernel_release(k);
}

Test(builder, min_blocks_range) {
  tirx_set_min_blocks(B, 0);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_set_min_blocks: n is 0, expected 1 to 32 CTAs per SM");
}

Test(builder, min_blocks_range_high) {
  tirx_set_min_blocks(B, 33);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_set_min_blocks: n is 33, expected 1 to 32 CTAs per SM");
}

Test(builder, min_blocks_beyond_an_sms_threads) {
  vec();
  tirx_set_block(B, 1024, 1, 1);
  tirx_set_min_blocks(B, 3);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(B, &k), TIRX_E_BUILD);
  cr_assert_null(k);
  cr_assert_str_eq(tirx_builder_error(B),
                   "tirx_kernel_build: tirx_set_min_blocks asks for 3 CTAs of 1024 threads on one "
                   "SM, expected at most 2048 threads");
}

Test(builder, min_blocks_with_setmaxnreg) {
  vec();
  tirx_set_min_blocks(B, 2);
  tirx_setmaxnreg(B, 232, true);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(B, &k), TIRX_E_BUILD);
  cr_assert_null(k);
  cr_assert_str_eq(tirx_builder_error(B),
                   "tirx_kernel_build: tirx_set_min_blocks(2) with tirx_setmaxnreg: setmaxnreg "
                   "needs one CTA per SM (expected n = 1)");
}

Test(builder, grid_not_host) {
  tirx_set_grid(B, I(4), tirx_block_dim(B, 0), NULL);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_set_grid: y (block_dim.x) is not computable at launch: use constants, "
                "integer parameters and arithmetic on them");
}

Test(builder, shared_bytes_float) {
  tirx_set_shared_bytes(B, tirx_float(B, 1.0, TIRX_F64));
  expect_sticky(B, TIRX_E_TYPE, "tirx_set_shared_bytes: bytes has dtype f64, expected an integer");
}

/* ---- limits ---- */

Test(builder, expression_depth) {
  tirx_expr *e = tirx_thread_idx(B, 0);
  for (int i = 0; i < 300 && e; i++) e = tirx_add(B, e, tirx_thread_idx(B, 1));
  cr_assert_null(e);
  expect_sticky(B, TIRX_E_LIMIT, "tirx_add: the expression is nested more than 256 deep");
}

Test(builder, expression_size) {
  /* A DAG that doubles as a tree: 2^17 nodes after 17 steps. */
  tirx_expr *e = tirx_thread_idx(B, 0);
  for (int i = 0; i < 20 && e; i++) e = tirx_add(B, e, e);
  cr_assert_null(e);
  expect_sticky(B, TIRX_E_LIMIT, "tirx_add: the expression has more than 65536 nodes");
}

Test(builder, nesting) {
  for (int i = 0; i < 70; i++) tirx_if_begin(B, tirx_bool(B, true));
  expect_sticky(B, TIRX_E_LIMIT, "tirx_if_begin: more than 64 nested blocks");
}

Test(builder, too_many_params) {
  char name[16];
  for (int i = 0; i < 65; i++) {
    snprintf(name, sizeof name, "p%d", i);
    tirx_param_int(B, name, TIRX_I32);
  }
  expect_sticky(B, TIRX_E_LIMIT, "tirx_param_int: the kernel has more than 64 parameters");
}

Test(builder, out_of_memory) {
  tirx__arena_fail_after(0);
  cr_assert_null(tirx_thread_idx(B, 0));
  tirx__arena_fail_after(-1);
  expect_sticky(B, TIRX_E_NO_MEMORY, "tirx_thread_idx: out of memory");
}

/* ---- the first error sticks ---- */

Test(builder, first_error_sticks) {
  tirx_expr *a = tirx_thread_idx(B, 0);
  tirx_add(B, a, tirx_float(B, 1.0, TIRX_F32));
  cr_assert_null(tirx_int(B, 1));
  cr_assert_null(tirx_param_int(B, "n", TIRX_I64));
  tirx_if_begin(B, NULL);
  tirx_for_end(B); /* would be an error of its own */
  tirx_set_block(B, 0, 0, 0);
  expect_sticky(B, TIRX_E_TYPE, "tirx_add: y has dtype f32, expected i32 (the dtype of x)");
}

/* ---- specialisation policies ---- */

Test(builder, policy_defaults_and_query) {
  tirx_expr *m = tirx_param_int(B, "m", TIRX_I32);
  tirx_expr *nn = tirx_param_int(B, "n", TIRX_I64);
  tirx_expr *ld = tirx_param_int(B, "ld", TIRX_I64);
  tirx_param_scalar(B, "s", TIRX_I32);
  tirx_tensor *t = tirx_param_tensor(B, "t", TIRX_F32, TIRX_EXPRS(m, nn), NULL);
  cr_assert_eq(tirx_param_set_policy(B, nn, TIRX_SPECIALIZE_VALUE), TIRX_OK);
  cr_assert_eq(tirx_param_set_policy(B, ld, TIRX_SPECIALIZE_DYNAMIC), TIRX_OK);
  tirx_set_block(B, 32, 1, 1);
  tirx_store(B, t, TIRX_EXPRS(I(0), I(0)), tirx_float(B, 1.0, TIRX_F32));
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(B, &k), TIRX_OK, "%s", tirx_builder_error(B));
  cr_assert_eq(tirx_kernel_param_policy(k, 0), TIRX_SPECIALIZE_DIV16); /* the default */
  cr_assert_eq(tirx_kernel_param_policy(k, 1), TIRX_SPECIALIZE_VALUE);
  cr_assert_eq(tirx_kernel_param_policy(k, 2), TIRX_SPECIALIZE_DYNAMIC);
  cr_assert_eq(tirx_kernel_param_policy(k, 3), TIRX_SPECIALIZE_DYNAMIC); /* a scalar */
  cr_assert_eq(tirx_kernel_param_policy(k, 4), TIRX_SPECIALIZE_DYNAMIC); /* a tensor */
  cr_assert_eq(tirx_kernel_param_policy(k, 5), TIRX_SPECIALIZE_DYNAMIC);
  cr_assert_eq(tirx_kernel_param_policy(k, -1), TIRX_SPECIALIZE_DYNAMIC);
  cr_assert_eq(tirx_kernel_param_policy(NULL, 0), TIRX_SPECIALIZE_DYNAMIC);
  /* Setting a policy again replaces it; the builder stays usable after a build. */
  cr_assert_eq(tirx_param_set_policy(B, nn, TIRX_SPECIALIZE_DIV16), TIRX_OK);
  tirx_kernel *k2 = NULL;
  cr_assert_eq(tirx_kernel_build(B, &k2), TIRX_OK, "%s", tirx_builder_error(B));
  cr_assert_eq(tirx_kernel_param_policy(k2, 1), TIRX_SPECIALIZE_DIV16);
  cr_assert_eq(tirx_kernel_param_policy(k, 1), TIRX_SPECIALIZE_VALUE); /* k is frozen */
  tirx_kernel_release(k);
  tirx_kernel_release(k2);
}

Test(builder, policy_null_builder) {
  tirx_clear_error();
  cr_assert_eq(tirx_param_set_policy(NULL, NULL, TIRX_SPECIALIZE_VALUE), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_param_set_policy: b is NULL");
}

Test(builder, policy_null_param) {
  cr_assert_eq(tirx_param_set_policy(B, NULL, TIRX_SPECIALIZE_VALUE), TIRX_E_NULL_ARG);
  expect_sticky(B, TIRX_E_NULL_ARG, "tirx_param_set_policy: param is NULL");
}

Test(builder, policy_param_from_another_builder) {
  tirx_builder *other = tirx_builder_create("other");
  tirx_expr *m = tirx_param_int(other, "m", TIRX_I32);
  cr_assert_eq(tirx_param_set_policy(B, m, TIRX_SPECIALIZE_VALUE), TIRX_E_INVALID_ARG);
  tirx_builder_destroy(other);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_param_set_policy: param belongs to another builder");
}

Test(builder, policy_on_a_scalar) {
  tirx_expr *s = tirx_param_scalar(B, "s", TIRX_I32);
  cr_assert_eq(tirx_param_set_policy(B, s, TIRX_SPECIALIZE_VALUE), TIRX_E_INVALID_ARG);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_param_set_policy: param (s) is not an integer parameter (from "
                "tirx_param_int)");
}

Test(builder, policy_on_an_expression) {
  tirx_expr *m = tirx_param_int(B, "m", TIRX_I32);
  tirx_param_set_policy(B, tirx_add(B, m, I(1)), TIRX_SPECIALIZE_VALUE);
  expect_sticky(B, TIRX_E_INVALID_ARG,
                "tirx_param_set_policy: param (m + 1) is not an integer parameter (from "
                "tirx_param_int)");
}

Test(builder, policy_out_of_the_enum) {
  tirx_expr *m = tirx_param_int(B, "m", TIRX_I32);
  cr_assert_eq(tirx_param_set_policy(B, m, (tirx_specialize)3), TIRX_E_INVALID_ARG);
  expect_sticky(B, TIRX_E_INVALID_ARG, "tirx_param_set_policy: policy is 3, not a tirx_specialize");
}

Test(builder, policy_after_an_error_does_nothing) {
  tirx_expr *m = tirx_param_int(B, "m", TIRX_I32);
  tirx_thread_idx(B, 7);
  cr_assert_eq(tirx_param_set_policy(B, m, TIRX_SPECIALIZE_VALUE), TIRX_E_INVALID_ARG);
  cr_assert_eq(tirx_param_set_policy(B, NULL, (tirx_specialize)9), TIRX_E_INVALID_ARG);
  cr_assert_not_null(strstr(tirx_builder_error(B), "tirx_thread_idx"));
}

Test(builder, policy_limit) {
  /* The first 16 integer parameters default to DIV16, later ones to DYNAMIC. */
  tirx_expr *p[20];
  char name[16];
  for (int i = 0; i < 20; i++) {
    snprintf(name, sizeof name, "p%d", i);
    p[i] = tirx_param_int(B, name, TIRX_I32);
  }
  tirx_set_block(B, 32, 1, 1);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(B, &k), TIRX_OK, "%s", tirx_builder_error(B));
  for (int i = 0; i < 20; i++)
    cr_assert_eq(tirx_kernel_param_policy(k, i),
                 i < TIRX_BUILDER_MAX_SPECIALIZED ? TIRX_SPECIALIZE_DIV16
                                                  : TIRX_SPECIALIZE_DYNAMIC);
  tirx_kernel_release(k);
  /* Re-setting a specialised one is fine; freeing a place makes room for another. */
  cr_assert_eq(tirx_param_set_policy(B, p[3], TIRX_SPECIALIZE_VALUE), TIRX_OK);
  cr_assert_eq(tirx_param_set_policy(B, p[17], TIRX_SPECIALIZE_DYNAMIC), TIRX_OK);
  cr_assert_eq(tirx_param_set_policy(B, p[0], TIRX_SPECIALIZE_DYNAMIC), TIRX_OK);
  cr_assert_eq(tirx_param_set_policy(B, p[18], TIRX_SPECIALIZE_VALUE), TIRX_OK);
  cr_assert_eq(tirx_param_set_policy(B, p[19], TIRX_SPECIALIZE_DIV16), TIRX_E_LIMIT);
  expect_sticky(B, TIRX_E_LIMIT,
                "tirx_param_set_policy: p19 would be the 17th specialised parameter, limit 16 "
                "(set another to TIRX_SPECIALIZE_DYNAMIC first)");
}

/* ---- fuzz_builder regressions (tests/fuzz/corpus/builder/builder_*) ---- */

/* builder_const_index_fold_overflow: a constant index out of a constant dimension is refused
 * where it is given (codegen used to fold 2^62 * 8 into the offset and overflow). */
Test(builder, const_index_out_of_range_load) {
  tirx_tensor *s = tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(8, 8), NULL);
  tirx_load(B, s, TIRX_EXPRS(I((int64_t)1 << 62), I(0)));
  expect_sticky(B, TIRX_E_OUT_OF_RANGE,
                "tirx_load: index[0] is 4611686018427387904, out of range for dimension 0 of s "
                "(extent 8)");
}

Test(builder, const_index_out_of_range_store) {
  tirx_tensor *s = tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(8, 8), NULL);
  tirx_store(B, s, TIRX_EXPRS(I(7), I(-1)), tirx_float(B, 1.0, TIRX_F32));
  expect_sticky(B, TIRX_E_OUT_OF_RANGE,
                "tirx_store: index[1] is -1, out of range for dimension 1 of s (extent 8)");
}

Test(builder, const_index_out_of_range_atomic_local_and_global) {
  tirx_tensor *l = tirx_alloc_local(B, "l", TIRX_I32, TIRX_DIMS(4), NULL);
  tirx_load(B, l, TIRX_EXPRS(tirx_int_typed(B, 3, TIRX_U8)));
  tirx_tensor *g = tirx_param_tensor(B, "g", TIRX_I32, TIRX_EXPRS(I(16)), NULL);
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
  tirx_atomic_add(B, g, TIRX_EXPRS(I(16)), I(1));
  expect_sticky(B, TIRX_E_OUT_OF_RANGE,
                "tirx_atomic_add: index[0] is 16, out of range for dimension 0 of g (extent 16)");
}

Test(builder, const_index_in_range_and_symbolic_dims) {
  vec(); /* x and y have the symbolic shape (n): constant indices are not checked there */
  tirx_tensor *s = tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(8, 8), NULL);
  tirx_store(B, s, TIRX_EXPRS(I(7), I(0)), tirx_load(B, x, TIRX_EXPRS(I((int64_t)1 << 40))));
  tirx_store(B, y, TIRX_EXPRS(I(-1)), tirx_load(B, s, TIRX_EXPRS(I(0), I(7))));
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(B, &k), TIRX_OK, "%s", tirx_builder_error(B));
  cr_assert_not_null(strstr(tirx_kernel_source(k), "  s[56] = x[1099511627776LL];\n"), "%s",
                     tirx_kernel_source(k));
  cr_assert_not_null(strstr(tirx_kernel_source(k), "  y[(-1)] = s[7];\n"), "%s",
                     tirx_kernel_source(k));
  tirx_kernel_release(k);
}

/* builder_param_tensor_layout_shape_overflow: the shape's product is checked. */
Test(builder, param_tensor_layout_shape_overflow) {
  const tirx_layout *l = tirx_layout_parse(tirx_builder_arena(B), "(16):(1)");
  cr_assert_not_null(l);
  tirx_param_tensor(B, "g", TIRX_F32, TIRX_EXPRS(I((int64_t)1 << 62), I(4)), l);
  expect_sticky(B, TIRX_E_OVERFLOW,
                "tirx_param_tensor: the product of the shape overflows int64");
}

/* builder_alloc_layout_bytes_overflow: elems * the element size is checked, then the limits
 * apply. */
Test(builder, alloc_shared_layout_bytes_overflow) {
  const tirx_layout *l = tirx_layout_parse(tirx_builder_arena(B), "(2):(4611686018427387904)");
  cr_assert_not_null(l, "%s", tirx_last_error());
  tirx_alloc_shared(B, "s", TIRX_F32, TIRX_DIMS(2), l);
  expect_sticky(B, TIRX_E_LIMIT,
                "tirx_alloc_shared: shared tensor \"s\" has 4611686018427387905 elements of 4 "
                "bytes, more than the limit of 232448 bytes of shared memory");
}

Test(builder, alloc_local_layout_bytes_overflow) {
  const tirx_layout *l = tirx_layout_parse(tirx_builder_arena(B), "(2):(4611686018427387904)");
  cr_assert_not_null(l, "%s", tirx_last_error());
  tirx_alloc_local(B, "l", TIRX_F64, TIRX_DIMS(2), l);
  expect_sticky(B, TIRX_E_LIMIT,
                "tirx_alloc_local: local array \"l\" has 4611686018427387905 elements of 8 "
                "bytes, more than the limit of 16384 bytes");
}

Test(builder, alloc_shared_layout_bytes_no_overflow_still_limited) {
  const tirx_layout *l = tirx_layout_parse(tirx_builder_arena(B), "(2):(4611686018427387904)");
  cr_assert_not_null(l, "%s", tirx_last_error());
  tirx_alloc_shared(B, "s", TIRX_U8, TIRX_DIMS(2), l);
  expect_sticky(B, TIRX_E_LIMIT,
                "tirx_alloc_shared: shared memory would be 4611686018427387905 bytes, limit "
                "232448");
}

/* builder_weak_const_store_not_exact: a weak constant adapts only when exact in the type. */
Test(builder, weak_const_store_not_exact_u8) {
  tirx_tensor *t = tirx_param_tensor(B, "t", TIRX_U8, TIRX_EXPRS(I(4)), NULL);
  tirx_store(B, t, TIRX_EXPRS(I(0)), I(255)); /* exact: fine */
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
  tirx_store(B, t, TIRX_EXPRS(I(1)), I(1000));
  expect_sticky(B, TIRX_E_TYPE,
                "tirx_store: value is the constant 1000, not exact in u8 (the dtype of t)");
}

Test(builder, weak_const_store_not_exact_u32) {
  tirx_tensor *t = tirx_param_tensor(B, "t", TIRX_U32, TIRX_EXPRS(I(4)), NULL);
  tirx_store(B, t, TIRX_EXPRS(I(0)), I(-1));
  expect_sticky(B, TIRX_E_TYPE,
                "tirx_store: value is the constant -1, not exact in u32 (the dtype of t)");
}

Test(builder, weak_const_atomic_not_exact) {
  tirx_tensor *t = tirx_param_tensor(B, "t", TIRX_I32, TIRX_EXPRS(I(4)), NULL);
  tirx_atomic_add(B, t, TIRX_EXPRS(I(0)), I((int64_t)1 << 31));
  expect_sticky(B, TIRX_E_TYPE,
                "tirx_atomic_add: value is the constant 2147483648, not exact in i32 (the "
                "dtype of t)");
}

Test(builder, weak_const_assign_not_exact) {
  tirx_expr *v = tirx_var(B, "v", TIRX_I8, I(-128));
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
  tirx_assign(B, v, I(128));
  expect_sticky(B, TIRX_E_TYPE,
                "tirx_assign: value is the constant 128, not exact in i8 (the dtype of var)");
}

Test(builder, weak_const_var_not_exact) {
  tirx_var(B, "v", TIRX_U8, I(-1));
  expect_sticky(B, TIRX_E_TYPE,
                "tirx_var: init is the constant -1, not exact in u8 (the variable's dtype)");
}

Test(builder, weak_const_float_exactness) {
  /* Exact: 2^24 in f32, 65504 in f16, 2^40 in bf16 (one significant bit), 2^53 in f64. */
  tirx_var(B, "a", TIRX_F32, I(16777216));
  tirx_var(B, "b", TIRX_F16, I(-65504));
  tirx_var(B, "c", TIRX_BF16, I((int64_t)1 << 40));
  tirx_var(B, "d", TIRX_F64, I((int64_t)1 << 53));
  tirx_var(B, "e", TIRX_F64, I(INT64_MIN));
  cr_assert_eq(tirx_builder_status(B), TIRX_OK, "%s", tirx_builder_error(B));
  /* Not exact: rounding would change the value. */
  tirx_var(B, "f", TIRX_F32, I(16777217));
  expect_sticky(B, TIRX_E_TYPE,
                "tirx_var: init is the constant 16777217, not exact in f32 (the variable's "
                "dtype)");
}

Test(builder, weak_const_f16_out_of_range) {
  tirx_var(B, "h", TIRX_F16, I(65536)); /* one significant bit, but past f16's 65504 */
  expect_sticky(B, TIRX_E_TYPE,
                "tirx_var: init is the constant 65536, not exact in f16 (the variable's dtype)");
}

Test(builder, weak_const_bf16_and_f64_not_exact) {
  tirx_var(B, "g", TIRX_BF16, I(257));
  expect_sticky(B, TIRX_E_TYPE,
                "tirx_var: init is the constant 257, not exact in bf16 (the variable's dtype)");
  tirx_builder *b = tirx_builder_create("k2");
  tirx_var(b, "d", TIRX_F64, tirx_int(b, ((int64_t)1 << 53) + 1));
  expect_sticky(b, TIRX_E_TYPE,
                "tirx_var: init is the constant 9007199254740993, not exact in f64 (the "
                "variable's dtype)");
  tirx_builder_destroy(b);
}
