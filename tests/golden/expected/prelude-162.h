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
/* TMA (copy_async.tma, TIRX__ST_ASYNC): tensor maps are 128-byte opaque parameters
 * (const __grid_constant__), encoded at launch with cuTensorMapEncodeTiled. One thread issues
 * each copy; loads complete on an mbarrier (complete_tx), stores in bulk groups. Templates
 * and #if guards, so nothing here is compiled for an arch without TMA unless used. */
struct alignas(64) tirx_tmap { unsigned long long v[16]; };
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void tirx_tma_load_1d(void *d, const tirx_tmap *m, void *bar, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_mc_1d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4}], [%2], %3;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "h"(mask), "r"(c0) : "memory");
}
__device__ __forceinline__ void tirx_tma_store_1d(const tirx_tmap *m, const void *s, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%2}], [%1];" :: "l"(m), "r"(tirx_smem_addr(s)), "r"(c0) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_2d(void *d, const tirx_tmap *m, void *bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_mc_2d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tirx_tma_store_2d(const tirx_tmap *m, const void *s, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];" :: "l"(m), "r"(tirx_smem_addr(s)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_3d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_mc_3d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
__device__ __forceinline__ void tirx_tma_store_3d(const tirx_tmap *m, const void *s, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" :: "l"(m), "r"(tirx_smem_addr(s)), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_4d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_mc_4d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6, %7}], [%2], %3;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void tirx_tma_store_4d(const tirx_tmap *m, const void *s, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];" :: "l"(m), "r"(tirx_smem_addr(s)), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_5d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_mc_5d(void *d, const tirx_tmap *m, void *bar, unsigned short mask, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4) : "memory");
}
__device__ __forceinline__ void tirx_tma_store_5d(const tirx_tmap *m, const void *s, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];" :: "l"(m), "r"(tirx_smem_addr(s)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4) : "memory");
}
__device__ __forceinline__ void tirx_bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N, int R> __device__ __forceinline__ void tirx_bulk_wait() {
  if (R) asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
  else asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
__device__ __forceinline__ void tirx_tmap_prefetch(const tirx_tmap *m) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(m) : "memory");
}
__device__ __forceinline__ int tirx_cluster_ctarank() {
  unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return (int)r;
}
__device__ __forceinline__ int tirx_cluster_id(int d) {
  unsigned r;
  if (d == 0) asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  else if (d == 1) asm volatile("mov.u32 %0, %%clusterid.y;" : "=r"(r));
  else asm volatile("mov.u32 %0, %%clusterid.z;" : "=r"(r));
  return (int)r;
}
/* Minimal mbarrier helpers for TMA loads (tirx__mbar_*; the public mbarrier statements
 * supersede them). */
