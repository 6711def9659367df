/* src/ir/printer.c: the readable IR text, as golden strings. */
#include "../helpers.h"

TestSuite(printer);

static char *ir_of(tirx_builder *b) {
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  char *s = strdup(tirx_kernel_ir_str(k));
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
  return s;
}

Test(printer, vector_add) {
  tirx_builder *b = tirx_builder_create("vector_add");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 256, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 256)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 256)),
                                           tirx_thread_idx(b, 0)));
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_store(b, y, TIRX_EXPRS(i),
             tirx_add(b, tirx_load(b, x, TIRX_EXPRS(i)), tirx_load(b, y, TIRX_EXPRS(i))));
  tirx_if_end(b);
  char *s = ir_of(b);
  cr_assert_str_eq(s, "kernel vector_add(n: int i64, x: f32[n], y: f32[n])\n"
                      "  grid (ceildiv(n, 256), 1, 1) block (256, 1, 1) shared 0\n"
                      "{\n"
                      "  let i: i32 = (block_idx.x * 256) + thread_idx.x\n"
                      "  if i64(i) < n {\n"
                      "    y[i] = x[i] + y[i]\n"
                      "  }\n"
                      "}\n");
  free(s);
}

Test(printer, statements_and_storage) {
  tirx_builder *b = tirx_builder_create("rows");
  tirx_arena *A = tirx_builder_arena(b);
  tirx_expr *m = tirx_param_int(b, "m", TIRX_I32);
  tirx_expr *ld = tirx_param_int(b, "ld", TIRX_I64);
  tirx_expr *eps = tirx_param_scalar(b, "eps", TIRX_F64);
  tirx_tensor *a = tirx_param_tensor_strided(b, "a", TIRX_BF16, TIRX_EXPRS(m, tirx_int(b, 64)),
                                             (tirx_expr *[]){ld, NULL});
  tirx_tensor *o = tirx_param_tensor(b, "o", TIRX_F64, TIRX_EXPRS(m), NULL);
  tirx_tensor *s = tirx_alloc_shared(b, "s", TIRX_F32, TIRX_DIMS(4, 8),
                                     tirx_layout_parse(A, "(4,8):(1,4)"));
  tirx_set_block(b, 32, 4, 1);
  tirx_set_grid(b, m, tirx_int(b, 2), NULL);
  tirx_set_shared_bytes(b, tirx_mul(b, m, tirx_int(b, 4)));
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(2), NULL);
  tirx_expr *acc = tirx_var(b, "acc", TIRX_F64, NULL);
  tirx_expr *j = tirx_for_begin(b, "j", tirx_lane_id(b), tirx_int(b, 64), tirx_int(b, 32),
                                TIRX_LOOP_UNROLL);
  tirx_assign(b, acc, tirx_add(b, acc, tirx_cast(b, tirx_load(b, a, TIRX_EXPRS(tirx_block_idx(b, 0), j)),
                                                 TIRX_F64)));
  tirx_for_end(b);
  tirx_store(b, v, TIRX_EXPRS(tirx_int(b, 0)), tirx_float(b, 0.5, TIRX_F32));
  tirx_store(b, s, TIRX_EXPRS(tirx_warp_id(b), tirx_int(b, 1)), tirx_load(b, v, TIRX_EXPRS(tirx_int(b, 0))));
  tirx_sync_threads(b);
  tirx_if_begin(b, tirx_and(b, tirx_eq(b, tirx_lane_id(b), tirx_int(b, 0)), tirx_not(b, tirx_bool(b, false))));
  tirx_store(b, o, TIRX_EXPRS(tirx_block_idx(b, 0)), tirx_sqrt(b, tirx_max(b, acc, eps)));
  tirx_else(b);
  tirx_sync_warp(b);
  tirx_if_end(b);
  char *text = ir_of(b);
  cr_assert_str_eq(text,
                   "kernel rows(m: int i32, ld: int i64, eps: f64, a: bf16[m, 64] strides [ld, ?], "
                   "o: f64[m])\n"
                   "  grid (m, 2, 1) block (32, 4, 1) shared 128 + (m * 4)\n"
                   "  shared s: f32[4, 8] layout ((4),(8)):((1@m),(4@m)) at 0\n"
                   "{\n"
                   "  local v: f32[2] layout ((2)):((1@m))\n"
                   "  var acc: f64\n"
                   "  for j: i32 in [lane_id, 64) step 32 unroll {\n"
                   "    acc = acc + f64(a[block_idx.x, j])\n"
                   "  }\n"
                   "  v[0] = 0.5f\n"
                   "  s[warp_id, 1] = v[0]\n"
                   "  sync_threads\n"
                   "  if (lane_id == 0) && !false {\n"
                   "    o[block_idx.x] = sqrt(max(acc, eps))\n"
                   "  } else {\n"
                   "    sync_warp\n"
                   "  }\n"
                   "}\n");
  free(text);
}

Test(printer, specialisation_policies) {
  /* The default policy (div16) is not printed; the others are. */
  tirx_builder *b = tirx_builder_create("pol");
  tirx_expr *m = tirx_param_int(b, "m", TIRX_I32);
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_expr *k = tirx_param_int(b, "k", TIRX_I32);
  tirx_param_set_policy(b, n, TIRX_SPECIALIZE_VALUE);
  tirx_param_set_policy(b, k, TIRX_SPECIALIZE_DYNAMIC);
  tirx_param_set_policy(b, m, TIRX_SPECIALIZE_DIV16);
  tirx_set_block(b, 32, 1, 1);
  char *s = ir_of(b);
  cr_assert_str_eq(s, "kernel pol(m: int i32, n: int i64 [value], k: int i32 [dynamic])\n"
                      "  grid (1, 1, 1) block (32, 1, 1) shared 0\n"
                      "{\n"
                      "}\n");
  free(s);
}
