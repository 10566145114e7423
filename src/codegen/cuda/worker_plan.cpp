// Planning of team-mapped workers for the CUDA back end: which inner loops
// are spread over a team of threads, where each other statement runs, and
// where barriers go (see worker_plan.h).
#include "codegen/cuda/worker_plan.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::codegen::cuda {

using namespace ir;

namespace {

using VarSet = std::set<const VarInfo*>;

std::vector<Stmt> statements(const Stmt& body) {
  if (!body) return {};
  if (const Block* b = body->as<Block>()) return b->stmts;
  return {body};
}

// The dimension of an array whose stride is 1, or -1 when the layout does
// not say.
int unit_dim(const ArrayType& t) {
  if (t.layout == Layout::C) return t.ndim - 1;
  if (t.layout == Layout::F) return 0;
  return -1;
}

class VarReads : public IRVisitor {
 public:
  VarSet vars;
  using IRVisitor::visit;

 protected:
  void visit(const VarRef* n) override { vars.insert(n->var.get()); }
};

bool uses_any(const Expr& e, const VarSet& vars) {
  VarReads reads;
  reads.visit(e);
  for (const VarInfo* v : reads.vars)
    if (vars.count(v)) return true;
  return false;
}

// Scalars a subtree assigns (loop variables included).
class ScalarWrites : public IRVisitor {
 public:
  VarSet vars;
  using IRVisitor::visit;

 protected:
  void visit(const Assign* n) override {
    vars.insert(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    vars.insert(n->var.get());
    IRVisitor::visit(n);
  }
};

VarSet scalar_writes(const Stmt& s) {
  ScalarWrites w;
  w.visit(s);
  return w.vars;
}

// Scalars a subtree reads or assigns.
class ScalarUses : public ScalarWrites {
 public:
  using ScalarWrites::visit;

 protected:
  void visit(const VarRef* n) override { vars.insert(n->var.get()); }
};

// `e` is v, or v plus or minus terms that stay fixed while v and the
// `varying` scalars change: distinct values of v give distinct values of e.
// With `wrapped`, also Python's negative-index form `k + n if k < 0 else k`
// of such an expression: contiguous in v, but two values of v (-1 and n - 1)
// can reach one element, so it proves no independence.
bool steps_with(const Expr& e, const VarInfo* v, const VarSet& varying, bool wrapped = false) {
  if (const VarRef* r = e->as<VarRef>()) return r->var.get() == v;
  if (const Cast* c = e->as<Cast>())
    return c->type.is_int() && c->value->type.is_int() && steps_with(c->value, v, varying, wrapped);
  if (const Select* s = e->as<Select>())
    return wrapped && steps_with(s->t, v, varying, wrapped) && steps_with(s->f, v, varying, wrapped);
  const Binary* b = e->as<Binary>();
  if (!b || b->type.is_float()) return false;
  VarSet moving = varying;
  moving.insert(v);
  auto fixed = [&](const Expr& x) { return !uses_any(x, moving); };
  if (b->op == BinaryOp::Add)
    return (steps_with(b->a, v, varying, wrapped) && fixed(b->b)) ||
           (steps_with(b->b, v, varying, wrapped) && fixed(b->a));
  if (b->op == BinaryOp::Sub) return steps_with(b->a, v, varying, wrapped) && fixed(b->b);
  return false;
}

struct RawAccess {
  const ArrayVar* array;
  const std::vector<Expr>* indices;
  bool write;
};

class AccessCollector : public IRVisitor {
 public:
  std::vector<RawAccess> accesses;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    accesses.push_back({&n->array, &n->indices, false});
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    accesses.push_back({&n->array, &n->indices, true});
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    accesses.push_back({&n->array, &n->indices, true});
    IRVisitor::visit(n);
  }
};

std::vector<RawAccess> accesses_in(const Stmt& s) {
  AccessCollector c;
  c.visit(s);
  return c.accesses;
}

std::string indices_text(const std::vector<Expr>& indices) {
  std::string out;
  for (size_t k = 0; k < indices.size(); ++k) out += (k ? ", " : "") + to_string(indices[k]);
  return out;
}

// What keeps a statement from running in one lane of a team, or a serial
// loop from being spread: leaving early, assertions, atomics, array binding.
class Constructs : public IRVisitor {
 public:
  bool leaves = false;       // break/continue/return at the statement's own level
  bool asserts = false;      // an assertion at the statement's own level (it leaves the worker)
  bool binds = false;        // Allocate, ArrayBind, an array Declare
  bool atomics = false;
  bool loops_while = false;  // a while loop
  bool jumps = false;        // break/continue/return anywhere
  using IRVisitor::visit;

