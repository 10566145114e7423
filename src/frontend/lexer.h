// The tokenizer for Plait's Python subset.
//
// It follows Python's lexical rules (INDENT/DEDENT, implicit line joining
// inside brackets, backslash continuation, all numeric and string literal
// forms) so that whole user files can be tokenized, and keeps `#pragma`
// comments as tokens. Positions are file lines (SourceFile::first_line +
// line index) and 0-based byte columns of the original, undedented text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/diagnostics.h"

namespace plait {

enum class TokenKind {
  Name,        // identifiers, including soft keywords such as `match`
  Keyword,     // Python's reserved words: `if`, `for`, `None`, `True`...
  Int,         // int_value holds the value; text the spelling
  Float,       // float_value holds the value; text the spelling
  String,      // text holds the decoded value; string_prefix the prefix
  Op,          // operators and delimiters: `+`, `**=`, `(`, `:`, `->`...
  Newline,     // the end of a logical line
  Indent,
  Dedent,
  Pragma,      // a `#pragma` comment on its own line
  EndOfInput,
};

const char* token_kind_name(TokenKind kind);

struct DeferredError {
  ErrorKind kind = ErrorKind::Syntax;
  std::string message;
  SourceLoc loc;
};

struct Token {
  TokenKind kind = TokenKind::EndOfInput;
  // Name/Keyword/Op: the spelling. Int/Float: the literal as written.
  // String: the decoded contents (escapes processed unless raw).
  // Pragma: the comment text after '#', trailing blanks removed
  // ("pragma parallel for").
  std::string text;
  SourceLoc loc;  // Pragma: the span of `text`, which starts after the '#'
  // Int: the value. The literal 2**63, too large by itself, holds INT64_MIN
  // so that the parser can accept `-9223372036854775808`.
  int64_t int_value = 0;
  double float_value = 0.0;
  // String: the prefix letters, lower-cased, in source order ("", "r", "f",
  // "b", "rb"...). The lexer accepts every prefix so that whole files can be
  // tokenized; the parser rejects f-strings and bytes in kernels.
  std::string string_prefix;
  // A literal the lexer accepts so that whole files tokenize, but that
  // kernels cannot use: an integer beyond int64 (Syntax), a complex number or
  // a `\N{...}` escape (Unsupported). The parser reports it when a kernel
  // uses the token.
  std::optional<DeferredError> deferred_error;
  // Pragma: a blank line separates this pragma from the next token.
  bool blank_line_after = false;

  bool is_op(std::string_view op) const { return kind == TokenKind::Op && text == op; }
  bool is_keyword(std::string_view word) const { return kind == TokenKind::Keyword && text == word; }
};

// The tokens of a source text. `stray_pragmas` are `#pragma` comments that
// share their line with code or sit inside brackets: they cannot attach to a
// statement, and the parser reports them when they fall inside a kernel.
struct LexedSource {
  std::vector<Token> tokens;  // always ends with EndOfInput
  std::vector<Token> stray_pragmas;
};

// Tokenizes `file.text`. The text may be indented as a whole (a method or a
// nested function): the indentation of its first line holding a token is the
// base level. Throws CompileError Syntax for malformed text.
LexedSource tokenize(const SourceFile& file);

// Whether `word` is one of Python's reserved words.
bool is_python_keyword(std::string_view word);

}  // namespace plait
