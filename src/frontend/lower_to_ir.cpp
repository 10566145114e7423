// Lowering of the syntax tree to the typed IR.
//
// Types are inferred in two phases over the same code: the first phase walks
// the function until the type of every local stops changing (a local's type
// is the NEP 50 join of everything assigned to it; a statement that reads a
// local whose type is not known yet is skipped that round), the second emits
// the IR with the final types, inserting casts where a value meets a wider
// type. One set of typing rules serves both phases.
#include "frontend/lower_to_ir.h"

#include "frontend/lowerer.h"

#include <cmath>
#include <functional>
#include <limits>
#include <climits>
#include <map>
#include <numbers>
#include <optional>
#include <set>

#include "frontend/ast.h"
#include "ir/ir.h"
#include "runtime/abi.h"

namespace plait {
namespace lowering {

const char* value_kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Scalar: return "a scalar";
    case Value::Kind::Array: return "an array";
    case Value::Kind::Tensor: return "an array expression";
    case Value::Kind::Tuple: return "a tuple";
    case Value::Kind::Function: return "a function";
    case Value::Kind::DType: return "a dtype";
    case Value::Kind::None: return "None";
    case Value::Kind::String: return "a string";
  }
  return "a value";
}

std::string describe(ScalarType t) {
  if (t.weak) return t.is_bool() ? "a Python bool" : t.is_int() ? "a Python int" : "a Python float";
  return std::string("numpy.") + numpy_dtype_name(t.kind);
}

std::string describe(const ArrayType& t) {
  return "a " + std::to_string(t.ndim) + "-D array of " + numpy_dtype_name(t.dtype);
}

bool same_tree(const ast::Expr* a, const ast::Expr* b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  if (auto n = a->as<ast::Name>()) return n->id == b->as<ast::Name>()->id;
  if (auto c = a->as<ast::Constant>()) return c->value == b->as<ast::Constant>()->value;
  if (auto s = a->as<ast::Subscript>()) {
    auto t = b->as<ast::Subscript>();
    return same_tree(s->value.get(), t->value.get()) && same_tree(s->index.get(), t->index.get());
  }
  if (auto x = a->as<ast::BinOp>()) {
    auto y = b->as<ast::BinOp>();
    return x->op == y->op && same_tree(x->left.get(), y->left.get()) && same_tree(x->right.get(), y->right.get());
  }
  if (auto x = a->as<ast::UnaryOp>()) {
    auto y = b->as<ast::UnaryOp>();
    return x->op == y->op && same_tree(x->operand.get(), y->operand.get());
  }
  if (auto x = a->as<ast::Tuple>()) {
    auto y = b->as<ast::Tuple>();
    if (x->elts.size() != y->elts.size()) return false;
    for (size_t i = 0; i < x->elts.size(); ++i)
      if (!same_tree(x->elts[i].get(), y->elts[i].get())) return false;
    return true;
  }
  if (auto x = a->as<ast::Attribute>()) {
    auto y = b->as<ast::Attribute>();
    return x->attr == y->attr && same_tree(x->value.get(), y->value.get());
  }
  if (auto x = a->as<ast::Slice>()) {
    auto y = b->as<ast::Slice>();
    return same_tree(x->lower.get(), y->lower.get()) && same_tree(x->upper.get(), y->upper.get()) &&
           same_tree(x->step.get(), y->step.get());
  }
  if (auto x = a->as<ast::Call>()) {
    auto y = b->as<ast::Call>();
    if (!same_tree(x->func.get(), y->func.get()) || x->args.size() != y->args.size() || !x->keywords.empty() ||
        !y->keywords.empty())
      return false;
    for (size_t i = 0; i < x->args.size(); ++i)
      if (!same_tree(x->args[i].get(), y->args[i].get())) return false;
    return true;
  }
  return false;
}

// Names of arrays written through a subscript (`a[i] = v`, `a[1:] += v`) or
// updated in place (`a += v`).
void collect_written_arrays(const ast::StmtList& body, std::set<std::string>& out) {
  auto base = [&](const ast::Expr* t) {
    while (auto s = t->as<ast::Subscript>()) t = s->value.get();
    if (auto n = t->as<ast::Name>()) out.insert(n->id);
  };
  for (const auto& s : body) {
    if (auto a = s->as<ast::Assign>())
      for (auto& t : a->targets)
        if (t->as<ast::Subscript>()) base(t.get());
    if (auto a = s->as<ast::AugAssign>()) base(a->target.get());
    if (auto f = s->as<ast::For>()) collect_written_arrays(f->body, out);
    if (auto w = s->as<ast::While>()) collect_written_arrays(w->body, out);
    if (auto i = s->as<ast::If>()) {
      collect_written_arrays(i->body, out);
      collect_written_arrays(i->orelse, out);
    }
  }
}

// Names assigned anywhere in the function: Python makes them local everywhere.
void collect_assigned_names(const ast::StmtList& body, std::set<std::string>& out) {
  std::function<void(const ast::Expr*)> target = [&](const ast::Expr* t) {
    if (auto n = t->as<ast::Name>()) out.insert(n->id);
    if (auto tu = t->as<ast::Tuple>())
      for (auto& e : tu->elts) target(e.get());
    if (auto l = t->as<ast::List>())
      for (auto& e : l->elts) target(e.get());
  };
  for (const auto& s : body) {
    if (auto a = s->as<ast::Assign>())
      for (auto& t : a->targets) target(t.get());
    if (auto a = s->as<ast::AugAssign>()) target(a->target.get());
    if (auto f = s->as<ast::For>()) {
      target(f->target.get());
      collect_assigned_names(f->body, out);
      collect_assigned_names(f->orelse, out);
    }
    if (auto w = s->as<ast::While>()) {
      collect_assigned_names(w->body, out);
      collect_assigned_names(w->orelse, out);
    }
    if (auto i = s->as<ast::If>()) {
      collect_assigned_names(i->body, out);
      collect_assigned_names(i->orelse, out);
    }
  }
}


// ================================================================ names

void Lowerer::declare_params(const ast::FunctionDef& fn) {
  if (fn.params.size() != signature_.args.size())
    type_error(fn.name + "() takes " + std::to_string(fn.params.size()) + " arguments but the signature has " +
                   std::to_string(signature_.args.size()),
               fn.loc);
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const auto& p = fn.params[i];
    const ValueType& t = signature_.args[i];
    param_names_.insert(p.name);
    LocalType lt;
    lt.first_loc = p.loc;
    if (t.is_array()) lt.array = t.array;
    else lt.scalar = t.scalar;
    types_[p.name] = lt;
  }
}

void Lowerer::record_scalar(const std::string& name, ScalarType t, SourceLoc loc) {
  LocalType& lt = types_[name];
  if (lt.array)
    type_error("'" + name + "' is " + describe(*lt.array) + " elsewhere but is assigned " + describe(t) + " here", loc);
  if (!lt.scalar) {
    lt.scalar = t;
    lt.first_loc = loc;
    changed_ = true;
    return;
  }
  ScalarType u = unify(*lt.scalar, t);
  if (param_names_.count(name) && u.kind != lt.scalar->kind)
    type_error("parameter '" + name + "' is " + describe(*lt.scalar) + " but is assigned " + describe(t) +
                   " here; a variable keeps one type",
               loc);
  if (u != *lt.scalar) {
    lt.scalar = u;
    changed_ = true;
  }
}

void Lowerer::record_array(const std::string& name, const ArrayType& t, SourceLoc loc) {
  LocalType& lt = types_[name];
  if (lt.scalar)
    type_error("'" + name + "' is " + describe(*lt.scalar) + " elsewhere but is assigned " + describe(t) + " here", loc);
  if (!lt.array) {
    lt.array = t;
    lt.first_loc = loc;
    changed_ = true;
    return;
  }
  if (lt.array->dtype != t.dtype || lt.array->ndim != t.ndim)
    type_error("'" + name + "' is " + describe(*lt.array) + " elsewhere but is assigned " + describe(t) +
                   " here; a variable keeps one type",
               loc);
  if (lt.array->layout != t.layout) {
    if (param_names_.count(name))
      type_error("parameter '" + name + "' is assigned an array with a different memory layout", loc);
    lt.array->layout = Layout::Any;
    changed_ = true;
  }
}

Value Lowerer::global_value(const std::string& id, SourceLoc loc) {
  auto it = globals_.find(id);
  if (it != globals_.end()) {
    const GlobalValue& g = it->second;
    switch (g.kind) {
      case GlobalValue::Kind::Module: return Value::function(g.module, loc);
      case GlobalValue::Kind::Int: return Value::of(ir::IntImm::make(g.int_value, ScalarType::py_int(), loc));
      case GlobalValue::Kind::Float: return Value::of(ir::FloatImm::make(g.float_value, ScalarType::py_float(), loc));
      case GlobalValue::Kind::Bool: return Value::of(ir::BoolImm::make(g.bool_value, loc));
    }
  }
  static const std::set<std::string> kBuiltins = {"range", "len", "int", "float", "bool",
                                                  "abs",   "min", "max", "round", "pow"};
  if (kBuiltins.count(id)) return Value::function("builtins." + id, loc);
  fail(ErrorKind::Name, "name '" + id + "' is not defined (kernels see their parameters, their locals, the modules "
                        "numpy, math and plait, and global int/float/bool constants)",
       loc);
}

Value Lowerer::lookup_name(const ast::Name& name) {
  const std::string& id = name.id;
  if (assigned_names_.count(id) || param_names_.count(id)) {
    if (inferring_) {
      auto it = types_.find(id);
      if (it == types_.end()) throw TypeNotKnownYet{};
      const LocalType& lt = it->second;
      if (lt.array) {
        auto a = std::make_shared<ir::ArrayInfo>();
        a->name = id;
        a->type = *lt.array;
        return Value::of_array(a, name.loc);
      }
      auto v = std::make_shared<ir::VarInfo>();
      v->name = id;
      v->type = *lt.scalar;
      return Value::of(ir::VarRef::make(v, name.loc));
    }
    auto it = locals_.find(id);
    if (it == locals_.end())
      fail(ErrorKind::Name, "local variable '" + id + "' is used but never assigned a value", name.loc);
    check_bound(name);
    if (it->second.array) return Value::of_array(it->second.array, name.loc);
    return Value::of(ir::VarRef::make(it->second.var, name.loc));
  }
  return global_value(id, name.loc);
}

namespace {

// Python's message for a read of a local that holds no value.
std::string unbound_message(const std::string& id) {
  return "cannot access local variable '" + id + "' where it is not associated with a value";
}

}  // namespace

