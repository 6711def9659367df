/*
 * What statements need of the compile target (core/internal.h: the arch features). A native
 * statement needs its op's features (native.h, TIRX__NEED); special registers theirs (below).
 * The builder records them as statements are made (builder/stmt.c, sync.c, tma.c); the
 * lowering driver (dispatch/lower_driver.c) walks what a rule's lowering wrote and checks it
 * against the rule's declared features.
 */
#include "ir.h"

tirx__features tirx__native_features(const tirx__native_op *op) { return op ? op->need : 0; }

tirx__features tirx__special_features(int sp) {
  switch (sp) {
  case TIRX__SP_CLUSTER_CTARANK: case TIRX__SP_CLUSTER_ID: return TIRX__FEAT(CLUSTER);
  case TIRX__SP_ELECT_ONE: return TIRX__FEAT(ELECT);
  default: return 0;
  }
}

tirx__features tirx__stmt_features(const tirx__stmt *s) {
  return s->kind == TIRX__ST_NATIVE ? tirx__native_features(s->native.op) : 0;
}

tirx__features tirx__block_features(const tirx__block *blk) {
  tirx__features fs = 0;
  for (const tirx__stmt *s = blk ? blk->first : NULL; s; s = s->next) {
    fs |= tirx__stmt_features(s);
    switch (s->kind) {
    case TIRX__ST_FOR: fs |= tirx__block_features(&s->loop.body); break;
    case TIRX__ST_IF:
      fs |= tirx__block_features(&s->branch.then);
      if (s->branch.has_else) fs |= tirx__block_features(&s->branch.orelse);
      break;
    case TIRX__ST_PRIM: fs |= tirx__block_features(&s->prim.body); break;
    default: break;
    }
  }
  return fs;
}
