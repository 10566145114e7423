// The run-time support of generated CPU kernels: Python/NumPy arithmetic
// where C++ differs, run-time error reports, bounds checks, atomics and array
// allocation. Header-only; the code generator (codegen/runtime_text.cpp)
// pastes it into every kernel after the text of abi.h and the enumerations
// of error kinds and messages with the messages' formats, so it uses
// plait_context, the PLAIT_* codes and message_formats without including
// abi.h itself. portable_runtime.h, the part it shares with device code, is
// pasted where it is included. Everything is inline so unused helpers cost
// nothing and hot ones inline into vectorised loops.
// An include guard, not #pragma once: the text sits in the kernel's main file.
#ifndef PLAIT_RUNTIME_H
#define PLAIT_RUNTIME_H

#include <sys/mman.h>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>

// ---------------------------------------------------------------- vector math

// NumPy's one-argument ufuncs (np.exp, np.sin, ...) call plait_vm_<name>. g++ calls a
// function's SIMD variants from `omp simd` loops only when its declaration
// says they exist (`declare simd`); glibc's libmvec provides them (within 4
// ulp, as NumPy's own SIMD loops are within a few ulp of the C library).
// The declarations bind new names to the C library's symbols (asm labels),
// so that math.* calls keep the scalar functions that Python's math module
// uses. Elsewhere the names forward to <cmath>.
#define PLAIT_SCALAR_MATH_1(name)                     \
  inline double plait_vm_##name(double x) noexcept {  \
    return std::name(x);                              \
  }                                                   \
  inline float plait_vm_##name##f(float x) noexcept { \
    return std::name(x);                              \
  }
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) && defined(_OPENMP)
#define PLAIT_SIMD_MATH_1(name)                                                                          \
  _Pragma("omp declare simd notinbranch") extern "C" double plait_vm_##name(double) noexcept __asm__(#name); \
  _Pragma("omp declare simd notinbranch") extern "C" float plait_vm_##name##f(float) noexcept __asm__(#name "f");
// libmvec has exp, log, sin and cos since glibc 2.22, the others since 2.35.
#if __GLIBC_PREREQ(2, 35)
#define PLAIT_NEWER_MATH_1 PLAIT_SIMD_MATH_1
#else
#define PLAIT_NEWER_MATH_1 PLAIT_SCALAR_MATH_1
#endif
#else
#define PLAIT_SIMD_MATH_1 PLAIT_SCALAR_MATH_1
#define PLAIT_NEWER_MATH_1 PLAIT_SCALAR_MATH_1
#endif
PLAIT_SIMD_MATH_1(exp)
PLAIT_SIMD_MATH_1(log)
PLAIT_SIMD_MATH_1(sin)
PLAIT_SIMD_MATH_1(cos)
PLAIT_NEWER_MATH_1(log2)
PLAIT_NEWER_MATH_1(log10)
PLAIT_NEWER_MATH_1(tan)
PLAIT_NEWER_MATH_1(tanh)
PLAIT_NEWER_MATH_1(asin)
PLAIT_NEWER_MATH_1(acos)
PLAIT_NEWER_MATH_1(atan)
PLAIT_NEWER_MATH_1(sinh)
PLAIT_NEWER_MATH_1(cosh)
#undef PLAIT_SCALAR_MATH_1
#undef PLAIT_SIMD_MATH_1
#undef PLAIT_NEWER_MATH_1

