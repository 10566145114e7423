// The CUDA code generator takes bool, int32, int64, float32 and float64 only:
// a kernel with an unsigned or 8/16-bit integer value is a compile error
// naming the dtype, whether the value is a parameter or computed inside.
#include <gtest/gtest.h>

#include "codegen/cuda/codegen_cuda.h"
#include "ir/ir.h"
#include "support/diagnostics.h"

namespace plait {
namespace {

using namespace ir;

Function with_body(std::vector<Param> params, std::vector<Stmt> body) {
  Function f;
  f.name = "kernel";
  f.source.path = "/tmp/kernels.py";
  f.params = std::move(params);
  f.body = Block::make(std::move(body));
  return f;
}

// The message of the compile error generate_cuda raises (empty if none).
std::string refusal(const Function& f) {
  std::string message;
  try {
    codegen::generate_cuda(f, CompileOptions{});
  } catch (const CompileError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    message = e.message();
  }
  return message;
}

TEST(CudaTypes, UnsignedArrayParameterIsRefused) {
  auto a = std::make_shared<ArrayInfo>(ArrayInfo{"idx", ArrayType{ScalarKind::UInt32, 1, Layout::C}, {}, true});
  EXPECT_NE(refusal(with_body({{nullptr, a}}, {})).find("does not support uint32"), std::string::npos);
}

TEST(CudaTypes, NarrowValueInsideIsRefused) {
  auto n = std::make_shared<VarInfo>(VarInfo{"n", ScalarType::i64(), {}, true});
  auto t = std::make_shared<VarInfo>(VarInfo{"t", ScalarType::i8(), {}, false});
  Stmt body = Assign::make(t, Cast::make(ScalarType::i8(), VarRef::make(n)));
  EXPECT_NE(refusal(with_body({{n, nullptr}}, {Declare::make(t), body})).find("does not support int8"),
            std::string::npos);
}

}  // namespace
}  // namespace plait
