// Python/NumPy semantics on the device: the device side of plait_runtime.h.
// What both sides compute alike (arithmetic, casts, math.* rules, trip
// counts, bounds checks) is portable_runtime.h, pasted where it is included
// below; this text holds what only the device has: the error record and its
// tests, CUDA's math library, atomics, warp, block and team combines, and
// the helpers of team and persistent kernels.
struct device_error {
  int kind;
  int line;
  int col;
  int message;
  long long values[3];
};

// Records the first error of a call; later ones are dropped.
__device__ __forceinline__ void raise_error(device_error* err, int kind, int line, int col, int message,
                                            long long a = 0, long long b = 0, long long c = 0) {
  if (atomicCAS(&err->kind, 0, kind) == 0) {
    err->line = line;
    err->col = col;
    err->message = message;
    err->values[0] = a;
    err->values[1] = b;
    err->values[2] = c;
  }
}

// A thread's view of the call's error record: the errors it raises go to
// the record, and `raised` says that it raised one. The statements of a
// thread's work after one that may raise test `raised` (a register), not
// the record (a load from L2 in each iteration of the loops they are in);
// another thread's error stops this one where it takes its next iteration
// (stopped). The raising helpers take either this or the record itself.
struct thread_errors {
  device_error* err;
  bool raised;
};
__device__ __forceinline__ void raise_error(thread_errors* errors, int kind, int line, int col, int message,
                                            long long a = 0, long long b = 0, long long c = 0) {
  errors->raised = true;
  raise_error(errors->err, kind, line, col, message, a, b, c);
}

// Whether the call has recorded an error, so that device code stops as
// Python would (docs/cuda.md, "Errors on the device"). The volatile load
// reads the record where atomics write it (L2), not an L1 copy that another
// block's error has not reached; a thread that recorded the error reads its
// own write. Threads that test it at different times may disagree, so code
// whose threads wait for each other uses block_stopped or grid_sync.
__device__ __forceinline__ bool stopped(const device_error* err) { return *(const volatile int*)&err->kind != 0; }

// stopped(), one answer for the whole block: a barrier that ORs the
// threads' loads. Kernels whose threads wait for each other (barriers,
// shuffles, team combines) test it at their entry, so that no thread waits
// for one that left.
__device__ __forceinline__ bool block_stopped(const device_error* err) { return __syncthreads_or(stopped(err)) != 0; }

// The last digit of `rest` in base `trip` (both non-negative, trip > 0),
// leaving the others in `rest`: in 32 bits when both fit, where the GPU's
// division is several times shorter than its 64-bit one.
__device__ __forceinline__ int64_t split_digit(int64_t& rest, int64_t trip) {
  if ((((uint64_t)rest | (uint64_t)trip) >> 32) == 0) {
    const uint32_t r = (uint32_t)rest, t = (uint32_t)trip, q = r / t;
    rest = q;
    return (int64_t)(r - q * t);
  }
  const int64_t q = rest / trip, digit = rest - q * trip;
  rest = q;
  return digit;
}

__device__ __forceinline__ double nan_f64() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ double inf_f64() { return __longlong_as_double(0x7ff0000000000000LL); }

