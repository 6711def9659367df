/*
 * The cache key: a 128-bit content hash of everything that decides the bytes NVRTC produces.
 *
 * The key is XXH3-128 over a canonical serialisation of, in this order: the generated CUDA C++
 * source, the NVRTC version (major, minor), every compile option in the order given, the
 * target arch string ("sm_90a", with its suffix) and TIRX__CACHE_CODEGEN_VERSION. Every field
 * is written as a tag, a 64-bit length and its bytes, and the option list is preceded by its
 * count, so two different field lists never serialise to the same byte string (moving a byte
 * from one option to the next, splitting an option in two or reordering options all change
 * the key). Keys depend on inputs only, never on compiler output (reliability plan FM-08).
 */
#ifndef TIRX_CACHE_KEY_H
#define TIRX_CACHE_KEY_H

#include "../core/internal.h"

/*
 * Bump this when the code generator, the prelude or the key serialisation changes in a way
 * that changes generated code for the same kernel: every old entry then misses (FM-06).
 */
enum { TIRX__CACHE_CODEGEN_VERSION = 1 };

/* Keys are 16 bytes in XXH128's canonical (big-endian) byte order; the hex form is those bytes
 * in order, lowercase. */
enum { TIRX__CACHE_KEY_BYTES = 16, TIRX__CACHE_KEY_HEX = 32 };

typedef struct tirx__cache_key {
  unsigned char bytes[TIRX__CACHE_KEY_BYTES];
} tirx__cache_key;

/* The inputs of a key. Strings are borrowed for the duration of the call. */
typedef struct tirx__cache_key_input {
  const char *source;        /* generated source; source_len bytes (NUL bytes allowed) */
  size_t source_len;
  int nvrtc_major, nvrtc_minor;
  const char *const *options; /* noptions NUL-terminated compile options, in order */
  int noptions;
  const char *arch;          /* the exact target, "sm_90a" */
  uint32_t codegen_version;  /* TIRX__CACHE_CODEGEN_VERSION (tirx__cache_key_input_init) */
} tirx__cache_key_input;

/* Zeroes *in and sets codegen_version to TIRX__CACHE_CODEGEN_VERSION. */
void tirx__cache_key_input_init(tirx__cache_key_input *in);

/*
 * Computes the key of in. Errors: TIRX_E_NULL_ARG (in, out, a NULL source with a non-zero
 * length, a NULL arch, a NULL options array with noptions > 0 or a NULL option),
 * TIRX_E_INVALID_ARG (noptions < 0). Messages start with "cache key".
 */
tirx_status tirx__cache_key_compute(const tirx__cache_key_input *in, tirx__cache_key *out);

/* Writes the key as 32 lowercase hex characters and a NUL into out. */
void tirx__cache_key_hex(const tirx__cache_key *key, char out[TIRX__CACHE_KEY_HEX + 1]);

/* Parses exactly 32 hex characters (either case) followed by a NUL; false otherwise. */
bool tirx__cache_key_parse(const char *hex, tirx__cache_key *out);

/* True when a and b are the same key. */
bool tirx__cache_key_equal(const tirx__cache_key *a, const tirx__cache_key *b);

#endif
