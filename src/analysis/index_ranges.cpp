// Analysis: where array indices lie (see index_ranges.h).
//
// Proofs work on affine forms: an integer expression as a constant plus a sum
// of integer multiples of atoms (loop variables, extents, other opaque
// values). A form is shown non-negative by eliminating its atoms one at a
// time, replacing each by a bound on the side that keeps the inequality: a
// loop variable by its loop's first or last value (innermost loop first, so
// that its bounds bring in only outer variables), min/max/select by their
// operands, an extent by zero or by an extent equal to it. The search has a
// fixed budget, so a proof that is not found quickly is not found.
#include "analysis/index_ranges.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analysis/index_bounds.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::analysis {

using ir::BinaryOp;
using ir::Expr;

namespace {

constexpr int64_t kLimit = int64_t{1} << 48;  // constants beyond are "unknown"
// Run-time values a condition trusts: with them and coefficients below
// kLimit, no sum of a few terms can overflow int64.
constexpr int64_t kGuard = int64_t{1} << 40;
constexpr int kProofBudget = 3000;
constexpr int kDepthLimit = 24;

// Assignments and bindings of the whole function.
struct Bindings : ir::IRVisitor {
  ir::VarMap<int> assigns;
  ir::VarMap<Expr> value;
  ir::ArrayMap<int> binds;
  ir::ArrayMap<const ir::Allocate*> allocation;
  ir::ArrayMap<ir::ArrayVar> bound_to;
  using IRVisitor::visit;
  void visit(const ir::Assign* a) override {
    ++assigns[a->var.get()];
    value[a->var.get()] = a->value;
    IRVisitor::visit(a);
  }
  void visit(const ir::For* f) override {
    assigns[f->var.get()] += 2;  // a loop variable takes many values
    IRVisitor::visit(f);
  }
  void visit(const ir::Allocate* a) override {
    ++binds[a->array.get()];
    allocation[a->array.get()] = a;
    IRVisitor::visit(a);
  }
  void visit(const ir::ArrayBind* b) override {
    ++binds[b->dst.get()];
    bound_to[b->dst.get()] = b->src;
    IRVisitor::visit(b);
  }
};

struct Term {
  Expr atom;
  std::string key;
  int64_t k;
};

struct Affine {
  int64_t c = 0;
  std::vector<Term> terms;
};

// a + k * b, when it stays within +-kLimit.
std::optional<int64_t> mul_add(int64_t a, int64_t k, int64_t b) {
  int64_t product = 0, sum = 0;
  if (__builtin_mul_overflow(k, b, &product) || __builtin_add_overflow(a, product, &sum)) return std::nullopt;
  if (sum > kLimit || sum < -kLimit) return std::nullopt;
  return sum;
}
std::optional<int64_t> bounded(int64_t v) { return mul_add(v, 0, 0); }

// a + k * b, or nothing when a coefficient leaves the trusted range.
std::optional<Affine> combine(Affine a, const Affine& b, int64_t k) {
  auto c = mul_add(a.c, k, b.c);
  if (!c) return std::nullopt;
  a.c = *c;
  for (const Term& t : b.terms) {
    auto add = mul_add(0, k, t.k);
    if (!add) return std::nullopt;
    bool merged = false;
    for (size_t i = 0; i < a.terms.size() && !merged; ++i) {
      if (a.terms[i].key != t.key) continue;
      auto sum = mul_add(a.terms[i].k, 1, *add);
      if (!sum) return std::nullopt;
      a.terms[i].k = *sum;
      if (*sum == 0) a.terms.erase(a.terms.begin() + static_cast<std::ptrdiff_t>(i));
      merged = true;
    }
    if (!merged && *add != 0) a.terms.push_back({t.atom, t.key, *add});
  }
  return a;
}

Affine constant(int64_t c) { return Affine{c, {}}; }

// Text that identifies an expression's value: its printed form and the
// identities of what it reads (two variables may share a name).
std::string key_of(const Expr& e) {
  std::string k = ir::to_string(e);
  const VarUses u = uses_of(e);
  for (const ir::VarInfo* v : u.reads) k.append(1, '#').append(std::to_string(v->id));
  for (const ir::ArrayInfo* a : u.arrays) k.append(1, '@').append(std::to_string(a->id));
  return k;
}

// Integer-to-integer conversions that keep every value.
bool keeps_value(const ir::Cast* c) {
  const ScalarType from = c->value->type, to = c->type;
  if (!from.is_int() || !to.is_int()) return false;
  if (from.is_unsigned() == to.is_unsigned()) return to.bits() >= from.bits();
  return from.is_unsigned() && to.bits() > from.bits();
}

const ir::Binary* binary(const Expr& e, std::initializer_list<BinaryOp> ops) {
  auto b = e->as<ir::Binary>();
  if (!b) return nullptr;
  for (BinaryOp op : ops)
    if (b->op == op) return b;
  return nullptr;
}

Expr int64(const Expr& e) {
  if (e->type == ScalarType::py_int()) return e;
  return ir::Cast::make(ScalarType::py_int(), e, false, e->loc);
}
Expr imm(int64_t v) { return ir::IntImm::make(v, ScalarType::py_int()); }
Expr op(BinaryOp o, const Expr& a, const Expr& b) { return ir::Binary::make(o, a, b, ScalarType::py_int()); }
Expr all_of(const Expr& a, const Expr& b) { return a ? ir::Logical::make(ir::LogicalOp::And, a, b) : b; }

struct Frame {
  const ir::For* loop;
  int64_t step = 0;  // 0: the variable has no known bounds in the body
  VarUses body;
};

struct Interval {
  Expr lo, hi;
};

}  // namespace

