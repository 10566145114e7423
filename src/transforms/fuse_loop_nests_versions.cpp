// Loop fusion, first steps: allocations hoisted out of loops, array
// statements versioned on their broadcast flags and overlap tests unswitched,
// so that the nests of each version can fuse (fuse_loop_nests_impl.h).
#include "transforms/fuse_loop_nests_impl.h"

namespace plait::transforms::fusion {

Stmt Fuser::run(const Stmt& body) {
  // Removing the broadcast flags that are always false makes more extents
  // canonical, which may show more flags to be false.
  Stmt start = body;
  for (int round = 0; round < 2; ++round) {
    facts_ = gather_facts(params_, start);
    start = prepare(start);
  }
  facts_ = gather_facts(params_, start);
  total_mentions_ = count_mentions(start);
  return hoist_allocations(rewrite(start));
}

Stmt Fuser::hoist_allocations(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case ir::NodeKind::Block: {
      std::vector<Stmt> out;
      for (const auto& c : s->as<ir::Block>()->stmts) {
        Stmt inner = hoist_allocations(c);
        auto loop = inner->as<ir::For>();
        auto body = loop ? loop->body->as<ir::Block>() : nullptr;
        if (!body || ir::is_parallel(loop->schedule.kind)) {
          out.push_back(inner);
          continue;
        }
        analysis::VarUses changed = analysis::uses_of(loop->body);
        changed.writes.insert(loop->var.get());
        ArraySet hoisted;
        std::vector<Stmt> kept;
        for (const auto& st : body->stmts) {
          bool move = false;
          if (auto a = st->as<ir::Allocate>();
              a && per_iteration_.count(a->array.get()) && a->fill == ir::FillKind::Uninitialized) {
            move = true;
            for (const auto& e : a->shape) {
              analysis::VarUses u = analysis::uses_of(e);
              for (const ir::VarInfo* v : u.reads) move = move && !changed.writes.count(v);
              for (const ArrayInfo* x : u.arrays) move = move && !changed.array_binds.count(x);
            }
          } else if (auto b = st->as<ir::ArrayBind>()) {
            move = per_iteration_.count(b->dst.get()) && hoisted.count(b->src.get());
          }
          if (move) {
            const ArrayInfo* bound =
                st->as<ir::Allocate>() ? st->as<ir::Allocate>()->array.get() : st->as<ir::ArrayBind>()->dst.get();
            hoisted.insert(bound);
            out.push_back(st);
          } else {
            kept.push_back(st);
          }
        }
        out.push_back(hoisted.empty() ? inner
                                      : ir::For::make(loop->var, loop->begin, loop->end, loop->step,
                                                      ir::Block::make(kept, body->loc), loop->schedule, loop->loc));
      }
      return ir::Block::make(out, s->loc);
    }
    case ir::NodeKind::For: {
      auto f = s->as<ir::For>();
      return ir::For::make(f->var, f->begin, f->end, f->step, hoist_allocations(f->body), f->schedule, f->loc);
    }
    case ir::NodeKind::While: {
      auto w = s->as<ir::While>();
      return ir::While::make(w->cond, hoist_allocations(w->body), w->loc);
    }
    case ir::NodeKind::If: {
      auto i = s->as<ir::If>();
      return ir::If::make(i->cond, hoist_allocations(i->then_case),
                          i->else_case ? hoist_allocations(i->else_case) : nullptr, i->loc);
    }
    default:
      return s;
  }
}

