/* Packed f16x2/bf16x2 math (families/pointwise_vec.c, packed_pair, prelude tirx_x2_*):
 * all-bf16 (all-f16) pointwise ops run on pairs (pack=2), NVRTC compiles them for sm_90a to
 * the packed PTX instructions; odd widths fall back to pointwise.scalar with the reason;
 * forcing the scalar family works; f32 kernels keep per-element math. */
#include <string.h>

#include "../../helpers.h"
#include "rows_ref.h"

/* The row kernels' options of the current test (each test runs in its own process). */
static tirx_row_options ro;

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

/* out = op(a, b[, c]) over n elements of dtype t in global memory, a CTA of 128 threads.
 * scale != 0: the third source is that float broadcast instead of a tensor. */
static tirx_kernel *pk_kernel(tirx_dtype t, tirx_op op, int nsrc, int64_t n, double scale,
                              const char *family, char *err, size_t cap) {
  tirx_builder *b = tirx_builder_create("pk");
  tirx_tensor *ts[4];
  static const char *const names[4] = {"out", "a", "b", "c"};
  for (int i = 0; i <= nsrc; i++)
    ts[i] = tirx_param_tensor(b, names[i], t, TIRX_EXPRS(tirx_int(b, n)), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_CTA);
  tirx_config cfg = {.family = family};
  tirx_region *r[4];
  for (int i = 0; i <= nsrc; i++) r[i] = tirx_whole(b, ts[i]);
  if (scale != 0.0) r[nsrc] = tirx_broadcast(b, tirx_float(b, scale, TIRX_F32));
  if (nsrc == 1) tirx_unary(b, r[0], op, r[1], &cfg);
  if (nsrc == 2) tirx_binary(b, r[0], op, r[1], r[2], &cfg);
  if (nsrc == 3) tirx_ternary(b, r[0], op, r[1], r[2], r[3], &cfg);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* The kernel's own code, after the prelude. */
static const char *body_of(const tirx_kernel *k) {
  const char *src = tirx_kernel_source(k), *body = strstr(src, "extern \"C\"");
  cr_assert_not_null(body, "%s", src);
  return body;
}

/* Compiles k for arch and returns its PTX (malloc'ed). */
static char *ptx_of(const tirx_kernel *k, const char *arch) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, arch, &c), TIRX_OK, "%s", tirx_last_error());
  char *ptx = strdup(tirx_compiled_ptx(c));
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(rt);
  return ptx;
}

Test(prim_packed, bf16_add_runs_on_pairs, .timeout = 120) {
  char err[512] = "";
  tirx_kernel *k = pk_kernel(TIRX_BF16, TIRX_OP_ADD, 2, 1024, 0, NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[pk:1] binary(arch=sm_90, roles=global,global->global, team=cta) -> "
                   "pointwise.vec vec=8,pack=2\n");
  const char *src = body_of(k);
  assert_has(src, "/* tirx: pointwise.vec vec=8,pack=2: binary(");
  for (int j = 0; j < 8; j += 2) { /* four pairs of the 8-element vector */
    char want[160];
    snprintf(want, sizeof want, "tirx_x2_st(&out_1[%d], tirx_x2_bf16x2_add(tirx_x2_ld(&src[%d]), "
             "tirx_x2_ld(&src_1[%d])));", j, j, j);
    assert_has(src, want);
  }
  assert_has(tirx_kernel_source(k), "add.rn.bf16x2"); /* the prelude's helper */
  assert_has(tirx_kernel_ir_str(k), "x2.add(");
  char *ptx = ptx_of(k, "sm_90a");
  assert_has(ptx, "add.rn.bf16x2");
  free(ptx);
  ptx = ptx_of(k, "sm_80"); /* sm_80: through fma.rn.bf16x2 */
  assert_has(ptx, "fma.rn.bf16x2");
  free(ptx);
  tirx_kernel_release(k);
}

