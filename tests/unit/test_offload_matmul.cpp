// Matrix-product nests as library calls (transforms/offload_matmul), checked
// on the IR after the CUDA pipeline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/cuda/codegen_cuda.h"
#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"
#include "jit/loader.h"
#include "jit/toolchain.h"
#include "runtime/abi.h"

namespace plait {
namespace {

ir::Function compiled(const std::string& source, const std::string& name, const std::string& signature,
                      Target target = Target::CUDA, bool boundscheck = false) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, name);
  Globals globals;
  globals["np"].module = "numpy";
  CompileOptions options;
  options.target = target;
  options.boundscheck = boundscheck;
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), globals, options);
  options.verify_ir = true;
  run_pipeline(f, options);
  return f;
}

std::string lowered(const std::string& source, const std::string& name, const std::string& signature,
                    Target target = Target::CUDA, bool boundscheck = false) {
  return ir::to_string(compiled(source, name, signature, target, boundscheck));
}

std::string nest(const std::string& columns, const std::string& epilogue) {
  return "def mm(A, B, C, s):\n"
         "    #pragma parallel for\n"
         "    for i in range(C.shape[0]):\n"
         "        for j in range(" +
         columns +
         "):\n"
         "            t = 0.0\n"
         "            for r in range(A.shape[1]):\n"
         "                t += A[i, r] * B[r, j]\n"
         "            C[i, j] = " +
         epilogue + "\n";
}

std::string loops(const std::string& epilogue, const std::string& columns = "C.shape[1]") {
  return lowered(nest(columns, epilogue), "mm", "f64[:, ::1], f64[:, ::1], f64[:, ::1], float");
}

TEST(OffloadMatmul, ReturnedProductKeepsItsNestAsTheFallback) {
  const std::string ir = lowered("def mm(A, B):\n    return A @ B\n", "mm", "f32[:, ::1], f32[:, :]");
  EXPECT_NE(ir.find("matmul _tmp_array2[0:A.shape[0], 0:B.shape[1]] = 1.0:f64 * (A @ B)[k < A.shape[1]] else {\n"
                    "    parallel for "),
            std::string::npos)
      << ir;
}

TEST(OffloadMatmul, CoefficientsAreSumsAndProductsOfScalars) {
  EXPECT_NE(loops("s * t").find("= s * (A @ B)[k < A.shape[1]] else"), std::string::npos) << loops("s * t");
  EXPECT_NE(loops("C[i, j] + t * 2.0").find("= 2.0:float * (A @ B)[k < A.shape[1]] + 1.0:f64 * C else"),
            std::string::npos)
      << loops("C[i, j] + t * 2.0");
  // A division by a scalar is a product with its reciprocal.
  EXPECT_NE(loops("t / s").find("= (1.0:f64 / s) * (A @ B)[k < A.shape[1]] else"), std::string::npos) << loops("t / s");
}

TEST(OffloadMatmul, EpiloguesTheLibraryCannotComputeKeepTheLoops) {
  for (const char* epilogue : {"s / t", "t + 1.0", "t * C[i, j]", "t + C[j, i]", "t * A[0, 0]", "abs(t)"})
    EXPECT_EQ(loops(epilogue).find("matmul "), std::string::npos) << epilogue;
}

TEST(OffloadMatmul, TrianglesKeepTheLoopsAndTheCpuHandsOverItsKinds) {
  EXPECT_EQ(loops("t", "i").find("matmul "), std::string::npos);
  // The CPU's BLAS table has gemm, gemmt and trsv: products and triangles go
  // to it, trmm's product in place stays loops.
  EXPECT_NE(lowered("def mm(A, B):\n    return A @ B\n", "mm", "f64[:, ::1], f64[:, ::1]", Target::CPU).find("matmul "),
            std::string::npos);
  const std::string syrk = lowered(
      "def tri(alpha, beta, C, A):\n"
      "    #pragma parallel for\n"
      "    for i in range(A.shape[0]):\n"
      "        C[i, :i + 1] *= beta\n"
      "        for k in range(A.shape[1]):\n"
      "            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]\n",
      "tri", "float, float, f64[:, ::1], f64[:, ::1]", Target::CPU);
  EXPECT_NE(syrk.find("matmul C[0:A.shape[0], 0:A.shape[0]] = alpha * (A @ A.T)"), std::string::npos) << syrk;
  const std::string trmm = lowered(
      "def trmm(alpha, A, B):\n"
      "    for i in range(B.shape[0]):\n"
      "        for j in range(B.shape[1]):\n"
      "            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])\n"
      "    B *= alpha\n",
      "trmm", "float, f64[:, ::1], f64[:, ::1]", Target::CPU);
  EXPECT_EQ(trmm.find("matmul "), std::string::npos) << trmm;
}

