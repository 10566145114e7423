// Tests of the IR: node construction and its checks, the printer, the default
// visitor and mutator, structural equality.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/ir.h"
#include "ir/ir_equal.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::ir {
namespace {

Var scalar(const std::string& name, ScalarType t) { return std::make_shared<VarInfo>(VarInfo{name, t, {}, false}); }
ArrayVar array(const std::string& name, ArrayType t, bool param = true) {
  return std::make_shared<ArrayInfo>(ArrayInfo{name, t, {}, param});
}

// s = 0.0; parallel for i in range(0, n): s += A[i] * 2.0
Function sum_kernel() {
  Var n = scalar("n", ScalarType::i64());
  n->is_param = true;
  ArrayVar a = array("A", {ScalarKind::Float64, 1, Layout::C});
  Var s = scalar("s", ScalarType::f64());
  Var i = scalar("i", ScalarType::i64());
  Expr elem = Load::make(a, {VarRef::make(i)});
  Expr term = Binary::make(BinaryOp::Mul, elem, FloatImm::make(2.0, ScalarType::f64()), ScalarType::f64());
  LoopSchedule sc;
  sc.kind = LoopKind::Parallel;
  sc.reductions.push_back({s, ReduceOp::Add});
  Stmt loop = For::make(i, IntImm::make(0), VarRef::make(n), IntImm::make(1),
                        Block::make({Assign::make(s, Binary::make(BinaryOp::Add, VarRef::make(s), term, ScalarType::f64()))}),
                        sc);
  Function f;
  f.name = "total";
  f.params = {Param{nullptr, a}, Param{n, nullptr}};
  f.body = Block::make({Declare::make(s), Assign::make(s, FloatImm::make(0.0, ScalarType::f64())), Declare::make(i), loop,
                        Return::make({ReturnValue{VarRef::make(s), nullptr}})});
  f.results = {ValueType::of(ScalarType::f64())};
  return f;
}

TEST(IR, MakeSetsTypes) {
  Var x = scalar("x", ScalarType::f32());
  Expr cmp = Compare::make(CompareOp::LT, VarRef::make(x), FloatImm::make(1.0, ScalarType::f32()));
  EXPECT_EQ(cmp->type.kind, ScalarKind::Bool);
  EXPECT_EQ(cmp->kind, NodeKind::Compare);
  EXPECT_NE(cmp->as<Compare>(), nullptr);
  EXPECT_EQ(cmp->as<Binary>(), nullptr);
  Expr n = Unary::make(UnaryOp::Not, cmp);
  EXPECT_TRUE(n->type.is_bool());
  ArrayVar a = array("A", {ScalarKind::Int32, 2, Layout::F});
  Expr ld = Load::make(a, {IntImm::make(0), IntImm::make(1)});
  EXPECT_EQ(ld->type, ScalarType::i32());
  EXPECT_EQ(ArrayDim::make(a, 1)->type, ScalarType::py_int());
  Expr sel = Select::make(cmp, VarRef::make(x), FloatImm::make(0.0, ScalarType::f32()));
  EXPECT_EQ(sel->type, ScalarType::f32());
}

TEST(IR, MakeRejectsIllTypedNodes) {
  Var x = scalar("x", ScalarType::f64());
  Var k = scalar("k", ScalarType::i64());
  ArrayVar a = array("A", {ScalarKind::Float32, 2, Layout::C});
  EXPECT_THROW(Assign::make(x, IntImm::make(1)), InternalError);
  EXPECT_NO_THROW(Assign::make(x, FloatImm::make(1.0)));  // weak float into f64: kinds match
  EXPECT_THROW(Store::make(a, {IntImm::make(0), IntImm::make(0)}, FloatImm::make(1.0, ScalarType::f64())), InternalError);
  EXPECT_THROW(Load::make(a, {IntImm::make(0)}), InternalError);
  EXPECT_THROW(Binary::make(BinaryOp::Add, VarRef::make(x), VarRef::make(k), ScalarType::f64()), InternalError);
  EXPECT_NO_THROW(Binary::make(BinaryOp::Shl, VarRef::make(k), IntImm::make(3, ScalarType::i32()), ScalarType::i64()));
  EXPECT_NO_THROW(Binary::make(BinaryOp::Pow, VarRef::make(x), VarRef::make(k), ScalarType::f64()));
  EXPECT_THROW(If::make(VarRef::make(k), Block::make({})), InternalError);
  EXPECT_THROW(IntImm::make(1, ScalarType::f64()), InternalError);
  EXPECT_THROW(ArrayDim::make(a, 2), InternalError);
}

TEST(IR, Names) {
  EXPECT_STREQ(node_kind_name(NodeKind::AtomicUpdate), "AtomicUpdate");
  EXPECT_STREQ(binary_op_name(BinaryOp::FloorDiv), "//");
  EXPECT_STREQ(reduce_op_name(ReduceOp::Max), "max");
  EXPECT_STREQ(intrinsic_name(Intrinsic::IsFinite), "isfinite");
  EXPECT_STREQ(compare_op_name(CompareOp::GE), ">=");
}

TEST(IRPrinter, PrintsFunction) {
  EXPECT_EQ(to_string(sum_kernel()),
            "def total(A: f64[::1], n: i64) -> f64 {\n"
            "  let s:f64\n"
            "  s = 0.0:f64\n"
            "  let i:i64\n"
            "  parallel for i in range(0:int, n, 1:int) reduction(+: s) {\n"
            "    s = (s + (A[i] * 2.0:f64))\n"
            "  }\n"
            "  return s\n"
            "}\n");
}

TEST(IRPrinter, PrintsExpressions) {
  Var x = scalar("x", ScalarType::f64());
  Var k = scalar("k", ScalarType::i64());
  EXPECT_EQ(to_string(Cast::make(ScalarType::f32(), VarRef::make(x))), "cast<f32>(x)");
  EXPECT_EQ(to_string(Cast::make(ScalarType::py_int(), VarRef::make(x), true)), "checked_cast<int>(x)");
  EXPECT_EQ(to_string(Binary::make(BinaryOp::FloorDiv, VarRef::make(k), IntImm::make(-3), ScalarType::i64(), true)),
            "(k //[zero_check] -3:int)");
  EXPECT_EQ(to_string(Binary::make(BinaryOp::PyMax, VarRef::make(x), FloatImm::make(0.5), ScalarType::f64())),
            "max(x, 0.5:float)");
  EXPECT_EQ(to_string(Call::make(Intrinsic::Sqrt, {VarRef::make(x)}, ScalarType::f64(), true)), "math.sqrt(x)");
  EXPECT_EQ(to_string(Logical::make(LogicalOp::Or, BoolImm::make(true), BoolImm::make(false))), "(True or False)");
  ArrayVar b = array("B", {ScalarKind::Float64, 2, Layout::Any});
  Stmt st = Store::make(b, {VarRef::make(k), IntImm::make(1)}, FloatImm::make(1e300, ScalarType::f64()), true);
  EXPECT_EQ(to_string(st), "B[k, 1:int; checked] = 1e+300:f64\n");
  Stmt at = AtomicUpdate::make(b, {VarRef::make(k), VarRef::make(k)}, AtomicOp::Max, VarRef::make(x));
  EXPECT_EQ(to_string(at, 1), "  atomic B[k, k] max= x\n");
  ArrayVar c = array("C", {ScalarKind::Float64, 1, Layout::C}, false);
  EXPECT_EQ(to_string(Declare::make(c)), "let C:f64[::1]\n");
  EXPECT_EQ(to_string(Allocate::make(c, {VarRef::make(k)}, FillKind::Zeros)), "C = zeros<f64[::1]>((k,))\n");
}

// Counts loads and renames nothing: checks the default traversal reaches
// every child.
struct LoadCounter : IRVisitor {
  int loads = 0, fors = 0;
  using IRVisitor::visit;
  void visit(const Load* n) override {
    ++loads;
    IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    ++fors;
    IRVisitor::visit(n);
  }
};

TEST(IRVisitor, VisitsEveryChild) {
  Function f = sum_kernel();
  LoadCounter c;
  c.visit(f.body);
  EXPECT_EQ(c.loads, 1);
  EXPECT_EQ(c.fors, 1);
}

// Replaces the float literal 2.0 by 3.0.
struct TwoToThree : IRMutator {
  using IRMutator::visit;
  Expr visit(const FloatImm* n, const Expr& self) override {
    return n->value == 2.0 ? FloatImm::make(3.0, n->type, n->loc) : self;
  }
};

TEST(IRMutator, RebuildsOnlyChangedNodes) {
  Function f = sum_kernel();
  IRMutator identity;
  EXPECT_EQ(identity.mutate(f.body), f.body);  // nothing changed: the same node

  TwoToThree m;
  Stmt out = m.mutate(f.body);
  ASSERT_NE(out, f.body);
  const Block* old_block = f.body->as<Block>();
  const Block* new_block = out->as<Block>();
  ASSERT_NE(new_block, nullptr);
  EXPECT_EQ(new_block->stmts[0], old_block->stmts[0]);  // unchanged statements stay shared
  EXPECT_NE(new_block->stmts[3], old_block->stmts[3]);
  const For* loop = new_block->stmts[3]->as<For>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->schedule.reductions.size(), 1u);
  EXPECT_NE(to_string(out).find("(A[i] * 3.0:f64)"), std::string::npos);
}

