// CudaRuntime's timing marks: events recorded on the session's stream, read with cuEventElapsedTime once
// the stream has passed them. Events are kept in a pool and reused, so that after a session's first
// profiled run no cuEventCreate falls between a step's two marks.
#include <mutex>
#include <vector>

#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_runtime.h"
#include "support/error.h"

namespace kiln::backend::cuda {

struct CudaRuntime::EventPool {
  Context context;
  std::mutex mutex;
  std::vector<CUevent> free;

  explicit EventPool(const Context& c) : context(c) {}
  ~EventPool() {
    if (!context.try_make_current()) return;
    for (CUevent e : free) driver().cuEventDestroy(e);
  }
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  CUevent take() {
    {
      std::lock_guard lock(mutex);
      if (!free.empty()) {
        CUevent e = free.back();
        free.pop_back();
        return e;
      }
    }
    CUevent e = nullptr;
    check(driver().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");  // timing enabled
    return e;
  }
  void give_back(CUevent e) noexcept {
    std::lock_guard lock(mutex);
    free.push_back(e);  // re-recording a used event is allowed; the pool outlives every mark (shared)
  }
};

std::shared_ptr<CudaRuntime::EventPool> CudaRuntime::make_event_pool(const Context& context) {
  return std::make_shared<EventPool>(context);
}

namespace {

// An event recorded on the stream: where the stream was when it passed it.
struct EventMark final : DeviceRuntime::Mark {
  std::shared_ptr<CudaRuntime::EventPool> pool;
  CUevent event = nullptr;

  EventMark(std::shared_ptr<CudaRuntime::EventPool> p, CUevent e) : pool(std::move(p)), event(e) {}
  ~EventMark() override { pool->give_back(event); }
  EventMark(const EventMark&) = delete;
  EventMark& operator=(const EventMark&) = delete;
};

}  // namespace

std::unique_ptr<DeviceRuntime::Mark> CudaRuntime::mark() const {
  KILN_INTERNAL_CHECK(!capturing_, "mark: the stream is being captured (an event would be a node of the graph)");
  context_.make_current();
  // Also a capture begun by anyone else on this stream (the flag above covers only this runtime's own).
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  check(driver().cuStreamIsCapturing(stream_.handle(), &status), "cuStreamIsCapturing");
  KILN_INTERNAL_CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE, "mark: the stream is being captured (status {})",
                      static_cast<int>(status));
  auto m = std::make_unique<EventMark>(events_, events_->take());
  check(driver().cuEventRecord(m->event, stream_.handle()), "cuEventRecord");
  return m;
}

double CudaRuntime::elapsed_ms(const Mark& from, const Mark& to) const {
  const auto* a = dynamic_cast<const EventMark*>(&from);
  const auto* b = dynamic_cast<const EventMark*>(&to);
  KILN_INTERNAL_CHECK(a && b, "elapsed_ms: a mark of another runtime");
  context_.make_current();
  float ms = 0;  // CUDA_ERROR_NOT_READY here: a mark the stream has not passed (no synchronize() since)
  check(driver().cuEventElapsedTime(&ms, a->event, b->event), "cuEventElapsedTime");
  return static_cast<double>(ms);
}

}  // namespace kiln::backend::cuda
