// The lowering of a fused Program into the loop IR (lower_to_loops.h), one
// class whose parts live in four files: lower_to_loops.cpp (values, loops,
// statements and nests), lower_rows.cpp (how the rows of a sparse matrix are
// scheduled on each target), lower_relayout.cpp (dense operands read down
// their columns) and assemble_pattern.cpp (statements whose sparse result has
// a pattern of its own, merged from their operands' patterns).
// Internal to src/tensor: the rest of the compiler calls lower_to_loops().
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/lower_to_loops.h"

namespace plait::tensor::detail {

ir::Expr int_imm(int64_t v, SourceLoc loc);
// e as a Python int (int64).
ir::Expr as_index(ir::Expr e, SourceLoc loc);
ir::Expr add(ir::Expr a, ir::Expr b, SourceLoc loc);
ir::Expr ref(const ir::Var& v, SourceLoc loc);
// The value a reduction starts from (zero for a sum).
ir::Expr identity(ir::ReduceOp op, ScalarType t, SourceLoc loc);

// Where a statement's output lives while its nest runs.
struct OutputStorage {
  ir::ArrayVar array;      // whole, or kept per iteration of the shared loops
  std::vector<bool> kept;  // per dimension of the output: indexes `array`
  ir::Var scalar;          // kept as one scalar
};

class Lowering {
 public:
  Lowering(const FusionPlan& plan, const NameMaker& names, Target target, SourceLoc loc, Remarks& remarks)
      : plan_(plan), names_(names), target_(target), loc_(loc), remarks_(remarks) {}

  std::vector<ir::Stmt> run();

 private:
  ir::Var new_var(ScalarType t, const std::string& hint);
  ir::ArrayVar new_array(ArrayType t, const std::string& hint);

  // Positions and values (lower_to_loops.cpp).
  // The position of level k of t's access `vars` (its parent positions bound).
  ir::Expr position(const TensorVar& t, const std::vector<IndexVar>& vars, int k);
  ir::Expr coordinate(const IndexVar& v);
  ir::Expr load(const IndexExprNode& a);
  std::vector<ir::Expr> output_index(const TensorVar& t, const OutputStorage& s, const std::vector<IndexVar>& vars);
  ir::Expr load_output(const TensorVar& t, const OutputStorage& s, const std::vector<IndexVar>& vars);
  // The value of e; statements it needs first (the loops of its sums) go to `pre`.
  ir::Expr value(const IndexExpr& e, std::vector<ir::Stmt>& pre);
  ir::Expr reduction(const IndexExprNode& r, std::vector<ir::Stmt>& pre);

  // Loops (lower_to_loops.cpp).
  // The loop `l` with its variable bound while `fill` makes its body.
  // `range` (dense loops only): the loop's first and end coordinates, instead of 0 and its extent.
  ir::Stmt make_loop(const Loop& l, const std::function<void(std::vector<ir::Stmt>&)>& fill, bool parallel = false,
                     std::pair<ir::Expr, ir::Expr> range = {});
  // The variables a tensor is accessed with in the statement being lowered.
  std::vector<IndexVar> vars_of(const TensorVar& t);
  void note_accesses(const Statement& s);

  // Statements and nests (lower_to_loops.cpp).
  // The loops of statement `s` from `first` on, and its store.
  void lower_tail(const Statement& s, const LoopOrder& order, size_t first, std::vector<ir::Stmt>& out);
  void emit_level(const Statement& s, const LoopOrder& order, size_t level, const std::vector<IndexExpr>& fs,
                  const std::vector<size_t>& depth, ir::Expr partial, std::vector<ir::Stmt>& out);
  void store(const Statement& s, const LoopOrder& order, ir::Expr v, std::vector<ir::Stmt>& out);
  // Storage of an output kept whole: allocated before its nest.
  void allocate_whole(const Statement& s, bool zero, std::vector<ir::Stmt>& out);
  // Storage of a shrunk temporary, made in each iteration of the shared loops.
  void allocate_local(const Statement& s, const std::vector<bool>& dropped, bool zero, std::vector<ir::Stmt>& out);
  bool parallel_outer(const Nest& nest);
  void lower_nest(const Nest& nest, std::vector<ir::Stmt>& out);
  void emit_shared(const Nest& nest, size_t level, std::vector<ir::Stmt>& out);

  // Rows of a sparse matrix (lower_rows.cpp).
  const TensorVar* balanced_rows(const Nest& nest);
  static bool loop_extent_differs(const Loop& loop, const TensorVar& t);
  void rows_by_length(const Nest& nest, const Loop& loop, const TensorVar& t,
                      const std::function<void(std::vector<ir::Stmt>&)>& fill, std::vector<ir::Stmt>& out);
  // On the GPU, the rows of more than `chunk` entries of a nest whose rows
  // add up their entries' terms (SpMM, spmv), split into chunks of entries
  // that add atomically; null when the row's work is not such sums.
  // `zeroed` receives the outputs whose long rows' elements must be zero
  // before the chunks add into them.
  ir::Stmt long_rows_in_chunks(const Loop& loop, const TensorVar& t,
                               const std::function<void(std::vector<ir::Stmt>&)>& fill, int64_t chunk,
                               std::vector<ir::ArrayVar>& zeroed);
  ir::Stmt with_long_rows_marked(const ir::Stmt& short_rows, const std::vector<ir::ArrayVar>& zeroed,
                                 const ir::ArrayVar& marked);
  ir::Stmt only_where_marked(const ir::Stmt& long_rows, const ir::ArrayVar& marked);
  // `ops` (float64) estimates the nest's operations, which set the number
  // of chunks, at most `chunks`; `prologue` (optional) makes what each
  // chunk that has rows needs before them.
  ir::Stmt chunks_of_rows(const Loop& loop, const TensorVar& t, const ir::Expr& ops,
                          const std::function<void(std::vector<ir::Stmt>&)>& fill,
                          const std::function<void(std::vector<ir::Stmt>&)>& prologue = {}, int64_t chunks = 256);

