// The CUDA back end: IR -> host C++ (the function outside parallel loops,
// launching kernels through plait_context::cuda) + device CUDA C++ (one
// __global__ kernel per outermost parallel loop and per single-thread device
// region). See codegen_cuda.h for the mapping.
//
// Both parts use the same names for the same values: a scalar `x` is v_x in
// host code and in every kernel that receives it as a parameter, an array
// `A` is a_A_data / a_A_n<d> / a_A_s<d>. Kernels receive what they read by
// value; scalars a kernel assigns and the host reads afterwards travel
// through 8-byte slots of the call's scratch buffer.
#include "codegen/cuda/codegen_cuda.h"

#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen {

CudaSources generate_cuda(const Function& function, const CompileOptions& options) {
  const std::string launch_error = launch_config_error(options.cuda_launch);
  if (!launch_error.empty()) PLAIT_INTERNAL_ERROR("CUDA launch configuration: " + launch_error);
  cuda_emitter::CudaEmitter emitter(function, options.cuda_launch);
  return emitter.run();
}

}  // namespace plait::codegen
