// Pass: bounds checking (see insert_bounds_checks.h).
#include "transforms/insert_bounds_checks.h"

#include <map>
#include <set>

#include "analysis/index_ranges.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

// Where an access is checked: nowhere (its indices are proven in range), at
// each access, or once before the loop at `level` of the enclosing loops.
struct Decision {
  static constexpr int kProven = -2;
  static constexpr int kEachAccess = -1;
  int level = kProven;
  ir::Expr cond;  // for a level: the indices are in range when it holds
};

class Decider {
 public:
  Decider(const ir::Function& f, bool scans) : facts(f.body, scans) {}
  analysis::IndexFacts facts;

  Decision decide(const ir::ArrayVar& a, const std::vector<ir::Expr>& indices) {
    if (a->indices_in_range) return {};
    std::vector<int> open;
    for (size_t d = 0; d < indices.size(); ++d)
      if (!facts.proves_in_range(indices[d], a, static_cast<int>(d))) open.push_back(static_cast<int>(d));
    if (open.empty()) return {};
    Decision best{Decision::kEachAccess, nullptr};
    for (size_t level = facts.depth(); level-- > 0;) {
      if (inside_collapsed_nest(level)) continue;
      ir::Expr cond;
      for (int d : open) {
        ir::Expr c = facts.in_range_condition(indices[static_cast<size_t>(d)], a, d, level);
        if (!c) return best;
        cond = cond ? ir::Logical::make(ir::LogicalOp::And, cond, c) : c;
      }
      best = {static_cast<int>(level), cond};
    }
    return best;
  }

 private:
  // A loop of a collapsed nest other than its first: no statement may come
  // between the loops of the nest.
  bool inside_collapsed_nest(size_t level) const {
    for (size_t outer = 0; outer < level; ++outer)
      if (facts.loop(outer)->schedule.collapse > static_cast<int>(level - outer)) return true;
    return false;
  }
};

// What the statements of a block establish for the statements after them:
// a check that fails stops the block, so its condition holds after it; an
// assignment gives its variable's value, an allocation its array's shape. Forgotten when the block ends.
class Facts {
 public:
  explicit Facts(analysis::IndexFacts& facts) : facts_(facts) {}
  Facts(const Facts&) = delete;
  Facts& operator=(const Facts&) = delete;
  ~Facts() {
    for (; conditions_ > 0; --conditions_) facts_.pop_condition();
    for (; assignments_ > 0; --assignments_) facts_.pop_assignment();
  }
  void forget_bound_in(const ir::Stmt& st) { facts_.forget_bound_in(st); }
  void learn(const ir::Stmt& st) {
    if (auto a = st->as<ir::Assert>()) {
      facts_.push_condition(a->cond, true);
      ++conditions_;
    } else if (st->as<ir::Assign>() || st->as<ir::Allocate>()) {
      facts_.push_assignment(st);
      ++assignments_;
    }
  }

 private:
  analysis::IndexFacts& facts_;
  size_t conditions_ = 0, assignments_ = 0;
};

// The conditions of the accesses a loop's body checks once before it.
class Collector : public ir::IRVisitor {
 public:
  Collector(Decider& decider, size_t level) : decider_(decider), level_(static_cast<int>(level)) {}
  std::vector<ir::Expr> conds;
  std::set<std::string> arrays;

  using IRVisitor::visit;
  void visit(const ir::For* f) override {
    visit(f->begin);
    visit(f->end);
    visit(f->step);
    decider_.facts.push_loop(f);
    visit(f->body);
    decider_.facts.pop_loop();
  }
  void visit(const ir::If* s) override {
    visit(s->cond);
    decider_.facts.push_condition(s->cond, true);
    visit(s->then_case);
    decider_.facts.pop_condition();
    if (s->else_case) {
      decider_.facts.push_condition(s->cond, false);
      visit(s->else_case);
      decider_.facts.pop_condition();
    }
  }
  void visit(const ir::Block* b) override {
    Facts facts(decider_.facts);
    for (const ir::Stmt& st : b->stmts) {
      facts.forget_bound_in(st);
      visit(st);
      facts.learn(st);
    }
  }
  void visit(const ir::Load* l) override {
    IRVisitor::visit(l);
    add(l->array, l->indices);
  }
  void visit(const ir::Store* s) override {
    IRVisitor::visit(s);
    add(s->array, s->indices);
  }
  void visit(const ir::AtomicUpdate* s) override {
    IRVisitor::visit(s);
    add(s->array, s->indices);
  }

 private:
  void add(const ir::ArrayVar& a, const std::vector<ir::Expr>& indices) {
    Decision d = decider_.decide(a, indices);
    if (d.level != level_) return;
    if (seen_.insert(ir::to_string(d.cond)).second) conds.push_back(d.cond);
    arrays.insert(a->name);
  }
  Decider& decider_;
  int level_;
  std::set<std::string> seen_;
};

