/*
 * tirx/scope.h: execution scopes (paper sections 4.1 and 4.2).
 *
 * A scope is (active thread set A, team kind k). A is a layout over thread axes: every thread
 * of the launch is the point (laneid, warpid, cta) and A lists the active ones. Filters narrow
 * A to a contiguous range or a point on one axis; a team switch changes k and splits A into
 * A_inter (the team instances) and A_intra (the threads of one team), which must be the same
 * pattern for every team.
 *
 * Rules (paper 4.1), checked by the functions below:
 *   - a filter only shrinks A (an empty result is an error),
 *   - a filter is a contiguous range [lo, hi) or a point (hi = lo + 1) on one axis,
 *   - a team switch needs every non-empty team to have the same intra-team thread pattern.
 *
 * Axes a filter may name: laneid, warpid, wid_in_wg, wgid, tid_in_wg, tid, cta, cbx (the
 * CTA's rank in its cluster), cluster. Scopes live in an arena and are immutable.
 */
#ifndef TIRX_SCOPE_H
#define TIRX_SCOPE_H

#include "layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The team kinds: the unit of threads a primitive call is issued by. */
typedef enum tirx_team {
  TIRX_TEAM_THREAD = 0,
  TIRX_TEAM_WARP = 1,
  TIRX_TEAM_WARPGROUP = 2,
  TIRX_TEAM_CTA = 3,
  TIRX_TEAM_CLUSTER = 4
} tirx_team;

/* "thread", "warp", "warpgroup", "cta", "cluster"; NULL for other values. */
TIRX_API const char *tirx_team_name(tirx_team k);

/* An execution scope: (active thread set, team kind); immutable, it lives in an arena. */
typedef struct tirx_scope tirx_scope;

/*
 * The entry scope of a kernel: every thread of a launch with warps_per_cta warps per CTA,
 * cluster_size CTAs per cluster and num_clusters clusters; team kind CTA. When the grid is
 * not known at build time pass num_clusters = 1: CTA-level rules do not depend on it.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (a count < 1, warps_per_cta > 32,
 * cluster_size > 16), TIRX_E_OVERFLOW.
 */
TIRX_API tirx_scope *tirx_scope_new(tirx_arena *a, int warps_per_cta, int cluster_size,
                                    int64_t num_clusters);

/*
 * A narrowed to the threads whose coordinate on axis lies in [lo, hi); the team kind is
 * unchanged. Errors: TIRX_E_UNKNOWN_AXIS (not a thread axis), TIRX_E_INVALID_ARG (lo >= hi,
 * lo < 0), TIRX_E_SCOPE (the result is empty, or the active set on that axis is not a range
 * that a contiguous filter can narrow, or the teams of the current kind would no longer be
 * uniform, or wid_in_wg, wgid or tid_in_wg with warps_per_cta not a multiple of 4: the message
 * says which).
 */
TIRX_API tirx_scope *tirx_scope_filter(tirx_arena *a, const tirx_scope *s, tirx_axis axis,
                                       int64_t lo, int64_t hi);

/*
 * The same active set with team kind k, decomposed into (A_inter, A_intra). Errors:
 * TIRX_E_INVALID_ARG (k), TIRX_E_SCOPE when the teams would not be uniform, e.g. the warp
 * range [3, 7) under a warpgroup switch: "tirx_scope_team: active warps [3, 7) split
 * warpgroups unevenly: teams would not be uniform", or when warps_per_cta is not a multiple
 * of 4 for a warpgroup team.
 */
TIRX_API tirx_scope *tirx_scope_team(tirx_arena *a, const tirx_scope *s, tirx_team k);

/* The scope's team kind. */
TIRX_API tirx_team tirx_scope_team_kind(const tirx_scope *s);

/* A, A_inter and A_intra as layouts over named thread axes, borrowed from the scope (they
 * live in its arena). A uses laneid, warpid, cta; A_intra and A_inter use the axes natural
 * to the team kind, as in the paper: warpgroup gives (32,4):(1@laneid,1@wid_in_wg) and
 * (4,4):(1@wgid,1@cta). An axis range that crosses a digit (tid_in_wg [0, 40)) is written on
 * the composite axis. */
TIRX_API const tirx_layout *tirx_scope_active(const tirx_scope *s);
TIRX_API const tirx_layout *tirx_scope_inter(const tirx_scope *s);
TIRX_API const tirx_layout *tirx_scope_intra(const tirx_scope *s);

/* Active threads, team instances, threads per team. */
TIRX_API int64_t tirx_scope_num_threads(const tirx_scope *s);
TIRX_API int64_t tirx_scope_num_teams(const tirx_scope *s);
TIRX_API int64_t tirx_scope_team_size(const tirx_scope *s);

/* Whether the thread (laneid, warpid, cta) is active. False for out-of-range coordinates. */
TIRX_API bool tirx_scope_contains(const tirx_scope *s, int64_t lane, int64_t warp, int64_t cta);

/* The team instance (0-based, in A_inter order) and the rank within it of an active thread:
 * the flat indices x of A_inter and y of A_intra (last iter fastest) whose points add up to
 * the thread. Errors: TIRX_E_OUT_OF_RANGE when the thread is not active. */
TIRX_API tirx_status tirx_scope_locate(const tirx_scope *s, int64_t lane, int64_t warp,
                                       int64_t cta, int64_t *team, int64_t *rank);

/* "A=(32,4):(1@laneid,1@warpid) team=warp inter=(4):(1@warpid) intra=(32):(1@laneid)";
 * malloc'ed, the caller frees it. */
TIRX_API char *tirx_scope_str(const tirx_scope *s);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_SCOPE_H */
