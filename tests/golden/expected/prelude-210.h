struct tirx_f16 { unsigned short bits; };
struct tirx_bf16 { unsigned short bits; };
__device__ __forceinline__ tirx_f16 tirx_f16_bits(unsigned short b) {
  tirx_f16 h; h.bits = b; return h;
}
__device__ __forceinline__ tirx_bf16 tirx_bf16_bits(unsigned short b) {
  tirx_bf16 h; h.bits = b; return h;
}
__device__ __forceinline__ float tirx_f16_to_f32(tirx_f16 h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f;
}
__device__ __forceinline__ tirx_f16 tirx_f16_from_f32(float f) {
  tirx_f16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f)); return h;
}
__device__ __forceinline__ float tirx_bf16_to_f32(tirx_bf16 h) {
  return __uint_as_float((unsigned)h.bits << 16);
}
__device__ __forceinline__ tirx_bf16 tirx_bf16_from_f32(float f) {
  tirx_bf16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f)); return h;
}
template <class T> __device__ __forceinline__ T tirx_min(T a, T b) {
  return b < a ? b : a;
}
template <class T> __device__ __forceinline__ T tirx_max(T a, T b) {
  return a < b ? b : a;
}
/* Fast f32 transcendentals (the MUFU unit): 2^x and 1/x, flushing subnormals. */
__device__ __forceinline__ float tirx_ex2(float x) {
  float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float tirx_rcp(float x) {
  float y; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
/* e^x as 2^(x log2 e): relative error about 2 + 1.2|x| f32 ulp (like __expf); the exp of
 * f16/bf16 expressions. */
__device__ __forceinline__ float tirx_fexp(float x) {
  return tirx_ex2(x * 1.4426950408889634f);
}
/* 1 / (1 + e^-x) in four instructions (FMUL, MUFU.EX2, FADD, MUFU.RCP) instead of expf and
 * an IEEE division: relative error about 3 + 1.2|x| ulp where x < 0, a few ulp where x >= 0;
 * e^-x = inf gives 0, NaN stays NaN. */
__device__ __forceinline__ float tirx_sigmoid(float x) {
  return tirx_rcp(1.0f + tirx_fexp(-x));
}
__device__ __forceinline__ double tirx_sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}
/* The XOR swizzle on an m coordinate in elements: byte address bits [4, 4+bits) ^= bits
 * [7, 7+bits). */
__device__ __forceinline__ int tirx_swizzle(int m, int bits, int elem) {
  int byte = m * elem;
  return (byte ^ (((byte >> 7) & ((1 << bits) - 1)) << 4)) / elem;
}
/* Vector moves of tile primitives (tirx_vcopy, TIRX__ST_VCOPY): N elements of T, 2 to 16
 * bytes. H: 1 ld.global.cs, 2 st.global.cs, 4 the source is a local array, 8 the destination
 * is, 16 ld.global.nc, 32 ld.global.lu. */
template <class T, int N> struct alignas(sizeof(T) * N) tirx_vec { T v[N]; };
template <int B> struct tirx_vbits;
template <> struct tirx_vbits<16> {
  static __device__ __forceinline__ void ld(int q, void *d, const void *p) {
    unsigned *u = (unsigned *)d;
    if (q == 1) asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3]) : "l"(p));
    else if (q == 16) asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3]) : "l"(p));
    else asm volatile("ld.global.lu.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3]) : "l"(p));
  }
  static __device__ __forceinline__ void st_cs(void *p, const void *s) {
    const unsigned *u = (const unsigned *)s;
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3]) : "memory");
  }
};
template <> struct tirx_vbits<8> {
  static __device__ __forceinline__ void ld(int q, void *d, const void *p) {
    unsigned *u = (unsigned *)d;
    if (q == 1) asm volatile("ld.global.cs.v2.u32 {%0, %1}, [%2];" : "=r"(u[0]), "=r"(u[1]) : "l"(p));
    else if (q == 16) asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(u[0]), "=r"(u[1]) : "l"(p));
    else asm volatile("ld.global.lu.v2.u32 {%0, %1}, [%2];" : "=r"(u[0]), "=r"(u[1]) : "l"(p));
  }
  static __device__ __forceinline__ void st_cs(void *p, const void *s) {
    const unsigned *u = (const unsigned *)s;
    asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" :: "l"(p), "r"(u[0]), "r"(u[1]) : "memory");
  }
};
template <> struct tirx_vbits<4> {
  static __device__ __forceinline__ void ld(int q, void *d, const void *p) {
    unsigned *u = (unsigned *)d;
    if (q == 1) asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(u[0]) : "l"(p));
    else if (q == 16) asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(u[0]) : "l"(p));
    else asm volatile("ld.global.lu.u32 %0, [%1];" : "=r"(u[0]) : "l"(p));
  }
  static __device__ __forceinline__ void st_cs(void *p, const void *s) {
    asm volatile("st.global.cs.u32 [%0], %1;" :: "l"(p), "r"(*(const unsigned *)s) : "memory");
  }
};
template <> struct tirx_vbits<2> {
  static __device__ __forceinline__ void ld(int q, void *d, const void *p) {
    unsigned short *u = (unsigned short *)d;
    if (q == 1) asm volatile("ld.global.cs.u16 %0, [%1];" : "=h"(u[0]) : "l"(p));
    else if (q == 16) asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(u[0]) : "l"(p));
    else asm volatile("ld.global.lu.u16 %0, [%1];" : "=h"(u[0]) : "l"(p));
  }
  static __device__ __forceinline__ void st_cs(void *p, const void *s) {
    asm volatile("st.global.cs.u16 [%0], %1;" :: "l"(p), "h"(*(const unsigned short *)s) : "memory");
  }
};
template <class T, int N, int H> __device__ __forceinline__ void tirx_vcopy(T *d, const T *s) {
  tirx_vec<T, N> r;
  if (H & 4) {
#pragma unroll
    for (int i = 0; i < N; ++i) r.v[i] = s[i];
  } else if (H & 49) {
    tirx_vbits<sizeof(T) * N>::ld(H & 49, &r, s);
  } else {
    r = *reinterpret_cast<const tirx_vec<T, N> *>(s);
  }
  if (H & 8) {
#pragma unroll
    for (int i = 0; i < N; ++i) d[i] = r.v[i];
  } else if (H & 2) {
    tirx_vbits<sizeof(T) * N>::st_cs(d, &r);
  } else {
    *reinterpret_cast<tirx_vec<T, N> *>(d) = r;
  }
}
/* ldmatrix/stmatrix of tile primitives (TIRX__ST_MATRIX): s is this lane's row address (8
 * 16-bit elements, 16 bytes); r0.. the first of the two elements of each matrix's register
 * (T: tirx_f16 or tirx_bf16). Templates, so stmatrix (sm_90) is only emitted where used. */
