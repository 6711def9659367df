/* src/layout/parse.c: the text form, its round trip through the printer, and every error. */
#include "../helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(parse, .init = setup, .fini = teardown);

static tirx_layout *parse_ok(const char *text) {
  tirx_layout *l = tirx_layout_parse(A, text);
  cr_assert_not_null(l, "parse(\"%s\"): %s", text, tirx_last_error());
  return l;
}

/* Asserts that text prints back exactly as want. */
static void assert_prints(const char *text, const char *want) {
  char *s = tirx_layout_str(parse_ok(text));
  cr_assert_str_eq(s, want, "parse(\"%s\")", text);
  free(s);
}

/* The single point of a replica-free layout at x. */
static tirx_coord point(const tirx_layout *l, int64_t x) {
  tirx_coord c;
  int64_t n;
  cr_assert_eq(tirx_layout_eval(l, x, &c, 1, &n), TIRX_OK, "%s", tirx_last_error());
  return c;
}

/* ---- the paper's examples ------------------------------------------------------------------ */

Test(parse, paper_tensor_core_tile) {
  tirx_layout *l = parse_ok("(8,2,4,2):(4@laneid,1@warpid,1@laneid,1@reg)+[2:4@warpid]+5@warpid");
  tirx_layout *alias = parse_ok("(8,2,4,2):(4@lane,1@warp,1@lane,1@reg)+[2:4@warp]+5@warp");
  cr_assert(tirx_layout_same(l, alias));
  cr_assert_eq(tirx_layout_size(l), 128);
  for (int64_t i = 0; i < 8; i++)
    for (int64_t j = 0; j < 16; j++) {
      tirx_coord pts[2];
      int64_t n;
      cr_assert_eq(tirx_layout_eval(l, i * 16 + j, pts, 2, &n), TIRX_OK);
      cr_assert_eq(n, 2);
      for (int k = 0; k < 2; k++) {
        cr_assert_eq(pts[k].v[TIRX_AXIS_LANEID], 4 * i + (j / 2) % 4);
        cr_assert_eq(pts[k].v[TIRX_AXIS_WARPID], 5 + j / 8 + 4 * k);
        cr_assert_eq(pts[k].v[TIRX_AXIS_REG], j % 2);
      }
    }
}

Test(parse, paper_mesh_shardings) {
  /* S0S1 on a 2x2 mesh: rows split over pid bit 0, columns over pid bit 1. */
  tirx_layout *s0s1 = parse_ok("(2,32,2,64):(1@pid,128@m,2@pid,1@m)");
  /* S0R: rows split over pid bit 0, replicated over pid bit 1. */
  tirx_layout *s0r = parse_ok("(2,32,128):(1@pid,128@m,1@m)+[2:2@pid]");
  for (int64_t i = 0; i < 64; i++)
    for (int64_t j = 0; j < 128; j++) {
      tirx_coord c = point(s0s1, i * 128 + j);
      cr_assert_eq(c.v[TIRX_AXIS_PID], i / 32 + 2 * (j / 64));
      cr_assert_eq(c.v[TIRX_AXIS_M], (i % 32) * 128 + j % 64);
      tirx_coord pts[2];
      int64_t n;
      cr_assert_eq(tirx_layout_eval(s0r, i * 128 + j, pts, 2, &n), TIRX_OK);
      for (int k = 0; k < 2; k++) {
        cr_assert_eq(pts[k].v[TIRX_AXIS_PID], i / 32 + 2 * k);
        cr_assert_eq(pts[k].v[TIRX_AXIS_M], (i % 32) * 128 + j);
      }
    }
}

Test(parse, paper_strided_layouts) {
  tirx_layout *pitch = parse_ok("(64,128):(136@m,1@m)");
  for (int64_t i = 0; i < 64; i++)
    for (int64_t j = 0; j < 128; j++) cr_assert_eq(point(pitch, i * 128 + j).v[TIRX_AXIS_M], i * 136 + j);
  tirx_layout *interleave = parse_ok("(2,64):(1@m,2@m)");
  for (int64_t s = 0; s < 2; s++)
    for (int64_t k = 0; k < 64; k++)
      cr_assert_eq(point(interleave, s * 64 + k).v[TIRX_AXIS_M], s + 2 * k);
}

