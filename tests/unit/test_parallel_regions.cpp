// The CPU's parallel regions (transforms/cpu/plan_parallel_regions.h): which
// serial loops run as one OpenMP region, what the region shares, and why a
// loop does not, checked on the plans the CPU pipeline records.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_visitor.h"
#include "transforms/cpu/plan_parallel_regions.h"

namespace plait {
namespace {

using transforms::cpu::ParallelRegionPlan;

// Each loop's region plan after the CPU pipeline, in program order, as
// "loop variable: plan".
class RegionPlans : public ir::IRVisitor {
 public:
  std::vector<std::string> plans;
  using IRVisitor::visit;
  void visit(const ir::For* n) override {
    if (const auto* plan = n->schedule.plan<ParallelRegionPlan>())
      plans.push_back(n->var->name + ": " + plan->describe());
    IRVisitor::visit(n);
  }
};

std::vector<std::string> region_plans(const std::string& source, const std::string& signature) {
  Globals globals;
  globals["np"].module = "numpy";
  SourceFile file{"k.py", source, 1};
  CompileOptions options;
  options.boundscheck = false;  // a bounds check's copy of a loop would plan regions of its own
  options.verify_ir = true;
  ir::Function f = lower_to_ir(parse_function(file, "k"), file, Signature::parse(signature), globals, options);
  run_pipeline(f, options);
  RegionPlans plans;
  plans.visit(f.body);
  return plans.plans;
}

TEST(ParallelRegions, TimeLoopSharesOneTeamAndItsReductionAccumulator) {
  const std::vector<std::string> plans = region_plans(
      "def k(A, steps):\n"
      "    for t in range(steps):\n"
      "        s = 0.0\n"
      "        #pragma parallel for reduction(+:s)\n"
      "        for i in range(A.shape[0]):\n"
      "            s += A[i]\n"
      "        A[:] = A / (1.0 + s)\n",
      "f64[::1], int");
  ASSERT_EQ(plans.size(), 1U);
  EXPECT_EQ(plans[0], "t: one parallel region for its 2 parallel loop(s), shared: s");
}

TEST(ParallelRegions, LoopThatEndsEarlyKeepsATeamPerParallelLoop) {
  const std::vector<std::string> plans = region_plans(
      "def k(A, steps):\n"
      "    for t in range(steps):\n"
      "        A[:] = A * 0.5\n"
      "        if A[0] > 100.0:\n"
      "            break\n",
      "f64[::1], int");
  ASSERT_EQ(plans.size(), 1U);
  EXPECT_EQ(plans[0], "t: no parallel region: the loop can end early, by a break or a return");
}

TEST(ParallelRegions, RefusedLoopStillPlansTheLoopsInside) {
  const std::vector<std::string> plans = region_plans(
      "def k(A, steps):\n"
      "    for t in range(steps):\n"
      "        for u in range(steps):\n"
      "            A[:] = A * 0.5\n"
      "        if A[0] > 100.0:\n"
      "            break\n",
      "f64[::1], int");
  ASSERT_EQ(plans.size(), 2U);
  EXPECT_EQ(plans[0], "t: no parallel region: the loop can end early, by a break or a return");
  EXPECT_EQ(plans[1], "u: one parallel region for its 1 parallel loop(s)");
}

TEST(ParallelRegions, ParallelLoopsAskingForDifferentThreadCountsEachStartTheirOwn) {
  const std::vector<std::string> plans = region_plans(
      "def k(A, steps):\n"
      "    for t in range(steps):\n"
      "        #pragma parallel for num_threads(2)\n"
      "        for i in range(A.shape[0]):\n"
      "            A[i] = A[i] * 0.5\n"
      "        #pragma parallel for num_threads(3)\n"
      "        for i in range(A.shape[0]):\n"
      "            A[i] = A[i] + 1.0\n",
      "f64[::1], int");
  ASSERT_EQ(plans.size(), 1U);
  EXPECT_EQ(plans[0], "t: no parallel region: its parallel loops ask for different numbers of threads");
}

}  // namespace
}  // namespace plait