template <class T> __device__ __forceinline__ unsigned tirx_smem_addr(const T *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
template <class T> __device__ __forceinline__ unsigned tirx_pack2(const T *p) {
  return (unsigned)p[0].bits | ((unsigned)p[1].bits << 16);
}
template <class T> __device__ __forceinline__ void tirx_unpack2(T *p, unsigned u) {
  p[0].bits = (unsigned short)u; p[1].bits = (unsigned short)(u >> 16);
}
template <class T> __device__ __forceinline__ void tirx_ldmatrix_x1(const T *s, T *r0) {
  unsigned u0;
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(u0) : "r"(tirx_smem_addr(s)) : "memory");
  tirx_unpack2(r0, u0);
}
template <class T> __device__ __forceinline__ void tirx_ldmatrix_x2(const T *s, T *r0, T *r1) {
  unsigned u0, u1;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(u0), "=r"(u1) : "r"(tirx_smem_addr(s)) : "memory");
  tirx_unpack2(r0, u0); tirx_unpack2(r1, u1);
}
template <class T> __device__ __forceinline__ void tirx_ldmatrix_x4(const T *s, T *r0, T *r1, T *r2, T *r3) {
  unsigned u0, u1, u2, u3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(u0), "=r"(u1), "=r"(u2), "=r"(u3) : "r"(tirx_smem_addr(s)) : "memory");
  tirx_unpack2(r0, u0); tirx_unpack2(r1, u1); tirx_unpack2(r2, u2); tirx_unpack2(r3, u3);
}
template <class T> __device__ __forceinline__ void tirx_stmatrix_x1(T *s, const T *r0) {
  asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(tirx_smem_addr(s)), "r"(tirx_pack2(r0)) : "memory");
}
template <class T> __device__ __forceinline__ void tirx_stmatrix_x2(T *s, const T *r0, const T *r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" :: "r"(tirx_smem_addr(s)), "r"(tirx_pack2(r0)), "r"(tirx_pack2(r1)) : "memory");
}
template <class T> __device__ __forceinline__ void tirx_stmatrix_x4(T *s, const T *r0, const T *r1, const T *r2, const T *r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" :: "r"(tirx_smem_addr(s)), "r"(tirx_pack2(r0)), "r"(tirx_pack2(r1)), "r"(tirx_pack2(r2)), "r"(tirx_pack2(r3)) : "memory");
}
/* Packed f16x2/bf16x2 math of tile primitives (pointwise.vec pack=2, TIRX__ST_PACKED): a pair
 * of 16-bit elements in one 32-bit register, element 0 in the low half. The instructions are
 * guarded by the arch that has them (dispatch packs only there). */
