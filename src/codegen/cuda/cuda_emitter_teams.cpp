// The CUDA emitter: the bodies of team workers, and the temporaries of parallel loops
// (allocated once for all workers, or kept in registers) (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

void CudaEmitter::emit_team_body(const WorkerPlan& plan) {
  if (!workers_) PLAIT_INTERNAL_ERROR("a team's body outside the kernel of its workers");
  const gpu::TeamBody& team_body = workers_->team_body;
  // Groups of consecutive iterations (the staged row loop's bounds and
  // terms are in shared memory: one iteration at a time).
  group_width_ = staged_loop_ ? 1 : team_body.group_width;
  // Rows and values kept in registers between the spread loops, by loop.
  const std::vector<gpu::CachedRow>& rows = workers_->versions.cached_rows;
  const std::vector<gpu::CachedValue>& values = team_body.cached_values;
  const int slot_count = gpu::row_cache_slots(group_width_, launch_.row_groups);
  RowsOfLoop rows_of_loop;
  const std::string slots = std::to_string(slot_count);
  // The registers start each worker at zero: a slot that one loop fills
  // under a test and a later one reads under the same test would
  // otherwise hold the previous worker's value as far as the compiler
  // can tell, and stay live around the loop over workers (the loop
  // softmax took 79 registers per thread instead of 64).
  for (const gpu::CachedRow& row : rows) {
    const std::string registers = temp("row");
    line(ctype(row.array->type.dtype) + " " + registers + "[" + slots + "]{};");
    std::string lines;
    for (size_t k : row.loops) {
      rows_of_loop[k].rows.emplace_back(&row, registers);
      lines += (lines.empty() ? "" : ", ") + std::to_string(plan.stmts[k]->loc.line);
    }
    remark(plan.stmts[row.loops.front()]->loc,
           "`" + row.array->name + "` is kept in registers between the loops at lines " + lines +
               " (each thread's first " + slots + " elements): " +
               (row.registers_only ? "they never go to memory"
                                   : "the first loop reads them from memory, the others from registers"));
  }
  for (const gpu::CachedValue& value : values) {
    const std::string registers = temp("value");
    line(ctype(value.first->type) + " " + registers + "[" + slots + "]{};");
    rows_of_loop[value.first_loop].values.push_back({value.first, RegisterValue{registers, true, value.first}});
    std::string lines;
    for (const auto& [k, node] : value.reuses) {
      rows_of_loop[k].values.push_back({node, RegisterValue{registers, false, value.first}});
      lines += (lines.empty() ? "" : ", ") + std::to_string(plan.stmts[k]->loc.line);
    }
    // (A non-owning Expr of the node, for the printer.)
    remark(plan.stmts[value.first_loop]->loc,
           "`" + to_string(Expr(Expr(), value.first)) + "` is computed once per element at line " +
               std::to_string(plan.stmts[value.first_loop]->loc.line) +
               " and kept in registers (each thread's "
               "first " +
               slots + " elements) for the loops at lines " + lines + ", which compute it again");
  }
  filled_values_.clear();
  emit_team_statements(plan, &rows_of_loop);
  group_width_ = 1;
}

void CudaEmitter::emit_team_statements(const WorkerPlan& plan, const RowsOfLoop* rows_of_loop) {
  if (plan.barrier.size() != plan.stmts.size())
    PLAIT_INTERNAL_ERROR("a team's body without its barriers: transforms/gpu/plan_workers must run before the emitter");
  for (size_t k = 0; k < plan.stmts.size(); ++k) {
    const Stmt& s = plan.stmts[k];
    const Placement placement = plan.placement[k];
    if (const std::string& array_name = plan.barrier[k]; !array_name.empty()) {
      line("plait::team_sync(p_team);  // `" + array_name + "` is written by one thread and accessed by another");
      remark(s->loc, "barrier before line " + std::to_string(s->loc.line) + ": `" + array_name +
                         "` is written by one thread of the team and accessed by another");
    }
    if (placement == Placement::Nested) {
      emit_team_nested(s, plan.nested[k]);
      continue;
    }
    switch (placement) {
      case Placement::Nested:
        break;
      case Placement::Spread: {
        const For* f = s->as<For>();
        LoopRegisters registers;
        if (auto r = rows_of_loop ? rows_of_loop->find(k) : RowsOfLoop::const_iterator{};
            rows_of_loop && r != rows_of_loop->end()) {
          registers.rows = r->second.rows;
          // Values are read only where the earlier loop did fill their registers.
          for (const auto& entry : r->second.values)
            if (entry.second.filling || filled_values_.count(entry.second.source)) registers.values.push_back(entry);
        }
        emit_spread_loop(f, k, registers.rows.empty() ? nullptr : &registers);
        break;
      }
      case Placement::AllThreads:
        emit(s);
        break;
      case Placement::FirstThread: {
        // Scalars it assigns that live on after it go to the other threads.
        const std::vector<Var>& broadcast = plan.broadcast[k];
        line("if (p_lane == 0) {");
        ++indent_;
        scopes_.emplace_back();
        emit(s);
        scopes_.pop_back();
        std::vector<std::string> slots;
        for (const Var& v : broadcast) {
          slots.push_back(shared_array("p_bcast_" + var_name(v).substr(2), ctype(v->type), block_size_ / kSmallTeam));
          line("if (p_team > 1) " + slots.back() + "[p_slot] = " + var_name(v) + ";");
        }
        --indent_;
        line("}");
        remark(s->loc, "line " + std::to_string(s->loc.line) +
                           " writes array elements: it runs in the first "
                           "thread of the team" +
                           (broadcast.empty() ? ""
                                              : ", and the scalars it assigns are broadcast "
                                                "through shared memory"));
        if (broadcast.empty()) break;
        line("if (p_team > 1) {");
        line("  plait::team_sync(p_team);");
        for (size_t b = 0; b < broadcast.size(); ++b)
          line("  " + var_name(broadcast[b]) + " = " + slots[b] + "[p_slot];");
        line("  plait::team_sync(p_team);");
        line("}");
        break;
      }
    }
  }
}

