/*
 * The collective rules: one ordered table, each rule a legality check that records its failed
 * constraints and an executor that enqueues NCCL calls. collective.c walks the table in order
 * and takes the first legal rule (or the one the caller names).
 *
 * Every check asks the same two questions. Structure: does each side hold its data the way
 * the NCCL call needs (partial copies on every rank, one shard per rank, a whole copy on every
 * rank, the whole tensor on one rank), with dense local buffers? Placement: does every element
 * land where NCCL puts it? The second is decided on layouts: tirx__dtensor_view rewrites a
 * dtensor as the single m-only layout NCCL's block order implies (rank r's shard becomes block
 * r: pid stride s becomes s * count on m), and the two sides must have equal placement
 * (tirx_layout_equal). Negative pid strides, offsets and any split of a dimension over pid and
 * m are handled by the algebra, not by cases.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist.h"

void tirx__coll_reason(tirx__coll_ctx *ctx, const char *fmt, ...) {
  char buf[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (ctx->nreasons >= TIRX__COLL_MAX_REASONS) return;
  ctx->reasons[ctx->nreasons] = tirx__arena_strdup(ctx->arena, buf, "tirx_collective_create");
  if (ctx->reasons[ctx->nreasons]) ctx->nreasons++;
}

/* ---- Structure --------------------------------------------------------------------------------- */

/* A whole copy on every rank. */
static void need_copies(tirx__coll_ctx *c, const tirx_dtensor *t, const char *name,
                        const char *rule) {
  if (t->nshards > 1)
    tirx__coll_reason(c, "%s is sharded into %lld parts; %s needs a whole copy on every rank",
                      name, (long long)t->nshards, rule);
  else if (t->ncopies != t->nranks)
    tirx__coll_reason(c, "%s is on %lld of %d ranks; %s needs a copy on every rank", name,
                      (long long)t->ncopies, t->nranks, rule);
}

/* One shard on each rank. */
static void need_shards(tirx__coll_ctx *c, const tirx_dtensor *t, const char *name,
                        const char *rule) {
  if (t->ncopies > 1)
    tirx__coll_reason(c, "%s has %lld copies of each part; %s needs %d shards, one per rank",
                      name, (long long)t->ncopies, rule, t->nranks);
  else if (t->nshards != t->nranks)
    tirx__coll_reason(c, "%s is sharded into %lld parts; %s needs %d, one per rank", name,
                      (long long)t->nshards, rule, t->nranks);
}

static void need_whole(tirx__coll_ctx *c, const tirx_dtensor *t, const char *name) {
  if (t->partial != TIRX_PARTIAL_NONE)
    tirx__coll_reason(c, "%s is partial (%s); this collective moves whole values", name,
                      tirx_partial_name(t->partial));
}

static void need_dense(tirx__coll_ctx *c, const tirx_dtensor *t, const char *name) {
  if (!t->local_dense)
    tirx__coll_reason(c, "%s's local part is not dense (its strides leave gaps); NCCL moves "
                         "contiguous buffers",
                      name);
}

/* src holds addends of a reduction NCCL can do. */
static void need_partial(tirx__coll_ctx *c, const char *rule) {
  const tirx_dtensor *s = c->src;
  static const int ops[] = {-1, TIRX__NCCL_SUM, TIRX__NCCL_PROD, TIRX__NCCL_MAX, TIRX__NCCL_MIN};
  if (s->partial == TIRX_PARTIAL_NONE) {
    tirx__coll_reason(c, "src is not partial; %s reduces partial values (sum, prod, max, min)",
                      rule);
    return;
  }
  if (s->dtype == TIRX_BOOL || s->dtype == TIRX_FP8_E4M3 || s->dtype == TIRX_FP8_E5M2)
    tirx__coll_reason(c, "dtype %s cannot be reduced (tirx passes NCCL reductions of numbers "
                         "of 16 bits or more, and 8-bit integers)",
                      tirx_dtype_name(s->dtype));
  c->args.op = ops[s->partial];
}

/* ---- Placement --------------------------------------------------------------------------------- */

static char *text(const tirx_layout *l) {
  char *s = l ? tirx_layout_str(l) : NULL;
  return s;
}

/* Equal placement of the two views, else a reason naming both. */
static void need_equal(tirx__coll_ctx *c, const tirx_layout *a, const tirx_layout *b,
                       const char *what) {
  if (!a || !b) {
    tirx__coll_reason(c, "%s: the layouts cannot be compared (an overflow)", what);
    return;
  }
  if (tirx_layout_equal(a, b)) return;
  char *ta = text(a), *tb = text(b);
  tirx__coll_reason(c, "%s: src gives %s, dst gives %s", what, ta ? ta : "?", tb ? tb : "?");
  free(ta);
  free(tb);
}

