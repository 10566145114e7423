// The typed, target-neutral IR.
//
// Expressions are scalar-valued and side-effect free (apart from run-time
// error reports such as a failed bounds check); statements are structured
// (no goto). Parallel loops, vector loops, reductions and atomics are explicit
// constructs so that each back end maps them to its own machinery (OpenMP on
// the CPU, thread blocks and lanes on CUDA). Nodes are immutable and shared;
// passes rebuild what they change through IRMutator.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/types.h"
#include "support/diagnostics.h"

namespace plait::ir {

// ---------------------------------------------------------------- variables

// A number for each VarInfo and ArrayInfo made, in the order they are made
// (a copy is a new one); InfoOrder orders sets and maps of them by it.
uint64_t next_info_id();

// A scalar local or scalar parameter. Identity is the pointer: two VarInfo
// with the same name are different variables (the lowering gives each Python
// name one VarInfo per function).
struct VarInfo {
  VarInfo() = default;
  VarInfo(std::string n, ScalarType t, SourceLoc l, bool param)
      : name(std::move(n)), type(t), loc(l), is_param(param) {}
  VarInfo(const VarInfo& other) : name(other.name), type(other.type), loc(other.loc), is_param(other.is_param) {}
  VarInfo& operator=(const VarInfo&) = delete;
  std::string name;
  ScalarType type;
  SourceLoc loc;  // first definition
  bool is_param = false;
  const uint64_t id = next_info_id();
};
using Var = std::shared_ptr<VarInfo>;

// An array: a parameter, an allocation, or a local bound to another array.
struct ArrayInfo {
  ArrayInfo() = default;
  ArrayInfo(std::string n, ArrayType t, SourceLoc l, bool param)
      : name(std::move(n)), type(t), loc(l), is_param(param) {}
  ArrayInfo(const ArrayInfo& other)
      : name(other.name),
        type(other.type),
        loc(other.loc),
        is_param(other.is_param),
        nonnegative(other.nonnegative),
        indices_in_range(other.indices_in_range) {}
  ArrayInfo& operator=(const ArrayInfo&) = delete;
  std::string name;
  ArrayType type;
  SourceLoc loc;
  bool is_param = false;
  // Its elements are never negative: a sparse matrix's index arrays, as
  // SciPy's format has them. An index read from it needs no wrap-around; one
  // out of range still meets the bounds checks.
  bool nonnegative = false;
  // Every index into it is in range by construction: a list's storage,
  // whose accesses the front end checks against the list's length (Python's
  // IndexError) or makes in range (a heap's positions, copies). Neither
  // normalize_indices nor insert_bounds_checks touches its accesses.
  bool indices_in_range = false;
  const uint64_t id = next_info_id();
};
using ArrayVar = std::shared_ptr<ArrayInfo>;

// Variables and arrays in the order they were made, for the sets and maps
// whose order decides what the compiler emits: their pointers' order would
// make the generated text, and with it the disk cache's key, depend on
// where the heap put them.
struct InfoOrder {
  template <typename Info>
  bool operator()(const Info* a, const Info* b) const {
    return (a ? a->id : 0) < (b ? b->id : 0);
  }
};
using VarSet = std::set<const VarInfo*, InfoOrder>;
using ArraySet = std::set<const ArrayInfo*, InfoOrder>;
template <typename Value>
using VarMap = std::map<const VarInfo*, Value, InfoOrder>;
template <typename Value>
using ArrayMap = std::map<const ArrayInfo*, Value, InfoOrder>;

// ---------------------------------------------------------------- node kinds

enum class NodeKind : uint8_t {
#define PLAIT_EXPR_NODE(n) n,
#define PLAIT_STMT_NODE(n) n,
#include "ir/ir_nodes.def"
};
const char* node_kind_name(NodeKind k);

struct ExprNode {
  ExprNode(NodeKind k, ScalarType t, SourceLoc l) : kind(k), type(t), loc(l) {}
  virtual ~ExprNode() = default;
  NodeKind kind;
  ScalarType type;
  SourceLoc loc;
  template <typename T> const T* as() const { return kind == T::kKind ? static_cast<const T*>(this) : nullptr; }
};
using Expr = std::shared_ptr<const ExprNode>;

struct StmtNode {
  StmtNode(NodeKind k, SourceLoc l) : kind(k), loc(l) {}
  virtual ~StmtNode() = default;
  NodeKind kind;
  SourceLoc loc;
  template <typename T> const T* as() const { return kind == T::kKind ? static_cast<const T*>(this) : nullptr; }
};
using Stmt = std::shared_ptr<const StmtNode>;

// ---------------------------------------------------------------- expressions

struct IntImm : ExprNode {
  static constexpr NodeKind kKind = NodeKind::IntImm;
  IntImm(int64_t v, ScalarType t, SourceLoc l) : ExprNode(kKind, t, l), value(v) {}
  int64_t value;
  static Expr make(int64_t v, ScalarType t = ScalarType::py_int(), SourceLoc l = {});
};

struct FloatImm : ExprNode {
  static constexpr NodeKind kKind = NodeKind::FloatImm;
  FloatImm(double v, ScalarType t, SourceLoc l) : ExprNode(kKind, t, l), value(v) {}
  double value;
  static Expr make(double v, ScalarType t = ScalarType::py_float(), SourceLoc l = {});
};

// Whether e is a literal zero, int or float.
bool is_zero(const Expr& e);

struct BoolImm : ExprNode {
  static constexpr NodeKind kKind = NodeKind::BoolImm;
  BoolImm(bool v, ScalarType t, SourceLoc l) : ExprNode(kKind, t, l), value(v) {}
  bool value;
  static Expr make(bool v, SourceLoc l = {});
};

struct VarRef : ExprNode {
  static constexpr NodeKind kKind = NodeKind::VarRef;
  VarRef(Var v, SourceLoc l) : ExprNode(kKind, v->type, l), var(std::move(v)) {}
  Var var;
  static Expr make(Var v, SourceLoc l = {});
};

// Conversion to `type`. Float to int truncates toward zero (Python int(),
// NumPy astype); `checked` makes NaN or out-of-range values a run-time
// ValueError/OverflowError as Python's int() does.
struct Cast : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Cast;
  Cast(ScalarType t, Expr v, bool c, SourceLoc l) : ExprNode(kKind, t, l), value(std::move(v)), checked(c) {}
  Expr value;
  bool checked;
  static Expr make(ScalarType t, Expr v, bool checked = false, SourceLoc l = {});
};

