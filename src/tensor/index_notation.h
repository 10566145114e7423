// The tensor-algebra level's program: index-notation statements over tensors
// with level formats (format.h), one statement per operator of the user's
// expression, results of earlier statements as compiler temporaries. The
// front end builds a Program from SciPy/NumPy operators
// (frontend/lower_sparse.cpp); fusion.h rewrites and groups its statements;
// lower_to_loops.h turns them into the loop IR both back ends compile.
//
//   t1(i,j) = S(i,j) * sum_k(B(i,k) * C(k,j))      S.multiply(B @ C)
//
// A statement assigns its output at every coordinate of `vars` (a dense
// output), or at the stored positions of its pattern (a sparse output); a
// variable of the right-hand side not among `vars` is bound by a Reduce.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "tensor/format.h"

namespace plait::tensor {

struct IndexVar {
  int id = -1;  // -1: no variable (an access of a broadcast dimension reads coordinate 0)
  std::string name;
  bool valid() const { return id >= 0; }
  bool operator==(const IndexVar& o) const { return id == o.id; }
  bool operator!=(const IndexVar& o) const { return id != o.id; }
  bool operator<(const IndexVar& o) const { return id < o.id; }
};

// A tensor of a program: an operand (storage given by the front end) or the
// result of a statement (storage made when it is lowered, or never when
// fusion removes it).
struct TensorVar {
  std::string name;  // the user's name, or a temporary's ("t1")
  ScalarType type;   // element type (strong)
  Format format;
  std::vector<ir::Expr> shape;  // int extents, one per dimension
  // Storage in the loop IR: a dense tensor's array (rank dimensions), or a
  // sparse tensor's 1-D values with per level the pos and crd arrays (null
  // for dense levels). A sparse result shares its pattern's pos and crd:
  // two tensors with the same crd arrays have the same stored positions.
  ir::ArrayVar values;
  std::vector<ir::ArrayVar> pos, crd;
  ir::Expr nnz;  // a sparse tensor's number of stored values
  // For cost formulas: each extent's name ("X.shape[1]") and, for a sparse
  // tensor, the operand whose pattern it has ("S": its count is "S.nnz").
  std::vector<std::string> dims;
  std::string pattern;
  ir::Expr scalar;  // a rank-0 operand: its value
  // A sparse result whose pattern its statement makes (pos and crd its own,
  // merged from its operands': loop_order.h, assembles()).
  bool assembled = false;
  int rank() const { return static_cast<int>(shape.size()); }
  // Extent d's name in cost formulas: dims[d], else "t.shape[d]".
  std::string dim_name(size_t d) const {
    return d < dims.size() ? dims[d] : name + ".shape[" + std::to_string(d) + "]";
  }
  bool is_sparse() const { return !format.is_dense(); }
  bool same_pattern(const TensorVar& o) const { return is_sparse() && crd == o.crd && format == o.format; }
};
using TensorVarPtr = std::shared_ptr<TensorVar>;

// What the level tells explain(): a source position and a sentence each.
using Remarks = std::vector<std::pair<SourceLoc, std::string>>;

enum class ExprKind : uint8_t { Access, Literal, Cast, Unary, Binary, Call, Reduce };

struct IndexExprNode;
using IndexExpr = std::shared_ptr<const IndexExprNode>;

struct IndexExprNode {
  ExprKind kind = ExprKind::Literal;
  ScalarType type;
  TensorVarPtr tensor;         // Access
  std::vector<IndexVar> vars;  // Access: one per dimension of the tensor
  // Access of a dense tensor: per dimension, null or a bool the coordinate
  // is 0 when true (NumPy's broadcasting of an extent 1 known at run time).
  std::vector<ir::Expr> broadcast;
  ir::Expr literal;  // Literal: a scalar the statement's loops do not change
  ir::UnaryOp unary = ir::UnaryOp::Neg;
  ir::BinaryOp binary = ir::BinaryOp::Add;  // Add, Sub, Mul, Div, Max or Min
  ir::Intrinsic fn = ir::Intrinsic::Exp;    // Call, of `a`
  ir::ReduceOp reduce = ir::ReduceOp::Add;  // Reduce: `a` combined over `var`
  IndexVar var;
  IndexExpr a, b;
};

IndexExpr access(const TensorVarPtr& t, std::vector<IndexVar> vars);
IndexExpr literal(ir::Expr value);
IndexExpr cast(IndexExpr a, ScalarType t);
IndexExpr unary(ir::UnaryOp op, IndexExpr a);
// `type` is the result type; the operands are cast to it where they differ.
IndexExpr binary(ir::BinaryOp op, IndexExpr a, IndexExpr b, ScalarType type);
IndexExpr call(ir::Intrinsic fn, IndexExpr a, ScalarType type);
IndexExpr reduce(ir::ReduceOp op, IndexVar var, IndexExpr a);

struct Statement {
  TensorVarPtr out;
  std::vector<IndexVar> vars;  // one per dimension of out
  IndexExpr rhs;
  SourceLoc loc;  // the operator's position in the user's code
};
using StatementPtr = std::shared_ptr<const Statement>;

// Statements in the order they run; `result` is what the program computes.
struct Program {
  std::vector<StatementPtr> stmts;
  TensorVarPtr result;
};
using ProgramPtr = std::shared_ptr<const Program>;

// The statements of a and then those of b that a does not have (a program
// reading the result of another holds that one's statements first).
std::vector<StatementPtr> merge_statements(const std::vector<StatementPtr>& a, const std::vector<StatementPtr>& b);

// Whether e reads v (as an index of an access or a reduction's variable).
bool mentions(const IndexExpr& e, const IndexVar& v);
// Whether e reads tensor t.
bool reads(const IndexExpr& e, const TensorVar* t);
// The accesses of e, outermost first.
std::vector<const IndexExprNode*> accesses(const IndexExpr& e);
// e with operands a and b (e itself when they are its own).
IndexExpr with_operands(const IndexExpr& e, IndexExpr a, IndexExpr b);
// The factors of a product (binary() casts every operand to the product's
// type, so a product's factors share its type); e alone when it is not one.
std::vector<IndexExpr> factors(const IndexExpr& e);
// e with every access of t replaced by `with(access)`.
IndexExpr replace_access(const IndexExpr& e, const TensorVar* t,
                         const std::function<IndexExpr(const IndexExprNode&)>& with);
// e with index variable `from` renamed to `to`.
IndexExpr rename(const IndexExpr& e, const IndexVar& from, const IndexVar& to);

// "sum_k(B(i,k) * C(k,j))".
std::string to_string(const IndexExpr& e);
// "t1(i,j) = S(i,j) * sum_k(B(i,k) * C(k,j))", the variables named by
// display_names.
std::string to_string(const Statement& s);
// Names of a statement's variables for printing: the output's i, j, ..., then
// the rest in order of appearance.
std::map<int, std::string> display_names(const Statement& s);

}  // namespace plait::tensor
