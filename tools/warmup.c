/*
 * `tirx warmup` (warmup.h): reads shapes, one op per line, and compiles every kernel the
 * kernel library would launch for them into the disk cache, on a compile-only runtime (no GPU
 * needed): each op is called with placeholder tensors between tirx_kernels_prepare_begin and
 * _end, so it prepares (tirx_prepare_async) instead of launching. Every shape is submitted
 * first, so the compiles run in parallel (in compile workers when there are); results are then
 * reported in input order, k of N, with a bar on a terminal and a line per shape otherwise.
 *
 * A shape line: OP DTYPE KEY=VALUE..., where a VALUE may be a comma-separated list (the line
 * stands for every combination). "#" starts a comment. Lines given with -e are named
 * "-e:N", the N-th -e.
 *   gemm        f16|bf16      m= n= k= [epilogue=none|bias|bias_silu|bias_gelu]
 *   rmsnorm, layernorm, add_rmsnorm, softmax, silu_mul, row_sum, row_max
 *               f32|f16|bf16  rows= w=
 *   attention   f16|bf16      b= sq= sk= h= hkv= d= [causal=no|yes]   (fixed length)
 *   rope        f16|bf16      t= h= hkv= d= [max_pos=]                (neox, f32 caches)
 * Decode attention (paged KV, host context lengths) and the tensor-parallel layer are not
 * covered.
 */
#define _GNU_SOURCE
#include "warmup.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tirx.h"

const char tirx_warmup_usage[] =
    "  warmup [--dir D] [--arch A] [--workers N | --in-process] [--progress bar|lines]\n"
    "         [FILE | -] [-e LINE]...\n"
    "                           compile the kernel library's ops for the shapes in FILE\n"
    "                           (- : stdin) and each LINE into the disk cache, no GPU needed.\n"
    "                           A line: OP DTYPE KEY=V[,V...]... ('#' comments), e.g.\n"
    "                             gemm bf16 m=1,128,8192 n=4096 k=4096 epilogue=bias_silu\n"
    "                             rmsnorm bf16 rows=1,16,256 w=4096\n"
    "                           ops: gemm (f16, bf16; m n k [epilogue=none|bias|bias_silu|\n"
    "                           bias_gelu]); rmsnorm layernorm add_rmsnorm softmax silu_mul\n"
    "                           row_sum row_max (f32, f16, bf16; rows w); attention (f16,\n"
    "                           bf16; b sq sk h hkv d [causal=no|yes]); rope (f16, bf16;\n"
    "                           t h hkv d [max_pos])\n";

enum { MAX_ITEMS = 100000, MAX_KEYS = 7, MAX_VALUES = 64 };

typedef enum op_kind {
  OP_GEMM, OP_RMSNORM, OP_LAYERNORM, OP_ADD_RMSNORM, OP_SOFTMAX, OP_SILU_MUL, OP_ROW_SUM,
  OP_ROW_MAX, OP_ATTENTION, OP_ROPE
} op_kind;

/* An op's line: integer keys (those with a default of 0 are required), and at most one key
 * that takes a word (gemm's epilogue, attention's causal). */
typedef struct op_desc {
  const char *name;
  op_kind kind;
  const char *keys[MAX_KEYS];
  int64_t defaults[MAX_KEYS];
  const char *choice_key;
  const char *const *choices; /* NULL-terminated; the first is the default */
  const char *choice_text;    /* for messages: "none, bias, bias_silu or bias_gelu" */
} op_desc;

static const char *const epilogues[] = {"none", "bias", "bias_silu", "bias_gelu", NULL};
static const char *const yes_no[] = {"no", "yes", NULL};

#define ROWS_OP(n, k) {n, k, {"rows", "w"}, {0}, NULL, NULL, NULL}
static const op_desc ops[] = {
    {"gemm", OP_GEMM, {"m", "n", "k"}, {0}, "epilogue", epilogues,
     "none, bias, bias_silu or bias_gelu"},
    ROWS_OP("rmsnorm", OP_RMSNORM),
    ROWS_OP("layernorm", OP_LAYERNORM),
    ROWS_OP("add_rmsnorm", OP_ADD_RMSNORM),
    ROWS_OP("softmax", OP_SOFTMAX),
    ROWS_OP("silu_mul", OP_SILU_MUL),
    ROWS_OP("row_sum", OP_ROW_SUM),
    ROWS_OP("row_max", OP_ROW_MAX),
    {"attention", OP_ATTENTION, {"b", "sq", "sk", "h", "hkv", "d"}, {0}, "causal", yes_no,
     "no or yes"},
    {"rope", OP_ROPE, {"t", "h", "hkv", "d", "max_pos"}, {0, 0, 0, 0, 4096}, NULL, NULL, NULL},
};

