// Walks, fall-through and returns of a callee's body (callee_body.h).
#include "frontend/callee_body.h"

#include <memory>
#include <utility>

namespace plait::inlining {

using ast::ExprPtr;
using ast::StmtList;
using ast::StmtPtr;

namespace {

bool contains_return(const StmtList& body) {
  bool found = false;
  for_each_stmt(body, [&](const ast::Stmt& s) { found = found || s.kind == ast::StmtKind::Return; });
  return found;
}

bool contains_return(const ast::Stmt& s) {
  if (s.kind == ast::StmtKind::Return) return true;
  if (const auto* i = s.as<ast::If>()) return contains_return(i->body) || contains_return(i->orelse);
  if (const auto* l = s.as<ast::For>()) return contains_return(l->body) || contains_return(l->orelse);
  if (const auto* w = s.as<ast::While>()) return contains_return(w->body) || contains_return(w->orelse);
  return false;
}

// Whether a `break` leaves the loop whose body is `body` (not an inner one).
bool breaks_out(const StmtList& body) {
  for (const StmtPtr& s : body) {
    if (s->kind == ast::StmtKind::Break) return true;
    if (const auto* i = s->as<ast::If>(); i && (breaks_out(i->body) || breaks_out(i->orelse))) return true;
  }
  return false;
}

bool is_true(const ast::Expr& e) {
  const auto* c = e.as<ast::Constant>();
  return c && std::holds_alternative<bool>(c->value) && std::get<bool>(c->value);
}

class ReturnRewriter {
 public:
  ReturnRewriter(std::string result, std::string flag) : result_(std::move(result)), flag_(std::move(flag)) {}

  StmtList rewrite(StmtList body, bool in_loop) {
    StmtList out;
    for (size_t i = 0; i < body.size(); ++i) {
      StmtPtr& s = body[i];
      if (const auto* r = s->as<ast::Return>()) {
        if (r->value) out.push_back(assign(r->loc, result_, std::move(static_cast<ast::Return&>(*s).value)));
        if (!flag_.empty()) out.push_back(assign(r->loc, flag_, std::make_unique<ast::Constant>(r->loc, true)));
        if (in_loop) out.push_back(std::make_unique<ast::Break>(r->loc));
        return out;  // what follows a return never runs
      }
      if (!contains_return(*s)) {
        out.push_back(std::move(s));
        continue;
      }
      const SourceLoc loc = s->loc;
      if (s->kind == ast::StmtKind::If) {
        auto& branch = static_cast<ast::If&>(*s);
        if (in_loop) {
          branch.body = rewrite(std::move(branch.body), true);
          branch.orelse = rewrite(std::move(branch.orelse), true);
          out.push_back(std::move(s));
          continue;
        }
        // Outside loops, the statements after the `if` go into both
        // branches, so that a branch that returned skips them.
        StmtList rest;
        for (size_t j = i + 1; j < body.size(); ++j) rest.push_back(std::move(body[j]));
        StmtList copy = ast::clone(rest, ast::Renaming{[](const std::string& id) { return id; }, nullptr});
        for (StmtPtr& r : copy) branch.body.push_back(std::move(r));
        for (StmtPtr& r : rest) branch.orelse.push_back(std::move(r));
        branch.body = rewrite(std::move(branch.body), false);
        branch.orelse = rewrite(std::move(branch.orelse), false);
        out.push_back(std::move(s));
        return out;
      }
      // A loop: its returns break out of it; its else clause is outside it.
      if (auto* l = dynamic_cast<ast::For*>(s.get())) {
        l->body = rewrite(std::move(l->body), true);
        l->orelse = rewrite(std::move(l->orelse), in_loop);
      } else {
        auto& w = static_cast<ast::While&>(*s);
        w.body = rewrite(std::move(w.body), true);
        w.orelse = rewrite(std::move(w.orelse), in_loop);
      }
      out.push_back(std::move(s));
      if (in_loop) {
        out.push_back(
            std::make_unique<ast::If>(loc, name(loc, flag_), only(std::make_unique<ast::Break>(loc)), StmtList{}));
        continue;
      }
      StmtList rest;
      for (size_t j = i + 1; j < body.size(); ++j) rest.push_back(std::move(body[j]));
      auto unless = std::make_unique<ast::UnaryOp>(loc, ast::UnaryOpKind::Not, name(loc, flag_));
      out.push_back(std::make_unique<ast::If>(loc, std::move(unless), rewrite(std::move(rest), false), StmtList{}));
      return out;
    }
    return out;
  }

