// Analysis: where array indices lie, by proof (see index_ranges.h).
//
// Proofs work on affine forms: an integer expression as a constant plus a sum
// of integer multiples of atoms (loop variables, extents, other opaque
// values). A form is shown non-negative by eliminating its atoms one at a
// time, replacing each by a bound on the side that keeps the inequality: a
// loop variable by its loop's first or last value (innermost loop first, so
// that its bounds bring in only outer variables), min/max/select by their
// operands, an extent by zero or by an extent equal to it. The search has a
// fixed budget, so a proof that is not found quickly is not found.
#include "analysis/index_ranges_state.h"

namespace plait::analysis {

size_t IndexFacts::State::nest_vars_read(const Expr& e, size_t outer) const {
  const VarUses u = uses_of(e);
  size_t n = 0;
  for (size_t k = outer; k < loops.size(); ++k) n += u.reads.count(loops[k].loop->var.get());
  return n;
}

const std::string& IndexFacts::State::key(const Expr& e) const {
  auto it = keys.find(e.get());
  if (it == keys.end()) it = keys.emplace(e.get(), std::pair{e, key_of(e)}).first;
  return it->second.second;
}

bool IndexFacts::State::stable_var(const ir::VarInfo* v) const {
  auto memo = stable_vars.find(v);
  if (memo != stable_vars.end()) return memo->second;
  stable_vars[v] = false;  // a cycle is not stable
  auto n = bindings.assigns.find(v);
  bool s = n == bindings.assigns.end() ? v->is_param : n->second == 1 && stable(bindings.value.at(v));
  return stable_vars[v] = s;
}

bool IndexFacts::State::stable_array(const ir::ArrayInfo* a) const {
  auto memo = stable_arrays.find(a);
  if (memo != stable_arrays.end()) return memo->second;
  stable_arrays[a] = false;
  auto n = bindings.binds.find(a);
  bool s = true;
  if (n != bindings.binds.end()) {
    s = n->second == 1;
    if (s && bindings.allocation.count(a))
      for (const Expr& e : bindings.allocation.at(a)->shape) s = s && stable(e);
    if (s && bindings.bound_to.count(a)) s = stable_array(bindings.bound_to.at(a).get());
  }
  return stable_arrays[a] = s;
}

bool IndexFacts::State::stable(const Expr& e, bool in_loops) const {
  auto is = [&](const Expr& x) { return stable(x, in_loops); };
  switch (e->kind) {
    case ir::NodeKind::IntImm:
    case ir::NodeKind::BoolImm:
      return true;
    case ir::NodeKind::VarRef: {
      const ir::VarInfo* v = e->as<ir::VarRef>()->var.get();
      return stable_var(v) || (in_loops && frame_of(v) >= 0);
    }
    case ir::NodeKind::ArrayDim:
      return stable_array(e->as<ir::ArrayDim>()->array.get());
    case ir::NodeKind::Cast:
      return !e->as<ir::Cast>()->checked && is(e->as<ir::Cast>()->value);
    case ir::NodeKind::Unary:
      return is(e->as<ir::Unary>()->a);
    case ir::NodeKind::Binary: {
      auto b = e->as<ir::Binary>();
      return !b->zero_check && b->op != BinaryOp::Div && b->op != BinaryOp::Pow && is(b->a) && is(b->b);
    }
    case ir::NodeKind::Compare:
      return is(e->as<ir::Compare>()->a) && is(e->as<ir::Compare>()->b);
    case ir::NodeKind::Logical:
      return is(e->as<ir::Logical>()->a) && is(e->as<ir::Logical>()->b);
    case ir::NodeKind::Select: {
      auto s = e->as<ir::Select>();
      return is(s->cond) && is(s->t) && is(s->f);
    }
    default:
      return false;
  }
}

Expr IndexFacts::State::extent_source(const ir::ArrayDim* d) const {
  const ir::ArrayInfo* a = d->array.get();
  if (auto known = known_shapes.find(a); known != known_shapes.end())
    return known->second.at(static_cast<size_t>(d->dim));
  if (!bindings.binds.count(a) || !stable_array(a)) return nullptr;
  if (bindings.allocation.count(a)) return bindings.allocation.at(a)->shape.at(static_cast<size_t>(d->dim));
  return ir::ArrayDim::make(bindings.bound_to.at(a), d->dim, d->loc);
}

Expr IndexFacts::State::single_value(const ir::VarInfo* v) const {
  if (auto known = known_values.find(v); known != known_values.end()) return known->second;
  auto n = bindings.assigns.find(v);
  if (n == bindings.assigns.end() || n->second != 1 || !stable_var(v)) return nullptr;
  return bindings.value.at(v);
}

Expr IndexFacts::State::resolved(const Expr& e) const {
  if (known_values.empty() && known_shapes.empty()) return e;
  struct Resolve : ir::IRMutator {
    const State* s;
    using IRMutator::visit;
    Expr visit(const ir::VarRef* r, const Expr& self) override {
      auto known = s->known_values.find(r->var.get());
      if (known == s->known_values.end() || s->stable_var(r->var.get())) return self;
      return known->second;
    }
    Expr visit(const ir::ArrayDim* d, const Expr& self) override {
      auto known = s->known_shapes.find(d->array.get());
      if (known == s->known_shapes.end() || s->stable_array(d->array.get())) return self;
      return known->second.at(static_cast<size_t>(d->dim));
    }
  } resolve;
  resolve.s = this;
  return resolve.mutate(e);
}

int IndexFacts::State::frame_of(const ir::VarInfo* v, size_t from) const {
  for (size_t i = loops.size(); i-- > from;)
    if (loops[i].loop->var.get() == v) return loops[i].step ? static_cast<int>(i) : -1;
  return -1;
}

void IndexFacts::State::push(const ir::For* f) {
  Frame fr{f, 0, uses_of(f->body)};
  auto step = f->step->as<ir::IntImm>();
  bool ok = step && step->value != 0 && !fr.body.writes.count(f->var.get());
  // The bounds are evaluated when the loop starts: they must still hold
  // their values inside the body.
  struct Loaded : ir::IRVisitor {
    ir::ArraySet arrays;
    using IRVisitor::visit;
    void visit(const ir::Load* l) override {
      arrays.insert(l->array.get());
      IRVisitor::visit(l);
    }
  };
  for (const Expr& e : {f->begin, f->end}) {
    if (!ok) break;
    const VarUses u = uses_of(e);
    for (const ir::VarInfo* v : u.reads) ok = ok && !fr.body.writes.count(v);
    for (const ir::ArrayInfo* a : u.arrays) ok = ok && !fr.body.array_binds.count(a);
    // An element the bounds load may be stored to by the body.
    Loaded loaded;
    loaded.visit(e);
    for (const ir::ArrayInfo* a : loaded.arrays) ok = ok && !fr.body.arrays.count(a);
  }
  if (ok) fr.step = step->value;
  loops.push_back(std::move(fr));
}

std::optional<Affine> IndexFacts::State::linear(const Expr& e, int depth) const {
  if (!e->type.is_int() || depth > kDepthLimit) return std::nullopt;
  auto plain = [&](const Expr& a) { return std::optional<Affine>(Affine{0, {{a, key(a), 1}}}); };
  // An atom known equal to others stands for its class.
  auto atom = [&](const Expr& a) {
    const Expr* rep = representative_of(key(a));
    if (!rep || key(*rep) == key(a)) return plain(a);
    switch ((*rep)->kind) {
      case ir::NodeKind::IntImm:
      case ir::NodeKind::Binary:
      case ir::NodeKind::Unary:
        return linear(*rep, depth + 1);
      default:
        return plain(*rep);
    }
  };
  switch (e->kind) {
    case ir::NodeKind::IntImm: {
      auto v = bounded(e->as<ir::IntImm>()->value);
      if (!v) return std::nullopt;
      return constant(*v);
    }
    case ir::NodeKind::Unary: {
      auto u = e->as<ir::Unary>();
      if (u->op != ir::UnaryOp::Neg) return atom(e);
      auto a = linear(u->a, depth + 1);
      if (!a) return std::nullopt;
      return combine(constant(0), *a, -1);
    }
    case ir::NodeKind::Binary: {
      auto b = e->as<ir::Binary>();
      if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
        auto x = linear(b->a, depth + 1), y = linear(b->b, depth + 1);
        if (!x || !y) return std::nullopt;
        return combine(*x, *y, b->op == BinaryOp::Add ? 1 : -1);
      }
      if (b->op == BinaryOp::Mul) {
        auto ka = b->a->as<ir::IntImm>(), kb = b->b->as<ir::IntImm>();
        if (ka || kb) {
          auto x = linear(kb ? b->a : b->b, depth + 1);
          if (!x) return std::nullopt;
          return combine(constant(0), *x, kb ? kb->value : ka->value);
        }
      }
      return atom(e);
    }
    case ir::NodeKind::Cast:
      if (keeps_value(e->as<ir::Cast>())) return linear(e->as<ir::Cast>()->value, depth + 1);
      return atom(e);
    case ir::NodeKind::VarRef: {
      const ir::VarInfo* v = e->as<ir::VarRef>()->var.get();
      if (frame_of(v) >= 0) return plain(e);
      if (Expr value = single_value(v)) return linear(value, depth + 1);
      return atom(e);
    }
    case ir::NodeKind::ArrayDim:
      if (Expr source = extent_source(e->as<ir::ArrayDim>())) {
        auto a = linear(source, depth + 1);
        // The array exists where its extent is read, so the shape it was
        // allocated with was not negative (allocation raises).
        if (a && !a->terms.empty()) add_form(proof_facts, *a);
        return a;
      }
      return atom(e);
    case ir::NodeKind::Select: {
      auto s = e->as<ir::Select>();
      if (auto known = decide(s->cond)) return linear(*known ? s->t : s->f, depth + 1);
      return atom(e);
    }
    default:
      return atom(e);
  }
}

