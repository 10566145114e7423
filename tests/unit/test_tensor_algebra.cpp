// The tensor-algebra level (src/tensor/) through the front end: sparse
// signatures, the index notation of each operator, the fusion decisions and
// operation counts of the three fusion modes, and what it refuses.
#include <gtest/gtest.h>

#include <string>

#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"
#include "tensor/cost.h"

namespace plait {
namespace {

Globals plait_globals() {
  Globals g;
  g["np"].module = "numpy";
  g["plait"].module = "plait";
  return g;
}

// `source`'s function f, through the CPU pipeline, bounds checked.
ir::Function lowered(const std::string& source, const std::string& signature, Fusion fusion = Fusion::Partial) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, "f");
  CompileOptions options;
  options.fusion = fusion;
  options.boundscheck = true;
  options.verify_ir = true;
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), plait_globals(), options);
  run_pipeline(f, options);
  return f;
}

// The tensor-algebra remarks of lowering `source` for `signature`, one per line.
std::string remarks_of(const std::string& source, const std::string& signature, Fusion fusion = Fusion::Partial) {
  const ir::Function f = lowered(source, signature, fusion);
  std::string out;
  for (const ir::Remark& r : f.remarks)
    if (r.pass == "tensor algebra") out += r.message + "\n";
  return out;
}

