// Lowering of array expressions: slicing, broadcasting, elementwise
// arithmetic, reductions and matrix products become loop nests in the IR.
//
// An array expression is a Tensor: a shape and a function from an index to
// the element there. Nothing is evaluated until an assignment builds one loop
// nest over its target and asks for the element at the nest's indices, so a
// statement such as `y[:M] = alpha * np.sum(A[:M, :N] * x[None, :N], axis=1)`
// is one nest with no temporaries. A reduction inside an element emits its own
// loop into a Sink; the nest builder places it at the outermost level whose
// indices it reads, so a reduction that does not depend on an inner index is
// computed once, outside that loop.
#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/index_bounds.h"
#include "analysis/var_uses.h"
#include "frontend/lowerer.h"
#include "ir/ir_visitor.h"
#include "runtime/abi.h"

namespace plait::lowering {

namespace {

Expr int_imm(int64_t v, SourceLoc loc) { return ir::IntImm::make(v, ScalarType::py_int(), loc); }

bool is_const(const Expr& e, int64_t v) {
  auto i = e->as<ir::IntImm>();
  return i && i->value == v;
}

// Structural equality of simple integer expressions (extents), so that
// equal extents need no run-time broadcast check.
bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (a->kind != b->kind) return false;
  if (auto x = a->as<ir::IntImm>()) return x->value == b->as<ir::IntImm>()->value;
  if (auto x = a->as<ir::ArrayDim>()) {
    auto y = b->as<ir::ArrayDim>();
    return x->array == y->array && x->dim == y->dim;
  }
  if (auto x = a->as<ir::VarRef>()) return x->var == b->as<ir::VarRef>()->var;
  if (auto x = a->as<ir::Binary>()) {
    auto y = b->as<ir::Binary>();
    return x->op == y->op && same_expr(x->a, y->a) && same_expr(x->b, y->b);
  }
  if (auto x = a->as<ir::Cast>()) return x->type == b->type && same_expr(x->value, b->as<ir::Cast>()->value);
  return false;
}

Expr add(const Expr& a, const Expr& b, SourceLoc loc) {
  if (is_const(b, 0)) return a;
  if (is_const(a, 0)) return b;
  if (auto x = a->as<ir::IntImm>())
    if (auto y = b->as<ir::IntImm>()) return int_imm(x->value + y->value, loc);
  return ir::Binary::make(ir::BinaryOp::Add, a, b, ScalarType::py_int(), false, loc);
}
Expr sub(const Expr& a, const Expr& b, SourceLoc loc) {
  if (is_const(b, 0)) return a;
  if (auto x = a->as<ir::IntImm>())
    if (auto y = b->as<ir::IntImm>()) return int_imm(x->value - y->value, loc);
  return ir::Binary::make(ir::BinaryOp::Sub, a, b, ScalarType::py_int(), false, loc);
}
Expr mul(const Expr& a, const Expr& b, SourceLoc loc) {
  if (is_const(b, 1)) return a;
  if (is_const(a, 1)) return b;
  return ir::Binary::make(ir::BinaryOp::Mul, a, b, ScalarType::py_int(), false, loc);
}
Expr imax(const Expr& a, const Expr& b, SourceLoc loc) {
  if (auto x = a->as<ir::IntImm>())
    if (auto y = b->as<ir::IntImm>()) return int_imm(std::max(x->value, y->value), loc);
  return ir::Binary::make(ir::BinaryOp::PyMax, a, b, ScalarType::py_int(), false, loc);
}
Expr imin(const Expr& a, const Expr& b, SourceLoc loc) {
  if (auto x = a->as<ir::IntImm>())
    if (auto y = b->as<ir::IntImm>()) return int_imm(std::min(x->value, y->value), loc);
  return ir::Binary::make(ir::BinaryOp::PyMin, a, b, ScalarType::py_int(), false, loc);
}
Expr floordiv(const Expr& a, int64_t b, SourceLoc loc) {
  if (b == 1) return a;
  return ir::Binary::make(ir::BinaryOp::FloorDiv, a, int_imm(b, loc), ScalarType::py_int(), false, loc);
}
Expr lt(const Expr& a, const Expr& b, SourceLoc loc) { return ir::Compare::make(ir::CompareOp::LT, a, b, loc); }

// Whether syntax names every element of an array in order: `A`, `A[:]`,
// `A[:, :]` (a bare name or only bare full slices).
bool whole_array_syntax(const ast::Expr* n) {
  if (!n) return false;
  if (n->as<ast::Name>()) return true;
  auto s = n->as<ast::Subscript>();
  if (!s || !s->value->as<ast::Name>()) return false;
  std::vector<const ast::Expr*> parts;
  if (auto t = s->index->as<ast::Tuple>()) {
    for (const auto& e : t->elts) parts.push_back(e.get());
  } else {
    parts.push_back(s->index.get());
  }
  for (const ast::Expr* p : parts) {
    auto sl = p->as<ast::Slice>();
    if (!sl || sl->lower || sl->upper || sl->step) return false;
  }
  return true;
}

// Whether a read and a target name the same elements of their arrays when
// the two arrays are one view: the same subscripts after their base names
// (`a[1:, k]` and `b[1:, k]`), or both the whole array.
bool same_subscripts(const ast::Expr* read, const ast::Expr* target) {
  if (whole_array_syntax(read) && whole_array_syntax(target)) return true;
  auto r = read->as<ast::Subscript>();
  auto t = target->as<ast::Subscript>();
  if (!r || !t) return read->as<ast::Name>() && target->as<ast::Name>();
  return same_tree(r->index.get(), t->index.get()) && same_subscripts(r->value.get(), t->value.get());
}

// Python's normalisation of one slice bound against extent n.
Expr slice_bound(const Expr& x, const Expr& n, bool negative_step, SourceLoc loc) {
  Expr low = negative_step ? int_imm(-1, loc) : int_imm(0, loc);
  Expr high = negative_step ? sub(n, int_imm(1, loc), loc) : n;
  if (auto c = x->as<ir::IntImm>()) {
    if (c->value >= 0) return imin(x, high, loc);
    return imax(add(n, x, loc), low, loc);
  }
  Expr wrapped = imax(add(x, n, loc), low, loc);
  return ir::Select::make(lt(x, int_imm(0, loc), loc), wrapped, imin(x, high, loc), loc);
}

// The identity of a reduction, in the accumulator's type.
Expr identity(const std::string& name, ScalarType t, SourceLoc loc) {
  if (t.is_bool() && (name == "sum" || name == "mean" || name == "dot" || name == "prod"))
    return ir::BoolImm::make(name == "prod", loc);
  if (name == "sum" || name == "mean" || name == "dot")
    return t.is_float() ? ir::FloatImm::make(0.0, t, loc) : ir::IntImm::make(0, t, loc);
  if (name == "prod") return t.is_float() ? ir::FloatImm::make(1.0, t, loc) : ir::IntImm::make(1, t, loc);
  bool is_max = name == "max" || name == "argmax";
  if (t.is_float()) return ir::FloatImm::make(is_max ? -INFINITY : INFINITY, t, loc);
  if (t.is_bool()) return ir::BoolImm::make(!is_max, loc);
  // uint64's largest value is held as its bit pattern, -1.
  const int64_t hi = t.kind == ScalarKind::UInt64 ? -1 : int_max(t.kind);
  return ir::IntImm::make(is_max ? int_min(t.kind) : hi, t, loc);
}

// The number of elements of a shape, for choosing between temporaries of
// different shapes when compiling: an extent known only at run time counts
// as 1024.
double estimated_elements(const std::vector<Expr>& shape) {
  double n = 1;
  for (const auto& e : shape) {
    auto c = e->as<ir::IntImm>();
    n *= c ? static_cast<double>(std::max<int64_t>(c->value, 0)) : 1024.0;
  }
  return n;
}

// Makes `view`, a view of one array, readable from a snapshot (see
// ViewSnapshot): its reads of the array go through the new snapshot, unless
// they already go through a view of no more elements (`path[:, k]` under
// `path[:, k][:, None]`).
TensorPtr snapshot_able(std::shared_ptr<Tensor> view, const ast::Expr* node, SourceLoc loc) {
  auto plain = std::make_shared<Tensor>(*view);
  plain->reads.clear();  // the plain view only ever fills a fresh temporary
  auto snap = std::make_shared<ViewSnapshot>();
  snap->view = plain;
  snap->node = node;
  view->element = [snap, loc](const std::vector<Expr>& idx, Sink& sink) {
    if (snap->copy) return ir::Load::make(snap->copy, idx, false, loc);
    return snap->view->element(idx, sink);
  };
  for (auto& r : view->reads) {
    if (r.array != view->array) continue;
    r.node = node;
    if (!r.via || estimated_elements(view->shape) < estimated_elements(r.via->view->shape)) r.via = snap;
  }
  return view;
}

// The index into an operand at a dimension with a broadcast flag.
Expr broadcast_index(const ir::Var& flag, const Expr& index, SourceLoc loc) {
  if (!flag) return index;
  return ir::Select::make(ir::VarRef::make(flag, loc), int_imm(0, loc), index, loc);
}

}  // namespace

