// The loop-fusion pass (fuse_loop_nests.h) as a class, shared by its parts:
// fuse_loop_nests_versions.cpp (preparing the body: hoisted allocations,
// versions of broadcasts and overlap tests) and fuse_loop_nests_fusion.cpp
// (fusing adjacent nests, then scalarising and shrinking their
// temporaries). Private to transforms/.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "analysis/array_mentions.h"
#include "analysis/raises.h"
#include "analysis/var_uses.h"
#include "ir/ir_equal.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::transforms::fusion {

using ir::ArrayInfo;
using ir::ArrayMap;
using ir::ArraySet;
using ir::Expr;
using ir::Stmt;

// Equality of canonical extents and of the conditions over them (fold(),
// can_fuse). Narrower than plain ir::equal, and kept so: it looks only into
// the nodes extents and their tests are made of (any other node is equal only
// to itself), so fold() folds only comparisons of such expressions, and it
// does not tell a checked cast or division from an unchecked one.
inline bool extent_node(ir::NodeKind k) {
  switch (k) {
    case ir::NodeKind::IntImm:
    case ir::NodeKind::ArrayDim:
    case ir::NodeKind::VarRef:
    case ir::NodeKind::Binary:
    case ir::NodeKind::Compare:
    case ir::NodeKind::Select:
    case ir::NodeKind::Cast:
      return true;
    default:
      return false;
  }
}
inline bool same_expr(const Expr& a, const Expr& b) {
  ir::EqualOptions extents;
  extents.looks_into = extent_node;
  extents.checks = false;
  return ir::equal(a, b, extents);
}

inline bool is_var(const Expr& e, const ir::VarInfo* v) {
  auto r = e->as<ir::VarRef>();
  return r && r->var.get() == v;
}

// Facts about the function's arrays that the fusion tests need.
struct ArrayFacts {
  ArrayMap<const ArrayInfo*> parent;  // alias classes (union-find)
  ArrayMap<int> binds;                // Allocate/ArrayBind count per array
  ArrayMap<std::vector<Expr>> shape;  // extents of arrays bound once, as stable expressions
  ArraySet params;

  const ArrayInfo* find(const ArrayInfo* a) {
    auto it = parent.find(a);
    if (it == parent.end() || it->second == a) return a;
    return it->second = find(it->second);
  }
  void unite(const ArrayInfo* a, const ArrayInfo* b) {
    const ArrayInfo* ra = find(a);
    const ArrayInfo* rb = find(b);
    if (ra != rb) parent[ra] = rb;
  }
};

// An extent expression that means the same anywhere in the function: built
// from constants and the extents of arrays that are never rebound.
inline bool stable(const Expr& e, ArrayFacts& facts) {
  if (!e) return false;
  switch (e->kind) {
    case ir::NodeKind::IntImm:
      return true;
    case ir::NodeKind::ArrayDim:
      return facts.binds[e->as<ir::ArrayDim>()->array.get()] <= 1;
    case ir::NodeKind::Binary: {
      auto b = e->as<ir::Binary>();
      return stable(b->a, facts) && stable(b->b, facts);
    }
    case ir::NodeKind::Compare: {
      auto b = e->as<ir::Compare>();
      return stable(b->a, facts) && stable(b->b, facts);
    }
    case ir::NodeKind::Select: {
      auto s = e->as<ir::Select>();
      return stable(s->cond, facts) && stable(s->t, facts) && stable(s->f, facts);
    }
    default:
      return false;
  }
}

// Replaces the extents of arrays bound once by the expressions they were
// allocated with, so that equal extents look equal.
class CanonicalExtents : public ir::IRMutator {
 public:
  explicit CanonicalExtents(ArrayFacts& f) : facts_(f) {}

 protected:
  Expr visit(const ir::ArrayDim* d, const Expr& self) override {
    auto it = facts_.shape.find(d->array.get());
    if (it == facts_.shape.end() || d->dim >= static_cast<int>(it->second.size())) return self;
    return mutate(it->second[d->dim]);
  }

 private:
  ArrayFacts& facts_;
};

