/*
 * tirx_op_attention (tirx/kernels.h): every argument checked into a tirx__attn_call
 * (attention_internal.h), then the default path (attention_fast.c) or the simple reference
 * kernel below, written with the public builder.
 *
 * The reference kernel. One CTA of 128 threads holds 32 query rows of one (batch, head); each
 * row is four adjacent lanes, each lane D/4 contiguous dimensions of q (in f32, times
 * scale * log2(e)) and of the f32 accumulator. Keys are read from global memory one at a time
 * (every row of the CTA reads the same kv head, so a warp's loads are broadcasts): the lanes'
 * partial dot products are summed with two xor shuffles, then the online softmax in the
 * log2 domain (exp2). The loop runs to the CTA's last key (the longest causal row), the same
 * trip count on every lane, so the shuffles are always full-warp; a key a row does not see
 * (past its causal end, or a row past the sequence) leaves the row's state unchanged through
 * selects. Causal masks are aligned to the bottom right: row i sees keys j <= i + S_k - S_q. A
 * row that sees no key gives o = 0 and lse = -inf.
 */
#include "attention_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char FN[] = "tirx_op_attention";

/* ---- the reference kernel ---- */

enum { REF_THREADS = 128, REF_LANES = 4, REF_ROWS = REF_THREADS / REF_LANES };

static tirx_expr *I(tirx_builder *b, int64_t v) { return tirx_int(b, v); }

/* Launch parameters, in order:
 *   fixed:  B, S_q, S_k, H, H_kv, causal (i32), scale_log2 (f32), q [B, S_q, H, D],
 *           k, v [B, S_k, H_kv, D], o [B, S_q, H, D] (strided, innermost stride 1)
 *           [, lse [B, H, S_q] f32 dense]
 *   varlen: B, T_q, T_k, H, H_kv, causal, scale_log2, q [T_q, H, D], k, v [T_k, H_kv, D],
 *           o [T_q, H, D] [, lse [H, T_q]], cu_q, cu_k [B + 1] (i32), max_q (i32, the longest
 *           query sequence)
 * Block 128, grid (ceil(S_q / 32), H, B) (varlen: ceil(max_q / 32)). Every integer parameter
 * is DYNAMIC: one compiled variant serves every shape. */
