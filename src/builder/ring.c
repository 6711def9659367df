/* Rings: a pipeline's stages between producers and consumers, as full/empty mbarrier pairs
 * (tirx/builder.h, "Rings"). Written on the public builder calls; the statements they add are
 * those a kernel would write by hand. */
#include <stdio.h>
#include <string.h>

#include "builder_internal.h"

struct tirx_ring {
  tirx_tensor *full, *empty;
  int stages;
  int64_t producers, consumers;
};

tirx_ring *tirx_ring_new(tirx_builder *b, const char *name, int stages, int64_t producers,
                         int64_t consumers) {
  static const char fn[] = "tirx_ring_new";
  if (!tirx__b_ok(b, fn) || !tirx__b_name(b, fn, name, "name")) return NULL;
  if (stages < 1 || stages > 64) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: stages is %d, expected 1 to 64", fn, stages);
    return NULL;
  }
  if (producers < 1 || consumers < 1 || producers > TIRX__MBAR_MAX_COUNT ||
      consumers > TIRX__MBAR_MAX_COUNT) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: producers and consumers are %lld and %lld, "
                 "expected 1 to %d (the arrivals that complete a stage's full and empty barrier)",
                 fn, (long long)producers, (long long)consumers, TIRX__MBAR_MAX_COUNT);
    return NULL;
  }
  /* The barriers are named name_full and name_empty: identifiers of at most
   * TIRX_BUILDER_MAX_NAME characters that no parameter or shared tensor has. */
  char full[80], empty[80];
  snprintf(full, sizeof full, "%s_full", name);
  snprintf(empty, sizeof empty, "%s_empty", name);
  if (strlen(empty) > TIRX_BUILDER_MAX_NAME) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: name \"%s\" is too long: at most %d characters "
                 "(the ring's barriers are name_full and name_empty)", fn, name,
                 TIRX_BUILDER_MAX_NAME - 6);
    return NULL;
  }
  if (!tirx__b_name_unique(b, fn, full) || !tirx__b_name_unique(b, fn, empty)) return NULL;
  tirx_ring *r = tirx__b_node(b, fn, sizeof *r);
  if (!r) return NULL;
  r->full = tirx_alloc_mbarrier(b, full, stages);
  r->empty = tirx_alloc_mbarrier(b, empty, stages);
  if (!r->full || !r->empty) return NULL;
  r->stages = stages;
  r->producers = producers;
  r->consumers = consumers;
  return r;
}

int tirx_ring_stages(const tirx_ring *r) { return r ? r->stages : 0; }

static bool ring_arg(tirx_builder *b, const char *fn, const tirx_ring *r) {
  if (!tirx__b_ok(b, fn)) return false;
  if (!r) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: ring is NULL", fn);
    return false;
  }
  if (r->full->owner != b) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: ring belongs to another builder", fn);
    return false;
  }
  return true;
}

/* The counter n of tirx_ring_stage and _phase: an integer expression that leaves room for the
 * levels and nodes the ring's arithmetic adds on top of it (n % stages; (n / stages) & 1, ^ 1). */
static bool ring_counter(tirx_builder *b, const char *fn, const tirx_expr *n, int levels) {
  if (!tirx__b_int_arg(b, fn, n, "n")) return false;
  if (n->depth + levels > TIRX_BUILDER_MAX_EXPR_DEPTH ||
      n->size + 2u * (unsigned)levels > TIRX_BUILDER_MAX_EXPR_SIZE) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: n is nested %d deep with %u nodes: the ring's arithmetic "
                 "on it would pass %d deep or %d nodes", fn, (int)n->depth, (unsigned)n->size,
                 TIRX_BUILDER_MAX_EXPR_DEPTH, TIRX_BUILDER_MAX_EXPR_SIZE);
    return false;
  }
  return true;
}

/* A stage: an integer, and a constant one within [0, stages). */
static bool ring_stage_arg(tirx_builder *b, const char *fn, const tirx_ring *r,
                           const tirx_expr *stage) {
  if (!tirx__b_int_arg(b, fn, stage, "stage")) return false;
  if (stage->kind == TIRX__EX_INT && (stage->i < 0 || stage->i >= r->stages)) {
    tirx__b_fail(b, TIRX_E_OUT_OF_RANGE, "%s: stage is %lld, expected 0 to %d (the ring's stages "
                 "less one)", fn, (long long)stage->i, r->stages - 1);
    return false;
  }
  return true;
}