void CudaEmitter::emit_team_nested(const Stmt& s, const std::vector<WorkerPlan>& subs) {
  line_directive(s->loc);
  if (const If* i = s->as<If>()) {
    line("if (" + expr(i->cond) + ") {");
    ++indent_;
    scopes_.emplace_back();
    emit_team_statements(subs[0]);
    scopes_.pop_back();
    --indent_;
    if (!subs[1].stmts.empty()) {
      line("} else {");
      ++indent_;
      scopes_.emplace_back();
      emit_team_statements(subs[1]);
      scopes_.pop_back();
      --indent_;
    }
    line("}");
    return;
  }
  const For* f = s->as<For>();
  emit_serial_for(f, [&] {
    // The steps of a serial loop on one block's team: the whole launch
    // runs each step in step, so it tests the record once per step and
    // leaves together (no thread waits at a barrier for one that left).
    if (f == device_time_loop_ && analysis::raises(f->body).any())
      line("if (plait::block_stopped(p_err)) return;  // an error stops the call");
    emit_team_statements(subs[0]);
  });
}

bool CudaEmitter::host_evaluable(const Expr& e, const VarSet& worker, const std::vector<ArrayVar>& local) {
  ScalarMentions vars;
  vars.visit(e);
  for (const Var& v : vars.used)
    if (worker.count(v.get()) || !declared(v.get())) return false;
  ArrayCollector arrays;
  arrays.visit(e);
  for (const ArrayVar& a : arrays.used)
    if (std::find(local.begin(), local.end(), a) != local.end()) return false;
  StmtFacts facts;
  facts.visit(e);
  HasErrorSites errors;
  errors.visit(e);
  return !facts.touches_elements && !errors.found;
}

std::string CudaEmitter::temporaries_in_registers(const WorkerPlan& plan, const std::vector<gpu::CachedRow>& rows,
                                                  const VarSet& nest_vars, const VarSet& written,
                                                  const std::vector<ArrayVar>& local,
                                                  const std::vector<Temporary>& temporaries, const std::string& team) {
  std::vector<const gpu::CachedRow*> kept;
  for (const Temporary& t : temporaries) {
    const gpu::CachedRow* row = nullptr;
    for (const gpu::CachedRow& r : rows)
      if (r.registers_only && r.names.count(t.planned->alloc->array.get())) row = &r;
    if (!row) return "";
    kept.push_back(row);
  }
  return rows_in_registers_test(plan, kept, nest_vars, written, local, team, false);
}

std::string CudaEmitter::rows_in_registers_test(const WorkerPlan& plan, const std::vector<const gpu::CachedRow*>& rows,
                                                const VarSet& nest_vars, const VarSet& written,
                                                const std::vector<ArrayVar>& local, const std::string& team,
                                                bool whole_groups) {
  VarSet worker = nest_vars;
  worker.insert(written.begin(), written.end());
  const int width = workers_->team_body.group_width;
  std::string cond;
  std::set<std::string> tests;
  for (const gpu::CachedRow* row : rows) {
    for (const auto& bounds : row->bounds) {
      for (const Expr& e : bounds)
        if (!host_evaluable(e, worker, local)) return "";
      const std::string trip =
          "plait::trip_count(" + expr(bounds[0]) + ", " + expr(bounds[1]) + ", " + expr(bounds[2]) + ")";
      std::vector<std::string> row_tests = {
          trip + " <= int64_t(" + std::to_string(gpu::row_cache_slots(width, launch_.row_groups)) + ") * " + team};
      if (whole_groups && width > 1) row_tests.push_back(trip + " % " + std::to_string(width) + " == 0");
      for (const std::string& test : row_tests)
        if (tests.insert(test).second) cond += (cond.empty() ? "" : " && ") + test;
    }
  }
  return cond;
}

