// Type inference, lowering and the pass pipeline, checked on the printed IR
// and on the errors they raise.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

// The softmax of the array-expression tests, written as NumPy code.
constexpr const char* kSoftmax =
    "def softmax(x):\n"
    "    m = np.max(x, axis=-1, keepdims=True)\n"
    "    e = np.exp(x - m)\n"
    "    return e / np.sum(e, axis=-1, keepdims=True)\n";

Globals numpy_globals() {
  Globals g;
  g["np"].module = "numpy";
  g["math"].module = "math";
  g["plait"].module = "plait";
  return g;
}

// The IR of `name` in `source` after the whole pipeline.
ir::Function lower(const std::string& source, const std::string& name, const std::string& signature,
                   CompileOptions options = {}) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, name);
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), numpy_globals(), options);
  options.verify_ir = true;
  run_pipeline(f, options);
  return f;
}

std::string ir_text(const std::string& source, const std::string& name, const std::string& signature,
                    CompileOptions options = {}) {
  return ir::to_string(lower(source, name, signature, options));
}

// The CompileError raised while compiling, or a failure.
CompileError error_of(const std::string& source, const std::string& name, const std::string& signature) {
  try {
    lower(source, name, signature);
  } catch (const CompileError& e) {
    return e;
  }
  ADD_FAILURE() << "no CompileError for:\n" << source;
  return CompileError(ErrorKind::Syntax, "none", SourceFile{}, SourceLoc{});
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Lowering, WeakFloatAccumulatorTakesTheArrayDtype) {
  const char* src =
      "def total(a):\n"
      "    s = 0.0\n"
      "    for i in range(a.shape[0]):\n"
      "        s += a[i]\n"
      "    return s\n";
  ir::Function f = lower(src, "total", "f32[::1]");
  ASSERT_EQ(f.results.size(), 1u);
  EXPECT_EQ(to_string(f.results[0]), "f32");
  ir::Function g = lower(src, "total", "i32[::1]");
  EXPECT_EQ(to_string(g.results[0]), "f64");  // a Python float plus int32 is numpy.float64
}

TEST(Lowering, IntAndFloatUnifyToFloat) {
  const char* src =
      "def f(n):\n"
      "    x = 1\n"
      "    if n > 0:\n"
      "        x = 2.5\n"
      "    return x\n";
  EXPECT_TRUE(contains(ir_text(src, "f", "int"), "let x:float"));
}

TEST(Lowering, DivisionOfPythonNumbersChecksForZero) {
  const char* src = "def f(a, b):\n    return a // b, a / b\n";
  ir::Function f = lower(src, "f", "int, int");
  EXPECT_EQ(to_string(f.results[0]), "int");
  EXPECT_EQ(to_string(f.results[1]), "float");
}

TEST(Passes, ParallelReductionIsDetected) {
  const char* src =
      "def total(a):\n"
      "    s = 0.0\n"
      "    #pragma parallel for\n"
      "    for i in range(a.shape[0]):\n"
      "        s += a[i]\n"
      "    return s\n";
  std::string text = ir_text(src, "total", "f64[::1]");
  EXPECT_TRUE(contains(text, "reduction(+: s)")) << text;
}

TEST(Passes, MaxReductionIsDetected) {
  const char* src =
      "def top(a):\n"
      "    m = -1e300\n"
      "    for i in plait.prange(a.shape[0]):\n"
      "        m = max(m, a[i])\n"
      "    return m\n";
  EXPECT_TRUE(contains(ir_text(src, "top", "f64[::1]"), "reduction(max: m)"));
}

TEST(Passes, LocalsOfAParallelBodyArePrivate) {
  const char* src =
      "def f(a, b):\n"
      "    #pragma parallel for\n"
      "    for i in range(a.shape[0]):\n"
      "        t = a[i] * 2.0\n"
      "        b[i] = t\n";
  std::string text = ir_text(src, "f", "f64[::1], f64[::1]");
  // `t` is declared inside the loop body, after the loop header.
  EXPECT_LT(text.find("parallel for i"), text.find("let t:f64")) << text;
}

TEST(Passes, ScalarRaceIsRefused) {
  const char* src =
      "def f(a):\n"
      "    t = 0.0\n"
      "    #pragma parallel for\n"
      "    for i in range(a.shape[0]):\n"
      "        t = a[i]\n"
      "    return t\n";
  CompileError e = error_of(src, "f", "f64[::1]");
  EXPECT_EQ(e.kind(), ErrorKind::Race);
  EXPECT_EQ(e.loc().line, 5);
  EXPECT_TRUE(contains(e.message(), "'t'")) << e.message();
}

TEST(Passes, BreakInParallelLoopIsRefused) {
  const char* src =
      "def f(a):\n"
      "    #pragma parallel for\n"
      "    for i in range(a.shape[0]):\n"
      "        if a[i] > 0:\n"
      "            break\n";
  CompileError e = error_of(src, "f", "f64[::1]");
  EXPECT_EQ(e.loc().line, 5);
}

