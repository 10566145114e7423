// Lowering: calls to Python's built-ins, math, NumPy and plait; array
// allocation (lowerer.h).
#include "frontend/array_lowering.h"
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

Expr Lowerer::unary_float(ir::Intrinsic fn, Expr x, bool python_math, SourceLoc loc) {
  ScalarType t;
  if (python_math)
    t = ScalarType::py_float();
  else
    t = x->type.is_float() && !x->type.weak ? x->type : ScalarType::f64();
  return ir::Call::make(fn, {cast(x, t)}, t, python_math, loc);
}

ScalarKind Lowerer::dtype_arg(const Value& v, SourceLoc loc) {
  if (v.kind == Value::Kind::DType) return v.dtype;
  if (v.kind == Value::Kind::Function) {
    if (v.name == "builtins.float") return ScalarKind::Float64;
    if (v.name == "builtins.int") return ScalarKind::Int64;
    if (v.name == "builtins.bool") return ScalarKind::Bool;
  }
  if (v.kind == Value::Kind::String) {
    static const std::map<std::string, ScalarKind> kNames = {
        {"float64", ScalarKind::Float64}, {"f8", ScalarKind::Float64},    {"float32", ScalarKind::Float32},
        {"f4", ScalarKind::Float32},      {"int64", ScalarKind::Int64},   {"i8", ScalarKind::Int64},
        {"int32", ScalarKind::Int32},     {"i4", ScalarKind::Int32},      {"bool", ScalarKind::Bool},
        {"int16", ScalarKind::Int16},     {"i2", ScalarKind::Int16},      {"int8", ScalarKind::Int8},
        {"i1", ScalarKind::Int8},         {"uint64", ScalarKind::UInt64}, {"u8", ScalarKind::UInt64},
        {"uint32", ScalarKind::UInt32},   {"u4", ScalarKind::UInt32},     {"uint16", ScalarKind::UInt16},
        {"u2", ScalarKind::UInt16},       {"uint8", ScalarKind::UInt8},   {"u1", ScalarKind::UInt8}};
    auto it = kNames.find(v.name);
    if (it != kNames.end()) return it->second;
  }
  type_error(
      "unsupported dtype; use one of numpy.bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
      "float32, float64 (or bool, int, float)",
      loc);
}

std::vector<Expr> Lowerer::shape_of(const Value& v, SourceLoc loc) {
  std::vector<Expr> dims;
  auto one = [&](const Value& x) {
    Expr e = as_scalar(x, "an array shape", x.loc.valid() ? x.loc : loc);
    if (!e->type.is_int()) type_error("array dimensions must be integers, got " + describe(e->type), x.loc);
    dims.push_back(cast(e, ScalarType::py_int()));
  };
  if (v.kind == Value::Kind::Tuple) {
    for (const auto& x : v.elems) one(x);
  } else {
    one(v);
  }
  if (dims.empty()) unsupported("0-dimensional arrays are not supported", loc);
  if (dims.size() > 4) unsupported("arrays have at most 4 dimensions", loc);
  return dims;
}

