// Pass: bounds checking (on by default, see default_boundscheck in
// driver/compiler.h; boundscheck=False or
// PLAIT_BOUNDSCHECK=0 turns it off).
//
// Every array access whose indices the compiler cannot prove in range raises
// IndexError naming the user's line instead of reading or writing outside
// the array. Proofs come from analysis/index_ranges. An access it cannot
// prove but whose indices are affine in the loop variables is checked once,
// before the loop nest: the nest runs in two versions, one without the checks
// (taken when the least and greatest index of every such access are in
// range) and one that checks each access, so that an index that does go out
// of range raises at the iteration Python would. The versions are made at
// the outermost loop whose bounds fix the indices' range (not inside a
// collapsed nest), so that the test runs once and the unchecked copy keeps
// the shape later passes look for (a row loop that is one matrix product,
// say); inside the checked copy no loop is copied again. Other accesses (an
// index loaded from an array, say) are checked where they happen. explain()
// lists the loops checked once and the accesses checked each time.
//
// An index loaded from an array (`x[col[p]]` over a row of a sparse matrix)
// is checked once as well where the analysis bounds it by a scan: before the
// test, a loop finds the least and greatest element of `col` over the
// positions the nest reads (index_ranges.h, IndexScan): a row loop of a
// sparse matrix is checked once per call, by scans of its index arrays. A
// nest inside another loop (the rows a frontier picks at each sweep) would
// scan its positions at each step of that loop: an index array that no
// statement writes is then scanned whole, once, when the call starts.
// Where scans may run is the target's choice (BoundsCheckOptions). Arrays
// whose indices are in range by construction (ir::ArrayInfo::
// indices_in_range: a list's storage) are not checked.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

struct BoundsCheckOptions {
  // Whether an index loaded from an array may be bounded by a scan, which
  // runs in threads and SIMD lanes (the CPU's choice).
  bool scans = false;
};

void insert_bounds_checks(ir::Function& function, const BoundsCheckOptions& options);

}  // namespace plait::transforms