TEST(Passes, PerfectlyNestedParallelLoopsCollapse) {
  const char* src =
      "def f(a, b):\n"
      "    M, N = a.shape\n"
      "    #pragma parallel for\n"
      "    for i in range(1, M - 1):\n"
      "        #pragma parallel for\n"
      "        for j in range(1, N - 1):\n"
      "            b[i, j] = a[i - 1, j] + a[i, j + 1]\n";
  std::string text = ir_text(src, "f", "f64[:, ::1], f64[:, ::1]");
  EXPECT_TRUE(contains(text, "collapse(2)")) << text;
  // Indices of loops starting at 1 are provably non-negative: no wrap-around.
  EXPECT_FALSE(contains(text, "< 0")) << text;
}

TEST(Passes, NegativeIndicesWrap) {
  const char* src = "def f(a, i):\n    return a[i] + a[-1]\n";
  std::string text = ir_text(src, "f", "f64[::1], int");
  EXPECT_TRUE(contains(text, "(i < 0:int)")) << text;
  EXPECT_TRUE(contains(text, "a[(a.shape[0] + -1:int)]")) << text;
}

CompileOptions checked() {
  CompileOptions options;
  options.boundscheck = true;
  return options;
}

// With boundscheck, an index the analysis cannot prove in range is checked.
TEST(BoundsChecks, UnprovenAccessesAreChecked) {
  std::string text = ir_text("def f(a):\n    a[0] = a[1]\n", "f", "f64[::1]", checked());
  EXPECT_TRUE(contains(text, "a[0:int; checked] = a[1:int; checked]")) << text;
  EXPECT_FALSE(contains(ir_text("def f(a):\n    a[0] = a[1]\n", "f", "f64[::1]"), "checked"));
}

// Indices from range over the array's own extents, plus and minus constants
// within the halo, are proven: no check and no second version.
TEST(BoundsChecks, IndicesOfRangeOverTheExtentNeedNoCheck) {
  const char* src =
      "def f(a, b):\n"
      "    for i in range(1, a.shape[0] - 1):\n"
      "        for j in range(a.shape[1]):\n"
      "            a[i, j] = a[i - 1, j] + a[i + 1, a.shape[1] - 1 - j]\n"
      "    b[1:-1] = b[2:] + b[:-2]\n";
  std::string text = ir_text(src, "f", "f64[:, ::1], f64[::1]", checked());
  EXPECT_FALSE(contains(text, "checked")) << text;
  EXPECT_FALSE(contains(text, "1099511627776")) << text;
}

// A bound the analysis cannot relate to the extent is tested once, before
// the loop; the loop runs in an unchecked and a checked version.
TEST(BoundsChecks, AffineIndexIsCheckedOnceBeforeTheLoop) {
  const char* src =
      "def f(a, n):\n"
      "    for i in range(n):\n"
      "        a[2 * i + 1] = 0.0\n";
  std::string text = ir_text(src, "f", "f64[::1], int", checked());
  // The lower side is proven; n is trusted within 2^40, so that the bound's
  // arithmetic cannot overflow.
  EXPECT_TRUE(contains(text, "if (((((((n - 1:int) * 2:int) + 1:int) < a.shape[0]) and (n <= 1099511627776:int)) and "
                             "(n >= -1099511627776:int))")) << text;
  EXPECT_TRUE(contains(text, "a[((2:int * i) + 1:int)] = 0.0:float\n")) << text;
  EXPECT_TRUE(contains(text, "a[((2:int * i) + 1:int); checked] = 0.0:float\n")) << text;
}

// An index loaded from an array that the loop does not write is checked
// once: a scan finds the least and greatest element the loop reads.
TEST(BoundsChecks, GatheredIndexIsCheckedOnceByAScan) {
  const char* src =
      "def f(x, idx, out):\n"
      "    for i in range(idx.shape[0]):\n"
      "        out[i] = x[idx[i]]\n";
  std::string text = ir_text(src, "f", "f64[::1], i64[::1], f64[::1]", checked());
  EXPECT_TRUE(contains(text, "_greatest_idx = max(_greatest_idx, cast<int>(idx[_at_idx]))")) << text;
  EXPECT_TRUE(contains(text, "((_least_idx + x.shape[0]) >= 0:int) and (_greatest_idx < x.shape[0])")) << text;
  EXPECT_TRUE(contains(text, "out[i] = x[((idx[i] + x.shape[0]) if (idx[i] < 0:i64) else idx[i])]\n")) << text;
  EXPECT_TRUE(contains(text, "out[i; checked] = x[((idx[i] + x.shape[0]) if (idx[i] < 0:i64) else idx[i]); checked]"))
      << text;
  // `out` may share memory with `idx`: the unchecked loop needs them apart.
  EXPECT_TRUE(contains(text, "(not plait.overlap(idx, out))")) << text;
}

// The rows of a sparse matrix: their ranges come from indptr, whatever the
// row, between its least and greatest element; the column indices from
// indices over those positions. The loops run unchecked after three scans.
TEST(BoundsChecks, SparseRowLoopIsCheckedOncePerCall) {
  const char* src =
      "def f(indptr, indices, data, x, y):\n"
      "    for i in range(indptr.shape[0] - 1):\n"
      "        for p in range(indptr[i], indptr[i + 1]):\n"
      "            y[i] += data[p] * x[indices[p]]\n";
  std::string text = ir_text(src, "f", "i32[::1], u32[::1], f64[::1], f64[::1], f64[::1]", checked());
  // Two versions of the row loop, chosen before it (not in each row): one
  // test at the top level besides the three scans' (each starts from its
  // range's first element when the range is not empty).
  size_t tests = 0;
  for (size_t at = text.find("\n  if ("); at != std::string::npos; at = text.find("\n  if (", at + 1)) ++tests;
  EXPECT_EQ(tests, 4u) << text;
  EXPECT_TRUE(contains(text, "_least_indices = cast<int>(indices[max(_least_indptr, 0:int)])")) << text;
  EXPECT_FALSE(contains(text, "\n      if (")) << text;
  EXPECT_TRUE(contains(text, "simd for _at_indices in range(max(_least_indptr, 0:int)")) << text;
  EXPECT_TRUE(contains(text, "y[i] = (y[i] + (data[((p + data.shape[0]) if (p < 0:int) else p)] * "
                             "x[cast<i64>(indices[((p + indices.shape[0]) if (p < 0:int) else p)])]))\n"))
      << text;
}

