/*
 * fuzz_ops: a randomized robustness harness for the kernel library's ops (tirx/kernels.h).
 *
 *   fuzz_ops [-s SEED] [-n ITERATIONS] [-t SECONDS] [-m ops|prepare|plans|launch] [-v]
 *
 * Each iteration builds a valid call of one tirx_op_* (or of a build, plan or runtime entry
 * point), mutates one to four of its arguments (NULL pointers in every pointer field, zero,
 * negative and huge extents and strides, wrong ranks, unknown dtypes and enum values,
 * garbage option fields and sizes) and calls it on a compile-only runtime. It checks what
 * the project promises of bad input (docs/ARCHITECTURE.md, "Errors and ownership"): no crash,
 * abort, sanitizer report or hang (a watchdog names the call), and an error whose message
 * starts with the function's name. Run it in a sanitizer build (meson setup ...
 * -Db_sanitize=address,undefined) with UBSAN_OPTIONS=halt_on_error=1. At exit it prints every
 * distinct message shape (numbers as #) with its count, for a reader to check that each names
 * the argument and what was expected.
 *
 * Modes: ops (default) calls the ops; prepare calls them between tirx_kernels_prepare_begin
 * and _end, so their launches become tirx_prepare_async (the launch plan's argument checks;
 * run with TIRX_NVRTC_LIBRARY=/nonexistent to keep NVRTC out); plans calls the build and plan
 * functions; launch calls tirx_prepare_async directly with mutated arguments of a row kernel.
 * Exit status: 0 clean, 1 when a check failed (each failure is printed with its call).
 */
#define _GNU_SOURCE
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tirx.h"

/* Under ASan, its report is followed by the call that caused it (UBSan's are not: run with -v,
 * which prints each call before making it). */
enum { MAXR = 8, MAXT = 8 };

static bool prepare_mode;
/* An op that returns TIRX_OK on a compile-only runtime launched nothing (prepare mode aside). */
#define FUZZ_CHECK_OK(fn)                                                                        \
  do {                                                                                           \
    if (!prepare_mode && strncmp((fn), "tirx_op_", 8) == 0)                                      \
      fail("an op returned TIRX_OK on a compile-only runtime", "expected an error");             \
  } while (0)
#define FUZZ_TOOL "fuzz_ops"
#define FUZZ_DESC_BYTES 8192
#include "fuzz_common.h"

/* ---- tensor arguments ---- */

typedef struct targ {
  const char *name;
  bool null;         /* the tensor pointer itself is NULL */
  void *data;
  tirx_dtype dtype;
  int rank;
  int64_t shape[MAXR];
  int64_t strides[MAXR];
  bool has_strides;  /* else strides NULL */
  bool shape_null;
  /* materialised for the call: arrays of exactly the entries the rank says (within MAXR), on
   * the heap, so that a read past them is a sanitizer report */
  int64_t *hshape, *hstrides;
  tirx_tensor_arg t;
} targ;

static void *fake_ptr(int i) { return (void *)(uintptr_t)(0x10000000u + 0x100000u * (unsigned)i); }

static void targ_set(targ *a, const char *name, int i, tirx_dtype dt, int rank, const int64_t *shape) {
  memset(a, 0, sizeof *a);
  a->name = name;
  a->data = fake_ptr(i + 1);
  a->dtype = dt;
  a->rank = rank;
  for (int d = 0; d < rank; d++) a->shape[d] = shape[d];
  /* dense strides given, sometimes */
  if (chance(25)) {
    a->has_strides = true;
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) a->strides[d] = s, s *= shape[d];
  }
}

static void targ_mutate(targ *a) {
  int r = a->rank > 0 && a->rank <= MAXR ? a->rank : 1;
  switch (rint_below(14)) {
  case 0: a->null = true; break;
  case 1: a->data = NULL; break;
  case 2: {
    const uintptr_t offs[] = {1, 2, 4, 8, 12};
    a->data = (void *)((uintptr_t)a->data + PICK(offs));
    break;
  }
  case 3: a->dtype = mut_dtype(); break;
  case 4: {
    const int vals[] = {0, -1, 1, 2, 3, 4, 5, MAXR, INT_MAX, INT_MIN, 100};
    a->rank = chance(50) ? a->rank + (chance(50) ? 1 : -1) : PICK(vals);
    break;
  }
  case 5: a->shape_null = true; break;
  case 6: case 7: case 8: a->shape[rint_below(r)] = mut_i64(a->shape[rint_below(r)]); break;
  case 9: a->has_strides = !a->has_strides; break;
  case 10: case 11: case 12: {
    if (!a->has_strides) {
      a->has_strides = true;
      int64_t s = 1;
      for (int d = r - 1; d >= 0; d--) a->strides[d] = s, s *= a->shape[d] > 0 ? a->shape[d] : 1;
    }
    int d = rint_below(r);
    const int64_t vals[] = {0, -1, -8, 1, 8, 7, INT64_MAX, INT64_MIN, (int64_t)1 << 62, 4096};
    a->strides[d] = chance(50) ? mut_i64(a->strides[d]) : PICK(vals);
    break;
  }
  default: /* every extent huge: products overflow */
    for (int d = 0; d < r; d++)
      if (chance(70)) a->shape[d] = chance(50) ? INT32_MAX : ((int64_t)1 << 40) + 8;
    break;
  }
}

static const tirx_tensor_arg *targ_get(targ *a) {
  if (a->null) return NULL;
  int n = a->rank > 0 ? (a->rank < MAXR ? a->rank : MAXR) : 0;
  a->hshape = malloc((size_t)n * sizeof(int64_t) + (n ? 0 : 1));
  a->hstrides = malloc((size_t)n * sizeof(int64_t) + (n ? 0 : 1));
  memcpy(a->hshape, a->shape, (size_t)n * sizeof(int64_t));
  memcpy(a->hstrides, a->strides, (size_t)n * sizeof(int64_t));
  a->t.data = a->data;
  a->t.dtype = a->dtype;
  a->t.rank = a->rank;
  a->t.shape = a->shape_null ? NULL : a->hshape;
  a->t.strides = a->has_strides ? a->hstrides : NULL;
  return &a->t;
}

static void targ_free(targ *a) {
  free(a->hshape);
  free(a->hstrides);
  a->hshape = a->hstrides = NULL;
}

