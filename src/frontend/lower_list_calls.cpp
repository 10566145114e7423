// The methods of lists (append, pop, clear, copy) and heapq's functions.
// Calls that change a list add their statements before the statement that
// contains them (pending_), so they must be that statement, its whole
// right-hand side, or the element argument of another such call
// (check_effect_allowed). The heap functions are CPython's algorithm on the
// list's arrays: the same comparisons in the same order, so equal keys come
// out in heapq's order.
#include <functional>
#include <map>

#include "frontend/list_lowering.h"
#include "frontend/lowerer.h"
#include "runtime/abi.h"

namespace plait::lowering {

using namespace lists;

namespace {

// The statements of CPython's heap algorithm over the list's arrays
// (element_less is Python's `<` between two elements).
class HeapCode {
 public:
  HeapCode(const ListParts& l, SourceLoc loc, std::function<ir::Var(ScalarType)> temp)
      : l_(l), loc_(loc), temp_(std::move(temp)) {}

  // Moves the element at `pos` up towards `start` while it is less than its
  // parent (heapq's _siftdown).
  void sift_down(Expr start, Expr pos_value, std::vector<Stmt>& out) {
    ir::Var pos = temp_(ScalarType::py_int());
    out.push_back(ir::Assign::make(pos, pos_value, loc_));
    std::vector<ir::Var> item = hold(load_element(l_, var(pos, loc_), loc_), out);
    ir::Var parent = temp_(ScalarType::py_int());
    std::vector<Stmt> step;
    step.push_back(ir::Assign::make(parent,
                                    ir::Binary::make(ir::BinaryOp::Shr, sub(var(pos, loc_), int_imm(1, loc_), loc_),
                                                     int_imm(1, loc_), ScalarType::py_int(), false, loc_),
                                    loc_));
    std::vector<Stmt> move_up = store_element(l_, var(pos, loc_), load_element(l_, var(parent, loc_), loc_), loc_);
    move_up.push_back(ir::Assign::make(pos, var(parent, loc_), loc_));
    step.push_back(ir::If::make(element_less(refs(item), load_element(l_, var(parent, loc_), loc_), loc_),
                                block(move_up, loc_), block({ir::Break::make(loc_)}, loc_), loc_));
    out.push_back(ir::While::make(less(start, var(pos, loc_), loc_), block(step, loc_), loc_));
    for (Stmt& s : store_element(l_, var(pos, loc_), refs(item), loc_)) out.push_back(std::move(s));
  }

  // Moves the smaller child up until the element at `pos_value` reaches a
  // leaf, then sifts it down again (heapq's _siftup: fewer comparisons).
  void sift_up(Expr pos_value, std::vector<Stmt>& out) {
    ir::Var pos = temp_(ScalarType::py_int());
    ir::Var start = temp_(ScalarType::py_int());
    ir::Var child = temp_(ScalarType::py_int());
    ir::Var right = temp_(ScalarType::py_int());
    out.push_back(ir::Assign::make(pos, pos_value, loc_));
    out.push_back(ir::Assign::make(start, var(pos, loc_), loc_));
    std::vector<ir::Var> item = hold(load_element(l_, var(pos, loc_), loc_), out);
    auto first_child = [&] {
      return ir::Assign::make(
          child,
          add(ir::Binary::make(ir::BinaryOp::Mul, int_imm(2, loc_), var(pos, loc_), ScalarType::py_int(), false, loc_),
              int_imm(1, loc_), loc_),
          loc_);
    };
    out.push_back(first_child());
    std::vector<Stmt> step;
    step.push_back(ir::Assign::make(right, add(var(child, loc_), int_imm(1, loc_), loc_), loc_));
    // The right child when the left one is not less than it (nested tests:
    // the right child is read only when it exists).
    Expr left_less =
        element_less(load_element(l_, var(child, loc_), loc_), load_element(l_, var(right, loc_), loc_), loc_);
    step.push_back(ir::If::make(
        less(var(right, loc_), length(), loc_),
        block({ir::If::make(ir::Unary::make(ir::UnaryOp::Not, left_less, loc_),
                            block({ir::Assign::make(child, var(right, loc_), loc_)}, loc_), nullptr, loc_)},
              loc_),
        nullptr, loc_));
    for (Stmt& s : store_element(l_, var(pos, loc_), load_element(l_, var(child, loc_), loc_), loc_))
      step.push_back(std::move(s));
    step.push_back(ir::Assign::make(pos, var(child, loc_), loc_));
    step.push_back(first_child());
    out.push_back(ir::While::make(less(var(child, loc_), length(), loc_), block(step, loc_), loc_));
    for (Stmt& s : store_element(l_, var(pos, loc_), refs(item), loc_)) out.push_back(std::move(s));
    sift_down(var(start, loc_), var(pos, loc_), out);
  }