// ---- math, overloaded on float and double: CUDA's math library, for kernels
// and for portable_runtime.h
namespace fm {
#define PLAIT_FM1(name)                                                   \
  __device__ __forceinline__ float name(float x) { return ::name##f(x); } \
  __device__ __forceinline__ double name(double x) { return ::name(x); }
#define PLAIT_FM2(name)                                                            \
  __device__ __forceinline__ float name(float x, float y) { return ::name##f(x, y); } \
  __device__ __forceinline__ double name(double x, double y) { return ::name(x, y); }
PLAIT_FM1(sqrt) PLAIT_FM1(exp) PLAIT_FM1(log) PLAIT_FM1(log2) PLAIT_FM1(log10) PLAIT_FM1(sin) PLAIT_FM1(cos)
PLAIT_FM1(tan) PLAIT_FM1(tanh) PLAIT_FM1(asin) PLAIT_FM1(acos) PLAIT_FM1(atan) PLAIT_FM1(sinh) PLAIT_FM1(cosh)
PLAIT_FM1(floor) PLAIT_FM1(ceil) PLAIT_FM1(trunc) PLAIT_FM1(fabs) PLAIT_FM1(rint)
PLAIT_FM2(atan2) PLAIT_FM2(pow) PLAIT_FM2(fmod) PLAIT_FM2(copysign)
#undef PLAIT_FM1
#undef PLAIT_FM2
template <typename T> __device__ __forceinline__ bool isnan(T x) { return x != x; }
// Integers are never infinite; floats are when their magnitude is.
template <typename T> __device__ __forceinline__ bool isinf(T) { return false; }
__device__ __forceinline__ bool isinf(float x) { return fabs(x) == float(inf_f64()); }
__device__ __forceinline__ bool isinf(double x) { return fabs(x) == inf_f64(); }
template <typename T> __device__ __forceinline__ bool isfinite(T x) { return !isnan(x) && !isinf(x); }
}  // namespace fm

#include "portable_runtime.h"

// ---- atomics: native where the hardware has the operation, else a
// compare-and-swap loop on the bits of the value (an 8- or 16-bit value
// lives in its aligned 32-bit word).
template <typename T> __device__ __forceinline__ uint32_t to_word32(T v) {
  if constexpr (traits<T>::is_float) return __float_as_uint(v); else return (uint32_t)v;
}
template <typename T> __device__ __forceinline__ uint64_t to_word64(T v) {
  if constexpr (traits<T>::is_float) return (uint64_t)__double_as_longlong(v); else return (uint64_t)v;
}
// Whether two values differ in their bits (a relaxation that keeps an
// element, NaN payloads and signed zeros included, does not store it).
template <typename T> __device__ __forceinline__ bool bits_differ(T x, T y) {
  if constexpr (sizeof(T) == 8) return to_word64(x) != to_word64(y); else return to_word32(x) != to_word32(y);
}
template <typename T> __device__ __forceinline__ T from_word32(uint32_t w) {
  if constexpr (traits<T>::is_float) return __uint_as_float(w); else return (T)w;
}
template <typename T> __device__ __forceinline__ T from_word64(uint64_t w) {
  if constexpr (traits<T>::is_float) return __longlong_as_double((long long)w); else return (T)w;
}

template <typename T, typename Combine>
__device__ __forceinline__ void atomic_combine(T* p, T v, Combine combine) {
  if constexpr (sizeof(T) == 8) {
    unsigned long long* word = (unsigned long long*)p;
    unsigned long long old = *word, assumed;
    do {
      assumed = old;
      const T next = combine(from_word64<T>((uint64_t)assumed), v);
      old = atomicCAS(word, assumed, (unsigned long long)to_word64(next));
    } while (old != assumed);
  } else if constexpr (sizeof(T) == 4) {
    unsigned int* word = (unsigned int*)p;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T next = combine(from_word32<T>((uint32_t)assumed), v);
      old = atomicCAS(word, assumed, (unsigned int)to_word32(next));
    } while (old != assumed);
  } else {
    constexpr unsigned int mask = sizeof(T) == 2 ? 0xffffu : 0xffu;
    unsigned int* word = (unsigned int*)((unsigned long long)p & ~3ull);
    const unsigned int shift = (unsigned int)((unsigned long long)p & 3ull) * 8u;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T current = (T)((assumed >> shift) & mask);
      const unsigned int next = (unsigned int)combine(current, v) & mask;
      old = atomicCAS(word, assumed, (assumed & ~(mask << shift)) | (next << shift));
    } while (old != assumed);
  }
}

