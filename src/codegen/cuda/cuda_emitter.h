// The CUDA back end's emitter (codegen_cuda.h), in parts over this class:
// cuda_emitter_exprs.cpp (the kernel's frame, values in registers, loads),
// cuda_emitter_stmts.cpp (statements, matrix products, device stops),
// cuda_emitter_launches.cpp (serial loops, kernel parameters and launches,
// reductions' identities), cuda_emitter_spread.cpp (loops a team spreads),
// cuda_emitter_teams.cpp (team bodies and temporaries of parallel loops),
// cuda_emitter_workers.cpp (staged-rows and batched worker loops),
// cuda_emitter_parallel_kernel.cpp (a parallel loop's kernel and its
// versions), cuda_emitter_persistent.cpp (time loops as one kernel),
// cuda_emitter_onchip.cpp (arrays in shared memory and registers) and
// cuda_emitter_serial.cpp (serial loops on the device, host regions,
// returns and allocations). Private to codegen/cuda.
//
// The CUDA back end: IR -> host C++ (the function outside parallel loops,
// launching kernels through plait_context::cuda) + device CUDA C++ (one
// __global__ kernel per outermost parallel loop and per single-thread device
// region). See codegen_cuda.h for the mapping.
//
// Both parts use the same names for the same values: a scalar `x` is v_x in
// host code and in every kernel that receives it as a parameter, an array
// `A` is a_A_data / a_A_n<d> / a_A_s<d>. Kernels receive what they read by
// value; scalars a kernel assigns and the host reads afterwards travel
// through 8-byte slots of the call's scratch buffer.
#pragma once

#include "codegen/cuda/cuda_emitter_support.h"

namespace plait::codegen::cuda_emitter {

class CudaEmitter : public CEmitter {
 public:
  CudaEmitter(const Function& f, const CudaLaunchConfig& launch)
      : CEmitter(f, /*narrow_in_uint32=*/true), launch_(launch), block_size_(launch.threads) {}

  CudaSources run();

 private:
  bool device() const { return mode_ == Mode::Device; }
  // Where a raising helper records its error: host code's context; in a
  // thread's work with a stop (with_device_stop), the thread's view of the
  // record, which remembers that it raised; else the record.
  std::string sink() const { return !device() ? "ctx" : stop_.empty() ? "p_err" : "&p_errs"; }
  std::string error_sink() const override { return sink(); }
  bool device_code() const override { return device(); }
  std::string math(const std::string& name) const override { return (device() ? "plait::fm::" : "std::") + name; }

  void remark(const SourceLoc& loc, const std::string& message);

  // ------------------------------------------------------------ output

  std::ostringstream& out() override { return device() ? device_ : host_; }

  // The trip count of loop `f` from its evaluated bounds. The host checks
  // the range as the CPU target does (plait::checked_trip_count: a zero step
  // raises ValueError, more than 2**63 - 1 values OverflowError, and the
  // loop runs no iteration) instead of dividing by zero; device code does
  // not check (docs/cuda.md, "Not yet").
  std::string trip_count(const For* f, const std::string& begin, const std::string& end, const std::string& step) const;

  // ------------------------------------------------------------ prologue

  // ------------------------------------------------------------ expressions

  // A value kept in registers (cached_values_), or the node.
  std::string expr(const Expr& e) override;

  // An element read: direct in device code; on the host a copy of the one
  // element from device memory.
  std::string element(const ArrayVar& a, const std::string& off);

  // The load of the element that `s` stores when `s` is a relaxation, an
  // update `a[e] = min(a[e], y)` or `max(a[e], y)` (`same_element(l)`: l
  // reads the element that `s` writes); nullptr otherwise. A relaxation that
  // leaves an element as it was need not store it: memory still holds the
  // loaded bits when nothing else writes the element in between, which the
  // caller ensures.
  static const Load* relaxation_load(const Store* s, const std::function<bool(const Load*)>& same_element);

  std::string load(const Load* l) override;

  // A load made once for its group of iterations (emit_spread_loop), or from memory.
  std::string group_or_memory_load(const Load* l);

  std::string memory_load(const Load* l);

  // ------------------------------------------------------------ statements

  // A statement as the body of a construct. On the host, consecutive
  // statements that touch array elements and can run on the device are
  // grouped into single-thread device regions.
  void emit_contents(const Stmt& s) override;

  // The scalars a device region (`run`, followed by `stmts[next]`...)
  // assigns that can stay on the device: declared in this block, and
  // afterwards read only by parallel loops of the block (not in their
  // bounds, not assigned there, no arrays allocated in them, whose sizes
  // the host computes) — gramschmidt's `R[k, k]`, read back per column
  // before.
  VarSet stays_on_device(const std::vector<Stmt>& run, const std::vector<Stmt>& stmts, size_t next);