enum class UnaryOp : uint8_t { Neg, Not, BitNot };
const char* unary_op_name(UnaryOp op);

struct Unary : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Unary;
  Unary(UnaryOp o, Expr v, ScalarType t, SourceLoc l) : ExprNode(kKind, t, l), op(o), a(std::move(v)) {}
  UnaryOp op;
  Expr a;
  static Expr make(UnaryOp op, Expr a, SourceLoc l = {});  // type of a (bool for Not)
};

// Operands already have the result type (the lowering inserts Casts), except
// Shl/Shr whose right operand may be any int. Semantics are Python's/NumPy's:
// FloorDiv and Mod round toward negative infinity (Mod takes the sign of the
// divisor), Div is true division (float operands), Pow of ints is an integer
// power. Min/Max propagate NaN (np.minimum/np.maximum); PyMin/PyMax are the
// builtins: PyMax(a, b) = b > a ? b : a.
enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, FloorDiv, Mod, Pow,
  BitAnd, BitOr, BitXor, Shl, Shr,
  Min, Max, PyMin, PyMax,
};
const char* binary_op_name(BinaryOp op);

struct Binary : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Binary;
  Binary(BinaryOp o, Expr x, Expr y, ScalarType t, bool zc, SourceLoc l)
      : ExprNode(kKind, t, l), op(o), a(std::move(x)), b(std::move(y)), zero_check(zc) {}
  BinaryOp op;
  Expr a, b;
  // Div/FloorDiv/Mod/Pow on Python scalars: a zero divisor (or 0 ** negative)
  // raises ZeroDivisionError as Python does, instead of NumPy's inf/0. On an
  // int Pow it marks a power of Python ints, whose negative exponent raises
  // a ValueError that says how to get Python's float result.
  bool zero_check;
  static Expr make(BinaryOp op, Expr a, Expr b, ScalarType t, bool zero_check = false, SourceLoc l = {});
};

