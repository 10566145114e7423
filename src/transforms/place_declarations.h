// Pass: decide where each local is declared.
//
// A local is declared in the innermost block that contains all its uses and
// on whose entry its previous value does not matter (it is written before it
// is read on every path through the block). A local declared inside a loop
// body is therefore fresh in every iteration, which is what makes it private
// to each iteration of a parallel loop. A loop variable used only inside its
// loop gets no Declare: the back end declares it in the loop. A scalar that
// the IR already declares keeps its Declares (the tensor level declares a
// coordinate in its loop's body, which versioning may then copy: each copy
// keeps its own, and a GPU team's threads each have theirs).
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void place_declarations(ir::Function& function);

}  // namespace plait::transforms
