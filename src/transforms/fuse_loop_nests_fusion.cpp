// Loop fusion: adjacent nests over the same slices fused, and temporaries
// that only one fused nest uses scalarised or shrunk (fuse_loop_nests_impl.h).
#include "transforms/fuse_loop_nests_impl.h"

namespace plait::transforms::fusion {

Expr Fuser::extent(const ir::For* f) {
  CanonicalExtents c(facts_);
  return c.mutate(f->end);
}

bool Fuser::simple_loop(const ir::For* f) {
  auto b = f->begin->as<ir::IntImm>();
  auto s = f->step->as<ir::IntImm>();
  return b && b->value == 0 && s && s->value == 1 && f->schedule.reductions.empty() && f->schedule.num_threads == 0;
}

bool Fuser::same_slice(const ArrayInfo* cls, const ir::For* a, const BodyInfo& ai, const ir::For* b,
                       const BodyInfo& bi) {
  std::optional<size_t> dim;
  auto check = [&](const ir::For* loop, const BodyInfo& info) {
    for (const Access& acc : info.accesses) {
      if (facts_.find(acc.array) != cls) continue;
      std::optional<size_t> here;
      for (size_t d = 0; d < acc.indices.size(); ++d)
        if (is_var(acc.indices[d], loop->var.get())) {
          here = d;
          break;
        }
      if (!here || (dim && *dim != *here)) return false;
      dim = here;
    }
    return true;
  };
  return check(a, ai) && check(b, bi);
}

namespace {

// The largest trip-count bound (le(N)) that the compiler set on the loops
// inside `body`. Nests whose inner loops it sized differently stay apart:
// fused, they would share one team of threads on the GPU (the long rows of a
// sparse matrix ask for a warp where the others take a small team).
int asked_trips(const Stmt& body) {
  struct Scan : ir::IRVisitor {
    int most = 0;
    using IRVisitor::visit;
    void visit(const ir::For* f) override {
      if (f->schedule.sizes_by_compiler) most = std::max(most, f->schedule.most_trips);
      IRVisitor::visit(f);
    }
  } scan;
  scan.visit(body);
  return scan.most;
}

}  // namespace

bool Fuser::can_fuse(const ir::For* a, const ir::For* b) {
  if (!simple_loop(a) || !simple_loop(b)) return false;
  if (asked_trips(a->body) != asked_trips(b->body)) return false;
  if (ir::is_parallel(a->schedule.kind) != ir::is_parallel(b->schedule.kind)) return false;
  if (!same_expr(extent(a), extent(b))) return false;
  BodyInfo ai = inspect(a->body), bi = inspect(b->body);
  if (ai.exits || bi.exits) return false;
  // Scalars: what one loop writes, the other must not carry across
  // iterations.
  analysis::VarUses au = analysis::uses_of(a->body), bu = analysis::uses_of(b->body);
  for (const ir::VarInfo* v : au.writes)
    if ((bu.reads.count(v) || bu.writes.count(v)) && analysis::may_read_before_write(b->body, v)) return false;
  for (const ir::VarInfo* v : bu.writes)
    if (au.reads.count(v) && analysis::may_read_before_write(a->body, v)) return false;
  if (au.reads.count(b->var.get()) || bu.reads.count(a->var.get())) return false;
  // Arrays: dependences only within one iteration.
  ArraySet aw, ar, bw, br;
  for (const Access& x : ai.accesses) (x.write ? aw : ar).insert(facts_.find(x.array));
  for (const Access& x : bi.accesses) (x.write ? bw : br).insert(facts_.find(x.array));
  for (const ArrayInfo* bound : ai.bound)
    if (bw.count(facts_.find(bound)) || br.count(facts_.find(bound))) return false;
  for (const ArrayInfo* bound : bi.bound)
    if (aw.count(facts_.find(bound)) || ar.count(facts_.find(bound))) return false;
  ArraySet shared;
  for (const ArrayInfo* c : aw)
    if (br.count(c) || bw.count(c)) shared.insert(c);
  for (const ArrayInfo* c : bw)
    if (ar.count(c)) shared.insert(c);
  for (const ArrayInfo* c : shared)
    if (!same_slice(c, a, ai, b, bi)) return false;
  return true;
}

bool Fuser::movable(const Stmt& s, const ir::For* first) {
  BodyInfo info = inspect(first->body);
  analysis::VarUses fu = analysis::uses_of(first->body);
  ArraySet touched;
  for (const Access& x : info.accesses) touched.insert(facts_.find(x.array));
  for (const ArrayInfo* bnd : info.bound) touched.insert(facts_.find(bnd));
  analysis::VarUses su = analysis::uses_of(s);
  for (const ir::VarInfo* v : su.reads)
    if (fu.writes.count(v)) return false;
  switch (s->kind) {
    case ir::NodeKind::Allocate:
      return !touched.count(facts_.find(s->as<ir::Allocate>()->array.get()));
    case ir::NodeKind::ArrayBind: {
      auto b = s->as<ir::ArrayBind>();
      // The first loop must not see the new binding of dst.
      for (const Access& x : info.accesses)
        if (x.array == b->dst.get()) return false;
      return !info.bound.count(b->dst.get());
    }
    case ir::NodeKind::Assert: {
      // Asserts read extents, which no loop changes, and scalars.
      return true;
    }
    case ir::NodeKind::Assign: {
      // A scalar the first loop does not use, computed from no array (the
      // start of a reduction, `acc = 0.0`).
      const ir::VarInfo* v = s->as<ir::Assign>()->var.get();
      return su.arrays.empty() && !fu.reads.count(v) && !fu.writes.count(v) && !su.reads.count(first->var.get()) &&
             v != first->var.get();
    }
    default:
      return false;
  }
}

void Fuser::fuse_block(std::vector<Stmt>& stmts) {
  for (size_t i = 0; i < stmts.size(); ++i) {
    const ir::For* first = stmts[i]->as<ir::For>();
    if (!first) continue;
    std::vector<int> lines = {first->loc.line};
    while (true) {
      size_t j = i + 1;
      std::vector<Stmt> moved;
      while (j < stmts.size() && !stmts[j]->as<ir::For>() && movable(stmts[j], first)) moved.push_back(stmts[j++]);
      if (j >= stmts.size()) break;
      const ir::For* second = stmts[j]->as<ir::For>();
      if (!second || !can_fuse(first, second)) break;
      RenameVar rename(second->var.get(), first->var);
      Stmt renamed = rename.mutate(second->body);
      std::vector<Stmt> body =
          first->body->as<ir::Block>() ? first->body->as<ir::Block>()->stmts : std::vector<Stmt>{first->body};
      if (auto b = renamed->as<ir::Block>())
        body.insert(body.end(), b->stmts.begin(), b->stmts.end());
      else
        body.push_back(renamed);
      Stmt merged_body = ir::Block::make(body, first->body->loc);
      ir::LoopSchedule sched = first->schedule;
      if (inspect(merged_body).has_loop && ir::is_vectorized(sched.kind))
        sched.kind = ir::is_parallel(sched.kind) ? ir::LoopKind::Parallel : ir::LoopKind::Serial;
      Stmt fused = ir::For::make(first->var, first->begin, first->end, first->step, merged_body, sched, first->loc);
      lines.push_back(second->loc.line);
      // The second loop's header is gone: its extents no longer mention anything.
      for (const auto& e : {second->begin, second->end, second->step})
        for (const auto& [a, n] : count_mentions(e)) total_mentions_[a] -= n;
      std::vector<Stmt> out(stmts.begin(), stmts.begin() + static_cast<long>(i));
      out.insert(out.end(), moved.begin(), moved.end());
      out.push_back(fused);
      out.insert(out.end(), stmts.begin() + static_cast<long>(j) + 1, stmts.end());
      i += moved.size();
      stmts = out;
      first = stmts[i]->as<ir::For>();
    }
    if (lines.size() > 1) {
      std::string text = "fused the loop nests of lines";
      for (size_t k = 0; k < lines.size(); ++k) text += (k ? ", " : " ") + std::to_string(lines[k]);
      remarks.push_back(
          {first->loc, "fuse_loop_nests", text + " into one loop over '" + ir::to_string(first->end) + "'"});
      scalarize_temporaries(stmts, i);
      shrink_temporaries(stmts, i);
      fuse_inside(stmts[i]);
    }
  }
}

void Fuser::fuse_inside(Stmt& loop_stmt) {
  auto loop = loop_stmt->as<ir::For>();
  auto block = loop->body->as<ir::Block>();
  if (!block || !inspect(loop->body).has_loop) return;
  std::vector<Stmt> body = block->stmts;
  fuse_block(body);
  loop_stmt = ir::For::make(loop->var, loop->begin, loop->end, loop->step, ir::Block::make(body, block->loc),
                            loop->schedule, loop->loc);
}

std::optional<std::pair<std::vector<ir::ArrayVar>, std::vector<size_t>>> Fuser::local_temporary(
    const std::vector<Stmt>& stmts, size_t k, size_t at, const BodyInfo& info) {
  auto alloc = stmts[k]->as<ir::Allocate>();
  if (!alloc || facts_.params.count(facts_.find(alloc->array.get()))) return std::nullopt;
  const ArrayInfo* cls = facts_.find(alloc->array.get());
  std::vector<size_t> binds;
  bool ok = facts_.binds[alloc->array.get()] == 1;
  std::vector<ir::ArrayVar> members = {alloc->array};
  for (size_t m = 0; m < stmts.size(); ++m) {
    auto b = stmts[m]->as<ir::ArrayBind>();
    if (!b || facts_.find(b->dst.get()) != cls) continue;
    if (m > at || b->src != alloc->array || facts_.binds[b->dst.get()] != 1) ok = false;
    binds.push_back(m);
    members.push_back(b->dst);
  }
  // Every mention of the class is the allocation, the binds or inside
  // the loop: it does not escape.
  ArrayMap<int> here = count_mentions(stmts[at]);
  for (const auto& [a, n] : count_mentions(stmts[k])) here[a] += n;
  for (size_t m : binds)
    for (const auto& [a, n] : count_mentions(stmts[m])) here[a] += n;
  for (const auto& m : members) ok = ok && here[m.get()] == total_mentions_[m.get()] && !info.bound.count(m.get());
  if (!ok) return std::nullopt;
  return std::make_pair(members, binds);
}

void Fuser::replace_loop(std::vector<Stmt>& stmts, size_t k, const std::vector<size_t>& binds, size_t& at, Stmt loop) {
  std::set<size_t> drop(binds.begin(), binds.end());
  drop.insert(k);
  std::vector<Stmt> out;
  size_t new_at = 0;
  for (size_t m = 0; m < stmts.size(); ++m) {
    if (drop.count(m)) continue;
    if (m == at) new_at = out.size();
    out.push_back(m == at ? loop : stmts[m]);
  }
  stmts = out;
  at = new_at;
}

void Fuser::scalarize_temporaries(std::vector<Stmt>& stmts, size_t& at) {
  for (size_t k = 0; k < at; ++k) {
    const ir::For* loop = stmts[at]->as<ir::For>();
    auto block = loop->body->as<ir::Block>();
    auto alloc = stmts[k]->as<ir::Allocate>();
    if (!block || !alloc) continue;
    bool ok = true;
    for (size_t d = 1; d < alloc->shape.size(); ++d) {
      auto c = alloc->shape[d]->as<ir::IntImm>();
      ok = ok && c && c->value == 1;
    }
    auto temp = ok ? local_temporary(stmts, k, at, inspect(loop->body)) : std::nullopt;
    if (!temp) continue;
    ArraySet members;
    for (const auto& m : temp->first) members.insert(m.get());
    // Bounds that read a member's extent (`range(tmp.shape[0])`) would
    // lose it with the allocation.
    for (const Expr& bound : {loop->begin, loop->end, loop->step})
      for (const ArrayInfo* a : analysis::uses_of(bound).arrays) ok = ok && !members.count(a);
    if (!ok) continue;
    auto at_own_element = [&](const std::vector<Expr>& idx) {
      bool own = !idx.empty() && is_var(idx[0], loop->var.get());
      for (size_t d = 1; d < idx.size(); ++d) {
        auto c = idx[d]->as<ir::IntImm>();
        own = own && c && c->value == 0;
      }
      return own;
    };
    std::optional<size_t> store_at;
    for (size_t p = 0; ok && p < block->stmts.size(); ++p) {
      auto store = block->stmts[p]->as<ir::Store>();
      bool is_store = store && members.count(store->array.get());
      for (const Access& x : inspect(block->stmts[p]).accesses) {
        if (!members.count(x.array)) continue;
        if (!at_own_element(x.indices)) ok = false;
        // The one write is the statement itself; reads come after it.
        if (x.write)
          ok = ok && is_store && !store_at;
        else
          ok = ok && store_at && !is_store;
      }
      if (is_store) store_at = p;
    }
    if (!ok || !store_at) continue;
    auto elem = std::make_shared<ir::VarInfo>();
    elem->name = temp->first.back()->name;
    elem->type = ScalarType{alloc->array->type.dtype, false};
    elem->loc = alloc->loc;
    struct ToScalar : ir::IRMutator {
      ArraySet* members;
      ir::Var elem;
      Expr extent;
      Expr visit(const ir::Load* l, const Expr& self) override {
        if (!members->count(l->array.get())) return IRMutator::visit(l, self);
        return ir::VarRef::make(elem, l->loc);
      }
      Stmt visit(const ir::Store* s, const Stmt& self) override {
        if (!members->count(s->array.get())) return IRMutator::visit(s, self);
        return ir::Assign::make(elem, mutate(s->value), s->loc);
      }
      Expr visit(const ir::ArrayDim* d, const Expr& self) override {
        if (!members->count(d->array.get())) return self;
        return d->dim == 0 ? extent : ir::IntImm::make(1, ScalarType::py_int(), d->loc);
      }
    } to_scalar;
    to_scalar.members = &members;
    to_scalar.elem = elem;
    to_scalar.extent = loop->end;
    Stmt new_loop = ir::For::make(loop->var, loop->begin, loop->end, loop->step, to_scalar.mutate(loop->body),
                                  loop->schedule, loop->loc);
    remarks.push_back({alloc->loc, "fuse_loop_nests",
                       "temporary '" + temp->first.back()->name +
                           "' holds one element per iteration of the fused "
                           "loop, written before it is read: a scalar, not allocated"});
    replace_loop(stmts, k, temp->second, at, new_loop);
    k = static_cast<size_t>(-1);  // start over: indices moved
  }
}

void Fuser::shrink_temporaries(std::vector<Stmt>& stmts, size_t& at) {
  const ir::For* loop = stmts[at]->as<ir::For>();
  BodyInfo info = inspect(loop->body);
  for (size_t k = 0; k < at; ++k) {
    auto alloc = stmts[k]->as<ir::Allocate>();
    // A 1-D temporary would shrink to one element allocated per iteration,
    // which costs more than it saves; a vector loop cannot allocate.
    if (!alloc || alloc->array->type.layout == Layout::F || alloc->array->type.ndim < 2 ||
        ir::is_vectorized(loop->schedule.kind) || facts_.params.count(facts_.find(alloc->array.get())))
      continue;
    auto temp = local_temporary(stmts, k, at, info);
    if (!temp) continue;
    const std::vector<ir::ArrayVar>& members = temp->first;
    const std::vector<size_t>& binds = temp->second;
    const ArrayInfo* cls = facts_.find(alloc->array.get());
    bool ok = true;
    for (const Access& x : info.accesses)
      if (facts_.find(x.array) == cls) ok = ok && !x.indices.empty() && is_var(x.indices[0], loop->var.get());
    if (!ok) continue;
    // Rebuild each member one dimension smaller (a 1-D temporary keeps one
    // element) and rewrite the loop body.
    ArrayMap<ir::ArrayVar> smaller;
    for (const auto& m : members) {
      auto s = std::make_shared<ArrayInfo>(*m);
      s->type.ndim = std::max(1, m->type.ndim - 1);
      smaller[m.get()] = s;
      per_iteration_.insert(s.get());
      per_iteration_owners_.push_back(s);
    }
    const int old_ndim = alloc->array->type.ndim;
    struct Shrink : ir::IRMutator {
      ArrayMap<ir::ArrayVar>* smaller;
      Expr loop_extent;
      int old_ndim;
      std::vector<Expr> drop_first(const std::vector<Expr>& idx) {
        if (old_ndim == 1) return {ir::IntImm::make(0, ScalarType::py_int())};
        bool changed = false;
        std::vector<Expr> rest = mutate_exprs(std::vector<Expr>(idx.begin() + 1, idx.end()), &changed);
        return rest;
      }
      Expr visit(const ir::Load* l, const Expr& self) override {
        auto it = smaller->find(l->array.get());
        if (it == smaller->end()) return IRMutator::visit(l, self);
        return ir::Load::make(it->second, drop_first(l->indices), l->checked, l->loc);
      }
      Stmt visit(const ir::Store* s, const Stmt& self) override {
        auto it = smaller->find(s->array.get());
        if (it == smaller->end()) return IRMutator::visit(s, self);
        return ir::Store::make(it->second, drop_first(s->indices), mutate(s->value), s->checked, s->loc);
      }
      Stmt visit(const ir::AtomicUpdate* s, const Stmt& self) override {
        auto it = smaller->find(s->array.get());
        if (it == smaller->end()) return IRMutator::visit(s, self);
        return ir::AtomicUpdate::make(it->second, drop_first(s->indices), s->op, mutate(s->value), s->checked, s->loc);
      }
      Expr visit(const ir::ArrayDim* d, const Expr& self) override {
        auto it = smaller->find(d->array.get());
        if (it == smaller->end()) return self;
        if (d->dim == 0) return loop_extent;
        return ir::ArrayDim::make(it->second, d->dim - 1, d->loc);
      }
    } shrink;
    shrink.smaller = &smaller;
    shrink.loop_extent = loop->end;
    shrink.old_ndim = old_ndim;
    std::vector<Expr> shape = old_ndim == 1 ? std::vector<Expr>{ir::IntImm::make(1, ScalarType::py_int(), alloc->loc)}
                                            : std::vector<Expr>(alloc->shape.begin() + 1, alloc->shape.end());
    std::vector<Stmt> prologue = {
        ir::Allocate::make(smaller.at(alloc->array.get()), shape, alloc->fill, alloc->fill_value, alloc->loc)};
    for (size_t m : binds) {
      auto b = stmts[m]->as<ir::ArrayBind>();
      prologue.push_back(ir::ArrayBind::make(smaller.at(b->dst.get()), smaller.at(b->src.get()), b->loc));
    }
    Stmt new_body = shrink.mutate(loop->body);
    std::vector<Stmt> body = prologue;
    for (const auto& s : new_body->as<ir::Block>()->stmts) body.push_back(s);
    Stmt new_loop = ir::For::make(loop->var, loop->begin, loop->end, loop->step, ir::Block::make(body, loop->body->loc),
                                  loop->schedule, loop->loc);
    remarks.push_back({alloc->loc, "fuse_loop_nests",
                       "temporary '" + members.back()->name +
                           "' needs one slice per iteration of the fused loop: "
                           "allocated per iteration without its first dimension"});
    // The smaller arrays are bound once, in the loop's body, where the
    // nests may fuse again (fuse_inside): record their extents and
    // mentions as gather_facts does for the function's arrays.
    ArrayMap<int> mentions = count_mentions(new_loop);
    bool stable_shape = true;
    for (const auto& e : shape) stable_shape = stable_shape && stable(e, facts_);
    for (const auto& [old, small] : smaller) {
      facts_.binds[small.get()] = 1;
      facts_.unite(small.get(), smaller.at(alloc->array.get()).get());
      total_mentions_[small.get()] = mentions[small.get()];
      if (stable_shape) facts_.shape[small.get()] = shape;
    }
    replace_loop(stmts, k, binds, at, new_loop);
    loop = stmts[at]->as<ir::For>();
    info = inspect(loop->body);
    k = static_cast<size_t>(-1);  // start over: indices moved
  }
}

}  // namespace plait::transforms::fusion
