/*
 * GPU tests of src/dist on one device: every collective on a single-rank communicator
 * (ncclCommInitRankConfig with nranks = 1) against a CPU reference on fresh random inputs with
 * poisoned outputs and odd shapes; a communicator the host created with NCCL, wrapped; the
 * deadline that aborts a communicator instead of hanging (T12 on one rank); buffer checks at run
 * time. With one rank a reduction of one addend is that addend and a gather of one shard is that
 * shard, so each reference is the input placed by the destination's layout; what is tested is
 * tirx's plumbing (rule, counts, dtypes, pointers, streams, polling), not NCCL's arithmetic
 * across ranks, which needs the multi-GPU issue.
 *
 * The tensor-parallel linear layer of examples/tp.h (the path of examples/tp_linear) runs at
 * world size 1: the builder's GEMM into the partial Y_r, then the reduce-scatter into Y, checked
 * against a float64 reference on sampled elements, and Y against Y_r bit for bit (one addend).
 *
 * Every test skips cleanly without a device or without NCCL.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/dist.h"
#include "jit/jit.h"
#include "tp_ref.h"

#define DPOISON 0xdeadbeefu
#define DOK(call) cr_assert_eq((call), TIRX_OK, "%s: %s", #call, tirx_last_error())

static uint64_t dseed;

static uint64_t drnd(void) {
  dseed ^= dseed >> 12;
  dseed ^= dseed << 25;
  dseed ^= dseed >> 27;
  return dseed * 2685821657736338717ull;
}

static tirx_runtime *dist_runtime(void) {
  tirx_runtime *rt = NULL;
  if (tirx_runtime_create(NULL, &rt) != TIRX_OK) cr_assert_fail("%s", tirx_last_error());
  if (!tirx_runtime_has_device(rt)) {
    char why[512];
    snprintf(why, sizeof why, "%s", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    cr_skip_test("no CUDA device: %s", why);
  }
  int v = 0;
  if (tirx_nccl_version(NULL, &v) != TIRX_OK) {
    tirx_runtime_destroy(rt);
    cr_skip_test("no NCCL: %s", tirx_last_error());
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const char *s = getenv("TIRX_SEED");
  dseed = s && *s ? strtoull(s, NULL, 0) : ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec;
  if (!dseed) dseed = 1;
  cr_log_info("device %s, NCCL %d, seed %llu (TIRX_SEED replays it)", tirx_runtime_device_name(rt),
              v, (unsigned long long)dseed);
  return rt;
}

static tirx_comm *one_rank(tirx_runtime *rt, int64_t timeout_ms) {
  tirx_comm_id id;
  DOK(tirx_comm_id_generate(NULL, &id));
  tirx_comm *c = NULL;
  tirx_comm_options o = {.timeout_ms = timeout_ms};
  DOK(tirx_comm_create(rt, &id, 0, 1, &o, &c));
  cr_assert_eq(tirx_comm_rank(c), 0);
  cr_assert_eq(tirx_comm_size(c), 1);
  cr_assert_not_null(tirx_comm_nccl(c));
  DOK(tirx_comm_health(c));
  return c;
}

static tirx_dtensor *dtensor(tirx_dtype dt, int rank, const int64_t *shape, const char *layout,
                             tirx_partial p) {
  tirx_arena *a = tirx_arena_create();
  tirx_layout *l = tirx_layout_parse(a, layout);
  cr_assert_not_null(l, "%s: %s", layout, tirx_last_error());
  tirx_dtensor *t = NULL;
  DOK(tirx_dtensor_create(dt, rank, shape, l, 1, p, &t));
  tirx_arena_destroy(a);
  return t;
}

/* Random bytes for any dtype: finite values for floats (small integers, exact in every type). */
static void random_fill(tirx_dtype dt, void *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int v = (int)(drnd() % 2001) - 1000;
    switch (dt) {
    case TIRX_F32: ((float *)p)[i] = (float)v * 0.25f; break;
    case TIRX_F64: ((double *)p)[i] = (double)v * 0.125; break;
    case TIRX_I32: ((int32_t *)p)[i] = v * 77777; break;
    case TIRX_I64: ((int64_t *)p)[i] = (int64_t)v * 123456789012ll; break;
    case TIRX_F16: ((uint16_t *)p)[i] = (uint16_t)(0x3c00 + (drnd() % 1024)); break; /* [1, 2) */
    case TIRX_BF16: ((uint16_t *)p)[i] = (uint16_t)(0x3f80 + (drnd() % 128)); break;  /* [1, 2) */
    default: ((uint8_t *)p)[i] = (uint8_t)drnd(); break;
    }
  }
}

