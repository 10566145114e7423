// What a BLAS library is handed (blas_layout.h).
#include "jit/blas_layout.h"

#include <cmath>
#include <cstdint>

#include "runtime/abi.h"

namespace plait::jit {

namespace {

// The bytes a rows x cols matrix spans from its first element.
uint64_t span_bytes(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t element) {
  const int64_t last = (rows - 1) * (rows > 1 ? rs : 0) + (cols - 1) * (cols > 1 ? cs : 0);
  return static_cast<uint64_t>((last + 1) * element);
}

bool overlaps(const void* x, uint64_t x_bytes, const void* y, uint64_t y_bytes) {
  const auto a = reinterpret_cast<uintptr_t>(x), b = reinterpret_cast<uintptr_t>(y);
  return a < b + y_bytes && b < a + x_bytes;
}

}  // namespace

std::optional<BlasLayout> blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool prefer_row_major) {
  const bool row_major = (cs == 1 || cols <= 1) && (rows <= 1 || rs >= cols);
  const bool col_major = (rs == 1 || rows <= 1) && (cols <= 1 || cs >= rows);
  if (row_major && (prefer_row_major || !col_major)) return BlasLayout{true, rows <= 1 ? cols : rs};
  if (col_major) return BlasLayout{false, cols <= 1 ? rows : cs};
  return std::nullopt;
}

bool usable_alpha(double alpha, int32_t dtype) {
  return std::isnormal(alpha) && (dtype != PLAIT_FLOAT32 || std::isnormal(static_cast<float>(alpha)));
}

std::optional<BlasLayouts> blas_layouts(int32_t dtype, const BlasMatrix& out, const std::vector<BlasMatrix>& laid_out,
                                        const std::vector<BlasMatrix>& apart) {
  if (dtype != PLAIT_FLOAT32 && dtype != PLAIT_FLOAT64) return std::nullopt;
  auto too_large = [](const BlasMatrix& x) { return x.rows > kBlasMaxInt || x.cols > kBlasMaxInt; };
  if (too_large(out)) return std::nullopt;
  for (const std::vector<BlasMatrix>* inputs : {&laid_out, &apart})
    for (const BlasMatrix& x : *inputs)
      if (too_large(x)) return std::nullopt;
  BlasLayouts layouts;
  const std::optional<BlasLayout> out_layout = blas_layout(out.rows, out.cols, out.rs, out.cs, true);
  if (!out_layout || out_layout->ld > kBlasMaxInt) return std::nullopt;
  layouts.out = *out_layout;
  for (const BlasMatrix& x : laid_out) {
    const std::optional<BlasLayout> layout = blas_layout(x.rows, x.cols, x.rs, x.cs, out_layout->row_major);
    if (!layout || layout->ld > kBlasMaxInt) return std::nullopt;
    layouts.in.push_back(*layout);
  }
  const int64_t element = dtype == PLAIT_FLOAT32 ? 4 : 8;
  const uint64_t out_bytes = span_bytes(out.rows, out.cols, out.rs, out.cs, element);
  for (const std::vector<BlasMatrix>* inputs : {&laid_out, &apart})
    for (const BlasMatrix& x : *inputs)
      if (overlaps(out.data, out_bytes, x.data, span_bytes(x.rows, x.cols, x.rs, x.cs, element))) return std::nullopt;
  return layouts;
}

std::optional<ColumnMajorGemm> column_major_gemm(int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha,
                                                 const BlasMatrix& a, const BlasMatrix& b, double beta,
                                                 bool beta_reads_c, const BlasMatrix& c) {
  if (k <= 0 || !usable_alpha(alpha, dtype) || (beta_reads_c && beta == 0.0)) return std::nullopt;
  const std::optional<BlasLayouts> layouts = blas_layouts(dtype, c, {a, b});
  if (!layouts) return std::nullopt;
  const BlasLayout &lc = layouts->out, &la = layouts->in[0], &lb = layouts->in[1];
  const bool swap = lc.row_major;
  const BlasLayout& first = swap ? lb : la;
  const BlasLayout& second = swap ? la : lb;
  ColumnMajorGemm g;
  g.transpose_first = first.row_major != swap;
  g.transpose_second = second.row_major != swap;
  g.rows = static_cast<int>(swap ? n : m);
  g.cols = static_cast<int>(swap ? m : n);
  g.k = static_cast<int>(k);
  g.first = swap ? b.data : a.data;
  g.second = swap ? a.data : b.data;
  g.ld_first = static_cast<int>(first.ld);
  g.ld_second = static_cast<int>(second.ld);
  g.ld_out = static_cast<int>(lc.ld);
  g.beta = beta_reads_c ? beta : 0.0;
  return g;
}

