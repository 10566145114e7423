// The state the CUDA runtime's parts share: the process's runtime (context,
// scratch pools, cuBLAS handles) and a call's state behind the plait_cuda_api
// table, with the table's cuBLAS entries (cuda_blas.cpp). Private to jit/.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "jit/cuda_driver.h"
#include "jit/cuda_runtime.h"
#include "runtime/abi.h"
#include "runtime/device_errors.h"

namespace plait::jit::cuda_call {

using namespace cuda;

// A call's scratch buffer on the GPU, and page-locked host memory the
// device error record is read back into (a copy to pageable memory costs
// the call several microseconds more). The record is zero whenever the
// buffer is in the pool: cleared when allocated and after an error is read.
struct ScratchBuffer {
  CUdeviceptr device = 0;
  runtime::DeviceErrorRecord* record = nullptr;
};

struct Runtime {
  const DriverApi* d = nullptr;
  CUcontext context = nullptr;
  CudaDeviceInfo device;
  bool cooperative_launch = false;  // CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
  int shared_bytes_optin = 0;       // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  int l2_bytes = 0;                 // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
  // Stream-ordered allocation from the device's default pool, which keeps
  // freed memory for later allocations instead of returning it to the driver.
  bool ordered_allocation = false;
  std::mutex scratch_mutex;
  // Free scratch buffers by the stream of the call that used them last: the
  // kernels of that call may still be running, so a buffer is reused only by
  // a call on the same stream, whose work the stream orders after theirs.
  std::map<CUstream, std::vector<ScratchBuffer>> scratch_pool;
  // A cuBLAS handle per stream (each has its own workspace, which kernels
  // running at once on two streams must not share); never destroyed.
  std::mutex cublas_mutex;
  std::map<CUstream, cublasHandle> cublas_handles;
};

struct CallState {
  Runtime* rt;
  const CudaModule* module;
  CUstream stream;
  // For a kernel whose device code can record errors: the device error
  // record, its page-locked copy and the kernel's assertion messages. Each
  // copy to the host reads the record too (in the same wait for the
  // stream), so that the host part stops at its first synchronisation after
  // device code failed. Null for other kernels.
  CUdeviceptr record_device = 0;
  runtime::DeviceErrorRecord* record = nullptr;
  const std::vector<std::string>* assert_messages = nullptr;
  // Whether the call launched a kernel whose device code may record an
  // error: only then does it wait for the stream to read the record at its
  // end (a call that launched none returns as soon as its work is queued).
  const std::vector<bool>* kernel_raises = nullptr;
  bool raising_launched = false;
};

inline CallState& state_of(plait_context* ctx) {
  return *static_cast<CallState*>(ctx->cuda->state);
}

// Records a run-time error of the call in ctx, unless one is recorded.
void record_error(plait_context* ctx, int32_t kind, const std::string& message);

// The cuBLAS entries of plait_cuda_api (runtime/abi.h): each returns 0 when
// it ran the product, 1 when it declines (the loops run instead), -1 after
// recording an error.
int32_t api_gemm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                 int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double beta,
                 int32_t beta_reads_c, void* c, int64_t c_rs, int64_t c_cs);
int32_t api_gemmt(plait_context* ctx, int32_t dtype, int32_t upper, int64_t n, int64_t k, double alpha, const void* a,
                  int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double alpha2, const void* a2,
                  int64_t a2_rs, int64_t a2_cs, const void* b2, int64_t b2_rs, int64_t b2_cs, double beta,
                  int32_t beta_reads_c, void* c, int64_t c_rs, int64_t c_cs);
int32_t api_trmm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, const void* a, int64_t a_rs, int64_t a_cs,
                 void* b, int64_t b_rs, int64_t b_cs);
int32_t api_trsv(plait_context* ctx, int32_t dtype, int64_t n, const void* a, int64_t a_rs, int64_t a_cs, const void* b,
                 int64_t b_stride, void* x, int64_t x_stride);
int32_t api_symm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, double alpha, const void* a, int64_t a_rs,
                 int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double beta, int32_t beta_reads_c, void* c,
                 int64_t c_rs, int64_t c_cs);

}  // namespace plait::jit::cuda_call
