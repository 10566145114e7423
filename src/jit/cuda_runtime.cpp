// The CUDA runtime of plait: context, device code builds and their disk
// cache, module loading, the per-call plait_cuda_api, device memory.
#include "jit/cuda_runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "jit/cuda_driver.h"
#include "jit/disk_cache.h"
#include "jit/sha256.h"
#include "runtime/device_errors.h"
#include "support/diagnostics.h"
#include "support/version.h"

namespace plait::jit {
namespace fs = std::filesystem;
using namespace cuda;

namespace {

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

// The process's runtime, or null with the reason in `why`.
Runtime* runtime(std::string* why) {
  static Runtime rt;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    rt.d = driver(&failure);
    if (!rt.d) return;
    const DriverApi& d = *rt.d;
    CUcontext current = nullptr;
    CUdevice device = 0;
    CUresult result = d.cuCtxGetCurrent(&current);
    if (result == 0 && current != nullptr) {
      result = d.cuCtxGetDevice(&device);
    } else {
      result = d.cuDeviceGet(&device, 0);
      if (result == 0) result = d.cuDevicePrimaryCtxRetain(&current, device);
    }
    if (result != 0 || current == nullptr) {
      failure = "cannot set up a CUDA context: " + error_text(result);
      rt.d = nullptr;
      return;
    }
    rt.context = current;
    rt.device.ordinal = device;
    int major = 0, minor = 0;
    constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76, kMultiprocessorCount = 16,
                  kCooperativeLaunch = 95, kSharedBytesOptin = 97, kL2CacheSize = 38;
    int cooperative = 0;
    if (d.cuDeviceGetAttribute(&cooperative, kCooperativeLaunch, device) == 0) rt.cooperative_launch = cooperative != 0;
    if (d.cuDeviceGetAttribute(&rt.shared_bytes_optin, kSharedBytesOptin, device) != 0) rt.shared_bytes_optin = 0;
    if (d.cuDeviceGetAttribute(&rt.l2_bytes, kL2CacheSize, device) != 0) rt.l2_bytes = 0;
    d.cuDeviceGetAttribute(&major, kComputeCapabilityMajor, device);
    d.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, device);
    d.cuDeviceGetAttribute(&rt.device.multiprocessors, kMultiprocessorCount, device);
    rt.device.arch = major * 10 + minor;
    char name[256] = {};
    if (d.cuDeviceGetName(name, sizeof name - 1, device) == 0) rt.device.name = name;
    constexpr int kMemoryPoolsSupported = 115, kReleaseThreshold = 4;  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    int pools = 0;
    void* pool = nullptr;
    uint64_t keep_all = UINT64_MAX;
    rt.ordered_allocation = d.cuMemAllocAsync && d.cuMemFreeAsync && d.cuDeviceGetDefaultMemPool &&
                            d.cuMemPoolSetAttribute && d.cuDeviceGetAttribute(&pools, kMemoryPoolsSupported, device) == 0 &&
                            pools != 0 && d.cuDeviceGetDefaultMemPool(&pool, device) == 0 &&
                            d.cuMemPoolSetAttribute(pool, kReleaseThreshold, &keep_all) == 0;
  });
  if (!rt.d && why) *why = failure;
  return rt.d ? &rt : nullptr;
}

Runtime& require_runtime() {
  std::string why;
  Runtime* rt = runtime(&why);
  if (!rt) PLAIT_INTERNAL_ERROR("CUDA is not available: " + why);
  return *rt;
}

