#!/usr/bin/env python3
"""
tools/rows_emulate.py: a CPU check of silu_mul's and chain's generated kernels (src/kernels/rows.c),
without a GPU. Not part of any test suite: a development aid for index arithmetic.

    python3 tools/rows_emulate.py OP DTYPE WIDTH VARIANT ROWS[,ROWS...] [THREADS [SCALAR]]
    python3 tools/rows_emulate.py --sweep

OP silu_mul or chain; DTYPE f32, f16 or bf16; VARIANT the tirx_row_options.variant bits (64:
TIRX_ROW_VARIANT_ELEMENTWISE, 32: TIRX_ROW_VARIANT_PER_ROW, 0: the default); THREADS
opts->threads (0: default); SCALAR 1 forces the scalar families.

The kernel's body (the generated CUDA after its prelude) is compiled as host C++ with g++ under
AddressSanitizer and UBSan, with stand-ins for the prelude's helpers it calls (tirx_vcopy,
which aborts on a vector that is not aligned to its size; the bf16/f16 conversions; the
sigmoid; tirx_min), and run for every CTA and thread in turn: the kernel's own grid and grids
of 1, 2, 3 and 7 CTAs for the elementwise form (a grid-stride kernel must be right for any
grid), one CTA a row (four rows a CTA up to 1024 elements) for the per-row form. Inputs and
outputs are allocated to their exact sizes, so an access outside them is an ASan error. The
output is compared with a float64 reference at the GPU tests' tolerances. This works only for
kernels without __syncthreads or inline PTX in their bodies (the two ops' kernels have
neither); a helper the body calls that is not stood in for fails to compile.

Needs build/libtirx.so (BUILD_DIR to use another), g++ with _Float16, and NVRTC's directory on
LD_LIBRARY_PATH (/usr/local/cuda/lib64) for the library to load. Exit status 1 on a wrong
element or a sanitizer error.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get('BUILD_DIR', os.path.join(ROOT, 'build'))

DUMP_C = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tirx.h>
int main(int argc, char **argv) {
  tirx_row_op op = strcmp(argv[1], "silu_mul") == 0 ? TIRX_ROW_OP_SILU_MUL : TIRX_ROW_OP_CHAIN;
  tirx_dtype dt = strcmp(argv[2], "bf16") == 0 ? TIRX_BF16 : strcmp(argv[2], "f16") == 0 ? TIRX_F16 : TIRX_F32;
  tirx_row_options o = {.variant = atoi(argv[4]), .threads = atoi(argv[5]), .scalar = atoi(argv[6])};
  tirx_kernel *k = NULL;
  if (tirx_kernels_row_build(op, &o, dt, atoll(argv[3]), &k) != TIRX_OK) {
    fprintf(stderr, "%s\n", tirx_last_error());
    return 1;
  }
  fputs(tirx_kernel_source(k), stdout);
  tirx_kernel_release(k);
  return 0;
}
'''

SHIM = r'''
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct dim3h { unsigned x, y, z; };
static dim3h threadIdx, blockIdx, gridDim, blockDim;
#define __global__
#define __launch_bounds__(...)
struct tirx_bf16 { uint16_t b; };
struct tirx_f16 { uint16_t b; };
static float tirx_bf16_to_f32(tirx_bf16 h) { uint32_t u = (uint32_t)h.b << 16; float f; memcpy(&f, &u, 4); return f; }
static tirx_bf16 tirx_bf16_from_f32(float f) { uint32_t u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return tirx_bf16{(uint16_t)(u >> 16)}; }
static float tirx_f16_to_f32(tirx_f16 h) { _Float16 v; memcpy(&v, &h.b, 2); return (float)v; }
static tirx_f16 tirx_f16_from_f32(float f) { _Float16 v = (_Float16)f; tirx_f16 h; memcpy(&h.b, &v, 2); return h; }
static float tirx_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
template <class T> static T tirx_min(T a, T b) { return a < b ? a : b; }
static long long vec_moves;
/* H: 1 ld.global.cs, 2 st.global.cs, 4 the source is registers, 8 the destination is */
template <class T, int N, int H> static void tirx_vcopy(T *d, const T *s) {
  const void *g = (H & 4) ? (const void *)d : (const void *)s;
  if ((uintptr_t)g % (N * sizeof(T))) { fprintf(stderr, "misaligned %d-element vector at %p\n", N, g); abort(); }
  memcpy(d, s, N * sizeof(T));
  vec_moves++;
}
'''

MAIN = r'''
int main(int argc, char **argv) {
  int rows = atoi(argv[1]);
  unsigned grid = (unsigned)atoi(argv[2]);
  size_t nin = (size_t)rows * %(win)d, nout = (size_t)rows * %(W)d;
  void *px, *po;
  if (posix_memalign(&px, 16, nin * %(sz)d) || posix_memalign(&po, 16, nout * %(sz)d)) return 2;
  %(ct)s *x = (%(ct)s *)px, *out = (%(ct)s *)po;
  uint64_t seed = 12345;
  for (size_t i = 0; i < nin; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = %(fromf)s(-2.0f + 4.0f * (float)(seed >> 40) / 16777216.0f);
  }
  memset(out, 0xA5, nout * %(sz)d);
  gridDim.x = grid, blockDim.x = %(T)d;
  for (unsigned b = 0; b < grid; b++)
    for (unsigned t = 0; t < %(T)d; t++) { blockIdx.x = b, threadIdx.x = t; %(call)s; }
  long bad = 0;
  for (long r = 0; r < rows; r++)
    for (long j = 0; j < %(W)d; j++) {
      double want, v = %(tof)s(x[r * %(win)d + j]);
      if (%(silu)d) want = v / (1 + exp(-v)) * %(tof)s(x[r * %(win)d + %(W)d + j]);
      else want = v / (1 + exp(-0.75 * v)) + 0.25;
      double got = %(tof)s(out[r * %(W)d + j]);
      if (!(fabs(got - want) <= %(tol)g + %(tol)g * fabs(want))) {
        if (bad < 5) fprintf(stderr, "row %%ld col %%ld: got %%g want %%g\n", r, j, got, want);
        bad++;
      }
    }
  printf("rows %%d grid %%u: %%ld wrong of %%zu, %%lld vector moves\n", rows, grid, bad, nout, vec_moves);
  free(px), free(po);
  return bad != 0;
}
'''


def dumper(tmp):
    exe = os.path.join(tmp, 'dump')
    if not os.path.exists(exe):
        src = os.path.join(tmp, 'dump.c')
        open(src, 'w').write(DUMP_C)
        subprocess.run(['cc', '-O1', '-I' + os.path.join(ROOT, 'include'), src, '-o', exe,
                        '-L' + BUILD, '-ltirx', '-Wl,-rpath,' + BUILD], check=True)
    return exe


def check(tmp, op, dt, W, var, rows_list, threads=0, scalar=0):
    """Emulates one kernel for each rows; returns True when every run is right."""
    src = subprocess.run([dumper(tmp), op, dt, str(W), str(var), str(threads), str(scalar)],
                         capture_output=True, text=True, check=True).stdout
    body = src[src.index('extern "C" __global__'):]
    m = re.search(r'__launch_bounds__\((\d+)(?:, (\d+))?\)', body)
    T, ctas = int(m.group(1)), int(m.group(2) or 0)
    ew = 'for (long long blk' in body
    size = 4 if dt == 'f32' else 2
    silu = op == 'silu_mul'
    win = 2 * W if silu else W
    conv = {'bf16': ('tirx_bf16', 'tirx_bf16_to_f32', 'tirx_bf16_from_f32'),
            'f16': ('tirx_f16', 'tirx_f16_to_f32', 'tirx_f16_from_f32'), 'f32': ('float', '', '')}[dt]
    text = SHIM + body + MAIN % dict(
        win=win, W=W, sz=size, ct=conv[0], tof=conv[1], fromf=conv[2], T=T, silu=int(silu),
        call='silu_mul(rows, x, out)' if silu else 'chain(rows, x, out, 0.75f, 0.25f)',
        tol={'f32': 2e-5, 'f16': 2e-3, 'bf16': 1.6e-2}[dt])
    name = os.path.join(tmp, f'k_{op}_{dt}_{W}_{var}_{threads}_{scalar}')
    open(name + '.cpp', 'w').write(text)
    subprocess.run(['g++', '-O1', '-g', '-w', '-fsanitize=address,undefined',
                    '-fno-sanitize-recover=undefined', '-o', name, name + '.cpp'], check=True)
    ok = True
    for rows in rows_list:
        if ew:  # the kernel's own grid (rows.c build_elementwise) and small ones
            g = 16 // size
            while silu and g > 1 and W % g:
                g //= 2
            U = max(1, min(8, 64 // (g * size)))
            grids = sorted({min(-(-rows * W // (T * U * g)), 132 * ctas), 1, 2, 3, 7})
        else:
            grids = [rows if W > 1024 else -(-rows // 4)]
        for grid in grids:
            r = subprocess.run([name, str(rows), str(grid)], capture_output=True, text=True)
            print(f'{op} {dt} W={W} variant={var} threads={threads} scalar={scalar} '
                  f'{"elementwise" if ew else "per-row"}: {r.stdout.strip()}{r.stderr[-800:]}')
            ok = ok and r.returncode == 0
    return ok


def sweep(tmp):
    cases = []
    for op in ('chain', 'silu_mul'):
        for dt in ('bf16', 'f16', 'f32'):
            for w in (1, 3, 5, 8, 64, 127, 1000, 4095, 5000, 8191, 8192):
                cases.append((op, dt, w, 64, [1, 2, 3, 19]))
        for w in (2, 4, 6, 12, 20, 4094, 4096, 5002):
            cases.append((op, 'bf16', w, 64, [1, 3, 19]))
        for w in (1, 1000, 5000):
            cases += [(op, 'bf16', w, 64, [3, 19], 64), (op, 'bf16', w, 64, [3, 19], 1024),
                      (op, 'f32', w, 64, [3, 19], 0, 1), (op, 'bf16', w, 64, [3], 0, 1)]
        for w in (3, 5000, 8191):
            cases += [(op, 'bf16', w, 32, [3, 5]), (op, 'f32', w, 32, [3, 5])]
    bad = [c for c in cases if not check(tmp, *c)]
    print(f'rows_emulate: {len(cases)} configurations, {len(bad)} failed')
    for c in bad:
        print('failed:', c)
    return not bad


def main():
    with tempfile.TemporaryDirectory(prefix='tirx-rows-emulate.') as tmp:
        if sys.argv[1:] == ['--sweep']:
            return 0 if sweep(tmp) else 1
        if len(sys.argv) < 6:
            sys.stderr.write(__doc__)
            return 2
        a = sys.argv[1:]
        ok = check(tmp, a[0], a[1], int(a[2]), int(a[3]), [int(r) for r in a[4].split(',')],
                   int(a[5]) if len(a) > 5 else 0, int(a[6]) if len(a) > 6 else 0)
        return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
