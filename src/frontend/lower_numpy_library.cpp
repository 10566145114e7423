// NumPy library functions that are more than one ufunc per element:
// np.clip, np.linalg.norm, np.any/np.all, np.arange, np.linspace, np.cumsum,
// np.concatenate, np.stack, np.nonzero and np.where with one argument, and the array
// methods of the same names (sorting: lower_sorting.cpp). Each follows NumPy 2's result types, edge cases and errors.
#include <map>

#include "frontend/array_lowering.h"
#include "frontend/lowerer.h"

namespace plait::lowering {

namespace {

// NumPy's accumulator type of sum and cumsum: bools and narrower integers
// widen to 64 bits of their signedness.
ScalarType sum_type(ScalarType t) {
  if (t.is_bool()) return ScalarType::i64();
  if (t.is_int() && t.bits() < 64) return t.is_unsigned() ? ScalarType{ScalarKind::UInt64, false} : ScalarType::i64();
  return t.strong();
}

Expr f64(double v, SourceLoc loc) {
  return ir::FloatImm::make(v, ScalarType::f64(), loc);
}

// a op b computed in type t (the helpers of array_lowering.h compute extents,
// in Python ints).
Expr typed(ir::BinaryOp op, const Expr& a, const Expr& b, ScalarType t, SourceLoc loc) {
  return ir::Binary::make(op, a, b, t, false, loc);
}

}  // namespace

std::vector<std::optional<Value>> Lowerer::library_arguments(const std::string& what, const ast::Call& c,
                                                             const Value* self, const std::vector<std::string>& names,
                                                             const std::map<std::string, std::string>& aliases) {
  std::vector<std::optional<Value>> bound(names.size());
  size_t next = 0;
  if (self) bound[next++] = *self;
  if (next + c.args.size() > names.size()) {
    type_error(
        what + "() takes at most " + std::to_string(names.size() - (self ? 1 : 0)) + " positional arguments here",
        c.loc);
  }
  for (const auto& a : c.args) {
    if (a->kind == ast::ExprKind::Slice) unsupported("slices are only allowed inside [ ]", a->loc);
    bound[next++] = lower(*a);
  }
  for (const auto& kw : c.keywords) {
    auto alias = aliases.find(kw.name);
    const std::string& name = alias != aliases.end() ? alias->second : kw.name;
    auto at = std::find(names.begin(), names.end(), name);
    if (at == names.end()) type_error(what + "() got an unexpected keyword argument '" + kw.name + "'", kw.loc);
    auto& slot = bound[at - names.begin()];
    if (slot) type_error(what + "() got multiple values for argument '" + kw.name + "'", kw.loc);
    slot = lower(*kw.value);
  }
  return bound;
}

std::vector<int> Lowerer::reduction_axes(const std::optional<Value>& axis, size_t rank, SourceLoc loc) {
  std::vector<int> axes;
  auto add_axis = [&](const Value& v) {
    Expr e = as_scalar(v, "axis=", loc);
    auto i = e->as<ir::IntImm>();
    if (!i) unsupported("axis must be an integer constant", loc);
    const auto r = static_cast<int64_t>(rank);
    if (i->value < -r || i->value >= r)
      fail(ErrorKind::Value,
           "axis " + std::to_string(i->value) + " is out of bounds for an array of dimension " + std::to_string(r),
           loc);
    int a = static_cast<int>(i->value < 0 ? i->value + r : i->value);
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) fail(ErrorKind::Value, "duplicate value in 'axis'", loc);
    axes.push_back(a);
  };
  if (!axis || axis->kind == Value::Kind::None) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int>(d));
  } else if (axis->kind == Value::Kind::Tuple) {
    for (const auto& v : axis->elems) add_axis(v);
  } else {
    add_axis(*axis);
  }
  return axes;
}

bool Lowerer::constant_flag(const std::optional<Value>& v, const std::string& what, SourceLoc loc) {
  if (!v || v->kind == Value::Kind::None) return false;
  auto b = as_scalar(*v, what.c_str(), loc)->as<ir::BoolImm>();
  if (!b) unsupported(what + " must be True or False", loc);
  return b->value;
}

