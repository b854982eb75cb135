// ONNX Runtime as a benchmark peer: onnxruntime-node in one helper process (scripts/ort_server.js)
// that stays up for the whole bench, reads one JSON command a line on stdin, times each run itself and
// answers one JSON line on stdout. kiln installs nothing: a missing piece is a UserError saying how to
// get it.
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/types.h>

#include "kiln/errors.h"

namespace kiln::report {

// A failure of the peer after it started (a model ONNX Runtime refuses, a helper that died): the
// bench records it for that model and goes on, where a failure of kiln itself stops the bench.
class PeerError : public UserError {
 public:
  explicit PeerError(const std::string& what) : UserError(what) {}
};

struct OrtLocation {
  std::filesystem::path node;     // the node executable
  std::filesystem::path script;   // scripts/ort_server.js
  std::filesystem::path ort_dir;  // holds node_modules/onnxruntime-node
};

// Where ONNX Runtime for Node.js is: `ort_dir` if given, else $KILN_ORT_DIR, else build/ort of the
// project (found from the current folder or the kiln binary's).
OrtLocation locate_ort(const std::string& ort_dir);

class OrtPeer {
 public:
  explicit OrtPeer(const OrtLocation& where);  // starts the helper and waits until ORT is loaded
  ~OrtPeer();
  OrtPeer(const OrtPeer&) = delete;
  OrtPeer& operator=(const OrtPeer&) = delete;

  const std::string& version() const { return version_; }
  // Creates an inference session for `model` on `threads` intra-op threads with inputs read from .npy
  // files (input name -> file); replaces the previous one.
  void load(const std::string& model, int threads, const std::map<std::string, std::string>& input_files);
  // One run of the loaded session; the helper's own clock around session.run(), in ms.
  double run();
  // Writes the last run's outputs into `dir` as .npy; returns output name -> file.
  std::map<std::string, std::string> save_outputs(const std::string& dir);
  // Drops the session (its memory) before the next model.
  void unload();

 private:
  nlohmann::json request(const nlohmann::json& command);
  nlohmann::json read_reply();

  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;  // bytes read past the last line
  std::string version_;
};

}  // namespace kiln::report
