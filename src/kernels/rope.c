/* Rotary position embedding in place on q and k (tirx/kernels.h), and its op. Two paths,
 * chosen by R: 8 pairs a thread in 16-byte moves (rotate_chunk), or a pair at a time (rotate). */
#include "kernels_internal.h"

#include <stdio.h>
#include <string.h>

enum { ROPE_THREADS = 128 };

static const char *dtype_name(tirx_dtype t) {
  const char *s = tirx_dtype_name(t);
  return s ? s : "invalid";
}

/* The request checked: rot_dim filled in (0: d). */
static tirx_status check_request(const char *fn, const tirx_rope_options *in, tirx_dtype dt,
                                 tirx_dtype cdt, int d, int h, int h_kv,
                                 tirx_rope_options *o) {
  tirx_rope_options copy;
  if (tirx__ext_in(fn, "opts", &tirx__ext_rope_options, in, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  in = &copy;
  if (dt != TIRX_F16 && dt != TIRX_BF16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype is %s, expected f16 or bf16", fn,
                       dtype_name(dt));
  if (cdt != TIRX_F32 && cdt != dt)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: cache_dtype is %s, expected f32 or %s", fn,
                       dtype_name(cdt), dtype_name(dt));
  if (d < 1 || d > 1024)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: d is %d, expected 1 to 1024", fn, d);
  if (h < 1 || h > 1024)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: h is %d, expected 1 to 1024", fn, h);
  if (h_kv < 0 || h_kv > 1024)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: h_kv is %d, expected 0 (no k) to 1024", fn,
                       h_kv);
  if (in->style != TIRX_ROPE_NEOX && in->style != TIRX_ROPE_GPTJ)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->style is %d, expected TIRX_ROPE_NEOX (0) "
                       "or TIRX_ROPE_GPTJ (1)", fn, (int)in->style);
  for (int x = 0; x < 2; x++) {
    const int64_t *s = x ? in->k_strides : in->q_strides;
    if ((s[0] != 0 || s[1] != 0) && (s[0] < 1 || s[1] < 1))
      return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->%s_strides is [%lld, %lld], expected [0, "
                         "0] (passed at launch) or two positive strides", fn, x ? "k" : "q",
                         (long long)s[0], (long long)s[1]);
  }
  int rot = in->rot_dim ? in->rot_dim : d;
  if (rot < 2 || rot > d || rot % 2)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->rot_dim is %d, expected 0 (d) or an even "
                       "number in 2..d = %d", fn, in->rot_dim, d);
  *o = *in;
  o->rot_dim = rot;
  return TIRX_OK;
}

static tirx_expr *I(tirx_builder *b, int64_t v) { return tirx_int(b, v); }

/* x[t, head, i1], x[t, head, i2] rotated by (c, s), in f32, stored rounded to dt. */
static void rotate(tirx_builder *b, tirx_tensor *x, tirx_expr *t, tirx_expr *head,
                   tirx_expr *i1, tirx_expr *i2, tirx_expr *c, tirx_expr *s, tirx_dtype dt) {
  tirx_expr *a = tirx_let(b, "a", tirx_cast(b, tirx_load(b, x, TIRX_EXPRS(t, head, i1)), TIRX_F32));
  tirx_expr *z = tirx_let(b, "z", tirx_cast(b, tirx_load(b, x, TIRX_EXPRS(t, head, i2)), TIRX_F32));
  tirx_store(b, x, TIRX_EXPRS(t, head, i1),
             tirx_cast(b, tirx_sub(b, tirx_mul(b, a, c), tirx_mul(b, z, s)), dt));
  tirx_store(b, x, TIRX_EXPRS(t, head, i2),
             tirx_cast(b, tirx_add(b, tirx_mul(b, z, c), tirx_mul(b, a, s)), dt));
}

/* The chunked path (R/2 a multiple of 8): 8 pairs a thread, in 16-byte moves. A thread's chunk
 * c of a head is two 8-element runs R/2 apart, x[8c .. 8c + 8) and x[R/2 + 8c .. R/2 + 8c + 8),
 * in both styles, so that a warp's threads read consecutive 16-byte vectors: neox rotates
 * element e of one run with element e of the other (pairs 8c + e, cos, sin [p, 8c .. 8c + 8)),
 * gptj the adjacent elements within each run (run 1 pairs 4c .. 4c + 3, run 2 pairs R/4 + 4c ..
 * R/4 + 4c + 3; cos, sin [p, 4c .. 4c + 4) and [p, R/4 + 4c .. R/4 + 4c + 4)). The moves are
 * tirx_copy between the global rows and per-thread arrays; they are vectors where the build
 * knows the rows' starts 16-byte aligned (constant strides that are multiples of 8), scalar
 * moves otherwise (hidden strides). */
