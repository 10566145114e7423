// The Python-subset syntax tree produced by the parser.
//
// It mirrors Python's own `ast` module for the constructs Plait accepts, keeps
// exact source spans on every node, and attaches `#pragma` comments to the
// statement directly below them. It is untyped: type inference happens when
// the tree is lowered to the IR (frontend/lower_to_ir.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "support/diagnostics.h"

namespace plait::ast {

// ---------------------------------------------------------------- pragmas

// One clause of a pragma, e.g. `reduction(+:s, t)` -> name "reduction",
// args {"+:s", "t"}... see frontend/pragma.h for the parsed form.
struct PragmaClause {
  std::string name;               // "reduction", "private", "num_threads", "simd"
  std::vector<std::string> args;  // comma separated arguments, trimmed
  SourceLoc loc;
};

// A `#pragma ...` comment line. `words` are the bare words before and between
// clauses ("parallel", "for", "simd", "atomic", "sequential"); a word with a
// parenthesised argument list is a clause ("simd(8)" -> clause simd {"8"}).
struct Pragma {
  std::string text;  // everything after "#pragma", trimmed
  std::vector<std::string> words;
  std::vector<PragmaClause> clauses;
  SourceLoc loc;     // the span of the text after '#'
};

// ---------------------------------------------------------------- expressions

enum class ExprKind {
  Name, Constant, BinOp, UnaryOp, BoolOp, Compare, Call, Attribute,
  Subscript, Slice, Tuple, List, IfExp,
};

enum class BinOpKind { Add, Sub, Mult, Div, FloorDiv, Mod, Pow, LShift, RShift, BitOr, BitXor, BitAnd, MatMult };
enum class UnaryOpKind { USub, UAdd, Not, Invert };
enum class BoolOpKind { And, Or };
enum class CmpOpKind { Eq, NotEq, Lt, LtE, Gt, GtE, Is, IsNot, In, NotIn };

const char* binop_symbol(BinOpKind op);
const char* cmpop_symbol(CmpOpKind op);

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  explicit Expr(ExprKind k, SourceLoc l) : kind(k), loc(l) {}
  virtual ~Expr() = default;
  ExprKind kind;
  SourceLoc loc;
  // How deep the IR of this subtree may nest: 1 for a leaf, else one more
  // than its deepest child, plus one per further operand of a node that the
  // lowering turns into a chain (`a and b and c`, `a < b < c`, `max(a, b, c)`).
  // The parser refuses trees higher than kMaxExpressionDepth
  // (support/compiler_stack.h), since every later stage recurses over them.
  int height = 1;

  template <typename T> const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  // Raises `height` to stand `extra` levels above `child` (which may be null).
  void above(const ExprPtr& child, int extra = 1) {
    if (child && child->height + extra > height) height = child->height + extra;
  }
  void above(const std::vector<ExprPtr>& children, int extra = 1) {
    for (const ExprPtr& child : children) above(child, extra);
  }
};

struct Name : Expr {
  static constexpr ExprKind kKind = ExprKind::Name;
  Name(SourceLoc l, std::string i) : Expr(kKind, l), id(std::move(i)) {}
  std::string id;
};

// None, True/False, integers (fit in int64, else a SyntaxError), floats
// (including `1e3`, `.5`, `inf` never appears: it is float('inf')), strings.
struct Constant : Expr {
  static constexpr ExprKind kKind = ExprKind::Constant;
  using Value = std::variant<std::monostate, bool, int64_t, double, std::string>;
  Constant(SourceLoc l, Value v) : Expr(kKind, l), value(std::move(v)) {}
  Value value;
  bool is_none() const { return std::holds_alternative<std::monostate>(value); }
};

struct BinOp : Expr {
  static constexpr ExprKind kKind = ExprKind::BinOp;
  BinOp(SourceLoc l, BinOpKind o, ExprPtr a, ExprPtr b)
      : Expr(kKind, l), op(o), left(std::move(a)), right(std::move(b)) {
    above(left);
    above(right);
  }
  BinOpKind op;
  ExprPtr left, right;
};

struct UnaryOp : Expr {
  static constexpr ExprKind kKind = ExprKind::UnaryOp;
  UnaryOp(SourceLoc l, UnaryOpKind o, ExprPtr e) : Expr(kKind, l), op(o), operand(std::move(e)) { above(operand); }
  UnaryOpKind op;
  ExprPtr operand;
};

// `a and b and c` is one BoolOp with three values, as in Python's ast.
struct BoolOp : Expr {
  static constexpr ExprKind kKind = ExprKind::BoolOp;
  BoolOp(SourceLoc l, BoolOpKind o, std::vector<ExprPtr> v) : Expr(kKind, l), op(o), values(std::move(v)) {
    above(values, static_cast<int>(values.size()));
  }
  BoolOpKind op;
  std::vector<ExprPtr> values;
};