static tirx_status ref_build(tirx_dtype dt, int d, bool varlen, bool has_lse, tirx_kernel **out) {
  const int dpt = d / REF_LANES;
  char name[64];
  snprintf(name, sizeof name, "attention_ref_%s_d%d%s%s", tirx_dtype_name(dt), d,
           varlen ? "_varlen" : "", has_lse ? "_lse" : "");
  tirx_builder *b = tirx_builder_create(name);
  tirx_expr *B = tirx_param_int(b, "B", TIRX_I32);
  tirx_expr *SQ = tirx_param_int(b, varlen ? "T_q" : "S_q", TIRX_I32);
  tirx_expr *SK = tirx_param_int(b, varlen ? "T_k" : "S_k", TIRX_I32);
  tirx_expr *H = tirx_param_int(b, "H", TIRX_I32), *HKV = tirx_param_int(b, "H_kv", TIRX_I32);
  tirx_expr *params[] = {B, SQ, SK, H, HKV};
  for (int i = 0; i < 5; i++) /* one variant for every shape: this kernel is not tuned */
    tirx_param_set_policy(b, params[i], TIRX_SPECIALIZE_DYNAMIC);
  tirx_expr *causal = tirx_param_scalar(b, "causal", TIRX_I32);
  tirx_expr *scale = tirx_param_scalar(b, "scale_log2", TIRX_F32);
  tirx_expr *D = I(b, d);
  tirx_expr *one = I(b, 1);
  tirx_tensor *q, *k, *v, *o, *lse = NULL, *cuq = NULL, *cuk = NULL;
  if (!varlen) {
    tirx_expr *st[4] = {NULL, NULL, NULL, one};
    q = tirx_param_tensor_strided(b, "q", dt, TIRX_EXPRS(B, SQ, H, D), st);
    k = tirx_param_tensor_strided(b, "k", dt, TIRX_EXPRS(B, SK, HKV, D), st);
    v = tirx_param_tensor_strided(b, "v", dt, TIRX_EXPRS(B, SK, HKV, D), st);
    o = tirx_param_tensor_strided(b, "o", dt, TIRX_EXPRS(B, SQ, H, D), st);
    if (has_lse) lse = tirx_param_tensor(b, "lse", TIRX_F32, TIRX_EXPRS(B, H, SQ), NULL);
  } else {
    tirx_expr *st[3] = {NULL, NULL, one};
    q = tirx_param_tensor_strided(b, "q", dt, TIRX_EXPRS(SQ, H, D), st);
    k = tirx_param_tensor_strided(b, "k", dt, TIRX_EXPRS(SK, HKV, D), st);
    v = tirx_param_tensor_strided(b, "v", dt, TIRX_EXPRS(SK, HKV, D), st);
    o = tirx_param_tensor_strided(b, "o", dt, TIRX_EXPRS(SQ, H, D), st);
    if (has_lse) lse = tirx_param_tensor(b, "lse", TIRX_F32, TIRX_EXPRS(H, SQ), NULL);
    cuq = tirx_param_tensor(b, "cu_q", TIRX_I32, TIRX_EXPRS(tirx_add(b, B, one)), NULL);
    cuk = tirx_param_tensor(b, "cu_k", TIRX_I32, TIRX_EXPRS(tirx_add(b, B, one)), NULL);
  }
  tirx_set_block(b, REF_THREADS, 1, 1);
  /* varlen: the grid's x covers the longest sequence, passed through S_q of the launch */
  tirx_expr *grid_rows = varlen ? tirx_param_int(b, "max_q", TIRX_I32) : SQ;
  if (varlen) tirx_param_set_policy(b, grid_rows, TIRX_SPECIALIZE_DYNAMIC);
  tirx_set_grid(b, tirx_ceildiv(b, grid_rows, I(b, REF_ROWS)), H, B);

  tirx_expr *bi = tirx_let(b, "bi", tirx_block_idx(b, 2));
  tirx_expr *h = tirx_let(b, "h", tirx_block_idx(b, 1));
  tirx_expr *hk = tirx_let(b, "hk", tirx_div(b, h, tirx_div(b, H, HKV)));
  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  tirx_expr *part = tirx_let(b, "part", tirx_mod(b, tid, I(b, REF_LANES)));
  tirx_expr *row0 = tirx_let(b, "row0", tirx_mul(b, tirx_block_idx(b, 0), I(b, REF_ROWS)));
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, row0, tirx_div(b, tid, I(b, REF_LANES))));
  tirx_expr *qs = NULL, *ks = NULL, *len_q = SQ, *len_k = SK;
  if (varlen) {
    qs = tirx_let(b, "qs", tirx_load(b, cuq, TIRX_EXPRS(bi)));
    ks = tirx_let(b, "ks", tirx_load(b, cuk, TIRX_EXPRS(bi)));
    len_q = tirx_let(b, "len_q", tirx_sub(b, tirx_load(b, cuq, TIRX_EXPRS(tirx_add(b, bi, one))), qs));
    len_k = tirx_let(b, "len_k", tirx_sub(b, tirx_load(b, cuk, TIRX_EXPRS(tirx_add(b, bi, one))), ks));
  }
  /* The CTA has rows (uniform over the CTA: the shuffles below need whole warps). */
  tirx_if_begin(b, tirx_lt(b, row0, len_q));
  tirx_expr *shift = tirx_let(b, "shift", tirx_sub(b, len_k, len_q)); /* causal: j <= i + shift */
  tirx_expr *valid_row = tirx_let(b, "valid_row", tirx_lt(b, i, len_q));
  tirx_expr *iq = tirx_let(b, "iq", tirx_min(b, i, tirx_sub(b, len_q, one)));
  tirx_expr *is_causal = tirx_let(b, "is_causal", tirx_ne(b, causal, I(b, 0)));
  /* keys this row sees: [0, kend); the CTA's loop runs to the largest, jmax */
  tirx_expr *kend = tirx_let(
      b, "kend",
      tirx_select(b, valid_row,
                  tirx_select(b, is_causal, tirx_min(b, len_k, tirx_add(b, tirx_add(b, i, shift), one)),
                              len_k),
                  I(b, 0)));
  tirx_expr *last = tirx_min(b, tirx_add(b, row0, I(b, REF_ROWS - 1)), tirx_sub(b, len_q, one));
  tirx_expr *jmax = tirx_let(
      b, "jmax",
      tirx_select(b, is_causal,
                  tirx_max(b, I(b, 0), tirx_min(b, len_k, tirx_add(b, tirx_add(b, last, shift), one))),
                  len_k));

  /* element (row, head, dim) of a q/o-like or k/v-like tensor */
