// The IR's invariants (verify_ir.h): one walk, which stops at the first
// broken one and names it with the statement it is in.
#include "analysis/verify_ir.h"

#include <vector>

#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::analysis {

namespace {

using namespace ir;

class Verifier : public IRVisitor {
 public:
  Verifier(const Function& function, const std::string& after, const VerifyOptions& options)
      : function_(function), after_(after), options_(options) {
    scopes_.emplace_back();
    for (const Param& p : function.params)
      if (p.scalar) scopes_.back().push_back(p.scalar.get());
  }

  void run() {
    require(function_.body != nullptr, "the function has no body");
    visit(function_.body);
  }

 private:
  using IRVisitor::visit;

  [[noreturn]] void fail(const std::string& what) const {
    std::string where = statement_ ? "\nin the statement:\n" + to_string(*statement_, 1) : "";
    PLAIT_INTERNAL_ERROR("the IR after `" + after_ + "` of `" + function_.name + "` is not valid: " + what + where);
  }
  void require(bool holds, const std::string& what) const {
    if (!holds) fail(what);
  }
  void require_expr(const Expr& e, const std::string& what) {
    require(e != nullptr, what + " is missing");
    visit(e);
  }
  void require_bool(const Expr& e, const std::string& what) {
    require_expr(e, what);
    require(e->type.is_bool(), what + " is " + to_string(e->type) + ", not bool");
  }
  void require_int(const Expr& e, const std::string& what) {
    require_expr(e, what);
    require(e->type.is_int(), what + " is " + to_string(e->type) + ", not an integer");
  }
  void require_indices(const ArrayVar& array, const std::vector<Expr>& indices, const char* node) {
    require(array != nullptr, std::string(node) + " of no array");
    require(static_cast<int>(indices.size()) == array->type.ndim,
            std::string(node) + " of `" + array->name + "` has " + std::to_string(indices.size()) +
                " indices for its " + std::to_string(array->type.ndim) + " dimensions");
    for (const Expr& i : indices) require_int(i, std::string("an index of `") + array->name + "`");
  }
  void require_stmt(const Stmt& s, const std::string& what) {
    require(s != nullptr, what + " is missing");
    visit(s);
  }

  bool declared(const VarInfo* v) const {
    for (const auto& scope : scopes_)
      for (const VarInfo* d : scope)
        if (d == v) return true;
    return false;
  }
  void require_declared(const Var& v, const char* use) const {
    require(v != nullptr, std::string(use) + " of no variable");
    if (options_.declarations_placed)
      require(declared(v.get()), std::string(use) + " of `" + v->name + "` outside the scope of its declaration");
  }

  // Statements set statement_ for the messages and open scopes where a block
  // opens one.
  struct InStatement {
    Verifier& v;
    const Stmt* saved;
    InStatement(Verifier& verifier, const Stmt* s) : v(verifier), saved(verifier.statement_) { v.statement_ = s; }
    ~InStatement() { v.statement_ = saved; }
  };
  void visit_scoped(const Stmt& s, const std::vector<const VarInfo*>& bound = {}) {
    scopes_.push_back(bound);
    visit(s);
    scopes_.pop_back();
  }

  void visit(const IntImm* n) override { require(!n->type.is_float(), "an integer constant of a float type"); }
  void visit(const FloatImm* n) override { require(n->type.is_float(), "a float constant of a non-float type"); }
  void visit(const BoolImm* n) override { require(n->type.is_bool(), "a bool constant of a non-bool type"); }
  void visit(const VarRef* n) override { require_declared(n->var, "a read"); }
  void visit(const Cast* n) override { require_expr(n->value, "a cast's operand"); }
  void visit(const Unary* n) override { require_expr(n->a, "a unary operand"); }
  void visit(const Binary* n) override {
    require_expr(n->a, "a binary operand");
    require_expr(n->b, "a binary operand");
  }
  void visit(const Compare* n) override {
    require(n->type.is_bool(), "a comparison of a non-bool type");
    require_expr(n->a, "a comparison's operand");
    require_expr(n->b, "a comparison's operand");
  }
  void visit(const Logical* n) override {
    require_expr(n->a, "a logical operand");
    require_expr(n->b, "a logical operand");
  }
  void visit(const Select* n) override {
    require_bool(n->cond, "a select's condition");
    require_expr(n->t, "a select's value");
    require_expr(n->f, "a select's value");
  }
  void visit(const Call* n) override {
    for (const Expr& a : n->args) require_expr(a, std::string("an argument of ") + intrinsic_name(n->fn));
  }
  void visit(const Load* n) override { require_indices(n->array, n->indices, "a load"); }
  void visit(const ArrayDim* n) override {
    require(n->array != nullptr, "the shape of no array");
    require(n->dim >= 0 && n->dim < n->array->type.ndim,
            "dimension " + std::to_string(n->dim) + " of `" + n->array->name + "`");
  }
  void visit(const ArraysOverlap* n) override { require(n->a && n->b, "an overlap test of no array"); }

