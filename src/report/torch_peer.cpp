#include "report/torch_peer.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/locate.h"
#include "support/error.h"

extern char** environ;

namespace kiln::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kInstallHint = "kiln installs nothing: install a CUDA build of PyTorch and transformers for "
                                     "that python3 (pip install torch transformers), or give --python PATH";

// What the interpreter has, as one JSON line (never a traceback: a missing module is a field).
constexpr const char* kProbe = R"(import json
r = {}
try:
    import torch
    r["torch"] = torch.__version__
    r["cuda"] = torch.cuda.is_available()
    r["gpu"] = torch.cuda.get_device_name() if r["cuda"] else None
except Exception as e:
    r["torch"] = None
    r["why"] = "%s: %s" % (type(e).__name__, e)
try:
    import transformers
    r["transformers"] = transformers.__version__
except Exception:
    r["transformers"] = None
print(json.dumps(r))
)";

// Runs `args` (args[0] a path) with stdin from /dev/null and stdout into a pipe, stderr kiln's; calls
// `on_line` for each line it prints. Returns the wait status; `error` says why it could not start.
int run_reading_lines(const std::vector<std::string>& args, const std::function<void(const std::string&)>& on_line,
                      std::string& error) {
  int out[2];
  if (::pipe(out) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addclose(&actions, out[1]);
  std::vector<std::string> owned = args;
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    error = fmt::format("cannot start {}: {}", args[0], std::strerror(rc));
    return -1;
  }
  std::string pending;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
      on_line(pending.substr(0, nl));
  }
  if (!pending.empty()) on_line(pending);
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

bool exited_ok(int status) { return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {}", WTERMSIG(status));
  return fmt::format("wait status {}", status);
}

std::string comma_list(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& item : items) s += (s.empty() ? "" : ",") + item;
  return s;
}

}  // namespace

TorchLocation locate_torch(const std::string& python) {
  TorchLocation where;
  if (python.empty()) {
    auto found = find_on_path("python3");
    if (!found)
      user_error("--peer torch: python3 is not on PATH (PyTorch's peer, scripts/torch_peer.py, runs in it); {}",
                 kInstallHint);
    where.python = *found;
  } else if (python.find('/') == std::string::npos) {
    auto found = find_on_path(python);
    if (!found) user_error("--peer torch: --python {}: not on PATH", python);
    where.python = *found;
  } else {
    if (::access(python.c_str(), X_OK) != 0) user_error("--peer torch: --python {}: not an executable file", python);
    where.python = python;
  }
  auto script = find_project_file("scripts/torch_peer.py");
  if (!script) user_error("--peer torch: scripts/torch_peer.py not found near the current folder or the kiln binary");
  where.script = *script;

  std::string error, last;
  const int status = run_reading_lines({where.python.string(), "-c", kProbe}, [&](const std::string& line) {
    if (!line.empty()) last = line;
  }, error);
  if (!error.empty()) user_error("--peer torch: {}", error);
  const json probe = json::parse(last, nullptr, false);
  if (!exited_ok(status) || !probe.is_object())
    user_error("--peer torch: {} did not answer whether it has PyTorch ({}); {}", where.python.string(),
               describe_status(status), kInstallHint);
  if (!probe.value("torch", json()).is_string())
    user_error("--peer torch: PyTorch is not installed for {} ({}); {}", where.python.string(),
               probe.value("why", std::string("import torch failed")), kInstallHint);
  where.version = probe["torch"].get<std::string>();
  if (!probe.value("cuda", false))
    user_error("--peer torch: PyTorch {} at {} sees no GPU (torch.cuda.is_available() is False: a CPU-only build, or "
               "no usable device); {}", where.version, where.python.string(), kInstallHint);
  if (!probe.value("transformers", json()).is_string())
    user_error("--peer torch: transformers is not installed for {} (torch_peer.py builds the zoo's models with it); {}",
               where.python.string(), kInstallHint);
  where.gpu = probe.value("gpu", json()).is_string() ? probe["gpu"].get<std::string>() : "?";
  return where;
}

const std::map<std::string, std::map<std::string, int64_t>>& torch_peer_models() {
  // torch_peer.py's build(): ids [1,128] for the text models, images [1,3,224,224], trocr's decoder ids [1,32].
  static const std::map<std::string, std::map<std::string, int64_t>> models = {
      {"bert", {{"batch", 1}, {"seq", 128}}},   {"distilbert", {{"batch", 1}, {"seq", 128}}},
      {"gpt2", {{"batch", 1}, {"seq", 128}}},   {"vit", {{"batch", 1}}},
      {"resnet18", {{"batch", 1}}},             {"trocr_small", {{"batch", 1}, {"dec_seq", 32}}}};
  return models;
}

