// The CPU back end: IR -> one C++ translation unit (abi.h + plait_runtime.h +
// the kernel), compiled by the system compiler with OpenMP.
//
// Shape of the output. Every argument is unpacked into typed locals; each
// array becomes separate locals for its data pointer, extents and strides
// (never a struct whose address escapes) so that the compiler keeps them in
// registers and vectorises; the unit stride of a C/F layout is the constant 1
// in the index arithmetic. Loops take the canonical form
// `for (int64_t k = 0; k < trip; ++k) { var = begin + k * step; ... }` with
// begin/end/step evaluated once before the loop, which is what OpenMP's
// `parallel for`/`simd` need. Run-time errors go through plait::raise_error
// (the first one wins) and stop the kernel as Python would: the code tests
// ctx->error_kind after a statement that may raise, before its effect, and
// returns (or leaves a parallel loop's iteration, whose other threads stop at
// their next one); the entry point returns ctx->error_kind.
#include "codegen/cpu/codegen_cpp.h"

#include "codegen/cpu/cpp_emitter.h"

namespace plait::codegen {

std::string generate_cpp(const Function& function, const CompileOptions& /*options*/, std::vector<Remark>* remarks) {
  cpu::CppEmitter emitter(function);
  std::string source = emitter.run();
  if (remarks) *remarks = emitter.remarks();
  return source;
}

}  // namespace plait::codegen
