/*
 * The float64 reference of decode attention over a paged KV cache (tirx_op_decode_attention)
 * and its host data: 16-bit conversions, random caches with shuffled page tables, and the
 * expected result of reshape_and_cache. Used by tests/gpu/test_decode.c.
 */
#ifndef TIRX_SUPPORT_DECODE_REF_H
#define TIRX_SUPPORT_DECODE_REF_H

#include <stddef.h>
#include <stdint.h>
#include <tirx.h>

/* f32 <-> f16 / bf16 bits, round to nearest even. */
uint16_t decode_ref_to_half(float f, tirx_dtype dt);
float decode_ref_from_half(uint16_t h, tirx_dtype dt);

/* One problem: q [b, ql, h, d], caches [num_pages, p, hkv, d] dense, block_table [b, max_pages]
 * with row stride bt_stride (>= max_pages), lens[b]. Host copies as 16-bit bits. */
typedef struct decode_ref_case {
  tirx_dtype dt;
  int b, ql, h, hkv, d, p;
  int num_pages, max_pages, bt_stride;
  const int32_t *lens;
  uint16_t *q, *kc, *vc; /* bits */
  int32_t *bt;           /* b * bt_stride entries; unused ones -1 */
} decode_ref_case;

/* Fills c's arrays (allocating them, free with decode_ref_free) from seed: values uniform in
 * [-1, 1) rounded to the dtype, pages of every sequence at shuffled, non-contiguous ids (one
 * spare page between two used ones at random), max_pages = the most pages a sequence needs
 * plus extra, every entry past a sequence's pages -1. */
void decode_ref_fill(decode_ref_case *c, int extra_columns, uint64_t *seed);
void decode_ref_free(decode_ref_case *c);

/* o [b, ql, h, d] and lse [b, ql, h] (natural log) in float64, scale 1/sqrt(d) when 0. */
void decode_ref_attention(const decode_ref_case *c, double scale, double *o, double *lse);

#endif
