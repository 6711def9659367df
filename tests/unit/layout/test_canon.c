/* Tests for src/layout (placeholder, filled in with the work on this part). */
#include "../helpers.h"
Test(placeholder_canon, empty) { cr_assert(true); }
