/*
 * tools/dump.h: `tirx dump`, the dispatch report and generated source of built kernels,
 * read from a TIRX_DUMP_DIR directory or built in-process from the library's examples.
 * Part of the tirx tool; the unit tests call it directly.
 */
#ifndef TIRX_TOOLS_DUMP_H
#define TIRX_TOOLS_DUMP_H

#include <stdio.h>

/* The usage lines of `tirx dump`, for the tool's help text. */
extern const char tirx_dump_usage[];

/* Runs `tirx dump` with the arguments after "dump" (argc of them), printing to out and the
 * errors to err. Returns the exit status: 0 success, 1 failure (no such directory, no kernel
 * found, a build or compile error), 2 usage error. */
int tirx_dump_main(int argc, const char *const *argv, FILE *out, FILE *err);

/* The most bytes printed of one dump file (more is cut, with a note); 64 MiB. */
#define TIRX_DUMP_MAX_BYTES ((size_t)64 << 20)

#endif
