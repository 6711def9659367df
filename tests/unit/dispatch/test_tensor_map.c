/* src/dispatch/tensor_map.c (TMA tensor-map derivation) and the copy_async.tma rule's dispatch. */
#include "dispatch/tensor_map.h"
#include "dispatch_helpers.h"

TestSuite(tma, .init = dispatch_setup, .fini = dispatch_teardown);

#define U TIRX__TMA_UNKNOWN

/* A global side with the given strides (U: known at launch), sizes unknown, begins zero. */
static tirx__tma_global gstrides(int rank, const int64_t *stride) {
  tirx__tma_global g;
  for (int k = 0; k < rank; k++) {
    g.stride[k] = stride[k];
    g.size[k] = U;
    g.begin_div[k] = 0;
  }
  return g;
}

static tirx__tma_plan derive_ok(int rank, const int64_t *extent, const tirx__tma_global *g,
                                const tirx_layout *smem, int elem, bool split) {
  tirx__tma_plan p;
  char why[320] = "";
  tirx_status st = tirx__tma_derive(A, rank, extent, g, smem, elem, split, &p, why, sizeof why);
  cr_assert_eq(st, TIRX_OK, "derive: %s", why);
  return p;
}

static void derive_fails(int rank, const int64_t *extent, const tirx__tma_global *g,
                         const tirx_layout *smem, int elem, bool split, const char *msg) {
  tirx__tma_plan p;
  char why[320] = "";
  tirx_status st = tirx__tma_derive(A, rank, extent, g, smem, elem, split, &p, why, sizeof why);
  cr_assert_eq(st, TIRX_E_NOT_REPRESENTABLE, "expected a failure: %s", msg);
  cr_assert_str_eq(why, msg);
}

static void expect_dim(const tirx__tma_plan *p, int i, int dim, int kind, uint32_t box,
                       int64_t factor) {
  cr_assert_lt(i, p->map.rank);
  const tirx__tmap_dim *d = &p->map.d[i];
  cr_assert_eq(d->dim, dim, "map dim %d walks dim %d, expected %d", i, d->dim, dim);
  cr_assert_eq(d->kind, kind, "map dim %d kind %d, expected %d", i, d->kind, kind);
  cr_assert_eq(d->box, box, "map dim %d box %u, expected %u", i, d->box, box);
  cr_assert_eq(d->factor, factor, "map dim %d factor %lld", i, (long long)d->factor);
}

/* fast.cu's K-major A tile: 128 rows x 128 K of bf16 in 64-wide 128-byte-swizzled slabs. The
 * loop form is a 2-D map {64, 128} issued twice; the split form is the 3-D map {64, rows, K/64}
 * with strides {row, 64 elements = 128 bytes}, once. */
Test(tma, fastcu_k_major_tile_loop_and_split_forms) {
  const tirx_layout *s = tirx_layout_smem_tile(A, 128, 128, 2, 128);
  cr_assert_not_null(s);
  tirx__tma_global g = gstrides(2, (int64_t[]){U, 1});
  g.begin_div[0] = 128;
  g.begin_div[1] = 128;
  int64_t ext[2] = {128, 128};
  tirx__tma_plan lp = derive_ok(2, ext, &g, s, 2, false);
  cr_assert_eq(lp.map.rank, 2);
  cr_assert_eq(lp.map.swizzle, 128);
  expect_dim(&lp, 0, 1, TIRX__TMAP_WHOLE, 64, 1);
  expect_dim(&lp, 1, 0, TIRX__TMAP_WHOLE, 128, 1);
  cr_assert_eq(lp.nloops, 1);
  cr_assert_eq(lp.loop[0].dim, 1);
  cr_assert_eq(lp.loop[0].extent, 2);
  cr_assert_eq(lp.loop[0].mapdim, 0);
  cr_assert_eq(lp.loop[0].coord_step, 64);
  cr_assert_eq(lp.loop[0].smem_stride, 8192);
  cr_assert_eq(lp.box_elems, 8192);
  cr_assert_eq(lp.insts, 2);

  tirx__tma_plan sp = derive_ok(2, ext, &g, s, 2, true);
  cr_assert_eq(sp.map.rank, 3);
  expect_dim(&sp, 0, 1, TIRX__TMAP_INNER, 64, 1);
  cr_assert_eq(sp.map.d[0].extent, 64);
  expect_dim(&sp, 1, 0, TIRX__TMAP_WHOLE, 128, 1);
  expect_dim(&sp, 2, 1, TIRX__TMAP_OUTER, 2, 64);
  cr_assert_eq(sp.coord_div[2], 64);
  cr_assert_eq(sp.nloops, 0);
  cr_assert_eq(sp.box_elems, 16384);
  cr_assert_eq(sp.insts, 1);
}

