/*
 * Tile copies through shared memory with cp.async (copy_async.cp_async), built with the
 * builder's tile primitives: the test bed of the family (tests/unit/dispatch/families/test_copy_cp_async.c
 * builds them and compiles them with NVRTC for sm_80 and sm_90a, tests/gpu/test_cp_async.c
 * runs them).
 *
 * O receives A tile by tile: each TM x TN tile of A is loaded into shared memory by
 * tirx_copy_async without a barrier (cp.async, its tails zero-filled), waited for, and copied
 * to the same place of O, whose shape is A's rounded up to whole tiles. So O[r, c] = A[r, c]
 * inside A and 0 outside it: the zeros are what the src-size operand filled in.
 * Parameters: M, N (i32), A (dtype [M, N], strides (ld, 1)), O (dtype [ceil(M / TM) * TM,
 * ceil(N / TN) * TN], dense).
 *   stages 1: grid (ceil(N / TN), ceil(M / TM)), one tile per CTA: copy, wait_all, barrier,
 *             store.
 *   stages 2: grid ceil(M / TM): each CTA walks its row of tiles through two shared stages;
 *             tile t + 1's copy is issued and committed before waiting (wait_group 1) for
 *             tile t, which is then stored; a barrier before a stage is refilled.
 */
#ifndef TIRX_EXAMPLES_CP_ASYNC_TILES_H
#define TIRX_EXAMPLES_CP_ASYNC_TILES_H

#include <stddef.h>
#include <stdint.h>
#include <tirx.h>

typedef struct cp_async_tile {
  tirx_dtype dtype;
  int tm, tn;         /* the tile */
  int64_t ld;         /* A's row stride in elements, a constant (the vector width depends on it) */
  int stages;         /* 1 or 2 */
  int threads;        /* the block: the CTA's threads share each tile's copies */
  const char *target; /* tirx_set_target; NULL: the default (sm_90a) */
  const char *family; /* the copies' cfg.family; NULL: the registry's choice */
} cp_async_tile;

/* The kernel for t, or NULL with the builder's error in err[cap]. */
tirx_kernel *example_cp_async_tile(const cp_async_tile *t, char *err, size_t cap);

/* The tiles the GPU suite runs (and the CPU suite builds and compiles for sm_80 and sm_90a):
 * f32, f16 and bf16; 16-byte copies (row strides multiples of 16 bytes), 8- and 4-byte ones
 * (rows 8 or 4 bytes aligned); targets sm_80, sm_86, sm_89 and the default sm_90a (where TMA
 * is tried first), the family forced or chosen; one and two stages. Row strides of about a
 * thousand elements: any N up to 1000 fits. */
extern const cp_async_tile cp_async_tile_suite[];
extern const int cp_async_tile_suite_count;

#endif