// Makes plait's context current on this thread for the guard's lifetime.
class ContextGuard {
 public:
  explicit ContextGuard(const Runtime& rt) : d_(*rt.d) {
    d_.cuCtxGetCurrent(&previous_);
    if (previous_ != rt.context) {
      d_.cuCtxSetCurrent(rt.context);
      switched_ = true;
    }
  }
  ~ContextGuard() {
    if (switched_) d_.cuCtxSetCurrent(previous_);
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  const DriverApi& d_;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

void check(CUresult result, const char* what) {
  if (result != 0) PLAIT_INTERNAL_ERROR(std::string(what) + " failed: " + error_text(result));
}

// ---------------------------------------------------------------- disk cache

constexpr const char* kCubinName = "kernel.cubin";
constexpr const char* kPtxName = "kernel.ptx";
constexpr const char* kDeviceSourceName = "kernel.cu";
constexpr const char* kChecksumName = "kernel.sha256";

std::string read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_binary(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) PLAIT_INTERNAL_ERROR("cannot write '" + path + "'");
}

// The checksum file covers the CUBIN and the PTX.
std::string build_checksum(const std::string& cubin, const std::string& ptx) {
  return sha256_hex(sha256_hex(cubin) + sha256_hex(ptx));
}

bool load_entry(const std::string& entry, DeviceBuild* build) {
  std::string recorded = read_binary(entry + "/" + kChecksumName);
  if (recorded.size() < 64) return false;
  recorded.resize(64);
  std::string cubin = read_binary(entry + "/" + kCubinName);
  std::string ptx = read_binary(entry + "/" + kPtxName);
  if ((cubin.empty() && ptx.empty()) || build_checksum(cubin, ptx) != recorded) return false;
  build->cubin = std::move(cubin);
  build->ptx = std::move(ptx);
  return true;
}

std::vector<std::string> nvrtc_options(const CompileOptions& options) {
  // Without fastmath, no multiply-add contraction: results match NumPy's
  // (and the CPU target's) rounding for + - * /.
  std::vector<std::string> flags = {"--std=c++17", "-lineinfo"};
  flags.push_back(options.fastmath ? "--use_fast_math" : "--fmad=false");
  return flags;
}

// The architecture to compile for: the device's own when NVRTC knows it,
// else the newest NVRTC knows below it (loaded as PTX, the driver compiles).
int compile_arch(int device_arch, bool* virtual_arch) {
  std::vector<int> supported = nvrtc_supported_archs();
  *virtual_arch = false;
  bool known = false;
  int best = 0;
  for (int a : supported) {
    if (a == device_arch) known = true;
    if (a <= device_arch && a > best) best = a;
  }
  if (known || supported.empty()) return device_arch;
  *virtual_arch = true;
  return best > 0 ? best : device_arch;
}

// ---------------------------------------------------------------- the api table

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

CallState& state_of(plait_context* ctx) { return *static_cast<CallState*>(ctx->cuda->state); }

// The call this thread is making, for api_free: arrays freed during a call
// (its temporaries) go back to the pool in the order of the call's stream.
thread_local const CallState* current_call = nullptr;

void record_error(plait_context* ctx, int32_t kind, const std::string& message) {
  if (ctx->error_kind != PLAIT_OK) return;
  ctx->error_kind = kind;
  ctx->error_line = 0;
  ctx->error_col = 0;
  std::snprintf(ctx->error_message, sizeof ctx->error_message, "%s", message.c_str());
}

// With PLAIT_CUDA_LOG_LAUNCHES set (not "0"), each launch is written to
// standard error: which version of a kernel the host picked, and its shape.
// Read at each launch (a getenv costs far less than the launch), so that a
// process can turn it on and off.
bool log_launches() {
  const char* v = std::getenv("PLAIT_CUDA_LOG_LAUNCHES");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

void note_launch(CallState& s, int32_t kernel) {
  const auto index = static_cast<size_t>(kernel);
  if (s.kernel_raises && (index >= s.kernel_raises->size() || (*s.kernel_raises)[index])) s.raising_launched = true;
}

void log_launch(const CallState& s, int32_t kernel, uint32_t grid, uint32_t block, uint64_t shared_bytes) {
  if (!log_launches()) return;
  std::fprintf(stderr, "plait: launch %s grid %u block %u shared %llu\n", s.module->name(kernel).c_str(), grid, block,
               static_cast<unsigned long long>(shared_bytes));
}

// Launches refuse once the call has recorded an error (one that a copy from
// the GPU reported from device code, say): the host part, which tests every
// launch, then ends the call there.
int32_t api_launch(plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, void** params) {
  if (ctx->error_kind != PLAIT_OK) return 1;
  CallState& s = state_of(ctx);
  note_launch(s, kernel);
  log_launch(s, kernel, grid, block, 0);
  CUresult r = s.rt->d->cuLaunchKernel(s.module->function(kernel), grid, 1, 1, block, 1, 1, 0, s.stream, params,
                                       nullptr);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "launching a CUDA kernel failed: " + error_text(r));
  return 1;
}

int32_t api_launch_shared(plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, uint64_t shared_bytes,
                          void** params) {
  if (ctx->error_kind != PLAIT_OK) return -1;
  CallState& s = state_of(ctx);
  if (!s.module->allow_shared_bytes(kernel, shared_bytes)) return 1;
  note_launch(s, kernel);
  log_launch(s, kernel, grid, block, shared_bytes);
  CUresult r = s.rt->d->cuLaunchKernel(s.module->function(kernel), grid, 1, 1, block, 1, 1,
                                       static_cast<unsigned>(shared_bytes), s.stream, params, nullptr);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "launching a CUDA kernel failed: " + error_text(r));
  return -1;
}

uint32_t api_cooperative_grid(plait_context* ctx, int32_t kernel, uint32_t block) {
  return state_of(ctx).module->cooperative_grid(kernel, block);
}

uint32_t api_resident_grid(plait_context* ctx, int32_t kernel, uint32_t block) {
  return state_of(ctx).module->resident_grid(kernel, block);
}

int32_t api_launch_cooperative(plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, void** params) {
  if (ctx->error_kind != PLAIT_OK) return 1;
  CallState& s = state_of(ctx);
  note_launch(s, kernel);
  log_launch(s, kernel, grid, block, 0);
  CUresult r = s.rt->d->cuLaunchCooperativeKernel(s.module->function(kernel), grid, 1, 1, block, 1, 1, 0, s.stream,
                                                  params);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "launching a cooperative CUDA kernel failed: " + error_text(r));
  return 1;
}

// The bytes to allocate for an array of `bytes`: whole 32-bit words. An
// 8- or 16-bit element's atomic update is a compare-and-swap of the aligned
// word that holds it (device runtime, atomic_combine), which for the last
// elements of an array may reach past its end; allocations start aligned,
// so with whole words that word stays inside the allocation (memcheck
// reported the reads past a 17-byte uint8 histogram).
uint64_t whole_words(uint64_t bytes) {
  return (bytes + 3) / 4 * 4;
}

void* api_alloc(plait_context* ctx, uint64_t bytes) {
  CallState& s = state_of(ctx);
  CUdeviceptr pointer = 0;
  CUresult r = s.rt->ordered_allocation ? s.rt->d->cuMemAllocAsync(&pointer, whole_words(bytes), s.stream)
                                        : s.rt->d->cuMemAlloc(&pointer, whole_words(bytes));
  if (r == 0) return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
  record_error(ctx, PLAIT_MEMORY_ERROR,
         "Unable to allocate " + std::to_string(bytes) + " bytes of GPU memory (" + error_text(r) + ")");
  return nullptr;
}

// Called when the last reference to an array goes: during the call for its
// temporaries (freed in stream order, without waiting), or for a returned
// array possibly long after the call and from another thread (cuMemFree,
// which waits for the GPU, as the array may have been used on any stream).
void api_free(void* pointer) {
  std::string why;
  Runtime* rt = runtime(&why);
  if (!rt || pointer == nullptr) return;
  ContextGuard guard(*rt);
  const CUdeviceptr p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer));
  if (current_call && rt->ordered_allocation) {
    rt->d->cuMemFreeAsync(p, current_call->stream);
  } else {
    rt->d->cuMemFree(p);
  }
}