enum class CompareOp : uint8_t { EQ, NE, LT, LE, GT, GE };
const char* compare_op_name(CompareOp op);

// Operands have one common type; the result is bool.
struct Compare : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Compare;
  Compare(CompareOp o, Expr x, Expr y, ScalarType t, SourceLoc l) : ExprNode(kKind, t, l), op(o), a(std::move(x)), b(std::move(y)) {}
  CompareOp op;
  Expr a, b;
  static Expr make(CompareOp op, Expr a, Expr b, SourceLoc l = {});
};

enum class LogicalOp : uint8_t { And, Or };

// Short-circuit boolean and/or on bool operands (b is evaluated only when needed).
struct Logical : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Logical;
  Logical(LogicalOp o, Expr x, Expr y, ScalarType t, SourceLoc l) : ExprNode(kKind, t, l), op(o), a(std::move(x)), b(std::move(y)) {}
  LogicalOp op;
  Expr a, b;
  static Expr make(LogicalOp op, Expr a, Expr b, SourceLoc l = {});
};

// cond ? t : f, evaluating only the chosen side. t and f have the result type.
struct Select : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Select;
  Select(Expr c, Expr x, Expr y, ScalarType t, SourceLoc l)
      : ExprNode(kKind, t, l), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {}
  Expr cond, t, f;
  static Expr make(Expr cond, Expr t, Expr f, SourceLoc l = {});
};

// Elementwise math. Arguments have the call's computation type; IsNan/IsInf
// return bool; Round is round-half-to-even (Python round, np.round).
enum class Intrinsic : uint8_t {
  Sqrt, Exp, Log, Log2, Log10, Sin, Cos, Tan, Tanh, Asin, Acos, Atan, Atan2,
  Sinh, Cosh, Floor, Ceil, Trunc, Fabs, Abs, Round, Pow, IsNan, IsInf, IsFinite,
};
const char* intrinsic_name(Intrinsic fn);

struct Call : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Call;
  Call(Intrinsic f, std::vector<Expr> a, ScalarType t, bool pm, SourceLoc l)
      : ExprNode(kKind, t, l), fn(f), args(std::move(a)), python_math(pm) {}
  Intrinsic fn;
  std::vector<Expr> args;
  // math.* semantics: a NaN result from non-NaN arguments raises ValueError
  // ("math domain error"), an infinite result from finite arguments raises
  // OverflowError. np.* functions return NaN/inf instead.
  bool python_math;
  static Expr make(Intrinsic fn, std::vector<Expr> args, ScalarType t, bool python_math = false, SourceLoc l = {});
};

// An element of an array. Indices are int64 and already in range [0, dim)
// when `checked` is false; the lowering wraps negative indices
// (transforms/normalize_indices) and, when bounds checking is on, marks the
// access checked so that an out-of-range index raises IndexError.
struct Load : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Load;
  Load(ArrayVar a, std::vector<Expr> i, bool c, SourceLoc l)
      : ExprNode(kKind, ScalarType{a->type.dtype, false}, l), array(std::move(a)), indices(std::move(i)), checked(c) {}
  ArrayVar array;
  std::vector<Expr> indices;
  bool checked;
  static Expr make(ArrayVar a, std::vector<Expr> indices, bool checked = false, SourceLoc l = {});
};

// The extent of dimension `dim` of an array (int64, weak: A.shape[k] is a Python int).
struct ArrayDim : ExprNode {
  static constexpr NodeKind kKind = NodeKind::ArrayDim;
  ArrayDim(ArrayVar a, int d, SourceLoc l) : ExprNode(kKind, ScalarType::py_int(), l), array(std::move(a)), dim(d) {}
  ArrayVar array;
  int dim;
  static Expr make(ArrayVar a, int dim, SourceLoc l = {});
};

