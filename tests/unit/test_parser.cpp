// Tests for the parser: statements, expression precedence, exact spans,
// unsupported constructs, syntax errors, pragma attachment and parsing, whole
// modules, and the module-level name scan.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>

#include "frontend/parser.h"

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

// A compact prefix form of an expression: (+ a (* b c)).
std::string dump(const ast::Expr* expr) {
  if (!expr) return "_";
  std::ostringstream out;
  switch (expr->kind) {
    case ast::ExprKind::Name: return expr->as<ast::Name>()->id;
    case ast::ExprKind::Constant: {
      const auto& value = expr->as<ast::Constant>()->value;
      if (std::holds_alternative<std::monostate>(value)) return "None";
      if (const bool* b = std::get_if<bool>(&value)) return *b ? "True" : "False";
      if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
      if (const double* d = std::get_if<double>(&value)) {
        out << *d << "f";
        return out.str();
      }
      return "'" + std::get<std::string>(value) + "'";
    }
    case ast::ExprKind::BinOp: {
      const auto* e = expr->as<ast::BinOp>();
      return std::string("(") + ast::binop_symbol(e->op) + " " + dump(e->left.get()) + " " + dump(e->right.get()) + ")";
    }
    case ast::ExprKind::UnaryOp: {
      const auto* e = expr->as<ast::UnaryOp>();
      static const char* const kNames[] = {"neg", "pos", "not", "~"};
      return std::string("(") + kNames[static_cast<int>(e->op)] + " " + dump(e->operand.get()) + ")";
    }
    case ast::ExprKind::BoolOp: {
      const auto* e = expr->as<ast::BoolOp>();
      out << "(" << (e->op == ast::BoolOpKind::And ? "and" : "or");
      for (const auto& v : e->values) out << " " << dump(v.get());
      out << ")";
      return out.str();
    }
    case ast::ExprKind::Compare: {
      const auto* e = expr->as<ast::Compare>();
      out << "(cmp " << dump(e->left.get());
      for (size_t i = 0; i < e->ops.size(); ++i) out << " " << ast::cmpop_symbol(e->ops[i]) << " " << dump(e->comparators[i].get());
      out << ")";
      return out.str();
    }
    case ast::ExprKind::Call: {
      const auto* e = expr->as<ast::Call>();
      out << "call(" << dump(e->func.get());
      for (const auto& a : e->args) out << ", " << dump(a.get());
      for (const auto& k : e->keywords) out << ", " << k.name << "=" << dump(k.value.get());
      out << ")";
      return out.str();
    }
    case ast::ExprKind::Attribute: {
      const auto* e = expr->as<ast::Attribute>();
      return dump(e->value.get()) + "." + e->attr;
    }
    case ast::ExprKind::Subscript: {
      const auto* e = expr->as<ast::Subscript>();
      return dump(e->value.get()) + "[" + dump(e->index.get()) + "]";
    }
    case ast::ExprKind::Slice: {
      const auto* e = expr->as<ast::Slice>();
      return "slice(" + dump(e->lower.get()) + "," + dump(e->upper.get()) + "," + dump(e->step.get()) + ")";
    }
    case ast::ExprKind::Tuple:
    case ast::ExprKind::List: {
      const bool tuple = expr->kind == ast::ExprKind::Tuple;
      const auto& elts = tuple ? expr->as<ast::Tuple>()->elts : expr->as<ast::List>()->elts;
      out << (tuple ? "(tuple" : "[list");
      for (const auto& e : elts) out << " " << dump(e.get());
      out << (tuple ? ")" : "]");
      return out.str();
    }
    case ast::ExprKind::IfExp: {
      const auto* e = expr->as<ast::IfExp>();
      return "(if " + dump(e->test.get()) + " " + dump(e->body.get()) + " " + dump(e->orelse.get()) + ")";
    }
  }
  return "?";
}

void dump_body(const ast::StmtList& body, int depth, std::string& out);

// One line per statement, nested blocks indented by two spaces.
void dump_stmt(const ast::Stmt& stmt, int depth, std::string& out) {
  const std::string pad(static_cast<size_t>(depth) * 2, ' ');
  for (const ast::Pragma& pragma : stmt.pragmas) out += pad + "#pragma " + pragma.text + "\n";
  switch (stmt.kind) {
    case ast::StmtKind::Assign: {
      const auto* s = stmt.as<ast::Assign>();
      out += pad;
      for (const auto& t : s->targets) out += dump(t.get()) + " = ";
      out += dump(s->value.get()) + "\n";
      break;
    }
    case ast::StmtKind::AugAssign: {
      const auto* s = stmt.as<ast::AugAssign>();
      out += pad + dump(s->target.get()) + " " + ast::binop_symbol(s->op) + "= " + dump(s->value.get()) + "\n";
      break;
    }
    case ast::StmtKind::ExprStmt: out += pad + dump(stmt.as<ast::ExprStmt>()->value.get()) + "\n"; break;
    case ast::StmtKind::If: {
      const auto* s = stmt.as<ast::If>();
      out += pad + "if " + dump(s->test.get()) + ":\n";
      dump_body(s->body, depth + 1, out);
      if (!s->orelse.empty()) {
        out += pad + "else:\n";
        dump_body(s->orelse, depth + 1, out);
      }
      break;
    }
    case ast::StmtKind::For: {
      const auto* s = stmt.as<ast::For>();
      out += pad + "for " + dump(s->target.get()) + " in " + dump(s->iter.get()) + ":\n";
      dump_body(s->body, depth + 1, out);
      if (!s->orelse.empty()) {
        out += pad + "else:\n";
        dump_body(s->orelse, depth + 1, out);
      }
      break;
    }
    case ast::StmtKind::While: {
      const auto* s = stmt.as<ast::While>();
      out += pad + "while " + dump(s->test.get()) + ":\n";
      dump_body(s->body, depth + 1, out);
      if (!s->orelse.empty()) {
        out += pad + "else:\n";
        dump_body(s->orelse, depth + 1, out);
      }
      break;
    }
    case ast::StmtKind::Break: out += pad + "break\n"; break;
    case ast::StmtKind::Continue: out += pad + "continue\n"; break;
    case ast::StmtKind::Pass: out += pad + "pass\n"; break;
    case ast::StmtKind::Return: {
      const auto* s = stmt.as<ast::Return>();
      out += pad + "return" + (s->value ? " " + dump(s->value.get()) : "") + "\n";
      break;
    }
  }
}

