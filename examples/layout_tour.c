/*
 * layout_tour: the layout algebra and execution scopes at work, with no GPU needed.
 *
 * Prints the paper's examples: a tensor-core tile with replicas and an offset, the S0S1 and
 * S0R sharding of a 64x128 matrix on a 2x2 device mesh, a slice as dispatch computes it, a
 * 128-byte swizzled shared-memory tile, the wgmma accumulator fragment, and the execution
 * scope decompositions of section 4 (including the warp range that must be rejected).
 */
#include <stdio.h>
#include <stdlib.h>

#include <tirx.h>

static int failures;

static void show(const char *what, const tirx_layout *l) {
  if (!l) {
    printf("%-28s error: %s\n", what, tirx_last_error());
    failures++;
    return;
  }
  char *s = tirx_layout_str(l);
  printf("%-28s %s\n", what, s);
  free(s);
}

static void show_points(const tirx_layout *l, int64_t x) {
  tirx_coord pts[8];
  int64_t n = 0;
  if (tirx_layout_eval(l, x, pts, 8, &n) != TIRX_OK) {
    printf("  eval failed: %s\n", tirx_last_error());
    failures++;
    return;
  }
  printf("  L(%lld) = {", (long long)x);
  for (int64_t k = 0; k < n; k++) {
    printf(k ? ", (" : "(");
    int first = 1;
    for (tirx_axis ax = 0; ax < TIRX_AXIS_BUILTIN_COUNT; ax++)
      if (pts[k].v[ax] != 0) {
        printf(first ? "%s=%lld" : ", %s=%lld", tirx_axis_name(ax), (long long)pts[k].v[ax]);
        first = 0;
      }
    printf(")");
  }
  printf("}\n");
}

static void show_scope(const char *what, const tirx_scope *s) {
  if (!s) {
    printf("%-28s rejected: %s\n", what, tirx_last_error());
    return;
  }
  char *str = tirx_scope_str(s);
  printf("%-28s %s\n", what, str ? str : "(null)");
  free(str);
}

int main(void) {
  tirx_arena *a = tirx_arena_create();
  if (!a) return 1;
  printf("tirx %s: layouts and scopes\n\n", tirx_version());

  /* Paper 3.2: a logical 8x16 tile over 2 warps x 32 lanes x 2 registers, replicated on
   * warps 4 apart, offset by 5 warps. */
  tirx_layout *tile = tirx_layout_parse(a, "(8,2,4,2):(4@laneid,1@warpid,1@laneid,1@reg)"
                                           "+[2:4@warpid]+5@warpid");
  show("tensor-core tile", tile);
  if (tile) {
    show_points(tile, 0);
    show_points(tile, 15);
  }

  /* S0S1 and S0R on a 2x2 mesh. */
  tirx_layout *s0s1 = tirx_layout_parse(a, "(2,32,2,64):(1@pid,128@m,2@pid,1@m)");
  tirx_layout *s0r = tirx_layout_parse(a, "(2,32,128):(1@pid,128@m,1@m)+[2:2@pid]");
  show("S0S1 on 2x2", s0s1);
  show("S0R on 2x2", s0r);
  if (s0r) show_points(s0r, 64 * 128 - 1);

  /* Canonicalize and slice, as dispatch does. */
  tirx_layout *split = tirx_layout_parse(a, "(2,4):(4@m,1@m)");
  show("(2,4):(4,1) canonical", split ? tirx_layout_canonicalize(a, split) : NULL);
  tirx_layout *sec51 = tirx_layout_parse(a, "(2,8,3,8):(192@m,8@m,64@m,1@m)");
  show("section 5.1 layout", sec51);
  if (sec51) {
    tirx_layout *sl = tirx_layout_slice(a, sec51, 2, (int64_t[]){16, 24}, (int64_t[]){8, 8},
                                        (int64_t[]){8, 16});
    show("  slice [8:16, 8:24]", sl);
    tirx_layout *bad = tirx_layout_slice(a, sec51, 2, (int64_t[]){16, 24}, (int64_t[]){4, 4},
                                         (int64_t[]){8, 8});
    printf("  slice [4:12, 4:12]          %s\n", bad ? "unexpectedly representable" : tirx_last_error());
  }

  /* A 128-byte swizzled bf16 tile for TMA/wgmma and the wgmma accumulator. */
  show("smem 64x64 bf16 sw128", tirx_layout_smem_tile(a, 64, 64, 2, 128));
  show("wgmma m64n16 accumulator", tirx_layout_wgmma_acc(a, 64, 16));
  tirx_layout *col = tirx_layout_col_major(a, 2, (int64_t[]){24, 24});
  show("24x24 column-major", col);
  if (col) printf("  vector width (f32, 16 B)    %lld elements\n",
                  (long long)tirx_layout_vector_width(col, 4, 16));

  /* Paper 4.2: 16 warps x 4 CTAs. */
  printf("\n");
  tirx_scope *entry = tirx_scope_new(a, 16, 1, 4);
  show_scope("entry", entry);
  show_scope("filter warpid == 0", tirx_scope_filter(a, entry, TIRX_AXIS_WARPID, 0, 1));
  show_scope("team warp", tirx_scope_team(a, entry, TIRX_TEAM_WARP));
  show_scope("team warpgroup", tirx_scope_team(a, entry, TIRX_TEAM_WARPGROUP));
  tirx_scope *w37 = tirx_scope_filter(a, entry, TIRX_AXIS_WARPID, 3, 7);
  show_scope("filter warpid in [3,7)", w37);
  show_scope("  then team warpgroup", w37 ? tirx_scope_team(a, w37, TIRX_TEAM_WARPGROUP) : NULL);

  tirx_arena_destroy(a);
  if (failures) {
    printf("\n%d step(s) failed\n", failures);
    return 1;
  }
  printf("\nlayout_tour: ok\n");
  return 0;
}