__device__ __forceinline__ void tirx_mbar_init(void *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(tirx_smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void tirx_fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void tirx_cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
/* v into the f32 at p's offset in the shared memory of cluster CTA rank (DSMEM). */
__device__ __forceinline__ void tirx_dsmem_st_f32(float *p, unsigned rank, float v) {
  unsigned a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(tirx_smem_addr(p)), "r"(rank));
  asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(a), "f"(v) : "memory");
}
__device__ __forceinline__ void tirx_mbar_expect_tx(void *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(tirx_smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tirx_mbar_wait(void *bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(tirx_smem_addr(bar)), "r"(parity) : "memory");
}
#endif
/* TMA loads of data read once (cfg->hint TIRX_HINT_STREAM): an L2 evict_first policy. */
__device__ __forceinline__ unsigned long long tirx_l2_evict_first() {
  unsigned long long p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ void tirx_tma_load_ef_1d(void *d, const tirx_tmap *m, void *bar, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3}], [%2], %4;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "l"(tirx_l2_evict_first()) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_ef_2d(void *d, const tirx_tmap *m, void *bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "r"(c1), "l"(tirx_l2_evict_first()) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_ef_3d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4, %5}], [%2], %6;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "l"(tirx_l2_evict_first()) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_ef_4d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4, %5, %6}], [%2], %7;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "l"(tirx_l2_evict_first()) : "memory");
}
__device__ __forceinline__ void tirx_tma_load_ef_5d(void *d, const tirx_tmap *m, void *bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4, %5, %6, %7}], [%2], %8;" :: "r"(tirx_smem_addr(d)), "l"(m), "r"(tirx_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "l"(tirx_l2_evict_first()) : "memory");
}
/* Synchronisation and tensor cores (tirx: builder/sync.c, gemm families). mbarriers are
 * shared 64-bit words; addresses go to PTX as 32-bit shared addresses. */
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void tirx_mbar_init(long long *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(tirx_smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void tirx_mbar_arrive(long long *bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(tirx_smem_addr(bar)) : "memory");
}
/* One arrival on the mbarrier at the same shared offset in the cluster's CTA of rank cta;
 * release semantics at CTA scope (the default, as CUTLASS's ClusterBarrier::arrive): a
 * consumer hands a stage it has finished reading back to a producer in another CTA. */
__device__ __forceinline__ void tirx_mbar_arrive_cluster(long long *bar, unsigned cta) {
  asm volatile("{ .reg .b32 r; mapa.shared::cluster.u32 r, %0, %1; mbarrier.arrive.shared::cluster.b64 _, [r]; }" :: "r"(tirx_smem_addr(bar)), "r"(cta) : "memory");
}
__device__ __forceinline__ void tirx_mbar_expect_tx(long long *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(tirx_smem_addr(bar)), "r"(bytes) : "memory");
}
/* Spins until the phase of parity phase & 1 has completed. */
__device__ __forceinline__ void tirx_mbar_wait(long long *bar, unsigned phase) {
  unsigned a = tirx_smem_addr(bar), done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(a), "r"(phase & 1u) : "memory");
  } while (!done);
}
__device__ __forceinline__ void tirx_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void tirx_fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void tirx_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
/* True in one lane of the (fully active) warp. */
__device__ __forceinline__ bool tirx_elect_one() {
  unsigned p; asm volatile("{ .reg .pred q; elect.sync _|q, 0xffffffff; selp.u32 %0, 1, 0, q; }" : "=r"(p)); return p != 0;
}
__device__ __forceinline__ void tirx_named_bar_sync(unsigned id, unsigned n) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void tirx_named_bar_arrive(unsigned id, unsigned n) {
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(n) : "memory");
}
#endif
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
template <int R> __device__ __forceinline__ void tirx_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(R));
}
template <int R> __device__ __forceinline__ void tirx_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(R));
}
__device__ __forceinline__ void tirx_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void tirx_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void tirx_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
/* The shared-memory matrix descriptor: start address, leading and stride byte offsets (all
 * >> 4), swizzle code in bits 62-63 (1 128B, 2 64B, 3 32B, 0 none). */
__device__ __forceinline__ unsigned long long tirx_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned swz) {
  return (unsigned long long)(addr >> 4) | (unsigned long long)((lbo >> 4) & 0x3fffu) << 16 |
         (unsigned long long)((sbo >> 4) & 0x3fffu) << 32 | (unsigned long long)swz << 62;
}
#endif
/* An empty asm that reads and writes N f32 registers (DeepGEMM's warpgroup_fence_operand):
 * the compiler cannot move their uses across the asynchronous MMA. */
template <int N> __device__ __forceinline__ void tirx_fence_regs(float *d) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}
/* The same for N 16-bit values (a wgmma A tile in registers), as the 32-bit pairs the
 * instruction reads. */
