// The CUDA emitter: loops a team of threads spreads over its lanes, and pairs of them
// fused into one pass (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

void CudaEmitter::emit_spread_loop(const For* loop, size_t index, const LoopRegisters* registers) {
  const gpu::TeamBody& team_body = workers_->team_body;
  if (auto paired = team_body.paired.find(loop); paired != team_body.paired.end())
    return emit_paired_spread_loop(loop, paired->second);
  const std::vector<gpu::ReductionForm>& forms = team_body.reductions.at(loop);
  line_directive(loop->loc);
  line("{");
  ++indent_;
  const std::string begin = temp("begin"), end = temp("end"), step = temp("step"), trip = temp("trip"), k = temp("k");
  const bool staged = loop == staged_loop_;  // its bounds and terms are in shared memory
  line("const int64_t " + begin + " = " + (staged ? "p_bounds[p_slot]" : expr(loop->begin)) + ";");
  line("const int64_t " + end + " = " + (staged ? "p_bounds[p_slot + 1]" : expr(loop->end)) + ";");
  line("const int64_t " + step + " = " + expr(loop->step) + ";");
  line("const int64_t " + trip + " = plait::trip_count(" + begin + ", " + end + ", " + step + ");");
  std::vector<std::string> before;
  std::string nan_seen;  // OrderDependent reductions: whether this thread saw a NaN
  for (size_t i = 0; i < loop->schedule.reductions.size(); ++i) {
    const Reduction& r = loop->schedule.reductions[i];
    const std::string b = temp("before");
    before.push_back(b);
    line("const " + ctype(r.var->type) + " " + b + " = " + var_name(r.var) + ";");
    line(var_name(r.var) + " = " + reduction_identity(r.op, r.var->type.kind) + ";");
    if (forms[i] != gpu::ReductionForm::OrderDependent) continue;
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
    line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin +
         " + " + k + " * " + step + ");");
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
  const gpu::GroupAccesses group = width > 1 ? team_body.groups.at(loop) : gpu::GroupAccesses{};
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
        const std::string t =
            "plait::lanes_aligned<" + ctype(a->type.dtype) + ", " + w + ">(" + address(a, indices) + ")";
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
            remark(s->loc, "the update of `" + s->array->name +
                               "` is a minimum or maximum with its old value: "
                               "each group of " +
                               w + " stores its elements only when one of them changed");
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
    const int per_thread = gpu::row_cache_slots(width, launch_.row_groups) / width;  // groups (iterations) in registers
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
      const gpu::CachedRow* row = row_and_name.first;
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
            line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" +
                 begin + " + " + k + " * " + step + ");");
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
      const std::string op = combine_functor(forms[r], red);
      line(var_name(red.var) + " = " + op + "(" + before[r] + ", plait::team_combine(" + var_name(red.var) + ", " + op +
           ", p_team, " + partials + "));");
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
    line("[[maybe_unused]] " + ctype(v->type) + " " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin +
         " + " + k + " * " + step + ");");
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
    remark(loop->loc, "loop over `" + v->name +
                          "`: a max/min(x, m) reduction depends on the order when x is NaN: "
                          "the team runs the loop again in order when it sees one");
  }
  if (declared(v.get())) {
    line("if (" + trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + begin + " + (" + trip +
         " - 1) * " + step + ");");
  }
  --indent_;
  line("}");
}

void CudaEmitter::emit_paired_spread_loop(const For* loop, const gpu::PairedLoop& paired) {
  line_directive(loop->loc);
  line("{");
  ++indent_;
  const std::string begin = temp("begin"), end = temp("end"), step = temp("step"), trip = temp("trip"), k = temp("k"),
                    second = temp("in");
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

}  // namespace plait::codegen::cuda_emitter
