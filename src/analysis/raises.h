// Analysis: whether IR may record a run-time error.
//
// The expressions that call a runtime helper taking the call's context
// (checked loads and stores, Python's division and modulo by a value that may
// be zero, integer powers, checked float-to-int conversions, the math
// module's functions), failed checks (Assert) and allocations (MemoryError)
// may record an error; the code after them must then not run.
#pragma once

#include "ir/ir.h"
#include "ir/ir_visitor.h"

namespace plait::analysis {

struct RaiseFacts {
  bool expressions = false;  // an expression, or a checked store, may raise
  bool checks = false;       // an Assert
  bool allocations = false;  // an Allocate
  bool any() const { return expressions || checks || allocations; }
};

RaiseFacts raises(const ir::Stmt& s);
RaiseFacts raises(const ir::Expr& e);

// The visitor behind raises(), for visitors that gather these facts along
// with their own in one walk (they call its visit() for these nodes).
class RaiseScan : public ir::IRVisitor {
 public:
  RaiseFacts facts;
  using IRVisitor::visit;
  void visit(const ir::Load* n) override;
  void visit(const ir::Binary* n) override;
  void visit(const ir::Cast* n) override;
  void visit(const ir::Call* n) override;
  void visit(const ir::Store* n) override;
  void visit(const ir::AtomicUpdate* n) override;
  void visit(const ir::Assert* n) override;
  void visit(const ir::Allocate* n) override;
};

// Whether CUDA device code built from a subtree can record a run-time
// error: every check the IR marks counts (a checked division by a constant
// too, and checked integer conversions), as the device code keeps them all.
// The CUDA back end passes the error record to a kernel whose code has one,
// and its host evaluates before a launch only expressions without one.
class HasErrorSites : public ir::IRVisitor {
 public:
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit(const ir::Load* n) override;
  void visit(const ir::Store* n) override;
  void visit(const ir::AtomicUpdate* n) override;
  void visit(const ir::Cast* n) override;
  void visit(const ir::Binary* n) override;
  void visit(const ir::Call* n) override;
  void visit(const ir::Assert* n) override;
};

}  // namespace plait::analysis