std::string triangle(const std::string& update, const std::string& scale = "",
                     const std::string& k_range = "A.shape[1]") {
  return lowered(
      "def tri(alpha, beta, C, A):\n"
      "    #pragma parallel for\n"
      "    for i in range(A.shape[0]):\n" +
          (scale.empty() ? std::string() : "        " + scale + "\n") + "        for k in range(" + k_range +
          "):\n"
          "            " +
          update + "\n",
      "tri", "float, float, f64[:, ::1], f64[:, ::1]");
}

TEST(OffloadMatmul, SyrkIsTheLowerTriangleWithItsRowCondition) {
  const std::string ir = triangle("C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]", "C[i, :i + 1] *= beta");
  EXPECT_NE(ir.find("matmul C[0:A.shape[0], 0:A.shape[0]] = alpha * (A @ A.T)[k < A.shape[1]] + beta * C lower "
                    "where all i: "),
            std::string::npos)
      << ir;
  // The loops stay as the fallback.
  EXPECT_NE(ir.find(" else {\n    parallel for i in range("), std::string::npos) << ir;
}

TEST(OffloadMatmul, TwoProductsAndAnUpperTriangle) {
  const std::string syr2k = triangle("C[i, :i + 1] += A[:i + 1, k] * alpha * A[i, k] + A[:i + 1, k] * beta * A[i, k]");
  EXPECT_NE(syr2k.find("= alpha * (A @ A.T)[k < A.shape[1]] + beta * (A @ A.T) + 1.0:f64 * C lower"), std::string::npos)
      << syr2k;
  const std::string upper = triangle("C[i, i:] -= A[k, i] * A[k, i:]", "", "A.shape[0]");
  EXPECT_NE(upper.find("= (-1.0:f64) * (A.T @ A)[k < A.shape[0]] + 1.0:f64 * C upper"), std::string::npos) << upper;
}

TEST(OffloadMatmul, OtherTriangularNestsKeepTheLoops) {
  for (const char* update : {
           "C[i, :i] += alpha * A[i, k] * A[:i, k]",                // strict triangle
           "C[i, :i + 2] += alpha * A[i, k] * A[:i + 2, k]",        // not a triangle
           "C[i, :i + 1] += alpha * A[i, k] * C[:i + 1, k]",        // reads C elsewhere
           "C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, 0]",        // not indexed by k
           "C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k] + 1.0",  // a constant term
           "C[i, :i + 1] = alpha * A[i, k] * A[:i + 1, k]",         // not an accumulation
       })
    EXPECT_EQ(triangle(update).find("matmul "), std::string::npos) << update;
  EXPECT_EQ(triangle("C[i, :i + 1] += A[i, k] * A[:i + 1, k]", "", "0, A.shape[1], 2").find("matmul "),
            std::string::npos);
  EXPECT_EQ(triangle("C[i, :i + 1] += A[i, k] * A[:i + 1, k]", "C[i, :i] *= beta").find("matmul "), std::string::npos);
}

TEST(OffloadMatmul, CovarianceSplitsItsMirrorIntoALoopAfterTheProduct) {
  const std::string ir = lowered(
      "def cov(M, float_n, data):\n"
      "    cov = np.zeros((M, M), dtype=data.dtype)\n"
      "    #pragma parallel for\n"
      "    for i in range(M):\n"
      "        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)\n"
      "        cov[i:M, i] = cov[i, i:M]\n"
      "    return cov\n",
      "cov", "int, f64, f64[:, ::1]");
  const size_t product = ir.find(
      "  matmul cov[0:M, 0:M] = ((1.0:f64 / (float_n - 1.0:float)) * 1.0:f64) * "
      "(data.T @ data)[k < data.shape[0]] upper where all i: ");
  ASSERT_NE(product, std::string::npos) << ir;
  // The fallback (up to the matmul's closing brace) computes the product
  // only; the mirror, with its temporary, is the next statement.
  const size_t end = ir.find("\n  }\n", product);
  ASSERT_NE(end, std::string::npos);
  const std::string fallback = ir.substr(product, end - product), after = ir.substr(end);
  EXPECT_EQ(fallback.find("empty<"), std::string::npos) << fallback;
  EXPECT_EQ(after.find("\n  }\n  parallel for i in range(0:int, M, 1:int) plan(kernel: "), 0u) << after;
  EXPECT_NE(after.find("empty<"), std::string::npos);
  EXPECT_EQ(after.find("reduction(+:"), std::string::npos) << after;
}

