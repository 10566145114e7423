// transforms/split_variable_webs: which assignments and reads of a reused
// name share a variable after the pass, through branches, loops, break,
// continue and return.
#include <gtest/gtest.h>

#include <string>

#include "driver/compiler.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"
#include "transforms/split_variable_webs.h"

namespace plait {
namespace {

// The assignments ("=a") and reads ("a") of `name` in program order, each
// lettered by its variable after the pass (a, b, ... by first mention).
std::string webs(const std::string& source, const std::string& signature, const std::string& name) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, "f");
  Globals globals;
  globals["np"].module = "numpy";
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), globals, {});
  transforms::split_variable_webs(f);
  struct Letters : ir::IRVisitor {
    std::string name, out;
    ir::VarMap<char> letter;
    using IRVisitor::visit;
    void mention(const ir::Var& v, const char* prefix) {
      if (v->name != name) return;
      auto [it, fresh] = letter.emplace(v.get(), static_cast<char>('a' + letter.size()));
      out += (out.empty() ? "" : " ") + std::string(prefix) + it->second;
    }
    void visit(const ir::VarRef* r) override { mention(r->var, ""); }
    void visit(const ir::Assign* a) override {
      IRVisitor::visit(a);
      mention(a->var, "=");
    }
  } letters;
  letters.name = name;
  letters.visit(f.body);
  return letters.out;
}

TEST(SplitVariableWebs, ANameAssignedAtTheTopOfTwoLoopsIsTwoVariables) {
  const char* src =
      "def f(F, r):\n"
      "    for k in range(F.shape[0]):\n"
      "        v = F[k]\n"
      "        r[v] += 1.0\n"
      "    for k in range(F.shape[0]):\n"
      "        v = F[k]\n"
      "        r[v] *= 2.0\n";
  EXPECT_EQ(webs(src, "i64[::1], f64[::1]", "v"), "=a a a =b b b");
}

TEST(SplitVariableWebs, AssignmentsThatReachOneReadShareItsVariable) {
  const char* src =
      "def f(x):\n"
      "    if x > 0:\n"
      "        t = 1.0\n"
      "    else:\n"
      "        t = 2.0\n"
      "    u = t * 2\n"
      "    t = 5.0\n"
      "    return u + t\n";
  EXPECT_EQ(webs(src, "f64", "t"), "=a =a a =b b");
}

TEST(SplitVariableWebs, AValueCarriedAroundALoopIsOneWeb) {
  const char* src =
      "def f(a):\n"
      "    s = 0.0\n"
      "    for i in range(a.shape[0]):\n"
      "        s = s + a[i]\n"
      "    p = s\n"
      "    s = 1.0\n"
      "    for i in range(a.shape[0]):\n"
      "        s = s * a[i]\n"
      "    return p + s\n";
  EXPECT_EQ(webs(src, "f64[::1]", "s"), "=a a =a a =b b =b b");
}

TEST(SplitVariableWebs, AnUpdateContinuesTheValueItReads) {
  // Renaming the first update (m' = max(x[i], m); m = max(m', ...)) would be
  // as correct, but no longer a reduction of one variable.
  const char* src =
      "def f(x, s):\n"
      "    m = s\n"
      "    for i in range(x.shape[0]):\n"
      "        m = max(x[i], m)\n"
      "        m = max(m, x[i] - 0.25)\n"
      "    t = x[0]\n"
      "    t = t * 2.0\n"
      "    return m + t\n";
  EXPECT_EQ(webs(src, "f64[::1], f64", "m"), "=a a =a a =a a");
  EXPECT_EQ(webs(src, "f64[::1], f64", "t"), "=a a =a a");
}

TEST(SplitVariableWebs, AReadBeforeTheAssignmentOfItsIterationJoinsTheLastIteration) {
  const char* src =
      "def f(a):\n"
      "    t = 0.0\n"
      "    for i in range(a.shape[0]):\n"
      "        a[i] = t\n"
      "        t = a[i] * 2\n"
      "    t = 3.0\n"
      "    return t\n";
  EXPECT_EQ(webs(src, "f64[::1]", "t"), "=a a =a =b b");
}

TEST(SplitVariableWebs, BreakCarriesTheValueOutOfTheLoopAndContinueToItsHead) {
  const char* src =
      "def f(a):\n"
      "    x = -1.0\n"
      "    for i in range(a.shape[0]):\n"
      "        x = a[i]\n"
      "        if x > 0:\n"
      "            break\n"
      "    y = x\n"
      "    x = 0.0\n"
      "    while x < 10.0:\n"
      "        x = x + 1.0\n"
      "        if x > 5.0:\n"
      "            continue\n"
      "        x = x + 2.0\n"
      "    return x + y\n";
  EXPECT_EQ(webs(src, "f64[::1]", "x"), "=a =a a a =b b b =b b b =b b");
}

TEST(SplitVariableWebs, AReturnEndsItsPath) {
  const char* src =
      "def f(a, n):\n"
      "    if n > 0:\n"
      "        w = a[0]\n"
      "        return w\n"
      "    w = a[1]\n"
      "    return w\n";
  EXPECT_EQ(webs(src, "f64[::1], int", "w"), "=a a =b b");
}

TEST(SplitVariableWebs, ParametersAndLoopVariablesStayWhole) {
  const char* src =
      "def f(a, n):\n"
      "    for i in range(n):\n"
      "        a[i] = 1.0\n"
      "    n = 3\n"
      "    for i in range(n):\n"
      "        a[i] = 2.0\n"
      "    return n\n";
  EXPECT_EQ(webs(src, "f64[::1], int", "n"), "a =a a a");
  EXPECT_EQ(webs(src, "f64[::1], int", "i"), "a a");
}

}  // namespace
}  // namespace plait
