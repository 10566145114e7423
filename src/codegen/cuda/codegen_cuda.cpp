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
#include "codegen/cuda/codegen_cuda.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "analysis/raises.h"
#include "analysis/var_uses.h"
#include "codegen/cuda/device_runtime.h"
#include "codegen/cuda/device_stops.h"
#include "codegen/cuda/register_arrays.h"
#include "codegen/cuda/step_barriers.h"
#include "codegen/cuda/worker_plan.h"
#include "codegen/overlap_test.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"
#include "runtime/abi.h"

namespace plait {
extern const char* const kRuntimeAbiText;
extern const char* const kRuntimeHeaderText;
}  // namespace plait

namespace plait::codegen {

using namespace ir;
using cuda::ArrayAccess;
using cuda::Placement;
using cuda::RegisterLoop;
using cuda::RegisterPlan;
using cuda::WorkerPlan;

namespace {

// Blocks of a kernel launch: enough for one thread per iteration up to this
// many; a reduction kernel stops earlier, as each warp costs one atomic.
constexpr int64_t kMaxBlocks = 65536;
constexpr int64_t kMaxReductionBlocks = 2048;
// Fewer workers than this leave most of the GPU idle at one thread each
// (8192 warps fill 132 SMs' 2048 threads twice over): a worker whose loops
// the cost rule keeps serial gets a team of threads instead.
constexpr int64_t kFewWorkers = 8192;
// The largest block of a kernel's wide version (emit_parallel_kernel): with
// __launch_bounds__(1024) a thread has at most 64 registers, fewer than the
// rows it would keep in them take.
constexpr int kWideBlockLimit = 512;
// The team of a worker whose inner loops' trip counts vary between workers
// and are not known before the launch (CSR rows): short rows leave few of its
// threads idle, and its threads read consecutive elements where one thread
// per row reads a row apart from its neighbours' (spmv's 1e6 rows of 10
// elements: L2-bound at 10% L1 hits under ncu). Teams of 2 were faster than
// 4 and 8 there and at NPBench's 2 per row (docs/cuda.md, "Team size").
constexpr int kSmallTeam = 2;
// CSR rows staged per block (cuda::staged_rows_loop): the terms a block
// computes for its rows at once, per reduction (16 KB of float64; the 128
// rows of a block of 256 threads in teams of 2, at 16 elements on average).
constexpr int kStagedElements = 2048;
// The host runs the staged version when the rows hold at most this many
// elements on average (plait_cuda::rows_staged).
constexpr int kStagedRowElements = 16;
// emit_device_serial_loop: the largest dimension of the arrays a serial loop
// touches for its steps to run on one team of the block's threads; and,
// when its steps hold parallel loops of the user's (whose iterations a launch
// per step gives a thread or a team each, where the one team runs their inner
// loops serially), the most elements of each array: 32 per thread of the
// team (measured on gramschmidt: 70 x 60 gains 1.9x on the launches, 240 x
// 200 loses 3x).
constexpr int64_t kDeviceLoopMaxExtent = 8192;
constexpr int64_t kDeviceLoopMaxElements = 8192;
constexpr int kScratchSlots = (PLAIT_CUDA_SCRATCH_BYTES - PLAIT_CUDA_ERROR_BYTES) / 8;
// Persistent kernels (one launch for all steps of a time loop): threads per
// block, and the scratch slot of their grid barrier's two counters.
constexpr int kPersistentBlockSize = 1024;
constexpr int kBarrierSlot = kScratchSlots - 1;
// Reduction results that stay on the device for the device region after
// their loop (emit_contents): slots kResidentSlot.. kResidentSlot + 7.
constexpr int kResidentSlots = 8;
constexpr int kResidentSlot = kBarrierSlot - kResidentSlots;
// Scalars that a device region assigns and only later parallel loops of its
// block read stay on the device too: slots kRegionSlot.. kResidentSlot - 1.
constexpr int kRegionSlot = kResidentSlot - kResidentSlots;
// Iterations per thread of a straight-line one-thread worker
// (emit_batched_worker_loop).
constexpr int kBatchIterations = 4;
// ... and of a collapsed nest of several loops: each iteration's indices and
// 64-bit addresses take registers, and with 4 iterations the 2-D stencil's
// sweeps took 62 per thread (half the threads of an SM resident: 68% of the
// copy bandwidth at 4096 x 4096 float64; with 2, 74%: docs/cuda.md).
constexpr int kNestBatchIterations = 2;
// Workers per thread whose first loads are made together (PrefetchableLoads).
constexpr int kPrefetchIterations = 4;

std::string dtype_code(ScalarKind k) { return plait_dtype_name(k); }

std::string dtype_suffix(ScalarKind k) { return to_string(ScalarType{k, false}); }

int element_bytes(ScalarKind k) { return ScalarType{k, false}.bits() / 8; }

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

std::string escape_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '\\' || c == '"') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out;
}

std::string int_literal(int64_t v, ScalarKind k) {
  if (k == ScalarKind::UInt64) return "uint64_t(" + std::to_string(static_cast<uint64_t>(v)) + "ULL)";
  if (k != ScalarKind::Int64) return ctype(k) + "(" + std::to_string(v) + ")";
  if (v == INT64_MIN) return "(-int64_t(9223372036854775807) - 1)";
  return "int64_t(" + std::to_string(v) + ")";
}

// Integers narrower than int are promoted to int by C++ arithmetic, where
// 16-bit products can overflow: they compute in uint32_t, and the result is
// cast back so that it wraps as NumPy's does.
bool promoted_by_cpp(ScalarType t) { return t.is_int() && t.bits() < 32; }

// ------------------------------------------------------------------ analyses

// Collects the arrays a subtree mentions and those it (re)binds or declares.
class ArrayCollector : public IRVisitor {
 public:
  std::vector<ArrayVar> used;  // in first-use order
  ArraySet bound;
  ArraySet declared;
  const Allocate* first_allocate = nullptr;
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
    if (!first_allocate) first_allocate = n;
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

// The scalars a subtree mentions (read or assigned, loop variables included)
// in first-use order, and those it assigns.
class ScalarCollector : public IRVisitor {
 public:
  std::vector<Var> used;
  VarSet written;
  using IRVisitor::visit;

