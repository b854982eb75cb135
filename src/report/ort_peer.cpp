#include "report/ort_peer.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/locate.h"
#include "support/error.h"

extern char** environ;

namespace kiln::report {
namespace fs = std::filesystem;

namespace {

constexpr const char* kInstallHint = "install it with `scripts/install_ort.sh build/ort` (needs npm; kiln installs "
                                     "nothing at run time), or point --ort-dir / KILN_ORT_DIR at an install";

bool has_ort(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "node_modules" / "onnxruntime-node" / "package.json", ec);
}

}  // namespace

OrtLocation locate_ort(const std::string& ort_dir) {
  OrtLocation where;
  std::vector<fs::path> candidates;
  if (!ort_dir.empty()) candidates.push_back(ort_dir);
  else if (const char* env = std::getenv("KILN_ORT_DIR"); env && *env) candidates.push_back(env);
  else
    for (const fs::path& root : project_roots()) candidates.push_back(root / "build" / "ort");
  std::string looked;
  for (const fs::path& c : candidates) {
    if (has_ort(c)) {
      where.ort_dir = fs::absolute(c).lexically_normal();
      break;
    }
    looked += (looked.empty() ? "" : ", ") + c.string();
  }
  if (where.ort_dir.empty())
    user_error("--peer ort: ONNX Runtime for Node.js (onnxruntime-node) is not installed (looked in {}); {}", looked,
               kInstallHint);
  auto node = find_on_path("node");
  if (!node) user_error("--peer ort: `node` (Node.js) is not on PATH; install Debian's nodejs package");
  where.node = *node;
  auto script = find_project_file("scripts/ort_server.js");
  if (!script) user_error("--peer ort: scripts/ort_server.js not found near the current folder or the kiln binary");
  where.script = *script;
  return where;
}

OrtPeer::OrtPeer(const OrtLocation& where) {
  // A helper that dies must give kiln an error, not a SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  int in_pipe[2], out_pipe[2];
  if (::pipe(in_pipe) != 0 || ::pipe(out_pipe) != 0) user_error("--peer ort: pipe: {}", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  std::string node = where.node.string(), script = where.script.string(), dir = where.ort_dir.string();
  std::vector<char*> argv = {node.data(), script.data(), const_cast<char*>("--ort-dir"), dir.data(), nullptr};
  int rc = posix_spawn(&pid_, node.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  if (rc != 0) {
    pid_ = -1;
    user_error("--peer ort: cannot start {}: {}", node, std::strerror(rc));
  }
  nlohmann::json hello = read_reply();
  if (!hello.value("ok", false))
    user_error("--peer ort: the ONNX Runtime helper failed to start: {}", hello.value("error", std::string("?")));
  version_ = hello.value("version", std::string("?"));
}

OrtPeer::~OrtPeer() {
  if (to_child_ >= 0) {
    const char quit[] = "{\"cmd\":\"quit\"}\n";
    [[maybe_unused]] ssize_t n = ::write(to_child_, quit, sizeof quit - 1);
    ::close(to_child_);
  }
  if (from_child_ >= 0) ::close(from_child_);
  if (pid_ > 0) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

nlohmann::json OrtPeer::read_reply() {
  for (;;) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (line.empty()) continue;
      try {
        return nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        throw PeerError(fmt::format("--peer ort: the ONNX Runtime helper printed something that is not JSON: {}", line));
      }
    }
    char buf[4096];
    ssize_t n = ::read(from_child_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int status = 0;
      if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) pid_ = -1;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
        throw PeerError(fmt::format("--peer ort: onnxruntime-node could not be loaded; {}", kInstallHint));
      throw PeerError(fmt::format("--peer ort: the ONNX Runtime helper exited (status {}); its messages are above", status));
    }
    pending_.append(buf, static_cast<size_t>(n));
  }
}

nlohmann::json OrtPeer::request(const nlohmann::json& command) {
  std::string line = command.dump() + "\n";
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(to_child_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw PeerError(fmt::format("--peer ort: the ONNX Runtime helper is gone ({})", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  nlohmann::json reply = read_reply();
  if (!reply.value("ok", false))
    throw PeerError(fmt::format("ONNX Runtime ({}): {}", command.value("cmd", std::string("?")), reply.value("error", std::string("?"))));
  return reply;
}

void OrtPeer::load(const std::string& model, int threads, const std::map<std::string, std::string>& input_files) {
  request({{"cmd", "load"}, {"model", model}, {"threads", threads}, {"inputs", input_files}});
}

double OrtPeer::run() { return request({{"cmd", "run"}}).at("ms").get<double>(); }

std::map<std::string, std::string> OrtPeer::save_outputs(const std::string& dir) {
  return request({{"cmd", "save"}, {"dir", dir}}).at("outputs").get<std::map<std::string, std::string>>();
}

void OrtPeer::unload() { request({{"cmd", "unload"}}); }

}  // namespace kiln::report