Value Lowerer::allocate(const std::string& fn, const ast::Call& c, ir::ArrayVar into) {
  bool like = fn.size() > 5 && fn.substr(fn.size() - 5) == "_like";
  std::string base = like ? fn.substr(0, fn.size() - 5) : fn;
  size_t needed = base == "full" ? 2 : 1;
  if (c.args.size() < needed || c.args.size() > needed + 1)
    type_error("numpy." + fn + "() takes " + std::to_string(needed) + " positional argument(s) (and dtype=)", c.loc);
  std::optional<ScalarKind> dtype;
  Layout order = Layout::C;
  std::vector<Expr> shape;
  std::optional<ArrayType> like_type;
  Value first = lower(*c.args[0]);
  if (like) {
    if (first.kind != Value::Kind::Array)
      type_error("numpy." + fn + "() needs an array as its first argument", c.args[0]->loc);
    like_type = first.array->type;
    for (int d = 0; d < first.array->type.ndim; ++d) shape.push_back(ir::ArrayDim::make(first.array, d, c.loc));
    dtype = first.array->type.dtype;
    if (first.array->type.layout == Layout::F) order = Layout::F;
  } else {
    shape = shape_of(first, c.args[0]->loc);
  }
  Expr fill_value;
  if (base == "full") {
    fill_value = scalar(*c.args[1], "the fill value");
    if (!like) dtype = fill_value->type.kind;
  }
  if (c.args.size() == needed + 1) dtype = dtype_arg(lower(*c.args[needed]), c.args[needed]->loc);
  for (const auto& kw : c.keywords) {
    if (kw.name == "dtype") {
      Value v = lower(*kw.value);
      if (v.kind != Value::Kind::None) dtype = dtype_arg(v, kw.loc);
    } else if (kw.name == "order") {
      Value v = lower(*kw.value);
      if (v.kind != Value::Kind::String || (v.name != "C" && v.name != "F"))
        unsupported("order= must be 'C' or 'F'", kw.loc);
      order = v.name == "C" ? Layout::C : Layout::F;
    } else if (kw.name == "fill_value" && base == "full") {
      unsupported("pass the fill value positionally", kw.loc);
    } else {
      type_error("numpy." + fn + "() got an unexpected keyword argument '" + kw.name + "'", kw.loc);
    }
  }
  ArrayType t;
  t.dtype = dtype.value_or(ScalarKind::Float64);
  t.ndim = static_cast<int>(shape.size());
  t.layout = t.ndim == 1 ? Layout::C : order;
  ir::FillKind fill = base == "empty"   ? ir::FillKind::Uninitialized
                      : base == "zeros" ? ir::FillKind::Zeros
                      : base == "ones"  ? ir::FillKind::Ones
                                        : ir::FillKind::Value;
  if (fill_value) fill_value = cast(fill_value, ScalarType{t.dtype, false}, true);
  ir::ArrayVar target = into ? into : temp_array(t, c.loc);
  std::vector<bool> units;
  for (const auto& e : shape) units.push_back(e->as<ir::IntImm>() && e->as<ir::IntImm>()->value == 1);
  if (!into) array_units_[target] = units;
  if (into && !inferring_ && (into->type.dtype != t.dtype || into->type.ndim != t.ndim))
    PLAIT_INTERNAL_ERROR("allocation type differs from the inferred type of " + into->name);
  pending_.push_back(ir::Allocate::make(target, shape, fill, fill_value, c.loc));
  return Value::of_array(target, c.loc);
}

