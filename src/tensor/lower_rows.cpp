// How the lowering schedules the rows of a sparse matrix (lowering.h): on the
// CPU in chunks of equal work, on the GPU a worker per row, short and long
// rows apart.
#include <map>
#include <set>

#include "ir/ir_equal.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"
#include "runtime/abi.h"
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

// A binary search over rows 0 .. `last`: `lo` ends at the first row r for
// which `after(r)` is false (the rows for which it holds come first). The
// caller makes and names the variables.
void search_rows(const ir::Var& lo, const ir::Var& hi, const ir::Var& mid, Expr last,
                 const std::function<Expr(const Expr&)>& after, SourceLoc loc, std::vector<Stmt>& body) {
  body.push_back(ir::Assign::make(lo, int_imm(0, loc), loc));
  body.push_back(ir::Assign::make(hi, std::move(last), loc));
  Expr m = ref(mid, loc);
  Expr half = ir::Binary::make(ir::BinaryOp::FloorDiv, add(ref(lo, loc), ref(hi, loc), loc), int_imm(2, loc),
                               ScalarType::py_int(), false, loc);
  Stmt step = ir::Block::make(
      {ir::Assign::make(mid, half, loc), ir::If::make(after(m), ir::Assign::make(lo, add(m, int_imm(1, loc), loc), loc),
                                                      ir::Assign::make(hi, m, loc), loc)},
      loc);
  body.push_back(ir::While::make(ir::Compare::make(ir::CompareOp::LT, ref(lo, loc), ref(hi, loc), loc), step, loc));
}

// Whether e is `pos[r]` read as an index: where a row's entries begin.
bool reads_row_start(const Expr& e, const ir::ArrayVar& pos, const Expr& r) {
  const auto* cast = e->as<ir::Cast>();
  const auto* load = (cast ? cast->value : e)->as<ir::Load>();
  return load && load->array.get() == pos.get() && load->indices.size() == 1 && ir::equal(load->indices[0], r);
}

// Whether e reads no variable and no array element: an extent the same
// in every iteration of the row's loops (`X.shape[1]`).
bool fixed_extent(const Expr& e) {
  struct Scan : ir::IRVisitor {
    bool fixed = true;
    using IRVisitor::visit;
    void visit(const ir::VarRef*) override { fixed = false; }
    void visit(const ir::Load*) override { fixed = false; }
  } scan;
  scan.visit(e);
  return scan.fixed;
}

// A long row's work, rewritten for one chunk of its entries while other
// chunks of the row run at once. The loop over the row's entries runs from
// `first` to `end` of the chunk, and what the row adds up is added into its
// output atomically, in one of two forms:
// - sums into the row's dense output inside the loop (`out[r, j] = out[r, j]
//   + e` in a loop over j from 0 to a fixed extent: SpMM) add into a row of
//   the chunk's own, which after the entries is added to the output with one
//   atomic per column, so that the chunks of a row of 5e4 entries do not
//   queue on the same addresses;
// - a scalar sum over the entries (started at zero before the loop, `s = s +
//   e` in it) stored as the row's element after it (`out[r] = s`: spmv, row
//   sums) is added to that element instead; the element must be zero
//   before, which the kernel of short rows sees to (zeroed()).
// Null when the row does other work: another loop, a store of another form,
// a temporary, a read of an output it adds into, a scalar carried otherwise.
class ChunkOfRow : public ir::IRMutator {
 public:
  using NewArray = std::function<ir::ArrayVar(const ir::ArrayVar& like)>;
  using NewVar = std::function<ir::Var(const std::string& hint)>;
  ChunkOfRow(const ir::ArrayVar& pos, Expr row, NewArray new_array, NewVar new_var, SourceLoc loc)
      : pos_(pos), row_(std::move(row)), new_array_(std::move(new_array)), new_var_(std::move(new_var)), loc_(loc) {}

