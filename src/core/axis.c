/* The axis registry: built-in axes and the ones a backend registers. */
#include <pthread.h>
#include <string.h>

#include "internal.h"

static const char *const builtin_names[TIRX_AXIS_BUILTIN_COUNT] = {
    "m",   "laneid", "warpid", "wid_in_wg", "tid_in_wg", "wgid",    "tid",   "cta",
    "cbx", "cby",    "cbz",    "pid",       "reg",       "cluster", "TLane", "TCol",
};

static char registered[TIRX_AXIS_MAX][32];
static _Atomic int num_registered; /* count of registered axes beyond the built-ins */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

const char *tirx_axis_name(tirx_axis axis) {
  if (axis < 0 || axis >= TIRX_AXIS_MAX) return NULL;
  if (axis < TIRX_AXIS_BUILTIN_COUNT) return builtin_names[axis];
  if (axis - TIRX_AXIS_BUILTIN_COUNT >= num_registered) return NULL;
  return registered[axis];
}

static int find(const char *name, size_t n) {
  static const struct {
    const char *alias;
    tirx_axis axis;
  } aliases[] = {{"lane", TIRX_AXIS_LANEID}, {"warp", TIRX_AXIS_WARPID}, {"wg", TIRX_AXIS_WGID}};
  for (int i = 0; i < TIRX_AXIS_BUILTIN_COUNT; i++)
    if (strlen(builtin_names[i]) == n && memcmp(builtin_names[i], name, n) == 0) return i;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strlen(aliases[i].alias) == n && memcmp(aliases[i].alias, name, n) == 0)
      return aliases[i].axis;
  int count = num_registered;
  for (int i = 0; i < count; i++) {
    const char *r = registered[TIRX_AXIS_BUILTIN_COUNT + i];
    if (strlen(r) == n && memcmp(r, name, n) == 0) return TIRX_AXIS_BUILTIN_COUNT + i;
  }
  return -1;
}

/* Internal: look up a name of n bytes (not NUL-terminated). -1 when unknown. */
int tirx__axis_find(const char *name, size_t n) { return find(name, n); }

tirx_status tirx_axis_lookup(const char *name, tirx_axis *out) {
  if (!name) return tirx__error(TIRX_E_NULL_ARG, "tirx_axis_lookup: name is NULL");
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "tirx_axis_lookup: out is NULL");
  int a = find(name, strlen(name));
  if (a < 0) return tirx__error(TIRX_E_UNKNOWN_AXIS, "tirx_axis_lookup: unknown axis '%.64s'", name);
  *out = a;
  return TIRX_OK;
}

static bool valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 31) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}

tirx_status tirx_axis_register(const char *name, tirx_axis *out) {
  if (!name) return tirx__error(TIRX_E_NULL_ARG, "tirx_axis_register: name is NULL");
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "tirx_axis_register: out is NULL");
  if (!valid_name(name))
    return tirx__error(TIRX_E_INVALID_ARG,
                       "tirx_axis_register: name '%.64s' is not an identifier of 1 to 31 "
                       "characters",
                       name);
  pthread_mutex_lock(&registry_lock);
  int a = find(name, strlen(name));
  if (a < 0) {
    int count = num_registered;
    if (TIRX_AXIS_BUILTIN_COUNT + count >= TIRX_AXIS_MAX) {
      pthread_mutex_unlock(&registry_lock);
      return tirx__error(TIRX_E_LIMIT, "tirx_axis_register: all %d axes are in use",
                         (int)TIRX_AXIS_MAX);
    }
    a = TIRX_AXIS_BUILTIN_COUNT + count;
    strcpy(registered[a], name);
    num_registered = count + 1; /* publish after the name is written */
  }
  pthread_mutex_unlock(&registry_lock);
  *out = a;
  return TIRX_OK;
}

bool tirx_axis_is_thread(tirx_axis axis) {
  if (axis < 0 || axis >= TIRX_AXIS_BUILTIN_COUNT) return false;
  return axis != TIRX_AXIS_M && axis != TIRX_AXIS_REG && axis != TIRX_AXIS_TLANE &&
         axis != TIRX_AXIS_TCOL;
}