namespace plait {

// ---------------------------------------------------------------- errors

// The iteration (counted from 0 in Python's order) of the parallel loop that
// the calling thread runs, -1 outside one: the generated code sets it around
// each iteration of a parallel loop whose body may raise.
inline thread_local int64_t parallel_iteration = -1;

// Records a run-time error in `ctx`: the first of the call, except that in
// a parallel loop an error of an earlier iteration replaces that of a later
// one, so that the call raises the error Python raises (threads run
// iterations out of order). The helper that raised returns a harmless value;
// the generated code tests ctx->error_kind before the statement's effect and
// stops (returns ctx->error_kind, or leaves a parallel loop's iteration).
// Cold and out of line, so that the checks that may call it (trip counts,
// interrupts, index checks) stay small enough to inline into the loops that
// run them: a row loop of spmv paid a call per row otherwise.
[[gnu::cold, gnu::noinline]] inline void raise_error(plait_context* ctx, int32_t kind, int line, int col,
                                                     const char* message) {
  static int32_t lock = 0;  // errors are rare: a spin lock
  while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE) != 0) {
  }
  const int64_t at = parallel_iteration;
  int32_t* slot = const_cast<int32_t*>(&ctx->error_kind);
  if (*slot == PLAIT_OK || (at >= 0 && at < __atomic_load_n(&ctx->error_iteration, __ATOMIC_RELAXED))) {
    ctx->error_line = line;
    ctx->error_col = col;
    std::snprintf(ctx->error_message, sizeof ctx->error_message, "%s", message);
    __atomic_store_n(&ctx->error_iteration, at, __ATOMIC_RELAXED);
    __atomic_store_n(slot, kind, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

// Records the error of a message in the table of runtime/device_errors
// (message_formats, which the code generator prints before this text): its
// format over a, b and c. portable_runtime.h raises its errors so, as
// device code, which cannot format text, records them by number.
[[gnu::cold, gnu::noinline]] inline void raise_error(plait_context* ctx, int32_t kind, int line, int col,
                                                     message_code message, long long a = 0, long long b = 0,
                                                     long long c = 0) {
  char text[sizeof ctx->error_message];
  std::snprintf(text, sizeof text, message_formats[message], a, b, c);
  raise_error(ctx, kind, line, col, text);
}

// Whether the recorded error stops the calling thread: always outside a
// parallel loop; in one, when it was raised at this iteration or an earlier
// one (or outside the loop). A later iteration's error lets this iteration
// run on, as Python runs it before the failing one.
inline bool stops(const plait_context* ctx) {
  return parallel_iteration < 0 || __atomic_load_n(&ctx->error_iteration, __ATOMIC_RELAXED) <= parallel_iteration;
}

// Whether the caller asked the kernel to stop (SIGINT): records a
// KeyboardInterrupt and returns true, so that the loop testing it stops.
[[gnu::always_inline]] inline bool interrupted(plait_context* ctx) {
  if (__builtin_expect(ctx->interrupt == nullptr || *ctx->interrupt == 0, 1)) return false;
  raise_error(ctx, PLAIT_KEYBOARD_INTERRUPT, 0, 0, "");
  return true;
}

// ---------------------------------------------------------------- math

// The C++ library's math functions under the names portable_runtime.h calls
// (the device side has CUDA's under the same names).
namespace fm {
using std::copysign;
using std::floor;
using std::fmod;
using std::isfinite;
using std::isinf;
using std::isnan;
using std::pow;
}  // namespace fm

#include "portable_runtime.h"

// ---------------------------------------------------------------- bounds and loops

// One index of a checked load: the index, the axis's extent and stride.
struct checked_axis {
  int64_t index, extent, stride;
};

// The element of `data` at `axes` when every index is in bounds; otherwise
// reports NumPy's IndexError for the first that is not and returns 0 without
// reading. A function rather than a lambda at each load: GCC's time and
// memory grow steeply with lambdas inside deeply nested expressions.
template <typename T, size_t N>
inline T load_checked(plait_context* ctx, int line, int col, const T* data, const checked_axis (&axes)[N]) {
  int64_t offset = 0;
  for (size_t d = 0; d < N; ++d) {
    if (!index_ok(ctx, line, col, axes[d].index, static_cast<int>(d), axes[d].extent)) return T(0);
    offset += axes[d].index * axes[d].stride;
  }
  return data[offset];
}

// The trip count of range(begin, end, step) where the loop runs: a zero
// step is Python's ValueError, and a range of more than 2**63 - 1 values
// (which a 64-bit loop counter cannot count, and Python would take
// centuries to run) an OverflowError; either is recorded in `ctx`, at the
// loop's line, and the loop runs no iteration.
[[gnu::always_inline]] inline int64_t checked_trip_count(plait_context* ctx, int line, int col, int64_t begin,
                                                        int64_t end, int64_t step) {
  if (__builtin_expect(step == 0, 0)) {
    raise_error(ctx, PLAIT_VALUE_ERROR, line, col, "range() arg 3 must not be zero");
    return 0;
  }
  const uint64_t length = range_length(begin, end, step);
  if (__builtin_expect(length > static_cast<uint64_t>(INT64_MAX), 0)) {
    raise_error(ctx, PLAIT_OVERFLOW_ERROR, line, col,
                "range() has more than 2**63 - 1 values, more than a 64-bit loop counter can count");
    return 0;
  }
  return static_cast<int64_t>(length);
}

// ---------------------------------------------------------------- atomics

// Atomically replaces *p by combine(*p, v) with a compare-exchange loop
// (floats, multiplication, min/max).
template <typename T, typename Combine>
inline void atomic_combine(T* p, T v, Combine combine) {
  T expected;
  __atomic_load(p, &expected, __ATOMIC_RELAXED);
  T desired = combine(expected, v);
  while (!__atomic_compare_exchange(p, &expected, &desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    desired = combine(expected, v);
  }
}

template <typename T>
inline void atomic_add(T* p, T v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v) __atomic_store_n(p, true, __ATOMIC_RELAXED);
  } else {
    atomic_combine(p, v, [](T a, T b) { return a + b; });
  }
}

template <typename T>
inline void atomic_sub(T* p, T v) {
  if constexpr (std::is_integral_v<T>) {
    __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
  } else {
    atomic_combine(p, v, [](T a, T b) { return a - b; });
  }
}

template <typename T>
inline void atomic_mul(T* p, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v) __atomic_store_n(p, false, __ATOMIC_RELAXED);
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    atomic_combine(p, v, [](T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); });
  } else {
    atomic_combine(p, v, [](T a, T b) { return a * b; });
  }
}

