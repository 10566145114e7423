// The statements of the CPU's parallel regions
// (transforms/cpu/plan_region_statements.h): which run in one thread or in
// all, which share one `omp single`, and where barriers go, checked on the
// plans the CPU pipeline records and on what the emitter prints from them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"
#include "support/diagnostics.h"
#include "transforms/cpu/plan_parallel_regions.h"
#include "transforms/cpu/plan_region_statements.h"

namespace plait {
namespace {

using transforms::cpu::Placement;
using transforms::cpu::RegionStatementsPlan;
using transforms::cpu::RegionStep;

ir::Function compiled(const std::string& source, const std::string& signature) {
  Globals globals;
  globals["np"].module = "numpy";
  SourceFile file{"k.py", source, 1};
  CompileOptions options;
  options.boundscheck = false;  // a bounds check's copy of a loop would plan regions of its own
  options.verify_ir = true;
  ir::Function f = lower_to_ir(parse_function(file, "k"), file, Signature::parse(signature), globals, options);
  run_pipeline(f, options);
  return f;
}

// The statements plan of each region, in program order.
class StatementPlans : public ir::IRVisitor {
 public:
  std::vector<const RegionStatementsPlan*> plans;
  using IRVisitor::visit;
  void visit(const ir::For* n) override {
    if (const auto* plan = n->schedule.plan<RegionStatementsPlan>()) plans.push_back(plan);
    IRVisitor::visit(n);
  }
};

const RegionStatementsPlan& only_plan(const ir::Function& f) {
  StatementPlans plans;
  plans.visit(f.body);
  if (plans.plans.size() != 1U) ADD_FAILURE() << plans.plans.size() << " region plans";
  return *plans.plans.at(0);
}

// A time loop whose step reads the shared `m` in every thread before one
// thread updates it.
constexpr const char* kReadThenUpdate =
    "def k(A, steps):\n"
    "    m = 1.0\n"
    "    for t in range(steps):\n"
    "        x = m * 2.0\n"
    "        m = x + 1.0\n"
    "        #pragma parallel for\n"
    "        for i in range(A.shape[0]):\n"
    "            A[i] = A[i] + m\n"
    "    return m\n";

TEST(RegionStatements, SharedVariableReadByEveryThreadIsWrittenAfterABarrier) {
  const ir::Function f = compiled(kReadThenUpdate, "f64[::1], int");
  const RegionStatementsPlan& plan = only_plan(f);
  EXPECT_EQ(plan.describe(), "team: all, all, barrier, single, for i");
  const std::vector<RegionStep>& steps = plan.body.steps;
  ASSERT_EQ(steps.size(), 4U);
  // `x` belongs to each thread: every thread computes it.
  EXPECT_EQ(steps[1].placement, Placement::Redundant);
  // `m` is shared: one thread updates it, once every thread has read it.
  EXPECT_EQ(steps[2].placement, Placement::Single);
  EXPECT_TRUE(steps[2].barrier);
  // The `omp for` only reads `m`, which the single's own barrier published.
  EXPECT_EQ(steps[3].placement, Placement::Structure);
  EXPECT_FALSE(steps[3].barrier);
  EXPECT_FALSE(plan.body.barrier_at_end);
  bool m_shared = false;
  for (const ir::VarInfo* v : plan.shared) m_shared = m_shared || v->name == "m";
  EXPECT_TRUE(m_shared);
  // The emitter prints the barrier just before the single.
  const std::string cpp = generate_source(f, CompileOptions{});
  EXPECT_NE(cpp.find("#pragma omp barrier\n"), std::string::npos) << cpp;
  EXPECT_LT(cpp.find("#pragma omp barrier\n"), cpp.find("#pragma omp single")) << cpp;
}

TEST(RegionStatements, UpdateWithNothingReadBeforeItNeedsNoBarrier) {
  const ir::Function f = compiled(
      "def k(A, steps):\n"
      "    m = 1.0\n"
      "    for t in range(steps):\n"
      "        m = m * 0.5\n"
      "        #pragma parallel for\n"
      "        for i in range(A.shape[0]):\n"
      "            A[i] = A[i] + m\n"
      "    return m\n",
      "f64[::1], int");
  const RegionStatementsPlan& plan = only_plan(f);
  EXPECT_EQ(plan.describe(), "team: single, for i");
  EXPECT_FALSE(plan.body.steps[0].barrier);
  EXPECT_EQ(generate_source(f, CompileOptions{}).find("#pragma omp barrier"), std::string::npos);
}

TEST(RegionStatements, WritesAfterTheLastBarrierOfAnIterationEndIt) {
  // Every thread reads `m` after the `omp for`; the next iteration's single
  // writes it.
  const ir::Function f = compiled(
      "def k(A, B, steps):\n"
      "    m = 1.0\n"
      "    for t in range(steps):\n"
      "        m = m * 0.5\n"
      "        #pragma parallel for\n"
      "        for i in range(A.shape[0]):\n"
      "            A[i] = A[i] + 1.0\n"
      "        #pragma parallel for\n"
      "        for i in range(B.shape[0]):\n"
      "            B[i] = B[i] * 2.0\n"
      "        if m > 0.0:\n"
      "            #pragma parallel for\n"
      "            for j in range(A.shape[0]):\n"
      "                A[j] = A[j] - B[j]\n"
      "    return m\n",
      "f64[::1], f64[::1], int");
  const RegionStatementsPlan& plan = only_plan(f);
  EXPECT_EQ(plan.describe(), "team: all, single, for i, for i, if {for j}, barrier");
  EXPECT_TRUE(plan.body.barrier_at_end);
  ASSERT_EQ(plan.body.steps.size(), 5U);
  EXPECT_EQ(plan.body.steps[4].nested.size(), 1U);  // no else branch
}

TEST(RegionStatements, RegionWithoutItsStatementsPlanIsAnInternalError) {
  // The plan that plan_region_statements records, removed.
  struct DropPlan : ir::IRMutator {
    using IRMutator::visit;
    ir::Stmt visit(const ir::For* n, const ir::Stmt& self) override {
      if (!n->schedule.plan<RegionStatementsPlan>()) return self;
      ir::LoopSchedule schedule = n->schedule;
      std::erase_if(schedule.plans, [](const auto& p) { return dynamic_cast<const RegionStatementsPlan*>(p.get()); });
      return ir::For::make(n->var, n->begin, n->end, n->step, n->body, std::move(schedule), n->loc);
    }
  };
  ir::Function f = compiled(kReadThenUpdate, "f64[::1], int");
  f.body = DropPlan().mutate(f.body);
  EXPECT_THROW(generate_source(f, CompileOptions{}), InternalError);
}

}  // namespace
}  // namespace plait
