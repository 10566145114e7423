// The C++ text of an ir::ArraysOverlap test (see overlap_test.h).
#include "codegen/overlap_test.h"

namespace plait::codegen {

std::string overlap_test(const ir::ArraysOverlap& o, const ArrayLocalNames& names) {
  auto reach = [&](const ir::ArrayVar& a) {
    std::string lowest = "int64_t(0)", highest = "int64_t(0)", empty = "false";
    for (int d = 0; d < a->type.ndim; ++d) {
      const std::string n = names.extent(a, d), s = names.stride(a, d);
      lowest += " + plait::lowest_offset(" + n + ", " + s + ")";
      highest += " + plait::highest_offset(" + n + ", " + s + ")";
      empty += " || " + n + " <= 0";
    }
    return "plait::bytes_reached(" + names.data(a) + ", int64_t(sizeof(" + names.element_type(a) + ")), " + lowest +
           ", " + highest + ", " + empty + ")";
  };
  std::string test = "plait::memory_overlaps(" + reach(o.a) + ", " + reach(o.b) + ")";
  // Arrays of different dtypes or ranks are never one view.
  if (!o.unless_same_view || o.a->type.dtype != o.b->type.dtype || o.a->type.ndim != o.b->type.ndim) return test;
  std::string same = names.data(o.a);
  same.append(" == ").append(names.data(o.b));
  for (int d = 0; d < o.a->type.ndim; ++d) {
    const std::string n = names.extent(o.a, d);
    same.append(" && ").append(n).append(" == ").append(names.extent(o.b, d));
    same.append(" && (").append(n).append(" <= 1 || ").append(names.stride(o.a, d));
    same.append(" == ").append(names.stride(o.b, d)).append(")");
  }
  std::string result = "(";
  result.append(test).append(" && !(").append(same).append("))");
  return result;
}

}  // namespace plait::codegen
