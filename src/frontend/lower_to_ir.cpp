// Lowering of the syntax tree to the typed IR.
//
// Types are inferred in two phases over the same code: the first phase walks
// the function until the type of every local stops changing (a local's type
// is the NEP 50 join of everything assigned to it; a statement that reads a
// local whose type is not known yet is skipped that round), the second emits
// the IR with the final types, inserting casts where a value meets a wider
// type. One set of typing rules serves both phases.
#include "frontend/lower_to_ir.h"

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

namespace plait {
namespace lowering {

const char* value_kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Scalar:
      return "a scalar";
    case Value::Kind::Array:
      return "an array";
    case Value::Kind::Tensor:
      return "an array expression";
    case Value::Kind::Tuple:
      return "a tuple";
    case Value::Kind::Function:
      return "a function";
    case Value::Kind::DType:
      return "a dtype";
    case Value::Kind::None:
      return "None";
    case Value::Kind::Algebra:
      return "a sparse matrix expression";
    case Value::Kind::String:
      return "a string";
    case Value::Kind::List:
      return "a list";
    case Value::Kind::Dict:
      return "a dict or set";
  }
  return "a value";
}

std::string describe(ScalarType t) {
  if (t.weak) return t.is_bool() ? "a Python bool" : t.is_int() ? "a Python int" : "a Python float";
  return std::string("numpy.") + numpy_dtype_name(t.kind);
}

std::string describe(const ArrayType& t) {
  return "a " + std::to_string(t.ndim) + "-D array of " + numpy_dtype_name(t.dtype);
}

bool same_tree(const ast::Expr* a, const ast::Expr* b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  if (auto n = a->as<ast::Name>()) return n->id == b->as<ast::Name>()->id;
  if (auto c = a->as<ast::Constant>()) return c->value == b->as<ast::Constant>()->value;
  if (auto s = a->as<ast::Subscript>()) {
    auto t = b->as<ast::Subscript>();
    return same_tree(s->value.get(), t->value.get()) && same_tree(s->index.get(), t->index.get());
  }
  if (auto x = a->as<ast::BinOp>()) {
    auto y = b->as<ast::BinOp>();
    return x->op == y->op && same_tree(x->left.get(), y->left.get()) && same_tree(x->right.get(), y->right.get());
  }
  if (auto x = a->as<ast::UnaryOp>()) {
    auto y = b->as<ast::UnaryOp>();
    return x->op == y->op && same_tree(x->operand.get(), y->operand.get());
  }
  if (auto x = a->as<ast::Tuple>()) {
    auto y = b->as<ast::Tuple>();
    if (x->elts.size() != y->elts.size()) return false;
    for (size_t i = 0; i < x->elts.size(); ++i)
      if (!same_tree(x->elts[i].get(), y->elts[i].get())) return false;
    return true;
  }
  if (auto x = a->as<ast::Attribute>()) {
    auto y = b->as<ast::Attribute>();
    return x->attr == y->attr && same_tree(x->value.get(), y->value.get());
  }
  if (auto x = a->as<ast::Slice>()) {
    auto y = b->as<ast::Slice>();
    return same_tree(x->lower.get(), y->lower.get()) && same_tree(x->upper.get(), y->upper.get()) &&
           same_tree(x->step.get(), y->step.get());
  }
  if (auto x = a->as<ast::Call>()) {
    auto y = b->as<ast::Call>();
    if (!same_tree(x->func.get(), y->func.get()) || x->args.size() != y->args.size() || !x->keywords.empty() ||
        !y->keywords.empty())
      return false;
    for (size_t i = 0; i < x->args.size(); ++i)
      if (!same_tree(x->args[i].get(), y->args[i].get())) return false;
    return true;
  }
  return false;
}

// Names of arrays written through a subscript (`a[i] = v`, `a[1:] += v`) or
// updated in place (`a += v`).
void collect_written_arrays(const ast::StmtList& body, std::set<std::string>& out) {
  auto base = [&](const ast::Expr* t) {
    while (auto s = t->as<ast::Subscript>()) t = s->value.get();
    if (auto n = t->as<ast::Name>()) out.insert(n->id);
  };
  for (const auto& s : body) {
    if (auto a = s->as<ast::Assign>())
      for (auto& t : a->targets)
        if (t->as<ast::Subscript>()) base(t.get());
    if (auto a = s->as<ast::AugAssign>()) base(a->target.get());
    // np.add.at(y, ...) writes y.
    if (auto e = s->as<ast::ExprStmt>())
      if (auto c = e->value->as<ast::Call>())
        if (auto at = c->func->as<ast::Attribute>(); at && at->attr == "at" && !c->args.empty()) base(c->args[0].get());
    if (auto f = s->as<ast::For>()) collect_written_arrays(f->body, out);
    if (auto w = s->as<ast::While>()) collect_written_arrays(w->body, out);
    if (auto i = s->as<ast::If>()) {
      collect_written_arrays(i->body, out);
      collect_written_arrays(i->orelse, out);
    }
  }
}

