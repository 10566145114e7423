// The recursive-descent parser (parser.h) as a class over the tokens, shared
// by its parts: parser_statements.cpp (functions, blocks, statements and the
// module-level name scan) and parser_expressions.cpp (expressions, by
// precedence). Private to frontend/.
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <utility>
#include "frontend/parser.h"

#include "frontend/lexer.h"
#include "support/compiler_stack.h"

namespace plait::parsing {

using ast::ExprPtr;
using ast::StmtList;
using ast::StmtPtr;

inline std::string trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return "";
  const size_t end = text.find_last_not_of(" \t");
  return std::string(text.substr(begin, end - begin + 1));
}

inline bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Binary operator levels from loosest to tightest, below comparisons and
// above unary operators.
inline const std::vector<std::vector<std::pair<std::string_view, ast::BinOpKind>>>& binary_levels() {
  using ast::BinOpKind;
  static const std::vector<std::vector<std::pair<std::string_view, BinOpKind>>> kLevels = {
      {{"|", BinOpKind::BitOr}},
      {{"^", BinOpKind::BitXor}},
      {{"&", BinOpKind::BitAnd}},
      {{"<<", BinOpKind::LShift}, {">>", BinOpKind::RShift}},
      {{"+", BinOpKind::Add}, {"-", BinOpKind::Sub}},
      {{"*", BinOpKind::Mult},
       {"/", BinOpKind::Div},
       {"//", BinOpKind::FloorDiv},
       {"%", BinOpKind::Mod},
       {"@", BinOpKind::MatMult}},
  };
  return kLevels;
}

inline std::optional<ast::BinOpKind> augmented_op(const Token& token) {
  using ast::BinOpKind;
  static const std::pair<std::string_view, BinOpKind> kOps[] = {
      {"+=", BinOpKind::Add},       {"-=", BinOpKind::Sub},   {"*=", BinOpKind::Mult},   {"/=", BinOpKind::Div},
      {"//=", BinOpKind::FloorDiv}, {"%=", BinOpKind::Mod},   {"**=", BinOpKind::Pow},   {"<<=", BinOpKind::LShift},
      {">>=", BinOpKind::RShift},   {"|=", BinOpKind::BitOr}, {"^=", BinOpKind::BitXor}, {"&=", BinOpKind::BitAnd},
      {"@=", BinOpKind::MatMult},
  };
  if (token.kind != TokenKind::Op) return std::nullopt;
  for (const auto& [spelling, op] : kOps) {
    if (token.text == spelling) return op;
  }
  return std::nullopt;
}

// What an expression is called in "cannot assign to ..." messages.
inline const char* expression_noun(const ast::Expr& expr) {
  switch (expr.kind) {
    case ast::ExprKind::Constant:
      return "literal";
    case ast::ExprKind::Call:
      return "function call";
    case ast::ExprKind::Compare:
      return "comparison";
    case ast::ExprKind::IfExp:
      return "conditional expression";
    case ast::ExprKind::Tuple:
      return "tuple";
    case ast::ExprKind::List:
      return "list";
    default:
      return "expression";
  }
}

class Parser {
 public:
  explicit Parser(const SourceFile& file) : file_(file), lexed_(tokenize(file)), tokens_(lexed_.tokens) {}

  ast::Module parse_all();

  std::optional<ast::FunctionDef> parse_named(const std::string& name);

  ModuleNames scan_names();

 private:
  // ------------------------------------------------------------ tokens

  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& advance();
  bool at_end() const { return peek().kind == TokenKind::EndOfInput; }

  // The span from the start of token `start` to the end of the last token
  // consumed: parentheses around operands are part of the span.
  SourceLoc since(size_t start) const;

