/*
 * compile_time: the cold NVRTC compile of examples/gemm.c's kernels, by phase, with or without a
 * GPU (issue target: <= 150 ms for the GEMM).
 *
 *   compile_time [--reps N] [--case NAME]... [--opts "[=]OPTIONS"]... [--against DIR]...
 *                [--save DIR] [--baseline DIR] [--trace DIR]
 *
 * Cases: bf16 and f16 (M = N = K = 8192, the 128x256 tile over 3 stages), silu (bf16 with the
 * bias+SiLU epilogue) and decode (bf16, M = 1, N = 4096, K = 14336: a 64x32 tile). Each compiles
 * the variant a launch of that shape compiles (the DIV16 #defines included) with exactly the
 * library's NVRTC options (tirx__nvrtc_options); each --opts adds a configuration with those
 * options appended (with a leading '=': the arch option and these alone), measured interleaved with the library's so that a loaded machine slows both
 * alike. --against DIR adds a configuration that compiles DIR/<case>.cu (a source saved by
 * --save, e.g. from an older tree) with the library's options, interleaved the same way: a
 * before/after measurement in one process. Per case and configuration, min and median over N runs (default 7) after one warm-up
 * compile in the process:
 *   total     nvrtcCompileProgram for the arch (sm_90a): front end, NVVM and ptxas; process
 *             CPU time (what the compile costs; wall time on an idle machine) and wall time
 *   front     the same source and options compiled for compute_90a (PTX only): front end + NVVM
 *   ptxas     total - front (min - min)
 *   getCUBIN  nvrtcGetCUBIN after the compile (a copy)
 * and ptxas' registers and spills (one more compile with --ptxas-options=-v, which changes
 * nothing in the code). --save DIR writes DIR/<case>.cu, .ptx and .cubin of the library's
 * configuration; --baseline DIR compares every configuration's cubin (the library's, each
 * --opts, each --against) with DIR/<case>.cubin: whether the kernel's SASS (.text) is
 * byte-identical, else instruction counts, the opcode fields that differ in count and the
 * sequence of wgmma/TMA/barrier instructions from the first full-barrier wait before the first
 * HGMMA to the loop's back edge. (This machine has no nvdisasm or
 * cuobjdump; opcodes are the low 12 bits of each 128-bit sm_90 instruction, named where checked
 * against ptxas output of single PTX instructions.) --trace DIR writes NVRTC's
 * --fdevice-time-trace JSON per case (its phases are wall times). NVRTC's own cache is off
 * (bench_util.h), so that on a GPU host, too, every compile is a real one.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "gemm_ref.h"
#include "jit/jit.h"
#include "jit/nvrtc_lib.h"

enum { MAX_CONFIGS = 8, MAX_REPS = 64, MAX_EXTRA = 16 };

typedef struct gemm_case {
  const char *name;
  gemm_spec spec;
} gemm_case;

static const gemm_case cases[] = {
    {"bf16", {.dtype = TIRX_BF16, .m = 8192, .n = 8192, .k = 8192}},
    {"f16", {.dtype = TIRX_F16, .m = 8192, .n = 8192, .k = 8192}},
    {"silu", {.dtype = TIRX_BF16, .m = 8192, .n = 8192, .k = 8192, .epilogue = TIRX_EPILOGUE_BIAS_SILU}},
    {"decode", {.dtype = TIRX_BF16, .m = 1, .n = 4096, .k = 14336}},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

typedef struct config {
  const char *text; /* the --opts argument, NULL for the library's options alone */
  const char *extra[MAX_EXTRA];
  int nextra;
  bool replace; /* "=OPTIONS": the arch and these, instead of the library's options */
  const char *source_dir; /* --against: the source is <source_dir>/<case>.cu */
} config;

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Splits s (copied) at spaces into cfg's extra options. */
static bool config_parse(config *cfg, const char *s) {
  cfg->text = s;
  cfg->nextra = 0;
  cfg->replace = s[0] == '=';
  char *copy = strdup(s + cfg->replace);
  for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
    if (cfg->nextra == MAX_EXTRA) return false;
    cfg->extra[cfg->nextra++] = tok;
  }
  return true;
}

