// The CPU back end's emitter (codegen_cpp.h), shared by its parts:
// cpp_emitter_exprs.cpp (the kernel's frame and loads; names, the prologue
// and the other expressions are CEmitter's, codegen/c_emitter.h),
// cpp_emitter_stmts.cpp (statements, errors and returns),
// cpp_emitter_loops.cpp (loops and their OpenMP pragmas) and
// cpp_emitter_regions.cpp (parallel regions: several parallel loops in one
// team). Private to codegen/cpu.
//
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
#pragma once

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

#include "analysis/access_scan.h"
#include "analysis/loop_exits.h"
#include "analysis/raises.h"
#include "codegen/c_emitter.h"
#include "codegen/overlap_test.h"
#include "ir/ir_visitor.h"
#include "transforms/cpu/plan_omp_loops.h"
#include "transforms/cpu/plan_parallel_regions.h"
#include "transforms/cpu/plan_region_statements.h"
#include "transforms/cpu/plan_row_prefetch.h"

namespace plait::codegen {

using namespace ir;

namespace cpu {

using analysis::AccessScan;
using analysis::intersects;
using analysis::may_stop;
using analysis::scan;
using transforms::cpu::collapse_nest;
using transforms::cpu::has_omp_loop_plan;
using transforms::cpu::has_vector_variant;
using transforms::cpu::kPrefetchChunk;
using transforms::cpu::OmpLoopPlan;
using transforms::cpu::ParallelRegionPlan;
using transforms::cpu::Placement;
using transforms::cpu::PrefetchTarget;
using transforms::cpu::RegionStatementsPlan;
using transforms::cpu::RegionStep;
using transforms::cpu::RegionSteps;
using transforms::cpu::RowPrefetchPlan;

// The iterations assumed for a loop inside a parallel loop's body, whose
// trip count is not known when the team would start (the threshold itself is
// a run-time setting: plait_context::parallel_work_threshold).
inline constexpr int64_t kAssumedInnerTrips = 256;

// Counts IR nodes (the body cost estimate) and notices inner loops.
class CostCounter : public IRVisitor {
 public:
  int64_t nodes = 0;
  bool has_loop = false;
  using IRVisitor::visit;

 protected:
#define PLAIT_EXPR_NODE(n)             \
  void visit(const n* node) override { \
    ++nodes;                           \
    IRVisitor::visit(node);            \
  }
#define PLAIT_STMT_NODE(n)                                                             \
  void visit(const n* node) override {                                                 \
    ++nodes;                                                                           \
    if (node->kind == NodeKind::For || node->kind == NodeKind::While) has_loop = true; \
    IRVisitor::visit(node);                                                            \
  }
#include "ir/ir_nodes.def"
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

// How an array lives in the generated code.
class CppEmitter : public CEmitter {
 public:
  explicit CppEmitter(const Function& f) : CEmitter(f, /*narrow_in_uint32=*/false) {}

  // What the emitter decided about parallel regions, for explain().
  const std::vector<Remark>& remarks() const { return remarks_; }

  std::string run();

 private:
  // Reductions of float max/min that keep NaN (pragma): partial results
  // start from the infinity that any value replaces, and a NaN on either
  // side of a combination is its result. Only a NaN the variable held before
  // the loop (the builtin max(m, x) keeps it) or one np.maximum took can be
  // there, and Python keeps both.
  // The comparisons are written with `>` only: clang 14 rejects a combiner
  // that contains `omp_in < omp_out`.
  void emit_reduction_declarations();

  // The OpenMP reduction identifier of `op`; float extrema go through the
  // macros of emit_reduction_declarations.
  static std::string reduction_identifier(ReduceOp op, bool is_float);

  // ------------------------------------------------------------ naming

  // The fields of an array's locals, for private() clauses.
  std::vector<std::string> array_fields(const ArrayVar& a);

  // ------------------------------------------------------------ output

  // The trip count of loop `f` from its evaluated bounds: a zero step or a
  // range of more than 2**63 - 1 values raises at the loop's line (Python's
  // ValueError; a 64-bit counter cannot count the other) and runs no
  // iteration, instead of dividing by zero or wrapping to a negative count.
  std::string checked_trip_count(const For* f, const std::string& begin, const std::string& end,
                                 const std::string& step) const;

  // ------------------------------------------------------------ prologue

  // ------------------------------------------------------------ expressions

