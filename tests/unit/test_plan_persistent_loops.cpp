// The plans that transforms/gpu/plan_persistent_loops records on the time
// loops of the CUDA target: which run as one persistent kernel, with their
// barriers, versions and sizing, which do not and why, and the emitter's
// refusal to print a time loop nobody planned.
#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda/codegen_cuda.h"
#include "driver/compiler.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"
#include "transforms/gpu/plan_persistent_loops.h"
#include "transforms/gpu/plan_workers.h"

namespace plait {
namespace {

using transforms::gpu::PersistentLoopPlan;

ir::Function lower(const std::string& text, const std::string& signature) {
  SourceFile source;
  source.path = "persistent.py";
  source.text = text;
  source.first_line = 1;
  CompileOptions options;
  options.target = Target::CUDA;
  options.boundscheck = false;
  return lower_kernel(source, "k", Signature::parse(signature), {}, options).function;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The plan recorded on the first loop of `f` that has one, or null.
const PersistentLoopPlan* persistent_plan(const ir::Function& f) {
  struct Finder : ir::IRVisitor {
    const PersistentLoopPlan* plan = nullptr;
    using IRVisitor::visit;
    void visit(const ir::For* n) override {
      if (!plan) plan = transforms::gpu::persistent_loop_plan(n);
      IRVisitor::visit(n);
    }
  } finder;
  finder.visit(f.body);
  return finder.plan;
}

// jacobi_1d: two sweeps per step, each reading what the other wrote.
const char* const kJacobi =
    "def k(a, b, T):\n"
    "    for t in range(T):\n"
    "        #pragma parallel for\n"
    "        for i in range(1, a.shape[0] - 1):\n"
    "            b[i] = (a[i - 1] + a[i + 1]) * 0.5\n"
    "        #pragma parallel for\n"
    "        for i in range(1, a.shape[0] - 1):\n"
    "            a[i] = (b[i - 1] + b[i + 1]) * 0.5\n";

TEST(PlanPersistentLoops, AStencilTimeLoopRunsAsOnePersistentKernel) {
  const ir::Function f = lower(kJacobi, "f64[::1], f64[::1], int");
  const PersistentLoopPlan* plan = persistent_plan(f);
  ASSERT_NE(plan, nullptr);
  EXPECT_TRUE(plan->runs_persistent()) << plan->refusal;
  // The second sweep reads the elements next to those the first wrote.
  EXPECT_TRUE(plan->barriers.not_needed.empty());
  EXPECT_FALSE(plan->step_may_raise);
  // Both arrays on chip, and in registers: 12 float64 of each per thread.
  EXPECT_TRUE(plan->onchip);
  ASSERT_TRUE(plan->registers.has_value()) << plan->no_registers;
  ASSERT_EQ(plan->registers->arrays.size(), 2U);
  EXPECT_EQ(plan->registers->arrays[0]->name, "a");
  EXPECT_EQ(plan->registers->slots, 12);
  // The host counts both sweeps' iterations from the extents.
  ASSERT_TRUE(plan->sizing.has_value());
  int counted = 0;
  for (const transforms::gpu::SizingAction& action : *plan->sizing) counted += action.count != nullptr;
  EXPECT_EQ(counted, 2);
  const std::string text = ir::to_string(f);
  EXPECT_TRUE(contains(text, "plan(one persistent kernel, on chip, `a`, `b` in registers (12 per thread)")) << text;
}

// A scalar that the host reads after the loop keeps the loop's steps on the
// host: the plan says so, and the emitter's remark gives the plan's reason.
TEST(PlanPersistentLoops, AScalarReadAfterTheLoopRefusesIt) {
  const ir::Function f = lower(
      "def k(a, out, T):\n"
      "    c = 0.0\n"
      "    for t in range(T):\n"
      "        #pragma parallel for\n"
      "        for i in range(a.shape[0]):\n"
      "            a[i] = a[i] * 0.5\n"
      "        c = t * 0.5\n"
      "    out[0] = c\n",
      "f64[::1], f64[::1], int");
  const PersistentLoopPlan* plan = persistent_plan(f);
  ASSERT_NE(plan, nullptr);
  const std::string why =
      "`c` is assigned in the loop body and read after the loop or in the next step (the host needs its value)";
  EXPECT_EQ(plan->refusal, why);
  EXPECT_FALSE(plan->registers.has_value());
  EXPECT_TRUE(contains(ir::to_string(f), "plan(not one persistent kernel: " + why + ")"));
  std::string remarks;
  for (const ir::Remark& r : codegen::generate_cuda(f, CompileOptions{}).remarks) remarks += r.message + "\n";
  EXPECT_TRUE(contains(remarks, "serial loop over `t` (line 3) does not run as one persistent kernel: " + why))
      << remarks;
}

// A reduction's value goes to the host after each step.
TEST(PlanPersistentLoops, AReductionInAStepRefusesIt) {
  const ir::Function f = lower(
      "def k(a, out, T):\n"
      "    for t in range(T):\n"
      "        s = 0.0\n"
      "        #pragma parallel for\n"
      "        for i in range(a.shape[0]):\n"
      "            s += a[i]\n"
      "        #pragma parallel for\n"
      "        for i in range(a.shape[0]):\n"
      "            a[i] = a[i] - s\n",
      "f64[::1], f64[::1], int");
  const PersistentLoopPlan* plan = persistent_plan(f);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(plan->refusal, "the parallel loop at line 5 has a reduction, whose value goes to the host after each step");
}

// The emitter prints the recorded plan: a time loop without one is the
// compiler's error, not a kernel decided on the spot.
TEST(PlanPersistentLoops, TheEmitterNeedsThePlan) {
  using namespace ir;
  ArrayVar a = std::make_shared<ArrayInfo>(ArrayInfo{"a", ArrayType{ScalarKind::Float64, 1, Layout::C}, {}, true});
  Var t = std::make_shared<VarInfo>(VarInfo{"t", ScalarType::i64(), {}, false});
  Var i = std::make_shared<VarInfo>(VarInfo{"i", ScalarType::i64(), {}, false});
  LoopSchedule parallel;
  parallel.kind = LoopKind::Parallel;
  Function f;
  f.name = "k";
  f.params = {Param{nullptr, a}};
  const Stmt sweep =
      For::make(i, IntImm::make(0, ScalarType::i64()), ArrayDim::make(a, 0), IntImm::make(1, ScalarType::i64()),
                Store::make(a, {VarRef::make(i)}, FloatImm::make(1.0, ScalarType::f64())), parallel);
  f.body = Block::make({For::make(t, IntImm::make(0, ScalarType::i64()), IntImm::make(8, ScalarType::i64()),
                                  IntImm::make(1, ScalarType::i64()), Block::make({sweep}), LoopSchedule{})});
  transforms::gpu::plan_workers(f, CompileOptions{}.cuda_launch);
  try {
    codegen::generate_cuda(f, CompileOptions{});
    ADD_FAILURE() << "a time loop without a plan";
  } catch (const InternalError& e) {
    EXPECT_TRUE(
        contains(e.what(), "has no plan for a persistent kernel: transforms/gpu/plan_persistent_loops must run"))
        << e.what();
  }
  transforms::gpu::plan_persistent_loops(f);
  std::string remarks;
  for (const Remark& r : codegen::generate_cuda(f, CompileOptions{}).remarks) remarks += r.message + "\n";
  EXPECT_TRUE(contains(remarks, "all steps in one persistent CUDA kernel")) << remarks;
}

}  // namespace
}  // namespace plait
