// The parser: functions, blocks, statements with their pragmas, and the
// module-level scan of imported names (parser_impl.h).
#include "frontend/parser_impl.h"

namespace plait::parsing {

ast::Module Parser::parse_all() {
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

std::optional<ast::FunctionDef> Parser::parse_named(const std::string& name) {
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

ModuleNames Parser::scan_names() {
  ModuleNames names;
  while (!at_end()) {
    const size_t start = pos_;
    const Token& first = peek();
    if (first.is_keyword("import")) {
      scan_import(names);
    } else if (first.is_keyword("from")) {
      scan_from_import(names);
    } else if (first.kind == TokenKind::Name && (peek(1).is_op("=") || peek(1).is_op(":"))) {
      names.functions.erase(first.text);
      scan_assignment(names);
    } else if ((first.is_keyword("def") || first.is_keyword("class")) && peek(1).kind == TokenKind::Name) {
      names.imports.erase(peek(1).text);
      names.constants.erase(peek(1).text);
      if (first.is_keyword("def")) {
        names.functions.insert(peek(1).text);
      } else {
        names.functions.erase(peek(1).text);
      }
    }
    pos_ = start;
    skip_top_level_statement();
  }
  return names;
}

const Token& Parser::advance() {
  const Token& token = tokens_[pos_];
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return token;
}

SourceLoc Parser::since(size_t start) const {
  return SourceLoc::span(tokens_[start].loc, tokens_[pos_ > start ? pos_ - 1 : start].loc);
}

void Parser::check_height(const ast::Expr& expr, SourceLoc loc) const {
  if (expr.height > kMaxExpressionDepth) too_deep(loc);
}

const Token& Parser::expect_op(std::string_view op, const std::string& message) {
  if (!peek().is_op(op)) syntax_error(message.empty() ? "expected '" + std::string(op) + "'" : message, peek().loc);
  return advance();
}

void Parser::skip_top_level_statement() {
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

void Parser::skip_annotation(std::initializer_list<std::string_view> stops) {
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

ast::FunctionDef Parser::parse_function_def() {
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

void Parser::drop_docstring(StmtList& body) const {
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

void Parser::check_stray_pragmas(int first_line) const {
  size_t last = pos_ > 0 ? pos_ - 1 : 0;
  while (last > 0 && tokens_[last].kind == TokenKind::Dedent) --last;
  const int last_line = tokens_[last].loc.end_line;
  for (const Token& pragma : lexed_.stray_pragmas) {
    if (pragma.loc.line >= first_line && pragma.loc.line <= last_line) {
      fail(ErrorKind::Pragma, "a pragma must be on its own line, directly above a statement", pragma.loc);
    }
  }
}

StmtList Parser::parse_block(const std::string& construct, int header_line) {
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

bool Parser::starts_statement(const Token& token) {
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

std::vector<ast::Pragma> Parser::collect_pragmas() {
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

void Parser::reject_unsupported_statement(const Token& token) const {
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

void Parser::parse_statement(StmtList& out) {
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

void Parser::parse_simple_statements(StmtList& out) {
  while (true) {
    const size_t start = pos_;
    out.push_back(parse_simple_statement());
    rewrite_comprehension(out);
    if (comprehensions_ > 0)
      unsupported(
          "list comprehensions are supported as the whole value of an assignment to a name "
          "(L = [e for x in ...]); elsewhere they are",
          since(start));
    if (!peek().is_op(";")) break;
    advance();
    if (peek().kind == TokenKind::Newline) break;
  }
  if (peek().kind != TokenKind::Newline) unexpected(peek());
  advance();
}

void Parser::rewrite_comprehension(StmtList& out) {
  auto* assign = out.back()->kind == ast::StmtKind::Assign ? static_cast<ast::Assign*>(out.back().get()) : nullptr;
  auto* list =
      assign && assign->value->kind == ast::ExprKind::List ? static_cast<ast::List*>(assign->value.get()) : nullptr;
  if (!list || list->generators.empty() || assign->targets.size() != 1 ||
      assign->targets[0]->kind != ast::ExprKind::Name)
    return;
  const std::string& name = static_cast<const ast::Name&>(*assign->targets[0]).id;
  const SourceLoc loc = assign->loc;
  // Each clause's targets are names of the comprehension's own scope, seen
  // by the later clauses and the element.
  std::set<std::string> scope;
  bool reads_name = false;
  auto renamed = [&](const ast::Expr& e) {
    return ast::clone(e, ast::Renaming{[&](const std::string& id) {
                                         if (scope.count(id)) return "<listcomp>." + id;
                                         reads_name = reads_name || id == name;
                                         return id;
                                       },
                                       nullptr});
  };
  std::vector<StmtList*> bodies;
  StmtList loops;
  StmtList* body = &loops;
  for (ast::Comprehension& clause : list->generators) {
    ExprPtr iter = renamed(*clause.iter);
    std::set<std::string> targets;
    ast::collect_target_names(*clause.target, targets);
    scope.insert(targets.begin(), targets.end());
    ExprPtr target = renamed(*clause.target);
    StmtList inner;
    auto loop = std::make_unique<ast::For>(loc, std::move(target), std::move(iter), StmtList{}, StmtList{});
    StmtList* next = &loop->body;
    body->push_back(std::move(loop));
    for (const ExprPtr& condition : clause.ifs) {
      auto test = std::make_unique<ast::If>(loc, renamed(*condition), StmtList{}, StmtList{});
      StmtList* then = &test->body;
      next->push_back(std::move(test));
      next = then;
    }
    body = next;
  }
  std::vector<ExprPtr> element;
  element.push_back(renamed(*list->elts[0]));
  body->push_back(std::make_unique<ast::ExprStmt>(
      loc, std::make_unique<ast::Call>(
               loc, std::make_unique<ast::Attribute>(loc, std::make_unique<ast::Name>(loc, name), "append"),
               std::move(element), std::vector<ast::Keyword>{})));
  if (reads_name) unsupported("a list comprehension that reads the name it is assigned to ('" + name + "') is", loc);
  assign->value = std::make_unique<ast::List>(list->loc, std::vector<ExprPtr>{});
  for (StmtPtr& s : loops) out.push_back(std::move(s));
  --comprehensions_;
}

StmtPtr Parser::parse_simple_statement() {
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
      if (targets.size() == 1 && targets[0]->kind == ast::ExprKind::Name) comprehension_start_ = pos_;
      value = parse_star_expressions();
      comprehension_start_ = static_cast<size_t>(-1);
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

void Parser::check_target(const ast::Expr& target) const {
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

void Parser::check_augmented_target(const ast::Expr& target, const Token& op) const {
  if (target.kind == ast::ExprKind::Name || target.kind == ast::ExprKind::Subscript) return;
  if (target.kind == ast::ExprKind::Attribute) unsupported("assignments to attributes are", target.loc);
  syntax_error("'" + std::string(expression_noun(target)) + "' is an illegal expression for augmented assignment",
               SourceLoc::span(target.loc, op.loc));
}

StmtPtr Parser::parse_if() {
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

StmtList Parser::parse_loop_else() {
  if (!peek().is_keyword("else")) return {};
  const Token& else_keyword = advance();
  expect_op(":");
  return parse_block("'else' statement", else_keyword.loc.line);
}

StmtPtr Parser::parse_for() {
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

StmtPtr Parser::parse_while() {
  const size_t start = pos_;
  const Token& keyword = advance();
  ExprPtr test = parse_test();
  const SourceLoc loc = since(start);
  expect_op(":");
  StmtList body = parse_block("'while' statement", keyword.loc.line);
  StmtList orelse = parse_loop_else();
  return std::make_unique<ast::While>(loc, std::move(test), std::move(body), std::move(orelse));
}

void Parser::bind_import(ModuleNames& names, const std::string& alias, const std::string& target) {
  names.constants.erase(alias);
  names.imports[alias] = target;
}

std::optional<std::string> Parser::scan_dotted_name() {
  if (peek().kind != TokenKind::Name) return std::nullopt;
  std::string dotted = advance().text;
  while (peek().is_op(".") && peek(1).kind == TokenKind::Name) {
    advance();
    dotted += "." + advance().text;
  }
  return dotted;
}

void Parser::scan_import(ModuleNames& names) {
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

void Parser::scan_from_import(ModuleNames& names) {
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

void Parser::scan_assignment(ModuleNames& names) {
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
    value = negate && literal.int_value != std::numeric_limits<int64_t>::min() ? -literal.int_value : literal.int_value;
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

}  // namespace plait::parsing
