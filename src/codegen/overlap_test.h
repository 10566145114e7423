// The C++ text of an ir::ArraysOverlap test, shared by the CPU back end and
// both sides (host and device) of the CUDA back end, whose runtimes define
// the helpers it calls (plait::bytes_reached, memory_overlaps, ...).
#pragma once

#include <functional>
#include <string>

#include "ir/ir.h"

namespace plait::codegen {

// How a back end names an array's locals: its data pointer, the extent of a
// dimension, the stride (in elements) of a dimension, and its element type.
struct ArrayLocalNames {
  std::function<std::string(const ir::ArrayVar&)> data;
  std::function<std::string(const ir::ArrayVar&, int)> extent;
  std::function<std::string(const ir::ArrayVar&, int)> stride;
  std::function<std::string(const ir::ArrayVar&)> element_type;
};

// A bool expression: whether the bytes the two arrays' elements reach
// intersect, and, with unless_same_view, the two are not one view.
std::string overlap_test(const ir::ArraysOverlap& o, const ArrayLocalNames& names);

}  // namespace plait::codegen
