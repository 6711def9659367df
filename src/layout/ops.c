/* Placeholder: filled in by the work on src/layout/ops.c. */
#include "layout_internal.h"
typedef int tirx__ops_placeholder;
