// Pass: chunked interchange of reductions that read down a column (see
// interchange_reductions.h).
#include "transforms/interchange_reductions.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

// Bytes of accumulators per chunk: the buffer stays in the L1 cache next to
// one chunk-wide row of each streamed array. Chunks that run in parallel are
// smaller, so that a loop of a few hundred j (covariance's shrinking rows)
// still gives every thread a chunk.
constexpr int64_t kChunkBytes = 4096;
constexpr int64_t kParallelChunkBytes = 2048;
// With blocks of rows: kRows rows of accumulators, and a chunk-wide panel
// of the streamed array over all k that stays in the L2 cache.
constexpr int64_t kRows = 4;
constexpr int64_t kBlockedChunkBytes = 2048;

// Whether an expression may report a run-time error.
struct MayRaise : ir::IRVisitor {
  bool found = false;
  using IRVisitor::visit;
  void visit(const ir::Load* l) override {
    found = found || l->checked;
    IRVisitor::visit(l);
  }
  void visit(const ir::Cast* c) override {
    found = found || c->checked;
    IRVisitor::visit(c);
  }
  void visit(const ir::Binary* b) override {
    found = found || b->zero_check;
    IRVisitor::visit(b);
  }
  void visit(const ir::Call* c) override {
    found = found || c->python_math;
    IRVisitor::visit(c);
  }
};

bool may_raise(const ir::Expr& e) {
  MayRaise m;
  m.visit(e);
  return m.found;
}

// A `break` that leaves the statement's own loop (not one inside a nested loop).
struct BreaksOut : ir::IRVisitor {
  bool found = false;
  using IRVisitor::visit;
  void visit(const ir::For*) override {}
  void visit(const ir::While*) override {}
  void visit(const ir::Break*) override { found = true; }
};

// Every Load in an expression.
struct Loads : ir::IRVisitor {
  std::vector<const ir::Load*> loads;
  using IRVisitor::visit;
  void visit(const ir::Load* l) override {
    loads.push_back(l);
    IRVisitor::visit(l);
  }
};

// Replaces reads of one variable by an expression.
class ReplaceVar : public ir::IRMutator {
 public:
  ReplaceVar(const ir::VarInfo* var, ir::Expr by) : var_(var), by_(std::move(by)) {}

 protected:
  ir::Expr visit(const ir::VarRef* r, const ir::Expr& self) override { return r->var.get() == var_ ? by_ : self; }

 private:
  const ir::VarInfo* var_;
  ir::Expr by_;
};

bool reads_any(const ir::Expr& e, const ir::VarSet& vars) {
  for (const ir::VarInfo* v : analysis::uses_of(e).reads)
    if (vars.count(v)) return true;
  return false;
}

// Whether `e` loads from an array that `body` writes elements of or
// rebinds, or reads the shape of one it rebinds.
bool reads_arrays_of(const ir::Expr& e, const analysis::VarUses& body) {
  struct Scan : ir::IRVisitor {
    const analysis::VarUses* body = nullptr;
    bool found = false;
    using IRVisitor::visit;
    void visit(const ir::Load* l) override {
      found = found || body->arrays_written.count(l->array.get()) || body->array_binds.count(l->array.get());
      IRVisitor::visit(l);
    }
    void visit(const ir::ArrayDim* d) override { found = found || body->array_binds.count(d->array.get()); }
    void visit(const ir::ArraysOverlap* o) override {
      found = found || body->array_binds.count(o->a.get()) || body->array_binds.count(o->b.get());
    }
  } scan;
  scan.body = &body;
  scan.visit(e);
  return scan.found;
}

// `j`, `j + c`, `c + j` or `j - c` with c free of j: an index that moves by
// one element when j does.
bool steps_with(const ir::Expr& e, const ir::VarInfo* j) {
  if (const ir::VarRef* r = e->as<ir::VarRef>()) return r->var.get() == j;
  const ir::Binary* b = e->as<ir::Binary>();
  if (!b) return false;
  if (b->op == ir::BinaryOp::Add)
    return (steps_with(b->a, j) && !analysis::reads_var(b->b, j)) || (steps_with(b->b, j) && !analysis::reads_var(b->a, j));
  if (b->op == ir::BinaryOp::Sub) return steps_with(b->a, j) && !analysis::reads_var(b->b, j);
  return false;
}

