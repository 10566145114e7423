// Analysis: where array indices lie (see index_ranges.h): the entry points,
// over the state of index_ranges_state.h.
#include "analysis/index_ranges.h"

#include "analysis/index_ranges_state.h"

namespace plait::analysis {

IndexFacts::IndexFacts(const ir::Stmt& body, bool scans) : state_(std::make_unique<State>()) {
  state_->bindings.visit(body);
  state_->function_uses = uses_of(body);
  state_->scans_allowed = scans;
}
IndexFacts::~IndexFacts() = default;

void IndexFacts::push_loop(const ir::For* loop) {
  state_->push(loop);
}
void IndexFacts::pop_loop() {
  state_->loops.pop_back();
}
size_t IndexFacts::depth() const {
  return state_->loops.size();
}
const ir::For* IndexFacts::loop(size_t i) const {
  return state_->loops.at(i).loop;
}

void IndexFacts::push_condition(const ir::Expr& cond, bool holds) {
  std::vector<std::pair<Expr, Expr>> found;
  // Equalities of stable integers that `cond` (or its negation) implies.
  std::function<void(const Expr&, bool, int)> collect = [&](const Expr& e, bool h, int depth) {
    if (depth > kDepthLimit) return;
    if (auto l = e->as<ir::Logical>()) {
      if ((l->op == ir::LogicalOp::And) == h) {
        collect(l->a, h, depth + 1);
        collect(l->b, h, depth + 1);
      }
    } else if (auto u = e->as<ir::Unary>(); u && u->op == ir::UnaryOp::Not) {
      collect(u->a, !h, depth + 1);
    } else if (auto c = e->as<ir::Compare>()) {
      bool equal = (c->op == ir::CompareOp::EQ && h) || (c->op == ir::CompareOp::NE && !h);
      if (equal && c->a->type.is_int() && state_->stable(c->a, true) && state_->stable(c->b, true))
        found.emplace_back(c->a, c->b);
    } else if (auto v = e->as<ir::VarRef>()) {
      if (Expr value = state_->single_value(v->var.get())) collect(value, h, depth + 1);
    }
  };
  collect(state_->resolved(cond), holds, 0);
  state_->equalities.push_back(std::move(found));
  state_->classes_dirty = true;
}
void IndexFacts::forget_bound_in(const ir::Stmt& st) {
  State& s = *state_;
  if (s.known_values.empty() && s.known_shapes.empty()) return;
  const VarUses u = uses_of(st);
  for (const ir::VarInfo* v : u.writes) s.known_values.erase(v);
  for (const ir::ArrayInfo* a : u.array_binds) s.known_shapes.erase(a);
}
void IndexFacts::push_assignment(const ir::Stmt& st) {
  State& s = *state_;
  State::Learnt learnt;
  if (auto a = st->as<ir::Assign>()) {
    Expr value = s.resolved(a->value);
    if (a->var->type.is_int() || a->var->type.is_bool())
      if (s.stable(value, true)) {
        s.known_values[a->var.get()] = value;
        learnt.var = a->var.get();
      }
  } else if (auto a = st->as<ir::Allocate>()) {
    std::vector<Expr> shape;
    bool known = true;
    for (const Expr& e : a->shape) {
      shape.push_back(s.resolved(e));
      known = known && s.stable(shape.back(), true);
    }
    if (known) {
      s.known_shapes[a->array.get()] = std::move(shape);
      learnt.array = a->array.get();
    }
  }
  s.learnt.push_back(learnt);
}
void IndexFacts::pop_assignment() {
  State& s = *state_;
  if (s.learnt.back().var) s.known_values.erase(s.learnt.back().var);
  if (s.learnt.back().array) s.known_shapes.erase(s.learnt.back().array);
  s.learnt.pop_back();
}
void IndexFacts::pop_condition() {
  state_->equalities.pop_back();
  state_->classes_dirty = true;
}

namespace {

// Whether index >= 0 (lower) or index < array.shape[dim] (upper) is proven.
bool proves_side(const IndexFacts::State& s, const Expr& index, const ir::ArrayVar& array, int dim, bool upper) {
  s.start_proof();
  auto i = s.linear(index);
  if (!i) return false;
  if (!upper) return s.nonneg(*i);
  auto n = s.linear(ir::ArrayDim::make(array, dim, index->loc));
  if (!n) return false;
  auto d = combine(*n, *i, -1);
  if (d) d = combine(*d, constant(1), -1);
  return d && s.nonneg(*d);
}

}  // namespace

bool IndexFacts::proves_in_range(const ir::Expr& index, const ir::ArrayVar& array, int dim) const {
  return proves_side(*state_, index, array, dim, false) && proves_side(*state_, index, array, dim, true);
}

ir::Expr IndexFacts::in_range_condition(const ir::Expr& index, const ir::ArrayVar& array, int dim, size_t outer) const {
  const State& s = *state_;
  if (outer >= s.loops.size()) return nullptr;
  s.start_proof();
  auto extent = s.range(ir::ArrayDim::make(array, dim, index->loc), outer);
  if (!extent) return nullptr;
  // Python's wrap of a negative index: in range when -n <= x < n.
  bool wraps = false;
  const Expr x = s.unwrapped(index, array, dim, &wraps);
  auto r = s.range(x, outer);
  // The union of the index's ranges over the enclosing loops is tested
  // against a fixed extent only: against the least of an extent that moves
  // with those loops too (a temporary sized per row), the test would fail
  // where every row is in range.
  if (!r && s.nest_vars_read(x, outer) == 1 && s.key(extent->lo) == s.key(extent->hi)) {
    s.relax_moving = true;
    r = s.range(x, outer);
    s.relax_moving = false;
  }
  if (!r) return nullptr;
  Expr n = extent->lo;
  Expr lo = wraps ? op(BinaryOp::Add, r->lo, n) : r->lo;
  // A side the analysis proves needs no test.
  Expr cond;
  std::vector<Expr> tested;
  if (wraps || !proves_side(s, index, array, dim, false)) {
    cond = ir::Compare::make(ir::CompareOp::GE, lo, imm(0));
    tested.push_back(lo);
  }
  if (wraps || !proves_side(s, index, array, dim, true)) {
    cond = all_of(cond, ir::Compare::make(ir::CompareOp::LT, r->hi, n));
    tested.push_back(r->hi);
    tested.push_back(n);
  }
  if (!cond) return ir::BoolImm::make(true);
  cond = s.guarded(cond, tested);
  // Scanned elements bound the index only where their scans are valid.
  for (const State::ScanEntry* scan : s.scans_in({r->lo, r->hi})) cond = all_of(scan->valid, cond);
  return cond;
}

std::vector<IndexFacts::IndexScan> IndexFacts::scans_read(const ir::Expr& cond) const {
  std::vector<IndexScan> out;
  for (const State::ScanEntry* entry : state_->scans_in({cond})) out.push_back(entry->scan);
  return out;
}

}  // namespace plait::analysis