void dump_body(const ast::StmtList& body, int depth, std::string& out) {
  for (const auto& stmt : body) dump_stmt(*stmt, depth, out);
}

std::string dump_function(const ast::FunctionDef& function) {
  std::string out;
  dump_body(function.body, 0, out);
  return out;
}

// Parses `body` (statements, unindented) as the body of `def f():`.
ast::FunctionDef parse_body(const std::string& body) {
  std::string text = "def f():\n";
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) text += (line.empty() ? "" : "    ") + line + "\n";
  return parse_function(source(text), "f");
}

std::string body_of(const std::string& body) { return dump_function(parse_body(body)); }

// The expression of `x = <text>`.
std::string expr(const std::string& text) {
  const ast::FunctionDef function = parse_body("x = " + text);
  return dump(function.body.at(0)->as<ast::Assign>()->value.get());
}

template <typename F>
CompileError error_of(F&& parse) {
  try {
    parse();
  } catch (const CompileError& error) {
    return error;
  }
  throw std::runtime_error("expected a CompileError");
}

CompileError function_error(const std::string& text, int first_line = 1) {
  return error_of([&] { parse_module(source(text, first_line)); });
}

CompileError body_error(const std::string& body) {
  return error_of([&] { parse_body(body); });
}

// ---------------------------------------------------------------- functions

TEST(Parser, FunctionNameParamsAndDefaults) {
  const ast::FunctionDef f =
      parse_function(source("def kernel(x, y: int, BN=256, eps: float = 1e-3) -> None:\n    pass\n"), "kernel");
  EXPECT_EQ(f.name, "kernel");
  ASSERT_EQ(f.params.size(), 4u);
  EXPECT_EQ(f.params[0].name, "x");
  EXPECT_EQ(f.params[0].default_value, nullptr);
  EXPECT_EQ(f.params[1].name, "y");
  EXPECT_EQ(f.params[1].default_value, nullptr);
  EXPECT_EQ(dump(f.params[2].default_value.get()), "256");
  EXPECT_EQ(dump(f.params[3].default_value.get()), "0.001f");
  EXPECT_EQ(loc_text(f.params[0].loc), "1:11-1:12");
  EXPECT_EQ(loc_text(f.params[2].loc), "1:22-1:28");
  EXPECT_EQ(loc_text(f.loc), "1:0-1:48");
  EXPECT_EQ(dump_function(f), "pass\n");
}

TEST(Parser, ComplexAnnotationsAreSkipped) {
  const ast::FunctionDef f = parse_function(
      source("def g(a: np.ndarray[Any, np.dtype[np.float64]], f: Callable[..., int] = None) -> tuple[int, ...]:\n"
             "    return a\n"),
      "g");
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(dump(f.params[1].default_value.get()), "None");
}

TEST(Parser, LambdaAnnotationsAreSkippedWhole) {
  // The lambda's '=', ',' and ':' end neither the annotation nor the parameter.
  const ast::FunctionDef f = parse_function(
      source("def g(a: lambda x=1, y=2: x, b=3) -> lambda: (lambda z: z):\n"
             "    s: lambda u=1: u = a\n"
             "    return s\n"),
      "g");
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(f.params[0].default_value, nullptr);
  EXPECT_EQ(dump(f.params[1].default_value.get()), "3");
  EXPECT_EQ(dump_function(f), "s = a\nreturn s\n");
}

TEST(Parser, ParameterErrors) {
  CompileError error = function_error("def f(a=1, b):\n    pass\n");
  EXPECT_EQ(error.kind(), ErrorKind::Syntax);
  EXPECT_EQ(error.message(), "parameter without a default follows parameter with a default");
  EXPECT_EQ(loc_text(error.loc()), "1:11-1:12");
  EXPECT_EQ(function_error("def f(a, a):\n    pass\n").message(), "duplicate argument 'a' in function definition");
  error = function_error("def f(*args):\n    pass\n");
  EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
  EXPECT_EQ(error.message(), "'*args' and '**kwargs' parameters are not supported in Plait kernels");
  EXPECT_EQ(function_error("def f(**kw):\n    pass\n").kind(), ErrorKind::Unsupported);
  EXPECT_EQ(function_error("def f(a, *, b):\n    pass\n").message(),
            "keyword-only parameters ('*') are not supported in Plait kernels");
  EXPECT_EQ(function_error("def f(a, /, b):\n    pass\n").message(),
            "positional-only parameter markers ('/') are not supported in Plait kernels");
}

TEST(Parser, DocstringIsDropped) {
  EXPECT_EQ(dump_function(parse_function(source("def f():\n    \"\"\"Adds.\n\n    More.\n    \"\"\"\n    return 1\n"), "f")),
            "return 1\n");
  // Only a leading string is a docstring.
  EXPECT_EQ(body_of("x = 1\n'not a docstring'"), "x = 1\n'not a docstring'\n");
  EXPECT_EQ(dump_function(parse_function(source("def f():\n    'doc'\n"), "f")), "");
}

TEST(Parser, ListComprehensionsBecomeLoopsOfAppends) {
  // The clauses nest in order; their variables are the comprehension's own.
  EXPECT_EQ(body_of("i = 5\nL = [(i, j) for i in range(n) if i % 2 for j in range(i)]"),
            "i = 5\n"
            "L = [list]\n"
            "for <listcomp>.i in call(range, n):\n"
            "  if (% <listcomp>.i 2):\n"
            "    for <listcomp>.j in call(range, <listcomp>.i):\n"
            "      call(L.append, (tuple <listcomp>.i <listcomp>.j))\n");
}

TEST(Parser, DictAndSetDisplaysAreCallsOfTheirBuiltins) {
  // `<dict>` and `<set>` are names no user name can shadow.
  EXPECT_EQ(body_of("d = {}\ne = {1: a, 2: b}\ns = {x, y + 1}"),
            "d = call(<dict>)\ne = call(<dict>, [list (tuple 1 a) (tuple 2 b)])\ns = call(<set>, [list x (+ y 1)])\n");
}

