// Planning of team-mapped workers for the CUDA back end: which inner loops
// are spread over a team of threads, where each other statement runs, and
// where barriers go (see worker_plan.h).
#include "codegen/cuda/worker_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>

#include <map>

#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::codegen::cuda {

using namespace ir;

namespace {

using VarSet = VarSet;

// The dimension of an array whose stride is 1, or -1 when the layout does
// not say.
int unit_dim(const ArrayType& t) {
  if (t.layout == Layout::C) return t.ndim - 1;
  if (t.layout == Layout::F) return 0;
  return -1;
}

class VarReads : public IRVisitor {
 public:
  VarSet vars;
  using IRVisitor::visit;

 protected:
  void visit(const VarRef* n) override { vars.insert(n->var.get()); }
};

bool uses_any(const Expr& e, const VarSet& vars) {
  VarReads reads;
  reads.visit(e);
  for (const VarInfo* v : reads.vars)
    if (vars.count(v)) return true;
  return false;
}

// Scalars a subtree assigns (loop variables included).
class ScalarWrites : public IRVisitor {
 public:
  VarSet vars;
  using IRVisitor::visit;

 protected:
  void visit(const Assign* n) override {
    vars.insert(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    vars.insert(n->var.get());
    IRVisitor::visit(n);
  }
};

VarSet scalar_writes(const Stmt& s) {
  ScalarWrites w;
  w.visit(s);
  return w.vars;
}

// Scalars a subtree reads or assigns.
class ScalarUses : public ScalarWrites {
 public:
  using ScalarWrites::visit;

 protected:
  void visit(const VarRef* n) override { vars.insert(n->var.get()); }
};

// `e` is v, or v plus or minus terms that stay fixed while v and the
// `varying` scalars change: distinct values of v give distinct values of e.
// With `wrapped`, also Python's negative-index form `k + n if k < 0 else k`
// of such an expression: contiguous in v, but two values of v (-1 and n - 1)
// can reach one element, so it proves no independence.
bool steps_with(const Expr& e, const VarInfo* v, const VarSet& varying, bool wrapped = false) {
  if (const VarRef* r = e->as<VarRef>()) return r->var.get() == v;
  if (const Cast* c = e->as<Cast>())
    return c->type.is_int() && c->value->type.is_int() && steps_with(c->value, v, varying, wrapped);
  if (const Select* s = e->as<Select>())
    return wrapped && steps_with(s->t, v, varying, wrapped) && steps_with(s->f, v, varying, wrapped);
  const Binary* b = e->as<Binary>();
  if (!b || b->type.is_float()) return false;
  VarSet moving = varying;
  moving.insert(v);
  auto fixed = [&](const Expr& x) { return !uses_any(x, moving); };
  if (b->op == BinaryOp::Add)
    return (steps_with(b->a, v, varying, wrapped) && fixed(b->b)) ||
           (steps_with(b->b, v, varying, wrapped) && fixed(b->a));
  if (b->op == BinaryOp::Sub) return steps_with(b->a, v, varying, wrapped) && fixed(b->b);
  return false;
}

struct RawAccess {
  const ArrayVar* array;
  const std::vector<Expr>* indices;
  bool write;
};

class AccessCollector : public IRVisitor {
 public:
  std::vector<RawAccess> accesses;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    accesses.push_back({&n->array, &n->indices, false});
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    accesses.push_back({&n->array, &n->indices, true});
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    accesses.push_back({&n->array, &n->indices, true});
    IRVisitor::visit(n);
  }
};

std::vector<RawAccess> accesses_in(const Stmt& s) {
  AccessCollector c;
  c.visit(s);
  return c.accesses;
}

std::string indices_text(const std::vector<Expr>& indices) {
  std::string out;
  for (size_t k = 0; k < indices.size(); ++k) out += (k ? ", " : "") + to_string(indices[k]);
  return out;
}

// What keeps a statement from running in one lane of a team, or a serial
// loop from being spread: leaving early, assertions, atomics, array binding.
class Constructs : public IRVisitor {
 public:
  bool leaves = false;       // break/continue/return at the statement's own level
  bool asserts = false;      // an assertion at the statement's own level (it leaves the worker)
  bool binds = false;        // Allocate, ArrayBind, an array Declare
  bool atomics = false;
  bool loops_while = false;  // a while loop
  bool jumps = false;        // break/continue/return anywhere
  bool asserts_anywhere = false;  // an assertion anywhere
  using IRVisitor::visit;

 protected:
  void visit(const Break*) override {
    jumps = true;
    if (depth_ == 0) leaves = true;
  }
  void visit(const Continue*) override {
    jumps = true;
    if (depth_ == 0) leaves = true;
  }
  void visit(const Return* n) override {
    jumps = leaves = true;
    IRVisitor::visit(n);
  }
  void visit(const Assert* n) override {
    asserts_anywhere = true;
    if (depth_ == 0) asserts = true;
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    atomics = true;
    IRVisitor::visit(n);
  }
  void visit(const Allocate* n) override {
    binds = true;
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind*) override { binds = true; }
  void visit(const Declare* n) override { binds = binds || n->array != nullptr; }
  void visit(const For* n) override {
    ++depth_;
    IRVisitor::visit(n);
    --depth_;
  }
  void visit(const While* n) override {
    loops_while = true;
    ++depth_;
    IRVisitor::visit(n);
    --depth_;
  }

 private:
  int depth_ = 0;
};

Constructs constructs_of(const Stmt& s) {
  Constructs c;
  c.visit(s);
  return c;
}

bool binds_arrays_alone(const Stmt& s) {
  if (const Declare* d = s->as<Declare>()) return d->array != nullptr;
  return s->kind == NodeKind::Allocate || s->kind == NodeKind::ArrayBind;
}

// Every scalar of `written` that a statement list reads is assigned earlier
// in the same iteration (so no value flows from one iteration to the next).
// Assignments inside branches and inner loops count only there.
bool defined_before_use(const std::vector<Stmt>& stmts, VarSet defined, const VarSet& written) {
  auto ok = [&](const Expr& e) {
    VarReads reads;
    reads.visit(e);
    for (const VarInfo* v : reads.vars)
      if (written.count(v) && !defined.count(v)) return false;
    return true;
  };
  for (const Stmt& s : stmts) {
    switch (s->kind) {
      case NodeKind::Declare: break;
      case NodeKind::Assign: {
        const Assign* a = s->as<Assign>();
        if (!ok(a->value)) return false;
        defined.insert(a->var.get());
        break;
      }
      case NodeKind::Store: {
        const Store* st = s->as<Store>();
        for (const Expr& i : st->indices)
          if (!ok(i)) return false;
        if (!ok(st->value)) return false;
        break;
      }
      case NodeKind::If: {
        const If* i = s->as<If>();
        if (!ok(i->cond) || !defined_before_use(statements_of(i->then_case), defined, written) ||
            !defined_before_use(statements_of(i->else_case), defined, written))
          return false;
        break;
      }
      case NodeKind::For: {
        const For* f = s->as<For>();
        if (!ok(f->begin) || !ok(f->end) || !ok(f->step)) return false;
        VarSet inner = defined;
        inner.insert(f->var.get());
        if (!defined_before_use(statements_of(f->body), inner, written)) return false;
        break;
      }
      case NodeKind::Block:
        if (!defined_before_use(statements_of(s), defined, written)) return false;
        break;
      default: return false;
    }
  }
  return true;
}

// A serial loop whose iterations touch disjoint data: no early exit, no
// atomics, no value carried between iterations through a scalar, and each
// array it writes is accessed at one index that moves with the loop
// variable. `why` says what failed.
bool independent_iterations(const For* f, std::string* why) {
  const Constructs c = constructs_of(f->body);
  if (c.jumps || c.asserts || c.atomics || c.binds || c.loops_while) {
    *why = "it may leave early, assert, update atomically or bind arrays";
    return false;
  }
  VarSet written = scalar_writes(f->body);
  if (!defined_before_use(statements_of(f->body), {}, written)) {
    *why = "a scalar carries a value from one iteration to the next";
    return false;
  }
  const std::vector<RawAccess> accesses = accesses_in(f->body);
  for (const RawAccess& w : accesses) {
    if (!w.write) continue;
    const std::string at = indices_text(*w.indices);
    bool moves = false;
    for (const Expr& i : *w.indices) moves = moves || steps_with(i, f->var.get(), written);
    bool same = true;
    for (const RawAccess& a : accesses)
      if (a.array->get() == w.array->get() && indices_text(*a.indices) != at) same = false;
    if (!moves || !same) {
      *why = "`" + (*w.array)->name + "` is written where other iterations may access it";
      return false;
    }
  }
  return true;
}

const char* loop_word(LoopKind k) {
  switch (k) {
    case LoopKind::Serial: return "serial";
    case LoopKind::Vectorized: return "simd";
    default: return "parallel";
  }
}

std::string describe(const For* f) {
  return std::string(loop_word(f->schedule.kind)) + " loop over `" + f->var->name + "` (line " +
         std::to_string(f->loc.line) + ")";
}

// Replaces the identifier `name` in printed IR text.
std::string rename(const std::string& text, const std::string& name, const std::string& to) {
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  std::string out;
  size_t k = 0;
  while (k < text.size()) {
    if (text.compare(k, name.size(), name) == 0 && (k == 0 || !ident(text[k - 1])) &&
        (k + name.size() == text.size() || !ident(text[k + name.size()]))) {
      out += to;
      k += name.size();
    } else {
      out += text[k++];
    }
  }
  return out;
}

// The assignments to one scalar under a statement.
class AssignsTo : public IRVisitor {
 public:
  explicit AssignsTo(const VarInfo* v) : var_(v) {}
  std::vector<const Assign*> found;
  using IRVisitor::visit;

