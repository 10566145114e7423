// Lowering of `for` loops: over range() and plait.prange() (IR For loops
// with their schedules from the pragmas), and over lists and dicts
// (lower_lists.cpp, lower_dicts.cpp).
#include "frontend/lowerer.h"
#include "runtime/abi.h"

namespace plait::lowering {

void Lowerer::lower_for(const ast::For& f, std::vector<Stmt>& out) {
  if (!f.orelse.empty()) unsupported("'for ... else' is not supported", f.loc);
  if (auto n = f.iter->as<ast::Name>()) {
    Value iterated = lower(*n);
    if (iterated.kind == Value::Kind::List) return lower_for_list(f, iterated.list, out);
    if (iterated.kind == Value::Kind::Dict) return lower_for_table(f, iterated, out);
  }
  if (auto c = f.iter->as<ast::Call>(); c && c->func->as<ast::Attribute>()) {
    Value method = lower(*c->func);  // d.keys(), d.values(), d.items()
    if (method.kind == Value::Kind::Function && method.name.rfind("table.", 0) == 0)
      return lower_for_table(f, lower_call(*c), out);
  }
  auto target = f.target->as<ast::Name>();
  if (!target) unsupported("the target of a for loop must be a single name", f.target->loc);
  auto call = f.iter->as<ast::Call>();
  bool is_prange = false;
  if (call) {
    Value callee = lower(*call->func);
    if (callee.kind == Value::Kind::Function && callee.name == "builtins.range")
      is_prange = false;
    else if (callee.kind == Value::Kind::Function && callee.name == "plait.prange")
      is_prange = true;
    else
      call = nullptr;
  }
  if (!call) unsupported("for loops must iterate over range(...), plait.prange(...) or a list", f.iter->loc);
  if (!call->keywords.empty()) type_error("range() takes no keyword arguments", call->keywords[0].loc);
  if (call->args.empty() || call->args.size() > 3)
    type_error("range expected 1 to 3 arguments, got " + std::to_string(call->args.size()), call->loc);
  ir::LoopSchedule sched = parse_loop_pragmas(f, is_prange);
  std::vector<Expr> bounds;
  try {
    for (const auto& a : call->args) {
      Expr e = scalar(*a, "range()");
      if (!e->type.is_int() && !e->type.is_bool())
        type_error("range() arguments must be integers, got " + describe(e->type), a->loc);
      bounds.push_back(cast(e, ScalarType::py_int()));
    }
  } catch (const TypeNotKnownYet&) {
    if (!inferring_) throw;
  }
  if (pending_allocates()) unsupported("allocating an array in range() is not supported", call->loc);
  // The loop variable is a Python int whatever the bounds' types are.
  if (inferring_) record_scalar(target->id, ScalarType::py_int(), f.target->loc);
  std::vector<Stmt> body;
  ++loop_depth_;
  const bool parallel = ir::is_parallel(sched.kind) || ir::is_vectorized(sched.kind);
  parallel_depth_ += parallel;
  auto checks = std::move(pending_);  // of the bounds, before the loop
  lower_block(f.body, body);
  pending_ = std::move(checks);
  parallel_depth_ -= parallel;
  --loop_depth_;
  if (inferring_) return;
  const Local& l = locals_.at(target->id);
  if (!l.var || !l.var->type.is_int() || l.var->type.kind != ScalarKind::Int64)
    type_error("loop variable '" + target->id + "' is also assigned " +
                   (l.var ? describe(l.var->type) : std::string("an array")) + " elsewhere; a variable keeps one type",
               f.target->loc);
  Expr begin = bounds.size() == 1 ? ir::IntImm::make(0, ScalarType::py_int(), call->loc) : bounds[0];
  Expr end = bounds.size() == 1 ? bounds[0] : bounds[1];
  Expr step = bounds.size() == 3 ? bounds[2] : ir::IntImm::make(1, ScalarType::py_int(), call->loc);
  if (auto s = step->as<ir::IntImm>(); s && s->value == 0)
    fail(ErrorKind::Value, "range() arg 3 must not be zero", call->args[2]->loc);
  if (bound_flags_.count(target->id)) {
    // Python assigns the loop variable only when the range is not empty.
    auto runs = [&](bool up) {
      return ir::Compare::make(up ? ir::CompareOp::LT : ir::CompareOp::GT, begin, end, f.loc);
    };
    Expr nonempty;
    if (auto s = step->as<ir::IntImm>())
      nonempty = runs(s->value > 0);
    else
      nonempty =
          ir::Select::make(ir::Compare::make(ir::CompareOp::GT, step, ir::IntImm::make(0, step->type, f.loc), f.loc),
                           runs(true), runs(false), f.loc);
    std::vector<Stmt> mark;
    mark_bound(target->id, mark, f.loc);
    out.push_back(ir::If::make(nonempty, ir::Block::make(mark, f.loc), nullptr, f.loc));
  }
  out.push_back(ir::For::make(l.var, begin, end, step, ir::Block::make(body, f.loc), sched, f.loc));
}

}  // namespace plait::lowering