/* The launch variant's source for spec: the kernel's plan for arguments of the spec's shape
 * (the pointers are checked for alignment, never read) selects the DIV16 defines. */
static char *variant_source(const tirx_kernel *k, const gemm_spec *s) {
  void *fake = (void *)(uintptr_t)4096;
  tirx_arg args[7] = {
      tirx_arg_i32((int32_t)s->m), tirx_arg_i32((int32_t)s->n), tirx_arg_i32((int32_t)s->k),
      tirx_arg_tensor(fake, s->dtype, 2, (int64_t[]){s->m, s->k}, NULL),
      tirx_arg_tensor(fake, s->dtype, 2, (int64_t[]){s->k, s->n}, (int64_t[]){1, s->k}),
      tirx_arg_tensor(fake, s->dtype, 2, (int64_t[]){s->m, s->n}, NULL),
      tirx_arg_tensor(fake, s->dtype, 2, (int64_t[]){1, s->n}, NULL)};
  static tirx__launch_plan plan;
  char *src = NULL;
  if (tirx__kernel_plan(k, "compile_time", args, s->epilogue == TIRX_EPILOGUE_NONE ? 6 : 7, &plan) !=
          TIRX_OK ||
      tirx__kernel_variant_source(k, plan.nspec, plan.spec, &src) != TIRX_OK) {
    fprintf(stderr, "compile_time: %s\n", tirx_last_error());
    return NULL;
  }
  return src;
}

typedef struct result {
  void *cubin;
  size_t cubin_size;
  char *ptx, *log;
} result;

/* One NVRTC compile of src for arch with the library's options, then extra; CPU and wall ms
 * of nvrtcCompileProgram and ms of nvrtcGetCUBIN. Keeps the outputs in out when out is set. */
static bool compile(const char *src, const char *arch, const config *cfg, const char *more,
                    double *cpu, double *wall, double *get, result *out) {
  char arch_buf[64];
  const char *opts[TIRX__NVRTC_MAX_OPTIONS + MAX_EXTRA + 1];
  int n = tirx__nvrtc_options(arch, src, arch_buf, opts);
  if (cfg && cfg->replace) n = 1; /* the arch option comes first */
  for (int i = 0; cfg && i < cfg->nextra; i++) opts[n++] = cfg->extra[i];
  if (more) opts[n++] = more;
  const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
  if (!nv) {
    fprintf(stderr, "compile_time: %s\n", tirx__nvrtc_lib_error());
    return false;
  }
  nvrtcProgram prog = NULL;
  double c0 = cpu_ms(), w0 = now_us();
  nvrtcResult r = nv->CreateProgram(&prog, src, TIRX__NVRTC_FILE, 0, NULL, NULL);
  if (r == NVRTC_SUCCESS) r = nv->CompileProgram(prog, n, opts);
  *cpu = cpu_ms() - c0;
  *wall = (now_us() - w0) / 1e3;
  size_t log_size = 0;
  char *log = NULL;
  if (prog && nv->GetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS &&
      (log = calloc(log_size + 1, 1)))
    nv->GetProgramLog(prog, log);
  if (r != NVRTC_SUCCESS) {
    fprintf(stderr, "compile_time: NVRTC (%s%s%s): %s\n%s\n", arch, cfg && cfg->text ? " " : "",
            cfg && cfg->text ? cfg->text : "", nv->GetErrorString(r), log ? log : "");
    free(log);
    nv->DestroyProgram(&prog);
    return false;
  }
  size_t size = 0;
  void *cubin = NULL;
  double g0 = now_us();
  if (nv->GetCUBINSize(prog, &size) == NVRTC_SUCCESS && size && (cubin = malloc(size)))
    nv->GetCUBIN(prog, cubin);
  *get = (now_us() - g0) / 1e3;
  if (out) {
    size_t ptx_size = 0;
    out->cubin = cubin;
    out->cubin_size = size;
    out->log = log;
    out->ptx = NULL;
    if (nv->GetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS && (out->ptx = calloc(ptx_size + 1, 1)))
      nv->GetPTX(prog, out->ptx);
  } else {
    free(cubin);
    free(log);
  }
  nv->DestroyProgram(&prog);
  return true;
}

