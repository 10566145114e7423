// Tests of the CPU code generator: IR functions built by hand are planned
// (transforms/cpu/plan_omp_loops, whose plans the emitter prints) and turned
// into C++, compiled with the host toolchain (warnings are errors), loaded,
// run through the kernel ABI, and their results checked.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "codegen/cpu/codegen_cpp.h"
#include "codegen/runtime_text.h"
#include "ir/ir.h"
#include "jit/loader.h"
#include "jit/toolchain.h"
#include "runtime/abi.h"
#include "transforms/cpu/plan_omp_loops.h"

namespace plait {
namespace {

using namespace ir;

Var var(const std::string& name, ScalarType t, bool param = false) {
  return std::make_shared<VarInfo>(VarInfo{name, t, {}, param});
}
ArrayVar arr(const std::string& name, ScalarKind dtype, int ndim, Layout layout, bool param = true) {
  return std::make_shared<ArrayInfo>(ArrayInfo{name, ArrayType{dtype, ndim, layout}, {}, param});
}
Expr vref(const Var& v) { return VarRef::make(v); }
Expr i64(int64_t v) { return IntImm::make(v, ScalarType::i64()); }
Expr bin(BinaryOp op, Expr a, Expr b, bool zc = false) {
  ScalarType t = a->type;
  return Binary::make(op, a, b, t, zc);
}
SourceLoc at(int line, int col = 4) { return SourceLoc{line, col, line, col + 1}; }
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
  f.source.path = "/tmp/kernels \"q\".py";
  f.params = std::move(params);
  f.body = Block::make(std::move(body));
  f.results = std::move(results);
  return f;
}

struct Kernel {
  std::shared_ptr<LoadedLibrary> library;
  plait_entry_fn entry = nullptr;
  std::string source;

