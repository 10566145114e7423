// The base of both emitters (c_emitter.h): C names, the names of locals and
// arrays, and expressions; its statements are in c_emitter_stmts.cpp.
#include "codegen/c_emitter.h"

#include <charconv>
#include <cmath>

#include "codegen/overlap_test.h"

namespace plait::codegen {

using namespace ir;

std::string dtype_code(ScalarKind k) {
  return plait_dtype_name(k);
}
std::string ctype(ScalarType t) {
  return c_type_name(t.kind);
}
std::string ctype(ScalarKind k) {
  return c_type_name(k);
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

std::string escape_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '\\' || c == '"') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out;
}

std::string int_literal(int64_t v, ScalarKind k) {
  if (k == ScalarKind::UInt64) return "uint64_t(" + std::to_string(static_cast<uint64_t>(v)) + "ULL)";
  if (k != ScalarKind::Int64) return ctype(k) + "(" + std::to_string(v) + ")";
  if (v == INT64_MIN) return "(-int64_t(9223372036854775807) - 1)";
  return "int64_t(" + std::to_string(v) + ")";
}

bool promoted_by_cpp(ScalarType t) {
  return t.is_int() && t.bits() < 32;
}

void ArrayCollector::visit(const Load* n) {
  note(n->array);
  IRVisitor::visit(n);
}
void ArrayCollector::visit(const ArraysOverlap* n) {
  note(n->a);
  note(n->b);
}
void ArrayCollector::visit(const Store* n) {
  note(n->array);
  IRVisitor::visit(n);
}
void ArrayCollector::visit(const AtomicUpdate* n) {
  note(n->array);
  IRVisitor::visit(n);
}
void ArrayCollector::visit(const Allocate* n) {
  note(n->array);
  bound.insert(n->array.get());
  if (!first_allocate) first_allocate = n;
  IRVisitor::visit(n);
}
void ArrayCollector::visit(const ArrayBind* n) {
  note(n->src);
  note(n->dst);
  bound.insert(n->dst.get());
}
void ArrayCollector::visit(const Declare* n) {
  if (n->array) {
    note(n->array);
    declared.insert(n->array.get());
  }
}
void ArrayCollector::visit(const Return* n) {
  for (const ReturnValue& v : n->values)
    if (v.array) note(v.array);
  IRVisitor::visit(n);
}

std::string CEmitter::unique(const std::string& wanted) {
  std::string name = wanted;
  for (int k = 2; !used_names_.insert(name).second; ++k) name = wanted + "_" + std::to_string(k);
  return name;
}

const std::string& CEmitter::var_name(const Var& v) {
  auto it = var_names_.find(v.get());
  if (it != var_names_.end()) return it->second;
  return var_names_[v.get()] = unique("v_" + sanitize(v->name));
}

ArrayLocal& CEmitter::array(const ArrayVar& a) {
  auto it = arrays_.find(a.get());
  if (it == arrays_.end()) PLAIT_INTERNAL_ERROR("array `" + a->name + "` used before it is bound");
  return it->second;
}

bool CEmitter::unit_stride(const ArrayType& t, int d) {
  return (t.layout == Layout::C && d == t.ndim - 1) || (t.layout == Layout::F && d == 0);
}

std::string CEmitter::stride(const ArrayVar& a, int d) {
  return unit_stride(a->type, d) ? "1" : array(a).base + "_s" + std::to_string(d);
}

bool CEmitter::declared(const VarInfo* v) const {
  for (const auto& s : scopes_)
    if (s.count(v)) return true;
  return false;
}

std::string CEmitter::loc_args(const SourceLoc& loc) const {
  if (!loc.valid()) return "0, 0";
  return std::to_string(loc.line) + ", " + std::to_string(character_columns(fn_.source, loc).col);
}

std::string CEmitter::float_literal(double v, ScalarKind k) const {
  std::string lit;
  if (std::isnan(v)) {
    lit = device_code() ? "plait::nan_f64()" : "__builtin_nan(\"\")";
  } else if (std::isinf(v)) {
    const std::string inf = device_code() ? "plait::inf_f64()" : "__builtin_inf()";
    lit = v > 0 ? inf : "(-" + inf + ")";
  } else {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    lit.assign(buf, end);
    if (lit.find_first_of(".e") == std::string::npos) lit += ".0";
    if (v < 0) lit = "(" + lit + ")";
  }
  return k == ScalarKind::Float32 ? "float(" + lit + ")" : lit;
}