// The dimension of unit stride: the last for C order, the first for Fortran
// order, and (a guess: NumPy's default) the last for strided arrays.
int contiguous_dim(const ArrayType& t) { return t.layout == Layout::F ? 0 : t.ndim - 1; }

// The shape `for j: Declares; acc = init; for k: acc = f(acc); rest`.
struct Candidate {
  const ir::For* j_loop = nullptr;
  std::vector<ir::Stmt> declares;
  ir::Var acc;
  ir::Expr init;
  const ir::For* k_loop = nullptr;
  ir::Expr update;  // f(acc), the value assigned to acc in the loop over k
  std::vector<ir::Stmt> rest;
};

std::optional<Candidate> match(const ir::For* loop) {
  const ir::Block* body = loop->body->as<ir::Block>();
  if (!body) return std::nullopt;
  Candidate c;
  c.j_loop = loop;
  int stage = 0;  // 0: before `acc = init`, 1: before the loop over k, 2: rest
  for (const ir::Stmt& s : body->stmts) {
    if (s->as<ir::Declare>()) {
      c.declares.push_back(s);
      continue;
    }
    if (stage == 0) {
      const ir::Assign* a = s->as<ir::Assign>();
      if (!a || analysis::reads_var(a->value, a->var.get())) return std::nullopt;
      c.acc = a->var;
      c.init = a->value;
      stage = 1;
    } else if (stage == 1) {
      const ir::For* k = s->as<ir::For>();
      if (!k) return std::nullopt;
      ir::Stmt inner = k->body;
      if (const ir::Block* kb = inner->as<ir::Block>()) {
        if (kb->stmts.size() != 1) return std::nullopt;
        inner = kb->stmts[0];
      }
      const ir::Assign* u = inner->as<ir::Assign>();
      if (!u || u->var != c.acc || !analysis::reads_var(u->value, c.acc.get())) return std::nullopt;
      c.k_loop = k;
      c.update = u->value;
      stage = 2;
    } else {
      c.rest.push_back(s);
    }
  }
  if (stage != 2) return std::nullopt;
  return c;
}

// The loops and the buffer of one chunk of j: `jc` is the chunk's first j,
// `buf` holds `rows` rows of `width` accumulators.
struct Chunking {
  Chunking(const Candidate& cand, int64_t w, int64_t rows) : c(cand), width(w), loc(cand.j_loop->loc) {
    const ir::Var& j = c.j_loop->var;
    jt = j->type;
    jc = std::make_shared<ir::VarInfo>(ir::VarInfo{j->name + "_chunk", jt, loc, false});
    buf = std::make_shared<ir::ArrayInfo>(
        ir::ArrayInfo{c.acc->name + "_buf", ArrayType{c.acc->type.kind, 1, Layout::C}, loc, false});
    size = rows * width;
  }

  ir::Expr as_type(const ir::Expr& e, ScalarType t) const { return e->type == t ? e : ir::Cast::make(t, e, false, loc); }
  ir::Expr imm(int64_t v, ScalarType t) const { return ir::IntImm::make(v, t, loc); }
  ir::Expr bin(ir::BinaryOp op, const ir::Expr& a, const ir::Expr& b) const {
    return ir::Binary::make(op, as_type(a, jt), as_type(b, jt), jt, false, loc);
  }

  // The slot of j in row `row` (an expression, or null for row 0).
  ir::Expr slot(const ir::Expr& row) const {
    ir::Expr in_chunk = bin(ir::BinaryOp::Sub, ir::VarRef::make(c.j_loop->var, loc), ir::VarRef::make(jc, loc));
    if (!row) return in_chunk;
    if (const ir::IntImm* r = row->as<ir::IntImm>())
      return r->value == 0 ? in_chunk : bin(ir::BinaryOp::Add, imm(r->value * width, jt), in_chunk);
    return bin(ir::BinaryOp::Add, bin(ir::BinaryOp::Mul, row, imm(width, jt)), in_chunk);
  }
  ir::Expr load(const ir::Expr& row) const {
    return as_type(ir::Load::make(buf, {slot(row)}, false, loc), c.acc->type);
  }
  ir::Stmt store(const ir::Expr& row, const ir::Expr& value) const {
    return ir::Store::make(buf, {slot(row)}, as_type(value, c.acc->type.strong()), false, loc);
  }
  // f(acc) with acc read from its slot, then stored back.
  ir::Stmt update(const ir::Expr& row, const ir::Expr& f) const {
    ReplaceVar acc_in_buf(c.acc.get(), load(row));
    return store(row, acc_in_buf.mutate(f));
  }