 protected:
  void visit(const Assign* n) override {
    if (n->var.get() == var_) found.push_back(n);
    IRVisitor::visit(n);
  }

 private:
  const VarInfo* var_;
};

// The accesses of a statement that run whenever the statement runs: not in
// branches, inner loops or the operands of a conditional expression that may
// not be evaluated.
class UnconditionalAccesses : public AccessCollector {
 public:
  using AccessCollector::visit;

 protected:
  void visit(const If* n) override { IRVisitor::visit(n->cond); }
  void visit(const For* n) override {
    IRVisitor::visit(n->begin);
    IRVisitor::visit(n->end);
    IRVisitor::visit(n->step);
  }
  void visit(const While*) override {}
  void visit(const Select* n) override { IRVisitor::visit(n->cond); }
  void visit(const Logical* n) override { IRVisitor::visit(n->a); }
};

// The first load of each array in a subtree.
class FirstLoads : public IRVisitor {
 public:
  ArrayMap<const Load*> first;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    first.try_emplace(n->array.get(), n);
    IRVisitor::visit(n);
  }
};

// The arrays a subtree reads or writes with a bounds check.
class CheckedAccesses : public IRVisitor {
 public:
  ArraySet arrays;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (n->checked) arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    if (n->checked) arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
};

// The arrays of a worker body under the names bound to them by its
// top-level ArrayBinds, and the shapes of its top-level allocations: two
// loop bounds `e.shape[0]` and `x.shape[1]` are the same when `e` is bound to
// a temporary allocated with shape (x.shape[1],).
struct BodyArrays {
  ArrayMap<ArrayVar> root;               // name bound in the body -> the array it names
  ArrayMap<const Allocate*> allocation;  // root -> its top-level allocation
  ArraySet declared;                     // names declared or allocated in the body
  ArraySet unsafe;                       // rebound, or bound or allocated below the top level (roots)

  const ArrayInfo* of(const ArrayInfo* a) const {
    auto it = root.find(a);
    return it == root.end() ? a : it->second.get();
  }
  ArrayVar var_of(const ArrayVar& a) const {
    auto it = root.find(a.get());
    return it == root.end() ? a : it->second;
  }
};

class NestedBindings : public IRVisitor {
 public:
  std::vector<const ArrayInfo*> arrays;
  using IRVisitor::visit;

 protected:
  void visit(const Allocate* n) override { arrays.push_back(n->array.get()); }
  void visit(const ArrayBind* n) override {
    arrays.push_back(n->dst.get());
    arrays.push_back(n->src.get());
  }
};

BodyArrays body_arrays(const std::vector<Stmt>& stmts) {
  BodyArrays b;
  for (const Stmt& s : stmts) {
    if (const Declare* d = s->as<Declare>(); d && d->array) b.declared.insert(d->array.get());
    if (const Allocate* al = s->as<Allocate>()) {
      const ArrayInfo* a = al->array.get();
      if (b.root.count(a) || b.allocation.count(a)) b.unsafe.insert(b.of(a));
      b.allocation[a] = al;
      b.declared.insert(a);
      continue;
    }
    if (const ArrayBind* ab = s->as<ArrayBind>()) {
      const ArrayInfo* dst = ab->dst.get();
      const ArrayVar src = b.var_of(ab->src);
      if (b.root.count(dst) || b.allocation.count(dst)) {
        b.unsafe.insert(b.of(dst));
        b.unsafe.insert(src.get());
      }
      b.root[dst] = src;
      continue;
    }
    NestedBindings nested;
    nested.visit(s);
    for (const ArrayInfo* a : nested.arrays) b.unsafe.insert(b.of(a));
  }
  return b;
}

// An expression with each extent of a name bound in the body replaced by the
// same extent of its array, and that of a top-level allocation by its shape.
class CanonicalExtents : public IRMutator {
 public:
  explicit CanonicalExtents(const BodyArrays& arrays) : arrays_(arrays) {}

 protected:
  Expr visit(const ArrayDim* n, const Expr& self) override {
    const ArrayVar a = arrays_.var_of(n->array);
    auto al = arrays_.allocation.find(a.get());
    if (al != arrays_.allocation.end() && !arrays_.unsafe.count(a.get()) &&
        static_cast<size_t>(n->dim) < al->second->shape.size())
      return mutate(al->second->shape[static_cast<size_t>(n->dim)]);
    if (a.get() == n->array.get()) return self;
    return ArrayDim::make(a, n->dim, n->loc);
  }

 private:
  const BodyArrays& arrays_;
};

}  // namespace

ReductionForm reduction_form(const Stmt& body, const Reduction& r) {
  if (!r.var->type.is_float() || (r.op != ReduceOp::Max && r.op != ReduceOp::Min)) return ReductionForm::Ordinary;
  AssignsTo assigns(r.var.get());
  assigns.visit(body);
  bool propagating = false, ignoring = false;
  for (const Assign* a : assigns.found) {
    const Binary* b = a->value->as<Binary>();
    if (!b) return ReductionForm::OrderDependent;
    const VarRef* left = b->a->as<VarRef>();
    const bool var_first = left && left->var.get() == r.var.get();
    switch (b->op) {
      case BinaryOp::Max:
      case BinaryOp::Min: propagating = true; break;
      case BinaryOp::PyMax:
      case BinaryOp::PyMin:
        if (!var_first) return ReductionForm::OrderDependent;
        ignoring = true;
        break;
      default: return ReductionForm::OrderDependent;
    }
  }
  if (propagating && ignoring) return ReductionForm::OrderDependent;
  return propagating ? ReductionForm::NanPropagating : ReductionForm::NanIgnoring;
}

