// The recursive-descent parser for Plait's Python subset.
//
// It reads whole files or single functions, parses each `def` into the AST of
// frontend/ast.h with exact source spans, attaches `#pragma` lines to the
// statement below them, and reports valid Python outside the subset as
// NotImplementedError with a caret at the construct.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "frontend/ast.h"
#include "support/diagnostics.h"

namespace plait {

// Parses every top-level `def` in `file.text`; other top-level statements
// (imports, assignments, `if __name__` blocks, classes, decorators...) are
// skipped without being parsed, so that whole user files can be given.
ast::Module parse_module(const SourceFile& file);

// Parses and returns the top-level function `name` (the last one when it is
// defined twice, as Python binds it); other functions are not parsed.
// Throws CompileError Name "no function named 'x' in k.py" if absent.
ast::FunctionDef parse_function(const SourceFile& file, const std::string& name);

// The module-level names plaitc needs from a whole file: import aliases
// (alias -> dotted module or object name: `import numpy as np` gives
// np -> "numpy", `from plait import prange` gives prange -> "plait.prange"),
// constants assigned a literal int, float or bool, possibly negated
// (`N = 10`, `ALPHA = -0.5`, `FLAG = True`), and the functions defined. A
// later binding of the same name replaces an earlier one; a name rebound to
// anything else is dropped.
struct ModuleNames {
  std::map<std::string, std::string> imports;
  std::map<std::string, ast::Constant::Value> constants;
  std::set<std::string> functions;  // the names of top-level `def`s
};
ModuleNames scan_module_names(const SourceFile& file);

// Parses the text of one pragma comment. `comment` is the comment after its
// '#' ("pragma parallel for reduction(+:s)") and `loc` its span; clause spans
// are computed from it. Text containing "=>" is kept whole in `text` with no
// words or clauses. Throws CompileError Pragma for an empty pragma, an
// unbalanced parenthesis, an empty clause argument or a stray character.
ast::Pragma parse_pragma_comment(const SourceFile& file, std::string_view comment, SourceLoc loc);

}  // namespace plait