std::string in_place(const std::string& dot, const std::string& rows = "range(B.shape[0])") {
  return lowered(
      "def trmm(A, B):\n"
      "    for i in " +
          rows +
          ":\n"
          "        #pragma parallel for\n"
          "        for j in range(B.shape[1]):\n"
          "            B[i, j] += " +
          dot + "\n",
      "trmm", "f64[:, ::1], f64[:, ::1]");
}

TEST(OffloadMatmul, RowsThatReadTheRowsBelowThemAreATriangularProductInPlace) {
  const std::string transposed = in_place("np.dot(A[i + 1:, i], B[i + 1:, j])");
  EXPECT_NE(transposed.find("matmul B[0:B.shape[0], 0:B.shape[1]] += strict_upper(A.T) @ B in place where all i: "),
            std::string::npos)
      << transposed;
  EXPECT_NE(in_place("A[i, i + 1:] @ B[i + 1:, j]").find("+= strict_upper(A) @ B in place"), std::string::npos);
  for (const char* dot : {"np.dot(A[i:, i], B[i:, j])", "np.dot(A[i + 2:, i], B[i + 2:, j])",
                          "np.dot(A[i + 1:, i], B[i + 1:, 0])", "2.0 * np.dot(A[i + 1:, i], B[i + 1:, j])"})
    EXPECT_EQ(in_place(dot).find("matmul "), std::string::npos) << dot;
  EXPECT_EQ(in_place("np.dot(A[i + 1:, i], B[i + 1:, j])", "range(B.shape[0] - 1, -1, -1)").find("matmul "),
            std::string::npos);
}

// NPBench's symm with `update` as the update of the rows above i, `dot` as
// temp2[j], `row` as the update of row i and `after` after the loop.
ir::Function symm(const std::string& update = "C[:i, j] += alpha * B[i, j] * A[i, :i]",
                  const std::string& row = "C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2",
                  const std::string& pragma = "        #pragma parallel for\n", const std::string& after = "",
                  const std::string& signature = "float, f64[:, ::1], f64[:, ::1], f64[:, ::1]",
                  const std::string& allocation = "np.empty((C.shape[1],), dtype=C.dtype)",
                  Target target = Target::CUDA) {
  return compiled(
      "def symm(alpha, C, A, B):\n"
      "    temp2 = " +
          allocation +
          "\n"
          "    for i in range(C.shape[0]):\n" +
          pragma +
          "        for j in range(C.shape[1]):\n"
          "            " +
          update +
          "\n"
          "            temp2[j] = B[:i, j] @ A[i, :i]\n"
          "        " +
          row + "\n" + after,
      "symm", signature, target);
}

std::string remarks_of(const ir::Function& f) {
  std::string text;
  for (const ir::Remark& r : f.remarks) text += r.message + "\n";
  return text;
}