/*
 * Runs src -> dst (rule forced, or chosen when NULL) on one rank and checks every element:
 * the reference is the input element placed where dst's layout puts it. Local buffers are
 * allocated to the layouts' spans (dense here), outputs poisoned first.
 */
static void check_collective(tirx_runtime *rt, tirx_comm *comm, const tirx_dtensor *src,
                             const tirx_dtensor *dst, const char *rule, bool in_place) {
  tirx_collective *c = NULL;
  DOK(tirx_collective_create(src, dst, rule, &c));
  if (rule) cr_assert_str_eq(tirx_collective_rule(c), rule);
  int es = tirx_dtype_size(src->dtype), r = src->rank;
  size_t n = (size_t)src->local_size;
  void *hin = malloc(n * (size_t)es), *hout = malloc(n * (size_t)es);
  random_fill(src->dtype, hin, n);
  void *din = NULL, *dout = NULL;
  DOK(tirx_runtime_alloc(rt, n * (size_t)es + 4, &din));
  DOK(tirx_runtime_copy(rt, din, hin, n * (size_t)es, TIRX_COPY_HOST_TO_DEVICE));
  if (in_place) {
    dout = din;
  } else {
    DOK(tirx_runtime_alloc(rt, n * (size_t)es + 4, &dout));
    DOK(tirx_runtime_fill32(rt, dout, DPOISON, (n * (size_t)es + 3) / 4));
  }
  int64_t sshape[TIRX_LAYOUT_MAX_RANK], sstr[TIRX_LAYOUT_MAX_RANK];
  int64_t dshape[TIRX_LAYOUT_MAX_RANK], dstr[TIRX_LAYOUT_MAX_RANK];
  DOK(tirx_dtensor_local_shape(src, sshape, sstr, TIRX_LAYOUT_MAX_RANK));
  DOK(tirx_dtensor_local_shape(dst, dshape, dstr, TIRX_LAYOUT_MAX_RANK));
  tirx_tensor_arg sa = {din, src->dtype, r, sshape, sstr};
  tirx_tensor_arg da = {dout, dst->dtype, r, dshape, dstr};
  DOK(tirx_collective_run(c, comm, &sa, &da, NULL));
  DOK(tirx_comm_synchronize(comm, NULL, -2));
  DOK(tirx_runtime_copy(rt, hout, dout, n * (size_t)es, TIRX_COPY_DEVICE_TO_HOST));
  /* Reference: element x sits at m_src(x) in the input and must sit at m_dst(x) in the output. */
  int64_t size = tirx_layout_size(src->layout), bad = 0, first = -1;
  for (int64_t x = 0; x < size; x++) {
    int64_t ms, md;
    DOK(tirx_layout_eval_m(src->layout, x, &ms));
    DOK(tirx_layout_eval_m(dst->layout, x, &md));
    if (memcmp((char *)hin + ms * es, (char *)hout + md * es, (size_t)es) != 0 && bad++ == 0)
      first = x;
  }
  cr_log_info("%s%s: %s, %lld elements, %lld wrong", tirx_collective_rule(c),
              in_place ? " (in place)" : "", tirx_dtype_name(src->dtype), (long long)size,
              (long long)bad);
  cr_assert_eq(bad, 0, "%s: %lld of %lld wrong, first at %lld (seed %llu)\n%s",
               tirx_collective_rule(c), (long long)bad, (long long)size, (long long)first,
               (unsigned long long)dseed, tirx_collective_report(c));
  if (!in_place) DOK(tirx_runtime_free(rt, dout));
  DOK(tirx_runtime_free(rt, din));
  free(hin);
  free(hout);
  tirx_collective_destroy(c);
}

