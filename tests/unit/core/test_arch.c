/* Arch names and feature sets (src/core/arch.c): the table of targets and their features, the
 * arch-specific features that no newer target inherits, and the helpers messages use. */
#include "../helpers.h"
#include "core/internal.h"

TestSuite(arch);

#define F(name) TIRX__FEAT(name)
static tirx__features of(const char *arch) {
  char suffix = 0;
  int number = tirx__arch_parse(arch, &suffix);
  cr_assert_geq(number, 0, "%s", arch);
  return tirx__arch_features(number, suffix);
}

Test(arch, every_target_has_the_features_of_its_row) {
  const tirx__features sm80 = F(LDMATRIX) | F(CP_ASYNC) | F(MMA_SYNC) | F(REDUX);
  const tirx__features sm90 = sm80 | F(TMA) | F(MBARRIER) | F(CLUSTER) | F(ELECT) | F(STMATRIX) |
                               F(GRIDDEP);
  static const struct {
    const char *arch;
    tirx__features has;
  } rows[] = {
      {"sm_75", F(LDMATRIX)},
      {"sm_80", sm80},
      {"sm_86", sm80},
      {"sm_89", sm80},
      {"sm_90", sm90},
      {"sm_90a", sm90 | F(WGMMA) | F(SETMAXNREG)},
      {"sm_90f", sm90},
      {"sm_100", sm90},
      {"sm_100a", sm90 | F(TCGEN05)}, /* not wgmma or setmaxnreg: sm_90a's own */
      {"sm_100f", sm90 | F(TCGEN05)},
      {"sm_120", sm90},
      {"sm_120a", sm90},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    cr_assert_eq(of(rows[i].arch), rows[i].has, "%s: 0x%x, expected 0x%x", rows[i].arch,
                 (unsigned)of(rows[i].arch), (unsigned)rows[i].has);
}

Test(arch, names_and_where_each_feature_exists) {
  cr_assert_str_eq(tirx__feature_name(TIRX__FEAT_WGMMA), "wgmma");
  cr_assert_str_eq(tirx__feature_name(TIRX__FEAT_CP_ASYNC), "cp.async");
  cr_assert_null(tirx__feature_name(TIRX__FEAT_COUNT));
  cr_assert_str_eq(tirx__feature_where(TIRX__FEAT_TMA), "sm_90 or newer");
  cr_assert_str_eq(tirx__feature_where_only(TIRX__FEAT_TMA), "sm_90 or newer");
  cr_assert_str_eq(tirx__feature_where(TIRX__FEAT_LDMATRIX), "sm_75 or newer");
  cr_assert_str_eq(tirx__feature_where(TIRX__FEAT_WGMMA), "sm_90a");
  cr_assert_str_eq(tirx__feature_where_only(TIRX__FEAT_SETMAXNREG), "sm_90a only");
  cr_assert_str_eq(tirx__feature_where_only(TIRX__FEAT_TCGEN05), "sm_100a or sm_100f only");
  cr_assert_null(tirx__feature_where((tirx__feature)-1));
  cr_assert_null(tirx__feature_where_only(TIRX__FEAT_COUNT));
  cr_assert(tirx__feature_specific(TIRX__FEAT_WGMMA));
  cr_assert_not(tirx__feature_specific(TIRX__FEAT_STMATRIX));
  cr_assert_not(tirx__feature_specific(TIRX__FEAT_COUNT));
}

Test(arch, the_missing_feature_named_is_the_hardest_to_get) {
  cr_assert_eq(tirx__features_missing(of("sm_90a"), F(WGMMA) | F(TMA)), -1);
  /* arch-specific before generic, then the newest */
  cr_assert_eq(tirx__features_missing(of("sm_80"), F(TMA) | F(WGMMA) | F(CP_ASYNC)),
               TIRX__FEAT_WGMMA);
  cr_assert_eq(tirx__features_missing(of("sm_75"), F(CP_ASYNC) | F(MBARRIER)),
               TIRX__FEAT_MBARRIER);
  /* ties: table order */
  cr_assert_eq(tirx__features_missing(of("sm_80"), F(ELECT) | F(TMA)), TIRX__FEAT_TMA);
  cr_assert_eq(tirx__features_missing(of("sm_100a"), F(SETMAXNREG) | F(WGMMA)),
               TIRX__FEAT_WGMMA);
  cr_assert_eq(tirx__features_missing(0, 0), -1);
  cr_assert_eq(tirx__features_min_arch(0), 0);
  cr_assert_eq(tirx__features_min_arch(F(LDMATRIX) | F(MMA_SYNC)), 80);
  cr_assert_eq(tirx__features_min_arch(F(WGMMA)), 90);
}
