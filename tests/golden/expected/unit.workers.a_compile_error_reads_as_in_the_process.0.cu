extern "C" __global__ void wk_broken(long long n, float *x) {
  x[0] = undeclared_thing;
}