  void visit(const Block* n) override {
    scopes_.emplace_back();
    for (const Stmt& s : n->stmts) {
      InStatement in(*this, &s);
      require_stmt(s, "a block's statement");
    }
    scopes_.pop_back();
  }
  void visit(const Declare* n) override {
    require((n->var != nullptr) != (n->array != nullptr), "a declaration of both or neither a scalar and an array");
    if (n->var) scopes_.back().push_back(n->var.get());
  }
  void visit(const Assign* n) override {
    require_declared(n->var, "an assignment");
    require_expr(n->value, "an assignment's value");
    require(n->value->type.kind == n->var->type.kind, "an assignment of a " + to_string(n->value->type) + " to `" +
                                                          n->var->name + "` of " + to_string(n->var->type));
  }
  void visit(const Store* n) override {
    require_indices(n->array, n->indices, "a store");
    require_expr(n->value, "a store's value");
    require(n->value->type.kind == n->array->type.dtype, "a store of a " + to_string(n->value->type) + " into `" +
                                                             n->array->name + "` of " + to_string(n->array->type));
  }
  void visit(const AtomicUpdate* n) override {
    require_indices(n->array, n->indices, "an atomic update");
    require_expr(n->value, "an atomic update's value");
  }
  void visit(const If* n) override {
    require_bool(n->cond, "a condition");
    require(n->then_case != nullptr, "an if without a body");
    visit_scoped(n->then_case);
    if (n->else_case) visit_scoped(n->else_case);
  }
  void visit(const For* n) override {
    require(n->var != nullptr, "a loop without a variable");
    require(n->var->type.is_int(), "the loop variable `" + n->var->name + "` is not an integer");
    require_int(n->begin, "a loop's start");
    require_int(n->end, "a loop's end");
    require_int(n->step, "a loop's step");
    for (const Reduction& r : n->schedule.reductions) require_declared(r.var, "a reduction");
    require(n->body != nullptr, "a loop without a body");
    const bool parallel = n->schedule.kind != LoopKind::Serial;
    const int saved_depth = loop_depth_, saved_parallel = parallel_depth_;
    ++loop_depth_;
    if (parallel) {
      parallel_depth_ = loop_depth_;
      ++parallel_loops_;
    }
    visit_scoped(n->body, {n->var.get()});
    if (parallel) --parallel_loops_;
    loop_depth_ = saved_depth;
    parallel_depth_ = saved_parallel;
  }
  void visit(const While* n) override {
    require_bool(n->cond, "a while loop's condition");
    require(n->body != nullptr, "a while loop without a body");
    const int saved = loop_depth_;
    ++loop_depth_;
    visit_scoped(n->body);
    loop_depth_ = saved;
  }
  // A continue ends one iteration, which a parallel loop allows; a break
  // would end the others too.
  void visit(const Break*) override {
    require(loop_depth_ > 0, "a break outside any loop");
    if (options_.early_exits_refused)
      require(loop_depth_ > parallel_depth_ || parallel_depth_ == 0, "a break out of a parallel or vector loop");
  }
  void visit(const Continue*) override { require(loop_depth_ > 0, "a continue outside any loop"); }
  void visit(const Return* n) override {
    if (options_.early_exits_refused) require(parallel_loops_ == 0, "a return inside a parallel or vector loop");
    for (const ReturnValue& v : n->values) {
      require((v.scalar != nullptr) != (v.array != nullptr), "a returned value of both or neither kind");
      if (v.scalar) visit(v.scalar);
    }
  }
  void visit(const Allocate* n) override {
    require(n->array != nullptr, "an allocation of no array");
    require(static_cast<int>(n->shape.size()) == n->array->type.ndim,
            "an allocation of `" + n->array->name + "` with " + std::to_string(n->shape.size()) + " extents for its " +
                std::to_string(n->array->type.ndim) + " dimensions");
    for (const Expr& e : n->shape) require_int(e, "an extent of `" + n->array->name + "`");
    require((n->fill == FillKind::Value) == (n->fill_value != nullptr), "an allocation's fill value");
    if (n->fill_value) visit(n->fill_value);
  }
  void visit(const ArrayBind* n) override {
    require(n->dst && n->src, "a binding of no array");
    require(n->dst->type.dtype == n->src->type.dtype && n->dst->type.ndim == n->src->type.ndim,
            "`" + n->dst->name + "` of " + to_string(n->dst->type) + " bound to `" + n->src->name + "` of " +
                to_string(n->src->type));
  }
  void visit(const Assert* n) override { require_bool(n->cond, "an assertion's condition"); }
  void visit(const MatMul* n) override {
    require(n->c && n->a && n->b, "a matrix product of no array");
    require_int(n->m, "a matrix product's extent");
    require_int(n->n, "a matrix product's extent");
    require_int(n->k, "a matrix product's extent");
    require_expr(n->alpha, "a matrix product's alpha");
    if (n->beta) visit(n->beta);
    require(n->loops != nullptr, "a matrix product without its loops");
    visit_scoped(n->loops);
  }

  const Function& function_;
  const std::string& after_;
  const VerifyOptions& options_;
  std::vector<std::vector<const VarInfo*>> scopes_;
  const Stmt* statement_ = nullptr;
  int loop_depth_ = 0;
  int parallel_depth_ = 0;  // the depth of the innermost parallel or vector loop; 0: none
  int parallel_loops_ = 0;  // parallel and vector loops around the statement
};

}  // namespace

void verify_ir(const ir::Function& function, const std::string& after, const VerifyOptions& options) {
  Verifier(function, after, options).run();
}

}  // namespace plait::analysis