enum { ROPE_CHUNK = 8, ROPE_MAX_THREADS = 512 };

/* Chunk c of x[t, head] rotated by the chunk's cos and sin (cs[e], sn[e]: f32, pair e of the
 * chunk as rope_build reads them). */
static void rotate_chunk(tirx_builder *b, tirx_tensor *x, tirx_expr *t, tirx_expr *head,
                         tirx_expr *c, tirx_expr *const *cs, tirx_expr *const *sn, bool neox,
                         int64_t half, tirx_dtype dt) {
  tirx_region *g[2];
  tirx_tensor *l[2];
  for (int r = 0; r < 2; r++) {
    tirx_expr *col = tirx_mul(b, c, I(b, ROPE_CHUNK));
    if (r) col = tirx_add(b, col, I(b, half));
    g[r] = tirx_region_new(b, x, TIRX_EXPRS(t, head, col), (int64_t[]){1, 1, ROPE_CHUNK});
    l[r] = tirx_alloc_local(b, r ? "xb" : "xa", dt, TIRX_DIMS(1, 1, ROPE_CHUNK), NULL);
    tirx_copy(b, tirx_whole(b, l[r]), g[r], NULL);
  }
  for (int e = 0; e < ROPE_CHUNK; e++) {
    /* neox: (xa[e], xb[e]); gptj: (run[2j], run[2j + 1]) of run e / 4, j = e % 4 */
    int run = e / (ROPE_CHUNK / 2), j = e % (ROPE_CHUNK / 2);
    tirx_tensor *ta = neox ? l[0] : l[run], *tz = neox ? l[1] : l[run];
    tirx_expr *ia = I(b, neox ? e : 2 * j), *iz = I(b, neox ? e : 2 * j + 1);
    tirx_expr *a = tirx_let(b, "a", tirx_cast(b, tirx_load(b, ta, TIRX_EXPRS(I(b, 0), I(b, 0), ia)), TIRX_F32));
    tirx_expr *z = tirx_let(b, "z", tirx_cast(b, tirx_load(b, tz, TIRX_EXPRS(I(b, 0), I(b, 0), iz)), TIRX_F32));
    tirx_store(b, ta, TIRX_EXPRS(I(b, 0), I(b, 0), ia),
               tirx_cast(b, tirx_sub(b, tirx_mul(b, a, cs[e]), tirx_mul(b, z, sn[e])), dt));
    tirx_store(b, tz, TIRX_EXPRS(I(b, 0), I(b, 0), iz),
               tirx_cast(b, tirx_add(b, tirx_mul(b, z, cs[e]), tirx_mul(b, a, sn[e])), dt));
  }
  for (int r = 0; r < 2; r++) tirx_copy(b, g[r], tirx_whole(b, l[r]), NULL);
}

/* The chunk's cos (or sin) values of row p of cache into the per-thread array l [1, 8]: neox
 * [p, 8c .. 8c + 8), gptj [p, 4c .. 4c + 4) then [p, R/4 + 4c .. R/4 + 4c + 4). */
static void chunk_cache(tirx_builder *b, tirx_tensor *l, tirx_tensor *cache, tirx_expr *p,
                        tirx_expr *c, bool neox, int64_t half) {
  if (neox) {
    tirx_expr *col = tirx_mul(b, c, I(b, ROPE_CHUNK));
    tirx_copy(b, tirx_whole(b, l), tirx_region_new(b, cache, TIRX_EXPRS(p, col), (int64_t[]){1, ROPE_CHUNK}), NULL);
    return;
  }
  const int64_t n = ROPE_CHUNK / 2;
  for (int r = 0; r < 2; r++) {
    tirx_expr *col = tirx_mul(b, c, I(b, n));
    if (r) col = tirx_add(b, col, I(b, half / 2));
    tirx_copy(b, tirx_region_new(b, l, TIRX_EXPRS(I(b, 0), I(b, r * n)), (int64_t[]){1, n}),
              tirx_region_new(b, cache, TIRX_EXPRS(p, col), (int64_t[]){1, n}), NULL);
  }
}