Test(parse, grouped_layout_with_a_logical_shape) {
  tirx_layout *l = parse_ok("((2,8),(3,8)):((192,8),(64,1))");
  cr_assert_eq(tirx_layout_rank(l), 2);
  int64_t shape[2];
  cr_assert_eq(tirx_layout_shape(l, shape, 2), TIRX_OK);
  cr_assert_eq(shape[0], 16);
  cr_assert_eq(shape[1], 24);
  for (int64_t i = 0; i < 16; i++)
    for (int64_t j = 0; j < 24; j++) {
      int64_t idx[2] = {i, j}, n;
      tirx_coord c;
      cr_assert_eq(tirx_layout_eval_nd(l, idx, &c, 1, &n), TIRX_OK);
      cr_assert_eq(c.v[TIRX_AXIS_M], (i / 8) * 192 + (i % 8) * 8 + (j / 8) * 64 + j % 8);
    }
  char *s = tirx_layout_str(l);
  cr_assert_str_eq(s, "((2,8),(3,8)):((192@m,8@m),(64@m,1@m))");
  free(s);
}

/* ---- accepted spellings -------------------------------------------------------------------- */

Test(parse, accepted_spellings_print_in_the_printer_form) {
  assert_prints("(8):(1)", "(8):(1@m)");
  assert_prints("():()", "():()");
  assert_prints("():()+7@m", "():()+7@m");
  assert_prints("(()):(())", "(()):(())");
  assert_prints("((4),(),(2)):((1),(),(4@reg))", "((4),(),(2)):((1@m),(),(4@reg))");
  assert_prints("  ( 8 , 2 )\t:\n( 4 @ lane , 1 @warp ) + [ 2 : 4 @ warp , 3:1@cta ] + 5 @ warp "
                "+ 3 ^ sw ( 128 , 2 ) \r\n",
                "(8,2):(4@laneid,1@warpid)+[2:4@warpid,3:1@cta]+3@m+5@warpid^sw(128,2)");
  /* Negative offsets: as the printer writes them, or with a bare minus. */
  assert_prints("(4):(1)+-3@m", "(4):(1@m)+-3@m");
  assert_prints("(4):(1)-3@m-2@warpid", "(4):(1@m)+-3@m+-2@warpid");
  assert_prints("(4):(-1)+[2:-4@laneid]+0@m", "(4):(-1@m)+[2:-4@laneid]");
  assert_prints("(4):(1)+[2:16]^sw(32,4)", "(4):(1@m)+[2:16@m]^sw(32,4)");
  assert_prints("(2,3):(-9223372036854775806,0)", "(2,3):(-9223372036854775806@m,0@m)");
  assert_prints("(1):(9223372036854775806)", "(1):(9223372036854775806@m)");
  assert_prints("(9223372036854775807):(0)", "(9223372036854775807):(0@m)");
}

Test(parse, registered_axes) {
  tirx_axis col;
  cr_assert_eq(tirx_axis_register("Col", &col), TIRX_OK);
  tirx_layout *l = parse_ok("(2,128,112):(112@Col,1@laneid,1@Col)");
  tirx_iter it;
  cr_assert_eq(tirx_layout_iter(l, 0, &it), TIRX_OK);
  cr_assert_eq(it.axis, col);
  char *s = tirx_layout_str(l);
  cr_assert_str_eq(s, "(2,128,112):(112@Col,1@laneid,1@Col)");
  free(s);
}

/* ---- round trips --------------------------------------------------------------------------- */

static void assert_round_trip(const tirx_layout *l) {
  char *s = tirx_layout_str(l);
  tirx_layout *back = tirx_layout_parse(A, s);
  cr_assert_not_null(back, "parse(\"%s\"): %s", s, tirx_last_error());
  cr_assert(tirx_layout_same(l, back), "round trip changed %s", s);
  char *again = tirx_layout_str(back);
  cr_assert_str_eq(again, s);
  free(again);
  free(s);
}