TEST(IREqual, ComparesWholeTrees) {
  Var i = scalar("i", ScalarType::i64());
  Var j = scalar("i", ScalarType::i64());  // another variable of the same name
  ArrayVar a = array("A", {ScalarKind::Float64, 1, Layout::C});
  auto elem = [&](const Var& v, bool checked) { return Load::make(a, {VarRef::make(v)}, checked); };
  auto twice = [&](const Expr& e) {
    return Binary::make(BinaryOp::Mul, e, FloatImm::make(2.0, ScalarType::f64()), ScalarType::f64());
  };
  EXPECT_TRUE(equal(twice(elem(i, false)), twice(elem(i, false))));
  EXPECT_FALSE(equal(twice(elem(i, false)), twice(elem(j, false))));
  EXPECT_FALSE(equal(twice(elem(i, false)), twice(elem(i, true))));
  EXPECT_FALSE(equal(IntImm::make(1, ScalarType::py_int()), IntImm::make(1, ScalarType::i64())));
  EXPECT_FALSE(equal(FloatImm::make(0.0, ScalarType::f64()), FloatImm::make(-0.0, ScalarType::f64())));
  EXPECT_TRUE(equal(FloatImm::make(NAN, ScalarType::f64()), FloatImm::make(NAN, ScalarType::f64())));
  EXPECT_TRUE(equal(Expr(), Expr()));
  EXPECT_FALSE(equal(VarRef::make(i), Expr()));
}