  std::string expr(const Expr& e) override { return expr_node(e); }
  std::string load(const Load* l) override;
  std::string error_sink() const override { return "ctx"; }
  std::ostringstream& out() override { return out_; }
  bool const_array_arguments() const override { return true; }
  bool vector_math(Intrinsic fn) const override { return has_vector_variant(fn); }

  // ------------------------------------------------------------ statements

  // A statement as the body of a construct: a Block's statements go in a new
  // scope without extra braces.
  void emit_contents(const Stmt& s) override;

  // A shared array or scalar of a parallel region is declared before it:
  // here it is emptied (Region::hoisted_arrays, hoisted_vars).
  void emit_declare(const Declare* d) override;
  // A thread's partial result is NaN after an update exactly when the
  // element was NaN (emit_thread_order).
  void after_update(const Assign* a) override;
  bool stops_after(const Expr& e) override { return !stop_.empty() && scan(e).facts.expressions; }
  void emit_stop() override { stop_on_error(); }
  void emit_assert(const Assert* a) override;
  // A product through plait_context::blas, its loops where the library
  // declines or none is loaded.
  void emit_matmul(const MatMul* mm) override;

  void emit_store(const Store* st) override;

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

  void emit_atomic(const AtomicUpdate* u) override;

  void emit_loop(const Stmt& s) override { emit_for(s->as<For>()); }
  // `step`: the plan of a loop at a parallel region's level (an `omp for`,
  // or a serial loop every thread runs).
  void emit_for(const For* loop, const RegionStep* step = nullptr);
  // A loop as its own statement, not as one parallel region: each parallel
  // loop inside starts its threads (or, under serial_only_, none does).
  void emit_plain_for(const For* loop, const RegionStep* step);

  // Whether evaluating the bounds of `nest` may record an error: an
  // expression that raises, or a step that may be zero.
  static bool bounds_may_raise(const std::vector<const For*>& nest);

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
  void emit_thread_order(const std::vector<ThreadPartial>& partials);

  // Where a row loop's compute-bound pass prefetches: the plan and the names
  // of the row loop's step, counter and trip count.
  struct PrefetchSite {
    const For* rows = nullptr;
    const RowPrefetchPlan* plan = nullptr;  // recorded on the loop, which outlives the emitter's use
    std::string step, k, trip;
  };

  // Plans the prefetches of a loop over rows; returns the pass that runs in
  // chunks, or null.
  const For* plan_prefetch(const For* loop, const std::string& step, const std::string& k, const std::string& trip);

  // Opens the chunk loop around a compute-bound pass (its trip count `trip`)
  // and emits the chunk's prefetches; *k_begin and *k_end receive the
  // chunk's iterations. The caller closes the chunk loop.
  void emit_prefetch_chunk(const PrefetchSite& site, const std::string& trip, std::string* k_begin, std::string* k_end);

  // The cost estimate of a parallel loop's iteration: IR nodes, times
  // kAssumedInnerTrips when the body holds a loop.
  static int64_t body_cost(const For* innermost);

  // ------------------------------------------------------------ parallel regions
  //
  // A serial loop around parallel loops (a time-step loop) runs as one
  // `omp parallel` region, so that the team starts once per call instead of
  // once per parallel loop and step. Every thread walks the serial loop (and
  // the ifs and serial loops between it and the parallel loops), computing
  // the same bounds and conditions; each parallel loop is an `omp for`
  // shared out over the team. Where each other statement runs (one thread
  // under `omp single`, or every thread) and where the barriers go are the
  // plan of transforms/cpu/plan_region_statements.h, which this prints.

  // The parallel region being printed: the plans of its loop
  // (transforms/cpu/plan_parallel_regions.h, plan_region_statements.h) and
  // where the printing stands.
  struct Region {
    Region(const ParallelRegionPlan& p, const RegionStatementsPlan& s) : plan(p), statements(s) {
      for (const Var& v : p.hoisted_vars) hoisted_vars.insert(v.get());
      for (const ArrayVar& a : p.hoisted_arrays) hoisted_arrays.insert(a.get());
    }
    const ParallelRegionPlan& plan;
    const RegionStatementsPlan& statements;
    VarSet hoisted_vars;
    ArraySet hoisted_arrays;
    // Where the plan says the loop may record an error, every thread leaves
    // the region after the construct that recorded it (an `omp for`, a
    // single: see check_failed), and the call stops after the region.
    std::string failed;  // shared bool[2]: a construct of the pass with this parity recorded an error
    std::string passes;  // each thread's count of the constructs it checked
    std::string exit;    // the label after the serial loop
  };

