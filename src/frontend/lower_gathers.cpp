// Lowering of array expressions: gathers, subscripts with one integer array
// (`x[idx]`, `x[indices[a:b]]`, `A[:, cols]`) read as tensors.
//
// A gather is a view that takes the indexed axis whole (array_view) and a
// tensor whose element reads the view at the index array's element there.
// Where that axis is an array's own dimension, the element is a plain load
// at the loaded index, and the passes treat it as any index loaded from an
// array: normalize_indices wraps negative indices, insert_bounds_checks
// checks them (once, by scans of the index array, where it can). Where the
// axis is a view's (`x[::2][idx]`), the array's bounds are not the view's:
// the element wraps and checks the index against the view's extent itself.
#include "frontend/array_lowering.h"

namespace plait::lowering {

TensorPtr Lowerer::gather_index_tensor(const Value& v, bool second, SourceLoc loc) {
  if (second)
    unsupported(
        "indexing with more than one array in a subscript is not supported: one position may hold an integer "
        "array, the others slices, integers or None",
        loc);
  TensorPtr t = to_tensor(v, loc);
  if (t->type.is_bool())
    unsupported("indexing with a boolean array (a mask) is not supported: index with an array of integers", loc);
  if (!t->type.is_int()) type_error("arrays used as indices must be of integer type, got " + describe(t->type), loc);
  if (t->rank() == 0) unsupported("a 0-dimensional index array is not supported", loc);
  return t;
}

TensorPtr Lowerer::gather(const TensorPtr& view, size_t axis, const TensorPtr& index, bool first, SourceLoc loc) {
  auto t = std::make_shared<Tensor>();
  t->type = view->type;
  t->not_assignable = kAssignThroughArrayIndex;
  const size_t k = index->rank();
  const size_t at = first ? 0 : axis;
  for (size_t d = 0; d < view->rank(); ++d) {
    if (d == axis) continue;
    t->shape.push_back(view->shape[d]);
    t->unit.push_back(view->unit[d]);
    t->labels.push_back(view->labels[d]);
  }
  t->shape.insert(t->shape.begin() + at, index->shape.begin(), index->shape.end());
  t->unit.insert(t->unit.begin() + at, index->unit.begin(), index->unit.end());
  t->labels.insert(t->labels.begin() + at, index->labels.begin(), index->labels.end());
  // Neither the array read nor the index array is read at the elements of
  // the result: overlap with a target is decided on the arrays alone.
  for (auto r : view->reads) {
    r.node = nullptr;
    t->reads.push_back(r);
  }
  for (auto r : index->reads) {
    r.node = nullptr;
    t->reads.push_back(r);
  }
  const bool direct = whole_array_axis(view, axis);
  const Expr n = view->shape[axis];
  const bool check = options_.boundscheck;
  t->element = [this, view, index, axis, at, k, direct, n, check, loc](const std::vector<Expr>& idx, Sink& sink) {
    std::vector<Expr> iidx(idx.begin() + at, idx.begin() + at + k);
    std::vector<Expr> rest(idx.begin(), idx.begin() + at);
    rest.insert(rest.end(), idx.begin() + at + k, idx.end());
    Expr j = cast(index->element(iidx, sink), ScalarType::py_int());
    if (!direct) {
      ir::Var g = temp_var(ScalarType::py_int(), loc);
      g->name = "_gather" + g->name.substr(4);
      Expr ref = ir::VarRef::make(g, loc);
      std::vector<Stmt> group;
      group.push_back(ir::Assign::make(g, j, loc));
      group.push_back(
          ir::Assign::make(g, ir::Select::make(lt(ref, int_imm(0, loc), loc), add(ref, n, loc), ref, loc), loc));
      if (check)
        group.push_back(ir::Assert::make(
            ir::Logical::make(ir::LogicalOp::And, ir::Compare::make(ir::CompareOp::GE, ref, int_imm(0, loc), loc),
                              lt(ref, n, loc), loc),
            PLAIT_INDEX_ERROR, "index out of bounds for the axis it indexes", loc));
      sink.groups.push_back(group);
      j = ref;
    }
    std::vector<Expr> vidx(rest.begin(), rest.begin() + axis);
    vidx.push_back(j);
    vidx.insert(vidx.end(), rest.begin() + axis, rest.end());
    return view->element(vidx, sink);
  };
  return t;
}

}  // namespace plait::lowering
