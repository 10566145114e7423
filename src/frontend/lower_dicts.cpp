// What a kernel writes with dicts and sets (their storage and probing:
// lower_hash_tables.cpp): displays and constructors, `d[k]`, `d[k] = v`,
// `k in d`, the methods, iteration over a dict in insertion order, len(),
// truth, and dicts and sets returned to Python. A lookup probes in a loop,
// so it runs before the statement that holds it (pending_): in a `while`
// condition it runs before each test.
#include "frontend/list_lowering.h"
#include "frontend/lowerer.h"
#include "runtime/abi.h"

namespace plait::lowering {

using namespace lists;

namespace {

// The key (and value) types of a display's items, unknown for `{}`.
HashType display_type(const Value& v, bool set) {
  HashType t{std::nullopt, std::nullopt, set};
  for (const Value& item : v.elems) {
    const Value& key = set ? item : item.elems[0];
    t.key = t.key ? unify(*t.key, key.scalar->type) : key.scalar->type;
    if (!set) t.value = t.value ? unify(*t.value, item.elems[1].scalar->type) : item.elems[1].scalar->type;
  }
  return t;
}

}  // namespace

Value Lowerer::table_display(const std::string& fn, const ast::Call& c) {
  // `{}`, `{k: v, ...}` and `{a, b}` (the parser's `<dict>`/`<set>` calls of
  // one list display), `dict()` and `set()`.
  const bool set = fn == "set";
  if (!c.keywords.empty()) unsupported(fn + "() with keyword arguments is not supported", c.keywords[0].loc);
  Value v;
  v.kind = Value::Kind::Dict;
  v.name = set ? "set display" : "dict display";
  v.loc = c.loc;
  if (c.args.empty()) return v;
  const auto* items = c.args.size() == 1 ? c.args[0]->as<ast::List>() : nullptr;
  if (!items)
    unsupported(fn + "() of anything but a display (" + (set ? "{a, b}" : "{k: v}") + ") is not supported", c.loc);
  for (const auto& e : items->elts) {
    Value item = lower(*e);
    const bool pair = item.kind == Value::Kind::Tuple && item.elems.size() == 2;
    if (!set && !pair) unsupported("the items of a dict display are key: value pairs", e->loc);
    for (const Value& part : set ? std::vector<Value>{item} : item.elems)
      if (part.kind != Value::Kind::Scalar)
        unsupported(std::string(set ? "sets" : "dicts") + " hold numbers, not " + value_kind_name(part.kind), e->loc);
    v.elems.push_back(item);
  }
  return v;
}

void Lowerer::assign_table(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc) {
  if (value.table) {
    if (value.table->name == name) return;
    unsupported("'" + name + "' would be a second name of the " + (value.table->type.set ? "set" : "dict") + " '" +
                    value.table->name + "' (Python's names share one object; Plait's dicts and sets have one name)",
                loc);
  }
  const bool set = value.name == "set display";
  record_table(name, display_type(value, set), loc);
  if (inferring_) return;
  HashPtr t = named_table(name, loc);
  // Python evaluates the whole display before binding it.
  std::vector<std::pair<Expr, Expr>> held;
  for (const Value& item : value.elems) {
    auto hold = [&](const Value& part) {
      ir::Var tmp = temp_var(part.scalar->type, loc);
      out.push_back(ir::Assign::make(tmp, part.scalar, loc));
      return var(tmp, loc);
    };
    held.push_back(set ? std::make_pair(hold(item), Expr()) : std::make_pair(hold(item.elems[0]), hold(item.elems[1])));
  }
  empty_table(*t, out, loc);
  for (const auto& [key, v] : held) insert_entry(*t, key, v, out, loc);
  mark_bound(name, out, loc);
}

Expr Lowerer::table_key(const Value& key, SourceLoc loc) {
  Expr k = as_scalar(key, "a dict key", loc);
  if (!k->type.is_int() && !k->type.is_bool())
    unsupported("the keys of a dict or set in a kernel are integers, not " + describe(k->type), loc);
  return k;
}

Value Lowerer::table_lookup(const HashPtr& t, const Value& key, SourceLoc loc) {
  if (t->type.set) type_error("'set' object is not subscriptable", loc);
  Expr k = table_key(key, loc);
  if (!t->type.key || !t->type.value) throw TypeNotKnownYet{};
  if (inferring_)
    return Value::of(with_weakness(ir::Load::make(t->values, {int_imm(0, loc)}, false, loc), t->type.value->weak));
  ir::Var at = find_entry(*t, k, pending_, loc);
  pending_.push_back(
      ir::Assert::make(unless_skipped(ir::Compare::make(ir::CompareOp::GE, var(at, loc), int_imm(0, loc), loc), loc),
                       PLAIT_KEY_ERROR, "the key is not in '" + t->name + "'", loc));
  return Value::of(with_weakness(ir::Load::make(t->values, {var(at, loc)}, false, loc), t->type.value->weak));
}

void Lowerer::store_table(const HashPtr& t, const Value& key, const Value& value, std::vector<Stmt>& out,
                          SourceLoc loc) {
  if (t->type.set) type_error("'set' object does not support item assignment", loc);
  Expr k = table_key(key, loc);
  Expr v = as_scalar(value, "a dict value", loc);
  record_table(t->name, HashType{k->type, v->type, false}, loc);
  if (inferring_) return;
  insert_entry(*t, k, v, out, loc);
}

Expr Lowerer::table_contains(const HashPtr& t, const Value& key, SourceLoc loc) {
  Expr k = table_key(key, loc);
  if (!t->type.key) throw TypeNotKnownYet{};
  if (inferring_) return ir::BoolImm::make(false, loc);
  ir::Var at = find_entry(*t, k, pending_, loc);
  return ir::Compare::make(ir::CompareOp::GE, var(at, loc), int_imm(0, loc), loc);
}

Value Lowerer::call_table_method(const std::string& method, const Value& self, const ast::Call& c) {
  const HashPtr& t = self.table;
  const SourceLoc loc = c.loc;
  const std::string kind = t->type.set ? "set" : "dict";
  if (!c.keywords.empty()) type_error(kind + "." + method + "() takes no keyword arguments", c.keywords[0].loc);
  auto arity = [&](size_t low, size_t high) {
    if (c.args.size() < low || c.args.size() > high)
      type_error(kind + "." + method + "() takes " + std::to_string(low) +
                     (high > low ? " to " + std::to_string(high) : "") + " argument(s) (" +
                     std::to_string(c.args.size()) + " given)",
                 loc);
  };
  Value none;
  none.loc = loc;
  if (t->type.set && (method == "add" || method == "discard" || method == "remove")) {
    arity(1, 1);
    check_effect_allowed(c, t->name + "." + method + "()");
    Value key = lower(*c.args[0]);
    Expr k = table_key(key, loc);
    if (method == "add") record_table(t->name, HashType{k->type, std::nullopt, true}, loc);
    if (inferring_) return none;
    if (method == "add") {
      insert_entry(*t, k, nullptr, pending_, loc);
      return none;
    }
    ir::Var at = find_entry(*t, k, pending_, loc);
    Expr found = ir::Compare::make(ir::CompareOp::GE, var(at, loc), int_imm(0, loc), loc);
    if (method == "remove")
      pending_.push_back(ir::Assert::make(found, PLAIT_KEY_ERROR, "the key is not in '" + t->name + "'", loc));
    pending_.push_back(
        ir::If::make(found,
                     block({ir::Store::make(t->live, {var(at, loc)}, ir::BoolImm::make(false, loc), false, loc),
                            ir::Assign::make(t->size, sub(var(t->size, loc), int_imm(1, loc), loc), loc)},
                           loc),
                     nullptr, loc));
    return none;
  }
  if (!t->type.set && (method == "get" || method == "pop")) {
    arity(method == "get" ? 2 : 1, 2);
    if (method == "pop") check_effect_allowed(c, t->name + ".pop()");
    Value key = lower(*c.args[0]);
    Expr k = table_key(key, loc);
    std::optional<Expr> fallback;
    if (c.args.size() == 2) fallback = as_scalar(lower(*c.args[1]), "a default value", c.args[1]->loc);
    if (fallback) record_table(t->name, HashType{std::nullopt, (*fallback)->type, false}, loc);
    if (!t->type.key || !t->type.value) throw TypeNotKnownYet{};
    const ScalarType value_type{t->type.value->kind, false};
    ir::Var result = temp_var(value_type, loc);
    if (inferring_) return Value::of(with_weakness(var(result, loc), t->type.value->weak));
    ir::Var at = find_entry(*t, k, pending_, loc);
    Expr found = ir::Compare::make(ir::CompareOp::GE, var(at, loc), int_imm(0, loc), loc);
    if (!fallback)
      pending_.push_back(ir::Assert::make(found, PLAIT_KEY_ERROR, "the key is not in '" + t->name + "'", loc));
    std::vector<Stmt> hit = {ir::Assign::make(result, ir::Load::make(t->values, {var(at, loc)}, false, loc), loc)};
    if (method == "pop") {
      hit.push_back(ir::Store::make(t->live, {var(at, loc)}, ir::BoolImm::make(false, loc), false, loc));
      hit.push_back(ir::Assign::make(t->size, sub(var(t->size, loc), int_imm(1, loc), loc), loc));
    }
    Stmt miss = fallback ? block({ir::Assign::make(result, cast(*fallback, value_type, true), loc)}, loc) : nullptr;
    pending_.push_back(ir::If::make(found, block(hit, loc), miss, loc));
    return Value::of(with_weakness(var(result, loc), t->type.value->weak));
  }
  if (method == "clear") {
    arity(0, 0);
    check_effect_allowed(c, t->name + ".clear()");
    if (inferring_ || !t->type.key) return none;
    empty_table(*t, pending_, loc);
    return none;
  }
  if (!t->type.set && (method == "keys" || method == "values" || method == "items")) {
    arity(0, 0);
    Value view = self;
    view.name = method;  // iterated by a for loop
    return view;
  }
  unsupported(kind + "." + method + "() is not supported (" +
                  (t->type.set ? "sets have add, discard, remove, clear, len(), `in`"
                               : "dicts have get, pop, clear, keys, values, items, len(), `in`, d[k]") +
                  ")",
              loc);
}

void Lowerer::lower_for_table(const ast::For& f, const Value& table, std::vector<Stmt>& out) {
  const HashPtr& t = table.table;
  const SourceLoc loc = f.loc;
  if (t->type.set)
    unsupported(
        "iterating over a set is not supported: Python's order is its hash table's (iterate over a list, or "
        "a dict's keys, which keep their insertion order)",
        f.iter->loc);
  if (!f.pragmas.empty())
    fail(ErrorKind::Pragma, "loop pragmas need a 'for ... in range(...)' loop, not a loop over a dict",
         f.pragmas[0].loc);
  if (!t->type.key || !t->type.value) {
    if (inferring_) throw TypeNotKnownYet{};
    PLAIT_INTERNAL_ERROR("a dict's type is unknown after inference");
  }
  const std::string what = table.name.empty() ? "keys" : table.name;
  ir::Var e = temp_var(ScalarType::py_int(), loc), size = temp_var(ScalarType::py_int(), loc);
  Value key = Value::of(with_weakness(ir::Load::make(t->keys, {var(e, loc)}, false, loc), t->type.key->weak));
  Value value = Value::of(with_weakness(ir::Load::make(t->values, {var(e, loc)}, false, loc), t->type.value->weak));
  Value element = what == "keys" ? key : value;
  if (what == "items") {
    element = Value();
    element.kind = Value::Kind::Tuple;
    element.loc = loc;
    element.elems = {key, value};
  }
  // Python's iterator: each step (the last, which finds the end, too)
  // raises when the dict changed size since the loop began, skips removed
  // entries, then binds the target; `continue` goes on with the next step.
  std::vector<Stmt> step;
  assign_to(*f.target, element, step, f.target->loc);
  step.push_back(ir::Assign::make(e, add(var(e, loc), int_imm(1, loc), loc), loc));
  ++loop_depth_;
  auto checks = std::move(pending_);
  lower_block(f.body, step);
  pending_ = std::move(checks);
  --loop_depth_;
  if (inferring_) return;
  std::vector<Stmt> loop;
  loop.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, var(t->size, loc), var(size, loc), loc),
                                  PLAIT_RUNTIME_ERROR, "dictionary changed size during iteration", loc));
  Expr dead = ir::Logical::make(
      ir::LogicalOp::And, less(var(e, loc), var(t->used, loc), loc),
      ir::Unary::make(ir::UnaryOp::Not, ir::Load::make(t->live, {var(e, loc)}, false, loc), loc), loc);
  loop.push_back(
      ir::While::make(dead, block({ir::Assign::make(e, add(var(e, loc), int_imm(1, loc), loc), loc)}, loc), loc));
  loop.push_back(ir::If::make(ir::Compare::make(ir::CompareOp::GE, var(e, loc), var(t->used, loc), loc),
                              block({ir::Break::make(loc)}, loc), nullptr, loc));
  loop.insert(loop.end(), step.begin(), step.end());
  out.push_back(ir::Assign::make(size, var(t->size, loc), loc));
  out.push_back(ir::Assign::make(e, int_imm(0, loc), loc));
  out.push_back(ir::While::make(ir::BoolImm::make(true, loc), block(loop, loc), loc));
}

