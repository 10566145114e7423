// The fused attention kernel's builds and launches (cuda_sparse_attention.h).
#include "jit/cuda_sparse_attention.h"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "jit/cuda_runtime.h"
#include "runtime/attention_tiles.h"
#include "support/compile_options.h"

namespace plait {
extern const char* const kCudaSparseAttentionText;
}

namespace plait::jit {

namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxGridY = 65535;

const CudaModule& attention_module(HalfType type, int head_dim) {
  static std::mutex mutex;
  static std::map<std::pair<HalfType, int>, std::shared_ptr<CudaModule>> modules;
  std::lock_guard<std::mutex> lock(mutex);
  auto& module = modules[{type, head_dim}];
  if (!module) {
    const std::string source = sparse_attention_source(type, head_dim);
    // Fast math: exp2 as the hardware's approximation, whose error is far
    // below the half-precision operands' rounding.
    CompileOptions options;
    options.fastmath = true;
    const DeviceBuild build = build_device_code(source, options);
    module = load_cuda_module(build.cubin, build.ptx, {"plait_sparse_attention"});
  }
  return *module;
}

}  // namespace

std::string sparse_attention_source(HalfType type, int head_dim) {
  using namespace runtime;
  std::string s = "#define PLAIT_ATTENTION_D " + std::to_string(head_dim) + "\n#define PLAIT_ATTENTION_BF16 " +
                  (type == HalfType::BFloat16 ? "1" : "0") + "\n";
  const std::pair<const char*, int> fields[] = {
      {"FIELDS", kTileFields},    {"ROW_BEGIN", kRowBegin},     {"ROW_COUNT", kRowCount},
      {"PART_LO", kPartLo},       {"PART_STRIDE", kPartStride}, {"PART_COLUMNS", kPartColumns},
      {"STEP_BEGIN", kStepBegin}, {"STEP_END", kStepEnd},       {"SPLIT_GROUP", kSplitGroup},
      {"SPLIT", kSplit},          {"SPLITS", kSplits},          {"SLOT", kSlot},
      {"ROWS", kTileRows},        {"KEYS", kTileKeys}};
  for (const auto& [name, value] : fields)
    s += "#define PLAIT_TILE_" + std::string(name) + " " + std::to_string(value) + "\n";
  return s + kCudaSparseAttentionText;
}

bool sparse_attention_head_dim_supported(int head_dim) {
  return head_dim >= 16 && head_dim <= 128 && head_dim % 16 == 0;
}

void run_sparse_attention(const SparseAttentionCall& c) {
  if (!sparse_attention_head_dim_supported(c.head_dim))
    throw std::invalid_argument("the fused attention kernel takes head dimensions 16 to 128 in steps of 16, got " +
                                std::to_string(c.head_dim));
  if (c.tile_count > kMaxGridY || c.batch * c.heads > INT32_MAX)
    throw std::invalid_argument("the attention call has too many tiles, batches or heads for one launch");
  if (c.tile_count == 0 || c.batch * c.heads == 0) return;
  const CudaModule& module = attention_module(c.type, c.head_dim);
  const void* q = reinterpret_cast<const void*>(c.q);
  const void* k = reinterpret_cast<const void*>(c.k);
  const void* v = reinterpret_cast<const void*>(c.v);
  void* out = reinterpret_cast<void*>(c.out);
  const void* rows = reinterpret_cast<const void*>(c.rows);
  const void* tiles = reinterpret_cast<const void*>(c.tiles);
  const void* parts = reinterpret_cast<const void*>(c.row_parts);
  int heads = static_cast<int>(c.heads);
  float scale_log2 = static_cast<float>(c.scale * 1.4426950408889634);  // exp(x) = exp2(x log2 e)
  long long s[4][3];
  const int64_t* strides[4] = {c.q_strides, c.k_strides, c.v_strides, c.out_strides};
  for (int a = 0; a < 4; ++a)
    for (int d = 0; d < 3; ++d) s[a][d] = strides[a][d];
  void* partials = reinterpret_cast<void*>(c.partials);
  void* counters = reinterpret_cast<void*>(c.counters);
  int slots = static_cast<int>(c.slots), groups = static_cast<int>(c.split_groups);
  // In the kernel's order: each array, then its batch, head and row strides.
  void* params[] = {&q,       &s[0][0], &s[0][1], &s[0][2],  &k,        &s[1][0], &s[1][1], &s[1][2], &v,
                    &s[2][0], &s[2][1], &s[2][2], &out,      &s[3][0],  &s[3][1], &s[3][2], &heads,   &scale_log2,
                    &rows,    &tiles,   &parts,   &partials, &counters, &slots,   &groups};
  // Shared memory: Q's tile and two buffers of a K and a V tile, rows padded by 8 halves.
  const auto shared_bytes = static_cast<uint32_t>((runtime::kTileRows + 4 * runtime::kTileKeys) * (c.head_dim + 8) * 2);
  launch_kernel(module, 0, static_cast<uint32_t>(c.batch * c.heads), static_cast<uint32_t>(c.tile_count), kThreads,
                shared_bytes, params, c.stream);
}

}  // namespace plait::jit