  // The trip count of `f` when it can be computed before the region starts
  // (bounds that nothing in the region changes), else kAssumedInnerTrips.
  std::string trips_estimate(const For* f);

  // The work of one pass over region-level code `s` (the parallel loops'
  // trip counts times their body costs), as a C++ expression.
  std::string region_work(const Stmt& s);

  // The barriers of one pass over region-level code `s` (one per `omp for`
  // and per group of statements run by one thread), estimated like
  // region_work, with the scalars the region shares as its plan records
  // them (RegionStatementsPlan::shared).
  std::string region_syncs(const Stmt& s);

  // The serial loop that a region is made of (`root` set), or a serial
  // loop inside the region around parallel loops (its plan `step`): every
  // thread runs it.
  void emit_region_loop(const For* loop, std::unique_ptr<Region> root, const RegionStep* step);
  // A region's loop as serial code, for when its work does not pay for a team.
  void emit_serial_version(const For* loop);

  void emit_region_stmts(const RegionSteps& steps);

  void emit_region_stmt(const RegionStep& step);

  void nested_region(const RegionSteps& steps);

  void emit_single(const RegionStep& step);

  // The flag of this pass of the region's constructs that may record an
  // error. Each checked construct uses the other flag of the pair, so a fast
  // thread failing in the next one cannot change the flag that a slow thread
  // has yet to read from this one (a barrier lies between: that thread
  // cannot get two constructs ahead).
  std::string failed_flag() const { return region_->failed + "[" + region_->passes + " & 1]"; }

  // After the barrier ending a construct that may record an error: every
  // thread reads the same flag and leaves the region together.
  void check_failed();

  static std::string num_threads_clause(const LoopSchedule& sc);

  // Run in parallel only when there is enough work: trip count times the
  // body's IR node count (times kAssumedInnerTrips when the body holds a
  // loop) must reach the caller's ctx->parallel_work_threshold. The
  // `parallel:` modifier keeps a combined `parallel for simd` vectorised
  // when the team is not started.
  static std::string if_clause(const std::string& work, const For* innermost, bool combined);

  // The OpenMP pragma of a loop as `sc` schedules it; the reductions in
  // `thread_order` are left out (emit_thread_order combines them), and so
  // is simd, which would not run the thread's iterations in order; those in
  // `nan_kept` use plait_max/plait_min. `work` is the iterations' count for
  // the `if` clause of a loop that starts its team ("": no clause, the
  // caller branched on it).
  std::string pragma(const For* loop, const LoopSchedule& sc, size_t depth, const For* innermost, bool work_shared,
                     const std::string& work, const VarSet& thread_order, const VarSet& nan_kept);

  // A pass that makes a loop parallel, or moves statements into one, must
  // say which scalars each thread keeps to itself: one it leaves out is an
  // internal error here rather than a race in the user's results.
  void check_scalars_private(const For* loop, const For* innermost) const;

  void emit_allocate(const Allocate* al) override;

  // ------------------------------------------------------------ errors

  // After code that may have recorded an error: the code after it must not
  // run.
  void stop_on_error();

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
  void emit_interrupt_check() override;

  std::ostringstream out_;
  int omp_depth_ = 0;               // enclosing parallel/simd loops
  int parallel_iterations_ = 0;     // enclosing iterations of parallel loops that note their iteration
  std::unique_ptr<Region> region_;  // the parallel region being emitted
  bool region_level_ = false;       // emitting a region's statements outside its `omp for` loops
  // Emitting the serial version of a region's loop (what runs when its work
  // does not pay for a team): parallel loops run as serial (and vector)
  // loops, with no OpenMP construct that costs a call at run time.
  bool serial_only_ = false;
  // What stops the code being emitted after a run-time error: a statement
  // (return, or a goto to the end of a parallel loop's iteration or of a
  // region's single), or empty where nothing may leave (a vector loop's
  // body, a region's statements outside its constructs); the construct
  // around such code then stops after it.
  std::string stop_ = "return ctx->error_kind;";
  int stop_uses_ = 0;  // of stop_ since it was set
  std::vector<Remark> remarks_;
  std::unordered_map<const For*, PrefetchSite> prefetch_;  // compute-bound passes that run in chunks
  VarMap<std::string> reset_flags_;                        // of the thread partials being updated
};

}  // namespace cpu
}  // namespace plait::codegen
