// The visitors and helpers the parts of worker planning share
// (worker_plan.h): worker_plan.cpp, worker_rows.cpp and worker_accesses.cpp.
// Private to transforms/gpu.
#pragma once

#include "transforms/gpu/worker_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include "analysis/loop_exits.h"
#include "analysis/var_uses.h"
#include "ir/ir_equal.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::transforms::gpu::planning {

using namespace ir;

using VarSet = VarSet;

// The dimension of an array whose stride is 1, or -1 when the layout does
// not say.
inline int unit_dim(const ArrayType& t) {
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

inline bool uses_any(const Expr& e, const VarSet& vars) {
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

inline VarSet scalar_writes(const Stmt& s) {
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
inline bool steps_with(const Expr& e, const VarInfo* v, const VarSet& varying, bool wrapped = false) {
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

inline std::vector<RawAccess> accesses_in(const Stmt& s) {
  AccessCollector c;
  c.visit(s);
  return c.accesses;
}

inline std::string indices_text(const std::vector<Expr>& indices) {
  std::string out;
  for (size_t k = 0; k < indices.size(); ++k) out += (k ? ", " : "") + to_string(indices[k]);
  return out;
}

// What keeps a statement from running in one lane of a team, or a serial
// loop from being spread: leaving early, assertions, atomics, array binding.
class Constructs : public analysis::LoopDepthVisitor {
 public:
  bool leaves = false;   // break/continue/return at the statement's own level
  bool asserts = false;  // an assertion at the statement's own level (it leaves the worker)
  bool binds = false;    // Allocate, ArrayBind, an array Declare
  bool atomics = false;
  bool loops_while = false;       // a while loop
  bool jumps = false;             // break/continue/return anywhere
  bool asserts_anywhere = false;  // an assertion anywhere
  using LoopDepthVisitor::visit;

 protected:
  void visit(const Break*) override {
    jumps = true;
    if (loop_depth() == 0) leaves = true;
  }
  void visit(const Continue*) override {
    jumps = true;
    if (loop_depth() == 0) leaves = true;
  }
  void visit(const Return* n) override {
    jumps = leaves = true;
    IRVisitor::visit(n);
  }
  void visit(const Assert* n) override {
    asserts_anywhere = true;
    if (loop_depth() == 0) asserts = true;
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
  void visit(const While* n) override {
    loops_while = true;
    LoopDepthVisitor::visit(n);
  }
};

inline Constructs constructs_of(const Stmt& s) {
  Constructs c;
  c.visit(s);
  return c;
}

inline bool binds_arrays_alone(const Stmt& s) {
  if (const Declare* d = s->as<Declare>()) return d->array != nullptr;
  return s->kind == NodeKind::Allocate || s->kind == NodeKind::ArrayBind;
}

// Every scalar of `written` that a statement list reads is assigned earlier
// in the same iteration (so no value flows from one iteration to the next).
// Assignments inside branches and inner loops count only there.
inline bool defined_before_use(const std::vector<Stmt>& stmts, VarSet defined, const VarSet& written) {
  auto ok = [&](const Expr& e) {
    VarReads reads;
    reads.visit(e);
    for (const VarInfo* v : reads.vars)
      if (written.count(v) && !defined.count(v)) return false;
    return true;
  };
  for (const Stmt& s : stmts) {
    switch (s->kind) {
      case NodeKind::Declare:
        break;
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
      default:
        return false;
    }
  }
  return true;
}

// A serial loop whose iterations touch disjoint data: no early exit, no
// atomics, no value carried between iterations through a scalar, and each
// array it writes is accessed at one index that moves with the loop
// variable. `why` says what failed.
inline bool independent_iterations(const For* f, std::string* why) {
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

inline const char* loop_word(LoopKind k) {
  switch (k) {
    case LoopKind::Serial:
      return "serial";
    case LoopKind::Vectorized:
      return "simd";
    default:
      return "parallel";
  }
}

inline std::string describe(const For* f) {
  return std::string(loop_word(f->schedule.kind)) + " loop over `" + f->var->name + "` (line " +
         std::to_string(f->loc.line) + ")";
}

// Replaces the identifier `name` in printed IR text.
inline std::string rename(const std::string& text, const std::string& name, const std::string& to) {
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

inline BodyArrays body_arrays(const std::vector<Stmt>& stmts) {
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

// The operands of an expression.
inline std::vector<const ExprNode*> operands(const ExprNode* e) {
  switch (e->kind) {
    case NodeKind::Cast:
      return {e->as<Cast>()->value.get()};
    case NodeKind::Unary:
      return {e->as<Unary>()->a.get()};
    case NodeKind::Binary:
      return {e->as<Binary>()->a.get(), e->as<Binary>()->b.get()};
    case NodeKind::Compare:
      return {e->as<Compare>()->a.get(), e->as<Compare>()->b.get()};
    case NodeKind::Logical:
      return {e->as<Logical>()->a.get(), e->as<Logical>()->b.get()};
    case NodeKind::Select:
      return {e->as<Select>()->cond.get(), e->as<Select>()->t.get(), e->as<Select>()->f.get()};
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
    default:
      return {};
  }
}

// Whether an expression calls a math function that costs more than a few
// instructions (worth a register per element).
inline bool calls_math(const ExprNode* e) {
  if (const Call* c = e->as<Call>()) {
    switch (c->fn) {
      case Intrinsic::Fabs:
      case Intrinsic::Abs:
      case Intrinsic::Floor:
      case Intrinsic::Ceil:
      case Intrinsic::Trunc:
      case Intrinsic::Round:
      case Intrinsic::IsNan:
      case Intrinsic::IsInf:
      case Intrinsic::IsFinite:
        break;
      default:
        return true;
    }
  }
  if (const Binary* b = e->as<Binary>(); b && b->op == BinaryOp::Pow && b->type.is_float()) return true;
  for (const ExprNode* o : operands(e))
    if (calls_math(o)) return true;
  return false;
}

// The scalars an expression reads, and whether all its loads are
// unchecked loads of arrays outside `written`.
inline bool reads_of(const ExprNode* e, const BodyArrays& arrays, const ArraySet& written, VarSet* vars) {
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
#define PLAIT_EXPR_NODE(n)             \
  void visit(const n* node) override { \
    if (!take_(node)) descend(node);   \
  }
#include "ir/ir_nodes.def"
  void visit(const If* n) override {
    if (unconditional_)
      IRVisitor::visit(n->cond);
    else
      IRVisitor::visit(n);
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
    if (unconditional_)
      IRVisitor::visit(node->cond);
    else
      IRVisitor::visit(node);
  }
  void descend(const Logical* node) {
    if (unconditional_)
      IRVisitor::visit(node->a);
    else
      IRVisitor::visit(node);
  }

  std::function<bool(const ExprNode*)> take_;
  bool unconditional_;
};

inline int registers_of(ScalarKind k) {
  return ScalarType{k, false}.bits() > 32 ? 2 : 1;
}

// Whether the indices of an access of `array` are `var` plus fixed terms in
// the unit-stride dimension and fixed in the others.
inline bool contiguous_in(const ArrayVar& array, const std::vector<Expr>& indices, const VarInfo* var,
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

inline bool contains(const Stmt& s, const For* loop) {
  ContainsLoop c(loop);
  c.visit(s);
  return c.found;
}

inline bool mentions(const Stmt& s, const VarInfo* v) {
  ScalarUses uses;
  uses.visit(s);
  return uses.vars.count(v) > 0;
}

// Whether a value that `loop` gives the scalar `v` can be read elsewhere in
// `stmts`: any mention outside the loop counts, except inside another loop
// whose body assigns `v` before reading it in every iteration (the versions
// of one array statement share the scalars of their temporaries).
inline bool read_outside(const std::vector<Stmt>& stmts, const VarInfo* v, const For* loop) {
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

}  // namespace plait::transforms::gpu::planning
