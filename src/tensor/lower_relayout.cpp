// Dense operands a nest reads down their columns (column_reads.h): the nest
// is lowered twice, once reading them from transposed copies and once as
// they are, and the number of stored entries it visits picks one at run time.
#include "tensor/lowering.h"

namespace plait::tensor::detail {

using ir::Expr;
using ir::Stmt;

// A worker per row of the transpose: its writes run along that row, its
// reads down a column of C, whose cache lines the next rows read too.
Stmt Lowering::transposed_copy(const TensorVar& t, const ir::ArrayVar& copy) {
  ir::Var j = new_var(ScalarType::py_int(), "_col");
  ir::Var k = new_var(ScalarType::py_int(), "_row");
  Expr rows = as_index(t.shape[0], loc_), cols = as_index(t.shape[1], loc_);
  Expr jr = ir::VarRef::make(j, loc_), kr = ir::VarRef::make(k, loc_);
  Stmt element = ir::Store::make(copy, {jr, kr}, ir::Load::make(t.values, {kr, jr}, false, loc_), false, loc_);
  ir::LoopSchedule parallel;
  parallel.kind = ir::LoopKind::Parallel;
  Stmt row = ir::For::make(k, int_imm(0, loc_), rows, int_imm(1, loc_), element, {}, loc_);
  return ir::Block::make({ir::Allocate::make(copy, {cols, rows}, ir::FillKind::Uninitialized, nullptr, loc_),
                          ir::For::make(j, int_imm(0, loc_), cols, int_imm(1, loc_), row, parallel, loc_)},
                         loc_);
}

void Lowering::emit_relaid(const Nest& nest, std::vector<Stmt>& out) {
  if (nest.column_reads.empty()) {
    emit_shared(nest, 0, out);
    return;
  }
  std::vector<Stmt> copied, direct;
  Expr worth;
  for (const ColumnRead& r : nest.column_reads) {
    ir::ArrayVar copy = new_array(ArrayType{r.tensor->values->type.dtype, 2, Layout::C}, r.tensor->name + "_by_column");
    copied.push_back(transposed_copy(*r.tensor, copy));
    transposed_[r.tensor.get()] = copy;
    Expr enough =
        ir::Compare::make(ir::CompareOp::GE, as_index(r.entries, loc_), as_index(r.tensor->shape[1], loc_), loc_);
    worth = worth ? ir::Logical::make(ir::LogicalOp::And, worth, enough, loc_) : enough;
  }
  emit_shared(nest, 0, copied);
  transposed_.clear();
  emit_shared(nest, 0, direct);
  out.push_back(
      ir::If::make(worth, ir::Block::make(std::move(copied), loc_), ir::Block::make(std::move(direct), loc_), loc_));
}

}  // namespace plait::tensor::detail