  // Temporaries holding `items` (assigned in `out`).
  std::vector<ir::Var> hold(const std::vector<Expr>& items, std::vector<Stmt>& out) {
    std::vector<ir::Var> vars;
    for (const Expr& x : items) {
      vars.push_back(temp_(x->type));
      out.push_back(ir::Assign::make(vars.back(), x, loc_));
    }
    return vars;
  }
  std::vector<Expr> refs(const std::vector<ir::Var>& vars) const {
    std::vector<Expr> out;
    for (const ir::Var& v : vars) out.push_back(var(v, loc_));
    return out;
  }
  Expr length() const { return var(l_.length, loc_); }

 private:
  const ListParts& l_;
  SourceLoc loc_;
  std::function<ir::Var(ScalarType)> temp_;
};

}  // namespace

void Lowerer::grow_if_full(const ListPtr& l, std::vector<Stmt>& out, SourceLoc loc) {
  // Doubling (at least 8 elements): appends take amortised constant time.
  Expr full = ir::Compare::make(ir::CompareOp::EQ, var(l->length, loc), ir::ArrayDim::make(l->columns[0], 0, loc), loc);
  Expr capacity = ir::Binary::make(
      ir::BinaryOp::Max, int_imm(8, loc),
      ir::Binary::make(ir::BinaryOp::Mul, int_imm(2, loc), var(l->length, loc), ScalarType::py_int(), false, loc),
      ScalarType::py_int(), false, loc);
  std::vector<Stmt> grow;
  ir::Var j = temp_var(ScalarType::py_int(), loc);
  for (const ir::ArrayVar& c : l->columns) {
    ir::ArrayVar bigger = temp_array(c->type, loc);
    bigger->indices_in_range = true;
    grow.push_back(ir::Allocate::make(bigger, {capacity}, ir::FillKind::Uninitialized, nullptr, loc));
    Stmt copy = ir::Store::make(bigger, {var(j, loc)}, ir::Load::make(c, {var(j, loc)}, false, loc), false, loc);
    grow.push_back(
        ir::For::make(j, int_imm(0, loc), var(l->length, loc), int_imm(1, loc), block({copy}, loc), {}, loc));
    grow.push_back(ir::ArrayBind::make(c, bigger, loc));
  }
  out.push_back(ir::If::make(full, block(grow, loc), nullptr, loc));
}

void Lowerer::append_items(const ListPtr& l, const std::vector<Expr>& items, std::vector<Stmt>& out, SourceLoc loc) {
  grow_if_full(l, out, loc);
  for (Stmt& s : store_element(*l, var(l->length, loc), items, loc)) out.push_back(std::move(s));
  out.push_back(ir::Assign::make(l->length, add(var(l->length, loc), int_imm(1, loc), loc), loc));
}

Value Lowerer::held_element(const ListPtr& l, const std::vector<ir::Var>& held, SourceLoc loc) {
  std::vector<Value> items;
  for (size_t k = 0; k < held.size(); ++k)
    items.push_back(Value::of(with_weakness(var(held[k], loc), l->type.items[k].weak)));
  if (!l->type.tuple) return items[0];
  Value t;
  t.kind = Value::Kind::Tuple;
  t.loc = loc;
  t.elems = std::move(items);
  return t;
}

void Lowerer::check_effect_allowed(const ast::Call& c, const std::string& what) {
  if (effect_call_ != &c || !guards_.empty())
    unsupported(what +
                    " changes a list, dict or set: call it as a statement of its own or as the whole right-hand "
                    "side of an assignment (x = " +
                    what + "), not inside another expression",
                c.loc);
}

Value Lowerer::effect_argument(const ast::Expr& e) {
  // The argument runs before the call's own change: it may change a list
  // itself (L.append(h.pop())), as Python evaluates it first.
  const ast::Call* outer = effect_call_;
  effect_call_ = e.as<ast::Call>();
  Value v = lower(e);
  effect_call_ = outer;
  return v;
}

Value Lowerer::call_list_method(const std::string& method, const Value& self, const ast::Call& c) {
  const ListPtr& l = self.list;
  const SourceLoc loc = c.loc;
  if (!c.keywords.empty()) type_error("list." + method + "() takes no keyword arguments", c.keywords[0].loc);
  auto arity = [&](size_t low, size_t high) {
    if (c.args.size() < low || c.args.size() > high)
      type_error("list." + method + "() takes " +
                     (low == high ? std::to_string(low) : "at most " + std::to_string(high)) + " argument" +
                     (high == 1 ? "" : "s") + " (" + std::to_string(c.args.size()) + " given)",
                 loc);
  };
  if (method == "copy") {
    arity(0, 0);
    Value v = self;
    v.name = "copy";
    return v;
  }
  Value none;
  none.loc = loc;
  if (method == "append") {
    arity(1, 1);
    check_effect_allowed(c, l->name + ".append()");
    Value x = effect_argument(*c.args[0]);
    if (inferring_) {
      record_list(l->name, element_type(x, c.args[0]->loc), loc);
      return none;
    }
    append_items(l, element_items(l, x, c.args[0]->loc), pending_, loc);
    return none;
  }
  if (method == "clear") {
    arity(0, 0);
    check_effect_allowed(c, l->name + ".clear()");
    if (!inferring_) pending_.push_back(ir::Assign::make(l->length, int_imm(0, loc), loc));
    return none;
  }
  if (method == "pop") {
    arity(0, 1);
    check_effect_allowed(c, l->name + ".pop()");
    Expr k = c.args.empty() ? nullptr : scalar(*c.args[0], "list.pop()");
    if (k && !k->type.is_int() && !k->type.is_bool())
      type_error("'" + describe(k->type) + "' object cannot be interpreted as an integer", c.args[0]->loc);
    if (!l->type.known()) throw TypeNotKnownYet{};
    std::vector<ir::Var> held;
    for (ScalarType t : l->type.items) held.push_back(temp_var(column_type(t), loc));
    if (inferring_) return held_element(l, held, loc);
    Expr n = var(l->length, loc);
    pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::NE, n, int_imm(0, loc), loc),
                                        PLAIT_INDEX_ERROR, "pop from empty list", loc));
    if (!k) {
      Expr last = sub(n, int_imm(1, loc), loc);
      std::vector<Expr> items = load_element(*l, last, loc);
      for (size_t i = 0; i < held.size(); ++i) pending_.push_back(ir::Assign::make(held[i], items[i], loc));
      pending_.push_back(ir::Assign::make(l->length, last, loc));
      return held_element(l, held, loc);
    }
    // pop(i): the elements after i move down one place, as in Python.
    ir::Var at = temp_var(ScalarType::py_int(), loc);
    pending_.push_back(ir::Assign::make(at, wrapped(cast(k, ScalarType::py_int()), n, loc), loc));
    pending_.push_back(
        ir::Assert::make(in_range(var(at, loc), n, loc), PLAIT_INDEX_ERROR, "pop index out of range", loc));
    std::vector<Expr> items = load_element(*l, var(at, loc), loc);
    for (size_t i = 0; i < held.size(); ++i) pending_.push_back(ir::Assign::make(held[i], items[i], loc));
    ir::Var j = temp_var(ScalarType::py_int(), loc);
    std::vector<Stmt> shift =
        store_element(*l, var(j, loc), load_element(*l, add(var(j, loc), int_imm(1, loc), loc), loc), loc);
    pending_.push_back(
        ir::For::make(j, var(at, loc), sub(n, int_imm(1, loc), loc), int_imm(1, loc), block(shift, loc), {}, loc));
    pending_.push_back(ir::Assign::make(l->length, sub(var(l->length, loc), int_imm(1, loc), loc), loc));
    return held_element(l, held, loc);
  }
  unsupported("the list method '." + method +
                  "()' is not supported (lists have append, pop, clear, copy, "
                  "len(), indexing and iteration)",
              loc);
}

