// Statements that assemble their sparse output's pattern from their
// operands' (lowering.h): S + T is stored where S or T stores a value,
// S.multiply(T) where both do. As SciPy's csr_binop_csr, each row's entries
// are merged in column order (canonical operands: sorted, distinct columns)
// and a zero result is not stored. The rows run in two parallel passes: the
// first counts each row's entries into the row pointers, a prefix sum turns
// the counts into offsets, and the second stores columns and values.
#include <algorithm>

#include "runtime/abi.h"
#include "tensor/lowering.h"

namespace plait::tensor::detail {

using ir::Expr;
using ir::Stmt;

namespace {

Expr less(Expr a, Expr b, SourceLoc loc) {
  return ir::Compare::make(ir::CompareOp::LT, std::move(a), std::move(b), loc);
}

Expr logical(ir::LogicalOp op, Expr a, Expr b, SourceLoc loc) {
  return a ? ir::Logical::make(op, std::move(a), std::move(b), loc) : b;
}

}  // namespace

void Lowering::assemble(const Statement& s, const LoopOrder& order, std::vector<Stmt>& out) {
  TensorVar& t = *s.out;
  const ir::ArrayVar& pos = t.pos[1];
  const ir::ArrayVar& crd = t.crd[1];
  const ScalarType index{pos->type.dtype, false};
  const Expr rows = as_index(t.shape[0], loc_);
  auto row = [&] { return coordinate(order.loops[0].var); };
  out.push_back(ir::Allocate::make(pos, {add(rows, int_imm(1, loc_), loc_)}, ir::FillKind::Zeros, nullptr, loc_));
  // The rows' merges: of the operands' patterns, or of a product's rows.
  const bool by_heap = order.sparse_product && target_ == Target::CUDA;
  const LoopOrder product = order.sparse_product ? with_csr_operands(order, out) : order;
  ProductWorkspace work;
  if (by_heap) work = product_workspace(product, out);
  auto rows_of = [&](const RowPass& pass) {
    if (!order.sparse_product) return merged_rows(s, order, pass);
    return by_heap ? product_rows_by_heap(product, work, pass) : product_rows(product, pass);
  };

  // Pass 1: each row's count in pos[row + 1].
  ir::Var count = new_var(ScalarType::py_int(), "_count");
  out.push_back(rows_of(RowPass{
      [&](std::vector<Stmt>& body) { body.push_back(ir::Assign::make(count, int_imm(0, loc_), loc_)); },
      [&](const Expr&, std::vector<Stmt>& body) {
        body.push_back(ir::Assign::make(count, add(ref(count, loc_), int_imm(1, loc_), loc_), loc_));
      },
      [&](std::vector<Stmt>& body) {
        body.push_back(ir::Store::make(pos, {add(row(), int_imm(1, loc_), loc_)},
                                       ir::Cast::make(index, ref(count, loc_), false, loc_), false, loc_));
      },
      false}));

  const Expr counted = offsets_from_counts(pos, rows, out);
  if (order.sparse_product && index.kind == ScalarKind::Int32) {
    // A product's entries are known only now (a merge's are bounded by its
    // operands' before the call: frontend/lower_sparse_ops.cpp).
    out.push_back(ir::Assert::make(
        ir::Compare::make(ir::CompareOp::LE, counted, int_imm(INT32_MAX, loc_), loc_), PLAIT_VALUE_ERROR,
        "the result stores more entries than int32 indices count; pass operands with int64 indices", loc_));
  }

  const Expr nnz = as_index(ir::Load::make(pos, {rows}, false, loc_), loc_);
  out.push_back(ir::Allocate::make(crd, {nnz}, ir::FillKind::Uninitialized, nullptr, loc_));
  t.values = new_array(ArrayType{t.type.kind, 1, Layout::C}, t.name + "_values");
  out.push_back(ir::Allocate::make(t.values, {nnz}, ir::FillKind::Uninitialized, nullptr, loc_));

  // Pass 2: each row's columns and values from its offset on.
  ir::Var q = new_var(ScalarType::py_int(), "_q");
  out.push_back(rows_of(RowPass{[&](std::vector<Stmt>& body) {
                                  body.push_back(ir::Assign::make(
                                      q, as_index(ir::Load::make(pos, {row()}, false, loc_), loc_), loc_));
                                },
                                [&](const Expr& v, std::vector<Stmt>& body) {
                                  Expr col = ir::Cast::make(index, coordinate(order.loops.back().var), false, loc_);
                                  body.push_back(ir::Store::make(crd, {ref(q, loc_)}, col, false, loc_));
                                  body.push_back(ir::Store::make(t.values, {ref(q, loc_)}, v, false, loc_));
                                  body.push_back(ir::Assign::make(q, add(ref(q, loc_), int_imm(1, loc_), loc_), loc_));
                                },
                                [](std::vector<Stmt>&) {}}));
}

Expr Lowering::offsets_from_counts(const ir::ArrayVar& pos, const Expr& rows, std::vector<Stmt>& out) {
  // The rows in blocks: each block's total (in parallel), the totals summed
  // in order (one short serial loop), then each block's running sums from
  // its offset (in parallel). A single serial loop over 1e5 rows is one GPU
  // thread's milliseconds.
  constexpr int64_t kBlocks = 1024;
  const ScalarType index{pos->type.dtype, false};
  auto binop = [&](ir::BinaryOp op, Expr a, Expr b) {
    return ir::Binary::make(op, std::move(a), std::move(b), ScalarType::py_int(), false, loc_);
  };
  ir::Var per = new_var(ScalarType::py_int(), "_rows_per_block");
  out.push_back(ir::Assign::make(
      per, binop(ir::BinaryOp::FloorDiv, add(rows, int_imm(kBlocks - 1, loc_), loc_), int_imm(kBlocks, loc_)), loc_));
  ir::ArrayVar totals = new_array(ArrayType{ScalarKind::Int64, 1, Layout::C}, "_block_offsets");
  out.push_back(ir::Allocate::make(totals, {int_imm(kBlocks + 1, loc_)}, ir::FillKind::Zeros, nullptr, loc_));
  ir::LoopSchedule parallel;
  parallel.kind = ir::LoopKind::Parallel;
  // A loop over block b's rows, `each` making the body for row r's count pos[r + 1].
  auto over_block = [&](const ir::Var& b, const std::function<void(const Expr&, const Expr&, std::vector<Stmt>&)>& each,
                        std::vector<Stmt>& body) {
    ir::Var r = new_var(ScalarType::py_int(), "_row");
    Expr first = binop(ir::BinaryOp::Mul, ref(b, loc_), ref(per, loc_));
    Expr end = binop(ir::BinaryOp::Min, add(first, ref(per, loc_), loc_), rows);
    Expr next = add(ref(r, loc_), int_imm(1, loc_), loc_);
    std::vector<Stmt> row;
    each(next, as_index(ir::Load::make(pos, {next}, false, loc_), loc_), row);
    body.push_back(ir::For::make(r, first, end, int_imm(1, loc_), ir::Block::make(std::move(row), loc_), {}, loc_));
  };
  {
    ir::Var b = new_var(ScalarType::py_int(), "_block");
    ir::Var total = new_var(ScalarType::py_int(), "_total");
    std::vector<Stmt> body{ir::Assign::make(total, int_imm(0, loc_), loc_)};
    over_block(
        b,
        [&](const Expr&, const Expr& count, std::vector<Stmt>& row) {
          row.push_back(ir::Assign::make(total, add(ref(total, loc_), count, loc_), loc_));
        },
        body);
    body.push_back(ir::Store::make(totals, {add(ref(b, loc_), int_imm(1, loc_), loc_)}, ref(total, loc_), false, loc_));
    out.push_back(ir::For::make(b, int_imm(0, loc_), int_imm(kBlocks, loc_), int_imm(1, loc_),
                                ir::Block::make(std::move(body), loc_), parallel, loc_));
  }
  {
    ir::Var c = new_var(ScalarType::py_int(), "_block");
    Expr next = add(ref(c, loc_), int_imm(1, loc_), loc_);
    Stmt step = ir::Store::make(
        totals, {next},
        add(ir::Load::make(totals, {next}, false, loc_), ir::Load::make(totals, {ref(c, loc_)}, false, loc_), loc_),
        false, loc_);
    out.push_back(ir::For::make(c, int_imm(0, loc_), int_imm(kBlocks, loc_), int_imm(1, loc_), step, {}, loc_));
  }
  {
    ir::Var b = new_var(ScalarType::py_int(), "_block");
    ir::Var running = new_var(ScalarType::py_int(), "_offset");
    std::vector<Stmt> body{ir::Assign::make(running, ir::Load::make(totals, {ref(b, loc_)}, false, loc_), loc_)};
    over_block(
        b,
        [&](const Expr& next, const Expr& count, std::vector<Stmt>& row) {
          row.push_back(ir::Assign::make(running, add(ref(running, loc_), count, loc_), loc_));
          row.push_back(
              ir::Store::make(pos, {next}, ir::Cast::make(index, ref(running, loc_), false, loc_), false, loc_));
        },
        body);
    out.push_back(ir::For::make(b, int_imm(0, loc_), int_imm(kBlocks, loc_), int_imm(1, loc_),
                                ir::Block::make(std::move(body), loc_), parallel, loc_));
  }
  return ir::Load::make(totals, {int_imm(kBlocks, loc_)}, false, loc_);
}

Stmt Lowering::merged_rows(const Statement& s, const LoopOrder& order, const RowPass& pass) {
  note_accesses(s);
  const Loop& cols = order.loops[1];
  // Per merged pattern: the next position of the row, its end, the column
  // there (the column count past the end) and whether it is the merged one.
  struct Cursor {
    const TensorVar* tensor;
    ir::Var p, end, col, present;
  };
  return make_loop(
      order.loops[0],
      [&](std::vector<Stmt>& row) {
        pass.start(row);
        const Expr i = coordinate(order.loops[0].var);
        const Expr ncols = as_index(s.out->shape[1], loc_);
        std::vector<Cursor> cursors;
        Expr any, needed;
        for (const TensorVarPtr& t : cols.merged) {
          const std::string& name = t->name;
          Cursor c{t.get(), new_var(ScalarType::py_int(), "_p" + name), new_var(ScalarType::py_int(), "_end" + name),
                   new_var(ScalarType::py_int(), "_col" + name), new_var(ScalarType::b1(), "_in" + name)};
          row.push_back(ir::Assign::make(c.p, as_index(ir::Load::make(t->pos[1], {i}, false, loc_), loc_), loc_));
          row.push_back(ir::Assign::make(
              c.end, as_index(ir::Load::make(t->pos[1], {add(i, int_imm(1, loc_), loc_)}, false, loc_), loc_), loc_));
          Expr has = less(ref(c.p, loc_), ref(c.end, loc_), loc_);
          any = logical(ir::LogicalOp::Or, any, has, loc_);
          if (std::find(cols.needed.begin(), cols.needed.end(), t) != cols.needed.end())
            needed = logical(ir::LogicalOp::And, needed, has, loc_);
          cursors.push_back(c);
        }
        std::vector<Stmt> body;
        ir::Var j = new_var(ScalarType::py_int(), cols.var.name);
        Expr first;
        for (const Cursor& c : cursors) {
          Expr stored = as_index(ir::Load::make(c.tensor->crd[1], {ref(c.p, loc_)}, false, loc_), loc_);
          body.push_back(ir::Assign::make(
              c.col, ir::Select::make(less(ref(c.p, loc_), ref(c.end, loc_), loc_), stored, ncols, loc_), loc_));
          first = first
                      ? ir::Binary::make(ir::BinaryOp::Min, first, ref(c.col, loc_), ScalarType::py_int(), false, loc_)
                      : ref(c.col, loc_);
        }
        body.push_back(ir::Assign::make(j, first, loc_));
        coords_[cols.var.id] = ref(j, loc_);
        for (const Cursor& c : cursors) {
          body.push_back(ir::Assign::make(
              c.present, ir::Compare::make(ir::CompareOp::EQ, ref(c.col, loc_), ref(j, loc_), loc_), loc_));
          positions_[c.tensor->crd[1].get()] = ref(c.p, loc_);
          present_[c.tensor->crd[1].get()] = ref(c.present, loc_);
        }
        bound_.push_back(cols.var);
        Expr v = value(order.body, body);
        bound_.pop_back();
        ir::Var held = new_var(order.body->type, "_v");
        body.push_back(ir::Assign::make(held, v, loc_));
        std::vector<Stmt> kept;
        pass.keep(ref(held, loc_), kept);
        Expr nonzero = ir::Compare::make(ir::CompareOp::NE, ref(held, loc_),
                                         identity(ir::ReduceOp::Add, order.body->type, loc_), loc_);
        body.push_back(ir::If::make(nonzero, ir::Block::make(std::move(kept), loc_), nullptr, loc_));
        for (const Cursor& c : cursors) {
          Expr step = ir::Select::make(ref(c.present, loc_), int_imm(1, loc_), int_imm(0, loc_), loc_);
          body.push_back(ir::Assign::make(c.p, add(ref(c.p, loc_), step, loc_), loc_));
          positions_.erase(c.tensor->crd[1].get());
          present_.erase(c.tensor->crd[1].get());
        }
        row.push_back(ir::While::make(needed ? needed : any, ir::Block::make(std::move(body), loc_), loc_));
        pass.finish(row);
      },
      true);
}

}  // namespace plait::tensor::detail
