// Reshaping: np.reshape(a, shape), a.reshape(shape) and a.reshape(d0, d1,
// ...), np.ravel(a), a.ravel() and a.flatten(). The result is a lazy tensor
// over the operand, as a slice is: element (i0, ..., ik) of the new shape is
// the operand's element at the same position in C order, so no copy is made
// unless the value is bound to a name. Like a slice, a reshape of an array
// bound to a name is refused when either is written later (NumPy would make
// it a view of that array), and it cannot be assigned to.
#include "frontend/array_lowering.h"
#include "frontend/lowerer.h"

namespace plait::lowering {

Value Lowerer::reshape(const std::string& fn, const ast::Call& c, const Value* self) {
  const SourceLoc loc = c.loc;
  const std::string what = self ? fn : "numpy." + fn;
  Value operand;
  std::vector<Value> dims;  // the new shape's entries, as written
  bool copy = fn == "flatten";
  if (fn == "reshape") {
    // a.reshape(d0, d1, ...) or a.reshape(shape); np.reshape(a, shape).
    std::vector<std::optional<Value>> args;
    if (self && c.args.size() > 1) {
      if (!c.keywords.empty()) unsupported("reshape() with keywords is not supported", c.keywords[0].loc);
      operand = *self;
      for (const auto& a : c.args) dims.push_back(lower(*a));
    } else {
      args = library_arguments(what, c, self, {"a", "shape", "order"}, {{"newshape", "shape"}});
      if (!args[0]) type_error(what + "() missing the array", loc);
      if (!args[1]) type_error(what + "() missing the shape", loc);
      operand = *args[0];
      if (args[1]->kind == Value::Kind::Tuple)
        dims = args[1]->elems;
      else
        dims = {*args[1]};
    }
    if (args.size() > 2 && args[2] && !(args[2]->kind == Value::Kind::String && args[2]->name == "C"))
      unsupported(what + "() with an order other than 'C' is not supported", loc);
  } else {
    auto args = library_arguments(what, c, self, {"a", "order"}, {});
    if (!args[0]) type_error(what + "() missing the array", loc);
    if (args[1] && !(args[1]->kind == Value::Kind::String && args[1]->name == "C"))
      unsupported(what + "() with an order other than 'C' is not supported", loc);
    operand = *args[0];
    dims = {Value::of(int_imm(-1, loc))};
  }
  if (!is_array_like(operand)) type_error(what + "() takes an array", loc);
  TensorPtr x = to_tensor(operand, loc);
  if (dims.empty()) unsupported(what + "() to a zero-dimensional array is not supported", loc);

  // The operand's size, and the new extents (one -1 is inferred from it).
  Expr size = int_imm(1, loc);
  for (const Expr& e : x->shape) size = mul(size, e, loc);
  std::vector<Expr> shape;
  int unknown = -1;
  Expr known = int_imm(1, loc);
  for (size_t d = 0; d < dims.size(); ++d) {
    Expr e = as_scalar(dims[d], "a reshape extent", loc);
    if (!e->type.is_int()) type_error("'" + describe(e->type) + "' object cannot be interpreted as an integer", loc);
    e = cast(e, ScalarType::py_int());
    if (auto imm = e->as<ir::IntImm>(); imm && imm->value == -1) {
      if (unknown >= 0) fail(ErrorKind::Value, "can only specify one unknown dimension", loc);
      unknown = static_cast<int>(d);
      shape.push_back(nullptr);
      continue;
    }
    if (auto imm = e->as<ir::IntImm>(); imm && imm->value < 0)
      fail(ErrorKind::Value, "negative dimensions not allowed", loc);
    if (!inferring_ && !e->as<ir::IntImm>()) {
      e = named_if_large(e, loc);
      pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::GE, e, int_imm(0, loc), loc),
                                          PLAIT_VALUE_ERROR,
                                          "negative dimensions not allowed (an unknown dimension is written -1, a "
                                          "constant)",
                                          loc));
    }
    shape.push_back(e);
    known = mul(known, e, loc);
  }
  if (!inferring_) {
    size = named_if_large(size, loc);
    known = named_if_large(known, loc);
    Expr fits = ir::Compare::make(ir::CompareOp::EQ, size, known, loc);
    if (unknown >= 0) {
      // NumPy infers the extent only when the others divide the size.
      Expr nonzero = ir::Compare::make(ir::CompareOp::NE, known, int_imm(0, loc), loc);
      Expr divides = ir::Compare::make(ir::CompareOp::EQ,
                                       ir::Binary::make(ir::BinaryOp::Mod, size, imax(known, int_imm(1, loc), loc),
                                                        ScalarType::py_int(), false, loc),
                                       int_imm(0, loc), loc);
      fits = ir::Logical::make(ir::LogicalOp::And, nonzero, divides, loc);
    }
    if (!is_const(fits, 1))
      pending_.push_back(ir::Assert::make(fits, PLAIT_VALUE_ERROR,
                                          "cannot reshape the array into the requested shape (its size differs)", loc));
  }
  if (unknown >= 0) {
    Expr extent = ir::Binary::make(ir::BinaryOp::FloorDiv, size, imax(known, int_imm(1, loc), loc),
                                   ScalarType::py_int(), false, loc);
    shape[static_cast<size_t>(unknown)] = inferring_ ? extent : named_if_large(extent, loc);
  }

  auto t = std::make_shared<Tensor>(*x);
  for (auto& read : t->reads) read.node = nullptr;  // other elements than the syntax's
  t->source = nullptr;
  t->shape = shape;
  t->unit.clear();
  for (const Expr& e : shape) t->unit.push_back(is_const(e, 1));
  t->labels.assign(shape.size(), "");
  // The position in C order, then the operand's index at that position.
  const std::vector<Expr> from = x->shape;
  auto operand_index = [shape, from, loc](const std::vector<Expr>& idx) {
    Expr flat = int_imm(0, loc);
    for (size_t d = 0; d < idx.size(); ++d) flat = add(mul(flat, shape[d], loc), idx[d], loc);
    if (from.size() == 1) return std::vector<Expr>{flat};
    std::vector<Expr> out(from.size());
    for (size_t d = from.size(); d-- > 0;) {
      if (d == 0) {
        out[d] = flat;
        break;
      }
      out[d] = ir::Binary::make(ir::BinaryOp::Mod, flat, from[d], ScalarType::py_int(), false, loc);
      flat = ir::Binary::make(ir::BinaryOp::FloorDiv, flat, from[d], ScalarType::py_int(), false, loc);
    }
    return out;
  };
  t->element = [x, operand_index](const std::vector<Expr>& idx, Sink& sink) {
    return x->element(operand_index(idx), sink);
  };
  if (copy || !x->array_index) {
    t->array = nullptr;  // a new array (flatten), or one computed from arrays
    t->array_index = nullptr;
  } else {
    auto inner = x->array_index;
    t->array_index = [inner, operand_index](const std::vector<Expr>& idx) { return inner(operand_index(idx)); };
    t->not_assignable = kAssignThroughReshape;
  }
  return Value::of_tensor(t, loc);
}

}  // namespace plait::lowering
