// Python bindings of the harness's hot loops: batching, gathering, completion, int8 quantization,
// the harness run under LoadGen's C++ API (loadgen_harness.hpp) and its latency queries answered
// by CUDA graphs launched from C++ (inline_round_trips.hpp). Every loop that touches no
// Python object runs with the GIL released.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <functional>
#include <thread>
#include <vector>

#include "batcher.hpp"
#include "buffer_pool.hpp"
#include "copy_pool.hpp"
#include "inline_round_trips.hpp"
#include "loadgen_harness.hpp"
#include "quantize.hpp"
#include "timeline.hpp"
#include "version.h"  // LoadGen's (the compiled-in copy's version)

namespace py = pybind11;

namespace harness_native {
namespace {

// --- LoadGen's pybind11 objects, read and written in place ------------------------------------
//
// mlperf_loadgen ships no C++ headers, only its Python extension, so its QuerySample and
// QuerySampleResponse reach us as pybind11 instances of its own module. Building one response
// object per sample through the constructor costs about 1 us each (pybind11's overload dispatch
// and two allocations). Instead we keep a pool of response objects and write the fields of their
// C++ values directly (LoadGen's query_sample.h: {uintptr_t id; uintptr_t data; size_t size;
// int64_t n_tokens}). That relies on pybind11's instance layout ("simple layout": the value
// pointer first after the object header), so it is verified at start-up on a probe object, field
// by field, in both directions through LoadGen's own accessors; if any check fails the
// constructor path is used instead (Completer.mode says which).

struct ResponseValue {
  std::uint64_t id;
  std::uint64_t data;
  std::uint64_t size;
  std::int64_t n_tokens;  // only where LoadGen's type has the field
};

struct SampleValue {
  std::uint64_t id;
  std::uint64_t index;
};

// The C++ value inside a pybind11 instance of another module, or nullptr if it is not laid out
// as our pybind11 lays out a simple instance.
void* pybind11_value_pointer(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  if (static_cast<std::size_t>(type->tp_basicsize) != sizeof(py::detail::instance)) return nullptr;
  auto* instance = reinterpret_cast<py::detail::instance*>(object);
  if (!instance->simple_layout) return nullptr;
  return instance->simple_value_holder[0];
}

bool same_int(const py::object& object, const char* name, std::uint64_t expected) {
  if (!py::hasattr(object, name)) return false;
  py::object value = object.attr(name);
  if (!PyLong_Check(value.ptr())) return false;
  unsigned long long got = PyLong_AsUnsignedLongLongMask(value.ptr());
  return !PyErr_Occurred() && got == expected;
}

// Whether QuerySampleResponse objects can be written in place; sets has_n_tokens.
bool response_layout_ok(const py::object& response_type, bool& has_n_tokens) {
  const std::uint64_t id = 0x1111222233334444ULL, data = 0x5555666677778888ULL,
                      size = 0x0123456789abcdefULL;
  py::object probe;
  try {
    probe = response_type(id, data, size);
  } catch (const py::error_already_set&) {
    return false;
  }
  void* pointer = pybind11_value_pointer(probe.ptr());
  if (pointer == nullptr) return false;
  auto* value = static_cast<ResponseValue*>(pointer);
  if (value->id != id || value->data != data || value->size != size) return false;
  value->id = ~id;
  value->data = ~data;
  value->size = ~size;
  if (!same_int(probe, "id", ~id) || !same_int(probe, "data", ~data) ||
      !same_int(probe, "size", ~size)) {
    return false;
  }
  has_n_tokens = py::hasattr(probe, "n_tokens");
  if (has_n_tokens) {
    value->n_tokens = 0x0707070707070707LL;
    if (!same_int(probe, "n_tokens", 0x0707070707070707ULL)) return false;
  }
  return true;
}

bool sample_layout_ok(PyTypeObject* sample_type) {
  const std::uint64_t id = 0x0102030405060708ULL, index = 0x1112131415161718ULL;
  py::object probe;
  try {
    probe = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(sample_type))(id,
                                                                                        index);
  } catch (const py::error_already_set&) {
    return false;
  }
  void* pointer = pybind11_value_pointer(probe.ptr());
  if (pointer == nullptr) return false;
  auto* value = static_cast<SampleValue*>(pointer);
  return value->id == id && value->index == index && same_int(probe, "id", id) &&
         same_int(probe, "index", index);
}

// Reads LoadGen's QuerySample objects (issue_queries' argument) into ids and indices. The
// in-place read is verified once per type (under the GIL, which every caller holds).
class SampleReader {
 public:
  void read(const py::handle& samples, std::vector<std::uint64_t>& ids,
            std::vector<std::int64_t>& indices) {
    py::sequence sequence = py::reinterpret_borrow<py::sequence>(samples);
    const std::size_t count = py::len(sequence);
    ids.resize(count);
    indices.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      py::object sample = sequence[i];
      PyTypeObject* type = Py_TYPE(sample.ptr());
      if (type != checked_type_) {
        checked_type_ = type;
        in_place_ = sample_layout_ok(type);
      }
      void* pointer = in_place_ ? pybind11_value_pointer(sample.ptr()) : nullptr;
      if (pointer != nullptr) {
        auto* value = static_cast<SampleValue*>(pointer);
        ids[i] = value->id;
        indices[i] = static_cast<std::int64_t>(value->index);
      } else {
        ids[i] = sample.attr("id").cast<std::uint64_t>();
        indices[i] = sample.attr("index").cast<std::int64_t>();
      }
    }
  }

 private:
  PyTypeObject* checked_type_ = nullptr;
  bool in_place_ = false;
};