std::optional<Value> Lowerer::numpy_library(const std::string& fn, const ast::Call& c, const Value* self) {
  const std::string what = self ? "the array method " + fn : "numpy." + fn;
  if (fn == "clip") {
    auto args = library_arguments(what, c, self, {"a", "min", "max"}, {{"a_min", "min"}, {"a_max", "max"}});
    if (!args[0]) type_error(what + "() missing the array", c.loc);
    std::vector<Value> operands = {*args[0]};
    const bool low = args[1] && args[1]->kind != Value::Kind::None;
    const bool high = args[2] && args[2]->kind != Value::Kind::None;
    if (low) operands.push_back(*args[1]);
    if (high) operands.push_back(*args[2]);
    // NumPy: minimum(maximum(a, min), max), NaN kept, in the promoted type.
    auto op = [this, low, high](const std::vector<Expr>& e) {
      ScalarType t = e[0]->type;
      for (const Expr& x : e) t = promote(t, x->type);
      t = t.strong();
      Expr r = cast(e[0], t);
      size_t k = 1;
      if (low) r = ir::Binary::make(ir::BinaryOp::Max, r, cast(e[k++], t), t, false, r->loc);
      if (high) r = ir::Binary::make(ir::BinaryOp::Min, r, cast(e[k], t), t, false, r->loc);
      return r;
    };
    bool any_array = false;
    for (const Value& v : operands) any_array = any_array || is_array_like(v);
    if (any_array) return elementwise(operands, op, c.loc);
    std::vector<Expr> scalars;
    for (const Value& v : operands) scalars.push_back(as_scalar(v, "numpy.clip()", c.loc));
    return Value::of(op(scalars));
  }
  if (fn == "linalg.norm") {
    auto args = library_arguments(what, c, self, {"x", "ord", "axis", "keepdims"}, {});
    if (!args[0] || !is_array_like(*args[0])) type_error("numpy.linalg.norm() takes an array", c.loc);
    if (args[1] && args[1]->kind != Value::Kind::None)
      unsupported("numpy.linalg.norm() with ord= is not supported: the default (2-norm, Frobenius) is", c.loc);
    TensorPtr x = to_tensor(*args[0], c.loc);
    // NumPy takes the norm of integers and bools in float64.
    const ScalarType f = x->type.is_float() ? x->type.strong() : ScalarType::f64();
    Value squares = elementwise(
        {*args[0]},
        [this, f](const std::vector<Expr>& e) {
          return typed(ir::BinaryOp::Mul, cast(e[0], f), cast(e[0], f), f, e[0]->loc);
        },
        c.loc);
    Value total = reduce_axes("sum", to_tensor(squares, c.loc), reduction_axes(args[2], x->rank(), c.loc),
                              constant_flag(args[3], "keepdims=", c.loc), c.loc);
    auto root = [f, &c](const std::vector<Expr>& e) {
      return ir::Call::make(ir::Intrinsic::Sqrt, {e[0]}, f, false, c.loc);
    };
    if (total.kind == Value::Kind::Scalar) return Value::of(root({total.scalar}));
    return elementwise({total}, root, c.loc);
  }
  if (fn == "any" || fn == "all") {
    auto args = library_arguments(what, c, self, {"a", "axis", "keepdims"}, {});
    if (!args[0]) type_error(what + "() missing the array", c.loc);
    const bool any = fn == "any";
    if (!is_array_like(*args[0]))  // one element: any and all are its truth
      return Value::of(with_weakness(truthy(as_scalar(*args[0], what.c_str(), c.loc), c.loc), false));
    TensorPtr t = to_tensor(*args[0], c.loc);
    // The count of elements that decide (true for any, false for all): any
    // is a count above zero, all a count of zero; both hold over no element
    // as NumPy's do (False, True).
    Value deciding = elementwise(
        {*args[0]},
        [this, any](const std::vector<Expr>& e) {
          Expr yes = truthy(e[0], e[0]->loc);
          if (!any) yes = ir::Unary::make(ir::UnaryOp::Not, yes, e[0]->loc);
          return cast(yes, ScalarType::i64());
        },
        c.loc);
    Value count = reduce_axes("sum", to_tensor(deciding, c.loc), reduction_axes(args[1], t->rank(), c.loc),
                              constant_flag(args[2], "keepdims=", c.loc), c.loc);
    auto decide = [any, &c](const std::vector<Expr>& e) {
      Expr r = ir::Compare::make(any ? ir::CompareOp::GT : ir::CompareOp::EQ, e[0], int_imm(0, c.loc), c.loc);
      return ir::Cast::make(ScalarType::b1(), r, false, c.loc);
    };
    if (count.kind == Value::Kind::Scalar) return Value::of(decide({count.scalar}));
    return elementwise({count}, decide, c.loc);
  }
  if (fn == "sort" && !self) return sort(c);
  if (fn == "argsort") return argsort(c, self);
  if (fn == "reshape" || fn == "ravel" || (fn == "flatten" && self)) return reshape(fn, c, self);
  if (fn == "unique" && !self) return unique(c);
  if (fn == "concatenate" && !self) return concatenate(c);
  if (fn == "stack" && !self) return stack(c);
  if (fn == "sort") unsupported("the array method .sort() (in place) is not supported: use np.sort(a)", c.loc);
  if (fn == "arange" && !self) return arange(c);
  if (fn == "linspace" && !self) return linspace(c);
  if (fn == "cumsum") return cumsum(c, self);
  if (fn == "nonzero" || (fn == "where" && !self && c.args.size() == 1 && c.keywords.empty())) {
    auto args = library_arguments(what, c, self, {"a"}, {});
    if (!args[0]) type_error(what + "() missing the array", c.loc);
    return nonzero(*args[0], c.loc);
  }
  return std::nullopt;
}