int32_t api_copy_to_device(plait_context* ctx, void* dst, const void* src, uint64_t bytes) {
  CallState& s = state_of(ctx);
  CUresult r = s.rt->d->cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(dst)), src, bytes,
                                          s.stream);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "copying to the GPU failed: " + error_text(r));
  return 1;
}

// The error of a device error record copied to the host, into ctx. It
// replaces an error the host recorded: launches stop once the host records
// one, so the kernel that failed was launched, and failed, before it (the
// host runs ahead of the stream), and the first error of the call wins.
void take_device_error(plait_context* ctx, const runtime::DeviceErrorRecord& record,
                       const std::vector<std::string>& assert_messages) {
  if (record.kind == PLAIT_OK) return;
  ctx->error_kind = record.kind;
  ctx->error_line = record.line;
  ctx->error_col = record.col;
  std::snprintf(ctx->error_message, sizeof ctx->error_message, "%s",
                runtime::device_error_message(record, assert_messages).c_str());
}

int32_t api_copy_to_host(plait_context* ctx, void* dst, const void* src, uint64_t bytes) {
  CallState& s = state_of(ctx);
  CUresult r = s.rt->d->cuMemcpyDtoHAsync(dst, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(src)), bytes,
                                          s.stream);
  if (r == 0 && s.record) r = s.rt->d->cuMemcpyDtoHAsync(s.record, s.record_device, sizeof *s.record, s.stream);
  if (r == 0) r = s.rt->d->cuStreamSynchronize(s.stream);
  if (r == 0 && s.record && s.record->kind != PLAIT_OK) {
    take_device_error(ctx, *s.record, *s.assert_messages);
    return 1;
  }
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "copying from the GPU failed (or a kernel failed before): " + error_text(r));
  return 1;
}

int32_t api_zero(plait_context* ctx, void* dst, uint64_t bytes) {
  CallState& s = state_of(ctx);
  CUresult r =
      s.rt->d->cuMemsetD8Async(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(dst)), 0, bytes, s.stream);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "clearing GPU memory failed: " + error_text(r));
  return 1;
}

constexpr int32_t kDone = 0, kDeclined = 1, kFailed = -1;
constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

// A matrix of rows x cols with element strides (rs, cs) as cuBLAS takes it:
// column-major with leading dimension `ld`, or row-major (its transpose is
// column-major). Strides of a dimension of extent 1 do not matter.
struct BlasLayout {
  bool row_major = false;
  int64_t ld = 0;
};

std::optional<BlasLayout> blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool prefer_row_major) {
  const bool row_major = (cs == 1 || cols <= 1) && (rows <= 1 || rs >= cols);
  const bool col_major = (rs == 1 || rows <= 1) && (cols <= 1 || cs >= rows);
  if (row_major && (prefer_row_major || !col_major)) return BlasLayout{true, rows <= 1 ? cols : rs};
  if (col_major) return BlasLayout{false, cols <= 1 ? rows : cs};
  return std::nullopt;
}

// The bytes a rows x cols matrix spans from its first element.
uint64_t span_bytes(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t element) {
  const int64_t last = (rows - 1) * (rows > 1 ? rs : 0) + (cols - 1) * (cols > 1 ? cs : 0);
  return static_cast<uint64_t>((last + 1) * element);
}

bool overlaps(const void* x, uint64_t x_bytes, const void* y, uint64_t y_bytes) {
  const auto a = reinterpret_cast<uintptr_t>(x), b = reinterpret_cast<uintptr_t>(y);
  return a < b + y_bytes && b < a + x_bytes;
}

// A coefficient the library multiplies by as the loops would: not 0 (the
// library then skips the product, and the NaNs the loops would propagate),
// finite, and normal in the element type (a division x / s arrives as
// alpha = 1 / s, whose precision a subnormal would lose).
bool usable_alpha(double alpha, int32_t dtype) {
  return std::isnormal(alpha) && (dtype != PLAIT_FLOAT32 || std::isnormal(static_cast<float>(alpha)));
}

// The cuBLAS handle of the call's stream (each stream has its own, with its
// own workspace), made on first use; null with the error in ctx.
cublasHandle cublas_handle(plait_context* ctx, const CublasApi& blas, CallState& s) {
  std::lock_guard<std::mutex> lock(s.rt->cublas_mutex);
  cublasHandle& slot = s.rt->cublas_handles[s.stream];
  if (!slot) {
    if (const cublasStatus status = blas.cublasCreate_v2(&slot); status != 0) {
      slot = nullptr;
      record_error(ctx, PLAIT_RUNTIME_ERROR, "creating a cuBLAS handle failed (status " + std::to_string(status) + ")");
    }
  }
  return slot;
}

// A matrix argument of a BLAS entry: its first element, extents and element
// strides.
struct BlasMatrix {
  const void* data;
  int64_t rows, cols, rs, cs;
};

// The library and the layouts a BLAS entry hands it: its output's
// (row-major where it can be either) and those of its laid-out inputs, in
// the output's orientation where they can be either.
struct BlasOperands {
  const CublasApi* blas = nullptr;
  BlasLayout out;
  std::vector<BlasLayout> in;
};