  [[noreturn]] void fail(ErrorKind kind, const std::string& message, SourceLoc loc) const {
    throw CompileError(kind, message, file_, loc);
  }
  [[noreturn]] void report(const DeferredError& error) const { fail(error.kind, error.message, error.loc); }
  [[noreturn]] void syntax_error(const std::string& message, SourceLoc loc) const {
    fail(ErrorKind::Syntax, message, loc);
  }
  // `what` is a plural phrase with its verb: "'with' statements are".
  [[noreturn]] void unsupported(const std::string& what, SourceLoc loc) const {
    fail(ErrorKind::Unsupported, what + " not supported in Plait kernels", loc);
  }
  // An expression nested deeper than the later stages' recursion can take
  // (support/compiler_stack.h); `loc` is the token that crossed the limit.
  [[noreturn]] void too_deep(SourceLoc loc) const {
    syntax_error("expression nested too deeply (more than " + std::to_string(kMaxExpressionDepth) +
                     " levels of operators, calls, subscripts and parentheses); split it into several statements",
                 loc);
  }
  // Refuses `expr` when its tree is higher than the limit; `loc` is the
  // operator or trailer that made it so.
  void check_height(const ast::Expr& expr, SourceLoc loc) const;

  // One level of the parser's own recursion into a nested expression:
  // parentheses, which leave no node, nest the parser without raising the
  // tree, so the parser counts its recursion as well as the tree's height.
  class Nesting {
   public:
    explicit Nesting(Parser& parser) : parser_(parser) {
      if (parser_.nesting_ >= kMaxExpressionDepth) parser_.too_deep(parser_.peek().loc);
      ++parser_.nesting_;
    }
    ~Nesting() { --parser_.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    Parser& parser_;
  };

  [[noreturn]] void unexpected(const Token& token) const {
    switch (token.kind) {
      case TokenKind::Newline:
        syntax_error("unexpected end of line", token.loc);
      case TokenKind::EndOfInput:
        syntax_error("unexpected end of input", token.loc);
      case TokenKind::Indent:
        syntax_error("unexpected indent", token.loc);
      default:
        syntax_error("invalid syntax", token.loc);
    }
  }

  const Token& expect_op(std::string_view op, const std::string& message = "");

  // ------------------------------------------------------------ top level

  // Skips one top-level statement with its indented block, unparsed.
  void skip_top_level_statement();

  // Skips an ignored annotation up to one of `stops` outside brackets. The
  // parameters of a lambda (`lambda a=1, b: a`), up to its ':', are no stop.
  void skip_annotation(std::initializer_list<std::string_view> stops);

  ast::FunctionDef parse_function_def();

  void drop_docstring(StmtList& body) const;

  // Pragmas sharing a line with code cannot attach to a statement.
  void check_stray_pragmas(int first_line) const;

  // ------------------------------------------------------------ statements

  // `construct` names the header for the error message, as Python does:
  // "expected an indented block after 'for' statement on line 3".
  StmtList parse_block(const std::string& construct, int header_line);

  static bool starts_statement(const Token& token);

  [[noreturn]] void misplaced_pragma(const Token& pragma) const {
    fail(ErrorKind::Pragma, "pragma is not directly above a statement", pragma.loc);
  }

  // The run of pragma lines above the next statement, which must follow at
  // the same indentation with no blank line in between.
  std::vector<ast::Pragma> collect_pragmas();

  void reject_unsupported_statement(const Token& token) const;

  void parse_statement(StmtList& out);

  // `a = 1; b = 2` up to and including the NEWLINE.
  void parse_simple_statements(StmtList& out);

  bool at_statement_end() const { return peek().kind == TokenKind::Newline || peek().is_op(";"); }

  StmtPtr parse_simple_statement();

  void check_target(const ast::Expr& target) const;

  void check_augmented_target(const ast::Expr& target, const Token& op) const;

  StmtPtr parse_if();

  StmtList parse_loop_else();

  StmtPtr parse_for();

  StmtPtr parse_while();

  // ------------------------------------------------------------ expressions

  static bool starts_expression(const Token& token);

  // A comma-separated list that is a Tuple when it has a comma (`a, b`).
  template <typename ParseElement>
  ExprPtr parse_list_of(ParseElement parse_element, bool (*continues)(const Token&)) {
    const size_t start = pos_;
    ExprPtr first = parse_element();
    if (!peek().is_op(",")) return first;
    std::vector<ExprPtr> elements;
    elements.push_back(std::move(first));
    while (peek().is_op(",")) {
      advance();
      if (!continues(peek())) break;
      elements.push_back(parse_element());
    }
    return std::make_unique<ast::Tuple>(since(start), std::move(elements));
  }

