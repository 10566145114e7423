// The pool of large host blocks behind plait_context::memory: free blocks by
// size, oldest given back first once the budget is exceeded.
#include "jit/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <list>
#include <mutex>
#include <string>

namespace plait::jit {
namespace {

constexpr uint64_t kHugePage = uint64_t(2) << 20;

struct FreeBlock {
  void* block;
  uint64_t bytes;
};

uint64_t default_budget() {
  if (const char* text = std::getenv("PLAIT_HOST_MEMORY_POOL"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (end != nullptr && *end == '\0') return value;
  }
  uint64_t budget = uint64_t(1) << 30;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    const uint64_t eighth = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) / 8;
    if (eighth < budget) budget = eighth;
  }
  return budget;
}

class Pool {
 public:
  Pool() : budget_(default_budget()) {}

  void* allocate(uint64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Most recent first: its pages are the likeliest to be in the caches.
      for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
        if (it->bytes == bytes) {
          void* block = it->block;
          free_bytes_ -= bytes;
          free_.erase(std::next(it).base());
          return block;
        }
      }
    }
    void* block = std::aligned_alloc(kHugePage, bytes);
    if (block != nullptr) ::madvise(block, bytes, MADV_HUGEPAGE);
    return block;
  }

  void release(void* block, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > budget_) {
      std::free(block);
      return;
    }
    free_.push_back({block, bytes});
    free_bytes_ += bytes;
    while (free_bytes_ > budget_) {
      free_bytes_ -= free_.front().bytes;
      std::free(free_.front().block);
      free_.pop_front();
    }
  }

  HostMemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {free_.size(), free_bytes_, budget_};
  }

  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const FreeBlock& f : free_) std::free(f.block);
    free_.clear();
    free_bytes_ = 0;
  }

 private:
  std::mutex mutex_;
  std::list<FreeBlock> free_;  // oldest first
  uint64_t free_bytes_ = 0;
  const uint64_t budget_;
};

// Never destroyed: arrays that kernels returned may be freed while the
// process exits, after static destructors have run.
Pool& pool() {
  static Pool* const instance = new Pool();
  return *instance;
}

void* pool_allocate(uint64_t bytes) { return pool().allocate(bytes); }
void pool_release(void* block, uint64_t bytes) { pool().release(block, bytes); }

}  // namespace

const plait_host_memory* host_memory_pool() {
  static const plait_host_memory table{&pool_allocate, &pool_release};
  return &table;
}

HostMemoryStats host_memory_stats() { return pool().stats(); }

void release_free_host_memory() { pool().release_all(); }

}  // namespace plait::jit