// The checks every BLAS entry makes before it calls the library; nullopt
// (the entry declines) for an element type other than float32 and float64,
// without the library, where an extent or a leading dimension exceeds an
// int, where cuBLAS cannot take a layout, or where an input overlaps the
// output. `laid_out` inputs get their layouts (in order); `apart` ones,
// which the entry lays out itself, are only checked not to overlap it.
std::optional<BlasOperands> blas_operands(int32_t dtype, const BlasMatrix& out, const std::vector<BlasMatrix>& laid_out,
                                          const std::vector<BlasMatrix>& apart = {}) {
  if (dtype != PLAIT_FLOAT32 && dtype != PLAIT_FLOAT64) return std::nullopt;
  auto too_large = [](const BlasMatrix& x) { return x.rows > kMaxInt || x.cols > kMaxInt; };
  if (too_large(out)) return std::nullopt;
  for (const std::vector<BlasMatrix>* inputs : {&laid_out, &apart})
    for (const BlasMatrix& x : *inputs)
      if (too_large(x)) return std::nullopt;
  BlasOperands operands;
  operands.blas = cublas();
  if (!operands.blas) return std::nullopt;
  const std::optional<BlasLayout> out_layout = blas_layout(out.rows, out.cols, out.rs, out.cs, true);
  if (!out_layout || out_layout->ld > kMaxInt) return std::nullopt;
  operands.out = *out_layout;
  for (const BlasMatrix& x : laid_out) {
    const std::optional<BlasLayout> layout = blas_layout(x.rows, x.cols, x.rs, x.cs, out_layout->row_major);
    if (!layout || layout->ld > kMaxInt) return std::nullopt;
    operands.in.push_back(*layout);
  }
  const int64_t element = dtype == PLAIT_FLOAT32 ? 4 : 8;
  const uint64_t out_bytes = span_bytes(out.rows, out.cols, out.rs, out.cs, element);
  for (const std::vector<BlasMatrix>* inputs : {&laid_out, &apart})
    for (const BlasMatrix& x : *inputs)
      if (overlaps(out.data, out_bytes, x.data, span_bytes(x.rows, x.cols, x.rs, x.cs, element))) return std::nullopt;
  return operands;
}

int32_t api_gemm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                 int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double beta,
                 int32_t beta_reads_c, void* c, int64_t c_rs, int64_t c_cs) {
  if (m <= 0 || n <= 0) return kDone;
  if (k <= 0 || !usable_alpha(alpha, dtype) || (beta_reads_c && beta == 0.0)) return kDeclined;
  const std::optional<BlasOperands> operands =
      blas_operands(dtype, {c, m, n, c_rs, c_cs}, {{a, m, k, a_rs, a_cs}, {b, k, n, b_rs, b_cs}});
  if (!operands) return kDeclined;
  const CublasApi* blas = operands->blas;
  const BlasLayout &lc = operands->out, &la = operands->in[0], &lb = operands->in[1];

  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  // Column-major cuBLAS computes the product in C's storage order: for a
  // row-major C it computes C^T = B^T A^T, where a row-major operand is its
  // own transpose's column-major storage (op N) and a column-major one
  // needs op T; for a column-major C, the other way round.
  constexpr int kOpN = 0, kOpT = 1;
  const bool swap = lc.row_major;
  const BlasLayout& first = swap ? lb : la;
  const BlasLayout& second = swap ? la : lb;
  const int op_first = first.row_major == swap ? kOpN : kOpT;
  const int op_second = second.row_major == swap ? kOpN : kOpT;
  const int rows = static_cast<int>(swap ? n : m), cols = static_cast<int>(swap ? m : n);
  const void* x = swap ? b : a;
  const void* y = swap ? a : b;
  const double beta_used = beta_reads_c ? beta : 0.0;
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  if (status == 0 && dtype == PLAIT_FLOAT64) {
    status = blas->cublasDgemm_v2(handle, op_first, op_second, rows, cols, static_cast<int>(k), &alpha,
                                  static_cast<const double*>(x), static_cast<int>(first.ld),
                                  static_cast<const double*>(y), static_cast<int>(second.ld), &beta_used,
                                  static_cast<double*>(c), static_cast<int>(lc.ld));
  } else if (status == 0) {
    const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta_used);
    status = blas->cublasSgemm_v2(handle, op_first, op_second, rows, cols, static_cast<int>(k), &alpha32,
                                  static_cast<const float*>(x), static_cast<int>(first.ld),
                                  static_cast<const float*>(y), static_cast<int>(second.ld), &beta32,
                                  static_cast<float*>(c), static_cast<int>(lc.ld));
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "a cuBLAS matrix product failed (status " + std::to_string(status) + ")");
  return kFailed;
}

// One product of a triangle: alpha * X Y^T with X and Y n x k, in the
// column-major orientation of C's storage, both row-major (op T) or both
// column-major (op N) with their leading dimensions.
struct TriangleProduct {
  double alpha = 0.0;
  const void* x = nullptr;
  const void* y = nullptr;
  int op = 0;
  int64_t ldx = 0, ldy = 0;
};

// alpha * A B (A n x k, B k x n, with their strides) as a TriangleProduct
// for a C stored row-major (`c_row_major`, whose column-major storage is
// C^T = B^T A^T) or column-major; null when cuBLAS cannot take the operands.
std::optional<TriangleProduct> triangle_product(double alpha, int64_t n, int64_t k, const void* a, int64_t a_rs,
                                                int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs,
                                                bool c_row_major) {
  // P = A and Q = B^T, both n x k; C = alpha P Q^T, C^T = alpha Q P^T.
  struct Matrix {
    const void* data;
    int64_t rs, cs;
  };
  const Matrix p{a, a_rs, a_cs}, q{b, b_cs, b_rs};
  const Matrix& x = c_row_major ? q : p;
  const Matrix& y = c_row_major ? p : q;
  for (const bool row_major : {false, true}) {
    const std::optional<BlasLayout> lx = blas_layout(n, k, x.rs, x.cs, row_major);
    const std::optional<BlasLayout> ly = blas_layout(n, k, y.rs, y.cs, row_major);
    if (!lx || !ly || lx->row_major != ly->row_major) continue;
    if (lx->ld > kMaxInt || ly->ld > kMaxInt) return std::nullopt;
    constexpr int kOpN = 0, kOpT = 1;
    return TriangleProduct{alpha, x.data, y.data, lx->row_major ? kOpT : kOpN, lx->ld, ly->ld};
  }
  return std::nullopt;
}

