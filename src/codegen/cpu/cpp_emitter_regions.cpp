// The CPU emitter: parallel regions, several parallel loops and the
// statements between them run by one team of threads (cpp_emitter.h).
#include "codegen/cpu/cpp_emitter.h"

namespace plait::codegen::cpu {

int64_t CppEmitter::body_cost(const For* innermost) {
  CostCounter cost;
  cost.visit(innermost->body);
  return std::max<int64_t>(cost.nodes, 1) * (cost.has_loop ? kAssumedInnerTrips : 1);
}

Placement CppEmitter::placement(const Stmt& s, const AccessScan& sc) const {
  if (sc.has_parallel) return Placement::Structure;
  if (const Declare* d = s->as<Declare>()) {
    if (d->array) return Placement::Single;  // empties the shared array
    return region_->hoisted_vars.count(d->var.get()) ? Placement::Single : Placement::Redundant;
  }
  if (s->kind == NodeKind::Assert) return Placement::Check;
  if (sc.facts.expressions || sc.facts.allocations || sc.returns || sc.facts.checks || sc.has_loop || sc.escapes ||
      !sc.written.empty() || !sc.bound.empty())
    return Placement::Single;
  for (const VarInfo* v : sc.assigned)
    if (shared_in_region(v)) return Placement::Single;
  return Placement::Redundant;
}

bool CppEmitter::shared_in_region(const VarInfo* v) const {
  for (size_t i = 0; i < region_->outer_scopes; ++i)
    if (scopes_[i].count(v)) return true;
  return false;
}

void CppEmitter::note_reads(const AccessScan& sc) {
  for (const VarInfo* v : sc.read)
    if (region_->plan.assigned.count(v) && shared_in_region(v)) region_->pending.vars.insert(v);
  for (const ArrayInfo* a : sc.loaded)
    if (region_->plan.written.count(a) || region_->plan.bound.count(a)) region_->pending.loaded.insert(a);
  for (const ArrayInfo* a : sc.dims)
    if (region_->plan.bound.count(a)) region_->pending.dims.insert(a);
}

void CppEmitter::barrier_before(const AccessScan& writes) {
  const PendingReads& p = region_->pending;
  if (intersects(writes.assigned, p.vars) || intersects(writes.written, p.loaded) ||
      intersects(writes.bound, p.loaded) || intersects(writes.bound, p.dims)) {
    line("#pragma omp barrier");
    region_->pending = {};
  }
}

std::string CppEmitter::trips_estimate(const For* f) {
  auto invariant = [&](const Expr& e) {
    const AccessScan sc = scan(e);
    if (sc.facts.expressions || !sc.loaded.empty() || intersects(sc.dims, region_->plan.bound)) return false;
    for (const VarInfo* v : sc.read)
      if (!declared(v) || region_->plan.assigned.count(v)) return false;
    return true;
  };
  const IntImm* step = f->step->as<IntImm>();
  if (step && step->value != 0 && invariant(f->begin) && invariant(f->end))
    return "static_cast<double>(plait::trip_count(" + expr(f->begin) + ", " + expr(f->end) + ", " + expr(f->step) +
           "))";
  return std::to_string(kAssumedInnerTrips) + ".0";
}

std::string CppEmitter::region_work(const Stmt& s) {
  if (const Block* b = s->as<Block>()) {
    std::string sum;
    for (const Stmt& st : b->stmts)
      if (scan(st).has_parallel) sum += (sum.empty() ? "" : " + ") + region_work(st);
    return sum.empty() ? "0.0" : "(" + sum + ")";
  }
  if (const If* i = s->as<If>())
    return "(" + region_work(i->then_case) + (i->else_case ? " + " + region_work(i->else_case) : "") + ")";
  const For* f = s->as<For>();
  if (!f || !scan(s).has_parallel) return "0.0";
  if (!is_parallel(f->schedule.kind)) return "(" + trips_estimate(f) + " * " + region_work(f->body) + ")";
  std::string work;
  const std::vector<const For*> nest = collapse_nest(f);
  for (const For* level : nest) work += trips_estimate(level) + " * ";
  return "(" + work + std::to_string(body_cost(nest.back())) + ".0)";
}

std::string CppEmitter::region_syncs(const Stmt& s) {
  std::vector<Stmt> stmts;
  if (const Block* b = s->as<Block>()) {
    stmts = b->stmts;
  } else {
    stmts.push_back(s);
  }
  int groups = 0;
  bool in_group = false;
  std::string nested;
  for (const Stmt& st : stmts) {
    const AccessScan sc = scan(st);
    if (!sc.has_parallel) {
      bool single = false;
      if (const Declare* d = st->as<Declare>()) {
        single = d->array || region_->hoisted_vars.count(d->var.get());
      } else if (st->kind != NodeKind::Assert) {
        single =
            sc.facts.expressions || sc.facts.allocations || sc.has_loop || !sc.written.empty() || !sc.bound.empty();
        for (const VarInfo* v : sc.assigned) single = single || declared(v);
      }
      if (single && !in_group) ++groups;
      in_group = single;
      continue;
    }
    in_group = false;
    std::string part;
    if (const If* i = st->as<If>()) {
      part = "(" + region_syncs(i->then_case) + (i->else_case ? " + " + region_syncs(i->else_case) : "") + ")";
    } else if (st->kind == NodeKind::Block) {
      part = region_syncs(st);
    } else if (const For* f = st->as<For>(); f && is_parallel(f->schedule.kind)) {
      part = "1.0";
    } else if (f) {
      part = "(" + trips_estimate(f) + " * " + region_syncs(f->body) + ")";
    }
    if (!part.empty()) nested += " + " + part;
  }
  return nested.empty() ? std::to_string(groups) + ".0" : "(" + std::to_string(groups) + ".0" + nested + ")";
}

void CppEmitter::emit_region_loop(const For* loop, std::unique_ptr<Region> root) {
  line("{");
  ++indent_;
  const LoopBounds bounds = declare_loop_bounds(loop);
  const std::string &begin = bounds.begin, &end = bounds.end, &step = bounds.step, &trip = bounds.trip, &k = bounds.k;
  line("const int64_t " + trip + " = " + checked_trip_count(loop, begin, end, step) + ";");
  const bool is_root = root != nullptr;
  std::string outer_stop;
  if (is_root) {
    region_ = std::move(root);
    for (const ArrayVar& a : region_->plan.hoisted_arrays) declare_array(a);
    for (const Var& v : region_->plan.hoisted_vars) {
      line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + "{};");
      scopes_.back().insert(v.get());
    }
    if (region_->plan.may_stop) {
      region_->failed = temp("failed");
      region_->passes = temp("passes");
      region_->exit = temp("exit");
      line("bool " + region_->failed + "[2] = {false, false};");
    }
    const std::string threads =
        region_->plan.num_threads > 0 ? std::to_string(region_->plan.num_threads) : std::string("ctx->num_threads");
    // The team starts when the whole loop's work reaches the threshold
    // (what starting a team costs) and each barrier inside has on average
    // as much to share out: with passive waiting a barrier puts threads
    // to sleep and wakes them like a start does (fdtd_2d at preset S, four
    // barriers per step of 1.2-1.9M node-iterations each, ran 1.6x slower
    // on 2 threads than on one).
    const std::string work = temp("work"), syncs = temp("syncs");
    line("const double " + work + " = " + region_work(loop->body) + ";");
    line("const double " + syncs + " = " + region_syncs(loop->body) + ";");
    line_directive(loop->loc);
    line("#pragma omp parallel num_threads(" + threads + ") if(static_cast<double>(" + trip + ") * " + work +
         " >= static_cast<double>(ctx->parallel_work_threshold) && " + work + " >= " + syncs +
         " * static_cast<double>(ctx->parallel_work_threshold))");
    line("{");
    ++indent_;
    if (region_->plan.may_stop) line("int64_t " + region_->passes + " = 0;");
    region_->outer_scopes = scopes_.size();
    region_level_ = true;
    outer_stop = std::exchange(stop_, "");
  } else {
    note_reads(scan(loop->begin));
    note_reads(scan(loop->end));
    note_reads(scan(loop->step));
  }
  line("for (int64_t " + k + " = 0; " + k + " < " + trip + "; ++" + k + ") {");
  ++indent_;
  scopes_.emplace_back();
  // Each thread counts with its own copy of the loop variable.
  const Var& v = loop->var;
  line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin +
       " + " + k + " * " + step + ");");
  scopes_.back().insert(v.get());
  const PendingReads at_entry = region_->pending;
  ++loop_depth_;
  emit_region_stmts(loop->body);
  --loop_depth_;
  // The next iteration may write what this one read after its last barrier.
  if (!region_->pending.empty()) line("#pragma omp barrier");
  region_->pending = at_entry;  // the loop may run no iteration
  scopes_.pop_back();
  --indent_;
  line("}");
  const std::string copy_back = "if (" + trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
                                begin + " + (" + trip + " - 1) * " + step + ");";
  if (is_root) {
    if (region_->plan.may_stop) line(region_->exit + ":;");
    --indent_;
    line("}");
    region_level_ = false;
    stop_ = outer_stop;
    const bool stops = region_->plan.may_stop;
    const int loops = region_->plan.parallel_loops;
    region_.reset();
    remarks_.push_back({loop->loc, "codegen_cpp",
                        "loop over '" + v->name + "' runs as one parallel region: its " + std::to_string(loops) +
                            " parallel loop(s) share one thread team (`omp for`), started once per call"});
    if (declared(v.get())) line(copy_back);
    if (stops) stop_on_error();
  } else if (declared(v.get())) {
    if (shared_in_region(v.get())) {
      AccessScan writes;
      writes.assigned.insert(v.get());
      barrier_before(writes);
      line("#pragma omp single");
      line(copy_back);
      region_->pending = {};
    } else {
      line(copy_back);
    }
  }
  --indent_;
  line("}");
}