Expr Lowerer::placeholder(ScalarType t) {
  auto v = std::make_shared<ir::VarInfo>();
  v->name = "_elem";
  v->type = t;
  return ir::VarRef::make(v);
}

// ================================================================ tensors from values

std::string Lowerer::source_text(SourceLoc l) const {
  std::string line = file_.line_text(l.line);
  std::string s = l.end_line == l.line && l.end_col <= static_cast<int>(line.size()) ? line.substr(l.col, l.end_col - l.col) : "";
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

TensorPtr Lowerer::to_tensor(const Value& v, SourceLoc loc) {
  if (v.kind == Value::Kind::Tensor) return v.tensor;
  auto t = std::make_shared<Tensor>();
  if (v.kind == Value::Kind::Array) {
    const ir::ArrayVar a = v.array;
    t->type = ScalarType{a->type.dtype, false};
    // Dimensions known to have extent 1 (a local assigned from `keepdims`
    // reductions, say) broadcast without run-time tests.
    auto units = array_units_.find(a);
    for (int d = 0; d < a->type.ndim; ++d) {
      bool unit = units != array_units_.end() && units->second[d];
      t->shape.push_back(unit ? int_imm(1, loc) : ir::ArrayDim::make(a, d, loc));
      t->unit.push_back(unit);
      t->labels.push_back("");
    }
    t->element = [a, loc](const std::vector<Expr>& idx, Sink&) { return ir::Load::make(a, idx, false, loc); };
    t->array = a;
    t->array_index = [](const std::vector<Expr>& idx) { return idx; };
    t->source = v.node;
    t->reads.push_back({a, v.node, nullptr});
    return snapshot_able(t, v.node, loc);
  }
  if (v.kind == Value::Kind::Scalar) {
    Expr s = v.scalar;
    // NumPy reads an element operand (`a - a[0]`) once, before the
    // statement stores anything: it is computed before the loop nest, which
    // may overwrite that element.
    if (!inferring_ && !analysis::uses_of(s).arrays.empty()) {
      ir::Var held = temp_var(s->type, loc);
      pending_.push_back(ir::Assign::make(held, s, loc));
      s = ir::VarRef::make(held, loc);
    }
    t->type = s->type;
    t->element = [s](const std::vector<Expr>&, Sink&) { return s; };
    return t;
  }
  type_error(std::string("expected an array or a number, got ") + value_kind_name(v.kind), loc);
}

bool Lowerer::indexes_a_view(const ir::ArrayVar& array, const ast::Expr& index) {
  std::vector<const ast::Expr*> parts;
  if (auto t = index.as<ast::Tuple>()) {
    for (const auto& e : t->elts) parts.push_back(e.get());
  } else {
    parts.push_back(&index);
  }
  int consumed = 0;
  for (const ast::Expr* p : parts) {
    if (auto n = p->as<ast::Name>(); n && vidx_aliases_.count(n->id)) return true;
    if (p->kind == ast::ExprKind::Slice) return true;
    if (auto c = p->as<ast::Constant>(); c && c->is_none()) return true;
    if (auto a = p->as<ast::Attribute>(); a && a->attr == "newaxis") return true;
    if (auto call = p->as<ast::Call>()) {
      Value f = lower(*call->func);
      if (f.kind == Value::Kind::Function && f.name == "plait.vidx") return true;
    }
    ++consumed;
  }
  return consumed < array->type.ndim;
}

TensorPtr Lowerer::array_view(const TensorPtr& base, const ast::Expr* index, const ast::Expr* source, SourceLoc loc) {
  if (!index) return base;
  const std::string array_name = base->array ? base->array->name : std::string("the array");
  std::vector<const ast::Expr*> parts;
  if (auto t = index->as<ast::Tuple>()) {
    for (const auto& e : t->elts) parts.push_back(e.get());
  } else {
    parts.push_back(index);
  }
  // Each part maps onto a base dimension (ints and slices consume one, None
  // adds a new dimension of extent 1); missing trailing parts are `:`.
  struct Part {
    enum Kind { Fixed, Range, NewAxis } kind;
    Expr value;  // Fixed: the index; Range: the start
    int64_t step = 1;
    Expr length;
    std::string label;
  };
  std::vector<Part> mapped;
  size_t base_dim = 0;
  auto slice_part = [&](const Expr& n, Expr lo, Expr hi, int64_t step, SourceLoc l) {
    Part p{Part::Range, nullptr, step, nullptr, source_text(l)};
    auto lo_c = lo ? lo->as<ir::IntImm>() : nullptr;
    auto hi_c = hi ? hi->as<ir::IntImm>() : nullptr;
    if (step == 1 && (!lo || (lo_c && lo_c->value >= 0)) && (!hi || (hi_c && hi_c->value < 0))) {
      // The common `a:`, `a:-b`, `:-b` forms: start a, length max(n - b - a, 0).
      // (When n < a the length is 0 and the start is never used.) Equal
      // slices of equal extents then have identical lengths, which keeps
      // broadcast checks away.
      int64_t a = lo_c ? lo_c->value : 0;
      int64_t b = hi_c ? hi_c->value : 0;
      p.value = int_imm(a, l);
      p.length = a == 0 && b == 0 ? n : imax(add(n, int_imm(b - a, l), l), int_imm(0, l), l);
      return p;
    }
    if (step > 0) {
      Expr start = lo ? slice_bound(lo, n, false, l) : int_imm(0, l);
      Expr stop = hi ? slice_bound(hi, n, false, l) : n;
      p.value = start;
      p.length = imax(floordiv(add(sub(stop, start, l), int_imm(step - 1, l), l), step, l), int_imm(0, l), l);
    } else {
      Expr start = lo ? slice_bound(lo, n, true, l) : sub(n, int_imm(1, l), l);
      Expr stop = hi ? slice_bound(hi, n, true, l) : int_imm(-1, l);
      p.value = start;
      p.length = imax(floordiv(add(sub(start, stop, l), int_imm(-step - 1, l), l), -step, l), int_imm(0, l), l);
    }
    return p;
  };
  for (const ast::Expr* part : parts) {
    // `vi = plait.vidx(...)` then `a[vi]`: the subscript is the vidx call.
    if (auto n = part->as<ast::Name>(); n && vidx_aliases_.count(n->id)) part = vidx_aliases_.at(n->id);
    bool new_axis = false;
    if (auto c = part->as<ast::Constant>(); c && c->is_none()) new_axis = true;
    if (auto at = part->as<ast::Attribute>(); at && at->attr == "newaxis") new_axis = lower(*part).kind == Value::Kind::None;
    if (new_axis) {
      mapped.push_back(Part{Part::NewAxis, nullptr, 1, int_imm(1, part->loc), ""});
      continue;
    }
    if (base_dim >= base->rank())
      type_error("too many indices for " + array_name + ": it has " + std::to_string(base->rank()) + " dimension(s)",
                 part->loc);
    const Expr n = base->shape[base_dim];
    if (auto s = part->as<ast::Slice>()) {
      int64_t step = 1;
      if (s->step) {
        Expr st = scalar(*s->step, "a slice step");
        auto c = st->as<ir::IntImm>();
        if (!c) unsupported("slice steps must be integer constants", s->step->loc);
        if (c->value == 0) fail(ErrorKind::Value, "slice step cannot be zero", s->step->loc);
        step = c->value;
      }
      auto bound = [&](const ast::ExprPtr& e) -> Expr {
        if (!e) return nullptr;
        if (auto c = e->as<ast::Constant>(); c && c->is_none()) return nullptr;
        Expr x = scalar(*e, "a slice bound");
        if (!x->type.is_int()) type_error("slice indices must be integers, got " + describe(x->type), e->loc);
        return cast(x, ScalarType::py_int());
      };
      mapped.push_back(slice_part(n, bound(s->lower), bound(s->upper), step, s->loc));
      ++base_dim;
      continue;
    }
    if (auto call = part->as<ast::Call>()) {
      Value f = lower(*call->func);
      if (f.kind == Value::Kind::Function && f.name == "plait.vidx") {
        if (call->args.size() != 3 || !call->keywords.empty())
          type_error("plait.vidx(start, size, bound) takes three arguments", call->loc);
        Expr start = cast(scalar(*call->args[0], "plait.vidx()"), ScalarType::py_int());
        Expr size = cast(scalar(*call->args[1], "plait.vidx()"), ScalarType::py_int());
        Expr bound = cast(scalar(*call->args[2], "plait.vidx()"), ScalarType::py_int());
        Expr stop = imin(add(start, size, call->loc), bound, call->loc);
        mapped.push_back(slice_part(n, start, stop, 1, call->loc));
        ++base_dim;
        continue;
      }
    }
    Value iv = lower(*part);
    if (is_array_like(iv)) unsupported("indexing with an array (fancy indexing) is not supported", part->loc);
    Expr i = as_scalar(iv, "an index", part->loc);
    if (!i->type.is_int()) type_error("array indices must be integers, got " + describe(i->type), part->loc);
    i = cast(i, ScalarType::py_int());
    auto lb = analysis::lower_bound(i, {});
    if (!lb || *lb < 0) i = ir::Select::make(lt(i, int_imm(0, part->loc), part->loc), add(i, n, part->loc), i, part->loc);
    mapped.push_back(Part{Part::Fixed, i, 1, nullptr, ""});
    ++base_dim;
  }
  while (base_dim < base->rank()) {
    mapped.push_back(Part{Part::Range, int_imm(0, loc), 1, base->shape[base_dim], ""});
    ++base_dim;
  }
  auto t = std::make_shared<Tensor>();
  t->type = base->type;
  for (const Part& p : mapped) {
    if (p.kind == Part::Fixed) continue;
    t->shape.push_back(p.length);
    t->unit.push_back(p.kind == Part::NewAxis || is_const(p.length, 1));
    t->labels.push_back(p.label);
  }
  auto map_index = [mapped, loc](const std::vector<Expr>& idx) {
    std::vector<Expr> out;
    size_t k = 0;
    for (const Part& p : mapped) {
      switch (p.kind) {
        case Part::NewAxis: ++k; break;
        case Part::Fixed: out.push_back(p.value); break;
        case Part::Range: out.push_back(add(p.value, mul(idx[k++], int_imm(p.step, loc), loc), loc)); break;
      }
    }
    return out;
  };
  TensorPtr b = base;
  t->element = [b, map_index](const std::vector<Expr>& idx, Sink& sink) { return b->element(map_index(idx), sink); };
  t->reads = base->reads;
  if (base->array) {
    // A view of a view of an array is a view of that array.
    t->array = base->array;
    auto inner = base->array_index;
    t->array_index = [inner, map_index](const std::vector<Expr>& idx) { return inner(map_index(idx)); };
    t->source = source;
    return snapshot_able(t, source, loc);
  }
  return t;
}

// ================================================================ elementwise

// An operand of extent `e` in a dimension whose broadcast extent is
// `broadcast` (equal to e, or e is 1: asserted) reads index 0 there when
// e != broadcast. The test is a bool local computed before the loop nest and
// read by a select in the index; fuse_loop_nests versions the statements on
// these `_broadcast` flags, so that the usual case (no extent of 1 at run
// time) runs loops with plain indices. Null when e cannot be 1.
ir::Var Lowerer::broadcast_flag(const Expr& e, const Expr& broadcast, std::vector<Stmt>& out, SourceLoc loc) {
  if (auto c = e->as<ir::IntImm>(); c && c->value != 1) return nullptr;
  ir::Var flag = temp_var(ScalarType::b1(), loc);
  flag->name = "_broadcast" + flag->name.substr(4);
  out.push_back(ir::Assign::make(flag, ir::Compare::make(ir::CompareOp::NE, e, broadcast, loc), loc));
  return flag;
}

namespace {

// The number of nodes of `e`, counted up to `limit`.
size_t nodes_up_to(const Expr& e, size_t limit) {
  struct Count : ir::IRVisitor {
    size_t n = 0, limit = 0;
    using IRVisitor::visit;
    void visit(const ir::Select* s) override {
      if (++n <= limit) IRVisitor::visit(s);
    }
    void visit(const ir::Compare* c) override {
      if (++n <= limit) IRVisitor::visit(c);
    }
    void visit(const ir::Binary* b) override {
      if (++n <= limit) IRVisitor::visit(b);
    }
  } count;
  count.limit = limit;
  count.visit(e);
  return count.n;
}

}  // namespace

// A broadcast extent of many nodes is computed once, into a local: each
// operand of a chain nests the extent before it twice (in the test and in
// the result), so n operands would make 2^n nodes.
Expr Lowerer::named_if_large(const Expr& extent, SourceLoc loc) {
  constexpr size_t kLargeExtent = 24;
  if (nodes_up_to(extent, kLargeExtent) < kLargeExtent) return extent;
  ir::Var v = temp_var(ScalarType::py_int(), loc);
  v->name = "_extent" + v->name.substr(4);
  pending_.push_back(ir::Assign::make(v, extent, loc));
  return ir::VarRef::make(v, loc);
}

Value Lowerer::elementwise(const std::vector<Value>& args, const std::function<Expr(const std::vector<Expr>&)>& op,
                           SourceLoc loc) {
  std::vector<TensorPtr> ts;
  size_t rank = 0;
  for (const auto& a : args) {
    ts.push_back(to_tensor(a, loc));
    rank = std::max(rank, ts.back()->rank());
  }
  auto t = std::make_shared<Tensor>();
  // Broadcasting: dimensions align at the end; a dimension whose extent is
  // 1 at compile time (None, keepdims=True, a literal 1) stretches to the
  // others without any test. Other extents are compared at run time: equal,
  // or 1 (which broadcasts: see broadcast_flag).
  // flags[operand][dimension of the operand]: its broadcast flag, or null.
  std::vector<std::vector<ir::Var>> flags(ts.size());
  for (size_t a = 0; a < ts.size(); ++a) flags[a].resize(ts[a]->rank());
  for (size_t d = 0; d < rank; ++d) {
    std::vector<size_t> operands;  // those of a run-time extent at d
    std::string label;
    for (size_t a = 0; a < ts.size(); ++a) {
      const auto& x = ts[a];
      size_t offset = rank - x->rank();
      if (d < offset) continue;
      size_t xd = d - offset;
      if (label.empty()) label = x->labels[xd];
      if (!x->unit[xd]) operands.push_back(a);
    }
    auto extent_of = [&](size_t a) { return ts[a]->shape[d - (rank - ts[a]->rank())]; };
    Expr extent = operands.empty() ? nullptr : extent_of(operands[0]);
    bool all_same = true;
    for (size_t a : operands) all_same = all_same && same_expr(extent, extent_of(a));
    if (!all_same && !inferring_) {
      // The broadcast extent: the first that is not 1.
      Expr broadcast = extent;
      for (size_t k = 1; k < operands.size(); ++k) {
        Expr e = extent_of(operands[k]);
        if (auto c = broadcast->as<ir::IntImm>(); c && c->value != 1) break;
        broadcast = is_const(broadcast, 1) ? e
                                           : ir::Select::make(ir::Compare::make(ir::CompareOp::EQ, broadcast, int_imm(1, loc), loc),
                                                              e, broadcast, loc);
      }
      broadcast = named_if_large(broadcast, loc);
      for (size_t a : operands) {
        Expr e = extent_of(a);
        if (same_expr(e, broadcast)) continue;
        pending_.push_back(ir::Assert::make(
            ir::Logical::make(ir::LogicalOp::Or, ir::Compare::make(ir::CompareOp::EQ, e, broadcast, loc),
                              ir::Compare::make(ir::CompareOp::EQ, e, int_imm(1, loc), loc), loc),
            PLAIT_VALUE_ERROR,
            "operands could not be broadcast together (dimension " + std::to_string(d) + " differs)", loc));
        flags[a][d - (rank - ts[a]->rank())] = broadcast_flag(e, broadcast, pending_, loc);
      }
      const ir::Var& first = flags[operands[0]][d - (rank - ts[operands[0]]->rank())];
      if (first) extent = named_if_large(ir::Select::make(ir::VarRef::make(first, loc), broadcast, extent, loc), loc);
    }
    t->shape.push_back(extent ? extent : int_imm(1, loc));
    t->unit.push_back(!extent);
    t->labels.push_back(label);
  }
  // The result type: the scalar rule applied to stand-ins of the operands
  // (a scalar operand keeps its own expression, so a Python number stays weak).
  std::vector<Expr> holders;
  for (size_t a = 0; a < ts.size(); ++a)
    holders.push_back(args[a].kind == Value::Kind::Scalar ? args[a].scalar : placeholder(ts[a]->type));
  t->type = op(holders)->type.strong();
  for (const auto& x : ts) {
    // A read keeps its syntax (which the overlap test compares with the
    // target's) only while it stays aligned with the result: an operand
    // broadcast along a dimension reads other elements than the one written.
    bool aligned = x->rank() == rank;
    for (size_t d = 0; aligned && d < rank; ++d) aligned = !(x->unit[d] && !t->unit[d]);
    for (auto r : x->reads) {
      if (!aligned) r.node = nullptr;
      t->reads.push_back(r);
    }
  }
  t->element = [ts, flags, rank, op, loc](const std::vector<Expr>& idx, Sink& sink) {
    std::vector<Expr> elems;
    for (size_t a = 0; a < ts.size(); ++a) {
      const auto& x = ts[a];
      std::vector<Expr> xi;
      size_t offset = rank - x->rank();
      for (size_t d = 0; d < x->rank(); ++d) xi.push_back(x->unit[d] ? int_imm(0, loc) : broadcast_index(flags[a][d], idx[d + offset], loc));
      elems.push_back(x->element(xi, sink));
    }
    return op(elems);
  };
  return Value::of_tensor(t, loc);
}

Value Lowerer::tensor_binary(ast::BinOpKind op, const Value& a, const Value& b, SourceLoc loc) {
  if (op == ast::BinOpKind::MatMult) return matmul(a, b, loc);
  return elementwise({a, b}, [this, op, loc](const std::vector<Expr>& e) { return binary(op, e[0], e[1], loc); }, loc);
}

Value Lowerer::transpose(const Value& a, SourceLoc loc) {
  TensorPtr x = to_tensor(a, loc);
  auto t = std::make_shared<Tensor>(*x);
  for (auto& read : t->reads) read.node = nullptr;  // transposed: other elements
  t->source = nullptr;
  std::reverse(t->shape.begin(), t->shape.end());
  std::reverse(t->unit.begin(), t->unit.end());
  std::reverse(t->labels.begin(), t->labels.end());
  auto reversed = [](std::vector<Expr> idx) {
    std::reverse(idx.begin(), idx.end());
    return idx;
  };
  t->element = [x, reversed](const std::vector<Expr>& idx, Sink& sink) { return x->element(reversed(idx), sink); };
  if (x->array_index) {
    auto inner = x->array_index;
    t->array_index = [inner, reversed](const std::vector<Expr>& idx) { return inner(reversed(idx)); };
  }
  return Value::of_tensor(t, loc);
}

// ================================================================ reductions

Value Lowerer::reduce(const std::string& name, const Value& x, const ast::Call& c, size_t first_kwarg_arg) {
  TensorPtr t = to_tensor(x, c.loc);
  std::optional<Value> axis_value;
  bool keepdims = false;
  if (c.args.size() > first_kwarg_arg + 1)
    type_error(name + "() takes the array and an optional axis positionally", c.loc);
  if (c.args.size() == first_kwarg_arg + 1) axis_value = lower(*c.args[first_kwarg_arg]);
  for (const auto& kw : c.keywords) {
    if (kw.name == "axis") {
      axis_value = lower(*kw.value);
    } else if (kw.name == "keepdims") {
      Expr k = scalar(*kw.value, "keepdims=");
      auto b = k->as<ir::BoolImm>();
      if (!b) unsupported("keepdims= must be True or False", kw.loc);
      keepdims = b->value;
    } else {
      unsupported(name + "() keyword '" + kw.name + "' is not supported", kw.loc);
    }
  }
  std::vector<int> axes;
  auto add_axis = [&](const Value& v, SourceLoc l) {
    Expr e = as_scalar(v, "axis=", l);
    auto i = e->as<ir::IntImm>();
    if (!i) unsupported("axis must be an integer constant", l);
    int64_t r = static_cast<int64_t>(t->rank());
    if (i->value < -r || i->value >= r)
      fail(ErrorKind::Value, "axis " + std::to_string(i->value) + " is out of bounds for an array of dimension " +
                                 std::to_string(r), l);
    int a = static_cast<int>(i->value < 0 ? i->value + r : i->value);
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) fail(ErrorKind::Value, "duplicate value in 'axis'", l);
    axes.push_back(a);
  };
  if (!axis_value || axis_value->kind == Value::Kind::None) {
    for (size_t d = 0; d < t->rank(); ++d) axes.push_back(static_cast<int>(d));
  } else if (axis_value->kind == Value::Kind::Tuple) {
    for (const auto& v : axis_value->elems) add_axis(v, c.loc);
  } else {
    add_axis(*axis_value, c.loc);
  }
  if ((name == "argmax" || name == "argmin") && axes.size() != 1 && axes.size() != t->rank())
    unsupported(name + "() over several axes is not supported", c.loc);
  return reduce_axes(name, t, axes, keepdims, c.loc);
}