static void result_free(result *r) {
  free(r->cubin);
  free(r->ptx);
  free(r->log);
}

/* ---- the cubin's SASS, without a disassembler ---- */

/* The bytes of section name in the ELF64 image, or NULL. */
static const unsigned char *elf_section(const unsigned char *img, size_t size, const char *prefix,
                                        size_t *len) {
  if (size < 64 || memcmp(img, "\177ELF", 4) != 0 || img[4] != 2) return NULL;
  uint64_t shoff;
  uint16_t shentsize, shnum, shstrndx;
  memcpy(&shoff, img + 0x28, 8);
  memcpy(&shentsize, img + 0x3a, 2);
  memcpy(&shnum, img + 0x3c, 2);
  memcpy(&shstrndx, img + 0x3e, 2);
  if (shoff + (uint64_t)shnum * shentsize > size || shstrndx >= shnum) return NULL;
  const unsigned char *strtab_sh = img + shoff + (size_t)shstrndx * shentsize;
  uint64_t stroff;
  memcpy(&stroff, strtab_sh + 0x18, 8);
  for (int i = 0; i < shnum; i++) {
    const unsigned char *sh = img + shoff + (size_t)i * shentsize;
    uint32_t name;
    uint64_t off, sz;
    memcpy(&name, sh, 4);
    memcpy(&off, sh + 0x18, 8);
    memcpy(&sz, sh + 0x20, 8);
    if (stroff + name >= size || off + sz > size) continue;
    if (strncmp((const char *)img + stroff + name, prefix, strlen(prefix)) == 0) {
      *len = (size_t)sz;
      return img + off;
    }
  }
  return NULL;
}

static unsigned opcode(const unsigned char *ins) { return (unsigned)(ins[0] | ins[1] << 8) & 0xfff; }

/* Opcode fields checked against ptxas' output for single PTX instructions (sm_90a). */
static const struct {
  unsigned op;
  const char *name;
  bool key; /* part of the wgmma/TMA/barrier sequence compared in the main loop */
} known[] = {
    {0x9f0, "HGMMA", true},          {0x9c5, "WARPGROUP", true}, {0x5b4, "UTMALDG", true},
    {0x3b5, "UTMASTG", true},        {0x844, "STSM", true},      {0x5a7, "SYNCS.PHASECHK", true},
    {0x9a7, "SYNCS.ARRIVE", true},   {0xb1d, "BAR", true},       {0x947, "BRA", true},
    {0x94d, "EXIT", false},          {0x918, "NOP", false},
};

static const char *op_name(unsigned op, char buf[8]) {
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i].op == op) return known[i].name;
  snprintf(buf, 8, "0x%03x", op);
  return buf;
}

static bool op_key(unsigned op) {
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i].op == op) return known[i].key;
  return false;
}

/* The main loop of a wgmma kernel: from the last SYNCS.PHASECHK before the first HGMMA through
 * the second BRA after the last HGMMA (the stage release, the back edge); [0, 0) without HGMMA. */
static void main_loop(const unsigned char *t, size_t n, size_t *begin, size_t *end) {
  size_t first = n, last = 0;
  for (size_t i = 0; i < n; i++)
    if (opcode(t + 16 * i) == 0x9f0) {
      if (first == n) first = i;
      last = i;
    }
  *begin = *end = 0;
  if (first == n) return;
  size_t b = first;
  while (b > 0 && opcode(t + 16 * b) != 0x5a7) b--;
  size_t e = last;
  for (int bras = 0; e + 1 < n && bras < 2;)
    if (opcode(t + 16 * ++e) == 0x947) bras++;
  *begin = b;
  *end = e + 1;
}