Value Lowerer::arange(const ast::Call& c) {
  const SourceLoc loc = c.loc;
  if (c.args.empty() || c.args.size() > 3) type_error("numpy.arange() takes 1 to 3 positional arguments", loc);
  if (!c.keywords.empty()) unsupported("numpy.arange() with keywords is not supported", c.keywords[0].loc);
  std::vector<Expr> xs;
  bool floats = false;
  for (const auto& a : c.args) {
    xs.push_back(scalar(*a, "numpy.arange()"));
    floats = floats || xs.back()->type.is_float();
  }
  Expr start = xs.size() == 1 ? int_imm(0, loc) : xs[0];
  Expr stop = xs.size() == 1 ? xs[0] : xs[1];
  Expr step = xs.size() == 3 ? xs[2] : int_imm(1, loc);
  const ScalarType t = floats ? ScalarType::f64() : ScalarType::i64();
  start = cast(start, t);
  stop = cast(stop, t);
  step = cast(step, t);
  Expr length;
  Expr delta = step;
  Expr zero = floats ? f64(0.0, loc) : ir::IntImm::make(0, t, loc);
  pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::NE, step, zero, loc), PLAIT_ZERO_DIVISION_ERROR,
                                      floats ? "float division by zero" : "division by zero", loc));
  if (floats) {
    // NumPy: ceil((stop - start) / step) (a length that is NaN is a
    // ValueError), and the elements start + i * delta with
    // delta = (start + step) - start, as its fill computes them.
    Expr span = typed(ir::BinaryOp::Div, typed(ir::BinaryOp::Sub, stop, start, t, loc), step, t, loc);
    Expr up = ir::Call::make(ir::Intrinsic::Ceil, {span}, t, false, loc);
    pending_.push_back(ir::Assert::make(ir::Call::make(ir::Intrinsic::IsFinite, {up}, ScalarType::b1(), false, loc),
                                        PLAIT_VALUE_ERROR, "arange: cannot compute length", loc));
    length = cast(ir::Binary::make(ir::BinaryOp::Max, up, f64(0.0, loc), t, false, loc), ScalarType::py_int());
    delta = typed(ir::BinaryOp::Sub, typed(ir::BinaryOp::Add, start, step, t, loc), start, t, loc);
  } else {
    // ceil((stop - start) / step) for integers: -((start - stop) // step).
    Expr down = typed(ir::BinaryOp::FloorDiv, typed(ir::BinaryOp::Sub, start, stop, t, loc), step, t, loc);
    length = imax(ir::Unary::make(ir::UnaryOp::Neg, cast(down, ScalarType::py_int()), loc), int_imm(0, loc), loc);
  }
  length = named_if_large(length, loc);
  auto out = std::make_shared<Tensor>();
  out->type = t;
  out->shape = {length};
  out->unit = {false};
  out->labels = {""};
  out->element = [t, start, delta, loc](const std::vector<Expr>& idx, Sink&) {
    return typed(ir::BinaryOp::Add, start,
                 typed(ir::BinaryOp::Mul, ir::Cast::make(t, idx[0], false, loc), delta, t, loc), t, loc);
  };
  return Value::of_tensor(out, loc);
}

