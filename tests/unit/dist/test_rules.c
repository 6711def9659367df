/*
 * src/dist/rules.c and collective.c: the rule chosen for every supported layout pair, the
 * failed constraints of the pairs no rule takes (exact messages), and the rules' soundness and
 * completeness against a CPU model of NCCL: each rank's buffers are filled from the source
 * layout, the chosen collective is run as NCCL defines it, and every element of the
 * destination layout must hold the expected value; for random pairs a rule is legal exactly
 * when the model gives the right answer.
 */
#include <math.h>

#include "../helpers.h"
#include "dist/dist.h"

static tirx_arena *arena;
static void setup(void) { arena = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(arena); }
TestSuite(dist_rules, .init = setup, .fini = teardown);

static tirx_dtensor *dt(tirx_dtype type, int rank, const int64_t *shape, const char *layout,
                        int nranks, tirx_partial p) {
  tirx_layout *l = tirx_layout_parse(arena, layout);
  cr_assert_not_null(l, "%s: %s", layout, tirx_last_error());
  tirx_dtensor *t = NULL;
  cr_assert_eq(tirx_dtensor_create(type, rank, shape, l, nranks, p, &t), TIRX_OK, "%s: %s",
               layout, tirx_last_error());
  return t;
}

/* ---- the CPU model of NCCL ---- */

/* The value of global element x on rank r of a source: whole values are x + 1; the addends
 * of a partial value differ per rank so that the reduction is known (see expected()). */
static double src_value(tirx_partial p, int64_t x, int r) {
  switch (p) {
  case TIRX_PARTIAL_SUM: return (double)(x + 1) * (r + 1);
  case TIRX_PARTIAL_PROD: return r == 0 ? (double)(x + 1) : 1.0 + r;
  case TIRX_PARTIAL_MAX: return (double)x + r;
  case TIRX_PARTIAL_MIN: return (double)x - r;
  default: return (double)(x + 1);
  }
}

static double reduce(tirx_partial p, double a, double b) {
  switch (p) {
  case TIRX_PARTIAL_SUM: return a + b;
  case TIRX_PARTIAL_PROD: return a * b;
  case TIRX_PARTIAL_MAX: return a > b ? a : b;
  case TIRX_PARTIAL_MIN: return a < b ? a : b;
  default: return NAN;
  }
}

/* Fills per-rank buffers (nranks x local size, NaN where nothing lands) from t's layout. */
static double *fill(const tirx_dtensor *t, double (*value)(tirx_partial, int64_t, int),
                    bool *ok) {
  int n = t->nranks;
  int64_t k = t->local_size, size = tirx_layout_size(t->layout);
  double *buf = malloc((size_t)(n * k) * sizeof *buf);
  for (int64_t i = 0; i < n * k; i++) buf[i] = NAN;
  tirx_coord pts[64];
  *ok = true;
  for (int64_t x = 0; x < size; x++) {
    int64_t count = 0;
    cr_assert_eq(tirx_layout_eval(t->layout, x, pts, 64, &count), TIRX_OK);
    for (int64_t c = 0; c < count; c++) {
      int64_t r = pts[c].v[TIRX_AXIS_PID], m = pts[c].v[TIRX_AXIS_M];
      if (m < 0 || m >= k) {
        *ok = false;
        continue;
      }
      if (value) buf[r * k + m] = value(t->partial, x, (int)r);
    }
  }
  return buf;
}

/* What element x of the destination must hold. */
static double expected(const tirx_dtensor *src, int64_t x) {
  if (src->partial == TIRX_PARTIAL_NONE) return (double)(x + 1);
  double acc = NAN;
  for (int r = 0; r < src->nranks; r++)
    if (src->holds[r]) acc = isnan(acc) ? src_value(src->partial, x, r)
                                        : reduce(src->partial, acc, src_value(src->partial, x, r));
  return acc;
}

