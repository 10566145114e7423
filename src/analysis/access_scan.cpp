#include "analysis/access_scan.h"

namespace plait::analysis {

using namespace ir;

void AccessScan::visit(const VarRef* n) {
  read.insert(n->var.get());
}

void AccessScan::visit(const Load* n) {
  loaded.insert(n->array.get());
  dims.insert(n->array.get());
  RaiseScan::visit(n);
}

void AccessScan::visit(const ArrayDim* n) {
  dims.insert(n->array.get());
}

void AccessScan::visit(const ArraysOverlap* n) {
  dims.insert(n->a.get());
  dims.insert(n->b.get());
}

void AccessScan::visit(const Store* n) {
  written.insert(n->array.get());
  dims.insert(n->array.get());
  RaiseScan::visit(n);
}

void AccessScan::visit(const AtomicUpdate* n) {
  written.insert(n->array.get());
  dims.insert(n->array.get());
  RaiseScan::visit(n);
}

void AccessScan::visit(const Assign* n) {
  assigned.insert(n->var.get());
  IRVisitor::visit(n);
}

void AccessScan::visit(const Allocate* n) {
  bound.insert(n->array.get());
  RaiseScan::visit(n);
}

void AccessScan::visit(const ArrayBind* n) {
  bound.insert(n->dst.get());
  dims.insert(n->src.get());
}

void AccessScan::visit(const Declare* n) {
  if (n->array) bound.insert(n->array.get());  // (re)starts empty
}

void AccessScan::visit(const For* n) {
  has_loop = true;
  if (is_parallel(n->schedule.kind)) has_parallel = true;
  assigned.insert(n->var.get());
  ++depth_;
  IRVisitor::visit(n);
  --depth_;
}

void AccessScan::visit(const While* n) {
  has_loop = true;
  ++depth_;
  IRVisitor::visit(n);
  --depth_;
}

void AccessScan::visit(const Break* /*n*/) {
  if (depth_ == 0) escapes = true;
}

void AccessScan::visit(const Continue* /*n*/) {
  if (depth_ == 0) escapes = true;
}

void AccessScan::visit(const Assert* n) {
  if (depth_ == 0) escapes = true;
  RaiseScan::visit(n);
}

void AccessScan::visit(const Return* n) {
  returns = true;
  IRVisitor::visit(n);
}

}  // namespace plait::analysis
