extern "C" __global__ void raw_saxpy(long long n, float a, const float *x, float *y) {
  long long i = blockIdx.x * 256ll + threadIdx.x;
#ifdef TIRX_SPEC_n
  if (i < TIRX_SPEC_n) y[i] = a * x[i] + y[i];
#else
  if (i < n) y[i] = a * x[i] + y[i];
#endif
}
