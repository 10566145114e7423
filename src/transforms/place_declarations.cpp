// Pass: declaration placement (see place_declarations.h).
#include "transforms/place_declarations.h"

#include <map>
#include <set>
#include <vector>

#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

using BlockPath = std::vector<const ir::Block*>;

struct LocalInfo {
  ir::Var var;
  ir::ArrayVar array;
  std::vector<BlockPath> uses;
  std::vector<const ir::Block*> own_loop_bodies;  // bodies of loops that have this as loop variable
};

// Records, for every local, the block path of each statement that mentions it.
class UseFinder : public ir::IRVisitor {
 public:
  std::map<const void*, LocalInfo> locals;
  std::vector<const void*> order;  // first-use order, so output is deterministic
  // The scalars that a Declare already places: their producer (the tensor
  // level's coordinates, declared in each copy of their loop) knows better.
  std::set<const void*> declared;
  using IRVisitor::visit;

 protected:
  void visit(const ir::Declare* d) override {
    if (d->var) declared.insert(d->var.get());
  }
  void visit(const ir::Block* b) override {
    path_.push_back(b);
    for (const auto& s : b->stmts) {
      note_uses(s);
      IRVisitor::visit(s);
    }
    path_.pop_back();
  }
  void visit(const ir::For* f) override {
    // The loop variable is written at the start of each iteration: a use
    // inside the body.
    const ir::Block* body = f->body->as<ir::Block>();
    LocalInfo& li = info(f->var, nullptr);
    BlockPath p = path_;
    p.push_back(body);
    li.uses.push_back(p);
    li.own_loop_bodies.push_back(body);
    IRVisitor::visit(f);
  }

 private:
  LocalInfo& info(const ir::Var& v, const ir::ArrayVar& a) {
    const void* key = v ? static_cast<const void*>(v.get()) : static_cast<const void*>(a.get());
    auto it = locals.find(key);
    if (it == locals.end()) {
      order.push_back(key);
      it = locals.emplace(key, LocalInfo{v, a, {}, {}}).first;
    }
    return it->second;
  }
  // Uses of a statement's own expressions (not of nested statements, which
  // are recorded with their own, deeper path).
  void note_uses(const ir::Stmt& s) {
    std::vector<ir::Expr> exprs;
    std::vector<ir::Var> vars;
    std::vector<ir::ArrayVar> arrays;
    switch (s->kind) {
      case ir::NodeKind::Assign: {
        auto a = s->as<ir::Assign>();
        vars.push_back(a->var);
        exprs.push_back(a->value);
        break;
      }
      case ir::NodeKind::Store: {
        auto a = s->as<ir::Store>();
        arrays.push_back(a->array);
        exprs.insert(exprs.end(), a->indices.begin(), a->indices.end());
        exprs.push_back(a->value);
        break;
      }
      case ir::NodeKind::AtomicUpdate: {
        auto a = s->as<ir::AtomicUpdate>();
        arrays.push_back(a->array);
        exprs.insert(exprs.end(), a->indices.begin(), a->indices.end());
        exprs.push_back(a->value);
        break;
      }
      case ir::NodeKind::If: exprs.push_back(s->as<ir::If>()->cond); break;
      case ir::NodeKind::While: exprs.push_back(s->as<ir::While>()->cond); break;
      case ir::NodeKind::For: {
        auto f = s->as<ir::For>();
        exprs = {f->begin, f->end, f->step};
        for (const auto& r : f->schedule.reductions) vars.push_back(r.var);
        for (const auto& p : f->schedule.privates) vars.push_back(p);
        break;
      }
      case ir::NodeKind::Return:
        for (const auto& v : s->as<ir::Return>()->values) {
          if (v.scalar) exprs.push_back(v.scalar);
          if (v.array) arrays.push_back(v.array);
        }
        break;
      case ir::NodeKind::Allocate: {
        auto a = s->as<ir::Allocate>();
        arrays.push_back(a->array);
        exprs.insert(exprs.end(), a->shape.begin(), a->shape.end());
        if (a->fill_value) exprs.push_back(a->fill_value);
        break;
      }
      case ir::NodeKind::ArrayBind: {
        auto a = s->as<ir::ArrayBind>();
        arrays.push_back(a->dst);
        arrays.push_back(a->src);
        break;
      }
      default: break;
    }
    for (const auto& e : exprs) {
      if (!e) continue;
      ExprLocals el;
      el.visit(e);
      for (const auto& v : el.vars) vars.push_back(v);
      for (const auto& a : el.arrays) arrays.push_back(a);
    }
    for (const auto& v : vars)
      if (!v->is_param) info(v, nullptr).uses.push_back(path_);
    for (const auto& a : arrays)
      if (!a->is_param) info(nullptr, a).uses.push_back(path_);
  }

