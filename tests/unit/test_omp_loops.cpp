// The CPU's OpenMP loop plans (transforms/cpu/plan_omp_loops.h): the order
// that float max/min reductions need and the temporaries each thread
// allocates once, checked on the plans the CPU pipeline records.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_visitor.h"
#include "transforms/cpu/plan_omp_loops.h"

namespace plait {
namespace {

using transforms::cpu::OmpLoopPlan;

// Each loop's OpenMP loop plan after the CPU pipeline, in program order, as
// "loop variable: plan".
class LoopPlans : public ir::IRVisitor {
 public:
  std::vector<std::string> plans;
  using IRVisitor::visit;
  void visit(const ir::For* n) override {
    if (const auto* plan = n->schedule.plan<OmpLoopPlan>()) plans.push_back(n->var->name + ": " + plan->describe());
    IRVisitor::visit(n);
  }
};

std::vector<std::string> loop_plans(const std::string& source, const std::string& signature) {
  Globals globals;
  globals["np"].module = "numpy";
  SourceFile file{"k.py", source, 1};
  CompileOptions options;
  options.boundscheck = false;
  options.verify_ir = true;
  ir::Function f = lower_to_ir(parse_function(file, "k"), file, Signature::parse(signature), globals, options);
  run_pipeline(f, options);
  LoopPlans plans;
  plans.visit(f.body);
  return plans.plans;
}

TEST(OmpLoops, ReversedMaximumCombinesInThreadOrder) {
  EXPECT_EQ(loop_plans("def k(x, m):\n"
                       "    #pragma parallel for\n"
                       "    for i in range(x.shape[0]):\n"
                       "        m = max(x[i], m)\n"
                       "    return m\n",
                       "f64[::1], float"),
            std::vector<std::string>{"i: omp: thread order: m"});
}

TEST(OmpLoops, ReversedMinimumMakesAVectorLoopRunInOrder) {
  EXPECT_EQ(loop_plans("def k(x, m):\n"
                       "    #pragma simd\n"
                       "    for i in range(x.shape[0]):\n"
                       "        m = min(x[i], m)\n"
                       "    return m\n",
                       "f64[::1], float"),
            std::vector<std::string>{"i: omp: in order for m"});
}

TEST(OmpLoops, BuiltinMaximumSetsTheValueBeforeTheLoopAsideAndNumPysKeepsNaN) {
  EXPECT_EQ(loop_plans("def k(x, m, p):\n"
                       "    #pragma parallel for\n"
                       "    for i in range(x.shape[0]):\n"
                       "        m = max(m, x[i])\n"
                       "        p = np.maximum(p, x[i])\n"
                       "    return m + p\n",
                       "f64[::1], float, float"),
            std::vector<std::string>{"i: omp: NaN-keeping partials: p; set aside: m"});
}

TEST(OmpLoops, BuiltinMaximumOfAnOmpForInARegionKeepsNaN) {
  // No thread of the team may set the value aside before the others read it.
  EXPECT_EQ(loop_plans("def k(x, steps):\n"
                       "    m = 0.0\n"
                       "    for t in range(steps):\n"
                       "        x[0] = x[0] + 1.0\n"
                       "        #pragma parallel for\n"
                       "        for i in range(x.shape[0]):\n"
                       "            m = max(m, x[i])\n"
                       "    return m\n",
                       "f64[::1], int"),
            std::vector<std::string>{"i: omp: NaN-keeping partials: m"});
}

constexpr const char* kScratchRow =
    "    for i in range(A.shape[0]):\n"
    "        e = np.empty(A.shape[1])\n"
    "        for j in range(A.shape[1]):\n"
    "            e[j] = A[i, j] * 2.0\n"
    "        for j in range(A.shape[1]):\n"
    "            B[i, j] = e[j] + 1.0\n";

TEST(OmpLoops, ScratchRowIsAllocatedOncePerThread) {
  EXPECT_EQ(
      loop_plans(std::string("def k(A, B):\n    #pragma parallel for\n") + kScratchRow, "f64[:, ::1], f64[:, ::1]"),
      std::vector<std::string>{"i: omp: per-thread temporaries: e"});
}

TEST(OmpLoops, ScratchRowOfAnOmpForInARegionIsAllocatedInEachIteration) {
  // Inside a region the team has started already: no thread allocates first.
  EXPECT_EQ(loop_plans("def k(A, B, steps):\n"
                       "    for t in range(steps):\n"
                       "        #pragma parallel for\n"
                       "        for i in range(A.shape[0]):\n"
                       "            e = np.empty(A.shape[1])\n"
                       "            for j in range(A.shape[1]):\n"
                       "                e[j] = A[i, j] * 2.0\n"
                       "            for j in range(A.shape[1]):\n"
                       "                B[i, j] = e[j] + 1.0\n",
                       "f64[:, ::1], f64[:, ::1], int"),
            std::vector<std::string>{"i: omp: as scheduled"});
}

}  // namespace
}  // namespace plait