  // Whether the reductions of the parallel loop `stmts[k]` can leave their
  // results in device memory, so that the host neither stages nor reads
  // them back (each a synchronisation: a triangular solve's row loop waited
  // for the GPU twice per row): the host reads none of them again; only the
  // device region right after the loop (the statements that follow it and
  // run on the device) reads them, without assigning them; each is declared
  // in this block, so nothing after the block sees it.
  bool results_stay_on_device(const std::vector<Stmt>& stmts, size_t k);

  // Whether one of stmts[0..end) declares `v`.
  static bool declares(const std::vector<Stmt>& stmts, size_t end, const VarInfo* v);

  // Whether a collector saw `v` (read or written).
  static bool collected(const ScalarMentions& c, const VarInfo* v);

  // Whether a host statement becomes (part of) a single-thread device region.
  static bool runs_on_device(const Stmt& s);

  // A For statement: a parallel loop's kernel, a time loop as one
  // persistent kernel, a serial loop run on the device, a parallel loop in
  // a persistent kernel's step, or a loop in order (emit_serial_for).
  void emit_loop(const Stmt& s) override;
  // A scalar update; a spread loop's `m = max(x, m)` whose team looks for
  // NaN goes to emit_nan_checked_update.
  void emit_assign(const Assign* a) override;
  // Device code stops after an error where the thread can leave its work;
  // host code after an error that device code recorded, or its own.
  bool stops_after(const Expr& e) override {
    return device() ? device_can_stop() && analysis::raises(e).expressions : host_may_stop(e);
  }
  void emit_stop() override {
    if (device()) {
      stop_on_device_error();
    } else {
      line(kHostStop);
    }
  }

  // The product through the runtime's BLAS entry (cuBLAS), or its loops
  // when the library declines these operands (abi.h says when). A triangle
  // goes to `gemmt` (`trmm` for a product in place, `symm` for a symmetric
  // one, `trsv` for a solve) once its row condition holds for every row.
  void emit_matmul(const MatMul* mm) override;

  // `m = max(x, m)` (or min) in a spread loop whose team looks for NaN:
  // `m = max(m, x)`, noting whether x is NaN.
  void emit_nan_checked_update(const Assign* a, const std::string& nan_seen);

  // After device code that may have recorded an error, where the thread can
  // leave its work (stop_ set): the code after it must not run. The thread
  // tests its own errors (thread_errors, in a register); another thread's
  // error stops it where it takes its next iteration, as on the CPU.
  //
  // A persistent kernel's step-level statements run in every thread alike
  // (no stop_): there a barrier that answers for all threads follows the
  // statement, so that the code after it does not run either. A thread
  // alone could see another block's error and leave without the others.
  void stop_on_device_error();
  bool device_can_stop() const { return !stop_.empty() || persistent_step_; }

  // Emits `body()` (device code of one thread: a worker's iteration, a
  // single-thread kernel's statements) in a block of its own, from which an
  // error jumps to a label after the block, so that the thread's statements
  // after the failing one do not run, in loops of the body too. The block
  // keeps the jump from crossing declarations. Code whose threads must stay
  // together (a team's body, between its barriers) has no stop_: there an
  // error leaves only the iteration of the failing statement's own loop.
  template <typename Emit>
  void with_device_stop(Emit&& body) {
    const std::string label = temp("stop");
    const std::string outer = std::exchange(stop_, "goto " + label + ";");
    const int outer_uses = std::exchange(stop_uses_, 0);
    line("{");
    ++indent_;
    if (outer.empty()) line("[[maybe_unused]] plait::thread_errors p_errs{p_err, false};");
    scopes_.emplace_back();
    body();
    scopes_.pop_back();
    --indent_;
    line("}");
    if (stop_uses_ > 0) line(label + ":;");
    stop_ = outer;
    stop_uses_ = outer_uses;
  }

  // Whether host code must test for an error after evaluating `e`: it may
  // raise, or it reads the GPU's memory, which waits for the stream and
  // reports an error that device code recorded (plait_cuda_api's
  // copy_to_host), so that the host stops at its first synchronisation.
  static bool host_may_stop(const Expr& e);
  static constexpr const char* kHostStop = "if (__builtin_expect(ctx->error_kind != 0, 0)) return ctx->error_kind;";

  // A failed assertion records its error, then stops the host code (the
  // call ends), or the device thread's work (stop_; where there is none,
  // its loop iteration, or its thread outside loops).
  void emit_assert(const Assert* a) override;

  void emit_store(const Store* st) override;

