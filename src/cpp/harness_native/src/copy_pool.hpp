// Row gathers on a small pool of persistent threads: the calling thread takes a share of the rows
// and helpers take the rest, so a batch of large samples is copied with several cores at once.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace harness_native {

class CopyPool {
 public:
  explicit CopyPool(std::size_t threads) : threads_(std::max<std::size_t>(1, threads)) {
    for (std::size_t i = 1; i < threads_; ++i) helpers_.emplace_back([this] { run(); });
  }

  ~CopyPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& t : helpers_) t.join();
  }

  CopyPool(const CopyPool&) = delete;
  CopyPool& operator=(const CopyPool&) = delete;

  std::size_t threads() const { return threads_; }

  // dst row i <- src row rows[i], each row_bytes long. Splits the rows over at most `max_threads`
  // threads (the pool's size when 0), and only when each share is worth a thread (min_share_bytes).
  void gather_rows(std::uint8_t* dst, const std::uint8_t* src, const std::int64_t* rows,
                   std::size_t count, std::size_t row_bytes, std::size_t max_threads = 0,
                   std::size_t min_share_bytes = kMinShareBytes) {
    if (count == 0 || row_bytes == 0) return;
    std::size_t limit = max_threads == 0 ? threads_ : std::min(max_threads, threads_);
    std::size_t by_size = std::max<std::size_t>(1, (count * row_bytes) / min_share_bytes);
    std::size_t parts = std::min({limit, count, by_size});
    if (parts <= 1) {
      copy_range(dst, src, rows, 0, count, row_bytes);
      return;
    }
    Latch latch(parts - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t p = 1; p < parts; ++p) {
        std::size_t begin = count * p / parts;
        std::size_t end = count * (p + 1) / parts;
        tasks_.push_back({dst, src, rows, begin, end, row_bytes, &latch});
      }
    }
    work_ready_.notify_all();
    copy_range(dst, src, rows, 0, count / parts, row_bytes);
    // Help with our own tasks rather than wait idle if no helper has picked them up yet.
    for (;;) {
      Task task;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = std::find_if(tasks_.begin(), tasks_.end(),
                               [&latch](const Task& t) { return t.latch == &latch; });
        if (it == tasks_.end()) break;
        task = *it;
        tasks_.erase(it);
      }
      execute(task);
    }
    latch.wait();
  }

  static void copy_range(std::uint8_t* dst, const std::uint8_t* src, const std::int64_t* rows,
                         std::size_t begin, std::size_t end, std::size_t row_bytes) {
    for (std::size_t i = begin; i < end; ++i) {
      std::memcpy(dst + i * row_bytes, src + static_cast<std::size_t>(rows[i]) * row_bytes,
                  row_bytes);
    }
  }

  static constexpr std::size_t kMinShareBytes = 256 * 1024;

 private:
  class Latch {
   public:
    explicit Latch(std::size_t count) : count_(count) {}
    void count_down() {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--count_ == 0) done_.notify_all();
    }
    void wait() {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return count_ == 0; });
    }

   private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::size_t count_;
  };

  struct Task {
    std::uint8_t* dst = nullptr;
    const std::uint8_t* src = nullptr;
    const std::int64_t* rows = nullptr;
    std::size_t begin = 0, end = 0, row_bytes = 0;
    Latch* latch = nullptr;
  };

  static void execute(const Task& task) {
    copy_range(task.dst, task.src, task.rows, task.begin, task.end, task.row_bytes);
    task.latch->count_down();
  }

  void run() {
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        work_ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, nothing left
        task = tasks_.front();
        tasks_.pop_front();
      }
      execute(task);
    }
  }

  const std::size_t threads_;
  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
};

}  // namespace harness_native
