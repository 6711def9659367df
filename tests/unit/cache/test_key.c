/* The cache key (src/cache/key.c): T4 of the reliability plan, field sensitivity and stability. */
#include "cache_helpers.h"

static const char base_src[] =
    "extern \"C\" __global__ void add(float *x) { x[threadIdx.x] += 1.0f; }\n";
static const char *const base_opts[] = {"--gpu-architecture=sm_90a", "-default-device",
                                        "-std=c++17", "-lineinfo"};
enum { BASE_NOPTS = 4 };

static tirx__cache_key_input base_input(void) {
  tirx__cache_key_input in;
  tirx__cache_key_input_init(&in);
  in.source = base_src;
  in.source_len = sizeof base_src - 1;
  in.nvrtc_major = 12;
  in.nvrtc_minor = 8;
  in.options = base_opts;
  in.noptions = BASE_NOPTS;
  in.arch = "sm_90a";
  return in;
}

static tirx__cache_key key_of(const tirx__cache_key_input *in) {
  tirx__cache_key k;
  cr_assert_eq(tirx__cache_key_compute(in, &k), TIRX_OK, "%s", tirx_last_error());
  return k;
}

static void hex_of(const tirx__cache_key *k, char *out) { tirx__cache_key_hex(k, out); }

/* A growing set of keys that asserts each new key differs from all before it. */
typedef struct key_set {
  tirx__cache_key keys[1024];
  char what[1024][96];
  int n;
} key_set;

static void add_distinct(key_set *ks, const tirx__cache_key_input *in, const char *what) {
  cr_assert_lt(ks->n, 1024);
  tirx__cache_key k = key_of(in);
  for (int i = 0; i < ks->n; i++)
    cr_assert(!tirx__cache_key_equal(&k, &ks->keys[i]), "key of '%s' equals key of '%s'", what,
              ks->what[i]);
  ks->keys[ks->n] = k;
  snprintf(ks->what[ks->n], sizeof ks->what[0], "%s", what);
  ks->n++;
}

Test(cache_key, golden_value_is_stable_across_runs) {
  /* If this changes, every cache on disk misses: bump TIRX__CACHE_CODEGEN_VERSION knowingly
   * and update the value. */
  tirx__cache_key_input in = base_input();
  tirx__cache_key k = key_of(&in);
  char hex[TIRX__CACHE_KEY_HEX + 1];
  hex_of(&k, hex);
  cr_assert_str_eq(hex, "4e7a4cef178f6e9f75640b3b86a11fb3");
  cr_assert_eq(TIRX__CACHE_CODEGEN_VERSION, 1);
}

Test(cache_key, same_inputs_same_key) {
  tirx__cache_key_input a = base_input();
  /* Equal contents in different buffers. */
  char src_copy[sizeof base_src];
  memcpy(src_copy, base_src, sizeof base_src);
  char o0[64], o1[64], o2[64], o3[64];
  snprintf(o0, sizeof o0, "%s", base_opts[0]);
  snprintf(o1, sizeof o1, "%s", base_opts[1]);
  snprintf(o2, sizeof o2, "%s", base_opts[2]);
  snprintf(o3, sizeof o3, "%s", base_opts[3]);
  const char *opts[] = {o0, o1, o2, o3};
  char arch[] = "sm_90a";
  tirx__cache_key_input b = a;
  b.source = src_copy;
  b.options = opts;
  b.arch = arch;
  tirx__cache_key ka = key_of(&a), kb = key_of(&b);
  cr_assert(tirx__cache_key_equal(&ka, &kb));
  for (int i = 0; i < 100; i++) {
    tirx__cache_key again = key_of(&a);
    cr_assert(tirx__cache_key_equal(&ka, &again));
  }
}

