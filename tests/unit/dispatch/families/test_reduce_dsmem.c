/* reduce.dsmem (src/dispatch/families/reduce_dsmem.c, reduce_smem.c): a cluster of CTAs reduces a
 * register tile whose iters span the cluster on cbx; the CTA partial as reduce.smem, then the
 * partials pushed into every peer through DSMEM and a cluster barrier. Generated code, the IR
 * text, PTX for sm_90a (mapa, st.shared::cluster, barrier.cluster), every error with its
 * message, and the membound kernels that use it for wide rows. */
#include <string.h>

#include "../../helpers.h"
#include "rows_ref.h"

/* The row kernels' options of the current test (each test runs in its own process). */
static tirx_row_options ro;

static void has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

/* A cluster of cx x cy CTAs of 64 threads sums v (cols elements laid out as `layout`) into s
 * and thread 0 of CTA 0 writes s to y[0]. dtype: of v and s. */
static tirx_builder *cluster_sum(int cx, int cy, tirx_dtype dt, int64_t cols,
                                 const char *layout) {
  tirx_builder *b = tirx_builder_create("csum");
  tirx_tensor *y = tirx_param_tensor(b, "y", dt, TIRX_EXPRS(tirx_int(b, 1)), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_set_cluster(b, cx, cy, 1);
  tirx_set_grid(b, tirx_int(b, cx), tirx_int(b, cy), NULL);
  tirx_team_begin(b, TIRX_TEAM_CLUSTER);
  tirx_tensor *v = tirx_alloc_local(b, "v", dt, TIRX_DIMS(cols),
                                    tirx_layout_parse(tirx_builder_arena(b), layout));
  tirx_fill(b, tirx_whole(b, v), tirx_float(b, 1.0, dt), NULL);
  tirx_tensor *s = tirx_alloc_local(b, "s", dt, TIRX_DIMS(1), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), TIRX_OP_SUM, 1, false, NULL);
  tirx_if_begin(b, tirx_eq(b, tirx_add(b, tirx_thread_linear(b), tirx_cluster_ctarank(b)),
                           tirx_int(b, 0)));
  tirx_store(b, y, TIRX_EXPRS(tirx_int(b, 0)), tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0))));
  tirx_if_end(b);
  tirx_team_end(b);
  return b;
}

static void build_fails(tirx_builder *b, const char *msg) {
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_E_NOT_SUPPORTED, "%s", tirx_builder_error(b));
  cr_assert_str_eq(tirx_builder_error(b), msg);
  cr_assert_null(k);
  tirx_builder_destroy(b);
}

Test(dsmem, lowers_to_a_cta_reduction_and_dsmem_stores_between_cluster_barriers) {
  tirx_builder *b = cluster_sum(2, 1, TIRX_F32, 384, "(2,64,3):(1@cbx,1@tid,1@reg)");
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  has(tirx_kernel_dispatch_report(k),
      "[csum:2] reduce(arch=sm_90, roles=local->local, team=cluster) -> reduce.dsmem ctas=2\n");
  const char *src = tirx_kernel_source(k);
  /* The CTA partial (two warps through shared memory), then each CTA's partial into slot
   * [0][rank] of both CTAs, a cluster barrier, the fold in rank order, a final barrier. */
  has(src, "float *red2_dsmem = (float *)(tirx_smem + ");
  has(src, "const int rank = tirx_cluster_ctarank();");
  has(src, "    if (((int)threadIdx.x == 0)) {\n"
           "      #pragma unroll\n"
           "      for (int i = 0; i < 2; ++i) {\n"
           "        tirx_dsmem_st_f32(&red2_dsmem[rank], (unsigned)(i), acc_1);\n"
           "      }\n"
           "    }\n"
           "    tirx_cluster_sync_all();\n"
           "    float acc_2 = 0.0f;\n"
           "    acc_2 = (acc_2 + red2_dsmem[0]);\n"
           "    acc_2 = (acc_2 + red2_dsmem[1]);\n"
           "    s[0] = acc_2;\n"
           "  }\n");
  /* Run once, the call ends at the fold: one cluster barrier. */
  const char *sync = strstr(src, "tirx_cluster_sync_all();\n    float");
  cr_assert_not_null(sync, "%s", src);
  cr_assert_null(strstr(sync + 1, "tirx_cluster_sync_all();"), "a second barrier:\n%s", src);
  has(tirx_kernel_ir_str(k), "dsmem_store red2_dsmem[0, rank] of cta i = acc\n");
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK,
               "%s", tirx_last_error());
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
  const char *ptx = tirx_compiled_ptx(c);
  has(ptx, "mapa.shared::cluster.u32");
  has(ptx, "st.shared::cluster.f32");
  has(ptx, "barrier.cluster.arrive.release.aligned");
  has(ptx, "barrier.cluster.wait.acquire.aligned");
  has(ptx, "%cluster_ctarank");
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