struct op_add {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (traits<T>::is_float) return a + b;
    else return (T)((typename traits<T>::unsigned_type)a + (typename traits<T>::unsigned_type)b);
  }
};
struct op_sub {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (traits<T>::is_float) return a - b;
    else return (T)((typename traits<T>::unsigned_type)a - (typename traits<T>::unsigned_type)b);
  }
};
struct op_mul {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (traits<T>::is_float) {
      return a * b;
    } else {
      typedef typename traits<T>::unsigned_type U;
      return (T)((U)a * (U)b);
    }
  }
};
struct op_div {
  template <typename T> __device__ T operator()(T a, T b) const {
    if constexpr (traits<T>::is_float) return a / b; else return floordiv(a, b);
  }
};
struct op_min { template <typename T> __device__ T operator()(T a, T b) const { return py_min(a, b); } };
struct op_max { template <typename T> __device__ T operator()(T a, T b) const { return py_max(a, b); } };
// NaN-propagating (np.minimum, np.maximum): associative, so partial values
// of a float np.min/np.max combine in any order with NumPy's result.
struct op_minimum { template <typename T> __device__ T operator()(T a, T b) const { return minimum(a, b); } };
struct op_maximum { template <typename T> __device__ T operator()(T a, T b) const { return maximum(a, b); } };
struct op_and { template <typename T> __device__ T operator()(T a, T b) const { return (T)(a & b); } };
struct op_or { template <typename T> __device__ T operator()(T a, T b) const { return (T)(a | b); } };
struct op_xor { template <typename T> __device__ T operator()(T a, T b) const { return (T)(a ^ b); } };

// The native atomics take int, unsigned int, long long and unsigned long
// long: add, sub, and, or and xor wrap the same whatever the sign, so they
// go through the unsigned types; min and max through the type's own sign.
template <typename T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (traits<T>::is_bool) atomic_combine(p, v, op_or());
  else if constexpr (sizeof(T) < 4) atomic_combine(p, v, op_add());
  else if constexpr (traits<T>::is_float) atomicAdd(p, v);
  else if constexpr (sizeof(T) == 8) atomicAdd((unsigned long long*)p, (unsigned long long)v);
  else atomicAdd((unsigned int*)p, (unsigned int)v);
}

template <typename T>
__device__ __forceinline__ void atomic_sub(T* p, T v) {
  if constexpr (sizeof(T) < 4) atomic_combine(p, v, op_sub());
  else if constexpr (traits<T>::is_float) atomicAdd(p, -v);
  else if constexpr (sizeof(T) == 8) atomicAdd((unsigned long long*)p, 0ull - (unsigned long long)v);
  else atomicSub((unsigned int*)p, (unsigned int)v);
}

template <typename T> __device__ __forceinline__ void atomic_mul(T* p, T v) { atomic_combine(p, v, op_mul()); }
template <typename T> __device__ __forceinline__ void atomic_div(T* p, T v) { atomic_combine(p, v, op_div()); }

template <typename T>
__device__ __forceinline__ void atomic_min(T* p, T v) {
  if constexpr (traits<T>::is_float || sizeof(T) < 4) atomic_combine(p, v, op_min());
  else if constexpr (sizeof(T) == 4 && traits<T>::is_signed) atomicMin((int*)p, (int)v);
  else if constexpr (sizeof(T) == 4) atomicMin((unsigned int*)p, (unsigned int)v);
  else if constexpr (traits<T>::is_signed) atomicMin((long long*)p, (long long)v);
  else atomicMin((unsigned long long*)p, (unsigned long long)v);
}

template <typename T>
__device__ __forceinline__ void atomic_max(T* p, T v) {
  if constexpr (traits<T>::is_float || sizeof(T) < 4) atomic_combine(p, v, op_max());
  else if constexpr (sizeof(T) == 4 && traits<T>::is_signed) atomicMax((int*)p, (int)v);
  else if constexpr (sizeof(T) == 4) atomicMax((unsigned int*)p, (unsigned int)v);
  else if constexpr (traits<T>::is_signed) atomicMax((long long*)p, (long long)v);
  else atomicMax((unsigned long long*)p, (unsigned long long)v);
}

template <typename T>
__device__ __forceinline__ void atomic_and(T* p, T v) {
  if constexpr (sizeof(T) == 4) atomicAnd((unsigned int*)p, (unsigned int)v);
  else if constexpr (sizeof(T) == 8) atomicAnd((unsigned long long*)p, (unsigned long long)v);
  else atomic_combine(p, v, op_and());
}

