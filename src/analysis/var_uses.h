// Which scalar variables and arrays a piece of IR reads and writes.
#pragma once

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/ir_visitor.h"

namespace plait::analysis {

struct VarUses {
  ir::VarSet reads;
  ir::VarSet writes;         // Assign targets and loop variables
  ir::ArraySet arrays;       // every array mentioned
  ir::ArraySet array_binds;  // arrays (re)bound: Allocate, ArrayBind dst
  // Arrays whose elements are written: Store, AtomicUpdate, a library
  // product's output, a loop's array reductions.
  ir::ArraySet arrays_written;
  // (dst, src) of every view binding `dst = src`: dst's writes reach src's
  // memory.
  std::vector<std::pair<const ir::ArrayInfo*, const ir::ArrayInfo*>> views;
};

// The scalars a subtree mentions (read, assigned, declared or looped over)
// in the order of their first mention, and those it assigns (loop variables
// included): the order in which code that receives them lists them.
class ScalarMentions : public ir::IRVisitor {
 public:
  std::vector<ir::Var> used;
  ir::VarSet written;
  using IRVisitor::visit;

 protected:
  void visit(const ir::VarRef* n) override;
  void visit(const ir::Assign* n) override;
  void visit(const ir::For* n) override;
  void visit(const ir::Declare* n) override;

 private:
  void note(const ir::Var& v);
  ir::VarSet seen_;
};

VarUses uses_of(const ir::Stmt& s);
VarUses uses_of(const ir::Expr& e);

// True when `e` reads `var`.
bool reads_var(const ir::Expr& e, const ir::VarInfo* var);
// True when `e` reads any of `vars` (a loop bound that reads the variable of
// a loop around it keeps the two loops from collapsing into one). A null `e`
// reads nothing.
bool reads_any(const ir::Expr& e, const ir::VarSet& vars);

// Whether `index` is `var + c` (`var`, `var + c`, `c + var` or `var - c` for
// a constant c, integer-to-integer casts aside), setting `offset` to c.
bool var_plus_constant(const ir::Expr& index, const ir::VarInfo* var, int64_t* offset);

// Whether `var` may be read, on some path through `s`, before `s` writes it
// (it is "upward exposed": its value on entry matters). A branch that ends in
// break/continue/return does not fall through, so it counts as written.
bool may_read_before_write(const ir::Stmt& s, const ir::VarInfo* var);
bool may_read_before_write(const ir::Stmt& s, const ir::ArrayInfo* array);

// Whether every path through `s` that falls through writes `var` before any
// read of it: its value on entry to `s` is then dead, on every path.
bool always_writes_before_read(const ir::Stmt& s, const ir::VarInfo* var);

// Whether `var` may be read after `stmt` (a statement inside `root`)
// finishes and before it is written again: by the statements that follow,
// by later iterations of enclosing loops, or by a return.
bool live_after(const ir::Stmt& root, const ir::StmtNode* stmt, const ir::VarInfo* var);
// The same for an array (any mention reads it; an allocation or binding of
// the name writes it).
bool live_after(const ir::Stmt& root, const ir::StmtNode* stmt, const ir::ArrayInfo* array);

}  // namespace plait::analysis