#define AT(t, base, r, hh, dd)                                                                 \
  (varlen ? tirx_load(b, t, TIRX_EXPRS(tirx_add(b, base, r), hh, dd))                         \
          : tirx_load(b, t, TIRX_EXPRS(bi, r, hh, dd)))
  tirx_tensor *qv = tirx_alloc_local(b, "qv", TIRX_F32, TIRX_DIMS(dpt), NULL);
  tirx_tensor *acc = tirx_alloc_local(b, "acc", TIRX_F32, TIRX_DIMS(dpt), NULL);
  tirx_expr *d0 = tirx_let(b, "d0", tirx_mul(b, part, I(b, dpt)));
  tirx_expr *t = tirx_for_begin(b, "t", I(b, 0), I(b, dpt), NULL, TIRX_LOOP_UNROLL);
  tirx_store(b, qv, TIRX_EXPRS(t),
             tirx_mul(b, tirx_cast(b, AT(q, qs, iq, h, tirx_add(b, d0, t)), TIRX_F32), scale));
  tirx_store(b, acc, TIRX_EXPRS(t), tirx_float(b, 0.0, TIRX_F32));
  tirx_for_end(b);
  tirx_expr *m = tirx_var(b, "m", TIRX_F32, tirx_float(b, -INFINITY, TIRX_F32));
  tirx_expr *l = tirx_var(b, "l", TIRX_F32, tirx_float(b, 0.0, TIRX_F32));

  tirx_expr *j = tirx_for_begin(b, "j", I(b, 0), jmax, NULL, TIRX_LOOP_SERIAL);
  {
    tirx_expr *s = tirx_var(b, "s", TIRX_F32, tirx_float(b, 0.0, TIRX_F32));
    tirx_expr *tt = tirx_for_begin(b, "tk", I(b, 0), I(b, dpt), NULL, TIRX_LOOP_UNROLL);
    tirx_assign(b, s, tirx_add(b, s, tirx_mul(b, tirx_load(b, qv, TIRX_EXPRS(tt)),
                                              tirx_cast(b, AT(k, ks, j, hk, tirx_add(b, d0, tt)),
                                                        TIRX_F32))));
    tirx_for_end(b);
    tirx_assign(b, s, tirx_add(b, s, tirx_shfl_xor(b, s, I(b, 1))));
    tirx_assign(b, s, tirx_add(b, s, tirx_shfl_xor(b, s, I(b, 2))));
    tirx_expr *see = tirx_let(b, "see", tirx_lt(b, j, kend));
    tirx_expr *m_new = tirx_let(b, "m_new", tirx_select(b, see, tirx_max(b, m, s), m));
    tirx_expr *alpha = tirx_let(b, "alpha", tirx_select(b, see, tirx_exp2(b, tirx_sub(b, m, m_new)),
                                                       tirx_float(b, 1.0, TIRX_F32)));
    tirx_expr *p = tirx_let(b, "p", tirx_select(b, see, tirx_exp2(b, tirx_sub(b, s, m_new)),
                                               tirx_float(b, 0.0, TIRX_F32)));
    tirx_assign(b, l, tirx_add(b, tirx_mul(b, l, alpha), p));
    tirx_assign(b, m, m_new);
    tt = tirx_for_begin(b, "tv", I(b, 0), I(b, dpt), NULL, TIRX_LOOP_UNROLL);
    tirx_store(b, acc, TIRX_EXPRS(tt),
               tirx_add(b, tirx_mul(b, tirx_load(b, acc, TIRX_EXPRS(tt)), alpha),
                        tirx_mul(b, p, tirx_cast(b, AT(v, ks, j, hk, tirx_add(b, d0, tt)), TIRX_F32))));
    tirx_for_end(b);
  }
  tirx_for_end(b);