typedef struct item {
  const op_desc *op;
  tirx_dtype dtype;
  int64_t v[MAX_KEYS];
  int choice; /* index into op->choices */
  char text[192];
  /* results */
  tirx_status st;
  char *message;
  tirx_future **futures;
  int nfutures;
} item;

typedef struct warm {
  item *items;
  int n, cap;
  FILE *err;
} warm;

static int nkeys(const op_desc *op) {
  int n = 0;
  while (n < MAX_KEYS && op->keys[n])
    n++;
  return n;
}

static int parse_error(warm *w, const char *where, int line, const char *fmt, const char *arg) {
  fprintf(w->err, "tirx warmup: %s:%d: ", where, line);
  fprintf(w->err, fmt, arg);
  fprintf(w->err, "\n");
  return 2;
}

/* A comma-separated list of positive integers into vals; count, or -1. */
static int parse_values(const char *s, int64_t *vals) {
  int n = 0;
  while (*s) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v <= 0 || v > INT32_MAX || n == MAX_VALUES ||
        (*end && *end != ','))
      return -1;
    vals[n++] = v;
    s = *end ? end + 1 : end;
    if (*end == ',' && !*s)
      return -1;
  }
  return n;
}

static int add_items(warm *w, const op_desc *op, tirx_dtype dtype, int choice,
                     int64_t vals[MAX_KEYS][MAX_VALUES], const int *counts, const char *dt,
                     const char *where, int line) {
  int k = nkeys(op);
  long total = 1;
  for (int i = 0; i < k; i++)
    total *= counts[i];
  if (w->n + total > MAX_ITEMS)
    return parse_error(w, where, line, "more than %s shapes in all", "100000");
  int idx[MAX_KEYS] = {0};
  for (long t = 0; t < total; t++) {
    if (w->n == w->cap) {
      int cap = w->cap ? w->cap * 2 : 64;
      item *grown = realloc(w->items, (size_t)cap * sizeof *grown);
      if (!grown)
        return parse_error(w, where, line, "%s", "out of memory");
      w->items = grown;
      w->cap = cap;
    }
    item *it = &w->items[w->n++];
    memset(it, 0, sizeof *it);
    it->op = op;
    it->dtype = dtype;
    it->choice = choice;
    int len = snprintf(it->text, sizeof it->text, "%s %s", op->name, dt);
    for (int i = 0; i < k; i++) {
      it->v[i] = vals[i][idx[i]];
      len += snprintf(it->text + len, sizeof it->text - (size_t)len, " %s=%lld", op->keys[i],
                      (long long)it->v[i]);
    }
    if (choice)
      snprintf(it->text + len, sizeof it->text - (size_t)len, " %s=%s", op->choice_key,
               op->choices[choice]);
    for (int i = k - 1; i >= 0; i--) { /* next combination, the last key fastest */
      if (++idx[i] < counts[i])
        break;
      idx[i] = 0;
    }
  }
  return 0;
}

