// The CUDA emitter: serial loops on the host, the parameters and launches of kernels,
// and the identities and combiners of reductions (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

void CudaEmitter::emit_serial_for(const For* loop, const std::function<void()>& body) {
  if (loop->schedule.kind != LoopKind::Serial) {
    if (analysis::leaves_loop(loop->body))
      PLAIT_INTERNAL_ERROR(std::string(loop_kind_name(loop->schedule.kind)) + " loop over `" + loop->var->name +
                           "` contains a break or return; the lowering must make it serial");
  }
  if (device() && is_parallel(loop->schedule.kind)) {
    remark(loop->loc, "parallel loop over `" + loop->var->name +
                          "` is nested in another parallel loop: it runs serially inside each GPU thread");
  }
  line("{");
  ++indent_;
  const LoopBounds bounds = declare_loop_bounds(loop);
  const std::string &begin = bounds.begin, &end = bounds.end, &step = bounds.step, &trip = bounds.trip, &k = bounds.k;
  if (device()) {
    bool bounds_raise = false;
    for (const Expr* e : {&loop->begin, &loop->end, &loop->step})
      bounds_raise = bounds_raise || analysis::raises(*e).expressions;
    if (bounds_raise) stop_on_device_error();
  } else if (host_may_stop(loop->begin) || host_may_stop(loop->end) || host_may_stop(loop->step)) {
    line(kHostStop);
  }
  line("const int64_t " + trip + " = " + trip_count(loop, begin, end, step) + ";");
  line("for (int64_t " + k + " = 0; " + k + " < " + trip + "; ++" + k + ") {");
  ++indent_;
  scopes_.emplace_back();
  const Var& v = loop->var;
  const std::string value = "static_cast<" + ctype(v->type) + ">(" + begin + " + " + k + " * " + step + ")";
  // A serial loop assigns the variable itself, so that break and
  // assignments in the body leave Python's value; simd loops give each
  // iteration its own copy and set the last value after.
  const bool own_copy = loop->schedule.kind != LoopKind::Serial;
  if (!own_copy && declared(v.get())) {
    line(var_name(v) + " = " + value + ";");
  } else {
    line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = " + value + ";");
    scopes_.back().insert(v.get());
  }
  ++loop_depth_;
  if (body) {
    body();
  } else {
    emit_body_statements(loop->body);
  }
  --loop_depth_;
  scopes_.pop_back();
  --indent_;
  line("}");
  if (own_copy && declared(v.get())) {
    line("if (" + trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin + " + (" + trip +
         " - 1) * " + step + ");");
  }
  --indent_;
  line("}");
}

void CudaEmitter::emit_body_statements(const Stmt& body) {
  if (device()) {
    if (const Block* b = body->as<Block>()) {
      for (const Stmt& st : b->stmts) emit(st);
    } else {
      emit(body);
    }
    return;
  }
  // Host: group device regions as in any block.
  emit_contents(body);
}

CudaEmitter::Captures CudaEmitter::captures_of(const std::vector<Stmt>& stmts) {
  Captures c;
  ScalarMentions scalars;
  ArrayCollector arrays;
  for (const Stmt& s : stmts) {
    scalars.visit(s);
    arrays.visit(s);
  }
  for (const Var& v : scalars.used)
    if (declared(v.get())) c.scalars.push_back(v);
  c.written = scalars.written;
  for (const ArrayVar& a : arrays.used) {
    if (arrays.declared.count(a.get())) {
      c.local_arrays.push_back(a);
    } else {
      c.arrays.push_back(a);
    }
  }
  return c;
}

void CudaEmitter::add_array_params(const std::vector<ArrayVar>& arrays, std::vector<std::string>* params,
                                   std::vector<std::string>* args, const std::string& prefix) {
  for (const ArrayVar& a : arrays) {
    params->push_back(ctype(a->type.dtype) + "* " + prefix + data(a));
    args->push_back(data(a));
    for (int d = 0; d < a->type.ndim; ++d) {
      params->push_back("int64_t " + extent(a, d));
      args->push_back(extent(a, d));
      if (!unit_stride(a->type, d)) {
        params->push_back("int64_t " + prefix + stride(a, d));
        args->push_back(stride(a, d));
      }
    }
  }
}