// The same through a variable assigned once in the loops: it holds values
// of the load, which the scan covers.
TEST(BoundsChecks, IndexThroughAVariableIsCheckedOncePerCall) {
  const char* src =
      "def f(indptr, indices, data, x, y):\n"
      "    for i in range(indptr.shape[0] - 1):\n"
      "        for p in range(indptr[i], indptr[i + 1]):\n"
      "            k = indices[p]\n"
      "            y[i] += data[p] * x[k]\n";
  std::string text = ir_text(src, "f", "i32[::1], i32[::1], f64[::1], f64[::1], f64[::1]", checked());
  EXPECT_TRUE(contains(text, "simd for _at_indices in range(max(_least_indptr, 0:int)")) << text;
  EXPECT_TRUE(contains(text, "(_greatest_indices < x.shape[0])")) << text;
}

// An index array the loop writes cannot be scanned before it; nor does the
// CUDA target scan (the host would need a launch and a copy): the access is
// checked where it happens.
TEST(BoundsChecks, GatheredIndexIsCheckedAtEachAccessWhereNoScanHolds) {
  const char* written =
      "def f(x, idx, out):\n"
      "    for i in range(idx.shape[0]):\n"
      "        idx[i] = idx[i] + 1\n"
      "        out[i] = x[idx[i]]\n";
  std::string text = ir_text(written, "f", "f64[::1], i64[::1], f64[::1]", checked());
  EXPECT_FALSE(contains(text, "_least_")) << text;
  EXPECT_TRUE(contains(text, "out[i] = x[((idx[i] + x.shape[0]) if (idx[i] < 0:i64) else idx[i]); checked]")) << text;
  CompileOptions cuda = checked();
  cuda.target = Target::CUDA;
  const char* read =
      "def f(x, idx, out):\n"
      "    #pragma parallel for\n"
      "    for i in range(idx.shape[0]):\n"
      "        out[i] = x[idx[i]]\n";
  text = ir_text(read, "f", "f64[::1], i64[::1], f64[::1]", cuda);
  EXPECT_FALSE(contains(text, "_least_")) << text;
  EXPECT_TRUE(contains(text, "out[i] = x[((idx[i] + x.shape[0]) if (idx[i] < 0:i64) else idx[i]); checked]")) << text;
}

// A slice from a loop variable to a parameter: its stop is Python's
// normalised stop (a select on the stop's sign), each of whose values the
// proof bounds under the condition that picks it.
TEST(BoundsChecks, SliceFromTheLoopVariableIsProven) {
  const char* src =
      "def f(M, a):\n"
      "    for i in range(M):\n"
      "        a[i:M] = 1.0\n";
  std::string text = ir_text(src, "f", "int, f64[::1]", checked());
  EXPECT_FALSE(contains(text, "checked")) << text;
  EXPECT_FALSE(contains(text, "1099511627776")) << text;
}

// Indices that combine a row's variable with a slice's, proven from the
// equalities that the statement's own checks establish: the product's
// inner extents (an assert), the broadcast flag of a versioned copy (its
// one value, assigned before it) and the shape of a temporary allocated in
// each version. In trmm only the column index i of A, not related to A's
// extent, is tested, once before the rows.
TEST(BoundsChecks, TriangularSlicesAreProvenFromTheStatementsChecks) {
  const char* trmm =
      "import numpy as np\n"
      "def f(A, B):\n"
      "    for i in range(B.shape[0]):\n"
      "        for j in range(B.shape[1]):\n"
      "            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])\n";
  std::string text = ir_text(trmm, "f", "f64[:, ::1], f64[:, ::1]", checked());
  EXPECT_EQ(text.find("\n  if ("), text.rfind("\n  if (")) << text;
  EXPECT_FALSE(contains(text, "\n    if (")) << text;
  EXPECT_TRUE(contains(text, "if ((((B.shape[0] - 1:int) < A.shape[1])")) << text;
  const char* mirror =
      "import numpy as np\n"
      "def f(M):\n"
      "    c = np.zeros((M, M))\n"
      "    for i in range(M):\n"
      "        c[i:M, i] = c[i, i:M]\n"
      "    return c\n";
  text = ir_text(mirror, "f", "int", checked());
  // The usual version runs unchecked. The broadcasting one reads the
  // temporary's first element, tested in its row: tested before the rows,
  // against the least of the temporaries' extents, it would fail.
  EXPECT_FALSE(contains(text, "\n  if (")) << text;
  const size_t row_test = text.find("\n      if ((");
  ASSERT_NE(row_test, std::string::npos) << text;
  EXPECT_EQ(row_test, text.rfind("\n      if ((")) << text;
  EXPECT_GT(row_test, text.find("if _broadcast4 {")) << text;
  EXPECT_TRUE(contains(text, ", i] = _tmp_array2[_i5]\n")) << text;
}