Value Lowerer::reduce_axes(const std::string& name, TensorPtr t, std::vector<int> axes, bool keepdims, SourceLoc loc) {
  std::sort(axes.begin(), axes.end());
  ScalarType in = t->type;
  ScalarType acc_type = in;
  if (name == "dot") {
    acc_type = in;  // a matrix product keeps its operands' promoted type (int32 @ int32 is int32)
  } else if (name == "sum" || name == "prod") {
    // NumPy sums and multiplies narrower integers in 64 bits of their signedness.
    if (in.is_bool() || (in.is_signed_int() && in.bits() < 64)) acc_type = ScalarType::i64();
    if (in.is_unsigned() && in.bits() < 64) acc_type = ScalarType::u64();
  } else if (name == "mean") {
    acc_type = in.is_float() ? in : ScalarType::f64();
  } else if (name == "argmax" || name == "argmin") {
    acc_type = in;
  }
  ScalarType result_type = (name == "argmax" || name == "argmin") ? ScalarType::i64() : acc_type;
  std::vector<bool> reduced(t->rank(), false);
  for (int a : axes) reduced[a] = true;

  auto r = std::make_shared<Tensor>();
  r->type = result_type;
  r->reads = t->reads;
  for (auto& read : r->reads) read.node = nullptr;  // a reduction reads other elements
  for (size_t d = 0; d < t->rank(); ++d) {
    if (reduced[d] && !keepdims) continue;
    r->shape.push_back(reduced[d] ? int_imm(1, loc) : t->shape[d]);
    r->unit.push_back(reduced[d] ? true : t->unit[d]);
    r->labels.push_back(reduced[d] ? "" : t->labels[d]);
  }
  const bool top_level_scalar = r->rank() == 0;
  // A reduction without identity over an empty axis raises, as NumPy's
  // does, even when the result has no element to compute (`np.min(a,
  // axis=0)` of a (0, 0) array): the test runs once, before the statement,
  // and holds where a conditional expression or `and`/`or` skips the
  // reduction (`np.max(a) if a.size else 0.0`).
  if ((name == "max" || name == "min" || name == "argmax" || name == "argmin") && !inferring_) {
    Expr count = int_imm(1, loc);
    for (size_t d = 0; d < t->rank(); ++d)
      if (reduced[d]) count = mul(count, t->shape[d], loc);
    const std::string message = name == "max" || name == "min"
                                    ? "zero-size array to reduction operation " +
                                          std::string(name == "max" ? "maximum" : "minimum") + " which has no identity"
                                    : "attempt to get " + name + " of an empty sequence";
    pending_.push_back(ir::Assert::make(
        unless_skipped(ir::Compare::make(ir::CompareOp::GT, count, int_imm(0, loc), loc), loc), PLAIT_VALUE_ERROR,
        message, loc));
  }
  TensorPtr src = t;
  r->element = [this, src, reduced, keepdims, name, acc_type, loc, top_level_scalar](const std::vector<Expr>& idx,
                                                                                      Sink& sink) -> Expr {
    // The element's indices: the kept ones from idx, a new loop variable
    // for each reduced dimension.
    auto reduced_dims = [&](std::vector<Expr>& full, std::vector<LoopDim>& dims) {
      size_t k = 0;
      for (size_t d = 0; d < src->rank(); ++d) {
        if (!reduced[d]) {
          full.push_back(idx[k++]);
          continue;
        }
        if (keepdims) ++k;
        LoopDim dim;
        dim.var = temp_var(ScalarType::py_int(), loc);
        dim.var->name = "_r" + dim.var->name.substr(4);
        dim.extent = src->shape[d];
        dim.label = src->labels[d];
        dim.reduction = true;
        full.push_back(ir::VarRef::make(dim.var, loc));
        dims.push_back(dim);
      }
    };
    std::vector<Expr> full;
    std::vector<LoopDim> dims;
    reduced_dims(full, dims);
    Expr count = int_imm(1, loc);
    for (const auto& d : dims) count = mul(count, d.extent, loc);
    Sink inner;
    Expr e = src->element(full, inner);
    std::vector<Stmt> group;
    ir::Var acc = temp_var(acc_type, loc);
    std::vector<Stmt> update;
    bool arg = name == "argmax" || name == "argmin";
    bool is_max = name == "max" || name == "argmax";
    group.push_back(ir::Assign::make(acc, identity(name, acc_type, loc), loc));
    // Reduction redundancy: factors of a sum's terms that do not depend on
    // the reduced indices multiply the sum once, after it, instead of every
    // term (`np.sum(alpha * A[i, :] * x)` is `alpha * np.sum(A[i, :] * x)`).
    std::vector<Expr> outside_factors;
    if ((name == "sum" || name == "mean" || name == "dot") && acc_type.is_float() && e->type == acc_type) {
      ir::VarSet reduced_vars;
      for (const auto& d : dims) reduced_vars.insert(d.var.get());
      std::vector<Expr> inside;
      std::function<void(const Expr&)> split = [&](const Expr& x) {
        auto m = x->as<ir::Binary>();
        if (m && m->op == ir::BinaryOp::Mul && m->type == acc_type) {
          split(m->a);
          split(m->b);
          return;
        }
        bool varies = false;
        for (const auto* v : analysis::uses_of(x).reads) varies = varies || reduced_vars.count(v);
        // A factor that reads an array may be an element that a loop after
        // this one overwrites; only pure scalar factors move.
        bool reads_memory = !analysis::uses_of(x).arrays.empty();
        (varies || reads_memory ? inside : outside_factors).push_back(x);
      };
      split(e);
      if (!outside_factors.empty() && !inside.empty()) {
        e = inside[0];
        for (size_t i = 1; i < inside.size(); ++i)
          e = ir::Binary::make(ir::BinaryOp::Mul, e, inside[i], acc_type, false, loc);
      } else {
        outside_factors.clear();
      }
    }
    Expr value = cast(e, acc_type);
    ir::Var best_index;
    ir::Var nans;  // float max/min on the CPU: the count of NaNs the vector loop saw
    if (arg) {
      // The first index of the extreme value; a NaN wins (NumPy's rule).
      best_index = temp_var(ScalarType::i64(), loc);
      group.push_back(ir::Assign::make(best_index, ir::IntImm::make(0, ScalarType::i64(), loc), loc));
      Expr flat = int_imm(0, loc);
      for (const auto& d : dims) flat = add(mul(flat, d.extent, loc), ir::VarRef::make(d.var, loc), loc);
      ir::Var v = temp_var(acc_type, loc);
      Expr cur = ir::VarRef::make(acc, loc);
      Expr vv = ir::VarRef::make(v, loc);
      Expr better = ir::Compare::make(is_max ? ir::CompareOp::GT : ir::CompareOp::LT, vv, cur, loc);
      if (acc_type.is_float()) {
        Expr v_nan = ir::Call::make(ir::Intrinsic::IsNan, {vv}, ScalarType::b1(), false, loc);
        Expr cur_nan = ir::Call::make(ir::Intrinsic::IsNan, {cur}, ScalarType::b1(), false, loc);
        better = ir::Logical::make(ir::LogicalOp::Or, better,
                                   ir::Logical::make(ir::LogicalOp::And, v_nan,
                                                     ir::Unary::make(ir::UnaryOp::Not, cur_nan, loc), loc),
                                   loc);
      }
      // The first element always wins, so an array of all -inf (or all
      // NaN) answers 0 as NumPy does.
      Expr first = ir::Compare::make(ir::CompareOp::EQ, flat, int_imm(0, loc), loc);
      better = ir::Logical::make(ir::LogicalOp::Or, first, better, loc);
      update.push_back(ir::Assign::make(v, value, loc));
      update.push_back(ir::If::make(better,
                                    ir::Block::make({ir::Assign::make(acc, vv, loc),
                                                     ir::Assign::make(best_index, cast(flat, ScalarType::i64()), loc)},
                                                    loc),
                                    nullptr, loc));
      for (auto& d : dims) d.vectorizable = false;
    } else {
      Expr cur = ir::VarRef::make(acc, loc);
      Expr combined;
      if (name == "sum" || name == "mean" || name == "dot") {
        // Bool products add up as logical or, as NumPy's bool matmul does.
        combined = acc_type.is_bool()
                       ? ir::Logical::make(ir::LogicalOp::Or, cur, value, loc)
                       : ir::Binary::make(ir::BinaryOp::Add, cur, value, acc_type, false, loc);
        // A logical-or accumulation is no OpenMP reduction: keep it in order.
        if (acc_type.is_bool())
          for (auto& d : dims) d.vectorizable = false;
        for (auto& d : dims) d.op = ir::ReduceOp::Add;
      } else if (name == "prod") {
        combined = ir::Binary::make(ir::BinaryOp::Mul, cur, value, acc_type, false, loc);
        for (auto& d : dims) d.op = ir::ReduceOp::Mul;
      } else if (acc_type.is_float() && options_.target == Target::CPU) {
        // NaN must win, which neither a vector max instruction nor OpenMP's
        // combination of partial maxima promises. The vector loop takes the
        // maximum of the other elements (vmaxps) and counts the NaNs; when
        // there are any, the ordered loop below finds NumPy's answer.
        ir::Var v = temp_var(acc_type, loc);
        nans = temp_var(ScalarType::i32(), loc);
        Expr vv = ir::VarRef::make(v, loc), n = ir::VarRef::make(nans, loc);
        Expr is_nan = ir::Cast::make(ScalarType::i32(),
                                     ir::Call::make(ir::Intrinsic::IsNan, {vv}, ScalarType::b1(), false, loc), false, loc);
        group.push_back(ir::Assign::make(nans, ir::IntImm::make(0, ScalarType::i32(), loc), loc));
        update.push_back(ir::Assign::make(v, value, loc));
        combined = ir::Binary::make(is_max ? ir::BinaryOp::PyMax : ir::BinaryOp::PyMin, cur, vv, acc_type, false, loc);
        update.push_back(ir::Assign::make(nans, ir::Binary::make(ir::BinaryOp::Max, n, is_nan, ScalarType::i32(), false, loc),
                                          loc));
        for (auto& d : dims) d.op = is_max ? ir::ReduceOp::Max : ir::ReduceOp::Min;
      } else {
        combined = ir::Binary::make(is_max ? ir::BinaryOp::Max : ir::BinaryOp::Min, cur, value, acc_type, false, loc);
        for (auto& d : dims) d.op = is_max ? ir::ReduceOp::Max : ir::ReduceOp::Min;
        // NaN must win: the CUDA back end combines the partial maxima of
        // threads with the same NaN-propagating maximum (docs/cuda.md).
      }
      update.push_back(ir::Assign::make(acc, combined, loc));
    }
    // Schedules: the innermost reduction loop is vectorised; a reduction of
    // a whole array to one number also runs its outermost loop in parallel.
    for (size_t i = 0; i < dims.size(); ++i) {
      bool innermost = i + 1 == dims.size();
      bool outermost = i == 0;
      bool par = top_level_scalar && outermost && dims[i].vectorizable;
      bool vec = innermost && dims[i].vectorizable;
      dims[i].schedule.kind = par && vec ? ir::LoopKind::ParallelVectorized
                              : par      ? ir::LoopKind::Parallel
                              : vec      ? ir::LoopKind::Vectorized
                                         : ir::LoopKind::Serial;
      dims[i].schedule = apply_sliced_pragma(dims[i], dims[i].schedule, name);
      // auto_simd vectorises the innermost loop of an annotated statement:
      // here the innermost reduction loop (the reduce pragma already allows
      // the reassociation a vector reduction makes).
      if (options_.auto_simd && !sliced_pragmas_.empty() && innermost && dims[i].vectorizable &&
          !ir::is_vectorized(dims[i].schedule.kind))
        dims[i].schedule.kind =
            ir::is_parallel(dims[i].schedule.kind) ? ir::LoopKind::ParallelVectorized : ir::LoopKind::Vectorized;
    }
    std::vector<Stmt> nest = build_nest(dims, inner, update, sink);
    group.insert(group.end(), nest.begin(), nest.end());
    if (nans) {
      // NaNs were seen: the maximum in order, with NumPy's NaN rule, as a
      // serial nest of its own (what it hoists stays inside the if).
      std::vector<Expr> again;
      std::vector<LoopDim> ordered;
      reduced_dims(again, ordered);
      Sink ordered_inner, ordered_outer;
      Expr x = cast(src->element(again, ordered_inner), acc_type);
      Expr cur = ir::VarRef::make(acc, loc);
      Stmt combine = ir::Assign::make(
          acc, ir::Binary::make(is_max ? ir::BinaryOp::Max : ir::BinaryOp::Min, cur, x, acc_type, false, loc), loc);
      std::vector<Stmt> ordered_nest = build_nest(ordered, ordered_inner, {combine}, ordered_outer);
      std::vector<Stmt> redo = {ir::Assign::make(acc, identity(name, acc_type, loc), loc)};
      for (const auto& g : ordered_outer.groups) redo.insert(redo.end(), g.begin(), g.end());
      redo.insert(redo.end(), ordered_nest.begin(), ordered_nest.end());
      Expr seen = ir::Compare::make(ir::CompareOp::NE, ir::VarRef::make(nans, loc),
                                    ir::IntImm::make(0, ScalarType::i32(), loc), loc);
      group.push_back(ir::If::make(seen, ir::Block::make(redo, loc), nullptr, loc));
    }
    sink.groups.push_back(group);
    if (arg) return ir::VarRef::make(best_index, loc);
    Expr out = ir::VarRef::make(acc, loc);
    for (const auto& f : outside_factors) out = ir::Binary::make(ir::BinaryOp::Mul, f, out, acc_type, false, loc);
    if (name == "mean") {
      Expr n = ir::Cast::make(acc_type, count, false, loc);
      out = ir::Binary::make(ir::BinaryOp::Div, out, n, acc_type, false, loc);
    }
    return out;
  };
  if (top_level_scalar) {
    Sink sink;
    Expr e = r->element({}, sink);
    for (auto& g : sink.groups)
      for (auto& s : g) pending_.push_back(s);
    return Value::of(e);
  }
  return Value::of_tensor(r, loc);
}