std::optional<TriangleProduct> triangle_product(double alpha, int64_t n, int64_t k, const void* a, int64_t a_rs,
                                                int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs,
                                                bool c_row_major) {
  // P = A and Q = B^T, both n x k; C = alpha P Q^T, C^T = alpha Q P^T.
  struct Matrix {
    const void* data;
    int64_t rs, cs;
  };
  const Matrix p{a, a_rs, a_cs}, q{b, b_cs, b_rs};
  const Matrix& x = c_row_major ? q : p;
  const Matrix& y = c_row_major ? p : q;
  for (const bool row_major : {false, true}) {
    const std::optional<BlasLayout> lx = blas_layout(n, k, x.rs, x.cs, row_major);
    const std::optional<BlasLayout> ly = blas_layout(n, k, y.rs, y.cs, row_major);
    if (!lx || !ly || lx->row_major != ly->row_major) continue;
    if (lx->ld > kBlasMaxInt || ly->ld > kBlasMaxInt) return std::nullopt;
    return TriangleProduct{alpha, x.data, y.data, lx->row_major, lx->ld, ly->ld};
  }
  return std::nullopt;
}

std::optional<ColumnMajorTriangle> column_major_triangle(int32_t dtype, bool upper, int64_t n, int64_t k, double alpha,
                                                         const BlasMatrix& a, const BlasMatrix& b, double alpha2,
                                                         const BlasMatrix& a2, const BlasMatrix& b2, double beta,
                                                         bool beta_reads_c, const BlasMatrix& c) {
  const bool two = a2.data != nullptr;
  if (k <= 0 || !usable_alpha(alpha, dtype) || (two && !usable_alpha(alpha2, dtype)) || (beta_reads_c && beta == 0.0))
    return std::nullopt;
  std::vector<BlasMatrix> factors{a, b};
  if (two) factors.insert(factors.end(), {a2, b2});
  const std::optional<BlasLayouts> layouts = blas_layouts(dtype, c, {}, factors);
  if (!layouts) return std::nullopt;
  ColumnMajorTriangle t;
  const bool c_row_major = layouts->out.row_major;
  // The lower triangle of a row-major C is the upper one of its column-major storage C^T.
  t.upper = upper != c_row_major;
  t.ld_out = layouts->out.ld;
  t.beta = beta_reads_c ? beta : 0.0;
  for (size_t p = 0; p < factors.size(); p += 2) {
    const BlasMatrix &x = factors[p], &y = factors[p + 1];
    const std::optional<TriangleProduct> product =
        triangle_product(p == 0 ? alpha : alpha2, n, k, x.data, x.rs, x.cs, y.data, y.rs, y.cs, c_row_major);
    if (!product) return std::nullopt;
    t.products.push_back(*product);
  }
  return t;
}

std::optional<ColumnMajorTrsv> column_major_trsv(int32_t dtype, int64_t n, const BlasMatrix& a, const void* b,
                                                 int64_t b_stride, const void* x, int64_t x_stride) {
  if (n == 1) b_stride = x_stride = 1;
  const bool in_place = b == x && b_stride == x_stride;
  std::vector<BlasMatrix> apart;
  if (!in_place) apart.push_back({b, n, 1, b_stride, 1});
  const std::optional<BlasLayouts> layouts = blas_layouts(dtype, {x, n, 1, x_stride, 1}, {a}, apart);
  if (!layouts || b_stride < 1 || b_stride > kBlasMaxInt) return std::nullopt;
  const BlasLayout& la = layouts->in[0];
  ColumnMajorTrsv t;
  t.upper = la.row_major;
  t.transpose = la.row_major;
  t.copy = !in_place;
  t.n = static_cast<int>(n);
  t.lda = static_cast<int>(la.ld);
  t.incb = static_cast<int>(b_stride);
  t.incx = static_cast<int>(x_stride);
  return t;
}

}  // namespace plait::jit