/* Runs rule name as NCCL defines it (counts from args) and checks dst; true when right. */
static bool model(const char *name, const tirx__coll_args *a, const tirx_dtensor *src,
                  const tirx_dtensor *dst) {
  int n = src->nranks;
  bool ok1, ok2;
  double *in = fill(src, src_value, &ok1);
  double *out = fill(dst, NULL, &ok2);
  int64_t ks = src->local_size, kd = dst->local_size, c = a->count;
  bool fits = ok1 && ok2;
  for (int r = 0; r < n && fits; r++) {
    if (strcmp(name, "all_reduce") == 0) {
      fits = c <= ks && c <= kd;
      for (int64_t i = 0; fits && i < c; i++) {
        double acc = in[0 * ks + i];
        for (int q = 1; q < n; q++) acc = reduce(src->partial, acc, in[q * ks + i]);
        out[r * kd + i] = acc;
      }
    } else if (strcmp(name, "reduce_scatter") == 0) {
      fits = n * c <= ks && c <= kd;
      for (int64_t i = 0; fits && i < c; i++) {
        double acc = in[0 * ks + r * c + i];
        for (int q = 1; q < n; q++) acc = reduce(src->partial, acc, in[q * ks + r * c + i]);
        out[r * kd + i] = acc;
      }
    } else if (strcmp(name, "all_gather") == 0) {
      fits = c <= ks && n * c <= kd;
      for (int q = 0; fits && q < n; q++)
        for (int64_t i = 0; i < c; i++) out[r * kd + q * c + i] = in[q * ks + i];
    } else if (strcmp(name, "all_to_all") == 0) {
      fits = n * c <= ks && n * c <= kd;
      for (int q = 0; fits && q < n; q++)
        for (int64_t i = 0; i < c; i++) out[r * kd + q * c + i] = in[q * ks + r * c + i];
    } else if (strcmp(name, "broadcast") == 0) {
      fits = c <= ks && c <= kd;
      for (int64_t i = 0; fits && i < c; i++) out[r * kd + i] = in[a->root * ks + i];
    }
  }
  /* Every element of dst, on every rank that holds it, must be right. */
  int64_t size = tirx_layout_size(dst->layout);
  tirx_coord pts[64];
  for (int64_t x = 0; fits && x < size; x++) {
    int64_t count = 0;
    cr_assert_eq(tirx_layout_eval(dst->layout, x, pts, 64, &count), TIRX_OK);
    double want = expected(src, x);
    for (int64_t k = 0; k < count; k++) {
      double got = out[pts[k].v[TIRX_AXIS_PID] * kd + pts[k].v[TIRX_AXIS_M]];
      if (!(got == want)) fits = false;
    }
  }
  free(in);
  free(out);
  return fits;
}

