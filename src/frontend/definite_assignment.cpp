// Definite assignment (see definite_assignment.h): a forward data-flow
// analysis over the structured syntax tree. A state holds the locals
// assigned on every path to a point (`must`) and on some path (`may`).
#include "frontend/definite_assignment.h"

#include <algorithm>
#include <iterator>

namespace plait::lowering {

namespace {

struct State {
  bool reachable = true;
  std::set<std::string> must;
  std::set<std::string> may;

  void assign(const std::string& name) {
    must.insert(name);
    may.insert(name);
  }
};

// The state where two paths meet.
State join(const State& a, const State& b) {
  if (!a.reachable) return b;
  if (!b.reachable) return a;
  State s;
  std::set_intersection(a.must.begin(), a.must.end(), b.must.begin(), b.must.end(),
                        std::inserter(s.must, s.must.end()));
  s.may = a.may;
  s.may.insert(b.may.begin(), b.may.end());
  return s;
}

// The states at the `break` and `continue` statements of one loop.
struct LoopExits {
  State breaks{false, {}, {}};
  State continues{false, {}, {}};
};

bool constant_true(const ast::Expr& e) {
  const auto* c = e.as<ast::Constant>();
  if (!c) return false;
  if (const bool* b = std::get_if<bool>(&c->value)) return *b;
  if (const int64_t* i = std::get_if<int64_t>(&c->value)) return *i != 0;
  if (const double* d = std::get_if<double>(&c->value)) return *d != 0;
  return false;
}

class Analysis {
 public:
  explicit Analysis(const std::set<std::string>& locals) : locals_(locals) {}

  void block(const ast::StmtList& body, State& s) {
    for (const auto& st : body) stmt(*st, s);
  }

  Bindings result;

 private:
  void read(const ast::Expr* e, const State& s) {
    if (!e) return;
    switch (e->kind) {
      case ast::ExprKind::Name:
        return name(*e->as<ast::Name>(), s);
      case ast::ExprKind::Constant:
        return;
      case ast::ExprKind::BinOp:
        read(e->as<ast::BinOp>()->left.get(), s);
        return read(e->as<ast::BinOp>()->right.get(), s);
      case ast::ExprKind::UnaryOp:
        return read(e->as<ast::UnaryOp>()->operand.get(), s);
      case ast::ExprKind::BoolOp:
        for (const auto& v : e->as<ast::BoolOp>()->values) read(v.get(), s);
        return;
      case ast::ExprKind::Compare:
        read(e->as<ast::Compare>()->left.get(), s);
        for (const auto& c : e->as<ast::Compare>()->comparators) read(c.get(), s);
        return;
      case ast::ExprKind::Call: {
        const auto* c = e->as<ast::Call>();
        read(c->func.get(), s);
        for (const auto& a : c->args) read(a.get(), s);
        for (const auto& k : c->keywords) read(k.value.get(), s);
        return;
      }
      case ast::ExprKind::Attribute:
        return read(e->as<ast::Attribute>()->value.get(), s);
      case ast::ExprKind::Subscript:
        read(e->as<ast::Subscript>()->value.get(), s);
        return read(e->as<ast::Subscript>()->index.get(), s);
      case ast::ExprKind::Slice:
        read(e->as<ast::Slice>()->lower.get(), s);
        read(e->as<ast::Slice>()->upper.get(), s);
        return read(e->as<ast::Slice>()->step.get(), s);
      case ast::ExprKind::Tuple:
        for (const auto& x : e->as<ast::Tuple>()->elts) read(x.get(), s);
        return;
      case ast::ExprKind::List:
        for (const auto& x : e->as<ast::List>()->elts) read(x.get(), s);
        return;
      case ast::ExprKind::IfExp:
        read(e->as<ast::IfExp>()->test.get(), s);
        read(e->as<ast::IfExp>()->body.get(), s);
        return read(e->as<ast::IfExp>()->orelse.get(), s);
    }
  }

  void name(const ast::Name& n, const State& s) {
    if (!recording_ || !s.reachable || !locals_.count(n.id) || s.must.count(n.id)) return;
    if (s.may.count(n.id)) {
      result.reads[&n] = Binding::MaybeUnbound;
      result.maybe_unbound.insert(n.id);
    } else {
      result.reads[&n] = Binding::Unbound;
      result.unbound.push_back(&n);
    }
  }