Value Lowerer::linspace(const ast::Call& c) {
  const SourceLoc loc = c.loc;
  auto args = library_arguments("numpy.linspace", c, nullptr, {"start", "stop", "num", "endpoint"}, {});
  if (!args[0] || !args[1]) type_error("numpy.linspace() needs start and stop", loc);
  for (const auto& v : {args[0], args[1]}) {
    if (is_array_like(*v)) unsupported("numpy.linspace() of arrays is not supported", loc);
  }
  const ScalarType t = ScalarType::f64();
  Expr start = cast(as_scalar(*args[0], "numpy.linspace()", loc), t);
  Expr stop = cast(as_scalar(*args[1], "numpy.linspace()", loc), t);
  Expr num = args[2] ? as_scalar(*args[2], "num=", loc) : int_imm(50, loc);
  if (!num->type.is_int()) type_error("numpy.linspace(): num must be an integer", loc);
  num = named_if_large(cast(num, ScalarType::py_int()), loc);
  Expr endpoint = args[3] ? truthy(as_scalar(*args[3], "endpoint=", loc), loc) : ir::BoolImm::make(true, loc);
  pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::GE, num, int_imm(0, loc), loc),
                                      PLAIT_VALUE_ERROR, "Number of samples must be non-negative.", loc));
  // NumPy: div = num - 1 (endpoint) or num; step = (stop - start) / div; the
  // elements i * step + start ((i / div) * delta + start when the step is
  // 0; i * delta + start when div is 0), the last one stop itself.
  Expr div = ir::Select::make(endpoint, sub(num, int_imm(1, loc), loc), num, loc);
  Expr delta = typed(ir::BinaryOp::Sub, stop, start, t, loc);
  Expr divf = cast(div, t);
  Expr step = typed(ir::BinaryOp::Div, delta, divf, t, loc);
  auto out = std::make_shared<Tensor>();
  out->type = t;
  out->shape = {num};
  out->unit = {false};
  out->labels = {""};
  out->element = [=](const std::vector<Expr>& idx, Sink&) {
    Expr i = ir::Cast::make(t, idx[0], false, loc);
    Expr scaled = ir::Select::make(
        ir::Compare::make(ir::CompareOp::GT, div, int_imm(0, loc), loc),
        ir::Select::make(ir::Compare::make(ir::CompareOp::EQ, step, f64(0.0, loc), loc),
                         typed(ir::BinaryOp::Mul, typed(ir::BinaryOp::Div, i, divf, t, loc), delta, t, loc),
                         typed(ir::BinaryOp::Mul, i, step, t, loc), loc),
        typed(ir::BinaryOp::Mul, i, delta, t, loc), loc);
    Expr last = ir::Logical::make(
        ir::LogicalOp::And, endpoint,
        ir::Logical::make(ir::LogicalOp::And, ir::Compare::make(ir::CompareOp::GT, num, int_imm(1, loc), loc),
                          ir::Compare::make(ir::CompareOp::EQ, idx[0], sub(num, int_imm(1, loc), loc), loc), loc),
        loc);
    return ir::Select::make(last, stop, typed(ir::BinaryOp::Add, scaled, start, t, loc), loc);
  };
  return Value::of_tensor(out, loc);
}