Test(cache_key, every_single_field_change_changes_the_key) {
  static key_set ks; /* large: keep it off the stack */
  ks.n = 0;
  tirx__cache_key_input in = base_input();
  add_distinct(&ks, &in, "base");

  /* Every source byte, one at a time. */
  char src[sizeof base_src];
  for (size_t i = 0; i + 1 < sizeof base_src; i++) {
    memcpy(src, base_src, sizeof base_src);
    src[i] ^= 0x01;
    tirx__cache_key_input v = base_input();
    v.source = src;
    char what[64];
    snprintf(what, sizeof what, "source byte %zu", i);
    add_distinct(&ks, &v, what);
  }
  {
    tirx__cache_key_input v = base_input();
    v.source_len--;
    add_distinct(&ks, &v, "source one byte shorter");
    v = base_input();
    v.source_len++; /* the terminating NUL becomes part of the source */
    add_distinct(&ks, &v, "source one byte longer");
    v = base_input();
    v.source = NULL;
    v.source_len = 0;
    add_distinct(&ks, &v, "empty source");
  }

  /* NVRTC version. */
  {
    tirx__cache_key_input v = base_input();
    v.nvrtc_major = 13;
    add_distinct(&ks, &v, "nvrtc major");
    v = base_input();
    v.nvrtc_minor = 9;
    add_distinct(&ks, &v, "nvrtc minor");
    v = base_input();
    v.nvrtc_major = 8;
    v.nvrtc_minor = 12;
    add_distinct(&ks, &v, "nvrtc major and minor swapped");
  }

  /* Each option changed, removed, duplicated; each adjacent pair swapped. */
  for (int i = 0; i < BASE_NOPTS; i++) {
    const char *opts[BASE_NOPTS + 1];
    char changed[64];
    snprintf(changed, sizeof changed, "%s", base_opts[i]);
    changed[strlen(changed) - 1] ^= 0x01;
    memcpy(opts, base_opts, sizeof base_opts);
    opts[i] = changed;
    tirx__cache_key_input v = base_input();
    v.options = opts;
    char what[64];
    snprintf(what, sizeof what, "option %d changed", i);
    add_distinct(&ks, &v, what);

    int n = 0;
    for (int j = 0; j < BASE_NOPTS; j++)
      if (j != i) opts[n++] = base_opts[j];
    v.options = opts;
    v.noptions = n;
    snprintf(what, sizeof what, "option %d removed", i);
    add_distinct(&ks, &v, what);

    n = 0;
    for (int j = 0; j < BASE_NOPTS; j++) {
      opts[n++] = base_opts[j];
      if (j == i) opts[n++] = base_opts[j];
    }
    v.noptions = n;
    snprintf(what, sizeof what, "option %d duplicated", i);
    add_distinct(&ks, &v, what);

    if (i + 1 < BASE_NOPTS) {
      memcpy(opts, base_opts, sizeof base_opts);
      opts[i] = base_opts[i + 1];
      opts[i + 1] = base_opts[i];
      v.noptions = BASE_NOPTS;
      snprintf(what, sizeof what, "options %d and %d swapped", i, i + 1);
      add_distinct(&ks, &v, what);
    }
  }
  {
    const char *opts[BASE_NOPTS + 1];
    memcpy(opts, base_opts, sizeof base_opts);
    opts[BASE_NOPTS] = "";
    tirx__cache_key_input v = base_input();
    v.options = opts;
    v.noptions = BASE_NOPTS + 1;
    add_distinct(&ks, &v, "an empty option appended");
    v.noptions = 0;
    add_distinct(&ks, &v, "no options");
  }

  /* Arch, with and without its suffix. */
  static const char *const arches[] = {"sm_90", "sm_80", "sm_90A", "sm_100a", "compute_90a"};
  for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++) {
    tirx__cache_key_input v = base_input();
    v.arch = arches[i];
    add_distinct(&ks, &v, arches[i]);
  }

  /* The codegen version. */
  {
    tirx__cache_key_input v = base_input();
    v.codegen_version = TIRX__CACHE_CODEGEN_VERSION + 1;
    add_distinct(&ks, &v, "codegen version");
  }
  cr_assert_eq(ks.n, (int)(1 + (sizeof base_src - 1) + 3 + 3 + 15 + 2 + 5 + 1));
}

