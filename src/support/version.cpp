#include "support/version.h"

#include "runtime/abi.h"

#define PLAIT_STRINGIFY_VALUE(x) #x
#define PLAIT_STRINGIFY(x) PLAIT_STRINGIFY_VALUE(x)

namespace plait {

const char* compiler_version() {
  return PLAIT_VERSION "+abi" PLAIT_STRINGIFY(PLAIT_ABI_VERSION);
}

}  // namespace plait
