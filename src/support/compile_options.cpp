#include "support/compile_options.h"

#include <cstdlib>

namespace plait {

std::string CudaLaunchConfig::to_string() const {
  return "threads " + std::to_string(threads) + ", row groups " + std::to_string(row_groups) + ", largest team " +
         std::to_string(team_cap());
}

std::string launch_config_error(const CudaLaunchConfig& config) {
  auto power_of_two_in = [](int value, int low, int high) {
    return value >= low && value <= high && (value & (value - 1)) == 0;
  };
  if (!power_of_two_in(config.threads, 64, 1024))
    return "threads (per block) must be 64, 128, 256, 512 or 1024, not " + std::to_string(config.threads);
  if (!power_of_two_in(config.row_groups, 1, 8))
    return "row_groups must be 1, 2, 4 or 8, not " + std::to_string(config.row_groups);
  if (config.max_team != 0 && !power_of_two_in(config.max_team, 32, config.threads))
    return "max_team must be a power of two from 32 to threads (" + std::to_string(config.threads) + "), not " +
           std::to_string(config.max_team);
  return "";
}

bool verify_ir_from_environment() {
  const char* value = std::getenv("PLAIT_VERIFY_IR");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

}  // namespace plait
