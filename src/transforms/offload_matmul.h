// Pass: matrix products for the target's BLAS library (CUDA: cuBLAS; CPU:
// the BLAS of jit/cpu_blas.h: products, triangles and solves).
//
// Finds host-level loop nests of the form
//
//   parallel for i in range(m):
//     for j in range(n):            (or collapsed with i)
//       t = 0
//       for r in range(k):          (simd, reduction(+: t), or serial)
//         t = t + A[i, r] * B[r, j]  (A[r, i] and B[j, r] too; either order)
//       C[i, j] = alpha * t + beta * C[i, j]
//
// where the extents do not depend on i, j or r, the coefficients are
// expressions of scalars that cannot fail (linear in t and C[i, j]: `t`,
// `alpha * t`, `t + C[i, j]`, ...), C is neither A nor B, the arrays are
// float32 or float64 and t, i, j, r are not read after the nest. This is
// what the array-expression lowering makes of `C[:] = alpha * A @ B + beta *
// C` and what users write as loops. Each becomes an ir::MatMul that keeps
// the nest as its fallback; the back end decides at run time (layouts,
// overlap) whether the library runs it. cuBLAS's tiled product took
// 6-25x less time than the nest's kernel (NPBench gemm, H100).
//
// Triangles: a parallel loop over the rows i of C whose slices cover the
// columns [0, i + 1) or [i, n) of row i, updated by one or two products
// summed over a loop over k (syrk, syr2k) or computed as dot products
// (covariance), becomes a MatMul with a triangle part; a row condition,
// checked on the host for every row before the library runs, says that the
// slices are exactly the triangle and that the lowering's broadcast
// versions take their plain path. Statements after a dot-product triangle
// in the loop move to a second loop over the rows after the product.
//
// In place: a serial loop over the rows i of B whose row i adds the
// products of row i of A' with the rows of B below it (trmm) reads those
// rows before they change, so it is B = B + strict_upper(A') @ B, a
// triangular product with a unit diagonal, as one MatMul.
//
// Symmetric: a serial loop over the rows i of C that adds alpha A[i, r]
// B[i, :] to the rows r < i and alpha (A[i, i] B[i, :] + A[i, :i] @ B[:i, :])
// (through a local temp2 that nothing reads after the loop) to row i
// (symm) is C = alpha * S @ B + C with S the symmetric matrix of A's lower
// triangle, as one MatMul.
//
// Solve: a serial loop over i whose step is x[i] = (b[i] - L[i, :i] @
// x[:i]) / L[i, i] (trisolv; L[:i, i] too, b may be x, x may be a row of a
// matrix updated in place: cholesky's rows) computes x = solve(lower(L), b)
// by forward substitution, as one MatMul (LowerSolve).
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

// Which of the library's entries the target has besides products: all of
// them (CUDA: cuBLAS), or triangles and solves (CPU: plait_blas_api's gemmt
// and trsv), where the in-place and symmetric nests stay loops.
struct BlasEntries {
  bool triangles = true, in_place = true, solves = true, symmetric = true;
};

void offload_matmul(ir::Function& function, BlasEntries entries = {});

}  // namespace plait::transforms