SampleReader& sample_reader() {
  static SampleReader reader;  // used with the GIL held only
  return reader;
}

template <typename T>
std::vector<T> int_vector(const py::handle& values, const char* what) {
  py::array_t<T, py::array::c_style | py::array::forcecast> array;
  try {
    array = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(values);
  } catch (const py::error_already_set&) {
    array = {};
  }
  if (!array || array.ndim() > 1) {
    throw py::type_error(std::string(what) + " must be a sequence of integers");
  }
  return std::vector<T>(array.data(), array.data() + array.size());
}

// --- batches ----------------------------------------------------------------------------------

py::list to_list(const std::vector<std::uint64_t>& values) {
  py::list list(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    PyList_SET_ITEM(list.ptr(), i, PyLong_FromUnsignedLongLong(values[i]));
  }
  return list;
}

py::list to_list(const std::vector<std::int64_t>& values) {
  py::list list(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    PyList_SET_ITEM(list.ptr(), i, PyLong_FromLongLong(values[i]));
  }
  return list;
}

template <typename Source>
py::object next_batch(Source& source) {
  auto batch = std::make_unique<Batch>();
  bool ok;
  {
    py::gil_scoped_release release;
    ok = source.next(*batch);
  }
  if (!ok) return py::none();
  return py::cast(std::move(batch));
}

template <typename Source>
void put_lists(Source& source, const py::handle& ids, const py::handle& indices) {
  std::vector<std::uint64_t> id_values = int_vector<std::uint64_t>(ids, "response_ids");
  std::vector<std::int64_t> index_values = int_vector<std::int64_t>(indices, "sample_indices");
  if (id_values.size() != index_values.size()) {
    throw py::value_error("response_ids and sample_indices differ in length");
  }
  py::gil_scoped_release release;
  source.put(id_values.data(), index_values.data(), id_values.size());
}

template <typename Source>
void put_queries(Source& source, const py::handle& query_samples) {
  std::vector<std::uint64_t> ids;
  std::vector<std::int64_t> indices;
  sample_reader().read(query_samples, ids, indices);
  py::gil_scoped_release release;
  source.put(ids.data(), indices.data(), ids.size());
}

// --- timeline ---------------------------------------------------------------------------------

// The batch source's timeline as plain Python values (mlperf_harness.harness.timeline reads it).
py::dict timeline_dict(TimelineRecorder& recorder) {
  TimelineRecorder::Snapshot s;
  {
    py::gil_scoped_release release;  // the issue thread may hold the recorder's lock
    s = recorder.snapshot();
  }
  py::list histogram;
  for (std::size_t i = 0; i < s.histogram.size(); ++i) {
    if (s.histogram[i] == 0) continue;
    histogram.append(py::make_tuple(TimelineRecorder::bucket_lower(i),
                                    TimelineRecorder::bucket_width(i), s.histogram[i]));
  }
  py::dict out;
  out["bin_width_ns"] = s.bin_width_ns;
  out["issued"] = s.issued;
  out["completed"] = s.completed;
  out["batches"] = s.batches;
  out["latency_sum_ns"] = s.latency_sum_ns;
  out["latency_max_ns"] = s.latency_max_ns;
  out["histogram_sub_bucket_bits"] = TimelineRecorder::kSubBucketBits;
  out["histogram"] = histogram;  // (lower_ns, width_ns, count) of every bucket with a count
  out["issued_samples"] = s.issued_samples;
  out["completed_samples"] = s.completed_samples;
  out["completed_batches"] = s.completed_batches;
  out["latency_min_ns"] = s.latency_min_ns;
  out["latency_max_total_ns"] = s.latency_max_total_ns;
  out["latency_sum_total_ns"] = s.latency_sum_total_ns;
  out["duration_ns"] = s.completed_samples == 0 ? 0 : s.last_completion_ns - s.first_issue_ns;
  // The steady clock (CLOCK_MONOTONIC, Python's time.monotonic_ns) at the first issue, 0 if none:
  // what LoadGen did before the harness saw a sample is the time from the test's start to this.
  out["first_issue_ns"] = s.first_issue_ns;
  return out;
}

// --- completion -------------------------------------------------------------------------------

// A batch's outputs, row i answering sample i: where the rows are and how wide each is.
struct Rows {
  py::array array;  // holds the data alive
  std::uintptr_t base = 0;  // 0 where rows are empty
  std::size_t row_bytes = 0;
};

Rows rows_of(const py::handle& outputs, std::size_t count) {
  Rows out;
  out.array = py::array::ensure(outputs, py::array::c_style);
  const py::array& rows = out.array;
  if (!rows) throw py::type_error("outputs must be an array (row i answers sample i)");
  const std::size_t total = static_cast<std::size_t>(rows.nbytes());
  if (count == 0) {
    if (total != 0) throw py::value_error("outputs given for an empty batch");
    return out;
  }
  if (total % count != 0 || (total != 0 && rows.ndim() > 0 &&
                             static_cast<std::size_t>(rows.shape(0)) != count)) {
    throw py::value_error("outputs have " + std::to_string(rows.ndim() > 0 ? rows.shape(0) : 0) +
                          " rows for a batch of " + std::to_string(count));
  }
  out.row_bytes = total / count;
  out.base = out.row_bytes == 0 ? 0 : reinterpret_cast<std::uintptr_t>(rows.data());
  return out;
}

class Completer {
 public:
  Completer(py::object complete, py::object response_type, bool in_place)
      : complete_(std::move(complete)), response_type_(std::move(response_type)) {
    in_place_ = in_place && response_layout_ok(response_type_, has_n_tokens_);
  }

  std::string mode() const { return in_place_ ? "pooled" : "constructed"; }

