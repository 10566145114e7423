// The CUDA emitter: persistent kernels on copies of their arrays in shared memory or
// in registers (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

std::string CudaEmitter::element_count(const ArrayVar& a) {
  std::string count = "int64_t(1)";
  for (int d = 0; d < a->type.ndim; ++d) count += " * " + extent(a, d);
  return count;
}

void CudaEmitter::emit_onchip_kernel(const std::string& what, int index, const std::vector<std::string>& params,
                                     const std::string& body, const For* loop, const std::vector<ArrayVar>& arrays) {
  device_ << "\n// " << what << ", on copies of its arrays in shared memory\n";
  line_directive(loop->loc);
  device_ << "extern \"C\" __global__ void __launch_bounds__(" << kPersistentBlockSize << ") "
          << kernel_names_[static_cast<size_t>(index)] << "(" << join(params, ", ") << ") {\n";
  indent_ = 1;
  line("if (plait::block_stopped(p_err)) return;  // an error stops the call");
  emit_onchip_copies(arrays, nullptr);
  line("[&]() {");
  device_ << body;
  line("}();");
  StoredArrays stored;
  stored.visit(loop->body);
  emit_onchip_copies(arrays, &stored.arrays);
  device_ << "}\n";
}

void CudaEmitter::emit_onchip_copies(const std::vector<ArrayVar>& arrays, const ArraySet* written) {
  if (!written) {
    line("extern __shared__ __align__(16) unsigned char p_onchip[];");
    line("uint64_t p_onchip_at = 0;");
  } else {
    line("__syncthreads();");
  }
  for (const ArrayVar& a : arrays) {
    if (written && !written->count(a.get())) continue;
    const std::string t = ctype(a->type.dtype), count = temp("count");
    const int nd = a->type.ndim;
    // Dimensions from the fastest-varying in the copy to the slowest.
    std::vector<int> order;
    for (int k = 0; k < nd; ++k) order.push_back(a->type.layout == Layout::F ? k : nd - 1 - k);
    auto global_stride = [&](int d) { return "p_global_" + stride(a, d); };
    line("const int64_t " + count + " = " + element_count(a) + ";");
    if (!written) {
      line("[[maybe_unused]] " + t + "* const " + data(a) + " = reinterpret_cast<" + t + "*>(p_onchip + p_onchip_at);");
      line("p_onchip_at += plait::onchip_bytes(" + count + ", sizeof(" + t + "));");
      std::string dense = "int64_t(1)";
      for (int d : order) {
        if (!unit_stride(a->type, d)) line("[[maybe_unused]] const int64_t " + stride(a, d) + " = " + dense + ";");
        dense += " * " + extent(a, d);
      }
    }
    line("for (int64_t p_q = threadIdx.x; p_q < " + count + "; p_q += blockDim.x) {");
    ++indent_;
    std::string offset = "0";
    if (nd == 1) {
      offset = unit_stride(a->type, 0) ? std::string("p_q") : "p_q * " + global_stride(0);
    } else if (nd > 1) {
      offset.clear();
      line("int64_t p_rest = p_q;");
      for (size_t k = 0; k < order.size(); ++k) {
        const int d = order[k];
        std::string index = "p_rest";
        if (k + 1 < order.size()) {
          index = temp("i");
          line("const int64_t " + index + " = p_rest % " + extent(a, d) + ";");
          line("p_rest /= " + extent(a, d) + ";");
        }
        offset += (offset.empty() ? "" : " + ") + index + (unit_stride(a->type, d) ? "" : " * " + global_stride(d));
      }
    }
    const std::string global = "p_global_" + data(a) + "[" + offset + "]", local = data(a) + "[p_q]";
    line(written ? global + " = " + local + ";" : local + " = " + global + ";");
    --indent_;
    line("}");
  }
  if (!written) line("__syncthreads();");
}

const ArrayVar* CudaEmitter::register_array(const ArrayInfo* a) const {
  if (!register_plan_) return nullptr;
  for (const ArrayVar& r : register_plan_->arrays)
    if (r.get() == a) return &r;
  return nullptr;
}

std::string CudaEmitter::halo_row(const ArrayVar& a, const std::string& row) {
  return "(" + data(a) + "_halo + ((int64_t)p_phase * (blockDim.x + 2) + " + row + ") * " +
         std::to_string(register_plan_->halo_width.at(a.get())) + ")";
}

