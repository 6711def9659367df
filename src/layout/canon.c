/* Placeholder: filled in by the work on src/layout/canon.c. */
#include "layout_internal.h"
typedef int tirx__canon_placeholder;