int32_t api_gemmt(plait_context* ctx, int32_t dtype, int32_t upper, int64_t n, int64_t k, double alpha, const void* a,
                  int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double alpha2, const void* a2,
                  int64_t a2_rs, int64_t a2_cs, const void* b2, int64_t b2_rs, int64_t b2_cs, double beta,
                  int32_t beta_reads_c, void* c, int64_t c_rs, int64_t c_cs) {
  if (n <= 0) return kDone;
  if (k <= 0 || !usable_alpha(alpha, dtype) || (a2 && !usable_alpha(alpha2, dtype)) || (beta_reads_c && beta == 0.0))
    return kDeclined;
  std::vector<BlasMatrix> factors{{a, n, k, a_rs, a_cs}, {b, k, n, b_rs, b_cs}};
  if (a2) factors.insert(factors.end(), {{a2, n, k, a2_rs, a2_cs}, {b2, k, n, b2_rs, b2_cs}});
  const std::optional<BlasOperands> operands = blas_operands(dtype, {c, n, n, c_rs, c_cs}, {}, factors);
  if (!operands) return kDeclined;
  const CublasApi* blas = operands->blas;
  const BlasLayout& lc = operands->out;
  std::vector<TriangleProduct> products;
  for (size_t p = 0; p < factors.size(); p += 2) {
    const BlasMatrix &x = factors[p], &y = factors[p + 1];
    const std::optional<TriangleProduct> product =
        triangle_product(p == 0 ? alpha : alpha2, n, k, x.data, x.rs, x.cs, y.data, y.rs, y.cs, lc.row_major);
    if (!product) return kDeclined;
    products.push_back(*product);
  }

  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  // The lower triangle of a row-major C is the upper one of its
  // column-major storage C^T.
  const int uplo = (upper != 0) != lc.row_major ? 1 : 0;
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  // The second product adds to what the first left in C.
  double beta_used = beta_reads_c ? beta : 0.0;
  for (const TriangleProduct& p : products) {
    if (status != 0) break;
    const int ni = static_cast<int>(n), ki = static_cast<int>(k);
    if (dtype == PLAIT_FLOAT64) {
      status = blas->cublasDsyrkx(handle, uplo, p.op, ni, ki, &p.alpha, static_cast<const double*>(p.x),
                                  static_cast<int>(p.ldx), static_cast<const double*>(p.y), static_cast<int>(p.ldy),
                                  &beta_used, static_cast<double*>(c), static_cast<int>(lc.ld));
    } else {
      const float alpha32 = static_cast<float>(p.alpha), beta32 = static_cast<float>(beta_used);
      status = blas->cublasSsyrkx(handle, uplo, p.op, ni, ki, &alpha32, static_cast<const float*>(p.x),
                                  static_cast<int>(p.ldx), static_cast<const float*>(p.y), static_cast<int>(p.ldy),
                                  &beta32, static_cast<float*>(c), static_cast<int>(lc.ld));
    }
    beta_used = 1.0;
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR,
               "a cuBLAS triangular matrix product failed (status " + std::to_string(status) + ")");
  return kFailed;
}

// B = (I + strict_upper(A)) B: in cuBLAS's column-major terms, B's storage
// is B (column-major B) or B^T (row-major B, which cuBLAS multiplies from
// the right by the transpose), and A's storage is A or A^T, whose upper or
// lower triangle holds strict_upper(A); the diagonal is taken as ones.
int32_t api_trmm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, const void* a, int64_t a_rs, int64_t a_cs,
                 void* b, int64_t b_rs, int64_t b_cs) {
  if (m <= 0 || n <= 0) return kDone;
  const std::optional<BlasOperands> operands = blas_operands(dtype, {b, m, n, b_rs, b_cs}, {{a, m, m, a_rs, a_cs}});
  if (!operands) return kDeclined;
  const CublasApi* blas = operands->blas;
  const BlasLayout &lb = operands->out, &la = operands->in[0];

  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  // A column-major A holds strict_upper(A) in its upper triangle, a
  // row-major one (storage A^T) in its lower. A row-major B is multiplied
  // from the right by (I + strict_upper(A))^T, a column-major one from the
  // left by I + strict_upper(A).
  constexpr int kLeft = 0, kRight = 1, kLower = 0, kUpper = 1, kOpN = 0, kOpT = 1, kUnit = 1;
  const int side = lb.row_major ? kRight : kLeft;
  const int uplo = la.row_major ? kLower : kUpper;
  const int trans = lb.row_major != la.row_major ? kOpT : kOpN;
  const int rows = static_cast<int>(lb.row_major ? n : m), cols = static_cast<int>(lb.row_major ? m : n);
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  if (status == 0 && dtype == PLAIT_FLOAT64) {
    const double one = 1.0;
    status = blas->cublasDtrmm_v2(handle, side, uplo, trans, kUnit, rows, cols, &one, static_cast<const double*>(a),
                                  static_cast<int>(la.ld), static_cast<const double*>(b), static_cast<int>(lb.ld),
                                  static_cast<double*>(b), static_cast<int>(lb.ld));
  } else if (status == 0) {
    const float one = 1.0f;
    status = blas->cublasStrmm_v2(handle, side, uplo, trans, kUnit, rows, cols, &one, static_cast<const float*>(a),
                                  static_cast<int>(la.ld), static_cast<const float*>(b), static_cast<int>(lb.ld),
                                  static_cast<float*>(b), static_cast<int>(lb.ld));
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR,
               "a cuBLAS triangular matrix product failed (status " + std::to_string(status) + ")");
  return kFailed;
}

