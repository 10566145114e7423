// numpy.einsum over dense operands: its subscripts are index notation
// (tensor/index_notation.h). The operands are contracted pairwise, left to
// right, each contraction one statement that sums the labels neither a later
// operand nor the output reads (so that 'ij,jk,kl->il' costs two matrix
// products, not one four-deep nest); the tensor-algebra level fuses and
// lowers them as it does sparse programs.
#include <algorithm>

#include "frontend/array_lowering.h"

namespace plait::lowering {

namespace {

bool is_label(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

Value Lowerer::einsum(const ast::Call& c) {
  const SourceLoc loc = c.loc;
  const ast::Constant* spec = c.args.empty() ? nullptr : c.args[0]->as<ast::Constant>();
  if (!spec || !std::holds_alternative<std::string>(spec->value))
    unsupported("numpy.einsum() takes its subscripts as a string constant, first", loc);
  for (const auto& k : c.keywords)
    if (k.name != "optimize") type_error("numpy.einsum() got an unexpected keyword argument '" + k.name + "'", k.loc);
  std::string text;
  for (char ch : std::get<std::string>(spec->value))
    if (ch != ' ') text += ch;
  if (text.find("...") != std::string::npos)
    unsupported("numpy.einsum() with '...' (broadcast dimensions) is not supported; name every dimension", loc);
  const size_t arrow = text.find("->");
  const std::string inputs = text.substr(0, arrow);
  std::vector<std::string> subscripts(1);
  for (char ch : inputs) {
    if (ch == ',') {
      subscripts.emplace_back();
    } else if (!is_label(ch)) {
      fail(ErrorKind::Value,
           std::string("invalid subscript '") + ch + "' in einstein sum subscripts string, subscripts must be letters",
           c.args[0]->loc);
    } else {
      subscripts.back() += ch;
    }
  }
  if (subscripts.size() != c.args.size() - 1)
    fail(ErrorKind::Value,
         "numpy.einsum(): " + std::to_string(subscripts.size()) + " subscripts for " +
             std::to_string(c.args.size() - 1) + " operands",
         loc);
  std::string output;
  if (arrow != std::string::npos) {
    output = text.substr(arrow + 2);
    for (size_t p = 0; p < output.size(); ++p) {
      const char ch = output[p];
      if (!is_label(ch))
        fail(ErrorKind::Value, std::string("invalid subscript '") + ch + "' in einstein sum subscripts string",
             c.args[0]->loc);
      if (output.find(ch, p + 1) != std::string::npos)
        fail(ErrorKind::Value,
             std::string("einstein sum subscripts string includes output subscript '") + ch + "' multiple times",
             c.args[0]->loc);
      if (inputs.find(ch) == std::string::npos)
        fail(ErrorKind::Value,
             std::string("einstein sum subscripts string included output subscript '") + ch +
                 "' which never appeared in an input",
             c.args[0]->loc);
    }
  } else {
    // NumPy's implicit output: the labels read once, in order of their codes.
    for (char ch : inputs)
      if (is_label(ch) && std::count(inputs.begin(), inputs.end(), ch) == 1) output += ch;
    std::sort(output.begin(), output.end());
  }

  // The operands' tensors, and per label its variable and extent.
  std::vector<tensor::TensorVarPtr> operands;
  ScalarType type;
  std::map<char, tensor::IndexVar> vars;
  std::map<char, std::pair<Expr, std::string>> extents;
  for (size_t k = 0; k < subscripts.size(); ++k) {
    const ast::Expr& arg = *c.args[k + 1];
    Value v = lower(arg);
    if (!is_array_like(v)) unsupported("numpy.einsum() takes arrays", arg.loc);
    tensor::TensorVarPtr t = algebra_tensor(v, arg.loc);
    if (t->type.is_bool()) unsupported("numpy.einsum() of bool arrays is not supported", arg.loc);
    if (static_cast<size_t>(t->rank()) != subscripts[k].size())
      fail(ErrorKind::Value,
           "einstein sum subscripts string '" + subscripts[k] + "' does not match the " + std::to_string(t->rank()) +
               "-D operand " + std::to_string(k),
           arg.loc);
    type = k == 0 ? t->type : promote(type, t->type);
    for (size_t d = 0; d < subscripts[k].size(); ++d) {
      const char ch = subscripts[k][d];
      if (!vars.count(ch)) vars[ch] = index_var(std::string(1, ch));
      auto seen = extents.find(ch);
      if (seen == extents.end()) {
        extents[ch] = {t->shape[d], t->dims[d]};
      } else if (!inferring_) {
        pending_.push_back(ir::Assert::make(
            ir::Compare::make(ir::CompareOp::EQ, seen->second.first, t->shape[d], arg.loc), PLAIT_VALUE_ERROR,
            std::string("numpy.einsum(): the dimensions labelled '") + ch +
                "' differ in size (broadcasting a dimension of 1 is not supported)",
            arg.loc));
      }
    }
    operands.push_back(t);
  }
  type = type.strong();

  auto labels_vars = [&](const std::string& labels) {
    std::vector<tensor::IndexVar> out;
    for (char ch : labels) out.push_back(vars.at(ch));
    return out;
  };
  // Contract left to right: each step keeps the labels read later.
  std::vector<tensor::StatementPtr> stmts;
  tensor::TensorVarPtr current = operands[0];
  std::string current_labels = subscripts[0];
  for (size_t k = operands.size() > 1 ? 1 : 0; k < operands.size(); ++k) {
    tensor::IndexExpr body = tensor::access(current, labels_vars(current_labels));
    std::string read = current_labels;
    if (k > 0) {
      body = tensor::binary(ir::BinaryOp::Mul, body, tensor::access(operands[k], labels_vars(subscripts[k])), type);
      read += subscripts[k];
    } else {
      body = tensor::cast(body, type);
    }
    std::string kept;
    if (k + 1 == operands.size()) {
      kept = output;
    } else {
      std::string later = output;
      for (size_t m = k + 1; m < subscripts.size(); ++m) later += subscripts[m];
      for (char ch : read)
        if (later.find(ch) != std::string::npos && kept.find(ch) == std::string::npos) kept += ch;
    }
    std::string summed;
    for (char ch : read)
      if (kept.find(ch) == std::string::npos && summed.find(ch) == std::string::npos) summed += ch;
    for (auto it = summed.rbegin(); it != summed.rend(); ++it)
      body = tensor::reduce(ir::ReduceOp::Add, vars.at(*it), body);
    std::vector<Expr> shape;
    std::vector<std::string> dims;
    for (char ch : kept) {
      shape.push_back(extents.at(ch).first);
      dims.push_back(extents.at(ch).second);
    }
    auto st = std::make_shared<tensor::Statement>();
    st->out = algebra_temp(type, tensor::Format::dense(static_cast<int>(kept.size())), shape);
    st->out->dims = dims;
    st->vars = labels_vars(kept);
    st->rhs = body;
    st->loc = loc;
    stmts.push_back(st);
    current = st->out;
    current_labels = kept;
  }
  tensor::StatementPtr last = stmts.back();
  stmts.pop_back();
  return realize(with_statement(std::move(stmts), last, false, ScalarKind::Int32), loc);
}

}  // namespace plait::lowering
