// Calls between functions, inlined into the kernel's syntax tree
// (inline_calls.h).
#include "frontend/inline_calls.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "frontend/callee_body.h"
#include "frontend/parser.h"

namespace plait {
namespace {

using ast::ExprPtr;
using ast::StmtList;
using ast::StmtPtr;
using inlining::assign;
using inlining::for_each_expr;
using inlining::for_each_stmt;
using inlining::name;
using inlining::only;
using inlining::own_exprs;

// The name at the root of a chain of subscripts and attributes (`a[i].T`).
const ast::Name* root_name(const ast::Expr& e) {
  if (const auto* n = e.as<ast::Name>()) return n;
  if (const auto* s = e.as<ast::Subscript>()) return root_name(*s->value);
  if (const auto* a = e.as<ast::Attribute>()) return root_name(*a->value);
  return nullptr;
}

// Whether `e` names memory without computing: a name, or subscripts and
// attributes of one whose indices are names, constants and slices of those.
bool is_reference(const ast::Expr& e) {
  auto simple = [](const ExprPtr& x) { return !x || x->as<ast::Name>() || x->as<ast::Constant>(); };
  if (e.as<ast::Name>()) return true;
  if (const auto* a = e.as<ast::Attribute>()) return is_reference(*a->value);
  const auto* s = e.as<ast::Subscript>();
  if (!s || !is_reference(*s->value)) return false;
  std::vector<const ast::Expr*> parts = {s->index.get()};
  if (const auto* t = s->index->as<ast::Tuple>()) {
    parts.clear();
    for (const ExprPtr& x : t->elts) parts.push_back(x.get());
  }
  for (const ast::Expr* part : parts) {
    const auto* slice = part->as<ast::Slice>();
    const bool ok = slice ? simple(slice->lower) && simple(slice->upper) && simple(slice->step)
                          : part->as<ast::Name>() || part->as<ast::Constant>();
    if (!ok) return false;
  }
  return true;
}

bool same_binding(const GlobalValue& a, const GlobalValue& b) {
  return a.kind == b.kind && a.module == b.module && a.int_value == b.int_value && a.float_value == b.float_value &&
         a.bool_value == b.bool_value;
}

// ---------------------------------------------------------------- the inliner

// A callee's definition, parsed once, with what inlining needs to know.
struct Definition {
  const Callee* callee = nullptr;
  ast::FunctionDef def;
  std::set<std::string> locals;    // parameters, assigned and annotated names
  std::set<std::string> assigned;  // the names its body assigns (parameters among them when rebound)
  bool returns_value = false;
  bool returns_in_loop = false;
  std::string where;  // "line 12", or "helpers.py:12" in another file
};

// Where a call sits in its statement.
enum class Position {
  Whole,          // the statement's whole value: nothing is evaluated before it
  Unconditional,  // always evaluated, after parts of the statement
  Conditional,    // evaluated or not (after `and`/`or`, in a branch of `x if c else y`)
};

class Inliner {
 public:
  Inliner(const SourceFile& source, const Globals& globals, const ast::FunctionDef& kernel)
      : source_(source), kernel_globals_(globals), globals_(globals), kernel_(kernel.name) {
    for (const ast::Param& p : kernel.params) kernel_locals_.insert(p.name);
    ast::collect_assigned_names(kernel.body, kernel_locals_);
    kernel_locals_.insert(kernel.annotated_names.begin(), kernel.annotated_names.end());
    for (const auto& [id, value] : globals) {
      if (value.kind == GlobalValue::Kind::Function && value.callees) table_ = value.callees;
    }
  }

  void inline_block(StmtList& body);

  InlinedKernel finish(ast::FunctionDef kernel) {
    for (std::string& a : annotated_) kernel.annotated_names.push_back(std::move(a));
    return {std::move(kernel), std::move(source_), std::move(globals_), std::move(remarks_)};
  }