int CudaEmitter::add_kernel(const std::string& name, bool raises) {
  kernel_names_.push_back(name);
  kernel_raises_.push_back(raises);
  return static_cast<int>(kernel_names_.size()) - 1;
}

bool CudaEmitter::note_error_sites(const std::vector<Stmt>& stmts) {
  HasErrorSites sites;
  for (const Stmt& s : stmts) sites.visit(s);
  device_errors_ = device_errors_ || sites.found;
  return sites.found;
}

std::string CudaEmitter::join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

void CudaEmitter::emit_group_lanes(const std::string& w, bool partial, const std::string& tail,
                                   const std::function<void()>& lane) {
  line("#pragma unroll");
  line("for (int p_u = 0; p_u < " + w + "; ++p_u) {");
  ++indent_;
  if (partial) {
    line("if (p_u < " + tail + ") {");
    ++indent_;
  }
  lane();
  if (partial) {
    --indent_;
    line("}");
  }
  --indent_;
  line("}");
}

std::string CudaEmitter::emit_launch_params(const std::vector<std::string>& args) {
  const std::string params = temp("params");
  std::vector<std::string> addresses;
  for (const std::string& a : args) {
    // cuLaunchKernel reads each parameter through its address: values
    // that are not locals already get one that outlives the launch.
    std::string name = a;
    if (a.find_first_of("(-") != std::string::npos) {
      name = temp("param");
      line("void* const " + name + " = " + a + ";");
    }
    addresses.push_back("plait_cuda::arg(" + name + ")");
  }
  line("void* " + params + "[] = {" + join(addresses, ", ") + "};");
  return params;
}

CudaEmitter::OnChipLaunch CudaEmitter::emit_onchip_choice(int index, const std::vector<ArrayVar>& arrays,
                                                          const std::string& trip, const std::string& apart) {
  OnChipLaunch on{index, temp("onchip"), temp("onchip_bytes"), apart, -1, "", "", ""};
  std::string bytes = "uint64_t(0)";
  for (const ArrayVar& a : arrays)
    bytes += " + plait_cuda::onchip_bytes(" + element_count(a) + ", sizeof(" + ctype(a->type.dtype) + "))";
  line("const uint64_t " + on.bytes + " = " + bytes + ";");
  line("const bool " + on.condition + " = " + trip + " >= 2 && " + on.bytes + " <= ctx->cuda->shared_bytes_limit && " +
       on.apart + ";");
  return on;
}