  // Runs the kernel with `threads` threads; returns the error kind.
  int32_t run(std::vector<void*> args, plait_result* results, plait_context* ctx, int threads = 2) const {
    std::memset(ctx, 0, sizeof *ctx);
    ctx->num_threads = threads;
    return entry(args.data(), results, ctx);
  }
};

Kernel build(const Function& f) {
  // Unloading the last kernel would unload libgomp while its worker threads
  // still run; keep it resident for the whole test process.
  static void* const openmp_runtime = ::dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
  (void)openmp_runtime;
  Kernel k;
  Function planned = f;
  transforms::cpu::plan_omp_loops(planned);
  k.source = codegen::generate_cpp(planned, CompileOptions{});
  const std::string dir = ::testing::TempDir() + "plait_codegen_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string base = dir + "/" + f.name;
  std::ofstream(base + ".cpp") << k.source;
  jit::Toolchain tc = jit::host_toolchain(CompileOptions{});
  for (const char* flag : {"-Wall", "-Wextra", "-Werror"}) tc.flags.push_back(flag);
  jit::build_shared_library(tc, base + ".cpp", base + ".so", base + ".log");
  k.library = LoadedLibrary::open(base + ".so");
  k.entry = reinterpret_cast<plait_entry_fn>(k.library->symbol(PLAIT_ENTRY_SYMBOL));
  auto abi = reinterpret_cast<plait_abi_fn>(k.library->symbol(PLAIT_ABI_SYMBOL));
  EXPECT_NE(k.entry, nullptr);
  EXPECT_NE(abi, nullptr);
  if (abi) {
    EXPECT_EQ(abi(), PLAIT_ABI_VERSION);
  }
  return k;
}

template <typename T>
plait_array view1(std::vector<T>& v) {
  plait_array a{};
  a.data = v.data();
  a.shape[0] = static_cast<int64_t>(v.size());
  a.strides[0] = 1;
  return a;
}

// out[i] = a[i] + b[i] over C-layout float64 arrays, in a parallel loop.
TEST(CodegenCpu, VectorAdd) {
  ArrayVar a = arr("a", ScalarKind::Float64, 1, Layout::C), b = arr("b", ScalarKind::Float64, 1, Layout::C),
           out = arr("out", ScalarKind::Float64, 1, Layout::C);
  Var i = var("i", ScalarType::i64());
  Stmt loop = For::make(i, i64(0), ArrayDim::make(out, 0), i64(1),
                        Block::make({Store::make(out, {vref(i)},
                                                 bin(BinaryOp::Add, Load::make(a, {vref(i)}), Load::make(b, {vref(i)})),
                                                 false, at(3))}),
                        schedule(LoopKind::Parallel), at(2));
  Kernel k = build(function("vadd", {{nullptr, a}, {nullptr, b}, {nullptr, out}}, {Declare::make(i), loop}));
  EXPECT_NE(k.source.find("#pragma omp parallel for schedule(static) num_threads(ctx->num_threads)"), std::string::npos);
  EXPECT_NE(k.source.find("#line 3 \"/tmp/kernels \\\"q\\\".py\""), std::string::npos);
  // The unit stride of a C array is the constant 1: the index is plain.
  EXPECT_NE(k.source.find("a_out_data[v_i] = (a_a_data[v_i] + a_b_data[v_i]);"), std::string::npos);

  const size_t n = 100003;
  std::vector<double> x(n), y(n), z(n, -1.0);
  for (size_t j = 0; j < n; ++j) {
    x[j] = static_cast<double>(j);
    y[j] = 0.5 * static_cast<double>(j);
  }
  plait_array ax = view1(x), ay = view1(y), az = view1(z);
  plait_context ctx{};
  ASSERT_EQ(k.run({&ax, &ay, &az}, nullptr, &ctx), PLAIT_OK);
  for (size_t j = 0; j < n; j += 997) EXPECT_DOUBLE_EQ(z[j], 1.5 * static_cast<double>(j));
  EXPECT_DOUBLE_EQ(z[n - 1], 1.5 * static_cast<double>(n - 1));
}

// s = 0; parallel simd for i in range(n): s += a[i]; return s, i (i keeps its last value).
TEST(CodegenCpu, ParallelReductionAndLoopVariable) {
  ArrayVar a = arr("a", ScalarKind::Float64, 1, Layout::C);
  Var n = var("n", ScalarType::py_int(), true), s = var("s", ScalarType::f64()), i = var("i", ScalarType::i64());
  Stmt loop = For::make(i, i64(0), vref(n), i64(1),
                        Block::make({Assign::make(s, bin(BinaryOp::Add, vref(s), Load::make(a, {vref(i)})))}),
                        schedule(LoopKind::ParallelVectorized, {{s, ReduceOp::Add}}));
  Kernel k = build(function("psum", {{nullptr, a}, {n, nullptr}},
                            {Declare::make(s), Assign::make(s, FloatImm::make(0.0, ScalarType::f64())),
                             Declare::make(i), Assign::make(i, i64(-1)), loop,
                             Return::make({{vref(s), nullptr}, {vref(i), nullptr}})},
                            {ValueType::of(ScalarType::f64()), ValueType::of(ScalarType::i64())}));
  EXPECT_NE(k.source.find("reduction(+: v_s)"), std::string::npos);
  EXPECT_NE(k.source.find("#pragma omp parallel for simd schedule(static)"), std::string::npos);
  EXPECT_NE(k.source.find(" if(parallel: "), std::string::npos);

  std::vector<double> x(1 << 20);
  std::iota(x.begin(), x.end(), 0.0);
  plait_array ax = view1(x);
  for (int64_t count : {int64_t(1 << 20), int64_t(10), int64_t(0)}) {
    plait_result r[2];
    plait_context ctx{};
    ASSERT_EQ(k.run({&ax, &count}, r, &ctx, 4), PLAIT_OK);
    EXPECT_EQ(r[0].dtype, PLAIT_FLOAT64);
    EXPECT_EQ(r[0].is_array, 0);
    EXPECT_DOUBLE_EQ(r[0].f64, static_cast<double>(count) * static_cast<double>(count - 1) / 2);
    EXPECT_EQ(r[1].dtype, PLAIT_INT64);
    EXPECT_EQ(r[1].i64, count > 0 ? count - 1 : -1);  // range(0) leaves i alone
  }
}

// A vector loop with a reduction: dot product over float32 arrays.
TEST(CodegenCpu, SimdDot) {
  ArrayVar a = arr("a", ScalarKind::Float32, 1, Layout::C), b = arr("b", ScalarKind::Float32, 1, Layout::C);
  Var s = var("s", ScalarType::f32()), i = var("i", ScalarType::i64());
  LoopSchedule sc = schedule(LoopKind::Vectorized, {{s, ReduceOp::Add}});
  sc.simd_width = 8;
  Stmt loop = For::make(
      i, i64(0), ArrayDim::make(a, 0), i64(1),
      Block::make({Assign::make(s, bin(BinaryOp::Add, vref(s), bin(BinaryOp::Mul, Load::make(a, {vref(i)}), Load::make(b, {vref(i)}))))}),
      sc);
  Kernel k = build(function("dot", {{nullptr, a}, {nullptr, b}},
                            {Declare::make(s), Assign::make(s, FloatImm::make(0.0, ScalarType::f32())), loop,
                             Return::make({{vref(s), nullptr}})},
                            {ValueType::of(ScalarType::f32())}));
  EXPECT_NE(k.source.find("#pragma omp simd simdlen(8) reduction(+: v_s)"), std::string::npos);
  std::vector<float> x(1000, 0.5f), y(1000);
  for (size_t j = 0; j < y.size(); ++j) y[j] = static_cast<float>(j % 7);
  plait_array ax = view1(x), ay = view1(y);
  plait_result r[1];
  plait_context ctx{};
  ASSERT_EQ(k.run({&ax, &ay}, r, &ctx), PLAIT_OK);
  double expected = 0;
  for (size_t j = 0; j < y.size(); ++j) expected += 0.5 * y[j];
  EXPECT_EQ(r[0].dtype, PLAIT_FLOAT32);
  EXPECT_DOUBLE_EQ(r[0].f64, expected);
}

// parallel for i in range(len(v)): atomic hist[v[i]] += 1 ; and a float atomic max.
TEST(CodegenCpu, AtomicHistogramAndMax) {
  ArrayVar v = arr("v", ScalarKind::Int64, 1, Layout::C), hist = arr("hist", ScalarKind::Int64, 1, Layout::C),
           w = arr("w", ScalarKind::Float64, 1, Layout::C), top = arr("top", ScalarKind::Float64, 1, Layout::C);
  Var i = var("i", ScalarType::i64());
  Stmt loop = For::make(
      i, i64(0), ArrayDim::make(v, 0), i64(1),
      Block::make({AtomicUpdate::make(hist, {Load::make(v, {vref(i)})}, AtomicOp::Add, i64(1)),
                   AtomicUpdate::make(top, {i64(0)}, AtomicOp::Max, Load::make(w, {vref(i)})),
                   AtomicUpdate::make(top, {i64(1)}, AtomicOp::Add, Load::make(w, {vref(i)}))}),
      schedule(LoopKind::Parallel));
  Kernel k = build(function("hist", {{nullptr, v}, {nullptr, hist}, {nullptr, w}, {nullptr, top}}, {loop}));
  const size_t n = 200000;
  std::vector<int64_t> values(n), counts(10, 0);
  std::vector<double> weights(n);
  for (size_t j = 0; j < n; ++j) {
    values[j] = static_cast<int64_t>((j * 7) % 10);
    weights[j] = static_cast<double>((j * 17) % 1001);
  }
  std::vector<double> out{-1.0, 0.0};
  plait_array av = view1(values), ah = view1(counts), aw = view1(weights), at_ = view1(out);
  plait_context ctx{};
  ASSERT_EQ(k.run({&av, &ah, &aw, &at_}, nullptr, &ctx, 4), PLAIT_OK);
  for (int64_t c : counts) EXPECT_EQ(c, 20000);
  EXPECT_EQ(out[0], 1000.0);
  double total = 0;
  for (double x : weights) total += x;
  EXPECT_EQ(out[1], total);  // integers: exact in any order
}

// A strided (Any layout) 2-D view: out[i, j] = A[i, j] * 10, with A a
// transposed, every-other-column view.
TEST(CodegenCpu, StridedAnyLayout) {
  ArrayVar a = arr("A", ScalarKind::Float64, 2, Layout::Any), out = arr("out", ScalarKind::Float64, 2, Layout::C);
  Var i = var("i", ScalarType::i64()), j = var("j", ScalarType::i64());
  Stmt inner = For::make(j, i64(0), ArrayDim::make(a, 1), i64(1),
                         Block::make({Store::make(out, {vref(i), vref(j)},
                                                  bin(BinaryOp::Mul, Load::make(a, {vref(i), vref(j)}),
                                                      FloatImm::make(10.0, ScalarType::f64())))}));
  LoopSchedule sc = schedule(LoopKind::Parallel);
  sc.collapse = 2;
  Stmt outer = For::make(i, i64(0), ArrayDim::make(a, 0), i64(1), Block::make({Declare::make(j), inner}), sc);
  Kernel k = build(function("strided", {{nullptr, a}, {nullptr, out}}, {outer}));
  EXPECT_NE(k.source.find("collapse(2)"), std::string::npos);
  EXPECT_NE(k.source.find("a_A_s1"), std::string::npos);
  // base is 6x8 C-order; A = base[:, ::2].T -> shape (4, 6), strides (2, 8).
  std::vector<double> base(48);
  std::iota(base.begin(), base.end(), 0.0);
  plait_array av{};
  av.data = base.data();
  av.shape[0] = 4;
  av.shape[1] = 6;
  av.strides[0] = 2;
  av.strides[1] = 8;
  std::vector<double> res(24, 0.0);
  plait_array ao{};
  ao.data = res.data();
  ao.shape[0] = 4;
  ao.shape[1] = 6;
  ao.strides[0] = 6;
  ao.strides[1] = 1;
  plait_context ctx{};
  ASSERT_EQ(k.run({&av, &ao}, nullptr, &ctx), PLAIT_OK);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) EXPECT_EQ(res[static_cast<size_t>(r * 6 + c)], 10.0 * (c * 8 + r * 2)) << r << "," << c;
}