std::string CudaEmitter::rows_fit_test(const WorkerPlan& plan, const std::vector<gpu::CachedRow>& rows,
                                       const VarSet& nest_vars, const VarSet& written,
                                       const std::vector<ArrayVar>& local, const std::string& team) {
  if (rows.empty()) return "";
  std::vector<const gpu::CachedRow*> all;
  for (const gpu::CachedRow& r : rows) all.push_back(&r);
  return rows_in_registers_test(plan, all, nest_vars, written, local, team, true);
}

std::string CudaEmitter::emit_temporaries_buffer(const gpu::KernelTemporaries& plan,
                                                 const std::vector<Temporary>& temporaries,
                                                 const std::vector<NestLevel>& levels, const std::string& total,
                                                 const std::string& grid, const std::string& workers_per_block,
                                                 const std::string& buffer, const std::string& slice,
                                                 const std::string& in_registers) {
  const bool varies = plan.varies;
  std::vector<std::string> largest;
  for (size_t k = 0; k < temporaries.size(); ++k) {
    largest.push_back(temp("tmax"));
    line("uint64_t " + largest.back() + " = 0;");
  }
  const std::string w = temp("w");
  line("for (int64_t " + w + " = 0; " + w + " < " + (varies ? total : std::string("1")) + "; ++" + w + ") {");
  ++indent_;
  if (varies) {
    // The worker's loop variables, as the kernel derives them.
    const std::string rest = temp("rest");
    line("int64_t " + rest + " = " + w + ";");
    for (size_t d = levels.size(); d-- > 0;) {
      const NestLevel& lv = levels[d];
      std::string kd = rest;
      if (d > 0) {
        kd = temp("wk");
        line("const int64_t " + kd + " = " + rest + " % " + lv.trip + ";");
        line(rest + " /= " + lv.trip + ";");
      }
      const Var& v = lv.loop->var;
      line("[[maybe_unused]] const " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
           lv.begin + " + " + kd + " * " + lv.step + ");");
    }
  } else {
    line("(void)" + w + ";");
  }
  for (const Assign* d : plan.definitions) {
    if (!varies && plan.varying.count(d->var.get())) continue;  // the loop variables are not declared
    line("[[maybe_unused]] const " + ctype(d->var->type) + " " + var_name(d->var) + " = " + expr(d->value) + ";");
  }
  for (size_t k = 0; k < temporaries.size(); ++k) {
    const Temporary& t = temporaries[k];
    std::string taken;
    for (const auto& [cond, side] : t.planned->guards)
      taken += (taken.empty() ? "" : " && ") + std::string(side ? "(" : "!(") + expr(cond) + ")";
    line("if (" + (taken.empty() ? std::string("true") : taken) + ") {");
    ++indent_;
    const std::string count = temp("count");
    line("uint64_t " + count + " = 1;");
    for (const Expr& e : t.planned->alloc->shape) {
      const std::string n = temp("n");
      line("const int64_t " + n + " = " + index_value(e) + ";");
      // Negative extents count as 0 here (the kernel reports them);
      // an overflowing size saturates and the allocation fails.
      line("if (" + n + " <= 0) " + count + " = 0; else if (__builtin_mul_overflow(" + count + ", uint64_t(" + n +
           "), &" + count + ")) " + count + " = UINT64_MAX;");
    }
    line("if (" + count + " > " + largest[k] + ") " + largest[k] + " = " + count + ";");
    --indent_;
    line("}");
  }
  --indent_;
  line("}");
  line("int64_t " + slice + " = 0;");
  // Temporaries whose elements all stay in registers need no memory: the
  // workers' slices are empty (no buffer) and every offset is 0.
  const std::string held = in_registers.empty() ? "" : temp("in_registers");
  if (!held.empty()) line("const bool " + held + " = " + in_registers + ";");
  for (size_t k = 0; k < temporaries.size(); ++k) {
    const Temporary& t = temporaries[k];
    const std::string bytes = std::to_string(element_bytes(t.planned->alloc->array->type.dtype));
    line("const int64_t " + t.offset + " = " + (held.empty() ? slice : held + " ? 0 : " + slice) + ";");
    line("const int64_t " + t.capacity + " = static_cast<int64_t>(" + largest[k] + ");");
    line("if (" + largest[k] + " > (uint64_t(1) << 44) / " + bytes + ") {");
    line("  plait::raise_error(ctx, PLAIT_MEMORY_ERROR, " + loc_args(t.planned->alloc->loc) +
         ", \"array is too big; the size overflows\");");
    line("  return ctx->error_kind;");
    line("}");
    line(slice + " += static_cast<int64_t>((" + largest[k] + " * " + bytes + " + 15) / 16 * 16);");
  }
  if (!held.empty()) line("if (" + held + ") " + slice + " = 0;");
  const std::string blocks = temp("grid");
  line("const uint32_t " + blocks + " = plait_cuda::grid_for_temporaries(" + grid + ", " + workers_per_block + ", " +
       slice + ");");
  line("unsigned char* " + buffer + " = nullptr;");
  line("if (" + slice + " > 0) {");
  line("  " + buffer + " = plait_cuda::scratch_for(ctx, p_temporaries, uint64_t(" + blocks + ") * (" +
       workers_per_block + ") * uint64_t(" + slice + "));");
  line("  if (" + buffer + " == nullptr) return ctx->error_kind;");
  line("}");
  uses_temporaries_ = true;
  return blocks;
}

