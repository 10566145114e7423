// The CUDA emitter: serial loops run by one team on the device, regions of host code,
// fill kernels, returns, allocations and bindings (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

Stmt CudaEmitter::device_serial_loop(const Stmt& s, std::string* why) {
  const For* loop = s->as<For>();
  gpu::SerialLoopContents contents;
  contents.visit(loop->body);
  if (!contents.spread) return nullptr;
  const gpu::WorkerLoopPlan* plan = gpu::worker_loop_plan(loop);
  if (!plan || !plan->device_loop)
    PLAIT_INTERNAL_ERROR("the serial loop over `" + loop->var->name + "` (line " + std::to_string(loop->loc.line) +
                         ") has no plan for the device: transforms/gpu/plan_workers must run before the emitter");
  const gpu::DeviceLoop& device = *plan->device_loop;
  if (!device.kernel) {
    *why = device.refusal;
    return nullptr;
  }
  const Var worker = std::make_shared<VarInfo>(VarInfo{"_device", ScalarType::py_int(), loop->loc, false});
  LoopSchedule schedule;
  schedule.kind = LoopKind::Parallel;
  auto wrapper_plan = std::make_shared<gpu::WorkerLoopPlan>();
  wrapper_plan->kernel = device.kernel;
  schedule.plans.push_back(std::move(wrapper_plan));
  return For::make(worker, IntImm::make(0), IntImm::make(1), IntImm::make(1),
                   Block::make(device.kernel->worker.stmts, loop->loc), schedule, loop->loc);
}

bool CudaEmitter::emit_device_serial_loop(const Stmt& s) {
  const For* loop = s->as<For>();
  const std::string what = "serial loop over `" + loop->var->name + "` (line " + std::to_string(loop->loc.line) + ")";
  std::string why;
  const Stmt wrapper = device_serial_loop(s, &why);
  if (wrapper) synthesized_.push_back(wrapper);
  if (!wrapper) {
    if (!why.empty())
      remark(loop->loc, what + " launches its kernels at every step, not as one kernel on the device: " + why);
    return false;
  }
  gpu::SerialLoopContents contents;
  contents.visit(loop->body);
  ArrayCollector arrays;
  arrays.visit(loop->body);
  std::string small;
  for (const ArrayVar& a : arrays.used) {
    std::string elements;
    for (int d = 0; d < a->type.ndim; ++d) {
      const std::string extent = expr(ArrayDim::make(a, d));
      small += (small.empty() ? "" : " && ") + extent + " <= " + std::to_string(kDeviceLoopMaxExtent);
      elements += (elements.empty() ? "" : " * ") + extent;
    }
    if (contents.parallel && !elements.empty())
      small += " && " + elements + " <= " + std::to_string(kDeviceLoopMaxElements);
  }
  line("if (" + (small.empty() ? std::string("true") : small) + ") {");
  ++indent_;
  device_time_loop_ = single_loop(wrapper->as<For>()->body);
  emit_parallel_kernel(wrapper->as<For>());
  device_time_loop_ = nullptr;
  --indent_;
  line("} else {");
  ++indent_;
  emit_serial_for(loop);
  --indent_;
  line("}");
  remark(loop->loc,
         what + ": all steps in one CUDA kernel of one team of " + std::to_string(block_size_) + " threads (its " +
             (contents.parallel ? "parallel loops, " : "") +
             "loops with reductions and array statements spread over the team) when every dimension of "
             "the arrays it touches is at most " +
             std::to_string(kDeviceLoopMaxExtent) +
             (contents.parallel ? " and each has at most " + std::to_string(kDeviceLoopMaxElements) + " elements"
                                : std::string()) +
             ", else one launch per loop per step");
  return true;
}

