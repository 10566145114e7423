// The pipeline's entry: the function as the front end left it, then the
// passes of its target (pipeline_cpu.cpp, pipeline_cuda.cpp).
#include "driver/pipeline.h"

#include "driver/pass_runner.h"

namespace plait {

void run_pipeline(ir::Function& function, const CompileOptions& options, const PassObserver& after_pass) {
  PassRunner run(function, options, after_pass);
  run.lowered();
  switch (options.target) {
    case Target::CPU:
      run_cpu_passes(run, options);
      return;
    case Target::CUDA:
      run_cuda_passes(run, options);
      return;
  }
  PLAIT_INTERNAL_ERROR("unknown target");
}

}  // namespace plait
