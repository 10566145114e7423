// Constructors of the IR nodes (the make() functions, which check the typing
// rules ir.h documents) and the names of the IR's enumerations.
#include "ir/ir.h"

#include <atomic>
#include <utility>

namespace plait::ir {

uint64_t next_info_id() {
  static std::atomic<uint64_t> made{0};
  return ++made;
}

namespace {

bool same_kind(const Expr& a, const Expr& b) { return a->type.kind == b->type.kind; }

void check_indices(const ArrayVar& a, const std::vector<Expr>& indices) {
  PLAIT_ASSERT(a != nullptr);
  PLAIT_ASSERT(static_cast<int>(indices.size()) == a->type.ndim);
  for (const Expr& i : indices) {
    PLAIT_ASSERT(i != nullptr);
    PLAIT_ASSERT(i->type.is_int());
  }
}

}  // namespace

// ---------------------------------------------------------------- names

const char* node_kind_name(NodeKind k) {
  switch (k) {
#define PLAIT_EXPR_NODE(n) \
  case NodeKind::n:        \
    return #n;
#define PLAIT_STMT_NODE(n) \
  case NodeKind::n:        \
    return #n;
#include "ir/ir_nodes.def"
  }
  return "?";
}

const char* unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "-";
    case UnaryOp::Not: return "not";
    case UnaryOp::BitNot: return "~";
  }
  return "?";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Pow: return "**";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
    case BinaryOp::Min: return "minimum";
    case BinaryOp::Max: return "maximum";
    case BinaryOp::PyMin: return "min";
    case BinaryOp::PyMax: return "max";
  }
  return "?";
}

const char* compare_op_name(CompareOp op) {
  switch (op) {
    case CompareOp::EQ: return "==";
    case CompareOp::NE: return "!=";
    case CompareOp::LT: return "<";
    case CompareOp::LE: return "<=";
    case CompareOp::GT: return ">";
    case CompareOp::GE: return ">=";
  }
  return "?";
}

const char* intrinsic_name(Intrinsic fn) {
  switch (fn) {
    case Intrinsic::Sqrt: return "sqrt";
    case Intrinsic::Exp: return "exp";
    case Intrinsic::Log: return "log";
    case Intrinsic::Log2: return "log2";
    case Intrinsic::Log10: return "log10";
    case Intrinsic::Sin: return "sin";
    case Intrinsic::Cos: return "cos";
    case Intrinsic::Tan: return "tan";
    case Intrinsic::Tanh: return "tanh";
    case Intrinsic::Asin: return "asin";
    case Intrinsic::Acos: return "acos";
    case Intrinsic::Atan: return "atan";
    case Intrinsic::Atan2: return "atan2";
    case Intrinsic::Sinh: return "sinh";
    case Intrinsic::Cosh: return "cosh";
    case Intrinsic::Floor: return "floor";
    case Intrinsic::Ceil: return "ceil";
    case Intrinsic::Trunc: return "trunc";
    case Intrinsic::Fabs: return "fabs";
    case Intrinsic::Abs: return "abs";
    case Intrinsic::Round: return "round";
    case Intrinsic::Pow: return "pow";
    case Intrinsic::IsNan: return "isnan";
    case Intrinsic::IsInf: return "isinf";
    case Intrinsic::IsFinite: return "isfinite";
  }
  return "?";
}

const char* atomic_op_name(AtomicOp op) {
  switch (op) {
    case AtomicOp::Add: return "+";
    case AtomicOp::Sub: return "-";
    case AtomicOp::Mul: return "*";
    case AtomicOp::Div: return "/";
    case AtomicOp::Min: return "min";
    case AtomicOp::Max: return "max";
    case AtomicOp::BitAnd: return "&";
    case AtomicOp::BitOr: return "|";
    case AtomicOp::BitXor: return "^";
  }
  return "?";
}

// The OpenMP reduction identifiers, so back ends can print them as they are.
const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Add: return "+";
    case ReduceOp::Mul: return "*";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

const char* loop_kind_name(LoopKind k) {
  switch (k) {
    case LoopKind::Serial: return "serial";
    case LoopKind::Parallel: return "parallel";
    case LoopKind::Vectorized: return "simd";
    case LoopKind::ParallelVectorized: return "parallel simd";
  }
  return "?";
}

// ---------------------------------------------------------------- expressions

Expr IntImm::make(int64_t v, ScalarType t, SourceLoc l) {
  PLAIT_ASSERT(t.is_int());
  return std::make_shared<IntImm>(v, t, l);
}

