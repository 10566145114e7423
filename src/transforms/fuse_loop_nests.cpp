// Pass: loop fusion and temporary shrinking (see fuse_loop_nests.h).
#include "transforms/fuse_loop_nests.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "analysis/array_mentions.h"
#include "analysis/raises.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

using ir::ArrayInfo;
using ir::ArrayMap;
using ir::ArraySet;
using ir::Expr;
using ir::Stmt;

bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->type != b->type) return false;
  switch (a->kind) {
    case ir::NodeKind::IntImm: return a->as<ir::IntImm>()->value == b->as<ir::IntImm>()->value;
    case ir::NodeKind::ArrayDim:
      return a->as<ir::ArrayDim>()->array == b->as<ir::ArrayDim>()->array &&
             a->as<ir::ArrayDim>()->dim == b->as<ir::ArrayDim>()->dim;
    case ir::NodeKind::VarRef: return a->as<ir::VarRef>()->var == b->as<ir::VarRef>()->var;
    case ir::NodeKind::Binary: {
      auto x = a->as<ir::Binary>(), y = b->as<ir::Binary>();
      return x->op == y->op && same_expr(x->a, y->a) && same_expr(x->b, y->b);
    }
    case ir::NodeKind::Compare: {
      auto x = a->as<ir::Compare>(), y = b->as<ir::Compare>();
      return x->op == y->op && same_expr(x->a, y->a) && same_expr(x->b, y->b);
    }
    case ir::NodeKind::Select: {
      auto x = a->as<ir::Select>(), y = b->as<ir::Select>();
      return same_expr(x->cond, y->cond) && same_expr(x->t, y->t) && same_expr(x->f, y->f);
    }
    case ir::NodeKind::Cast: return same_expr(a->as<ir::Cast>()->value, b->as<ir::Cast>()->value);
    default: return false;
  }
}