  // for j in range(jc, min(jc + width, end)): body
  ir::Stmt over_chunk(ir::Stmt body, ir::LoopSchedule sched) const {
    const ir::For* j = c.j_loop;
    ir::Expr end = bin(ir::BinaryOp::PyMin, bin(ir::BinaryOp::Add, ir::VarRef::make(jc, loc), imm(width, jt)), j->end);
    return ir::For::make(j->var, ir::VarRef::make(jc, loc), end, imm(1, jt), std::move(body), std::move(sched), loc);
  }
  // for jc in range(begin, end, width): body
  ir::Stmt chunks(ir::Stmt body, ir::LoopSchedule sched) const {
    const ir::For* j = c.j_loop;
    return ir::For::make(jc, j->begin, j->end, imm(width, jt), std::move(body), std::move(sched), loc);
  }
  // for k in ...: body (serial)
  ir::Stmt over_k(ir::Stmt body) const {
    const ir::For* k = c.k_loop;
    return ir::For::make(k->var, k->begin, k->end, k->step, std::move(body), ir::LoopSchedule{}, k->loc);
  }
  std::vector<ir::Stmt> allocate() const {
    return {ir::Declare::make(buf, loc),
            ir::Allocate::make(buf, {ir::IntImm::make(size, ScalarType::i64(), loc)}, ir::FillKind::Uninitialized,
                               nullptr, loc)};
  }
  // The statements after the reduction, for the j of a slot in row `row`.
  ir::Stmt rest(const ir::Expr& row) const {
    std::vector<ir::Stmt> body = c.declares;
    body.push_back(ir::Assign::make(c.acc, load(row), loc));
    body.insert(body.end(), c.rest.begin(), c.rest.end());
    return ir::Block::make(body, loc);
  }

  const Candidate& c;
  int64_t width;
  SourceLoc loc;
  ScalarType jt;
  ir::Var jc;
  ir::ArrayVar buf;
  int64_t size;
};

ir::LoopSchedule simd_schedule() {
  ir::LoopSchedule s;
  s.kind = ir::LoopKind::Vectorized;
  return s;
}

// A parallel schedule's threads, reductions and privates, without its vector
// lanes, for a new loop that takes over from the loop over `displaced`: that
// variable was private as the loop's own and is now assigned by serial loops
// inside each iteration, so it becomes an explicit private.
ir::LoopSchedule threads_of(const ir::LoopSchedule& s, const ir::Var& displaced) {
  ir::LoopSchedule t = s;
  t.kind = ir::LoopKind::Parallel;
  t.simd_width = 0;
  t.add_private(displaced);
  return t;
}

// A vector schedule's lanes, reductions and privates, without its threads (or serial).
ir::LoopSchedule lanes_of(const ir::LoopSchedule& s) {
  if (!ir::is_vectorized(s.kind)) return ir::LoopSchedule{};
  ir::LoopSchedule t = s;
  t.kind = ir::LoopKind::Vectorized;
  t.num_threads = 0;
  t.collapse = 1;
  return t;
}

// Locals declared anywhere under a statement.
struct DeclaredInside : ir::IRVisitor {
  ir::VarSet vars;
  using IRVisitor::visit;
  void visit(const ir::Declare* d) override {
    if (d->var) vars.insert(d->var.get());
  }
};

class Interchanger : public ir::IRMutator {
 public:
  explicit Interchanger(const ir::Function& f) : root_(f.body) {}

  std::vector<ir::Remark> remarks;

