// The CUDA code generator takes every dtype: unsigned and 8/16-bit integer
// parameters and values compile (the device runtime's helpers are checked
// by tests/gpu on the GPU and by nvcc/NVRTC in tests/gpu/test_cuda_codegen.py).
#include <gtest/gtest.h>

#include "codegen/cuda/codegen_cuda.h"
#include "ir/ir.h"

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

TEST(CudaTypes, UnsignedArrayParameterIsADevicePointerOfItsType) {
  auto a = std::make_shared<ArrayInfo>(ArrayInfo{"idx", ArrayType{ScalarKind::UInt32, 1, Layout::C}, {}, true});
  const codegen::CudaSources out = codegen::generate_cuda(with_body({{nullptr, a}}, {}), CompileOptions{});
  EXPECT_NE(out.host.find("uint32_t* a_idx_data"), std::string::npos) << out.host;
}

TEST(CudaTypes, NarrowPythonIntConversionIsChecked) {
  auto n = std::make_shared<VarInfo>(VarInfo{"n", ScalarType::i64(), {}, true});
  auto t = std::make_shared<VarInfo>(VarInfo{"t", ScalarType::i8(), {}, false});
  Stmt body = Assign::make(t, Cast::make(ScalarType::i8(), VarRef::make(n), true));
  const codegen::CudaSources out =
      codegen::generate_cuda(with_body({{n, nullptr}}, {Declare::make(t), body}), CompileOptions{});
  EXPECT_NE(out.host.find("plait::checked_python_int<int8_t>(v_n"), std::string::npos) << out.host;
  // The device runtime has the same helper and a message for each narrow type.
  EXPECT_NE(out.device.find("checked_python_int(int64_t x"), std::string::npos);
  EXPECT_NE(out.device.find("msg_python_int_out_of_uint64"), std::string::npos);
}

}  // namespace
}  // namespace plait