std::string CudaEmitter::register_element(const ArrayVar& a, const Expr& index) {
  int64_t offset = 0;
  if (!analysis::var_plus_constant(index, register_loop_->var, &offset))
    PLAIT_INTERNAL_ERROR("a register array's index is not its loop variable plus a constant");
  const int slots = register_plan_->slots;
  const int64_t slot = register_slot_ + offset - register_loop_->store_offset;
  if (slot >= 0 && slot < slots) return data(a) + "_reg[" + std::to_string(slot) + "]";
  const auto& [left, right] = register_loop_->halos.at(a.get());
  if (slot < 0) return halo_row(a, "threadIdx.x") + "[" + std::to_string(right + left + slot) + "]";
  return halo_row(a, "threadIdx.x + 2") + "[" + std::to_string(slot - slots) + "]";
}

void CudaEmitter::emit_register_parallel_loop(const For* loop) {
  const RegisterLoop& rl = register_plan_->loops.at(loop);
  const int slots = register_plan_->slots;
  line_directive(loop->loc);
  line("{");
  ++indent_;
  const std::string begin = temp("begin"), end = temp("end");
  line("const int64_t " + begin + " = " + expr(loop->begin) + ";");
  line("const int64_t " + end + " = " + expr(loop->end) + ";");
  for (const auto& [info, halo] : rl.halos) {
    const ArrayVar& a = *register_array(info);
    const std::string row = halo_row(a, "threadIdx.x + 1"), reg = data(a) + "_reg";
    const auto& [left, right] = halo;
    for (int k = 0; k < right; ++k) line(row + "[" + std::to_string(k) + "] = " + reg + "[" + std::to_string(k) + "];");
    for (int k = 0; k < left; ++k)
      line(row + "[" + std::to_string(right + k) + "] = " + reg + "[" + std::to_string(slots - left + k) + "];");
  }
  if (!rl.halos.empty()) line("__syncthreads();");
  const Var& v = loop->var;
  const int outer_depth = loop_depth_;
  loop_depth_ = 1;
  persistent_step_ = false;
  // The thread's slots whose iterations are in the loop's range, as 32-bit
  // numbers (slot j runs iteration p_e0 + j - store_offset).
  const std::string lo = temp("lo"), hi = temp("hi"), to_slot = " + " + std::to_string(rl.store_offset) + " - p_e0";
  line("const int " + lo + " = plait::slot_bound(" + begin + to_slot + ", " + std::to_string(slots) + ");");
  line("const int " + hi + " = plait::slot_bound(" + end + to_slot + ", " + std::to_string(slots) + ");");
  for (int j = 0; j < slots; ++j) {
    const std::string js = std::to_string(j);
    // The slot's own block: a `continue` of the body (or of a failed
    // assertion) leaves the slot, as it leaves an iteration.
    line("if (" + lo + " <= " + js + " && " + js + " < " + hi + ") do {");
    ++indent_;
    scopes_.emplace_back();
    line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(p_e0 + " +
         std::to_string(j - rl.store_offset) + ");");
    scopes_.back().insert(v.get());
    register_loop_ = &rl;
    register_slot_ = j;
    with_device_stop([&] { emit_body_statements(loop->body); });
    register_loop_ = nullptr;
    register_slot_ = -1;
    scopes_.pop_back();
    --indent_;
    line("} while (false);");
  }
  persistent_step_ = true;
  loop_depth_ = outer_depth;
  if (!rl.halos.empty()) line("p_phase ^= 1;");
  // The step may read the loop variable after its loop, as on the host.
  if (declared(v.get()))
    line("if (" + end + " > " + begin + ") " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + end +
         " - 1);");
  --indent_;
  line("}");
}

