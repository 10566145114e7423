// The CUDA emitter: time loops run as one persistent kernel (every block runs every
// step, with grid barriers between steps) (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

void CudaEmitter::emit_persistent_sizing(const For* loop, const gpu::PersistentLoopPlan& plan, const std::string& begin,
                                         const std::string& step, const std::string& trip, const std::string& workers) {
  if (!plan.sizing) {
    line("const int64_t " + workers + " = -1;");
    return;
  }
  line("int64_t " + workers + " = 0;");
  const std::string at = temp("at");
  line("for (const int64_t " + at + " : {int64_t(0), " + trip + " - 1}) {");
  ++indent_;
  scopes_.emplace_back();
  const Var& t = loop->var;
  line("[[maybe_unused]] " + ctype(t->type) + " " + var_name(t) + " = static_cast<" + ctype(t->type) + ">(" + begin +
       " + " + at + " * " + step + ");");
  scopes_.back().insert(t.get());
  for (const gpu::SizingAction& action : *plan.sizing) {
    if (action.replay) {
      emit(action.replay);
      continue;
    }
    std::string total;
    for (const For* f : gpu::persistent_nest(action.count))
      total += (total.empty() ? "" : " * ") + std::string("plait::trip_count(") + expr(f->begin) + ", " + expr(f->end) +
               ", " + expr(f->step) + ")";
    line(workers + " = std::max<int64_t>(" + workers + ", " + total + ");");
  }
  scopes_.pop_back();
  --indent_;
  line("}");
}

void CudaEmitter::emit_persistent_parallel_loop(const For* loop) {
  const std::vector<const For*> nest = gpu::persistent_nest(loop);
  line_directive(loop->loc);
  line("{");
  ++indent_;
  using Level = NestLevel;
  std::vector<Level> levels;
  std::string product;
  for (const For* f : nest) {
    Level lv{f, temp("begin"), temp("step"), temp("trip"), ""};
    const std::string end = temp("end");
    line("const int64_t " + lv.begin + " = " + expr(f->begin) + ";");
    line("const int64_t " + end + " = " + expr(f->end) + ";");
    line("const int64_t " + lv.step + " = " + expr(f->step) + ";");
    line("const int64_t " + lv.trip + " = plait::trip_count(" + lv.begin + ", " + end + ", " + lv.step + ");");
    product += (product.empty() ? "" : " * ") + lv.trip;
    levels.push_back(lv);
  }
  const std::string total = temp("total");
  line("const int64_t " + total + " = " + product + ";");
  // A thread's position in the collapsed nest, one index per loop: divided
  // out of p_first once, then advanced by p_stride's own digits with a
  // carry, as an odometer, instead of 64-bit divisions at every iteration
  // (which took most of a step of heat_3d's 3-D sweeps).
  const size_t n = levels.size();
  std::vector<std::string> index(n, "p_k"), advance(n);
  std::string increment = "p_k += p_stride";
  if (n > 1) {
    std::string declared;
    for (size_t d = 0; d < n; ++d) {
      index[d] = temp("at");
      advance[d] = temp("by");
      declared += (d ? ", " : "") + index[d] + " = 0, " + advance[d] + " = 0";
    }
    line("int64_t " + declared + ";");
    line("bool p_carry = false;");
    // Every trip is positive where the thread has an iteration; the
    // stride's digits only matter to a thread with a second one.
    auto split = [&](const std::string& from, const std::vector<std::string>& digits) {
      line("int64_t p_rest = " + from + ";");
      for (size_t d = n; d-- > 1;) line(digits[d] + " = plait::split_digit(p_rest, " + levels[d].trip + ");");
      line(digits[0] + " = p_rest;");
    };
    line("if (p_first < " + total + ") {");
    ++indent_;
    split("p_first", index);
    line("if (p_stride < " + total + " - p_first) {");
    ++indent_;
    split("p_stride", advance);
    --indent_;
    line("}");
    --indent_;
    line("}");
    for (size_t d = n; d-- > 1;) {
      increment += ", p_carry = (" + index[d] + " += " + advance[d] + (d + 1 < n ? " + p_carry" : "") +
                   ") >= " + levels[d].trip + ", " + index[d] + " -= p_carry ? " + levels[d].trip + " : 0";
    }
    increment += ", " + index[0] + " += " + advance[0] + " + p_carry";
  }
  // Not unrolled: NVRTC's unrolled copies with their guards made jacobi_1d's
  // steps 1.3x slower on an H100 (3200 elements in one block, on chip).
  // The back edge tests the record (one load per iteration): a thread's
  // later iterations do not start once the call has failed; the barrier
  // after the loop then takes every block out together.
  increment += ", p_k = plait::stopped(p_err) ? " + total + " : p_k";
  line("#pragma unroll 1");
  line("for (int64_t p_k = p_first; p_k < " + total + "; " + increment + ") {");
  ++indent_;
  scopes_.emplace_back();
  for (size_t d = n; d-- > 0;) {
    const Level& lv = levels[d];
    const std::string& kd = index[d];
    const Var& v = lv.loop->var;
    line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
         lv.begin + " + " + kd + " * " + lv.step + ");");
    scopes_.back().insert(v.get());
  }
  const int outer_depth = loop_depth_;
  loop_depth_ = 1;           // the grid-stride loop
  persistent_step_ = false;  // parallel loops in the worker run serially in its thread
  with_device_stop([&] { emit_body_statements(nest.back()->body); });
  persistent_step_ = true;
  loop_depth_ = outer_depth;
  scopes_.pop_back();
  --indent_;
  line("}");
  // The step may read a loop variable after its loop, as on the host.
  emit_last_values(levels);
  --indent_;
  line("}");
}