Value Lowerer::matmul(const Value& a, const Value& b, SourceLoc loc) {
  TensorPtr x = to_tensor(a, loc), y = to_tensor(b, loc);
  if (x->rank() < 1 || x->rank() > 2 || y->rank() < 1 || y->rank() > 2)
    unsupported("matrix products need 1-D or 2-D operands", loc);
  Expr kx = x->shape[x->rank() - 1];
  Expr ky = y->shape[y->rank() == 1 ? 0 : 0];
  if (!same_expr(kx, ky) && !inferring_)
    pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, kx, ky, loc), PLAIT_VALUE_ERROR,
                                        "matmul: the inner dimensions of the operands differ", loc));
  // The product tensor has the output dimensions then k; summing over k
  // gives the result.
  auto p = std::make_shared<Tensor>();
  ScalarType t = binary(ast::BinOpKind::Mult, placeholder(x->type), placeholder(y->type), loc)->type.strong();
  p->type = t;
  p->reads = x->reads;
  p->reads.insert(p->reads.end(), y->reads.begin(), y->reads.end());
  for (auto& read : p->reads) read.node = nullptr;
  size_t xr = x->rank(), yr = y->rank();
  if (xr == 2) {
    p->shape.push_back(x->shape[0]);
    p->unit.push_back(x->unit[0]);
    p->labels.push_back(x->labels[0]);
  }
  if (yr == 2) {
    p->shape.push_back(y->shape[1]);
    p->unit.push_back(y->unit[1]);
    p->labels.push_back(y->labels[1]);
  }
  p->shape.push_back(kx);
  p->unit.push_back(false);
  p->labels.push_back(x->labels[xr - 1]);
  p->element = [this, x, y, xr, yr, loc](const std::vector<Expr>& idx, Sink& sink) {
    size_t n = 0;
    std::vector<Expr> xi, yi;
    if (xr == 2) xi.push_back(idx[n++]);
    Expr j = yr == 2 ? idx[n++] : nullptr;
    Expr k = idx[n];
    xi.push_back(k);
    yi.push_back(k);
    if (j) yi.push_back(j);
    return binary(ast::BinOpKind::Mult, x->element(xi, sink), y->element(yi, sink), loc);
  };
  return reduce_axes("dot", p, {static_cast<int>(p->rank() - 1)}, false, loc);
}

