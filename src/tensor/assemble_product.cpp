// The product of two sparse matrices (lowering.h): C = A @ B with a pattern
// of its own. Row i of C merges the rows of B at the columns A stores in its
// row i (Gustavson's row-wise formulation), in the two passes of
// assemble_pattern.cpp (count, then fill); a sum that is zero is not stored,
// as SciPy's csr_matmat does not store it. The rows come out in column
// order (canonical, as the merges give them).
//
// On the CPU each chunk of rows (rows by work, lower_rows.cpp) has a dense
// row of sums as wide as C, a stamp per column saying whether the row being
// merged has touched it, and the list of the columns it touched: products
// are added where they fall, in A's order (SciPy's order, so the sums are
// SciPy's), and the fill pass puts each row's list in order (from the
// stamps, or by heapsort) before it stores the row.
//
// On the GPU a row has no such workspace (one per thread would be as wide
// as C): it keeps a binary heap of A's positions in the row, ordered by the
// column each one's row of B is at, in two arrays of A's stored entries
// (each row in its own range of them), and takes the smallest column with
// all its products at each step: work per row is its products times the
// log of its stored entries.
//
// An operand read as CSC (a transpose) is first copied into CSR.
#include <map>

#include "tensor/lowering.h"

namespace plait::tensor::detail {

using ir::Expr;
using ir::Stmt;

namespace {

Expr binop(ir::BinaryOp op, Expr a, Expr b, SourceLoc loc) {
  return ir::Binary::make(op, std::move(a), std::move(b), ScalarType::py_int(), false, loc);
}

Expr compare(ir::CompareOp op, Expr a, Expr b, SourceLoc loc) {
  return ir::Compare::make(op, std::move(a), std::move(b), loc);
}

Stmt block(std::vector<Stmt> body, SourceLoc loc) {
  return ir::Block::make(std::move(body), loc);
}

// Position `base` + h of an array that holds a heap or a list from `base`
// on. Offsets are never negative; max(h, 0) says so to normalize_indices,
// which does not follow variables assigned in loops (analysis/index_bounds).
Expr slot(const Expr& base, Expr h, SourceLoc loc) {
  return binop(ir::BinaryOp::Add, base, binop(ir::BinaryOp::Max, std::move(h), int_imm(0, loc), loc), loc);
}

}  // namespace

LoopOrder Lowering::with_csr_operands(const LoopOrder& order, std::vector<Stmt>& out) {
  LoopOrder csr = order;
  std::map<const TensorVar*, TensorVarPtr> copies;  // S.T @ S.T copies S once
  for (size_t l : {size_t{1}, size_t{2}}) {
    TensorVarPtr& t = csr.loops[l].tensor;
    if (t->format == Format::csr()) continue;
    TensorVarPtr& copy = copies[t.get()];
    if (!copy) copy = csr_copy(*t, out);
    t = copy;
  }
  return csr;
}

TensorVarPtr Lowering::csr_copy(const TensorVar& t, std::vector<Stmt>& out) {
  // t's storage holds its columns as rows (t.pos[1] per column, t.crd[1]
  // the rows): count each row's entries, turn the counts into offsets, then
  // place the entries column by column, so each row's columns come in
  // order. Serial, as SciPy's tocsr is.
  const SourceLoc loc = loc_;
  const Expr rows = as_index(t.shape[0], loc);
  const Expr columns = as_index(t.shape[1], loc);
  const Expr nnz = as_index(t.nnz, loc);
  const Expr one = int_imm(1, loc);
  auto load = [&](const ir::ArrayVar& array, Expr at) {
    return as_index(ir::Load::make(array, {at}, false, loc), loc);
  };
  auto plus = [&](Expr x, Expr y) { return binop(ir::BinaryOp::Add, std::move(x), std::move(y), loc); };
  auto var = [&](const char* hint) { return new_var(ScalarType::py_int(), hint); };
  const ArrayType index{ScalarKind::Int64, 1, Layout::C};
  auto copy = std::make_shared<TensorVar>(t);
  copy->format = Format::csr();
  copy->pos = {nullptr, new_array(index, "_" + t.name + "_rows_indptr")};
  copy->crd = {nullptr, new_array(index, "_" + t.name + "_rows_indices")};
  copy->values = new_array(ArrayType{t.type.kind, 1, Layout::C}, "_" + t.name + "_rows_data");
  const ir::ArrayVar& pos = copy->pos[1];
  const ir::ArrayVar& crd = copy->crd[1];
  ir::ArrayVar next = new_array(index, "_" + t.name + "_next_in_row");
  for (const ir::ArrayVar& a : {pos, crd, next}) a->nonnegative = true;
  out.push_back(ir::Allocate::make(pos, {plus(rows, one)}, ir::FillKind::Zeros, nullptr, loc));
  out.push_back(ir::Allocate::make(crd, {nnz}, ir::FillKind::Uninitialized, nullptr, loc));
  out.push_back(ir::Allocate::make(copy->values, {nnz}, ir::FillKind::Uninitialized, nullptr, loc));
  out.push_back(ir::Allocate::make(next, {rows}, ir::FillKind::Uninitialized, nullptr, loc));
  {
    ir::Var p = var("_p");
    const Expr slot = plus(load(t.crd[1], ref(p, loc)), one);
    out.push_back(ir::For::make(p, int_imm(0, loc), nnz, one,
                                ir::Store::make(pos, {slot}, plus(load(pos, slot), one), false, loc), {}, loc));
  }
  {
    ir::Var r = var("_r");
    const Expr at = ref(r, loc);
    std::vector<Stmt> body{
        ir::Store::make(next, {at}, load(pos, at), false, loc),
        ir::Store::make(pos, {plus(at, one)}, plus(load(pos, plus(at, one)), load(pos, at)), false, loc)};
    out.push_back(ir::For::make(r, int_imm(0, loc), rows, one, block(std::move(body), loc), {}, loc));
  }
  {
    ir::Var c = var("_c"), p = var("_p"), r = var("_r"), d = var("_d");
    std::vector<Stmt> body{
        ir::Assign::make(r, load(t.crd[1], ref(p, loc)), loc), ir::Assign::make(d, load(next, ref(r, loc)), loc),
        ir::Store::make(crd, {ref(d, loc)}, ref(c, loc), false, loc),
        ir::Store::make(copy->values, {ref(d, loc)}, ir::Load::make(t.values, {ref(p, loc)}, false, loc), false, loc),
        ir::Store::make(next, {ref(r, loc)}, plus(ref(d, loc), one), false, loc)};
    Stmt entries = ir::For::make(p, load(t.pos[1], ref(c, loc)), load(t.pos[1], plus(ref(c, loc), one)), one,
                                 block(std::move(body), loc), {}, loc);
    out.push_back(ir::For::make(c, int_imm(0, loc), columns, one, entries, {}, loc));
  }
  return copy;
}

void Lowering::keep_nonzero(const RowPass& pass, const IndexVar& column, const ir::Var& at, const ir::Var& sum,
                            std::vector<Stmt>& out) {
  coords_[column.id] = ref(at, loc_);
  std::vector<Stmt> kept;
  pass.keep(ref(sum, loc_), kept);
  coords_.erase(column.id);
  out.push_back(
      ir::If::make(compare(ir::CompareOp::NE, ref(sum, loc_), identity(ir::ReduceOp::Add, sum->type, loc_), loc_),
                   block(std::move(kept), loc_), nullptr, loc_));
}

void Lowering::sift_down(const ir::ArrayVar& heap, const Expr& base, const ir::Var& size, Expr from,
                         const HeapKey& key_of, ir::CompareOp before, std::vector<Stmt>& out) {
  const SourceLoc loc = loc_;
  auto var = [&](const char* hint) { return new_var(ScalarType::py_int(), hint); };
  auto set = [&](const ir::Var& v, Expr e) { return ir::Assign::make(v, std::move(e), loc); };
  auto at_slot = [&](const ir::Var& h) { return slot(base, ref(h, loc), loc); };
  auto element = [&](const ir::Var& h) { return as_index(ir::Load::make(heap, {at_slot(h)}, false, loc), loc); };
  auto first = [&](const ir::Var& x, const ir::Var& y) { return compare(before, ref(x, loc), ref(y, loc), loc); };
  ir::Var at = var("_at"), child = var("_child"), entry = var("_entry"), key = var("_key");
  ir::Var held = var("_held"), held_key = var("_held_key"), right = var("_right"), right_key = var("_right_key");
  ir::Var moving = new_var(ScalarType::b1(), "_moving");
  // A hole moves down from `from`; the entry is written once, where it stops.
  out.push_back(set(at, std::move(from)));
  out.push_back(set(entry, element(at)));
  key_of(key, ref(entry, loc), out);
  out.push_back(set(moving, ir::BoolImm::make(true, loc)));
  std::vector<Stmt> step{
      set(moving, ir::BoolImm::make(false, loc)),
      set(child, binop(ir::BinaryOp::Add, binop(ir::BinaryOp::Mul, ref(at, loc), int_imm(2, loc), loc), int_imm(1, loc),
                       loc))};
  std::vector<Stmt> down{set(held, element(child))};
  key_of(held_key, ref(held, loc), down);
  {
    // The child that comes first.
    const Expr next = binop(ir::BinaryOp::Add, ref(child, loc), int_imm(1, loc), loc);
    std::vector<Stmt> other{set(right, as_index(ir::Load::make(heap, {slot(base, next, loc)}, false, loc), loc))};
    key_of(right_key, ref(right, loc), other);
    std::vector<Stmt> take{set(child, next), set(held, ref(right, loc)), set(held_key, ref(right_key, loc))};
    other.push_back(ir::If::make(first(right_key, held_key), block(std::move(take), loc), nullptr, loc));
    down.push_back(ir::If::make(compare(ir::CompareOp::LT, next, ref(size, loc), loc), block(std::move(other), loc),
                                nullptr, loc));
  }
  std::vector<Stmt> move{ir::Store::make(heap, {at_slot(at)}, ref(held, loc), false, loc), set(at, ref(child, loc)),
                         set(moving, ir::BoolImm::make(true, loc))};
  down.push_back(ir::If::make(first(held_key, key), block(std::move(move), loc), nullptr, loc));
  step.push_back(ir::If::make(compare(ir::CompareOp::LT, ref(child, loc), ref(size, loc), loc),
                              block(std::move(down), loc), nullptr, loc));
  out.push_back(ir::While::make(ref(moving, loc), block(std::move(step), loc), loc));
  out.push_back(ir::Store::make(heap, {at_slot(at)}, ref(entry, loc), false, loc));
}

Stmt Lowering::product_rows(const LoopOrder& order, const RowPass& pass) {
  const TensorVar& a = *order.loops[1].tensor;
  const TensorVar& b = *order.loops[2].tensor;
  const ScalarType type = order.body->type;
  const SourceLoc loc = loc_;
  const Expr width = as_index(b.shape[1], loc);
  auto var = [&](const char* hint) { return new_var(ScalarType::py_int(), hint); };
  auto set = [&](const ir::Var& v, Expr e) { return ir::Assign::make(v, std::move(e), loc); };
  auto plus = [&](Expr x, Expr y) { return binop(ir::BinaryOp::Add, std::move(x), std::move(y), loc); };
  auto load = [&](const ir::ArrayVar& array, Expr at) {
    return as_index(ir::Load::make(array, {at}, false, loc), loc);
  };
  auto value_at = [&](const TensorVar& t, const Expr& at) {
    Expr v = ir::Load::make(t.values, {at}, false, loc);
    return t.type == type ? v : ir::Cast::make(type, v, false, loc);
  };
  // Per chunk of rows: each column's sum in the row being merged, the row
  // (plus one) that last touched it, and the columns the row touched.
  ir::ArrayVar sums = new_array(ArrayType{type.kind, 1, Layout::C}, "_row_sums");
  ir::ArrayVar stamps = new_array(ArrayType{ScalarKind::Int64, 1, Layout::C}, "_touched_by");
  ir::ArrayVar columns = new_array(ArrayType{ScalarKind::Int64, 1, Layout::C}, "_row_columns");
  columns->nonnegative = true;
  auto prologue = [&](std::vector<Stmt>& out) {
    out.push_back(ir::Allocate::make(sums, {width}, ir::FillKind::Uninitialized, nullptr, loc));
    out.push_back(ir::Allocate::make(stamps, {width}, ir::FillKind::Zeros, nullptr, loc));
    out.push_back(ir::Allocate::make(columns, {width}, ir::FillKind::Uninitialized, nullptr, loc));
  };
  auto fill = [&](std::vector<Stmt>& row) {
    pass.start(row);
    const Expr i = coordinate(order.loops[0].var);
    const Expr zero = int_imm(0, loc);
    ir::Var count = var("_touched");
    row.push_back(set(count, zero));
    {
      ir::Var p = var("_p"), k = var("_k"), q = var("_q"), j = var("_j");
      ir::Var left = new_var(type, "_left");
      ir::Var product = new_var(type, "_product");
      const Expr stamp = plus(i, int_imm(1, loc));
      std::vector<Stmt> first{ir::Store::make(stamps, {ref(j, loc)}, stamp, false, loc),
                              ir::Store::make(sums, {ref(j, loc)}, ref(product, loc), false, loc),
                              ir::Store::make(columns, {slot(zero, ref(count, loc), loc)}, ref(j, loc), false, loc),
                              set(count, plus(ref(count, loc), int_imm(1, loc)))};
      Stmt again = ir::Store::make(sums, {ref(j, loc)},
                                   ir::Binary::make(ir::BinaryOp::Add, ir::Load::make(sums, {ref(j, loc)}, false, loc),
                                                    ref(product, loc), type, false, loc),
                                   false, loc);
      std::vector<Stmt> inner{
          set(j, load(b.crd[1], ref(q, loc))),
          set(product, ir::Binary::make(ir::BinaryOp::Mul, ref(left, loc), value_at(b, ref(q, loc)), type, false, loc)),
          ir::If::make(compare(ir::CompareOp::NE, load(stamps, ref(j, loc)), stamp, loc), block(std::move(first), loc),
                       again, loc)};
      std::vector<Stmt> outer{
          set(k, load(a.crd[1], ref(p, loc))), set(left, value_at(a, ref(p, loc))),
          ir::For::make(q, load(b.pos[1], ref(k, loc)), load(b.pos[1], plus(ref(k, loc), int_imm(1, loc))),
                        int_imm(1, loc), block(std::move(inner), loc), {}, loc)};
      row.push_back(ir::For::make(p, load(a.pos[1], i), load(a.pos[1], plus(i, int_imm(1, loc))), int_imm(1, loc),
                                  block(std::move(outer), loc), {}, loc));
    }
    if (pass.in_order) {
      // The touched columns in order: read from the stamps in column order
      // where the row touched at least 1/32 of them (a pass over the row of
      // stamps costs less than sorting then), else sorted (heapsort: a heap
      // with the largest first, then the largest moved to the end, one at a
      // time).
      constexpr int64_t kScanFraction = 32;
      std::vector<Stmt> scan, sort;
      {
        ir::Var c = var("_c"), n = var("_in_order");
        scan.push_back(set(n, zero));
        std::vector<Stmt> found{ir::Store::make(columns, {slot(zero, ref(n, loc), loc)}, ref(c, loc), false, loc),
                                set(n, plus(ref(n, loc), int_imm(1, loc)))};
        Stmt test = ir::If::make(compare(ir::CompareOp::EQ, load(stamps, ref(c, loc)), plus(i, int_imm(1, loc)), loc),
                                 block(std::move(found), loc), nullptr, loc);
        scan.push_back(ir::For::make(c, zero, width, int_imm(1, loc), test, {}, loc));
      }
      auto itself = [&](const ir::Var& key, const Expr& element, std::vector<Stmt>& out) {
        out.push_back(set(key, element));
      };
      ir::Var h = var("_h");
      sort.push_back(set(h, binop(ir::BinaryOp::FloorDiv, ref(count, loc), int_imm(2, loc), loc)));
      std::vector<Stmt> build{set(h, binop(ir::BinaryOp::Sub, ref(h, loc), int_imm(1, loc), loc))};
      sift_down(columns, zero, count, ref(h, loc), itself, ir::CompareOp::GT, build);
      sort.push_back(
          ir::While::make(compare(ir::CompareOp::GT, ref(h, loc), zero, loc), block(std::move(build), loc), loc));
      ir::Var end = var("_unsorted");
      ir::Var largest = var("_largest");
      sort.push_back(set(end, ref(count, loc)));
      std::vector<Stmt> take{
          set(end, binop(ir::BinaryOp::Sub, ref(end, loc), int_imm(1, loc), loc)), set(largest, load(columns, zero)),
          ir::Store::make(columns, {zero}, load(columns, slot(zero, ref(end, loc), loc)), false, loc),
          ir::Store::make(columns, {slot(zero, ref(end, loc), loc)}, ref(largest, loc), false, loc)};
      sift_down(columns, zero, end, zero, itself, ir::CompareOp::GT, take);
      sort.push_back(ir::While::make(compare(ir::CompareOp::GT, ref(end, loc), int_imm(1, loc), loc),
                                     block(std::move(take), loc), loc));
      const Expr dense = compare(
          ir::CompareOp::GE, binop(ir::BinaryOp::Mul, ref(count, loc), int_imm(kScanFraction, loc), loc), width, loc);
      row.push_back(ir::If::make(dense, block(std::move(scan), loc), block(std::move(sort), loc), loc));
    }
    {
      ir::Var t = var("_t"), j = var(order.loops[2].var.name.c_str());
      ir::Var sum = new_var(type, "_sum");
      std::vector<Stmt> body{set(j, load(columns, ref(t, loc))),
                             set(sum, ir::Load::make(sums, {ref(j, loc)}, false, loc))};
      keep_nonzero(pass, order.loops[2].var, j, sum, body);
      row.push_back(ir::For::make(t, zero, ref(count, loc), int_imm(1, loc), block(std::move(body), loc), {}, loc));
    }
    pass.finish(row);
  };
  // Fewer chunks than other nests: each pays its workspace's zeros and the
  // bounds checks' scans of B's index arrays (insert_bounds_checks), which
  // cover most of B whichever rows the chunk holds. The operations are
  // about two per product: A's entries times B's mean row length (NaN,
  // hence one chunk, when B has no rows).
  constexpr int64_t kChunks = 32;
  auto f64 = [&](const Expr& e) { return ir::Cast::make(ScalarType::f64(), as_index(e, loc_), false, loc_); };
  auto times = [&](ir::BinaryOp op, Expr x, Expr y) {
    return ir::Binary::make(op, std::move(x), std::move(y), ScalarType::f64(), false, loc_);
  };
  const Expr products = times(ir::BinaryOp::Div, times(ir::BinaryOp::Mul, f64(a.nnz), f64(b.nnz)), f64(b.shape[0]));
  const Expr ops = times(ir::BinaryOp::Mul, ir::FloatImm::make(2.0, ScalarType::f64(), loc_), products);
  return chunks_of_rows(order.loops[0], a, ops, fill, prologue, kChunks);
}

Lowering::ProductWorkspace Lowering::product_workspace(const LoopOrder& order, std::vector<Stmt>& out) {
  const TensorVar& a = *order.loops[1].tensor;
  const ArrayType positions{ScalarKind::Int64, 1, Layout::C};
  ProductWorkspace work{new_array(positions, "_next"), new_array(positions, "_heap")};
  for (const ir::ArrayVar& w : {work.next, work.heap}) {
    w->nonnegative = true;  // positions
    out.push_back(ir::Allocate::make(w, {as_index(a.nnz, loc_)}, ir::FillKind::Uninitialized, nullptr, loc_));
  }
  return work;
}

Stmt Lowering::product_rows_by_heap(const LoopOrder& order, const ProductWorkspace& work, const RowPass& pass) {
  const TensorVar& a = *order.loops[1].tensor;
  const TensorVar& b = *order.loops[2].tensor;
  const ScalarType type = order.body->type;
  const SourceLoc loc = loc_;
  auto load = [&](const ir::ArrayVar& array, Expr at) {
    return as_index(ir::Load::make(array, {at}, false, loc), loc);
  };
  auto var = [&](const char* hint) { return new_var(ScalarType::py_int(), hint); };
  auto flag = [&](const char* hint) { return new_var(ScalarType::b1(), hint); };
  auto set = [&](const ir::Var& v, Expr e) { return ir::Assign::make(v, std::move(e), loc); };
  auto imm = [&](int64_t v) { return int_imm(v, loc); };
  auto truth = [&](bool v) { return ir::BoolImm::make(v, loc); };
  auto plus = [&](Expr x, Expr y) { return binop(ir::BinaryOp::Add, std::move(x), std::move(y), loc); };
  auto less = [&](Expr x, Expr y) { return compare(ir::CompareOp::LT, std::move(x), std::move(y), loc); };
  // `column` gets the column the entry of A at position `p` reads in B next.
  auto read_column = [&](const ir::Var& column, const Expr& p, std::vector<Stmt>& out) {
    out.push_back(set(column, load(b.crd[1], load(work.next, p))));
  };
  return make_loop(
      order.loops[0],
      [&](std::vector<Stmt>& row) {
        pass.start(row);
        const Expr i = coordinate(order.loops[0].var);
        ir::Var base = var("_base");  // the row's first position in A: its heap's root
        ir::Var size = var("_heap_size");
        row.push_back(set(base, load(a.pos[1], i)));
        row.push_back(set(size, imm(0)));
        const Expr root = ref(base, loc);

        // The row's entries of A whose row of B stores something, as a heap.
        {
          ir::Var p = var("_p");
          ir::Var first = var("_first");
          ir::Var k = var("_k");
          std::vector<Stmt> body{set(k, load(a.crd[1], ref(p, loc))), set(first, load(b.pos[1], ref(k, loc)))};
          std::vector<Stmt> push{ir::Store::make(work.next, {ref(p, loc)}, ref(first, loc), false, loc),
                                 ir::Store::make(work.heap, {slot(root, ref(size, loc), loc)}, ref(p, loc), false, loc),
                                 set(size, plus(ref(size, loc), imm(1)))};
          body.push_back(ir::If::make(less(ref(first, loc), load(b.pos[1], plus(ref(k, loc), imm(1)))),
                                      block(std::move(push), loc), nullptr, loc));
          row.push_back(
              ir::For::make(p, root, load(a.pos[1], plus(i, imm(1))), imm(1), block(std::move(body), loc), {}, loc));
        }
        {
          // Heapify: sift every entry that has children, the last first.
          ir::Var h = var("_h");
          row.push_back(set(h, binop(ir::BinaryOp::FloorDiv, ref(size, loc), imm(2), loc)));
          std::vector<Stmt> body{set(h, binop(ir::BinaryOp::Sub, ref(h, loc), imm(1), loc))};
          sift_down(work.heap, root, size, ref(h, loc), read_column, ir::CompareOp::LT, body);
          row.push_back(
              ir::While::make(compare(ir::CompareOp::GT, ref(h, loc), imm(0), loc), block(std::move(body), loc), loc));
        }

        // Take the smallest column with all its products, until the heap is empty.
        ir::Var j = var(order.loops[2].var.name.c_str());
        ir::Var sum = new_var(type, "_sum");
        ir::Var same = flag("_same");
        std::vector<Stmt> entry;
        {
          ir::Var p = var("_top"), q = var("_q"), top_column = var("_top_column");
          entry.push_back(set(p, load(work.heap, root)));
          entry.push_back(set(q, load(work.next, ref(p, loc))));
          auto value_at = [&](const TensorVar& t, const ir::Var& at) {
            Expr v = ir::Load::make(t.values, {ref(at, loc)}, false, loc);
            return t.type == type ? v : ir::Cast::make(type, v, false, loc);
          };
          Expr product = ir::Binary::make(ir::BinaryOp::Mul, value_at(a, p), value_at(b, q), type, false, loc);
          entry.push_back(set(sum, ir::Binary::make(ir::BinaryOp::Add, ref(sum, loc), product, type, false, loc)));
          // The entry moves on in its row of B, or leaves the heap at its
          // end (the last entry takes its place).
          const Expr end = load(b.pos[1], plus(load(a.crd[1], ref(p, loc)), imm(1)));
          std::vector<Stmt> leave{
              set(size, binop(ir::BinaryOp::Sub, ref(size, loc), imm(1), loc)),
              ir::Store::make(work.heap, {root}, load(work.heap, slot(root, ref(size, loc), loc)), false, loc)};
          entry.push_back(ir::If::make(less(plus(ref(q, loc), imm(1)), end),
                                       ir::Store::make(work.next, {ref(p, loc)}, plus(ref(q, loc), imm(1)), false, loc),
                                       block(std::move(leave), loc), loc));
          std::vector<Stmt> more;
          sift_down(work.heap, root, size, imm(0), read_column, ir::CompareOp::LT, more);
          read_column(top_column, load(work.heap, root), more);
          more.push_back(set(same, compare(ir::CompareOp::EQ, ref(top_column, loc), ref(j, loc), loc)));
          entry.push_back(set(same, truth(false)));
          entry.push_back(ir::If::make(compare(ir::CompareOp::GT, ref(size, loc), imm(0), loc),
                                       block(std::move(more), loc), nullptr, loc));
        }
        std::vector<Stmt> column_body;
        read_column(j, load(work.heap, root), column_body);
        column_body.push_back(set(sum, identity(ir::ReduceOp::Add, type, loc)));
        column_body.push_back(set(same, truth(true)));
        column_body.push_back(ir::While::make(ref(same, loc), block(std::move(entry), loc), loc));
        keep_nonzero(pass, order.loops[2].var, j, sum, column_body);
        row.push_back(ir::While::make(compare(ir::CompareOp::GT, ref(size, loc), imm(0), loc),
                                      block(std::move(column_body), loc), loc));
        pass.finish(row);
      },
      true);
}

}  // namespace plait::tensor::detail