// Whether two arrays' elements share memory at run time (bool): the bytes
// each reaches from its data pointer through its extents and strides
// intersect, neither array being empty. With `unless_same_view`, two arrays
// that are the same view (one data pointer, dtype, extents and strides, a
// stride counting only where its extent exceeds 1) do not count: a statement
// that reads one at the elements it writes in the other needs no copy then.
// The lowering versions array statements on it (lower_array_exprs.cpp).
struct ArraysOverlap : ExprNode {
  static constexpr NodeKind kKind = NodeKind::ArraysOverlap;
  ArraysOverlap(ArrayVar x, ArrayVar y, bool u, SourceLoc l)
      : ExprNode(kKind, ScalarType::b1(), l), a(std::move(x)), b(std::move(y)), unless_same_view(u) {}
  ArrayVar a, b;
  bool unless_same_view;
  static Expr make(ArrayVar a, ArrayVar b, bool unless_same_view, SourceLoc l = {});
};

// ---------------------------------------------------------------- statements

struct Block : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Block;
  Block(std::vector<Stmt> s, SourceLoc l) : StmtNode(kKind, l), stmts(std::move(s)) {}
  std::vector<Stmt> stmts;
  static Stmt make(std::vector<Stmt> stmts, SourceLoc l = {});
};

// The statements of a body: a Block's, or the one statement (none for null).
std::vector<Stmt> statements_of(const Stmt& body);
// Whether `s` is a loop whose iterations run in parallel.
bool is_parallel_loop(const Stmt& s);

// Declares a local (a scalar `var` or an `array`; exactly one is set) for
// the rest of the enclosing Block. Placed by transforms/place_declarations: a
// local declared inside a parallel loop's body is private to each iteration.
// Array parameters are never declared; scalar parameters neither.
struct Declare : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Declare;
  Declare(Var v, ArrayVar a, SourceLoc l) : StmtNode(kKind, l), var(std::move(v)), array(std::move(a)) {}
  Var var;
  ArrayVar array;
  static Stmt make(Var v, SourceLoc l = {});
  static Stmt make(ArrayVar a, SourceLoc l = {});
};

struct Assign : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Assign;
  Assign(Var v, Expr e, SourceLoc l) : StmtNode(kKind, l), var(std::move(v)), value(std::move(e)) {}
  Var var;
  Expr value;  // has var's type
  static Stmt make(Var v, Expr value, SourceLoc l = {});
};

struct Store : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Store;
  Store(ArrayVar a, std::vector<Expr> i, Expr v, bool c, SourceLoc l)
      : StmtNode(kKind, l), array(std::move(a)), indices(std::move(i)), value(std::move(v)), checked(c) {}
  ArrayVar array;
  std::vector<Expr> indices;
  Expr value;  // has the array's dtype
  bool checked;
  static Stmt make(ArrayVar a, std::vector<Expr> indices, Expr value, bool checked = false, SourceLoc l = {});
};

enum class AtomicOp : uint8_t { Add, Sub, Mul, Div, Min, Max, BitAnd, BitOr, BitXor };
const char* atomic_op_name(AtomicOp op);

// array[indices] = array[indices] op value, as one indivisible update
// (`#pragma atomic`). value has the array's dtype.
struct AtomicUpdate : StmtNode {
  static constexpr NodeKind kKind = NodeKind::AtomicUpdate;
  AtomicUpdate(ArrayVar a, std::vector<Expr> i, AtomicOp o, Expr v, bool c, SourceLoc l)
      : StmtNode(kKind, l), array(std::move(a)), indices(std::move(i)), op(o), value(std::move(v)), checked(c) {}
  ArrayVar array;
  std::vector<Expr> indices;
  AtomicOp op;
  Expr value;
  bool checked;
  static Stmt make(ArrayVar a, std::vector<Expr> indices, AtomicOp op, Expr value, bool checked = false, SourceLoc l = {});
};

struct If : StmtNode {
  static constexpr NodeKind kKind = NodeKind::If;
  If(Expr c, Stmt t, Stmt e, SourceLoc l) : StmtNode(kKind, l), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  Expr cond;
  Stmt then_case;
  Stmt else_case;  // may be null
  static Stmt make(Expr cond, Stmt then_case, Stmt else_case = nullptr, SourceLoc l = {});
};

enum class ReduceOp : uint8_t { Add, Mul, Min, Max };
const char* reduce_op_name(ReduceOp op);

struct Reduction {
  Var var;
  ReduceOp op;
};

// A whole array combined across iterations: each worker updates a private
// copy that starts at the identity, and the copies are folded into the array
// when the loop ends (transforms/privatize_atomics). The array is contiguous.
struct ArrayReduction {
  ArrayVar array;
  ReduceOp op;
};