static int parse_line(warm *w, char *s, const char *where, int line) {
  char *hash = strchr(s, '#');
  if (hash)
    *hash = '\0';
  char *save = NULL;
  char *opname = strtok_r(s, " \t\r\n", &save);
  if (!opname)
    return 0;
  const op_desc *op = NULL;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(ops[i].name, opname))
      op = &ops[i];
  if (!op)
    return parse_error(w, where, line,
                       "unknown op '%s' (expected gemm, rmsnorm, layernorm, add_rmsnorm, "
                       "softmax, silu_mul, row_sum, row_max, attention or rope)",
                       opname);
  char *dt = strtok_r(NULL, " \t\r\n", &save);
  if (!dt)
    return parse_error(w, where, line, "%s has no dtype (f32, f16 or bf16)", op->name);
  tirx_dtype dtype;
  if (!strcmp(dt, "f32"))
    dtype = TIRX_F32;
  else if (!strcmp(dt, "f16"))
    dtype = TIRX_F16;
  else if (!strcmp(dt, "bf16"))
    dtype = TIRX_BF16;
  else
    return parse_error(w, where, line, "unknown dtype '%s' (expected f32, f16 or bf16)", dt);
  int k = nkeys(op), counts[MAX_KEYS] = {0}, choice = 0;
  static int64_t vals[MAX_KEYS][MAX_VALUES];
  for (char *kv; (kv = strtok_r(NULL, " \t\r\n", &save));) {
    char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
      return parse_error(w, where, line, "'%s' is not KEY=VALUE", kv);
    *eq = '\0';
    const char *val = eq + 1;
    if (op->choice_key && !strcmp(kv, op->choice_key)) {
      choice = -1;
      for (int e = 0; op->choices[e]; e++)
        if (!strcmp(val, op->choices[e]))
          choice = e;
      if (choice < 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s '%.100s' is not %s", op->choice_key, val,
                 op->choice_text);
        return parse_error(w, where, line, "%s", msg);
      }
      continue;
    }
    int key = -1;
    for (int i = 0; i < k; i++)
      if (!strcmp(kv, op->keys[i]))
        key = i;
    if (key < 0)
      return parse_error(w, where, line, "unknown key '%s' for this op", kv);
    if (counts[key])
      return parse_error(w, where, line, "key '%s' given twice", kv);
    counts[key] = parse_values(val, vals[key]);
    if (counts[key] <= 0) {
      counts[key] = 0;
      return parse_error(w, where, line,
                         "'%s' is not a list of integers from 1 to 2^31 - 1 (at most 64)", val);
    }
  }
  for (int i = 0; i < k; i++) {
    if (!counts[i] && op->defaults[i]) {
      vals[i][0] = op->defaults[i];
      counts[i] = 1;
    }
    if (!counts[i])
      return parse_error(w, where, line, "missing key '%s'", op->keys[i]);
  }
  return add_items(w, op, dtype, choice, vals, counts, dt, where, line);
}

static int parse_file(warm *w, const char *path) {
  FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
  if (!f) {
    fprintf(w->err, "tirx warmup: cannot read %s: %s\n", path, strerror(errno));
    return 1;
  }
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  for (int n = 1; rc == 0 && getline(&line, &cap, f) >= 0; n++)
    rc = parse_line(w, line, strcmp(path, "-") ? path : "stdin", n);
  free(line);
  if (f != stdin)
    fclose(f);
  return rc;
}

/* ---- running ---- */

#define P ((void *)(uintptr_t)0x10000) /* placeholder data: 16-byte aligned, never read */