Test(gpu_dist, every_collective_on_one_rank, .timeout = 300) {
  tirx_runtime *rt = dist_runtime();
  tirx_comm *comm = one_rank(rt, 60000);
  static const tirx_dtype types[] = {TIRX_F32, TIRX_F16, TIRX_BF16, TIRX_F64, TIRX_I32, TIRX_I64,
                                     TIRX_U8};
  static const struct {
    int rank;
    int64_t shape[3];
    const char *src, *dst;
  } shapes[] = {
      {1, {1}, "(1):(1)", "(1):(1)"},
      {2, {7, 13}, "(7,13):(13,1)", "(7,13):(13,1)"},
      {2, {7, 13}, "(7,13):(1,7)", "(7,13):(1,7)"},      /* column-major locals */
      {3, {3, 5, 7}, "(3,5,7):(35,7,1)", "(3,5,7):(35,7,1)"},
      {1, {1000003}, "(1000003):(1)", "(1000003):(1)"},
  };
  static const char *const moves[] = {"all_gather", "all_to_all", "broadcast"};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
      tirx_dtype dt = types[t];
      tirx_dtensor *whole = dtensor(dt, shapes[s].rank, shapes[s].shape, shapes[s].src,
                                    TIRX_PARTIAL_NONE);
      tirx_dtensor *out = dtensor(dt, shapes[s].rank, shapes[s].shape, shapes[s].dst,
                                  TIRX_PARTIAL_NONE);
      for (int m = 0; m < 3; m++) check_collective(rt, comm, whole, out, moves[m], false);
      check_collective(rt, comm, whole, out, "broadcast", true);
      if (dt != TIRX_U8) {
        static const tirx_partial ops[] = {TIRX_PARTIAL_SUM, TIRX_PARTIAL_PROD, TIRX_PARTIAL_MAX,
                                           TIRX_PARTIAL_MIN};
        for (int o = 0; o < 4; o++) {
          tirx_dtensor *part = dtensor(dt, shapes[s].rank, shapes[s].shape, shapes[s].src, ops[o]);
          check_collective(rt, comm, part, out, "all_reduce", false);
          check_collective(rt, comm, part, out, "reduce_scatter", false);
          check_collective(rt, comm, part, out, NULL, o == 0); /* the table picks all_reduce */
          tirx_dtensor_destroy(part);
        }
      }
      tirx_dtensor_destroy(whole);
      tirx_dtensor_destroy(out);
    }
  tirx_comm_destroy(comm);
  tirx_runtime_destroy(rt);
}

Test(gpu_dist, a_communicator_the_host_created_is_wrapped, .timeout = 120) {
  tirx_runtime *rt = dist_runtime();
  const tirx__nccl *n = NULL;
  DOK(tirx__nccl_load("test", NULL, &n));
  tirx_comm_id id;
  DOK(tirx_comm_id_generate(NULL, &id));
  tirx__nccl_unique_id uid;
  memcpy(uid.internal, id.bytes, sizeof uid.internal);
  /* The host's own blocking communicator, created with the runtime's context current. */
  tirx__ctx_guard g;
  DOK(tirx__ctx_enter(rt, "test", &g));
  tirx__nccl_comm_t host = NULL;
  tirx__nccl_config cfg = {sizeof cfg, 0xcafebeefu, TIRX__NCCL_MIN_VERSION, 1, INT32_MIN};
  cr_assert_eq(n->CommInitRankConfig(&host, 1, uid, 0, &cfg), TIRX__NCCL_SUCCESS);
  tirx__ctx_leave(rt, &g);
  tirx_comm *c = NULL;
  DOK(tirx_comm_wrap(rt, host, NULL, &c));
  cr_assert_eq(tirx_comm_rank(c), 0);
  cr_assert_eq(tirx_comm_size(c), 1);
  cr_assert_eq(tirx_comm_nccl(c), host);
  int64_t shape[] = {129, 31};
  tirx_dtensor *p = dtensor(TIRX_F32, 2, shape, "(129,31):(31,1)", TIRX_PARTIAL_SUM);
  tirx_dtensor *r = dtensor(TIRX_F32, 2, shape, "(129,31):(31,1)", TIRX_PARTIAL_NONE);
  check_collective(rt, c, p, r, NULL, false);
  tirx_comm_destroy(c); /* unwraps only: the host's communicator still works */
  int count = 0;
  cr_assert_eq(n->CommCount(host, &count), TIRX__NCCL_SUCCESS);
  cr_assert_eq(count, 1);
  DOK(tirx__ctx_enter(rt, "test", &g));
  cr_assert_eq(n->CommDestroy(host), TIRX__NCCL_SUCCESS);
  tirx__ctx_leave(rt, &g);
  tirx_dtensor_destroy(p);
  tirx_dtensor_destroy(r);
  tirx_runtime_destroy(rt);
}

