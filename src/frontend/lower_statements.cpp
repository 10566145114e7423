// Lowering: statements: blocks, assignments and augmented assignments,
// atomic updates, loops and returns (lowerer.h).
#include "frontend/lowerer.h"

#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <set>

#include "frontend/ast.h"
#include "ir/ir.h"
#include "runtime/abi.h"

namespace plait::lowering {

void Lowerer::lower_block(const ast::StmtList& body, std::vector<Stmt>& out) {
  for (const auto& s : body) {
    if (inferring_) {
      try {
        lower_stmt(*s, out);
      } catch (const TypeNotKnownYet&) {
        // Retried in the next round, once more locals have types.
      }
    } else {
      lower_stmt(*s, out);
    }
  }
}

void Lowerer::lower_stmt(const ast::Stmt& s, std::vector<Stmt>& out) {
  pending_.clear();
  current_stmt_ = &s;
  std::vector<Stmt> here;
  switch (s.kind) {
    case ast::StmtKind::Assign:
    case ast::StmtKind::AugAssign: {
      bool atomic = false;
      for (const auto& p : s.pragmas)
        for (const auto& w : p.words) atomic = atomic || w == "atomic";
      if (atomic) {
        lower_atomic(s, here);
        break;
      }
      // Other pragmas on an assignment schedule an array statement's loops
      // (`#pragma :M=>parallel`, `#pragma sequential`).
      for (const auto& p : s.pragmas)
        if (p.text.find("=>") == std::string::npos && p.text != "sequential") check_pragmas_allowed(s);
      schedule_pragma_used_ = false;
      parse_statement_pragmas(s);
      if (s.kind == ast::StmtKind::Assign)
        lower_assign(*s.as<ast::Assign>(), here);
      else
        lower_aug_assign(*s.as<ast::AugAssign>(), here);
      if (!inferring_) {
        if (!s.pragmas.empty() && !schedule_pragma_used_)
          fail(ErrorKind::Pragma,
               "this pragma schedules the loops of an array statement, but the statement below is "
               "not one (it computes a single element)",
               s.pragmas[0].loc);
        check_sliced_pragmas_used();
      }
      sliced_pragmas_.clear();
      statement_sequential_ = false;
      break;
    }
    case ast::StmtKind::ExprStmt: {
      check_pragmas_allowed(s);
      const auto& e = *s.as<ast::ExprStmt>()->value;
      if (e.as<ast::Constant>()) break;  // a stray string or number: no effect
      // np.add.at(y, idx, v) (a scatter), list methods and heapq's
      // functions: the calls with an effect.
      if (auto call = e.as<ast::Call>()) {
        // A method, or a global function (`heappush(h, x)` after `from heapq import heappush`).
        auto name = call->func->as<ast::Name>();
        Value f = call->func->as<ast::Attribute>() || (name && globals_.count(name->id)) ? lower(*call->func) : Value();
        if (f.kind == Value::Kind::Function && (f.name == "numpy.add.at" || f.name.rfind("list.", 0) == 0 ||
                                                f.name.rfind("heapq.", 0) == 0 || f.name.rfind("table.", 0) == 0)) {
          effect_call_ = call;
          lower_call(*call);
          effect_call_ = nullptr;
          break;
        }
      }
      unsupported(
          "expression statements have no effect in a kernel (function calls with side effects are not "
          "supported)",
          e.loc);
    }
    case ast::StmtKind::If: {
      check_pragmas_allowed(s);
      const auto& i = *s.as<ast::If>();
      Expr cond;
      try {
        cond = condition(*i.test, "an if condition");
      } catch (const TypeNotKnownYet&) {
        if (!inferring_) throw;
      }
      std::vector<Stmt> then_body, else_body;
      auto pre = std::move(pending_);
      lower_block(i.body, then_body);
      lower_block(i.orelse, else_body);
      pending_ = std::move(pre);
      if (!inferring_)
        here.push_back(ir::If::make(cond, ir::Block::make(then_body, s.loc),
                                    i.orelse.empty() ? nullptr : ir::Block::make(else_body, s.loc), s.loc));
      break;
    }
    case ast::StmtKind::For:
      lower_for(*s.as<ast::For>(), here);
      break;
    case ast::StmtKind::While: {
      const auto& w = *s.as<ast::While>();
      if (!s.pragmas.empty())
        fail(ErrorKind::Pragma,
             "loop pragmas need a 'for ... in range(...)' loop whose trip count is known when it "
             "starts, not a while loop",
             s.pragmas[0].loc);
      if (!w.orelse.empty()) unsupported("'while ... else' is not supported", s.loc);
      Expr cond;
      try {
        cond = condition(*w.test, "a while condition");
      } catch (const TypeNotKnownYet&) {
        if (!inferring_) throw;
      }
      if (pending_allocates()) unsupported("allocating an array in a while condition is not supported", w.test->loc);
      // A local the condition may read unassigned: a read that runs at every
      // test runs at the first, and a local it finds assigned stays so, so
      // its check runs once before the loop (from pending_). A read behind
      // `and`/`or`/`if else` may first run at a later test: its check runs
      // before every test, ending the loop when it fails, and raises after it.
      // Other statements the condition needs (a dict lookup's probe) run
      // before every test too.
      std::vector<Stmt> late_checks, kept;
      for (Stmt& p : pending_) {
        const auto* a = p->as<ir::Assert>();
        (a && a->cond->as<ir::VarRef>() ? kept : late_checks).push_back(std::move(p));
      }
      pending_.clear();
      std::vector<Stmt> body;
      ++loop_depth_;
      lower_block(w.body, body);
      --loop_depth_;
      pending_ = std::move(kept);
      if (inferring_) break;
      if (late_checks.empty()) {
        here.push_back(ir::While::make(cond, ir::Block::make(body, s.loc), s.loc));
        break;
      }
      std::vector<Stmt> loop, after;
      for (const Stmt& check : late_checks) {
        const auto* a = check->as<ir::Assert>();
        if (!a) {
          loop.push_back(check);
          continue;
        }
        ir::Var failed = temp_var(ScalarType::py_bool(), a->loc);
        here.push_back(ir::Assign::make(failed, ir::BoolImm::make(false, a->loc), a->loc));
        loop.push_back(ir::If::make(
            ir::Unary::make(ir::UnaryOp::Not, a->cond, a->loc),
            ir::Block::make(
                {ir::Assign::make(failed, ir::BoolImm::make(true, a->loc), a->loc), ir::Break::make(a->loc)}, a->loc),
            nullptr, a->loc));
        after.push_back(ir::Assert::make(ir::Unary::make(ir::UnaryOp::Not, ir::VarRef::make(failed, a->loc), a->loc),
                                         a->error_kind, a->message, a->loc));
      }
      loop.push_back(ir::If::make(ir::Unary::make(ir::UnaryOp::Not, cond, w.test->loc),
                                  ir::Block::make({ir::Break::make(w.test->loc)}, w.test->loc), nullptr, w.test->loc));
      loop.insert(loop.end(), body.begin(), body.end());
      here.push_back(ir::While::make(ir::BoolImm::make(true, s.loc), ir::Block::make(loop, s.loc), s.loc));
      here.insert(here.end(), after.begin(), after.end());
      break;
    }
    case ast::StmtKind::Break:
    case ast::StmtKind::Continue:
      check_pragmas_allowed(s);
      if (loop_depth_ == 0)
        fail(ErrorKind::Syntax,
             std::string("'") + (s.kind == ast::StmtKind::Break ? "break" : "continue") + "' outside loop", s.loc);
      here.push_back(s.kind == ast::StmtKind::Break ? ir::Break::make(s.loc) : ir::Continue::make(s.loc));
      break;
    case ast::StmtKind::Pass:
      check_pragmas_allowed(s);
      break;
    case ast::StmtKind::Return:
      check_pragmas_allowed(s);
      lower_return(*s.as<ast::Return>(), here);
      break;
  }
  for (auto& p : pending_) out.push_back(std::move(p));
  pending_.clear();
  for (auto& h : here) out.push_back(std::move(h));
}

void Lowerer::record_units(const std::string& name, const std::vector<bool>& units) {
  if (!inferring_) return;
  auto it = local_units_.find(name);
  if (it == local_units_.end()) {
    local_units_[name] = units;
    changed_ = true;
    return;
  }
  for (size_t d = 0; d < units.size() && d < it->second.size(); ++d) {
    if (it->second[d] && !units[d]) {
      it->second[d] = false;
      changed_ = true;
    }
  }
}

void Lowerer::assign_scalar(const std::string& name, Expr value, std::vector<Stmt>& out, SourceLoc loc) {
  if (inferring_) {
    record_scalar(name, value->type, loc);
    return;
  }
  const Local& l = locals_.at(name);
  if (!l.var) PLAIT_INTERNAL_ERROR("scalar assignment to array local " + name);
  out.push_back(ir::Assign::make(l.var, cast(value, l.var->type, true), loc));
  mark_bound(name, out, loc);
}

void Lowerer::assign_array(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc) {
  if (inferring_) {
    record_array(name, value.array->type, loc);
    // While inferring, a name's array carries the name it was read through.
    const std::string& from = value.array->name;
    if ((param_names_.count(from) || argument_aliases_.count(from)) && argument_aliases_.insert(name).second)
      changed_ = true;
    return;
  }
  const Local& l = locals_.at(name);
  if (!l.array) PLAIT_INTERNAL_ERROR("array assignment to scalar local " + name);
  if (value.array != l.array) out.push_back(ir::ArrayBind::make(l.array, value.array, loc));
  mark_bound(name, out, loc);
}

bool Lowerer::may_alias_argument(const ir::ArrayInfo* a) const {
  if (a->is_param) return true;
  auto it = locals_.find(a->name);
  return it != locals_.end() && it->second.array.get() == a && argument_aliases_.count(a->name) > 0;
}

void Lowerer::assign_to(const ast::Expr& target, const Value& value, std::vector<Stmt>& out, SourceLoc loc) {
  if (auto n = target.as<ast::Name>()) {
    if (value.kind == Value::Kind::Scalar) return assign_scalar(n->id, value.scalar, out, loc);
    if (value.kind == Value::Kind::Array) {
      auto known = array_units_.find(value.array);
      record_units(n->id,
                   known != array_units_.end() ? known->second : std::vector<bool>(value.array->type.ndim, false));
      return assign_array(n->id, value, out, loc);
    }
    if (value.kind == Value::Kind::Tensor) {
      // In NumPy `v = a[1:]` is a view: writes through v change a and the
      // other way round. Plait binds names to copies, which is the same
      // only while neither is written.
      if (value.tensor->array && (written_arrays_.count(n->id) || written_arrays_.count(value.tensor->array->name)))
        unsupported("'" + n->id + "' would be a view of '" + value.tensor->array->name +
                        "' (a slice bound to a name), and one of them is written later; views bound to names are not "
                        "supported yet: index the array directly, or take a copy with .copy()",
                    loc);
      record_units(n->id, value.tensor->unit);
      // A new array holding the expression's values (Python binds the name
      // to the result of the expression, a fresh array).
      ir::ArrayVar tmp = materialize(value.tensor, out, loc, current_stmt_);
      return assign_array(n->id, Value::of_array(tmp, loc), out, loc);
    }
    if (value.kind == Value::Kind::Algebra) {
      check_sparse_assignment(n->id, loc);
      types_[n->id].sparse =
          SparseType{value.algebra->program->result->type.kind, value.algebra->index, value.algebra->matrix};
      auto in_loop = sparse_read_in_loops_.find(n->id);
      if (in_loop == sparse_read_in_loops_.end() || inferring_ || !value.algebra->program->result->is_sparse()) {
        sparse_values_[n->id] = value;
        return;
      }
      // Read in a loop: computed here once (loop-invariant code motion of a
      // sparse program), the loop's statements read its storage.
      sparse_values_[n->id] = realize(value, loc);
      function_remarks_.push_back(ir::Remark{loc, "tensor algebra",
                                             "'" + n->id +
                                                 "' computed once where it is bound: it is read inside a "
                                                 "loop (line " +
                                                 std::to_string(in_loop->second.line) + ")"});
      return;
    }
    if (value.kind == Value::Kind::Tuple) return assign_tuple(n->id, value, out, loc);
    if (value.kind == Value::Kind::List) return assign_list(n->id, value, out, loc);
    if (value.kind == Value::Kind::Dict) return assign_table(n->id, value, out, loc);
    type_error("cannot assign " + std::string(value_kind_name(value.kind)) + " to a variable in a kernel", loc);
  }
  if (auto s = target.as<ast::Subscript>()) {
    Value base = lower(*s->value);
    if (base.kind == Value::Kind::List && base.list) {
      if (s->index->kind == ast::ExprKind::Slice || s->index->kind == ast::ExprKind::Tuple)
        unsupported("lists are indexed by one integer (assigning to slices of lists is not supported)", s->index->loc);
      return store_list_element(base.list, scalar(*s->index, "a list index"), value, out, loc);
    }
    if (base.kind == Value::Kind::Dict && base.table) return store_table(base.table, lower(*s->index), value, out, loc);
    if (base.kind == Value::Kind::Tuple) type_error("'tuple' object does not support item assignment", s->loc);
    if (base.kind == Value::Kind::Array) base.node = s->value.get();
    if (base.kind == Value::Kind::Tensor && base.tensor->array) {
      TensorPtr view = array_view(base.tensor, s->index.get(), s, s->loc);
      if (view->not_assignable) unsupported(view->not_assignable, s->loc);
      if (!inferring_) assign_tensor(view, to_tensor(value, loc), out, loc, current_stmt_);
      return;
    }
    if (base.kind != Value::Kind::Array) type_error("only arrays support item assignment", s->value->loc);
    if (indexes_a_view(base.array, *s->index) || is_array_like(value)) {
      TensorPtr view = array_view(to_tensor(base, s->loc), s->index.get(), s, s->loc);
      if (view->not_assignable) unsupported(view->not_assignable, s->loc);
      if (!inferring_) assign_tensor(view, to_tensor(value, loc), out, loc, current_stmt_);
      return;
    }
    std::vector<Expr> idx = element_indices(base.array, *s->index, s->loc);
    Expr v = as_scalar(value, "an array element assignment", loc);
    if (!inferring_)
      out.push_back(
          ir::Store::make(base.array, idx, cast(v, ScalarType{base.array->type.dtype, false}, true), false, loc));
    return;
  }
  const std::vector<ast::ExprPtr>* elts = nullptr;
  if (auto t = target.as<ast::Tuple>()) elts = &t->elts;
  if (auto t = target.as<ast::List>()) elts = &t->elts;
  if (elts) {
    if (value.kind != Value::Kind::Tuple) type_error("cannot unpack " + std::string(value_kind_name(value.kind)), loc);
    if (value.elems.size() != elts->size())
      fail(ErrorKind::Value,
           (value.elems.size() > elts->size() ? "too many values to unpack (expected "
                                              : "not enough values to unpack (expected ") +
               std::to_string(elts->size()) + ", got " + std::to_string(value.elems.size()) + ")",
           loc);
    // Python evaluates the whole right-hand side before assigning, so
    // `a, b = b, a` swaps: scalars go through temporaries first.
    std::vector<Value> held;
    for (const auto& v : value.elems) {
      if (v.kind == Value::Kind::Scalar && !inferring_ && !v.scalar->as<ir::ArrayDim>() &&
          !v.scalar->as<ir::IntImm>() && !v.scalar->as<ir::FloatImm>()) {
        ir::Var t = temp_var(v.scalar->type, loc);
        out.push_back(ir::Assign::make(t, v.scalar, loc));
        held.push_back(Value::of(ir::VarRef::make(t, loc)));
      } else {
        held.push_back(v);
      }
    }
    for (size_t i = 0; i < elts->size(); ++i) assign_to(*(*elts)[i], held[i], out, loc);
    return;
  }
  unsupported("cannot assign to this kind of expression", target.loc);
}

void Lowerer::lower_assign(const ast::Assign& a, std::vector<Stmt>& out) {
  if (a.targets.size() == 1 && a.targets[0]->as<ast::Name>()) {
    if (auto call = a.value->as<ast::Call>(); call && !involves_sparse(*call)) {
      Value f = lower(*call->func);
      if (f.kind == Value::Kind::Function && f.name == "plait.vidx") {
        vidx_aliases_[a.targets[0]->as<ast::Name>()->id] = call;
        return;
      }
    }
  }
  // `y = np.zeros(n)` allocates straight into y's storage.
  ir::ArrayVar into;
  if (a.targets.size() == 1 && !inferring_) {
    if (auto n = a.targets[0]->as<ast::Name>()) {
      auto it = locals_.find(n->id);
      if (it != locals_.end() && it->second.array && a.value->as<ast::Call>()) into = it->second.array;
    }
  }
  Value v;
  if (auto c = a.value->as<ast::Call>()) {
    effect_call_ = c;  // the whole right-hand side may change a list (x = L.pop())
    v = lower_call(*c, into);
    effect_call_ = nullptr;
  } else if (is_list_display(*a.value) && a.targets.size() == 1 && a.targets[0]->as<ast::Name>()) {
    v = list_display(*a.value);  // `L = [a, b]` makes a list (elsewhere a display is a sequence of values)
  } else {
    v = lower(*a.value);
  }
  for (const auto& t : a.targets) assign_to(*t, v, out, a.loc);
}

void Lowerer::lower_aug_assign(const ast::AugAssign& a, std::vector<Stmt>& out) {
  // Python reads the target's name before the value.
  const ast::Expr* base = a.target.get();
  while (auto s = base->as<ast::Subscript>()) base = s->value.get();
  if (auto n = base->as<ast::Name>(); n && !inferring_) check_bound(*n);
  // `n += d.pop(k)`: the call's change cannot reach the number read first.
  if (a.target->as<ast::Name>()) effect_call_ = a.value->as<ast::Call>();
  Value rhs = lower(*a.value);
  effect_call_ = nullptr;
  // In-place operators on arrays (`A += B`, `A[1:-1] *= 2`) update the
  // array's own elements, as NumPy does.
  Value current = lower(*a.target);
  if (is_array_like(current)) {
    // NumPy's in-place product keeps the target's shape, so it takes a
    // matrix (at least two dimensions) on the right; a vector there always
    // raises.
    if (a.op == ast::BinOpKind::MatMult && !(is_array_like(rhs) && to_tensor(rhs, a.loc)->rank() >= 2))
      fail(ErrorKind::Value,
           "inplace matrix multiplication requires the first operand to have at least one and the second at least "
           "two dimensions",
           a.loc);
    Value updated = tensor_binary(a.op, current, rhs, a.loc);
    ScalarType have = to_tensor(current, a.loc)->type;
    ScalarType got = updated.tensor->type;
    auto category = [](ScalarType t) { return t.is_bool() ? 0 : t.is_int() ? 1 : 2; };
    if (category(got) > category(have))
      type_error(std::string("cannot cast the result of '") + ast::binop_symbol(a.op) + "=' from " + describe(got) +
                     " to " + describe(have) + " in place (NumPy's same_kind rule)",
                 a.loc);
    TensorPtr target = to_tensor(current, a.loc);
    if (target->not_assignable) unsupported(target->not_assignable, a.target->loc);
    if (!target->array) unsupported("in-place update of an array expression that is not a view", a.target->loc);
    if (!inferring_) assign_tensor(target, updated.tensor, out, a.loc, current_stmt_);
    return;
  }
  if (is_array_like(rhs) && a.target->as<ast::Name>())
    type_error("cannot update a number in place with an array", a.loc);
  if (a.target->as<ast::Subscript>() && is_array_like(rhs)) {
    assign_to(*a.target, tensor_binary(a.op, current, rhs, a.loc), out, a.loc);
    return;
  }
  Expr r = as_scalar(rhs, "an augmented assignment", a.value->loc);
  if (auto n = a.target->as<ast::Name>()) {
    Expr cur = scalar(*a.target, "an augmented assignment");
    assign_scalar(n->id, binary(a.op, cur, r, a.loc), out, a.loc);
    return;
  }
  if (auto s = a.target->as<ast::Subscript>()) {
    Value base = lower(*s->value);
    if (base.kind == Value::Kind::Dict && base.table) {
      Expr cur = as_scalar(current, "an augmented assignment", a.target->loc);
      store_table(base.table, lower(*s->index), Value::of(binary(a.op, cur, r, a.loc)), out, a.loc);
      return;
    }
    if (base.kind == Value::Kind::List && base.list) {
      Expr cur = as_scalar(current, "an augmented assignment", a.target->loc);
      store_list_element(base.list, scalar(*s->index, "a list index"), Value::of(binary(a.op, cur, r, a.loc)), out,
                         a.loc);
      return;
    }
    if (base.kind != Value::Kind::Array) type_error("only arrays support item assignment", s->value->loc);
    std::vector<Expr> idx = element_indices(base.array, *s->index, s->loc);
    Expr cur = ir::Load::make(base.array, idx, false, s->loc);
    Expr v = binary(a.op, cur, r, a.loc);
    if (!inferring_)
      out.push_back(
          ir::Store::make(base.array, idx, cast(v, ScalarType{base.array->type.dtype, false}, true), false, a.loc));
    return;
  }
  unsupported("augmented assignment to this kind of target is not supported", a.target->loc);
}

void Lowerer::lower_atomic(const ast::Stmt& s, std::vector<Stmt>& out) {
  for (const auto& p : s.pragmas)
    if (!(p.words.size() == 1 && p.words[0] == "atomic" && p.clauses.empty())) check_pragmas_allowed(s);
  const SourceLoc ploc = s.pragmas[0].loc;
  const ast::Subscript* target = nullptr;
  ir::AtomicOp op = ir::AtomicOp::Add;
  const ast::Expr* operand = nullptr;
  if (auto a = s.as<ast::AugAssign>()) {
    target = a->target->as<ast::Subscript>();
    switch (a->op) {
      case ast::BinOpKind::Add:
        op = ir::AtomicOp::Add;
        break;
      case ast::BinOpKind::Sub:
        op = ir::AtomicOp::Sub;
        break;
      case ast::BinOpKind::Mult:
        op = ir::AtomicOp::Mul;
        break;
      case ast::BinOpKind::Div:
        op = ir::AtomicOp::Div;
        break;
      case ast::BinOpKind::BitAnd:
        op = ir::AtomicOp::BitAnd;
        break;
      case ast::BinOpKind::BitOr:
        op = ir::AtomicOp::BitOr;
        break;
      case ast::BinOpKind::BitXor:
        op = ir::AtomicOp::BitXor;
        break;
      default:
        fail(ErrorKind::Pragma, "'#pragma atomic' supports += -= *= /= &= |= ^= and x[k] = max/min(x[k], v)", ploc);
    }
    operand = a->value.get();
  } else if (auto a = s.as<ast::Assign>()) {
    if (a->targets.size() == 1) target = a->targets[0]->as<ast::Subscript>();
    auto call = a->value->as<ast::Call>();
    if (target && call && call->args.size() == 2 && call->keywords.empty()) {
      Value f = lower(*call->func);
      bool is_max = f.kind == Value::Kind::Function && (f.name == "builtins.max" || f.name == "numpy.maximum");
      bool is_min = f.kind == Value::Kind::Function && (f.name == "builtins.min" || f.name == "numpy.minimum");
      if (is_max || is_min) {
        op = is_max ? ir::AtomicOp::Max : ir::AtomicOp::Min;
        if (same_tree(call->args[0].get(), target))
          operand = call->args[1].get();
        else if (same_tree(call->args[1].get(), target))
          operand = call->args[0].get();
      }
    }
    if (!operand) target = nullptr;
  }
  if (!target || !operand)
    fail(ErrorKind::Pragma,
         "'#pragma atomic' must be directly above an update of one array element: x[k] op= v or "
         "x[k] = max(x[k], v) / min(x[k], v)",
         ploc);
  Value base = lower(*target->value);
  if (base.kind != Value::Kind::Array) type_error("only arrays support item assignment", target->value->loc);
  std::vector<Expr> idx = element_indices(base.array, *target->index, target->loc);
  Expr v = scalar(*operand, "an atomic update");
  ScalarType elem{base.array->type.dtype, false};
  // The atomic applies the operator in the element type; when NumPy would
  // compute in a wider type first (an int array updated with a float), the
  // results would differ, so that is refused.
  ScalarType computed = promote(elem, v->type);
  if (op == ir::AtomicOp::Div && !elem.is_float()) computed = ScalarType::f64();
  if (computed.kind != elem.kind)
    type_error("atomic update of " + describe(elem) + " element with " + describe(v->type) +
                   ": NumPy would compute in " + describe(computed) + " first; convert the value to the array's dtype",
               operand->loc);
  if (elem.is_bool()) type_error("atomic updates of bool arrays are not supported", target->loc);
  if (!inferring_) out.push_back(ir::AtomicUpdate::make(base.array, idx, op, cast(v, elem), false, s.loc));
}

}  // namespace plait::lowering
