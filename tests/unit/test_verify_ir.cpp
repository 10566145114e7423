// The IR verifier (analysis/verify_ir.h): it accepts what the front end and
// the passes make, and names the step and the invariant of IR that breaks one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/verify_ir.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"

namespace plait {
namespace {

using namespace ir;

ArrayVar array(const std::string& name, int ndim) {
  return std::make_shared<ArrayInfo>(ArrayInfo{name, ArrayType{ScalarKind::Float64, ndim, Layout::Any}, {}, true});
}

Var local(const std::string& name, ScalarType type = ScalarType::i64()) {
  return std::make_shared<VarInfo>(VarInfo{name, type, {}, false});
}

Function function_of(std::vector<Param> params, std::vector<Stmt> body) {
  Function f;
  f.name = "k";
  f.params = std::move(params);
  f.body = Block::make(std::move(body));
  return f;
}

// The verifier's message for `f`, or "" when it accepts it.
std::string verdict(const Function& f, bool declarations_placed = true) {
  analysis::VerifyOptions options;
  options.declarations_placed = declarations_placed;
  options.early_exits_refused = true;
  try {
    analysis::verify_ir(f, "a_pass", options);
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

Stmt loop(const Var& v, Expr end, std::vector<Stmt> body, LoopKind kind = LoopKind::Serial) {
  LoopSchedule schedule;
  schedule.kind = kind;
  return For::make(v, IntImm::make(0, ScalarType::i64()), std::move(end), IntImm::make(1, ScalarType::i64()),
                   Block::make(std::move(body)), schedule);
}

TEST(VerifyIr, AcceptsAStoreInALoop) {
  ArrayVar a = array("a", 1);
  Var i = local("i");
  Stmt store = Store::make(a, {VarRef::make(i)}, FloatImm::make(1.0, ScalarType::f64()));
  EXPECT_EQ(verdict(function_of({Param{nullptr, a}}, {loop(i, ArrayDim::make(a, 0), {store})})), "");
}

TEST(VerifyIr, NamesThePassAndAStoreWithTooFewIndices) {
  ArrayVar a = array("a", 2);
  // (Store::make asserts the count; a pass may build the node directly.)
  Stmt store = std::make_shared<Store>(a, std::vector<Expr>{IntImm::make(0, ScalarType::i64())},
                                       FloatImm::make(1.0, ScalarType::f64()), false, SourceLoc{});
  const std::string message = verdict(function_of({Param{nullptr, a}}, {store}));
  EXPECT_NE(message.find("after `a_pass` of `k`"), std::string::npos) << message;
  EXPECT_NE(message.find("a store of `a` has 1 indices for its 2 dimensions"), std::string::npos) << message;
}

TEST(VerifyIr, RefusesABreakOutOfAParallelLoopButNotAContinue) {
  ArrayVar a = array("a", 1);
  Var i = local("i");
  const Function with_continue =
      function_of({Param{nullptr, a}}, {loop(i, ArrayDim::make(a, 0), {Continue::make()}, LoopKind::Parallel)});
  EXPECT_EQ(verdict(with_continue), "");
  const Function with_break =
      function_of({Param{nullptr, a}}, {loop(i, ArrayDim::make(a, 0), {Break::make()}, LoopKind::Parallel)});
  EXPECT_NE(verdict(with_break).find("a break out of a parallel or vector loop"), std::string::npos);
  // A break of a serial loop inside the parallel one leaves only the serial loop.
  Var j = local("j");
  const Function inner_break = function_of(
      {Param{nullptr, a}},
      {loop(i, ArrayDim::make(a, 0), {loop(j, ArrayDim::make(a, 0), {Break::make()})}, LoopKind::Parallel)});
  EXPECT_EQ(verdict(inner_break), "");
}

TEST(VerifyIr, ALocalIsReadInItsDeclarationsScopeOnceDeclarationsArePlaced) {
  Var x = local("x");
  Stmt assign = Assign::make(x, IntImm::make(1, ScalarType::i64()));
  Stmt ret = Return::make({ReturnValue{VarRef::make(x), nullptr}});
  // Before place_declarations the front end leaves locals undeclared.
  EXPECT_EQ(verdict(function_of({}, {assign, ret}), false), "");
  EXPECT_NE(verdict(function_of({}, {assign, ret})).find("an assignment of `x` outside the scope"), std::string::npos);
  EXPECT_EQ(verdict(function_of({}, {Declare::make(x), assign, ret})), "");
  // Declared in a branch, read after it.
  Stmt branch = If::make(BoolImm::make(true), Block::make({Declare::make(x), assign}));
  EXPECT_NE(verdict(function_of({}, {branch, ret})).find("a read of `x` outside the scope"), std::string::npos);
}

TEST(VerifyIr, AConditionIsBoolAndAnAssignmentKeepsItsVariablesKind) {
  Var x = local("x");
  Stmt branch = std::make_shared<If>(IntImm::make(1, ScalarType::i64()), Block::make({}), nullptr, SourceLoc{});
  EXPECT_NE(verdict(function_of({}, {branch})).find("a condition is i64, not bool"), std::string::npos);
  Stmt assign = std::make_shared<Assign>(x, FloatImm::make(1.0, ScalarType::f64()), SourceLoc{});
  EXPECT_NE(verdict(function_of({}, {Declare::make(x), assign})).find("an assignment of a f64 to `x` of i64"),
            std::string::npos);
}

// Every step of both pipelines leaves valid IR on a kernel with loops,
// reductions, array statements and a parallel loop; the observer sees each
// target's steps in order, and which of them changed the function.
TEST(VerifyIr, BothPipelinesVerifyAfterEveryStep) {
  const SourceFile source{"k.py",
                          "import numpy as np\n"
                          "def k(a, b, n):\n"
                          "    s = 0.0\n"
                          "    # pragma parallel for reduction(+:s)\n"
                          "    for i in range(a.shape[0]):\n"
                          "        s += a[i] * b[i]\n"
                          "    c = np.exp(a - s) + b[::-1]\n"
                          "    for t in range(n):\n"
                          "        c[1:] = c[:-1] * 0.5\n"
                          "    return c.sum() + s\n",
                          1};
  const Globals globals{{"np", GlobalValue{GlobalValue::Kind::Module, "numpy"}}};
  for (Target target : {Target::CPU, Target::CUDA}) {
    CompileOptions options;
    options.target = target;
    options.boundscheck = true;
    options.verify_ir = true;
    ir::Function f =
        lower_to_ir(parse_function(source, "k"), source, Signature::parse("f64[::1], f64[::1], int"), globals, options);
    std::vector<std::string> steps;
    run_pipeline(f, options, [&](const std::string& pass, const ir::Function&, bool changed) {
      steps.push_back(pass + (changed ? "" : " (unchanged)"));
    });
    ASSERT_GE(steps.size(), 9U);
    EXPECT_EQ(steps[0], "lower_to_ir");
    EXPECT_EQ(steps[1], "split_variable_webs (unchanged)");
    EXPECT_EQ(steps[2], "hoist_invariant_arrays (unchanged)");
    EXPECT_EQ(steps[3], "fuse_loop_nests");
    EXPECT_EQ(steps[5], "place_declarations");  // declares s, c and the loops' locals
    EXPECT_EQ(steps.back().substr(0, steps.back().find(' ')),
              target == Target::CPU ? "plan_region_statements" : "plan_persistent_loops");
  }
}

}  // namespace
}  // namespace plait