// q[i] = a[i] // b[i]; r[i] = a[i] % b[i] for ints and floats; Python's
// rounding toward -inf, NumPy's 0 for integer division by zero.
TEST(CodegenCpu, FloorDivAndModOfNegatives) {
  ArrayVar a = arr("a", ScalarKind::Int64, 1, Layout::C), b = arr("b", ScalarKind::Int64, 1, Layout::C),
           q = arr("q", ScalarKind::Int64, 1, Layout::C), r = arr("r", ScalarKind::Int64, 1, Layout::C),
           fa = arr("fa", ScalarKind::Float64, 1, Layout::C), fb = arr("fb", ScalarKind::Float64, 1, Layout::C),
           fq = arr("fq", ScalarKind::Float64, 1, Layout::C), fr = arr("fr", ScalarKind::Float64, 1, Layout::C);
  Var i = var("i", ScalarType::i64());
  Stmt loop = For::make(
      i, i64(0), ArrayDim::make(a, 0), i64(1),
      Block::make({Store::make(q, {vref(i)}, bin(BinaryOp::FloorDiv, Load::make(a, {vref(i)}), Load::make(b, {vref(i)}))),
                   Store::make(r, {vref(i)}, bin(BinaryOp::Mod, Load::make(a, {vref(i)}), Load::make(b, {vref(i)}))),
                   Store::make(fq, {vref(i)}, bin(BinaryOp::FloorDiv, Load::make(fa, {vref(i)}), Load::make(fb, {vref(i)}))),
                   Store::make(fr, {vref(i)}, bin(BinaryOp::Mod, Load::make(fa, {vref(i)}), Load::make(fb, {vref(i)})))}));
  Kernel k = build(function("divmod", {{nullptr, a}, {nullptr, b}, {nullptr, q}, {nullptr, r},
                                      {nullptr, fa}, {nullptr, fb}, {nullptr, fq}, {nullptr, fr}},
                            {loop}));
  std::vector<int64_t> x{7, -7, 7, -7, 5, INT64_MIN}, y{2, 2, -2, -2, 0, -1}, xq(6), xr(6);
  std::vector<double> fx{7.5, -7.5, 7.5, -7.5, 1.0, -0.0}, fy{2.0, 2.0, -2.0, -2.0, 0.0, 3.0}, yq(6), yr(6);
  plait_array v[8] = {view1(x), view1(y), view1(xq), view1(xr), view1(fx), view1(fy), view1(yq), view1(yr)};
  plait_context ctx{};
  ASSERT_EQ(k.run({&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]}, nullptr, &ctx), PLAIT_OK);
  EXPECT_EQ(xq, (std::vector<int64_t>{3, -4, -4, 3, 0, INT64_MIN}));
  EXPECT_EQ(xr, (std::vector<int64_t>{1, 1, -1, -1, 0, 0}));
  EXPECT_EQ(yq[0], 3.0);
  EXPECT_EQ(yq[1], -4.0);
  EXPECT_EQ(yq[2], -4.0);
  EXPECT_EQ(yq[3], 3.0);
  EXPECT_TRUE(std::isinf(yq[4]));
  EXPECT_EQ(yr[0], 1.5);
  EXPECT_EQ(yr[1], 0.5);
  EXPECT_EQ(yr[2], -0.5);
  EXPECT_EQ(yr[3], -1.5);
  EXPECT_TRUE(std::isnan(yr[4]));
  EXPECT_EQ(yq[5], -0.0);
  EXPECT_TRUE(std::signbit(yq[5]));
  EXPECT_EQ(yr[5], 0.0);
  EXPECT_FALSE(std::signbit(yr[5]));
}

