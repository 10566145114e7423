// Spellings of the AST's operators, for messages and printers.
#include "frontend/ast.h"

namespace plait::ast {

const char* binop_symbol(BinOpKind op) {
  switch (op) {
    case BinOpKind::Add:
      return "+";
    case BinOpKind::Sub:
      return "-";
    case BinOpKind::Mult:
      return "*";
    case BinOpKind::Div:
      return "/";
    case BinOpKind::FloorDiv:
      return "//";
    case BinOpKind::Mod:
      return "%";
    case BinOpKind::Pow:
      return "**";
    case BinOpKind::LShift:
      return "<<";
    case BinOpKind::RShift:
      return ">>";
    case BinOpKind::BitOr:
      return "|";
    case BinOpKind::BitXor:
      return "^";
    case BinOpKind::BitAnd:
      return "&";
    case BinOpKind::MatMult:
      return "@";
  }
  PLAIT_INTERNAL_ERROR("unknown binary operator");
}

const char* cmpop_symbol(CmpOpKind op) {
  switch (op) {
    case CmpOpKind::Eq:
      return "==";
    case CmpOpKind::NotEq:
      return "!=";
    case CmpOpKind::Lt:
      return "<";
    case CmpOpKind::LtE:
      return "<=";
    case CmpOpKind::Gt:
      return ">";
    case CmpOpKind::GtE:
      return ">=";
    case CmpOpKind::Is:
      return "is";
    case CmpOpKind::IsNot:
      return "is not";
    case CmpOpKind::In:
      return "in";
    case CmpOpKind::NotIn:
      return "not in";
  }
  PLAIT_INTERNAL_ERROR("unknown comparison operator");
}

}  // namespace plait::ast
