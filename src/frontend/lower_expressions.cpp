// Lowering: scalar expressions, names read as values, arithmetic and
// comparisons with NEP 50 types and Python's semantics, attributes and
// subscripts (lowerer.h).
#include "frontend/lowerer.h"

#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <set>

#include "frontend/ast.h"
#include "ir/ir.h"
#include "runtime/abi.h"

namespace plait::lowering {

Expr Lowerer::cast(Expr e, ScalarType t, bool checked) {
  if (e->type.kind == t.kind) return e;
  // Literals convert at compile time, so generated code stays free of casts.
  if (auto i = e->as<ir::IntImm>()) {
    if (t.is_float()) {
      const double v = e->type.kind == ScalarKind::UInt64 ? static_cast<double>(static_cast<uint64_t>(i->value))
                                                          : static_cast<double>(i->value);
      return ir::FloatImm::make(v, t, e->loc);
    }
    if (t.is_int()) return ir::IntImm::make(wrap_int(i->value, t.kind), t, e->loc);
  }
  if (auto f = e->as<ir::FloatImm>()) {
    if (t.kind == ScalarKind::Float32) return ir::FloatImm::make(static_cast<float>(f->value), t, e->loc);
    if (t.kind == ScalarKind::Float64) return ir::FloatImm::make(f->value, t, e->loc);
  }
  if (auto b = e->as<ir::BoolImm>()) {
    if (t.is_int()) return ir::IntImm::make(b->value ? 1 : 0, t, e->loc);
    if (t.is_float()) return ir::FloatImm::make(b->value ? 1.0 : 0.0, t, e->loc);
  }
  return ir::Cast::make(t, e, checked && e->type.is_float() && t.is_int(), e->loc);
}

Expr Lowerer::with_weakness(Expr e, bool weak) {
  if (e->type.weak == weak) return e;
  ScalarType t{e->type.kind, weak};
  if (auto i = e->as<ir::IntImm>()) return ir::IntImm::make(i->value, t, e->loc);
  if (auto f = e->as<ir::FloatImm>()) return ir::FloatImm::make(f->value, t, e->loc);
  if (auto b = e->as<ir::BoolImm>()) return std::make_shared<ir::BoolImm>(b->value, t, e->loc);
  return ir::Cast::make(t, e, false, e->loc);
}

Expr Lowerer::truthy(Expr e, SourceLoc loc) {
  if (e->type.is_bool()) return e;
  Expr zero = e->type.is_float() ? ir::FloatImm::make(0.0, e->type, loc) : ir::IntImm::make(0, e->type, loc);
  return ir::Compare::make(ir::CompareOp::NE, e, zero, loc);
}

Expr Lowerer::as_scalar(const Value& v, const char* context, SourceLoc loc) {
  if (v.kind == Value::Kind::Scalar) return v.scalar;
  if (v.kind == Value::Kind::Array || v.kind == Value::Kind::Tensor)
    type_error(std::string("an array is used where a number is needed, in ") + context +
                   " (NumPy would say: the truth value of an array is ambiguous); index it to get an element",
               loc);
  type_error(std::string("expected a number in ") + context + ", got " + value_kind_name(v.kind), loc);
}

Expr Lowerer::scalar(const ast::Expr& e, const char* context) {
  return as_scalar(lower(e), context, e.loc);
}

Expr Lowerer::fit_python_int(Expr x, ScalarType t) {
  if (!x->type.weak || !x->type.is_int() || !t.is_int() || t.weak || t.kind == ScalarKind::Int64) return x;
  if (auto i = x->as<ir::IntImm>(); i && i->value >= int_min(t.kind) && i->value <= int_max(t.kind)) return x;
  return ir::Cast::make(t, x, true, x->loc);
}

Expr Lowerer::binary(ast::BinOpKind op, Expr a, Expr b, SourceLoc loc) {
  using K = ast::BinOpKind;
  // Python bools do arithmetic as ints (True + True == 2); NumPy bools
  // only in mixed operations, which promote() already covers.
  auto int_if_weak_bool = [&](Expr& x) {
    if (x->type.is_bool() && x->type.weak) x = cast(x, ScalarType::py_int());
  };
  bool bitwise = op == K::BitAnd || op == K::BitOr || op == K::BitXor;
  if (!bitwise) {
    int_if_weak_bool(a);
    int_if_weak_bool(b);
  }
  if (op == K::MatMult) unsupported("'@' needs array operands, which are not supported yet", loc);
  ScalarType t = promote(a->type, b->type);
  bool both_weak = a->type.weak && b->type.weak;
  a = fit_python_int(a, t);
  b = fit_python_int(b, t);
  if (!bitwise && t.is_bool()) {
    // NumPy bools add as logical or and multiply as logical and.
    if (op == K::Add) return ir::Binary::make(ir::BinaryOp::BitOr, cast(a, t), cast(b, t), t, false, loc);
    if (op == K::Mult) return ir::Binary::make(ir::BinaryOp::BitAnd, cast(a, t), cast(b, t), t, false, loc);
    unsupported(std::string("arithmetic '") + ast::binop_symbol(op) + "' on two NumPy bools; convert them with int()",
                loc);
  }
  switch (op) {
    case K::Add:
    case K::Sub:
    case K::Mult: {
      ir::BinaryOp o = op == K::Add ? ir::BinaryOp::Add : op == K::Sub ? ir::BinaryOp::Sub : ir::BinaryOp::Mul;
      return ir::Binary::make(o, cast(a, t), cast(b, t), t, false, loc);
    }
    case K::Div: {
      ScalarType f = t.is_float() ? t : ScalarType{ScalarKind::Float64, t.weak};
      return ir::Binary::make(ir::BinaryOp::Div, cast(a, f), cast(b, f), f, both_weak, loc);
    }
    case K::FloorDiv:
      return ir::Binary::make(ir::BinaryOp::FloorDiv, cast(a, t), cast(b, t), t, both_weak, loc);
    case K::Mod:
      return ir::Binary::make(ir::BinaryOp::Mod, cast(a, t), cast(b, t), t, both_weak, loc);
    case K::Pow: {
      // A Python int to a negative int power is a float in Python; with a
      // constant exponent the kernel can type it so. NumPy integers raise
      // ValueError instead, as NumPy does.
      if (both_weak && t.is_int())
        if (auto e = b->as<ir::IntImm>(); e && e->value < 0) t = ScalarType::py_float();
      return ir::Binary::make(ir::BinaryOp::Pow, cast(a, t), cast(b, t), t, both_weak, loc);
    }
    case K::BitAnd:
    case K::BitOr:
    case K::BitXor:
    case K::LShift:
    case K::RShift: {
      if (t.is_float())
        type_error(std::string("unsupported operand types for '") + ast::binop_symbol(op) + "': " + describe(a->type) +
                       " and " + describe(b->type),
                   loc);
      ir::BinaryOp o = op == K::BitAnd   ? ir::BinaryOp::BitAnd
                       : op == K::BitOr  ? ir::BinaryOp::BitOr
                       : op == K::BitXor ? ir::BinaryOp::BitXor
                       : op == K::LShift ? ir::BinaryOp::Shl
                                         : ir::BinaryOp::Shr;
      if ((o == ir::BinaryOp::Shl || o == ir::BinaryOp::Shr) && t.is_bool()) t = ScalarType{ScalarKind::Int64, t.weak};
      return ir::Binary::make(o, cast(a, t), cast(b, t), t, false, loc);
    }
    case K::MatMult:
      break;
  }
  PLAIT_INTERNAL_ERROR("unhandled binary operator");
}

Expr Lowerer::compare(ast::CmpOpKind op, Expr a, Expr b, SourceLoc loc) {
  using K = ast::CmpOpKind;
  ir::CompareOp o;
  switch (op) {
    case K::Eq:
      o = ir::CompareOp::EQ;
      break;
    case K::NotEq:
      o = ir::CompareOp::NE;
      break;
    case K::Lt:
      o = ir::CompareOp::LT;
      break;
    case K::LtE:
      o = ir::CompareOp::LE;
      break;
    case K::Gt:
      o = ir::CompareOp::GT;
      break;
    case K::GtE:
      o = ir::CompareOp::GE;
      break;
    default:
      unsupported(std::string("the comparison '") + ast::cmpop_symbol(op) + "' is not supported in kernels", loc);
  }
  // NumPy compares integers exactly, whatever their signedness, and a
  // Python int with a narrower integer even when it does not fit in it.
  std::optional<ScalarType> exact = exact_compare_type(a->type, b->type);
  Expr c;
  if (exact) {
    c = ir::Compare::make(o, cast(a, *exact), cast(b, *exact), loc);
  } else {
    c = compare_signed_with_uint64(o, a, b, loc);
  }
  // A comparison of two Python numbers is a Python bool; with a NumPy
  // operand it is a numpy.bool_.
  if (!(a->type.weak && b->type.weak)) return c;
  return std::make_shared<ir::Compare>(o, c->as<ir::Compare>()->a, c->as<ir::Compare>()->b, ScalarType::py_bool(), loc);
}

// A signed value (or a Python int) against a uint64 one: C++ would convert
// the signed one to uint64 (-1 < 1u is false), so a negative value decides
// the comparison by itself and the rest compare as uint64.
Expr Lowerer::compare_signed_with_uint64(ir::CompareOp o, Expr a, Expr b, SourceLoc loc) {
  const bool signed_left = !a->type.is_unsigned();
  Expr s = cast(signed_left ? a : b, ScalarType{ScalarKind::Int64, false});
  Expr u = signed_left ? b : a;
  // The result when the signed operand is negative, i.e. smaller.
  bool negative_result = false;
  switch (o) {
    case ir::CompareOp::EQ:
      negative_result = false;
      break;
    case ir::CompareOp::NE:
      negative_result = true;
      break;
    case ir::CompareOp::LT:
    case ir::CompareOp::LE:
      negative_result = signed_left;
      break;
    case ir::CompareOp::GT:
    case ir::CompareOp::GE:
      negative_result = !signed_left;
      break;
  }
  if (auto i = s->as<ir::IntImm>()) {
    if (i->value < 0) return std::make_shared<ir::BoolImm>(negative_result, ScalarType::b1(), loc);
    Expr su = cast(s, ScalarType::u64());
    return ir::Compare::make(o, signed_left ? su : u, signed_left ? u : su, loc);
  }
  Expr su = cast(s, ScalarType::u64());
  Expr unsigned_cmp = ir::Compare::make(o, signed_left ? su : u, signed_left ? u : su, loc);
  Expr is_negative = ir::Compare::make(ir::CompareOp::LT, s, ir::IntImm::make(0, s->type, loc), loc);
  Expr decided = std::make_shared<ir::BoolImm>(negative_result, ScalarType::b1(), loc);
  return ir::Select::make(is_negative, decided, unsigned_cmp, loc);
}

// ================================================================ expressions

Value Lowerer::binary_value(const ast::BinOp& b, const Value& lv, const Value& rv) {
  if (is_array_like(lv) || is_array_like(rv)) return tensor_binary(b.op, lv, rv, b.loc);
  Expr l = as_scalar(lv, "arithmetic", b.left->loc);
  Expr r = as_scalar(rv, "arithmetic", b.right->loc);
  return Value::of(binary(b.op, l, r, b.loc));
}

Value Lowerer::unary_value(const ast::UnaryOp& u, const Value& operand) {
  if (is_array_like(operand)) {
    if (u.op == ast::UnaryOpKind::Not)
      type_error("'not' of an array is ambiguous; use np.logical_not or ~ on a bool array", u.loc);
    const ast::UnaryOpKind op = u.op;
    const SourceLoc loc = u.loc;
    return elementwise(
        {operand},
        [this, op, loc](const std::vector<Expr>& x) {
          if (op == ast::UnaryOpKind::UAdd) return x[0];
          if (op == ast::UnaryOpKind::USub) {
            if (x[0]->type.is_bool()) unsupported("negative of a bool array; convert it with astype(int)", loc);
            return ir::Unary::make(ir::UnaryOp::Neg, x[0], loc);
          }
          if (x[0]->type.is_float()) type_error("bad operand type for unary ~: " + describe(x[0]->type), loc);
          return ir::Unary::make(x[0]->type.is_bool() ? ir::UnaryOp::Not : ir::UnaryOp::BitNot, x[0], loc);
        },
        u.loc);
  }
  if ((operand.kind == Value::Kind::List || operand.kind == Value::Kind::Dict) && u.op == ast::UnaryOpKind::Not)
    return Value::of(ir::Unary::make(ir::UnaryOp::Not, condition_of(operand, u.loc), u.loc));
  Expr x = as_scalar(operand, "arithmetic", u.operand->loc);
  switch (u.op) {
    case ast::UnaryOpKind::Not: {
      // `not x` is a Python bool whatever x is.
      Expr t = truthy(x, u.loc);
      return Value::of(std::make_shared<ir::Unary>(ir::UnaryOp::Not, t, ScalarType::py_bool(), u.loc));
    }
    case ast::UnaryOpKind::USub:
    case ast::UnaryOpKind::UAdd: {
      if (x->type.is_bool()) {
        if (!x->type.weak) unsupported("unary minus on a NumPy bool; convert it with int()", u.loc);
        x = cast(x, ScalarType::py_int());
      }
      if (u.op == ast::UnaryOpKind::UAdd) return Value::of(x);
      if (auto i = x->as<ir::IntImm>())
        return Value::of(ir::IntImm::make(
            wrap_int(static_cast<int64_t>(0 - static_cast<uint64_t>(i->value)), x->type.kind), x->type, u.loc));
      if (auto f = x->as<ir::FloatImm>()) return Value::of(ir::FloatImm::make(-f->value, x->type, u.loc));
      return Value::of(ir::Unary::make(ir::UnaryOp::Neg, x, u.loc));
    }
    case ast::UnaryOpKind::Invert: {
      if (x->type.is_float()) type_error("bad operand type for unary ~: " + describe(x->type), u.loc);
      if (x->type.is_bool()) {
        if (x->type.weak)
          x = cast(x, ScalarType::py_int());  // ~True == -2
        else
          return Value::of(ir::Unary::make(ir::UnaryOp::Not, x, u.loc));
      }
      return Value::of(ir::Unary::make(ir::UnaryOp::BitNot, x, u.loc));
    }
  }
  PLAIT_INTERNAL_ERROR("unknown unary operator");
}

Value Lowerer::lower(const ast::Expr& e) {
  if (e.kind != ast::ExprKind::Name && e.kind != ast::ExprKind::Call && involves_sparse(e)) {
    // The tensor-algebra level computes it; a dense result is computed here.
    Value v = lower_algebra(e);
    return v.kind == Value::Kind::Algebra && !v.algebra->sparse() ? realize(v, e.loc) : v;
  }
  switch (e.kind) {
    case ast::ExprKind::Name: {
      Value v = lookup_name(*e.as<ast::Name>());
      if (v.kind == Value::Kind::Array) v.node = &e;
      return v;
    }
    case ast::ExprKind::Constant: {
      const auto& c = *e.as<ast::Constant>();
      if (std::holds_alternative<bool>(c.value)) return Value::of(ir::BoolImm::make(std::get<bool>(c.value), e.loc));
      if (std::holds_alternative<int64_t>(c.value))
        return Value::of(ir::IntImm::make(std::get<int64_t>(c.value), ScalarType::py_int(), e.loc));
      if (std::holds_alternative<double>(c.value))
        return Value::of(ir::FloatImm::make(std::get<double>(c.value), ScalarType::py_float(), e.loc));
      Value v;
      v.loc = e.loc;
      if (std::holds_alternative<std::string>(c.value)) {
        v.kind = Value::Kind::String;
        v.name = std::get<std::string>(c.value);
      }
      return v;
    }
    case ast::ExprKind::BinOp: {
      const auto& b = *e.as<ast::BinOp>();
      Value lv = lower(*b.left);
      Value rv = lower(*b.right);
      return binary_value(b, lv, rv);
    }
    case ast::ExprKind::UnaryOp: {
      const auto& u = *e.as<ast::UnaryOp>();
      return unary_value(u, lower(*u.operand));
    }
    case ast::ExprKind::BoolOp: {
      const auto& b = *e.as<ast::BoolOp>();
      std::vector<Expr> vals;
      const size_t outer_guards = guards_.size();
      for (const auto& v : b.values) {
        // A list operand counts by its truth (not empty), as in a condition.
        Value operand = lower(*v);
        const bool container = operand.kind == Value::Kind::List || operand.kind == Value::Kind::Dict;
        vals.push_back(container ? condition_of(operand, v->loc) : as_scalar(operand, "'and'/'or'", v->loc));
        // Python evaluates the next operand only when this one does not
        // decide the result.
        if (!inferring_) {
          Expr t = truthy(vals.back(), v->loc);
          guards_.push_back(b.op == ast::BoolOpKind::And ? t : ir::Unary::make(ir::UnaryOp::Not, t, v->loc));
        }
      }
      guards_.resize(outer_guards);
      bool all_bool = true;
      ScalarType t = vals[0]->type;
      for (const auto& v : vals) {
        all_bool = all_bool && v->type.is_bool();
        t = promote(t, v->type);
      }
      // Python returns the deciding operand itself: `a or b` is a if a is
      // truthy else b. For bools that is plain short-circuit logic.
      Expr acc = cast(vals.back(), t);
      for (int i = static_cast<int>(vals.size()) - 2; i >= 0; --i) {
        Expr x = cast(vals[i], t);
        if (all_bool) {
          acc = ir::Logical::make(b.op == ast::BoolOpKind::And ? ir::LogicalOp::And : ir::LogicalOp::Or, x, acc, e.loc);
        } else if (b.op == ast::BoolOpKind::And) {
          acc = ir::Select::make(truthy(x, e.loc), acc, x, e.loc);
        } else {
          acc = ir::Select::make(truthy(x, e.loc), x, acc, e.loc);
        }
      }
      if (all_bool && acc->type.weak != t.weak)
        acc = std::make_shared<ir::Logical>(acc->as<ir::Logical>()->op, acc->as<ir::Logical>()->a,
                                            acc->as<ir::Logical>()->b, t, e.loc);
      return Value::of(acc);
    }
    case ast::ExprKind::Compare: {
      const auto& c = *e.as<ast::Compare>();
      if (c.ops.size() == 1) {
        Value lv = lower(*c.left);
        Value rv = lower(*c.comparators[0]);
        const bool membership = c.ops[0] == ast::CmpOpKind::In || c.ops[0] == ast::CmpOpKind::NotIn;
        if (membership && rv.kind == Value::Kind::Dict && rv.table) {
          Expr found = table_contains(rv.table, lv, e.loc);
          return Value::of(c.ops[0] == ast::CmpOpKind::In ? found : ir::Unary::make(ir::UnaryOp::Not, found, e.loc));
        }
        if (is_array_like(lv) || is_array_like(rv)) {
          const ast::CmpOpKind op = c.ops[0];
          const SourceLoc loc = e.loc;
          return elementwise(
              {lv, rv},
              [this, op, loc](const std::vector<Expr>& x) {
                Expr r = compare(op, x[0], x[1], loc);
                return r;
              },
              e.loc);
        }
        // Each operand is lowered once: its checks (a list index) run once.
        return Value::of(compare(c.ops[0], as_scalar(lv, "a comparison", c.left->loc),
                                 as_scalar(rv, "a comparison", c.comparators[0]->loc), e.loc));
      }
      Expr left = scalar(*c.left, "a comparison");
      Expr result;
      const size_t outer_guards = guards_.size();
      for (size_t i = 0; i < c.ops.size(); ++i) {
        Expr right = scalar(*c.comparators[i], "a comparison");
        Expr one = compare(c.ops[i], left, right, e.loc);
        result = result ? ir::Logical::make(ir::LogicalOp::And, result, one, e.loc) : one;
        left = right;
        // `a < b < c` evaluates c only when a < b.
        if (!inferring_) guards_.push_back(one);
      }
      guards_.resize(outer_guards);
      return Value::of(result);
    }
    case ast::ExprKind::IfExp: {
      const auto& x = *e.as<ast::IfExp>();
      Expr test = condition(*x.test, "a conditional expression");
      if (!inferring_) guards_.push_back(test);
      Value body = lower(*x.body);
      if (!inferring_) guards_.back() = ir::Unary::make(ir::UnaryOp::Not, test, e.loc);
      Value orelse = lower(*x.orelse);
      if (!inferring_) guards_.pop_back();
      // An array-valued choice would need a view bound at run time to one of
      // two arrays; the statement form binds a name in each branch.
      if (is_array_like(body) || is_array_like(orelse)) {
        unsupported(
            "a conditional expression choosing between arrays ('a if c else b') is not supported in Plait "
            "kernels; use an if statement that assigns the array in each branch",
            e.loc);
      }
      Expr t = as_scalar(body, "a conditional expression", x.body->loc);
      Expr f = as_scalar(orelse, "a conditional expression", x.orelse->loc);
      ScalarType ty = promote(t->type, f->type);
      return Value::of(ir::Select::make(test, cast(t, ty), cast(f, ty), e.loc));
    }
    case ast::ExprKind::Call:
      return lower_call(*e.as<ast::Call>());
    case ast::ExprKind::Attribute:
      return lower_attribute(*e.as<ast::Attribute>());
    case ast::ExprKind::Subscript:
      return lower_subscript(*e.as<ast::Subscript>());
    case ast::ExprKind::Tuple:
    case ast::ExprKind::List: {
      const auto& elts = e.kind == ast::ExprKind::Tuple ? e.as<ast::Tuple>()->elts : e.as<ast::List>()->elts;
      Value v;
      v.kind = Value::Kind::Tuple;
      v.loc = e.loc;
      for (const auto& x : elts) v.elems.push_back(lower(*x));
      return v;
    }
    case ast::ExprKind::Slice:
      unsupported("slices are not supported yet (array expressions come with a later version)", e.loc);
  }
  PLAIT_INTERNAL_ERROR("unhandled expression kind");
}

Value Lowerer::lower_attribute(const ast::Attribute& a) {
  Value base = lower(*a.value);
  const std::string& attr = a.attr;
  if (is_array_like(base)) {
    TensorPtr t = to_tensor(base, a.loc);
    if (attr == "shape") {
      Value tuple;
      tuple.kind = Value::Kind::Tuple;
      tuple.loc = a.loc;
      for (const Expr& e : t->shape) tuple.elems.push_back(Value::of(e));
      return tuple;
    }
    if (attr == "ndim")
      return Value::of(ir::IntImm::make(static_cast<int64_t>(t->rank()), ScalarType::py_int(), a.loc));
    if (attr == "size") {
      Expr n = ir::IntImm::make(1, ScalarType::py_int(), a.loc);
      for (const Expr& e : t->shape)
        n = n->as<ir::IntImm>() ? e : ir::Binary::make(ir::BinaryOp::Mul, n, e, ScalarType::py_int(), false, a.loc);
      return Value::of(n);
    }
    if (attr == "dtype") return Value::dtype_of(t->type.kind, a.loc);
    if (attr == "T") return transpose(base, a.loc);
    // A method: bound to its array, called by lower_call.
    Value m = Value::function("method." + attr, a.loc);
    m.elems.push_back(base);
    return m;
  }
  if (base.kind == Value::Kind::List) {
    if (!base.list) unsupported("methods of a list display: bind the list to a name first", a.loc);
    Value m = Value::function("list." + attr, a.loc);
    m.elems.push_back(base);
    return m;
  }
  if (base.kind == Value::Kind::Dict) {
    if (!base.table) unsupported("methods of a dict or set display: bind it to a name first", a.loc);
    Value m = Value::function("table." + attr, a.loc);
    m.elems.push_back(base);
    return m;
  }
  if (base.kind == Value::Kind::Function) {
    const std::string& mod = base.name;
    if (mod == "numpy") {
      static const std::map<std::string, double> kConsts = {{"pi", std::numbers::pi}, {"e", std::numbers::e},
                                                            {"inf", INFINITY},        {"nan", NAN},
                                                            {"NINF", -INFINITY},      {"Inf", INFINITY}};
      auto c = kConsts.find(attr);
      if (c != kConsts.end()) return Value::of(ir::FloatImm::make(c->second, ScalarType::py_float(), a.loc));
      if (attr == "newaxis") {
        Value none;
        none.loc = a.loc;
        return none;
      }
      static const std::map<std::string, ScalarKind> kDtypes = {
          {"float64", ScalarKind::Float64}, {"double", ScalarKind::Float64}, {"float32", ScalarKind::Float32},
          {"single", ScalarKind::Float32},  {"int64", ScalarKind::Int64},    {"int_", ScalarKind::Int64},
          {"intp", ScalarKind::Int64},      {"int32", ScalarKind::Int32},    {"bool_", ScalarKind::Bool},
          {"bool", ScalarKind::Bool},       {"int16", ScalarKind::Int16},    {"int8", ScalarKind::Int8},
          {"uint64", ScalarKind::UInt64},   {"uint32", ScalarKind::UInt32},  {"uint16", ScalarKind::UInt16},
          {"uint8", ScalarKind::UInt8},     {"uint", ScalarKind::UInt64},    {"uintp", ScalarKind::UInt64}};
      auto d = kDtypes.find(attr);
      if (d != kDtypes.end()) return Value::dtype_of(d->second, a.loc);
      return Value::function("numpy." + attr, a.loc);
    }
    if (mod == "math") {
      static const std::map<std::string, double> kConsts = {{"pi", std::numbers::pi},
                                                            {"e", std::numbers::e},
                                                            {"inf", INFINITY},
                                                            {"nan", NAN},
                                                            {"tau", 2 * std::numbers::pi}};
      auto c = kConsts.find(attr);
      if (c != kConsts.end()) return Value::of(ir::FloatImm::make(c->second, ScalarType::py_float(), a.loc));
      return Value::function("math." + attr, a.loc);
    }
    if (mod == "plait" || mod == "plait.sparse" || mod == "heapq") return Value::function(mod + "." + attr, a.loc);
    if (mod.rfind("numpy.", 0) == 0) return Value::function(mod + "." + attr, a.loc);
  }
  unsupported("the attribute '." + attr + "' of " + value_kind_name(base.kind) + " is not supported", a.loc);
}

std::vector<Expr> Lowerer::element_indices(const ir::ArrayVar& array, const ast::Expr& index, SourceLoc loc,
                                           LoweredParts* gather) {
  std::vector<const ast::Expr*> parts;
  if (auto t = index.as<ast::Tuple>()) {
    for (const auto& e : t->elts) parts.push_back(e.get());
  } else {
    parts.push_back(&index);
  }
  std::vector<Expr> out;
  for (const ast::Expr* p : parts) {
    if (p->kind == ast::ExprKind::Slice)
      unsupported(
          "slicing arrays is not supported yet (array expressions come with a later version); index "
          "every dimension with an integer",
          p->loc);
    Value v = lower(*p);
    if (is_array_like(v) && !gather) unsupported(kAssignThroughArrayIndex, p->loc);
    if (gather) {
      // A read: the parts lowered so far go to array_view, which lowers
      // each part once.
      (*gather)[p] = v;
      if (is_array_like(v)) return {};
    }
    Expr e = as_scalar(v, "an index", p->loc);
    if (!e->type.is_int()) fail(ErrorKind::Type, "array indices must be integers, got " + describe(e->type), p->loc);
    out.push_back(cast(e, ScalarType{ScalarKind::Int64, e->type.weak}));
  }
  int ndim = array->type.ndim;
  if (static_cast<int>(out.size()) > ndim)
    fail(ErrorKind::Type,
         "too many indices for '" + array->name + "': it has " + std::to_string(ndim) + " dimension(s) but " +
             std::to_string(out.size()) + " were indexed",
         loc);
  if (static_cast<int>(out.size()) < ndim)
    unsupported("'" + array->name + "' has " + std::to_string(ndim) + " dimensions but only " +
                    std::to_string(out.size()) +
                    " index(es) are given; that selects a sub-array (a view), which is "
                    "not supported yet",
                loc);
  return out;
}

Value Lowerer::lower_subscript(const ast::Subscript& s) {
  Value base = lower(*s.value);
  if (base.kind == Value::Kind::List) {
    if (!base.list) unsupported("indexing a list display: bind the list to a name first", s.loc);
    if (s.index->kind == ast::ExprKind::Slice || s.index->kind == ast::ExprKind::Tuple)
      unsupported("lists are indexed by one integer (slices of lists are not supported)", s.index->loc);
    return list_element(base.list, scalar(*s.index, "a list index"), s.loc);
  }
  if (base.kind == Value::Kind::Dict) {
    if (!base.table) unsupported("indexing a dict display: bind it to a name first", s.loc);
    return table_lookup(base.table, lower(*s.index), s.loc);
  }
  if (base.kind == Value::Kind::Tuple) {
    const auto* c = s.index->as<ast::Constant>();
    int64_t k = 0;
    if (c && std::holds_alternative<int64_t>(c->value)) {
      k = std::get<int64_t>(c->value);
    } else if (auto u = s.index->as<ast::UnaryOp>(); u && u->op == ast::UnaryOpKind::USub) {
      auto cc = u->operand->as<ast::Constant>();
      if (!cc || !std::holds_alternative<int64_t>(cc->value))
        unsupported("tuples can only be indexed with integer constants", s.index->loc);
      k = -std::get<int64_t>(cc->value);
    } else if (auto g = s.index->as<ast::Name>(); g && !assigned_names_.count(g->id) && !param_names_.count(g->id) &&
                                                  globals_.count(g->id) &&
                                                  globals_.at(g->id).kind == GlobalValue::Kind::Int) {
      k = globals_.at(g->id).int_value;
    } else {
      unsupported("tuples (such as a.shape) can only be indexed with integer constants", s.index->loc);
    }
    int64_t n = static_cast<int64_t>(base.elems.size());
    if (k < -n || k >= n) fail(ErrorKind::Value, "tuple index out of range", s.index->loc);
    return base.elems[static_cast<size_t>(k < 0 ? k + n : k)];
  }
  if (base.kind == Value::Kind::Tensor) {
    TensorPtr view = array_view(base.tensor, s.index.get(), &s, s.loc);
    // Every dimension indexed (`F[j][k]`): the element, a scalar as NumPy's.
    if (view->rank() == 0) {
      Sink sink;
      Expr element = view->element({}, sink);
      if (sink.groups.empty()) return Value::of(element);
    }
    return Value::of_tensor(view, s.loc);
  }
  if (base.kind != Value::Kind::Array)
    type_error(std::string(value_kind_name(base.kind)) + " cannot be indexed", s.value->loc);
  if (indexes_a_view(base.array, *s.index))
    return Value::of_tensor(array_view(to_tensor(base, s.loc), s.index.get(), &s, s.loc), s.loc);
  LoweredParts parts;
  std::vector<Expr> idx = element_indices(base.array, *s.index, s.loc, &parts);
  if (idx.empty() && base.array->type.ndim > 0) {
    // An integer array among the indices: a gather.
    return Value::of_tensor(array_view(to_tensor(base, s.loc), s.index.get(), &s, s.loc, &parts), s.loc);
  }
  return Value::of(ir::Load::make(base.array, idx, false, s.loc));
}

}  // namespace plait::lowering
