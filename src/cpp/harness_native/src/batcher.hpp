// Batch sources the harness workers pull from. Pure C++ (no Python): the bindings release the GIL
// around every call that can wait.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "timeline.hpp"

namespace harness_native {

using Clock = std::chrono::steady_clock;

// One batch: LoadGen's response ids (echoed back on completion) and the samples' QSL indices.
// A batch from a batch source also carries when its samples were issued and the source's timeline,
// which the Completer tells of the completion (timeline.hpp).
struct Batch {
  std::vector<std::uint64_t> response_ids;
  std::vector<std::int64_t> sample_indices;
  std::int64_t issued_ns = 0;           // every sample's issue time, where issue_ns is empty
  std::vector<std::int64_t> issue_ns;   // else one per sample (the Server batcher's)
  std::shared_ptr<TimelineRecorder> timeline;  // none for a batch made in Python

  std::size_t size() const { return response_ids.size(); }

  // Tells the batch source's timeline that this batch was handed back to LoadGen at `at_ns`.
  void record_completion(std::int64_t at_ns) const {
    if (!timeline) return;
    if (issue_ns.empty()) {
      timeline->completed(&issued_ns, 1, size(), at_ns);
    } else {
      timeline->completed(issue_ns.data(), issue_ns.size(), size(), at_ns);
    }
  }
};

// Offline, SingleStream, MultiStream: each issued query is cut into batches of at most
// `batch_size` samples, in issue order; a batch never mixes two queries. With `order_keys` (one
// per QSL sample index: RNN-T's utterance lengths), a query of more than one batch (Offline's one
// query of the whole run) is first sorted by its samples' keys, smallest first and stable, so each
// batch holds samples of about the same size: a batch's work follows its largest sample. A sample
// index past the keys sorts last. Queries of one batch or fewer keep their order.
// What both batchers take samples from: arrays of ids and indices (the Python path), or LoadGen's
// own QuerySample array (any type with `id` and `index`), read in place with no copy in between (an
// Offline query holds every sample of the run). `Batcher::put_each(count, id_at, index_at)` takes
// sample i's response id id_at(i) and sample index index_at(i).
template <typename Batcher>
class SampleIntake {
 public:
  void put(const std::uint64_t* ids, const std::int64_t* indices, std::size_t count) {
    batcher().put_each(
        count, [ids](std::size_t i) { return ids[i]; },
        [indices](std::size_t i) { return indices[i]; });
  }

  template <typename Sample>
  void put_samples(const Sample* samples, std::size_t count) {
    batcher().put_each(
        count, [samples](std::size_t i) { return static_cast<std::uint64_t>(samples[i].id); },
        [samples](std::size_t i) { return static_cast<std::int64_t>(samples[i].index); });
  }

 private:
  Batcher& batcher() { return static_cast<Batcher&>(*this); }
};

class FixedBatcher : public SampleIntake<FixedBatcher> {
 public:
  explicit FixedBatcher(std::size_t batch_size, const std::vector<std::int64_t>& order_keys = {})
      : batch_size_(batch_size) {
    if (batch_size == 0) throw std::invalid_argument("batch_size must be at least 1");
    // Each sample index's rank among the distinct keys, so that a query is sorted by counting
    // (linear in its samples: an Offline query holds hundreds of thousands).
    std::vector<std::int64_t> distinct(order_keys);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    ranks_.reserve(order_keys.size());
    for (std::int64_t key : order_keys) {
      ranks_.push_back(static_cast<std::size_t>(
          std::lower_bound(distinct.begin(), distinct.end(), key) - distinct.begin()));
    }
    unranked_ = distinct.size();  // a sample index past the keys: after every ranked one
  }