static void targ_desc(const targ *a) {
  if (a->null) {
    descf(" %s=NULL", a->name);
    return;
  }
  descf(" %s={data=%p dtype=%d rank=%d shape=%s[", a->name, a->data, (int)a->dtype, a->rank,
        a->shape_null ? "NULL" : "");
  int n = a->rank > 0 ? (a->rank < MAXR ? a->rank : MAXR) : 0;
  for (int d = 0; d < n; d++) descf("%s%" PRId64, d ? "," : "", a->shape[d]);
  descf("] strides=");
  if (!a->has_strides) descf("NULL");
  else {
    descf("[");
    for (int d = 0; d < n; d++) descf("%s%" PRId64, d ? "," : "", a->strides[d]);
    descf("]");
  }
  descf("}");
}

/* ---- the calls ---- */

typedef struct call {
  const char *fn; /* the name every message must start with */
  int nt;
  targ t[MAXT];
  bool rt_null;
  void *stream;
} call;

static targ *T(call *c, const char *name, tirx_dtype dt, int rank, const int64_t *shape) {
  targ *a = &c->t[c->nt];
  targ_set(a, name, c->nt, dt, rank, shape);
  c->nt++;
  return a;
}

static void mutate_tensors(call *c) {
  if (c->nt) targ_mutate(&c->t[rint_below(c->nt)]);
}

/* The failures and the messages seen. */

static tirx_runtime *rt;

static void call_desc_begin(call *c, const char *extra) {
  desc_reset();
  descf("%s(rt=%s stream=%p%s%s)", c->fn, c->rt_null ? "NULL" : "rt", c->stream,
        extra ? " " : "", extra ? extra : "");
}
static void call_desc_tensors(call *c) {
  for (int i = 0; i < c->nt; i++) targ_desc(&c->t[i]);
}
static const tirx_tensor_arg *G(call *c, int i) { return targ_get(&c->t[i]); }
static tirx_runtime *RT(call *c) { return c->rt_null ? NULL : rt; }

static int nmut(void) { return 1 + (chance(60) ? 0 : rint_below(3)); }

/* Common mutation: a tensor (most often), the runtime, the stream. */
static bool mutate_common(call *c) {
  int r = rint_below(20);
  if (r == 0) {
    c->rt_null = true;
    return true;
  }
  if (r == 1) {
    c->stream = (void *)(uintptr_t)(rnd() | 1);
    return true;
  }
  return false;
}

static void finish_call(call *c) {
  for (int i = 0; i < c->nt; i++) targ_free(&c->t[i]);
}

/* ---- gemm ---- */

static void fuzz_gemm(void) {
  call c = {.fn = "tirx_op_gemm"};
  static const int64_t Ms[] = {1, 3, 8, 64, 200}, Ns[] = {64, 128, 72, 256}, Ks[] = {64, 128, 4096};
  int64_t M = PICK(Ms), N = PICK(Ns), K = PICK(Ks);
  tirx_dtype dt = chance(50) ? TIRX_F16 : TIRX_BF16;
  tirx_gemm_options o = {0};
  if (chance(50)) o.size = sizeof o;
  const char *fams[] = {NULL, "wgmma", "mma", "scalar"};
  o.family = PICK(fams);
  o.epilogue = (tirx_epilogue)rint_below(4);
  bool use_opts = chance(85);
  T(&c, "a", dt, 2, (int64_t[]){M, K});
  T(&c, "b", dt, 2, (int64_t[]){N, K});
  T(&c, "c", dt, 2, (int64_t[]){M, N});
  T(&c, "bias", dt, chance(50) ? 1 : 2, chance(50) ? (int64_t[]){N, 0} : (int64_t[]){1, N});
  if (c.t[3].rank == 1) c.t[3].shape[0] = N;
  bool bias_null = !use_opts || o.epilogue == TIRX_EPILOGUE_NONE;
  for (int m = nmut(); m > 0; m--) {
    if (mutate_common(&c)) continue;
    int r = rint_below(12);
    if (r == 0) use_opts = !use_opts;
    else if (r == 1) o.size = mut_size(o.size);
    else if (r == 2) o.epilogue = (tirx_epilogue)mut_int((int)o.epilogue);
    else if (r == 3) {
      const char *bad[] = {"", "WGMMA", "mma ", "scalarx", "cublas", NULL};
      o.family = PICK(bad);
    } else if (r == 4) o.sms = mut_int(o.sms);
    else if (r == 5) o.path = (tirx_gemm_path)mut_int((int)o.path);
    else if (r == 6) o.gemv_rows = mut_int(o.gemv_rows);
    else if (r == 7) o.splits = mut_int(o.splits);
    else if (r == 8) o.cluster_m = mut_int(o.cluster_m), o.size = chance(80) ? sizeof o : o.size;
    else if (r == 9) o.cluster_n = mut_int(o.cluster_n), o.size = chance(80) ? sizeof o : o.size;
    else if (r == 10) bias_null = !bias_null;
    else mutate_tensors(&c);
  }
  if (bias_null) c.t[3].null = true;
  char extra[256];
  snprintf(extra, sizeof extra,
           "opts=%s{size=%zu epi=%d family=%s sms=%d path=%d gemv_rows=%d splits=%d cl=%dx%d}",
           use_opts ? "" : "NULL", o.size, (int)o.epilogue, o.family ? o.family : "NULL", o.sms,
           (int)o.path, o.gemv_rows, o.splits, o.cluster_m, o.cluster_n);
  call_desc_begin(&c, extra);
  call_desc_tensors(&c);
  RUN(c.fn, tirx_op_gemm(RT(&c), use_opts ? &o : NULL, G(&c, 0), G(&c, 1), G(&c, 3), G(&c, 2),
                         c.stream));
  finish_call(&c);
}

/* ---- the row ops ---- */

static void mutate_row_opts(tirx_row_options *o) {
  switch (rint_below(8)) {
  case 0: o->size = mut_size(o->size); break;
  case 1: o->threads = mut_int(o->threads); break;
  case 2: o->variant = mut_int(o->variant); break;
  case 3: o->cluster = mut_int(o->cluster); break;
  case 4: o->stages = mut_int(o->stages); break;
  case 5: o->min_blocks = mut_int(o->min_blocks); break;
  case 6: o->sms = mut_int(o->sms); break;
  default: o->scalar = !o->scalar; break;
  }
}

