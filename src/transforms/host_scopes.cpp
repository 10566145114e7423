// The planning passes' walk of the code outside kernels and regions, with
// the scalars declared at each point (see host_scopes.h).
#include "transforms/host_scopes.h"

#include <algorithm>
#include <utility>

namespace plait::transforms {

using namespace ir;

Stmt HostScopes::walk(const Function& function) {
  scopes_.clear();
  scopes_.emplace_back();
  for (const Param& p : function.params)
    if (p.scalar) scopes_.back().insert(p.scalar.get());
  return scoped(function.body);
}

Stmt HostScopes::scoped(const Stmt& body, const VarInfo* loop_var) {
  scopes_.emplace_back();
  if (loop_var) scopes_.back().insert(loop_var);
  Stmt out = mutate(body);
  scopes_.pop_back();
  return out;
}

bool HostScopes::in_scope(const VarInfo* v) const {
  return std::any_of(scopes_.begin(), scopes_.end(), [&](const VarSet& scope) { return scope.count(v) > 0; });
}

VarSet HostScopes::declared() const {
  VarSet out;
  for (const VarSet& scope : scopes_) out.insert(scope.begin(), scope.end());
  return out;
}

Stmt HostScopes::visit(const Block* n, const Stmt& self) {
  scopes_.emplace_back();
  Stmt out = IRMutator::visit(n, self);
  scopes_.pop_back();
  return out;
}

Stmt HostScopes::visit(const Declare* n, const Stmt& self) {
  if (n->var) scopes_.back().insert(n->var.get());
  return self;
}

Stmt HostScopes::visit(const Assign* n, const Stmt& self) {
  if (!in_scope(n->var.get())) scopes_.back().insert(n->var.get());
  return self;
}

Stmt HostScopes::visit(const If* n, const Stmt& self) {
  Stmt then_case = scoped(n->then_case);
  Stmt else_case = n->else_case ? scoped(n->else_case) : nullptr;
  if (then_case == n->then_case && else_case == n->else_case) return self;
  return If::make(n->cond, std::move(then_case), std::move(else_case), n->loc);
}

Stmt HostScopes::visit(const While* n, const Stmt& self) {
  Stmt body = scoped(n->body);
  if (body == n->body) return self;
  return While::make(n->cond, std::move(body), n->loc);
}

Stmt HostScopes::visit(const MatMul* n, const Stmt& self) {
  Stmt loops = scoped(n->loops);
  if (loops == n->loops) return self;
  return MatMul::make(n->c, n->a, n->a_transposed, n->b, n->b_transposed, n->m, n->n, n->k, n->alpha, n->beta,
                      std::move(loops), n->loc, n->triangle);
}

}  // namespace plait::transforms
