// Source positions, user-facing compile errors and internal errors.
//
// Every IR and AST node carries a SourceLoc, so any error raised by any stage
// can point at the user's line with a caret. Internal errors (compiler bugs)
// name the compiler's own file and line instead.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace plait {

// A span in the user's file. Lines are 1-based file lines (already offset by
// the function's first line), columns are 0-based byte offsets into the UTF-8
// line (CompileError::loc() converts them to characters). end_col is
// exclusive and refers to end_line.
struct SourceLoc {
  int line = 0;
  int col = 0;
  int end_line = 0;
  int end_col = 0;

  bool valid() const { return line > 0; }
  // The span from the start of `a` to the end of `b`.
  static SourceLoc span(const SourceLoc& a, const SourceLoc& b) {
    return SourceLoc{a.line, a.col, b.end_line, b.end_col};
  }
};

// The text being compiled: the function's source as given by the caller
// (for Python callers: inspect.getsource) and where it sits in its file,
// with the text of the functions inlined into it (frontend/inline_calls.h).
struct SourceFile {
  std::string path;        // the user's .py file, as shown in errors
  std::string text;        // the function's source text (may be indented)
  int first_line = 1;      // file line number of the first line of `text`

  // A function inlined into this one, numbered in one line space with it, as
  // a compiler's source manager numbers all its files: its lines are its
  // file's lines plus `line_offset`, which is 0 in the same file and a
  // multiple of kInlinedLineSpan for another file (so one number names one
  // line of one file).
  struct Inlined {
    std::string path;
    std::string text;
    int first_line = 1;  // in this line space: the file's line plus line_offset
    int line_offset = 0;
  };
  static constexpr int kInlinedLineSpan = 1 << 22;
  std::vector<Inlined> inlined = {};

  // The line `line` of this line space, without '\n', or "" when out of
  // range.
  std::string line_text(int line) const;
  // The file that line `line` is in, and its number there.
  const std::string& path_of(int line) const;
  int file_line(int line) const;
};

// The Python exception class a CompileError maps to.
enum class ErrorKind {
  Syntax,          // SyntaxError: malformed source or pragma
  Type,            // TypeError: type inference or argument types
  Name,            // NameError: unknown name
  Value,           // ValueError
  Unsupported,     // NotImplementedError: valid Python outside the subset
  Pragma,          // SyntaxError subclass: a misplaced or malformed pragma
  Race,            // a parallel loop that would race
  UnboundLocal,    // UnboundLocalError (a NameError): a local read where no assignment reaches it
};

const char* error_kind_name(ErrorKind kind);

// A user error: bad input to the compiler. what() is the full, formatted
// message: `File "k.py", line 7, col 5` then the source line and a caret.
// loc() counts columns in characters (code points), as Python's SyntaxError
// offsets do, and the caret stands under that character.
class CompileError : public std::runtime_error {
 public:
  CompileError(ErrorKind kind, std::string message, const SourceFile& file, SourceLoc loc);

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }
  const std::string& path() const { return path_; }

 private:
  ErrorKind kind_;
  std::string message_;
  std::string path_;
  SourceLoc loc_;
};

// Formats `File "path", line L` + source line + caret line + message; `loc`
// counts bytes, the text shows characters.
std::string format_diagnostic(const SourceFile& file, SourceLoc loc, const std::string& message);

// `loc`, whose columns count bytes, with columns that count characters (code
// points), as Python counts them.
SourceLoc character_columns(const SourceFile& file, SourceLoc loc);

// The source line of `loc` and, below it, the caret line marking `loc`
// (columns in characters), joined by '\n'; "" when the line is not in
// `file`.
std::string source_excerpt(const SourceFile& file, const SourceLoc& loc);

// A compiler bug or an environment failure (C++ compiler failed, dlopen
// failed). what() names the compiler's own source location.
class InternalError : public std::runtime_error {
 public:
  InternalError(const std::string& message, const char* file, int line);
};

[[noreturn]] void internal_error(const std::string& message, const char* file, int line);

}  // namespace plait

#define PLAIT_INTERNAL_ERROR(msg) ::plait::internal_error((msg), __FILE__, __LINE__)
#define PLAIT_ASSERT(cond)                                                      \
  do {                                                                          \
    if (!(cond)) ::plait::internal_error("assertion failed: " #cond, __FILE__, __LINE__); \
  } while (0)