std::string torch_peer_refuses(const std::string& model, const json& dims) {
  auto it = torch_peer_models().find(model);
  if (it == torch_peer_models().end()) {
    std::string names;
    for (const auto& [name, sizes] : torch_peer_models()) names += (names.empty() ? "" : ", ") + name;
    return fmt::format("scripts/torch_peer.py has no PyTorch model '{}' (it builds the zoo's: {})", model, names);
  }
  std::string want;
  bool same = true;
  for (const auto& [symbol, size] : it->second) {
    want += fmt::format("{}{}={}", want.empty() ? "" : " ", symbol, size);
    same = same && dims.contains(symbol) && dims[symbol] == size;
  }
  if (same) return "";
  return fmt::format("scripts/torch_peer.py runs {} at {} only; this record's sizes are {}", model, want, dims.dump());
}

TorchResults run_torch_peer(const TorchLocation& where, const TorchRequest& request, const fs::path& out_dir) {
  const std::vector<std::string> args = {where.python.string(), where.script.string(),
                                         "--models", comma_list(request.models),
                                         "--dtypes", comma_list(request.dtypes),
                                         "--modes", comma_list(request.modes),
                                         "--iters", std::to_string(request.iters),
                                         "--warmup", std::to_string(request.warmup),
                                         "--budget", fmt::format("{}", request.budget_s),
                                         "--out", out_dir.string()};
  TorchResults results;
  std::string error;
  const int status = run_reading_lines(args, [&](const std::string& line) {
    const json record = line.starts_with("{") ? json::parse(line, nullptr, false) : json();
    if (!record.is_object() || !record.value("model", json()).is_string()) {
      if (!line.empty()) std::fprintf(stderr, "[torch] %s\n", line.c_str());  // its summary table
      return;
    }
    const json median = record.value("median_ms", json());
    std::fprintf(stderr, "[bench torch] %s %s %s: %s\n", record["model"].get<std::string>().c_str(),
                 record.value("dtype", std::string("?")).c_str(), record.value("mode", std::string("?")).c_str(),
                 median.is_number() ? fmt::format("{:.3f} ms", median.get<double>()).c_str()
                                    : record.value("error", std::string("no time")).c_str());
    results.lines[record["model"].get<std::string>()].push_back(record);
  }, error);
  if (!error.empty()) results.failure = "--peer torch: " + error;
  else if (!exited_ok(status))
    results.failure = fmt::format("--peer torch: scripts/torch_peer.py failed ({}); its messages are above",
                                  describe_status(status));
  return results;
}

void add_torch_times(json& record, const std::vector<json>& lines, const std::string& dtype) {
  json torch = json::object();
  std::string best_mode, first_error;
  double best = 0;
  for (const json& line : lines) {
    if (line.value("dtype", std::string()) != dtype) continue;
    const std::string mode = line.value("mode", std::string("?"));
    const json error = line.value("error", json());
    if (error.is_string() && first_error.empty()) first_error = mode + ": " + error.get<std::string>();
    if (mode == "*") continue;  // the script's failure for the whole model
    torch[mode] = {{"median_ms", line.value("median_ms", json())}, {"min_ms", line.value("min_ms", json())},
                   {"compile_s", line.value("compile_s", json())}, {"error", error}};
    const json median = line.value("median_ms", json());
    if (median.is_number() && (best_mode.empty() || median.get<double>() < best)) {
      best = median.get<double>();
      best_mode = mode;
    }
  }
  record["torch"] = torch;
  record["torch_dtype"] = dtype;
  record["torch_best_mode"] = best_mode.empty() ? json() : json(best_mode);
  record["torch_best_ms"] = best_mode.empty() ? json() : json(best);
  const json kiln = record.value("compiled_ms", json());
  record["torch_vs_kiln"] = !best_mode.empty() && kiln.is_number() && kiln.get<double>() > 0
                                ? json(best / kiln.get<double>())
                                : json();
  if (best_mode.empty())
    record["torch_error"] = first_error.empty() ? "scripts/torch_peer.py printed no time for it" : first_error;
}

}  // namespace kiln::report
