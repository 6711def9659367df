/*
 * tools/warmup.h: `tirx warmup`, the kernel library's ops compiled into the disk cache for a
 * list of shapes, without a GPU (tirx_kernels_prepare_begin: each op prepares the kernels it
 * would launch). Part of the tirx tool.
 */
#ifndef TIRX_TOOLS_WARMUP_H
#define TIRX_TOOLS_WARMUP_H

#include <stdio.h>

/* The usage lines of `tirx warmup`, for the tool's help text. */
extern const char tirx_warmup_usage[];

/* Runs `tirx warmup` with the arguments after "warmup" (argc of them), progress and results to
 * out, errors to err. Returns the exit status: 0 success, 1 a shape failed (or a file cannot be
 * read), 2 usage error (an unknown op, key or value names the file and line). */
int tirx_warmup_main(int argc, const char *const *argv, FILE *out, FILE *err);

#endif