/* ---- all_reduce -------------------------------------------------------------------------------- */

static void check_all_reduce(tirx__coll_ctx *c) {
  need_partial(c, "all_reduce");
  need_copies(c, c->src, "src", "all_reduce");
  need_copies(c, c->dst, "dst", "all_reduce");
  need_whole(c, c->dst, "dst");
  need_dense(c, c->src, "src");
  need_dense(c, c->dst, "dst");
  if (c->nreasons) return;
  need_equal(c, tirx__dtensor_view(c->arena, c->src, 0, 0, 0),
             tirx__dtensor_view(c->arena, c->dst, 0, 0, 0),
             "src and dst place elements differently in the local buffer");
  c->args.count = c->src->local_size;
}

static tirx__nccl_result run_all_reduce(const tirx__nccl *n, tirx__nccl_comm_t comm,
                                        const tirx__coll_args *a, int nranks, int elem_bytes,
                                        const void *src, void *dst, void *stream) {
  (void)nranks;
  (void)elem_bytes;
  return n->AllReduce(src, dst, (size_t)a->count, a->dtype, a->op, comm, stream);
}

/* ---- reduce_scatter ---------------------------------------------------------------------------- */

static void check_reduce_scatter(tirx__coll_ctx *c) {
  need_partial(c, "reduce_scatter");
  need_copies(c, c->src, "src", "reduce_scatter");
  need_shards(c, c->dst, "dst", "reduce_scatter");
  need_whole(c, c->dst, "dst");
  need_dense(c, c->src, "src");
  need_dense(c, c->dst, "dst");
  if (c->nreasons) return;
  need_equal(c, tirx__dtensor_view(c->arena, c->src, 0, 0, 0),
             tirx__dtensor_view(c->arena, c->dst, c->dst->local_size, 0, 0),
             "block r of src is not rank r's shard of dst");
  c->args.count = c->dst->local_size;
}

static tirx__nccl_result run_reduce_scatter(const tirx__nccl *n, tirx__nccl_comm_t comm,
                                            const tirx__coll_args *a, int nranks, int elem_bytes,
                                            const void *src, void *dst, void *stream) {
  (void)nranks;
  (void)elem_bytes;
  return n->ReduceScatter(src, dst, (size_t)a->count, a->dtype, a->op, comm, stream);
}

/* ---- all_gather -------------------------------------------------------------------------------- */

static void check_all_gather(tirx__coll_ctx *c) {
  need_shards(c, c->src, "src", "all_gather");
  need_whole(c, c->src, "src");
  need_copies(c, c->dst, "dst", "all_gather");
  need_whole(c, c->dst, "dst");
  need_dense(c, c->src, "src");
  need_dense(c, c->dst, "dst");
  if (c->nreasons) return;
  need_equal(c, tirx__dtensor_view(c->arena, c->src, c->src->local_size, 0, 0),
             tirx__dtensor_view(c->arena, c->dst, 0, 0, 0),
             "rank r's shard of src is not block r of dst");
  c->args.count = c->src->local_size;
}

static tirx__nccl_result run_all_gather(const tirx__nccl *n, tirx__nccl_comm_t comm,
                                        const tirx__coll_args *a, int nranks, int elem_bytes,
                                        const void *src, void *dst, void *stream) {
  (void)nranks;
  (void)elem_bytes;
  return n->AllGather(src, dst, (size_t)a->count, a->dtype, comm, stream);
}

/* ---- all_to_all ---------------------------------------------------------------------------------- */

/*
 * Rank i sends block j of its src buffer to rank j, which stores it as block i of its dst
 * buffer (blocks of K / n elements, K the local size). With a(x) and b(x) the ranks holding
 * element x in src and dst, that is m_src = b * blk + q and m_dst = a * blk + q: the views
 * a * K + m_src and (m_dst / blk) * K + b * blk + m_dst % blk must agree.
 */
static void check_all_to_all(tirx__coll_ctx *c) {
  need_shards(c, c->src, "src", "all_to_all");
  need_whole(c, c->src, "src");
  need_shards(c, c->dst, "dst", "all_to_all");
  need_whole(c, c->dst, "dst");
  need_dense(c, c->src, "src");
  need_dense(c, c->dst, "dst");
  if (c->nreasons) return;
  int64_t k = c->src->local_size, n = c->src->nranks;
  if (k % n != 0) {
    tirx__coll_reason(c, "the local part's %lld elements do not split into %lld equal blocks",
                      (long long)k, (long long)n);
    return;
  }
  int64_t blk = k / n;
  const tirx_layout *y = tirx__dtensor_view(c->arena, c->dst, blk, blk, k);
  if (!y) {
    tirx__coll_reason(c, "dst's local layout cannot be cut into %lld blocks of %lld elements",
                      (long long)n, (long long)blk);
    return;
  }
  need_equal(c, tirx__dtensor_view(c->arena, c->src, k, 0, 0), y,
             "block j of src on rank i is not block i of dst on rank j");
  c->args.count = blk;
}

