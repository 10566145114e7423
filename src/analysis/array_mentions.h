// How a piece of IR mentions each array: every mention (an access, an extent,
// an overlap test, a declaration, an allocation, a binding, a return, a
// library product), the bindings of each name, and the ways an array can
// outlive the piece (the source of a binding, a returned value).
#pragma once

#include <map>
#include <set>

#include "ir/ir_visitor.h"

namespace plait::analysis {

// Visit any number of statements and expressions; the counts add up.
class ArrayMentions : public ir::IRVisitor {
 public:
  ir::ArrayMap<int> mentions;
  ir::ArrayMap<int> binds;            // allocations, and `dst` of `dst = src`
  ir::ArraySet bound_to_other_names;  // `src` of `dst = src`
  ir::ArraySet returned;
  using IRVisitor::visit;

 protected:
  void visit(const ir::Load* n) override;
  void visit(const ir::ArrayDim* n) override;
  void visit(const ir::ArraysOverlap* n) override;
  void visit(const ir::Store* n) override;
  void visit(const ir::AtomicUpdate* n) override;
  void visit(const ir::Declare* n) override;
  void visit(const ir::Allocate* n) override;
  void visit(const ir::ArrayBind* n) override;
  void visit(const ir::Return* n) override;
  void visit(const ir::MatMul* n) override;
};

}  // namespace plait::analysis
