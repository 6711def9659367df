/*
 * examples/tp.c on the CPU: the layouts of the tensor-parallel linear layer, the collective
 * they choose, the GEMM arguments against the GEMM's declared parameters (the launch checks,
 * without a device), the spec errors, and the float64 checker on host-computed results.
 */
#include <math.h>
#include <string.h>

#include "../helpers.h"
#include "ir/kernel_abi.h"
#include "tp_ref.h"

#define PTR(v) ((void *)(uintptr_t)(v))

static tirx_tp_linear make(tirx_dtype dt, int64_t m, int64_t n, int64_t k, int P) {
  tirx_tp_spec s = {.dtype = dt, .m = m, .n = n, .k = k, .nranks = P};
  tirx_tp_linear t;
  cr_assert(tirx_kernels_tp_linear_create(&s, &t) == TIRX_OK, "P=%d: %s", P, tirx_last_error());
  return t;
}

static void expect_local(const tirx_dtensor *d, int64_t r, int64_t c, int64_t s0, int64_t s1,
                         const char *what) {
  int64_t shape[2], strides[2];
  cr_assert_eq(tirx_dtensor_local_shape(d, shape, strides, 2), TIRX_OK, "%s", tirx_last_error());
  cr_assert(shape[0] == r && shape[1] == c && strides[0] == s0 && strides[1] == s1,
            "%s: local (%lld,%lld) strides (%lld,%lld), expected (%lld,%lld) (%lld,%lld)", what,
            (long long)shape[0], (long long)shape[1], (long long)strides[0],
            (long long)strides[1], (long long)r, (long long)c, (long long)s0, (long long)s1);
}

/* Odd shapes over meshes of 1 to 8 ranks: local parts, the collective, who holds what. */
Test(tp_linear, layouts_and_the_collective) {
  static const int meshes[] = {1, 2, 3, 4, 8};
  for (size_t q = 0; q < sizeof meshes / sizeof meshes[0]; q++) {
    int P = meshes[q];
    int64_t m = 37 * P, n = 136, k = 65 * P, ld = 72; /* 65 rounded up to 8 */
    tirx_tp_linear t = make(TIRX_BF16, m, n, k, P);
    cr_assert_eq(t.m_local, 37);
    cr_assert_eq(t.k_local, 65);
    cr_assert_eq(t.ldx, ld);
    expect_local(t.x, m, 65, ld, 1, "X");
    expect_local(t.w, n, 65, ld, 1, "W");
    expect_local(t.y_partial, m, n, n, 1, "Y_r");
    expect_local(t.y, 37, n, n, 1, "Y");
    cr_assert_eq(t.b_shape[0], 65);
    cr_assert_eq(t.b_shape[1], n);
    cr_assert_eq(t.b_strides[0], 1);
    cr_assert_eq(t.b_strides[1], ld);
    cr_assert_eq(tirx_dtensor_partial(t.y_partial), TIRX_PARTIAL_SUM);
    for (int r = 0; r < P; r++) {
      cr_assert(tirx_dtensor_on_rank(t.x, r) && tirx_dtensor_on_rank(t.y, r));
      cr_assert(tirx_dtensor_on_rank(t.y_partial, r));
    }
    cr_assert_str_eq(tirx_collective_rule(t.reduce), "reduce_scatter");
    char want[64];
    snprintf(want, sizeof want, "= reduce_scatter op=sum count=%lld (forced)",
             (long long)(37 * n));
    cr_assert(strstr(tirx_collective_report(t.reduce), want), "P=%d: report\n%s", P,
              tirx_collective_report(t.reduce));
    /* The table, left to choose, takes the same rule once there is more than one rank; with
     * one rank the all-reduce comes first and is just as right. */
    tirx_collective *c = NULL;
    cr_assert_eq(tirx_collective_create(t.y_partial, t.y, NULL, &c), TIRX_OK, "%s",
                 tirx_last_error());
    cr_assert_str_eq(tirx_collective_rule(c), P == 1 ? "all_reduce" : "reduce_scatter");
    tirx_collective_destroy(c);
    cr_assert_eq(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_X), (size_t)(m * ld * 2));
    cr_assert_eq(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_W), (size_t)(n * ld * 2));
    cr_assert_eq(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y_PARTIAL), (size_t)(m * n * 2));
    cr_assert_eq(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y), (size_t)(37 * n * 2));
    tirx_kernels_tp_linear_destroy(&t);
  }
}