static void fuzz_rows(void) {
  static const char *const names[] = {"tirx_op_rmsnorm",     "tirx_op_layernorm",
                                      "tirx_op_add_rmsnorm", "tirx_op_softmax",
                                      "tirx_op_silu_mul",    "tirx_op_row_sum",
                                      "tirx_op_row_max",     "tirx_op_rmsnorm_fp8",
                                      "tirx_op_add_rmsnorm_fp8"};
  int op = rint_below(9);
  call c = {.fn = names[op]};
  static const int64_t Rs[] = {1, 5, 1000}, Ws[] = {64, 96, 4096, 8};
  int64_t R = PICK(Rs), W = PICK(Ws);
  const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  tirx_dtype dt = PICK(dts);
  float eps = 1e-6f;
  tirx_row_options o = {0};
  bool use_opts = chance(50);
  int64_t xw = op == 4 ? 2 * W : W;
  T(&c, "x", dt, 2, (int64_t[]){R, xw});
  bool row1 = chance(50);
  switch (op) {
  case 0: /* rmsnorm x w out */
    T(&c, "w", dt, row1 ? 1 : 2, row1 ? (int64_t[]){W} : (int64_t[]){1, W});
    T(&c, "out", dt, 2, (int64_t[]){R, W});
    break;
  case 1:
    T(&c, "w", dt, row1 ? 1 : 2, row1 ? (int64_t[]){W} : (int64_t[]){1, W});
    T(&c, "bias", dt, 2, (int64_t[]){1, W});
    T(&c, "out", dt, 2, (int64_t[]){R, W});
    break;
  case 2:
    T(&c, "res", dt, 2, (int64_t[]){R, W});
    T(&c, "w", dt, row1 ? 1 : 2, row1 ? (int64_t[]){W} : (int64_t[]){1, W});
    T(&c, "out", dt, 2, (int64_t[]){R, W});
    T(&c, "res_out", dt, 2, (int64_t[]){R, W});
    break;
  case 3: case 4:
    T(&c, "out", dt, 2, (int64_t[]){R, W});
    break;
  case 5: case 6:
    T(&c, "out", TIRX_F32, row1 ? 1 : 2, (int64_t[]){R, 1});
    break;
  case 7:
    T(&c, "w", dt, row1 ? 1 : 2, row1 ? (int64_t[]){W} : (int64_t[]){1, W});
    T(&c, "out", TIRX_FP8_E4M3, 2, (int64_t[]){R, W});
    T(&c, "scale", TIRX_F32, 2, (int64_t[]){R, 1});
    break;
  default:
    T(&c, "res", dt, 2, (int64_t[]){R, W});
    T(&c, "w", dt, row1 ? 1 : 2, row1 ? (int64_t[]){W} : (int64_t[]){1, W});
    T(&c, "out", TIRX_FP8_E4M3, 2, (int64_t[]){R, W});
    T(&c, "res_out", dt, 2, (int64_t[]){R, W});
    T(&c, "scale", TIRX_F32, 1, (int64_t[]){R});
    break;
  }
  for (int m = nmut(); m > 0; m--) {
    if (mutate_common(&c)) continue;
    int r = rint_below(10);
    if (r == 0) use_opts = !use_opts;
    else if (r <= 2) use_opts = true, mutate_row_opts(&o);
    else if (r == 3) eps = (float)mut_double();
    else mutate_tensors(&c);
  }
  char extra[256];
  snprintf(extra, sizeof extra,
           "opts=%s{size=%zu threads=%d variant=%d cluster=%d stages=%d min_blocks=%d sms=%d "
           "scalar=%d} eps=%g",
           use_opts ? "" : "NULL", o.size, o.threads, o.variant, o.cluster, o.stages,
           o.min_blocks, o.sms, (int)o.scalar, (double)eps);
  call_desc_begin(&c, extra);
  call_desc_tensors(&c);
  const tirx_row_options *op_ = use_opts ? &o : NULL;
  tirx_runtime *r_ = RT(&c);
  void *s_ = c.stream;
  switch (op) {
  case 0: RUN(c.fn, tirx_op_rmsnorm(r_, op_, G(&c, 0), G(&c, 1), G(&c, 2), eps, s_)); break;
  case 1:
    RUN(c.fn, tirx_op_layernorm(r_, op_, G(&c, 0), G(&c, 1), G(&c, 2), G(&c, 3), eps, s_));
    break;
  case 2:
    RUN(c.fn, tirx_op_add_rmsnorm(r_, op_, G(&c, 0), G(&c, 1), G(&c, 2), G(&c, 3), G(&c, 4),
                                  eps, s_));
    break;
  case 3: RUN(c.fn, tirx_op_softmax(r_, op_, G(&c, 0), G(&c, 1), s_)); break;
  case 4: RUN(c.fn, tirx_op_silu_mul(r_, op_, G(&c, 0), G(&c, 1), s_)); break;
  case 5: RUN(c.fn, tirx_op_row_sum(r_, op_, G(&c, 0), G(&c, 1), s_)); break;
  case 6: RUN(c.fn, tirx_op_row_max(r_, op_, G(&c, 0), G(&c, 1), s_)); break;
  case 7:
    RUN(c.fn, tirx_op_rmsnorm_fp8(r_, op_, G(&c, 0), G(&c, 1), G(&c, 2), G(&c, 3), eps, s_));
    break;
  default:
    RUN(c.fn, tirx_op_add_rmsnorm_fp8(r_, op_, G(&c, 0), G(&c, 1), G(&c, 2), G(&c, 3),
                                      G(&c, 4), G(&c, 5), eps, s_));
    break;
  }
  finish_call(&c);
}

/* ---- rope ---- */

