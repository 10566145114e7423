// The interchange of reductions that read down a column
// (transforms/interchange_reductions), checked on the IR after the pipeline.
#include <gtest/gtest.h>

#include <string>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

ir::Function lower(const std::string& source, const std::string& name, const std::string& signature,
                   CompileOptions options = {}) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, name);
  Globals globals;
  globals["np"].module = "numpy";
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), globals, options);
  options.verify_ir = true;
  run_pipeline(f, options);
  return f;
}

std::string remarks_of(const ir::Function& f) {
  std::string text;
  for (const ir::Remark& r : f.remarks)
    if (r.pass == "interchange_reductions") text += r.message + "\n";
  return text;
}

TEST(Interchange, MatrixProductRunsBlocksOfRowsInsideChunksOfColumns) {
  ir::Function f = lower("def matmul(A, B):\n    return A @ B\n", "matmul", "f64[:, ::1], f64[:, ::1]");
  EXPECT_EQ(
      ir::to_string(f),
      "def matmul(A: f64[:, ::1], B: f64[:, ::1]) -> f64[:, ::1] {\n"
      "  let _tmp_array2:f64[:, ::1]\n"
      "  assert (A.shape[1] == B.shape[0]), \"matmul: the inner dimensions of the operands differ\"\n"
      "  _tmp_array2 = empty<f64[:, ::1]>((A.shape[0], B.shape[1]))\n"
      "  matmul _tmp_array2[0:A.shape[0], 0:B.shape[1]] = 1.0:f64 * (A @ B)[k < A.shape[1]] else {\n"
      "    for _i4_chunk in range(0:int, B.shape[1], 256:int) plan(one parallel region for its 1 parallel loop(s)) "
      "plan(team: for _i3_block) {\n"
      // _i3 is assigned by the serial row loops inside each block: private.
      "      parallel for _i3_block in range(0:int, A.shape[0], 4:int) plan(omp: as scheduled) private(_i3) {\n"
      "        let _tmp6_buf:f64[::1]\n"
      "        _tmp6_buf = empty<f64[::1]>((1024:i64,))\n"
      "        if ((_i3_block + 4:int) <= A.shape[0]) {\n"
      "          simd for _i4 in range(_i4_chunk, min((_i4_chunk + 256:int), B.shape[1]), 1:int) {\n"
      "            _tmp6_buf[(_i4 - _i4_chunk)] = 0.0:f64\n"
      "            _tmp6_buf[(256:int + (_i4 - _i4_chunk))] = 0.0:f64\n"
      "            _tmp6_buf[(512:int + (_i4 - _i4_chunk))] = 0.0:f64\n"
      "            _tmp6_buf[(768:int + (_i4 - _i4_chunk))] = 0.0:f64\n"
      "          }\n"
      "          for _r5 in range(0:int, A.shape[1], 1:int) {\n"
      "            simd for _i4 in range(_i4_chunk, min((_i4_chunk + 256:int), B.shape[1]), 1:int) {\n"
      "              _tmp6_buf[(_i4 - _i4_chunk)] = (_tmp6_buf[(_i4 - _i4_chunk)] + (A[_i3_block, _r5] * B[_r5, "
      "_i4]))\n"
      "              _tmp6_buf[(256:int + (_i4 - _i4_chunk))] = (_tmp6_buf[(256:int + (_i4 - _i4_chunk))] + "
      "(A[(_i3_block + 1:int), _r5] * B[_r5, _i4]))\n"
      "              _tmp6_buf[(512:int + (_i4 - _i4_chunk))] = (_tmp6_buf[(512:int + (_i4 - _i4_chunk))] + "
      "(A[(_i3_block + 2:int), _r5] * B[_r5, _i4]))\n"
      "              _tmp6_buf[(768:int + (_i4 - _i4_chunk))] = (_tmp6_buf[(768:int + (_i4 - _i4_chunk))] + "
      "(A[(_i3_block + 3:int), _r5] * B[_r5, _i4]))\n"
      "            }\n"
      "          }\n"
      "        } else {\n"
      "          for _i3 in range(_i3_block, A.shape[0], 1:int) {\n"
      "            simd for _i4 in range(_i4_chunk, min((_i4_chunk + 256:int), B.shape[1]), 1:int) {\n"
      "              _tmp6_buf[(((_i3 - _i3_block) * 256:int) + (_i4 - _i4_chunk))] = 0.0:f64\n"
      "            }\n"
      "            for _r5 in range(0:int, A.shape[1], 1:int) {\n"
      "              simd for _i4 in range(_i4_chunk, min((_i4_chunk + 256:int), B.shape[1]), 1:int) {\n"
      "                _tmp6_buf[(((_i3 - _i3_block) * 256:int) + (_i4 - _i4_chunk))] = (_tmp6_buf[(((_i3 - _i3_block) "
      "* "
      "256:int) + (_i4 - _i4_chunk))] + (A[_i3, _r5] * B[_r5, _i4]))\n"
      "              }\n"
      "            }\n"
      "          }\n"
      "        }\n"
      "        for _i3 in range(_i3_block, min((_i3_block + 4:int), A.shape[0]), 1:int) {\n"
      "          for _i4 in range(_i4_chunk, min((_i4_chunk + 256:int), B.shape[1]), 1:int) {\n"
      "            let _tmp6:f64\n"
      "            _tmp6 = _tmp6_buf[(((_i3 - _i3_block) * 256:int) + (_i4 - _i4_chunk))]\n"
      "            _tmp_array2[_i3, _i4] = _tmp6\n"
      "          }\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "  return _tmp_array2\n"
      "}\n");
  EXPECT_EQ(remarks_of(f),
            "loop over '_i4': the reduction over '_r5' runs outside chunks of 256 iterations and blocks of 4 "
            "iterations of '_i3', reading 'B' along its contiguous dimension\n");
}

