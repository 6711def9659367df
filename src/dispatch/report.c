/* The dispatch report: every call's rule, shape and rejected rules, and its text form. */
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"

void tirx__dispatch_report_init(tirx__dispatch_report *r, tirx_arena *a) {
  memset(r, 0, sizeof *r);
  r->arena = a;
}

tirx_status tirx__dispatch_report_add(tirx__dispatch_report *r, const tirx__dispatch_result *res) {
  static const char fn[] = "tirx_dispatch_report";
  if (!r || !res) return tirx__error(TIRX_E_NULL_ARG, "%s: report or result is NULL", fn);
  if (r->n == r->cap) { /* the arena cannot grow a block: move to a new one twice the size */
    int cap = r->cap ? r->cap * 2 : 8;
    tirx__dispatch_result *e = tirx__arena_array(r->arena, (size_t)cap, sizeof *e, fn);
    if (!e) return TIRX_E_NO_MEMORY;
    if (r->n) memcpy(e, r->entries, (size_t)r->n * sizeof *e);
    r->entries = e;
    r->cap = cap;
  }
  r->entries[r->n++] = *res;
  return TIRX_OK;
}

static void entry_text(tirx__strbuf *sb, const tirx__dispatch_result *e) {
  if (e->where) tirx__sb_printf(sb, "[%s] ", e->where);
  tirx__sb_printf(sb, "%s -> ", e->key ? e->key : "?");
  if (e->rule) {
    char *shape = tirx__shape_str(e->rule, &e->shape);
    tirx__sb_printf(sb, "%s %s", e->rule->name, shape ? shape : "?");
    free(shape);
    if (e->forced) tirx__sb_append(sb, " (forced)");
    if (e->fallback) tirx__sb_append(sb, " (fallback)");
  } else {
    tirx__sb_append(sb, "no rule");
  }
  tirx__sb_append(sb, "\n");
  for (int i = 0; i < e->nrejected; i++)
    for (int k = 0; k < e->rejected[i].nreasons; k++)
      tirx__sb_printf(sb, "  rejected %s: %s\n", e->rejected[i].rule->name,
                      e->rejected[i].reasons[k]);
}

char *tirx__dispatch_report_str(const tirx__dispatch_report *r) {
  tirx__strbuf sb = {0};
  tirx__sb_append(&sb, "");
  for (int i = 0; r && i < r->n; i++) entry_text(&sb, &r->entries[i]);
  return tirx__sb_finish(&sb);
}
