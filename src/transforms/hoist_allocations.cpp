// Pass: allocations of a serial loop's steps made once before it (see
// hoist_allocations.h).
#include "transforms/hoist_allocations.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/array_mentions.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

using analysis::ArrayMentions;
using ir::ArrayInfo;
using ir::ArrayMap;
using ir::Expr;
using ir::Stmt;
using ir::VarInfo;
using ir::VarMap;
using ir::VarSet;

int count_of(const ArrayMap<int>& counts, const ArrayInfo* a) {
  auto it = counts.find(a);
  return it == counts.end() ? 0 : it->second;
}

// Every assignment of each scalar local: the assigned values, and the loops
// that have it as their variable.
class ScalarDefinitions : public ir::IRVisitor {
 public:
  VarMap<std::vector<Expr>> values;
  VarMap<std::vector<const ir::For*>> loops;
  using IRVisitor::visit;

 protected:
  void visit(const ir::Assign* n) override {
    values[n->var.get()].push_back(n->value);
    IRVisitor::visit(n);
  }
  void visit(const ir::For* n) override {
    loops[n->var.get()].push_back(n);
    IRVisitor::visit(n);
  }
};

// Which int64 expressions are provably >= 0 (below 2^63: the extents of
// arrays that fit in memory never wrap).
class NonNegative {
 public:
  // The int64 locals all of whose assignments are non-negative: the largest
  // such set, found by dropping locals with an assignment that may be
  // negative until none is left (`n = 0` then `n = n + 1` in a loop stays).
  explicit NonNegative(const Stmt& body) {
    ScalarDefinitions defs;
    defs.visit(body);
    for (const auto& [var, values] : defs.values) note(var);
    for (const auto& [var, loops] : defs.loops) note(var);
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = vars_.begin(); it != vars_.end();) {
        bool ok = true;
        if (auto v = defs.values.find(*it); v != defs.values.end())
          for (const Expr& e : v->second) ok = ok && holds(e);
        if (auto l = defs.loops.find(*it); l != defs.loops.end())
          for (const ir::For* f : l->second) {
            const ir::IntImm* step = f->step->as<ir::IntImm>();
            ok = ok && holds(f->begin) && step && step->value > 0;
          }
        if (ok) {
          ++it;
        } else {
          it = vars_.erase(it);
          changed = true;
        }
      }
    }
  }

  bool holds(const Expr& e) const {
    switch (e->kind) {
      case ir::NodeKind::IntImm: return e->as<ir::IntImm>()->value >= 0;
      case ir::NodeKind::ArrayDim: return true;
      case ir::NodeKind::VarRef: return vars_.count(e->as<ir::VarRef>()->var.get()) > 0;
      case ir::NodeKind::Cast: {
        const ir::Cast* c = e->as<ir::Cast>();
        const ScalarType from = c->value->type;
        if (!c->type.is_signed_int() || c->type.bits() < from.bits()) return false;
        if (from.is_bool() || (from.is_unsigned() && from.bits() < c->type.bits())) return true;
        return from.is_signed_int() && holds(c->value);
      }
      case ir::NodeKind::Binary: {
        const ir::Binary* b = e->as<ir::Binary>();
        switch (b->op) {
          case ir::BinaryOp::Add:
          case ir::BinaryOp::Mul:
          case ir::BinaryOp::FloorDiv:
          case ir::BinaryOp::Mod:
          case ir::BinaryOp::Min:
          case ir::BinaryOp::PyMin: return holds(b->a) && holds(b->b);
          case ir::BinaryOp::Max:
          case ir::BinaryOp::PyMax:
          case ir::BinaryOp::BitAnd: return holds(b->a) || holds(b->b);
          default: return false;
        }
      }
      case ir::NodeKind::Select: {
        const ir::Select* s = e->as<ir::Select>();
        return holds(s->t) && holds(s->f);
      }
      default: return false;
    }
  }

 private:
  void note(const VarInfo* v) {
    if (!v->is_param && v->type.kind == ScalarKind::Int64) vars_.insert(v);
  }
  VarSet vars_;
};