// x = solve(lower(A), b): b copied to x unless x is b, then cuBLAS's trsv
// in place. A row-major A is stored as the column-major A^T, whose upper
// triangle holds lower(A) transposed (op T); a column-major A is A (op N).
int32_t api_trsv(plait_context* ctx, int32_t dtype, int64_t n, const void* a, int64_t a_rs, int64_t a_cs, const void* b,
                 int64_t b_stride, void* x, int64_t x_stride) {
  if (n <= 0) return kDone;
  if (n == 1) b_stride = x_stride = 1;
  const bool in_place = b == x && b_stride == x_stride;
  std::vector<BlasMatrix> apart;
  if (!in_place) apart.push_back({b, n, 1, b_stride, 1});
  const std::optional<BlasOperands> operands =
      blas_operands(dtype, {x, n, 1, x_stride, 1}, {{a, n, n, a_rs, a_cs}}, apart);
  if (!operands || b_stride < 1 || b_stride > kMaxInt) return kDeclined;
  const CublasApi* blas = operands->blas;
  const BlasLayout& la = operands->in[0];

  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  constexpr int kLower = 0, kUpper = 1, kOpN = 0, kOpT = 1, kNonUnit = 0;
  const int uplo = la.row_major ? kUpper : kLower;
  const int trans = la.row_major ? kOpT : kOpN;
  const int count = static_cast<int>(n), lda = static_cast<int>(la.ld);
  const int incb = static_cast<int>(b_stride), incx = static_cast<int>(x_stride);
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  if (status == 0 && dtype == PLAIT_FLOAT64) {
    if (!in_place)
      status = blas->cublasDcopy_v2(handle, count, static_cast<const double*>(b), incb, static_cast<double*>(x), incx);
    if (status == 0)
      status = blas->cublasDtrsv_v2(handle, uplo, trans, kNonUnit, count, static_cast<const double*>(a), lda,
                                    static_cast<double*>(x), incx);
  } else if (status == 0) {
    if (!in_place)
      status = blas->cublasScopy_v2(handle, count, static_cast<const float*>(b), incb, static_cast<float*>(x), incx);
    if (status == 0)
      status = blas->cublasStrsv_v2(handle, uplo, trans, kNonUnit, count, static_cast<const float*>(a), lda,
                                    static_cast<float*>(x), incx);
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "a cuBLAS triangular solve failed (status " + std::to_string(status) + ")");
  return kFailed;
}

// C = alpha S B + beta C, S symmetric with A's lower triangle. cuBLAS's
// symm takes B and C in one column-major orientation: a column-major C and
// B are S B from the left; row-major ones are stored as C^T = B^T S, S from
// the right. A's storage is A (column-major), whose lower triangle holds
// S's, or A^T (row-major), whose upper triangle does.
int32_t api_symm(plait_context* ctx, int32_t dtype, int64_t m, int64_t n, double alpha, const void* a, int64_t a_rs,
                 int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double beta, int32_t beta_reads_c, void* c,
                 int64_t c_rs, int64_t c_cs) {
  if (m <= 0 || n <= 0) return kDone;
  if (!usable_alpha(alpha, dtype) || (beta_reads_c && beta == 0.0)) return kDeclined;
  const std::optional<BlasOperands> operands =
      blas_operands(dtype, {c, m, n, c_rs, c_cs}, {{a, m, m, a_rs, a_cs}, {b, m, n, b_rs, b_cs}});
  if (!operands) return kDeclined;
  const CublasApi* blas = operands->blas;
  const BlasLayout &lc = operands->out, &la = operands->in[0], &lb = operands->in[1];
  if (lb.row_major != lc.row_major) return kDeclined;

  CallState& s = state_of(ctx);
  const cublasHandle handle = cublas_handle(ctx, *blas, s);
  if (!handle) return kFailed;
  constexpr int kLeft = 0, kRight = 1, kLower = 0, kUpper = 1;
  const int side = lc.row_major ? kRight : kLeft;
  const int uplo = la.row_major ? kUpper : kLower;
  const int rows = static_cast<int>(lc.row_major ? n : m), cols = static_cast<int>(lc.row_major ? m : n);
  const double beta_used = beta_reads_c ? beta : 0.0;
  cublasStatus status = blas->cublasSetStream_v2(handle, s.stream);
  if (status == 0 && dtype == PLAIT_FLOAT64) {
    status = blas->cublasDsymm_v2(handle, side, uplo, rows, cols, &alpha, static_cast<const double*>(a),
                                  static_cast<int>(la.ld), static_cast<const double*>(b), static_cast<int>(lb.ld),
                                  &beta_used, static_cast<double*>(c), static_cast<int>(lc.ld));
  } else if (status == 0) {
    const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta_used);
    status = blas->cublasSsymm_v2(handle, side, uplo, rows, cols, &alpha32, static_cast<const float*>(a),
                                  static_cast<int>(la.ld), static_cast<const float*>(b), static_cast<int>(lb.ld),
                                  &beta32, static_cast<float*>(c), static_cast<int>(lc.ld));
  }
  if (status == 0) return kDone;
  record_error(ctx, PLAIT_RUNTIME_ERROR,
               "a cuBLAS symmetric matrix product failed (status " + std::to_string(status) + ")");
  return kFailed;
}

