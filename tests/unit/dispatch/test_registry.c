/* src/dispatch/registry.c: the table is ordered, has at most one default per key, and names
 * each family at most once per key. */
#include <string.h>

#include "../helpers.h"
#include "dispatch/dispatch.h"

static const int ARCHS[] = {70, 75, 80, 86, 89, 90, 100};

/* Runs body for every key (primitive, arch, dst role, source roles, team): every combination of
 * roles of the sources (a rule may constrain operands one by one, tirx__rule.roles). */
#define FOR_EACH_KEY(body)                                                                         \
  for (int p_ = 0; p_ < TIRX__PRIM_COUNT; p_++)                                                    \
    for (size_t a_ = 0; a_ < sizeof ARCHS / sizeof ARCHS[0]; a_++)                                 \
      for (int d_ = 0; d_ < TIRX__ROLE_COUNT; d_++)                                                \
        for (int s_ = 0; s_ < 64; s_++) /* three sources of four roles: 2 bits each */             \
          for (int t_ = 0; t_ <= TIRX_TEAM_CLUSTER; t_++) {                                        \
            tirx__prim prim = (tirx__prim)p_;                                                      \
            int arch = ARCHS[a_];                                                                  \
            tirx_team team_ = (tirx_team)t_;                                                       \
            int nops = tirx__prim_operand_count(prim);                                             \
            if (s_ >> 2 * (nops - 1)) continue; /* roles of operands the primitive lacks */        \
            tirx__role roles[TIRX__MAX_OPERANDS];                                                  \
            roles[0] = (tirx__role)d_;                                                             \
            for (int i_ = 1; i_ < nops; i_++) roles[i_] = (tirx__role)(s_ >> 2 * (i_ - 1) & 3);    \
            body                                                                                   \
          }

Test(dispatch_registry, the_table_in_order) {
  static const char *const expected[] = {
      "copy.ldmatrix",    "copy.stmatrix",  "copy.vec",    "copy.scalar",  "pointwise.vec",
      "pointwise.scalar", "reduce.redux", "reduce.smem", "reduce.shuffle", "reduce.dsmem", "reduce.scalar",
      "copy_async.tma",   "copy_async.cp_async",
      "gemm.mma",         "gemm.scalar",    "gemm_async.wgmma", "gemm_async.wgmma_rs",
  };
  int n = 0;
  const tirx__rule *const *t = tirx__registry(&n);
  cr_assert_eq(n, (int)(sizeof expected / sizeof expected[0]));
  for (int i = 0; i < n; i++) {
    cr_assert_str_eq(t[i]->name, expected[i]);
    cr_assert_not_null(t[i]->family);
    cr_assert_not_null(t[i]->summary);
    cr_assert_not_null(t[i]->shape_dims[0], "%s has no shape dims", t[i]->name);
    cr_assert(t[i]->prims && t[i]->flows && t[i]->teams, "%s matches nothing", t[i]->name);
    /* Lowered rules (src/dispatch/families/) have an emitter; the others must not pretend. */
    bool lowered = strcmp(t[i]->name, "copy.vec") == 0 || strcmp(t[i]->name, "copy.scalar") == 0 ||
                   strcmp(t[i]->name, "pointwise.vec") == 0 ||
                   strcmp(t[i]->name, "pointwise.scalar") == 0 ||
                   strcmp(t[i]->name, "reduce.redux") == 0 ||
                   strcmp(t[i]->name, "reduce.shuffle") == 0 ||
                   strcmp(t[i]->name, "reduce.smem") == 0 ||
                   strcmp(t[i]->name, "reduce.dsmem") == 0 ||
                   strcmp(t[i]->name, "reduce.scalar") == 0 ||
                   strcmp(t[i]->name, "copy.ldmatrix") == 0 ||
                   strcmp(t[i]->name, "copy.stmatrix") == 0 ||
                   strcmp(t[i]->name, "copy_async.tma") == 0 ||
                   strcmp(t[i]->name, "copy_async.cp_async") == 0 ||
                   strncmp(t[i]->name, "gemm", 4) == 0;
    cr_assert_eq(t[i]->emit != NULL, lowered, "%s: emitter %s", t[i]->name,
                 t[i]->emit ? "present" : "missing");
  }
}

