// Tests of the CUDA code generator without a GPU: IR built by hand is turned
// into a host part and a device part; the device part compiles with NVRTC
// for sm_90 (when NVRTC is installed), the host part with the system compiler
// (warnings are errors) and runs against a recording plait_cuda_api that
// stands in for the GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "codegen/cuda/codegen_cuda.h"
#include "codegen/cuda/device_runtime.h"
#include "ir/ir.h"
#include "jit/cuda_driver.h"
#include "jit/cuda_runtime.h"
#include "jit/loader.h"
#include "jit/toolchain.h"
#include "runtime/abi.h"
#include "runtime/device_errors.h"
#include "transforms/gpu/plan_persistent_loops.h"
#include "transforms/gpu/plan_workers.h"

namespace plait {
namespace {

using namespace ir;

Var var(const std::string& name, ScalarType t) { return std::make_shared<VarInfo>(VarInfo{name, t, {}, false}); }
ArrayVar arr(const std::string& name, ScalarKind dtype) {
  return std::make_shared<ArrayInfo>(ArrayInfo{name, ArrayType{dtype, 1, Layout::C}, {}, true});
}
Expr vref(const Var& v) { return VarRef::make(v); }
Expr i64(int64_t v) { return IntImm::make(v, ScalarType::i64()); }
SourceLoc at(int line) { return SourceLoc{line, 4, line, 5}; }
LoopSchedule schedule(LoopKind kind, std::vector<Reduction> reductions = {}) {
  LoopSchedule s;
  s.kind = kind;
  s.reductions = std::move(reductions);
  return s;
}
Function function(const std::string& name, std::vector<Param> params, std::vector<Stmt> body,
                  std::vector<ValueType> results = {}) {
  Function f;
  f.name = name;
  f.source.path = "/tmp/kernels.py";
  f.params = std::move(params);
  f.body = Block::make(std::move(body));
  f.results = std::move(results);
  return f;
}

// The CUDA sources of `f` after the passes the CUDA pipeline ends with,
// which plan the workers and the persistent kernels the emitter prints.
codegen::CudaSources generate(Function f, const CompileOptions& options = {}) {
  transforms::gpu::plan_workers(f, options.cuda_launch);
  transforms::gpu::plan_persistent_loops(f);
  return codegen::generate_cuda(f, options);
}

// out[i] = a[i] + b[i] over a parallel loop.
Function vector_add() {
  ArrayVar a = arr("a", ScalarKind::Float64), b = arr("b", ScalarKind::Float64), out = arr("out", ScalarKind::Float64);
  Var i = var("i", ScalarType::i64());
  Stmt loop = For::make(i, i64(0), ArrayDim::make(out, 0), i64(1),
                        Block::make({Store::make(out, {vref(i)},
                                                 Binary::make(BinaryOp::Add, Load::make(a, {vref(i)}),
                                                              Load::make(b, {vref(i)}), ScalarType::f64()),
                                                 false, at(3))}),
                        schedule(LoopKind::Parallel), at(2));
  return function("vadd", {{nullptr, a}, {nullptr, b}, {nullptr, out}}, {loop});
}

// total = 10; parallel: total += x[i]; return total
Function sum() {
  ArrayVar x = arr("x", ScalarKind::Float64);
  Var i = var("i", ScalarType::i64()), total = var("total", ScalarType::f64());
  Stmt loop = For::make(i, i64(0), ArrayDim::make(x, 0), i64(1),
                        Block::make({Assign::make(total, Binary::make(BinaryOp::Add, vref(total),
                                                                      Load::make(x, {vref(i)}), ScalarType::f64()),
                                                  at(4))}),
                        schedule(LoopKind::Parallel, {{total, ReduceOp::Add}}), at(3));
  return function("sum", {{nullptr, x}},
                  {Declare::make(total), Assign::make(total, FloatImm::make(10.0, ScalarType::f64()), at(2)), loop,
                   Return::make({ReturnValue{vref(total), nullptr}}, at(5))},
                  {ValueType::of(ScalarType::f64())});
}

// parallel: #pragma atomic hist[x[i] % 8] += 1
Function histogram() {
  ArrayVar x = arr("x", ScalarKind::Int32), hist = arr("hist", ScalarKind::Int32);
  Var i = var("i", ScalarType::i64());
  Expr bin = Cast::make(ScalarType::i64(), Binary::make(BinaryOp::Mod, Load::make(x, {vref(i)}),
                                                        IntImm::make(8, ScalarType::i32()), ScalarType::i32()));
  Stmt loop = For::make(i, i64(0), ArrayDim::make(x, 0), i64(1),
                        Block::make({AtomicUpdate::make(hist, {bin}, AtomicOp::Add, IntImm::make(1, ScalarType::i32()),
                                                        false, at(4))}),
                        schedule(LoopKind::Parallel), at(2));
  return function("hist", {{nullptr, x}, {nullptr, hist}}, {loop});
}

// parallel i: s = 0; simd reduction(+: s) j: s += m[i, j]; out[i] = s
Function row_sums() {
  ArrayVar m = std::make_shared<ArrayInfo>(ArrayInfo{"m", ArrayType{ScalarKind::Float64, 2, Layout::C}, {}, true});
  ArrayVar out = arr("out", ScalarKind::Float64);
  Var i = var("i", ScalarType::i64()), j = var("j", ScalarType::i64()), s = var("s", ScalarType::f64());
  Stmt inner = For::make(j, i64(0), ArrayDim::make(m, 1), i64(1),
                         Block::make({Assign::make(s, Binary::make(BinaryOp::Add, vref(s),
                                                                   Load::make(m, {vref(i), vref(j)}), ScalarType::f64()),
                                                   at(6))}),
                         schedule(LoopKind::Vectorized, {{s, ReduceOp::Add}}), at(5));
  Stmt loop = For::make(i, i64(0), ArrayDim::make(m, 0), i64(1),
                        Block::make({Assign::make(s, FloatImm::make(0.0, ScalarType::f64()), at(3)), inner,
                                     Store::make(out, {vref(i)}, vref(s), false, at(7))}),
                        schedule(LoopKind::Parallel), at(2));
  return function("rowsum", {{nullptr, m}, {nullptr, out}}, {loop});
}

// parallel i: s = sum of m[i, :] (simd reduction); simd j: out[i, j] = m[i, j] * s
// (`m` is kept in registers between the two spread loops).
Function row_scaled_by_sum() {
  ArrayVar m = std::make_shared<ArrayInfo>(ArrayInfo{"m", ArrayType{ScalarKind::Float32, 2, Layout::C}, {}, true});
  ArrayVar out = std::make_shared<ArrayInfo>(ArrayInfo{"out", ArrayType{ScalarKind::Float32, 2, Layout::C}, {}, true});
  Var i = var("i", ScalarType::i64()), j = var("j", ScalarType::i64()), k = var("k", ScalarType::i64()),
      s = var("s", ScalarType::f32());
  Stmt sum = For::make(j, i64(0), ArrayDim::make(m, 1), i64(1),
                       Block::make({Assign::make(s, Binary::make(BinaryOp::Add, vref(s),
                                                                 Load::make(m, {vref(i), vref(j)}), ScalarType::f32()),
                                                 at(5))}),
                       schedule(LoopKind::Vectorized, {{s, ReduceOp::Add}}), at(4));
  Stmt scale = For::make(k, i64(0), ArrayDim::make(m, 1), i64(1),
                         Block::make({Store::make(out, {vref(i), vref(k)},
                                                  Binary::make(BinaryOp::Mul, Load::make(m, {vref(i), vref(k)}),
                                                               vref(s), ScalarType::f32()),
                                                  false, at(7))}),
                         schedule(LoopKind::Vectorized), at(6));
  Stmt loop = For::make(i, i64(0), ArrayDim::make(m, 0), i64(1),
                        Block::make({Assign::make(s, FloatImm::make(0.0, ScalarType::f32()), at(3)), sum, scale}),
                        schedule(LoopKind::Parallel), at(2));
  return function("rowscale", {{nullptr, m}, {nullptr, out}}, {loop});
}

// for t in range(steps): parallel i in [1, n - 1): b[i] = a[i - 1] + a[i + 1];
//                        parallel i in [1, n - 1): a[i] = b[i]
// and, with `host_scalar`, `count = count + 1` in each step (count is
// declared before the loop, so the host needs its value).
Function time_loop(bool host_scalar) {
  ArrayVar a = arr("a", ScalarKind::Float64), b = arr("b", ScalarKind::Float64);
  Var steps = var("steps", ScalarType::i64()), t = var("t", ScalarType::i64()), i = var("i", ScalarType::i64()),
      count = var("count", ScalarType::i64());
  Expr end = Binary::make(BinaryOp::Sub, ArrayDim::make(a, 0), i64(1), ScalarType::i64());
  Stmt sweep = For::make(i, i64(1), end, i64(1),
                         Block::make({Store::make(b, {vref(i)},
                                                  Binary::make(BinaryOp::Add,
                                                               Load::make(a, {Binary::make(BinaryOp::Sub, vref(i), i64(1),
                                                                                           ScalarType::i64())}),
                                                               Load::make(a, {Binary::make(BinaryOp::Add, vref(i), i64(1),
                                                                                           ScalarType::i64())}),
                                                               ScalarType::f64()),
                                                  false, at(4))}),
                         schedule(LoopKind::Parallel), at(3));
  Stmt copy = For::make(i, i64(1), end, i64(1), Block::make({Store::make(a, {vref(i)}, Load::make(b, {vref(i)}), false, at(6))}),
                        schedule(LoopKind::Parallel), at(5));
  std::vector<Stmt> step = {sweep, copy};
  if (host_scalar) step.push_back(Assign::make(count, Binary::make(BinaryOp::Add, vref(count), i64(1), ScalarType::i64()), at(7)));
  Stmt loop = For::make(t, i64(0), vref(steps), i64(1), Block::make(step), schedule(LoopKind::Serial), at(2));
  if (!host_scalar) return function("steps", {{steps, nullptr}, {nullptr, a}, {nullptr, b}}, {loop});
  return function("counted", {{steps, nullptr}, {nullptr, a}, {nullptr, b}},
                  {Declare::make(count), Assign::make(count, i64(0), at(1)), loop,
                   Return::make({ReturnValue{vref(count), nullptr}}, at(8))},
                  {ValueType::of(ScalarType::i64())});
}

// parallel i: simd j: out[i, j] = min(out[i, j], m[i, j]) (a relaxation,
// run as a collapsed nest).
Function relaxed_rows() {
  ArrayVar m = std::make_shared<ArrayInfo>("m", ArrayType{ScalarKind::Float32, 2, Layout::C}, SourceLoc{}, true);
  ArrayVar out = std::make_shared<ArrayInfo>("out", ArrayType{ScalarKind::Float32, 2, Layout::C}, SourceLoc{}, true);
  Var i = var("i", ScalarType::i64()), j = var("j", ScalarType::i64());
  Expr relaxed = Binary::make(BinaryOp::Min, Load::make(out, {vref(i), vref(j)}), Load::make(m, {vref(i), vref(j)}),
                              ScalarType::f32());
  Stmt inner = For::make(j, i64(0), ArrayDim::make(m, 1), i64(1),
                         Block::make({Store::make(out, {vref(i), vref(j)}, relaxed, false, at(4))}),
                         schedule(LoopKind::Vectorized), at(3));
  Stmt loop =
      For::make(i, i64(0), ArrayDim::make(m, 0), i64(1), Block::make({inner}), schedule(LoopKind::Parallel), at(2));
  return function("relaxed", {{nullptr, m}, {nullptr, out}}, {loop});
}

// What the recording API saw.
struct Recorder {
  struct Launch {
    int32_t kernel;
    uint32_t grid, block;
    std::vector<int64_t> words;  // the first parameters, read as 8-byte values
    bool cooperative = false;
    uint64_t shared_bytes = 0;  // launch_shared's
  };
  uint32_t resident_blocks = 264;  // what cooperative_grid and resident_grid answer
  uint64_t l2_bytes = 0;           // the API's l2_bytes
  bool shared_declines = false;    // launch_shared's answer: declined, or launched
  std::vector<Launch> launches;
  std::vector<double> copied_to_device;
  double accumulator_on_device = 0;
};

Recorder* g_recorder = nullptr;

int32_t record_launch(plait_context*, int32_t kernel, uint32_t grid, uint32_t block, void** params) {
  Recorder::Launch launch{kernel, grid, block, {}};
  for (int k = 0; k < 3; ++k) launch.words.push_back(*static_cast<const int64_t*>(params[k]));
  g_recorder->launches.push_back(launch);
  return 0;
}
int32_t record_cooperative_launch(plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, void** params) {
  record_launch(ctx, kernel, grid, block, params);
  g_recorder->launches.back().cooperative = true;
  return 0;
}
int32_t record_shared_launch(plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, uint64_t bytes,
                             void** params) {
  if (g_recorder->shared_declines) return 1;
  record_launch(ctx, kernel, grid, block, params);
  g_recorder->launches.back().shared_bytes = bytes;
  return 0;
}
uint32_t recorded_resident_grid(plait_context*, int32_t, uint32_t) {
  return g_recorder->resident_blocks;
}
void* no_alloc(plait_context*, uint64_t) { return nullptr; }
void no_free(void*) {}
int32_t record_copy_to_device(plait_context*, void*, const void* src, uint64_t bytes) {
  double value = 0;
  std::memcpy(&value, src, bytes < sizeof value ? bytes : sizeof value);
  g_recorder->copied_to_device.push_back(value);
  return 0;
}
int32_t fake_copy_to_host(plait_context*, void* dst, const void*, uint64_t bytes) {
  std::memcpy(dst, &g_recorder->accumulator_on_device, bytes < 8 ? bytes : 8);
  return 0;
}
int32_t no_zero(plait_context*, void*, uint64_t) { return 0; }

struct HostPart {
  std::shared_ptr<LoadedLibrary> library;
  plait_entry_fn entry = nullptr;
};

std::string temp_dir() {
  const std::string dir = ::testing::TempDir() + "plait_codegen_cuda_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

HostPart build_host(const std::string& name, const std::string& source) {
  const std::string base = temp_dir() + "/" + name;
  std::ofstream(base + ".cpp") << source;
  jit::Toolchain tc = jit::host_toolchain(CompileOptions{});
  for (const char* flag : {"-Wall", "-Wextra", "-Werror"}) tc.flags.push_back(flag);
  jit::build_shared_library(tc, base + ".cpp", base + ".so", base + ".log");
  HostPart part;
  part.library = LoadedLibrary::open(base + ".so");
  part.entry = reinterpret_cast<plait_entry_fn>(part.library->symbol(PLAIT_ENTRY_SYMBOL));
  return part;
}

int32_t run_host(const HostPart& part, std::vector<void*> args, plait_result* results, Recorder& recorder) {
  g_recorder = &recorder;
  std::vector<unsigned char> scratch(PLAIT_CUDA_SCRATCH_BYTES);
  plait_cuda_api api{};
  api.launch = &record_launch;
  api.alloc = &no_alloc;
  api.free = &no_free;
  api.copy_to_device = &record_copy_to_device;
  api.copy_to_host = &fake_copy_to_host;
  api.zero = &no_zero;
  api.cooperative_grid = &recorded_resident_grid;
  api.launch_cooperative = &record_cooperative_launch;
  api.launch_shared = &record_shared_launch;
  api.shared_bytes_limit = 227 * 1024;
  api.resident_grid = &recorded_resident_grid;
  api.l2_bytes = recorder.l2_bytes;
  api.scratch = scratch.data();
  plait_context ctx{};
  std::memset(&ctx, 0, sizeof ctx);
  ctx.num_threads = 1;
  ctx.cuda = &api;
  return part.entry(args.data(), results, &ctx);
}

// The device part through NVRTC for sm_90; skipped where NVRTC is missing.
void expect_nvrtc_compiles(const std::string& device_source, const std::vector<std::string>& kernels) {
  std::string why;
  if (!jit::cuda::nvrtc(&why)) GTEST_SKIP() << why;
  jit::DeviceBuild build = jit::compile_device_code(device_source, 90, false, CompileOptions{});
  EXPECT_FALSE(build.cubin.empty());
  EXPECT_EQ(build.arch, "sm_90");
  for (const std::string& name : kernels) EXPECT_NE(build.ptx.find(".entry " + name), std::string::npos) << name;
}

TEST(CodegenCuda, ParallelLoopIsOneKernelLaunchedWithFourIterationsPerThread) {
  codegen::CudaSources out = generate(vector_add(), CompileOptions{});
  ASSERT_EQ(out.kernel_names, std::vector<std::string>{"plait_vadd_k0"});
  EXPECT_FALSE(out.device_errors);
  EXPECT_NE(out.device.find("extern \"C\" __global__ void __launch_bounds__(256) plait_vadd_k0("), std::string::npos);
  // The body is straight-line: each thread computes four iterations, 256
  // apart, before it stores them.
  EXPECT_NE(out.device.find("p_k0 < p_total; p_k0 = plait::stopped(p_err) ? p_total : p_k0 + p_stride) {"),
            std::string::npos);
  EXPECT_NE(out.device.find("= (a_a_data[v_i_u3] + a_b_data[v_i_u3]);"), std::string::npos);
  EXPECT_LT(out.device.find("a_b_data[v_i_u3]"), out.device.find("a_out_data[p_at"));
  EXPECT_NE(out.device.find("#line 3 \"/tmp/kernels.py\""), std::string::npos);

  HostPart host = build_host("vadd", out.host);
  plait_array views[3] = {};
  for (plait_array& v : views) {
    v.shape[0] = 5000;
    v.strides[0] = 1;
  }
  Recorder recorder;
  plait_result results[1];
  EXPECT_EQ(run_host(host, {&views[0], &views[1], &views[2]}, results, recorder), PLAIT_OK);
  ASSERT_EQ(recorder.launches.size(), 1u);
  EXPECT_EQ(recorder.launches[0].kernel, 0);
  EXPECT_EQ(recorder.launches[0].grid, 5u);  // ceil(5000 / (4 * 256))
  EXPECT_EQ(recorder.launches[0].block, 256u);
  EXPECT_EQ(recorder.launches[0].words, (std::vector<int64_t>{0, 1, 5000}));  // begin, step, trip

  // An empty iteration space launches nothing.
  for (plait_array& v : views) v.shape[0] = 0;
  Recorder empty;
  EXPECT_EQ(run_host(host, {&views[0], &views[1], &views[2]}, results, empty), PLAIT_OK);
  EXPECT_TRUE(empty.launches.empty());

  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, ReductionAccumulatesOnTheDeviceFromTheValueBeforeTheLoop) {
  codegen::CudaSources out = generate(sum(), CompileOptions{});
  EXPECT_NE(out.device.find("double v_total = double(0);"), std::string::npos);
  EXPECT_NE(out.device.find("plait::reduce_add(p_acc0, v_total);"), std::string::npos);

  HostPart host = build_host("sum", out.host);
  plait_array x{};
  x.shape[0] = 100000;
  x.strides[0] = 1;
  Recorder recorder;
  recorder.accumulator_on_device = 42.5;
  plait_result results[1] = {};
  EXPECT_EQ(run_host(host, {&x}, results, recorder), PLAIT_OK);
  ASSERT_EQ(recorder.copied_to_device.size(), 1u);
  EXPECT_EQ(recorder.copied_to_device[0], 10.0);  // the accumulator starts at the value before the loop
  ASSERT_EQ(recorder.launches.size(), 1u);
  EXPECT_EQ(recorder.launches[0].grid, 391u);  // ceil(100000 / 256), under the reduction cap
  EXPECT_EQ(results[0].f64, 42.5);             // and the result is read back

  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, AtomicUpdatesUseDeviceAtomics) {
  codegen::CudaSources out = generate(histogram(), CompileOptions{});
  EXPECT_NE(out.device.find("plait::atomic_add<int32_t>(&a_hist_data["), std::string::npos);
  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, WorkerWithAnInnerReductionIsATeamOfThreads) {
  codegen::CudaSources out = generate(row_sums(), CompileOptions{});
  // The inner loop is strided over the team in groups of 4 iterations (one
  // access of the row per group, 32 bytes when aligned), its reduction
  // combined across the team, and the store runs in lane 0 only, with no
  // barrier before it.
  EXPECT_NE(out.device.find("for (int64_t p_g19 = p_lane; p_g19 < p_full14; p_g19 += p_team) {"), std::string::npos) << out.device;
  EXPECT_NE(out.device.find("plait::load_lanes<double, 4>(a_m_data + (v_i * a_m_s0 + "), std::string::npos);
  EXPECT_NE(out.device.find("plait::lanes_aligned<double, 4>(a_m_data + (v_i * a_m_s0 + "), std::string::npos);
  EXPECT_NE(out.device.find("plait::team_combine(v_s, plait::op_add(), p_team, p_part_f64)"), std::string::npos);
  EXPECT_NE(out.device.find("__shared__ __align__(8) double p_part_f64[8];"), std::string::npos);
  EXPECT_NE(out.device.find("if (p_lane == 0) {"), std::string::npos);
  EXPECT_EQ(out.device.find("plait::team_sync(p_team);  //"), std::string::npos);
  bool explained = false;
  for (const Remark& r : out.remarks) explained = explained || r.message.find("one team of threads per iteration") != std::string::npos;
  EXPECT_TRUE(explained);

  HostPart host = build_host("rowsum", out.host);
  plait_array m{}, o{};
  m.shape[0] = 1000;
  m.shape[1] = 8192;
  m.strides[0] = 8192;
  m.strides[1] = 1;
  o.shape[0] = 1000;
  o.strides[0] = 1;
  Recorder long_rows;
  plait_result results[1];
  EXPECT_EQ(run_host(host, {&m, &o}, results, long_rows), PLAIT_OK);
  ASSERT_EQ(long_rows.launches.size(), 1u);
  EXPECT_EQ(long_rows.launches[0].grid, 1000u);  // a team of 256 threads per row
  EXPECT_EQ(long_rows.launches[0].block, 256u);
  m.shape[1] = 50;
  m.strides[0] = 50;
  Recorder short_rows;
  EXPECT_EQ(run_host(host, {&m, &o}, results, short_rows), PLAIT_OK);
  ASSERT_EQ(short_rows.launches.size(), 1u);
  EXPECT_EQ(short_rows.launches[0].grid, 125u);  // a warp per row: 8 rows per block
  // Many rows of 8 elements (2 groups of 4): teams of 2 threads, 128 rows
  // per block; with fewer rows the teams grow to keep 131072 threads busy.
  m.shape[0] = o.shape[0] = 200000;
  m.shape[1] = m.strides[0] = 8;
  Recorder many_rows;
  EXPECT_EQ(run_host(host, {&m, &o}, results, many_rows), PLAIT_OK);
  ASSERT_EQ(many_rows.launches.size(), 1u);
  EXPECT_EQ(many_rows.launches[0].grid, 1563u);
  m.shape[0] = o.shape[0] = 20000;
  Recorder fewer_rows;
  EXPECT_EQ(run_host(host, {&m, &o}, results, fewer_rows), PLAIT_OK);
  ASSERT_EQ(fewer_rows.launches.size(), 1u);
  EXPECT_EQ(fewer_rows.launches[0].grid, 625u);  // teams of 8: 32 rows per block

  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, RelaxationsStoreOnlyChangedElementsAndRowsInL2RunInOneWave) {
  codegen::CudaSources out = generate(relaxed_rows(), CompileOptions{});
  ASSERT_EQ(out.kernel_names.size(), 2u) << out.device;
  EXPECT_EQ(out.kernel_names[1], out.kernel_names[0] + "_rows");
  // Each iteration compares the element it loaded with its new value.
  EXPECT_NE(out.device.find("if (plait::bits_differ("), std::string::npos) << out.device;
  EXPECT_NE(out.device.find("if (p_in1 && plait::bits_differ("), std::string::npos) << out.device;
  bool explained = false;
  for (const Remark& r : out.remarks)
    explained = explained || r.message.find("a thread stores an element only when it changed") != std::string::npos;
  EXPECT_TRUE(explained);

  HostPart host = build_host("relaxed", out.host);
  // 1000 rows of 1000 float32 each (two tiles of 512 a row): 8 MB in all.
  auto grid = [&](uint64_t l2_bytes) -> uint32_t {
    plait_array m{}, o{};
    m.shape[0] = o.shape[0] = 1000;
    m.shape[1] = o.shape[1] = 1000;
    m.strides[0] = o.strides[0] = 1000;
    m.strides[1] = o.strides[1] = 1;
    plait_result results[1];
    Recorder recorder;
    recorder.l2_bytes = l2_bytes;
    EXPECT_EQ(run_host(host, {&m, &o}, results, recorder), PLAIT_OK);
    EXPECT_EQ(recorder.launches.size(), 1u);
    if (recorder.launches.size() != 1u) return 0;
    EXPECT_EQ(recorder.launches[0].kernel, 1);  // the rows version
    return recorder.launches[0].grid;
  };
  EXPECT_EQ(grid(50u << 20), 264u);  // in L2: one wave of the 264 resident blocks, whole rows of tiles
  EXPECT_EQ(grid(4u << 20), 2000u);  // past L2: a block per tile
  EXPECT_EQ(grid(0), 2000u);         // L2 not known

  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, RowsLongerThanTheBlocksRegistersRunInTheWideVersion) {
  codegen::CudaSources out = generate(row_scaled_by_sum(), CompileOptions{});
  // Each with its version for rows that fit in the registers.
  ASSERT_EQ(out.kernel_names.size(), 4u) << out.device;
  EXPECT_EQ(out.kernel_names[1], out.kernel_names[0] + "_wide");
  EXPECT_EQ(out.kernel_names[2], out.kernel_names[0] + "_fit");
  EXPECT_EQ(out.kernel_names[3], out.kernel_names[0] + "_wide_fit");
  EXPECT_NE(out.device.find("__launch_bounds__(512) " + out.kernel_names[1] + "("), std::string::npos);
  EXPECT_NE(out.device.find("p_part_f32[16];"), std::string::npos);  // a partial value per warp of 512 threads
  bool explained = false;
  for (const Remark& r : out.remarks) explained = explained || r.message.find("wide version") != std::string::npos;
  EXPECT_TRUE(explained);

  HostPart host = build_host("rowscale", out.host);
  // One launch for 100 rows of `length` float32: the kernel, its block and one team per row.
  auto expect_launch = [&](int64_t length, int32_t kernel, uint32_t block) {
    plait_array m{}, o{};
    m.shape[0] = o.shape[0] = 100;
    m.shape[1] = o.shape[1] = length;
    m.strides[0] = o.strides[0] = length;
    m.strides[1] = o.strides[1] = 1;
    plait_result results[1];
    Recorder recorder;
    EXPECT_EQ(run_host(host, {&m, &o}, results, recorder), PLAIT_OK);
    ASSERT_EQ(recorder.launches.size(), 1u);
    EXPECT_EQ(recorder.launches[0].kernel, kernel) << length;
    EXPECT_EQ(recorder.launches[0].block, block) << length;
    EXPECT_EQ(recorder.launches[0].grid, 100u) << length;
  };
  // Up to 4096 (16 per thread in registers): a team of the block's 256
  // threads, in the version without the rest when the row is whole groups of 4.
  expect_launch(4095, 0, 256);
  expect_launch(4096, 2, 256);
  // More: the wide version, a team of 512 threads per row (up to 8192 in
  // its registers).
  expect_launch(4097, 1, 512);
  expect_launch(8192, 3, 512);
  expect_launch(8196, 1, 512);

  // A configured largest team, or blocks of 512 already: no wide version.
  CompileOptions capped;
  capped.cuda_launch.max_team = 128;
  EXPECT_EQ(generate(row_scaled_by_sum(), capped).kernel_names.size(), 2u);
  CompileOptions large;
  large.cuda_launch.threads = 512;
  EXPECT_EQ(generate(row_scaled_by_sum(), large).kernel_names.size(), 2u);

  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, AtomicUpdatesOfASmallArrayArePrivatisedInSharedMemory) {
  codegen::CudaSources out = generate(histogram(), CompileOptions{});
  EXPECT_NE(out.device.find("__shared__ __align__(8) int32_t p_private0[2048];"), std::string::npos) << out.device;
  EXPECT_NE(out.device.find("const bool p_privatised = a_hist_n0 <= 2048;"), std::string::npos);
  EXPECT_NE(out.device.find("plait::atomic_add<int32_t>(&p_private0["), std::string::npos);
  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, AllocationInsideAParallelLoopTakesTheWorkersSliceOfOneBuffer) {
  ArrayVar x = arr("x", ScalarKind::Float64);
  ArrayVar tmp = std::make_shared<ArrayInfo>(ArrayInfo{"tmp", ArrayType{ScalarKind::Float64, 1, Layout::C}, {}, false});
  Var i = var("i", ScalarType::i64());
  // tmp = zeros(i + 2): the host takes the largest size over the iterations.
  Stmt alloc = Allocate::make(tmp, {Binary::make(BinaryOp::Add, VarRef::make(i), i64(2), ScalarType::i64())},
                              FillKind::Zeros, nullptr, at(3));
  Stmt loop = For::make(i, i64(0), ArrayDim::make(x, 0), i64(1), Block::make({Declare::make(tmp), alloc}),
                        schedule(LoopKind::Parallel), at(2));
  const codegen::CudaSources out = generate(function("alloc", {{nullptr, x}}, {loop}), CompileOptions{});
  EXPECT_NE(out.device.find("unsigned char* const p_mine = p_temps + "), std::string::npos) << out.device;
  EXPECT_NE(out.device.find("a_tmp_data = reinterpret_cast<double*>(p_mine + "), std::string::npos) << out.device;
  EXPECT_NE(out.device.find("plait::msg_negative_dimensions"), std::string::npos);
  EXPECT_NE(out.host.find("plait_cuda::device_scratch p_temporaries;"), std::string::npos);
  EXPECT_NE(out.host.find("plait_cuda::scratch_for(ctx, p_temporaries, "), std::string::npos) << out.host;
  EXPECT_TRUE(out.device_errors);
  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, TemporaryWhoseShapeTheHostCannotComputeIsACompileError) {
  ArrayVar x = arr("x", ScalarKind::Float64);
  ArrayVar tmp = std::make_shared<ArrayInfo>(ArrayInfo{"tmp", ArrayType{ScalarKind::Float64, 1, Layout::C}, {}, false});
  Var i = var("i", ScalarType::i64());
  Expr element = Cast::make(ScalarType::i64(), Load::make(x, {VarRef::make(i)}));
  Stmt alloc = Allocate::make(tmp, {element}, FillKind::Zeros, nullptr, at(3));
  Stmt loop = For::make(i, i64(0), ArrayDim::make(x, 0), i64(1), Block::make({Declare::make(tmp), alloc}),
                        schedule(LoopKind::Parallel), at(2));
  try {
    generate(function("alloc", {{nullptr, x}}, {loop}), CompileOptions{});
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_NE(std::string(e.what()).find("the shape of `tmp`, allocated inside a parallel loop, must be computable"),
              std::string::npos)
        << e.what();
  }
}

bool has_remark(const codegen::CudaSources& out, const std::string& text) {
  for (const Remark& r : out.remarks)
    if (r.message.find(text) != std::string::npos) return true;
  return false;
}

TEST(CodegenCuda, TimeLoopOfParallelLoopsIsOnePersistentKernelChosenAtRunTime) {
  codegen::CudaSources out = generate(time_loop(false), CompileOptions{});
  // The persistent kernel, its on-chip version, its version with the arrays
  // in registers, then the kernels of the launches per step.
  ASSERT_EQ(out.kernel_names,
            (std::vector<std::string>{"plait_steps_k0", "plait_steps_k0_onchip", "plait_steps_k0_registers",
                                      "plait_steps_k3", "plait_steps_k4"}));
  EXPECT_NE(out.device.find("__launch_bounds__(1024) plait_steps_k0("), std::string::npos) << out.device;
  const std::string persistent = out.device.substr(out.device.find("plait_steps_k0("));
  // At the entry and after each loop.
  const size_t entry = persistent.find("if (plait::grid_sync(p_barrier, p_err)) return;");
  ASSERT_NE(entry, std::string::npos);
  const size_t first = persistent.find("if (plait::grid_sync(p_barrier, p_err)) return;", entry + 1);
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(persistent.find("if (plait::grid_sync(p_barrier, p_err)) return;", first + 1), std::string::npos);
  EXPECT_NE(persistent.find("for (int64_t p_k = p_first; p_k < "), std::string::npos);
  EXPECT_TRUE(has_remark(out, "all steps in one persistent CUDA kernel plait_steps_k0"));

  const std::string onchip = out.device.substr(out.device.find("plait_steps_k0_onchip("));
  EXPECT_NE(onchip.find("extern __shared__ __align__(16) unsigned char p_onchip[];"), std::string::npos) << onchip;
  EXPECT_NE(onchip.find("[&]() {"), std::string::npos);  // the steps, which an assertion's return leaves
  EXPECT_TRUE(has_remark(out, "on copies of the arrays there"));
  EXPECT_TRUE(has_remark(out, "those arrays live in registers instead (12 consecutive elements of each per thread"));

  HostPart host = build_host("steps", out.host);
  // Only the host's overlap test looks at the data pointers (of one block's arrays).
  std::vector<double> a_data(20000), b_data(20000);
  plait_array views[2] = {};
  views[0].data = a_data.data();
  views[1].data = b_data.data();
  auto run = [&](int64_t steps, int64_t n, uint32_t resident, bool shared_declines = false) {
    for (plait_array& v : views) {
      v.shape[0] = n;
      v.strides[0] = 1;
    }
    Recorder recorder;
    recorder.resident_blocks = resident;
    recorder.shared_declines = shared_declines;
    plait_result results[1];
    EXPECT_EQ(run_host(host, {&steps, &views[0], &views[1]}, results, recorder), PLAIT_OK);
    return recorder.launches;
  };
  // At most 4 iterations per thread: one block, the arrays (two of 1000
  // float64) in registers, 12 elements per thread in 84 threads (3 warps),
  // when launch_shared takes it: its shared memory is `a`'s halo buffers, 2
  // phases x (96 + 2) rows x 2 float64...
  std::vector<Recorder::Launch> small = run(5, 1000, 264);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].kernel, 2);
  EXPECT_EQ(small[0].grid, 1u);
  EXPECT_EQ(small[0].block, 96u);
  EXPECT_EQ(small[0].shared_bytes, 2u * 98u * 2u * 8u);
  EXPECT_FALSE(small[0].cooperative);
  EXPECT_EQ(small[0].words, (std::vector<int64_t>{0, 1, 5}));  // the steps: begin, step, trip
  // ... else, with one step, or with one array passed twice: a plain launch.
  for (const std::vector<Recorder::Launch>& plain : {run(5, 1000, 264, true), run(1, 1000, 264)}) {
    ASSERT_EQ(plain.size(), 1u);
    EXPECT_EQ(plain[0].kernel, 0);
    EXPECT_EQ(plain[0].shared_bytes, 0u);
  }
  views[1].data = a_data.data();
  std::vector<Recorder::Launch> aliased = run(5, 1000, 264);
  ASSERT_EQ(aliased.size(), 1u);
  EXPECT_EQ(aliased[0].kernel, 0);
  // Up to 12 x 1024 elements the arrays fit in registers, up to 16
  // iterations per thread the block takes them on chip; without them, past
  // 4 iterations per thread, a cooperative grid.
  std::vector<Recorder::Launch> grid_of_blocks = run(5, 12002, 264);
  views[1].data = b_data.data();
  ASSERT_EQ(grid_of_blocks.size(), 1u);
  EXPECT_TRUE(grid_of_blocks[0].cooperative);
  EXPECT_EQ(grid_of_blocks[0].grid, 12u);
  std::vector<Recorder::Launch> in_registers = run(5, 12288, 264);
  ASSERT_EQ(in_registers.size(), 1u);
  EXPECT_EQ(in_registers[0].kernel, 2);
  EXPECT_EQ(in_registers[0].block, 1024u);
  std::vector<Recorder::Launch> on_chip = run(5, 12289, 264);
  ASSERT_EQ(on_chip.size(), 1u);
  EXPECT_EQ(on_chip[0].kernel, 1);
  EXPECT_EQ(on_chip[0].block, 1024u);
  EXPECT_EQ(on_chip[0].shared_bytes, 2u * 98320u);
  // More: a cooperative grid of the blocks the 100000 iterations need...
  std::vector<Recorder::Launch> medium = run(5, 100002, 264);
  ASSERT_EQ(medium.size(), 1u);
  EXPECT_TRUE(medium[0].cooperative);
  EXPECT_EQ(medium[0].grid, 98u);  // ceil(100000 / 1024)
  // ... at most those resident at once.
  std::vector<Recorder::Launch> capped = run(5, 100002, 40);
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_EQ(capped[0].grid, 40u);
  // Above 4 Mi iterations, or without cooperative launches: two launches per step.
  std::vector<Recorder::Launch> large = run(3, 5000002, 264);
  ASSERT_EQ(large.size(), 6u);
  EXPECT_EQ(large[0].kernel, 3);
  EXPECT_EQ(large[1].kernel, 4);
  EXPECT_FALSE(large[0].cooperative);
  EXPECT_EQ(run(3, 100002, 0).size(), 6u);
  // No steps: nothing.
  EXPECT_TRUE(run(0, 1000, 264).empty());

