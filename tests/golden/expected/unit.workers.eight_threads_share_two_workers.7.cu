extern "C" __global__ void wk_scale7(long long n, float *x) {
  long long i = blockIdx.x * 64ll + threadIdx.x;
  if (i < n) x[i] *= 9.0f;
}
