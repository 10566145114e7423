// How the lowering schedules the rows of a sparse matrix (lowering.h): on the
// CPU in chunks of equal work, on the GPU a worker per row, short and long
// rows apart.
#include "ir/ir_visitor.h"
#include "tensor/lowering.h"

namespace plait::tensor::detail {

using ir::Expr;
using ir::Stmt;

namespace {

// Whether s holds a loop.
bool holds_loop(const Stmt& s) {
  struct Scan : ir::IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const ir::For*) override { found = true; }
    void visit(const ir::While*) override { found = true; }
  } scan;
  scan.visit(s);
  return scan.found;
}

}  // namespace

// The sparse matrix whose rows the nest's outer loop runs over while a
// statement iterates their stored entries, or null.
const TensorVar* Lowering::balanced_rows(const Nest& nest) {
  for (size_t q = 0; q < nest.stmts.size(); ++q) {
    const Statement& s = *nest.stmts[q];
    const IndexVar& row = nest.orders[q].loops[0].var;
    std::vector<std::pair<const TensorVar*, std::vector<IndexVar>>> sparse = {{s.out.get(), s.vars}};
    for (const IndexExprNode* a : accesses(s.rhs)) sparse.emplace_back(a->tensor.get(), a->vars);
    for (const auto& [t, vars] : sparse) {
      if (!t->is_sparse() || t->format.rank() != 2 || t->format.levels[0] != LevelKind::Dense) continue;
      if (vars[t->format.mode_order[0]] == row && !loop_extent_differs(nest.orders[0].loops[0], *t)) return t;
    }
  }
  return nullptr;
}

bool Lowering::loop_extent_differs(const Loop& loop, const TensorVar& t) {
  return loop.positions() || !loop.extent || loop.extent.get() != t.shape[t.format.mode_order[0]].get();
}

// On the GPU each row is a worker of its own: a team of threads. The CUDA
// back end gives rows whose lengths it cannot count before the launch a
// team of 2 threads that spread the row's entries, right for short rows but
// slow for a power-law matrix's long ones. So the rows run in two kernels,
// rows of at most kShortRow entries, then the longer ones, whose loops over
// entries ask for a larger team (le() on their schedules, marked as the
// compiler's sizes): a warp where those loops are innermost (spmv, softmax,
// sums), a whole block where they hold dense loops and each entry writes
// its own stored value (SDDMM: a K-term sum per entry). There a short
// row's team runs the entries in step and spreads each entry's sum
// (team_in_step), whose terms lie side by side where the entries' do not.
// Where entries add into a dense row (SpMM), the team spreads the dense
// loops instead, sized by their extents, and one kernel runs all rows.
void Lowering::rows_by_length(const Nest& nest, const Loop& loop, const TensorVar& t,
                              const std::function<void(std::vector<Stmt>&)>& fill, std::vector<Stmt>& out) {
  constexpr int64_t kShortRow = 64;
  constexpr int kWarpTrips = 128;    // the trip count the back end gives a warp (docs/cuda.md, "Team size")
  constexpr int kBlockTrips = 1024;  // and a team of 256 threads
  const ir::ArrayVar& pos = t.pos[1];
  bool entries_own_values = true;
  for (const StatementPtr& s : nest.stmts) entries_own_values = entries_own_values && s->out->same_pattern(t);
  bool entries_innermost = true;
  std::vector<Stmt> kernels;
  for (bool long_rows : {false, true}) {
    kernels.push_back(make_loop(
        loop,
        [&](std::vector<Stmt>& body) {
          Expr r = coords_.at(loop.var.id);
          Expr length = ir::Binary::make(
              ir::BinaryOp::Sub, as_index(ir::Load::make(pos, {add(r, int_imm(1, loc_), loc_)}, false, loc_), loc_),
              as_index(ir::Load::make(pos, {r}, false, loc_), loc_), ScalarType::py_int(), false, loc_);
          std::vector<Stmt> row;
          fill(row);
          for (Stmt& s : row) {
            const ir::For* f = s->as<ir::For>();
            if (!f) continue;
            entries_innermost = entries_innermost && !holds_loop(f->body);
            ir::LoopSchedule schedule = f->schedule;
            schedule.most_trips = long_rows ? (holds_loop(f->body) ? kBlockTrips : kWarpTrips) : 0;
            schedule.sizes_by_compiler = long_rows;
            // A short row's entries run in step, each entry's sum spread
            // over the team, whose threads then read contiguous terms.
            schedule.team_in_step = !long_rows && entries_own_values && holds_loop(f->body);
            s = ir::For::make(f->var, f->begin, f->end, f->step, f->body, schedule, f->loc);
          }
          body.push_back(ir::If::make(ir::Compare::make(long_rows ? ir::CompareOp::GT : ir::CompareOp::LE, length,
                                                        int_imm(kShortRow, loc_), loc_),
                                      ir::Block::make(std::move(row), loc_), nullptr, loc_));
        },
        true));
  }
  if (!entries_innermost && !entries_own_values) {
    out.push_back(make_loop(loop, fill, true));
    return;
  }
  for (Stmt& k : kernels) out.push_back(std::move(k));
}

