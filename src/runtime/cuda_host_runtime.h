// Host side of CUDA kernels: everything that touches the GPU goes through
// ctx->cuda (runtime/abi.h).
namespace plait_cuda {

// A kernel parameter as cuLaunchKernel takes it: the address of the value.
template <typename T>
inline void* arg(const T& value) {
  return const_cast<void*>(static_cast<const void*>(&value));
}

// Blocks of `block` threads for `total` iterations, at most `cap` blocks
// (kernels loop over the rest with a grid stride).
inline uint32_t grid_for(int64_t total, int64_t block, int64_t cap) {
  const int64_t blocks = (total + block - 1) / block;
  return static_cast<uint32_t>(blocks < cap ? blocks : cap);
}

// CSR rows staged per block (docs/cuda.md): the staged version runs when
// the row loop's arrays hold at most `per_row` elements per row on average
// (kStagedRowElements, 16: staged rows of 2 to 10 elements ran 1.15-1.4x
// faster than the teams, of 16 at the same speed, of 24 1.3x slower, as
// most blocks of 128 rows then hold more than the 2048 staged terms and run
// their rows directly).
inline bool rows_staged(int64_t elements, int64_t rows, int64_t per_row) { return elements <= per_row * rows; }

// The rows version of a batched collapsed nest (docs/cuda.md, "Rows of
// tiles"): a row of `inner` iterations of the innermost loop takes
// row_tiles tiles of `tile` iterations; the version runs when at most an
// eighth of a row's tiled iterations lie past its end and a grid holds a
// row's tiles, with a grid of whole rows of tiles, at most `cap` blocks.
inline int64_t row_tiles(int64_t inner, int64_t tile) { return (inner + tile - 1) / tile; }

inline bool rows_fit(int64_t inner, int64_t tiles, int64_t tile, int64_t cap) {
  return tiles <= cap && 8 * (tiles * tile - inner) <= inner;
}

inline uint32_t grid_for_rows(int64_t tiles, int64_t rows, int64_t cap) {
  const int64_t per_grid = cap / tiles;
  return static_cast<uint32_t>(tiles * (rows < per_grid ? rows : per_grid));
}

// The most blocks of a rows version's grid: `cap` (a block per tile of a
// row, up to `cap`), or the blocks of kernel `kernel` resident at once (one
// wave, each block taking many rows) when the `bytes` of the arrays the
// kernel touches fit in the L2 cache and a wave holds a row's `tiles`. From
// L2 a block's row takes so little time that starting and retiring blocks
// bounds the kernel: NPBench floyd_warshall at preset paper (31 MB of int32;
// its update, a rows version, at each of 2800 steps) ran 70 ms with a block
// per tile and 42 ms in one wave, 47-49 ms in 1.5, two and four waves; a
// 4096 x 4096 float64 stencil (268 MB, past L2) ran 9.9 ms with a block per
// tile and 10.4-10.8 ms in four or two waves.
inline int64_t rows_cap(plait_context* ctx, int32_t kernel, uint32_t block, uint64_t bytes, int64_t tiles,
                        int64_t cap) {
  if (bytes > ctx->cuda->l2_bytes) return cap;
  const int64_t resident = ctx->cuda->resident_grid(ctx, kernel, block);
  return resident >= tiles && resident < cap ? resident : cap;
}

// Threads per worker of a team-mapped parallel loop in blocks of `block`
// threads, from the largest trip count of its spread loops (docs/cuda.md):
// the smallest power of two from 32 (a warp) to `cap` (the largest team of
// the launch configuration) that leaves each thread at most 4 iterations.
// Teams of more than a warp and less than the block wait at a named barrier
// each, of which a block has 15 besides __syncthreads's: a team that would
// need more (64 in a block of 1024) doubles, or is a warp when the cap
// forbids that.
inline int32_t team_for(int64_t trip, int32_t cap, int32_t block) {
  int32_t team = 32;
  while (team < cap && int64_t(team) * 4 < trip) team *= 2;
  if (team > 32 && team < block && block / team > 15) team = team * 2 <= cap ? team * 2 : 32;
  return team;
}

// The same for a loop of `workers` iterations, where a team may be smaller
// than a warp: the smallest power of two from 2 that leaves each thread at
// most 2 iterations and gives the workers at least kBusyThreads threads,
// when that is below 32. A warp then runs several workers instead of
// leaving most of its threads idle: SpMM's rows over 16 columns (4 groups
// of 4) busied 4 of a warp's 32 threads, and 1e5 such rows ran 4.5x faster
// in teams of 2 on an H200 (docs/cuda.md, "Team size").
inline int32_t team_for(int64_t trip, int32_t cap, int32_t block, int64_t workers) {
  constexpr int64_t kBusyThreads = int64_t{1} << 17;
  int32_t team = 2;
  while (team < 32 && (int64_t(team) * 2 < trip || int64_t(team) * workers < kBusyThreads)) team *= 2;
  return team < 32 ? team : team_for(trip, cap, block);
}

// The blocks of `block` threads of a persistent kernel (`kernel`) for a time
// loop whose steps have at most `workers` iterations in one parallel loop
// (-1: not known before the launch), by the rule of docs/cuda.md: one block
// (its barriers are __syncthreads) up to 4 iterations per thread, or 16 when
// its arrays can be copied on chip (`onchip`); else as many blocks as the
// workers need, at most as many as are resident at once, in a cooperative
// launch (its barriers wait for the whole grid); 0 (one launch per parallel
// loop per step) above 4 Mi workers, where a step's work hides its
// launches, or when the GPU cannot launch cooperative kernels.
inline uint32_t persistent_grid(plait_context* ctx, int32_t kernel, int64_t workers, uint32_t block, bool onchip) {
  if (workers >= 0 && workers <= (onchip ? 16 : 4) * int64_t(block)) return 1;
  if (workers > (int64_t(1) << 22)) return 0;
  const uint32_t resident = ctx->cuda->cooperative_grid(ctx, kernel, block);
  if (resident < 2) return 0;
  if (workers < 0) return resident;
  const int64_t wanted = (workers + block - 1) / block;
  return wanted < int64_t(resident) ? static_cast<uint32_t>(wanted) : resident;
}

// The threads of a persistent kernel's version with its arrays in
// registers, `slots` elements of each per thread: enough for the longest
// array's `elements`, in whole warps; 0 when one block cannot hold them.
inline uint32_t register_block(int64_t elements, int slots) {
  const int64_t threads = (elements + slots - 1) / slots;
  if (threads > 1024) return 0;
  return static_cast<uint32_t>(threads <= 32 ? 32 : (threads + 31) / 32 * 32);
}

// Shared-memory bytes of one array copied on chip (plait::onchip_bytes on
// the device, which places the arrays one after the other).
inline uint64_t onchip_bytes(int64_t count, uint64_t item_size) {
  return (static_cast<uint64_t>(count) * item_size + 15) / 16 * 16;
}

// Slot `k` (8 bytes) of the scratch buffer, after the device error record.
inline void* scratch_slot(plait_context* ctx, int k) {
  return static_cast<char*>(ctx->cuda->scratch) + PLAIT_CUDA_ERROR_BYTES + 8 * k;
}

inline bool all_zero(const unsigned char* bytes, size_t count) {
  for (size_t k = 0; k < count; ++k)
    if (bytes[k] != 0) return false;
  return true;
}

// Device memory for the temporary arrays of parallel loops: each worker
// (thread or team) in flight has its own slice of `bytes` / workers. One per
// call, reused by its kernels and grown when one needs more; freed when the
// call returns (cuMemFree waits for the kernels using it).
struct device_scratch {
  plait::array_owner owner;
  void* data = nullptr;
  uint64_t bytes = 0;
};

inline unsigned char* scratch_for(plait_context* ctx, device_scratch& scratch, uint64_t bytes) {
  if (bytes > scratch.bytes) {
    scratch.owner.reset();
    scratch.data = ctx->cuda->alloc(ctx, bytes);
    if (scratch.data == nullptr) {
      scratch.bytes = 0;
      return nullptr;
    }
    scratch.owner = plait::array_owner(scratch.data, ctx->cuda->free);
    scratch.bytes = bytes;
  }
  return static_cast<unsigned char*>(scratch.data);
}

// Blocks of a launch whose workers need `slice` bytes of temporaries each:
// at most `grid`, and few enough that the slices of all workers in flight
// fit in 256 MiB (the grid-stride loop runs the rest), but at least one.
inline uint32_t grid_for_temporaries(uint32_t grid, int64_t workers_per_block, int64_t slice) {
  const int64_t budget = int64_t(256) << 20;
  if (slice <= 0) return grid;
  const int64_t fit = budget / slice / workers_per_block;
  return static_cast<uint32_t>(fit < 1 ? 1 : fit < int64_t(grid) ? fit : int64_t(grid));
}

// Reads one element of device memory (waits for the stream).
template <typename T>
inline T read(plait_context* ctx, const T* device_pointer) {
  T value{};
  ctx->cuda->copy_to_host(ctx, &value, device_pointer, sizeof(T));
  return value;
}

// Allocates an array in device memory, as plait::allocate_array does in
// host memory; `fill_kernel` is the index of the module's fill kernel for T
// (used for ones and value fills).
template <typename T>
inline plait::allocation<T> allocate_device_array(plait_context* ctx, int line, int col, int ndim,
                                                  const int64_t* shape, bool fortran_order, plait::fill_kind fill,
                                                  T fill_value, int32_t fill_kernel) {
  plait::allocation<T> out;
  uint64_t count = 0, bytes = 0;
  if (!plait::array_size(ctx, line, col, ndim, shape, sizeof(T), &count, &bytes)) return out;
  void* storage = ctx->cuda->alloc(ctx, bytes == 0 ? 256 : bytes);
  if (storage == nullptr) return out;
  out.owner = plait::array_owner(storage, ctx->cuda->free);
  out.data = static_cast<T*>(storage);
  plait::set_layout(out, ndim, shape, fortran_order);
  if (count > 0 && fill == plait::fill_kind::zeros) {
    if (ctx->cuda->zero(ctx, storage, bytes) != 0) return out;
  } else if (count > 0 && fill != plait::fill_kind::uninitialized) {
    const T value = fill == plait::fill_kind::ones ? T(1) : fill_value;
    const int64_t n = static_cast<int64_t>(count);
    void* params[] = {arg(out.data), arg(n), arg(value), arg(ctx->cuda->scratch)};
    if (ctx->cuda->launch(ctx, fill_kernel, grid_for(n, 256, 65536), 256, params) != 0) return out;
  }
  out.ok = true;
  return out;
}

}  // namespace plait_cuda
