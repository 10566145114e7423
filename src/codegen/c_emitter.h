// What the CPU (C++ with OpenMP) and CUDA back ends print alike: C names of
// types and values, the names of locals and arrays, and expressions with
// Python's semantics over the runtime's helpers (runtime/portable_runtime.h
// holds the arithmetic both compute alike; runtime/plait_runtime.h on the
// host and runtime/cuda_device_runtime.cuh on the GPU declare the same
// plait:: names for the rest). CEmitter is the base of both emitters
// (cpu/cpp_emitter.h, cuda/cuda_emitter.h); a back end supplies only what
// differs: where a raising helper records its error, the math library's
// names, and how integers narrower than int compute.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/ir.h"
#include "ir/ir_visitor.h"
#include "runtime/abi.h"

namespace plait::codegen {

// ------------------------------------------------------------ C vocabulary

// The dtype code of runtime/abi.h (PLAIT_FLOAT64, ...).
std::string dtype_code(ScalarKind k);
std::string ctype(ScalarType t);
std::string ctype(ScalarKind k);
// A Python name as a C identifier part.
std::string sanitize(const std::string& name);
// Escapes text for a C++ string literal (a path in #line, a message).
std::string escape_path(const std::string& path);
std::string int_literal(int64_t v, ScalarKind k);
// Integers narrower than int are promoted to int by C++ arithmetic; the
// result is cast back so that it wraps as NumPy's does.
bool promoted_by_cpp(ScalarType t);

// Collects the arrays a subtree mentions and those it (re)binds.
class ArrayCollector : public ir::IRVisitor {
 public:
  std::vector<ir::ArrayVar> used;  // in first-use order
  ir::ArraySet bound;              // targets of Allocate / ArrayBind
  ir::ArraySet declared;           // arrays with a Declare
  const ir::Allocate* first_allocate = nullptr;
  using IRVisitor::visit;

 protected:
  void note(const ir::ArrayVar& a) {
    if (seen_.insert(a.get()).second) used.push_back(a);
  }
  void visit(const ir::Load* n) override;
  void visit(const ir::ArrayDim* n) override { note(n->array); }
  void visit(const ir::ArraysOverlap* n) override;
  void visit(const ir::Store* n) override;
  void visit(const ir::AtomicUpdate* n) override;
  void visit(const ir::Allocate* n) override;
  void visit(const ir::ArrayBind* n) override;
  void visit(const ir::Declare* n) override;
  void visit(const ir::Return* n) override;

 private:
  ir::ArraySet seen_;
};

// The locals of an array: a_<name>_data, a_<name>_n<d>, a_<name>_s<d>.
struct ArrayLocal {
  std::string base;        // a_<name>: fields base_data, base_n<d>, base_s<d>
  bool has_owner = false;  // allocated or rebound: base_owner keeps storage alive
};

// ------------------------------------------------------------ the base emitter

class CEmitter {
 public:
  virtual ~CEmitter() = default;

 protected:
  // `narrow_in_uint32`: integers narrower than int compute in uint32_t
  // (device code, whose compiler has no -fwrapv: a 16-bit product
  // overflows int), else in int, which the host's -fwrapv wraps.
  CEmitter(const ir::Function& f, bool narrow_in_uint32)
      : fn_(f), path_(escape_path(f.source.path)), narrow_in_uint32_(narrow_in_uint32) {}

  // ---- what a back end supplies

  // An expression (a back end may serve some from registers) and a load.
  virtual std::string expr(const ir::Expr& e) = 0;
  virtual std::string load(const ir::Load* l) = 0;
  // Where a raising helper records its error.
  virtual std::string error_sink() const = 0;
  // Whether the code being printed runs on the GPU.
  virtual bool device_code() const { return false; }
  // A math function: std::name, or the device runtime's.
  virtual std::string math(const std::string& name) const { return "std::" + name; }
  // Whether plain (not Python-checked) math of `fn` on floats calls the
  // runtime's vectorisable plait_vm_<name>.
  virtual bool vector_math(ir::Intrinsic /*fn*/) const { return false; }
  // A statement as the body of a construct.
  virtual void emit_contents(const ir::Stmt& s) = 0;
  // Where lines go: the host part, or the device part being printed.
  virtual std::ostringstream& out() = 0;
  // Whether the locals of an array argument that the kernel never rebinds
  // are const (the CPU's; a CUDA kernel's launch code takes their
  // addresses).
  virtual bool const_array_arguments() const { return false; }

  // ---- statements whose printing differs by target (see emit)

  // A scalar's or an array's declaration: by default its local, empty.
  virtual void emit_declare(const ir::Declare* d);
  // A scalar assignment: by default the update of its local, or the local
  // declared with its value, then the stop after an error the value may
  // record; `after_update` follows an update of a declared local.
  virtual void emit_assign(const ir::Assign* a);
  virtual void after_update(const ir::Assign* /*a*/) {}
  virtual void emit_store(const ir::Store* st) = 0;
  virtual void emit_atomic(const ir::AtomicUpdate* u) = 0;
  // `s`, a For statement.
  virtual void emit_loop(const ir::Stmt& s) = 0;
  virtual void emit_assert(const ir::Assert* a) = 0;
  virtual void emit_allocate(const ir::Allocate* al) = 0;
  virtual void emit_matmul(const ir::MatMul* mm) = 0;
  // A library product's arguments, shared by the targets' emit_matmul: a
  // matrix as its data and row and column strides (those of its transpose
  // when `transposed`); a solve's vector as its first element and step (a
  // row of a matrix where the product names one); and the check, before
  // the call, that the solve's row condition holds for each of `rows` rows
  // (into the bool `ok`, declared here, true without a condition).
  std::string blas_matrix(const ir::ArrayVar& x, bool transposed);
  // A full product's arguments after ctx: dtype, m, n, k, alpha, A, B, beta, whether C is read, C;
  // a triangle's: dtype, upper, its `rows`, k, alpha, A, B, alpha2, A2, B2 (or none), beta, whether C is read, C.
  std::string gemm_arguments(const ir::MatMul* mm);
  std::string gemmt_arguments(const ir::MatMul* mm, const std::string& rows);
  std::string blas_vector(const ir::MatMulTriangle& tri, const ir::ArrayVar& x);
  void emit_rows_hold(const ir::MatMulTriangle& tri, const std::string& rows, const std::string& ok);
  // Whether the code stops after evaluating `e` (it may record an error
  // where the code being printed can stop), and the line(s) that stop it.
  virtual bool stops_after(const ir::Expr& e) = 0;
  virtual void emit_stop() = 0;
  // What opens every iteration of a while loop (the CPU's Ctrl-C test).
  virtual void emit_interrupt_check() {}