  // One QuerySamplesComplete call for the whole batch: row i of outputs answers ids[i].
  // `handed_at`, if given, gets the time just before the call (LoadGen's completion time).
  void complete(const std::uint64_t* ids, std::size_t count, const py::handle& outputs,
                std::int64_t* handed_at = nullptr) {
    const Rows rows = rows_of(outputs, count);
    if (count == 0) return;
    const std::size_t row_bytes = rows.row_bytes;
    const std::uint64_t base = rows.base;
    py::list responses(count);
    if (in_place_) {
      std::unique_ptr<Pool> pool = take_pool(count);
      for (std::size_t i = 0; i < count; ++i) {
        ResponseValue* value = pool->values[i];
        value->id = ids[i];
        value->data = row_bytes == 0 ? 0 : base + i * row_bytes;
        value->size = row_bytes;
        if (has_n_tokens_) value->n_tokens = 0;
        PyList_SET_ITEM(responses.ptr(), i, pool->objects[i].inc_ref().ptr());
      }
      // LoadGen copies every value into its own vector before it releases the GIL; the pool is
      // reused only after this call returns, so a concurrent completion never sees our writes.
      PoolReturn back{this, std::move(pool)};
      if (handed_at != nullptr) *handed_at = TimelineRecorder::now_ns();
      complete_(responses);
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        py::object response =
            response_type_(ids[i], row_bytes == 0 ? 0 : base + i * row_bytes, row_bytes);
        PyList_SET_ITEM(responses.ptr(), i, response.release().ptr());
      }
      if (handed_at != nullptr) *handed_at = TimelineRecorder::now_ns();
      complete_(responses);
    }
  }

 private:
  struct Pool {
    std::vector<py::object> objects;
    std::vector<ResponseValue*> values;
  };

  struct PoolReturn {
    Completer* owner;
    std::unique_ptr<Pool> pool;
    ~PoolReturn() {
      std::lock_guard<std::mutex> lock(owner->mutex_);
      owner->free_.push_back(std::move(pool));
    }
  };

  std::unique_ptr<Pool> take_pool(std::size_t count) {
    std::unique_ptr<Pool> pool;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        pool = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!pool) pool = std::make_unique<Pool>();
    while (pool->objects.size() < count) {
      py::object response = response_type_();
      void* pointer = pybind11_value_pointer(response.ptr());
      if (pointer == nullptr) throw std::runtime_error("QuerySampleResponse changed layout");
      pool->values.push_back(static_cast<ResponseValue*>(pointer));
      pool->objects.push_back(std::move(response));
    }
    return pool;
  }

  py::object complete_;
  py::object response_type_;
  bool in_place_ = false;
  bool has_n_tokens_ = false;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Pool>> free_;
};

// --- the harness under LoadGen's C++ API (loadgen_harness.hpp) ---------------------------------

// Hands a batch to the LoadGen compiled into this module (the test run_loadgen_test runs): row i of
// outputs answers ids[i], cut to row_bytes[i] bytes where row_bytes is given. The GIL is released
// while LoadGen takes the responses; `handed_at` as in Completer::complete.
void complete_in_loadgen(const std::uint64_t* ids, std::size_t count, const py::handle& outputs,
                         const py::handle& row_bytes, std::int64_t* handed_at) {
  const Rows rows = rows_of(outputs, count);
  if (count == 0) return;
  std::vector<std::uint64_t> sizes;
  if (!row_bytes.is_none()) {
    sizes = int_vector<std::uint64_t>(row_bytes, "row_bytes");
    bool fits = sizes.size() == count;
    for (std::size_t i = 0; fits && i < count; ++i) fits = sizes[i] <= rows.row_bytes;
    if (!fits) {
      throw py::value_error("row_bytes " + py::repr(row_bytes).cast<std::string>() +
                            " do not fit " + std::to_string(count) + " rows of " +
                            std::to_string(rows.row_bytes) + " bytes");
    }
  }
  py::gil_scoped_release release;
  if (handed_at != nullptr) *handed_at = TimelineRecorder::now_ns();
  complete_rows(ids, count, rows.base, rows.row_bytes, sizes.empty() ? nullptr : sizes.data());
}

// LoadGen's TestSettings of this module's copy, for Python to fill as it fills mlperf_loadgen's
// (loadgen/settings.py): the same attribute names, FromConfig, and scenario and mode by name.
struct TestSettingsBox {
  mlperf::TestSettings value{};  // value-initialised, as pybind11 makes mlperf_loadgen's
};