const char* CudaEmitter::reduce_op_name_word(ReduceOp op) {
  switch (op) {
    case ReduceOp::Add:
      return "add";
    case ReduceOp::Mul:
      return "mul";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "add";
}

void CudaEmitter::emit_serial_region(const std::vector<Stmt>& stmts, const VarSet& stays) {
  Captures cap = captures_of(stmts);
  const Stmt region = Block::make(stmts, stmts.front()->loc);
  VarSet dead_on_entry;  // assigned on every path before any read
  for (const Var& v : cap.scalars)
    if ((stays.count(v.get()) || cap.written.count(v.get())) && analysis::always_writes_before_read(region, v.get()))
      dead_on_entry.insert(v.get());
  auto read_on_entry = [&](const Var& v) { return dead_on_entry.count(v.get()) == 0; };
  std::vector<std::string> params, args;
  std::vector<std::pair<std::string, std::string>> slots;
  std::vector<Var> exchanged;
  std::vector<std::pair<Var, int>> resident;  // reduction results read from their slots
  std::vector<std::pair<Var, int>> staying;   // scalars it assigns that stay in their slots
  for (const Var& v : cap.scalars) {
    if (stays.count(v.get())) {
      const int slot = kRegionSlot + region_slots_used_++;
      staying.emplace_back(v, slot);
      params.push_back(ctype(v->type) + "* p_stay" + std::to_string(staying.size() - 1));
      args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(slot) + ")");
      continue;
    }
    if (cap.written.count(v.get())) {
      exchanged.push_back(v);
      continue;
    }
    if (auto it = resident_slots_.find(v.get()); it != resident_slots_.end()) {
      resident.emplace_back(v, it->second);
      params.push_back("const " + ctype(v->type) + "* p_res" + std::to_string(resident.size() - 1));
      args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(it->second) + ")");
      continue;
    }
    params.push_back(ctype(v->type) + " " + var_name(v));
    args.push_back(var_name(v));
  }
  if (static_cast<int>(exchanged.size()) > kRegionSlot) {
    throw CompileError(ErrorKind::Unsupported, "too many scalars assigned in one device region for the CUDA target",
                       fn_.source, stmts.front()->loc);
  }
  // The scalars read on entry take the first slots, which the host stages.
  const size_t staged =
      static_cast<size_t>(std::stable_partition(exchanged.begin(), exchanged.end(), read_on_entry) - exchanged.begin());
  for (size_t k = 0; k < exchanged.size(); ++k) {
    const Var& v = exchanged[k];
    params.push_back(ctype(v->type) + "* p_slot" + std::to_string(k));
    args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(k) + ")");
    slots.emplace_back(var_name(v), ctype(v->type));
  }
  const std::vector<std::pair<std::string, std::string>> slots_in(slots.begin(),
                                                                  slots.begin() + static_cast<ptrdiff_t>(staged));
  add_array_params(cap.arrays, &params, &args);
  params.push_back("plait::device_error* p_err");
  args.push_back("ctx->cuda->scratch");
  const bool raises = note_error_sites(stmts);

  const int index = add_kernel("plait_" + sanitize(fn_.name) + "_k" + std::to_string(kernel_names_.size()), raises);
  const std::string name = kernel_names_[static_cast<size_t>(index)];
  const int first_line = stmts.front()->loc.line;
  int last_line = first_line;
  for (const Stmt& s : stmts) last_line = std::max(last_line, s->loc.end_line);
  {
    ModeSwitch to_device(*this);
    device_ << "\n// statements outside parallel loops (lines " << std::to_string(first_line) << "-"
            << std::to_string(last_line) << "), in one thread\n";
    device_ << "extern \"C\" __global__ void " << name << "(" << join(params, ", ") << ") {\n";
    indent_ = 1;
    scopes_.emplace_back();
    for (const Var& v : cap.scalars) scopes_.back().insert(v.get());
    line("if (plait::stopped(p_err)) return;  // an error stops the call");
    for (size_t k = 0; k < resident.size(); ++k)
      line("const " + ctype(resident[k].first->type) + " " + var_name(resident[k].first) + " = *p_res" +
           std::to_string(k) + ";");
    for (size_t k = 0; k < exchanged.size(); ++k) {
      const Var& v = exchanged[k];
      line(ctype(v->type) + " " + var_name(v) + (k < staged ? " = *p_slot" + std::to_string(k) : "{}") + ";");
    }
    for (size_t k = 0; k < staying.size(); ++k) {
      const Var& v = staying[k].first;
      line(ctype(v->type) + " " + var_name(v) + (read_on_entry(v) ? " = *p_stay" + std::to_string(k) : "{}") + ";");
    }
    with_device_stop([&] {
      for (const Stmt& s : stmts) emit(s);
    });
    for (size_t k = 0; k < exchanged.size(); ++k)
      line("*p_slot" + std::to_string(k) + " = " + var_name(exchanged[k]) + ";");
    for (size_t k = 0; k < staying.size(); ++k)
      line("*p_stay" + std::to_string(k) + " = " + var_name(staying[k].first) + ";");
    scopes_.pop_back();
    device_ << "}\n";
  }
  line("{");
  ++indent_;
  for (const auto& [v, slot] : staying) {
    if (read_on_entry(v)) stage_slots({{var_name(v), ctype(v->type)}}, slot);
    region_slots_[v.get()] = slot;
    remark(stmts.front()->loc, "`" + v->name + "` stays on the GPU for the parallel loops after line " +
                                   std::to_string(stmts.back()->loc.end_line));
  }
  emit_launch(index, "1", "1", args, slots_in, slots);
  --indent_;
  line("}");
  remark(stmts.front()->loc, "lines " + std::to_string(first_line) + "-" + std::to_string(last_line) +
                                 " touch array elements outside parallel loops: they run on the GPU in one thread "
                                 "(kernel " +
                                 name + ")");
}

void CudaEmitter::emit_fill_kernel(ScalarKind kind, int index) {
  const std::string t = ctype(kind);
  device_ << "\nextern \"C\" __global__ void " << kernel_names_[static_cast<size_t>(index)] << "(" << t
          << "* data, int64_t count, " << t << " value, plait::device_error* p_err) {\n"
          << "  if (plait::stopped(p_err)) return;  // an error stops the call\n"
          << "  plait::fill(data, count, value);\n}\n";
}

int CudaEmitter::fill_kernel(ScalarKind kind) {
  auto it = fill_kernels_.find(static_cast<int>(kind));
  if (it != fill_kernels_.end()) return it->second;
  const int index = add_kernel("plait_" + sanitize(fn_.name) + "_fill_" + dtype_suffix(kind), false);
  fill_kernels_[static_cast<int>(kind)] = index;
  return index;
}

void CudaEmitter::emit_allocate(const Allocate* al) {
  if (device()) {
    emit_device_allocate(al);
    stop_on_device_error();  // a negative or oversized shape
    return;
  }
  const bool needs_kernel = al->fill == FillKind::Ones || al->fill == FillKind::Value;
  const int kernel = needs_kernel ? fill_kernel(al->array->type.dtype) : -1;
  emit_allocation(al, "plait_cuda::allocate_device_array", ", " + std::to_string(kernel), "return ctx->error_kind;");
}

}  // namespace plait::codegen::cuda_emitter