 protected:
  ir::Stmt visit(const ir::For* f, const ir::Stmt& self) override {
    if (std::optional<ir::Stmt> blocked = row_blocks(f)) return *blocked;
    ir::Stmt rebuilt = IRMutator::visit(f, self);
    const ir::For* loop = rebuilt->as<ir::For>();
    std::optional<Candidate> c = match(loop);
    if (!c) return rebuilt;
    std::string streamed;
    const std::string why = refusal(*c, f, &streamed);
    if (!why.empty()) {
      remarks.push_back({loop->loc, "interchange_reductions", describe(*c) + " stays innermost: " + why});
      return rebuilt;
    }
    const int64_t bytes = ir::is_parallel(loop->schedule.kind) ? kParallelChunkBytes : kChunkBytes;
    const Chunking ch(*c, bytes / element_bytes(*c), 1);
    remarks.push_back({loop->loc, "interchange_reductions",
                       describe(*c) + " runs outside chunks of " + std::to_string(ch.width) + " iterations, reading '" +
                           streamed + "' along its contiguous dimension"});
    return rewrite(ch);
  }

 private:

  static std::string describe(const Candidate& c) {
    return "loop over '" + c.j_loop->var->name + "': the reduction over '" + c.k_loop->var->name + "'";
  }
  static int64_t element_bytes(const Candidate& c) { return std::max(c.acc->type.bits() / 8, 1); }

  // Whether `var` may be read after `position` (a statement of the function
  // as it was when the pass started) finishes.
  bool live_after(const ir::StmtNode* position, const ir::VarInfo* var) const {
    return analysis::live_after(root_, position, var);
  }

  // Why the candidate cannot or need not be interchanged; empty when it
  // can. `position`: the loop over j in the function as the pass found it.
  // *streamed names the array read contiguously after the interchange.
  std::string refusal(const Candidate& c, const ir::StmtNode* position, std::string* streamed) const {
    const ir::For* j = c.j_loop;
    const ir::For* k = c.k_loop;
    const ir::IntImm* step = j->step->as<ir::IntImm>();
    if (!step || step->value != 1) return "the loop over '" + j->var->name + "' does not step by 1";
    if (ir::is_parallel(k->schedule.kind)) return "the loop over '" + k->var->name + "' runs in parallel";
    // Liveness, not declarations: versioned statements (fuse_loop_nests)
    // share their loop variables and accumulators between two copies.
    bool k_read_by_rest = false;
    for (const ir::Stmt& r : c.rest) k_read_by_rest = k_read_by_rest || analysis::uses_of(r).reads.count(k->var.get());
    if (live_after(position, j->var.get()) || live_after(position, k->var.get()) || k_read_by_rest)
      return "a loop variable is used outside its loop";
    if (live_after(position, c.acc.get())) return "the accumulator '" + c.acc->name + "' is used outside the loop";

    analysis::VarUses body = analysis::uses_of(j->body);
    if (body.writes.count(j->var.get())) return "the body assigns '" + j->var->name + "'";
    for (const ir::Expr& bound : {j->begin, j->end})
      if (reads_any(bound, body.writes) || reads_arrays_of(bound, body) || may_raise(bound))
        return "the bounds of the loop over '" + j->var->name + "' depend on its body";
    ir::VarSet j_and_body = body.writes;
    j_and_body.insert(j->var.get());
    for (const ir::Expr& bound : {k->begin, k->end, k->step})
      if (reads_any(bound, j_and_body) || reads_arrays_of(bound, body))
        return "the bounds of the loop over '" + k->var->name + "' depend on '" + j->var->name + "'";

    ir::VarSet other_writes = body.writes;
    if (reads_any(c.init, other_writes) || reads_arrays_of(c.init, body))
      return "the initial value depends on the loop body";
    other_writes.erase(c.acc.get());
    other_writes.erase(k->var.get());
    if (reads_any(c.update, other_writes) || reads_arrays_of(c.update, body))
      return "the reduced value reads what the loop writes";
    if (may_raise(c.init) || may_raise(c.update)) return "the reduction may raise an error, whose order would change";
    for (const ir::Stmt& s : c.rest) {
      BreaksOut b;
      b.visit(s);
      if (b.found) return "the loop body breaks out of the loop";
    }

    Loads loads;
    loads.visit(c.update);
    std::string contiguous_in_k;
    for (const ir::Load* l : loads.loads) {
      const int cd = contiguous_dim(l->array->type);
      const ir::Expr& unit_index = l->indices[cd];
      if (analysis::reads_var(unit_index, k->var.get())) {
        if (contiguous_in_k.empty()) contiguous_in_k = l->array->name;
        continue;
      }
      if (!steps_with(unit_index, j->var.get())) continue;
      for (int d = 0; d < l->array->type.ndim; ++d) {
        if (d != cd && analysis::reads_var(l->indices[d], k->var.get())) {
          *streamed = l->array->name;
          return "";
        }
      }
    }
    if (!contiguous_in_k.empty()) return "it reads '" + contiguous_in_k + "' contiguously along '" + k->var->name + "'";
    return "no array is read along a strided dimension by '" + k->var->name + "' and the contiguous one by '" +
           j->var->name + "'";
  }