Value Lowerer::call_heapq(const std::string& fn, const ast::Call& c) {
  const SourceLoc loc = c.loc;
  static const std::map<std::string, size_t> kArity = {
      {"heappush", 2}, {"heappop", 1}, {"heapify", 1}, {"heapreplace", 2}, {"heappushpop", 2}};
  auto known = kArity.find(fn);
  if (known == kArity.end())
    unsupported("heapq." + fn + "() is not supported (heappush, heappop, heapify, heapreplace and heappushpop are)",
                loc);
  if (!c.keywords.empty()) type_error(fn + "() takes no keyword arguments", c.keywords[0].loc);
  if (c.args.size() != known->second)
    type_error(fn + " expected " + std::to_string(known->second) + " argument" + (known->second == 1 ? "" : "s") +
                   ", got " + std::to_string(c.args.size()),
               loc);
  Value heap = lower(*c.args[0]);
  if (heap.kind != Value::Kind::List || !heap.list)
    type_error(fn + "() argument 1 must be a list held in a variable, not " + std::string(value_kind_name(heap.kind)),
               c.args[0]->loc);
  const ListPtr& l = heap.list;
  check_effect_allowed(c, "heapq." + fn + "()");
  std::optional<Value> item;
  if (c.args.size() == 2) item = effect_argument(*c.args[1]);
  Value none;
  none.loc = loc;
  if (inferring_) {
    if (item) record_list(l->name, element_type(*item, c.args[1]->loc), loc);
    if (fn == "heappush" || fn == "heapify") return none;
    if (!l->type.known()) throw TypeNotKnownYet{};
    std::vector<ir::Var> held;
    for (ScalarType t : l->type.items) held.push_back(temp_var(column_type(t), loc));
    return held_element(l, held, loc);
  }
  auto temp = [this, loc](ScalarType t) { return temp_var(t, loc); };
  HeapCode heap_code(*l, loc, temp);
  std::vector<Stmt>& out = pending_;
  Expr n = var(l->length, loc);
  if (fn == "heappush") {
    append_items(l, element_items(l, *item, c.args[1]->loc), out, loc);
    heap_code.sift_down(int_imm(0, loc), sub(var(l->length, loc), int_imm(1, loc), loc), out);
    return none;
  }
  if (fn == "heapify") {
    // Sift each parent, last first.
    ir::Var i = temp_var(ScalarType::py_int(), loc);
    std::vector<Stmt> body;
    heap_code.sift_up(var(i, loc), body);
    Expr last_parent =
        sub(ir::Binary::make(ir::BinaryOp::FloorDiv, n, int_imm(2, loc), ScalarType::py_int(), false, loc),
            int_imm(1, loc), loc);
    out.push_back(ir::For::make(i, last_parent, int_imm(-1, loc), int_imm(-1, loc), block(body, loc), {}, loc));
    return none;
  }
  std::vector<ir::Var> result;
  for (ScalarType t : l->type.items) result.push_back(temp_var(column_type(t), loc));
  auto set_result = [&](const std::vector<Expr>& items, std::vector<Stmt>& to) {
    for (size_t k = 0; k < result.size(); ++k) to.push_back(ir::Assign::make(result[k], items[k], loc));
  };
  if (fn == "heappop") {
    out.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::NE, n, int_imm(0, loc), loc), PLAIT_INDEX_ERROR,
                                   "index out of range", loc));
    // The last element replaces the first, which is returned, and sifts.
    Expr last = sub(n, int_imm(1, loc), loc);
    std::vector<ir::Var> last_item = heap_code.hold(load_element(*l, last, loc), out);
    out.push_back(ir::Assign::make(l->length, last, loc));
    std::vector<Stmt> nonempty;
    set_result(load_element(*l, int_imm(0, loc), loc), nonempty);
    for (Stmt& s : store_element(*l, int_imm(0, loc), heap_code.refs(last_item), loc)) nonempty.push_back(std::move(s));
    heap_code.sift_up(int_imm(0, loc), nonempty);
    std::vector<Stmt> was_last;
    set_result(heap_code.refs(last_item), was_last);
    out.push_back(ir::If::make(list_nonempty(l, loc), block(nonempty, loc), block(was_last, loc), loc));
    return held_element(l, result, loc);
  }
  std::vector<Expr> given = element_items(l, *item, c.args[1]->loc);
  if (fn == "heapreplace") {
    out.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::NE, n, int_imm(0, loc), loc), PLAIT_INDEX_ERROR,
                                   "index out of range", loc));
    std::vector<ir::Var> held = heap_code.hold(given, out);
    set_result(load_element(*l, int_imm(0, loc), loc), out);
    for (Stmt& s : store_element(*l, int_imm(0, loc), heap_code.refs(held), loc)) out.push_back(std::move(s));
    heap_code.sift_up(int_imm(0, loc), out);
    return held_element(l, result, loc);
  }
  // heappushpop: the item itself when the heap is empty or its least element
  // is not less than the item.
  std::vector<ir::Var> held = heap_code.hold(given, out);
  set_result(heap_code.refs(held), out);
  std::vector<Stmt> swap;
  set_result(load_element(*l, int_imm(0, loc), loc), swap);
  for (Stmt& s : store_element(*l, int_imm(0, loc), heap_code.refs(held), loc)) swap.push_back(std::move(s));
  heap_code.sift_up(int_imm(0, loc), swap);
  std::vector<Stmt> when_less;
  when_less.push_back(ir::If::make(element_less(load_element(*l, int_imm(0, loc), loc), heap_code.refs(held), loc),
                                   block(swap, loc), nullptr, loc));
  out.push_back(ir::If::make(list_nonempty(l, loc), block(when_less, loc), nullptr, loc));
  return held_element(l, result, loc);
}

}  // namespace plait::lowering