// ================================================================ loop nests

std::vector<Stmt> Lowerer::build_nest(const std::vector<LoopDim>& dims, Sink& inner, std::vector<Stmt> innermost,
                                      Sink& outer) {
  // The level of a group: 1 + the deepest loop whose index it reads, and no
  // less than any earlier group whose results it reads.
  std::vector<size_t> level(inner.groups.size(), 0);
  std::vector<ir::VarSet> writes(inner.groups.size());
  for (size_t g = 0; g < inner.groups.size(); ++g) {
    analysis::VarUses u;
    for (const auto& s : inner.groups[g]) {
      analysis::VarUses su = analysis::uses_of(s);
      u.reads.insert(su.reads.begin(), su.reads.end());
      u.writes.insert(su.writes.begin(), su.writes.end());
    }
    writes[g] = u.writes;
    for (size_t d = 0; d < dims.size(); ++d)
      if (u.reads.count(dims[d].var.get())) level[g] = std::max(level[g], d + 1);
    for (size_t h = 0; h < g; ++h)
      for (const auto* w : writes[h])
        if (u.reads.count(w)) level[g] = std::max(level[g], level[h]);
  }
  std::vector<Stmt> body = std::move(innermost);
  for (size_t d = dims.size(); d-- > 0;) {
    std::vector<Stmt> here;
    for (size_t g = 0; g < inner.groups.size(); ++g)
      if (level[g] == d + 1) here.insert(here.end(), inner.groups[g].begin(), inner.groups[g].end());
    here.insert(here.end(), body.begin(), body.end());
    ir::LoopSchedule sched = dims[d].schedule;
    // A vector loop whose body holds loops would not vectorise: keep those in
    // order (their own inner loops are vectorised instead).
    bool has_loop = false;
    for (const auto& s : here) has_loop = has_loop || s->as<ir::For>() || s->as<ir::Block>();
    if (has_loop && ir::is_vectorized(sched.kind))
      sched.kind = ir::is_parallel(sched.kind) ? ir::LoopKind::Parallel : ir::LoopKind::Serial;
    Stmt loop = ir::For::make(dims[d].var, int_imm(0, dims[d].extent->loc), dims[d].extent,
                              int_imm(1, dims[d].extent->loc), ir::Block::make(here, dims[d].extent->loc), sched,
                              dims[d].extent->loc);
    body = {loop};
  }
  for (size_t g = 0; g < inner.groups.size(); ++g)
    if (level[g] == 0) outer.groups.push_back(inner.groups[g]);
  return body;
}