/* In a loop, a peer must not write the next iteration's slots before every CTA has read this
 * iteration's: a second cluster barrier after the fold. */
Test(dsmem, a_call_in_a_loop_ends_with_a_second_cluster_barrier) {
  tirx_builder *b = tirx_builder_create("cloop");
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_set_cluster(b, 2, 1, 1);
  tirx_set_grid(b, tirx_int(b, 2), NULL, NULL);
  tirx_team_begin(b, TIRX_TEAM_CLUSTER);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(128),
                                    tirx_layout_parse(tirx_builder_arena(b), "(2,64):(1@cbx,1@tid)"));
  tirx_tensor *s = tirx_alloc_local(b, "s", TIRX_F32, TIRX_DIMS(1), NULL);
  tirx_fill(b, tirx_whole(b, s), tirx_float(b, 0.0, TIRX_F32), NULL);
  tirx_expr *it = tirx_for_begin(b, "it", tirx_int(b, 0), tirx_int(b, 3), NULL,
                                TIRX_LOOP_SERIAL);
  tirx_fill(b, tirx_whole(b, v), tirx_cast(b, it, TIRX_F32), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), TIRX_OP_SUM, 1, true, NULL);
  tirx_for_end(b);
  tirx_if_begin(b, tirx_eq(b, tirx_add(b, tirx_thread_linear(b), tirx_cluster_ctarank(b)),
                           tirx_int(b, 0)));
  tirx_store(b, y, TIRX_EXPRS(tirx_int(b, 0)), tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0))));
  tirx_if_end(b);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  const char *src = tirx_kernel_source(k);
  has(src, "      s[0] = (s[0] + acc_2);\n"
           "      tirx_cluster_sync_all();\n"
           "    }\n");
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

Test(dsmem, needs_a_one_dimensional_cluster) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_set_block(b, 128, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_CLUSTER);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(128),
                                    tirx_layout_parse(tirx_builder_arena(b), "(128):(1@tid)"));
  tirx_tensor *s = tirx_alloc_local(b, "s", TIRX_F32, TIRX_DIMS(1), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), TIRX_OP_SUM, 1, false, NULL);
  tirx_team_end(b);
  build_fails(b, "tirx_kernel_build: [k:1] reduce.dsmem: a cluster reduction needs a cluster of "
                 "x CTAs (tirx_set_cluster(b, x, 1, 1)), got 0 x 0 x 0");
  build_fails(cluster_sum(1, 2, TIRX_F32, 64, "(64):(1@tid)"),
              "tirx_kernel_build: [csum:2] reduce.dsmem: a cluster reduction needs a cluster of "
              "x CTAs (tirx_set_cluster(b, x, 1, 1)), got 1 x 2 x 1");
}

Test(dsmem, the_reduced_cbx_iters_must_cover_the_cluster) {
  build_fails(cluster_sum(4, 1, TIRX_F32, 256, "(2,64,2):(1@cbx,1@tid,1@reg)"),
              "tirx_kernel_build: [csum:2] reduce.dsmem: the reduced iters on cbx span 2 CTAs, "
              "expected the cluster's 4");
}

