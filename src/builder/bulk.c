/*
 * TMA and clusters in the builder: bulk-group statements, tensor-map prefetch, the cluster
 * shape and cluster special registers, the registry of tensor maps the copy_async.tma
 * lowering asks for (one hidden entry-point parameter each) and the check of an mbarrier
 * operand. The mbarrier statements are sync.c's.
 * tirx_copy_async itself is in prim.c with the other primitives.
 */
#include <string.h>

#include "builder_internal.h"

/* The op's need and prelude section (native.c): the bulk helpers are sm_90. */
static tirx__stmt *async_stmt(tirx_builder *b, const char *fn, const tirx__native_op *op) {
  return tirx__b_native_in(b, fn, op, NULL);
}

void tirx_bulk_commit(tirx_builder *b) {
  static const char fn[] = "tirx_bulk_commit";
  if (tirx__b_ok(b, fn)) async_stmt(b, fn, &tirx__nv_bulk_commit);
}

void tirx_bulk_wait(tirx_builder *b, int n, bool read_only) {
  static const char fn[] = "tirx_bulk_wait";
  if (!tirx__b_ok(b, fn)) return;
  if (n < 0 || n > 63) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: n is %d, expected 0 to 63", fn, n);
    return;
  }
  tirx__stmt *s = async_stmt(b, fn, read_only ? &tirx__nv_bulk_wait_read : &tirx__nv_bulk_wait);
  if (s) ((tirx__nv_imm *)s->native.p)->n = n;
}

void tirx_tmap_prefetch(tirx_builder *b, tirx_tensor *t) {
  static const char fn[] = "tirx_tmap_prefetch";
  if (!tirx__b_ok(b, fn) || !tirx__b_tensor(b, fn, t, "t")) return;
  if (t->storage != TIRX__GLOBAL || t->decl.kind != TIRX__DECL_PARAM_TENSOR) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s is not a global tensor parameter", fn,
                 t->decl.name);
    return;
  }
  tirx__stmt *s = async_stmt(b, fn, &tirx__nv_tmap_prefetch);
  if (s) ((tirx__nv_tensor *)s->native.p)->tensor = t;
}

void tirx_set_cluster(tirx_builder *b, int x, int y, int z) {
  static const char fn[] = "tirx_set_cluster";
  if (!tirx__b_ok(b, fn)) return;
  int v[3] = {x, y, z};
  static const char *const names[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; i++)
    if (v[i] < 1 || v[i] > 8) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s is %d, expected 1 to 8", fn, names[i], v[i]);
      return;
    }
  if (x * y * z > 8) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: %d x %d x %d CTAs, expected at most 8 (the portable cluster size)", fn, x,
                 y, z);
    return;
  }
  for (int i = 0; i < 3; i++) b->cluster[i] = v[i];
}

static tirx_expr *cluster_reg(tirx_builder *b, const char *fn, int sp, int dim) {
  if (!tirx__b_ok(b, fn)) return NULL;
  if (dim < 0 || dim > 2) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: dim is %d, expected 0, 1 or 2", fn, dim);
    return NULL;
  }
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_SPECIAL, sp, TIRX_I32, NULL, NULL, NULL);
  if (!e) return NULL;
  e->i = dim;
  e->host = false;
  b->preludes |= TIRX__PRE_BULK;
  tirx__b_need(b, tirx__special_features(sp), fn);
  return e;
}

/* tirx_cluster_ctarank is in sync.c (with the other cluster statements). */

tirx_expr *tirx_cluster_id(tirx_builder *b, int dim) {
  return cluster_reg(b, "tirx_cluster_id", TIRX__SP_CLUSTER_ID, dim);
}

int tirx__b_tmap(tirx_builder *b, tirx_tensor *t, const tirx__tmap_desc *d) {
  static const char fn[] = "tirx_kernel_build";
  tirx__tmap_desc want;
  memcpy(&want, d, sizeof want);
  want.param = t->decl.param_index;
  for (int i = 0; i < b->ntmaps; i++) { /* one map for loads and stores alike: store ORed */
    want.store = b->tmap[i].store;
    if (b->tmap_tensor[i] == t && memcmp(&b->tmap[i], &want, sizeof want) == 0) {
      b->tmap[i].store |= d->store;
      return i;
    }
  }
  want.store = d->store;
  if (b->ntmaps == TIRX__MAX_TMAPS) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: the kernel needs more than %d TMA tensor maps", fn,
                 TIRX__MAX_TMAPS);
    return -1;
  }
  b->tmap_tensor[b->ntmaps] = t;
  b->tmap[b->ntmaps] = want;
  return b->ntmaps++;
}

/* ---- mbarrier operands ---- */

bool tirx__b_region_barrier(tirx_builder *b, const char *fn, const tirx_region *r,
                            const char *arg) {
  if (!r) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: %s is NULL", fn, arg);
    return false;
  }
  bool one = r->owner == b && r->tensor;
  for (int k = 0; one && k < r->tensor->rank; k++) one = r->extent[k] == 1;
  if (!one || r->tensor->storage != TIRX__SHARED || r->tensor->dtype != TIRX_I64) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: %s is not one element of a shared i64 tensor (an mbarrier)", fn, arg);
    return false;
  }
  return true;
}