/* The chunked path's threads a CTA: one per chunk of the token's (head, chunk) items where they
 * fit (a multiple of 32), else ROPE_MAX_THREADS looping over them. */
static int64_t chunk_threads(int64_t items) {
  return items <= ROPE_MAX_THREADS ? (items + 31) / 32 * 32 : ROPE_MAX_THREADS;
}

/* Whether the kernel takes the chunked path: R/2 whole chunks (what keeps every move 16-byte
 * aligned); whether its moves are vectors is the lowering's, from the strides. */
static bool rope_chunked(const tirx_rope_options *o) { return o->rot_dim / 2 % ROPE_CHUNK == 0; }

/* A head or token stride: the option's constant, or NULL (hidden: passed at launch). */
static tirx_expr *stride_of(tirx_builder *b, int64_t s) { return s ? I(b, s) : NULL; }

static tirx_status rope_build(const tirx_rope_options *o, tirx_dtype dt, tirx_dtype cdt, int d,
                              int h, int h_kv, tirx_kernel **out) {
  tirx_builder *b = tirx_builder_create("rope");
  int64_t half = o->rot_dim / 2, items = (int64_t)(h + h_kv) * half;
  tirx_expr *T = tirx_param_int(b, "tokens", TIRX_I32);
  tirx_tensor *q = tirx_param_tensor_strided(b, "q", dt, TIRX_EXPRS(T, I(b, h), I(b, d)),
                                             (tirx_expr *[]){stride_of(b, o->q_strides[0]),
                                                             stride_of(b, o->q_strides[1]), I(b, 1)});
  tirx_tensor *k = h_kv ? tirx_param_tensor_strided(b, "k", dt, TIRX_EXPRS(T, I(b, h_kv), I(b, d)),
                                                    (tirx_expr *[]){stride_of(b, o->k_strides[0]),
                                                                    stride_of(b, o->k_strides[1]), I(b, 1)})
                        : NULL;
  tirx_tensor *pos = tirx_param_tensor(b, "pos", TIRX_I32, TIRX_EXPRS(T), NULL);
  tirx_expr *max_pos = tirx_param_int(b, "max_pos", TIRX_I32);
  tirx_tensor *cs = tirx_param_tensor(b, "cos", cdt, TIRX_EXPRS(max_pos, I(b, half)), NULL);
  tirx_tensor *sn = tirx_param_tensor(b, "sin", cdt, TIRX_EXPRS(max_pos, I(b, half)), NULL);
  bool neox = o->style == TIRX_ROPE_NEOX;
  if (rope_chunked(o)) {
    int64_t nc = half / ROPE_CHUNK, vitems = (int64_t)(h + h_kv) * nc, nt = chunk_threads(vitems);
    tirx_set_block(b, nt, 1, 1);
    tirx_set_grid(b, T, NULL, NULL);
    tirx_expr *t = tirx_let(b, "t", tirx_block_idx(b, 0));
    tirx_expr *p = tirx_let(b, "p", tirx_load(b, pos, TIRX_EXPRS(t)));
    tirx_if_begin(b, tirx_and(b, tirx_ge(b, p, I(b, 0)), tirx_lt(b, p, max_pos)));
    tirx_expr *tid = tirx_thread_idx(b, 0), *it;
    if (vitems <= nt) {
      it = tid;
      if (vitems < nt) tirx_if_begin(b, tirx_lt(b, it, I(b, vitems)));
    } else {
      it = tirx_for_begin(b, "it", tid, I(b, vitems), I(b, nt), TIRX_LOOP_SERIAL);
    }
    tirx_expr *head = tirx_let(b, "head", tirx_div(b, it, I(b, nc)));
    tirx_expr *c = tirx_let(b, "c", tirx_mod(b, it, I(b, nc)));
    tirx_team_begin(b, TIRX_TEAM_THREAD);
    tirx_tensor *cl = tirx_alloc_local(b, "cl", cdt, TIRX_DIMS(1, ROPE_CHUNK), NULL);
    tirx_tensor *sl = tirx_alloc_local(b, "sl", cdt, TIRX_DIMS(1, ROPE_CHUNK), NULL);
    chunk_cache(b, cl, cs, p, c, neox, half);
    chunk_cache(b, sl, sn, p, c, neox, half);
    tirx_expr *cf[ROPE_CHUNK], *sf[ROPE_CHUNK];
    for (int e = 0; e < ROPE_CHUNK; e++) {
      cf[e] = tirx_let(b, "c", tirx_cast(b, tirx_load(b, cl, TIRX_EXPRS(I(b, 0), I(b, e))), TIRX_F32));
      sf[e] = tirx_let(b, "s", tirx_cast(b, tirx_load(b, sl, TIRX_EXPRS(I(b, 0), I(b, e))), TIRX_F32));
    }
    if (k) tirx_if_begin(b, tirx_lt(b, head, I(b, h)));
    rotate_chunk(b, q, t, head, c, cf, sf, neox, half, dt);
    if (k) {
      tirx_else(b);
      rotate_chunk(b, k, t, tirx_sub(b, head, I(b, h)), c, cf, sf, neox, half, dt);
      tirx_if_end(b);
    }
    tirx_team_end(b);
    if (vitems > nt) tirx_for_end(b);
    else if (vitems < nt) tirx_if_end(b);
    tirx_if_end(b);
    return tirx__kernels_finish(b, "tirx_kernels_rope_build", out);
  }
  tirx_set_block(b, ROPE_THREADS, 1, 1);
  tirx_set_grid(b, T, NULL, NULL);
  tirx_expr *t = tirx_let(b, "t", tirx_block_idx(b, 0));
  tirx_expr *p = tirx_let(b, "p", tirx_load(b, pos, TIRX_EXPRS(t)));
  tirx_if_begin(b, tirx_and(b, tirx_ge(b, p, I(b, 0)), tirx_lt(b, p, max_pos)));
  tirx_expr *tid = tirx_thread_idx(b, 0), *head, *i;
  if (ROPE_THREADS % half == 0) {
    /* each thread keeps one pair index i (and its cos, sin) over heads tid / half + j * step */
    i = tirx_let(b, "i", tirx_mod(b, tid, I(b, half)));
  } else { /* the (head, pair) items of the token, round-robin */
    tirx_expr *it = tirx_for_begin(b, "it", tid, I(b, items), I(b, ROPE_THREADS), TIRX_LOOP_SERIAL);
    head = tirx_let(b, "head", tirx_div(b, it, I(b, half)));
    i = tirx_let(b, "i", tirx_mod(b, it, I(b, half)));
  }
  tirx_expr *c = tirx_let(b, "c", tirx_cast(b, tirx_load(b, cs, TIRX_EXPRS(p, i)), TIRX_F32));
  tirx_expr *s = tirx_let(b, "s", tirx_cast(b, tirx_load(b, sn, TIRX_EXPRS(p, i)), TIRX_F32));
  tirx_expr *i1 = tirx_let(b, "i1", neox ? i : tirx_mul(b, i, I(b, 2)));
  tirx_expr *i2 = tirx_let(b, "i2", tirx_add(b, i1, I(b, neox ? half : 1)));
  if (ROPE_THREADS % half == 0)
    head = tirx_for_begin(b, "head", tirx_div(b, tid, I(b, half)), I(b, h + h_kv),
                          I(b, ROPE_THREADS / half), TIRX_LOOP_SERIAL);
  if (k) tirx_if_begin(b, tirx_lt(b, head, I(b, h)));
  rotate(b, q, t, head, i1, i2, c, s, dt);
  if (k) {
    tirx_else(b);
    rotate(b, k, t, tirx_sub(b, head, I(b, h)), i1, i2, c, s, dt);
    tirx_if_end(b);
  }
  tirx_for_end(b);
  tirx_if_end(b);
  return tirx__kernels_finish(b, "tirx_kernels_rope_build", out);
}

