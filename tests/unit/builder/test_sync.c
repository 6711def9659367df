#include "../helpers.h"
