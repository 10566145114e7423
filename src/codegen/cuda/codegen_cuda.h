// Code generation for the CUDA target: a host part in C++ (built by the
// system compiler into the kernel library, with the entry ABI of
// runtime/abi.h) and a device part in CUDA C++ (built by NVRTC).
//
// The mapping (docs/cuda.md):
// - each outermost parallel loop (with the loops collapsed into it) becomes
//   a __global__ kernel, blocks of CudaLaunchConfig::threads threads
//   (options.cuda_launch, 256 by default), grid-stride loop
//   over its iterations: each iteration is one thread, or a team of threads
//   over which its inner loops are spread, as transforms/gpu/plan_workers
//   planned (the function must come from the CUDA pipeline, which ends with
//   the planning passes, for the same launch configuration);
// - `#pragma atomic` += / -= on small 1-D arrays accumulate in a copy in
//   shared memory per block first;
// - reductions across the parallel loop: warp shuffles, then one atomic per
//   warp into an accumulator in the call's scratch buffer, which the host
//   initialises with the value before the loop and reads back after;
// - a serial loop whose steps are parallel loops (and scalar statements that
//   need nothing from the host) is one persistent kernel that runs all the
//   steps, with a barrier after each parallel loop, where
//   transforms/gpu/plan_persistent_loops planned one; the host picks one
//   block, a cooperative grid or launches per step at each call
//   (docs/cuda.md);
// - statements outside parallel loops that read or write array elements run
//   on the GPU as single-thread kernels (consecutive ones together), with
//   the host scalars they assign passed through the scratch buffer; array
//   elements read by host expressions (loop bounds, conditions, returned
//   values) are copied from the device one at a time;
// - everything else stays host code, which launches the kernels through
//   plait_context::cuda.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/compile_options.h"

namespace plait::codegen {

struct CudaSources {
  std::string host;    // C++: exports PLAIT_ENTRY_SYMBOL and PLAIT_ABI_SYMBOL
  std::string device;  // CUDA C++, self-contained (no includes under NVRTC)
  // extern "C" names of the device kernels; the index is the `kernel`
  // argument of plait_cuda_api::launch.
  std::vector<std::string> kernel_names;
  std::vector<bool> kernel_raises;  // by kernel index: its device code may record a run-time error
  bool device_errors = false;       // device code may record a run-time error
  // Messages of IR assertions in device code, by the index the device
  // error record carries (runtime::DeviceMessage::AssertFailed).
  std::vector<std::string> assert_messages;
  std::vector<ir::Remark> remarks;  // how each part runs on the GPU, for explain()
};

// Throws CompileError for what the CUDA target does not support (arrays
// allocated inside parallel loops).
CudaSources generate_cuda(const ir::Function& function, const CompileOptions& options);

}  // namespace plait::codegen
