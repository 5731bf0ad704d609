// SingleStream and MultiStream answered in C++ on LoadGen's issue thread, with no Python per query.
//
// The torch runner captures each engine as a round trip CUDA graph (backends/torch_cuda/runner.py,
// capture_round_trips): sample rows read from a pinned row buffer, the engine run on the GPU's
// copy of the loaded samples, its output copied back into a pinned output buffer. A latency query
// then needs only: its samples' rows written, the graph launched, the stream waited for, and the
// responses handed to LoadGen. Done in Python that costs the runner's and the SUT's code and
// torch's calls, about 10 us a query on the host CPU (runner_python_cost.py), a real share of a
// 0.36 ms query. Here it is a few hundred nanoseconds plus the driver's launch.
//
// The responses are integer labels: each output row's first value, less a fixed offset, as int32
// (ResNet-50's ArgMax counts background as class 0; its postprocess does the same in Python).
//
// Pure C++ (no Python): the bindings in module.cpp turn Python's pieces into these.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "batcher.hpp"
#include "loadgen_harness.hpp"
#include "timeline.hpp"

namespace harness_native {

// The CUDA driver calls a round trip needs, from libcuda.so.1, loaded when first needed: the module
// links no CUDA library, so it imports on hosts without one (CI, the harness's CPU backends).
class CudaDriver {
 public:
  using Status = int;  // CUresult: 0 is CUDA_SUCCESS

  static CudaDriver& get() {
    static CudaDriver instance;
    return instance;
  }

  bool available() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // Throws where `status` is an error, naming the call and the error (CUDA_ERROR_...).
  void check(Status status, const char* call) const {
    if (status == 0) return;
    const char* name = nullptr;
    if (get_error_name_ == nullptr || get_error_name_(status, &name) != 0 || name == nullptr) {
      name = "an unknown CUDA error";
    }
    throw std::runtime_error(std::string(call) + " failed: " + name + " (" +
                             std::to_string(status) + ")");
  }

  Status (*init)(unsigned int) = nullptr;
  Status (*device_get)(int*, int) = nullptr;
  Status (*primary_ctx_retain)(void**, int) = nullptr;
  Status (*primary_ctx_release)(int) = nullptr;
  Status (*ctx_set_current)(void*) = nullptr;
  Status (*graph_launch)(void*, void*) = nullptr;
  Status (*stream_synchronize)(void*) = nullptr;

 private:
  CudaDriver() {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* message = dlerror();
      error_ = message != nullptr ? message : "libcuda.so.1 could not be loaded";
      return;
    }
    // The names the driver's header maps these calls to (cuda.h's _v2 macros) as of CUDA 11.
    bool found = load(library, "cuInit", init) && load(library, "cuDeviceGet", device_get) &&
                 load(library, "cuDevicePrimaryCtxRetain", primary_ctx_retain) &&
                 load(library, "cuDevicePrimaryCtxRelease_v2", primary_ctx_release) &&
                 load(library, "cuCtxSetCurrent", ctx_set_current) &&
                 load(library, "cuGraphLaunch", graph_launch) &&
                 load(library, "cuStreamSynchronize", stream_synchronize) &&
                 load(library, "cuGetErrorName", get_error_name_);
    if (!found) init = nullptr;
  }

  template <typename Function>
  bool load(void* library, const char* name, Function& function) {
    function = reinterpret_cast<Function>(dlsym(library, name));
    if (function == nullptr) error_ = std::string("libcuda.so.1 has no ") + name;
    return function != nullptr;
  }

  Status (*get_error_name_)(Status, const char**) = nullptr;
  std::string error_;
};

// Launches captured CUDA graph execs (torch's CUDAGraph.raw_cuda_graph_exec()) on one stream, in
// the primary context of one device (the context torch uses), and waits for each to finish.
class CudaGraphLaunch {
 public:
  CudaGraphLaunch(std::vector<std::uintptr_t> execs, std::uintptr_t stream, int device)
      : execs_(std::move(execs)), stream_(reinterpret_cast<void*>(stream)) {
    CudaDriver& driver = CudaDriver::get();
    if (!driver.available()) {
      throw std::runtime_error("round trips launched from C++ need the CUDA driver: " +
                               driver.error());
    }
    driver.check(driver.init(0), "cuInit");
    driver.check(driver.device_get(&device_, device), "cuDeviceGet");
    driver.check(driver.primary_ctx_retain(&context_, device_), "cuDevicePrimaryCtxRetain");
  }

  CudaGraphLaunch(const CudaGraphLaunch&) = delete;
  CudaGraphLaunch& operator=(const CudaGraphLaunch&) = delete;

  ~CudaGraphLaunch() { CudaDriver::get().primary_ctx_release(device_); }

  std::size_t size() const { return execs_.size(); }

  // Runs graph `position` to completion. The context is made current every time (a thread-local
  // store in the driver): LoadGen's issue thread never had one, and another library may change it.
  void operator()(std::size_t position) const {
    const CudaDriver& driver = CudaDriver::get();
    driver.check(driver.ctx_set_current(context_), "cuCtxSetCurrent");
    driver.check(driver.graph_launch(reinterpret_cast<void*>(execs_.at(position)), stream_),
                 "cuGraphLaunch");
    driver.check(driver.stream_synchronize(stream_), "cuStreamSynchronize");
  }

 private:
  std::vector<std::uintptr_t> execs_;
  void* stream_;
  int device_ = 0;
  void* context_ = nullptr;
};