static tirx__nccl_result run_all_to_all(const tirx__nccl *n, tirx__nccl_comm_t comm,
                                        const tirx__coll_args *a, int nranks, int elem_bytes,
                                        const void *src, void *dst, void *stream) {
  size_t bytes = (size_t)a->count * (size_t)elem_bytes;
  tirx__nccl_result r = n->GroupStart();
  if (r != TIRX__NCCL_SUCCESS) return r;
  tirx__nccl_result first = TIRX__NCCL_SUCCESS;
  for (int peer = 0; peer < nranks && first == TIRX__NCCL_SUCCESS; peer++) {
    r = n->Send((const char *)src + (size_t)peer * bytes, (size_t)a->count, a->dtype, peer, comm,
                stream);
    if (r == TIRX__NCCL_SUCCESS)
      r = n->Recv((char *)dst + (size_t)peer * bytes, (size_t)a->count, a->dtype, peer, comm,
                  stream);
    if (r != TIRX__NCCL_SUCCESS) first = r;
  }
  r = n->GroupEnd(); /* always closes the group, also after a failed Send or Recv */
  return first != TIRX__NCCL_SUCCESS ? first : r;
}

/* ---- broadcast --------------------------------------------------------------------------------- */

static void check_broadcast(tirx__coll_ctx *c) {
  const tirx_dtensor *s = c->src;
  if (s->nshards > 1)
    tirx__coll_reason(c, "src is sharded into %lld parts; broadcast needs it whole on one rank",
                      (long long)s->nshards);
  else if (s->ncopies > 1)
    tirx__coll_reason(c, "src has %lld copies; broadcast needs it on one rank (the root)",
                      (long long)s->ncopies);
  need_whole(c, s, "src");
  need_copies(c, c->dst, "dst", "broadcast");
  need_whole(c, c->dst, "dst");
  need_dense(c, s, "src");
  need_dense(c, c->dst, "dst");
  if (c->nreasons) return;
  need_equal(c, tirx__dtensor_view(c->arena, s, 0, 0, 0),
             tirx__dtensor_view(c->arena, c->dst, 0, 0, 0),
             "src and dst place elements differently in the local buffer");
  c->args.count = s->local_size;
  c->args.root = (int)s->pid_offset;
}

static tirx__nccl_result run_broadcast(const tirx__nccl *n, tirx__nccl_comm_t comm,
                                       const tirx__coll_args *a, int nranks, int elem_bytes,
                                       const void *src, void *dst, void *stream) {
  (void)nranks;
  (void)elem_bytes;
  return n->Broadcast(src ? src : dst, dst, (size_t)a->count, a->dtype, a->root, comm, stream);
}

/* ---- The table --------------------------------------------------------------------------------- */

static const tirx__coll_rule all_reduce = {
    "all_reduce", "ncclAllReduce: partial on every rank -> a whole copy on every rank",
    "ncclAllReduce", check_all_reduce, run_all_reduce};
static const tirx__coll_rule reduce_scatter = {
    "reduce_scatter", "ncclReduceScatter: partial on every rank -> one shard per rank",
    "ncclReduceScatter", check_reduce_scatter, run_reduce_scatter};
static const tirx__coll_rule all_gather = {
    "all_gather", "ncclAllGather: one shard per rank -> a whole copy on every rank",
    "ncclAllGather", check_all_gather, run_all_gather};
static const tirx__coll_rule all_to_all = {
    "all_to_all", "ncclSend/ncclRecv in a group: block j of rank i -> block i of rank j",
    "ncclSend/ncclRecv", check_all_to_all, run_all_to_all};
static const tirx__coll_rule broadcast = {
    "broadcast", "ncclBroadcast: the whole tensor on the root -> a copy on every rank",
    "ncclBroadcast", check_broadcast, run_broadcast};

/* Reductions first (a partial source has no other rule), then the moves. With one rank every
 * structure coincides; the first legal rule in this order wins. */
static const tirx__coll_rule *const TABLE[] = {
    &all_reduce, &reduce_scatter, &all_gather, &all_to_all, &broadcast,
};

const tirx__coll_rule *const *tirx__coll_rules(int *count) {
  if (count) *count = (int)(sizeof TABLE / sizeof TABLE[0]);
  return TABLE;
}