inline ArrayFacts gather_facts(const std::vector<ir::Param>& function_params, const Stmt& body) {
  ArrayFacts facts;
  // A parameter is bound on entry: one the body rebinds (`a = a - a[0]`)
  // has extents that differ across the function, and an extent of it must
  // not stand for itself through the rebinding.
  for (const auto& p : function_params)
    if (p.array) {
      facts.params.insert(p.array.get());
      ++facts.binds[p.array.get()];
    }
  struct Binds : ir::IRVisitor {
    ArrayFacts* facts;
    std::vector<const ir::Allocate*> allocs;
    std::vector<const ir::ArrayBind*> array_binds;
    using IRVisitor::visit;
    void visit(const ir::Allocate* a) override {
      ++facts->binds[a->array.get()];
      allocs.push_back(a);
    }
    void visit(const ir::ArrayBind* b) override {
      ++facts->binds[b->dst.get()];
      facts->unite(b->dst.get(), b->src.get());
      array_binds.push_back(b);
    }
  } binds;
  binds.facts = &facts;
  binds.visit(body);
  // Parameters of one dtype may be views of one buffer.
  std::vector<const ArrayInfo*> params(facts.params.begin(), facts.params.end());
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t j = i + 1; j < params.size(); ++j)
      if (params[i]->type.dtype == params[j]->type.dtype) facts.unite(params[i], params[j]);
  for (const ir::Allocate* a : binds.allocs) {
    if (facts.binds[a->array.get()] != 1) continue;
    bool ok = true;
    for (const auto& e : a->shape) ok = ok && stable(e, facts);
    if (ok) facts.shape[a->array.get()] = a->shape;
  }
  // Bindings of bound-once arrays to arrays of known extents (in order: a
  // chain m = t; n = m resolves in one sweep per link).
  for (int sweep = 0; sweep < 4; ++sweep)
    for (const ir::ArrayBind* b : binds.array_binds) {
      if (facts.binds[b->dst.get()] != 1 || facts.shape.count(b->dst.get())) continue;
      auto it = facts.shape.find(b->src.get());
      if (it != facts.shape.end())
        facts.shape[b->dst.get()] = it->second;
      else if (facts.params.count(b->src.get())) {
        std::vector<Expr> dims;
        for (int d = 0; d < b->src->type.ndim; ++d) dims.push_back(ir::ArrayDim::make(b->src, d));
        facts.shape[b->dst.get()] = dims;
      }
    }
  return facts;
}

// How often each array is mentioned (accessed, measured, returned, bound).
template <typename Node>
ArrayMap<int> count_mentions(const Node& s) {
  analysis::ArrayMentions m;
  m.visit(s);
  return m.mentions;
}

struct Access {
  const ArrayInfo* array;
  std::vector<Expr> indices;
  bool write;
};

struct BodyInfo {
  std::vector<Access> accesses;
  ArraySet bound;      // arrays (re)bound inside
  bool exits = false;  // break/continue/return inside
  bool has_loop = false;
};

inline BodyInfo inspect(const Stmt& body) {
  struct Inspector : ir::IRVisitor {
    BodyInfo info;
    using IRVisitor::visit;
    void visit(const ir::Load* l) override {
      info.accesses.push_back({l->array.get(), l->indices, false});
      IRVisitor::visit(l);
    }
    void visit(const ir::Store* s) override {
      info.accesses.push_back({s->array.get(), s->indices, true});
      IRVisitor::visit(s);
    }
    void visit(const ir::AtomicUpdate* s) override {
      info.accesses.push_back({s->array.get(), s->indices, true});
      IRVisitor::visit(s);
    }
    void visit(const ir::Allocate* a) override {
      info.bound.insert(a->array.get());
      IRVisitor::visit(a);
    }
    void visit(const ir::ArrayBind* b) override { info.bound.insert(b->dst.get()); }
    void visit(const ir::Break*) override { info.exits = true; }
    void visit(const ir::Continue*) override { info.exits = true; }
    void visit(const ir::Return*) override { info.exits = true; }
    void visit(const ir::For* f) override {
      info.has_loop = true;
      IRVisitor::visit(f);
    }
    void visit(const ir::While* w) override {
      info.has_loop = true;
      IRVisitor::visit(w);
    }
  } inspector;
  inspector.visit(body);
  return inspector.info;
}

// Renames a variable in a statement.
class RenameVar : public ir::IRMutator {
 public:
  RenameVar(const ir::VarInfo* from, ir::Var to) : from_(from), to_(std::move(to)) {}

