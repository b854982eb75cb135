// `kiln bench --device cuda`: kiln compiled on the GPU beside PyTorch (--peer torch: scripts/torch_peer.py,
// run once after kiln's own measurements, in the same command). cmd_bench.cpp drives it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/options.h"
#include "report/torch_peer.h"

namespace kiln::tools {

// The modes torch_peer.py times, in the table's order.
inline const std::vector<std::string> kTorchModes = {"eager", "default", "reduce-overhead"};

// The dtype PyTorch runs at: kiln's precision on the device.
std::string torch_dtype(const Options& options);

// Runs torch_peer.py for every record's model it can build at the record's sizes, with kiln's iteration
// counts, and adds its times to the records (a record it cannot serve gets "torch_error").
void add_torch_peer(std::vector<nlohmann::json>& records, const report::TorchLocation& torch, const Options& options,
                    int iters, int warmup, double budget_s);

// One markdown row per record: kiln on the device, each torch mode, best torch / kiln, compile times, accuracy.
void print_device_table(const std::vector<nlohmann::json>& records, const std::string& device);

}  // namespace kiln::tools