  // An assignment target: names are assigned, subscripts read their array
  // and indices. Python assigns the targets of `a, b = ...` left to right.
  void target(const ast::Expr& t, State& s) {
    if (auto n = t.as<ast::Name>()) {
      if (s.reachable) s.assign(n->id);
      return;
    }
    if (auto tu = t.as<ast::Tuple>()) {
      for (const auto& e : tu->elts) target(*e, s);
      return;
    }
    if (auto l = t.as<ast::List>()) {
      for (const auto& e : l->elts) target(*e, s);
      return;
    }
    read(&t, s);
  }

  void stmt(const ast::Stmt& st, State& s) {
    switch (st.kind) {
      case ast::StmtKind::Assign: {
        const auto& a = *st.as<ast::Assign>();
        read(a.value.get(), s);
        for (const auto& t : a.targets) target(*t, s);
        return;
      }
      case ast::StmtKind::AugAssign: {
        const auto& a = *st.as<ast::AugAssign>();
        read(a.target.get(), s);
        read(a.value.get(), s);
        if (auto n = a.target->as<ast::Name>(); n && s.reachable) s.assign(n->id);
        return;
      }
      case ast::StmtKind::ExprStmt:
        return read(st.as<ast::ExprStmt>()->value.get(), s);
      case ast::StmtKind::If: {
        const auto& i = *st.as<ast::If>();
        read(i.test.get(), s);
        State other = s;
        block(i.body, s);
        block(i.orelse, other);
        s = join(s, other);
        return;
      }
      case ast::StmtKind::For: {
        const auto& f = *st.as<ast::For>();
        read(f.iter.get(), s);
        loop(s, nullptr, f.target.get(), f.body, f.orelse);
        return;
      }
      case ast::StmtKind::While: {
        const auto& w = *st.as<ast::While>();
        loop(s, w.test.get(), nullptr, w.body, w.orelse);
        return;
      }
      case ast::StmtKind::Break:
      case ast::StmtKind::Continue:
        if (!loops_.empty()) {
          State& exit = st.kind == ast::StmtKind::Break ? loops_.back()->breaks : loops_.back()->continues;
          exit = join(exit, s);
        }
        s.reachable = false;
        return;
      case ast::StmtKind::Pass:
        return;
      case ast::StmtKind::Return:
        read(st.as<ast::Return>()->value.get(), s);
        s.reachable = false;
        return;
    }
  }

  // One iteration of a loop from `head`, the state where the loop decides
  // whether to run another: the test's reads, the target's assignment, the
  // body. Returns the state at the loop's next decision.
  State iteration(const State& head, const ast::Expr* test, const ast::Expr* for_target, const ast::StmtList& body,
                  LoopExits& exits) {
    read(test, head);
    State s = head;
    if (for_target) target(*for_target, s);
    loops_.push_back(&exits);
    block(body, s);
    loops_.pop_back();
    return join(s, exits.continues);
  }

  // A `for` (for_target set) or `while` (test set) loop. The body sees the
  // state on entry joined with the states at the end of earlier iterations.
  // Its `must` is the entry's (iterations only add assignments), and its
  // `may` is the entry's plus what one iteration may assign, whatever the
  // iteration starts from: so one pass without recording finds the state at
  // the loop's head, and a second pass records the reads.
  void loop(State& s, const ast::Expr* test, const ast::Expr* for_target, const ast::StmtList& body,
            const ast::StmtList& orelse) {
    const bool recording = recording_;
    recording_ = false;
    LoopExits first;
    State head = join(s, iteration(s, test, for_target, body, first));
    recording_ = recording;
    LoopExits exits;
    iteration(head, test, for_target, body, exits);
    // The loop ends when its test is false (never for a constant true test)
    // or its range runs out, then runs its `else`, unless a break ends it.
    State done = head;
    if (test && constant_true(*test)) done.reachable = false;
    block(orelse, done);
    s = join(done, exits.breaks);
  }

  const std::set<std::string>& locals_;
  bool recording_ = true;
  std::vector<LoopExits*> loops_;
};

}  // namespace

Bindings definite_assignment(const ast::StmtList& body, const std::set<std::string>& locals) {
  Analysis analysis(locals);
  State s;
  analysis.block(body, s);
  Bindings out = std::move(analysis.result);
  std::stable_sort(out.unbound.begin(), out.unbound.end(), [](const ast::Name* a, const ast::Name* b) {
    return a->loc.line != b->loc.line ? a->loc.line < b->loc.line : a->loc.col < b->loc.col;
  });
  return out;
}

}  // namespace plait::lowering