std::string CEmitter::expr_node(const Expr& e) {
  switch (e->kind) {
    case NodeKind::IntImm:
      return int_literal(e->as<IntImm>()->value, e->type.kind);
    case NodeKind::FloatImm:
      return float_literal(e->as<FloatImm>()->value, e->type.kind);
    case NodeKind::BoolImm:
      return e->as<BoolImm>()->value ? "true" : "false";
    case NodeKind::VarRef:
      return var_name(e->as<VarRef>()->var);
    case NodeKind::Cast:
      return cast(e->as<Cast>());
    case NodeKind::Unary:
      return unary(e->as<Unary>());
    case NodeKind::Binary:
      return binary(e->as<Binary>());
    case NodeKind::Compare: {
      const Compare* c = e->as<Compare>();
      return std::string("(") + expr(c->a) + " " + compare_op_name(c->op) + " " + expr(c->b) + ")";
    }
    case NodeKind::Logical: {
      const Logical* l = e->as<Logical>();
      return std::string("(") + expr(l->a) + (l->op == LogicalOp::And ? " && " : " || ") + expr(l->b) + ")";
    }
    case NodeKind::Select: {
      const Select* s = e->as<Select>();
      return std::string("(") + expr(s->cond) + " ? " + expr(s->t) + " : " + expr(s->f) + ")";
    }
    case NodeKind::Call:
      return call(e->as<Call>());
    case NodeKind::Load:
      return load(e->as<Load>());
    case NodeKind::ArrayDim: {
      const ArrayDim* d = e->as<ArrayDim>();
      return extent(d->array, d->dim);
    }
    case NodeKind::ArraysOverlap: {
      ArrayLocalNames names{[this](const ArrayVar& a) { return data(a); },
                            [this](const ArrayVar& a, int d) { return extent(a, d); },
                            [this](const ArrayVar& a, int d) { return stride(a, d); },
                            [](const ArrayVar& a) { return ctype(a->type.dtype); }};
      return overlap_test(*e->as<ArraysOverlap>(), names);
    }
    // Every node kind is named (no default), so that a new node breaks the
    // build of both back ends until they handle it.
#define PLAIT_STMT_NODE(n) case NodeKind::n:
#include "ir/ir_nodes.def"
      PLAIT_INTERNAL_ERROR(std::string("not an expression: ") + node_kind_name(e->kind));
  }
  return "";
}

std::string CEmitter::cast(const Cast* c) {
  const ScalarType from = c->value->type;
  const std::string v = expr(c->value);
  if (c->type.kind == from.kind) return v;
  if (c->type.is_bool()) return std::string("(") + v + " != 0)";
  if (from.is_float() && c->type.is_int()) {
    if (c->checked)
      return "plait::checked_float_to_int<" + ctype(c->type) + ">(" + v + ", " + error_sink() + ", " +
             loc_args(c->loc) + ")";
    return "plait::float_to_int<" + ctype(c->type) + ">(" + v + ")";
  }
  if (c->checked && from.is_int() && c->type.is_int())
    return "plait::checked_python_int<" + ctype(c->type) + ">(" + v + ", " + error_sink() + ", " + loc_args(c->loc) +
           ")";
  return "static_cast<" + ctype(c->type) + ">(" + v + ")";
}

std::string CEmitter::unary(const Unary* u) {
  const std::string a = expr(u->a);
  switch (u->op) {
    case UnaryOp::Neg:
      if (!promoted_by_cpp(u->type)) return "(-" + a + ")";
      if (!narrow_in_uint32_) return "static_cast<" + ctype(u->type) + ">(-" + a + ")";
      return "static_cast<" + ctype(u->type) + ">(0u - static_cast<uint32_t>(" + a + "))";
    case UnaryOp::Not:
      return "(!" + a + ")";
    case UnaryOp::BitNot:
      return u->type.is_bool() ? "(!" + a + ")" : "static_cast<" + ctype(u->type) + ">(~" + a + ")";
  }
  return a;
}