/* The arguments tp_linear_forward launches the GEMM with pass the launch checks (the B view of
 * W_r above all), and each rank's buffers pass their dtensors' checks. */
Test(tp_linear, the_gemm_arguments_pass_the_launch_checks) {
  tirx__launch_plan *plan = malloc(sizeof *plan);
  static const int64_t shapes[][4] = {{2048, 4096, 14336, 1}, {1000, 3000, 4000, 4},
                                      {129, 136, 65, 1},      {96, 264, 200, 8},
                                      {1, 16, 9, 1},          {2, 8, 6, 2}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    tirx_tp_linear t = make(i % 2 ? TIRX_F16 : TIRX_BF16, shapes[i][0], shapes[i][1], shapes[i][2],
                       (int)shapes[i][3]);
    tirx_tp_buffers b = {PTR(0x10000), PTR(0x20000), PTR(0x30000), PTR(0x40000)};
    tirx_arg args[6];
    tirx_kernels_tp_linear_gemm_args(&t, &b, args);
    cr_assert_eq(tirx__kernel_plan(t.gemm, "tirx_launch", args, 6, plan), TIRX_OK,
                 "shape %zu: %s", i, tirx_last_error());
    cr_assert_eq(plan->ntmaps, 3, "TMA maps of A, B and C");
    tirx_tensor_arg x = {b.x, t.spec.dtype, 2, t.x_shape, t.x_strides};
    tirx_tensor_arg y = {b.y, t.spec.dtype, 2, t.y_shape, t.y_strides};
    cr_assert_eq(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_X), (size_t)(t.spec.m * t.ldx * 2));
    cr_assert_eq(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_W), (size_t)(t.spec.n * t.ldw * 2));
    cr_assert_eq(tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y), (size_t)(t.m_local * t.spec.n * 2));
    for (int r = 0; r < t.spec.nranks; r++) {
      cr_assert_eq(tirx_dtensor_check(t.x, r, &x), TIRX_OK, "%s", tirx_last_error());
      cr_assert_eq(tirx_dtensor_check(t.y, r, &y), TIRX_OK, "%s", tirx_last_error());
    }
    tirx_kernels_tp_linear_destroy(&t);
  }
  free(plan);
}

