extern "C" __global__ void raw_tex(long long t, float *y) {
  y[threadIdx.x] = tex1Dfetch<float>((cudaTextureObject_t)t, (int)threadIdx.x);
}