void CudaEmitter::emit_register_kernel(const std::string& what, int index, const std::vector<std::string>& params,
                                       const For* loop, const RegisterPlan& plan,
                                       const std::function<void()>& emit_steps) {
  device_ << "\n// " << what << ": all steps in one block, " << register_array_names(plan) << " in registers\n";
  line_directive(loop->loc);
  device_ << "extern \"C\" __global__ void __launch_bounds__(" << kPersistentBlockSize << ") "
          << kernel_names_[static_cast<size_t>(index)] << "(" << join(params, ", ") << ") {\n";
  indent_ = 1;
  const std::string slots = std::to_string(plan.slots);
  line("if (plait::block_stopped(p_err)) return;  // an error stops the call");
  line("(void)p_barrier;");
  if (std::find(params.begin(), params.end(), "bool p_apart") != params.end()) line("(void)p_apart;");
  line("extern __shared__ __align__(16) unsigned char p_onchip[];");
  line("[[maybe_unused]] uint64_t p_onchip_at = 0;");
  line("[[maybe_unused]] int p_phase = 0;");
  line("const int64_t p_e0 = (int64_t)threadIdx.x * " + slots + ";");
  auto each_slot = [&](const ArrayVar& a, const std::string& action) {
    line("#pragma unroll");
    line("for (int p_j = 0; p_j < " + slots + "; ++p_j) " + action);
  };
  for (const ArrayVar& a : plan.arrays) {
    const std::string t = ctype(a->type.dtype), reg = data(a) + "_reg";
    line(t + " " + reg + "[" + slots + "];");
    if (auto it = plan.halo_width.find(a.get()); it != plan.halo_width.end()) {
      line(t + "* const " + data(a) + "_halo = reinterpret_cast<" + t + "*>(p_onchip + p_onchip_at);");
      line("p_onchip_at += plait::onchip_bytes(int64_t(2) * (blockDim.x + 2) * " + std::to_string(it->second) +
           ", sizeof(" + t + "));");
    }
    each_slot(a, reg + "[p_j] = p_e0 + p_j < " + extent(a, 0) + " ? " + data(a) + "[" + offset(a, {"(p_e0 + p_j)"}) +
                     "] : " + t + "(0);");
  }
  register_plan_ = &plan;
  line("[&]() {");
  emit_steps();
  line("}();");
  register_plan_ = nullptr;
  for (const ArrayVar& a : plan.arrays)
    each_slot(a, "if (p_e0 + p_j < " + extent(a, 0) + ") " + data(a) + "[" + offset(a, {"(p_e0 + p_j)"}) +
                     "] = " + data(a) + "_reg[p_j];");
  device_ << "}\n";
}

std::string CudaEmitter::register_array_names(const RegisterPlan& plan) {
  std::string names;
  for (const ArrayVar& a : plan.arrays) names += (names.empty() ? "`" : ", `") + a->name + "`";
  return names;
}

std::string CudaEmitter::registers_remark(const RegisterPlan& plan) {
  const std::string slots = std::to_string(plan.slots);
  return "; in the second case, where the longest of " + register_array_names(plan) + " has at most " +
         std::to_string(plan.slots * kPersistentBlockSize) + " elements, those arrays live in registers instead (" +
         slots + " consecutive elements of each per thread, the iterations that store them in their thread, the " +
         "elements read across threads passed through shared memory)";
}

void CudaEmitter::emit_register_choice(int index, const RegisterPlan& plan, const std::string& trip, OnChipLaunch* on) {
  on->registers_index = index;
  on->registers_condition = temp("in_registers");
  on->registers_block = temp("registers_block");
  on->registers_bytes = temp("registers_bytes");
  std::string elements = "int64_t(0)", bytes = "uint64_t(0)";
  for (const ArrayVar& a : plan.arrays) {
    elements = "std::max<int64_t>(" + elements + ", " + extent(a, 0) + ")";
    if (auto it = plan.halo_width.find(a.get()); it != plan.halo_width.end())
      bytes += " + plait_cuda::onchip_bytes(int64_t(2) * (" + on->registers_block + " + 2) * " +
               std::to_string(it->second) + ", sizeof(" + ctype(a->type.dtype) + "))";
  }
  line("const uint32_t " + on->registers_block + " = plait_cuda::register_block(" + elements + ", " +
       std::to_string(plan.slots) + ");");
  line("const uint64_t " + on->registers_bytes + " = " + bytes + ";");
  line("const bool " + on->registers_condition + " = " + trip + " >= 2 && " + on->apart + " && " + on->registers_block +
       " > 0;");
}

}  // namespace plait::codegen::cuda_emitter
