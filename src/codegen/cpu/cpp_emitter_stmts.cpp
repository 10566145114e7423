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

void CppEmitter::emit(const Stmt& s) {
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
    case NodeKind::Store:
      return emit_store(s->as<Store>());
    case NodeKind::AtomicUpdate:
      return emit_atomic(s->as<AtomicUpdate>());
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
    case NodeKind::Continue:
      line("continue;");
      return;
    case NodeKind::Return:
      return emit_return(s->as<Return>());
    case NodeKind::Allocate:
      return emit_allocate(s->as<Allocate>());
    case NodeKind::ArrayBind:
      return emit_bind(s->as<ArrayBind>());
    case NodeKind::MatMul:  // offload_matmul runs on the CUDA target only
      PLAIT_INTERNAL_ERROR("a library matrix product on the CPU target");
      // Every node kind is named (no default), so that a new node breaks the
      // build until the emitter handles it.
#define PLAIT_EXPR_NODE(n) case NodeKind::n:
#include "ir/ir_nodes.def"
      PLAIT_INTERNAL_ERROR(std::string("not a statement: ") + node_kind_name(s->kind));
  }
}

void CppEmitter::emit_assign(const Assign* a) {
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

void CppEmitter::emit_while(const While* w) {
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

void CppEmitter::nested(const Stmt& s) {
  ++indent_;
  emit_contents(s);
  --indent_;
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

std::vector<const For*> CppEmitter::collapse_nest(const For* outer) {
  std::vector<const For*> nest{outer};
  VarSet vars{outer->var.get()};
  while (static_cast<int>(nest.size()) < outer->schedule.collapse) {
    const For* inner = single_loop(nest.back()->body);
    if (!inner) return nest;
    if (analysis::reads_any(inner->begin, vars) || analysis::reads_any(inner->end, vars) ||
        analysis::reads_any(inner->step, vars))
      return nest;
    nest.push_back(inner);
    vars.insert(inner->var.get());
  }
  return nest;
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