static void sass_compare(const char *what, const void *old_img, size_t old_size,
                         const void *new_img, size_t new_size) {
  size_t la = 0, lb = 0;
  const unsigned char *a = elf_section(old_img, old_size, ".text.", &la);
  const unsigned char *b = elf_section(new_img, new_size, ".text.", &lb);
  if (!a || !b) {
    printf("    SASS vs baseline: no .text section in one of the cubins\n");
    return;
  }
  size_t na = la / 16, nb = lb / 16;
  if (la == lb && memcmp(a, b, la) == 0) {
    printf("    SASS vs baseline: identical (%zu instructions)\n", na);
    return;
  }
  printf("    SASS vs baseline (%s): DIFFERENT, %zu -> %zu instructions\n", what, na, nb);
  int ca[4096] = {0}, cb[4096] = {0};
  for (size_t i = 0; i < na; i++) ca[opcode(a + 16 * i)]++;
  for (size_t i = 0; i < nb; i++) cb[opcode(b + 16 * i)]++;
  printf("      opcode counts that differ:");
  for (unsigned op = 0; op < 4096; op++)
    if (ca[op] != cb[op]) {
      char buf[8];
      printf(" %s %d->%d", op_name(op, buf), ca[op], cb[op]);
    }
  printf("\n");
  size_t a0, a1, b0, b1;
  main_loop(a, na, &a0, &a1);
  main_loop(b, nb, &b0, &b1);
  if (a1 == a0 || b1 == b0) return;
  bool bytes = a1 - a0 == b1 - b0 && memcmp(a + 16 * a0, b + 16 * b0, 16 * (a1 - a0)) == 0;
  char ka[512] = "", kb[512] = "";
  for (size_t i = a0; i < a1 && strlen(ka) < 480; i++)
    if (op_key(opcode(a + 16 * i))) {
      char buf[8];
      snprintf(ka + strlen(ka), sizeof ka - strlen(ka), " %s", op_name(opcode(a + 16 * i), buf));
    }
  for (size_t i = b0; i < b1 && strlen(kb) < 480; i++)
    if (op_key(opcode(b + 16 * i))) {
      char buf[8];
      snprintf(kb + strlen(kb), sizeof kb - strlen(kb), " %s", op_name(opcode(b + 16 * i), buf));
    }
  printf("      main loop: %zu -> %zu instructions, bytes %s, wgmma/TMA/barrier sequence %s\n",
         a1 - a0, b1 - b0, bytes ? "identical" : "differ", strcmp(ka, kb) ? "DIFFERS" : "equal");
  printf("        baseline:%s\n", ka);
  if (strcmp(ka, kb)) printf("        now:     %s\n", kb);
}

/* ---- files ---- */

static bool write_file(const char *dir, const char *name, const char *ext, const void *data,
                       size_t size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, size, f) == size;
  if (f) ok = fclose(f) == 0 && ok;
  if (!ok) fprintf(stderr, "compile_time: cannot write %s\n", path);
  return ok;
}

static void *read_file(const char *dir, const char *name, const char *ext, size_t *size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  void *buf = n > 0 ? malloc((size_t)n) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = buf ? (size_t)n : 0;
  return buf;
}