 protected:
  void note(const Var& v) {
    if (seen_.insert(v.get()).second) used.push_back(v);
  }
  void visit(const VarRef* n) override { note(n->var); }
  void visit(const Assign* n) override {
    note(n->var);
    written.insert(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    note(n->var);
    written.insert(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const Declare* n) override {
    if (n->var) note(n->var);
  }

 private:
  VarSet seen_;
};

// What decides where a statement outside parallel loops runs.
class StmtFacts : public IRVisitor {
 public:
  bool touches_elements = false;  // Load, Store or AtomicUpdate
  bool has_parallel_loop = false;
  bool has_return = false;
  bool binds_arrays = false;       // Allocate or ArrayBind
  bool leaves = false;             // break/continue out of the statement
  bool calls_library = false;      // a MatMul, which the host hands to cuBLAS
  using IRVisitor::visit;

 protected:
  void visit(const MatMul* n) override {
    calls_library = true;
    IRVisitor::visit(n);
  }
  void visit(const Load* n) override {
    touches_elements = true;
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    touches_elements = true;
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    touches_elements = true;
    IRVisitor::visit(n);
  }
  void visit(const Return* n) override {
    has_return = true;
    IRVisitor::visit(n);
  }
  void visit(const Allocate* n) override {
    binds_arrays = true;
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind*) override { binds_arrays = true; }
  void visit(const Break*) override {
    if (depth_ == 0) leaves = true;
  }
  void visit(const Continue*) override {
    if (depth_ == 0) leaves = true;
  }
  void visit(const For* n) override {
    if (is_parallel(n->schedule.kind)) has_parallel_loop = true;
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

// The loops of a statement whose schedule carries a sliced pragma's size
// (block(N), le(N), single_block), for the remark when a worker does not use
// them.
class SizedLoops : public IRVisitor {
 public:
  std::vector<const For*> loops;
  using IRVisitor::visit;

 protected:
  void visit(const For* n) override {
    const LoopSchedule& s = n->schedule;
    if (s.block_strip > 0 || s.most_trips > 0 || s.single_block) loops.push_back(n);
    IRVisitor::visit(n);
  }
};

// The sizes a loop's sliced pragma gives, as written: "single_block", "le(64)".
std::string pragma_sizes(const LoopSchedule& s) {
  std::string out;
  if (s.single_block) out += "single_block";
  if (s.block_strip > 0) out += std::string(out.empty() ? "" : ", ") + "block(" + std::to_string(s.block_strip) + ")";
  if (s.most_trips > 0) out += std::string(out.empty() ? "" : ", ") + "le(" + std::to_string(s.most_trips) + ")";
  return out;
}

// Whether a loop body leaves the loop early (break at its level, or return).
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

// Whether device code built from a subtree can record a run-time error.
class HasErrorSites : public IRVisitor {
 public:
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    found = found || n->checked;
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    found = found || n->checked;
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    found = found || n->checked;
    IRVisitor::visit(n);
  }
  void visit(const Cast* n) override {
    found = found || (n->checked && n->value->type.is_float() && n->type.is_int()) ||
            (n->checked && n->value->type.is_int() && n->type.is_int());
    IRVisitor::visit(n);
  }
  void visit(const Binary* n) override {
    found = found || n->zero_check || (n->op == BinaryOp::Pow && n->type.is_int());
    IRVisitor::visit(n);
  }
  void visit(const Call* n) override {
    found = found || n->python_math;
    IRVisitor::visit(n);
  }
  void visit(const Assert* n) override {
    found = true;
    IRVisitor::visit(n);
  }
};

// The arrays a subtree writes (stores and atomic updates), and those it reads.
class StoredArrays : public IRVisitor {
 public:
  ArraySet arrays;
  ArraySet loaded;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    loaded.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
};

// The loads a one-thread worker can make for several of its iterations
// before running any of them: in the statements the body runs first
// (assignments and stores before any branch or loop), evaluated whatever the
// values (not inside a select or the right of `and`/`or`), unchecked, of an
// array the loop never writes, at indices computed from the loop variables
// and scalars the body does not assign (no loads). A histogram reads its
// value this way, then updates a bin: the next iterations' values are in
// flight while the atomics run.
class PrefetchableLoads : public IRVisitor {
 public:
  std::vector<const Load*> loads;

  PrefetchableLoads(const Stmt& body, const VarSet& nest_vars) : nest_vars_(nest_vars) {
    StoredArrays stored;
    stored.visit(body);
    stored_ = stored.arrays;
    ScalarCollector scalars;
    scalars.visit(body);
    assigned_ = scalars.written;
    const Block* b = body->as<Block>();
    for (const Stmt& st : b ? b->stmts : std::vector<Stmt>{body}) {
      if (st->kind == NodeKind::Declare) continue;
      if (st->kind != NodeKind::Assign && st->kind != NodeKind::Store) break;
      visit(st);
    }
  }
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (n->checked || stored_.count(n->array.get())) return;
    StoredArrays inner;
    ScalarCollector vars;
    for (const Expr& i : n->indices) {
      inner.visit(i);
      vars.visit(i);
    }
    if (!inner.loaded.empty()) return;
    for (const Var& v : vars.used)
      if (assigned_.count(v.get()) && !nest_vars_.count(v.get())) return;
    if (std::find(loads.begin(), loads.end(), n) == loads.end()) loads.push_back(n);
  }
  void visit(const Select* n) override { visit(n->cond); }
  void visit(const Logical* n) override { visit(n->a); }

 private:
  const VarSet& nest_vars_;
  ArraySet stored_;
  VarSet assigned_;
};

// Whether an expression computes with integers and bools only (no float
// value, no math function): the host and the GPU evaluate it alike.
class IntegralOnly : public IRVisitor {
 public:
  bool ok = true;
  using IRVisitor::visit;

 protected:
#define PLAIT_EXPR_NODE(n)                                                      \
  void visit(const n* node) override {                                          \
    if (node->type.is_float() || node->kind == NodeKind::Call) ok = false;      \
    IRVisitor::visit(node);                                                     \
  }
#include "ir/ir_nodes.def"
};

// The allocations of a parallel loop's worker body: for each, the branch
// conditions around it (condition, and whether the allocation is on its
// true side) and whether a loop of the body encloses it.
struct AllocationSite {
  const Allocate* alloc;
  std::vector<std::pair<Expr, bool>> guards;
  bool in_loop;
};

class AllocationSites : public IRVisitor {
 public:
  std::vector<AllocationSite> sites;
  ArraySet bound_from;  // sources of ArrayBind
  using IRVisitor::visit;

 protected:
  void visit(const Allocate* n) override { sites.push_back({n, guards_, loops_ > 0}); }
  void visit(const ArrayBind* n) override { bound_from.insert(n->src.get()); }
  void visit(const If* n) override {
    guards_.emplace_back(n->cond, true);
    visit(n->then_case);
    guards_.back().second = false;
    visit(n->else_case);
    guards_.pop_back();
  }
  void visit(const For* n) override {
    ++loops_;
    IRVisitor::visit(n);
    --loops_;
  }
  void visit(const While* n) override {
    ++loops_;
    IRVisitor::visit(n);
    --loops_;
  }

 private:
  std::vector<std::pair<Expr, bool>> guards_;
  int loops_ = 0;
};

// ------------------------------------------------------------------ emitter

struct ArrayLocal {
  std::string base;        // a_<name>: fields base_data, base_n<d>, base_s<d>
  bool has_owner = false;  // host code: allocated or rebound
};

enum class Mode { Host, Device };

class CudaEmitter {
 public:
  CudaEmitter(const Function& f, const CudaLaunchConfig& launch)
      : fn_(f), path_(escape_path(f.source.path)), launch_(launch), block_size_(launch.threads) {}

  CudaSources run() {
    host_ << kRuntimeAbiText << "\n" << kRuntimeHeaderText << "\n" << cuda::host_cuda_runtime_text() << "\n";
    host_ << "// ---- host part of kernel `" << fn_.name << "` (target cuda) generated by plait from " << path_
          << "\n// launch configuration: " << launch_.to_string() << "\n\n";
    host_ << "extern \"C\" int32_t plait_kernel_abi_version(void) { return PLAIT_ABI_VERSION; }\n\n";
    host_ << "extern \"C\" int32_t plait_kernel_entry(void** args, plait_result* results, plait_context* ctx) {\n";
    device_ << cuda::device_runtime_text() << "\n";
    device_ << "// ---- device part of kernel `" << fn_.name << "` generated by plait from " << path_ << "\n";
    device_ << "// launch configuration: " << launch_.to_string() << "\n";
    indent_ = 1;
    line("(void)args;");
    line("(void)results;");
    scopes_.emplace_back();
    emit_prologue();
    if (fn_.body) emit_contents(fn_.body);
    if (!ends_with_return(fn_.body)) line("return ctx->error_kind;");
    scopes_.pop_back();
    host_ << "}\n";
    if (uses_temporaries_) {
      // Declared first in the entry point, so it is freed last.
      std::string text = host_.str();
      const std::string entry = "plait_kernel_entry(void** args, plait_result* results, plait_context* ctx) {\n";
      text.insert(text.find(entry) + entry.size(), "  plait_cuda::device_scratch p_temporaries;\n");
      host_.str(text);
      host_.seekp(0, std::ios_base::end);
    }
    for (const auto& [kind, index] : fill_kernels_) emit_fill_kernel(static_cast<ScalarKind>(kind), index);

    CudaSources out;
    out.host = host_.str();
    out.device = device_.str();
    out.kernel_names = kernel_names_;
    out.kernel_raises = kernel_raises_;
    out.device_errors = device_errors_;
    out.assert_messages = assert_messages_;
    out.remarks = remarks_;
    return out;
  }

 private:
  static bool ends_with_return(const Stmt& body) {
    if (!body) return false;
    const Block* b = body->as<Block>();
    if (!b) return body->kind == NodeKind::Return;
    return !b->stmts.empty() && b->stmts.back()->kind == NodeKind::Return;
  }

  bool device() const { return mode_ == Mode::Device; }
  // Where a raising helper records its error: host code's context; in a
  // thread's work with a stop (with_device_stop), the thread's view of the
  // record, which remembers that it raised; else the record.
  std::string sink() const { return !device() ? "ctx" : stop_.empty() ? "p_err" : "&p_errs"; }
  std::string math(const std::string& name) const { return (device() ? "plait::fm::" : "std::") + name; }

  void remark(const SourceLoc& loc, const std::string& message) {
    if (mute_remarks_) return;
    // A statement emitted twice (both branches of a versioned nest) says it once.
    for (const Remark& r : remarks_)
      if (r.loc.line == loc.line && r.loc.col == loc.col && r.message == message) return;
    remarks_.push_back({loc, "codegen_cuda", message});
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

  // ------------------------------------------------------------ output

  std::ostringstream& out() { return device() ? device_ : host_; }
  void line(const std::string& text) { out() << std::string(static_cast<size_t>(indent_) * 2, ' ') << text << "\n"; }
  void line_directive(const SourceLoc& loc) {
    // std::to_string, not operator<<(int): numbers never go through the
    // stream's locale (a Python process may have set an unusual one).
    if (loc.valid()) out() << "#line " + std::to_string(loc.line) + " \"" + path_ + "\"\n";
  }
  // The line and the character column of `loc` (Python's count, which
  // the run-time error's caret follows), as arguments of a raising helper.
  std::string loc_args(const SourceLoc& loc) const {
    if (!loc.valid()) return "0, 0";
    return std::to_string(loc.line) + ", " + std::to_string(character_columns(fn_.source, loc).col);
  }

  // The trip count of loop `f` from its evaluated bounds. The host checks
  // the range as the CPU target does (plait::checked_trip_count: a zero step
  // raises ValueError, more than 2**63 - 1 values OverflowError, and the
  // loop runs no iteration) instead of dividing by zero; device code does
  // not check (docs/cuda.md, "Not yet").
  std::string trip_count(const For* f, const std::string& begin, const std::string& end,
                         const std::string& step) const {
    if (device()) return "plait::trip_count(" + begin + ", " + end + ", " + step + ")";
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
      // Array arguments are views of device memory.
      line("const plait_array* const " + view + " = static_cast<const plait_array*>(" + arg + ");");
      line("[[maybe_unused]] " + ctype(a->type.dtype) + "* " + data(a) + " = static_cast<" + ctype(a->type.dtype) +
           "*>(" + view + "->data);");
      for (int d = 0; d < a->type.ndim; ++d) {
        line("[[maybe_unused]] int64_t " + extent(a, d) + " = " + view + "->shape[" + std::to_string(d) + "];");
        if (!unit_stride(a->type, d))
          line("[[maybe_unused]] int64_t " + stride(a, d) + " = " + view + "->strides[" + std::to_string(d) + "];");
      }
      if (rebound) line("[[maybe_unused]] plait::array_owner " + owner(a) + ";");
    }
    for (const ArrayVar& a : arrays.used) {
      if (arrays_.count(a.get())) continue;
      ArrayLocal& local = arrays_[a.get()];
      local.base = unique("a_" + sanitize(a->name));
      local.has_owner = true;
      if (!arrays.declared.count(a.get())) declare_array(a);
    }
  }

  void declare_array(const ArrayVar& a) {
    line("[[maybe_unused]] " + ctype(a->type.dtype) + "* " + data(a) + " = nullptr;");
    for (int d = 0; d < a->type.ndim; ++d) {
      line("[[maybe_unused]] int64_t " + extent(a, d) + " = 0;");
      if (!unit_stride(a->type, d)) line("[[maybe_unused]] int64_t " + stride(a, d) + " = 0;");
    }
    if (!device()) line("[[maybe_unused]] plait::array_owner " + owner(a) + ";");
  }

  // ------------------------------------------------------------ expressions

  std::string float_literal(double v, ScalarKind k) {
    std::string lit;
    if (std::isnan(v)) {
      lit = device() ? "plait::nan_f64()" : "__builtin_nan(\"\")";
    } else if (std::isinf(v)) {
      const std::string inf = device() ? "plait::inf_f64()" : "__builtin_inf()";
      lit = v > 0 ? inf : "(-" + inf + ")";
    } else {
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
      lit.assign(buf, end);
      if (lit.find_first_of(".e") == std::string::npos) lit += ".0";
      if (v < 0) lit = "(" + lit + ")";
    }
    return k == ScalarKind::Float32 ? "float(" + lit + ")" : lit;
  }

  std::string expr(const Expr& e) {
    // A value kept in registers: this loop computes it into them, or reads them.
    if (auto it = cached_values_.find(e.get()); device() && it != cached_values_.end()) {
      const std::string slot = it->second.registers + "[" + row_slot_ + "]";
      if (!it->second.filling) return slot;
      filled_values_.insert(e.get());
      return "(" + slot + " = " + expr_node(e) + ")";
    }
    return expr_node(e);
  }

  std::string expr_node(const Expr& e) {
    switch (e->kind) {
      case NodeKind::IntImm: return int_literal(e->as<IntImm>()->value, e->type.kind);
      case NodeKind::FloatImm: return float_literal(e->as<FloatImm>()->value, e->type.kind);
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
        return "plait::checked_float_to_int<" + ctype(c->type) + ">(" + v + ", " + sink() + ", " + loc_args(c->loc) + ")";
      return "plait::float_to_int<" + ctype(c->type) + ">(" + v + ")";
    }
    if (c->checked && from.is_int() && c->type.is_int())
      return "plait::checked_python_int<" + ctype(c->type) + ">(" + v + ", " + sink() + ", " + loc_args(c->loc) + ")";
    return "static_cast<" + ctype(c->type) + ">(" + v + ")";
  }

  std::string unary(const Unary* u) {
    const std::string a = expr(u->a);
    switch (u->op) {
      case UnaryOp::Neg:
        if (promoted_by_cpp(u->type))
          return "static_cast<" + ctype(u->type) + ">(0u - static_cast<uint32_t>(" + a + "))";
        return "(-" + a + ")";
      case UnaryOp::Not: return "(!" + a + ")";
      case UnaryOp::BitNot: return u->type.is_bool() ? "(!" + a + ")" : "static_cast<" + ctype(u->type) + ">(~" + a + ")";
    }
    return a;
  }

  std::string binary(const Binary* b) {
    const std::string t = ctype(b->type);
    const std::string x = expr(b->a);
    const std::string y = expr(b->b);
    const std::string checked_args = ", " + sink() + ", " + loc_args(b->loc) + ")";
    const bool is_bool = b->type.is_bool();
    auto helper = [&](const std::string& name) { return "plait::" + name + "<" + t + ">(" + x + ", " + y; };
    auto arith = [&](const char* op) {
      if (!promoted_by_cpp(b->type)) return "(" + x + op + y + ")";
      return "static_cast<" + t + ">(static_cast<uint32_t>(" + x + ")" + op + "static_cast<uint32_t>(" + y + "))";
    };
    switch (b->op) {
      case BinaryOp::Add: return is_bool ? "(" + x + " || " + y + ")" : arith(" + ");
      case BinaryOp::Sub: return is_bool ? "(" + x + " != " + y + ")" : arith(" - ");
      case BinaryOp::Mul: return is_bool ? "(" + x + " && " + y + ")" : arith(" * ");
      case BinaryOp::Div: return b->zero_check ? helper("div_checked") + checked_args : "(" + x + " / " + y + ")";
      case BinaryOp::FloorDiv:
        return b->zero_check ? helper("floordiv_checked") + checked_args : helper("floordiv") + ")";
      case BinaryOp::Mod: return b->zero_check ? helper("mod_checked") + checked_args : helper("mod") + ")";
      case BinaryOp::Pow:
        if (b->type.is_float())
          return b->zero_check ? helper("pow_float_checked") + checked_args : helper("pow_float") + ")";
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
        if (c->fn == Intrinsic::Round) return wrap(math(device() ? "rint" : "nearbyint") + "(" + args[0] + ")");
        return wrap(math(intrinsic_name(c->fn)) + "(" + args[0] + ")");
      case Intrinsic::Abs:
        if (arg_type.is_bool()) return wrap(args[0]);
        if (int_arg) return wrap("plait::abs_int<" + ctype(arg_type) + ">(" + args[0] + ")");
        return wrap(math("fabs") + "(" + args[0] + ")");
      case Intrinsic::Fabs: return wrap(math("fabs") + "(" + args[0] + ")");
      case Intrinsic::IsNan: return int_arg ? "false" : math("isnan") + "(" + args[0] + ")";
      case Intrinsic::IsInf: return int_arg ? "false" : math("isinf") + "(" + args[0] + ")";
      case Intrinsic::IsFinite: return int_arg ? "true" : math("isfinite") + "(" + args[0] + ")";
      default: break;
    }
    const std::string name = math(intrinsic_name(c->fn));
    std::string joined;
    for (size_t i = 0; i < args.size(); ++i) joined += (i ? ", " : "") + args[i];
    if (!c->python_math) return wrap(name + "(" + joined + ")");
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
    return wrap("plait::py_math(" + sink() + ", " + loc_args(c->loc) + ", plait::math_inf::" + on_inf + ", [](" +
                params + ") { return " + name + "(" + names + "); }, " + joined + ")");
  }

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

  std::string bound_checks(const ArrayVar& a, const std::vector<Expr>& indices, const SourceLoc& loc,
                           std::vector<std::string>* names, std::string* decls) {
    std::string cond;
    for (int d = 0; d < a->type.ndim; ++d) {
      const std::string n = temp("i");
      if (d) *decls += " ";
      *decls += "const int64_t " + n + " = " + index_value(indices[static_cast<size_t>(d)]) + ";";
      names->push_back(n);
      cond += (d ? " && " : "") + std::string("plait::index_ok(") + sink() + ", " + loc_args(loc) + ", " + n + ", " +
              std::to_string(d) + ", " + extent(a, d) + ")";
    }
    return cond;
  }

  // An element read: direct in device code; on the host a copy of the one
  // element from device memory.
  std::string element(const ArrayVar& a, const std::string& off) {
    if (device()) return data(a) + "[" + off + "]";
    return "plait_cuda::read(ctx, " + data(a) + " + (" + off + "))";
  }

  // The load of the element that `s` stores when `s` is a relaxation, an
  // update `a[e] = min(a[e], y)` or `max(a[e], y)` (`same_element(l)`: l
  // reads the element that `s` writes); nullptr otherwise. A relaxation that
  // leaves an element as it was need not store it: memory still holds the
  // loaded bits when nothing else writes the element in between, which the
  // caller ensures.
  static const Load* relaxation_load(const Store* s, const std::function<bool(const Load*)>& same_element) {
    const Binary* b = s->value->as<Binary>();
    if (!b ||
        !(b->op == BinaryOp::Min || b->op == BinaryOp::Max || b->op == BinaryOp::PyMin || b->op == BinaryOp::PyMax))
      return nullptr;
    for (const Expr& operand : {b->a, b->b}) {
      const Load* l = operand->as<Load>();
      if (l && l->array.get() == s->array.get() && same_element(l)) return l;
    }
    return nullptr;
  }

  std::string load(const Load* l) {
    if (auto it = relaxed_loads_.find(l); it != relaxed_loads_.end()) return it->second;
    if (const ArrayVar* a = register_array(l->array.get()); a && register_loop_)
      return register_element(*a, l->indices[0]);
    if (auto it = prefetched_.find(l); it != prefetched_.end()) return it->second + "[p_u]";
    if (auto it = lane_loads_.find(l); it != lane_loads_.end() && lane_ >= 0)
      return it->second + ".v[" + std::to_string(lane_) + "]";
    if (auto it = cached_rows_.find(l->array.get()); device() && it != cached_rows_.end()) {
      const std::string slot = it->second.registers + "[" + row_slot_ + "]";
      if (!it->second.filling || it->second.registers_only) return slot;
      return "(" + slot + " = " + group_or_memory_load(l) + ")";
    }
    return group_or_memory_load(l);
  }

  // A load made once for its group of iterations (emit_spread_loop), or from memory.
  std::string group_or_memory_load(const Load* l) {
    if (auto it = lane_loads_.find(l); it != lane_loads_.end() && !group_lane_.empty())
      return it->second + ".v[" + group_lane_ + "]";
    return memory_load(l);
  }

  std::string memory_load(const Load* l) {
    if (!device()) {
      remark(l->loc, "an array element of `" + l->array->name +
                         "` is read by host code: one copy from device memory per read");
    }
    if (!l->checked) {
      std::vector<std::string> idx;
      for (const Expr& i : l->indices) idx.push_back(index_value(i));
      return element(l->array, offset(l->array, idx));
    }
    std::vector<std::string> names;
    std::string decls;
    const std::string cond = bound_checks(l->array, l->indices, l->loc, &names, &decls);
    const std::string t = ctype(l->type);
    return "[&]() -> " + t + " { " + decls + " if (!(" + cond + ")) return " + t + "(0); return " +
           element(l->array, offset(l->array, names)) + "; }()";
  }

  // ------------------------------------------------------------ statements

  // A statement as the body of a construct. On the host, consecutive
  // statements that touch array elements and can run on the device are
  // grouped into single-thread device regions.
  void emit_contents(const Stmt& s) {
    scopes_.emplace_back();
    const int region_slots = region_slots_used_;
    const Block* b = s->as<Block>();
    std::vector<Stmt> stmts = b ? b->stmts : std::vector<Stmt>{s};
    std::vector<Stmt> run;
    for (size_t k = 0; k < stmts.size(); ++k) {
      const Stmt& st = stmts[k];
      if (!device() && runs_on_device(st)) {
        run.push_back(st);
        continue;
      }
      if (!run.empty()) emit_serial_region(run, stays_on_device(run, stmts, k));
      run.clear();
      resident_slots_.clear();
      if (!device()) resident_loop_ = results_stay_on_device(stmts, k) ? st->as<For>() : nullptr;
      emit(st);
      resident_loop_ = nullptr;
    }
    if (!run.empty()) emit_serial_region(run, stays_on_device(run, stmts, stmts.size()));
    resident_slots_.clear();
    if (!device()) {
      for (auto it = region_slots_.begin(); it != region_slots_.end();)
        it = it->second >= kRegionSlot + region_slots ? region_slots_.erase(it) : std::next(it);
      region_slots_used_ = region_slots;
    }
    scopes_.pop_back();
  }

  // The scalars a device region (`run`, followed by `stmts[next]`...)
  // assigns that can stay on the device: declared in this block, and
  // afterwards read only by parallel loops of the block (not in their
  // bounds, not assigned there, no arrays allocated in them, whose sizes
  // the host computes) — gramschmidt's `R[k, k]`, read back per column
  // before.
  VarSet stays_on_device(const std::vector<Stmt>& run, const std::vector<Stmt>& stmts, size_t next) {
    VarSet out;
    if (device() || persistent_step_) return out;
    Captures cap = captures_of(run);
    for (const Var& v : cap.scalars) {
      if (!cap.written.count(v.get()) || region_slots_used_ + static_cast<int>(out.size()) >= kResidentSlots) continue;
      bool ok = declares(stmts, stmts.size(), v.get());
      for (size_t j = next; j < stmts.size() && ok; ++j) {
        ScalarCollector uses;
        uses.visit(stmts[j]);
        if (!collected(uses, v.get())) continue;
        const For* f = stmts[j]->as<For>();
        StmtFacts facts;
        if (f) facts.visit(f->body);
        ScalarCollector bounds;
        if (f) {
          bounds.visit(f->begin);
          bounds.visit(f->end);
          bounds.visit(f->step);
        }
        ok = f && is_parallel(f->schedule.kind) && !uses.written.count(v.get()) && !facts.binds_arrays &&
             !collected(bounds, v.get());
      }
      if (ok) out.insert(v.get());
    }
    return out;
  }

  // Whether the reductions of the parallel loop `stmts[k]` can leave their
  // results in device memory, so that the host neither stages nor reads
  // them back (each a synchronisation: a triangular solve's row loop waited
  // for the GPU twice per row): the host reads none of them again; only the
  // device region right after the loop (the statements that follow it and
  // run on the device) reads them, without assigning them; each is declared
  // in this block, so nothing after the block sees it.
  bool results_stay_on_device(const std::vector<Stmt>& stmts, size_t k) {
    const For* f = stmts[k]->as<For>();
    if (!f || !is_parallel(f->schedule.kind) || f->schedule.reductions.empty() ||
        static_cast<int>(f->schedule.reductions.size()) > kResidentSlots || persistent_step_)
      return false;
    size_t end = k + 1;
    while (end < stmts.size() && runs_on_device(stmts[end])) ++end;
    for (const Reduction& r : f->schedule.reductions) {
      if (!declares(stmts, k, r.var.get())) return false;
      for (size_t j = k + 1; j < stmts.size(); ++j) {
        ScalarCollector uses;
        uses.visit(stmts[j]);
        if (collected(uses, r.var.get()) && (j >= end || uses.written.count(r.var.get()))) return false;
      }
    }
    return true;
  }

  // Whether one of stmts[0..end) declares `v`.
  static bool declares(const std::vector<Stmt>& stmts, size_t end, const VarInfo* v) {
    for (size_t j = 0; j < end; ++j)
      if (const Declare* d = stmts[j]->as<Declare>(); d && d->var.get() == v) return true;
    return false;
  }

  // Whether a collector saw `v` (read or written).
  static bool collected(const ScalarCollector& c, const VarInfo* v) {
    return std::any_of(c.used.begin(), c.used.end(), [&](const Var& u) { return u.get() == v; });
  }

  // Whether a host statement becomes (part of) a single-thread device region.
  static bool runs_on_device(const Stmt& s) {
    if (s->kind == NodeKind::Declare) return false;
    StmtFacts facts;
    facts.visit(s);
    return facts.touches_elements && !facts.has_parallel_loop && !facts.has_return && !facts.binds_arrays &&
           !facts.leaves && !facts.calls_library;
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
        if (const ArrayVar& a = s->as<Declare>()->array) return declare_array(a);
        const Var& v = s->as<Declare>()->var;
        line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + "{};");
        scopes_.back().insert(v.get());
        return;
      }
      case NodeKind::Assign: {
        const Assign* a = s->as<Assign>();
        if (auto it = nan_checked_.find(a->var.get()); it != nan_checked_.end())
          return emit_nan_checked_update(a, it->second);
        if (declared(a->var.get())) {
          line(var_name(a->var) + " = " + expr(a->value) + ";");
        } else {
          line("[[maybe_unused]] " + ctype(a->var->type) + " " + var_name(a->var) + " = " + expr(a->value) + ";");
          scopes_.back().insert(a->var.get());
        }
        // An error in host code ends the call, as in Python; in device
        // code it ends the thread's work (stop_on_device_error).
        if (!device() && host_may_stop(a->value)) line(kHostStop);
        if (device() && analysis::raises(a->value).expressions) stop_on_device_error();
        return;
      }
      case NodeKind::Store: return emit_store(s->as<Store>());
      case NodeKind::AtomicUpdate: return emit_atomic(s->as<AtomicUpdate>());
      case NodeKind::If: {
        const If* i = s->as<If>();
        std::string cond = expr(i->cond);
        if (device() ? device_can_stop() && analysis::raises(i->cond).expressions : host_may_stop(i->cond)) {
          const std::string c = temp("cond");
          line("const bool " + c + " = " + cond + ";");
          if (device()) {
            stop_on_device_error();
          } else {
            line(kHostStop);
          }
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
      case NodeKind::For: {
        const For* f = s->as<For>();
        if (!device() && is_parallel(f->schedule.kind)) return emit_parallel_kernel(f);
        if (!device() && f->schedule.kind == LoopKind::Serial && emit_persistent_time_loop(f)) return;
        if (!device() && f->schedule.kind == LoopKind::Serial && emit_device_serial_loop(s)) return;
        if (persistent_step_ && is_parallel(f->schedule.kind)) {
          if (register_plan_) {
            emit_register_parallel_loop(f);
            // No barrier follows a loop in registers; where the step may
            // raise, the block learns of an error here, all its threads
            // together, before the code after the loop runs.
            if (step_may_raise_) line("if (plait::block_stopped(p_err)) return;  // an error stops the call");
            return;
          }
          emit_persistent_parallel_loop(f);
          // A barrier the step does without when its arrays do not share memory.
          // Every block leaves at the same barrier once an error is
          // recorded (plait::grid_sync says why none waits for one that left).
          line(barrier_not_needed_.count(f) ? "if (!p_apart && plait::grid_sync(p_barrier, p_err)) return;"
                                            : "if (plait::grid_sync(p_barrier, p_err)) return;");
          return;
        }
        return emit_serial_for(f);
      }
      case NodeKind::While: {
        const While* w = s->as<While>();
        // A condition that may raise, or that reads the GPU's memory on the
        // host, is tested at the top of the body, so that an error stops
        // the loop before its next iteration (a host loop does not spin on
        // values that stopped device code no longer changes).
        const bool test_first =
            device() ? device_can_stop() && analysis::raises(w->cond).expressions : host_may_stop(w->cond);
        line(test_first ? "while (true) {" : "while (" + expr(w->cond) + ") {");
        ++loop_depth_;
        if (test_first) {
          ++indent_;
          const std::string c = temp("cond");
          line("const bool " + c + " = " + expr(w->cond) + ";");
          if (device()) {
            stop_on_device_error();
          } else {
            line(kHostStop);
          }
          line("if (!" + c + ") break;");
          --indent_;
        }
        nested(w->body);
        --loop_depth_;
        line("}");
        return;
      }
      case NodeKind::Assert: return emit_assert(s->as<Assert>());
      case NodeKind::Break: line("break;"); return;
      case NodeKind::Continue: line("continue;"); return;
      case NodeKind::Return:
        if (device()) PLAIT_INTERNAL_ERROR("a return statement in device code");
        return emit_return(s->as<Return>());
      case NodeKind::Allocate:
        if (device()) {
          emit_device_allocate(s->as<Allocate>());
          stop_on_device_error();  // a negative or oversized shape
          return;
        }
        return emit_allocate(s->as<Allocate>());
      case NodeKind::ArrayBind: return emit_bind(s->as<ArrayBind>());
      case NodeKind::MatMul:
        if (device()) PLAIT_INTERNAL_ERROR("a library matrix product in device code");
        return emit_matmul(s->as<MatMul>());
      default: PLAIT_INTERNAL_ERROR(std::string("not a statement: ") + node_kind_name(s->kind));
    }
  }

  // The product through the runtime's BLAS entry (cuBLAS), or its loops
  // when the library declines these operands (abi.h says when). A triangle
  // goes to `gemmt` (`trmm` for a product in place, `symm` for a symmetric
  // one, `trsv` for a solve) once its row condition holds for every row.
  void emit_matmul(const MatMul* mm) {
    auto operand = [&](const ArrayVar& x, bool transposed) {
      const std::string rows = stride(x, transposed ? 1 : 0), cols = stride(x, transposed ? 0 : 1);
      return data(x) + ", " + rows + ", " + cols;
    };
    const std::string beta = mm->beta ? expr(mm->beta) : std::string("0.0");
    const std::string beta_reads_c = mm->beta ? "1" : "0";
    const std::string status = temp("gemm");
    const MatMulTriangle& tri = mm->triangle;
    if (tri.part == MatMulPart::Full) {
      line("const int32_t " + status + " = ctx->cuda->gemm(ctx, " + dtype_code(mm->c->type.dtype) + ", " + expr(mm->m) +
           ", " + expr(mm->n) + ", " + expr(mm->k) + ", " + expr(mm->alpha) + ", " + operand(mm->a, mm->a_transposed) +
           ", " + operand(mm->b, mm->b_transposed) + ", " + beta + ", " + beta_reads_c + ", " + operand(mm->c, false) +
           ");");
    } else {
      line("int32_t " + status + " = 1;");
      line("{");
      ++indent_;
      const std::string rows = temp("rows"), ok = temp("ok");
      line("const int64_t " + rows + " = " + expr(mm->m) + ";");
      line("bool " + ok + " = true;");
      if (tri.row_condition) {
        const std::string r = temp("row");
        line("for (int64_t " + r + " = 0; " + ok + " && " + r + " < " + rows + "; ++" + r + ") {");
        ++indent_;
        scopes_.emplace_back();
        line("[[maybe_unused]] const " + ctype(tri.row->type) + " " + var_name(tri.row) + " = static_cast<" +
             ctype(tri.row->type) + ">(" + r + ");");
        scopes_.back().insert(tri.row.get());
        line(ok + " = " + expr(tri.row_condition) + ";");
        scopes_.pop_back();
        --indent_;
        line("}");
      }
      std::string call;
      if (tri.part == MatMulPart::StrictUpperInPlace) {
        call = "ctx->cuda->trmm(ctx, " + dtype_code(mm->c->type.dtype) + ", " + rows + ", " + expr(mm->n) + ", " +
               operand(mm->a, mm->a_transposed) + ", " + operand(mm->c, false) + ")";
      } else if (tri.part == MatMulPart::LowerSolve) {
        // A vector, or the row of a matrix: its first element and step.
        auto vector = [&](const ArrayVar& x) {
          if (!tri.vector_row) return data(x) + ", " + stride(x, 0);
          return data(x) + " + (" + expr(tri.vector_row) + ") * " + stride(x, 0) + ", " + stride(x, 1);
        };
        call = "ctx->cuda->trsv(ctx, " + dtype_code(mm->c->type.dtype) + ", " + rows + ", " +
               operand(mm->a, mm->a_transposed) + ", " + vector(mm->b) + ", " + vector(mm->c) + ")";
      } else if (tri.part == MatMulPart::SymmetricLower) {
        call = "ctx->cuda->symm(ctx, " + dtype_code(mm->c->type.dtype) + ", " + rows + ", " + expr(mm->n) + ", " +
               expr(mm->alpha) + ", " + operand(mm->a, false) + ", " + operand(mm->b, mm->b_transposed) + ", " + beta +
               ", " + beta_reads_c + ", " + operand(mm->c, false) + ")";
      } else {
        const std::string second = tri.a2 ? expr(tri.alpha2) + ", " + operand(tri.a2, tri.a2_transposed) + ", " +
                                                operand(tri.b2, tri.b2_transposed)
                                          : std::string("0.0, nullptr, 0, 0, nullptr, 0, 0");
        call = "ctx->cuda->gemmt(ctx, " + dtype_code(mm->c->type.dtype) + ", " +
               (tri.part == MatMulPart::Upper ? "1" : "0") + ", " + rows + ", " + expr(mm->k) + ", " + expr(mm->alpha) +
               ", " + operand(mm->a, mm->a_transposed) + ", " + operand(mm->b, mm->b_transposed) + ", " + second +
               ", " + beta + ", " + beta_reads_c + ", " + operand(mm->c, false) + ")";
      }
      line("if (" + ok + ") " + status + " = " + call + ";");
      --indent_;
      line("}");
    }
    line("if (" + status + " < 0) return ctx->error_kind;");
    line("if (" + status + " > 0) {");
    nested(mm->loops);
    line("}");
  }

  // `m = max(x, m)` (or min) in a spread loop whose team looks for NaN:
  // `m = max(m, x)`, noting whether x is NaN.
  void emit_nan_checked_update(const Assign* a, const std::string& nan_seen) {
    const Binary* b = a->value->as<Binary>();
    if (!b || (b->op != BinaryOp::PyMax && b->op != BinaryOp::PyMin))
      PLAIT_INTERNAL_ERROR("a max/min reduction of `" + a->var->name + "` that is not max(x, m) or min(x, m)");
    const VarRef* first = b->a->as<VarRef>();
    const Expr& other = first && first->var.get() == a->var.get() ? b->b : b->a;
    const std::string x = temp("x");
    line("{");
    ++indent_;
    line("const " + ctype(a->var->type) + " " + x + " = " + expr(other) + ";");
    line(nan_seen + " |= (int32_t)(" + x + " != " + x + ");");
    line(var_name(a->var) + " = plait::" + (b->op == BinaryOp::PyMax ? "py_max" : "py_min") + "(" + var_name(a->var) +
         ", " + x + ");");
    --indent_;
    line("}");
  }

  // After device code that may have recorded an error, where the thread can
  // leave its work (stop_ set): the code after it must not run. The thread
  // tests its own errors (thread_errors, in a register); another thread's
  // error stops it where it takes its next iteration, as on the CPU.
  //
  // A persistent kernel's step-level statements run in every thread alike
  // (no stop_): there a barrier that answers for all threads follows the
  // statement, so that the code after it does not run either. A thread
  // alone could see another block's error and leave without the others.
  void stop_on_device_error() {
    if (!stop_.empty()) {
      line("if (p_errs.raised) " + stop_);
      ++stop_uses_;
    } else if (persistent_step_) {
      line(register_plan_ ? "if (plait::block_stopped(p_err)) return;  // an error stops the call"
                          : "if (plait::grid_sync(p_barrier, p_err)) return;  // an error stops the call");
    }
  }
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
  static bool host_may_stop(const Expr& e) {
    if (analysis::raises(e).expressions) return true;
    StmtFacts facts;
    facts.visit(e);
    return facts.touches_elements;
  }
  static constexpr const char* kHostStop = "if (__builtin_expect(ctx->error_kind != 0, 0)) return ctx->error_kind;";

  // A failed assertion records its error, then stops the host code (the
  // call ends), or the device thread's work (stop_; where there is none,
  // its loop iteration, or its thread outside loops).
  void emit_assert(const Assert* a) {
    line("if (!(" + expr(a->cond) + ")) {");
    ++indent_;
    if (device()) {
      const size_t index = assert_messages_.size();
      assert_messages_.push_back(a->message);
      line("plait::raise_error(" + sink() + ", " + std::to_string(a->error_kind) + ", " + loc_args(a->loc) +
           ", plait::msg_assert_failed, " + std::to_string(index) + ");");
      if (!stop_.empty()) {
        line(stop_);
        ++stop_uses_;
      } else {
        line(loop_depth_ > 0 ? "continue;" : "return;");
      }
    } else {
      line("plait::raise_error(ctx, " + std::to_string(a->error_kind) + ", " + loc_args(a->loc) + ", \"" +
           escape_path(a->message) + "\");");
      line("return ctx->error_kind;");
    }
    --indent_;
    line("}");
  }

  void nested(const Stmt& s) {
    ++indent_;
    emit_contents(s);
    --indent_;
  }

  void emit_store(const Store* st) {
    if (!device()) PLAIT_INTERNAL_ERROR("an array store in host code");
    std::string stored = expr(st->value);
    if (const ArrayVar* a = register_array(st->array.get()); a && register_loop_) {
      const std::string slot = data(*a) + "_reg[" + std::to_string(register_slot_) + "]";
      if (!analysis::raises(st->value).expressions) {
        line(slot + " = " + stored + ";");
        return;
      }
      // A failed value is not kept (the slot goes back to memory).
      const std::string value = temp("value");
      line("{");
      line("  const " + ctype(st->array->type.dtype) + " " + value + " = " + stored + ";");
      ++indent_;
      stop_on_device_error();
      --indent_;
      line("  " + slot + " = " + value + ";");
      line("}");
      return;
    }
    // A row kept in registers: the register first, then memory unless the
    // row is the worker's own temporary.
    if (auto it = cached_rows_.find(st->array.get()); it != cached_rows_.end()) {
      const std::string slot = it->second.registers + "[" + row_slot_ + "]";
      line(slot + " = " + stored + ";");
      if (it->second.registers_only) return;
      stored = slot;
    }
    // A store made once for its group of iterations, after them.
    if (auto it = group_stores_.find(st); it != group_stores_.end() && !group_lane_.empty()) {
      line(it->second + ".v[" + group_lane_ + "] = " + stored + ";");
      return;
    }
    emit_element_update(st->array, st->indices, st->value, stored, st->checked, st->loc,
                        [&](const std::vector<std::string>& idx, const std::string& value) {
                          return data(st->array) + "[" + offset(st->array, idx) + "] = " + value + ";";
                        });
  }

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

  void emit_atomic(const AtomicUpdate* u) {
    if (!device()) PLAIT_INTERNAL_ERROR("an atomic update in host code");
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
    const std::string t = ctype(u->array->type.dtype);
    fn = "plait::" + fn + "<" + t + ">";
    // The element updated: in the array, or in the block's private copy of
    // it in shared memory (1-D, indexed by the element's index).
    auto target = [&](const std::vector<std::string>& idx) {
      auto it = private_copies_.find(u->array.get());
      if (it != private_copies_.end()) return "&" + it->second + "[" + idx[0] + "]";
      return "&" + data(u->array) + "[" + offset(u->array, idx) + "]";
    };
    emit_element_update(u->array, u->indices, u->value, expr(u->value), u->checked, u->loc,
                        [&](const std::vector<std::string>& idx, const std::string& value) {
                          return fn + "(" + target(idx) + ", " + value + ");";
                        });
  }

  // A loop that runs in order (host code, or inside one device thread);
  // `body`, when given, emits its body instead of the plain statements.
  void emit_serial_for(const For* loop, const std::function<void()>& body = {}) {
    if (loop->schedule.kind != LoopKind::Serial) {
      LeavesLoop leaves;
      leaves.visit(loop->body);
      if (leaves.found)
        PLAIT_INTERNAL_ERROR(std::string(loop_kind_name(loop->schedule.kind)) + " loop over `" + loop->var->name +
                             "` contains a break or return; the lowering must make it serial");
    }
    if (device() && is_parallel(loop->schedule.kind)) {
      remark(loop->loc, "parallel loop over `" + loop->var->name +
                            "` is nested in another parallel loop: it runs serially inside each GPU thread");
    }
    line("{");
    ++indent_;
    const std::string begin = temp("begin"), end = temp("end"), step = temp("step"), trip = temp("trip"),
                      k = temp("k");
    line("const int64_t " + begin + " = " + expr(loop->begin) + ";");
    line("const int64_t " + end + " = " + expr(loop->end) + ";");
    line("const int64_t " + step + " = " + expr(loop->step) + ";");
    if (device()) {
      bool bounds_raise = false;
      for (const Expr* e : {&loop->begin, &loop->end, &loop->step})
        bounds_raise = bounds_raise || analysis::raises(*e).expressions;
      if (bounds_raise) stop_on_device_error();
    } else if (host_may_stop(loop->begin) || host_may_stop(loop->end) || host_may_stop(loop->step)) {
      line(kHostStop);
    }
    line("const int64_t " + trip + " = " + trip_count(loop, begin, end, step) + ";");
    line("for (int64_t " + k + " = 0; " + k + " < " + trip + "; ++" + k + ") {");
    ++indent_;
    scopes_.emplace_back();
    const Var& v = loop->var;
    const std::string value = "static_cast<" + ctype(v->type) + ">(" + begin + " + " + k + " * " + step + ")";
    // A serial loop assigns the variable itself, so that break and
    // assignments in the body leave Python's value; simd loops give each
    // iteration its own copy and set the last value after.
    const bool own_copy = loop->schedule.kind != LoopKind::Serial;
    if (!own_copy && declared(v.get())) {
      line(var_name(v) + " = " + value + ";");
    } else {
      line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = " + value + ";");
      scopes_.back().insert(v.get());
    }
    ++loop_depth_;
    if (body) {
      body();
    } else {
      emit_body_statements(loop->body);
    }
    --loop_depth_;
    scopes_.pop_back();
    --indent_;
    line("}");
    if (own_copy && declared(v.get())) {
      line("if (" + trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin + " + (" + trip +
           " - 1) * " + step + ");");
    }
    --indent_;
    line("}");
  }

  // A loop body's statements in the current scope (no extra braces).
  void emit_body_statements(const Stmt& body) {
    if (device()) {
      if (const Block* b = body->as<Block>()) {
        for (const Stmt& st : b->stmts) emit(st);
      } else {
        emit(body);
      }
      return;
    }
    // Host: group device regions as in any block.
    emit_contents(body);
  }

  // ------------------------------------------------------------ kernels

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

  std::vector<const For*> collapse_nest(const For* outer) {
    std::vector<const For*> nest{outer};
    VarSet vars{outer->var.get()};
    auto bounds_use_nest = [&](const For* inner) {
      UsesVars uses(vars);
      uses.visit(inner->begin);
      uses.visit(inner->end);
      uses.visit(inner->step);
      return uses.found;
    };
    while (static_cast<int>(nest.size()) < outer->schedule.collapse) {
      const For* inner = single_loop(nest.back()->body);
      if (!inner || bounds_use_nest(inner)) return nest;
      nest.push_back(inner);
      vars.insert(inner->var.get());
    }
    // A vector loop alone in the innermost level's body, with no reductions
    // and a straight-line body (an array statement's nest: parallel over
    // rows, simd over columns) has independent iterations: it joins the
    // iteration space as a parallel loop would, so that the nest runs in
    // one-thread workers of several iterations, in tiles of rows
    // (docs/cuda.md, "Array statements as collapsed nests").
    const For* inner = single_loop(nest.back()->body);
    std::string why;
    if (inner && inner->schedule.kind == LoopKind::Vectorized && inner->schedule.reductions.empty() &&
        inner->schedule.array_reductions.empty() && !bounds_use_nest(inner) &&
        cuda::straight_line_worker(inner->body, &why))
      nest.push_back(inner);
    return nest;
  }

  // The parameters of a kernel that runs `body`: host scalars it uses and
  // arrays it uses, as "type name" (device) and "name" (host) pairs.
  struct Captures {
    std::vector<Var> scalars;  // host scalars used (read or written)
    VarSet written;
    std::vector<ArrayVar> arrays;  // bound outside the body
    std::vector<ArrayVar> local_arrays;
  };

  Captures captures_of(const std::vector<Stmt>& stmts) {
    Captures c;
    ScalarCollector scalars;
    ArrayCollector arrays;
    for (const Stmt& s : stmts) {
      scalars.visit(s);
      arrays.visit(s);
    }
    for (const Var& v : scalars.used)
      if (declared(v.get())) c.scalars.push_back(v);
    c.written = scalars.written;
    for (const ArrayVar& a : arrays.used) {
      if (arrays.declared.count(a.get())) {
        c.local_arrays.push_back(a);
      } else {
        c.arrays.push_back(a);
      }
    }
    return c;
  }

  // The kernel parameters of `arrays`: data pointers, extents and strides
  // other than the unit one; `prefix` goes before the names of the pointers
  // and strides (a kernel that copies the arrays on chip binds the usual
  // names to the copies).
  void add_array_params(const std::vector<ArrayVar>& arrays, std::vector<std::string>* params,
                        std::vector<std::string>* args, const std::string& prefix = "") {
    for (const ArrayVar& a : arrays) {
      params->push_back(ctype(a->type.dtype) + "* " + prefix + data(a));
      args->push_back(data(a));
      for (int d = 0; d < a->type.ndim; ++d) {
        params->push_back("int64_t " + extent(a, d));
        args->push_back(extent(a, d));
        if (!unit_stride(a->type, d)) {
          params->push_back("int64_t " + prefix + stride(a, d));
          args->push_back(stride(a, d));
        }
      }
    }
  }

  // A kernel, and whether its device code may record an error.
  int add_kernel(const std::string& name, bool raises) {
    kernel_names_.push_back(name);
    kernel_raises_.push_back(raises);
    return static_cast<int>(kernel_names_.size()) - 1;
  }

  // Whether device code of `stmts` may record an error.
  bool note_error_sites(const std::vector<Stmt>& stmts) {
    HasErrorSites sites;
    for (const Stmt& s : stmts) sites.visit(s);
    device_errors_ = device_errors_ || sites.found;
    return sites.found;
  }

  static std::string join(const std::vector<std::string>& parts, const std::string& separator) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
    return out;
  }

  // The lanes p_u of a group of `w` iterations, unrolled; in the partial
  // group only the first `tail`. `lane` emits one lane's statements.
  void emit_group_lanes(const std::string& w, bool partial, const std::string& tail,
                        const std::function<void()>& lane) {
    line("#pragma unroll");
    line("for (int p_u = 0; p_u < " + w + "; ++p_u) {");
    ++indent_;
    if (partial) {
      line("if (p_u < " + tail + ") {");
      ++indent_;
    }
    lane();
    if (partial) {
      --indent_;
      line("}");
    }
    --indent_;
    line("}");
  }

  // Host code that declares the parameter array cuLaunchKernel takes for
  // `args`; returns its name.
  std::string emit_launch_params(const std::vector<std::string>& args) {
    const std::string params = temp("params");
    std::vector<std::string> addresses;
    for (const std::string& a : args) {
      // cuLaunchKernel reads each parameter through its address: values
      // that are not locals already get one that outlives the launch.
      std::string name = a;
      if (a.find_first_of("(-") != std::string::npos) {
        name = temp("param");
        line("void* const " + name + " = " + a + ";");
      }
      addresses.push_back("plait_cuda::arg(" + name + ")");
    }
    line("void* " + params + "[] = {" + join(addresses, ", ") + "};");
    return params;
  }

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
                                  const std::string& apart) {
    OnChipLaunch on{index, temp("onchip"), temp("onchip_bytes"), apart, -1, "", "", ""};
    std::string bytes = "uint64_t(0)";
    for (const ArrayVar& a : arrays)
      bytes += " + plait_cuda::onchip_bytes(" + element_count(a) + ", sizeof(" + ctype(a->type.dtype) + "))";
    line("const uint64_t " + on.bytes + " = " + bytes + ";");
    line("const bool " + on.condition + " = " + trip + " >= 2 && " + on.bytes +
         " <= ctx->cuda->shared_bytes_limit && " + on.apart + ";");
    return on;
  }

  // Host code that launches kernel `index`, staging `slots` (host scalars
  // exchanged through the scratch buffer) around it; or its on-chip version
  // in one block, where `onchip` has one, its condition holds and the
  // runtime can give it the shared memory.
  void emit_launch(int index, const std::string& grid, const std::string& block, const std::vector<std::string>& args,
                   const std::vector<std::pair<std::string, std::string>>& slots_in,
                   const std::vector<std::pair<std::string, std::string>>& slots_out,
                   const std::string& launcher = "ctx->cuda->launch", const OnChipLaunch* onchip = nullptr) {
    // slots_*: (host lvalue, C type), slot k at scratch_slot(ctx, k).
    stage_slots(slots_in, 0);
    const std::string params = emit_launch_params(args);
    const std::string launch = "if (" + launcher + "(ctx, " + std::to_string(index) + ", " + grid + ", " + block +
                               ", " + params + ") != 0) return ctx->error_kind;";
    if (!onchip) {
      line(launch);
    } else {
      const std::string launched = temp("launched");
      line("int32_t " + launched + " = 1;");
      // The arrays in registers first, else copied on chip, else in memory.
      if (onchip->registers_index >= 0) {
        line("if (" + onchip->registers_condition + ") {");
        line("  " + launched + " = ctx->cuda->launch_shared(ctx, " + std::to_string(onchip->registers_index) +
             ", 1u, " + onchip->registers_block + ", " + onchip->registers_bytes + ", " + params + ");");
        line("  if (" + launched + " < 0) return ctx->error_kind;");
        line("}");
      }
      line("if (" + launched + " != 0 && " + onchip->condition + ") {");
      line("  " + launched + " = ctx->cuda->launch_shared(ctx, " + std::to_string(onchip->index) + ", 1u, " + block +
           ", " + onchip->bytes + ", " + params + ");");
      line("  if (" + launched + " < 0) return ctx->error_kind;");
      line("}");
      line("if (" + launched + " != 0) {");
      line("  " + launch);
      line("}");
    }
    if (!slots_out.empty()) {
      const std::string staging = temp("stage");
      line("unsigned char " + staging + "[" + std::to_string(8 * slots_out.size()) + "] = {};");
      line("if (ctx->cuda->copy_to_host(ctx, " + staging + ", plait_cuda::scratch_slot(ctx, 0), sizeof " + staging +
           ") != 0) return ctx->error_kind;");
      for (size_t k = 0; k < slots_out.size(); ++k)
        line("std::memcpy(&" + slots_out[k].first + ", " + staging + " + " + std::to_string(8 * k) + ", sizeof(" +
             slots_out[k].second + "));");
    }
  }

