extern "C" __global__ void raw_saxpy(long long n) { undeclared_thing(n); }