TEST(Parser, OneLineFunction) {
  const ast::FunctionDef f = parse_function(source("def f(x): return x * 2\n"), "f");
  EXPECT_EQ(dump_function(f), "return (* x 2)\n");
}

// ---------------------------------------------------------------- statements

TEST(Parser, Assignments) {
  EXPECT_EQ(body_of("a = 1\na = b = c + 1\na, b = b, a\n(a, b) = t\n[a, b] = t\nx[i, j] = 0\na, = t"),
            "a = 1\n"
            "a = b = (+ c 1)\n"
            "(tuple a b) = (tuple b a)\n"
            "(tuple a b) = t\n"
            "[list a b] = t\n"
            "x[(tuple i j)] = 0\n"
            "(tuple a) = t\n");
}

TEST(Parser, AugmentedAssignmentsWithEveryOperator) {
  EXPECT_EQ(body_of("a += 1\na -= 1\na *= 1\na /= 1\na //= 1\na %= 1\na **= 1\na <<= 1\na >>= 1\n"
                    "a |= 1\na ^= 1\na &= 1\na @= m\ny[i] += x, 2"),
            "a += 1\na -= 1\na *= 1\na /= 1\na //= 1\na %= 1\na **= 1\na <<= 1\na >>= 1\n"
            "a |= 1\na ^= 1\na &= 1\na @= m\ny[i] += (tuple x 2)\n");
}

TEST(Parser, AnnotatedAssignmentDropsTheAnnotation) {
  EXPECT_EQ(body_of("s: float = 0.0\nt: dict[str, int] = 1"), "s = 0f\nt = 1\n");
  // A bare annotation of a name assigns nothing: a pass, and the name is
  // local (the lowerer reports a read of it as unbound).
  const ast::FunctionDef bare = parse_body("s: float\nt: 'int'; u = 1");
  EXPECT_EQ(dump_function(bare), "pass\npass\nu = 1\n");
  EXPECT_EQ(bare.annotated_names, (std::vector<std::string>{"s", "t"}));
  for (const char* other : {"a[0]: float", "(s): float", "a.b: int"}) {
    const CompileError error = body_error(other);
    EXPECT_EQ(error.kind(), ErrorKind::Unsupported) << other;
    EXPECT_EQ(error.message(), "annotations without a value of anything but a plain name are not supported in Plait "
                               "kernels")
        << other;
  }
  EXPECT_EQ(loc_text(body_error("a[0]: float").loc()), "2:4-2:15");
}

TEST(Parser, InvalidAssignmentTargets) {
  CompileError error = body_error("f(x) = 1");
  EXPECT_EQ(error.kind(), ErrorKind::Syntax);
  EXPECT_EQ(error.message(), "cannot assign to function call");
  EXPECT_EQ(loc_text(error.loc()), "2:4-2:8");
  EXPECT_EQ(body_error("1 = x").message(), "cannot assign to literal");
  EXPECT_EQ(body_error("a, b + 1 = t").message(), "cannot assign to expression");
  EXPECT_EQ(body_error("a < b = t").message(), "cannot assign to comparison");
  EXPECT_EQ(body_error("a, b += 1").message(), "'tuple' is an illegal expression for augmented assignment");
  error = body_error("self.x = 1");
  EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
  EXPECT_EQ(error.message(), "assignments to attributes are not supported in Plait kernels");
  EXPECT_EQ(body_error("for f(i) in r:\n    pass").message(), "cannot assign to function call");
}

TEST(Parser, IfElifElse) {
  EXPECT_EQ(body_of("if a:\n    x = 1\nelif b:\n    x = 2\nelif c:\n    pass\nelse:\n    x = 3"),
            "if a:\n"
            "  x = 1\n"
            "else:\n"
            "  if b:\n"
            "    x = 2\n"
            "  else:\n"
            "    if c:\n"
            "      pass\n"
            "    else:\n"
            "      x = 3\n");
}

TEST(Parser, LoopsWithElseBreakContinue) {
  EXPECT_EQ(body_of("for i in range(n):\n    if i:\n        continue\n    break\nelse:\n    pass\n"
                    "while i < n:\n    i += 1\nelse:\n    i = 0\nfor i, j in pairs:\n    pass\nfor x in a, b:\n    pass"),
            "for i in call(range, n):\n"
            "  if i:\n"
            "    continue\n"
            "  break\n"
            "else:\n"
            "  pass\n"
            "while (cmp i < n):\n"
            "  i += 1\n"
            "else:\n"
            "  i = 0\n"
            "for (tuple i j) in pairs:\n"
            "  pass\n"
            "for x in (tuple a b):\n"
            "  pass\n");
}

TEST(Parser, ReturnForms) {
  EXPECT_EQ(body_of("return\nreturn a\nreturn a, b\nreturn (a, b)\nreturn a,"),
            "return\nreturn a\nreturn (tuple a b)\nreturn (tuple a b)\nreturn (tuple a)\n");
}

TEST(Parser, SameLineBodiesAndSemicolons) {
  EXPECT_EQ(body_of("if a: x = 1; y = 2\nfor i in r: s += i\nx = 1; y = 2;"),
            "if a:\n  x = 1\n  y = 2\nfor i in r:\n  s += i\nx = 1\ny = 2\n");
}

TEST(Parser, ExpressionStatements) { EXPECT_EQ(body_of("f(x)\nx"), "call(f, x)\nx\n"); }

TEST(Parser, StatementLocations) {
  const ast::FunctionDef f = parse_function(
      source("def f(a, n):\n    s = a[0] + \\\n        1\n    for i in range(n):\n        s += a[i]\n    return s\n", 20),
      "f");
  ASSERT_EQ(f.body.size(), 3u);
  EXPECT_EQ(loc_text(f.body[0]->loc), "21:4-22:9");  // a statement continued on the next line
  EXPECT_EQ(loc_text(f.body[1]->loc), "23:4-23:21");  // a compound statement: its header, up to the ':'
  EXPECT_EQ(loc_text(f.body[1]->as<ast::For>()->body[0]->loc), "24:8-24:17");
  EXPECT_EQ(loc_text(f.body[2]->loc), "25:4-25:12");
  EXPECT_EQ(loc_text(f.body[2]->as<ast::Return>()->value->loc), "25:11-25:12");
}