 protected:
  Expr visit(const ir::VarRef* r, const Expr& self) override {
    return r->var.get() == from_ ? ir::VarRef::make(to_, r->loc) : self;
  }

 private:
  const ir::VarInfo* from_;
  ir::Var to_;
};

// The flags the lowering computes for operands whose extent may be 1 at run
// time (lower_array_exprs.cpp: broadcast_flag).
inline bool is_broadcast_flag(const ir::Var& v) {
  return v->name.rfind("_broadcast", 0) == 0 && v->type.is_bool();
}

// The flags the lowering computes for array statements between arrays that
// may share memory (lower_array_exprs.cpp: assign_tensor): the statement is
// `if (flag) { through a temporary } else { the nest }`.
inline bool is_overlap_flag(const ir::Var& v) {
  return v->name.rfind("_overlap", 0) == 0 && v->type.is_bool();
}

// Whether `e` may be left unevaluated: it reads no array element (whose
// index may be out of range, an IndexError once checks are in) and nothing
// in it may raise. Python evaluates what a fold would drop (the condition of
// `x if c else x`, the left side of `a or True`).
inline bool droppable(const Expr& e) {
  struct Loads : ir::IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const ir::Load*) override { found = true; }
  } loads;
  loads.visit(e);
  return !loads.found && !analysis::raises(e).expressions;
}

// Folds the comparisons of canonical extents: `a == a`, `c ? a : a`.
inline Expr fold(const Expr& e) {
  struct Fold : ir::IRMutator {
    Expr visit(const ir::Select* s, const Expr& self) override {
      Expr t = mutate(s->t), f = mutate(s->f);
      if (same_expr(t, f) && droppable(s->cond) && droppable(f)) return t;
      return IRMutator::visit(s, self);
    }
    Expr visit(const ir::Compare* c, const Expr& self) override {
      Expr a = mutate(c->a), b = mutate(c->b);
      if ((c->op == ir::CompareOp::NE || c->op == ir::CompareOp::EQ) && same_expr(a, b) && droppable(a))
        return ir::BoolImm::make(c->op == ir::CompareOp::EQ, c->loc);
      return IRMutator::visit(c, self);
    }
    Expr visit(const ir::Logical* l, const Expr& self) override {
      Expr a = mutate(l->a), b = mutate(l->b);
      auto ca = a->as<ir::BoolImm>(), cb = b->as<ir::BoolImm>();
      bool is_or = l->op == ir::LogicalOp::Or;
      if ((ca && ca->value == is_or) || (cb && cb->value == is_or && droppable(a)))
        return ir::BoolImm::make(is_or, l->loc);
      if (ca) return b;
      if (cb) return a;
      return IRMutator::visit(l, self);
    }
  } folder;
  return folder.mutate(e);
}

// Rewrites IR as if the given bool flags were false.
struct AllFalse : ir::IRMutator {
  ir::VarMap<Expr>* flags;
  Expr visit(const ir::Select* s, const Expr& self) override {
    auto c = s->cond->as<ir::VarRef>();
    if (c && flags->count(c->var.get())) return mutate(s->f);
    return IRMutator::visit(s, self);
  }
  Expr visit(const ir::VarRef* r, const Expr& self) override {
    if (flags->count(r->var.get())) return ir::BoolImm::make(false, r->loc);
    return self;
  }
  // `C.shape[0] != C.shape[0]` once the selects are gone (a C++ compiler
  // warns about the self-comparison).
  Expr visit(const ir::Compare* c, const Expr& self) override { return fold(IRMutator::visit(c, self)); }
  // A statement versioned on an overlap flag is its nest (a Block, which
  // the caller splices into the enclosing list).
  Stmt visit(const ir::If* i, const Stmt& self) override {
    auto c = i->cond->as<ir::VarRef>();
    if (c && flags->count(c->var.get())) return mutate(i->else_case);
    return IRMutator::visit(i, self);
  }
};

class Fuser {
 public:
  explicit Fuser(const ir::Function& f) : params_(f.params) {}

  Stmt run(const Stmt& body);
  std::vector<ir::Remark> remarks;

 private:
  // A temporary shrunk to one slice per iteration of a serial loop needs no
  // new allocation per iteration: each iteration writes its slice before it
  // reads it, so one buffer serves them all. Its allocation (uninitialised,
  // of extents the loop does not change) and the names bound to it move
  // before the loop, out of every enclosing serial loop; a parallel loop
  // keeps it in its body, private to each iteration (the CPU back end
  // allocates it once per thread: codegen_cpp's per_thread_statements).
  Stmt hoist_allocations(const Stmt& s);