/* Selects, checks the rule's name and args text, and runs the model. */
static void expect_rule(const tirx_dtensor *src, const tirx_dtensor *dst, const char *rule,
                        const char *args) {
  tirx_collective *c = NULL;
  cr_assert_eq(tirx_collective_create(src, dst, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_str_eq(tirx_collective_rule(c), rule, "%s", tirx_collective_report(c));
  char want[128];
  snprintf(want, sizeof want, "= %s %s\n", rule, args);
  cr_assert(strstr(tirx_collective_report(c), want), "report lacks '%s':\n%s", want,
            tirx_collective_report(c));
  cr_assert(model(rule, &c->args, src, dst), "the model of %s gives a wrong dst:\n%s", rule,
            tirx_collective_report(c));
  tirx_collective_destroy(c);
}

static const int64_t G86[] = {8, 6};

Test(dist_rules, the_table_in_order) {
  static const char *const names[] = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all",
                                      "broadcast"};
  int n = 0;
  const tirx__coll_rule *const *t = tirx__coll_rules(&n);
  cr_assert_eq(n, 5);
  for (int i = 0; i < n; i++) {
    cr_assert_str_eq(t[i]->name, names[i]);
    cr_assert_not_null(t[i]->summary);
    cr_assert_not_null(t[i]->check);
    cr_assert_not_null(t[i]->run);
  }
}

Test(dist_rules, every_supported_pair) {
  const char *R4 = "(8,6):(6,1)+[4:1@pid]", *S0 = "(4,2,6):(1@pid,6,1)";
  static const tirx_partial ops[] = {TIRX_PARTIAL_SUM, TIRX_PARTIAL_PROD, TIRX_PARTIAL_MAX,
                                     TIRX_PARTIAL_MIN};
  for (size_t i = 0; i < 4; i++) {
    char args[64];
    tirx_dtensor *p = dt(TIRX_F32, 2, G86, R4, 4, ops[i]);
    tirx_dtensor *r = dt(TIRX_F32, 2, G86, R4, 4, TIRX_PARTIAL_NONE);
    tirx_dtensor *s = dt(TIRX_F32, 2, G86, S0, 4, TIRX_PARTIAL_NONE);
    snprintf(args, sizeof args, "op=%s count=48", tirx_partial_name(ops[i]));
    expect_rule(p, r, "all_reduce", args);
    snprintf(args, sizeof args, "op=%s count=12", tirx_partial_name(ops[i]));
    expect_rule(p, s, "reduce_scatter", args);
    tirx_dtensor_destroy(p);
    tirx_dtensor_destroy(r);
    tirx_dtensor_destroy(s);
  }
  tirx_dtensor *s = dt(TIRX_BF16, 2, G86, S0, 4, TIRX_PARTIAL_NONE);
  tirx_dtensor *r = dt(TIRX_BF16, 2, G86, R4, 4, TIRX_PARTIAL_NONE);
  expect_rule(s, r, "all_gather", "count=12");
  /* Columns split over the ranks gather into a column-major buffer: in column-major order rank
   * r's columns are block r. */
  int64_t g88[] = {8, 8};
  tirx_dtensor *cyc = dt(TIRX_BF16, 2, g88, "(8,4,2):(1,1@pid,8)", 4, TIRX_PARTIAL_NONE);
  tirx_dtensor *rmaj = dt(TIRX_BF16, 2, g88, "(8,8):(1,8)+[4:1@pid]", 4, TIRX_PARTIAL_NONE);
  expect_rule(cyc, rmaj, "all_gather", "count=16");
  /* all_to_all on (n, n, x): rank i's row block j goes to rank j as its block i. */
  int64_t g3[] = {4, 4, 6};
  tirx_dtensor *a = dt(TIRX_I32, 3, g3, "(4,4,6):(1@pid,6,1)", 4, TIRX_PARTIAL_NONE);
  tirx_dtensor *b = dt(TIRX_I32, 3, g3, "(4,4,6):(6,1@pid,1)", 4, TIRX_PARTIAL_NONE);
  expect_rule(a, b, "all_to_all", "count=6");
  expect_rule(b, a, "all_to_all", "count=6");
  /* broadcast from rank 2 */
  tirx_dtensor *root = dt(TIRX_F64, 2, G86, "(8,6):(6,1)+2@pid", 4, TIRX_PARTIAL_NONE);
  tirx_dtensor *r64 = dt(TIRX_F64, 2, G86, R4, 4, TIRX_PARTIAL_NONE);
  expect_rule(root, r64, "broadcast", "root=2 count=48");
  /* one rank: every structure coincides and the table's order decides */
  tirx_dtensor *one = dt(TIRX_F32, 2, G86, "(8,6):(6,1)", 1, TIRX_PARTIAL_NONE);
  tirx_dtensor *one_p = dt(TIRX_F32, 2, G86, "(8,6):(6,1)", 1, TIRX_PARTIAL_SUM);
  expect_rule(one, one, "all_gather", "count=48");
  expect_rule(one_p, one, "all_reduce", "op=sum count=48");
  tirx_dtensor *list[] = {s, r, cyc, rmaj, a, b, root, r64, one, one_p};
  for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) tirx_dtensor_destroy(list[i]);
}

Test(dist_rules, a_named_rule_is_forced_when_legal) {
  tirx_dtensor *one = dt(TIRX_F32, 2, G86, "(8,6):(6,1)", 1, TIRX_PARTIAL_NONE);
  static const char *const names[] = {"all_gather", "all_to_all", "broadcast"};
  for (int i = 0; i < 3; i++) {
    tirx_collective *c = NULL;
    cr_assert_eq(tirx_collective_create(one, one, names[i], &c), TIRX_OK, "%s",
                 tirx_last_error());
    cr_assert_str_eq(tirx_collective_rule(c), names[i]);
    cr_assert(strstr(tirx_collective_report(c), "(forced)"));
    cr_assert(model(names[i], &c->args, one, one));
    tirx_collective_destroy(c);
  }
  tirx_dtensor_destroy(one);
}