Test(parse, round_trip_of_random_layouts) {
  uint64_t seed = 0x9a45e;
  for (int t = 0; t < 500; t++) assert_round_trip(test_random_layout(A, &seed, 6, t % 5 == 0));
}

/*
 * A random grouped, swizzled layout written independently of the printer: its text in the
 * printer's form and a second spelling with blanks, aliases and implicit m. Both must parse
 * to the structure that was drawn.
 */
typedef struct drawn {
  int nd, rank, nr, no, sw, elem;
  int dim_iters[6];
  tirx_iter d[8], r[3];
  tirx_axis_offset o[2];
} drawn;

static void draw(uint64_t *s, drawn *g) {
  static const tirx_axis axes[] = {TIRX_AXIS_M, TIRX_AXIS_LANEID, TIRX_AXIS_WARPID,
                                   TIRX_AXIS_REG, TIRX_AXIS_WGID, TIRX_AXIS_TID_IN_WG};
  static const int sws[] = {0, 32, 64, 128}, elems[] = {1, 2, 4, 8};
  memset(g, 0, sizeof *g);
  g->rank = (int)test_rand_range(s, 1, 4);
  for (int k = 0; k < g->rank; k++) {
    g->dim_iters[k] = (int)test_rand_range(s, 0, 2);
    for (int i = 0; i < g->dim_iters[k]; i++)
      g->d[g->nd++] = (tirx_iter){test_rand_range(s, 1, 9), test_rand_range(s, -30, 300),
                                  axes[test_rand(s) % 6]};
  }
  g->nr = (int)test_rand_range(s, 0, 3);
  for (int i = 0; i < g->nr; i++)
    g->r[i] = (tirx_iter){test_rand_range(s, 1, 4), test_rand_range(s, -9, 9),
                          axes[test_rand(s) % 6]};
  g->no = (int)test_rand_range(s, 0, 2);
  for (int i = 0; i < g->no; i++) /* axes[0..2] then axes[3..5]: sorted, never repeated */
    g->o[i] = (tirx_axis_offset){axes[3 * i + (int)(test_rand(s) % 3)], test_rand_range(s, -50, 50)};
  if (g->no == 2 && g->o[0].axis > g->o[1].axis) {
    tirx_axis_offset t = g->o[0];
    g->o[0] = g->o[1];
    g->o[1] = t;
  }
  g->sw = sws[test_rand(s) % 4];
  g->elem = g->sw ? elems[test_rand(s) % 4] : 0;
}

static const char *spell_axis(tirx_axis ax, bool fancy) {
  if (fancy && ax == TIRX_AXIS_LANEID) return "lane";
  if (fancy && ax == TIRX_AXIS_WARPID) return "warp";
  if (fancy && ax == TIRX_AXIS_WGID) return "wg";
  return tirx_axis_name(ax);
}

static void put_value(char **p, int64_t v, tirx_axis ax, bool fancy) {
  if (fancy && ax == TIRX_AXIS_M)
    *p += sprintf(*p, "%lld ", (long long)v);
  else
    *p += sprintf(*p, fancy ? "%lld @ %s" : "%lld@%s", (long long)v, spell_axis(ax, fancy));
}

static void spell(const drawn *g, bool fancy, char *out) {
  char *p = out;
  const char *sep = fancy ? " , " : ",";
  for (int pass = 0; pass < 2; pass++) {
    p += sprintf(p, pass ? (fancy ? " : (" : ":(") : (fancy ? " (" : "("));
    for (int k = 0, i = 0; k < g->rank; k++) {
      p += sprintf(p, k ? "%s(" : "(", sep);
      for (int j = 0; j < g->dim_iters[k]; j++, i++) {
        if (j) p += sprintf(p, "%s", sep);
        if (pass)
          put_value(&p, g->d[i].stride, g->d[i].axis, fancy);
        else
          p += sprintf(p, "%lld", (long long)g->d[i].extent);
      }
      p += sprintf(p, ")");
    }
    p += sprintf(p, ")");
  }
  if (g->nr) {
    p += sprintf(p, fancy ? " + [ " : "+[");
    for (int i = 0; i < g->nr; i++) {
      p += sprintf(p, "%s%lld:", i ? sep : "", (long long)g->r[i].extent);
      put_value(&p, g->r[i].stride, g->r[i].axis, fancy);
    }
    p += sprintf(p, "]");
  }
  for (int i = 0; i < g->no; i++) {
    if (g->o[i].value == 0 && !fancy) continue;
    if (fancy && g->o[i].value < 0) {
      p += sprintf(p, " ");
      put_value(&p, g->o[i].value, g->o[i].axis, fancy); /* "-3@m" without the '+' */
    } else {
      p += sprintf(p, fancy ? " + " : "+");
      put_value(&p, g->o[i].value, g->o[i].axis, fancy);
    }
  }
  if (g->sw) p += sprintf(p, fancy ? " ^ sw( %d , %d ) " : "^sw(%d,%d)", g->sw, g->elem);
}

