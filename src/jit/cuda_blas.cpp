// The cuBLAS entries of the CUDA runtime's plait_cuda_api table: matrix
// products, triangles, symmetric products and triangular solves, declined
// for layouts cuBLAS cannot describe and overlapping operands (cuda_call.h).
#include <cmath>
#include <limits>
#include <optional>

#include "jit/blas_layout.h"
#include "jit/cuda_call.h"
#include "support/diagnostics.h"

namespace plait::jit::cuda_call {

namespace {

constexpr int32_t kDone = kBlasDone, kDeclined = kBlasDeclined, kFailed = kBlasFailed;

// The cuBLAS handle of the call's stream (each stream has its own, with its
// own workspace), made on first use; null with the error in ctx.
cublasHandle cublas_handle(plait_context* ctx, const CublasApi& blas, CallState& s) {
  std::lock_guard<std::mutex> lock(s.rt->cublas_mutex);
  cublasHandle& slot = s.rt->cublas_handles[s.stream];
  if (!slot) {
    if (const cublasStatus status = blas.cublasCreate_v2(&slot); status != 0) {
      slot = nullptr;
      record_error(ctx, PLAIT_RUNTIME_ERROR, "creating a cuBLAS handle failed (status " + std::to_string(status) + ")");
    }
  }
  return slot;
}

// The library and the layouts a BLAS entry hands it (blas_layout.h).
struct BlasOperands {
  const CublasApi* blas = nullptr;
  BlasLayout out;
  std::vector<BlasLayout> in;
};

std::optional<BlasOperands> blas_operands(int32_t dtype, const BlasMatrix& out, const std::vector<BlasMatrix>& laid_out,
                                          const std::vector<BlasMatrix>& apart = {}) {
  std::optional<BlasLayouts> layouts = blas_layouts(dtype, out, laid_out, apart);
  if (!layouts) return std::nullopt;
  BlasOperands operands{cublas(), layouts->out, std::move(layouts->in)};
  if (!operands.blas) return std::nullopt;
  return operands;
}

}  // namespace

int32_t api_gemm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                 int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double beta,
                 int32_t beta_reads_c, void* c, int64_t c_rs, int64_t c_cs) {
  if (m <= 0 || n <= 0) return kDone;
  const std::optional<ColumnMajorGemm> g =
      column_major_gemm(dtype, m, n, k, alpha, {a, m, k, a_rs, a_cs}, {b, k, n, b_rs, b_cs}, beta, beta_reads_c != 0,
                        {c, m, n, c_rs, c_cs});
  const CublasApi* blas = cublas();
  if (!g || !blas) return kDeclined;
  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  constexpr int kOpN = 0, kOpT = 1;
  const int op_first = g->transpose_first ? kOpT : kOpN, op_second = g->transpose_second ? kOpT : kOpN;
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  if (status == 0 && dtype == PLAIT_FLOAT64) {
    status = blas->cublasDgemm_v2(
        handle, op_first, op_second, g->rows, g->cols, g->k, &alpha, static_cast<const double*>(g->first), g->ld_first,
        static_cast<const double*>(g->second), g->ld_second, &g->beta, static_cast<double*>(c), g->ld_out);
  } else if (status == 0) {
    const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(g->beta);
    status = blas->cublasSgemm_v2(
        handle, op_first, op_second, g->rows, g->cols, g->k, &alpha32, static_cast<const float*>(g->first), g->ld_first,
        static_cast<const float*>(g->second), g->ld_second, &beta32, static_cast<float*>(c), g->ld_out);
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "a cuBLAS matrix product failed (status " + std::to_string(status) + ")");
  return kFailed;
}

