/* The e4m3 (FP8) references of the GPU tests: a byte's value and one ulp. */
#ifndef TIRX_GPU_E4M3_REF_H
#define TIRX_GPU_E4M3_REF_H

#include <math.h>
#include <stdint.h>

/* An e4m3 byte's value (NaN for the two NaN encodings). */
static inline double e4m3_value(uint8_t v) {
  int e = (v >> 3) & 15, m = v & 7;
  if (e == 15 && m == 7) return NAN;
  double a = e == 0 ? ldexp((double)m, -9) : ldexp(1.0 + m / 8.0, e - 7);
  return v & 0x80 ? -a : a;
}

/* One e4m3 ulp at |v| (<= 448): 2^-9 among the subnormals (below 2^-6), else 2^(e - 3). */
static inline double e4m3_ulp(double v) {
  v = fabs(v);
  if (v < ldexp(1.0, -6)) return ldexp(1.0, -9);
  int e;
  frexp(v, &e); /* v = f 2^e, f in [0.5, 1) */
  return ldexp(1.0, e - 1 - 3);
}

#endif