Test(dispatch_registry, at_most_one_default_per_key_and_defaults_first) {
  int n = 0;
  const tirx__rule *const *t = tirx__registry(&n);
  FOR_EACH_KEY({
    int defaults = 0;
    bool seen_fallback = false;
    for (int i = 0; i < n; i++) {
      if (!tirx__rule_matches(t[i], prim, arch, nops, roles, team_)) continue;
      if (t[i]->kind == TIRX__RULE_DEFAULT) {
        defaults++;
        cr_assert(!seen_fallback, "%s: default after a fallback for %s sm_%d team %s", t[i]->name,
                  tirx__prim_name(prim), arch, tirx_team_name(team_));
      } else if (t[i]->kind == TIRX__RULE_FALLBACK) {
        seen_fallback = true;
      }
    }
    cr_assert_leq(defaults, 1, "%d defaults for %s sm_%d %s->%s team %s", defaults,
                  tirx__prim_name(prim), arch, tirx__role_name(roles[1]), tirx__role_name(roles[0]),
                  tirx_team_name(team_));
  })
}

Test(dispatch_registry, a_family_names_one_rule_per_key) {
  int n = 0;
  const tirx__rule *const *t = tirx__registry(&n);
  FOR_EACH_KEY({
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++)
        if (strcmp(t[i]->family, t[j]->family) == 0 &&
            tirx__rule_matches(t[i], prim, arch, nops, roles, team_) &&
            tirx__rule_matches(t[j], prim, arch, nops, roles, team_))
          cr_assert_fail("%s and %s share family %s on one key", t[i]->name, t[j]->name,
                         t[i]->family);
  })
}

/* A rule that names operand roles one by one matches only the keys with those roles, where
 * flows alone accept every mix of its source roles. */
Test(dispatch_registry, per_operand_roles_narrow_the_flows) {
  tirx__rule r = {.name = "t.t", .family = "t", .summary = "t",
                  .prims = TIRX__BIT(TIRX__PRIM_BINARY),
                  .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL) |
                           TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL),
                  .teams = TIRX__TEAMS_ALL};
  tirx__role ls[3] = {TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL, TIRX__ROLE_SHARED};
  tirx__role sl[3] = {TIRX__ROLE_LOCAL, TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL};
  tirx__role ss[3] = {TIRX__ROLE_LOCAL, TIRX__ROLE_SHARED, TIRX__ROLE_SHARED};
  cr_assert(tirx__rule_matches(&r, TIRX__PRIM_BINARY, 90, 3, ls, TIRX_TEAM_WARP));
  cr_assert(tirx__rule_matches(&r, TIRX__PRIM_BINARY, 90, 3, sl, TIRX_TEAM_WARP));
  cr_assert(tirx__rule_matches(&r, TIRX__PRIM_BINARY, 90, 3, ss, TIRX_TEAM_WARP));
  r.roles[1] = TIRX__BIT(TIRX__ROLE_LOCAL);
  r.roles[2] = TIRX__BIT(TIRX__ROLE_SHARED);
  cr_assert(tirx__rule_matches(&r, TIRX__PRIM_BINARY, 90, 3, ls, TIRX_TEAM_WARP));
  cr_assert_not(tirx__rule_matches(&r, TIRX__PRIM_BINARY, 90, 3, sl, TIRX_TEAM_WARP));
  cr_assert_not(tirx__rule_matches(&r, TIRX__PRIM_BINARY, 90, 3, ss, TIRX_TEAM_WARP));
  /* The destination too. */
  r.roles[0] = TIRX__BIT(TIRX__ROLE_SHARED);
  cr_assert_not(tirx__rule_matches(&r, TIRX__PRIM_BINARY, 90, 3, ls, TIRX_TEAM_WARP));
}