 private:
  [[noreturn]] void refuse(ErrorKind kind, const std::string& message, SourceLoc loc) const {
    throw CompileError(kind, message, source_, loc);
  }
  bool is_function(const std::string& id) const {
    if (kernel_locals_.count(id)) return false;
    auto it = globals_.find(id);
    return it != globals_.end() && it->second.kind == GlobalValue::Kind::Function;
  }
  bool calls_function(const ast::Expr& e) const {
    bool found = false;
    for_each_expr(e, [&](const ast::Expr& x) {
      const auto* c = x.as<ast::Call>();
      const auto* n = c ? c->func->as<ast::Name>() : nullptr;
      found = found || (n && is_function(n->id));
    });
    return found;
  }
  void inline_in(ExprPtr& slot, StmtList& pre, Position position);
  ExprPtr instantiate(ast::Call& call, StmtList& pre, Position position);
  std::vector<ExprPtr> bind_arguments(ast::Call& call, const Definition& d, const ast::Rename& free_names);
  const Definition& definition(const std::string& key, SourceLoc call);
  bool writes_arguments(const std::string& key);
  std::string free_name(const std::string& id, const Callee& callee, const std::string& prefix);

  SourceFile source_;
  const Globals& kernel_globals_;
  Globals globals_;  // the kernel's, with callees' globals under their inlined names
  std::string kernel_;
  std::set<std::string> kernel_locals_;
  std::shared_ptr<const CalleeTable> table_;
  std::map<std::string, Definition> definitions_;
  std::map<std::string, int> line_offsets_;  // by file path
  std::map<std::string, int> instances_;     // calls inlined so far, by function name
  std::map<std::string, bool> writes_;       // writes_arguments, by key
  std::vector<std::string> stack_;           // the functions being inlined, by key
  std::vector<std::string> annotated_;
  std::vector<ir::Remark> remarks_;
};

const Definition& Inliner::definition(const std::string& key, SourceLoc call) {
  if (auto it = definitions_.find(key); it != definitions_.end()) return it->second;
  const Callee& callee = table_->at(key);  // instantiate checked that it is there
  if (callee.name == "<lambda>") {
    refuse(ErrorKind::Unsupported,
           "this call is to a lambda: plait inlines the functions a kernel calls from their `def`; define it "
           "with def at module level",
           call);
  }
  if (callee.source.text.empty()) {
    refuse(ErrorKind::Unsupported,
           "plait cannot read the source of '" + callee.name + "' (" + callee.source.path +
               "), which this kernel calls: plait inlines the functions a kernel calls from their source text; "
               "define it in a .py file or a notebook cell",
           call);
  }
  // Lines of another file are numbered past the kernel's (SourceFile::Inlined).
  const std::string& path = callee.source.path;
  if (!line_offsets_.count(path))
    line_offsets_[path] =
        path == source_.path ? 0 : static_cast<int>(line_offsets_.size() + 1) * SourceFile::kInlinedLineSpan;
  const int offset = line_offsets_.at(path);
  SourceFile::Inlined chunk{path, callee.source.text, callee.source.first_line + offset, offset};
  SourceFile shifted{path, callee.source.text, chunk.first_line, {chunk}};
  const bool same_text =
      path == source_.path && callee.source.text == source_.text && callee.source.first_line == source_.first_line;
  if (!same_text) source_.inlined.push_back(chunk);

  Definition d;
  d.callee = &callee;
  d.def = parse_function(shifted, callee.name);
  for (const ast::Param& p : d.def.params) d.locals.insert(p.name);
  ast::collect_assigned_names(d.def.body, d.assigned);
  d.locals.insert(d.assigned.begin(), d.assigned.end());
  d.locals.insert(d.def.annotated_names.begin(), d.def.annotated_names.end());
  const std::string line = std::to_string(callee.source.first_line + (d.def.loc.line - chunk.first_line));
  d.where = offset == 0 ? "line " + line : std::filesystem::path(path).filename().string() + ":" + line;
  std::function<void(const StmtList&, bool)> scan = [&](const StmtList& body, bool in_loop) {
    for (const StmtPtr& s : body) {
      if (const auto* r = s->as<ast::Return>()) {
        d.returns_value = d.returns_value || r->value != nullptr;
        d.returns_in_loop = d.returns_in_loop || in_loop;
      } else if (const auto* i = s->as<ast::If>()) {
        scan(i->body, in_loop);
        scan(i->orelse, in_loop);
      } else if (const auto* l = s->as<ast::For>()) {
        scan(l->body, true);
        scan(l->orelse, in_loop);
      } else if (const auto* w = s->as<ast::While>()) {
        scan(w->body, true);
        scan(w->orelse, in_loop);
      }
    }
  };
  scan(d.def.body, false);
  if (d.returns_value && inlining::may_fall_through(d.def.body)) {
    refuse(ErrorKind::Unsupported,
           "'" + callee.name +
               "' returns a value on some paths and None when it runs off its end: a call has one type in a "
               "kernel; end the function with a return",
           d.def.loc);
  }
  return definitions_.emplace(key, std::move(d)).first->second;
}

// Whether a function may write the arrays its arguments reach: an element or
// slice assigned, an in-place operator, `out=`, an in-place method or
// ufunc.at on a name bound to a parameter (or a view of one), or a call
// passing one to such a function.
bool Inliner::writes_arguments(const std::string& key) {
  if (auto it = writes_.find(key); it != writes_.end()) return it->second;
  writes_[key] = false;  // a recursive call is refused where it is made
  auto entry = table_->find(key);
  // A function without source is refused where it is called.
  if (entry == table_->end() || entry->second.source.text.empty()) return writes_[key] = true;
  const Definition& d = definition(key, SourceLoc{});
  std::set<std::string> bound;
  for (const ast::Param& p : d.def.params) bound.insert(p.name);
  for (size_t before = 0; before != bound.size();) {
    before = bound.size();
    for_each_stmt(d.def.body, [&](const ast::Stmt& s) {
      const auto* a = s.as<ast::Assign>();
      const ast::Name* root = a ? root_name(*a->value) : nullptr;
      if (!root || !bound.count(root->id)) return;
      for (const ExprPtr& t : a->targets)
        if (const auto* n = t->as<ast::Name>()) bound.insert(n->id);
    });
  }
  auto reaches = [&](const ast::Expr& e) {
    const ast::Name* root = root_name(e);
    return root && bound.count(root->id);
  };
  static const std::set<std::string> kInPlaceMethods = {"fill", "sort", "put", "resize", "itemset", "partition", "at"};
  bool writes = false;
  for_each_stmt(d.def.body, [&](const ast::Stmt& s) {
    if (const auto* a = s.as<ast::Assign>()) {
      for (const ExprPtr& t : a->targets) writes = writes || (t->kind == ast::ExprKind::Subscript && reaches(*t));
    }
    if (const auto* a = s.as<ast::AugAssign>()) writes = writes || reaches(*a->target);
    for (const ast::Expr* e : own_exprs(s)) {
      for_each_expr(*e, [&](const ast::Expr& x) {
        const auto* c = x.as<ast::Call>();
        if (!c) return;
        for (const ast::Keyword& k : c->keywords) writes = writes || k.name == "out";
        const auto* method = c->func->as<ast::Attribute>();
        if (method && kInPlaceMethods.count(method->attr)) {
          writes = writes || reaches(*method->value) || (!c->args.empty() && reaches(*c->args[0]));
        }
        const auto* callee = c->func->as<ast::Name>();
        auto g = callee && !d.locals.count(callee->id) ? d.callee->globals.find(callee->id) : Globals::const_iterator{};
        if (callee && !d.locals.count(callee->id) && g != d.callee->globals.end() &&
            g->second.kind == GlobalValue::Kind::Function) {
          bool passes = false;
          for (const ExprPtr& arg : c->args) passes = passes || reaches(*arg);
          for (const ast::Keyword& k : c->keywords) passes = passes || reaches(*k.value);
          writes = writes || (passes && writes_arguments(g->second.module));
        }
      });
    }
  });
  return writes_[key] = writes;
}

std::string Inliner::free_name(const std::string& id, const Callee& callee, const std::string& prefix) {
  auto own = callee.globals.find(id);
  auto kernel = kernel_globals_.find(id);
  if (own == callee.globals.end()) {
    // A builtin, or a name its module does not define: the kernel's global
    // of that name must not stand in for it.
    return kernel == kernel_globals_.end() ? id : prefix + "." + id;
  }
  if (kernel != kernel_globals_.end() && same_binding(kernel->second, own->second) && !kernel_locals_.count(id))
    return id;
  GlobalValue value = own->second;
  if (value.kind == GlobalValue::Kind::Function) value.callees = table_;
  globals_[prefix + "." + id] = value;
  return prefix + "." + id;
}

std::vector<ExprPtr> Inliner::bind_arguments(ast::Call& call, const Definition& d, const ast::Rename& free_names) {
  const std::string& fn = d.callee->name;
  const std::vector<ast::Param>& params = d.def.params;
  std::vector<ExprPtr> bound(params.size());
  if (call.args.size() > params.size()) {
    const auto required = static_cast<size_t>(
        std::count_if(params.begin(), params.end(), [](const ast::Param& p) { return p.default_value == nullptr; }));
    const std::string takes = required == params.size()
                                  ? std::to_string(params.size())
                                  : "from " + std::to_string(required) + " to " + std::to_string(params.size());
    refuse(ErrorKind::Type,
           fn + "() takes " + takes + " positional argument" + (params.size() == 1 ? "" : "s") + " but " +
               std::to_string(call.args.size()) + (call.args.size() == 1 ? " was" : " were") + " given",
           call.loc);
  }
  for (size_t i = 0; i < call.args.size(); ++i) bound[i] = std::move(call.args[i]);
  for (ast::Keyword& k : call.keywords) {
    auto p = std::find_if(params.begin(), params.end(), [&](const ast::Param& q) { return q.name == k.name; });
    if (p == params.end())
      refuse(ErrorKind::Type, fn + "() got an unexpected keyword argument '" + k.name + "'", k.loc);
    ExprPtr& slot = bound[p - params.begin()];
    if (slot) refuse(ErrorKind::Type, fn + "() got multiple values for argument '" + k.name + "'", k.loc);
    slot = std::move(k.value);
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i]) continue;
    if (params[i].default_value) {
      bound[i] = ast::clone(*params[i].default_value, ast::Renaming{free_names, nullptr});
    } else {
      missing.push_back("'" + params[i].name + "'");
    }
  }
  if (!missing.empty()) {
    std::string names = missing[0];
    for (size_t i = 1; i < missing.size(); ++i) names += (i + 1 == missing.size() ? " and " : ", ") + missing[i];
    refuse(ErrorKind::Type,
           fn + "() missing " + std::to_string(missing.size()) + " required positional argument" +
               (missing.size() == 1 ? "" : "s") + ": " + names,
           call.loc);
  }
  return bound;
}

