// The CUDA emitter: worker loops over CSR rows staged in shared memory, and batched
// worker loops (several iterations per thread) (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

void CudaEmitter::emit_staged_rows_worker_loop(const WorkerPlan& plan, const NestLevel& level, const For* staged,
                                               const std::function<void()>& emit_loop_variables) {
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
  line("const bool p_staged = p_lo <= p_hi && (uint64_t)p_hi - (uint64_t)p_lo <= " + std::to_string(kStagedElements) +
       "u;");
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
  emit_team_body(plan);
  staged_loop_ = nullptr;
  loop_depth_ = 0;
  scopes_.pop_back();
  --indent_;
  line("}");
  --indent_;
  line("}");
}

void CudaEmitter::emit_batched_worker_loop(const std::vector<NestLevel>& levels, const Stmt& body, int batch,
                                           const gpu::ContiguousAccesses& lanes, bool rows) {
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
      const std::string test = "plait::lanes_aligned<" + ctype(a->type.dtype) + ", " + width + ">(" + data(a) + " + (" +
                               offset(a, indices_of(indices)) + "))";
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

}  // namespace plait::codegen::cuda_emitter
