// The pool of large host blocks (jit/host_memory): reuse by size, alignment,
// release of free blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "jit/host_memory.h"

namespace plait::jit {
namespace {

constexpr uint64_t kBlock = uint64_t(4) << 20;

TEST(HostMemory, FreedBlockIsReusedForTheSameSize) {
  release_free_host_memory();
  const plait_host_memory* pool = host_memory_pool();
  void* a = pool->allocate(kBlock);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % (uintptr_t(2) << 20), 0u);
  std::memset(a, 7, kBlock);
  pool->release(a, kBlock);
  EXPECT_EQ(host_memory_stats().free_blocks, 1u);
  EXPECT_EQ(host_memory_stats().free_bytes, kBlock);

  void* other_size = pool->allocate(2 * kBlock);  // not the free block's size
  EXPECT_NE(other_size, a);
  EXPECT_EQ(host_memory_stats().free_blocks, 1u);
  void* again = pool->allocate(kBlock);
  EXPECT_EQ(again, a);
  EXPECT_EQ(host_memory_stats().free_blocks, 0u);
  pool->release(again, kBlock);
  pool->release(other_size, 2 * kBlock);
  EXPECT_EQ(host_memory_stats().free_bytes, 3 * kBlock);
  release_free_host_memory();
  EXPECT_EQ(host_memory_stats().free_blocks, 0u);
  EXPECT_EQ(host_memory_stats().free_bytes, 0u);
}

TEST(HostMemory, BudgetBoundsTheFreeBytes) {
  release_free_host_memory();
  const uint64_t budget = host_memory_stats().budget_bytes;
  const plait_host_memory* pool = host_memory_pool();
  // Untouched blocks cost address space only. Blocks beyond the budget are
  // given back to the system, oldest first.
  const uint64_t count = budget / kBlock + 2;
  ASSERT_LE(count, 1000u);
  std::vector<void*> blocks;
  for (uint64_t i = 0; i < count; ++i) {
    blocks.push_back(pool->allocate(kBlock));
    ASSERT_NE(blocks.back(), nullptr);
  }
  for (void* block : blocks) pool->release(block, kBlock);
  EXPECT_EQ(host_memory_stats().free_blocks, budget / kBlock);
  EXPECT_LE(host_memory_stats().free_bytes, budget);
  // The newest block is kept: the next allocation gets it.
  EXPECT_EQ(pool->allocate(kBlock), blocks.back());
  pool->release(blocks.back(), kBlock);
  release_free_host_memory();
}

}  // namespace
}  // namespace plait::jit