void CppEmitter::emit_region_stmts(const Stmt& body) {
  std::vector<Stmt> stmts;
  if (const Block* b = body->as<Block>()) {
    stmts = b->stmts;
  } else {
    stmts.push_back(body);
  }
  for (size_t i = 0; i < stmts.size();) {
    const Placement p = placement(stmts[i], scan(stmts[i]));
    if (p != Placement::Single) {
      emit_region_stmt(stmts[i], p);
      ++i;
      continue;
    }
    // Consecutive single statements share one `omp single` (one barrier);
    // an allocation ends the group, whose failure every thread checks.
    size_t j = i + 1;
    while (j < stmts.size() && stmts[j - 1]->kind != NodeKind::Allocate &&
           placement(stmts[j], scan(stmts[j])) == Placement::Single)
      ++j;
    emit_single(std::vector<Stmt>(stmts.begin() + static_cast<std::ptrdiff_t>(i),
                                  stmts.begin() + static_cast<std::ptrdiff_t>(j)));
    i = j;
  }
}

void CppEmitter::emit_region_stmt(const Stmt& s, Placement p) {
  switch (p) {
    case Placement::Single:
      return;
    case Placement::Redundant:
      region_level_ = false;
      emit(s);
      region_level_ = true;
      note_reads(scan(s));
      return;
    case Placement::Check: {
      // Every thread checks the same condition: all leave together.
      const std::string outer = std::exchange(stop_, "goto " + region_->exit + ";");
      region_level_ = false;
      emit(s);
      region_level_ = true;
      stop_ = outer;
      note_reads(scan(s));
      return;
    }
    case Placement::Structure:
      break;
  }
  if (const If* i = s->as<If>()) {
    line_directive(s->loc);
    note_reads(scan(i->cond));
    line("if (" + expr(i->cond) + ") {");
    const PendingReads at_entry = region_->pending;
    nested_region(i->then_case);
    if (i->else_case) {
      PendingReads after_then = region_->pending;
      region_->pending = at_entry;
      line("} else {");
      nested_region(i->else_case);
      region_->pending.vars.insert(after_then.vars.begin(), after_then.vars.end());
      region_->pending.loaded.insert(after_then.loaded.begin(), after_then.loaded.end());
      region_->pending.dims.insert(after_then.dims.begin(), after_then.dims.end());
    } else {
      region_->pending.vars.insert(at_entry.vars.begin(), at_entry.vars.end());
      region_->pending.loaded.insert(at_entry.loaded.begin(), at_entry.loaded.end());
      region_->pending.dims.insert(at_entry.dims.begin(), at_entry.dims.end());
    }
    line("}");
    return;
  }
  if (s->kind == NodeKind::Block) {
    line_directive(s->loc);
    line("{");
    nested_region(s);
    line("}");
    return;
  }
  emit(s);  // a loop: an `omp for`, or a serial loop every thread runs
}

