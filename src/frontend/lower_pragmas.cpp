// Lowering: the pragmas on loops and statements, into the loop schedule
// (lowerer.h).
#include "frontend/array_lowering.h"
#include "frontend/lowerer.h"

#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <set>

#include "frontend/ast.h"
#include "ir/ir.h"
#include "runtime/abi.h"

namespace plait::lowering {

void Lowerer::check_pragmas_allowed(const ast::Stmt& s) {
  for (const auto& p : s.pragmas) {
    if (p.words.size() == 1 && p.words[0] == "atomic" && p.clauses.empty()) continue;
    for (const auto& w : p.words) {
      if (w == "atomic") fail(ErrorKind::Pragma, "'#pragma atomic' takes no other words or clauses", p.loc);
    }
    if (!p.words.empty() && (p.words[0] == "parallel" || p.words[0] == "simd" || p.words[0] == "sequential"))
      fail(ErrorKind::Pragma, "'#pragma " + p.text + "' must be directly above a for loop", p.loc);
    if (p.words.empty() && !p.clauses.empty() && p.clauses[0].name == "simd")
      fail(ErrorKind::Pragma, "'#pragma " + p.text + "' must be directly above a for loop", p.loc);
    if (p.text.find("=>") != std::string::npos)
      unsupported("sliced-index pragmas ('" + p.text + "') need array expressions, which are not supported yet", p.loc);
    fail(ErrorKind::Pragma, "unknown pragma '" + p.text + "'", p.loc);
  }
}

ir::LoopSchedule Lowerer::parse_loop_pragmas(const ast::Stmt& s, bool is_prange) {
  ir::LoopSchedule sched;
  bool parallel = is_prange, simd = false, sequential = false;
  for (const auto& p : s.pragmas) {
    if (p.text.find("=>") != std::string::npos)
      unsupported("sliced-index pragmas ('" + p.text + "') need array expressions, which are not supported yet", p.loc);
    if (sched.pragma_loc.line == 0) sched.pragma_loc = p.loc;
    for (size_t i = 0; i < p.words.size(); ++i) {
      const std::string& w = p.words[i];
      if (w == "parallel")
        parallel = true;
      else if (w == "simd")
        simd = true;
      else if (w == "sequential")
        sequential = true;
      else if (w == "for") {
        if (i == 0) fail(ErrorKind::Pragma, "'for' must follow 'parallel' or 'sequential' in a pragma", p.loc);
      } else if (w == "atomic") {
        fail(ErrorKind::Pragma,
             "'#pragma atomic' must be directly above an update statement such as x[k] += v, not a loop", p.loc);
      } else {
        fail(ErrorKind::Pragma, "unknown pragma word '" + w + "' (known: parallel, for, simd, sequential, atomic)",
             p.loc);
      }
    }
    for (const auto& cl : p.clauses) {
      auto positive_int = [&](const std::string& text) -> int {
        try {
          size_t used = 0;
          int v = std::stoi(text, &used);
          if (used == text.size() && v > 0) return v;
        } catch (const std::exception&) {
        }
        if (globals_.count(text) && globals_.at(text).kind == GlobalValue::Kind::Int && globals_.at(text).int_value > 0)
          return static_cast<int>(globals_.at(text).int_value);
        fail(ErrorKind::Pragma, "'" + cl.name + "(...)' needs a positive integer constant, got '" + text + "'", cl.loc);
      };
      if (cl.name == "simd") {
        simd = true;
        if (cl.args.size() != 1) fail(ErrorKind::Pragma, "simd(N) takes one width", cl.loc);
        sched.simd_width = positive_int(cl.args[0]);
      } else if (cl.name == "num_threads") {
        if (cl.args.size() != 1) fail(ErrorKind::Pragma, "num_threads(N) takes one count", cl.loc);
        sched.num_threads = positive_int(cl.args[0]);
      } else if (cl.name == "reduction") {
        if (cl.args.empty() || cl.args[0].find(':') == std::string::npos)
          fail(ErrorKind::Pragma, "reduction clauses look like reduction(+:s) or reduction(max:a, b)", cl.loc);
        std::string first = cl.args[0];
        size_t colon = first.find(':');
        std::string op = first.substr(0, colon);
        while (!op.empty() && op.back() == ' ') op.pop_back();
        ir::ReduceOp rop;
        if (op == "+")
          rop = ir::ReduceOp::Add;
        else if (op == "*")
          rop = ir::ReduceOp::Mul;
        else if (op == "max")
          rop = ir::ReduceOp::Max;
        else if (op == "min")
          rop = ir::ReduceOp::Min;
        else
          fail(ErrorKind::Pragma, "unknown reduction operator '" + op + "' (known: + * max min)", cl.loc);
        std::vector<std::string> names = {first.substr(colon + 1)};
        for (size_t i = 1; i < cl.args.size(); ++i) names.push_back(cl.args[i]);
        for (std::string n : names) {
          n.erase(0, n.find_first_not_of(' '));
          n.erase(n.find_last_not_of(' ') + 1);
          if (inferring_) continue;
          auto it = locals_.find(n);
          if (it == locals_.end() || !it->second.var)
            fail(ErrorKind::Pragma, "reduction variable '" + n + "' is not a scalar local of this function", cl.loc);
          sched.reductions.push_back({it->second.var, rop});
        }
      } else if (cl.name == "private") {
        for (std::string n : cl.args) {
          if (inferring_) continue;
          auto it = locals_.find(n);
          if (it == locals_.end() || !it->second.var)
            fail(ErrorKind::Pragma, "private variable '" + n + "' is not a scalar local of this function", cl.loc);
          sched.privates.push_back(it->second.var);
        }
      } else {
        fail(ErrorKind::Pragma,
             "unknown pragma clause '" + cl.name + "' (known: reduction, private, num_threads, simd)", cl.loc);
      }
    }
  }
  if (sequential && (parallel || simd))
    fail(ErrorKind::Pragma, "'sequential' contradicts 'parallel'/'simd' on the same loop", sched.pragma_loc);
  if (sequential && is_prange)
    fail(ErrorKind::Pragma, "'#pragma sequential' on a plait.prange loop; use range() for a sequential loop",
         sched.pragma_loc);
  sched.kind = parallel && simd ? ir::LoopKind::ParallelVectorized
               : parallel       ? ir::LoopKind::Parallel
               : simd           ? ir::LoopKind::Vectorized
                                : ir::LoopKind::Serial;
  if (!parallel && !simd && (!sched.reductions.empty() || sched.num_threads))
    fail(ErrorKind::Pragma, "reduction and num_threads clauses need a parallel or simd loop", sched.pragma_loc);
  return sched;
}

void Lowerer::parse_statement_pragmas(const ast::Stmt& stmt) {
  sliced_pragmas_.clear();
  statement_sequential_ = false;
  for (const auto& p : stmt.pragmas) {
    if (p.text == "sequential") {
      statement_sequential_ = true;
      continue;
    }
    if (p.text.find("=>") == std::string::npos) continue;
    // Entries look like `:M=>parallel` or `1:N-1=>parallel,simd`, separated
    // by spaces outside parentheses.
    const std::string& text = p.text;
    size_t pos = 0;
    while (pos < text.size()) {
      while (pos < text.size() && text[pos] == ' ') ++pos;
      size_t end = pos;
      int depth = 0;
      while (end < text.size() && (text[end] != ' ' || depth > 0)) {
        depth += text[end] == '(' ? 1 : text[end] == ')' ? -1 : 0;
        ++end;
      }
      std::string entry = text.substr(pos, end - pos);
      pos = end;
      if (entry.empty()) continue;
      size_t arrow = entry.find("=>");
      if (arrow == std::string::npos)
        fail(ErrorKind::Pragma, "each entry of a sliced-index pragma looks like ':N=>parallel', got '" + entry + "'",
             p.loc);
      SlicedPragma sp;
      sp.loc = p.loc;
      std::string props = entry.substr(arrow + 2);
      size_t q = 0;
      while (q <= props.size()) {
        size_t comma = q;
        int dep = 0;
        while (comma < props.size() && (props[comma] != ',' || dep > 0)) {
          dep += props[comma] == '(' ? 1 : props[comma] == ')' ? -1 : 0;
          ++comma;
        }
        std::string prop = props.substr(q, comma - q);
        q = comma + 1;
        if (prop.empty()) fail(ErrorKind::Pragma, "empty property in '" + entry + "'", p.loc);
        const size_t open = prop.find('(');
        std::string word = prop.substr(0, open);
        static const std::set<std::string> kKnown = {"parallel", "simd", "block", "reduce", "single_block", "le"};
        if (!kKnown.count(word))
          fail(ErrorKind::Pragma,
               "unknown property '" + word + "' (known: parallel, simd, block(N), reduce(op), single_block, le(N))",
               p.loc);
        const int size = check_property_argument(
            word, open == std::string::npos ? std::nullopt : std::optional<std::string>(prop.substr(open)), p.loc);
        sp.props.push_back(
            {word, open == std::string::npos ? "" : prop.substr(open + 1, prop.size() - open - 2), size});
      }
      sliced_pragmas_[entry.substr(0, arrow)] = sp;
    }
  }
}

// A sliced-pragma property's argument, `(...)` after its name or none:
// block(N) and le(N) take a positive integer literal below 10**9 (returned),
// reduce(op) an operator (checked against the statement's reduction where it
// is used), the others nothing (0 returned for all of these).
int Lowerer::check_property_argument(const std::string& word, const std::optional<std::string>& argument,
                                     SourceLoc loc) const {
  const bool sized = word == "block" || word == "le";
  if (!argument) {
    if (sized) fail(ErrorKind::Pragma, "'" + word + "' takes a size: " + word + "(N), N a positive integer", loc);
    return 0;
  }
  if (argument->size() < 2 || argument->back() != ')')
    fail(ErrorKind::Pragma, "'" + word + *argument + "' is not closed by ')'", loc);
  if (word == "reduce") return 0;
  if (!sized) fail(ErrorKind::Pragma, "'" + word + "' takes no argument, got '" + word + *argument + "'", loc);
  const std::string digits = argument->substr(1, argument->size() - 2);
  const bool literal = !digits.empty() && digits.size() <= 9 &&
                       std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  const int size = literal ? std::stoi(digits) : 0;
  if (size <= 0) fail(ErrorKind::Pragma, "'" + word + *argument + "': N must be a positive integer below 10**9", loc);
  return size;
}

ir::LoopSchedule Lowerer::apply_sliced_pragma(const LoopDim& dim, ir::LoopSchedule sched,
                                              const std::string& reduce_name) {
  schedule_pragma_used_ = true;
  auto it = sliced_pragmas_.find(dim.label);
  if (it == sliced_pragmas_.end()) return sched;
  SlicedPragma& sp = it->second;
  sp.used = true;
  sched.pragma_loc = sp.loc;
  bool par = false, vec = false;
  for (const SlicedProperty& prop : sp.props) {
    if (prop.word == "parallel") {
      par = true;
    } else if (prop.word == "reduce") {
      if (!dim.reduction)
        fail(ErrorKind::Pragma, "'" + dim.label + "' is not a reduced dimension of this statement", sp.loc);
      const std::string op = prop.argument.substr(0, prop.argument.find(':'));
      if (op != reduce_name && !(op == "sum" && (reduce_name == "mean" || reduce_name == "dot")))
        fail(ErrorKind::Pragma, "'" + dim.label + "' is reduced with " + reduce_name + " in this statement, not " + op,
             sp.loc);
    } else {
      // simd; block(N), le(N) and single_block vectorise the dimension
      // (docs/language.md); the CUDA back end sizes its teams and blocks
      // from their N (docs/cuda.md, "Sizes from the pragmas").
      vec = true;
      if (prop.word == "block") sched.block_strip = prop.size;
      if (prop.word == "le") sched.most_trips = prop.size;
      if (prop.word == "single_block") sched.single_block = true;
    }
  }
  if (dim.reduction && !dim.vectorizable) vec = false;
  sched.kind = par && vec ? ir::LoopKind::ParallelVectorized
               : par      ? ir::LoopKind::Parallel
               : vec      ? ir::LoopKind::Vectorized
                          : ir::LoopKind::Serial;
  return sched;
}

void Lowerer::check_sliced_pragmas_used() {
  for (const auto& [label, sp] : sliced_pragmas_)
    if (!sp.used)
      fail(ErrorKind::Pragma, "the dimension '" + label + "' does not appear as a slice in this statement", sp.loc);
}

}  // namespace plait::lowering