Value Lowerer::cumsum(const ast::Call& c, const Value* self) {
  const SourceLoc loc = c.loc;
  const std::string what = self ? "the array method cumsum" : "numpy.cumsum";
  auto args = library_arguments(what, c, self, {"a", "axis"}, {});
  if (!args[0] || !is_array_like(*args[0])) type_error(what + "() takes an array", loc);
  TensorPtr x = to_tensor(*args[0], loc);
  const bool flat = !args[1] || args[1]->kind == Value::Kind::None;
  if (!flat) {
    std::vector<int> axes = reduction_axes(args[1], x->rank(), loc);
    if (x->rank() != 1 || axes.size() != 1)
      unsupported(what + "() along an axis of an array of more than one dimension is not supported; use axis=None",
                  loc);
  }
  const ScalarType acc = sum_type(x->type);
  ArrayType at;
  at.dtype = acc.kind;
  at.ndim = 1;
  at.layout = Layout::C;
  ir::ArrayVar out = temp_array(at, loc);
  array_units_[out] = {false};
  if (inferring_) return Value::of_array(out, loc);
  // The elements in C order, added one after the other (NumPy's order).
  Expr n = int_imm(1, loc);
  for (const Expr& e : x->shape) n = mul(n, e, loc);
  n = named_if_large(n, loc);
  pending_.push_back(ir::Allocate::make(out, {n}, ir::FillKind::Uninitialized, nullptr, loc));
  ir::Var total = temp_var(acc, loc);
  total->name = "_cumsum" + total->name.substr(4);
  pending_.push_back(ir::Assign::make(total, identity("sum", acc, loc), loc));
  ir::Var i = temp_var(ScalarType::py_int(), loc);
  i->name = "_i" + i->name.substr(4);
  std::vector<Expr> index(x->rank());
  Expr rest = ir::VarRef::make(i, loc);
  for (size_t d = x->rank(); d-- > 0;) {
    // No extent is 0 where the loop runs.
    index[d] = d == 0 ? rest : typed(ir::BinaryOp::Mod, rest, x->shape[d], ScalarType::py_int(), loc);
    if (d > 0) rest = typed(ir::BinaryOp::FloorDiv, rest, x->shape[d], ScalarType::py_int(), loc);
  }
  Sink sink;
  Expr element = cast(x->element(index, sink), acc);
  std::vector<Stmt> body;
  for (const auto& g : sink.groups) body.insert(body.end(), g.begin(), g.end());
  body.push_back(
      ir::Assign::make(total, typed(ir::BinaryOp::Add, ir::VarRef::make(total, loc), element, acc, loc), loc));
  body.push_back(ir::Store::make(out, {ir::VarRef::make(i, loc)}, ir::VarRef::make(total, loc), false, loc));
  pending_.push_back(loop(i, n, std::move(body), ir::LoopKind::Serial, loc));
  return Value::of_array(out, loc);
}

Value Lowerer::nonzero(const Value& a, SourceLoc loc) {
  if (!is_array_like(a)) type_error("numpy.nonzero() takes an array", loc);
  TensorPtr x = to_tensor(a, loc);
  const size_t rank = x->rank();
  if (rank == 0) type_error("numpy.nonzero() of a zero-dimensional array is not supported", loc);
  ArrayType at;
  at.dtype = ScalarKind::Int64;
  at.ndim = 1;
  at.layout = Layout::C;
  // One int64 array of indices per dimension.
  Value result;
  result.kind = Value::Kind::Tuple;
  result.loc = loc;
  std::vector<ir::ArrayVar> outs;
  for (size_t d = 0; d < rank; ++d) {
    outs.push_back(temp_array(at, loc));
    array_units_[outs.back()] = {false};
    result.elems.push_back(Value::of_array(outs.back(), loc));
  }
  if (inferring_) return result;
  // Two passes over the elements in C order: the count, then the indices.
  auto pass = [&](const ir::Var& count, bool fill) {
    std::vector<ir::Var> vars;
    std::vector<Expr> index;
    for (size_t d = 0; d < rank; ++d) {
      ir::Var v = temp_var(ScalarType::py_int(), loc);
      v->name = "_i" + v->name.substr(4);
      vars.push_back(v);
      index.push_back(ir::VarRef::make(v, loc));
    }
    Sink sink;
    Expr yes = truthy(x->element(index, sink), loc);
    std::vector<Stmt> taken;
    for (size_t d = 0; fill && d < rank; ++d)
      taken.push_back(
          ir::Store::make(outs[d], {ir::VarRef::make(count, loc)}, cast(index[d], ScalarType::i64()), false, loc));
    taken.push_back(ir::Assign::make(count, add(ir::VarRef::make(count, loc), int_imm(1, loc), loc), loc));
    std::vector<Stmt> body;
    for (const auto& g : sink.groups) body.insert(body.end(), g.begin(), g.end());
    body.push_back(ir::If::make(yes, ir::Block::make(std::move(taken), loc), nullptr, loc));
    Stmt nest = ir::Block::make(std::move(body), loc);
    for (size_t d = rank; d-- > 0;) nest = loop(vars[d], x->shape[d], {nest}, ir::LoopKind::Serial, loc);
    pending_.push_back(ir::Assign::make(count, int_imm(0, loc), loc));
    pending_.push_back(nest);
  };
  ir::Var count = temp_var(ScalarType::py_int(), loc);
  count->name = "_nonzero" + count->name.substr(4);
  pass(count, false);
  for (const ir::ArrayVar& out : outs)
    pending_.push_back(
        ir::Allocate::make(out, {ir::VarRef::make(count, loc)}, ir::FillKind::Uninitialized, nullptr, loc));
  pass(count, true);
  return result;
}