tirx_status tirx_kernels_rope_build(const tirx_rope_options *opts, tirx_dtype dtype,
                                    tirx_dtype cache_dtype, int d, int h, int h_kv,
                                    tirx_kernel **out) {
  static const char fn[] = "tirx_kernels_rope_build";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  tirx_rope_options o;
  tirx_status st = check_request(fn, opts, dtype, cache_dtype, d, h, h_kv, &o);
  if (st != TIRX_OK)
    return st;
  return rope_build(&o, dtype, cache_dtype, d, h, h_kv, out);
}

/* ---- the op ---- */

/* What decides the kernel; the tag keeps it apart from other ops' keys of the same size. */
typedef struct rope_key {
  char tag[8];
  int32_t dtype, cdt, d, h, h_kv, style, rot, strides[4], pad;
} rope_key;

typedef struct rope_request {
  tirx_rope_options o;
  tirx_dtype dt, cdt;
  int d, h, h_kv;
} rope_request;

static tirx_status build_for_op(const void *ctx, tirx_kernel **out) {
  const rope_request *r = ctx;
  return rope_build(&r->o, r->dt, r->cdt, r->d, r->h, r->h_kv, out);
}

/* q or k: rank 3 [T, heads, D], innermost stride 1, heads apart by >= D, tokens by >= heads *
 * stride[1], of dtype (NULL: the first one sets it). */
