// The state of IndexFacts (index_ranges.h) and the vocabulary of its parts:
// index_ranges_proofs.cpp (affine forms and their proofs),
// index_ranges_scans.cpp (ranges known at run time and scans of index
// arrays) and index_ranges.cpp (the public entry points). Private to them.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analysis/index_bounds.h"
#include "analysis/index_ranges.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::analysis {

using ir::BinaryOp;
using ir::Expr;

namespace ranges_detail {

inline constexpr int64_t kLimit = int64_t{1} << 48;  // constants beyond are "unknown"
// Run-time values a condition trusts: with them and coefficients below
// kLimit, no sum of a few terms can overflow int64.
inline constexpr int64_t kGuard = int64_t{1} << 40;
inline constexpr int kProofBudget = 3000;
inline constexpr int kDepthLimit = 24;

// Assignments and bindings of the whole function.
struct Bindings : ir::IRVisitor {
  ir::VarMap<int> assigns;
  ir::VarMap<Expr> value;
  ir::ArrayMap<int> binds;
  ir::ArrayMap<const ir::Allocate*> allocation;
  ir::ArrayMap<ir::ArrayVar> bound_to;
  ir::ArrayMap<std::vector<const ir::ArrayInfo*>> sources;  // of every binding `dst = src`
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
    sources[b->dst.get()].push_back(b->src.get());
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
inline std::optional<int64_t> mul_add(int64_t a, int64_t k, int64_t b) {
  int64_t product = 0, sum = 0;
  if (__builtin_mul_overflow(k, b, &product) || __builtin_add_overflow(a, product, &sum)) return std::nullopt;
  if (sum > kLimit || sum < -kLimit) return std::nullopt;
  return sum;
}
inline std::optional<int64_t> bounded(int64_t v) {
  return mul_add(v, 0, 0);
}

// a + k * b, or nothing when a coefficient leaves the trusted range.
inline std::optional<Affine> combine(Affine a, const Affine& b, int64_t k) {
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

inline Affine constant(int64_t c) {
  return Affine{c, {}};
}

// Text that identifies an expression's value: its printed form and the
// identities of what it reads (two variables may share a name).
inline std::string key_of(const Expr& e) {
  std::string k = ir::to_string(e);
  const VarUses u = uses_of(e);
  for (const ir::VarInfo* v : u.reads) k.append(1, '#').append(std::to_string(v->id));
  for (const ir::ArrayInfo* a : u.arrays) k.append(1, '@').append(std::to_string(a->id));
  return k;
}

// Integer-to-integer conversions that keep every value.
inline bool keeps_value(const ir::Cast* c) {
  const ScalarType from = c->value->type, to = c->type;
  if (!from.is_int() || !to.is_int()) return false;
  if (from.is_unsigned() == to.is_unsigned()) return to.bits() >= from.bits();
  return from.is_unsigned() && to.bits() > from.bits();
}

inline const ir::Binary* binary(const Expr& e, std::initializer_list<BinaryOp> ops) {
  auto b = e->as<ir::Binary>();
  if (!b) return nullptr;
  for (BinaryOp op : ops)
    if (b->op == op) return b;
  return nullptr;
}

inline Expr int64(const Expr& e) {
  if (e->type == ScalarType::py_int()) return e;
  return ir::Cast::make(ScalarType::py_int(), e, false, e->loc);
}
inline Expr imm(int64_t v) {
  return ir::IntImm::make(v, ScalarType::py_int());
}
inline Expr op(BinaryOp o, const Expr& a, const Expr& b) {
  return ir::Binary::make(o, a, b, ScalarType::py_int());
}
inline Expr all_of(const Expr& a, const Expr& b) {
  return a ? ir::Logical::make(ir::LogicalOp::And, a, b) : b;
}

struct Frame {
  const ir::For* loop;
  int64_t step = 0;  // 0: the variable has no known bounds in the body
  VarUses body;
};

struct Interval {
  Expr lo, hi;
};

}  // namespace ranges_detail

using namespace ranges_detail;  // NOLINT(google-build-using-namespace): the parts share this vocabulary

struct IndexFacts::State {
  Bindings bindings;
  VarUses function_uses;       // of the whole body
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
  size_t nest_vars_read(const Expr& e, size_t outer) const;
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

  const std::string& key(const Expr& e) const;

  // ------------------------------------------------------------ stability
  // A stable value is the same wherever it is read: constants, parameters
  // never assigned, scalars assigned once from stable values, extents of
  // arrays never rebound (or bound once to a stable shape).
  bool stable_var(const ir::VarInfo* v) const;
  bool stable_array(const ir::ArrayInfo* a) const;
  // With `in_loops`, the variables of the loops around the current point
  // count as stable too: they keep their values inside those loops' bodies.
  bool stable(const Expr& e, bool in_loops = false) const;
  // The expression an extent of a local array stands for, if any: its shape
  // where its allocation comes before the point (known_shapes), else that
  // of its one binding when that is stable.
  Expr extent_source(const ir::ArrayDim* d) const;
  // The value a scalar holds where it is read: that of its assignment where
  // one comes before the point (known_values), else that of its one
  // assignment when that is stable.
  Expr single_value(const ir::VarInfo* v) const;
  // The load a scalar holds where it is read, when its one assignment lies
  // in the nest of loop `outer` and loads an integer (k = indices[p]): it
  // then holds one of the values that load reads in the nest, so it lies
  // within the load's range (a scan of the array, as if `x[indices[p]]`
  // were written). The assignment must be inside the nest: one before it
  // could have read the array before the nest's other writes to it.
  Expr loaded_value(const ir::VarInfo* v, size_t outer) const;
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
  Expr resolved(const Expr& e) const;