 protected:
  void visit(const Break*) override {
    jumps = true;
    if (depth_ == 0) leaves = true;
  }
  void visit(const Continue*) override {
    jumps = true;
    if (depth_ == 0) leaves = true;
  }
  void visit(const Return* n) override {
    jumps = leaves = true;
    IRVisitor::visit(n);
  }
  void visit(const Assert* n) override {
    if (depth_ == 0) asserts = true;
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    atomics = true;
    IRVisitor::visit(n);
  }
  void visit(const Allocate* n) override {
    binds = true;
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind*) override { binds = true; }
  void visit(const Declare* n) override { binds = binds || n->array != nullptr; }
  void visit(const For* n) override {
    ++depth_;
    IRVisitor::visit(n);
    --depth_;
  }
  void visit(const While* n) override {
    loops_while = true;
    ++depth_;
    IRVisitor::visit(n);
    --depth_;
  }

 private:
  int depth_ = 0;
};

Constructs constructs_of(const Stmt& s) {
  Constructs c;
  c.visit(s);
  return c;
}

bool binds_arrays_alone(const Stmt& s) {
  if (const Declare* d = s->as<Declare>()) return d->array != nullptr;
  return s->kind == NodeKind::Allocate || s->kind == NodeKind::ArrayBind;
}

// Every scalar of `written` that a statement list reads is assigned earlier
// in the same iteration (so no value flows from one iteration to the next).
// Assignments inside branches and inner loops count only there.
bool defined_before_use(const std::vector<Stmt>& stmts, VarSet defined, const VarSet& written) {
  auto ok = [&](const Expr& e) {
    VarReads reads;
    reads.visit(e);
    for (const VarInfo* v : reads.vars)
      if (written.count(v) && !defined.count(v)) return false;
    return true;
  };
  for (const Stmt& s : stmts) {
    switch (s->kind) {
      case NodeKind::Declare: break;
      case NodeKind::Assign: {
        const Assign* a = s->as<Assign>();
        if (!ok(a->value)) return false;
        defined.insert(a->var.get());
        break;
      }
      case NodeKind::Store: {
        const Store* st = s->as<Store>();
        for (const Expr& i : st->indices)
          if (!ok(i)) return false;
        if (!ok(st->value)) return false;
        break;
      }
      case NodeKind::If: {
        const If* i = s->as<If>();
        if (!ok(i->cond) || !defined_before_use(statements(i->then_case), defined, written) ||
            !defined_before_use(statements(i->else_case), defined, written))
          return false;
        break;
      }
      case NodeKind::For: {
        const For* f = s->as<For>();
        if (!ok(f->begin) || !ok(f->end) || !ok(f->step)) return false;
        VarSet inner = defined;
        inner.insert(f->var.get());
        if (!defined_before_use(statements(f->body), inner, written)) return false;
        break;
      }
      case NodeKind::Block:
        if (!defined_before_use(statements(s), defined, written)) return false;
        break;
      default: return false;
    }
  }
  return true;
}

// A serial loop whose iterations touch disjoint data: no early exit, no
// atomics, no value carried between iterations through a scalar, and each
// array it writes is accessed at one index that moves with the loop
// variable. `why` says what failed.
bool independent_iterations(const For* f, std::string* why) {
  const Constructs c = constructs_of(f->body);
  if (c.jumps || c.asserts || c.atomics || c.binds || c.loops_while) {
    *why = "it may leave early, assert, update atomically or bind arrays";
    return false;
  }
  VarSet written = scalar_writes(f->body);
  if (!defined_before_use(statements(f->body), {}, written)) {
    *why = "a scalar carries a value from one iteration to the next";
    return false;
  }
  const std::vector<RawAccess> accesses = accesses_in(f->body);
  for (const RawAccess& w : accesses) {
    if (!w.write) continue;
    const std::string at = indices_text(*w.indices);
    bool moves = false;
    for (const Expr& i : *w.indices) moves = moves || steps_with(i, f->var.get(), written);
    bool same = true;
    for (const RawAccess& a : accesses)
      if (a.array->get() == w.array->get() && indices_text(*a.indices) != at) same = false;
    if (!moves || !same) {
      *why = "`" + (*w.array)->name + "` is written where other iterations may access it";
      return false;
    }
  }
  return true;
}

const char* loop_word(LoopKind k) {
  switch (k) {
    case LoopKind::Serial: return "serial";
    case LoopKind::Vectorized: return "simd";
    default: return "parallel";
  }
}

std::string describe(const For* f) {
  return std::string(loop_word(f->schedule.kind)) + " loop over `" + f->var->name + "` (line " +
         std::to_string(f->loc.line) + ")";
}

// Replaces the identifier `name` in printed IR text.
std::string rename(const std::string& text, const std::string& name, const std::string& to) {
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  std::string out;
  size_t k = 0;
  while (k < text.size()) {
    if (text.compare(k, name.size(), name) == 0 && (k == 0 || !ident(text[k - 1])) &&
        (k + name.size() == text.size() || !ident(text[k + name.size()]))) {
      out += to;
      k += name.size();
    } else {
      out += text[k++];
    }
  }
  return out;
}

}  // namespace