// Names assigned anywhere in the function: Python makes them local everywhere.
// ================================================================ names

void Lowerer::declare_params(const ast::FunctionDef& fn) {
  if (fn.params.size() != signature_.args.size())
    type_error(fn.name + "() takes " + std::to_string(fn.params.size()) + " arguments but the signature has " +
                   std::to_string(signature_.args.size()),
               fn.loc);
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const auto& p = fn.params[i];
    const ValueType& t = signature_.args[i];
    param_names_.insert(p.name);
    LocalType lt;
    lt.first_loc = p.loc;
    if (t.is_sparse()) {
      lt.sparse = t.sparse;
      declare_sparse_param(p.name, t.sparse, p.loc);
    } else if (t.is_array()) {
      lt.array = t.array;
    } else {
      lt.scalar = t.scalar;
    }
    types_[p.name] = lt;
  }
}

void Lowerer::record_scalar(const std::string& name, ScalarType t, SourceLoc loc) {
  LocalType& lt = types_[name];
  if (lt.array)
    type_error("'" + name + "' is " + describe(*lt.array) + " elsewhere but is assigned " + describe(t) + " here", loc);
  if (!lt.scalar) {
    lt.scalar = t;
    lt.first_loc = loc;
    changed_ = true;
    return;
  }
  ScalarType u = unify(*lt.scalar, t);
  if (param_names_.count(name) && u.kind != lt.scalar->kind)
    type_error("parameter '" + name + "' is " + describe(*lt.scalar) + " but is assigned " + describe(t) +
                   " here; a variable keeps one type",
               loc);
  if (u != *lt.scalar) {
    lt.scalar = u;
    changed_ = true;
  }
}

void Lowerer::record_array(const std::string& name, const ArrayType& t, SourceLoc loc) {
  LocalType& lt = types_[name];
  if (lt.scalar)
    type_error("'" + name + "' is " + describe(*lt.scalar) + " elsewhere but is assigned " + describe(t) + " here",
               loc);
  if (!lt.array) {
    lt.array = t;
    lt.first_loc = loc;
    changed_ = true;
    return;
  }
  if (lt.array->dtype != t.dtype || lt.array->ndim != t.ndim)
    type_error("'" + name + "' is " + describe(*lt.array) + " elsewhere but is assigned " + describe(t) +
                   " here; a variable keeps one type",
               loc);
  if (lt.array->layout != t.layout) {
    if (param_names_.count(name))
      type_error("parameter '" + name + "' is assigned an array with a different memory layout", loc);
    lt.array->layout = Layout::Any;
    changed_ = true;
  }
}

Value Lowerer::global_value(const std::string& id, SourceLoc loc) {
  auto it = globals_.find(id);
  if (it != globals_.end()) {
    const GlobalValue& g = it->second;
    switch (g.kind) {
      case GlobalValue::Kind::Module:
        return Value::function(g.module, loc);
      case GlobalValue::Kind::Int:
        return Value::of(ir::IntImm::make(g.int_value, ScalarType::py_int(), loc));
      case GlobalValue::Kind::Float:
        return Value::of(ir::FloatImm::make(g.float_value, ScalarType::py_float(), loc));
      case GlobalValue::Kind::Bool:
        return Value::of(ir::BoolImm::make(g.bool_value, loc));
      case GlobalValue::Kind::Function:
        unsupported("'" + id +
                        "' is a function: a kernel may call it (the call is inlined) but not use it as a value "
                        "or call it here",
                    loc);
    }
  }
  static const std::set<std::string> kBuiltins = {"range", "len",   "int", "float", "bool", "abs", "min",
                                                  "max",   "round", "pow", "list",  "dict", "set"};
  if (kBuiltins.count(id)) return Value::function("builtins." + id, loc);
  // The parser's spelling of `{...}` displays, which no user name can shadow.
  if (id == "<dict>" || id == "<set>") return Value::function("builtins." + id.substr(1, id.size() - 2), loc);
  fail(ErrorKind::Name,
       "name '" + id +
           "' is not defined (kernels see their parameters, their locals, the modules "
           "numpy, math and plait, and global int/float/bool constants)",
       loc);
}

