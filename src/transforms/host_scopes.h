// The walk the planning passes make over the code a back end runs outside
// its kernels and regions (the host's code on CUDA, the serial code around
// OpenMP regions on the CPU), keeping the scalars declared at each point in
// scope as the emitters' scopes do: the function's scalar parameters, the
// Declares of the enclosing blocks, the variables of the enclosing loops,
// and a scalar first assigned without a declaration (IR built without
// place_declarations). A pass derives from it, overrides visit(const For*)
// to plan a loop with `declared()` as the scalars around it, and calls
// `scoped` for the bodies it walks.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "ir/ir_mutator.h"

namespace plait::transforms {

class HostScopes : public ir::IRMutator {
 public:
  // The function's body, walked with its parameters in scope.
  ir::Stmt walk(const ir::Function& function);

 protected:
  using IRMutator::visit;

  // A body (a loop's, a branch's), in a scope of its own; `loop_var`, when
  // given, is in that scope.
  ir::Stmt scoped(const ir::Stmt& body, const ir::VarInfo* loop_var = nullptr);
  bool in_scope(const ir::VarInfo* v) const;
  // Every scalar in scope.
  ir::VarSet declared() const;
  // Declares `v` in the innermost scope (a region's accumulators, declared
  // beside its loop).
  void declare(const ir::VarInfo* v) { scopes_.back().insert(v); }
  // The scopes, outermost first.
  const std::vector<ir::VarSet>& scopes() const { return scopes_; }

  ir::Stmt visit(const ir::Block* n, const ir::Stmt& self) override;
  ir::Stmt visit(const ir::Declare* n, const ir::Stmt& self) override;
  ir::Stmt visit(const ir::Assign* n, const ir::Stmt& self) override;
  ir::Stmt visit(const ir::If* n, const ir::Stmt& self) override;
  ir::Stmt visit(const ir::While* n, const ir::Stmt& self) override;
  // A library product's loops run on the host when the library declines.
  ir::Stmt visit(const ir::MatMul* n, const ir::Stmt& self) override;

 private:
  std::vector<ir::VarSet> scopes_;
};

}  // namespace plait::transforms