/* One thread spinning through iters dependent multiply-adds (seconds for 1e9). */
static tirx_kernel *spin_kernel(void) {
  tirx_builder *b = tirx_builder_create("spin");
  tirx_expr *iters = tirx_param_int(b, "iters", TIRX_I64);
  tirx_tensor *out = tirx_param_tensor(b, "out", TIRX_U32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
  tirx_set_block(b, 1, 1, 1);
  tirx_set_grid(b, tirx_int(b, 1), NULL, NULL);
  tirx_expr *acc = tirx_var(b, "acc", TIRX_U32, NULL);
  tirx_expr *i = tirx_for_begin(b, "i", tirx_int_typed(b, 0, TIRX_I64), iters, NULL,
                                TIRX_LOOP_SERIAL);
  (void)i;
  tirx_assign(b, acc, tirx_add(b, tirx_mul(b, acc, tirx_int_typed(b, 1664525, TIRX_U32)),
                               tirx_int_typed(b, 1013904223, TIRX_U32)));
  tirx_for_end(b);
  tirx_store(b, out, TIRX_EXPRS(tirx_int(b, 0)), acc);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) cr_assert_fail("spin: %s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static double ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

Test(gpu_dist, a_deadline_aborts_instead_of_hanging, .timeout = 120) {
  tirx_runtime *rt = dist_runtime();
  tirx_comm *comm = one_rank(rt, 60000);
  tirx_kernel *spin = spin_kernel();
  void *flag = NULL;
  DOK(tirx_runtime_alloc(rt, 4, &flag));
  /* Load the kernel before any collective runs (the documented rule). iters is specialised on
   * divisibility by 16 (the default policy): 16 loads the variant that 1.5e9 runs. */
  tirx_arg warm[] = {tirx_arg_i64(16), tirx_arg_tensor(flag, TIRX_U32, 1, (int64_t[]){1}, NULL)};
  DOK(tirx_launch(rt, spin, warm, 2, NULL));
  DOK(tirx_runtime_synchronize(rt, NULL));
  int64_t shape[] = {1024};
  tirx_dtensor *p = dtensor(TIRX_F32, 1, shape, "(1024):(1)", TIRX_PARTIAL_SUM);
  tirx_dtensor *r = dtensor(TIRX_F32, 1, shape, "(1024):(1)", TIRX_PARTIAL_NONE);
  tirx_collective *c = NULL;
  DOK(tirx_collective_create(p, r, NULL, &c));
  void *buf = NULL;
  DOK(tirx_runtime_alloc(rt, 4096, &buf));
  DOK(tirx_runtime_fill32(rt, buf, 0, 1024));
  tirx_tensor_arg a = {buf, TIRX_F32, 1, shape, NULL};
  /* A run that finishes in time. */
  DOK(tirx_collective_run(c, comm, &a, &a, NULL));
  DOK(tirx_comm_synchronize(comm, NULL, 10000));
  /* The stream is busy for seconds; the wait gives up after 300 ms and aborts. */
  tirx_arg args[] = {tirx_arg_i64(1500000000), tirx_arg_tensor(flag, TIRX_U32, 1,
                                                               (int64_t[]){1}, NULL)};
  DOK(tirx_launch(rt, spin, args, 2, NULL));
  DOK(tirx_collective_run(c, comm, &a, &a, NULL));
  double t0 = ms_now();
  tirx_status st = tirx_comm_synchronize(comm, NULL, 300);
  double waited = ms_now() - t0;
  cr_log_info("synchronize returned %s after %.0f ms: %s", tirx_status_name(st), waited,
              tirx_last_error());
  cr_assert_eq(st, TIRX_E_COMM_ABORTED);
  cr_assert_str_eq(tirx_last_error(),
                   "tirx_comm_synchronize: the stream did not finish within 300 ms; the "
                   "communicator was aborted");
  cr_assert_lt(waited, 30000.0, "the abort took %.0f ms", waited);
  /* Every later call fails fast with the reason. */
  t0 = ms_now();
  cr_assert_eq(tirx_collective_run(c, comm, &a, &a, NULL), TIRX_E_COMM_ABORTED);
  cr_assert_str_eq(tirx_last_error(),
                   "tirx_collective_run: the communicator was aborted: the stream did not finish "
                   "within 300 ms");
  cr_assert_eq(tirx_comm_health(comm), TIRX_E_COMM_ABORTED);
  cr_assert_eq(tirx_comm_synchronize(comm, NULL, -1), TIRX_E_COMM_ABORTED);
  cr_assert_null(tirx_comm_nccl(comm));
  cr_assert_eq(tirx_comm_abort(comm), TIRX_OK); /* again: nothing to do */
  cr_assert_lt(ms_now() - t0, 1000.0);
  tirx_comm_destroy(comm);
  /* Let the spin kernel finish before freeing what it writes. What an aborted communicator's
   * queued work does afterwards is NCCL's business; the status is only logged. */
  tirx_status sync = tirx_runtime_synchronize(rt, NULL);
  cr_log_info("after the abort, the stream finished with %s", tirx_status_name(sync));
  if (sync != TIRX_OK) {
    tirx_runtime_destroy(rt);
    return;
  }
  DOK(tirx_runtime_free(rt, buf));
  DOK(tirx_runtime_free(rt, flag));
  tirx_collective_destroy(c);
  tirx_dtensor_destroy(p);
  tirx_dtensor_destroy(r);
  tirx_kernel_release(spin);
  tirx_runtime_destroy(rt);
}

Test(gpu_dist, abort_all_and_buffer_checks, .timeout = 120) {
  tirx_runtime *rt = dist_runtime();
  tirx_comm *a = one_rank(rt, 60000), *b = one_rank(rt, 60000);
  int64_t shape[] = {33, 5};
  tirx_dtensor *t = dtensor(TIRX_F32, 2, shape, "(33,5):(5,1)", TIRX_PARTIAL_NONE);
  tirx_collective *c = NULL;
  DOK(tirx_collective_create(t, t, NULL, &c));
  void *buf = NULL;
  DOK(tirx_runtime_alloc(rt, 33 * 5 * 4, &buf));
  tirx_tensor_arg good = {buf, TIRX_F32, 2, shape, NULL};
  tirx_tensor_arg wrong = {buf, TIRX_F32, 2, (int64_t[]){5, 33}, NULL};
  cr_assert_eq(tirx_collective_run(c, a, &wrong, &good, NULL), TIRX_E_LAUNCH_ARG);
  cr_assert_str_eq(tirx_last_error(),
                   "tirx_collective_run: src: rank 0: shape[0] is 5, expected 33");
  cr_assert_eq(tirx_collective_run(c, a, &good, NULL, NULL), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_collective_run: dst: rank 0: local is NULL");
  DOK(tirx_collective_run(c, a, &good, &good, NULL));
  DOK(tirx_comm_synchronize(a, NULL, -2));
  tirx_comm *both[] = {a, NULL, b};
  DOK(tirx_comm_abort_all(both, 3));
  cr_assert_eq(tirx_comm_health(a), TIRX_E_COMM_ABORTED);
  cr_assert_str_eq(tirx_last_error(),
                   "tirx_comm_health: the communicator was aborted: tirx_comm_abort was called");
  cr_assert_eq(tirx_comm_health(b), TIRX_E_COMM_ABORTED);
  tirx_comm_destroy(a);
  tirx_comm_destroy(b);
  DOK(tirx_runtime_free(rt, buf));
  tirx_collective_destroy(c);
  tirx_dtensor_destroy(t);
  tirx_runtime_destroy(rt);
}

/* ---- the tensor-parallel linear layer (examples/tp.h) at world size 1 ---- */

/*
 * One shape: fresh inputs in [-1, 1), Y_r and Y poisoned (NaN), tp_linear_forward, then 4096
 * sampled elements of Y and its four corners against float64 (the output's rounding plus f32
 * accumulation slack relative to sum |x w|), and every element of Y equal to Y_r's bits (the
 * sum of one addend).
 */
static void check_tp_linear(tirx_runtime *rt, tirx_comm *comm, tirx_dtype dt, int64_t m,
                            int64_t n, int64_t k) {
  char what[96];
  snprintf(what, sizeof what, "tp_linear %s %lldx%lldx%lld", tirx_dtype_name(dt), (long long)m,
           (long long)n, (long long)k);
  tirx_tp_spec spec = {.dtype = dt, .m = m, .n = n, .k = k, .nranks = 1};
  tirx_tp_linear t;
  cr_assert(tirx_kernels_tp_linear_create(&spec, &t) == TIRX_OK, "%s: %s", what,
            tirx_last_error());
  cr_assert_str_eq(tirx_collective_rule(t.reduce), "reduce_scatter");
  size_t nx = (size_t)(m * k), nw = (size_t)(n * k), ny = (size_t)(m * n);
  uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2), *hy = malloc(ny * 2), *hp = malloc(ny * 2);
  uint64_t s = drnd();
  tp_random16(dt, hx, nx, &s);
  tp_random16(dt, hw, nw, &s);
  tirx_tp_buffers b = {0};
  DOK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_X), &b.x));
  DOK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_W), &b.w));
  DOK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y_PARTIAL), &b.y_partial));
  DOK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y), &b.y));
  DOK(tp_linear_upload(&t, rt, 0, hx, hw, &b));
  DOK(tirx_runtime_fill32(rt, b.y_partial, 0xffffffffu, ny / 2));
  DOK(tirx_runtime_fill32(rt, b.y, 0xffffffffu, ny / 2));
  DOK(tirx_kernels_tp_linear_prepare(&t, rt, &b));
  DOK(tirx_op_tp_linear(rt, &t, comm, &b, NULL));
  DOK(tirx_comm_synchronize(comm, NULL, 10000));
  DOK(tirx_runtime_copy(rt, hy, b.y, ny * 2, TIRX_COPY_DEVICE_TO_HOST));
  DOK(tirx_runtime_copy(rt, hp, b.y_partial, ny * 2, TIRX_COPY_DEVICE_TO_HOST));
  int wrong = 0;
  double worst = 0, ulp = dt == TIRX_BF16 ? 1.0 / 128 : 1.0 / 1024;
  for (int q = 0; q < 4100; q++) {
    int64_t i = q < 4 ? (q & 1 ? m - 1 : 0) : (int64_t)(drnd() % (uint64_t)m);
    int64_t j = q < 4 ? (q & 2 ? n - 1 : 0) : (int64_t)(drnd() % (uint64_t)n);
    double want = 0, mag = 0;
    for (int64_t c = 0; c < k; c++) {
      double p = tp_from16(dt, hx[i * k + c]) * tp_from16(dt, hw[j * k + c]);
      want += p, mag += fabs(p);
    }
    double got = tp_from16(dt, hy[i * n + j]), e = fabs(got - want);
    if (!(e <= ulp * fabs(want) + 1e-5 * mag + 1e-6)) {
      if (!wrong)
        cr_log_error("%s: Y[%lld, %lld] = %.6g, want %.6g (TIRX_SEED=%llu)", what, (long long)i,
                     (long long)j, got, want, (unsigned long long)dseed);
      wrong++;
    }
    if (e > worst || e != e) worst = e;
  }
  size_t differ = 0;
  for (size_t e = 0; e < ny; e++) differ += hy[e] != hp[e];
  cr_log_info("%s: 4100 sampled elements, max abs error %.3g, %d wrong; Y differs from Y_r in "
              "%zu of %zu elements", what, worst, wrong, differ, ny);
  cr_expect_eq(wrong, 0, "%s: %d of 4100 sampled elements wrong", what, wrong);
  cr_expect_eq(differ, 0, "%s: the reduce-scatter of one addend changed %zu elements", what,
               differ);
  free(hx), free(hw), free(hy), free(hp);
  tirx_runtime_free(rt, b.x), tirx_runtime_free(rt, b.w);
  tirx_runtime_free(rt, b.y_partial), tirx_runtime_free(rt, b.y);
  tirx_kernels_tp_linear_destroy(&t);
}

