// Pass: array statements that are the same in every step of a serial loop,
// computed once before it (hoist_invariant_arrays.h).
#include "transforms/hoist_invariant_arrays.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/loop_exits.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"

namespace plait::transforms {

namespace {

using ir::Expr;
using ir::Stmt;

// The arrays that may share memory with an argument: the parameters and
// every name bound to one of them, transitively.
ir::ArraySet argument_arrays(const ir::Function& function) {
  const analysis::VarUses uses = analysis::uses_of(function.body);
  ir::ArraySet out;
  for (const ir::Param& p : function.params)
    if (p.array) out.insert(p.array.get());
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [dst, src] : uses.views)
      if (out.count(src) && out.insert(dst).second) grew = true;
  }
  return out;
}

// Whether the loop runs at least one step.
Expr runs_a_step(const ir::For& f) {
  auto compare = [&](ir::CompareOp op, const Expr& a, const Expr& b) { return ir::Compare::make(op, a, b, f.loc); };
  if (const auto* s = f.step->as<ir::IntImm>(); s && s->value != 0)
    return compare(s->value > 0 ? ir::CompareOp::LT : ir::CompareOp::GT, f.begin, f.end);
  const Expr zero = ir::IntImm::make(0, f.step->type, f.loc);
  auto both = [&](const Expr& a, const Expr& b) { return ir::Logical::make(ir::LogicalOp::And, a, b, f.loc); };
  return ir::Logical::make(
      ir::LogicalOp::Or, both(compare(ir::CompareOp::GT, f.step, zero), compare(ir::CompareOp::LT, f.begin, f.end)),
      both(compare(ir::CompareOp::LT, f.step, zero), compare(ir::CompareOp::GT, f.begin, f.end)), f.loc);
}

// An array statement at the top of a loop body: statements [first, last],
// from its checks and scalar temporaries through the allocation of its
// temporary to the binding of that temporary to a name.
struct ArrayStatement {
  size_t first = 0, last = 0;
  const ir::Allocate* allocation = nullptr;
  const ir::ArrayBind* binding = nullptr;
};

// The statement whose allocation is stmts[at], with `prefix` of the checks
// and temporaries just before it; none when no binding of the temporary
// follows before another allocation or binding.
std::optional<ArrayStatement> statement_at(const std::vector<Stmt>& stmts, size_t at, size_t prefix) {
  ArrayStatement s;
  s.allocation = stmts[at]->as<ir::Allocate>();
  for (size_t j = at + 1; j < stmts.size(); ++j) {
    const auto* bind = stmts[j]->as<ir::ArrayBind>();
    if (bind && bind->src == s.allocation->array) {
      s.binding = bind;
      s.last = j;
      break;
    }
    if (bind || stmts[j]->as<ir::Allocate>()) return std::nullopt;
  }
  if (!s.binding || prefix > at) return std::nullopt;
  s.first = at - prefix;
  return s;
}

// How many checks and temporaries' assignments stand just before stmts[at].
size_t prefix_before(const std::vector<Stmt>& stmts, size_t at) {
  size_t n = 0;
  while (n < at) {
    const Stmt& s = stmts[at - n - 1];
    const auto* assign = s->as<ir::Assign>();
    if (!s->as<ir::Assert>() && !(assign && !assign->var->name.empty() && assign->var->name[0] == '_')) break;
    ++n;
  }
  return n;
}

std::vector<Stmt> slice(const std::vector<Stmt>& stmts, size_t begin, size_t end) {
  return {stmts.begin() + static_cast<std::ptrdiff_t>(begin), stmts.begin() + static_cast<std::ptrdiff_t>(end)};
}

class Hoister : public ir::IRMutator {
 public:
  explicit Hoister(ir::ArraySet arguments) : arguments_(std::move(arguments)) {}
  std::vector<ir::Remark> remarks;

 protected:
  using IRMutator::visit;

  Stmt visit(const ir::For* node, const Stmt& self) override { return hoist_out_of(IRMutator::visit(node, self)); }

  // The block of hoisted statements and their loop is spliced into the
  // enclosing block.
  Stmt visit(const ir::Block* node, const Stmt& self) override {
    bool changed = false;
    std::vector<Stmt> stmts;
    for (const Stmt& s : node->stmts) {
      Stmt m = mutate(s);
      changed = changed || m != s;
      if (spliced_.count(m.get())) {
        const auto& inner = m->as<ir::Block>()->stmts;
        stmts.insert(stmts.end(), inner.begin(), inner.end());
      } else if (m) {
        stmts.push_back(std::move(m));
      }
    }
    if (!changed) return self;
    return ir::Block::make(std::move(stmts), node->loc);
  }

