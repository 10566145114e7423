// The decisions of a team worker's body (docs/cuda.md, "Teams of threads")
// that the CUDA emitter prints: the groups of iterations a thread takes,
// the values kept in registers beside the rows (KernelVersions::cached_rows),
// the spread loops that run their iterations in pairs and the accesses a
// group makes at once, how the spread loops' reductions combine, and, in the
// worker plan itself, the barriers between its statements and the scalars
// lane 0 broadcasts. plan_workers plans them with each team's kernel
// (KernelWorkers::team_body).
#pragma once

#include <map>
#include <vector>

#include "ir/ir.h"
#include "transforms/gpu/worker_plan.h"

namespace plait::transforms::gpu {

struct TeamBody {
  // The consecutive iterations a thread takes at a time in every spread
  // loop (group_width); 1 for a worker that is no team.
  int group_width = 1;
  // The values kept in registers (plan_cached_values), with
  // row_cache_slots(group_width, row_groups) registers each.
  std::vector<CachedValue> cached_values;
  // The spread loops whose iterations run in pairs: those that paired_loop
  // accepts and that keep no rows in registers.
  std::map<const ir::For*, PairedLoop> paired;
  // With groups, each other spread loop's accesses made once per group.
  std::map<const ir::For*, GroupAccesses> groups;
  // Each spread loop's reductions' forms, in the order of its schedule.
  std::map<const ir::For*, std::vector<ReductionForm>> reductions;
};

// Plans the body `body` of the team worker `plan` (the worker as launched),
// whose rows kept in registers are `rows`, with `declared` the scalars
// declared around the body (the host's, the worker's loop variables), for a
// launch that keeps `row_groups` groups in registers: records the barriers
// and broadcasts by statement in `plan` and returns the rest.
TeamBody plan_team_body(WorkerPlan& plan, const ir::Stmt& body, const std::vector<CachedRow>& rows,
                        const ir::VarSet& declared, int row_groups);

}  // namespace plait::transforms::gpu
