// The HTML reports of `kiln bench --html` and `kiln profile --html`: one self-contained file each
// (inline CSS and SVG, no script, nothing fetched), drawn from the same JSON that --json writes.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace kiln::report {

// `report`: {"date", "threads", "iters", "warmup", "peer", "command", "records": [...]} as bench writes it,
// and "sweeps": [{"origin": TEXT, "sweep": SWEEP}, ...] for the sweep curves.
std::string bench_html(const nlohmann::json& report);
// Its latency table and chart when report["device"] is a GPU: kiln compiled there beside each PyTorch
// mode of --peer torch, and best torch / kiln (html_device.cpp).
std::string device_bench_section(const nlohmann::json& report);

// Charts of one sweep with the chosen route marked at each size: what `kiln sweep softmax --json` writes
// (GB/s against row width per route, the copy bandwidth dashed, and the attention table) or what
// `kiln sweep gemm --json` writes (GFLOP/s against M per choice, one chart per N, K and epilogue).
// `origin` says where the data came from (a file, the stored calibration).
std::string sweep_section(const nlohmann::json& sweep, const std::string& origin);
// The page's start up to <body>, with the reports' shared style.
std::string html_head(const std::string& title);
// A page holding sweep_section alone (`kiln sweep ... --html`).
std::string sweep_html(const nlohmann::json& sweep, const std::string& title);
// `report`: what `kiln profile --json` writes.
std::string profile_html(const nlohmann::json& report);

}  // namespace kiln::report
