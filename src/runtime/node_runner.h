// Forwarding header: run_node lives with the op registry (src/ops) so passes can fold constants.
#pragma once
#include "ops/node_runner.h"
