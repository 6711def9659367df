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
  if (producers < 1 || consumers < 1) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: producers and consumers are %lld and %lld, "
                 "expected >= 1 (the arrivals that complete a stage's full and empty barrier)",
                 fn, (long long)producers, (long long)consumers);
    return NULL;
  }
  char full[80], empty[80];
  if (snprintf(full, sizeof full, "%s_full", name) >= (int)sizeof full ||
      snprintf(empty, sizeof empty, "%s_empty", name) >= (int)sizeof empty) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: name \"%.32s...\" is too long (at most 70 "
                 "characters)", fn, name);
    return NULL;
  }
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
  if (!r) tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: ring is NULL", fn);
  return r != NULL;
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
  if (!ring_arg(b, "tirx_ring_stage", r)) return NULL;
  return tirx_let(b, "s", tirx_mod(b, n, tirx_int(b, r->stages)));
}

tirx_expr *tirx_ring_phase(tirx_builder *b, const tirx_ring *r, tirx_expr *n, bool producer) {
  if (!ring_arg(b, "tirx_ring_phase", r)) return NULL;
  tirx_expr *ph = tirx_bit_and(b, tirx_div(b, n, tirx_int(b, r->stages)), tirx_int(b, 1));
  return tirx_let(b, "ph", producer ? tirx_bit_xor(b, ph, tirx_int(b, 1)) : ph);
}

static tirx_region *elem(tirx_builder *b, tirx_tensor *bars, tirx_expr *stage) {
  return tirx_region_new(b, bars, TIRX_EXPRS(stage), (int64_t[]){1});
}

tirx_region *tirx_ring_full(tirx_builder *b, const tirx_ring *r, tirx_expr *stage) {
  return ring_arg(b, "tirx_ring_full", r) ? elem(b, r->full, stage) : NULL;
}

tirx_region *tirx_ring_empty(tirx_builder *b, const tirx_ring *r, tirx_expr *stage) {
  return ring_arg(b, "tirx_ring_empty", r) ? elem(b, r->empty, stage) : NULL;
}

void tirx_ring_acquire(tirx_builder *b, const tirx_ring *r, tirx_expr *stage, tirx_expr *phase,
                       tirx_expr *bytes) {
  if (!ring_arg(b, "tirx_ring_acquire", r)) return;
  tirx_mbarrier_wait(b, tirx_ring_empty(b, r, stage), phase);
  if (bytes) tirx_mbarrier_expect_tx(b, tirx_ring_full(b, r, stage), bytes);
}

void tirx_ring_wait(tirx_builder *b, const tirx_ring *r, tirx_expr *stage, tirx_expr *phase) {
  if (ring_arg(b, "tirx_ring_wait", r)) tirx_mbarrier_wait(b, tirx_ring_full(b, r, stage), phase);
}

void tirx_ring_release(tirx_builder *b, const tirx_ring *r, tirx_expr *stage) {
  if (ring_arg(b, "tirx_ring_release", r)) tirx_mbarrier_arrive(b, tirx_ring_empty(b, r, stage));
}