void Lowerer::parse_statement_pragmas(const ast::Stmt& stmt) {
  sliced_pragmas_.clear();
  statement_sequential_ = false;
  for (const auto& p : stmt.pragmas) {
    if (p.text == "sequential") {
      statement_sequential_ = true;
      continue;
    }
    if (p.text.find("=>") == std::string::npos) continue;
    // Entries look like `:M=>parallel` or `1:N-1=>parallel,simd`, separated
    // by spaces outside parentheses.
    const std::string& text = p.text;
    size_t pos = 0;
    while (pos < text.size()) {
      while (pos < text.size() && text[pos] == ' ') ++pos;
      size_t end = pos;
      int depth = 0;
      while (end < text.size() && (text[end] != ' ' || depth > 0)) {
        depth += text[end] == '(' ? 1 : text[end] == ')' ? -1 : 0;
        ++end;
      }
      std::string entry = text.substr(pos, end - pos);
      pos = end;
      if (entry.empty()) continue;
      size_t arrow = entry.find("=>");
      if (arrow == std::string::npos)
        fail(ErrorKind::Pragma, "each entry of a sliced-index pragma looks like ':N=>parallel', got '" + entry + "'", p.loc);
      SlicedPragma sp;
      sp.loc = p.loc;
      std::string props = entry.substr(arrow + 2);
      size_t q = 0;
      while (q <= props.size()) {
        size_t comma = q;
        int dep = 0;
        while (comma < props.size() && (props[comma] != ',' || dep > 0)) {
          dep += props[comma] == '(' ? 1 : props[comma] == ')' ? -1 : 0;
          ++comma;
        }
        std::string prop = props.substr(q, comma - q);
        q = comma + 1;
        if (prop.empty()) fail(ErrorKind::Pragma, "empty property in '" + entry + "'", p.loc);
        const size_t open = prop.find('(');
        std::string word = prop.substr(0, open);
        static const std::set<std::string> kKnown = {"parallel", "simd", "block", "reduce", "single_block", "le"};
        if (!kKnown.count(word))
          fail(ErrorKind::Pragma,
               "unknown property '" + word + "' (known: parallel, simd, block(N), reduce(op), single_block, le(N))", p.loc);
        const int size = check_property_argument(
            word, open == std::string::npos ? std::nullopt : std::optional<std::string>(prop.substr(open)), p.loc);
        sp.props.push_back(
            {word, open == std::string::npos ? "" : prop.substr(open + 1, prop.size() - open - 2), size});
      }
      sliced_pragmas_[entry.substr(0, arrow)] = sp;
    }
  }
}

// A sliced-pragma property's argument, `(...)` after its name or none:
// block(N) and le(N) take a positive integer literal below 10**9 (returned),
// reduce(op) an operator (checked against the statement's reduction where it
// is used), the others nothing (0 returned for all of these).
int Lowerer::check_property_argument(const std::string& word, const std::optional<std::string>& argument,
                                     SourceLoc loc) const {
  const bool sized = word == "block" || word == "le";
  if (!argument) {
    if (sized) fail(ErrorKind::Pragma, "'" + word + "' takes a size: " + word + "(N), N a positive integer", loc);
    return 0;
  }
  if (argument->size() < 2 || argument->back() != ')')
    fail(ErrorKind::Pragma, "'" + word + *argument + "' is not closed by ')'", loc);
  if (word == "reduce") return 0;
  if (!sized) fail(ErrorKind::Pragma, "'" + word + "' takes no argument, got '" + word + *argument + "'", loc);
  const std::string digits = argument->substr(1, argument->size() - 2);
  const bool literal = !digits.empty() && digits.size() <= 9 &&
                       std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  const int size = literal ? std::stoi(digits) : 0;
  if (size <= 0) fail(ErrorKind::Pragma, "'" + word + *argument + "': N must be a positive integer below 10**9", loc);
  return size;
}