Stmt Fuser::prepare(const Stmt& body) {
  CanonicalExtents canon(facts_);
  // Broadcast flags (see version_broadcasts) that compare an extent with
  // itself once extents are written canonically (`m.shape[0]` of `m =
  // x.max(axis=-1, keepdims=True)` is `x.shape[0]`) are false: their
  // selects take the usual side everywhere.
  struct Flags : ir::IRVisitor {
    std::vector<const ir::Assign*> assigns;
    using IRVisitor::visit;
    void visit(const ir::Assign* a) override {
      if (is_broadcast_flag(a->var)) assigns.push_back(a);
    }
  } flags;
  flags.visit(body);
  ir::VarMap<Expr> never;
  for (const ir::Assign* a : flags.assigns) {
    // (The folded value stays alive while its BoolImm is read.)
    const Expr folded = fold(canon.mutate(a->value));
    auto b = folded->as<ir::BoolImm>();
    if (b && !b->value) never[a->var.get()] = nullptr;
  }
  // Asserts compare extents; written canonically they stop mentioning the
  // temporaries whose extents they check, which may then shrink.
  struct Prepare : AllFalse {
    using AllFalse::visit;
    CanonicalExtents* canon;
    Stmt visit(const ir::Assert* a, const Stmt&) override {
      Expr cond = fold(canon->mutate(mutate(a->cond)));
      // A check of an extent against itself always holds.
      if (auto c = cond->as<ir::BoolImm>(); c && c->value) return nullptr;
      return ir::Assert::make(cond, a->error_kind, a->message, a->loc);
    }
    Stmt visit(const ir::Allocate* a, const Stmt&) override {
      std::vector<Expr> shape;
      for (const auto& e : a->shape) shape.push_back(fold(canon->mutate(mutate(e))));
      return ir::Allocate::make(a->array, shape, a->fill, a->fill_value, a->loc);
    }
    Stmt visit(const ir::Assign* a, const Stmt& self) override {
      if (flags->count(a->var.get())) return nullptr;
      return IRMutator::visit(a, self);
    }
  } prepare;
  prepare.flags = &never;
  prepare.canon = &canon;
  return prepare.mutate(body);
}

Stmt Fuser::rewrite(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case ir::NodeKind::Block: {
      std::vector<Stmt> stmts;
      for (const auto& c : s->as<ir::Block>()->stmts) stmts.push_back(rewrite(c));
      version_broadcasts(stmts);
      fuse_block(stmts);
      unswitch_overlap_tests(stmts);
      return ir::Block::make(stmts, s->loc);
    }
    case ir::NodeKind::For: {
      auto f = s->as<ir::For>();
      return ir::For::make(f->var, f->begin, f->end, f->step, rewrite(f->body), f->schedule, f->loc);
    }
    case ir::NodeKind::While: {
      auto w = s->as<ir::While>();
      return ir::While::make(w->cond, rewrite(w->body), w->loc);
    }
    case ir::NodeKind::If: {
      auto i = s->as<ir::If>();
      return ir::If::make(i->cond, rewrite(i->then_case), i->else_case ? rewrite(i->else_case) : nullptr, i->loc);
    }
    default:
      return s;
  }
}

bool Fuser::same_value_earlier(const Expr& e, const std::vector<Stmt>& stmts, size_t at, size_t from) {
  analysis::VarUses between;
  for (size_t k = at; k < from; ++k) {
    analysis::VarUses u = analysis::uses_of(stmts[k]);
    between.writes.insert(u.writes.begin(), u.writes.end());
    between.array_binds.insert(u.array_binds.begin(), u.array_binds.end());
  }
  struct Reads : ir::IRVisitor {
    bool loads = false;
    ArraySet arrays;
    using IRVisitor::visit;
    void visit(const ir::Load*) override { loads = true; }
    void visit(const ir::ArrayDim* d) override { arrays.insert(d->array.get()); }
    void visit(const ir::ArraysOverlap* o) override {
      arrays.insert(o->a.get());
      arrays.insert(o->b.get());
    }
  } reads;
  reads.visit(e);
  if (reads.loads) return false;
  for (const ArrayInfo* a : reads.arrays)
    if (between.array_binds.count(a)) return false;
  for (const ir::VarInfo* v : analysis::uses_of(e).reads)
    if (between.writes.count(v)) return false;
  return true;
}

