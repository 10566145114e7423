// Spellings of the AST's operators, for messages and printers; the names a
// body assigns; deep copies with renaming.
#include "frontend/ast.h"

#include <cctype>

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

void collect_target_names(const Expr& t, std::set<std::string>& out) {
  if (auto n = t.as<Name>()) out.insert(n->id);
  if (auto tu = t.as<Tuple>())
    for (auto& e : tu->elts) collect_target_names(*e, out);
  if (auto l = t.as<List>())
    for (auto& e : l->elts) collect_target_names(*e, out);
}

void collect_assigned_names(const StmtList& body, std::set<std::string>& out) {
  auto target = [&](const Expr* t) { collect_target_names(*t, out); };
  for (const auto& s : body) {
    if (auto a = s->as<Assign>())
      for (auto& t : a->targets) target(t.get());
    if (auto a = s->as<AugAssign>()) target(a->target.get());
    if (auto f = s->as<For>()) {
      target(f->target.get());
      collect_assigned_names(f->body, out);
      collect_assigned_names(f->orelse, out);
    }
    if (auto w = s->as<While>()) {
      collect_assigned_names(w->body, out);
      collect_assigned_names(w->orelse, out);
    }
    if (auto i = s->as<If>()) {
      collect_assigned_names(i->body, out);
      collect_assigned_names(i->orelse, out);
    }
  }
}

namespace {

ExprPtr clone_or_null(const ExprPtr& e, const Renaming& rename) {
  return e ? clone(*e, rename) : nullptr;
}

std::vector<ExprPtr> clone_all(const std::vector<ExprPtr>& exprs, const Renaming& rename) {
  std::vector<ExprPtr> out;
  out.reserve(exprs.size());
  for (const ExprPtr& e : exprs) out.push_back(clone(*e, rename));
  return out;
}

// `text` with each identifier (a run of letters, digits and '_' not starting
// with a digit) replaced by rename(identifier).
std::string rename_words(const std::string& text, const Renaming& rename) {
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (!word_char(text[i])) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && word_char(text[end])) ++end;
    const std::string word = text.substr(i, end - i);
    out += std::isdigit(static_cast<unsigned char>(word[0])) ? word : rename.name(word);
    i = end;
  }
  return out;
}

template <typename T>
std::unique_ptr<T> with_pragmas(std::unique_ptr<T> copy, const Stmt& s, const Renaming& rename) {
  copy->pragmas = s.pragmas;
  for (Pragma& pragma : copy->pragmas)
    for (PragmaClause& clause : pragma.clauses)
      for (std::string& arg : clause.args) arg = rename_words(arg, rename);
  return copy;
}

}  // namespace