static tirx_status call_op(tirx_runtime *rt, const item *it) {
  tirx_dtype dt = it->dtype;
  if (it->op->kind == OP_GEMM) {
    int64_t M = it->v[0], N = it->v[1], K = it->v[2];
    tirx_tensor_arg a = {P, dt, 2, (int64_t[]){M, K}, NULL};
    tirx_tensor_arg b = {P, dt, 2, (int64_t[]){N, K}, NULL};
    tirx_tensor_arg c = {P, dt, 2, (int64_t[]){M, N}, NULL};
    tirx_tensor_arg bias = {P, dt, 1, (int64_t[]){N}, NULL};
    tirx_gemm_options o = {.epilogue = (tirx_epilogue)it->choice};
    return tirx_op_gemm(rt, &o, &a, &b, it->choice ? &bias : NULL, &c, NULL);
  }
  if (it->op->kind == OP_ATTENTION) {
    int64_t B = it->v[0], Sq = it->v[1], Sk = it->v[2], H = it->v[3], Hkv = it->v[4],
            D = it->v[5];
    tirx_tensor_arg q = {P, dt, 4, (int64_t[]){B, Sq, H, D}, NULL};
    tirx_tensor_arg kv = {P, dt, 4, (int64_t[]){B, Sk, Hkv, D}, NULL};
    tirx_attention_options o = {.causal = it->choice == 1};
    return tirx_op_attention(rt, &o, &q, &kv, &kv, &q, NULL, NULL, NULL);
  }
  if (it->op->kind == OP_ROPE) {
    int64_t T = it->v[0], H = it->v[1], Hkv = it->v[2], D = it->v[3], MP = it->v[4];
    tirx_tensor_arg q = {P, dt, 3, (int64_t[]){T, H, D}, NULL};
    tirx_tensor_arg k = {P, dt, 3, (int64_t[]){T, Hkv, D}, NULL};
    tirx_tensor_arg pos = {P, TIRX_I32, 1, (int64_t[]){T}, NULL};
    tirx_tensor_arg cs = {P, TIRX_F32, 2, (int64_t[]){MP, D / 2}, NULL};
    return tirx_op_rope(rt, NULL, &q, &k, &pos, &cs, &cs, NULL);
  }
  int64_t R = it->v[0], W = it->v[1];
  tirx_tensor_arg x = {P, dt, 2, (int64_t[]){R, W}, NULL};
  tirx_tensor_arg x2 = {P, dt, 2, (int64_t[]){R, 2 * W}, NULL};
  tirx_tensor_arg y = {P, dt, 2, (int64_t[]){R, W}, NULL};
  tirx_tensor_arg wt = {P, dt, 1, (int64_t[]){W}, NULL};
  tirx_tensor_arg sum = {P, TIRX_F32, 1, (int64_t[]){R}, NULL};
  switch (it->op->kind) {
  case OP_RMSNORM:
    return tirx_op_rmsnorm(rt, NULL, &x, &wt, &y, 1e-6f, NULL);
  case OP_LAYERNORM:
    return tirx_op_layernorm(rt, NULL, &x, &wt, &wt, &y, 1e-6f, NULL);
  case OP_ADD_RMSNORM:
    return tirx_op_add_rmsnorm(rt, NULL, &x, &x, &wt, &y, &y, 1e-6f, NULL);
  case OP_SOFTMAX:
    return tirx_op_softmax(rt, NULL, &x, &y, NULL);
  case OP_SILU_MUL:
    return tirx_op_silu_mul(rt, NULL, &x2, &y, NULL);
  case OP_ROW_SUM:
    return tirx_op_row_sum(rt, NULL, &x, &sum, NULL);
  case OP_ROW_MAX:
    return tirx_op_row_max(rt, NULL, &x, &sum, NULL);
  default:
    return TIRX_E_INTERNAL;
  }
}

/* Prepares item it: its futures, or its error. */
static void submit(tirx_runtime *rt, item *it) {
  it->st = tirx_kernels_prepare_begin();
  if (it->st == TIRX_OK) {
    it->st = call_op(rt, it);
    char *msg = it->st != TIRX_OK ? strdup(tirx_last_error()) : NULL;
    tirx_kernels_prepare_end(&it->futures, &it->nfutures);
    it->message = msg;
  } else {
    it->message = strdup(tirx_last_error());
  }
}

/* Waits for it's preparations; the first failure becomes its error. */
static void finish(item *it) {
  for (int i = 0; i < it->nfutures; i++) {
    tirx_status st = tirx_future_wait(it->futures[i], -1);
    if (st != TIRX_OK && it->st == TIRX_OK) {
      it->st = st;
      it->message = strdup(tirx_future_message(it->futures[i]));
    }
    tirx_future_release(it->futures[i]);
  }
  free(it->futures);
  it->futures = NULL;
}

static void draw_bar(FILE *out, int k, int n, const char *text) {
  enum { WIDTH = 30 };
  int filled = n ? (int)((long)k * WIDTH / n) : WIDTH;
  char bar[WIDTH + 1];
  for (int i = 0; i < WIDTH; i++)
    bar[i] = i < filled ? '#' : '.';
  bar[WIDTH] = '\0';
  fprintf(out, "\r[%s] %d/%d %.60s\033[K", bar, k, n, text);
  fflush(out);
}

static const char *worker_beside_tool(char *buf, size_t cap) {
  char exe[3800];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return NULL;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash)
    return NULL;
  *slash = '\0';
  snprintf(buf, cap, "%s/../tirx-compile-worker", exe); /* build/tools/tirx: the build tree */
  return access(buf, X_OK) == 0 ? buf : NULL;
}

