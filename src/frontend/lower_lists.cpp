// Lists of numbers and of tuples of numbers, and tuples kept in names (their
// methods and heapq: lower_list_calls.cpp).
//
// A list is lowered onto arrays: one 1-D array per item of its elements
// (struct of arrays; the extent is the capacity) and an int64 length, all
// locals of the function. Appending doubles the capacity when it is full.
// Python's lists are objects that several names may share; here a list has
// one name, and binding it to a second one is refused, so that a list never
// changes behind a name that does not show it. Every access to the arrays is
// made here, checked against the length where Python checks (IndexError),
// so the arrays are marked indices_in_range and the bounds-check passes
// leave them alone.
#include <algorithm>

#include "frontend/list_lowering.h"
#include "frontend/lowerer.h"
#include "runtime/abi.h"

namespace plait::lowering {

std::string list_column_name(const std::string& list, size_t item) {
  return list + "[" + std::to_string(item) + "]";
}
std::string list_length_name(const std::string& list) {
  return "len(" + list + ")";
}
std::string tuple_item_name(const std::string& tuple, size_t item) {
  return tuple + "[" + std::to_string(item) + "]";
}

bool is_list_display(const ast::Expr& e) {
  if (e.as<ast::List>()) return true;
  auto b = e.as<ast::BinOp>();
  return b && b->op == ast::BinOpKind::Mult && (b->left->as<ast::List>() || b->right->as<ast::List>());
}

using namespace lists;

// ---------------------------------------------------------------- the parts of a list

ListPtr Lowerer::named_list(const std::string& name, SourceLoc loc) {
  auto p = std::make_shared<ListParts>();
  p->name = name;
  p->type = *types_.at(name).list;
  if (inferring_) {
    for (size_t k = 0; k < p->type.items.size(); ++k) {
      auto a = std::make_shared<ir::ArrayInfo>();
      a->name = list_column_name(name, k);
      a->type = ArrayType{p->type.items[k].kind, 1, Layout::C};
      a->loc = loc;
      p->columns.push_back(a);
    }
    p->length = std::make_shared<ir::VarInfo>(list_length_name(name), ScalarType::py_int(), loc, false);
    return p;
  }
  for (size_t k = 0; k < p->type.items.size(); ++k) {
    p->columns.push_back(locals_.at(list_column_name(name, k)).array);
    p->columns.back()->indices_in_range = true;  // every access is made (and checked) here
  }
  p->length = locals_.at(list_length_name(name)).var;
  return p;
}

ListPtr Lowerer::temporary_list(const ListType& type, SourceLoc loc) {
  auto p = std::make_shared<ListParts>();
  p->name = "list";
  p->type = type;
  for (ScalarType t : type.items) {
    p->columns.push_back(temp_array(ArrayType{t.kind, 1, Layout::C}, loc));
    p->columns.back()->indices_in_range = true;
  }
  p->length = temp_var(ScalarType::py_int(), loc);
  return p;
}

Value Lowerer::list_display(const ast::Expr& e) {
  const ast::List* display = e.as<ast::List>();
  Expr repeat;
  if (auto b = e.as<ast::BinOp>(); b && b->op == ast::BinOpKind::Mult) {
    // `[x] * n` or `n * [x]`
    const bool left = b->left->as<ast::List>() != nullptr;
    display = (left ? b->left : b->right)->as<ast::List>();
    repeat = scalar(left ? *b->right : *b->left, "a list repetition");
    if (!repeat->type.is_int() && !repeat->type.is_bool())
      type_error("can't multiply sequence by non-int of type '" + describe(repeat->type) + "'", b->loc);
    repeat = cast(repeat, ScalarType::py_int());
  }
  Value v;
  v.kind = Value::Kind::List;
  v.name = "display";
  v.loc = e.loc;
  v.scalar = repeat;
  size_t arity = 0;
  for (size_t i = 0; i < display->elts.size(); ++i) {
    const ast::Expr& x = *display->elts[i];
    Value item = lower(x);
    if (item.kind == Value::Kind::Tuple) {
      for (const Value& part : item.elems)
        if (part.kind != Value::Kind::Scalar)
          unsupported(
              "lists hold numbers or tuples of numbers, not tuples holding " + std::string(value_kind_name(part.kind)),
              x.loc);
    } else if (item.kind != Value::Kind::Scalar) {
      unsupported("lists hold numbers or tuples of numbers, not " + std::string(value_kind_name(item.kind)), x.loc);
    }
    const size_t n = item.kind == Value::Kind::Tuple ? item.elems.size() : 0;
    if (i > 0 && n != arity)
      unsupported(
          "the elements of a list are all numbers or all tuples of one length (a list of mixed elements "
          "is not supported)",
          x.loc);
    if (item.kind == Value::Kind::Tuple && n == 0) unsupported("lists of empty tuples are not supported", x.loc);
    arity = n;
    v.elems.push_back(item);
  }
  return v;
}

// ---------------------------------------------------------------- binding names

void Lowerer::record_list(const std::string& name, const ListType& given, SourceLoc loc) {
  if (!inferring_) return;
  LocalType& lt = types_[name];
  if (lt.scalar || lt.array || lt.sparse || lt.tuple_size)
    type_error("'" + name + "' is a list here but holds another kind of value elsewhere; a variable keeps one type",
               loc);
  if (!lt.list) {
    lt.list = ListType{};
    lt.first_loc = loc;
    changed_ = true;
  }
  ListType& have = *lt.list;
  if (given.known() && !have.known()) {
    have = given;
    changed_ = true;
  } else if (given.known()) {
    if (given.tuple != have.tuple || given.items.size() != have.items.size())
      type_error("'" + name + "' holds " + describe_list(have) + " elsewhere but " + describe_list(given) + " here",
                 loc);
    for (size_t k = 0; k < have.items.size(); ++k) {
      ScalarType u = unify(have.items[k], given.items[k]);
      if (u != have.items[k]) {
        have.items[k] = u;
        changed_ = true;
      }
    }
  }
  // The arrays and the length are locals too.
  for (size_t k = 0; k < have.items.size(); ++k) {
    std::optional<ArrayType>& column = types_[list_column_name(name, k)].array;
    ArrayType t{have.items[k].kind, 1, Layout::C};
    if (column != t) {
      column = t;
      changed_ = true;
    }
  }
  if (!types_[list_length_name(name)].scalar) {
    types_[list_length_name(name)].scalar = ScalarType::py_int();
    changed_ = true;
  }
}

void Lowerer::settle_lists() {
  // A list no element was ever given to holds floats (it stays empty).
  std::vector<std::string> unknown;
  for (const auto& [name, lt] : types_)
    if (lt.list && !lt.list->known()) unknown.push_back(name);
  for (const std::string& name : unknown) {
    ListType floats;
    floats.items.push_back(ScalarType::py_float());
    record_list(name, floats, types_.at(name).first_loc);
  }
}

void Lowerer::assign_list(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc) {
  if (value.name.empty()) {
    if (value.list->name == name) return;  // `L = L`
    unsupported("'" + name + "' would be a second name of the list '" + value.list->name +
                    "' (Python's names share one list object; Plait's lists have one name): take a copy with "
                    "list(" +
                    value.list->name + ") or " + value.list->name + ".copy()",
                loc);
  }
  // `[]` makes the name a list; each item or a copied list's type widens it.
  record_list(name, value.list ? value.list->type : ListType{}, loc);
  for (const Value& item : value.elems) record_list(name, element_type(item, loc), loc);
  if (inferring_) return;
  ListPtr target = named_list(name, loc);
  // New arrays first (the value may read the list it replaces: L = list(L)).
  ListPtr fresh = temporary_list(target->type, loc);
  Expr count;
  const Value* source = value.name == "copy" ? &value : nullptr;
  if (source) {
    count = var(source->list->length, loc);
  } else {
    count = int_imm(static_cast<int64_t>(value.elems.size()), loc);
    if (value.scalar) {
      // Python repeats a list a negative number of times as zero times.
      Expr times = ir::Binary::make(ir::BinaryOp::Max, value.scalar, int_imm(0, loc), ScalarType::py_int(), false, loc);
      count = ir::Binary::make(ir::BinaryOp::Mul, count, times, ScalarType::py_int(), false, loc);
    }
  }
  out.push_back(ir::Assign::make(fresh->length, count, loc));
  for (const ir::ArrayVar& c : fresh->columns)
    out.push_back(ir::Allocate::make(c, {var(fresh->length, loc)}, ir::FillKind::Uninitialized, nullptr, loc));
  const size_t items = target->type.items.size();
  auto store_item = [&](size_t k, Expr at, Expr x) {
    return ir::Store::make(fresh->columns[k], {std::move(at)}, cast(x, column_type(target->type.items[k]), true), false,
                           loc);
  };
  ir::Var j = temp_var(ScalarType::py_int(), loc);
  std::vector<Stmt> copy;
  if (source) {
    for (size_t k = 0; k < items; ++k)
      copy.push_back(store_item(k, var(j, loc), ir::Load::make(source->list->columns[k], {var(j, loc)}, false, loc)));
    out.push_back(ir::For::make(j, int_imm(0, loc), count, int_imm(1, loc), block(copy, loc), {}, loc));
  } else if (!value.elems.empty()) {
    const int64_t n = static_cast<int64_t>(value.elems.size());
    // A display's items are evaluated once, before any is stored.
    std::vector<std::vector<Expr>> held;
    for (const Value& item : value.elems) {
      std::vector<Expr> parts;
      for (size_t k = 0; k < items; ++k) {
        Expr x = target->type.tuple ? item.elems[k].scalar : item.scalar;
        if (value.scalar && !x->as<ir::IntImm>() && !x->as<ir::FloatImm>() && !x->as<ir::BoolImm>()) {
          ir::Var t = temp_var(x->type, loc);
          out.push_back(ir::Assign::make(t, x, loc));
          x = var(t, loc);
        }
        parts.push_back(x);
      }
      held.push_back(parts);
    }
    Expr base = value.scalar ? ir::Binary::make(ir::BinaryOp::Mul, var(j, loc), int_imm(n, loc), ScalarType::py_int(),
                                                false, loc)
                             : int_imm(0, loc);
    for (int64_t i = 0; i < n; ++i)
      for (size_t k = 0; k < items; ++k) copy.push_back(store_item(k, add(base, int_imm(i, loc), loc), held[i][k]));
    if (value.scalar) {
      Expr times = ir::Binary::make(ir::BinaryOp::Max, value.scalar, int_imm(0, loc), ScalarType::py_int(), false, loc);
      out.push_back(ir::For::make(j, int_imm(0, loc), times, int_imm(1, loc), block(copy, loc), {}, loc));
    } else {
      out.insert(out.end(), copy.begin(), copy.end());
    }
  }
  out.push_back(ir::Assign::make(target->length, var(fresh->length, loc), loc));
  for (size_t k = 0; k < items; ++k) out.push_back(ir::ArrayBind::make(target->columns[k], fresh->columns[k], loc));
  mark_bound(name, out, loc);
}

void Lowerer::assign_tuple(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc) {
  for (const Value& part : value.elems)
    if (part.kind != Value::Kind::Scalar)
      unsupported("a tuple kept in a variable holds numbers only, not " + std::string(value_kind_name(part.kind)) +
                      " (unpack it: a, b = ...)",
                  loc);
  LocalType& lt = types_[name];
  if (lt.scalar || lt.array || lt.sparse || lt.list)
    type_error("'" + name + "' is a tuple here but holds another kind of value elsewhere; a variable keeps one type",
               loc);
  if (lt.tuple_size && *lt.tuple_size != value.elems.size())
    type_error("'" + name + "' is a tuple of " + std::to_string(*lt.tuple_size) + " numbers elsewhere but of " +
                   std::to_string(value.elems.size()) + " here",
               loc);
  if (inferring_ && !lt.tuple_size) {
    lt.tuple_size = value.elems.size();
    lt.first_loc = loc;
    changed_ = true;
  }
  // Python evaluates the whole tuple before binding it (t = t[1], t[0]).
  std::vector<Expr> held;
  for (const Value& part : value.elems) {
    Expr x = part.scalar;
    if (!inferring_ && !x->as<ir::IntImm>() && !x->as<ir::FloatImm>() && !x->as<ir::BoolImm>()) {
      ir::Var t = temp_var(x->type, loc);
      out.push_back(ir::Assign::make(t, x, loc));
      x = var(t, loc);
    }
    held.push_back(x);
  }
  for (size_t k = 0; k < held.size(); ++k) assign_scalar(tuple_item_name(name, k), held[k], out, loc);
  if (!inferring_) mark_bound(name, out, loc);
}

Value Lowerer::tuple_local(const std::string& name, SourceLoc loc) {
  Value v;
  v.kind = Value::Kind::Tuple;
  v.loc = loc;
  const size_t n = *types_.at(name).tuple_size;
  for (size_t k = 0; k < n; ++k) {
    const std::string item = tuple_item_name(name, k);
    if (inferring_) {
      auto it = types_.find(item);
      if (it == types_.end() || !it->second.scalar) throw TypeNotKnownYet{};
      v.elems.push_back(Value::of(var(std::make_shared<ir::VarInfo>(item, *it->second.scalar, loc, false), loc)));
    } else {
      v.elems.push_back(Value::of(var(locals_.at(item).var, loc)));
    }
  }
  return v;
}

// ---------------------------------------------------------------- elements

Value Lowerer::list_element(const ListPtr& l, Expr k, SourceLoc loc) {
  if (!l->type.known()) throw TypeNotKnownYet{};
  if (!k->type.is_int() && !k->type.is_bool())
    type_error("list indices must be integers, not " + describe(k->type), loc);
  k = cast(k, ScalarType::py_int());
  Expr at = wrapped(k, var(l->length, loc), loc);
  if (!inferring_)
    pending_.push_back(ir::Assert::make(unless_skipped(in_range(at, var(l->length, loc), loc), loc), PLAIT_INDEX_ERROR,
                                        "list index out of range", loc));
  std::vector<Expr> items = load_element(*l, at, loc);
  for (size_t i = 0; i < items.size(); ++i) items[i] = with_weakness(items[i], l->type.items[i].weak);
  if (!l->type.tuple) return Value::of(items[0]);
  Value t;
  t.kind = Value::Kind::Tuple;
  t.loc = loc;
  for (Expr& x : items) t.elems.push_back(Value::of(x));
  return t;
}

// The element type of one element given to a list (a number or a tuple of numbers).
ListType Lowerer::element_type(const Value& v, SourceLoc loc) {
  ListType t;
  if (v.kind == Value::Kind::Tuple) {
    t.tuple = true;
    for (const Value& part : v.elems) t.items.push_back(as_scalar(part, "a list element", loc)->type);
    if (t.items.empty()) unsupported("lists of empty tuples are not supported", loc);
  } else if (v.kind == Value::Kind::Scalar) {
    t.items.push_back(v.scalar->type);
  } else {
    unsupported("lists hold numbers or tuples of numbers, not " + std::string(value_kind_name(v.kind)), loc);
  }
  return t;
}

std::vector<Expr> Lowerer::element_items(const ListPtr& l, const Value& v, SourceLoc loc) {
  const ListType given = element_type(v, loc);
  if (given.tuple != l->type.tuple || given.items.size() != l->type.items.size())
    type_error("'" + l->name + "' holds " + describe_list(l->type) + "; this gives it " + describe_list(given), loc);
  std::vector<Expr> items;
  for (size_t i = 0; i < given.items.size(); ++i) {
    Expr x = l->type.tuple ? v.elems[i].scalar : v.scalar;
    items.push_back(cast(x, column_type(l->type.items[i]), true));
  }
  return items;
}

void Lowerer::store_list_element(const ListPtr& l, Expr k, const Value& v, std::vector<Stmt>& out, SourceLoc loc) {
  if (!k->type.is_int() && !k->type.is_bool())
    type_error("list indices must be integers, not " + describe(k->type), loc);
  if (inferring_) {
    record_list(l->name, element_type(v, loc), loc);
    return;
  }
  std::vector<Expr> items = element_items(l, v, loc);
  k = cast(k, ScalarType::py_int());
  Expr at = wrapped(k, var(l->length, loc), loc);
  out.push_back(ir::Assert::make(in_range(at, var(l->length, loc), loc), PLAIT_INDEX_ERROR,
                                 "list assignment index out of range", loc));
  for (Stmt& s : store_element(*l, at, items, loc)) out.push_back(std::move(s));
}

Expr Lowerer::list_nonempty(const ListPtr& l, SourceLoc loc) {
  return ir::Compare::make(ir::CompareOp::NE, var(l->length, loc), int_imm(0, loc), loc);
}

Expr Lowerer::condition(const ast::Expr& e, const char* context) {
  Value v = lower(e);
  if (v.kind == Value::Kind::List || v.kind == Value::Kind::Dict) return condition_of(v, e.loc);
  return truthy(as_scalar(v, context, e.loc), e.loc);
}

Expr Lowerer::condition_of(const Value& container, SourceLoc loc) {
  if (container.kind == Value::Kind::Dict && container.table)
    return ir::Compare::make(ir::CompareOp::NE, var(container.table->size, loc), int_imm(0, loc), loc);
  if (!container.list) unsupported("the truth of a display is known: write True or False", loc);
  return list_nonempty(container.list, loc);
}

// ---------------------------------------------------------------- loops and returns

void Lowerer::lower_for_list(const ast::For& f, const ListPtr& l, std::vector<Stmt>& out) {
  const SourceLoc loc = f.loc;
  if (!f.pragmas.empty())
    fail(ErrorKind::Pragma, "loop pragmas need a 'for ... in range(...)' loop, not a loop over a list",
         f.pragmas[0].loc);
  ir::Var k = temp_var(ScalarType::py_int(), loc);
  std::vector<Stmt> body;
  if (!l->type.known()) {
    if (!inferring_) PLAIT_INTERNAL_ERROR("a list's type is unknown after inference");
  } else {
    // The element at k, then k + 1, then the body: `continue` goes on with the next element.
    std::vector<Expr> items = load_element(*l, var(k, loc), loc);
    std::vector<Value> values;
    for (size_t i = 0; i < items.size(); ++i)
      values.push_back(Value::of(with_weakness(items[i], l->type.items[i].weak)));
    Value element = values[0];
    if (l->type.tuple) {
      element.kind = Value::Kind::Tuple;
      element.loc = loc;
      element.elems = values;
    }
    assign_to(*f.target, element, body, f.target->loc);
  }
  body.push_back(ir::Assign::make(k, add(var(k, loc), int_imm(1, loc), loc), loc));
  ++loop_depth_;
  auto checks = std::move(pending_);
  lower_block(f.body, body);
  pending_ = std::move(checks);
  --loop_depth_;
  if (inferring_) return;
  out.push_back(ir::Assign::make(k, int_imm(0, loc), loc));
  std::vector<Stmt> loop;
  loop.push_back(ir::If::make(ir::Unary::make(ir::UnaryOp::Not, less(var(k, loc), var(l->length, loc), loc), loc),
                              block({ir::Break::make(loc)}, loc), nullptr, loc));
  loop.insert(loop.end(), body.begin(), body.end());
  out.push_back(ir::While::make(ir::BoolImm::make(true, loc), block(loop, loc), loc));
}

std::vector<ir::ArrayVar> Lowerer::list_result(const ListPtr& l, std::vector<Stmt>& out, SourceLoc loc) {
  // Arrays of exactly the list's length, which the caller turns into a list.
  std::vector<ir::ArrayVar> arrays;
  ir::Var j = temp_var(ScalarType::py_int(), loc);
  std::vector<Stmt> copy;
  for (const ir::ArrayVar& c : l->columns) {
    arrays.push_back(temp_array(c->type, loc));
    arrays.back()->indices_in_range = true;
    out.push_back(ir::Allocate::make(arrays.back(), {var(l->length, loc)}, ir::FillKind::Uninitialized, nullptr, loc));
    copy.push_back(
        ir::Store::make(arrays.back(), {var(j, loc)}, ir::Load::make(c, {var(j, loc)}, false, loc), false, loc));
  }
  out.push_back(ir::For::make(j, int_imm(0, loc), var(l->length, loc), int_imm(1, loc), block(copy, loc), {}, loc));
  return arrays;
}

}  // namespace plait::lowering
