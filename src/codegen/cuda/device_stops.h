// How device code stops once the call has recorded an error (docs/cuda.md,
// "Errors on the device"): every kernel tests the device error record at
// its entry, so that no launch after a failed one does any work; a kernel
// whose threads wait for each other tests it with one answer per block, so
// that no thread waits at a barrier or a shuffle for one that left.
#pragma once

#include <string>

namespace plait::codegen::cuda {

// Whether the text of a kernel's body has threads that wait for each other
// or exchange values: block and team barriers, grid barriers, warp shuffles
// and votes, and the device runtime's helpers built on them (reductions,
// team combines, the team's and the block's tests of the error record).
bool threads_wait(const std::string& kernel_body);

// The entry test of a kernel with this body, a line at indent 1 that returns
// when the record holds an error: plait::stopped (one load per thread), or
// plait::block_stopped when its threads wait for each other.
std::string entry_test(const std::string& kernel_body);

}  // namespace plait::codegen::cuda
