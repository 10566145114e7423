// The CUDA emitter: statements, stores and atomic updates, matrix products through
// cuBLAS, assertions and how device code stops after an error (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

void CudaEmitter::emit_contents(const Stmt& s) {
  scopes_.emplace_back();
  const int region_slots = region_slots_used_;
  const Block* b = s->as<Block>();
  std::vector<Stmt> stmts = b ? b->stmts : std::vector<Stmt>{s};
  std::vector<Stmt> run;
  for (size_t k = 0; k < stmts.size(); ++k) {
    const Stmt& st = stmts[k];
    if (!device() && runs_on_device(st)) {
      run.push_back(st);
      continue;
    }
    if (!run.empty()) emit_serial_region(run, stays_on_device(run, stmts, k));
    run.clear();
    resident_slots_.clear();
    if (!device()) resident_loop_ = results_stay_on_device(stmts, k) ? st->as<For>() : nullptr;
    emit(st);
    resident_loop_ = nullptr;
  }
  if (!run.empty()) emit_serial_region(run, stays_on_device(run, stmts, stmts.size()));
  resident_slots_.clear();
  if (!device()) {
    for (auto it = region_slots_.begin(); it != region_slots_.end();)
      it = it->second >= kRegionSlot + region_slots ? region_slots_.erase(it) : std::next(it);
    region_slots_used_ = region_slots;
  }
  scopes_.pop_back();
}

VarSet CudaEmitter::stays_on_device(const std::vector<Stmt>& run, const std::vector<Stmt>& stmts, size_t next) {
  VarSet out;
  if (device() || persistent_step_) return out;
  Captures cap = captures_of(run);
  for (const Var& v : cap.scalars) {
    if (!cap.written.count(v.get()) || region_slots_used_ + static_cast<int>(out.size()) >= kResidentSlots) continue;
    bool ok = declares(stmts, stmts.size(), v.get());
    for (size_t j = next; j < stmts.size() && ok; ++j) {
      ScalarMentions uses;
      uses.visit(stmts[j]);
      if (!collected(uses, v.get())) continue;
      const For* f = stmts[j]->as<For>();
      StmtFacts facts;
      if (f) facts.visit(f->body);
      ScalarMentions bounds;
      if (f) {
        bounds.visit(f->begin);
        bounds.visit(f->end);
        bounds.visit(f->step);
      }
      ok = f && is_parallel(f->schedule.kind) && !uses.written.count(v.get()) && !facts.binds_arrays &&
           !collected(bounds, v.get());
    }
    if (ok) out.insert(v.get());
  }
  return out;
}

bool CudaEmitter::results_stay_on_device(const std::vector<Stmt>& stmts, size_t k) {
  const For* f = stmts[k]->as<For>();
  if (!f || !is_parallel(f->schedule.kind) || f->schedule.reductions.empty() ||
      static_cast<int>(f->schedule.reductions.size()) > kResidentSlots || persistent_step_)
    return false;
  size_t end = k + 1;
  while (end < stmts.size() && runs_on_device(stmts[end])) ++end;
  for (const Reduction& r : f->schedule.reductions) {
    if (!declares(stmts, k, r.var.get())) return false;
    for (size_t j = k + 1; j < stmts.size(); ++j) {
      ScalarMentions uses;
      uses.visit(stmts[j]);
      if (collected(uses, r.var.get()) && (j >= end || uses.written.count(r.var.get()))) return false;
    }
  }
  return true;
}

bool CudaEmitter::declares(const std::vector<Stmt>& stmts, size_t end, const VarInfo* v) {
  for (size_t j = 0; j < end; ++j)
    if (const Declare* d = stmts[j]->as<Declare>(); d && d->var.get() == v) return true;
  return false;
}

bool CudaEmitter::collected(const ScalarMentions& c, const VarInfo* v) {
  return std::any_of(c.used.begin(), c.used.end(), [&](const Var& u) { return u.get() == v; });
}

bool CudaEmitter::runs_on_device(const Stmt& s) {
  if (s->kind == NodeKind::Declare) return false;
  StmtFacts facts;
  facts.visit(s);
  const analysis::LoopExits exits = analysis::loop_exits(s);
  return facts.touches_elements && !facts.has_parallel_loop && !exits.returns && !facts.binds_arrays && !exits.breaks &&
         !exits.continues && !facts.calls_library;
}

void CudaEmitter::emit_assign(const Assign* a) {
  if (auto it = nan_checked_.find(a->var.get()); it != nan_checked_.end())
    return emit_nan_checked_update(a, it->second);
  CEmitter::emit_assign(a);
}