template <typename T>
__device__ __forceinline__ void atomic_or(T* p, T v) {
  if constexpr (sizeof(T) == 4) atomicOr((unsigned int*)p, (unsigned int)v);
  else if constexpr (sizeof(T) == 8) atomicOr((unsigned long long*)p, (unsigned long long)v);
  else atomic_combine(p, v, op_or());
}

template <typename T>
__device__ __forceinline__ void atomic_xor(T* p, T v) {
  if constexpr (sizeof(T) == 4) atomicXor((unsigned int*)p, (unsigned int)v);
  else if constexpr (sizeof(T) == 8) atomicXor((unsigned long long*)p, (unsigned long long)v);
  else atomic_combine(p, v, op_xor());
}

// ---- reductions across a parallel loop: each warp combines its threads'
// partial values with shuffles, then lane 0 folds the warp's value into the
// accumulator with one atomic. Every thread of the block must call it.
template <typename T>
__device__ __forceinline__ T shuffle_down(T v, int offset, unsigned lanes = 0xffffffffu, int width = 32) {
  if constexpr (sizeof(T) < 4) return (T)__shfl_down_sync(lanes, (int)v, offset, width);
  else return __shfl_down_sync(lanes, v, offset, width);
}

template <typename T, typename Op>
__device__ __forceinline__ T warp_combine(T v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, shuffle_down(v, offset));
  return v;
}

template <typename T> __device__ __forceinline__ void reduce_add(T* acc, T v) {
  v = warp_combine(v, op_add());
  if ((threadIdx.x & 31u) == 0) atomic_add(acc, v);
}
template <typename T> __device__ __forceinline__ void reduce_mul(T* acc, T v) {
  v = warp_combine(v, op_mul());
  if ((threadIdx.x & 31u) == 0) atomic_mul(acc, v);
}
template <typename T> __device__ __forceinline__ void reduce_min(T* acc, T v) {
  v = warp_combine(v, op_min());
  if ((threadIdx.x & 31u) == 0) atomic_min(acc, v);
}
template <typename T> __device__ __forceinline__ void reduce_minimum(T* acc, T v) {
  v = warp_combine(v, op_minimum());
  if ((threadIdx.x & 31u) == 0) atomic_combine(acc, v, op_minimum());
}
template <typename T> __device__ __forceinline__ void reduce_maximum(T* acc, T v) {
  v = warp_combine(v, op_maximum());
  if ((threadIdx.x & 31u) == 0) atomic_combine(acc, v, op_maximum());
}
template <typename T> __device__ __forceinline__ void reduce_max(T* acc, T v) {
  v = warp_combine(v, op_max());
  if ((threadIdx.x & 31u) == 0) atomic_max(acc, v);
}

// ---- teams: a worker of a team-mapped parallel loop is `team` consecutive
// threads of a block (team 32 to the block's threads, or 2 for inner loops
// whose trip counts the host cannot know; a power of two; or 1, one thread
// per worker, when the host launches a team kernel so).
// The lanes of the caller's warp in its team, when the team is part of a
// warp (the other teams of the warp may have left the loop over workers).
__device__ __forceinline__ unsigned team_lanes(int team) {
  return ((1u << team) - 1u) << (threadIdx.x & 31u & ~(unsigned)(team - 1));
}

// Barrier among the threads of the caller's team.
__device__ __forceinline__ void team_sync(int team) {
  if (team == 1) return;
  if (team < 32) {
    __syncwarp(team_lanes(team));
  } else if (team == 32) {
    __syncwarp();
  } else if (team == (int)blockDim.x) {
    __syncthreads();
  } else {
    // Named barrier 1 + the team's index in the block (barrier 0 is
    // __syncthreads's); the team is a power of two: a shift, not a division.
    asm volatile("bar.sync %0, %1;" : : "r"(1 + (int)(threadIdx.x >> (__ffs(team) - 1))), "r"(team) : "memory");
  }
}