  // Sample i has response id id_at(i) and sample index index_at(i).
  template <typename IdAt, typename IndexAt>
  void put_each(std::size_t count, IdAt id_at, IndexAt index_at) {
    if (count == 0) return;
    Segment segment;
    segment.issued_ns = TimelineRecorder::now_ns();
    timeline_->issued(segment.issued_ns, count);  // before a worker can complete any of them
    segment.ids.resize(count);
    segment.indices.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      segment.ids[i] = id_at(i);
      segment.indices[i] = index_at(i);
    }
    if (!ranks_.empty() && count > batch_size_) order_by_key(segment);
    std::size_t batches = (count + batch_size_ - 1) / batch_size_;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) throw std::runtime_error("put on a closed batch source");
      segments_.push_back(std::move(segment));
    }
    if (batches == 1) {
      ready_.notify_one();
    } else {
      ready_.notify_all();
    }
  }

  // Blocks until a batch is ready; false once closed and drained.
  bool next(Batch& out) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return !segments_.empty() || closed_; });
    if (segments_.empty()) return false;
    Segment& front = segments_.front();
    std::size_t take = std::min(batch_size_, front.ids.size() - front.offset);
    out.response_ids.assign(front.ids.begin() + front.offset,
                            front.ids.begin() + front.offset + take);
    out.sample_indices.assign(front.indices.begin() + front.offset,
                              front.indices.begin() + front.offset + take);
    out.issued_ns = front.issued_ns;
    out.timeline = timeline_;
    front.offset += take;
    if (front.offset == front.ids.size()) segments_.pop_front();
    return true;
  }

  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  std::size_t batch_size() const { return batch_size_; }
  bool ordered() const { return !ranks_.empty(); }
  TimelineRecorder& timeline() { return *timeline_; }

  std::size_t pending() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t total = 0;
    for (const Segment& s : segments_) total += s.ids.size() - s.offset;
    return total;
  }

 private:
  struct Segment {
    std::vector<std::uint64_t> ids;
    std::vector<std::int64_t> indices;
    std::size_t offset = 0;
    std::int64_t issued_ns = 0;
  };

  std::size_t rank_of(std::int64_t index) const {
    return index >= 0 && static_cast<std::size_t>(index) < ranks_.size()
               ? ranks_[static_cast<std::size_t>(index)]
               : unranked_;
  }

  // The segment's samples stably sorted by key, by counting (on the issuing thread, before any
  // worker sees them; once a run for Offline's one query).
  void order_by_key(Segment& segment) const {
    const std::size_t count = segment.ids.size();
    std::vector<std::size_t> ranks(count);
    std::vector<std::size_t> starts(unranked_ + 2, 0);
    for (std::size_t i = 0; i < count; ++i) {
      ranks[i] = rank_of(segment.indices[i]);
      ++starts[ranks[i] + 1];
    }
    for (std::size_t r = 1; r < starts.size(); ++r) starts[r] += starts[r - 1];
    std::vector<std::uint64_t> ids(count);
    std::vector<std::int64_t> indices(count);
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t at = starts[ranks[i]]++;
      ids[at] = segment.ids[i];
      indices[at] = segment.indices[i];
    }
    segment.ids = std::move(ids);
    segment.indices = std::move(indices);
  }

  const std::size_t batch_size_;
  std::vector<std::size_t> ranks_;  // per sample index, its key's rank; empty: issue order
  std::size_t unranked_ = 0;        // the rank of a sample index past the keys
  const std::shared_ptr<TimelineRecorder> timeline_ = std::make_shared<TimelineRecorder>();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Segment> segments_;
  bool closed_ = false;
};

// Server: a batch leaves when `batch_size` samples are waiting, or when the oldest waiting sample
// has waited `timeout` (NVIDIA's deque_timeout_usec), whichever comes first. Closing flushes.
// With `bucket_of` (one bucket number per QSL sample index: RNN-T's utterances by length range),
// samples wait in one queue per bucket and a batch holds one bucket's samples only, each queue
// batched as above on its own clock: a batch's work follows its largest sample (a greedy decoder
// steps every row until its longest utterance is done), so a batch of like lengths wastes little.
// Of the queues ready (full, or timed out), the one whose oldest sample came first goes first, so
// none starves; a sample index past `bucket_of` waits in the last queue. No `bucket_of`: one
// queue, arrival order, as before.
class DynamicBatcher : public SampleIntake<DynamicBatcher> {
 public:
  DynamicBatcher(std::size_t batch_size, std::chrono::nanoseconds timeout,
                 const std::vector<std::int64_t>& bucket_of = {})
      : batch_size_(batch_size), timeout_(timeout) {
    if (batch_size == 0) throw std::invalid_argument("batch_size must be at least 1");
    if (timeout.count() < 0) throw std::invalid_argument("timeout must not be negative");
    std::int64_t most = 0;
    bucket_of_.reserve(bucket_of.size());
    for (std::int64_t bucket : bucket_of) {
      if (bucket < 0) throw std::invalid_argument("bucket numbers must not be negative");
      most = std::max(most, bucket);
      bucket_of_.push_back(static_cast<std::size_t>(bucket));
    }
    queues_.resize(static_cast<std::size_t>(most) + 1);
  }