template <int N, class T> __device__ __forceinline__ void tirx_fence_regs16(T *a) {
#pragma unroll
  for (int i = 0; i + 1 < N; i += 2) {
    unsigned u = tirx_pack2(a + i);
    asm volatile("" : "+r"(u) :: "memory");
    tirx_unpack2(a + i, u);
  }
  if (N % 2) asm volatile("" : "+h"(a[N - 1].bits) :: "memory");
}
/* mma.sync m16n8k16 with f32 accumulators: d (4 registers) = [d +] a (8 16-bit values of the
 * A fragment) x b (4 of the B fragment). */
#if __CUDA_ARCH__ >= 800
#define TIRX_MMA_M16N8K16(T, ty) \
__device__ __forceinline__ void tirx_mma_m16n8k16(float *d, const T *a, const T *b, bool acc) { \
  float c0 = acc ? d[0] : 0.0f, c1 = acc ? d[1] : 0.0f, c2 = acc ? d[2] : 0.0f, c3 = acc ? d[3] : 0.0f; \
  asm("mma.sync.aligned.m16n8k16.row.col.f32." ty "." ty ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};" \
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) \
      : "r"(tirx_pack2(a)), "r"(tirx_pack2(a + 2)), "r"(tirx_pack2(a + 4)), "r"(tirx_pack2(a + 6)), \
        "r"(tirx_pack2(b)), "r"(tirx_pack2(b + 2)), "f"(c0), "f"(c1), "f"(c2), "f"(c3)); \
}
TIRX_MMA_M16N8K16(tirx_bf16, "bf16")
TIRX_MMA_M16N8K16(tirx_f16, "f16")
#undef TIRX_MMA_M16N8K16
#endif
/* 8 x wgmma.mma_async m64n64k16, f32 += f16 x f16, in one asm statement: d
 * the warpgroup's 32 accumulator registers, (da, db) each instruction's
 * shared-memory descriptors, acc the first one's scale-d predicate (the
 * others accumulate), TA/TB the transpose bits. */
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
template <int TA, int TB>
__device__ __forceinline__ void tirx_wgmma_m64n64k16_f16_x8(float *d, unsigned long long da0, unsigned long long db0, unsigned long long da1, unsigned long long db1, unsigned long long da2, unsigned long long db2, unsigned long long da3, unsigned long long db3, unsigned long long da4, unsigned long long db4, unsigned long long da5, unsigned long long db5, unsigned long long da6, unsigned long long db6, unsigned long long da7, unsigned long long db7, bool acc) {
  asm volatile("{\n.reg .pred p, q;\nsetp.ne.b32 p, %48, 0;\nsetp.ne.b32 q, 1, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, %49, %50;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %34, %35, q, 1, 1, %49, %50;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %36, %37, q, 1, 1, %49, %50;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %38, %39, q, 1, 1, %49, %50;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %40, %41, q, 1, 1, %49, %50;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %42, %43, q, 1, 1, %49, %50;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %44, %45, q, 1, 1, %49, %50;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %46, %47, q, 1, 1, %49, %50;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "l"(da0), "l"(db0), "l"(da1), "l"(db1), "l"(da2), "l"(db2), "l"(da3), "l"(db3), "l"(da4), "l"(db4), "l"(da5), "l"(db5), "l"(da6), "l"(db6), "l"(da7), "l"(db7), "r"((int)acc), "n"(TA), "n"(TB));
}
#endif
/* wgmma.mma_async m64n128k16, f32 += f16 x f16 with A from registers (RS): d the warpgroup's
 * 64 accumulator registers, a this thread's 8 values of the A fragment (a0..a7), db the
 * shared-memory descriptor of B, acc the scale-d predicate, TB the transpose bit of B. */
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
template <int TB>
__device__ __forceinline__ void tirx_wgmma_rs_m64n128k16_f16(float *d, const tirx_f16 *a, unsigned long long db, bool acc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "r"(tirx_pack2(a)), "r"(tirx_pack2(a + 2)), "r"(tirx_pack2(a + 4)), "r"(tirx_pack2(a + 6)),
      "l"(db), "r"((int)acc), "n"(TB));
}
#endif