ir::LoopSchedule Lowerer::apply_sliced_pragma(const LoopDim& dim, ir::LoopSchedule sched, const std::string& reduce_name) {
  schedule_pragma_used_ = true;
  auto it = sliced_pragmas_.find(dim.label);
  if (it == sliced_pragmas_.end()) return sched;
  SlicedPragma& sp = it->second;
  sp.used = true;
  sched.pragma_loc = sp.loc;
  bool par = false, vec = false;
  for (const SlicedProperty& prop : sp.props) {
    if (prop.word == "parallel") {
      par = true;
    } else if (prop.word == "reduce") {
      if (!dim.reduction)
        fail(ErrorKind::Pragma, "'" + dim.label + "' is not a reduced dimension of this statement", sp.loc);
      const std::string op = prop.argument.substr(0, prop.argument.find(':'));
      if (op != reduce_name && !(op == "sum" && (reduce_name == "mean" || reduce_name == "dot")))
        fail(ErrorKind::Pragma, "'" + dim.label + "' is reduced with " + reduce_name + " in this statement, not " + op,
             sp.loc);
    } else {
      // simd; block(N), le(N) and single_block vectorise the dimension
      // (docs/language.md); the CUDA back end sizes its teams and blocks
      // from their N (docs/cuda.md, "Sizes from the pragmas").
      vec = true;
      if (prop.word == "block") sched.block_strip = prop.size;
      if (prop.word == "le") sched.most_trips = prop.size;
      if (prop.word == "single_block") sched.single_block = true;
    }
  }
  if (dim.reduction && !dim.vectorizable) vec = false;
  sched.kind = par && vec ? ir::LoopKind::ParallelVectorized
               : par      ? ir::LoopKind::Parallel
               : vec      ? ir::LoopKind::Vectorized
                          : ir::LoopKind::Serial;
  return sched;
}

void Lowerer::check_sliced_pragmas_used() {
  for (const auto& [label, sp] : sliced_pragmas_)
    if (!sp.used) fail(ErrorKind::Pragma, "the dimension '" + label + "' does not appear as a slice in this statement", sp.loc);
}

void Lowerer::assign_tensor(const TensorPtr& target, const TensorPtr& value_in, std::vector<Stmt>& out, SourceLoc loc,
                            const ast::Stmt* stmt) {
  if (!target->array) PLAIT_INTERNAL_ERROR("assignment target is not a view");
  TensorPtr value = value_in;
  if (value->rank() > target->rank())
    fail(ErrorKind::Value, "could not broadcast an array of " + std::to_string(value->rank()) +
                               " dimensions into a target of " + std::to_string(target->rank()),
         loc);
  // NumPy evaluates the right side before it stores. When the right side
  // reads the target's array other than at the element being written, the
  // nest must not see its own stores there: either the views that read those
  // elements are copied first (snapshots, when they are small: a row and a
  // column of the target), or the whole value goes through a temporary.
  bool overlap = false;
  std::vector<std::shared_ptr<ViewSnapshot>> snapshots;
  for (const auto& read : value->reads) {
    if (read.array != target->array) continue;
    bool same_elements = read.node && target->source &&
                         (same_tree(read.node, target->source) ||
                          (whole_array_syntax(read.node) && whole_array_syntax(target->source)));
    if (same_elements) continue;
    overlap = true;
    if (std::find(snapshots.begin(), snapshots.end(), read.via) == snapshots.end()) snapshots.push_back(read.via);
  }
  double snapshot_cost = 0;
  for (const auto& snap : snapshots) snapshot_cost += estimated_elements(snap->view->shape);
  const bool use_snapshots = overlap && snapshot_cost < estimated_elements(target->shape);
  if (use_snapshots && !inferring_) {
    std::string what;
    for (const auto& snap : snapshots) {
      snap->copy = materialize(snap->view, out, loc, nullptr);
      std::string text = snap->node ? source_text(snap->node->loc) : "";
      what += (what.empty() ? "'" : ", '") + (text.empty() ? target->array->name : text) + "'";
    }
    function_remarks_.push_back({loc, "lower_array_exprs",
                                 "the right side reads '" + target->array->name +
                                     "' at other elements than it writes, through " + what +
                                     ": copied into small temporaries first (not the whole right side)"});
  } else if (overlap && !inferring_) {
    ir::ArrayVar tmp = materialize(value, out, loc, nullptr);
    Value v = Value::of_array(tmp, loc);
    value = to_tensor(v, loc);
    function_remarks_.push_back({loc, "lower_array_exprs",
                                 "the right side reads '" + target->array->name +
                                     "' where it is also written: it is computed into a temporary first"});
  }
  // Another array that may share memory with the target (two arguments
  // that are views of one buffer, `f(g[1:], g[:-1])`) escapes the test
  // above, which compares names. The statement is versioned on a run-time
  // test of whether their memory overlaps: the nest as it stands when it
  // does not (the usual case), the right side through a temporary when it
  // does. A read at the elements it writes (`a[:] = b + 1.0`) is safe when
  // the two are one view: the test leaves that case to the nest. Inside a
  // parallel or simd loop the user promises independent iterations, and a
  // copy allocated per iteration would cost (and on the GPU need a size the
  // host computes): no test there.
  Expr shares_memory;
  std::string sharing;
  if (!inferring_ && parallel_depth_ == 0 && may_alias_argument(target->array.get())) {
    std::set<std::pair<const ir::ArrayInfo*, bool>> tested;
    for (const auto& read : value->reads) {
      if (read.array == target->array || !may_alias_argument(read.array.get())) continue;
      const bool same_elements = read.node && target->source && same_subscripts(read.node, target->source);
      if (!tested.insert({read.array.get(), same_elements}).second) continue;
      Expr test = ir::ArraysOverlap::make(target->array, read.array, same_elements, loc);
      shares_memory = shares_memory ? ir::Logical::make(ir::LogicalOp::Or, shares_memory, test, loc) : test;
      if (sharing.find("'" + read.array->name + "'") == std::string::npos)
        sharing += (sharing.empty() ? "'" : ", '") + read.array->name + "'";
    }
  }
  size_t offset = target->rank() - value->rank();
  std::vector<ir::Var> flags(value->rank());
  for (size_t d = 0; d < value->rank(); ++d) {
    const Expr& te = target->shape[d + offset];
    const Expr& ve = value->shape[d];
    if (value->unit[d] || same_expr(te, ve) || inferring_) continue;
    out.push_back(ir::Assert::make(
        ir::Logical::make(ir::LogicalOp::Or, ir::Compare::make(ir::CompareOp::EQ, te, ve, loc),
                          ir::Compare::make(ir::CompareOp::EQ, ve, int_imm(1, loc), loc), loc),
        PLAIT_VALUE_ERROR, "could not broadcast the value into the target's shape (extents differ)", loc));
    flags[d] = broadcast_flag(ve, te, out, loc);
  }
  std::vector<LoopDim> dims;
  std::vector<Expr> idx;
  for (size_t d = 0; d < target->rank(); ++d) {
    LoopDim dim;
    dim.extent = target->shape[d];
    dim.label = target->labels[d];
    if (dim.label.empty() && d >= offset) dim.label = value->labels[d - offset];
    // A dimension of extent 1 (the kept axis of a keepdims reduction) needs
    // no loop, unless a sliced-index pragma names it.
    if (is_const(dim.extent, 1) && !sliced_pragmas_.count(dim.label)) {
      idx.push_back(int_imm(0, loc));
      continue;
    }
    dim.var = temp_var(ScalarType::py_int(), loc);
    dim.var->name = "_i" + dim.var->name.substr(4);
    idx.push_back(ir::VarRef::make(dim.var, loc));
    dims.push_back(dim);
  }
  // Default: the outermost loop runs in parallel (the back end starts
  // threads only when the work pays for them), the innermost is vectorised.
  // On the GPU every dimension but the innermost is parallel: the nest
  // collapses into one grid of workers (a matrix product's rows and
  // columns, a 4-D softmax's rows), where the outermost extent alone can be
  // a few workers. A sliced-index pragma replaces that for the dimensions
  // it names.
  const bool gpu = options_.target == Target::CUDA;
  for (size_t d = 0; d < dims.size(); ++d) {
    bool par = (d == 0 || (gpu && d + 1 < dims.size())) && !statement_sequential_ && sliced_pragmas_.empty();
    bool vec = d + 1 == dims.size() && sliced_pragmas_.empty();
    dims[d].schedule.kind = par && vec ? ir::LoopKind::ParallelVectorized
                            : par      ? ir::LoopKind::Parallel
                            : vec      ? ir::LoopKind::Vectorized
                                       : ir::LoopKind::Serial;
    dims[d].schedule = apply_sliced_pragma(dims[d], dims[d].schedule, "");
  }
  if (options_.auto_simd && !sliced_pragmas_.empty() && !dims.empty()) {
    ir::LoopSchedule& inner = dims.back().schedule;
    if (!ir::is_vectorized(inner.kind))
      inner.kind = ir::is_parallel(inner.kind) ? ir::LoopKind::ParallelVectorized : ir::LoopKind::Vectorized;
  }
  // Appends the nest storing `from` (the value, or its copy) into the
  // target; its loops go to `nest_dims`. Returns whether an element
  // computes loops of its own (reductions).
  auto store_nest = [&](const TensorPtr& from, std::vector<Stmt>& into, std::vector<LoopDim>& nest_dims) {
    nest_dims = dims;
    std::vector<Expr> vidx;
    for (size_t d = 0; d < from->rank(); ++d)
      vidx.push_back(from->unit[d] ? int_imm(0, loc) : broadcast_index(flags[d], idx[d + offset], loc));
    Sink inner;
    Expr e = from->element(vidx, inner);
    // On the GPU an element computed by a loop of its own (a reduction along
    // an axis) makes the innermost dimension parallel too: that loop is the
    // worker's inner loop, as the innermost dimension is for an elementwise
    // statement, so the nests of `m = x.max(axis=-1, keepdims=True)` and
    // `e = np.exp(x - m)` keep the same parallel levels and fuse.
    if (gpu && !nest_dims.empty() && !statement_sequential_ && sliced_pragmas_.empty()) {
      bool has_loop = false;
      for (const auto& group : inner.groups)
        for (const Stmt& st : group) has_loop = has_loop || st->as<ir::For>() != nullptr;
      if (has_loop) nest_dims.back().schedule.kind = ir::LoopKind::Parallel;
    }
    ScalarType elem{target->array->type.dtype, false};
    Stmt store = ir::Store::make(target->array, target->array_index(idx), cast(e, elem, true), false, loc);
    Sink outer;
    std::vector<Stmt> nest = build_nest(nest_dims, inner, {store}, outer);
    for (auto& g : outer.groups) into.insert(into.end(), g.begin(), g.end());
    into.insert(into.end(), nest.begin(), nest.end());
    return !inner.groups.empty();
  };
  std::vector<LoopDim> nest_dims;
  bool reduces = false;
  if (shares_memory) {
    ir::Var flag = temp_var(ScalarType::b1(), loc);
    flag->name = "_overlap" + flag->name.substr(4);
    out.push_back(ir::Assign::make(flag, shares_memory, loc));
    std::vector<Stmt> copied, direct;
    ir::ArrayVar copy = materialize(value, copied, loc, nullptr);
    std::vector<LoopDim> copy_dims;
    store_nest(to_tensor(Value::of_array(copy, loc), loc), copied, copy_dims);
    reduces = store_nest(value, direct, nest_dims);
    out.push_back(ir::If::make(ir::VarRef::make(flag, loc), ir::Block::make(copied, loc), ir::Block::make(direct, loc),
                               loc));
    function_remarks_.push_back({loc, "lower_array_exprs",
                                 "'" + target->array->name + "' and " + sharing +
                                     " may share memory (arguments can be views of one array): a run-time test of "
                                     "their memory picks the right side through a temporary when they overlap, the "
                                     "loop nest below when not"});
  } else {
    reduces = store_nest(value, out, nest_dims);
  }
  if (use_snapshots)
    for (const auto& snap : snapshots) snap->copy = nullptr;
  std::string shape;
  for (size_t d = 0; d < nest_dims.size(); ++d) {
    const char* kind = ir::loop_kind_name(nest_dims[d].schedule.kind);
    shape += (d ? ", " : "") + std::string(kind) + (nest_dims[d].label.empty() ? "" : " " + nest_dims[d].label);
  }
  function_remarks_.push_back({loc, "lower_array_exprs",
                               "array statement -> one loop nest over '" + target->array->name + "' [" + shape + "]" +
                                   (reduces ? "; reductions computed inside it, hoisted to the loop they depend on"
                                            : "")});
}

