// The CPU back end: IR -> one C++ translation unit (abi.h + plait_runtime.h +
// the kernel), compiled by the system compiler with OpenMP.
//
// Shape of the output. Every argument is unpacked into typed locals; each
// array becomes separate locals for its data pointer, extents and strides
// (never a struct whose address escapes) so that the compiler keeps them in
// registers and vectorises; the unit stride of a C/F layout is the constant 1
// in the index arithmetic. Loops take the canonical form
// `for (int64_t k = 0; k < trip; ++k) { var = begin + k * step; ... }` with
// begin/end/step evaluated once before the loop, which is what OpenMP's
// `parallel for`/`simd` need. Run-time errors go through plait::raise_error
// (the first one wins) and stop the kernel as Python would: the code tests
// ctx->error_kind after a statement that may raise, before its effect, and
// returns (or leaves a parallel loop's iteration, whose other threads stop at
// their next one); the entry point returns ctx->error_kind.
#include "codegen/cpu/codegen_cpp.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analysis/raises.h"
#include "analysis/var_uses.h"
#include "codegen/cpu/row_prefetch.h"
#include "codegen/overlap_test.h"
#include "ir/ir_visitor.h"

namespace plait {
extern const char* const kRuntimeAbiText;
extern const char* const kRuntimeHeaderText;
}  // namespace plait

namespace plait::codegen {

using namespace ir;

namespace {

// The iterations assumed for a loop inside a parallel loop's body, whose
// trip count is not known when the team would start (the threshold itself is
// a run-time setting: plait_context::parallel_work_threshold).
constexpr int64_t kAssumedInnerTrips = 256;

std::string dtype_code(ScalarKind k) { return plait_dtype_name(k); }

// The one-argument functions that plait_runtime.h declares as plait_vm_<name>
// (vectorisable through glibc's libmvec); sqrt and fabs vectorise as they are.
bool has_vector_variant(Intrinsic fn) {
  switch (fn) {
    case Intrinsic::Exp:
    case Intrinsic::Log:
    case Intrinsic::Log2:
    case Intrinsic::Log10:
    case Intrinsic::Sin:
    case Intrinsic::Cos:
    case Intrinsic::Tan:
    case Intrinsic::Tanh:
    case Intrinsic::Asin:
    case Intrinsic::Acos:
    case Intrinsic::Atan:
    case Intrinsic::Sinh:
    case Intrinsic::Cosh: return true;
    default: return false;
  }
}

std::string ctype(ScalarType t) { return c_type_name(t.kind); }
std::string ctype(ScalarKind k) { return c_type_name(k); }

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

std::string double_literal(double v) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return v < 0 ? "(" + s + ")" : s;
}

std::string int_literal(int64_t v, ScalarKind k) {
  if (k == ScalarKind::UInt64) return "uint64_t(" + std::to_string(static_cast<uint64_t>(v)) + "ULL)";
  if (k != ScalarKind::Int64) return std::string(c_type_name(k)) + "(" + std::to_string(v) + ")";
  if (v == INT64_MIN) return "(-int64_t(9223372036854775807) - 1)";
  return "int64_t(" + std::to_string(v) + ")";
}

// Integers narrower than int are promoted to int by C++ arithmetic; the
// result is cast back so that it wraps as NumPy's does.
bool promoted_by_cpp(ScalarType t) { return t.is_int() && t.bits() < 32; }

// Escapes text for a C++ string literal (a path in #line, a message).
std::string escape_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '\\' || c == '"') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out;
}

// Counts IR nodes (the body cost estimate) and notices inner loops.
class CostCounter : public IRVisitor {
 public:
  int64_t nodes = 0;
  bool has_loop = false;
  using IRVisitor::visit;

 protected:
#define PLAIT_EXPR_NODE(n)         \
  void visit(const n* node) override { \
    ++nodes;                       \
    IRVisitor::visit(node);        \
  }
#define PLAIT_STMT_NODE(n)                                                                  \
  void visit(const n* node) override {                                                      \
    ++nodes;                                                                                \
    if (node->kind == NodeKind::For || node->kind == NodeKind::While) has_loop = true;     \
    IRVisitor::visit(node);                                                                 \
  }
#include "ir/ir_nodes.def"
};

// Collects the arrays a subtree mentions and those it (re)binds.
class ArrayCollector : public IRVisitor {
 public:
  std::vector<ArrayVar> used;        // in first-use order
  ArraySet bound;                    // targets of Allocate / ArrayBind
  ArraySet declared;                 // arrays with a Declare
  using IRVisitor::visit;

 protected:
  void note(const ArrayVar& a) {
    if (seen_.insert(a.get()).second) used.push_back(a);
  }
  void visit(const Load* n) override {
    note(n->array);
    IRVisitor::visit(n);
  }
  void visit(const ArrayDim* n) override { note(n->array); }
  void visit(const ArraysOverlap* n) override {
    note(n->a);
    note(n->b);
  }
  void visit(const Store* n) override {
    note(n->array);
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    note(n->array);
    IRVisitor::visit(n);
  }
  void visit(const Allocate* n) override {
    note(n->array);
    bound.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind* n) override {
    note(n->src);
    note(n->dst);
    bound.insert(n->dst.get());
  }
  void visit(const Declare* n) override {
    if (n->array) {
      note(n->array);
      declared.insert(n->array.get());
    }
  }
  void visit(const Return* n) override {
    for (const ReturnValue& v : n->values)
      if (v.array) note(v.array);
    IRVisitor::visit(n);
  }

 private:
  ArraySet seen_;
};

// The scalars a parallel loop's body assigns that outlive one iteration:
// targets of Assign and variables of serial loops (which assign their
// variable when it is declared outside), less those the body declares.
// Each must be private or a reduction of the loop, or the threads race.
class AssignedScalars : public IRVisitor {
 public:
  std::vector<const VarInfo*> assigned;  // in first-assignment order
  VarSet declared;
  using IRVisitor::visit;

