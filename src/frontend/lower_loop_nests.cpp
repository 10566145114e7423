// Lowering of array expressions: the loop nests that assignments of array
// expressions become, and arrays materialised from tensors (array_lowering.h).
#include "frontend/array_lowering.h"

namespace plait::lowering {

std::vector<Stmt> Lowerer::build_nest(const std::vector<LoopDim>& dims, Sink& inner, std::vector<Stmt> innermost,
                                      Sink& outer) {
  // The level of a group: 1 + the deepest loop whose index it reads, and no
  // less than any earlier group whose results it reads.
  std::vector<size_t> level(inner.groups.size(), 0);
  std::vector<ir::VarSet> writes(inner.groups.size());
  for (size_t g = 0; g < inner.groups.size(); ++g) {
    analysis::VarUses u;
    for (const auto& s : inner.groups[g]) {
      analysis::VarUses su = analysis::uses_of(s);
      u.reads.insert(su.reads.begin(), su.reads.end());
      u.writes.insert(su.writes.begin(), su.writes.end());
    }
    writes[g] = u.writes;
    for (size_t d = 0; d < dims.size(); ++d)
      if (u.reads.count(dims[d].var.get())) level[g] = std::max(level[g], d + 1);
    for (size_t h = 0; h < g; ++h)
      for (const auto* w : writes[h])
        if (u.reads.count(w)) level[g] = std::max(level[g], level[h]);
  }
  std::vector<Stmt> body = std::move(innermost);
  for (size_t d = dims.size(); d-- > 0;) {
    std::vector<Stmt> here;
    for (size_t g = 0; g < inner.groups.size(); ++g)
      if (level[g] == d + 1) here.insert(here.end(), inner.groups[g].begin(), inner.groups[g].end());
    here.insert(here.end(), body.begin(), body.end());
    ir::LoopSchedule sched = dims[d].schedule;
    // A vector loop whose body holds loops would not vectorise: keep those in
    // order (their own inner loops are vectorised instead).
    bool has_loop = false;
    for (const auto& s : here) has_loop = has_loop || s->as<ir::For>() || s->as<ir::Block>();
    if (has_loop && ir::is_vectorized(sched.kind))
      sched.kind = ir::is_parallel(sched.kind) ? ir::LoopKind::Parallel : ir::LoopKind::Serial;
    Stmt loop =
        ir::For::make(dims[d].var, int_imm(0, dims[d].extent->loc), dims[d].extent, int_imm(1, dims[d].extent->loc),
                      ir::Block::make(here, dims[d].extent->loc), sched, dims[d].extent->loc);
    body = {loop};
  }
  for (size_t g = 0; g < inner.groups.size(); ++g)
    if (level[g] == 0) outer.groups.push_back(inner.groups[g]);
  return body;
}

void Lowerer::assign_tensor(const TensorPtr& target, const TensorPtr& value_in, std::vector<Stmt>& out, SourceLoc loc,
                            const ast::Stmt* stmt) {
  if (!target->array) PLAIT_INTERNAL_ERROR("assignment target is not a view");
  TensorPtr value = value_in;
  if (value->rank() > target->rank())
    fail(ErrorKind::Value,
         "could not broadcast an array of " + std::to_string(value->rank()) + " dimensions into a target of " +
             std::to_string(target->rank()),
         loc);
  // NumPy evaluates the right side before it stores. When the right side
  // reads the target's array other than at the element being written, the
  // nest must not see its own stores there: either the views that read those
  // elements are copied first (snapshots, when they are small: a row and a
  // column of the target), or the whole value goes through a temporary.
  bool overlap = false;
  std::vector<std::shared_ptr<ViewSnapshot>> snapshots;
  for (const auto& read : value->reads) {
    if (read.array != target->array) continue;
    bool same_elements =
        read.node && target->source &&
        (same_tree(read.node, target->source) || (whole_array_syntax(read.node) && whole_array_syntax(target->source)));
    if (same_elements) continue;
    overlap = true;
    if (std::find(snapshots.begin(), snapshots.end(), read.via) == snapshots.end()) snapshots.push_back(read.via);
  }
  double snapshot_cost = 0;
  for (const auto& snap : snapshots) snapshot_cost += estimated_elements(snap->view->shape);
  const bool use_snapshots = overlap && snapshot_cost < estimated_elements(target->shape);
  if (use_snapshots && !inferring_) {
    std::string what;
    for (const auto& snap : snapshots) {
      snap->copy = materialize(snap->view, out, loc, nullptr);
      std::string text = snap->node ? source_text(snap->node->loc) : "";
      what += (what.empty() ? "'" : ", '") + (text.empty() ? target->array->name : text) + "'";
    }
    function_remarks_.push_back({loc, "lower_array_exprs",
                                 "the right side reads '" + target->array->name +
                                     "' at other elements than it writes, through " + what +
                                     ": copied into small temporaries first (not the whole right side)"});
  } else if (overlap && !inferring_) {
    ir::ArrayVar tmp = materialize(value, out, loc, nullptr);
    Value v = Value::of_array(tmp, loc);
    value = to_tensor(v, loc);
    function_remarks_.push_back({loc, "lower_array_exprs",
                                 "the right side reads '" + target->array->name +
                                     "' where it is also written: it is computed into a temporary first"});
  }
  // Another array that may share memory with the target (two arguments
  // that are views of one buffer, `f(g[1:], g[:-1])`) escapes the test
  // above, which compares names. The statement is versioned on a run-time
  // test of whether their memory overlaps: the nest as it stands when it
  // does not (the usual case), the right side through a temporary when it
  // does. A read at the elements it writes (`a[:] = b + 1.0`) is safe when
  // the two are one view: the test leaves that case to the nest. Inside a
  // parallel or simd loop the user promises independent iterations, and a
  // copy allocated per iteration would cost (and on the GPU need a size the
  // host computes): no test there.
  Expr shares_memory;
  std::string sharing;
  if (!inferring_ && parallel_depth_ == 0 && may_alias_argument(target->array.get())) {
    std::set<std::pair<const ir::ArrayInfo*, bool>> tested;
    for (const auto& read : value->reads) {
      if (read.array == target->array || !may_alias_argument(read.array.get())) continue;
      const bool same_elements = read.node && target->source && same_subscripts(read.node, target->source);
      if (!tested.insert({read.array.get(), same_elements}).second) continue;
      Expr test = ir::ArraysOverlap::make(target->array, read.array, same_elements, loc);
      shares_memory = shares_memory ? ir::Logical::make(ir::LogicalOp::Or, shares_memory, test, loc) : test;
      if (sharing.find("'" + read.array->name + "'") == std::string::npos)
        sharing += (sharing.empty() ? "'" : ", '") + read.array->name + "'";
    }
  }
  size_t offset = target->rank() - value->rank();
  std::vector<ir::Var> flags(value->rank());
  for (size_t d = 0; d < value->rank(); ++d) {
    const Expr& te = target->shape[d + offset];
    const Expr& ve = value->shape[d];
    if (value->unit[d] || same_expr(te, ve) || inferring_) continue;
    out.push_back(ir::Assert::make(
        ir::Logical::make(ir::LogicalOp::Or, ir::Compare::make(ir::CompareOp::EQ, te, ve, loc),
                          ir::Compare::make(ir::CompareOp::EQ, ve, int_imm(1, loc), loc), loc),
        PLAIT_VALUE_ERROR, "could not broadcast the value into the target's shape (extents differ)", loc));
    flags[d] = broadcast_flag(ve, te, out, loc);
  }
  std::vector<LoopDim> dims;
  std::vector<Expr> idx;
  for (size_t d = 0; d < target->rank(); ++d) {
    LoopDim dim;
    dim.extent = target->shape[d];
    dim.label = target->labels[d];
    if (dim.label.empty() && d >= offset) dim.label = value->labels[d - offset];
    // A dimension of extent 1 (the kept axis of a keepdims reduction) needs
    // no loop, unless a sliced-index pragma names it.
    if (is_const(dim.extent, 1) && !sliced_pragmas_.count(dim.label)) {
      idx.push_back(int_imm(0, loc));
      continue;
    }
    dim.var = temp_var(ScalarType::py_int(), loc);
    dim.var->name = "_i" + dim.var->name.substr(4);
    idx.push_back(ir::VarRef::make(dim.var, loc));
    dims.push_back(dim);
  }
  // Default: the outermost loop runs in parallel (the back end starts
  // threads only when the work pays for them), the innermost is vectorised.
  // On the GPU every dimension but the innermost is parallel: the nest
  // collapses into one grid of workers (a matrix product's rows and
  // columns, a 4-D softmax's rows), where the outermost extent alone can be
  // a few workers. A sliced-index pragma replaces that for the dimensions
  // it names.
  const bool gpu = options_.target == Target::CUDA;
  for (size_t d = 0; d < dims.size(); ++d) {
    bool par = (d == 0 || (gpu && d + 1 < dims.size())) && !statement_sequential_ && sliced_pragmas_.empty();
    bool vec = d + 1 == dims.size() && sliced_pragmas_.empty();
    dims[d].schedule.kind = par && vec ? ir::LoopKind::ParallelVectorized
                            : par      ? ir::LoopKind::Parallel
                            : vec      ? ir::LoopKind::Vectorized
                                       : ir::LoopKind::Serial;
    dims[d].schedule = apply_sliced_pragma(dims[d], dims[d].schedule, "");
  }
  if (options_.auto_simd && !sliced_pragmas_.empty() && !dims.empty()) {
    ir::LoopSchedule& inner = dims.back().schedule;
    if (!ir::is_vectorized(inner.kind))
      inner.kind = ir::is_parallel(inner.kind) ? ir::LoopKind::ParallelVectorized : ir::LoopKind::Vectorized;
  }
  // Appends the nest storing `from` (the value, or its copy) into the
  // target; its loops go to `nest_dims`. Returns whether an element
  // computes loops of its own (reductions).
  auto store_nest = [&](const TensorPtr& from, std::vector<Stmt>& into, std::vector<LoopDim>& nest_dims) {
    nest_dims = dims;
    std::vector<Expr> vidx;
    for (size_t d = 0; d < from->rank(); ++d)
      vidx.push_back(from->unit[d] ? int_imm(0, loc) : broadcast_index(flags[d], idx[d + offset], loc));
    Sink inner;
    Expr e = from->element(vidx, inner);
    // On the GPU an element computed by a loop of its own (a reduction along
    // an axis) makes the innermost dimension parallel too: that loop is the
    // worker's inner loop, as the innermost dimension is for an elementwise
    // statement, so the nests of `m = x.max(axis=-1, keepdims=True)` and
    // `e = np.exp(x - m)` keep the same parallel levels and fuse.
    if (gpu && !nest_dims.empty() && !statement_sequential_ && sliced_pragmas_.empty()) {
      bool has_loop = false;
      for (const auto& group : inner.groups)
        for (const Stmt& st : group) has_loop = has_loop || st->as<ir::For>() != nullptr;
      if (has_loop) nest_dims.back().schedule.kind = ir::LoopKind::Parallel;
    }
    ScalarType elem{target->array->type.dtype, false};
    Stmt store = ir::Store::make(target->array, target->array_index(idx), cast(e, elem, true), false, loc);
    Sink outer;
    std::vector<Stmt> nest = build_nest(nest_dims, inner, {store}, outer);
    for (auto& g : outer.groups) into.insert(into.end(), g.begin(), g.end());
    into.insert(into.end(), nest.begin(), nest.end());
    return !inner.groups.empty();
  };
  std::vector<LoopDim> nest_dims;
  bool reduces = false;
  if (shares_memory) {
    ir::Var flag = temp_var(ScalarType::b1(), loc);
    flag->name = "_overlap" + flag->name.substr(4);
    out.push_back(ir::Assign::make(flag, shares_memory, loc));
    std::vector<Stmt> copied, direct;
    ir::ArrayVar copy = materialize(value, copied, loc, nullptr);
    std::vector<LoopDim> copy_dims;
    store_nest(to_tensor(Value::of_array(copy, loc), loc), copied, copy_dims);
    reduces = store_nest(value, direct, nest_dims);
    out.push_back(
        ir::If::make(ir::VarRef::make(flag, loc), ir::Block::make(copied, loc), ir::Block::make(direct, loc), loc));
    function_remarks_.push_back({loc, "lower_array_exprs",
                                 "'" + target->array->name + "' and " + sharing +
                                     " may share memory (arguments can be views of one array): a run-time test of "
                                     "their memory picks the right side through a temporary when they overlap, the "
                                     "loop nest below when not"});
  } else {
    reduces = store_nest(value, out, nest_dims);
  }
  if (use_snapshots)
    for (const auto& snap : snapshots) snap->copy = nullptr;
  std::string shape;
  for (size_t d = 0; d < nest_dims.size(); ++d) {
    const char* kind = ir::loop_kind_name(nest_dims[d].schedule.kind);
    shape += (d ? ", " : "") + std::string(kind) + (nest_dims[d].label.empty() ? "" : " " + nest_dims[d].label);
  }
  function_remarks_.push_back(
      {loc, "lower_array_exprs",
       "array statement -> one loop nest over '" + target->array->name + "' [" + shape + "]" +
           (reduces ? "; reductions computed inside it, hoisted to the loop they depend on" : "")});
}

ir::ArrayVar Lowerer::materialize(const TensorPtr& t, std::vector<Stmt>& out, SourceLoc loc, const ast::Stmt* stmt) {
  if (t->rank() == 0) unsupported("a 0-dimensional array result is not supported", loc);
  ArrayType at;
  at.dtype = t->type.kind;
  at.ndim = static_cast<int>(t->rank());
  at.layout = Layout::C;
  ir::ArrayVar tmp = temp_array(at, loc);
  array_units_[tmp] = t->unit;
  if (inferring_) return tmp;
  out.push_back(ir::Allocate::make(tmp, t->shape, ir::FillKind::Uninitialized, nullptr, loc));
  // The new array's extents are the expression's own, which spares the
  // store any broadcast check.
  auto target = std::make_shared<Tensor>(*to_tensor(Value::of_array(tmp, loc), loc));
  target->shape = t->shape;
  target->labels = t->labels;
  assign_tensor(target, t, out, loc, stmt);
  return tmp;
}

}  // namespace plait::lowering