// out = np.zeros(n); for i in range(n - 1, -1, -1): out[i] = i * i; return out
TEST(CodegenCpu, AllocationIsReturned) {
  Var n = var("n", ScalarType::py_int(), true), i = var("i", ScalarType::i64());
  ArrayVar out = arr("out", ScalarKind::Float64, 1, Layout::C, false);
  Stmt loop = For::make(i, bin(BinaryOp::Sub, vref(n), i64(1)), i64(-1), i64(-1),
                        Block::make({Store::make(out, {vref(i)}, Cast::make(ScalarType::f64(), bin(BinaryOp::Mul, vref(i), vref(i))))}));
  Kernel k = build(function("squares", {{n, nullptr}},
                            {Allocate::make(out, {vref(n)}, FillKind::Zeros, nullptr, at(2)), loop,
                             Return::make({{nullptr, out}})},
                            {ValueType::of(ArrayType{ScalarKind::Float64, 1, Layout::C})}));
  int64_t count = 1000;
  plait_result r[1];
  plait_context ctx{};
  ASSERT_EQ(k.run({&count}, r, &ctx), PLAIT_OK);
  ASSERT_EQ(r[0].is_array, 1);
  EXPECT_EQ(r[0].ndim, 1);
  EXPECT_EQ(r[0].dtype, PLAIT_FLOAT64);
  EXPECT_EQ(r[0].array.shape[0], 1000);
  EXPECT_EQ(r[0].array.strides[0], 1);
  ASSERT_NE(r[0].owner, nullptr);
  ASSERT_NE(r[0].release, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r[0].array.data) % 64, 0u);
  const double* d = static_cast<const double*>(r[0].array.data);
  EXPECT_EQ(d[0], 0.0);
  EXPECT_EQ(d[999], 999.0 * 999.0);
  r[0].release(r[0].owner);

  count = -3;
  EXPECT_EQ(k.run({&count}, r, &ctx), PLAIT_VALUE_ERROR);
  EXPECT_STREQ(ctx.error_message, "negative dimensions are not allowed");
  EXPECT_EQ(ctx.error_line, 2);
}