void CppEmitter::nested_region(const Stmt& s) {
  ++indent_;
  scopes_.emplace_back();
  emit_region_stmts(s);
  scopes_.pop_back();
  --indent_;
}

void CppEmitter::emit_single(const std::vector<Stmt>& group) {
  AccessScan writes;
  for (const Stmt& s : group) writes.visit(s);
  barrier_before(writes);
  // A variable that a statement of the group declares for the rest of the
  // block is declared before the construct, in every thread.
  for (const Stmt& s : group) {
    const Assign* a = s->as<Assign>();
    if (a && !declared(a->var.get())) {
      line("[[maybe_unused]] " + ctype(a->var->type) + " " + var_name(a->var) + "{};");
      scopes_.back().insert(a->var.get());
    }
  }
  const bool stops = may_stop(writes);
  std::set<std::string> copied;
  for (const VarInfo* v : writes.assigned)
    if (declared(v) && !shared_in_region(v)) copied.insert(var_names_.at(v));
  std::string list;
  for (const std::string& name : copied) list += (list.empty() ? "" : ", ") + name;
  line("#pragma omp single" + (list.empty() ? std::string() : " copyprivate(" + list + ")"));
  line("{");
  ++indent_;
  scopes_.emplace_back();
  region_level_ = false;
  auto emit_group = [&] {
    for (const Stmt& s : group) emit(s);
  };
  if (stops) {
    // An error skips the rest of the group; the one thread notes it for
    // all (check_failed).
    with_stop_label(emit_group);
    line("if (ctx->error_kind != 0) " + failed_flag() + " = true;");
  } else {
    emit_group();
  }
  region_level_ = true;
  scopes_.pop_back();
  --indent_;
  line("}");
  region_->pending = {};
  if (stops) check_failed();
}

void CppEmitter::check_failed() {
  line("if (" + failed_flag() + ") goto " + region_->exit + ";");
  line("++" + region_->passes + ";");
}

}  // namespace plait::codegen::cpu