namespace {

// The arrays that a parallel loop among `stmts` binds (an allocation or a
// binding in its body).
ArraySet bound_in_parallel_loops(const std::vector<Stmt>& stmts) {
  struct Scan : ir::IRVisitor {
    int loops = 0;
    ArraySet bound;
    using IRVisitor::visit;
    void visit(const ir::For* f) override {
      const bool parallel = ir::is_parallel(f->schedule.kind);
      loops += parallel;
      IRVisitor::visit(f);
      loops -= parallel;
    }
    void visit(const ir::Allocate* a) override {
      if (loops) bound.insert(a->array.get());
      IRVisitor::visit(a);
    }
    void visit(const ir::ArrayBind* b) override {
      if (loops) bound.insert(b->dst.get());
    }
  } scan;
  for (const auto& st : stmts) scan.visit(st);
  return scan.bound;
}

// Replaces arrays by others (`fresh`) wherever they are named.
struct FreshArrays : ir::IRMutator {
  ArrayMap<ir::ArrayVar> fresh;
  ir::ArrayVar renamed(const ir::ArrayVar& a) const {
    auto it = fresh.find(a.get());
    return it == fresh.end() ? a : it->second;
  }
  Expr visit(const ir::Load* l, const Expr&) override {
    bool changed = false;
    return ir::Load::make(renamed(l->array), mutate_exprs(l->indices, &changed), l->checked, l->loc);
  }
  Expr visit(const ir::ArrayDim* d, const Expr&) override {
    return ir::ArrayDim::make(renamed(d->array), d->dim, d->loc);
  }
  Expr visit(const ir::ArraysOverlap* o, const Expr&) override {
    return ir::ArraysOverlap::make(renamed(o->a), renamed(o->b), o->unless_same_view, o->loc);
  }
  Stmt visit(const ir::Store* st, const Stmt&) override {
    bool changed = false;
    return ir::Store::make(renamed(st->array), mutate_exprs(st->indices, &changed), mutate(st->value), st->checked,
                           st->loc);
  }
  Stmt visit(const ir::AtomicUpdate* u, const Stmt&) override {
    bool changed = false;
    return ir::AtomicUpdate::make(renamed(u->array), mutate_exprs(u->indices, &changed), u->op, mutate(u->value),
                                  u->checked, u->loc);
  }
  Stmt visit(const ir::Allocate* a, const Stmt&) override {
    bool changed = false;
    return ir::Allocate::make(renamed(a->array), mutate_exprs(a->shape, &changed), a->fill, mutate(a->fill_value),
                              a->loc);
  }
  Stmt visit(const ir::ArrayBind* b, const Stmt&) override {
    return ir::ArrayBind::make(renamed(b->dst), renamed(b->src), b->loc);
  }
  Stmt visit(const ir::For* f, const Stmt&) override {
    ir::LoopSchedule schedule = f->schedule;
    for (auto& r : schedule.array_reductions) r.array = renamed(r.array);
    return ir::For::make(f->var, mutate(f->begin), mutate(f->end), mutate(f->step), mutate(f->body), schedule, f->loc);
  }
  Stmt visit(const ir::MatMul* m, const Stmt&) override {
    return ir::MatMul::make(renamed(m->c), renamed(m->a), m->a_transposed, renamed(m->b), m->b_transposed, mutate(m->m),
                            mutate(m->n), mutate(m->k), mutate(m->alpha), mutate(m->beta), mutate(m->loops), m->loc,
                            m->triangle);
  }
};

}  // namespace