TEST(OffloadMatmul, SymmRowLoopIsOneSymmetricProduct) {
  for (const std::string pragma : {"        #pragma parallel for\n", ""}) {
    const ir::Function f =
        symm("C[:i, j] += alpha * B[i, j] * A[i, :i]", "C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2", pragma);
    const std::string ir = ir::to_string(f);
    EXPECT_NE(ir.find("matmul C[0:C.shape[0], 0:C.shape[1]] = alpha * (symmetric(lower(A)) @ B) + 1.0:f64 * C where "
                      "all i: "),
              std::string::npos)
        << ir;
    // The row condition checks the slices' extents; the loops stay as the
    // fallback.
    EXPECT_NE(ir.find(" == i)"), std::string::npos) << ir;
    EXPECT_NE(ir.find(" else {\n"), std::string::npos) << ir;
    EXPECT_NE(remarks_of(f).find("C += scalar * symmetric(lower(A)) @ B (the symmetric matrix of A's lower triangle) "
                                 "handed to the BLAS library as one symm"),
              std::string::npos)
        << remarks_of(f);
  }
  // The terms in another order.
  EXPECT_NE(ir::to_string(
                symm("C[:i, j] += B[i, j] * A[i, :i] * alpha", "C[i, :] += alpha * temp2 + alpha * B[i, :] * A[i, i]"))
                .find("symmetric(lower(A))"),
            std::string::npos);
  EXPECT_NE(ir::to_string(symm("C[:i, j] += alpha * B[i, j] * A[i, :i]",
                               "C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2", "", "",
                               "float, f32[:, ::1], "
                               "f32[:, ::1], f32[:, ::1]"))
                .find("symmetric(lower(A))"),
            std::string::npos);
}

TEST(OffloadMatmul, OtherSymmFormsKeepTheLoopsAndSayWhy) {
  struct Case {
    ir::Function f;
    const char* why;
  };
  const std::string row = "C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2";
  const std::string update = "C[:i, j] += alpha * B[i, j] * A[i, :i]";
  const std::string f64 = "float, f64[:, ::1], f64[:, ::1], f64[:, ::1]";
  const Case cases[] = {
      {symm("C[:i, j] += alpha * B[i, j] * A[:i, i]"), "the update of the rows above i is not"},  // A's upper triangle
      {symm("C[:i, j] += alpha * B[i, j] * A[i, :i] * C[i, 0]"), "the update of the rows above i is not"},  // reads C
      {symm(update, "C[i, :] += 2.0 * B[i, :] * A[i, i] + alpha * temp2"), "the update of row i is not"},
      {symm(update, "C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2 * B[i, :]"), "the update of row i is not"},
      {symm(update, row, "", "    return temp2\n"),
       "`temp2` is an argument, has another name or is read after the loop"},
      // float64 temp2 for float32 C: its values are rounded differently.
      {symm(update, row, "", "", "float, f32[:, ::1], f32[:, ::1], f32[:, ::1]", "np.zeros(C.shape[1])"),
       "temp2[j] is not B[:i, j] @ A[i, :i]"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ir::to_string(c.f).find("matmul "), std::string::npos) << ir::to_string(c.f);
    EXPECT_NE(
        remarks_of(c.f).find(std::string("symmetric product kept as loops, not handed to the BLAS library: ") + c.why),
        std::string::npos)
        << remarks_of(c.f);
  }
  // temp2 as an argument: its last values are the caller's to see.
  const ir::Function argument = compiled(
      "def symm(alpha, C, A, B, temp2):\n"
      "    for i in range(C.shape[0]):\n"
      "        for j in range(C.shape[1]):\n"
      "            C[:i, j] += alpha * B[i, j] * A[i, :i]\n"
      "            temp2[j] = B[:i, j] @ A[i, :i]\n"
      "        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2\n",
      "symm", f64 + ", f64[::1]");
  EXPECT_EQ(ir::to_string(argument).find("matmul "), std::string::npos);
  EXPECT_NE(remarks_of(argument).find("`temp2` is an argument, has another name or is read after the loop"),
            std::string::npos);
  // The CPU runs the loops.
  EXPECT_EQ(ir::to_string(symm(update, row, "", "", f64, "np.empty((C.shape[1],), dtype=C.dtype)", Target::CPU))
                .find("matmul "),
            std::string::npos);
}

// What the host part of a kernel asked of a plait_cuda_api whose gemmt
// records its arguments and answers `answer`, and whose launch counts.
struct Calls {
  int32_t answer = 0;
  int gemmt = 0, launches = 0;
  int32_t upper = -1;
  int64_t n = 0, k = 0;
  double alpha = 0, beta = 0;
  std::vector<int64_t> strides;  // a, b, c: row and column strides
};
Calls* g_calls = nullptr;