// Every TestSettings member, by the name mlperf_loadgen's binding gives it.
#define HARNESS_TEST_SETTINGS_FIELDS(X)                                            \
  X(single_stream_expected_latency_ns, single_stream_expected_latency_ns)          \
  X(single_stream_target_latency_percentile, single_stream_target_latency_percentile) \
  X(multi_stream_expected_latency_ns, multi_stream_expected_latency_ns)            \
  X(multi_stream_target_latency_percentile, multi_stream_target_latency_percentile) \
  X(multi_stream_samples_per_query, multi_stream_samples_per_query)                \
  X(server_target_qps, server_target_qps)                                          \
  X(server_target_latency_ns, server_target_latency_ns)                            \
  X(server_target_latency_percentile, server_target_latency_percentile)            \
  X(server_coalesce_queries, server_coalesce_queries)                              \
  X(server_find_peak_qps_decimals_of_precision, server_find_peak_qps_decimals_of_precision) \
  X(server_find_peak_qps_boundary_step_size, server_find_peak_qps_boundary_step_size) \
  X(server_max_async_queries, server_max_async_queries)                            \
  X(server_num_issue_query_threads, server_num_issue_query_threads)                \
  X(offline_expected_qps, offline_expected_qps)                                    \
  X(sample_concatenate_permutation, sample_concatenate_permutation)                \
  X(min_duration_ms, min_duration_ms)                                              \
  X(max_duration_ms, max_duration_ms)                                              \
  X(min_query_count, min_query_count)                                              \
  X(max_query_count, max_query_count)                                              \
  X(qsl_rng_seed, qsl_rng_seed)                                                    \
  X(sample_index_rng_seed, sample_index_rng_seed)                                  \
  X(schedule_rng_seed, schedule_rng_seed)                                          \
  X(accuracy_log_rng_seed, accuracy_log_rng_seed)                                  \
  X(accuracy_log_probability, accuracy_log_probability)                            \
  X(accuracy_log_sampling_target, accuracy_log_sampling_target)                    \
  X(test05, test05)                                                                \
  X(test05_qsl_rng_seed, test05_qsl_rng_seed)                                      \
  X(test05_sample_index_rng_seed, test05_sample_index_rng_seed)                    \
  X(test05_schedule_rng_seed, test05_schedule_rng_seed)                            \
  X(print_timestamps, print_timestamps)                                            \
  X(performance_issue_unique, performance_issue_unique)                            \
  X(performance_issue_same, performance_issue_same)                                \
  X(performance_issue_same_index, performance_issue_same_index)                    \
  X(performance_sample_count_override, performance_sample_count_override)          \
  X(accuracy_sample_count_override, accuracy_sample_count_override)                \
  X(use_token_latencies, use_token_latencies)                                      \
  X(ttft_latency, server_ttft_latency)                                             \
  X(tpot_latency, server_tpot_latency)                                             \
  X(infer_token_latencies, infer_token_latencies)                                  \
  X(token_latency_scaling_factor, token_latency_scaling_factor)

const std::vector<std::pair<std::string, mlperf::TestScenario>>& scenario_names() {
  static const std::vector<std::pair<std::string, mlperf::TestScenario>> names{
      {"SingleStream", mlperf::TestScenario::SingleStream},
      {"MultiStream", mlperf::TestScenario::MultiStream},
      {"Server", mlperf::TestScenario::Server},
      {"Offline", mlperf::TestScenario::Offline}};
  return names;
}

const std::vector<std::pair<std::string, mlperf::TestMode>>& mode_names() {
  static const std::vector<std::pair<std::string, mlperf::TestMode>> names{
      {"SubmissionRun", mlperf::TestMode::SubmissionRun},
      {"AccuracyOnly", mlperf::TestMode::AccuracyOnly},
      {"PerformanceOnly", mlperf::TestMode::PerformanceOnly},
      {"FindPeakPerformance", mlperf::TestMode::FindPeakPerformance}};
  return names;
}

template <typename Enum>
std::string enum_name(const std::vector<std::pair<std::string, Enum>>& names, Enum value) {
  for (const auto& entry : names) {
    if (entry.second == value) return entry.first;
  }
  return "unknown";
}

template <typename Enum>
Enum enum_value(const std::vector<std::pair<std::string, Enum>>& names, const std::string& name,
                const char* what) {
  std::string known;
  for (const auto& entry : names) {
    if (entry.first == name) return entry.second;
    known += (known.empty() ? "" : ", ") + entry.first;
  }
  throw py::value_error("unknown LoadGen " + std::string(what) + " " + name + ": " + known);
}

// A Python callable of LoadGen's sample indices (a list of int, as mlperf_loadgen passes them),
// called with the GIL taken: the harness's QSL load and unload, which LoadGen calls before and
// after timing.
SampleIndices indices_callback(const py::object& callback) {
  return [&callback](const std::vector<mlperf::QuerySampleIndex>& samples) {
    py::gil_scoped_acquire gil;
    py::list indices(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      PyList_SET_ITEM(indices.ptr(), i, PyLong_FromSize_t(samples[i]));
    }
    callback(indices);
  };
}

// InlineRoundTrips for Python: bind() takes the runner's pinned buffers as numpy arrays (checked
// here, kept alive while bound) and a launch, either CudaGraphs or, where no GPU can run one (the
// tests), a Python callable taking the engine's position.
class InlineRoundTripsBinding {
 public:
  explicit InlineRoundTripsBinding(std::int64_t label_offset) : trips_(label_offset) {}

  InlineRoundTrips& trips() { return trips_; }