// `a < b <= c`: left=a, ops={Lt, LtE}, comparators={b, c}.
struct Compare : Expr {
  static constexpr ExprKind kKind = ExprKind::Compare;
  Compare(SourceLoc l, ExprPtr a, std::vector<CmpOpKind> o, std::vector<ExprPtr> c)
      : Expr(kKind, l), left(std::move(a)), ops(std::move(o)), comparators(std::move(c)) {
    above(left, static_cast<int>(comparators.size()));
    above(comparators, static_cast<int>(comparators.size()));
  }
  ExprPtr left;
  std::vector<CmpOpKind> ops;
  std::vector<ExprPtr> comparators;
};

struct Keyword {
  std::string name;
  ExprPtr value;
  SourceLoc loc;  // span of `name=value`
};

struct Call : Expr {
  static constexpr ExprKind kKind = ExprKind::Call;
  Call(SourceLoc l, ExprPtr f, std::vector<ExprPtr> a, std::vector<Keyword> k)
      : Expr(kKind, l), func(std::move(f)), args(std::move(a)), keywords(std::move(k)) {
    above(func);
    above(args, std::max(1, static_cast<int>(args.size())));
    for (const Keyword& keyword : keywords) above(keyword.value);
  }
  ExprPtr func;
  std::vector<ExprPtr> args;
  std::vector<Keyword> keywords;
};

struct Attribute : Expr {
  static constexpr ExprKind kKind = ExprKind::Attribute;
  Attribute(SourceLoc l, ExprPtr v, std::string a) : Expr(kKind, l), value(std::move(v)), attr(std::move(a)) {
    above(value);
  }
  ExprPtr value;
  std::string attr;
};

// `a[i, j]`: index is a Tuple of {i, j}; `a[i]`: index is i; slices appear as
// Slice nodes inside the index.
struct Subscript : Expr {
  static constexpr ExprKind kKind = ExprKind::Subscript;
  Subscript(SourceLoc l, ExprPtr v, ExprPtr i) : Expr(kKind, l), value(std::move(v)), index(std::move(i)) {
    above(value);
    above(index);
  }
  ExprPtr value;
  ExprPtr index;
};

// `lower:upper:step`, any part may be null. Only valid inside a subscript.
struct Slice : Expr {
  static constexpr ExprKind kKind = ExprKind::Slice;
  Slice(SourceLoc l, ExprPtr lo, ExprPtr hi, ExprPtr st)
      : Expr(kKind, l), lower(std::move(lo)), upper(std::move(hi)), step(std::move(st)) {
    above(lower);
    above(upper);
    above(step);
  }
  ExprPtr lower, upper, step;
};

struct Tuple : Expr {
  static constexpr ExprKind kKind = ExprKind::Tuple;
  Tuple(SourceLoc l, std::vector<ExprPtr> e) : Expr(kKind, l), elts(std::move(e)) { above(elts); }
  std::vector<ExprPtr> elts;
};

// One `for target in iter if c1 if c2` clause of a list comprehension.
struct Comprehension {
  ExprPtr target, iter;
  std::vector<ExprPtr> ifs;
};

struct List : Expr {
  static constexpr ExprKind kKind = ExprKind::List;
  List(SourceLoc l, std::vector<ExprPtr> e) : Expr(kKind, l), elts(std::move(e)) { above(elts); }
  std::vector<ExprPtr> elts;
  // A comprehension `[elts[0] for ...]`: its clauses. Only the parser sees
  // one: it rewrites `L = [e for ...]` into a loop of appends
  // (parser_statements.cpp) and refuses comprehensions anywhere else.
  std::vector<Comprehension> generators;
};

// `body if test else orelse`
struct IfExp : Expr {
  static constexpr ExprKind kKind = ExprKind::IfExp;
  IfExp(SourceLoc l, ExprPtr t, ExprPtr b, ExprPtr o)
      : Expr(kKind, l), test(std::move(t)), body(std::move(b)), orelse(std::move(o)) {
    above(test);
    above(body);
    above(orelse);
  }
  ExprPtr test, body, orelse;
};

// ---------------------------------------------------------------- statements

enum class StmtKind { Assign, AugAssign, ExprStmt, If, For, While, Break, Continue, Pass, Return };