std::string error_of(const std::string& source, const std::string& signature) {
  try {
    remarks_of(source, signature);
  } catch (const CompileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no CompileError for:\n" << source;
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* const kSddmm = "def f(S, B, C):\n    return S.multiply(B @ C)\n";
const char* const kSddmmSignature = "csr[f64, i32], f64[:, ::1], f64[:, ::1]";

TEST(SparseSignature, SpellsAndExpandsCsr) {
  Signature s = Signature::parse("csr[f64, i32], csr_matrix[f32, i64], f64[::1]");
  EXPECT_EQ(s.to_string(), "csr[f64, i32], csr_matrix[f32, i64], f64[::1]");
  EXPECT_EQ(s.abi().to_string(), "f64[::1], i32[::1], i32[::1], int, f32[::1], i64[::1], i64[::1], int, f64[::1]");
  EXPECT_THROW(Signature::parse("csr[f64]"), std::invalid_argument);
  EXPECT_THROW(Signature::parse("csr[f64, f32]"), std::invalid_argument);
}

TEST(TensorAlgebra, SddmmComputesOnlyAtTheStoredEntries) {
  std::string text = remarks_of(kSddmm, kSddmmSignature);
  EXPECT_TRUE(contains(text, "dead-value redundancy")) << text;
  EXPECT_TRUE(contains(text, "= S(i,j) * sum_k((B(i,k) * C(k,j)))    [loops i, j (stored in S)]")) << text;
  EXPECT_TRUE(contains(text, "operations 2*B.shape[1]*S.nnz + S.nnz")) << text;
}

// plait.sparse.mask of a product samples it: the mask's statement runs over
// the stored entries, so the product is computed there only; a softmax's row
// sums (one per row) are not inlined into its entries.
TEST(TensorAlgebra, MaskOfAProductComputesOnlyAtTheStoredEntries) {
  const char* source =
      "import plait\n"
      "def f(P, q, k, v):\n"
      "    s = plait.sparse.mask(P, q @ k.T)\n"
      "    return plait.sparse.softmax(s, axis=1) @ v\n";
  std::string text = remarks_of(source, "csr[f64, i32], f64[:, ::1], f64[:, ::1], f64[:, ::1]");
  EXPECT_TRUE(contains(text, "dead-value redundancy (computed only at the stored entries)")) << text;
  EXPECT_TRUE(contains(text, " = sum_k((q(i,k) * ")) << text;
  EXPECT_FALSE(contains(text, "/ sum_")) << text;
  EXPECT_FALSE(contains(text, "q.shape[0]*q.shape[1]*k.shape[0]")) << text;
  EXPECT_FALSE(contains(text, "nnz*P.nnz")) << text;
}

TEST(TensorAlgebra, SddmmReadsARowMajorOperandFromItsTranspose) {
  const std::string copied =
      "C is read down its columns (at each stored entry of S): read from a transposed copy "
      "when S.nnz >= C.shape[1]";
  EXPECT_TRUE(contains(remarks_of(kSddmm, kSddmmSignature), copied));
  EXPECT_TRUE(contains(remarks_of(kSddmm, "csr[f32, i32], f32[:, ::1], f32[:, :]"), copied));
  // Column-major C (C = Y.T): its columns are contiguous already.
  std::string f_order = remarks_of(kSddmm, "csr[f32, i32], f32[:, ::1], f32[::1, :]");
  EXPECT_FALSE(contains(f_order, "transposed copy")) << f_order;
  // SpMM reads X(k, j) along its rows: nothing to copy.
  std::string spmm = remarks_of("def f(A, X):\n    return A @ X\n", "csr[f32, i32], f32[:, ::1]");
  EXPECT_FALSE(contains(spmm, "transposed copy")) << spmm;
}

TEST(TensorAlgebra, MaximalFusionMultipliesInsideTheSum) {
  std::string text = remarks_of(kSddmm, kSddmmSignature, Fusion::Maximal);
  EXPECT_TRUE(contains(text, "= sum_k((S(i,j) * (B(i,k) * C(k,j))))")) << text;
  EXPECT_TRUE(contains(text, "operations 3*B.shape[1]*S.nnz")) << text;
}

TEST(TensorAlgebra, NoFusionFormsTheWholeProduct) {
  std::string text = remarks_of(kSddmm, kSddmmSignature, Fusion::None);
  EXPECT_FALSE(contains(text, "dead-value")) << text;
  EXPECT_TRUE(contains(text, "operations 2*B.shape[0]*B.shape[1]*C.shape[1] + S.nnz")) << text;
}

TEST(TensorAlgebra, SpmmMmKeepsTheIntermediateRowOnly) {
  const char* source = "def f(A, X, W):\n    return A @ X @ W\n";
  const char* signature = "csr[f32, i64], f32[:, ::1], f32[:, ::1]";
  std::string text = remarks_of(source, signature);
  EXPECT_TRUE(contains(text, "share the loops over i")) << text;
  EXPECT_TRUE(contains(text, "kept as (j) per iteration of the shared loops")) << text;
  // Both associations, each with its count; the cheaper runs.
  EXPECT_TRUE(contains(text, "association 1: operations 2*A.shape[0]*W.shape[1]*X.shape[1] + 2*A.nnz*X.shape[1]"))
      << text;
  EXPECT_TRUE(contains(text, "association 2: operations 2*W.shape[1]*X.shape[0]*X.shape[1] + 2*A.nnz*W.shape[1]"))
      << text;
  std::string maximal = remarks_of(source, signature, Fusion::Maximal);
  EXPECT_TRUE(contains(maximal, "operations 3*A.nnz*W.shape[1]*X.shape[1]")) << maximal;
  EXPECT_FALSE(contains(maximal, "association")) << maximal;
}

TEST(TensorAlgebra, SoftmaxSharesTheRowLoop) {
  std::string text = remarks_of("def f(S):\n    return plait.sparse.softmax(S, axis=1)\n", "csr[f64, i32]");
  EXPECT_TRUE(contains(text, "= max_j(S(i,j))")) << text;
  EXPECT_TRUE(contains(text, "share the loops over i")) << text;
  EXPECT_TRUE(contains(text, "kept as a scalar per iteration of the shared loops")) << text;
}

TEST(TensorAlgebra, TwoPatternsMergeIntoAPatternOfTheirOwn) {
  const char* const two = "csr[f64, i32], csr[f32, i64]";
  std::string sum = remarks_of("def f(S, T):\n    return S + T\n", two);
  EXPECT_TRUE(contains(sum, "t6(i,j) = S(i,j) + f64(T(i,j))    [loops i, j (stored in S or T, merged)]")) << sum;
  EXPECT_TRUE(contains(sum, "t6 has a pattern of its own")) << sum;
  // Two passes over both operands' entries: the value and its comparison with zero.
  EXPECT_TRUE(contains(sum, "operations 4*S.nnz + 4*T.nnz")) << sum;
  std::string product = remarks_of("def f(S, T):\n    return S.multiply(T)\n", two);
  EXPECT_TRUE(contains(product, "[loops i, j (stored in S and T, merged)]")) << product;
  std::string relu = remarks_of("def f(S):\n    return S.maximum(0)\n", "csr[f64, i32]");
  EXPECT_TRUE(contains(relu, "[loops i, j (stored in S, merged)]")) << relu;
  // A merged result is stored before a product reads it: two nests, not fused.
  std::string chain =
      remarks_of("def f(S, T, X):\n    return (S + T) @ X\n", "csr[f64, i32], csr[f64, i32], f64[:, ::1]");
  EXPECT_TRUE(contains(chain, "k (stored in t")) << chain;
  EXPECT_FALSE(contains(chain, "fused:")) << chain;
}

TEST(TensorAlgebra, SparseProductMergesTheRightOperandsRows) {
  std::string product = remarks_of("def f(S, T):\n    return S @ T\n", "csr[f64, i32], csr[f32, i64]");
  EXPECT_TRUE(
      contains(product, "t8(i,j) = sum_k((S(i,k) * f64(T(k,j))))    [loops i, k (stored in S), j (stored in T)]"))
      << product;
  EXPECT_TRUE(contains(product, "each row merges the rows of T at the columns S stores in it, in two passes"))
      << product;
  // Two passes over each product of an entry of S and one of T's row there.
  EXPECT_TRUE(contains(product, "operations 4*S.nnz*T.nnz/T.shape[0]")) << product;
  // The same matrix on both sides; a product's result read by the next one.
  EXPECT_TRUE(contains(remarks_of("def f(S):\n    return S @ S\n", "csr[f64, i32]"),
                       "[loops i, k (stored in S), j (stored in S)]"));
  // A transpose is read from a CSR copy: its mean row length is its entries over its rows.
  std::string gram = remarks_of("def f(S):\n    return S @ S.T\n", "csr[f64, i32]");
  EXPECT_TRUE(contains(gram, "[loops i, k (stored in S), j (stored in S.T)]")) << gram;
  EXPECT_TRUE(contains(gram, "S.T is read as CSC (a transpose): its rows are copied into CSR first")) << gram;
  EXPECT_TRUE(contains(gram, "operations 4*S.nnz*S.nnz/S.shape[1]")) << gram;
  std::string chain =
      remarks_of("def f(S, T, X):\n    return S @ T @ X\n", "csr[f64, i32], csr[f64, i32], f64[:, ::1]");
  EXPECT_TRUE(contains(chain, "k (stored in t")) << chain;
}

// A sum over a row's stored entries runs in SIMD lanes on the CPU only for
// rows of 32 entries or more; shorter rows take a loop of their own, as
// unchecked as the first (its own variables, which the range analysis follows).
TEST(TensorAlgebra, ShortRowsSumInASerialLoop) {
  const std::string text = ir::to_string(lowered("def f(A, x):\n    return A @ x\n", "csr[f32, i32], f32[::1]"));
  const size_t split = text.find(") >= 32:int) {");
  ASSERT_NE(split, std::string::npos) << text;
  const std::string rows = text.substr(split, text.find("_t8_3[", split) - split);
  EXPECT_TRUE(contains(rows, "simd for __pk_")) << rows;
  EXPECT_TRUE(contains(rows, "} else {\n")) << rows;
  EXPECT_FALSE(contains(rows, "checked]")) << rows;
}

TEST(TensorAlgebra, Refusals) {
  EXPECT_TRUE(contains(error_of("def f(S):\n    return S / S\n", "csr[f64, i32]"), "dense result"));
  EXPECT_TRUE(contains(error_of("def f(S, T):\n    return S @ T\n", "csr[b1, i32], csr[f64, i32]"), "bool"));
  EXPECT_TRUE(contains(error_of("def f(S, T):\n    return S.T + T\n", "csr[f64, i32], csr[f64, i32]"), "CSR"));
  EXPECT_TRUE(contains(error_of("def f(S):\n    return S.maximum(1)\n", "csr[f64, i32]"), "<= 0"));
  EXPECT_TRUE(contains(error_of("def f(S):\n    return S + 1\n", "csr[f64, i32]"), "only the number 0"));
  EXPECT_TRUE(contains(error_of("def f(S):\n    return S.sum(axis=1)\n", "csr_matrix[f64, i32]"), "numpy.matrix"));
  std::string loop =
      error_of("def f(S):\n    for i in range(2):\n        T = S * 2.0\n    return T\n", "csr[f64, i32]");
  EXPECT_TRUE(contains(loop, "top level")) << loop;
}

TEST(TensorCost, SumsOfProductsOfSymbols) {
  using tensor::Cost;
  ir::Expr one = ir::IntImm::make(1);
  Cost rows = Cost::symbol("S.shape[0]", one);
  Cost nnz = Cost::symbol("S.nnz", one);
  Cost k = Cost::symbol("B.shape[1]", one);
  // The stored entries of a row times the rows: the stored entries.
  EXPECT_EQ((rows * nnz.per("S.shape[0]", one) * (Cost::constant(2) * k + Cost::constant(1))).to_string(),
            "2*B.shape[1]*S.nnz + S.nnz");
  EXPECT_EQ((Cost::constant(0) + Cost::constant(0)).to_string(), "0");
}

}  // namespace
}  // namespace plait
