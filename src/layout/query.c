/* Placeholder: filled in by the work on src/layout/query.c. */
#include "layout_internal.h"
typedef int tirx__query_placeholder;
