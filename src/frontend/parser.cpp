// The recursive-descent parser: tokens -> ast::FunctionDef, with pragma
// attachment, pragma text parsing, and the module-level name scan for plaitc.
#include "frontend/parser.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "frontend/lexer.h"
#include "support/compiler_stack.h"

namespace plait {

namespace {

using ast::ExprPtr;
using ast::StmtList;
using ast::StmtPtr;

std::string trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return "";
  const size_t end = text.find_last_not_of(" \t");
  return std::string(text.substr(begin, end - begin + 1));
}

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Binary operator levels from loosest to tightest, below comparisons and
// above unary operators.
const std::vector<std::vector<std::pair<std::string_view, ast::BinOpKind>>>& binary_levels() {
  using ast::BinOpKind;
  static const std::vector<std::vector<std::pair<std::string_view, BinOpKind>>> kLevels = {
      {{"|", BinOpKind::BitOr}},
      {{"^", BinOpKind::BitXor}},
      {{"&", BinOpKind::BitAnd}},
      {{"<<", BinOpKind::LShift}, {">>", BinOpKind::RShift}},
      {{"+", BinOpKind::Add}, {"-", BinOpKind::Sub}},
      {{"*", BinOpKind::Mult}, {"/", BinOpKind::Div}, {"//", BinOpKind::FloorDiv}, {"%", BinOpKind::Mod},
       {"@", BinOpKind::MatMult}},
  };
  return kLevels;
}

std::optional<ast::BinOpKind> augmented_op(const Token& token) {
  using ast::BinOpKind;
  static const std::pair<std::string_view, BinOpKind> kOps[] = {
      {"+=", BinOpKind::Add},     {"-=", BinOpKind::Sub},       {"*=", BinOpKind::Mult},
      {"/=", BinOpKind::Div},     {"//=", BinOpKind::FloorDiv}, {"%=", BinOpKind::Mod},
      {"**=", BinOpKind::Pow},    {"<<=", BinOpKind::LShift},   {">>=", BinOpKind::RShift},
      {"|=", BinOpKind::BitOr},   {"^=", BinOpKind::BitXor},    {"&=", BinOpKind::BitAnd},
      {"@=", BinOpKind::MatMult},
  };
  if (token.kind != TokenKind::Op) return std::nullopt;
  for (const auto& [spelling, op] : kOps) {
    if (token.text == spelling) return op;
  }
  return std::nullopt;
}

// What an expression is called in "cannot assign to ..." messages.
const char* expression_noun(const ast::Expr& expr) {
  switch (expr.kind) {
    case ast::ExprKind::Constant: return "literal";
    case ast::ExprKind::Call: return "function call";
    case ast::ExprKind::Compare: return "comparison";
    case ast::ExprKind::IfExp: return "conditional expression";
    case ast::ExprKind::Tuple: return "tuple";
    case ast::ExprKind::List: return "list";
    default: return "expression";
  }
}

class Parser {
 public:
  explicit Parser(const SourceFile& file) : file_(file), lexed_(tokenize(file)), tokens_(lexed_.tokens) {}

  ast::Module parse_all() {
    ast::Module module;
    while (!at_end()) {
      if (peek().is_keyword("def")) {
        module.functions.push_back(parse_function_def());
      } else {
        skip_top_level_statement();
      }
    }
    return module;
  }

  std::optional<ast::FunctionDef> parse_named(const std::string& name) {
    std::optional<ast::FunctionDef> found;
    while (!at_end()) {
      if (peek().is_keyword("def") && peek(1).kind == TokenKind::Name && peek(1).text == name) {
        found = parse_function_def();
      } else {
        skip_top_level_statement();
      }
    }
    return found;
  }

  ModuleNames scan_names() {
    ModuleNames names;
    while (!at_end()) {
      const size_t start = pos_;
      const Token& first = peek();
      if (first.is_keyword("import")) {
        scan_import(names);
      } else if (first.is_keyword("from")) {
        scan_from_import(names);
      } else if (first.kind == TokenKind::Name && (peek(1).is_op("=") || peek(1).is_op(":"))) {
        scan_assignment(names);
      } else if ((first.is_keyword("def") || first.is_keyword("class")) && peek(1).kind == TokenKind::Name) {
        names.imports.erase(peek(1).text);
        names.constants.erase(peek(1).text);
      }
      pos_ = start;
      skip_top_level_statement();
    }
    return names;
  }

 private:
  // ------------------------------------------------------------ tokens

  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& advance() {
    const Token& token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return token;
  }
  bool at_end() const { return peek().kind == TokenKind::EndOfInput; }

