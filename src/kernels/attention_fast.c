/* The default attention kernel (FlashAttention-3 structure), written with the builder. */
#include "attention_internal.h"

tirx_status tirx__attention_fast(tirx_runtime *rt, const tirx__attn_call *c, void *stream) {
  (void)rt, (void)c, (void)stream;
  return tirx__error(TIRX_E_NOT_SUPPORTED, "tirx_op_attention: the default kernel is not built "
                     "yet; opts->path \"reference\" is the simple kernel");
}

tirx_status tirx_kernels_attention_build(const tirx_attention_options *opts, tirx_dtype dtype,
                                         int d, int h, int h_kv, bool varlen, tirx_kernel **out) {
  (void)opts, (void)dtype, (void)d, (void)h, (void)h_kv, (void)varlen;
  if (out) *out = NULL;
  return tirx__error(TIRX_E_NOT_SUPPORTED, "tirx_kernels_attention_build: not built yet");
}