ExprPtr Inliner::instantiate(ast::Call& call, StmtList& pre, Position position) {
  const std::string key = globals_.at(call.func->as<ast::Name>()->id).module;
  if (!table_ || !table_->count(key)) PLAIT_INTERNAL_ERROR("no callee '" + key + "' in the table of functions");
  const std::string& fn = table_->at(key).name;  // as its `def` names it (the call's name may be renamed)
  if (std::find(stack_.begin(), stack_.end(), key) != stack_.end()) {
    refuse(ErrorKind::Unsupported,
           "'" + fn +
               "' is called recursively: plait inlines the functions a kernel calls, so a function may not "
               "reach itself again; write the recursion as a loop",
           call.loc);
  }
  if (position == Position::Conditional) {
    refuse(ErrorKind::Unsupported,
           "this call to '" + fn +
               "' is in a part of the expression Python may not evaluate (after 'and'/'or', in "
               "a branch of 'x if c else y', or past a comparison chain's first comparison): assign its result to "
               "a name in a statement first",
           call.loc);
  }
  const Definition& d = definition(key, call.loc);
  if (position != Position::Whole && writes_arguments(key)) {
    refuse(ErrorKind::Unsupported,
           "'" + fn +
               "' may write the arrays passed to it, and here other parts of the statement are evaluated "
               "before it: call it as a statement of its own or as the whole right-hand side of an assignment",
           call.loc);
  }
  const Callee& callee = *d.callee;
  const int n = ++instances_[callee.name];
  const std::string prefix = callee.name + (n > 1 ? "#" + std::to_string(n) : "");
  auto free_names = [&](const std::string& x) { return free_name(x, callee, prefix); };
  // Parameters that read the argument passed instead of a copy (see below).
  std::map<std::string, const ast::Expr*> passed;
  auto replace = [&](const std::string& x) -> const ast::Expr* {
    auto it = passed.find(x);
    return it == passed.end() ? nullptr : it->second;
  };
  auto rename = [&](const std::string& x) { return d.locals.count(x) ? prefix + "." + x : free_names(x); };

  // A builtin the callee reads must not become a local of the kernel.
  for_each_stmt(d.def.body, [&](const ast::Stmt& s) {
    for (const ast::Expr* e : own_exprs(s)) {
      for_each_expr(*e, [&](const ast::Expr& x) {
        const auto* used = x.as<ast::Name>();
        if (used && !d.locals.count(used->id) && !callee.globals.count(used->id) && kernel_locals_.count(used->id)) {
          refuse(ErrorKind::Unsupported,
                 "'" + callee.name + "' reads '" + used->id + "', a built-in name, which the kernel '" + kernel_ +
                     "' assigns as a local: inlined, the call would read that local; rename it in the kernel",
                 used->loc);
        }
      });
    }
  });

  std::vector<ExprPtr> args = bind_arguments(call, d, free_names);
  // A parameter the body never rebinds reads the argument itself where the
  // argument is a name, or, in a function that writes no argument, a view
  // of one (`F[j]`, `A.T`) whose indices are names and constants: its value
  // cannot change while the callee runs, an array stays the caller's (its
  // extents known before the loops around the call, nothing bound per call)
  // and a scalar needs no copy. Other arguments are bound to the parameter
  // first, as Python binds them.
  StmtList body;
  const bool writes = writes_arguments(key);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& param = d.def.params[i].name;
    if (!d.assigned.count(param) && (args[i]->as<ast::Name>() || (!writes && is_reference(*args[i])))) {
      passed[param] = args[i].get();
      continue;
    }
    const SourceLoc loc = args[i]->loc;
    body.push_back(assign(loc, prefix + "." + param, std::move(args[i])));
  }
  for (const std::string& a : d.def.annotated_names) annotated_.push_back(prefix + "." + a);
  const std::string flag = d.returns_in_loop ? prefix + ".returned" : "";
  if (!flag.empty()) body.push_back(assign(d.def.loc, flag, std::make_unique<ast::Constant>(d.def.loc, false)));
  for (StmtPtr& s :
       inlining::rewrite_returns(ast::clone(d.def.body, ast::Renaming{rename, replace}), prefix + ".return", flag))
    body.push_back(std::move(s));

  stack_.push_back(key);
  inline_block(body);
  stack_.pop_back();
  for (StmtPtr& s : body) pre.push_back(std::move(s));
  remarks_.push_back({call.loc, "inline_calls", "call to " + callee.name + " inlined (defined at " + d.where + ")"});
  if (!d.returns_value) return std::make_unique<ast::Constant>(call.loc, ast::Constant::Value{});
  return name(call.loc, prefix + ".return");
}