 private:
  Stmt hoist_out_of(const Stmt& s) {
    const auto* f = s->as<ir::For>();
    const auto* block = f->body->as<ir::Block>();
    if (f->schedule.kind != ir::LoopKind::Serial || !block) return s;
    const std::string loop = "the loop over `" + f->var->name + "` (line " + std::to_string(f->loc.line) + ")";
    std::vector<Stmt> stmts = block->stmts;
    std::vector<Stmt> hoisted;
    for (size_t at = 0; at < stmts.size(); ++at) {
      if (!stmts[at]->as<ir::Allocate>()) continue;
      // The longest run of checks and temporaries before it that moves with it.
      std::optional<ArrayStatement> moved;
      std::string why;
      bool vary = true;
      for (size_t prefix = prefix_before(stmts, at) + 1; prefix-- > 0 && !moved;) {
        std::optional<ArrayStatement> candidate = statement_at(stmts, at, prefix);
        if (!candidate) break;
        bool candidate_varies = true;
        std::string reason = refusal(*f, stmts, *candidate, &candidate_varies);
        if (reason.empty()) {
          moved = candidate;
        } else if (prefix == 0) {
          why = reason;
          vary = candidate_varies;
        }
      }
      const ir::Allocate* allocation = stmts[at]->as<ir::Allocate>();
      const std::string name = "`" + (moved ? moved->binding->dst->name : allocation->array->name) + "`";
      if (!moved) {
        if (!vary)
          remarks.push_back({allocation->loc, "hoist_invariant_arrays",
                             name + " is the same in every step of " + loop + " but is computed in each: " + why});
        continue;
      }
      for (size_t k = moved->first; k <= moved->last; ++k) hoisted.push_back(stmts[k]);
      stmts.erase(stmts.begin() + static_cast<std::ptrdiff_t>(moved->first),
                  stmts.begin() + static_cast<std::ptrdiff_t>(moved->last) + 1);
      remarks.push_back({allocation->loc, "hoist_invariant_arrays",
                         name + " is the same in every step of " + loop + ": computed once before the loop"});
      at = moved->first - 1;  // the statement after the moved ones comes next (`at` wraps, then increments)
    }
    if (hoisted.empty()) return s;
    Stmt guarded = ir::If::make(runs_a_step(*f), ir::Block::make(std::move(hoisted), f->loc), nullptr, f->loc);
    Stmt rest = ir::For::make(f->var, f->begin, f->end, f->step, ir::Block::make(std::move(stmts), block->loc),
                              f->schedule, f->loc);
    Stmt out = ir::Block::make({guarded, rest}, s->loc);
    spliced_.insert(out.get());
    return out;
  }

  // "" when the statement may move out of loop `f`, else why not; `varies`
  // tells whether that is because its value changes from step to step.
  std::string refusal(const ir::For& f, const std::vector<Stmt>& stmts, const ArrayStatement& s, bool* varies) const {
    const Stmt own = ir::Block::make(slice(stmts, s.first, s.last + 1));
    std::vector<Stmt> others = slice(stmts, 0, s.first);
    const std::vector<Stmt> after = slice(stmts, s.last + 1, stmts.size());
    const Stmt before = ir::Block::make(others);
    others.insert(others.end(), after.begin(), after.end());
    const analysis::VarUses uses = analysis::uses_of(own);
    const analysis::VarUses rest = analysis::uses_of(ir::Block::make(others));
    const ir::ArrayInfo* temp = s.allocation->array.get();
    const ir::ArrayInfo* name = s.binding->dst.get();
    *varies = true;
    for (const ir::VarInfo* v : uses.reads)
      if (v == f.var.get() || rest.writes.count(v)) return "it reads `" + v->name + "`, which the loop assigns";
    for (const ir::ArrayInfo* a : uses.arrays) {
      if (a == temp || a == name) continue;
      if (rest.arrays_written.count(a) || rest.array_binds.count(a))
        return "it reads `" + a->name + "`, which the loop writes";
    }
    *varies = false;
    if (rest.arrays.count(temp)) return "its temporary is used elsewhere in the loop";
    if (rest.array_binds.count(name)) return "the loop binds `" + name->name + "` again";
    if (rest.arrays_written.count(name)) return "the loop writes into `" + name->name + "`";
    for (const auto& [dst, src] : rest.views)
      if (src == name || src == temp) return "the loop binds `" + name->name + "` to another name";
    for (const ir::VarInfo* v : uses.writes) {
      if (rest.reads.count(v) || rest.writes.count(v) || analysis::reads_var(f.begin, v) ||
          analysis::reads_var(f.end, v) || analysis::reads_var(f.step, v))
        return "its scalar `" + v->name + "` is used elsewhere in the loop";
    }
    if (analysis::may_read_before_write(f.body, name))
      return "a step reads `" + name->name + "` before the statement binds it";
    const ir::ArrayInfo* written_argument = nullptr;
    for (const ir::ArrayInfo* a : rest.arrays_written)
      if (arguments_.count(a)) written_argument = a;
    for (const ir::ArrayInfo* a : uses.arrays) {
      if (written_argument && a != temp && a != name && arguments_.count(a))
        return "it reads `" + a->name + "` and the loop writes `" + written_argument->name +
               "`, which may share memory with it (both may be arguments' memory)";
    }
    const analysis::LoopExits exits = analysis::loop_exits(before);
    if (exits.breaks || exits.continues || exits.returns) return "a statement before it may leave the step";
    if (analysis::leaves_loop(own)) return "it may leave the loop";
    return "";
  }

  ir::ArraySet arguments_;
  std::set<const ir::StmtNode*> spliced_;
};

}  // namespace

void hoist_invariant_arrays(ir::Function& function) {
  Hoister hoister(argument_arrays(function));
  function.body = hoister.mutate(function.body);
  for (auto& r : hoister.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
