// Pass: move reductions that read down a column outside the loop they serve.
//
// A matrix product lowers to `for j: acc = init; for k: acc = f(acc, j, k);
// rest(j, acc)` with the reduction over k innermost. When a load in f steps
// through a non-contiguous dimension with k and through the contiguous one
// with j (`B[k, j]` in `A @ B`, `M[k, j]` in `x @ M`, `data[k, i + j]` in
// covariance), the inner loop touches one cache line per iteration. This pass
// rewrites the loop over j (step 1) into chunks of a few hundred j, each with
// a buffer of one accumulator per j:
//
//   for jc in range(begin, end, C):             # the j loop's parallel kind
//     buf = empty(C)
//     simd for j in range(jc, min(jc + C, end)): buf[j - jc] = init
//     for k in ...:
//       simd for j in range(jc, min(jc + C, end)): buf[j - jc] = f(buf[j - jc], j, k)
//     for j in range(jc, min(jc + C, end)):     # the j loop's simd kind
//       acc = buf[j - jc]; rest(j, acc)
//
// Every accumulator still sees its k in the original order, so the results
// equal those of the plain loops (no reassociation; the simd reduction over
// k that the lowering asked for is dropped). The buffer is allocated once per
// run of the j loop, or once per chunk when the chunks run in parallel.
//
// Blocks of rows (`A @ B`, gemm): when the loop over j is the whole body of
// a parallel loop over i, the chunks of j go outside it and i runs in
// blocks of 4 rows, whose accumulators are updated in one vector loop:
//
//   for jc in range(begin, end, C):
//     parallel for ib in range(i_begin, i_end, 4):
//       buf = empty(4 * C)
//       if ib + 4 <= i_end: for k: simd for j in chunk: rows ib..ib+3
//       else: for i in range(ib, i_end): for k: simd for j in chunk: row i
//       for i in range(ib, min(ib + 4, i_end)): for j in chunk: rest(i, j)
//
// Each element of B read serves 4 rows, and the chunk-wide panel of B (all
// k) stays in the L2 cache from one block of rows to the next. The rows of
// a parallel loop are independent, so they may interleave chunk by chunk;
// this needs the bounds of the loops over j and k to be free of i, and
// every scalar the body over j writes to be fresh in each of its
// iterations or a reduction of the loop over i.
//
// Legality (each failure leaves the loop alone and adds a remark):
// - the loop over j has step 1; its bounds read nothing the body writes;
// - its body is Declares, `acc = init`, a loop over k whose body is the one
//   assignment `acc = f(acc, ...)`, then any statements (`rest`) without a
//   `break` that would leave the loop over j;
// - the loop over k is not parallel (its threads would be lost);
// - j and k are used only in their loops (no Declare), acc is declared in
//   the body or not at all, and the body does not assign j;
// - the bounds of the loop over k read neither j nor anything the body
//   writes;
// - init and f read no scalar the body writes (besides acc in f, and k) and
//   no array the body stores to or rebinds (arrays of different names are
//   taken to be different memory, as in the rest of the compiler);
// - init and f cannot raise an error (no bounds-checked load, checked cast,
//   zero-checked division or math.* call): the order of the errors would
//   change.
// Profitability: some load in f indexes the array's contiguous dimension
// (the last one; the first for Fortran order) with `j + c` and another
// dimension with an expression of k. A loop whose loads all read
// contiguously along k (`A @ x`) is left as it is.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void interchange_reductions(ir::Function& function);

}  // namespace plait::transforms
