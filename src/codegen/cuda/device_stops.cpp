// The entry tests of generated kernels (device_stops.h).
#include "codegen/cuda/device_stops.h"

namespace plait::codegen::cuda {

bool threads_wait(const std::string& kernel_body) {
  // "sync" covers __syncthreads(_or), __syncwarp, team_sync, grid_sync and
  // the *_sync shuffles and votes; the others are the device runtime's
  // helpers that shuffle, vote or wait inside (shuffle_down, shuffle_from,
  // warp_combine, team_combine, reduce_*, team_stopped, block_stopped). A
  // false match costs one barrier at the entry; a missed one could leave a
  // thread waiting.
  for (const char* word : {"sync", "shfl", "shuffle", "combine", "reduce_", "_stopped("})
    if (kernel_body.find(word) != std::string::npos) return true;
  return false;
}

std::string entry_test(const std::string& kernel_body) {
  return threads_wait(kernel_body) ? "  if (plait::block_stopped(p_err)) return;  // an error stops the call\n"
                                   : "  if (plait::stopped(p_err)) return;  // an error stops the call\n";
}

}  // namespace plait::codegen::cuda
