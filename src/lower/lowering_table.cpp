// The lowering table is a header-only template (lowering_table.h); this file anchors the module.
#include "lower/lowering_table.h"