Test(dispatch_registry, every_primitive_with_rules_has_a_last_resort) {
  /* copy, pointwise and reduce end with a fallback that matches every team and memory flow. */
  int n = 0;
  const tirx__rule *const *t = tirx__registry(&n);
  static const tirx__prim prims[] = {TIRX__PRIM_COPY,    TIRX__PRIM_UNARY, TIRX__PRIM_BINARY,
                                     TIRX__PRIM_TERNARY, TIRX__PRIM_CAST,  TIRX__PRIM_FILL,
                                     TIRX__PRIM_SELECT,  TIRX__PRIM_REDUCE};
  for (size_t k = 0; k < sizeof prims / sizeof prims[0]; k++) {
    const tirx__rule *last = NULL;
    for (int i = 0; i < n; i++)
      if (t[i]->prims & TIRX__BIT(prims[k])) last = t[i];
    cr_assert_not_null(last);
    cr_assert_eq(last->kind, TIRX__RULE_FALLBACK, "%s", last->name);
    cr_assert_str_eq(last->family, "scalar");
    cr_assert_eq(last->teams, TIRX__TEAMS_ALL, "%s", last->name);
    cr_assert_eq(last->needs.features, 0, "%s", last->name);
    cr_assert_eq(tirx__rule_min_arch(last), 0, "%s", last->name);
  }
}

Test(dispatch_registry, names) {
  cr_assert_str_eq(tirx__prim_name(TIRX__PRIM_GEMM_ASYNC), "gemm_async");
  cr_assert_null(tirx__prim_name(TIRX__PRIM_COUNT));
  cr_assert_str_eq(tirx__prim_operand_name(TIRX__PRIM_SELECT, 1), "cond");
  cr_assert_null(tirx__prim_operand_name(TIRX__PRIM_COPY, 2));
  cr_assert_str_eq(tirx__role_name(TIRX__ROLE_LOCAL), "local");
  cr_assert_str_eq(tirx__prim_op_name(TIRX__PRIM_OP_SUMSQ), "sumsq");
  cr_assert_null(tirx__prim_op_name(TIRX__PRIM_OP_COUNT));
  cr_assert_str_eq(tirx__hint_name(TIRX__HINT_NC), ".nc");
}

/* ---- every rule's declared features cover the code its lowering writes ---- */

#include "cp_async_tiles.h"
#include "mma_tiles.h"
#include "rows_ref.h"

/* Marks the rules a kernel's dispatch report names ("-> copy.vec vec=4"). */
static void mark_rules(const tirx_kernel *k, bool *seen, int n, const tirx__rule *const *t) {
  const char *rep = tirx_kernel_dispatch_report(k);
  for (const char *p = strstr(rep, "-> "); p; p = strstr(p + 3, "-> "))
    for (int i = 0; i < n; i++) {
      size_t len = strlen(t[i]->name);
      if (strncmp(p + 3, t[i]->name, len) == 0 && (p[3 + len] == ' ' || p[3 + len] == '\n'))
        seen[i] = true;
    }
}