bool serial_loop_independent(const For* loop) {
  std::string why;
  return independent_iterations(loop, &why);
}

bool straight_line_worker(const Stmt& body, std::string* why) {
  std::vector<Stmt> pending = statements(body);
  for (size_t k = 0; k < pending.size(); ++k) {
    const Stmt& s = pending[k];
    if (const Block* b = s->as<Block>()) {
      pending.insert(pending.end(), b->stmts.begin(), b->stmts.end());
      continue;
    }
    const Declare* d = s->as<Declare>();
    const bool scalar_declare = d && d->var && !d->array;
    if (!scalar_declare && s->kind != NodeKind::Assign && s->kind != NodeKind::Store) {
      *why = "line " + std::to_string(s->loc.line) + " is not a scalar assignment or an element store";
      return false;
    }
  }
  if (!defined_before_use(statements(body), {}, scalar_writes(body))) {
    *why = "a scalar may be read before the iteration assigns it";
    return false;
  }
  return true;
}

namespace {

// Whether the indices of an access of `array` are `var` plus fixed terms in
// the unit-stride dimension and fixed in the others.
bool contiguous_in(const ArrayVar& array, const std::vector<Expr>& indices, const VarInfo* var,
                   const VarSet& varying) {
  const int d = unit_dim(array->type);
  if (d < 0) return false;
  // Fixed terms must not read elements, which the body may write.
  for (const Expr& e : indices) {
    AccessCollector reads;
    reads.visit(e);
    if (!reads.accesses.empty()) return false;
  }
  VarSet moving = varying;
  moving.insert(var);
  for (size_t k = 0; k < indices.size(); ++k) {
    if (static_cast<int>(k) == d ? !steps_with(indices[k], var, varying) : uses_any(indices[k], moving)) return false;
  }
  return true;
}

class ContiguousCollector : public IRVisitor {
 public:
  ContiguousCollector(const VarInfo* var, VarSet varying) : var_(var), varying_(std::move(varying)) {}
  ContiguousAccesses found;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (conditional_ == 0 && !n->checked && contiguous_in(n->array, n->indices, var_, varying_)) found.loads.push_back(n);
    // A checked load computes its indices inside its own check.
    if (n->checked) ++conditional_;
    IRVisitor::visit(n);
    if (n->checked) --conditional_;
  }
  void visit(const Store* n) override {
    if (!n->checked && contiguous_in(n->array, n->indices, var_, varying_)) found.stores.push_back(n);
    IRVisitor::visit(n);
  }
  void visit(const Select* n) override {
    visit(n->cond);
    ++conditional_;
    visit(n->t);
    visit(n->f);
    --conditional_;
  }
  void visit(const Logical* n) override {
    visit(n->a);
    ++conditional_;
    visit(n->b);
    --conditional_;
  }

