// The process-wide pool of large host blocks that compiled CPU kernels
// allocate their big arrays from (plait_context::memory).
//
// A kernel that returns a fresh 100 MB array faults its pages in on every
// call, and the operating system zeroes each page first: for a memory-bound
// kernel that costs as much as the kernel's own work. The pool keeps blocks
// that the caller has freed (the returned array was garbage-collected) and
// hands them to the next allocation of the same rounded size, pages already
// mapped. It holds at most a byte budget of free blocks
// ($PLAIT_HOST_MEMORY_POOL bytes; default min(1 GiB, 1/8 of physical memory);
// 0 disables it) and gives the oldest back to the system beyond it.
#pragma once

#include <cstdint>

#include "runtime/abi.h"

namespace plait::jit {

// The table to put in plait_context::memory (never null; with a budget of 0
// it allocates and frees directly).
const plait_host_memory* host_memory_pool();

// Free blocks now held, and their bytes (for tests and the Python API).
struct HostMemoryStats {
  uint64_t free_blocks = 0;
  uint64_t free_bytes = 0;
  uint64_t budget_bytes = 0;
};
HostMemoryStats host_memory_stats();

// Gives every free block back to the system.
void release_free_host_memory();

}  // namespace plait::jit
