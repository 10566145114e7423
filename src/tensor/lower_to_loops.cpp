// Values, loops, statements and nests of the lowering (lowering.h).
#include "tensor/lower_to_loops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "ir/ir_visitor.h"
#include "tensor/cost.h"
#include "tensor/lowering.h"

namespace plait::tensor {

namespace detail {

using ir::Expr;
using ir::Stmt;

Expr int_imm(int64_t v, SourceLoc loc) {
  return ir::IntImm::make(v, ScalarType::py_int(), loc);
}

Expr as_index(Expr e, SourceLoc loc) {
  if (e->type == ScalarType::py_int()) return e;
  return ir::Cast::make(ScalarType::py_int(), std::move(e), false, loc);
}

Expr add(Expr a, Expr b, SourceLoc loc) {
  return ir::Binary::make(ir::BinaryOp::Add, std::move(a), std::move(b), ScalarType::py_int(), false, loc);
}

Expr ref(const ir::Var& v, SourceLoc loc) {
  return ir::VarRef::make(v, loc);
}

Expr identity(ir::ReduceOp op, ScalarType t, SourceLoc loc) {
  switch (op) {
    case ir::ReduceOp::Add:
      return t.is_float() ? ir::FloatImm::make(0.0, t, loc) : ir::IntImm::make(0, t, loc);
    case ir::ReduceOp::Mul:
      return t.is_float() ? ir::FloatImm::make(1.0, t, loc) : ir::IntImm::make(1, t, loc);
    case ir::ReduceOp::Max:
      return ir::FloatImm::make(-INFINITY, t, loc);
    case ir::ReduceOp::Min:
      return ir::FloatImm::make(INFINITY, t, loc);
  }
  return nullptr;
}

namespace {

// Whether a loop's body may run in SIMD lanes: it holds no loop, and each
// store writes an element of its own iteration, indexed by the loop's
// variable or (a canonical pattern's columns being distinct in a row) by the
// coordinate it reads. Scalars are sums (transforms/detect_reductions
// records them) or written before they are read.
bool lanes_independent(const std::vector<ir::Stmt>& body, const ir::Var& v, const ir::Var& c) {
  struct Scan : ir::IRVisitor {
    const ir::VarInfo* own[2];
    bool ok = true;
    using IRVisitor::visit;
    void visit(const ir::For*) override { ok = false; }
    void visit(const ir::While*) override { ok = false; }
    void visit(const ir::Store* s) override {
      bool indexed = false;
      for (const ir::Expr& i : s->indices)
        if (auto r = i->as<ir::VarRef>(); r && (r->var.get() == own[0] || r->var.get() == own[1])) indexed = true;
      ok = ok && indexed;
      IRVisitor::visit(s);
    }
  } scan;
  scan.own[0] = v.get();
  scan.own[1] = c ? c.get() : nullptr;
  for (const ir::Stmt& s : body) scan.visit(s);
  return scan.ok;
}

ir::BinaryOp combine(ir::ReduceOp op) {
  switch (op) {
    case ir::ReduceOp::Add:
      return ir::BinaryOp::Add;
    case ir::ReduceOp::Mul:
      return ir::BinaryOp::Mul;
    case ir::ReduceOp::Max:
      return ir::BinaryOp::Max;
    case ir::ReduceOp::Min:
      return ir::BinaryOp::Min;
  }
  return ir::BinaryOp::Add;
}

}  // namespace

std::vector<Stmt> Lowering::run() {
  std::vector<Stmt> out;
  for (const Nest& nest : plan_.nests) lower_nest(nest, out);
  return out;
}

ir::Var Lowering::new_var(ScalarType t, const std::string& hint) {
  auto v = std::make_shared<ir::VarInfo>();
  v->name = names_(hint);
  v->type = t;
  v->loc = loc_;
  return v;
}
ir::ArrayVar Lowering::new_array(ArrayType t, const std::string& hint) {
  auto a = std::make_shared<ir::ArrayInfo>();
  a->name = names_(hint);
  a->type = t;
  a->loc = loc_;
  return a;
}

// ---------------------------------------------------------------- positions and values

// The position of level k of t's access `vars` (its parent positions bound).
Expr Lowering::position(const TensorVar& t, const std::vector<IndexVar>& vars, int k) {
  if (t.format.levels[k] == LevelKind::Compressed) {
    auto it = positions_.find(t.crd[k].get());
    if (it == positions_.end())
      throw Refusal{loc_, "internal: the stored entries of '" + t.name + "' are read outside their loop"};
    return it->second;
  }
  Expr coord = coordinate(vars[t.format.mode_order[k]]);
  if (k == 0) return coord;
  Expr parent = position(t, vars, k - 1);
  Expr scaled = ir::Binary::make(ir::BinaryOp::Mul, parent, as_index(t.shape[t.format.mode_order[k]], loc_),
                                 ScalarType::py_int(), false, loc_);
  return add(scaled, coord, loc_);
}

Expr Lowering::coordinate(const IndexVar& v) {
  if (!v.valid()) return int_imm(0, loc_);
  auto it = coords_.find(v.id);
  if (it == coords_.end()) throw Refusal{loc_, "internal: index variable " + v.name + " is not bound"};
  return it->second;
}

Expr Lowering::load(const IndexExprNode& a) {
  const TensorVar& t = *a.tensor;
  if (t.rank() == 0 && t.scalar) return t.scalar;
  auto local = storage_.find(&t);
  if (local != storage_.end()) return load_output(t, local->second, a.vars);
  if (t.is_sparse()) {
    const int last = t.format.rank() - 1;
    Expr v = ir::Load::make(t.values, {position(t, a.vars, last)}, false, loc_);
    // An operand of a merge reads zero where it stores no value.
    auto present = present_.find(t.crd[last].get());
    if (present == present_.end()) return v;
    return ir::Select::make(present->second, v, identity(ir::ReduceOp::Add, t.type, loc_), loc_);
  }
  if (auto copy = transposed_.find(&t); copy != transposed_.end())
    return ir::Load::make(copy->second, {coordinate(a.vars[1]), coordinate(a.vars[0])}, false, loc_);
  std::vector<Expr> idx;
  for (size_t d = 0; d < a.vars.size(); ++d) {
    Expr c = coordinate(a.vars[d]);
    if (d < a.broadcast.size() && a.broadcast[d]) c = ir::Select::make(a.broadcast[d], int_imm(0, loc_), c, loc_);
    idx.push_back(c);
  }
  return ir::Load::make(t.values, idx, false, loc_);
}

std::vector<Expr> Lowering::output_index(const TensorVar& t, const OutputStorage& s,
                                         const std::vector<IndexVar>& vars) {
  if (t.is_sparse()) return {position(t, vars, t.format.rank() - 1)};
  std::vector<Expr> idx;
  for (size_t d = 0; d < vars.size(); ++d)
    if (s.kept.empty() || s.kept[d]) idx.push_back(coordinate(vars[d]));
  return idx;
}

Expr Lowering::load_output(const TensorVar& t, const OutputStorage& s, const std::vector<IndexVar>& vars) {
  if (s.scalar) return ir::VarRef::make(s.scalar, loc_);
  return ir::Load::make(s.array, output_index(t, s, vars), false, loc_);
}

// The value of e; statements it needs first (the loops of its sums) go to `pre`.
Expr Lowering::value(const IndexExpr& e, std::vector<Stmt>& pre) {
  switch (e->kind) {
    case ExprKind::Access:
      return load(*e);
    case ExprKind::Literal:
      return e->literal;
    case ExprKind::Cast:
      return ir::Cast::make(e->type, value(e->a, pre), false, loc_);
    case ExprKind::Unary:
      return ir::Unary::make(e->unary, value(e->a, pre), loc_);
    case ExprKind::Binary: {
      Expr a = value(e->a, pre);
      Expr b = value(e->b, pre);
      return ir::Binary::make(e->binary, a, b, e->type, false, loc_);
    }
    case ExprKind::Call:
      return ir::Call::make(e->fn, {value(e->a, pre)}, e->type, false, loc_);
    case ExprKind::Reduce:
      return reduction(*e, pre);
  }
  return nullptr;
}

Expr Lowering::reduction(const IndexExprNode& r, std::vector<Stmt>& pre) {
  ir::Var acc = new_var(r.type, "_acc");
  pre.push_back(ir::Assign::make(acc, identity(r.reduce, r.type, loc_), loc_));
  Loop loop;
  loop.var = r.var;
  LevelChoice level = compressed_level(r.a, r.var, bound_, loc_);
  loop.tensor = level.tensor;
  loop.level = level.level;
  if (!loop.tensor) loop.extent = extent_of(r.a, r.var);
  if (!loop.tensor && !loop.extent) throw Refusal{loc_, "internal: no extent for " + r.var.name};
  auto add_term = [&](std::vector<Stmt>& body) {
    Expr x = value(r.a, body);
    Expr next = ir::Binary::make(combine(r.reduce), ir::VarRef::make(acc, loc_), x, r.type, false, loc_);
    body.push_back(ir::Assign::make(acc, next, loc_));
  };
  Stmt sum = make_loop(loop, add_term);
  const ir::For* f = sum->as<ir::For>();
  if (target_ == Target::CPU && loop.positions() && f->schedule.kind == ir::LoopKind::Vectorized) {
    // A row's stored entries in SIMD lanes only when the row is long: the
    // lanes' private sums are set to zero and added up once per row (GCC's
    // `omp simd` reduction: an array in memory and a serial sum of its
    // lanes), about 70 cycles, more than a short row's whole sum (spmv on
    // rows of 5 entries ran 5x slower than SciPy's serial loop). The short
    // rows' loop is made afresh (its own variables, which the range
    // analysis follows as it follows the first loop's).
    constexpr int64_t kSimdEntries = 32;
    Stmt serial = make_loop(loop, add_term);
    const ir::For* g = serial->as<ir::For>();
    serial = ir::For::make(g->var, g->begin, g->end, g->step, g->body, ir::LoopSchedule{}, g->loc);
    Expr length = ir::Binary::make(ir::BinaryOp::Sub, f->end, f->begin, ScalarType::py_int(), false, loc_);
    sum = ir::If::make(ir::Compare::make(ir::CompareOp::GE, length, int_imm(kSimdEntries, loc_), loc_), sum, serial,
                       loc_);
  }
  pre.push_back(sum);
  return ir::VarRef::make(acc, loc_);
}

// ---------------------------------------------------------------- loops

// The loop `l` with its variable bound while `fill` makes its body.
// `range` (dense loops only): the loop's first and end coordinates, instead of 0 and its extent.
Stmt Lowering::make_loop(const Loop& l, const std::function<void(std::vector<Stmt>&)>& fill, bool parallel,
                         std::pair<Expr, Expr> range) {
  std::vector<Stmt> body;
  ir::Var v, c;
  Expr begin, end;
  // A sum inside the loop may iterate the same stored entries again (a
  // row's softmax denominator under each of the row's entries): the outer
  // loop's position is restored after this one.
  const ir::ArrayInfo* crd = l.positions() ? l.tensor->crd[l.level].get() : nullptr;
  std::optional<Expr> outer_position;
  if (crd && positions_.count(crd)) outer_position = positions_.at(crd);
  if (l.positions()) {
    const TensorVar& t = *l.tensor;
    v = new_var(ScalarType::py_int(), "_p" + l.var.name);
    Expr parent = l.level == 0 ? int_imm(0, loc_) : position(t, vars_of(t), l.level - 1);
    const ir::ArrayVar& pos = t.pos[l.level];
    begin = as_index(ir::Load::make(pos, {parent}, false, loc_), loc_);
    end = as_index(ir::Load::make(pos, {add(parent, int_imm(1, loc_), loc_)}, false, loc_), loc_);
    // The coordinate is declared in the loop's body, so that each iteration
    // (each GPU thread of a team spreading the loop) has its own.
    c = new_var(ScalarType::py_int(), l.var.name);
    body.push_back(ir::Declare::make(c, loc_));
    body.push_back(ir::Assign::make(
        c, as_index(ir::Load::make(t.crd[l.level], {ir::VarRef::make(v, loc_)}, false, loc_), loc_), loc_));
    positions_[crd] = ir::VarRef::make(v, loc_);
    coords_[l.var.id] = ir::VarRef::make(c, loc_);
  } else {
    v = new_var(ScalarType::py_int(), l.var.name);
    begin = range.first ? range.first : int_imm(0, loc_);
    end = range.second ? range.second : as_index(l.extent, loc_);
    coords_[l.var.id] = ir::VarRef::make(v, loc_);
  }
  bound_.push_back(l.var);
  fill(body);
  bound_.pop_back();
  if (outer_position) positions_[crd] = *outer_position;
  ir::LoopSchedule schedule;
  if (parallel) schedule.kind = ir::LoopKind::Parallel;
  // An innermost loop runs in SIMD lanes where its iterations are independent
  // (vector math for exp and the like, sums in lanes).
  if (!parallel && lanes_independent(body, v, c)) schedule.kind = ir::LoopKind::Vectorized;
  return ir::For::make(v, begin, end, int_imm(1, loc_), ir::Block::make(std::move(body), loc_), schedule, loc_);
}

// The variables a tensor is accessed with in the statement being lowered.
std::vector<IndexVar> Lowering::vars_of(const TensorVar& t) {
  auto it = access_vars_.find(&t);
  if (it == access_vars_.end()) throw Refusal{loc_, "internal: no access of '" + t.name + "'"};
  return it->second;
}

void Lowering::note_accesses(const Statement& s) {
  access_vars_[s.out.get()] = s.vars;
  for (const IndexExprNode* a : accesses(s.rhs)) access_vars_[a->tensor.get()] = a->vars;
}

// ---------------------------------------------------------------- statements

// The loops of statement `s` from `first` on, and its store.
void Lowering::lower_tail(const Statement& s, const LoopOrder& order, size_t first, std::vector<Stmt>& out) {
  note_accesses(s);
  // Loop invariants: each factor of the product is computed in the
  // outermost of the statement's loops whose variables it reads.
  std::vector<IndexExpr> fs;
  std::vector<size_t> depth;
  for (const auto& [f, d] : placed_factors(order, first)) {
    fs.push_back(f);
    depth.push_back(d);
  }
  emit_level(s, order, first, fs, depth, ir::Expr(), out);
}

void Lowering::emit_level(const Statement& s, const LoopOrder& order, size_t level, const std::vector<IndexExpr>& fs,
                          const std::vector<size_t>& depth, Expr partial, std::vector<Stmt>& out) {
  for (size_t f = 0; f < fs.size(); ++f) {
    if (depth[f] != level) continue;
    Expr x = value(fs[f], out);
    partial = partial ? ir::Binary::make(ir::BinaryOp::Mul, partial, x, order.body->type, false, loc_) : x;
    if (level < order.loops.size()) {
      ir::Var held = new_var(order.body->type, "_f");
      out.push_back(ir::Assign::make(held, partial, loc_));
      partial = ir::VarRef::make(held, loc_);
    }
  }
  if (level == order.loops.size()) {
    store(s, order, partial, out);
    return;
  }
  out.push_back(make_loop(order.loops[level],
                          [&](std::vector<Stmt>& body) { emit_level(s, order, level + 1, fs, depth, partial, body); }));
}

void Lowering::store(const Statement& s, const LoopOrder& order, Expr v, std::vector<Stmt>& out) {
  const OutputStorage& st = storage_.at(s.out.get());
  if (order.accumulates)
    v = ir::Binary::make(ir::BinaryOp::Add, load_output(*s.out, st, s.vars), v, v->type, false, loc_);
  if (st.scalar) {
    out.push_back(ir::Assign::make(st.scalar, v, loc_));
    return;
  }
  out.push_back(ir::Store::make(st.array, output_index(*s.out, st, s.vars), v, false, loc_));
}

// ---------------------------------------------------------------- nests

// Storage of an output kept whole: allocated before its nest.
void Lowering::allocate_whole(const Statement& s, bool zero, std::vector<Stmt>& out) {
  TensorVar& t = *s.out;
  OutputStorage st;
  if (t.rank() == 0) {
    st.scalar = new_var(t.type, t.name);
    t.scalar = ir::VarRef::make(st.scalar, loc_);
    out.push_back(ir::Assign::make(st.scalar, identity(ir::ReduceOp::Add, t.type, loc_), loc_));
    storage_[&t] = st;
    return;
  }
  if (t.is_sparse()) {
    t.values = new_array(ArrayType{t.type.kind, 1, Layout::C}, t.name + "_values");
    out.push_back(ir::Allocate::make(t.values, {as_index(t.nnz, loc_)},
                                     zero ? ir::FillKind::Zeros : ir::FillKind::Uninitialized, nullptr, loc_));
  } else {
    t.values = new_array(ArrayType{t.type.kind, t.rank(), Layout::C}, t.name);
    std::vector<Expr> shape;
    for (const Expr& e : t.shape) shape.push_back(as_index(e, loc_));
    out.push_back(
        ir::Allocate::make(t.values, shape, zero ? ir::FillKind::Zeros : ir::FillKind::Uninitialized, nullptr, loc_));
  }
  st.array = t.values;
  storage_[&t] = st;
}

// Storage of a shrunk temporary, made in each iteration of the shared loops.
void Lowering::allocate_local(const Statement& s, const std::vector<bool>& dropped, bool zero, std::vector<Stmt>& out) {
  const TensorVar& t = *s.out;
  OutputStorage st;
  std::vector<Expr> shape;
  for (size_t d = 0; d < dropped.size(); ++d) {
    st.kept.push_back(!dropped[d]);
    if (!dropped[d]) shape.push_back(as_index(t.shape[d], loc_));
  }
  if (shape.empty()) {
    st.scalar = new_var(t.type, "_" + t.name);
    if (zero) out.push_back(ir::Assign::make(st.scalar, identity(ir::ReduceOp::Add, t.type, loc_), loc_));
  } else {
    st.array = new_array(ArrayType{t.type.kind, static_cast<int>(shape.size()), Layout::C}, "_" + t.name);
    out.push_back(
        ir::Allocate::make(st.array, shape, zero ? ir::FillKind::Zeros : ir::FillKind::Uninitialized, nullptr, loc_));
  }
  storage_[&t] = st;
}

// Whether the nest's outer loop may run its iterations in parallel: a
// dense loop over an output variable of every statement, each writing
// only the outputs of its own iteration.
bool Lowering::parallel_outer(const Nest& nest) {
  if (nest.shared == 0) return false;
  for (size_t q = 0; q < nest.stmts.size(); ++q) {
    const Loop& l = nest.orders[q].loops[0];
    if (l.positions() || l.reduction) return false;
    const Statement& s = *nest.stmts[q];
    if (plan_.shrunk.count(s.out.get())) continue;
    if (s.vars.empty()) return false;
    int dim = s.out->is_sparse() ? s.out->format.mode_order[0] : 0;
    if (s.vars[dim] != l.var) return false;
  }
  return true;
}

void Lowering::lower_nest(const Nest& nest, std::vector<Stmt>& out) {
  if (nest.orders[0].assembles) {
    assemble(*nest.stmts[0], nest.orders[0], out);
    return;
  }
  for (size_t q = 0; q < nest.stmts.size(); ++q) {
    const Statement& s = *nest.stmts[q];
    if (!plan_.shrunk.count(s.out.get())) allocate_whole(s, nest.orders[q].zero_output(), out);
  }
  for (const auto& s : nest.stmts) note_accesses(*s);
  emit_relaid(nest, out);
}

void Lowering::emit_shared(const Nest& nest, size_t level, std::vector<Stmt>& out) {
  if (level == nest.shared) {
    for (size_t q = 0; q < nest.stmts.size(); ++q) {
      const Statement& s = *nest.stmts[q];
      auto shrunk = plan_.shrunk.find(s.out.get());
      if (shrunk != plan_.shrunk.end()) allocate_local(s, shrunk->second, nest.orders[q].zero_output(), out);
      lower_tail(s, nest.orders[q], level, out);
    }
    return;
  }
  // The statements' own variables of this loop name the same coordinate.
  const Loop& loop = nest.orders[0].loops[level];
  auto fill = [&](std::vector<Stmt>& body) {
    for (size_t q = 1; q < nest.stmts.size(); ++q) {
      coords_[nest.orders[q].loops[level].var.id] = coords_[loop.var.id];
      bound_.push_back(nest.orders[q].loops[level].var);
    }
    emit_shared(nest, level + 1, body);
    bound_.resize(bound_.size() - (nest.stmts.size() - 1));
  };
  const bool parallel = level == 0 && parallel_outer(nest);
  const TensorVar* rows = parallel ? balanced_rows(nest) : nullptr;
  if (!rows) {
    out.push_back(make_loop(loop, fill, parallel));
    return;
  }
  if (target_ == Target::CUDA) {
    rows_by_length(nest, loop, *rows, fill, out);
    return;
  }
  // Threads pay off from about 1e5 operations (the nest's cost formula at
  // run time); below, the rows run in order.
  constexpr double kParallelWork = 1e5;
  const Expr ops = nest_cost(nest).value(loc_);
  Expr enough =
      ir::Compare::make(ir::CompareOp::GE, ops, ir::FloatImm::make(kParallelWork, ScalarType::f64(), loc_), loc_);
  Stmt chunked = chunks_of_rows(loop, *rows, ops, fill);
  out.push_back(ir::If::make(enough, chunked, make_loop(loop, fill, false), loc_));
}

}  // namespace detail

std::vector<ir::Stmt> lower_to_loops(const FusionPlan& plan, const NameMaker& names, Target target, SourceLoc loc,
                                     Remarks& remarks) {
  return detail::Lowering(plan, names, target, loc, remarks).run();
}

}  // namespace plait::tensor
