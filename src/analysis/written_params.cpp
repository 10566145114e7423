#include "analysis/written_params.h"

#include <utility>

#include "ir/ir_visitor.h"

namespace plait::analysis {
namespace {

class WrittenArrays : public ir::IRVisitor {
 public:
  ir::ArraySet written;
  // (dst, src) of every `dst = src`: dst's writes reach src's memory.
  std::vector<std::pair<const ir::ArrayInfo*, const ir::ArrayInfo*>> binds;
  using IRVisitor::visit;

 protected:
  void visit(const ir::Store* n) override {
    written.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::AtomicUpdate* n) override {
    written.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::MatMul* n) override {
    written.insert(n->c.get());
    IRVisitor::visit(n);
  }
  void visit(const ir::ArrayBind* n) override {
    binds.emplace_back(n->dst.get(), n->src.get());
    IRVisitor::visit(n);
  }
};

}  // namespace

std::vector<bool> written_parameters(const ir::Function& function) {
  WrittenArrays arrays;
  arrays.visit(function.body);
  // A binding chain (`u = a; w = u; w[0] = 1`) writes through every link.
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [dst, src] : arrays.binds) {
      if (arrays.written.count(dst) > 0 && arrays.written.insert(src).second) grew = true;
    }
  }
  // A pass that copies an array's info keeps is_param and the name, so a
  // written copy of a parameter counts as the parameter.
  std::vector<bool> out;
  out.reserve(function.params.size());
  for (const ir::Param& param : function.params) {
    bool written = false;
    for (const ir::ArrayInfo* array : arrays.written) {
      if (param.array && (array == param.array.get() || (array->is_param && array->name == param.array->name)))
        written = true;
    }
    out.push_back(written);
  }
  return out;
}

}  // namespace plait::analysis