  void bind(const std::vector<std::size_t>& batch_sizes, const py::array& rows,
            const py::array& outputs, const py::array& slot_of, const py::object& launch) {
    if (batch_sizes.empty()) throw py::value_error("round trips need at least one engine");
    const std::size_t largest = batch_sizes.back();  // ascending: InlineRoundTrips::bind checks
    if (!rows.dtype().is(py::dtype::of<std::int64_t>()) || !(rows.flags() & py::array::c_style) ||
        !rows.writeable() || static_cast<std::size_t>(rows.size()) < largest) {
      throw py::value_error("rows must be a writable C-contiguous int64 array of at least " +
                            std::to_string(largest) + " rows");
    }
    const bool int64 = outputs.dtype().is(py::dtype::of<std::int64_t>());
    if ((!int64 && !outputs.dtype().is(py::dtype::of<std::int32_t>())) ||
        !(outputs.flags() & py::array::c_style) || outputs.ndim() < 1 ||
        static_cast<std::size_t>(outputs.shape(0)) < largest) {
      throw py::value_error("outputs must be a C-contiguous int64 or int32 array of at least " +
                            std::to_string(largest) + " rows (integer labels)");
    }
    if (!slot_of.dtype().is(py::dtype::of<std::int64_t>()) ||
        !(slot_of.flags() & py::array::c_style) || slot_of.ndim() != 1) {
      throw py::value_error("slot_of must be a C-contiguous one-dimensional int64 array");
    }
    RoundTripBuffers buffers;
    buffers.batch_sizes = batch_sizes;
    buffers.rows = static_cast<std::int64_t*>(rows.request(true).ptr);
    buffers.outputs = static_cast<const std::uint8_t*>(outputs.data());
    buffers.output_row_bytes = static_cast<std::size_t>(outputs.nbytes() / outputs.shape(0));
    buffers.output_int64 = int64;
    buffers.slot_of = static_cast<const std::int64_t*>(slot_of.data());
    buffers.slots = static_cast<std::size_t>(slot_of.size());
    if (py::isinstance<CudaGraphLaunch>(launch)) {
      const CudaGraphLaunch* graphs = launch.cast<const CudaGraphLaunch*>();
      if (graphs->size() != batch_sizes.size()) {
        throw py::value_error(std::to_string(graphs->size()) + " graphs for " +
                              std::to_string(batch_sizes.size()) + " engines");
      }
      buffers.launch = [graphs](std::size_t position) { (*graphs)(position); };
    } else if (PyCallable_Check(launch.ptr())) {
      PyObject* callable = launch.ptr();  // kept alive below while bound
      buffers.launch = [callable](std::size_t position) {
        py::gil_scoped_acquire gil;
        try {
          py::handle function(callable);
          function(position);
        } catch (py::error_already_set& error) {
          throw std::runtime_error(error.what());  // dropped here, with the GIL held
        }
      };
    } else {
      throw py::type_error("launch must be CudaGraphs or a callable");
    }
    {
      py::gil_scoped_release release;  // a batch running on LoadGen's thread may need the GIL
      trips_.bind(std::move(buffers));
    }
    held_ = py::make_tuple(rows, outputs, slot_of, launch);  // the old ones go after the swap
  }

  void unbind() {
    {
      py::gil_scoped_release release;
      trips_.unbind();
    }
    held_ = py::none();
  }

 private:
  InlineRoundTrips trips_;
  py::object held_ = py::none();  // what the bound buffers point into, and the launch
};

// One LoadGen test of this module's copy over the harness's native batch source; the GIL is
// released throughout, taken only by the callbacks. Python callables are borrowed for the call.
// `round_trips` (a FixedBatcher's source only) answers each query's batches in C++ on LoadGen's
// issue thread, in place of `after_issue`.
void run_loadgen_test(const TestSettingsBox& settings, const std::string& log_dir,
                      const std::string& audit_config, const py::object& batches,
                      std::size_t total_count, std::size_t performance_count,
                      const py::object& load, const py::object& unload,
                      const py::object& after_issue, const py::object& round_trips) {
  PutSamples put;
  if (py::isinstance<FixedBatcher>(batches)) {
    FixedBatcher* source = batches.cast<FixedBatcher*>();
    put = [source](const mlperf::QuerySample* samples, std::size_t count) {
      source->put_samples(samples, count);
    };
  } else if (py::isinstance<DynamicBatcher>(batches)) {
    DynamicBatcher* source = batches.cast<DynamicBatcher*>();
    put = [source](const mlperf::QuerySample* samples, std::size_t count) {
      source->put_samples(samples, count);
    };
  } else {
    throw py::type_error("batches must be a native FixedBatcher or DynamicBatcher");
  }
  AfterIssue after;
  if (!round_trips.is_none()) {
    if (!after_issue.is_none() || !py::isinstance<FixedBatcher>(batches)) {
      throw py::value_error("round_trips answer a FixedBatcher's batches, with no after_issue");
    }
    InlineRoundTrips* trips = &round_trips.cast<InlineRoundTripsBinding&>().trips();
    FixedBatcher* source = batches.cast<FixedBatcher*>();
    after = [trips, source] { trips->run_pending(*source); };
  } else if (!after_issue.is_none()) {
    after = [&after_issue] {
      py::gil_scoped_acquire gil;
      after_issue();
    };
  }
  HarnessSut sut("HarnessNativeSUT", std::move(put), std::move(after));
  HarnessQsl qsl("HarnessNativeQSL", total_count, performance_count, indices_callback(load),
                 indices_callback(unload));
  mlperf::LogSettings log_settings;  // LoadGen's defaults, as mlperf_loadgen.LogSettings() has
  log_settings.log_output.outdir = log_dir;
  log_settings.log_output.copy_summary_to_stdout = false;
  log_settings.enable_trace = false;  // as loadgen/run.py: costs throughput, not in a submission
  py::gil_scoped_release release;
  run_test(sut, qsl, settings.value, log_settings, audit_config);
}

// Threads that answer every batch of a batch source empty, all in C++, until it is closed and
// drained: the native LoadGen path with no Python per batch. harness_overhead's reference for what
// the harness's Python worker (runner call, postprocessing, completion call) costs per batch.
class NullCompleters {
 public:
  NullCompleters(const py::object& batches, std::size_t threads) : batches_(batches) {
    std::function<bool(Batch&)> next;
    if (py::isinstance<FixedBatcher>(batches)) {
      FixedBatcher* source = batches.cast<FixedBatcher*>();
      next = [source](Batch& batch) { return source->next(batch); };
    } else if (py::isinstance<DynamicBatcher>(batches)) {
      DynamicBatcher* source = batches.cast<DynamicBatcher*>();
      next = [source](Batch& batch) { return source->next(batch); };
    } else {
      throw py::type_error("batches must be a native FixedBatcher or DynamicBatcher");
    }
    for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i) {
      threads_.emplace_back([next] {
        Batch batch;
        while (next(batch)) {
          const std::int64_t at = TimelineRecorder::now_ns();
          complete_rows(batch.response_ids.data(), batch.size(), 0, 0, nullptr);
          batch.record_completion(at);
        }
      });
    }
  }

  // After the batch source is closed: waits for the threads to drain it.
  void join() {
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  ~NullCompleters() { join(); }  // the source outlives us (batches_), so they end once it closes

 private:
  py::object batches_;  // keeps the batch source alive while the threads use it
  std::vector<std::thread> threads_;
};

