// The pipeline's pass runner (pass_runner.h).
#include "driver/pass_runner.h"

#include <algorithm>

#include "ir/ir_printer.h"

namespace plait {

bool PassRunner::differs(const ir::Stmt& before) const {
  if (!after_pass_) return true;
  return ir::to_string(before) != ir::to_string(function_.body);
}

void PassRunner::finish(const char* name, bool changed) {
  if (options_.verify_ir) analysis::verify_ir(function_, name, verify_);
  if (after_pass_) after_pass_(name, function_, changed);
}

void PassRunner::check_optional(const char* name) const {
  const std::vector<std::string>& listed = optional_passes(options_.target);
  if (std::find(listed.begin(), listed.end(), name) == listed.end()) {
    PLAIT_INTERNAL_ERROR(std::string("pass ") + name + " runs as optional but is not in optional_passes");
  }
}

}  // namespace plait