  // A device statement that writes one element: `update(indices, value)`
  // with the value's text `value_text` (of `value_expr`). When the value or
  // a subscript may raise, or the subscript is checked, the value and the
  // subscript's checks go into temporaries and the element is written only
  // when no error was recorded: a failed statement's stand-in value is never
  // stored. Where the thread can stop (stop_), one test after them stops it
  // (the first error wins, so when the value raised, a failed check after it
  // records nothing, as Python never evaluates that subscript); elsewhere (a
  // team's body) only the store is left out.
  template <typename Update>
  void emit_element_update(const ArrayVar& a, const std::vector<Expr>& indices, const Expr& value_expr,
                           const std::string& value_text, bool checked, const SourceLoc& loc, Update&& update) {
    const bool can_stop = !stop_.empty();
    const bool value_raises = analysis::raises(value_expr).expressions;
    bool index_raises = false;
    for (const Expr& i : indices) index_raises = index_raises || analysis::raises(i).expressions;
    if (!checked && !value_raises && !(can_stop && index_raises)) {
      std::vector<std::string> idx;
      for (const Expr& i : indices) idx.push_back(index_value(i));
      line(update(idx, value_text));
      return;
    }
    const std::string value = temp("value");
    line("{");
    ++indent_;
    line("const " + ctype(a->type.dtype) + " " + value + " = " + value_text + ";");
    std::vector<std::string> names;
    std::string when;
    if (!checked) {
      for (const Expr& i : indices) {
        names.push_back(temp("i"));
        line("const int64_t " + names.back() + " = " + index_value(i) + ";");
      }
    } else {
      std::string decls;
      const std::string cond = bound_checks(a, indices, loc, &names, &decls);
      line(decls);
      when = temp("ok");
      line("const bool " + when + " = " + cond + ";");
    }
    if (can_stop) {
      stop_on_device_error();
    } else if (value_raises) {
      when += (when.empty() ? "" : " && ") + std::string("!plait::stopped(p_err)");
    }
    line((when.empty() ? "" : "if (" + when + ") ") + update(names, value));
    --indent_;
    line("}");
  }

  void emit_atomic(const AtomicUpdate* u) override;

  // A loop that runs in order (host code, or inside one device thread);
  // `body`, when given, emits its body instead of the plain statements.
  void emit_serial_for(const For* loop, const std::function<void()>& body = {});

  // A loop body's statements in the current scope (no extra braces).
  void emit_body_statements(const Stmt& body);

  // ------------------------------------------------------------ kernels

  // The parameters of a kernel that runs `body`: host scalars it uses and
  // arrays it uses, as "type name" (device) and "name" (host) pairs.
  struct Captures {
    std::vector<Var> scalars;  // host scalars used (read or written)
    VarSet written;
    std::vector<ArrayVar> arrays;  // bound outside the body
    std::vector<ArrayVar> local_arrays;
  };

  Captures captures_of(const std::vector<Stmt>& stmts);

  // The kernel parameters of `arrays`: data pointers, extents and strides
  // other than the unit one; `prefix` goes before the names of the pointers
  // and strides (a kernel that copies the arrays on chip binds the usual
  // names to the copies).
  void add_array_params(const std::vector<ArrayVar>& arrays, std::vector<std::string>* params,
                        std::vector<std::string>* args, const std::string& prefix = "");

  // A kernel, and whether its device code may record an error.
  int add_kernel(const std::string& name, bool raises);

  // Whether device code of `stmts` may record an error.
  bool note_error_sites(const std::vector<Stmt>& stmts);

  static std::string join(const std::vector<std::string>& parts, const std::string& separator);

  // The lanes p_u of a group of `w` iterations, unrolled; in the partial
  // group only the first `tail`. `lane` emits one lane's statements.
  void emit_group_lanes(const std::string& w, bool partial, const std::string& tail, const std::function<void()>& lane);

  // Host code that declares the parameter array cuLaunchKernel takes for
  // `args`; returns its name.
  std::string emit_launch_params(const std::vector<std::string>& args);

  // A kernel's version on copies of its arrays in shared memory (one
  // block): its index, the host's condition for taking it, and the bytes it
  // needs (emit_onchip_kernel).
  struct OnChipLaunch {
    int index;
    std::string condition, bytes;
    // Whether the arrays do not share memory (the copies' condition and the
    // registers' both need it).
    std::string apart;
    // The version with the arrays in registers (emit_register_choice), or -1;
    // the host's condition for it, its block of threads and its shared memory.
    int registers_index = -1;
    std::string registers_condition, registers_block, registers_bytes;
  };

  // Host code for the on-chip version `index` of a kernel over `arrays`:
  // declares the bytes its copies take and whether they can be made (at
  // least 2 steps of `trip`; arrays that fit in the shared memory a block can
  // have and do not share memory, `apart`, since a copy each would split one
  // array's writes from another's reads).
  OnChipLaunch emit_onchip_choice(int index, const std::vector<ArrayVar>& arrays, const std::string& trip,
                                  const std::string& apart);