  // Drops the broadcast flags that are always false and the asserts that
  // always hold; writes allocation extents canonically.
  Stmt prepare(const Stmt& body);

  // Rewrites every block, innermost first.
  Stmt rewrite(const Stmt& s);

  // Whether `e`, read at position `from` of a block, has the same value at
  // the block's position `at` <= from: it reads extents of arrays not bound
  // in between, and scalars not written in between.
  bool same_value_earlier(const Expr& e, const std::vector<Stmt>& stmts, size_t at, size_t from);

  // Array statements whose operands may broadcast an extent that is 1 only
  // at run time read through `_broadcast` flags (see the lowering): the
  // statements from the first flag to the last use of one are versioned on
  // the flags, computed first. The version for the usual case (every flag
  // false) has plain indices and extents, so its nests fuse as any others;
  // the other keeps the selects.
  void version_broadcasts(std::vector<Stmt>& stmts);

  // A loop whose body is versioned on flags that keep their value through
  // the loop (a time loop around array statements between arguments:
  // `for t: B[1:-1] = f(A); A[1:-1] = g(B)`) is versioned itself, its flags
  // computed once before it: `if (flags) { the loop as it is } else { the
  // loop of the usual versions }`, so that the usual loop holds plain nests
  // only (on the GPU a time loop whose body allocates cannot be one
  // persistent kernel). Only loops whose versions test an overlap flag.
  void unswitch_overlap_tests(std::vector<Stmt>& stmts);

  Expr extent(const ir::For* f);

  bool simple_loop(const ir::For* f);

  // Every access to `cls` in both loops has its loop's own index at one
  // dimension, the same for all: iteration k touches only slice k.
  bool same_slice(const ArrayInfo* cls, const ir::For* a, const BodyInfo& ai, const ir::For* b, const BodyInfo& bi);

  bool can_fuse(const ir::For* a, const ir::For* b);

  // A statement between two nests that may move above the first one.
  bool movable(const Stmt& s, const ir::For* first);

  void fuse_block(std::vector<Stmt>& stmts);

  // The nests of a fused loop's body may fuse in turn (the loops over the
  // second dimension of 3-D statements), now that they share one body.
  void fuse_inside(Stmt& loop_stmt);

  // The temporary allocated by stmts[k] with the names bound to it in this
  // block, when it is mentioned nowhere but there and in the loop stmts[at]:
  // the allocation first, then the names; the positions of the binds.
  std::optional<std::pair<std::vector<ir::ArrayVar>, std::vector<size_t>>> local_temporary(
      const std::vector<Stmt>& stmts, size_t k, size_t at, const BodyInfo& info);

  // Removes stmts[k] and the statements at `binds` from the block and puts
  // `loop` in place of stmts[at]; `at` follows it.
  void replace_loop(std::vector<Stmt>& stmts, size_t k, const std::vector<size_t>& binds, size_t& at, Stmt loop);

  // Replaces temporaries that hold one element per iteration of the fused
  // loop stmts[at] by a scalar: each is written once per iteration, by a
  // statement of the loop body at [loop index, 0, ...] (its other extents
  // are 1), and read only by later statements of the body at that index
  // (the mask of azimint_naive, the row maxima of softmax).
  void scalarize_temporaries(std::vector<Stmt>& stmts, size_t& at);

  // Shrinks temporaries allocated before the fused loop stmts[at] and used
  // only inside it at the loop's index in their first dimension.
  void shrink_temporaries(std::vector<Stmt>& stmts, size_t& at);

  std::vector<ir::Param> params_;
  ArraySet per_iteration_;  // temporaries shrunk to one slice per iteration
  // The set orders its members by their ids, read through the pointers, and
  // a later fusion may drop the statements that held a shrunk temporary:
  // these references keep every member alive for the pass.
  std::vector<ir::ArrayVar> per_iteration_owners_;
  ArrayFacts facts_;
  ArrayMap<int> total_mentions_;
  static constexpr int kMaxVersionLevels = 5;
  int version_levels_ = 0;  // the versions of versions being made
};

}  // namespace plait::transforms::fusion
