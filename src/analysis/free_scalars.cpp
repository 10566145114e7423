// The free scalars of statements (free_scalars.h): one walk that keeps the
// declarations of the statements in scope, as analysis/verify_ir does.
#include "analysis/free_scalars.h"

#include "ir/ir_visitor.h"

namespace plait::analysis {

namespace {

using namespace ir;

class FreeScalars : public IRVisitor {
 public:
  explicit FreeScalars(const VarSet& around) : around_(around) {}

  std::vector<Var> free;

  // Statements in a scope of their own: the declarations of one hold for
  // those after it.
  void visit_scoped(const std::vector<Stmt>& stmts, const Var& held = nullptr) {
    scopes_.emplace_back();
    if (held) hold(held);
    for (const Stmt& s : stmts) visit(s);
    release_scope();
  }

  using IRVisitor::visit;

 protected:
  void visit(const VarRef* n) override { use(n->var); }
  void visit(const Assign* n) override {
    use(n->var);
    IRVisitor::visit(n);
  }
  void visit(const Declare* n) override {
    if (!n->var) return;
    if (around_.count(n->var.get())) use(n->var);
    hold(n->var);
  }
  void visit(const Block* n) override { visit_scoped(n->stmts); }
  void visit(const If* n) override {
    visit(n->cond);
    visit_scoped({n->then_case});
    visit_scoped({n->else_case});
  }
  void visit(const For* n) override {
    if (around_.count(n->var.get())) use(n->var);
    visit(n->begin);
    visit(n->end);
    visit(n->step);
    visit_scoped({n->body}, n->var);
  }
  void visit(const While* n) override {
    visit(n->cond);
    visit_scoped({n->body});
  }
  void visit(const MatMul* n) override {
    visit(n->m);
    visit(n->n);
    visit(n->k);
    visit(n->alpha);
    visit(n->beta);
    visit(n->triangle.alpha2);
    scopes_.emplace_back();
    if (n->triangle.row) hold(n->triangle.row);
    visit(n->triangle.row_condition);
    release_scope();
    visit(n->triangle.vector_row);
    visit_scoped({n->loops});
  }

 private:
  void use(const Var& v) {
    if (!around_.count(v.get()) && held_.count(v.get())) return;
    if (seen_.insert(v.get()).second) free.push_back(v);
  }
  void hold(const Var& v) {
    scopes_.back().push_back(v.get());
    ++held_[v.get()];
  }
  void release_scope() {
    for (const VarInfo* v : scopes_.back())
      if (--held_[v] == 0) held_.erase(v);
    scopes_.pop_back();
  }

  const VarSet& around_;
  std::vector<std::vector<const VarInfo*>> scopes_;
  VarMap<int> held_;  // the scalars a declaration of the statements holds, and by how many
  VarSet seen_;
};

}  // namespace

std::vector<ir::Var> free_scalars(const std::vector<ir::Stmt>& stmts, const ir::VarSet& declared_around) {
  FreeScalars walk(declared_around);
  walk.visit_scoped(stmts);
  return walk.free;
}

}  // namespace plait::analysis