Test(gpu_dist, tensor_parallel_linear_on_one_rank, .timeout = 600) {
  tirx_runtime *rt = dist_runtime();
  tirx_comm *comm = one_rank(rt, 60000);
  /* The example's default (LLaMA-3.1-8B's down projection at M = 2048), odd M and K, a K tail
   * under one TMA box with a padded leading dimension, a tiny layer and a single row. */
  static const int64_t shapes[][3] = {
      {2048, 4096, 14336}, {1000, 3000, 4000}, {129, 136, 65}, {5, 24, 7}, {1, 16, 9}};
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
      check_tp_linear(rt, comm, d ? TIRX_F16 : TIRX_BF16, shapes[i][0], shapes[i][1],
                      shapes[i][2]);
  tirx_comm_destroy(comm);
  tirx_runtime_destroy(rt);
}

/* Buffers are checked against their dtensors before anything is launched: Y stays poisoned. */
Test(gpu_dist, tensor_parallel_linear_checks_buffers_first, .timeout = 120) {
  tirx_runtime *rt = dist_runtime();
  tirx_comm *comm = one_rank(rt, 60000);
  tirx_tp_spec spec = {.dtype = TIRX_BF16, .m = 64, .n = 64, .k = 64, .nranks = 1};
  tirx_tp_linear t;
  cr_assert(tirx_kernels_tp_linear_create(&spec, &t) == TIRX_OK, "%s", tirx_last_error());
  tirx_tp_buffers b = {0};
  DOK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_X), &b.x));
  DOK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y_PARTIAL), &b.y_partial));
  DOK(tirx_runtime_alloc(rt, tirx_kernels_tp_linear_bytes(&t, TIRX_TP_BUFFER_Y), &b.y));
  DOK(tirx_runtime_fill32(rt, b.y, 0xffffffffu, 64 * 64 / 2));
  cr_assert_eq(tirx_op_tp_linear(rt, &t, comm, &b, NULL), TIRX_E_NULL_ARG); /* b.w is NULL */
  cr_assert_str_eq(tirx_last_error(), "tirx_dtensor_check: rank 0: data is NULL");
  cr_assert_eq(tirx_op_tp_linear(rt, &t, NULL, &b, NULL), TIRX_E_NULL_ARG);
  DOK(tirx_runtime_synchronize(rt, NULL));
  uint16_t hy[64 * 64];
  DOK(tirx_runtime_copy(rt, hy, b.y, sizeof hy, TIRX_COPY_DEVICE_TO_HOST));
  for (size_t e = 0; e < 64 * 64; e++) cr_assert_eq(hy[e], 0xffff, "Y[%zu] was written", e);
  tirx_runtime_free(rt, b.x), tirx_runtime_free(rt, b.y_partial), tirx_runtime_free(rt, b.y);
  tirx_kernels_tp_linear_destroy(&t);
  tirx_comm_destroy(comm);
  tirx_runtime_destroy(rt);
}