void Fuser::version_broadcasts(std::vector<Stmt>& stmts) {
  CanonicalExtents canon(facts_);
  ir::VarMap<Expr> flags;    // flag -> its value at the start of the region
  ir::VarMap<size_t> where;  // flag -> the statement that computes it
  std::optional<size_t> start;
  for (size_t p = 0; p < stmts.size(); ++p) {
    auto a = stmts[p]->as<ir::Assign>();
    if (!a || !(is_broadcast_flag(a->var) || is_overlap_flag(a->var))) continue;
    if (!start) start = p;
    Expr value = canon.mutate(a->value);
    if (!same_value_earlier(value, stmts, *start, p)) continue;
    flags[a->var.get()] = value;
    where[a->var.get()] = p;
  }
  if (flags.empty()) return;
  // The region takes in the neighbouring statements that fusion deals
  // with (nests, allocations, bindings, checks, scalars), so that the
  // usual version holds the whole run of nests.
  auto fusable_kind = [](const Stmt& st) {
    switch (st->kind) {
      case ir::NodeKind::For:
      case ir::NodeKind::Allocate:
      case ir::NodeKind::ArrayBind:
      case ir::NodeKind::Assert:
      case ir::NodeKind::Assign:
      case ir::NodeKind::Store:
        return true;
      default:
        return false;
    }
  };
  while (*start > 0 && fusable_kind(stmts[*start - 1])) {
    bool same = true;
    for (const auto& [v, value] : flags) same = same && same_value_earlier(value, stmts, *start - 1, where.at(v));
    if (!same) break;
    --*start;
  }
  size_t end = *start;
  for (size_t p = *start; p < stmts.size(); ++p)
    for (const ir::VarInfo* v : analysis::uses_of(stmts[p]).reads)
      if (flags.count(v)) end = p + 1;
  while (end < stmts.size() && fusable_kind(stmts[end])) ++end;
  // A flag must keep its value through the region: assigned once, at the
  // statement that computes it.
  for (size_t p = *start; p < end; ++p) {
    auto a = stmts[p]->as<ir::Assign>();
    for (const ir::VarInfo* v : analysis::uses_of(stmts[p]).writes)
      if (flags.count(v) && !(a && a->var.get() == v)) return;
  }
  std::vector<Stmt> prologue, general;
  Expr any;
  bool broadcasts = false, overlaps = false;
  for (size_t p = *start; p < end; ++p) {
    auto a = stmts[p]->as<ir::Assign>();
    if (a && flags.count(a->var.get())) {
      (is_overlap_flag(a->var) ? overlaps : broadcasts) = true;
      prologue.push_back(ir::Assign::make(a->var, flags.at(a->var.get()), a->loc));
      Expr f = ir::VarRef::make(a->var, a->loc);
      any = any ? ir::Logical::make(ir::LogicalOp::Or, any, f, a->loc) : f;
      continue;
    }
    general.push_back(stmts[p]);
  }
  AllFalse all_false;
  all_false.flags = &flags;
  std::vector<Stmt> usual;
  for (const auto& st : general) {
    Stmt plain = all_false.mutate(st);
    auto block = plain ? plain->as<ir::Block>() : nullptr;
    if (block && st->as<ir::If>())
      usual.insert(usual.end(), block->stmts.begin(), block->stmts.end());
    else if (plain)
      usual.push_back(plain);
  }
  // Arrays that the region's parallel loops bind and nothing outside the
  // region names get their own copies in the usual version, so that each
  // version's loop binds arrays of its own, declared in it, as a parallel
  // loop needs (a sparse program's row temporaries).
  FreshArrays fresh_arrays;
  {
    const std::vector<Stmt> region(stmts.begin() + static_cast<long>(*start), stmts.begin() + static_cast<long>(end));
    const ArrayMap<int> mentioned = count_mentions(ir::Block::make(region, stmts[*start]->loc));
    for (const ir::ArrayInfo* a : bound_in_parallel_loops(usual)) {
      auto m = mentioned.find(a);
      if (facts_.params.count(a) || m == mentioned.end() || m->second != total_mentions_[a]) continue;
      fresh_arrays.fresh[a] = std::make_shared<ir::ArrayInfo>(*a);
    }
    if (!fresh_arrays.fresh.empty())
      for (auto& st : usual) st = fresh_arrays.mutate(st);
  }
  // The usual version is analysed on its own: the arrays bound in the
  // region and mentioned nowhere else count only its mentions; the others
  // count both versions'.
  auto mentions_in = [](const std::vector<Stmt>& list) {
    ArrayMap<int> count;
    for (const auto& st : list)
      for (const auto& [a, n] : count_mentions(st)) count[a] += n;
    return count;
  };
  ArrayMap<int> in_region =
      mentions_in(std::vector<Stmt>(stmts.begin() + static_cast<long>(*start), stmts.begin() + static_cast<long>(end)));
  ArrayMap<int> in_general = mentions_in(general), in_usual = mentions_in(usual), in_prologue = mentions_in(prologue);
  for (const auto& [a, n] : in_region) {
    bool local = n == total_mentions_[a] && !facts_.params.count(a);
    total_mentions_[a] = local ? in_usual[a] : total_mentions_[a] - n + in_general[a] + in_usual[a] + in_prologue[a];
  }
  for (const auto& [a, copy] : fresh_arrays.fresh) {
    total_mentions_[a] = in_general[a];
    total_mentions_[copy.get()] = in_usual[copy.get()];
  }
  // Flags whose value depended on another flag (the target's broadcast,
  // after the value's) are plain extent tests in the usual version: version
  // it again, so that its nests keep plain indices too. Each level copies
  // the region once more: past kMaxVersionLevels the usual version keeps
  // its tests (a chain of statements whose slices disagree, found by the
  // fuzzer, made megabytes of code; NPBench's kernels need at most 5).
  if (version_levels_ < kMaxVersionLevels) {
    ++version_levels_;
    version_broadcasts(usual);
    --version_levels_;
  }
  fuse_block(usual);
  SourceLoc loc = stmts[*start]->loc;
  remarks.push_back({loc, "fuse_loop_nests",
                     "lines " + std::to_string(loc.line) + "-" + std::to_string(stmts[end - 1]->loc.line) +
                         " are versioned on whether " +
                         (broadcasts && overlaps ? "an extent that is 1 at run time broadcasts or arrays share memory"
                          : broadcasts           ? "an extent that is 1 at run time broadcasts"
                                                 : "arrays share memory") +
                         "; the usual version has " +
                         (broadcasts && overlaps ? "plain indices and no temporaries"
                          : broadcasts           ? "plain indices"
                                                 : "no temporaries")});
  std::vector<Stmt> out(stmts.begin(), stmts.begin() + static_cast<long>(*start));
  out.insert(out.end(), prologue.begin(), prologue.end());
  out.push_back(ir::If::make(any, ir::Block::make(general, loc), ir::Block::make(usual, loc), loc));
  out.insert(out.end(), stmts.begin() + static_cast<long>(end), stmts.end());
  stmts = out;
}