 protected:
  void note(const VarInfo* v) {
    if (seen_.insert(v).second) assigned.push_back(v);
  }
  void visit(const Assign* n) override {
    note(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    if (n->schedule.kind == LoopKind::Serial) note(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const Declare* n) override {
    if (n->var) declared.insert(n->var.get());
  }

 private:
  VarSet seen_;
};

// Whether an expression reads any of the given variables.
class UsesVars : public IRVisitor {
 public:
  explicit UsesVars(VarSet vars) : vars_(std::move(vars)) {}
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit(const VarRef* n) override {
    if (vars_.count(n->var.get())) found = true;
  }

 private:
  VarSet vars_;
};

// How the float max/min reductions of a loop are updated. The builtin in
// `m = max(m, x)` returns m unless x compares greater: a NaN m stays and a
// NaN x never replaces m, so only a NaN that m held before the loop reaches
// the result. np.maximum/np.minimum propagate any NaN. Both combine in any
// order. The reversed builtin `m = max(x, m)` returns x unless m compares
// greater: a NaN x replaces m and the next element replaces the NaN, so the
// result depends on the order of the updates.
class ExtremumUpdates : public IRVisitor {
 public:
  explicit ExtremumUpdates(const std::vector<Reduction>& reductions) {
    for (const Reduction& r : reductions)
      if (r.var->type.is_float() && (r.op == ReduceOp::Max || r.op == ReduceOp::Min)) forms_.push_back({r.var.get()});
  }
  // Variables updated only in the reversed form.
  VarSet only_reversed() const {
    VarSet vars;
    for (const Forms& f : forms_)
      if (f.reversed && !f.builtin && !f.propagating) vars.insert(f.var);
    return vars;
  }
  // The first variable updated in the reversed form and in another one; null
  // when there is none.
  const VarInfo* mixed() const {
    for (const Forms& f : forms_)
      if (f.reversed && (f.builtin || f.propagating)) return f.var;
    return nullptr;
  }
  // The first variable updated in the reversed form; null when there is none.
  const VarInfo* reversed() const {
    for (const Forms& f : forms_)
      if (f.reversed) return f.var;
    return nullptr;
  }
  // Whether `v` is updated by np.maximum/np.minimum.
  bool propagating(const VarInfo* v) const {
    for (const Forms& f : forms_)
      if (f.var == v) return f.propagating;
    return false;
  }
  using IRVisitor::visit;

 protected:
  void visit(const Assign* n) override {
    for (Forms& f : forms_) {
      const Binary* b = n->value->as<Binary>();
      if (f.var != n->var.get() || !b) continue;
      const VarRef* second = b->b->as<VarRef>();
      if (b->op == BinaryOp::Max || b->op == BinaryOp::Min) {
        f.propagating = true;
      } else if (second && second->var.get() == f.var) {
        f.reversed = true;
      } else {
        f.builtin = true;
      }
    }
    IRVisitor::visit(n);
  }

 private:
  struct Forms {
    const VarInfo* var;
    bool reversed = false, builtin = false, propagating = false;
  };
  std::vector<Forms> forms_;  // in the order of the loop's reductions
};

// Whether a loop body leaves the loop early: a Return anywhere, or a Break
// that is not inside a nested loop. OpenMP loops cannot do either.
class LeavesLoop : public IRVisitor {
 public:
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit(const Break*) override {
    if (depth_ == 0) found = true;
  }
  void visit(const Return*) override { found = true; }
  void visit(const For* n) override {
    ++depth_;
    IRVisitor::visit(n);
    --depth_;
  }
  void visit(const While* n) override {
    ++depth_;
    IRVisitor::visit(n);
    --depth_;
  }

 private:
  int depth_ = 0;
};

// What a piece of IR touches, for placing it inside a parallel region: the
// arrays and variables it reads and writes, and what else it does (record a
// run-time error, allocate, leave a loop).
class AccessScan : public analysis::RaiseScan {
 public:
  ArraySet loaded;   // elements read
  ArraySet dims;     // extents or data pointer read
  ArraySet written;  // elements stored
  ArraySet bound;    // targets of Allocate / ArrayBind
  VarSet read, assigned;
  // facts (analysis::RaiseScan): what may record a run-time error
  bool returns = false;
  bool escapes = false;  // a Break, Continue or Assert outside every loop of the scanned code
  bool has_loop = false;
  bool has_parallel = false;  // a parallel loop (anywhere inside)
  using RaiseScan::visit;
  // Public: a loop is scanned through its node (scan(const For*)).
  void visit(const VarRef* n) override { read.insert(n->var.get()); }
  void visit(const Load* n) override {
    loaded.insert(n->array.get());
    dims.insert(n->array.get());
    RaiseScan::visit(n);
  }
  void visit(const ArrayDim* n) override { dims.insert(n->array.get()); }
  void visit(const ArraysOverlap* n) override {
    dims.insert(n->a.get());
    dims.insert(n->b.get());
  }
  void visit(const Store* n) override {
    written.insert(n->array.get());
    dims.insert(n->array.get());
    RaiseScan::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    written.insert(n->array.get());
    dims.insert(n->array.get());
    RaiseScan::visit(n);
  }
  void visit(const Assign* n) override {
    assigned.insert(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const Allocate* n) override {
    bound.insert(n->array.get());
    RaiseScan::visit(n);
  }
  void visit(const ArrayBind* n) override {
    bound.insert(n->dst.get());
    dims.insert(n->src.get());
  }
  void visit(const Declare* n) override {
    if (n->array) bound.insert(n->array.get());  // (re)starts empty
  }
  void visit(const For* n) override {
    has_loop = true;
    if (is_parallel(n->schedule.kind)) has_parallel = true;
    assigned.insert(n->var.get());
    ++depth_;
    IRVisitor::visit(n);
    --depth_;
  }
  void visit(const While* n) override {
    has_loop = true;
    ++depth_;
    IRVisitor::visit(n);
    --depth_;
  }
  void visit(const Break*) override {
    if (depth_ == 0) escapes = true;
  }
  void visit(const Continue*) override {
    if (depth_ == 0) escapes = true;
  }
  void visit(const Assert* n) override {
    if (depth_ == 0) escapes = true;
    RaiseScan::visit(n);
  }
  void visit(const Return* n) override {
    returns = true;
    IRVisitor::visit(n);
  }

 private:
  int depth_ = 0;
};

template <typename Node>
AccessScan scan(const Node& node) {
  AccessScan s;
  s.visit(node);
  return s;
}

// Whether code with these facts may record a run-time error (raise, fail an
// allocation or a check), after which the code following it must not run.
bool may_stop(const AccessScan& s) { return s.facts.any(); }

template <typename T>
bool intersects(const std::set<T, InfoOrder>& a, const std::set<T, InfoOrder>& b) {
  for (const T& x : a)
    if (b.count(x)) return true;
  return false;
}

// How a statement directly inside a parallel region (outside its `omp for`
// loops) runs.
enum class Placement {
  Structure,  // holds parallel loops: every thread walks it (loops, ifs, blocks)
  Redundant,  // pure and writes only thread-local variables: every thread runs it
  Check,      // an Assert whose condition cannot fail: every thread checks it
  Single,     // one thread runs it; the barrier after it publishes its writes
};

// How an array lives in the generated code.
struct ArrayLocal {
  std::string base;     // a_<name>: fields base_data, base_n<d>, base_s<d>
  bool has_owner = false;  // allocated or rebound: base_owner keeps storage alive
};

class CppEmitter {
 public:
  CppEmitter(const Function& f) : fn_(f), path_(escape_path(f.source.path)) {}

  // What the emitter decided about parallel regions, for explain().
  const std::vector<Remark>& remarks() const { return remarks_; }

  std::string run() {
    out_ << kRuntimeAbiText << "\n" << kRuntimeHeaderText << "\n";
    out_ << "// ---- kernel `" << fn_.name << "` generated by plait from " << path_ << "\n\n";
    emit_reduction_declarations();
    out_ << "extern \"C\" int32_t plait_kernel_abi_version(void) { return PLAIT_ABI_VERSION; }\n\n";
    out_ << "extern \"C\" int32_t plait_kernel_entry(void** args, plait_result* results, plait_context* ctx) {\n";
    indent_ = 1;
    line("(void)args;");
    line("(void)results;");
    scopes_.emplace_back();
    emit_prologue();
    if (fn_.body) emit_contents(fn_.body);
    if (!ends_with_return(fn_.body)) line("return ctx->error_kind;");
    scopes_.pop_back();
    out_ << "}\n";
    return out_.str();
  }

 private:
  // Reductions of float max/min that keep NaN (pragma): partial results
  // start from the infinity that any value replaces, and a NaN on either
  // side of a combination is its result. Only a NaN the variable held before
  // the loop (the builtin max(m, x) keeps it) or one np.maximum took can be
  // there, and Python keeps both.
  // The comparisons are written with `>` only: clang 14 rejects a combiner
  // that contains `omp_in < omp_out`.
  void emit_reduction_declarations() {
    out_ << "#include <omp.h>\n";
    struct Extremum {
      const char *name, *beats, *identity;
    };
    for (const Extremum& e : {Extremum{"max", "omp_in > omp_out", "-__builtin_inff()"},
                              Extremum{"min", "omp_out > omp_in", "__builtin_inff()"}})
      out_ << "#pragma omp declare reduction(plait_" << e.name << " : float, double : omp_out = omp_in != omp_in || "
           << e.beats << " ? omp_in : omp_out) initializer(omp_priv = " << e.identity << ")\n";
    // OpenMP starts a float max (min) from the least (greatest) value of the
    // type: g++ takes -inf (+inf), clang -FLT_MAX (+FLT_MAX), which would
    // turn a maximum of -inf values into -FLT_MAX. Under clang the float
    // extrema (PLAIT_FLOAT_MAX, PLAIT_FLOAT_MIN) are declared with infinite
    // identities and the combination of OpenMP's max and min.
    out_ << "#if defined(__clang__)\n";
    for (const Extremum& e : {Extremum{"max", "omp_in > omp_out", "-__builtin_inff()"},
                              Extremum{"min", "omp_out > omp_in", "__builtin_inff()"}})
      out_ << "#pragma omp declare reduction(plait_float_" << e.name << " : float, double : omp_out = " << e.beats
           << " ? omp_in : omp_out) initializer(omp_priv = " << e.identity << ")\n";
    out_ << "#define PLAIT_FLOAT_MAX plait_float_max\n#define PLAIT_FLOAT_MIN plait_float_min\n#else\n"
         << "#define PLAIT_FLOAT_MAX max\n#define PLAIT_FLOAT_MIN min\n#endif\n";
    out_ << "\n";
  }

  // The OpenMP reduction identifier of `op`; float extrema go through the
  // macros of emit_reduction_declarations.
  static std::string reduction_identifier(ReduceOp op, bool is_float) {
    if (is_float && op == ReduceOp::Max) return "PLAIT_FLOAT_MAX";
    if (is_float && op == ReduceOp::Min) return "PLAIT_FLOAT_MIN";
    return reduce_op_name(op);
  }

  static bool ends_with_return(const Stmt& body) {
    if (!body) return false;
    const Block* b = body->as<Block>();
    if (!b) return body->kind == NodeKind::Return;
    return !b->stmts.empty() && b->stmts.back()->kind == NodeKind::Return;
  }

  // ------------------------------------------------------------ naming

  std::string unique(const std::string& wanted) {
    std::string name = wanted;
    for (int k = 2; !used_names_.insert(name).second; ++k) name = wanted + "_" + std::to_string(k);
    return name;
  }

  const std::string& var_name(const Var& v) {
    auto it = var_names_.find(v.get());
    if (it != var_names_.end()) return it->second;
    return var_names_[v.get()] = unique("v_" + sanitize(v->name));
  }

  std::string temp(const std::string& what) { return "p_" + what + std::to_string(++temp_counter_); }

  ArrayLocal& array(const ArrayVar& a) {
    auto it = arrays_.find(a.get());
    if (it == arrays_.end()) PLAIT_INTERNAL_ERROR("array `" + a->name + "` used before it is bound");
    return it->second;
  }

  static bool unit_stride(const ArrayType& t, int d) {
    return (t.layout == Layout::C && d == t.ndim - 1) || (t.layout == Layout::F && d == 0);
  }
  std::string data(const ArrayVar& a) { return array(a).base + "_data"; }
  std::string extent(const ArrayVar& a, int d) { return array(a).base + "_n" + std::to_string(d); }
  std::string stride(const ArrayVar& a, int d) {
    return unit_stride(a->type, d) ? "1" : array(a).base + "_s" + std::to_string(d);
  }
  std::string owner(const ArrayVar& a) { return array(a).base + "_owner"; }

  // The fields of an array's locals, for private() clauses.
  std::vector<std::string> array_fields(const ArrayVar& a) {
    std::vector<std::string> f{data(a)};
    for (int d = 0; d < a->type.ndim; ++d) {
      f.push_back(extent(a, d));
      if (!unit_stride(a->type, d)) f.push_back(stride(a, d));
    }
    if (array(a).has_owner) f.push_back(owner(a));
    return f;
  }

  // ------------------------------------------------------------ output

  void line(const std::string& text) { out_ << std::string(static_cast<size_t>(indent_) * 2, ' ') << text << "\n"; }
  void line_directive(const SourceLoc& loc) {
    // std::to_string, not operator<<(int): numbers never go through the
    // stream's locale (a Python process may have set an unusual one).
    if (loc.valid()) out_ << "#line " + std::to_string(loc.line) + " \"" + path_ + "\"\n";
  }
  // The line and the character column of `loc` (Python's count, which
  // the run-time error's caret follows), as arguments of a raising helper.
  std::string loc_args(const SourceLoc& loc) const {
    if (!loc.valid()) return "0, 0";
    return std::to_string(loc.line) + ", " + std::to_string(character_columns(fn_.source, loc).col);
  }

  // The trip count of loop `f` from its evaluated bounds: a zero step or a
  // range of more than 2**63 - 1 values raises at the loop's line (Python's
  // ValueError; a 64-bit counter cannot count the other) and runs no
  // iteration, instead of dividing by zero or wrapping to a negative count.
  std::string checked_trip_count(const For* f, const std::string& begin, const std::string& end,
                                 const std::string& step) const {
    return "plait::checked_trip_count(ctx, " + loc_args(f->loc) + ", " + begin + ", " + end + ", " + step + ")";
  }

  bool declared(const VarInfo* v) const {
    for (const auto& s : scopes_)
      if (s.count(v)) return true;
    return false;
  }

  // ------------------------------------------------------------ prologue

  void emit_prologue() {
    ArrayCollector arrays;
    arrays.visit(fn_.body);
    for (size_t k = 0; k < fn_.params.size(); ++k) {
      const Param& p = fn_.params[k];
      const std::string arg = "args[" + std::to_string(k) + "]";
      if (p.scalar) {
        const Var& v = p.scalar;
        std::string value;
        if (v->type.is_bool()) value = "*static_cast<const int32_t*>(" + arg + ") != 0";
        else if (v->type.is_int()) value = "static_cast<" + ctype(v->type) + ">(*static_cast<const int64_t*>(" + arg + "))";
        else value = "static_cast<" + ctype(v->type) + ">(*static_cast<const double*>(" + arg + "))";
        line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = " + value + ";");
        scopes_.back().insert(v.get());
        continue;
      }
      const ArrayVar& a = p.array;
      const bool rebound = arrays.bound.count(a.get()) > 0;
      ArrayLocal& local = arrays_[a.get()];
      local.base = unique("a_" + sanitize(a->name));
      local.has_owner = rebound;
      const std::string view = unique("p_arg" + std::to_string(k));
      const std::string mut = rebound ? "" : "const ";
      line("const plait_array* const " + view + " = static_cast<const plait_array*>(" + arg + ");");
      line("[[maybe_unused]] " + ctype(a->type.dtype) + "* " + mut + data(a) + " = static_cast<" + ctype(a->type.dtype) +
           "*>(" + view + "->data);");
      for (int d = 0; d < a->type.ndim; ++d) {
        line("[[maybe_unused]] " + mut + "int64_t " + extent(a, d) + " = " + view + "->shape[" + std::to_string(d) + "];");
        if (!unit_stride(a->type, d))
          line("[[maybe_unused]] " + mut + "int64_t " + stride(a, d) + " = " + view + "->strides[" + std::to_string(d) + "];");
      }
      if (rebound) line("[[maybe_unused]] plait::array_owner " + owner(a) + ";");
    }
    // Other arrays are declared where their Declare stands, or else for the
    // whole call.
    for (const ArrayVar& a : arrays.used) {
      if (arrays_.count(a.get())) continue;
      ArrayLocal& local = arrays_[a.get()];
      local.base = unique("a_" + sanitize(a->name));
      local.has_owner = true;
      if (!arrays.declared.count(a.get())) declare_array(a);
    }
  }

  // The locals of a non-parameter array: empty until allocated or bound.
  void declare_array(const ArrayVar& a) {
    line("[[maybe_unused]] " + ctype(a->type.dtype) + "* " + data(a) + " = nullptr;");
    for (int d = 0; d < a->type.ndim; ++d) {
      line("[[maybe_unused]] int64_t " + extent(a, d) + " = 0;");
      if (!unit_stride(a->type, d)) line("[[maybe_unused]] int64_t " + stride(a, d) + " = 0;");
    }
    line("[[maybe_unused]] plait::array_owner " + owner(a) + ";");
  }

  // ------------------------------------------------------------ expressions

  std::string expr(const Expr& e) {
    switch (e->kind) {
      case NodeKind::IntImm: return int_literal(e->as<IntImm>()->value, e->type.kind);
      case NodeKind::FloatImm: {
        const std::string lit = double_literal(e->as<FloatImm>()->value);
        return e->type.kind == ScalarKind::Float32 ? "float(" + lit + ")" : lit;
      }
      case NodeKind::BoolImm: return e->as<BoolImm>()->value ? "true" : "false";
      case NodeKind::VarRef: return var_name(e->as<VarRef>()->var);
      case NodeKind::Cast: return cast(e->as<Cast>());
      case NodeKind::Unary: return unary(e->as<Unary>());
      case NodeKind::Binary: return binary(e->as<Binary>());
      case NodeKind::Compare: {
        const Compare* c = e->as<Compare>();
        return std::string("(") + expr(c->a) + " " + compare_op_name(c->op) + " " + expr(c->b) + ")";
      }
      case NodeKind::Logical: {
        const Logical* l = e->as<Logical>();
        return std::string("(") + expr(l->a) + (l->op == LogicalOp::And ? " && " : " || ") + expr(l->b) + ")";
      }
      case NodeKind::Select: {
        const Select* s = e->as<Select>();
        return std::string("(") + expr(s->cond) + " ? " + expr(s->t) + " : " + expr(s->f) + ")";
      }
      case NodeKind::Call: return call(e->as<Call>());
      case NodeKind::Load: return load(e->as<Load>());
      case NodeKind::ArrayDim: {
        const ArrayDim* d = e->as<ArrayDim>();
        return extent(d->array, d->dim);
      }
      case NodeKind::ArraysOverlap: {
        ArrayLocalNames names{[this](const ArrayVar& a) { return data(a); },
                              [this](const ArrayVar& a, int d) { return extent(a, d); },
                              [this](const ArrayVar& a, int d) { return stride(a, d); },
                              [](const ArrayVar& a) { return ctype(a->type.dtype); }};
        return overlap_test(*e->as<ArraysOverlap>(), names);
      }
      default: PLAIT_INTERNAL_ERROR(std::string("not an expression: ") + node_kind_name(e->kind));
    }
  }

  std::string cast(const Cast* c) {
    const ScalarType from = c->value->type;
    const std::string v = expr(c->value);
    if (c->type.kind == from.kind) return v;
    if (c->type.is_bool()) return std::string("(") + v + " != 0)";
    if (from.is_float() && c->type.is_int()) {
      if (c->checked)
        return "plait::checked_float_to_int<" + ctype(c->type) + ">(" + v + ", ctx, " + loc_args(c->loc) + ")";
      return "plait::float_to_int<" + ctype(c->type) + ">(" + v + ")";
    }
    if (c->checked && from.is_int() && c->type.is_int())
      return "plait::checked_python_int<" + ctype(c->type) + ">(" + v + ", ctx, " + loc_args(c->loc) + ")";
    return "static_cast<" + ctype(c->type) + ">(" + v + ")";
  }

  std::string unary(const Unary* u) {
    const std::string a = expr(u->a);
    switch (u->op) {
      case UnaryOp::Neg: return promoted_by_cpp(u->type) ? "static_cast<" + ctype(u->type) + ">(-" + a + ")" : "(-" + a + ")";
      case UnaryOp::Not: return "(!" + a + ")";
      case UnaryOp::BitNot: return u->type.is_bool() ? "(!" + a + ")" : "static_cast<" + ctype(u->type) + ">(~" + a + ")";
    }
    return a;
  }

  std::string binary(const Binary* b) {
    const std::string t = ctype(b->type);
    const std::string x = expr(b->a);
    const std::string y = expr(b->b);
    const std::string checked_args = ", ctx, " + loc_args(b->loc) + ")";
    const bool is_bool = b->type.is_bool();
    auto helper = [&](const std::string& name) { return "plait::" + name + "<" + t + ">(" + x + ", " + y; };
    auto arith = [&](const char* op) {
      const std::string s = "(" + x + op + y + ")";
      return promoted_by_cpp(b->type) ? "static_cast<" + t + ">" + s : s;
    };
    switch (b->op) {
      case BinaryOp::Add: return is_bool ? "(" + x + " || " + y + ")" : arith(" + ");
      case BinaryOp::Sub: return is_bool ? "(" + x + " != " + y + ")" : arith(" - ");
      case BinaryOp::Mul: return is_bool ? "(" + x + " && " + y + ")" : arith(" * ");
      case BinaryOp::Div:
        return b->zero_check ? helper("div_checked") + checked_args : "(" + x + " / " + y + ")";
      case BinaryOp::FloorDiv:
        return b->zero_check ? helper("floordiv_checked") + checked_args : helper("floordiv") + ")";
      case BinaryOp::Mod: return b->zero_check ? helper("mod_checked") + checked_args : helper("mod") + ")";
      case BinaryOp::Pow:
        if (b->type.is_float()) return b->zero_check ? helper("pow_float_checked") + checked_args : helper("pow_float") + ")";
        if (is_bool) return std::string("(") + x + " || !" + y + ")";
        return helper(b->zero_check ? "pow_python_int" : "pow_int") + checked_args;
      case BinaryOp::BitAnd: return "static_cast<" + t + ">(" + x + " & " + y + ")";
      case BinaryOp::BitOr: return "static_cast<" + t + ">(" + x + " | " + y + ")";
      case BinaryOp::BitXor: return "static_cast<" + t + ">(" + x + " ^ " + y + ")";
      case BinaryOp::Shl: return helper("shl") + ")";
      case BinaryOp::Shr: return helper("shr") + ")";
      case BinaryOp::Min: return helper("minimum") + ")";
      case BinaryOp::Max: return helper("maximum") + ")";
      case BinaryOp::PyMin: return helper("py_min") + ")";
      case BinaryOp::PyMax: return helper("py_max") + ")";
    }
    return x;
  }

  std::string call(const Call* c) {
    const ScalarType arg_type = c->args[0]->type;
    const bool int_arg = !arg_type.is_float();
    std::vector<std::string> args;
    for (const Expr& a : c->args) args.push_back(expr(a));
    auto wrap = [&](const std::string& s) {
      return arg_type.kind == c->type.kind ? s : "static_cast<" + ctype(c->type) + ">(" + s + ")";
    };
    switch (c->fn) {
      case Intrinsic::Floor:
      case Intrinsic::Ceil:
      case Intrinsic::Trunc:
      case Intrinsic::Round:
        if (int_arg) return wrap(args[0]);
        return wrap(std::string(c->fn == Intrinsic::Round ? "std::nearbyint" : std::string("std::") + intrinsic_name(c->fn)) +
                    "(" + args[0] + ")");
      case Intrinsic::Abs:
        if (arg_type.is_bool()) return wrap(args[0]);
        if (int_arg) return wrap("plait::abs_int<" + ctype(arg_type) + ">(" + args[0] + ")");
        return wrap("std::fabs(" + args[0] + ")");
      case Intrinsic::Fabs: return wrap("std::fabs(" + args[0] + ")");
      case Intrinsic::IsNan: return int_arg ? "false" : "std::isnan(" + args[0] + ")";
      case Intrinsic::IsInf: return int_arg ? "false" : "std::isinf(" + args[0] + ")";
      case Intrinsic::IsFinite: return int_arg ? "true" : "std::isfinite(" + args[0] + ")";
      default: break;
    }
    // sqrt, exp, log, ..., pow, atan2: <cmath>, with math.* error rules when asked.
    const std::string name = std::string("std::") + intrinsic_name(c->fn);
    std::string joined;
    for (size_t i = 0; i < args.size(); ++i) joined += (i ? ", " : "") + args[i];
    if (!c->python_math) {
      if (has_vector_variant(c->fn) && arg_type.is_float()) {
        const std::string suffix = arg_type.kind == ScalarKind::Float32 ? "f" : "";
        return wrap(std::string("plait_vm_") + intrinsic_name(c->fn) + suffix + "(" + joined + ")");
      }
      return wrap(name + "(" + joined + ")");
    }
    const char* on_inf = "none";
    switch (c->fn) {
      case Intrinsic::Exp:
      case Intrinsic::Sinh:
      case Intrinsic::Cosh: on_inf = "overflow"; break;
      case Intrinsic::Log:
      case Intrinsic::Log2:
      case Intrinsic::Log10: on_inf = "domain"; break;
      case Intrinsic::Pow: on_inf = "pow"; break;
      default: break;
    }
    std::string params, names;
    for (size_t i = 0; i < c->args.size(); ++i) {
      params += (i ? ", " : "") + ctype(c->args[i]->type) + " x" + std::to_string(i);
      names += (i ? ", x" : "x") + std::to_string(i);
    }
    return wrap("plait::py_math(ctx, " + loc_args(c->loc) + ", plait::math_inf::" + on_inf + ", [](" + params +
                ") { return " + name + "(" + names + "); }, " + joined + ")");
  }

  // The flat element offset of `indices` (already evaluated names or expressions).
  std::string offset(const ArrayVar& a, const std::vector<std::string>& indices) {
    std::string off;
    for (int d = 0; d < a->type.ndim; ++d) {
      const std::string s = stride(a, d);
      const std::string term = s == "1" ? indices[d] : indices[d] + " * " + s;
      off += (d ? " + " : "") + term;
    }
    return off;
  }

  std::string index_value(const Expr& e) {
    const std::string s = expr(e);
    return e->type.kind == ScalarKind::Int64 ? s : "static_cast<int64_t>(" + s + ")";
  }

  // Evaluates the indices into consts named in `names` and returns the
  // condition that they are all in bounds (reporting the first that is not).
  std::string bound_checks(const ArrayVar& a, const std::vector<Expr>& indices, const SourceLoc& loc,
                           std::vector<std::string>* names, std::string* decls) {
    std::string cond;
    for (int d = 0; d < a->type.ndim; ++d) {
      const std::string n = temp("i");
      if (d) *decls += " ";
      *decls += "const int64_t " + n + " = " + index_value(indices[static_cast<size_t>(d)]) + ";";
      names->push_back(n);
      cond += (d ? " && " : "") + std::string("plait::index_ok(ctx, ") + loc_args(loc) + ", " + n + ", " +
              std::to_string(d) + ", " + extent(a, d) + ")";
    }
    return cond;
  }

  std::string load(const Load* l) {
    if (!l->checked) {
      std::vector<std::string> idx;
      for (const Expr& i : l->indices) idx.push_back(index_value(i));
      return data(l->array) + "[" + offset(l->array, idx) + "]";
    }
    std::string axes;
    for (int d = 0; d < l->array->type.ndim; ++d)
      axes += std::string(d ? ", " : "") + "{" + index_value(l->indices[static_cast<size_t>(d)]) + ", " +
              extent(l->array, d) + ", " + stride(l->array, d) + "}";
    return "static_cast<" + ctype(l->type) + ">(plait::load_checked(ctx, " + loc_args(l->loc) + ", " +
           data(l->array) + ", {" + axes + "}))";
  }

  // ------------------------------------------------------------ statements

  // A statement as the body of a construct: a Block's statements go in a new
  // scope without extra braces.
  void emit_contents(const Stmt& s) {
    scopes_.emplace_back();
    if (const Block* b = s->as<Block>()) {
      for (const Stmt& st : b->stmts) emit(st);
    } else {
      emit(s);
    }
    scopes_.pop_back();
  }

  void emit(const Stmt& s) {
    line_directive(s->loc);
    switch (s->kind) {
      case NodeKind::Block:
        line("{");
        ++indent_;
        emit_contents(s);
        --indent_;
        line("}");
        return;
      case NodeKind::Declare: {
        if (const ArrayVar& a = s->as<Declare>()->array) {
          // A shared array of a parallel region is declared before it; here
          // it is emptied, which frees the previous iteration's storage
          // before the next allocation (as leaving its scope did).
          if (region_ && region_->hoisted_arrays.count(a.get())) {
            line(data(a) + " = nullptr;");
            for (int d = 0; d < a->type.ndim; ++d) line(extent(a, d) + " = 0;");
            line(owner(a) + ".reset();");
            return;
          }
          return declare_array(a);
        }
        const Var& v = s->as<Declare>()->var;
        if (region_ && region_->hoisted_vars.count(v.get())) {
          line(var_name(v) + " = " + ctype(v->type) + "{};");
          return;
        }
        line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + "{};");
        scopes_.back().insert(v.get());
        return;
      }
      case NodeKind::Assign: {
        const Assign* a = s->as<Assign>();
        emit_assign(a);
        if (scan(a->value).facts.expressions) stop_on_error();
        return;
      }
      case NodeKind::Store: return emit_store(s->as<Store>());
      case NodeKind::AtomicUpdate: return emit_atomic(s->as<AtomicUpdate>());
      case NodeKind::If: {
        const If* i = s->as<If>();
        std::string cond = expr(i->cond);
        if (!stop_.empty() && scan(i->cond).facts.expressions) {
          const std::string c = temp("cond");
          line("const bool " + c + " = " + cond + ";");
          stop_on_error();
          cond = c;
        }
        line("if (" + cond + ") {");
        nested(i->then_case);
        if (i->else_case) {
          line("} else {");
          nested(i->else_case);
        }
        line("}");
        return;
      }
      case NodeKind::For:
        return emit_for(s->as<For>());
      case NodeKind::While:
        return emit_while(s->as<While>());
      case NodeKind::Break:
        line("break;");
        return;
      case NodeKind::Assert: {
        const Assert* a = s->as<Assert>();
        line("if (!(" + expr(a->cond) + ")) {");
        ++indent_;
        line("plait::raise_error(ctx, " + std::to_string(a->error_kind) + ", " + loc_args(a->loc) + ", \"" +
             escape_path(a->message) + "\");");
        PLAIT_ASSERT(!stop_.empty());  // no check in a vector loop (scalarize_raising_loops)
        line(stop_);
        ++stop_uses_;
        --indent_;
        line("}");
        return;
      }
      case NodeKind::Continue: line("continue;"); return;
      case NodeKind::Return: return emit_return(s->as<Return>());
      case NodeKind::Allocate: return emit_allocate(s->as<Allocate>());
      case NodeKind::ArrayBind: return emit_bind(s->as<ArrayBind>());
      default: PLAIT_INTERNAL_ERROR(std::string("not a statement: ") + node_kind_name(s->kind));
    }
  }

  void emit_assign(const Assign* a) {
    if (declared(a->var.get())) {
      line(var_name(a->var) + " = " + expr(a->value) + ";");
      // A thread's partial result is NaN after an update exactly when
      // the element was NaN (emit_thread_order).
      if (auto flag = reset_flags_.find(a->var.get()); flag != reset_flags_.end())
        line(flag->second + " = " + flag->second + " || " + var_name(a->var) + " != " + var_name(a->var) + ";");
    } else {
      // Not declared by the lowering: it lives for the rest of this block.
      line("[[maybe_unused]] " + ctype(a->var->type) + " " + var_name(a->var) + " = " + expr(a->value) + ";");
      scopes_.back().insert(a->var.get());
    }
  }

  // A while loop. A condition that may raise is tested at the top of the
  // body, so that an error stops the loop before its next iteration. Outside
  // parallel code each iteration also answers the caller's interrupt.
  void emit_while(const While* w) {
    const bool raising_cond = !stop_.empty() && scan(w->cond).facts.expressions;
    line(raising_cond ? "while (true) {" : "while (" + expr(w->cond) + ") {");
    ++loop_depth_;
    ++indent_;
    emit_interrupt_check();
    if (raising_cond) {
      const std::string c = temp("cond");
      line("const bool " + c + " = " + expr(w->cond) + ";");
      stop_on_error();
      line("if (!" + c + ") break;");
    }
    --indent_;
    nested(w->body);
    --loop_depth_;
    line("}");
  }

  void nested(const Stmt& s) {
    ++indent_;
    emit_contents(s);
    --indent_;
  }

  void emit_store(const Store* st) {
    emit_element_update(
        st->array, st->indices, st->value, st->checked, st->loc,
        [&](const std::string& element, const std::string& value) { return element + " = " + value + ";"; });
  }

  // A statement that writes one element, `update(element, value)`. Python
  // evaluates the value, then the subscript: when either may raise, the
  // value goes into a temporary and the element is written only when no
  // error was recorded (the stand-in value of a failed step is never stored).
  template <typename Update>
  void emit_element_update(const ArrayVar& a, const std::vector<Expr>& indices, const Expr& value_expr, bool checked,
                           const SourceLoc& loc, Update&& update) {
    bool raises = false;
    if (!stop_.empty()) {
      raises = scan(value_expr).facts.expressions;
      for (const Expr& i : indices) raises = raises || scan(i).facts.expressions;
    }
    if (!checked && !raises) {
      std::vector<std::string> idx;
      for (const Expr& i : indices) idx.push_back(index_value(i));
      line(update(data(a) + "[" + offset(a, idx) + "]", expr(value_expr)));
      return;
    }
    const std::string value = temp("value");
    line("{");
    ++indent_;
    line("const " + ctype(a->type.dtype) + " " + value + " = " + expr(value_expr) + ";");
    if (!checked) {
      std::vector<std::string> idx;
      for (const Expr& i : indices) {
        const std::string name = temp("i");
        line("const int64_t " + name + " = " + index_value(i) + ";");
        idx.push_back(name);
      }
      stop_on_error();
      line(update(data(a) + "[" + offset(a, idx) + "]", value));
    } else {
      if (scan(value_expr).facts.expressions) stop_on_error();
      std::vector<std::string> names;
      std::string decls;
      const std::string cond = bound_checks(a, indices, loc, &names, &decls);
      line(decls);
      bool raising_index = false;
      for (const Expr& i : indices) raising_index = raising_index || scan(i).facts.expressions;
      if (raising_index) stop_on_error();
      line("if (" + cond + ") " + update(data(a) + "[" + offset(a, names) + "]", value));
      stop_on_error();
    }
    --indent_;
    line("}");
  }

  void emit_atomic(const AtomicUpdate* u) {
    std::string fn;
    switch (u->op) {
      case AtomicOp::Add: fn = "atomic_add"; break;
      case AtomicOp::Sub: fn = "atomic_sub"; break;
      case AtomicOp::Mul: fn = "atomic_mul"; break;
      case AtomicOp::Div: fn = "atomic_div"; break;
      case AtomicOp::Min: fn = "atomic_min"; break;
      case AtomicOp::Max: fn = "atomic_max"; break;
      case AtomicOp::BitAnd: fn = "atomic_and"; break;
      case AtomicOp::BitOr: fn = "atomic_or"; break;
      case AtomicOp::BitXor: fn = "atomic_xor"; break;
    }
    fn = "plait::" + fn + "<" + ctype(u->array->type.dtype) + ">";
    emit_element_update(u->array, u->indices, u->value, u->checked, u->loc,
                        [&](const std::string& element, const std::string& value) {
                          return fn + "(&" + element + ", " + value + ");";
                        });
  }

  // The one For that `body` consists of (besides a Declare of that loop's
  // own variable), or null.
  static const For* single_loop(const Stmt& body) {
    if (const For* f = body->as<For>()) return f;
    const Block* b = body->as<Block>();
    if (!b) return nullptr;
    const For* inner = nullptr;
    for (const Stmt& st : b->stmts) {
      if (const For* f = st->as<For>()) {
        if (inner) return nullptr;
        inner = f;
      } else if (!st->as<Declare>()) {
        return nullptr;
      }
    }
    if (!inner) return nullptr;
    for (const Stmt& st : b->stmts)
      if (const Declare* d = st->as<Declare>(); d && d->var != inner->var) return nullptr;
    return inner;
  }

  // The loops run as one by collapse(k): `outer` and the loops perfectly
  // nested in it, as many as the schedule asks and the shape allows (an
  // inner loop whose bounds read an outer loop variable stops the nest).
  std::vector<const For*> collapse_nest(const For* outer) {
    std::vector<const For*> nest{outer};
    VarSet vars{outer->var.get()};
    while (static_cast<int>(nest.size()) < outer->schedule.collapse) {
      const For* inner = single_loop(nest.back()->body);
      if (!inner) return nest;
      UsesVars uses(vars);
      uses.visit(inner->begin);
      uses.visit(inner->end);
      uses.visit(inner->step);
      if (uses.found) return nest;
      nest.push_back(inner);
      vars.insert(inner->var.get());
    }
    return nest;
  }

  void emit_for(const For* loop) {
    const LoopSchedule& sc = loop->schedule;
    if (sc.kind == LoopKind::Serial && !region_ && omp_depth_ == 0 && scan(loop->body).has_parallel) {
      auto region = std::make_unique<Region>();
      const std::string refusal = region_refusal(loop, region.get());
      if (refusal.empty()) return emit_region_loop(loop, std::move(region));
      remarks_.push_back({loop->loc, "codegen_cpp",
                          "loop over '" + loop->var->name + "': each parallel loop inside starts its own threads (" +
                              refusal + ")"});
    }
    if (region_level_ && sc.kind == LoopKind::Serial) return emit_region_loop(loop, nullptr);
    const bool work_shared = region_level_;  // an `omp for` of the enclosing region
    region_level_ = false;
    if (sc.kind != LoopKind::Serial) {
      LeavesLoop leaves;
      leaves.visit(loop->body);
      if (leaves.found)
        PLAIT_INTERNAL_ERROR(std::string(loop_kind_name(sc.kind)) + " loop over `" + loop->var->name +
                             "` contains a break or return; the lowering must make it serial");
    }
    const bool parallel = is_parallel(sc.kind);
    const std::vector<const For*> nest = parallel ? collapse_nest(loop) : std::vector<const For*>{loop};

    line("{");
    ++indent_;
    // A float max/min reduction updated as `m = max(x, m)` depends on the
    // order (ExtremumUpdates): a vector loop with one runs in order; a
    // parallel loop gives each thread its chunk in order, folds it from NaN
    // and combines the threads' results in thread order (emit_thread_order);
    // a parallel loop that mixes that form with another on one variable runs
    // in order.
    ExtremumUpdates extrema(sc.reductions);
    if (sc.kind != LoopKind::Serial) extrema.visit(loop->body);
    const VarInfo* order_var = sc.kind == LoopKind::Vectorized ? extrema.reversed()
                               : parallel                       ? extrema.mixed()
                                                                : nullptr;
    const bool in_order = order_var != nullptr;
    if (in_order)
      remarks_.push_back({loop->loc, "codegen_cpp",
                          std::string(parallel ? "parallel" : "vector") + " loop over '" + loop->var->name +
                              "' runs in order: its float max/min reduction of '" + order_var->name +
                              "' is written max(x, " + order_var->name + "), whose result depends on where NaNs are" +
                              (parallel ? ", and updated in another form too" : "")});
    const VarSet thread_order = parallel && !in_order ? extrema.only_reversed() : VarSet{};
    if (!thread_order.empty()) {
      std::string names;
      for (const Reduction& r : sc.reductions)
        if (thread_order.count(r.var.get())) names += (names.empty() ? "'" : ", '") + r.var->name + "'";
      remarks_.push_back({loop->loc, "codegen_cpp",
                          "parallel loop over '" + loop->var->name + "': its float max/min reduction of " + names +
                              " is written max(x, m), whose result depends on where NaNs are: each thread runs one "
                              "chunk in order and the threads' results combine in thread order" +
                              (is_vectorized(sc.kind) ? " (without simd)" : "")});
    }
    // The other float max/min reductions. OpenMP's own max/min combine the
    // partial results (a tree of vmaxps over the lanes) leaving NaN to the
    // instruction, which drops one on one side. The partial results of the
    // builtin form hold no NaN, so the value before the loop is set aside,
    // the reduction starts from the identity, and the builtin takes the
    // value set aside as its first argument after the loop. Inside a
    // region every thread would need that value before any changes the
    // variable (barriers), and np.maximum's partial results can be NaN:
    // those use plait_max/plait_min (emit_reduction_declarations), whose
    // combination keeps a NaN from either side, one lane at a time.
    VarSet nan_kept;
    std::vector<std::pair<const Reduction*, std::string>> before;
    for (const Reduction& r : sc.reductions) {
      if (in_order || !r.var->type.is_float() || (r.op != ReduceOp::Max && r.op != ReduceOp::Min) ||
          thread_order.count(r.var.get()))
        continue;
      if (work_shared || extrema.propagating(r.var.get())) {
        nan_kept.insert(r.var.get());
        continue;
      }
      const std::string b = temp("before");
      const std::string t = ctype(r.var->type);
      line("const " + t + " " + b + " = " + var_name(r.var) + ";");
      line(var_name(r.var) + " = " + (r.op == ReduceOp::Max ? "-" : "") + "std::numeric_limits<" + t +
           ">::infinity();");
      before.emplace_back(&r, b);
    }
    struct Level {
      const For* loop;
      std::string begin, step, trip, k;
    };
    std::vector<Level> levels;
    for (const For* f : nest) {
      Level lv{f, temp("begin"), "", "", ""};
      const std::string end = temp("end");
      lv.step = temp("step");
      lv.trip = temp("trip");
      lv.k = temp("k");
      line("const int64_t " + lv.begin + " = " + expr(f->begin) + ";");
      line("const int64_t " + end + " = " + expr(f->end) + ";");
      line("const int64_t " + lv.step + " = " + expr(f->step) + ";");
      line("const int64_t " + lv.trip + " = " + checked_trip_count(f, lv.begin, end, lv.step) + ";");
      levels.push_back(lv);
    }
    if (bounds_may_raise(nest)) stop_on_error();
    const For* innermost = nest.back();
    if (work_shared) {
      // Every thread has read the bounds; the loop may write what they read.
      for (const For* f : nest) {
        note_reads(scan(f->begin));
        note_reads(scan(f->end));
        note_reads(scan(f->step));
      }
      barrier_before(scan(loop));
    }

    std::string trips;
    for (const Level& lv : levels) trips += (trips.empty() ? "" : " * ") + ("static_cast<double>(" + lv.trip + ")");
    // Per-thread temporaries: the team starts first (`omp parallel`), each
    // thread allocates them, then the iterations are shared out (`omp for`).
    const std::vector<Stmt> per_thread =
        parallel && !in_order && !work_shared && !region_ && omp_depth_ == 0 ? per_thread_statements(nest)
                                                                             : std::vector<Stmt>{};
    std::set<const StmtNode*> hoisted;
    // Both start the team first (`omp parallel`) and share out the
    // iterations in it (`omp for`).
    const bool own_team = !work_shared && (!per_thread.empty() || !thread_order.empty());
    if (own_team) {
      line_directive(sc.pragma_loc.valid() ? sc.pragma_loc : loop->loc);
      line("#pragma omp parallel" + num_threads_clause(sc) + if_clause(trips, innermost, false));
      line("{");
      ++indent_;
      scopes_.emplace_back();
    }
    if (!per_thread.empty()) {
      ++omp_depth_;  // a failed allocation cannot leave the region: it is reported when the call ends
      const std::string outer_stop = std::exchange(stop_, "");
      std::string any;
      for (const Level& lv : levels) any += (any.empty() ? "" : " && ") + lv.trip + " > 0";
      for (const Stmt& st : per_thread) {
        hoisted.insert(st.get());
        if (st->kind == NodeKind::Declare) emit(st);
      }
      // Without iterations nothing is allocated, as before.
      line("if (" + any + ") {");
      ++indent_;
      for (const Stmt& st : per_thread)
        if (st->kind != NodeKind::Declare) emit(st);
      --indent_;
      line("}");
      stop_ = outer_stop;
      --omp_depth_;
      remarks_.push_back({loop->loc, "codegen_cpp",
                          "parallel loop over '" + loop->var->name + "': its temporaries are allocated once per thread, "
                          "not once per iteration"});
    }
    // Each thread's partial results (inside the region: a block of the
    // thread's own variables).
    std::vector<ThreadPartial> partials;
    if (!thread_order.empty()) {
      if (work_shared) {
        line("{");
        ++indent_;
      }
      for (const Reduction& r : sc.reductions) {
        if (!thread_order.count(r.var.get())) continue;
        const ThreadPartial part{&r, var_name(r.var), temp("part"), temp("reset")};
        const std::string t = ctype(r.var->type);
        line(t + " " + part.value + " = std::numeric_limits<" + t + ">::quiet_NaN();");
        line("bool " + part.reset + " = false;");
        var_names_[r.var.get()] = part.value;
        reset_flags_[r.var.get()] = part.reset;
        partials.push_back(part);
      }
    }
    const For* planned = is_vectorized(sc.kind)
                             ? nullptr
                             : plan_prefetch(innermost, levels.back().step, levels.back().k, levels.back().trip);
    // A compute-bound pass of a loop over rows runs in chunks that prefetch
    // what the other passes read and write (row_prefetch.h).
    const auto site = prefetch_.find(loop);
    const bool in_chunks = site != prefetch_.end();
    std::string k_begin = "0";
    std::string k_end = levels[0].trip;
    if (in_chunks) emit_prefetch_chunk(site->second, levels[0].trip, &k_begin, &k_end);
    // The bound set-up above shifted the line count: re-anchor so that a
    // diagnostic about the OpenMP pragma names the user's pragma line.
    if (sc.kind != LoopKind::Serial) line_directive(sc.pragma_loc.valid() ? sc.pragma_loc : loop->loc);
    if (sc.kind != LoopKind::Serial && !in_order)
      line(pragma(loop, levels.size(), innermost, work_shared || own_team, trips, thread_order, nan_kept));
    // Every thread of a region walks the statements around its loops.
    if (in_order && work_shared) line("#pragma omp single");
    for (size_t d = 0; d < levels.size(); ++d) {
      const Level& lv = levels[d];
      line("for (int64_t " + lv.k + " = " + (d == 0 ? k_begin : "0") + "; " + lv.k + " < " +
           (d == 0 ? k_end : lv.trip) + "; ++" + lv.k + ")" + (d + 1 == levels.size() ? " {" : ""));
    }
    ++indent_;
    scopes_.emplace_back();
    // The loop variable: a serial loop assigns the variable itself (so break
    // and assignments in the body leave Python's value); parallel and vector
    // loops give each iteration its own copy and set the last value after.
    std::vector<const Level*> copy_back;
    for (const Level& lv : levels) {
      const Var& v = lv.loop->var;
      const std::string value = "static_cast<" + ctype(v->type) + ">(" + lv.begin + " + " + lv.k + " * " + lv.step + ")";
      if (sc.kind == LoopKind::Serial && declared(v.get())) {
        line(var_name(v) + " = " + value + ";");
      } else {
        if (declared(v.get())) copy_back.push_back(&lv);
        line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = " + value + ";");
        scopes_.back().insert(v.get());
      }
    }
    if (sc.kind != LoopKind::Serial) ++omp_depth_;
    ++loop_depth_;
    auto emit_body = [&] {
      if (const Block* b = innermost->body->as<Block>()) {
        for (const Stmt& st : b->stmts)
          if (!hoisted.count(st.get())) emit(st);
      } else {
        emit(innermost->body);
      }
    };
    // After an error a thread of a parallel loop skips its remaining
    // iterations, and an error in an iteration leaves it. A vector loop
    // raises nothing (scalarize_raising_loops).
    const bool body_stops = may_stop(scan(innermost->body));
    PLAIT_ASSERT(!(body_stops && is_vectorized(sc.kind)));
    if (parallel && body_stops) {
      // Python raises the error of the first iteration that fails: the
      // thread notes the iteration it runs (in Python's order, the nest's
      // levels row by row), an iteration after a failed one is skipped, one
      // before it runs on, and its own error replaces the later one's
      // (plait::raise_error keeps the lowest iteration's).
      std::string at = levels[0].k;
      for (size_t d = 1; d < levels.size(); ++d) at = "(" + at + ") * " + levels[d].trip + " + " + levels[d].k;
      line("plait::parallel_iteration = " + at + ";");
      line("if (__builtin_expect(ctx->error_kind != 0, 0) && plait::stops(ctx)) {");
      line("  plait::parallel_iteration = -1;");
      line("  continue;");
      line("}");
      // In a region the thread that fails notes it for all (check_failed).
      ++parallel_iterations_;
      with_stop_label(emit_body, work_shared ? failed_flag() + " = true;" : "");
      --parallel_iterations_;
      line("plait::parallel_iteration = -1;");
    } else if (is_vectorized(sc.kind)) {
      const std::string outer_stop = std::exchange(stop_, "");
      emit_body();
      stop_ = outer_stop;
    } else {
      if (scan(innermost->body).has_loop) emit_interrupt_check();
      emit_body();
    }
    --loop_depth_;
    if (sc.kind != LoopKind::Serial) --omp_depth_;
    // IR nodes are shared: the pass may appear again where this row loop's
    // variables are not in scope.
    if (planned) prefetch_.erase(planned);
    scopes_.pop_back();
    --indent_;
    line("}");
    if (in_chunks) {  // the chunk loop
      --indent_;
      line("}");
    }
    if (!partials.empty()) {
      for (const ThreadPartial& part : partials) {
        var_names_[part.reduction->var.get()] = part.var;
        reset_flags_.erase(part.reduction->var.get());
      }
      emit_thread_order(partials);
      if (work_shared) {
        --indent_;
        line("}");
      }
    }
    if (own_team) {
      scopes_.pop_back();
      --indent_;
      line("}");
    }
    if (work_shared) {
      region_->pending = {};  // the barrier ending the `omp for`
      if (body_stops) check_failed();
    }
    for (const Level* lv : copy_back) {
      const Var& v = lv->loop->var;
      const std::string assign = "if (" + lv->trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) +
                                 ">(" + lv->begin + " + (" + lv->trip + " - 1) * " + lv->step + ");";
      if (work_shared && shared_in_region(v.get())) {
        line("#pragma omp single");
        line(assign);
      } else {
        line(assign);
      }
    }
    for (const auto& [r, b] : before)
      line(var_name(r->var) + " = plait::" + (r->op == ReduceOp::Max ? "py_max" : "py_min") + "<" +
           ctype(r->var->type) + ">(" + b + ", " + var_name(r->var) + ");");
    if (parallel && body_stops) stop_on_error();
    --indent_;
    line("}");
    region_level_ = work_shared;
  }

  // Whether evaluating the bounds of `nest` may record an error: an
  // expression that raises, or a step that may be zero.
  static bool bounds_may_raise(const std::vector<const For*>& nest) {
    for (const For* f : nest) {
      const IntImm* step = f->step->as<IntImm>();
      if (!step || step->value == 0 || scan(f->begin).facts.expressions || scan(f->end).facts.expressions) return true;
    }
    return false;
  }

  // A thread's partial result of a reduction updated as `m = max(x, m)`: the
  // variable's own name, the partial's and its flag's.
  struct ThreadPartial {
    const Reduction* reduction;
    std::string var, value, reset;
  };

  // Combines the threads' partial results in thread order. Each thread ran
  // one chunk of the iterations in order (`schedule(static)`: chunk k in
  // thread k), folding it from NaN, which the first update replaces. When an
  // element was NaN (the flag), the fold restarted there and its result does
  // not depend on what came before; otherwise it is the builtin applied to
  // the partial and the value so far, as one more update would; a thread
  // that updated nothing (NaN, no flag) leaves the value. Iteration t of the
  // `ordered schedule(static, 1)` loop runs in thread t, in order of t.
  void emit_thread_order(const std::vector<ThreadPartial>& partials) {
    const std::string t = temp("thread");
    line("#pragma omp for ordered schedule(static, 1)");
    line("for (int " + t + " = 0; " + t + " < omp_get_num_threads(); ++" + t + ") {");
    ++indent_;
    line("#pragma omp ordered");
    line("{");
    ++indent_;
    for (const ThreadPartial& part : partials) {
      const Reduction& r = *part.reduction;
      line("if (" + part.reset + ") " + part.var + " = " + part.value + ";");
      line("else if (" + part.value + " == " + part.value + ") " + part.var + " = plait::" +
           (r.op == ReduceOp::Max ? "py_max" : "py_min") + "<" + ctype(r.var->type) + ">(" + part.value + ", " +
           part.var + ");");
    }
    --indent_;
    line("}");
    --indent_;
    line("}");
  }

  // Where a row loop's compute-bound pass prefetches: the plan and the names
  // of the row loop's step, counter and trip count.
  struct PrefetchSite {
    const For* rows = nullptr;
    RowPrefetchPlan plan;
    std::string step, k, trip;
  };

  // Plans the prefetches of a loop over rows; returns the pass that runs in
  // chunks, or null.
  const For* plan_prefetch(const For* loop, const std::string& step, const std::string& k, const std::string& trip) {
    RowPrefetchPlan plan = plan_row_prefetch(loop);
    if (!plan.compute) return nullptr;
    std::string reads, writes;
    for (const PrefetchTarget& t : plan.targets) {
      std::string& names = t.write ? writes : reads;
      names += (names.empty() ? "'" : ", '") + t.array->name + "'";
    }
    std::string what;
    if (!reads.empty()) what = "the next row of " + reads;
    if (!writes.empty()) what += (what.empty() ? "" : " and ") + std::string("this row of ") + writes;
    remarks_.push_back({plan.compute->loc, "codegen_cpp",
                        "loop over '" + loop->var->name + "': its vector loop over '" + plan.compute->var->name +
                            "' (vector math) runs in chunks of " + std::to_string(kPrefetchChunk) +
                            " that prefetch " + what + " for the loop's other passes"});
    const For* compute = plan.compute;
    prefetch_[compute] = PrefetchSite{loop, std::move(plan), step, k, trip};
    return compute;
  }

  // Opens the chunk loop around a compute-bound pass (its trip count `trip`)
  // and emits the chunk's prefetches; *k_begin and *k_end receive the
  // chunk's iterations. The caller closes the chunk loop.
  void emit_prefetch_chunk(const PrefetchSite& site, const std::string& trip, std::string* k_begin,
                           std::string* k_end) {
    const std::string chunk = std::to_string(kPrefetchChunk);
    *k_begin = temp("chunk");
    *k_end = temp("chunk_end");
    line("for (int64_t " + *k_begin + " = 0; " + *k_begin + " < " + trip + "; " + *k_begin + " += " + chunk + ") {");
    ++indent_;
    line("const int64_t " + *k_end + " = " + trip + " - " + *k_begin + " < " + chunk + " ? " + trip + " : " + *k_begin +
         " + " + chunk + ";");
    const std::string row = var_name(site.rows->var);
    for (const PrefetchTarget& t : site.plan.targets) {
      const std::string q = temp("q");
      std::vector<std::string> idx;
      for (int d = 0; d < static_cast<int>(t.indices.size()); ++d) {
        if (d == t.row_dim) {
          idx.push_back(t.next_row ? "(" + row + " + " + site.step + ")" : row);
        } else if (d == t.column_dim) {
          idx.push_back("(" + q + " + " + std::to_string(t.column_begin + t.column_offset) + ")");
        } else {
          idx.push_back(index_value(t.indices[static_cast<size_t>(d)]));
        }
      }
      const std::string elem = "sizeof(" + ctype(t.array->type.dtype) + ")";
      // Integer arithmetic: the address may lie past the array (a prefetch
      // never faults), which pointer arithmetic would not allow.
      const std::string address = "reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(" + data(t.array) +
                                  ") + static_cast<uintptr_t>(" + offset(t.array, idx) + ") * " + elem + ")";
      line(std::string(t.next_row ? "if (" + site.k + " + 1 < " + site.trip + ") " : "") + "for (int64_t " + q +
           " = " + *k_begin + "; " + q + " < " + *k_end + "; " + q + " += static_cast<int64_t>(64 / " + elem +
           ")) __builtin_prefetch(" + address + ", " + (t.write ? "1" : "0") + ", 3);");
    }
  }

  // The cost estimate of a parallel loop's iteration: IR nodes, times
  // kAssumedInnerTrips when the body holds a loop.
  static int64_t body_cost(const For* innermost) {
    CostCounter cost;
    cost.visit(innermost->body);
    return std::max<int64_t>(cost.nodes, 1) * (cost.has_loop ? kAssumedInnerTrips : 1);
  }

  // ------------------------------------------------------------ parallel regions
  //
  // A serial loop around parallel loops (a time-step loop) runs as one
  // `omp parallel` region, so that the team starts once per call instead of
  // once per parallel loop and step. Every thread walks the serial loop (and
  // the ifs and serial loops between it and the parallel loops), computing
  // the same bounds and conditions; each parallel loop is an `omp for`
  // shared out over the team; other statements run in one thread under
  // `omp single`, whose closing barrier publishes what they wrote, or, when
  // they are pure and write only the thread's own variables, in every
  // thread. Variables declared before the region are shared; those declared
  // inside belong to each thread (a single passes them on with copyprivate).

  // Reads made by every thread since the last barrier: a construct that
  // writes any of them waits for the team first.
  struct PendingReads {
    VarSet vars;
    ArraySet loaded, dims;
    bool empty() const { return vars.empty() && loaded.empty() && dims.empty(); }
  };

  struct Region {
    std::vector<Var> hoisted_var_list;  // reduction accumulators declared inside: made shared
    VarSet hoisted_vars;
    std::vector<ArrayVar> hoisted_array_list;  // arrays declared inside: made shared
    ArraySet hoisted_arrays;
    VarSet assigned;   // anywhere in the loop, its variable included
    ArraySet written;  // elements stored anywhere in the loop
    ArraySet bound;    // allocated or rebound anywhere in the loop
    int parallel_loops = 0;
    int num_threads = 0;      // of its parallel loops' pragmas; 0 = the kernel's default
    size_t outer_scopes = 0;  // scopes_ below this index are outside the region
    PendingReads pending;
    // Whether something in the loop may record an error (raise, fail an
    // allocation or a check). Then every thread leaves the region after the
    // construct that recorded it (an `omp for`, a single: see check_failed),
    // and the call stops after the region.
    bool may_stop = false;
    std::string failed;  // shared bool[2]: a construct of the pass with this parity recorded an error
    std::string passes;  // each thread's count of the constructs it checked
    std::string exit;    // the label after the serial loop
  };

  // Why `loop` cannot run as one parallel region ("" when it can); fills in
  // what the region makes shared.
  std::string region_refusal(const For* loop, Region* r) {
    LeavesLoop leaves;
    leaves.visit(loop->body);
    if (leaves.found) return "the loop can end early, by a break or a return";
    const AccessScan all = scan(loop->body);
    if (all.assigned.count(loop->var.get())) return "the body assigns the loop variable";
    r->assigned = all.assigned;
    r->assigned.insert(loop->var.get());
    r->may_stop = may_stop(all);
    r->written = all.written;
    r->bound = all.bound;
    return check_region_stmt(loop->body, r);
  }

  std::string check_region_stmt(const Stmt& s, Region* r) {
    if (const Block* b = s->as<Block>()) {
      for (const Stmt& st : b->stmts)
        if (std::string why = check_region_stmt(st, r); !why.empty()) return why;
      return "";
    }
    const AccessScan sc = scan(s);
    if (!sc.has_parallel) return check_region_plain(s, sc, r);
    if (const If* i = s->as<If>()) {
      if (scan(i->cond).facts.expressions) return "the condition of an `if` around a parallel loop can raise an error";
      if (std::string why = check_region_stmt(i->then_case, r); !why.empty()) return why;
      return i->else_case ? check_region_stmt(i->else_case, r) : "";
    }
    const For* f = s->as<For>();
    if (!f) return "a while loop holds a parallel loop";
    if (scan(f->begin).facts.expressions || scan(f->end).facts.expressions || scan(f->step).facts.expressions)
      return "the bounds of the loop over '" + f->var->name + "' can raise an error";
    if (is_parallel(f->schedule.kind)) {
      if (r->parallel_loops++ == 0) {
        r->num_threads = f->schedule.num_threads;
      } else if (r->num_threads != f->schedule.num_threads) {
        return "its parallel loops ask for different numbers of threads";
      }
      // An `omp for` reduction combines into a shared variable.
      for (const Reduction& red : f->schedule.reductions)
        if (!declared(red.var.get()) && r->hoisted_vars.insert(red.var.get()).second) r->hoisted_var_list.push_back(red.var);
      return "";
    }
    if (f->schedule.kind != LoopKind::Serial) return "a vector loop holds a parallel loop";
    LeavesLoop leaves;
    leaves.visit(f->body);
    if (leaves.found) return "the loop over '" + f->var->name + "' around a parallel loop can end early";
    if (scan(f->body).assigned.count(f->var.get())) return "the body of the loop over '" + f->var->name + "' assigns its variable";
    return check_region_stmt(f->body, r);
  }

  std::string check_region_plain(const Stmt& s, const AccessScan& sc, Region* r) {
    if (const Declare* d = s->as<Declare>()) {
      if (d->array && r->hoisted_arrays.insert(d->array.get()).second) r->hoisted_array_list.push_back(d->array);
      return "";
    }
    if (sc.returns) return "a return inside the loop";
    if (const Assert* a = s->as<Assert>())
      return scan(a->cond).facts.expressions ? "a run-time check whose condition can itself raise an error" : "";
    if (sc.escapes) return "a break, continue or run-time check inside an `if` at the loop's level";
    if (sc.facts.allocations && s->kind != NodeKind::Allocate) return "an array is allocated inside a nested statement";
    return "";
  }

  Placement placement(const Stmt& s, const AccessScan& sc) const {
    if (sc.has_parallel) return Placement::Structure;
    if (const Declare* d = s->as<Declare>()) {
      if (d->array) return Placement::Single;  // empties the shared array
      return region_->hoisted_vars.count(d->var.get()) ? Placement::Single : Placement::Redundant;
    }
    if (s->kind == NodeKind::Assert) return Placement::Check;
    if (sc.facts.expressions || sc.facts.allocations || sc.returns || sc.facts.checks || sc.has_loop || sc.escapes || !sc.written.empty() ||
        !sc.bound.empty())
      return Placement::Single;
    for (const VarInfo* v : sc.assigned)
      if (shared_in_region(v)) return Placement::Single;
    return Placement::Redundant;
  }

  bool shared_in_region(const VarInfo* v) const {
    for (size_t i = 0; i < region_->outer_scopes; ++i)
      if (scopes_[i].count(v)) return true;
    return false;
  }

  // Records what every thread has just read of what the region changes.
  void note_reads(const AccessScan& sc) {
    for (const VarInfo* v : sc.read)
      if (region_->assigned.count(v) && shared_in_region(v)) region_->pending.vars.insert(v);
    for (const ArrayInfo* a : sc.loaded)
      if (region_->written.count(a) || region_->bound.count(a)) region_->pending.loaded.insert(a);
    for (const ArrayInfo* a : sc.dims)
      if (region_->bound.count(a)) region_->pending.dims.insert(a);
  }

  // A barrier before a construct that writes what other threads may still
  // be reading.
  void barrier_before(const AccessScan& writes) {
    const PendingReads& p = region_->pending;
    if (intersects(writes.assigned, p.vars) || intersects(writes.written, p.loaded) ||
        intersects(writes.bound, p.loaded) || intersects(writes.bound, p.dims)) {
      line("#pragma omp barrier");
      region_->pending = {};
    }
  }

  // The trip count of `f` when it can be computed before the region starts
  // (bounds that nothing in the region changes), else kAssumedInnerTrips.
  std::string trips_estimate(const For* f) {
    auto invariant = [&](const Expr& e) {
      const AccessScan sc = scan(e);
      if (sc.facts.expressions || !sc.loaded.empty() || intersects(sc.dims, region_->bound)) return false;
      for (const VarInfo* v : sc.read)
        if (!declared(v) || region_->assigned.count(v)) return false;
      return true;
    };
    const IntImm* step = f->step->as<IntImm>();
    if (step && step->value != 0 && invariant(f->begin) && invariant(f->end))
      return "static_cast<double>(plait::trip_count(" + expr(f->begin) + ", " + expr(f->end) + ", " + expr(f->step) + "))";
    return std::to_string(kAssumedInnerTrips) + ".0";
  }

  // The work of one pass over region-level code `s` (the parallel loops'
  // trip counts times their body costs), as a C++ expression.
  std::string region_work(const Stmt& s) {
    if (const Block* b = s->as<Block>()) {
      std::string sum;
      for (const Stmt& st : b->stmts)
        if (scan(st).has_parallel) sum += (sum.empty() ? "" : " + ") + region_work(st);
      return sum.empty() ? "0.0" : "(" + sum + ")";
    }
    if (const If* i = s->as<If>())
      return "(" + region_work(i->then_case) + (i->else_case ? " + " + region_work(i->else_case) : "") + ")";
    const For* f = s->as<For>();
    if (!f || !scan(s).has_parallel) return "0.0";
    if (!is_parallel(f->schedule.kind)) return "(" + trips_estimate(f) + " * " + region_work(f->body) + ")";
    std::string work;
    const std::vector<const For*> nest = collapse_nest(f);
    for (const For* level : nest) work += trips_estimate(level) + " * ";
    return "(" + work + std::to_string(body_cost(nest.back())) + ".0)";
  }

  // The barriers of one pass over region-level code `s` (one per `omp for`
  // and per group of statements run by one thread), estimated like
  // region_work, before the region's own variables exist.
  std::string region_syncs(const Stmt& s) {
    std::vector<Stmt> stmts;
    if (const Block* b = s->as<Block>()) {
      stmts = b->stmts;
    } else {
      stmts.push_back(s);
    }
    int groups = 0;
    bool in_group = false;
    std::string nested;
    for (const Stmt& st : stmts) {
      const AccessScan sc = scan(st);
      if (!sc.has_parallel) {
        bool single = false;
        if (const Declare* d = st->as<Declare>()) {
          single = d->array || region_->hoisted_vars.count(d->var.get());
        } else if (st->kind != NodeKind::Assert) {
          single = sc.facts.expressions || sc.facts.allocations || sc.has_loop || !sc.written.empty() || !sc.bound.empty();
          for (const VarInfo* v : sc.assigned) single = single || declared(v);
        }
        if (single && !in_group) ++groups;
        in_group = single;
        continue;
      }
      in_group = false;
      std::string part;
      if (const If* i = st->as<If>()) {
        part = "(" + region_syncs(i->then_case) + (i->else_case ? " + " + region_syncs(i->else_case) : "") + ")";
      } else if (st->kind == NodeKind::Block) {
        part = region_syncs(st);
      } else if (const For* f = st->as<For>(); f && is_parallel(f->schedule.kind)) {
        part = "1.0";
      } else if (f) {
        part = "(" + trips_estimate(f) + " * " + region_syncs(f->body) + ")";
      }
      if (!part.empty()) nested += " + " + part;
    }
    return nested.empty() ? std::to_string(groups) + ".0" : "(" + std::to_string(groups) + ".0" + nested + ")";
  }

  // The serial loop that a region is made of (`root` set), or a serial
  // loop inside the region around parallel loops: every thread runs it.
  void emit_region_loop(const For* loop, std::unique_ptr<Region> root) {
    line("{");
    ++indent_;
    const std::string begin = temp("begin"), end = temp("end"), step = temp("step"), trip = temp("trip"), k = temp("k");
    line("const int64_t " + begin + " = " + expr(loop->begin) + ";");
    line("const int64_t " + end + " = " + expr(loop->end) + ";");
    line("const int64_t " + step + " = " + expr(loop->step) + ";");
    line("const int64_t " + trip + " = " + checked_trip_count(loop, begin, end, step) + ";");
    const bool is_root = root != nullptr;
    std::string outer_stop;
    if (is_root) {
      region_ = std::move(root);
      for (const ArrayVar& a : region_->hoisted_array_list) declare_array(a);
      for (const Var& v : region_->hoisted_var_list) {
        line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + "{};");
        scopes_.back().insert(v.get());
      }
      if (region_->may_stop) {
        region_->failed = temp("failed");
        region_->passes = temp("passes");
        region_->exit = temp("exit");
        line("bool " + region_->failed + "[2] = {false, false};");
      }
      const std::string threads =
          region_->num_threads > 0 ? std::to_string(region_->num_threads) : std::string("ctx->num_threads");
      // The team starts when the whole loop's work reaches the threshold
      // (what starting a team costs) and each barrier inside has on average
      // as much to share out: with passive waiting a barrier puts threads
      // to sleep and wakes them like a start does (fdtd_2d at preset S, four
      // barriers per step of 1.2-1.9M node-iterations each, ran 1.6x slower
      // on 2 threads than on one).
      const std::string work = temp("work"), syncs = temp("syncs");
      line("const double " + work + " = " + region_work(loop->body) + ";");
      line("const double " + syncs + " = " + region_syncs(loop->body) + ";");
      line_directive(loop->loc);
      line("#pragma omp parallel num_threads(" + threads + ") if(static_cast<double>(" + trip + ") * " + work +
           " >= static_cast<double>(ctx->parallel_work_threshold) && " + work + " >= " + syncs +
           " * static_cast<double>(ctx->parallel_work_threshold))");
      line("{");
      ++indent_;
      if (region_->may_stop) line("int64_t " + region_->passes + " = 0;");
      region_->outer_scopes = scopes_.size();
      region_level_ = true;
      outer_stop = std::exchange(stop_, "");
    } else {
      note_reads(scan(loop->begin));
      note_reads(scan(loop->end));
      note_reads(scan(loop->step));
    }
    line("for (int64_t " + k + " = 0; " + k + " < " + trip + "; ++" + k + ") {");
    ++indent_;
    scopes_.emplace_back();
    // Each thread counts with its own copy of the loop variable.
    const Var& v = loop->var;
    line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin +
         " + " + k + " * " + step + ");");
    scopes_.back().insert(v.get());
    const PendingReads at_entry = region_->pending;
    ++loop_depth_;
    emit_region_stmts(loop->body);
    --loop_depth_;
    // The next iteration may write what this one read after its last barrier.
    if (!region_->pending.empty()) line("#pragma omp barrier");
    region_->pending = at_entry;  // the loop may run no iteration
    scopes_.pop_back();
    --indent_;
    line("}");
    const std::string copy_back = "if (" + trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
                                  begin + " + (" + trip + " - 1) * " + step + ");";
    if (is_root) {
      if (region_->may_stop) line(region_->exit + ":;");
      --indent_;
      line("}");
      region_level_ = false;
      stop_ = outer_stop;
      const bool stops = region_->may_stop;
      const int loops = region_->parallel_loops;
      region_.reset();
      remarks_.push_back({loop->loc, "codegen_cpp",
                          "loop over '" + v->name + "' runs as one parallel region: its " + std::to_string(loops) +
                              " parallel loop(s) share one thread team (`omp for`), started once per call"});
      if (declared(v.get())) line(copy_back);
      if (stops) stop_on_error();
    } else if (declared(v.get())) {
      if (shared_in_region(v.get())) {
        AccessScan writes;
        writes.assigned.insert(v.get());
        barrier_before(writes);
        line("#pragma omp single");
        line(copy_back);
        region_->pending = {};
      } else {
        line(copy_back);
      }
    }
    --indent_;
    line("}");
  }

  void emit_region_stmts(const Stmt& body) {
    std::vector<Stmt> stmts;
    if (const Block* b = body->as<Block>()) {
      stmts = b->stmts;
    } else {
      stmts.push_back(body);
    }
    for (size_t i = 0; i < stmts.size();) {
      const Placement p = placement(stmts[i], scan(stmts[i]));
      if (p != Placement::Single) {
        emit_region_stmt(stmts[i], p);
        ++i;
        continue;
      }
      // Consecutive single statements share one `omp single` (one barrier);
      // an allocation ends the group, whose failure every thread checks.
      size_t j = i + 1;
      while (j < stmts.size() && stmts[j - 1]->kind != NodeKind::Allocate &&
             placement(stmts[j], scan(stmts[j])) == Placement::Single)
        ++j;
      emit_single(std::vector<Stmt>(stmts.begin() + static_cast<std::ptrdiff_t>(i),
                                    stmts.begin() + static_cast<std::ptrdiff_t>(j)));
      i = j;
    }
  }

  void emit_region_stmt(const Stmt& s, Placement p) {
    switch (p) {
      case Placement::Single: return;
      case Placement::Redundant:
        region_level_ = false;
        emit(s);
        region_level_ = true;
        note_reads(scan(s));
        return;
      case Placement::Check: {
        // Every thread checks the same condition: all leave together.
        const std::string outer = std::exchange(stop_, "goto " + region_->exit + ";");
        region_level_ = false;
        emit(s);
        region_level_ = true;
        stop_ = outer;
        note_reads(scan(s));
        return;
      }
      case Placement::Structure:
        break;
    }
    if (const If* i = s->as<If>()) {
      line_directive(s->loc);
      note_reads(scan(i->cond));
      line("if (" + expr(i->cond) + ") {");
      const PendingReads at_entry = region_->pending;
      nested_region(i->then_case);
      if (i->else_case) {
        PendingReads after_then = region_->pending;
        region_->pending = at_entry;
        line("} else {");
        nested_region(i->else_case);
        region_->pending.vars.insert(after_then.vars.begin(), after_then.vars.end());
        region_->pending.loaded.insert(after_then.loaded.begin(), after_then.loaded.end());
        region_->pending.dims.insert(after_then.dims.begin(), after_then.dims.end());
      } else {
        region_->pending.vars.insert(at_entry.vars.begin(), at_entry.vars.end());
        region_->pending.loaded.insert(at_entry.loaded.begin(), at_entry.loaded.end());
        region_->pending.dims.insert(at_entry.dims.begin(), at_entry.dims.end());
      }
      line("}");
      return;
    }
    if (s->kind == NodeKind::Block) {
      line_directive(s->loc);
      line("{");
      nested_region(s);
      line("}");
      return;
    }
    emit(s);  // a loop: an `omp for`, or a serial loop every thread runs
  }

  void nested_region(const Stmt& s) {
    ++indent_;
    scopes_.emplace_back();
    emit_region_stmts(s);
    scopes_.pop_back();
    --indent_;
  }

  void emit_single(const std::vector<Stmt>& group) {
    AccessScan writes;
    for (const Stmt& s : group) writes.visit(s);
    barrier_before(writes);
    // A variable that a statement of the group declares for the rest of the
    // block is declared before the construct, in every thread.
    for (const Stmt& s : group) {
      const Assign* a = s->as<Assign>();
      if (a && !declared(a->var.get())) {
        line("[[maybe_unused]] " + ctype(a->var->type) + " " + var_name(a->var) + "{};");
        scopes_.back().insert(a->var.get());
      }
    }
    const bool stops = may_stop(writes);
    std::set<std::string> copied;
    for (const VarInfo* v : writes.assigned)
      if (declared(v) && !shared_in_region(v)) copied.insert(var_names_.at(v));
    std::string list;
    for (const std::string& name : copied) list += (list.empty() ? "" : ", ") + name;
    line("#pragma omp single" + (list.empty() ? std::string() : " copyprivate(" + list + ")"));
    line("{");
    ++indent_;
    scopes_.emplace_back();
    region_level_ = false;
    auto emit_group = [&] {
      for (const Stmt& s : group) emit(s);
    };
    if (stops) {
      // An error skips the rest of the group; the one thread notes it for
      // all (check_failed).
      with_stop_label(emit_group);
      line("if (ctx->error_kind != 0) " + failed_flag() + " = true;");
    } else {
      emit_group();
    }
    region_level_ = true;
    scopes_.pop_back();
    --indent_;
    line("}");
    region_->pending = {};
    if (stops) check_failed();
  }

  // The flag of this pass of the region's constructs that may record an
  // error. Each checked construct uses the other flag of the pair, so a fast
  // thread failing in the next one cannot change the flag that a slow thread
  // has yet to read from this one (a barrier lies between: that thread
  // cannot get two constructs ahead).
  std::string failed_flag() const { return region_->failed + "[" + region_->passes + " & 1]"; }

  // After the barrier ending a construct that may record an error: every
  // thread reads the same flag and leaves the region together.
  void check_failed() {
    line("if (" + failed_flag() + ") goto " + region_->exit + ";");
    line("++" + region_->passes + ";");
  }

  static std::string num_threads_clause(const LoopSchedule& sc) {
    return " num_threads(" + (sc.num_threads > 0 ? std::to_string(sc.num_threads) : std::string("ctx->num_threads")) +
           ")";
  }

  // Run in parallel only when there is enough work: trip count times the
  // body's IR node count (times kAssumedInnerTrips when the body holds a
  // loop) must reach the caller's ctx->parallel_work_threshold. The
  // `parallel:` modifier keeps a combined `parallel for simd` vectorised
  // when the team is not started.
  static std::string if_clause(const std::string& work, const For* innermost, bool combined) {
    return std::string(" if(") + (combined ? "parallel: " : "") + work + " * " + std::to_string(body_cost(innermost)) +
           ".0 >= static_cast<double>(ctx->parallel_work_threshold))";
  }

  // The statements at the top of a parallel loop's body that allocate a
  // temporary uninitialised, with extents the loop does not change, and
  // name it (its declarations and bindings), when the temporary does not
  // outlive the iteration: the one-row buffer `e` of a softmax. NumPy's
  // empty() promises no contents, so one buffer per thread serves every
  // iteration the thread runs, instead of an allocation per iteration.
  static std::vector<Stmt> per_thread_statements(const std::vector<const For*>& nest) {
    const For* innermost = nest.back();
    const Block* body = innermost->body->as<Block>();
    if (!body) return {};
    const analysis::VarUses in_body = analysis::uses_of(innermost->body);
    VarSet loop_vars;
    for (const For* f : nest) loop_vars.insert(f->var.get());
    // How often each array is bound (Allocate, ArrayBind) in the body, its
    // ArrayBinds, and whether an expression reads array elements.
    struct Binds : IRVisitor {
      ArrayMap<int> count;
      std::vector<const ArrayBind*> binds;
      bool loads = false;
      using IRVisitor::visit;
      void visit(const Allocate* a) override {
        ++count[a->array.get()];
        IRVisitor::visit(a);
      }
      void visit(const ArrayBind* b) override {
        ++count[b->dst.get()];
        binds.push_back(b);
      }
      void visit(const Load*) override { loads = true; }
    } all;
    all.visit(innermost->body);
    size_t run = 0;
    while (run < body->stmts.size() && (body->stmts[run]->kind == NodeKind::Declare ||
                                        body->stmts[run]->kind == NodeKind::Allocate ||
                                        body->stmts[run]->kind == NodeKind::ArrayBind))
      ++run;
    ArraySet declared, chosen;
    for (size_t k = 0; k < run; ++k)
      if (const Declare* d = body->stmts[k]->as<Declare>(); d && d->array) declared.insert(d->array.get());
    for (size_t k = 0; k < run; ++k) {
      const Allocate* a = body->stmts[k]->as<Allocate>();
      if (!a || a->fill != FillKind::Uninitialized) continue;
      bool ok = true;
      for (const Expr& e : a->shape) {
        Binds reads;
        reads.visit(e);
        const analysis::VarUses u = analysis::uses_of(e);
        ok = ok && !reads.loads;
        for (const VarInfo* v : u.reads) ok = ok && !in_body.writes.count(v) && !loop_vars.count(v);
        for (const ArrayInfo* x : u.arrays) ok = ok && !in_body.array_binds.count(x);
      }
      // The temporary and the names bound to it in the run: each declared in
      // the body, bound once, and bound to no name that outlives the body.
      ArraySet group = {a->array.get()};
      for (size_t j = k + 1; j < run; ++j)
        if (const ArrayBind* b = body->stmts[j]->as<ArrayBind>(); b && group.count(b->src.get()))
          group.insert(b->dst.get());
      for (const ArrayInfo* m : group) ok = ok && declared.count(m) && all.count[m] == 1;
      for (const ArrayBind* b : all.binds) ok = ok && (!group.count(b->src.get()) || group.count(b->dst.get()));
      if (ok) chosen.insert(group.begin(), group.end());
    }
    std::vector<Stmt> out;
    for (size_t k = 0; k < run; ++k) {
      const Stmt& st = body->stmts[k];
      const ArrayInfo* named = nullptr;
      if (const Declare* d = st->as<Declare>()) named = d->array.get();
      if (const Allocate* a = st->as<Allocate>()) named = a->array.get();
      if (const ArrayBind* b = st->as<ArrayBind>()) named = b->dst.get();
      if (named && chosen.count(named)) out.push_back(st);
    }
    return out;
  }

  // The OpenMP pragma of a loop; the reductions in `thread_order` are left
  // out (emit_thread_order combines them), and so is simd, which would not
  // run the thread's iterations in order; those in `nan_kept` use
  // plait_max/plait_min.
  std::string pragma(const For* loop, size_t depth, const For* innermost, bool work_shared, const std::string& work,
                     const VarSet& thread_order, const VarSet& nan_kept) {
    const LoopSchedule& sc = loop->schedule;
    std::string p;
    const LoopKind kind =
        sc.kind == LoopKind::ParallelVectorized && !thread_order.empty() ? LoopKind::Parallel : sc.kind;
    switch (kind) {
      case LoopKind::Parallel: p = work_shared ? "#pragma omp for schedule(static)" : "#pragma omp parallel for schedule(static)"; break;
      case LoopKind::ParallelVectorized:
        p = work_shared ? "#pragma omp for simd schedule(static)" : "#pragma omp parallel for simd schedule(static)";
        break;
      case LoopKind::Vectorized: p = "#pragma omp simd"; break;
      case LoopKind::Serial: return "";
    }
    if (is_parallel(sc.kind)) {
      // An `omp for` of a region runs on the region's team, whose `if`
      // clause weighed the work of the whole region.
      if (!work_shared) p += num_threads_clause(sc);
      if (depth > 1) p += " collapse(" + std::to_string(depth) + ")";
      if (!work_shared) p += if_clause(work, innermost, true);
      // Arrays (re)bound inside the body but declared outside it belong to
      // one iteration.
      ArrayCollector arrays;
      arrays.visit(innermost->body);
      std::vector<std::string> priv;
      for (const ArrayVar& a : arrays.used)
        if (arrays.bound.count(a.get()) && !arrays.declared.count(a.get()))
          for (const std::string& f : array_fields(a)) priv.push_back(f);
      if (!priv.empty()) {
        std::string list;
        for (const std::string& f : priv) list += (list.empty() ? "" : ", ") + f;
        p += " private(" + list + ")";
      }
    }
    if (is_vectorized(kind) && sc.simd_width > 0) p += " simdlen(" + std::to_string(sc.simd_width) + ")";
    for (const Reduction& r : sc.reductions) {
      if (thread_order.count(r.var.get())) continue;
      const std::string op = nan_kept.count(r.var.get()) ? std::string("plait_") + reduce_op_name(r.op)
                                                           : reduction_identifier(r.op, r.var->type.is_float());
      p += " reduction(" + op + ": " + var_name(r.var) + ")";
    }
    for (const ArrayReduction& r : sc.array_reductions) {
      std::string size;
      for (int d = 0; d < r.array->type.ndim; ++d) size += (d ? " * " : "") + extent(r.array, d);
      p += " reduction(" + reduction_identifier(r.op, r.array->type.dtype == ScalarKind::Float32 ||
                                                           r.array->type.dtype == ScalarKind::Float64) + ": " + data(r.array) + "[0:" + size + "])";
    }
    std::string privates;
    for (const Var& v : sc.privates)
      if (declared(v.get())) privates += (privates.empty() ? "" : ", ") + var_name(v);
    if (!privates.empty()) p += " private(" + privates + ")";
    // The combination in thread order that follows ends with the barrier.
    if (!thread_order.empty()) p += " nowait";
    if (is_parallel(sc.kind)) check_scalars_private(loop, innermost);
    return p;
  }

  // A pass that makes a loop parallel, or moves statements into one, must
  // say which scalars each thread keeps to itself: one it leaves out is an
  // internal error here rather than a race in the user's results.
  void check_scalars_private(const For* loop, const For* innermost) const {
    const LoopSchedule& sc = loop->schedule;
    AssignedScalars scalars;
    scalars.visit(innermost->body);
    for (const VarInfo* v : scalars.assigned) {
      if (scalars.declared.count(v) || !declared(v)) continue;
      bool kept = false;
      for (const Var& p : sc.privates) kept = kept || p.get() == v;
      for (const Reduction& r : sc.reductions) kept = kept || r.var.get() == v;
      if (!kept)
        PLAIT_INTERNAL_ERROR("parallel loop over `" + loop->var->name + "` assigns `" + v->name +
                             "`, declared outside it, which is neither private nor a reduction");
    }
  }

  void emit_return(const Return* r) {
    PLAIT_ASSERT(r->values.size() == fn_.results.size());
    for (size_t k = 0; k < r->values.size(); ++k) {
      const ReturnValue& v = r->values[k];
      const std::string res = "results[" + std::to_string(k) + "]";
      line(res + " = plait_result{};");
      if (v.scalar) {
        const ScalarKind kind = fn_.results[k].scalar.kind;
        line(res + ".is_array = 0;");
        line(res + ".dtype = " + dtype_code(kind) + ";");
        const std::string value = expr(v.scalar);
        const ScalarType type{kind, false};
        if (type.is_bool()) line(res + ".b = " + value + " ? 1 : 0;");
        else if (type.is_int()) line(res + ".i64 = static_cast<int64_t>(" + value + ");");
        else line(res + ".f64 = static_cast<double>(" + value + ");");
        continue;
      }
      const ArrayVar& a = v.array;
      line(res + ".is_array = 1;");
      line(res + ".dtype = " + dtype_code(a->type.dtype) + ";");
      line(res + ".ndim = " + std::to_string(a->type.ndim) + ";");
      line(res + ".array.data = " + data(a) + ";");
      for (int d = 0; d < a->type.ndim; ++d) {
        line(res + ".array.shape[" + std::to_string(d) + "] = " + extent(a, d) + ";");
        line(res + ".array.strides[" + std::to_string(d) + "] = " + stride(a, d) + ";");
      }
      if (array(a).has_owner) {
        // Kernel-allocated storage goes to the caller; borrowed arrays have no owner.
        line(res + ".owner = plait::export_owner(" + owner(a) + ");");
        line(res + ".release = " + res + ".owner ? &plait::release_owner : nullptr;");
      }
    }
    line("return ctx->error_kind;");
  }

  void emit_allocate(const Allocate* al) {
    const ArrayVar& a = al->array;
    const std::string t = ctype(a->type.dtype);
    const std::string shape = temp("shape");
    const std::string result = temp("alloc");
    std::string extents;
    for (const Expr& e : al->shape) extents += (extents.empty() ? "" : ", ") + index_value(e);
    const char* fill = "uninitialized";
    switch (al->fill) {
      case FillKind::Uninitialized: fill = "uninitialized"; break;
      case FillKind::Zeros: fill = "zeros"; break;
      case FillKind::Ones: fill = "ones"; break;
      case FillKind::Value: fill = "value"; break;
    }
    const std::string value = al->fill_value ? expr(al->fill_value) : t + "()";
    line("{");
    ++indent_;
    line("const int64_t " + shape + "[] = {" + extents + "};");
    line("plait::allocation<" + t + "> " + result + " = plait::allocate_array<" + t + ">(ctx, " + loc_args(al->loc) +
         ", " + std::to_string(a->type.ndim) + ", " + shape + ", " + (a->type.layout == Layout::F ? "true" : "false") +
         ", plait::fill_kind::" + fill + ", " + value + ");");
    // A failed allocation stops the code like any error; where nothing can
    // leave (a vector loop, a thread's temporaries) the array stays empty and
    // the construct around it stops.
    if (!stop_.empty()) {
      line("if (!" + result + ".ok) " + stop_);
      ++stop_uses_;
    }
    line(data(a) + " = " + result + ".data;");
    for (int d = 0; d < a->type.ndim; ++d) {
      line(extent(a, d) + " = " + result + ".shape[" + std::to_string(d) + "];");
      if (!unit_stride(a->type, d)) line(stride(a, d) + " = " + result + ".strides[" + std::to_string(d) + "];");
    }
    line(owner(a) + " = std::move(" + result + ".owner);");
    --indent_;
    line("}");
  }

  void emit_bind(const ArrayBind* b) {
    line(data(b->dst) + " = " + data(b->src) + ";");
    for (int d = 0; d < b->dst->type.ndim; ++d) {
      line(extent(b->dst, d) + " = " + extent(b->src, d) + ";");
      if (!unit_stride(b->dst->type, d)) line(stride(b->dst, d) + " = " + stride(b->src, d) + ";");
    }
    if (array(b->src).has_owner) {
      line(owner(b->dst) + " = " + owner(b->src) + ";");
    } else {
      line(owner(b->dst) + ".reset();");
    }
  }

  // ------------------------------------------------------------ errors

  // After code that may have recorded an error: the code after it must not
  // run.
  void stop_on_error() {
    if (stop_.empty()) return;
    // In an iteration of a parallel loop, another thread's error in a later
    // iteration does not stop this one (plait::stops).
    line(std::string("if (__builtin_expect(ctx->error_kind != 0, 0)") +
         (parallel_iterations_ > 0 ? " && plait::stops(ctx)) " : ") ") + stop_);
    ++stop_uses_;
  }

  // Emits `body()` in a block of its own from which an error jumps to a label
  // after the block (the block keeps the jump from crossing declarations).
  // `first` runs before the jump.
  template <typename Emit>
  void with_stop_label(Emit&& body, const std::string& first = "") {
    const std::string label = temp("stop");
    const std::string jump = "goto " + label + ";";
    const std::string outer = std::exchange(stop_, first.empty() ? jump : "{ " + first + " " + jump + " }");
    const int outer_uses = std::exchange(stop_uses_, 0);
    line("{");
    ++indent_;
    scopes_.emplace_back();
    body();
    scopes_.pop_back();
    --indent_;
    line("}");
    if (stop_uses_ > 0) line(label + ":;");
    stop_ = outer;
    stop_uses_ = outer_uses;
  }

  // At the top of a serial loop's iteration outside parallel code: a SIGINT
  // the caller noted stops the kernel with KeyboardInterrupt.
  void emit_interrupt_check() {
    if (stop_.empty() || region_ || omp_depth_ > 0) return;
    line("if (__builtin_expect(plait::interrupted(ctx), 0)) " + stop_);
    ++stop_uses_;
  }

  const Function& fn_;
  std::string path_;
  std::ostringstream out_;
  int indent_ = 0;
  int loop_depth_ = 0;  // loops around the statement being emitted
  int temp_counter_ = 0;
  int omp_depth_ = 0;  // enclosing parallel/simd loops
  int parallel_iterations_ = 0;     // enclosing iterations of parallel loops that note their iteration
  std::unique_ptr<Region> region_;  // the parallel region being emitted
  bool region_level_ = false;       // emitting a region's statements outside its `omp for` loops
  // What stops the code being emitted after a run-time error: a statement
  // (return, or a goto to the end of a parallel loop's iteration or of a
  // region's single), or empty where nothing may leave (a vector loop's
  // body, a region's statements outside its constructs); the construct
  // around such code then stops after it.
  std::string stop_ = "return ctx->error_kind;";
  int stop_uses_ = 0;  // of stop_ since it was set
  std::vector<Remark> remarks_;
  std::unordered_map<const For*, PrefetchSite> prefetch_;  // compute-bound passes that run in chunks
  VarMap<std::string> var_names_;
  VarMap<std::string> reset_flags_;  // of the thread partials being updated
  ArrayMap<ArrayLocal> arrays_;
  std::unordered_set<std::string> used_names_;
  std::vector<VarSet> scopes_;
};

}  // namespace

std::string generate_cpp(const Function& function, const CompileOptions& /*options*/, std::vector<Remark>* remarks) {
  CppEmitter emitter(function);
  std::string source = emitter.run();
  if (remarks) *remarks = emitter.remarks();
  return source;
}

}  // namespace plait::codegen
