// The recursive-descent parser: tokens -> ast::FunctionDef, with pragma
// attachment, pragma text parsing, and the module-level name scan for plaitc.
#include "frontend/parser.h"

#include "frontend/parser_impl.h"

namespace plait {

using parsing::is_word_char;
using parsing::Parser;
using parsing::trim;

ast::Module parse_module(const SourceFile& file) {
  return Parser(file).parse_all();
}

ast::FunctionDef parse_function(const SourceFile& file, const std::string& name) {
  std::optional<ast::FunctionDef> function = Parser(file).parse_named(name);
  if (!function) {
    throw CompileError(ErrorKind::Name, "no function named '" + name + "' in " + file.path, file, SourceLoc{});
  }
  return std::move(*function);
}

ModuleNames scan_module_names(const SourceFile& file) {
  return Parser(file).scan_names();
}

ast::Pragma parse_pragma_comment(const SourceFile& file, std::string_view comment, SourceLoc loc) {
  constexpr std::string_view kPragma = "pragma";
  const size_t skip = comment.substr(0, kPragma.size()) == kPragma ? kPragma.size() : 0;
  const std::string_view body = comment.substr(skip);
  const int body_col = loc.col + static_cast<int>(skip);
  auto span = [&](size_t begin, size_t end) {
    return SourceLoc{loc.line, body_col + static_cast<int>(begin), loc.line, body_col + static_cast<int>(end)};
  };
  auto fail = [&](const std::string& message, SourceLoc where) {
    throw CompileError(ErrorKind::Pragma, message, file, where);
  };

  ast::Pragma pragma;
  pragma.loc = loc;
  pragma.text = trim(body);
  if (pragma.text.empty()) fail("empty pragma", loc);
  if (pragma.text.find("=>") != std::string::npos) return pragma;

  size_t i = 0;
  while (i < body.size()) {
    const char c = body[i];
    if (c == ' ' || c == '\t' || c == ',') {
      ++i;
      continue;
    }
    if (!is_word_char(c)) fail(std::string("unexpected '") + c + "' in pragma", span(i, i + 1));
    const size_t word_start = i;
    while (i < body.size() && is_word_char(body[i])) ++i;
    std::string word(body.substr(word_start, i - word_start));
    size_t open = i;
    while (open < body.size() && (body[open] == ' ' || body[open] == '\t')) ++open;
    if (open >= body.size() || body[open] != '(') {
      pragma.words.push_back(std::move(word));
      continue;
    }
    ast::PragmaClause clause;
    clause.name = std::move(word);
    int depth = 0;
    size_t close = open;
    size_t arg_start = open + 1;
    for (; close < body.size(); ++close) {
      if (body[close] == '(') ++depth;
      if (body[close] == ')' && --depth == 0) break;
      if (body[close] == ',' && depth == 1) {
        clause.args.push_back(trim(body.substr(arg_start, close - arg_start)));
        arg_start = close + 1;
      }
    }
    if (close >= body.size()) fail("unbalanced parenthesis in pragma", span(open, open + 1));
    std::string last = trim(body.substr(arg_start, close - arg_start));
    if (!clause.args.empty() || !last.empty()) clause.args.push_back(std::move(last));
    for (const std::string& arg : clause.args) {
      if (arg.empty()) fail("empty argument in pragma clause '" + clause.name + "'", span(open, close + 1));
    }
    clause.loc = span(word_start, close + 1);
    pragma.clauses.push_back(std::move(clause));
    i = close + 1;
  }
  return pragma;
}

}  // namespace plait