static void fuzz_rope(void) {
  call c = {.fn = "tirx_op_rope"};
  static const int64_t Ts[] = {1, 7, 64}, Hs[] = {8, 32}, Ds[] = {64, 128};
  int64_t Tn = PICK(Ts), H = PICK(Hs), D = PICK(Ds), HKV = chance(50) ? 1 : 8, P = 16;
  tirx_dtype dt = chance(50) ? TIRX_F16 : TIRX_BF16;
  tirx_rope_options o = {0};
  bool use_opts = chance(50);
  if (chance(30)) o.rot_dim = (int)D / 2;
  o.style = (tirx_rope_style)rint_below(2);
  int64_t half = (o.rot_dim ? o.rot_dim : D) / 2;
  tirx_dtype cdt = chance(70) ? TIRX_F32 : dt;
  T(&c, "q", dt, 3, (int64_t[]){Tn, H, D});
  T(&c, "k", dt, 3, (int64_t[]){Tn, HKV, D});
  if (chance(20)) c.t[1].null = true;
  T(&c, "pos", TIRX_I32, chance(50) ? 1 : 2, (int64_t[]){Tn, 1});
  T(&c, "cos", cdt, 2, (int64_t[]){P, half});
  T(&c, "sin", cdt, 2, (int64_t[]){P, half});
  for (int m = nmut(); m > 0; m--) {
    if (mutate_common(&c)) continue;
    int r = rint_below(10);
    if (r == 0) use_opts = !use_opts;
    else if (r == 1) use_opts = true, o.size = mut_size(o.size);
    else if (r == 2) use_opts = true, o.style = (tirx_rope_style)mut_int((int)o.style);
    else if (r == 3) use_opts = true, o.rot_dim = mut_int(o.rot_dim);
    else if (r == 4) {
      use_opts = true, o.size = sizeof o;
      int64_t *s = chance(50) ? o.q_strides : o.k_strides;
      s[rint_below(2)] = mut_i64(0);
    } else mutate_tensors(&c);
  }
  char extra[256];
  snprintf(extra, sizeof extra,
           "opts=%s{size=%zu style=%d rot=%d qs=[%" PRId64 ",%" PRId64 "] ks=[%" PRId64 ",%" PRId64 "]}",
           use_opts ? "" : "NULL", o.size, (int)o.style, o.rot_dim, o.q_strides[0],
           o.q_strides[1], o.k_strides[0], o.k_strides[1]);
  call_desc_begin(&c, extra);
  call_desc_tensors(&c);
  RUN(c.fn, tirx_op_rope(RT(&c), use_opts ? &o : NULL, G(&c, 0), G(&c, 1), G(&c, 2), G(&c, 3),
                         G(&c, 4), c.stream));
  finish_call(&c);
}

/* ---- attention ---- */

static void fuzz_attention(void) {
  call c = {.fn = "tirx_op_attention"};
  static const int64_t Bs[] = {1, 2}, Ss[] = {1, 100, 128}, Ds[] = {64, 128};
  int64_t B = PICK(Bs), SQ = PICK(Ss), SK = PICK(Ss), H = 8, HKV = chance(50) ? 8 : 2, D = PICK(Ds);
  tirx_dtype dt = chance(50) ? TIRX_F16 : TIRX_BF16;
  tirx_attention_options o = {0};
  bool use_opts = chance(60);
  o.causal = chance(50);
  o.path = chance(50) ? "reference" : NULL;
  bool vl = chance(35);
  int32_t cuq[8], cuk[8];
  tirx_attention_varlen var = {0};
  if (vl) {
    int64_t tq = B * SQ, tk = B * SK;
    T(&c, "q", dt, 3, (int64_t[]){tq, H, D});
    T(&c, "k", dt, 3, (int64_t[]){tk, HKV, D});
    T(&c, "v", dt, 3, (int64_t[]){tk, HKV, D});
    T(&c, "o", dt, 3, (int64_t[]){tq, H, D});
    T(&c, "lse", TIRX_F32, 2, (int64_t[]){H, tq});
    var.batch = (int)B;
    for (int i = 0; i <= B; i++) cuq[i] = (int32_t)(i * SQ), cuk[i] = (int32_t)(i * SK);
    var.cu_seqlens_q = cuq, var.cu_seqlens_k = cuk;
    var.cu_seqlens_q_dev = fake_ptr(20), var.cu_seqlens_k_dev = fake_ptr(21);
  } else {
    T(&c, "q", dt, 4, (int64_t[]){B, SQ, H, D});
    T(&c, "k", dt, 4, (int64_t[]){B, SK, HKV, D});
    T(&c, "v", dt, 4, (int64_t[]){B, SK, HKV, D});
    T(&c, "o", dt, 4, (int64_t[]){B, SQ, H, D});
    T(&c, "lse", TIRX_F32, 3, (int64_t[]){B, H, SQ});
  }
  if (chance(50)) c.t[4].null = true;
  for (int m = nmut(); m > 0; m--) {
    if (mutate_common(&c)) continue;
    int r = rint_below(12);
    if (r == 0) use_opts = !use_opts;
    else if (r == 1) use_opts = true, o.size = mut_size(o.size);
    else if (r == 2) use_opts = true, o.scale = mut_double();
    else if (r == 3) use_opts = true, o.sms = mut_int(o.sms);
    else if (r == 4) {
      const char *bad[] = {"", "ref", "referencex", "fast", NULL};
      use_opts = true, o.path = PICK(bad);
    } else if (r == 5 && vl) {
      switch (rint_below(7)) {
      case 0: var.batch = chance(50) ? 0 : PICK(((int[]){-1, INT_MIN, (int)B - 1})); break;
      case 1: var.cu_seqlens_q = NULL; break;
      case 2: var.cu_seqlens_k = NULL; break;
      case 3: var.cu_seqlens_q_dev = chance(50) ? NULL : (const void *)((uintptr_t)fake_ptr(20) + 4); break;
      case 4: var.cu_seqlens_k_dev = chance(50) ? NULL : (const void *)((uintptr_t)fake_ptr(21) + 4); break;
      case 5: cuq[rint_below((int)B + 1)] = (int32_t)mut_int(0); break;
      default: cuk[rint_below((int)B + 1)] = (int32_t)mut_int(0); break;
      }
    } else if (r == 6) {
      /* the other form's varlen (rank-4 tensors with a varlen, or the reverse) */
      if (vl) vl = false;
      else {
        vl = true;
        var.batch = 1, cuq[0] = cuk[0] = 0, cuq[1] = (int32_t)SQ, cuk[1] = (int32_t)SK;
        var.cu_seqlens_q = cuq, var.cu_seqlens_k = cuk;
        var.cu_seqlens_q_dev = fake_ptr(20), var.cu_seqlens_k_dev = fake_ptr(21);
      }
    } else mutate_tensors(&c);
  }
  char extra[512];
  snprintf(extra, sizeof extra,
           "opts=%s{size=%zu scale=%g causal=%d path=%s sms=%d} varlen=%s{batch=%d q=%p k=%p "
           "qd=%p kd=%p cuq=[%d,%d,%d] cuk=[%d,%d,%d]}",
           use_opts ? "" : "NULL", o.size, o.scale, (int)o.causal, o.path ? o.path : "NULL",
           o.sms, vl ? "" : "NULL", var.batch, (const void *)var.cu_seqlens_q,
           (const void *)var.cu_seqlens_k, var.cu_seqlens_q_dev, var.cu_seqlens_k_dev, cuq[0],
           cuq[1], B > 1 ? cuq[2] : 0, cuk[0], cuk[1], B > 1 ? cuk[2] : 0);
  call_desc_begin(&c, extra);
  call_desc_tensors(&c);
  RUN(c.fn, tirx_op_attention(RT(&c), use_opts ? &o : NULL, G(&c, 0), G(&c, 1), G(&c, 2),
                              G(&c, 3), G(&c, 4), vl ? &var : NULL, c.stream));
  finish_call(&c);
}