  Stmt rewrite(const std::vector<Stmt>& stmts, const Expr& first, const Expr& end, int64_t chunk) {
    const ir::For* entries = nullptr;
    std::vector<Stmt> before, after;
    for (const Stmt& s : stmts) {
      if (const auto* f = s->as<ir::For>()) {
        if (entries) return nullptr;
        entries = f;
      } else {
        (entries ? after : before).push_back(s);
      }
    }
    if (!entries || !reads_row_start(entries->begin, pos_, row_)) return nullptr;
    for (const Stmt& s : before) {
      const auto* a = s->as<ir::Assign>();
      if (a && ir::is_zero(a->value) && !a->var->type.is_bool()) {
        started_.insert(a->var.get());
      } else if (!s->as<ir::Declare>()) {
        return nullptr;
      }
    }
    Stmt body = mutate(entries->body);
    std::vector<Stmt> out;
    for (const Stmt& s : before) out.push_back(s);
    std::vector<Stmt> stored;
    for (const Stmt& s : after) {
      const auto* st = s->as<ir::Store>();
      const auto* v = st && st->indices.size() == 1 ? st->value->as<ir::VarRef>() : nullptr;
      if (!v || !summed_.count(v->var.get()) || !ir::equal(st->indices[0], row_)) return nullptr;
      zeroed_.push_back(st->array);
      outputs_.insert(st->array.get());
      stored.push_back(ir::AtomicUpdate::make(st->array, st->indices, ir::AtomicOp::Add, st->value, false, st->loc));
    }
    if (!ok_ || (sums_.empty() && zeroed_.empty()) || reads_of_outputs(entries->body) != sum_reads_ ||
        reads_of_started(entries->body) != sum_steps_)
      return nullptr;
    auto bound = [&](ir::BinaryOp op, Expr a, Expr b) {
      return ir::Binary::make(op, std::move(a), std::move(b), ScalarType::py_int(), false, loc_);
    };
    for (const auto& [array, sum] : sums_)
      out.push_back(ir::Allocate::make(sum.row, {sum.extent}, ir::FillKind::Zeros, nullptr, loc_));
    // A loop whose iterations the team spreads (sums of a chunk's entries)
    // has at most `chunk` of them: a warp's worth (docs/cuda.md, "Team size").
    ir::LoopSchedule schedule = entries->schedule;
    if (ir::is_vectorized(schedule.kind)) {
      schedule.most_trips = chunk;
      schedule.sizes_by_compiler = true;
    }
    out.push_back(ir::For::make(entries->var, bound(ir::BinaryOp::Max, entries->begin, first),
                                bound(ir::BinaryOp::Min, entries->end, end), entries->step, body, schedule,
                                entries->loc));
    ir::LoopSchedule lanes;
    lanes.kind = ir::LoopKind::Vectorized;
    for (const auto& [array, sum] : sums_) {
      ir::Var j = new_var_("_chunk_column");
      Expr at = ir::VarRef::make(j, loc_);
      Stmt add = ir::AtomicUpdate::make(sum.out, {row_, at}, ir::AtomicOp::Add,
                                        ir::Load::make(sum.row, {at}, false, loc_), false, loc_);
      out.push_back(ir::For::make(j, ir::IntImm::make(0, ScalarType::py_int(), loc_), sum.extent,
                                  ir::IntImm::make(1, ScalarType::py_int(), loc_), add, lanes, loc_));
    }
    for (Stmt& s : stored) out.push_back(std::move(s));
    return ir::Block::make(std::move(out), loc_);
  }

  // The outputs whose long rows' elements start at zero.
  const std::vector<ir::ArrayVar>& zeroed() const { return zeroed_; }

 private:
  struct Sum {
    ir::ArrayVar out, row;
    Expr extent;
  };

  int reads_of_outputs(const Stmt& s) const {
    struct Reads : ir::IRVisitor {
      const std::set<const ir::ArrayInfo*>& arrays;
      int count = 0;
      explicit Reads(const std::set<const ir::ArrayInfo*>& a) : arrays(a) {}
      using IRVisitor::visit;
      void visit(const ir::Load* l) override {
        count += arrays.count(l->array.get()) ? 1 : 0;
        IRVisitor::visit(l);
      }
    } reads(outputs_);
    reads.visit(s);
    return reads.count;
  }

  // The reads of the scalars started before the loop in s: each must be
  // its sum's own (`s = s + e`), so no other value sees a partial sum.
  int reads_of_started(const Stmt& s) const {
    struct Reads : ir::IRVisitor {
      const std::set<const ir::VarInfo*>& vars;
      int count = 0;
      explicit Reads(const std::set<const ir::VarInfo*>& v) : vars(v) {}
      using IRVisitor::visit;
      void visit(const ir::VarRef* r) override { count += vars.count(r->var.get()) ? 1 : 0; }
    } reads(started_);
    reads.visit(s);
    return reads.count;
  }