void CudaEmitter::emit_launch(int index, const std::string& grid, const std::string& block,
                              const std::vector<std::string>& args,
                              const std::vector<std::pair<std::string, std::string>>& slots_in,
                              const std::vector<std::pair<std::string, std::string>>& slots_out,
                              const std::string& launcher, const OnChipLaunch* onchip) {
  // slots_*: (host lvalue, C type), slot k at scratch_slot(ctx, k).
  stage_slots(slots_in, 0);
  const std::string params = emit_launch_params(args);
  const std::string launch = "if (" + launcher + "(ctx, " + std::to_string(index) + ", " + grid + ", " + block + ", " +
                             params + ") != 0) return ctx->error_kind;";
  if (!onchip) {
    line(launch);
  } else {
    const std::string launched = temp("launched");
    line("int32_t " + launched + " = 1;");
    // The arrays in registers first, else copied on chip, else in memory.
    if (onchip->registers_index >= 0) {
      line("if (" + onchip->registers_condition + ") {");
      line("  " + launched + " = ctx->cuda->launch_shared(ctx, " + std::to_string(onchip->registers_index) + ", 1u, " +
           onchip->registers_block + ", " + onchip->registers_bytes + ", " + params + ");");
      line("  if (" + launched + " < 0) return ctx->error_kind;");
      line("}");
    }
    line("if (" + launched + " != 0 && " + onchip->condition + ") {");
    line("  " + launched + " = ctx->cuda->launch_shared(ctx, " + std::to_string(onchip->index) + ", 1u, " + block +
         ", " + onchip->bytes + ", " + params + ");");
    line("  if (" + launched + " < 0) return ctx->error_kind;");
    line("}");
    line("if (" + launched + " != 0) {");
    line("  " + launch);
    line("}");
  }
  if (!slots_out.empty()) {
    const std::string staging = temp("stage");
    line("unsigned char " + staging + "[" + std::to_string(8 * slots_out.size()) + "] = {};");
    line("if (ctx->cuda->copy_to_host(ctx, " + staging + ", plait_cuda::scratch_slot(ctx, 0), sizeof " + staging +
         ") != 0) return ctx->error_kind;");
    for (size_t k = 0; k < slots_out.size(); ++k)
      line("std::memcpy(&" + slots_out[k].first + ", " + staging + " + " + std::to_string(8 * k) + ", sizeof(" +
           slots_out[k].second + "));");
  }
}

void CudaEmitter::stage_slots(const std::vector<std::pair<std::string, std::string>>& slots, int first) {
  if (slots.empty()) return;
  const std::string staging = temp("stage");
  const std::string bytes = std::to_string(8 * slots.size());
  line("unsigned char " + staging + "[" + bytes + "] = {};");
  for (size_t k = 0; k < slots.size(); ++k)
    line("std::memcpy(" + staging + " + " + std::to_string(8 * k) + ", &" + slots[k].first + ", sizeof(" +
         slots[k].second + "));");
  const std::string target = "plait_cuda::scratch_slot(ctx, " + std::to_string(first) + ")";
  line("if (plait_cuda::all_zero(" + staging + ", sizeof " + staging + ")) {");
  line("  if (ctx->cuda->zero(ctx, " + target + ", sizeof " + staging + ") != 0) return ctx->error_kind;");
  line("} else if (ctx->cuda->copy_to_device(ctx, " + target + ", " + staging + ", sizeof " + staging + ") != 0) {");
  line("  return ctx->error_kind;");
  line("}");
}

std::string CudaEmitter::reduction_identity(ReduceOp op, ScalarKind k) {
  const bool is_float = k == ScalarKind::Float32 || k == ScalarKind::Float64;
  const std::string t = c_type_name(k);
  switch (op) {
    case ReduceOp::Add:
      return t + "(0)";
    case ReduceOp::Mul:
      return t + "(1)";
    case ReduceOp::Min:
      if (k == ScalarKind::Bool) return "true";
      if (is_float) return t + "(plait::inf_f64())";
      return k == ScalarKind::UInt64 ? "uint64_t(18446744073709551615ULL)" : int_literal(int_max(k), k);
    case ReduceOp::Max:
      if (k == ScalarKind::Bool) return "false";
      if (is_float) return t + "(-plait::inf_f64())";
      return int_literal(int_min(k), k);
  }
  return t + "(0)";
}

std::string CudaEmitter::shared_array(const std::string& name, const std::string& type, int count) {
  // Aligned so that an 8- or 16-bit element's atomic update, a
  // compare-and-swap on its aligned 32-bit word, stays inside the array.
  shared_decls_[name] = "__shared__ __align__(8) " + type + " " + name + "[" + std::to_string(count) + "];";
  return name;
}

std::string CudaEmitter::combine_functor(gpu::ReductionForm form, const Reduction& r) {
  if (form == gpu::ReductionForm::NanPropagating)
    return r.op == ReduceOp::Max ? "plait::op_maximum()" : "plait::op_minimum()";
  return op_functor(r.op);
}

}  // namespace plait::codegen::cuda_emitter