Value Lowerer::call_builtin(const std::string& fn, const ast::Call& c, const std::vector<Value>& args) {
  auto want = [&](size_t lo, size_t hi) {
    if (args.size() < lo || args.size() > hi)
      type_error(fn + "() takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                     " argument(s), got " + std::to_string(args.size()),
                 c.loc);
  };
  if (!c.keywords.empty()) type_error(fn + "() takes no keyword arguments here", c.keywords[0].loc);
  if (fn == "len") {
    want(1, 1);
    if (args[0].kind == Value::Kind::Tuple)
      return Value::of(ir::IntImm::make(static_cast<int64_t>(args[0].elems.size()), ScalarType::py_int(), c.loc));
    if (args[0].kind == Value::Kind::List && args[0].list)
      return Value::of(ir::VarRef::make(args[0].list->length, c.loc));
    if (args[0].kind == Value::Kind::Dict && args[0].table)
      return Value::of(ir::VarRef::make(args[0].table->size, c.loc));
    if (args[0].kind != Value::Kind::Array) type_error("len() needs an array", c.loc);
    return Value::of(ir::ArrayDim::make(args[0].array, 0, c.loc));
  }
  if (fn == "float" && args.size() == 1 && args[0].kind == Value::Kind::String) {
    std::string s;
    for (char ch : args[0].name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    double v;
    if (s == "inf" || s == "+inf" || s == "infinity" || s == "+infinity")
      v = INFINITY;
    else if (s == "-inf" || s == "-infinity")
      v = -INFINITY;
    else if (s == "nan" || s == "+nan" || s == "-nan")
      v = NAN;
    else {
      try {
        size_t used = 0;
        v = std::stod(s, &used);
        if (used != s.size()) throw std::invalid_argument(s);
      } catch (const std::exception&) {
        fail(ErrorKind::Value, "could not convert string to float: '" + args[0].name + "'", c.args[0]->loc);
      }
    }
    return Value::of(ir::FloatImm::make(v, ScalarType::py_float(), c.loc));
  }
  if (fn == "pow") {
    // pow(a, b) is a ** b.
    if (args.size() == 3) unsupported("pow() with a modulus is not supported; write (a ** b) % m", c.loc);
    want(2, 2);
    if (is_array_like(args[0]) || is_array_like(args[1]))
      return tensor_binary(ast::BinOpKind::Pow, args[0], args[1], c.loc);
    return Value::of(binary(ast::BinOpKind::Pow, as_scalar(args[0], "pow()", c.args[0]->loc),
                            as_scalar(args[1], "pow()", c.args[1]->loc), c.loc));
  }
  std::vector<Expr> xs;
  for (size_t i = 0; i < args.size(); ++i) xs.push_back(as_scalar(args[i], (fn + "()").c_str(), c.args[i]->loc));
  // int(), float(), bool() and round() give Python numbers.
  if (fn == "int") {
    want(1, 1);
    return Value::of(with_weakness(cast(xs[0], ScalarType::py_int(), true), true));
  }
  if (fn == "float") {
    want(1, 1);
    return Value::of(with_weakness(cast(xs[0], ScalarType::py_float()), true));
  }
  if (fn == "bool") {
    want(1, 1);
    Expr t = truthy(xs[0], c.loc);
    return Value::of(with_weakness(cast(t, ScalarType::py_bool()), true));
  }
  if (fn == "abs") {
    want(1, 1);
    Expr x = xs[0];
    if (x->type.is_bool()) x = cast(x, ScalarType{ScalarKind::Int64, x->type.weak});
    return Value::of(
        ir::Call::make(x->type.is_float() ? ir::Intrinsic::Fabs : ir::Intrinsic::Abs, {x}, x->type, false, c.loc));
  }
  if (fn == "min" || fn == "max") {
    if (xs.size() < 2)
      unsupported(fn + "() of a single argument (an iterable) is not supported; pass two or more numbers", c.loc);
    ScalarType t = xs[0]->type;
    for (const auto& x : xs) t = promote(t, x->type);
    Expr acc = cast(xs[0], t);
    for (size_t i = 1; i < xs.size(); ++i)
      acc = ir::Binary::make(fn == "min" ? ir::BinaryOp::PyMin : ir::BinaryOp::PyMax, acc, cast(xs[i], t), t, false,
                             c.loc);
    return Value::of(acc);
  }
  if (fn == "round") {
    want(1, 1);
    Expr x = xs[0];
    if (!x->type.is_float()) return Value::of(with_weakness(cast(x, ScalarType::py_int()), true));
    Expr r = ir::Call::make(ir::Intrinsic::Round, {x}, x->type, false, c.loc);
    return Value::of(with_weakness(cast(r, ScalarType::py_int(), true), true));
  }
  if (fn == "range") unsupported("range() can only be used as the iterable of a for loop", c.loc);
  unsupported("the builtin " + fn + "() is not supported in kernels", c.loc);
}

Value Lowerer::call_math(const std::string& fn, const ast::Call& c, const std::vector<Value>& args) {
  static const std::map<std::string, ir::Intrinsic> kUnary = {
      {"sqrt", ir::Intrinsic::Sqrt},   {"exp", ir::Intrinsic::Exp},   {"log2", ir::Intrinsic::Log2},
      {"log10", ir::Intrinsic::Log10}, {"sin", ir::Intrinsic::Sin},   {"cos", ir::Intrinsic::Cos},
      {"tan", ir::Intrinsic::Tan},     {"tanh", ir::Intrinsic::Tanh}, {"asin", ir::Intrinsic::Asin},
      {"acos", ir::Intrinsic::Acos},   {"atan", ir::Intrinsic::Atan}, {"sinh", ir::Intrinsic::Sinh},
      {"cosh", ir::Intrinsic::Cosh},   {"fabs", ir::Intrinsic::Fabs}};
  if (!c.keywords.empty()) type_error("math." + fn + "() takes no keyword arguments", c.keywords[0].loc);
  std::vector<Expr> xs;
  for (size_t i = 0; i < args.size(); ++i)
    xs.push_back(as_scalar(args[i], ("math." + fn + "()").c_str(), c.args[i]->loc));
  auto want = [&](size_t n) {
    if (xs.size() != n) type_error("math." + fn + "() takes " + std::to_string(n) + " argument(s)", c.loc);
  };
  auto it = kUnary.find(fn);
  if (it != kUnary.end()) {
    want(1);
    return Value::of(unary_float(it->second, xs[0], true, c.loc));
  }
  if (fn == "log") {
    if (xs.size() == 1) return Value::of(unary_float(ir::Intrinsic::Log, xs[0], true, c.loc));
    want(2);
    Expr num = unary_float(ir::Intrinsic::Log, xs[0], true, c.loc);
    Expr den = unary_float(ir::Intrinsic::Log, xs[1], true, c.loc);
    return Value::of(ir::Binary::make(ir::BinaryOp::Div, num, den, ScalarType::py_float(), true, c.loc));
  }
  if (fn == "floor" || fn == "ceil" || fn == "trunc") {
    want(1);
    if (!xs[0]->type.is_float()) return Value::of(with_weakness(cast(xs[0], ScalarType::py_int()), true));
    ir::Intrinsic k = fn == "floor" ? ir::Intrinsic::Floor : fn == "ceil" ? ir::Intrinsic::Ceil : ir::Intrinsic::Trunc;
    Expr r = ir::Call::make(k, {cast(xs[0], ScalarType::py_float())}, ScalarType::py_float(), false, c.loc);
    return Value::of(cast(r, ScalarType::py_int(), true));
  }
  if (fn == "pow" || fn == "atan2") {
    want(2);
    ScalarType f = ScalarType::py_float();
    return Value::of(ir::Call::make(fn == "pow" ? ir::Intrinsic::Pow : ir::Intrinsic::Atan2,
                                    {cast(xs[0], f), cast(xs[1], f)}, f, true, c.loc));
  }
  if (fn == "isnan" || fn == "isinf" || fn == "isfinite") {
    want(1);
    ir::Intrinsic k = fn == "isnan"   ? ir::Intrinsic::IsNan
                      : fn == "isinf" ? ir::Intrinsic::IsInf
                                      : ir::Intrinsic::IsFinite;
    return Value::of(ir::Call::make(k, {cast(xs[0], ScalarType::py_float())}, ScalarType::py_bool(), false, c.loc));
  }
  unsupported("math." + fn + "() is not supported in kernels", c.loc);
}

Value Lowerer::call_numpy(const std::string& fn, const ast::Call& c, const std::vector<Value>& args) {
  static const std::map<std::string, ir::Intrinsic> kFloatUnary = {
      {"sqrt", ir::Intrinsic::Sqrt},   {"exp", ir::Intrinsic::Exp},     {"log", ir::Intrinsic::Log},
      {"log2", ir::Intrinsic::Log2},   {"log10", ir::Intrinsic::Log10}, {"sin", ir::Intrinsic::Sin},
      {"cos", ir::Intrinsic::Cos},     {"tan", ir::Intrinsic::Tan},     {"tanh", ir::Intrinsic::Tanh},
      {"arcsin", ir::Intrinsic::Asin}, {"arccos", ir::Intrinsic::Acos}, {"arctan", ir::Intrinsic::Atan},
      {"sinh", ir::Intrinsic::Sinh},   {"cosh", ir::Intrinsic::Cosh},   {"fabs", ir::Intrinsic::Fabs}};
  if (!c.keywords.empty()) type_error("numpy." + fn + "() takes no keyword arguments here", c.keywords[0].loc);
  std::vector<Expr> xs;
  for (size_t i = 0; i < args.size(); ++i)
    xs.push_back(as_scalar(args[i], ("numpy." + fn + "()").c_str(), c.args[i]->loc));
  auto want = [&](size_t n) {
    if (xs.size() != n) type_error("numpy." + fn + "() takes " + std::to_string(n) + " argument(s)", c.loc);
  };
  // NumPy functions of scalars return NumPy scalars: the result is strong.
  auto strong = [](ScalarType t) { return t.strong(); };
  auto it = kFloatUnary.find(fn);
  if (it != kFloatUnary.end()) {
    want(1);
    return Value::of(unary_float(it->second, xs[0], false, c.loc));
  }
  if (fn == "floor" || fn == "ceil" || fn == "trunc" || fn == "round" || fn == "around" || fn == "rint") {
    want(1);
    ScalarType t = strong(xs[0]->type.is_bool() ? ScalarType::b1() : xs[0]->type);
    if (!t.is_float() && fn == "rint") t = ScalarType::f64();  // np.rint of integers is float64
    if (!t.is_float()) return Value::of(cast(xs[0], t));
    ir::Intrinsic k = fn == "floor"   ? ir::Intrinsic::Floor
                      : fn == "ceil"  ? ir::Intrinsic::Ceil
                      : fn == "trunc" ? ir::Intrinsic::Trunc
                                      : ir::Intrinsic::Round;
    return Value::of(ir::Call::make(k, {cast(xs[0], t)}, t, false, c.loc));
  }
  if (fn == "abs" || fn == "absolute") {
    want(1);
    ScalarType t = strong(xs[0]->type);
    if (t.is_bool()) return Value::of(cast(xs[0], t));
    return Value::of(
        ir::Call::make(t.is_float() ? ir::Intrinsic::Fabs : ir::Intrinsic::Abs, {cast(xs[0], t)}, t, false, c.loc));
  }
  if (fn == "negative" || fn == "positive") {
    want(1);
    ScalarType t = strong(xs[0]->type);
    // NumPy has no loop of either for bools (TypeError).
    if (t.is_bool()) type_error("numpy." + fn + "() of a bool is not supported; use ~ or np.logical_not", c.loc);
    // A NumPy scalar (strong), also of a Python number.
    Expr x = with_weakness(cast(xs[0], t), false);
    if (fn == "positive") return Value::of(x);
    return Value::of(ir::Unary::make(ir::UnaryOp::Neg, x, c.loc));
  }
  if (fn == "isnan" || fn == "isinf" || fn == "isfinite") {
    want(1);
    if (!xs[0]->type.is_float())
      return Value::of(ir::Cast::make(ScalarType::b1(), ir::BoolImm::make(fn == "isfinite", c.loc), false, c.loc));
    ir::Intrinsic k = fn == "isnan"   ? ir::Intrinsic::IsNan
                      : fn == "isinf" ? ir::Intrinsic::IsInf
                                      : ir::Intrinsic::IsFinite;
    return Value::of(ir::Call::make(k, {xs[0]}, ScalarType::b1(), false, c.loc));
  }
  if (fn == "minimum" || fn == "maximum" || fn == "fmin" || fn == "fmax") {
    want(2);
    if (fn == "fmin" || fn == "fmax") unsupported("numpy." + fn + "() is not supported; use minimum/maximum", c.loc);
    ScalarType t = strong(promote(xs[0]->type, xs[1]->type));
    return Value::of(ir::Binary::make(fn == "minimum" ? ir::BinaryOp::Min : ir::BinaryOp::Max, cast(xs[0], t),
                                      cast(xs[1], t), t, false, c.loc));
  }
  if (fn == "power") {
    want(2);
    // NumPy takes Python ints as int64, whose negative powers raise (where
    // the operator ** of Python ints gives a float).
    if (xs[0]->type.weak && xs[1]->type.weak && !xs[0]->type.is_float() && !xs[1]->type.is_float())
      return Value::of(ir::Binary::make(ir::BinaryOp::Pow, cast(xs[0], ScalarType::i64()),
                                        cast(xs[1], ScalarType::i64()), ScalarType::i64(), false, c.loc));
    Expr p = binary(ast::BinOpKind::Pow, xs[0], xs[1], c.loc);
    auto b = p->as<ir::Binary>();
    return Value::of(ir::Binary::make(b->op, cast(b->a, strong(b->type)), cast(b->b, strong(b->type)), strong(b->type),
                                      false, c.loc));
  }
  if (fn == "arctan2") {
    want(2);
    ScalarType t = strong(promote(xs[0]->type, xs[1]->type));
    if (!t.is_float()) t = ScalarType::f64();
    return Value::of(ir::Call::make(ir::Intrinsic::Atan2, {cast(xs[0], t), cast(xs[1], t)}, t, false, c.loc));
  }
  if (fn == "sign") {
    want(1);
    ScalarType t = strong(xs[0]->type);
    if (t.is_bool()) type_error("numpy.sign() of a bool is not supported (NumPy has no loop for bools)", c.loc);
    Expr x = cast(xs[0], t);
    auto constant = [&](int v) {
      return t.is_float() ? ir::FloatImm::make(v, t, c.loc) : ir::IntImm::make(v, t, c.loc);
    };
    auto is = [&](ir::CompareOp op) { return ir::Compare::make(op, x, constant(0), c.loc); };
    // -1, 0 or 1; a float's zeros give +0.0 and NaN gives NaN, as NumPy's.
    Expr rest = !t.is_float() ? constant(0) : ir::Select::make(is(ir::CompareOp::EQ), constant(0), x, c.loc);
    if (!t.is_unsigned()) rest = ir::Select::make(is(ir::CompareOp::LT), constant(-1), rest, c.loc);
    return Value::of(ir::Select::make(is(ir::CompareOp::GT), constant(1), rest, c.loc));
  }
  if (fn == "where") {
    want(3);
    ScalarType t = strong(promote(xs[1]->type, xs[2]->type));
    return Value::of(ir::Select::make(truthy(xs[0], c.loc), cast(xs[1], t), cast(xs[2], t), c.loc));
  }
  unsupported("numpy." + fn + "() is not supported in kernels", c.loc);
}

Value Lowerer::lower_call(const ast::Call& c, ir::ArrayVar into) {
  if (involves_sparse(c)) {
    Value v = lower_algebra(c);
    return v.kind == Value::Kind::Algebra && !v.algebra->sparse() ? realize(v, c.loc) : v;
  }
  Value callee = lower(*c.func);
  if (callee.kind == Value::Kind::DType) {
    // np.float32(x) and friends: a conversion to a NumPy scalar.
    if (c.args.size() != 1 || !c.keywords.empty())
      type_error(std::string("numpy.") + numpy_dtype_name(callee.dtype) + "() takes one argument", c.loc);
    Value xv = lower(*c.args[0]);
    ScalarType t{callee.dtype, false};
    if (is_array_like(xv))
      return elementwise(
          {xv},
          [this, t, &c](const std::vector<Expr>& e) {
            return t.is_bool() ? cast(truthy(e[0], c.loc), t) : cast(e[0], t);
          },
          c.loc);
    Expr x = as_scalar(xv, "a conversion", c.args[0]->loc);
    if (t.is_bool()) return Value::of(with_weakness(cast(truthy(x, c.loc), t), false));
    // np.uint8(-1) raises as NumPy 2 does; a NumPy value converts with
    // wrap-around. NumPy floats convert with NumPy's results (no error: NaN
    // and values out of range give the type's least value); a Python float
    // to int32 or int64 goes through int(), whose NaN, infinities and
    // out-of-range values raise.
    x = fit_python_int(x, t);
    const bool via_int = x->type.weak && (t.kind == ScalarKind::Int32 || t.kind == ScalarKind::Int64);
    return Value::of(with_weakness(cast(x, t, via_int), false));
  }
  if (callee.kind != Value::Kind::Function)
    type_error(std::string(value_kind_name(callee.kind)) + " is not callable", c.func->loc);
  const std::string& name = callee.name;
  size_t dot = name.find('.');
  std::string mod = name.substr(0, dot);
  std::string fn = dot == std::string::npos ? "" : name.substr(dot + 1);
  if (mod == "numpy") {
    static const std::set<std::string> kAlloc = {"empty",      "zeros",      "ones",      "full",
                                                 "empty_like", "zeros_like", "ones_like", "full_like"};
    if (kAlloc.count(fn)) return allocate(fn, c, into);
  }
  if (name == "plait.prange") unsupported("plait.prange() can only be used as the iterable of a for loop", c.loc);
  if (name == "plait.vidx") unsupported("plait.vidx() can only be used as an array subscript", c.loc);
  if (mod == "method") {
    for (const auto& a : c.args)
      if (a->kind == ast::ExprKind::Slice) unsupported("slices are only allowed inside [ ]", a->loc);
    return call_array_method(fn, callee.elems[0], c);
  }
  if (mod == "list") return call_list_method(fn, callee.elems[0], c);
  if (mod == "table") return call_table_method(fn, callee.elems[0], c);
  if (name == "builtins.dict" || name == "builtins.set") return table_display(fn, c);
  if (mod == "heapq") return call_heapq(fn, c);
  if (name == "builtins.list") {
    // list(L): a copy of a list.
    if (c.args.size() != 1 || !c.keywords.empty()) type_error("list() takes one argument here", c.loc);
    Value source = lower(*c.args[0]);
    if (source.kind != Value::Kind::List || !source.list)
      unsupported("list() makes a copy of a list here; lists of other values are not supported", c.args[0]->loc);
    source.name = "copy";
    return source;
  }
  if (name == "numpy.einsum") return einsum(c);
  if (mod == "numpy")
    if (std::optional<Value> v = numpy_library(fn, c, nullptr)) return *v;
  std::vector<Value> args;
  bool any_array = false;
  for (const auto& a : c.args) {
    if (a->kind == ast::ExprKind::Slice) unsupported("slices are only allowed inside [ ]", a->loc);
    args.push_back(lower(*a));
    any_array = any_array || is_array_like(args.back());
  }
  if (mod == "numpy") {
    Value out;
    if (call_numpy_array(fn, c, args, &out)) return out;
  }
  if (mod == "builtins" && any_array) {
    if (fn == "len") return call_builtin(fn, c, args);
    if (fn == "abs") {
      Value out;
      call_numpy_array("abs", c, args, &out);  // abs() of an array is np.abs
      return out;
    }
    unsupported(fn + "() of an array is not supported; use the numpy function", c.loc);
  }
  if (mod == "builtins") return call_builtin(fn, c, args);
  if (mod == "math") return call_math(fn, c, args);
  if (mod == "numpy") return call_numpy(fn, c, args);
  unsupported(name + "() is not supported in kernels", c.loc);
}

bool Lowerer::call_numpy_array(const std::string& fn, const ast::Call& c, const std::vector<Value>& args, Value* out) {
  static const std::set<std::string> kReductions = {"sum",  "prod", "max",    "min",   "amax",
                                                    "amin", "mean", "argmax", "argmin"};
  bool any_array = false;
  for (const auto& a : args) any_array = any_array || is_array_like(a);
  if (fn == "add.at") {
    scatter_add(c, args);
    out->kind = Value::Kind::None;
    out->loc = c.loc;
    return true;
  }
  if (fn == "bincount") {
    *out = bincount(c, args);
    return true;
  }
  if (kReductions.count(fn)) {
    if (args.empty()) type_error("numpy." + fn + "() needs an array", c.loc);
    std::string name = fn == "amax" ? "max" : fn == "amin" ? "min" : fn;
    if (!is_array_like(args[0])) return false;
    *out = reduce(name, args[0], c, 1);
    return true;
  }
  static const std::map<std::string, ast::BinOpKind> kOuter = {{"add.outer", ast::BinOpKind::Add},
                                                               {"subtract.outer", ast::BinOpKind::Sub},
                                                               {"multiply.outer", ast::BinOpKind::Mult}};
  if (fn == "outer" || kOuter.count(fn)) {
    if (args.size() != 2) type_error("numpy." + fn + "() takes two arrays", c.loc);
    TensorPtr a = to_tensor(args[0], c.loc), b = to_tensor(args[1], c.loc);
    if (a->rank() != 1 || b->rank() != 1) unsupported("numpy." + fn + "() of arrays that are not 1-D", c.loc);
    // a as a column (n, 1) and b as a row (1, m), then broadcast.
    auto column = std::make_shared<Tensor>(*a);
    column->shape.push_back(int_imm(1, c.loc));
    column->unit.push_back(true);
    column->labels.push_back("");
    column->element = [a](const std::vector<Expr>& idx, Sink& sink) { return a->element({idx[0]}, sink); };
    column->array = nullptr;
    auto row = std::make_shared<Tensor>(*b);
    row->shape.insert(row->shape.begin(), int_imm(1, c.loc));
    row->unit.insert(row->unit.begin(), true);
    row->labels.insert(row->labels.begin(), "");
    row->element = [b](const std::vector<Expr>& idx, Sink& sink) { return b->element({idx[1]}, sink); };
    row->array = nullptr;
    *out = tensor_binary(fn == "outer" ? ast::BinOpKind::Mult : kOuter.at(fn), Value::of_tensor(column, c.loc),
                         Value::of_tensor(row, c.loc), c.loc);
    return true;
  }
  if (fn == "dot" || fn == "matmul") {
    if (args.size() != 2) type_error("numpy." + fn + "() takes two arrays", c.loc);
    *out = matmul(args[0], args[1], c.loc);
    return true;
  }
  if (fn == "transpose") {
    if (args.size() != 1) unsupported("numpy.transpose() with axes is not supported", c.loc);
    *out = transpose(args[0], c.loc);
    return true;
  }
  if (fn == "copy") {
    if (args.size() != 1) type_error("numpy.copy() takes one array", c.loc);
    TensorPtr t = to_tensor(args[0], c.loc);
    auto copy = std::make_shared<Tensor>(*t);
    copy->array = nullptr;  // a new array, not a view
    *out = Value::of_tensor(copy, c.loc);
    return true;
  }
  if (!any_array) return false;
  // Elementwise NumPy functions of arrays: the scalar rule applied per element.
  *out = elementwise(
      args,
      [this, fn, &c](const std::vector<Expr>& e) {
        std::vector<Value> scalars;
        for (const auto& x : e) scalars.push_back(Value::of(x));
        Value v = call_numpy(fn, c, scalars);
        return as_scalar(v, "an elementwise function", c.loc);
      },
      c.loc);
  // The closure above refers to `c`, which lives as long as the syntax tree.
  return true;
}

Value Lowerer::call_array_method(const std::string& method, const Value& self, const ast::Call& c) {
  if (std::optional<Value> v = numpy_library(method, c, &self)) return *v;
  static const std::set<std::string> kReductions = {"sum", "prod", "max", "min", "mean", "argmax", "argmin"};
  if (kReductions.count(method)) return reduce(method, self, c, 0);
  if (method == "copy") {
    TensorPtr t = to_tensor(self, c.loc);
    auto copy = std::make_shared<Tensor>(*t);
    copy->array = nullptr;
    return Value::of_tensor(copy, c.loc);
  }
  if (method == "astype") {
    if (c.args.size() != 1) type_error("astype() takes a dtype", c.loc);
    ScalarKind k = dtype_arg(lower(*c.args[0]), c.args[0]->loc);
    ScalarType t{k, false};
    return elementwise(
        {self},
        [this, t, &c](const std::vector<Expr>& e) {
          return t.is_bool() ? cast(truthy(e[0], c.loc), t) : cast(e[0], t);
        },
        c.loc);
  }
  if (method == "transpose") return transpose(self, c.loc);
  unsupported("the array method ." + method + "() is not supported", c.loc);
}

}  // namespace plait::lowering
