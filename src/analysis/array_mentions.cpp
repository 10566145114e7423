// How a piece of IR mentions each array (see array_mentions.h).
#include "analysis/array_mentions.h"

namespace plait::analysis {

void ArrayMentions::visit(const ir::Load* n) {
  ++mentions[n->array.get()];
  IRVisitor::visit(n);
}

void ArrayMentions::visit(const ir::ArrayDim* n) {
  ++mentions[n->array.get()];
}

void ArrayMentions::visit(const ir::ArraysOverlap* n) {
  ++mentions[n->a.get()];
  ++mentions[n->b.get()];
}

void ArrayMentions::visit(const ir::Store* n) {
  ++mentions[n->array.get()];
  IRVisitor::visit(n);
}

void ArrayMentions::visit(const ir::AtomicUpdate* n) {
  ++mentions[n->array.get()];
  IRVisitor::visit(n);
}

void ArrayMentions::visit(const ir::Declare* n) {
  if (n->array) ++mentions[n->array.get()];
}

void ArrayMentions::visit(const ir::Allocate* n) {
  ++mentions[n->array.get()];
  ++binds[n->array.get()];
  IRVisitor::visit(n);
}

void ArrayMentions::visit(const ir::ArrayBind* n) {
  ++mentions[n->dst.get()];
  ++mentions[n->src.get()];
  ++binds[n->dst.get()];
  bound_to_other_names.insert(n->src.get());
}

void ArrayMentions::visit(const ir::Return* n) {
  for (const ir::ReturnValue& v : n->values)
    if (v.array) {
      ++mentions[v.array.get()];
      returned.insert(v.array.get());
    }
  IRVisitor::visit(n);
}

void ArrayMentions::visit(const ir::MatMul* n) {
  for (const ir::ArrayVar& a : {n->c, n->a, n->b, n->triangle.a2, n->triangle.b2})
    if (a) ++mentions[a.get()];
  IRVisitor::visit(n);
}

}  // namespace plait::analysis
