// The HTML reports of `kiln bench --html` and `kiln profile --html`: one self-contained file each
// (inline CSS and SVG, no script, nothing fetched), drawn from the same JSON that --json writes.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace kiln::report {

// `report`: {"date", "threads", "iters", "warmup", "peer", "command", "records": [...]} as bench writes it.
std::string bench_html(const nlohmann::json& report);
// `report`: what `kiln profile --json` writes.
std::string profile_html(const nlohmann::json& report);

}  // namespace kiln::report
