// The worker plans that transforms/gpu/plan_workers records on the loops the
// CUDA emitter may run as kernels, as the IR's dump shows them, and the
// emitter's refusal to print a kernel nobody planned.
#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda/codegen_cuda.h"
#include "driver/compiler.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

ir::Function lower(const std::string& text, const std::string& signature, CompileOptions options = {}) {
  SourceFile source;
  source.path = "workers.py";
  source.text = text;
  source.first_line = 1;
  Globals globals{{"np", GlobalValue{GlobalValue::Kind::Module, "numpy"}}};
  options.target = Target::CUDA;
  options.boundscheck = false;
  return lower_kernel(source, "k", Signature::parse(signature), globals, options).function;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* const kRowSums =
    "def k(A, out):\n"
    "    #pragma parallel for\n"
    "    for i in range(A.shape[0]):\n"
    "        out[i] = np.sum(A[i, :])\n";

// A row's sum is spread over a team: its loop reads along the row.
TEST(PlanWorkers, ARowSumIsATeamThatSpreadsTheSum) {
  const std::string text = ir::to_string(lower(kRowSums, "f64[:, ::1], f64[::1]"));
  EXPECT_TRUE(contains(text, "parallel for i in range(0:int, A.shape[0], 1:int) plan(kernel: a team per iteration ["))
      << text;
  EXPECT_TRUE(contains(text, ", spread `_r")) << text;
  EXPECT_TRUE(contains(text, "teams of at most 256 threads")) << text;
  // The configured largest team caps it.
  CompileOptions capped;
  capped.cuda_launch.max_team = 64;
  EXPECT_TRUE(contains(ir::to_string(lower(kRowSums, "f64[:, ::1], f64[::1]", capped)), "teams of at most 64 threads"));
}

// The parallel loops of a time loop's step are planned for the persistent
// kernel too, with their own kernels for the steps the host launches.
TEST(PlanWorkers, TheParallelLoopsOfAStepArePlannedForAPersistentKernel) {
  const std::string text =
      ir::to_string(lower("def k(a, b, T):\n"
                          "    for t in range(T):\n"
                          "        #pragma parallel for\n"
                          "        for i in range(1, a.shape[0] - 1):\n"
                          "            b[i] = (a[i - 1] + a[i + 1]) * 0.5\n"
                          "        #pragma parallel for\n"
                          "        for i in range(1, a.shape[0] - 1):\n"
                          "            a[i] = (b[i - 1] + b[i + 1]) * 0.5\n",
                          "f64[::1], f64[::1], int"));
  const std::string both =
      "plan(kernel: one thread per iteration, 4 iterations per thread; in a persistent kernel: one thread per "
      "iteration)";
  EXPECT_NE(text.find(both), text.rfind(both)) << text;
}

// A serial loop whose steps launch reductions runs on one team, its steps
// in step in every thread and the reductions spread over the team.
TEST(PlanWorkers, ASerialLoopOfReductionsRunsOnOneTeam) {
  const std::string text =
      ir::to_string(lower("def k(L, x):\n"
                          "    for i in range(x.shape[0]):\n"
                          "        x[i] = (x[i] - np.sum(L[i, :i] * x[:i])) / L[i, i]\n",
                          "f64[:, ::1], f64[::1]"));
  EXPECT_TRUE(contains(text,
                       "for i in range(0:int, x.shape[0], 1:int) plan(on one team: a team per iteration [in step "
                       "`i` (line 2) ["))
      << text;
  EXPECT_TRUE(contains(text, "spread `_r")) << text;
}

TEST(PlanWorkers, BlockOfAParallelDimensionSetsTheKernelsBlocks) {
  const std::string text =
      ir::to_string(lower("def k(x, y):\n"
                          "    M, N = x.shape\n"
                          "    #pragma :M=>parallel,block(64) :N=>reduce(sum)\n"
                          "    y[:M] = np.sum(x[:M, :N], axis=1)\n",
                          "f64[:, ::1], f64[::1]"));
  EXPECT_TRUE(contains(text, "blocks of 64 threads (block(64) at line 3)")) << text;
  try {
    lower(
        "def k(x, y):\n"
        "    M, N = x.shape\n"
        "    #pragma :M=>parallel,block(100) :N=>reduce(sum)\n"
        "    y[:M] = np.sum(x[:M, :N], axis=1)\n",
        "f64[:, ::1], f64[::1]");
    ADD_FAILURE() << "block(100) compiled";
  } catch (const CompileError& e) {
    EXPECT_TRUE(contains(e.what(), "block(100) of a parallel dimension sets the threads of its CUDA kernel's blocks"))
        << e.what();
  }
}

// The emitter prints the recorded plans: a parallel loop without one is
// the compiler's error, not a kernel planned on the spot.
TEST(PlanWorkers, TheEmitterNeedsThePlan) {
  using namespace ir;
  ArrayVar a = std::make_shared<ArrayInfo>(ArrayInfo{"a", ArrayType{ScalarKind::Float64, 1, Layout::C}, {}, true});
  Var i = std::make_shared<VarInfo>(VarInfo{"i", ScalarType::i64(), {}, false});
  LoopSchedule parallel;
  parallel.kind = LoopKind::Parallel;
  Function f;
  f.name = "k";
  f.params = {Param{nullptr, a}};
  f.body = Block::make(
      {For::make(i, IntImm::make(0, ScalarType::i64()), ArrayDim::make(a, 0), IntImm::make(1, ScalarType::i64()),
                 Store::make(a, {VarRef::make(i)}, FloatImm::make(1.0, ScalarType::f64())), parallel)});
  try {
    codegen::generate_cuda(f, CompileOptions{});
    ADD_FAILURE() << "a kernel without a plan";
  } catch (const InternalError& e) {
    EXPECT_TRUE(contains(e.what(), "has no worker plan: transforms/gpu/plan_workers must run before the emitter")) << e.what();
  }
}

}  // namespace
}  // namespace plait