// A checked load out of bounds raises IndexError with NumPy's message and
// the node's position; the first error wins.
TEST(CodegenCpu, CheckedLoadRaisesIndexError) {
  ArrayVar a = arr("a", ScalarKind::Int32, 1, Layout::C);
  Var k = var("k", ScalarType::py_int(), true), x = var("x", ScalarType::i32());
  Kernel kern = build(function(
      "getitem", {{nullptr, a}, {k, nullptr}},
      {Declare::make(x), Assign::make(x, Load::make(a, {vref(k)}, true, at(5, 11)), at(5)),
       Store::make(a, {bin(BinaryOp::Add, vref(k), i64(1))}, IntImm::make(9, ScalarType::i32()), true, at(6, 2)),
       Return::make({{vref(x), nullptr}})},
      {ValueType::of(ScalarType::i32())}));
  std::vector<int32_t> v{10, 11, 12, 13, 14};
  plait_array av = view1(v);
  plait_result r[1];
  plait_context ctx{};
  int64_t index = 3;
  ASSERT_EQ(kern.run({&av, &index}, r, &ctx), PLAIT_OK);
  EXPECT_EQ(r[0].i64, 13);
  EXPECT_EQ(r[0].dtype, PLAIT_INT32);
  EXPECT_EQ(v[4], 9);
  index = 7;
  EXPECT_EQ(kern.run({&av, &index}, r, &ctx), PLAIT_INDEX_ERROR);
  EXPECT_STREQ(ctx.error_message, "index 7 is out of bounds for axis 0 with size 5");
  EXPECT_EQ(ctx.error_line, 5);
  EXPECT_EQ(ctx.error_col, 11);
  index = 4;  // the load is fine, the store to a[5] is not
  EXPECT_EQ(kern.run({&av, &index}, r, &ctx), PLAIT_INDEX_ERROR);
  EXPECT_STREQ(ctx.error_message, "index 5 is out of bounds for axis 0 with size 5");
  EXPECT_EQ(ctx.error_line, 6);
}

