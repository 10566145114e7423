// The CPU emitter: parallel regions, several parallel loops and the
// statements between them run by one team of threads (cpp_emitter.h).
#include "codegen/cpu/cpp_emitter.h"

namespace plait::codegen::cpu {

int64_t CppEmitter::body_cost(const For* innermost) {
  CostCounter cost;
  cost.visit(innermost->body);
  return std::max<int64_t>(cost.nodes, 1) * (cost.has_loop ? kAssumedInnerTrips : 1);
}

std::string CppEmitter::trips_estimate(const For* f) {
  auto invariant = [&](const Expr& e) {
    const AccessScan sc = scan(e);
    if (sc.facts.expressions || !sc.loaded.empty() || intersects(sc.dims, region_->plan.bound)) return false;
    for (const VarInfo* v : sc.read)
      if (!region_->statements.shared.count(v) || region_->plan.assigned.count(v)) return false;
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
        for (const VarInfo* v : sc.assigned) single = single || region_->statements.shared.count(v);
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

void CppEmitter::emit_region_loop(const For* loop, std::unique_ptr<Region> root, const RegionStep* step) {
  line("{");
  ++indent_;
  const LoopBounds bounds = declare_loop_bounds(loop);
  const std::string &begin = bounds.begin, &end = bounds.end, &step_value = bounds.step, &trip = bounds.trip,
                    &k = bounds.k;
  line("const int64_t " + trip + " = " + checked_trip_count(loop, begin, end, step_value) + ";");
  const bool is_root = root != nullptr;
  std::string outer_stop;
  if (is_root) {
    region_ = std::move(root);
    const std::string threads =
        region_->plan.num_threads > 0 ? std::to_string(region_->plan.num_threads) : std::string("ctx->num_threads");
    // The team starts when the whole loop's work reaches the threshold
    // (what starting a team costs) and each barrier inside has on average
    // as much to share out: with passive waiting a barrier puts threads
    // to sleep and wakes them like a start does (fdtd_2d at preset S, four
    // barriers per step of 1.2-1.9M node-iterations each, ran 1.6x slower
    // on 2 threads than on one). Otherwise the loop runs as serial code
    // (emit_serial_version): a team of one thread would still make a system
    // call at each of its barriers (0.24 us each, libgomp).
    const std::string work = temp("work"), syncs = temp("syncs");
    line("const double " + work + " = " + region_work(loop->body) + ";");
    line("const double " + syncs + " = " + region_syncs(loop->body) + ";");
    line("if (static_cast<double>(" + trip + ") * " + work +
         " >= static_cast<double>(ctx->parallel_work_threshold) && " + work + " >= " + syncs +
         " * static_cast<double>(ctx->parallel_work_threshold)) {");
    ++indent_;
    scopes_.emplace_back();
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
    line_directive(loop->loc);
    line("#pragma omp parallel num_threads(" + threads + ")");
    line("{");
    ++indent_;
    if (region_->plan.may_stop) line("int64_t " + region_->passes + " = 0;");
    region_level_ = true;
    outer_stop = std::exchange(stop_, "");
  }
  const RegionSteps& body = is_root ? region_->statements.body : step->nested[0];
  line("for (int64_t " + k + " = 0; " + k + " < " + trip + "; ++" + k + ") {");
  ++indent_;
  scopes_.emplace_back();
  // Each thread counts with its own copy of the loop variable.
  const Var& v = loop->var;
  line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin +
       " + " + k + " * " + step_value + ");");
  scopes_.back().insert(v.get());
  ++loop_depth_;
  emit_region_stmts(body);
  --loop_depth_;
  if (body.barrier_at_end) line("#pragma omp barrier");
  scopes_.pop_back();
  --indent_;
  line("}");
  const std::string copy_back = "if (" + trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
                                begin + " + (" + trip + " - 1) * " + step_value + ");";
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
                            " parallel loop(s) share one thread team (`omp for`), started once per call; "
                            "when its work does not pay for a team, it runs as serial code"});
    if (declared(v.get())) line(copy_back);
    if (stops) stop_on_error();
    scopes_.pop_back();
    --indent_;
    line("} else {");
    ++indent_;
    emit_serial_version(loop);
    --indent_;
    line("}");
  } else if (declared(v.get())) {
    if (step->single_copy_back.count(v.get())) {
      if (step->barrier_before_copy_back) line("#pragma omp barrier");
      line("#pragma omp single");
    }
    line(copy_back);
  }
  --indent_;
  line("}");
}

void CppEmitter::emit_serial_version(const For* loop) {
  // The remarks of the serial version would repeat the region's.
  const size_t remarks = remarks_.size();
  serial_only_ = true;
  emit_plain_for(loop, nullptr);
  serial_only_ = false;
  remarks_.erase(remarks_.begin() + static_cast<std::ptrdiff_t>(remarks), remarks_.end());
}

void CppEmitter::emit_region_stmts(const RegionSteps& steps) {
  for (const RegionStep& step : steps.steps) {
    if (step.placement == Placement::Single) {
      emit_single(step);
    } else {
      emit_region_stmt(step);
    }
  }
}

void CppEmitter::emit_region_stmt(const RegionStep& step) {
  const Stmt& s = step.stmts[0];
  switch (step.placement) {
    case Placement::Single:
      return;
    case Placement::Redundant:
      region_level_ = false;
      emit(s);
      region_level_ = true;
      return;
    case Placement::Check: {
      // Every thread checks the same condition: all leave together.
      const std::string outer = std::exchange(stop_, "goto " + region_->exit + ";");
      region_level_ = false;
      emit(s);
      region_level_ = true;
      stop_ = outer;
      return;
    }
    case Placement::Structure:
      break;
  }
  line_directive(s->loc);
  if (const If* i = s->as<If>()) {
    line("if (" + expr(i->cond) + ") {");
    nested_region(step.nested[0]);
    if (i->else_case) {
      line("} else {");
      nested_region(step.nested[1]);
    }
    line("}");
    return;
  }
  if (s->kind == NodeKind::Block) {
    line("{");
    nested_region(step.nested[0]);
    line("}");
    return;
  }
  // A loop: an `omp for`, or a serial loop every thread runs.
  emit_for(s->as<For>(), &step);
}

void CppEmitter::nested_region(const RegionSteps& steps) {
  ++indent_;
  scopes_.emplace_back();
  emit_region_stmts(steps);
  scopes_.pop_back();
  --indent_;
}

void CppEmitter::emit_single(const RegionStep& step) {
  if (step.barrier) line("#pragma omp barrier");
  for (const Var& v : step.declared_before) {
    line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + "{};");
    scopes_.back().insert(v.get());
  }
  std::set<std::string> copied;
  for (const VarInfo* v : step.copied) copied.insert(var_names_.at(v));
  std::string list;
  for (const std::string& name : copied) list += (list.empty() ? "" : ", ") + name;
  line("#pragma omp single" + (list.empty() ? std::string() : " copyprivate(" + list + ")"));
  line("{");
  ++indent_;
  scopes_.emplace_back();
  region_level_ = false;
  auto emit_group = [&] {
    for (const Stmt& s : step.stmts) emit(s);
  };
  if (step.may_stop) {
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
  if (step.may_stop) check_failed();
}

void CppEmitter::check_failed() {
  line("if (" + failed_flag() + ") goto " + region_->exit + ";");
  line("++" + region_->passes + ";");
}

}  // namespace plait::codegen::cpu
