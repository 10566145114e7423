// Gathers and scatters (frontend/lower_gathers.cpp, lower_scatters.cpp):
// what the lowering makes of them, checked on the printed IR, and the
// messages of what it refuses.
#include <gtest/gtest.h>

#include <string>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"

namespace plait {
namespace {

Globals numpy_globals() {
  Globals g;
  g["np"].module = "numpy";
  g["plait"].module = "plait";
  return g;
}

std::string ir_text(const std::string& source, const std::string& signature, Target target = Target::CPU) {
  SourceFile file{"k.py", source, 1};
  ast::FunctionDef fn = parse_function(file, "f");
  CompileOptions options;
  options.target = target;
  options.boundscheck = true;
  ir::Function f = lower_to_ir(fn, file, Signature::parse(signature), numpy_globals(), options);
  options.verify_ir = true;
  run_pipeline(f, options);
  return ir::to_string(f);
}

CompileError error_of(const std::string& source, const std::string& signature) {
  try {
    ir_text(source, signature);
  } catch (const CompileError& e) {
    return e;
  }
  ADD_FAILURE() << "no CompileError for:\n" << source;
  return CompileError(ErrorKind::Syntax, "none", SourceFile{}, SourceLoc{});
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Gathers, WholeDimensionLoadsAtTheLoadedIndex) {
  std::string text = ir_text("def f(x, idx):\n    return x[idx] * 2.0\n", "f64[::1], i32[::1]");
  EXPECT_TRUE(contains(text, "x[")) << text;
  EXPECT_FALSE(contains(text, "_gather")) << text;
}

TEST(Gathers, AViewsAxisIsCheckedAgainstTheView) {
  std::string text = ir_text("def f(x, idx):\n    return x[::2][idx]\n", "f64[::1], i64[::1]");
  EXPECT_TRUE(contains(text, "_gather")) << text;
  EXPECT_TRUE(contains(text, "index out of bounds for the axis it indexes")) << text;
}

TEST(Gathers, BothTargetsLowerScattersToAtomicAdds) {
  for (Target target : {Target::CPU, Target::CUDA}) {
    std::string text = ir_text("def f(y, idx, v):\n    np.add.at(y, idx, v)\n", "f64[::1], i64[::1], f64[::1]", target);
    EXPECT_TRUE(contains(text, "atomic")) << text;
  }
}

struct Refusal {
  const char* source;
  const char* signature;
  ErrorKind kind;
  int col;
  const char* message;
};

TEST(Gathers, RefusalsNameWhatIsSupported) {
  const Refusal refusals[] = {
      {"def f(x):\n    return x[x > 0.0]\n", "f64[::1]", ErrorKind::Unsupported, 13,
       "indexing with a boolean array (a mask) is not supported: index with an array of integers"},
      {"def f(A, i, j):\n    return A[i, j]\n", "f64[:, ::1], i64[::1], i64[::1]", ErrorKind::Unsupported, 16,
       "indexing with more than one array in a subscript is not supported: one position may hold an integer array, "
       "the others slices, integers or None"},
      {"def f(y, idx):\n    y[idx] = 1.0\n", "f64[::1], i64[::1]", ErrorKind::Unsupported, 6,
       "assigning through an array index (y[idx] = v, y[idx] += v) is not supported: write a loop over the indices, "
       "or np.add.at(y, idx, v) to accumulate"},
      {"def f(y, idx, v):\n    y[idx] += v\n", "f64[::1], i64[::1], f64[::1]", ErrorKind::Unsupported, 4,
       "assigning through an array index"},
      {"def f(y, idx, v):\n    y[idx] = v\n", "f64[::1], i64[::1], f64[::1]", ErrorKind::Unsupported, 4,
       "assigning through an array index"},
      {"def f(x, idx):\n    return x[idx]\n", "f64[::1], f64[::1]", ErrorKind::Type, 13,
       "arrays used as indices must be of integer type, got numpy.float64"},
      {"def f(y, idx, v):\n    np.add.at(y, idx, v)\n", "i64[::1], i64[::1], f64[::1]", ErrorKind::Type, 22,
       "convert the values to the array's dtype"},
  };
  for (const Refusal& r : refusals) {
    CompileError e = error_of(r.source, r.signature);
    EXPECT_EQ(e.kind(), r.kind) << r.source << e.what();
    EXPECT_EQ(e.loc().line, 2) << r.source;
    EXPECT_EQ(e.loc().col, r.col) << r.source << e.what();
    EXPECT_TRUE(contains(e.message(), r.message)) << e.message();
  }
}

}  // namespace
}  // namespace plait
