// Matrix-product nests as library calls (transforms/offload_matmul), checked
// on the IR after the CUDA pipeline.
#include <gtest/gtest.h>

#include <string>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

std::string lowered(const std::string& source, const std::string& name, const std::string& signature,
                    Target target = Target::CUDA) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, name);
  Globals globals;
  globals["np"].module = "numpy";
  CompileOptions options;
  options.target = target;
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), globals, options);
  run_pipeline(f, options);
  return ir::to_string(f);
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
}

TEST(OffloadMatmul, EpiloguesTheLibraryCannotComputeKeepTheLoops) {
  for (const char* epilogue : {"t / s", "t + 1.0", "t * C[i, j]", "t + C[j, i]", "t * A[0, 0]", "abs(t)"})
    EXPECT_EQ(loops(epilogue).find("matmul "), std::string::npos) << epilogue;
}

TEST(OffloadMatmul, TrianglesAndTheCpuKeepTheLoops) {
  EXPECT_EQ(loops("t", "i").find("matmul "), std::string::npos);
  EXPECT_EQ(lowered("def mm(A, B):\n    return A @ B\n", "mm", "f64[:, ::1], f64[:, ::1]", Target::CPU).find("matmul "),
            std::string::npos);
}

}  // namespace
}  // namespace plait