void CudaEmitter::emit_loop(const Stmt& s) {
  const For* f = s->as<For>();
  if (!device() && is_parallel(f->schedule.kind)) return emit_parallel_kernel(f);
  if (!device() && f->schedule.kind == LoopKind::Serial && emit_persistent_time_loop(f)) return;
  if (!device() && f->schedule.kind == LoopKind::Serial && emit_device_serial_loop(s)) return;
  if (persistent_step_ && is_parallel(f->schedule.kind)) {
    if (register_plan_) {
      emit_register_parallel_loop(f);
      // No barrier follows a loop in registers; where the step may
      // raise, the block learns of an error here, all its threads
      // together, before the code after the loop runs.
      if (step_may_raise_) line("if (plait::block_stopped(p_err)) return;  // an error stops the call");
      return;
    }
    emit_persistent_parallel_loop(f);
    // A barrier the step does without when its arrays do not share memory.
    // Every block leaves at the same barrier once an error is
    // recorded (plait::grid_sync says why none waits for one that left).
    line(barrier_not_needed_.count(f) ? "if (!p_apart && plait::grid_sync(p_barrier, p_err)) return;"
                                      : "if (plait::grid_sync(p_barrier, p_err)) return;");
    return;
  }
  emit_serial_for(f);
}

void CudaEmitter::emit_matmul(const MatMul* mm) {
  if (device()) PLAIT_INTERNAL_ERROR("a library matrix product in device code");
  auto operand = [&](const ArrayVar& x, bool transposed) { return blas_matrix(x, transposed); };
  const std::string beta = mm->beta ? expr(mm->beta) : std::string("0.0");
  const std::string beta_reads_c = mm->beta ? "1" : "0";
  const std::string status = temp("gemm");
  const MatMulTriangle& tri = mm->triangle;
  if (tri.part == MatMulPart::Full) {
    line("const int32_t " + status + " = ctx->cuda->gemm(ctx, " + gemm_arguments(mm) + ");");
  } else {
    line("int32_t " + status + " = 1;");
    line("{");
    ++indent_;
    const std::string rows = temp("rows"), ok = temp("ok");
    line("const int64_t " + rows + " = " + expr(mm->m) + ";");
    emit_rows_hold(tri, rows, ok);
    std::string call;
    if (tri.part == MatMulPart::StrictUpperInPlace) {
      call = "ctx->cuda->trmm(ctx, " + dtype_code(mm->c->type.dtype) + ", " + rows + ", " + expr(mm->n) + ", " +
             operand(mm->a, mm->a_transposed) + ", " + operand(mm->c, false) + ")";
    } else if (tri.part == MatMulPart::LowerSolve) {
      auto vector = [&](const ArrayVar& x) { return blas_vector(tri, x); };
      call = "ctx->cuda->trsv(ctx, " + dtype_code(mm->c->type.dtype) + ", " + rows + ", " +
             operand(mm->a, mm->a_transposed) + ", " + vector(mm->b) + ", " + vector(mm->c) + ")";
    } else if (tri.part == MatMulPart::SymmetricLower) {
      call = "ctx->cuda->symm(ctx, " + dtype_code(mm->c->type.dtype) + ", " + rows + ", " + expr(mm->n) + ", " +
             expr(mm->alpha) + ", " + operand(mm->a, false) + ", " + operand(mm->b, mm->b_transposed) + ", " + beta +
             ", " + beta_reads_c + ", " + operand(mm->c, false) + ")";
    } else {
      call = "ctx->cuda->gemmt(ctx, " + gemmt_arguments(mm, rows) + ")";
    }
    line("if (" + ok + ") " + status + " = " + call + ";");
    --indent_;
    line("}");
  }
  line("if (" + status + " < 0) return ctx->error_kind;");
  line("if (" + status + " > 0) {");
  nested(mm->loops);
  line("}");
}

void CudaEmitter::emit_nan_checked_update(const Assign* a, const std::string& nan_seen) {
  const Binary* b = a->value->as<Binary>();
  if (!b || (b->op != BinaryOp::PyMax && b->op != BinaryOp::PyMin))
    PLAIT_INTERNAL_ERROR("a max/min reduction of `" + a->var->name + "` that is not max(x, m) or min(x, m)");
  const VarRef* first = b->a->as<VarRef>();
  const Expr& other = first && first->var.get() == a->var.get() ? b->b : b->a;
  const std::string x = temp("x");
  line("{");
  ++indent_;
  line("const " + ctype(a->var->type) + " " + x + " = " + expr(other) + ";");
  line(nan_seen + " |= (int32_t)(" + x + " != " + x + ");");
  line(var_name(a->var) + " = plait::" + (b->op == BinaryOp::PyMax ? "py_max" : "py_min") + "(" + var_name(a->var) +
       ", " + x + ");");
  --indent_;
  line("}");
}