  Stmt visit(const ir::Assign* a, const Stmt& self) override {
    // A sum started before the loop: `s = s + e`.
    if (!started_.count(a->var.get())) return IRMutator::visit(a, self);
    const auto* sum = a->value->as<ir::Binary>();
    const auto* old = sum && sum->op == ir::BinaryOp::Add ? sum->a->as<ir::VarRef>() : nullptr;
    if (!old || old->var.get() != a->var.get()) ok_ = false;
    summed_.insert(a->var.get());
    ++sum_steps_;
    return self;
  }

  using IRMutator::visit;
  Stmt visit(const ir::For* f, const Stmt& self) override {
    loops_[f->var.get()] = f;
    Stmt out = IRMutator::visit(f, self);
    loops_.erase(f->var.get());
    return out;
  }
  Stmt visit(const ir::Store* s, const Stmt& self) override {
    const auto* sum = s->value->as<ir::Binary>();
    const auto* old = sum && sum->op == ir::BinaryOp::Add ? sum->a->as<ir::Load>() : nullptr;
    const auto* column = s->indices.size() == 2 ? s->indices[1]->as<ir::VarRef>() : nullptr;
    auto loop = column ? loops_.find(column->var.get()) : loops_.end();
    const auto is = [](const Expr& e, int64_t v) {
      const auto* imm = e->as<ir::IntImm>();
      return imm && imm->value == v;
    };
    if (!old || old->array.get() != s->array.get() || old->indices.size() != 2 || loop == loops_.end() ||
        !ir::equal(s->indices[0], row_) || !ir::equal(old->indices[0], row_) ||
        !ir::equal(old->indices[1], s->indices[1]) || !is(loop->second->begin, 0) || !is(loop->second->step, 1) ||
        !fixed_extent(loop->second->end)) {
      ok_ = false;
      return self;
    }
    auto [it, fresh] = sums_.try_emplace(s->array.get(), Sum{s->array, nullptr, loop->second->end});
    if (fresh) it->second.row = new_array_(s->array);
    outputs_.insert(s->array.get());
    if (!ir::equal(it->second.extent, loop->second->end)) ok_ = false;
    ++sum_reads_;
    Expr at = s->indices[1];
    return ir::Store::make(it->second.row, {at},
                           ir::Binary::make(ir::BinaryOp::Add, ir::Load::make(it->second.row, {at}, false, loc_),
                                            sum->b, sum->type, false, sum->loc),
                           false, s->loc);
  }
  Stmt visit(const ir::Allocate* a, const Stmt& self) override {
    ok_ = false;
    return IRMutator::visit(a, self);
  }
  Stmt visit(const ir::AtomicUpdate* a, const Stmt& self) override {
    ok_ = false;
    return IRMutator::visit(a, self);
  }

  const ir::ArrayVar& pos_;
  Expr row_;
  NewArray new_array_;
  NewVar new_var_;
  SourceLoc loc_;
  std::map<const ir::VarInfo*, const ir::For*> loops_;
  std::map<const ir::ArrayInfo*, Sum> sums_;       // dense rows summed into, by output
  std::set<const ir::ArrayInfo*> outputs_;         // every output added into
  std::set<const ir::VarInfo*> started_, summed_;  // scalars started at zero; those summed in the loop
  std::vector<ir::ArrayVar> zeroed_;
  int sum_reads_ = 0;  // reads of dense rows by their sums
  int sum_steps_ = 0;  // `s = s + e` steps of the started scalars
  bool ok_ = true;
};

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
// loops instead, sized by their extents. Where a row adds up its entries
// (into a dense row, or into its element: spmv), the longer rows run in
// chunks of entries instead (long_rows_in_chunks).
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
  const bool sums_into_rows = !entries_innermost && !entries_own_values;
  std::vector<ir::ArrayVar> zeroed;
  if (sums_into_rows || entries_innermost) {
    // Where entries add into a dense row (SpMM), the team walks the row's
    // entries in order; where a row's sum is innermost (spmv, row sums), a
    // warp spreads its entries: either way a row of 5e4 entries takes
    // thousands of steps of one team. Its chunks of entries run apart
    // instead, each adding its part atomically.
    Stmt chunks = long_rows_in_chunks(loop, t, fill, kShortRow, zeroed);
    if (chunks) {
      remarks_.emplace_back(nest.stmts[0]->loc,
                            "rows of " + t.name + " with more than " + std::to_string(kShortRow) +
                                " stored entries run in chunks of " + std::to_string(kShortRow) +
                                " entries, each adding its sums into the row atomically (a kernel of their own)");
      kernels[1] = chunks;
    } else if (sums_into_rows) {
      remarks_.emplace_back(nest.stmts[0]->loc, "the rows of " + t.name +
                                                    " run a team each, long ones too: a row does more than add its "
                                                    "entries' terms into a dense row, so its entries are not split");
      out.push_back(make_loop(loop, fill, true));
      return;
    }
  }
  // The kernel of short rows marks that it met a long one, and the kernel of
  // long rows runs only then: on a matrix without long rows its workers stop
  // at once (spmv on banded, 1e6 entries: the chunks' searches for their
  // rows took 45 us a call).
  ir::ArrayVar marked = new_array(ArrayType{ScalarKind::Int64, 1, Layout::C}, "_long_rows");
  out.push_back(ir::Allocate::make(marked, {int_imm(1, loc_)}, ir::FillKind::Zeros, nullptr, loc_));
  out.push_back(with_long_rows_marked(kernels[0], zeroed, marked));
  out.push_back(only_where_marked(kernels[1], marked));
}

