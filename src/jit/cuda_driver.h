// The CUDA driver API (libcuda.so.1), NVRTC (libnvrtc.so.*) and cuBLAS, loaded with
// dlopen on first use so that plait builds, imports and runs CPU kernels on
// machines without CUDA. Only the few entry points plait needs are declared,
// with the driver's own C types spelled as plain integers and pointers, so no
// CUDA header is needed at build time either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace plait::jit::cuda {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUdeviceptr = unsigned long long;
using nvrtcResult = int;
using nvrtcProgram = void*;

// The driver entry points (each null until load_driver() succeeded).
struct DriverApi {
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext* context) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext context) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice* device) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                             unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream,
                             void** params, void** extra) = nullptr;
  CUresult (*cuLaunchCooperativeKernel)(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                        unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                                        CUstream stream, void** params) = nullptr;
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int* blocks, CUfunction f, int block_size,
                                                          size_t dynamic_shared_bytes) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr* pointer, size_t bytes) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr pointer) = nullptr;
  CUresult (*cuMemAllocHost)(void** pointer, size_t bytes) = nullptr;  // page-locked host memory
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char** text) = nullptr;
  // Stream-ordered allocation (CUDA 11.2 on): null where the driver lacks it.
  CUresult (*cuMemAllocAsync)(CUdeviceptr* pointer, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemFreeAsync)(CUdeviceptr pointer, CUstream stream) = nullptr;
  CUresult (*cuDeviceGetDefaultMemPool)(void** pool, CUdevice device) = nullptr;
  CUresult (*cuMemPoolSetAttribute)(void* pool, int attribute, void* value) = nullptr;
  // Dynamic shared memory beyond 48 KiB (CUDA 9 on): null where the driver lacks it.
  CUresult (*cuFuncSetAttribute)(CUfunction f, int attribute, int value) = nullptr;
};

struct NvrtcApi {
  nvrtcResult (*nvrtcVersion)(int* major, int* minor) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* program, const char* source, const char* name, int num_headers,
                                    const char* const* headers, const char* const* include_names) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* program) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int num_options, const char* const* options) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char* log) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram program, size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram program, char* ptx) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char* cubin) = nullptr;
  nvrtcResult (*nvrtcGetSupportedArchs)(int* archs) = nullptr;
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int* count) = nullptr;
  const char* (*nvrtcGetErrorString)(nvrtcResult result) = nullptr;
};

