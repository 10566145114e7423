// Pass: bounds checking (see insert_bounds_checks.h).
#include "transforms/insert_bounds_checks.h"

#include "ir/ir_mutator.h"

namespace plait::transforms {

namespace {

class BoundsChecker : public ir::IRMutator {
 protected:
  ir::Expr visit(const ir::Load* l, const ir::Expr&) override {
    bool changed = false;
    return ir::Load::make(l->array, mutate_exprs(l->indices, &changed), true, l->loc);
  }
  ir::Stmt visit(const ir::Store* s, const ir::Stmt&) override {
    bool changed = false;
    return ir::Store::make(s->array, mutate_exprs(s->indices, &changed), mutate(s->value), true, s->loc);
  }
  ir::Stmt visit(const ir::AtomicUpdate* s, const ir::Stmt&) override {
    bool changed = false;
    return ir::AtomicUpdate::make(s->array, mutate_exprs(s->indices, &changed), s->op, mutate(s->value), true, s->loc);
  }
};

}  // namespace

void insert_bounds_checks(ir::Function& function) {
  BoundsChecker checker;
  function.body = checker.mutate(function.body);
}

}  // namespace plait::transforms