Value Lowerer::concatenate(const ast::Call& c) {
  const SourceLoc loc = c.loc;
  auto args = library_arguments("numpy.concatenate", c, nullptr, {"arrays", "axis"}, {});
  if (!args[0] || args[0]->kind != Value::Kind::Tuple || args[0]->elems.empty())
    type_error("numpy.concatenate() takes a tuple or list of arrays", loc);
  if (args[1] && args[1]->kind != Value::Kind::None) {
    auto axis = as_scalar(*args[1], "axis=", loc)->as<ir::IntImm>();
    if (!axis || axis->value != 0) unsupported("numpy.concatenate() along an axis other than 0 is not supported", loc);
  } else if (args[1]) {
    unsupported("numpy.concatenate() with axis=None is not supported", loc);
  }
  std::vector<TensorPtr> parts;
  for (const Value& v : args[0]->elems) {
    if (!is_array_like(v)) type_error("numpy.concatenate(): zero-dimensional arrays cannot be concatenated", loc);
    parts.push_back(to_tensor(v, loc));
    if (parts.back()->rank() != parts[0]->rank())
      fail(ErrorKind::Value, "numpy.concatenate(): all the input arrays must have the same number of dimensions", loc);
  }
  const size_t rank = parts[0]->rank();
  if (rank == 0) type_error("numpy.concatenate(): zero-dimensional arrays cannot be concatenated", loc);
  ScalarType t = parts[0]->type;
  for (const TensorPtr& p : parts) t = promote(t, p->type);
  t = t.strong();
  ArrayType at;
  at.dtype = t.kind;
  at.ndim = static_cast<int>(rank);
  at.layout = Layout::C;
  ir::ArrayVar out = temp_array(at, loc);
  array_units_[out] = std::vector<bool>(rank, false);
  if (inferring_) return Value::of_array(out, loc);
  // The other dimensions agree (NumPy's ValueError), the first adds up.
  Expr rows = int_imm(0, loc);
  for (const TensorPtr& p : parts) {
    for (size_t d = 1; d < rank; ++d) {
      if (same_expr(p->shape[d], parts[0]->shape[d])) continue;
      pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, p->shape[d], parts[0]->shape[d], loc),
                                          PLAIT_VALUE_ERROR,
                                          "all the input array dimensions except for the concatenation axis must "
                                          "match exactly",
                                          loc));
    }
    rows = add(rows, p->shape[0], loc);
  }
  std::vector<Expr> shape = {named_if_large(rows, loc)};
  for (size_t d = 1; d < rank; ++d) shape.push_back(parts[0]->shape[d]);
  pending_.push_back(ir::Allocate::make(out, shape, ir::FillKind::Uninitialized, nullptr, loc));
  // Each part copied below the rows of those before it.
  Expr offset = int_imm(0, loc);
  for (const TensorPtr& p : parts) {
    std::vector<ir::Var> vars;
    std::vector<Expr> index, target;
    for (size_t d = 0; d < rank; ++d) {
      ir::Var v = temp_var(ScalarType::py_int(), loc);
      v->name = "_i" + v->name.substr(4);
      vars.push_back(v);
      index.push_back(ir::VarRef::make(v, loc));
      target.push_back(d == 0 ? add(offset, index.back(), loc) : index.back());
    }
    Sink sink;
    Expr element = cast(p->element(index, sink), t);
    std::vector<Stmt> body;
    for (const auto& g : sink.groups) body.insert(body.end(), g.begin(), g.end());
    body.push_back(ir::Store::make(out, target, element, false, loc));
    Stmt nest = ir::Block::make(std::move(body), loc);
    for (size_t d = rank; d-- > 0;) nest = loop(vars[d], p->shape[d], {nest}, ir::LoopKind::Serial, loc);
    pending_.push_back(nest);
    offset = named_if_large(add(offset, p->shape[0], loc), loc);
  }
  return Value::of_array(out, loc);
}