bool serial_loop_independent(const For* loop) {
  std::string why;
  return independent_iterations(loop, &why);
}

namespace {

// The scalars a subtree assigns, declares or loops over, in order, with how
// many statements assign each (assignments and loops).
class AssignedScalars : public IRVisitor {
 public:
  std::vector<Var> vars;
  VarMap<int> sites;
  using IRVisitor::visit;

 protected:
  void add(const Var& v) {
    if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
  }
  void visit(const Assign* n) override {
    add(n->var);
    ++sites[n->var.get()];
    IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    add(n->var);
    ++sites[n->var.get()];
    IRVisitor::visit(n);
  }
  void visit(const Declare* n) override {
    if (n->var) add(n->var);
  }
};

}  // namespace

bool paired_loop(const For* f, PairedLoop* out) {
  if (!f->schedule.reductions.empty() || !f->schedule.array_reductions.empty()) return false;
  const Constructs c = constructs_of(f->body);
  if (c.jumps || c.asserts_anywhere || c.atomics || c.binds || c.loops_while) return false;
  PairedLoop paired;
  std::vector<Stmt> pending = statements_of(f->body);
  for (size_t k = 0; k < pending.size(); ++k) {
    if (const Block* b = pending[k]->as<Block>()) {
      pending.insert(pending.begin() + static_cast<std::ptrdiff_t>(k) + 1, b->stmts.begin(), b->stmts.end());
      continue;
    }
    paired.stmts.push_back(pending[k]);
  }
  AssignedScalars assigned;
  assigned.visit(f->body);
  VarSet varying{f->var.get()};
  for (const Var& v : assigned.vars) varying.insert(v.get());
  // A fused loop's variable is shared, so nothing else may assign it.
  VarSet shared;
  for (const Stmt& s : paired.stmts) {
    const For* inner = s->as<For>();
    bool fused = inner && assigned.sites[inner->var.get()] == 1;
    for (const Expr& e : fused ? std::vector<Expr>{inner->begin, inner->end, inner->step} : std::vector<Expr>{}) {
      AccessCollector reads;
      reads.visit(e);
      fused = fused && reads.accesses.empty() && !uses_any(e, varying);
    }
    paired.fused.push_back(fused);
    if (fused) shared.insert(inner->var.get());
  }
  if (shared.empty()) return false;
  paired.copies.push_back(f->var);
  for (const Var& v : assigned.vars)
    if (v != f->var && !shared.count(v.get())) paired.copies.push_back(v);
  *out = std::move(paired);
  return true;
}

bool straight_line_worker(const Stmt& body, std::string* why) {
  std::vector<Stmt> pending = statements_of(body);
  for (size_t k = 0; k < pending.size(); ++k) {
    const Stmt& s = pending[k];
    if (const Block* b = s->as<Block>()) {
      pending.insert(pending.end(), b->stmts.begin(), b->stmts.end());
      continue;
    }
    const Declare* d = s->as<Declare>();
    const bool scalar_declare = d && d->var && !d->array;
    if (!scalar_declare && s->kind != NodeKind::Assign && s->kind != NodeKind::Store) {
      *why = "line " + std::to_string(s->loc.line) + " is not a scalar assignment or an element store";
      return false;
    }
  }
  if (!defined_before_use(statements_of(body), {}, scalar_writes(body))) {
    *why = "a scalar may be read before the iteration assigns it";
    return false;
  }
  return true;
}

namespace {

// Whether the indices of an access of `array` are `var` plus fixed terms in
// the unit-stride dimension and fixed in the others.
bool contiguous_in(const ArrayVar& array, const std::vector<Expr>& indices, const VarInfo* var,
                   const VarSet& varying) {
  const int d = unit_dim(array->type);
  if (d < 0) return false;
  // Fixed terms must not read elements, which the body may write.
  for (const Expr& e : indices) {
    AccessCollector reads;
    reads.visit(e);
    if (!reads.accesses.empty()) return false;
  }
  VarSet moving = varying;
  moving.insert(var);
  for (size_t k = 0; k < indices.size(); ++k) {
    if (static_cast<int>(k) == d ? !steps_with(indices[k], var, varying) : uses_any(indices[k], moving)) return false;
  }
  return true;
}

class ContiguousCollector : public IRVisitor {
 public:
  ContiguousCollector(const VarInfo* var, VarSet varying) : var_(var), varying_(std::move(varying)) {}
  ContiguousAccesses found;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (conditional_ == 0 && !n->checked && contiguous_in(n->array, n->indices, var_, varying_)) found.loads.push_back(n);
    // A checked load computes its indices inside its own check.
    if (n->checked) ++conditional_;
    IRVisitor::visit(n);
    if (n->checked) --conditional_;
  }
  void visit(const Store* n) override {
    if (!n->checked && contiguous_in(n->array, n->indices, var_, varying_)) found.stores.push_back(n);
    IRVisitor::visit(n);
  }
  void visit(const Select* n) override {
    visit(n->cond);
    ++conditional_;
    visit(n->t);
    visit(n->f);
    --conditional_;
  }
  void visit(const Logical* n) override {
    visit(n->a);
    ++conditional_;
    visit(n->b);
    --conditional_;
  }

 private:
  const VarInfo* var_;
  VarSet varying_;
  int conditional_ = 0;
};

}  // namespace

bool ContiguousAccesses::has(const Load* l) const { return std::find(loads.begin(), loads.end(), l) != loads.end(); }

bool ContiguousAccesses::has(const Store* s) const {
  return std::find(stores.begin(), stores.end(), s) != stores.end();
}

ContiguousAccesses contiguous_accesses(const Stmt& body, const VarInfo* var) {
  ContiguousCollector collector(var, scalar_writes(body));
  collector.visit(body);
  return collector.found;
}

namespace {

class ContainsLoop : public IRVisitor {
 public:
  explicit ContainsLoop(const For* loop) : loop_(loop) {}
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit(const For* n) override {
    found = found || n == loop_;
    IRVisitor::visit(n);
  }

 private:
  const For* loop_;
};

bool contains(const Stmt& s, const For* loop) {
  ContainsLoop c(loop);
  c.visit(s);
  return c.found;
}

bool mentions(const Stmt& s, const VarInfo* v) {
  ScalarUses uses;
  uses.visit(s);
  return uses.vars.count(v) > 0;
}

// Whether a value that `loop` gives the scalar `v` can be read elsewhere in
// `stmts`: any mention outside the loop counts, except inside another loop
// whose body assigns `v` before reading it in every iteration (the versions
// of one array statement share the scalars of their temporaries).
bool read_outside(const std::vector<Stmt>& stmts, const VarInfo* v, const For* loop) {
  for (const Stmt& s : stmts) {
    if (s.get() == loop || s->kind == NodeKind::Declare || !mentions(s, v)) continue;
    if (const If* i = s->as<If>(); i && contains(s, loop)) {
      if (uses_any(i->cond, {v}) || read_outside(statements_of(i->then_case), v, loop) ||
          read_outside(statements_of(i->else_case), v, loop))
        return true;
      continue;
    }
    if (s->kind == NodeKind::Block && contains(s, loop)) {
      if (read_outside(statements_of(s), v, loop)) return true;
      continue;
    }
    const For* f = s->as<For>();
    if (!f || uses_any(f->begin, {v}) || uses_any(f->end, {v}) || uses_any(f->step, {v})) return true;
    if (contains(s, loop)) {
      if (read_outside(statements_of(f->body), v, loop)) return true;
      continue;
    }
    if (f->var.get() != v && !defined_before_use(statements_of(f->body), {f->var.get()}, {v})) return true;
  }
  return false;
}

// Places the statements of a worker body on the threads of a team,
// recursively through `if`s and serial loops that all threads run in step.
class TeamPlanner {
 public:
  TeamPlanner(const Stmt& body, const VarSet& worker_vars, const VarSet& outside)
      : body_(statements_of(body)), worker_vars_(worker_vars), outside_(outside) {}