/* ---- decode attention ---- */

static void fuzz_decode(void) {
  call c = {.fn = "tirx_op_decode_attention"};
  static const int64_t Bs[] = {1, 3}, QLs[] = {1, 2}, Ds[] = {64, 128}, Ps[] = {16, 64};
  int64_t B = PICK(Bs), QL = PICK(QLs), H = 8, HKV = chance(50) ? 8 : 2, D = PICK(Ds),
          P = PICK(Ps), NP = 32, MP = 8;
  tirx_dtype dt = chance(50) ? TIRX_F16 : TIRX_BF16;
  tirx_decode_options o = {0};
  int32_t lens[4];
  for (int i = 0; i < B; i++) lens[i] = (int32_t)(QL + rint_below((int)(MP * P - QL)));
  o.context_lens_host = lens;
  if (chance(30)) o.splits = 1 + rint_below(4);
  bool use_opts = chance(95);
  T(&c, "q", dt, 4, (int64_t[]){B, QL, H, D});
  T(&c, "k_cache", dt, 4, (int64_t[]){NP, P, HKV, D});
  T(&c, "v_cache", dt, 4, (int64_t[]){NP, P, HKV, D});
  T(&c, "block_table", TIRX_I32, 2, (int64_t[]){B, MP});
  T(&c, "context_lens", TIRX_I32, 1, (int64_t[]){B});
  T(&c, "o", dt, 4, (int64_t[]){B, QL, H, D});
  T(&c, "lse", TIRX_F32, 3, (int64_t[]){B, QL, H});
  if (chance(50)) c.t[6].null = true;
  for (int m = nmut(); m > 0; m--) {
    if (mutate_common(&c)) continue;
    int r = rint_below(12);
    if (r == 0) use_opts = !use_opts;
    else if (r == 1) o.size = mut_size(o.size);
    else if (r == 2) o.scale = mut_double();
    else if (r == 3) o.splits = mut_int(o.splits);
    else if (r == 4) o.sms = mut_int(o.sms);
    else if (r == 5) o.context_lens_host = NULL;
    else if (r == 6) lens[rint_below((int)B)] = (int32_t)mut_int(lens[0]);
    else mutate_tensors(&c);
  }
  /* q's batch may have been mutated: the host lengths must stay readable for what the op may
   * read (B entries of q's batch): keep B within the array or take the pointer away */
  if (!c.t[0].null && c.t[0].rank >= 1 && (c.t[0].shape[0] > 4) && o.context_lens_host)
    c.t[0].shape[0] = chance(50) ? 4 : c.t[0].shape[0], o.context_lens_host = c.t[0].shape[0] > 4 ? NULL : lens;
  char extra[256];
  snprintf(extra, sizeof extra, "opts=%s{size=%zu scale=%g splits=%d sms=%d lens=%s[%d,%d,%d]}",
           use_opts ? "" : "NULL", o.size, o.scale, o.splits, o.sms,
           o.context_lens_host ? "" : "NULL", lens[0], B > 1 ? lens[1] : 0, B > 2 ? lens[2] : 0);
  call_desc_begin(&c, extra);
  call_desc_tensors(&c);
  RUN(c.fn, tirx_op_decode_attention(RT(&c), use_opts ? &o : NULL, G(&c, 0), G(&c, 1), G(&c, 2),
                                     G(&c, 3), G(&c, 4), G(&c, 5), G(&c, 6), c.stream));
  finish_call(&c);
}

static void fuzz_cache(void) {
  call c = {.fn = "tirx_op_reshape_and_cache"};
  static const int64_t NTs[] = {1, 5, 100}, Ds[] = {64, 128}, Ps[] = {16, 32, 64};
  int64_t NT = PICK(NTs), HKV = chance(50) ? 8 : 2, D = PICK(Ds), P = PICK(Ps), NP = 32;
  tirx_dtype dt = chance(50) ? TIRX_F16 : TIRX_BF16;
  T(&c, "k", dt, 3, (int64_t[]){NT, HKV, D});
  T(&c, "v", dt, 3, (int64_t[]){NT, HKV, D});
  T(&c, "k_cache", dt, 4, (int64_t[]){NP, P, HKV, D});
  T(&c, "v_cache", dt, 4, (int64_t[]){NP, P, HKV, D});
  T(&c, "slot_mapping", TIRX_I32, 1, (int64_t[]){NT});
  for (int m = nmut(); m > 0; m--)
    if (!mutate_common(&c)) mutate_tensors(&c);
  call_desc_begin(&c, NULL);
  call_desc_tensors(&c);
  RUN(c.fn, tirx_op_reshape_and_cache(RT(&c), G(&c, 0), G(&c, 1), G(&c, 2), G(&c, 3), G(&c, 4),
                                      c.stream));
  finish_call(&c);
}

/* ---- the tensor-parallel layer (no communicator here: its spec, and NULLs) ---- */