Test(parse, round_trip_of_grouped_and_swizzled_layouts) {
  uint64_t seed = 0x6e0c;
  char plain[1024], fancy[1024];
  for (int t = 0; t < 500; t++) {
    drawn g;
    draw(&seed, &g);
    spell(&g, false, plain);
    spell(&g, true, fancy);
    tirx_layout *l = parse_ok(plain), *f = parse_ok(fancy);
    cr_assert(tirx_layout_same(l, f), "\"%s\" and \"%s\" differ", plain, fancy);
    char *s = tirx_layout_str(l);
    cr_assert_str_eq(s, plain);
    free(s);
    assert_round_trip(l);
    /* The parsed structure is the drawn one. */
    cr_assert_eq(tirx_layout_rank(l), g.rank);
    cr_assert_eq(tirx_layout_num_iters(l), g.nd);
    cr_assert_eq(tirx_layout_num_replicas(l), g.nr);
    cr_assert_eq(tirx_layout_swizzle_bytes(l), g.sw);
    cr_assert_eq(tirx_layout_swizzle_elem_bytes(l), g.elem);
    for (int i = 0; i < g.nd; i++) {
      tirx_iter it;
      cr_assert_eq(tirx_layout_iter(l, i, &it), TIRX_OK);
      cr_assert(it.extent == g.d[i].extent && it.stride == g.d[i].stride &&
                it.axis == g.d[i].axis);
    }
    for (int i = 0; i < g.no; i++) cr_assert_eq(tirx_layout_offset(l, g.o[i].axis), g.o[i].value);
  }
}

/* ---- errors -------------------------------------------------------------------------------- */

#define expect_parse(text, st, msg) expect_null(tirx_layout_parse(A, text), st, msg)

Test(parse, malformed_text_is_reported_with_its_position) {
  expect_parse("", TIRX_E_PARSE, "tirx_layout_parse: at 0: expected '('");
  expect_parse("   ", TIRX_E_PARSE, "tirx_layout_parse: at 3: expected '('");
  expect_parse("8:1", TIRX_E_PARSE, "tirx_layout_parse: at 0: expected '('");
  expect_parse("(8,2", TIRX_E_PARSE, "tirx_layout_parse: at 4: expected ',' or ')'");
  expect_parse("(8;2):(1,1)", TIRX_E_PARSE, "tirx_layout_parse: at 2: expected ',' or ')'");
  expect_parse("(8,)", TIRX_E_PARSE, "tirx_layout_parse: at 3: expected an extent");
  expect_parse("(x)", TIRX_E_PARSE, "tirx_layout_parse: at 1: expected an extent, '(' or ')'");
  expect_parse("(0):(1)", TIRX_E_PARSE, "tirx_layout_parse: at 1: expected an extent >= 1");
  expect_parse("(4,-2):(1,1)", TIRX_E_PARSE, "tirx_layout_parse: at 3: expected an extent >= 1");
  expect_parse("(8)", TIRX_E_PARSE, "tirx_layout_parse: at 3: expected ':'");
  expect_parse("(8):", TIRX_E_PARSE, "tirx_layout_parse: at 4: expected '('");
  expect_parse("(8):(", TIRX_E_PARSE, "tirx_layout_parse: at 5: expected a stride");
  expect_parse("(8):(1", TIRX_E_PARSE, "tirx_layout_parse: at 6: expected ',' or ')'");
  expect_parse("(8):(1@)", TIRX_E_PARSE, "tirx_layout_parse: at 7: expected an axis name");
  expect_parse("(8):(1@9)", TIRX_E_PARSE, "tirx_layout_parse: at 7: expected an axis name");
  expect_parse("(8):(1@bogus)", TIRX_E_UNKNOWN_AXIS, "tirx_layout_parse: at 7: unknown axis 'bogus'");
  expect_parse("(8):(1@ M)", TIRX_E_UNKNOWN_AXIS, "tirx_layout_parse: at 8: unknown axis 'M'");
  expect_parse("(8):(- 1)", TIRX_E_PARSE, "tirx_layout_parse: at 5: expected a stride");
  expect_parse("(8):(+1)", TIRX_E_PARSE, "tirx_layout_parse: at 5: expected a stride");
  expect_parse("(8):(1)x", TIRX_E_PARSE,
               "tirx_layout_parse: at 7: expected '+', '-', '^' or end of text");
  expect_parse("(8):(1) 2", TIRX_E_PARSE,
               "tirx_layout_parse: at 8: expected '+', '-', '^' or end of text");
}

