#include "transforms/split_variable_webs.h"

#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

using ir::Expr;
using ir::NodeKind;
using ir::Stmt;

// The assignments that may reach a point, per variable (numbers from
// Webs::def_of and Webs::entry). A variable not in `defs` holds its value on
// entry to the function there.
struct Reaching {
  bool live = true;  // false: no path reaches the point
  ir::VarMap<std::set<int>> defs;
};

// The variables the pass leaves whole (see the header).
class Untouchable : public ir::IRVisitor {
 public:
  ir::VarSet vars;
  using IRVisitor::visit;

 private:
  void visit(const ir::For* n) override {
    vars.insert(n->var.get());
    for (const ir::Reduction& r : n->schedule.reductions) vars.insert(r.var.get());
    for (const ir::Var& v : n->schedule.privates) vars.insert(v.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::Declare* n) override {
    if (n->var) vars.insert(n->var.get());
  }
  void visit(const ir::MatMul* n) override {
    if (n->triangle.row) vars.insert(n->triangle.row.get());
    IRVisitor::visit(n);
  }
};

// Numbers each assignment of a split variable, in program order.
class NumberAssignments : public ir::IRVisitor {
 public:
  explicit NumberAssignments(const ir::VarSet& skip) : skip_(skip) {}
  std::map<const ir::StmtNode*, int> def_of;
  std::vector<ir::Var> def_var;  // by number
  using IRVisitor::visit;

 private:
  void visit(const ir::Assign* n) override {
    IRVisitor::visit(n);
    if (n->var->is_param || skip_.count(n->var.get()) || def_of.count(n)) return;
    def_of[n] = static_cast<int>(def_var.size());
    def_var.push_back(n->var);
  }
  const ir::VarSet& skip_;
};

// The variable reads in a node, its children's included.
template <typename Node>
std::vector<const ir::VarRef*> refs_in(const Node& node) {
  struct Reads : ir::IRVisitor {
    std::vector<const ir::VarRef*> refs;
    using IRVisitor::visit;
    void visit(const ir::VarRef* r) override { refs.push_back(r); }
  } reads;
  reads.visit(node);
  return reads.refs;
}

class Webs {
 public:
  Webs(ir::VarSet skip, NumberAssignments numbered)
      : skip_(std::move(skip)), def_of_(std::move(numbered.def_of)), def_var_(std::move(numbered.def_var)) {
    parent_.resize(def_var_.size());
    std::iota(parent_.begin(), parent_.end(), 0);
  }

  void walk(const Stmt& s, Reaching& st);
  // The variable of each web: the original for the web of the value on
  // entry, or else for the first web in program order; a new one otherwise.
  void choose_variables();
  ir::Var variable_of_def(const ir::StmtNode* assign) const;
  ir::Var variable_of_read(const ir::ExprNode* ref) const;

 private:
  struct Loop {
    Reaching breaks{false, {}};
    Reaching continues{false, {}};
  };

  bool split(const ir::VarInfo* v) const { return !v->is_param && !skip_.count(v); }
  int entry(const ir::Var& v);
  std::set<int> reaching(const Reaching& st, const ir::Var& v);
  Reaching join(const Reaching& a, const Reaching& b);
  bool same(const Reaching& a, const Reaching& b);
  void read(const Expr& e, const Reaching& st);
  void read_refs(const std::vector<const ir::VarRef*>& refs, const Reaching& st);
  void loop(const Stmt& body, const Expr& cond, Reaching& st);
  int find(int d) {
    while (parent_[d] != d) d = parent_[d] = parent_[parent_[d]];
    return d;
  }
  void unite(int a, int b) { parent_[find(a)] = find(b); }