Test(prim_packed, bf16_mul_and_fma_run_on_pairs, .timeout = 120) {
  char err[512] = "";
  tirx_kernel *k = pk_kernel(TIRX_BF16, TIRX_OP_MUL, 2, 4096, 0, NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[pk:1] binary(arch=sm_90, roles=global,global->global, team=cta) -> "
                   "pointwise.vec vec=8,pack=2\n");
  assert_has(body_of(k), "tirx_x2_bf16x2_mul(");
  char *ptx = ptx_of(k, "sm_90a");
  assert_has(ptx, "mul.rn.bf16x2");
  free(ptx);
  tirx_kernel_release(k);
  /* fma with a float scalar: rounded to bf16 and broadcast to both halves. */
  k = pk_kernel(TIRX_BF16, TIRX_OP_FMA, 3, 4096, 0.5, NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[pk:1] ternary(arch=sm_90, roles=global,global,scalar->global, team=cta) -> "
                   "pointwise.vec vec=8,pack=2\n");
  assert_has(body_of(k), "tirx_x2_bf16x2_fma(tirx_x2_ld(&src[0]), tirx_x2_ld(&src_1[0]), "
                         "tirx_x2_dup(");
  ptx = ptx_of(k, "sm_90a");
  assert_has(ptx, "fma.rn.bf16x2");
  free(ptx);
  tirx_kernel_release(k);
  /* f16 max: max.f16x2. */
  k = pk_kernel(TIRX_F16, TIRX_OP_MAX, 2, 512, 0, NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  assert_has(body_of(k), "tirx_x2_f16x2_max(");
  ptx = ptx_of(k, "sm_90a");
  assert_has(ptx, "max.f16x2");
  free(ptx);
  tirx_kernel_release(k);
}

Test(prim_packed, odd_width_falls_back_to_pack_1_with_the_reason, .timeout = 120) {
  char err[512] = "";
  tirx_kernel *k = pk_kernel(TIRX_BF16, TIRX_OP_ADD, 2, 127, 0, NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[pk:1] binary(arch=sm_90, roles=global,global->global, team=cta) -> "
                   "pointwise.scalar vec=1,pack=1 (fallback)\n"
                   "  rejected pointwise.vec: dst vector width 1 < 2 elements: innermost "
                   "contiguous run of 127 elements is odd\n"
                   "  rejected pointwise.vec: a vector width 1 < 2 elements: innermost "
                   "contiguous run of 127 elements is odd\n"
                   "  rejected pointwise.vec: b vector width 1 < 2 elements: innermost "
                   "contiguous run of 127 elements is odd\n");
  cr_assert_null(strstr(body_of(k), "tirx_x2_"), "%s", body_of(k));
  free(ptx_of(k, "sm_90a"));
  tirx_kernel_release(k);
}

Test(prim_packed, forcing_the_scalar_family_works, .timeout = 120) {
  char err[512] = "";
  tirx_kernel *k = pk_kernel(TIRX_BF16, TIRX_OP_ADD, 2, 1024, 0, "scalar", err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[pk:1] binary(arch=sm_90, roles=global,global->global, team=cta, "
                   "family=scalar) -> pointwise.scalar vec=1,pack=1 (forced)\n");
  cr_assert_null(strstr(body_of(k), "tirx_x2_"), "%s", body_of(k));
  char *ptx = ptx_of(k, "sm_90a");
  cr_assert_null(strstr(ptx, "add.rn.bf16x2"));
  free(ptx);
  tirx_kernel_release(k);
}

Test(prim_packed, f32_kernels_keep_per_element_math) {
  char err[1024] = "";
  tirx_kernel *k = pk_kernel(TIRX_F32, TIRX_OP_ADD, 2, 1024, 0, NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[pk:1] binary(arch=sm_90, roles=global,global->global, team=cta) -> "
                   "pointwise.vec vec=4,pack=1\n");
  cr_assert_null(strstr(body_of(k), "tirx_x2_"), "%s", body_of(k));
  tirx_kernel_release(k);
  /* membound computes in f32 registers (bf16 only in memory): no packed math. */
  k = row_kernel(TIRX_ROW_OP_RMSNORM, &ro, TIRX_BF16, 4096, false, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_null(strstr(body_of(k), "tirx_x2_"), "%s", body_of(k));
  tirx_kernel_release(k);
}

Test(prim_packed, register_operands_pack_in_place, .timeout = 120) {
  tirx_builder *b = tirx_builder_create("pkreg");
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F16, TIRX_EXPRS(tirx_int(b, 2), tirx_int(b, 64)),
                                     NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F16, TIRX_EXPRS(tirx_int(b, 2), tirx_int(b, 64)),
                                     NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  const char *lay = "(2,16,4):(4@reg,1@laneid,1@reg)";
  tirx_tensor *u = tirx_alloc_local(b, "u", TIRX_F16, TIRX_DIMS(2, 64),
                                    tirx_layout_parse(tirx_builder_arena(b), lay));
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F16, TIRX_DIMS(2, 64),
                                    tirx_layout_parse(tirx_builder_arena(b), lay));
  tirx_copy(b, tirx_whole(b, u), tirx_whole(b, x), NULL);
  tirx_binary(b, tirx_whole(b, v), TIRX_OP_MUL, tirx_whole(b, u),
              tirx_broadcast(b, tirx_float(b, 3.0, TIRX_F32)), NULL);
  tirx_copy(b, tirx_whole(b, y), tirx_whole(b, v), NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  assert_has(tirx_kernel_dispatch_report(k),
             "[pkreg:2] binary(arch=sm_90, roles=local,scalar->local, team=warp) -> "
             "pointwise.vec vec=4,pack=2\n");
  assert_has(body_of(k), "tirx_x2_st(&v[");
  assert_has(body_of(k), "tirx_x2_f16x2_mul(tirx_x2_ld(&u[");
  assert_has(body_of(k), "tirx_x2_dup(");
  char *ptx = ptx_of(k, "sm_90a");
  assert_has(ptx, "mul.rn.f16x2");
  free(ptx);
  tirx_kernel_release(k);
}

/* exp2 (exp2f per element: subnormals kept, one rounding to 16 bits) is not packed: it was,
 * as ex2.approx.ftz.bf16x2 (subnormal inputs and results flushed to zero) and
 * ex2.approx.f16x2, so a 1024-element bf16 exp2 flushed 2^-130 to 0 where a 1023-element one
 * (pointwise.scalar: exp2f) kept it. Both widths now compute exp2f. */
Test(prim_packed, exp2_is_not_packed_to_approximate_instructions) {
  static const tirx_dtype ts[] = {TIRX_BF16, TIRX_F16};
  for (int i = 0; i < 2; i++) {
    char err[512] = "";
    tirx_kernel *k = pk_kernel(ts[i], TIRX_OP_EXP2, 1, 1024, 0, NULL, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                     "[pk:1] unary(arch=sm_90, roles=global->global, team=cta) -> "
                     "pointwise.vec vec=8,pack=1\n");
    cr_assert_null(strstr(body_of(k), "tirx_x2_"), "%s", body_of(k));
    assert_has(body_of(k), "exp2f(");
    tirx_kernel_release(k);
  }
}