class BoundsChecker : public ir::IRMutator {
 public:
  BoundsChecker(const ir::Function& f, const BoundsCheckOptions& options) : decider_(f, options.scans) {}
  std::vector<ir::Remark> remarks;
  // The scans of whole arrays that the conditions read, for the function's entry.
  ir::Stmt with_whole_scans(const ir::Stmt& body) {
    if (whole_scans_.empty()) return body;
    std::vector<ir::Stmt> stmts;
    for (const auto& [scan, loc] : whole_scans_) append_scan(scan, loc, stmts);
    stmts.push_back(body);
    return ir::Block::make(std::move(stmts), body->loc);
  }

 protected:
  ir::Stmt visit(const ir::For* f, const ir::Stmt&) override {
    ir::Expr begin = mutate(f->begin), end = mutate(f->end), step = mutate(f->step);
    decider_.facts.push_loop(f);
    // Inside a checked copy no loop is copied again: the copies would
    // multiply with the depth of the nest.
    Collector collector(decider_, decider_.facts.depth() - 1);
    if (checked_copies_ == 0) collector.visit(f->body);
    fast_.push_back(!collector.conds.empty());
    ir::Stmt body = mutate(f->body);
    ir::Stmt loop = ir::For::make(f->var, begin, end, step, body, f->schedule, f->loc);
    if (collector.conds.empty()) {
      fast_.pop_back();
      decider_.facts.pop_loop();
      return loop;
    }
    fast_.back() = false;
    ++checked_copies_;
    ir::Stmt checked_body = mutate(f->body);
    --checked_copies_;
    fast_.pop_back();
    decider_.facts.pop_loop();
    ir::Expr cond;
    for (const ir::Expr& c : collector.conds) cond = cond ? ir::Logical::make(ir::LogicalOp::And, cond, c) : c;
    const std::vector<analysis::IndexFacts::IndexScan> scans = decider_.facts.scans_read(cond);
    // The condition reads the loop's bounds where the loop would: their
    // loads are checked as the loop's own are.
    cond = mutate(cond);
    std::string names, scanned;
    for (const std::string& n : collector.arrays) names += (names.empty() ? "'" : ", '") + n + "'";
    for (const auto& scan : scans) scanned += (scanned.empty() ? "'" : ", '") + scan.array->name + "'";
    note(f->loc, "loop over '" + f->var->name + "': the indices of " + names + " are checked once before the loop" +
                     (scans.empty() ? "" : " (with the least and greatest elements of " + scanned +
                                               " it reads, found by a scan)") +
                     "; the loop runs unchecked when they stay in range, else it checks each access");
    ir::Stmt versions =
        ir::If::make(cond, loop, ir::For::make(f->var, begin, end, step, checked_body, f->schedule, f->loc), f->loc);
    std::vector<ir::Stmt> stmts;
    for (const auto& scan : scans) {
      if (!scan.whole) {
        append_scan(scan, f->loc, stmts);
      } else if (whole_scanned_.insert(scan.least.get()).second) {
        whole_scans_.push_back({scan, f->loc});
        note(f->loc, "loop over '" + f->var->name + "': the elements of '" + scan.array->name +
                         "' it reads are bounded by one scan of the whole array when the call starts (no statement "
                         "writes it)");
      }
    }
    if (stmts.empty()) return versions;
    stmts.push_back(versions);
    return ir::Block::make(std::move(stmts), f->loc);
  }
  ir::Stmt visit(const ir::Block* b, const ir::Stmt&) override {
    std::vector<ir::Stmt> stmts;
    Facts facts(decider_.facts);
    for (const ir::Stmt& st : b->stmts) {
      facts.forget_bound_in(st);
      stmts.push_back(mutate(st));
      facts.learn(st);
    }
    return ir::Block::make(std::move(stmts), b->loc);
  }
  ir::Stmt visit(const ir::If* s, const ir::Stmt&) override {
    ir::Expr cond = mutate(s->cond);
    decider_.facts.push_condition(s->cond, true);
    ir::Stmt then_case = mutate(s->then_case);
    decider_.facts.pop_condition();
    ir::Stmt else_case;
    if (s->else_case) {
      decider_.facts.push_condition(s->cond, false);
      else_case = mutate(s->else_case);
      decider_.facts.pop_condition();
    }
    return ir::If::make(cond, then_case, else_case, s->loc);
  }
  ir::Expr visit(const ir::Load* l, const ir::Expr&) override {
    bool changed = false;
    std::vector<ir::Expr> indices = mutate_exprs(l->indices, &changed);
    return ir::Load::make(l->array, indices, checked(l->array, l->indices, l->loc), l->loc);
  }
  ir::Stmt visit(const ir::Store* s, const ir::Stmt&) override {
    bool changed = false;
    std::vector<ir::Expr> indices = mutate_exprs(s->indices, &changed);
    return ir::Store::make(s->array, indices, mutate(s->value), checked(s->array, s->indices, s->loc), s->loc);
  }
  ir::Stmt visit(const ir::AtomicUpdate* s, const ir::Stmt&) override {
    bool changed = false;
    std::vector<ir::Expr> indices = mutate_exprs(s->indices, &changed);
    return ir::AtomicUpdate::make(s->array, indices, s->op, mutate(s->value), checked(s->array, s->indices, s->loc),
                                  s->loc);
  }

