// Sparse operator programs in the front end: SciPy sparse parameters, the
// expressions that compute with them (lowered by the tensor-algebra level,
// src/tensor/), where their programs run, and sparse results. The
// operators themselves are in lower_sparse_ops.cpp.
#include <algorithm>

#include "frontend/array_lowering.h"
#include "tensor/cost.h"
#include "tensor/fusion.h"
#include "tensor/lower_to_loops.h"

namespace plait::lowering {

// The names assigned exactly once, by a statement at the function's top
// level: the only names a sparse value may be bound to, so that it has one
// definition that every later read sees.
std::set<std::string> assigned_once_at_top(const ast::StmtList& body) {
  std::map<std::string, int> count;
  auto disqualify = [&](const ast::StmtList& block) {
    std::set<std::string> names;
    ast::collect_assigned_names(block, names);
    for (const auto& n : names) count[n] += 2;
  };
  for (const auto& s : body) {
    auto a = s->as<ast::Assign>();
    if (a && a->targets.size() == 1 && a->targets[0]->as<ast::Name>()) {
      ++count[a->targets[0]->as<ast::Name>()->id];
      continue;
    }
    if (a) {
      std::set<std::string> names;
      for (const auto& t : a->targets) {
        if (auto n = t->as<ast::Name>()) names.insert(n->id);
        if (auto tu = t->as<ast::Tuple>())
          for (const auto& e : tu->elts)
            if (auto n = e->as<ast::Name>()) names.insert(n->id);
      }
      for (const auto& n : names) count[n] += 2;
    }
    if (auto g = s->as<ast::AugAssign>())
      if (auto n = g->target->as<ast::Name>()) count[n->id] += 2;
    if (auto f = s->as<ast::For>()) {
      if (auto n = f->target->as<ast::Name>()) count[n->id] += 2;
      disqualify(f->body);
      disqualify(f->orelse);
    }
    if (auto w = s->as<ast::While>()) {
      disqualify(w->body);
      disqualify(w->orelse);
    }
    if (auto i = s->as<ast::If>()) {
      disqualify(i->body);
      disqualify(i->orelse);
    }
  }
  std::set<std::string> once;
  for (const auto& [name, n] : count)
    if (n == 1) once.insert(name);
  return once;
}

void Lowerer::declare_sparse_param(const std::string& name, const SparseType& t, SourceLoc loc) {
  auto array = [&](const std::string& part, ScalarKind k) {
    auto a = std::make_shared<ir::ArrayInfo>("_" + name + "_" + part, ArrayType{k, 1, Layout::C}, loc, true);
    sparse_params_[name].push_back(ir::Param{nullptr, a});
    return a;
  };
  auto s = std::make_shared<tensor::TensorVar>();
  s->name = name;
  s->type = ScalarType{t.dtype, false};
  s->format = tensor::Format::csr();
  s->values = array("data", t.dtype);
  ir::ArrayVar indices = array("indices", t.index);
  ir::ArrayVar indptr = array("indptr", t.index);
  indices->nonnegative = true;
  indptr->nonnegative = true;
  auto ncols = std::make_shared<ir::VarInfo>("_" + name + "_ncols", ScalarType::py_int(), loc, true);
  sparse_params_[name].push_back(ir::Param{ncols, nullptr});
  s->pos = {nullptr, indptr};
  s->crd = {nullptr, indices};
  s->nnz = ir::ArrayDim::make(s->values, 0, loc);
  s->dims = {name + ".shape[0]", name + ".shape[1]"};
  s->pattern = name;
  s->shape = {ir::Binary::make(ir::BinaryOp::Sub, ir::ArrayDim::make(indptr, 0, loc), int_imm(1, loc),
                               ScalarType::py_int(), false, loc),
              ir::VarRef::make(ncols, loc)};
  auto value = std::make_shared<AlgebraValue>();
  auto program = std::make_shared<tensor::Program>();
  program->result = s;
  value->program = program;
  value->matrix = t.matrix;
  value->index = t.index;
  sparse_values_[name] = Value::of_algebra(value, loc);
}

bool Lowerer::involves_sparse(const ast::Expr& e) const {
  if (sparse_params_.empty()) return false;  // no sparse value exists without a sparse argument
  switch (e.kind) {
    case ast::ExprKind::Name: {
      const std::string& id = e.as<ast::Name>()->id;
      auto t = types_.find(id);
      return sparse_values_.count(id) > 0 || (t != types_.end() && t->second.sparse);
    }
    case ast::ExprKind::BinOp: {
      const auto& b = *e.as<ast::BinOp>();
      return involves_sparse(*b.left) || involves_sparse(*b.right);
    }
    case ast::ExprKind::UnaryOp:
      return involves_sparse(*e.as<ast::UnaryOp>()->operand);
    case ast::ExprKind::Attribute:
      return involves_sparse(*e.as<ast::Attribute>()->value);
    case ast::ExprKind::Call: {
      const auto& c = *e.as<ast::Call>();
      if (auto f = c.func->as<ast::Attribute>(); f && involves_sparse(*f->value)) return true;
      for (const auto& a : c.args)
        if (involves_sparse(*a)) return true;
      for (const auto& k : c.keywords)
        if (involves_sparse(*k.value)) return true;
      return false;
    }
    default:
      return false;
  }
}

tensor::IndexVar Lowerer::index_var(const std::string& name) {
  return tensor::IndexVar{algebra_counter_++, name};
}

tensor::TensorVarPtr Lowerer::algebra_temp(ScalarType type, tensor::Format format, std::vector<Expr> shape) {
  auto t = std::make_shared<tensor::TensorVar>();
  t->name = "t" + std::to_string(algebra_counter_++);
  t->type = type.strong();
  t->format = std::move(format);
  t->shape = std::move(shape);
  return t;
}

tensor::TensorVarPtr Lowerer::pattern_temp(ScalarType type, const tensor::TensorVar& s) {
  tensor::TensorVarPtr t = algebra_temp(type, s.format, s.shape);
  t->pos = s.pos;
  t->crd = s.crd;
  t->nnz = s.nnz;
  t->dims = s.dims;
  t->pattern = s.pattern;
  return t;
}

Value Lowerer::with_statement(std::vector<tensor::StatementPtr> before, tensor::StatementPtr s, bool matrix,
                              ScalarKind index) {
  auto program = std::make_shared<tensor::Program>();
  program->stmts = std::move(before);
  program->stmts.push_back(s);
  program->result = s->out;
  auto value = std::make_shared<AlgebraValue>();
  value->program = program;
  value->matrix = matrix;
  value->index = index;
  return Value::of_algebra(value, s->loc);
}

Value Lowerer::realize(const Value& v, SourceLoc loc) {
  if (v.kind != Value::Kind::Algebra) return v;
  const AlgebraValue& a = *v.algebra;
  const tensor::TensorVar& result = *a.program->result;
  if (a.program->stmts.empty()) return v;  // an operand: already stored
  // A sparse result becomes an operand: its storage is what the program stored.
  auto stored_sparse = [&](ir::ArrayVar values) {
    auto stored = std::make_shared<tensor::TensorVar>(result);
    if (values) stored->values = values;
    auto program = std::make_shared<tensor::Program>();
    program->result = stored;
    auto value = std::make_shared<AlgebraValue>(a);
    value->program = program;
    value->other_association = nullptr;
    return Value::of_algebra(value, loc);
  };
  if (inferring_) {
    if (result.rank() == 0) return Value::of(placeholder(result.type));
    if (!result.is_sparse())
      return Value::of_array(temp_array(ArrayType{result.type.kind, result.rank(), Layout::C}, loc), loc);
    return stored_sparse(temp_array(ArrayType{result.type.kind, 1, Layout::C}, loc));
  }
  const tensor::FusionMode mode = options_.fusion == Fusion::Maximal ? tensor::FusionMode::Maximal
                                  : options_.fusion == Fusion::None  ? tensor::FusionMode::None
                                                                     : tensor::FusionMode::Partial;
  // The program, and in partial fusion the other association of a chain:
  // each lowered with its cost; the cheaper runs, chosen at run time.
  std::vector<tensor::ProgramPtr> programs = {a.program};
  if (mode == tensor::FusionMode::Partial && a.other_association) programs.push_back(a.other_association);
  std::vector<std::vector<Stmt>> lowered;
  std::vector<tensor::Cost> costs;
  try {
    for (const auto& program : programs) {
      tensor::FusionPlan plan = tensor::plan_fusion(*program, mode);
      for (const auto& [at, message] : plan.remarks)
        function_remarks_.push_back(ir::Remark{at, "tensor algebra", message});
      costs.push_back(tensor::plan_cost(plan));
      const std::string which = programs.size() > 1 ? "association " + std::to_string(lowered.size() + 1) + ": " : "";
      function_remarks_.push_back(ir::Remark{loc, "tensor algebra", which + "operations " + costs.back().to_string()});
      tensor::Remarks schedule;
      lowered.push_back(tensor::lower_to_loops(
          plan, [this](const std::string& hint) { return "_" + hint + "_" + std::to_string(temp_counter_++); },
          options_.target, loc, schedule));
      for (const auto& [at, message] : schedule) function_remarks_.push_back(ir::Remark{at, "tensor algebra", message});
    }
  } catch (const tensor::Refusal& r) {
    unsupported(r.message, r.loc.line ? r.loc : loc);
  }
  if (programs.size() == 1) {
    for (Stmt& s : lowered[0]) pending_.push_back(std::move(s));
  } else {
    // The other association's result under the program's name.
    lowered[1].push_back(ir::ArrayBind::make(result.values, programs[1]->result->values, loc));
    function_remarks_.push_back(ir::Remark{
        loc, "tensor algebra", "association: the cheaper of the two runs, chosen at each call by the counts above"});
    Expr first_cheaper = ir::Compare::make(ir::CompareOp::LE, costs[0].value(loc), costs[1].value(loc), loc);
    pending_.push_back(
        ir::If::make(first_cheaper, ir::Block::make(lowered[0], loc), ir::Block::make(lowered[1], loc), loc));
  }
  if (result.rank() == 0) return Value::of(result.scalar);
  if (!result.is_sparse()) return Value::of_array(result.values, loc);
  return stored_sparse(nullptr);
}

void Lowerer::check_sparse_assignment(const std::string& name, SourceLoc loc) {
  if (!once_at_top_.count(name) || loop_depth_ > 0)
    unsupported("'" + name +
                    "' is bound to a sparse matrix: a sparse value is bound to a name by one assignment at the "
                    "top level of the function (not in a loop or a branch, and not reassigned)",
                loc);
}

void Lowerer::sparse_return_values(const Value& v, std::vector<ir::ReturnValue>& out, SourceLoc loc) {
  Value r = realize(v, loc);
  const tensor::TensorVar& t = *r.algebra->program->result;
  out.push_back({nullptr, t.values});
  out.push_back({nullptr, t.crd[1]});
  out.push_back({nullptr, t.pos[1]});
  // The extent of the dimension `crd` indexes: the columns of a CSR result,
  // the rows of a CSC one.
  out.push_back({t.shape[t.format.mode_order[1]], nullptr});
}

}  // namespace plait::lowering
