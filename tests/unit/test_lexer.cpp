// Tests for the tokenizer: token kinds, values, exact positions, indentation,
// line joining, literals, pragma tokens and lexical errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "frontend/lexer.h"

namespace plait {
namespace {

SourceFile source(const std::string& text, int first_line = 1) {
  SourceFile file;
  file.path = "k.py";
  file.text = text;
  file.first_line = first_line;
  return file;
}

std::string loc_text(const SourceLoc& loc) {
  return std::to_string(loc.line) + ":" + std::to_string(loc.col) + "-" + std::to_string(loc.end_line) + ":" +
         std::to_string(loc.end_col);
}

// The tokens as "kind:text" words, e.g. "name:x op:= int:1 NEWLINE".
std::string describe(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& token : tokens) {
    if (!out.empty()) out += ' ';
    switch (token.kind) {
      case TokenKind::Name: out += "name:" + token.text; break;
      case TokenKind::Keyword: out += "kw:" + token.text; break;
      case TokenKind::Int: out += "int:" + std::to_string(token.int_value); break;
      case TokenKind::Float: out += "float:" + token.text; break;
      case TokenKind::String: out += "str:" + token.string_prefix + "'" + token.text + "'"; break;
      case TokenKind::Op: out += "op:" + token.text; break;
      case TokenKind::Newline: out += "NEWLINE"; break;
      case TokenKind::Indent: out += "INDENT"; break;
      case TokenKind::Dedent: out += "DEDENT"; break;
      case TokenKind::Pragma: out += "PRAGMA:" + token.text; break;
      case TokenKind::EndOfInput: out += "END"; break;
    }
  }
  return out;
}

std::string lex(const std::string& text) { return describe(tokenize(source(text)).tokens); }

CompileError lex_error(const std::string& text, int first_line = 1) {
  try {
    tokenize(source(text, first_line));
  } catch (const CompileError& error) {
    return error;
  }
  throw std::runtime_error("expected a CompileError for: " + text);
}

TEST(Lexer, SimpleFunctionTokensAndPositions) {
  const LexedSource lexed = tokenize(source("def f(a):\n    return a + 1\n"));
  EXPECT_EQ(describe(lexed.tokens),
            "kw:def name:f op:( name:a op:) op:: NEWLINE INDENT kw:return name:a op:+ int:1 NEWLINE DEDENT END");
  const std::vector<Token>& t = lexed.tokens;
  EXPECT_EQ(loc_text(t[0].loc), "1:0-1:3");    // def
  EXPECT_EQ(loc_text(t[1].loc), "1:4-1:5");    // f
  EXPECT_EQ(loc_text(t[5].loc), "1:8-1:9");    // :
  EXPECT_EQ(loc_text(t[6].loc), "1:9-1:10");   // NEWLINE just after the last token
  EXPECT_EQ(loc_text(t[7].loc), "2:4-2:5");    // INDENT at the first character
  EXPECT_EQ(loc_text(t[8].loc), "2:4-2:10");   // return
  EXPECT_EQ(loc_text(t[11].loc), "2:15-2:16"); // 1
}

TEST(Lexer, FirstLineOffsetsEveryPosition) {
  const LexedSource lexed = tokenize(source("def f():\n    pass\n", 41));
  EXPECT_EQ(loc_text(lexed.tokens[0].loc), "41:0-41:3");
  EXPECT_EQ(loc_text(lexed.tokens[7].loc), "42:4-42:8");  // pass
}

TEST(Lexer, NestedIndentationAndMultipleDedents) {
  EXPECT_EQ(lex("if a:\n  if b:\n    x\ny\n"),
            "kw:if name:a op:: NEWLINE INDENT kw:if name:b op:: NEWLINE INDENT name:x NEWLINE DEDENT DEDENT "
            "name:y NEWLINE END");
}

TEST(Lexer, IndentedSourceIsDedentedByItsFirstLine) {
  const LexedSource lexed = tokenize(source("    def m(self):\n        return 1\n", 10));
  EXPECT_EQ(describe(lexed.tokens),
            "kw:def name:m op:( name:self op:) op:: NEWLINE INDENT kw:return int:1 NEWLINE DEDENT END");
  EXPECT_EQ(loc_text(lexed.tokens[0].loc), "10:4-10:7");  // columns stay those of the original text
  EXPECT_EQ(loc_text(lexed.tokens[8].loc), "11:8-11:14");
}

TEST(Lexer, IndentedSourceCannotDedentBelowItsBase) {
  const CompileError error = lex_error("    def m():\n        pass\n  x = 1\n");
  EXPECT_EQ(error.kind(), ErrorKind::Syntax);
  EXPECT_EQ(error.message(), "unindent does not match any outer indentation level");
  EXPECT_EQ(error.loc().line, 3);
}

TEST(Lexer, BlankAndCommentLinesDoNotAffectIndentation) {
  EXPECT_EQ(lex("if a:\n\n      # comment\n  x\n\n  y\n"),
            "kw:if name:a op:: NEWLINE INDENT name:x NEWLINE name:y NEWLINE DEDENT END");
}

TEST(Lexer, ImplicitLineJoiningInsideBrackets) {
  const LexedSource lexed = tokenize(source("x = f(a,\n  b,  # note\n\n      c)\ny = 2\n"));
  EXPECT_EQ(describe(lexed.tokens),
            "name:x op:= name:f op:( name:a op:, name:b op:, name:c op:) NEWLINE name:y op:= int:2 NEWLINE END");
  EXPECT_EQ(loc_text(lexed.tokens[6].loc), "2:2-2:3");  // b
  EXPECT_EQ(loc_text(lexed.tokens[8].loc), "4:6-4:7");  // c
}

TEST(Lexer, BackslashContinuation) {
  EXPECT_EQ(lex("x = 1 + \\\n        2\ny = 3\n"), "name:x op:= int:1 op:+ int:2 NEWLINE name:y op:= int:3 NEWLINE END");
  const CompileError error = lex_error("x = 1 \\ + 2\n");
  EXPECT_EQ(error.message(), "unexpected character after line continuation character");
  EXPECT_EQ(loc_text(error.loc()), "1:7-1:8");
}

TEST(Lexer, MissingFinalNewlineAndCrLf) {
  EXPECT_EQ(lex("x = 1"), "name:x op:= int:1 NEWLINE END");
  EXPECT_EQ(lex("if a:\r\n    b\r\n"), "kw:if name:a op:: NEWLINE INDENT name:b NEWLINE DEDENT END");
  EXPECT_EQ(lex(""), "END");
}

TEST(Lexer, IntegerLiterals) {
  EXPECT_EQ(lex("0 7 1_000_000 0x_ff 0XFF 0o17 0b1010 0B1_1 9223372036854775807 00"),
            "int:0 int:7 int:1000000 int:255 int:255 int:15 int:10 int:3 int:9223372036854775807 int:0 NEWLINE END");
}

TEST(Lexer, LiteralsKernelsCannotUseAreMarkedForTheParser) {
  const LexedSource lexed =
      tokenize(source("9223372036854775807 9223372036854775808 0x1_0000_0000_0000_0000 2j 1.5J 'a\\N{DASH}b'"));
  EXPECT_FALSE(lexed.tokens[0].deferred_error);
  ASSERT_TRUE(lexed.tokens[1].deferred_error);
  EXPECT_EQ(lexed.tokens[1].deferred_error->kind, ErrorKind::Syntax);
  EXPECT_EQ(lexed.tokens[1].deferred_error->message, "integer literal is too large for a 64-bit integer");
  EXPECT_EQ(loc_text(lexed.tokens[1].deferred_error->loc), "1:20-1:39");
  EXPECT_TRUE(lexed.tokens[2].deferred_error);
  ASSERT_TRUE(lexed.tokens[3].deferred_error);
  EXPECT_EQ(lexed.tokens[3].deferred_error->kind, ErrorKind::Unsupported);
  EXPECT_EQ(lexed.tokens[3].deferred_error->message, "complex literals are not supported in Plait kernels");
  EXPECT_EQ(loc_text(lexed.tokens[3].loc), "1:64-1:66");
  EXPECT_TRUE(lexed.tokens[4].deferred_error);
  ASSERT_TRUE(lexed.tokens[5].deferred_error);
  EXPECT_EQ(lexed.tokens[5].text, "a\\N{DASH}b");
  EXPECT_EQ(loc_text(lexed.tokens[5].deferred_error->loc), "1:74-1:82");
}

TEST(Lexer, IntegerLiteralErrors) {
  EXPECT_EQ(lex_error("x = 0123\n").message(),
            "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
  CompileError error = lex_error("x = 0b102\n");
  EXPECT_EQ(error.message(), "invalid digit '2' in binary literal");
  EXPECT_EQ(loc_text(error.loc()), "1:8-1:9");
  EXPECT_EQ(lex_error("x = 0o8\n").message(), "invalid digit '8' in octal literal");
  EXPECT_EQ(lex_error("x = 0xfg\n").message(), "invalid hexadecimal literal");
  EXPECT_EQ(lex_error("x = 0x\n").message(), "invalid hexadecimal literal");
  EXPECT_EQ(lex_error("x = 1__0\n").message(), "invalid decimal literal");
  EXPECT_EQ(lex_error("x = 10_\n").message(), "invalid decimal literal");
  EXPECT_EQ(lex_error("x = 12abc\n").message(), "invalid decimal literal");
}

TEST(Lexer, FloatLiterals) {
  const LexedSource lexed = tokenize(source("1. .5 1e3 1.5e-3 2E+2 1_0.2_5 1.e2 0.0 1e400"));
  EXPECT_EQ(describe(lexed.tokens),
            "float:1. float:.5 float:1e3 float:1.5e-3 float:2E+2 float:1_0.2_5 float:1.e2 float:0.0 float:1e400 "
            "NEWLINE END");
  EXPECT_DOUBLE_EQ(lexed.tokens[0].float_value, 1.0);
  EXPECT_DOUBLE_EQ(lexed.tokens[1].float_value, 0.5);
  EXPECT_DOUBLE_EQ(lexed.tokens[2].float_value, 1000.0);
  EXPECT_DOUBLE_EQ(lexed.tokens[3].float_value, 0.0015);
  EXPECT_DOUBLE_EQ(lexed.tokens[4].float_value, 200.0);
  EXPECT_DOUBLE_EQ(lexed.tokens[5].float_value, 10.25);
  EXPECT_DOUBLE_EQ(lexed.tokens[6].float_value, 100.0);
  EXPECT_TRUE(std::isinf(lexed.tokens[8].float_value));
  EXPECT_EQ(loc_text(lexed.tokens[1].loc), "1:3-1:5");
}

TEST(Lexer, FloatLiteralErrors) {
  EXPECT_EQ(lex_error("x = 1e\n").message(), "invalid decimal literal");
  EXPECT_EQ(lex_error("x = 1._5\n").message(), "invalid decimal literal");
  EXPECT_EQ(lex_error("x = 2jx\n").message(), "invalid decimal literal");
}

TEST(Lexer, AttributeAfterNameIsNotAFloat) {
  EXPECT_EQ(lex("a.b x[1].c"), "name:a op:. name:b name:x op:[ int:1 op:] op:. name:c NEWLINE END");
}

TEST(Lexer, StringLiterals) {
  EXPECT_EQ(lex(R"(a = 'x' "y\"z" 'it\'s' "\t\x41\101\u00e9" "\q")"),
            "name:a op:= str:'x' str:'y\"z' str:'it's' str:'\tAA\xc3\xa9' str:'\\q' NEWLINE END");
  EXPECT_EQ(lex(R"(r'\n' Rb'\d' f"{x}" B"b" u'u')"),
            "str:r'\\n' str:rb'\\d' str:f'{x}' str:b'b' str:u'u' NEWLINE END");
}

TEST(Lexer, TripleQuotedStringsSpanLines) {
  const LexedSource lexed = tokenize(source("def f():\n    \"\"\"Doc\n    'more' \"\"\"\n    return\n"));
  EXPECT_EQ(describe(lexed.tokens),
            "kw:def name:f op:( op:) op:: NEWLINE INDENT str:'Doc\n    'more' ' NEWLINE kw:return NEWLINE DEDENT END");
  EXPECT_EQ(loc_text(lexed.tokens[7].loc), "2:4-3:14");
}

TEST(Lexer, StringErrors) {
  CompileError error = lex_error("x = 'abc\n", 5);
  EXPECT_EQ(error.message(), "unterminated string literal");
  EXPECT_EQ(loc_text(error.loc()), "5:4-5:5");
  error = lex_error("x = '''abc\n\n");
  EXPECT_EQ(error.message(), "unterminated triple-quoted string literal");
  EXPECT_EQ(loc_text(error.loc()), "1:4-1:7");
  EXPECT_EQ(lex_error(R"(x = "\x4")").message(), "truncated \\x escape");
  EXPECT_EQ(lex_error(R"(x = "\N")").message(), "malformed \\N character escape");
}

TEST(Lexer, OperatorsUseLongestMatch) {
  EXPECT_EQ(lex("a **= b // c //= d >>= e << f != g -> h := i ... @= j ** k <= l == m"),
            "name:a op:**= name:b op:// name:c op://= name:d op:>>= name:e op:<< name:f op:!= name:g op:-> "
            "name:h op::= name:i op:... op:@= name:j op:** name:k op:<= name:l op:== name:m NEWLINE END");
}

TEST(Lexer, KeywordsAndSoftKeywords) {
  EXPECT_EQ(lex("for match in None: _"), "kw:for name:match kw:in kw:None op:: name:_ NEWLINE END");
  EXPECT_TRUE(is_python_keyword("while"));
  EXPECT_FALSE(is_python_keyword("print"));
}

TEST(Lexer, BracketErrors) {
  CompileError error = lex_error("x = (1,\n  2\n");
  EXPECT_EQ(error.message(), "'(' was never closed");
  EXPECT_EQ(loc_text(error.loc()), "1:4-1:5");
  error = lex_error("x = 1)\n");
  EXPECT_EQ(error.message(), "unmatched ')'");
  EXPECT_EQ(loc_text(error.loc()), "1:5-1:6");
  error = lex_error("x = [1)\n");
  EXPECT_EQ(error.message(), "closing parenthesis ')' does not match opening parenthesis '['");
}

TEST(Lexer, InvalidCharacter) {
  const CompileError error = lex_error("x = a $ b\n");
  EXPECT_EQ(error.kind(), ErrorKind::Syntax);
  EXPECT_EQ(error.message(), "invalid character '$'");
  EXPECT_EQ(loc_text(error.loc()), "1:6-1:7");
  EXPECT_EQ(lex_error("x = a ! b\n").message(), "invalid character '!'");
}

TEST(Lexer, TabsCountToTheNextMultipleOfEight) {
  // Four spaces and a tab are deeper than nothing under both tab sizes.
  EXPECT_EQ(lex("if a:\n    \tx\n"), "kw:if name:a op:: NEWLINE INDENT name:x NEWLINE DEDENT END");
  EXPECT_EQ(lex("if a:\n\tx\n\ty\n"), "kw:if name:a op:: NEWLINE INDENT name:x NEWLINE name:y NEWLINE DEDENT END");
  // Two levels written with tabs in both lines agree under any tab size.
  EXPECT_EQ(lex("if a:\n\tif b:\n\t\tx\n"),
            "kw:if name:a op:: NEWLINE INDENT kw:if name:b op:: NEWLINE INDENT name:x NEWLINE DEDENT DEDENT END");
}

TEST(Lexer, InconsistentTabsAndSpacesAreRejected) {
  // A tab and eight spaces are equal at tab size 8 but not at tab size 1.
  CompileError error = lex_error("if a:\n\tx\n        y\n");
  EXPECT_EQ(error.kind(), ErrorKind::Syntax);
  EXPECT_EQ(error.message(), "inconsistent use of tabs and spaces in indentation");
  EXPECT_EQ(error.loc().line, 3);
  EXPECT_EQ(lex_error("if a:\n        x\n\ty\n").message(), "inconsistent use of tabs and spaces in indentation");
  EXPECT_EQ(lex_error("if a:\n  x\n\ty\n").message(), "inconsistent use of tabs and spaces in indentation");
}

TEST(Lexer, UnindentMustMatchAnOuterLevel) {
  const CompileError error = lex_error("if a:\n    x\n  y\n");
  EXPECT_EQ(error.message(), "unindent does not match any outer indentation level");
  EXPECT_EQ(error.loc().line, 3);
}

TEST(Lexer, CommentsAreDroppedAndPragmasKept) {
  const LexedSource lexed = tokenize(source("x = 1  # plain\n# pragma not one\n#pragmatic\n  #pragma  simd(8)  \ny\n"));
  EXPECT_EQ(describe(lexed.tokens), "name:x op:= int:1 NEWLINE PRAGMA:pragma  simd(8) name:y NEWLINE END");
  const Token& pragma = lexed.tokens[4];
  EXPECT_EQ(loc_text(pragma.loc), "4:3-4:18");  // from after '#' to the last non-blank
  EXPECT_FALSE(pragma.blank_line_after);
  EXPECT_TRUE(lexed.stray_pragmas.empty());
}

TEST(Lexer, PragmaAtADedentComesBeforeOrAfterTheDedentByIndentation) {
  // Indented like the inner block: it belongs there, before the DEDENT.
  EXPECT_EQ(lex("for i in r:\n    a\n    #pragma atomic\nb\n"),
            "kw:for name:i kw:in name:r op:: NEWLINE INDENT name:a NEWLINE PRAGMA:pragma atomic DEDENT name:b "
            "NEWLINE END");
  // Indented like the next statement: after the DEDENT.
  EXPECT_EQ(lex("for i in r:\n    a\n#pragma simd\nb\n"),
            "kw:for name:i kw:in name:r op:: NEWLINE INDENT name:a NEWLINE DEDENT PRAGMA:pragma simd name:b "
            "NEWLINE END");
  // Above an indented block's first statement: after the INDENT.
  EXPECT_EQ(lex("for i in r:\n    #pragma atomic\n    a\n"),
            "kw:for name:i kw:in name:r op:: NEWLINE INDENT PRAGMA:pragma atomic name:a NEWLINE DEDENT END");
  // At the end of the text, inside the block.
  EXPECT_EQ(lex("for i in r:\n    a\n    #pragma simd\n"),
            "kw:for name:i kw:in name:r op:: NEWLINE INDENT name:a NEWLINE PRAGMA:pragma simd DEDENT END");
}

TEST(Lexer, BlankLineAfterPragmaIsRecorded) {
  const LexedSource lexed = tokenize(source("#pragma a\n# note\n#pragma b\n\nx\n"));
  ASSERT_EQ(describe(lexed.tokens), "PRAGMA:pragma a PRAGMA:pragma b name:x NEWLINE END");
  EXPECT_FALSE(lexed.tokens[0].blank_line_after);
  EXPECT_TRUE(lexed.tokens[1].blank_line_after);
}

TEST(Lexer, PragmasSharingALineWithCodeAreStray) {
  const LexedSource lexed = tokenize(source("for i in r:  #pragma simd\n    f(a,  #pragma x\n      b)\n"));
  EXPECT_EQ(describe(lexed.tokens),
            "kw:for name:i kw:in name:r op:: NEWLINE INDENT name:f op:( name:a op:, name:b op:) NEWLINE DEDENT END");
  ASSERT_EQ(lexed.stray_pragmas.size(), 2u);
  EXPECT_EQ(lexed.stray_pragmas[0].text, "pragma simd");
  EXPECT_EQ(loc_text(lexed.stray_pragmas[0].loc), "1:14-1:25");
  EXPECT_EQ(lexed.stray_pragmas[1].loc.line, 2);
}

TEST(Lexer, TokenKindNames) {
  EXPECT_STREQ(token_kind_name(TokenKind::Newline), "end of line");
  EXPECT_STREQ(token_kind_name(TokenKind::Pragma), "pragma");
}

}  // namespace
}  // namespace plait