// Why an extent would not have the same value before the loop, or raises;
// "" when it has and does not.
class ExtentCheck : public ir::IRVisitor {
 public:
  ExtentCheck(const VarSet& assigned, const ArrayMap<int>& bound) : assigned_(assigned), bound_(bound) {}
  std::string why;
  using IRVisitor::visit;

 protected:
  void visit(const ir::VarRef* n) override {
    if (assigned_.count(n->var.get())) refuse("its extents read `" + n->var->name + "`, which the loop assigns");
  }
  void visit(const ir::Load*) override { refuse("its extents read array elements"); }
  void visit(const ir::ArrayDim* n) override { check_array(n->array.get()); }
  void visit(const ir::ArraysOverlap* n) override {
    check_array(n->a.get());
    check_array(n->b.get());
  }
  void visit(const ir::Cast* n) override {
    if (n->checked) refuse("its extents can raise an error");
    IRVisitor::visit(n);
  }
  void visit(const ir::Call* n) override {
    if (n->python_math) refuse("its extents can raise an error");
    IRVisitor::visit(n);
  }
  void visit(const ir::Binary* n) override {
    // A zero check cannot fail on a non-zero constant divisor.
    const ir::IntImm* divisor = n->b->as<ir::IntImm>();
    if (n->zero_check && (n->op == ir::BinaryOp::Pow || !divisor || divisor->value == 0))
      refuse("its extents can raise an error");
    IRVisitor::visit(n);
  }

 private:
  void check_array(const ArrayInfo* a) {
    if (count_of(bound_, a) > 0) refuse("its extents read the shape of `" + a->name + "`, which the loop binds");
  }
  void refuse(const std::string& reason) {
    if (why.empty()) why = reason;
  }
  const VarSet& assigned_;
  const ArrayMap<int>& bound_;
};

class Hoister : public ir::IRMutator {
 public:
  Hoister(const Stmt& function_body, const NonNegative& non_negative)
      : function_body_(function_body), non_negative_(non_negative) {}
  std::vector<ir::Remark> remarks;

 protected:
  using IRMutator::visit;

  Stmt visit(const ir::For* node, const Stmt& self) override {
    return hoist_out_of(IRMutator::visit(node, self), node);
  }
  Stmt visit(const ir::While* node, const Stmt& self) override {
    return hoist_out_of(IRMutator::visit(node, self), node);
  }
  // The blocks of hoisted allocations and their loop are spliced into the
  // enclosing block, where the allocations are candidates for its loop.
  Stmt visit(const ir::Block* node, const Stmt& self) override {
    bool changed = false;
    std::vector<Stmt> stmts;
    for (const Stmt& s : node->stmts) {
      Stmt m = mutate(s);
      if (m != s) changed = true;
      if (!m) continue;
      if (spliced_.count(m.get())) {
        const auto& inner = m->as<ir::Block>()->stmts;
        stmts.insert(stmts.end(), inner.begin(), inner.end());
      } else {
        stmts.push_back(std::move(m));
      }
    }
    if (!changed) return self;
    return ir::Block::make(std::move(stmts), node->loc);
  }