void Inliner::inline_in(ExprPtr& slot, StmtList& pre, Position position) {
  const Position inner = position == Position::Conditional ? Position::Conditional : Position::Unconditional;
  ast::Expr& e = *slot;
  auto each = [&](std::vector<ExprPtr>& es, size_t conditional_from) {
    for (size_t i = 0; i < es.size(); ++i) inline_in(es[i], pre, i < conditional_from ? inner : Position::Conditional);
  };
  auto one = [&](ExprPtr& x) {
    if (x) inline_in(x, pre, inner);
  };
  switch (e.kind) {
    case ast::ExprKind::Name:
    case ast::ExprKind::Constant:
      return;
    case ast::ExprKind::Call: {
      auto& c = static_cast<ast::Call&>(e);
      const auto* callee = c.func->as<ast::Name>();
      const bool inlined = callee && is_function(callee->id);
      if (!inlined) one(c.func);
      each(c.args, c.args.size());
      for (ast::Keyword& k : c.keywords) one(k.value);
      if (inlined) slot = instantiate(c, pre, position);
      return;
    }
    case ast::ExprKind::BinOp:
      one(static_cast<ast::BinOp&>(e).left);
      one(static_cast<ast::BinOp&>(e).right);
      return;
    case ast::ExprKind::UnaryOp:
      one(static_cast<ast::UnaryOp&>(e).operand);
      return;
    case ast::ExprKind::BoolOp:
      each(static_cast<ast::BoolOp&>(e).values, 1);
      return;
    case ast::ExprKind::Compare:
      one(static_cast<ast::Compare&>(e).left);
      each(static_cast<ast::Compare&>(e).comparators, 1);
      return;
    case ast::ExprKind::Attribute:
      one(static_cast<ast::Attribute&>(e).value);
      return;
    case ast::ExprKind::Subscript:
      one(static_cast<ast::Subscript&>(e).value);
      one(static_cast<ast::Subscript&>(e).index);
      return;
    case ast::ExprKind::Slice:
      one(static_cast<ast::Slice&>(e).lower);
      one(static_cast<ast::Slice&>(e).upper);
      one(static_cast<ast::Slice&>(e).step);
      return;
    case ast::ExprKind::Tuple:
      each(static_cast<ast::Tuple&>(e).elts, static_cast<ast::Tuple&>(e).elts.size());
      return;
    case ast::ExprKind::List:
      each(static_cast<ast::List&>(e).elts, static_cast<ast::List&>(e).elts.size());
      return;
    case ast::ExprKind::IfExp: {
      auto& x = static_cast<ast::IfExp&>(e);
      one(x.test);
      inline_in(x.body, pre, Position::Conditional);
      inline_in(x.orelse, pre, Position::Conditional);
      return;
    }
  }
}