 private:
  const VarInfo* var_;
  VarSet varying_;
  int conditional_ = 0;
};

}  // namespace

bool ContiguousAccesses::has(const Load* l) const { return std::find(loads.begin(), loads.end(), l) != loads.end(); }

bool ContiguousAccesses::has(const Store* s) const {
  return std::find(stores.begin(), stores.end(), s) != stores.end();
}

ContiguousAccesses contiguous_accesses(const Stmt& body, const VarInfo* var) {
  ContiguousCollector collector(var, scalar_writes(body));
  collector.visit(body);
  return collector.found;
}

WorkerPlan plan_worker(const Stmt& body, const VarSet& worker_vars, const VarSet& outside) {
  WorkerPlan plan;
  plan.stmts = statements(body);
  const size_t n = plan.stmts.size();

  // Inner loops whose iterations may be spread over a team.
  std::vector<bool> spread(n, false);
  for (size_t k = 0; k < n; ++k) {
    const For* f = plan.stmts[k]->as<For>();
    if (!f) continue;
    std::string why;
    bool ok = f->schedule.array_reductions.empty();
    if (ok && f->schedule.kind == LoopKind::Serial) ok = independent_iterations(f, &why);
    if (ok) {
      // Scalars the loop assigns differ between threads after it: nothing
      // else may read them.
      VarSet elsewhere = outside;
      elsewhere.insert(worker_vars.begin(), worker_vars.end());
      for (size_t j = 0; j < n; ++j) {
        if (j == k) continue;
        ScalarUses uses;
        uses.visit(plan.stmts[j]);
        elsewhere.insert(uses.vars.begin(), uses.vars.end());
      }
      VarSet own{f->var.get()};
      for (const Reduction& r : f->schedule.reductions) own.insert(r.var.get());
      for (const VarInfo* v : scalar_writes(f->body)) {
        if (!own.count(v) && elsewhere.count(v)) {
          ok = false;
          why = "it assigns `" + v->name + "`, which is used outside it";
          break;
        }
      }
    }
    spread[k] = ok;
    if (!ok) plan.notes.push_back({f->loc, describe(f) + " runs serially in its thread: " + why});
  }

  // The cost rule: count the accesses in those loops that are contiguous
  // along the inner loop variable and along a worker variable.
  int along = 0, across = 0;
  for (size_t k = 0; k < n; ++k) {
    if (!spread[k]) continue;
    const For* f = plan.stmts[k]->as<For>();
    const VarSet inner = scalar_writes(f->body);
    for (const RawAccess& a : accesses_in(f->body)) {
      const int d = unit_dim((*a.array)->type);
      if (d < 0) continue;
      const Expr& i = (*a.indices)[static_cast<size_t>(d)];
      if (steps_with(i, f->var.get(), inner, true)) {
        ++along;
        continue;
      }
      VarSet moving = inner;
      moving.insert(f->var.get());
      for (const VarInfo* w : worker_vars) {
        if (steps_with(i, w, moving, true)) {
          ++across;
          break;
        }
      }
    }
  }
  bool candidates = false;
  for (bool s : spread) candidates = candidates || s;
  if (!candidates) return plan;
  const std::string counts = std::to_string(along) + " contiguous along the inner loops, " + std::to_string(across) +
                             " across iterations of the parallel loop";
  if (along <= across) {
    for (size_t k = 0; k < n; ++k)
      if (spread[k])
        plan.notes.push_back({plan.stmts[k]->loc, describe(plan.stmts[k]->as<For>()) +
                                                      " runs serially in its thread: one thread per parallel "
                                                      "iteration keeps more accesses coalesced (" + counts + ")"});
    return plan;
  }

  // Where the other statements run; some cannot run in one lane.
  plan.placement.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const Stmt& s = plan.stmts[k];
    if (spread[k]) {
      plan.placement[k] = Placement::Spread;
      continue;
    }
    const Constructs c = constructs_of(s);
    bool writes_arrays = false;
    for (const RawAccess& a : accesses_in(s)) writes_arrays = writes_arrays || a.write;
    // An array declaration, allocation or binding of the body itself sets
    // pointers and extents that every thread of the team keeps (the
    // allocation's fill is spread over the team).
    if (binds_arrays_alone(s)) {
      plan.placement[k] = Placement::AllThreads;
      continue;
    }
    if (c.binds || (writes_arrays && (c.leaves || c.asserts))) {
      plan.placement.clear();
      plan.notes.push_back({s->loc, "the parallel loop stays one thread per iteration: the statement at line " +
                                        std::to_string(s->loc.line) +
                                        (c.binds ? " binds arrays" : " writes arrays and may leave the iteration")});
      return plan;
    }
    plan.placement[k] = writes_arrays ? Placement::FirstThread : Placement::AllThreads;
  }
  plan.team = true;
  for (size_t k = 0; k < n; ++k) {
    if (plan.placement[k] != Placement::Spread) continue;
    const For* f = plan.stmts[k]->as<For>();
    std::string text = describe(f) + ": its iterations are spread over the threads of the team (" + counts + ")";
    for (const Reduction& r : f->schedule.reductions)
      text += "; " + std::string(reduce_op_name(r.op)) + "-reduction of `" + r.var->name +
              "` combined by warp shuffles and shared memory, the result broadcast to every thread";
    plan.notes.push_back({f->loc, text});
  }
  return plan;
}

