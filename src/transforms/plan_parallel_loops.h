// Pass: choose how nested parallel loops run and describe every parallel and
// vector loop for kernel.explain().
//
// Perfectly nested parallel loops (the outer body is only the inner loop, and
// the inner bounds do not depend on the outer variable) are collapsed into
// one parallel iteration space. A parallel loop nested inside another
// parallel loop in any other way runs serially (OpenMP would run it with one
// thread anyway, after paying for a region), and the remark says so. Any
// parallel or vector loop inside a vector loop (the reduction of a whole array
// in a `simd` loop's body) runs serially: OpenMP allows no loop construct in a
// simd region.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void plan_parallel_loops(ir::Function& function);

}  // namespace plait::transforms