// Division: true division for floats, floor division for ints.
template <typename T>
inline void atomic_div(T* p, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    atomic_combine(p, v, [](T a, T b) { return a / b; });
  } else {
    atomic_combine(p, v, [](T a, T b) { return floordiv(a, b); });
  }
}

// Min/max keep Python's builtin rule on the stored value: the stored value
// is replaced only when v compares strictly smaller/greater, so a NaN `v` is
// ignored and a stored NaN stays.
template <typename T>
inline void atomic_min(T* p, T v) {
  atomic_combine(p, v, [](T stored, T b) { return py_min(stored, b); });
}

template <typename T>
inline void atomic_max(T* p, T v) {
  atomic_combine(p, v, [](T stored, T b) { return py_max(stored, b); });
}

template <typename T>
inline void atomic_and(T* p, T v) { __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }

template <typename T>
inline void atomic_or(T* p, T v) { __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }

template <typename T>
inline void atomic_xor(T* p, T v) { __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }

// ---------------------------------------------------------------- arrays

// Keeps the storage of arrays a kernel allocates alive: shared by every
// local bound to it and, when returned, by the caller's handle.
using array_owner = std::shared_ptr<void>;

// Frees a returned array's handle (plait_result::release).
inline void release_owner(void* owner) { delete static_cast<array_owner*>(owner); }

// Hands a kernel-allocated array to the caller: a heap copy of its owner, or
// null for a borrowed array (no owner).
inline void* export_owner(const array_owner& owner) { return owner ? new array_owner(owner) : nullptr; }

// An array fresh from allocate_array. `ok` is false after an error (reported
// in ctx); the extents are then all 0.
template <typename T>
struct allocation {
  T* data = nullptr;
  int64_t shape[PLAIT_MAX_NDIM] = {};
  int64_t strides[PLAIT_MAX_NDIM] = {};
  array_owner owner;
  bool ok = false;
};

enum class fill_kind : int { uninitialized, zeros, ones, value };