// The kernel of short rows (a loop over the rows whose body is `if the row
// is short: its work`) with, for a long row, its elements of `zeroed` set to
// zero (the chunks of the row add into them after this kernel) and `marked`
// set to 1 (atomically, once it reads 0).
Stmt Lowering::with_long_rows_marked(const Stmt& short_rows, const std::vector<ir::ArrayVar>& zeroed,
                                     const ir::ArrayVar& marked) {
  const auto* rows = short_rows->as<ir::For>();
  const auto* body = rows->body->as<ir::Block>();
  std::vector<Stmt> stmts = body->stmts;
  const auto* split = stmts.back()->as<ir::If>();
  std::vector<Stmt> long_row;
  for (const ir::ArrayVar& a : zeroed)
    long_row.push_back(ir::Store::make(
        a, {ref(rows->var, loc_)}, identity(ir::ReduceOp::Add, ScalarType{a->type.dtype, false}, loc_), false, loc_));
  const Expr zero = int_imm(0, loc_);
  long_row.push_back(ir::If::make(
      ir::Compare::make(ir::CompareOp::EQ, ir::Load::make(marked, {zero}, false, loc_), zero, loc_),
      ir::AtomicUpdate::make(marked, {zero}, ir::AtomicOp::Max, int_imm(1, loc_), false, loc_), nullptr, loc_));
  stmts.back() = ir::If::make(split->cond, split->then_case, ir::Block::make(std::move(long_row), loc_), loc_);
  return ir::For::make(rows->var, rows->begin, rows->end, rows->step, ir::Block::make(std::move(stmts), loc_),
                       rows->schedule, rows->loc);
}

// The kernel of long rows, each iteration's work only where `marked` is set.
Stmt Lowering::only_where_marked(const Stmt& long_rows, const ir::ArrayVar& marked) {
  const auto* rows = long_rows->as<ir::For>();
  const Expr zero = int_imm(0, loc_);
  Stmt body =
      ir::If::make(ir::Compare::make(ir::CompareOp::NE, ir::Load::make(marked, {zero}, false, loc_), zero, loc_),
                   rows->body, nullptr, loc_);
  return ir::For::make(rows->var, rows->begin, rows->end, rows->step, body, rows->schedule, rows->loc);
}