Expr FloatImm::make(double v, ScalarType t, SourceLoc l) {
  PLAIT_ASSERT(t.is_float());
  return std::make_shared<FloatImm>(v, t, l);
}

bool is_zero(const Expr& e) {
  const auto* i = e->as<IntImm>();
  const auto* f = e->as<FloatImm>();
  return (i && i->value == 0) || (f && f->value == 0.0);
}

Expr BoolImm::make(bool v, SourceLoc l) { return std::make_shared<BoolImm>(v, ScalarType::py_bool(), l); }

Expr VarRef::make(Var v, SourceLoc l) {
  PLAIT_ASSERT(v != nullptr);
  return std::make_shared<VarRef>(std::move(v), l);
}

Expr Cast::make(ScalarType t, Expr v, bool checked, SourceLoc l) {
  PLAIT_ASSERT(v != nullptr);
  PLAIT_ASSERT(!checked || t.is_int());
  return std::make_shared<Cast>(t, std::move(v), checked, l);
}

Expr Unary::make(UnaryOp op, Expr a, SourceLoc l) {
  PLAIT_ASSERT(a != nullptr);
  ScalarType t = a->type;
  switch (op) {
    case UnaryOp::Neg:
      PLAIT_ASSERT(!t.is_bool());
      break;
    case UnaryOp::Not:
      t = ScalarType{ScalarKind::Bool, a->type.weak};
      break;
    case UnaryOp::BitNot:
      PLAIT_ASSERT(!t.is_float());
      break;
  }
  return std::make_shared<Unary>(op, std::move(a), t, l);
}

Expr Binary::make(BinaryOp op, Expr a, Expr b, ScalarType t, bool zero_check, SourceLoc l) {
  PLAIT_ASSERT(a != nullptr && b != nullptr);
  PLAIT_ASSERT(a->type.kind == t.kind);
  switch (op) {
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      PLAIT_ASSERT(t.is_int() && b->type.is_int());
      break;
    case BinaryOp::Pow:
      // A float raised to an int power keeps the int exponent (x ** 2).
      PLAIT_ASSERT(same_kind(a, b) || (t.is_float() && b->type.is_int()));
      break;
    case BinaryOp::Div:
      PLAIT_ASSERT(t.is_float() && same_kind(a, b));
      break;
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor:
      PLAIT_ASSERT(!t.is_float() && same_kind(a, b));
      break;
    default:
      PLAIT_ASSERT(same_kind(a, b));
      break;
  }
  return std::make_shared<Binary>(op, std::move(a), std::move(b), t, zero_check, l);
}

Expr Compare::make(CompareOp op, Expr a, Expr b, SourceLoc l) {
  PLAIT_ASSERT(a != nullptr && b != nullptr);
  PLAIT_ASSERT(same_kind(a, b));
  ScalarType t{ScalarKind::Bool, a->type.weak && b->type.weak};
  return std::make_shared<Compare>(op, std::move(a), std::move(b), t, l);
}

Expr Logical::make(LogicalOp op, Expr a, Expr b, SourceLoc l) {
  PLAIT_ASSERT(a != nullptr && b != nullptr);
  PLAIT_ASSERT(a->type.is_bool() && b->type.is_bool());
  ScalarType t{ScalarKind::Bool, a->type.weak && b->type.weak};
  return std::make_shared<Logical>(op, std::move(a), std::move(b), t, l);
}

Expr Select::make(Expr cond, Expr t, Expr f, SourceLoc l) {
  PLAIT_ASSERT(cond != nullptr && t != nullptr && f != nullptr);
  PLAIT_ASSERT(cond->type.is_bool());
  PLAIT_ASSERT(same_kind(t, f));
  ScalarType type{t->type.kind, t->type.weak && f->type.weak};
  return std::make_shared<Select>(std::move(cond), std::move(t), std::move(f), type, l);
}

Expr Call::make(Intrinsic fn, std::vector<Expr> args, ScalarType t, bool python_math, SourceLoc l) {
  const size_t arity = (fn == Intrinsic::Atan2 || fn == Intrinsic::Pow) ? 2 : 1;
  PLAIT_ASSERT(args.size() == arity);
  for (const Expr& a : args) PLAIT_ASSERT(a != nullptr);
  if (fn == Intrinsic::IsNan || fn == Intrinsic::IsInf || fn == Intrinsic::IsFinite) PLAIT_ASSERT(t.is_bool());
  return std::make_shared<Call>(fn, std::move(args), t, python_math, l);
}