  // ------------------------------------------------------------ loops
  int frame_of(const ir::VarInfo* v, size_t from = 0) const;

  void push(const ir::For* f);

  // ------------------------------------------------------------ affine forms
  std::optional<Affine> linear(const Expr& e, int depth = 0) const;

  // Whether a < b (op LT) and so on is known true or known false.
  // Within one proof the same conditions are decided again and again (each
  // elimination order linearises the same selects): those decided without
  // assumptions are kept (the proof's facts only grow).
  mutable std::map<std::string, bool> decided;
  std::optional<bool> decide(const Expr& cond) const;
  std::optional<bool> decide_compare(const ir::Compare* c) const;

  // The classes of equal values that the known conditions make, each named
  // by its member of smallest key (union-find over keys), rebuilt when the
  // conditions change.
  void build_classes() const;
  const Expr* representative_of(const std::string& k) const;
  // The other members of the class of `k`.
  std::vector<Expr> equal_to(const std::string& k) const;

  // Bounds of a loop variable as forms: its first value and (for the upper
  // side) the forms its end may be rewritten to. range(b, max(x, c)) with
  // b >= c runs only when x > c, so its variable stays below x.
  std::vector<Affine> loop_bounds(const Frame& fr, bool upper) const;

  bool nonneg(const Affine& d) const;

  // Whether d is non-negative with its term `at` replaced by `value`, a bound
  // on the side that keeps the inequality.
  bool with_value(const Affine& d, size_t at, const Affine& value) const;

  // Whether d is non-negative, shown by bounding its term `at`, an atom
  // other than a loop variable.
  bool eliminate(const Affine& d, size_t at) const;

  // Forms known non-negative where nonneg is proving: for the whole proof
  // (the shapes of the arrays whose extents it reads, `proof_facts`), and
  // while one operand of a select is eliminated (the condition that picks
  // it, `assumptions`). A form d is non-negative when d - h is, for such an
  // h; that h must cancel a term of d, so each use shortens the form and the
  // search ends.
  mutable std::vector<Affine> proof_facts, assumptions;
  bool by_hypothesis(const Affine& d) const;
  static void add_form(std::vector<Affine>& to, const Affine& a);
  // Starts a proof: its budget, no facts, no decisions kept.
  void start_proof() const;
  // Adds the forms that `cond` (holds) or its negation (!holds) makes
  // non-negative: b - a - 1 for a < b, and so on.
  void assume(const Expr& cond, bool holds, int depth) const;

  // ------------------------------------------------------------ run-time ranges
  // Whether `e` keeps its value through the loops from `outer` in, and can be
  // evaluated before them without loading or raising.
  bool invariant(const Expr& e, size_t outer) const;

  std::optional<Interval> range(const Expr& e, size_t outer, int depth = 0) const;

  // ------------------------------------------------------------ scans

  // Whether `e` is an element of an array (an integer conversion of one).
  static bool loaded(const Expr& e);

  // The range of an element of a 1-D integer array at positions whose range
  // is known before loop(outer): the least and greatest of a scan of those
  // positions (IndexScan), valid when the positions are within the array
  // and the nest writes no element of it (a write to another array counts
  // unless the two do not overlap: a run-time test, or none when the other
  // is allocated in the function).
  std::optional<Interval> scanned(const ir::Load* l, size_t outer, int depth) const;
  // Whether `a` may be scanned whole at the function's entry: a parameter
  // that no statement writes or rebinds, in a function whose written arrays
  // are all bound to memory it allocates (so none can share `a`'s).
  bool scannable_whole(const ir::ArrayInfo* a) const;
  // Whether every binding of `a` is an allocation or another such array.
  bool fresh(const ir::ArrayInfo* a, std::set<const ir::ArrayInfo*>& seen) const;

  // The scans whose results `exprs` read, in the order they were made.
  std::vector<const ScanEntry*> scans_in(const std::vector<Expr>& exprs) const;

  // The ArrayVar of `a` as `body` mentions it.
  static ir::ArrayVar array_named(const ir::Stmt& body, const ir::ArrayInfo* a);

  // Python's wrap of a negative index, as transforms/normalize_indices
  // writes it, (x + n) if x < 0 else x: x, with *wraps set; else the index.
  Expr unwrapped(const Expr& index, const ir::ArrayVar& array, int dim, bool* wraps) const;

  // `cond` and: every run-time value that `tested` (sums and multiples of
  // them) reads lies within +-kGuard, so that the sums cannot overflow.
  Expr guarded(Expr cond, const std::vector<Expr>& tested) const;
};

}  // namespace plait::analysis
