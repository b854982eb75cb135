// Measured device choices (the fastest cuBLASLt algorithm of a problem; a GEMM template or the library)
// kept in the tuning store (autotune/tuning_store.h) across processes, so that a warm store means no
// benchmarking on the next prepare. A choice is filed under its own key and what makes timings differ:
// the GPU (name, architecture, SMs), the driver's and cuBLASLt's versions and the kiln build (version and
// commit: a choice is an index into candidates this build lists). An unusable store file is warned about
// once by the store and then neither read nor written.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "autotune/tuning_store.h"
#include "backend/cuda/cuda_objects.h"
#include "kiln/options.h"

namespace kiln::backend::cuda {

class ChoiceStore {
 public:
  // The store in options' cache folder (the CPU autotuner's file); `library_versions` names the libraries
  // whose choices are kept ("cublaslt 130100").
  ChoiceStore(const Options& options, const DeviceInfo& device, int driver_version, std::string library_versions);
  // A store at `file` (tests).
  ChoiceStore(std::filesystem::path file, const DeviceInfo& device, int driver_version, std::string library_versions,
              autotune::WarnSink warn);

  std::optional<int> lookup(const std::string& key);
  void store(const std::string& key, int choice);

 private:
  autotune::TuningKey key_of(const std::string& key) const;

  std::unique_ptr<autotune::TuningStore> store_;
  std::string device_key_, library_versions_;
};

}  // namespace kiln::backend::cuda
