/*
 * What each native-level statement needs of the compile target (internal.h: the arch
 * features): one row per native statement, asynchronous operation and special register, so
 * that the builder (src/builder/sync.c), the lowering driver (src/builder/prim.c) and the
 * registry test read one table. The rows say what the prelude helper a statement prints as is
 * guarded by (prelude.c: `#if __CUDA_ARCH__ >= 900`, `#ifdef __CUDA_ARCH_FEAT_SM90_ALL`).
 */
#include "ir.h"

/* TIRX__ST_NATIVE, by tirx__native. Named barriers and register fences run anywhere. */
static const tirx__features NATIVE[TIRX__NV_COUNT] = {
    [TIRX__NV_MBAR_INIT] = TIRX__FEAT(MBARRIER),
    [TIRX__NV_MBAR_ARRIVE] = TIRX__FEAT(MBARRIER),
    [TIRX__NV_MBAR_ARRIVE_CLUSTER] = TIRX__FEAT(MBARRIER) | TIRX__FEAT(CLUSTER),
    [TIRX__NV_MBAR_EXPECT_TX] = TIRX__FEAT(MBARRIER),
    [TIRX__NV_MBAR_WAIT] = TIRX__FEAT(MBARRIER),
    [TIRX__NV_FENCE_PROXY_ASYNC] = TIRX__FEAT(TMA),
    [TIRX__NV_FENCE_MBAR_INIT] = TIRX__FEAT(MBARRIER),
    [TIRX__NV_CLUSTER_SYNC] = TIRX__FEAT(CLUSTER),
    [TIRX__NV_SETMAXNREG] = TIRX__FEAT(SETMAXNREG),
    [TIRX__NV_NAMED_BAR_SYNC] = 0,
    [TIRX__NV_NAMED_BAR_ARRIVE] = 0,
    [TIRX__NV_WGMMA_FENCE] = TIRX__FEAT(WGMMA),
    [TIRX__NV_WGMMA_COMMIT] = TIRX__FEAT(WGMMA),
    [TIRX__NV_WGMMA_WAIT] = TIRX__FEAT(WGMMA),
    [TIRX__NV_WGMMA] = TIRX__FEAT(WGMMA),
    [TIRX__NV_MMA] = TIRX__FEAT(MMA_SYNC),
    [TIRX__NV_FENCE_REGS] = 0,
};

/* TIRX__ST_ASYNC, by TIRX__AS_* (flags). */
tirx__features tirx__async_features(int op) {
  switch (op) {
  case TIRX__AS_TMA_LOAD: return TIRX__FEAT(TMA) | TIRX__FEAT(MBARRIER);
  case TIRX__AS_TMA_STORE: case TIRX__AS_COMMIT: case TIRX__AS_WAIT: case TIRX__AS_PREFETCH:
    return TIRX__FEAT(TMA);
  case TIRX__AS_CLUSTER_SYNC: case TIRX__AS_DSMEM_ST: return TIRX__FEAT(CLUSTER);
  case TIRX__AS_CP_ASYNC: case TIRX__AS_CP_COMMIT: case TIRX__AS_CP_WAIT:
    return TIRX__FEAT(CP_ASYNC);
  default: return 0;
  }
}

tirx__features tirx__native_features(int op) {
  return op >= 0 && op < TIRX__NV_COUNT ? NATIVE[op] : 0;
}

tirx__features tirx__special_features(int sp) {
  switch (sp) {
  case TIRX__SP_CLUSTER_CTARANK: case TIRX__SP_CLUSTER_ID: return TIRX__FEAT(CLUSTER);
  case TIRX__SP_ELECT_ONE: return TIRX__FEAT(ELECT);
  default: return 0;
  }
}

static tirx__features expr_features(const tirx_expr *e) {
  if (!e) return 0;
  tirx__features fs = e->kind == TIRX__EX_SPECIAL ? tirx__special_features(e->op) : 0;
  fs |= expr_features(e->a) | expr_features(e->b) | expr_features(e->c);
  if (e->kind == TIRX__EX_LOAD && e->index && e->tensor)
    for (int k = 0; k < e->tensor->rank; k++) fs |= expr_features(e->index[k]);
  return fs;
}

tirx__features tirx__stmt_features(const tirx__stmt *s) {
  tirx__features fs = 0;
  switch (s->kind) {
  case TIRX__ST_NATIVE: fs = tirx__native_features(s->native); break;
  case TIRX__ST_ASYNC: fs = tirx__async_features(s->flags); break;
  case TIRX__ST_MATRIX:
    fs = s->flags & TIRX__MX_STORE ? TIRX__FEAT(STMATRIX) : TIRX__FEAT(LDMATRIX);
    break;
  default: break;
  }
  fs |= expr_features(s->a) | expr_features(s->b) | expr_features(s->c);
  if (s->index && s->tensor)
    for (int k = 0; k < s->tensor->rank; k++) fs |= expr_features(s->index[k]);
  return fs;
}

tirx__features tirx__block_features(const tirx__block *blk) {
  tirx__features fs = 0;
  for (const tirx__stmt *s = blk ? blk->first : NULL; s; s = s->next)
    fs |= tirx__stmt_features(s) | tirx__block_features(&s->body) |
          (s->has_else ? tirx__block_features(&s->orelse) : 0);
  return fs;
}