TEST(Interchange, SerialRowLoopAllocatesItsBufferOncePerRow) {
  const char* src =
      "def mm(A, B, C):\n"
      "    for i in range(A.shape[0]):\n"
      "        for j in range(B.shape[1]):\n"
      "            s = 0.0\n"
      "            for k in range(A.shape[1]):\n"
      "                s += A[i, k] * B[k, j]\n"
      "            C[i, j] = s\n";
  CompileOptions unchecked;
  unchecked.boundscheck = false;
  const std::string text = ir::to_string(lower(src, "mm", "f32[:, ::1], f32[:, ::1], f32[:, ::1]", unchecked));
  EXPECT_NE(text.find("  for i in range(0:int, A.shape[0], 1:int) {\n"
                      "    let s_buf:f32[::1]\n"
                      "    s_buf = empty<f32[::1]>((1024:i64,))\n"
                      "    for j_chunk in range(0:int, B.shape[1], 1024:int) {\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("        s_buf[(j - j_chunk)] = (s_buf[(j - j_chunk)] + (A[i, k] * B[k, j]))\n"), std::string::npos)
      << text;
}

TEST(Interchange, MatrixVectorProductKeepsItsReductionInnermost) {
  ir::Function f = lower("def matvec(A, x):\n    return A @ x\n", "matvec", "f64[:, ::1], f64[::1]");
  EXPECT_EQ(remarks_of(f), "loop over '_i3': the reduction over '_r4' stays innermost: it reads 'A' contiguously "
                           "along '_r4'\n");
  EXPECT_NE(ir::to_string(f).find("simd for _r4 in range(0:int, A.shape[1], 1:int) reduction(+: _tmp5)"),
            std::string::npos);
}

TEST(Interchange, ParallelColumnLoopRunsItsChunksInParallel) {
  ir::Function f = lower("def vecmat(x, A):\n    return x @ A\n", "vecmat", "f32[::1], f32[:, ::1]");
  const std::string text = ir::to_string(f);
  // float32: 512 accumulators of 4 bytes; the buffer belongs to one chunk,
  // and _i3, assigned by the loops over the chunk, to one thread.
  EXPECT_NE(text.find("parallel for _i3_chunk in range(0:int, A.shape[1], 512:int) "
                      "plan(omp: per-thread temporaries: _tmp5_buf) private(_i3) {\n"
                      "    let _tmp5_buf:f32[::1]\n"
                      "    _tmp5_buf = empty<f32[::1]>((512:i64,))\n"),
            std::string::npos)
      << text;
}

// The checked copy of a nest whose rows the analysis cannot bound keeps its
// reduction innermost; the unchecked copy runs it outside chunks.
TEST(Interchange, BoundsChecksKeepTheOrderOfErrors) {
  const char* src =
      "def mm(A, B, C, n):\n"
      "    for i in range(n):\n"
      "        for j in range(B.shape[1]):\n"
      "            s = 0.0\n"
      "            for k in range(A.shape[1]):\n"
      "                s += A[i, k] * B[k, j]\n"
      "            C[i, j] = s\n";
  CompileOptions options;
  options.boundscheck = true;
  ir::Function f = lower(src, "mm", "f64[:, ::1], f64[:, ::1], f64[:, ::1], int", options);
  EXPECT_NE(remarks_of(f).find("stays innermost: the reduction may raise an error"), std::string::npos)
      << remarks_of(f);
  EXPECT_NE(remarks_of(f).find("runs outside chunks"), std::string::npos) << remarks_of(f);
}

}  // namespace
}  // namespace plait
