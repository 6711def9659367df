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
      "pointwise.scalar", "reduce.shuffle", "reduce.smem", "reduce.dsmem", "reduce.scalar",
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
    cr_assert_eq(last->min_arch, 0, "%s", last->name);
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