static void fuzz_tp(void) {
  tirx_tp_spec s = {0};
  const tirx_dtype dts[] = {TIRX_F16, TIRX_BF16};
  s.dtype = PICK(dts);
  s.m = 128, s.n = 256, s.k = 512, s.nranks = 1 << rint_below(3);
  if (chance(30)) s.size = sizeof s;
  bool null_spec = false;
  for (int m = nmut(); m > 0; m--) {
    switch (rint_below(12)) {
    case 0: s.size = mut_size(s.size); break;
    case 1: s.dtype = mut_dtype(); break;
    case 2: s.m = mut_i64(s.m); break;
    case 3: s.n = mut_i64(s.n); break;
    case 4: s.k = mut_i64(s.k); break;
    case 5: s.nranks = mut_int(s.nranks); break;
    case 6: s.gemm.size = mut_size(s.gemm.size); break;
    case 7: s.gemm.epilogue = (tirx_epilogue)mut_int(0); break;
    case 8: s.gemm.path = (tirx_gemm_path)mut_int(0); break;
    case 9: s.gemm.sms = mut_int(0); break;
    case 10: null_spec = true; break;
    default: {
      const char *bad[] = {"", "wgmma", "mma", "xx", NULL};
      s.gemm.family = PICK(bad);
      break;
    }
    }
  }
  desc_reset();
  descf("tirx_kernels_tp_linear_create(spec=%s{size=%zu dtype=%d m=%" PRId64 " n=%" PRId64
        " k=%" PRId64 " nranks=%d gemm={size=%zu epi=%d family=%s sms=%d path=%d}})",
        null_spec ? "NULL" : "", s.size, (int)s.dtype, s.m, s.n, s.k, s.nranks, s.gemm.size,
        (int)s.gemm.epilogue, s.gemm.family ? s.gemm.family : "NULL", s.gemm.sms,
        (int)s.gemm.path);
  tirx_tp_linear t;
  RUN("tirx_kernels_tp_linear_create", tirx_kernels_tp_linear_create(null_spec ? NULL : &s, &t));
  if (tirx_last_status() == TIRX_OK || t.gemm) {
    desc_reset();
    descf("tirx_op_tp_linear(rt, t, comm=NULL, b)");
    tirx_tp_buffers b = {fake_ptr(1), fake_ptr(2), fake_ptr(3), fake_ptr(4)};
    RUN("tirx_op_tp_linear", tirx_op_tp_linear(rt, &t, NULL, &b, NULL));
    for (int w = -1; w <= 4; w++) (void)tirx_kernels_tp_linear_bytes(&t, (tirx_tp_buffer)w);
    tirx_kernels_tp_linear_destroy(&t);
  }
  desc_reset();
  descf("tirx_op_tp_linear(NULLs)");
  RUN("tirx_op_tp_linear", tirx_op_tp_linear(chance(50) ? rt : NULL, NULL, NULL, NULL, NULL));
  (void)tirx_kernels_tp_linear_bytes(NULL, TIRX_TP_BUFFER_X);
  tirx_kernels_tp_linear_destroy(NULL);
}

/* ---- the build and plan functions ---- */