static tirx_status check_qk(const char *fn, const char *name, const tirx_tensor_arg *x,
                            int64_t tokens, int64_t d, int64_t st[3]) {
  tirx_status s = tirx__check_tensor(fn, name, x, 3);
  if (s != TIRX_OK)
    return s;
  if (x->dtype != TIRX_F16 && x->dtype != TIRX_BF16)
    return tirx__error(TIRX_E_TYPE, "%s: %s has dtype %s, expected f16 or bf16", fn, name,
                       dtype_name(x->dtype));
  if (tokens >= 0 && (x->shape[0] != tokens || x->shape[2] != d))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has shape [%lld, %lld, %lld], expected "
                       "[T, H_kv, D] = [%lld, H_kv, %lld]", fn, name, (long long)x->shape[0],
                       (long long)x->shape[1], (long long)x->shape[2], (long long)tokens,
                       (long long)d);
  if (x->shape[0] > INT32_MAX || x->shape[1] > 1024 || x->shape[2] > 1024)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has shape [%lld, %lld, %lld], expected at "
                       "most [2^31 - 1, 1024, 1024]", fn, name, (long long)x->shape[0],
                       (long long)x->shape[1], (long long)x->shape[2]);
  if (x->strides) {
    st[0] = x->strides[0], st[1] = x->strides[1], st[2] = x->strides[2];
  } else {
    st[2] = 1, st[1] = x->shape[2], st[0] = x->shape[1] * x->shape[2];
  }
  /* extent-1 dimensions never move: their strides do not matter; a head spans `span` */
  int64_t span = x->shape[1] == 1 ? x->shape[2] : st[1];
  bool ok = st[0] >= 0 && st[1] >= 0 && (st[2] == 1 || x->shape[2] == 1) &&
            (x->shape[1] == 1 || st[1] >= x->shape[2]) &&
            (x->shape[0] == 1 || (span <= INT64_MAX / x->shape[1] && st[0] >= x->shape[1] * span));
  if (!ok)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has strides [%lld, %lld, %lld], expected [s0, "
                       "s1, 1] with s1 >= D and s0 >= heads * s1 (heads that do not overlap)", fn,
                       name, (long long)st[0], (long long)st[1], (long long)st[2]);
  st[2] = 1; /* the kernel's (an extent-1 dimension's stride does not matter) */
  return TIRX_OK;
}