// ---------------------------------------------------------------- expressions

TEST(Parser, ArithmeticPrecedence) {
  EXPECT_EQ(expr("a + b * c - d"), "(- (+ a (* b c)) d)");
  EXPECT_EQ(expr("a / b // c % d @ e"), "(@ (% (// (/ a b) c) d) e)");
  EXPECT_EQ(expr("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(expr("a << b + c >> d"), "(>> (<< a (+ b c)) d)");
  EXPECT_EQ(expr("a | b ^ c & d"), "(| a (^ b (& c d)))");
  EXPECT_EQ(expr("a & b | c ^ d"), "(| (& a b) (^ c d))");
}

TEST(Parser, PowerAndUnary) {
  EXPECT_EQ(expr("-2**2"), "(neg (** 2 2))");
  EXPECT_EQ(expr("2**-1"), "(** 2 (neg 1))");
  EXPECT_EQ(expr("a**b**c"), "(** a (** b c))");
  EXPECT_EQ(expr("-a * +b"), "(* (neg a) (pos b))");
  EXPECT_EQ(expr("~a ** 2"), "(~ (** a 2))");
  EXPECT_EQ(expr("--a"), "(neg (neg a))");
  EXPECT_EQ(expr("a.b ** c[0]"), "(** a.b c[0])");
}

TEST(Parser, BooleanAndComparisonPrecedence) {
  EXPECT_EQ(expr("not a < b"), "(not (cmp a < b))");
  EXPECT_EQ(expr("a or b and c or d"), "(or a (and b c) d)");
  EXPECT_EQ(expr("not a and not b"), "(and (not a) (not b))");
  EXPECT_EQ(expr("a < b <= c == d != e > f >= g"), "(cmp a < b <= c == d != e > f >= g)");
  EXPECT_EQ(expr("a is not None"), "(cmp a is not None)");
  EXPECT_EQ(expr("a is b"), "(cmp a is b)");
  EXPECT_EQ(expr("a not in b"), "(cmp a not in b)");
  EXPECT_EQ(expr("a in b"), "(cmp a in b)");
  EXPECT_EQ(expr("a + 1 < b | c"), "(cmp (+ a 1) < (| b c))");
}

TEST(Parser, ConditionalExpression) {
  EXPECT_EQ(expr("a if c else b"), "(if c a b)");
  EXPECT_EQ(expr("a if c else b if d else e"), "(if c a (if d b e))");
  EXPECT_EQ(expr("x + 1 if a or b else -x"), "(if (or a b) (+ x 1) (neg x))");
  EXPECT_EQ(body_error("x = a if c").message(), "expected 'else' after 'if' expression");
}

TEST(Parser, Literals) {
  EXPECT_EQ(expr("[None, True, False, 0x10, 2.5, 'a' \"b\"]"), "[list None True False 16 2.5f 'ab']");
  EXPECT_EQ(expr("()"), "(tuple)");
  EXPECT_EQ(expr("(1,)"), "(tuple 1)");
  EXPECT_EQ(expr("(1, 2,)"), "(tuple 1 2)");
  EXPECT_EQ(expr("[]"), "[list]");
  EXPECT_EQ(expr("[1, [2, 3],]"), "[list 1 [list 2 3]]");
  EXPECT_EQ(expr("1, 2"), "(tuple 1 2)");
  EXPECT_EQ(expr("(a)"), "a");
}

TEST(Parser, CallsAttributesAndSubscripts) {
  EXPECT_EQ(expr("np.zeros((n, m), dtype=np.float32)"), "call(np.zeros, (tuple n m), dtype=np.float32)");
  EXPECT_EQ(expr("f()"), "call(f)");
  EXPECT_EQ(expr("f(a, b,)"), "call(f, a, b)");
  EXPECT_EQ(expr("a.b.c(d)[e].f"), "call(a.b.c, d)[e].f");
  EXPECT_EQ(expr("a[i, j]"), "a[(tuple i j)]");
  EXPECT_EQ(expr("a[i][j]"), "a[i][j]");
  EXPECT_EQ(expr("a[1:-1, ::2]"), "a[(tuple slice(1,(neg 1),_) slice(_,_,2))]");
  EXPECT_EQ(expr("a[None, :]"), "a[(tuple None slice(_,_,_))]");
  EXPECT_EQ(expr("a[:]"), "a[slice(_,_,_)]");
  EXPECT_EQ(expr("a[::]"), "a[slice(_,_,_)]");
  EXPECT_EQ(expr("a[i:]"), "a[slice(i,_,_)]");
  EXPECT_EQ(expr("a[:j:k]"), "a[slice(_,j,k)]");
  EXPECT_EQ(expr("a[i,]"), "a[(tuple i)]");
  EXPECT_EQ(expr("a[i if c else j]"), "a[(if c i j)]");
}

TEST(Parser, CallErrors) {
  CompileError error = body_error("f(a=1, b)");
  EXPECT_EQ(error.message(), "positional argument follows keyword argument");
  EXPECT_EQ(loc_text(error.loc()), "2:11-2:12");
  EXPECT_EQ(body_error("f(a=1, a=2)").message(), "keyword argument repeated: a");
  error = body_error("f(*a)");
  EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
  EXPECT_EQ(error.message(), "argument unpacking ('*') is not supported in Plait kernels");
  EXPECT_EQ(body_error("f(**a)").kind(), ErrorKind::Unsupported);
  EXPECT_EQ(body_error("f(a b)").message(), "expected ',' or ')'");
  EXPECT_EQ(body_error("a[]").message(), "expected an index");
}

TEST(Parser, ExpressionSpans) {
  const ast::FunctionDef f = parse_body("y = (a + b) * c[i, 1:n]\nz = f(x, k=2).t");
  const auto* assign = f.body[0]->as<ast::Assign>();
  const auto* mul = assign->value->as<ast::BinOp>();
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(loc_text(mul->loc), "2:8-2:27");          // includes the parenthesis
  EXPECT_EQ(loc_text(mul->left->loc), "2:9-2:14");    // a + b, without it
  const auto* sub = mul->right->as<ast::Subscript>();
  EXPECT_EQ(loc_text(sub->loc), "2:18-2:27");
  const auto* index = sub->index->as<ast::Tuple>();
  EXPECT_EQ(loc_text(index->loc), "2:20-2:26");
  EXPECT_EQ(loc_text(index->elts[1]->loc), "2:23-2:26");  // the slice 1:n
  EXPECT_EQ(loc_text(assign->targets[0]->loc), "2:4-2:5");
  const auto* attribute = f.body[1]->as<ast::Assign>()->value->as<ast::Attribute>();
  EXPECT_EQ(loc_text(attribute->loc), "3:8-3:19");
  const auto* call = attribute->value->as<ast::Call>();
  EXPECT_EQ(loc_text(call->loc), "3:8-3:17");
  EXPECT_EQ(loc_text(call->keywords[0].loc), "3:13-3:16");
}

TEST(Parser, MultiLineExpressionSpans) {
  const ast::FunctionDef f = parse_body("x = f(a,\n      b)");
  EXPECT_EQ(loc_text(f.body[0]->as<ast::Assign>()->value->loc), "2:8-3:12");
}

TEST(Parser, LiteralsKernelsCannotUse) {
  const CompileError error = function_error("def f():\n    return 9223372036854775808\n", 3);
  EXPECT_EQ(error.kind(), ErrorKind::Syntax);
  EXPECT_EQ(error.message(), "integer literal is too large for a 64-bit integer");
  EXPECT_EQ(loc_text(error.loc()), "4:11-4:30");
  EXPECT_EQ(expr("-9223372036854775807"), "(neg 9223372036854775807)");
  EXPECT_EQ(expr("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(expr("-0x8000_0000_0000_0000"), "-9223372036854775808");
  EXPECT_EQ(body_error("x = 9223372036854775808").message(), "integer literal is too large for a 64-bit integer");
  EXPECT_EQ(body_error("x = -9223372036854775808**1").message(), "integer literal is too large for a 64-bit integer");
  EXPECT_EQ(body_error("x = -9223372036854775809").message(), "integer literal is too large for a 64-bit integer");
  const CompileError complex_error = body_error("x = 1 + 2j");
  EXPECT_EQ(complex_error.kind(), ErrorKind::Unsupported);
  EXPECT_EQ(complex_error.message(), "complex literals are not supported in Plait kernels");
  EXPECT_EQ(loc_text(complex_error.loc()), "2:12-2:14");
  const CompileError escape_error = body_error("x = 'a' 'b\\N{DASH}'");
  EXPECT_EQ(escape_error.kind(), ErrorKind::Unsupported);
  EXPECT_EQ(loc_text(escape_error.loc()), "2:14-2:22");
  // Outside the kernel they do not matter.
  EXPECT_EQ(parse_function(source("MASK = 0xFFFFFFFFFFFFFFFF\nI = 1j\nS = '\\N{DASH}'\ndef f():\n    pass\n"), "f").name,
            "f");
}

TEST(Parser, StringPrefixes) {
  EXPECT_EQ(expr("r'\\d' 'x'"), "'\\dx'");
  CompileError error = body_error("x = f'{a}'");
  EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
  EXPECT_EQ(error.message(), "f-strings are not supported in Plait kernels");
  EXPECT_EQ(loc_text(error.loc()), "2:8-2:14");
  error = body_error("x = b'a'");
  EXPECT_EQ(error.message(), "bytes literals are not supported in Plait kernels");
}

// ---------------------------------------------------------------- unsupported constructs

struct UnsupportedCase {
  const char* body;
  const char* message;
  const char* loc;
};

TEST(Parser, UnsupportedConstructsPointAtTheConstruct) {
  const UnsupportedCase cases[] = {
      {"with open(p) as f:\n    pass", "'with' statements are not supported in Plait kernels", "2:4-2:8"},
      {"try:\n    pass\nexcept E:\n    pass", "'try' statements are not supported in Plait kernels", "2:4-2:7"},
      {"def g():\n    pass", "nested function definitions are not supported in Plait kernels", "2:4-2:7"},
      {"class C:\n    pass", "class definitions are not supported in Plait kernels", "2:4-2:9"},
      {"@dec\ndef g():\n    pass", "decorators and nested function definitions are not supported in Plait kernels",
       "2:4-2:5"},
      {"global g", "'global' statements are not supported in Plait kernels", "2:4-2:10"},
      {"nonlocal g", "'nonlocal' statements are not supported in Plait kernels", "2:4-2:12"},
      {"import math", "'import' statements are not supported in Plait kernels", "2:4-2:10"},
      {"from math import sqrt", "'from ... import' statements are not supported in Plait kernels", "2:4-2:8"},
      {"del a", "'del' statements are not supported in Plait kernels", "2:4-2:7"},
      {"assert a > 0", "'assert' statements are not supported in Plait kernels", "2:4-2:10"},
      {"raise ValueError()", "'raise' statements are not supported in Plait kernels", "2:4-2:9"},
      {"async for i in r:\n    pass", "'async' statements are not supported in Plait kernels", "2:4-2:9"},
      {"yield x", "'yield' expressions are not supported in Plait kernels", "2:4-2:9"},
      {"x = yield", "'yield' expressions are not supported in Plait kernels", "2:8-2:13"},
      {"x = await g()", "'await' expressions are not supported in Plait kernels", "2:8-2:13"},
      {"f = lambda x: x", "lambda expressions are not supported in Plait kernels", "2:8-2:14"},
      {"if (n := len(a)) > 0:\n    pass", "assignment expressions (':=') are not supported in Plait kernels",
       "2:8-2:12"},
      {"x = f([i * 2 for i in r])",
       "list comprehensions are supported as the whole value of an assignment to a name (L = [e for x in ...]); "
       "elsewhere they are not supported in Plait kernels",
       "2:10-2:20"},
      {"x = y = [i for i in r]",
       "list comprehensions are supported as the whole value of an assignment to a name (L = [e for x in ...]); "
       "elsewhere they are not supported in Plait kernels",
       "2:12-2:18"},
      {"x = [x for i in r]",
       "a list comprehension that reads the name it is assigned to ('x') is not supported in "
       "Plait kernels",
       "2:4-2:22"},
      {"x = sum(i for i in r)", "generator expressions are not supported in Plait kernels", "2:12-2:17"},
      {"x = (i for i in r)", "generator expressions are not supported in Plait kernels", "2:8-2:14"},
      {"a, *b = t", "starred expressions are not supported in Plait kernels", "2:7-2:9"},
      {"x = {k: v for k in r}", "dict comprehensions are not supported in Plait kernels", "2:8-2:17"},
      {"x = {k for k in r}", "set comprehensions are not supported in Plait kernels", "2:8-2:14"},
      {"x = {**a}", "unpacking in dict displays ('**') is not supported in Plait kernels", "2:9-2:11"},
      {"x = a[..., 0]", "Ellipsis ('...') is not supported in Plait kernels", "2:10-2:13"},
      {"if a: import m", "'import' statements are not supported in Plait kernels", "2:10-2:16"},
  };
  for (const UnsupportedCase& c : cases) {
    SCOPED_TRACE(c.body);
    const CompileError error = body_error(c.body);
    EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
    EXPECT_EQ(error.message(), c.message);
    EXPECT_EQ(loc_text(error.loc()), c.loc);
  }
}

TEST(Parser, UnsupportedErrorTextHasTheCaretUnderTheConstruct) {
  const CompileError error = function_error("def f(p):\n    with open(p) as fh:\n        pass\n", 7);
  EXPECT_EQ(std::string(error.what()),
            "File \"k.py\", line 8, col 5\n"
            "    with open(p) as fh:\n"
            "    ^~~~\n"
            "NotImplementedError: 'with' statements are not supported in Plait kernels");
}

// ---------------------------------------------------------------- syntax errors

TEST(Parser, ExpectedColon) {
  const CompileError error = function_error("def f(x):\n    if x > 0\n        return x\n");
  EXPECT_EQ(error.kind(), ErrorKind::Syntax);
  EXPECT_EQ(error.message(), "expected ':'");
  EXPECT_EQ(loc_text(error.loc()), "2:12-2:13");
  EXPECT_EQ(std::string(error.what()),
            "File \"k.py\", line 2, col 13\n"
            "    if x > 0\n"
            "            ^\n"
            "SyntaxError: expected ':'");
  EXPECT_EQ(function_error("def f(x)\n    pass\n").message(), "expected ':'");
  EXPECT_EQ(function_error("def f(x):\n    for i in r\n        pass\n").message(), "expected ':'");
  EXPECT_EQ(function_error("def f(x):\n    for i r:\n        pass\n").message(), "expected 'in'");
}

TEST(Parser, UnexpectedEndOfLine) {
  const CompileError error = function_error("def k(y, acc):\n    for i in range(3):\n        y[i] = acc +\n", 5);
  EXPECT_EQ(error.message(), "unexpected end of line");
  EXPECT_EQ(std::string(error.what()),
            "File \"k.py\", line 7, col 21\n"
            "        y[i] = acc +\n"
            "                    ^\n"
            "SyntaxError: unexpected end of line");
}

TEST(Parser, UnexpectedIndent) {
  const CompileError error = function_error("def f(x):\n    a = 1\n        b = 2\n");
  EXPECT_EQ(error.message(), "unexpected indent");
  EXPECT_EQ(loc_text(error.loc()), "3:8-3:9");
}

TEST(Parser, ErrorsAtTheEndOfInputShowTheLastLine) {
  const CompileError error = function_error("def f(x):\n    if x:\n\n   \n");
  EXPECT_EQ(error.message(), "expected an indented block after 'if' statement on line 2");
  EXPECT_EQ(std::string(error.what()),
            "File \"k.py\", line 2, col 10\n"
            "    if x:\n"
            "         ^\n"
            "SyntaxError: expected an indented block after 'if' statement on line 2");
}

TEST(Parser, ExpectedIndentedBlock) {
  const CompileError error = function_error("def f(x):\n    for i in r:\n    pass\n");
  EXPECT_EQ(error.message(), "expected an indented block after 'for' statement on line 2");
  EXPECT_EQ(loc_text(error.loc()), "3:4-3:8");
  EXPECT_EQ(function_error("def f(x):\npass\n").message(),
            "expected an indented block after function definition on line 1");
}

TEST(Parser, InvalidSyntax) {
  CompileError error = body_error("x = 1 2");
  EXPECT_EQ(error.message(), "invalid syntax");
  EXPECT_EQ(loc_text(error.loc()), "2:10-2:11");
  EXPECT_EQ(body_error("x = )").message(), "unmatched ')'");
  EXPECT_EQ(body_error("x = * 2").kind(), ErrorKind::Unsupported);
  EXPECT_EQ(body_error("else:\n    pass").message(), "invalid syntax");
  EXPECT_EQ(body_error("x = if").message(), "invalid syntax");
  EXPECT_EQ(body_error("x = a.1").message(), "invalid syntax");
  EXPECT_EQ(body_error("x = a.if").message(), "expected an attribute name after '.'");
}

// ---------------------------------------------------------------- pragmas

TEST(Parser, PragmasAttachToTheStatementBelow) {
  const ast::FunctionDef f = parse_body(
      "#pragma parallel for reduction(+:s, t) num_threads(4)\n"
      "# a plain comment between is fine\n"
      "#pragma simd(8)\n"
      "for i in range(n):\n"
      "    #pragma atomic\n"
      "    h[a[i]] += 1\n"
      "s = 0\n");
  ASSERT_EQ(f.body.size(), 2u);
  const ast::Stmt& loop = *f.body[0];
  ASSERT_EQ(loop.pragmas.size(), 2u);
  const ast::Pragma& parallel = loop.pragmas[0];
  EXPECT_EQ(parallel.text, "parallel for reduction(+:s, t) num_threads(4)");
  EXPECT_EQ(parallel.words, (std::vector<std::string>{"parallel", "for"}));
  ASSERT_EQ(parallel.clauses.size(), 2u);
  EXPECT_EQ(parallel.clauses[0].name, "reduction");
  EXPECT_EQ(parallel.clauses[0].args, (std::vector<std::string>{"+:s", "t"}));
  EXPECT_EQ(loc_text(parallel.clauses[0].loc), "2:25-2:42");
  EXPECT_EQ(parallel.clauses[1].name, "num_threads");
  EXPECT_EQ(parallel.clauses[1].args, (std::vector<std::string>{"4"}));
  EXPECT_EQ(loc_text(parallel.loc), "2:5-2:57");
  const ast::Pragma& simd = loop.pragmas[1];
  EXPECT_TRUE(simd.words.empty());
  ASSERT_EQ(simd.clauses.size(), 1u);
  EXPECT_EQ(simd.clauses[0].name, "simd");
  EXPECT_EQ(simd.clauses[0].args, (std::vector<std::string>{"8"}));
  const ast::Stmt& update = *loop.as<ast::For>()->body[0];
  ASSERT_EQ(update.pragmas.size(), 1u);
  EXPECT_EQ(update.pragmas[0].words, (std::vector<std::string>{"atomic"}));
  EXPECT_EQ(loc_text(update.pragmas[0].loc), "6:9-6:22");
  EXPECT_TRUE(f.body[1]->pragmas.empty());
}

TEST(Parser, PragmaAboveAnIfInsideALoopAndOnASemicolonLine) {
  EXPECT_EQ(body_of("for i in r:\n    #pragma sequential\n    while c:\n        pass\n#pragma atomic\nx[0] += 1; y = 2"),
            "for i in r:\n  #pragma sequential\n  while c:\n    pass\n#pragma atomic\nx[0] += 1\ny = 2\n");
}

TEST(Parser, SpaceBeforePragmaWordMakesAPlainComment) {
  EXPECT_EQ(body_of("# pragma parallel for\nfor i in r:\n    pass"), "for i in r:\n  pass\n");
}

TEST(Parser, PragmaWithArrowKeepsOnlyItsText) {
  const ast::FunctionDef f = parse_body("#pragma :M=>parallel :N=>reduce(sum)\nfor i in r:\n    pass");
  const ast::Pragma& pragma = f.body[0]->pragmas.at(0);
  EXPECT_EQ(pragma.text, ":M=>parallel :N=>reduce(sum)");
  EXPECT_TRUE(pragma.words.empty());
  EXPECT_TRUE(pragma.clauses.empty());
}

TEST(Parser, MisplacedPragmas) {
  struct Case {
    const char* body;
    const char* message;
    int line;
  };
  const Case cases[] = {
      // A blank line between the pragma and its statement.
      {"#pragma parallel for\n\nfor i in r:\n    pass", "pragma is not directly above a statement", 2},
      // At the end of a block, with the next statement outside it.
      {"for i in r:\n    x = 1\n    #pragma atomic\ny = 2", "pragma is not directly above a statement", 4},
      // At the end of the function.
      {"x = 1\n#pragma simd", "pragma is not directly above a statement", 3},
      // Above an `else`.
      {"if a:\n    pass\n#pragma simd\nelse:\n    pass", "pragma is not directly above a statement", 4},
      // Indented differently from the statement below.
      {"for i in r:\n#pragma atomic\n    x = 1", "pragma is not directly above a statement", 3},
      // On the same line as code.
      {"for i in r:  #pragma simd\n    pass", "a pragma must be on its own line, directly above a statement", 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    const CompileError error = body_error(c.body);
    EXPECT_EQ(error.kind(), ErrorKind::Pragma);
    EXPECT_EQ(error.message(), c.message);
    EXPECT_EQ(error.loc().line, c.line);
  }
  // Above a docstring, which is dropped.
  const CompileError docstring = function_error("def f():\n    #pragma simd\n    'doc'\n    pass\n");
  EXPECT_EQ(docstring.kind(), ErrorKind::Pragma);
  EXPECT_EQ(docstring.loc().line, 2);
  // The end-of-block pragma's error points at its text.
  const CompileError end_of_block = body_error("for i in r:\n    x = 1\n    #pragma atomic\ny = 2");
  EXPECT_EQ(std::string(end_of_block.what()),
            "File \"k.py\", line 4, col 10\n"
            "        #pragma atomic\n"
            "         ^~~~~~~~~~~~~\n"
            "SyntaxError: pragma is not directly above a statement");
}

TEST(Parser, StrayPragmasOutsideTheFunctionAreIgnored) {
  const ast::Module module = parse_module(source("x = 1  #pragma simd\ndef f():\n    return 1\ny = [1,  #pragma x\n  2]\n"));
  ASSERT_EQ(module.functions.size(), 1u);
}

TEST(Parser, MalformedPragmas) {
  struct Case {
    const char* pragma;
    const char* message;
    const char* loc;
  };
  const Case cases[] = {
      {"#pragma parallel for reduction(+:s", "unbalanced parenthesis in pragma", "2:34-2:35"},
      {"#pragma parallel for)", "unexpected ')' in pragma", "2:24-2:25"},
      {"#pragma (x)", "unexpected '(' in pragma", "2:12-2:13"},
      {"#pragma reduction(+:s,)", "empty argument in pragma clause 'reduction'", "2:21-2:27"},
      {"#pragma", "empty pragma", "2:5-2:11"},
      {"#pragma parallel + for", "unexpected '+' in pragma", "2:21-2:22"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pragma);
    const CompileError error = body_error(std::string(c.pragma) + "\nfor i in r:\n    pass");
    EXPECT_EQ(error.kind(), ErrorKind::Pragma);
    EXPECT_EQ(error.message(), c.message);
    EXPECT_EQ(loc_text(error.loc()), c.loc);
  }
}

TEST(Parser, PragmaCommentParsing) {
  const SourceFile file = source("");
  const ast::Pragma pragma =
      parse_pragma_comment(file, "pragma  parallel  for private(a, b), schedule (dynamic, f(1, 2)) simd()", SourceLoc{3, 1, 3, 73});
  EXPECT_EQ(pragma.text, "parallel  for private(a, b), schedule (dynamic, f(1, 2)) simd()");
  EXPECT_EQ(pragma.words, (std::vector<std::string>{"parallel", "for"}));
  ASSERT_EQ(pragma.clauses.size(), 3u);
  EXPECT_EQ(pragma.clauses[0].args, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(pragma.clauses[1].name, "schedule");
  EXPECT_EQ(pragma.clauses[1].args, (std::vector<std::string>{"dynamic", "f(1, 2)"}));
  EXPECT_EQ(loc_text(pragma.clauses[1].loc), "3:38-3:65");
  EXPECT_EQ(pragma.clauses[2].name, "simd");
  EXPECT_TRUE(pragma.clauses[2].args.empty());
}

// ---------------------------------------------------------------- indented sources and modules

TEST(Parser, IndentedMethodSourceKeepsFilePositions) {
  const SourceFile file = source(
      "    @plait.jit\n"
      "    def step(self, a, n):\n"
      "        #pragma parallel for\n"
      "        for i in range(n):\n"
      "            a[i] = 2 * a[i]\n",
      30);
  const ast::FunctionDef f = parse_function(file, "step");
  EXPECT_EQ(loc_text(f.loc), "31:4-31:24");
  ASSERT_EQ(f.body.size(), 1u);
  EXPECT_EQ(loc_text(f.body[0]->loc), "33:8-33:25");
  EXPECT_EQ(f.body[0]->pragmas.at(0).loc.line, 32);
  const CompileError error = error_of([] {
    parse_function(source("    def step(a):\n        a[0] = 1 +\n", 30), "step");
  });
  EXPECT_EQ(std::string(error.what()),
            "File \"k.py\", line 31, col 19\n"
            "        a[0] = 1 +\n"
            "                  ^\n"
            "SyntaxError: unexpected end of line");
}

TEST(Parser, ModuleParsesEveryTopLevelDefAndSkipsTheRest) {
  const SourceFile file = source(
      "import numpy as np\n"
      "from plait import prange\n"
      "CONFIG = {'a': f'{x}'}\n"
      "class Helper:\n"
      "    def method(self):\n"
      "        with open(p) as f:\n"
      "            pass\n"
      "@plait.jit(parallel=True)\n"
      "def first(a):\n"
      "    return a\n"
      "\n"
      "def second(a, b=2):\n"
      "    return a + b\n"
      "if __name__ == '__main__':\n"
      "    print([x for x in range(3)])\n"
      "else:\n"
      "    pass\n");
  const ast::Module module = parse_module(file);
  ASSERT_EQ(module.functions.size(), 2u);
  EXPECT_EQ(module.functions[0].name, "first");
  EXPECT_EQ(module.functions[1].name, "second");
  EXPECT_EQ(loc_text(module.functions[1].loc), "12:0-12:18");
}

TEST(Parser, ParseFunctionParsesOnlyTheNamedFunction) {
  const SourceFile file = source(
      "def helper(d):\n"
      "    return {k: v for k, v in d}\n"
      "def kernel(a):\n"
      "    return a\n"
      "def kernel(a, b):\n"
      "    return a * b\n");
  const ast::FunctionDef f = parse_function(file, "kernel");
  EXPECT_EQ(f.params.size(), 2u);  // the later definition wins, as in Python
  EXPECT_EQ(parse_module(source("def a():\n    pass\n")).functions.size(), 1u);
  EXPECT_EQ(error_of([&] { parse_module(file); }).kind(), ErrorKind::Unsupported);
}

TEST(Parser, MissingFunctionIsANameError) {
  const CompileError error = error_of([] { parse_function(source("def g():\n    pass\n"), "f"); });
  EXPECT_EQ(error.kind(), ErrorKind::Name);
  EXPECT_EQ(error.message(), "no function named 'f' in k.py");
  EXPECT_EQ(std::string(error.what()), "File \"k.py\"\nNameError: no function named 'f' in k.py");
}

TEST(Parser, TopLevelIndentIsAnError) {
  EXPECT_EQ(function_error("x = 1\n    y = 2\n").message(), "unexpected indent");
}

TEST(Parser, ScanModuleNames) {
  const ModuleNames names = scan_module_names(source(
      "import numpy as np\n"
      "import math, os.path\n"
      "import numpy.linalg as la\n"
      "from plait import prange\n"
      "from math import (sqrt as root, pi)\n"
      "from . import sibling\n"
      "from x import *\n"
      "N = 10\n"
      "M = -3\n"
      "ALPHA = 0.5\n"
      "BETA = -1e-3\n"
      "FLAG = True\n"
      "TYPED: Final[int] = 12\n"
      "DECLARED: int\n"
      "OFF = False\n"
      "A = B = 7  # chained\n"
      "GONE = 1\n"
      "GONE = compute()\n"
      "EXPR = 1 + 2\n"
      "NEG_BOOL = -True\n"
      "S = 'text'\n"
      "BIG = 0xFFFFFFFFFFFFFFFF\n"
      "IMAG = 2j\n"
      "LOWEST = -9223372036854775808\n"
      "def N2():\n"
      "    Z = 5\n"
      "if True:\n"
      "    HIDDEN = 1\n"));
  const std::map<std::string, std::string> imports = {
      {"np", "numpy"},    {"math", "math"}, {"os", "os"},      {"la", "numpy.linalg"},
      {"prange", "plait.prange"}, {"root", "math.sqrt"}, {"pi", "math.pi"},
  };
  EXPECT_EQ(names.imports, imports);
  const std::map<std::string, ast::Constant::Value> constants = {
      {"N", int64_t{10}}, {"M", int64_t{-3}}, {"ALPHA", 0.5}, {"BETA", -1e-3}, {"FLAG", true},
      {"OFF", false},     {"A", int64_t{7}},  {"B", int64_t{7}}, {"TYPED", int64_t{12}},
      {"LOWEST", std::numeric_limits<int64_t>::min()},
  };
  EXPECT_EQ(names.constants, constants);
}

TEST(Parser, ScanModuleNamesLaterBindingsWin) {
  const ModuleNames names = scan_module_names(source("import math as m\nm = 3\nK = 1\nimport numpy as K\n"));
  EXPECT_EQ(names.imports, (std::map<std::string, std::string>{{"K", "numpy"}}));
  EXPECT_EQ(names.constants, (std::map<std::string, ast::Constant::Value>{{"m", int64_t{3}}}));
}

}  // namespace
}  // namespace plait
