// Pass: loop fusion and temporary shrinking (see fuse_loop_nests.h).
#include "transforms/fuse_loop_nests.h"

#include "transforms/fuse_loop_nests_impl.h"

namespace plait::transforms {

void fuse_loop_nests(ir::Function& function) {
  fusion::Fuser fuser(function);
  function.body = fuser.run(function.body);
  for (auto& r : fuser.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