#undef AT

  tirx_if_begin(b, valid_row);
  tirx_expr *seen = tirx_let(b, "seen", tirx_gt(b, l, tirx_float(b, 0.0, TIRX_F32)));
  tirx_expr *inv = tirx_let(b, "inv", tirx_select(b, seen, tirx_div(b, tirx_float(b, 1.0, TIRX_F32), l),
                                                 tirx_float(b, 0.0, TIRX_F32)));
  t = tirx_for_begin(b, "to", I(b, 0), I(b, dpt), NULL, TIRX_LOOP_UNROLL);
  tirx_expr *val = tirx_cast(b, tirx_mul(b, tirx_load(b, acc, TIRX_EXPRS(t)), inv), dt);
  tirx_expr *dd = tirx_add(b, d0, t);
  if (varlen)
    tirx_store(b, o, TIRX_EXPRS(tirx_add(b, qs, i), h, dd), val);
  else
    tirx_store(b, o, TIRX_EXPRS(bi, i, h, dd), val);
  tirx_for_end(b);
  if (has_lse) {
    tirx_if_begin(b, tirx_eq(b, part, I(b, 0)));
    tirx_expr *ln = tirx_select(b, seen,
                                tirx_mul(b, tirx_add(b, m, tirx_log2(b, l)),
                                         tirx_float(b, M_LN2, TIRX_F32)),
                                tirx_float(b, -INFINITY, TIRX_F32));
    if (varlen)
      tirx_store(b, lse, TIRX_EXPRS(h, tirx_add(b, qs, i)), ln);
    else
      tirx_store(b, lse, TIRX_EXPRS(bi, h, i), ln);
    tirx_if_end(b);
  }
  tirx_if_end(b);
  tirx_if_end(b);

  return tirx__kernels_finish(b, "tirx_op_attention reference kernel", out);
}

tirx_status tirx__attention_ref_build(tirx_dtype dtype, int d, bool varlen, bool lse,
                                      tirx_kernel **out) {
  static const char fn[] = "tirx_op_attention reference kernel";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (dtype != TIRX_F16 && dtype != TIRX_BF16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype is %s, expected f16 or bf16", fn,
                       tirx_dtype_name(dtype) ? tirx_dtype_name(dtype) : "invalid");
  if (d != 64 && d != 128 && d != 256)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: d is %d, expected 64, 128 or 256", fn, d);
  return ref_build(dtype, d, varlen, lse, out);
}

/* What decides the reference kernel; the tag keeps it apart from the other ops' keys. */
typedef struct ref_key {
  char tag[8]; /* "attn_ref" without its NUL */
  int32_t dtype, d, varlen, lse;
} ref_key;

static tirx_status ref_build_for_op(const void *ctx, tirx_kernel **out) {
  const ref_key *k = ctx;
  return tirx__attention_ref_build((tirx_dtype)k->dtype, k->d, k->varlen != 0, k->lse != 0, out);
}

