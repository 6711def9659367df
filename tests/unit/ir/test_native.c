/* src/ir/native.c: every row of the native table is complete and its formats name only the
 * operands it has. */
#include "../helpers.h"
#include "ir/ir.h"

TestSuite(native);

static int nops(const tirx__native_info *r) {
  int n = 0;
  while (n < TIRX__NATIVE_MAX_OPS && r->ops[n].kind != TIRX__OPND_NONE) n++;
  return n;
}

static void check_format(const tirx__native_info *r, const char *f, int n) {
  if (!f) return;
  for (; *f; f++) {
    if (*f != '$') continue;
    f++;
    cr_assert(*f == 'n' || *f == 'h' || (*f >= '0' && *f < '0' + n),
              "%s: format names $%c, the row has %d operands", r->name, *f, n);
  }
}

Test(native, rows_complete) {
  for (int op = 0; op < TIRX__NV_COUNT; op++) {
    const tirx__native_info *r = tirx__native_row(op);
    cr_assert(r && r->name && r->helper, "row %d has no name or helper", op);
    cr_assert((r->print_fmt != NULL) != (r->print != NULL), "%s: one print format or function",
              r->name);
    cr_assert((r->emit_fmt != NULL) != (r->emit != NULL), "%s: one emit format or function",
              r->name);
    int n = nops(r);
    for (int i = 0; i < n; i++) {
      cr_assert_lt(r->ops[i].at, sizeof(tirx__native_stmt), "%s: operand %d", r->name, i);
      if (r->ops[i].kind == TIRX__OPND_LOADS)
        cr_assert_lt(r->ops[i].count, sizeof(tirx__native_stmt), "%s: count of %d", r->name, i);
    }
    check_format(r, r->print_fmt, n);
    check_format(r, r->emit_fmt, n);
    cr_assert_eq(r->need >> TIRX__FEAT_COUNT, 0, "%s: need 0x%x is not a feature set", r->name,
                 (unsigned)r->need);
    /* Every feature of the row exists on some target: sm_90a has all but tcgen05. */
    cr_assert_eq(r->need & ~tirx__arch_features(90, 'a'), 0, "%s: need 0x%x", r->name,
                 (unsigned)r->need);
  }
  cr_assert_null(tirx__native_row(-1));
  cr_assert_null(tirx__native_row(TIRX__NV_COUNT));
}

/* The helpers of the rows that call a fixed name (formats with $h) are in the prelude. */
Test(native, helpers_in_prelude) {
  for (int op = 0; op < TIRX__NV_COUNT; op++) {
    const tirx__native_info *r = tirx__native_row(op);
    if (!r->emit_fmt || !strstr(r->emit_fmt, "$h")) continue;
    const char *const parts[] = {tirx__prelude, tirx__prelude_tma, tirx__prelude_cp_async,
                                 tirx__prelude_sync};
    bool found = false;
    for (int i = 0; i < 4 && !found; i++) found = strstr(parts[i], r->helper) != NULL;
    cr_assert(found, "%s: helper %s is not in the prelude", r->name, r->helper);
  }
}