  std::vector<std::pair<SourceLoc, std::string>> notes;  // loops that stay serial, and why
  std::vector<const For*> spread;                         // the loops spread over the team
  std::vector<const For*> in_step;                        // the serial loops all threads run in step
  int along = 0, across = 0;                              // the cost rule's counts over `spread`
  bool refused = false;                                   // a statement cannot run in a team

  // The plan of `stmts`; `has_spread` becomes true when a loop in it is spread.
  WorkerPlan place(const std::vector<Stmt>& stmts, bool* has_spread) {
    WorkerPlan plan;
    plan.team = true;
    plan.stmts = stmts;
    const size_t n = stmts.size();
    plan.placement.resize(n);
    plan.nested.resize(n);
    for (size_t k = 0; k < n && !refused; ++k) {
      const Stmt& s = stmts[k];
      const For* f = s->as<For>();
      std::string why;
      if (f && spreadable(f, &why)) {
        plan.placement[k] = Placement::Spread;
        spread.push_back(f);
        count_accesses(f);
        *has_spread = true;
        continue;
      }
      if (place_nested(s, &plan.nested[k])) {
        plan.placement[k] = Placement::Nested;
        if (f) in_step.push_back(f);
        *has_spread = true;
        continue;
      }
      if (f) notes.push_back({f->loc, describe(f) + " runs serially in its thread: " + why});
      plan.placement[k] = place_alone(s);
    }
    return plan;
  }

 private:
  // A loop whose iterations can be spread: independent, without array
  // reductions, and the scalars it assigns (other than its own variable
  // and reductions) differ between threads after it, so nothing else may
  // read them.
  bool spreadable(const For* f, std::string* why) {
    if (!f->schedule.array_reductions.empty()) return false;
    if (f->schedule.kind == LoopKind::Serial && !independent_iterations(f, why)) return false;
    // A reduction whose result depends on where the NaNs are runs the loop
    // again in order when the team finds one: the loop must only compute.
    for (const Reduction& r : f->schedule.reductions) {
      if (reduction_form(f->body, r) != ReductionForm::OrderDependent) continue;
      const Constructs c = constructs_of(f->body);
      bool writes = c.atomics || c.binds;
      for (const RawAccess& a : accesses_in(f->body)) writes = writes || a.write;
      if (writes) {
        *why = "`" + r.var->name + "` = max/min(x, `" + r.var->name +
               "`) depends on the order when x is NaN, and the loop writes arrays, so it cannot run again in order";
        return false;
      }
    }
    VarSet own{f->var.get()};
    for (const Reduction& r : f->schedule.reductions) own.insert(r.var.get());
    for (const VarInfo* v : scalar_writes(f->body)) {
      if (own.count(v)) continue;
      if (outside_.count(v) || worker_vars_.count(v) || read_outside(body_, v, f)) {
        *why = "it assigns `" + v->name + "`, which is used outside it";
        return false;
      }
    }
    return true;
  }

  // An `if` or a loop without reductions or jumps whose body has spread
  // loops: every thread runs it (its condition or bounds read only values
  // that all threads share, since a spread loop's own scalars are read
  // nowhere else), placing its statements in turn. On failure nothing of
  // the attempt stays.
  bool place_nested(const Stmt& s, std::vector<WorkerPlan>* subs) {
    const If* i = s->as<If>();
    const For* f = s->as<For>();
    if (!i && !(f && f->schedule.reductions.empty() && f->schedule.array_reductions.empty())) return false;
    if (constructs_of(f ? f->body : s).jumps) return false;
    const size_t spread_mark = spread.size(), step_mark = in_step.size(), note_mark = notes.size();
    const int along_mark = along, across_mark = across;
    bool inner = false;
    if (f) {
      subs->push_back(place(statements_of(f->body), &inner));
    } else {
      subs->push_back(place(statements_of(i->then_case), &inner));
      subs->push_back(place(statements_of(i->else_case), &inner));
    }
    if (inner && !refused) return true;
    subs->clear();
    spread.resize(spread_mark);
    in_step.resize(step_mark);
    notes.resize(note_mark);
    along = along_mark;
    across = across_mark;
    refused = false;
    return false;
  }

  // A statement that runs in lane 0 (it writes array elements) or in every
  // thread; `refused` when it can do neither.
  Placement place_alone(const Stmt& s) {
    // An array declaration, allocation or binding sets pointers and
    // extents that every thread of the team keeps (the allocation's fill
    // is spread over the team).
    if (binds_arrays_alone(s)) return Placement::AllThreads;
    const Constructs c = constructs_of(s);
    bool writes_arrays = false;
    for (const RawAccess& a : accesses_in(s)) writes_arrays = writes_arrays || a.write;
    if (c.binds || (writes_arrays && (c.leaves || c.asserts))) {
      refused = true;
      notes.push_back({s->loc, "the parallel loop stays one thread per iteration: the statement at line " +
                                   std::to_string(s->loc.line) +
                                   (c.binds ? " binds arrays" : " writes arrays and may leave the iteration")});
      return Placement::AllThreads;
    }
    return writes_arrays ? Placement::FirstThread : Placement::AllThreads;
  }

  // The cost rule's counts: accesses of a spread loop contiguous along its
  // variable, and along a worker variable.
  void count_accesses(const For* f) {
    const VarSet inner = scalar_writes(f->body);
    for (const RawAccess& a : accesses_in(f->body)) {
      const int d = unit_dim((*a.array)->type);
      if (d < 0) continue;
      const Expr& i = (*a.indices)[static_cast<size_t>(d)];
      if (steps_with(i, f->var.get(), inner, true)) {
        ++along;
        continue;
      }
      VarSet moving = inner;
      moving.insert(f->var.get());
      for (const VarInfo* w : worker_vars_) {
        if (steps_with(i, w, moving, true)) {
          ++across;
          break;
        }
      }
    }
  }

  std::vector<Stmt> body_;
  const VarSet& worker_vars_;
  const VarSet& outside_;
};

void collect_spread(const WorkerPlan& plan, std::vector<const For*>* out) {
  for (size_t k = 0; k < plan.stmts.size(); ++k) {
    if (plan.placement[k] == Placement::Spread) out->push_back(plan.stmts[k]->as<For>());
    if (plan.placement[k] == Placement::Nested)
      for (const WorkerPlan& sub : plan.nested[k]) collect_spread(sub, out);
  }
}

}  // namespace

std::vector<const For*> spread_loops(const WorkerPlan& plan) {
  std::vector<const For*> out;
  if (plan.team) collect_spread(plan, &out);
  return out;
}

namespace {

// For explain(): how a spread loop whose iterations run in pairs does so.
std::string in_pairs(const For* f) {
  PairedLoop paired;
  if (!paired_loop(f, &paired)) return "";
  std::string lines;
  for (size_t k = 0; k < paired.stmts.size(); ++k)
    if (paired.fused[k]) lines += (lines.empty() ? "" : ", ") + std::to_string(paired.stmts[k]->loc.line);
  return "; each thread runs two of its iterations at once (k and k + team), the loop" +
         std::string(lines.find(',') == std::string::npos ? " at line " : "s at lines ") + lines +
         " once for both, so that the loads of both are in flight together, and the team is sized for at most two "
         "iterations per thread";
}

}  // namespace