 private:
  bool checked(const ir::ArrayVar& a, const std::vector<ir::Expr>& indices, SourceLoc loc) {
    Decision d = decider_.decide(a, indices);
    if (d.level == Decision::kProven) return false;
    if (d.level >= 0) return !fast_.at(static_cast<size_t>(d.level));
    note(loc, "the index of '" + a->name +
                  "' is checked at each access: its range is not fixed before the loops around it "
                  "(it is loaded, or not affine in their variables, or a bound changes inside them)");
    return true;
  }
  void note(SourceLoc loc, std::string message) {
    if (noted_.insert(std::to_string(loc.line) + ":" + std::to_string(loc.col) + message).second)
      remarks.push_back({loc, "insert_bounds_checks", std::move(message)});
  }
  // The statements that set a scan's results (IndexFacts::IndexScan): the
  // least and greatest of the elements at first..last that lie in the array
  // (the test rejects positions outside it), both 0 when none does. They
  // start at the first element: a scan of indptr over a chunk of rows then
  // bounds the chunk's positions, not all those before it, which a scan of
  // indices over those positions would otherwise read again in each chunk.
  void append_scan(const analysis::IndexFacts::IndexScan& scan, SourceLoc loc, std::vector<ir::Stmt>& out) {
    const ScalarType int64 = ScalarType::py_int();
    auto imm = [&](int64_t v) { return ir::IntImm::make(v, int64, loc); };
    auto op = [&](ir::BinaryOp o, ir::Expr a, ir::Expr b) { return ir::Binary::make(o, a, b, int64, false, loc); };
    auto ref = [&](const ir::Var& v) { return ir::VarRef::make(v, loc); };
    ir::Var at = std::make_shared<ir::VarInfo>("_at_" + scan.array->name, int64, loc, false);
    for (const ir::Var& v : {scan.least, scan.greatest, at}) out.push_back(ir::Declare::make(v, loc));
    out.push_back(ir::Assign::make(scan.least, imm(0), loc));
    out.push_back(ir::Assign::make(scan.greatest, imm(0), loc));
    ir::Expr n = ir::ArrayDim::make(scan.array, 0, loc);
    // min(last, n - 1) + 1 cannot overflow, whatever last holds.
    ir::Expr begin = op(ir::BinaryOp::PyMax, mutate(scan.first), imm(0));
    ir::Expr end = op(ir::BinaryOp::Add, op(ir::BinaryOp::PyMin, mutate(scan.last), op(ir::BinaryOp::Sub, n, imm(1))),
                      imm(1));
    auto element = [&](const ir::Expr& i) {
      ir::Expr v = ir::Load::make(scan.array, {i}, false, loc);
      return v->type != int64 ? ir::Cast::make(int64, v, false, loc) : v;
    };
    out.push_back(ir::If::make(ir::Compare::make(ir::CompareOp::LT, begin, end, loc),
                               ir::Block::make({ir::Assign::make(scan.least, element(begin), loc),
                                                ir::Assign::make(scan.greatest, ref(scan.least), loc)},
                                               loc),
                               nullptr, loc));
    ir::Expr value = element(ref(at));
    std::vector<ir::Stmt> updates = {
        ir::Assign::make(scan.least, op(ir::BinaryOp::PyMin, ref(scan.least), value), loc),
        ir::Assign::make(scan.greatest, op(ir::BinaryOp::PyMax, ref(scan.greatest), value), loc)};
    ir::Stmt body = ir::Block::make(std::move(updates), loc);
    ir::LoopSchedule schedule;
    // Threads outside parallel loops, SIMD lanes unless a loop around is a
    // vector loop already (whose inner loops run serially): scans are made
    // for the CPU only.
    bool in_parallel_loop = false, in_vector_loop = false;
    for (size_t k = 0; k < decider_.facts.depth(); ++k) {
      in_parallel_loop = in_parallel_loop || ir::is_parallel(decider_.facts.loop(k)->schedule.kind);
      in_vector_loop = in_vector_loop || ir::is_vectorized(decider_.facts.loop(k)->schedule.kind);
    }
    if (!in_vector_loop) {
      schedule.kind = in_parallel_loop ? ir::LoopKind::Vectorized : ir::LoopKind::ParallelVectorized;
      schedule.reductions = {{scan.least, ir::ReduceOp::Min}, {scan.greatest, ir::ReduceOp::Max}};
    }
    out.push_back(ir::For::make(at, begin, end, imm(1), body, schedule, loc));
  }

  Decider decider_;
  std::set<const ir::VarInfo*> whole_scanned_;
  std::vector<std::pair<analysis::IndexFacts::IndexScan, SourceLoc>> whole_scans_;
  std::vector<bool> fast_;  // per enclosing loop: writing its unchecked version
  int checked_copies_ = 0;  // the checked copies being written around this point
  std::set<std::string> noted_;
};

}  // namespace

void insert_bounds_checks(ir::Function& function, const BoundsCheckOptions& options) {
  BoundsChecker checker(function, options);
  function.body = checker.with_whole_scans(checker.mutate(function.body));
  for (auto& r : checker.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