TEST(Errors, UnknownNameHasACaret) {
  CompileError e = error_of("def f(a):\n    return a[0] + undefined_thing\n", "f", "f64[::1]");
  EXPECT_EQ(e.kind(), ErrorKind::Name);
  EXPECT_EQ(e.loc().line, 2);
  EXPECT_EQ(e.loc().col, 18);
  EXPECT_TRUE(contains(e.what(), "^")) << e.what();
}

// NumPy's in-place product needs a matrix on the right (a fuzzer finding:
// a vector there left the lowering with no array to assign).
TEST(Errors, InPlaceProductWithAVectorOnTheRight) {
  CompileError e = error_of("def f(b, c):\n    b[:] @= c + 1.0\n", "f", "f64[::1], f64[::1]");
  EXPECT_EQ(e.kind(), ErrorKind::Value);
  EXPECT_EQ(e.loc().line, 2);
  EXPECT_TRUE(contains(e.message(), "at least two dimensions")) << e.message();
}

TEST(Errors, ScalarAndArrayInOneLocal) {
  CompileError e = error_of("def f(a):\n    x = 1.0\n    x = a\n", "f", "f64[::1]");
  EXPECT_EQ(e.kind(), ErrorKind::Type);
  EXPECT_TRUE(contains(e.message(), "'x'")) << e.message();
}

TEST(ArrayExprs, SliceAssignmentIsOneLoopNest) {
  const char* src =
      "def f(a, b):\n"
      "    b[1:-1] = 0.5 * (a[2:] + a[:-2])\n";
  std::string text = ir_text(src, "f", "f64[::1], f64[::1]");
  // One vector loop and no temporary array. The two slices of `a` have
  // the same length expression, so the only run-time check compares `b`'s
  // slice with `a`'s. The usual version (a's slice does not broadcast, and
  // the arguments do not share memory) reads `a` at plain indices.
  std::string usual = text.substr(text.rfind("\n  } else {"));
  EXPECT_TRUE(contains(usual, "parallel simd for _i")) << text;
  EXPECT_FALSE(contains(usual, "empty<")) << text;
  EXPECT_EQ(usual.find("assert"), usual.rfind("assert")) << text;
  EXPECT_TRUE(contains(usual, "(0.5:float * (a[(2:int + _i1)] + a[_i1]))")) << text;
}

TEST(ArrayExprs, RowReductionIsHoistedOutOfTheColumnLoop) {
  const char* src =
      "def f(A):\n"
      "    return A / A.sum(axis=1, keepdims=True)\n";
  std::string text = ir_text(src, "f", "f64[:, ::1]");
  // The row sum is computed in the row loop, before the column loop.
  size_t row = text.find("parallel for _i");
  size_t sum = text.find("reduction(+:");
  size_t col = text.find("simd for _i", row + 1);
  ASSERT_NE(sum, std::string::npos) << text;
  EXPECT_LT(row, sum) << text;
  EXPECT_LT(sum, col) << text;
}

TEST(ArrayExprs, OverlappingAssignmentGoesThroughATemporary) {
  std::string text = ir_text("def f(b):\n    b[1:] = b[:-1]\n", "f", "f64[::1]");
  EXPECT_TRUE(contains(text, "empty<f64[::1]>")) << text;
  std::string in_place = ir_text("def f(b):\n    b[:] = b[:] * 2.0\n", "f", "f64[::1]");
  EXPECT_FALSE(contains(in_place, "empty<")) << in_place;
}

TEST(ArrayExprs, ArgumentsThatMayShareMemoryVersionTheStatement) {
  // b and a may be views of one array: a run-time test of their memory picks
  // the copy through a temporary or the plain nest. Reads at the written
  // elements (`a`, against `b[:]`) are safe when the two are one view.
  std::string text = ir_text("def f(b, a):\n    b[:] = a + 1.0\n", "f", "f64[::1], f64[::1]");
  EXPECT_TRUE(contains(text, "_overlap2 = plait.overlap_unless_same_view(b, a)")) << text;
  EXPECT_TRUE(contains(text, "if _overlap2 {\n      let _tmp_array3:f64[::1]\n      _tmp_array3 = empty<")) << text;
  std::string usual = text.substr(text.rfind("\n  } else {"));
  EXPECT_FALSE(contains(usual, "empty<")) << text;
  EXPECT_TRUE(contains(usual, "b[_i1] = (a[_i1] + 1.0:float)")) << text;
  // Shifted and transposed reads need the copy even from one view.
  std::string shifted = ir_text("def f(b, a):\n    b[1:] = a[:-1]\n", "f", "f64[::1], f64[::1]");
  EXPECT_TRUE(contains(shifted, "= plait.overlap(b, a)")) << shifted;
  std::string transposed = ir_text("def f(b, a):\n    b[:] = a.T\n", "f", "f64[:, ::1], f64[:, ::1]");
  EXPECT_TRUE(contains(transposed, "= plait.overlap(b, a)")) << transposed;
  // A local array bound to an argument is tested too; a fresh one is not.
  std::string bound = ir_text("def f(b, a):\n    c = a\n    b[:] = c + 1.0\n", "f", "f64[::1], f64[::1]");
  EXPECT_TRUE(contains(bound, "plait.overlap_unless_same_view(b, c)")) << bound;
  std::string fresh = ir_text("def f(b, n):\n    c = np.ones(n)\n    b[:] = c + 1.0\n", "f", "f64[::1], int");
  EXPECT_FALSE(contains(fresh, "overlap")) << fresh;
  // The same name is the same-name rule's case, not a run-time test.
  std::string same = ir_text("def f(b):\n    b[1:] = b[:-1]\n", "f", "f64[::1]");
  EXPECT_FALSE(contains(same, "overlap")) << same;
}