WorkerPlan plan_worker(const Stmt& body, const VarSet& worker_vars, const VarSet& outside) {
  TeamPlanner planner(body, worker_vars, outside);
  bool has_spread = false;
  WorkerPlan plan = planner.place(statements_of(body), &has_spread);
  plan.notes = planner.notes;
  auto single = [&] {
    WorkerPlan one;
    one.stmts = statements_of(body);
    one.notes = plan.notes;
    return one;
  };
  if (planner.refused || !has_spread) return single();
  const std::string counts = std::to_string(planner.along) + " contiguous along the inner loops, " +
                             std::to_string(planner.across) + " across iterations of the parallel loop";
  if (planner.along <= planner.across) {
    plan.teams_when_few = true;
    for (const For* f : planner.spread)
      plan.notes.push_back({f->loc, describe(f) + " runs serially in its thread when the parallel loop has many "
                                                  "iterations: one thread per parallel iteration keeps more accesses "
                                                  "coalesced (" + counts + "); with few iterations its iterations are "
                                                  "spread over a team of threads" + in_pairs(f)});
    return plan;
  }
  for (const For* f : planner.in_step)
    plan.notes.push_back({f->loc, describe(f) + " runs in step in every thread of the team; the loops inside it "
                                                "are spread over the team"});
  for (const For* f : planner.spread) {
    std::string text =
        describe(f) + ": its iterations are spread over the threads of the team (" + counts + ")" + in_pairs(f);
    for (const Reduction& r : f->schedule.reductions)
      text += "; " + std::string(reduce_op_name(r.op)) + "-reduction of `" + r.var->name +
              "` combined by warp shuffles and shared memory, the result broadcast to every thread";
    plan.notes.push_back({f->loc, text});
  }
  return plan;
}

std::vector<CachedRow> plan_cached_rows(const WorkerPlan& plan, const VarSet& worker_written) {
  if (!plan.team) return {};
  const BodyArrays arrays = body_arrays(plan.stmts);
  CanonicalExtents canonical(arrays);
  struct Candidate {
    CachedRow row;
    std::string where;  // iteration space and index, the loop variable renamed
    const std::vector<Expr>* indices = nullptr;
    const Load* first_load = nullptr;  // in the first loop that accesses the array
    const VarInfo* var = nullptr;  // of the loop of `indices`
    bool writes = false, checked = false, refused = false;
    bool outside = false;  // accessed outside the spread loops (allowed for reads when nothing writes it)
  };
  ArrayMap<Candidate> found;  // by array
  std::vector<const ArrayInfo*> order;
  for (size_t k = 0; k < plan.stmts.size(); ++k) {
    const Stmt& s = plan.stmts[k];
    const For* f = plan.placement[k] == Placement::Spread ? s->as<For>() : nullptr;
    std::string space;
    bool stable = f != nullptr;
    std::array<Expr, 3> bounds;
    if (f) {
      bounds = {canonical.mutate(f->begin), canonical.mutate(f->end), canonical.mutate(f->step)};
      for (const Expr& c : bounds) {
        stable = stable && !uses_any(c, worker_written);
        space += to_string(c) + ":";
      }
    }
    FirstLoads loads;
    if (f) loads.visit(s);
    // A filled allocation writes every element, spread over the team.
    if (const Allocate* al = s->as<Allocate>(); al && al->fill != FillKind::Uninitialized) {
      const ArrayInfo* a = arrays.of(al->array.get());
      if (!found.count(a)) order.push_back(a);
      found[a].refused = true;
    }
    for (const RawAccess& access : accesses_in(s)) {
      const ArrayInfo* a = arrays.of(access.array->get());
      auto [it, fresh] = found.try_emplace(a);
      Candidate& c = it->second;
      if (fresh) {
        order.push_back(a);
        c.row.array = access.array->get();
      }
      c.row.names.insert(access.array->get());
      c.writes = c.writes || access.write;
      if (!f) {
        c.outside = true;
        continue;
      }
      if (!stable || arrays.unsafe.count(a)) {
        c.refused = true;
        continue;
      }
      // The index may read only the loop variable and values fixed in the worker.
      bool fixed = true;
      std::vector<Expr> indices;
      for (const Expr& i : *access.indices) {
        indices.push_back(canonical.mutate(i));
        VarReads reads;
        reads.visit(indices.back());
        for (const VarInfo* v : reads.vars) fixed = fixed && (v == f->var.get() || !worker_written.count(v));
      }
      std::string text;
      for (size_t d = 0; d < indices.size(); ++d) text += (d ? ", " : "") + to_string(indices[d]);
      const std::string where = space + " | " + rename(text, f->var->name, "@");
      if (!fixed || (!c.where.empty() && c.where != where)) c.refused = true;
      c.where = where;
      if (!c.indices) {
        c.indices = access.indices;
        c.var = f->var.get();
      }
      if (c.row.loops.empty() || c.row.loops.back() != k) {
        c.row.loops.push_back(k);
        c.row.bounds.push_back(bounds);
      }
      if (c.row.loops.size() == 1 && !c.first_load) {
        auto l = loads.first.find(access.array->get());
        if (l != loads.first.end()) c.first_load = l->second;
      }
    }
    CheckedAccesses checked;
    checked.visit(s);
    for (const ArrayInfo* a : checked.arrays) found[arrays.of(a)].checked = true;
  }

  std::vector<CachedRow> rows;
  for (const ArrayInfo* a : order) {
    Candidate& c = found[a];
    if (c.refused || c.row.loops.size() < 2 || (c.outside && c.writes)) continue;
    // Two iterations that reach one element would be two threads: a written
    // array needs an index that moves with the loop variable.
    if (c.writes) {
      bool moves = false;
      for (const Expr& i : *c.indices) moves = moves || steps_with(i, c.var, {});
      if (!moves) continue;
    }
    // The first loop fills the registers of every iteration: it has an
    // access that runs in each one (and no iteration leaves early).
    const For* first = plan.stmts[c.row.loops.front()]->as<For>();
    const Constructs constructs = constructs_of(first->body);
    if (constructs.jumps || constructs.asserts) continue;
    bool fills = false;
    std::vector<Stmt> body = statements_of(first->body);
    for (size_t j = 0; j < body.size(); ++j) {
      if (const Block* b = body[j]->as<Block>()) {
        body.insert(body.begin() + static_cast<std::ptrdiff_t>(j) + 1, b->stmts.begin(), b->stmts.end());
        continue;
      }
      UnconditionalAccesses always;
      always.visit(body[j]);
      for (const RawAccess& access : always.accesses) fills = fills || arrays.of(access.array->get()) == a;
    }
    if (!fills) continue;
    // A temporary of the worker whose first access stores: its cached
    // elements need no memory.
    auto al = arrays.allocation.find(a);
    bool own = al != arrays.allocation.end() && al->second->fill == FillKind::Uninitialized && !c.checked &&
               !c.outside;
    for (const ArrayInfo* name : c.row.names) own = own && arrays.declared.count(name);
    // A loop that may run again in order (ReductionForm::OrderDependent)
    // reads the row from memory then.
    for (size_t k : c.row.loops)
      for (const Reduction& r : plan.stmts[k]->as<For>()->schedule.reductions)
        own = own && reduction_form(plan.stmts[k]->as<For>()->body, r) != ReductionForm::OrderDependent;
    if (own) {
      for (const Stmt& st : body) {
        if (st->as<Block>()) continue;
        int touches = 0;
        for (const RawAccess& access : accesses_in(st)) touches += arrays.of(access.array->get()) == a;
        if (touches == 0) continue;
        const Store* store = st->as<Store>();
        c.row.registers_only = store && touches == 1 && arrays.of(store->array.get()) == a;
        break;
      }
    }
    if (!c.writes && !c.checked) c.row.load = c.first_load;
    rows.push_back(c.row);
  }
  return rows;
}

