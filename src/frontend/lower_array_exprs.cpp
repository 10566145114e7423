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
#include "frontend/array_lowering.h"

namespace plait::lowering {

Expr Lowerer::placeholder(ScalarType t) {
  auto v = std::make_shared<ir::VarInfo>();
  v->name = "_elem";
  v->type = t;
  return ir::VarRef::make(v);
}

// ================================================================ tensors from values

std::string Lowerer::source_text(SourceLoc l) const {
  std::string line = file_.line_text(l.line);
  std::string s =
      l.end_line == l.line && l.end_col <= static_cast<int>(line.size()) ? line.substr(l.col, l.end_col - l.col) : "";
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

TensorPtr Lowerer::array_view(const TensorPtr& base, const ast::Expr* index, const ast::Expr* source, SourceLoc loc,
                              const LoweredParts* lowered) {
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
  // An integer array among the parts (a gather): the view takes its axis
  // whole, and gather() then indexes that axis with the array.
  TensorPtr gather_index;
  size_t gather_part = 0, gather_axis = 0;
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
    if (auto at = part->as<ast::Attribute>(); at && at->attr == "newaxis")
      new_axis = lower(*part).kind == Value::Kind::None;
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
    auto found = lowered ? lowered->find(part) : LoweredParts::const_iterator{};
    Value iv = lowered && found != lowered->end() ? found->second : lower(*part);
    if (is_array_like(iv)) {
      gather_index = gather_index_tensor(iv, gather_index != nullptr, part->loc);
      gather_part = mapped.size();
      gather_axis = 0;
      for (const Part& p : mapped) gather_axis += p.kind == Part::Fixed ? 0 : 1;
      mapped.push_back(Part{Part::Range, int_imm(0, part->loc), 1, n, ""});
      ++base_dim;
      continue;
    }
    Expr i = as_scalar(iv, "an index", part->loc);
    if (!i->type.is_int()) type_error("array indices must be integers, got " + describe(i->type), part->loc);
    // Python's negative indices are left to transforms/normalize_indices,
    // which wraps each index once where the bounds checks then see it (a
    // second wrap here would take an index below -n into range).
    i = cast(i, ScalarType::py_int());
    mapped.push_back(Part{Part::Fixed, i, 1, nullptr, ""});
    ++base_dim;
  }
  while (base_dim < base->rank()) {
    mapped.push_back(Part{Part::Range, int_imm(0, loc), 1, base->shape[base_dim], ""});
    ++base_dim;
  }
  // NumPy's rule for one array index: its dimensions replace its axis in
  // place, unless integers (advanced indices too) stand apart from it, past
  // a slice or None: then they come first.
  bool gather_first = false;
  if (gather_index) {
    size_t first = mapped.size(), last = 0;
    for (size_t k = 0; k < parts.size() && k < mapped.size(); ++k) {
      if (mapped[k].kind != Part::Fixed && k != gather_part) continue;
      first = std::min(first, k);
      last = std::max(last, k);
    }
    for (size_t k = first; k < last; ++k)
      gather_first = gather_first || (mapped[k].kind != Part::Fixed && k != gather_part);
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
        case Part::NewAxis:
          ++k;
          break;
        case Part::Fixed:
          out.push_back(p.value);
          break;
        case Part::Range:
          out.push_back(add(p.value, mul(idx[k++], int_imm(p.step, loc), loc), loc));
          break;
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
    t->not_assignable = base->not_assignable;  // a slice of a reshape is one too
    t->source = source;
    TensorPtr view = snapshot_able(t, source, loc);
    return gather_index ? gather(view, gather_axis, gather_index, gather_first, loc) : view;
  }
  return gather_index ? gather(t, gather_axis, gather_index, gather_first, loc) : t;
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
        broadcast = is_const(broadcast, 1)
                        ? e
                        : ir::Select::make(ir::Compare::make(ir::CompareOp::EQ, broadcast, int_imm(1, loc), loc), e,
                                           broadcast, loc);
      }
      broadcast = named_if_large(broadcast, loc);
      for (size_t a : operands) {
        Expr e = extent_of(a);
        if (same_expr(e, broadcast)) continue;
        pending_.push_back(ir::Assert::make(
            ir::Logical::make(ir::LogicalOp::Or, ir::Compare::make(ir::CompareOp::EQ, e, broadcast, loc),
                              ir::Compare::make(ir::CompareOp::EQ, e, int_imm(1, loc), loc), loc),
            PLAIT_VALUE_ERROR, "operands could not be broadcast together (dimension " + std::to_string(d) + " differs)",
            loc));
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
      for (size_t d = 0; d < x->rank(); ++d)
        xi.push_back(x->unit[d] ? int_imm(0, loc) : broadcast_index(flags[a][d], idx[d + offset], loc));
      elems.push_back(x->element(xi, sink));
    }
    return op(elems);
  };
  return Value::of_tensor(t, loc);
}

Value Lowerer::tensor_binary(ast::BinOpKind op, const Value& a, const Value& b, SourceLoc loc) {
  if (op == ast::BinOpKind::MatMult) return matmul(a, b, loc);
  return elementwise(
      {a, b}, [this, op, loc](const std::vector<Expr>& e) { return binary(op, e[0], e[1], loc); }, loc);
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

}  // namespace plait::lowering