std::vector<ir::ArrayVar> Lowerer::table_result(const HashPtr& t, std::vector<Stmt>& out, SourceLoc loc) {
  // The live keys (and values), in order: the caller makes the dict or set.
  std::vector<ir::ArrayVar> arrays;
  std::vector<ir::ArrayVar> from = {t->keys};
  if (t->values) from.push_back(t->values);
  for (const ir::ArrayVar& a : from) {
    arrays.push_back(temp_array(a->type, loc));
    arrays.back()->indices_in_range = true;
    out.push_back(ir::Allocate::make(arrays.back(), {var(t->size, loc)}, ir::FillKind::Uninitialized, nullptr, loc));
  }
  ir::Var e = temp_var(ScalarType::py_int(), loc), n = temp_var(ScalarType::py_int(), loc);
  out.push_back(ir::Assign::make(n, int_imm(0, loc), loc));
  std::vector<Stmt> copy;
  for (size_t i = 0; i < from.size(); ++i)
    copy.push_back(
        ir::Store::make(arrays[i], {var(n, loc)}, ir::Load::make(from[i], {var(e, loc)}, false, loc), false, loc));
  copy.push_back(ir::Assign::make(n, add(var(n, loc), int_imm(1, loc), loc), loc));
  out.push_back(ir::For::make(
      e, int_imm(0, loc), var(t->used, loc), int_imm(1, loc),
      block({ir::If::make(ir::Load::make(t->live, {var(e, loc)}, false, loc), block(copy, loc), nullptr, loc)}, loc),
      {}, loc));
  return arrays;
}

}  // namespace plait::lowering