namespace {

// The operands of an expression.
std::vector<const ExprNode*> operands(const ExprNode* e) {
  switch (e->kind) {
    case NodeKind::Cast: return {e->as<Cast>()->value.get()};
    case NodeKind::Unary: return {e->as<Unary>()->a.get()};
    case NodeKind::Binary: return {e->as<Binary>()->a.get(), e->as<Binary>()->b.get()};
    case NodeKind::Compare: return {e->as<Compare>()->a.get(), e->as<Compare>()->b.get()};
    case NodeKind::Logical: return {e->as<Logical>()->a.get(), e->as<Logical>()->b.get()};
    case NodeKind::Select: return {e->as<Select>()->cond.get(), e->as<Select>()->t.get(), e->as<Select>()->f.get()};
    case NodeKind::Call: {
      std::vector<const ExprNode*> out;
      for (const Expr& a : e->as<Call>()->args) out.push_back(a.get());
      return out;
    }
    case NodeKind::Load: {
      std::vector<const ExprNode*> out;
      for (const Expr& i : e->as<Load>()->indices) out.push_back(i.get());
      return out;
    }
    default: return {};
  }
}

// Whether `a` (in the loop over `a_var`) and `b` (in the loop over `b_var`)
// compute the same value in the same iteration: the same tree, the loop
// variables standing for each other, arrays compared through the names
// bound to them in the body.
bool same_value(const ExprNode* a, const ExprNode* b, const VarInfo* a_var, const VarInfo* b_var,
                const BodyArrays& arrays) {
  if (a->kind != b->kind || !(a->type == b->type)) return false;
  switch (a->kind) {
    case NodeKind::IntImm: return a->as<IntImm>()->value == b->as<IntImm>()->value;
    case NodeKind::FloatImm: {
      const double x = a->as<FloatImm>()->value, y = b->as<FloatImm>()->value;
      return (x == y && std::signbit(x) == std::signbit(y)) || (x != x && y != y);
    }
    case NodeKind::BoolImm: return a->as<BoolImm>()->value == b->as<BoolImm>()->value;
    case NodeKind::VarRef: {
      const VarInfo* x = a->as<VarRef>()->var.get();
      const VarInfo* y = b->as<VarRef>()->var.get();
      if (x == a_var || y == b_var) return x == a_var && y == b_var;
      return x == y;
    }
    case NodeKind::Cast:
      if (a->as<Cast>()->checked != b->as<Cast>()->checked) return false;
      break;
    case NodeKind::Unary:
      if (a->as<Unary>()->op != b->as<Unary>()->op) return false;
      break;
    case NodeKind::Binary:
      if (a->as<Binary>()->op != b->as<Binary>()->op || a->as<Binary>()->zero_check != b->as<Binary>()->zero_check)
        return false;
      break;
    case NodeKind::Compare:
      if (a->as<Compare>()->op != b->as<Compare>()->op) return false;
      break;
    case NodeKind::Logical:
      if (a->as<Logical>()->op != b->as<Logical>()->op) return false;
      break;
    case NodeKind::Select: break;
    case NodeKind::Call:
      if (a->as<Call>()->fn != b->as<Call>()->fn || a->as<Call>()->python_math != b->as<Call>()->python_math)
        return false;
      break;
    case NodeKind::Load:
      if (arrays.of(a->as<Load>()->array.get()) != arrays.of(b->as<Load>()->array.get()) ||
          a->as<Load>()->checked != b->as<Load>()->checked)
        return false;
      break;
    case NodeKind::ArrayDim:
      return arrays.of(a->as<ArrayDim>()->array.get()) == arrays.of(b->as<ArrayDim>()->array.get()) &&
             a->as<ArrayDim>()->dim == b->as<ArrayDim>()->dim;
    default: return false;
  }
  const std::vector<const ExprNode*> x = operands(a), y = operands(b);
  if (x.size() != y.size()) return false;
  for (size_t k = 0; k < x.size(); ++k)
    if (!same_value(x[k], y[k], a_var, b_var, arrays)) return false;
  return true;
}

// Whether an expression calls a math function that costs more than a few
// instructions (worth a register per element).
bool calls_math(const ExprNode* e) {
  if (const Call* c = e->as<Call>()) {
    switch (c->fn) {
      case Intrinsic::Fabs: case Intrinsic::Abs: case Intrinsic::Floor: case Intrinsic::Ceil:
      case Intrinsic::Trunc: case Intrinsic::Round: case Intrinsic::IsNan: case Intrinsic::IsInf:
      case Intrinsic::IsFinite: break;
      default: return true;
    }
  }
  if (const Binary* b = e->as<Binary>(); b && b->op == BinaryOp::Pow && b->type.is_float()) return true;
  for (const ExprNode* o : operands(e))
    if (calls_math(o)) return true;
  return false;
}

// The scalars an expression reads, and whether all its loads are
// unchecked loads of arrays outside `written`.
bool reads_of(const ExprNode* e, const BodyArrays& arrays, const ArraySet& written, VarSet* vars) {
  if (const VarRef* r = e->as<VarRef>()) vars->insert(r->var.get());
  if (const Load* l = e->as<Load>(); l && (l->checked || written.count(arrays.of(l->array.get())))) return false;
  for (const ExprNode* o : operands(e))
    if (!reads_of(o, arrays, written, vars)) return false;
  return true;
}

// Every expression node of a subtree, in evaluation order, parents first;
// `take` returning true skips the node's operands. With `unconditional`,
// only the nodes evaluated whenever the subtree runs: not in a branch, an
// inner loop's body or a conditional operand.
class ExpressionWalk : public IRVisitor {
 public:
  ExpressionWalk(std::function<bool(const ExprNode*)> take, bool unconditional)
      : take_(std::move(take)), unconditional_(unconditional) {}
  using IRVisitor::visit;

 protected:
#define PLAIT_EXPR_NODE(n) \
  void visit(const n* node) override {  \
    if (!take_(node)) descend(node);    \
  }
#include "ir/ir_nodes.def"
  void visit(const If* n) override {
    if (unconditional_) IRVisitor::visit(n->cond);
    else IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    if (!unconditional_) return IRVisitor::visit(n);
    IRVisitor::visit(n->begin);
    IRVisitor::visit(n->end);
    IRVisitor::visit(n->step);
  }
  void visit(const While* n) override {
    if (!unconditional_) IRVisitor::visit(n);
  }

 private:
  template <typename N>
  void descend(const N* node) {
    IRVisitor::visit(node);
  }
  void descend(const Select* node) {
    if (unconditional_) IRVisitor::visit(node->cond);
    else IRVisitor::visit(node);
  }
  void descend(const Logical* node) {
    if (unconditional_) IRVisitor::visit(node->a);
    else IRVisitor::visit(node);
  }

  std::function<bool(const ExprNode*)> take_;
  bool unconditional_;
};

int registers_of(ScalarKind k) { return ScalarType{k, false}.bits() > 32 ? 2 : 1; }

}  // namespace