int32_t api_gemmt(plait_context* ctx, int32_t dtype, int32_t upper, int64_t n, int64_t k, double alpha, const void* a,
                  int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double alpha2, const void* a2,
                  int64_t a2_rs, int64_t a2_cs, const void* b2, int64_t b2_rs, int64_t b2_cs, double beta,
                  int32_t beta_reads_c, void* c, int64_t c_rs, int64_t c_cs) {
  if (n <= 0) return kDone;
  const std::optional<ColumnMajorTriangle> t = column_major_triangle(
      dtype, upper != 0, n, k, alpha, {a, n, k, a_rs, a_cs}, {b, k, n, b_rs, b_cs}, alpha2, {a2, n, k, a2_rs, a2_cs},
      {b2, k, n, b2_rs, b2_cs}, beta, beta_reads_c != 0, {c, n, n, c_rs, c_cs});
  const CublasApi* blas = cublas();
  if (!t || !blas) return kDeclined;
  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  const int uplo = t->upper ? 1 : 0;
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  // The second product adds to what the first left in C.
  double beta_used = t->beta;
  for (const TriangleProduct& p : t->products) {
    if (status != 0) break;
    const int ni = static_cast<int>(n), ki = static_cast<int>(k);
    constexpr int kOpN = 0, kOpT = 1;
    const int op = p.transposed ? kOpT : kOpN;
    if (dtype == PLAIT_FLOAT64) {
      status = blas->cublasDsyrkx(handle, uplo, op, ni, ki, &p.alpha, static_cast<const double*>(p.x),
                                  static_cast<int>(p.ldx), static_cast<const double*>(p.y), static_cast<int>(p.ldy),
                                  &beta_used, static_cast<double*>(c), static_cast<int>(t->ld_out));
    } else {
      const float alpha32 = static_cast<float>(p.alpha), beta32 = static_cast<float>(beta_used);
      status = blas->cublasSsyrkx(handle, uplo, op, ni, ki, &alpha32, static_cast<const float*>(p.x),
                                  static_cast<int>(p.ldx), static_cast<const float*>(p.y), static_cast<int>(p.ldy),
                                  &beta32, static_cast<float*>(c), static_cast<int>(t->ld_out));
    }
    beta_used = 1.0;
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR,
               "a cuBLAS triangular matrix product failed (status " + std::to_string(status) + ")");
  return kFailed;
}

// B = (I + strict_upper(A)) B: in cuBLAS's column-major terms, B's storage
// is B (column-major B) or B^T (row-major B, which cuBLAS multiplies from
// the right by the transpose), and A's storage is A or A^T, whose upper or
// lower triangle holds strict_upper(A); the diagonal is taken as ones.
int32_t api_trmm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, const void* a, int64_t a_rs, int64_t a_cs,
                 void* b, int64_t b_rs, int64_t b_cs) {
  if (m <= 0 || n <= 0) return kDone;
  const std::optional<BlasOperands> operands = blas_operands(dtype, {b, m, n, b_rs, b_cs}, {{a, m, m, a_rs, a_cs}});
  if (!operands) return kDeclined;
  const CublasApi* blas = operands->blas;
  const BlasLayout &lb = operands->out, &la = operands->in[0];

  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  // A column-major A holds strict_upper(A) in its upper triangle, a
  // row-major one (storage A^T) in its lower. A row-major B is multiplied
  // from the right by (I + strict_upper(A))^T, a column-major one from the
  // left by I + strict_upper(A).
  constexpr int kLeft = 0, kRight = 1, kLower = 0, kUpper = 1, kOpN = 0, kOpT = 1, kUnit = 1;
  const int side = lb.row_major ? kRight : kLeft;
  const int uplo = la.row_major ? kLower : kUpper;
  const int trans = lb.row_major != la.row_major ? kOpT : kOpN;
  const int rows = static_cast<int>(lb.row_major ? n : m), cols = static_cast<int>(lb.row_major ? m : n);
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  if (status == 0 && dtype == PLAIT_FLOAT64) {
    const double one = 1.0;
    status = blas->cublasDtrmm_v2(handle, side, uplo, trans, kUnit, rows, cols, &one, static_cast<const double*>(a),
                                  static_cast<int>(la.ld), static_cast<const double*>(b), static_cast<int>(lb.ld),
                                  static_cast<double*>(b), static_cast<int>(lb.ld));
  } else if (status == 0) {
    const float one = 1.0f;
    status = blas->cublasStrmm_v2(handle, side, uplo, trans, kUnit, rows, cols, &one, static_cast<const float*>(a),
                                  static_cast<int>(la.ld), static_cast<const float*>(b), static_cast<int>(lb.ld),
                                  static_cast<float*>(b), static_cast<int>(lb.ld));
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR,
               "a cuBLAS triangular matrix product failed (status " + std::to_string(status) + ")");
  return kFailed;
}