Value Lowerer::lookup_name(const ast::Name& name) {
  const std::string& id = name.id;
  if (!sparse_params_.empty()) {
    if (auto sparse = sparse_values_.find(id); sparse != sparse_values_.end()) {
      note_sparse_read(id, name.loc);
      return sparse->second;
    }
    if (auto t = types_.find(id); t != types_.end() && t->second.sparse) {
      if (inferring_) throw TypeNotKnownYet{};
      unsupported("'" + id + "' is read before the sparse matrix it is bound to is computed", name.loc);
    }
  }
  if (assigned_names_.count(id) || param_names_.count(id)) {
    if (inferring_) {
      auto it = types_.find(id);
      if (it == types_.end()) throw TypeNotKnownYet{};
      const LocalType& lt = it->second;
      if (lt.list) return Value::of_list(named_list(id, name.loc), name.loc);
      if (lt.hash) return Value::of_table(named_table(id, name.loc), name.loc);
      if (lt.tuple_size) return tuple_local(id, name.loc);
      if (lt.array) {
        auto a = std::make_shared<ir::ArrayInfo>();
        a->name = id;
        a->type = *lt.array;
        return Value::of_array(a, name.loc);
      }
      auto v = std::make_shared<ir::VarInfo>();
      v->name = id;
      v->type = *lt.scalar;
      return Value::of(ir::VarRef::make(v, name.loc));
    }
    if (auto t = types_.find(id); t != types_.end() && (t->second.list || t->second.tuple_size || t->second.hash)) {
      check_bound(name);
      if (t->second.hash) return Value::of_table(named_table(id, name.loc), name.loc);
      return t->second.list ? Value::of_list(named_list(id, name.loc), name.loc) : tuple_local(id, name.loc);
    }
    auto it = locals_.find(id);
    if (it == locals_.end())
      fail(ErrorKind::Name, "local variable '" + id + "' is used but never assigned a value", name.loc);
    check_bound(name);
    if (it->second.array) return Value::of_array(it->second.array, name.loc);
    return Value::of(ir::VarRef::make(it->second.var, name.loc));
  }
  return global_value(id, name.loc);
}

namespace {

// Python's message for a read of a local that holds no value.
std::string unbound_message(const std::string& id) {
  return "cannot access local variable '" + id + "' where it is not associated with a value";
}

}  // namespace

void Lowerer::check_bound(const ast::Name& name) {
  if (bindings_.of(name) != Binding::MaybeUnbound || !checked_reads_.insert(&name).second) return;
  Expr ok = unless_skipped(ir::VarRef::make(bound_flags_.at(name.id), name.loc), name.loc);
  pending_.push_back(ir::Assert::make(ok, PLAIT_UNBOUND_LOCAL_ERROR, unbound_message(name.id), name.loc));
}

Expr Lowerer::unless_skipped(Expr ok, SourceLoc loc) const {
  if (guards_.empty()) return ok;
  Expr reached = guards_[0];
  for (size_t i = 1; i < guards_.size(); ++i) reached = ir::Logical::make(ir::LogicalOp::And, reached, guards_[i], loc);
  return ir::Logical::make(ir::LogicalOp::Or, ok, ir::Unary::make(ir::UnaryOp::Not, reached, loc), loc);
}

void Lowerer::mark_bound(const std::string& name, std::vector<Stmt>& out, SourceLoc loc) {
  auto it = bound_flags_.find(name);
  if (it != bound_flags_.end()) out.push_back(ir::Assign::make(it->second, ir::BoolImm::make(true, loc), loc));
}

bool Lowerer::pending_allocates() const {
  for (const Stmt& p : pending_)
    if (p->as<ir::Allocate>()) return true;
  return false;
}

// ================================================================ driver

// True when every path through `body` ends in a return.
bool always_returns(const ast::StmtList& body) {
  for (const auto& s : body) {
    if (s->kind == ast::StmtKind::Return) return true;
    if (auto i = s->as<ast::If>())
      if (!i->orelse.empty() && always_returns(i->body) && always_returns(i->orelse)) return true;
  }
  return false;
}