// The rows of more than `chunk` entries, in chunks of `chunk` consecutive
// stored entries of the matrix. A chunk holds the end of at most one long
// row and the start of at most one other (a row inside it is short), so two
// workers take each chunk: side 0 the row of its first entry, side 1 the row
// of its last when that row starts inside the chunk. Each finds its row by a
// binary search in pos; no table of the chunks is built, which would cost
// a scan's launches on every call.
Stmt Lowering::long_rows_in_chunks(const Loop& loop, const TensorVar& t,
                                   const std::function<void(std::vector<Stmt>&)>& fill, int64_t chunk,
                                   std::vector<ir::ArrayVar>& zeroed) {
  const ir::ArrayVar& pos = t.pos[1];
  auto binop = [&](ir::BinaryOp op, Expr a, Expr b) {
    return ir::Binary::make(op, std::move(a), std::move(b), ScalarType::py_int(), false, loc_);
  };
  auto start = [&](const Expr& r) { return as_index(ir::Load::make(pos, {r}, false, loc_), loc_); };
  Expr rows = as_index(loop.extent, loc_);
  Expr entries = start(rows);
  Expr stored = as_index(ir::ArrayDim::make(t.crd[1], 0, loc_), loc_);
  ir::Var worker = new_var(ScalarType::py_int(), "_chunk_worker");
  ir::Var first = new_var(ScalarType::py_int(), "_chunk_first");
  ir::Var end = new_var(ScalarType::py_int(), "_chunk_end");
  ir::Var side = new_var(ScalarType::py_int(), "_chunk_side");
  ir::Var lo = new_var(ScalarType::py_int(), "_chunk_row");
  ir::Var hi = new_var(ScalarType::py_int(), "_chunk_row_end");
  ir::Var mid = new_var(ScalarType::py_int(), "_chunk_row_mid");
  ir::Var entry = new_var(ScalarType::py_int(), "_chunk_entry");
  ir::Var found = new_var(ScalarType::py_int(), "_long_row");
  Expr r = ref(found, loc_);

  std::vector<Stmt> row;
  coords_[loop.var.id] = r;
  bound_.push_back(loop.var);
  fill(row);
  bound_.pop_back();
  ChunkOfRow rewrite(
      pos, r,
      [&](const ir::ArrayVar& like) {
        return new_array(ArrayType{like->type.dtype, 1, Layout::C}, "_chunk_sums");
      },
      [&](const std::string& hint) { return new_var(ScalarType::py_int(), hint); }, loc_);
  Stmt part = rewrite.rewrite(row, ref(first, loc_), ref(end, loc_), chunk);
  if (!part) return nullptr;
  zeroed = rewrite.zeroed();

  std::vector<Stmt> body;
  // Entries past the index array would be in no chunk.
  body.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::LE, entries, stored, loc_), PLAIT_INDEX_ERROR,
                                  "the row offsets of '" + t.name + "' reach past its stored entries", loc_));
  Expr w = ref(worker, loc_);
  body.push_back(ir::Assign::make(
      first, binop(ir::BinaryOp::Mul, binop(ir::BinaryOp::FloorDiv, w, int_imm(2, loc_)), int_imm(chunk, loc_)), loc_));
  body.push_back(ir::Assign::make(
      end, binop(ir::BinaryOp::Min, add(ref(first, loc_), int_imm(chunk, loc_), loc_), entries), loc_));
  body.push_back(ir::Assign::make(side, binop(ir::BinaryOp::Mod, w, int_imm(2, loc_)), loc_));
  // Side 0 looks up the chunk's first entry, side 1 its last.
  body.push_back(ir::Assign::make(
      entry,
      add(ref(first, loc_),
          binop(ir::BinaryOp::Mul, ref(side, loc_),
                binop(ir::BinaryOp::Sub, binop(ir::BinaryOp::Sub, ref(end, loc_), ref(first, loc_)), int_imm(1, loc_))),
          loc_),
      loc_));
  // The first row that ends after the entry: the row that holds it.
  search_rows(
      lo, hi, mid, binop(ir::BinaryOp::Sub, rows, int_imm(1, loc_)),
      [&](const Expr& m) {
        return ir::Compare::make(ir::CompareOp::LE, start(add(m, int_imm(1, loc_), loc_)), ref(entry, loc_), loc_);
      },
      loc_, body);
  // The row, assigned once from a value that is never negative: so the
  // indices it makes are proven non-negative (transforms/normalize_indices).
  body.push_back(ir::Assign::make(found, binop(ir::BinaryOp::Max, ref(lo, loc_), int_imm(0, loc_)), loc_));
  Expr row_start = start(r);
  Expr long_row =
      ir::Compare::make(ir::CompareOp::GT, binop(ir::BinaryOp::Sub, start(add(r, int_imm(1, loc_), loc_)), row_start),
                        int_imm(chunk, loc_), loc_);
  Expr own = ir::Logical::make(ir::LogicalOp::Or,
                               ir::Compare::make(ir::CompareOp::EQ, ref(side, loc_), int_imm(0, loc_), loc_),
                               ir::Compare::make(ir::CompareOp::GT, row_start, ref(first, loc_), loc_), loc_);
  Expr in_entries = ir::Compare::make(ir::CompareOp::LT, ref(first, loc_), entries, loc_);
  body.push_back(ir::If::make(ir::Logical::make(ir::LogicalOp::And, in_entries,
                                                ir::Logical::make(ir::LogicalOp::And, long_row, own, loc_), loc_),
                              part, nullptr, loc_));

  ir::LoopSchedule schedule;
  schedule.kind = ir::LoopKind::Parallel;
  // Workers for the entries the index array holds, known on the host, where
  // pos[rows] would be read from the GPU (a wait for the kernels before);
  // the workers past pos[rows] find no entries.
  Expr workers = binop(ir::BinaryOp::Mul,
                       binop(ir::BinaryOp::FloorDiv, add(stored, int_imm(chunk - 1, loc_), loc_), int_imm(chunk, loc_)),
                       int_imm(2, loc_));
  return ir::For::make(worker, int_imm(0, loc_), workers, int_imm(1, loc_), ir::Block::make(std::move(body), loc_),
                       schedule, loc_);
}