struct Stmt {
  Stmt(StmtKind k, SourceLoc l) : kind(k), loc(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  SourceLoc loc;                 // span of the whole statement's first line
  std::vector<Pragma> pragmas;   // `#pragma` lines directly above, in order

  template <typename T> const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

// `a = b = value`: targets {a, b}. Targets are Name, Subscript, Tuple or List.
struct Assign : Stmt {
  static constexpr StmtKind kKind = StmtKind::Assign;
  Assign(SourceLoc l, std::vector<ExprPtr> t, ExprPtr v) : Stmt(kKind, l), targets(std::move(t)), value(std::move(v)) {}
  std::vector<ExprPtr> targets;
  ExprPtr value;
};

struct AugAssign : Stmt {
  static constexpr StmtKind kKind = StmtKind::AugAssign;
  AugAssign(SourceLoc l, ExprPtr t, BinOpKind o, ExprPtr v)
      : Stmt(kKind, l), target(std::move(t)), op(o), value(std::move(v)) {}
  ExprPtr target;
  BinOpKind op;
  ExprPtr value;
};

struct ExprStmt : Stmt {
  static constexpr StmtKind kKind = StmtKind::ExprStmt;
  ExprStmt(SourceLoc l, ExprPtr v) : Stmt(kKind, l), value(std::move(v)) {}
  ExprPtr value;
};

// `elif` is an If nested as the only statement of orelse.
struct If : Stmt {
  static constexpr StmtKind kKind = StmtKind::If;
  If(SourceLoc l, ExprPtr t, StmtList b, StmtList o)
      : Stmt(kKind, l), test(std::move(t)), body(std::move(b)), orelse(std::move(o)) {}
  ExprPtr test;
  StmtList body, orelse;
};

struct For : Stmt {
  static constexpr StmtKind kKind = StmtKind::For;
  For(SourceLoc l, ExprPtr t, ExprPtr i, StmtList b, StmtList o)
      : Stmt(kKind, l), target(std::move(t)), iter(std::move(i)), body(std::move(b)), orelse(std::move(o)) {}
  ExprPtr target, iter;
  StmtList body, orelse;
};

struct While : Stmt {
  static constexpr StmtKind kKind = StmtKind::While;
  While(SourceLoc l, ExprPtr t, StmtList b, StmtList o)
      : Stmt(kKind, l), test(std::move(t)), body(std::move(b)), orelse(std::move(o)) {}
  ExprPtr test;
  StmtList body, orelse;
};

struct Break : Stmt {
  static constexpr StmtKind kKind = StmtKind::Break;
  explicit Break(SourceLoc l) : Stmt(kKind, l) {}
};
struct Continue : Stmt {
  static constexpr StmtKind kKind = StmtKind::Continue;
  explicit Continue(SourceLoc l) : Stmt(kKind, l) {}
};
struct Pass : Stmt {
  static constexpr StmtKind kKind = StmtKind::Pass;
  explicit Pass(SourceLoc l) : Stmt(kKind, l) {}
};

struct Return : Stmt {
  static constexpr StmtKind kKind = StmtKind::Return;
  Return(SourceLoc l, ExprPtr v) : Stmt(kKind, l), value(std::move(v)) {}
  ExprPtr value;  // null for a bare `return`
};

// ---------------------------------------------------------------- function

struct Param {
  std::string name;
  ExprPtr default_value;  // null when none
  SourceLoc loc;
};

struct FunctionDef {
  std::string name;
  std::vector<Param> params;
  StmtList body;             // a leading docstring is dropped by the parser
  SourceLoc loc;             // the `def name(...)` line
  // Names of bare annotations (`x: int`, a Pass in `body`): local to the
  // function though nothing may assign them.
  std::vector<std::string> annotated_names;
};

// A parsed module: the functions it defines, in order.
struct Module {
  std::vector<FunctionDef> functions;
};

// Adds to `out` the names `body` assigns (targets of assignments and for
// loops, nested blocks included): Python makes them local to the function.
void collect_assigned_names(const StmtList& body, std::set<std::string>& out);
// Adds the names an assignment or loop target binds (`a`, `a, (b, c)`).
void collect_target_names(const Expr& target, std::set<std::string>& out);

// Deep copies in which every Name's id, and every word of a pragma clause's
// arguments, is replaced by name(id), and a Name for which replace(id)
// gives an expression by a copy of that expression (frontend/inline_calls.cpp
// copies a callee's body with its locals renamed and some parameters
// replaced by the arguments passed).
using Rename = std::function<std::string(const std::string&)>;
struct Renaming {
  Rename name;
  std::function<const Expr*(const std::string&)> replace;  // may be empty; null: no replacement
};
ExprPtr clone(const Expr& e, const Renaming& rename);
StmtPtr clone(const Stmt& s, const Renaming& rename);
StmtList clone(const StmtList& body, const Renaming& rename);

}  // namespace plait::ast