// Python-scalar errors: x / y with zero_check, int(nan), math.log(0.0), int ** negative.
TEST(CodegenCpu, ScalarErrors) {
  Var x = var("x", ScalarType::py_float(), true), y = var("y", ScalarType::py_float(), true),
      m = var("m", ScalarType::py_int(), true);
  Expr quotient = Binary::make(BinaryOp::Div, vref(x), vref(y), ScalarType::py_float(), true, at(2));
  Expr as_int = Cast::make(ScalarType::py_int(), vref(x), true, at(3));
  Expr log = Call::make(Intrinsic::Log, {vref(y)}, ScalarType::py_float(), true, at(4));
  Expr power = Binary::make(BinaryOp::Pow, vref(m), vref(m), ScalarType::py_int(), false, at(5));
  Kernel k = build(function("errors", {{x, nullptr}, {y, nullptr}, {m, nullptr}},
                            {Return::make({{quotient, nullptr}, {as_int, nullptr}, {log, nullptr}, {power, nullptr}})},
                            {ValueType::of(ScalarType::py_float()), ValueType::of(ScalarType::py_int()),
                             ValueType::of(ScalarType::py_float()), ValueType::of(ScalarType::py_int())}));
  plait_result r[4];
  plait_context ctx{};
  double fx = 7.9, fy = 2.0;
  int64_t im = 3;
  ASSERT_EQ(k.run({&fx, &fy, &im}, r, &ctx), PLAIT_OK);
  EXPECT_DOUBLE_EQ(r[0].f64, 3.95);
  EXPECT_EQ(r[1].i64, 7);
  EXPECT_DOUBLE_EQ(r[2].f64, std::log(2.0));
  EXPECT_EQ(r[3].i64, 27);

  fy = 0.0;
  EXPECT_EQ(k.run({&fx, &fy, &im}, r, &ctx), PLAIT_ZERO_DIVISION_ERROR);
  EXPECT_STREQ(ctx.error_message, "float division by zero");
  EXPECT_EQ(ctx.error_line, 2);

  fx = std::nan("");
  fy = 1.0;
  EXPECT_EQ(k.run({&fx, &fy, &im}, r, &ctx), PLAIT_VALUE_ERROR);
  EXPECT_STREQ(ctx.error_message, "cannot convert float NaN to integer");

  fx = 1.0;
  fy = -1.0;
  EXPECT_EQ(k.run({&fx, &fy, &im}, r, &ctx), PLAIT_VALUE_ERROR);
  EXPECT_STREQ(ctx.error_message, "math domain error");
  EXPECT_EQ(ctx.error_line, 4);

  fy = 1.0;
  im = -2;
  EXPECT_EQ(k.run({&fx, &fy, &im}, r, &ctx), PLAIT_VALUE_ERROR);
  EXPECT_STREQ(ctx.error_message, "Integers to negative integer powers are not allowed.");
  EXPECT_EQ(ctx.error_line, 5);
}

