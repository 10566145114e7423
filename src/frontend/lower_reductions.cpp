// Lowering of array expressions: reductions (sum, prod, min, max, mean,
// argmin, argmax, any, all over axes) and matrix products (array_lowering.h).
#include "frontend/array_lowering.h"

namespace plait::lowering {

Value Lowerer::reduce(const std::string& name, const Value& x, const ast::Call& c, size_t first_kwarg_arg) {
  TensorPtr t = to_tensor(x, c.loc);
  std::optional<Value> axis_value;
  bool keepdims = false;
  if (c.args.size() > first_kwarg_arg + 1)
    type_error(name + "() takes the array and an optional axis positionally", c.loc);
  if (c.args.size() == first_kwarg_arg + 1) axis_value = lower(*c.args[first_kwarg_arg]);
  for (const auto& kw : c.keywords) {
    if (kw.name == "axis") {
      axis_value = lower(*kw.value);
    } else if (kw.name == "keepdims") {
      keepdims = constant_flag(lower(*kw.value), "keepdims=", kw.loc);
    } else {
      unsupported(name + "() keyword '" + kw.name + "' is not supported", kw.loc);
    }
  }
  std::vector<int> axes = reduction_axes(axis_value, t->rank(), c.loc);
  if ((name == "argmax" || name == "argmin") && axes.size() != 1 && axes.size() != t->rank())
    unsupported(name + "() over several axes is not supported", c.loc);
  return reduce_axes(name, t, axes, keepdims, c.loc);
}

Value Lowerer::reduce_axes(const std::string& name, TensorPtr t, std::vector<int> axes, bool keepdims, SourceLoc loc) {
  std::sort(axes.begin(), axes.end());
  ScalarType in = t->type;
  ScalarType acc_type = in;
  if (name == "dot") {
    acc_type = in;  // a matrix product keeps its operands' promoted type (int32 @ int32 is int32)
  } else if (name == "sum" || name == "prod") {
    // NumPy sums and multiplies narrower integers in 64 bits of their signedness.
    if (in.is_bool() || (in.is_signed_int() && in.bits() < 64)) acc_type = ScalarType::i64();
    if (in.is_unsigned() && in.bits() < 64) acc_type = ScalarType::u64();
  } else if (name == "mean") {
    acc_type = in.is_float() ? in : ScalarType::f64();
  } else if (name == "argmax" || name == "argmin") {
    acc_type = in;
  }
  ScalarType result_type = (name == "argmax" || name == "argmin") ? ScalarType::i64() : acc_type;
  std::vector<bool> reduced(t->rank(), false);
  for (int a : axes) reduced[a] = true;

  auto r = std::make_shared<Tensor>();
  r->type = result_type;
  r->reads = t->reads;
  for (auto& read : r->reads) read.node = nullptr;  // a reduction reads other elements
  for (size_t d = 0; d < t->rank(); ++d) {
    if (reduced[d] && !keepdims) continue;
    r->shape.push_back(reduced[d] ? int_imm(1, loc) : t->shape[d]);
    r->unit.push_back(reduced[d] ? true : t->unit[d]);
    r->labels.push_back(reduced[d] ? "" : t->labels[d]);
  }
  const bool top_level_scalar = r->rank() == 0;
  // A reduction without identity over an empty axis raises, as NumPy's
  // does, even when the result has no element to compute (`np.min(a,
  // axis=0)` of a (0, 0) array): the test runs once, before the statement,
  // and holds where a conditional expression or `and`/`or` skips the
  // reduction (`np.max(a) if a.size else 0.0`).
  if ((name == "max" || name == "min" || name == "argmax" || name == "argmin") && !inferring_) {
    Expr count = int_imm(1, loc);
    for (size_t d = 0; d < t->rank(); ++d)
      if (reduced[d]) count = mul(count, t->shape[d], loc);
    const std::string message = name == "max" || name == "min"
                                    ? "zero-size array to reduction operation " +
                                          std::string(name == "max" ? "maximum" : "minimum") + " which has no identity"
                                    : "attempt to get " + name + " of an empty sequence";
    pending_.push_back(
        ir::Assert::make(unless_skipped(ir::Compare::make(ir::CompareOp::GT, count, int_imm(0, loc), loc), loc),
                         PLAIT_VALUE_ERROR, message, loc));
  }
  TensorPtr src = t;
  r->element = [this, src, reduced, keepdims, name, acc_type, loc, top_level_scalar](const std::vector<Expr>& idx,
                                                                                     Sink& sink) -> Expr {
    // The element's indices: the kept ones from idx, a new loop variable
    // for each reduced dimension.
    auto reduced_dims = [&](std::vector<Expr>& full, std::vector<LoopDim>& dims) {
      size_t k = 0;
      for (size_t d = 0; d < src->rank(); ++d) {
        if (!reduced[d]) {
          full.push_back(idx[k++]);
          continue;
        }
        if (keepdims) ++k;
        LoopDim dim;
        dim.var = temp_var(ScalarType::py_int(), loc);
        dim.var->name = "_r" + dim.var->name.substr(4);
        dim.extent = src->shape[d];
        dim.label = src->labels[d];
        dim.reduction = true;
        full.push_back(ir::VarRef::make(dim.var, loc));
        dims.push_back(dim);
      }
    };
    std::vector<Expr> full;
    std::vector<LoopDim> dims;
    reduced_dims(full, dims);
    Expr count = int_imm(1, loc);
    for (const auto& d : dims) count = mul(count, d.extent, loc);
    Sink inner;
    Expr e = src->element(full, inner);
    std::vector<Stmt> group;
    ir::Var acc = temp_var(acc_type, loc);
    std::vector<Stmt> update;
    bool arg = name == "argmax" || name == "argmin";
    bool is_max = name == "max" || name == "argmax";
    group.push_back(ir::Assign::make(acc, identity(name, acc_type, loc), loc));
    // Reduction redundancy: factors of a sum's terms that do not depend on
    // the reduced indices multiply the sum once, after it, instead of every
    // term (`np.sum(alpha * A[i, :] * x)` is `alpha * np.sum(A[i, :] * x)`).
    std::vector<Expr> outside_factors;
    if ((name == "sum" || name == "mean" || name == "dot") && acc_type.is_float() && e->type == acc_type) {
      ir::VarSet reduced_vars;
      for (const auto& d : dims) reduced_vars.insert(d.var.get());
      std::vector<Expr> inside;
      std::function<void(const Expr&)> split = [&](const Expr& x) {
        auto m = x->as<ir::Binary>();
        if (m && m->op == ir::BinaryOp::Mul && m->type == acc_type) {
          split(m->a);
          split(m->b);
          return;
        }
        bool varies = false;
        for (const auto* v : analysis::uses_of(x).reads) varies = varies || reduced_vars.count(v);
        // A factor that reads an array may be an element that a loop after
        // this one overwrites; only pure scalar factors move.
        bool reads_memory = !analysis::uses_of(x).arrays.empty();
        (varies || reads_memory ? inside : outside_factors).push_back(x);
      };
      split(e);
      if (!outside_factors.empty() && !inside.empty()) {
        e = inside[0];
        for (size_t i = 1; i < inside.size(); ++i)
          e = ir::Binary::make(ir::BinaryOp::Mul, e, inside[i], acc_type, false, loc);
      } else {
        outside_factors.clear();
      }
    }
    Expr value = cast(e, acc_type);
    ir::Var best_index;
    ir::Var nans;  // float max/min on the CPU: the count of NaNs the vector loop saw
    if (arg) {
      // The first index of the extreme value; a NaN wins (NumPy's rule).
      best_index = temp_var(ScalarType::i64(), loc);
      group.push_back(ir::Assign::make(best_index, ir::IntImm::make(0, ScalarType::i64(), loc), loc));
      Expr flat = int_imm(0, loc);
      for (const auto& d : dims) flat = add(mul(flat, d.extent, loc), ir::VarRef::make(d.var, loc), loc);
      ir::Var v = temp_var(acc_type, loc);
      Expr cur = ir::VarRef::make(acc, loc);
      Expr vv = ir::VarRef::make(v, loc);
      Expr better = ir::Compare::make(is_max ? ir::CompareOp::GT : ir::CompareOp::LT, vv, cur, loc);
      if (acc_type.is_float()) {
        Expr v_nan = ir::Call::make(ir::Intrinsic::IsNan, {vv}, ScalarType::b1(), false, loc);
        Expr cur_nan = ir::Call::make(ir::Intrinsic::IsNan, {cur}, ScalarType::b1(), false, loc);
        better = ir::Logical::make(
            ir::LogicalOp::Or, better,
            ir::Logical::make(ir::LogicalOp::And, v_nan, ir::Unary::make(ir::UnaryOp::Not, cur_nan, loc), loc), loc);
      }
      // The first element always wins, so an array of all -inf (or all
      // NaN) answers 0 as NumPy does.
      Expr first = ir::Compare::make(ir::CompareOp::EQ, flat, int_imm(0, loc), loc);
      better = ir::Logical::make(ir::LogicalOp::Or, first, better, loc);
      update.push_back(ir::Assign::make(v, value, loc));
      update.push_back(ir::If::make(
          better,
          ir::Block::make(
              {ir::Assign::make(acc, vv, loc), ir::Assign::make(best_index, cast(flat, ScalarType::i64()), loc)}, loc),
          nullptr, loc));
      for (auto& d : dims) d.vectorizable = false;
    } else {
      Expr cur = ir::VarRef::make(acc, loc);
      Expr combined;
      if (name == "sum" || name == "mean" || name == "dot") {
        // Bool products add up as logical or, as NumPy's bool matmul does.
        combined = acc_type.is_bool() ? ir::Logical::make(ir::LogicalOp::Or, cur, value, loc)
                                      : ir::Binary::make(ir::BinaryOp::Add, cur, value, acc_type, false, loc);
        // A logical-or accumulation is no OpenMP reduction: keep it in order.
        if (acc_type.is_bool())
          for (auto& d : dims) d.vectorizable = false;
        for (auto& d : dims) d.op = ir::ReduceOp::Add;
      } else if (name == "prod") {
        combined = ir::Binary::make(ir::BinaryOp::Mul, cur, value, acc_type, false, loc);
        for (auto& d : dims) d.op = ir::ReduceOp::Mul;
      } else if (acc_type.is_float() && options_.target == Target::CPU) {
        // NaN must win, which neither a vector max instruction nor OpenMP's
        // combination of partial maxima promises. The vector loop takes the
        // maximum of the other elements (vmaxps) and counts the NaNs; when
        // there are any, the ordered loop below finds NumPy's answer.
        ir::Var v = temp_var(acc_type, loc);
        nans = temp_var(ScalarType::i32(), loc);
        Expr vv = ir::VarRef::make(v, loc), n = ir::VarRef::make(nans, loc);
        Expr is_nan = ir::Cast::make(
            ScalarType::i32(), ir::Call::make(ir::Intrinsic::IsNan, {vv}, ScalarType::b1(), false, loc), false, loc);
        group.push_back(ir::Assign::make(nans, ir::IntImm::make(0, ScalarType::i32(), loc), loc));
        update.push_back(ir::Assign::make(v, value, loc));
        combined = ir::Binary::make(is_max ? ir::BinaryOp::PyMax : ir::BinaryOp::PyMin, cur, vv, acc_type, false, loc);
        update.push_back(
            ir::Assign::make(nans, ir::Binary::make(ir::BinaryOp::Max, n, is_nan, ScalarType::i32(), false, loc), loc));
        for (auto& d : dims) d.op = is_max ? ir::ReduceOp::Max : ir::ReduceOp::Min;
      } else {
        combined = ir::Binary::make(is_max ? ir::BinaryOp::Max : ir::BinaryOp::Min, cur, value, acc_type, false, loc);
        for (auto& d : dims) d.op = is_max ? ir::ReduceOp::Max : ir::ReduceOp::Min;
        // NaN must win: the CUDA back end combines the partial maxima of
        // threads with the same NaN-propagating maximum (docs/cuda.md).
      }
      update.push_back(ir::Assign::make(acc, combined, loc));
    }
    // Schedules: the innermost reduction loop is vectorised; a reduction of
    // a whole array to one number also runs its outermost loop in parallel.
    for (size_t i = 0; i < dims.size(); ++i) {
      bool innermost = i + 1 == dims.size();
      bool outermost = i == 0;
      bool par = top_level_scalar && outermost && dims[i].vectorizable;
      bool vec = innermost && dims[i].vectorizable;
      dims[i].schedule.kind = par && vec ? ir::LoopKind::ParallelVectorized
                              : par      ? ir::LoopKind::Parallel
                              : vec      ? ir::LoopKind::Vectorized
                                         : ir::LoopKind::Serial;
      dims[i].schedule = apply_sliced_pragma(dims[i], dims[i].schedule, name);
      // auto_simd vectorises the innermost loop of an annotated statement:
      // here the innermost reduction loop (the reduce pragma already allows
      // the reassociation a vector reduction makes).
      if (options_.auto_simd && !sliced_pragmas_.empty() && innermost && dims[i].vectorizable &&
          !ir::is_vectorized(dims[i].schedule.kind))
        dims[i].schedule.kind =
            ir::is_parallel(dims[i].schedule.kind) ? ir::LoopKind::ParallelVectorized : ir::LoopKind::Vectorized;
    }
    std::vector<Stmt> nest = build_nest(dims, inner, update, sink);
    group.insert(group.end(), nest.begin(), nest.end());
    if (nans) {
      // NaNs were seen: the maximum in order, with NumPy's NaN rule, as a
      // serial nest of its own (what it hoists stays inside the if).
      std::vector<Expr> again;
      std::vector<LoopDim> ordered;
      reduced_dims(again, ordered);
      Sink ordered_inner, ordered_outer;
      Expr x = cast(src->element(again, ordered_inner), acc_type);
      Expr cur = ir::VarRef::make(acc, loc);
      Stmt combine = ir::Assign::make(
          acc, ir::Binary::make(is_max ? ir::BinaryOp::Max : ir::BinaryOp::Min, cur, x, acc_type, false, loc), loc);
      std::vector<Stmt> ordered_nest = build_nest(ordered, ordered_inner, {combine}, ordered_outer);
      std::vector<Stmt> redo = {ir::Assign::make(acc, identity(name, acc_type, loc), loc)};
      for (const auto& g : ordered_outer.groups) redo.insert(redo.end(), g.begin(), g.end());
      redo.insert(redo.end(), ordered_nest.begin(), ordered_nest.end());
      Expr seen = ir::Compare::make(ir::CompareOp::NE, ir::VarRef::make(nans, loc),
                                    ir::IntImm::make(0, ScalarType::i32(), loc), loc);
      group.push_back(ir::If::make(seen, ir::Block::make(redo, loc), nullptr, loc));
    }
    sink.groups.push_back(group);
    if (arg) return ir::VarRef::make(best_index, loc);
    Expr out = ir::VarRef::make(acc, loc);
    for (const auto& f : outside_factors) out = ir::Binary::make(ir::BinaryOp::Mul, f, out, acc_type, false, loc);
    if (name == "mean") {
      Expr n = ir::Cast::make(acc_type, count, false, loc);
      out = ir::Binary::make(ir::BinaryOp::Div, out, n, acc_type, false, loc);
    }
    return out;
  };
  if (top_level_scalar) {
    Sink sink;
    Expr e = r->element({}, sink);
    for (auto& g : sink.groups)
      for (auto& s : g) pending_.push_back(s);
    return Value::of(e);
  }
  return Value::of_tensor(r, loc);
}

Value Lowerer::matmul(const Value& a, const Value& b, SourceLoc loc) {
  TensorPtr x = to_tensor(a, loc), y = to_tensor(b, loc);
  if (x->rank() < 1 || x->rank() > 2 || y->rank() < 1 || y->rank() > 2)
    unsupported("matrix products need 1-D or 2-D operands", loc);
  Expr kx = x->shape[x->rank() - 1];
  Expr ky = y->shape[y->rank() == 1 ? 0 : 0];
  if (!same_expr(kx, ky) && !inferring_)
    pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, kx, ky, loc), PLAIT_VALUE_ERROR,
                                        "matmul: the inner dimensions of the operands differ", loc));
  // The product tensor has the output dimensions then k; summing over k
  // gives the result.
  auto p = std::make_shared<Tensor>();
  ScalarType t = binary(ast::BinOpKind::Mult, placeholder(x->type), placeholder(y->type), loc)->type.strong();
  p->type = t;
  p->reads = x->reads;
  p->reads.insert(p->reads.end(), y->reads.begin(), y->reads.end());
  for (auto& read : p->reads) read.node = nullptr;
  size_t xr = x->rank(), yr = y->rank();
  if (xr == 2) {
    p->shape.push_back(x->shape[0]);
    p->unit.push_back(x->unit[0]);
    p->labels.push_back(x->labels[0]);
  }
  if (yr == 2) {
    p->shape.push_back(y->shape[1]);
    p->unit.push_back(y->unit[1]);
    p->labels.push_back(y->labels[1]);
  }
  p->shape.push_back(kx);
  p->unit.push_back(false);
  p->labels.push_back(x->labels[xr - 1]);
  p->element = [this, x, y, xr, yr, loc](const std::vector<Expr>& idx, Sink& sink) {
    size_t n = 0;
    std::vector<Expr> xi, yi;
    if (xr == 2) xi.push_back(idx[n++]);
    Expr j = yr == 2 ? idx[n++] : nullptr;
    Expr k = idx[n];
    xi.push_back(k);
    yi.push_back(k);
    if (j) yi.push_back(j);
    return binary(ast::BinOpKind::Mult, x->element(xi, sink), y->element(yi, sink), loc);
  };
  return reduce_axes("dot", p, {static_cast<int>(p->rank() - 1)}, false, loc);
}

}  // namespace plait::lowering