// The arrays a statement writes elements of, and whether it binds any
// array (a view made inside it could not be tested before it).
struct WrittenArrays : ir::IRVisitor {
  ir::ArraySet written;
  bool binds = false;
  using IRVisitor::visit;
  void visit(const ir::Store* st) override {
    written.insert(st->array.get());
    IRVisitor::visit(st);
  }
  void visit(const ir::AtomicUpdate* st) override {
    written.insert(st->array.get());
    IRVisitor::visit(st);
  }
  void visit(const ir::MatMul* st) override {
    written.insert(st->c.get());
    IRVisitor::visit(st);
  }
  void visit(const ir::For* f) override {
    for (const ir::ArrayReduction& r : f->schedule.array_reductions) written.insert(r.array.get());
    IRVisitor::visit(f);
  }
  void visit(const ir::ArrayBind* b) override {
    binds = true;
    IRVisitor::visit(b);
  }
};

struct IndexFacts::State {
  Bindings bindings;
  bool scans_allowed = false;  // IndexFacts' constructor
  std::vector<Frame> loops;
  // Scans made by range() (see IndexScan), with the condition under which
  // each one's result bounds the elements the nest reads; by a key of the
  // array and the positions.
  struct ScanEntry {
    IndexFacts::IndexScan scan;
    Expr valid;
  };
  mutable std::vector<ScanEntry> scans;
  mutable std::map<std::string, size_t> scan_index;
  // Set while bounding an index that reads one variable of the nest's
  // loops: bounds that move with an enclosing loop are bounded as well.
  mutable bool relax_moving = false;

  // How many variables of loops outer..depth-1 `e` reads.
  size_t nest_vars_read(const Expr& e, size_t outer) const {
    const VarUses u = uses_of(e);
    size_t n = 0;
    for (size_t k = outer; k < loops.size(); ++k) n += u.reads.count(loops[k].loop->var.get());
    return n;
  }
  std::vector<std::vector<std::pair<Expr, Expr>>> equalities;  // per pushed condition
  mutable int budget = 0;
  // key_of() of each expression seen, holding the expression so that its
  // address is not reused while the entry lives.
  mutable std::map<const ir::ExprNode*, std::pair<Expr, std::string>> keys;
  mutable bool classes_dirty = true;
  mutable std::map<std::string, Expr> representative;
  mutable std::map<std::string, std::vector<Expr>> members;
  mutable ir::VarMap<bool> stable_vars;
  mutable ir::ArrayMap<bool> stable_arrays;