// Where a round trip reads and writes, as the runner's captured graphs do: engine i takes
// batch_sizes[i] rows (ascending) from `rows` and leaves as many output rows at `outputs`.
struct RoundTripBuffers {
  std::vector<std::size_t> batch_sizes;
  std::int64_t* rows = nullptr;           // pinned: the sample rows each graph copies to the GPU
  const std::uint8_t* outputs = nullptr;  // pinned: where each graph copies its output back
  std::size_t output_row_bytes = 0;
  bool output_int64 = true;             // the label's type: int64 (torch's argmax) or int32
  const std::int64_t* slot_of = nullptr;  // sample index -> row of the GPU's copy, -1: not loaded
  std::size_t slots = 0;
  std::function<void(std::size_t)> launch;  // runs engine i's round trip to completion
};

// Answers the batches of a FixedBatcher (one query's, on LoadGen's issue thread) through the round
// trips bound last. Unbound, or on any failure, a batch is answered empty (LoadGen would otherwise
// wait forever) and the first failure kept for the harness to raise once the test is over, as the
// Python SUT does with a failing runner.
class InlineRoundTrips {
 public:
  explicit InlineRoundTrips(std::int64_t label_offset) : label_offset_(label_offset) {}

  void bind(RoundTripBuffers buffers) {
    if (buffers.batch_sizes.empty() || buffers.rows == nullptr || buffers.outputs == nullptr ||
        buffers.slot_of == nullptr || !buffers.launch) {
      throw std::invalid_argument("round trips need engines, buffers, a slot table and a launch");
    }
    const std::size_t value_bytes = buffers.output_int64 ? 8 : 4;
    if (buffers.output_row_bytes < value_bytes) {
      throw std::invalid_argument("an output row of " + std::to_string(buffers.output_row_bytes) +
                                  " bytes holds no label");
    }
    for (std::size_t i = 0; i < buffers.batch_sizes.size(); ++i) {
      const bool ascending = i == 0 || buffers.batch_sizes[i] > buffers.batch_sizes[i - 1];
      if (buffers.batch_sizes[i] == 0 || !ascending) {
        throw std::invalid_argument("batch sizes must be positive and ascending");
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_ = std::move(buffers);
    bound_ = true;
  }

  void unbind() {
    std::lock_guard<std::mutex> lock(mutex_);
    bound_ = false;
    buffers_ = RoundTripBuffers{};
  }

  bool bound() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bound_;
  }

  std::string failure() {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

  // Every batch `source` holds now (the query just put), answered into the native LoadGen.
  void run_pending(FixedBatcher& source) {
    thread_local Batch batch;
    while (source.pending() > 0 && source.next(batch)) run(batch);
  }

  void run(const Batch& batch) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t answered = 0;
    try {
      if (!bound_) {
        throw std::runtime_error(
            "no round trips are bound: the runner captures them when LoadGen loads samples");
      }
      while (answered < batch.size()) answered += run_chunk(batch, answered);
    } catch (const std::exception& error) {
      if (failure_.empty()) failure_ = error.what();
      completed_at_ = TimelineRecorder::now_ns();
      complete_rows(batch.response_ids.data() + answered, batch.size() - answered, 0, 0, nullptr);
    }
    batch.record_completion(completed_at_);
  }

 private:
  // Answers samples [start, start + n) of `batch` with one round trip of the smallest engine that
  // holds them (the largest, for more); returns n.
  std::size_t run_chunk(const Batch& batch, std::size_t start) {
    const RoundTripBuffers& b = buffers_;
    const std::size_t remaining = batch.size() - start;
    std::size_t engine = 0;
    while (engine + 1 < b.batch_sizes.size() && b.batch_sizes[engine] < remaining) ++engine;
    const std::size_t count = std::min(remaining, b.batch_sizes[engine]);
    // Rows past `count` keep whatever rows an earlier batch left: all rows of the GPU's copy.
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t index = batch.sample_indices[start + i];
      const std::int64_t row = index >= 0 && static_cast<std::size_t>(index) < b.slots
                                   ? b.slot_of[index]
                                   : -1;
      if (row < 0) {
        throw std::runtime_error("LoadGen asked for sample " + std::to_string(index) +
                                 ", which was never loaded");
      }
      b.rows[i] = row;
    }
    b.launch(engine);
    labels_.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint8_t* row = b.outputs + i * b.output_row_bytes;
      std::int64_t value;
      if (b.output_int64) {
        std::memcpy(&value, row, sizeof value);
      } else {
        std::int32_t narrow;
        std::memcpy(&narrow, row, sizeof narrow);
        value = narrow;
      }
      labels_[i] = static_cast<std::int32_t>(value - label_offset_);
    }
    completed_at_ = TimelineRecorder::now_ns();
    complete_rows(batch.response_ids.data() + start, count,
                  reinterpret_cast<std::uintptr_t>(labels_.data()), sizeof(std::int32_t), nullptr);
    return count;
  }

  const std::int64_t label_offset_;
  std::mutex mutex_;  // run() on LoadGen's thread against bind() from the harness's load callback
  bool bound_ = false;
  RoundTripBuffers buffers_;
  std::vector<std::int32_t> labels_;  // the responses LoadGen copies before complete_rows returns
  std::int64_t completed_at_ = 0;
  std::string failure_;
};

}  // namespace harness_native
