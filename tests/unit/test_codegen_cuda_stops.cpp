// Tests of how generated CUDA code stops once the call has recorded an
// error (docs/cuda.md, "Errors on the device"), without a GPU: the device
// part has the entry, back-edge and after-barrier tests and compiles with
// NVRTC for sm_90 (when NVRTC is installed); the host part, built by the
// system compiler and run against a stand-in plait_cuda_api, stops at its
// first copy from the GPU that reports an error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "codegen/cuda/codegen_cuda.h"
#include "codegen/cuda/device_stops.h"
#include "ir/ir.h"
#include "jit/cuda_driver.h"
#include "jit/cuda_runtime.h"
#include "jit/loader.h"
#include "jit/toolchain.h"
#include "runtime/abi.h"
#include "transforms/gpu/plan_persistent_loops.h"
#include "transforms/gpu/plan_workers.h"

namespace plait {
namespace {

using namespace ir;

Var var(const std::string& name, ScalarType t) {
  return std::make_shared<VarInfo>(VarInfo{name, t, {}, false});
}
ArrayVar arr(const std::string& name, ScalarKind dtype, int ndim = 1) {
  return std::make_shared<ArrayInfo>(ArrayInfo{name, ArrayType{dtype, ndim, Layout::C}, {}, true});
}
Expr vref(const Var& v) {
  return VarRef::make(v);
}
Expr i64(int64_t v) {
  return IntImm::make(v, ScalarType::i64());
}
SourceLoc at(int line) {
  return SourceLoc{line, 4, line, 5};
}
LoopSchedule schedule(LoopKind kind, std::vector<Reduction> reductions = {}) {
  LoopSchedule s;
  s.kind = kind;
  s.reductions = std::move(reductions);
  return s;
}
Function function(const std::string& name, std::vector<Param> params, std::vector<Stmt> body) {
  Function f;
  f.name = name;
  f.source.path = "/tmp/kernels.py";
  f.params = std::move(params);
  f.body = Block::make(std::move(body));
  return f;
}

// The CUDA sources of `f` after the passes the CUDA pipeline ends with,
// which plan the workers and the persistent kernels the emitter prints.
codegen::CudaSources generate(Function f, const CompileOptions& options = {}) {
  transforms::gpu::plan_workers(f, options.cuda_launch);
  transforms::gpu::plan_persistent_loops(f);
  return codegen::generate_cuda(f, options);
}

// a[k] // b[k] on int64, which raises ZeroDivisionError where b[k] is 0.
Expr floor_div(const ArrayVar& a, const ArrayVar& b, const Expr& k) {
  return Binary::make(BinaryOp::FloorDiv, Load::make(a, {k}), Load::make(b, {k}), ScalarType::i64(), true);
}

// The device part through NVRTC for sm_90; skipped where NVRTC is missing.
void expect_nvrtc_compiles(const std::string& device_source) {
  std::string why;
  if (!jit::cuda::nvrtc(&why)) GTEST_SKIP() << why;
  jit::DeviceBuild build = jit::compile_device_code(device_source, 90, false, CompileOptions{});
  EXPECT_FALSE(build.cubin.empty());
}

// The text of kernel `name` in `device`, from its name to the next kernel.
std::string kernel_text(const std::string& device, const std::string& name) {
  const size_t begin = device.find(" " + name + "(");
  EXPECT_NE(begin, std::string::npos) << name;
  const size_t end = device.find("extern \"C\" __global__", begin);
  return device.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

TEST(CodegenCuda, KernelsTestTheErrorRecordAtTheirEntryAndBackEdges) {
  // parallel i: out[i] = a[i] // b[i]: four iterations per thread, whose
  // values come before their stores; a thread that raised leaves the kernel
  // before it stores anything more.
  ArrayVar a = arr("a", ScalarKind::Int64), b = arr("b", ScalarKind::Int64), out = arr("out", ScalarKind::Int64);
  Var i = var("i", ScalarType::i64());
  Stmt loop = For::make(i, i64(0), ArrayDim::make(out, 0), i64(1),
                        Block::make({Store::make(out, {vref(i)}, floor_div(a, b, vref(i)), false, at(3))}),
                        schedule(LoopKind::Parallel), at(2));
  codegen::CudaSources out_src =
      generate(function("div", {{nullptr, a}, {nullptr, b}, {nullptr, out}}, {loop}), CompileOptions{});
  EXPECT_TRUE(out_src.device_errors);
  const std::string kernel = kernel_text(out_src.device, "plait_div_k0");
  const size_t entry = kernel.find("  if (plait::stopped(p_err)) return;  // an error stops the call\n");
  ASSERT_NE(entry, std::string::npos) << kernel;
  EXPECT_LT(entry, kernel.find("p_total"));
  EXPECT_NE(kernel.find("p_k0 = plait::stopped(p_err) ? p_total : p_k0 + p_stride) {"), std::string::npos) << kernel;
  const size_t stop = kernel.find("if (plait::stopped(p_err)) return;\n");  // after the batch's values
  ASSERT_NE(stop, std::string::npos) << kernel;
  EXPECT_LT(kernel.find("plait::floordiv_checked"), stop);
  EXPECT_LT(stop, kernel.find("a_out_data["));
  expect_nvrtc_compiles(out_src.device);
}

TEST(CodegenCuda, KernelsWhoseThreadsWaitForEachOtherTestTheRecordOncePerBlockOrTeam) {
  // parallel i: s = sum of m[i, :]; out[i] = s: a team per row (its threads
  // combine their sums), and reductions across the loop would shuffle too.
  ArrayVar m = arr("m", ScalarKind::Float64, 2), out = arr("out", ScalarKind::Float64);
  Var i = var("i", ScalarType::i64()), j = var("j", ScalarType::i64()), s = var("s", ScalarType::f64());
  Stmt inner = For::make(
      j, i64(0), ArrayDim::make(m, 1), i64(1),
      Block::make({Assign::make(
          s, Binary::make(BinaryOp::Add, vref(s), Load::make(m, {vref(i), vref(j)}), ScalarType::f64()), at(6))}),
      schedule(LoopKind::Vectorized, {{s, ReduceOp::Add}}), at(5));
  Stmt loop = For::make(i, i64(0), ArrayDim::make(m, 0), i64(1),
                        Block::make({Assign::make(s, FloatImm::make(0.0, ScalarType::f64()), at(3)), inner,
                                     Store::make(out, {vref(i)}, vref(s), false, at(7))}),
                        schedule(LoopKind::Parallel), at(2));
  codegen::CudaSources src = generate(function("rowsum", {{nullptr, m}, {nullptr, out}}, {loop}), CompileOptions{});
  const std::string kernel = kernel_text(src.device, "plait_rowsum_k0");
  EXPECT_NE(kernel.find("  if (plait::block_stopped(p_err)) return;  // an error stops the call\n"), std::string::npos)
      << kernel;
  EXPECT_EQ(kernel.find("if (plait::stopped(p_err)) return;"), std::string::npos);
  EXPECT_NE(kernel.find("p_k = plait::team_stopped(p_err, p_team) ? p_total : p_k + p_stride) {"), std::string::npos);
  // team_stopped's votes and named barrier compile.
  expect_nvrtc_compiles(src.device);

  EXPECT_FALSE(codegen::cuda::threads_wait("  out[i] = a[i] + b[i];\n"));
  for (const char* waits : {"__syncthreads();", "plait::team_sync(p_team);", "plait::reduce_add(p_acc0, v_s);",
                            "plait::team_combine(v_s, plait::op_add(), p_team, p_partials)", "__shfl_down_sync(",
                            "p_k = plait::team_stopped(p_err, p_team) ? p_total : p_k + p_stride"})
    EXPECT_TRUE(codegen::cuda::threads_wait(waits)) << waits;
}

TEST(CodegenCuda, KernelsWhoseDeviceCodeMayRaiseAreMarked) {
  // parallel i: b[i] = a[i] // c[i]; parallel j: a[j] = b[j]. Only the
  // first kernel may record an error: a call that launches none such
  // returns without waiting for the record (jit/cuda_runtime).
  ArrayVar a = arr("a", ScalarKind::Int64), b = arr("b", ScalarKind::Int64), c = arr("c", ScalarKind::Int64);
  Var i = var("i", ScalarType::i64()), j = var("j", ScalarType::i64());
  Stmt divide = For::make(i, i64(0), ArrayDim::make(a, 0), i64(1),
                          Block::make({Store::make(b, {vref(i)}, floor_div(a, c, vref(i)), false, at(3))}),
                          schedule(LoopKind::Parallel), at(2));
  Stmt copy = For::make(j, i64(0), ArrayDim::make(a, 0), i64(1),
                        Block::make({Store::make(a, {vref(j)}, Load::make(b, {vref(j)}), false, at(5))}),
                        schedule(LoopKind::Parallel), at(4));
  codegen::CudaSources src =
      generate(function("mixed", {{nullptr, a}, {nullptr, b}, {nullptr, c}}, {divide, copy}), CompileOptions{});
  EXPECT_TRUE(src.device_errors);
  ASSERT_EQ(src.kernel_raises.size(), src.kernel_names.size());
  size_t raising = 0;
  for (size_t k = 0; k < src.kernel_names.size(); ++k) {
    const bool divides = kernel_text(src.device, src.kernel_names[k]).find("floordiv_checked") != std::string::npos;
    EXPECT_EQ(src.kernel_raises[k], divides) << src.kernel_names[k];
    raising += divides ? 1 : 0;
  }
  EXPECT_GE(raising, 1u);
  EXPECT_LT(raising, src.kernel_names.size());
}

TEST(CodegenCuda, PersistentKernelsLeaveTogetherAtTheGridBarrierAfterAnError) {
  // for t in range(steps): parallel i: b[i] = a[i] // c[i]; parallel i: a[i] = b[i]
  ArrayVar a = arr("a", ScalarKind::Int64), b = arr("b", ScalarKind::Int64), c = arr("c", ScalarKind::Int64);
  Var steps = var("steps", ScalarType::i64()), t = var("t", ScalarType::i64()), i = var("i", ScalarType::i64());
  Stmt divide = For::make(i, i64(0), ArrayDim::make(a, 0), i64(1),
                          Block::make({Store::make(b, {vref(i)}, floor_div(a, c, vref(i)), false, at(4))}),
                          schedule(LoopKind::Parallel), at(3));
  Stmt copy = For::make(i, i64(0), ArrayDim::make(a, 0), i64(1),
                        Block::make({Store::make(a, {vref(i)}, Load::make(b, {vref(i)}), false, at(6))}),
                        schedule(LoopKind::Parallel), at(5));
  Stmt time = For::make(t, i64(0), vref(steps), i64(1), Block::make({divide, copy}), schedule(LoopKind::Serial), at(2));
  codegen::CudaSources src = generate(
      function("steps", {{steps, nullptr}, {nullptr, a}, {nullptr, b}, {nullptr, c}}, {time}), CompileOptions{});
  ASSERT_GE(src.kernel_names.size(), 3u);
  ASSERT_EQ(src.kernel_names[1], "plait_steps_k0_onchip");
  ASSERT_EQ(src.kernel_names[2], "plait_steps_k0_registers");
  const std::string persistent = kernel_text(src.device, "plait_steps_k0");
  // The entry and each loop's barrier: every block takes the same answer.
  const std::string test = "if (plait::grid_sync(p_barrier, p_err)) return;";
  const size_t entry = persistent.find(test);
  ASSERT_NE(entry, std::string::npos) << persistent;
  EXPECT_LT(entry, persistent.find("for (int64_t p_step = 0;"));
  const size_t first = persistent.find(test, entry + 1);
  ASSERT_NE(first, std::string::npos) << persistent;
  EXPECT_NE(persistent.find(test, first + 1), std::string::npos);
  EXPECT_EQ(persistent.find("plait::grid_sync(p_barrier);"), std::string::npos);
  // Within a loop, the thread that raised stores nothing and leaves its
  // iteration (its own record of having raised); its later iterations, and
  // other threads' next ones, do not start.
  EXPECT_NE(persistent.find("if (p_errs.raised) goto p_stop"), std::string::npos) << persistent;
  EXPECT_NE(persistent.find(", p_k = plait::stopped(p_err) ?"), std::string::npos);
  // One block: tested before the arrays are copied on chip or into
  // registers, and once per step in registers (no barrier after its loops).
  const std::string onchip = kernel_text(src.device, "plait_steps_k0_onchip");
  EXPECT_LT(onchip.find("if (plait::block_stopped(p_err)) return;"), onchip.find("p_onchip_at"));
  const std::string registers = kernel_text(src.device, "plait_steps_k0_registers");
  const size_t registers_entry = registers.find("if (plait::block_stopped(p_err)) return;");
  ASSERT_NE(registers_entry, std::string::npos) << registers;
  EXPECT_NE(registers.find("if (plait::block_stopped(p_err)) return;", registers_entry + 1), std::string::npos);
  expect_nvrtc_compiles(src.device);
}

// A stand-in for the GPU whose copies to the host report an error that
// device code recorded, as the runtime's copy_to_host does.
int g_launches = 0;
int g_copies = 0;
int32_t count_launch(plait_context*, int32_t, uint32_t, uint32_t, void**) {
  ++g_launches;
  return 0;
}
int32_t failed_copy_to_host(plait_context* ctx, void* dst, const void*, uint64_t bytes) {
  ++g_copies;
  std::memset(dst, 0, bytes);
  ctx->error_kind = PLAIT_ZERO_DIVISION_ERROR;
  ctx->error_line = 3;
  return 1;
}
int32_t no_copy_to_device(plait_context*, void*, const void*, uint64_t) {
  return 0;
}
int32_t no_zero(plait_context*, void*, uint64_t) {
  return 0;
}
void* no_alloc(plait_context*, uint64_t) {
  return nullptr;
}
void no_free(void*) {}

TEST(CodegenCuda, OneDeviceThreadStopsItsLoopAtTheFailingStatement) {
  // while a[0] < 10: a[0] = a[0] // b[0], in one device thread: the store
  // comes after the test, which leaves the loop too.
  ArrayVar a = arr("a", ScalarKind::Int64), b = arr("b", ScalarKind::Int64);
  Stmt body = Block::make({Store::make(a, {i64(0)}, floor_div(a, b, i64(0)), false, at(3))});
  Stmt loop = While::make(Compare::make(CompareOp::LT, Load::make(a, {i64(0)}), i64(10)), body, at(2));
  codegen::CudaSources src = generate(function("spin", {{nullptr, a}, {nullptr, b}}, {loop}), {});
  const std::string region = kernel_text(src.device, "plait_spin_k0");
  EXPECT_NE(region.find("if (plait::stopped(p_err)) return;  // an error stops the call"), std::string::npos);
  EXPECT_NE(region.find("plait::floordiv_checked<int64_t>(a_a_data[int64_t(0)], a_b_data[int64_t(0)], &p_errs"),
            std::string::npos);
  const size_t stop = region.find("if (p_errs.raised) goto p_stop");
  ASSERT_NE(stop, std::string::npos) << region;
  EXPECT_LT(stop, region.rfind("a_a_data["));         // the store
  EXPECT_NE(region.find(":;\n"), std::string::npos);  // the label, after the loop
  expect_nvrtc_compiles(src.device);
}

TEST(CodegenCuda, HostLoopsStopAtTheFirstCopyThatReportsADeviceError) {
  // while a[0] < 10: parallel i: a[i] = a[i] // b[i]: the condition reads
  // the GPU's memory on the host.
  ArrayVar a = arr("a", ScalarKind::Int64), b = arr("b", ScalarKind::Int64);
  Var i = var("i", ScalarType::i64());
  Stmt grow = For::make(i, i64(0), ArrayDim::make(a, 0), i64(1),
                        Block::make({Store::make(a, {vref(i)}, floor_div(a, b, vref(i)), false, at(4))}),
                        schedule(LoopKind::Parallel), at(3));
  Stmt loop = While::make(Compare::make(CompareOp::LT, Load::make(a, {i64(0)}), i64(10)), Block::make({grow}), at(2));
  codegen::CudaSources src = generate(function("spin", {{nullptr, a}, {nullptr, b}}, {loop}), {});
  EXPECT_NE(src.host.find("while (true) {"), std::string::npos) << src.host;

  const std::string dir = ::testing::TempDir() + "plait_codegen_cuda_stops_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/spin.cpp") << src.host;
  jit::Toolchain tc = jit::host_toolchain(CompileOptions{});
  for (const char* flag : {"-Wall", "-Wextra", "-Werror"}) tc.flags.push_back(flag);
  jit::build_shared_library(tc, dir + "/spin.cpp", dir + "/spin.so", dir + "/spin.log");
  std::shared_ptr<LoadedLibrary> library = LoadedLibrary::open(dir + "/spin.so");
  auto entry = reinterpret_cast<plait_entry_fn>(library->symbol(PLAIT_ENTRY_SYMBOL));
  std::vector<unsigned char> scratch(PLAIT_CUDA_SCRATCH_BYTES);
  plait_cuda_api api{};
  api.launch = &count_launch;
  api.alloc = &no_alloc;
  api.free = &no_free;
  api.copy_to_device = &no_copy_to_device;
  api.copy_to_host = &failed_copy_to_host;
  api.zero = &no_zero;
  api.scratch = scratch.data();
  plait_context ctx{};
  std::memset(&ctx, 0, sizeof ctx);
  ctx.num_threads = 1;
  ctx.cuda = &api;
  std::vector<int64_t> a_data(4), b_data(4);
  plait_array views[2] = {};
  views[0].data = a_data.data();
  views[1].data = b_data.data();
  for (plait_array& v : views) {
    v.shape[0] = 4;
    v.strides[0] = 1;
  }
  void* args[] = {&views[0], &views[1]};
  plait_result results[1];
  // The condition's copy reports the error: the loop does not run its body
  // (the value read, 0, would keep it going).
  EXPECT_EQ(entry(args, results, &ctx), PLAIT_ZERO_DIVISION_ERROR);
  EXPECT_EQ(g_copies, 1);
  EXPECT_EQ(g_launches, 0);
  EXPECT_EQ(ctx.error_line, 3);
}

}  // namespace
}  // namespace plait