// The rows in chunks of equal work (stored entries plus rows: pos[r] + r
// grows by each row's entries and one), so that a power-law matrix's long
// rows do not leave threads idle: the chunks run in parallel, each finds
// its rows by a binary search in pos. A chunk costs its two searches and
// the bounds checks' scans of the index arrays its rows read
// (insert_bounds_checks), about a microsecond, so a chunk holds about
// kOpsPerChunk of the nest's `ops` (spmv of 1e5 entries: 6 chunks, where
// `chunks` of them took 1.5x as long on one thread).
Stmt Lowering::chunks_of_rows(const Loop& loop, const TensorVar& t, const Expr& ops,
                              const std::function<void(std::vector<Stmt>&)>& fill,
                              const std::function<void(std::vector<Stmt>&)>& prologue, int64_t chunks) {
  const ir::ArrayVar& pos = t.pos[1];
  Expr rows = as_index(loop.extent, loc_);
  ir::Var chunk = new_var(ScalarType::py_int(), "_rows_by_work");
  auto work = [&](const Expr& r) { return add(as_index(ir::Load::make(pos, {r}, false, loc_), loc_), r, loc_); };
  auto binop = [&](ir::BinaryOp op, Expr a, Expr b) {
    return ir::Binary::make(op, std::move(a), std::move(b), ScalarType::py_int(), false, loc_);
  };
  constexpr double kOpsPerChunk = 32768;
  std::vector<Stmt> body;
  Expr total = work(rows);
  // ops / kOpsPerChunk chunks, from 1 to `chunks`.
  auto at_least = [&](double n) {
    return ir::Compare::make(ir::CompareOp::GE, ops, ir::FloatImm::make(n * kOpsPerChunk, ScalarType::f64(), loc_),
                             loc_);
  };
  Expr quotient =
      ir::Cast::make(ScalarType::py_int(),
                     ir::Binary::make(ir::BinaryOp::Div, ops, ir::FloatImm::make(kOpsPerChunk, ScalarType::f64(), loc_),
                                      ScalarType::f64(), false, loc_),
                     false, loc_);
  ir::Var count = new_var(ScalarType::py_int(), "_row_chunks");
  Stmt count_chunks =
      ir::Assign::make(count,
                       ir::Select::make(at_least(static_cast<double>(chunks)), int_imm(chunks, loc_),
                                        ir::Select::make(at_least(1), quotient, int_imm(1, loc_), loc_), loc_),
                       loc_);
  Expr chunk_count = ir::VarRef::make(count, loc_);
  // The first row whose work before it reaches `target`.
  auto row_at = [&](Expr target, const std::string& hint) {
    ir::Var lo = new_var(ScalarType::py_int(), hint);
    ir::Var hi = new_var(ScalarType::py_int(), hint + "_end");
    ir::Var mid = new_var(ScalarType::py_int(), hint + "_mid");
    search_rows(
        lo, hi, mid, rows, [&](const Expr& m) { return ir::Compare::make(ir::CompareOp::LT, work(m), target, loc_); },
        loc_, body);
    return ir::VarRef::make(lo, loc_);
  };
  Expr c = ir::VarRef::make(chunk, loc_);
  Expr first = row_at(binop(ir::BinaryOp::FloorDiv, binop(ir::BinaryOp::Mul, c, total), chunk_count), "_first_row");
  Expr end = row_at(
      binop(ir::BinaryOp::FloorDiv, binop(ir::BinaryOp::Mul, add(c, int_imm(1, loc_), loc_), total), chunk_count),
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
  Stmt loop_of_chunks = ir::For::make(chunk, int_imm(0, loc_), chunk_count, int_imm(1, loc_),
                                      ir::Block::make(std::move(body), loc_), schedule, loc_);
  return ir::Block::make({count_chunks, loop_of_chunks}, loc_);
}

}  // namespace plait::tensor::detail
