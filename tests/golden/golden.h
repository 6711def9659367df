/*
 * The golden tests: the generated CUDA source of every kernel the library, the examples, the
 * benches and the fuzz corpus build, compared byte for byte with tests/golden/expected/.
 *
 * A case is a name and the text it produces: the kernel's source, or for a build that fails,
 * the line "build failed: <message>" (a refused build is as much generated behaviour as a
 * kernel). cases.c enumerates them; golden.c checks or regenerates.
 */
#ifndef TIRX_TESTS_GOLDEN_H
#define TIRX_TESTS_GOLDEN_H

#include <stddef.h>
#include <tirx.h>

typedef struct golden_set golden_set;

/* Adds case `name` (copied) with the source of k, or when k is NULL, "build failed: " and err.
 * Releases k. A name added twice is a fatal error of the case list (golden_set_failed). */
void golden_add_kernel(golden_set *g, const char *name, tirx_kernel *k, const char *err);

/* Adds case `name` with the text (copied). */
void golden_add_text(golden_set *g, const char *name, const char *text);

/* printf-style case names, for the enumerations. */
const char *golden_name(golden_set *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records a fatal problem of the case list itself (not a mismatch). */
void golden_fail(golden_set *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Every case of every group, in a fixed order. */
void golden_cases(golden_set *g);

#endif
