// Definite assignment of a function's locals: for each read of a local,
// whether an assignment reaches it on every path, on no path, or on some
// paths only (Python raises UnboundLocalError when a read finds its local
// unassigned).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"

namespace plait::lowering {

enum class Binding {
  Bound,         // assigned on every path to the read
  Unbound,       // assigned on no path to the read: the read always raises
  MaybeUnbound,  // assigned on some paths only: the read needs a run-time check
};

struct Bindings {
  // The reads that are not Bound, by their syntax node. Reads in code no
  // path reaches (after a return, a break or `while True:` without break)
  // are left out: they never run.
  std::map<const ast::Name*, Binding> reads;
  // The Unbound reads, in the order the function's text gives them.
  std::vector<const ast::Name*> unbound;
  // The locals with at least one MaybeUnbound read.
  std::set<std::string> maybe_unbound;

  Binding of(const ast::Name& read) const {
    auto it = reads.find(&read);
    return it == reads.end() ? Binding::Bound : it->second;
  }
};

// The binding of every read of the names in `locals` (the names the function
// assigns, parameters excluded: those are bound on entry) in `body`. Follows
// Python's control flow: both arms of an `if`, a `for` body that may run zero
// times (its target then stays unassigned), `while` loops, `break`,
// `continue`, `return`, and the `else` of loops. Every name outside `locals`
// (parameters, globals, modules) is bound.
Bindings definite_assignment(const ast::StmtList& body, const std::set<std::string>& locals);

}  // namespace plait::lowering