TEST(IREqual, Options) {
  Var i = scalar("i", ScalarType::i64()), k = scalar("k", ScalarType::i64());
  ArrayVar a = array("A", {ScalarKind::Float64, 1, Layout::C}), b = array("B", {ScalarKind::Float64, 1, Layout::C});
  // The variables of two loops stand for each other, and for nothing else.
  EqualOptions loops;
  loops.a_var = i.get();
  loops.b_var = k.get();
  EXPECT_TRUE(equal(Load::make(a, {VarRef::make(i)}), Load::make(a, {VarRef::make(k)}), loops));
  EXPECT_FALSE(equal(VarRef::make(i), VarRef::make(i), loops));
  EXPECT_FALSE(equal(VarRef::make(k), VarRef::make(k), loops));
  const Expr shared = VarRef::make(i);
  EXPECT_FALSE(equal(shared, shared, loops));  // no node is itself when the variables differ
  // Arrays through the names bound to them.
  EqualOptions bound;
  bound.array_of = [&](const ArrayInfo* x) { return x == b.get() ? a.get() : x; };
  EXPECT_TRUE(equal(ArrayDim::make(a, 0), ArrayDim::make(b, 0), bound));
  EXPECT_FALSE(equal(ArrayDim::make(a, 0), ArrayDim::make(b, 0)));
  // Types and checks aside; only some kinds looked into.
  const Expr n = VarRef::make(i);
  auto div = [&](ScalarType t, bool zero_check) {
    return Binary::make(BinaryOp::FloorDiv, n, IntImm::make(2, t), ScalarType::i64(), zero_check);
  };
  EqualOptions values;
  values.types = false;
  values.checks = false;
  values.looks_into = [](NodeKind k) { return k != NodeKind::Load; };
  EXPECT_FALSE(equal(div(ScalarType::py_int(), true), div(ScalarType::i64(), false)));
  EXPECT_TRUE(equal(div(ScalarType::py_int(), true), div(ScalarType::i64(), false), values));
  EXPECT_FALSE(equal(Cast::make(ScalarType::i32(), n), Cast::make(ScalarType::i16(), n), values));
  const Expr load = Load::make(a, {n});
  EXPECT_FALSE(equal(load, Load::make(a, {n}), values));
  EXPECT_TRUE(equal(load, load, values));
}

}  // namespace
}  // namespace plait::ir