Expr Load::make(ArrayVar a, std::vector<Expr> indices, bool checked, SourceLoc l) {
  check_indices(a, indices);
  return std::make_shared<Load>(std::move(a), std::move(indices), checked, l);
}

Expr ArrayDim::make(ArrayVar a, int dim, SourceLoc l) {
  PLAIT_ASSERT(a != nullptr);
  PLAIT_ASSERT(dim >= 0 && dim < a->type.ndim);
  return std::make_shared<ArrayDim>(std::move(a), dim, l);
}

Expr ArraysOverlap::make(ArrayVar a, ArrayVar b, bool unless_same_view, SourceLoc l) {
  PLAIT_ASSERT(a != nullptr && b != nullptr);
  return std::make_shared<ArraysOverlap>(std::move(a), std::move(b), unless_same_view, l);
}

// ---------------------------------------------------------------- statements

Stmt Block::make(std::vector<Stmt> stmts, SourceLoc l) {
  for (const Stmt& s : stmts) PLAIT_ASSERT(s != nullptr);
  return std::make_shared<Block>(std::move(stmts), l);
}

std::vector<Stmt> statements_of(const Stmt& body) {
  if (!body) return {};
  if (const Block* b = body->as<Block>()) return b->stmts;
  return {body};
}

bool is_parallel_loop(const Stmt& s) {
  const For* f = s->as<For>();
  return f && is_parallel(f->schedule.kind);
}

const For* single_loop(const Stmt& body) {
  if (const For* f = body->as<For>()) return f;
  const Block* b = body->as<Block>();
  if (!b) return nullptr;
  const For* inner = nullptr;
  for (const Stmt& st : b->stmts) {
    if (const For* f = st->as<For>()) {
      if (inner) return nullptr;
      inner = f;
    } else if (!st->as<Declare>()) {
      return nullptr;
    }
  }
  if (!inner) return nullptr;
  for (const Stmt& st : b->stmts)
    if (const Declare* d = st->as<Declare>(); d && d->var != inner->var) return nullptr;
  return inner;
}

Stmt Assert::make(Expr cond, int error_kind, std::string message, SourceLoc l) {
  PLAIT_ASSERT(cond != nullptr && cond->type.is_bool());
  return std::make_shared<Assert>(std::move(cond), error_kind, std::move(message), l);
}

Stmt MatMul::make(ArrayVar c, ArrayVar a, bool a_transposed, ArrayVar b, bool b_transposed, Expr m, Expr n, Expr k,
                  Expr alpha, Expr beta, Stmt loops, SourceLoc l, MatMulTriangle triangle) {
  PLAIT_ASSERT(c && a && b && loops && m && n && k && alpha);
  PLAIT_ASSERT(!triangle.a2 || (triangle.b2 && triangle.alpha2 && triangle.alpha2->type.kind == ScalarKind::Float64 &&
                                triangle.a2->type.dtype == c->type.dtype && triangle.b2->type.dtype == c->type.dtype));
  PLAIT_ASSERT(!triangle.row_condition || (triangle.row && triangle.row_condition->type.is_bool()));
  PLAIT_ASSERT(!triangle.vector_row ||
               (triangle.part == MatMulPart::LowerSolve && triangle.vector_row->type.kind == ScalarKind::Int64));
  const int vector_ndim = triangle.part == MatMulPart::LowerSolve && !triangle.vector_row ? 1 : 2;
  PLAIT_ASSERT(c->type.ndim == vector_ndim && a->type.ndim == 2 && b->type.ndim == vector_ndim);
  PLAIT_ASSERT(a->type.dtype == c->type.dtype && b->type.dtype == c->type.dtype);
  PLAIT_ASSERT((ScalarType{c->type.dtype, false}.is_float()));
  PLAIT_ASSERT(m->type.kind == ScalarKind::Int64 && n->type.kind == ScalarKind::Int64 && k->type.kind == ScalarKind::Int64);
  PLAIT_ASSERT(alpha->type.kind == ScalarKind::Float64 && (!beta || beta->type.kind == ScalarKind::Float64));
  return std::make_shared<MatMul>(std::move(c), std::move(a), a_transposed, std::move(b), b_transposed, std::move(m),
                                  std::move(n), std::move(k), std::move(alpha), std::move(beta), std::move(loops),
                                  std::move(triangle), l);
}

Stmt Declare::make(Var v, SourceLoc l) {
  PLAIT_ASSERT(v != nullptr);
  return std::make_shared<Declare>(std::move(v), nullptr, l);
}