// --- gather -----------------------------------------------------------------------------------

std::size_t default_gather_threads() {
  unsigned int cores = std::thread::hardware_concurrency();
  return std::max(1u, std::min(cores == 0 ? 1u : cores, 8u));
}

CopyPool& copy_pool() {
  static CopyPool* pool = new CopyPool(default_gather_threads());  // lives as long as the process
  return *pool;
}

struct PoolBuffer {
  std::shared_ptr<BufferPool> pool;
  void* pointer;
  std::size_t bytes;
};

py::array pooled_array(const std::shared_ptr<BufferPool>& pool, const py::dtype& dtype,
                       const std::vector<py::ssize_t>& shape) {
  std::size_t bytes = static_cast<std::size_t>(dtype.itemsize());
  for (py::ssize_t extent : shape) bytes *= static_cast<std::size_t>(extent);
  if (bytes == 0) return py::array(dtype, shape);
  void* pointer = pool->acquire(bytes);
  auto* buffer = new PoolBuffer{pool, pointer, bytes};
  py::capsule owner(buffer, [](void* p) {
    auto* held = static_cast<PoolBuffer*>(p);
    held->pool->give_back(held->pointer, held->bytes);
    delete held;
  });
  return py::array(dtype, shape, {}, pointer, owner);
}

// out[i] = data[slot_of[indices[i]]] for every i, copied with several threads, GIL released.
py::array gather(const py::array& data, const py::array_t<std::int64_t>& slot_of,
                 const py::handle& indices, const py::object& out,
                 const std::shared_ptr<BufferPool>& pool, std::size_t threads) {
  if (!(data.flags() & py::array::c_style) || data.ndim() < 1) {
    throw py::value_error("the stored samples must be one C-contiguous array (N, ...)");
  }
  std::vector<std::int64_t> rows = int_vector<std::int64_t>(indices, "indices");
  const std::int64_t* slots = slot_of.data();
  const std::int64_t slot_count = slot_of.size();
  const std::int64_t stored = data.shape(0);
  for (std::int64_t& row : rows) {
    if (row < 0 || row >= slot_count) {
      throw py::index_error("sample index " + std::to_string(row) + " is out of range (" +
                            std::to_string(slot_count) + " samples)");
    }
    row = slots[row];
    if (row < 0 || row >= stored) {
      throw std::runtime_error("LoadGen asked for a sample that was never loaded");
    }
  }
  std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(rows.size())};
  std::size_t row_bytes = static_cast<std::size_t>(data.itemsize());
  for (py::ssize_t d = 1; d < data.ndim(); ++d) {
    shape.push_back(data.shape(d));
    row_bytes *= static_cast<std::size_t>(data.shape(d));
  }
  py::array result;
  if (out.is_none()) {
    result = pooled_array(pool, data.dtype(), shape);
  } else {
    if (!py::isinstance<py::array>(out)) throw py::type_error("out must be a numpy array");
    result = py::reinterpret_borrow<py::array>(out);
    if (!(result.flags() & py::array::c_style) ||
        !result.writeable() || !result.dtype().is(data.dtype()) ||
        static_cast<std::size_t>(result.nbytes()) != rows.size() * row_bytes) {
      throw py::value_error("out must be a writable C-contiguous array of the batch's dtype and size");
    }
  }
  if (!rows.empty() && row_bytes != 0) {
    auto* dst = static_cast<std::uint8_t*>(result.mutable_data());
    const auto* src = static_cast<const std::uint8_t*>(data.data());
    py::gil_scoped_release release;
    copy_pool().gather_rows(dst, src, rows.data(), rows.size(), row_bytes, threads);
  }
  return result;
}

}  // namespace
}  // namespace harness_native

using namespace harness_native;

