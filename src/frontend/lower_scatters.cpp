// Lowering of scatters: `np.add.at(y, idx, v)` and `np.bincount(x,
// weights=None, minlength=0)`.
//
// Both become loop nests over the indices whose updates are AtomicUpdate
// adds, as `#pragma atomic` lowers: duplicate indices accumulate, and the
// outermost loop runs in parallel on both targets with no code generation of
// its own (privatize_atomics gives each thread a copy of a small target). A
// float target's sums are therefore associated in any order, as a
// reduction's in a parallel loop are.
#include "frontend/array_lowering.h"

namespace plait::lowering {

namespace {

// A loop over [0, extent) whose body is `body`.

}  // namespace

void Lowerer::scatter_add(const ast::Call& c, const std::vector<Value>& args) {
  const SourceLoc loc = c.loc;
  if (args.size() != 3 || !c.keywords.empty()) type_error("numpy.add.at(a, indices, b) takes three arguments", loc);
  if (!is_array_like(args[0])) type_error("numpy.add.at() needs an array to update", c.args[0]->loc);
  TensorPtr y = to_tensor(args[0], loc);
  if (!y->array || y->not_assignable)
    unsupported("numpy.add.at() updates an array or a view of one (a name, a slice of it)", c.args[0]->loc);
  if (!is_array_like(args[1])) unsupported("numpy.add.at() takes a 1-D integer array of indices", c.args[1]->loc);
  TensorPtr idx = gather_index_tensor(args[1], false, c.args[1]->loc);
  if (idx->rank() != 1) unsupported("numpy.add.at() takes a 1-D integer array of indices", c.args[1]->loc);
  TensorPtr v = to_tensor(args[2], c.args[2]->loc);
  ScalarType elem{y->array->type.dtype, false};
  if (elem.is_bool()) type_error("numpy.add.at() of a bool array is not supported", c.args[0]->loc);
  // The update adds in the element type; where NumPy would compute in a
  // wider type first (an int array updated with floats), results differ.
  ScalarType computed = promote(elem, v->type);
  if (computed.kind != elem.kind)
    type_error("numpy.add.at() of a " + describe(elem) + " array with " + describe(v->type) +
                   " values: NumPy would compute in " + describe(computed) +
                   " first; convert the values to the array's "
                   "dtype",
               c.args[2]->loc);
  // The updated elements: y's first axis indexed by idx, the others whole.
  std::vector<Expr> shape = {idx->shape[0]};
  shape.insert(shape.end(), y->shape.begin() + 1, y->shape.end());
  if (v->rank() > shape.size())
    fail(ErrorKind::Value, "numpy.add.at(): the values have more dimensions than the elements they update",
         c.args[2]->loc);
  if (inferring_) return;
  // v broadcasts to those elements' shape (NumPy's rule, checked here).
  const size_t offset = shape.size() - v->rank();
  std::vector<ir::Var> flags(v->rank());
  for (size_t d = 0; d < v->rank(); ++d) {
    const Expr& te = shape[d + offset];
    const Expr& ve = v->shape[d];
    if (v->unit[d] || same_expr(te, ve)) continue;
    pending_.push_back(ir::Assert::make(
        ir::Logical::make(ir::LogicalOp::Or, ir::Compare::make(ir::CompareOp::EQ, te, ve, loc),
                          ir::Compare::make(ir::CompareOp::EQ, ve, int_imm(1, loc), loc), loc),
        PLAIT_VALUE_ERROR, "numpy.add.at(): the values could not be broadcast to the indexed elements", loc));
    flags[d] = broadcast_flag(ve, te, pending_, loc);
  }
  const Expr n = y->shape[0];
  std::vector<LoopDim> dims;
  std::vector<Expr> at;
  for (size_t d = 0; d < shape.size(); ++d) {
    LoopDim dim;
    dim.extent = shape[d];
    dim.var = temp_var(ScalarType::py_int(), loc);
    dim.var->name = "_i" + dim.var->name.substr(4);
    dim.schedule.kind = d == 0 ? ir::LoopKind::Parallel : ir::LoopKind::Serial;
    at.push_back(ir::VarRef::make(dim.var, loc));
    dims.push_back(dim);
  }
  Sink inner;
  Expr j = cast(idx->element({at[0]}, inner), ScalarType::py_int());
  // NumPy checks every index before it adds anything: the least and the
  // greatest index are found first (a statement between this loop and the
  // updates, so that the two never fuse).
  if (options_.boundscheck) {
    ir::Var i = temp_var(ScalarType::py_int(), loc);
    i->name = "_i" + i->name.substr(4);
    ir::Var least = temp_var(ScalarType::py_int(), loc), greatest = temp_var(ScalarType::py_int(), loc);
    least->name = "_least" + least->name.substr(4);
    greatest->name = "_greatest" + greatest->name.substr(4);
    Sink check_sink;
    Expr k = cast(idx->element({ir::VarRef::make(i, loc)}, check_sink), ScalarType::py_int());
    Expr lo = ir::VarRef::make(least, loc), hi = ir::VarRef::make(greatest, loc);
    std::vector<Stmt> body;
    for (const auto& g : check_sink.groups) body.insert(body.end(), g.begin(), g.end());
    body.push_back(ir::Assign::make(least, imin(lo, k, loc), loc));
    body.push_back(ir::Assign::make(greatest, imax(hi, k, loc), loc));
    pending_.push_back(ir::Assign::make(least, int_imm(0, loc), loc));
    pending_.push_back(ir::Assign::make(greatest, int_imm(-1, loc), loc));
    pending_.push_back(loop(i, idx->shape[0], std::move(body), ir::LoopKind::Serial, loc));
    Expr in_range = ir::Logical::make(ir::LogicalOp::And,
                                      ir::Compare::make(ir::CompareOp::GE, lo, sub(int_imm(0, loc), n, loc), loc),
                                      lt(hi, n, loc), loc);
    pending_.push_back(ir::Assert::make(in_range, PLAIT_INDEX_ERROR, "numpy.add.at(): index out of bounds", loc));
  }
  // A whole dimension of an array wraps negative indices in
  // normalize_indices; a view's first axis here.
  if (!whole_array_axis(y, 0)) j = ir::Select::make(lt(j, int_imm(0, loc), loc), add(j, n, loc), j, loc);
  std::vector<Expr> element = {j};
  element.insert(element.end(), at.begin() + 1, at.end());
  std::vector<Expr> vidx;
  for (size_t d = 0; d < v->rank(); ++d)
    vidx.push_back(v->unit[d] ? int_imm(0, loc) : broadcast_index(flags[d], at[d + offset], loc));
  Expr value = cast(v->element(vidx, inner), elem);
  Stmt update = ir::AtomicUpdate::make(y->array, y->array_index(element), ir::AtomicOp::Add, value, false, loc);
  Sink outer;
  std::vector<Stmt> nest = build_nest(dims, inner, {update}, outer);
  for (auto& g : outer.groups) pending_.insert(pending_.end(), g.begin(), g.end());
  pending_.insert(pending_.end(), nest.begin(), nest.end());
}

Value Lowerer::bincount(const ast::Call& c, const std::vector<Value>& args) {
  const SourceLoc loc = c.loc;
  if (args.empty() || args.size() > 3)
    type_error("numpy.bincount(x, weights=None, minlength=0) takes 1 to 3 arguments", loc);
  Value weights_v = args.size() > 1 ? args[1] : Value();
  Value minlength_v = args.size() > 2 ? args[2] : Value();
  for (const auto& kw : c.keywords) {
    if (kw.name == "weights") {
      weights_v = lower(*kw.value);
    } else if (kw.name == "minlength") {
      minlength_v = lower(*kw.value);
    } else {
      type_error("numpy.bincount() got an unexpected keyword argument '" + kw.name + "'", kw.loc);
    }
  }
  if (!is_array_like(args[0])) type_error("numpy.bincount() takes a 1-D array of non-negative integers", loc);
  TensorPtr x = gather_index_tensor(args[0], false, c.args[0]->loc);
  if (x->rank() != 1) fail(ErrorKind::Value, "numpy.bincount(): the array must be 1-D", c.args[0]->loc);
  if (x->type.kind == ScalarKind::UInt64)
    type_error("numpy.bincount() of uint64: NumPy cannot cast it to int64 safely", c.args[0]->loc);
  TensorPtr w;
  if (weights_v.kind != Value::Kind::None) {
    if (!is_array_like(weights_v)) type_error("numpy.bincount(): weights must be an array", loc);
    w = to_tensor(weights_v, loc);
    if (w->rank() != 1) fail(ErrorKind::Value, "numpy.bincount(): weights must be 1-D", loc);
    if (!w->type.is_int() && !w->type.is_float() && !w->type.is_bool())
      type_error("numpy.bincount(): weights must be numbers", loc);
  }
  Expr minlength = int_imm(0, loc);
  if (minlength_v.kind != Value::Kind::None) {
    minlength = as_scalar(minlength_v, "minlength", loc);
    if (!minlength->type.is_int()) type_error("numpy.bincount(): minlength must be an integer", loc);
    minlength = cast(minlength, ScalarType::py_int());
  }
  ArrayType at;
  at.dtype = w ? ScalarKind::Float64 : ScalarKind::Int64;
  at.ndim = 1;
  at.layout = Layout::C;
  ir::ArrayVar out = temp_array(at, loc);
  array_units_[out] = {false};
  if (inferring_) return Value::of_array(out, loc);
  pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::GE, minlength, int_imm(0, loc), loc),
                                      PLAIT_VALUE_ERROR, "'minlength' must not be negative", loc));
  if (w && !same_expr(w->shape[0], x->shape[0]))
    pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, w->shape[0], x->shape[0], loc),
                                        PLAIT_VALUE_ERROR, "The weights and list don't have the same length.", loc));
  // The length: the greatest element plus one, at least minlength; every
  // element must be non-negative.
  ir::Var top = temp_var(ScalarType::py_int(), loc);
  top->name = "_bincount_max" + top->name.substr(4);
  pending_.push_back(ir::Assign::make(top, int_imm(-1, loc), loc));
  {
    ir::Var i = temp_var(ScalarType::py_int(), loc);
    i->name = "_i" + i->name.substr(4);
    Sink sink;
    Expr k = cast(x->element({ir::VarRef::make(i, loc)}, sink), ScalarType::py_int());
    ir::Var held = temp_var(ScalarType::py_int(), loc);
    std::vector<Stmt> body;
    for (const auto& g : sink.groups) body.insert(body.end(), g.begin(), g.end());
    body.push_back(ir::Assign::make(held, k, loc));
    Expr ref = ir::VarRef::make(held, loc);
    body.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::GE, ref, int_imm(0, loc), loc), PLAIT_VALUE_ERROR,
                                    "'list' argument must have no negative elements", loc));
    body.push_back(ir::Assign::make(top, imax(ir::VarRef::make(top, loc), ref, loc), loc));
    pending_.push_back(loop(i, x->shape[0], std::move(body), ir::LoopKind::Serial, loc));
  }
  Expr length = imax(add(ir::VarRef::make(top, loc), int_imm(1, loc), loc), minlength, loc);
  pending_.push_back(ir::Allocate::make(out, {length}, ir::FillKind::Zeros, nullptr, loc));
  ir::Var i = temp_var(ScalarType::py_int(), loc);
  i->name = "_i" + i->name.substr(4);
  Expr iref = ir::VarRef::make(i, loc);
  Sink sink;
  Expr k = cast(x->element({iref}, sink), ScalarType::py_int());
  ScalarType elem{at.dtype, false};
  Expr one = w ? cast(w->element({iref}, sink), elem) : ir::IntImm::make(1, elem, loc);
  std::vector<Stmt> body;
  for (const auto& g : sink.groups) body.insert(body.end(), g.begin(), g.end());
  body.push_back(ir::AtomicUpdate::make(out, {k}, ir::AtomicOp::Add, one, false, loc));
  pending_.push_back(loop(i, x->shape[0], std::move(body), ir::LoopKind::Parallel, loc));
  return Value::of_array(out, loc);
}

}  // namespace plait::lowering
