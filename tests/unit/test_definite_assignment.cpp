// Definite assignment of locals (frontend/definite_assignment.h): the
// binding of each read, the compile error for reads no assignment reaches,
// and the run-time checks the lowering emits for the others.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/definite_assignment.h"
#include "frontend/lower_to_ir.h"
#include "frontend/lowerer.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

using lowering::Binding;

// The binding of each read of `name` in `fn` of `source`, in the order of the
// text: "B" bound, "U" unbound, "M" maybe unbound.
std::string bindings_of(const std::string& source, const std::string& name) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, "f");
  std::set<std::string> locals;
  ast::collect_assigned_names(fn.body, locals);
  for (const auto& p : fn.params) locals.erase(p.name);
  lowering::Bindings b = lowering::definite_assignment(fn.body, locals);
  // Every read of `name`, in the order of the text.
  std::vector<const ast::Name*> reads;
  std::function<void(const ast::Expr*)> expr = [&](const ast::Expr* e) {
    if (!e) return;
    if (auto n = e->as<ast::Name>()) {
      if (n->id == name) reads.push_back(n);
    } else if (auto x = e->as<ast::BinOp>()) {
      expr(x->left.get());
      expr(x->right.get());
    } else if (auto x = e->as<ast::BoolOp>()) {
      for (const auto& v : x->values) expr(v.get());
    } else if (auto x = e->as<ast::Compare>()) {
      expr(x->left.get());
      for (const auto& v : x->comparators) expr(v.get());
    } else if (auto x = e->as<ast::Subscript>()) {
      expr(x->value.get());
      expr(x->index.get());
    } else if (auto x = e->as<ast::Call>()) {
      for (const auto& v : x->args) expr(v.get());
    }
  };
  std::function<void(const ast::StmtList&)> block = [&](const ast::StmtList& body) {
    for (const auto& s : body) {
      if (auto a = s->as<ast::Assign>()) {
        expr(a->value.get());
        for (const auto& t : a->targets)
          if (!t->as<ast::Name>()) expr(t.get());
      } else if (auto a = s->as<ast::AugAssign>()) {
        expr(a->target.get());
        expr(a->value.get());
      } else if (auto i = s->as<ast::If>()) {
        expr(i->test.get());
        block(i->body);
        block(i->orelse);
      } else if (auto f = s->as<ast::For>()) {
        expr(f->iter.get());
        block(f->body);
      } else if (auto w = s->as<ast::While>()) {
        expr(w->test.get());
        block(w->body);
      } else if (auto r = s->as<ast::Return>()) {
        expr(r->value.get());
      }
    }
  };
  block(fn.body);
  std::string out;
  for (const ast::Name* n : reads) {
    Binding k = b.of(*n);
    out += k == Binding::Bound ? "B" : k == Binding::Unbound ? "U" : "M";
  }
  return out;
}

TEST(DefiniteAssignment, BranchesJoin) {
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    if n > 0:\n"
                        "        x = 1\n"
                        "    else:\n"
                        "        x = 2\n"
                        "    return x\n",
                        "x"),
            "B");
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    if n > 0:\n"
                        "        x = 1\n"
                        "    elif n < -3:\n"
                        "        x = 2\n"
                        "    return x\n",
                        "x"),
            "M");
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    y = x\n"
                        "    x = 1\n"
                        "    return x + y\n",
                        "x"),
            "UB");
}

TEST(DefiniteAssignment, ABranchThatLeavesDoesNotJoin) {
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    if n > 0:\n"
                        "        x = 1\n"
                        "    else:\n"
                        "        return 0\n"
                        "    return x\n",
                        "x"),
            "B");
}

TEST(DefiniteAssignment, ForLoopsMayRunZeroTimes) {
  // The loop variable and what the body assigns may be unassigned after it;
  // inside, the variable is assigned, and a read before the body's assignment
  // sees the previous iteration's value.
  const char* src =
      "def f(n):\n"
      "    for i in range(n):\n"
      "        if i > 0:\n"
      "            n = t + i\n"
      "        t = i\n"
      "    return i + t\n";
  EXPECT_EQ(bindings_of(src, "i"), "BBBM");
  EXPECT_EQ(bindings_of(src, "t"), "MM");
}

TEST(DefiniteAssignment, BreakAndContinue) {
  // Assigned only before a break: unassigned at the next iteration's read.
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    for i in range(n):\n"
                        "        if i > 2:\n"
                        "            n = x\n"
                        "        if i > 1:\n"
                        "            x = i\n"
                        "            break\n"
                        "    return x\n",
                        "x"),
            "UM");
  // A continue skips the assignment: unassigned on some paths after it.
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    for i in range(n):\n"
                        "        if i > 2:\n"
                        "            continue\n"
                        "        x = i\n"
                        "        n = x\n"
                        "    return n\n",
                        "x"),
            "B");
}

TEST(DefiniteAssignment, WhileTrueEndsOnlyAtABreak) {
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    while True:\n"
                        "        x = n\n"
                        "        if x > 3:\n"
                        "            break\n"
                        "        n = n + 1\n"
                        "    return x\n",
                        "x"),
            "BB");
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    while n > 0:\n"
                        "        x = n\n"
                        "        n = n - 1\n"
                        "    return x\n",
                        "x"),
            "M");
}

TEST(DefiniteAssignment, ParametersAndGlobalsAreBound) {
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    n = n + K\n"
                        "    return n\n",
                        "n"),
            "BB");
  EXPECT_EQ(bindings_of("def f(n):\n"
                        "    return n + K\n",
                        "K"),
            "B");
}

// The IR of `f` in `source` after the lowering and the passes.
std::string ir_of(const std::string& source, const std::string& signature) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, "f");
  Globals globals;
  globals["np"].module = "numpy";
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), globals, CompileOptions{});
  CompileOptions options;
  options.verify_ir = true;
  run_pipeline(f, options);
  return ir::to_string(f);
}

TEST(DefiniteAssignment, AReadNoAssignmentReachesIsACompileError) {
  const char* src =
      "def f(n):\n"
      "    y = n + x\n"
      "    x = 1\n"
      "    return y\n";
  try {
    ir_of(src, "int");
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::UnboundLocal);
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_EQ(e.loc().col, 12);
    EXPECT_NE(e.message().find("cannot access local variable 'x' where it is not associated with a value"),
              std::string::npos);
  }
}

TEST(DefiniteAssignment, DefinitelyAssignedLocalsCostNothing) {
  std::string text = ir_of(
      "def f(n):\n"
      "    if n > 0:\n"
      "        x = 1\n"
      "    else:\n"
      "        x = 2\n"
      "    return x\n",
      "int");
  EXPECT_EQ(text.find("_bound_"), std::string::npos) << text;
  EXPECT_EQ(text.find("assert"), std::string::npos) << text;
}

TEST(DefiniteAssignment, AReadOnSomePathsIsCheckedOnAFlag) {
  std::string text = ir_of(
      "def f(n):\n"
      "    if n > 0:\n"
      "        x = 1\n"
      "    return x\n",
      "int");
  EXPECT_EQ(text,
            "def f(n: int) -> int {\n"
            "  let _bound_x:bool\n"
            "  let x:int\n"
            "  _bound_x = False\n"
            "  if (n > 0:int) {\n"
            "    x = 1:int\n"
            "    _bound_x = True\n"
            "  }\n"
            "  assert _bound_x, \"cannot access local variable 'x' where it is not associated with a value\"\n"
            "  return x\n"
            "}\n");
}

}  // namespace
}  // namespace plait