 private:
  std::string result_, flag_;
};

}  // namespace

void for_each_expr(const ast::Expr& e, const std::function<void(const ast::Expr&)>& f) {
  f(e);
  auto each = [&](const std::vector<ExprPtr>& es) {
    for (const ExprPtr& x : es) for_each_expr(*x, f);
  };
  auto one = [&](const ExprPtr& x) {
    if (x) for_each_expr(*x, f);
  };
  switch (e.kind) {
    case ast::ExprKind::Name:
    case ast::ExprKind::Constant:
      break;
    case ast::ExprKind::BinOp:
      one(e.as<ast::BinOp>()->left);
      one(e.as<ast::BinOp>()->right);
      break;
    case ast::ExprKind::UnaryOp:
      one(e.as<ast::UnaryOp>()->operand);
      break;
    case ast::ExprKind::BoolOp:
      each(e.as<ast::BoolOp>()->values);
      break;
    case ast::ExprKind::Compare:
      one(e.as<ast::Compare>()->left);
      each(e.as<ast::Compare>()->comparators);
      break;
    case ast::ExprKind::Call:
      one(e.as<ast::Call>()->func);
      each(e.as<ast::Call>()->args);
      for (const ast::Keyword& k : e.as<ast::Call>()->keywords) one(k.value);
      break;
    case ast::ExprKind::Attribute:
      one(e.as<ast::Attribute>()->value);
      break;
    case ast::ExprKind::Subscript:
      one(e.as<ast::Subscript>()->value);
      one(e.as<ast::Subscript>()->index);
      break;
    case ast::ExprKind::Slice:
      one(e.as<ast::Slice>()->lower);
      one(e.as<ast::Slice>()->upper);
      one(e.as<ast::Slice>()->step);
      break;
    case ast::ExprKind::Tuple:
      each(e.as<ast::Tuple>()->elts);
      break;
    case ast::ExprKind::List:
      each(e.as<ast::List>()->elts);
      break;
    case ast::ExprKind::IfExp:
      one(e.as<ast::IfExp>()->test);
      one(e.as<ast::IfExp>()->body);
      one(e.as<ast::IfExp>()->orelse);
      break;
  }
}

void for_each_stmt(const StmtList& body, const std::function<void(const ast::Stmt&)>& f) {
  for (const StmtPtr& s : body) {
    f(*s);
    if (const auto* i = s->as<ast::If>()) {
      for_each_stmt(i->body, f);
      for_each_stmt(i->orelse, f);
    } else if (const auto* l = s->as<ast::For>()) {
      for_each_stmt(l->body, f);
      for_each_stmt(l->orelse, f);
    } else if (const auto* w = s->as<ast::While>()) {
      for_each_stmt(w->body, f);
      for_each_stmt(w->orelse, f);
    }
  }
}

std::vector<const ast::Expr*> own_exprs(const ast::Stmt& s) {
  std::vector<const ast::Expr*> out;
  if (const auto* a = s.as<ast::Assign>()) {
    out.push_back(a->value.get());
    for (const ExprPtr& t : a->targets) out.push_back(t.get());
  } else if (const auto* a = s.as<ast::AugAssign>()) {
    out.push_back(a->target.get());
    out.push_back(a->value.get());
  } else if (const auto* e = s.as<ast::ExprStmt>()) {
    out.push_back(e->value.get());
  } else if (const auto* i = s.as<ast::If>()) {
    out.push_back(i->test.get());
  } else if (const auto* l = s.as<ast::For>()) {
    out.push_back(l->target.get());
    out.push_back(l->iter.get());
  } else if (const auto* w = s.as<ast::While>()) {
    out.push_back(w->test.get());
  } else if (const auto* r = s.as<ast::Return>()) {
    if (r->value) out.push_back(r->value.get());
  }
  return out;
}

bool may_fall_through(const StmtList& body) {
  for (const StmtPtr& s : body) {
    if (s->kind == ast::StmtKind::Return) return false;
    if (const auto* i = s->as<ast::If>(); i && !may_fall_through(i->body) && !may_fall_through(i->orelse)) return false;
    if (const auto* w = s->as<ast::While>(); w && is_true(*w->test) && !breaks_out(w->body)) return false;
    if (const auto* w = s->as<ast::While>(); w && !breaks_out(w->body) && !may_fall_through(w->orelse)) return false;
    if (const auto* l = s->as<ast::For>(); l && !breaks_out(l->body) && !may_fall_through(l->orelse)) return false;
  }
  return true;
}

StmtList rewrite_returns(StmtList body, const std::string& result, const std::string& flag) {
  return ReturnRewriter(result, flag).rewrite(std::move(body), false);
}

ExprPtr name(SourceLoc loc, const std::string& id) {
  return std::make_unique<ast::Name>(loc, id);
}

StmtPtr assign(SourceLoc loc, const std::string& target, ExprPtr value) {
  std::vector<ExprPtr> targets;
  targets.push_back(name(loc, target));
  return std::make_unique<ast::Assign>(loc, std::move(targets), std::move(value));
}

StmtList only(StmtPtr s) {
  StmtList out;
  out.push_back(std::move(s));
  return out;
}

}  // namespace plait::inlining
