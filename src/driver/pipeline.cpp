// The pipeline's entry: the function as the front end left it, then the
// passes of its target (pipeline_cpu.cpp, pipeline_cuda.cpp).
#include "driver/pipeline.h"

#include <algorithm>

#include "driver/pass_runner.h"

namespace plait {

const std::vector<std::string>& optional_passes(Target target) {
  return target == Target::CPU ? cpu_optional_passes() : cuda_optional_passes();
}

std::string disabled_passes_error(const CompileOptions& options) {
  const std::vector<std::string>& listed = optional_passes(options.target);
  for (const std::string& name : options.disabled_passes) {
    if (std::find(listed.begin(), listed.end(), name) != listed.end()) continue;
    std::string known;
    for (const std::string& pass : listed) known += (known.empty() ? "" : ", ") + pass;
    return "'" + name + "' is not an optional pass of the " + (options.target == Target::CPU ? "cpu" : "cuda") +
           " target; optional: " + (known.empty() ? "none" : known);
  }
  return "";
}

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