// The host runtime text holds the portable runtime once, in place of its
// #include, and the formats of the messages it raises by number.
TEST(CodegenCpu, HostRuntimeTextHoldsThePortableRuntimeAndTheMessages) {
  const std::string& text = codegen::host_runtime_text();
  EXPECT_EQ(text.find("#include \"portable_runtime.h\""), std::string::npos);
  const size_t traits = text.find("struct traits<double> {");
  ASSERT_NE(traits, std::string::npos);
  EXPECT_EQ(text.find("struct traits<double> {", traits + 1), std::string::npos);
  EXPECT_NE(text.find("  msg_math_domain_error = 13,\n"), std::string::npos);
  EXPECT_NE(text.find("    \"index %lld is out of bounds for axis %lld with size %lld\",\n"), std::string::npos);
}

// Min/Max, Python min/max, shifts, float->int casts, round-half-even, bools.
TEST(CodegenCpu, ScalarSemantics) {
  Var x = var("x", ScalarType::f64(), true), y = var("y", ScalarType::f64(), true), s = var("s", ScalarType::i64(), true);
  std::vector<Expr> values{
      Binary::make(BinaryOp::Max, vref(x), vref(y), ScalarType::f64()),
      Binary::make(BinaryOp::PyMax, vref(y), vref(x), ScalarType::f64()),
      Binary::make(BinaryOp::PyMin, vref(x), vref(y), ScalarType::f64()),
      Binary::make(BinaryOp::Shl, i64(1), vref(s), ScalarType::i64()),
      Binary::make(BinaryOp::Shr, i64(-256), vref(s), ScalarType::i64()),
      Cast::make(ScalarType::i32(), vref(x)),
      Call::make(Intrinsic::Round, {vref(y)}, ScalarType::f64()),
      Cast::make(ScalarType::b1(), vref(x)),
  };
  std::vector<ReturnValue> rv;
  std::vector<ValueType> types;
  for (const Expr& e : values) {
    rv.push_back({e, nullptr});
    types.push_back(ValueType::of(e->type));
  }
  Kernel k = build(function("scalars", {{x, nullptr}, {y, nullptr}, {s, nullptr}}, {Return::make(rv)}, types));
  plait_result r[8];
  plait_context ctx{};
  double fx = std::nan(""), fy = 2.5;
  int64_t shift = 4;
  ASSERT_EQ(k.run({&fx, &fy, &shift}, r, &ctx), PLAIT_OK);
  EXPECT_TRUE(std::isnan(r[0].f64));  // np.maximum propagates NaN
  EXPECT_EQ(r[1].f64, 2.5);           // max(2.5, nan): nan > 2.5 is false
  EXPECT_TRUE(std::isnan(r[2].f64));  // min(nan, 2.5) keeps the first argument
  EXPECT_EQ(r[3].i64, 16);
  EXPECT_EQ(r[4].i64, -16);
  EXPECT_EQ(r[5].i64, INT32_MIN);  // NaN -> int: x86's value, not UB
  EXPECT_EQ(r[6].f64, 2.0);        // round half to even
  EXPECT_EQ(r[7].b, 1);            // bool(nan) is True
  shift = 70;
  fx = -3.7;
  ASSERT_EQ(k.run({&fx, &fy, &shift}, r, &ctx), PLAIT_OK);
  EXPECT_EQ(r[3].i64, 0);
  EXPECT_EQ(r[4].i64, -1);
  EXPECT_EQ(r[5].i64, -3);
}

