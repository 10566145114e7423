// Pass: fuse consecutive loop nests and shrink the temporaries they share.
//
// First, array statements whose operands may broadcast an extent that is 1
// only at run time (they index through `_broadcast` flags) are versioned: the
// flags are computed before the run of statements, and the version for the
// usual case, all flags false, has plain indices and extents, so its nests
// fuse and vectorise as any others. Flags that compare an extent with itself
// once extents are written canonically are dropped.
//
// Array statements become one loop nest each. When consecutive nests run over
// the same extent and every array that one writes and another touches is
// accessed only at the loop's own index in one dimension (so iteration k of
// the second nest needs only what iteration k of the first produced), the
// nests become one loop. An array allocated just for these statements and
// used only inside the fused loop, always at the loop's index in its first
// dimension, then needs only that one slice per iteration: it is allocated
// per iteration without its first dimension; one that holds a single element
// per iteration, written by the loop body before any later statement of the
// body reads it, becomes a scalar (a mask used by two reductions allocates
// nothing). Assignments of scalars computed from no array (the start of a
// reduction) move above the first nest, so sibling reductions over one range
// fuse into one pass. The nests inside a fused loop's body are fused in
// turn, so 3-D and 4-D statements fuse over every shared leading dimension.
// This is what lets `m = x.max(axis=-1, keepdims=True); e = np.exp(x - m);
// e / e.sum(axis=-1, keepdims=True)` make one pass per row over x, keep one
// row of e and allocate nothing else besides its result.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void fuse_loop_nests(ir::Function& function);

}  // namespace plait::transforms
