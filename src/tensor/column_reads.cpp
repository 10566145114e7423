// Dense operands a nest reads down their columns (column_reads.h).
#include "tensor/column_reads.h"

#include <map>

namespace plait::tensor {

namespace {

// Per dense matrix: whether every access of it reads down a column, and the
// loop over the stored entries whose coordinate picks that column.
struct Reads {
  bool ok = true;
  const Loop* entries = nullptr;
  TensorVarPtr tensor;
};

// Walks e; `sum` is the variable of the innermost sum around the point when
// that sum runs over a dense extent, else null.
void walk(const IndexExpr& e, const IndexVar* sum, const LoopOrder& order, std::map<const TensorVar*, Reads>& found) {
  if (!e) return;
  if (e->kind == ExprKind::Access) {
    const TensorVar& t = *e->tensor;
    if (t.is_sparse() || t.rank() != 2 || t.scalar) return;
    Reads& r = found[&t];
    r.tensor = e->tensor;
    bool broadcast = false;
    for (const ir::Expr& b : e->broadcast) broadcast = broadcast || b;
    const Loop* stored = nullptr;
    for (const Loop& l : order.loops)
      if (l.positions() && l.var == e->vars[1]) stored = &l;
    if (broadcast || !sum || !(e->vars[0] == *sum) || !stored || !stored->tensor->nnz ||
        (r.entries && r.entries->tensor.get() != stored->tensor.get())) {
      r.ok = false;
      return;
    }
    r.entries = stored;
    return;
  }
  if (e->kind == ExprKind::Reduce) {
    // A sum over a compressed level iterates stored entries, not a column.
    bool dense = true;
    for (const IndexExprNode* a : accesses(e->a))
      if (a->tensor->is_sparse())
        for (const IndexVar& v : a->vars) dense = dense && !(v == e->var);
    walk(e->a, dense ? &e->var : nullptr, order, found);
    return;
  }
  walk(e->a, sum, order, found);
  walk(e->b, sum, order, found);
}

}  // namespace

void plan_column_reads(const Program& program, FusionPlan& plan) {
  for (Nest& nest : plan.nests) {
    if (nest.orders[0].assembles) continue;
    std::map<const TensorVar*, Reads> found;
    for (size_t q = 0; q < nest.stmts.size(); ++q) walk(nest.orders[q].body, nullptr, nest.orders[q], found);
    for (const auto& [t, r] : found) {
      bool result = false;
      for (const StatementPtr& s : program.stmts) result = result || s->out.get() == t;
      if (!r.ok || result || !t->values || t->values->type.layout == Layout::F) continue;
      const TensorVar& s = *r.entries->tensor;
      nest.column_reads.push_back({r.tensor, s.nnz});
      const std::string nnz = (s.pattern.empty() ? s.name : s.pattern) + ".nnz";
      plan.remarks.emplace_back(nest.stmts[0]->loc, t->name + " is read down its columns (at each stored entry of " +
                                                        s.name + "): read from a transposed copy when " + nnz + " >= " +
                                                        (t->dims.size() > 1 ? t->dims[1] : t->name + ".shape[1]"));
    }
  }
}

}  // namespace plait::tensor