enum class LoopKind : uint8_t {
  Serial,            // in order, in one worker
  Parallel,          // iterations are independent: one worker each
  Vectorized,        // in one worker, iterations may run in SIMD lanes
  ParallelVectorized,
};
const char* loop_kind_name(LoopKind k);
inline bool is_parallel(LoopKind k) { return k == LoopKind::Parallel || k == LoopKind::ParallelVectorized; }
inline bool is_vectorized(LoopKind k) { return k == LoopKind::Vectorized || k == LoopKind::ParallelVectorized; }

// What a target's planning pass decides for a loop and records on it for the
// emitter to print (transforms/cpu/plan_row_prefetch,
// plan_parallel_regions, ...). A plan may point at nodes of the loop's
// body, so planning passes run last.
struct LoopPlan {
  virtual ~LoopPlan() = default;
  // One line for the IR's dump, e.g. "prefetch from j: x next row, y this row".
  virtual std::string describe() const = 0;
};

// How a loop runs. Set from pragmas by the lowering and refined by passes
// (reductions are detected, collapse is chosen), with the plans of the
// planning passes.
struct LoopSchedule {
  LoopKind kind = LoopKind::Serial;
  int simd_width = 0;                  // simd(N); 0 = the back end's choice
  int num_threads = 0;                 // num_threads(N); 0 = the kernel's default
  int collapse = 1;                    // number of perfectly nested parallel loops run as one
  // The sliced pragmas' sizes (docs/language.md), which only the CUDA back end
  // reads (docs/cuda.md, "Sizes from the pragmas"): block(N), the strip of a
  // thread block; le(N), a bound on the trip count; single_block, the whole
  // dimension in one thread block.
  int block_strip = 0;  // block(N); 0 = none
  int most_trips = 0;   // le(N); 0 = none
  bool single_block = false;
  // The sizes are the compiler's choice (the long rows of a sparse matrix,
  // tensor/lower_to_loops.cpp), not a pragma's: no remark when unused.
  bool sizes_by_compiler = false;
  // A team of threads runs this loop's iterations in step and spreads the
  // loops inside it, though its iterations are independent (the compiler's
  // choice for a sparse row's entries whose values are dense sums: the sum's
  // terms are contiguous, a row's entries are not; tensor/lower_rows.cpp).
  // Only the CUDA back end reads it.
  bool team_in_step = false;
  std::vector<Reduction> reductions;   // scalars combined across iterations
  std::vector<ArrayReduction> array_reductions;  // arrays combined across iterations
  std::vector<Var> privates;           // private(...): the pragma's and those passes find
  SourceLoc pragma_loc;                // the pragma that asked for it, if any
  std::vector<std::shared_ptr<const LoopPlan>> plans;  // the planning passes' decisions

  // The plan of type T a planning pass recorded, or null.
  template <typename T>
  const T* plan() const {
    for (const auto& p : plans)
      if (const auto* t = dynamic_cast<const T*>(p.get())) return t;
    return nullptr;
  }

  // Adds `v` to the privates unless it is there already (a private clause
  // that names a variable twice does not compile).
  void add_private(const Var& v) {
    for (const Var& have : privates)
      if (have == v) return;
    privates.push_back(v);
  }
};

// for var in range(begin, end, step): the trip count is fixed when the loop
// starts (begin, end and step are evaluated once); `var` takes the values
// begin, begin+step, ... and keeps the last one after the loop, as in Python.
// step is never zero (the lowering checks).
struct For : StmtNode {
  static constexpr NodeKind kKind = NodeKind::For;
  For(Var v, Expr b, Expr e, Expr s, Stmt bd, LoopSchedule sc, SourceLoc l)
      : StmtNode(kKind, l), var(std::move(v)), begin(std::move(b)), end(std::move(e)), step(std::move(s)), body(std::move(bd)), schedule(std::move(sc)) {}
  Var var;
  Expr begin, end, step;
  Stmt body;
  LoopSchedule schedule;
  static Stmt make(Var v, Expr begin, Expr end, Expr step, Stmt body, LoopSchedule sc = {}, SourceLoc l = {});
};