ir::ArrayVar Lowerer::materialize(const TensorPtr& t, std::vector<Stmt>& out, SourceLoc loc, const ast::Stmt* stmt) {
  if (t->rank() == 0) unsupported("a 0-dimensional array result is not supported", loc);
  ArrayType at;
  at.dtype = t->type.kind;
  at.ndim = static_cast<int>(t->rank());
  at.layout = Layout::C;
  ir::ArrayVar tmp = temp_array(at, loc);
  array_units_[tmp] = t->unit;
  if (inferring_) return tmp;
  out.push_back(ir::Allocate::make(tmp, t->shape, ir::FillKind::Uninitialized, nullptr, loc));
  // The new array's extents are the expression's own, which spares the
  // store any broadcast check.
  auto target = std::make_shared<Tensor>(*to_tensor(Value::of_array(tmp, loc), loc));
  target->shape = t->shape;
  target->labels = t->labels;
  assign_tensor(target, t, out, loc, stmt);
  return tmp;
}

// ================================================================ calls on arrays

bool Lowerer::call_numpy_array(const std::string& fn, const ast::Call& c, const std::vector<Value>& args, Value* out) {
  static const std::set<std::string> kReductions = {"sum", "prod", "max", "min", "amax", "amin", "mean", "argmax", "argmin"};
  bool any_array = false;
  for (const auto& a : args) any_array = any_array || is_array_like(a);
  if (kReductions.count(fn)) {
    if (args.empty()) type_error("numpy." + fn + "() needs an array", c.loc);
    std::string name = fn == "amax" ? "max" : fn == "amin" ? "min" : fn;
    if (!is_array_like(args[0])) return false;
    *out = reduce(name, args[0], c, 1);
    return true;
  }
  static const std::map<std::string, ast::BinOpKind> kOuter = {
      {"add.outer", ast::BinOpKind::Add}, {"subtract.outer", ast::BinOpKind::Sub}, {"multiply.outer", ast::BinOpKind::Mult}};
  if (fn == "outer" || kOuter.count(fn)) {
    if (args.size() != 2) type_error("numpy." + fn + "() takes two arrays", c.loc);
    TensorPtr a = to_tensor(args[0], c.loc), b = to_tensor(args[1], c.loc);
    if (a->rank() != 1 || b->rank() != 1) unsupported("numpy." + fn + "() of arrays that are not 1-D", c.loc);
    // a as a column (n, 1) and b as a row (1, m), then broadcast.
    auto column = std::make_shared<Tensor>(*a);
    column->shape.push_back(int_imm(1, c.loc));
    column->unit.push_back(true);
    column->labels.push_back("");
    column->element = [a](const std::vector<Expr>& idx, Sink& sink) { return a->element({idx[0]}, sink); };
    column->array = nullptr;
    auto row = std::make_shared<Tensor>(*b);
    row->shape.insert(row->shape.begin(), int_imm(1, c.loc));
    row->unit.insert(row->unit.begin(), true);
    row->labels.insert(row->labels.begin(), "");
    row->element = [b](const std::vector<Expr>& idx, Sink& sink) { return b->element({idx[1]}, sink); };
    row->array = nullptr;
    *out = tensor_binary(fn == "outer" ? ast::BinOpKind::Mult : kOuter.at(fn), Value::of_tensor(column, c.loc),
                         Value::of_tensor(row, c.loc), c.loc);
    return true;
  }
  if (fn == "dot" || fn == "matmul") {
    if (args.size() != 2) type_error("numpy." + fn + "() takes two arrays", c.loc);
    *out = matmul(args[0], args[1], c.loc);
    return true;
  }
  if (fn == "transpose") {
    if (args.size() != 1) unsupported("numpy.transpose() with axes is not supported", c.loc);
    *out = transpose(args[0], c.loc);
    return true;
  }
  if (fn == "copy") {
    if (args.size() != 1) type_error("numpy.copy() takes one array", c.loc);
    TensorPtr t = to_tensor(args[0], c.loc);
    auto copy = std::make_shared<Tensor>(*t);
    copy->array = nullptr;  // a new array, not a view
    *out = Value::of_tensor(copy, c.loc);
    return true;
  }
  if (!any_array) return false;
  // Elementwise NumPy functions of arrays: the scalar rule applied per element.
  *out = elementwise(args,
                     [this, fn, &c](const std::vector<Expr>& e) {
                       std::vector<Value> scalars;
                       for (const auto& x : e) scalars.push_back(Value::of(x));
                       Value v = call_numpy(fn, c, scalars);
                       return as_scalar(v, "an elementwise function", c.loc);
                     },
                     c.loc);
  // The closure above refers to `c`, which lives as long as the syntax tree.
  return true;
}

Value Lowerer::call_array_method(const std::string& method, const Value& self, const ast::Call& c) {
  static const std::set<std::string> kReductions = {"sum", "prod", "max", "min", "mean", "argmax", "argmin"};
  if (kReductions.count(method)) return reduce(method, self, c, 0);
  if (method == "copy") {
    TensorPtr t = to_tensor(self, c.loc);
    auto copy = std::make_shared<Tensor>(*t);
    copy->array = nullptr;
    return Value::of_tensor(copy, c.loc);
  }
  if (method == "astype") {
    if (c.args.size() != 1) type_error("astype() takes a dtype", c.loc);
    ScalarKind k = dtype_arg(lower(*c.args[0]), c.args[0]->loc);
    ScalarType t{k, false};
    return elementwise({self}, [this, t, &c](const std::vector<Expr>& e) {
      return t.is_bool() ? cast(truthy(e[0], c.loc), t) : cast(e[0], t);
    }, c.loc);
  }
  if (method == "transpose") return transpose(self, c.loc);
  unsupported("the array method ." + method + "() is not supported", c.loc);
}

}  // namespace plait::lowering
