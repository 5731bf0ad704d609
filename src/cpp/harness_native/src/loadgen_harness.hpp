// The harness under LoadGen's C++ API, without LoadGen's Python binding: a SystemUnderTest whose
// IssueQuery hands LoadGen's samples straight to a batch source, a QuerySampleLibrary whose
// load and unload call back into the harness, a test run, and completions handed to that same
// LoadGen's QuerySamplesComplete.
//
// LoadGen's sources are compiled into this module (setup.py, loadgen_sources.py): this is a copy
// of LoadGen with globals of its own, apart from the `mlperf_loadgen` Python module's. A sample id
// of one copy means nothing to the other, so a run's completions must go to the copy that issued
// them: the completion here refuses to run unless a test of this copy is under way.
//
// Pure C++ (no Python): the bindings in module.cpp wrap the callbacks that need the GIL.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "loadgen.h"
#include "query_sample.h"
#include "query_sample_library.h"
#include "system_under_test.h"
#include "test_settings.h"

namespace harness_native {

// Where IssueQuery puts the samples: a batch source's put_samples (LoadGen's array, read in place).
using PutSamples = std::function<void(const mlperf::QuerySample*, std::size_t)>;
// Called after each put where set (SingleStream, MultiStream: the harness runs the query's
// batches on LoadGen's issue thread, as HarnessSUT's inline mode does).
using AfterIssue = std::function<void()>;
using SampleIndices = std::function<void(const std::vector<mlperf::QuerySampleIndex>&)>;

inline void abort_test();  // below

class HarnessSut final : public mlperf::SystemUnderTest {
 public:
  HarnessSut(std::string name, PutSamples put, AfterIssue after_issue)
      : name_(std::move(name)), put_(std::move(put)), after_issue_(std::move(after_issue)) {}

  const std::string& Name() override { return name_; }

  void IssueQuery(const std::vector<mlperf::QuerySample>& samples) override {
    try {
      put_(samples.data(), samples.size());
      if (after_issue_) after_issue_();
    } catch (...) {
      abort_test();  // before the error unwinds through LoadGen (see abort_test)
      throw;
    }
  }

  void FlushQueries() override {}  // batches leave on size or timeout (as HarnessSUT's)

 private:
  std::string name_;
  PutSamples put_;
  AfterIssue after_issue_;
};

class HarnessQsl final : public mlperf::QuerySampleLibrary {
 public:
  HarnessQsl(std::string name, std::size_t total, std::size_t performance, SampleIndices load,
             SampleIndices unload)
      : name_(std::move(name)),
        total_(total),
        performance_(performance),
        load_(std::move(load)),
        unload_(std::move(unload)) {}

  const std::string& Name() override { return name_; }
  std::size_t TotalSampleCount() override { return total_; }
  std::size_t PerformanceSampleCount() override { return performance_; }
  void LoadSamplesToRam(const std::vector<mlperf::QuerySampleIndex>& samples) override {
    call(load_, samples);
  }
  void UnloadSamplesFromRam(const std::vector<mlperf::QuerySampleIndex>& samples) override {
    call(unload_, samples);
  }

 private:
  static void call(const SampleIndices& callback,
                   const std::vector<mlperf::QuerySampleIndex>& samples) {
    try {
      callback(samples);
    } catch (...) {
      abort_test();  // while `samples`, which LoadGen's queued log refers to, still exists
      throw;
    }
  }

  std::string name_;
  std::size_t total_, performance_;
  SampleIndices load_, unload_;
};

// How many tests of this LoadGen copy are under way (0 or 1: LoadGen runs one at a time).
inline std::atomic<int>& tests_running() {
  static std::atomic<int> running{0};
  return running;
}

// Whether the running test was stopped (mlperf::AbortTest) after a callback failed.
inline std::atomic<bool>& test_aborted() {
  static std::atomic<bool> aborted{false};
  return aborted;
}

// Stops the running test's LoadGen (AbortTest: it ends LoadGen's threads and flushes its logs),
// once. A callback that fails calls this before its error unwinds through LoadGen: LoadGen queues
// log records that refer to its own locals (LoadSamplesToRam logs the sample set by reference),
// and its IO thread must write them while those still exist. Without it, the IO thread read a
// freed set (SIGSEGV in ArgValueTransform, seen here), and mlperf_loadgen's binding, which leaves
// the logger running after such an error, ends the process's next test in std::terminate.
inline void abort_test() {
  if (!test_aborted().exchange(true)) mlperf::AbortTest();
}

// One LoadGen test. A callback that throws ends it (abort_test) and the error goes on to the
// caller; another test can run after it.
inline void run_test(mlperf::SystemUnderTest& sut, mlperf::QuerySampleLibrary& qsl,
                     const mlperf::TestSettings& settings, const mlperf::LogSettings& log_settings,
                     const std::string& audit_config) {
  int expected = 0;
  if (!tests_running().compare_exchange_strong(expected, 1)) {
    throw std::runtime_error("a native LoadGen test is already running in this process");
  }
  struct Running {
    ~Running() { tests_running().store(0); }
  } running;
  test_aborted().store(false);
  try {
    mlperf::StartTest(&sut, &qsl, settings, log_settings, audit_config);
  } catch (...) {
    abort_test();
    throw;
  }
}

// Hands `count` responses to this copy's QuerySamplesComplete: response i answers ids[i] with
// `row_bytes` bytes at base + i * row_bytes, or sizes[i] bytes there where `sizes` is given (the
// rows of one width that BERT cuts to each feature's tokens). LoadGen copies what it logs before
// it returns, so the rows need to live only until then.
inline void complete_rows(const std::uint64_t* ids, std::size_t count, std::uintptr_t base,
                          std::size_t row_bytes, const std::uint64_t* sizes) {
  if (tests_running().load(std::memory_order_relaxed) == 0) {
    throw std::runtime_error(
        "no native LoadGen test is running: these samples belong to another LoadGen "
        "(mlperf_loadgen's) or to none");
  }
  thread_local std::vector<mlperf::QuerySampleResponse> responses;
  responses.clear();
  responses.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uintptr_t data = row_bytes == 0 ? 0 : base + i * row_bytes;
    responses.emplace_back(ids[i], data, sizes == nullptr ? row_bytes : sizes[i]);
  }
  mlperf::QuerySamplesComplete(responses.data(), responses.size());
}

}  // namespace harness_native
