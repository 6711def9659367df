/* Placeholder: filled in by the work on src/layout/scope.c. */
#include "layout_internal.h"
typedef int tirx__scope_placeholder;
