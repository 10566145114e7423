// What the BLAS entries hand a column-major library (jit/blas_layout.h),
// shared by the CPU's BLAS and cuBLAS: layouts, the declines, and a product
// in C's storage order.
#include <gtest/gtest.h>

#include <vector>

#include "jit/blas_layout.h"
#include "jit/cpu_blas.h"
#include "runtime/abi.h"

using namespace plait::jit;

TEST(BlasLayout, RowAndColumnMajorWithAnyLeadingDimensionElseNone) {
  auto row = blas_layout(3, 4, 10, 1, true);  // a column slice of a wider row-major array
  ASSERT_TRUE(row);
  EXPECT_TRUE(row->row_major);
  EXPECT_EQ(row->ld, 10);
  auto col = blas_layout(3, 4, 1, 5, true);
  ASSERT_TRUE(col);
  EXPECT_FALSE(col->row_major);
  EXPECT_EQ(col->ld, 5);
  EXPECT_FALSE(blas_layout(3, 4, 8, 2, true));  // steps in both dimensions
  EXPECT_FALSE(blas_layout(3, 4, 2, 1, true));  // rows overlap
}

TEST(BlasLayout, ARowMajorProductIsComputedAsItsTransposeInCsOrder) {
  std::vector<double> a(6 * 4), b(4 * 5), c(6 * 5);
  // All row-major: C^T = B^T A^T, neither transposed, B first.
  auto g = column_major_gemm(PLAIT_FLOAT64, 6, 5, 4, 1.0, {a.data(), 6, 4, 4, 1}, {b.data(), 4, 5, 5, 1}, 0.5, true,
                             {c.data(), 6, 5, 5, 1});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->first, b.data());
  EXPECT_FALSE(g->transpose_first || g->transpose_second);
  EXPECT_EQ(g->rows, 5);
  EXPECT_EQ(g->cols, 6);
  EXPECT_EQ(g->ld_out, 5);
  EXPECT_EQ(g->beta, 0.5);
  // A column-major A (A^T row-major) in a row-major product is transposed.
  g = column_major_gemm(PLAIT_FLOAT64, 6, 5, 4, 1.0, {a.data(), 6, 4, 1, 6}, {b.data(), 4, 5, 5, 1}, 0.0, false,
                        {c.data(), 6, 5, 5, 1});
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->transpose_second);
  EXPECT_EQ(g->beta, 0.0);
}

TEST(BlasLayout, DeclinesWhatTheLoopsWouldComputeDifferently) {
  std::vector<double> a(16), b(16), c(16);
  const BlasMatrix A{a.data(), 4, 4, 4, 1}, B{b.data(), 4, 4, 4, 1}, C{c.data(), 4, 4, 4, 1};
  EXPECT_FALSE(column_major_gemm(PLAIT_FLOAT64, 4, 4, 4, 0.0, A, B, 1.0, true, C));  // alpha 0 skips NaNs
  EXPECT_FALSE(column_major_gemm(PLAIT_FLOAT64, 4, 4, 4, 1.0, A, B, 0.0, true, C));  // beta 0 skips C's NaNs
  EXPECT_FALSE(column_major_gemm(PLAIT_INT64, 4, 4, 4, 1.0, A, B, 1.0, true, C));
  EXPECT_FALSE(column_major_gemm(PLAIT_FLOAT64, 4, 4, 4, 1.0, A, {c.data() + 2, 4, 4, 4, 1}, 1.0, true, C));
  EXPECT_FALSE(column_major_gemm(PLAIT_FLOAT32, 4, 4, 4, 1e-40, A, B, 1.0, true, C));  // subnormal in float32
}

TEST(CpuBlas, ComputesAProductOrSaysWhyItCannot) {
  const plait_blas_api* blas = cpu_blas_api();
  if (!blas || cpu_blas_description().rfind("none", 0) == 0) GTEST_SKIP() << "no BLAS: " << cpu_blas_description();
  // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] + C, A column-major.
  const double a[] = {1, 3, 2, 4}, b[] = {5, 6, 7, 8};
  double c[] = {1, 1, 1, 1};
  plait_context ctx{};
  EXPECT_EQ(blas->gemm(&ctx, PLAIT_FLOAT64, 2, 2, 2, 1.0, a, 1, 2, b, 2, 1, 1.0, 1, c, 2, 1), kBlasDone);
  EXPECT_EQ(c[0], 20);
  EXPECT_EQ(c[1], 23);
  EXPECT_EQ(c[2], 44);
  EXPECT_EQ(c[3], 51);
  EXPECT_EQ(blas->gemm(&ctx, PLAIT_FLOAT64, 2, 2, 2, 1.0, a, 2, 2, b, 2, 1, 1.0, 1, c, 2, 1), kBlasDeclined);
}