/* "Used 168 registers" and the spill line of a ptxas -v log, on one line. */
static void print_ptxas(const char *log) {
  const char *u = log ? strstr(log, "Used ") : NULL;
  const char *sp = log ? strstr(log, "bytes stack frame") : NULL;
  int regs = 0, stack = 0, st = 0, ld = 0;
  if (u) sscanf(u, "Used %d registers", &regs);
  if (sp) { /* "ptxas         .     32 bytes stack frame, 28 bytes spill stores, ..." */
    while (sp > log && sp[-1] == ' ') sp--;
    while (sp > log && sp[-1] >= '0' && sp[-1] <= '9') sp--;
    sscanf(sp, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &stack, &st,
           &ld);
  }
  printf("    ptxas -v: %d registers, %d bytes stack, %d bytes spill stores, %d bytes spill loads\n",
         regs, stack, st, ld);
  if (log)
    for (const char *p = strstr(log, "Potential Performance Loss"); p;
         p = strstr(p + 1, "Potential Performance Loss")) {
      const char *e = strchr(p, '\n');
      printf("    ptxas: %.*s\n", (int)(e ? e - p : (long)strlen(p)), p);
    }
}

static int usage(void) {
  fprintf(stderr, "usage: compile_time [--reps N] [--case bf16|f16|silu|decode]... "
                  "[--opts \"[=]OPTIONS\"]... [--against DIR]... [--save DIR] [--baseline DIR] "
                  "[--trace DIR]\n");
  return 2;
}