static void fuzz_plans(void) {
  int which = rint_below(9);
  const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  tirx_dtype dt = chance(80) ? PICK(dts) : mut_dtype();
  desc_reset();
  switch (which) {
  case 0: case 1: {
    tirx_gemm_options o = {0};
    if (chance(50)) o.size = sizeof o;
    int64_t m = chance(50) ? 64 : mut_i64(64), n = chance(50) ? 256 : mut_i64(256),
            k = chance(50) ? 4096 : mut_i64(4096);
    for (int i = nmut(); i > 0; i--) {
      switch (rint_below(8)) {
      case 0: o.size = mut_size(o.size); break;
      case 1: o.sms = mut_int(o.sms); break;
      case 2: o.path = (tirx_gemm_path)mut_int(o.path); break;
      case 3: o.splits = mut_int(o.splits); break;
      case 4: o.gemv_rows = mut_int(o.gemv_rows); break;
      case 5: o.cluster_m = mut_int(o.cluster_m), o.size = sizeof o; break;
      case 6: o.cluster_n = mut_int(o.cluster_n), o.size = sizeof o; break;
      default: o.epilogue = (tirx_epilogue)mut_int(0); break;
      }
    }
    descf("tirx_kernels_gemm_%s(opts={size=%zu epi=%d sms=%d path=%d gemv_rows=%d splits=%d "
          "cl=%dx%d} m=%" PRId64 " n=%" PRId64 " k=%" PRId64 ")",
          which ? "plan" : "tiles", o.size, (int)o.epilogue, o.sms, (int)o.path, o.gemv_rows,
          o.splits, o.cluster_m, o.cluster_n, m, n, k);
    if (which == 0) {
      tirx_gemm_tiles t;
      RUN("tirx_kernels_gemm_tiles", tirx_kernels_gemm_tiles(chance(90) ? &o : NULL, m, n, k,
                                                              chance(95) ? &t : NULL));
    } else {
      tirx_gemm_plan p = {0};
      if (chance(50)) p.size = sizeof p;
      if (chance(10)) p.size = mut_size(p.size);
      RUN("tirx_kernels_gemm_plan", tirx_kernels_gemm_plan(chance(90) ? &o : NULL, m, n, k,
                                                            chance(95) ? &p : NULL));
      if (chance(3)) { /* a build of the plan's shape (slow: rarely) */
        tirx_kernel *kk = NULL;
        RUN("tirx_kernels_gemm_build", tirx_kernels_gemm_build(&o, dt, m, n, k, &kk));
        tirx_kernel_release(kk);
      }
    }
    break;
  }
  case 2: case 3: {
    tirx_row_options o = {0};
    int op = chance(85) ? rint_below(TIRX_ROW_OP_COUNT) : mut_int(0);
    int64_t w = chance(60) ? PICK(((int64_t[]){64, 100, 4096, 32768, 20000})) : mut_i64(64);
    for (int i = nmut(); i > 0; i--) mutate_row_opts(&o);
    descf("tirx_kernels_row_plan(op=%d w=%" PRId64 " dt=%d opts={size=%zu threads=%d variant=%d "
          "cluster=%d stages=%d min_blocks=%d sms=%d})",
          op, w, (int)dt, o.size, o.threads, o.variant, o.cluster, o.stages, o.min_blocks,
          o.sms);
    tirx_row_plan p = {0};
    if (chance(30)) p.size = sizeof p;
    if (chance(10)) p.size = mut_size(p.size);
    RUN("tirx_kernels_row_plan",
        tirx_kernels_row_plan((tirx_row_op)op, chance(90) ? &o : NULL, dt, w, chance(95) ? &p : NULL));
    (void)tirx_kernels_row_name((tirx_row_op)op);
    break;
  }
  case 4: {
    tirx_decode_options o = {0};
    int b = 4, h = 8, hkv = 2, ql = 1, d = 128;
    int64_t maxl = 1000;
    for (int i = nmut(); i > 0; i--) {
      switch (rint_below(10)) {
      case 0: o.size = mut_size(o.size); break;
      case 1: o.splits = mut_int(o.splits); break;
      case 2: o.sms = mut_int(o.sms); break;
      case 3: o.scale = mut_double(); break;
      case 4: b = mut_int(b); break;
      case 5: h = mut_int(h); break;
      case 6: hkv = mut_int(hkv); break;
      case 7: ql = mut_int(ql); break;
      case 8: d = mut_int(d); break;
      default: maxl = mut_i64(maxl); break;
      }
    }
    descf("tirx_kernels_decode_plan(opts={size=%zu splits=%d sms=%d scale=%g} b=%d h=%d hkv=%d "
          "ql=%d d=%d maxl=%" PRId64 ")",
          o.size, o.splits, o.sms, o.scale, b, h, hkv, ql, d, maxl);
    tirx_decode_plan p = {0};
    if (chance(50)) p.size = sizeof p;
    RUN("tirx_kernels_decode_plan",
        tirx_kernels_decode_plan(chance(90) ? &o : NULL, b, h, hkv, ql, d, maxl, chance(95) ? &p : NULL));
    break;
  }
  case 5: { /* the builds' argument checks (mutated: mostly refused before building) */
    int d = 128, p = 16, h = 8, hkv = 2, ql = 1, w = TIRX_DECODE_UNSPLIT;
    switch (rint_below(6)) {
    case 0: d = mut_int(d); break;
    case 1: p = mut_int(p); break;
    case 2: h = mut_int(h); break;
    case 3: hkv = mut_int(hkv); break;
    case 4: ql = mut_int(ql); break;
    default: w = mut_int(w); break;
    }
    descf("tirx_kernels_decode_build(which=%d dt=%d d=%d p=%d h=%d hkv=%d ql=%d)", w, (int)dt, d,
          p, h, hkv, ql);
    tirx_kernel *k = NULL;
    bool valid = (dt == TIRX_F16 || dt == TIRX_BF16) && (d == 64 || d == 128) &&
                 (p == 16 || p == 32 || p == 64) && hkv >= 1 && h >= 1 && h % hkv == 0 &&
                 ql >= 1 && ql <= 8 && h / hkv * ql <= 64 && w >= 0 && w <= 2;
    if (!valid || chance(5)) {
      RUN("tirx_kernels_decode_build",
          tirx_kernels_decode_build((tirx_decode_kernel)w, dt, d, p, h, hkv, ql, chance(50),
                                    chance(95) ? &k : NULL));
      tirx_kernel_release(k);
    }
    k = NULL;
    desc_reset();
    descf("tirx_kernels_reshape_and_cache_build(dt=%d d=%d p=%d hkv=%d)", (int)dt, d, p, hkv);
    valid = (dt == TIRX_F16 || dt == TIRX_BF16) && (d == 64 || d == 128) &&
            (p == 16 || p == 32 || p == 64) && hkv >= 1;
    if (!valid || chance(5)) {
      RUN("tirx_kernels_reshape_and_cache_build",
          tirx_kernels_reshape_and_cache_build(dt, d, p, hkv, chance(95) ? &k : NULL));
      tirx_kernel_release(k);
    }
    break;
  }
  case 6: {
    tirx_rope_options o = {0};
    int d = 128, h = 8, hkv = 2;
    tirx_dtype cdt = TIRX_F32;
    for (int i = nmut(); i > 0; i--) {
      switch (rint_below(9)) {
      case 0: o.size = mut_size(o.size); break;
      case 1: o.style = (tirx_rope_style)mut_int(0); break;
      case 2: o.rot_dim = mut_int(o.rot_dim); break;
      case 3: o.size = sizeof o, o.q_strides[rint_below(2)] = mut_i64(0); break;
      case 4: o.size = sizeof o, o.k_strides[rint_below(2)] = mut_i64(0); break;
      case 5: d = mut_int(d); break;
      case 6: h = mut_int(h); break;
      case 7: hkv = mut_int(hkv); break;
      default: cdt = mut_dtype(); break;
      }
    }
    descf("tirx_kernels_rope_build(opts={size=%zu style=%d rot=%d qs=[%" PRId64 ",%" PRId64
          "] ks=[%" PRId64 ",%" PRId64 "]} dt=%d cdt=%d d=%d h=%d hkv=%d)",
          o.size, (int)o.style, o.rot_dim, o.q_strides[0], o.q_strides[1], o.k_strides[0],
          o.k_strides[1], (int)dt, (int)cdt, d, h, hkv);
    tirx_kernel *k = NULL;
    RUN("tirx_kernels_rope_build",
        tirx_kernels_rope_build(chance(90) ? &o : NULL, dt, cdt, d, h, hkv, chance(95) ? &k : NULL));
    tirx_kernel_release(k);
    break;
  }
  case 7: {
    tirx_attention_options o = {0};
    int d = 128, h = 8, hkv = 2;
    for (int i = nmut(); i > 0; i--) {
      switch (rint_below(7)) {
      case 0: o.size = mut_size(o.size); break;
      case 1: o.scale = mut_double(); break;
      case 2: o.sms = mut_int(o.sms); break;
      case 3: o.path = PICK(((const char *[]){"", "reference", "x", NULL})); break;
      case 4: d = mut_int(d); break;
      case 5: h = mut_int(h); break;
      default: hkv = mut_int(hkv); break;
      }
    }
    descf("tirx_kernels_attention_build(opts={size=%zu scale=%g sms=%d path=%s} dt=%d d=%d h=%d "
          "hkv=%d)",
          o.size, o.scale, o.sms, o.path ? o.path : "NULL", (int)dt, d, h, hkv);
    bool valid = (dt == TIRX_F16 || dt == TIRX_BF16) && (d == 64 || d == 128 || d == 256) &&
                 hkv >= 1 && h >= 1 && h % hkv == 0 && o.size == 0;
    if (!valid || chance(3)) {
      tirx_kernel *k = NULL;
      RUN("tirx_kernels_attention_build",
          tirx_kernels_attention_build(chance(90) ? &o : NULL, dt, d, h, hkv, chance(50),
                                       chance(95) ? &k : NULL));
      tirx_kernel_release(k);
    }
    break;
  }
  default: {
    tirx_row_options o = {0};
    int64_t w = chance(60) ? 64 : mut_i64(64);
    for (int i = nmut(); i > 0; i--) mutate_row_opts(&o);
    descf("tirx_kernels_row_build/rmsnorm_fp8_build(w=%" PRId64 " dt=%d opts={size=%zu threads=%d "
          "variant=%d cluster=%d stages=%d min_blocks=%d sms=%d})",
          w, (int)dt, o.size, o.threads, o.variant, o.cluster, o.stages, o.min_blocks, o.sms);
    tirx_row_plan p = {0};
    if (tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, &o, dt, w, &p) != TIRX_OK || chance(5)) {
      tirx_kernel *k = NULL;
      if (chance(50))
        RUN("tirx_kernels_row_build",
            tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, &o, dt, w, chance(95) ? &k : NULL));
      else
        RUN("tirx_kernels_rmsnorm_fp8_build",
            tirx_kernels_rmsnorm_fp8_build(&o, dt, w, chance(50), chance(95) ? &k : NULL));
      tirx_kernel_release(k);
    }
    break;
  }
  }
}