  expect_nvrtc_compiles(out.device, out.kernel_names);
}

TEST(CodegenCuda, TimeLoopThatNeedsTheHostLaunchesEachStepAndSaysWhy) {
  codegen::CudaSources out = generate(time_loop(true), CompileOptions{});
  EXPECT_EQ(out.kernel_names.size(), 2u);
  EXPECT_EQ(out.device.find("plait::grid_sync("), std::string::npos);
  EXPECT_TRUE(has_remark(out, "serial loop over `t` (line 2) does not run as one "
                              "persistent kernel: `count` is assigned in the loop body and read after the loop or "
                              "in the next step"));
  HostPart host = build_host("counted", out.host);
  plait_array views[2] = {};
  for (plait_array& v : views) {
    v.shape[0] = 100;
    v.strides[0] = 1;
  }
  int64_t steps = 4;
  Recorder recorder;
  plait_result results[1] = {};
  EXPECT_EQ(run_host(host, {&steps, &views[0], &views[1]}, results, recorder), PLAIT_OK);
  EXPECT_EQ(recorder.launches.size(), 8u);
  EXPECT_EQ(results[0].i64, 4);
}

TEST(CodegenCuda, DeviceErrorMessagesAreFormattedOnTheHost) {
  runtime::DeviceErrorRecord record{};
  record.kind = PLAIT_INDEX_ERROR;
  record.message = static_cast<int32_t>(runtime::DeviceMessage::IndexOutOfBounds);
  record.values[0] = 12;
  record.values[1] = 0;
  record.values[2] = 10;
  EXPECT_EQ(runtime::device_error_message(record, {}), "index 12 is out of bounds for axis 0 with size 10");
  record.message = static_cast<int32_t>(runtime::DeviceMessage::MathDomainError);
  EXPECT_EQ(runtime::device_error_message(record, {}), "math domain error");
  record.message = static_cast<int32_t>(runtime::DeviceMessage::PythonIntOutOfInt32);
  record.values[0] = 4294967296;
  EXPECT_EQ(runtime::device_error_message(record, {}), "Python integer 4294967296 out of bounds for int32");
  record.message = static_cast<int32_t>(runtime::DeviceMessage::AssertFailed);
  record.values[0] = 1;
  EXPECT_EQ(runtime::device_error_message(record, {"first", "operands could not be broadcast"}),
            "operands could not be broadcast");
  // The device runtime names the same numbers.
  EXPECT_NE(codegen::cuda::device_runtime_text().find("msg_math_domain_error = 13,"), std::string::npos);
  EXPECT_NE(codegen::cuda::device_runtime_text().find("msg_assert_failed = 24,"), std::string::npos);
  EXPECT_NE(codegen::cuda::device_runtime_text().find("kind_index_error = 1,"), std::string::npos);
  EXPECT_EQ(codegen::cuda::device_runtime_text().find("#include \"portable_runtime.h\""), std::string::npos);
}

}  // namespace
}  // namespace plait