  // Host code that launches kernel `index`, staging `slots` (host scalars
  // exchanged through the scratch buffer) around it; or its on-chip version
  // in one block, where `onchip` has one, its condition holds and the
  // runtime can give it the shared memory.
  void emit_launch(int index, const std::string& grid, const std::string& block, const std::vector<std::string>& args,
                   const std::vector<std::pair<std::string, std::string>>& slots_in,
                   const std::vector<std::pair<std::string, std::string>>& slots_out,
                   const std::string& launcher = "ctx->cuda->launch", const OnChipLaunch* onchip = nullptr);

  // Host code that puts host scalars into slots first.. of the scratch
  // buffer. All-zero bytes (a sum from 0) are cleared in stream order; other
  // values are copied, which waits for the stream (pageable host memory).
  void stage_slots(const std::vector<std::pair<std::string, std::string>>& slots, int first);

  static std::string reduction_identity(ReduceOp op, ScalarKind k);

  static constexpr int kPrivateCopyBytes = 8192;  // shared memory per privatised array and block

  static std::string op_functor(ReduceOp op) { return std::string("plait::op_") + reduce_op_name_word(op) + "()"; }

  // A kernel-wide __shared__ array, declared once at the top of the kernel.
  std::string shared_array(const std::string& name, const std::string& type, int count);

  // The functor that combines partial values of a reduction `r` of form
  // `form` (worker_plan.h, ReductionForm).
  static std::string combine_functor(gpu::ReductionForm form, const Reduction& r);

  // A value kept in registers (gpu::CachedValue): the per-thread array of
  // gpu::row_cache_slots elements, and whether this loop computes it into them.
  struct RegisterValue {
    std::string registers;
    bool filling = false;
    const ExprNode* source = nullptr;  // the expression that fills them
  };
  // The registers a spread loop's first iterations use (emit_team_body):
  // rows kept in registers, and values it computes into registers (filling)
  // or reads from them.
  struct LoopRegisters {
    std::vector<std::pair<const gpu::CachedRow*, std::string>> rows;
    std::vector<std::pair<const ExprNode*, RegisterValue>> values;
  };

  // A loop of a team's worker body whose iterations are spread over the
  // team: lane, lane + team, ..., or with groups of group_width_
  // consecutive iterations (docs/cuda.md, "Vector accesses in teams"),
  // groups lane, lane + team, ...; its reductions are combined across the
  // team and every thread gets the result. A reduction `m = max(x, m)` of
  // floats (ReductionForm::OrderDependent) runs as `m = max(m, x)` while the
  // team notes whether any x, or m before the loop, is NaN; then the two
  // agree, else every thread runs the loop again in order.
  void emit_spread_loop(const For* loop, size_t index = 0, const LoopRegisters* registers = nullptr);

  // A spread loop whose threads run two iterations at once, k and k +
  // p_team (gpu::PairedLoop): each statement for both, the second under
  // `if (p_in)`; a fused loop runs once, its body for both in each
  // iteration, so that the loads of both are in flight together.
  void emit_paired_spread_loop(const For* loop, const gpu::PairedLoop& paired);

  // The worker body of a team-mapped parallel loop, statement by statement
  // (worker_plan.h), with the barriers, broadcasts, rows and values in
  // registers, groups and pairs of the kernel's plan (team_body_, planned by
  // transforms/gpu/team_body_plan).
  void emit_team_body(const WorkerPlan& plan);

  // `rows_of_loop`: the rows and values kept in registers, by statement of
  // the worker body (the top level only).
  using RowsOfLoop = std::map<size_t, LoopRegisters>;
  void emit_team_statements(const WorkerPlan& plan, const RowsOfLoop* rows_of_loop = nullptr);

  // An `if` or a loop that every thread of the team runs in step, its
  // statements placed by their own plans.
  void emit_team_nested(const Stmt& s, const std::vector<WorkerPlan>& subs);

  // Whether the host can evaluate an inner loop bound before the launch:
  // host scalars and extents of arrays bound outside the worker (not its
  // `local` ones), nothing that can fail.
  bool host_evaluable(const Expr& e, const VarSet& worker, const std::vector<ArrayVar>& local);

  // A level of a (collapsed) parallel loop nest, as the host computes it.
  struct NestLevel {
    const For* loop;
    std::string begin, step, trip, k;
  };
  // After a nest: each declared loop variable takes its last value, as
  // Python leaves it (the host or the step may read it after the loop).
  void emit_last_values(const std::vector<NestLevel>& levels);

  // An array allocated inside a parallel loop: it lives in the worker's
  // slice of one buffer, at byte offset `offset`, with room for `capacity`
  // elements (both kernel parameters).
  struct Temporary {
    const gpu::Temporary* planned;  // its allocation and the branch conditions the host evaluates
    std::string offset, capacity;
  };

