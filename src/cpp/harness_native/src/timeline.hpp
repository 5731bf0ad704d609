// A run's timeline at a fixed cost and in fixed memory, for the report: when samples were issued
// and completed, and how long each took.
//
// LoadGen logs only latency percentiles (its per-sample trace costs throughput), so the batch
// sources record their own: the issue time is taken when a batch source receives samples (one
// clock read per issue call, which the Server batcher reads anyway) and travels with the batch;
// the completion time is taken by the Completer just before it hands the batch to LoadGen.
//
// The issue thread (LoadGen's, which sets Server's pace) takes no lock here: it only counts the
// samples (a relaxed atomic add) and, once, sets time 0. Everything else is recorded per completed
// batch under one mutex, the samples' issue-time bins included (they come with the batch): work
// per batch, and per sample only where a batch's samples were issued apart (Server).
//
// Memory does not grow with the run: latencies go into a log-linear histogram (every power of two
// split into 2^kSubBucketBits buckets: at most 1/128 = 0.8% wide), and time into kTimeBins bins
// of issued and completed samples, completed batches and latency sum and maximum (by completion
// time). Bins are 2^20 ns (about 1 ms) wide, a power of two so that a bin is a shift away; when
// the run outlasts them, neighbouring bins are merged in pairs and the width doubles, so a run of
// any length ends with between kTimeBins / 2 and kTimeBins bins used.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace harness_native {

class TimelineRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr unsigned kSubBucketBits = 7;
  static constexpr std::size_t kHistogramBuckets = std::size_t{65 - kSubBucketBits}
                                                   << kSubBucketBits;
  static constexpr std::size_t kTimeBins = 1024;
  static constexpr unsigned kFirstBinShift = 20;  // 2^20 ns bins at first: doubled as needed

  // Everything recorded, copied out under the lock; time bins trimmed to the last one used.
  struct Snapshot {
    std::int64_t bin_width_ns = std::int64_t{1} << kFirstBinShift;
    std::vector<std::uint64_t> issued, completed, batches, latency_max_ns;
    std::vector<double> latency_sum_ns;
    std::vector<std::uint64_t> histogram;  // kHistogramBuckets counts, by bucket index
    std::uint64_t issued_samples = 0, completed_samples = 0, completed_batches = 0;
    std::uint64_t latency_min_ns = 0, latency_max_total_ns = 0;
    double latency_sum_total_ns = 0;
    std::int64_t first_issue_ns = 0, last_completion_ns = 0;  // steady clock, ns
  };

  static std::int64_t now_ns() { return to_ns(Clock::now()); }
  static std::int64_t to_ns(Clock::time_point at) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  }

  // The histogram bucket of a latency: exact below 2^(kSubBucketBits + 1) ns, then log-linear.
  static std::size_t bucket_of(std::uint64_t ns) {
    if (ns < (std::uint64_t{2} << kSubBucketBits)) return static_cast<std::size_t>(ns);
    const unsigned top = 63 - static_cast<unsigned>(__builtin_clzll(ns));
    const unsigned shift = top - kSubBucketBits;
    return (std::size_t{shift} << kSubBucketBits) + static_cast<std::size_t>(ns >> shift);
  }

  // [lower, lower + width) of a bucket: the inverse of bucket_of.
  static std::uint64_t bucket_lower(std::size_t bucket) {
    if (bucket < (std::size_t{2} << kSubBucketBits)) return bucket;
    const std::size_t shift = (bucket >> kSubBucketBits) - 1;
    return static_cast<std::uint64_t>(bucket - (shift << kSubBucketBits)) << shift;
  }
  static std::uint64_t bucket_width(std::size_t bucket) {
    if (bucket < (std::size_t{2} << kSubBucketBits)) return 1;
    return std::uint64_t{1} << ((bucket >> kSubBucketBits) - 1);
  }

  // `count` samples received by a batch source at `at_ns` (on LoadGen's issue thread: no lock).
  void issued(std::int64_t at_ns, std::size_t count) {
    if (origin_ns_.load(std::memory_order_relaxed) == kUnset) {
      std::int64_t unset = kUnset;
      origin_ns_.compare_exchange_strong(unset, at_ns, std::memory_order_relaxed);
    }
    issued_samples_.fetch_add(count, std::memory_order_relaxed);
  }

  // A batch of `samples` completed at `at_ns`; `issue_ns` holds one issue time for all of them
  // (issue_count 1) or one per sample. Its samples are counted as issued at their issue times
  // here, so a sample never completed is in the issued total only.
  void completed(const std::int64_t* issue_ns, std::size_t issue_count, std::size_t samples,
                 std::int64_t at_ns) {
    if (samples == 0 || issue_count == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t done = bin_of(at_ns);  // first: it may merge bins, moving every index
    Bin& bin = bins_[done];
    bin.completed += samples;
    bin.batches += 1;
    completed_samples_ += samples;
    completed_batches_ += 1;
    last_completion_ns_ = std::max(last_completion_ns_, at_ns);
    if (issue_count == 1) {
      bins_[bin_of(issue_ns[0])].issued += samples;
      add_latency(bin, at_ns - issue_ns[0], samples);
    } else {
      for (std::size_t i = 0; i < std::min(issue_count, samples); ++i) {
        bins_[bin_of(issue_ns[i])].issued += 1;
        add_latency(bin, at_ns - issue_ns[i], 1);
      }
    }
  }

  Snapshot snapshot() {
    Snapshot out;
    std::lock_guard<std::mutex> lock(mutex_);
    out.bin_width_ns = std::int64_t{1} << bin_shift_;
    std::size_t used = 0;
    for (std::size_t i = 0; i < kTimeBins; ++i) {
      if (bins_[i].issued != 0 || bins_[i].completed != 0) used = i + 1;
    }
    for (std::size_t i = 0; i < used; ++i) {
      out.issued.push_back(bins_[i].issued);
      out.completed.push_back(bins_[i].completed);
      out.batches.push_back(bins_[i].batches);
      out.latency_sum_ns.push_back(bins_[i].latency_sum_ns);
      out.latency_max_ns.push_back(bins_[i].latency_max_ns);
    }
    out.histogram.assign(histogram_.begin(), histogram_.end());
    out.issued_samples = issued_samples_.load(std::memory_order_relaxed);
    out.completed_samples = completed_samples_;
    out.completed_batches = completed_batches_;
    out.latency_min_ns = completed_samples_ == 0 ? 0 : latency_min_ns_;
    out.latency_max_total_ns = latency_max_ns_;
    out.latency_sum_total_ns = latency_sum_ns_;
    const std::int64_t origin = origin_ns_.load(std::memory_order_relaxed);
    out.first_issue_ns = origin == kUnset ? 0 : origin;
    out.last_completion_ns = last_completion_ns_;
    return out;
  }

 private:
  struct Bin {
    std::uint64_t issued = 0, completed = 0, batches = 0, latency_max_ns = 0;
    double latency_sum_ns = 0;  // a double: 600 s of Offline latencies overflow 64-bit ns sums
  };

  void add_latency(Bin& bin, std::int64_t signed_ns, std::size_t samples) {
    const std::uint64_t ns = signed_ns > 0 ? static_cast<std::uint64_t>(signed_ns) : 0;
    histogram_[bucket_of(ns)] += samples;
    const double total = static_cast<double>(ns) * static_cast<double>(samples);
    bin.latency_sum_ns += total;
    bin.latency_max_ns = std::max(bin.latency_max_ns, ns);
    latency_sum_ns_ += total;
    latency_max_ns_ = std::max(latency_max_ns_, ns);
    latency_min_ns_ = std::min(latency_min_ns_, ns);
  }

  // The bin of a time (the first issue is time 0), merging bins in pairs until it fits. Every
  // batch was put, so time 0 is set, and seen here: the put happened before the batcher's mutex
  // handed the batch over.
  std::size_t bin_of(std::int64_t at_ns) {
    const std::int64_t offset =
        std::max<std::int64_t>(0, at_ns - origin_ns_.load(std::memory_order_relaxed));
    std::uint64_t index = static_cast<std::uint64_t>(offset) >> bin_shift_;
    while (index >= kTimeBins) {
      merge_pairs();
      index = static_cast<std::uint64_t>(offset) >> bin_shift_;
    }
    return static_cast<std::size_t>(index);
  }

  void merge_pairs() {
    for (std::size_t i = 0; i < kTimeBins / 2; ++i) {
      const Bin a = bins_[2 * i], b = bins_[2 * i + 1];
      bins_[i] = Bin{a.issued + b.issued, a.completed + b.completed, a.batches + b.batches,
                     std::max(a.latency_max_ns, b.latency_max_ns),
                     a.latency_sum_ns + b.latency_sum_ns};
    }
    std::fill(bins_.begin() + kTimeBins / 2, bins_.end(), Bin{});
    bin_shift_ += 1;
  }

  static constexpr std::int64_t kUnset = std::numeric_limits<std::int64_t>::min();

  // Written by the issue thread without the mutex.
  std::atomic<std::int64_t> origin_ns_{kUnset};
  std::atomic<std::uint64_t> issued_samples_{0};
  // The rest under the mutex.
  std::mutex mutex_;
  unsigned bin_shift_ = kFirstBinShift;
  std::array<Bin, kTimeBins> bins_{};
  std::array<std::uint64_t, kHistogramBuckets> histogram_{};
  std::uint64_t completed_samples_ = 0, completed_batches_ = 0;
  std::uint64_t latency_min_ns_ = std::numeric_limits<std::uint64_t>::max(), latency_max_ns_ = 0;
  double latency_sum_ns_ = 0;
  std::int64_t last_completion_ns_ = 0;
};

}  // namespace harness_native