std::vector<ArrayAccess> array_accesses(const Stmt& stmt, Placement placement, const VarSet& worker_written) {
  std::vector<ArrayAccess> out;
  std::string space;
  const For* f = placement == Placement::Spread ? stmt->as<For>() : nullptr;
  if (f) {
    space = to_string(f->begin) + ":" + to_string(f->end) + ":" + to_string(f->step);
    // A bound that the worker body computes may change between two loops.
    if (uses_any(f->begin, worker_written) || uses_any(f->end, worker_written) || uses_any(f->step, worker_written))
      space.append(" #").append(std::to_string(reinterpret_cast<uintptr_t>(f)));
  }
  // A filled allocation writes every element, spread over the team: any
  // later access needs a barrier.
  if (const Allocate* al = stmt->as<Allocate>(); al && al->fill != FillKind::Uninitialized)
    out.push_back({al->array.get(), true, Placement::Spread,
                   "fill #" + std::to_string(reinterpret_cast<uintptr_t>(al))});
  for (const RawAccess& a : accesses_in(stmt)) {
    ArrayAccess access{a.array->get(), a.write, placement, ""};
    if (f) access.where.append(space).append(" | ").append(rename(indices_text(*a.indices), f->var->name, "@"));
    out.push_back(access);
  }
  return out;
}

bool needs_barrier(const std::vector<ArrayAccess>& earlier, const std::vector<ArrayAccess>& next, std::string* why) {
  for (const ArrayAccess& a : next) {
    for (const ArrayAccess& p : earlier) {
      if (a.array != p.array || !(a.write || p.write)) continue;
      const bool same_thread = a.placement == p.placement &&
                               (a.placement == Placement::FirstThread ||
                                (a.placement == Placement::Spread && a.where == p.where));
      if (same_thread) continue;
      *why = a.array->name;
      return true;
    }
  }
  return false;
}

}  // namespace plait::codegen::cuda