std::vector<CachedValue> plan_cached_values(const WorkerPlan& plan, const std::vector<CachedRow>& rows,
                                            const VarSet& worker_written, int slots) {
  if (!plan.team || rows.empty()) return {};
  const BodyArrays arrays = body_arrays(plan.stmts);
  int used = 0;
  for (const CachedRow& row : rows) used += slots * registers_of(row.array->type.dtype);
  // The loops whose first iterations run on registers, with their
  // iteration spaces, and the arrays that the body writes or binds.
  std::map<size_t, std::string> space_of;
  for (const CachedRow& row : rows) {
    for (size_t k = 0; k < row.loops.size(); ++k) {
      std::string text;
      for (const Expr& e : row.bounds[k]) text += to_string(e) + ":";
      space_of[row.loops[k]] = text;
    }
  }
  ArraySet written;
  for (const Stmt& s : plan.stmts) {
    for (const RawAccess& a : accesses_in(s))
      if (a.write) written.insert(arrays.of(a.array->get()));
    NestedBindings bound;
    bound.visit(s);
    for (const ArrayInfo* a : bound.arrays) written.insert(arrays.of(a));
  }
  std::vector<CachedValue> values;
  for (auto later = space_of.begin(); later != space_of.end(); ++later) {
    const For* b = plan.stmts[later->first]->as<For>();
    ExpressionWalk walk(
        [&](const ExprNode* e) {
          VarSet reads;
          if (!calls_math(e) || !reads_of(e, arrays, written, &reads) || !reads.count(b->var.get())) return false;
          for (auto earlier = space_of.begin(); earlier != later; ++earlier) {
            if (earlier->second != later->second) continue;
            const For* a = plan.stmts[earlier->first]->as<For>();
            const Constructs c = constructs_of(a->body);
            if (c.jumps || c.asserts) continue;
            // No statement from the earlier loop to this one assigns what it reads.
            bool stable = true;
            for (size_t k = earlier->first; k <= later->first && stable; ++k) {
              for (const VarInfo* v : scalar_writes(plan.stmts[k]))
                if (v != a->var.get() && v != b->var.get() && reads.count(v)) stable = false;
            }
            if (!stable) continue;
            const ExprNode* found = nullptr;
            ExpressionWalk first(
                [&](const ExprNode* x) {
                  if (!found && same_value(x, e, a->var.get(), b->var.get(), arrays)) found = x;
                  return found != nullptr;
                },
                true);
            first.visit(a->body);
            if (!found) continue;
            auto it = std::find_if(values.begin(), values.end(), [&](const CachedValue& v) { return v.first == found; });
            if (it == values.end()) {
              const int cost = slots * registers_of(e->type.kind);
              if (used + cost > kRowCacheRegisters) return false;
              used += cost;
              values.push_back({earlier->first, found, {}});
              it = values.end() - 1;
            }
            it->reuses.emplace_back(later->first, e);
            return true;
          }
          return false;
        },
        false);
    walk.visit(b->body);
  }
  return values;
}

int group_width(const WorkerPlan& plan) {
  // A worker with a loop whose iterations run in pairs has no groups: the
  // team is sized for two iterations per thread, not for groups of them.
  for (const For* f : spread_loops(plan))
    if (PairedLoop paired; paired_loop(f, &paired)) return 1;
  for (const For* f : spread_loops(plan))
    if (!group_accesses(f).empty()) return kGroupWidth;
  return 1;
}

bool GroupAccesses::has(const Store* s) const { return std::find(stores.begin(), stores.end(), s) != stores.end(); }

GroupAccesses group_accesses(const For* loop) {
  GroupAccesses out;
  // A failed assertion, even in an inner loop, leaves the iteration before
  // the loads after it, which may then be out of range.
  class Asserts : public IRVisitor {
   public:
    bool found = false;
    using IRVisitor::visit;

   protected:
    void visit(const Assert*) override { found = true; }
  } asserts;
  asserts.visit(loop->body);
  if (asserts.found || constructs_of(loop->body).jumps) return out;
  const VarSet varying = scalar_writes(loop->body);
  const VarInfo* var = loop->var.get();
  std::vector<Stmt> stmts;
  std::vector<Stmt> pending = statements_of(loop->body);
  for (size_t k = 0; k < pending.size(); ++k) {
    if (const Block* b = pending[k]->as<Block>()) {
      pending.insert(pending.begin() + static_cast<std::ptrdiff_t>(k) + 1, b->stmts.begin(), b->stmts.end());
      continue;
    }
    stmts.push_back(pending[k]);
  }
  auto writes = [](const Stmt& s) {
    const Constructs sc = constructs_of(s);
    if (sc.atomics || sc.binds) return true;
    for (const RawAccess& a : accesses_in(s))
      if (a.write) return true;
    return false;
  };
  // Loads up to the first statement that writes (its own loads come
  // before its write), each node met only there.
  std::map<const Load*, int> everywhere;
  ExpressionWalk all(
      [&](const ExprNode* e) {
        if (const Load* l = e->as<Load>()) ++everywhere[l];
        return false;
      },
      false);
  all.visit(loop->body);
  std::map<const Load*, int> early;
  std::vector<const Load*> order;
  for (const Stmt& s : stmts) {
    ExpressionWalk unconditional(
        [&](const ExprNode* e) {
          if (const Load* l = e->as<Load>(); l && early[l]++ == 0) order.push_back(l);
          return false;
        },
        true);
    unconditional.visit(s);
    if (writes(s)) break;
  }
  for (const Load* l : order)
    if (!l->checked && early[l] == everywhere[l] && contiguous_in(l->array, l->indices, var, varying))
      out.loads.push_back(l);
  // Stores at the end of the body: after the first of them, no statement
  // reads memory, and none writes it but these stores.
  bool later_reads = false;
  for (size_t k = stmts.size(); k-- > 0;) {
    const Stmt& s = stmts[k];
    const std::vector<RawAccess> accesses = accesses_in(s);
    const Store* st = s->as<Store>();
    if (st && !st->checked && !later_reads && contiguous_in(st->array, st->indices, var, varying)) {
      out.stores.insert(out.stores.begin(), st);
      later_reads = accesses.size() > 1;
      continue;
    }
    if (writes(s)) break;
    later_reads = later_reads || !accesses.empty();
  }
  return out;
}

std::vector<ArrayAccess> array_accesses(const Stmt& stmt, Placement placement, const VarSet& worker_written,
                                        const VarSet* changing) {
  std::vector<ArrayAccess> out;
  std::string space;
  const For* f = placement == Placement::Spread ? stmt->as<For>() : nullptr;
  VarSet own;
  if (f) {
    space = to_string(f->begin) + ":" + to_string(f->end) + ":" + to_string(f->step);
    // A bound that the worker body computes may change between two loops.
    if (uses_any(f->begin, worker_written) || uses_any(f->end, worker_written) || uses_any(f->step, worker_written))
      space.append(" #").append(std::to_string(reinterpret_cast<uintptr_t>(f)));
    own = scalar_writes(f->body);
    own.insert(f->var.get());
  }
  VarSet moved;  // the `changing` scalars that are not the spread loop's own
  if (changing)
    for (const VarInfo* v : *changing)
      if (!own.count(v)) moved.insert(v);
  const bool bounds_move =
      f && (uses_any(f->begin, moved) || uses_any(f->end, moved) || uses_any(f->step, moved));
  // A filled allocation writes every element, spread over the team: any
  // later access needs a barrier.
  if (const Allocate* al = stmt->as<Allocate>(); al && al->fill != FillKind::Uninitialized)
    out.push_back({al->array.get(), true, Placement::Spread,
                   "fill #" + std::to_string(reinterpret_cast<uintptr_t>(al))});
  for (const RawAccess& a : accesses_in(stmt)) {
    ArrayAccess access{a.array->get(), a.write, placement, ""};
    if (f) {
      access.where.append(space).append(" | ").append(rename(indices_text(*a.indices), f->var->name, "@"));
      bool moves = bounds_move;
      for (const Expr& i : *a.indices) moves = moves || uses_any(i, moved);
      if (moves) access.where.append(" | an earlier iteration");
    }
    out.push_back(access);
  }
  return out;
}

