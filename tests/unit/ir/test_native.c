/* src/ir/native.c: every generic op is complete and its formats name only the operands it has;
 * the prelude fragments (generic and the registered families') are well formed. */
#include "../helpers.h"
#include "dispatch/dispatch.h"
#include "ir/ir.h"

TestSuite(native);

static int nops(const tirx__native_op *r) {
  int n = 0;
  while (n < TIRX__NATIVE_MAX_OPS && r->ops[n].kind != TIRX__OPND_NONE) n++;
  return n;
}

static void check_format(const tirx__native_op *r, const char *f, int n) {
  if (!f) return;
  for (; *f; f++) {
    if (*f != '$') continue;
    f++;
    cr_assert(*f == 'n' || *f == 'h' || (*f >= '0' && *f < '0' + n),
              "%s: format names $%c, the op has %d operands", r->name, *f, n);
  }
}

Test(native, ops_complete) {
  int count = 0;
  for (const tirx__native_op *const *p = tirx__native_generic_ops; *p; p++, count++) {
    const tirx__native_op *r = *p;
    cr_assert(r->name && r->helper, "op %d has no name or helper", count);
    cr_assert((r->print_fmt != NULL) != (r->print != NULL), "%s: one print format or function",
              r->name);
    cr_assert((r->emit_fmt != NULL) != (r->emit != NULL), "%s: one emit format or function",
              r->name);
    cr_assert_gt(r->size, 0, "%s: a payload", r->name);
    int n = nops(r);
    for (int i = 0; i < n; i++) {
      cr_assert_lt(r->ops[i].at, r->size, "%s: operand %d", r->name, i);
      if (r->ops[i].kind == TIRX__OPND_LOADS)
        cr_assert_lt(r->ops[i].count, r->size, "%s: count of %d", r->name, i);
    }
    check_format(r, r->print_fmt, n);
    check_format(r, r->emit_fmt, n);
    cr_assert_eq(r->need >> TIRX__FEAT_COUNT, 0, "%s: need 0x%x is not a feature set", r->name,
                 (unsigned)r->need);
    /* Every feature of the row exists on some target: sm_90a has all but tcgen05. */
    cr_assert_eq(r->need & ~tirx__arch_features(90, 'a'), 0, "%s: need 0x%x", r->name,
                 (unsigned)r->need);
  }
  cr_assert_gt(count, 10);
}

static bool in_fragment(const tirx__prelude_frag *f, const char *name) {
  return f && f->text && strstr(f->text, name) != NULL;
}

/* The helpers of the generic ops that call a fixed name (formats with $h) are in the generic
 * prelude fragments. */
Test(native, helpers_in_prelude) {
  for (const tirx__native_op *const *p = tirx__native_generic_ops; *p; p++) {
    const tirx__native_op *r = *p;
    if (!r->emit_fmt || !strstr(r->emit_fmt, "$h")) continue;
    bool found = false;
    for (int i = 0; tirx__prelude_core[i] && !found; i++)
      found = in_fragment(tirx__prelude_core[i], r->helper);
    for (int i = 0; r->prelude && r->prelude[i] && !found; i++) /* the op's own fragments */
      found = in_fragment(r->prelude[i], r->helper);
    cr_assert(found, "%s: helper %s is not in the prelude", r->name, r->helper);
  }
}

/* Fragments: text or a generator, and no two with one order (the prelude's order is total). */
Test(native, fragments_ordered) {
  const tirx__prelude_frag *all[128];
  int n = 0;
  for (int i = 0; tirx__prelude_core[i]; i++) all[n++] = tirx__prelude_core[i];
  int nrules = 0;
  const tirx__rule *const *rules = tirx__registry(&nrules);
  for (int r = 0; r < nrules; r++)
    for (int i = 0; rules[r]->prelude && rules[r]->prelude[i]; i++) {
      bool dup = false;
      for (int j = 0; j < n; j++) dup |= all[j] == rules[r]->prelude[i];
      if (!dup && n < 128) all[n++] = rules[r]->prelude[i];
    }
  int listed = n;
  for (const tirx__native_op *const *p = tirx__native_generic_ops; *p; p++)
    for (int i = 0; (*p)->prelude && (*p)->prelude[i]; i++) { /* the generic ops' own */
      bool dup = false;
      for (int j = 0; j < n; j++) dup |= all[j] == (*p)->prelude[i];
      if (!dup && n < 128) all[n++] = (*p)->prelude[i];
    }
  for (int i = 0; i < n; i++) {
    cr_assert((all[i]->text != NULL) != (all[i]->gen != NULL), "fragment %d", all[i]->order);
    if (i >= listed) {
      cr_assert_eq(all[i]->when, 0, "fragment %d: an op's own fragment goes by use", all[i]->order);
      for (int j = i + 1; j < n; j++)
        cr_assert_neq(all[i]->order, all[j]->order, "two fragments of order %d", all[i]->order);
      continue;
    }
    cr_assert_neq(all[i]->when, 0, "fragment %d: a listed fragment goes by section",
                  all[i]->order);
    for (int j = i + 1; j < n; j++)
      cr_assert_neq(all[i]->order, all[j]->order, "two fragments of order %d", all[i]->order);
  }
}