Test(cache_key, field_boundaries_never_collide) {
  static key_set ks;
  ks.n = 0;
  const char *ab_c[] = {"ab", "c"}, *a_bc[] = {"a", "bc"}, *abc[] = {"abc"},
             *a_b_c[] = {"a", "b", "c"}, *e_abc[] = {"", "abc"}, *abc_e[] = {"abc", ""};
  struct {
    const char *src;
    const char *const *opts;
    int n;
    const char *arch;
  } cases[] = {
      {"x", ab_c, 2, "sm_90"},  {"x", a_bc, 2, "sm_90"},  {"x", abc, 1, "sm_90"},
      {"x", a_b_c, 3, "sm_90"}, {"x", e_abc, 2, "sm_90"}, {"x", abc_e, 2, "sm_90"},
      {"xab", abc + 0, 0, "sm_90"}, /* bytes moved from an option into the source */
      {"x", abc, 1, "sm_90"},       /* (duplicate of case 2, skipped below) */
      {"xsm_90", NULL, 0, ""},      /* arch moved into the source */
      {"x", NULL, 0, "sm_90"},
      {"", NULL, 0, "xsm_90"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (i == 7) continue;
    tirx__cache_key_input v;
    tirx__cache_key_input_init(&v);
    v.source = cases[i].src;
    v.source_len = strlen(cases[i].src);
    v.options = cases[i].opts;
    v.noptions = cases[i].n;
    v.arch = cases[i].arch;
    char what[32];
    snprintf(what, sizeof what, "case %zu", i);
    add_distinct(&ks, &v, what);
  }
}

Test(cache_key, source_is_bytes_not_a_c_string) {
  tirx__cache_key_input v = base_input();
  v.source = "a\0b";
  v.source_len = 3;
  tirx__cache_key k1 = key_of(&v);
  v.source = "a\0c";
  tirx__cache_key k2 = key_of(&v);
  v.source_len = 1;
  tirx__cache_key k3 = key_of(&v);
  cr_assert(!tirx__cache_key_equal(&k1, &k2));
  cr_assert(!tirx__cache_key_equal(&k2, &k3));
}

Test(cache_key, hex_round_trip_and_parse_errors) {
  tirx__cache_key_input in = base_input();
  tirx__cache_key k = key_of(&in), back;
  char hex[TIRX__CACHE_KEY_HEX + 1];
  tirx__cache_key_hex(&k, hex);
  cr_assert_eq(strlen(hex), 32);
  for (int i = 0; i < 32; i++) cr_assert(strchr("0123456789abcdef", hex[i]), "%s", hex);
  cr_assert(tirx__cache_key_parse(hex, &back));
  cr_assert(tirx__cache_key_equal(&k, &back));
  char upper[33];
  for (int i = 0; i <= 32; i++) upper[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
  cr_assert(tirx__cache_key_parse(upper, &back));
  cr_assert(tirx__cache_key_equal(&k, &back));

  cr_assert(!tirx__cache_key_parse("", &back));
  cr_assert(!tirx__cache_key_parse(NULL, &back));
  cr_assert(!tirx__cache_key_parse(hex, NULL));
  char bad[40];
  snprintf(bad, sizeof bad, "%.31s", hex); /* 31 characters */
  cr_assert(!tirx__cache_key_parse(bad, &back));
  snprintf(bad, sizeof bad, "%s0", hex); /* 33 */
  cr_assert(!tirx__cache_key_parse(bad, &back));
  snprintf(bad, sizeof bad, "%s", hex);
  bad[5] = 'g';
  cr_assert(!tirx__cache_key_parse(bad, &back));

  tirx__cache_key zero;
  memset(&zero, 0, sizeof zero);
  tirx__cache_key_hex(&zero, hex);
  cr_assert_str_eq(hex, "00000000000000000000000000000000");
}

Test(cache_key, argument_errors) {
  tirx__cache_key k;
  tirx__cache_key_input in = base_input();
  expect_error(tirx__cache_key_compute(NULL, &k), TIRX_E_NULL_ARG,
               "cache key: in is NULL");
  expect_error(tirx__cache_key_compute(&in, NULL), TIRX_E_NULL_ARG,
               "cache key: out is NULL");
  in.source = NULL;
  expect_error(tirx__cache_key_compute(&in, &k), TIRX_E_NULL_ARG,
               "cache key: source is NULL but source_len is 69");
  in = base_input();
  in.arch = NULL;
  expect_error(tirx__cache_key_compute(&in, &k), TIRX_E_NULL_ARG,
               "cache key: arch is NULL");
  in = base_input();
  in.noptions = -1;
  expect_error(tirx__cache_key_compute(&in, &k), TIRX_E_INVALID_ARG,
               "cache key: noptions is -1, expected >= 0");
  in = base_input();
  in.options = NULL;
  expect_error(tirx__cache_key_compute(&in, &k), TIRX_E_NULL_ARG,
               "cache key: options is NULL but noptions is 4");
  const char *opts[] = {"-a", NULL};
  in.options = opts;
  in.noptions = 2;
  expect_error(tirx__cache_key_compute(&in, &k), TIRX_E_NULL_ARG,
               "cache key: option 1 is NULL");
}