void CudaEmitter::stop_on_device_error() {
  if (!stop_.empty()) {
    line("if (p_errs.raised) " + stop_);
    ++stop_uses_;
  } else if (persistent_step_) {
    line(register_plan_ ? "if (plait::block_stopped(p_err)) return;  // an error stops the call"
                        : "if (plait::grid_sync(p_barrier, p_err)) return;  // an error stops the call");
  }
}

bool CudaEmitter::host_may_stop(const Expr& e) {
  if (analysis::raises(e).expressions) return true;
  StmtFacts facts;
  facts.visit(e);
  return facts.touches_elements;
}

void CudaEmitter::emit_assert(const Assert* a) {
  line("if (!(" + expr(a->cond) + ")) {");
  ++indent_;
  if (device()) {
    const size_t index = assert_messages_.size();
    assert_messages_.push_back(a->message);
    line("plait::raise_error(" + sink() + ", " + std::to_string(a->error_kind) + ", " + loc_args(a->loc) +
         ", plait::msg_assert_failed, " + std::to_string(index) + ");");
    if (!stop_.empty()) {
      line(stop_);
      ++stop_uses_;
    } else {
      line(loop_depth_ > 0 ? "continue;" : "return;");
    }
  } else {
    line("plait::raise_error(ctx, " + std::to_string(a->error_kind) + ", " + loc_args(a->loc) + ", \"" +
         escape_path(a->message) + "\");");
    line("return ctx->error_kind;");
  }
  --indent_;
  line("}");
}

void CudaEmitter::emit_store(const Store* st) {
  if (!device()) PLAIT_INTERNAL_ERROR("an array store in host code");
  std::string stored = expr(st->value);
  if (const ArrayVar* a = register_array(st->array.get()); a && register_loop_) {
    const std::string slot = data(*a) + "_reg[" + std::to_string(register_slot_) + "]";
    if (!analysis::raises(st->value).expressions) {
      line(slot + " = " + stored + ";");
      return;
    }
    // A failed value is not kept (the slot goes back to memory).
    const std::string value = temp("value");
    line("{");
    line("  const " + ctype(st->array->type.dtype) + " " + value + " = " + stored + ";");
    ++indent_;
    stop_on_device_error();
    --indent_;
    line("  " + slot + " = " + value + ";");
    line("}");
    return;
  }
  // A row kept in registers: the register first, then memory unless the
  // row is the worker's own temporary.
  if (auto it = cached_rows_.find(st->array.get()); it != cached_rows_.end()) {
    const std::string slot = it->second.registers + "[" + row_slot_ + "]";
    line(slot + " = " + stored + ";");
    if (it->second.registers_only) return;
    stored = slot;
  }
  // A store made once for its group of iterations, after them.
  if (auto it = group_stores_.find(st); it != group_stores_.end() && !group_lane_.empty()) {
    line(it->second + ".v[" + group_lane_ + "] = " + stored + ";");
    return;
  }
  emit_element_update(st->array, st->indices, st->value, stored, st->checked, st->loc,
                      [&](const std::vector<std::string>& idx, const std::string& value) {
                        return data(st->array) + "[" + offset(st->array, idx) + "] = " + value + ";";
                      });
}

void CudaEmitter::emit_atomic(const AtomicUpdate* u) {
  if (!device()) PLAIT_INTERNAL_ERROR("an atomic update in host code");
  const std::string fn = atomic_function(u->op, u->array->type.dtype);
  // The element updated: in the array, or in the block's private copy of
  // it in shared memory (1-D, indexed by the element's index).
  auto target = [&](const std::vector<std::string>& idx) {
    auto it = private_copies_.find(u->array.get());
    if (it != private_copies_.end()) return "&" + it->second + "[" + idx[0] + "]";
    return "&" + data(u->array) + "[" + offset(u->array, idx) + "]";
  };
  emit_element_update(u->array, u->indices, u->value, expr(u->value), u->checked, u->loc,
                      [&](const std::vector<std::string>& idx, const std::string& value) {
                        return fn + "(" + target(idx) + ", " + value + ");";
                      });
}

}  // namespace plait::codegen::cuda_emitter
