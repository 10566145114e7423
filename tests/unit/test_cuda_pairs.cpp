// Spread loops whose threads run two iterations at once (docs/cuda.md, "Two
// iterations per thread"), from Python source through the pass pipeline:
// which loops pair, which inner loops run once for both, which scalars get a
// copy per iteration, and what kernel.explain() says.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "codegen/cuda/codegen_cuda.h"
#include "driver/compiler.h"
#include "ir/ir_visitor.h"
#include "transforms/gpu/worker_plan.h"

namespace plait {
namespace {

using transforms::gpu::PairedLoop;

ir::Function lower(const std::string& text, const std::string& signature) {
  SourceFile source;
  source.path = "pairs.py";
  source.text = text;
  source.first_line = 1;
  Globals globals{{"np", GlobalValue{GlobalValue::Kind::Module, "numpy"}}};
  CompileOptions options;
  options.target = Target::CUDA;
  return lower_kernel(source, "k", Signature::parse(signature), globals, options).function;
}

// The loops of a function by variable name (the first of each name).
class LoopsByName : public ir::IRVisitor {
 public:
  std::map<std::string, const ir::For*> loops;
  using ir::IRVisitor::visit;

 protected:
  void visit(const ir::For* n) override {
    loops.try_emplace(n->var->name, n);
    ir::IRVisitor::visit(n);
  }
};

const ir::For* loop_over(const ir::Function& f, const std::string& name) {
  LoopsByName found;
  found.visit(f.body);
  auto it = found.loops.find(name);
  return it == found.loops.end() ? nullptr : it->second;
}

std::set<std::string> copy_names(const PairedLoop& paired) {
  std::set<std::string> names;
  for (const ir::Var& v : paired.copies) names.insert(v->name);
  return names;
}

std::string explain(const ir::Function& f) {
  std::string text;
  for (const ir::Remark& r : codegen::generate_cuda(f, CompileOptions{}).remarks) text += r.message + "\n";
  return text;
}

const char* const kRowProducts =
    "def k(A, B, out):\n"
    "    #pragma parallel for\n"
    "    for i in range(A.shape[0]):\n"
    "        for j in range(B.shape[1]):\n"
    "            s = 0.0\n"
    "            for kk in range(A.shape[1]):\n"
    "                s += A[i, kk] * B[kk, j]\n"
    "            out[i, j] = s\n";

TEST(CudaPairs, RowProductFusesItsDotProductAndCopiesTheColumnAndTheSum) {
  const ir::Function f = lower(kRowProducts, "f64[:, ::1], f64[:, ::1], f64[:, ::1]");
  PairedLoop paired;
  ASSERT_TRUE(transforms::gpu::paired_loop(loop_over(f, "j"), &paired));
  ASSERT_EQ(paired.stmts.size(), paired.fused.size());
  EXPECT_EQ(std::count(paired.fused.begin(), paired.fused.end(), true), 1);
  for (size_t k = 0; k < paired.stmts.size(); ++k) {
    if (paired.fused[k]) {
      EXPECT_EQ(paired.stmts[k]->as<ir::For>()->var->name, "kk");
    }
  }
  EXPECT_EQ(paired.copies.front()->name, "j");
  EXPECT_EQ(copy_names(paired), (std::set<std::string>{"j", "s"}));
  const std::string text = explain(f);
  EXPECT_NE(text.find("each thread runs two of its iterations at once (k and k + team), the loop at line 6 once for "
                      "both"),
            std::string::npos)
      << text;
}

TEST(CudaPairs, LoopsWithFixedBoundsRunOnceForBothOthersOncePerIteration) {
  const ir::Function f = lower(
      "def k(A, w, out):\n"
      "    #pragma parallel for\n"
      "    for i in range(A.shape[0]):\n"
      "        for j in range(A.shape[1]):\n"
      "            t = A[i, j] * 2.0\n"
      "            s = 0.0\n"
      "            for kk in range(w.shape[0]):\n"
      "                y = w[kk] * t\n"
      "                s += y * A[i, j]\n"
      "            c = 0.0\n"
      "            for q in range(j % 3):\n"
      "                c += s\n"
      "            for r in range(int(w[0])):\n"
      "                c += 1.0\n"
      "            for k2 in range(1, w.shape[0], 2):\n"
      "                s = max(s, w[k2] + c)\n"
      "            out[i, j] = s + t\n",
      "f64[:, ::1], f64[::1], f64[:, ::1]");
  PairedLoop paired;
  ASSERT_TRUE(transforms::gpu::paired_loop(loop_over(f, "j"), &paired));
  std::set<std::string> fused, alone;
  for (size_t k = 0; k < paired.stmts.size(); ++k)
    if (const ir::For* inner = paired.stmts[k]->as<ir::For>())
      (paired.fused[k] ? fused : alone).insert(inner->var->name);
  // q's trip count follows the column, r's reads an element.
  EXPECT_EQ(fused, (std::set<std::string>{"kk", "k2"}));
  EXPECT_EQ(alone, (std::set<std::string>{"q", "r"}));
  const std::set<std::string> copies = copy_names(paired);
  for (const char* name : {"j", "t", "s", "c", "y", "q", "r"}) EXPECT_TRUE(copies.count(name)) << name;
  EXPECT_FALSE(copies.count("kk"));
  EXPECT_FALSE(copies.count("k2"));
  EXPECT_NE(explain(f).find("the loops at lines 7, 15 once for both"), std::string::npos) << explain(f);
}

TEST(CudaPairs, IterationsRunOneAtATimeWithoutALoopForBoth) {
  struct Case {
    const char* why;
    const char* body;
  };
  const Case cases[] = {
      {"the inner trip count follows the column",
       "            for kk in range(j + 1):\n"
       "                s += A[i, kk]\n"},
      {"two loops assign the inner variable",
       "            for kk in range(A.shape[1]):\n"
       "                s += A[i, kk]\n"
       "            for kk in range(A.shape[0]):\n"
       "                s -= A[kk, j]\n"},
      {"no inner loop",
       "            s += A[i, j]\n"},
  };
  for (const Case& c : cases) {
    const ir::Function f = lower(std::string("def k(A, out):\n"
                                             "    #pragma parallel for\n"
                                             "    for i in range(A.shape[0]):\n"
                                             "        for j in range(A.shape[1]):\n"
                                             "            s = 0.0\n") +
                                     c.body + "            out[i, j] = s\n",
                                 "f64[:, ::1], f64[:, ::1]");
    PairedLoop paired;
    EXPECT_FALSE(transforms::gpu::paired_loop(loop_over(f, "j"), &paired)) << c.why;
    const std::string text = explain(f);
    EXPECT_NE(text.find("spread over the threads of the team"), std::string::npos) << c.why << "\n" << text;
    EXPECT_EQ(text.find("two of its iterations"), std::string::npos) << c.why << "\n" << text;
  }
}

TEST(CudaPairs, ASpreadLoopWithItsOwnReductionIsNotPaired) {
  const ir::Function f = lower(
      "def k(A, out):\n"
      "    #pragma parallel for\n"
      "    for i in range(A.shape[0]):\n"
      "        total = 0.0\n"
      "        #pragma simd\n"
      "        for j in range(A.shape[1]):\n"
      "            s = 0.0\n"
      "            for kk in range(A.shape[0]):\n"
      "                s += A[kk, j]\n"
      "            total += s * A[i, j]\n"
      "        out[i] = total\n",
      "f64[:, ::1], f64[::1]");
  const ir::For* j = loop_over(f, "j");
  ASSERT_NE(j, nullptr);
  ASSERT_FALSE(j->schedule.reductions.empty());
  PairedLoop paired;
  EXPECT_FALSE(transforms::gpu::paired_loop(j, &paired));
}

TEST(CudaPairs, TheHostSizesTheTeamForTwoIterationsPerThread) {
  const codegen::CudaSources out =
      codegen::generate_cuda(lower(kRowProducts, "f64[:, ::1], f64[:, ::1], f64[:, ::1]"), CompileOptions{});
  EXPECT_NE(out.host.find("plait_cuda::team_for(2 * plait::trip_count("), std::string::npos) << out.host;
  EXPECT_NE(out.device.find("+= 2 * (int64_t)p_team) {"), std::string::npos) << out.device;
}

}  // namespace
}  // namespace plait