void tirx__attention_ref_args(const tirx__attn_call *c, tirx__attn_args *a) {
  const tirx_dtype dt = c->dtype;
  const int64_t D = c->d;
  tirx_arg *args = a->args;
  int n = 0;
  args[n++] = tirx_arg_i32(c->batch);
  args[n++] = tirx_arg_i32((int32_t)(c->varlen ? c->t_q : c->s_q));
  args[n++] = tirx_arg_i32((int32_t)(c->varlen ? c->t_k : c->s_k));
  args[n++] = tirx_arg_i32(c->h);
  args[n++] = tirx_arg_i32(c->h_kv);
  args[n++] = tirx_arg_i32(c->causal ? 1 : 0);
  args[n++] = tirx_arg_f32((float)(c->scale * M_LOG2E));
  if (!c->varlen) {
    memcpy(a->q_shape, (int64_t[]){c->batch, c->s_q, c->h, D}, sizeof a->q_shape);
    memcpy(a->k_shape, (int64_t[]){c->batch, c->s_k, c->h_kv, D}, sizeof a->k_shape);
    memcpy(a->lse_shape, (int64_t[]){c->batch, c->h, c->s_q}, sizeof a->lse_shape);
    args[n++] = tirx_arg_tensor(c->q, dt, 4, a->q_shape, c->q_stride);
    args[n++] = tirx_arg_tensor(c->k, dt, 4, a->k_shape, c->k_stride);
    args[n++] = tirx_arg_tensor(c->v, dt, 4, a->k_shape, c->v_stride);
    args[n++] = tirx_arg_tensor(c->o, dt, 4, a->q_shape, c->o_stride);
    if (c->lse) args[n++] = tirx_arg_tensor(c->lse, TIRX_F32, 3, a->lse_shape, NULL);
  } else {
    memcpy(a->q_shape, (int64_t[]){c->t_q, c->h, D, 0}, sizeof a->q_shape);
    memcpy(a->k_shape, (int64_t[]){c->t_k, c->h_kv, D, 0}, sizeof a->k_shape);
    memcpy(a->lse_shape, (int64_t[]){c->h, c->t_q, 0}, sizeof a->lse_shape);
    a->cu_shape[0] = (int64_t)c->batch + 1;
    args[n++] = tirx_arg_tensor(c->q, dt, 3, a->q_shape, c->q_stride + 1);
    args[n++] = tirx_arg_tensor(c->k, dt, 3, a->k_shape, c->k_stride + 1);
    args[n++] = tirx_arg_tensor(c->v, dt, 3, a->k_shape, c->v_stride + 1);
    args[n++] = tirx_arg_tensor(c->o, dt, 3, a->q_shape, c->o_stride + 1);
    if (c->lse) args[n++] = tirx_arg_tensor(c->lse, TIRX_F32, 2, a->lse_shape, NULL);
    args[n++] = tirx_arg_tensor((void *)c->cu_q_dev, TIRX_I32, 1, a->cu_shape, NULL);
    args[n++] = tirx_arg_tensor((void *)c->cu_k_dev, TIRX_I32, 1, a->cu_shape, NULL);
    args[n++] = tirx_arg_i32((int32_t)c->s_q);
  }
  a->n = n;
}

tirx_status tirx__attention_ref_get(const tirx__attn_call *c, tirx_kernel **out) {
  *out = NULL;
  if (c->batch > 65535 || c->h > 65535)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: the reference kernel takes B and H up to 65535 "
                       "(its grid), got B = %d, H = %d", FN, c->batch, c->h);
  ref_key key;
  memset(&key, 0, sizeof key);
  memcpy(key.tag, "attn_ref", 8);
  key.dtype = (int32_t)c->dtype, key.d = c->d, key.varlen = c->varlen, key.lse = c->lse != NULL;
  tirx_status st = tirx__kernels_get(&key, sizeof key, ref_build_for_op, &key, out);
  if (st != TIRX_OK)
    return tirx__error(st, "%s: %s", FN, tirx_last_error());
  return TIRX_OK;
}

static tirx_status attention_reference(tirx_runtime *rt, const tirx__attn_call *c, void *stream) {
  tirx_kernel *k;
  tirx_status st = tirx__attention_ref_get(c, &k);
  if (st != TIRX_OK)
    return st;
  tirx__attn_args a;
  tirx__attention_ref_args(c, &a);
  st = tirx__kernels_launch(FN, rt, k, a.args, a.n, stream);
  tirx_kernel_release(k);
  return st;
}

/* ---- the checks ---- */

static const char *dtype_name(tirx_dtype t) {
  const char *s = tirx_dtype_name(t);
  return s ? s : "invalid";
}

/* "[a, b, ...]" of t's shape (or strides) into buf. */
static const char *dims_str(char *buf, size_t cap, int n, const int64_t *v) {
  size_t at = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < n && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (at < cap) snprintf(buf + at, cap - at, "]");
  return buf;
}

/* t non-NULL with a non-NULL, 16-byte aligned data pointer, rank `rank`, a shape of extents
 * 1..2^31-1 (the kernels index in i32). */
static tirx_status check_arg(const char *name, const tirx_tensor_arg *t, int rank) {
  tirx_status st = tirx__check_tensor(FN, name, t, rank);
  if (st != TIRX_OK) return st;
  for (int i = 0; i < rank; i++)
    if (t->shape[i] > INT32_MAX) {
      char s[160];
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has shape %s, expected extents up to "
                         "2^31 - 1", FN, name, dims_str(s, sizeof s, rank, t->shape));
    }
  return TIRX_OK;
}