std::string CEmitter::binary(const Binary* b) {
  const std::string t = ctype(b->type);
  const std::string x = expr(b->a);
  const std::string y = expr(b->b);
  const std::string checked_args = ", " + error_sink() + ", " + loc_args(b->loc) + ")";
  const bool is_bool = b->type.is_bool();
  auto helper = [&](const std::string& name) { return "plait::" + name + "<" + t + ">(" + x + ", " + y; };
  auto arith = [&](const char* op) {
    if (!promoted_by_cpp(b->type)) return "(" + x + op + y + ")";
    if (!narrow_in_uint32_) return "static_cast<" + t + ">(" + x + op + y + ")";
    return "static_cast<" + t + ">(static_cast<uint32_t>(" + x + ")" + op + "static_cast<uint32_t>(" + y + "))";
  };
  switch (b->op) {
    case BinaryOp::Add:
      return is_bool ? "(" + x + " || " + y + ")" : arith(" + ");
    case BinaryOp::Sub:
      return is_bool ? "(" + x + " != " + y + ")" : arith(" - ");
    case BinaryOp::Mul:
      return is_bool ? "(" + x + " && " + y + ")" : arith(" * ");
    case BinaryOp::Div:
      return b->zero_check ? helper("div_checked") + checked_args : "(" + x + " / " + y + ")";
    case BinaryOp::FloorDiv:
      return b->zero_check ? helper("floordiv_checked") + checked_args : helper("floordiv") + ")";
    case BinaryOp::Mod:
      return b->zero_check ? helper("mod_checked") + checked_args : helper("mod") + ")";
    case BinaryOp::Pow:
      if (b->type.is_float())
        return b->zero_check ? helper("pow_float_checked") + checked_args : helper("pow_float") + ")";
      if (is_bool) return std::string("(") + x + " || !" + y + ")";
      return helper(b->zero_check ? "pow_python_int" : "pow_int") + checked_args;
    case BinaryOp::BitAnd:
      return "static_cast<" + t + ">(" + x + " & " + y + ")";
    case BinaryOp::BitOr:
      return "static_cast<" + t + ">(" + x + " | " + y + ")";
    case BinaryOp::BitXor:
      return "static_cast<" + t + ">(" + x + " ^ " + y + ")";
    case BinaryOp::Shl:
      return helper("shl") + ")";
    case BinaryOp::Shr:
      return helper("shr") + ")";
    case BinaryOp::Min:
      return helper("minimum") + ")";
    case BinaryOp::Max:
      return helper("maximum") + ")";
    case BinaryOp::PyMin:
      return helper("py_min") + ")";
    case BinaryOp::PyMax:
      return helper("py_max") + ")";
  }
  return x;
}

std::string CEmitter::call(const Call* c) {
  const ScalarType arg_type = c->args[0]->type;
  const bool int_arg = !arg_type.is_float();
  std::vector<std::string> args;
  for (const Expr& a : c->args) args.push_back(expr(a));
  auto wrap = [&](const std::string& s) {
    return arg_type.kind == c->type.kind ? s : "static_cast<" + ctype(c->type) + ">(" + s + ")";
  };
  switch (c->fn) {
    case Intrinsic::Floor:
    case Intrinsic::Ceil:
    case Intrinsic::Trunc:
    case Intrinsic::Round:
      if (int_arg) return wrap(args[0]);
      if (c->fn == Intrinsic::Round) return wrap(math(device_code() ? "rint" : "nearbyint") + "(" + args[0] + ")");
      return wrap(math(intrinsic_name(c->fn)) + "(" + args[0] + ")");
    case Intrinsic::Abs:
      if (arg_type.is_bool()) return wrap(args[0]);
      if (int_arg) return wrap("plait::abs_int<" + ctype(arg_type) + ">(" + args[0] + ")");
      return wrap(math("fabs") + "(" + args[0] + ")");
    case Intrinsic::Fabs:
      return wrap(math("fabs") + "(" + args[0] + ")");
    case Intrinsic::IsNan:
      return int_arg ? "false" : math("isnan") + "(" + args[0] + ")";
    case Intrinsic::IsInf:
      return int_arg ? "false" : math("isinf") + "(" + args[0] + ")";
    case Intrinsic::IsFinite:
      return int_arg ? "true" : math("isfinite") + "(" + args[0] + ")";
    default:
      break;
  }
  const std::string name = math(intrinsic_name(c->fn));
  std::string joined;
  for (size_t i = 0; i < args.size(); ++i) joined += (i ? ", " : "") + args[i];
  if (!c->python_math) {
    if (vector_math(c->fn) && arg_type.is_float()) {
      const std::string suffix = arg_type.kind == ScalarKind::Float32 ? "f" : "";
      return wrap(std::string("plait_vm_") + intrinsic_name(c->fn) + suffix + "(" + joined + ")");
    }
    return wrap(name + "(" + joined + ")");
  }
  const char* on_inf = "none";
  switch (c->fn) {
    case Intrinsic::Exp:
    case Intrinsic::Sinh:
    case Intrinsic::Cosh:
      on_inf = "overflow";
      break;
    case Intrinsic::Log:
    case Intrinsic::Log2:
    case Intrinsic::Log10:
      on_inf = "domain";
      break;
    case Intrinsic::Pow:
      on_inf = "pow";
      break;
    default:
      break;
  }
  std::string params, names;
  for (size_t i = 0; i < c->args.size(); ++i) {
    params += (i ? ", " : "") + ctype(c->args[i]->type) + " x" + std::to_string(i);
    names += (i ? ", x" : "x") + std::to_string(i);
  }
  return wrap("plait::py_math(" + error_sink() + ", " + loc_args(c->loc) + ", plait::math_inf::" + on_inf + ", [](" +
              params + ") { return " + name + "(" + names + "); }, " + joined + ")");
}