int main(int argc, char **argv) {
  bench_nvrtc_cache_off(); /* every compile below is a real one, on a GPU host too */
  int reps = 7;
  bool want[NCASES] = {false}, any = false;
  config cfgs[MAX_CONFIGS] = {{0}};
  int ncfg = 1;
  const char *save = NULL, *baseline = NULL, *trace = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--reps") && v) {
      reps = atoi(v);
      i++;
    } else if (!strcmp(a, "--case") && v) {
      bool found = false;
      for (int c = 0; c < NCASES; c++)
        if (!strcmp(v, cases[c].name)) want[c] = found = any = true;
      if (!found) return usage();
      i++;
    } else if (!strcmp(a, "--opts") && v && ncfg < MAX_CONFIGS) {
      if (!config_parse(&cfgs[ncfg++], v)) return usage();
      i++;
    } else if (!strcmp(a, "--against") && v && ncfg < MAX_CONFIGS) {
      cfgs[ncfg].text = v;
      cfgs[ncfg++].source_dir = v;
      i++;
    } else if (!strcmp(a, "--save") && v) {
      save = argv[++i];
    } else if (!strcmp(a, "--baseline") && v) {
      baseline = argv[++i];
    } else if (!strcmp(a, "--trace") && v) {
      trace = argv[++i];
    } else {
      return usage();
    }
  }
  if (reps < 1 || reps > MAX_REPS) return usage();
  if (!any)
    for (int c = 0; c < NCASES; c++) want[c] = true;
  char arch_buf[64];
  const char *lib[TIRX__NVRTC_MAX_OPTIONS];
  int nlib = tirx__nvrtc_options("sm_90a", "/* Generated by tirx */", arch_buf, lib);
  printf("NVRTC %d.%d, the library's options for generated sources:", tirx__nvrtc_version() / 1000,
         tirx__nvrtc_version() % 1000 / 10);
  for (int i = 0; i < nlib; i++) printf(" %s", lib[i]);
  printf("\nper case: min / median of %d runs, ms; total = nvrtcCompileProgram for sm_90a, front "
         "= the same for compute_90a (front end + NVVM), ptxas = total - front (mins)\n",
         reps);
  { /* NVRTC's one-time start-up, outside the figures */
    double c, w, g;
    compile("extern \"C\" __global__ void warm() {}", "sm_90a", NULL, NULL, &c, &w, &g, NULL);
  }
  int failures = 0;
  for (int ci = 0; ci < NCASES; ci++) {
    if (!want[ci]) continue;
    char err[4096] = "";
    tirx_kernel *k = gemm_build(&cases[ci].spec, err, sizeof err);
    char *src = k ? variant_source(k, &cases[ci].spec) : NULL;
    if (!src) {
      printf("%s: %s\n", cases[ci].name, k ? "no variant source" : err);
      tirx_kernel_release(k);
      failures++;
      continue;
    }
    printf("%s: %s, source %zu bytes\n", cases[ci].name, tirx_kernel_name(k), strlen(src));
    char *srcs[MAX_CONFIGS] = {NULL};
    bool ok = true;
    for (int g = 0; g < ncfg; g++) {
      size_t size = 0;
      char *other = NULL;
      if (cfgs[g].source_dir) {
        other = read_file(cfgs[g].source_dir, cases[ci].name, "cu", &size);
        char *z = other ? realloc(other, size + 1) : NULL;
        if (z) z[size] = '\0';
        else free(other);
        other = z;
        if (!other) {
          printf("  %s/%s.cu not readable\n", cfgs[g].source_dir, cases[ci].name);
          ok = false;
        }
      }
      srcs[g] = other ? other : src;
    }
    static double tot[MAX_CONFIGS][MAX_REPS], wall[MAX_CONFIGS][MAX_REPS],
        front[MAX_CONFIGS][MAX_REPS], get[MAX_CONFIGS][MAX_REPS];
    for (int r = 0; r < reps && ok; r++)
      for (int g = 0; g < ncfg && ok; g++) {
        double w2, g2;
        ok = compile(srcs[g], "compute_90a", &cfgs[g], NULL, &front[g][r], &w2, &g2, NULL) &&
             compile(srcs[g], "sm_90a", &cfgs[g], NULL, &tot[g][r], &wall[g][r], &get[g][r],
                     NULL);
      }
    for (int g = 0; ok && g < ncfg; g++) {
      /* median() sorts, so [0] is then the minimum */
      double tmed = median(tot[g], reps), fmed = median(front[g], reps);
      double wmed = median(wall[g], reps), tmin = tot[g][0], fmin = front[g][0];
      printf("  [%s%s]\n    total CPU %6.1f / %6.1f  wall %6.1f / %6.1f  front %6.1f / %6.1f  "
             "ptxas %6.1f  getCUBIN %.2f\n",
             cfgs[g].source_dir ? "source from " : "",
             cfgs[g].text ? cfgs[g].text : "library options", tmin, tmed, wall[g][0], wmed, fmin,
             fmed, tmin - fmin, median(get[g], reps));
      result res = {0};
      double c, w, gg;
      if (compile(srcs[g], "sm_90a", &cfgs[g], "--ptxas-options=-v", &c, &w, &gg, &res))
        print_ptxas(res.log);
      result_free(&res);
      if (((save && g == 0) || baseline) &&
          compile(srcs[g], "sm_90a", &cfgs[g], NULL, &c, &w, &gg, &res)) {
        if (save && g == 0) {
          write_file(save, cases[ci].name, "cu", src, strlen(src));
          if (res.ptx) write_file(save, cases[ci].name, "ptx", res.ptx, strlen(res.ptx));
          write_file(save, cases[ci].name, "cubin", res.cubin, res.cubin_size);
        }
        size_t bsize = 0;
        void *old = baseline ? read_file(baseline, cases[ci].name, "cubin", &bsize) : NULL;
        if (baseline && !old) printf("    SASS vs baseline: %s/%s.cubin not readable\n", baseline,
                                     cases[ci].name);
        if (old) sass_compare(cases[ci].name, old, bsize, res.cubin, res.cubin_size);
        free(old);
        result_free(&res);
      }
    }
    if (ok && trace) {
      char opt[4200];
      snprintf(opt, sizeof opt, "--fdevice-time-trace=%s/%s.json", trace, cases[ci].name);
      double c, w, g;
      ok = compile(src, "sm_90a", NULL, opt, &c, &w, &g, NULL);
    }
    if (!ok) failures++;
    for (int g = 0; g < ncfg; g++)
      if (srcs[g] != src) free(srcs[g]);
    free(src);
    tirx_kernel_release(k);
  }
  return failures ? 1 : 0;
}
