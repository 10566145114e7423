// The CPU emitter: loops, parallel and vector loops with their OpenMP
// pragmas, thread partials of reductions and prefetched chunks
// (cpp_emitter.h).
#include "codegen/cpu/cpp_emitter.h"

namespace plait::codegen::cpu {

void CppEmitter::emit_for(const For* loop, const RegionStep* step) {
  const LoopSchedule& sc = loop->schedule;
  if (const ParallelRegionPlan* plan = sc.plan<ParallelRegionPlan>()) {
    PLAIT_ASSERT(!region_ && omp_depth_ == 0);  // plan_parallel_regions plans no region inside these
    if (plan->runs_as_region()) {
      const auto* statements = sc.plan<RegionStatementsPlan>();
      if (!statements)
        PLAIT_INTERNAL_ERROR("the loop over `" + loop->var->name +
                             "` runs as one parallel region without a plan of its statements: the pass "
                             "transforms/cpu/plan_region_statements must run");
      return emit_region_loop(loop, std::make_unique<Region>(*plan, *statements), nullptr);
    }
    remarks_.push_back({loop->loc, "codegen_cpp",
                        "loop over '" + loop->var->name + "': each parallel loop inside starts its own threads (" +
                            plan->refusal + ")"});
  }
  emit_plain_for(loop, step);
}

void CppEmitter::emit_plain_for(const For* loop, const RegionStep* step) {
  LoopSchedule sc = loop->schedule;
  // The order of its float max/min reductions and its per-thread
  // temporaries (transforms/cpu/plan_omp_loops.h).
  const OmpLoopPlan* omp = sc.plan<OmpLoopPlan>();
  if (!omp && has_omp_loop_plan(sc))
    PLAIT_INTERNAL_ERROR("the loop over `" + loop->var->name +
                         "` has no OpenMP loop plan: the pass transforms/cpu/plan_omp_loops must run");
  // Under serial_only_ (a region's serial version) a parallel loop runs as a
  // serial loop, or as a vector loop where it was one loop's `parallel for
  // simd` (a collapsed nest's levels would nest simd in simd) without array
  // reductions or reductions combined in thread order: its float max/min
  // reductions then update in Python's order and its temporaries are
  // allocated per iteration, as the IR has them.
  OmpLoopPlan serial_order;
  if (serial_only_ && is_parallel(sc.kind)) {
    const bool vector = is_vectorized(sc.kind) && collapse_nest(loop).size() == 1 && sc.array_reductions.empty() &&
                        (!omp || omp->thread_order.empty());
    sc.kind = vector ? LoopKind::Vectorized : LoopKind::Serial;
    sc.array_reductions.clear();
    if (omp) serial_order = *omp;
    serial_order.per_thread.clear();
    serial_order.thread_order.clear();
    omp = &serial_order;
  }
  const bool work_shared = region_level_;  // an `omp for` of the enclosing region
  PLAIT_ASSERT(!work_shared || step);      // the plan's step of the loop
  if (work_shared && sc.kind == LoopKind::Serial) return emit_region_loop(loop, nullptr, step);
  region_level_ = false;
  if (sc.kind != LoopKind::Serial) {
    if (analysis::leaves_loop(loop->body))
      PLAIT_INTERNAL_ERROR(std::string(loop_kind_name(sc.kind)) + " loop over `" + loop->var->name +
                           "` contains a break or return; the lowering must make it serial");
  }
  const bool parallel = is_parallel(sc.kind);
  const std::vector<const For*> nest = parallel ? collapse_nest(loop) : std::vector<const For*>{loop};

  line("{");
  ++indent_;
  static const OmpLoopPlan kNoPlan;  // a serial loop without float max/min reductions: nothing to order
  const OmpLoopPlan& order = omp ? *omp : kNoPlan;
  const VarInfo* order_var = order.in_order;
  const bool in_order = order_var != nullptr;
  if (in_order)
    remarks_.push_back({loop->loc, "codegen_cpp",
                        std::string(parallel ? "parallel" : "vector") + " loop over '" + loop->var->name +
                            "' runs in order: its float max/min reduction of '" + order_var->name +
                            "' is written max(x, " + order_var->name + "), whose result depends on where NaNs are" +
                            (parallel ? ", and updated in another form too" : "")});
  const VarSet& thread_order = order.thread_order;
  if (!thread_order.empty()) {
    std::string names;
    for (const Reduction& r : sc.reductions)
      if (thread_order.count(r.var.get())) names += (names.empty() ? "'" : ", '") + r.var->name + "'";
    remarks_.push_back({loop->loc, "codegen_cpp",
                        "parallel loop over '" + loop->var->name + "': its float max/min reduction of " + names +
                            " is written max(x, m), whose result depends on where NaNs are: each thread runs one "
                            "chunk in order and the threads' results combine in thread order" +
                            (is_vectorized(sc.kind) ? " (without simd)" : "")});
  }
  // The value before the loop, set aside for the builtin after it; the
  // reduction starts from the identity.
  std::vector<std::pair<const Reduction*, std::string>> before;
  for (const Reduction& r : sc.reductions) {
    if (!order.set_aside.count(r.var.get())) continue;
    const std::string b = temp("before");
    const std::string t = ctype(r.var->type);
    line("const " + t + " " + b + " = " + var_name(r.var) + ";");
    line(var_name(r.var) + " = " + (r.op == ReduceOp::Max ? "-" : "") + "std::numeric_limits<" + t + ">::infinity();");
    before.emplace_back(&r, b);
  }
  struct Level {
    const For* loop;
    std::string begin, step, trip, k;
  };
  std::vector<Level> levels;
  for (const For* f : nest) {
    Level lv{f, temp("begin"), "", "", ""};
    const std::string end = temp("end");
    lv.step = temp("step");
    lv.trip = temp("trip");
    lv.k = temp("k");
    line("const int64_t " + lv.begin + " = " + expr(f->begin) + ";");
    line("const int64_t " + end + " = " + expr(f->end) + ";");
    line("const int64_t " + lv.step + " = " + expr(f->step) + ";");
    line("const int64_t " + lv.trip + " = " + checked_trip_count(f, lv.begin, end, lv.step) + ";");
    levels.push_back(lv);
  }
  if (bounds_may_raise(nest)) stop_on_error();
  const For* innermost = nest.back();
  // The loop may write what other threads have read since the last barrier.
  if (work_shared && step->barrier) line("#pragma omp barrier");

  std::string trips;
  for (const Level& lv : levels) trips += (trips.empty() ? "" : " * ") + ("static_cast<double>(" + lv.trip + ")");
  // Per-thread temporaries: the team starts first (`omp parallel`), each
  // thread allocates them, then the iterations are shared out (`omp for`).
  const std::vector<Stmt>& per_thread = order.per_thread;
  std::set<const StmtNode*> hoisted;
  // Both start the team first (`omp parallel`) and share out the
  // iterations in it (`omp for`).
  const bool own_team = !work_shared && (!per_thread.empty() || !thread_order.empty());
  if (own_team) {
    line_directive(sc.pragma_loc.valid() ? sc.pragma_loc : loop->loc);
    line("#pragma omp parallel" + num_threads_clause(sc) + if_clause(trips, innermost, false));
    line("{");
    ++indent_;
    scopes_.emplace_back();
  }
  if (!per_thread.empty()) {
    ++omp_depth_;  // a failed allocation cannot leave the region: it is reported when the call ends
    const std::string outer_stop = std::exchange(stop_, "");
    std::string any;
    for (const Level& lv : levels) any += (any.empty() ? "" : " && ") + lv.trip + " > 0";
    for (const Stmt& st : per_thread) {
      hoisted.insert(st.get());
      if (st->kind == NodeKind::Declare) emit(st);
    }
    // Without iterations nothing is allocated, as before.
    line("if (" + any + ") {");
    ++indent_;
    for (const Stmt& st : per_thread)
      if (st->kind != NodeKind::Declare) emit(st);
    --indent_;
    line("}");
    stop_ = outer_stop;
    --omp_depth_;
    remarks_.push_back({loop->loc, "codegen_cpp",
                        "parallel loop over '" + loop->var->name +
                            "': its temporaries are allocated once per thread, "
                            "not once per iteration"});
  }
  // Each thread's partial results (inside the region: a block of the
  // thread's own variables).
  std::vector<ThreadPartial> partials;
  if (!thread_order.empty()) {
    if (work_shared) {
      line("{");
      ++indent_;
    }
    for (const Reduction& r : sc.reductions) {
      if (!thread_order.count(r.var.get())) continue;
      const ThreadPartial part{&r, var_name(r.var), temp("part"), temp("reset")};
      const std::string t = ctype(r.var->type);
      line(t + " " + part.value + " = std::numeric_limits<" + t + ">::quiet_NaN();");
      line("bool " + part.reset + " = false;");
      var_names_[r.var.get()] = part.value;
      reset_flags_[r.var.get()] = part.reset;
      partials.push_back(part);
    }
  }
  const For* planned = is_vectorized(sc.kind) || serial_only_
                           ? nullptr
                           : plan_prefetch(innermost, levels.back().step, levels.back().k, levels.back().trip);
  // A compute-bound pass of a loop over rows runs in chunks that prefetch
  // what the other passes read and write (transforms/cpu/plan_row_prefetch.h).
  const auto site = serial_only_ ? prefetch_.end() : prefetch_.find(loop);
  const bool in_chunks = site != prefetch_.end();
  std::string k_begin = "0";
  std::string k_end = levels[0].trip;
  if (in_chunks) emit_prefetch_chunk(site->second, levels[0].trip, &k_begin, &k_end);
  // The bound set-up above shifted the line count: re-anchor so that a
  // diagnostic about the OpenMP pragma names the user's pragma line.
  std::vector<const Level*> copy_back;
  const bool body_stops = may_stop(scan(innermost->body));
  // The nest's loops and body (printed twice for a branch, below).
  auto print_nest = [&] {
    for (size_t d = 0; d < levels.size(); ++d) {
      const Level& lv = levels[d];
      line("for (int64_t " + lv.k + " = " + (d == 0 ? k_begin : "0") + "; " + lv.k + " < " +
           (d == 0 ? k_end : lv.trip) + "; ++" + lv.k + ")" + (d + 1 == levels.size() ? " {" : ""));
    }
    ++indent_;
    scopes_.emplace_back();
    // The loop variable: a serial loop assigns the variable itself (so break
    // and assignments in the body leave Python's value); parallel and vector
    // loops give each iteration its own copy and set the last value after.
    copy_back.clear();
    for (const Level& lv : levels) {
      const Var& v = lv.loop->var;
      const std::string value =
          "static_cast<" + ctype(v->type) + ">(" + lv.begin + " + " + lv.k + " * " + lv.step + ")";
      if (sc.kind == LoopKind::Serial && declared(v.get())) {
        line(var_name(v) + " = " + value + ";");
      } else {
        if (declared(v.get())) copy_back.push_back(&lv);
        line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = " + value + ";");
        scopes_.back().insert(v.get());
      }
    }
    if (sc.kind != LoopKind::Serial) ++omp_depth_;
    ++loop_depth_;
    auto emit_body = [&] {
      if (const Block* b = innermost->body->as<Block>()) {
        for (const Stmt& st : b->stmts)
          if (!hoisted.count(st.get())) emit(st);
      } else {
        emit(innermost->body);
      }
    };
    // After an error a thread of a parallel loop skips its remaining
    // iterations, and an error in an iteration leaves it. A vector loop
    // raises nothing (scalarize_raising_loops).
    PLAIT_ASSERT(!(body_stops && is_vectorized(sc.kind)));
    if (parallel && body_stops) {
      // Python raises the error of the first iteration that fails: the
      // thread notes the iteration it runs (in Python's order, the nest's
      // levels row by row), an iteration after a failed one is skipped, one
      // before it runs on, and its own error replaces the later one's
      // (plait::raise_error keeps the lowest iteration's).
      std::string at = levels[0].k;
      for (size_t d = 1; d < levels.size(); ++d) at = "(" + at + ") * " + levels[d].trip + " + " + levels[d].k;
      line("plait::parallel_iteration = " + at + ";");
      line("if (__builtin_expect(ctx->error_kind != 0, 0) && plait::stops(ctx)) {");
      line("  plait::parallel_iteration = -1;");
      line("  continue;");
      line("}");
      // In a region the thread that fails notes it for all (check_failed).
      ++parallel_iterations_;
      with_stop_label(emit_body, work_shared ? failed_flag() + " = true;" : "");
      --parallel_iterations_;
      line("plait::parallel_iteration = -1;");
    } else if (is_vectorized(sc.kind)) {
      const std::string outer_stop = std::exchange(stop_, "");
      emit_body();
      stop_ = outer_stop;
    } else {
      if (scan(innermost->body).has_loop) emit_interrupt_check();
      emit_body();
    }
    --loop_depth_;
    if (sc.kind != LoopKind::Serial) --omp_depth_;
    scopes_.pop_back();
    --indent_;
    line("}");
  };
  // A parallel loop in a serial loop's steps whose work may not pay for
  // threads branches on it: a team of one that `omp parallel for if(...)`
  // would start costs a call and a barrier (0.3 us, libgomp) at every step,
  // the plain loop nothing. (Loops with their own team, partials or
  // prefetched chunks, or that run in order, keep the clause.)
  const bool branch = parallel && !work_shared && !own_team && partials.empty() && !in_chunks && !planned &&
                      !in_order && loop_depth_ > 0;
  if (sc.kind != LoopKind::Serial) line_directive(sc.pragma_loc.valid() ? sc.pragma_loc : loop->loc);
  if (branch) {
    line("if (" + trips + " * " + std::to_string(body_cost(innermost)) +
         ".0 >= static_cast<double>(ctx->parallel_work_threshold)) {");
    ++indent_;
    line(pragma(loop, sc, levels.size(), innermost, false, "", thread_order, order.nan_kept));
    print_nest();
    --indent_;
    line("} else {");
    ++indent_;
    // Without threads a `parallel for simd` loop stays a vector loop (a
    // dot product's reduction would otherwise run one element at a time).
    if (is_vectorized(sc.kind) && levels.size() == 1 && sc.array_reductions.empty()) {
      LoopSchedule vector = sc;
      vector.kind = LoopKind::Vectorized;
      line(pragma(loop, vector, 1, innermost, false, "", thread_order, order.nan_kept));
    }
    const size_t remarks = remarks_.size();  // the copy's remarks would repeat the loop's
    print_nest();
    remarks_.erase(remarks_.begin() + static_cast<std::ptrdiff_t>(remarks), remarks_.end());
    --indent_;
    line("}");
  } else {
    if (sc.kind != LoopKind::Serial && !in_order)
      line(pragma(loop, sc, levels.size(), innermost, work_shared || own_team, trips, thread_order, order.nan_kept));
    // Every thread of a region walks the statements around its loops.
    if (in_order && work_shared) line("#pragma omp single");
    print_nest();
  }
  // IR nodes are shared: the pass may appear again where this row loop's
  // variables are not in scope.
  if (planned) prefetch_.erase(planned);
  if (in_chunks) {  // the chunk loop
    --indent_;
    line("}");
  }
  if (!partials.empty()) {
    for (const ThreadPartial& part : partials) {
      var_names_[part.reduction->var.get()] = part.var;
      reset_flags_.erase(part.reduction->var.get());
    }
    emit_thread_order(partials);
    if (work_shared) {
      --indent_;
      line("}");
    }
  }
  if (own_team) {
    scopes_.pop_back();
    --indent_;
    line("}");
  }
  if (work_shared && body_stops) check_failed();
  for (const Level* lv : copy_back) {
    const Var& v = lv->loop->var;
    const std::string assign = "if (" + lv->trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
                               lv->begin + " + (" + lv->trip + " - 1) * " + lv->step + ");";
    if (work_shared && step->single_copy_back.count(v.get())) {
      line("#pragma omp single");
      line(assign);
    } else {
      line(assign);
    }
  }
  for (const auto& [r, b] : before)
    line(var_name(r->var) + " = plait::" + (r->op == ReduceOp::Max ? "py_max" : "py_min") + "<" + ctype(r->var->type) +
         ">(" + b + ", " + var_name(r->var) + ");");
  if (parallel && body_stops) stop_on_error();
  --indent_;
  line("}");
  region_level_ = work_shared;
}

bool CppEmitter::bounds_may_raise(const std::vector<const For*>& nest) {
  for (const For* f : nest) {
    const IntImm* step = f->step->as<IntImm>();
    if (!step || step->value == 0 || scan(f->begin).facts.expressions || scan(f->end).facts.expressions) return true;
  }
  return false;
}

void CppEmitter::emit_thread_order(const std::vector<ThreadPartial>& partials) {
  const std::string t = temp("thread");
  line("#pragma omp for ordered schedule(static, 1)");
  line("for (int " + t + " = 0; " + t + " < omp_get_num_threads(); ++" + t + ") {");
  ++indent_;
  line("#pragma omp ordered");
  line("{");
  ++indent_;
  for (const ThreadPartial& part : partials) {
    const Reduction& r = *part.reduction;
    line("if (" + part.reset + ") " + part.var + " = " + part.value + ";");
    line("else if (" + part.value + " == " + part.value + ") " + part.var +
         " = plait::" + (r.op == ReduceOp::Max ? "py_max" : "py_min") + "<" + ctype(r.var->type) + ">(" + part.value +
         ", " + part.var + ");");
  }
  --indent_;
  line("}");
  --indent_;
  line("}");
}

const For* CppEmitter::plan_prefetch(const For* loop, const std::string& step, const std::string& k,
                                     const std::string& trip) {
  // transforms/cpu/plan_row_prefetch recorded the plan on the loop.
  const auto* plan = loop->schedule.plan<RowPrefetchPlan>();
  if (!plan || !plan->compute) return nullptr;
  std::string reads, writes;
  for (const PrefetchTarget& t : plan->targets) {
    std::string& names = t.write ? writes : reads;
    names += (names.empty() ? "'" : ", '") + t.array->name + "'";
  }
  std::string what;
  if (!reads.empty()) what = "the next row of " + reads;
  if (!writes.empty()) what += (what.empty() ? "" : " and ") + std::string("this row of ") + writes;
  remarks_.push_back({plan->compute->loc, "codegen_cpp",
                      "loop over '" + loop->var->name + "': its vector loop over '" + plan->compute->var->name +
                          "' (vector math) runs in chunks of " + std::to_string(kPrefetchChunk) + " that prefetch " +
                          what + " for the loop's other passes"});
  const For* compute = plan->compute;
  prefetch_[compute] = PrefetchSite{loop, plan, step, k, trip};
  return compute;
}

void CppEmitter::emit_prefetch_chunk(const PrefetchSite& site, const std::string& trip, std::string* k_begin,
                                     std::string* k_end) {
  const std::string chunk = std::to_string(kPrefetchChunk);
  *k_begin = temp("chunk");
  *k_end = temp("chunk_end");
  line("for (int64_t " + *k_begin + " = 0; " + *k_begin + " < " + trip + "; " + *k_begin + " += " + chunk + ") {");
  ++indent_;
  line("const int64_t " + *k_end + " = " + trip + " - " + *k_begin + " < " + chunk + " ? " + trip + " : " + *k_begin +
       " + " + chunk + ";");
  const std::string row = var_name(site.rows->var);
  for (const PrefetchTarget& t : site.plan->targets) {
    const std::string q = temp("q");
    std::vector<std::string> idx;
    for (int d = 0; d < static_cast<int>(t.indices.size()); ++d) {
      if (d == t.row_dim) {
        idx.push_back(t.next_row ? "(" + row + " + " + site.step + ")" : row);
      } else if (d == t.column_dim) {
        idx.push_back("(" + q + " + " + std::to_string(t.column_begin + t.column_offset) + ")");
      } else {
        idx.push_back(index_value(t.indices[static_cast<size_t>(d)]));
      }
    }
    const std::string elem = "sizeof(" + ctype(t.array->type.dtype) + ")";
    // Integer arithmetic: the address may lie past the array (a prefetch
    // never faults), which pointer arithmetic would not allow.
    const std::string address = "reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(" + data(t.array) +
                                ") + static_cast<uintptr_t>(" + offset(t.array, idx) + ") * " + elem + ")";
    line(std::string(t.next_row ? "if (" + site.k + " + 1 < " + site.trip + ") " : "") + "for (int64_t " + q + " = " +
         *k_begin + "; " + q + " < " + *k_end + "; " + q + " += static_cast<int64_t>(64 / " + elem +
         ")) __builtin_prefetch(" + address + ", " + (t.write ? "1" : "0") + ", 3);");
  }
}

std::string CppEmitter::num_threads_clause(const LoopSchedule& sc) {
  return " num_threads(" + (sc.num_threads > 0 ? std::to_string(sc.num_threads) : std::string("ctx->num_threads")) +
         ")";
}

std::string CppEmitter::if_clause(const std::string& work, const For* innermost, bool combined) {
  return std::string(" if(") + (combined ? "parallel: " : "") + work + " * " + std::to_string(body_cost(innermost)) +
         ".0 >= static_cast<double>(ctx->parallel_work_threshold))";
}

std::string CppEmitter::pragma(const For* loop, const LoopSchedule& sc, size_t depth, const For* innermost,
                               bool work_shared, const std::string& work, const VarSet& thread_order,
                               const VarSet& nan_kept) {
  std::string p;
  const LoopKind kind = sc.kind == LoopKind::ParallelVectorized && !thread_order.empty() ? LoopKind::Parallel : sc.kind;
  switch (kind) {
    case LoopKind::Parallel:
      p = work_shared ? "#pragma omp for schedule(static)" : "#pragma omp parallel for schedule(static)";
      break;
    case LoopKind::ParallelVectorized:
      p = work_shared ? "#pragma omp for simd schedule(static)" : "#pragma omp parallel for simd schedule(static)";
      break;
    case LoopKind::Vectorized:
      p = "#pragma omp simd";
      break;
    case LoopKind::Serial:
      return "";
  }
  if (is_parallel(sc.kind)) {
    // An `omp for` of a region runs on the region's team, whose `if`
    // clause weighed the work of the whole region.
    if (!work_shared) p += num_threads_clause(sc);
    if (depth > 1) p += " collapse(" + std::to_string(depth) + ")";
    if (!work_shared && !work.empty()) p += if_clause(work, innermost, true);
    // Arrays (re)bound inside the body but declared outside it belong to
    // one iteration.
    ArrayCollector arrays;
    arrays.visit(innermost->body);
    std::vector<std::string> priv;
    for (const ArrayVar& a : arrays.used)
      if (arrays.bound.count(a.get()) && !arrays.declared.count(a.get()))
        for (const std::string& f : array_fields(a)) priv.push_back(f);
    if (!priv.empty()) {
      std::string list;
      for (const std::string& f : priv) list += (list.empty() ? "" : ", ") + f;
      p += " private(" + list + ")";
    }
  }
  if (is_vectorized(kind) && sc.simd_width > 0) p += " simdlen(" + std::to_string(sc.simd_width) + ")";
  for (const Reduction& r : sc.reductions) {
    if (thread_order.count(r.var.get())) continue;
    const std::string op = nan_kept.count(r.var.get()) ? std::string("plait_") + reduce_op_name(r.op)
                                                       : reduction_identifier(r.op, r.var->type.is_float());
    p += " reduction(" + op + ": " + var_name(r.var) + ")";
  }
  for (const ArrayReduction& r : sc.array_reductions) {
    std::string size;
    for (int d = 0; d < r.array->type.ndim; ++d) size += (d ? " * " : "") + extent(r.array, d);
    p += " reduction(" +
         reduction_identifier(
             r.op, r.array->type.dtype == ScalarKind::Float32 || r.array->type.dtype == ScalarKind::Float64) +
         ": " + data(r.array) + "[0:" + size + "])";
  }
  std::string privates;
  for (const Var& v : sc.privates)
    if (declared(v.get())) privates += (privates.empty() ? "" : ", ") + var_name(v);
  if (!privates.empty()) p += " private(" + privates + ")";
  // The combination in thread order that follows ends with the barrier.
  if (!thread_order.empty()) p += " nowait";
  if (is_parallel(sc.kind)) check_scalars_private(loop, innermost);
  return p;
}

void CppEmitter::check_scalars_private(const For* loop, const For* innermost) const {
  const LoopSchedule& sc = loop->schedule;
  AssignedScalars scalars;
  scalars.visit(innermost->body);
  for (const VarInfo* v : scalars.assigned) {
    if (scalars.declared.count(v) || !declared(v)) continue;
    bool kept = false;
    for (const Var& p : sc.privates) kept = kept || p.get() == v;
    for (const Reduction& r : sc.reductions) kept = kept || r.var.get() == v;
    if (!kept)
      PLAIT_INTERNAL_ERROR("parallel loop over `" + loop->var->name + "` assigns `" + v->name +
                           "`, declared outside it, which is neither private nor a reduction");
  }
}

}  // namespace plait::codegen::cpu