// Serial control flow: k = 0; c = 0; while True: k += 1; if k % 2 == 0:
// continue; if k > 9: break; c += k. Returns (k, c) = (11, 1+3+5+7+9).
TEST(CodegenCpu, WhileBreakContinue) {
  Var k = var("k", ScalarType::i64()), c = var("c", ScalarType::i64());
  Stmt body = Block::make({
      Assign::make(k, bin(BinaryOp::Add, vref(k), i64(1))),
      If::make(Compare::make(CompareOp::EQ, bin(BinaryOp::Mod, vref(k), i64(2)), i64(0)), Block::make({Continue::make()})),
      If::make(Compare::make(CompareOp::GT, vref(k), i64(9)), Block::make({Break::make()}),
               Block::make({Assign::make(c, bin(BinaryOp::Add, vref(c), vref(k)))})),
  });
  Kernel kern = build(function("loops", {},
                               {Declare::make(k), Declare::make(c), Assign::make(k, i64(0)), Assign::make(c, i64(0)),
                                While::make(BoolImm::make(true), body), Return::make({{vref(k), nullptr}, {vref(c), nullptr}})},
                               {ValueType::of(ScalarType::i64()), ValueType::of(ScalarType::i64())}));
  plait_result r[2];
  plait_context ctx{};
  ASSERT_EQ(kern.run({}, r, &ctx), PLAIT_OK);
  EXPECT_EQ(r[0].i64, 11);
  EXPECT_EQ(r[1].i64, 25);
}

// math.exp overflowing is an OverflowError; 0.0 ** -1.0 on Python floats a
// ZeroDivisionError.
TEST(CodegenCpu, MathRangeError) {
  Var x = var("x", ScalarType::py_float(), true);
  Expr e = Call::make(Intrinsic::Exp, {vref(x)}, ScalarType::py_float(), true, at(3));
  Expr p = Binary::make(BinaryOp::Pow, vref(x), FloatImm::make(-1.0), ScalarType::py_float(), true, at(4));
  Kernel k = build(function("mathrange", {{x, nullptr}}, {Return::make({{e, nullptr}, {p, nullptr}})},
                            {ValueType::of(ScalarType::py_float()), ValueType::of(ScalarType::py_float())}));
  plait_result r[2];
  plait_context ctx{};
  double v = 2.0;
  ASSERT_EQ(k.run({&v}, r, &ctx), PLAIT_OK);
  EXPECT_DOUBLE_EQ(r[0].f64, std::exp(2.0));
  EXPECT_DOUBLE_EQ(r[1].f64, 0.5);
  v = 1000.0;
  EXPECT_EQ(k.run({&v}, r, &ctx), PLAIT_OVERFLOW_ERROR);
  EXPECT_STREQ(ctx.error_message, "math range error");
  EXPECT_EQ(ctx.error_line, 3);
  v = 0.0;
  EXPECT_EQ(k.run({&v}, r, &ctx), PLAIT_ZERO_DIVISION_ERROR);
  EXPECT_STREQ(ctx.error_message, "0.0 cannot be raised to a negative power");
}

// A parallel loop cannot be left early: the lowering must not produce one.
TEST(CodegenCpu, ParallelLoopWithBreakIsAnInternalError) {
  Var i = var("i", ScalarType::i64());
  Stmt loop = For::make(i, i64(0), i64(10), i64(1), Block::make({Break::make()}), schedule(LoopKind::Parallel));
  EXPECT_THROW(codegen::generate_cpp(function("bad", {}, {loop}), CompileOptions{}), InternalError);
}

}  // namespace
}  // namespace plait
