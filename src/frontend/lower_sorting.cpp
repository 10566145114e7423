// Sorting in NumPy's order (NaNs after every number): np.sort, np.argsort
// and the method, np.unique. One algorithm serves all three: a stable merge
// sort of a scratch array (runs of kRun elements by insertion, then
// bottom-up merges through a second scratch array), so that equal keys keep
// their order, as NumPy's kind="stable" keeps them.
#include "frontend/array_lowering.h"
#include "frontend/lowerer.h"

namespace plait::lowering {

namespace {

// Elements each insertion pass sorts before the merges: short runs sort
// faster by insertion, in cache.
constexpr int64_t kRun = 16;

}  // namespace

ir::ArrayVar Lowerer::sort_scratch(ScalarKind dtype, const Expr& n, SourceLoc loc) {
  ArrayType at;
  at.dtype = dtype;
  at.ndim = 1;
  at.layout = Layout::C;
  ir::ArrayVar a = temp_array(at, loc);
  // Every access below is in range by construction.
  a->indices_in_range = true;
  array_units_[a] = {false};
  pending_.push_back(ir::Allocate::make(a, {n}, ir::FillKind::Uninitialized, nullptr, loc));
  return a;
}

void Lowerer::merge_sort(const ir::ArrayVar& items, const std::function<Expr(const Expr&)>& key, SourceLoc loc) {
  const ScalarType index = ScalarType::py_int();
  auto named = [&](const char* what, ScalarType type) {
    ir::Var v = temp_var(type, loc);
    v->name = std::string(what) + v->name.substr(4);
    return v;
  };
  auto ref = [&](const ir::Var& v) { return ir::VarRef::make(v, loc); };
  auto set = [&](const ir::Var& v, Expr e) { return ir::Assign::make(v, std::move(e), loc); };
  auto plus = [&](const Expr& a, int64_t b) { return add(a, int_imm(b, loc), loc); };
  auto load = [&](const ir::ArrayVar& a, const Expr& i) { return ir::Load::make(a, {i}, false, loc); };
  auto store = [&](const ir::ArrayVar& a, const Expr& i, Expr v) {
    return ir::Store::make(a, {i}, std::move(v), false, loc);
  };
  auto range = [&](const ir::Var& v, Expr begin, Expr end, std::vector<Stmt> body) {
    return ir::For::make(v, std::move(begin), std::move(end), int_imm(1, loc), ir::Block::make(std::move(body), loc),
                         ir::LoopSchedule{}, loc);
  };
  // NumPy's order: a before b when a < b, or b is NaN and a is not.
  auto less = [&](const Expr& a, const Expr& b) {
    const ScalarType t = a->type;
    Expr lt = ir::Compare::make(ir::CompareOp::LT, t.is_bool() ? cast(a, ScalarType::i64()) : a,
                                t.is_bool() ? cast(b, ScalarType::i64()) : b, loc);
    if (!t.is_float()) return lt;
    Expr b_nan = ir::Compare::make(ir::CompareOp::NE, b, b, loc);
    Expr a_number = ir::Compare::make(ir::CompareOp::EQ, a, a, loc);
    return ir::Logical::make(ir::LogicalOp::Or, lt, ir::Logical::make(ir::LogicalOp::And, b_nan, a_number, loc), loc);
  };
  auto not_ = [&](const Expr& e) { return ir::Unary::make(ir::UnaryOp::Not, e, loc); };
  const Expr n = ir::ArrayDim::make(items, 0, loc);
  const ScalarType item_type{items->type.dtype, false};

  // Runs of kRun: each element moves left past the greater ones before it.
  {
    const ir::Var b = named("_run", index), lo = named("_lo", index), hi = named("_hi", index);
    const ir::Var k = named("_k", index), p = named("_p", index), held = named("_held", item_type);
    std::vector<Stmt> shift;
    shift.push_back(
        ir::If::make(ir::Compare::make(ir::CompareOp::LE, ref(p), ref(lo), loc), ir::Break::make(loc), nullptr, loc));
    shift.push_back(ir::If::make(not_(less(key(ref(held)), key(load(items, plus(ref(p), -1))))), ir::Break::make(loc),
                                 nullptr, loc));
    shift.push_back(store(items, ref(p), load(items, plus(ref(p), -1))));
    shift.push_back(set(p, plus(ref(p), -1)));
    std::vector<Stmt> insert = {
        set(held, load(items, ref(k))), set(p, ref(k)),
        ir::While::make(ir::BoolImm::make(true, loc), ir::Block::make(std::move(shift), loc), loc),
        store(items, ref(p), ref(held))};
    std::vector<Stmt> run = {set(lo, mul(ref(b), int_imm(kRun, loc), loc)), set(hi, imin(plus(ref(lo), kRun), n, loc)),
                             range(k, plus(ref(lo), 1), ref(hi), std::move(insert))};
    pending_.push_back(loop(b, floordiv(plus(n, kRun - 1), kRun, loc), std::move(run), ir::LoopKind::Serial, loc));
  }

  // Merges of neighbouring runs into the scratch array, copied back, with
  // runs twice as long at each pass; the left run's element first on ties.
  const ir::ArrayVar merged = sort_scratch(items->type.dtype, n, loc);
  const ir::Var width = named("_width", index);
  pending_.push_back(set(width, int_imm(kRun, loc)));
  {
    const ir::Var b = named("_pair", index), lo = named("_lo", index), mid = named("_mid", index);
    const ir::Var hi = named("_hi", index), i = named("_i", index), j = named("_j", index);
    const ir::Var k = named("_k", index), left = named("_left", ScalarType::b1());
    const Expr pair = mul(int_imm(2, loc), ref(width), loc);
    auto truth = [&](bool v) { return ir::BoolImm::make(v, loc); };
    std::vector<Stmt> step;
    step.push_back(ir::If::make(lt(ref(i), ref(mid), loc),
                                ir::If::make(lt(ref(j), ref(hi), loc),
                                             set(left, not_(less(key(load(items, ref(j))), key(load(items, ref(i)))))),
                                             set(left, truth(true)), loc),
                                set(left, truth(false)), loc));
    step.push_back(ir::If::make(
        ref(left), ir::Block::make({store(merged, ref(k), load(items, ref(i))), set(i, plus(ref(i), 1))}, loc),
        ir::Block::make({store(merged, ref(k), load(items, ref(j))), set(j, plus(ref(j), 1))}, loc), loc));
    std::vector<Stmt> merge = {set(lo, mul(ref(b), pair, loc)),
                               set(mid, imin(add(ref(lo), ref(width), loc), n, loc)),
                               set(hi, imin(add(ref(lo), pair, loc), n, loc)),
                               set(i, ref(lo)),
                               set(j, ref(mid)),
                               range(k, ref(lo), ref(hi), std::move(step))};
    const Expr pairs = ir::Binary::make(ir::BinaryOp::FloorDiv, sub(add(n, pair, loc), int_imm(1, loc), loc), pair,
                                        ScalarType::py_int(), false, loc);
    const ir::Var c = named("_k", index);
    std::vector<Stmt> pass = {loop(b, pairs, std::move(merge), ir::LoopKind::Serial, loc),
                              loop(c, n, {store(items, ref(c), load(merged, ref(c)))}, ir::LoopKind::Serial, loc),
                              set(width, pair)};
    pending_.push_back(ir::While::make(lt(ref(width), n, loc), ir::Block::make(std::move(pass), loc), loc));
  }
}

Value Lowerer::sort(const ast::Call& c) {
  const SourceLoc loc = c.loc;
  auto args = library_arguments("numpy.sort", c, nullptr, {"a", "axis", "kind", "order"}, {});
  if (!args[0] || !is_array_like(*args[0])) type_error("numpy.sort() takes an array", loc);
  if (args[3] && args[3]->kind != Value::Kind::None) unsupported("numpy.sort() with order= is not supported", loc);
  // Every kind sorts to the same values.
  if (args[2] && args[2]->kind != Value::Kind::None && args[2]->kind != Value::Kind::String)
    type_error("numpy.sort(): kind must be a string", loc);
  TensorPtr x = to_tensor(*args[0], loc);
  if (x->rank() != 1)
    unsupported("numpy.sort() of an array of more than one dimension is not supported: sort each row in a loop", loc);
  reduction_axes(args[1], 1, loc);  // None, 0 or -1
  return Value::of_array(sorted_copy(x, loc), loc);
}

ir::ArrayVar Lowerer::copy_for_sorting(const TensorPtr& x, SourceLoc loc) {
  Expr n = named_if_large(x->shape[0], loc);
  const ir::ArrayVar out = sort_scratch(x->type.kind, n, loc);
  const ir::Var i = temp_var(ScalarType::py_int(), loc);
  i->name = "_i" + i->name.substr(4);
  Sink sink;
  Expr element = x->element({ir::VarRef::make(i, loc)}, sink);
  std::vector<Stmt> body;
  for (const auto& g : sink.groups) body.insert(body.end(), g.begin(), g.end());
  body.push_back(ir::Store::make(out, {ir::VarRef::make(i, loc)}, element, false, loc));
  pending_.push_back(loop(i, n, std::move(body), ir::LoopKind::Serial, loc));
  return out;
}

ir::ArrayVar Lowerer::sorted_copy(const TensorPtr& x, SourceLoc loc) {
  ArrayType at;
  at.dtype = x->type.kind;
  at.ndim = 1;
  at.layout = Layout::C;
  ir::ArrayVar out = temp_array(at, loc);
  array_units_[out] = {false};
  if (inferring_) return out;
  // Sorted in a scratch array (its accesses need no checks), then copied
  // into the result.
  const ir::ArrayVar items = copy_for_sorting(x, loc);
  merge_sort(
      items, [](const Expr& item) { return item; }, loc);
  const Expr n = ir::ArrayDim::make(items, 0, loc);
  pending_.push_back(ir::Allocate::make(out, {n}, ir::FillKind::Uninitialized, nullptr, loc));
  const ir::Var i = temp_var(ScalarType::py_int(), loc);
  i->name = "_i" + i->name.substr(4);
  pending_.push_back(loop(i, n,
                          {ir::Store::make(out, {ir::VarRef::make(i, loc)},
                                           ir::Load::make(items, {ir::VarRef::make(i, loc)}, false, loc), false, loc)},
                          ir::LoopKind::Serial, loc));
  return out;
}

Value Lowerer::argsort(const ast::Call& c, const Value* self) {
  const SourceLoc loc = c.loc;
  const std::string what = self ? "argsort" : "numpy.argsort";
  auto args = library_arguments(what, c, self, {"a", "axis", "kind", "order", "stable"}, {});
  if (!args[0] || !is_array_like(*args[0])) type_error(what + "() takes an array", loc);
  if (args[3] && args[3]->kind != Value::Kind::None) unsupported(what + "() with order= is not supported", loc);
  if (args[2] && args[2]->kind != Value::Kind::None && args[2]->kind != Value::Kind::String)
    type_error(what + "(): kind must be a string", loc);
  TensorPtr x = to_tensor(*args[0], loc);
  if (x->rank() != 1)
    unsupported(what + "() of an array of more than one dimension is not supported: sort each row in a loop", loc);
  reduction_axes(args[1], 1, loc);  // None, 0 or -1
  ArrayType at;
  at.dtype = ScalarKind::Int64;
  at.ndim = 1;
  at.layout = Layout::C;
  ir::ArrayVar out = temp_array(at, loc);
  array_units_[out] = {false};
  if (inferring_) return Value::of_array(out, loc);
  // The positions 0..n-1 sorted by the values they index (a copy of x, so
  // that x is evaluated once), then copied into the result.
  const ir::ArrayVar keys = copy_for_sorting(x, loc);
  const Expr n = ir::ArrayDim::make(keys, 0, loc);
  const ir::ArrayVar positions = sort_scratch(ScalarKind::Int64, n, loc);
  const ir::Var i = temp_var(ScalarType::py_int(), loc);
  i->name = "_i" + i->name.substr(4);
  auto ref = [&]() { return ir::VarRef::make(i, loc); };
  pending_.push_back(loop(i, n, {ir::Store::make(positions, {ref()}, cast(ref(), ScalarType::i64()), false, loc)},
                          ir::LoopKind::Serial, loc));
  merge_sort(
      positions, [keys, loc](const Expr& p) { return ir::Load::make(keys, {p}, false, loc); }, loc);
  pending_.push_back(ir::Allocate::make(out, {n}, ir::FillKind::Uninitialized, nullptr, loc));
  pending_.push_back(loop(i, n,
                          {ir::Store::make(out, {ref()}, ir::Load::make(positions, {ref()}, false, loc), false, loc)},
                          ir::LoopKind::Serial, loc));
  return Value::of_array(out, loc);
}

Value Lowerer::unique(const ast::Call& c) {
  const SourceLoc loc = c.loc;
  auto args = library_arguments("numpy.unique", c, nullptr,
                                {"ar", "return_index", "return_inverse", "return_counts", "axis", "equal_nan"}, {});
  if (!args[0] || !is_array_like(*args[0])) type_error("numpy.unique() takes an array", loc);
  for (size_t k = 1; k < 4; ++k)
    if (constant_flag(args[k], "return_index=, return_inverse= and return_counts=", loc))
      unsupported("numpy.unique() with return_index, return_inverse or return_counts is not supported", loc);
  if (args[4] && args[4]->kind != Value::Kind::None) unsupported("numpy.unique() with axis= is not supported", loc);
  if (args[5] && !constant_flag(args[5], "equal_nan=", loc))
    unsupported("numpy.unique() with equal_nan=False is not supported", loc);
  TensorPtr x = to_tensor(*args[0], loc);
  if (x->rank() != 1) unsupported("numpy.unique() of an array of more than one dimension is not supported", loc);
  // The sorted copy, then its first element and each that differs from the
  // one before (NaNs count as one value, as NumPy's equal_nan=True), in two
  // passes: the count, then the values.
  const ir::ArrayVar sorted = sorted_copy(x, loc);
  ir::ArrayVar out = temp_array(sorted->type, loc);
  array_units_[out] = {false};
  if (inferring_) return Value::of_array(out, loc);
  const ScalarType t{sorted->type.dtype, false};
  auto at = [&](const Expr& i) { return ir::Load::make(sorted, {i}, false, loc); };
  const Expr n = ir::ArrayDim::make(sorted, 0, loc);
  auto counter = [&](const char* what) {
    ir::Var v = temp_var(ScalarType::py_int(), loc);
    v->name = std::string(what) + v->name.substr(4);
    return v;
  };
  auto pass = [&](const ir::Var& count, bool fill) {
    const Expr any = ir::Compare::make(ir::CompareOp::GT, n, int_imm(0, loc), loc);
    pending_.push_back(ir::Assign::make(count, ir::Select::make(any, int_imm(1, loc), int_imm(0, loc), loc), loc));
    if (fill)
      pending_.push_back(
          ir::If::make(any, ir::Store::make(out, {int_imm(0, loc)}, at(int_imm(0, loc)), false, loc), nullptr, loc));
    const ir::Var i = counter("_i");
    const Expr here = at(ir::VarRef::make(i, loc)), before = at(sub(ir::VarRef::make(i, loc), int_imm(1, loc), loc));
    Expr same = ir::Compare::make(ir::CompareOp::EQ, here, before, loc);
    if (t.is_float()) {
      Expr both_nan = ir::Logical::make(ir::LogicalOp::And, ir::Compare::make(ir::CompareOp::NE, here, here, loc),
                                        ir::Compare::make(ir::CompareOp::NE, before, before, loc), loc);
      same = ir::Logical::make(ir::LogicalOp::Or, same, both_nan, loc);
    }
    std::vector<Stmt> taken;
    if (fill) taken.push_back(ir::Store::make(out, {ir::VarRef::make(count, loc)}, here, false, loc));
    taken.push_back(ir::Assign::make(count, add(ir::VarRef::make(count, loc), int_imm(1, loc), loc), loc));
    Stmt body = ir::If::make(ir::Unary::make(ir::UnaryOp::Not, same, loc), ir::Block::make(std::move(taken), loc),
                             nullptr, loc);
    pending_.push_back(
        ir::For::make(i, int_imm(1, loc), n, int_imm(1, loc), ir::Block::make({body}, loc), ir::LoopSchedule{}, loc));
  };
  const ir::Var count = counter("_unique");
  pass(count, false);
  pending_.push_back(
      ir::Allocate::make(out, {ir::VarRef::make(count, loc)}, ir::FillKind::Uninitialized, nullptr, loc));
  pass(count, true);
  return Value::of_array(out, loc);
}

}  // namespace plait::lowering
