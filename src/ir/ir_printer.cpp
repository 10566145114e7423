// The text form of the IR (see ir_printer.h). Statements print one per line,
// indented two spaces per nesting level; literals and casts carry their type
// (`1.0:f64`, `cast<f32>(x)`) so that type changes show in diffs.
#include "ir/ir_printer.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "ir/ir_visitor.h"

namespace plait::ir {

namespace {

std::string float_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string join(const std::vector<Expr>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += to_string(v[i]);
  }
  return out;
}

std::string element(const ArrayVar& a, const std::vector<Expr>& indices, bool checked) {
  return a->name + "[" + join(indices) + (checked ? "; checked]" : "]");
}

std::string pad(int indent) { return std::string(static_cast<size_t>(indent) * 2, ' '); }

const char* fill_name(FillKind f) {
  switch (f) {
    case FillKind::Uninitialized: return "empty";
    case FillKind::Zeros: return "zeros";
    case FillKind::Ones: return "ones";
    case FillKind::Value: return "full";
  }
  return "?";
}

const char* loop_prefix(LoopKind k) {
  switch (k) {
    case LoopKind::Serial: return "";
    case LoopKind::Parallel: return "parallel ";
    case LoopKind::Vectorized: return "simd ";
    case LoopKind::ParallelVectorized: return "parallel simd ";
  }
  return "";
}

std::string schedule_text(const LoopSchedule& s) {
  std::string out;
  if (s.num_threads > 0) out += " num_threads(" + std::to_string(s.num_threads) + ")";
  if (s.collapse > 1) out += " collapse(" + std::to_string(s.collapse) + ")";
  if (s.simd_width > 0) out += " simdlen(" + std::to_string(s.simd_width) + ")";
  if (s.block_strip > 0) out += " block(" + std::to_string(s.block_strip) + ")";
  if (s.most_trips > 0) out += " le(" + std::to_string(s.most_trips) + ")";
  if (s.single_block) out += " single_block";
  if (s.team_in_step) out += " team_in_step";
  for (const Reduction& r : s.reductions) out += std::string(" reduction(") + reduce_op_name(r.op) + ": " + r.var->name + ")";
  for (const ArrayReduction& r : s.array_reductions)
    out += std::string(" reduction(") + reduce_op_name(r.op) + ": " + r.array->name + "[:])";
  for (const auto& plan : s.plans) out += " plan(" + plan->describe() + ")";
  if (!s.privates.empty()) {
    out += " private(";
    for (size_t i = 0; i < s.privates.size(); ++i) out += (i ? ", " : "") + s.privates[i]->name;
    out += ")";
  }
  return out;
}

class ExprPrinter : public IRVisitor {
 public:
  std::string out;
  using IRVisitor::visit;

 protected:
  void visit(const IntImm* n) override { out = std::to_string(n->value) + ":" + plait::to_string(n->type); }
  void visit(const FloatImm* n) override { out = float_text(n->value) + ":" + plait::to_string(n->type); }
  void visit(const BoolImm* n) override { out = n->value ? "True" : "False"; }
  void visit(const VarRef* n) override { out = n->var->name; }
  void visit(const Cast* n) override {
    out = std::string(n->checked ? "checked_cast<" : "cast<") + plait::to_string(n->type) + ">(" + to_string(n->value) + ")";
  }
  void visit(const Unary* n) override {
    out = std::string("(") + unary_op_name(n->op) + (n->op == UnaryOp::Not ? " " : "") + to_string(n->a) + ")";
  }
  void visit(const Binary* n) override {
    const std::string zc = n->zero_check ? "[zero_check]" : "";
    switch (n->op) {
      case BinaryOp::Min:
      case BinaryOp::Max:
      case BinaryOp::PyMin:
      case BinaryOp::PyMax:
        out = std::string(binary_op_name(n->op)) + "(" + to_string(n->a) + ", " + to_string(n->b) + ")";
        break;
      default:
        out = std::string("(") + to_string(n->a) + " " + binary_op_name(n->op) + zc + " " + to_string(n->b) + ")";
        break;
    }
  }
  void visit(const Compare* n) override {
    out = std::string("(") + to_string(n->a) + " " + compare_op_name(n->op) + " " + to_string(n->b) + ")";
  }
  void visit(const Logical* n) override {
    out = std::string("(") + to_string(n->a) + (n->op == LogicalOp::And ? " and " : " or ") + to_string(n->b) + ")";
  }
  void visit(const Select* n) override {
    out = std::string("(") + to_string(n->t) + " if " + to_string(n->cond) + " else " + to_string(n->f) + ")";
  }
  void visit(const Call* n) override {
    out = std::string(n->python_math ? "math." : "np.") + intrinsic_name(n->fn) + "(" + join(n->args) + ")";
  }
  void visit(const Load* n) override { out = element(n->array, n->indices, n->checked); }
  void visit(const ArrayDim* n) override { out = n->array->name + ".shape[" + std::to_string(n->dim) + "]"; }
  void visit(const ArraysOverlap* n) override {
    out = std::string(n->unless_same_view ? "plait.overlap_unless_same_view(" : "plait.overlap(") + n->a->name + ", " +
          n->b->name + ")";
  }
};

class StmtPrinter : public IRVisitor {
 public:
  explicit StmtPrinter(int indent) : indent_(indent) {}
  std::ostringstream out;
  using IRVisitor::visit;

 protected:
  void line(const std::string& text) { out << pad(indent_) << text << "\n"; }
  void nested(const Stmt& s) {
    ++indent_;
    visit(s);
    --indent_;
  }

