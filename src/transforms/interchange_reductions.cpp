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
// one chunk-wide row of each streamed array.
constexpr int64_t kChunkBytes = 4096;

// The Declares of each variable anywhere in the function.
struct VarDeclarations : ir::IRVisitor {
  std::map<const ir::VarInfo*, std::vector<const ir::Declare*>> of;
  using IRVisitor::visit;
  void visit(const ir::Declare* d) override {
    if (d->var) of[d->var.get()].push_back(d);
  }
};

// Arrays that a statement stores to or updates atomically, and arrays it
// (re)binds.
struct WrittenArrays : ir::IRVisitor {
  std::set<const ir::ArrayInfo*> stored;
  std::set<const ir::ArrayInfo*> rebound;
  using IRVisitor::visit;
  void visit(const ir::Store* s) override {
    stored.insert(s->array.get());
    IRVisitor::visit(s);
  }
  void visit(const ir::AtomicUpdate* u) override {
    stored.insert(u->array.get());
    IRVisitor::visit(u);
  }
  void visit(const ir::Allocate* a) override {
    rebound.insert(a->array.get());
    IRVisitor::visit(a);
  }
  void visit(const ir::ArrayBind* b) override { rebound.insert(b->dst.get()); }
};

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

bool reads_any(const ir::Expr& e, const std::set<const ir::VarInfo*>& vars) {
  for (const ir::VarInfo* v : analysis::uses_of(e).reads)
    if (vars.count(v)) return true;
  return false;
}