/* Shape of t equal to want (rank entries); what: the expected form, "[B, S_q, H, D]". */
static tirx_status check_dims(const char *name, const tirx_tensor_arg *t, const int64_t *want,
                              const char *what, const char *extra) {
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] != want[i]) {
      char got[160], exp[160];
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has shape %s, expected %s = %s%s", FN, name,
                         dims_str(got, sizeof got, t->rank, t->shape), what,
                         dims_str(exp, sizeof exp, t->rank, want), extra);
    }
  return TIRX_OK;
}

/* The element strides of a 16-bit tensor (NULL: dense) into st[rank]: innermost 1, the
 * others >= 0 and multiples of 16 bytes, and the farthest element's offset within int64. */
static tirx_status check_strides(const char *name, const tirx_tensor_arg *t, int64_t *st) {
  const int r = t->rank;
  char s[160];
  if (!t->strides) {
    int64_t want = 1;
    for (int i = r - 1; i >= 0; i--) st[i] = want, want *= t->shape[i];
    return TIRX_OK;
  }
  if (t->strides[r - 1] != 1)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has strides %s, expected an innermost "
                       "stride of 1", FN, name, dims_str(s, sizeof s, r, t->strides));
  int64_t far = 0;
  for (int i = 0; i < r; i++) {
    int64_t x = t->strides[i], off;
    if (i < r - 1 && (x < 0 || x % 8))
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has strides %s, expected strides >= 0 "
                         "and multiples of 8 elements (16 bytes)", FN, name,
                         dims_str(s, sizeof s, r, t->strides));
    if (__builtin_mul_overflow(x, t->shape[i] - 1, &off) || __builtin_add_overflow(far, off, &far))
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has strides %s: its elements' offsets "
                         "overflow int64", FN, name, dims_str(s, sizeof s, r, t->strides));
    st[i] = x;
  }
  return TIRX_OK;
}

static tirx_status check_options(const tirx_attention_options *o, bool *reference) {
  if (!(o->scale == 0 || (isfinite(o->scale) && o->scale > 0)))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->scale is %g, expected 0 (1/sqrt(D)) or a "
                       "finite value > 0", FN, o->scale);
  if (o->sms < 0 || o->sms > 1024)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->sms is %d, expected 0 (132) to 1024", FN,
                       o->sms);
  *reference = false;
  if (o->path) {
    if (strcmp(o->path, "reference") != 0)
      return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->path is \"%.64s\", expected NULL (the "
                         "default kernel) or \"reference\"", FN, o->path);
    *reference = true;
  }
  return TIRX_OK;
}

/* cu (B + 1 host entries, named name) from 0, non-decreasing, ending at total (the packed
 * tensor's first dimension, named by what); its longest sequence into *longest. */
static tirx_status check_offsets(const char *name, const int32_t *cu, int batch, int64_t total,
                                 const char *what, int64_t *longest) {
  if (cu[0] != 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: varlen->%s[0] is %d, expected 0", FN, name,
                       (int)cu[0]);
  *longest = 0;
  for (int i = 0; i < batch; i++) {
    if (cu[i + 1] < cu[i])
      return tirx__error(TIRX_E_INVALID_ARG, "%s: varlen->%s[%d] is %d, less than [%d] = %d: "
                         "expected non-decreasing offsets", FN, name, i + 1, (int)cu[i + 1], i,
                         (int)cu[i]);
    if (cu[i + 1] - cu[i] > *longest) *longest = cu[i + 1] - cu[i];
  }
  if (cu[batch] != total)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: varlen->%s[%d] is %d, expected %s = %lld", FN,
                       name, batch, (int)cu[batch], what, (long long)total);
  return TIRX_OK;
}