  // Host code that puts host scalars into slots first.. of the scratch
  // buffer. All-zero bytes (a sum from 0) are cleared in stream order; other
  // values are copied, which waits for the stream (pageable host memory).
  void stage_slots(const std::vector<std::pair<std::string, std::string>>& slots, int first) {
    if (slots.empty()) return;
    const std::string staging = temp("stage");
    const std::string bytes = std::to_string(8 * slots.size());
    line("unsigned char " + staging + "[" + bytes + "] = {};");
    for (size_t k = 0; k < slots.size(); ++k)
      line("std::memcpy(" + staging + " + " + std::to_string(8 * k) + ", &" + slots[k].first + ", sizeof(" +
           slots[k].second + "));");
    const std::string target = "plait_cuda::scratch_slot(ctx, " + std::to_string(first) + ")";
    line("if (plait_cuda::all_zero(" + staging + ", sizeof " + staging + ")) {");
    line("  if (ctx->cuda->zero(ctx, " + target + ", sizeof " + staging + ") != 0) return ctx->error_kind;");
    line("} else if (ctx->cuda->copy_to_device(ctx, " + target + ", " + staging + ", sizeof " + staging +
         ") != 0) {");
    line("  return ctx->error_kind;");
    line("}");
  }

  static std::string reduction_identity(ReduceOp op, ScalarKind k) {
    const bool is_float = k == ScalarKind::Float32 || k == ScalarKind::Float64;
    const std::string t = c_type_name(k);
    switch (op) {
      case ReduceOp::Add: return t + "(0)";
      case ReduceOp::Mul: return t + "(1)";
      case ReduceOp::Min:
        if (k == ScalarKind::Bool) return "true";
        if (is_float) return t + "(plait::inf_f64())";
        return k == ScalarKind::UInt64 ? "uint64_t(18446744073709551615ULL)" : int_literal(int_max(k), k);
      case ReduceOp::Max:
        if (k == ScalarKind::Bool) return "false";
        if (is_float) return t + "(-plait::inf_f64())";
        return int_literal(int_min(k), k);
    }
    return t + "(0)";
  }

  // Atomic updates of small arrays that a parallel loop's blocks combine in
  // shared memory first: 1-D arrays bound outside the loop, updated only by
  // `#pragma atomic` += or -= on numbers, never read or stored in the loop.
  class PrivatisableAtomics : public IRVisitor {
   public:
    std::vector<ArrayVar> arrays;  // in first-update order
    using IRVisitor::visit;
    std::vector<ArrayVar> result() const {
      std::vector<ArrayVar> out;
      for (const ArrayVar& a : arrays)
        if (!excluded_.count(a.get())) out.push_back(a);
      return out;
    }

   protected:
    void visit(const AtomicUpdate* n) override {
      const ScalarKind k = n->array->type.dtype;
      const bool ok = n->array->type.ndim == 1 && k != ScalarKind::Bool &&
                      (n->op == AtomicOp::Add || n->op == AtomicOp::Sub);
      if (!ok) excluded_.insert(n->array.get());
      if (seen_.insert(n->array.get()).second) arrays.push_back(n->array);
      IRVisitor::visit(n);
    }
    void visit(const Load* n) override {
      excluded_.insert(n->array.get());
      IRVisitor::visit(n);
    }
    void visit(const Store* n) override {
      excluded_.insert(n->array.get());
      IRVisitor::visit(n);
    }
    void visit(const ArrayBind* n) override {
      excluded_.insert(n->src.get());
      excluded_.insert(n->dst.get());
    }

   private:
    ArraySet seen_, excluded_;
  };

  static constexpr int kPrivateCopyBytes = 8192;  // shared memory per privatised array and block

  static std::string op_functor(ReduceOp op) { return std::string("plait::op_") + reduce_op_name_word(op) + "()"; }

  // A kernel-wide __shared__ array, declared once at the top of the kernel.
  std::string shared_array(const std::string& name, const std::string& type, int count) {
    // Aligned so that an 8- or 16-bit element's atomic update, a
    // compare-and-swap on its aligned 32-bit word, stays inside the array.
    shared_decls_[name] = "__shared__ __align__(8) " + type + " " + name + "[" + std::to_string(count) + "];";
    return name;
  }

  // The functor that combines partial values of reduction `r` of a loop
  // with body `body` (worker_plan.h, ReductionForm).
  static std::string combine_functor(const Stmt& body, const Reduction& r) {
    if (cuda::reduction_form(body, r) == cuda::ReductionForm::NanPropagating)
      return r.op == ReduceOp::Max ? "plait::op_maximum()" : "plait::op_minimum()";
    return op_functor(r.op);
  }