Test(dsmem, accumulates_in_f32_only) {
  build_fails(cluster_sum(2, 1, TIRX_F64, 128, "(2,64):(1@cbx,1@tid)"),
              "tirx_kernel_build: [csum:2] reduce.dsmem: a cluster reduction accumulates in f64, "
              "expected f32");
}

/* Wide rows of the membound kernels: one CTA per row unless tirx_row_options.cluster asks for a
 * cluster of 2 or 4 CTAs per row, each a part of the row. */
Test(dsmem, membound_wide_rows_use_a_cluster_per_row_on_request, .timeout = 300) {
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 32768).cluster, 1); /* the default */
  ro.cluster = 2;
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 32768).cluster, 2);
  cr_assert_eq(row_plan(TIRX_ROW_OP_LAYERNORM, &ro, TIRX_F32, 20000).cluster, 2);
  cr_assert_eq(row_plan(TIRX_ROW_OP_LAYERNORM, &ro, TIRX_BF16, 16384).cluster, 1); /* not wider */
  cr_assert_eq(row_plan(TIRX_ROW_OP_LAYERNORM, &ro, TIRX_BF16, 20001).cluster, 1); /* odd */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SUM, &ro, TIRX_BF16, 32768).cluster, 1);   /* not this kind */
  ro.cluster = 4;
  cr_assert_eq(row_plan(TIRX_ROW_OP_RMSNORM, &ro, TIRX_BF16, 32768).cluster, 4);
  cr_assert_eq(row_plan(TIRX_ROW_OP_RMSNORM, &ro, TIRX_BF16, 20000).cluster, 4); /* 4 x 125 x 5 */
  cr_assert_eq(row_plan(TIRX_ROW_OP_RMSNORM, &ro, TIRX_BF16, 20008).cluster, 1); /* 5002 = 625.25 vectors */
  ro.cluster = 0;
  cr_assert_eq(row_threads(&ro, TIRX_BF16, 16384), 512);
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK,
               "%s", tirx_last_error());
  static const tirx_row_op kinds[] = {TIRX_ROW_OP_SOFTMAX, TIRX_ROW_OP_LAYERNORM, TIRX_ROW_OP_RMSNORM};
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  for (int ctas = 1; ctas <= 4; ctas *= 2)
    for (int i = 0; i < 3; i++)
      for (int d = 0; d < 3; d++) {
        char err[1024] = "", want[64];
        ro.cluster = ctas;
        tirx_kernel *k = row_kernel(kinds[i], &ro, dts[d], i == 1 ? 20000 : 32768, false, err,
                                        sizeof err);
        ro.cluster = 0;
        cr_assert_not_null(k, "%s", err);
        const char *src = tirx_kernel_source(k);
        if (ctas == 1) {
          cr_assert_null(strstr(tirx_kernel_dispatch_report(k), "reduce.dsmem"), "%s",
                         tirx_kernel_dispatch_report(k));
          if (row_plan(kinds[i], &ro, dts[d], i == 1 ? 20000 : 32768).stages > 0) /* membound.h */
            has(src, "for (int row = (int)blockIdx.x; row < rows; row += (int)gridDim.x) {");
          else
            has(src, "const int row = (int)blockIdx.x;");
          tirx_kernel_release(k);
          continue;
        }
        snprintf(want, sizeof want, "team=cluster) -> reduce.dsmem ctas=%d\n", ctas);
        has(tirx_kernel_dispatch_report(k), want);
        has(src, "const int row = tirx_cluster_id(0);");
        tirx_compiled *c = NULL;
        cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
        has(tirx_compiled_ptx(c), "mapa.shared::cluster.u32");
        /* One cluster barrier per reduction (softmax: 2; layernorm, rmsnorm: 1). */
        int barriers = 0;
        for (const char *q = tirx_compiled_ptx(c); (q = strstr(q, "barrier.cluster.wait")); q++)
          barriers++;
        cr_assert_eq(barriers, i == 0 ? 2 : 1, "%d cluster barriers", barriers);
        tirx_compiled_destroy(c);
        tirx_kernel_release(k);
      }
  tirx_runtime_destroy(rt);
}