std::optional<bool> IndexFacts::State::decide(const Expr& cond) const {
  if (auto b = cond->as<ir::BoolImm>()) return b->value;
  auto c = cond->as<ir::Compare>();
  if (!c || !c->a->type.is_int() || !c->b->type.is_int()) return std::nullopt;
  const std::string& k = key(cond);
  if (auto known = decided.find(k); known != decided.end()) return known->second;
  std::optional<bool> d = decide_compare(c);
  if (d && assumptions.empty()) decided[k] = *d;
  return d;
}

std::optional<bool> IndexFacts::State::decide_compare(const ir::Compare* c) const {
  auto a = linear(c->a, kDepthLimit / 2), b = linear(c->b, kDepthLimit / 2);
  if (!a || !b) return std::nullopt;
  auto diff = combine(*b, *a, -1);  // b - a
  auto neg = combine(*a, *b, -1);   // a - b
  if (!diff || !neg) return std::nullopt;
  auto minus_one = [](Affine x) { return combine(x, constant(1), -1); };
  auto holds = [&](const std::optional<Affine>& x) { return x && nonneg(*x); };
  switch (c->op) {
    case ir::CompareOp::LT:
      if (holds(minus_one(*diff))) return true;
      if (holds(neg)) return false;
      return std::nullopt;
    case ir::CompareOp::LE:
      if (holds(diff)) return true;
      if (holds(minus_one(*neg))) return false;
      return std::nullopt;
    case ir::CompareOp::GT:
      if (holds(minus_one(*neg))) return true;
      if (holds(diff)) return false;
      return std::nullopt;
    case ir::CompareOp::GE:
      if (holds(neg)) return true;
      if (holds(minus_one(*diff))) return false;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void IndexFacts::State::build_classes() const {
  if (!classes_dirty) return;
  classes_dirty = false;
  std::map<std::string, std::string> parent;
  std::map<std::string, Expr> expr_of;
  std::function<std::string(const std::string&)> find = [&](const std::string& k) {
    auto it = parent.find(k);
    if (it == parent.end() || it->second == k) return k;
    return it->second = find(it->second);
  };
  for (const auto& level : equalities)
    for (const auto& [a, b] : level) {
      const std::string ka = key(a), kb = key(b);
      expr_of.emplace(ka, a);
      expr_of.emplace(kb, b);
      parent.emplace(ka, ka);
      parent.emplace(kb, kb);
      std::string ra = find(ka), rb = find(kb);
      if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
    }
  representative.clear();
  members.clear();
  for (const auto& [k, e] : expr_of) {
    const std::string root = find(k);
    representative[k] = expr_of.at(root);
    members[root].push_back(e);
  }
}

const Expr* IndexFacts::State::representative_of(const std::string& k) const {
  build_classes();
  auto it = representative.find(k);
  return it == representative.end() ? nullptr : &it->second;
}

std::vector<Expr> IndexFacts::State::equal_to(const std::string& k) const {
  build_classes();
  auto it = representative.find(k);
  if (it == representative.end()) return {};
  std::vector<Expr> out;
  for (const Expr& e : members.at(key(it->second)))
    if (key(e) != k) out.push_back(e);
  return out;
}

std::vector<Affine> IndexFacts::State::loop_bounds(const Frame& fr, bool upper) const {
  std::vector<Affine> out;
  const ir::For* f = fr.loop;
  auto push = [&](const Expr& e, int64_t shift) {
    if (auto a = linear(e))
      if (auto s = combine(*a, constant(shift), 1)) out.push_back(*s);
  };
  if (upper == (fr.step > 0)) {  // the side the loop's end bounds
    std::vector<Expr> ends{f->end};
    for (const Expr& e : equal_to(key(f->end))) ends.push_back(e);
    int64_t shift = fr.step > 0 ? -1 : 1;
    for (const Expr& e : ends) {
      if (fr.step < 0) {
        push(e, shift);
        continue;
      }
      if (auto m = binary(e, {BinaryOp::Max, BinaryOp::PyMax})) {
        for (auto [x, c] : {std::pair{m->a, m->b}, std::pair{m->b, m->a}}) {
          auto ci = c->as<ir::IntImm>();
          auto b = linear(f->begin);
          if (!ci || !b) continue;
          if (auto d = combine(*b, constant(ci->value), -1); d && nonneg(*d)) push(x, -1);
        }
      }
    }
    // The ends as they are, after the sharper forms above.
    if (fr.step > 0)
      for (const Expr& e : ends) push(e, shift);
  } else {
    push(f->begin, 0);
  }
  return out;
}

bool IndexFacts::State::nonneg(const Affine& d) const {
  if (--budget < 0) return false;
  if (d.terms.empty()) return d.c >= 0;
  if ((!proof_facts.empty() || !assumptions.empty()) && by_hypothesis(d)) return true;
  // The innermost loop variable first.
  int deepest = -1;
  size_t at = 0;
  for (size_t i = 0; i < d.terms.size(); ++i)
    if (auto v = d.terms[i].atom->as<ir::VarRef>()) {
      int f = frame_of(v->var.get());
      if (f > deepest) deepest = f, at = i;
    }
  if (deepest >= 0) {
    // The bounds that leave the fewest terms first: those whose terms
    // cancel the others' (an extent minus the start it is measured from).
    Affine rest = d;
    rest.terms.erase(rest.terms.begin() + static_cast<std::ptrdiff_t>(at));
    std::vector<Affine> candidates;
    for (const Affine& b : loop_bounds(loops[static_cast<size_t>(deepest)], d.terms[at].k < 0))
      if (auto n = combine(rest, b, d.terms[at].k)) candidates.push_back(*n);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Affine& x, const Affine& y) { return x.terms.size() < y.terms.size(); });
    for (const Affine& n : candidates)
      if (nonneg(n)) return true;
    return false;
  }
  // Else any atom, those with operands first (min, max, select: their
  // operands may cancel other terms), then the others.
  auto compound = [](const Term& t) {
    return binary(t.atom, {BinaryOp::Max, BinaryOp::PyMax, BinaryOp::Min, BinaryOp::PyMin}) || t.atom->as<ir::Select>();
  };
  for (bool first_pass : {true, false})
    for (size_t i = 0; i < d.terms.size(); ++i)
      if (compound(d.terms[i]) == first_pass && eliminate(d, i)) return true;
  return false;
}

