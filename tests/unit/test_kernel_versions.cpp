// The kernel versions and team sizing that transforms/gpu/plan_workers plans
// with each kernel's workers (transforms/gpu/kernel_versions.h), as the IR's
// dump shows them, and the temporaries' refusal the CUDA emitter raises.
#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda/codegen_cuda.h"
#include "driver/compiler.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

ir::Function lower(const std::string& text, const std::string& signature) {
  SourceFile source;
  source.path = "versions.py";
  source.text = text;
  source.first_line = 1;
  Globals globals{{"np", GlobalValue{GlobalValue::Kind::Module, "numpy"}}};
  CompileOptions options;
  options.target = Target::CUDA;
  options.boundscheck = false;
  return lower_kernel(source, "k", Signature::parse(signature), globals, options).function;
}

// The plan of the first kernel in the dump: "plan(kernel: ...)".
std::string kernel_plan(const ir::Function& f) {
  const std::string text = ir::to_string(f);
  const size_t at = text.find("plan(kernel: ");
  if (at == std::string::npos) return "no kernel plan in:\n" + text;
  return text.substr(at, text.find('\n', at) - at);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A straight-line one-thread worker takes several iterations per thread;
// a collapsed nest two, with a version whose blocks take tiles of one row.
TEST(KernelVersions, StraightLineWorkersAreBatched) {
  EXPECT_TRUE(contains(kernel_plan(lower("def k(x, y):\n"
                                         "    #pragma parallel for\n"
                                         "    for i in range(x.shape[0]):\n"
                                         "        y[i] = 2.0 * x[i]\n",
                                         "f64[::1], f64[::1]")),
                       "one thread per iteration, 4 iterations per thread)"));
  const std::string nest =
      kernel_plan(lower("def k(x, y):\n"
                        "    #pragma parallel for\n"
                        "    for i in range(x.shape[0]):\n"
                        "        #pragma parallel for\n"
                        "        for j in range(x.shape[1]):\n"
                        "            y[i, j] = 2.0 * x[i, j]\n",
                        "f64[:, ::1], f64[:, ::1]"));
  EXPECT_TRUE(contains(nest, "2 iterations per thread, versions: rows)")) << nest;
}

// A worker with an `if` is not batched; the loads it makes first are made
// for several workers at once.
TEST(KernelVersions, BranchingWorkersPrefetchTheirFirstLoads) {
  const std::string plan =
      kernel_plan(lower("def k(x, y):\n"
                        "    #pragma parallel for\n"
                        "    for i in range(x.shape[0]):\n"
                        "        v = x[i]\n"
                        "        if v > 0.0:\n"
                        "            y[i] = v\n",
                        "f64[::1], f64[::1]"));
  EXPECT_TRUE(contains(plan, "one thread per iteration, 1 loads prefetched)")) << plan;
}

// A row sum's team is sized by the host from the row's length, with a
// version for teams of a warp (no rows kept in registers).
TEST(KernelVersions, ARowSumHasAVersionForTeamsOfAWarp) {
  const std::string plan =
      kernel_plan(lower("def k(A, out):\n"
                        "    #pragma parallel for\n"
                        "    for i in range(A.shape[0]):\n"
                        "        out[i] = np.sum(A[i, :])\n",
                        "f64[:, ::1], f64[::1]"));
  EXPECT_TRUE(contains(plan, "a team per iteration [")) << plan;
  EXPECT_TRUE(contains(plan, ", versions: warp)")) << plan;
}

// A softmax's row stays in registers between its three loops: a version
// with blocks twice as large for rows longer than a block's registers hold,
// and versions for rows that fit in them; no warp version (the team as a
// constant made it slower there).
TEST(KernelVersions, RowsKeptInRegistersHaveWideAndFittingVersions) {
  const std::string plan =
      kernel_plan(lower("def k(x, out):\n"
                        "    #pragma parallel for\n"
                        "    for i in range(x.shape[0]):\n"
                        "        m = x[i, 0]\n"
                        "        #pragma simd reduction(max: m)\n"
                        "        for j1 in range(x.shape[1]):\n"
                        "            m = max(m, x[i, j1])\n"
                        "        s = 0.0\n"
                        "        #pragma simd reduction(+: s)\n"
                        "        for j2 in range(x.shape[1]):\n"
                        "            s += np.exp(x[i, j2] - m)\n"
                        "        #pragma simd\n"
                        "        for j3 in range(x.shape[1]):\n"
                        "            out[i, j3] = np.exp(x[i, j3] - m) / s\n",
                        "f32[:, ::1], f32[:, ::1]"));
  EXPECT_TRUE(contains(plan, ", versions: wide, fit)")) << plan;
}

const char* const kCsrRows =
    "def k(indptr, indices, data, x, y):\n"
    "    #pragma parallel for\n"
    "    for i in range(y.shape[0]):\n"
    "        acc = 0.0\n"
    "        #pragma simd reduction(+: acc)\n"
    "        for k in range(indptr[i], indptr[i + 1]):\n"
    "            acc += data[k] * x[indices[k]]\n"
    "        y[i] = acc\n";

// CSR rows: the host cannot count a row's length before the launch, so the
// team is small, with a version whose blocks stage their rows' terms.
TEST(KernelVersions, CsrRowsTakeASmallTeamAndAStagedVersion) {
  const std::string plan = kernel_plan(lower(kCsrRows, "i64[::1], i64[::1], f64[::1], f64[::1], f64[::1]"));
  EXPECT_TRUE(contains(plan, ", a team of 2, versions: staged rows)")) << plan;
}

// A worker that allocates stays one thread when the host cannot count its
// rows (small teams do not take temporaries).
TEST(KernelVersions, AWorkerWithTemporariesAndUncountedRowsStaysOneThread) {
  const std::string plan =
      kernel_plan(lower("def k(indptr, data, y):\n"
                        "    #pragma parallel for\n"
                        "    for i in range(y.shape[0]):\n"
                        "        t = np.zeros(3)\n"
                        "        t[0] = np.sum(data[indptr[i]:indptr[i + 1]])\n"
                        "        y[i] = t[0]\n",
                        "i64[::1], f64[::1], f64[::1]"));
  EXPECT_TRUE(contains(plan, "launched as one thread per iteration")) << plan;
}

// A temporary whose shape the host cannot compute before the launch is
// refused by the emitter, from the plan: planning itself raises nothing (a
// loop the emitter never runs as a kernel is not refused).
TEST(KernelVersions, ATemporaryTheHostCannotSizeIsRefusedWhereTheKernelIsEmitted) {
  const ir::Function f = lower(
      "def k(n, y):\n"
      "    #pragma parallel for\n"
      "    for i in range(y.shape[0]):\n"
      "        t = np.zeros(n[i])\n"
      "        y[i] = np.sum(t)\n",
      "i64[::1], f64[::1]");
  try {
    codegen::generate_cuda(f, CompileOptions{});
    ADD_FAILURE() << "a temporary sized from an element compiled";
  } catch (const CompileError& e) {
    EXPECT_TRUE(contains(e.what(),
                         "the shape of `t`, allocated inside a parallel loop, must be computable before the "
                         "launch on the CUDA target"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "File \"versions.py\", line 4")) << e.what();
  }
}

// The loops over a sparse matrix's stored entries that the tensor level
// writes (a row's sum, the scaling of its entries) are spread over a team:
// each copy of a loop (the program's broadcast and bounds-check versions)
// declares its column coordinate in its own body, so no thread of the team
// shares it with another.
TEST(KernelVersions, StoredEntryLoopsOfSparseProgramsTakeTeams) {
  const std::string text =
      ir::to_string(lower("def k(S):\n"
                          "    return S.multiply(1.0 / S.sum(axis=1)[:, None])\n",
                          "csr[f32, i32]"));
  size_t rows = 0;
  for (size_t at = text.find("parallel for _i_"); at != std::string::npos; at = text.find("parallel for _i_", at + 1)) {
    const std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_TRUE(contains(line, "plan(kernel: a team per iteration")) << line;
    ++rows;
  }
  EXPECT_GE(rows, 4u) << text;
}

// Where a sparse row's entries add into a dense row (SpMM), rows of more
// than 64 entries run in a kernel of their own, chunks of 64 stored entries
// each a worker that adds its part atomically; where each entry writes its
// own value (SDDMM) no chunk kernel is made. The chunks are counted from the
// column indices' length (known on the host), and run only where the kernel
// of short rows marked that it met a long row.
TEST(KernelVersions, LongRowsOfSparseProductsRunInChunksOfEntries) {
  const std::string spmm = ir::to_string(lower("def k(A, X):\n    return A @ X\n", "csr[f32, i32], f32[:, ::1]"));
  const size_t chunks = spmm.find("parallel for __chunk_worker_");
  ASSERT_NE(chunks, std::string::npos) << spmm;
  const std::string chunk_loop = spmm.substr(chunks, spmm.find('\n', chunks) - chunks);
  EXPECT_TRUE(contains(chunk_loop, "plan(kernel: a team per iteration")) << chunk_loop;
  EXPECT_TRUE(contains(chunk_loop, "range(0:int, (((_A_indices.shape[0] + 63:int) // 64:int) * 2:int)")) << chunk_loop;
  EXPECT_TRUE(contains(spmm.substr(chunks), "if (__long_rows_")) << spmm;
  EXPECT_TRUE(contains(spmm.substr(chunks), "\"the row offsets of 'A' reach past its stored entries\"")) << spmm;
  EXPECT_TRUE(contains(spmm.substr(chunks), "atomic _t")) << spmm;
  EXPECT_FALSE(contains(spmm.substr(0, chunks), "atomic _t")) << spmm;
  EXPECT_TRUE(contains(spmm.substr(0, chunks), "atomic __long_rows_")) << spmm;
  EXPECT_TRUE(contains(spmm.substr(0, chunks), ") <= 64:int) {")) << spmm;
  const std::string sddmm = ir::to_string(
      lower("def k(S, B, C):\n    return S.multiply(B @ C)\n", "csr[f32, i32], f32[:, ::1], f32[:, ::1]"));
  EXPECT_FALSE(contains(sddmm, "__chunk_worker")) << sddmm;
  // A row's scalar sum (spmv) adds into its element, which the kernel of
  // short rows sets to zero for a long row; the chunk's entries take a warp.
  const std::string spmv = ir::to_string(lower("def k(A, x):\n    return A @ x\n", "csr[f32, i32], f32[::1]"));
  const size_t spmv_chunks = spmv.find("parallel for __chunk_worker_");
  ASSERT_NE(spmv_chunks, std::string::npos) << spmv;
  EXPECT_TRUE(contains(spmv.substr(spmv_chunks), "] += __acc_")) << spmv;
  EXPECT_TRUE(contains(spmv.substr(spmv_chunks), "le(64)")) << spmv;
  EXPECT_TRUE(contains(spmv.substr(0, spmv_chunks), "} else {\n      _t8_3[_i_4] = 0.0:f32\n")) << spmv;
}

}  // namespace
}  // namespace plait