PYBIND11_MODULE(_native, m) {
  m.doc() = "The harness's hot loops in C++ (pybind11), each with the GIL released.";

  py::class_<Batch>(m, "Batch")
      .def(py::init([](const py::handle& ids, const py::handle& indices) {
             auto batch = std::make_unique<Batch>();
             batch->response_ids = int_vector<std::uint64_t>(ids, "response_ids");
             batch->sample_indices = int_vector<std::int64_t>(indices, "sample_indices");
             if (batch->response_ids.size() != batch->sample_indices.size()) {
               throw py::value_error("response_ids and sample_indices differ in length");
             }
             return batch;
           }),
           py::arg("response_ids"), py::arg("sample_indices"))
      .def_property_readonly("response_ids",
                             [](const Batch& b) { return to_list(b.response_ids); })
      .def_property_readonly("sample_indices",
                             [](const Batch& b) { return to_list(b.sample_indices); })
      .def("__len__", &Batch::size)
      .def("__eq__",
           [](const Batch& a, const py::object& other) -> py::object {
             if (!py::isinstance<Batch>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             const Batch& b = other.cast<const Batch&>();
             return py::bool_(a.response_ids == b.response_ids &&
                              a.sample_indices == b.sample_indices);
           })
      .def("__repr__", [](const Batch& b) {
        return "Batch(" + py::repr(to_list(b.response_ids)).cast<std::string>() + ", " +
               py::repr(to_list(b.sample_indices)).cast<std::string>() + ")";
      });

  py::class_<FixedBatcher>(m, "FixedBatcher")
      .def(py::init<std::size_t, const std::vector<std::int64_t>&>(), py::arg("batch_size"),
           py::arg("order_keys") = std::vector<std::int64_t>{})
      .def("put", &put_lists<FixedBatcher>, py::arg("response_ids"), py::arg("sample_indices"))
      .def("put_queries", &put_queries<FixedBatcher>, py::arg("query_samples"))
      .def("next_batch", &next_batch<FixedBatcher>)
      .def("close", &FixedBatcher::close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("batch_size", &FixedBatcher::batch_size)
      .def_property_readonly("ordered", &FixedBatcher::ordered)
      .def_property_readonly("pending", &FixedBatcher::pending)
      .def("timeline", [](FixedBatcher& b) { return timeline_dict(b.timeline()); });

  py::class_<DynamicBatcher>(m, "DynamicBatcher")
      .def(py::init([](std::size_t batch_size, std::int64_t timeout_ns,
                       const std::vector<std::int64_t>& bucket_of) {
             return std::make_unique<DynamicBatcher>(
                 batch_size, std::chrono::nanoseconds(timeout_ns), bucket_of);
           }),
           py::arg("batch_size"), py::arg("timeout_ns"),
           py::arg("bucket_of") = std::vector<std::int64_t>{})
      .def("put", &put_lists<DynamicBatcher>, py::arg("response_ids"), py::arg("sample_indices"))
      .def("put_queries", &put_queries<DynamicBatcher>, py::arg("query_samples"))
      .def("next_batch", &next_batch<DynamicBatcher>)
      .def("close", &DynamicBatcher::close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("batch_size", &DynamicBatcher::batch_size)
      .def_property_readonly("timeout_ns",
                             [](const DynamicBatcher& b) { return b.timeout().count(); })
      .def_property_readonly("buckets", &DynamicBatcher::buckets)
      .def_property_readonly("pending", &DynamicBatcher::pending)
      .def("timeline", [](DynamicBatcher& b) { return timeline_dict(b.timeline()); });

  py::class_<Completer>(m, "Completer")
      .def(py::init<py::object, py::object, bool>(), py::arg("complete"),
           py::arg("response_type"), py::arg("in_place") = true)
      .def_property_readonly("mode", &Completer::mode)
      .def(
          "complete_batch",
          [](Completer& self, const Batch& batch, const py::handle& outputs) {
            std::int64_t handed_at = 0;
            self.complete(batch.response_ids.data(), batch.size(), outputs, &handed_at);
            batch.record_completion(handed_at);  // after the call: LoadGen's timing comes first
          },
          py::arg("batch"), py::arg("outputs"))
      .def(
          "complete",
          [](Completer& self, const py::handle& ids, const py::handle& outputs) {
            std::vector<std::uint64_t> values = int_vector<std::uint64_t>(ids, "response_ids");
            self.complete(values.data(), values.size(), outputs);
          },
          py::arg("response_ids"), py::arg("outputs"));

  py::class_<TestSettingsBox> test_settings(m, "TestSettings");
  test_settings.def(py::init<>())
      .def_property(
          "scenario",
          [](const TestSettingsBox& b) { return enum_name(scenario_names(), b.value.scenario); },
          [](TestSettingsBox& b, const std::string& name) {
            b.value.scenario = enum_value(scenario_names(), name, "scenario");
          })
      .def_property(
          "mode", [](const TestSettingsBox& b) { return enum_name(mode_names(), b.value.mode); },
          [](TestSettingsBox& b, const std::string& name) {
            b.value.mode = enum_value(mode_names(), name, "test mode");
          })
      .def(
          "FromConfig",
          [](TestSettingsBox& b, const std::string& path, const std::string& model,
             const std::string& scenario, int conf_type) {
            return b.value.FromConfig(path, model, scenario, conf_type);
          },
          py::arg("path"), py::arg("model"), py::arg("scenario"), py::arg("conf_type") = 1);
#define HARNESS_BIND_FIELD(python_name, member)                                        \
  test_settings.def_property(                                                           \
      #python_name, [](const TestSettingsBox& b) { return b.value.member; },            \
      [](TestSettingsBox& b, decltype(mlperf::TestSettings::member) v) { b.value.member = v; });
  HARNESS_TEST_SETTINGS_FIELDS(HARNESS_BIND_FIELD)
#undef HARNESS_BIND_FIELD
#define HARNESS_FIELD_NAME(python_name, member) #python_name,
  test_settings.attr("FIELDS") = py::make_tuple(HARNESS_TEST_SETTINGS_FIELDS(HARNESS_FIELD_NAME) "scenario", "mode");
#undef HARNESS_FIELD_NAME

  m.def("run_loadgen_test", &run_loadgen_test, py::arg("settings"), py::kw_only(),
        py::arg("log_dir"), py::arg("audit_config"), py::arg("batches"), py::arg("total_count"),
        py::arg("performance_count"), py::arg("load"), py::arg("unload"),
        py::arg("after_issue") = py::none(), py::arg("round_trips") = py::none());

  py::class_<CudaGraphLaunch>(m, "CudaGraphs")
      .def(py::init<std::vector<std::uintptr_t>, std::uintptr_t, int>(), py::arg("execs"),
           py::arg("stream"), py::arg("device"))
      .def("__len__", &CudaGraphLaunch::size)
      .def(
          "launch",
          [](const CudaGraphLaunch& graphs, std::size_t position) {
            if (position >= graphs.size()) throw py::index_error("no graph " + std::to_string(position));
            py::gil_scoped_release release;
            graphs(position);
          },
          py::arg("position"));

  m.def("cuda_driver_error", [] { return CudaDriver::get().error(); });

  py::class_<InlineRoundTripsBinding>(m, "InlineRoundTrips")
      .def(py::init<std::int64_t>(), py::arg("label_offset"))
      .def("bind", &InlineRoundTripsBinding::bind, py::kw_only(), py::arg("batch_sizes"),
           py::arg("rows"), py::arg("outputs"), py::arg("slot_of"), py::arg("launch"))
      .def("unbind", &InlineRoundTripsBinding::unbind)
      .def_property_readonly("bound", [](InlineRoundTripsBinding& self) {
        py::gil_scoped_release release;
        return self.trips().bound();
      })
      .def_property_readonly("failure", [](InlineRoundTripsBinding& self) {
        std::string failure;
        {
          py::gil_scoped_release release;
          failure = self.trips().failure();
        }
        return failure;
      });

  m.def(
      "complete_in_loadgen",
      [](const Batch& batch, const py::handle& outputs, const py::handle& row_bytes) {
        std::int64_t handed_at = 0;
        complete_in_loadgen(batch.response_ids.data(), batch.size(), outputs, row_bytes,
                            &handed_at);
        batch.record_completion(handed_at);
      },
      py::arg("batch"), py::arg("outputs"), py::arg("row_bytes") = py::none());

  py::class_<NullCompleters>(m, "NullCompleters")
      .def(py::init<const py::object&, std::size_t>(), py::arg("batches"), py::arg("threads") = 1)
      .def("join", &NullCompleters::join, py::call_guard<py::gil_scoped_release>());

  m.def("loadgen_version", [] { return mlperf::LoadgenVersion(); });
  m.def("loadgen_test_running", [] { return tests_running().load() != 0; });

  py::class_<BufferPool, std::shared_ptr<BufferPool>>(m, "BufferPool")
      .def(py::init([](bool pinned, std::size_t max_cached_bytes) {
             if (pinned && !CudaHostAllocator::get().available()) {
               throw std::runtime_error(
                   "pinned buffers need the CUDA runtime (libcudart.so), which could not be "
                   "loaded: " +
                   CudaHostAllocator::get().error());
             }
             return std::make_shared<BufferPool>(pinned, max_cached_bytes);
           }),
           py::arg("pinned") = false, py::arg("max_cached_bytes") = std::size_t{2} << 30)
      .def_property_readonly("pinned", &BufferPool::pinned)
      .def_property_readonly("cached_bytes", &BufferPool::cached_bytes)
      .def_property_readonly("allocated", &BufferPool::allocated)
      .def_property_readonly("reused", &BufferPool::reused)
      .def(
          "empty",
          [](const std::shared_ptr<BufferPool>& self, const std::vector<py::ssize_t>& shape,
             const py::object& dtype) { return pooled_array(self, py::dtype::from_args(dtype), shape); },
          py::arg("shape"), py::arg("dtype"));

  m.def("cuda_host_alloc_available", [] { return CudaHostAllocator::get().available(); });

  m.def("gather", &gather, py::arg("data"), py::arg("slot_of"), py::arg("indices"),
        py::arg("out") = py::none(), py::kw_only(), py::arg("pool"), py::arg("threads") = 0);

  m.def("gather_threads", [] { return copy_pool().threads(); });

  m.def(
      "quantize_int8_linear",
      [](const py::array& values, const py::object& out) {
        if (!values.dtype().is(py::dtype::of<float>())) {
          throw py::type_error("quantize_int8_linear takes float32, not " +
                               py::str(values.dtype()).cast<std::string>());
        }
        py::array_t<float, py::array::c_style> src =
            py::array_t<float, py::array::c_style>::ensure(values);
        std::vector<py::ssize_t> shape(values.shape(), values.shape() + values.ndim());
        py::array_t<std::int8_t, py::array::c_style> dst;
        if (out.is_none()) {
          dst = py::array_t<std::int8_t, py::array::c_style>(shape);
        } else {
          if (!py::isinstance<py::array_t<std::int8_t, py::array::c_style>>(out)) {
            throw py::type_error("out must be an int8 numpy array");
          }
          dst = py::reinterpret_borrow<py::array_t<std::int8_t, py::array::c_style>>(out);
          if (!(dst.flags() & py::array::c_style) || !dst.writeable() ||
              dst.size() != src.size()) {
            throw py::value_error("out must be a writable C-contiguous int8 array of the same size");
          }
        }
        const float* from = src.data();
        std::int8_t* to = dst.mutable_data();
        const std::size_t count = static_cast<std::size_t>(src.size());
        {
          py::gil_scoped_release release;
          quantize_int8_linear(from, to, count);
        }
        return dst;
      },
      py::arg("values"), py::arg("out") = py::none());

  m.def(
      "memcpy_into",
      [](py::array& dst, const py::array& src) {
        if (!(dst.flags() & py::array::c_style) || !(src.flags() & py::array::c_style) ||
            !dst.writeable() || dst.nbytes() != src.nbytes()) {
          throw py::value_error("memcpy_into needs two C-contiguous arrays of equal size");
        }
        void* to = dst.mutable_data();
        const void* from = src.data();
        const std::size_t bytes = static_cast<std::size_t>(src.nbytes());
        py::gil_scoped_release release;
        std::memcpy(to, from, bytes);
      },
      py::arg("dst"), py::arg("src"),
      "One plain memcpy of src's bytes into dst (GIL released): the reference for gather's "
      "bandwidth.");
}