  // The host condition under which every temporary of a team's worker
  // stays in registers (a row kept only in registers whose loops all have
  // at most gpu::row_cache_slots iterations per thread), or "" when the host
  // cannot tell.
  // `rows`: the worker's rows kept in registers, `written`: the scalars its
  // body assigns.
  std::string temporaries_in_registers(const WorkerPlan& plan, const std::vector<gpu::CachedRow>& rows,
                                       const VarSet& nest_vars, const VarSet& written,
                                       const std::vector<ArrayVar>& local, const std::vector<Temporary>& temporaries,
                                       const std::string& team);

  // The host's test, before the launch, that every loop of `rows` runs at
  // most the registers' iterations per thread of a team of `team` (and,
  // with `whole_groups`, a multiple of the group width), or "" when a bound
  // depends on the worker. `written`: the scalars the worker body assigns.
  std::string rows_in_registers_test(const WorkerPlan& plan, const std::vector<const gpu::CachedRow*>& rows,
                                     const VarSet& nest_vars, const VarSet& written, const std::vector<ArrayVar>& local,
                                     const std::string& team, bool whole_groups);

  // The host's test for a team kernel's version whose rows fit in the
  // registers (rows_fit_), or "" when it has none: its spread loops keep
  // rows in registers and their bounds are known before the launch
  // (arguments as temporaries_in_registers's).
  std::string rows_fit_test(const WorkerPlan& plan, const std::vector<gpu::CachedRow>& rows, const VarSet& nest_vars,
                            const VarSet& written, const std::vector<ArrayVar>& local, const std::string& team);

  // Host code before the launch of a kernel with temporaries: the largest
  // size of each over the workers (all of them when it varies, evaluating
  // the branch conditions around it), the slice of a worker (each
  // temporary 16-byte aligned), and the buffer for the workers in flight;
  // returns the grid, cut so that the buffer stays within its budget.
  std::string emit_temporaries_buffer(const gpu::KernelTemporaries& plan, const std::vector<Temporary>& temporaries,
                                      const std::vector<NestLevel>& levels, const std::string& total,
                                      const std::string& grid, const std::string& workers_per_block,
                                      const std::string& buffer, const std::string& slice,
                                      const std::string& in_registers);

  // An allocation in a kernel: the array takes its place in the worker's
  // slice (Temporary); a fill is done by the worker's thread, or spread
  // over its team.
  void emit_device_allocate(const Allocate* al);

  // A loop bound that is a constant, written as one in a kernel's indices
  // (the compiler folds `1 + k * 1`); else the kernel parameter `param`.
  std::string kernel_bound(const Expr& bound, const std::string& param);

  // The loop over workers of a team kernel whose row loop `staged` has
  // consecutive ranges of rows (gpu::staged_rows_loop; docs/cuda.md, "CSR
  // rows staged per block"). Each pass of the block takes its teams'
  // consecutive workers: it loads their rows' bounds (one more than the
  // workers, the last row's end) into shared memory, and when the rows'
  // elements p_lo..p_hi fit, its threads compute the term of every element,
  // consecutive threads on consecutive elements, into shared memory: the
  // loop body with each reduction variable starting at 0 in its own
  // register. Then each team runs its worker, whose row loop sums the staged
  // terms when its range lies inside p_lo..p_hi and runs its body otherwise
  // (a row of a P that is not increasing). Every element of p_lo..p_hi lies
  // in some row, whatever P holds, so staging evaluates no term that the
  // loop would not: the body's errors are the loop's. The passes are the
  // same for all threads of the block, whose barriers they hold.
  void emit_staged_rows_worker_loop(const WorkerPlan& plan, const NestLevel& level, const For* staged,
                                    const std::function<void()>& emit_loop_variables);

  // The worker loop of a straight-line one-thread worker
  // (gpu::straight_line_worker) that runs `batch` iterations per thread
  // (docs/cuda.md, "Several iterations per thread"). Iteration u of a thread
  // is p_k0 + u * p_apart: 256 apart, so that a block covers 256 * batch
  // consecutive iterations and each access stays coalesced; or, when every
  // access that moves with the loop variable can be a vector access at the
  // launch (`lanes`: one loop level of step 1, each such address aligned for
  // `batch` elements at the first iteration), consecutive, with those
  // accesses made as one load or store of plait::lanes for the whole batch.
  // Each iteration has its own copy of the loop variables and of the scalars
  // the body assigns (suffix _u<u>). Statement by statement, the values and
  // element offsets of all the thread's iterations are computed before any
  // of them is stored: the loads of several iterations are in flight at
  // once, which the compiler could not arrange itself when the arrays may
  // alias. Each iteration still runs its statements in order, and the order
  // between iterations is free since the iterations of a parallel loop are
  // independent; so in-place and aliased arguments stay correct with no
  // check at launch.
  //
  // `rows` (a collapsed nest, the kernel's rows version) maps the iterations
  // differently: a block takes a tile of 256 * batch consecutive iterations
  // of the innermost loop in one row (one iteration of the outer loops), and
  // the blocks of a grid-stride step cover whole rows, which the host
  // guarantees by launching a multiple of the row's tiles
  // (plait_cuda::grid_for_rows). A thread's iterations then share their
  // outer indices, which advance once per row, and no index is divided in
  // the loop (docs/cuda.md, "Rows of tiles").
  void emit_batched_worker_loop(const std::vector<NestLevel>& levels, const Stmt& body, int batch,
                                const gpu::ContiguousAccesses& lanes, bool rows);

