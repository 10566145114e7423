// The CPU emitter: statements, stores and atomic updates, returns,
// allocations and bindings, and how code stops after a run-time error
// (cpp_emitter.h).
#include "codegen/cpu/cpp_emitter.h"

namespace plait::codegen::cpu {

void CppEmitter::emit_contents(const Stmt& s) {
  scopes_.emplace_back();
  if (const Block* b = s->as<Block>()) {
    for (const Stmt& st : b->stmts) emit(st);
  } else {
    emit(s);
  }
  scopes_.pop_back();
}

void CppEmitter::emit_declare(const Declare* d) {
  if (const ArrayVar& a = d->array) {
    // Emptied, which frees the previous iteration's storage before the next
    // allocation (as leaving its scope did).
    if (region_ && region_->hoisted_arrays.count(a.get())) {
      line(data(a) + " = nullptr;");
      for (int k = 0; k < a->type.ndim; ++k) line(extent(a, k) + " = 0;");
      line(owner(a) + ".reset();");
      return;
    }
  } else if (region_ && region_->hoisted_vars.count(d->var.get())) {
    line(var_name(d->var) + " = " + ctype(d->var->type) + "{};");
    return;
  }
  CEmitter::emit_declare(d);
}

void CppEmitter::emit_matmul(const MatMul* mm) {
  const MatMulTriangle& tri = mm->triangle;
  if (tri.part == MatMulPart::StrictUpperInPlace || tri.part == MatMulPart::SymmetricLower)
    PLAIT_INTERNAL_ERROR("an in-place or symmetric library product on the CPU target (its BLAS has gemm, gemmt, trsv)");
  const std::string status = temp("blas");
  const std::string dtype = dtype_code(mm->c->type.dtype);
  if (tri.part == MatMulPart::Full) {
    line("const int32_t " + status + " = ctx->blas ? ctx->blas->gemm(ctx, " + gemm_arguments(mm) + ") : 1;");
  } else {
    line("int32_t " + status + " = 1;");
    line("if (ctx->blas) {");
    ++indent_;
    const std::string rows = temp("rows"), ok = temp("ok");
    line("const int64_t " + rows + " = " + expr(mm->m) + ";");
    emit_rows_hold(tri, rows, ok);
    const std::string call = tri.part == MatMulPart::LowerSolve
                                 ? "ctx->blas->trsv(ctx, " + dtype + ", " + rows + ", " +
                                       blas_matrix(mm->a, mm->a_transposed) + ", " + blas_vector(tri, mm->b) + ", " +
                                       blas_vector(tri, mm->c) + ")"
                                 : "ctx->blas->gemmt(ctx, " + gemmt_arguments(mm, rows) + ")";
    line("if (" + ok + ") " + status + " = " + call + ";");
    --indent_;
    line("}");
  }
  line("if (" + status + " != 0) {");
  nested(mm->loops);
  line("}");
}

void CppEmitter::emit_assert(const Assert* a) {
  line("if (!(" + expr(a->cond) + ")) {");
  ++indent_;
  line("plait::raise_error(ctx, " + std::to_string(a->error_kind) + ", " + loc_args(a->loc) + ", \"" +
       escape_path(a->message) + "\");");
  PLAIT_ASSERT(!stop_.empty());  // no check in a vector loop (scalarize_raising_loops)
  line(stop_);
  ++stop_uses_;
  --indent_;
  line("}");
}

void CppEmitter::after_update(const Assign* a) {
  if (auto flag = reset_flags_.find(a->var.get()); flag != reset_flags_.end())
    line(flag->second + " = " + flag->second + " || " + var_name(a->var) + " != " + var_name(a->var) + ";");
}

void CppEmitter::emit_store(const Store* st) {
  emit_element_update(
      st->array, st->indices, st->value, st->checked, st->loc,
      [&](const std::string& element, const std::string& value) { return element + " = " + value + ";"; });
}

void CppEmitter::emit_atomic(const AtomicUpdate* u) {
  const std::string fn = atomic_function(u->op, u->array->type.dtype);
  emit_element_update(
      u->array, u->indices, u->value, u->checked, u->loc,
      [&](const std::string& element, const std::string& value) { return fn + "(&" + element + ", " + value + ");"; });
}

void CppEmitter::emit_allocate(const Allocate* al) {
  // A failed allocation stops the code like any error; where nothing can
  // leave (a vector loop, a thread's temporaries) the array stays empty and
  // the construct around it stops.
  emit_allocation(al, "plait::allocate_array", "", stop_);
  if (!stop_.empty()) ++stop_uses_;
}

void CppEmitter::stop_on_error() {
  if (stop_.empty()) return;
  // In an iteration of a parallel loop, another thread's error in a later
  // iteration does not stop this one (plait::stops).
  line(std::string("if (__builtin_expect(ctx->error_kind != 0, 0)") +
       (parallel_iterations_ > 0 ? " && plait::stops(ctx)) " : ") ") + stop_);
  ++stop_uses_;
}

void CppEmitter::emit_interrupt_check() {
  if (stop_.empty() || region_ || omp_depth_ > 0) return;
  line("if (__builtin_expect(plait::interrupted(ctx), 0)) " + stop_);
  ++stop_uses_;
}

}  // namespace plait::codegen::cpu
