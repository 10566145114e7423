// Which parameters a kernel may write: the caller refuses read-only and
// self-overlapping arrays (zero strides) for them, since a write there would
// change memory Python treats as immutable or several elements at once.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace plait::analysis {

// Per parameter of `function` (in order): whether the kernel may store into
// its elements, through a Store, an AtomicUpdate or a library product's
// output, directly or through a local bound to it (`w = a; w[0] = 1`).
// Conservative: a parameter bound to a written local anywhere counts as
// written, whatever the control flow.
std::vector<bool> written_parameters(const ir::Function& function);

}  // namespace plait::analysis
