// What a piece of IR touches: the arrays and scalars it reads and writes, and
// what else it does (record a run-time error, allocate, leave a loop, hold a
// parallel loop). The CPU's parallel regions are planned from it
// (transforms/cpu/plan_parallel_regions.h, plan_region_statements.h), and the
// CPU emitter estimates their work with it.
#pragma once

#include <set>

#include "analysis/raises.h"
#include "ir/ir.h"

namespace plait::analysis {

class AccessScan : public RaiseScan {
 public:
  ir::ArraySet loaded;   // elements read
  ir::ArraySet dims;     // extents or data pointer read
  ir::ArraySet written;  // elements stored
  ir::ArraySet bound;    // targets of Allocate / ArrayBind, arrays (re)declared
  ir::VarSet read, assigned;
  // facts (RaiseScan): what may record a run-time error
  bool returns = false;
  bool escapes = false;  // a Break, Continue or Assert outside every loop of the scanned code
  bool has_loop = false;
  bool has_parallel = false;  // a parallel loop (anywhere inside)

  using RaiseScan::visit;
  // Public: a loop is scanned through its node (scan(const For*)).
  void visit(const ir::VarRef* n) override;
  void visit(const ir::Load* n) override;
  void visit(const ir::ArrayDim* n) override;
  void visit(const ir::ArraysOverlap* n) override;
  void visit(const ir::Store* n) override;
  void visit(const ir::AtomicUpdate* n) override;
  void visit(const ir::Assign* n) override;
  void visit(const ir::Allocate* n) override;
  void visit(const ir::ArrayBind* n) override;
  void visit(const ir::Declare* n) override;
  void visit(const ir::For* n) override;
  void visit(const ir::While* n) override;
  void visit(const ir::Break* n) override;
  void visit(const ir::Continue* n) override;
  void visit(const ir::Assert* n) override;
  void visit(const ir::Return* n) override;

 private:
  int depth_ = 0;
};

template <typename Node>
AccessScan scan(const Node& node) {
  AccessScan s;
  s.visit(node);
  return s;
}

// Whether code with these facts may record a run-time error (raise, fail an
// allocation or a check), after which the code following it must not run.
inline bool may_stop(const AccessScan& s) {
  return s.facts.any();
}

template <typename T>
bool intersects(const std::set<T, ir::InfoOrder>& a, const std::set<T, ir::InfoOrder>& b) {
  for (const T& x : a)
    if (b.count(x)) return true;
  return false;
}

}  // namespace plait::analysis
