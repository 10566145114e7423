// Arrays of a one-block persistent kernel kept in registers (see
// register_arrays.h).
#include "transforms/gpu/register_arrays.h"

#include <algorithm>
#include <set>

#include "analysis/var_uses.h"
#include "ir/ir_visitor.h"

namespace plait::transforms::gpu {

using namespace ir;

namespace {

// The element accesses of a loop body to the arrays of `arrays`.
class RegisterArrayAccesses : public IRVisitor {
 public:
  struct Access {
    const ArrayInfo* array;
    const Expr* index;
    bool store;
    bool checked;
    SourceLoc loc;
  };
  std::vector<Access> accesses;
  const AtomicUpdate* atomic = nullptr;  // the first atomic update of one of them

  explicit RegisterArrayAccesses(const ArraySet& arrays) : arrays_(arrays) {}
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (arrays_.count(n->array.get()))
      accesses.push_back({n->array.get(), n->indices.empty() ? nullptr : &n->indices[0], false, n->checked, n->loc});
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    if (arrays_.count(n->array.get()))
      accesses.push_back({n->array.get(), n->indices.empty() ? nullptr : &n->indices[0], true, n->checked, n->loc});
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    if (arrays_.count(n->array.get()) && !atomic) atomic = n;
    IRVisitor::visit(n);
  }

 private:
  const ArraySet& arrays_;
};

std::string at_line(const SourceLoc& loc) {
  return "line " + std::to_string(loc.line);
}

}  // namespace

std::string plan_register_arrays(const std::vector<const For*>& loops, const std::vector<ArrayVar>& written,
                                 RegisterPlan* plan) {
  *plan = RegisterPlan{};
  if (written.empty()) return "the loop writes no array";
  ArraySet arrays;
  int words = 0;
  for (const ArrayVar& a : written) {
    if (a->type.ndim != 1) return "`" + a->name + "` has " + std::to_string(a->type.ndim) + " dimensions, not 1";
    words += (ScalarType{a->type.dtype}.bits() + 31) / 32;
    arrays.insert(a.get());
    plan->arrays.push_back(a);
  }
  if (words > kRegisterArrayWords)
    return "the arrays it writes take " + std::to_string(words) + " registers per element (at most " +
           std::to_string(kRegisterArrayWords) + ")";
  plan->slots = std::min(kRegisterArraySlots, kRegisterArrayWords / words);
  for (const For* f : loops) {
    const std::string where = "the parallel loop at " + at_line(f->loc);
    const IntImm* step = f->step->as<IntImm>();
    if (!step || step->value != 1) return where + " has a step other than 1";
    if (analysis::uses_of(f->body).writes.count(f->var.get()))
      return where + " assigns its variable `" + f->var->name + "`";
    RegisterArrayAccesses found(arrays);
    found.visit(f->body);
    if (found.atomic) return where + " updates `" + found.atomic->array->name + "` atomically";
    RegisterLoop rl;
    rl.var = f->var.get();
    std::vector<std::pair<const ArrayInfo*, int64_t>> loads;
    ArraySet stored;
    bool has_store = false;
    for (const RegisterArrayAccesses::Access& a : found.accesses) {
      int64_t offset = 0;
      if (a.checked) return where + " checks the bounds of `" + a.array->name + "`";
      if (!a.index || !analysis::var_plus_constant(*a.index, f->var.get(), &offset))
        return "`" + a.array->name + "` at " + at_line(a.loc) + " is not indexed by `" + f->var->name +
               "` plus a constant";
      if (!a.store) {
        loads.emplace_back(a.array, offset);
        continue;
      }
      if (has_store && offset != rl.store_offset) return where + " stores at two offsets of `" + f->var->name + "`";
      rl.store_offset = offset;
      has_store = true;
      stored.insert(a.array);
    }
    if (!has_store) return where + " stores no element of the arrays the loop writes";
    for (const auto& [array, offset] : loads) {
      const int64_t d = offset - rl.store_offset;
      if (d == 0) continue;
      if (stored.count(array))
        return where + " reads `" + array->name + "` at another element than it writes (" +
               std::to_string(d > 0 ? d : -d) + " away)";
      if (d < -plan->slots || d > plan->slots)
        return where + " reads `" + array->name + "` " + std::to_string(d > 0 ? d : -d) + " elements away (at most " +
               std::to_string(plan->slots) + ")";
      std::pair<int, int>& halo = rl.halos[array];
      if (d < 0) halo.first = std::max(halo.first, static_cast<int>(-d));
      if (d > 0) halo.second = std::max(halo.second, static_cast<int>(d));
    }
    for (const auto& [array, halo] : rl.halos) {
      int& width = plan->halo_width[array];
      width = std::max(width, halo.first + halo.second);
    }
    plan->loops[f] = std::move(rl);
  }
  return "";
}

}  // namespace plait::transforms::gpu