bool is_var(const Expr& e, const ir::VarInfo* v) {
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
bool stable(const Expr& e, ArrayFacts& facts) {
  if (!e) return false;
  switch (e->kind) {
    case ir::NodeKind::IntImm: return true;
    case ir::NodeKind::ArrayDim: return facts.binds[e->as<ir::ArrayDim>()->array.get()] <= 1;
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
    default: return false;
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

ArrayFacts gather_facts(const std::vector<ir::Param>& function_params, const Stmt& body) {
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
      if (it != facts.shape.end()) facts.shape[b->dst.get()] = it->second;
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
  ArraySet bound;                    // arrays (re)bound inside
  bool exits = false;                // break/continue/return inside
  bool has_loop = false;
};

BodyInfo inspect(const Stmt& body) {
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
bool is_broadcast_flag(const ir::Var& v) { return v->name.rfind("_broadcast", 0) == 0 && v->type.is_bool(); }

// The flags the lowering computes for array statements between arrays that
// may share memory (lower_array_exprs.cpp: assign_tensor): the statement is
// `if (flag) { through a temporary } else { the nest }`.
bool is_overlap_flag(const ir::Var& v) { return v->name.rfind("_overlap", 0) == 0 && v->type.is_bool(); }

// Whether `e` may be left unevaluated: it reads no array element (whose
// index may be out of range, an IndexError once checks are in) and nothing
// in it may raise. Python evaluates what a fold would drop (the condition of
// `x if c else x`, the left side of `a or True`).
bool droppable(const Expr& e) {
  struct Loads : ir::IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const ir::Load*) override { found = true; }
  } loads;
  loads.visit(e);
  return !loads.found && !analysis::raises(e).expressions;
}

// Folds the comparisons of canonical extents: `a == a`, `c ? a : a`.
Expr fold(const Expr& e) {
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

  Stmt run(const Stmt& body) {
    // Removing the broadcast flags that are always false makes more extents
    // canonical, which may show more flags to be false.
    Stmt start = body;
    for (int round = 0; round < 2; ++round) {
      facts_ = gather_facts(params_, start);
      start = prepare(start);
    }
    facts_ = gather_facts(params_, start);
    total_mentions_ = count_mentions(start);
    return hoist_allocations(rewrite(start));
  }
  std::vector<ir::Remark> remarks;

 private:
  // A temporary shrunk to one slice per iteration of a serial loop needs no
  // new allocation per iteration: each iteration writes its slice before it
  // reads it, so one buffer serves them all. Its allocation (uninitialised,
  // of extents the loop does not change) and the names bound to it move
  // before the loop, out of every enclosing serial loop; a parallel loop
  // keeps it in its body, private to each iteration (the CPU back end
  // allocates it once per thread: codegen_cpp's per_thread_statements).
  Stmt hoist_allocations(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
      case ir::NodeKind::Block: {
        std::vector<Stmt> out;
        for (const auto& c : s->as<ir::Block>()->stmts) {
          Stmt inner = hoist_allocations(c);
          auto loop = inner->as<ir::For>();
          auto body = loop ? loop->body->as<ir::Block>() : nullptr;
          if (!body || ir::is_parallel(loop->schedule.kind)) {
            out.push_back(inner);
            continue;
          }
          analysis::VarUses changed = analysis::uses_of(loop->body);
          changed.writes.insert(loop->var.get());
          ArraySet hoisted;
          std::vector<Stmt> kept;
          for (const auto& st : body->stmts) {
            bool move = false;
            if (auto a = st->as<ir::Allocate>(); a && per_iteration_.count(a->array.get()) &&
                                                 a->fill == ir::FillKind::Uninitialized) {
              move = true;
              for (const auto& e : a->shape) {
                analysis::VarUses u = analysis::uses_of(e);
                for (const ir::VarInfo* v : u.reads) move = move && !changed.writes.count(v);
                for (const ArrayInfo* x : u.arrays) move = move && !changed.array_binds.count(x);
              }
            } else if (auto b = st->as<ir::ArrayBind>()) {
              move = per_iteration_.count(b->dst.get()) && hoisted.count(b->src.get());
            }
            if (move) {
              const ArrayInfo* bound = st->as<ir::Allocate>() ? st->as<ir::Allocate>()->array.get()
                                                              : st->as<ir::ArrayBind>()->dst.get();
              hoisted.insert(bound);
              out.push_back(st);
            } else {
              kept.push_back(st);
            }
          }
          out.push_back(hoisted.empty() ? inner
                                        : ir::For::make(loop->var, loop->begin, loop->end, loop->step,
                                                        ir::Block::make(kept, body->loc), loop->schedule, loop->loc));
        }
        return ir::Block::make(out, s->loc);
      }
      case ir::NodeKind::For: {
        auto f = s->as<ir::For>();
        return ir::For::make(f->var, f->begin, f->end, f->step, hoist_allocations(f->body), f->schedule, f->loc);
      }
      case ir::NodeKind::While: {
        auto w = s->as<ir::While>();
        return ir::While::make(w->cond, hoist_allocations(w->body), w->loc);
      }
      case ir::NodeKind::If: {
        auto i = s->as<ir::If>();
        return ir::If::make(i->cond, hoist_allocations(i->then_case),
                            i->else_case ? hoist_allocations(i->else_case) : nullptr, i->loc);
      }
      default: return s;
    }
  }

  // Drops the broadcast flags that are always false and the asserts that
  // always hold; writes allocation extents canonically.
  Stmt prepare(const Stmt& body) {
    CanonicalExtents canon(facts_);
    // Broadcast flags (see version_broadcasts) that compare an extent with
    // itself once extents are written canonically (`m.shape[0]` of `m =
    // x.max(axis=-1, keepdims=True)` is `x.shape[0]`) are false: their
    // selects take the usual side everywhere.
    struct Flags : ir::IRVisitor {
      std::vector<const ir::Assign*> assigns;
      using IRVisitor::visit;
      void visit(const ir::Assign* a) override {
        if (is_broadcast_flag(a->var)) assigns.push_back(a);
      }
    } flags;
    flags.visit(body);
    ir::VarMap<Expr> never;
    for (const ir::Assign* a : flags.assigns) {
      // (The folded value stays alive while its BoolImm is read.)
      const Expr folded = fold(canon.mutate(a->value));
      auto b = folded->as<ir::BoolImm>();
      if (b && !b->value) never[a->var.get()] = nullptr;
    }
    // Asserts compare extents; written canonically they stop mentioning the
    // temporaries whose extents they check, which may then shrink.
    struct Prepare : AllFalse {
      using AllFalse::visit;
      CanonicalExtents* canon;
      Stmt visit(const ir::Assert* a, const Stmt&) override {
        Expr cond = fold(canon->mutate(mutate(a->cond)));
        // A check of an extent against itself always holds.
        if (auto c = cond->as<ir::BoolImm>(); c && c->value) return nullptr;
        return ir::Assert::make(cond, a->error_kind, a->message, a->loc);
      }
      Stmt visit(const ir::Allocate* a, const Stmt&) override {
        std::vector<Expr> shape;
        for (const auto& e : a->shape) shape.push_back(fold(canon->mutate(mutate(e))));
        return ir::Allocate::make(a->array, shape, a->fill, a->fill_value, a->loc);
      }
      Stmt visit(const ir::Assign* a, const Stmt& self) override {
        if (flags->count(a->var.get())) return nullptr;
        return IRMutator::visit(a, self);
      }
    } prepare;
    prepare.flags = &never;
    prepare.canon = &canon;
    return prepare.mutate(body);
  }

  // Rewrites every block, innermost first.
  Stmt rewrite(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
      case ir::NodeKind::Block: {
        std::vector<Stmt> stmts;
        for (const auto& c : s->as<ir::Block>()->stmts) stmts.push_back(rewrite(c));
        version_broadcasts(stmts);
        fuse_block(stmts);
        unswitch_overlap_tests(stmts);
        return ir::Block::make(stmts, s->loc);
      }
      case ir::NodeKind::For: {
        auto f = s->as<ir::For>();
        return ir::For::make(f->var, f->begin, f->end, f->step, rewrite(f->body), f->schedule, f->loc);
      }
      case ir::NodeKind::While: {
        auto w = s->as<ir::While>();
        return ir::While::make(w->cond, rewrite(w->body), w->loc);
      }
      case ir::NodeKind::If: {
        auto i = s->as<ir::If>();
        return ir::If::make(i->cond, rewrite(i->then_case), i->else_case ? rewrite(i->else_case) : nullptr, i->loc);
      }
      default: return s;
    }
  }

  // Whether `e`, read at position `from` of a block, has the same value at
  // the block's position `at` <= from: it reads extents of arrays not bound
  // in between, and scalars not written in between.
  bool same_value_earlier(const Expr& e, const std::vector<Stmt>& stmts, size_t at, size_t from) {
    analysis::VarUses between;
    for (size_t k = at; k < from; ++k) {
      analysis::VarUses u = analysis::uses_of(stmts[k]);
      between.writes.insert(u.writes.begin(), u.writes.end());
      between.array_binds.insert(u.array_binds.begin(), u.array_binds.end());
    }
    struct Reads : ir::IRVisitor {
      bool loads = false;
      ArraySet arrays;
      using IRVisitor::visit;
      void visit(const ir::Load*) override { loads = true; }
      void visit(const ir::ArrayDim* d) override { arrays.insert(d->array.get()); }
      void visit(const ir::ArraysOverlap* o) override {
        arrays.insert(o->a.get());
        arrays.insert(o->b.get());
      }
    } reads;
    reads.visit(e);
    if (reads.loads) return false;
    for (const ArrayInfo* a : reads.arrays)
      if (between.array_binds.count(a)) return false;
    for (const ir::VarInfo* v : analysis::uses_of(e).reads)
      if (between.writes.count(v)) return false;
    return true;
  }

  // Array statements whose operands may broadcast an extent that is 1 only
  // at run time read through `_broadcast` flags (see the lowering): the
  // statements from the first flag to the last use of one are versioned on
  // the flags, computed first. The version for the usual case (every flag
  // false) has plain indices and extents, so its nests fuse as any others;
  // the other keeps the selects.
  void version_broadcasts(std::vector<Stmt>& stmts) {
    CanonicalExtents canon(facts_);
    ir::VarMap<Expr> flags;    // flag -> its value at the start of the region
    ir::VarMap<size_t> where;  // flag -> the statement that computes it
    std::optional<size_t> start;
    for (size_t p = 0; p < stmts.size(); ++p) {
      auto a = stmts[p]->as<ir::Assign>();
      if (!a || !(is_broadcast_flag(a->var) || is_overlap_flag(a->var))) continue;
      if (!start) start = p;
      Expr value = canon.mutate(a->value);
      if (!same_value_earlier(value, stmts, *start, p)) continue;
      flags[a->var.get()] = value;
      where[a->var.get()] = p;
    }
    if (flags.empty()) return;
    // The region takes in the neighbouring statements that fusion deals
    // with (nests, allocations, bindings, checks, scalars), so that the
    // usual version holds the whole run of nests.
    auto fusable_kind = [](const Stmt& st) {
      switch (st->kind) {
        case ir::NodeKind::For:
        case ir::NodeKind::Allocate:
        case ir::NodeKind::ArrayBind:
        case ir::NodeKind::Assert:
        case ir::NodeKind::Assign:
        case ir::NodeKind::Store: return true;
        default: return false;
      }
    };
    while (*start > 0 && fusable_kind(stmts[*start - 1])) {
      bool same = true;
      for (const auto& [v, value] : flags) same = same && same_value_earlier(value, stmts, *start - 1, where.at(v));
      if (!same) break;
      --*start;
    }
    size_t end = *start;
    for (size_t p = *start; p < stmts.size(); ++p)
      for (const ir::VarInfo* v : analysis::uses_of(stmts[p]).reads)
        if (flags.count(v)) end = p + 1;
    while (end < stmts.size() && fusable_kind(stmts[end])) ++end;
    // A flag must keep its value through the region: assigned once, at the
    // statement that computes it.
    for (size_t p = *start; p < end; ++p) {
      auto a = stmts[p]->as<ir::Assign>();
      for (const ir::VarInfo* v : analysis::uses_of(stmts[p]).writes)
        if (flags.count(v) && !(a && a->var.get() == v)) return;
    }
    std::vector<Stmt> prologue, general;
    Expr any;
    bool broadcasts = false, overlaps = false;
    for (size_t p = *start; p < end; ++p) {
      auto a = stmts[p]->as<ir::Assign>();
      if (a && flags.count(a->var.get())) {
        (is_overlap_flag(a->var) ? overlaps : broadcasts) = true;
        prologue.push_back(ir::Assign::make(a->var, flags.at(a->var.get()), a->loc));
        Expr f = ir::VarRef::make(a->var, a->loc);
        any = any ? ir::Logical::make(ir::LogicalOp::Or, any, f, a->loc) : f;
        continue;
      }
      general.push_back(stmts[p]);
    }
    AllFalse all_false;
    all_false.flags = &flags;
    std::vector<Stmt> usual;
    for (const auto& st : general) {
      Stmt plain = all_false.mutate(st);
      auto block = plain ? plain->as<ir::Block>() : nullptr;
      if (block && st->as<ir::If>()) usual.insert(usual.end(), block->stmts.begin(), block->stmts.end());
      else if (plain) usual.push_back(plain);
    }
    // The usual version is analysed on its own: the arrays bound in the
    // region and mentioned nowhere else count only its mentions; the others
    // count both versions'.
    auto mentions_in = [](const std::vector<Stmt>& list) {
      ArrayMap<int> count;
      for (const auto& st : list)
        for (const auto& [a, n] : count_mentions(st)) count[a] += n;
      return count;
    };
    ArrayMap<int> in_region = mentions_in(
        std::vector<Stmt>(stmts.begin() + static_cast<long>(*start), stmts.begin() + static_cast<long>(end)));
    ArrayMap<int> in_general = mentions_in(general), in_usual = mentions_in(usual), in_prologue = mentions_in(prologue);
    for (const auto& [a, n] : in_region) {
      bool local = n == total_mentions_[a] && !facts_.params.count(a);
      total_mentions_[a] = local ? in_usual[a] : total_mentions_[a] - n + in_general[a] + in_usual[a] + in_prologue[a];
    }
    // Flags whose value depended on another flag (the target's broadcast,
    // after the value's) are plain extent tests in the usual version: version
    // it again, so that its nests keep plain indices too. Each level copies
    // the region once more: past kMaxVersionLevels the usual version keeps
    // its tests (a chain of statements whose slices disagree, found by the
    // fuzzer, made megabytes of code; NPBench's kernels need at most 5).
    if (version_levels_ < kMaxVersionLevels) {
      ++version_levels_;
      version_broadcasts(usual);
      --version_levels_;
    }
    fuse_block(usual);
    SourceLoc loc = stmts[*start]->loc;
    remarks.push_back({loc, "fuse_loop_nests",
                       "lines " + std::to_string(loc.line) + "-" + std::to_string(stmts[end - 1]->loc.line) +
                           " are versioned on whether " +
                           (broadcasts && overlaps ? "an extent that is 1 at run time broadcasts or arrays share memory"
                            : broadcasts           ? "an extent that is 1 at run time broadcasts"
                                                   : "arrays share memory") +
                           "; the usual version has " +
                           (broadcasts && overlaps ? "plain indices and no temporaries"
                            : broadcasts           ? "plain indices"
                                                   : "no temporaries")});
    std::vector<Stmt> out(stmts.begin(), stmts.begin() + static_cast<long>(*start));
    out.insert(out.end(), prologue.begin(), prologue.end());
    out.push_back(ir::If::make(any, ir::Block::make(general, loc), ir::Block::make(usual, loc), loc));
    out.insert(out.end(), stmts.begin() + static_cast<long>(end), stmts.end());
    stmts = out;
  }

  // A loop whose body is versioned on flags that keep their value through
  // the loop (a time loop around array statements between arguments:
  // `for t: B[1:-1] = f(A); A[1:-1] = g(B)`) is versioned itself, its flags
  // computed once before it: `if (flags) { the loop as it is } else { the
  // loop of the usual versions }`, so that the usual loop holds plain nests
  // only (on the GPU a time loop whose body allocates cannot be one
  // persistent kernel). Only loops whose versions test an overlap flag.
  void unswitch_overlap_tests(std::vector<Stmt>& stmts) {
    for (size_t p = 0; p < stmts.size(); ++p) {
      auto loop = stmts[p]->as<ir::For>();
      auto body = loop ? loop->body->as<ir::Block>() : nullptr;
      if (!body) continue;
      // Scalars and arrays the loop changes (its variable included).
      analysis::VarUses changed = analysis::uses_of(loop->body);
      changed.writes.insert(loop->var.get());
      struct Assigns : ir::IRVisitor {
        ir::VarMap<int> count;
        using IRVisitor::visit;
        void visit(const ir::Assign* a) override {
          ++count[a->var.get()];
          IRVisitor::visit(a);
        }
      } assigns;
      assigns.visit(loop->body);
      ir::VarMap<Expr> flags;
      std::vector<Stmt> prologue;
      for (const auto& st : body->stmts) {
        auto a = st->as<ir::Assign>();
        if (!a || !(is_broadcast_flag(a->var) || is_overlap_flag(a->var)) || assigns.count[a->var.get()] != 1) continue;
        struct Reads : ir::IRVisitor {
          bool loads = false;
          using IRVisitor::visit;
          void visit(const ir::Load*) override { loads = true; }
        } reads;
        reads.visit(a->value);
        analysis::VarUses u = analysis::uses_of(a->value);
        bool invariant = !reads.loads;
        for (const ir::VarInfo* v : u.reads) invariant = invariant && (!changed.writes.count(v) || flags.count(v));
        for (const ArrayInfo* x : u.arrays) invariant = invariant && !changed.array_binds.count(x);
        if (!invariant) continue;
        flags[a->var.get()] = a->value;
        prologue.push_back(st);
      }
      // The versions whose conditions read only those flags, one of them an
      // overlap flag.
      Expr any;
      for (const auto& st : body->stmts) {
        auto i = st->as<ir::If>();
        if (!i || !i->else_case) continue;
        bool only_flags = true, overlap = false;
        for (const ir::VarInfo* v : analysis::uses_of(i->cond).reads) {
          only_flags = only_flags && flags.count(v);
          overlap = overlap || v->name.rfind("_overlap", 0) == 0;
        }
        if (!only_flags || !overlap || !analysis::uses_of(i->cond).arrays.empty()) continue;
        any = any ? ir::Logical::make(ir::LogicalOp::Or, any, i->cond, i->loc) : i->cond;
      }
      if (!any) continue;
      std::vector<Stmt> general, usual;
      for (const auto& st : body->stmts) {
        if (std::find(prologue.begin(), prologue.end(), st) != prologue.end()) continue;
        general.push_back(st);
        auto i = st->as<ir::If>();
        bool version = false;
        if (i && i->else_case) {
          version = analysis::uses_of(i->cond).arrays.empty();
          for (const ir::VarInfo* v : analysis::uses_of(i->cond).reads) version = version && flags.count(v);
        }
        if (!version) {
          usual.push_back(st);
        } else if (auto b = i->else_case->as<ir::Block>()) {
          usual.insert(usual.end(), b->stmts.begin(), b->stmts.end());
        } else {
          usual.push_back(i->else_case);
        }
      }
      auto loop_of = [&](std::vector<Stmt> stmts_of_body) {
        return ir::For::make(loop->var, loop->begin, loop->end, loop->step, ir::Block::make(stmts_of_body, body->loc),
                             loop->schedule, loop->loc);
      };
      // The usual loop gets its own copies of the compiler's scalars (nest
      // indices, accumulators), so that each is declared inside one loop:
      // shared by both, it would be declared before them, and a parallel
      // region around the loop would write it in one thread (`omp single`).
      ir::VarSet elsewhere;
      for (size_t q = 0; q < stmts.size(); ++q)
        if (q != p) {
          analysis::VarUses u = analysis::uses_of(stmts[q]);
          elsewhere.insert(u.reads.begin(), u.reads.end());
          elsewhere.insert(u.writes.begin(), u.writes.end());
        }
      struct FreshScalars : ir::IRMutator {
        ir::VarMap<ir::Var> fresh;
        ir::Var renamed(const ir::Var& v) {
          auto it = fresh.find(v.get());
          return it == fresh.end() ? v : it->second;
        }
        Expr visit(const ir::VarRef* r, const Expr& self) override {
          auto it = fresh.find(r->var.get());
          return it == fresh.end() ? self : ir::VarRef::make(it->second, r->loc);
        }
        Stmt visit(const ir::Assign* a, const Stmt&) override {
          return ir::Assign::make(renamed(a->var), mutate(a->value), a->loc);
        }
        Stmt visit(const ir::For* f, const Stmt&) override {
          ir::LoopSchedule schedule = f->schedule;
          for (auto& v : schedule.privates) v = renamed(v);
          for (auto& r : schedule.reductions) r.var = renamed(r.var);
          return ir::For::make(renamed(f->var), mutate(f->begin), mutate(f->end), mutate(f->step), mutate(f->body),
                               schedule, f->loc);
        }
      } fresh_scalars;
      for (const ir::VarInfo* v : analysis::uses_of(ir::Block::make(usual, body->loc)).writes)
        if (v->name.rfind('_', 0) == 0 && v != loop->var.get() && !elsewhere.count(v)) {
          auto copy = std::make_shared<ir::VarInfo>(*v);
          fresh_scalars.fresh[v] = copy;
        }
      for (auto& st : usual) st = fresh_scalars.mutate(st);
      remarks.push_back({loop->loc, "fuse_loop_nests",
                         "the loop over '" + loop->var->name + "' is versioned on its statements' tests (made once, "
                             "before it); the usual version runs their plain nests"});
      std::vector<Stmt> out(stmts.begin(), stmts.begin() + static_cast<long>(p));
      out.insert(out.end(), prologue.begin(), prologue.end());
      out.push_back(ir::If::make(any, loop_of(general), loop_of(usual), loop->loc));
      out.insert(out.end(), stmts.begin() + static_cast<long>(p) + 1, stmts.end());
      p += prologue.size();
      stmts = out;
    }
  }

  Expr extent(const ir::For* f) {
    CanonicalExtents c(facts_);
    return c.mutate(f->end);
  }

  bool simple_loop(const ir::For* f) {
    auto b = f->begin->as<ir::IntImm>();
    auto s = f->step->as<ir::IntImm>();
    return b && b->value == 0 && s && s->value == 1 && f->schedule.reductions.empty() && f->schedule.num_threads == 0;
  }

  // Every access to `cls` in both loops has its loop's own index at one
  // dimension, the same for all: iteration k touches only slice k.
  bool same_slice(const ArrayInfo* cls, const ir::For* a, const BodyInfo& ai, const ir::For* b, const BodyInfo& bi) {
    std::optional<size_t> dim;
    auto check = [&](const ir::For* loop, const BodyInfo& info) {
      for (const Access& acc : info.accesses) {
        if (facts_.find(acc.array) != cls) continue;
        std::optional<size_t> here;
        for (size_t d = 0; d < acc.indices.size(); ++d)
          if (is_var(acc.indices[d], loop->var.get())) {
            here = d;
            break;
          }
        if (!here || (dim && *dim != *here)) return false;
        dim = here;
      }
      return true;
    };
    return check(a, ai) && check(b, bi);
  }

  bool can_fuse(const ir::For* a, const ir::For* b) {
    if (!simple_loop(a) || !simple_loop(b)) return false;
    if (ir::is_parallel(a->schedule.kind) != ir::is_parallel(b->schedule.kind)) return false;
    if (!same_expr(extent(a), extent(b))) return false;
    BodyInfo ai = inspect(a->body), bi = inspect(b->body);
    if (ai.exits || bi.exits) return false;
    // Scalars: what one loop writes, the other must not carry across
    // iterations.
    analysis::VarUses au = analysis::uses_of(a->body), bu = analysis::uses_of(b->body);
    for (const ir::VarInfo* v : au.writes)
      if ((bu.reads.count(v) || bu.writes.count(v)) && analysis::may_read_before_write(b->body, v)) return false;
    for (const ir::VarInfo* v : bu.writes)
      if (au.reads.count(v) && analysis::may_read_before_write(a->body, v)) return false;
    if (au.reads.count(b->var.get()) || bu.reads.count(a->var.get())) return false;
    // Arrays: dependences only within one iteration.
    ArraySet aw, ar, bw, br;
    for (const Access& x : ai.accesses) (x.write ? aw : ar).insert(facts_.find(x.array));
    for (const Access& x : bi.accesses) (x.write ? bw : br).insert(facts_.find(x.array));
    for (const ArrayInfo* bound : ai.bound)
      if (bw.count(facts_.find(bound)) || br.count(facts_.find(bound))) return false;
    for (const ArrayInfo* bound : bi.bound)
      if (aw.count(facts_.find(bound)) || ar.count(facts_.find(bound))) return false;
    ArraySet shared;
    for (const ArrayInfo* c : aw)
      if (br.count(c) || bw.count(c)) shared.insert(c);
    for (const ArrayInfo* c : bw)
      if (ar.count(c)) shared.insert(c);
    for (const ArrayInfo* c : shared)
      if (!same_slice(c, a, ai, b, bi)) return false;
    return true;
  }

  // A statement between two nests that may move above the first one.
  bool movable(const Stmt& s, const ir::For* first) {
    BodyInfo info = inspect(first->body);
    analysis::VarUses fu = analysis::uses_of(first->body);
    ArraySet touched;
    for (const Access& x : info.accesses) touched.insert(facts_.find(x.array));
    for (const ArrayInfo* bnd : info.bound) touched.insert(facts_.find(bnd));
    analysis::VarUses su = analysis::uses_of(s);
    for (const ir::VarInfo* v : su.reads)
      if (fu.writes.count(v)) return false;
    switch (s->kind) {
      case ir::NodeKind::Allocate: return !touched.count(facts_.find(s->as<ir::Allocate>()->array.get()));
      case ir::NodeKind::ArrayBind: {
        auto b = s->as<ir::ArrayBind>();
        // The first loop must not see the new binding of dst.
        for (const Access& x : info.accesses)
          if (x.array == b->dst.get()) return false;
        return !info.bound.count(b->dst.get());
      }
      case ir::NodeKind::Assert: {
        // Asserts read extents, which no loop changes, and scalars.
        return true;
      }
      case ir::NodeKind::Assign: {
        // A scalar the first loop does not use, computed from no array (the
        // start of a reduction, `acc = 0.0`).
        const ir::VarInfo* v = s->as<ir::Assign>()->var.get();
        return su.arrays.empty() && !fu.reads.count(v) && !fu.writes.count(v) && !su.reads.count(first->var.get()) &&
               v != first->var.get();
      }
      default: return false;
    }
  }

  void fuse_block(std::vector<Stmt>& stmts) {
    for (size_t i = 0; i < stmts.size(); ++i) {
      const ir::For* first = stmts[i]->as<ir::For>();
      if (!first) continue;
      std::vector<int> lines = {first->loc.line};
      while (true) {
        size_t j = i + 1;
        std::vector<Stmt> moved;
        while (j < stmts.size() && !stmts[j]->as<ir::For>() && movable(stmts[j], first)) moved.push_back(stmts[j++]);
        if (j >= stmts.size()) break;
        const ir::For* second = stmts[j]->as<ir::For>();
        if (!second || !can_fuse(first, second)) break;
        RenameVar rename(second->var.get(), first->var);
        Stmt renamed = rename.mutate(second->body);
        std::vector<Stmt> body = first->body->as<ir::Block>() ? first->body->as<ir::Block>()->stmts
                                                              : std::vector<Stmt>{first->body};
        if (auto b = renamed->as<ir::Block>()) body.insert(body.end(), b->stmts.begin(), b->stmts.end());
        else body.push_back(renamed);
        Stmt merged_body = ir::Block::make(body, first->body->loc);
        ir::LoopSchedule sched = first->schedule;
        if (inspect(merged_body).has_loop && ir::is_vectorized(sched.kind))
          sched.kind = ir::is_parallel(sched.kind) ? ir::LoopKind::Parallel : ir::LoopKind::Serial;
        Stmt fused = ir::For::make(first->var, first->begin, first->end, first->step, merged_body, sched, first->loc);
        lines.push_back(second->loc.line);
        // The second loop's header is gone: its extents no longer mention anything.
        for (const auto& e : {second->begin, second->end, second->step})
          for (const auto& [a, n] : count_mentions(e)) total_mentions_[a] -= n;
        std::vector<Stmt> out(stmts.begin(), stmts.begin() + static_cast<long>(i));
        out.insert(out.end(), moved.begin(), moved.end());
        out.push_back(fused);
        out.insert(out.end(), stmts.begin() + static_cast<long>(j) + 1, stmts.end());
        i += moved.size();
        stmts = out;
        first = stmts[i]->as<ir::For>();
      }
      if (lines.size() > 1) {
        std::string text = "fused the loop nests of lines";
        for (size_t k = 0; k < lines.size(); ++k) text += (k ? ", " : " ") + std::to_string(lines[k]);
        remarks.push_back({first->loc, "fuse_loop_nests", text + " into one loop over '" + ir::to_string(first->end) + "'"});
        scalarize_temporaries(stmts, i);
        shrink_temporaries(stmts, i);
        fuse_inside(stmts[i]);
      }
    }
  }

  // The nests of a fused loop's body may fuse in turn (the loops over the
  // second dimension of 3-D statements), now that they share one body.
  void fuse_inside(Stmt& loop_stmt) {
    auto loop = loop_stmt->as<ir::For>();
    auto block = loop->body->as<ir::Block>();
    if (!block || !inspect(loop->body).has_loop) return;
    std::vector<Stmt> body = block->stmts;
    fuse_block(body);
    loop_stmt = ir::For::make(loop->var, loop->begin, loop->end, loop->step, ir::Block::make(body, block->loc),
                              loop->schedule, loop->loc);
  }

  // The temporary allocated by stmts[k] with the names bound to it in this
  // block, when it is mentioned nowhere but there and in the loop stmts[at]:
  // the allocation first, then the names; the positions of the binds.
  std::optional<std::pair<std::vector<ir::ArrayVar>, std::vector<size_t>>> local_temporary(
      const std::vector<Stmt>& stmts, size_t k, size_t at, const BodyInfo& info) {
    auto alloc = stmts[k]->as<ir::Allocate>();
    if (!alloc || facts_.params.count(facts_.find(alloc->array.get()))) return std::nullopt;
    const ArrayInfo* cls = facts_.find(alloc->array.get());
    std::vector<size_t> binds;
    bool ok = facts_.binds[alloc->array.get()] == 1;
    std::vector<ir::ArrayVar> members = {alloc->array};
    for (size_t m = 0; m < stmts.size(); ++m) {
      auto b = stmts[m]->as<ir::ArrayBind>();
      if (!b || facts_.find(b->dst.get()) != cls) continue;
      if (m > at || b->src != alloc->array || facts_.binds[b->dst.get()] != 1) ok = false;
      binds.push_back(m);
      members.push_back(b->dst);
    }
    // Every mention of the class is the allocation, the binds or inside
    // the loop: it does not escape.
    ArrayMap<int> here = count_mentions(stmts[at]);
    for (const auto& [a, n] : count_mentions(stmts[k])) here[a] += n;
    for (size_t m : binds)
      for (const auto& [a, n] : count_mentions(stmts[m])) here[a] += n;
    for (const auto& m : members)
      ok = ok && here[m.get()] == total_mentions_[m.get()] && !info.bound.count(m.get());
    if (!ok) return std::nullopt;
    return std::make_pair(members, binds);
  }

  // Removes stmts[k] and the statements at `binds` from the block and puts
  // `loop` in place of stmts[at]; `at` follows it.
  void replace_loop(std::vector<Stmt>& stmts, size_t k, const std::vector<size_t>& binds, size_t& at, Stmt loop) {
    std::set<size_t> drop(binds.begin(), binds.end());
    drop.insert(k);
    std::vector<Stmt> out;
    size_t new_at = 0;
    for (size_t m = 0; m < stmts.size(); ++m) {
      if (drop.count(m)) continue;
      if (m == at) new_at = out.size();
      out.push_back(m == at ? loop : stmts[m]);
    }
    stmts = out;
    at = new_at;
  }

  // Replaces temporaries that hold one element per iteration of the fused
  // loop stmts[at] by a scalar: each is written once per iteration, by a
  // statement of the loop body at [loop index, 0, ...] (its other extents
  // are 1), and read only by later statements of the body at that index
  // (the mask of azimint_naive, the row maxima of softmax).
  void scalarize_temporaries(std::vector<Stmt>& stmts, size_t& at) {
    for (size_t k = 0; k < at; ++k) {
      const ir::For* loop = stmts[at]->as<ir::For>();
      auto block = loop->body->as<ir::Block>();
      auto alloc = stmts[k]->as<ir::Allocate>();
      if (!block || !alloc) continue;
      bool ok = true;
      for (size_t d = 1; d < alloc->shape.size(); ++d) {
        auto c = alloc->shape[d]->as<ir::IntImm>();
        ok = ok && c && c->value == 1;
      }
      auto temp = ok ? local_temporary(stmts, k, at, inspect(loop->body)) : std::nullopt;
      if (!temp) continue;
      ArraySet members;
      for (const auto& m : temp->first) members.insert(m.get());
      // Bounds that read a member's extent (`range(tmp.shape[0])`) would
      // lose it with the allocation.
      for (const Expr& bound : {loop->begin, loop->end, loop->step})
        for (const ArrayInfo* a : analysis::uses_of(bound).arrays) ok = ok && !members.count(a);
      if (!ok) continue;
      auto at_own_element = [&](const std::vector<Expr>& idx) {
        bool own = !idx.empty() && is_var(idx[0], loop->var.get());
        for (size_t d = 1; d < idx.size(); ++d) {
          auto c = idx[d]->as<ir::IntImm>();
          own = own && c && c->value == 0;
        }
        return own;
      };
      std::optional<size_t> store_at;
      for (size_t p = 0; ok && p < block->stmts.size(); ++p) {
        auto store = block->stmts[p]->as<ir::Store>();
        bool is_store = store && members.count(store->array.get());
        for (const Access& x : inspect(block->stmts[p]).accesses) {
          if (!members.count(x.array)) continue;
          if (!at_own_element(x.indices)) ok = false;
          // The one write is the statement itself; reads come after it.
          if (x.write) ok = ok && is_store && !store_at;
          else ok = ok && store_at && !is_store;
        }
        if (is_store) store_at = p;
      }
      if (!ok || !store_at) continue;
      auto elem = std::make_shared<ir::VarInfo>();
      elem->name = temp->first.back()->name;
      elem->type = ScalarType{alloc->array->type.dtype, false};
      elem->loc = alloc->loc;
      struct ToScalar : ir::IRMutator {
        ArraySet* members;
        ir::Var elem;
        Expr extent;
        Expr visit(const ir::Load* l, const Expr& self) override {
          if (!members->count(l->array.get())) return IRMutator::visit(l, self);
          return ir::VarRef::make(elem, l->loc);
        }
        Stmt visit(const ir::Store* s, const Stmt& self) override {
          if (!members->count(s->array.get())) return IRMutator::visit(s, self);
          return ir::Assign::make(elem, mutate(s->value), s->loc);
        }
        Expr visit(const ir::ArrayDim* d, const Expr& self) override {
          if (!members->count(d->array.get())) return self;
          return d->dim == 0 ? extent : ir::IntImm::make(1, ScalarType::py_int(), d->loc);
        }
      } to_scalar;
      to_scalar.members = &members;
      to_scalar.elem = elem;
      to_scalar.extent = loop->end;
      Stmt new_loop = ir::For::make(loop->var, loop->begin, loop->end, loop->step, to_scalar.mutate(loop->body),
                                    loop->schedule, loop->loc);
      remarks.push_back({alloc->loc, "fuse_loop_nests",
                         "temporary '" + temp->first.back()->name + "' holds one element per iteration of the fused "
                         "loop, written before it is read: a scalar, not allocated"});
      replace_loop(stmts, k, temp->second, at, new_loop);
      k = static_cast<size_t>(-1);  // start over: indices moved
    }
  }

  // Shrinks temporaries allocated before the fused loop stmts[at] and used
  // only inside it at the loop's index in their first dimension.
  void shrink_temporaries(std::vector<Stmt>& stmts, size_t& at) {
    const ir::For* loop = stmts[at]->as<ir::For>();
    BodyInfo info = inspect(loop->body);
    for (size_t k = 0; k < at; ++k) {
      auto alloc = stmts[k]->as<ir::Allocate>();
      // A 1-D temporary would shrink to one element allocated per iteration,
      // which costs more than it saves; a vector loop cannot allocate.
      if (!alloc || alloc->array->type.layout == Layout::F || alloc->array->type.ndim < 2 ||
          ir::is_vectorized(loop->schedule.kind) || facts_.params.count(facts_.find(alloc->array.get())))
        continue;
      auto temp = local_temporary(stmts, k, at, info);
      if (!temp) continue;
      const std::vector<ir::ArrayVar>& members = temp->first;
      const std::vector<size_t>& binds = temp->second;
      const ArrayInfo* cls = facts_.find(alloc->array.get());
      bool ok = true;
      for (const Access& x : info.accesses)
        if (facts_.find(x.array) == cls) ok = ok && !x.indices.empty() && is_var(x.indices[0], loop->var.get());
      if (!ok) continue;
      // Rebuild each member one dimension smaller (a 1-D temporary keeps one
      // element) and rewrite the loop body.
      ArrayMap<ir::ArrayVar> smaller;
      for (const auto& m : members) {
        auto s = std::make_shared<ArrayInfo>(*m);
        s->type.ndim = std::max(1, m->type.ndim - 1);
        smaller[m.get()] = s;
        per_iteration_.insert(s.get());
        per_iteration_owners_.push_back(s);
      }
      const int old_ndim = alloc->array->type.ndim;
      struct Shrink : ir::IRMutator {
        ArrayMap<ir::ArrayVar>* smaller;
        Expr loop_extent;
        int old_ndim;
        std::vector<Expr> drop_first(const std::vector<Expr>& idx) {
          if (old_ndim == 1) return {ir::IntImm::make(0, ScalarType::py_int())};
          bool changed = false;
          std::vector<Expr> rest = mutate_exprs(std::vector<Expr>(idx.begin() + 1, idx.end()), &changed);
          return rest;
        }
        Expr visit(const ir::Load* l, const Expr& self) override {
          auto it = smaller->find(l->array.get());
          if (it == smaller->end()) return IRMutator::visit(l, self);
          return ir::Load::make(it->second, drop_first(l->indices), l->checked, l->loc);
        }
        Stmt visit(const ir::Store* s, const Stmt& self) override {
          auto it = smaller->find(s->array.get());
          if (it == smaller->end()) return IRMutator::visit(s, self);
          return ir::Store::make(it->second, drop_first(s->indices), mutate(s->value), s->checked, s->loc);
        }
        Stmt visit(const ir::AtomicUpdate* s, const Stmt& self) override {
          auto it = smaller->find(s->array.get());
          if (it == smaller->end()) return IRMutator::visit(s, self);
          return ir::AtomicUpdate::make(it->second, drop_first(s->indices), s->op, mutate(s->value), s->checked, s->loc);
        }
        Expr visit(const ir::ArrayDim* d, const Expr& self) override {
          auto it = smaller->find(d->array.get());
          if (it == smaller->end()) return self;
          if (d->dim == 0) return loop_extent;
          return ir::ArrayDim::make(it->second, d->dim - 1, d->loc);
        }
      } shrink;
      shrink.smaller = &smaller;
      shrink.loop_extent = loop->end;
      shrink.old_ndim = old_ndim;
      std::vector<Expr> shape = old_ndim == 1 ? std::vector<Expr>{ir::IntImm::make(1, ScalarType::py_int(), alloc->loc)}
                                              : std::vector<Expr>(alloc->shape.begin() + 1, alloc->shape.end());
      std::vector<Stmt> prologue = {ir::Allocate::make(smaller.at(alloc->array.get()), shape, alloc->fill,
                                                       alloc->fill_value, alloc->loc)};
      for (size_t m : binds) {
        auto b = stmts[m]->as<ir::ArrayBind>();
        prologue.push_back(ir::ArrayBind::make(smaller.at(b->dst.get()), smaller.at(b->src.get()), b->loc));
      }
      Stmt new_body = shrink.mutate(loop->body);
      std::vector<Stmt> body = prologue;
      for (const auto& s : new_body->as<ir::Block>()->stmts) body.push_back(s);
      Stmt new_loop = ir::For::make(loop->var, loop->begin, loop->end, loop->step, ir::Block::make(body, loop->body->loc),
                                    loop->schedule, loop->loc);
      remarks.push_back({alloc->loc, "fuse_loop_nests",
                         "temporary '" + members.back()->name + "' needs one slice per iteration of the fused loop: "
                         "allocated per iteration without its first dimension"});
      // The smaller arrays are bound once, in the loop's body, where the
      // nests may fuse again (fuse_inside): record their extents and
      // mentions as gather_facts does for the function's arrays.
      ArrayMap<int> mentions = count_mentions(new_loop);
      bool stable_shape = true;
      for (const auto& e : shape) stable_shape = stable_shape && stable(e, facts_);
      for (const auto& [old, small] : smaller) {
        facts_.binds[small.get()] = 1;
        facts_.unite(small.get(), smaller.at(alloc->array.get()).get());
        total_mentions_[small.get()] = mentions[small.get()];
        if (stable_shape) facts_.shape[small.get()] = shape;
      }
      replace_loop(stmts, k, binds, at, new_loop);
      loop = stmts[at]->as<ir::For>();
      info = inspect(loop->body);
      k = static_cast<size_t>(-1);  // start over: indices moved
    }
  }

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

}  // namespace

void fuse_loop_nests(ir::Function& function) {
  Fuser fuser(function);
  function.body = fuser.run(function.body);
  for (auto& r : fuser.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