void CudaEmitter::emit_device_allocate(const Allocate* al) {
  auto it = temp_offsets_.find(al);
  if (it == temp_offsets_.end()) PLAIT_INTERNAL_ERROR("an allocation in device code outside a parallel loop");
  const ArrayVar& a = al->array;
  const std::string t = ctype(a->type.dtype);
  const int ndim = a->type.ndim;
  line("{");
  ++indent_;
  std::vector<std::string> n;
  std::string negative;
  for (int d = 0; d < ndim; ++d) {
    n.push_back(temp("n"));
    line("const int64_t " + n.back() + " = " + index_value(al->shape[static_cast<size_t>(d)]) + ";");
    negative += (d ? " || " : "") + n.back() + " < 0";
  }
  line("if (" + negative + ") plait::raise_error(" + sink() + ", plait::kind_value_error, " + loc_args(al->loc) +
       ", plait::msg_negative_dimensions);");
  // The host sized the slice from the same shape; a shape that came out
  // larger here (which would take another worker's memory) is an error
  // and the array stays empty.
  const std::string shape = temp("shape"), fits = temp("fits");
  line("const int64_t " + shape + "[] = {" + join(n, ", ") + "};");
  line("const bool " + fits + " = plait::temporary_fits(" + shape + ", " + std::to_string(ndim) + ", " +
       it->second.second + ");");
  line("if (!" + fits + ") plait::raise_error(" + sink() + ", plait::kind_value_error, " + loc_args(al->loc) +
       ", plait::msg_temporary_larger_than_sized);");
  line(data(a) + " = reinterpret_cast<" + t + "*>(p_mine + " + it->second.first + ");");
  std::string step = "1";
  for (int k = 0; k < ndim; ++k) {
    const int d = a->type.layout == Layout::F ? k : ndim - 1 - k;
    const std::string& nd = n[static_cast<size_t>(d)];
    line(extent(a, d) + " = " + nd + " < 0 || !" + fits + " ? 0 : " + nd + ";");
    if (!unit_stride(a->type, d)) line(stride(a, d) + " = " + step + ";");
    step = (step == "1" ? "" : step + " * ") + extent(a, d);
  }
  if (al->fill != FillKind::Uninitialized) {
    const std::string value = al->fill == FillKind::Zeros  ? t + "(0)"
                              : al->fill == FillKind::Ones ? t + "(1)"
                                                           : "static_cast<" + t + ">(" + expr(al->fill_value) + ")";
    const std::string q = temp("q");
    if (team_worker_) {
      line("for (int64_t " + q + " = p_lane; " + q + " < " + step + "; " + q + " += p_team) " + data(a) + "[" + q +
           "] = " + value + ";");
    } else {
      line("for (int64_t " + q + " = 0; " + q + " < " + step + "; ++" + q + ") " + data(a) + "[" + q + "] = " + value +
           ";");
    }
  }
  --indent_;
  line("}");
  remark(al->loc, "`" + a->name + "` (line " + std::to_string(al->loc.line) +
                      ") is allocated inside a parallel "
                      "loop: it lives in GPU memory, in the worker's own slice of one buffer that the host allocates "
                      "before the launch, sized for the largest shape over the iterations" +
                      (team_worker_ ? "; the threads of a team share their slice" : ""));
}

std::string CudaEmitter::kernel_bound(const Expr& bound, const std::string& param) {
  return bound->as<IntImm>() ? expr(bound) : param;
}

}  // namespace plait::codegen::cuda_emitter