// The rows in chunks of equal work (stored entries plus rows: pos[r] + r
// grows by each row's entries and one), so that a power-law matrix's long
// rows do not leave threads idle: the chunks run in parallel, each finds
// its rows by a binary search in pos.
Stmt Lowering::chunks_of_rows(const Loop& loop, const TensorVar& t, const std::function<void(std::vector<Stmt>&)>& fill,
                              const std::function<void(std::vector<Stmt>&)>& prologue, int64_t chunks) {
  const ir::ArrayVar& pos = t.pos[1];
  Expr rows = as_index(loop.extent, loc_);
  ir::Var chunk = new_var(ScalarType::py_int(), "_rows_by_work");
  auto work = [&](const Expr& r) { return add(as_index(ir::Load::make(pos, {r}, false, loc_), loc_), r, loc_); };
  auto binop = [&](ir::BinaryOp op, Expr a, Expr b) {
    return ir::Binary::make(op, std::move(a), std::move(b), ScalarType::py_int(), false, loc_);
  };
  std::vector<Stmt> body;
  Expr total = work(rows);
  // The first row whose work before it reaches `target`.
  auto row_at = [&](Expr target, const std::string& hint) {
    ir::Var lo = new_var(ScalarType::py_int(), hint);
    ir::Var hi = new_var(ScalarType::py_int(), hint + "_end");
    ir::Var mid = new_var(ScalarType::py_int(), hint + "_mid");
    body.push_back(ir::Assign::make(lo, int_imm(0, loc_), loc_));
    body.push_back(ir::Assign::make(hi, rows, loc_));
    Expr m = ir::VarRef::make(mid, loc_);
    Stmt step = ir::Block::make(
        {ir::Assign::make(mid,
                          binop(ir::BinaryOp::FloorDiv,
                                add(ir::VarRef::make(lo, loc_), ir::VarRef::make(hi, loc_), loc_), int_imm(2, loc_)),
                          loc_),
         ir::If::make(ir::Compare::make(ir::CompareOp::LT, work(m), target, loc_),
                      ir::Assign::make(lo, add(m, int_imm(1, loc_), loc_), loc_), ir::Assign::make(hi, m, loc_), loc_)},
        loc_);
    body.push_back(ir::While::make(
        ir::Compare::make(ir::CompareOp::LT, ir::VarRef::make(lo, loc_), ir::VarRef::make(hi, loc_), loc_), step,
        loc_));
    return ir::VarRef::make(lo, loc_);
  };
  Expr c = ir::VarRef::make(chunk, loc_);
  Expr first =
      row_at(binop(ir::BinaryOp::FloorDiv, binop(ir::BinaryOp::Mul, c, total), int_imm(chunks, loc_)), "_first_row");
  Expr end = row_at(binop(ir::BinaryOp::FloorDiv, binop(ir::BinaryOp::Mul, add(c, int_imm(1, loc_), loc_), total),
                          int_imm(chunks, loc_)),
                    "_end_row");
  Stmt rows_loop = make_loop(loop, fill, false, {first, end});
  if (prologue) {
    std::vector<Stmt> with;
    prologue(with);
    with.push_back(rows_loop);
    rows_loop = ir::If::make(ir::Compare::make(ir::CompareOp::LT, first, end, loc_),
                             ir::Block::make(std::move(with), loc_), nullptr, loc_);
  }
  body.push_back(rows_loop);
  ir::LoopSchedule schedule;
  schedule.kind = ir::LoopKind::Parallel;
  return ir::For::make(chunk, int_imm(0, loc_), int_imm(chunks, loc_), int_imm(1, loc_),
                       ir::Block::make(std::move(body), loc_), schedule, loc_);
}

}  // namespace plait::tensor::detail
