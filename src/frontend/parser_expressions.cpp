// The parser: expressions, from conditional expressions down to atoms, by
// Python's precedence (parser_impl.h).
#include "frontend/parser_impl.h"

namespace plait::parsing {

bool Parser::starts_expression(const Token& token) {
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
      return token.text == "(" || token.text == "[" || token.text == "{" || token.text == "-" || token.text == "+" ||
             token.text == "~" || token.text == "*" || token.text == "...";
    default:
      return false;
  }
}

ExprPtr Parser::parse_star_expressions() {
  return parse_list_of([this] { return parse_star_expr(); }, &Parser::starts_expression);
}

ExprPtr Parser::parse_target_list() {
  return parse_list_of([this] { return parse_star_target(); }, &Parser::starts_expression);
}

ExprPtr Parser::parse_star_expr() {
  if (peek().is_op("*")) {
    const size_t start = pos_;
    advance();
    parse_bitor();
    unsupported("starred expressions are", since(start));
  }
  return parse_test();
}

ExprPtr Parser::parse_test() {
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

ExprPtr Parser::parse_bool_op(std::string_view keyword, ast::BoolOpKind op, ExprPtr (Parser::*parse_operand)()) {
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

ExprPtr Parser::parse_not() {
  if (!peek().is_keyword("not")) return parse_comparison();
  const size_t start = pos_;
  Nesting nesting(*this);
  advance();
  ExprPtr operand = parse_not();
  ExprPtr result = std::make_unique<ast::UnaryOp>(since(start), ast::UnaryOpKind::Not, std::move(operand));
  check_height(*result, tokens_[start].loc);
  return result;
}

std::optional<ast::CmpOpKind> Parser::comparison_op() {
  using ast::CmpOpKind;
  static const std::pair<std::string_view, CmpOpKind> kOps[] = {
      {"==", CmpOpKind::Eq},  {"!=", CmpOpKind::NotEq}, {"<", CmpOpKind::Lt},
      {"<=", CmpOpKind::LtE}, {">", CmpOpKind::Gt},     {">=", CmpOpKind::GtE},
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

ExprPtr Parser::parse_comparison() {
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

ExprPtr Parser::parse_binary(size_t level) {
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

ExprPtr Parser::parse_factor() {
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

bool Parser::is_int64_min_magnitude(const Token& token) {
  return token.kind == TokenKind::Int && token.deferred_error && token.int_value == std::numeric_limits<int64_t>::min();
}

ExprPtr Parser::parse_power() {
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

ExprPtr Parser::parse_primary() {
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

ExprPtr Parser::parse_call(size_t start, ExprPtr func) {
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

ExprPtr Parser::parse_subscript(size_t start, ExprPtr value) {
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

ExprPtr Parser::parse_slice_item() {
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

void Parser::reject_comprehension(size_t start, const std::string& what) {
  if (peek().is_keyword("for") || peek().is_keyword("async")) {
    advance();
    unsupported(what, since(start));
  }
}

ExprPtr Parser::parse_atom() {
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
      if (token.text == "{") return parse_brace();
      if (token.text == "...") unsupported("Ellipsis ('...') is", token.loc);
      unexpected(token);
    default:
      unexpected(token);
  }
}

ExprPtr Parser::parse_strings() {
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

ExprPtr Parser::parse_parenthesized() {
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

ExprPtr Parser::parse_list() {
  const size_t start = pos_;
  advance();  // [
  std::vector<ExprPtr> elements;
  if (!peek().is_op("]")) {
    elements.push_back(parse_star_expr());
    if (peek().is_keyword("async")) reject_comprehension(start, "asynchronous comprehensions are");
    if (peek().is_keyword("for")) return parse_list_comprehension(start, std::move(elements[0]));
    while (peek().is_op(",")) {
      advance();
      if (peek().is_op("]")) break;
      elements.push_back(parse_star_expr());
    }
  }
  expect_op("]", "expected ',' or ']'");
  return std::make_unique<ast::List>(since(start), std::move(elements));
}

ExprPtr Parser::parse_brace() {
  const size_t start = pos_;
  advance();  // {
  std::vector<ExprPtr> items;
  bool dict = peek().is_op("}");
  if (peek().is_op("**")) unsupported("unpacking in dict displays ('**') is", peek().loc);
  if (!peek().is_op("}")) {
    ExprPtr first = parse_test();
    dict = peek().is_op(":");
    auto item = [&](ExprPtr key) -> ExprPtr {
      if (!dict) return key;
      expect_op(":", "expected ':'");
      const size_t item_start = pos_;
      ExprPtr value = parse_test();
      std::vector<ExprPtr> pair;
      pair.push_back(std::move(key));
      pair.push_back(std::move(value));
      return std::make_unique<ast::Tuple>(since(item_start), std::move(pair));
    };
    items.push_back(item(std::move(first)));
    reject_comprehension(start, dict ? "dict comprehensions are" : "set comprehensions are");
    while (peek().is_op(",")) {
      advance();
      if (peek().is_op("}")) break;
      if (peek().is_op("**")) unsupported("unpacking in dict displays ('**') is", peek().loc);
      items.push_back(item(parse_test()));
    }
  }
  expect_op("}", "expected ',' or '}'");
  const SourceLoc loc = since(start);
  std::vector<ExprPtr> args;
  if (!items.empty()) args.push_back(std::make_unique<ast::List>(loc, std::move(items)));
  return std::make_unique<ast::Call>(loc, std::make_unique<ast::Name>(loc, dict ? "<dict>" : "<set>"), std::move(args),
                                     std::vector<ast::Keyword>{});
}

ExprPtr Parser::parse_list_comprehension(size_t start, ExprPtr element) {
  if (start != comprehension_start_) {
    reject_comprehension(start,
                         "list comprehensions are supported as the whole value of an assignment to a name "
                         "(L = [e for x in ...]); elsewhere they are");
  }
  std::vector<ast::Comprehension> generators;
  while (peek().is_keyword("for")) {
    advance();
    ast::Comprehension clause;
    clause.target = parse_target_list();
    check_target(*clause.target);
    if (!peek().is_keyword("in")) syntax_error("expected 'in'", peek().loc);
    advance();
    clause.iter = parse_or();  // `if` after it starts a condition, not a conditional expression
    while (peek().is_keyword("if")) {
      advance();
      clause.ifs.push_back(parse_or());
    }
    generators.push_back(std::move(clause));
  }
  expect_op("]", "expected ']'");
  std::vector<ExprPtr> elements;
  elements.push_back(std::move(element));
  auto list = std::make_unique<ast::List>(since(start), std::move(elements));
  list->generators = std::move(generators);
  ++comprehensions_;
  return list;
}

}  // namespace plait::parsing