int32_t fake_gemmt(plait_context*, int32_t, int32_t upper, int64_t n, int64_t k, double alpha, const void*,
                   int64_t a_rs, int64_t a_cs, const void*, int64_t b_rs, int64_t b_cs, double, const void*, int64_t,
                   int64_t, const void*, int64_t, int64_t, double beta, int32_t, void*, int64_t c_rs, int64_t c_cs) {
  Calls& c = *g_calls;
  ++c.gemmt;
  c.upper = upper;
  c.n = n;
  c.k = k;
  c.alpha = alpha;
  c.beta = beta;
  c.strides = {a_rs, a_cs, b_rs, b_cs, c_rs, c_cs};
  return c.answer;
}
int32_t count_launch(plait_context*, int32_t, uint32_t, uint32_t, void**) {
  ++g_calls->launches;
  return 0;
}

// The CUDA host part of syrk on a C of `c_shape` and an A of `a_shape`
// (row-major, values unused: nothing runs on a device).
Calls run_syrk_host(int64_t c_rows, int64_t c_cols, int64_t a_rows, int64_t a_cols, int32_t answer) {
  static const std::string so = [] {
    const ir::Function f = compiled(
        "def syrk(alpha, beta, C, A):\n"
        "    #pragma parallel for\n"
        "    for i in range(A.shape[0]):\n"
        "        C[i, :i + 1] *= beta\n"
        "        for k in range(A.shape[1]):\n"
        "            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]\n",
        "syrk", "float, float, f64[:, ::1], f64[:, ::1]");
    const std::string dir = ::testing::TempDir() + "plait_offload_matmul_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/syrk.cpp") << codegen::generate_cuda(f, CompileOptions{}).host;
    jit::build_shared_library(jit::host_toolchain(CompileOptions{}), dir + "/syrk.cpp", dir + "/syrk.so",
                              dir + "/syrk.log");
    return dir + "/syrk.so";
  }();
  static const std::shared_ptr<LoadedLibrary> library = LoadedLibrary::open(so);
  const auto entry = reinterpret_cast<plait_entry_fn>(library->symbol(PLAIT_ENTRY_SYMBOL));
  Calls calls;
  calls.answer = answer;
  g_calls = &calls;
  std::vector<double> c(static_cast<size_t>(c_rows * c_cols)), a(static_cast<size_t>(a_rows * a_cols));
  plait_array c_array{c.data(), {c_rows, c_cols}, {c_cols, 1}}, a_array{a.data(), {a_rows, a_cols}, {a_cols, 1}};
  double alpha = 1.5, beta = 1.25;
  std::vector<unsigned char> scratch(PLAIT_CUDA_SCRATCH_BYTES);
  plait_cuda_api api{};
  api.launch = &count_launch;
  api.gemmt = &fake_gemmt;
  api.scratch = scratch.data();
  plait_context ctx{};
  ctx.num_threads = 1;
  ctx.cuda = &api;
  std::vector<void*> args = {&alpha, &beta, &c_array, &a_array};
  EXPECT_EQ(entry(args.data(), nullptr, &ctx), 0) << ctx.error_message;
  return calls;
}

TEST(OffloadMatmul, HostChecksEveryRowThenCallsGemmtOrRunsTheLoops) {
  const Calls done = run_syrk_host(7, 7, 7, 3, 0);
  EXPECT_EQ(done.gemmt, 1);
  EXPECT_EQ(done.launches, 0);
  EXPECT_EQ(done.upper, 0);
  EXPECT_EQ(done.n, 7);
  EXPECT_EQ(done.k, 3);
  EXPECT_EQ(done.alpha, 1.5);
  EXPECT_EQ(done.beta, 1.25);
  // A, then A's transpose, then C (wider than the triangle: its row stride).
  EXPECT_EQ(done.strides, (std::vector<int64_t>{3, 1, 1, 3, 7, 1}));
  EXPECT_EQ(run_syrk_host(5, 9, 5, 2, 0).strides, (std::vector<int64_t>{2, 1, 1, 2, 9, 1}));
  // Declined: the loops run.
  const Calls declined = run_syrk_host(7, 7, 7, 3, 1);
  EXPECT_EQ(declined.gemmt, 1);
  EXPECT_GT(declined.launches, 0);
  // C narrower than the triangle: the slices are clamped (the loops then
  // raise NumPy's broadcast error), so the library is not asked.
  const Calls clamped = run_syrk_host(7, 4, 7, 3, 0);
  EXPECT_EQ(clamped.gemmt, 0);
  EXPECT_GT(clamped.launches, 0);
}

}  // namespace
}  // namespace plait