  void visit(const Block* n) override {
    for (const Stmt& s : n->stmts) visit(s);
  }
  void visit(const Declare* n) override {
    line(n->var ? "let " + n->var->name + ":" + plait::to_string(n->var->type)
                : "let " + n->array->name + ":" + plait::to_string(n->array->type));
  }
  void visit(const Assign* n) override { line(n->var->name + " = " + to_string(n->value)); }
  void visit(const Store* n) override { line(element(n->array, n->indices, n->checked) + " = " + to_string(n->value)); }
  void visit(const AtomicUpdate* n) override {
    line("atomic " + element(n->array, n->indices, n->checked) + " " + atomic_op_name(n->op) + "= " + to_string(n->value));
  }
  void visit(const If* n) override {
    line("if " + to_string(n->cond) + " {");
    nested(n->then_case);
    if (n->else_case) {
      line("} else {");
      nested(n->else_case);
    }
    line("}");
  }
  void visit(const For* n) override {
    line(std::string(loop_prefix(n->schedule.kind)) + "for " + n->var->name + " in range(" + to_string(n->begin) + ", " +
         to_string(n->end) + ", " + to_string(n->step) + ")" + schedule_text(n->schedule) + " {");
    nested(n->body);
    line("}");
  }
  void visit(const While* n) override {
    line("while " + to_string(n->cond) + " {");
    nested(n->body);
    line("}");
  }
  void visit(const Break*) override { line("break"); }
  void visit(const Assert* n) override { line("assert " + to_string(n->cond) + ", \"" + n->message + "\""); }
  void visit(const Continue*) override { line("continue"); }
  void visit(const Return* n) override {
    std::string text = "return";
    for (size_t i = 0; i < n->values.size(); ++i) {
      const ReturnValue& v = n->values[i];
      text += (i ? ", " : " ") + (v.scalar ? to_string(v.scalar) : v.array->name);
    }
    line(text);
  }
  void visit(const Allocate* n) override {
    std::string text = n->array->name + " = " + fill_name(n->fill) + "<" + plait::to_string(n->array->type) + ">((" +
                       join(n->shape) + (n->shape.size() == 1 ? ",)" : ")");
    if (n->fill_value) text += ", " + to_string(n->fill_value);
    line(text + ")");
  }
  void visit(const ArrayBind* n) override { line(n->dst->name + " = " + n->src->name); }
  void visit(const MatMul* n) override {
    auto operand = [](const ArrayVar& x, bool transposed) { return x->name + (transposed ? ".T" : ""); };
    const MatMulTriangle& tri = n->triangle;
    const std::string rows = n->c->name + "[0:" + to_string(n->m) + ", 0:" + to_string(n->n) + "]";
    std::string text;
    if (tri.part == MatMulPart::StrictUpperInPlace) {
      text =
          "matmul " + rows + " += strict_upper(" + operand(n->a, n->a_transposed) + ") @ " + n->c->name + " in place";
    } else if (tri.part == MatMulPart::LowerSolve) {
      const std::string row = tri.vector_row ? to_string(tri.vector_row) + ", " : "";
      text = "matmul " + n->c->name + "[" + row + "0:" + to_string(n->m) + "] = solve(lower(" +
             operand(n->a, n->a_transposed) + "), " + n->b->name + (row.empty() ? "" : "[" + row + ":]") + ")";
    } else if (tri.part == MatMulPart::SymmetricLower) {
      text = "matmul " + rows + " = " + to_string(n->alpha) + " * (symmetric(lower(" + n->a->name + ")) @ " +
             operand(n->b, n->b_transposed) + ")";
      if (n->beta) text += " + " + to_string(n->beta) + " * " + n->c->name;
    } else {
      text = "matmul " + rows + " = " + to_string(n->alpha) + " * (" + operand(n->a, n->a_transposed) + " @ " +
             operand(n->b, n->b_transposed) + ")[k < " + to_string(n->k) + "]";
      if (tri.a2)
        text += " + " + to_string(tri.alpha2) + " * (" + operand(tri.a2, tri.a2_transposed) + " @ " +
                operand(tri.b2, tri.b2_transposed) + ")";
      if (n->beta) text += " + " + to_string(n->beta) + " * " + n->c->name;
      if (tri.part != MatMulPart::Full) text += tri.part == MatMulPart::Lower ? " lower" : " upper";
    }
    if (tri.row_condition) text += " where all " + tri.row->name + ": " + to_string(tri.row_condition);
    line(text + " else {");
    nested(n->loops);
    line("}");
  }

 private:
  int indent_;
};

}  // namespace

std::string to_string(const Expr& e) {
  if (!e) return "<null>";
  ExprPrinter p;
  p.visit(e);
  return p.out;
}

std::string to_string(const Stmt& s, int indent) {
  if (!s) return pad(indent) + "<null>\n";
  StmtPrinter p(indent);
  p.visit(s);
  return p.out.str();
}

std::string to_string(const Function& f) {
  std::string out = "def " + f.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    out += (i ? ", " : "") + p.name() + ": " +
           (p.scalar ? plait::to_string(p.scalar->type) : plait::to_string(p.array->type));
  }
  out += ") -> ";
  if (f.results.empty()) {
    out += "None";
  } else if (f.returns_list) {
    out += "[";
    for (size_t i = 0; i < f.results.size(); ++i) out += (i ? ", " : "") + plait::to_string(f.results[i]);
    out += "]";
  } else if (f.returns_tuple || f.results.size() > 1) {
    out += "(";
    for (size_t i = 0; i < f.results.size(); ++i) out += (i ? ", " : "") + plait::to_string(f.results[i]);
    out += f.results.size() == 1 ? ",)" : ")";
  } else {
    out += plait::to_string(f.results[0]);
  }
  out += " {\n" + to_string(f.body, 1) + "}\n";
  return out;
}

}  // namespace plait::ir