  const std::string& key(const Expr& e) const {
    auto it = keys.find(e.get());
    if (it == keys.end()) it = keys.emplace(e.get(), std::pair{e, key_of(e)}).first;
    return it->second.second;
  }

  // ------------------------------------------------------------ stability
  // A stable value is the same wherever it is read: constants, parameters
  // never assigned, scalars assigned once from stable values, extents of
  // arrays never rebound (or bound once to a stable shape).
  bool stable_var(const ir::VarInfo* v) const {
    auto memo = stable_vars.find(v);
    if (memo != stable_vars.end()) return memo->second;
    stable_vars[v] = false;  // a cycle is not stable
    auto n = bindings.assigns.find(v);
    bool s = n == bindings.assigns.end() ? v->is_param : n->second == 1 && stable(bindings.value.at(v));
    return stable_vars[v] = s;
  }
  bool stable_array(const ir::ArrayInfo* a) const {
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
  // With `in_loops`, the variables of the loops around the current point
  // count as stable too: they keep their values inside those loops' bodies.
  bool stable(const Expr& e, bool in_loops = false) const {
    auto is = [&](const Expr& x) { return stable(x, in_loops); };
    switch (e->kind) {
      case ir::NodeKind::IntImm:
      case ir::NodeKind::BoolImm: return true;
      case ir::NodeKind::VarRef: {
        const ir::VarInfo* v = e->as<ir::VarRef>()->var.get();
        return stable_var(v) || (in_loops && frame_of(v) >= 0);
      }
      case ir::NodeKind::ArrayDim: return stable_array(e->as<ir::ArrayDim>()->array.get());
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
      default: return false;
    }
  }
  // The expression an extent of a local array stands for, if any: its shape
  // where its allocation comes before the point (known_shapes), else that
  // of its one binding when that is stable.
  Expr extent_source(const ir::ArrayDim* d) const {
    const ir::ArrayInfo* a = d->array.get();
    if (auto known = known_shapes.find(a); known != known_shapes.end())
      return known->second.at(static_cast<size_t>(d->dim));
    if (!bindings.binds.count(a) || !stable_array(a)) return nullptr;
    if (bindings.allocation.count(a)) return bindings.allocation.at(a)->shape.at(static_cast<size_t>(d->dim));
    return ir::ArrayDim::make(bindings.bound_to.at(a), d->dim, d->loc);
  }
  // The value a scalar holds where it is read: that of its assignment where
  // one comes before the point (known_values), else that of its one
  // assignment when that is stable.
  Expr single_value(const ir::VarInfo* v) const {
    if (auto known = known_values.find(v); known != known_values.end()) return known->second;
    auto n = bindings.assigns.find(v);
    if (n == bindings.assigns.end() || n->second != 1 || !stable_var(v)) return nullptr;
    return bindings.value.at(v);
  }
  // Assignments and allocations that come before the point in the blocks
  // around it, with no binding of their target between them and the
  // statement that holds the point (IndexFacts::push_assignment). Their
  // values read only stable values and the variables of the loops around
  // them, which keep their values there.
  ir::VarMap<Expr> known_values;
  ir::ArrayMap<std::vector<Expr>> known_shapes;
  struct Learnt {
    const ir::VarInfo* var = nullptr;
    const ir::ArrayInfo* array = nullptr;
  };
  std::vector<Learnt> learnt;  // per push_assignment

  // `e` with the known values and shapes put in where they are not stable,
  // so that it no longer reads what a later binding may change (stable ones
  // stay as they are written, the form other expressions use).
  Expr resolved(const Expr& e) const {
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

  // ------------------------------------------------------------ loops
  int frame_of(const ir::VarInfo* v, size_t from = 0) const {
    for (size_t i = loops.size(); i-- > from;)
      if (loops[i].loop->var.get() == v) return loops[i].step ? static_cast<int>(i) : -1;
    return -1;
  }

  void push(const ir::For* f) {
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

  // ------------------------------------------------------------ affine forms
  std::optional<Affine> linear(const Expr& e, int depth = 0) const {
    if (!e->type.is_int() || depth > kDepthLimit) return std::nullopt;
    auto plain = [&](const Expr& a) { return std::optional<Affine>(Affine{0, {{a, key(a), 1}}}); };
    // An atom known equal to others stands for its class.
    auto atom = [&](const Expr& a) {
      const Expr* rep = representative_of(key(a));
      if (!rep || key(*rep) == key(a)) return plain(a);
      switch ((*rep)->kind) {
        case ir::NodeKind::IntImm:
        case ir::NodeKind::Binary:
        case ir::NodeKind::Unary: return linear(*rep, depth + 1);
        default: return plain(*rep);
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
      default: return atom(e);
    }
  }

  // Whether a < b (op LT) and so on is known true or known false.
  // Within one proof the same conditions are decided again and again (each
  // elimination order linearises the same selects): those decided without
  // assumptions are kept (the proof's facts only grow).
  mutable std::map<std::string, bool> decided;
  std::optional<bool> decide(const Expr& cond) const {
    if (auto b = cond->as<ir::BoolImm>()) return b->value;
    auto c = cond->as<ir::Compare>();
    if (!c || !c->a->type.is_int() || !c->b->type.is_int()) return std::nullopt;
    const std::string& k = key(cond);
    if (auto known = decided.find(k); known != decided.end()) return known->second;
    std::optional<bool> d = decide_compare(c);
    if (d && assumptions.empty()) decided[k] = *d;
    return d;
  }
  std::optional<bool> decide_compare(const ir::Compare* c) const {
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
      default: return std::nullopt;
    }
  }

  // The classes of equal values that the known conditions make, each named
  // by its member of smallest key (union-find over keys), rebuilt when the
  // conditions change.
  void build_classes() const {
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
  const Expr* representative_of(const std::string& k) const {
    build_classes();
    auto it = representative.find(k);
    return it == representative.end() ? nullptr : &it->second;
  }
  // The other members of the class of `k`.
  std::vector<Expr> equal_to(const std::string& k) const {
    build_classes();
    auto it = representative.find(k);
    if (it == representative.end()) return {};
    std::vector<Expr> out;
    for (const Expr& e : members.at(key(it->second)))
      if (key(e) != k) out.push_back(e);
    return out;
  }

  // Bounds of a loop variable as forms: its first value and (for the upper
  // side) the forms its end may be rewritten to. range(b, max(x, c)) with
  // b >= c runs only when x > c, so its variable stays below x.
  std::vector<Affine> loop_bounds(const Frame& fr, bool upper) const {
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

  bool nonneg(const Affine& d) const {
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
      return binary(t.atom, {BinaryOp::Max, BinaryOp::PyMax, BinaryOp::Min, BinaryOp::PyMin}) ||
             t.atom->as<ir::Select>();
    };
    for (bool first_pass : {true, false})
      for (size_t i = 0; i < d.terms.size(); ++i)
        if (compound(d.terms[i]) == first_pass && eliminate(d, i)) return true;
    return false;
  }

  // Whether d is non-negative with its term `at` replaced by `value`, a bound
  // on the side that keeps the inequality.
  bool with_value(const Affine& d, size_t at, const Affine& value) const {
    Affine rest = d;
    rest.terms.erase(rest.terms.begin() + static_cast<std::ptrdiff_t>(at));
    auto n = combine(rest, value, d.terms[at].k);
    return n && nonneg(*n);
  }

  // Whether d is non-negative, shown by bounding its term `at`, an atom
  // other than a loop variable.
  bool eliminate(const Affine& d, size_t at) const {
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

  // Forms known non-negative where nonneg is proving: for the whole proof
  // (the shapes of the arrays whose extents it reads, `proof_facts`), and
  // while one operand of a select is eliminated (the condition that picks
  // it, `assumptions`). A form d is non-negative when d - h is, for such an
  // h; that h must cancel a term of d, so each use shortens the form and the
  // search ends.
  mutable std::vector<Affine> proof_facts, assumptions;
  bool by_hypothesis(const Affine& d) const {
    for (const auto* known : {&proof_facts, &assumptions})
      for (size_t i = 0; i < known->size(); ++i) {
        auto rest = combine(d, (*known)[i], -1);
        if (rest && rest->terms.size() < d.terms.size() && nonneg(*rest)) return true;
      }
    return false;
  }
  static void add_form(std::vector<Affine>& to, const Affine& a) {
    for (const Affine& h : to)
      if (h.c == a.c && h.terms.size() == a.terms.size() &&
          std::equal(h.terms.begin(), h.terms.end(), a.terms.begin(),
                     [](const Term& x, const Term& y) { return x.key == y.key && x.k == y.k; }))
        return;
    to.push_back(a);
  }
  // Starts a proof: its budget, no facts, no decisions kept.
  void start_proof() const {
    budget = kProofBudget;
    proof_facts.clear();
    assumptions.clear();
    decided.clear();
  }
  // Adds the forms that `cond` (holds) or its negation (!holds) makes
  // non-negative: b - a - 1 for a < b, and so on.
  void assume(const Expr& cond, bool holds, int depth) const {
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

  // ------------------------------------------------------------ run-time ranges
  // Whether `e` keeps its value through the loops from `outer` in, and can be
  // evaluated before them without loading or raising.
  bool invariant(const Expr& e, size_t outer) const {
    struct Scan : ir::IRVisitor {
      bool ok = true;
      using IRVisitor::visit;
      void visit(const ir::Load*) override { ok = false; }
      void visit(const ir::Call*) override { ok = false; }
      void visit(const ir::ArraysOverlap*) override { ok = false; }
      void visit(const ir::Cast* c) override {
        ok = ok && !c->checked;
        IRVisitor::visit(c);
      }
      void visit(const ir::Binary* b) override {
        ok = ok && !b->zero_check && b->op != BinaryOp::Div && b->op != BinaryOp::Pow;
        IRVisitor::visit(b);
      }
    } scan;
    scan.visit(e);
    if (!scan.ok) return false;
    const Frame& fr = loops[outer];
    const VarUses u = uses_of(e);
    for (const ir::VarInfo* v : u.reads)
      if (fr.body.writes.count(v) || v == fr.loop->var.get()) return false;
    for (const ir::ArrayInfo* a : u.arrays)
      if (fr.body.array_binds.count(a)) return false;
    return true;
  }

  std::optional<Interval> range(const Expr& e, size_t outer, int depth = 0) const {
    if (!e->type.is_int() || depth > kDepthLimit) return std::nullopt;
    auto point = [](const Expr& x) { return std::optional<Interval>(Interval{int64(x), int64(x)}); };
    if (auto v = e->as<ir::VarRef>()) {
      int f = frame_of(v->var.get(), outer);
      if (f >= static_cast<int>(outer)) {
        const Frame& fr = loops[static_cast<size_t>(f)];
        // Bounds that move with an enclosing loop of the nest would be
        // bounded apart from the index's other terms, which loses their
        // relation (i + j for j in range(n - i) reaches n - 1, not 2n - 2):
        // the test is made inside that loop instead, where they are fixed.
        // Two exceptions: an index of one loop variable (relax_moving: the
        // union of its ranges over the enclosing loops is its range), and
        // bounds loaded from an array (the rows of a sparse matrix,
        // range(indptr[i], indptr[i + 1]), lie within the least and greatest
        // of indptr, whatever the row).
        const VarUses begin = uses_of(fr.loop->begin), end = uses_of(fr.loop->end);
        for (size_t k = outer; k < static_cast<size_t>(f); ++k) {
          const ir::VarInfo* moving = loops[k].loop->var.get();
          if ((begin.reads.count(moving) || end.reads.count(moving)) && !relax_moving &&
              !(loaded(fr.loop->begin) && loaded(fr.loop->end)))
            return std::nullopt;
        }
        // The outer loop's bounds are evaluated just before it starts, as
        // the condition is: they are read as they are (loads included).
        auto bound = [&](const Expr& b) {
          return static_cast<size_t>(f) == outer ? point(b) : range(b, outer, depth + 1);
        };
        auto b = bound(fr.loop->begin), n = bound(fr.loop->end);
        if (!b || !n) return std::nullopt;
        if (fr.step > 0) return Interval{b->lo, op(BinaryOp::Sub, n->hi, imm(1))};
        return Interval{op(BinaryOp::Add, n->lo, imm(1)), b->hi};
      }
      if (invariant(e, outer)) return point(e);
      if (Expr value = single_value(v->var.get())) return range(value, outer, depth + 1);
      return std::nullopt;
    }
    if (auto d = e->as<ir::ArrayDim>()) {
      if (invariant(e, outer)) return point(e);
      if (Expr source = extent_source(d)) return range(source, outer, depth + 1);
      return std::nullopt;
    }
    if (auto c = e->as<ir::Cast>()) {
      if (keeps_value(c)) return range(c->value, outer, depth + 1);
    } else if (auto s = e->as<ir::Select>()) {
      if (auto known = decide(s->cond)) return range(*known ? s->t : s->f, outer, depth + 1);
      auto t = range(s->t, outer, depth + 1), f = range(s->f, outer, depth + 1);
      if (t && f) return Interval{op(BinaryOp::PyMin, t->lo, f->lo), op(BinaryOp::PyMax, t->hi, f->hi)};
    } else if (auto u = e->as<ir::Unary>(); u && u->op == ir::UnaryOp::Neg) {
      if (auto a = range(u->a, outer, depth + 1))
        return Interval{op(BinaryOp::Sub, imm(0), a->hi), op(BinaryOp::Sub, imm(0), a->lo)};
    } else if (auto b = e->as<ir::Binary>()) {
      auto kb = b->b->as<ir::IntImm>();
      switch (b->op) {
        case BinaryOp::Add:
        case BinaryOp::Sub: {
          auto x = range(b->a, outer, depth + 1), y = range(b->b, outer, depth + 1);
          if (!x || !y) break;
          if (b->op == BinaryOp::Add) return Interval{op(BinaryOp::Add, x->lo, y->lo), op(BinaryOp::Add, x->hi, y->hi)};
          return Interval{op(BinaryOp::Sub, x->lo, y->hi), op(BinaryOp::Sub, x->hi, y->lo)};
        }
        case BinaryOp::Mul: {
          auto ka = b->a->as<ir::IntImm>();
          const ir::IntImm* k = kb ? kb : ka;
          if (!k || k->value > kLimit || k->value < -kLimit) break;
          auto x = range(kb ? b->a : b->b, outer, depth + 1);
          if (!x) break;
          Expr lo = op(BinaryOp::Mul, x->lo, imm(k->value)), hi = op(BinaryOp::Mul, x->hi, imm(k->value));
          if (k->value < 0) std::swap(lo, hi);
          return Interval{lo, hi};
        }
        case BinaryOp::Min:
        case BinaryOp::PyMin:
        case BinaryOp::Max:
        case BinaryOp::PyMax: {
          auto x = range(b->a, outer, depth + 1), y = range(b->b, outer, depth + 1);
          if (!x || !y) break;
          BinaryOp o = b->op == BinaryOp::Min || b->op == BinaryOp::PyMin ? BinaryOp::PyMin : BinaryOp::PyMax;
          return Interval{op(o, x->lo, y->lo), op(o, x->hi, y->hi)};
        }
        case BinaryOp::FloorDiv: {
          if (!kb || kb->value <= 0) break;
          auto x = range(b->a, outer, depth + 1);
          if (!x) break;
          return Interval{op(BinaryOp::FloorDiv, x->lo, imm(kb->value)), op(BinaryOp::FloorDiv, x->hi, imm(kb->value))};
        }
        case BinaryOp::Mod:
          if (kb && kb->value > 0) return Interval{imm(0), imm(kb->value - 1)};
          break;
        default: break;
      }
    } else if (auto l = e->as<ir::Load>()) {
      return scanned(l, outer, depth);
    }
    if (invariant(e, outer)) return point(e);
    return std::nullopt;
  }

  // ------------------------------------------------------------ scans

  // Whether `e` is an element of an array (an integer conversion of one).
  static bool loaded(const Expr& e) {
    if (auto c = e->as<ir::Cast>(); c && keeps_value(c)) return loaded(c->value);
    return e->as<ir::Load>() != nullptr;
  }

  // The range of an element of a 1-D integer array at positions whose range
  // is known before loop(outer): the least and greatest of a scan of those
  // positions (IndexScan), valid when the positions are within the array
  // and the nest writes no element of it (a write to another array counts
  // unless the two do not overlap: a run-time test, or none when the other
  // is allocated in the function).
  std::optional<Interval> scanned(const ir::Load* l, size_t outer, int depth) const {
    const ScalarType t = l->type;
    if (l->indices.size() != 1 || !t.is_int() || (t.is_unsigned() && t.bits() >= 64) || !scans_allowed)
      return std::nullopt;
    const Frame& fr = loops[outer];
    if (fr.body.array_binds.count(l->array.get())) return std::nullopt;
    WrittenArrays w;
    w.visit(fr.loop->body);
    if (w.binds || w.written.count(l->array.get())) return std::nullopt;
    bool wraps = false;
    const Expr x = unwrapped(l->indices[0], l->array, 0, &wraps);
    auto r = range(x, outer, depth + 1);
    auto n = range(ir::ArrayDim::make(l->array, 0, l->loc), outer, depth + 1);
    if (!r || !n) return std::nullopt;
    // One scan per loop: each loop's test runs its own.
    const std::string k = std::to_string(reinterpret_cast<uintptr_t>(fr.loop)) + "|" +
                          std::to_string(l->array->id) + "|" + key(r->lo) + "|" + key(r->hi) + "|" + key(n->lo);
    auto found = scan_index.find(k);
    if (found == scan_index.end()) {
      Expr valid = all_of(ir::Compare::make(ir::CompareOp::GE, r->lo, imm(0)),
                          ir::Compare::make(ir::CompareOp::LT, r->hi, n->lo));
      valid = guarded(valid, {r->lo, r->hi, n->lo});
      for (const ir::ArrayInfo* a : w.written) {
        if (bindings.allocation.count(a) && bindings.binds.at(a) == 1) continue;
        valid = all_of(valid, ir::Unary::make(ir::UnaryOp::Not,
                                              ir::ArraysOverlap::make(l->array, array_named(fr.loop->body, a), false,
                                                                      l->loc)));
      }
      // The positions may come from other scans: theirs must hold too.
      for (const ScanEntry* inner : scans_in({r->lo, r->hi})) valid = all_of(inner->valid, valid);
      auto var = [&](const char* what) {
        return std::make_shared<ir::VarInfo>(std::string("_") + what + "_" + l->array->name, ScalarType::py_int(),
                                             l->loc, false);
      };
      scans.push_back({{var("least"), var("greatest"), l->array, r->lo, r->hi}, valid});
      found = scan_index.emplace(k, scans.size() - 1).first;
    }
    const IndexFacts::IndexScan& sc = scans[found->second].scan;
    return Interval{ir::VarRef::make(sc.least, l->loc), ir::VarRef::make(sc.greatest, l->loc)};
  }

  // The scans whose results `exprs` read, in the order they were made.
  std::vector<const ScanEntry*> scans_in(const std::vector<Expr>& exprs) const {
    ir::VarSet read;
    for (const Expr& e : exprs) {
      const VarUses u = uses_of(e);
      read.insert(u.reads.begin(), u.reads.end());
    }
    std::vector<const ScanEntry*> out;
    for (const ScanEntry& entry : scans)
      if (read.count(entry.scan.least.get()) || read.count(entry.scan.greatest.get())) out.push_back(&entry);
    return out;
  }

  // The ArrayVar of `a` as `body` mentions it.
  static ir::ArrayVar array_named(const ir::Stmt& body, const ir::ArrayInfo* a) {
    struct Find : ir::IRVisitor {
      const ir::ArrayInfo* want;
      ir::ArrayVar found;
      using IRVisitor::visit;
      void visit(const ir::Store* st) override {
        if (st->array.get() == want) found = st->array;
        IRVisitor::visit(st);
      }
      void visit(const ir::AtomicUpdate* st) override {
        if (st->array.get() == want) found = st->array;
        IRVisitor::visit(st);
      }
      void visit(const ir::MatMul* st) override {
        if (st->c.get() == want) found = st->c;
        IRVisitor::visit(st);
      }
      void visit(const ir::For* f) override {
        for (const ir::ArrayReduction& r : f->schedule.array_reductions)
          if (r.array.get() == want) found = r.array;
        IRVisitor::visit(f);
      }
    } find;
    find.want = a;
    find.visit(body);
    return find.found;
  }

  // Python's wrap of a negative index, as transforms/normalize_indices
  // writes it, (x + n) if x < 0 else x: x, with *wraps set; else the index.
  Expr unwrapped(const Expr& index, const ir::ArrayVar& array, int dim, bool* wraps) const {
    *wraps = false;
    auto sel = index->as<ir::Select>();
    if (!sel) return index;
    auto lt = sel->cond->as<ir::Compare>();
    auto zero = lt ? lt->b->as<ir::IntImm>() : nullptr;
    auto add = binary(sel->t, {BinaryOp::Add});
    auto dim_of = add ? add->b->as<ir::ArrayDim>() : nullptr;
    if (lt && lt->op == ir::CompareOp::LT && zero && zero->value == 0 && dim_of && dim_of->array == array &&
        dim_of->dim == dim && key(lt->a) == key(sel->f) && key(add->a) == key(sel->f)) {
      *wraps = true;
      return sel->f;
    }
    return index;
  }

  // `cond` and: every run-time value that `tested` (sums and multiples of
  // them) reads lies within +-kGuard, so that the sums cannot overflow.
  Expr guarded(Expr cond, const std::vector<Expr>& tested) const {
    std::vector<Expr> leaves;
    std::set<std::string> seen;
    std::function<void(const Expr&)> collect = [&](const Expr& e) {
      // The operations range() writes; any other value (an invariant product
      // of variables, say) is computed as the kernel computes it, so it is
      // itself a leaf.
      auto b = binary(e, {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::PyMin, BinaryOp::PyMax,
                          BinaryOp::FloorDiv});
      auto c = e->as<ir::Cast>();
      auto u = e->as<ir::Unary>();
      if (b && (b->op != BinaryOp::Mul || b->b->as<ir::IntImm>()) &&
          (b->op != BinaryOp::FloorDiv || b->b->as<ir::IntImm>())) {
        collect(b->a);
        collect(b->b);
      } else if (c && keeps_value(c)) {
        collect(c->value);
      } else if (u && u->op == ir::UnaryOp::Neg) {
        collect(u->a);
      } else if (!e->as<ir::IntImm>() && seen.insert(key(e)).second) {
        leaves.push_back(e);
      }
    };
    for (const Expr& e : tested) collect(e);
    for (const Expr& leaf : leaves) {
      Expr v = int64(leaf);
      cond = all_of(cond, ir::Compare::make(ir::CompareOp::LE, v, imm(kGuard)));
      if (!leaf->as<ir::ArrayDim>()) cond = all_of(cond, ir::Compare::make(ir::CompareOp::GE, v, imm(-kGuard)));
    }
    return cond;
  }
};

IndexFacts::IndexFacts(const ir::Stmt& body, bool scans) : state_(std::make_unique<State>()) {
  state_->bindings.visit(body);
  state_->scans_allowed = scans;
}
IndexFacts::~IndexFacts() = default;

void IndexFacts::push_loop(const ir::For* loop) { state_->push(loop); }
void IndexFacts::pop_loop() { state_->loops.pop_back(); }
size_t IndexFacts::depth() const { return state_->loops.size(); }
const ir::For* IndexFacts::loop(size_t i) const { return state_->loops.at(i).loop; }

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