void Inliner::inline_block(StmtList& body) {
  StmtList out;
  for (StmtPtr& s : body) {
    StmtList pre;
    switch (s->kind) {
      case ast::StmtKind::Assign: {
        auto& a = static_cast<ast::Assign&>(*s);
        inline_in(a.value, pre, Position::Whole);  // Python evaluates the value before the targets
        for (ExprPtr& t : a.targets) inline_in(t, pre, Position::Unconditional);
        break;
      }
      case ast::StmtKind::AugAssign: {
        auto& a = static_cast<ast::AugAssign&>(*s);
        inline_in(a.target, pre, Position::Unconditional);
        // `n += f(A)`: reading the name first gives what it holds after the
        // call too (a callee cannot rebind the caller's names), so the value
        // is the whole of what the statement computes besides it. An
        // element target (`x[i] += f(x)`) is loaded before the call runs.
        inline_in(a.value, pre, a.target->as<ast::Name>() ? Position::Whole : Position::Unconditional);
        break;
      }
      case ast::StmtKind::ExprStmt:
        inline_in(static_cast<ast::ExprStmt&>(*s).value, pre, Position::Whole);
        break;
      case ast::StmtKind::Return:
        if (auto& value = static_cast<ast::Return&>(*s).value) inline_in(value, pre, Position::Whole);
        break;
      case ast::StmtKind::If: {
        auto& i = static_cast<ast::If&>(*s);
        inline_in(i.test, pre, Position::Whole);
        inline_block(i.body);
        inline_block(i.orelse);
        break;
      }
      case ast::StmtKind::For: {
        auto& l = static_cast<ast::For&>(*s);
        inline_in(l.iter, pre, Position::Whole);
        inline_block(l.body);
        inline_block(l.orelse);
        break;
      }
      case ast::StmtKind::While: {
        auto& w = static_cast<ast::While&>(*s);
        if (calls_function(*w.test)) {
          // The test runs before each iteration: `while True:` whose body
          // starts with the calls' statements and leaves when the test fails.
          if (!w.orelse.empty()) {
            refuse(ErrorKind::Unsupported,
                   "a while loop with an else clause may not call a function in its test: plait inlines the call "
                   "into the loop's body; test a name assigned in the body instead",
                   w.loc);
          }
          StmtList head;
          inline_in(w.test, head, Position::Whole);
          const SourceLoc loc = w.test->loc;
          auto fails = std::make_unique<ast::UnaryOp>(loc, ast::UnaryOpKind::Not, std::move(w.test));
          head.push_back(
              std::make_unique<ast::If>(loc, std::move(fails), only(std::make_unique<ast::Break>(loc)), StmtList{}));
          for (StmtPtr& b : w.body) head.push_back(std::move(b));
          w.body = std::move(head);
          w.test = std::make_unique<ast::Constant>(loc, true);
        }
        inline_block(w.body);
        inline_block(w.orelse);
        break;
      }
      case ast::StmtKind::Break:
      case ast::StmtKind::Continue:
      case ast::StmtKind::Pass:
        break;
    }
    for (StmtPtr& p : pre) out.push_back(std::move(p));
    out.push_back(std::move(s));
  }
  body = std::move(out);
}

}  // namespace

InlinedKernel inline_calls(ast::FunctionDef kernel, const SourceFile& source, const Globals& globals) {
  Inliner inliner(source, globals, kernel);
  inliner.inline_block(kernel.body);
  return inliner.finish(std::move(kernel));
}

}  // namespace plait