void Lowerer::check_bound(const ast::Name& name) {
  if (bindings_.of(name) != Binding::MaybeUnbound || !checked_reads_.insert(&name).second) return;
  Expr ok = unless_skipped(ir::VarRef::make(bound_flags_.at(name.id), name.loc), name.loc);
  pending_.push_back(ir::Assert::make(ok, PLAIT_UNBOUND_LOCAL_ERROR, unbound_message(name.id), name.loc));
}

Expr Lowerer::unless_skipped(Expr ok, SourceLoc loc) const {
  if (guards_.empty()) return ok;
  Expr reached = guards_[0];
  for (size_t i = 1; i < guards_.size(); ++i) reached = ir::Logical::make(ir::LogicalOp::And, reached, guards_[i], loc);
  return ir::Logical::make(ir::LogicalOp::Or, ok, ir::Unary::make(ir::UnaryOp::Not, reached, loc), loc);
}

void Lowerer::mark_bound(const std::string& name, std::vector<Stmt>& out, SourceLoc loc) {
  auto it = bound_flags_.find(name);
  if (it != bound_flags_.end()) out.push_back(ir::Assign::make(it->second, ir::BoolImm::make(true, loc), loc));
}

bool Lowerer::pending_beyond_checks() const {
  for (const Stmt& p : pending_) {
    const auto* a = p->as<ir::Assert>();
    if (!a || a->error_kind != PLAIT_UNBOUND_LOCAL_ERROR) return true;
  }
  return false;
}

// ================================================================ scalars

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

Expr Lowerer::scalar(const ast::Expr& e, const char* context) { return as_scalar(lower(e), context, e.loc); }

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
        type_error(std::string("unsupported operand types for '") + ast::binop_symbol(op) + "': " +
                       describe(a->type) + " and " + describe(b->type),
                   loc);
      ir::BinaryOp o = op == K::BitAnd  ? ir::BinaryOp::BitAnd
                       : op == K::BitOr ? ir::BinaryOp::BitOr
                       : op == K::BitXor ? ir::BinaryOp::BitXor
                       : op == K::LShift ? ir::BinaryOp::Shl
                                         : ir::BinaryOp::Shr;
      if ((o == ir::BinaryOp::Shl || o == ir::BinaryOp::Shr) && t.is_bool()) t = ScalarType{ScalarKind::Int64, t.weak};
      return ir::Binary::make(o, cast(a, t), cast(b, t), t, false, loc);
    }
    case K::MatMult: break;
  }
  PLAIT_INTERNAL_ERROR("unhandled binary operator");
}