/*
 * Paper figure 7 (the figure itself is not in our copy of the text; reconstructed from its
 * numbers): global strides (4096, 8, 1, 512) with box extents (1, 1, 8, 8). A row-major
 * (A, 8, 64, 8) tensor (strides 4096, 512, 8, 1) copied at region (1, 8, 1, 8) into an 8x8
 * row-major shared tile: the shared layout's dense chain picks the stride-1 dim (box 8) then
 * the stride-512 dim (box 8); the two fixed dims are box-1 coordinate dims. Listed as the paper
 * does (the fixed dims outermost first, then the box dims in TMA order) that is strides
 * (4096, 8, 1, 512) and boxes (1, 1, 8, 8).
 */
Test(tma, paper_figure7_permutes_the_global_dims_to_the_shared_order) {
  int64_t ext[4] = {1, 8, 1, 8};
  tirx_layout *s = tirx_layout_row_major(A, 4, ext);
  int64_t strides[4] = {4096, 512, 8, 1};
  tirx__tma_global g = gstrides(4, strides);
  tirx__tma_plan p = derive_ok(4, ext, &g, s, 2, false);
  cr_assert_eq(p.map.rank, 4);
  expect_dim(&p, 0, 3, TIRX__TMAP_WHOLE, 8, 1);
  expect_dim(&p, 1, 1, TIRX__TMAP_WHOLE, 8, 1);
  expect_dim(&p, 2, 2, TIRX__TMAP_WHOLE, 1, 1);
  expect_dim(&p, 3, 0, TIRX__TMAP_WHOLE, 1, 1);
  int order[4] = {3, 2, 0, 1}; /* the paper's listing */
  int64_t want_stride[4] = {4096, 8, 1, 512}, want_box[4] = {1, 1, 8, 8};
  for (int i = 0; i < 4; i++) {
    const tirx__tmap_dim *d = &p.map.d[order[i]];
    cr_assert_eq(strides[d->dim] * d->factor, want_stride[i]);
    cr_assert_eq(d->box, want_box[i]);
  }
  cr_assert_eq(p.nloops, 0);
  cr_assert_eq(p.box_elems, 64);
}

/* A column-major shared tile of a row-major global tensor: the chain's first iter is dim 0,
 * whose global stride is not 1: rejected with the reason. */
Test(tma, rejects_a_non_contiguous_inner_dim) {
  tirx_layout *s = tirx_layout_col_major(A, 2, (int64_t[]){16, 16});
  tirx__tma_global g = gstrides(2, (int64_t[]){64, 1});
  derive_fails(2, (int64_t[]){16, 16}, &g, s, 4, false,
               "dst's innermost elements run along dim 0, whose global stride is 64 elements: "
               "TMA needs it contiguous (stride 1)");
  g = gstrides(2, (int64_t[]){64, 2});
  derive_fails(2, (int64_t[]){16, 16}, &g, tirx_layout_row_major(A, 2, (int64_t[]){16, 16}), 4,
               false,
               "dst's innermost elements run along dim 1, whose global stride is 2 elements: "
               "TMA needs it contiguous (stride 1)");
}

Test(tma, rejects_global_strides_that_are_not_multiples_of_16_bytes) {
  tirx__tma_global g = gstrides(2, (int64_t[]){100, 1});
  derive_fails(2, (int64_t[]){8, 64}, &g, tirx_layout_row_major(A, 2, (int64_t[]){8, 64}), 2,
               false, "src dim 0 steps 200 bytes: TMA needs global strides that are multiples of "
                      "16 bytes");
}

Test(tma, rejects_box_rows_that_are_not_multiples_of_16_bytes) {
  tirx__tma_global g = gstrides(2, (int64_t[]){U, 1});
  derive_fails(2, (int64_t[]){4, 6}, &g, tirx_layout_row_major(A, 2, (int64_t[]){4, 6}), 2,
               false, "the box's innermost run is 12 bytes: TMA needs a multiple of 16 bytes");
  derive_fails(2, (int64_t[]){1, 1}, &g, tirx_layout_row_major(A, 2, (int64_t[]){1, 1}), 2,
               false, "the copy is one element (2 bytes): a TMA box row needs a multiple of 16 "
                      "bytes");
}