  // The kernel of a parallel loop outside parallel loops, whose workers
  // follow the plan transforms/gpu/plan_workers recorded on the loop.
  void emit_parallel_kernel(const For* loop);

  // ------------------------------------------------------------ persistent time loops

  // Host code that sets `workers` to the largest iteration count of a
  // parallel loop of the time loop (either branch of an `if`) at its first
  // and last step, by the sizing of its `plan`, or to -1 when a bound is not
  // known before the launch.
  void emit_persistent_sizing(const For* loop, const gpu::PersistentLoopPlan& plan, const std::string& begin,
                              const std::string& step, const std::string& trip, const std::string& workers);

  // A parallel loop inside a persistent kernel: every thread of the grid
  // evaluates the bounds, then takes iterations p_first, p_first + p_stride...
  void emit_persistent_parallel_loop(const For* loop);

  // A serial host loop whose steps are parallel loops (and scalar statements
  // that need nothing from the host) as one persistent kernel, by the plan
  // transforms/gpu/plan_persistent_loops recorded on it: every thread of one
  // launch runs all steps, with a barrier after each parallel loop but those
  // the plan's barriers drop. The host picks the launch at run time from the
  // step's worker count (plait_cuda::persistent_grid): one block, a
  // cooperative grid, or the launches per step of emit_serial_for. Returns
  // false, with a remark saying why when the body has parallel loops, where
  // the plan refuses.
  bool emit_persistent_time_loop(const For* loop);

  // The product of an array's extents, as an int64_t expression.
  std::string element_count(const ArrayVar& a);

  // The version `index` of a persistent kernel whose body is `body` (its
  // text after the opening brace, at indent 1), on copies of `arrays` in
  // shared memory: `params` name their pointers and strides `p_global_...`.
  // The body runs in a lambda, so that its `return`s (a failed assertion's)
  // still reach the copies back of the arrays `loop` writes.
  void emit_onchip_kernel(const std::string& what, int index, const std::vector<std::string>& params,
                          const std::string& body, const For* loop, const std::vector<ArrayVar>& arrays);

  // Device code of the on-chip persistent kernel: with `written` null, binds
  // each array's usual names (data pointer, strides) to a dense copy in
  // shared memory (in the order its layout keeps its unit stride in, the
  // arrays one after the other) and copies the elements in, then waits for
  // the block; else waits for the block and copies the `written` arrays
  // back to global memory (`p_global_` names).
  void emit_onchip_copies(const std::vector<ArrayVar>& arrays, const ArraySet* written);

  // ------------------------------------------------ arrays in registers

  // The array of the register plan being emitted that `a` is, or null.
  const ArrayVar* register_array(const ArrayInfo* a) const;

  // The row of `a`'s halo buffer of thread `row` - 1, in the current phase:
  // rows -1 and blockDim.x exist, so that the block's first and last threads
  // read inside the buffer.
  std::string halo_row(const ArrayVar& a, const std::string& row);

  // The element `a[index]` read by the slot being emitted: its own
  // register, or the one its neighbour passed in the halo buffer.
  std::string register_element(const ArrayVar& a, const Expr& index);

  // A parallel loop of a persistent kernel with its arrays in registers:
  // each thread passes the elements its neighbours read to them (through the
  // halo buffers of this loop's phase), then runs the iterations that store
  // its slots, one copy of the body per slot, so that every register index
  // is a constant. The buffers of the two phases alternate, so no barrier
  // follows the loop: a thread writes a phase's buffer again only after the
  // barrier of the next loop with halos, which every reader of the last one
  // has passed.
  void emit_register_parallel_loop(const For* loop);

  // The version `index` of a persistent kernel (`params` as the usual one's)
  // with the arrays of `plan` in registers: each thread loads its slots,
  // runs the steps (`emit_steps`, in a lambda so that an assertion's
  // `return` still reaches the stores back) and stores the slots back.
  void emit_register_kernel(const std::string& what, int index, const std::vector<std::string>& params, const For* loop,
                            const RegisterPlan& plan, const std::function<void()>& emit_steps);