bool IndexFacts::State::with_value(const Affine& d, size_t at, const Affine& value) const {
  Affine rest = d;
  rest.terms.erase(rest.terms.begin() + static_cast<std::ptrdiff_t>(at));
  auto n = combine(rest, value, d.terms[at].k);
  return n && nonneg(*n);
}

bool IndexFacts::State::eliminate(const Affine& d, size_t at) const {
  const Term& t = d.terms[at];
  auto with_expr = [&](const Expr& e) {
    auto a = linear(e);
    return a && with_value(d, at, *a);
  };
  if (t.k > 0)
    if (auto lb = lower_bound(t.atom, {}); lb && with_value(d, at, constant(*lb))) return true;
  if (auto m = binary(t.atom, {BinaryOp::Max, BinaryOp::PyMax, BinaryOp::Min, BinaryOp::PyMin})) {
    bool is_max = m->op == BinaryOp::Max || m->op == BinaryOp::PyMax;
    if (is_max == (t.k > 0)) return with_expr(m->a) || with_expr(m->b);
    return with_expr(m->a) && with_expr(m->b);
  }
  // Each operand of a select under the condition that chooses it.
  if (auto s = t.atom->as<ir::Select>()) {
    auto branch = [&](const Expr& e, bool holds) {
      const size_t known = assumptions.size();
      assume(s->cond, holds, 0);
      bool ok = with_expr(e);
      assumptions.erase(assumptions.begin() + static_cast<std::ptrdiff_t>(known), assumptions.end());
      return ok;
    };
    return branch(s->t, true) && branch(s->f, false);
  }
  return false;
}