/* boxDim <= 256: a longer iter is split at its largest divisor <= 256 and the rest looped; an
 * innermost run with no such divisor is rejected. */
Test(tma, box_dims_above_256_are_split_or_rejected) {
  tirx__tma_global g = gstrides(2, (int64_t[]){U, 1});
  int64_t ext[2] = {512, 64};
  tirx__tma_plan p = derive_ok(2, ext, &g, tirx_layout_row_major(A, 2, ext), 2, false);
  expect_dim(&p, 0, 1, TIRX__TMAP_WHOLE, 64, 1);
  expect_dim(&p, 1, 0, TIRX__TMAP_WHOLE, 256, 1);
  cr_assert_eq(p.nloops, 1);
  cr_assert_eq(p.loop[0].extent, 2);
  cr_assert_eq(p.loop[0].coord_step, 256);
  cr_assert_eq(p.loop[0].smem_stride, 16384);
  /* f32 rows of 320: boxes of 160, two along the row, and the rows looped (the chain stops
   * after the first piece). Rows of 300 would need boxes of 100 f32 = 400 bytes, whose
   * starts are not 128-byte aligned. */
  int64_t e2[2] = {2, 320};
  p = derive_ok(2, e2, &g, tirx_layout_row_major(A, 2, e2), 4, false);
  expect_dim(&p, 0, 1, TIRX__TMAP_WHOLE, 160, 1);
  cr_assert_eq(p.map.rank, 2);
  cr_assert_eq(p.insts, 4);
  int64_t e4[2] = {2, 300};
  derive_fails(2, e4, &g, tirx_layout_row_major(A, 2, e4), 4, false,
               "dst's loop over dim 1 steps 400 bytes in shared memory: each TMA box needs "
               "128-byte alignment");
  int64_t e3[2] = {2, 257};
  derive_fails(2, e3, &g, tirx_layout_row_major(A, 2, e3), 4, false,
               "dst's innermost run of 257 elements has no divisor of whole 16-byte chunks up to "
               "256 elements to use as a box dimension");
}

Test(tma, rejects_more_than_five_map_dims) {
  int64_t ext[6] = {1, 2, 1, 2, 1, 8};
  tirx__tma_global g = gstrides(6, (int64_t[]){U, U, U, U, U, 1});
  /* (2):(16) and (2):(32): not dense after the 8-element run, so each dim needs its own map
   * dim: 6 > 5 even with the smallest box. */
  tirx_layout *s = tirx_layout_strided(A, 6, ext, (int64_t[]){1, 64, 1, 16, 1, 1});
  derive_fails(6, ext, &g, s, 4, false,
               "the copy needs 6 tensor-map dimensions: TMA has at most 5");
}

Test(tma, rejects_misaligned_shared_starts_and_loop_steps) {
  tirx__tma_global g = gstrides(2, (int64_t[]){U, 1});
  int64_t shape[2] = {16, 64};
  tirx_layout *t = tirx_layout_row_major(A, 2, shape);
  /* Row 1 of a 64-wide f16 tile starts at byte 128: fine; column 32 at byte 64: not. */
  derive_ok(2, (int64_t[]){8, 64}, &g,
            tirx_layout_slice(A, t, 2, shape, (int64_t[]){1, 0}, (int64_t[]){8, 64}), 2, false);
  derive_fails(2, (int64_t[]){8, 32}, &g,
               tirx_layout_slice(A, t, 2, shape, (int64_t[]){0, 32}, (int64_t[]){8, 32}), 2,
               false, "dst starts at byte 64 of its buffer: TMA needs 128-byte aligned shared "
                      "memory");
  /* A swizzled tile needs 1024-byte (8 x 128) aligned boxes: rows 8.. of a 128B tile are. */
  const tirx_layout *sw = tirx_layout_smem_tile(A, 32, 64, 2, 128);
  derive_ok(2, (int64_t[]){8, 64}, &g,
            tirx_layout_slice(A, sw, 2, (int64_t[]){32, 64}, (int64_t[]){8, 0},
                              (int64_t[]){8, 64}),
            2, false);
  derive_fails(2, (int64_t[]){4, 64}, &g,
               tirx_layout_slice(A, sw, 2, (int64_t[]){32, 64}, (int64_t[]){4, 0},
                                 (int64_t[]){4, 64}),
               2, false,
               "dst starts at byte 512 of its buffer: TMA needs 1024-byte aligned shared memory "
               "with this swizzle");
  /* Rows of 8 f32 every 64 bytes: each row is a box, and their starts are not aligned. */
  tirx_layout *gap = tirx_layout_strided(A, 2, (int64_t[]){2, 8}, (int64_t[]){16, 1});
  derive_fails(2, (int64_t[]){2, 8}, &g, gap, 4, false,
               "dst's loop over dim 0 steps 64 bytes in shared memory: each TMA box needs "
               "128-byte alignment");
}