// The only loop of `body` (a For, or a Block of Declares of that loop's
// variable and the loop), or null.
const For* single_loop(const Stmt& body);

struct While : StmtNode {
  static constexpr NodeKind kKind = NodeKind::While;
  While(Expr c, Stmt b, SourceLoc l) : StmtNode(kKind, l), cond(std::move(c)), body(std::move(b)) {}
  Expr cond;
  Stmt body;
  static Stmt make(Expr cond, Stmt body, SourceLoc l = {});
};

struct Break : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Break;
  explicit Break(SourceLoc l) : StmtNode(kKind, l) {}
  static Stmt make(SourceLoc l = {});
};

struct Continue : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Continue;
  explicit Continue(SourceLoc l) : StmtNode(kKind, l) {}
  static Stmt make(SourceLoc l = {});
};

// One returned value: a scalar expression or an array.
struct ReturnValue {
  Expr scalar;     // set for scalars
  ArrayVar array;  // set for arrays
};

// Returns from the kernel. Every Return of a function has the same number of
// values with the same types (Function::results).
struct Return : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Return;
  Return(std::vector<ReturnValue> v, SourceLoc l) : StmtNode(kKind, l), values(std::move(v)) {}
  std::vector<ReturnValue> values;
  static Stmt make(std::vector<ReturnValue> values, SourceLoc l = {});
};

enum class FillKind : uint8_t { Uninitialized, Zeros, Ones, Value };

// array = new array of `shape` (each int64), C or F order (array->type.layout),
// filled as `fill` says (fill_value has the array's dtype for FillKind::Value).
// The storage lives until the last reference goes; a returned array is handed
// to the caller.
struct Allocate : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Allocate;
  Allocate(ArrayVar a, std::vector<Expr> s, FillKind f, Expr fv, SourceLoc l)
      : StmtNode(kKind, l), array(std::move(a)), shape(std::move(s)), fill(f), fill_value(std::move(fv)) {}
  ArrayVar array;
  std::vector<Expr> shape;
  FillKind fill;
  Expr fill_value;  // null unless fill == Value
  static Stmt make(ArrayVar a, std::vector<Expr> shape, FillKind fill, Expr fill_value = nullptr, SourceLoc l = {});
};

// dst = src: rebinds an array name (no copy), as Python assignment does.
struct ArrayBind : StmtNode {
  static constexpr NodeKind kKind = NodeKind::ArrayBind;
  ArrayBind(ArrayVar d, ArrayVar s, SourceLoc l) : StmtNode(kKind, l), dst(std::move(d)), src(std::move(s)) {}
  ArrayVar dst, src;
  static Stmt make(ArrayVar dst, ArrayVar src, SourceLoc l = {});
};

// Raises a run-time error (the abi.h plait_error_kind) with `message` when
// `cond` is false, then leaves the enclosing loop iteration (or the kernel,
// outside loops) so that nothing after it runs on bad data. Used for the
// checks NumPy makes at run time: broadcast shapes, empty reductions.
struct Assert : StmtNode {
  static constexpr NodeKind kKind = NodeKind::Assert;
  Assert(Expr c, int k, std::string m, SourceLoc l) : StmtNode(kKind, l), cond(std::move(c)), error_kind(k), message(std::move(m)) {}
  Expr cond;
  int error_kind;
  std::string message;
  static Stmt make(Expr cond, int error_kind, std::string message, SourceLoc l = {});
};

// Which elements of C a MatMul computes: all m x n, or the triangle of its
// m x m block with j <= i (lower) or j >= i (upper), diagonal included; or,
// for StrictUpperInPlace, all of C (m x n) as C + strict_upper(A') @ C with
// A' m x m, in place (row i reads the rows below it before they change; b
// is c, alpha 1, beta null, k m); or, for SymmetricLower, all of C (m x n)
// as alpha * S @ B' + beta * C with S the m x m symmetric matrix whose lower
// triangle (diagonal included) is A's (A's strict upper triangle is not
// read; a not transposed, k m); or, for LowerSolve, not a product: the
// vectors c and b (1-D, m elements, or the first m of row `vector_row` of
// 2-D arrays) and x = solve(lower(A'), b) written to c, A' m x m lower
// triangular with its diagonal (its strict upper triangle is not read), b
// either c itself (in place) or an array that does not share c's memory (n
// and k m, alpha 1, beta null).
enum class MatMulPart : uint8_t { Full, Lower, Upper, StrictUpperInPlace, SymmetricLower, LowerSolve };