// cuBLAS, for matrix products (ir::MatMul). Handles are opaque pointers;
// operations are CUBLAS_OP_N = 0 and CUBLAS_OP_T = 1, fill modes
// CUBLAS_FILL_MODE_LOWER = 0 and CUBLAS_FILL_MODE_UPPER = 1; status 0 is
// success.
using cublasStatus = int;
using cublasHandle = void*;
struct CublasApi {
  cublasStatus (*cublasCreate_v2)(cublasHandle* handle) = nullptr;
  cublasStatus (*cublasSetStream_v2)(cublasHandle handle, CUstream stream) = nullptr;
  cublasStatus (*cublasSgemm_v2)(cublasHandle handle, int transa, int transb, int m, int n, int k, const float* alpha,
                                 const float* a, int lda, const float* b, int ldb, const float* beta, float* c,
                                 int ldc) = nullptr;
  cublasStatus (*cublasDgemm_v2)(cublasHandle handle, int transa, int transb, int m, int n, int k,
                                 const double* alpha, const double* a, int lda, const double* b, int ldb,
                                 const double* beta, double* c, int ldc) = nullptr;
  // The `uplo` triangle (lower 0, upper 1) of alpha op(A) op(B)^T + beta C,
  // op(A) and op(B) n x k: a product known to be symmetric, or any product
  // of which one triangle is wanted.
  cublasStatus (*cublasSsyrkx)(cublasHandle handle, int uplo, int trans, int n, int k, const float* alpha,
                               const float* a, int lda, const float* b, int ldb, const float* beta, float* c,
                               int ldc) = nullptr;
  cublasStatus (*cublasDsyrkx)(cublasHandle handle, int uplo, int trans, int n, int k, const double* alpha,
                               const double* a, int lda, const double* b, int ldb, const double* beta, double* c,
                               int ldc) = nullptr;
  // C = alpha op(T) B (side left 0) or alpha B op(T) (side right 1), T the
  // `uplo` triangle of A, with a diagonal of ones (diag 1) or A's (diag 0);
  // C may be B (in place).
  cublasStatus (*cublasStrmm_v2)(cublasHandle handle, int side, int uplo, int trans, int diag, int m, int n,
                                 const float* alpha, const float* a, int lda, const float* b, int ldb, float* c,
                                 int ldc) = nullptr;
  cublasStatus (*cublasDtrmm_v2)(cublasHandle handle, int side, int uplo, int trans, int diag, int m, int n,
                                 const double* alpha, const double* a, int lda, const double* b, int ldb, double* c,
                                 int ldc) = nullptr;
  // C = alpha S B + beta C (side left 0, S m x m) or alpha B S + beta C
  // (side right 1, S n x n), S the symmetric matrix of A's `uplo` triangle.
  cublasStatus (*cublasSsymm_v2)(cublasHandle handle, int side, int uplo, int m, int n, const float* alpha,
                                 const float* a, int lda, const float* b, int ldb, const float* beta, float* c,
                                 int ldc) = nullptr;
  cublasStatus (*cublasDsymm_v2)(cublasHandle handle, int side, int uplo, int m, int n, const double* alpha,
                                 const double* a, int lda, const double* b, int ldb, const double* beta, double* c,
                                 int ldc) = nullptr;
  // x = op(T)^-1 x (T n x n, the `uplo` triangle of A, diagonal as in trmm).
  cublasStatus (*cublasStrsv_v2)(cublasHandle handle, int uplo, int trans, int diag, int n, const float* a, int lda,
                                 float* x, int incx) = nullptr;
  cublasStatus (*cublasDtrsv_v2)(cublasHandle handle, int uplo, int trans, int diag, int n, const double* a, int lda,
                                 double* x, int incx) = nullptr;
  // y = x (n elements).
  cublasStatus (*cublasScopy_v2)(cublasHandle handle, int n, const float* x, int incx, float* y, int incy) = nullptr;
  cublasStatus (*cublasDcopy_v2)(cublasHandle handle, int n, const double* x, int incx, double* y, int incy) = nullptr;
};

// The loaded driver, or null; `why` then says what is missing. Loading is
// attempted once per process ($PLAIT_LIBCUDA names the library to try first).
const DriverApi* driver(std::string* why = nullptr);

// The loaded NVRTC, or null with the reason in `why`. Tried in order:
// $PLAIT_NVRTC, libnvrtc.so, libnvrtc.so.13/.12/.11 on the loader's path,
// then the same names under $CUDA_HOME/lib64, $CUDA_PATH/lib64 and
// /usr/local/cuda/lib64.
const NvrtcApi* nvrtc(std::string* why = nullptr);

// The loaded cuBLAS, or null with the reason in `why`. Tried in order:
// $PLAIT_CUBLAS, a libcublas.so.13/.12 the process has loaded already (by
// PyTorch or CuPy: one copy of the library, with its own state), the same
// names on the loader's path, then under $CUDA_HOME/lib64, $CUDA_PATH/lib64
// and /usr/local/cuda/lib64.
const CublasApi* cublas(std::string* why = nullptr);

// "CUDA_ERROR_OUT_OF_MEMORY: out of memory" for a driver result code.
std::string error_text(CUresult result);

// "12.4" for the loaded NVRTC, part of the cache key of device code.
std::string nvrtc_version();

// The architectures NVRTC can compile for (e.g. 75, 80, 90), ascending.
std::vector<int> nvrtc_supported_archs();

struct NvrtcOutput {
  std::string ptx;
  std::string cubin;  // empty when `arch` was a virtual architecture
  std::string log;
};

// Compiles CUDA C++ `source` for `arch` (90 -> sm_90; `virtual_arch` picks
// compute_90 and yields PTX only). `options` are extra NVRTC flags.
// Throws InternalError with NVRTC's log when the compilation fails.
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, int arch, bool virtual_arch,
                          const std::vector<std::string>& options);

}  // namespace plait::jit::cuda