std::vector<ArrayAccess> control_accesses(const Stmt& stmt) {
  std::vector<Expr> control;
  if (const If* i = stmt->as<If>()) control = {i->cond};
  if (const For* f = stmt->as<For>()) control = {f->begin, f->end, f->step};
  AccessCollector reads;
  for (const Expr& e : control) reads.visit(e);
  std::vector<ArrayAccess> out;
  for (const RawAccess& a : reads.accesses) out.push_back({a.array->get(), false, Placement::AllThreads, ""});
  return out;
}

bool needs_barrier(const std::vector<ArrayAccess>& earlier, const std::vector<ArrayAccess>& next, std::string* why) {
  for (const ArrayAccess& a : next) {
    for (const ArrayAccess& p : earlier) {
      if (a.array != p.array || !(a.write || p.write)) continue;
      const bool same_thread = a.placement == p.placement &&
                               (a.placement == Placement::FirstThread ||
                                (a.placement == Placement::Spread && a.where == p.where));
      if (same_thread) continue;
      *why = a.array->name;
      return true;
    }
  }
  return false;
}

namespace {

// The arrays a subtree writes, allocates, binds or declares.
class ArrayChanges : public IRVisitor {
 public:
  ArraySet arrays;
  using IRVisitor::visit;

 protected:
  void visit(const Store* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const MatMul* n) override {
    arrays.insert(n->c.get());
    IRVisitor::visit(n);
  }
  void visit(const Allocate* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind* n) override {
    arrays.insert(n->dst.get());
    IRVisitor::visit(n);
  }
  void visit(const Declare* n) override {
    if (n->array) arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
};

// `e` without the integer-to-integer casts around it.
const ExprNode* without_int_casts(const Expr& e) {
  const ExprNode* node = e.get();
  while (const Cast* c = node->as<Cast>()) {
    if (!c->type.is_int() || !c->value->type.is_int()) break;
    node = c->value.get();
  }
  return node;
}

// The load `P[var + c]` of a 1-D array that `bound` is (integer casts
// aside), or null.
const Load* row_bound(const Expr& bound, const VarInfo* var, int64_t* offset) {
  const Load* l = without_int_casts(bound)->as<Load>();
  if (!l || l->indices.size() != 1 || !analysis::var_plus_constant(l->indices[0], var, offset)) return nullptr;
  return l;
}

// The first 1-D array a subtree loads at an index that steps with `var`.
class ElementsOf : public IRVisitor {
 public:
  explicit ElementsOf(const VarInfo* var) : var_(var) {}
  ArrayVar array;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (!array && n->array->type.ndim == 1 && steps_with(n->indices[0], var_, {}, true)) array = n->array;
    IRVisitor::visit(n);
  }

 private:
  const VarInfo* var_;
};

}  // namespace

const For* staged_rows_loop(const WorkerPlan& plan, const Stmt& worker_body, const VarInfo* worker_var,
                            const Expr& worker_step, ArrayVar* elements, std::string* why) {
  if (!plan.team) return nullptr;
  const std::vector<const For*> spread = spread_loops(plan);
  if (spread.size() != 1) return nullptr;
  const For* f = spread.front();
  int64_t begin_offset = 0, end_offset = 0;
  const Load* begin = row_bound(f->begin, worker_var, &begin_offset);
  const Load* end = row_bound(f->end, worker_var, &end_offset);
  if (!begin || !end || begin->array.get() != end->array.get() || end_offset != begin_offset + 1) return nullptr;
  auto refuse = [&](const std::string& reason) -> const For* {
    *why = reason;
    return nullptr;
  };
  const IntImm* step = f->step->as<IntImm>();
  const IntImm* outer_step = worker_step->as<IntImm>();
  if (!step || step->value != 1 || !outer_step || outer_step->value != 1)
    return refuse("the parallel loop's or the row loop's step is not 1");
  if (std::none_of(plan.stmts.begin(), plan.stmts.end(), [&](const Stmt& s) { return s.get() == f; }))
    return refuse("the row loop is inside another statement of the worker");
  const std::vector<Reduction>& reductions = f->schedule.reductions;
  if (reductions.empty() || reductions.size() > kStagedReductions)
    return refuse("the row loop has " + std::to_string(reductions.size()) + " reductions (1 to " +
                  std::to_string(kStagedReductions) + " are staged)");
  VarSet reduced;
  for (const Reduction& r : reductions) {
    if (r.op != ReduceOp::Add || r.var->type.kind == ScalarKind::Bool)
      return refuse("its reduction of `" + r.var->name + "` is not a sum of numbers");
    reduced.insert(r.var.get());
  }
  // The body: scalar assignments only, reductions updated as `r = r + term`.
  VarSet assigned;  // non-reduction scalars the body assigns
  for (const Stmt& s : statements_of(f->body)) {
    if (const Declare* d = s->as<Declare>(); d && !d->array) continue;
    const Assign* a = s->as<Assign>();
    if (!a) return refuse("its body has a statement other than scalar assignments (line " +
                          std::to_string(s->loc.line) + ")");
    const Expr* term = &a->value;
    if (reduced.count(a->var.get())) {
      const Binary* b = a->value->as<Binary>();
      auto is_acc = [&](const Expr& x) {
        const VarRef* r = x->as<VarRef>();
        return r && r->var.get() == a->var.get();
      };
      if (!b || b->op != BinaryOp::Add || !(is_acc(b->a) || is_acc(b->b)))
        return refuse("line " + std::to_string(s->loc.line) + " updates `" + a->var->name + "` other than by `" +
                      a->var->name + " += term`");
      term = is_acc(b->a) ? &b->b : &b->a;
    } else {
      assigned.insert(a->var.get());
    }
    if (uses_any(*term, reduced))
      return refuse("line " + std::to_string(s->loc.line) + " reads a reduction variable in its term");
  }
  for (const VarInfo* v : assigned)
    if (analysis::may_read_before_write(f->body, v) || read_outside(plan.stmts, v, f))
      return refuse("`" + v->name + "` carries a value into or out of the row loop");
  // What the terms read: nothing the worker computes.
  const VarSet worker_written = scalar_writes(worker_body);
  const analysis::VarUses uses = analysis::uses_of(f->body);
  for (const VarInfo* v : uses.reads) {
    if (v == f->var.get() || reduced.count(v) || assigned.count(v)) continue;
    if (v == worker_var || worker_written.count(v))
      return refuse("its terms read `" + v->name + "`, which the worker computes");
  }
  ArrayChanges changes;
  changes.visit(worker_body);
  for (const ArrayInfo* a : uses.arrays)
    if (changes.arrays.count(a)) return refuse("its terms read `" + a->name + "`, which the worker writes or binds");
  if (changes.arrays.count(begin->array.get()))
    return refuse("the worker writes `" + begin->array->name + "`, which holds the rows' bounds");
  ElementsOf first(f->var.get());
  first.visit(f->body);
  if (!first.array) return refuse("no array of its body is indexed by its variable");
  *elements = first.array;
  return f;
}

}  // namespace plait::codegen::cuda
