// Lowering of `return`: the values a kernel gives back (numbers, arrays,
// sparse matrices as their arrays, lists, dicts and sets as theirs, in a
// tuple or a list), checked against the other returns while inferring.
#include "frontend/lowerer.h"

namespace plait::lowering {

void Lowerer::lower_return(const ast::Return& r, std::vector<Stmt>& out) {
  std::vector<ir::ReturnValue> values;
  std::vector<ValueType> types;
  bool tuple = false;
  bool list = false;  // `return [a, b]`: a tuple of values, given to Python as a list
  if (r.value) {
    Value v;
    if (auto c = r.value->as<ast::Call>()) {
      effect_call_ = c;  // `return h.pop()`
      v = lower_call(*c);
      effect_call_ = nullptr;
    } else {
      v = lower(*r.value);
    }
    std::vector<Value> items;
    list = r.value->kind == ast::ExprKind::List;
    if (v.kind == Value::Kind::Tuple) {
      tuple = true;
      items = v.elems;
    } else if (v.kind != Value::Kind::None) {
      items.push_back(v);
    }
    for (auto& it : items) {
      if (it.kind == Value::Kind::Tensor)
        it = Value::of_array(materialize(it.tensor, out, r.loc, current_stmt_), r.loc);
      if (it.kind == Value::Kind::Algebra) {
        const tensor::TensorVar& t = *it.algebra->program->result;
        // A transpose is returned as SciPy returns it: CSC, over its operand's arrays.
        SparseType st{t.type.kind, it.algebra->index, it.algebra->matrix, t.format.mode_order[0] != 0};
        sparse_return_values(it, values, r.loc);
        types.push_back(ValueType::of(st));
      } else if (it.kind == Value::Kind::List) {
        if (!it.list) unsupported("return a list display as `return [a, b]`, or bind it to a name first", r.loc);
        if (!it.list->type.known()) throw TypeNotKnownYet{};
        std::vector<ir::ArrayVar> arrays = inferring_ ? it.list->columns : list_result(it.list, out, r.loc);
        for (const ir::ArrayVar& a : arrays) values.push_back({nullptr, a});
        types.push_back(ValueType::of_list(it.list->type.items, it.list->type.tuple));
      } else if (it.kind == Value::Kind::Dict) {
        if (!it.table) unsupported("return a dict or set display by binding it to a name first", r.loc);
        if (!it.table->type.key || (!it.table->type.set && !it.table->type.value)) throw TypeNotKnownYet{};
        std::vector<ir::ArrayVar> arrays =
            inferring_ ? std::vector<ir::ArrayVar>{} : table_result(it.table, out, r.loc);
        for (const ir::ArrayVar& a : arrays) values.push_back({nullptr, a});
        std::vector<ScalarType> items = {*it.table->type.key};
        if (!it.table->type.set) items.push_back(*it.table->type.value);
        types.push_back(ValueType::of_table(items, it.table->type.set));
      } else if (it.kind == Value::Kind::Scalar) {
        values.push_back({it.scalar, nullptr});
        types.push_back(ValueType::of(it.scalar->type));
      } else if (it.kind == Value::Kind::Array) {
        values.push_back({nullptr, it.array});
        types.push_back(ValueType::of(it.array->type));
      } else {
        unsupported("kernels return numbers, arrays or tuples of them, not " + std::string(value_kind_name(it.kind)),
                    r.value->loc);
      }
    }
  }
  if (inferring_) {
    if (!results_) {
      results_ = types;
      returns_tuple_ = tuple;
      returns_list_ = list;
      first_return_loc_ = r.loc;
      changed_ = true;
      return;
    }
    if (results_->size() != types.size() || returns_tuple_ != tuple)
      type_error("this return gives a different number of values than the return at line " +
                     std::to_string(first_return_loc_.line),
                 r.loc);
    if (returns_list_ != list)
      type_error(std::string("this return gives a ") + (list ? "list" : "tuple") + " where the return at line " +
                     std::to_string(first_return_loc_.line) + " gives a " + (list ? "tuple" : "list"),
                 r.loc);
    for (size_t i = 0; i < types.size(); ++i) {
      ValueType& have = (*results_)[i];
      if (have.is_sparse() || types[i].is_sparse()) {
        if (!(have == types[i]))
          type_error("this return gives " + to_string(types[i]) + " where the return at line " +
                         std::to_string(first_return_loc_.line) + " gives " + to_string(have),
                     r.loc);
        continue;
      }
      if (have.is_array() != types[i].is_array())
        type_error("this return gives an array where the return at line " + std::to_string(first_return_loc_.line) +
                       " gives a number (or the other way round)",
                   r.loc);
      if (have.is_array()) {
        if (have.array.dtype != types[i].array.dtype || have.array.ndim != types[i].array.ndim)
          type_error("this return gives " + describe(types[i].array) + " but the return at line " +
                         std::to_string(first_return_loc_.line) + " gives " + describe(have.array),
                     r.loc);
        if (have.array.layout != types[i].array.layout) {
          have.array.layout = Layout::Any;
          changed_ = true;
        }
      } else {
        ScalarType u = unify(have.scalar, types[i].scalar);
        if (u != have.scalar) {
          have.scalar = u;
          changed_ = true;
        }
      }
    }
    return;
  }
  const std::vector<ValueType> abi = Signature{*results_}.abi().args;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].scalar) values[i].scalar = cast(values[i].scalar, abi[i].scalar);
  out.push_back(ir::Return::make(values, r.loc));
}

}  // namespace plait::lowering