TEST(Fusion, ATimeLoopIsVersionedOnceOnItsOverlapTests) {
  // The tests are made once, before the loop; the usual loop holds the plain
  // nests only (one parallel region on the CPU, one persistent kernel on the
  // GPU), the other keeps the versions of each statement.
  const char* src =
      "def f(T, A, B):\n"
      "    for t in range(T):\n"
      "        B[1:-1] = A[:-2] + A[2:]\n"
      "        A[1:-1] = B[:-2] + B[2:]\n";
  std::string text = ir_text(src, "f", "int, f64[::1], f64[::1]");
  size_t test = text.find("plait.overlap(B, A)");
  size_t loop = text.find("for t in range");
  ASSERT_NE(test, std::string::npos) << text;
  EXPECT_LT(test, loop) << text;
  std::string usual = text.substr(text.rfind("\n  } else {"));
  EXPECT_TRUE(contains(usual, "for t in range")) << text;
  EXPECT_FALSE(contains(usual, "empty<")) << text;
  EXPECT_FALSE(contains(usual, "_overlap")) << text;
  EXPECT_FALSE(contains(usual, "_broadcast")) << text;
}

TEST(Errors, SlicedPragmaNamesAMissingDimension) {
  const char* src =
      "def f(a, b):\n"
      "    #pragma :M=>parallel\n"
      "    b[:] = a[:] + 1.0\n";
  CompileError e = error_of(src, "f", "f64[::1], f64[::1]");
  EXPECT_EQ(e.kind(), ErrorKind::Pragma);
  EXPECT_TRUE(contains(e.message(), ":M")) << e.message();
}

TEST(Errors, LoopPragmaAboveAnAssignment) {
  CompileError e = error_of("def f(a):\n    #pragma parallel for\n    a[0] = 1.0\n", "f", "f64[::1]");
  EXPECT_EQ(e.kind(), ErrorKind::Pragma);
  EXPECT_EQ(e.loc().line, 2);
}

TEST(Errors, UnknownPragmaWord) {
  CompileError e = error_of(
      "def f(a):\n    #pragma paralel for\n    for i in range(3):\n        a[i] = 1.0\n", "f", "f64[::1]");
  EXPECT_EQ(e.kind(), ErrorKind::Pragma);
  EXPECT_TRUE(contains(e.message(), "paralel")) << e.message();
}

TEST(Errors, AtomicNeedsAnElementUpdate) {
  CompileError e = error_of("def f(a, s):\n    #pragma atomic\n    s += 1\n", "f", "f64[::1], int");
  EXPECT_EQ(e.kind(), ErrorKind::Pragma);
}

TEST(Errors, ReductionClauseMustMatch) {
  const char* src =
      "def f(a):\n"
      "    s = 1.0\n"
      "    #pragma parallel for reduction(*: s)\n"
      "    for i in range(a.shape[0]):\n"
      "        s += a[i]\n"
      "    return s\n";
  CompileError e = error_of(src, "f", "f64[::1]");
  EXPECT_EQ(e.kind(), ErrorKind::Race);
}

}  // namespace
}  // namespace plait

namespace plait {
namespace {

TEST(Passes, AtomicHistogramUsesPerThreadCopies) {
  const char* src =
      "def hist(x, h):\n"
      "    #pragma parallel for\n"
      "    for i in range(x.shape[0]):\n"
      "        #pragma atomic\n"
      "        h[x[i]] += 1\n";
  std::string text = ir_text(src, "hist", "i64[::1], i64[::1]");
  // Both forms: the privatised loop for small arrays, the atomic one else.
  EXPECT_TRUE(contains(text, "reduction(+: h[:])")) << text;
  EXPECT_TRUE(contains(text, "atomic h[")) << text;
  // A strided array cannot be privatised as one block.
  EXPECT_FALSE(contains(ir_text(src, "hist", "i64[::1], i64[:]"), "reduction(+: h[:])"));
}

}  // namespace
}  // namespace plait

