/* Placeholder: filled in by the work on src/layout/parse.c. */
#include "layout_internal.h"
typedef int tirx__parse_placeholder;