ExprPtr clone(const Expr& e, const Renaming& rename) {
  switch (e.kind) {
    case ExprKind::Name: {
      const std::string& id = e.as<Name>()->id;
      if (const Expr* replacement = rename.replace ? rename.replace(id) : nullptr)
        return clone(*replacement, Renaming{[](const std::string& same) { return same; }, nullptr});
      return std::make_unique<Name>(e.loc, rename.name(id));
    }
    case ExprKind::Constant:
      return std::make_unique<Constant>(e.loc, e.as<Constant>()->value);
    case ExprKind::BinOp: {
      const auto* b = e.as<BinOp>();
      return std::make_unique<BinOp>(e.loc, b->op, clone(*b->left, rename), clone(*b->right, rename));
    }
    case ExprKind::UnaryOp: {
      const auto* u = e.as<UnaryOp>();
      return std::make_unique<UnaryOp>(e.loc, u->op, clone(*u->operand, rename));
    }
    case ExprKind::BoolOp: {
      const auto* b = e.as<BoolOp>();
      return std::make_unique<BoolOp>(e.loc, b->op, clone_all(b->values, rename));
    }
    case ExprKind::Compare: {
      const auto* c = e.as<Compare>();
      return std::make_unique<Compare>(e.loc, clone(*c->left, rename), c->ops, clone_all(c->comparators, rename));
    }
    case ExprKind::Call: {
      const auto* c = e.as<Call>();
      std::vector<Keyword> keywords;
      for (const Keyword& k : c->keywords) keywords.push_back({k.name, clone(*k.value, rename), k.loc});
      return std::make_unique<Call>(e.loc, clone(*c->func, rename), clone_all(c->args, rename), std::move(keywords));
    }
    case ExprKind::Attribute: {
      const auto* a = e.as<Attribute>();
      return std::make_unique<Attribute>(e.loc, clone(*a->value, rename), a->attr);
    }
    case ExprKind::Subscript: {
      const auto* s = e.as<Subscript>();
      return std::make_unique<Subscript>(e.loc, clone(*s->value, rename), clone(*s->index, rename));
    }
    case ExprKind::Slice: {
      const auto* s = e.as<Slice>();
      return std::make_unique<Slice>(e.loc, clone_or_null(s->lower, rename), clone_or_null(s->upper, rename),
                                     clone_or_null(s->step, rename));
    }
    case ExprKind::Tuple:
      return std::make_unique<Tuple>(e.loc, clone_all(e.as<Tuple>()->elts, rename));
    case ExprKind::List:
      return std::make_unique<List>(e.loc, clone_all(e.as<List>()->elts, rename));
    case ExprKind::IfExp: {
      const auto* i = e.as<IfExp>();
      return std::make_unique<IfExp>(e.loc, clone(*i->test, rename), clone(*i->body, rename),
                                     clone(*i->orelse, rename));
    }
  }
  PLAIT_INTERNAL_ERROR("unknown expression kind");
}

StmtPtr clone(const Stmt& s, const Renaming& rename) {
  switch (s.kind) {
    case StmtKind::Assign: {
      const auto* a = s.as<Assign>();
      return with_pragmas(std::make_unique<Assign>(s.loc, clone_all(a->targets, rename), clone(*a->value, rename)), s,
                          rename);
    }
    case StmtKind::AugAssign: {
      const auto* a = s.as<AugAssign>();
      return with_pragmas(
          std::make_unique<AugAssign>(s.loc, clone(*a->target, rename), a->op, clone(*a->value, rename)), s, rename);
    }
    case StmtKind::ExprStmt:
      return with_pragmas(std::make_unique<ExprStmt>(s.loc, clone(*s.as<ExprStmt>()->value, rename)), s, rename);
    case StmtKind::If: {
      const auto* i = s.as<If>();
      return with_pragmas(
          std::make_unique<If>(s.loc, clone(*i->test, rename), clone(i->body, rename), clone(i->orelse, rename)), s,
          rename);
    }
    case StmtKind::For: {
      const auto* f = s.as<For>();
      return with_pragmas(std::make_unique<For>(s.loc, clone(*f->target, rename), clone(*f->iter, rename),
                                                clone(f->body, rename), clone(f->orelse, rename)),
                          s, rename);
    }
    case StmtKind::While: {
      const auto* w = s.as<While>();
      return with_pragmas(
          std::make_unique<While>(s.loc, clone(*w->test, rename), clone(w->body, rename), clone(w->orelse, rename)), s,
          rename);
    }
    case StmtKind::Break:
      return with_pragmas(std::make_unique<Break>(s.loc), s, rename);
    case StmtKind::Continue:
      return with_pragmas(std::make_unique<Continue>(s.loc), s, rename);
    case StmtKind::Pass:
      return with_pragmas(std::make_unique<Pass>(s.loc), s, rename);
    case StmtKind::Return:
      return with_pragmas(std::make_unique<Return>(s.loc, clone_or_null(s.as<Return>()->value, rename)), s, rename);
  }
  PLAIT_INTERNAL_ERROR("unknown statement kind");
}

StmtList clone(const StmtList& body, const Renaming& rename) {
  StmtList out;
  out.reserve(body.size());
  for (const StmtPtr& s : body) out.push_back(clone(*s, rename));
  return out;
}

}  // namespace plait::ast