namespace plait {
namespace {

// Allocations at the top level of the function (outside every loop).
int top_level_allocations(const ir::Function& f) {
  int n = 0;
  for (const auto& s : f.body->as<ir::Block>()->stmts) n += s->as<ir::Allocate>() != nullptr;
  return n;
}

TEST(Fusion, SoftmaxIsOnePassPerRowAndAllocatesOnlyItsOutput) {
  const char* src = kSoftmax;
  ir::Function f = lower(src, "softmax", "f32[:, ::1]");
  std::string text = ir::to_string(f);
  // One allocation of rows x columns (the result); e and m live one row at a
  // time inside the single row loop.
  EXPECT_EQ(top_level_allocations(f), 1) << text;
  size_t first = text.find("parallel for");
  EXPECT_EQ(first, text.rfind("parallel for")) << text;
  EXPECT_TRUE(contains(text, "e = _tmp_array")) << text;
  EXPECT_LT(first, text.find("let e:f32[::1]")) << text;
}

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(Fusion, SoftmaxReadsEachRowInThreeVectorPasses) {
  const char* src = kSoftmax;
  std::string text = ir_text(src, "softmax", "f32[:, ::1]");
  // Per row: the maximum (vector, with a NaN count), exp and sum in one
  // vector loop, the division; the ordered maximum runs only after a NaN.
  EXPECT_EQ(count_of(text, "simd for"), 3) << text;
  size_t max_loop = text.find("simd for");
  EXPECT_TRUE(contains(text.substr(max_loop, text.find('\n', max_loop) - max_loop), "reduction(max: ")) << text;
  size_t exp_loop = text.find("simd for", max_loop + 1);
  size_t exp_end = text.find("simd for", exp_loop + 1);
  std::string fused = text.substr(exp_loop, exp_end - exp_loop);
  EXPECT_TRUE(contains(fused, "reduction(+: ")) << text;
  EXPECT_TRUE(contains(fused, "np.exp(")) << text;
  size_t ordered = text.find("if (");
  ASSERT_NE(ordered, std::string::npos) << text;
  EXPECT_LT(max_loop, ordered) << text;
  EXPECT_LT(ordered, exp_loop) << text;
  EXPECT_TRUE(contains(text.substr(ordered, exp_loop - ordered), "maximum(_tmp")) << text;
}

TEST(Reductions, FloatMaxAndMinVectoriseWithAnOrderedLoopForNaNs) {
  const char* src =
      "def f(x):\n"
      "    return np.max(x), x.min(axis=1)\n";
  std::string text = ir_text(src, "f", "f64[:, ::1]");
  // The whole-array maximum: a parallel loop around a vector loop of max()
  // (NaN loses, as in vmaxps) and a count of NaNs; maximum() (NaN wins) in
  // order after.
  EXPECT_TRUE(contains(text, "parallel for _r")) << text;
  // Per vector loop, the maximum or minimum and the NaN count.
  EXPECT_EQ(count_of(text, "reduction(max: _tmp"), 5) << text;
  EXPECT_EQ(count_of(text, "reduction(min: _tmp"), 1) << text;
  EXPECT_EQ(count_of(text, "cast<i32>(np.isnan("), 2) << text;
  EXPECT_TRUE(contains(text, " = max(_tmp")) << text;
  EXPECT_TRUE(contains(text, " = min(_tmp")) << text;
  EXPECT_TRUE(contains(text, " = maximum(_tmp")) << text;
  EXPECT_TRUE(contains(text, " = minimum(_tmp")) << text;
  EXPECT_EQ(count_of(text, " != 0:i32) {"), 2) << text;
  // The CUDA back end combines partial maxima with maximum() (NaN wins):
  // the reductions run in parallel with no NaN count and no ordered loop.
  CompileOptions cuda;
  cuda.target = Target::CUDA;
  std::string on_gpu = ir_text(src, "f", "f64[:, ::1]", cuda);
  EXPECT_FALSE(contains(on_gpu, "np.isnan")) << on_gpu;
  EXPECT_FALSE(contains(on_gpu, " = max(_tmp")) << on_gpu;
  EXPECT_TRUE(contains(on_gpu, "parallel for _r")) << on_gpu;
  EXPECT_EQ(count_of(on_gpu, "reduction(max: _tmp"), 2) << on_gpu;
  EXPECT_EQ(count_of(on_gpu, "reduction(min: _tmp"), 1) << on_gpu;
}

TEST(PerThreadTemporaries, SoftmaxAllocatesItsRowBufferOncePerThread) {
  const char* src = kSoftmax;
  ir::Function f = lower(src, "softmax", "f32[:, ::1]");
  std::string cpp = generate_source(f, CompileOptions{});
  // The result, then the row buffer inside the team but before the rows are
  // shared out.
  EXPECT_EQ(count_of(cpp, "plait::allocate_array<float>("), 2) << cpp;
  size_t team = cpp.find("#pragma omp parallel num_threads(");
  size_t row = cpp.rfind("plait::allocate_array<float>(");
  size_t rows = cpp.find("#pragma omp for schedule(static)");
  ASSERT_NE(team, std::string::npos) << cpp;
  ASSERT_NE(rows, std::string::npos) << cpp;
  EXPECT_LT(team, row) << cpp;
  EXPECT_LT(row, rows) << cpp;
  EXPECT_FALSE(contains(cpp, "#pragma omp parallel for")) << cpp;
}

TEST(PerThreadTemporaries, StayPerIterationWhenTheyMust) {
  // Extents that change with the iteration, and arrays filled with zeros,
  // are allocated in the iteration.
  const char* src =
      "def f(x, out):\n"
      "    #pragma parallel for\n"
      "    for i in range(x.shape[0]):\n"
      "        a = np.empty(i + 1)\n"
      "        b = np.zeros(x.shape[0])\n"
      "        a[:] = x[i]\n"
      "        b[:] = x[i]\n"
      "        out[i] = a.sum() + b.sum()\n";
  ir::Function f = lower(src, "f", "f64[::1], f64[::1]");
  std::string cpp = generate_source(f, CompileOptions{});
  EXPECT_TRUE(contains(cpp, "#pragma omp parallel for")) << cpp;
  EXPECT_FALSE(contains(cpp, "#pragma omp for")) << cpp;
}

TEST(Fusion, LocalMaskBecomesAScalarOfOnePassWithBothSums) {
  const char* src =
      "def f(data, radius, npt):\n"
      "    res = np.zeros(npt)\n"
      "    #pragma parallel for\n"
      "    for i in range(npt):\n"
      "        in_bin = (i <= radius) & (radius < i + 1)\n"
      "        res[i] = np.sum(np.where(in_bin, data, 0.0)) / np.sum(np.where(in_bin, 1.0, 0.0))\n"
      "    return res\n";
  std::string text = ir_text(src, "f", "f64[::1], f64[::1], int");
  // In the usual version (data and radius of one extent), no allocation in
  // the bin loop; one vector loop computes the mask and both sums.
  text = text.substr(text.find("} else {"));
  EXPECT_FALSE(contains(text, "empty<b1")) << text;
  EXPECT_TRUE(contains(text, "reduction(+: _tmp")) << text;
  size_t vector_loop = text.find("simd for");
  EXPECT_NE(vector_loop, std::string::npos) << text;
  EXPECT_EQ(vector_loop, text.rfind("simd for")) << text;
  EXPECT_TRUE(contains(text, "let in_bin:b1\n        in_bin = ")) << text;
}

TEST(Fusion, Softmax4DFusesEveryLeadingDimension) {
  const char* src = kSoftmax;
  ir::Function f = lower(src, "softmax", "f32[:, :, :, ::1]");
  std::string text = ir::to_string(f);
  // One nest over the three leading dimensions; e is one row, m a scalar.
  EXPECT_EQ(top_level_allocations(f), 1) << text;
  EXPECT_EQ(text.find("parallel for"), text.rfind("parallel for")) << text;
  EXPECT_TRUE(contains(text, " = empty<f32[::1]>((x.shape[3],))")) << text;
  EXPECT_TRUE(contains(text, "let m:f32\n")) << text;
  EXPECT_EQ(text.find("empty<f32[:, "), text.rfind("empty<f32[:, ")) << text;
}

TEST(Fusion, OnTheGpuEveryRowOfA4DSoftmaxIsAWorker) {
  const char* src = kSoftmax;
  CompileOptions cuda;
  cuda.target = Target::CUDA;
  std::string text = ir_text(src, "softmax", "f32[:, :, :, ::1]", cuda);
  // The three leading dimensions collapse into one grid of row workers,
  // each allocating its own row of e inside the innermost of them; the
  // statements still fuse.
  EXPECT_EQ(count_of(text, "parallel for"), 1) << text;
  EXPECT_EQ(count_of(text, "collapse(3) plan(kernel: "), 1) << text;
  EXPECT_EQ(count_of(text, "empty<f32[::1]>((x.shape[3],))"), 1) << text;
  EXPECT_TRUE(contains(text, "x.shape[2], 1:int) {\n        let ")) << text;
}

// The private scalars of the collapsed loops, listed once each.
std::vector<std::string> collapsed_privates(const std::string& text) {
  size_t at = text.find(") private(");
  if (at == std::string::npos) return {};
  at += std::string(") private(").size();
  std::vector<std::string> names;
  std::string name;
  for (size_t i = at; i < text.size() && text[i] != ')'; ++i) {
    if (text[i] == ',' || text[i] == ' ') {
      if (!name.empty()) names.push_back(name);
      name.clear();
    } else {
      name += text[i];
    }
  }
  if (!name.empty()) names.push_back(name);
  return names;
}

TEST(Fusion, OnTheGpuAMatrixProductIsOneWorkerPerElement) {
  CompileOptions cuda;
  cuda.target = Target::CUDA;
  // gemm: the scalars of the product are declared before the versions of
  // the statement (its broadcast flags), so both loops list them private.
  const char* src = "def gemm(alpha, beta, C, A, B):\n    C[:] = alpha * A @ B + beta * C\n";
  const char* sig = "float, float, f64[:, ::1], f64[:, ::1], f64[:, ::1]";
  std::string text = ir_text(src, "gemm", sig, cuda);
  // Rows and columns collapse; the privates of both loops are listed once.
  EXPECT_GE(count_of(text, "collapse(2) plan(kernel: "), 1) << text;
  // (In the usual version: C does not share memory with A or B.)
  std::vector<std::string> names = collapsed_privates(text.substr(text.rfind("\n  } else {")));
  EXPECT_EQ(names.size(), 3u) << text;
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << text;
  // The CPU keeps the rows parallel and interchanges the reduction.
  std::string cpu = ir_text(src, "gemm", sig);
  EXPECT_FALSE(contains(cpu, "collapse(")) << cpu;
}

TEST(Fusion, BroadcastFlagsVersionTheStatementsAndVanishWhenExtentsAgree) {
  // a and b may differ, and either may be 1 at run time: one version per
  // case, the usual one with plain indices.
  std::string text = ir_text("def f(a, b):\n    return a + b\n", "f", "f64[::1], f64[::1]");
  EXPECT_TRUE(contains(text, "if (_broadcast")) << text;
  EXPECT_TRUE(contains(text, "(a[(0:int if _broadcast")) << text;
  EXPECT_TRUE(contains(text.substr(text.find("} else {")), "(a[_i5] + b[_i5])")) << text;
  // `x * 2` and `x` have one shape, known once extents are canonical: no flag.
  std::string same = ir_text("def f(x):\n    t = x * 2.0\n    return t + x\n", "f", "f64[::1]");
  EXPECT_FALSE(contains(same, "_broadcast")) << same;
  EXPECT_FALSE(contains(same, "if ")) << same;
}

TEST(Fusion, StencilSweepsAreNotFused) {
  // The second sweep reads neighbours of what the first writes: fusing the
  // row loops would read rows not yet computed.
  const char* src =
      "def f(A, B):\n"
      "    B[1:-1, 1:-1] = A[1:-1, 1:-1] + A[:-2, 1:-1] + A[2:, 1:-1]\n"
      "    A[1:-1, 1:-1] = B[1:-1, 1:-1] + B[:-2, 1:-1] + B[2:, 1:-1]\n";
  std::string text = ir_text(src, "f", "f64[:, ::1], f64[:, ::1]");
  size_t first = text.find("parallel for");
  EXPECT_NE(first, text.rfind("parallel for")) << text;
}

TEST(ArrayExprs, FloydWarshallSnapshotsTheRowAndTheColumnOnly) {
  const char* src =
      "def f(path):\n"
      "    for k in range(path.shape[0]):\n"
      "        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])\n";
  std::string text = ir_text(src, "f", "i32[:, ::1]");
  // Column k and row k are copied (N elements each) before the nest, which
  // reads the copies; no N x N temporary.
  EXPECT_TRUE(contains(text, "empty<i32[::1]>((path.shape[0],))")) << text;
  EXPECT_TRUE(contains(text, "empty<i32[::1]>((path.shape[1],))")) << text;
  EXPECT_FALSE(contains(text, "empty<i32[:, ::1]>")) << text;
  EXPECT_TRUE(contains(text, "path[_i4, _i5] = minimum(path[_i4, _i5], (_tmp_array0[_i4] + _tmp_array2[_i5]))")) << text;
}

// Each operand of a chain of broadcasting operands nests the extent before
// it twice; a large extent is computed once into a local, so that the IR
// grows with the chain's length, not 2^length (a fuzzer finding: a 3-D
// stencil with one mismatched slice took minutes to compile).
TEST(ArrayExprs, ChainOfBroadcastingOperandsStaysSmall) {
  std::string src = "def f(out";
  std::string sum, signature = "f64[::1]";
  for (int i = 0; i < 16; ++i) {
    src += ", a" + std::to_string(i);
    sum += (i ? " + a" : "a") + std::to_string(i);
    signature += ", f64[::1]";
  }
  src += "):\n    out[:] = " + sum + "\n";
  std::string text = ir_text(src, "f", signature);
  EXPECT_TRUE(contains(text, "_extent")) << text.substr(0, 4000);
  EXPECT_LT(text.size(), 400000u);
}

// Statements whose slices disagree version a time loop on broadcast flags,
// and each version is versioned again: the depth is bounded, so that the
// code stays linear in the statements (a fuzzer finding: a mutated heat_3d
// made 3 MB of CUDA, 650 KB of IR after the bound).
TEST(ArrayExprs, VersionsOfVersionsAreBounded) {
  const char* src =
      "def f(T, A, B):\n"
      "    for t in range(1, T):\n"
      "        B[1:-1, 1:-1, 1:-1] = (\n"
      "            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 0:-1, 1:-1])\n"
      "            + 0.125 * (A[0:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])\n"
      "            + 0.125 * (A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])\n"
      "            + 0.125 * (A[0:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])\n"
      "            + 0.125 * (A[1:-1, 1:-1, 22])\n"
      "            + A[1:-1, 1:-1, 1:-1])\n"
      "        A[1:-1, 0:-1, 1:-1] = (\n"
      "            0.125 * (B[2:, 1:-1, 1:-0] - 2.0 * B[1:-1, 1:-0, 1:-1] + B[:-2, 1:-1, 1:-1])\n"
      "            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:- 1:-1, 22])\n"
      "            + A[1:-1, 1:-1, 1:-1])\n"
      "        A[1:-1, 0:-1, 1:-1] = (\n"
      "            0.125 * (B[2:, 1:-1, 1:-0] - 2.0 * B[1:-1, 1:-0, 1:-1] + B[:-2, 1:-1, 1:-1])\n"
      "            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])\n"
      "            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 12-1, :-2])\n"
      "            + B[1:-1, 1:-1, 1:-1])\n";
  CompileOptions cuda;
  cuda.target = Target::CUDA;
  std::string text = ir_text(src, "f", "int, f64[:, :, ::1], f64[:, :, ::1]", cuda);
  EXPECT_LT(text.size(), 1000000u);
}

TEST(ArrayExprs, ElementOperandOfTheTargetIsReadBeforeTheNest) {
  std::string text = ir_text("def f(a):\n    a[:] = a - a[0]\n", "f", "f64[::1]");
  EXPECT_TRUE(contains(text, "_tmp0 = a[0:int]\n  parallel simd for")) << text;
  EXPECT_TRUE(contains(text, "a[_i1] = (a[_i1] - _tmp0)")) << text;
}

}  // namespace
}  // namespace plait
