// Recycled batch buffers. A fresh multi-megabyte allocation is a fresh mmap: every page faults on
// first touch, which costs as much as the copy itself. Buffers freed by Python (the array's last
// reference dropped) go back to the pool and are handed out again, so steady-state gathers touch
// warm memory. Pinned (page-locked) buffers come from the CUDA runtime, loaded when first needed.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace harness_native {

class CudaHostAllocator {
 public:
  static CudaHostAllocator& get() {
    static CudaHostAllocator instance;
    return instance;
  }

  void* allocate(std::size_t bytes) {
    if (host_alloc_ == nullptr) {
      throw std::runtime_error(
          "pinned buffers need the CUDA runtime (libcudart.so), which could not be loaded: " +
          error_);
    }
    void* pointer = nullptr;
    const unsigned int portable = 1;  // cudaHostAllocPortable: pinned for every CUDA context
    int status = host_alloc_(&pointer, bytes, portable);
    if (status != 0 || pointer == nullptr) {
      throw std::runtime_error("cudaHostAlloc of " + std::to_string(bytes) +
                               " bytes failed with CUDA error " + std::to_string(status));
    }
    return pointer;
  }

  void release(void* pointer) {
    if (free_host_ != nullptr) free_host_(pointer);
  }

  bool available() const { return host_alloc_ != nullptr; }
  const std::string& error() const { return error_; }

 private:
  using HostAlloc = int (*)(void**, std::size_t, unsigned int);
  using FreeHost = int (*)(void*);

  CudaHostAllocator() {
    const char* names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                           "libcudart.so.11.0"};
    for (const char* name : names) {
      void* library = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
      if (library == nullptr) {
        const char* message = dlerror();
        error_ = message != nullptr ? message : name;
        continue;
      }
      host_alloc_ = reinterpret_cast<HostAlloc>(dlsym(library, "cudaHostAlloc"));
      free_host_ = reinterpret_cast<FreeHost>(dlsym(library, "cudaFreeHost"));
      if (host_alloc_ != nullptr && free_host_ != nullptr) return;
      host_alloc_ = nullptr;
      free_host_ = nullptr;
      error_ = std::string(name) + " has no cudaHostAlloc/cudaFreeHost";
    }
  }

  HostAlloc host_alloc_ = nullptr;
  FreeHost free_host_ = nullptr;
  std::string error_;
};

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  BufferPool(bool pinned, std::size_t max_cached_bytes)
      : pinned_(pinned), max_cached_bytes_(max_cached_bytes) {}

  ~BufferPool() {
    for (auto& entry : free_) free_memory(entry.second);
  }

  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  void* acquire(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        void* pointer = it->second;
        free_.erase(it);
        cached_bytes_ -= bytes;
        ++reused_;
        return pointer;
      }
      ++allocated_;
    }
    return pinned_ ? CudaHostAllocator::get().allocate(bytes) : host_memory(bytes);
  }

  void give_back(void* pointer, std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + bytes <= max_cached_bytes_) {
        free_.emplace(bytes, pointer);
        cached_bytes_ += bytes;
        return;
      }
    }
    free_memory(pointer);
  }

  bool pinned() const { return pinned_; }

  std::size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_bytes_;
  }
  std::size_t allocated() {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocated_;
  }
  std::size_t reused() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reused_;
  }

 private:
  static void* host_memory(std::size_t bytes) {
    const std::size_t alignment = 4096;
    void* pointer = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    if (pointer == nullptr) throw std::bad_alloc();
    return pointer;
  }

  void free_memory(void* pointer) const {
    if (pinned_) {
      CudaHostAllocator::get().release(pointer);
    } else {
      std::free(pointer);
    }
  }

  const bool pinned_;
  const std::size_t max_cached_bytes_;
  std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
  std::size_t cached_bytes_ = 0;
  std::size_t allocated_ = 0;
  std::size_t reused_ = 0;
};

}  // namespace harness_native