// x = solve(lower(A), b): b copied to x unless x is b, then cuBLAS's trsv
// in place. A row-major A is stored as the column-major A^T, whose upper
// triangle holds lower(A) transposed (op T); a column-major A is A (op N).
int32_t api_trsv(plait_context* ctx, int32_t dtype, int64_t n, const void* a, int64_t a_rs, int64_t a_cs, const void* b,
                 int64_t b_stride, void* x, int64_t x_stride) {
  if (n <= 0) return kDone;
  const std::optional<ColumnMajorTrsv> t = column_major_trsv(dtype, n, {a, n, n, a_rs, a_cs}, b, b_stride, x, x_stride);
  const CublasApi* blas = cublas();
  if (!t || !blas) return kDeclined;
  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  constexpr int kLower = 0, kUpper = 1, kOpN = 0, kOpT = 1, kNonUnit = 0;
  const int uplo = t->upper ? kUpper : kLower, trans = t->transpose ? kOpT : kOpN;
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  if (status == 0 && dtype == PLAIT_FLOAT64) {
    if (t->copy)
      status =
          blas->cublasDcopy_v2(handle, t->n, static_cast<const double*>(b), t->incb, static_cast<double*>(x), t->incx);
    if (status == 0)
      status = blas->cublasDtrsv_v2(handle, uplo, trans, kNonUnit, t->n, static_cast<const double*>(a), t->lda,
                                    static_cast<double*>(x), t->incx);
  } else if (status == 0) {
    if (t->copy)
      status =
          blas->cublasScopy_v2(handle, t->n, static_cast<const float*>(b), t->incb, static_cast<float*>(x), t->incx);
    if (status == 0)
      status = blas->cublasStrsv_v2(handle, uplo, trans, kNonUnit, t->n, static_cast<const float*>(a), t->lda,
                                    static_cast<float*>(x), t->incx);
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "a cuBLAS triangular solve failed (status " + std::to_string(status) + ")");
  return kFailed;
}

// C = alpha S B + beta C, S symmetric with A's lower triangle. cuBLAS's
// symm takes B and C in one column-major orientation: a column-major C and
// B are S B from the left; row-major ones are stored as C^T = B^T S, S from
// the right. A's storage is A (column-major), whose lower triangle holds
// S's, or A^T (row-major), whose upper triangle does.
int32_t api_symm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, double alpha, const void* a, int64_t a_rs,
                 int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double beta, int32_t beta_reads_c, void* c,
                 int64_t c_rs, int64_t c_cs) {
  if (m <= 0 || n <= 0) return kDone;
  if (!usable_alpha(alpha, dtype) || (beta_reads_c && beta == 0.0)) return kDeclined;
  const std::optional<BlasOperands> operands =
      blas_operands(dtype, {c, m, n, c_rs, c_cs}, {{a, m, m, a_rs, a_cs}, {b, m, n, b_rs, b_cs}});
  if (!operands) return kDeclined;
  const CublasApi* blas = operands->blas;
  const BlasLayout &lc = operands->out, &la = operands->in[0], &lb = operands->in[1];
  if (lb.row_major != lc.row_major) return kDeclined;

  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  constexpr int kLeft = 0, kRight = 1, kLower = 0, kUpper = 1;
  const int side = lc.row_major ? kRight : kLeft;
  const int uplo = la.row_major ? kUpper : kLower;
  const int rows = static_cast<int>(lc.row_major ? n : m), cols = static_cast<int>(lc.row_major ? m : n);
  const double beta_used = beta_reads_c ? beta : 0.0;
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  if (status == 0 && dtype == PLAIT_FLOAT64) {
    status = blas->cublasDsymm_v2(handle, side, uplo, rows, cols, &alpha, static_cast<const double*>(a),
                                  static_cast<int>(la.ld), static_cast<const double*>(b), static_cast<int>(lb.ld),
                                  &beta_used, static_cast<double*>(c), static_cast<int>(lc.ld));
  } else if (status == 0) {
    const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta_used);
    status = blas->cublasSsymm_v2(handle, side, uplo, rows, cols, &alpha32, static_cast<const float*>(a),
                                  static_cast<int>(la.ld), static_cast<const float*>(b), static_cast<int>(lb.ld),
                                  &beta32, static_cast<float*>(c), static_cast<int>(lc.ld));
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR,
               "a cuBLAS symmetric matrix product failed (status " + std::to_string(status) + ")");
  return kFailed;
}

}  // namespace plait::jit::cuda_call