Stmt Declare::make(ArrayVar a, SourceLoc l) {
  PLAIT_ASSERT(a != nullptr);
  PLAIT_ASSERT(!a->is_param);
  return std::make_shared<Declare>(nullptr, std::move(a), l);
}

Stmt Assign::make(Var v, Expr value, SourceLoc l) {
  PLAIT_ASSERT(v != nullptr && value != nullptr);
  PLAIT_ASSERT(v->type.kind == value->type.kind);
  return std::make_shared<Assign>(std::move(v), std::move(value), l);
}

Stmt Store::make(ArrayVar a, std::vector<Expr> indices, Expr value, bool checked, SourceLoc l) {
  check_indices(a, indices);
  PLAIT_ASSERT(value != nullptr);
  PLAIT_ASSERT(value->type.kind == a->type.dtype);
  return std::make_shared<Store>(std::move(a), std::move(indices), std::move(value), checked, l);
}

Stmt AtomicUpdate::make(ArrayVar a, std::vector<Expr> indices, AtomicOp op, Expr value, bool checked, SourceLoc l) {
  check_indices(a, indices);
  PLAIT_ASSERT(value != nullptr);
  PLAIT_ASSERT(value->type.kind == a->type.dtype);
  const bool bitwise = op == AtomicOp::BitAnd || op == AtomicOp::BitOr || op == AtomicOp::BitXor;
  PLAIT_ASSERT(!bitwise || !value->type.is_float());
  return std::make_shared<AtomicUpdate>(std::move(a), std::move(indices), op, std::move(value), checked, l);
}

Stmt If::make(Expr cond, Stmt then_case, Stmt else_case, SourceLoc l) {
  PLAIT_ASSERT(cond != nullptr && then_case != nullptr);
  PLAIT_ASSERT(cond->type.is_bool());
  return std::make_shared<If>(std::move(cond), std::move(then_case), std::move(else_case), l);
}

Stmt For::make(Var v, Expr begin, Expr end, Expr step, Stmt body, LoopSchedule sc, SourceLoc l) {
  PLAIT_ASSERT(v != nullptr && begin != nullptr && end != nullptr && step != nullptr && body != nullptr);
  PLAIT_ASSERT(v->type.is_int() && begin->type.is_int() && end->type.is_int() && step->type.is_int());
  PLAIT_ASSERT(sc.collapse >= 1);
  for (const Reduction& r : sc.reductions) PLAIT_ASSERT(r.var != nullptr);
  return std::make_shared<For>(std::move(v), std::move(begin), std::move(end), std::move(step), std::move(body),
                               std::move(sc), l);
}

Stmt While::make(Expr cond, Stmt body, SourceLoc l) {
  PLAIT_ASSERT(cond != nullptr && body != nullptr);
  PLAIT_ASSERT(cond->type.is_bool());
  return std::make_shared<While>(std::move(cond), std::move(body), l);
}

Stmt Break::make(SourceLoc l) { return std::make_shared<Break>(l); }

Stmt Continue::make(SourceLoc l) { return std::make_shared<Continue>(l); }

Stmt Return::make(std::vector<ReturnValue> values, SourceLoc l) {
  for (const ReturnValue& v : values) PLAIT_ASSERT((v.scalar != nullptr) != (v.array != nullptr));
  return std::make_shared<Return>(std::move(values), l);
}

Stmt Allocate::make(ArrayVar a, std::vector<Expr> shape, FillKind fill, Expr fill_value, SourceLoc l) {
  PLAIT_ASSERT(a != nullptr);
  PLAIT_ASSERT(static_cast<int>(shape.size()) == a->type.ndim);
  for (const Expr& e : shape) PLAIT_ASSERT(e != nullptr && e->type.is_int());
  PLAIT_ASSERT((fill == FillKind::Value) == (fill_value != nullptr));
  PLAIT_ASSERT(fill_value == nullptr || fill_value->type.kind == a->type.dtype);
  return std::make_shared<Allocate>(std::move(a), std::move(shape), fill, std::move(fill_value), l);
}

Stmt ArrayBind::make(ArrayVar dst, ArrayVar src, SourceLoc l) {
  PLAIT_ASSERT(dst != nullptr && src != nullptr);
  PLAIT_ASSERT(dst->type.dtype == src->type.dtype && dst->type.ndim == src->type.ndim);
  // A name with a fixed layout only ever holds arrays of that layout.
  PLAIT_ASSERT(dst->type.layout == Layout::Any || dst->type.layout == src->type.layout);
  return std::make_shared<ArrayBind>(std::move(dst), std::move(src), l);
}

}  // namespace plait::ir