  template <typename IdAt, typename IndexAt>
  void put_each(std::size_t count, IdAt id_at, IndexAt index_at) {
    if (count == 0) return;
    const Clock::time_point now = Clock::now();
    timeline_->issued(TimelineRecorder::to_ns(now), count);
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) throw std::runtime_error("put on a closed batch source");
      // A waiting worker needs waking only to start the oldest sample's timer (nothing was
      // waiting) or to take a full batch. Otherwise its deadline is unchanged (a new sample's
      // deadline is the latest of all): waking it for every query would cost a context switch per
      // sample at tens of thousands of queries a second.
      wake = waiting_ == 0;
      for (std::size_t i = 0; i < count; ++i) {
        const std::int64_t index = index_at(i);
        std::deque<Pending>& queue = queues_[bucket(index)];
        queue.push_back({id_at(i), index, now});
        wake = wake || queue.size() % batch_size_ == 0;
      }
      waiting_ += count;
    }
    if (wake) ready_.notify_one();
  }

  bool next(Batch& out) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      // A queue is ready when full, timed out (its oldest has waited `timeout`) or closing; of the
      // ready ones the one whose oldest sample came first goes, so a queue that timed out is never
      // starved by younger full ones. None ready: wait for the oldest's deadline or a put.
      const Clock::time_point now = Clock::now();
      std::deque<Pending>* chosen = nullptr;
      std::deque<Pending>* oldest = nullptr;
      for (std::deque<Pending>& queue : queues_) {
        if (queue.empty()) continue;
        const Clock::time_point first = queue.front().arrival;
        if (oldest == nullptr || first < oldest->front().arrival) oldest = &queue;
        const bool ready = queue.size() >= batch_size_ || closed_ || now >= first + timeout_;
        if (ready && (chosen == nullptr || first < chosen->front().arrival)) chosen = &queue;
      }
      if (chosen != nullptr) {
        take(*chosen, std::min(batch_size_, chosen->size()), out);
        break;
      }
      if (oldest != nullptr) {
        ready_.wait_until(lock, oldest->front().arrival + timeout_);
      } else if (closed_) {
        return false;
      } else {
        ready_.wait(lock);
      }
    }
    const bool more = waiting_ > 0;
    lock.unlock();
    if (more) ready_.notify_one();  // more is waiting: wake another worker
    return true;
  }

  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  std::size_t batch_size() const { return batch_size_; }
  std::chrono::nanoseconds timeout() const { return timeout_; }
  std::size_t buckets() const { return queues_.size(); }
  TimelineRecorder& timeline() { return *timeline_; }

  std::size_t pending() {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_;
  }

 private:
  struct Pending {
    std::uint64_t id;
    std::int64_t index;
    Clock::time_point arrival;
  };

  std::size_t bucket(std::int64_t index) const {
    return index >= 0 && static_cast<std::size_t>(index) < bucket_of_.size()
               ? bucket_of_[static_cast<std::size_t>(index)]
               : queues_.size() - 1;
  }

  void take(std::deque<Pending>& queue, std::size_t count, Batch& out) {
    out.response_ids.resize(count);
    out.sample_indices.resize(count);
    out.issue_ns.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      out.response_ids[i] = queue.front().id;
      out.sample_indices[i] = queue.front().index;
      out.issue_ns[i] = TimelineRecorder::to_ns(queue.front().arrival);
      queue.pop_front();
    }
    waiting_ -= count;
    out.timeline = timeline_;
  }

  const std::size_t batch_size_;
  const std::chrono::nanoseconds timeout_;
  std::vector<std::size_t> bucket_of_;  // per sample index, its queue; empty: one queue
  const std::shared_ptr<TimelineRecorder> timeline_ = std::make_shared<TimelineRecorder>();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::deque<Pending>> queues_;  // one per bucket
  std::size_t waiting_ = 0;                  // samples in every queue
  bool closed_ = false;
};

}  // namespace harness_native
