// PyTorch as a benchmark peer on the GPU: scripts/torch_peer.py builds the zoo's architectures in torch
// (random weights) and times each in eager and torch.compile modes at batch 1, printing one JSON line per
// (model, dtype, mode). `kiln bench --device cuda --peer torch` runs it once, after kiln's own
// measurements, in the same command, and puts its times beside kiln's. kiln installs nothing: a python3
// without a CUDA build of torch is a UserError saying so.
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln::report {

struct TorchLocation {
  std::filesystem::path python;  // the interpreter (--python, else python3 on PATH)
  std::filesystem::path script;  // scripts/torch_peer.py
  std::string version;           // torch.__version__
  std::string gpu;               // torch.cuda.get_device_name()
};

// Finds the interpreter and the script and asks the interpreter whether it has torch (with CUDA) and
// transformers; anything missing is a UserError naming it. `python` empty: python3 on PATH.
TorchLocation locate_torch(const std::string& python);

// The models torch_peer.py builds, with the sizes of its fixed inputs (symbol -> size).
const std::map<std::string, std::map<std::string, int64_t>>& torch_peer_models();
// Empty when torch_peer.py builds `model` and runs it at `dims` (a bench record's sizes); else why not.
std::string torch_peer_refuses(const std::string& model, const nlohmann::json& dims);

struct TorchRequest {
  std::vector<std::string> models;  // names of torch_peer_models()
  std::vector<std::string> dtypes;  // "fp32", "bf16"
  std::vector<std::string> modes;   // "eager", "default", "reduce-overhead"
  int iters = 30, warmup = 10;
  double budget_s = 900;  // the script's whole budget; jobs it cannot fit are recorded as skipped
};

struct TorchResults {
  std::map<std::string, std::vector<nlohmann::json>> lines;  // by model name, in the script's order
  std::string failure;  // the script could not start or exited with a failure (its messages are above)
};
// Runs the script (its stderr goes to kiln's; it writes its own files under `out_dir`) and collects
// its JSON lines. What it printed before a failure is kept.
TorchResults run_torch_peer(const TorchLocation& where, const TorchRequest& request,
                            const std::filesystem::path& out_dir);

// A bench record with torch's lines for its model (at `dtype`) beside kiln's: "torch" {mode: {median_ms,
// min_ms, compile_s, error}}, the best mode and its median, and "torch_vs_kiln" = best torch median /
// kiln's compiled median (above 1: kiln is faster). No usable line: "torch_error" says why.
void add_torch_times(nlohmann::json& record, const std::vector<nlohmann::json>& lines, const std::string& dtype);

}  // namespace kiln::report