// stopped(), one answer for the caller's team, where all its threads are
// together (the back edge of the loop over workers): the team leaves
// together, so that none waits at team_sync for one that left. The same
// barriers as team_sync, with a vote.
__device__ __forceinline__ bool team_stopped(const device_error* err, int team) {
  const bool mine = stopped(err);
  if (team == 1) return mine;
  if (team < 32) return __any_sync(team_lanes(team), mine) != 0;
  if (team == 32) return __any_sync(0xffffffffu, mine) != 0;
  if (team == (int)blockDim.x) return __syncthreads_or(mine) != 0;
  unsigned any;
  asm volatile(
      "{\n"
      "  .reg .pred p_mine, p_any;\n"
      "  setp.ne.u32 p_mine, %1, 0;\n"
      "  bar.red.or.pred p_any, %2, %3, p_mine;\n"
      "  selp.u32 %0, 1, 0, p_any;\n"
      "}"
      : "=r"(any)
      : "r"((unsigned)mine), "r"(1 + (int)(threadIdx.x >> (__ffs(team) - 1))), "r"(team)
      : "memory");
  return any != 0;
}

template <typename T>
__device__ __forceinline__ T shuffle_from(T v, int lane, unsigned lanes = 0xffffffffu, int width = 32) {
  if constexpr (sizeof(T) < 4) return (T)__shfl_sync(lanes, (int)v, lane, width);
  else return __shfl_sync(lanes, v, lane, width);
}

// Combines one value of each thread of the team and gives every thread the
// same result: each warp combines with shuffles into its lane 0; with more
// than one warp, lane 0 writes the warp's value to `partials` (one slot per
// warp of the block) and, after a barrier, every thread folds its team's
// slots in the same order. Every thread of the team must call it.
template <typename T, typename Op>
__device__ __forceinline__ T team_combine(T v, Op op, int team, T* partials) {
  if (team == 1) return v;
  if (team < 32) {
    // Within the team's lanes: down to its first lane, then from it.
    const unsigned lanes = team_lanes(team);
    for (int offset = team >> 1; offset > 0; offset >>= 1) v = op(v, shuffle_down(v, offset, lanes, team));
    return shuffle_from(v, 0, lanes, team);
  }
  v = warp_combine(v, op);
  if (team == 32) return shuffle_from(v, 0);
  const int warp = (int)(threadIdx.x >> 5);
  if ((threadIdx.x & 31u) == 0) partials[warp] = v;
  team_sync(team);
  const int first = warp & ~(team / 32 - 1);
  T result = partials[first];
  for (int w = 1; w < team / 32; ++w) result = op(result, partials[first + w]);
  team_sync(team);  // the slots may be written again by the next combine
  return result;
}

// ---- several iterations per thread: the elements of N consecutive
// iterations as one access, aligned so that the compiler emits vector loads
// and stores (16 bytes at most each: two for 4 doubles).
template <typename T, int N>
struct alignas(sizeof(T) * N > 16 ? 16 : sizeof(T) * N) lanes {
  T v[N];
};
template <typename T, int N>
__device__ __forceinline__ bool lanes_aligned(const T* p) {
  return (uint64_t)p % alignof(lanes<T, N>) == 0;
}

// ---- groups of a team's spread loop (docs/cuda.md, "Vector accesses in
// teams"): the elements of `count` (at most N) consecutive iterations,
// `apart` elements apart from p; one vector access when `whole` (all N,
// apart 1, p aligned: the caller checked), else element by element (the
// other lanes of a load are zero).
template <typename T, int N>
__device__ __forceinline__ lanes<T, N> load_lanes(const T* p, int64_t apart, bool whole, int count) {
  if (whole) return *reinterpret_cast<const lanes<T, N>*>(p);
  lanes<T, N> out;
#pragma unroll
  for (int u = 0; u < N; ++u) out.v[u] = u < count ? p[u * apart] : T();
  return out;
}
template <typename T, int N>
__device__ __forceinline__ void store_lanes(T* p, const lanes<T, N>& value, int64_t apart, bool whole, int count) {
  if (whole) {
    *reinterpret_cast<lanes<T, N>*>(p) = value;
    return;
  }
#pragma unroll
  for (int u = 0; u < N; ++u)
    if (u < count) p[u * apart] = value.v[u];
}
// store_lanes of an update x = min(x, y) (or max): the group stores only
// when one of its elements' bits differs from `before`, the values the group
// loaded from the same elements. A relaxation that keeps most elements
// (Floyd-Warshall's later steps) then leaves their cache lines clean.
template <typename T, int N>
__device__ __forceinline__ void store_changed_lanes(T* p, const lanes<T, N>& value, const lanes<T, N>& before,
                                                    int64_t apart, bool whole, int count) {
  bool changed = false;
#pragma unroll
  for (int u = 0; u < N; ++u) changed = changed || (u < count && bits_differ(value.v[u], before.v[u]));
  if (changed) store_lanes(p, value, apart, whole, count);
}