  ir::VarSet skip_;
  std::map<const ir::StmtNode*, int> def_of_;
  std::vector<ir::Var> def_var_;  // by def number (assignments, then entries)
  std::vector<int> parent_;       // union-find over def numbers
  ir::VarMap<int> entry_;
  std::vector<Loop> loops_;
  std::map<const ir::ExprNode*, int> read_def_;  // a VarRef read: a def of its web
  std::map<int, ir::Var> web_var_;               // root -> variable
};

int Webs::entry(const ir::Var& v) {
  auto it = entry_.find(v.get());
  if (it != entry_.end()) return it->second;
  const int d = static_cast<int>(def_var_.size());
  def_var_.push_back(v);
  parent_.push_back(d);
  entry_[v.get()] = d;
  return d;
}

std::set<int> Webs::reaching(const Reaching& st, const ir::Var& v) {
  auto it = st.defs.find(v.get());
  if (it != st.defs.end()) return it->second;
  return {entry(v)};
}

Reaching Webs::join(const Reaching& a, const Reaching& b) {
  if (!a.live) return b;
  if (!b.live) return a;
  Reaching out;
  // A variable either side has assigned: its sets' union (the other side's
  // value on entry when that side has not assigned it).
  std::map<const ir::VarInfo*, ir::Var, ir::InfoOrder> vars;
  for (const auto* side : {&a, &b})
    for (const auto& [v, defs] : side->defs) vars.emplace(v, def_var_[static_cast<size_t>(*defs.begin())]);
  for (const auto& [key, v] : vars) {
    std::set<int> d = reaching(a, v);
    for (int x : reaching(b, v)) d.insert(x);
    out.defs[key] = std::move(d);
  }
  return out;
}

bool Webs::same(const Reaching& a, const Reaching& b) {
  if (a.live != b.live) return false;
  for (const auto* side : {&a, &b})
    for (const auto& [v, defs] : side->defs) {
      const ir::Var var = def_var_[static_cast<size_t>(*defs.begin())];
      if (reaching(a, var) != reaching(b, var)) return false;
    }
  return true;
}

void Webs::read(const Expr& e, const Reaching& st) {
  if (e) read_refs(refs_in(e), st);
}

void Webs::read_refs(const std::vector<const ir::VarRef*>& refs, const Reaching& st) {
  if (!st.live) return;
  for (const ir::VarRef* r : refs) {
    if (!split(r->var.get())) continue;
    const std::set<int> defs = reaching(st, r->var);
    const int first = *defs.begin();
    for (int d : defs) unite(d, first);
    // One node read in two places (a shared subexpression) is one web.
    auto [it, fresh] = read_def_.emplace(r, first);
    if (!fresh) unite(it->second, first);
  }
}

void Webs::loop(const Stmt& body, const Expr& cond, Reaching& st) {
  Reaching head = st;
  for (;;) {
    read(cond, head);
    loops_.emplace_back();
    Reaching end = head;
    walk(body, end);
    Loop exits = std::move(loops_.back());
    loops_.pop_back();
    Reaching next = join(join(st, end), exits.continues);
    if (same(next, head)) {
      st = join(head, exits.breaks);
      return;
    }
    head = std::move(next);
  }
}

void Webs::walk(const Stmt& s, Reaching& st) {
  if (!s) return;
  switch (s->kind) {
    case NodeKind::Block:
      for (const Stmt& x : s->as<ir::Block>()->stmts) walk(x, st);
      return;
    case NodeKind::Assign: {
      auto a = s->as<ir::Assign>();
      read(a->value, st);
      if (!st.live || !split(a->var.get())) return;
      const int def = def_of_.at(a);
      // An update (`m = max(m, x)`, `s = s + x`) continues the value it
      // reads: one web, so that reductions keep one variable.
      if (analysis::reads_var(a->value, a->var.get()))
        for (int d : reaching(st, a->var)) unite(d, def);
      st.defs[a->var.get()] = {def};
      return;
    }
    case NodeKind::If: {
      auto i = s->as<ir::If>();
      read(i->cond, st);
      Reaching other = st;
      walk(i->then_case, st);
      walk(i->else_case, other);
      st = join(st, other);
      return;
    }
    case NodeKind::For: {
      auto f = s->as<ir::For>();
      for (const Expr& e : {f->begin, f->end, f->step}) read(e, st);
      loop(f->body, nullptr, st);
      return;
    }
    case NodeKind::While: {
      auto w = s->as<ir::While>();
      loop(w->body, w->cond, st);
      return;
    }
    case NodeKind::Break:
      if (!loops_.empty()) loops_.back().breaks = join(loops_.back().breaks, st);
      st.live = false;
      return;
    case NodeKind::Continue:
      if (!loops_.empty()) loops_.back().continues = join(loops_.back().continues, st);
      st.live = false;
      return;
    case NodeKind::Return:
      for (const ir::ReturnValue& v : s->as<ir::Return>()->values) read(v.scalar, st);
      st.live = false;
      return;
    case NodeKind::Assert:
      // A failed check leaves the loop's iteration (the error is raised
      // when the kernel ends): a path to the next one.
      read(s->as<ir::Assert>()->cond, st);
      if (!loops_.empty()) loops_.back().continues = join(loops_.back().continues, st);
      return;
    case NodeKind::MatMul: {
      // The library's call or, when it declines, the loops.
      auto m = s->as<ir::MatMul>();
      for (const Expr& e :
           {m->m, m->n, m->k, m->alpha, m->beta, m->triangle.alpha2, m->triangle.row_condition, m->triangle.vector_row})
        read(e, st);
      Reaching loops = st;
      walk(m->loops, loops);
      st = join(st, loops);
      return;
    }
    default:
      // Statements without statements inside: every variable they mention.
      read_refs(refs_in(s), st);
      return;
  }
}

void Webs::choose_variables() {
  // The value on entry is read where a read's web holds it.
  std::set<int> read_roots;
  for (const auto& [ref, d] : read_def_) read_roots.insert(find(d));
  std::set<const ir::VarInfo*> kept;
  for (const auto& [v, d] : entry_) {
    if (!read_roots.count(find(d))) continue;
    web_var_[find(d)] = def_var_[static_cast<size_t>(d)];
    kept.insert(v);
  }
  // Assignments are numbered in program order.
  for (int d = 0; d < static_cast<int>(def_of_.size()); ++d) {
    const int root = find(d);
    if (web_var_.count(root)) continue;
    const ir::Var& v = def_var_[static_cast<size_t>(d)];
    web_var_[root] = kept.insert(v.get()).second ? v : std::make_shared<ir::VarInfo>(*v);
  }
}

ir::Var Webs::variable_of_def(const ir::StmtNode* assign) const {
  auto it = def_of_.find(assign);
  if (it == def_of_.end()) return nullptr;
  int d = it->second;
  while (parent_[d] != d) d = parent_[d];
  return web_var_.at(d);
}

ir::Var Webs::variable_of_read(const ir::ExprNode* ref) const {
  auto it = read_def_.find(ref);
  if (it == read_def_.end()) return nullptr;
  int d = it->second;
  while (parent_[d] != d) d = parent_[d];
  auto v = web_var_.find(d);
  return v == web_var_.end() ? nullptr : v->second;
}

class Rename : public ir::IRMutator {
 public:
  explicit Rename(const Webs& webs) : webs_(webs) {}
  using IRMutator::mutate;

 private:
  Expr visit(const ir::VarRef* n, const Expr& self) override {
    ir::Var v = webs_.variable_of_read(n);
    return !v || v == n->var ? self : ir::VarRef::make(v, n->loc);
  }
  Stmt visit(const ir::Assign* n, const Stmt& self) override {
    Expr value = mutate(n->value);
    ir::Var v = webs_.variable_of_def(n);
    if (!v) v = n->var;
    if (value == n->value && v == n->var) return self;
    return ir::Assign::make(v, value, n->loc);
  }
  const Webs& webs_;
};

}  // namespace

void split_variable_webs(ir::Function& function) {
  Untouchable untouchable;
  untouchable.visit(function.body);
  NumberAssignments numbered(untouchable.vars);
  numbered.visit(function.body);
  if (numbered.def_var.empty()) return;
  Webs webs(untouchable.vars, std::move(numbered));
  Reaching st;
  webs.walk(function.body, st);
  webs.choose_variables();
  Rename rename(webs);
  function.body = rename.mutate(function.body);
}

}  // namespace plait::transforms
