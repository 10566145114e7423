// Calls between functions inlined before lowering (frontend/inline_calls.h):
// the callee's locals renamed per call, its file's lines numbered past the
// kernel's, errors located in the callee's own file.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "driver/compiler.h"
#include "frontend/inline_calls.h"
#include "frontend/parser.h"

namespace plait {
namespace {

// The kernel's globals when `callees` (key -> source, def name) are the
// functions it and they see under their def names, as plaitc builds them.
Globals with_functions(const std::map<std::string, SourceFile>& callees) {
  Globals names{{"np", GlobalValue{GlobalValue::Kind::Module, "numpy"}}};
  for (const auto& [key, source] : callees) {
    GlobalValue function;
    function.kind = GlobalValue::Kind::Function;
    function.module = key;
    names[key] = function;
  }
  auto table = std::make_shared<CalleeTable>();
  for (const auto& [key, source] : callees) (*table)[key] = Callee{source, key, names};
  for (const auto& [key, source] : callees) names[key].callees = table;
  return names;
}

SourceFile file(const std::string& path, const std::string& text, int first_line = 1) {
  SourceFile source;
  source.path = path;
  source.text = text;
  source.first_line = first_line;
  return source;
}

TEST(InlineCalls, EachCallGetsItsOwnLocalsAndARemark) {
  const SourceFile helpers = file("k.py",
                                  "def twice(x):\n"
                                  "    y = x + x\n"
                                  "    return y\n");
  const SourceFile kernel = file("k.py",
                                 "def k(a, b):\n"
                                 "    return twice(a) + twice(b)\n",
                                 5);
  const Globals globals = with_functions({{"twice", helpers}});
  InlinedKernel inlined = inline_calls(parse_function(kernel, "k"), kernel, globals);
  std::set<std::string> locals;
  ast::collect_assigned_names(inlined.definition.body, locals);
  // x reads the name passed to it (the body never rebinds it): no copy.
  EXPECT_EQ(locals, (std::set<std::string>{"twice.y", "twice.return", "twice#2.y", "twice#2.return"}));
  ASSERT_EQ(inlined.remarks.size(), 2u);
  EXPECT_EQ(inlined.remarks[0].message, "call to twice inlined (defined at line 1)");
  EXPECT_EQ(inlined.remarks[0].loc.line, 6);
  // The callee shares the kernel's file: its lines keep their numbers.
  EXPECT_EQ(inlined.source.line_text(2), "    y = x + x");
  EXPECT_EQ(inlined.source.file_line(2), 2);

  const ir::Function f = lower_kernel(kernel, "k", Signature::parse("int, float"), globals, CompileOptions{}).function;
  ASSERT_EQ(f.results.size(), 1u);
  EXPECT_EQ(f.results[0].scalar, ScalarType::py_float());  // twice(int) + twice(float)
}

TEST(InlineCalls, ACalleeOfAnotherFileIsLocatedInIt) {
  const SourceFile helpers = file("helpers.py",
                                  "def broken(x):\n"
                                  "    return x + missing\n",
                                  10);
  const SourceFile kernel = file("k.py",
                                 "def k(a):\n"
                                 "    return broken(a)\n");
  const Globals globals = with_functions({{"broken", helpers}});
  try {
    lower_kernel(kernel, "k", Signature::parse("float"), globals, CompileOptions{});
    FAIL() << "expected a NameError";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Name);
    EXPECT_EQ(e.path(), "helpers.py");
    EXPECT_EQ(e.loc().line, 11);
    EXPECT_NE(std::string(e.what()).find("File \"helpers.py\", line 11"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("    return x + missing"), std::string::npos) << e.what();
  }
}

TEST(InlineCalls, RecursionIsRefusedAtTheCallThatClosesTheCycle) {
  const SourceFile source = file("k.py",
                                 "def down(n):\n"
                                 "    return down(n - 1)\n"
                                 "def k(n):\n"
                                 "    return down(n)\n");
  const Globals globals = with_functions({{"down", source}, {"k", source}});
  try {
    inline_calls(parse_function(source, "k"), source, globals);
    FAIL() << "expected recursion to be refused";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_NE(e.message().find("'down' is called recursively"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace plait
