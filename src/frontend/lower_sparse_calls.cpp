// The methods and attributes of sparse matrices (SciPy's), and the
// plait.sparse module's pattern-wise operations (softmax, exp, row_max,
// row_sum, mask): each a statement, or a few, of the tensor-algebra level.
#include "frontend/array_lowering.h"

namespace plait::lowering {

namespace {

using tensor::IndexVar;
using tensor::TensorVarPtr;

// SciPy's unary methods that keep zeros, as intrinsics.
const std::map<std::string, ir::Intrinsic>& zero_keeping_methods() {
  static const std::map<std::string, ir::Intrinsic> kMethods = {
      {"sqrt", ir::Intrinsic::Sqrt},   {"sin", ir::Intrinsic::Sin},     {"tan", ir::Intrinsic::Tan},
      {"tanh", ir::Intrinsic::Tanh},   {"sinh", ir::Intrinsic::Sinh},   {"arcsin", ir::Intrinsic::Asin},
      {"arctan", ir::Intrinsic::Atan}, {"floor", ir::Intrinsic::Floor}, {"ceil", ir::Intrinsic::Ceil},
      {"trunc", ir::Intrinsic::Trunc}, {"__abs__", ir::Intrinsic::Abs},
  };
  return kMethods;
}

}  // namespace

Value Lowerer::algebra_attribute(const ast::Attribute& a) {
  Value self = algebra_operand(*a.value);
  if (self.kind != Value::Kind::Algebra) unsupported("this attribute is not defined on sparse matrices", a.loc);
  TensorVarPtr t = self.algebra->program->result;
  if (a.attr == "T") return algebra_transpose(self, a.loc);
  if (a.attr == "shape") {
    Value tuple;
    tuple.kind = Value::Kind::Tuple;
    tuple.loc = a.loc;
    for (const Expr& e : t->shape) tuple.elems.push_back(Value::of(e));
    return tuple;
  }
  if (a.attr == "nnz" && t->is_sparse()) return Value::of(t->nnz);
  if (a.attr == "ndim") return Value::of(int_imm(t->rank(), a.loc));
  unsupported("sparse matrices' attribute '" + a.attr + "' is not supported in kernels (shape, nnz, ndim and T are)",
              a.loc);
}

Value Lowerer::algebra_call(const ast::Call& c) {
  if (auto f = c.func->as<ast::Attribute>(); f && involves_sparse(*f->value)) {
    Value self = algebra_operand(*f->value);
    if (self.kind == Value::Kind::Algebra) return algebra_method(f->attr, self, c);
  }
  // plait.sparse.softmax, sparse.softmax (an alias of the module), softmax (imported from it).
  if (!involves_sparse(*c.func)) {
    Value callee = lower(*c.func);
    const std::string prefix = "plait.sparse.";
    if (callee.kind == Value::Kind::Function && callee.name.rfind(prefix, 0) == 0)
      return plait_sparse_call(callee.name.substr(prefix.size()), c);
  }
  if (auto n = c.func->as<ast::Name>(); n && n->id == "abs" && c.args.size() == 1) {
    Value self = algebra_operand(*c.args[0]);
    if (self.kind == Value::Kind::Algebra && self.algebra->sparse())
      return algebra_map(self, ir::Intrinsic::Abs, c.loc);
  }
  unsupported(
      "this function does not take sparse matrices in kernels (their methods, @, * and the plait.sparse "
      "functions do)",
      c.loc);
}

Value Lowerer::algebra_method(const std::string& method, const Value& self, const ast::Call& c) {
  std::vector<Value> args;
  for (const auto& a : c.args) args.push_back(algebra_operand(*a));
  std::map<std::string, Value> kwargs;
  for (const auto& k : c.keywords) kwargs[k.name] = lower(*k.value);
  auto nargs = [&](size_t lo, size_t hi, const std::set<std::string>& keywords) {
    if (args.size() < lo || args.size() > hi)
      type_error(
          method + "() takes " + std::to_string(lo) + (hi > lo ? " to " + std::to_string(hi) : "") + " arguments",
          c.loc);
    for (const auto& [k, v] : kwargs)
      if (!keywords.count(k)) type_error(method + "() got an unexpected keyword argument '" + k + "'", c.loc);
  };
  const bool sparse = self.algebra->sparse();
  if (!sparse) return call_array_method(method, realize(self, c.loc), c);
  if (method == "multiply") {
    nargs(1, 1, {});
    return algebra_elementwise(ir::BinaryOp::Mul, self, args[0], c.loc, true, "multiply");
  }
  if (method == "maximum" || method == "minimum") {
    nargs(1, 1, {});
    const bool max = method == "maximum";
    const ir::BinaryOp op = max ? ir::BinaryOp::Max : ir::BinaryOp::Min;
    if (args[0].kind == Value::Kind::Algebra && args[0].algebra->sparse())
      return algebra_merge(op, self, args[0], c.loc, method.c_str());
    // With a number SciPy keeps the result sparse when it does not exceed 0
    // (maximum) or fall below it (minimum); the merge of one pattern then
    // drops the zeros, as SciPy does.
    const Expr k = args[0].kind == Value::Kind::Scalar ? args[0].scalar : nullptr;
    auto number = [](const Expr& e, double* v) {
      if (auto i = e ? e->as<ir::IntImm>() : nullptr)
        *v = static_cast<double>(i->value);
      else if (auto f = e ? e->as<ir::FloatImm>() : nullptr)
        *v = f->value;
      else
        return false;
      return true;
    };
    double v = 0;
    if (!number(k, &v) || k->type.is_bool() || (max ? v > 0 : v < 0))
      unsupported(method + "() of a sparse matrix takes a sparse matrix of its shape or a constant number " +
                      (max ? "<= 0" : ">= 0") + " (other numbers and arrays give a dense result: use np." + method +
                      "(S.toarray(), x))",
                  c.loc);
    return algebra_merge(op, self, args[0], c.loc, method.c_str());
  }
  if (method == "dot") {
    nargs(1, 1, {});
    return algebra_matmul(self, args[0], c.loc);
  }
  if (method == "sum" || method == "mean") {
    nargs(0, 1, {"axis"});
    Value axis = args.empty() ? (kwargs.count("axis") ? kwargs.at("axis") : Value()) : args[0];
    return algebra_sum(self, axis_constant(axis, method, true, c.loc), method == "mean", c.loc);
  }
  if (method == "toarray" || method == "todense") {
    nargs(0, 0, {});
    // Both give an ndarray, except a csr_matrix's todense(), a numpy.matrix.
    if (method == "todense" && self.algebra->matrix)
      unsupported("todense() returns a numpy.matrix for csr_matrix; kernels return arrays: use toarray()", c.loc);
    return algebra_toarray(self, c.loc);
  }
  if (method == "transpose") {
    nargs(0, 0, {});
    return algebra_transpose(self, c.loc);
  }
  if (method == "power") {
    nargs(1, 1, {});
    Value p = args[0];
    if (p.kind != Value::Kind::Scalar) type_error("power() takes a number", c.loc);
    TensorVarPtr s = algebra_tensor(self, c.loc);
    ScalarType type = promote(s->type, p.scalar->type);
    TensorVarPtr exponent = algebra_tensor(p, c.loc);
    return algebra_pattern_map(self, c.loc, type, [&](const tensor::IndexExpr& x) {
      return tensor::binary(ir::BinaryOp::Pow, x, tensor::access(exponent, {}), type);
    });
  }
  auto fn = zero_keeping_methods().find(method);
  if (fn != zero_keeping_methods().end()) {
    nargs(0, 0, {});
    return algebra_map(self, fn->second, c.loc);
  }
  unsupported("the sparse matrix method '" + method +
                  "' is not supported in kernels (multiply, maximum, minimum, dot, sum, mean, toarray, transpose, "
                  "power and the zero-keeping ufunc methods are)",
              c.loc);
}

int Lowerer::axis_constant(const Value& v, const std::string& fn, bool allow_none, SourceLoc loc) {
  if (v.kind == Value::Kind::None && allow_none) return -1;
  auto c = v.kind == Value::Kind::Scalar ? v.scalar->as<ir::IntImm>() : nullptr;
  if (!c || c->value < -2 || c->value > 1)
    type_error(fn + "(): axis is 0, 1, -1 or -2" + (allow_none ? std::string(" or None") : "") + ", as a constant",
               loc);
  return static_cast<int>((c->value + 2) % 2);
}

Value Lowerer::algebra_transpose(const Value& self, SourceLoc loc) {
  if (!self.algebra->sparse()) return transpose(realize(self, loc), loc);
  // A computed matrix is stored first; its transpose shares the storage,
  // CSR's levels read in the other order (CSC).
  Value stored = realize(self, loc);
  TensorVarPtr t = stored.algebra->program->result;
  auto view = std::make_shared<tensor::TensorVar>(*t);
  view->name = t->name + ".T";
  view->format.mode_order = {t->format.mode_order[1], t->format.mode_order[0]};
  view->shape = {t->shape[1], t->shape[0]};
  if (t->dims.size() == 2) view->dims = {t->dims[1], t->dims[0]};
  auto program = std::make_shared<tensor::Program>();
  program->result = view;
  auto value = std::make_shared<AlgebraValue>(*stored.algebra);
  value->program = program;
  return Value::of_algebra(value, loc);
}

Value Lowerer::algebra_toarray(const Value& self, SourceLoc loc) {
  TensorVarPtr s = algebra_tensor(self, loc);
  IndexVar i = index_var("i");
  IndexVar j = index_var("j");
  auto st = std::make_shared<tensor::Statement>();
  st->out = algebra_temp(s->type, tensor::Format::dense(2), s->shape);
  st->out->dims = s->dims;
  st->vars = {i, j};
  st->rhs = tensor::access(s, {i, j});
  st->loc = loc;
  return with_statement(self.algebra->program->stmts, st, false, ScalarKind::Int32);
}

Value Lowerer::algebra_pattern_map(const Value& self, SourceLoc loc, ScalarType type,
                                   const std::function<tensor::IndexExpr(const tensor::IndexExpr&)>& f,
                                   const std::vector<tensor::StatementPtr>* before) {
  TensorVarPtr s = algebra_tensor(self, loc);
  IndexVar i = index_var("i");
  IndexVar j = index_var("j");
  auto st = std::make_shared<tensor::Statement>();
  st->out = pattern_temp(type, *s);
  st->vars = {i, j};
  st->rhs = f(tensor::access(s, {i, j}));
  st->loc = loc;
  return with_statement(before ? *before : self.algebra->program->stmts, st, self.algebra->matrix, self.algebra->index);
}

Value Lowerer::plait_sparse_call(const std::string& fn, const ast::Call& c) {
  std::vector<Value> args;
  for (const auto& a : c.args) args.push_back(algebra_operand(*a));
  std::map<std::string, Value> kwargs;
  for (const auto& k : c.keywords) kwargs[k.name] = lower(*k.value);
  const std::string name = "plait.sparse." + fn;
  if (args.empty() || args[0].kind != Value::Kind::Algebra || !args[0].algebra->sparse())
    type_error(name + "() takes a sparse matrix first", c.loc);
  const Value& self = args[0];
  TensorVarPtr s = algebra_tensor(self, c.loc);
  auto expect = [&](size_t n, const std::set<std::string>& keywords) {
    if (args.size() > n) type_error(name + "() takes " + std::to_string(n) + " positional arguments", c.loc);
    for (const auto& [k, v] : kwargs)
      if (!keywords.count(k)) type_error(name + "() got an unexpected keyword argument '" + k + "'", c.loc);
  };
  const ScalarType ft = s->type.is_float() ? s->type : ScalarType::f64();
  if ((fn == "exp" || fn == "softmax" || fn == "row_max") && !s->type.is_float())
    type_error(name + "() takes a sparse matrix of floats", c.loc);
  auto per_row = [&](ir::ReduceOp op, const std::function<tensor::IndexExpr(const tensor::IndexExpr&)>& f,
                     std::vector<tensor::StatementPtr> before) {
    IndexVar i = index_var("i");
    IndexVar j = index_var("j");
    auto st = std::make_shared<tensor::Statement>();
    st->out = algebra_temp(ft, tensor::Format::dense(1), {s->shape[0]});
    st->out->dims = {s->dims[0]};
    st->vars = {i};
    st->rhs = tensor::reduce(op, j, f(tensor::access(s, {i, j})));
    st->loc = c.loc;
    return with_statement(std::move(before), st, false, ScalarKind::Int32);
  };
  auto identity = [](const tensor::IndexExpr& x) { return x; };
  if (fn == "exp") {
    expect(1, {});
    return algebra_pattern_map(self, c.loc, ft,
                               [&](const tensor::IndexExpr& x) { return tensor::call(ir::Intrinsic::Exp, x, ft); });
  }
  if (fn == "row_max") {
    expect(1, {});
    return per_row(ir::ReduceOp::Max, identity, self.algebra->program->stmts);
  }
  if (fn == "row_sum") {
    expect(1, {});
    return per_row(
        ir::ReduceOp::Add, [&](const tensor::IndexExpr& x) { return tensor::cast(x, ft); },
        self.algebra->program->stmts);
  }
  if (fn == "mask") {
    expect(2, {});
    if (args.size() != 2) type_error(name + "() takes a sparse matrix and an array", c.loc);
    TensorVarPtr d = algebra_tensor(args[1], c.loc);
    if (d->is_sparse()) type_error(name + "() takes a dense array second", c.loc);
    // The dense values may be a program of their own (`mask(P, q @ k.T)`, the
    // sampled product): its statements come first.
    std::vector<tensor::StatementPtr> before = self.algebra->program->stmts;
    if (args[1].kind == Value::Kind::Algebra)
      before = tensor::merge_statements(before, args[1].algebra->program->stmts);
    return algebra_pattern_map(
        self, c.loc, d->type,
        [&](const tensor::IndexExpr& x) {
          IndexVar i = x->vars[0];
          IndexVar j = x->vars[1];
          return broadcast_access(d, {i, j}, s->shape, c.loc);
        },
        &before);
  }
  if (fn == "softmax") {
    expect(2, {"axis"});
    Value axis = args.size() > 1 ? args[1] : kwargs.count("axis") ? kwargs.at("axis") : Value::of(int_imm(1, c.loc));
    if (axis_constant(axis, name, false, c.loc) != 1)
      unsupported(name +
                      "(axis=0) is not supported in kernels (rows are stored, columns are not); "
                      "softmax the transpose's rows: plait.sparse.softmax(S.T.tocsr(), axis=1).T",
                  c.loc);
    // m(i) = max_j S(i,j); s(i) = sum_j exp(S(i,j) - m(i)); out(i,j) = exp(S(i,j) - m(i)) / s(i)
    Value m = per_row(ir::ReduceOp::Max, identity, self.algebra->program->stmts);
    TensorVarPtr mt = m.algebra->program->result;
    auto shifted = [&](const tensor::IndexExpr& x) {
      return tensor::call(ir::Intrinsic::Exp,
                          tensor::binary(ir::BinaryOp::Sub, x, tensor::access(mt, {x->vars[0]}), ft), ft);
    };
    Value sum = per_row(ir::ReduceOp::Add, shifted, m.algebra->program->stmts);
    TensorVarPtr st = sum.algebra->program->result;
    return algebra_pattern_map(
        self, c.loc, ft,
        [&](const tensor::IndexExpr& x) {
          return tensor::binary(ir::BinaryOp::Div, shifted(x), tensor::access(st, {x->vars[0]}), ft);
        },
        &sum.algebra->program->stmts);
  }
  unsupported(name + " is not a function of plait.sparse (softmax, exp, row_max, row_sum and mask are)", c.loc);
}

}  // namespace plait::lowering
