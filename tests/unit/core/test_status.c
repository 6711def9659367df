/* Status table, last-error message, arena and axis registry. */
#include "../helpers.h"

Test(status, names_and_strings) {
  cr_assert_str_eq(tirx_status_name(TIRX_OK), "TIRX_OK");
  cr_assert_str_eq(tirx_status_name(TIRX_E_PARSE), "TIRX_E_PARSE");
  cr_assert_str_eq(tirx_status_str(TIRX_E_NO_DEVICE), "no CUDA device available");
  cr_assert_str_eq(tirx_status_name((tirx_status)999), "TIRX_UNKNOWN_STATUS");
  cr_assert_str_eq(tirx_status_str((tirx_status)-1), "unknown status code");
}

Test(status, last_error_is_per_call_and_clearable) {
  tirx_clear_error();
  cr_assert_str_eq(tirx_last_error(), "");
  cr_assert_eq(tirx_last_status(), TIRX_OK);
  tirx_axis ax;
  expect_error(tirx_axis_lookup("nope", &ax), TIRX_E_UNKNOWN_AXIS,
               "tirx_axis_lookup: unknown axis 'nope'");
  tirx_clear_error();
  cr_assert_str_eq(tirx_last_error(), "");
}

Test(axis, builtins_and_aliases) {
  tirx_axis ax;
  cr_assert_eq(tirx_axis_lookup("laneid", &ax), TIRX_OK);
  cr_assert_eq(ax, TIRX_AXIS_LANEID);
  cr_assert_eq(tirx_axis_lookup("lane", &ax), TIRX_OK);
  cr_assert_eq(ax, TIRX_AXIS_LANEID);
  cr_assert_eq(tirx_axis_lookup("warp", &ax), TIRX_OK);
  cr_assert_eq(ax, TIRX_AXIS_WARPID);
  cr_assert_str_eq(tirx_axis_name(TIRX_AXIS_TID_IN_WG), "tid_in_wg");
  cr_assert_null(tirx_axis_name(-1));
  cr_assert_null(tirx_axis_name(TIRX_AXIS_MAX));
  cr_assert(tirx_axis_is_thread(TIRX_AXIS_WARPID));
  cr_assert(!tirx_axis_is_thread(TIRX_AXIS_M));
  cr_assert(!tirx_axis_is_thread(TIRX_AXIS_REG));
}

Test(axis, register_backend_axes) {
  tirx_axis lane, col, again;
  cr_assert_eq(tirx_axis_register("Lane", &lane), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_axis_register("Col", &col), TIRX_OK);
  cr_assert_eq(tirx_axis_register("Lane", &again), TIRX_OK);
  cr_assert_eq(lane, again);
  cr_assert_neq(lane, col);
  cr_assert_str_eq(tirx_axis_name(col), "Col");
  cr_assert(lane >= TIRX_AXIS_BUILTIN_COUNT);
  expect_error(tirx_axis_register("9x", &col), TIRX_E_INVALID_ARG,
               "tirx_axis_register: name '9x' is not an identifier of 1 to 31 characters");
  expect_error(tirx_axis_register(NULL, &col), TIRX_E_NULL_ARG, "tirx_axis_register: name is NULL");
  expect_error(tirx_axis_register("ok", NULL), TIRX_E_NULL_ARG, "tirx_axis_register: out is NULL");
}

Test(axis, registry_fills_up_cleanly) {
  tirx_axis ax;
  char name[16];
  tirx_status st = TIRX_OK;
  for (int i = 0; i < 40 && st == TIRX_OK; i++) {
    snprintf(name, sizeof name, "ax%d", i);
    st = tirx_axis_register(name, &ax);
  }
  cr_assert_eq(st, TIRX_E_LIMIT);
  cr_assert_str_eq(tirx_last_error(), "tirx_axis_register: all 32 axes are in use");
}

Test(arena, allocates_and_frees) {
  tirx_arena *a = tirx_arena_create();
  cr_assert_not_null(a);
  cr_assert_eq(tirx_arena_bytes(a), 0);
  int64_t shape[2] = {100, 100};
  for (int i = 0; i < 1000; i++) cr_assert_not_null(tirx_layout_row_major(a, 2, shape));
  cr_assert_gt(tirx_arena_bytes(a), 0);
  tirx_arena_destroy(a);
  tirx_arena_destroy(NULL);
}
