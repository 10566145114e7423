// The base of both emitters (c_emitter.h): statements, with the constructs
// that differ by target left to the emitters' hooks; the entry's prologue,
// allocations, bindings and returns.
#include "codegen/c_emitter.h"

namespace plait::codegen {

using namespace ir;

void CEmitter::emit(const Stmt& s) {
  line_directive(s->loc);
  switch (s->kind) {
    case NodeKind::Block:
      line("{");
      ++indent_;
      emit_contents(s);
      --indent_;
      line("}");
      return;
    case NodeKind::Declare:
      return emit_declare(s->as<Declare>());
    case NodeKind::Assign:
      return emit_assign(s->as<Assign>());
    case NodeKind::Store:
      return emit_store(s->as<Store>());
    case NodeKind::AtomicUpdate:
      return emit_atomic(s->as<AtomicUpdate>());
    case NodeKind::If:
      return emit_if(s->as<If>());
    case NodeKind::For:
      return emit_loop(s);
    case NodeKind::While:
      return emit_while(s->as<While>());
    case NodeKind::Break:
      line("break;");
      return;
    case NodeKind::Continue:
      line("continue;");
      return;
    case NodeKind::Assert:
      return emit_assert(s->as<Assert>());
    case NodeKind::Return:
      if (device_code()) PLAIT_INTERNAL_ERROR("a return statement in device code");
      return emit_return(s->as<Return>());
    case NodeKind::Allocate:
      return emit_allocate(s->as<Allocate>());
    case NodeKind::ArrayBind:
      return emit_bind(s->as<ArrayBind>());
    case NodeKind::MatMul:
      return emit_matmul(s->as<MatMul>());
      // Every node kind is named (no default), so that a new node breaks the
      // build until the emitter handles it.
#define PLAIT_EXPR_NODE(n) case NodeKind::n:
#include "ir/ir_nodes.def"
      PLAIT_INTERNAL_ERROR(std::string("not a statement: ") + node_kind_name(s->kind));
  }
}

void CEmitter::nested(const Stmt& s) {
  ++indent_;
  emit_contents(s);
  --indent_;
}

void CEmitter::emit_declare(const Declare* d) {
  if (d->array) return declare_array(d->array);
  line("[[maybe_unused]] " + ctype(d->var->type) + " " + var_name(d->var) + "{};");
  scopes_.back().insert(d->var.get());
}

void CEmitter::emit_assign(const Assign* a) {
  if (declared(a->var.get())) {
    line(var_name(a->var) + " = " + expr(a->value) + ";");
    after_update(a);
  } else {
    // Not declared by the lowering: it lives for the rest of this block.
    line("[[maybe_unused]] " + ctype(a->var->type) + " " + var_name(a->var) + " = " + expr(a->value) + ";");
    scopes_.back().insert(a->var.get());
  }
  if (stops_after(a->value)) emit_stop();
}

void CEmitter::emit_if(const If* i) {
  std::string cond = expr(i->cond);
  if (stops_after(i->cond)) {
    const std::string c = temp("cond");
    line("const bool " + c + " = " + cond + ";");
    emit_stop();
    cond = c;
  }
  line("if (" + cond + ") {");
  nested(i->then_case);
  if (i->else_case) {
    line("} else {");
    nested(i->else_case);
  }
  line("}");
}

std::string CEmitter::blas_matrix(const ArrayVar& x, bool transposed) {
  return data(x) + ", " + stride(x, transposed ? 1 : 0) + ", " + stride(x, transposed ? 0 : 1);
}

std::string CEmitter::gemm_arguments(const MatMul* mm) {
  return dtype_code(mm->c->type.dtype) + ", " + expr(mm->m) + ", " + expr(mm->n) + ", " + expr(mm->k) + ", " +
         expr(mm->alpha) + ", " + blas_matrix(mm->a, mm->a_transposed) + ", " + blas_matrix(mm->b, mm->b_transposed) +
         ", " + (mm->beta ? expr(mm->beta) : std::string("0.0")) + ", " + (mm->beta ? "1" : "0") + ", " +
         blas_matrix(mm->c, false);
}

std::string CEmitter::gemmt_arguments(const MatMul* mm, const std::string& rows) {
  const MatMulTriangle& tri = mm->triangle;
  const std::string second = tri.a2 ? expr(tri.alpha2) + ", " + blas_matrix(tri.a2, tri.a2_transposed) + ", " +
                                          blas_matrix(tri.b2, tri.b2_transposed)
                                    : std::string("0.0, nullptr, 0, 0, nullptr, 0, 0");
  return dtype_code(mm->c->type.dtype) + ", " + (tri.part == MatMulPart::Upper ? "1" : "0") + ", " + rows + ", " +
         expr(mm->k) + ", " + expr(mm->alpha) + ", " + blas_matrix(mm->a, mm->a_transposed) + ", " +
         blas_matrix(mm->b, mm->b_transposed) + ", " + second + ", " +
         (mm->beta ? expr(mm->beta) : std::string("0.0")) + ", " + (mm->beta ? "1" : "0") + ", " +
         blas_matrix(mm->c, false);
}

std::string CEmitter::blas_vector(const MatMulTriangle& tri, const ArrayVar& x) {
  if (!tri.vector_row) return data(x) + ", " + stride(x, 0);
  return data(x) + " + (" + expr(tri.vector_row) + ") * " + stride(x, 0) + ", " + stride(x, 1);
}

void CEmitter::emit_rows_hold(const MatMulTriangle& tri, const std::string& rows, const std::string& ok) {
  line("bool " + ok + " = true;");
  if (!tri.row_condition) return;
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

void CEmitter::emit_while(const While* w) {
  const bool test_first = stops_after(w->cond);
  line(test_first ? "while (true) {" : "while (" + expr(w->cond) + ") {");
  ++loop_depth_;
  ++indent_;
  emit_interrupt_check();
  if (test_first) {
    const std::string c = temp("cond");
    line("const bool " + c + " = " + expr(w->cond) + ";");
    emit_stop();
    line("if (!" + c + ") break;");
  }
  --indent_;
  nested(w->body);
  --loop_depth_;
  line("}");
}

bool CEmitter::ends_with_return(const Stmt& body) {
  if (!body) return false;
  const Block* b = body->as<Block>();
  if (!b) return body->kind == NodeKind::Return;
  return !b->stmts.empty() && b->stmts.back()->kind == NodeKind::Return;
}

void CEmitter::emit_prologue() {
  ArrayCollector arrays;
  arrays.visit(fn_.body);
  for (size_t k = 0; k < fn_.params.size(); ++k) {
    const Param& p = fn_.params[k];
    const std::string arg = "args[" + std::to_string(k) + "]";
    if (p.scalar) {
      const Var& v = p.scalar;
      std::string value;
      if (v->type.is_bool())
        value = "*static_cast<const int32_t*>(" + arg + ") != 0";
      else if (v->type.is_int())
        value = "static_cast<" + ctype(v->type) + ">(*static_cast<const int64_t*>(" + arg + "))";
      else
        value = "static_cast<" + ctype(v->type) + ">(*static_cast<const double*>(" + arg + "))";
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
    const std::string mut = rebound || !const_array_arguments() ? "" : "const ";
    line("const plait_array* const " + view + " = static_cast<const plait_array*>(" + arg + ");");
    line("[[maybe_unused]] " + ctype(a->type.dtype) + "* " + mut + data(a) + " = static_cast<" + ctype(a->type.dtype) +
         "*>(" + view + "->data);");
    for (int d = 0; d < a->type.ndim; ++d) {
      line("[[maybe_unused]] " + mut + "int64_t " + extent(a, d) + " = " + view + "->shape[" + std::to_string(d) +
           "];");
      if (!unit_stride(a->type, d))
        line("[[maybe_unused]] " + mut + "int64_t " + stride(a, d) + " = " + view + "->strides[" + std::to_string(d) +
             "];");
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

void CEmitter::declare_array(const ArrayVar& a) {
  line("[[maybe_unused]] " + ctype(a->type.dtype) + "* " + data(a) + " = nullptr;");
  for (int d = 0; d < a->type.ndim; ++d) {
    line("[[maybe_unused]] int64_t " + extent(a, d) + " = 0;");
    if (!unit_stride(a->type, d)) line("[[maybe_unused]] int64_t " + stride(a, d) + " = 0;");
  }
  if (!device_code()) line("[[maybe_unused]] plait::array_owner " + owner(a) + ";");
}

void CEmitter::emit_return(const Return* r) {
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
      if (type.is_bool())
        line(res + ".b = " + value + " ? 1 : 0;");
      else if (type.is_int())
        line(res + ".i64 = static_cast<int64_t>(" + value + ");");
      else
        line(res + ".f64 = static_cast<double>(" + value + ");");
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

const char* CEmitter::fill_name(FillKind fill) {
  switch (fill) {
    case FillKind::Uninitialized:
      return "uninitialized";
    case FillKind::Zeros:
      return "zeros";
    case FillKind::Ones:
      return "ones";
    case FillKind::Value:
      return "value";
  }
  return "uninitialized";
}

void CEmitter::take_allocation(const ArrayVar& a, const std::string& result) {
  line(data(a) + " = " + result + ".data;");
  for (int d = 0; d < a->type.ndim; ++d) {
    line(extent(a, d) + " = " + result + ".shape[" + std::to_string(d) + "];");
    if (!unit_stride(a->type, d)) line(stride(a, d) + " = " + result + ".strides[" + std::to_string(d) + "];");
  }
  line(owner(a) + " = std::move(" + result + ".owner);");
}

void CEmitter::emit_bind(const ArrayBind* b) {
  line(data(b->dst) + " = " + data(b->src) + ";");
  for (int d = 0; d < b->dst->type.ndim; ++d) {
    line(extent(b->dst, d) + " = " + extent(b->src, d) + ";");
    if (!unit_stride(b->dst->type, d)) line(stride(b->dst, d) + " = " + stride(b->src, d) + ";");
  }
  if (device_code()) return;
  if (array(b->src).has_owner) {
    line(owner(b->dst) + " = " + owner(b->src) + ";");
  } else {
    line(owner(b->dst) + ".reset();");
  }
}

void CEmitter::emit_entry_body() {
  indent_ = 1;
  line("(void)args;");
  line("(void)results;");
  scopes_.emplace_back();
  emit_prologue();
  if (fn_.body) emit_contents(fn_.body);
  if (!ends_with_return(fn_.body)) line("return ctx->error_kind;");
  scopes_.pop_back();
}

CEmitter::LoopBounds CEmitter::declare_loop_bounds(const For* loop) {
  LoopBounds b;
  b.begin = temp("begin");
  b.end = temp("end");
  b.step = temp("step");
  b.trip = temp("trip");
  b.k = temp("k");
  line("const int64_t " + b.begin + " = " + expr(loop->begin) + ";");
  line("const int64_t " + b.end + " = " + expr(loop->end) + ";");
  line("const int64_t " + b.step + " = " + expr(loop->step) + ";");
  return b;
}

void CEmitter::emit_allocation(const Allocate* al, const std::string& allocator, const std::string& extra_args,
                               const std::string& on_failure) {
  const ArrayVar& a = al->array;
  const std::string t = ctype(a->type.dtype);
  const std::string shape = temp("shape");
  const std::string result = temp("alloc");
  std::string extents;
  for (const Expr& e : al->shape) extents += (extents.empty() ? "" : ", ") + index_value(e);
  const std::string value = al->fill_value ? expr(al->fill_value) : t + "()";
  line("{");
  ++indent_;
  line("const int64_t " + shape + "[] = {" + extents + "};");
  line("plait::allocation<" + t + "> " + result + " = " + allocator + "<" + t + ">(ctx, " + loc_args(al->loc) + ", " +
       std::to_string(a->type.ndim) + ", " + shape + ", " + (a->type.layout == Layout::F ? "true" : "false") +
       ", plait::fill_kind::" + fill_name(al->fill) + ", " + value + extra_args + ");");
  if (!on_failure.empty()) line("if (!" + result + ".ok) " + on_failure);
  take_allocation(a, result);
  --indent_;
  line("}");
}

}  // namespace plait::codegen