  class ExprLocals : public ir::IRVisitor {
   public:
    std::vector<ir::Var> vars;
    std::vector<ir::ArrayVar> arrays;
    using IRVisitor::visit;

   protected:
    void visit(const ir::VarRef* n) override { vars.push_back(n->var); }
    void visit(const ir::Load* n) override {
      arrays.push_back(n->array);
      IRVisitor::visit(n);
    }
    void visit(const ir::ArrayDim* n) override { arrays.push_back(n->array); }
    void visit(const ir::ArraysOverlap* n) override {
      arrays.push_back(n->a);
      arrays.push_back(n->b);
    }
  };

  BlockPath path_;
};

class DeclarationInserter : public ir::IRMutator {
 public:
  std::map<const ir::Block*, std::vector<ir::Stmt>> declare_at;

 protected:
  ir::Stmt visit(const ir::Block* b, const ir::Stmt& self) override {
    ir::Stmt rebuilt = IRMutator::visit(b, self);
    auto it = declare_at.find(b);
    if (it == declare_at.end()) return rebuilt;
    std::vector<ir::Stmt> stmts = it->second;
    const auto& old = rebuilt->as<ir::Block>()->stmts;
    stmts.insert(stmts.end(), old.begin(), old.end());
    return ir::Block::make(stmts, b->loc);
  }
};

BlockPath common_prefix(const std::vector<BlockPath>& paths) {
  BlockPath p = paths[0];
  for (const auto& q : paths) {
    size_t n = 0;
    while (n < p.size() && n < q.size() && p[n] == q[n]) ++n;
    p.resize(n);
  }
  return p;
}

}  // namespace

void place_declarations(ir::Function& function) {
  UseFinder finder;
  finder.visit(function.body);
  // Blocks by address, to test exposure on their statements.
  std::map<const ir::Block*, ir::Stmt> blocks;
  struct BlockCollector : ir::IRVisitor {
    std::map<const ir::Block*, ir::Stmt>* out;
    using IRVisitor::visit;
    void visit(const ir::Block* b) override {
      (*out)[b] = ir::Block::make(b->stmts, b->loc);
      IRVisitor::visit(b);
    }
  } collector;
  collector.out = &blocks;
  collector.visit(function.body);

  DeclarationInserter inserter;
  for (const void* key : finder.order) {
    if (finder.declared.count(key)) continue;
    const LocalInfo& li = finder.locals.at(key);
    BlockPath scope = common_prefix(li.uses);
    // Widen the scope while the local's value on entry to it matters.
    while (scope.size() > 1) {
      // A loop body never sees its own loop variable's old value: the loop
      // writes it before each iteration.
      bool own_body = false;
      for (const ir::Block* body : li.own_loop_bodies) own_body = own_body || body == scope.back();
      if (own_body) break;
      const ir::Stmt& block = blocks.at(scope.back());
      bool exposed = li.var ? analysis::may_read_before_write(block, li.var.get())
                            : analysis::may_read_before_write(block, li.array.get());
      if (!exposed) break;
      scope.pop_back();
    }
    if (scope.empty()) scope.push_back(function.body->as<ir::Block>());
    if (li.var) {
      bool inside_own_loop = false;
      for (const ir::Block* body : li.own_loop_bodies)
        for (const ir::Block* b : scope) inside_own_loop = inside_own_loop || b == body;
      if (inside_own_loop && li.own_loop_bodies.size() == 1) continue;
      inserter.declare_at[scope.back()].push_back(ir::Declare::make(li.var, li.var->loc));
    } else {
      inserter.declare_at[scope.back()].push_back(ir::Declare::make(li.array, li.array->loc));
    }
  }
  function.body = inserter.mutate(function.body);
}

}  // namespace plait::transforms