Test(tp_linear, spec_errors) {
  struct {
    tirx_tp_spec s;
    const char *msg;
  } cases[] = {
      {{.dtype = TIRX_F32, .m = 64, .n = 64, .k = 64, .nranks = 1}, "tirx_kernels_tp_linear_create: dtype is f32, expected bf16 or f16"},
      {{.dtype = TIRX_BF16, .m = 64, .n = 64, .k = 64, .nranks = 0}, "tirx_kernels_tp_linear_create: nranks is 0, expected 1 to 65536"},
      {{.dtype = TIRX_BF16, .m = 0, .n = 64, .k = 64, .nranks = 1},
       "tirx_kernels_tp_linear_create: m, n, k are 0, 64, 64, expected 1 to 2^31-1"},
      {{.dtype = TIRX_BF16, .m = 66, .n = 64, .k = 64, .nranks = 4},
       "tirx_kernels_tp_linear_create: m = 66 and k = 64 must be multiples of nranks = 4 (the rows of Y and "
       "the columns of X and W split evenly)"},
      {{.dtype = TIRX_BF16, .m = 64, .n = 64, .k = 66, .nranks = 4},
       "tirx_kernels_tp_linear_create: m = 64 and k = 66 must be multiples of nranks = 4 (the rows of Y and "
       "the columns of X and W split evenly)"},
      {{.dtype = TIRX_BF16, .m = 64, .n = 60, .k = 64, .nranks = 1},
       "tirx_kernels_tp_linear_create: n is 60, expected a multiple of 8 (Y_r is dense for NCCL and its rows "
       "are TMA strides of 16 bytes)"},
      {{.dtype = TIRX_BF16, .m = 8, .n = 64, .k = 64, .nranks = 1, .gemm = {.path = TIRX_GEMM_PATH_GEMV}},
       "tirx_kernels_tp_linear_create: spec->gemm.path is 2, expected TIRX_GEMM_PATH_AUTO or "
       "TIRX_GEMM_PATH_WGMMA (the GEMM arguments are the wgmma kernel's)"},
      {{.dtype = TIRX_BF16, .m = 8, .n = 64, .k = 64, .nranks = 1,
        .gemm = {.path = TIRX_GEMM_PATH_WGMMA_SPLITK}},
       "tirx_kernels_tp_linear_create: spec->gemm.path is 3, expected TIRX_GEMM_PATH_AUTO or "
       "TIRX_GEMM_PATH_WGMMA (the GEMM arguments are the wgmma kernel's)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_tp_linear t;
    cr_assert_eq(tirx_kernels_tp_linear_create(&cases[i].s, &t), TIRX_E_INVALID_ARG, "case %zu", i);
    cr_assert_str_eq(tirx_last_error(), cases[i].msg);
    cr_assert_null(t.gemm);
    cr_assert_null(t.x);
    tirx_kernels_tp_linear_destroy(&t); /* zeroed: a no-op */
  }
  cr_assert_eq(tirx_kernels_tp_linear_create(NULL, &(tirx_tp_linear){0}), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_kernels_tp_linear_create: spec is NULL");
  cr_assert_eq(tirx_kernels_tp_linear_create(&cases[0].s, NULL), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_kernels_tp_linear_create: out is NULL");
}

/* Found by reading the API during the fuzz campaign (tools/fuzz_ops): the GEMM arguments of a
 * NULL layer or NULL buffers dereferenced them (a segfault); they are zeroed and reported. */
Test(tp_linear, the_gemm_arguments_of_null_are_reported_not_dereferenced) {
  tirx_tp_linear t = make(TIRX_BF16, 64, 64, 64, 1);
  tirx_tp_buffers b = {PTR(0x10000), PTR(0x20000), PTR(0x30000), PTR(0x40000)};
  tirx_arg args[6];
  memset(args, 0xff, sizeof args);
  tirx_clear_error();
  tirx_kernels_tp_linear_gemm_args(NULL, &b, args);
  cr_assert_eq(tirx_last_status(), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_kernels_tp_linear_gemm_args: t is NULL");
  for (int i = 0; i < 6; i++) cr_assert_eq(args[i].kind, TIRX_ARG_I32);
  tirx_kernels_tp_linear_gemm_args(&t, NULL, args);
  cr_assert_str_eq(tirx_last_error(), "tirx_kernels_tp_linear_gemm_args: b is NULL");
  tirx_kernels_tp_linear_gemm_args(&t, &b, NULL);
  cr_assert_str_eq(tirx_last_error(), "tirx_kernels_tp_linear_gemm_args: args is NULL");
  tirx_kernels_tp_linear_gemm_args(&t, &b, args); /* and a layer still gives its arguments */
  cr_assert_eq(args[3].kind, TIRX_ARG_TENSOR);
  cr_assert_eq(args[3].u.tensor.data, PTR(0x10000));
  tirx_kernels_tp_linear_destroy(&t);
}

/* The checker accepts each rank's rows computed on the host (float64 sums of the shards, each
 * rounded to the dtype, added and rounded again as NCCL would) and rejects a wrong corner and
 * a NaN. */
Test(tp_linear, the_checker_accepts_right_rows_and_rejects_wrong_ones) {
  for (int d = 0; d < 2; d++) {
    tirx_dtype dt = d ? TIRX_F16 : TIRX_BF16;
    const int P = 3;
    const int64_t m = 6, n = 16, k = 57;
    tirx_tp_linear t = make(dt, m, n, k, P);
    uint64_t seed = 12345 + (uint64_t)d;
    uint16_t x[6 * 57], w[16 * 57], y[2 * 16];
    tp_random16(dt, x, sizeof x / 2, &seed);
    tp_random16(dt, w, sizeof w / 2, &seed);
    for (int r = 0; r < P; r++) {
      for (int64_t li = 0; li < t.m_local; li++)
        for (int64_t j = 0; j < n; j++) {
          int64_t i = r * t.m_local + li;
          float acc = 0;
          for (int p = 0; p < P; p++) {
            double part = 0;
            for (int64_t q = p * t.k_local; q < (p + 1) * t.k_local; q++)
              part += tp_from16(dt, x[i * k + q]) * tp_from16(dt, w[j * k + q]);
            float addend = (float)tp_from16(dt, tp_to16(dt, (float)part)); /* Y_r's rounding */
            acc = (float)tp_from16(dt, tp_to16(dt, acc + addend));          /* NCCL's sum */
          }
          y[li * n + j] = tp_to16(dt, acc);
        }
      uint64_t cs = 99;
      tp_check_result res = tp_linear_check(&t, r, x, w, y, 200, &cs);
      cr_assert_eq(res.samples, 204);
      cr_assert_eq(res.wrong, 0, "%s rank %d: %s", tirx_dtype_name(dt), r, res.first);
      uint16_t keep = y[n - 1];
      y[n - 1] = tp_to16(dt, (float)tp_from16(dt, keep) + 0.5f); /* the corner (0, n-1) */
      cs = 99;
      res = tp_linear_check(&t, r, x, w, y, 0, &cs);
      cr_assert_eq(res.wrong, 1);
      char want[32];
      snprintf(want, sizeof want, "Y[%lld, %lld] = ", (long long)(r * t.m_local),
               (long long)(n - 1));
      cr_assert(strncmp(res.first, want, strlen(want)) == 0, "%s", res.first);
      y[n - 1] = 0xffff; /* NaN */
      res = tp_linear_check(&t, r, x, w, y, 0, &cs);
      cr_assert_eq(res.wrong, 1);
      cr_assert_eq(res.max_rel_err, 1e9);
    }
    tirx_kernels_tp_linear_destroy(&t);
  }
}

Test(tp_linear, sixteen_bit_conversions) {
  static const float v[] = {0.0f, 1.0f, -1.0f, 0.5f, 0.333333f, -0.999f, 65504.0f, 1e-3f};
  for (int d = 0; d < 2; d++) {
    tirx_dtype dt = d ? TIRX_F16 : TIRX_BF16;
    double ulp = d ? 1.0 / 1024 : 1.0 / 128;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
      double back = tp_from16(dt, tp_to16(dt, v[i]));
      cr_assert(fabs(back - v[i]) <= ulp / 2 * fabs(v[i]) * 1.0001, "%s %g -> %g",
                tirx_dtype_name(dt), (double)v[i], back);
    }
  }
  cr_assert_eq(tp_to16(TIRX_BF16, 1.0f), 0x3f80);
  cr_assert_eq(tp_to16(TIRX_F16, 1.0f), 0x3c00);
  cr_assert_eq(tp_to16(TIRX_F16, -2.0f), 0xc000);
  cr_assert(isnan(tp_from16(TIRX_F16, 0xffff)) && isnan(tp_from16(TIRX_BF16, 0xffff)));
}
