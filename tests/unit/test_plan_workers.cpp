// The worker plans that transforms/gpu/plan_workers records on the loops the
// CUDA emitter may run as kernels, as the IR's dump shows them, and the
// emitter's refusal to print a kernel nobody planned.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "codegen/cuda/codegen_cuda.h"
#include "driver/compiler.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"
#include "transforms/gpu/plan_workers.h"

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

// The first loop over `name` in a function.
class LoopOver : public ir::IRVisitor {
 public:
  explicit LoopOver(std::string name) : name_(std::move(name)) {}
  const ir::For* found = nullptr;
  using ir::IRVisitor::visit;

 protected:
  void visit(const ir::For* n) override {
    if (!found && n->var->name == name_) found = n;
    ir::IRVisitor::visit(n);
  }

 private:
  std::string name_;
};

const transforms::gpu::KernelWorkers& kernel_of(const ir::Function& f, const std::string& name) {
  LoopOver loop(name);
  loop.visit(f.body);
  if (!loop.found) throw std::runtime_error("no loop over " + name);
  const transforms::gpu::WorkerLoopPlan* plan = transforms::gpu::worker_loop_plan(loop.found);
  if (!plan || !plan->kernel) throw std::runtime_error("no kernel plan for the loop over " + name);
  return *plan->kernel;
}

// The arrays of the barriers recorded before the statements of a team's
// body, at any depth, by line.
void collect_barriers(const transforms::gpu::WorkerPlan& plan, std::map<int, std::set<std::string>>* out) {
  for (size_t k = 0; k < plan.stmts.size(); ++k) {
    if (!plan.barrier.at(k).empty()) (*out)[plan.stmts[k]->loc.line].insert(plan.barrier[k]);
    if (plan.placement[k] == transforms::gpu::Placement::Nested)
      for (const transforms::gpu::WorkerPlan& sub : plan.nested[k]) collect_barriers(sub, out);
  }
}

std::map<int, std::set<std::string>> barriers_by_line(const transforms::gpu::WorkerPlan& plan) {
  std::map<int, std::set<std::string>> out;
  collect_barriers(plan, &out);
  return out;
}

// A spread loop that reads what another thread's iteration of an earlier
// one wrote waits for it at a barrier, recorded before it; loops that share
// only what they read need none.
TEST(PlanWorkers, ABarrierIsRecordedBetweenSpreadLoopsThatShareAWrittenArray) {
  const std::string signature = "f64[:, ::1], f64[:, ::1], f64[:, ::1]";
  const ir::Function shared = lower(
      "def k(A, B, C):\n"
      "    #pragma parallel for\n"
      "    for i in range(A.shape[0]):\n"
      "        B[i, :] = A[i, :] * 2.0\n"
      "        C[i, 1:] = B[i, :-1] + 1.0\n",
      signature);
  const transforms::gpu::KernelWorkers& written = kernel_of(shared, "i");
  ASSERT_TRUE(written.versions.worker.team);
  const std::map<int, std::set<std::string>> lines = barriers_by_line(written.versions.worker);
  EXPECT_EQ(lines, (std::map<int, std::set<std::string>>{{5, {"B"}}}));
  const ir::Function apart = lower(
      "def k(A, B, C):\n"
      "    #pragma parallel for\n"
      "    for i in range(A.shape[0]):\n"
      "        B[i, :] = A[i, :] * 2.0\n"
      "        C[i, 1:] = A[i, 1:] + 1.0\n",
      signature);
  const transforms::gpu::KernelWorkers& read = kernel_of(apart, "i");
  ASSERT_TRUE(read.versions.worker.team);
  EXPECT_TRUE(barriers_by_line(read.versions.worker).empty());
}

// A team's spread loop whose body holds a loop with fixed bounds runs its
// iterations in pairs, as recorded with the kernel.
TEST(PlanWorkers, ASpreadLoopWithADotProductIsRecordedAsPaired) {
  const ir::Function f = lower(
      "def k(A, B, out):\n"
      "    #pragma parallel for\n"
      "    for i in range(A.shape[0]):\n"
      "        for j in range(B.shape[1]):\n"
      "            s = 0.0\n"
      "            for kk in range(A.shape[1]):\n"
      "                s += A[i, kk] * B[kk, j]\n"
      "            out[i, j] = s\n",
      "f64[:, ::1], f64[:, ::1], f64[:, ::1]");
  const transforms::gpu::KernelWorkers& k = kernel_of(f, "i");
  ASSERT_TRUE(k.versions.worker.team);
  LoopOver j("j");
  j.visit(f.body);
  ASSERT_EQ(k.team_body.paired.count(j.found), 1u);
  EXPECT_EQ(k.team_body.groups.count(j.found), 0u);
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