  // "`a`, `b`": the arrays of `plan`.
  static std::string register_array_names(const RegisterPlan& plan);

  // What explain() says of the version with the arrays of `plan` in registers.
  static std::string registers_remark(const RegisterPlan& plan);

  // Host code for the version `index` with the arrays of `plan` in
  // registers, into `on`: its block (0 when one block of 1024 threads
  // cannot hold the arrays), the bytes of its halo buffers, and whether to
  // take it (at least 2 steps of `trip`, one step only loads and stores;
  // arrays that do not share memory, as for the copies on chip).
  void emit_register_choice(int index, const RegisterPlan& plan, const std::string& trip, OnChipLaunch* on);

  // A serial host loop whose steps launch kernels (reductions, array
  // statements: a triangular solve's dot products, cholesky's; parallel loops
  // that the persistent rule refuses: gramschmidt's) as one kernel of one
  // team of a block's threads that runs all its steps: the loop is the
  // body of a parallel loop of one iteration, whose worker is a team
  // (docs/cuda.md, "Serial loops on the device"). The host takes this kernel
  // when every dimension of the arrays the loop touches is at most
  // kDeviceLoopMaxExtent, so that a spread loop has at most 32 iterations per
  // thread, and, with parallel loops, each array has at most
  // kDeviceLoopMaxElements; otherwise the loop launches its kernels at every
  // step. Returns false, with a remark saying why where a
  // loop launching kernels is refused.
  // The parallel loop of one iteration whose worker runs the serial loop
  // `s` on the device (the loop as its recorded plan holds it, a copy
  // without the plan), the plan recorded on `s` (WorkerLoopPlan::device_loop)
  // its own; or null with `why` set (empty when the loop launches nothing at
  // its steps that a team could take).
  static Stmt device_serial_loop(const Stmt& s, std::string* why);

  bool emit_device_serial_loop(const Stmt& s);

  static const char* reduce_op_name_word(ReduceOp op);

  // Statements outside parallel loops that touch array elements: one
  // single-thread kernel.
  //
  // A scalar it assigns goes to the device with the launch unless the
  // statements assign it on every path before reading it (its value on entry
  // is dead): each copy is a stream operation of its own (NPBench
  // gramschmidt launches the region at each of its steps).
  void emit_serial_region(const std::vector<Stmt>& stmts, const VarSet& stays = {});

  // Emits into the device source with fresh scopes and indentation until
  // destroyed.
  struct ModeSwitch {
    explicit ModeSwitch(CudaEmitter& e)
        : emitter(e), mode(e.mode_), indent(e.indent_), loop_depth(e.loop_depth_), scopes(std::move(e.scopes_)) {
      e.mode_ = Mode::Device;
      e.loop_depth_ = 0;
      e.scopes_.clear();
    }
    ~ModeSwitch() {
      emitter.mode_ = mode;
      emitter.indent_ = indent;
      emitter.loop_depth_ = loop_depth;
      emitter.scopes_ = std::move(scopes);
    }
    ModeSwitch(const ModeSwitch&) = delete;
    ModeSwitch& operator=(const ModeSwitch&) = delete;
    CudaEmitter& emitter;
    Mode mode;
    int indent;
    int loop_depth;
    std::vector<VarSet> scopes;
  };

  void emit_fill_kernel(ScalarKind kind, int index);

  int fill_kernel(ScalarKind kind);

  // ------------------------------------------------------------ host-only statements

  // An array's allocation: on the host by the runtime's device allocator,
  // in device code from the kernel's heap (emit_device_allocate).
  void emit_allocate(const Allocate* al) override;

