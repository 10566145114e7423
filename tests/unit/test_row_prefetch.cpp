// The CPU's row prefetching (transforms/cpu/plan_row_prefetch.h), checked on
// the generated C++ of NumPy kernels after the whole pipeline.
#include <gtest/gtest.h>

#include <string>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

constexpr const char* kSoftmax =
    "def softmax(x):\n"
    "    m = np.max(x, axis=-1, keepdims=True)\n"
    "    e = np.exp(x - m)\n"
    "    return e / np.sum(e, axis=-1, keepdims=True)\n";

// `name` in `source` for `signature` after the CPU pipeline.
ir::Function lowered(const std::string& source, const std::string& name, const std::string& signature) {
  Globals globals;
  globals["np"].module = "numpy";
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, name);
  CompileOptions options;
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), globals, options);
  options.verify_ir = true;
  run_pipeline(f, options);
  return f;
}

// The C++ of `name` in `source` for `signature`, from the kernel's entry on.
std::string cpp_of(const std::string& source, const std::string& name, const std::string& signature) {
  const std::string cpp = generate_source(lowered(source, name, signature), CompileOptions{});
  return cpp.substr(cpp.find("plait_kernel_entry(void** args"));
}

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The line of `text` that holds position `at`.
std::string line_at(const std::string& text, size_t at) {
  const size_t begin = text.rfind('\n', at) + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

TEST(RowPrefetch, SoftmaxRunsItsExpPassInChunksThatPrefetchTheOtherPasses) {
  const std::string cpp = cpp_of(kSoftmax, "softmax", "f32[:, ::1]");
  // One chunk loop, around the exp pass: after the maximum, before the division.
  ASSERT_EQ(count_of(cpp, "for (int64_t p_chunk"), 1) << cpp;
  const size_t max_pass = cpp.find("#pragma omp simd reduction(PLAIT_FLOAT_MAX: ");
  const size_t chunks = cpp.find("for (int64_t p_chunk");
  const size_t exp_pass = cpp.find("#pragma omp simd reduction(+: ");
  const size_t division = cpp.find("#pragma omp simd\n");
  ASSERT_NE(max_pass, std::string::npos) << cpp;
  ASSERT_NE(exp_pass, std::string::npos) << cpp;
  ASSERT_NE(division, std::string::npos) << cpp;
  EXPECT_LT(max_pass, chunks) << cpp;
  EXPECT_LT(chunks, exp_pass) << cpp;
  EXPECT_LT(exp_pass, division) << cpp;
  // The next row of x, read, unless this is the last row; this row of the
  // result, for writing; both before the vector loop of the chunk.
  ASSERT_EQ(count_of(cpp, "__builtin_prefetch("), 2) << cpp;
  const std::string read = line_at(cpp, cpp.find(", 0, 3);"));
  const std::string write = line_at(cpp, cpp.find(", 1, 3);"));
  EXPECT_NE(read.find("if (p_k"), std::string::npos) << read;
  EXPECT_NE(read.find(" + 1 < p_trip"), std::string::npos) << read;
  EXPECT_NE(read.find("a_x_data) + static_cast<uintptr_t>((v__i7 + p_step"), std::string::npos) << read;
  EXPECT_NE(read.find("+= static_cast<int64_t>(64 / sizeof(float))"), std::string::npos) << read;
  EXPECT_EQ(write.find("if ("), std::string::npos) << write;
  EXPECT_NE(write.find("a__tmp_array18_data) + static_cast<uintptr_t>(v__i7 * "), std::string::npos) << write;
  EXPECT_LT(cpp.find(", 1, 3);"), exp_pass) << cpp;
  // The vector loop runs the chunk's iterations.
  const std::string exp_loop = line_at(cpp, cpp.find('\n', exp_pass) + 1);
  EXPECT_NE(exp_loop.find(" = p_chunk"), std::string::npos) << exp_loop;
  EXPECT_NE(exp_loop.find(" < p_chunk_end"), std::string::npos) << exp_loop;
}

TEST(RowPrefetch, OnlyUnitStrideRowsArePrefetched) {
  // Columns of an F-layout x are strided: only the C-layout result is.
  const std::string cpp = cpp_of(kSoftmax, "softmax", "f32[::1, :]");
  EXPECT_EQ(count_of(cpp, ", 0, 3);"), 0) << cpp;
  EXPECT_EQ(count_of(cpp, ", 1, 3);"), 1) << cpp;
  // A 3-D softmax: the loop over rows is a serial loop in the parallel one.
  const std::string cube = cpp_of(kSoftmax, "softmax", "f64[:, :, ::1]");
  EXPECT_EQ(count_of(cube, ", 0, 3);"), 1) << cube;
  EXPECT_NE(cube.find("(v__i8 + p_step"), std::string::npos) << cube;
}

// The planning pass records its decision on the loop over rows, where the
// IR's dump shows it.
TEST(RowPrefetch, ThePlanIsRecordedOnTheLoopOverRows) {
  const std::string text = ir::to_string(lowered(kSoftmax, "softmax", "f32[:, ::1]"));
  ASSERT_EQ(count_of(text, " plan(prefetch from the chunks of the loop over "), 1) << text;
  EXPECT_NE(text.find("the next row of x"), std::string::npos) << text;
}

TEST(RowPrefetch, NothingWithoutSeveralPassesAndVectorMath) {
  const char* one_pass =
      "def f(x):\n"
      "    return np.exp(x)\n";
  EXPECT_EQ(count_of(cpp_of(one_pass, "f", "f32[:, ::1]"), "__builtin_prefetch"), 0);
  const char* no_vector_math =
      "def f(A):\n"
      "    return A / A.sum(axis=1, keepdims=True)\n";
  EXPECT_EQ(count_of(cpp_of(no_vector_math, "f", "f64[:, ::1]"), "__builtin_prefetch"), 0);
}

}  // namespace
}  // namespace plait
