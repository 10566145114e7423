// Read/write sets and upward exposure of variables, for declaration placement
// and the race checks of parallel loops.
#include "analysis/var_uses.h"

#include "ir/ir_visitor.h"

namespace plait::analysis {

namespace {

// `e` without the integer-to-integer casts around it.
const ir::ExprNode* without_int_casts(const ir::Expr& e) {
  const ir::ExprNode* node = e.get();
  while (const ir::Cast* c = node->as<ir::Cast>()) {
    if (!c->type.is_int() || !c->value->type.is_int()) break;
    node = c->value.get();
  }
  return node;
}

class UseCollector : public ir::IRVisitor {
 public:
  VarUses uses;
  using IRVisitor::visit;

 protected:
  void visit(const ir::VarRef* n) override { uses.reads.insert(n->var.get()); }
  void visit(const ir::Load* n) override {
    uses.arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::ArrayDim* n) override { uses.arrays.insert(n->array.get()); }
  void visit(const ir::ArraysOverlap* n) override {
    uses.arrays.insert(n->a.get());
    uses.arrays.insert(n->b.get());
  }
  void visit(const ir::Assign* n) override {
    uses.writes.insert(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::For* n) override {
    uses.writes.insert(n->var.get());
    for (const ir::ArrayReduction& r : n->schedule.array_reductions) uses.arrays_written.insert(r.array.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::Store* n) override {
    uses.arrays.insert(n->array.get());
    uses.arrays_written.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::AtomicUpdate* n) override {
    uses.arrays.insert(n->array.get());
    uses.arrays_written.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::MatMul* n) override {
    uses.arrays_written.insert(n->c.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::Allocate* n) override {
    uses.arrays.insert(n->array.get());
    uses.array_binds.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::ArrayBind* n) override {
    uses.arrays.insert(n->dst.get());
    uses.arrays.insert(n->src.get());
    uses.array_binds.insert(n->dst.get());
    uses.views.emplace_back(n->dst.get(), n->src.get());
  }
  void visit(const ir::Return* n) override {
    for (const auto& v : n->values) {
      if (v.array) uses.arrays.insert(v.array.get());
      if (v.scalar) IRVisitor::visit(v.scalar);
    }
  }
};

// A variable or an array: the two kinds of locals whose exposure we ask about.
struct Local {
  const ir::VarInfo* var = nullptr;
  const ir::ArrayInfo* array = nullptr;
};

bool expr_reads(const ir::Expr& e, const Local& l) {
  if (!e) return false;
  VarUses u = uses_of(e);
  return l.var ? u.reads.count(l.var) > 0 : u.arrays.count(l.array) > 0;
}

// Walks a statement in execution order. Returns true when a read may happen
// before a definite write; sets *written when every path that falls through
// writes it, *diverges when no path falls through.
bool exposed(const ir::Stmt& s, const Local& l, bool* written, bool* diverges);

bool exposed_list(const std::vector<ir::Stmt>& stmts, const Local& l, bool* written, bool* diverges) {
  for (const auto& s : stmts) {
    bool w = false, d = false;
    if (exposed(s, l, &w, &d)) return true;
    if (w) {
      *written = true;
      return false;
    }
    if (d) {
      *diverges = true;
      return false;
    }
  }
  return false;
}

bool exposed(const ir::Stmt& s, const Local& l, bool* written, bool* diverges) {
  *written = false;
  *diverges = false;
  if (!s) return false;
  switch (s->kind) {
    case ir::NodeKind::Block: return exposed_list(s->as<ir::Block>()->stmts, l, written, diverges);
    case ir::NodeKind::Assign: {
      auto a = s->as<ir::Assign>();
      if (expr_reads(a->value, l)) return true;
      *written = l.var == a->var.get();
      return false;
    }
    case ir::NodeKind::Assert:
      if (expr_reads(s->as<ir::Assert>()->cond, l)) return true;
      return false;
    case ir::NodeKind::Store:
    case ir::NodeKind::AtomicUpdate:
    case ir::NodeKind::Declare: {
      VarUses u = uses_of(s);
      return l.var ? u.reads.count(l.var) > 0 : u.arrays.count(l.array) > 0;
    }
    case ir::NodeKind::Allocate: {
      auto a = s->as<ir::Allocate>();
      for (const auto& e : a->shape)
        if (expr_reads(e, l)) return true;
      if (expr_reads(a->fill_value, l)) return true;
      *written = l.array == a->array.get();
      return false;
    }
    case ir::NodeKind::ArrayBind: {
      auto a = s->as<ir::ArrayBind>();
      if (l.array == a->src.get()) return true;
      *written = l.array == a->dst.get();
      return false;
    }
    case ir::NodeKind::If: {
      auto i = s->as<ir::If>();
      if (expr_reads(i->cond, l)) return true;
      bool tw = false, td = false, ew = false, ed = false;
      if (exposed(i->then_case, l, &tw, &td)) return true;
      if (i->else_case && exposed(i->else_case, l, &ew, &ed)) return true;
      bool then_done = tw || td, else_done = i->else_case ? (ew || ed) : false;
      *diverges = td && ed && i->else_case;
      *written = then_done && else_done && !*diverges;
      return false;
    }
    case ir::NodeKind::For: {
      auto f = s->as<ir::For>();
      if (expr_reads(f->begin, l) || expr_reads(f->end, l) || expr_reads(f->step, l)) return true;
      if (l.var == f->var.get()) return false;  // the loop writes it before each iteration
      bool w = false, d = false;
      // The body may run zero times, so nothing in it is a definite write;
      // a read at its start reads the value from before the loop (or from
      // the previous iteration, which the same test catches).
      return exposed(f->body, l, &w, &d);
    }
    case ir::NodeKind::While: {
      auto w = s->as<ir::While>();
      if (expr_reads(w->cond, l)) return true;
      bool bw = false, bd = false;
      return exposed(w->body, l, &bw, &bd);
    }
    case ir::NodeKind::Return: {
      auto r = s->as<ir::Return>();
      for (const auto& v : r->values) {
        if (v.scalar && expr_reads(v.scalar, l)) return true;
        if (v.array && v.array.get() == l.array) return true;
      }
      *diverges = true;
      return false;
    }
    case ir::NodeKind::Break:
    case ir::NodeKind::Continue: *diverges = true; return false;
    // The library call means what the loops it replaced mean.
    case ir::NodeKind::MatMul: return exposed(s->as<ir::MatMul>()->loops, l, written, diverges);
    default: PLAIT_INTERNAL_ERROR(std::string("unexpected statement ") + ir::node_kind_name(s->kind));
  }
}

}  // namespace

VarUses uses_of(const ir::Stmt& s) {
  UseCollector c;
  c.visit(s);
  return c.uses;
}

VarUses uses_of(const ir::Expr& e) {
  UseCollector c;
  c.visit(e);
  return c.uses;
}

bool reads_var(const ir::Expr& e, const ir::VarInfo* var) { return uses_of(e).reads.count(var) > 0; }

bool reads_any(const ir::Expr& e, const ir::VarSet& vars) {
  for (const ir::VarInfo* v : uses_of(e).reads)
    if (vars.count(v)) return true;
  return false;
}

bool var_plus_constant(const ir::Expr& index, const ir::VarInfo* var, int64_t* offset) {
  const ir::ExprNode* e = without_int_casts(index);
  auto is_var = [&](const ir::Expr& x) {
    const ir::VarRef* r = without_int_casts(x)->as<ir::VarRef>();
    return r && r->var.get() == var;
  };
  if (const ir::VarRef* r = e->as<ir::VarRef>(); r && r->var.get() == var) {
    *offset = 0;
    return true;
  }
  const ir::Binary* b = e->as<ir::Binary>();
  if (!b || (b->op != ir::BinaryOp::Add && b->op != ir::BinaryOp::Sub)) return false;
  const ir::IntImm* ca = b->a->as<ir::IntImm>();
  const ir::IntImm* cb = b->b->as<ir::IntImm>();
  if (is_var(b->a) && cb) {
    *offset = b->op == ir::BinaryOp::Add ? cb->value : -cb->value;
    return true;
  }
  if (b->op == ir::BinaryOp::Add && ca && is_var(b->b)) {
    *offset = ca->value;
    return true;
  }
  return false;
}

bool may_read_before_write(const ir::Stmt& s, const ir::VarInfo* var) {
  bool w = false, d = false;
  return exposed(s, Local{var, nullptr}, &w, &d);
}

bool always_writes_before_read(const ir::Stmt& s, const ir::VarInfo* var) {
  bool w = false, d = false;
  if (exposed(s, Local{var, nullptr}, &w, &d)) return false;
  return w || d;
}

namespace {

// The chain of statements from `root` down to `target`, outermost first.
bool find_path(const ir::Stmt& node, const ir::StmtNode* target, std::vector<const ir::StmtNode*>& path) {
  if (!node) return false;
  path.push_back(node.get());
  if (node.get() == target) return true;
  auto child = [&](const ir::Stmt& c) { return find_path(c, target, path); };
  switch (node->kind) {
    case ir::NodeKind::Block:
      for (const auto& s : node->as<ir::Block>()->stmts)
        if (child(s)) return true;
      break;
    case ir::NodeKind::If:
      if (child(node->as<ir::If>()->then_case) || child(node->as<ir::If>()->else_case)) return true;
      break;
    case ir::NodeKind::For:
      if (child(node->as<ir::For>()->body)) return true;
      break;
    case ir::NodeKind::While:
      if (child(node->as<ir::While>()->body)) return true;
      break;
    case ir::NodeKind::MatMul:
      if (child(node->as<ir::MatMul>()->loops)) return true;
      break;
    default: break;
  }
  path.pop_back();
  return false;
}

bool live_after(const ir::Stmt& root, const ir::StmtNode* stmt, const Local& l) {
  std::vector<const ir::StmtNode*> path;
  if (!find_path(root, stmt, path)) PLAIT_INTERNAL_ERROR("live_after: statement not found");
  // Walk outwards: the rest of each enclosing block, then the next
  // iteration of each enclosing loop.
  for (size_t depth = path.size() - 1; depth-- > 0;) {
    const ir::StmtNode* parent = path[depth];
    const ir::StmtNode* child = path[depth + 1];
    if (auto b = dynamic_cast<const ir::Block*>(parent)) {
      size_t k = 0;
      while (k < b->stmts.size() && b->stmts[k].get() != child) ++k;
      std::vector<ir::Stmt> rest(b->stmts.begin() + static_cast<long>(k) + 1, b->stmts.end());
      bool written = false, diverges = false;
      if (exposed_list(rest, l, &written, &diverges)) return true;
      if (written) return false;
    } else if (auto f = dynamic_cast<const ir::For*>(parent)) {
      if (!l.var || f->var.get() != l.var) {
        bool w = false, d = false;
        if (exposed(f->body, l, &w, &d)) return true;
      }
    } else if (auto w = dynamic_cast<const ir::While*>(parent)) {
      if (expr_reads(w->cond, l)) return true;
      bool wr = false, d = false;
      if (exposed(w->body, l, &wr, &d)) return true;
    }
  }
  return false;
}

}  // namespace

bool live_after(const ir::Stmt& root, const ir::StmtNode* stmt, const ir::VarInfo* var) {
  return live_after(root, stmt, Local{var, nullptr});
}

bool live_after(const ir::Stmt& root, const ir::StmtNode* stmt, const ir::ArrayInfo* array) {
  return live_after(root, stmt, Local{nullptr, array});
}

bool may_read_before_write(const ir::Stmt& s, const ir::ArrayInfo* array) {
  bool w = false, d = false;
  return exposed(s, Local{nullptr, array}, &w, &d);
}

void ScalarMentions::note(const ir::Var& v) {
  if (seen_.insert(v.get()).second) used.push_back(v);
}

void ScalarMentions::visit(const ir::VarRef* n) {
  note(n->var);
}

void ScalarMentions::visit(const ir::Assign* n) {
  note(n->var);
  written.insert(n->var.get());
  IRVisitor::visit(n);
}

void ScalarMentions::visit(const ir::For* n) {
  note(n->var);
  written.insert(n->var.get());
  IRVisitor::visit(n);
}

void ScalarMentions::visit(const ir::Declare* n) {
  if (n->var) note(n->var);
}

}  // namespace plait::analysis