Test(parse, stride_counts_must_match_the_extents) {
  expect_parse("(2,3):(1)", TIRX_E_PARSE,
               "tirx_layout_parse: at 8: expected 2 strides to match the extents, found 1");
  expect_parse("(2):(1,1)", TIRX_E_PARSE,
               "tirx_layout_parse: at 6: expected 1 stride to match the extents, found more");
  expect_parse("(2):()", TIRX_E_PARSE,
               "tirx_layout_parse: at 5: expected 1 stride to match the extents, found 0");
  expect_parse("():(1)", TIRX_E_PARSE, "tirx_layout_parse: at 4: expected ')'");
  expect_parse("((2),(3)):((1),(1)", TIRX_E_PARSE,
               "tirx_layout_parse: at 18: expected ',' or ')'");
  expect_parse("((2),(3)):((1))", TIRX_E_PARSE,
               "tirx_layout_parse: at 14: expected 2 dims to match the extents, found 1");
  expect_parse("((2),(3)):((1),(1),(1))", TIRX_E_PARSE,
               "tirx_layout_parse: at 18: expected 2 dims to match the extents, found more");
  expect_parse("((2,4),(3)):((1),(1))", TIRX_E_PARSE,
               "tirx_layout_parse: at 15: expected 2 strides in dim 0 to match the extents, found 1");
  expect_parse("((2),(3)):((1),(1,2))", TIRX_E_PARSE,
               "tirx_layout_parse: at 17: expected 1 stride in dim 1 to match the extents, found more");
  expect_parse("((2),(3)):(1,1)", TIRX_E_PARSE, "tirx_layout_parse: at 11: expected '('");
  expect_parse("(2,3):((1),(1))", TIRX_E_PARSE, "tirx_layout_parse: at 7: expected a stride");
  expect_parse("((2),3):((1),(1))", TIRX_E_PARSE, "tirx_layout_parse: at 5: expected '('");
  expect_parse("(((2))):(((1)))", TIRX_E_PARSE,
               "tirx_layout_parse: at 2: expected an extent or ')'");
  expect_parse("((2)(3)):((1),(1))", TIRX_E_PARSE, "tirx_layout_parse: at 4: expected ',' or ')'");
}