Expr Lowerer::compare(ast::CmpOpKind op, Expr a, Expr b, SourceLoc loc) {
  using K = ast::CmpOpKind;
  ir::CompareOp o;
  switch (op) {
    case K::Eq: o = ir::CompareOp::EQ; break;
    case K::NotEq: o = ir::CompareOp::NE; break;
    case K::Lt: o = ir::CompareOp::LT; break;
    case K::LtE: o = ir::CompareOp::LE; break;
    case K::Gt: o = ir::CompareOp::GT; break;
    case K::GtE: o = ir::CompareOp::GE; break;
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
    case ir::CompareOp::EQ: negative_result = false; break;
    case ir::CompareOp::NE: negative_result = true; break;
    case ir::CompareOp::LT:
    case ir::CompareOp::LE: negative_result = signed_left; break;
    case ir::CompareOp::GT:
    case ir::CompareOp::GE: negative_result = !signed_left; break;
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

Value Lowerer::lower(const ast::Expr& e) {
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
      if (is_array_like(lv) || is_array_like(rv)) return tensor_binary(b.op, lv, rv, e.loc);
      Expr l = as_scalar(lv, "arithmetic", b.left->loc);
      Expr r = as_scalar(rv, "arithmetic", b.right->loc);
      return Value::of(binary(b.op, l, r, e.loc));
    }
    case ast::ExprKind::UnaryOp: {
      const auto& u = *e.as<ast::UnaryOp>();
      Value operand = lower(*u.operand);
      if (is_array_like(operand)) {
        if (u.op == ast::UnaryOpKind::Not)
          type_error("'not' of an array is ambiguous; use np.logical_not or ~ on a bool array", e.loc);
        const ast::UnaryOpKind op = u.op;
        const SourceLoc loc = e.loc;
        return elementwise({operand}, [this, op, loc](const std::vector<Expr>& x) {
          if (op == ast::UnaryOpKind::UAdd) return x[0];
          if (op == ast::UnaryOpKind::USub) {
            if (x[0]->type.is_bool()) unsupported("negative of a bool array; convert it with astype(int)", loc);
            return ir::Unary::make(ir::UnaryOp::Neg, x[0], loc);
          }
          if (x[0]->type.is_float()) type_error("bad operand type for unary ~: " + describe(x[0]->type), loc);
          return ir::Unary::make(x[0]->type.is_bool() ? ir::UnaryOp::Not : ir::UnaryOp::BitNot, x[0], loc);
        }, e.loc);
      }
      Expr x = as_scalar(operand, "arithmetic", u.operand->loc);
      switch (u.op) {
        case ast::UnaryOpKind::Not: {
          // `not x` is a Python bool whatever x is.
          Expr t = truthy(x, e.loc);
          return Value::of(std::make_shared<ir::Unary>(ir::UnaryOp::Not, t, ScalarType::py_bool(), e.loc));
        }
        case ast::UnaryOpKind::USub:
        case ast::UnaryOpKind::UAdd: {
          if (x->type.is_bool()) {
            if (!x->type.weak) unsupported("unary minus on a NumPy bool; convert it with int()", e.loc);
            x = cast(x, ScalarType::py_int());
          }
          if (u.op == ast::UnaryOpKind::UAdd) return Value::of(x);
          if (auto i = x->as<ir::IntImm>())
            return Value::of(ir::IntImm::make(wrap_int(static_cast<int64_t>(0 - static_cast<uint64_t>(i->value)), x->type.kind),
                                              x->type, e.loc));
          if (auto f = x->as<ir::FloatImm>()) return Value::of(ir::FloatImm::make(-f->value, x->type, e.loc));
          return Value::of(ir::Unary::make(ir::UnaryOp::Neg, x, e.loc));
        }
        case ast::UnaryOpKind::Invert: {
          if (x->type.is_float()) type_error("bad operand type for unary ~: " + describe(x->type), e.loc);
          if (x->type.is_bool()) {
            if (x->type.weak) x = cast(x, ScalarType::py_int());  // ~True == -2
            else return Value::of(ir::Unary::make(ir::UnaryOp::Not, x, e.loc));
          }
          return Value::of(ir::Unary::make(ir::UnaryOp::BitNot, x, e.loc));
        }
      }
      break;
    }
    case ast::ExprKind::BoolOp: {
      const auto& b = *e.as<ast::BoolOp>();
      std::vector<Expr> vals;
      const size_t outer_guards = guards_.size();
      for (const auto& v : b.values) {
        vals.push_back(scalar(*v, "'and'/'or'"));
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
      if (all_bool && acc->type.weak != t.weak) acc = std::make_shared<ir::Logical>(acc->as<ir::Logical>()->op, acc->as<ir::Logical>()->a, acc->as<ir::Logical>()->b, t, e.loc);
      return Value::of(acc);
    }
    case ast::ExprKind::Compare: {
      const auto& c = *e.as<ast::Compare>();
      if (c.ops.size() == 1) {
        Value lv = lower(*c.left);
        Value rv = lower(*c.comparators[0]);
        if (is_array_like(lv) || is_array_like(rv)) {
          const ast::CmpOpKind op = c.ops[0];
          const SourceLoc loc = e.loc;
          return elementwise({lv, rv}, [this, op, loc](const std::vector<Expr>& x) {
            Expr r = compare(op, x[0], x[1], loc);
            return r;
          }, e.loc);
        }
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
      Expr test = truthy(scalar(*x.test, "a conditional expression"), e.loc);
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
    case ast::ExprKind::Call: return lower_call(*e.as<ast::Call>());
    case ast::ExprKind::Attribute: return lower_attribute(*e.as<ast::Attribute>());
    case ast::ExprKind::Subscript: return lower_subscript(*e.as<ast::Subscript>());
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
    if (attr == "ndim") return Value::of(ir::IntImm::make(static_cast<int64_t>(t->rank()), ScalarType::py_int(), a.loc));
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
  if (base.kind == Value::Kind::Function) {
    const std::string& mod = base.name;
    if (mod == "numpy") {
      static const std::map<std::string, double> kConsts = {
          {"pi", std::numbers::pi}, {"e", std::numbers::e}, {"inf", INFINITY}, {"nan", NAN}, {"NINF", -INFINITY}, {"Inf", INFINITY}};
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
      static const std::map<std::string, double> kConsts = {
          {"pi", std::numbers::pi}, {"e", std::numbers::e}, {"inf", INFINITY}, {"nan", NAN}, {"tau", 2 * std::numbers::pi}};
      auto c = kConsts.find(attr);
      if (c != kConsts.end()) return Value::of(ir::FloatImm::make(c->second, ScalarType::py_float(), a.loc));
      return Value::function("math." + attr, a.loc);
    }
    if (mod == "plait") return Value::function("plait." + attr, a.loc);
    if (mod.rfind("numpy.", 0) == 0) return Value::function(mod + "." + attr, a.loc);
  }
  unsupported("the attribute '." + attr + "' of " + value_kind_name(base.kind) + " is not supported", a.loc);
}

std::vector<Expr> Lowerer::element_indices(const ir::ArrayVar& array, const ast::Expr& index, SourceLoc loc) {
  std::vector<const ast::Expr*> parts;
  if (auto t = index.as<ast::Tuple>()) {
    for (const auto& e : t->elts) parts.push_back(e.get());
  } else {
    parts.push_back(&index);
  }
  std::vector<Expr> out;
  for (const ast::Expr* p : parts) {
    if (p->kind == ast::ExprKind::Slice)
      unsupported("slicing arrays is not supported yet (array expressions come with a later version); index "
                  "every dimension with an integer",
                  p->loc);
    Value v = lower(*p);
    if (is_array_like(v)) unsupported("indexing with an array (fancy indexing) is not supported", p->loc);
    Expr e = as_scalar(v, "an index", p->loc);
    if (!e->type.is_int())
      fail(ErrorKind::Type, "array indices must be integers, got " + describe(e->type), p->loc);
    out.push_back(cast(e, ScalarType{ScalarKind::Int64, e->type.weak}));
  }
  int ndim = array->type.ndim;
  if (static_cast<int>(out.size()) > ndim)
    fail(ErrorKind::Type, "too many indices for '" + array->name + "': it has " + std::to_string(ndim) +
                              " dimension(s) but " + std::to_string(out.size()) + " were indexed",
         loc);
  if (static_cast<int>(out.size()) < ndim)
    unsupported("'" + array->name + "' has " + std::to_string(ndim) + " dimensions but only " +
                    std::to_string(out.size()) + " index(es) are given; that selects a sub-array (a view), which is "
                    "not supported yet",
                loc);
  return out;
}

Value Lowerer::lower_subscript(const ast::Subscript& s) {
  Value base = lower(*s.value);
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
                                                  globals_.count(g->id) && globals_.at(g->id).kind == GlobalValue::Kind::Int) {
      k = globals_.at(g->id).int_value;
    } else {
      unsupported("tuples (such as a.shape) can only be indexed with integer constants", s.index->loc);
    }
    int64_t n = static_cast<int64_t>(base.elems.size());
    if (k < -n || k >= n) fail(ErrorKind::Value, "tuple index out of range", s.index->loc);
    return base.elems[static_cast<size_t>(k < 0 ? k + n : k)];
  }
  if (base.kind == Value::Kind::Tensor)
    return Value::of_tensor(array_view(base.tensor, s.index.get(), &s, s.loc), s.loc);
  if (base.kind != Value::Kind::Array)
    type_error(std::string(value_kind_name(base.kind)) + " cannot be indexed", s.value->loc);
  if (indexes_a_view(base.array, *s.index))
    return Value::of_tensor(array_view(to_tensor(base, s.loc), s.index.get(), &s, s.loc), s.loc);
  std::vector<Expr> idx = element_indices(base.array, *s.index, s.loc);
  return Value::of(ir::Load::make(base.array, idx, false, s.loc));
}

// ================================================================ calls

Expr Lowerer::unary_float(ir::Intrinsic fn, Expr x, bool python_math, SourceLoc loc) {
  ScalarType t;
  if (python_math) t = ScalarType::py_float();
  else t = x->type.is_float() && !x->type.weak ? x->type : ScalarType::f64();
  return ir::Call::make(fn, {cast(x, t)}, t, python_math, loc);
}

ScalarKind Lowerer::dtype_arg(const Value& v, SourceLoc loc) {
  if (v.kind == Value::Kind::DType) return v.dtype;
  if (v.kind == Value::Kind::Function) {
    if (v.name == "builtins.float") return ScalarKind::Float64;
    if (v.name == "builtins.int") return ScalarKind::Int64;
    if (v.name == "builtins.bool") return ScalarKind::Bool;
  }
  if (v.kind == Value::Kind::String) {
    static const std::map<std::string, ScalarKind> kNames = {
        {"float64", ScalarKind::Float64}, {"f8", ScalarKind::Float64}, {"float32", ScalarKind::Float32},
        {"f4", ScalarKind::Float32},      {"int64", ScalarKind::Int64}, {"i8", ScalarKind::Int64},
        {"int32", ScalarKind::Int32},     {"i4", ScalarKind::Int32},   {"bool", ScalarKind::Bool},
        {"int16", ScalarKind::Int16},     {"i2", ScalarKind::Int16},   {"int8", ScalarKind::Int8},
        {"i1", ScalarKind::Int8},         {"uint64", ScalarKind::UInt64}, {"u8", ScalarKind::UInt64},
        {"uint32", ScalarKind::UInt32},   {"u4", ScalarKind::UInt32},  {"uint16", ScalarKind::UInt16},
        {"u2", ScalarKind::UInt16},       {"uint8", ScalarKind::UInt8}, {"u1", ScalarKind::UInt8}};
    auto it = kNames.find(v.name);
    if (it != kNames.end()) return it->second;
  }
  type_error("unsupported dtype; use one of numpy.bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
             "float32, float64 (or bool, int, float)",
             loc);
}

std::vector<Expr> Lowerer::shape_of(const Value& v, SourceLoc loc) {
  std::vector<Expr> dims;
  auto one = [&](const Value& x) {
    Expr e = as_scalar(x, "an array shape", x.loc.valid() ? x.loc : loc);
    if (!e->type.is_int()) type_error("array dimensions must be integers, got " + describe(e->type), x.loc);
    dims.push_back(cast(e, ScalarType::py_int()));
  };
  if (v.kind == Value::Kind::Tuple) {
    for (const auto& x : v.elems) one(x);
  } else {
    one(v);
  }
  if (dims.empty()) unsupported("0-dimensional arrays are not supported", loc);
  if (dims.size() > 4) unsupported("arrays have at most 4 dimensions", loc);
  return dims;
}

Value Lowerer::allocate(const std::string& fn, const ast::Call& c, ir::ArrayVar into) {
  bool like = fn.size() > 5 && fn.substr(fn.size() - 5) == "_like";
  std::string base = like ? fn.substr(0, fn.size() - 5) : fn;
  size_t needed = base == "full" ? 2 : 1;
  if (c.args.size() < needed || c.args.size() > needed + 1)
    type_error("numpy." + fn + "() takes " + std::to_string(needed) + " positional argument(s) (and dtype=)", c.loc);
  std::optional<ScalarKind> dtype;
  Layout order = Layout::C;
  std::vector<Expr> shape;
  std::optional<ArrayType> like_type;
  Value first = lower(*c.args[0]);
  if (like) {
    if (first.kind != Value::Kind::Array) type_error("numpy." + fn + "() needs an array as its first argument", c.args[0]->loc);
    like_type = first.array->type;
    for (int d = 0; d < first.array->type.ndim; ++d) shape.push_back(ir::ArrayDim::make(first.array, d, c.loc));
    dtype = first.array->type.dtype;
    if (first.array->type.layout == Layout::F) order = Layout::F;
  } else {
    shape = shape_of(first, c.args[0]->loc);
  }
  Expr fill_value;
  if (base == "full") {
    fill_value = scalar(*c.args[1], "the fill value");
    if (!like) dtype = fill_value->type.kind;
  }
  if (c.args.size() == needed + 1) dtype = dtype_arg(lower(*c.args[needed]), c.args[needed]->loc);
  for (const auto& kw : c.keywords) {
    if (kw.name == "dtype") {
      Value v = lower(*kw.value);
      if (v.kind != Value::Kind::None) dtype = dtype_arg(v, kw.loc);
    } else if (kw.name == "order") {
      Value v = lower(*kw.value);
      if (v.kind != Value::Kind::String || (v.name != "C" && v.name != "F"))
        unsupported("order= must be 'C' or 'F'", kw.loc);
      order = v.name == "C" ? Layout::C : Layout::F;
    } else if (kw.name == "fill_value" && base == "full") {
      unsupported("pass the fill value positionally", kw.loc);
    } else {
      type_error("numpy." + fn + "() got an unexpected keyword argument '" + kw.name + "'", kw.loc);
    }
  }
  ArrayType t;
  t.dtype = dtype.value_or(ScalarKind::Float64);
  t.ndim = static_cast<int>(shape.size());
  t.layout = t.ndim == 1 ? Layout::C : order;
  ir::FillKind fill = base == "empty" ? ir::FillKind::Uninitialized
                      : base == "zeros" ? ir::FillKind::Zeros
                      : base == "ones"  ? ir::FillKind::Ones
                                        : ir::FillKind::Value;
  if (fill_value) fill_value = cast(fill_value, ScalarType{t.dtype, false}, true);
  ir::ArrayVar target = into ? into : temp_array(t, c.loc);
  std::vector<bool> units;
  for (const auto& e : shape) units.push_back(e->as<ir::IntImm>() && e->as<ir::IntImm>()->value == 1);
  if (!into) array_units_[target] = units;
  if (into && !inferring_ && (into->type.dtype != t.dtype || into->type.ndim != t.ndim))
    PLAIT_INTERNAL_ERROR("allocation type differs from the inferred type of " + into->name);
  pending_.push_back(ir::Allocate::make(target, shape, fill, fill_value, c.loc));
  return Value::of_array(target, c.loc);
}

Value Lowerer::call_builtin(const std::string& fn, const ast::Call& c, const std::vector<Value>& args) {
  auto want = [&](size_t lo, size_t hi) {
    if (args.size() < lo || args.size() > hi)
      type_error(fn + "() takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                     " argument(s), got " + std::to_string(args.size()),
                 c.loc);
  };
  if (!c.keywords.empty()) type_error(fn + "() takes no keyword arguments here", c.keywords[0].loc);
  if (fn == "len") {
    want(1, 1);
    if (args[0].kind == Value::Kind::Tuple)
      return Value::of(ir::IntImm::make(static_cast<int64_t>(args[0].elems.size()), ScalarType::py_int(), c.loc));
    if (args[0].kind != Value::Kind::Array) type_error("len() needs an array", c.loc);
    return Value::of(ir::ArrayDim::make(args[0].array, 0, c.loc));
  }
  if (fn == "float" && args.size() == 1 && args[0].kind == Value::Kind::String) {
    std::string s;
    for (char ch : args[0].name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    double v;
    if (s == "inf" || s == "+inf" || s == "infinity" || s == "+infinity") v = INFINITY;
    else if (s == "-inf" || s == "-infinity") v = -INFINITY;
    else if (s == "nan" || s == "+nan" || s == "-nan") v = NAN;
    else {
      try {
        size_t used = 0;
        v = std::stod(s, &used);
        if (used != s.size()) throw std::invalid_argument(s);
      } catch (const std::exception&) {
        fail(ErrorKind::Value, "could not convert string to float: '" + args[0].name + "'", c.args[0]->loc);
      }
    }
    return Value::of(ir::FloatImm::make(v, ScalarType::py_float(), c.loc));
  }
  if (fn == "pow") {
    // pow(a, b) is a ** b.
    if (args.size() == 3) unsupported("pow() with a modulus is not supported; write (a ** b) % m", c.loc);
    want(2, 2);
    if (is_array_like(args[0]) || is_array_like(args[1]))
      return tensor_binary(ast::BinOpKind::Pow, args[0], args[1], c.loc);
    return Value::of(binary(ast::BinOpKind::Pow, as_scalar(args[0], "pow()", c.args[0]->loc),
                            as_scalar(args[1], "pow()", c.args[1]->loc), c.loc));
  }
  std::vector<Expr> xs;
  for (size_t i = 0; i < args.size(); ++i) xs.push_back(as_scalar(args[i], (fn + "()").c_str(), c.args[i]->loc));
  // int(), float(), bool() and round() give Python numbers.
  if (fn == "int") {
    want(1, 1);
    return Value::of(with_weakness(cast(xs[0], ScalarType::py_int(), true), true));
  }
  if (fn == "float") {
    want(1, 1);
    return Value::of(with_weakness(cast(xs[0], ScalarType::py_float()), true));
  }
  if (fn == "bool") {
    want(1, 1);
    Expr t = truthy(xs[0], c.loc);
    return Value::of(with_weakness(cast(t, ScalarType::py_bool()), true));
  }
  if (fn == "abs") {
    want(1, 1);
    Expr x = xs[0];
    if (x->type.is_bool()) x = cast(x, ScalarType{ScalarKind::Int64, x->type.weak});
    return Value::of(ir::Call::make(x->type.is_float() ? ir::Intrinsic::Fabs : ir::Intrinsic::Abs, {x}, x->type, false, c.loc));
  }
  if (fn == "min" || fn == "max") {
    if (xs.size() < 2)
      unsupported(fn + "() of a single argument (an iterable) is not supported; pass two or more numbers", c.loc);
    ScalarType t = xs[0]->type;
    for (const auto& x : xs) t = promote(t, x->type);
    Expr acc = cast(xs[0], t);
    for (size_t i = 1; i < xs.size(); ++i)
      acc = ir::Binary::make(fn == "min" ? ir::BinaryOp::PyMin : ir::BinaryOp::PyMax, acc, cast(xs[i], t), t, false, c.loc);
    return Value::of(acc);
  }
  if (fn == "round") {
    want(1, 1);
    Expr x = xs[0];
    if (!x->type.is_float()) return Value::of(with_weakness(cast(x, ScalarType::py_int()), true));
    Expr r = ir::Call::make(ir::Intrinsic::Round, {x}, x->type, false, c.loc);
    return Value::of(with_weakness(cast(r, ScalarType::py_int(), true), true));
  }
  if (fn == "range") unsupported("range() can only be used as the iterable of a for loop", c.loc);
  unsupported("the builtin " + fn + "() is not supported in kernels", c.loc);
}

Value Lowerer::call_math(const std::string& fn, const ast::Call& c, const std::vector<Value>& args) {
  static const std::map<std::string, ir::Intrinsic> kUnary = {
      {"sqrt", ir::Intrinsic::Sqrt}, {"exp", ir::Intrinsic::Exp},   {"log2", ir::Intrinsic::Log2},
      {"log10", ir::Intrinsic::Log10}, {"sin", ir::Intrinsic::Sin}, {"cos", ir::Intrinsic::Cos},
      {"tan", ir::Intrinsic::Tan},   {"tanh", ir::Intrinsic::Tanh}, {"asin", ir::Intrinsic::Asin},
      {"acos", ir::Intrinsic::Acos}, {"atan", ir::Intrinsic::Atan}, {"sinh", ir::Intrinsic::Sinh},
      {"cosh", ir::Intrinsic::Cosh}, {"fabs", ir::Intrinsic::Fabs}};
  if (!c.keywords.empty()) type_error("math." + fn + "() takes no keyword arguments", c.keywords[0].loc);
  std::vector<Expr> xs;
  for (size_t i = 0; i < args.size(); ++i) xs.push_back(as_scalar(args[i], ("math." + fn + "()").c_str(), c.args[i]->loc));
  auto want = [&](size_t n) {
    if (xs.size() != n) type_error("math." + fn + "() takes " + std::to_string(n) + " argument(s)", c.loc);
  };
  auto it = kUnary.find(fn);
  if (it != kUnary.end()) {
    want(1);
    return Value::of(unary_float(it->second, xs[0], true, c.loc));
  }
  if (fn == "log") {
    if (xs.size() == 1) return Value::of(unary_float(ir::Intrinsic::Log, xs[0], true, c.loc));
    want(2);
    Expr num = unary_float(ir::Intrinsic::Log, xs[0], true, c.loc);
    Expr den = unary_float(ir::Intrinsic::Log, xs[1], true, c.loc);
    return Value::of(ir::Binary::make(ir::BinaryOp::Div, num, den, ScalarType::py_float(), true, c.loc));
  }
  if (fn == "floor" || fn == "ceil" || fn == "trunc") {
    want(1);
    if (!xs[0]->type.is_float()) return Value::of(with_weakness(cast(xs[0], ScalarType::py_int()), true));
    ir::Intrinsic k = fn == "floor" ? ir::Intrinsic::Floor : fn == "ceil" ? ir::Intrinsic::Ceil : ir::Intrinsic::Trunc;
    Expr r = ir::Call::make(k, {cast(xs[0], ScalarType::py_float())}, ScalarType::py_float(), false, c.loc);
    return Value::of(cast(r, ScalarType::py_int(), true));
  }
  if (fn == "pow" || fn == "atan2") {
    want(2);
    ScalarType f = ScalarType::py_float();
    return Value::of(ir::Call::make(fn == "pow" ? ir::Intrinsic::Pow : ir::Intrinsic::Atan2,
                                    {cast(xs[0], f), cast(xs[1], f)}, f, true, c.loc));
  }
  if (fn == "isnan" || fn == "isinf" || fn == "isfinite") {
    want(1);
    ir::Intrinsic k = fn == "isnan" ? ir::Intrinsic::IsNan : fn == "isinf" ? ir::Intrinsic::IsInf : ir::Intrinsic::IsFinite;
    return Value::of(ir::Call::make(k, {cast(xs[0], ScalarType::py_float())}, ScalarType::py_bool(), false, c.loc));
  }
  unsupported("math." + fn + "() is not supported in kernels", c.loc);
}

Value Lowerer::call_numpy(const std::string& fn, const ast::Call& c, const std::vector<Value>& args) {
  static const std::map<std::string, ir::Intrinsic> kFloatUnary = {
      {"sqrt", ir::Intrinsic::Sqrt},     {"exp", ir::Intrinsic::Exp},       {"log", ir::Intrinsic::Log},
      {"log2", ir::Intrinsic::Log2},     {"log10", ir::Intrinsic::Log10},   {"sin", ir::Intrinsic::Sin},
      {"cos", ir::Intrinsic::Cos},       {"tan", ir::Intrinsic::Tan},       {"tanh", ir::Intrinsic::Tanh},
      {"arcsin", ir::Intrinsic::Asin},   {"arccos", ir::Intrinsic::Acos},   {"arctan", ir::Intrinsic::Atan},
      {"sinh", ir::Intrinsic::Sinh},     {"cosh", ir::Intrinsic::Cosh},     {"fabs", ir::Intrinsic::Fabs}};
  if (!c.keywords.empty()) type_error("numpy." + fn + "() takes no keyword arguments here", c.keywords[0].loc);
  std::vector<Expr> xs;
  for (size_t i = 0; i < args.size(); ++i)
    xs.push_back(as_scalar(args[i], ("numpy." + fn + "()").c_str(), c.args[i]->loc));
  auto want = [&](size_t n) {
    if (xs.size() != n) type_error("numpy." + fn + "() takes " + std::to_string(n) + " argument(s)", c.loc);
  };
  // NumPy functions of scalars return NumPy scalars: the result is strong.
  auto strong = [](ScalarType t) { return t.strong(); };
  auto it = kFloatUnary.find(fn);
  if (it != kFloatUnary.end()) {
    want(1);
    return Value::of(unary_float(it->second, xs[0], false, c.loc));
  }
  if (fn == "floor" || fn == "ceil" || fn == "trunc" || fn == "round" || fn == "around" || fn == "rint") {
    want(1);
    ScalarType t = strong(xs[0]->type.is_bool() ? ScalarType::b1() : xs[0]->type);
    if (!t.is_float() && fn == "rint") t = ScalarType::f64();  // np.rint of integers is float64
    if (!t.is_float()) return Value::of(cast(xs[0], t));
    ir::Intrinsic k = fn == "floor" ? ir::Intrinsic::Floor
                      : fn == "ceil" ? ir::Intrinsic::Ceil
                      : fn == "trunc" ? ir::Intrinsic::Trunc
                                      : ir::Intrinsic::Round;
    return Value::of(ir::Call::make(k, {cast(xs[0], t)}, t, false, c.loc));
  }
  if (fn == "abs" || fn == "absolute") {
    want(1);
    ScalarType t = strong(xs[0]->type);
    if (t.is_bool()) return Value::of(cast(xs[0], t));
    return Value::of(ir::Call::make(t.is_float() ? ir::Intrinsic::Fabs : ir::Intrinsic::Abs, {cast(xs[0], t)}, t, false, c.loc));
  }
  if (fn == "negative" || fn == "positive") {
    want(1);
    ScalarType t = strong(xs[0]->type);
    // NumPy has no loop of either for bools (TypeError).
    if (t.is_bool()) type_error("numpy." + fn + "() of a bool is not supported; use ~ or np.logical_not", c.loc);
    // A NumPy scalar (strong), also of a Python number.
    Expr x = with_weakness(cast(xs[0], t), false);
    if (fn == "positive") return Value::of(x);
    return Value::of(ir::Unary::make(ir::UnaryOp::Neg, x, c.loc));
  }
  if (fn == "isnan" || fn == "isinf" || fn == "isfinite") {
    want(1);
    if (!xs[0]->type.is_float()) return Value::of(ir::Cast::make(ScalarType::b1(), ir::BoolImm::make(fn == "isfinite", c.loc), false, c.loc));
    ir::Intrinsic k = fn == "isnan" ? ir::Intrinsic::IsNan : fn == "isinf" ? ir::Intrinsic::IsInf : ir::Intrinsic::IsFinite;
    return Value::of(ir::Call::make(k, {xs[0]}, ScalarType::b1(), false, c.loc));
  }
  if (fn == "minimum" || fn == "maximum" || fn == "fmin" || fn == "fmax") {
    want(2);
    if (fn == "fmin" || fn == "fmax") unsupported("numpy." + fn + "() is not supported; use minimum/maximum", c.loc);
    ScalarType t = strong(promote(xs[0]->type, xs[1]->type));
    return Value::of(ir::Binary::make(fn == "minimum" ? ir::BinaryOp::Min : ir::BinaryOp::Max, cast(xs[0], t),
                                      cast(xs[1], t), t, false, c.loc));
  }
  if (fn == "power") {
    want(2);
    // NumPy takes Python ints as int64, whose negative powers raise (where
    // the operator ** of Python ints gives a float).
    if (xs[0]->type.weak && xs[1]->type.weak && !xs[0]->type.is_float() && !xs[1]->type.is_float())
      return Value::of(ir::Binary::make(ir::BinaryOp::Pow, cast(xs[0], ScalarType::i64()),
                                        cast(xs[1], ScalarType::i64()), ScalarType::i64(), false, c.loc));
    Expr p = binary(ast::BinOpKind::Pow, xs[0], xs[1], c.loc);
    auto b = p->as<ir::Binary>();
    return Value::of(ir::Binary::make(b->op, cast(b->a, strong(b->type)), cast(b->b, strong(b->type)), strong(b->type), false, c.loc));
  }
  if (fn == "arctan2") {
    want(2);
    ScalarType t = strong(promote(xs[0]->type, xs[1]->type));
    if (!t.is_float()) t = ScalarType::f64();
    return Value::of(ir::Call::make(ir::Intrinsic::Atan2, {cast(xs[0], t), cast(xs[1], t)}, t, false, c.loc));
  }
  if (fn == "where") {
    want(3);
    ScalarType t = strong(promote(xs[1]->type, xs[2]->type));
    return Value::of(ir::Select::make(truthy(xs[0], c.loc), cast(xs[1], t), cast(xs[2], t), c.loc));
  }
  unsupported("numpy." + fn + "() is not supported in kernels", c.loc);
}

Value Lowerer::lower_call(const ast::Call& c, ir::ArrayVar into) {
  Value callee = lower(*c.func);
  if (callee.kind == Value::Kind::DType) {
    // np.float32(x) and friends: a conversion to a NumPy scalar.
    if (c.args.size() != 1 || !c.keywords.empty())
      type_error(std::string("numpy.") + numpy_dtype_name(callee.dtype) + "() takes one argument", c.loc);
    Value xv = lower(*c.args[0]);
    ScalarType t{callee.dtype, false};
    if (is_array_like(xv))
      return elementwise({xv}, [this, t, &c](const std::vector<Expr>& e) {
        return t.is_bool() ? cast(truthy(e[0], c.loc), t) : cast(e[0], t);
      }, c.loc);
    Expr x = as_scalar(xv, "a conversion", c.args[0]->loc);
    if (t.is_bool()) return Value::of(with_weakness(cast(truthy(x, c.loc), t), false));
    // np.uint8(-1) raises as NumPy 2 does; a NumPy value converts with
    // wrap-around. NumPy floats convert with NumPy's results (no error: NaN
    // and values out of range give the type's least value); a Python float
    // to int32 or int64 goes through int(), whose NaN, infinities and
    // out-of-range values raise.
    x = fit_python_int(x, t);
    const bool via_int = x->type.weak && (t.kind == ScalarKind::Int32 || t.kind == ScalarKind::Int64);
    return Value::of(with_weakness(cast(x, t, via_int), false));
  }
  if (callee.kind != Value::Kind::Function)
    type_error(std::string(value_kind_name(callee.kind)) + " is not callable", c.func->loc);
  const std::string& name = callee.name;
  size_t dot = name.find('.');
  std::string mod = name.substr(0, dot);
  std::string fn = dot == std::string::npos ? "" : name.substr(dot + 1);
  if (mod == "numpy") {
    static const std::set<std::string> kAlloc = {"empty", "zeros", "ones", "full",
                                                 "empty_like", "zeros_like", "ones_like", "full_like"};
    if (kAlloc.count(fn)) return allocate(fn, c, into);
  }
  if (name == "plait.prange") unsupported("plait.prange() can only be used as the iterable of a for loop", c.loc);
  if (name == "plait.vidx") unsupported("plait.vidx() can only be used as an array subscript", c.loc);
  if (mod == "method") {
    for (const auto& a : c.args)
      if (a->kind == ast::ExprKind::Slice) unsupported("slices are only allowed inside [ ]", a->loc);
    return call_array_method(fn, callee.elems[0], c);
  }
  std::vector<Value> args;
  bool any_array = false;
  for (const auto& a : c.args) {
    if (a->kind == ast::ExprKind::Slice) unsupported("slices are only allowed inside [ ]", a->loc);
    args.push_back(lower(*a));
    any_array = any_array || is_array_like(args.back());
  }
  if (mod == "numpy") {
    Value out;
    if (call_numpy_array(fn, c, args, &out)) return out;
  }
  if (mod == "builtins" && any_array) {
    if (fn == "len") return call_builtin(fn, c, args);
    if (fn == "abs") {
      Value out;
      call_numpy_array("abs", c, args, &out);  // abs() of an array is np.abs
      return out;
    }
    unsupported(fn + "() of an array is not supported; use the numpy function", c.loc);
  }
  if (mod == "builtins") return call_builtin(fn, c, args);
  if (mod == "math") return call_math(fn, c, args);
  if (mod == "numpy") return call_numpy(fn, c, args);
  unsupported(name + "() is not supported in kernels", c.loc);
}

// ================================================================ statements

void Lowerer::check_pragmas_allowed(const ast::Stmt& s) {
  for (const auto& p : s.pragmas) {
    if (p.words.size() == 1 && p.words[0] == "atomic" && p.clauses.empty()) continue;
    for (const auto& w : p.words) {
      if (w == "atomic") fail(ErrorKind::Pragma, "'#pragma atomic' takes no other words or clauses", p.loc);
    }
    if (!p.words.empty() && (p.words[0] == "parallel" || p.words[0] == "simd" || p.words[0] == "sequential"))
      fail(ErrorKind::Pragma, "'#pragma " + p.text + "' must be directly above a for loop", p.loc);
    if (p.words.empty() && !p.clauses.empty() && p.clauses[0].name == "simd")
      fail(ErrorKind::Pragma, "'#pragma " + p.text + "' must be directly above a for loop", p.loc);
    if (p.text.find("=>") != std::string::npos)
      unsupported("sliced-index pragmas ('" + p.text + "') need array expressions, which are not supported yet", p.loc);
    fail(ErrorKind::Pragma, "unknown pragma '" + p.text + "'", p.loc);
  }
}

ir::LoopSchedule Lowerer::parse_loop_pragmas(const ast::Stmt& s, bool is_prange) {
  ir::LoopSchedule sched;
  bool parallel = is_prange, simd = false, sequential = false;
  for (const auto& p : s.pragmas) {
    if (p.text.find("=>") != std::string::npos)
      unsupported("sliced-index pragmas ('" + p.text + "') need array expressions, which are not supported yet", p.loc);
    if (sched.pragma_loc.line == 0) sched.pragma_loc = p.loc;
    for (size_t i = 0; i < p.words.size(); ++i) {
      const std::string& w = p.words[i];
      if (w == "parallel") parallel = true;
      else if (w == "simd") simd = true;
      else if (w == "sequential") sequential = true;
      else if (w == "for") {
        if (i == 0) fail(ErrorKind::Pragma, "'for' must follow 'parallel' or 'sequential' in a pragma", p.loc);
      } else if (w == "atomic") {
        fail(ErrorKind::Pragma, "'#pragma atomic' must be directly above an update statement such as x[k] += v, not a loop", p.loc);
      } else {
        fail(ErrorKind::Pragma, "unknown pragma word '" + w + "' (known: parallel, for, simd, sequential, atomic)", p.loc);
      }
    }
    for (const auto& cl : p.clauses) {
      auto positive_int = [&](const std::string& text) -> int {
        try {
          size_t used = 0;
          int v = std::stoi(text, &used);
          if (used == text.size() && v > 0) return v;
        } catch (const std::exception&) {
        }
        if (globals_.count(text) && globals_.at(text).kind == GlobalValue::Kind::Int && globals_.at(text).int_value > 0)
          return static_cast<int>(globals_.at(text).int_value);
        fail(ErrorKind::Pragma, "'" + cl.name + "(...)' needs a positive integer constant, got '" + text + "'", cl.loc);
      };
      if (cl.name == "simd") {
        simd = true;
        if (cl.args.size() != 1) fail(ErrorKind::Pragma, "simd(N) takes one width", cl.loc);
        sched.simd_width = positive_int(cl.args[0]);
      } else if (cl.name == "num_threads") {
        if (cl.args.size() != 1) fail(ErrorKind::Pragma, "num_threads(N) takes one count", cl.loc);
        sched.num_threads = positive_int(cl.args[0]);
      } else if (cl.name == "reduction") {
        if (cl.args.empty() || cl.args[0].find(':') == std::string::npos)
          fail(ErrorKind::Pragma, "reduction clauses look like reduction(+:s) or reduction(max:a, b)", cl.loc);
        std::string first = cl.args[0];
        size_t colon = first.find(':');
        std::string op = first.substr(0, colon);
        while (!op.empty() && op.back() == ' ') op.pop_back();
        ir::ReduceOp rop;
        if (op == "+") rop = ir::ReduceOp::Add;
        else if (op == "*") rop = ir::ReduceOp::Mul;
        else if (op == "max") rop = ir::ReduceOp::Max;
        else if (op == "min") rop = ir::ReduceOp::Min;
        else fail(ErrorKind::Pragma, "unknown reduction operator '" + op + "' (known: + * max min)", cl.loc);
        std::vector<std::string> names = {first.substr(colon + 1)};
        for (size_t i = 1; i < cl.args.size(); ++i) names.push_back(cl.args[i]);
        for (std::string n : names) {
          n.erase(0, n.find_first_not_of(' '));
          n.erase(n.find_last_not_of(' ') + 1);
          if (inferring_) continue;
          auto it = locals_.find(n);
          if (it == locals_.end() || !it->second.var)
            fail(ErrorKind::Pragma, "reduction variable '" + n + "' is not a scalar local of this function", cl.loc);
          sched.reductions.push_back({it->second.var, rop});
        }
      } else if (cl.name == "private") {
        for (std::string n : cl.args) {
          if (inferring_) continue;
          auto it = locals_.find(n);
          if (it == locals_.end() || !it->second.var)
            fail(ErrorKind::Pragma, "private variable '" + n + "' is not a scalar local of this function", cl.loc);
          sched.privates.push_back(it->second.var);
        }
      } else {
        fail(ErrorKind::Pragma, "unknown pragma clause '" + cl.name + "' (known: reduction, private, num_threads, simd)", cl.loc);
      }
    }
  }
  if (sequential && (parallel || simd))
    fail(ErrorKind::Pragma, "'sequential' contradicts 'parallel'/'simd' on the same loop", sched.pragma_loc);
  if (sequential && is_prange)
    fail(ErrorKind::Pragma, "'#pragma sequential' on a plait.prange loop; use range() for a sequential loop", sched.pragma_loc);
  sched.kind = parallel && simd ? ir::LoopKind::ParallelVectorized
               : parallel       ? ir::LoopKind::Parallel
               : simd           ? ir::LoopKind::Vectorized
                                : ir::LoopKind::Serial;
  if (!parallel && !simd && (!sched.reductions.empty() || sched.num_threads))
    fail(ErrorKind::Pragma, "reduction and num_threads clauses need a parallel or simd loop", sched.pragma_loc);
  return sched;
}

void Lowerer::lower_block(const ast::StmtList& body, std::vector<Stmt>& out) {
  for (const auto& s : body) {
    if (inferring_) {
      try {
        lower_stmt(*s, out);
      } catch (const TypeNotKnownYet&) {
        // Retried in the next round, once more locals have types.
      }
    } else {
      lower_stmt(*s, out);
    }
  }
}

void Lowerer::lower_stmt(const ast::Stmt& s, std::vector<Stmt>& out) {
  pending_.clear();
  current_stmt_ = &s;
  std::vector<Stmt> here;
  switch (s.kind) {
    case ast::StmtKind::Assign:
    case ast::StmtKind::AugAssign: {
      bool atomic = false;
      for (const auto& p : s.pragmas)
        for (const auto& w : p.words) atomic = atomic || w == "atomic";
      if (atomic) {
        lower_atomic(s, here);
        break;
      }
      // Other pragmas on an assignment schedule an array statement's loops
      // (`#pragma :M=>parallel`, `#pragma sequential`).
      for (const auto& p : s.pragmas)
        if (p.text.find("=>") == std::string::npos && p.text != "sequential") check_pragmas_allowed(s);
      schedule_pragma_used_ = false;
      parse_statement_pragmas(s);
      if (s.kind == ast::StmtKind::Assign) lower_assign(*s.as<ast::Assign>(), here);
      else lower_aug_assign(*s.as<ast::AugAssign>(), here);
      if (!inferring_) {
        if (!s.pragmas.empty() && !schedule_pragma_used_)
          fail(ErrorKind::Pragma, "this pragma schedules the loops of an array statement, but the statement below is "
                                  "not one (it computes a single element)",
               s.pragmas[0].loc);
        check_sliced_pragmas_used();
      }
      sliced_pragmas_.clear();
      statement_sequential_ = false;
      break;
    }
    case ast::StmtKind::ExprStmt: {
      check_pragmas_allowed(s);
      const auto& e = *s.as<ast::ExprStmt>()->value;
      if (e.as<ast::Constant>()) break;  // a stray string or number: no effect
      unsupported("expression statements have no effect in a kernel (function calls with side effects are not "
                  "supported)",
                  e.loc);
    }
    case ast::StmtKind::If: {
      check_pragmas_allowed(s);
      const auto& i = *s.as<ast::If>();
      Expr cond;
      try {
        cond = truthy(scalar(*i.test, "an if condition"), i.test->loc);
      } catch (const TypeNotKnownYet&) {
        if (!inferring_) throw;
      }
      std::vector<Stmt> then_body, else_body;
      auto pre = std::move(pending_);
      lower_block(i.body, then_body);
      lower_block(i.orelse, else_body);
      pending_ = std::move(pre);
      if (!inferring_)
        here.push_back(ir::If::make(cond, ir::Block::make(then_body, s.loc),
                                    i.orelse.empty() ? nullptr : ir::Block::make(else_body, s.loc), s.loc));
      break;
    }
    case ast::StmtKind::For: lower_for(*s.as<ast::For>(), here); break;
    case ast::StmtKind::While: {
      const auto& w = *s.as<ast::While>();
      if (!s.pragmas.empty())
        fail(ErrorKind::Pragma, "loop pragmas need a 'for ... in range(...)' loop whose trip count is known when it "
                                "starts, not a while loop",
             s.pragmas[0].loc);
      if (!w.orelse.empty()) unsupported("'while ... else' is not supported", s.loc);
      Expr cond;
      try {
        cond = truthy(scalar(*w.test, "a while condition"), w.test->loc);
      } catch (const TypeNotKnownYet&) {
        if (!inferring_) throw;
      }
      if (pending_beyond_checks())
        unsupported("allocating an array in a while condition is not supported", w.test->loc);
      // A local the condition may read unassigned: a read that runs at every
      // test runs at the first, and a local it finds assigned stays so, so
      // its check runs once before the loop (from pending_). A read behind
      // `and`/`or`/`if else` may first run at a later test: its check runs
      // before every test, ending the loop when it fails, and raises after it.
      std::vector<Stmt> late_checks, kept;
      for (Stmt& p : pending_) {
        const auto* a = p->as<ir::Assert>();
        (a && !a->cond->as<ir::VarRef>() ? late_checks : kept).push_back(std::move(p));
      }
      pending_.clear();
      std::vector<Stmt> body;
      ++loop_depth_;
      lower_block(w.body, body);
      --loop_depth_;
      pending_ = std::move(kept);
      if (inferring_) break;
      if (late_checks.empty()) {
        here.push_back(ir::While::make(cond, ir::Block::make(body, s.loc), s.loc));
        break;
      }
      std::vector<Stmt> loop, after;
      for (const Stmt& check : late_checks) {
        const auto* a = check->as<ir::Assert>();
        ir::Var failed = temp_var(ScalarType::py_bool(), a->loc);
        here.push_back(ir::Assign::make(failed, ir::BoolImm::make(false, a->loc), a->loc));
        loop.push_back(ir::If::make(
            ir::Unary::make(ir::UnaryOp::Not, a->cond, a->loc),
            ir::Block::make(
                {ir::Assign::make(failed, ir::BoolImm::make(true, a->loc), a->loc), ir::Break::make(a->loc)}, a->loc),
            nullptr, a->loc));
        after.push_back(ir::Assert::make(ir::Unary::make(ir::UnaryOp::Not, ir::VarRef::make(failed, a->loc), a->loc),
                                         a->error_kind, a->message, a->loc));
      }
      loop.push_back(ir::If::make(ir::Unary::make(ir::UnaryOp::Not, cond, w.test->loc),
                                  ir::Block::make({ir::Break::make(w.test->loc)}, w.test->loc), nullptr, w.test->loc));
      loop.insert(loop.end(), body.begin(), body.end());
      here.push_back(ir::While::make(ir::BoolImm::make(true, s.loc), ir::Block::make(loop, s.loc), s.loc));
      here.insert(here.end(), after.begin(), after.end());
      break;
    }
    case ast::StmtKind::Break:
    case ast::StmtKind::Continue:
      check_pragmas_allowed(s);
      if (loop_depth_ == 0)
        fail(ErrorKind::Syntax, std::string("'") + (s.kind == ast::StmtKind::Break ? "break" : "continue") + "' outside loop", s.loc);
      here.push_back(s.kind == ast::StmtKind::Break ? ir::Break::make(s.loc) : ir::Continue::make(s.loc));
      break;
    case ast::StmtKind::Pass: check_pragmas_allowed(s); break;
    case ast::StmtKind::Return:
      check_pragmas_allowed(s);
      lower_return(*s.as<ast::Return>(), here);
      break;
  }
  for (auto& p : pending_) out.push_back(std::move(p));
  pending_.clear();
  for (auto& h : here) out.push_back(std::move(h));
}

void Lowerer::record_units(const std::string& name, const std::vector<bool>& units) {
  if (!inferring_) return;
  auto it = local_units_.find(name);
  if (it == local_units_.end()) {
    local_units_[name] = units;
    changed_ = true;
    return;
  }
  for (size_t d = 0; d < units.size() && d < it->second.size(); ++d) {
    if (it->second[d] && !units[d]) {
      it->second[d] = false;
      changed_ = true;
    }
  }
}

void Lowerer::assign_scalar(const std::string& name, Expr value, std::vector<Stmt>& out, SourceLoc loc) {
  if (inferring_) {
    record_scalar(name, value->type, loc);
    return;
  }
  const Local& l = locals_.at(name);
  if (!l.var) PLAIT_INTERNAL_ERROR("scalar assignment to array local " + name);
  out.push_back(ir::Assign::make(l.var, cast(value, l.var->type, true), loc));
  mark_bound(name, out, loc);
}

void Lowerer::assign_array(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc) {
  if (inferring_) {
    record_array(name, value.array->type, loc);
    // While inferring, a name's array carries the name it was read through.
    const std::string& from = value.array->name;
    if ((param_names_.count(from) || argument_aliases_.count(from)) && argument_aliases_.insert(name).second)
      changed_ = true;
    return;
  }
  const Local& l = locals_.at(name);
  if (!l.array) PLAIT_INTERNAL_ERROR("array assignment to scalar local " + name);
  if (value.array != l.array) out.push_back(ir::ArrayBind::make(l.array, value.array, loc));
  mark_bound(name, out, loc);
}

bool Lowerer::may_alias_argument(const ir::ArrayInfo* a) const {
  if (a->is_param) return true;
  auto it = locals_.find(a->name);
  return it != locals_.end() && it->second.array.get() == a && argument_aliases_.count(a->name) > 0;
}

void Lowerer::assign_to(const ast::Expr& target, const Value& value, std::vector<Stmt>& out, SourceLoc loc) {
  if (auto n = target.as<ast::Name>()) {
    if (value.kind == Value::Kind::Scalar) return assign_scalar(n->id, value.scalar, out, loc);
    if (value.kind == Value::Kind::Array) {
      auto known = array_units_.find(value.array);
      record_units(n->id, known != array_units_.end() ? known->second
                                                      : std::vector<bool>(value.array->type.ndim, false));
      return assign_array(n->id, value, out, loc);
    }
    if (value.kind == Value::Kind::Tensor) {
      // In NumPy `v = a[1:]` is a view: writes through v change a and the
      // other way round. Plait binds names to copies, which is the same
      // only while neither is written.
      if (value.tensor->array && (written_arrays_.count(n->id) || written_arrays_.count(value.tensor->array->name)))
        unsupported("'" + n->id + "' would be a view of '" + value.tensor->array->name +
                        "' (a slice bound to a name), and one of them is written later; views bound to names are not "
                        "supported yet: index the array directly, or take a copy with .copy()",
                    loc);
      record_units(n->id, value.tensor->unit);
      // A new array holding the expression's values (Python binds the name
      // to the result of the expression, a fresh array).
      ir::ArrayVar tmp = materialize(value.tensor, out, loc, current_stmt_);
      return assign_array(n->id, Value::of_array(tmp, loc), out, loc);
    }
    if (value.kind == Value::Kind::Tuple)
      unsupported("tuples can only be unpacked into names (a, b = ...), not kept in a variable", target.loc);
    type_error("cannot assign " + std::string(value_kind_name(value.kind)) + " to a variable in a kernel", loc);
  }
  if (auto s = target.as<ast::Subscript>()) {
    Value base = lower(*s->value);
    if (base.kind == Value::Kind::Array) base.node = s->value.get();
    if (base.kind == Value::Kind::Tensor && base.tensor->array) {
      if (!inferring_)
        assign_tensor(array_view(base.tensor, s->index.get(), s, s->loc), to_tensor(value, loc), out, loc, current_stmt_);
      return;
    }
    if (base.kind != Value::Kind::Array) type_error("only arrays support item assignment", s->value->loc);
    if (indexes_a_view(base.array, *s->index) || is_array_like(value)) {
      TensorPtr view = array_view(to_tensor(base, s->loc), s->index.get(), s, s->loc);
      if (!inferring_) assign_tensor(view, to_tensor(value, loc), out, loc, current_stmt_);
      return;
    }
    std::vector<Expr> idx = element_indices(base.array, *s->index, s->loc);
    Expr v = as_scalar(value, "an array element assignment", loc);
    if (!inferring_)
      out.push_back(ir::Store::make(base.array, idx, cast(v, ScalarType{base.array->type.dtype, false}, true), false, loc));
    return;
  }
  const std::vector<ast::ExprPtr>* elts = nullptr;
  if (auto t = target.as<ast::Tuple>()) elts = &t->elts;
  if (auto t = target.as<ast::List>()) elts = &t->elts;
  if (elts) {
    if (value.kind != Value::Kind::Tuple)
      type_error("cannot unpack " + std::string(value_kind_name(value.kind)), loc);
    if (value.elems.size() != elts->size())
      fail(ErrorKind::Value, (value.elems.size() > elts->size() ? "too many values to unpack (expected "
                                                                 : "not enough values to unpack (expected ") +
                                 std::to_string(elts->size()) + ", got " + std::to_string(value.elems.size()) + ")",
           loc);
    // Python evaluates the whole right-hand side before assigning, so
    // `a, b = b, a` swaps: scalars go through temporaries first.
    std::vector<Value> held;
    for (const auto& v : value.elems) {
      if (v.kind == Value::Kind::Scalar && !inferring_ && !v.scalar->as<ir::ArrayDim>() &&
          !v.scalar->as<ir::IntImm>() && !v.scalar->as<ir::FloatImm>()) {
        ir::Var t = temp_var(v.scalar->type, loc);
        out.push_back(ir::Assign::make(t, v.scalar, loc));
        held.push_back(Value::of(ir::VarRef::make(t, loc)));
      } else {
        held.push_back(v);
      }
    }
    for (size_t i = 0; i < elts->size(); ++i) assign_to(*(*elts)[i], held[i], out, loc);
    return;
  }
  unsupported("cannot assign to this kind of expression", target.loc);
}

void Lowerer::lower_assign(const ast::Assign& a, std::vector<Stmt>& out) {
  if (a.targets.size() == 1 && a.targets[0]->as<ast::Name>()) {
    if (auto call = a.value->as<ast::Call>()) {
      Value f = lower(*call->func);
      if (f.kind == Value::Kind::Function && f.name == "plait.vidx") {
        vidx_aliases_[a.targets[0]->as<ast::Name>()->id] = call;
        return;
      }
    }
  }
  // `y = np.zeros(n)` allocates straight into y's storage.
  ir::ArrayVar into;
  if (a.targets.size() == 1 && !inferring_) {
    if (auto n = a.targets[0]->as<ast::Name>()) {
      auto it = locals_.find(n->id);
      if (it != locals_.end() && it->second.array && a.value->as<ast::Call>()) into = it->second.array;
    }
  }
  Value v;
  if (auto c = a.value->as<ast::Call>()) v = lower_call(*c, into);
  else v = lower(*a.value);
  for (const auto& t : a.targets) assign_to(*t, v, out, a.loc);
}

void Lowerer::lower_aug_assign(const ast::AugAssign& a, std::vector<Stmt>& out) {
  // Python reads the target's name before the value.
  const ast::Expr* base = a.target.get();
  while (auto s = base->as<ast::Subscript>()) base = s->value.get();
  if (auto n = base->as<ast::Name>(); n && !inferring_) check_bound(*n);
  Value rhs = lower(*a.value);
  // In-place operators on arrays (`A += B`, `A[1:-1] *= 2`) update the
  // array's own elements, as NumPy does.
  Value current = lower(*a.target);
  if (is_array_like(current)) {
    // NumPy's in-place product keeps the target's shape, so it takes a
    // matrix (at least two dimensions) on the right; a vector there always
    // raises.
    if (a.op == ast::BinOpKind::MatMult && !(is_array_like(rhs) && to_tensor(rhs, a.loc)->rank() >= 2))
      fail(ErrorKind::Value,
           "inplace matrix multiplication requires the first operand to have at least one and the second at least "
           "two dimensions",
           a.loc);
    Value updated = tensor_binary(a.op, current, rhs, a.loc);
    ScalarType have = to_tensor(current, a.loc)->type;
    ScalarType got = updated.tensor->type;
    auto category = [](ScalarType t) { return t.is_bool() ? 0 : t.is_int() ? 1 : 2; };
    if (category(got) > category(have))
      type_error(std::string("cannot cast the result of '") + ast::binop_symbol(a.op) + "=' from " + describe(got) +
                     " to " + describe(have) + " in place (NumPy's same_kind rule)",
                 a.loc);
    TensorPtr target = to_tensor(current, a.loc);
    if (!target->array) unsupported("in-place update of an array expression that is not a view", a.target->loc);
    if (!inferring_) assign_tensor(target, updated.tensor, out, a.loc, current_stmt_);
    return;
  }
  if (is_array_like(rhs) && a.target->as<ast::Name>())
    type_error("cannot update a number in place with an array", a.loc);
  if (a.target->as<ast::Subscript>() && is_array_like(rhs)) {
    assign_to(*a.target, tensor_binary(a.op, current, rhs, a.loc), out, a.loc);
    return;
  }
  Expr r = as_scalar(rhs, "an augmented assignment", a.value->loc);
  if (auto n = a.target->as<ast::Name>()) {
    Expr cur = scalar(*a.target, "an augmented assignment");
    assign_scalar(n->id, binary(a.op, cur, r, a.loc), out, a.loc);
    return;
  }
  if (auto s = a.target->as<ast::Subscript>()) {
    Value base = lower(*s->value);
    if (base.kind != Value::Kind::Array) type_error("only arrays support item assignment", s->value->loc);
    std::vector<Expr> idx = element_indices(base.array, *s->index, s->loc);
    Expr cur = ir::Load::make(base.array, idx, false, s->loc);
    Expr v = binary(a.op, cur, r, a.loc);
    if (!inferring_)
      out.push_back(ir::Store::make(base.array, idx, cast(v, ScalarType{base.array->type.dtype, false}, true), false, a.loc));
    return;
  }
  unsupported("augmented assignment to this kind of target is not supported", a.target->loc);
}

void Lowerer::lower_atomic(const ast::Stmt& s, std::vector<Stmt>& out) {
  for (const auto& p : s.pragmas)
    if (!(p.words.size() == 1 && p.words[0] == "atomic" && p.clauses.empty())) check_pragmas_allowed(s);
  const SourceLoc ploc = s.pragmas[0].loc;
  const ast::Subscript* target = nullptr;
  ir::AtomicOp op = ir::AtomicOp::Add;
  const ast::Expr* operand = nullptr;
  if (auto a = s.as<ast::AugAssign>()) {
    target = a->target->as<ast::Subscript>();
    switch (a->op) {
      case ast::BinOpKind::Add: op = ir::AtomicOp::Add; break;
      case ast::BinOpKind::Sub: op = ir::AtomicOp::Sub; break;
      case ast::BinOpKind::Mult: op = ir::AtomicOp::Mul; break;
      case ast::BinOpKind::Div: op = ir::AtomicOp::Div; break;
      case ast::BinOpKind::BitAnd: op = ir::AtomicOp::BitAnd; break;
      case ast::BinOpKind::BitOr: op = ir::AtomicOp::BitOr; break;
      case ast::BinOpKind::BitXor: op = ir::AtomicOp::BitXor; break;
      default: fail(ErrorKind::Pragma, "'#pragma atomic' supports += -= *= /= &= |= ^= and x[k] = max/min(x[k], v)", ploc);
    }
    operand = a->value.get();
  } else if (auto a = s.as<ast::Assign>()) {
    if (a->targets.size() == 1) target = a->targets[0]->as<ast::Subscript>();
    auto call = a->value->as<ast::Call>();
    if (target && call && call->args.size() == 2 && call->keywords.empty()) {
      Value f = lower(*call->func);
      bool is_max = f.kind == Value::Kind::Function && (f.name == "builtins.max" || f.name == "numpy.maximum");
      bool is_min = f.kind == Value::Kind::Function && (f.name == "builtins.min" || f.name == "numpy.minimum");
      if (is_max || is_min) {
        op = is_max ? ir::AtomicOp::Max : ir::AtomicOp::Min;
        if (same_tree(call->args[0].get(), target)) operand = call->args[1].get();
        else if (same_tree(call->args[1].get(), target)) operand = call->args[0].get();
      }
    }
    if (!operand) target = nullptr;
  }
  if (!target || !operand)
    fail(ErrorKind::Pragma, "'#pragma atomic' must be directly above an update of one array element: x[k] op= v or "
                            "x[k] = max(x[k], v) / min(x[k], v)",
         ploc);
  Value base = lower(*target->value);
  if (base.kind != Value::Kind::Array) type_error("only arrays support item assignment", target->value->loc);
  std::vector<Expr> idx = element_indices(base.array, *target->index, target->loc);
  Expr v = scalar(*operand, "an atomic update");
  ScalarType elem{base.array->type.dtype, false};
  // The atomic applies the operator in the element type; when NumPy would
  // compute in a wider type first (an int array updated with a float), the
  // results would differ, so that is refused.
  ScalarType computed = promote(elem, v->type);
  if (op == ir::AtomicOp::Div && !elem.is_float()) computed = ScalarType::f64();
  if (computed.kind != elem.kind)
    type_error("atomic update of " + describe(elem) + " element with " + describe(v->type) +
                   ": NumPy would compute in " + describe(computed) + " first; convert the value to the array's dtype",
               operand->loc);
  if (elem.is_bool()) type_error("atomic updates of bool arrays are not supported", target->loc);
  if (!inferring_) out.push_back(ir::AtomicUpdate::make(base.array, idx, op, cast(v, elem), false, s.loc));
}

void Lowerer::lower_for(const ast::For& f, std::vector<Stmt>& out) {
  if (!f.orelse.empty()) unsupported("'for ... else' is not supported", f.loc);
  auto target = f.target->as<ast::Name>();
  if (!target) unsupported("the target of a for loop must be a single name", f.target->loc);
  auto call = f.iter->as<ast::Call>();
  bool is_prange = false;
  if (call) {
    Value callee = lower(*call->func);
    if (callee.kind == Value::Kind::Function && callee.name == "builtins.range") is_prange = false;
    else if (callee.kind == Value::Kind::Function && callee.name == "plait.prange") is_prange = true;
    else call = nullptr;
  }
  if (!call) unsupported("for loops must iterate over range(...) or plait.prange(...)", f.iter->loc);
  if (!call->keywords.empty()) type_error("range() takes no keyword arguments", call->keywords[0].loc);
  if (call->args.empty() || call->args.size() > 3)
    type_error("range expected 1 to 3 arguments, got " + std::to_string(call->args.size()), call->loc);
  ir::LoopSchedule sched = parse_loop_pragmas(f, is_prange);
  std::vector<Expr> bounds;
  try {
    for (const auto& a : call->args) {
      Expr e = scalar(*a, "range()");
      if (!e->type.is_int() && !e->type.is_bool())
        type_error("range() arguments must be integers, got " + describe(e->type), a->loc);
      bounds.push_back(cast(e, ScalarType::py_int()));
    }
  } catch (const TypeNotKnownYet&) {
    if (!inferring_) throw;
  }
  if (pending_beyond_checks()) unsupported("allocating an array in range() is not supported", call->loc);
  // The loop variable is a Python int whatever the bounds' types are.
  if (inferring_) record_scalar(target->id, ScalarType::py_int(), f.target->loc);
  std::vector<Stmt> body;
  ++loop_depth_;
  const bool parallel = ir::is_parallel(sched.kind) || ir::is_vectorized(sched.kind);
  parallel_depth_ += parallel;
  auto checks = std::move(pending_);  // of the bounds, before the loop
  lower_block(f.body, body);
  pending_ = std::move(checks);
  parallel_depth_ -= parallel;
  --loop_depth_;
  if (inferring_) return;
  const Local& l = locals_.at(target->id);
  if (!l.var || !l.var->type.is_int() || l.var->type.kind != ScalarKind::Int64)
    type_error("loop variable '" + target->id + "' is also assigned " +
                   (l.var ? describe(l.var->type) : std::string("an array")) + " elsewhere; a variable keeps one type",
               f.target->loc);
  Expr begin = bounds.size() == 1 ? ir::IntImm::make(0, ScalarType::py_int(), call->loc) : bounds[0];
  Expr end = bounds.size() == 1 ? bounds[0] : bounds[1];
  Expr step = bounds.size() == 3 ? bounds[2] : ir::IntImm::make(1, ScalarType::py_int(), call->loc);
  if (auto s = step->as<ir::IntImm>(); s && s->value == 0) fail(ErrorKind::Value, "range() arg 3 must not be zero", call->args[2]->loc);
  if (bound_flags_.count(target->id)) {
    // Python assigns the loop variable only when the range is not empty.
    auto runs = [&](bool up) {
      return ir::Compare::make(up ? ir::CompareOp::LT : ir::CompareOp::GT, begin, end, f.loc);
    };
    Expr nonempty;
    if (auto s = step->as<ir::IntImm>())
      nonempty = runs(s->value > 0);
    else
      nonempty =
          ir::Select::make(ir::Compare::make(ir::CompareOp::GT, step, ir::IntImm::make(0, step->type, f.loc), f.loc),
                           runs(true), runs(false), f.loc);
    std::vector<Stmt> mark;
    mark_bound(target->id, mark, f.loc);
    out.push_back(ir::If::make(nonempty, ir::Block::make(mark, f.loc), nullptr, f.loc));
  }
  out.push_back(ir::For::make(l.var, begin, end, step, ir::Block::make(body, f.loc), sched, f.loc));
}

void Lowerer::lower_return(const ast::Return& r, std::vector<Stmt>& out) {
  std::vector<ir::ReturnValue> values;
  std::vector<ValueType> types;
  bool tuple = false;
  bool list = false;  // `return [a, b]`: a tuple of values, given to Python as a list
  if (r.value) {
    Value v;
    if (auto c = r.value->as<ast::Call>()) v = lower_call(*c);
    else v = lower(*r.value);
    std::vector<Value> items;
    list = r.value->kind == ast::ExprKind::List;
    if (v.kind == Value::Kind::Tuple) {
      tuple = true;
      items = v.elems;
    } else if (v.kind != Value::Kind::None) {
      items.push_back(v);
    }
    for (auto& it : items) {
      if (it.kind == Value::Kind::Tensor) it = Value::of_array(materialize(it.tensor, out, r.loc, current_stmt_), r.loc);
      if (it.kind == Value::Kind::Scalar) {
        values.push_back({it.scalar, nullptr});
        types.push_back(ValueType::of(it.scalar->type));
      } else if (it.kind == Value::Kind::Array) {
        values.push_back({nullptr, it.array});
        types.push_back(ValueType::of(it.array->type));
      } else {
        unsupported("kernels return numbers, arrays or tuples of them, not " + std::string(value_kind_name(it.kind)),
                    r.value->loc);
      }
    }
  }
  if (inferring_) {
    if (!results_) {
      results_ = types;
      returns_tuple_ = tuple;
      returns_list_ = list;
      first_return_loc_ = r.loc;
      changed_ = true;
      return;
    }
    if (results_->size() != types.size() || returns_tuple_ != tuple)
      type_error("this return gives a different number of values than the return at line " +
                     std::to_string(first_return_loc_.line),
                 r.loc);
    if (returns_list_ != list)
      type_error(std::string("this return gives a ") + (list ? "list" : "tuple") + " where the return at line " +
                     std::to_string(first_return_loc_.line) + " gives a " + (list ? "tuple" : "list"),
                 r.loc);
    for (size_t i = 0; i < types.size(); ++i) {
      ValueType& have = (*results_)[i];
      if (have.is_array() != types[i].is_array())
        type_error("this return gives an array where the return at line " + std::to_string(first_return_loc_.line) +
                       " gives a number (or the other way round)",
                   r.loc);
      if (have.is_array()) {
        if (have.array.dtype != types[i].array.dtype || have.array.ndim != types[i].array.ndim)
          type_error("this return gives " + describe(types[i].array) + " but the return at line " +
                         std::to_string(first_return_loc_.line) + " gives " + describe(have.array),
                     r.loc);
        if (have.array.layout != types[i].array.layout) {
          have.array.layout = Layout::Any;
          changed_ = true;
        }
      } else {
        ScalarType u = unify(have.scalar, types[i].scalar);
        if (u != have.scalar) {
          have.scalar = u;
          changed_ = true;
        }
      }
    }
    return;
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].scalar) values[i].scalar = cast(values[i].scalar, (*results_)[i].scalar);
  out.push_back(ir::Return::make(values, r.loc));
}

// ================================================================ driver

// True when every path through `body` ends in a return.
bool always_returns(const ast::StmtList& body) {
  for (const auto& s : body) {
    if (s->kind == ast::StmtKind::Return) return true;
    if (auto i = s->as<ast::If>())
      if (!i->orelse.empty() && always_returns(i->body) && always_returns(i->orelse)) return true;
  }
  return false;
}

ir::Function Lowerer::run(const ast::FunctionDef& fn) {
  declare_params(fn);
  collect_assigned_names(fn.body, assigned_names_);
  assigned_names_.insert(fn.annotated_names.begin(), fn.annotated_names.end());
  collect_written_arrays(fn.body, written_arrays_);
  for (const auto& p : fn.params) assigned_names_.erase(p.name);
  bindings_ = definite_assignment(fn.body, assigned_names_);
  if (!bindings_.unbound.empty()) {
    const ast::Name& read = *bindings_.unbound.front();
    fail(ErrorKind::UnboundLocal,
         unbound_message(read.id) + " (no assignment to '" + read.id + "' comes before this read on any path)",
         read.loc);
  }

  // Phase 1: infer until no local's type changes. Types only widen, and the
  // lattice is small (5 kinds x weak/strong), so this ends in a few rounds.
  inferring_ = true;
  for (int round = 0;; ++round) {
    if (round > 32) PLAIT_INTERNAL_ERROR("type inference did not converge");
    changed_ = false;
    std::vector<Stmt> scratch;
    lower_block(fn.body, scratch);
    if (!changed_) break;
  }
  // Phase 2: create the IR variables with their final types and emit.
  inferring_ = false;
  array_units_.clear();
  for (const auto& [name, lt] : types_) {
    Local l;
    if (lt.array) {
      l.array = std::make_shared<ir::ArrayInfo>();
      l.array->name = name;
      l.array->type = *lt.array;
      l.array->loc = lt.first_loc;
      l.array->is_param = param_names_.count(name) > 0;
      if (local_units_.count(name)) array_units_[l.array] = local_units_.at(name);
    } else {
      l.var = std::make_shared<ir::VarInfo>();
      l.var->name = name;
      l.var->type = *lt.scalar;
      l.var->loc = lt.first_loc;
      l.var->is_param = param_names_.count(name) > 0;
    }
    locals_[name] = l;
  }
  ir::Function out;
  out.name = fn.name;
  out.source = file_;
  for (const auto& p : fn.params) {
    ir::Param param;
    param.scalar = locals_.at(p.name).var;
    param.array = locals_.at(p.name).array;
    out.params.push_back(param);
  }
  std::vector<Stmt> body;
  for (const std::string& name : bindings_.maybe_unbound) {
    auto flag = std::make_shared<ir::VarInfo>("_bound_" + name, ScalarType::py_bool(), fn.loc, false);
    bound_flags_[name] = flag;
    body.push_back(ir::Assign::make(flag, ir::BoolImm::make(false, fn.loc), fn.loc));
  }
  lower_block(fn.body, body);
  if (results_ && !results_->empty() && !always_returns(fn.body))
    unsupported("'" + fn.name + "' returns a value on some paths but can reach its end and return None; end it with "
                "a return statement",
                fn.loc);
  out.body = ir::Block::make(body, fn.loc);
  out.remarks = function_remarks_;
  if (results_) out.results = *results_;
  out.returns_tuple = returns_tuple_;
  out.returns_list = returns_list_;
  return out;
}

}  // namespace lowering

ir::Function lower_to_ir(const ast::FunctionDef& function, const SourceFile& file, const Signature& signature,
                         const Globals& globals, const CompileOptions& options) {
  lowering::Lowerer lowerer(file, signature, globals, options);
  return lowerer.run(function);
}

}  // namespace plait
