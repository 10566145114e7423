// Analysis: where array indices lie, at run time (see index_ranges.h): the
// ranges of values known before a loop nest runs, the scans of index arrays
// (a CSR matrix's row pointers and column indices) that bound what the nest
// loads from them, and the conditions that test both once before the nest.
#include "analysis/index_ranges_state.h"

namespace plait::analysis {

bool IndexFacts::State::invariant(const Expr& e, size_t outer) const {
  struct Scan : ir::IRVisitor {
    bool ok = true;
    using IRVisitor::visit;
    void visit(const ir::Load*) override { ok = false; }
    void visit(const ir::Call*) override { ok = false; }
    void visit(const ir::ArraysOverlap*) override { ok = false; }
    void visit(const ir::Cast* c) override {
      ok = ok && !c->checked;
      IRVisitor::visit(c);
    }
    void visit(const ir::Binary* b) override {
      ok = ok && !b->zero_check && b->op != BinaryOp::Div && b->op != BinaryOp::Pow;
      IRVisitor::visit(b);
    }
  } scan;
  scan.visit(e);
  if (!scan.ok) return false;
  const Frame& fr = loops[outer];
  const VarUses u = uses_of(e);
  for (const ir::VarInfo* v : u.reads)
    if (fr.body.writes.count(v) || v == fr.loop->var.get()) return false;
  for (const ir::ArrayInfo* a : u.arrays)
    if (fr.body.array_binds.count(a)) return false;
  return true;
}

std::optional<Interval> IndexFacts::State::range(const Expr& e, size_t outer, int depth) const {
  if (!e->type.is_int() || depth > kDepthLimit) return std::nullopt;
  auto point = [](const Expr& x) { return std::optional<Interval>(Interval{int64(x), int64(x)}); };
  if (auto v = e->as<ir::VarRef>()) {
    int f = frame_of(v->var.get(), outer);
    if (f >= static_cast<int>(outer)) {
      const Frame& fr = loops[static_cast<size_t>(f)];
      // Bounds that move with an enclosing loop of the nest would be
      // bounded apart from the index's other terms, which loses their
      // relation (i + j for j in range(n - i) reaches n - 1, not 2n - 2):
      // the test is made inside that loop instead, where they are fixed.
      // Two exceptions: an index of one loop variable (relax_moving: the
      // union of its ranges over the enclosing loops is its range), and
      // bounds loaded from an array (the rows of a sparse matrix,
      // range(indptr[i], indptr[i + 1]), lie within the least and greatest
      // of indptr, whatever the row).
      const VarUses begin = uses_of(fr.loop->begin), end = uses_of(fr.loop->end);
      for (size_t k = outer; k < static_cast<size_t>(f); ++k) {
        const ir::VarInfo* moving = loops[k].loop->var.get();
        if ((begin.reads.count(moving) || end.reads.count(moving)) && !relax_moving &&
            !(loaded(fr.loop->begin) && loaded(fr.loop->end)))
          return std::nullopt;
      }
      // The outer loop's bounds are evaluated just before it starts, as
      // the condition is: they are read as they are (loads included).
      auto bound = [&](const Expr& b) {
        return static_cast<size_t>(f) == outer ? point(b) : range(b, outer, depth + 1);
      };
      auto b = bound(fr.loop->begin), n = bound(fr.loop->end);
      if (!b || !n) return std::nullopt;
      if (fr.step > 0) return Interval{b->lo, op(BinaryOp::Sub, n->hi, imm(1))};
      return Interval{op(BinaryOp::Add, n->lo, imm(1)), b->hi};
    }
    if (invariant(e, outer)) return point(e);
    if (Expr value = single_value(v->var.get())) return range(value, outer, depth + 1);
    if (Expr value = loaded_value(v->var.get(), outer)) return range(value, outer, depth + 1);
    return std::nullopt;
  }
  if (auto d = e->as<ir::ArrayDim>()) {
    if (invariant(e, outer)) return point(e);
    if (Expr source = extent_source(d)) return range(source, outer, depth + 1);
    return std::nullopt;
  }
  if (auto c = e->as<ir::Cast>()) {
    if (keeps_value(c)) return range(c->value, outer, depth + 1);
  } else if (auto s = e->as<ir::Select>()) {
    if (auto known = decide(s->cond)) return range(*known ? s->t : s->f, outer, depth + 1);
    auto t = range(s->t, outer, depth + 1), f = range(s->f, outer, depth + 1);
    if (t && f) return Interval{op(BinaryOp::PyMin, t->lo, f->lo), op(BinaryOp::PyMax, t->hi, f->hi)};
  } else if (auto u = e->as<ir::Unary>(); u && u->op == ir::UnaryOp::Neg) {
    if (auto a = range(u->a, outer, depth + 1))
      return Interval{op(BinaryOp::Sub, imm(0), a->hi), op(BinaryOp::Sub, imm(0), a->lo)};
  } else if (auto b = e->as<ir::Binary>()) {
    auto kb = b->b->as<ir::IntImm>();
    switch (b->op) {
      case BinaryOp::Add:
      case BinaryOp::Sub: {
        auto x = range(b->a, outer, depth + 1), y = range(b->b, outer, depth + 1);
        if (!x || !y) break;
        if (b->op == BinaryOp::Add) return Interval{op(BinaryOp::Add, x->lo, y->lo), op(BinaryOp::Add, x->hi, y->hi)};
        return Interval{op(BinaryOp::Sub, x->lo, y->hi), op(BinaryOp::Sub, x->hi, y->lo)};
      }
      case BinaryOp::Mul: {
        auto ka = b->a->as<ir::IntImm>();
        const ir::IntImm* k = kb ? kb : ka;
        if (!k || k->value > kLimit || k->value < -kLimit) break;
        auto x = range(kb ? b->a : b->b, outer, depth + 1);
        if (!x) break;
        Expr lo = op(BinaryOp::Mul, x->lo, imm(k->value)), hi = op(BinaryOp::Mul, x->hi, imm(k->value));
        if (k->value < 0) std::swap(lo, hi);
        return Interval{lo, hi};
      }
      case BinaryOp::Min:
      case BinaryOp::PyMin:
      case BinaryOp::Max:
      case BinaryOp::PyMax: {
        auto x = range(b->a, outer, depth + 1), y = range(b->b, outer, depth + 1);
        if (!x || !y) break;
        BinaryOp o = b->op == BinaryOp::Min || b->op == BinaryOp::PyMin ? BinaryOp::PyMin : BinaryOp::PyMax;
        return Interval{op(o, x->lo, y->lo), op(o, x->hi, y->hi)};
      }
      case BinaryOp::FloorDiv: {
        if (!kb || kb->value <= 0) break;
        auto x = range(b->a, outer, depth + 1);
        if (!x) break;
        return Interval{op(BinaryOp::FloorDiv, x->lo, imm(kb->value)), op(BinaryOp::FloorDiv, x->hi, imm(kb->value))};
      }
      case BinaryOp::Mod:
        if (kb && kb->value > 0) return Interval{imm(0), imm(kb->value - 1)};
        break;
      default:
        break;
    }
  } else if (auto l = e->as<ir::Load>()) {
    return scanned(l, outer, depth);
  }
  if (invariant(e, outer)) return point(e);
  return std::nullopt;
}

Expr IndexFacts::State::loaded_value(const ir::VarInfo* v, size_t outer) const {
  auto n = bindings.assigns.find(v);
  if (n == bindings.assigns.end() || n->second != 1 || !loops[outer].body.writes.count(v)) return nullptr;
  const Expr& value = bindings.value.at(v);
  return value->type.is_int() && loaded(value) ? value : nullptr;
}

bool IndexFacts::State::loaded(const Expr& e) {
  if (auto c = e->as<ir::Cast>(); c && keeps_value(c)) return loaded(c->value);
  return e->as<ir::Load>() != nullptr;
}

std::optional<Interval> IndexFacts::State::scanned(const ir::Load* l, size_t outer, int depth) const {
  const ScalarType t = l->type;
  if (l->indices.size() != 1 || !t.is_int() || (t.is_unsigned() && t.bits() >= 64) || !scans_allowed)
    return std::nullopt;
  const Frame& fr = loops[outer];
  if (outer > 0 && scannable_whole(l->array.get())) {
    // The test runs at each step of loop(outer - 1): one scan of the whole
    // array at the entry serves them all.
    const std::string k = "whole|" + std::to_string(l->array->id);
    auto found = scan_index.find(k);
    if (found == scan_index.end()) {
      auto var = [&](const char* what) {
        return std::make_shared<ir::VarInfo>(std::string("_") + what + "_of_all_" + l->array->name,
                                             ScalarType::py_int(), l->loc, false);
      };
      const Expr last = op(BinaryOp::Sub, ir::ArrayDim::make(l->array, 0, l->loc), imm(1));
      IndexFacts::IndexScan scan{var("least"), var("greatest"), l->array, imm(0), last, true};
      scans.push_back({scan, ir::BoolImm::make(true, l->loc)});
      found = scan_index.emplace(k, scans.size() - 1).first;
    }
    const IndexFacts::IndexScan& sc = scans[found->second].scan;
    return Interval{ir::VarRef::make(sc.least, l->loc), ir::VarRef::make(sc.greatest, l->loc)};
  }
  if (fr.body.array_binds.count(l->array.get())) return std::nullopt;
  // A view made inside the nest could write the array unseen.
  if (!fr.body.views.empty() || fr.body.arrays_written.count(l->array.get())) return std::nullopt;
  bool wraps = false;
  const Expr x = unwrapped(l->indices[0], l->array, 0, &wraps);
  auto r = range(x, outer, depth + 1);
  auto n = range(ir::ArrayDim::make(l->array, 0, l->loc), outer, depth + 1);
  if (!r || !n) return std::nullopt;
  // One scan per loop: each loop's test runs its own.
  const std::string k = std::to_string(reinterpret_cast<uintptr_t>(fr.loop)) + "|" + std::to_string(l->array->id) +
                        "|" + key(r->lo) + "|" + key(r->hi) + "|" + key(n->lo);
  auto found = scan_index.find(k);
  if (found == scan_index.end()) {
    Expr valid =
        all_of(ir::Compare::make(ir::CompareOp::GE, r->lo, imm(0)), ir::Compare::make(ir::CompareOp::LT, r->hi, n->lo));
    valid = guarded(valid, {r->lo, r->hi, n->lo});
    for (const ir::ArrayInfo* a : fr.body.arrays_written) {
      if (bindings.allocation.count(a) && bindings.binds.at(a) == 1) continue;
      valid = all_of(valid,
                     ir::Unary::make(ir::UnaryOp::Not,
                                     ir::ArraysOverlap::make(l->array, array_named(fr.loop->body, a), false, l->loc)));
    }
    // The positions may come from other scans: theirs must hold too.
    for (const ScanEntry* inner : scans_in({r->lo, r->hi})) valid = all_of(inner->valid, valid);
    auto var = [&](const char* what) {
      return std::make_shared<ir::VarInfo>(std::string("_") + what + "_" + l->array->name, ScalarType::py_int(), l->loc,
                                           false);
    };
    scans.push_back({{var("least"), var("greatest"), l->array, r->lo, r->hi}, valid});
    found = scan_index.emplace(k, scans.size() - 1).first;
  }
  const IndexFacts::IndexScan& sc = scans[found->second].scan;
  return Interval{ir::VarRef::make(sc.least, l->loc), ir::VarRef::make(sc.greatest, l->loc)};
}

bool IndexFacts::State::scannable_whole(const ir::ArrayInfo* a) const {
  const VarUses& u = function_uses;
  if (!a->is_param || u.arrays_written.count(a) || u.array_binds.count(a)) return false;
  for (const ir::ArrayInfo* written : u.arrays_written) {
    std::set<const ir::ArrayInfo*> seen;
    if (!fresh(written, seen)) return false;
  }
  return true;
}

bool IndexFacts::State::fresh(const ir::ArrayInfo* a, std::set<const ir::ArrayInfo*>& seen) const {
  if (a->is_param) return false;
  if (!seen.insert(a).second) return true;  // a cycle of bindings adds no other memory
  auto from = bindings.sources.find(a);
  if (from != bindings.sources.end())
    for (const ir::ArrayInfo* src : from->second)
      if (!fresh(src, seen)) return false;
  // Bound by allocations and such arrays only (an array never bound holds no memory of another).
  return true;
}

std::vector<const IndexFacts::State::ScanEntry*> IndexFacts::State::scans_in(const std::vector<Expr>& exprs) const {
  ir::VarSet read;
  for (const Expr& e : exprs) {
    const VarUses u = uses_of(e);
    read.insert(u.reads.begin(), u.reads.end());
  }
  std::vector<const ScanEntry*> out;
  for (const ScanEntry& entry : scans)
    if (read.count(entry.scan.least.get()) || read.count(entry.scan.greatest.get())) out.push_back(&entry);
  return out;
}

ir::ArrayVar IndexFacts::State::array_named(const ir::Stmt& body, const ir::ArrayInfo* a) {
  struct Find : ir::IRVisitor {
    const ir::ArrayInfo* want;
    ir::ArrayVar found;
    using IRVisitor::visit;
    void visit(const ir::Store* st) override {
      if (st->array.get() == want) found = st->array;
      IRVisitor::visit(st);
    }
    void visit(const ir::AtomicUpdate* st) override {
      if (st->array.get() == want) found = st->array;
      IRVisitor::visit(st);
    }
    void visit(const ir::MatMul* st) override {
      if (st->c.get() == want) found = st->c;
      IRVisitor::visit(st);
    }
    void visit(const ir::For* f) override {
      for (const ir::ArrayReduction& r : f->schedule.array_reductions)
        if (r.array.get() == want) found = r.array;
      IRVisitor::visit(f);
    }
  } find;
  find.want = a;
  find.visit(body);
  return find.found;
}

Expr IndexFacts::State::unwrapped(const Expr& index, const ir::ArrayVar& array, int dim, bool* wraps) const {
  *wraps = false;
  auto sel = index->as<ir::Select>();
  if (!sel) return index;
  auto lt = sel->cond->as<ir::Compare>();
  auto zero = lt ? lt->b->as<ir::IntImm>() : nullptr;
  auto add = binary(sel->t, {BinaryOp::Add});
  auto dim_of = add ? add->b->as<ir::ArrayDim>() : nullptr;
  if (lt && lt->op == ir::CompareOp::LT && zero && zero->value == 0 && dim_of && dim_of->array == array &&
      dim_of->dim == dim && key(lt->a) == key(sel->f) && key(add->a) == key(sel->f)) {
    *wraps = true;
    return sel->f;
  }
  return index;
}

Expr IndexFacts::State::guarded(Expr cond, const std::vector<Expr>& tested) const {
  std::vector<Expr> leaves;
  std::set<std::string> seen;
  std::function<void(const Expr&)> collect = [&](const Expr& e) {
    // The operations range() writes; any other value (an invariant product
    // of variables, say) is computed as the kernel computes it, so it is
    // itself a leaf.
    auto b =
        binary(e, {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::PyMin, BinaryOp::PyMax, BinaryOp::FloorDiv});
    auto c = e->as<ir::Cast>();
    auto u = e->as<ir::Unary>();
    if (b && (b->op != BinaryOp::Mul || b->b->as<ir::IntImm>()) &&
        (b->op != BinaryOp::FloorDiv || b->b->as<ir::IntImm>())) {
      collect(b->a);
      collect(b->b);
    } else if (c && keeps_value(c)) {
      collect(c->value);
    } else if (u && u->op == ir::UnaryOp::Neg) {
      collect(u->a);
    } else if (!e->as<ir::IntImm>() && seen.insert(key(e)).second) {
      leaves.push_back(e);
    }
  };
  for (const Expr& e : tested) collect(e);
  for (const Expr& leaf : leaves) {
    Expr v = int64(leaf);
    cond = all_of(cond, ir::Compare::make(ir::CompareOp::LE, v, imm(kGuard)));
    if (!leaf->as<ir::ArrayDim>()) cond = all_of(cond, ir::Compare::make(ir::CompareOp::GE, v, imm(-kGuard)));
  }
  return cond;
}
}  // namespace plait::analysis