/* ---- tirx_prepare_async with mutated arguments of a row kernel ---- */

static tirx_kernel *launch_kernel;

static void fuzz_launch(void) {
  if (!launch_kernel) {
    if (tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, NULL, TIRX_F16, 64, &launch_kernel) != TIRX_OK) {
      fprintf(stderr, "fuzz_ops: cannot build the launch kernel: %s\n", tirx_last_error());
      exit(2);
    }
  }
  call c = {.fn = "tirx_prepare_async"};
  int64_t R = 5;
  T(&c, "x", TIRX_F16, 2, (int64_t[]){R, 64});
  T(&c, "w", TIRX_F16, 2, (int64_t[]){1, 64});
  T(&c, "out", TIRX_F16, 2, (int64_t[]){R, 64});
  int kinds[5] = {TIRX_ARG_I32, TIRX_ARG_TENSOR, TIRX_ARG_TENSOR, TIRX_ARG_TENSOR, TIRX_ARG_F32};
  int32_t rows = (int32_t)R;
  int nargs = 5;
  for (int m = nmut(); m > 0; m--) {
    int r = rint_below(10);
    if (r == 0) kinds[rint_below(5)] = mut_int(1);
    else if (r == 1) nargs = mut_int(nargs);
    else if (r == 2) rows = mut_int(rows);
    else {
      targ *a = &c.t[rint_below(3)];
      targ_mutate(a);
      a->null = false; /* the arg holds the tensor by value */
    }
  }
  call_desc_begin(&c, NULL);
  descf(" rows=%d nargs=%d kinds=[%d,%d,%d,%d,%d]", rows, nargs, kinds[0], kinds[1], kinds[2],
        kinds[3], kinds[4]);
  call_desc_tensors(&c);
  tirx_arg args[5];
  memset(args, 0, sizeof args);
  args[0] = tirx_arg_i32(rows);
  for (int i = 0; i < 3; i++) args[1 + i].u.tensor = *G(&c, i);
  args[4] = tirx_arg_f32(1e-6f);
  for (int i = 0; i < 5; i++) {
    args[i].kind = (tirx_arg_kind)kinds[i];
    if (kinds[i] == TIRX_ARG_DLPACK || kinds[i] == TIRX_ARG_DLPACK_VERSIONED)
      args[i].kind = TIRX_ARG_TENSOR; /* a DLPack pointer would be garbage: the caller's bug */
  }
  int n = nargs < 0 ? nargs : nargs > 5 ? 5 : nargs;
  tirx_future *f = NULL;
  RUN(c.fn, tirx_prepare_async(RT(&c), launch_kernel, args, n, &f));
  if (f) {
    (void)tirx_future_wait(f, -1);
    tirx_future_release(f);
  }
  finish_call(&c);
}

/* ---- main ---- */

int main(int argc, char **argv) {
  uint64_t seed = 1;
  long iters = -1;
  double seconds = 60;
  const char *mode = "ops";
  int opt;
  while ((opt = getopt(argc, argv, "s:n:t:m:vw:")) != -1) {
    switch (opt) {
    case 's': seed = strtoull(optarg, NULL, 0); break;
    case 'n': iters = strtol(optarg, NULL, 0); break;
    case 't': seconds = strtod(optarg, NULL); break;
    case 'm': mode = optarg; break;
    case 'v': verbose = true; break;
    case 'w': watchdog_s = atoi(optarg); break;
    default:
      fprintf(stderr, "usage: %s [-s SEED] [-n ITERATIONS] [-t SECONDS] [-m ops|prepare|plans|launch] [-v] [-w WATCHDOG_S]\n",
              argv[0]);
      return 2;
    }
  }
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
  signal(SIGALRM, on_alarm);
#ifdef HAVE_SANITIZER_DEATH
  __sanitizer_set_death_callback(on_death);
#endif
  tirx_runtime_options ro = {.compile_only = true, .cache_disabled = true};
  if (tirx_runtime_create(&ro, &rt) != TIRX_OK) {
    fprintf(stderr, "fuzz_ops: tirx_runtime_create: %s\n", tirx_last_error());
    return 2;
  }
  prepare_mode = strcmp(mode, "prepare") == 0;
  bool plans = strcmp(mode, "plans") == 0, launch = strcmp(mode, "launch") == 0;
  double t0 = now_s();
  long i = 0;
  for (; iters < 0 ? now_s() - t0 < seconds : i < iters; i++) {
    if (prepare_mode) (void)tirx_kernels_prepare_begin();
    if (plans) {
      fuzz_plans();
    } else if (launch) {
      fuzz_launch();
    } else {
      int w = rint_below(100);
      if (w < 14) fuzz_gemm();
      else if (w < 50) fuzz_rows();
      else if (w < 62) fuzz_rope();
      else if (w < 76) fuzz_attention();
      else if (w < 90) fuzz_decode();
      else if (w < 98) fuzz_cache();
      else fuzz_tp();
    }
    if (prepare_mode) {
      tirx_future **fs = NULL;
      int nf = 0;
      if (tirx_kernels_prepare_end(&fs, &nf) == TIRX_OK) {
        for (int j = 0; j < nf; j++) {
          (void)tirx_future_wait(fs[j], -1);
          tirx_future_release(fs[j]);
        }
        free(fs);
      }
    }
    if (i % 500 == 499) tirx_kernels_clear();
  }
  double took = now_s() - t0;
  printf("fuzz_ops: mode %s, seed %" PRIu64 ", %ld iterations, %ld calls in %.1f s, %d failures, "
         "%d message shapes, %d kernels cached\n",
         mode, seed, i, ncalls, took, failures, nshapes, tirx_kernels_cached());
  print_shapes();
  tirx_kernel_release(launch_kernel);
  tirx_kernels_clear();
  tirx_runtime_destroy(rt);
  return failures ? 1 : 0;
}