Test(parse, malformed_replicas_offsets_and_swizzles) {
  expect_parse("(8):(1)+", TIRX_E_PARSE, "tirx_layout_parse: at 8: expected an offset");
  expect_parse("(8):(1)+[", TIRX_E_PARSE, "tirx_layout_parse: at 9: expected an extent");
  expect_parse("(8):(1)+[]", TIRX_E_PARSE, "tirx_layout_parse: at 9: expected an extent");
  expect_parse("(8):(1)+[2]", TIRX_E_PARSE, "tirx_layout_parse: at 10: expected ':'");
  expect_parse("(8):(1)+[2:]", TIRX_E_PARSE, "tirx_layout_parse: at 11: expected a stride");
  expect_parse("(8):(1)+[2:4@warp", TIRX_E_PARSE, "tirx_layout_parse: at 17: expected ',' or ']'");
  expect_parse("(8):(1)+[0:4]", TIRX_E_PARSE, "tirx_layout_parse: at 9: expected an extent >= 1");
  expect_parse("(8):(1)+[2:4@nope]", TIRX_E_UNKNOWN_AXIS,
               "tirx_layout_parse: at 13: unknown axis 'nope'");
  expect_parse("(8):(1)+5@warp+[2:4]", TIRX_E_PARSE, "tirx_layout_parse: at 15: expected an offset");
  expect_parse("(8):(1)+[2:4]+[2:8]", TIRX_E_PARSE, "tirx_layout_parse: at 14: expected an offset");
  expect_parse("(8):(1)+5@", TIRX_E_PARSE, "tirx_layout_parse: at 10: expected an axis name");
  expect_parse("(8):(1)+--5", TIRX_E_PARSE, "tirx_layout_parse: at 8: expected an offset");
  expect_parse("(8):(1)+5@m+3@m", TIRX_E_INVALID_ARG, "tirx_layout_parse: offset on axis m given twice");
  expect_parse("(8):(1)+5+3@lane-1@laneid", TIRX_E_INVALID_ARG,
               "tirx_layout_parse: offset on axis laneid given twice");
  expect_parse("(8):(1)^", TIRX_E_PARSE, "tirx_layout_parse: at 8: expected 'sw'");
  expect_parse("(8):(1)^s", TIRX_E_PARSE, "tirx_layout_parse: at 8: expected 'sw'");
  expect_parse("(8):(1)^sw", TIRX_E_PARSE, "tirx_layout_parse: at 10: expected '('");
  expect_parse("(8):(1)^sw(48,2)", TIRX_E_PARSE,
               "tirx_layout_parse: at 11: expected swizzle bytes 32, 64 or 128");
  expect_parse("(8):(1)^sw(0,2)", TIRX_E_PARSE,
               "tirx_layout_parse: at 11: expected swizzle bytes 32, 64 or 128");
  expect_parse("(8):(1)^sw(128)", TIRX_E_PARSE, "tirx_layout_parse: at 14: expected ','");
  expect_parse("(8):(1)^sw(128,3)", TIRX_E_PARSE,
               "tirx_layout_parse: at 15: expected element bytes 1, 2, 4 or 8");
  expect_parse("(8):(1)^sw(128,x)", TIRX_E_PARSE,
               "tirx_layout_parse: at 15: expected element bytes 1, 2, 4 or 8");
  expect_parse("(8):(1)^sw(128,2", TIRX_E_PARSE, "tirx_layout_parse: at 16: expected ')'");
  expect_parse("(8):(1)^sw(128,2)+1", TIRX_E_PARSE, "tirx_layout_parse: at 17: expected end of text");
}