  // A value kept in registers (cuda::CachedValue): the per-thread array of
  // cuda::row_cache_slots elements, and whether this loop computes it into them.
  struct RegisterValue {
    std::string registers;
    bool filling = false;
    const ExprNode* source = nullptr;  // the expression that fills them
  };
  // The registers a spread loop's first iterations use (emit_team_body):
  // rows kept in registers, and values it computes into registers (filling)
  // or reads from them.
  struct LoopRegisters {
    std::vector<std::pair<const cuda::CachedRow*, std::string>> rows;
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
  void emit_spread_loop(const For* loop, size_t index = 0, const LoopRegisters* registers = nullptr) {
    if (cuda::PairedLoop paired;
        (!registers || (registers->rows.empty() && registers->values.empty())) && cuda::paired_loop(loop, &paired))
      return emit_paired_spread_loop(loop, paired);
    line_directive(loop->loc);
    line("{");
    ++indent_;
    const std::string begin = temp("begin"), end = temp("end"), step = temp("step"), trip = temp("trip"),
                      k = temp("k");
    const bool staged = loop == staged_loop_;  // its bounds and terms are in shared memory
    line("const int64_t " + begin + " = " + (staged ? "p_bounds[p_slot]" : expr(loop->begin)) + ";");
    line("const int64_t " + end + " = " + (staged ? "p_bounds[p_slot + 1]" : expr(loop->end)) + ";");
    line("const int64_t " + step + " = " + expr(loop->step) + ";");
    line("const int64_t " + trip + " = plait::trip_count(" + begin + ", " + end + ", " + step + ");");
    std::vector<std::string> before;
    std::string nan_seen;  // OrderDependent reductions: whether this thread saw a NaN
    for (const Reduction& r : loop->schedule.reductions) {
      const std::string b = temp("before");
      before.push_back(b);
      line("const " + ctype(r.var->type) + " " + b + " = " + var_name(r.var) + ";");
      line(var_name(r.var) + " = " + reduction_identity(r.op, r.var->type.kind) + ";");
      if (cuda::reduction_form(loop->body, r) != cuda::ReductionForm::OrderDependent) continue;
      if (nan_seen.empty()) {
        nan_seen = temp("nan_seen");
        line("int32_t " + nan_seen + " = 0;");
      }
      line(nan_seen + " |= (int32_t)(" + b + " != " + b + ");");
      nan_checked_[r.var.get()] = nan_seen;
    }
    const Var& v = loop->var;
    auto iteration = [&] {
      scopes_.emplace_back();
      line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
           begin + " + " + k + " * " + step + ");");
      scopes_.back().insert(v.get());
      ++loop_depth_;
      emit_body_statements(loop->body);
      --loop_depth_;
      scopes_.pop_back();
    };
    // Emits `fn` with the loop variable at iteration `at` (for addresses).
    auto at_iteration = [&](const std::string& at, const std::function<void()>& fn) {
      const std::string saved = var_name(v);
      var_names_[v.get()] = temp("at");
      line("[[maybe_unused]] const " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
           begin + " + " + at + " * " + step + ");");
      fn();
      var_names_[v.get()] = saved;
    };
    auto address = [&](const ArrayVar& a, const std::vector<Expr>& indices) {
      std::vector<std::string> idx;
      for (const Expr& i : indices) idx.push_back(index_value(i));
      return data(a) + " + (" + offset(a, idx) + ")";
    };
    const int width = group_width_;
    const std::string w = std::to_string(width);
    auto lanes_type = [&](ScalarKind kind) { return "plait::lanes<" + ctype(kind) + ", " + w + ">"; };
    // Groups: the accesses made once per group, and for each one whether it
    // may be a vector access (step 1, its address aligned at the first
    // iteration). Each address has a flag of its own: a stencil's neighbours
    // (A[j - 1], A[j + 1]) are never aligned together with A[j], which still
    // is.
    const cuda::GroupAccesses group = width > 1 ? cuda::group_accesses(loop) : cuda::GroupAccesses{};
    // Groups: `full` whole groups, then `tail` iterations in a partial one
    // (0: none), which thread `full mod team` takes (`tail_mine`).
    const std::string full = width > 1 ? temp("full") : trip, tail = width > 1 ? temp("tail") : "",
                      tail_mine = width > 1 ? temp("tail_mine") : "";
    // Only whole groups, all of them in the registers (rows_fit_).
    const bool fits = rows_fit_ && registers;
    std::map<const void*, std::string> aligned;  // access (Load or Store) -> its flag
    // Whether an access of a group is one vector access: never in the
    // partial group, else where its address is aligned.
    auto vector_access = [&](const void* access, bool partial) {
      return partial ? std::string("false") : aligned.at(access);
    };
    if (width > 1) {
      line("const int64_t " + full + " = " + trip + " / " + w + ";");
      if (!fits) {
        line("const int " + tail + " = (int)(" + trip + " - " + full + " * " + w + ");");
        line("const bool " + tail_mine + " = " + tail + " != 0 && (int)(" + full + " & (p_team - 1)) == p_lane;");
      }
      if (!group.empty()) {
        // The temporaries at_iteration declares have names of their own, so
        // the flags need no block around them.
        std::map<std::string, std::string> flag_of_test;
        auto check = [&](const void* access, const ArrayVar& a, const std::vector<Expr>& indices) {
          const std::string t = "plait::lanes_aligned<" + ctype(a->type.dtype) + ", " + w + ">(" + address(a, indices) +
                                ")";
          auto [it, fresh] = flag_of_test.try_emplace(t, "");
          if (fresh) {
            it->second = temp("aligned");
            line("const bool " + it->second + " = (" + step + " == 1) && " + t + ";");
          }
          aligned[access] = it->second;
        };
        at_iteration("0", [&] {
          for (const Load* l : group.loads) check(l, l->array, l->indices);
          for (const Store* st : group.stores) check(st, st->array, st->indices);
        });
      }
    }
    if (width > 1) {
      std::string text = "loop over `" + v->name + "` (line " + std::to_string(loop->loc.line) +
                         "): each thread of the team takes groups of " + w + " consecutive iterations";
      if (!group.empty()) {
        text += "; its " + std::to_string(group.loads.size() + group.stores.size()) +
                " accesses at the loop variable plus fixed terms are made once per group (loads before the group's "
                "iterations, stores after them): one vector access each (16 bytes for float32, two for float64) when "
                "the step is 1 and its address at the first iteration is aligned (each address checked where the loop "
                "starts), else element by element";
      }
      remark(loop->loc, text);
    }
    // The lanes a group loaded from the elements that store `s` (at address
    // `at`) writes, when `s` stores a minimum or maximum of them and something
    // else (`x = min(x, y)`) and is the group's only store (so memory still
    // holds those lanes when the group stores): the group then stores only
    // when an element changed (store_changed_lanes). Empty otherwise. Called
    // in at_iteration, where the loads' addresses print as the store's does.
    auto relaxed_lanes = [&](const Store* s, const std::string& at) {
      if (group.stores.size() != 1) return std::string();
      const Load* l = relaxation_load(s, [&](const Load* l) { return address(l->array, l->indices) == at; });
      if (auto it = lane_loads_.find(l); l && it != lane_loads_.end()) return it->second;  // the group loaded it
      return std::string();
    };
    // One group of a thread, whose first iteration is `first_iteration`:
    // its loads, its iterations, then its stores. A whole group makes its
    // accesses as vectors where aligned and runs its iterations without
    // a test each (branches around every iteration cost about half the
    // instructions of a softmax row); the partial one (the row's last)
    // makes them element by element and tests each iteration against
    // `tail`. `with_registers`: loads and stores that the registers serve
    // are left out.
    auto group_body = [&](const std::string& first_iteration, bool partial, bool with_registers) {
      std::vector<const Load*> loads;
      for (const Load* l : group.loads) {
        auto it = cached_rows_.find(l->array.get());
        if (!(with_registers && it != cached_rows_.end() && (!it->second.filling || it->second.registers_only)))
          loads.push_back(l);
      }
      std::vector<std::pair<const Store*, std::string>> stores;
      for (const Store* s : group.stores) {
        auto it = cached_rows_.find(s->array.get());
        if (!(with_registers && it != cached_rows_.end() && it->second.registers_only))
          stores.emplace_back(s, temp("lanes"));
      }
      const std::string k0 = temp("k0"), n = partial ? tail : w;
      line("const int64_t " + k0 + " = " + first_iteration + ";");
      auto whole = [&](const void* access) { return vector_access(access, partial); };
      if (!loads.empty()) {
        at_iteration(k0, [&] {
          std::map<std::string, std::string> made;  // one load per address
          for (const Load* l : loads) {
            const std::string call = "plait::load_lanes<" + ctype(l->array->type.dtype) + ", " + w + ">(" +
                                     address(l->array, l->indices) + ", " + step + ", " + whole(l) + ", " + n + ")";
            auto [it, fresh] = made.try_emplace(call, temp("lanes"));
            if (fresh) line("const " + lanes_type(l->array->type.dtype) + " " + it->second + " = " + call + ";");
            lane_loads_[l] = it->second;
          }
        });
      }
      for (const auto& [s, name] : stores) {
        line(lanes_type(s->array->type.dtype) + " " + name + "{};");
        group_stores_[s] = name;
      }
      emit_group_lanes(w, partial, tail, [&] {
        line("const int64_t " + k + " = " + k0 + " + p_u;");
        group_lane_ = "p_u";
        iteration();
        group_lane_.clear();
      });
      if (!stores.empty()) {
        at_iteration(k0, [&] {
          for (const auto& [s, name] : stores) {
            const std::string at = address(s->array, s->indices);
            const std::string before = relaxed_lanes(s, at);
            if (!before.empty())
              remark(s->loc, "the update of `" + s->array->name + "` is a minimum or maximum with its old value: "
                             "each group of " + w + " stores its elements only when one of them changed");
            line("plait::store_" + std::string(before.empty() ? "" : "changed_") + "lanes<" +
                 ctype(s->array->type.dtype) + ", " + w + ">(" + at + ", " + name + ", " +
                 (before.empty() ? "" : before + ", ") + step + ", " + whole(s) + ", " + n + ");");
          }
        });
      }
      lane_loads_.clear();
      group_stores_.clear();
      mute_remarks_ = true;  // later groups emit the same statements again
    };
    // A thread's group: whole where `whole_test` holds, else partial where
    // `partial_test` does (`emit(partial)` emits it).
    auto whole_then_partial = [&](const std::string& whole_test, const std::string& partial_test,
                                  const std::function<void(bool)>& emit) {
      line("if (" + whole_test + ") {");
      ++indent_;
      emit(false);
      --indent_;
      if (fits) {
        line("}");
        return;
      }
      line("} else if (" + partial_test + ") {");
      ++indent_;
      emit(true);
      --indent_;
      line("}");
    };
    // The thread's first iterations (kRowCacheSlots, or row_groups
    // groups) use the registers of the rows and values kept in them (fully
    // unrolled, so that the registers are registers); the rest use memory.
    // Iteration (group) p_c of a thread there is lane + p_c * team, below
    // the registers' slots times the team: 32-bit arithmetic.
    std::string first = "p_lane";
    const bool muted = mute_remarks_;
    if (registers) {
      for (const auto& [row, name] : registers->rows)
        for (const ArrayInfo* a : row->names)
          cached_rows_[a] = RowRegisters{name, row->loops.front() == index, row->registers_only};
      for (const auto& [node, value] : registers->values) cached_values_[node] = value;
      const int per_thread = cuda::row_cache_slots(width, launch_.row_groups) / width;  // groups (iterations) in registers
      const std::string slots = std::to_string(per_thread);
      row_slot_ = width > 1 ? "p_c * " + w + " + p_u" : "p_c";
      const std::string slot_iteration = "(p_lane + p_c * p_team)" + (width > 1 ? " * " + w : std::string());
      // The thread's iterations (whole groups) among `count`, at most
      // `slots`, as a 32-bit count (64-bit guards per iteration cost
      // registers). The team is a power of two: shifts, not divisions.
      auto among_first = [&](const std::string& count) {
        const std::string quotient = "((" + count + " - p_lane + p_team - 1) >> p_team_shift)";
        return count + " > p_lane ? (int)(" + quotient + " < " + slots + " ? " + quotient + " : " + slots + ") : 0";
      };
      const std::string mine = temp("mine"), whole_mine = width > 1 ? temp("whole_mine") : mine;
      if (width == 1) {
        line("const int " + mine + " = " + among_first(trip) + ";");
      } else if (fits) {
        line("const int " + whole_mine + " = " + among_first(full) + ";");
      } else {
        // The partial group, where the thread has it, is its group number
        // whole_mine (full = lane + whole_mine * team).
        line("const int " + whole_mine + " = " + among_first(full) + ";");
        line("const int " + mine + " = " + whole_mine + " + (" + tail_mine + " && (" + full + " >> p_team_shift) < " +
             slots + " ? 1 : 0);");
      }
      // Rows that nothing writes: all registers loaded at once first.
      // Plain references, not structured bindings: the lambdas below capture
      // them, which clang before 16 rejects for bindings.
      for (const auto& row_and_name : registers->rows) {
        const cuda::CachedRow* row = row_and_name.first;
        const std::string& name = row_and_name.second;
        if (!row->load || row->loops.front() != index) continue;
        line("#pragma unroll");
        line("for (int p_c = 0; p_c < " + slots + "; ++p_c) {");
        ++indent_;
        if (width == 1) {
          line("if (p_c < " + mine + ") {");
          ++indent_;
          line("const int64_t " + k + " = " + slot_iteration + ";");
          scopes_.emplace_back();
          line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
               begin + " + " + k + " * " + step + ");");
          scopes_.back().insert(v.get());
          line(name + "[p_c] = " + memory_load(row->load) + ";");
          scopes_.pop_back();
          --indent_;
          line("}");
        } else {
          const bool vector_load = std::find(group.loads.begin(), group.loads.end(), row->load) != group.loads.end();
          whole_then_partial("p_c < " + whole_mine, "p_c < " + mine, [&](bool partial) {
            const std::string k0 = temp("k0"), n = partial ? tail : w;
            line("const int64_t " + k0 + " = " + slot_iteration + ";");
            std::string lanes;
            if (vector_load) {
              lanes = temp("lanes");
              const std::string t = ctype(row->load->array->type.dtype);
              at_iteration(k0, [&] {
                line("const " + lanes_type(row->load->array->type.dtype) + " " + lanes + " = plait::load_lanes<" + t +
                     ", " + w + ">(" + address(row->load->array, row->load->indices) + ", " + step + ", " +
                     vector_access(row->load, partial) + ", " + n + ");");
              });
            }
            emit_group_lanes(w, partial, tail, [&] {
              if (vector_load) {
                line(name + "[p_c * " + w + " + p_u] = " + lanes + ".v[p_u];");
                return;
              }
              line("const int64_t " + k + " = " + k0 + " + p_u;");
              scopes_.emplace_back();
              line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) +
                   ">(" + begin + " + " + k + " * " + step + ");");
              scopes_.back().insert(v.get());
              line(name + "[p_c * " + w + " + p_u] = " + memory_load(row->load) + ";");
              scopes_.pop_back();
            });
          });
        }
        --indent_;
        line("}");
        for (const ArrayInfo* a : row->names) cached_rows_[a].filling = false;
      }
      line("#pragma unroll");
      line("for (int p_c = 0; p_c < " + slots + "; ++p_c) {");
      ++indent_;
      if (width == 1) {
        line("if (p_c < " + mine + ") {");
        ++indent_;
        line("const int64_t " + k + " = " + slot_iteration + ";");
        iteration();
        --indent_;
        line("}");
      } else {
        whole_then_partial("p_c < " + whole_mine, "p_c < " + mine,
                           [&](bool partial) { group_body(slot_iteration, partial, true); });
      }
      --indent_;
      line("}");
      cached_rows_.clear();
      cached_values_.clear();
      row_slot_ = "p_c";
      first = "p_lane + (int64_t)" + slots + " * p_team";
      mute_remarks_ = true;
    }
    if (fits) {
      // Every iteration ran in the registers' slots.
    } else if (width == 1) {
      if (staged) {
        // The row's terms where the block staged them (its range inside the
        // block's), else the row directly.
        line("if (p_staged && p_lo <= " + begin + " && " + end + " <= p_hi) {");
        ++indent_;
        line("#pragma unroll 4");
        line("for (int64_t " + k + " = " + first + "; " + k + " < " + trip + "; " + k + " += p_team) {");
        for (size_t r = 0; r < loop->schedule.reductions.size(); ++r) {
          const std::string acc = var_name(loop->schedule.reductions[r].var);
          line("  " + acc + " = " + op_functor(ReduceOp::Add) + "(" + acc + ", " + staged_terms_[r] + "[" + begin +
               " - p_lo + " + k + "]);");
        }
        line("}");
        --indent_;
        line("} else {");
        ++indent_;
      }
      // Unrolled: each thread has several independent loads in flight
      // (after the registers' iterations, unrolling costs more registers
      // than it gains).
      line(registers ? "#pragma unroll 1" : "#pragma unroll 4");
      line("for (int64_t " + k + " = " + first + "; " + k + " < " + trip + "; " + k + " += p_team) {");
      ++indent_;
      iteration();
      --indent_;
      line("}");
      if (staged) {
        --indent_;
        line("}");
      }
    } else {
      // A group already has several loads in flight (unrolling the groups
      // of gesummv's rows made it slower: BENCHMARKS.md). The thread's
      // whole groups, then the partial one if it has it and the registers
      // did not take it.
      const std::string g = temp("g");
      line("#pragma unroll 1");
      line("for (int64_t " + g + " = " + first + "; " + g + " < " + full + "; " + g + " += p_team) {");
      ++indent_;
      group_body(g + " * " + w, false, false);
      --indent_;
      line("}");
      line("if (" + tail_mine + (registers ? " && " + full + " >= " + first : std::string()) + ") {");
      ++indent_;
      group_body(full + " * " + w, true, false);
      --indent_;
      line("}");
    }
    mute_remarks_ = muted;
    nan_checked_.clear();
    auto combine = [&] {
      for (size_t r = 0; r < loop->schedule.reductions.size(); ++r) {
        const Reduction& red = loop->schedule.reductions[r];
        const std::string t = ctype(red.var->type);
        const std::string partials =
            shared_array("p_part_" + std::string(dtype_suffix(red.var->type.kind)), t, block_size_ / 32);
        const std::string op = combine_functor(loop->body, red);
        line(var_name(red.var) + " = " + op + "(" + before[r] + ", plait::team_combine(" + var_name(red.var) + ", " +
             op + ", p_team, " + partials + "));");
      }
    };
    if (nan_seen.empty()) {
      combine();
    } else {
      const std::string flags =
          shared_array("p_part_" + std::string(dtype_suffix(ScalarKind::Int32)), "int32_t", block_size_ / 32);
      line("if (plait::team_combine(" + nan_seen + ", plait::op_or(), p_team, " + flags + ") != 0) {");
      ++indent_;
      // Every thread reads the elements of every iteration: other threads'
      // writes before the loop need a barrier first, and their writes after
      // it one at the end.
      line("plait::team_sync(p_team);");
      for (size_t r = 0; r < loop->schedule.reductions.size(); ++r)
        line(var_name(loop->schedule.reductions[r].var) + " = " + before[r] + ";");
      line("for (int64_t " + k + " = 0; " + k + " < " + trip + "; ++" + k + ") {");
      ++indent_;
      scopes_.emplace_back();
      line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
           begin + " + " + k + " * " + step + ");");
      scopes_.back().insert(v.get());
      ++loop_depth_;
      mute_remarks_ = true;
      emit_body_statements(loop->body);
      mute_remarks_ = muted;
      --loop_depth_;
      scopes_.pop_back();
      --indent_;
      line("}");
      line("plait::team_sync(p_team);");
      --indent_;
      line("} else {");
      ++indent_;
      combine();
      --indent_;
      line("}");
      remark(loop->loc, "loop over `" + v->name + "`: a max/min(x, m) reduction depends on the order when x is NaN: "
                        "the team runs the loop again in order when it sees one");
    }
    if (declared(v.get())) {
      line("if (" + trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin + " + (" + trip +
           " - 1) * " + step + ");");
    }
    --indent_;
    line("}");
  }

  // A spread loop whose threads run two iterations at once, k and k +
  // p_team (cuda::PairedLoop): each statement for both, the second under
  // `if (p_in)`; a fused loop runs once, its body for both in each
  // iteration, so that the loads of both are in flight together.
  void emit_paired_spread_loop(const For* loop, const cuda::PairedLoop& paired) {
    line_directive(loop->loc);
    line("{");
    ++indent_;
    const std::string begin = temp("begin"), end = temp("end"), step = temp("step"), trip = temp("trip"),
                      k = temp("k"), second = temp("in");
    line("const int64_t " + begin + " = " + expr(loop->begin) + ";");
    line("const int64_t " + end + " = " + expr(loop->end) + ";");
    line("const int64_t " + step + " = " + expr(loop->step) + ";");
    line("const int64_t " + trip + " = plait::trip_count(" + begin + ", " + end + ", " + step + ");");
    std::array<VarMap<std::string>, 2> copies;
    for (size_t u = 0; u < 2; ++u)
      for (const Var& v : paired.copies) copies[u][v.get()] = unique(var_name(v) + "_u" + std::to_string(u));
    // Emits `fn` with the names of iteration u's copies in place.
    auto in_iteration = [&](size_t u, const std::function<void()>& fn) {
      VarMap<std::string> saved;
      for (const Var& v : paired.copies) {
        saved[v.get()] = var_name(v);
        var_names_[v.get()] = copies[u][v.get()];
      }
      const bool muted = mute_remarks_;
      mute_remarks_ = muted || u == 1;
      fn();
      mute_remarks_ = muted;
      for (const auto& [v, name] : saved) var_names_[v] = name;
    };
    auto both = [&](const std::function<void()>& fn) {
      in_iteration(0, fn);
      line("if (" + second + ") {");
      ++indent_;
      in_iteration(1, fn);
      --indent_;
      line("}");
    };
    line("for (int64_t " + k + " = p_lane; " + k + " < " + trip + "; " + k + " += 2 * (int64_t)p_team) {");
    ++indent_;
    scopes_.emplace_back();
    line("const bool " + second + " = " + k + " + p_team < " + trip + ";");
    const Var& v = loop->var;
    for (size_t u = 0; u < 2; ++u) {
      in_iteration(u, [&] {
        line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
             begin + " + (" + k + (u ? " + p_team" : "") + ") * " + step + ");");
        for (const Var& c : paired.copies)
          if (c != v) line("[[maybe_unused]] " + ctype(c->type) + " " + var_name(c) + "{};");
      });
    }
    // Declarations below the top level of the body shadow these copies in their own scope.
    for (const Var& c : paired.copies) scopes_.back().insert(c.get());
    ++loop_depth_;
    for (size_t s = 0; s < paired.stmts.size(); ++s) {
      const Stmt& st = paired.stmts[s];
      if (const Declare* d = st->as<Declare>();
          d && std::find(paired.copies.begin(), paired.copies.end(), d->var) != paired.copies.end())
        continue;
      if (st->kind == NodeKind::Declare) {
        emit(st);
      } else if (paired.fused[s]) {
        const For* inner = st->as<For>();
        emit_serial_for(inner, [&] { both([&] { emit_body_statements(inner->body); }); });
      } else {
        both([&] { emit(st); });
      }
    }
    --loop_depth_;
    scopes_.pop_back();
    --indent_;
    line("}");
    if (declared(v.get())) {
      line("if (" + trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin + " + (" + trip +
           " - 1) * " + step + ");");
    }
    --indent_;
    line("}");
  }

  // The worker body of a team-mapped parallel loop, statement by statement
  // (worker_plan.h). The barrier rule: a team_sync goes before a statement
  // exactly when it accesses an array that an earlier statement of the same
  // iteration wrote, or writes one that an earlier statement read, in
  // another thread of the team (both by lane 0, or both in spread loops over
  // the same iteration space at the same index, is the same thread). Team
  // reductions and broadcasts end with a barrier, which resets the rule.
  // Inside a loop that all threads run in step, the accesses of its later
  // iterations count as earlier ones too, with spread loops whose bounds or
  // indices change between iterations taken as other threads.
  void emit_team_body(const WorkerPlan& plan, const Stmt& body) {
    ScalarCollector written;
    written.visit(body);
    // Groups of consecutive iterations when some spread loop has accesses
    // that a group makes at once.
    group_width_ = staged_loop_ ? 1 : cuda::group_width(plan);
    // Rows and values kept in registers between the spread loops, by loop.
    const std::vector<cuda::CachedRow> rows = cuda::plan_cached_rows(plan, written.written);
    const int slot_count = cuda::row_cache_slots(group_width_, launch_.row_groups);
    const std::vector<cuda::CachedValue> values = cuda::plan_cached_values(plan, rows, written.written, slot_count);
    RowsOfLoop rows_of_loop;
    const std::string slots = std::to_string(slot_count);
    // The registers start each worker at zero: a slot that one loop fills
    // under a test and a later one reads under the same test would
    // otherwise hold the previous worker's value as far as the compiler
    // can tell, and stay live around the loop over workers (the loop
    // softmax took 79 registers per thread instead of 64).
    for (const cuda::CachedRow& row : rows) {
      const std::string registers = temp("row");
      line(ctype(row.array->type.dtype) + " " + registers + "[" + slots + "]{};");
      std::string lines;
      for (size_t k : row.loops) {
        rows_of_loop[k].rows.emplace_back(&row, registers);
        lines += (lines.empty() ? "" : ", ") + std::to_string(plan.stmts[k]->loc.line);
      }
      remark(plan.stmts[row.loops.front()]->loc,
             "`" + row.array->name + "` is kept in registers between the loops at lines " + lines +
                 " (each thread's first " + slots + " elements): " +
                 (row.registers_only ? "they never go to memory"
                                     : "the first loop reads them from memory, the others from registers"));
    }
    for (const cuda::CachedValue& value : values) {
      const std::string registers = temp("value");
      line(ctype(value.first->type) + " " + registers + "[" + slots + "]{};");
      rows_of_loop[value.first_loop].values.push_back({value.first, RegisterValue{registers, true, value.first}});
      std::string lines;
      for (const auto& [k, node] : value.reuses) {
        rows_of_loop[k].values.push_back({node, RegisterValue{registers, false, value.first}});
        lines += (lines.empty() ? "" : ", ") + std::to_string(plan.stmts[k]->loc.line);
      }
      // (A non-owning Expr of the node, for the printer.)
      remark(plan.stmts[value.first_loop]->loc,
             "`" + to_string(Expr(Expr(), value.first)) + "` is computed once per element at line " +
                 std::to_string(plan.stmts[value.first_loop]->loc.line) + " and kept in registers (each thread's "
                 "first " + slots + " elements) for the loops at lines " + lines + ", which compute it again");
    }
    filled_values_.clear();
    std::vector<ArrayAccess> pending;
    emit_team_statements(plan, written.written, pending, &rows_of_loop);
    group_width_ = 1;
  }

  // `rows_of_loop`: the rows and values kept in registers, by statement of
  // the worker body (the top level only).
  using RowsOfLoop = std::map<size_t, LoopRegisters>;
  void emit_team_statements(const WorkerPlan& plan, const VarSet& written, std::vector<ArrayAccess>& pending,
                            const RowsOfLoop* rows_of_loop = nullptr) {
    for (size_t k = 0; k < plan.stmts.size(); ++k) {
      const Stmt& s = plan.stmts[k];
      const Placement placement = plan.placement[k];
      if (placement == Placement::Nested) {
        emit_team_nested(s, plan.nested[k], written, pending);
        continue;
      }
      std::vector<ArrayAccess> accesses = cuda::array_accesses(s, placement, written);
      team_barrier_before(s, accesses, pending);
      switch (placement) {
        case Placement::Nested: break;
        case Placement::Spread: {
          const For* f = s->as<For>();
          LoopRegisters registers;
          if (auto r = rows_of_loop ? rows_of_loop->find(k) : RowsOfLoop::const_iterator{};
              rows_of_loop && r != rows_of_loop->end()) {
            registers.rows = r->second.rows;
            // Values are read only where the earlier loop did fill their registers.
            for (const auto& entry : r->second.values)
              if (entry.second.filling || filled_values_.count(entry.second.source)) registers.values.push_back(entry);
          }
          emit_spread_loop(f, k, registers.rows.empty() ? nullptr : &registers);
          if (!f->schedule.reductions.empty()) pending.clear();
          else pending.insert(pending.end(), accesses.begin(), accesses.end());
          break;
        }
        case Placement::AllThreads:
          emit(s);
          pending.insert(pending.end(), accesses.begin(), accesses.end());
          break;
        case Placement::FirstThread: {
          // Scalars it assigns that live on after it go to the other threads.
          ScalarCollector assigns;
          assigns.visit(s);
          std::vector<Var> broadcast;
          for (const Var& v : assigns.used)
            if (assigns.written.count(v.get()) && declared(v.get())) broadcast.push_back(v);
          line("if (p_lane == 0) {");
          ++indent_;
          scopes_.emplace_back();
          emit(s);
          scopes_.pop_back();
          std::vector<std::string> slots;
          for (const Var& v : broadcast) {
            slots.push_back(
                shared_array("p_bcast_" + var_name(v).substr(2), ctype(v->type), block_size_ / kSmallTeam));
            line("if (p_team > 1) " + slots.back() + "[p_slot] = " + var_name(v) + ";");
          }
          --indent_;
          line("}");
          remark(s->loc, "line " + std::to_string(s->loc.line) + " writes array elements: it runs in the first "
                         "thread of the team" + (broadcast.empty() ? "" : ", and the scalars it assigns are broadcast "
                                                                           "through shared memory"));
          if (broadcast.empty()) {
            pending.insert(pending.end(), accesses.begin(), accesses.end());
            break;
          }
          line("if (p_team > 1) {");
          line("  plait::team_sync(p_team);");
          for (size_t b = 0; b < broadcast.size(); ++b)
            line("  " + var_name(broadcast[b]) + " = " + slots[b] + "[p_slot];");
          line("  plait::team_sync(p_team);");
          line("}");
          pending.clear();
          break;
        }
      }
    }
  }

  void team_barrier_before(const Stmt& s, const std::vector<ArrayAccess>& accesses, std::vector<ArrayAccess>& pending) {
    std::string array_name;
    if (!cuda::needs_barrier(pending, accesses, &array_name)) return;
    line("plait::team_sync(p_team);  // `" + array_name + "` is written by one thread and accessed by another");
    remark(s->loc, "barrier before line " + std::to_string(s->loc.line) + ": `" + array_name +
                       "` is written by one thread of the team and accessed by another");
    pending.clear();
  }

  // The array accesses of a placed statement list (see emit_team_body).
  static std::vector<ArrayAccess> team_accesses(const WorkerPlan& plan, const VarSet& written, const VarSet* changing) {
    std::vector<ArrayAccess> out;
    for (size_t k = 0; k < plan.stmts.size(); ++k) {
      std::vector<ArrayAccess> more;
      if (plan.placement[k] == Placement::Nested) {
        more = cuda::control_accesses(plan.stmts[k]);
        for (const WorkerPlan& sub : plan.nested[k]) {
          std::vector<ArrayAccess> inner = team_accesses(sub, written, changing);
          more.insert(more.end(), inner.begin(), inner.end());
        }
      } else {
        more = cuda::array_accesses(plan.stmts[k], plan.placement[k], written, changing);
      }
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }

  // An `if` or a loop that every thread of the team runs in step, its
  // statements placed by their own plans.
  void emit_team_nested(const Stmt& s, const std::vector<WorkerPlan>& subs, const VarSet& written,
                        std::vector<ArrayAccess>& pending) {
    team_barrier_before(s, cuda::control_accesses(s), pending);
    line_directive(s->loc);
    if (const If* i = s->as<If>()) {
      std::vector<ArrayAccess> else_pending = pending;
      line("if (" + expr(i->cond) + ") {");
      ++indent_;
      scopes_.emplace_back();
      emit_team_statements(subs[0], written, pending);
      scopes_.pop_back();
      --indent_;
      if (!subs[1].stmts.empty()) {
        line("} else {");
        ++indent_;
        scopes_.emplace_back();
        emit_team_statements(subs[1], written, else_pending);
        scopes_.pop_back();
        --indent_;
      }
      line("}");
      pending.insert(pending.end(), else_pending.begin(), else_pending.end());
      return;
    }
    const For* f = s->as<For>();
    ScalarCollector changes;
    changes.visit(s);
    const std::vector<ArrayAccess> carried = team_accesses(subs[0], written, &changes.written);
    pending.insert(pending.end(), carried.begin(), carried.end());
    emit_serial_for(f, [&] {
      // The steps of a serial loop on one block's team: the whole launch
      // runs each step in step, so it tests the record once per step and
      // leaves together (no thread waits at a barrier for one that left).
      if (f == device_time_loop_ && analysis::raises(f->body).any())
        line("if (plait::block_stopped(p_err)) return;  // an error stops the call");
      emit_team_statements(subs[0], written, pending);
    });
    pending.insert(pending.end(), carried.begin(), carried.end());
  }

  // Whether the host can evaluate an inner loop bound before the launch:
  // host scalars and extents of arrays bound outside the worker (not its
  // `local` ones), nothing that can fail.
  bool host_evaluable(const Expr& e, const VarSet& worker, const std::vector<ArrayVar>& local) {
    ScalarCollector vars;
    vars.visit(e);
    for (const Var& v : vars.used)
      if (worker.count(v.get()) || !declared(v.get())) return false;
    ArrayCollector arrays;
    arrays.visit(e);
    for (const ArrayVar& a : arrays.used)
      if (std::find(local.begin(), local.end(), a) != local.end()) return false;
    StmtFacts facts;
    facts.visit(e);
    HasErrorSites errors;
    errors.visit(e);
    return !facts.touches_elements && !errors.found;
  }

  // A level of a (collapsed) parallel loop nest, as the host computes it.
  struct NestLevel {
    const For* loop;
    std::string begin, step, trip, k;
  };

  // An array allocated inside a parallel loop: it lives in the worker's
  // slice of one buffer, at byte offset `offset`, with room for `capacity`
  // elements (both kernel parameters).
  struct Temporary {
    AllocationSite site;  // its guards: the branch conditions the host evaluates
    std::string offset, capacity;
  };

  // The temporaries of a worker body, and the scalar definitions of the body
  // the host repeats to size them (the broadcast flags of array expressions,
  // say): assignments at the top of the body, before the first statement
  // that allocates, of integer or bool values of the loop variables, host
  // scalars and array shapes, to scalars assigned nowhere else in the body.
  struct TemporaryPlan {
    std::vector<Temporary> temporaries;
    std::vector<const Assign*> definitions;
    VarSet varying;                    // the loop variables and the definitions that depend on them
    bool varies = false;               // a size or a guard depends on them
  };

  // Checks the temporaries: each shape is computable on the host before the
  // launch from the nest's loop variables, host scalars, array shapes and
  // those definitions, and one allocated inside a loop of the body is not
  // bound to another name (the next allocation reuses its memory). Branch
  // conditions the host cannot evaluate, or only with floating point (which
  // may round differently on the GPU), count as taken.
  TemporaryPlan plan_temporaries(const Stmt& body, const Captures& cap, const VarSet& nest_vars) {
    TemporaryPlan plan;
    AllocationSites allocations;
    allocations.visit(body);
    if (allocations.sites.empty()) return plan;
    ScalarCollector written;
    written.visit(body);
    VarSet defined, varying = nest_vars;
    auto evaluable = [&](const Expr& e) {
      ScalarCollector vars;
      vars.visit(e);
      for (const Var& v : vars.used)
        if (!nest_vars.count(v.get()) && !defined.count(v.get()) &&
            (written.written.count(v.get()) || !declared(v.get())))
          return false;
      ArrayCollector arrays;
      arrays.visit(e);
      for (const ArrayVar& a : arrays.used)
        if (std::find(cap.local_arrays.begin(), cap.local_arrays.end(), a) != cap.local_arrays.end()) return false;
      StmtFacts facts;
      facts.visit(e);
      HasErrorSites errors;
      errors.visit(e);
      return !facts.touches_elements && !errors.found;
    };
    auto exact = [&](const Expr& e) {
      IntegralOnly integral;
      integral.visit(e);
      return integral.ok && evaluable(e);
    };
    auto varies = [&](const Expr& e) {
      UsesVars uses(varying);
      uses.visit(e);
      return uses.found;
    };
    // Definitions: count each scalar's assignments in the body first.
    VarMap<int> assignments;
    {
      class Assignments : public IRVisitor {
       public:
        explicit Assignments(VarMap<int>& c) : counts(c) {}
        VarMap<int>& counts;
        using IRVisitor::visit;

       protected:
        void visit(const Assign* n) override {
          ++counts[n->var.get()];
          IRVisitor::visit(n);
        }
      } count(assignments);
      count.visit(body);
    }
    const Block* block = body->as<Block>();
    for (const Stmt& st : block ? block->stmts : std::vector<Stmt>{body}) {
      StmtFacts facts;
      facts.visit(st);
      if (facts.binds_arrays) break;
      const Assign* a = st->as<Assign>();
      if (!a || assignments[a->var.get()] != 1 || a->var->type.is_float() || !exact(a->value)) continue;
      if (varies(a->value)) varying.insert(a->var.get());
      defined.insert(a->var.get());
      plan.definitions.push_back(a);
    }
    for (const AllocationSite& site : allocations.sites) {
      const ArrayVar& a = site.alloc->array;
      const SourceLoc& loc = site.alloc->loc;
      // The lowering refuses an array bound in a parallel loop and used
      // outside it, so each is declared in the body.
      if (std::find(cap.local_arrays.begin(), cap.local_arrays.end(), a) == cap.local_arrays.end())
        PLAIT_INTERNAL_ERROR("`" + a->name + "` is allocated in a parallel loop but declared outside it");
      if (site.in_loop && allocations.bound_from.count(a.get())) {
        throw CompileError(ErrorKind::Unsupported,
                           "`" + a->name + "` is allocated in a loop inside a parallel loop and bound to another "
                           "name; on the CUDA target each allocation there reuses the memory of the previous one",
                           fn_.source, loc);
      }
      Temporary t{site, temp("toff"), temp("tcap")};
      for (const Expr& e : site.alloc->shape) {
        if (!evaluable(e)) {
          throw CompileError(ErrorKind::Unsupported,
                             "the shape of `" + a->name + "`, allocated inside a parallel loop, must be computable "
                             "before the launch on the CUDA target (from the parallel loop's variables, scalars "
                             "set before the loop and array shapes)",
                             fn_.source, loc);
        }
        plan.varies = plan.varies || varies(e);
      }
      t.site.guards.clear();
      for (const auto& g : site.guards) {
        if (!exact(g.first)) continue;
        t.site.guards.push_back(g);
        plan.varies = plan.varies || varies(g.first);
      }
      plan.temporaries.push_back(std::move(t));
    }
    plan.varying = varying;
    return plan;
  }

  // The host condition under which every temporary of a team's worker
  // stays in registers (a row kept only in registers whose loops all have
  // at most cuda::row_cache_slots iterations per thread), or "" when the host
  // cannot tell.
  // `rows`: the worker's rows kept in registers, `written`: the scalars its
  // body assigns.
  std::string temporaries_in_registers(const WorkerPlan& plan, const std::vector<cuda::CachedRow>& rows,
                                       const VarSet& nest_vars, const VarSet& written,
                                       const std::vector<ArrayVar>& local, const std::vector<Temporary>& temporaries,
                                       const std::string& team) {
    std::vector<const cuda::CachedRow*> kept;
    for (const Temporary& t : temporaries) {
      const cuda::CachedRow* row = nullptr;
      for (const cuda::CachedRow& r : rows)
        if (r.registers_only && r.names.count(t.site.alloc->array.get())) row = &r;
      if (!row) return "";
      kept.push_back(row);
    }
    return rows_in_registers_test(plan, kept, nest_vars, written, local, team, false);
  }

  // The host's test, before the launch, that every loop of `rows` runs at
  // most the registers' iterations per thread of a team of `team` (and,
  // with `whole_groups`, a multiple of the group width), or "" when a bound
  // depends on the worker. `written`: the scalars the worker body assigns.
  std::string rows_in_registers_test(const WorkerPlan& plan, const std::vector<const cuda::CachedRow*>& rows,
                                     const VarSet& nest_vars, const VarSet& written, const std::vector<ArrayVar>& local,
                                     const std::string& team, bool whole_groups) {
    VarSet worker = nest_vars;
    worker.insert(written.begin(), written.end());
    const int width = cuda::group_width(plan);
    std::string cond;
    std::set<std::string> tests;
    for (const cuda::CachedRow* row : rows) {
      for (const auto& bounds : row->bounds) {
        for (const Expr& e : bounds)
          if (!host_evaluable(e, worker, local)) return "";
        const std::string trip =
            "plait::trip_count(" + expr(bounds[0]) + ", " + expr(bounds[1]) + ", " + expr(bounds[2]) + ")";
        std::vector<std::string> row_tests = {
            trip + " <= int64_t(" + std::to_string(cuda::row_cache_slots(width, launch_.row_groups)) + ") * " + team};
        if (whole_groups && width > 1) row_tests.push_back(trip + " % " + std::to_string(width) + " == 0");
        for (const std::string& test : row_tests)
          if (tests.insert(test).second) cond += (cond.empty() ? "" : " && ") + test;
      }
    }
    return cond;
  }

  // The host's test for a team kernel's version whose rows fit in the
  // registers (rows_fit_), or "" when it has none: its spread loops keep
  // rows in registers and their bounds are known before the launch
  // (arguments as temporaries_in_registers's).
  std::string rows_fit_test(const WorkerPlan& plan, const std::vector<cuda::CachedRow>& rows, const VarSet& nest_vars,
                            const VarSet& written, const std::vector<ArrayVar>& local, const std::string& team) {
    if (rows.empty()) return "";
    std::vector<const cuda::CachedRow*> all;
    for (const cuda::CachedRow& r : rows) all.push_back(&r);
    return rows_in_registers_test(plan, all, nest_vars, written, local, team, true);
  }

  // Host code before the launch of a kernel with temporaries: the largest
  // size of each over the workers (all of them when it varies, evaluating
  // the branch conditions around it), the slice of a worker (each
  // temporary 16-byte aligned), and the buffer for the workers in flight;
  // returns the grid, cut so that the buffer stays within its budget.
  std::string emit_temporaries_buffer(const TemporaryPlan& plan, const std::vector<NestLevel>& levels,
                                      const std::string& total, const std::string& grid,
                                      const std::string& workers_per_block, const std::string& buffer,
                                      const std::string& slice, const std::string& in_registers) {
    const std::vector<Temporary>& temporaries = plan.temporaries;
    const bool varies = plan.varies;
    std::vector<std::string> largest;
    for (size_t k = 0; k < temporaries.size(); ++k) {
      largest.push_back(temp("tmax"));
      line("uint64_t " + largest.back() + " = 0;");
    }
    const std::string w = temp("w");
    line("for (int64_t " + w + " = 0; " + w + " < " + (varies ? total : std::string("1")) + "; ++" + w + ") {");
    ++indent_;
    if (varies) {
      // The worker's loop variables, as the kernel derives them.
      const std::string rest = temp("rest");
      line("int64_t " + rest + " = " + w + ";");
      for (size_t d = levels.size(); d-- > 0;) {
        const NestLevel& lv = levels[d];
        std::string kd = rest;
        if (d > 0) {
          kd = temp("wk");
          line("const int64_t " + kd + " = " + rest + " % " + lv.trip + ";");
          line(rest + " /= " + lv.trip + ";");
        }
        const Var& v = lv.loop->var;
        line("[[maybe_unused]] const " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) +
             ">(" + lv.begin + " + " + kd + " * " + lv.step + ");");
      }
    } else {
      line("(void)" + w + ";");
    }
    for (const Assign* d : plan.definitions) {
      if (!varies && plan.varying.count(d->var.get())) continue;  // the loop variables are not declared
      line("[[maybe_unused]] const " + ctype(d->var->type) + " " + var_name(d->var) + " = " + expr(d->value) + ";");
    }
    for (size_t k = 0; k < temporaries.size(); ++k) {
      const Temporary& t = temporaries[k];
      std::string taken;
      for (const auto& [cond, side] : t.site.guards)
        taken += (taken.empty() ? "" : " && ") + std::string(side ? "(" : "!(") + expr(cond) + ")";
      line("if (" + (taken.empty() ? std::string("true") : taken) + ") {");
      ++indent_;
      const std::string count = temp("count");
      line("uint64_t " + count + " = 1;");
      for (const Expr& e : t.site.alloc->shape) {
        const std::string n = temp("n");
        line("const int64_t " + n + " = " + index_value(e) + ";");
        // Negative extents count as 0 here (the kernel reports them);
        // an overflowing size saturates and the allocation fails.
        line("if (" + n + " <= 0) " + count + " = 0; else if (__builtin_mul_overflow(" + count + ", uint64_t(" + n +
             "), &" + count + ")) " + count + " = UINT64_MAX;");
      }
      line("if (" + count + " > " + largest[k] + ") " + largest[k] + " = " + count + ";");
      --indent_;
      line("}");
    }
    --indent_;
    line("}");
    line("int64_t " + slice + " = 0;");
    // Temporaries whose elements all stay in registers need no memory: the
    // workers' slices are empty (no buffer) and every offset is 0.
    const std::string held = in_registers.empty() ? "" : temp("in_registers");
    if (!held.empty()) line("const bool " + held + " = " + in_registers + ";");
    for (size_t k = 0; k < temporaries.size(); ++k) {
      const Temporary& t = temporaries[k];
      const std::string bytes = std::to_string(element_bytes(t.site.alloc->array->type.dtype));
      line("const int64_t " + t.offset + " = " + (held.empty() ? slice : held + " ? 0 : " + slice) + ";");
      line("const int64_t " + t.capacity + " = static_cast<int64_t>(" + largest[k] + ");");
      line("if (" + largest[k] + " > (uint64_t(1) << 44) / " + bytes + ") {");
      line("  plait::raise_error(ctx, PLAIT_MEMORY_ERROR, " + loc_args(t.site.alloc->loc) +
           ", \"array is too big; the size overflows\");");
      line("  return ctx->error_kind;");
      line("}");
      line(slice + " += static_cast<int64_t>((" + largest[k] + " * " + bytes + " + 15) / 16 * 16);");
    }
    if (!held.empty()) line("if (" + held + ") " + slice + " = 0;");
    const std::string blocks = temp("grid");
    line("const uint32_t " + blocks + " = plait_cuda::grid_for_temporaries(" + grid + ", " + workers_per_block + ", " +
         slice + ");");
    line("unsigned char* " + buffer + " = nullptr;");
    line("if (" + slice + " > 0) {");
    line("  " + buffer + " = plait_cuda::scratch_for(ctx, p_temporaries, uint64_t(" + blocks + ") * (" +
         workers_per_block + ") * uint64_t(" + slice + "));");
    line("  if (" + buffer + " == nullptr) return ctx->error_kind;");
    line("}");
    uses_temporaries_ = true;
    return blocks;
  }

  // An allocation in a kernel: the array takes its place in the worker's
  // slice (Temporary); a fill is done by the worker's thread, or spread
  // over its team.
  void emit_device_allocate(const Allocate* al) {
    auto it = temp_offsets_.find(al);
    if (it == temp_offsets_.end()) PLAIT_INTERNAL_ERROR("an allocation in device code outside a parallel loop");
    const ArrayVar& a = al->array;
    const std::string t = ctype(a->type.dtype);
    const int ndim = a->type.ndim;
    line("{");
    ++indent_;
    std::vector<std::string> n;
    std::string negative;
    for (int d = 0; d < ndim; ++d) {
      n.push_back(temp("n"));
      line("const int64_t " + n.back() + " = " + index_value(al->shape[static_cast<size_t>(d)]) + ";");
      negative += (d ? " || " : "") + n.back() + " < 0";
    }
    line("if (" + negative + ") plait::raise_error(" + sink() + ", plait::kind_value_error, " + loc_args(al->loc) +
         ", plait::msg_negative_dimensions);");
    // The host sized the slice from the same shape; a shape that came out
    // larger here (which would take another worker's memory) is an error
    // and the array stays empty.
    const std::string shape = temp("shape"), fits = temp("fits");
    line("const int64_t " + shape + "[] = {" + join(n, ", ") + "};");
    line("const bool " + fits + " = plait::temporary_fits(" + shape + ", " + std::to_string(ndim) + ", " +
         it->second.second + ");");
    line("if (!" + fits + ") plait::raise_error(" + sink() + ", plait::kind_value_error, " + loc_args(al->loc) +
         ", plait::msg_temporary_larger_than_sized);");
    line(data(a) + " = reinterpret_cast<" + t + "*>(p_mine + " + it->second.first + ");");
    std::string step = "1";
    for (int k = 0; k < ndim; ++k) {
      const int d = a->type.layout == Layout::F ? k : ndim - 1 - k;
      const std::string& nd = n[static_cast<size_t>(d)];
      line(extent(a, d) + " = " + nd + " < 0 || !" + fits + " ? 0 : " + nd + ";");
      if (!unit_stride(a->type, d)) line(stride(a, d) + " = " + step + ";");
      step = (step == "1" ? "" : step + " * ") + extent(a, d);
    }
    if (al->fill != FillKind::Uninitialized) {
      const std::string value = al->fill == FillKind::Zeros  ? t + "(0)"
                                : al->fill == FillKind::Ones ? t + "(1)"
                                                             : "static_cast<" + t + ">(" + expr(al->fill_value) + ")";
      const std::string q = temp("q");
      if (team_worker_) {
        line("for (int64_t " + q + " = p_lane; " + q + " < " + step + "; " + q + " += p_team) " + data(a) + "[" + q +
             "] = " + value + ";");
      } else {
        line("for (int64_t " + q + " = 0; " + q + " < " + step + "; ++" + q + ") " + data(a) + "[" + q +
             "] = " + value + ";");
      }
    }
    --indent_;
    line("}");
    remark(al->loc, "`" + a->name + "` (line " + std::to_string(al->loc.line) + ") is allocated inside a parallel "
                    "loop: it lives in GPU memory, in the worker's own slice of one buffer that the host allocates "
                    "before the launch, sized for the largest shape over the iterations" +
                    (team_worker_ ? "; the threads of a team share their slice" : ""));
  }

  // A loop bound that is a constant, written as one in a kernel's indices
  // (the compiler folds `1 + k * 1`); else the kernel parameter `param`.
  std::string kernel_bound(const Expr& bound, const std::string& param) {
    return bound->as<IntImm>() ? expr(bound) : param;
  }

  // The loop over workers of a team kernel whose row loop `staged` has
  // consecutive ranges of rows (cuda::staged_rows_loop; docs/cuda.md, "CSR
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
  void emit_staged_rows_worker_loop(const WorkerPlan& plan, const NestLevel& level, const Stmt& body,
                                    const For* staged, const std::function<void()>& emit_loop_variables) {
    const Var& worker_var = level.loop->var;
    const Var& v = staged->var;
    const std::vector<Reduction>& reductions = staged->schedule.reductions;
    shared_array("p_bounds", "int64_t", block_size_ / kSmallTeam + 1);  // the rows of a pass, and one end
    staged_terms_.clear();
    for (size_t r = 0; r < reductions.size(); ++r)
      staged_terms_.push_back(
          shared_array("p_terms" + std::to_string(r), ctype(reductions[r].var->type), kStagedElements));
    line("const int p_rows = (int)(blockDim.x >> p_team_shift);");
    // The back edge tests the record, one answer for the block (its threads
    // run the passes together): later passes do not start once the call has
    // failed.
    line(
        "for (int64_t p_base = (int64_t)blockIdx.x * p_rows; p_base < p_total; p_base = plait::block_stopped(p_err) ? "
        "p_total : p_base + (int64_t)gridDim.x * p_rows) {");
    ++indent_;
    line("const int p_count = (int)(p_total - p_base < p_rows ? p_total - p_base : p_rows);");
    line("__syncthreads();  // the previous pass's teams are done with the bounds and terms");
    line("for (int p_t = threadIdx.x; p_t <= p_count; p_t += blockDim.x) {");
    ++indent_;
    scopes_.emplace_back();
    line("[[maybe_unused]] " + ctype(worker_var->type) + " " + var_name(worker_var) + " = static_cast<" +
         ctype(worker_var->type) + ">(" + level.begin + " + (p_base + p_t) * " + level.step + ");");
    scopes_.back().insert(worker_var.get());
    line("p_bounds[p_t] = " + expr(staged->begin) + ";");
    scopes_.pop_back();
    --indent_;
    line("}");
    line("__syncthreads();");
    line("const int64_t p_lo = p_bounds[0], p_hi = p_bounds[p_count];");
    // (The difference in 64 unsigned bits: exact when p_lo <= p_hi.)
    line("const bool p_staged = p_lo <= p_hi && (uint64_t)p_hi - (uint64_t)p_lo <= " +
         std::to_string(kStagedElements) + "u;");
    line("if (p_staged) {");
    ++indent_;
    // Element p_lo + p_e, in 32 bits where the count fits.
    line("const int p_elements = (int)(p_hi - p_lo);");
    line("for (int p_e = threadIdx.x; p_e < p_elements; p_e += blockDim.x) {");
    ++indent_;
    scopes_.emplace_back();
    line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) +
         ">(p_lo + p_e);");
    scopes_.back().insert(v.get());
    std::vector<std::string> saved;
    for (const Reduction& r : reductions) {
      saved.push_back(var_name(r.var));
      const std::string term = temp("term");
      var_names_[r.var.get()] = term;
      line(ctype(r.var->type) + " " + term + " = " + reduction_identity(r.op, r.var->type.kind) + ";");
      scopes_.back().insert(r.var.get());
    }
    const bool muted = mute_remarks_;
    mute_remarks_ = true;  // the loop's body again
    ++loop_depth_;
    emit_body_statements(staged->body);
    --loop_depth_;
    mute_remarks_ = muted;
    for (size_t r = 0; r < reductions.size(); ++r) {
      line(staged_terms_[r] + "[p_e] = " + var_name(reductions[r].var) + ";");
      var_names_[reductions[r].var.get()] = saved[r];
    }
    scopes_.pop_back();
    --indent_;
    line("}");
    --indent_;
    line("}");
    line("__syncthreads();");
    line("const int64_t p_k = p_base + p_slot;");
    line("if (p_k < p_total) {");
    ++indent_;
    scopes_.emplace_back();
    emit_loop_variables();
    loop_depth_ = 1;  // the loop over passes
    staged_loop_ = staged;
    emit_team_body(plan, body);
    staged_loop_ = nullptr;
    loop_depth_ = 0;
    scopes_.pop_back();
    --indent_;
    line("}");
    --indent_;
    line("}");
  }

  // The worker loop of a straight-line one-thread worker
  // (cuda::straight_line_worker) that runs `batch` iterations per thread
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
                                const cuda::ContiguousAccesses& lanes, bool rows) {
    const std::string width = std::to_string(batch);
    // The statements, nested blocks flattened (every copy of a scalar is
    // declared up front, so blocks need no scope of their own).
    std::vector<Stmt> stmts;
    std::vector<Stmt> pending = statements_of(body);
    for (size_t k = 0; k < pending.size(); ++k) {
      if (const Block* b = pending[k]->as<Block>()) {
        pending.insert(pending.begin() + static_cast<std::ptrdiff_t>(k) + 1, b->stmts.begin(), b->stmts.end());
        continue;
      }
      stmts.push_back(pending[k]);
    }
    // The copies of the iteration's own scalars: the loop variables and the
    // scalars the body declares or assigns.
    std::vector<Var> own;
    for (const NestLevel& lv : levels) own.push_back(lv.loop->var);
    for (const Stmt& st : stmts) {
      Var v;
      if (const Declare* d = st->as<Declare>()) v = d->var;
      if (const Assign* a = st->as<Assign>()) v = a->var;
      if (v && std::find(own.begin(), own.end(), v) == own.end()) own.push_back(v);
    }
    std::vector<VarMap<std::string>> copies(static_cast<size_t>(batch));
    for (int u = 0; u < batch; ++u)
      for (const Var& v : own) copies[static_cast<size_t>(u)][v.get()] = unique(var_name(v) + "_u" + std::to_string(u));
    // Emits `fn` with the names of iteration u's copies in place.
    auto in_iteration = [&](int u, const std::function<void()>& fn) {
      VarMap<std::string> saved;
      for (const Var& v : own) {
        saved[v.get()] = var_name(v);
        var_names_[v.get()] = copies[static_cast<size_t>(u)][v.get()];
      }
      fn();
      for (const auto& [v, name] : saved) var_names_[v] = name;
    };
    auto lanes_type = [&](ScalarKind k) { return "plait::lanes<" + ctype(k) + ", " + width + ">"; };
    auto indices_of = [&](const std::vector<Expr>& indices) {
      std::vector<std::string> idx;
      for (const Expr& i : indices) idx.push_back(index_value(i));
      return idx;
    };

    // Vector accesses: whether the launch allows them, decided once from the
    // addresses of the first iteration.
    const bool vector = levels.size() == 1 && (!lanes.loads.empty() || !lanes.stores.empty());
    if (vector) {
      const NestLevel& lv = levels[0];
      const Var& v = lv.loop->var;
      std::string aligned = "(" + lv.step + " == 1)";
      const std::string saved = var_name(v);
      var_names_[v.get()] = unique(saved + "_first");
      line("[[maybe_unused]] const " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
           lv.begin + ");");
      std::set<std::string> checked;
      auto check = [&](const ArrayVar& a, const std::vector<Expr>& indices) {
        const std::string test = "plait::lanes_aligned<" + ctype(a->type.dtype) + ", " + width + ">(" + data(a) +
                                 " + (" + offset(a, indices_of(indices)) + "))";
        if (checked.insert(test).second) aligned += " && " + test;
      };
      for (const Load* l : lanes.loads) check(l->array, l->indices);
      for (const Store* st : lanes.stores) check(st->array, st->indices);
      var_names_[v.get()] = saved;
      line("const bool p_vector = " + aligned + ";");
      line("const int64_t p_apart = p_vector ? 1 : " + std::to_string(block_size_) + ";");
    }
    const size_t n = levels.size();
    std::vector<std::string> digits(n);
    // The digits of the step between a thread's consecutive iterations (the
    // block) or, in the rows version, rows; and there the digits of the
    // thread's row (mutable, advanced by the step's with a carry).
    std::vector<std::string> row_digits, step_digits;
    const std::string inner_trip = levels.back().trip;
    if (rows) {
      if (n < 2) PLAIT_INTERNAL_ERROR("the rows version of a batched loop needs a collapsed nest");
      // The row's tiles as plait_cuda::row_tiles counts them on the host;
      // then 32-bit divisions, once per thread: a grid holds the row's tiles.
      const std::string tile = std::to_string(batch * block_size_);
      std::string outer_trips;
      for (size_t d = 0; d + 1 < n; ++d) outer_trips += (d ? " * " : "") + levels[d].trip;
      line("const int64_t p_tiles = (" + inner_trip + " + " + tile + " - 1) / " + tile + ";");
      line("if (p_total > 0 && p_tiles <= (int64_t)gridDim.x) {");
      ++indent_;
      line("const unsigned p_row_step = gridDim.x / (unsigned)p_tiles;");
      line("const unsigned p_row_first = blockIdx.x / (unsigned)p_tiles;");
      line("if (blockIdx.x < p_row_step * (unsigned)p_tiles) {");
      ++indent_;
      line("const int64_t p_rows = " + outer_trips + ";");
      line("const int64_t p_column = (int64_t)(blockIdx.x - p_row_first * (unsigned)p_tiles) * " + tile +
           " + threadIdx.x;");
      line("if (p_column < " + inner_trip + ") {");
      ++indent_;
      if (n > 2) {
        std::string declared;
        for (size_t d = 0; d + 1 < n; ++d) {
          row_digits.push_back(temp("at"));
          step_digits.push_back(temp("by"));
          declared += (d ? ", " : "") + row_digits.back() + " = 0, " + step_digits.back() + " = 0";
        }
        line("int64_t " + declared + ";");
        for (const auto& [value, out] : {std::pair{"p_row_first", &row_digits}, {"p_row_step", &step_digits}}) {
          line("{");
          line("  int64_t p_rest = " + std::string(value) + ";");
          for (size_t d = n - 1; d-- > 1;)
            line("  " + (*out)[d] + " = plait::split_digit(p_rest, " + levels[d].trip + ");");
          line("  " + (*out)[0] + " = p_rest;");
          line("}");
        }
      }
      // Back edges test the record: the thread's later rows do not start
      // once the call has failed (one load per row).
      line(
          "for (int64_t p_row = p_row_first; p_row < p_rows; p_row = plait::stopped(p_err) ? p_rows : p_row + "
          "p_row_step) {");
    } else {
      line("const int64_t p_stride = (int64_t)gridDim.x * blockDim.x * " + width + ";");
      const std::string strided_first = "(int64_t)blockIdx.x * blockDim.x * " + width + " + threadIdx.x";
      const std::string first =
          vector ? "p_vector ? ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * " + width + " : " + strided_first
                 : strided_first;
      if (n > 1 && batch > 1) {
        // The block's digits, once; every trip is positive where there is
        // an iteration.
        std::string declared;
        for (size_t d = 0; d < n; ++d) {
          step_digits.push_back(temp("by"));
          declared += (d ? ", " : "") + step_digits.back() + " = 0";
        }
        line("int64_t " + declared + ";");
        line("if (p_total > 0) {");
        ++indent_;
        line("int64_t p_rest = " + std::to_string(block_size_) + ";");
        for (size_t d = n; d-- > 1;) line(step_digits[d] + " = plait::split_digit(p_rest, " + levels[d].trip + ");");
        line(step_digits[0] + " = p_rest;");
        --indent_;
        line("}");
      }
      line("for (int64_t p_k0 = " + first +
           "; p_k0 < p_total; p_k0 = plait::stopped(p_err) ? p_total : p_k0 + "
           "p_stride) {");
    }
    ++indent_;
    scopes_.emplace_back();
    loop_depth_ = 1;
    auto at = [&](int u) {
      if (rows) return u == 0 ? std::string("p_column") : "(p_column + " + std::to_string(u * block_size_) + ")";
      if (u == 0) return std::string("p_k0");
      if (!vector) return "(p_k0 + " + std::to_string(u * block_size_) + ")";
      return "(p_k0 + " + std::to_string(u) + " * p_apart)";
    };
    const std::string last = rows ? inner_trip : "p_total";
    for (int u = 1; u < batch; ++u) line("const bool p_in" + std::to_string(u) + " = " + at(u) + " < " + last + ";");
    // A collapsed nest's indices (one digit per loop, in the trips' mixed
    // base): iteration 0's divided out of p_k0, each later one's advanced
    // from the one before by the digits of the distance between them, with
    // a carry, instead of a 64-bit division and remainder per loop and
    // iteration (which bounded the 2-D stencil's sweeps: docs/cuda.md). In
    // the rows version the outer digits are the row's and the innermost
    // digit is the thread's column.
    for (int u = 0; u < batch; ++u) {
      in_iteration(u, [&] {
        if (rows) {
          for (size_t d = 0; d + 1 < n; ++d) digits[d] = n > 2 ? row_digits[d] : "p_row";
          digits[n - 1] = at(u);
        } else if (n == 1) {
          digits[0] = at(u);
        } else if (u == 0) {
          const std::string rest = temp("rest");
          line("int64_t " + rest + " = p_k0;");
          for (size_t d = n; d-- > 1;) {
            digits[d] = temp("k");
            line("const int64_t " + digits[d] + " = plait::split_digit(" + rest + ", " + levels[d].trip + ");");
          }
          digits[0] = rest;
        } else {
          const std::string carry = temp("carry");
          line("bool " + carry + " = false;");
          for (size_t d = n; d-- > 0;) {
            const std::string digit = temp("k");
            const std::string sum = digits[d] + " + " + step_digits[d] + (d + 1 < n ? " + " + carry : "");
            if (d == 0) {
              line("const int64_t " + digit + " = " + sum + ";");
            } else {
              line("int64_t " + digit + " = " + sum + ";");
              line(carry + " = " + digit + " >= " + levels[d].trip + ";");
              line("if (" + carry + ") " + digit + " -= " + levels[d].trip + ";");
            }
            digits[d] = digit;
          }
        }
        for (size_t d = n; d-- > 0;) {
          const NestLevel& lv = levels[d];
          const Var& v = lv.loop->var;
          line("[[maybe_unused]] const " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) +
               ">(" + kernel_bound(lv.loop->begin, lv.begin) + " + " + digits[d] + " * " +
               kernel_bound(lv.loop->step, lv.step) + ");");
        }
        for (size_t o = n; o < own.size(); ++o)
          line("[[maybe_unused]] " + ctype(own[o]->type) + " " + var_name(own[o]) + "{};");
      });
    }

    // The statements; `whole`: a full batch of consecutive iterations whose
    // contiguous accesses are vector accesses (no guards).
    auto emit_statements = [&](bool whole) {
      auto guard = [&](int u) { return whole || u == 0 ? std::string() : "if (p_in" + std::to_string(u) + ") "; };
      for (const Stmt& st : stmts) {
        if (st->kind == NodeKind::Declare) continue;
        line_directive(st->loc);
        if (whole) {
          // The statement's vector loads, before its values (and after the
          // stores of the statements before it, even of a load node they
          // share).
          lane_loads_.clear();
          class Loads : public IRVisitor {
           public:
            std::vector<const Load*> found;
            using IRVisitor::visit;

           protected:
            void visit(const Load* n) override {
              found.push_back(n);
              IRVisitor::visit(n);
            }
          } loads;
          loads.visit(st);
          for (const Load* l : loads.found) {
            if (!lanes.has(l) || lane_loads_.count(l)) continue;
            const std::string name = temp("lanes");
            in_iteration(0, [&] {
              line("const " + lanes_type(l->array->type.dtype) + " " + name + " = *reinterpret_cast<const " +
                   lanes_type(l->array->type.dtype) + "*>(" + data(l->array) + " + (" +
                   offset(l->array, indices_of(l->indices)) + "));");
            });
            lane_loads_[l] = name;
          }
        }
        // After a statement that may raise, a thread whose batch raised
        // leaves the kernel before the batch stores anything more (nothing
        // after the loop waits for it: a batched worker has no reductions).
        const bool raises = analysis::raises(st).expressions;
        if (const Assign* a = st->as<Assign>()) {
          for (int u = 0; u < batch; ++u) {
            lane_ = u;
            in_iteration(u, [&] { line(guard(u) + var_name(a->var) + " = " + expr(a->value) + ";"); });
          }
          lane_ = -1;
          if (raises) line("if (plait::stopped(p_err)) return;");
          continue;
        }
        const Store* store = st->as<Store>();
        if (!store) PLAIT_INTERNAL_ERROR("a batched worker body holds more than scalar assignments and stores");
        const bool vector_store = whole && lanes.has(store);
        const std::string t = ctype(store->array->type.dtype);
        // A relaxation stores an element only when its bits change: the
        // thread's other iterations write other elements (the iterations of a
        // parallel loop are independent), so memory still holds what the
        // iteration loaded when it would store.
        const Load* relaxed = nullptr;
        if (!store->checked) {
          in_iteration(0, [&] {
            const std::string at = offset(store->array, indices_of(store->indices));
            relaxed = relaxation_load(
                store, [&](const Load* l) { return !l->checked && offset(l->array, indices_of(l->indices)) == at; });
          });
        }
        const bool old_in_lanes = relaxed && lane_loads_.count(relaxed);
        if (relaxed)
          remark(store->loc, "the update of `" + store->array->name +
                                 "` is a minimum or maximum with its old value: a thread stores an element only when "
                                 "it changed");
        std::vector<std::string> values, offsets, stored, olds;
        for (int u = 0; u < batch; ++u) {
          values.push_back(temp("value"));
          offsets.push_back(temp("at"));
          line(t + " " + values.back() + "{};");
          if (old_in_lanes) {
            olds.push_back(lane_loads_.at(relaxed) + ".v[" + std::to_string(u) + "]");
          } else if (relaxed) {
            olds.push_back(temp("old"));
            line(t + " " + olds.back() + "{};");
          }
          if (!vector_store || u == 0) line("int64_t " + offsets.back() + " = 0;");
          if (store->checked) {
            stored.push_back(temp("ok"));
            line("bool " + stored.back() + " = false;");
          } else {
            stored.push_back(whole || u == 0 ? "" : "p_in" + std::to_string(u));
          }
        }
        for (int u = 0; u < batch; ++u) {
          const size_t x = static_cast<size_t>(u);
          lane_ = u;
          in_iteration(u, [&] {
            line(guard(u) + "{");
            ++indent_;
            // The value first, then the indices, as in `a[i] = value`.
            if (relaxed && !old_in_lanes) {
              line(olds[x] + " = " + load(relaxed) + ";");
              relaxed_loads_[relaxed] = olds[x];
            }
            line(values[x] + " = " + expr(store->value) + ";");
            relaxed_loads_.clear();
            if (store->checked) {
              std::vector<std::string> names;
              std::string decls;
              const std::string cond = bound_checks(store->array, store->indices, store->loc, &names, &decls);
              line(decls);
              line(stored[x] + " = " + cond + ";");
              line(offsets[x] + " = " + offset(store->array, names) + ";");
            } else if (!vector_store || u == 0) {
              line(offsets[x] + " = " + offset(store->array, indices_of(store->indices)) + ";");
            }
            --indent_;
            line("}");
          });
        }
        lane_ = -1;
        if (raises) line("if (plait::stopped(p_err)) return;");
        auto changed = [&](size_t x) { return "plait::bits_differ(" + values[x] + ", " + olds[x] + ")"; };
        if (vector_store) {
          std::vector<std::string> any;
          for (size_t x = 0; relaxed && x < values.size(); ++x) any.push_back(changed(x));
          line((any.empty() ? "" : "if (" + join(any, " || ") + ") ") + "*reinterpret_cast<" +
               lanes_type(store->array->type.dtype) + "*>(" + data(store->array) + " + " + offsets[0] +
               ") = " + lanes_type(store->array->type.dtype) + "{{" + join(values, ", ") + "}};");
          continue;
        }
        for (int u = 0; u < batch; ++u) {
          const size_t x = static_cast<size_t>(u);
          std::vector<std::string> conditions;
          if (!stored[x].empty()) conditions.push_back(stored[x]);
          if (relaxed) conditions.push_back(changed(x));
          const std::string when = conditions.empty() ? "" : "if (" + join(conditions, " && ") + ") ";
          line(when + data(store->array) + "[" + offsets[x] + "] = " + values[x] + ";");
        }
      }
      lane_loads_.clear();
    };
    if (vector) {
      line("if (p_vector && p_in" + std::to_string(batch - 1) + ") {");
      ++indent_;
      emit_statements(true);
      --indent_;
      line("} else {");
      ++indent_;
      emit_statements(false);
      --indent_;
      line("}");
    } else {
      emit_statements(false);
    }
    if (rows && n > 2) {
      // The next row's outer digits (the body has no `continue`).
      const std::string carry = temp("carry");
      line("bool " + carry + " = false;");
      for (size_t d = n - 1; d-- > 0;) {
        line(row_digits[d] + " += " + step_digits[d] + (d + 2 < n ? " + " + carry : "") + ";");
        if (d == 0) continue;
        line(carry + " = " + row_digits[d] + " >= " + levels[d].trip + ";");
        line("if (" + carry + ") " + row_digits[d] + " -= " + levels[d].trip + ";");
      }
    }
    loop_depth_ = 0;
    scopes_.pop_back();
    --indent_;
    line("}");
    if (rows) {
      for (int close = 0; close < 3; ++close) {
        --indent_;
        line("}");
      }
    }
  }

  // The team that the sliced pragmas of a team worker's spread loops ask for
  // (docs/cuda.md, "Sizes from the pragmas"): the largest of single_block's
  // whole block, block(N)'s N threads and le(N)'s team for N iterations (the
  // host's rule for a trip count of N: at most 4 iterations, or groups, per
  // thread). 0 when no spread loop has one. `cap`: the kernel's largest team.
  struct PragmaTeam {
    int team = 0;
    bool whole_block = false;  // single_block: the wide version's team is its whole block too
    std::string asked_by;      // "single_block at line 12", for explain()
  };
  PragmaTeam pragma_team(const WorkerPlan& plan, int cap) const {
    PragmaTeam out;
    const int width = cuda::group_width(plan);
    for (const For* f : cuda::spread_loops(plan)) {
      const LoopSchedule& s = f->schedule;
      int team = 0;
      if (s.single_block) {
        team = block_size_;
      } else if (s.block_strip > 0) {
        team = s.block_strip;
        if ((team & (team - 1)) != 0 || team > block_size_)
          throw CompileError(ErrorKind::Pragma,
                             "block(" + std::to_string(team) +
                                 ") of a dimension spread over a team of threads sets "
                                 "the team's threads on CUDA: a power of two up to the block's " +
                                 std::to_string(block_size_),
                             fn_.source, s.pragma_loc);
      } else if (s.most_trips > 0) {
        const int64_t share = (s.most_trips + width - 1) / width;
        team = 32;
        while (team < cap && int64_t(team) * 4 < share) team *= 2;
      }
      if (team == 0) continue;
      // A block has 15 named barriers besides __syncthreads's, one per team
      // of more than a warp and less than the block (plait_cuda::team_for).
      if (team > 32 && team < block_size_ && block_size_ / team > 15) team *= 2;
      if (team > out.team) {
        out.team = team;
        out.asked_by = pragma_sizes(s) + " at line " + std::to_string(s.pragma_loc.line);
      }
      out.whole_block = out.whole_block || s.single_block;
    }
    out.whole_block = out.whole_block && out.team == block_size_;
    return out;
  }

  void emit_parallel_kernel(const For* loop) {
    const LoopSchedule& sc = loop->schedule;
    LeavesLoop leaves;
    leaves.visit(loop->body);
    if (leaves.found)
      PLAIT_INTERNAL_ERROR(std::string(loop_kind_name(sc.kind)) + " loop over `" + loop->var->name +
                           "` contains a break or return; the lowering must make it serial");
    const std::vector<const For*> nest = collapse_nest(loop);
    const For* innermost = nest.back();
    if (static_cast<int>(sc.reductions.size()) > kScratchSlots) {
      throw CompileError(ErrorKind::Unsupported, "too many reductions in one parallel loop for the CUDA target",
                         fn_.source, loop->loc);
    }
    // block(N) on a parallel dimension: the kernel's blocks have N threads
    // (docs/cuda.md, "Sizes from the pragmas"), the innermost such
    // dimension's N when several have one; the configured size comes back
    // when the kernel is emitted.
    struct RestoreBlockSize {
      int& size;
      int value;
      ~RestoreBlockSize() { size = value; }
    } const restore_block_size{block_size_, block_size_};
    const For* strip_level = nullptr;
    for (const For* f : nest)
      if (f->schedule.block_strip > 0) strip_level = f;
    if (strip_level) {
      const int n = strip_level->schedule.block_strip;
      if (n < 32 || n > 1024 || (n & (n - 1)) != 0)
        throw CompileError(ErrorKind::Pragma,
                           "block(" + std::to_string(n) +
                               ") of a parallel dimension sets the threads of its CUDA kernel's blocks: a power of "
                               "two from 32 to 1024",
                           fn_.source, strip_level->schedule.pragma_loc);
      block_size_ = n;
    }
    // The largest team of this kernel: the configured one, at most its block.
    const int team_cap = std::min(launch_.team_cap(), block_size_);

    // Host: the iteration space.
    line("{");
    ++indent_;
    using Level = NestLevel;
    std::vector<Level> levels;
    std::string total_expr;
    for (const For* f : nest) {
      Level lv{f, temp("begin"), temp("step"), temp("trip"), temp("k")};
      const std::string end = temp("end");
      line("const int64_t " + lv.begin + " = " + expr(f->begin) + ";");
      line("const int64_t " + end + " = " + expr(f->end) + ";");
      line("const int64_t " + lv.step + " = " + expr(f->step) + ";");
      line("const int64_t " + lv.trip + " = " + trip_count(f, lv.begin, end, lv.step) + ";");
      total_expr += (total_expr.empty() ? "" : " * ") + lv.trip;
      levels.push_back(lv);
    }
    const std::string total = temp("total");
    line("const int64_t " + total + " = " + total_expr + ";");

    // What the kernel receives.
    VarSet nest_vars, reduction_vars, private_vars;
    for (const For* f : nest) nest_vars.insert(f->var.get());
    for (const Reduction& r : sc.reductions) reduction_vars.insert(r.var.get());
    for (const Var& v : sc.privates) private_vars.insert(v.get());
    Captures cap = captures_of({innermost->body});

    // How workers map to threads.
    VarSet outside = reduction_vars;
    outside.insert(private_vars.begin(), private_vars.end());
    for (const Var& v : cap.scalars)
      if (!nest_vars.count(v.get())) outside.insert(v.get());
    WorkerPlan plan = cuda::plan_worker(innermost->body, nest_vars, outside);
    // A team size from the pragmas is the team whatever the number of
    // workers and whether or not the host can count the rows.
    const PragmaTeam asked = plan.team && !whole_block_worker_ ? pragma_team(plan, team_cap) : PragmaTeam{};
    if (asked.team) plan.teams_when_few = false;
    {
      // What the pragmas' sizes do here, or why they do nothing.
      if (strip_level)
        remark(strip_level->schedule.pragma_loc, "block(" + std::to_string(block_size_) +
                                                     ") of a parallel dimension: the CUDA kernel of the loop "
                                                     "at line " +
                                                     std::to_string(loop->loc.line) + " has blocks of " +
                                                     std::to_string(block_size_) + " threads");
      for (const For* f : nest)
        if (f->schedule.single_block || f->schedule.most_trips > 0)
          remark(f->schedule.pragma_loc,
                 "the pragma's " + pragma_sizes(f->schedule) + " is not used on CUDA for a parallel dimension");
      SizedLoops sized;
      sized.visit(innermost->body);
      const std::vector<const For*> spread = plan.team ? cuda::spread_loops(plan) : std::vector<const For*>{};
      for (const For* f : sized.loops) {
        if (std::find(spread.begin(), spread.end(), f) != spread.end()) continue;
        remark(f->schedule.pragma_loc,
               "the pragma's " + pragma_sizes(f->schedule) + " is not used on CUDA: " +
                   (plan.team ? "its dimension's loop is not spread over the team of threads that runs each "
                                "iteration of the parallel loop at line " +
                                    std::to_string(loop->loc.line)
                              : "the parallel loop at line " + std::to_string(loop->loc.line) +
                                    " runs each iteration in one thread"));
      }
    }
    // The team size follows the largest trip count of the spread loops that
    // the host can compute before the launch. When none can be (the trip
    // count varies between workers, as for CSR rows) the worker stays one
    // thread: short rows would leave most of a team idle (a warp per row of
    // 10 elements ran 4.3x slower than a thread per row: BENCHMARKS.md,
    // "GPU: sizes from the sliced pragmas").
    // Trip counts that follow the worker's own variables only (a triangle's
    // rows, `C[i, :i + 1]`) are taken at the first and the last worker: a
    // team size is a cost choice, not a matter of correctness.
    std::string trips;
    // The host's function of the worker's variables that `trips` calls, if
    // any: emitted where the host computes the team from `trips`.
    std::string trips_at_worker;
    // Inner loops whose trip counts vary between workers and are not known
    // before the launch (CSR rows): a team of kSmallTeam threads.
    bool small_team = false;
    if (plan.team) {
      ScalarCollector worker_written;
      worker_written.visit(innermost->body);
      VarSet worker = nest_vars;
      worker.insert(worker_written.written.begin(), worker_written.written.end());
      VarSet body_written = worker_written.written;
      for (const VarInfo* v : nest_vars) body_written.erase(v);
      std::string by_worker;  // trip counts of the spread loops whose bounds read the worker's variables
      scopes_.emplace_back(nest_vars.begin(), nest_vars.end());
      for (const For* f : cuda::spread_loops(plan)) {
        // A loop whose iterations run in pairs counts twice: at most two per thread.
        cuda::PairedLoop paired;
        // (Rendered only where the host evaluates it: a load in the bounds
        // says in a remark that the host reads the element.)
        auto trip = [&] {
          return std::string(cuda::paired_loop(f, &paired) ? "2 * " : "") + "plait::trip_count(" + expr(f->begin) +
                 ", " + expr(f->end) + ", " + expr(f->step) + ")";
        };
        auto evaluable = [&](const VarSet& not_known) {
          return host_evaluable(f->begin, not_known, cap.local_arrays) &&
                 host_evaluable(f->end, not_known, cap.local_arrays) &&
                 host_evaluable(f->step, not_known, cap.local_arrays);
        };
        if (evaluable(worker)) {
          const std::string t = trip();
          trips = trips.empty() ? t : "std::max<int64_t>(" + trips + ", " + t + ")";
        } else if (evaluable(body_written)) {
          const std::string t = trip();
          by_worker = by_worker.empty() ? t : "std::max<int64_t>(" + by_worker + ", " + t + ")";
        }
      }
      scopes_.pop_back();
      if (!by_worker.empty()) {
        const std::string at = temp("trips_at");
        std::string params_text, first, last;
        for (const Level& lv : levels) {
          params_text += (params_text.empty() ? "" : ", ") + ctype(lv.loop->var->type) + " " + var_name(lv.loop->var);
          first += (first.empty() ? "" : ", ") + lv.begin;
          last += (last.empty() ? "" : ", ") + lv.begin + " + (" + lv.trip + " - 1) * " + lv.step;
        }
        trips_at_worker = "auto " + at + " = [&](" + params_text + ") -> int64_t { return " + by_worker + "; };";
        const std::string t = "std::max<int64_t>(" + at + "(" + first + "), " + at + "(" + last + "))";
        trips = trips.empty() ? t : "std::max<int64_t>(" + trips + ", " + t + ")";
      }
      if (whole_block_worker_) {
        // One worker: the whole block, whatever the trip counts (team_for
        // gives the block's threads from 16 iterations per thread).
        trips = "int64_t(" + std::to_string(16 * block_size_) + ")";
        trips_at_worker.clear();
        plan.teams_when_few = false;
      } else if (trips.empty() && !asked.team) {
        // A small team unless the cost rule prefers one thread anyway, or
        // the worker allocates arrays (not measured with small teams: it
        // stays one thread, as before them).
        AllocationSites allocations;
        allocations.visit(innermost->body);
        small_team = !plan.teams_when_few && allocations.sites.empty();
        if (!small_team) {
          plan.team = false;
          plan.notes.clear();
          plan.notes.push_back({loop->loc, "the parallel loop stays one thread per iteration: the trip counts of its "
                                           "inner loops vary between iterations (not known before the launch)"});
        }
      }
    }
    for (const auto& [loc, note] : plan.notes) remark(loc, note);
    PrivatisableAtomics atomics;
    atomics.visit(innermost->body);
    std::vector<ArrayVar> privatised;
    for (const ArrayVar& a : atomics.result())
      if (std::find(cap.arrays.begin(), cap.arrays.end(), a) != cap.arrays.end()) privatised.push_back(a);

    const TemporaryPlan temporary_plan = plan_temporaries(innermost->body, cap, nest_vars);
    const std::vector<Temporary>& temporaries = temporary_plan.temporaries;

    // CSR rows staged per block: a small team's row loop whose terms the
    // block computes for all its rows at once (emit_staged_rows_worker_loop).
    const For* staged = nullptr;
    ArrayVar staged_elements;  // its extent: the rows' total length, for the host's choice
    if (small_team && levels.size() == 1 && privatised.empty() && temporaries.empty()) {
      std::string why;
      staged = cuda::staged_rows_loop(plan, innermost->body, innermost->var.get(), innermost->step,
                                      &staged_elements, &why);
      if (!staged && !why.empty()) {
        remark(loop->loc, "the rows of its inner loop are not staged per block: " + why);
      }
    }

    // Several iterations per thread for straight-line one-thread workers
    // (emit_batched_worker_loop).
    int batch = 1;
    std::string unbatched;
    if (plan.team) unbatched = "its iterations are teams of threads";
    else if (!sc.reductions.empty() || !sc.array_reductions.empty()) unbatched = "it has reductions";
    else if (!privatised.empty()) unbatched = "it updates arrays in shared memory";
    else if (!temporaries.empty()) unbatched = "it allocates arrays";
    else if (cuda::straight_line_worker(innermost->body, &unbatched))
      batch = levels.size() > 1 ? kNestBatchIterations : kBatchIterations;
    // One-thread workers that are not batched: the loads they make first,
    // for several iterations at once (PrefetchableLoads).
    std::vector<const Load*> prefetch;
    if (batch == 1 && !plan.team && temporaries.empty())
      prefetch = PrefetchableLoads(innermost->body, nest_vars).loads;
    if (!prefetch.empty())
      remark(loop->loc, "each thread loads " + std::string(prefetch.size() == 1 ? "the element" : "the elements") +
                            " its workers read first for " + std::to_string(kPrefetchIterations) +
                            " workers before running them (" + unbatched + ")");
    cuda::ContiguousAccesses lanes;
    const IntImm* step = innermost->step->as<IntImm>();
    if (batch > 1 && levels.size() == 1 && (!step || step->value == 1))
      lanes = cuda::contiguous_accesses(innermost->body, innermost->var.get());

    std::vector<std::string> params, args;
    for (const Level& lv : levels) {
      for (const std::string& name : {lv.begin, lv.step, lv.trip}) {
        params.push_back("int64_t " + name);
        args.push_back(name);
      }
    }
    std::string temps_buffer, temps_stride;  // host names of the buffer and of a worker's slice
    if (!temporaries.empty()) {
      temps_buffer = temp("temps");
      temps_stride = temp("temp_stride");
      params.push_back("unsigned char* p_temps");
      args.push_back(temps_buffer);
      params.push_back("int64_t p_temp_stride");
      args.push_back(temps_stride);
      for (const Temporary& t : temporaries) {
        params.push_back("int64_t " + t.offset);
        args.push_back(t.offset);
        params.push_back("int64_t " + t.capacity);
        args.push_back(t.capacity);
      }
    }
    std::string team;  // host: the team size, when the worker is a team
    const int width = plan.team ? cuda::group_width(plan) : 1;
    // The rows a team's worker keeps in registers between its spread loops
    // (worker_plan.h, plan_cached_rows), for its wide version, its version
    // for rows that fit and its temporaries' test.
    ScalarCollector worker_written;
    worker_written.visit(innermost->body);
    const std::vector<cuda::CachedRow> cached_rows =
        plan.team ? cuda::plan_cached_rows(plan, worker_written.written) : std::vector<cuda::CachedRow>{};
    // A team that keeps rows in registers and wants more threads than the
    // block has (a row longer than the block's registers hold) runs in a
    // second version of the kernel with blocks twice as large: the rest of
    // the row is otherwise read from memory again (docs/cuda.md, "Wide
    // blocks for long rows").
    const bool wide_version = plan.team && !small_team && !plan.teams_when_few && !whole_block_worker_ &&
                              temporaries.empty() && privatised.empty() && launch_.max_team == 0 &&
                              2 * block_size_ <= kWideBlockLimit && !cached_rows.empty() &&
                              (!asked.team || (asked.whole_block && !trips.empty()));
    std::string wide;  // host: whether the wide version runs
    if (plan.team) {
      team = temp("team");
      if (!small_team && (!asked.team || wide_version) && !trips_at_worker.empty()) line(trips_at_worker);
      // With groups, a thread's share is counted in groups.
      std::string share = small_team ? std::string()
                          : width > 1 ? "(" + trips + " + " + std::to_string(width - 1) + ") / " + std::to_string(width)
                                      : trips;
      if (wide_version) {  // read twice
        const std::string shared_trips = temp("share");
        line("const int64_t " + shared_trips + " = " + share + ";");
        share = shared_trips;
      }
      // A whole-block worker's team is the block; other teams stop at the
      // configured largest team.
      const std::string team_for = "plait_cuda::team_for(" + share + ", " +
                                   std::to_string(whole_block_worker_ ? block_size_ : team_cap) + ", " +
                                   std::to_string(block_size_) + ")";
      if (small_team) {
        line("const int32_t " + team + " = " + std::to_string(kSmallTeam) + ";");
      } else if (asked.team && !wide_version) {
        line("const int32_t " + team + " = " + std::to_string(asked.team) + ";");
      } else if (wide_version) {
        const std::string wide_team = temp("wide_team");
        wide = temp("wide");
        line("const int32_t " + wide_team + " = plait_cuda::team_for(" + share + ", " +
             std::to_string(2 * block_size_) + ", " + std::to_string(2 * block_size_) + ");");
        // Teams are powers of two up to the doubled block: more than the
        // block is the doubled block, the wide version's constant team.
        line("const bool " + wide + " = " + wide_team + " == " + std::to_string(2 * block_size_) + ";");
        line("const int32_t " + team + " = " + wide + " ? " + wide_team + " : " +
             (asked.team ? std::to_string(asked.team) : team_for) + ";");
      } else if (plan.teams_when_few) {
        line("const int32_t " + team + " = " + total + " < " + std::to_string(kFewWorkers) + " ? " + team_for +
             " : 1;");
      } else {
        line("const int32_t " + team + " = " + team_for + ";");
      }
      params.push_back("int32_t p_team");
      args.push_back(team);
    }
    std::vector<std::pair<Var, std::string>> stayed;  // scalars read from their slots (stays_on_device)
    for (const Var& v : cap.scalars) {
      if (nest_vars.count(v.get())) continue;
      if (reduction_vars.count(v.get()) || private_vars.count(v.get())) continue;
      if (auto it = region_slots_.find(v.get()); it != region_slots_.end() && !device()) {
        stayed.emplace_back(v, "p_stayed" + std::to_string(stayed.size()));
        params.push_back("const " + ctype(v->type) + "* " + stayed.back().second);
        args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(it->second) + ")");
        continue;
      }
      params.push_back(ctype(v->type) + " " + var_name(v));
      args.push_back(var_name(v));
    }
    add_array_params(cap.arrays, &params, &args);
    params.push_back("plait::device_error* p_err");
    args.push_back("ctx->cuda->scratch");
    std::vector<std::string> accumulators;
    std::vector<std::pair<std::string, std::string>> slots;
    const bool resident = resident_loop_ == loop;
    const int first_slot = resident ? kResidentSlot : 0;
    for (size_t r = 0; r < sc.reductions.size(); ++r) {
      const Var& v = sc.reductions[r].var;
      const std::string acc = "p_acc" + std::to_string(r);
      params.push_back(ctype(v->type) + "* " + acc);
      args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(first_slot + static_cast<int>(r)) + ")");
      accumulators.push_back(acc);
      slots.emplace_back(var_name(v), ctype(v->type));
      if (resident) {
        params.push_back(ctype(v->type) + " p_start" + std::to_string(r));
        args.push_back(var_name(v));
      }
    }
    const bool raises = note_error_sites({innermost->body}) || !temporaries.empty();  // a negative extent
    device_errors_ = device_errors_ || raises;

    // A batched collapsed nest has a second version whose blocks take tiles
    // of one row (emit_batched_worker_loop), which the host runs when the
    // innermost loop's trip count leaves few of a tile's threads idle.
    const bool rows_version = batch > 1 && levels.size() > 1;

    // Device: the kernel, and its wide or rows version.
    const int index = add_kernel("plait_" + sanitize(fn_.name) + "_k" + std::to_string(kernel_names_.size()), raises);
    const std::string name = kernel_names_[static_cast<size_t>(index)];
    const int wide_index = wide_version ? add_kernel(name + "_wide", raises) : -1;
    const int rows_index = rows_version ? add_kernel(name + "_rows", raises) : -1;
    const int staged_index = staged ? add_kernel(name + "_staged", raises) : -1;
    // A team kernel that keeps rows in registers has a version for rows that
    // fit in them (and so does its wide version), which the host runs when
    // `fit_test` holds (rows_fit_).
    const std::string fit_test =
        plan.team && !small_team && !plan.teams_when_few && !whole_block_worker_
            ? rows_fit_test(plan, cached_rows, nest_vars, worker_written.written, cap.local_arrays, team)
            : std::string();
    const int fit_index = fit_test.empty() ? -1 : add_kernel(name + "_fit", raises);
    const int wide_fit_index = fit_index >= 0 && wide_version ? add_kernel(name + "_wide_fit", raises) : -1;
    // A team kernel whose loops keep no rows in registers has a version for
    // teams of a warp, the team as a constant, which the host runs when its
    // rule gives a warp (rows of up to 128 iterations, 512 with groups): the
    // lane arithmetic of short rows folds. Row sums of 16 to 512 float32 ran
    // 1.76x to 1.13x faster with the team a constant, while the loop softmax,
    // whose rows stay in registers, ran 4% slower (docs/cuda.md, "Teams of a
    // warp").
    const int warp_index =
        plan.team && !small_team && !plan.teams_when_few && !whole_block_worker_ && !asked.team && cached_rows.empty()
            ? add_kernel(name + "_warp", raises)
            : -1;
    // The version being emitted stages its rows (emit_staged_rows_worker_loop).
    bool staging = false;
    // `constant_team`: the team of the version being emitted when the host
    // always launches it with the same one (0: known only at run time): the
    // team the pragmas ask for, the staged version's small team, the wide
    // version's block, the warp version's 32. A constant team is a constant
    // of the kernel: team_combine and the lane arithmetic with a team known
    // only at run time made the staged version's row sums 15% slower, and the
    // wide version's softmax of 8192 x 8192 7% slower (docs/cuda.md).
    auto emit_device_kernel = [&](const std::string& kernel_name, bool rows, int constant_team) {
      ModeSwitch to_device(*this);
      shared_decls_.clear();
      device_ << "\n// parallel loop over `" << loop->var->name << "` (line " << loop->loc.line << ")\n";
      line_directive(loop->loc);
      std::vector<std::string> kernel_params = params;
      if (constant_team)
        std::replace(kernel_params.begin(), kernel_params.end(), std::string("int32_t p_team"),
                     std::string("int32_t p_team_arg"));
      device_ << "extern \"C\" __global__ void __launch_bounds__(" << block_size_ << ") " << kernel_name << "("
              << join(kernel_params, ", ") << ") {\n";
      // The body goes to its own stream so that the __shared__ arrays it
      // needs can be declared above it.
      const std::string head = device_.str();
      device_.str("");
      indent_ = 1;
      scopes_.emplace_back();
      for (const Var& v : cap.scalars)
        if (!nest_vars.count(v.get())) scopes_.back().insert(v.get());
      line("(void)p_err;");
      if (resident && !sc.reductions.empty()) {
        // One block starts the results that stay on the device itself; the
        // host stages them for larger grids (below).
        line("if (gridDim.x == 1) {");
        line("  if (threadIdx.x == 0) {");
        for (size_t r = 0; r < sc.reductions.size(); ++r)
          line("    *" + accumulators[r] + " = p_start" + std::to_string(r) + ";");
        line("  }");
        line("  __syncthreads();");
        line("}");
      }
      for (const auto& [v, param] : stayed) line("const " + ctype(v->type) + " " + var_name(v) + " = *" + param + ";");
      for (const Reduction& r : sc.reductions)
        line(ctype(r.var->type) + " " + var_name(r.var) + " = " + reduction_identity(r.op, r.var->type.kind) + ";");
      for (const Var& v : sc.privates)
        if (declared(v.get())) line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + "{};");
      line("const int64_t p_total = " + [&] {
        std::string t;
        for (const Level& lv : levels) t += (t.empty() ? "" : " * ") + lv.trip;
        return t;
      }() + ";");
      if (plan.team) {
        // A team is p_team consecutive threads, a power of two (1 << p_team_shift);
        // p_slot is its index in the block.
        if (constant_team) {
          line("(void)p_team_arg;  // the host's team, always this one");
          line("constexpr int32_t p_team = " + std::to_string(constant_team) + ";");
        }
        line("const int p_team_shift = __ffs(p_team) - 1;");
        line("const int p_lane = (int)(threadIdx.x & (unsigned)(p_team - 1));");
        line("[[maybe_unused]] const int p_slot = (int)(threadIdx.x >> p_team_shift);");
      }
      if (!temporaries.empty()) {
        // The worker's slice of the temporaries' buffer: one per thread, or
        // one per team shared by its threads.
        const std::string thread = "((int64_t)blockIdx.x * blockDim.x + threadIdx.x)";
        line("unsigned char* const p_mine = p_temps + " + (plan.team ? "(" + thread + " >> p_team_shift)" : thread) +
             " * p_temp_stride;");
        for (const Temporary& t : temporaries) temp_offsets_[t.site.alloc] = {t.offset, t.capacity};
        team_worker_ = plan.team;
      }
      // The loop over workers: one per thread, several per thread, or one
      // per team.
      auto emit_worker_loop = [&] {
        if (batch > 1) {
          emit_batched_worker_loop(levels, innermost->body, batch, lanes, rows);
          return;
        }
        // The loop variables of worker p_k.
        auto emit_loop_variables = [&] {
          if (levels.size() > 1) line("int64_t p_rest = p_k;");
          for (size_t d = levels.size(); d-- > 0;) {
            const Level& lv = levels[d];
            std::string kd;
            if (levels.size() == 1) {
              kd = "p_k";
            } else if (d == 0) {
              kd = "p_rest";
            } else {
              line("const int64_t " + lv.k + " = plait::split_digit(p_rest, " + lv.trip + ");");
              kd = lv.k;
            }
            const Var& v = lv.loop->var;
            line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
                 lv.begin + " + " + kd + " * " + lv.step + ");");
            scopes_.back().insert(v.get());
          }
        };
        if (staging) {
          emit_staged_rows_worker_loop(plan, levels.front(), innermost->body, staged, emit_loop_variables);
          return;
        }
        if (plan.team) {
          line("const int64_t p_stride = ((int64_t)gridDim.x * blockDim.x) >> p_team_shift;");
          // The back edge tests the record, one answer per team (the team's
          // threads run its iterations together): a team's later iterations
          // do not start once the call has failed.
          line(
              "for (int64_t p_k = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> p_team_shift; p_k < p_total; "
              "p_k = plait::team_stopped(p_err, p_team) ? p_total : p_k + p_stride) {");
        } else if (!prefetch.empty()) {
          // kPrefetchIterations of the thread's workers at a time, their
          // prefetchable loads first.
          const std::string width = std::to_string(kPrefetchIterations);
          line("const int64_t p_stride = (int64_t)gridDim.x * blockDim.x;");
          line(
              "for (int64_t p_k0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p_k0 < p_total; p_k0 = "
              "plait::stopped(p_err) ? p_total : p_k0 + p_stride * " +
              width + ") {");
          ++indent_;
          for (size_t f = 0; f < prefetch.size(); ++f) {
            const std::string name = "p_pre" + std::to_string(f);
            line(ctype(prefetch[f]->type) + " " + name + "[" + width + "];");
          }
          line("#pragma unroll");
          line("for (int p_u = 0; p_u < " + width + "; ++p_u) {");
          ++indent_;
          line("const int64_t p_k = p_k0 + p_u * p_stride;");
          line("if (p_k >= p_total) break;");
          scopes_.emplace_back();
          emit_loop_variables();
          for (size_t f = 0; f < prefetch.size(); ++f)
            line("p_pre" + std::to_string(f) + "[p_u] = " + memory_load(prefetch[f]) + ";");
          scopes_.pop_back();
          --indent_;
          line("}");
          for (size_t f = 0; f < prefetch.size(); ++f) prefetched_[prefetch[f]] = "p_pre" + std::to_string(f);
          line("#pragma unroll");
          line("for (int p_u = 0; p_u < " + width + "; ++p_u) {");
          ++indent_;
          line("const int64_t p_k = p_k0 + p_u * p_stride;");
          line("if (p_k >= p_total) break;");
          --indent_;
        } else {
          // The back edge tests the record: a thread's later iterations do
          // not start once the call has failed (one load per iteration).
          line("const int64_t p_stride = (int64_t)gridDim.x * blockDim.x;");
          line(
              "for (int64_t p_k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p_k < p_total; p_k = "
              "plait::stopped(p_err) ? p_total : p_k + p_stride) {");
        }
        ++indent_;
        scopes_.emplace_back();
        emit_loop_variables();
        loop_depth_ = 1;  // the grid-stride loop
        if (plan.team) {
          // The team's previous iteration may still read the temporaries'
          // slice that this one writes (also after a `continue`).
          if (!temporaries.empty()) line("plait::team_sync(p_team);  // the temporaries' slice is reused");
          emit_team_body(plan, innermost->body);
        } else {
          with_device_stop([&] { emit_body_statements(innermost->body); });
        }
        loop_depth_ = 0;
        scopes_.pop_back();
        --indent_;
        line("}");
        if (!plan.team && !prefetch.empty()) {
          prefetched_.clear();
          --indent_;
          line("}");
        }
      };
      if (privatised.empty()) {
        emit_worker_loop();
      } else {
        // Each block accumulates the updates in shared memory (when every
        // privatised array fits), then adds each non-zero bin to the array
        // with one atomic.
        std::string fits;
        std::vector<std::string> copies;
        for (size_t p = 0; p < privatised.size(); ++p) {
          const ArrayVar& a = privatised[p];
          const int capacity = kPrivateCopyBytes / element_bytes(a->type.dtype);
          copies.push_back(shared_array("p_private" + std::to_string(p), ctype(a->type.dtype), capacity));
          fits += (p ? " && " : "") + extent(a, 0) + " <= " + std::to_string(capacity);
        }
        line("const bool p_privatised = " + fits + ";");
        line("if (p_privatised) {");
        ++indent_;
        for (size_t p = 0; p < privatised.size(); ++p) {
          line("for (int64_t p_bin = threadIdx.x; p_bin < " + extent(privatised[p], 0) +
               "; p_bin += blockDim.x) " + copies[p] + "[p_bin] = 0;");
          private_copies_[privatised[p].get()] = copies[p];
        }
        line("__syncthreads();");
        emit_worker_loop();
        private_copies_.clear();
        line("__syncthreads();");
        for (size_t p = 0; p < privatised.size(); ++p) {
          const ArrayVar& a = privatised[p];
          line("for (int64_t p_bin = threadIdx.x; p_bin < " + extent(a, 0) + "; p_bin += blockDim.x)");
          line("  if (" + copies[p] + "[p_bin] != 0) plait::atomic_add<" + ctype(a->type.dtype) + ">(&" + data(a) +
               "[" + offset(a, {"p_bin"}) + "], " + copies[p] + "[p_bin]);");
        }
        --indent_;
        line("} else {");
        ++indent_;
        mute_remarks_ = true;
        emit_worker_loop();
        mute_remarks_ = false;
        --indent_;
        line("}");
      }
      for (size_t r = 0; r < sc.reductions.size(); ++r) {
        const Reduction& red = sc.reductions[r];
        // Every thread of a team holds the team's value: lane 0 contributes it.
        if (plan.team)
          line("if (p_lane != 0) " + var_name(red.var) + " = " + reduction_identity(red.op, red.var->type.kind) + ";");
        const bool propagating = cuda::reduction_form(loop->body, red) == cuda::ReductionForm::NanPropagating;
        line(std::string("plait::reduce_") +
             (propagating ? (red.op == ReduceOp::Max ? "maximum" : "minimum") : reduce_op_name_word(red.op)) + "(" +
             accumulators[r] + ", " + var_name(red.var) + ");");
      }
      scopes_.pop_back();
      temp_offsets_.clear();
      team_worker_ = false;
      std::string shared;
      for (const auto& [decl_name, decl] : shared_decls_) shared += "  " + decl + "\n";
      const std::string body = device_.str();
      device_.str(head + shared + cuda::entry_test(body) + body);
      device_.seekp(0, std::ios_base::end);
      device_ << "}\n";
    };
    emit_device_kernel(name, false, asked.team);
    if (staged) {
      staging = true;
      emit_device_kernel(kernel_names_[static_cast<size_t>(staged_index)], false, kSmallTeam);
      staging = false;
    }
    // A wide version: blocks twice as large, whose team the host always
    // takes as the whole block (its `wide` test above).
    auto emit_wide_kernel = [&](int kernel) {
      block_size_ *= 2;
      emit_device_kernel(kernel_names_[static_cast<size_t>(kernel)], false, block_size_);
      block_size_ /= 2;
    };
    const bool muted = mute_remarks_;
    mute_remarks_ = true;  // the versions emit the same statements again
    if (wide_version) emit_wide_kernel(wide_index);
    if (rows_version) emit_device_kernel(kernel_names_[static_cast<size_t>(rows_index)], true, asked.team);
    if (warp_index >= 0) emit_device_kernel(kernel_names_[static_cast<size_t>(warp_index)], false, 32);
    if (fit_index >= 0) {
      rows_fit_ = true;
      emit_device_kernel(kernel_names_[static_cast<size_t>(fit_index)], false, asked.team);
      if (wide_fit_index >= 0) emit_wide_kernel(wide_fit_index);
      rows_fit_ = false;
    }
    mute_remarks_ = muted;

    // Host: the launch. Results that stay on the device start in their
    // slots whether or not the loop runs: staged here, a stream operation of
    // its own, unless the launch is one block, which starts them itself
    // (a loop that runs at each step of a serial loop, NPBench gramschmidt's
    // column norms).
    const int64_t cap_blocks = sc.reductions.empty() && privatised.empty() ? kMaxBlocks : kMaxReductionBlocks;
    const std::string threads = plan.team  ? total + " * " + team
                                : batch > 1 ? "(" + total + " + " + std::to_string(batch - 1) + ") / " +
                                                  std::to_string(batch)
                                            : total;
    auto grid_of = [&](int block) {
      return "plait_cuda::grid_for(" + threads + ", " + std::to_string(block) + ", " + std::to_string(cap_blocks) +
             ")";
    };
    if (resident) {
      // The wide version's grid and one for temporaries are never larger.
      line("if (!(" + total + " > 0 && " + grid_of(block_size_) + " == 1u)) {");
      ++indent_;
      stage_slots(slots, kResidentSlot);
      --indent_;
      line("}");
      for (size_t r = 0; r < sc.reductions.size(); ++r)
        resident_slots_[sc.reductions[r].var.get()] = kResidentSlot + static_cast<int>(r);
      remark(loop->loc, "the results of the reductions stay on the GPU for the statements after the loop");
    }
    line("if (" + total + " > 0) {");
    ++indent_;
    std::string grid = grid_of(block_size_);
    if (!temporaries.empty()) {
      grid = emit_temporaries_buffer(
          temporary_plan, levels, total, grid,
          plan.team ? std::to_string(block_size_) + " / " + team : std::to_string(block_size_), temps_buffer,
          temps_stride,
          plan.team ? temporaries_in_registers(plan, cached_rows, nest_vars, worker_written.written, cap.local_arrays,
                                               temporaries, team)
                    : "");
    }
    auto launch = [&](int kernel, const std::string& grid, int block) {
      if (resident) {
        emit_launch(kernel, grid, std::to_string(block), args, {}, {});
      } else {
        emit_launch(kernel, grid, std::to_string(block), args, slots, slots);
      }
    };
    // `kernel`, or its version for rows that fit in the registers
    // (`fitting`, -1: none) where they do.
    auto launch_fitting = [&](int kernel, int fitting, const std::string& kernel_grid, int block) {
      if (fitting < 0) return launch(kernel, kernel_grid, block);
      line("if (" + fit_test + ") {");
      ++indent_;
      launch(fitting, kernel_grid, block);
      --indent_;
      line("} else {");
      ++indent_;
      launch(kernel, kernel_grid, block);
      --indent_;
      line("}");
    };
    // Another version of the kernel where `condition` holds at the launch.
    auto launch_either = [&](const std::string& condition, int other, const std::string& other_grid, int other_block) {
      line("if (" + condition + ") {");
      ++indent_;
      launch_fitting(other, other == wide_index ? wide_fit_index : -1, other_grid, other_block);
      --indent_;
      line("} else {");
      ++indent_;
      launch_fitting(index, fit_index, grid, block_size_);
      --indent_;
      line("}");
    };
    if (wide_version) {
      launch_either(wide, wide_index, grid_of(2 * block_size_), 2 * block_size_);
    } else if (rows_version) {
      const std::string tile = std::to_string(batch * block_size_), tiles = temp("tiles");
      std::string bytes = "uint64_t(0)";
      for (const ArrayVar& a : cap.arrays)
        bytes += " + uint64_t(" + element_count(a) + ") * sizeof(" + ctype(a->type.dtype) + ")";
      const std::string inner = levels.back().trip, cap = std::to_string(cap_blocks);
      line("const int64_t " + tiles + " = plait_cuda::row_tiles(" + inner + ", " + tile + ");");
      // The most blocks (rows_cap) only where the rows version runs.
      const std::string most = "plait_cuda::rows_cap(ctx, " + std::to_string(rows_index) + ", " +
                               std::to_string(block_size_) + ", " + bytes + ", " + tiles + ", " + cap + ")";
      launch_either("plait_cuda::rows_fit(" + inner + ", " + tiles + ", " + tile + ", " + cap + ")", rows_index,
                    "plait_cuda::grid_for_rows(" + tiles + ", " + total + " / " + inner + ", " + most + ")",
                    block_size_);
    } else if (staged) {
      launch_either("plait_cuda::rows_staged(" + extent(staged_elements, 0) + ", " + total + ", " +
                        std::to_string(kStagedRowElements) + ")",
                    staged_index, grid, block_size_);
    } else if (warp_index >= 0) {
      launch_either(team + " == 32", warp_index, grid, block_size_);
    } else {
      launch_fitting(index, fit_index, grid, block_size_);
    }
    --indent_;
    line("}");
    for (const Level& lv : levels) {
      const Var& v = lv.loop->var;
      if (!declared(v.get())) continue;
      line("if (" + lv.trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + lv.begin + " + (" +
           lv.trip + " - 1) * " + lv.step + ");");
    }
    --indent_;
    line("}");

    std::string what = "parallel loop over `" + loop->var->name + "`";
    if (nest.size() > 1) {
      what += " (collapsed with";
      for (size_t d = 1; d < nest.size(); ++d) what += " `" + nest[d]->var->name + "`";
      what += ")";
    }
    const std::string share = "n / " + std::to_string(4 * width) +
                              (width > 1 ? " (each thread takes groups of " + std::to_string(width) +
                                               " consecutive iterations, about 4 groups)"
                                         : "");
    if (plan.team && plan.teams_when_few) {
      remark(loop->loc, what + ": CUDA kernel " + name + ", one thread per iteration when there are at least " +
                            std::to_string(kFewWorkers) + ", else one team of threads per iteration (32 to " +
                            std::to_string(team_cap) +
                            " threads, from the inner trip count n as the smallest power of two >= " + share +
                            "), blocks of " + std::to_string(block_size_) +
                            " threads, grid-stride loop over "
                            "iterations");
    } else if (small_team) {
      remark(loop->loc, what + ": CUDA kernel " + name + ", one team of " + std::to_string(kSmallTeam) +
                            " threads per iteration, blocks of " + std::to_string(block_size_) +
                            " threads, grid-stride loop over iterations: the trip counts of its inner loops vary "
                            "between iterations and are not known before the launch, so the team is small (short "
                            "rows leave few threads idle; its threads read consecutive elements of a row)" +
                            (staged ? "; when `" + staged_elements->name + "` holds at most " +
                                          std::to_string(kStagedRowElements) +
                                          " elements per iteration (checked at each launch), its staged version " +
                                          kernel_names_[static_cast<size_t>(staged_index)] +
                                          " runs instead: the rows of the loop over `" + staged->var->name +
                                          "` (line " + std::to_string(staged->loc.line) +
                                          ") are consecutive ranges, so each block first computes the terms of "
                                          "its workers' rows together, consecutive threads on consecutive "
                                          "elements, into shared memory (up to " +
                                          std::to_string(kStagedElements) +
                                          " per block), then each team sums its row's; a block whose rows hold "
                                          "more runs them directly"
                                    : std::string()));
    } else if (plan.team && asked.team) {
      remark(loop->loc, what + ": CUDA kernel " + name + ", one team of " + std::to_string(asked.team) +
                            " threads per iteration (" + asked.asked_by + "), blocks of " +
                            std::to_string(block_size_) + " threads, grid-stride loop over iterations");
    } else if (plan.team) {
      remark(loop->loc, what + ": CUDA kernel " + name + ", one team of threads per iteration, blocks of " +
                            std::to_string(block_size_) +
                            " threads, grid-stride loop over iterations; the team "
                            "has 32 (a warp) to " +
                            std::to_string(team_cap) +
                            " threads, chosen at launch from the inner trip count n as the "
                            "smallest power of two >= " +
                            share);
    } else if (batch > 1) {
      std::string text = what + ": CUDA kernel " + name + ", " + std::to_string(batch) + " iterations per thread, "
                         "blocks of " + std::to_string(block_size_) + " threads, each covering " +
                         std::to_string(batch * block_size_) + " consecutive iterations, grid-stride loop; "
                         "statement by statement, a thread computes the values of all its iterations before it "
                         "stores any, so that their loads are in flight together (correct for in-place and "
                         "aliased arrays: each iteration keeps its own order, and the iterations of a parallel "
                         "loop are independent)";
      if (!lanes.loads.empty() || !lanes.stores.empty()) {
        text += "; when the loop step is 1 and the first iteration's addresses of the " +
                std::to_string(lanes.loads.size() + lanes.stores.size()) + " accesses at the loop variable plus "
                "fixed terms are aligned (checked at each launch), a thread takes " + std::to_string(batch) +
                " consecutive iterations and makes each of those accesses as one vector load or store (16 bytes "
                "for float32)";
      }
      if (rows_version) {
        text += "; when the innermost loop's trip count n fills tiles of " + std::to_string(batch * block_size_) +
                " iterations with at most n / 8 left over (checked at each launch), the kernel's rows version " +
                kernel_names_[static_cast<size_t>(rows_index)] + " runs instead: a block takes a tile of the "
                "innermost loop in one iteration of the outer loops, so a thread's iterations share their outer "
                "indices and none is divided per iteration";
      }
      remark(loop->loc, text);
    } else {
      remark(loop->loc, what + ": CUDA kernel " + name + ", one thread per iteration, blocks of " +
                            std::to_string(block_size_) + " threads, grid-stride loop" +
                            (plan.team || unbatched.empty() ? "" : " (one iteration per thread: " + unbatched + ")"));
    }
    if (warp_index >= 0)
      remark(loop->loc, what + ": when that rule gives a team of 32 threads, the kernel's version " +
                            kernel_names_[static_cast<size_t>(warp_index)] +
                            " runs instead, with the team a constant of the kernel");
    if (plan.team && !small_team && !plan.teams_when_few) {
      if (wide_version)
        remark(loop->loc, what + ": when that rule asks for a team of more than " + std::to_string(block_size_) +
                              " threads (rows too long for the registers of one block), the kernel's wide version " +
                              kernel_names_[static_cast<size_t>(wide_index)] +
                              " runs instead, with blocks and teams "
                              "of up to " +
                              std::to_string(2 * block_size_) + " threads");
      if (fit_index >= 0)
        remark(loop->loc, what +
                              ": when every row kept in registers fits in them (each loop that keeps one runs at "
                              "most " +
                              std::to_string(cuda::row_cache_slots(width, launch_.row_groups)) +
                              " iterations per thread of the team" +
                              (width > 1 ? ", in whole groups of " + std::to_string(width) : std::string()) +
                              ", checked at each launch), the kernel's version " +
                              kernel_names_[static_cast<size_t>(fit_index)] +
                              (wide_fit_index >= 0
                                   ? " (or " + kernel_names_[static_cast<size_t>(wide_fit_index)] + " for the wide one)"
                                   : std::string()) +
                              " runs instead, without the code for iterations beyond the registers" +
                              (width > 1 ? " or for a partial group" : std::string()));
    }
    for (const Reduction& r : sc.reductions) {
      remark(loop->loc, std::string(reduce_op_name(r.op)) + "-reduction of `" + r.var->name +
                            "` on the GPU: warp shuffles, then one atomic per warp");
    }
    for (const ArrayVar& a : privatised) {
      remark(loop->loc, "`#pragma atomic` updates of `" + a->name + "` go to a copy in shared memory per block when it "
                        "has at most " + std::to_string(kPrivateCopyBytes / element_bytes(a->type.dtype)) +
                        " elements, then one atomic per non-zero element per block");
    }
  }

  // ------------------------------------------------------------ persistent time loops

  // The loops of a persistent kernel's parallel loop whose iterations share
  // the grid: the collapsed nest, extended through perfectly nested loops
  // whose iterations are independent (simd and parallel loops without
  // reductions, serial loops that serial_loop_independent proves) and whose
  // bounds do not depend on the outer ones. Each element is computed as in
  // the nest, and consecutive threads take consecutive innermost iterations.
  std::vector<const For*> persistent_nest(const For* loop) {
    std::vector<const For*> nest = collapse_nest(loop);
    VarSet vars;
    for (const For* f : nest) vars.insert(f->var.get());
    while (const For* inner = single_loop(nest.back()->body)) {
      if (!inner->schedule.reductions.empty() || !inner->schedule.array_reductions.empty()) break;
      if (inner->schedule.kind == LoopKind::Serial && !cuda::serial_loop_independent(inner)) break;
      UsesVars uses(vars);
      uses.visit(inner->begin);
      uses.visit(inner->end);
      uses.visit(inner->step);
      if (uses.found) break;
      nest.push_back(inner);
      vars.insert(inner->var.get());
    }
    return nest;
  }

  // Whether a persistent kernel's parallel loop would need teams of threads
  // (whose size the host picks at each launch).
  bool worker_is_team(const For* loop) {
    const std::vector<const For*> nest = persistent_nest(loop);
    VarSet nest_vars, outside;
    for (const For* f : nest) nest_vars.insert(f->var.get());
    for (const Var& v : loop->schedule.privates) outside.insert(v.get());
    for (const Var& v : captures_of({nest.back()->body}).scalars)
      if (!nest_vars.count(v.get())) outside.insert(v.get());
    const WorkerPlan plan = cuda::plan_worker(nest.back()->body, nest_vars, outside);
    return plan.team && !plan.teams_when_few;
  }

  // Why a serial host loop whose body has parallel loops cannot run as one
  // persistent kernel, or "" when it can (docs/cuda.md). The rule: the body
  // holds only parallel loops whose workers are single threads without
  // reductions, declarations of scalars, assignments of scalars, assertions,
  // and `if`s over such statements, where the values, assertions and
  // conditions read no element of an array that the body writes; it binds
  // no arrays; and every scalar it assigns (the parallel loops' variables
  // included) is assigned before it is read in a step and not read after the
  // loop. So every thread computes the same scalars and takes the same
  // branches, the steps need nothing from the host, and the host needs
  // nothing from them but the loop variable's last value.
  std::string persistent_refusal(const For* loop) {
    StoredArrays stored;
    stored.visit(loop->body);
    std::string why = step_refusal(statements_of(loop->body), stored.arrays);
    if (!why.empty()) return why;
    ArrayCollector arrays;
    arrays.visit(loop->body);
    if (!arrays.bound.empty() || !arrays.declared.empty()) return "the loop body binds or allocates arrays";
    ScalarCollector scalars;
    scalars.visit(loop->body);
    for (const Var& v : scalars.used) {
      if (!scalars.written.count(v.get()) || !declared(v.get())) continue;
      if (analysis::live_after(fn_.body, loop, v.get()) || analysis::may_read_before_write(loop->body, v.get()))
        return "`" + v->name + "` is assigned in the loop body and read after the loop or in the next step (the host "
                               "needs its value)";
    }
    return "";
  }

  // `stored`: the arrays the loop body writes. The step's scalar statements
  // may read elements of the others: no thread writes them during the kernel.
  std::string step_refusal(const std::vector<Stmt>& stmts, const ArraySet& stored) {
    auto reads_elements = [&stored](const Expr& e) {
      StoredArrays reads;
      reads.visit(e);
      for (const ArrayInfo* a : reads.loaded)
        if (stored.count(a)) return true;
      return false;
    };
    for (const Stmt& st : stmts) {
      const std::string where = "line " + std::to_string(st->loc.line);
      if (is_parallel_loop(st)) {
        const For* f = st->as<For>();
        if (!f->schedule.reductions.empty() || !f->schedule.array_reductions.empty())
          return "the parallel loop at " + where + " has a reduction, whose value goes to the host after each step";
        if (worker_is_team(f))
          return "the parallel loop at " + where + " runs teams of threads, whose size is chosen at each launch";
        continue;
      }
      if (const Declare* d = st->as<Declare>(); d && d->var) continue;
      if (const Assign* a = st->as<Assign>()) {
        if (reads_elements(a->value))
          return where + " assigns `" + a->var->name + "` from elements of an array the loop writes, outside its "
                         "parallel loops";
        continue;
      }
      if (const Assert* a = st->as<Assert>()) {
        if (reads_elements(a->cond)) return where + " asserts on elements of an array the loop writes";
        continue;
      }
      if (const If* i = st->as<If>()) {
        if (reads_elements(i->cond)) return where + " branches on elements of an array the loop writes";
        std::string why = step_refusal(statements_of(i->then_case), stored);
        if (why.empty() && i->else_case) why = step_refusal(statements_of(i->else_case), stored);
        if (!why.empty()) return why;
        continue;
      }
      if (st->as<MatMul>()) return where + " hands a matrix product or solve to cuBLAS, which the host calls";
      return where + " is not a parallel loop, a scalar assignment, an assertion or an `if`";
    }
    return "";
  }

  // Whether the host can compute an expression of a step before the launch:
  // from host scalars, `step_locals` (the loop variable and the scalars the
  // step assigns) and array extents, with nothing that can fail.
  bool step_evaluable(const Expr& e, const VarSet& step_locals) {
    ScalarCollector vars;
    vars.visit(e);
    for (const Var& v : vars.used)
      if (!declared(v.get()) && !step_locals.count(v.get())) return false;
    StmtFacts facts;
    facts.visit(e);
    HasErrorSites errors;
    errors.visit(e);
    return !facts.touches_elements && !errors.found;
  }

  // What the host does to size a persistent kernel's grid: replay a scalar
  // statement of the step, or count a parallel loop's iterations.
  struct SizingAction {
    Stmt replay;
    const For* count = nullptr;
  };

  // Plans the sizing of `stmts` (a step, or a branch of it when `nested`):
  // top-level assignments the host can evaluate are replayed; scalars
  // assigned otherwise become unknown; each parallel loop, in either branch of
  // an `if`, is counted. Returns false when a loop's bounds are unknown.
  bool plan_sizing(const std::vector<Stmt>& stmts, bool nested, VarSet& step_locals,
                   std::vector<SizingAction>& actions) {
    for (const Stmt& st : stmts) {
      if (is_parallel_loop(st)) {
        for (const For* f : persistent_nest(st->as<For>()))
          for (const Expr& e : {f->begin, f->end, f->step})
            if (!step_evaluable(e, step_locals)) return false;
        actions.push_back({nullptr, st->as<For>()});
      } else if (const Assign* a = st->as<Assign>()) {
        if (!nested && step_evaluable(a->value, step_locals)) {
          step_locals.insert(a->var.get());
          actions.push_back({st, nullptr});
        } else {
          step_locals.erase(a->var.get());
        }
      } else if (const If* i = st->as<If>()) {
        if (!plan_sizing(statements_of(i->then_case), true, step_locals, actions)) return false;
        if (i->else_case && !plan_sizing(statements_of(i->else_case), true, step_locals, actions)) return false;
      } else if (st->as<Declare>() && !nested) {
        actions.push_back({st, nullptr});
      }
    }
    return true;
  }

  // Host code that sets `workers` to the largest iteration count of a
  // parallel loop of the time loop (either branch of an `if`) at its first
  // and last step, or to -1 when a bound is not known before the launch.
  void emit_persistent_sizing(const For* loop, const std::string& begin, const std::string& step,
                              const std::string& trip, const std::string& workers) {
    VarSet step_locals{loop->var.get()};
    std::vector<SizingAction> actions;
    if (!plan_sizing(statements_of(loop->body), false, step_locals, actions)) {
      line("const int64_t " + workers + " = -1;");
      return;
    }
    line("int64_t " + workers + " = 0;");
    const std::string at = temp("at");
    line("for (const int64_t " + at + " : {int64_t(0), " + trip + " - 1}) {");
    ++indent_;
    scopes_.emplace_back();
    const Var& t = loop->var;
    line("[[maybe_unused]] " + ctype(t->type) + " " + var_name(t) + " = static_cast<" + ctype(t->type) + ">(" + begin +
         " + " + at + " * " + step + ");");
    scopes_.back().insert(t.get());
    for (const SizingAction& action : actions) {
      if (action.replay) {
        emit(action.replay);
        continue;
      }
      std::string total;
      for (const For* f : persistent_nest(action.count))
        total += (total.empty() ? "" : " * ") + std::string("plait::trip_count(") + expr(f->begin) + ", " +
                 expr(f->end) + ", " + expr(f->step) + ")";
      line(workers + " = std::max<int64_t>(" + workers + ", " + total + ");");
    }
    scopes_.pop_back();
    --indent_;
    line("}");
  }

  // A parallel loop inside a persistent kernel: every thread of the grid
  // evaluates the bounds, then takes iterations p_first, p_first + p_stride...
  void emit_persistent_parallel_loop(const For* loop) {
    const std::vector<const For*> nest = persistent_nest(loop);
    line_directive(loop->loc);
    line("{");
    ++indent_;
    struct Level {
      const For* loop;
      std::string begin, step, trip;
    };
    std::vector<Level> levels;
    std::string product;
    for (const For* f : nest) {
      Level lv{f, temp("begin"), temp("step"), temp("trip")};
      const std::string end = temp("end");
      line("const int64_t " + lv.begin + " = " + expr(f->begin) + ";");
      line("const int64_t " + end + " = " + expr(f->end) + ";");
      line("const int64_t " + lv.step + " = " + expr(f->step) + ";");
      line("const int64_t " + lv.trip + " = plait::trip_count(" + lv.begin + ", " + end + ", " + lv.step + ");");
      product += (product.empty() ? "" : " * ") + lv.trip;
      levels.push_back(lv);
    }
    const std::string total = temp("total");
    line("const int64_t " + total + " = " + product + ";");
    // A thread's position in the collapsed nest, one index per loop: divided
    // out of p_first once, then advanced by p_stride's own digits with a
    // carry, as an odometer, instead of 64-bit divisions at every iteration
    // (which took most of a step of heat_3d's 3-D sweeps).
    const size_t n = levels.size();
    std::vector<std::string> index(n, "p_k"), advance(n);
    std::string increment = "p_k += p_stride";
    if (n > 1) {
      std::string declared;
      for (size_t d = 0; d < n; ++d) {
        index[d] = temp("at");
        advance[d] = temp("by");
        declared += (d ? ", " : "") + index[d] + " = 0, " + advance[d] + " = 0";
      }
      line("int64_t " + declared + ";");
      line("bool p_carry = false;");
      // Every trip is positive where the thread has an iteration; the
      // stride's digits only matter to a thread with a second one.
      auto split = [&](const std::string& from, const std::vector<std::string>& digits) {
        line("int64_t p_rest = " + from + ";");
        for (size_t d = n; d-- > 1;) line(digits[d] + " = plait::split_digit(p_rest, " + levels[d].trip + ");");
        line(digits[0] + " = p_rest;");
      };
      line("if (p_first < " + total + ") {");
      ++indent_;
      split("p_first", index);
      line("if (p_stride < " + total + " - p_first) {");
      ++indent_;
      split("p_stride", advance);
      --indent_;
      line("}");
      --indent_;
      line("}");
      for (size_t d = n; d-- > 1;) {
        increment += ", p_carry = (" + index[d] + " += " + advance[d] + (d + 1 < n ? " + p_carry" : "") +
                     ") >= " + levels[d].trip + ", " + index[d] + " -= p_carry ? " + levels[d].trip + " : 0";
      }
      increment += ", " + index[0] + " += " + advance[0] + " + p_carry";
    }
    // Not unrolled: NVRTC's unrolled copies with their guards made jacobi_1d's
    // steps 1.3x slower on an H100 (3200 elements in one block, on chip).
    // The back edge tests the record (one load per iteration): a thread's
    // later iterations do not start once the call has failed; the barrier
    // after the loop then takes every block out together.
    increment += ", p_k = plait::stopped(p_err) ? " + total + " : p_k";
    line("#pragma unroll 1");
    line("for (int64_t p_k = p_first; p_k < " + total + "; " + increment + ") {");
    ++indent_;
    scopes_.emplace_back();
    for (size_t d = n; d-- > 0;) {
      const Level& lv = levels[d];
      const std::string& kd = index[d];
      const Var& v = lv.loop->var;
      line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
           lv.begin + " + " + kd + " * " + lv.step + ");");
      scopes_.back().insert(v.get());
    }
    const int outer_depth = loop_depth_;
    loop_depth_ = 1;  // the grid-stride loop
    persistent_step_ = false;  // parallel loops in the worker run serially in its thread
    with_device_stop([&] { emit_body_statements(nest.back()->body); });
    persistent_step_ = true;
    loop_depth_ = outer_depth;
    scopes_.pop_back();
    --indent_;
    line("}");
    // The step may read a loop variable after its loop, as on the host.
    for (const Level& lv : levels) {
      const Var& v = lv.loop->var;
      if (!declared(v.get())) continue;
      line("if (" + lv.trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + lv.begin + " + (" +
           lv.trip + " - 1) * " + lv.step + ");");
    }
    --indent_;
    line("}");
  }

  // A serial host loop whose steps are parallel loops (and scalar statements
  // that need nothing from the host) as one persistent kernel: every thread
  // of one launch runs all steps, with a barrier after each parallel loop.
  // The host picks the launch at run time from the step's worker count
  // (plait_cuda::persistent_grid): one block, a cooperative grid, or the
  // launches per step of emit_serial_for. Returns false, with a remark
  // saying why when the body has parallel loops, where the rule refuses.
  bool emit_persistent_time_loop(const For* loop) {
    const std::vector<Stmt> stmts = statements_of(loop->body);
    if (step_parallel_loops(stmts).empty()) return false;
    const std::string what = "serial loop over `" + loop->var->name + "` (line " + std::to_string(loop->loc.line) + ")";
    const std::string why = persistent_refusal(loop);
    if (!why.empty()) {
      remark(loop->loc, what + " does not run as one persistent kernel: " + why);
      return false;
    }
    const Var& t = loop->var;
    const Captures cap = captures_of({loop->body});
    const std::string begin = temp("begin"), end = temp("end"), step = temp("step"), trip = temp("trip"),
                      workers = temp("workers"), grid = temp("grid");
    std::vector<std::string> params, args;
    for (const std::string& n : {begin, step, trip}) {
      params.push_back("int64_t " + n);
      args.push_back(n);
    }
    // Host scalars the steps read are parameters; those they assign (not
    // needed after the loop, by the rule) are the steps' own.
    std::vector<Var> step_owned;
    for (const Var& v : cap.scalars) {
      if (v.get() == t.get()) continue;
      if (cap.written.count(v.get())) {
        step_owned.push_back(v);
        continue;
      }
      params.push_back(ctype(v->type) + " " + var_name(v));
      args.push_back(var_name(v));
    }
    // The kernel that copies the arrays on chip takes the same arguments,
    // its array pointers and strides under other names.
    std::vector<std::string> onchip_params = params, unused_args;
    add_array_params(cap.arrays, &params, &args);
    add_array_params(cap.arrays, &onchip_params, &unused_args, "p_global_");
    // The barriers the steps' parallel loops can do without, when the arrays
    // do not share memory (the kernel's `p_apart`; tested at each call).
    // A step whose parallel loops may raise keeps a barrier after each of
    // them: there every block learns of an error before the code after the
    // loop runs. (A statement of the step outside them is followed by its
    // own barrier test.)
    step_may_raise_ = false;
    bool loops_may_raise = false;
    for (const Stmt& st : stmts) {
      const bool raises = analysis::raises(st).any();
      step_may_raise_ = step_may_raise_ || raises;
      loops_may_raise = loops_may_raise || (raises && ir::is_parallel_loop(st));
    }
    const cuda::StepBarriers barriers = loops_may_raise ? cuda::StepBarriers{} : cuda::plan_step_barriers(stmts);
    const std::string apart = temp("apart");
    if (!barriers.not_needed.empty()) {
      params.push_back("bool p_apart");
      onchip_params.push_back("bool p_apart");
      args.push_back(apart);
    }
    for (const std::string& p : {std::string("unsigned int* p_barrier"), std::string("plait::device_error* p_err")}) {
      params.push_back(p);
      onchip_params.push_back(p);
    }
    args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(kBarrierSlot) + ")");
    args.push_back("ctx->cuda->scratch");
    const bool raises = note_error_sites({loop->body});
    // Arrays that the steps may read and write on chip (one block, on the host's checks).
    const bool onchip = !cap.arrays.empty();
    // And in registers, where their accesses allow it.
    RegisterPlan regs;
    const std::string no_registers = onchip ? register_refusal(loop, stmts, cap.arrays, &regs) : "";
    const bool in_registers = onchip && no_registers.empty();

    barrier_not_needed_ = barriers.not_needed;
    for (const auto& [f, note] : barriers.notes) remark(f->loc, what + ": " + note);
    const std::string but_some = barriers.not_needed.empty() ? "" : " (but those said below)";
    // Device: the kernel, and the same steps on arrays in shared memory and in registers.
    const int index = add_kernel("plait_" + sanitize(fn_.name) + "_k" + std::to_string(kernel_names_.size()), raises);
    const std::string name = kernel_names_[static_cast<size_t>(index)];
    const int onchip_index = onchip ? add_kernel(name + "_onchip", raises) : -1;
    const int registers_index = in_registers ? add_kernel(name + "_registers", raises) : -1;
    {
      ModeSwitch to_device(*this);
      // The steps, at indent 1 of a kernel whose parameters are `params`.
      auto emit_steps = [&]() {
        scopes_.emplace_back();
        for (const Var& v : cap.scalars)
          if (v.get() != t.get() && !cap.written.count(v.get())) scopes_.back().insert(v.get());
        line("for (int64_t p_step = 0; p_step < " + trip + "; ++p_step) {");
        ++indent_;
        scopes_.emplace_back();
        line("[[maybe_unused]] " + ctype(t->type) + " " + var_name(t) + " = static_cast<" + ctype(t->type) + ">(" +
             begin + " + p_step * " + step + ");");
        scopes_.back().insert(t.get());
        for (const Var& v : step_owned) {
          line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + "{};");
          scopes_.back().insert(v.get());
        }
        // Every thread runs the step's scalar statements; assertions on them
        // fail in all threads alike, which then leave the kernel together.
        persistent_step_ = true;
        for (const Stmt& st : stmts) emit(st);
        persistent_step_ = false;
        scopes_.pop_back();
        --indent_;
        line("}");
        scopes_.pop_back();
      };
      device_ << "\n// " << what << ": all steps in one persistent kernel\n";
      line_directive(loop->loc);
      device_ << "extern \"C\" __global__ void __launch_bounds__(" << kPersistentBlockSize << ") " << name << "("
              << join(params, ", ") << ") {\n";
      indent_ = 1;
      // A grid barrier, so that every block takes the same answer: a block
      // that starts after another one's error must not leave alone.
      line("if (plait::grid_sync(p_barrier, p_err)) return;  // an error stops the call");
      const size_t body_from = device_.str().size();
      line("const int64_t p_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;");
      line("const int64_t p_stride = (int64_t)gridDim.x * blockDim.x;");
      emit_steps();
      const std::string body = device_.str().substr(body_from);
      device_ << "}\n";
      if (onchip)
        emit_onchip_kernel(what + ": all steps in one block", onchip_index, onchip_params, body, loop, cap.arrays);
      if (in_registers) emit_register_kernel(what, registers_index, params, loop, regs, emit_steps);
      barrier_not_needed_.clear();
    }

    // Host: the choice and the launch.
    line("{");
    ++indent_;
    line("const int64_t " + begin + " = " + expr(loop->begin) + ";");
    line("const int64_t " + end + " = " + expr(loop->end) + ";");
    line("const int64_t " + step + " = " + expr(loop->step) + ";");
    line("const int64_t " + trip + " = " + trip_count(loop, begin, end, step) + ";");
    line("if (" + trip + " > 0) {");
    ++indent_;
    emit_persistent_sizing(loop, begin, step, trip, workers);
    const std::string block = std::to_string(kPersistentBlockSize) + "u";
    OnChipLaunch on{-1, "false", "", "", -1, "", "", ""};
    if (onchip || !barriers.not_needed.empty()) {
      std::string test = "true";
      for (size_t i = 0; i < cap.arrays.size(); ++i)
        for (size_t j = i + 1; j < cap.arrays.size(); ++j)
          test += " && !" + expr(ArraysOverlap::make(cap.arrays[i], cap.arrays[j], false, loop->loc));
      line("const bool " + apart + " = " + test + ";");
    }
    if (onchip) on = emit_onchip_choice(onchip_index, cap.arrays, trip, apart);
    if (in_registers) emit_register_choice(registers_index, regs, trip, &on);
    line("const uint32_t " + grid + " = plait_cuda::persistent_grid(ctx, " + std::to_string(index) + ", " + workers +
         ", " + block + ", " + on.condition + (in_registers ? " || " + on.registers_condition : std::string()) + ");");
    line("if (" + grid + " > 0) {");
    ++indent_;
    // The barrier's arrival count starts at zero (the generation may hold anything).
    line("if (" + grid + " > 1 && ctx->cuda->zero(ctx, plait_cuda::scratch_slot(ctx, " + std::to_string(kBarrierSlot) +
         "), 8) != 0) return ctx->error_kind;");
    on.condition = grid + " == 1 && " + on.condition;
    if (in_registers) on.registers_condition = grid + " == 1 && " + on.registers_condition;
    emit_launch(index, grid, block, args, {}, {},
                "(" + grid + " == 1 ? ctx->cuda->launch : ctx->cuda->launch_cooperative)", onchip ? &on : nullptr);
    if (declared(t.get()))
      line(var_name(t) + " = static_cast<" + ctype(t->type) + ">(" + begin + " + (" + trip + " - 1) * " + step + ");");
    --indent_;
    line("} else {");
    ++indent_;
    emit_serial_for(loop);
    --indent_;
    line("}");
    --indent_;
    line("}");
    --indent_;
    line("}");
    remark(loop->loc,
           what + ": all steps in one persistent CUDA kernel " + name +
               ", unless a step is large. The host "
               "counts W, the most iterations of one of its parallel loops at the first and the last step, at "
               "each call: W <= 4096" +
               (onchip ? std::string(", or W <= 16384 with at least 2 steps and arrays that fit in a block's "
                                     "shared memory without sharing memory with each other")
                       : std::string()) +
               ": one block of " + std::to_string(kPersistentBlockSize) +
               " threads, __syncthreads after each parallel loop" + but_some +
               (onchip ? std::string(" (on copies of the arrays there in the second case, copied in before "
                                     "the first step and the written ones back after the last)")
                       : std::string()) +
               (in_registers ? registers_remark(regs) : std::string()) +
               "; W <= 4194304: a cooperative launch of at most the resident blocks, a grid barrier after "
               "each parallel loop" +
               but_some + "; else (or without cooperative launches) one launch per parallel loop per step");
    if (onchip && !in_registers)
      remark(loop->loc, what + ": its arrays are not kept in registers in one block: " + no_registers);
    return true;
  }

  // The product of an array's extents, as an int64_t expression.
  std::string element_count(const ArrayVar& a) {
    std::string count = "int64_t(1)";
    for (int d = 0; d < a->type.ndim; ++d) count += " * " + extent(a, d);
    return count;
  }

  // The version `index` of a persistent kernel whose body is `body` (its
  // text after the opening brace, at indent 1), on copies of `arrays` in
  // shared memory: `params` name their pointers and strides `p_global_...`.
  // The body runs in a lambda, so that its `return`s (a failed assertion's)
  // still reach the copies back of the arrays `loop` writes.
  void emit_onchip_kernel(const std::string& what, int index, const std::vector<std::string>& params,
                          const std::string& body, const For* loop, const std::vector<ArrayVar>& arrays) {
    device_ << "\n// " << what << ", on copies of its arrays in shared memory\n";
    line_directive(loop->loc);
    device_ << "extern \"C\" __global__ void __launch_bounds__(" << kPersistentBlockSize << ") "
            << kernel_names_[static_cast<size_t>(index)] << "(" << join(params, ", ") << ") {\n";
    indent_ = 1;
    line("if (plait::block_stopped(p_err)) return;  // an error stops the call");
    emit_onchip_copies(arrays, nullptr);
    line("[&]() {");
    device_ << body;
    line("}();");
    StoredArrays stored;
    stored.visit(loop->body);
    emit_onchip_copies(arrays, &stored.arrays);
    device_ << "}\n";
  }

  // Device code of the on-chip persistent kernel: with `written` null, binds
  // each array's usual names (data pointer, strides) to a dense copy in
  // shared memory (in the order its layout keeps its unit stride in, the
  // arrays one after the other) and copies the elements in, then waits for
  // the block; else waits for the block and copies the `written` arrays
  // back to global memory (`p_global_` names).
  void emit_onchip_copies(const std::vector<ArrayVar>& arrays, const ArraySet* written) {
    if (!written) {
      line("extern __shared__ __align__(16) unsigned char p_onchip[];");
      line("uint64_t p_onchip_at = 0;");
    } else {
      line("__syncthreads();");
    }
    for (const ArrayVar& a : arrays) {
      if (written && !written->count(a.get())) continue;
      const std::string t = ctype(a->type.dtype), count = temp("count");
      const int nd = a->type.ndim;
      // Dimensions from the fastest-varying in the copy to the slowest.
      std::vector<int> order;
      for (int k = 0; k < nd; ++k) order.push_back(a->type.layout == Layout::F ? k : nd - 1 - k);
      auto global_stride = [&](int d) { return "p_global_" + stride(a, d); };
      line("const int64_t " + count + " = " + element_count(a) + ";");
      if (!written) {
        line("[[maybe_unused]] " + t + "* const " + data(a) + " = reinterpret_cast<" + t + "*>(p_onchip + p_onchip_at);");
        line("p_onchip_at += plait::onchip_bytes(" + count + ", sizeof(" + t + "));");
        std::string dense = "int64_t(1)";
        for (int d : order) {
          if (!unit_stride(a->type, d)) line("[[maybe_unused]] const int64_t " + stride(a, d) + " = " + dense + ";");
          dense += " * " + extent(a, d);
        }
      }
      line("for (int64_t p_q = threadIdx.x; p_q < " + count + "; p_q += blockDim.x) {");
      ++indent_;
      std::string offset = "0";
      if (nd == 1) {
        offset = unit_stride(a->type, 0) ? std::string("p_q") : "p_q * " + global_stride(0);
      } else if (nd > 1) {
        offset.clear();
        line("int64_t p_rest = p_q;");
        for (size_t k = 0; k < order.size(); ++k) {
          const int d = order[k];
          std::string index = "p_rest";
          if (k + 1 < order.size()) {
            index = temp("i");
            line("const int64_t " + index + " = p_rest % " + extent(a, d) + ";");
            line("p_rest /= " + extent(a, d) + ";");
          }
          offset += (offset.empty() ? "" : " + ") + index + (unit_stride(a->type, d) ? "" : " * " + global_stride(d));
        }
      }
      const std::string global = "p_global_" + data(a) + "[" + offset + "]", local = data(a) + "[p_q]";
      line(written ? global + " = " + local + ";" : local + " = " + global + ";");
      --indent_;
      line("}");
    }
    if (!written) line("__syncthreads();");
  }

  // ------------------------------------------------ arrays in registers

  // The parallel loops of a persistent kernel's steps (in `if`s too).
  static std::vector<const For*> step_parallel_loops(const std::vector<Stmt>& stmts) {
    std::vector<const For*> loops;
    for (const Stmt& st : stmts) {
      if (is_parallel_loop(st)) {
        loops.push_back(st->as<For>());
      } else if (const If* i = st->as<If>()) {
        for (const Stmt* branch : {&i->then_case, &i->else_case})
          for (const For* f : step_parallel_loops(statements_of(*branch))) loops.push_back(f);
      }
    }
    return loops;
  }

  // Why the persistent kernel of `loop` (steps `stmts`, touching `arrays`)
  // has no version with its arrays in registers, or "" with `plan` filled
  // (register_arrays.h; docs/cuda.md, "Arrays in registers").
  std::string register_refusal(const For* loop, const std::vector<Stmt>& stmts, const std::vector<ArrayVar>& arrays,
                               RegisterPlan* plan) {
    const std::vector<const For*> loops = step_parallel_loops(stmts);
    for (const For* f : loops)
      if (persistent_nest(f).size() != 1)
        return "the parallel loop at line " + std::to_string(f->loc.line) + " is a nest of " +
               std::to_string(persistent_nest(f).size()) + " loops";
    StoredArrays stored;
    stored.visit(loop->body);
    std::vector<ArrayVar> written;
    for (const ArrayVar& a : arrays)
      if (stored.arrays.count(a.get())) written.push_back(a);
    return cuda::plan_register_arrays(loops, written, plan);
  }

  // The array of the register plan being emitted that `a` is, or null.
  const ArrayVar* register_array(const ArrayInfo* a) const {
    if (!register_plan_) return nullptr;
    for (const ArrayVar& r : register_plan_->arrays)
      if (r.get() == a) return &r;
    return nullptr;
  }

  // The row of `a`'s halo buffer of thread `row` - 1, in the current phase:
  // rows -1 and blockDim.x exist, so that the block's first and last threads
  // read inside the buffer.
  std::string halo_row(const ArrayVar& a, const std::string& row) {
    return "(" + data(a) + "_halo + ((int64_t)p_phase * (blockDim.x + 2) + " + row + ") * " +
           std::to_string(register_plan_->halo_width.at(a.get())) + ")";
  }

  // The element `a[index]` read by the slot being emitted: its own
  // register, or the one its neighbour passed in the halo buffer.
  std::string register_element(const ArrayVar& a, const Expr& index) {
    int64_t offset = 0;
    if (!analysis::var_plus_constant(index, register_loop_->var, &offset))
      PLAIT_INTERNAL_ERROR("a register array's index is not its loop variable plus a constant");
    const int slots = register_plan_->slots;
    const int64_t slot = register_slot_ + offset - register_loop_->store_offset;
    if (slot >= 0 && slot < slots) return data(a) + "_reg[" + std::to_string(slot) + "]";
    const auto& [left, right] = register_loop_->halos.at(a.get());
    if (slot < 0) return halo_row(a, "threadIdx.x") + "[" + std::to_string(right + left + slot) + "]";
    return halo_row(a, "threadIdx.x + 2") + "[" + std::to_string(slot - slots) + "]";
  }

  // A parallel loop of a persistent kernel with its arrays in registers:
  // each thread passes the elements its neighbours read to them (through the
  // halo buffers of this loop's phase), then runs the iterations that store
  // its slots, one copy of the body per slot, so that every register index
  // is a constant. The buffers of the two phases alternate, so no barrier
  // follows the loop: a thread writes a phase's buffer again only after the
  // barrier of the next loop with halos, which every reader of the last one
  // has passed.
  void emit_register_parallel_loop(const For* loop) {
    const RegisterLoop& rl = register_plan_->loops.at(loop);
    const int slots = register_plan_->slots;
    line_directive(loop->loc);
    line("{");
    ++indent_;
    const std::string begin = temp("begin"), end = temp("end");
    line("const int64_t " + begin + " = " + expr(loop->begin) + ";");
    line("const int64_t " + end + " = " + expr(loop->end) + ";");
    for (const auto& [info, halo] : rl.halos) {
      const ArrayVar& a = *register_array(info);
      const std::string row = halo_row(a, "threadIdx.x + 1"), reg = data(a) + "_reg";
      const auto& [left, right] = halo;
      for (int k = 0; k < right; ++k)
        line(row + "[" + std::to_string(k) + "] = " + reg + "[" + std::to_string(k) + "];");
      for (int k = 0; k < left; ++k)
        line(row + "[" + std::to_string(right + k) + "] = " + reg + "[" + std::to_string(slots - left + k) + "];");
    }
    if (!rl.halos.empty()) line("__syncthreads();");
    const Var& v = loop->var;
    const int outer_depth = loop_depth_;
    loop_depth_ = 1;
    persistent_step_ = false;
    // The thread's slots whose iterations are in the loop's range, as 32-bit
    // numbers (slot j runs iteration p_e0 + j - store_offset).
    const std::string lo = temp("lo"), hi = temp("hi"), to_slot = " + " + std::to_string(rl.store_offset) + " - p_e0";
    line("const int " + lo + " = plait::slot_bound(" + begin + to_slot + ", " + std::to_string(slots) + ");");
    line("const int " + hi + " = plait::slot_bound(" + end + to_slot + ", " + std::to_string(slots) + ");");
    for (int j = 0; j < slots; ++j) {
      const std::string js = std::to_string(j);
      // The slot's own block: a `continue` of the body (or of a failed
      // assertion) leaves the slot, as it leaves an iteration.
      line("if (" + lo + " <= " + js + " && " + js + " < " + hi + ") do {");
      ++indent_;
      scopes_.emplace_back();
      line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(p_e0 + " +
           std::to_string(j - rl.store_offset) + ");");
      scopes_.back().insert(v.get());
      register_loop_ = &rl;
      register_slot_ = j;
      with_device_stop([&] { emit_body_statements(loop->body); });
      register_loop_ = nullptr;
      register_slot_ = -1;
      scopes_.pop_back();
      --indent_;
      line("} while (false);");
    }
    persistent_step_ = true;
    loop_depth_ = outer_depth;
    if (!rl.halos.empty()) line("p_phase ^= 1;");
    // The step may read the loop variable after its loop, as on the host.
    if (declared(v.get()))
      line("if (" + end + " > " + begin + ") " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + end +
           " - 1);");
    --indent_;
    line("}");
  }

  // The version `index` of a persistent kernel (`params` as the usual one's)
  // with the arrays of `plan` in registers: each thread loads its slots,
  // runs the steps (`emit_steps`, in a lambda so that an assertion's
  // `return` still reaches the stores back) and stores the slots back.
  void emit_register_kernel(const std::string& what, int index, const std::vector<std::string>& params, const For* loop,
                            const RegisterPlan& plan, const std::function<void()>& emit_steps) {
    device_ << "\n// " << what << ": all steps in one block, " << register_array_names(plan) << " in registers\n";
    line_directive(loop->loc);
    device_ << "extern \"C\" __global__ void __launch_bounds__(" << kPersistentBlockSize << ") "
            << kernel_names_[static_cast<size_t>(index)] << "(" << join(params, ", ") << ") {\n";
    indent_ = 1;
    const std::string slots = std::to_string(plan.slots);
    line("if (plait::block_stopped(p_err)) return;  // an error stops the call");
    line("(void)p_barrier;");
    if (std::find(params.begin(), params.end(), "bool p_apart") != params.end()) line("(void)p_apart;");
    line("extern __shared__ __align__(16) unsigned char p_onchip[];");
    line("[[maybe_unused]] uint64_t p_onchip_at = 0;");
    line("[[maybe_unused]] int p_phase = 0;");
    line("const int64_t p_e0 = (int64_t)threadIdx.x * " + slots + ";");
    auto each_slot = [&](const ArrayVar& a, const std::string& action) {
      line("#pragma unroll");
      line("for (int p_j = 0; p_j < " + slots + "; ++p_j) " + action);
    };
    for (const ArrayVar& a : plan.arrays) {
      const std::string t = ctype(a->type.dtype), reg = data(a) + "_reg";
      line(t + " " + reg + "[" + slots + "];");
      if (auto it = plan.halo_width.find(a.get()); it != plan.halo_width.end()) {
        line(t + "* const " + data(a) + "_halo = reinterpret_cast<" + t + "*>(p_onchip + p_onchip_at);");
        line("p_onchip_at += plait::onchip_bytes(int64_t(2) * (blockDim.x + 2) * " + std::to_string(it->second) +
             ", sizeof(" + t + "));");
      }
      each_slot(a, reg + "[p_j] = p_e0 + p_j < " + extent(a, 0) + " ? " + data(a) + "[" + offset(a, {"(p_e0 + p_j)"}) +
                       "] : " + t + "(0);");
    }
    register_plan_ = &plan;
    line("[&]() {");
    emit_steps();
    line("}();");
    register_plan_ = nullptr;
    for (const ArrayVar& a : plan.arrays)
      each_slot(a, "if (p_e0 + p_j < " + extent(a, 0) + ") " + data(a) + "[" + offset(a, {"(p_e0 + p_j)"}) +
                       "] = " + data(a) + "_reg[p_j];");
    device_ << "}\n";
  }

  // "`a`, `b`": the arrays of `plan`.
  static std::string register_array_names(const RegisterPlan& plan) {
    std::string names;
    for (const ArrayVar& a : plan.arrays) names += (names.empty() ? "`" : ", `") + a->name + "`";
    return names;
  }

  // What explain() says of the version with the arrays of `plan` in registers.
  static std::string registers_remark(const RegisterPlan& plan) {
    const std::string slots = std::to_string(plan.slots);
    return "; in the second case, where the longest of " + register_array_names(plan) + " has at most " +
           std::to_string(plan.slots * kPersistentBlockSize) + " elements, those arrays live in registers instead (" +
           slots + " consecutive elements of each per thread, the iterations that store them in their thread, the " +
           "elements read across threads passed through shared memory)";
  }

  // Host code for the version `index` with the arrays of `plan` in
  // registers, into `on`: its block (0 when one block of 1024 threads
  // cannot hold the arrays), the bytes of its halo buffers, and whether to
  // take it (at least 2 steps of `trip`, one step only loads and stores;
  // arrays that do not share memory, as for the copies on chip).
  void emit_register_choice(int index, const RegisterPlan& plan, const std::string& trip, OnChipLaunch* on) {
    on->registers_index = index;
    on->registers_condition = temp("in_registers");
    on->registers_block = temp("registers_block");
    on->registers_bytes = temp("registers_bytes");
    std::string elements = "int64_t(0)", bytes = "uint64_t(0)";
    for (const ArrayVar& a : plan.arrays) {
      elements = "std::max<int64_t>(" + elements + ", " + extent(a, 0) + ")";
      if (auto it = plan.halo_width.find(a.get()); it != plan.halo_width.end())
        bytes += " + plait_cuda::onchip_bytes(int64_t(2) * (" + on->registers_block + " + 2) * " +
                 std::to_string(it->second) + ", sizeof(" + ctype(a->type.dtype) + "))";
    }
    line("const uint32_t " + on->registers_block + " = plait_cuda::register_block(" + elements + ", " +
         std::to_string(plan.slots) + ");");
    line("const uint64_t " + on->registers_bytes + " = " + bytes + ";");
    line("const bool " + on->registers_condition + " = " + trip + " >= 2 && " + on->apart + " && " +
         on->registers_block + " > 0;");
  }

  // What a serial host loop holds, for emit_device_serial_loop.
  struct SerialLoopContents : IRVisitor {
    bool parallel = false;  // a parallel loop at any depth
    bool spread = false;    // a simd loop or a loop with reductions, which the host would launch at every step
    bool other = false;     // a matrix product, a return, an array binding or allocation
    using IRVisitor::visit;

   protected:
    void visit(const For* n) override {
      // The host's reductions and array statements are parallel simd loops;
      // a parallel loop of the user's stays one (the persistent rule's).
      parallel = parallel || n->schedule.kind == LoopKind::Parallel;
      spread = spread || is_vectorized(n->schedule.kind) || !n->schedule.reductions.empty();
      IRVisitor::visit(n);
    }
    void visit(const MatMul*) override { other = true; }
    void visit(const Return*) override { other = true; }
    void visit(const ArrayBind*) override { other = true; }
    void visit(const Allocate*) override { other = true; }
  };

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
  // The parallel loop of one iteration around `s` whose worker runs the
  // serial loop `s` on the device, or null with `why` set (empty when the
  // loop launches nothing at its steps that a team could take).
  Stmt device_serial_loop(const Stmt& s, std::string* why) {
    const For* loop = s->as<For>();
    SerialLoopContents contents;
    contents.visit(loop->body);
    if (!contents.spread) return nullptr;
    if (contents.other) {
      // With parallel loops of the user's the loop is one the persistent
      // rule judged already (remarked there).
      if (!contents.parallel) *why = "its body returns, binds or allocates arrays, or calls cuBLAS";
      return nullptr;
    }
    // Scalars the steps assign are the kernel's own: none may be needed after the loop.
    ScalarCollector scalars;
    scalars.visit(loop->body);
    for (const VarInfo* v : scalars.written) {
      if (declared(v)) {
        *why = "`" + v->name + "` is assigned in the loop body and used outside it";
        return nullptr;
      }
    }
    if (analysis::live_after(fn_.body, loop, loop->var.get())) {
      *why = "`" + loop->var->name + "` is read after the loop";
      return nullptr;
    }
    const Var worker = std::make_shared<VarInfo>(VarInfo{"_device", ScalarType::py_int(), loop->loc, false});
    LoopSchedule schedule;
    schedule.kind = LoopKind::Parallel;
    Stmt wrapper = For::make(worker, IntImm::make(0), IntImm::make(1), IntImm::make(1), Block::make({s}, loop->loc),
                             schedule, loop->loc);
    VarSet outside;
    for (const Var& v : captures_of({wrapper->as<For>()->body}).scalars) outside.insert(v.get());
    if (!cuda::plan_worker(wrapper->as<For>()->body, {worker.get()}, outside).team) {
      *why = "its steps cannot run on the threads of one team";
      return nullptr;
    }
    return wrapper;
  }

  bool emit_device_serial_loop(const Stmt& s) {
    const For* loop = s->as<For>();
    const std::string what = "serial loop over `" + loop->var->name + "` (line " + std::to_string(loop->loc.line) + ")";
    std::string why;
    const Stmt wrapper = device_serial_loop(s, &why);
    if (wrapper) synthesized_.push_back(wrapper);
    if (!wrapper) {
      if (!why.empty())
        remark(loop->loc, what + " launches its kernels at every step, not as one kernel on the device: " + why);
      return false;
    }
    SerialLoopContents contents;
    contents.visit(loop->body);
    ArrayCollector arrays;
    arrays.visit(loop->body);
    std::string small;
    for (const ArrayVar& a : arrays.used) {
      std::string elements;
      for (int d = 0; d < a->type.ndim; ++d) {
        const std::string extent = expr(ArrayDim::make(a, d));
        small += (small.empty() ? "" : " && ") + extent + " <= " + std::to_string(kDeviceLoopMaxExtent);
        elements += (elements.empty() ? "" : " * ") + extent;
      }
      if (contents.parallel && !elements.empty())
        small += " && " + elements + " <= " + std::to_string(kDeviceLoopMaxElements);
    }
    line("if (" + (small.empty() ? std::string("true") : small) + ") {");
    ++indent_;
    whole_block_worker_ = true;
    device_time_loop_ = loop;
    emit_parallel_kernel(wrapper->as<For>());
    device_time_loop_ = nullptr;
    whole_block_worker_ = false;
    --indent_;
    line("} else {");
    ++indent_;
    emit_serial_for(loop);
    --indent_;
    line("}");
    remark(loop->loc, what + ": all steps in one CUDA kernel of one team of " + std::to_string(block_size_) +
                          " threads (its " + (contents.parallel ? "parallel loops, " : "") +
                          "loops with reductions and array statements spread over the team) when every dimension of "
                          "the arrays it touches is at most " +
                          std::to_string(kDeviceLoopMaxExtent) +
                          (contents.parallel ? " and each has at most " + std::to_string(kDeviceLoopMaxElements) +
                                                   " elements"
                                             : std::string()) +
                          ", else one launch per loop per step");
    return true;
  }

  static const char* reduce_op_name_word(ReduceOp op) {
    switch (op) {
      case ReduceOp::Add: return "add";
      case ReduceOp::Mul: return "mul";
      case ReduceOp::Min: return "min";
      case ReduceOp::Max: return "max";
    }
    return "add";
  }

  // Statements outside parallel loops that touch array elements: one
  // single-thread kernel.
  //
  // A scalar it assigns goes to the device with the launch unless the
  // statements assign it on every path before reading it (its value on entry
  // is dead): each copy is a stream operation of its own (NPBench
  // gramschmidt launches the region at each of its steps).
  void emit_serial_region(const std::vector<Stmt>& stmts, const VarSet& stays = {}) {
    Captures cap = captures_of(stmts);
    const Stmt region = Block::make(stmts, stmts.front()->loc);
    VarSet dead_on_entry;  // assigned on every path before any read
    for (const Var& v : cap.scalars)
      if ((stays.count(v.get()) || cap.written.count(v.get())) && analysis::always_writes_before_read(region, v.get()))
        dead_on_entry.insert(v.get());
    auto read_on_entry = [&](const Var& v) { return dead_on_entry.count(v.get()) == 0; };
    std::vector<std::string> params, args;
    std::vector<std::pair<std::string, std::string>> slots;
    std::vector<Var> exchanged;
    std::vector<std::pair<Var, int>> resident;  // reduction results read from their slots
    std::vector<std::pair<Var, int>> staying;   // scalars it assigns that stay in their slots
    for (const Var& v : cap.scalars) {
      if (stays.count(v.get())) {
        const int slot = kRegionSlot + region_slots_used_++;
        staying.emplace_back(v, slot);
        params.push_back(ctype(v->type) + "* p_stay" + std::to_string(staying.size() - 1));
        args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(slot) + ")");
        continue;
      }
      if (cap.written.count(v.get())) {
        exchanged.push_back(v);
        continue;
      }
      if (auto it = resident_slots_.find(v.get()); it != resident_slots_.end()) {
        resident.emplace_back(v, it->second);
        params.push_back("const " + ctype(v->type) + "* p_res" + std::to_string(resident.size() - 1));
        args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(it->second) + ")");
        continue;
      }
      params.push_back(ctype(v->type) + " " + var_name(v));
      args.push_back(var_name(v));
    }
    if (static_cast<int>(exchanged.size()) > kRegionSlot) {
      throw CompileError(ErrorKind::Unsupported, "too many scalars assigned in one device region for the CUDA target",
                         fn_.source, stmts.front()->loc);
    }
    // The scalars read on entry take the first slots, which the host stages.
    const size_t staged =
        static_cast<size_t>(std::stable_partition(exchanged.begin(), exchanged.end(), read_on_entry) - exchanged.begin());
    for (size_t k = 0; k < exchanged.size(); ++k) {
      const Var& v = exchanged[k];
      params.push_back(ctype(v->type) + "* p_slot" + std::to_string(k));
      args.push_back("plait_cuda::scratch_slot(ctx, " + std::to_string(k) + ")");
      slots.emplace_back(var_name(v), ctype(v->type));
    }
    const std::vector<std::pair<std::string, std::string>> slots_in(slots.begin(),
                                                                     slots.begin() + static_cast<ptrdiff_t>(staged));
    add_array_params(cap.arrays, &params, &args);
    params.push_back("plait::device_error* p_err");
    args.push_back("ctx->cuda->scratch");
    const bool raises = note_error_sites(stmts);

    const int index = add_kernel("plait_" + sanitize(fn_.name) + "_k" + std::to_string(kernel_names_.size()), raises);
    const std::string name = kernel_names_[static_cast<size_t>(index)];
    const int first_line = stmts.front()->loc.line;
    int last_line = first_line;
    for (const Stmt& s : stmts) last_line = std::max(last_line, s->loc.end_line);
    {
      ModeSwitch to_device(*this);
      device_ << "\n// statements outside parallel loops (lines " << std::to_string(first_line) << "-" << std::to_string(last_line)
              << "), in one thread\n";
      device_ << "extern \"C\" __global__ void " << name << "(" << join(params, ", ") << ") {\n";
      indent_ = 1;
      scopes_.emplace_back();
      for (const Var& v : cap.scalars) scopes_.back().insert(v.get());
      line("if (plait::stopped(p_err)) return;  // an error stops the call");
      for (size_t k = 0; k < resident.size(); ++k)
        line("const " + ctype(resident[k].first->type) + " " + var_name(resident[k].first) + " = *p_res" +
             std::to_string(k) + ";");
      for (size_t k = 0; k < exchanged.size(); ++k) {
        const Var& v = exchanged[k];
        line(ctype(v->type) + " " + var_name(v) + (k < staged ? " = *p_slot" + std::to_string(k) : "{}") + ";");
      }
      for (size_t k = 0; k < staying.size(); ++k) {
        const Var& v = staying[k].first;
        line(ctype(v->type) + " " + var_name(v) + (read_on_entry(v) ? " = *p_stay" + std::to_string(k) : "{}") + ";");
      }
      with_device_stop([&] {
        for (const Stmt& s : stmts) emit(s);
      });
      for (size_t k = 0; k < exchanged.size(); ++k)
        line("*p_slot" + std::to_string(k) + " = " + var_name(exchanged[k]) + ";");
      for (size_t k = 0; k < staying.size(); ++k)
        line("*p_stay" + std::to_string(k) + " = " + var_name(staying[k].first) + ";");
      scopes_.pop_back();
      device_ << "}\n";
    }
    line("{");
    ++indent_;
    for (const auto& [v, slot] : staying) {
      if (read_on_entry(v)) stage_slots({{var_name(v), ctype(v->type)}}, slot);
      region_slots_[v.get()] = slot;
      remark(stmts.front()->loc, "`" + v->name + "` stays on the GPU for the parallel loops after line " +
                                     std::to_string(stmts.back()->loc.end_line));
    }
    emit_launch(index, "1", "1", args, slots_in, slots);
    --indent_;
    line("}");
    remark(stmts.front()->loc, "lines " + std::to_string(first_line) + "-" + std::to_string(last_line) +
                                   " touch array elements outside parallel loops: they run on the GPU in one thread "
                                   "(kernel " + name + ")");
  }

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

  void emit_fill_kernel(ScalarKind kind, int index) {
    const std::string t = ctype(kind);
    device_ << "\nextern \"C\" __global__ void " << kernel_names_[static_cast<size_t>(index)] << "(" << t
            << "* data, int64_t count, " << t << " value, plait::device_error* p_err) {\n"
            << "  if (plait::stopped(p_err)) return;  // an error stops the call\n"
            << "  plait::fill(data, count, value);\n}\n";
  }

  int fill_kernel(ScalarKind kind) {
    auto it = fill_kernels_.find(static_cast<int>(kind));
    if (it != fill_kernels_.end()) return it->second;
    const int index = add_kernel("plait_" + sanitize(fn_.name) + "_fill_" + dtype_suffix(kind), false);
    fill_kernels_[static_cast<int>(kind)] = index;
    return index;
  }

  // ------------------------------------------------------------ host-only statements

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
    const bool needs_kernel = al->fill == FillKind::Ones || al->fill == FillKind::Value;
    const int kernel = needs_kernel ? fill_kernel(a->type.dtype) : -1;
    const std::string value = al->fill_value ? expr(al->fill_value) : t + "()";
    line("{");
    ++indent_;
    line("const int64_t " + shape + "[] = {" + extents + "};");
    line("plait::allocation<" + t + "> " + result + " = plait_cuda::allocate_device_array<" + t + ">(ctx, " +
         loc_args(al->loc) + ", " + std::to_string(a->type.ndim) + ", " + shape + ", " +
         (a->type.layout == Layout::F ? "true" : "false") + ", plait::fill_kind::" + fill + ", " + value + ", " +
         std::to_string(kernel) + ");");
    line("if (!" + result + ".ok) return ctx->error_kind;");
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
    if (device()) return;
    if (array(b->src).has_owner) {
      line(owner(b->dst) + " = " + owner(b->src) + ";");
    } else {
      line(owner(b->dst) + ".reset();");
    }
  }

  const Function& fn_;
  std::string path_;
  // The launch configuration (CompileOptions::cuda_launch) and its threads
  // per block, the block of every kernel but the persistent ones.
  const CudaLaunchConfig launch_;
  // launch_.threads, doubled while a kernel's wide version is emitted.
  int block_size_;
  std::ostringstream host_, device_;
  Mode mode_ = Mode::Host;
  int indent_ = 0;
  int loop_depth_ = 0;  // loops around the statement being emitted, in its own code (host or kernel)
  // Device code: the statement that leaves the thread's work after an
  // error (with_device_stop), empty where the thread cannot leave alone;
  // and how many times the current one was emitted.
  std::string stop_;
  int stop_uses_ = 0;
  int temp_counter_ = 0;
  // The parallel loop being emitted whose reduction results stay on the
  // device, and where they are (scratch slots) until the region after it.
  const For* resident_loop_ = nullptr;
  VarMap<int> resident_slots_;
  // Scalars assigned by a device region that stay on the device for the
  // parallel loops after it in the same block, and their slots.
  VarMap<int> region_slots_;
  int region_slots_used_ = 0;
  VarMap<std::string> var_names_;
  // Statements the emitter makes (a device loop's one-iteration wrapper):
  // kept as long as the emitter lives, since var_names_ and the other maps
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
  ArrayMap<ArrayLocal> arrays_;
  std::unordered_set<std::string> used_names_;
  std::vector<VarSet> scopes_;
  std::vector<std::string> kernel_names_;
  std::map<int, int> fill_kernels_;  // ScalarKind -> kernel index
  bool device_errors_ = false;
  std::vector<bool> kernel_raises_;  // by kernel index (add_kernel)
  bool mute_remarks_ = false;  // while a kernel's loop is emitted a second time
  // While the statements of a persistent kernel's step are emitted (outside
  // its parallel loops' workers): parallel loops become grid-stride loops
  // followed by a barrier.
  bool persistent_step_ = false;
  // The parallel loops of the persistent kernel being emitted that need no
  // barrier after them (step_barriers.h).
  std::set<const For*> barrier_not_needed_;
  // The plan of the persistent kernel being emitted with its arrays in
  // registers (emit_register_kernel), and where in it the emission is: the
  // parallel loop, the slot whose iteration is emitted.
  const RegisterPlan* register_plan_ = nullptr;
  const RegisterLoop* register_loop_ = nullptr;
  int register_slot_ = -1;
  // The worker of emit_device_serial_loop's kernel: one team of the whole block.
  bool whole_block_worker_ = false;
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
    std::string registers;  // the per-thread array of cuda::row_cache_slots elements
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
  // CSR rows staged per block (cuda::staged_rows_loop), while their
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
  std::string group_lane_;
  std::unordered_map<const Store*, std::string> group_stores_;
  // __shared__ declarations of the kernel being emitted, by name.
  std::map<std::string, std::string> shared_decls_;
  std::vector<std::string> assert_messages_;
  std::vector<Remark> remarks_;
};

}  // namespace

CudaSources generate_cuda(const Function& function, const CompileOptions& options) {
  const std::string launch_error = launch_config_error(options.cuda_launch);
  if (!launch_error.empty()) PLAIT_INTERNAL_ERROR("CUDA launch configuration: " + launch_error);
  CudaEmitter emitter(function, options.cuda_launch);
  return emitter.run();
}

}  // namespace plait::codegen
