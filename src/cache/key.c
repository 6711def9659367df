/* The cache key: XXH3-128 over a canonical, length-prefixed serialisation (see key.h). */
#include "key.h"

#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

/* Field tags. They make the serialisation self-describing, so a future field can never be
 * confused with an old one. Values are part of the key format: never renumber them. */
enum {
  TAG_SOURCE = 1,
  TAG_NVRTC = 2,
  TAG_OPTION_COUNT = 3,
  TAG_OPTION = 4,
  TAG_ARCH = 5,
  TAG_CODEGEN = 6,
};

static const char key_domain[] = "tirx.cache.key.v1";

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Appends tag (4 bytes LE), length (8 bytes LE) and the field's bytes. */
static void add_field(XXH3_state_t *st, uint32_t tag, const void *data, size_t len) {
  unsigned char head[12];
  for (int i = 0; i < 4; i++) head[i] = (unsigned char)(tag >> (8 * i));
  put_u64(head + 4, (uint64_t)len);
  XXH3_128bits_update(st, head, sizeof head);
  if (len) XXH3_128bits_update(st, data, len);
}

static void add_u64(XXH3_state_t *st, uint32_t tag, uint64_t v) {
  unsigned char b[8];
  put_u64(b, v);
  add_field(st, tag, b, sizeof b);
}

void tirx__cache_key_input_init(tirx__cache_key_input *in) {
  memset(in, 0, sizeof *in);
  in->codegen_version = TIRX__CACHE_CODEGEN_VERSION;
}

tirx_status tirx__cache_key_compute(const tirx__cache_key_input *in, tirx__cache_key *out) {
  static const char fn[] = "cache key";
  if (!in) return tirx__error(TIRX_E_NULL_ARG, "%s: in is NULL", fn);
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  if (!in->source && in->source_len)
    return tirx__error(TIRX_E_NULL_ARG, "%s: source is NULL but source_len is %zu", fn,
                       in->source_len);
  if (!in->arch) return tirx__error(TIRX_E_NULL_ARG, "%s: arch is NULL", fn);
  if (in->noptions < 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: noptions is %d, expected >= 0", fn,
                       in->noptions);
  if (in->noptions > 0 && !in->options)
    return tirx__error(TIRX_E_NULL_ARG, "%s: options is NULL but noptions is %d", fn,
                       in->noptions);
  for (int i = 0; i < in->noptions; i++)
    if (!in->options[i]) return tirx__error(TIRX_E_NULL_ARG, "%s: option %d is NULL", fn, i);

  XXH3_state_t st;
  XXH3_128bits_reset(&st);
  XXH3_128bits_update(&st, key_domain, sizeof key_domain);
  add_field(&st, TAG_SOURCE, in->source, in->source_len);
  unsigned char ver[16];
  put_u64(ver, (uint64_t)(int64_t)in->nvrtc_major);
  put_u64(ver + 8, (uint64_t)(int64_t)in->nvrtc_minor);
  add_field(&st, TAG_NVRTC, ver, sizeof ver);
  add_u64(&st, TAG_OPTION_COUNT, (uint64_t)in->noptions);
  for (int i = 0; i < in->noptions; i++)
    add_field(&st, TAG_OPTION, in->options[i], strlen(in->options[i]));
  add_field(&st, TAG_ARCH, in->arch, strlen(in->arch));
  add_u64(&st, TAG_CODEGEN, in->codegen_version);

  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
  memcpy(out->bytes, c.digest, sizeof out->bytes);
  return TIRX_OK;
}

void tirx__cache_key_hex(const tirx__cache_key *key, char out[TIRX__CACHE_KEY_HEX + 1]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < TIRX__CACHE_KEY_BYTES; i++) {
    out[2 * i] = digits[key->bytes[i] >> 4];
    out[2 * i + 1] = digits[key->bytes[i] & 15];
  }
  out[TIRX__CACHE_KEY_HEX] = '\0';
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool tirx__cache_key_parse(const char *hex, tirx__cache_key *out) {
  if (!hex || !out) return false;
  tirx__cache_key k;
  for (int i = 0; i < TIRX__CACHE_KEY_BYTES; i++) {
    int hi = hex_value(hex[2 * i]);
    if (hi < 0) return false;
    int lo = hex_value(hex[2 * i + 1]);
    if (lo < 0) return false;
    k.bytes[i] = (unsigned char)(hi << 4 | lo);
  }
  if (hex[TIRX__CACHE_KEY_HEX] != '\0') return false;
  *out = k;
  return true;
}

bool tirx__cache_key_equal(const tirx__cache_key *a, const tirx__cache_key *b) {
  return memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}