ir::Function Lowerer::run(const ast::FunctionDef& fn) {
  declare_params(fn);
  ast::collect_assigned_names(fn.body, assigned_names_);
  assigned_names_.insert(fn.annotated_names.begin(), fn.annotated_names.end());
  collect_written_arrays(fn.body, written_arrays_);
  once_at_top_ = assigned_once_at_top(fn.body);
  for (const auto& p : fn.params) assigned_names_.erase(p.name);
  bindings_ = definite_assignment(fn.body, assigned_names_);
  if (!bindings_.unbound.empty()) {
    const ast::Name& read = *bindings_.unbound.front();
    fail(ErrorKind::UnboundLocal,
         unbound_message(read.id) + " (no assignment to '" + read.id + "' comes before this read on any path)",
         read.loc);
  }

  // Phase 1: infer until no local's type changes. Types only widen, and the
  // lattice is small (5 kinds x weak/strong), so this ends in a few rounds.
  inferring_ = true;
  // Each pass over the body starts with only the parameters' sparse values:
  // a sparse local is bound where its assignment is lowered.
  const std::map<std::string, Value> sparse_params = sparse_values_;
  for (int round = 0;; ++round) {
    if (round > 32) PLAIT_INTERNAL_ERROR("type inference did not converge");
    changed_ = false;
    sparse_values_ = sparse_params;
    std::vector<Stmt> scratch;
    lower_block(fn.body, scratch);
    if (!changed_) break;
  }
  settle_lists();
  settle_tables();
  // Phase 2: create the IR variables with their final types and emit.
  inferring_ = false;
  sparse_values_ = sparse_params;
  array_units_.clear();
  for (const auto& [name, lt] : types_) {
    if (lt.sparse) continue;                 // sparse values are sparse_values_
    if (lt.list || lt.tuple_size || lt.hash) continue;  // held in the locals named list_column_name and the like
    Local l;
    if (lt.array) {
      l.array = std::make_shared<ir::ArrayInfo>();
      l.array->name = name;
      l.array->type = *lt.array;
      l.array->loc = lt.first_loc;
      l.array->is_param = param_names_.count(name) > 0;
      if (local_units_.count(name)) array_units_[l.array] = local_units_.at(name);
    } else {
      l.var = std::make_shared<ir::VarInfo>();
      l.var->name = name;
      l.var->type = *lt.scalar;
      l.var->loc = lt.first_loc;
      l.var->is_param = param_names_.count(name) > 0;
    }
    locals_[name] = l;
  }
  ir::Function out;
  out.name = fn.name;
  out.source = file_;
  for (const auto& p : fn.params) {
    if (sparse_params_.count(p.name)) {
      for (const ir::Param& part : sparse_params_.at(p.name)) out.params.push_back(part);
      continue;
    }
    ir::Param param;
    param.scalar = locals_.at(p.name).var;
    param.array = locals_.at(p.name).array;
    out.params.push_back(param);
  }
  std::vector<Stmt> body;
  for (const std::string& name : bindings_.maybe_unbound) {
    auto flag = std::make_shared<ir::VarInfo>("_bound_" + name, ScalarType::py_bool(), fn.loc, false);
    bound_flags_[name] = flag;
    body.push_back(ir::Assign::make(flag, ir::BoolImm::make(false, fn.loc), fn.loc));
  }
  lower_block(fn.body, body);
  if (results_ && !results_->empty() && !always_returns(fn.body))
    unsupported("'" + fn.name +
                    "' returns a value on some paths but can reach its end and return None; end it with "
                    "a return statement",
                fn.loc);
  out.body = ir::Block::make(body, fn.loc);
  out.remarks = function_remarks_;
  if (results_) out.results = *results_;
  out.returns_tuple = returns_tuple_;
  out.returns_list = returns_list_;
  bool folded_result = false;
  for (const ValueType& t : out.results) folded_result = folded_result || t.is_sparse() || t.is_container();
  if (folded_result) {
    // The entry point returns each sparse matrix and each list as its
    // arrays, in a tuple; the caller folds them (declared_results).
    out.declared_results = out.results;
    out.declared_tuple = out.returns_tuple;
    out.declared_list = out.returns_list;
    out.results = Signature{out.declared_results}.abi().args;
    out.returns_tuple = true;
    out.returns_list = false;
  }
  return out;
}

}  // namespace lowering

ir::Function lower_to_ir(const ast::FunctionDef& function, const SourceFile& file, const Signature& signature,
                         const Globals& globals, const CompileOptions& options) {
  lowering::Lowerer lowerer(file, signature, globals, options);
  return lowerer.run(function);
}

}  // namespace plait