bool IndexFacts::State::by_hypothesis(const Affine& d) const {
  for (const auto* known : {&proof_facts, &assumptions})
    for (size_t i = 0; i < known->size(); ++i) {
      auto rest = combine(d, (*known)[i], -1);
      if (rest && rest->terms.size() < d.terms.size() && nonneg(*rest)) return true;
    }
  return false;
}

void IndexFacts::State::add_form(std::vector<Affine>& to, const Affine& a) {
  for (const Affine& h : to)
    if (h.c == a.c && h.terms.size() == a.terms.size() &&
        std::equal(h.terms.begin(), h.terms.end(), a.terms.begin(),
                   [](const Term& x, const Term& y) { return x.key == y.key && x.k == y.k; }))
      return;
  to.push_back(a);
}

void IndexFacts::State::start_proof() const {
  budget = kProofBudget;
  proof_facts.clear();
  assumptions.clear();
  decided.clear();
}

void IndexFacts::State::assume(const Expr& cond, bool holds, int depth) const {
  if (depth > kDepthLimit) return;
  if (auto l = cond->as<ir::Logical>()) {
    if ((l->op == ir::LogicalOp::And) == holds) {
      assume(l->a, holds, depth + 1);
      assume(l->b, holds, depth + 1);
    }
    return;
  }
  if (auto u = cond->as<ir::Unary>(); u && u->op == ir::UnaryOp::Not) return assume(u->a, !holds, depth + 1);
  auto c = cond->as<ir::Compare>();
  if (!c || !c->a->type.is_int() || !c->b->type.is_int()) return;
  auto a = linear(c->a, kDepthLimit / 2), b = linear(c->b, kDepthLimit / 2);
  if (!a || !b) return;
  // x >= y + shift, as the form x - y - shift.
  auto at_least = [&](const Affine& x, const Affine& y, int64_t shift) {
    auto d = combine(x, y, -1);
    if (d) d = combine(*d, constant(shift), -1);
    if (d) add_form(assumptions, *d);
  };
  ir::CompareOp o = c->op;
  if (!holds) {
    switch (o) {
      case ir::CompareOp::LT:
        o = ir::CompareOp::GE;
        break;
      case ir::CompareOp::LE:
        o = ir::CompareOp::GT;
        break;
      case ir::CompareOp::GT:
        o = ir::CompareOp::LE;
        break;
      case ir::CompareOp::GE:
        o = ir::CompareOp::LT;
        break;
      case ir::CompareOp::EQ:
        o = ir::CompareOp::NE;
        break;
      case ir::CompareOp::NE:
        o = ir::CompareOp::EQ;
        break;
    }
  }
  switch (o) {
    case ir::CompareOp::LT:
      at_least(*b, *a, 1);
      break;
    case ir::CompareOp::LE:
      at_least(*b, *a, 0);
      break;
    case ir::CompareOp::GT:
      at_least(*a, *b, 1);
      break;
    case ir::CompareOp::GE:
      at_least(*a, *b, 0);
      break;
    case ir::CompareOp::EQ:
      at_least(*a, *b, 0);
      at_least(*b, *a, 0);
      break;
    case ir::CompareOp::NE:
      break;
  }
}
}  // namespace plait::analysis