  // The launch configuration (CompileOptions::cuda_launch) and its threads
  // per block, the block of every kernel but the persistent ones.
  const CudaLaunchConfig launch_;
  // launch_.threads, doubled while a kernel's wide version is emitted.
  int block_size_;
  std::ostringstream host_, device_;
  Mode mode_ = Mode::Host;
  // Device code: the statement that leaves the thread's work after an
  // error (with_device_stop), empty where the thread cannot leave alone;
  // and how many times the current one was emitted.
  std::string stop_;
  int stop_uses_ = 0;
  // The parallel loop being emitted whose reduction results stay on the
  // device, and where they are (scratch slots) until the region after it.
  const For* resident_loop_ = nullptr;
  VarMap<int> resident_slots_;
  // Scalars assigned by a device region that stay on the device for the
  // parallel loops after it in the same block, and their slots.
  VarMap<int> region_slots_;
  int region_slots_used_ = 0;
  // Statements the emitter makes (a device loop's one-iteration wrapper):
  // kept as long as the emitter lives, since var_names_ (CEmitter) and the other maps
  // hold their variables (a freed one would leave a dangling key whose
  // address a later variable may take, and its name with it).
  std::vector<Stmt> synthesized_;
  // Batched workers: loads made as one vector access for the batch, by the
  // name of the plait::lanes value; lane_ is the iteration being emitted.
  std::unordered_map<const Load*, std::string> lane_loads_;
  // Loads of a one-thread worker made before its iterations run: the
  // register array of the values (emit_parallel_kernel).
  std::unordered_map<const Load*, std::string> prefetched_;
  // Batched workers: the element a relaxation loaded, by the name of the
  // iteration's copy (emit_batched_worker_loop compares it with the new value).
  std::unordered_map<const Load*, std::string> relaxed_loads_;
  int lane_ = -1;
  std::vector<std::string> kernel_names_;
  std::map<int, int> fill_kernels_;  // ScalarKind -> kernel index
  bool device_errors_ = false;
  std::vector<bool> kernel_raises_;  // by kernel index (add_kernel)
  bool mute_remarks_ = false;        // while a kernel's loop is emitted a second time
  // While the statements of a persistent kernel's step are emitted (outside
  // its parallel loops' workers): parallel loops become grid-stride loops
  // followed by a barrier.
  bool persistent_step_ = false;
  // The parallel loops of the persistent kernel being emitted that need no
  // barrier after them (by its plan: transforms/gpu/step_barriers.h).
  std::set<const For*> barrier_not_needed_;
  // The plan of the persistent kernel being emitted with its arrays in
  // registers (emit_register_kernel), and where in it the emission is: the
  // parallel loop, the slot whose iteration is emitted.
  const RegisterPlan* register_plan_ = nullptr;
  const RegisterLoop* register_loop_ = nullptr;
  int register_slot_ = -1;
  // The persistent kernel being emitted: whether its step may raise.
  bool step_may_raise_ = false;
  // The serial loop that emit_device_serial_loop runs on one block's team.
  const For* device_time_loop_ = nullptr;
  // The kernel being emitted: the offset parameter of each temporary, and
  // whether its worker is a team.
  std::unordered_map<const Allocate*, std::pair<std::string, std::string>> temp_offsets_;  // offset, capacity
  bool team_worker_ = false;
  bool uses_temporaries_ = false;  // the host part declares p_temporaries
  // Arrays whose atomic updates go to a private copy in shared memory (by
  // the copy's name), while the current kernel's privatised loop is emitted.
  ArrayMap<std::string> private_copies_;
  // Reductions `m = max(x, m)` of the spread loop being emitted, by the
  // name of the flag that notes a NaN x (emit_spread_loop).
  VarMap<std::string> nan_checked_;
  // Rows kept in registers, by each of their names, while the iterations
  // of a spread loop that use the registers are emitted (slot `p_c`).
  struct RowRegisters {
    std::string registers;  // the per-thread array of gpu::row_cache_slots elements
    bool filling = false;   // the first loop that accesses the row: loads fill the registers
    bool registers_only = false;
  };
  ArrayMap<RowRegisters> cached_rows_;
  // While a kernel's version for rows that fit in the registers is emitted
  // (docs/cuda.md, "Rows that fit in the registers"): the host runs it only
  // when every spread loop that keeps rows in registers has at most the
  // registers' iterations per thread, in whole groups, so those loops leave
  // out the partial group and the iterations beyond the registers.
  bool rows_fit_ = false;
  // Values kept in registers, by expression, while the same iterations are
  // emitted; those whose registers an earlier loop filled.
  std::unordered_map<const ExprNode*, RegisterValue> cached_values_;
  std::set<const ExprNode*> filled_values_;
  // The register of the current iteration in rows and values: p_c, or with
  // groups p_c * width + p_u.
  std::string row_slot_ = "p_c";
  // CSR rows staged per block (gpu::staged_rows_loop), while their
  // kernel is emitted: the row loop, and the shared arrays of its terms by
  // reduction (emit_staged_rows_worker_loop).
  const For* staged_loop_ = nullptr;
  std::vector<std::string> staged_terms_;
  // Groups of a team's spread loops (docs/cuda.md, "Vector accesses in
  // teams"): consecutive iterations a thread takes at a time in the worker
  // being emitted (1: no groups); while a group's iterations are emitted,
  // the name of the lane index (p_u), and the stores made once per group,
  // by the name of their plait::lanes value (its loads are in lane_loads_).
  int group_width_ = 1;
  // The workers of the kernel being emitted (emit_parallel_kernel): its
  // team body's decisions and its rows kept in registers.
  const gpu::KernelWorkers* workers_ = nullptr;
  std::string group_lane_;
  std::unordered_map<const Store*, std::string> group_stores_;
  // __shared__ declarations of the kernel being emitted, by name.
  std::map<std::string, std::string> shared_decls_;
  std::vector<std::string> assert_messages_;
  std::vector<Remark> remarks_;
};

}  // namespace plait::codegen::cuda_emitter