// ---- temporaries of parallel loops: whether `ndim` extents (negative
// ones count as 0) fit in `capacity` elements.
__device__ __forceinline__ bool temporary_fits(const int64_t* shape, int ndim, int64_t capacity) {
  uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] <= 0) return true;
    if ((uint64_t)shape[d] > (uint64_t)capacity / count) return false;
    count *= (uint64_t)shape[d];
  }
  return true;
}

// ---- filling a fresh array (np.ones, np.full)
template <typename T>
__device__ __forceinline__ void fill(T* data, int64_t count, T value) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) data[i] = value;
}

// ---- persistent kernels: every block of the launch runs all steps of a time
// loop, and waits here for the others between its parallel loops; the
// result is whether the call has recorded an error, the same for every
// thread of every block, and the kernel returns when it is true. With one
// block, __syncthreads_or is the barrier and ORs the threads' reads of the
// record (a thread that recorded the error reads its own write). With more
// (a cooperative launch, so all blocks are resident), `barrier` points to
// two counters in the scratch buffer: arrivals, zero at the launch and reset
// by the last block to arrive, then a generation number, which the last
// block advances to release the others. Thread 0 stands for its block:
// __syncthreads orders the block's writes (and errors) before its fence and
// arrival, and the fence after the release orders the other blocks' writes
// before the block's later reads.
//
// Why no block can wait for one that left: the last block to arrive reads
// the record once every block has arrived, so after every error recorded
// before this barrier and before any recorded after it (no block runs
// between its arrival and its release), and tells the others by the size of
// its step to the generation: 2 to stop, 1 to go on. Each block reads that
// step before it can arrive at the next barrier, so the next barrier cannot
// complete (and its last block cannot advance the generation again) before
// every block has read this one's. So all blocks leave at the same barrier,
// or all go on to the next, which every block reaches: work between
// barriers never returns from the kernel (an error leaves the thread's
// iteration, not the kernel).
__device__ __forceinline__ bool grid_sync(unsigned int* barrier, const device_error* err) {
  if (gridDim.x == 1) return __syncthreads_or(stopped(err)) != 0;
  __syncthreads();
  bool stop = false;
  if (threadIdx.x == 0) {
    volatile unsigned int* generation = barrier + 1;
    const unsigned int seen = *generation;  // cannot advance before this block arrives
    __threadfence();
    if (atomicAdd(barrier, 1u) == gridDim.x - 1) {
      atomicExch(barrier, 0u);
      __threadfence();
      atomicAdd(barrier + 1, stopped(err) ? 2u : 1u);
    } else {
      while (*generation == seen) {
      }
    }
    __threadfence();
    stop = *generation - seen == 2u;
  }
  return __syncthreads_or(stop) != 0;
}

// A bound of a thread's slots in a kernel with its arrays in registers:
// `bound` clamped to 0..slots (the loop's begin or end, as a slot number).
__device__ __forceinline__ int slot_bound(int64_t bound, int slots) {
  return bound < 0 ? 0 : bound > slots ? slots : static_cast<int>(bound);
}

// Bytes an array of `count` elements of `item_size` bytes takes in a
// persistent kernel's shared memory: rounded up to 16, so that the next
// array starts aligned for vector accesses. Mirrors plait_cuda::onchip_bytes.
__device__ __forceinline__ uint64_t onchip_bytes(int64_t count, uint64_t item_size) {
  return ((uint64_t)count * item_size + 15) / 16 * 16;
}