void tirx_rings_init(tirx_builder *b, tirx_ring *const *rings, int n) {
  static const char fn[] = "tirx_rings_init";
  if (!tirx__b_ok(b, fn)) return;
  if (!rings || n < 1) {
    tirx__b_fail(b, rings ? TIRX_E_INVALID_ARG : TIRX_E_NULL_ARG,
                 "%s: rings is %s and n %d, expected an array of n >= 1 rings", fn,
                 rings ? "given" : "NULL", n);
    return;
  }
  int most = 0;
  for (int i = 0; i < n; i++) {
    if (!ring_arg(b, fn, rings[i])) return;
    if (rings[i]->stages > most) most = rings[i]->stages;
  }
  /* stage by stage, ring by ring: full (producers' arrivals), then empty (consumers') */
  for (int s = 0; s < most; s++)
    for (int i = 0; i < n; i++) {
      const tirx_ring *r = rings[i];
      if (s >= r->stages) continue;
      tirx_mbarrier_init(b, tirx_ring_full(b, r, tirx_int(b, s)), r->producers);
      tirx_mbarrier_init(b, tirx_ring_empty(b, r, tirx_int(b, s)), r->consumers);
    }
  tirx_fence_mbarrier_init(b);
}

tirx_expr *tirx_ring_stage(tirx_builder *b, const tirx_ring *r, tirx_expr *n) {
  static const char fn[] = "tirx_ring_stage";
  if (!ring_arg(b, fn, r) || !ring_counter(b, fn, n, 1)) return NULL;
  return tirx_let(b, "s", tirx_mod(b, n, tirx_int(b, r->stages)));
}

tirx_expr *tirx_ring_phase(tirx_builder *b, const tirx_ring *r, tirx_expr *n, bool producer) {
  static const char fn[] = "tirx_ring_phase";
  if (!ring_arg(b, fn, r) || !ring_counter(b, fn, n, 3)) return NULL;
  tirx_expr *ph = tirx_bit_and(b, tirx_div(b, n, tirx_int(b, r->stages)), tirx_int(b, 1));
  return tirx_let(b, "ph", producer ? tirx_bit_xor(b, ph, tirx_int(b, 1)) : ph);
}

static tirx_region *elem(tirx_builder *b, tirx_tensor *bars, tirx_expr *stage) {
  return tirx_region_new(b, bars, TIRX_EXPRS(stage), (int64_t[]){1});
}

tirx_region *tirx_ring_full(tirx_builder *b, const tirx_ring *r, tirx_expr *stage) {
  static const char fn[] = "tirx_ring_full";
  return ring_arg(b, fn, r) && ring_stage_arg(b, fn, r, stage) ? elem(b, r->full, stage) : NULL;
}

tirx_region *tirx_ring_empty(tirx_builder *b, const tirx_ring *r, tirx_expr *stage) {
  static const char fn[] = "tirx_ring_empty";
  return ring_arg(b, fn, r) && ring_stage_arg(b, fn, r, stage) ? elem(b, r->empty, stage) : NULL;
}

void tirx_ring_acquire(tirx_builder *b, const tirx_ring *r, tirx_expr *stage, tirx_expr *phase,
                       tirx_expr *bytes) {
  static const char fn[] = "tirx_ring_acquire";
  if (!ring_arg(b, fn, r) || !ring_stage_arg(b, fn, r, stage) ||
      !tirx__b_int_arg(b, fn, phase, "phase") || (bytes && !tirx__b_int_arg(b, fn, bytes, "bytes")))
    return;
  if (bytes && bytes->kind == TIRX__EX_INT && (bytes->i < 0 || bytes->i > TIRX__MBAR_MAX_TX)) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: bytes is %lld, expected 0 to %d", fn,
                 (long long)bytes->i, TIRX__MBAR_MAX_TX);
    return;
  }
  tirx_mbarrier_wait(b, tirx_ring_empty(b, r, stage), phase);
  if (bytes) tirx_mbarrier_expect_tx(b, tirx_ring_full(b, r, stage), bytes);
}

void tirx_ring_wait(tirx_builder *b, const tirx_ring *r, tirx_expr *stage, tirx_expr *phase) {
  static const char fn[] = "tirx_ring_wait";
  if (ring_arg(b, fn, r) && ring_stage_arg(b, fn, r, stage) &&
      tirx__b_int_arg(b, fn, phase, "phase"))
    tirx_mbarrier_wait(b, tirx_ring_full(b, r, stage), phase);
}

void tirx_ring_release(tirx_builder *b, const tirx_ring *r, tirx_expr *stage) {
  static const char fn[] = "tirx_ring_release";
  if (ring_arg(b, fn, r) && ring_stage_arg(b, fn, r, stage))
    tirx_mbarrier_arrive(b, tirx_ring_empty(b, r, stage));
}