// A scratch buffer of the pool of `stream`, returned to it when the call
// ends (its kernels may still run then: see Runtime::scratch_pool).
class Scratch {
 public:
  Scratch(Runtime& rt, CUstream stream) : rt_(rt), stream_(stream) {
    {
      std::lock_guard<std::mutex> lock(rt_.scratch_mutex);
      std::vector<ScratchBuffer>& free = rt_.scratch_pool[stream_];
      if (!free.empty()) {
        buffer_ = free.back();
        free.pop_back();
        return;
      }
    }
    check(rt_.d->cuMemAlloc(&buffer_.device, PLAIT_CUDA_SCRATCH_BYTES), "allocating the scratch buffer");
    check(rt_.d->cuMemsetD8Async(buffer_.device, 0, PLAIT_CUDA_ERROR_BYTES, stream_), "clearing the device error record");
    void* host = nullptr;
    check(rt_.d->cuMemAllocHost(&host, sizeof(runtime::DeviceErrorRecord)), "allocating page-locked memory");
    buffer_.record = static_cast<runtime::DeviceErrorRecord*>(host);
  }
  ~Scratch() {
    std::lock_guard<std::mutex> lock(rt_.scratch_mutex);
    rt_.scratch_pool[stream_].push_back(buffer_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  CUdeviceptr pointer() const { return buffer_.device; }
  runtime::DeviceErrorRecord* record() const { return buffer_.record; }

 private:
  Runtime& rt_;
  CUstream stream_;
  ScratchBuffer buffer_;
};

}  // namespace

std::string cuda_unavailable_reason() {
  std::string why;
  if (!runtime(&why)) return why;
  if (!nvrtc(&why)) return why;
  return "";
}

CudaDeviceInfo cuda_device() { return require_runtime().device; }

CudaModule::~CudaModule() {
  std::string why;
  Runtime* rt = runtime(&why);
  if (rt && module_) {
    ContextGuard guard(*rt);
    rt->d->cuModuleUnload(module_);
  }
}

uint32_t CudaModule::cooperative_grid(int index, uint32_t block) const {
  return require_runtime().cooperative_launch ? resident_grid(index, block) : 0;
}

uint32_t CudaModule::resident_grid(int index, uint32_t block) const {
  std::lock_guard<std::mutex> lock(facts_mutex_);
  auto it = resident_grids_.find({index, block});
  if (it != resident_grids_.end()) return it->second;
  Runtime& rt = require_runtime();
  uint32_t grid = 0;
  int per_multiprocessor = 0;
  if (rt.d->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, function(index), static_cast<int>(block),
                                                        0) == 0 &&
      per_multiprocessor > 0) {
    grid = static_cast<uint32_t>(per_multiprocessor) * static_cast<uint32_t>(rt.device.multiprocessors);
  }
  resident_grids_[{index, block}] = grid;
  return grid;
}

bool CudaModule::allow_shared_bytes(int index, uint64_t bytes) const {
  constexpr uint64_t kWithoutOptin = 48 * 1024;  // dynamic shared memory any kernel may take
  if (bytes <= kWithoutOptin) return true;
  std::lock_guard<std::mutex> lock(facts_mutex_);
  auto it = shared_bytes_allowed_.find(index);
  if (it != shared_bytes_allowed_.end() && it->second >= bytes) return true;
  Runtime& rt = require_runtime();
  constexpr int kMaxDynamicSharedBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  if (!rt.d->cuFuncSetAttribute || bytes > static_cast<uint64_t>(rt.shared_bytes_optin) ||
      rt.d->cuFuncSetAttribute(function(index), kMaxDynamicSharedBytes, static_cast<int>(bytes)) != 0)
    return false;
  shared_bytes_allowed_[index] = bytes;
  return true;
}

DeviceBuild compile_device_code(const std::string& device_source, int arch, bool virtual_arch,
                                const CompileOptions& options) {
  NvrtcOutput out = nvrtc_compile(device_source, "kernel.cu", arch, virtual_arch, nvrtc_options(options));
  DeviceBuild build;
  build.ptx = std::move(out.ptx);
  build.cubin = std::move(out.cubin);
  build.arch = (virtual_arch ? "compute_" : "sm_") + std::to_string(arch);
  build.nvrtc_version = nvrtc_version();
  build.log = std::move(out.log);
  return build;
}

DeviceBuild build_device_code(const std::string& device_source, const CompileOptions& options) {
  Runtime& rt = require_runtime();
  bool virtual_arch = false;
  const int arch = compile_arch(rt.device.arch, &virtual_arch);
  const std::string arch_name = (virtual_arch ? "compute_" : "sm_") + std::to_string(arch);
  const std::string version = nvrtc_version();
  if (!options.disk_cache) return compile_device_code(device_source, arch, virtual_arch, options);

  DiskCache cache(default_cache_directory(options));
  Sha256 hasher;
  auto add = [&hasher](const std::string& part) {
    hasher.update(std::to_string(part.size()) + ":");
    hasher.update(part);
  };
  add("plait-cuda-device-cache-v1");
  add(compiler_version());
  add(arch_name);
  add(version);
  for (const std::string& flag : nvrtc_options(options)) add(flag);
  add(device_source);
  const std::string key = hasher.hex_digest();
  const std::string entry = cache.entry_path(key);

  DeviceBuild build;
  if (load_entry(entry, &build)) {
    build.arch = arch_name;
    build.nvrtc_version = version;
    build.cache_entry = entry;
    build.from_disk_cache = true;
    return build;
  }
  build = compile_device_code(device_source, arch, virtual_arch, options);
  // Publish with one rename of a complete directory, as DiskCache does.
  const std::string shard = cache.directory() + "/" + key.substr(0, 2);
  if (::mkdir(shard.c_str(), 0700) != 0 && errno != EEXIST)
    PLAIT_INTERNAL_ERROR("cannot create '" + shard + "': " + std::strerror(errno));
  std::string staging = cache.directory() + "/build-" + key.substr(0, 12) + "-XXXXXX";
  if (!::mkdtemp(staging.data())) PLAIT_INTERNAL_ERROR("cannot create a directory in '" + cache.directory() + "'");
  write_binary(staging + "/" + kDeviceSourceName, device_source);
  write_binary(staging + "/" + kPtxName, build.ptx);
  write_binary(staging + "/" + kCubinName, build.cubin);
  write_binary(staging + "/" + kChecksumName, build_checksum(build.cubin, build.ptx) + "\n");
  if (::rename(staging.c_str(), entry.c_str()) != 0) {
    // Another process published it first (or an old damaged entry is in
    // the way): ours is equivalent, keep using it from memory.
    std::error_code ignored;
    fs::remove_all(staging, ignored);
  }
  build.cache_entry = entry;
  return build;
}