// The element count and byte size of a new array of `ndim` extents `shape`
// with elements of `item_size` bytes, or false with the error recorded:
// negative extents are NumPy's ValueError, sizes that overflow a MemoryError.
inline bool array_size(plait_context* ctx, int line, int col, int ndim, const int64_t* shape, uint64_t item_size,
                       uint64_t* count, uint64_t* bytes) {
  *count = 1;
  bool too_big = false;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0) {
      raise_error(ctx, PLAIT_VALUE_ERROR, line, col, "negative dimensions are not allowed");
      return false;
    }
    if (__builtin_mul_overflow(*count, static_cast<uint64_t>(shape[d]), count)) too_big = true;
  }
  if (too_big || __builtin_mul_overflow(*count, item_size, bytes) || *bytes > (uint64_t(1) << 62)) {
    raise_error(ctx, PLAIT_MEMORY_ERROR, line, col, "array is too big; the size overflows");
    return false;
  }
  return true;
}

// A new array's extents and strides (in elements): C order (the last
// dimension contiguous) or Fortran order.
template <typename T>
inline void set_layout(allocation<T>& out, int ndim, const int64_t* shape, bool fortran_order) {
  int64_t stride = 1;
  for (int k = 0; k < ndim; ++k) {
    const int d = fortran_order ? k : ndim - 1 - k;
    out.shape[d] = shape[d];
    out.strides[d] = stride;
    stride *= shape[d];
  }
}

// Allocates an array of `ndim` extents `shape`, 64-byte aligned, in C order
// (last dimension contiguous) or Fortran order, filled as `fill` says.
// Negative extents are NumPy's ValueError; sizes that overflow or cannot be
// allocated are a MemoryError.
template <typename T>
inline allocation<T> allocate_array(plait_context* ctx, int line, int col, int ndim, const int64_t* shape,
                                    bool fortran_order, fill_kind fill, T fill_value) {
  allocation<T> out;
  uint64_t count = 0, bytes = 0;
  if (!array_size(ctx, line, col, ndim, shape, sizeof(T), &count, &bytes)) return out;
  // Large arrays are aligned to 2 MiB and asked for huge pages (as NumPy
  // does from 4 MiB on): one page fault per 2 MiB instead of per 4 KiB. They
  // come from the caller's pool when it has one (ctx->memory), which hands
  // back blocks of earlier calls with their pages already in place.
  const bool huge = bytes >= PLAIT_HOST_MEMORY_LARGE_BYTES;
  const uint64_t align = huge ? (uint64_t(2) << 20) : 64;
  const uint64_t rounded = (bytes + align - 1) / align * align;
  const plait_host_memory* const pool = huge ? ctx->memory : nullptr;
  void* storage = nullptr;
  if (pool != nullptr) {
    storage = pool->allocate(rounded);
  } else {
    storage = std::aligned_alloc(static_cast<size_t>(align), rounded == 0 ? 64 : static_cast<size_t>(rounded));
    if (storage != nullptr && huge) ::madvise(storage, static_cast<size_t>(rounded), MADV_HUGEPAGE);
  }
  if (storage == nullptr) {
    char message[120];
    std::snprintf(message, sizeof message, "Unable to allocate %llu bytes for an array",
                  static_cast<unsigned long long>(bytes));
    raise_error(ctx, PLAIT_MEMORY_ERROR, line, col, message);
    return out;
  }
  if (pool != nullptr) {
    out.owner = array_owner(storage, [release = pool->release, rounded](void* block) { release(block, rounded); });
  } else {
    out.owner = array_owner(storage, std::free);
  }
  out.data = static_cast<T*>(storage);
  set_layout(out, ndim, shape, fortran_order);
  if (fill == fill_kind::zeros) {
    std::memset(storage, 0, static_cast<size_t>(bytes));
  } else if (fill != fill_kind::uninitialized) {
    const T value = fill == fill_kind::ones ? T(1) : fill_value;
    for (uint64_t i = 0; i < count; ++i) out.data[i] = value;
  }
  out.ok = true;
  return out;
}

}  // namespace plait

#endif  // PLAIT_RUNTIME_H
