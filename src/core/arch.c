/*
 * Architecture names ("sm_90a" -> compute capability 90 and suffix 'a') and the features a
 * target has (internal.h: TIRX__FEATURE_MAP).
 *
 * A target's features are its generic features (every feature that is not arch-specific whose
 * `since` is at most the target's number: sm_100 has everything of sm_90) plus the
 * arch-specific features its row of SPECIFIC lists. The "a" features belong to one target
 * only: wgmma and setmaxnreg are sm_90a's and not sm_100a's (PTX's wgmma does not exist on
 * Blackwell), so a kernel that uses them compiles for sm_90a alone. The resulting table:
 *
 *     sm_80, sm_86, sm_87, sm_89   ldmatrix, cp.async, mma.sync
 *     sm_90, sm_100, sm_120, ...   those + tma, mbarrier, cluster, elect, stmatrix
 *     sm_90a                       sm_90's + wgmma, setmaxnreg
 *     sm_100a, sm_100f             sm_100's + tcgen05
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

int tirx__arch_parse(const char *arch, char *suffix) {
  if (suffix) *suffix = 0;
  if (!arch || strncmp(arch, "sm_", 3) != 0) return -1;
  const char *p = arch + 3;
  int number = 0, digits = 0;
  for (; isdigit((unsigned char)*p) && digits < 4; p++, digits++) number = number * 10 + (*p - '0');
  char s = 0;
  if (*p == 'a' || *p == 'f') s = *p++;
  if (digits < 2 || *p != '\0') return -1;
  if (suffix) *suffix = s;
  return number;
}

static const struct {
  const char *name;
  int since;
} FEATURES[TIRX__FEAT_COUNT] = {
#define TIRX__FEATURE_ROW_(name, text, since) {text, since},
    TIRX__FEATURE_MAP(TIRX__FEATURE_ROW_)
#undef TIRX__FEATURE_ROW_
};

/* The arch-specific features, by the targets that have them. */
#define SPECIFIC_FEATURES (TIRX__FEAT(WGMMA) | TIRX__FEAT(SETMAXNREG) | TIRX__FEAT(TCGEN05))
static const struct {
  const char *name;
  int number;
  char suffix;
  tirx__features has;
} SPECIFIC[] = {
    {"sm_90a", 90, 'a', TIRX__FEAT(WGMMA) | TIRX__FEAT(SETMAXNREG)},
    {"sm_100a", 100, 'a', TIRX__FEAT(TCGEN05)},
    {"sm_100f", 100, 'f', TIRX__FEAT(TCGEN05)},
};
enum { NSPECIFIC = sizeof SPECIFIC / sizeof SPECIFIC[0] };

static bool specific(int f) { return SPECIFIC_FEATURES >> f & 1; }

bool tirx__feature_specific(tirx__feature f) {
  return (unsigned)f < TIRX__FEAT_COUNT && specific((int)f);
}

tirx__features tirx__arch_features(int number, char suffix) {
  tirx__features fs = 0;
  for (int f = 0; f < TIRX__FEAT_COUNT; f++)
    if (!specific(f) && FEATURES[f].since <= number) fs |= (tirx__features)1 << f;
  for (int i = 0; i < NSPECIFIC; i++)
    if (SPECIFIC[i].number == number && SPECIFIC[i].suffix == suffix) fs |= SPECIFIC[i].has;
  return fs;
}

const char *tirx__feature_name(tirx__feature f) {
  return (unsigned)f < TIRX__FEAT_COUNT ? FEATURES[f].name : NULL;
}

/* "sm_75 or newer" ... for the generic features, "sm_90a" ... for the specific ones; ONLY
 * the same with " only" after a specific one. */
static char WHERE[TIRX__FEAT_COUNT][64], ONLY[TIRX__FEAT_COUNT][72];

static void where_init(void) {
  for (int f = 0; f < TIRX__FEAT_COUNT; f++) {
    char *w = WHERE[f];
    size_t cap = sizeof WHERE[f], n = 0;
    if (!specific(f)) {
      snprintf(w, cap, "sm_%d or newer", FEATURES[f].since);
      snprintf(ONLY[f], sizeof ONLY[f], "%.63s", w);
      continue;
    }
    int count = 0, total = 0;
    for (int i = 0; i < NSPECIFIC; i++) total += SPECIFIC[i].has >> f & 1;
    for (int i = 0; i < NSPECIFIC && n < cap; i++) {
      if (!(SPECIFIC[i].has >> f & 1)) continue;
      const char *sep = count == 0 ? "" : count + 1 == total ? " or " : ", ";
      n += (size_t)snprintf(w + n, cap - n, "%s%s", sep, SPECIFIC[i].name);
      count++;
    }
    snprintf(ONLY[f], sizeof ONLY[f], "%.63s only", w);
  }
}

static pthread_once_t where_once = PTHREAD_ONCE_INIT;

const char *tirx__feature_where(tirx__feature f) {
  if ((unsigned)f >= TIRX__FEAT_COUNT) return NULL;
  pthread_once(&where_once, where_init);
  return WHERE[f];
}

const char *tirx__feature_where_only(tirx__feature f) {
  if ((unsigned)f >= TIRX__FEAT_COUNT) return NULL;
  pthread_once(&where_once, where_init);
  return ONLY[f];
}

int tirx__features_min_arch(tirx__features fs) {
  int arch = 0;
  for (int f = 0; f < TIRX__FEAT_COUNT; f++)
    if (fs >> f & 1 && FEATURES[f].since > arch) arch = FEATURES[f].since;
  return arch;
}

int tirx__features_missing(tirx__features have, tirx__features need) {
  tirx__features lack = need & ~have;
  int best = -1;
  for (int f = 0; f < TIRX__FEAT_COUNT; f++) {
    if (!(lack >> f & 1)) continue;
    if (best < 0 || specific(f) > specific(best) ||
        (specific(f) == specific(best) && FEATURES[f].since > FEATURES[best].since))
      best = f;
  }
  return best;
}
