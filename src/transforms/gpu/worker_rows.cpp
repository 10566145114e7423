// Worker planning: the rows and values a team worker keeps in registers
// across its loops (worker_plan.h).
#include "transforms/gpu/worker_plan_support.h"

namespace plait::transforms::gpu {

using namespace ir;
using namespace planning;

std::vector<CachedRow> plan_cached_rows(const WorkerPlan& plan, const VarSet& worker_written) {
  if (!plan.team) return {};
  const BodyArrays arrays = body_arrays(plan.stmts);
  CanonicalExtents canonical(arrays);
  struct Candidate {
    CachedRow row;
    std::string where;  // iteration space and index, the loop variable renamed
    const std::vector<Expr>* indices = nullptr;
    const Load* first_load = nullptr;  // in the first loop that accesses the array
    const VarInfo* var = nullptr;      // of the loop of `indices`
    bool writes = false, checked = false, refused = false;
    bool outside = false;  // accessed outside the spread loops (allowed for reads when nothing writes it)
  };
  ArrayMap<Candidate> found;  // by array
  std::vector<const ArrayInfo*> order;
  for (size_t k = 0; k < plan.stmts.size(); ++k) {
    const Stmt& s = plan.stmts[k];
    const For* f = plan.placement[k] == Placement::Spread ? s->as<For>() : nullptr;
    std::string space;
    bool stable = f != nullptr;
    std::array<Expr, 3> bounds;
    if (f) {
      bounds = {canonical.mutate(f->begin), canonical.mutate(f->end), canonical.mutate(f->step)};
      for (const Expr& c : bounds) {
        stable = stable && !uses_any(c, worker_written);
        space += to_string(c) + ":";
      }
    }
    FirstLoads loads;
    if (f) loads.visit(s);
    // A filled allocation writes every element, spread over the team.
    if (const Allocate* al = s->as<Allocate>(); al && al->fill != FillKind::Uninitialized) {
      const ArrayInfo* a = arrays.of(al->array.get());
      if (!found.count(a)) order.push_back(a);
      found[a].refused = true;
    }
    for (const RawAccess& access : accesses_in(s)) {
      const ArrayInfo* a = arrays.of(access.array->get());
      auto [it, fresh] = found.try_emplace(a);
      Candidate& c = it->second;
      if (fresh) {
        order.push_back(a);
        c.row.array = access.array->get();
      }
      c.row.names.insert(access.array->get());
      c.writes = c.writes || access.write;
      if (!f) {
        c.outside = true;
        continue;
      }
      if (!stable || arrays.unsafe.count(a)) {
        c.refused = true;
        continue;
      }
      // The index may read only the loop variable and values fixed in the worker.
      bool fixed = true;
      std::vector<Expr> indices;
      for (const Expr& i : *access.indices) {
        indices.push_back(canonical.mutate(i));
        VarReads reads;
        reads.visit(indices.back());
        for (const VarInfo* v : reads.vars) fixed = fixed && (v == f->var.get() || !worker_written.count(v));
      }
      std::string text;
      for (size_t d = 0; d < indices.size(); ++d) text += (d ? ", " : "") + to_string(indices[d]);
      const std::string where = space + " | " + rename(text, f->var->name, "@");
      if (!fixed || (!c.where.empty() && c.where != where)) c.refused = true;
      c.where = where;
      if (!c.indices) {
        c.indices = access.indices;
        c.var = f->var.get();
      }
      if (c.row.loops.empty() || c.row.loops.back() != k) {
        c.row.loops.push_back(k);
        c.row.bounds.push_back(bounds);
      }
      if (c.row.loops.size() == 1 && !c.first_load) {
        auto l = loads.first.find(access.array->get());
        if (l != loads.first.end()) c.first_load = l->second;
      }
    }
    CheckedAccesses checked;
    checked.visit(s);
    for (const ArrayInfo* a : checked.arrays) found[arrays.of(a)].checked = true;
  }

  std::vector<CachedRow> rows;
  for (const ArrayInfo* a : order) {
    Candidate& c = found[a];
    if (c.refused || c.row.loops.size() < 2 || (c.outside && c.writes)) continue;
    // Two iterations that reach one element would be two threads: a written
    // array needs an index that moves with the loop variable.
    if (c.writes) {
      bool moves = false;
      for (const Expr& i : *c.indices) moves = moves || steps_with(i, c.var, {});
      if (!moves) continue;
    }
    // The first loop fills the registers of every iteration: it has an
    // access that runs in each one (and no iteration leaves early).
    const For* first = plan.stmts[c.row.loops.front()]->as<For>();
    const Constructs constructs = constructs_of(first->body);
    if (constructs.jumps || constructs.asserts) continue;
    bool fills = false;
    std::vector<Stmt> body = statements_of(first->body);
    for (size_t j = 0; j < body.size(); ++j) {
      if (const Block* b = body[j]->as<Block>()) {
        body.insert(body.begin() + static_cast<std::ptrdiff_t>(j) + 1, b->stmts.begin(), b->stmts.end());
        continue;
      }
      UnconditionalAccesses always;
      always.visit(body[j]);
      for (const RawAccess& access : always.accesses) fills = fills || arrays.of(access.array->get()) == a;
    }
    if (!fills) continue;
    // A temporary of the worker whose first access stores: its cached
    // elements need no memory.
    auto al = arrays.allocation.find(a);
    bool own = al != arrays.allocation.end() && al->second->fill == FillKind::Uninitialized && !c.checked && !c.outside;
    for (const ArrayInfo* name : c.row.names) own = own && arrays.declared.count(name);
    // A loop that may run again in order (ReductionForm::OrderDependent)
    // reads the row from memory then.
    for (size_t k : c.row.loops)
      for (const Reduction& r : plan.stmts[k]->as<For>()->schedule.reductions)
        own = own && reduction_form(plan.stmts[k]->as<For>()->body, r) != ReductionForm::OrderDependent;
    if (own) {
      for (const Stmt& st : body) {
        if (st->as<Block>()) continue;
        int touches = 0;
        for (const RawAccess& access : accesses_in(st)) touches += arrays.of(access.array->get()) == a;
        if (touches == 0) continue;
        const Store* store = st->as<Store>();
        c.row.registers_only = store && touches == 1 && arrays.of(store->array.get()) == a;
        break;
      }
    }
    if (!c.writes && !c.checked) c.row.load = c.first_load;
    rows.push_back(c.row);
  }
  return rows;
}

std::vector<CachedValue> plan_cached_values(const WorkerPlan& plan, const std::vector<CachedRow>& rows,
                                            const VarSet& worker_written, int slots) {
  if (!plan.team || rows.empty()) return {};
  const BodyArrays arrays = body_arrays(plan.stmts);
  int used = 0;
  for (const CachedRow& row : rows) used += slots * registers_of(row.array->type.dtype);
  // The loops whose first iterations run on registers, with their
  // iteration spaces, and the arrays that the body writes or binds.
  std::map<size_t, std::string> space_of;
  for (const CachedRow& row : rows) {
    for (size_t k = 0; k < row.loops.size(); ++k) {
      std::string text;
      for (const Expr& e : row.bounds[k]) text += to_string(e) + ":";
      space_of[row.loops[k]] = text;
    }
  }
  ArraySet written;
  for (const Stmt& s : plan.stmts) {
    for (const RawAccess& a : accesses_in(s))
      if (a.write) written.insert(arrays.of(a.array->get()));
    NestedBindings bound;
    bound.visit(s);
    for (const ArrayInfo* a : bound.arrays) written.insert(arrays.of(a));
  }
  std::vector<CachedValue> values;
  for (auto later = space_of.begin(); later != space_of.end(); ++later) {
    const For* b = plan.stmts[later->first]->as<For>();
    ExpressionWalk walk(
        [&](const ExprNode* e) {
          VarSet reads;
          if (!calls_math(e) || !reads_of(e, arrays, written, &reads) || !reads.count(b->var.get())) return false;
          for (auto earlier = space_of.begin(); earlier != later; ++earlier) {
            if (earlier->second != later->second) continue;
            const For* a = plan.stmts[earlier->first]->as<For>();
            const Constructs c = constructs_of(a->body);
            if (c.jumps || c.asserts) continue;
            // No statement from the earlier loop to this one assigns what it reads.
            bool stable = true;
            for (size_t k = earlier->first; k <= later->first && stable; ++k) {
              for (const VarInfo* v : scalar_writes(plan.stmts[k]))
                if (v != a->var.get() && v != b->var.get() && reads.count(v)) stable = false;
            }
            if (!stable) continue;
            // The first expression of the earlier loop that computes the same value in the same iteration: the
            // same tree, the loop variables standing for each other, arrays compared through the names bound to
            // them in the body.
            ir::EqualOptions same_iteration;
            same_iteration.a_var = a->var.get();
            same_iteration.b_var = b->var.get();
            same_iteration.array_of = [&](const ArrayInfo* x) { return arrays.of(x); };
            const ExprNode* found = nullptr;
            ExpressionWalk first(
                [&](const ExprNode* x) {
                  if (!found && ir::equal(x, e, same_iteration)) found = x;
                  return found != nullptr;
                },
                true);
            first.visit(a->body);
            if (!found) continue;
            auto it =
                std::find_if(values.begin(), values.end(), [&](const CachedValue& v) { return v.first == found; });
            if (it == values.end()) {
              const int cost = slots * registers_of(e->type.kind);
              if (used + cost > kRowCacheRegisters) return false;
              used += cost;
              values.push_back({earlier->first, found, {}});
              it = values.end() - 1;
            }
            it->reuses.emplace_back(later->first, e);
            return true;
          }
          return false;
        },
        false);
    walk.visit(b->body);
  }
  return values;
}

}  // namespace plait::transforms::gpu