  // ---- output

  void line(const std::string& text) { out() << std::string(static_cast<size_t>(indent_) * 2, ' ') << text << "\n"; }
  void line_directive(const SourceLoc& loc);

  // ---- names

  std::string unique(const std::string& wanted);
  const std::string& var_name(const ir::Var& v);
  std::string temp(const std::string& what) { return "p_" + what + std::to_string(++temp_counter_); }
  ArrayLocal& array(const ir::ArrayVar& a);
  static bool unit_stride(const ArrayType& t, int d);
  std::string data(const ir::ArrayVar& a) { return array(a).base + "_data"; }
  std::string extent(const ir::ArrayVar& a, int d) { return array(a).base + "_n" + std::to_string(d); }
  std::string stride(const ir::ArrayVar& a, int d);
  std::string owner(const ir::ArrayVar& a) { return array(a).base + "_owner"; }
  bool declared(const ir::VarInfo* v) const;
  // The line and the character column of `loc` (Python's count, which
  // the run-time error's caret follows), as arguments of a raising helper.
  std::string loc_args(const SourceLoc& loc) const;

  // ---- expressions

  // Every node but those a back end serves itself (expr) or loads.
  std::string expr_node(const ir::Expr& e);
  std::string float_literal(double v, ScalarKind k) const;
  std::string cast(const ir::Cast* c);
  std::string unary(const ir::Unary* u);
  std::string binary(const ir::Binary* b);
  std::string call(const ir::Call* c);
  // The element offset of `indices` (already printed) in array `a`.
  std::string offset(const ir::ArrayVar& a, const std::vector<std::string>& indices);
  std::string index_value(const ir::Expr& e);
  // The test that every index of an access is in range (raising IndexError
  // at `loc` when not); `names` receives the indices' names and `decls`
  // their declarations.
  std::string bound_checks(const ir::ArrayVar& a, const std::vector<ir::Expr>& indices, const SourceLoc& loc,
                           std::vector<std::string>* names, std::string* decls);
  // The runtime's atomic update of an element of `kind` by `op`.
  static std::string atomic_function(ir::AtomicOp op, ScalarKind kind);

  // ---- statements alike on both targets (host code on the GPU's)

  // Statement `s`, its construct printed here or by the target's hook
  // above.
  void emit(const ir::Stmt& s);
  // `s` as the body of a construct, one level deeper.
  void nested(const ir::Stmt& s);
  void emit_if(const ir::If* i);
  // A condition that may stop the code is evaluated at the top of the
  // body, so that an error stops the loop before its next iteration.
  void emit_while(const ir::While* w);

  // The entry's prologue: typed locals of the arguments, and of the arrays
  // the kernel allocates or binds that no Declare declares.
  void emit_prologue();
  // The locals of a non-parameter array: empty until allocated or bound.
  void declare_array(const ir::ArrayVar& a);
  // The entry's body, after its opening line: the prologue, the function's
  // statements and the return of the error state when they do not return.
  void emit_entry_body();
  // The names of a loop's evaluated bounds, its trip count and counter,
  // with the bounds declared.
  struct LoopBounds {
    std::string begin, end, step, trip, k;
  };
  LoopBounds declare_loop_bounds(const ir::For* loop);
  // A block that allocates `al`'s array by the runtime's `allocator` (its
  // arguments after the fill value: `extra_args`), tests the result with
  // `on_failure` (none when empty) and binds the array to it.
  void emit_allocation(const ir::Allocate* al, const std::string& allocator, const std::string& extra_args,
                       const std::string& on_failure);
  // The results handed to the caller (runtime/abi.h, plait_result).
  void emit_return(const ir::Return* r);
  // Binds array `a`'s locals to a new allocation, `result` (a
  // plait::allocation), which hands its storage to a's owner.
  void take_allocation(const ir::ArrayVar& a, const std::string& result);
  // `dst = src` for arrays: dst's locals take src's view; on the host its
  // owner shares src's storage (or none, for a borrowed array).
  void emit_bind(const ir::ArrayBind* b);
  // The runtime's name of an allocation's fill.
  static const char* fill_name(ir::FillKind fill);
  static bool ends_with_return(const ir::Stmt& body);

  const ir::Function& fn_;
  std::string path_;
  int indent_ = 0;
  int loop_depth_ = 0;  // loops around the statement being emitted, in its own code (host or kernel)
  int temp_counter_ = 0;
  ir::VarMap<std::string> var_names_;
  ir::ArrayMap<ArrayLocal> arrays_;
  std::unordered_set<std::string> used_names_;
  std::vector<ir::VarSet> scopes_;

 private:
  bool narrow_in_uint32_;
};

}  // namespace plait::codegen