bool CudaEmitter::emit_persistent_time_loop(const For* loop) {
  const std::vector<Stmt> stmts = statements_of(loop->body);
  const gpu::PersistentLoopPlan* plan = gpu::persistent_loop_plan(loop);
  if (!plan) {
    if (gpu::step_parallel_loops(stmts).empty()) return false;
    PLAIT_INTERNAL_ERROR("the serial loop over `" + loop->var->name + "` (line " + std::to_string(loop->loc.line) +
                         ") has no plan for a persistent kernel: transforms/gpu/plan_persistent_loops must run");
  }
  const std::string what = "serial loop over `" + loop->var->name + "` (line " + std::to_string(loop->loc.line) + ")";
  if (!plan->runs_persistent()) {
    remark(loop->loc, what + " does not run as one persistent kernel: " + plan->refusal);
    return false;
  }
  const Var& t = loop->var;
  const Captures cap = captures_of({loop->body});
  const std::string begin = temp("begin"), end = temp("end"), step = temp("step"), trip = temp("trip"),
                    workers = temp("workers"), grid = temp("grid");
  std::vector<std::string> params, args;
  for (const std::string& n : {begin, step, trip}) {
    params.push_back("int64_t " + n);
    args.push_back(n);
  }
  // Host scalars the steps read are parameters; those they assign (not
  // needed after the loop, by the rule) are the steps' own.
  std::vector<Var> step_owned;
  for (const Var& v : cap.scalars) {
    if (v.get() == t.get()) continue;
    if (cap.written.count(v.get())) {
      step_owned.push_back(v);
      continue;
    }
    params.push_back(ctype(v->type) + " " + var_name(v));
    args.push_back(var_name(v));
  }
  // The kernel that copies the arrays on chip takes the same arguments,
  // its array pointers and strides under other names.
  std::vector<std::string> onchip_params = params, unused_args;
  add_array_params(cap.arrays, &params, &args);
  add_array_params(cap.arrays, &onchip_params, &unused_args, "p_global_");
  // The barriers the steps' parallel loops can do without, when the arrays
  // do not share memory (the kernel's `p_apart`; tested at each call).
  step_may_raise_ = plan->step_may_raise;
  const gpu::StepBarriers& barriers = plan->barriers;
  const std::string apart = temp("apart");
  if (!barriers.not_needed.empty()) {
    params.push_back("bool p_apart");
    onchip_params.push_back("bool p_apart");
    args.push_back(apart);
  }
  for (const std::string& p : {std::string("unsigned int* p_barrier"), std::string("plait::device_error* p_err")}) {
    params.push_back(p);
    onchip_params.push_back(p);
  }
  args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(kBarrierSlot) + ")");
  args.push_back("ctx->cuda->scratch");
  const bool raises = note_error_sites({loop->body});
  // Versions on copies of the arrays in shared memory and in registers.
  const bool onchip = plan->onchip;
  const bool in_registers = plan->registers.has_value();

  barrier_not_needed_ = barriers.not_needed;
  for (const auto& [f, note] : barriers.notes) remark(f->loc, what + ": " + note);
  const std::string but_some = barriers.not_needed.empty() ? "" : " (but those said below)";
  // Device: the kernel, and the same steps on arrays in shared memory and in registers.
  const int index = add_kernel("plait_" + sanitize(fn_.name) + "_k" + std::to_string(kernel_names_.size()), raises);
  const std::string name = kernel_names_[static_cast<size_t>(index)];
  const int onchip_index = onchip ? add_kernel(name + "_onchip", raises) : -1;
  const int registers_index = in_registers ? add_kernel(name + "_registers", raises) : -1;
  {
    ModeSwitch to_device(*this);
    // The steps, at indent 1 of a kernel whose parameters are `params`.
    auto emit_steps = [&]() {
      scopes_.emplace_back();
      for (const Var& v : cap.scalars)
        if (v.get() != t.get() && !cap.written.count(v.get())) scopes_.back().insert(v.get());
      line("for (int64_t p_step = 0; p_step < " + trip + "; ++p_step) {");
      ++indent_;
      scopes_.emplace_back();
      line("[[maybe_unused]] " + ctype(t->type) + " " + var_name(t) + " = static_cast<" + ctype(t->type) + ">(" +
           begin + " + p_step * " + step + ");");
      scopes_.back().insert(t.get());
      for (const Var& v : step_owned) {
        line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + "{};");
        scopes_.back().insert(v.get());
      }
      // Every thread runs the step's scalar statements; assertions on them
      // fail in all threads alike, which then leave the kernel together.
      persistent_step_ = true;
      for (const Stmt& st : stmts) emit(st);
      persistent_step_ = false;
      scopes_.pop_back();
      --indent_;
      line("}");
      scopes_.pop_back();
    };
    device_ << "\n// " << what << ": all steps in one persistent kernel\n";
    line_directive(loop->loc);
    device_ << "extern \"C\" __global__ void __launch_bounds__(" << kPersistentBlockSize << ") " << name << "("
            << join(params, ", ") << ") {\n";
    indent_ = 1;
    // A grid barrier, so that every block takes the same answer: a block
    // that starts after another one's error must not leave alone.
    line("if (plait::grid_sync(p_barrier, p_err)) return;  // an error stops the call");
    const size_t body_from = device_.str().size();
    line("const int64_t p_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;");
    line("const int64_t p_stride = (int64_t)gridDim.x * blockDim.x;");
    emit_steps();
    const std::string body = device_.str().substr(body_from);
    device_ << "}\n";
    if (onchip)
      emit_onchip_kernel(what + ": all steps in one block", onchip_index, onchip_params, body, loop, cap.arrays);
    if (in_registers) emit_register_kernel(what, registers_index, params, loop, *plan->registers, emit_steps);
    barrier_not_needed_.clear();
  }

  // Host: the choice and the launch.
  line("{");
  ++indent_;
  line("const int64_t " + begin + " = " + expr(loop->begin) + ";");
  line("const int64_t " + end + " = " + expr(loop->end) + ";");
  line("const int64_t " + step + " = " + expr(loop->step) + ";");
  line("const int64_t " + trip + " = " + trip_count(loop, begin, end, step) + ";");
  line("if (" + trip + " > 0) {");
  ++indent_;
  emit_persistent_sizing(loop, *plan, begin, step, trip, workers);
  const std::string block = std::to_string(kPersistentBlockSize) + "u";
  OnChipLaunch on{-1, "false", "", "", -1, "", "", ""};
  if (onchip || !barriers.not_needed.empty()) {
    std::string test = "true";
    for (size_t i = 0; i < cap.arrays.size(); ++i)
      for (size_t j = i + 1; j < cap.arrays.size(); ++j)
        test += " && !" + expr(ArraysOverlap::make(cap.arrays[i], cap.arrays[j], false, loop->loc));
    line("const bool " + apart + " = " + test + ";");
  }
  if (onchip) on = emit_onchip_choice(onchip_index, cap.arrays, trip, apart);
  if (in_registers) emit_register_choice(registers_index, *plan->registers, trip, &on);
  line("const uint32_t " + grid + " = plait_cuda::persistent_grid(ctx, " + std::to_string(index) + ", " + workers +
       ", " + block + ", " + on.condition + (in_registers ? " || " + on.registers_condition : std::string()) + ");");
  line("if (" + grid + " > 0) {");
  ++indent_;
  // The barrier's arrival count starts at zero (the generation may hold anything).
  line("if (" + grid + " > 1 && ctx->cuda->zero(ctx, plait_cuda::scratch_slot(ctx, " + std::to_string(kBarrierSlot) +
       "), 8) != 0) return ctx->error_kind;");
  on.condition = grid + " == 1 && " + on.condition;
  if (in_registers) on.registers_condition = grid + " == 1 && " + on.registers_condition;
  emit_launch(index, grid, block, args, {}, {},
              "(" + grid + " == 1 ? ctx->cuda->launch : ctx->cuda->launch_cooperative)", onchip ? &on : nullptr);
  if (declared(t.get()))
    line(var_name(t) + " = static_cast<" + ctype(t->type) + ">(" + begin + " + (" + trip + " - 1) * " + step + ");");
  --indent_;
  line("} else {");
  ++indent_;
  emit_serial_for(loop);
  --indent_;
  line("}");
  --indent_;
  line("}");
  --indent_;
  line("}");
  remark(loop->loc, what + ": all steps in one persistent CUDA kernel " + name +
                        ", unless a step is large. The host "
                        "counts W, the most iterations of one of its parallel loops at the first and the last step, at "
                        "each call: W <= 4096" +
                        (onchip ? std::string(", or W <= 16384 with at least 2 steps and arrays that fit in a block's "
                                              "shared memory without sharing memory with each other")
                                : std::string()) +
                        ": one block of " + std::to_string(kPersistentBlockSize) +
                        " threads, __syncthreads after each parallel loop" + but_some +
                        (onchip ? std::string(" (on copies of the arrays there in the second case, copied in before "
                                              "the first step and the written ones back after the last)")
                                : std::string()) +
                        (in_registers ? registers_remark(*plan->registers) : std::string()) +
                        "; W <= 4194304: a cooperative launch of at most the resident blocks, a grid barrier after "
                        "each parallel loop" +
                        but_some + "; else (or without cooperative launches) one launch per parallel loop per step");
  if (onchip && !in_registers)
    remark(loop->loc, what + ": its arrays are not kept in registers in one block: " + plan->no_registers);
  return true;
}

}  // namespace plait::codegen::cuda_emitter
