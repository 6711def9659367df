extern "C" __global__ void wk_scale(long long n, float *x) {
  long long i = blockIdx.x * 64ll + threadIdx.x;
#ifdef TIRX_SPEC_n
  if (i < TIRX_SPEC_n) x[i] *= 2.0f;
#else
  if (i < n) x[i] *= 2.0f;
#endif
}