// Whether `e` loads from an array that `written` stores to or rebinds, or
// reads the shape of one it rebinds.
bool reads_any(const ir::Expr& e, const WrittenArrays& written) {
  struct Scan : ir::IRVisitor {
    const WrittenArrays* written = nullptr;
    bool found = false;
    using IRVisitor::visit;
    void visit(const ir::Load* l) override {
      found = found || written->stored.count(l->array.get()) || written->rebound.count(l->array.get());
      IRVisitor::visit(l);
    }
    void visit(const ir::ArrayDim* d) override { found = found || written->rebound.count(d->array.get()); }
  } scan;
  scan.written = &written;
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

class Interchanger : public ir::IRMutator {
 public:
  explicit Interchanger(const ir::Function& f) {
    VarDeclarations d;
    d.visit(f.body);
    declarations_ = std::move(d.of);
  }

  std::vector<ir::Remark> remarks;

 protected:
  ir::Stmt visit(const ir::For* f, const ir::Stmt& self) override {
    ir::Stmt rebuilt = IRMutator::visit(f, self);
    const ir::For* loop = rebuilt->as<ir::For>();
    std::optional<Candidate> c = match(loop);
    if (!c) return rebuilt;
    const std::string what = "loop over '" + loop->var->name + "': the reduction over '" + c->k_loop->var->name + "'";
    std::string streamed;
    const std::string why = refusal(*c, &streamed);
    if (!why.empty()) {
      remarks.push_back({loop->loc, "interchange_reductions", what + " stays innermost: " + why});
      return rebuilt;
    }
    const int64_t bytes = std::max(c->acc->type.bits() / 8, 1);
    const int64_t chunk = kChunkBytes / bytes;
    remarks.push_back({loop->loc, "interchange_reductions",
                       what + " runs outside chunks of " + std::to_string(chunk) + " iterations, reading '" + streamed +
                           "' along its contiguous dimension"});
    return rewrite(*c, chunk);
  }

 private:
  bool declared(const ir::VarInfo* v) const { return declarations_.count(v) > 0; }

  // Why the candidate cannot or need not be interchanged; empty when it
  // can. *streamed names the array read contiguously after the interchange.
  std::string refusal(const Candidate& c, std::string* streamed) const {
    const ir::For* j = c.j_loop;
    const ir::For* k = c.k_loop;
    const ir::IntImm* step = j->step->as<ir::IntImm>();
    if (!step || step->value != 1) return "the loop over '" + j->var->name + "' does not step by 1";
    if (declared(j->var.get()) || declared(k->var.get()))
      return "a loop variable is used outside its loop";
    auto acc_decls = declarations_.find(c.acc.get());
    if (acc_decls != declarations_.end())
      for (const ir::Declare* d : acc_decls->second)
        if (std::none_of(c.declares.begin(), c.declares.end(), [&](const ir::Stmt& s) { return s.get() == d; }))
          return "the accumulator '" + c.acc->name + "' is used outside the loop";

    analysis::VarUses body = analysis::uses_of(j->body);
    WrittenArrays written;
    written.visit(j->body);
    if (body.writes.count(j->var.get())) return "the body assigns '" + j->var->name + "'";
    for (const ir::Expr& bound : {j->begin, j->end})
      if (reads_any(bound, body.writes) || reads_any(bound, written) || may_raise(bound))
        return "the bounds of the loop over '" + j->var->name + "' depend on its body";
    std::set<const ir::VarInfo*> j_and_body = body.writes;
    j_and_body.insert(j->var.get());
    for (const ir::Expr& bound : {k->begin, k->end, k->step})
      if (reads_any(bound, j_and_body) || reads_any(bound, written))
        return "the bounds of the loop over '" + k->var->name + "' depend on '" + j->var->name + "'";

    std::set<const ir::VarInfo*> other_writes = body.writes;
    if (reads_any(c.init, other_writes) || reads_any(c.init, written))
      return "the initial value depends on the loop body";
    other_writes.erase(c.acc.get());
    other_writes.erase(k->var.get());
    if (reads_any(c.update, other_writes) || reads_any(c.update, written))
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

  ir::Stmt rewrite(const Candidate& c, int64_t chunk) {
    const ir::For* j = c.j_loop;
    const SourceLoc loc = j->loc;
    const ir::Var& jv = j->var;
    const ScalarType jt = jv->type;
    auto as_type = [&](const ir::Expr& e, ScalarType t) { return e->type == t ? e : ir::Cast::make(t, e, false, loc); };

    ir::Var jc = std::make_shared<ir::VarInfo>(ir::VarInfo{jv->name + "_chunk", jt, loc, false});
    ir::ArrayVar buf = std::make_shared<ir::ArrayInfo>(
        ir::ArrayInfo{c.acc->name + "_buf", ArrayType{c.acc->type.kind, 1, Layout::C}, loc, false});
    const ir::Expr jc_ref = ir::VarRef::make(jc, loc);
    const ir::Expr chunk_end = ir::Binary::make(
        ir::BinaryOp::PyMin, ir::Binary::make(ir::BinaryOp::Add, jc_ref, ir::IntImm::make(chunk, jt, loc), jt, false, loc),
        as_type(j->end, jt), jt, false, loc);
    const ir::Expr slot = ir::Binary::make(ir::BinaryOp::Sub, ir::VarRef::make(jv, loc), jc_ref, jt, false, loc);
    const ir::Expr read_buf = as_type(ir::Load::make(buf, {slot}, false, loc), c.acc->type);
    auto write_buf = [&](const ir::Expr& value) {
      return ir::Store::make(buf, {slot}, as_type(value, c.acc->type.strong()), false, loc);
    };
    auto chunk_loop = [&](ir::Stmt body, ir::LoopSchedule sched) {
      return ir::For::make(jv, jc_ref, chunk_end, ir::IntImm::make(1, jt, loc), std::move(body), std::move(sched), loc);
    };
    ir::LoopSchedule simd;
    simd.kind = ir::LoopKind::Vectorized;

    // The chunks keep the j loop's threads, the loop over the results its
    // vector lanes and reductions.
    const ir::LoopSchedule& js = j->schedule;
    const bool parallel = ir::is_parallel(js.kind);
    ir::LoopSchedule outer_sched;
    if (parallel) {
      outer_sched = js;
      outer_sched.kind = ir::LoopKind::Parallel;
      outer_sched.simd_width = 0;
    }
    ir::LoopSchedule rest_sched;
    if (ir::is_vectorized(js.kind)) {
      rest_sched = js;
      rest_sched.kind = ir::LoopKind::Vectorized;
      rest_sched.num_threads = 0;
      rest_sched.collapse = 1;
    }

    ReplaceVar acc_in_buf(c.acc.get(), read_buf);
    ir::LoopSchedule k_sched;
    const ir::For* k = c.k_loop;
    ir::Stmt update_loop = ir::For::make(
        k->var, k->begin, k->end, k->step, chunk_loop(write_buf(acc_in_buf.mutate(c.update)), simd), k_sched, k->loc);

    std::vector<ir::Stmt> rest = c.declares;
    rest.push_back(ir::Assign::make(c.acc, read_buf, loc));
    rest.insert(rest.end(), c.rest.begin(), c.rest.end());

    std::vector<ir::Stmt> chunk_body;
    const ir::Stmt alloc =
        ir::Allocate::make(buf, {ir::IntImm::make(chunk, ScalarType::i64(), loc)}, ir::FillKind::Uninitialized, nullptr, loc);
    if (parallel) {
      chunk_body.push_back(ir::Declare::make(buf, loc));
      chunk_body.push_back(alloc);
    }
    chunk_body.push_back(chunk_loop(write_buf(c.init), simd));
    chunk_body.push_back(update_loop);
    chunk_body.push_back(chunk_loop(ir::Block::make(rest, loc), rest_sched));
    ir::Stmt chunks = ir::For::make(jc, j->begin, j->end, ir::IntImm::make(chunk, jt, loc), ir::Block::make(chunk_body, loc),
                                    outer_sched, loc);
    if (parallel) return chunks;
    return ir::Block::make({ir::Declare::make(buf, loc), alloc, chunks}, loc);
  }

  std::map<const ir::VarInfo*, std::vector<const ir::Declare*>> declarations_;
};

}  // namespace

void interchange_reductions(ir::Function& function) {
  Interchanger interchanger(function);
  function.body = interchanger.mutate(function.body);
  for (auto& r : interchanger.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