Value Lowerer::stack(const ast::Call& c) {
  const SourceLoc loc = c.loc;
  auto args = library_arguments("numpy.stack", c, nullptr, {"arrays", "axis"}, {});
  if (!args[0] || args[0]->kind != Value::Kind::Tuple || args[0]->elems.empty())
    type_error("numpy.stack() takes a tuple or list of arrays", loc);
  std::vector<TensorPtr> parts;
  for (const Value& v : args[0]->elems) {
    if (!is_array_like(v)) unsupported("numpy.stack() of numbers is not supported: stack arrays", loc);
    parts.push_back(to_tensor(v, loc));
    if (parts.back()->rank() != parts[0]->rank())
      fail(ErrorKind::Value, "numpy.stack(): all input arrays must have the same shape", loc);
  }
  const size_t rank = parts[0]->rank() + 1;
  // The new axis: a constant in [-rank, rank).
  size_t axis = 0;
  if (args[1] && args[1]->kind != Value::Kind::None) axis = static_cast<size_t>(reduction_axes(args[1], rank, loc)[0]);
  ScalarType t = parts[0]->type;
  for (const TensorPtr& p : parts) t = promote(t, p->type);
  t = t.strong();
  ArrayType at;
  at.dtype = t.kind;
  at.ndim = static_cast<int>(rank);
  at.layout = Layout::C;
  ir::ArrayVar out = temp_array(at, loc);
  std::vector<bool> units;
  for (size_t d = 0; d + 1 < rank; ++d) units.push_back(parts[0]->unit[d]);
  units.insert(units.begin() + static_cast<std::ptrdiff_t>(axis), parts.size() == 1);
  array_units_[out] = units;
  if (inferring_) return Value::of_array(out, loc);
  // Every extent agrees (NumPy's ValueError).
  for (const TensorPtr& p : parts)
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (same_expr(p->shape[d], parts[0]->shape[d])) continue;
      pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, p->shape[d], parts[0]->shape[d], loc),
                                          PLAIT_VALUE_ERROR, "all input arrays must have the same shape", loc));
    }
  std::vector<Expr> shape = parts[0]->shape;
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), int_imm(static_cast<int64_t>(parts.size()), loc));
  pending_.push_back(ir::Allocate::make(out, shape, ir::FillKind::Uninitialized, nullptr, loc));
  // Part k fills index k of the new axis.
  for (size_t k = 0; k < parts.size(); ++k) {
    const TensorPtr& p = parts[k];
    std::vector<ir::Var> vars;
    std::vector<Expr> index, target;
    for (size_t d = 0; d + 1 < rank; ++d) {
      ir::Var v = temp_var(ScalarType::py_int(), loc);
      v->name = "_i" + v->name.substr(4);
      vars.push_back(v);
      index.push_back(ir::VarRef::make(v, loc));
    }
    target = index;
    target.insert(target.begin() + static_cast<std::ptrdiff_t>(axis), int_imm(static_cast<int64_t>(k), loc));
    Sink sink;
    Expr element = cast(p->element(index, sink), t);
    std::vector<Stmt> body;
    for (const auto& g : sink.groups) body.insert(body.end(), g.begin(), g.end());
    body.push_back(ir::Store::make(out, target, element, false, loc));
    Stmt nest = ir::Block::make(std::move(body), loc);
    for (size_t d = rank - 1; d-- > 0;) nest = loop(vars[d], p->shape[d], {nest}, ir::LoopKind::Serial, loc);
    pending_.push_back(nest);
  }
  return Value::of_array(out, loc);
}

}  // namespace plait::lowering