void Fuser::unswitch_overlap_tests(std::vector<Stmt>& stmts) {
  for (size_t p = 0; p < stmts.size(); ++p) {
    auto loop = stmts[p]->as<ir::For>();
    auto body = loop ? loop->body->as<ir::Block>() : nullptr;
    if (!body) continue;
    // Scalars and arrays the loop changes (its variable included).
    analysis::VarUses changed = analysis::uses_of(loop->body);
    changed.writes.insert(loop->var.get());
    struct Assigns : ir::IRVisitor {
      ir::VarMap<int> count;
      using IRVisitor::visit;
      void visit(const ir::Assign* a) override {
        ++count[a->var.get()];
        IRVisitor::visit(a);
      }
    } assigns;
    assigns.visit(loop->body);
    ir::VarMap<Expr> flags;
    std::vector<Stmt> prologue;
    for (const auto& st : body->stmts) {
      auto a = st->as<ir::Assign>();
      if (!a || !(is_broadcast_flag(a->var) || is_overlap_flag(a->var)) || assigns.count[a->var.get()] != 1) continue;
      struct Reads : ir::IRVisitor {
        bool loads = false;
        using IRVisitor::visit;
        void visit(const ir::Load*) override { loads = true; }
      } reads;
      reads.visit(a->value);
      analysis::VarUses u = analysis::uses_of(a->value);
      bool invariant = !reads.loads;
      for (const ir::VarInfo* v : u.reads) invariant = invariant && (!changed.writes.count(v) || flags.count(v));
      for (const ArrayInfo* x : u.arrays) invariant = invariant && !changed.array_binds.count(x);
      if (!invariant) continue;
      flags[a->var.get()] = a->value;
      prologue.push_back(st);
    }
    // The versions whose conditions read only those flags, one of them an
    // overlap flag.
    Expr any;
    for (const auto& st : body->stmts) {
      auto i = st->as<ir::If>();
      if (!i || !i->else_case) continue;
      bool only_flags = true, overlap = false;
      for (const ir::VarInfo* v : analysis::uses_of(i->cond).reads) {
        only_flags = only_flags && flags.count(v);
        overlap = overlap || v->name.rfind("_overlap", 0) == 0;
      }
      if (!only_flags || !overlap || !analysis::uses_of(i->cond).arrays.empty()) continue;
      any = any ? ir::Logical::make(ir::LogicalOp::Or, any, i->cond, i->loc) : i->cond;
    }
    if (!any) continue;
    std::vector<Stmt> general, usual;
    for (const auto& st : body->stmts) {
      if (std::find(prologue.begin(), prologue.end(), st) != prologue.end()) continue;
      general.push_back(st);
      auto i = st->as<ir::If>();
      bool version = false;
      if (i && i->else_case) {
        version = analysis::uses_of(i->cond).arrays.empty();
        for (const ir::VarInfo* v : analysis::uses_of(i->cond).reads) version = version && flags.count(v);
      }
      if (!version) {
        usual.push_back(st);
      } else if (auto b = i->else_case->as<ir::Block>()) {
        usual.insert(usual.end(), b->stmts.begin(), b->stmts.end());
      } else {
        usual.push_back(i->else_case);
      }
    }
    auto loop_of = [&](std::vector<Stmt> stmts_of_body) {
      return ir::For::make(loop->var, loop->begin, loop->end, loop->step, ir::Block::make(stmts_of_body, body->loc),
                           loop->schedule, loop->loc);
    };
    // The usual loop gets its own copies of the compiler's scalars (nest
    // indices, accumulators), so that each is declared inside one loop:
    // shared by both, it would be declared before them, and a parallel
    // region around the loop would write it in one thread (`omp single`).
    ir::VarSet elsewhere;
    for (size_t q = 0; q < stmts.size(); ++q)
      if (q != p) {
        analysis::VarUses u = analysis::uses_of(stmts[q]);
        elsewhere.insert(u.reads.begin(), u.reads.end());
        elsewhere.insert(u.writes.begin(), u.writes.end());
      }
    struct FreshScalars : ir::IRMutator {
      ir::VarMap<ir::Var> fresh;
      ir::Var renamed(const ir::Var& v) {
        auto it = fresh.find(v.get());
        return it == fresh.end() ? v : it->second;
      }
      Expr visit(const ir::VarRef* r, const Expr& self) override {
        auto it = fresh.find(r->var.get());
        return it == fresh.end() ? self : ir::VarRef::make(it->second, r->loc);
      }
      Stmt visit(const ir::Assign* a, const Stmt&) override {
        return ir::Assign::make(renamed(a->var), mutate(a->value), a->loc);
      }
      Stmt visit(const ir::For* f, const Stmt&) override {
        ir::LoopSchedule schedule = f->schedule;
        for (auto& v : schedule.privates) v = renamed(v);
        for (auto& r : schedule.reductions) r.var = renamed(r.var);
        return ir::For::make(renamed(f->var), mutate(f->begin), mutate(f->end), mutate(f->step), mutate(f->body),
                             schedule, f->loc);
      }
    } fresh_scalars;
    for (const ir::VarInfo* v : analysis::uses_of(ir::Block::make(usual, body->loc)).writes)
      if (v->name.rfind('_', 0) == 0 && v != loop->var.get() && !elsewhere.count(v)) {
        auto copy = std::make_shared<ir::VarInfo>(*v);
        fresh_scalars.fresh[v] = copy;
      }
    for (auto& st : usual) st = fresh_scalars.mutate(st);
    remarks.push_back({loop->loc, "fuse_loop_nests",
                       "the loop over '" + loop->var->name +
                           "' is versioned on its statements' tests (made once, "
                           "before it); the usual version runs their plain nests"});
    std::vector<Stmt> out(stmts.begin(), stmts.begin() + static_cast<long>(p));
    out.insert(out.end(), prologue.begin(), prologue.end());
    out.push_back(ir::If::make(any, loop_of(general), loop_of(usual), loop->loc));
    out.insert(out.end(), stmts.begin() + static_cast<long>(p) + 1, stmts.end());
    p += prologue.size();
    stmts = out;
  }
}

}  // namespace plait::transforms::fusion