int tirx_warmup_main(int argc, const char *const *argv, FILE *out, FILE *err) {
  warm w = {NULL, 0, 0, err};
  const char *dir = NULL, *arch = NULL, *progress = NULL;
  long workers = 0;
  bool in_process = false;
  int rc = 0, exprs = 0;
  for (int i = 0; i < argc && rc == 0; i++) {
    const char *a = argv[i];
    bool has_next = i + 1 < argc;
    if (!strcmp(a, "--dir") && has_next)
      dir = argv[++i];
    else if (!strcmp(a, "--arch") && has_next)
      arch = argv[++i];
    else if (!strcmp(a, "--progress") && has_next)
      progress = argv[++i];
    else if (!strcmp(a, "--in-process"))
      in_process = true;
    else if (!strcmp(a, "--workers") && has_next) {
      char *end = NULL;
      workers = strtol(argv[++i], &end, 10);
      if (!*argv[i] || *end || workers < 1 || workers > 64) {
        fprintf(err, "tirx warmup: --workers '%s' is not a count from 1 to 64\n", argv[i]);
        rc = 2;
      }
    } else if (!strcmp(a, "-e") && has_next) {
      char *copy = strdup(argv[++i]);
      rc = copy ? parse_line(&w, copy, "-e", ++exprs) : 1;
      free(copy);
    } else if (a[0] != '-' || !strcmp(a, "-")) {
      rc = parse_file(&w, a);
    } else {
      fprintf(err, "tirx warmup: unknown or incomplete option '%s'\n", a);
      rc = 2;
    }
  }
  if (rc == 0 && progress && strcmp(progress, "bar") && strcmp(progress, "lines")) {
    fprintf(err, "tirx warmup: --progress '%s' is not bar or lines\n", progress);
    rc = 2;
  }
  if (rc == 0 && w.n == 0) {
    fprintf(err, "tirx warmup: no shapes given (a FILE, - for stdin, or -e LINE)\n");
    rc = 2;
  }
  if (rc != 0) {
    free(w.items);
    return rc;
  }
  char wbuf[4096];
  tirx_runtime_options o = {.size = sizeof o, .compile_only = true, .cache_dir = dir,
                            .arch = arch,
                            .compile_workers = (unsigned)workers,
                            .compile_in_process = in_process};
  const char *env = getenv("TIRX_COMPILE_WORKER");
  if (!in_process && !(env && *env))
    o.compile_worker = worker_beside_tool(wbuf, sizeof wbuf);
  tirx_runtime *rt = NULL;
  if (tirx_runtime_create(&o, &rt) != TIRX_OK) {
    fprintf(err, "tirx warmup: %s\n", tirx_last_error());
    free(w.items);
    return 2;
  }
  const char *cache = tirx_runtime_cache_dir(rt);
  if (!cache[0])
    fprintf(err, "tirx warmup: warning: the disk cache is off; nothing will be kept\n");
  bool bar = progress ? !strcmp(progress, "bar") : isatty(fileno(out));
  for (int i = 0; i < w.n; i++)
    submit(rt, &w.items[i]);
  int failed = 0, kernels = 0;
  if (bar)
    draw_bar(out, 0, w.n, "");
  for (int i = 0; i < w.n; i++) {
    item *it = &w.items[i];
    finish(it);
    kernels += it->nfutures;
    if (it->st != TIRX_OK) {
      failed++;
      if (bar)
        fprintf(out, "\r\033[K");
      fprintf(out, "[%d/%d] %s: FAILED: %s\n", i + 1, w.n, it->text,
              it->message ? it->message : tirx_status_str(it->st));
    } else if (!bar) {
      fprintf(out, "[%d/%d] %s: ok (%d kernel%s)\n", i + 1, w.n, it->text, it->nfutures,
              it->nfutures == 1 ? "" : "s");
    }
    if (bar)
      draw_bar(out, i + 1, w.n, it->text);
    free(it->message);
  }
  if (bar)
    fprintf(out, "\n");
  tirx_cache_stats s = {.size = sizeof s};
  tirx_runtime_cache_stats(rt, &s);
  fprintf(out,
          "tirx warmup: %d shape%s, %d kernel launch%s prepared: %llu compiled (%llu in compile "
          "workers), %llu from the disk cache, %d shape%s failed; cache %s, arch %s\n",
          w.n, w.n == 1 ? "" : "s", kernels, kernels == 1 ? "" : "es",
          (unsigned long long)s.compiles, (unsigned long long)s.worker_compiles,
          (unsigned long long)s.hits, failed, failed == 1 ? "" : "s", cache[0] ? cache : "off",
          tirx_runtime_arch(rt));
  tirx_runtime_destroy(rt);
  free(w.items);
  return failed ? 1 : 0;
}