  // The chunked loop in place of the loop over j.
  ir::Stmt rewrite(const Chunking& ch) const {
    const Candidate& c = ch.c;
    const ir::LoopSchedule& js = c.j_loop->schedule;
    const bool parallel = ir::is_parallel(js.kind);
    std::vector<ir::Stmt> body;
    if (parallel) body = ch.allocate();
    body.push_back(ch.over_chunk(ch.store(nullptr, c.init), simd_schedule()));
    body.push_back(ch.over_k(ch.over_chunk(ch.update(nullptr, c.update), simd_schedule())));
    body.push_back(ch.over_chunk(ch.rest(nullptr), lanes_of(js)));
    ir::Stmt chunks = ch.chunks(ir::Block::make(body, ch.loc), parallel ? threads_of(js, c.j_loop->var) : ir::LoopSchedule{});
    if (parallel) return chunks;
    std::vector<ir::Stmt> block = ch.allocate();
    block.push_back(chunks);
    return ir::Block::make(block, ch.loc);
  }

  // A parallel loop over i whose body is one candidate loop over j: the
  // chunks of j go outside the loop over i, which runs in blocks of kRows
  // rows, so that each element of the streamed array read from the cache
  // serves kRows accumulators and one chunk-wide panel of it is reused by
  // every block. Null when the loop does not have that shape.
  std::optional<ir::Stmt> row_blocks(const ir::For* i) {
    if (!ir::is_parallel(i->schedule.kind) || i->schedule.collapse != 1) return std::nullopt;
    const ir::IntImm* step = i->step->as<ir::IntImm>();
    if (!step || step->value != 1 || live_after(i, i->var.get())) return std::nullopt;
    ir::Stmt only = i->body;
    if (const ir::Block* b = only->as<ir::Block>()) {
      if (b->stmts.size() != 1) return std::nullopt;
      only = b->stmts[0];
    }
    const ir::For* j = only->as<ir::For>();
    if (!j || ir::is_parallel(j->schedule.kind)) return std::nullopt;
    std::optional<Candidate> c = match(j);
    std::string streamed;
    if (!c || !refusal(*c, j, &streamed).empty()) return std::nullopt;
    // The chunks and the loop over k now run outside the loop over i.
    const ir::VarInfo* iv = i->var.get();
    const ir::For* k = c->k_loop;
    for (const ir::Expr& bound : {j->begin, j->end, k->begin, k->end, k->step})
      if (analysis::reads_var(bound, iv)) return std::nullopt;
    // The end of the loop over i is evaluated again for each block.
    analysis::VarUses body = analysis::uses_of(i->body);
    if (reads_any(i->end, body.writes) || reads_arrays_of(i->end, body) || may_raise(i->end)) return std::nullopt;
    // Rows now interleave chunk by chunk: a scalar the body writes must be
    // fresh in each iteration over j (declared inside it, or nowhere) or a
    // reduction across the rows, whose order is free already.
    DeclaredInside inside;
    inside.visit(j->body);
    for (const ir::Reduction& r : i->schedule.reductions) inside.vars.insert(r.var.get());
    for (const ir::VarInfo* v : analysis::uses_of(j->body).writes)
      if (!inside.vars.count(v) && (analysis::may_read_before_write(j->body, v) || live_after(i, v))) return std::nullopt;

    // The statements after the reduction may hold candidates of their own.
    for (ir::Stmt& s : c->rest) s = mutate(s);
    const Chunking ch(*c, kBlockedChunkBytes / element_bytes(*c), kRows);
    remarks.push_back({j->loc, "interchange_reductions",
                       describe(*c) + " runs outside chunks of " + std::to_string(ch.width) + " iterations and blocks of " +
                           std::to_string(kRows) + " iterations of '" + i->var->name + "', reading '" + streamed +
                           "' along its contiguous dimension"});
    return rewrite_blocked(i, ch);
  }

