// The CUDA emitter: the kernel of a parallel loop and the versions the host chooses
// between at run time (cuda_emitter.h).
#include "codegen/cuda/cuda_emitter.h"

namespace plait::codegen::cuda_emitter {

void CudaEmitter::emit_parallel_kernel(const For* loop) {
  const LoopSchedule& sc = loop->schedule;
  if (analysis::leaves_loop(loop->body))
    PLAIT_INTERNAL_ERROR(std::string(loop_kind_name(sc.kind)) + " loop over `" + loop->var->name +
                         "` contains a break or return; the lowering must make it serial");
  const gpu::WorkerLoopPlan* recorded = gpu::worker_loop_plan(loop);
  if (!recorded || !recorded->kernel)
    PLAIT_INTERNAL_ERROR("the parallel loop over `" + loop->var->name + "` (line " + std::to_string(loop->loc.line) +
                         ") has no worker plan: transforms/gpu/plan_workers must run before the emitter");
  const gpu::KernelWorkers& workers = *recorded->kernel;
  workers_ = &workers;
  if (workers.launch.threads != launch_.threads || workers.launch.max_team != launch_.max_team)
    PLAIT_INTERNAL_ERROR("the workers of the parallel loop over `" + loop->var->name + "` were planned for " +
                         workers.launch.to_string() + ", not " + launch_.to_string());
  const std::vector<const For*> nest = gpu::collapse_nest(loop);
  const For* innermost = nest.back();
  if (static_cast<int>(sc.reductions.size()) > kScratchSlots) {
    throw CompileError(ErrorKind::Unsupported, "too many reductions in one parallel loop for the CUDA target",
                       fn_.source, loop->loc);
  }
  // The kernel's blocks (block(N) of a parallel dimension, or the
  // configured size, which comes back when the kernel is emitted) and its
  // largest team, as planned.
  struct RestoreBlockSize {
    int& size;
    int value;
    ~RestoreBlockSize() { size = value; }
  } const restore_block_size{block_size_, block_size_};
  block_size_ = workers.block;
  const int team_cap = workers.team_cap;

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

  // How workers map to threads as launched, how the host sizes their teams
  // and the kernel's versions, as planned (transforms/gpu/kernel_versions.h).
  const gpu::KernelVersions& versions = workers.versions;
  const WorkerPlan& plan = versions.worker;
  const gpu::PragmaTeam& asked = workers.asked;
  const bool small_team = versions.small_team;
  {
    // What the pragmas' sizes do here, or why they do nothing.
    if (workers.block_pragma)
      remark(*workers.block_pragma, "block(" + std::to_string(block_size_) +
                                        ") of a parallel dimension: the CUDA kernel of the loop "
                                        "at line " +
                                        std::to_string(loop->loc.line) + " has blocks of " +
                                        std::to_string(block_size_) + " threads");
    for (const For* f : nest)
      if (f->schedule.single_block || f->schedule.most_trips > 0)
        remark(f->schedule.pragma_loc,
               "the pragma's " + pragma_sizes(f->schedule) + " is not used on CUDA for a parallel dimension");
    const WorkerPlan& planned = workers.worker;
    SizedLoops sized;
    sized.visit(innermost->body);
    const std::vector<const For*> spread = planned.team ? gpu::spread_loops(planned) : std::vector<const For*>{};
    for (const For* f : sized.loops) {
      if (std::find(spread.begin(), spread.end(), f) != spread.end()) continue;
      remark(f->schedule.pragma_loc,
             "the pragma's " + pragma_sizes(f->schedule) + " is not used on CUDA: " +
                 (planned.team ? "its dimension's loop is not spread over the team of threads that runs each "
                                 "iteration of the parallel loop at line " +
                                     std::to_string(loop->loc.line)
                               : "the parallel loop at line " + std::to_string(loop->loc.line) +
                                     " runs each iteration in one thread"));
    }
  }
  // The host's team size: from the largest trip count of the spread loops
  // it counts (gpu::HostTrips), those whose bounds read the worker's loop
  // variables at the first and the last worker.
  std::string trips;
  // The host's function of the worker's variables that `trips` calls, if
  // any: emitted where the host computes the team from `trips`.
  std::string trips_at_worker;
  if (versions.whole_block) {
    // One worker: the whole block, whatever the trip counts (team_for
    // gives the block's threads from 16 iterations per thread).
    trips = "int64_t(" + std::to_string(16 * block_size_) + ")";
  } else if (plan.team) {
    std::string by_worker;  // trip counts of the spread loops counted at the first and the last worker
    scopes_.emplace_back(nest_vars.begin(), nest_vars.end());
    for (const gpu::HostTrips& h : versions.host_trips) {
      const For* f = h.loop;
      // A loop whose iterations run in pairs counts twice: at most two per thread.
      const std::string t = std::string(h.paired ? "2 * " : "") + "plait::trip_count(" + expr(f->begin) + ", " +
                            expr(f->end) + ", " + expr(f->step) + ")";
      std::string& into = h.per_worker ? by_worker : trips;
      into = into.empty() ? t : "std::max<int64_t>(" + into + ", " + t + ")";
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
  }
  for (const auto& [loc, note] : plan.notes) remark(loc, note);
  const std::vector<ArrayVar>& privatised = versions.privatised;

  if (!versions.temporaries.refusal.empty())
    throw CompileError(ErrorKind::Unsupported, versions.temporaries.refusal, fn_.source,
                       versions.temporaries.refusal_loc);
  std::vector<Temporary> temporaries;
  for (const gpu::Temporary& t : versions.temporaries.arrays) temporaries.push_back({&t, temp("toff"), temp("tcap")});

  // CSR rows staged per block (emit_staged_rows_worker_loop).
  const For* staged = versions.staged;
  const ArrayVar& staged_elements = versions.staged_elements;  // its extent: the rows' total length
  if (!versions.not_staged.empty())
    remark(loop->loc, "the rows of its inner loop are not staged per block: " + versions.not_staged);

  // Several iterations per thread (emit_batched_worker_loop), or the loads
  // of several workers made first.
  const int batch = versions.batch;
  const std::string& unbatched = versions.unbatched;
  const std::vector<const Load*>& prefetch = versions.prefetch;
  if (!prefetch.empty())
    remark(loop->loc, "each thread loads " + std::string(prefetch.size() == 1 ? "the element" : "the elements") +
                          " its workers read first for " + std::to_string(kPrefetchIterations) +
                          " workers before running them (" + unbatched + ")");
  const gpu::ContiguousAccesses& lanes = versions.lanes;

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
  const int width = workers.team_body.group_width;
  // The rows a team's worker keeps in registers between its spread loops,
  // for the test of its version for rows that fit and its temporaries'.
  ScalarMentions worker_written;
  worker_written.visit(innermost->body);
  const std::vector<gpu::CachedRow>& cached_rows = versions.cached_rows;
  // A version with blocks twice as large for rows longer than a block's
  // registers hold.
  const bool wide_version = versions.wide;
  std::string wide;  // host: whether the wide version runs
  if (plan.team) {
    team = temp("team");
    if (!small_team && (!asked.team || wide_version) && !trips_at_worker.empty()) line(trips_at_worker);
    // With groups, a thread's share is counted in groups.
    std::string share = small_team  ? std::string()
                        : width > 1 ? "(" + trips + " + " + std::to_string(width - 1) + ") / " + std::to_string(width)
                                    : trips;
    if (wide_version) {  // read twice
      const std::string shared_trips = temp("share");
      line("const int64_t " + shared_trips + " = " + share + ";");
      share = shared_trips;
    }
    // A whole-block worker's team is the block; other teams stop at the
    // configured largest team.
    const std::string team_args = share + ", " + std::to_string(versions.whole_block ? block_size_ : team_cap) + ", " +
                                  std::to_string(block_size_);
    const std::string team_for = "plait_cuda::team_for(" + team_args + ")";
    if (small_team) {
      line("const int32_t " + team + " = " + std::to_string(kSmallTeam) + ";");
    } else if (asked.team && !wide_version) {
      line("const int32_t " + team + " = " + std::to_string(asked.team) + ";");
    } else if (wide_version) {
      const std::string wide_team = temp("wide_team");
      wide = temp("wide");
      line("const int32_t " + wide_team + " = plait_cuda::team_for(" + share + ", " + std::to_string(2 * block_size_) +
           ", " + std::to_string(2 * block_size_) + ");");
      // Teams are powers of two up to the doubled block: more than the
      // block is the doubled block, the wide version's constant team.
      line("const bool " + wide + " = " + wide_team + " == " + std::to_string(2 * block_size_) + ";");
      line("const int32_t " + team + " = " + wide + " ? " + wide_team + " : " +
           (asked.team ? std::to_string(asked.team) : team_for) + ";");
    } else if (plan.teams_when_few) {
      line("const int32_t " + team + " = " + total + " < " + std::to_string(kFewWorkers) + " ? " + team_for + " : 1;");
    } else {
      // Many workers may share a warp (plait_cuda::team_for's 4 arguments).
      line("const int32_t " + team + " = plait_cuda::team_for(" + team_args + ", " + total + ");");
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
  const bool rows_version = versions.rows;

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
      versions.fit ? rows_fit_test(plan, cached_rows, nest_vars, worker_written.written, cap.local_arrays, team)
                   : std::string();
  if (versions.fit && fit_test.empty())
    PLAIT_INTERNAL_ERROR("the host cannot test whether the rows of the parallel loop over `" + loop->var->name +
                         "` fit in the registers, which its plan counts on");
  const int fit_index = fit_test.empty() ? -1 : add_kernel(name + "_fit", raises);
  const int wide_fit_index = fit_index >= 0 && wide_version ? add_kernel(name + "_wide_fit", raises) : -1;
  // A team kernel whose loops keep no rows in registers has a version for
  // teams of a warp, the team as a constant, which the host runs when its
  // rule gives a warp.
  const int warp_index = versions.warp ? add_kernel(name + "_warp", raises) : -1;
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
      for (const Temporary& t : temporaries) temp_offsets_[t.planned->alloc] = {t.offset, t.capacity};
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
        emit_staged_rows_worker_loop(plan, levels.front(), staged, emit_loop_variables);
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
        emit_team_body(plan);
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
        line("for (int64_t p_bin = threadIdx.x; p_bin < " + extent(privatised[p], 0) + "; p_bin += blockDim.x) " +
             copies[p] + "[p_bin] = 0;");
        private_copies_[privatised[p].get()] = copies[p];
      }
      line("__syncthreads();");
      emit_worker_loop();
      private_copies_.clear();
      line("__syncthreads();");
      for (size_t p = 0; p < privatised.size(); ++p) {
        const ArrayVar& a = privatised[p];
        line("for (int64_t p_bin = threadIdx.x; p_bin < " + extent(a, 0) + "; p_bin += blockDim.x)");
        line("  if (" + copies[p] + "[p_bin] != 0) plait::atomic_add<" + ctype(a->type.dtype) + ">(&" + data(a) + "[" +
             offset(a, {"p_bin"}) + "], " + copies[p] + "[p_bin]);");
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
      const bool propagating = workers.reduction_forms[r] == gpu::ReductionForm::NanPropagating;
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
  const int64_t cap_blocks =
      sc.reductions.empty() && privatised.empty() && !asked.long_rows ? kMaxBlocks : kMaxReductionBlocks;
  const std::string threads = plan.team ? total + " * " + team
                              : batch > 1
                                  ? "(" + total + " + " + std::to_string(batch - 1) + ") / " + std::to_string(batch)
                                  : total;
  auto grid_of = [&](int block) {
    return "plait_cuda::grid_for(" + threads + ", " + std::to_string(block) + ", " + std::to_string(cap_blocks) + ")";
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
    const std::string in_registers =
        versions.temporaries.in_registers
            ? temporaries_in_registers(plan, cached_rows, nest_vars, worker_written.written, cap.local_arrays,
                                       temporaries, team)
            : "";
    if (versions.temporaries.in_registers && in_registers.empty())
      PLAIT_INTERNAL_ERROR("the host cannot test whether the temporaries of the parallel loop over `" +
                           loop->var->name + "` stay in registers, which its plan counts on");
    grid = emit_temporaries_buffer(versions.temporaries, temporaries, levels, total, grid,
                                   plan.team ? std::to_string(block_size_) + " / " + team : std::to_string(block_size_),
                                   temps_buffer, temps_stride, in_registers);
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
                  "plait_cuda::grid_for_rows(" + tiles + ", " + total + " / " + inner + ", " + most + ")", block_size_);
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
  emit_last_values(levels);
  --indent_;
  line("}");

  std::string what = "parallel loop over `" + loop->var->name + "`";
  if (nest.size() > 1) {
    what += " (collapsed with";
    for (size_t d = 1; d < nest.size(); ++d) what += " `" + nest[d]->var->name + "`";
    what += ")";
  }
  const std::string share =
      "n / " + std::to_string(4 * width) +
      (width > 1 ? " (each thread takes groups of " + std::to_string(width) + " consecutive iterations, about 4 groups)"
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
    remark(loop->loc,
           what + ": CUDA kernel " + name + ", one team of " + std::to_string(kSmallTeam) +
               " threads per iteration, blocks of " + std::to_string(block_size_) +
               " threads, grid-stride loop over iterations: the trip counts of its inner loops vary "
               "between iterations and are not known before the launch, so the team is small (short "
               "rows leave few threads idle; its threads read consecutive elements of a row)" +
               (staged ? "; when `" + staged_elements->name + "` holds at most " + std::to_string(kStagedRowElements) +
                             " elements per iteration (checked at each launch), its staged version " +
                             kernel_names_[static_cast<size_t>(staged_index)] +
                             " runs instead: the rows of the loop over `" + staged->var->name + "` (line " +
                             std::to_string(staged->loc.line) +
                             ") are consecutive ranges, so each block first computes the terms of "
                             "its workers' rows together, consecutive threads on consecutive "
                             "elements, into shared memory (up to " +
                             std::to_string(kStagedElements) +
                             " per block), then each team sums its row's; a block whose rows hold "
                             "more runs them directly"
                       : std::string()));
  } else if (plan.team && asked.team) {
    remark(loop->loc, what + ": CUDA kernel " + name + ", one team of " + std::to_string(asked.team) +
                          " threads per iteration (" + asked.asked_by + "), blocks of " + std::to_string(block_size_) +
                          " threads, grid-stride loop over iterations");
  } else if (plan.team) {
    remark(loop->loc, what + ": CUDA kernel " + name + ", one team of threads per iteration, blocks of " +
                          std::to_string(block_size_) +
                          " threads, grid-stride loop over iterations; the team "
                          "has 32 (a warp) to " +
                          std::to_string(team_cap) +
                          " threads, chosen at launch from the inner trip count n as the "
                          "smallest power of two >= " +
                          share +
                          ", or fewer than 32 where the iterations are many: the smallest power of two from 2 that "
                          "leaves each thread at most 2 " +
                          (width > 1 ? "groups" : "iterations") + " and the iterations 131072 threads, when below 32");
  } else if (batch > 1) {
    std::string text = what + ": CUDA kernel " + name + ", " + std::to_string(batch) +
                       " iterations per thread, "
                       "blocks of " +
                       std::to_string(block_size_) + " threads, each covering " + std::to_string(batch * block_size_) +
                       " consecutive iterations, grid-stride loop; "
                       "statement by statement, a thread computes the values of all its iterations before it "
                       "stores any, so that their loads are in flight together (correct for in-place and "
                       "aliased arrays: each iteration keeps its own order, and the iterations of a parallel "
                       "loop are independent)";
    if (!lanes.loads.empty() || !lanes.stores.empty()) {
      text += "; when the loop step is 1 and the first iteration's addresses of the " +
              std::to_string(lanes.loads.size() + lanes.stores.size()) +
              " accesses at the loop variable plus "
              "fixed terms are aligned (checked at each launch), a thread takes " +
              std::to_string(batch) +
              " consecutive iterations and makes each of those accesses as one vector load or store (16 bytes "
              "for float32)";
    }
    if (rows_version) {
      text += "; when the innermost loop's trip count n fills tiles of " + std::to_string(batch * block_size_) +
              " iterations with at most n / 8 left over (checked at each launch), the kernel's rows version " +
              kernel_names_[static_cast<size_t>(rows_index)] +
              " runs instead: a block takes a tile of the "
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
      remark(
          loop->loc,
          what +
              ": when every row kept in registers fits in them (each loop that keeps one runs at "
              "most " +
              std::to_string(gpu::row_cache_slots(width, launch_.row_groups)) + " iterations per thread of the team" +
              (width > 1 ? ", in whole groups of " + std::to_string(width) : std::string()) +
              ", checked at each launch), the kernel's version " + kernel_names_[static_cast<size_t>(fit_index)] +
              (wide_fit_index >= 0 ? " (or " + kernel_names_[static_cast<size_t>(wide_fit_index)] + " for the wide one)"
                                   : std::string()) +
              " runs instead, without the code for iterations beyond the registers" +
              (width > 1 ? " or for a partial group" : std::string()));
  }
  for (const Reduction& r : sc.reductions) {
    remark(loop->loc, std::string(reduce_op_name(r.op)) + "-reduction of `" + r.var->name +
                          "` on the GPU: warp shuffles, then one atomic per warp");
  }
  for (const ArrayVar& a : privatised) {
    remark(loop->loc, "`#pragma atomic` updates of `" + a->name +
                          "` go to a copy in shared memory per block when it "
                          "has at most " +
                          std::to_string(kPrivateCopyBytes / element_bytes(a->type.dtype)) +
                          " elements, then one atomic per non-zero element per block");
  }
}

void CudaEmitter::emit_last_values(const std::vector<NestLevel>& levels) {
  for (const NestLevel& lv : levels) {
    const Var& v = lv.loop->var;
    if (!declared(v.get())) continue;
    line("if (" + lv.trip + " > 0) " + var_name(v) + " = static_cast<" + ctype(v->type) + ">(" + lv.begin + " + (" +
         lv.trip + " - 1) * " + lv.step + ");");
  }
}

}  // namespace plait::codegen::cuda_emitter