  // Dense operands read down their columns (lower_relayout.cpp).
  // A row-major copy of t's transpose in `copy` (allocated here).
  ir::Stmt transposed_copy(const TensorVar& t, const ir::ArrayVar& copy);
  // The nest's loops; with column reads (Nest::column_reads), twice: from
  // transposed copies when the nest visits at least as many entries as each
  // matrix has columns, else from the matrices.
  void emit_relaid(const Nest& nest, std::vector<ir::Stmt>& out);

  // Statements that assemble their pattern (assemble_pattern.cpp).
  void assemble(const Statement& s, const LoopOrder& order, std::vector<ir::Stmt>& out);
  // pos[1..rows] from each row's count to each row's end offset (pos[0] is
  // 0); returns the count of all rows (int64).
  ir::Expr offsets_from_counts(const ir::ArrayVar& pos, const ir::Expr& rows, std::vector<ir::Stmt>& out);
  // One pass over the rows of an assembled result: `start` begins a row,
  // `keep` takes each non-zero value (its column bound), `finish` ends it;
  // without `in_order`, the values may come in any order of their columns.
  struct RowPass {
    std::function<void(std::vector<ir::Stmt>&)> start;
    std::function<void(ir::Expr, std::vector<ir::Stmt>&)> keep;
    std::function<void(std::vector<ir::Stmt>&)> finish;
    bool in_order = true;
  };
  // A parallel loop over the rows, each merging its operands' entries.
  ir::Stmt merged_rows(const Statement& s, const LoopOrder& order, const RowPass& pass);

  // Products of two sparse matrices (assemble_product.cpp).
  // `pass.keep` of a row's sum at column `at` (the variable `column` bound
  // to it) when the sum is not zero: SciPy stores no zero sum.
  void keep_nonzero(const RowPass& pass, const IndexVar& column, const ir::Var& at, const ir::Var& sum,
                    std::vector<ir::Stmt>& out);
  // Moves the element at offset `from` of a binary heap (in `heap` from
  // position `base` on, `size` elements) down past the children that come
  // `before` it; `key` assigns an element's key to a variable.
  using HeapKey = std::function<void(const ir::Var& key, const ir::Expr& element, std::vector<ir::Stmt>& out)>;
  void sift_down(const ir::ArrayVar& heap, const ir::Expr& base, const ir::Var& size, ir::Expr from, const HeapKey& key,
                 ir::CompareOp before, std::vector<ir::Stmt>& out);
  // `order` with its operands read as CSC (transposes) replaced by CSR copies made here.
  LoopOrder with_csr_operands(const LoopOrder& order, std::vector<ir::Stmt>& out);
  // A CSR copy of t, a matrix read as CSC: a counting sort of its entries by row.
  TensorVarPtr csr_copy(const TensorVar& t, std::vector<ir::Stmt>& out);
  // The CPU's: chunks of rows in parallel, each row's products added into a
  // dense row of sums per chunk.
  ir::Stmt product_rows(const LoopOrder& order, const RowPass& pass);
  // The GPU's: per stored entry of A (the left operand), where its row of B
  // is read next, and a row's heap of A's positions ordered by that column,
  // each row in its own range of both arrays.
  struct ProductWorkspace {
    ir::ArrayVar next, heap;
  };
  ProductWorkspace product_workspace(const LoopOrder& order, std::vector<ir::Stmt>& out);
  ir::Stmt product_rows_by_heap(const LoopOrder& order, const ProductWorkspace& work, const RowPass& pass);

  const FusionPlan& plan_;
  const NameMaker& names_;
  Target target_;
  SourceLoc loc_;
  Remarks& remarks_;                                    // for explain()
  std::map<int, ir::Expr> coords_;                      // index variable -> coordinate
  std::map<const ir::ArrayInfo*, ir::Expr> positions_;  // crd array -> the position being iterated
  // crd array -> whether the merged coordinate is stored there (operands of a merge only)
  std::map<const ir::ArrayInfo*, ir::Expr> present_;
  std::map<const TensorVar*, OutputStorage> storage_;  // statement outputs
  std::map<const TensorVar*, ir::ArrayVar> transposed_;  // dense operands read from a transposed copy
  std::map<const TensorVar*, std::vector<IndexVar>> access_vars_;
  std::vector<IndexVar> bound_;
};

}  // namespace plait::tensor::detail
