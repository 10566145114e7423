// transforms/hoist_allocations: which temporaries of a serial loop's steps
// are allocated once before it, checked on the IR after the pipeline and on
// the pass's remarks, with the refusals that keep an allocation in its step.
#include <gtest/gtest.h>

#include <string>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

ir::Function lower(const std::string& source, const std::string& name, const std::string& signature) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, name);
  Globals globals;
  globals["np"].module = "numpy";
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), globals, {});
  CompileOptions options;
  options.verify_ir = true;
  run_pipeline(f, options);
  return f;
}

// The remarks of hoist_allocations, one per line.
std::string hoist_remarks(const ir::Function& f) {
  std::string out;
  for (const ir::Remark& r : f.remarks)
    if (r.pass == "hoist_allocations") out += std::to_string(r.loc.line) + ": " + r.message + "\n";
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Whether `allocation` comes before `loop` in the printed IR (both present).
bool before(const std::string& text, const std::string& allocation, const std::string& loop) {
  const size_t a = text.find(allocation), l = text.find(loop);
  return a != std::string::npos && l != std::string::npos && a < l;
}

TEST(HoistAllocations, FloydWarshallCopiesAreAllocatedOnceBeforeTheLoopOverK) {
  const char* src =
      "def f(path):\n"
      "    for k in range(path.shape[0]):\n"
      "        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])\n";
  ir::Function f = lower(src, "f", "i32[:, ::1]");
  const std::string text = ir::to_string(f);
  EXPECT_TRUE(before(text, "_tmp_array0 = empty<i32[::1]>((path.shape[0],))", "for k in")) << text;
  EXPECT_TRUE(before(text, "_tmp_array2 = empty<i32[::1]>((path.shape[1],))", "for k in")) << text;
  // The declarations follow the allocations out of the loop.
  EXPECT_TRUE(before(text, "let _tmp_array0:i32[::1]", "for k in")) << text;
  EXPECT_EQ(text.find("empty<"), text.rfind("empty<i32[::1]>((path.shape[0],))")) << text;
  const std::string remarks = hoist_remarks(f);
  EXPECT_TRUE(contains(remarks, "3: temporary `_tmp_array0` allocated once before the loop over `k` (line 2)")) << remarks;
  EXPECT_TRUE(contains(remarks, "3: temporary `_tmp_array2` allocated once before the loop over `k` (line 2)")) << remarks;
}

TEST(HoistAllocations, UserScratchOfALocalExtent) {
  const char* src =
      "def f(a, T):\n"
      "    n = a.shape[0]\n"
      "    m = n // 2 + 1\n"
      "    for t in range(T):\n"
      "        tmp = np.empty((n, m))\n"
      "        for i in range(n):\n"
      "            for j in range(m):\n"
      "                tmp[i, j] = a[i] * t + j\n"
      "        for i in range(n):\n"
      "            a[i] = tmp[i, m - 1]\n";
  ir::Function f = lower(src, "f", "f64[::1], int");
  const std::string text = ir::to_string(f);
  EXPECT_TRUE(before(text, "tmp = empty<f64[:, ::1]>((n, m))", "for t in")) << text;
  EXPECT_TRUE(contains(hoist_remarks(f), "temporary `tmp` allocated once before the loop over `t` (line 4)"));
}

TEST(HoistAllocations, OutOfEveryEnclosingSerialLoopWhileLegal) {
  const char* src =
      "def f(a, S, T):\n"
      "    for s in range(S):\n"
      "        for t in range(T):\n"
      "            tmp = np.empty(a.shape[0])\n"
      "            for i in range(a.shape[0]):\n"
      "                tmp[i] = a[i] + s * t\n"
      "            for i in range(a.shape[0]):\n"
      "                a[i] = tmp[i]\n"
      "\n"
      "def g(A):\n"
      "    for i in range(A.shape[0]):\n"
      "        for t in range(3):\n"
      "            r = np.empty(i + 1)\n"
      "            for j in range(i + 1):\n"
      "                r[j] = A[i, j] * t\n"
      "            for j in range(i + 1):\n"
      "                A[i, j] = r[j]\n";
  ir::Function f = lower(src, "f", "f64[::1], int, int");
  std::string text = ir::to_string(f);
  EXPECT_TRUE(before(text, "tmp = empty", "for s in")) << text;
  // One remark, naming the outermost loop.
  EXPECT_EQ(hoist_remarks(f), "4: temporary `tmp` allocated once before the loop over `s` (line 2), not in every step\n");

  ir::Function g = lower(src, "g", "f64[:, ::1]");
  text = ir::to_string(g);
  EXPECT_TRUE(before(text, "for i in", "r = empty")) << text;
  EXPECT_TRUE(before(text, "r = empty", "for t in")) << text;
  const std::string remarks = hoist_remarks(g);
  EXPECT_TRUE(contains(remarks, "allocated once before the loop over `t` (line 12)")) << remarks;
  EXPECT_FALSE(contains(remarks, "every step of the loop over `i`")) << remarks;
}

TEST(HoistAllocations, ANameWhoseEarlierValueIsDeadAtTheLoop) {
  const char* src =
      "def f(a, T):\n"
      "    tmp = np.empty(a.shape[0])\n"
      "    tmp[0] = 2.0\n"
      "    a[0] = tmp[0]\n"
      "    for t in range(T):\n"
      "        tmp = np.empty(a.shape[0])\n"
      "        tmp[0] = a[0] + t\n"
      "        a[0] = tmp[0]\n";
  ir::Function f = lower(src, "f", "f64[::1], int");
  const std::string text = ir::to_string(f);
  const size_t loop = text.find("for t in");
  EXPECT_EQ(text.find("tmp = empty", loop), std::string::npos) << text;
  EXPECT_TRUE(contains(hoist_remarks(f), "temporary `tmp` allocated once before the loop over `t` (line 5)"));
}

TEST(HoistAllocations, TheUsualVersionOfATimeLoopVersionedOnAnOverlapTest) {
  // b and c may share memory: the loop is versioned on the test, made once
  // before it. The usual version (the last) allocates its temporary before
  // it; the other keeps it in the branch of its body that the test picks.
  const char* src =
      "def f(a, b, c, T):\n"
      "    for t in range(T):\n"
      "        tmp = np.empty(a.shape[0])\n"
      "        for i in range(a.shape[0]):\n"
      "            tmp[i] = a[i] * t\n"
      "        b[:] = c + 1.0\n"
      "        for i in range(a.shape[0]):\n"
      "            a[i] = tmp[i]\n";
  ir::Function f = lower(src, "f", "f64[::1], f64[::1], f64[::1], int");
  const std::string text = ir::to_string(f);
  const size_t usual = text.rfind("for t in");
  ASSERT_NE(text.find("for t in"), usual) << text;
  EXPECT_EQ(text.find("tmp = empty", usual), std::string::npos) << text;
  EXPECT_NE(text.rfind("tmp = empty", usual), std::string::npos) << text;
  EXPECT_TRUE(contains(hoist_remarks(f), "temporary `tmp` allocated once before the loop over `t` (line 2)"));
}

TEST(HoistAllocations, WhileLoop) {
  const char* src =
      "def f(a):\n"
      "    t = 0\n"
      "    while t < 3:\n"
      "        tmp = np.empty(a.shape[0])\n"
      "        for i in range(a.shape[0]):\n"
      "            tmp[i] = a[i] * 2.0\n"
      "        for i in range(a.shape[0]):\n"
      "            a[i] = tmp[i]\n"
      "        t += 1\n";
  ir::Function f = lower(src, "f", "f64[::1]");
  const std::string text = ir::to_string(f);
  EXPECT_TRUE(before(text, "tmp = empty", "while")) << text;
  EXPECT_TRUE(contains(hoist_remarks(f), "allocated once before the `while` loop (line 3)"));
}

// The refusals: each kernel keeps an allocation of `tmp` inside its loop,
// with a remark saying why.
struct Refusal {
  const char* name;
  const char* source;
  const char* signature;
  const char* why;
};

class HoistRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(HoistRefusal, KeepsTheAllocationInTheStep) {
  const Refusal& r = GetParam();
  ir::Function f = lower(r.source, "f", r.signature);
  const std::string text = ir::to_string(f);
  EXPECT_NE(text.find("tmp = ", text.find("for ")), std::string::npos) << text;
  const std::string remarks = hoist_remarks(f);
  if (std::string(r.why).empty()) {
    EXPECT_EQ(remarks, "") << text;
  } else {
    EXPECT_TRUE(contains(remarks, "temporary `tmp` is allocated in every step of the loop over `t` (line 3): " +
                                      std::string(r.why)))
        << remarks;
  }
}

INSTANTIATE_TEST_SUITE_P(
    HoistAllocations, HoistRefusal,
    ::testing::Values(
        Refusal{"ExtentReadsAVariableTheLoopAssigns",
                "def f(a, T):\n"
                "    n = 1\n"
                "    for t in range(T):\n"
                "        tmp = np.empty(n)\n"
                "        tmp[0] = a[0]\n"
                "        a[0] = tmp[0] + 1.0\n"
                "        n += 1\n",
                "f64[::1], int", "its extents read `n`, which the loop assigns"},
        Refusal{"ExtentReadsTheLoopVariable",
                "def f(a, T):\n"
                "    s = 0.0\n"
                "    for t in range(T):\n"
                "        tmp = np.empty(t + 1)\n"
                "        tmp[0] = a[0]\n"
                "        a[0] = tmp[0] + 1.0\n",
                "f64[::1], int", "its extents read `t`, which the loop assigns"},
        Refusal{"ExtentMayBeNegative",
                "def f(a, n):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(n)\n"
                "        tmp[0] = a[0]\n"
                "        a[0] = tmp[0] + 1.0\n",
                "f64[::1], int", "its extent `n` may be negative"},
        Refusal{"ExtentMayBeNegativeAfterASubtraction",
                "def f(a):\n"
                "    n = a.shape[0] - 1\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(n)\n"
                "        tmp[0] = a[0]\n"
                "        a[0] = tmp[0] + 1.0\n",
                "f64[::1]", "its extent `n` may be negative"},
        Refusal{"ExtentCanRaise",
                "def f(a, k):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(a.shape[0] // k)\n"
                "        tmp[0] = a[0]\n"
                "        a[0] = tmp[0] + 1.0\n",
                "f64[::1], int", "its extents can raise an error"},
        Refusal{"ExtentReadsElements",
                "def f(a, c):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(c[0])\n"
                "        tmp[0] = a[0]\n"
                "        a[0] = tmp[0] + 1.0\n",
                "f64[::1], i64[::1]", "its extents read array elements"},
        Refusal{"Returned",
                "def f(a):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = a[0]\n"
                "        if tmp[0] > 0.5:\n"
                "            return tmp\n"
                "    return a\n",
                "f64[::1]", "it is returned"},
        Refusal{"UsedAfterTheLoop",
                "def f(a):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = a[0] + t\n"
                "    return tmp\n",
                "f64[::1]", "it is read after the loop"},
        Refusal{"AllocatedTwiceInTheStep",
                "def f(a):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = a[0]\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = 1.0\n"
                "        a[0] += tmp[0]\n",
                "f64[::1]", "the loop binds it again"},
        Refusal{"BoundToAnotherName",
                "def f(a):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = a[0]\n"
                "        b = tmp\n"
                "        a[0] = b[0] + 1.0\n",
                "f64[::1]", "it is bound to another name"},
        Refusal{"ReadBeforeItsAllocationInAStep",
                "def f(a):\n"
                "    tmp = np.empty(a.shape[0])\n"
                "    for t in range(3):\n"
                "        a[0] += tmp[0]\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = 1.0\n",
                "f64[::1]", "a step may read it before allocating it"},
        Refusal{"ReadByTheLoopBounds",
                "def f(a):\n"
                "    tmp = np.empty(2)\n"
                "    for t in range(tmp.shape[0]):\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = 1.0\n"
                "        a[0] += tmp[0]\n",
                "f64[::1]", "the loop's bounds or condition read it"},
        Refusal{"ReadInTheNextStep",
                "def f(a):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        if t > 0:\n"
                "            a[0] += tmp[0]\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = 1.0\n",
                "f64[::1]", "a step may read it before allocating it"},
        Refusal{"Zeros",
                "def f(a):\n"
                "    s = 0.0\n"
                "    for t in range(3):\n"
                "        tmp = np.zeros(a.shape[0])\n"
                "        tmp[0] += a[0]\n"
                "        a[0] = tmp[0] + 1.0\n",
                "f64[::1]", "its fill (np.zeros, np.ones, np.full) belongs to every step"},
        // Each iteration of a parallel loop needs its own temporary: no remark.
        Refusal{"ParallelLoop",
                "def f(a):\n"
                "    s = 0.0\n"
                "    #pragma parallel for\n"
                "    for t in range(3):\n"
                "        tmp = np.empty(a.shape[0])\n"
                "        tmp[0] = a[0]\n"
                "        a[t] = tmp[0] + 1.0\n",
                "f64[::1]", ""}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace plait