  // The span from the start of token `start` to the end of the last token
  // consumed: parentheses around operands are part of the span.
  SourceLoc since(size_t start) const {
    return SourceLoc::span(tokens_[start].loc, tokens_[pos_ > start ? pos_ - 1 : start].loc);
  }

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
  void check_height(const ast::Expr& expr, SourceLoc loc) const {
    if (expr.height > kMaxExpressionDepth) too_deep(loc);
  }

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
      case TokenKind::Newline: syntax_error("unexpected end of line", token.loc);
      case TokenKind::EndOfInput: syntax_error("unexpected end of input", token.loc);
      case TokenKind::Indent: syntax_error("unexpected indent", token.loc);
      default: syntax_error("invalid syntax", token.loc);
    }
  }

  const Token& expect_op(std::string_view op, const std::string& message = "") {
    if (!peek().is_op(op)) syntax_error(message.empty() ? "expected '" + std::string(op) + "'" : message, peek().loc);
    return advance();
  }

  // ------------------------------------------------------------ top level

  // Skips one top-level statement with its indented block, unparsed.
  void skip_top_level_statement() {
    const Token& first = peek();
    if (first.kind == TokenKind::Indent) syntax_error("unexpected indent", first.loc);
    if (first.kind != TokenKind::Name && first.kind != TokenKind::Keyword && first.kind != TokenKind::Op &&
        first.kind != TokenKind::Int && first.kind != TokenKind::Float && first.kind != TokenKind::String) {
      advance();
      return;
    }
    while (!at_end() && peek().kind != TokenKind::Newline) advance();
    // Only a compound statement's header, which ends with ':', opens a block.
    const bool opens_block = pos_ > 0 && tokens_[pos_ - 1].is_op(":");
    if (peek().kind == TokenKind::Newline) advance();
    if (peek().kind == TokenKind::Indent) {
      if (!opens_block) syntax_error("unexpected indent", peek().loc);
      int depth = 0;
      do {
        if (peek().kind == TokenKind::Indent) ++depth;
        if (peek().kind == TokenKind::Dedent) --depth;
        advance();
      } while (depth > 0 && !at_end());
    }
  }

  // Skips an ignored annotation up to one of `stops` outside brackets. The
  // parameters of a lambda (`lambda a=1, b: a`), up to its ':', are no stop.
  void skip_annotation(std::initializer_list<std::string_view> stops) {
    const Token& start = peek();
    int depth = 0;
    std::vector<int> lambdas;  // the depth of each lambda whose ':' is still to come
    size_t count = 0;
    while (!at_end() && peek().kind != TokenKind::Newline) {
      const Token& token = peek();
      if (token.is_keyword("lambda")) lambdas.push_back(depth);
      const bool in_lambda_params = !lambdas.empty() && lambdas.back() == depth;
      if (in_lambda_params && token.is_op(":")) {
        lambdas.pop_back();
      } else if (depth == 0 && !in_lambda_params && token.kind == TokenKind::Op &&
                 std::find(stops.begin(), stops.end(), token.text) != stops.end()) {
        break;
      }
      if (token.is_op("(") || token.is_op("[") || token.is_op("{")) ++depth;
      if (token.is_op(")") || token.is_op("]") || token.is_op("}")) {
        if (depth == 0) break;
        --depth;
      }
      advance();
      ++count;
    }
    if (count == 0) syntax_error("expected an annotation", start.loc);
  }

  ast::FunctionDef parse_function_def() {
    const size_t start = pos_;
    const Token& def = advance();
    const Token& name = peek();
    if (name.kind != TokenKind::Name) syntax_error("expected a function name after 'def'", name.loc);
    advance();
    ast::FunctionDef function;
    function.name = name.text;
    expect_op("(");
    bool seen_default = false;
    std::set<std::string> seen;
    while (!peek().is_op(")")) {
      const Token& param = peek();
      if (param.is_op("*") && peek(1).is_op(",")) unsupported("keyword-only parameters ('*') are", param.loc);
      if (param.is_op("*") || param.is_op("**")) unsupported("'*args' and '**kwargs' parameters are", param.loc);
      if (param.is_op("/")) unsupported("positional-only parameter markers ('/') are", param.loc);
      if (param.kind != TokenKind::Name) unexpected(param);
      const size_t param_start = pos_;
      advance();
      if (!seen.insert(param.text).second) {
        syntax_error("duplicate argument '" + param.text + "' in function definition", param.loc);
      }
      ast::Param parsed;
      parsed.name = param.text;
      if (peek().is_op(":")) {
        advance();
        skip_annotation({",", "=", ")"});
      }
      if (peek().is_op("=")) {
        advance();
        parsed.default_value = parse_test();
        seen_default = true;
      } else if (seen_default) {
        syntax_error("parameter without a default follows parameter with a default", param.loc);
      }
      parsed.loc = since(param_start);
      function.params.push_back(std::move(parsed));
      if (!peek().is_op(",")) break;
      advance();
    }
    expect_op(")", "expected ',' or ')'");
    function.loc = since(start);
    if (peek().is_op("->")) {
      advance();
      skip_annotation({":"});
    }
    expect_op(":");
    function_annotated_names_.clear();
    function.body = parse_block("function definition", def.loc.line);
    function.annotated_names = std::move(function_annotated_names_);
    drop_docstring(function.body);
    check_stray_pragmas(function.loc.line);
    return function;
  }

  void drop_docstring(StmtList& body) const {
    if (body.empty()) return;
    const auto* statement = body.front()->as<ast::ExprStmt>();
    if (!statement) return;
    const auto* constant = statement->value->as<ast::Constant>();
    if (!constant || !std::holds_alternative<std::string>(constant->value)) return;
    if (!body.front()->pragmas.empty()) {
      fail(ErrorKind::Pragma, "pragma is not directly above a statement", body.front()->pragmas.front().loc);
    }
    body.erase(body.begin());
  }

  // Pragmas sharing a line with code cannot attach to a statement.
  void check_stray_pragmas(int first_line) const {
    size_t last = pos_ > 0 ? pos_ - 1 : 0;
    while (last > 0 && tokens_[last].kind == TokenKind::Dedent) --last;
    const int last_line = tokens_[last].loc.end_line;
    for (const Token& pragma : lexed_.stray_pragmas) {
      if (pragma.loc.line >= first_line && pragma.loc.line <= last_line) {
        fail(ErrorKind::Pragma, "a pragma must be on its own line, directly above a statement", pragma.loc);
      }
    }
  }

  // ------------------------------------------------------------ statements

  // `construct` names the header for the error message, as Python does:
  // "expected an indented block after 'for' statement on line 3".
  StmtList parse_block(const std::string& construct, int header_line) {
    StmtList body;
    if (peek().kind != TokenKind::Newline) {
      parse_simple_statements(body);
      return body;
    }
    advance();
    if (peek().kind != TokenKind::Indent) {
      syntax_error("expected an indented block after " + construct + " on line " + std::to_string(header_line),
                   peek().loc);
    }
    advance();
    while (peek().kind != TokenKind::Dedent && !at_end()) parse_statement(body);
    if (peek().kind == TokenKind::Dedent) advance();
    return body;
  }

  static bool starts_statement(const Token& token) {
    switch (token.kind) {
      case TokenKind::Name:
      case TokenKind::Int:
      case TokenKind::Float:
      case TokenKind::String:
      case TokenKind::Op:
        return true;
      case TokenKind::Keyword:
        return !token.is_keyword("elif") && !token.is_keyword("else") && !token.is_keyword("except") &&
               !token.is_keyword("finally");
      default:
        return false;
    }
  }

  [[noreturn]] void misplaced_pragma(const Token& pragma) const {
    fail(ErrorKind::Pragma, "pragma is not directly above a statement", pragma.loc);
  }

  // The run of pragma lines above the next statement, which must follow at
  // the same indentation with no blank line in between.
  std::vector<ast::Pragma> collect_pragmas() {
    std::vector<ast::Pragma> pragmas;
    std::vector<const Token*> run;
    while (peek().kind == TokenKind::Pragma) {
      const Token& pragma = advance();
      if (pragma.blank_line_after) misplaced_pragma(pragma);
      run.push_back(&pragma);
      pragmas.push_back(parse_pragma_comment(file_, pragma.text, pragma.loc));
    }
    if (run.empty()) return pragmas;
    const Token& next = peek();
    if (!starts_statement(next)) misplaced_pragma(*run.back());
    for (const Token* pragma : run) {
      // The pragma's span starts after its '#'.
      if (pragma->loc.col - 1 != next.loc.col) misplaced_pragma(*pragma);
    }
    return pragmas;
  }

  void reject_unsupported_statement(const Token& token) const {
    static const std::pair<std::string_view, std::string_view> kStatements[] = {
        {"with", "'with' statements are"},
        {"try", "'try' statements are"},
        {"def", "nested function definitions are"},
        {"class", "class definitions are"},
        {"async", "'async' statements are"},
        {"global", "'global' statements are"},
        {"nonlocal", "'nonlocal' statements are"},
        {"import", "'import' statements are"},
        {"from", "'from ... import' statements are"},
        {"del", "'del' statements are"},
        {"assert", "'assert' statements are"},
        {"raise", "'raise' statements are"},
    };
    if (token.kind != TokenKind::Keyword) return;
    for (const auto& [keyword, what] : kStatements) {
      if (token.text == keyword) unsupported(std::string(what), token.loc);
    }
  }

  void parse_statement(StmtList& out) {
    std::vector<ast::Pragma> pragmas = collect_pragmas();
    const Token& first = peek();
    if (first.kind == TokenKind::Indent) syntax_error("unexpected indent", first.loc);
    reject_unsupported_statement(first);
    if (first.is_op("@")) unsupported("decorators and nested function definitions are", first.loc);
    StmtPtr compound;
    if (first.is_keyword("if")) {
      compound = parse_if();
    } else if (first.is_keyword("for")) {
      compound = parse_for();
    } else if (first.is_keyword("while")) {
      compound = parse_while();
    }
    if (compound) {
      compound->pragmas = std::move(pragmas);
      out.push_back(std::move(compound));
      return;
    }
    const size_t first_index = out.size();
    parse_simple_statements(out);
    out[first_index]->pragmas = std::move(pragmas);
  }

  // `a = 1; b = 2` up to and including the NEWLINE.
  void parse_simple_statements(StmtList& out) {
    while (true) {
      out.push_back(parse_simple_statement());
      if (!peek().is_op(";")) break;
      advance();
      if (peek().kind == TokenKind::Newline) break;
    }
    if (peek().kind != TokenKind::Newline) unexpected(peek());
    advance();
  }

  bool at_statement_end() const { return peek().kind == TokenKind::Newline || peek().is_op(";"); }

  StmtPtr parse_simple_statement() {
    const size_t start = pos_;
    const Token& first = peek();
    reject_unsupported_statement(first);
    if (first.is_keyword("pass")) return std::make_unique<ast::Pass>(advance().loc);
    if (first.is_keyword("break")) return std::make_unique<ast::Break>(advance().loc);
    if (first.is_keyword("continue")) return std::make_unique<ast::Continue>(advance().loc);
    if (first.is_keyword("return")) {
      advance();
      ExprPtr value;
      if (!at_statement_end()) value = parse_star_expressions();
      return std::make_unique<ast::Return>(since(start), std::move(value));
    }
    if (first.kind == TokenKind::Keyword && !starts_expression(first)) unexpected(first);

    ExprPtr target = parse_star_expressions();
    if (peek().is_op("=")) {
      std::vector<ExprPtr> targets;
      targets.push_back(std::move(target));
      ExprPtr value;
      while (peek().is_op("=")) {
        advance();
        if (value) targets.push_back(std::move(value));
        value = parse_star_expressions();
      }
      for (const ExprPtr& each : targets) check_target(*each);
      return std::make_unique<ast::Assign>(since(start), std::move(targets), std::move(value));
    }
    if (const std::optional<ast::BinOpKind> op = augmented_op(peek())) {
      check_augmented_target(*target, peek());
      advance();
      ExprPtr value = parse_star_expressions();
      return std::make_unique<ast::AugAssign>(since(start), std::move(target), *op, std::move(value));
    }
    if (peek().is_op(":")) {
      if (target->kind == ast::ExprKind::Tuple || target->kind == ast::ExprKind::List) {
        syntax_error("only single target (not " + std::string(expression_noun(*target)) + ") can be annotated",
                     target->loc);
      }
      advance();
      skip_annotation({"=", ";"});
      if (!peek().is_op("=")) {
        // A bare annotation assigns and evaluates nothing; of a plain name it
        // makes the name local to the function, as in Python. Python
        // evaluates the parts of any other target (`a[i]: T` reads `a` and
        // `i`), which is not worth a construct of its own.
        const auto* name = target->as<ast::Name>();
        if (name == nullptr || tokens_[start].is_op("("))
          unsupported("annotations without a value of anything but a plain name are", since(start));
        function_annotated_names_.push_back(name->id);
        return std::make_unique<ast::Pass>(since(start));
      }
      advance();
      check_target(*target);
      ExprPtr value = parse_star_expressions();
      std::vector<ExprPtr> targets;
      targets.push_back(std::move(target));
      return std::make_unique<ast::Assign>(since(start), std::move(targets), std::move(value));
    }
    return std::make_unique<ast::ExprStmt>(since(start), std::move(target));
  }

  void check_target(const ast::Expr& target) const {
    switch (target.kind) {
      case ast::ExprKind::Name:
      case ast::ExprKind::Subscript:
        return;
      case ast::ExprKind::Attribute:
        unsupported("assignments to attributes are", target.loc);
      case ast::ExprKind::Tuple:
        for (const ExprPtr& element : static_cast<const ast::Tuple&>(target).elts) check_target(*element);
        return;
      case ast::ExprKind::List:
        for (const ExprPtr& element : static_cast<const ast::List&>(target).elts) check_target(*element);
        return;
      default:
        syntax_error("cannot assign to " + std::string(expression_noun(target)), target.loc);
    }
  }

  void check_augmented_target(const ast::Expr& target, const Token& op) const {
    if (target.kind == ast::ExprKind::Name || target.kind == ast::ExprKind::Subscript) return;
    if (target.kind == ast::ExprKind::Attribute) unsupported("assignments to attributes are", target.loc);
    syntax_error("'" + std::string(expression_noun(target)) + "' is an illegal expression for augmented assignment",
                 SourceLoc::span(target.loc, op.loc));
  }

  StmtPtr parse_if() {
    const size_t start = pos_;
    const Token& keyword = advance();  // `if` or `elif`
    ExprPtr test = parse_test();
    const SourceLoc loc = since(start);
    expect_op(":");
    StmtList body = parse_block("'" + keyword.text + "' statement", keyword.loc.line);
    StmtList orelse;
    if (peek().is_keyword("elif")) {
      orelse.push_back(parse_if());
    } else if (peek().is_keyword("else")) {
      const Token& else_keyword = advance();
      expect_op(":");
      orelse = parse_block("'else' statement", else_keyword.loc.line);
    }
    return std::make_unique<ast::If>(loc, std::move(test), std::move(body), std::move(orelse));
  }

  StmtList parse_loop_else() {
    if (!peek().is_keyword("else")) return {};
    const Token& else_keyword = advance();
    expect_op(":");
    return parse_block("'else' statement", else_keyword.loc.line);
  }

  StmtPtr parse_for() {
    const size_t start = pos_;
    const Token& keyword = advance();
    ExprPtr target = parse_target_list();
    check_target(*target);
    if (!peek().is_keyword("in")) syntax_error("expected 'in'", peek().loc);
    advance();
    ExprPtr iter = parse_star_expressions();
    const SourceLoc loc = since(start);
    expect_op(":");
    StmtList body = parse_block("'for' statement", keyword.loc.line);
    StmtList orelse = parse_loop_else();
    return std::make_unique<ast::For>(loc, std::move(target), std::move(iter), std::move(body), std::move(orelse));
  }

  StmtPtr parse_while() {
    const size_t start = pos_;
    const Token& keyword = advance();
    ExprPtr test = parse_test();
    const SourceLoc loc = since(start);
    expect_op(":");
    StmtList body = parse_block("'while' statement", keyword.loc.line);
    StmtList orelse = parse_loop_else();
    return std::make_unique<ast::While>(loc, std::move(test), std::move(body), std::move(orelse));
  }

  // ------------------------------------------------------------ expressions

  static bool starts_expression(const Token& token) {
    switch (token.kind) {
      case TokenKind::Name:
      case TokenKind::Int:
      case TokenKind::Float:
      case TokenKind::String:
        return true;
      case TokenKind::Keyword:
        return token.text == "None" || token.text == "True" || token.text == "False" || token.text == "not" ||
               token.text == "lambda" || token.text == "await" || token.text == "yield";
      case TokenKind::Op:
        return token.text == "(" || token.text == "[" || token.text == "{" || token.text == "-" ||
               token.text == "+" || token.text == "~" || token.text == "*" || token.text == "...";
      default:
        return false;
    }
  }

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

  ExprPtr parse_star_expressions() {
    return parse_list_of([this] { return parse_star_expr(); }, &Parser::starts_expression);
  }

  // A `for` target: stops before `in`, which would otherwise be read as a
  // comparison.
  ExprPtr parse_target_list() {
    return parse_list_of([this] { return parse_star_target(); }, &Parser::starts_expression);
  }

  // A starred target (`for *a, b in t`) is reported by parse_star_expr.
  ExprPtr parse_star_target() { return peek().is_op("*") ? parse_star_expr() : parse_bitor(); }

  ExprPtr parse_star_expr() {
    if (peek().is_op("*")) {
      const size_t start = pos_;
      advance();
      parse_bitor();
      unsupported("starred expressions are", since(start));
    }
    return parse_test();
  }

  ExprPtr parse_test() {
    const size_t start = pos_;
    const Token& first = peek();
    if (first.is_keyword("lambda")) unsupported("lambda expressions are", first.loc);
    if (first.is_keyword("yield")) unsupported("'yield' expressions are", first.loc);
    ExprPtr body = parse_or();
    if (peek().is_keyword("if")) {
      advance();
      ExprPtr test = parse_or();
      if (!peek().is_keyword("else")) syntax_error("expected 'else' after 'if' expression", peek().loc);
      const Token& else_keyword = advance();
      ExprPtr orelse;
      {
        Nesting nesting(*this);
        orelse = parse_test();
      }
      body = std::make_unique<ast::IfExp>(since(start), std::move(test), std::move(body), std::move(orelse));
      check_height(*body, else_keyword.loc);
    }
    if (peek().is_op(":=")) {
      advance();
      unsupported("assignment expressions (':=') are", since(start));
    }
    return body;
  }

  ExprPtr parse_bool_op(std::string_view keyword, ast::BoolOpKind op, ExprPtr (Parser::*parse_operand)()) {
    const size_t start = pos_;
    ExprPtr first = (this->*parse_operand)();
    if (!peek().is_keyword(keyword)) return first;
    std::vector<ExprPtr> values;
    values.push_back(std::move(first));
    while (peek().is_keyword(keyword)) {
      const Token& op_token = advance();
      values.push_back((this->*parse_operand)());
      if (static_cast<int>(values.size()) > kMaxExpressionDepth) too_deep(op_token.loc);
    }
    ExprPtr result = std::make_unique<ast::BoolOp>(since(start), op, std::move(values));
    check_height(*result, tokens_[start].loc);
    return result;
  }

  ExprPtr parse_or() { return parse_bool_op("or", ast::BoolOpKind::Or, &Parser::parse_and); }
  ExprPtr parse_and() { return parse_bool_op("and", ast::BoolOpKind::And, &Parser::parse_not); }

  ExprPtr parse_not() {
    if (!peek().is_keyword("not")) return parse_comparison();
    const size_t start = pos_;
    Nesting nesting(*this);
    advance();
    ExprPtr operand = parse_not();
    ExprPtr result = std::make_unique<ast::UnaryOp>(since(start), ast::UnaryOpKind::Not, std::move(operand));
    check_height(*result, tokens_[start].loc);
    return result;
  }

  // Consumes a comparison operator, if one is next.
  std::optional<ast::CmpOpKind> comparison_op() {
    using ast::CmpOpKind;
    static const std::pair<std::string_view, CmpOpKind> kOps[] = {
        {"==", CmpOpKind::Eq}, {"!=", CmpOpKind::NotEq}, {"<", CmpOpKind::Lt},
        {"<=", CmpOpKind::LtE}, {">", CmpOpKind::Gt},    {">=", CmpOpKind::GtE},
    };
    const Token& token = peek();
    if (token.kind == TokenKind::Op) {
      for (const auto& [spelling, op] : kOps) {
        if (token.text == spelling) {
          advance();
          return op;
        }
      }
      return std::nullopt;
    }
    if (token.is_keyword("in")) {
      advance();
      return CmpOpKind::In;
    }
    if (token.is_keyword("not") && peek(1).is_keyword("in")) {
      advance();
      advance();
      return CmpOpKind::NotIn;
    }
    if (token.is_keyword("is")) {
      advance();
      if (peek().is_keyword("not")) {
        advance();
        return CmpOpKind::IsNot;
      }
      return CmpOpKind::Is;
    }
    return std::nullopt;
  }

  ExprPtr parse_comparison() {
    const size_t start = pos_;
    ExprPtr left = parse_bitor();
    std::vector<ast::CmpOpKind> ops;
    std::vector<ExprPtr> comparators;
    while (true) {
      const SourceLoc op_loc = peek().loc;
      const std::optional<ast::CmpOpKind> op = comparison_op();
      if (!op) break;
      ops.push_back(*op);
      comparators.push_back(parse_bitor());
      if (static_cast<int>(comparators.size()) > kMaxExpressionDepth) too_deep(op_loc);
    }
    if (ops.empty()) return left;
    ExprPtr result =
        std::make_unique<ast::Compare>(since(start), std::move(left), std::move(ops), std::move(comparators));
    check_height(*result, tokens_[start].loc);
    return result;
  }

  ExprPtr parse_bitor() { return parse_binary(0); }

  ExprPtr parse_binary(size_t level) {
    const auto& levels = binary_levels();
    if (level == levels.size()) return parse_factor();
    const size_t start = pos_;
    ExprPtr left = parse_binary(level + 1);
    while (peek().kind == TokenKind::Op) {
      const auto& ops = levels[level];
      const auto found = std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.first == peek().text; });
      if (found == ops.end()) break;
      const Token& op_token = advance();
      ExprPtr right = parse_binary(level + 1);
      left = std::make_unique<ast::BinOp>(since(start), found->second, std::move(left), std::move(right));
      check_height(*left, op_token.loc);
    }
    return left;
  }

  ExprPtr parse_factor() {
    Nesting nesting(*this);
    const Token& token = peek();
    std::optional<ast::UnaryOpKind> op;
    if (token.is_op("-")) op = ast::UnaryOpKind::USub;
    if (token.is_op("+")) op = ast::UnaryOpKind::UAdd;
    if (token.is_op("~")) op = ast::UnaryOpKind::Invert;
    if (token.is_keyword("await")) unsupported("'await' expressions are", token.loc);
    if (!op) return parse_power();
    const size_t start = pos_;
    advance();
    if (*op == ast::UnaryOpKind::USub && is_int64_min_magnitude(peek()) && !peek(1).is_op("**")) {
      advance();
      return std::make_unique<ast::Constant>(since(start), std::numeric_limits<int64_t>::min());
    }
    ExprPtr operand = parse_factor();
    ExprPtr result = std::make_unique<ast::UnaryOp>(since(start), *op, std::move(operand));
    check_height(*result, token.loc);
    return result;
  }

  // The literal 2**63, which fits in int64 only when negated.
  static bool is_int64_min_magnitude(const Token& token) {
    return token.kind == TokenKind::Int && token.deferred_error &&
           token.int_value == std::numeric_limits<int64_t>::min();
  }

  // `**` binds tighter than a unary operator on its left and looser than one
  // on its right: -2**-1 is -(2**(-1)).
  ExprPtr parse_power() {
    const size_t start = pos_;
    ExprPtr base = parse_primary();
    if (!peek().is_op("**")) return base;
    const Token& op_token = advance();
    ExprPtr exponent = parse_factor();
    ExprPtr result =
        std::make_unique<ast::BinOp>(since(start), ast::BinOpKind::Pow, std::move(base), std::move(exponent));
    check_height(*result, op_token.loc);
    return result;
  }

  ExprPtr parse_primary() {
    const size_t start = pos_;
    ExprPtr expr = parse_atom();
    while (true) {
      const SourceLoc trailer = peek().loc;
      if (peek().is_op(".")) {
        advance();
        const Token& attribute = peek();
        if (attribute.kind != TokenKind::Name) syntax_error("expected an attribute name after '.'", attribute.loc);
        advance();
        expr = std::make_unique<ast::Attribute>(since(start), std::move(expr), attribute.text);
      } else if (peek().is_op("(")) {
        expr = parse_call(start, std::move(expr));
      } else if (peek().is_op("[")) {
        expr = parse_subscript(start, std::move(expr));
      } else {
        return expr;
      }
      check_height(*expr, trailer);
    }
  }

  ExprPtr parse_call(size_t start, ExprPtr func) {
    advance();  // (
    std::vector<ExprPtr> args;
    std::vector<ast::Keyword> keywords;
    while (!peek().is_op(")")) {
      const Token& token = peek();
      if (token.is_op("*") || token.is_op("**")) unsupported("argument unpacking ('" + token.text + "') is", token.loc);
      const size_t arg_start = pos_;
      if (token.kind == TokenKind::Name && peek(1).is_op("=")) {
        advance();
        advance();
        ast::Keyword keyword;
        keyword.name = token.text;
        keyword.value = parse_test();
        keyword.loc = since(arg_start);
        for (const ast::Keyword& other : keywords) {
          if (other.name == keyword.name) syntax_error("keyword argument repeated: " + keyword.name, keyword.loc);
        }
        keywords.push_back(std::move(keyword));
      } else {
        ExprPtr arg = parse_test();
        reject_comprehension(arg_start, "generator expressions are");
        if (!keywords.empty()) syntax_error("positional argument follows keyword argument", arg->loc);
        args.push_back(std::move(arg));
      }
      if (!peek().is_op(",")) break;
      advance();
    }
    expect_op(")", "expected ',' or ')'");
    return std::make_unique<ast::Call>(since(start), std::move(func), std::move(args), std::move(keywords));
  }

  ExprPtr parse_subscript(size_t start, ExprPtr value) {
    const SourceLoc open = peek().loc;
    advance();  // [
    if (peek().is_op("]")) syntax_error("expected an index", peek().loc);
    // Wrapping a negative index (i < 0 ? i + n : i) reads it three times, so
    // an index nested in indices costs the compiler three times as much per
    // level: deep nests would compile for ever.
    if (index_nesting_ >= kMaxIndexNesting)
      unsupported("subscripts nested more than " + std::to_string(kMaxIndexNesting) +
                      " deep inside indices (assign an inner index to a local first) are",
                  open);
    ++index_nesting_;
    const size_t index_start = pos_;
    ExprPtr index = parse_slice_item();
    if (peek().is_op(",")) {
      std::vector<ExprPtr> elements;
      elements.push_back(std::move(index));
      while (peek().is_op(",")) {
        advance();
        if (peek().is_op("]")) break;
        elements.push_back(parse_slice_item());
      }
      index = std::make_unique<ast::Tuple>(since(index_start), std::move(elements));
    }
    expect_op("]", "expected ',' or ']'");
    --index_nesting_;
    return std::make_unique<ast::Subscript>(since(start), std::move(value), std::move(index));
  }

  ExprPtr parse_slice_item() {
    const size_t start = pos_;
    ExprPtr lower;
    if (!peek().is_op(":")) {
      lower = parse_star_expr();
      if (!peek().is_op(":")) return lower;
    }
    advance();  // :
    auto ends_part = [this] { return peek().is_op(":") || peek().is_op(",") || peek().is_op("]"); };
    ExprPtr upper;
    ExprPtr step;
    if (!ends_part()) upper = parse_test();
    if (peek().is_op(":")) {
      advance();
      if (!ends_part()) step = parse_test();
    }
    return std::make_unique<ast::Slice>(since(start), std::move(lower), std::move(upper), std::move(step));
  }

  void reject_comprehension(size_t start, const std::string& what) {
    if (peek().is_keyword("for") || peek().is_keyword("async")) {
      advance();
      unsupported(what, since(start));
    }
  }

  ExprPtr parse_atom() {
    const Token& token = peek();
    if (token.deferred_error) report(*token.deferred_error);
    switch (token.kind) {
      case TokenKind::Name:
        advance();
        return std::make_unique<ast::Name>(token.loc, token.text);
      case TokenKind::Int:
        advance();
        return std::make_unique<ast::Constant>(token.loc, token.int_value);
      case TokenKind::Float:
        advance();
        return std::make_unique<ast::Constant>(token.loc, token.float_value);
      case TokenKind::String:
        return parse_strings();
      case TokenKind::Keyword:
        if (token.text == "None") return std::make_unique<ast::Constant>(advance().loc, std::monostate{});
        if (token.text == "True") return std::make_unique<ast::Constant>(advance().loc, true);
        if (token.text == "False") return std::make_unique<ast::Constant>(advance().loc, false);
        unexpected(token);
      case TokenKind::Op:
        if (token.text == "(") return parse_parenthesized();
        if (token.text == "[") return parse_list();
        if (token.text == "{") reject_dict_or_set();
        if (token.text == "...") unsupported("Ellipsis ('...') is", token.loc);
        unexpected(token);
      default:
        unexpected(token);
    }
  }

  // Adjacent string literals concatenate.
  ExprPtr parse_strings() {
    const size_t start = pos_;
    std::string value;
    while (peek().kind == TokenKind::String) {
      const Token& literal = advance();
      if (literal.deferred_error) report(*literal.deferred_error);
      if (literal.string_prefix.find('f') != std::string::npos) unsupported("f-strings are", literal.loc);
      if (literal.string_prefix.find('b') != std::string::npos) unsupported("bytes literals are", literal.loc);
      value += literal.text;
    }
    return std::make_unique<ast::Constant>(since(start), std::move(value));
  }

  ExprPtr parse_parenthesized() {
    const size_t start = pos_;
    advance();  // (
    std::vector<ExprPtr> elements;
    if (!peek().is_op(")")) {
      ExprPtr first = parse_star_expr();
      reject_comprehension(start, "generator expressions are");
      if (peek().is_op(")")) {
        advance();
        return first;  // a parenthesised expression keeps its own span, as in Python's ast
      }
      elements.push_back(std::move(first));
      if (!peek().is_op(",")) syntax_error("expected ',' or ')'", peek().loc);
      while (peek().is_op(",")) {
        advance();
        if (peek().is_op(")")) break;
        elements.push_back(parse_star_expr());
      }
    }
    expect_op(")", "expected ',' or ')'");
    return std::make_unique<ast::Tuple>(since(start), std::move(elements));
  }

  ExprPtr parse_list() {
    const size_t start = pos_;
    advance();  // [
    std::vector<ExprPtr> elements;
    if (!peek().is_op("]")) {
      elements.push_back(parse_star_expr());
      reject_comprehension(start, "list comprehensions are");
      while (peek().is_op(",")) {
        advance();
        if (peek().is_op("]")) break;
        elements.push_back(parse_star_expr());
      }
    }
    expect_op("]", "expected ',' or ']'");
    return std::make_unique<ast::List>(since(start), std::move(elements));
  }

  [[noreturn]] void reject_dict_or_set() {
    // The literal is a dict when a ':' or '**' appears at its top level, or
    // when it is empty.
    const size_t open = pos_;
    size_t close = open + 1;
    int depth = 1;
    bool is_dict = peek(1).is_op("}") || peek(1).is_op("**");
    for (; close < tokens_.size() && tokens_[close].kind != TokenKind::EndOfInput; ++close) {
      const Token& token = tokens_[close];
      if (token.is_op("(") || token.is_op("[") || token.is_op("{")) ++depth;
      if (token.is_op(")") || token.is_op("]") || token.is_op("}")) {
        if (--depth == 0) break;
      }
      if (depth == 1 && token.is_op(":")) is_dict = true;
    }
    const SourceLoc loc = SourceLoc::span(tokens_[open].loc, tokens_[std::min(close, tokens_.size() - 1)].loc);
    unsupported(is_dict ? "dict literals are" : "set literals are", loc);
  }

  // ------------------------------------------------------------ module scan

  static void bind_import(ModuleNames& names, const std::string& alias, const std::string& target) {
    names.constants.erase(alias);
    names.imports[alias] = target;
  }

  std::optional<std::string> scan_dotted_name() {
    if (peek().kind != TokenKind::Name) return std::nullopt;
    std::string dotted = advance().text;
    while (peek().is_op(".") && peek(1).kind == TokenKind::Name) {
      advance();
      dotted += "." + advance().text;
    }
    return dotted;
  }

  // `import a.b as c, d`: c -> "a.b", d -> "d"; `import a.b` binds a -> "a".
  void scan_import(ModuleNames& names) {
    advance();
    while (const std::optional<std::string> dotted = scan_dotted_name()) {
      std::string alias = dotted->substr(0, dotted->find('.'));
      std::string target = alias;
      if (peek().is_keyword("as")) {
        advance();
        if (peek().kind != TokenKind::Name) return;
        alias = advance().text;
        target = *dotted;
      }
      bind_import(names, alias, target);
      if (!peek().is_op(",")) return;
      advance();
    }
  }

  // `from a.b import c as d, e`: d -> "a.b.c", e -> "a.b.e". Relative and
  // star imports are ignored.
  void scan_from_import(ModuleNames& names) {
    advance();
    const std::optional<std::string> module = scan_dotted_name();
    if (!module || !peek().is_keyword("import")) return;
    advance();
    if (peek().is_op("(")) advance();
    while (peek().kind == TokenKind::Name) {
      const std::string name = advance().text;
      std::string alias = name;
      if (peek().is_keyword("as")) {
        advance();
        if (peek().kind != TokenKind::Name) return;
        alias = advance().text;
      }
      bind_import(names, alias, *module + "." + name);
      if (!peek().is_op(",")) return;
      advance();
    }
  }

  // `A = B = <literal>` or `A: T = <literal>` records constants; any other
  // value unbinds the names. A bare annotation `A: T` binds nothing.
  void scan_assignment(ModuleNames& names) {
    std::vector<std::string> targets;
    if (peek(1).is_op(":")) {
      targets.push_back(advance().text);
      advance();
      skip_annotation({"="});
      if (!peek().is_op("=")) return;
      advance();
    }
    while (peek().kind == TokenKind::Name && peek(1).is_op("=")) {
      targets.push_back(advance().text);
      advance();
    }
    std::optional<ast::Constant::Value> value;
    bool negate = false;
    bool signed_literal = false;
    if (peek().is_op("-") || peek().is_op("+")) {
      negate = advance().text == "-";
      signed_literal = true;
    }
    const Token& literal = advance();
    const bool usable = !literal.deferred_error || (negate && is_int64_min_magnitude(literal));
    if (usable && literal.kind == TokenKind::Int) {
      // Negating INT64_MIN's magnitude, held as INT64_MIN, leaves it as is.
      value = negate && literal.int_value != std::numeric_limits<int64_t>::min() ? -literal.int_value
                                                                               : literal.int_value;
    } else if (usable && literal.kind == TokenKind::Float) {
      value = negate ? -literal.float_value : literal.float_value;
    } else if (!signed_literal && (literal.is_keyword("True") || literal.is_keyword("False"))) {
      value = literal.text == "True";
    }
    if (!at_statement_end()) value.reset();
    for (const std::string& target : targets) {
      names.imports.erase(target);
      if (value) {
        names.constants[target] = *value;
      } else {
        names.constants.erase(target);
      }
    }
  }

  const SourceFile& file_;
  int nesting_ = 0;  // the Nesting levels open now
  static constexpr int kMaxIndexNesting = 8;
  int index_nesting_ = 0;  // subscripts whose index is being parsed
  LexedSource lexed_;
  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  std::vector<std::string> function_annotated_names_;  // of the function being parsed
};

}  // namespace

ast::Module parse_module(const SourceFile& file) { return Parser(file).parse_all(); }

ast::FunctionDef parse_function(const SourceFile& file, const std::string& name) {
  std::optional<ast::FunctionDef> function = Parser(file).parse_named(name);
  if (!function) {
    throw CompileError(ErrorKind::Name, "no function named '" + name + "' in " + file.path, file, SourceLoc{});
  }
  return std::move(*function);
}

ModuleNames scan_module_names(const SourceFile& file) { return Parser(file).scan_names(); }

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