  ExprPtr parse_star_expressions();

  // A `for` target: stops before `in`, which would otherwise be read as a
  // comparison.
  ExprPtr parse_target_list();

  // A starred target (`for *a, b in t`) is reported by parse_star_expr.
  ExprPtr parse_star_target() { return peek().is_op("*") ? parse_star_expr() : parse_bitor(); }

  ExprPtr parse_star_expr();

  ExprPtr parse_test();

  ExprPtr parse_bool_op(std::string_view keyword, ast::BoolOpKind op, ExprPtr (Parser::*parse_operand)());

  ExprPtr parse_or() { return parse_bool_op("or", ast::BoolOpKind::Or, &Parser::parse_and); }
  ExprPtr parse_and() { return parse_bool_op("and", ast::BoolOpKind::And, &Parser::parse_not); }

  ExprPtr parse_not();

  // Consumes a comparison operator, if one is next.
  std::optional<ast::CmpOpKind> comparison_op();

  ExprPtr parse_comparison();

  ExprPtr parse_bitor() { return parse_binary(0); }

  ExprPtr parse_binary(size_t level);

  ExprPtr parse_factor();

  // The literal 2**63, which fits in int64 only when negated.
  static bool is_int64_min_magnitude(const Token& token);

  // `**` binds tighter than a unary operator on its left and looser than one
  // on its right: -2**-1 is -(2**(-1)).
  ExprPtr parse_power();

  ExprPtr parse_primary();

  ExprPtr parse_call(size_t start, ExprPtr func);

  ExprPtr parse_subscript(size_t start, ExprPtr value);

  ExprPtr parse_slice_item();

  void reject_comprehension(size_t start, const std::string& what);

  ExprPtr parse_atom();

  // Adjacent string literals concatenate.
  ExprPtr parse_strings();

  ExprPtr parse_parenthesized();

  ExprPtr parse_list();
  // `[e for t in it if c ...]` after its element: a List with generators.
  ExprPtr parse_list_comprehension(size_t start, ExprPtr element);
  // Comprehensions parsed and not yet rewritten by the statement that holds
  // them (rewrite_comprehension): any left over is refused.
  int comprehensions_ = 0;
  // Where a comprehension may start: just after `name =` (else refused at once).
  size_t comprehension_start_ = static_cast<size_t>(-1);
  // `L = [e for t in it if c]` as `L = []` and a loop of appends, the loop
  // variables renamed `<listcomp>.t` (they do not leak, as in Python 3).
  void rewrite_comprehension(StmtList& out);

  // `{}`, `{k: v, ...}` and `{a, b}`: a call of `<dict>` or `<set>` (names
  // no user name can shadow) on a list display of the items, (k, v) tuples
  // for a dict, as `dict([(k, v)])` and `set([a, b])` would build them.
  ExprPtr parse_brace();

  // ------------------------------------------------------------ module scan

  static void bind_import(ModuleNames& names, const std::string& alias, const std::string& target);

  std::optional<std::string> scan_dotted_name();

  // `import a.b as c, d`: c -> "a.b", d -> "d"; `import a.b` binds a -> "a".
  void scan_import(ModuleNames& names);

  // `from a.b import c as d, e`: d -> "a.b.c", e -> "a.b.e". Relative and
  // star imports are ignored.
  void scan_from_import(ModuleNames& names);

  // `A = B = <literal>` or `A: T = <literal>` records constants; any other
  // value unbinds the names. A bare annotation `A: T` binds nothing.
  void scan_assignment(ModuleNames& names);

  const SourceFile& file_;
  int nesting_ = 0;  // the Nesting levels open now
  static constexpr int kMaxIndexNesting = 8;
  int index_nesting_ = 0;  // subscripts whose index is being parsed
  LexedSource lexed_;
  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  std::vector<std::string> function_annotated_names_;  // of the function being parsed
};

}  // namespace plait::parsing