Test(parse, numbers_limits_and_arguments) {
  expect_parse("(9223372036854775808):(1)", TIRX_E_OVERFLOW,
               "tirx_layout_parse: at 1: integer does not fit in int64");
  expect_parse("(2):(-9223372036854775809)", TIRX_E_OVERFLOW,
               "tirx_layout_parse: at 5: integer does not fit in int64");
  expect_parse("(2):(1)+99999999999999999999@m", TIRX_E_OVERFLOW,
               "tirx_layout_parse: at 8: integer does not fit in int64");
  /* -2^63 is a valid integer but no valid stride: |stride| overflows. */
  expect_parse("(2):(-9223372036854775808)", TIRX_E_OVERFLOW,
               "tirx_layout_parse: a coordinate of the layout overflows int64");
  expect_parse("(4611686018427387904,4):(1,1)", TIRX_E_OVERFLOW,
               "tirx_layout_parse: the product of the extents overflows int64");
  expect_parse("(3):(4611686018427387904)", TIRX_E_OVERFLOW,
               "tirx_layout_parse: a coordinate of the layout overflows int64");
  expect_null(tirx_layout_parse(NULL, "(8):(1)"), TIRX_E_NULL_ARG, "tirx_layout_parse: arena is NULL");
  expect_null(tirx_layout_parse(A, NULL), TIRX_E_NULL_ARG, "tirx_layout_parse: text is NULL");

  /* 64 iters are accepted, the 65th is not. */
  char text[1024], *p = text;
  p += sprintf(p, "(");
  for (int i = 0; i < 65; i++) p += sprintf(p, i ? ",1" : "1");
  sprintf(p, "):()");
  expect_parse(text, TIRX_E_LIMIT, "tirx_layout_parse: at 129: expected at most 64 shard iters");
  p = text + sprintf(text, "(");
  for (int i = 0; i < 64; i++) p += sprintf(p, i ? ",1" : "1");
  p += sprintf(p, "):(");
  for (int i = 0; i < 64; i++) p += sprintf(p, i ? ",0" : "0");
  sprintf(p, ")");
  cr_assert_eq(tirx_layout_num_iters(parse_ok(text)), 64);
  p = text + sprintf(text, "(");
  for (int i = 0; i < 17; i++) p += sprintf(p, i ? ",()" : "()");
  sprintf(p, "):()");
  expect_parse(text, TIRX_E_LIMIT, "tirx_layout_parse: at 49: expected at most 16 dims");
  p = text + sprintf(text, "(1):(1)+[");
  for (int i = 0; i < 65; i++) p += sprintf(p, i ? ",1:1" : "1:1");
  sprintf(p, "]");
  expect_parse(text, TIRX_E_LIMIT, "tirx_layout_parse: at 265: expected at most 64 replica iters");

  /* Text of TIRX_LAYOUT_MAX_TEXT characters is read; one more is refused. */
  size_t n = TIRX_LAYOUT_MAX_TEXT;
  char *big = malloc(n + 2);
  memset(big, ' ', n + 1);
  memcpy(big, "(8):(1)", 7);
  big[n] = '\0';
  cr_assert_not_null(tirx_layout_parse(A, big), "%s", tirx_last_error());
  big[n] = ' ';
  big[n + 1] = '\0';
  expect_parse(big, TIRX_E_LIMIT, "tirx_layout_parse: text is longer than 65536 characters");
  free(big);
}

/*
 * Every prefix and thousands of one-byte mutations of valid texts either parse to a layout
 * that round-trips or fail with a message from the parser; none crashes. The prefixes are
 * copied to their own allocation so that a read past the NUL would show under a sanitizer.
 */
Test(parse, prefixes_and_mutations_never_crash) {
  static const char *const texts[] = {
      "(8,2,4,2):(4@laneid,1@warpid,1@laneid,1@reg)+[2:4@warpid,2:1@cta]+5@warpid+-3@m",
      "((2,8),(3,8),()):((192,8),(64,1),())+[3:-2@pid]^sw(128,2)",
      "  ( 2 , 3 ) : ( -1 @ lane , 0 ) - 4 @ warp ^ sw ( 32 , 8 ) ",
  };
  static const char alphabet[] = "()[],:+-^@ 0123456789swmlaneidrg\t\x01\xff";
  uint64_t seed = 0xf022;
  for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
    size_t n = strlen(texts[t]);
    for (size_t k = 0; k <= n; k++) {
      char *prefix = malloc(k + 1);
      memcpy(prefix, texts[t], k);
      prefix[k] = '\0';
      tirx_clear_error();
      tirx_layout *l = tirx_layout_parse(A, prefix);
      if (l)
        assert_round_trip(l);
      else
        cr_assert(strncmp(tirx_last_error(), "tirx_layout_parse: ", 19) == 0, "%s",
                  tirx_last_error());
      free(prefix);
    }
    for (int m = 0; m < 3000; m++) {
      char buf[256];
      memcpy(buf, texts[t], n + 1);
      for (int e = 0, edits = (int)test_rand_range(&seed, 1, 3); e < edits; e++)
        buf[test_rand(&seed) % n] = alphabet[test_rand(&seed) % (sizeof alphabet - 1)];
      tirx_clear_error();
      tirx_layout *l = tirx_layout_parse(A, buf);
      if (l)
        assert_round_trip(l);
      else
        cr_assert(strncmp(tirx_last_error(), "tirx_layout_parse: ", 19) == 0, "%s",
                  tirx_last_error());
    }
  }
}
