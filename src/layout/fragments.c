/* Placeholder: filled in by the work on src/layout/fragments.c. */
#include "layout_internal.h"
typedef int tirx__fragments_placeholder;