tirx_status tirx__attention_check(const tirx_attention_options *opts, const tirx_tensor_arg *q,
                                  const tirx_tensor_arg *k, const tirx_tensor_arg *v,
                                  const tirx_tensor_arg *o, const tirx_tensor_arg *lse,
                                  const tirx_attention_varlen *varlen, tirx__attn_call *out,
                                  bool *reference) {
  tirx_attention_options copy;
  if (tirx__ext_in(FN, "opts", &tirx__ext_attention_options, opts, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  opts = &copy;
  tirx_status st = check_options(opts, reference);
  if (st != TIRX_OK)
    return st;
  const bool vl = varlen != NULL;
  const int rank = vl ? 3 : 4;
  if ((st = check_arg("q", q, rank)) != TIRX_OK || (st = check_arg("k", k, rank)) != TIRX_OK ||
      (st = check_arg("v", v, rank)) != TIRX_OK || (st = check_arg("o", o, rank)) != TIRX_OK)
    return st;
  const tirx_dtype dt = q->dtype;
  if (dt != TIRX_F16 && dt != TIRX_BF16)
    return tirx__error(TIRX_E_TYPE, "%s: q has dtype %s, expected f16 or bf16", FN,
                       dtype_name(dt));
  if ((st = tirx__check_dtype(FN, "k", k, dt)) != TIRX_OK ||
      (st = tirx__check_dtype(FN, "v", v, dt)) != TIRX_OK ||
      (st = tirx__check_dtype(FN, "o", o, dt)) != TIRX_OK)
    return st;

  /* q [B, S_q, H, D] (varlen [T_q, H, D]) gives B, S_q, H and D; k gives S_k and H_kv. */
  const int64_t *qs = q->shape, *ks = k->shape;
  const int64_t D = qs[rank - 1], H = qs[rank - 2], HKV = ks[rank - 2];
  const int64_t B = vl ? 1 : qs[0], SQ = qs[rank - 3], SK = ks[rank - 3];
  if (D != 64 && D != 128 && D != 256) {
    char s[160];
    return tirx__error(TIRX_E_INVALID_ARG, "%s: q has shape %s, expected %s with D 64, 128 or "
                       "256", FN, dims_str(s, sizeof s, rank, qs),
                       vl ? "[T_q, H, D]" : "[B, S_q, H, D]");
  }
  int64_t kwant[4], qwant[4];
  if (vl) {
    memcpy(kwant, (int64_t[]){SK, HKV, D}, 3 * sizeof(int64_t));
    memcpy(qwant, (int64_t[]){SQ, H, D}, 3 * sizeof(int64_t));
  } else {
    memcpy(kwant, (int64_t[]){B, SK, HKV, D}, 4 * sizeof(int64_t));
    memcpy(qwant, (int64_t[]){B, SQ, H, D}, 4 * sizeof(int64_t));
  }
  const char *kform = vl ? "[T_k, H_kv, D]" : "[B, S_k, H_kv, D]";
  /* k's own S_k and H_kv with q's B and D */
  if ((st = check_dims("k", k, kwant, kform, "")) != TIRX_OK)
    return st;
  if (H % HKV) {
    char s[160];
    return tirx__error(TIRX_E_INVALID_ARG, "%s: k has shape %s, expected %s with H (%lld) a "
                       "multiple of H_kv", FN, dims_str(s, sizeof s, rank, ks), kform,
                       (long long)H);
  }
  if ((st = check_dims("v", v, kwant, kform, " (the shape of k)")) != TIRX_OK ||
      (st = check_dims("o", o, qwant, vl ? "[T_q, H, D]" : "[B, S_q, H, D]",
                       " (the shape of q)")) != TIRX_OK)
    return st;

  tirx__attn_call c;
  memset(&c, 0, sizeof c);
  memset(out, 0, sizeof *out);
  int64_t *strides[4] = {c.q_stride, c.k_stride, c.v_stride, c.o_stride};
  const tirx_tensor_arg *ts[4] = {q, k, v, o};
  static const char *const names[4] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; i++) {
    int64_t s[4];
    if ((st = check_strides(names[i], ts[i], s)) != TIRX_OK) return st;
    /* The default path moves q, k, v and o with TMA, whose strides are positive and below
     * 2^40 bytes; a dimension of one element never moves (the launch ignores its stride). */
    for (int d = 0; d < rank - 1 && !*reference; d++)
      if (ts[i]->shape[d] > 1 && (s[d] == 0 || s[d] >= (INT64_C(1) << 39))) {
        char buf[160];
        return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has strides %s, expected strides of the "
                           "dimensions longer than 1 from 8 to 2^39 - 8 elements (TMA: "
                           "positive, below 2^40 bytes; opts->path \"reference\" takes any)",
                           FN, names[i], dims_str(buf, sizeof buf, rank, s));
      }
    /* the rank-4 view [batch, seq, heads, D]; varlen: batch 1 */
    if (vl)
      strides[i][0] = s[0] * ts[i]->shape[0], memcpy(strides[i] + 1, s, 3 * sizeof(int64_t));
    else
      memcpy(strides[i], s, 4 * sizeof(int64_t));
  }

  if (lse) {
    int64_t lwant[3] = {B, H, SQ};
    const int64_t *lw = vl ? lwant + 1 : lwant;
    if ((st = tirx__check_tensor(FN, "lse", lse, vl ? 2 : 3)) != TIRX_OK ||
        (st = tirx__check_dtype(FN, "lse", lse, TIRX_F32)) != TIRX_OK ||
        (st = check_dims("lse", lse, lw, vl ? "[H, T_q]" : "[B, H, S_q]", "")) != TIRX_OK ||
        (st = tirx__check_dense(FN, "lse", lse)) != TIRX_OK)
      return st;
  }

  c.dtype = dt, c.d = (int)D, c.h = (int)H, c.h_kv = (int)HKV;
  c.causal = opts->causal, c.varlen = vl;
  c.scale = opts->scale != 0 ? opts->scale : 1.0 / sqrt((double)D);
  c.sms = opts->sms ? opts->sms : 132;
  c.q = q->data, c.k = k->data, c.v = v->data, c.o = o->data;
  c.lse = lse ? lse->data : NULL;
  if (!vl) {
    c.batch = (int)B, c.s_q = SQ, c.s_k = SK, c.t_q = B * SQ, c.t_k = B * SK;
  } else {
    if (varlen->batch < 1)
      return tirx__error(TIRX_E_INVALID_ARG, "%s: varlen->batch is %d, expected >= 1", FN,
                         varlen->batch);
    if (!varlen->cu_seqlens_q)
      return tirx__error(TIRX_E_NULL_ARG, "%s: varlen->cu_seqlens_q is NULL", FN);
    if (!varlen->cu_seqlens_k)
      return tirx__error(TIRX_E_NULL_ARG, "%s: varlen->cu_seqlens_k is NULL", FN);
    static const char *const dev_names[2] = {"cu_seqlens_q_dev", "cu_seqlens_k_dev"};
    const void *devs[2] = {varlen->cu_seqlens_q_dev, varlen->cu_seqlens_k_dev};
    for (int i = 0; i < 2; i++) {
      if (!devs[i])
        return tirx__error(TIRX_E_NULL_ARG, "%s: varlen->%s is NULL", FN, dev_names[i]);
      if ((uintptr_t)devs[i] % 16)
        return tirx__error(TIRX_E_INVALID_ARG, "%s: varlen->%s %p is not aligned to 16 bytes",
                           FN, dev_names[i], devs[i]);
    }
    int64_t lq, lk;
    if ((st = check_offsets("cu_seqlens_q", varlen->cu_seqlens_q, varlen->batch, SQ,
                            "T_q (q's first dimension)", &lq)) != TIRX_OK ||
        (st = check_offsets("cu_seqlens_k", varlen->cu_seqlens_k, varlen->batch, SK,
                            "T_k (k's first dimension)", &lk)) != TIRX_OK)
      return st;
    c.batch = varlen->batch, c.s_q = lq, c.s_k = lk, c.t_q = SQ, c.t_k = SK;
    c.cu_q = varlen->cu_seqlens_q, c.cu_k = varlen->cu_seqlens_k;
    c.cu_q_dev = varlen->cu_seqlens_q_dev, c.cu_k_dev = varlen->cu_seqlens_k_dev;
  }
  *out = c;
  return TIRX_OK;
}

tirx_status tirx_op_attention(tirx_runtime *rt, const tirx_attention_options *opts,
                              const tirx_tensor_arg *q, const tirx_tensor_arg *k,
                              const tirx_tensor_arg *v, const tirx_tensor_arg *o,
                              const tirx_tensor_arg *lse, const tirx_attention_varlen *varlen,
                              void *stream) {
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", FN);
  tirx__attn_call c;
  bool reference = false;
  tirx_status st = tirx__attention_check(opts, q, k, v, o, lse, varlen, &c, &reference);
  if (st != TIRX_OK)
    return st;
  return reference ? attention_reference(rt, &c, stream) : tirx__attention_fast(rt, &c, stream);
}