/* One thread folds its own registers: reduce.scalar. */
static tirx_kernel *thread_sum(void) {
  tirx_builder *b = tirx_builder_create("tsum");
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_THREAD);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(8), NULL);
  tirx_fill(b, tirx_whole(b, v), tirx_float(b, 1.0, TIRX_F32), NULL);
  tirx_tensor *s = tirx_alloc_local(b, "s", TIRX_F32, TIRX_DIMS(1), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), TIRX_OP_SUM, 1, false, NULL);
  tirx_store(b, y, TIRX_EXPRS(tirx_int(b, 0)), tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0))));
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* A warp sums its 32 x 8 i32 registers: reduce.redux. */
static tirx_kernel *warp_isum(void) {
  tirx_builder *b = tirx_builder_create("wsum");
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_I32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_layout *lv = tirx_layout_parse(tirx_builder_arena(b), "(32,8):(1@laneid,1@reg)");
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_I32, TIRX_DIMS(256), lv);
  tirx_fill(b, tirx_whole(b, v), tirx_int(b, 1), NULL);
  tirx_tensor *s = tirx_alloc_local(b, "s", TIRX_I32, TIRX_DIMS(1), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), TIRX_OP_SUM, 1, false, NULL);
  tirx_store(b, y, TIRX_EXPRS(tirx_int(b, 0)), tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0))));
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/*
 * Issue 13: gemm_async.wgmma_rs declared no sm_90a need, so dispatch chose it on sm_90 and
 * sm_100a and NVRTC failed. The lowering driver (src/dispatch/lower_driver.c, lower_one) now checks,
 * for every call, that the features of the statements the rule wrote (src/ir/needs.c) are
 * among the rule's declared ones, and fails the build with TIRX_E_INTERNAL otherwise. Here
 * every rule of the registry is chosen by at least one kernel built for sm_90a (where every
 * feature but tcgen05 exists), so a rule that under-declares fails this test.
 */
Test(dispatch_registry, every_rule_declares_the_features_its_lowering_needs, .timeout = 300) {
  int n = 0;
  const tirx__rule *const *t = tirx__registry(&n);
  bool seen[64] = {false};
  cr_assert_leq(n, 64);
  char err[1024];
  tirx_kernel *ks[32];
  int nk = 0;
  static const tirx_row_op kinds[] = {TIRX_ROW_OP_RMSNORM, TIRX_ROW_OP_LAYERNORM,
                                      TIRX_ROW_OP_SOFTMAX};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    ks[nk++] = row_kernel(kinds[i], NULL, TIRX_BF16, 4096, false, err, sizeof err); /* smem */
    ks[nk++] = row_kernel(kinds[i], NULL, TIRX_BF16, 512, false, err, sizeof err);  /* shuffle */
    ks[nk++] = row_kernel(kinds[i], NULL, TIRX_F32, 512, true, err, sizeof err);    /* scalar */
    ks[nk++] = row_kernel(kinds[i], NULL, TIRX_BF16, 32768, false, err, sizeof err); /* TMA */
  }
  ks[nk++] = row_kernel(TIRX_ROW_OP_RMSNORM, &(tirx_row_options){.cluster = 2}, TIRX_BF16, 32768,
                        false, err, sizeof err); /* dsmem */
  ks[nk++] = example_cp_async_tile(
      &(cp_async_tile){.dtype = TIRX_F32, .tm = 16, .tn = 64, .ld = 64, .stages = 2,
                       .threads = 128},
      err, sizeof err);
  static const char *const families[] = {"mma", "scalar", "wgmma"};
  for (size_t i = 0; i < 3; i++)
    ks[nk++] = example_mma_tile(&(mma_tile){.family = families[i], .dtype = TIRX_BF16, .m = 64,
                                            .n = 64, .k = 64, .warpgroups = i == 2,
                                            .swizzle = 128},
                                err, sizeof err);
  ks[nk++] = example_mma_tile(&(mma_tile){.family = "wgmma", .dtype = TIRX_F16, .m = 64, .n = 64,
                                          .k = 64, .warpgroups = 1, .swizzle = 128,
                                          .a_regs = true},
                              err, sizeof err);
  ks[nk++] = thread_sum();
  ks[nk++] = warp_isum();
  for (int i = 0; i < nk; i++) {
    cr_assert_not_null(ks[i], "kernel %d: %s", i, err);
    mark_rules(ks[i], seen, n, t);
    tirx_kernel_release(ks[i]);
  }
  for (int i = 0; i < n; i++)
    cr_expect(seen[i], "no kernel of this test chooses %s: add one", t[i]->name);
}