tirx_status tirx_op_rope(tirx_runtime *rt, const tirx_rope_options *opts,
                         const tirx_tensor_arg *q, const tirx_tensor_arg *k,
                         const tirx_tensor_arg *pos, const tirx_tensor_arg *cos,
                         const tirx_tensor_arg *sin, void *stream) {
  static const char fn[] = "tirx_op_rope";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  int64_t qs[3], ks[3] = {0, 0, 1};
  tirx_status st = check_qk(fn, "q", q, -1, 0, qs);
  if (st != TIRX_OK)
    return st;
  const int64_t T = q->shape[0], H = q->shape[1], D = q->shape[2];
  tirx_dtype dt = q->dtype;
  if (k) {
    if ((st = check_qk(fn, "k", k, T, D, ks)) != TIRX_OK ||
        (st = tirx__check_dtype(fn, "k", k, dt)) != TIRX_OK)
      return st;
  }
  rope_request r = {.dt = dt, .d = (int)D, .h = (int)H, .h_kv = k ? (int)k->shape[1] : 0};
  if ((st = check_request(fn, opts, dt, TIRX_F32, r.d, r.h, r.h_kv, &r.o)) != TIRX_OK)
    return st;
  int64_t half = r.o.rot_dim / 2;
  /* Strides the build can prove 16-byte aligned become the kernel's constants (its moves then
   * vectors); any other leaves them all hidden. A dimension of extent 1 never moves. */
  int64_t cst[4] = {qs[0], qs[1], ks[0], ks[1]}, ext[4] = {T, H, T, k ? k->shape[1] : 1};
  bool fixed = rope_chunked(&r.o);
  for (int i = 0; i < (k ? 4 : 2); i++) {
    if (ext[i] == 1 && (cst[i] % ROPE_CHUNK || cst[i] < ROPE_CHUNK)) cst[i] = ROPE_CHUNK;
    fixed &= cst[i] % ROPE_CHUNK == 0 && cst[i] >= ROPE_CHUNK && cst[i] <= INT32_MAX;
  }
  if (!k) cst[2] = cst[3] = 0;
  for (int i = 0; i < 4; i++) (i < 2 ? r.o.q_strides : r.o.k_strides)[i % 2] = fixed ? cst[i] : 0;
  if ((st = tirx__check_tensor(fn, "pos", pos, pos && pos->rank == 2 ? 2 : 1)) != TIRX_OK)
    return st;
  if ((st = tirx__check_shape(fn, "pos", pos, (int64_t[]){T, 1}, pos->rank == 2 ? "[T, 1]" : "[T]")) != TIRX_OK ||
      (st = tirx__check_dense(fn, "pos", pos)) != TIRX_OK ||
      (st = tirx__check_dtype(fn, "pos", pos, TIRX_I32)) != TIRX_OK)
    return st;
  if ((st = tirx__check_tensor(fn, "cos", cos, 2)) != TIRX_OK)
    return st;
  if (cos->dtype != TIRX_F32 && cos->dtype != dt)
    return tirx__error(TIRX_E_TYPE, "%s: cos has dtype %s, expected f32 or %s", fn,
                       dtype_name(cos->dtype), dtype_name(dt));
  const int64_t P = cos->shape[0];
  if (P > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: cos has %lld rows, expected at most 2^31 - 1", fn,
                       (long long)P);
  if ((st = tirx__check_shape(fn, "cos", cos, (int64_t[]){P, half}, "[max_pos, R/2]")) != TIRX_OK ||
      (st = tirx__check_dense(fn, "cos", cos)) != TIRX_OK ||
      (st = tirx__check_tensor(fn, "sin", sin, 2)) != TIRX_OK ||
      (st = tirx__check_shape(fn, "sin", sin, (int64_t[]){P, half}, "[max_pos, R/2] (as cos)")) != TIRX_OK ||
      (st = tirx__check_dense(fn, "sin", sin)) != TIRX_OK ||
      (st = tirx__check_dtype(fn, "sin", sin, cos->dtype)) != TIRX_OK)
    return st;
  r.cdt = cos->dtype;
  rope_key key;
  memset(&key, 0, sizeof key);
  memcpy(key.tag, "rope", 4);
  key.dtype = (int32_t)dt, key.cdt = (int32_t)r.cdt, key.d = r.d, key.h = r.h, key.h_kv = r.h_kv;
  key.style = (int32_t)r.o.style, key.rot = r.o.rot_dim;
  for (int i = 0; i < 4; i++) key.strides[i] = (int32_t)(i < 2 ? r.o.q_strides : r.o.k_strides)[i % 2];
  tirx_kernel *kern;
  if ((st = tirx__kernels_get(&key, sizeof key, build_for_op, &r, &kern)) != TIRX_OK)
    return tirx__error(st, "%s: %s", fn, tirx_last_error());
  tirx_arg args[7];
  int n = 0;
  args[n++] = tirx_arg_i32((int32_t)T);
  args[n++] = tirx_arg_tensor(q->data, dt, 3, q->shape, qs);
  if (k) args[n++] = tirx_arg_tensor(k->data, dt, 3, k->shape, ks);
  args[n++] = tirx_arg_tensor(pos->data, TIRX_I32, 1, (int64_t[]){T}, NULL);
  args[n++] = tirx_arg_i32((int32_t)P);
  args[n++] = tirx_arg_tensor(cos->data, r.cdt, 2, (int64_t[]){P, half}, NULL);
  args[n++] = tirx_arg_tensor(sin->data, r.cdt, 2, (int64_t[]){P, half}, NULL);
  st = tirx__kernels_launch(fn, rt, kern, args, n, stream);
  tirx_kernel_release(kern);
  return st;
}