Test(dist_rules, the_report) {
  tirx_dtensor *p = dt(TIRX_F32, 2, G86, "(8,6):(6,1)+[4:1@pid]", 4, TIRX_PARTIAL_SUM);
  tirx_dtensor *s = dt(TIRX_F32, 2, G86, "(4,2,6):(1@pid,6,1)", 4, TIRX_PARTIAL_NONE);
  tirx_collective *c = NULL;
  cr_assert_eq(tirx_collective_create(p, s, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  cr_assert_str_eq(tirx_collective_report(c),
                   "f32[8,6] over 4 ranks: ((8),(6)):((6@m),(1@m))+[4:1@pid] partial sum\n"
                   "  -> f32[8,6] over 4 ranks: ((4,2),(6)):((1@pid,6@m),(1@m))\n"
                   "  = reduce_scatter op=sum count=12\n"
                   "  rejected all_reduce: dst is sharded into 4 parts; all_reduce needs a whole "
                   "copy on every rank\n");
  tirx_collective_destroy(c);
  cr_assert_null(tirx_collective_rule(NULL));
  cr_assert_str_eq(tirx_collective_report(NULL), "");
  tirx_collective_destroy(NULL);
  tirx_dtensor_destroy(p);
  tirx_dtensor_destroy(s);
}

Test(dist_rules, pairs_no_rule_takes) {
  tirx_collective *c = NULL;
  const char *R4 = "(8,6):(6,1)+[4:1@pid]";
  /* Replicated to sharded is a local slice, not communication. */
  tirx_dtensor *r = dt(TIRX_F32, 2, G86, R4, 4, TIRX_PARTIAL_NONE);
  tirx_dtensor *s = dt(TIRX_F32, 2, G86, "(4,2,6):(1@pid,6,1)", 4, TIRX_PARTIAL_NONE);
  expect_error(
      tirx_collective_create(r, s, NULL, &c), TIRX_E_NO_RULE,
      "tirx_collective_create: no collective turns src f32[8,6] over 4 ranks: "
      "((8),(6)):((6@m),(1@m))+[4:1@pid] into dst f32[8,6] over 4 ranks: "
      "((4,2),(6)):((1@pid,6@m),(1@m)): "
      "all_reduce: src is not partial; all_reduce reduces partial values (sum, prod, max, min); "
      "dst is sharded into 4 parts; all_reduce needs a whole copy on every rank; "
      "reduce_scatter: src is not partial; reduce_scatter reduces partial values (sum, prod, "
      "max, min); "
      "all_gather: src has 4 copies of each part; all_gather needs 4 shards, one per rank; dst "
      "is sharded into 4 parts; all_gather needs a whole copy on every rank; "
      "all_to_all: src has 4 copies of each part; all_to_all needs 4 shards, one per rank; "
      "broadcast: src has 4 copies; broadcast needs it on one rank (the root); dst is sharded "
      "into 4 parts; broadcast needs a whole copy on every rank");
  cr_assert_null(c);
  /* Reversed rank order: rank r's rows are block 3 - r of the gathered buffer. */
  tirx_dtensor *rev = dt(TIRX_F32, 2, G86, "(4,2,6):(-1@pid,6,1)+3@pid", 4, TIRX_PARTIAL_NONE);
  expect_error(tirx_collective_create(rev, r, "all_gather", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule all_gather cannot turn src f32[8,6] over 4 ranks: "
               "((4,2),(6)):((-1@pid,6@m),(1@m))+3@pid into dst f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid]: rank r's shard of src is not block r of dst: "
               "src gives ((4,2),(6)):((-12@m,6@m),(1@m))+36@m, dst gives ((8),(6)):((6@m),(1@m))");
  /* The 2x2 mesh: S0R has two copies of two shards; gathering it needs a sub-communicator. */
  tirx_dtensor *s0r = dt(TIRX_F32, 2, G86, "(2,4,6):(1@pid,6,1)+[2:2@pid]", 4, TIRX_PARTIAL_NONE);
  expect_error(tirx_collective_create(s0r, r, "all_gather", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule all_gather cannot turn src f32[8,6] over 4 ranks: "
               "((2,4),(6)):((1@pid,6@m),(1@m))+[2:2@pid] into dst f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid]: src has 2 copies of each part; all_gather "
               "needs 4 shards, one per rank");
  /* S0S1 on the 2x2 mesh gathers blocks in rank order, which is not row-major. */
  tirx_dtensor *s0s1 = dt(TIRX_F32, 2, G86, "(2,4,2,3):(1@pid,3,2@pid,1)", 4, TIRX_PARTIAL_NONE);
  expect_error(tirx_collective_create(s0s1, r, "all_gather", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule all_gather cannot turn src f32[8,6] over 4 ranks: "
               "((2,4),(2,3)):((1@pid,3@m),(2@pid,1@m)) into dst f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid]: rank r's shard of src is not block r of dst: "
               "src gives ((2,4),(2,3)):((12@m,3@m),(24@m,1@m)), dst gives "
               "((8),(6)):((6@m),(1@m))");
  /* Partial into partial, a padded local buffer, bool sums, broadcast from two ranks. */
  tirx_dtensor *p = dt(TIRX_F32, 2, G86, R4, 4, TIRX_PARTIAL_SUM);
  expect_error(tirx_collective_create(p, p, "all_reduce", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule all_reduce cannot turn src f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid] partial sum into dst f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid] partial sum: dst is partial (sum); this "
               "collective moves whole values");
  tirx_dtensor *pad = dt(TIRX_F32, 2, G86, "(8,6):(8,1)+[4:1@pid]", 4, TIRX_PARTIAL_SUM);
  expect_error(tirx_collective_create(pad, r, "all_reduce", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule all_reduce cannot turn src f32[8,6] over 4 ranks: "
               "((8),(6)):((8@m),(1@m))+[4:1@pid] partial sum into dst f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid]: src's local part is not dense (its strides "
               "leave gaps); NCCL moves contiguous buffers");
  tirx_dtensor *pb = dt(TIRX_BOOL, 2, G86, R4, 4, TIRX_PARTIAL_SUM);
  tirx_dtensor *rb = dt(TIRX_BOOL, 2, G86, R4, 4, TIRX_PARTIAL_NONE);
  expect_error(tirx_collective_create(pb, rb, "all_reduce", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule all_reduce cannot turn src bool[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid] partial sum into dst bool[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid]: dtype bool cannot be reduced (tirx passes "
               "NCCL reductions of numbers of 16 bits or more, and 8-bit integers)");
  tirx_dtensor *two = dt(TIRX_F32, 2, G86, "(8,6):(6,1)+[2:2@pid]+1@pid", 4, TIRX_PARTIAL_NONE);
  expect_error(tirx_collective_create(two, r, "broadcast", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule broadcast cannot turn src f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[2:2@pid]+1@pid into dst f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[4:1@pid]: src has 2 copies; broadcast needs it on one "
               "rank (the root)");
  /* dst on 2 of 4 ranks */
  expect_error(tirx_collective_create(s, two, "all_gather", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule all_gather cannot turn src f32[8,6] over 4 ranks: "
               "((4,2),(6)):((1@pid,6@m),(1@m)) into dst f32[8,6] over 4 ranks: "
               "((8),(6)):((6@m),(1@m))+[2:2@pid]+1@pid: dst is on 2 of 4 ranks; all_gather "
               "needs a copy on every rank");
  /* all_to_all whose blocks do not line up: (8,6) rows to columns needs a local transpose. */
  tirx_dtensor *cols = dt(TIRX_F32, 2, (int64_t[]){8, 8}, "(8,4,2):(2,1@pid,1)", 4,
                          TIRX_PARTIAL_NONE);
  tirx_dtensor *rows = dt(TIRX_F32, 2, (int64_t[]){8, 8}, "(4,2,8):(1@pid,8,1)", 4,
                          TIRX_PARTIAL_NONE);
  expect_error(tirx_collective_create(rows, cols, "all_to_all", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule all_to_all cannot turn src f32[8,8] over 4 ranks: "
               "((4,2),(8)):((1@pid,8@m),(1@m)) into dst f32[8,8] over 4 ranks: "
               "((8),(4,2)):((2@m),(1@pid,1@m)): block j of src on rank i is not block i of dst "
               "on rank j: src gives ((4,2),(8)):((16@m,8@m),(1@m)), dst gives "
               "((4,2),(4,2)):((16@m,2@m),(4@m,1@m))");
  cr_assert_null(c);
  tirx_dtensor *list[] = {r, s, rev, s0r, s0s1, p, pad, pb, rb, two, cols, rows};
  for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) tirx_dtensor_destroy(list[i]);
}

Test(dist_rules, argument_errors) {
  tirx_collective *c = NULL;
  tirx_dtensor *a = dt(TIRX_F32, 2, G86, "(8,6):(6,1)+[4:1@pid]", 4, TIRX_PARTIAL_NONE);
  tirx_dtensor *h = dt(TIRX_F16, 2, G86, "(8,6):(6,1)+[4:1@pid]", 4, TIRX_PARTIAL_NONE);
  tirx_dtensor *t = dt(TIRX_F32, 2, (int64_t[]){6, 8}, "(6,8):(8,1)+[4:1@pid]", 4,
                       TIRX_PARTIAL_NONE);
  tirx_dtensor *two = dt(TIRX_F32, 2, G86, "(8,6):(6,1)+[2:1@pid]", 2, TIRX_PARTIAL_NONE);
  expect_error(tirx_collective_create(a, a, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_collective_create: out is NULL");
  expect_error(tirx_collective_create(NULL, a, NULL, &c), TIRX_E_NULL_ARG,
               "tirx_collective_create: src is NULL");
  expect_error(tirx_collective_create(a, NULL, NULL, &c), TIRX_E_NULL_ARG,
               "tirx_collective_create: dst is NULL");
  expect_error(tirx_collective_create(a, h, NULL, &c), TIRX_E_TYPE,
               "tirx_collective_create: src is f32, dst is f16; a collective keeps the dtype");
  expect_error(tirx_collective_create(a, t, NULL, &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: src has global shape (8,6), dst (6,8); a collective keeps "
               "the global shape");
  expect_error(tirx_collective_create(a, two, NULL, &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: src is on a mesh of 4 ranks, dst of 2");
  expect_error(tirx_collective_create(a, a, "allgather", &c), TIRX_E_INVALID_ARG,
               "tirx_collective_create: rule 'allgather' is not one of all_reduce, "
               "reduce_scatter, all_gather, all_to_all, broadcast");
  cr_assert_null(c);
  /* Running needs a collective and a communicator; both checked before any NCCL call. */
  cr_assert_eq(tirx_collective_create(a, a, "all_gather", &c), TIRX_E_INVALID_ARG);
  expect_error(tirx_collective_run(NULL, NULL, NULL, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_collective_run: c is NULL");
  tirx_dtensor *one = dt(TIRX_F32, 2, G86, "(8,6):(6,1)", 1, TIRX_PARTIAL_NONE);
  cr_assert_eq(tirx_collective_create(one, one, NULL, &c), TIRX_OK);
  expect_error(tirx_collective_run(c, NULL, NULL, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_collective_run: comm is NULL");
  tirx_collective_destroy(c);
  tirx_dtensor *list[] = {a, h, t, two, one};
  for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) tirx_dtensor_destroy(list[i]);
}

/*
 * Soundness and completeness on random pairs: sharded sources with every order of pid and m
 * iters inside dims of random extents, gathered or scattered into random dense destinations
 * (row- or column-major, rank-major or not). The rule is legal exactly when the model of NCCL
 * gives the right destination with the counts the structure implies.
 */
Test(dist_rules, random_pairs_legal_iff_the_model_is_right) {
  uint64_t seed = 0xd157ull;
  int legal = 0, illegal = 0;
  for (int iter = 0; iter < 400; iter++) {
    int64_t n0 = test_rand_range(&seed, 1, 2), n1 = test_rand_range(&seed, 1, 2);
    int n = (int)(n0 * n1);
    int64_t a = test_rand_range(&seed, 1, 3) * n0, b = test_rand_range(&seed, 1, 3) * n1;
    int64_t g[2] = {a, b};
    /* A sharded layout: dim 0 split (n0 over pid stride s0, a/n0 on m), dim 1 likewise. */
    char sh[2][320];
    for (int v = 0; v < 2; v++) {
      bool outer0 = test_rand(&seed) & 1, outer1 = test_rand(&seed) & 1, colmajor = test_rand(&seed) & 1;
      int64_t la = a / n0, lb = b / n1;
      int64_t sa = colmajor ? 1 : lb, sb = colmajor ? la : 1; /* local strides */
      bool swap = test_rand(&seed) & 1; /* which pid bit each dim uses */
      int64_t p0 = swap ? n1 : 1, p1 = swap ? 1 : n0;
      char e0[64], s0[64], e1[64], s1[64];
      if (outer0) {
        snprintf(e0, sizeof e0, "%lld,%lld", (long long)n0, (long long)la);
        snprintf(s0, sizeof s0, "%lld@pid,%lld@m", (long long)p0, (long long)sa);
      } else {
        snprintf(e0, sizeof e0, "%lld,%lld", (long long)la, (long long)n0);
        snprintf(s0, sizeof s0, "%lld@m,%lld@pid", (long long)sa, (long long)p0);
      }
      if (outer1) {
        snprintf(e1, sizeof e1, "%lld,%lld", (long long)n1, (long long)lb);
        snprintf(s1, sizeof s1, "%lld@pid,%lld@m", (long long)p1, (long long)sb);
      } else {
        snprintf(e1, sizeof e1, "%lld,%lld", (long long)lb, (long long)n1);
        snprintf(s1, sizeof s1, "%lld@m,%lld@pid", (long long)sb, (long long)p1);
      }
      snprintf(sh[v], sizeof sh[v], "((%s),(%s)):((%s),(%s))", e0, e1, s0, s1);
    }
    /* A whole copy on every rank: row- or column-major. */
    char rep[128];
    if (test_rand(&seed) & 1)
      snprintf(rep, sizeof rep, "(%lld,%lld):(%lld,1)+[%d:1@pid]", (long long)a, (long long)b,
               (long long)b, n);
    else
      snprintf(rep, sizeof rep, "(%lld,%lld):(1,%lld)+[%d:1@pid]", (long long)a, (long long)b,
               (long long)a, n);
    tirx_dtensor *s = dt(TIRX_F32, 2, g, sh[0], n, TIRX_PARTIAL_NONE);
    tirx_dtensor *s2 = dt(TIRX_F32, 2, g, sh[1], n, TIRX_PARTIAL_NONE);
    tirx_dtensor *r = dt(TIRX_F32, 2, g, rep, n, TIRX_PARTIAL_NONE);
    tirx_dtensor *p = dt(TIRX_F32, 2, g, rep, n, TIRX_PARTIAL_SUM);
    struct {
      const char *rule;
      const tirx_dtensor *src, *dst;
      tirx__coll_args args;
    } tries[] = {
        {"all_gather", s, r, {.count = s->local_size}},
        {"reduce_scatter", p, s, {.count = s->local_size, .op = TIRX__NCCL_SUM}},
        {"all_to_all", s, s2, {.count = s->local_size / n}},
    };
    for (size_t t = 0; t < 3; t++) {
      if (strcmp(tries[t].rule, "all_to_all") == 0 && s->local_size % n) continue;
      tirx_collective *c = NULL;
      tirx_status st = tirx_collective_create(tries[t].src, tries[t].dst, tries[t].rule, &c);
      bool right = model(tries[t].rule, &tries[t].args, tries[t].src, tries[t].dst);
      char *ts = tirx_dtensor_str(tries[t].src), *td = tirx_dtensor_str(tries[t].dst);
      cr_assert_eq(st == TIRX_OK, right, "%s %s -> %s: rule %s, model %s (%s)", tries[t].rule,
                   ts, td, st == TIRX_OK ? "legal" : "illegal", right ? "right" : "wrong",
                   st == TIRX_OK ? "" : tirx_last_error());
      free(ts);
      free(td);
      if (c) cr_assert_eq(c->args.count, tries[t].args.count);
      if (st == TIRX_OK)
        legal++;
      else
        illegal++;
      tirx_collective_destroy(c);
    }
    tirx_dtensor_destroy(s);
    tirx_dtensor_destroy(s2);
    tirx_dtensor_destroy(r);
    tirx_dtensor_destroy(p);
  }
  cr_log_info("random pairs: %d legal, %d illegal", legal, illegal);
  cr_assert_gt(legal, 50);
  cr_assert_gt(illegal, 50);
}
