// The CPU as a device: its key in tuning stores, where its tuning files live, and the softmax router's
// calibration measured on it.
#pragma once
#include <string>

#include "kiln/graph.h"
#include "kiln/options.h"
#include "schedule/softmax_route.h"

namespace kiln::backend::cpu {

// "<cpu model> | <feature tier> | <threads> threads": the threads are options.threads, or OpenMP's
// count when that is 0.
std::string device_key(const Options& options);

// <cache dir>/tuning.sqlite, the one tuning store (the cache dir as the kernel cache resolves it).
std::string tuning_db_path(const Options& options);

// This device's calibration: the thresholds `kiln sweep softmax --store` measured, from the tuning
// database tuning_db_path(options) under device_key(options), with source "calibration <db path>";
// without one (or with an unusable file) the defaults, and `why` (if given) says why no calibration
// applied. Never throws for a missing or bad database.
schedule::RoutingThresholds routing_thresholds(const Options& options, std::string* why = nullptr);

// routing_policy on this device's thresholds + route_softmax_nodes + explain_routes (kiln compile --explain).
std::string explain_softmax_routes(const Graph& g, const Options& options);

}  // namespace kiln::backend::cpu