// What a triangular MatMul adds to a plain one: the part of C, an optional
// second product alpha2 * A2' @ B2' (same extents, summed into the first:
// C = alpha A'B' + alpha2 A2'B2' + beta C), and a condition that must hold
// for every `row` in [0, m) for the product to be what the loops compute
// (the loops' slices cover exactly the triangle and take the version
// without broadcasting); the host evaluates it before calling the library.
struct MatMulTriangle {
  MatMulPart part = MatMulPart::Full;
  ArrayVar a2, b2;  // null: one product
  bool a2_transposed = false, b2_transposed = false;
  Expr alpha2;         // float64, set with a2
  Var row;             // the variable of row_condition
  Expr row_condition;  // bool, or null
  Expr vector_row;     // LowerSolve: c and b are this row (int64) of 2-D arrays; null: 1-D
};

// C[i, j] = alpha * sum(A'[i, r] * B'[r, j] for r < k) + beta * C[i, j] for
// i < m, j < n, where A' is `a` (or its transpose when a_transposed) and B'
// is `b` (or its transpose): a matrix product the target hands to its BLAS
// library (transforms/offload_matmul). `loops` is the loop nest it came
// from, with the same meaning; it runs instead when the library cannot
// (operand layouts, overlapping arrays, a coefficient of zero whose NaN
// propagation the library skips, no library, a row condition that fails).
// `beta` is null when the nest does not read C (beta 0, C's old values
// unused). `triangle` restricts it to a triangle (m == n).
struct MatMul : StmtNode {
  static constexpr NodeKind kKind = NodeKind::MatMul;
  MatMul(ArrayVar c, ArrayVar a, bool at, ArrayVar b, bool bt, Expr m, Expr n, Expr k, Expr alpha, Expr beta, Stmt loops,
         MatMulTriangle tri, SourceLoc l)
      : StmtNode(kKind, l), c(std::move(c)), a(std::move(a)), b(std::move(b)), a_transposed(at), b_transposed(bt),
        m(std::move(m)), n(std::move(n)), k(std::move(k)), alpha(std::move(alpha)), beta(std::move(beta)),
        loops(std::move(loops)), triangle(std::move(tri)) {}
  ArrayVar c, a, b;
  bool a_transposed, b_transposed;
  Expr m, n, k;  // int64 extents
  Expr alpha;    // float64
  Expr beta;     // float64, or null
  Stmt loops;
  MatMulTriangle triangle;
  static Stmt make(ArrayVar c, ArrayVar a, bool a_transposed, ArrayVar b, bool b_transposed, Expr m, Expr n, Expr k,
                   Expr alpha, Expr beta, Stmt loops, SourceLoc l = {}, MatMulTriangle triangle = {});
};

// ---------------------------------------------------------------- function

// A kernel parameter: exactly one of scalar/array is set.
struct Param {
  Var scalar;
  ArrayVar array;
  const std::string& name() const { return scalar ? scalar->name : array->name; }
};

// A remark for kernel.explain(): what a pass did or declined, and why.
struct Remark {
  SourceLoc loc;
  std::string pass;     // the pass that made it
  std::string message;  // one line, e.g. "parallel loop over i (OpenMP, 2 threads)"
};

struct Function {
  std::string name;
  SourceFile source;
  std::vector<Param> params;
  Stmt body;
  std::vector<ValueType> results;  // empty: returns None
  bool returns_tuple = false;      // `return a, b` (or a 1-tuple), or `return [a, b]`
  bool returns_list = false;       // `return [a, b]`: the caller makes a list (returns_tuple is set too)
  // When a result is a sparse matrix: the results as the Python function
  // gives them, each one of `results` expanded by abi_types (in a tuple),
  // for the caller to fold back; empty otherwise.
  std::vector<ValueType> declared_results;
  bool declared_tuple = false;
  bool declared_list = false;
  std::vector<Remark> remarks;
};

}  // namespace plait::ir