std::string CEmitter::offset(const ArrayVar& a, const std::vector<std::string>& indices) {
  std::string off;
  for (int d = 0; d < a->type.ndim; ++d) {
    const std::string s = stride(a, d);
    const std::string term = s == "1" ? indices[d] : indices[d] + " * " + s;
    off += (d ? " + " : "") + term;
  }
  return off;
}

std::string CEmitter::index_value(const Expr& e) {
  const std::string s = expr(e);
  return e->type.kind == ScalarKind::Int64 ? s : "static_cast<int64_t>(" + s + ")";
}

std::string CEmitter::bound_checks(const ArrayVar& a, const std::vector<Expr>& indices, const SourceLoc& loc,
                                   std::vector<std::string>* names, std::string* decls) {
  std::string cond;
  for (int d = 0; d < a->type.ndim; ++d) {
    const std::string n = temp("i");
    if (d) *decls += " ";
    *decls += "const int64_t " + n + " = " + index_value(indices[static_cast<size_t>(d)]) + ";";
    names->push_back(n);
    cond += (d ? " && " : "") + std::string("plait::index_ok(") + error_sink() + ", " + loc_args(loc) + ", " + n +
            ", " + std::to_string(d) + ", " + extent(a, d) + ")";
  }
  return cond;
}

void CEmitter::line_directive(const SourceLoc& loc) {
  // std::to_string, not operator<<(int): numbers never go through the
  // stream's locale (a Python process may have set an unusual one).
  if (!loc.valid()) return;
  const std::string& path = fn_.source.path_of(loc.line);
  out() << "#line " + std::to_string(fn_.source.file_line(loc.line)) + " \"" +
               (path == fn_.source.path ? path_ : escape_path(path)) + "\"\n";
}

std::string CEmitter::atomic_function(AtomicOp op, ScalarKind kind) {
  std::string fn;
  switch (op) {
    case AtomicOp::Add:
      fn = "atomic_add";
      break;
    case AtomicOp::Sub:
      fn = "atomic_sub";
      break;
    case AtomicOp::Mul:
      fn = "atomic_mul";
      break;
    case AtomicOp::Div:
      fn = "atomic_div";
      break;
    case AtomicOp::Min:
      fn = "atomic_min";
      break;
    case AtomicOp::Max:
      fn = "atomic_max";
      break;
    case AtomicOp::BitAnd:
      fn = "atomic_and";
      break;
    case AtomicOp::BitOr:
      fn = "atomic_or";
      break;
    case AtomicOp::BitXor:
      fn = "atomic_xor";
      break;
  }
  return "plait::" + fn + "<" + ctype(kind) + ">";
}

}  // namespace plait::codegen