 private:
  // `s` itself, or, when it is a serial loop some of whose allocations move
  // out, a block of those allocations and the loop without them. `original`
  // is the loop in the function as it was, where liveness after it is asked.
  Stmt hoist_out_of(const Stmt& s, const ir::StmtNode* original) {
    const ir::For* f = s->as<ir::For>();
    const ir::While* w = s->as<ir::While>();
    if (f && f->schedule.kind != ir::LoopKind::Serial) return s;
    const Stmt& body = f ? f->body : w->body;
    const ir::Block* block = body->as<ir::Block>();
    if (!block) return s;
    const std::string what = (f ? "the loop over `" + f->var->name + "`" : std::string("the `while` loop")) +
                             " (line " + std::to_string(s->loc.line) + ")";
    // Loop variables count as assigned by their loop.
    const VarSet assigned = analysis::uses_of(s).writes;
    ArrayMentions in_body, in_header;
    in_body.visit(body);
    // The bounds are evaluated, and a `while` condition first tested, before
    // the first step's allocation.
    for (const Expr& e : f ? std::vector<Expr>{f->begin, f->end, f->step} : std::vector<Expr>{w->cond})
      in_header.visit(e);
    std::vector<Stmt> hoisted, kept;
    for (const Stmt& st : block->stmts) {
      const ir::Allocate* al = st->as<ir::Allocate>();
      if (!al) {
        kept.push_back(st);
        continue;
      }
      const std::string why = refusal(al, original, body, in_body, in_header, assigned);
      if (why.empty()) {
        hoisted.push_back(st);
        --in_body.binds[al->array.get()];
        note(al, true, "temporary `" + al->array->name + "` allocated once before " + what + ", not in every step");
      } else {
        note(al, false, "temporary `" + al->array->name + "` is allocated in every step of " + what + ": " + why);
        kept.push_back(st);
      }
    }
    if (hoisted.empty()) return s;
    Stmt new_body = ir::Block::make(std::move(kept), block->loc);
    hoisted.push_back(f ? ir::For::make(f->var, f->begin, f->end, f->step, new_body, f->schedule, f->loc)
                        : ir::While::make(w->cond, new_body, w->loc));
    Stmt out = ir::Block::make(std::move(hoisted), s->loc);
    spliced_.insert(out.get());
    return out;
  }

  // One remark per allocation (a statement may appear in several versions
  // of a loop): the outermost loop it moved out of, else why it stays.
  void note(const ir::Allocate* al, bool hoisted, std::string text) {
    auto it = remark_of_.find(al);
    if (it == remark_of_.end()) {
      remark_of_[al] = {remarks.size(), hoisted};
      remarks.push_back({al->loc, "hoist_allocations", std::move(text)});
    } else if (hoisted || !it->second.second) {
      remarks[it->second.first].message = std::move(text);
      it->second.second = it->second.second || hoisted;
    }
  }

  std::string refusal(const ir::Allocate* al, const ir::StmtNode* original, const Stmt& body,
                      const ArrayMentions& in_body, const ArrayMentions& in_header, const VarSet& assigned) const {
    const ArrayInfo* x = al->array.get();
    if (al->fill != ir::FillKind::Uninitialized) return "its fill (np.zeros, np.ones, np.full) belongs to every step";
    if (count_of(in_body.binds, x) != 1) return "the loop binds it again";
    if (in_body.bound_to_other_names.count(x)) return "it is bound to another name";
    if (in_body.returned.count(x)) return "it is returned";
    if (count_of(in_header.mentions, x) > 0) return "the loop's bounds or condition read it";
    if (analysis::may_read_before_write(body, x)) return "a step may read it before allocating it";
    if (analysis::live_after(function_body_, original, x)) return "it is read after the loop";
    for (const Expr& e : al->shape) {
      ExtentCheck check(assigned, in_body.binds);
      check.visit(e);
      if (!check.why.empty()) return check.why;
      if (!non_negative_.holds(e))
        return "its extent `" + ir::to_string(e) + "` may be negative (NumPy's ValueError belongs to the step)";
    }
    return "";
  }

  const Stmt& function_body_;
  const NonNegative& non_negative_;
  std::map<const ir::Allocate*, std::pair<size_t, bool>> remark_of_;  // index, hoisted
  std::set<const ir::StmtNode*> spliced_;
};

}  // namespace

void hoist_allocations(ir::Function& function) {
  const Stmt body = function.body;
  NonNegative non_negative(body);
  Hoister hoister(body, non_negative);
  function.body = hoister.mutate(body);
  for (auto& r : hoister.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
