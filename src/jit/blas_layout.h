// What a BLAS library is handed, shared by the CUDA runtime's cuBLAS
// entries (cuda_blas.cpp) and the CPU's BLAS (cpu_blas.cpp): the layouts of
// strided matrices as a column-major library takes them, the checks every
// entry makes before it calls the library, and a matrix product in those
// terms.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace plait::jit {

// What an entry returns (runtime/abi.h): done, declined (the loops run), failed (error recorded).
inline constexpr int32_t kBlasDone = 0, kBlasDeclined = 1, kBlasFailed = -1;
inline constexpr int64_t kBlasMaxInt = std::numeric_limits<int>::max();

// A matrix of rows x cols with element strides (rs, cs) as a column-major
// library takes it: column-major with leading dimension `ld`, or row-major
// (its transpose is column-major). Strides of a dimension of extent 1 do
// not matter.
struct BlasLayout {
  bool row_major = false;
  int64_t ld = 0;
};
std::optional<BlasLayout> blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool prefer_row_major);

// A coefficient the library multiplies by as the loops would: not 0 (the
// library then skips the product, and the NaNs the loops would propagate),
// finite, and normal in the element type (a division x / s arrives as
// alpha = 1 / s, whose precision a subnormal would lose).
bool usable_alpha(double alpha, int32_t dtype);

// A matrix argument of a BLAS entry: its first element, extents and element
// strides.
struct BlasMatrix {
  const void* data;
  int64_t rows, cols, rs, cs;
};

// The layouts an entry hands the library: its output's (row-major where it
// can be either) and those of its laid-out inputs, in the output's
// orientation where they can be either.
struct BlasLayouts {
  BlasLayout out;
  std::vector<BlasLayout> in;
};

// The checks every entry makes before it calls the library; nullopt (the
// entry declines) for an element type other than float32 and float64, where
// an extent or a leading dimension exceeds an int, where a layout is neither
// row- nor column-major, or where an input overlaps the output. `laid_out`
// inputs get their layouts (in order); `apart` ones, which the entry lays
// out itself, are only checked not to overlap it.
std::optional<BlasLayouts> blas_layouts(int32_t dtype, const BlasMatrix& out, const std::vector<BlasMatrix>& laid_out,
                                        const std::vector<BlasMatrix>& apart = {});

// C = alpha * A @ B + beta * C (A m x k, B k x n) as a column-major gemm
// computes it in C's storage order: for a row-major C, C^T = B^T A^T, where a
// row-major operand is its own transpose's column-major storage (no
// transposition) and a column-major one is transposed; for a column-major
// C, the other way round.
struct ColumnMajorGemm {
  bool transpose_first = false, transpose_second = false;
  int rows = 0, cols = 0, k = 0;
  const void* first = nullptr;
  const void* second = nullptr;
  int ld_first = 0, ld_second = 0, ld_out = 0;
  double beta = 0.0;  // 0 where C is not read
};
// nullopt where the entry declines (blas_layouts, and a k, alpha or beta
// the library would not treat as the loops do); the caller has returned
// for an empty C first.
std::optional<ColumnMajorGemm> column_major_gemm(int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha,
                                                 const BlasMatrix& a, const BlasMatrix& b, double beta,
                                                 bool beta_reads_c, const BlasMatrix& c);

// One product of a triangle: alpha * X Y^T with X and Y n x k, in the
// column-major orientation of C's storage, both row-major (transposed) or
// both column-major, with their leading dimensions.
struct TriangleProduct {
  double alpha = 0.0;
  const void* x = nullptr;
  const void* y = nullptr;
  bool transposed = false;
  int64_t ldx = 0, ldy = 0;
};

// alpha * A B (A n x k, B k x n, with their strides) as a TriangleProduct
// for a C stored row-major (`c_row_major`, whose column-major storage is
// C^T = B^T A^T) or column-major; nullopt when no layout of one orientation
// takes both operands.
std::optional<TriangleProduct> triangle_product(double alpha, int64_t n, int64_t k, const void* a, int64_t a_rs,
                                                int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs,
                                                bool c_row_major);

// A triangle of C (n x n) of alpha A B + alpha2 A2 B2 + beta C (A2 B2
// absent where a2.data is null) as a column-major library computes it: the
// triangle in C's storage (`upper`: j >= i there), each product in that
// orientation, C's leading dimension and beta (0 where C is not read).
struct ColumnMajorTriangle {
  bool upper = false;
  std::vector<TriangleProduct> products;
  int64_t ld_out = 0;
  double beta = 0.0;
};
// nullopt where the entry declines: blas_layouts, a k, alpha or beta the
// library would not treat as the loops do, a product no orientation takes;
// the caller has returned for an empty C first.
std::optional<ColumnMajorTriangle> column_major_triangle(int32_t dtype, bool upper, int64_t n, int64_t k, double alpha,
                                                         const BlasMatrix& a, const BlasMatrix& b, double alpha2,
                                                         const BlasMatrix& a2, const BlasMatrix& b2, double beta,
                                                         bool beta_reads_c, const BlasMatrix& c);

// x = solve(lower(A), b) (A n x n; b and x vectors) as a column-major trsv
// computes it: A's lower triangle as it is (column-major) or as the upper
// triangle of its transpose (row-major), b copied into x first unless x is b.
struct ColumnMajorTrsv {
  bool upper = false, transpose = false, copy = false;
  int n = 0, lda = 0, incb = 0, incx = 0;
};
// nullopt where the entry declines: A sharing memory with x, b with x
// (other than in place), strides the library cannot take (a vector's must
// be positive); the caller has returned for n <= 0 first.
std::optional<ColumnMajorTrsv> column_major_trsv(int32_t dtype, int64_t n, const BlasMatrix& a, const void* b,
                                                 int64_t b_stride, const void* x, int64_t x_stride);

}  // namespace plait::jit
