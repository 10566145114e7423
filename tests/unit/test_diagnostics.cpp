// Tests for source line lookup, diagnostic formatting and the error classes.
#include <gtest/gtest.h>

#include "support/diagnostics.h"

namespace plait {
namespace {

SourceFile kernel_file() {
  SourceFile file;
  file.path = "k.py";
  file.text = "def f(y, acc):\n    for i in range(3):\n        y[i] = acc +\n";
  file.first_line = 5;
  return file;
}

TEST(SourceFile, LineTextUsesFileLineNumbers) {
  const SourceFile file = kernel_file();
  EXPECT_EQ(file.line_text(5), "def f(y, acc):");
  EXPECT_EQ(file.line_text(7), "        y[i] = acc +");
  EXPECT_EQ(file.line_text(4), "");
  EXPECT_EQ(file.line_text(9), "");
  EXPECT_EQ(file.line_text(100), "");
}

TEST(SourceFile, LineTextDropsCarriageReturn) {
  SourceFile file;
  file.text = "a = 1\r\nb = 2\r\n";
  EXPECT_EQ(file.line_text(1), "a = 1");
  EXPECT_EQ(file.line_text(2), "b = 2");
}

TEST(Diagnostics, FormatsLineSourceAndCaretSpan) {
  const SourceFile file = kernel_file();
  const std::string text = format_diagnostic(file, SourceLoc{7, 15, 7, 18}, "TypeError: bad operand");
  EXPECT_EQ(text,
            "File \"k.py\", line 7, col 16\n"
            "        y[i] = acc +\n"
            "               ^~~\n"
            "TypeError: bad operand");
}

TEST(Diagnostics, MultiLineSpanGetsSingleCaret) {
  const SourceFile file = kernel_file();
  const std::string text = format_diagnostic(file, SourceLoc{6, 4, 7, 20}, "msg");
  EXPECT_EQ(text,
            "File \"k.py\", line 6, col 5\n"
            "    for i in range(3):\n"
            "    ^\n"
            "msg");
}

TEST(Diagnostics, CaretPastEndOfLine) {
  const SourceFile file = kernel_file();
  const std::string text = format_diagnostic(file, SourceLoc{7, 20, 7, 21}, "SyntaxError: unexpected end of line");
  EXPECT_EQ(text,
            "File \"k.py\", line 7, col 21\n"
            "        y[i] = acc +\n"
            "                    ^\n"
            "SyntaxError: unexpected end of line");
}

TEST(Diagnostics, TabsInTheSourceLineKeepTheCaretAligned) {
  SourceFile file;
  file.path = "t.py";
  file.text = "def f(x):\n\treturn x\n";
  const std::string text = format_diagnostic(file, SourceLoc{2, 8, 2, 9}, "m");
  EXPECT_EQ(text, "File \"t.py\", line 2, col 9\n\treturn x\n\t       ^\nm");
}

TEST(Diagnostics, InvalidLocationShowsOnlyTheFile) {
  const SourceFile file = kernel_file();
  EXPECT_EQ(format_diagnostic(file, SourceLoc{}, "NameError: no function"), "File \"k.py\"\nNameError: no function");
}

TEST(Diagnostics, LineOutsideTheTextShowsNoSource) {
  const SourceFile file = kernel_file();
  EXPECT_EQ(format_diagnostic(file, SourceLoc{50, 2, 50, 3}, "m"), "File \"k.py\", line 50, col 3\nm");
}

TEST(Diagnostics, ErrorKindNames) {
  EXPECT_STREQ(error_kind_name(ErrorKind::Syntax), "SyntaxError");
  EXPECT_STREQ(error_kind_name(ErrorKind::Type), "TypeError");
  EXPECT_STREQ(error_kind_name(ErrorKind::Name), "NameError");
  EXPECT_STREQ(error_kind_name(ErrorKind::Value), "ValueError");
  EXPECT_STREQ(error_kind_name(ErrorKind::Unsupported), "NotImplementedError");
  EXPECT_STREQ(error_kind_name(ErrorKind::Pragma), "SyntaxError");
  EXPECT_STREQ(error_kind_name(ErrorKind::Race), "RaceError");
}

TEST(CompileError, WhatIsTheFormattedDiagnostic) {
  const SourceFile file = kernel_file();
  const CompileError error(ErrorKind::Unsupported, "'with' statements are not supported", file, SourceLoc{6, 4, 6, 7});
  EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
  EXPECT_EQ(error.message(), "'with' statements are not supported");
  EXPECT_EQ(error.path(), "k.py");
  EXPECT_EQ(error.loc().line, 6);
  EXPECT_EQ(std::string(error.what()),
            "File \"k.py\", line 6, col 5\n"
            "    for i in range(3):\n"
            "    ^~~\n"
            "NotImplementedError: 'with' statements are not supported");
}

TEST(InternalError, NamesTheCompilerSourceFile) {
  try {
    internal_error("lost a node", "/src/plait/src/ir/passes.cpp", 42);
    FAIL() << "internal_error returned";
  } catch (const InternalError& error) {
    EXPECT_EQ(std::string(error.what()), "internal compiler error at passes.cpp:42: lost a node");
  }
}

TEST(InternalError, MacrosThrow) {
  EXPECT_THROW(PLAIT_INTERNAL_ERROR("boom"), InternalError);
  EXPECT_THROW(PLAIT_ASSERT(1 + 1 == 3), InternalError);
  EXPECT_NO_THROW(PLAIT_ASSERT(1 + 1 == 2));
  try {
    PLAIT_ASSERT(false);
  } catch (const InternalError& error) {
    EXPECT_NE(std::string(error.what()).find("test_diagnostics.cpp:"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("assertion failed: false"), std::string::npos);
  }
}

}  // namespace
}  // namespace plait