Test(tma, split_form_needs_known_begins_and_divisible_extents) {
  const tirx_layout *s = tirx_layout_smem_tile(A, 64, 128, 2, 128);
  int64_t ext[2] = {64, 128};
  tirx__tma_global g = gstrides(2, (int64_t[]){U, 1});
  g.begin_div[1] = 1; /* a begin we know nothing about */
  derive_fails(2, ext, &g, s, 2, true,
               "the region's begin on dim 1 is not known to be a multiple of 64: a split tensor "
               "map needs it");
  g.begin_div[1] = 0;
  g.size[1] = 72;
  derive_fails(2, ext, &g, s, 2, true,
               "src dim 1 has extent 72, not a multiple of 64: a split tensor map would read "
               "past the rows");
  /* The loop form handles both (tails are zero-filled). */
  tirx__tma_plan p = derive_ok(2, ext, &g, s, 2, false);
  cr_assert_eq(p.insts, 2);
}

/* 32- and 64-byte swizzles over f16 and f32, 2-D and 3-D. */
Test(tma, swizzle_modes_and_ranks) {
  static const struct {
    int elem, sw;
    int64_t rows, cols, box0, slabs;
  } cases[] = {
      {2, 32, 16, 32, 16, 2}, {2, 64, 8, 64, 32, 2}, {4, 32, 8, 16, 8, 2},
      {4, 64, 32, 16, 16, 1}, {4, 128, 64, 64, 32, 2}, {2, 128, 8, 64, 64, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const tirx_layout *s =
        tirx_layout_smem_tile(A, cases[i].rows, cases[i].cols, cases[i].elem, cases[i].sw);
    cr_assert_not_null(s, "%s", tirx_last_error());
    int64_t ext[2] = {cases[i].rows, cases[i].cols};
    tirx__tma_global g = gstrides(2, (int64_t[]){U, 1});
    tirx__tma_plan p = derive_ok(2, ext, &g, s, cases[i].elem, false);
    cr_assert_eq(p.map.swizzle, cases[i].sw);
    expect_dim(&p, 0, 1, TIRX__TMAP_WHOLE, (uint32_t)cases[i].box0, 1);
    cr_assert_eq(p.map.d[0].box * (uint32_t)cases[i].elem, (uint32_t)cases[i].sw);
    cr_assert_eq(p.insts, cases[i].slabs);
    if (cases[i].slabs > 1) {
      tirx__tma_plan q = derive_ok(2, ext, &g, s, cases[i].elem, true);
      cr_assert_eq(q.map.rank, 3);
      cr_assert_eq(q.insts, 1);
    }
  }
  /* 3-D: a (2, 8, 32) f16 stage buffer slice with 64-byte swizzle rows. */
  tirx_layout *s3 = tirx_layout_parse(A, "((2),(8),(32)):((256),(32),(1))^sw(64,2)");
  cr_assert_not_null(s3, "%s", tirx_last_error());
  tirx__tma_global g = gstrides(3, (int64_t[]){U, U, 1});
  tirx__tma_plan p = derive_ok(3, (int64_t[]){2, 8, 32}, &g, s3, 2, false);
  cr_assert_eq(p.map.rank, 3);
  expect_dim(&p, 0, 2, TIRX__TMAP_WHOLE, 32, 1);
  expect_dim(&p, 1, 1, TIRX__TMAP_WHOLE, 8, 1);
  expect_dim(&p, 2, 0, TIRX__TMAP_WHOLE, 2, 1);
  /* A swizzle over other elements than the copy's. */
  derive_fails(2, (int64_t[]){8, 64}, &g, tirx_layout_smem_tile(A, 8, 64, 2, 128), 4, false,
               "dst's swizzle is over 2-byte elements, not 4");
}

/* ---- the rule through tirx__dispatch ---- */

/* copy_async.cp_async's reason for a call with a barrier (TMA's protocol). */
#define CP_REASON                                                                                 \
  "copy_async.cp_async: cfg->barrier is set: a cp.async load completes in cp.async groups "      \
  "(tirx_cp_async_commit, tirx_cp_async_wait), not on an mbarrier"

static const tirx_scope *one_thread(void) {
  tirx_scope *s = tirx_scope_filter(A, tirx_scope_new(A, 4, 1, 1), TIRX_AXIS_TID, 0, 1);
  cr_assert_not_null(s, "%s", tirx_last_error());
  return s;
}

Test(tma, dispatch_chooses_copy_async_tma_for_loads_and_stores) {
  const tirx_layout *s = tirx_layout_smem_tile(A, 64, 64, 2, 128);
  const tirx_layout *gl = rows2d(1000, 4096, 0, 0, 64, 64);
  tirx__call load = CALL(TIRX__PRIM_COPY_ASYNC, 90, one_thread(), op(s, TIRX_BF16, TIRX__ROLE_SHARED),
                         op(gl, TIRX_BF16, TIRX__ROLE_GLOBAL));
  load.config.barrier = true; /* a TMA load completes on an mbarrier */
  tirx__dispatch_result r = expect_rule(&load, "copy_async.tma", "box=4096");
  cr_assert(!r.fallback);
  tirx__call store = CALL(TIRX__PRIM_COPY_ASYNC, 90, one_thread(), op(gl, TIRX_BF16, TIRX__ROLE_GLOBAL),
                          op(s, TIRX_BF16, TIRX__ROLE_SHARED));
  expect_rule(&store, "copy_async.tma", "box=4096");
  /* Two slabs: the loop form first (extents only known at launch); the split form on request. */
  const tirx_layout *s2 = tirx_layout_smem_tile(A, 64, 128, 2, 128);
  const tirx_layout *g2 = rows2d(1000, 4096, 0, 0, 64, 128);
  tirx__call two = CALL(TIRX__PRIM_COPY_ASYNC, 90, one_thread(), op(s2, TIRX_BF16, TIRX__ROLE_SHARED),
                        op(g2, TIRX_BF16, TIRX__ROLE_GLOBAL));
  two.config.barrier = true;
  expect_rule(&two, "copy_async.tma", "box=4096");
  two.config.shape.v[0] = 8192;
  expect_rule(&two, "copy_async.tma", "box=8192");
}

Test(tma, dispatch_reports_why_tma_is_not_legal) {
  const tirx_layout *s = tirx_layout_smem_tile(A, 64, 64, 2, 128);
  const tirx_layout *gl = rows2d(1000, 4096, 0, 0, 64, 64);
  tirx__call c = CALL(TIRX__PRIM_COPY_ASYNC, 90, team(TIRX_TEAM_WARP),
                      op(s, TIRX_BF16, TIRX__ROLE_SHARED), op(gl, TIRX_BF16, TIRX__ROLE_GLOBAL));
  c.config.barrier = true; /* TMA's protocol: cp.async is no way out */
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_90, roles=global->shared, "
              "team=warp): copy_async.tma: the call has 512 active threads: one thread issues "
              "a TMA copy (wrap it in tirx_filter_begin(b, TIRX_AXIS_TID, t, t + 1)); " CP_REASON);
  /* sm_80 has no TMA (the error says which rule needs sm_90). */
  c = CALL(TIRX__PRIM_COPY_ASYNC, 80, one_thread(), op(s, TIRX_BF16, TIRX__ROLE_SHARED),
           op(gl, TIRX_BF16, TIRX__ROLE_GLOBAL));
  c.config.barrier = true;
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_80, roles=global->shared, "
              "team=cta): " CP_REASON "; copy_async.tma: needs sm_90 or newer");
  /* A column-major global region. */
  tirx_layout *cm = tirx_layout_strided(A, 2, (int64_t[]){64, 64}, (int64_t[]){1, 1000});
  c = CALL(TIRX__PRIM_COPY_ASYNC, 90, one_thread(), op(s, TIRX_BF16, TIRX__ROLE_SHARED),
           op(cm, TIRX_BF16, TIRX__ROLE_GLOBAL));
  c.config.barrier = true;
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_90, roles=global->shared, "
              "team=cta): copy_async.tma: dst's innermost elements run along dim 1, whose "
              "global stride is 1000 elements: TMA needs it contiguous (stride 1); " CP_REASON);
}