  //   for jc in chunks:
  //     parallel for ib in range(begin, end, kRows):
  //       buf = empty(kRows * width)
  //       if ib + kRows <= end: all rows at once, i = ib + r in row r
  //       else: for i in range(ib, end): one row at a time
  //       for i in range(ib, min(ib + kRows, end)): for j in chunk: rest
  ir::Stmt rewrite_blocked(const ir::For* i, const Chunking& ch) const {
    const Candidate& c = ch.c;
    const SourceLoc loc = ch.loc;
    const ScalarType it = i->var->type;
    auto ibin = [&](ir::BinaryOp op, const ir::Expr& a, const ir::Expr& b) {
      return ir::Binary::make(op, ch.as_type(a, it), ch.as_type(b, it), it, false, loc);
    };
    ir::Var ib = std::make_shared<ir::VarInfo>(ir::VarInfo{i->var->name + "_block", it, loc, false});
    const ir::Expr ib_ref = ir::VarRef::make(ib, loc);
    const ir::Expr i_ref = ir::VarRef::make(i->var, loc);
    const ir::Expr i_row = ibin(ir::BinaryOp::Sub, i_ref, ib_ref);

    // Full blocks: the init and update of every row in one loop over j.
    std::vector<ir::Stmt> inits, updates;
    for (int64_t r = 0; r < kRows; ++r) {
      ReplaceVar row_i(i->var.get(), r == 0 ? ib_ref : ibin(ir::BinaryOp::Add, ib_ref, ir::IntImm::make(r, it, loc)));
      const ir::Expr row = ir::IntImm::make(r, ch.jt, loc);
      inits.push_back(ch.store(row, row_i.mutate(c.init)));
      updates.push_back(ch.update(row, row_i.mutate(c.update)));
    }
    ir::Stmt full = ir::Block::make({ch.over_chunk(ir::Block::make(inits, loc), simd_schedule()),
                                     ch.over_k(ch.over_chunk(ir::Block::make(updates, loc), simd_schedule()))},
                                    loc);
    // The last, partial block: row by row.
    auto each_row = [&](const ir::Expr& end, ir::Stmt body) {
      return ir::For::make(i->var, ib_ref, end, ir::IntImm::make(1, it, loc), std::move(body), ir::LoopSchedule{}, loc);
    };
    ir::Stmt partial = each_row(
        i->end, ir::Block::make({ch.over_chunk(ch.store(i_row, c.init), simd_schedule()),
                                 ch.over_k(ch.over_chunk(ch.update(i_row, c.update), simd_schedule()))},
                                loc));
    const ir::Expr block_end = ibin(ir::BinaryOp::Add, ib_ref, ir::IntImm::make(kRows, it, loc));
    std::vector<ir::Stmt> block = ch.allocate();
    block.push_back(ir::If::make(ir::Compare::make(ir::CompareOp::LE, block_end, ch.as_type(i->end, it), loc), full,
                                 partial, loc));
    block.push_back(each_row(ibin(ir::BinaryOp::PyMin, block_end, i->end),
                             ch.over_chunk(ch.rest(i_row), lanes_of(c.j_loop->schedule))));
    ir::Stmt blocks = ir::For::make(ib, i->begin, i->end, ir::IntImm::make(kRows, it, loc), ir::Block::make(block, loc),
                                    threads_of(i->schedule, i->var), i->loc);
    return ch.chunks(blocks, ir::LoopSchedule{});
  }

  ir::Stmt root_;
};

}  // namespace

void interchange_reductions(ir::Function& function) {
  Interchanger interchanger(function);
  function.body = interchanger.mutate(function.body);
  for (auto& r : interchanger.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