std::shared_ptr<CudaModule> load_cuda_module(const std::string& cubin, const std::string& ptx,
                                             const std::vector<std::string>& names) {
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  std::shared_ptr<CudaModule> module(new CudaModule());
  CUresult result = -1;
  if (!cubin.empty()) result = rt.d->cuModuleLoadData(&module->module_, cubin.data());
  if (result != 0 && !ptx.empty()) {
    // A driver older than NVRTC may refuse the CUBIN but compile the PTX.
    CUresult from_ptx = rt.d->cuModuleLoadData(&module->module_, ptx.c_str());
    if (from_ptx != 0) {
      PLAIT_INTERNAL_ERROR("the CUDA driver cannot load the compiled kernel: " + error_text(from_ptx) +
                           (cubin.empty() ? "" : " (and the CUBIN: " + error_text(result) + ")"));
    }
    result = 0;
  }
  if (result != 0) PLAIT_INTERNAL_ERROR("the CUDA driver cannot load the compiled kernel: " + error_text(result));
  for (const std::string& name : names) {
    CUfunction function = nullptr;
    check(rt.d->cuModuleGetFunction(&function, module->module_, name.c_str()), ("finding kernel " + name).c_str());
    module->functions_.push_back(function);
    module->names_.push_back(name);
  }
  return module;
}

int32_t call_cuda_kernel(const CompiledKernel& kernel, void** args, plait_result* results, plait_context* ctx,
                         uintptr_t stream) {
  Runtime& rt = require_runtime();
  if (!kernel.cuda_module) PLAIT_INTERNAL_ERROR("kernel `" + kernel.name + "` has no CUDA module");
  ContextGuard guard(rt);
  Scratch scratch(rt, reinterpret_cast<CUstream>(stream));
  CallState state{&rt, kernel.cuda_module.get(), reinterpret_cast<CUstream>(stream)};
  if (kernel.device_errors) {
    state.record_device = scratch.pointer();
    state.record = scratch.record();
    state.assert_messages = &kernel.device_assert_messages;
    state.kernel_raises = &kernel.device_kernel_raises;
  }
  plait_cuda_api api{};
  api.state = &state;
  api.launch = &api_launch;
  api.alloc = &api_alloc;
  api.free = &api_free;
  api.copy_to_device = &api_copy_to_device;
  api.copy_to_host = &api_copy_to_host;
  api.zero = &api_zero;
  api.cooperative_grid = &api_cooperative_grid;
  api.launch_cooperative = &api_launch_cooperative;
  api.launch_shared = &api_launch_shared;
  api.shared_bytes_limit = rt.d->cuFuncSetAttribute ? static_cast<uint64_t>(rt.shared_bytes_optin) : 0;
  api.gemm = &api_gemm;
  api.gemmt = &api_gemmt;
  api.trmm = &api_trmm;
  api.symm = &api_symm;
  api.trsv = &api_trsv;
  api.resident_grid = &api_resident_grid;
  api.l2_bytes = static_cast<uint64_t>(rt.l2_bytes);
  api.scratch = reinterpret_cast<void*>(static_cast<uintptr_t>(scratch.pointer()));
  ctx->cuda = &api;
  struct Detach {
    plait_context* ctx;
    const CallState* outer;
    ~Detach() {
      ctx->cuda = nullptr;
      current_call = outer;
    }
  } detach{ctx, current_call};
  current_call = &state;

  const int32_t status = kernel.entry(args, results, ctx);
  if (!kernel.device_errors || !state.raising_launched) return status;
  // The device error record, once the stream has run everything the call
  // queued; cleared again in stream order when it holds an error.
  runtime::DeviceErrorRecord& record = *scratch.record();
  CUresult r = rt.d->cuMemcpyDtoHAsync(&record, scratch.pointer(), sizeof record, state.stream);
  if (r == 0) r = rt.d->cuStreamSynchronize(state.stream);
  if (r == 0 && record.kind != PLAIT_OK)
    r = rt.d->cuMemsetD8Async(scratch.pointer(), 0, PLAIT_CUDA_ERROR_BYTES, state.stream);
  if (r != 0) {
    record_error(ctx, PLAIT_RUNTIME_ERROR, "a CUDA kernel failed: " + error_text(r));
  } else {
    take_device_error(ctx, record, kernel.device_assert_messages);
  }
  return ctx->error_kind;
}

uintptr_t device_alloc(size_t bytes) {
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  CUdeviceptr pointer = 0;
  CUresult r = rt.d->cuMemAlloc(&pointer, bytes == 0 ? 256 : whole_words(bytes));
  if (r != 0) PLAIT_INTERNAL_ERROR("allocating " + std::to_string(bytes) + " bytes of GPU memory failed: " + error_text(r));
  return static_cast<uintptr_t>(pointer);
}

void device_free(uintptr_t pointer) { api_free(reinterpret_cast<void*>(pointer)); }

void copy_host_to_device(uintptr_t dst, const void* src, size_t bytes, uintptr_t stream) {
  if (bytes == 0) return;
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  check(rt.d->cuMemcpyHtoDAsync(dst, src, bytes, reinterpret_cast<CUstream>(stream)), "copying to the GPU");
  check(rt.d->cuStreamSynchronize(reinterpret_cast<CUstream>(stream)), "waiting for the copy to the GPU");
}

void copy_device_to_host(void* dst, uintptr_t src, size_t bytes, uintptr_t stream) {
  if (bytes == 0) return;
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  check(rt.d->cuMemcpyDtoHAsync(dst, src, bytes, reinterpret_cast<CUstream>(stream)), "copying from the GPU");
  check(rt.d->cuStreamSynchronize(reinterpret_cast<CUstream>(stream)), "waiting for the copy from the GPU");
}

void copy_device_to_device(uintptr_t dst, uintptr_t src, size_t bytes, uintptr_t stream) {
  if (bytes == 0) return;
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  check(rt.d->cuMemcpyDtoDAsync(dst, src, bytes, reinterpret_cast<CUstream>(stream)), "copying on the GPU");
}

void synchronize(uintptr_t stream) {
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  check(rt.d->cuStreamSynchronize(reinterpret_cast<CUstream>(stream)), "waiting for the GPU");
}

}  // namespace plait::jit