__device__ __forceinline__ unsigned tirx_x2_ld(const tirx_f16 *p) {
  return (unsigned)p[0].bits | ((unsigned)p[1].bits << 16);
}
__device__ __forceinline__ unsigned tirx_x2_ld(const tirx_bf16 *p) {
  return (unsigned)p[0].bits | ((unsigned)p[1].bits << 16);
}
__device__ __forceinline__ void tirx_x2_st(tirx_f16 *p, unsigned u) {
  p[0].bits = (unsigned short)u; p[1].bits = (unsigned short)(u >> 16);
}
__device__ __forceinline__ void tirx_x2_st(tirx_bf16 *p, unsigned u) {
  p[0].bits = (unsigned short)u; p[1].bits = (unsigned short)(u >> 16);
}
__device__ __forceinline__ unsigned tirx_x2_dup(tirx_f16 h) { return (unsigned)h.bits * 0x10001u; }
__device__ __forceinline__ unsigned tirx_x2_dup(tirx_bf16 h) { return (unsigned)h.bits * 0x10001u; }
#define TIRX_X2_1(name, ins) __device__ __forceinline__ unsigned name(unsigned a) { unsigned d; asm(ins " %0, %1;" : "=r"(d) : "r"(a)); return d; }
#define TIRX_X2_2(name, ins) __device__ __forceinline__ unsigned name(unsigned a, unsigned b) { unsigned d; asm(ins " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; }
#define TIRX_X2_3(name, ins) __device__ __forceinline__ unsigned name(unsigned a, unsigned b, unsigned c) { unsigned d; asm(ins " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); return d; }
#if __CUDA_ARCH__ >= 530
TIRX_X2_2(tirx_x2_f16x2_add, "add.rn.f16x2")
TIRX_X2_2(tirx_x2_f16x2_sub, "sub.rn.f16x2")
TIRX_X2_2(tirx_x2_f16x2_mul, "mul.rn.f16x2")
TIRX_X2_3(tirx_x2_f16x2_fma, "fma.rn.f16x2")
TIRX_X2_1(tirx_x2_f16x2_neg, "neg.f16x2")
TIRX_X2_1(tirx_x2_f16x2_abs, "abs.f16x2")
#endif
#if __CUDA_ARCH__ >= 750
TIRX_X2_1(tirx_x2_f16x2_exp2, "ex2.approx.f16x2")
#endif
#if __CUDA_ARCH__ >= 800
TIRX_X2_2(tirx_x2_f16x2_max, "max.f16x2")
TIRX_X2_2(tirx_x2_f16x2_min, "min.f16x2")
TIRX_X2_3(tirx_x2_bf16x2_fma, "fma.rn.bf16x2")
TIRX_X2_2(tirx_x2_bf16x2_max, "max.bf16x2")
TIRX_X2_2(tirx_x2_bf16x2_min, "min.bf16x2")
TIRX_X2_1(tirx_x2_bf16x2_neg, "neg.bf16x2")
TIRX_X2_1(tirx_x2_bf16x2_abs, "abs.bf16x2")
#if __CUDA_ARCH__ >= 900
TIRX_X2_2(tirx_x2_bf16x2_add, "add.rn.bf16x2")
TIRX_X2_2(tirx_x2_bf16x2_sub, "sub.rn.bf16x2")
TIRX_X2_2(tirx_x2_bf16x2_mul, "mul.rn.bf16x2")
TIRX_X2_1(tirx_x2_bf16x2_exp2, "ex2.approx.ftz.bf16x2")
#else
/* sm_80 has only fma.rn.bf16x2: a + b = fma(a, 1, b), a - b = fma(b, -1, a), a * b = fma(a,
 * b, -0), each rounded once. */
__device__ __forceinline__ unsigned tirx_x2_bf16x2_add(unsigned a, unsigned b) {
  return tirx_x2_bf16x2_fma(a, 0x3f803f80u, b);
}
__device__ __forceinline__ unsigned tirx_x2_bf16x2_sub(unsigned a, unsigned b) {
  return tirx_x2_bf16x2_fma(b, 0xbf80bf80u, a);
}
__device__ __forceinline__ unsigned tirx_x2_bf16x2_mul(unsigned a, unsigned b) {
  return tirx_x2_bf16x2_fma(a, b, 0x80008000u);
}
#endif
#endif
#undef TIRX_X2_1
#undef TIRX_X2_2
#undef TIRX_X2_3
/* GPU-scope ordering: the calling thread's memory operations before the fence happen before
 * its later ones for every thread of the GPU; an atomic add that returns the old value,
 * with acquire-release semantics at GPU scope. */
__device__ __forceinline__ void tirx_fence_gpu() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
__device__ __forceinline__ void tirx_atom_add_acq_rel_gpu(int *dst, int v, int *old) {
  asm volatile("atom.acq_rel.gpu.add.s32 %0, [%1], %2;" : "=r"(*old) : "l"(dst), "r"(v) : "memory");
}

