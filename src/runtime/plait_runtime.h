// The run-time support of generated CPU kernels: Python/NumPy arithmetic
// where C++ differs, run-time error reports, bounds checks, atomics and array
// allocation. Header-only; the code generator pastes it into every kernel
// after the text of abi.h (so it uses plait_context and the PLAIT_* codes
// without including abi.h itself). Everything is inline so unused helpers
// cost nothing and hot ones inline into vectorised loops.
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
inline void raise_error(plait_context* ctx, int32_t kind, int line, int col, const char* message) {
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

// Whether the recorded error stops the calling thread: always outside a
// parallel loop; in one, when it was raised at this iteration or an earlier
// one (or outside the loop). A later iteration's error lets this iteration
// run on, as Python runs it before the failing one.
inline bool stops(const plait_context* ctx) {
  return parallel_iteration < 0 || __atomic_load_n(&ctx->error_iteration, __ATOMIC_RELAXED) <= parallel_iteration;
}

// Whether the caller asked the kernel to stop (SIGINT): records a
// KeyboardInterrupt and returns true, so that the loop testing it stops.
inline bool interrupted(plait_context* ctx) {
  if (__builtin_expect(ctx->interrupt == nullptr || *ctx->interrupt == 0, 1)) return false;
  raise_error(ctx, PLAIT_KEYBOARD_INTERRUPT, 0, 0, "");
  return true;
}

// True when 0 <= index < extent; otherwise reports NumPy's IndexError.
inline bool index_ok(plait_context* ctx, int line, int col, int64_t index, int axis, int64_t extent) {
  if (__builtin_expect(index >= 0 && index < extent, 1)) return true;
  char message[160];
  std::snprintf(message, sizeof message, "index %lld is out of bounds for axis %d with size %lld",
                static_cast<long long>(index), axis, static_cast<long long>(extent));
  raise_error(ctx, PLAIT_INDEX_ERROR, line, col, message);
  return false;
}

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

// ---------------------------------------------------------------- loops

// The number of values of range(begin, end, step), step != 0, as an
// unsigned count: extreme bounds cannot overflow it (at most 2**64 - 1).
inline uint64_t range_length(int64_t begin, int64_t end, int64_t step) {
  if (step > 0) {
    if (end <= begin) return 0;
    return (static_cast<uint64_t>(end) - static_cast<uint64_t>(begin) - 1) / static_cast<uint64_t>(step) + 1;
  }
  if (begin <= end) return 0;
  return (static_cast<uint64_t>(begin) - static_cast<uint64_t>(end) - 1) / (0 - static_cast<uint64_t>(step)) + 1;
}

// The trip count of range(begin, end, step) where the loop runs: a zero
// step is Python's ValueError, and a range of more than 2**63 - 1 values
// (which a 64-bit loop counter cannot count, and Python would take
// centuries to run) an OverflowError; either is recorded in `ctx`, at the
// loop's line, and the loop runs no iteration.
inline int64_t checked_trip_count(plait_context* ctx, int line, int col, int64_t begin, int64_t end, int64_t step) {
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

// The trip count of a range that the caller knows is valid: a nonzero step
// and at most 2**63 - 1 values (checked_trip_count checks both).
inline int64_t trip_count(int64_t begin, int64_t end, int64_t step) {
  return static_cast<int64_t>(range_length(begin, end, step));
}

// ---------------------------------------------------------------- arithmetic

// Floor division rounding toward negative infinity (Python //). Integer
// division by zero gives 0 as NumPy does; INT_MIN // -1 wraps to INT_MIN.
// Unsigned division needs no rounding fix-up.
template <typename T>
inline T floordiv(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return a / b;
    T rem = std::fmod(a, b);
    T quot = (a - rem) / b;
    if (rem != 0 && ((b < 0) != (rem < 0))) quot -= 1;
    if (quot == 0) return std::copysign(T(0), a / b);
    // (a - rem) / b is an integer up to rounding; snap it to the nearest one.
    T whole = std::floor(quot);
    if (quot - whole > T(0.5)) whole += 1;
    return whole;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(a / b);
    } else {
      if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
      T quot = static_cast<T>(a / b);
      if ((a % b != 0) && ((a < 0) != (b < 0))) --quot;
      return quot;
    }
  }
}

// Remainder with the sign of the divisor (Python %, np.mod). Integer modulo
// by zero gives 0 (NumPy); float modulo by zero gives NaN.
template <typename T>
inline T mod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return std::fmod(a, b);
    T rem = std::fmod(a, b);
    if (rem != 0) {
      if ((b < 0) != (rem < 0)) rem += b;
    } else {
      rem = std::copysign(T(0), b);
    }
    return rem;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(a % b);
    } else {
      if (b == -1) return 0;
      T rem = static_cast<T>(a % b);
      if (rem != 0 && ((rem < 0) != (b < 0))) rem = static_cast<T>(rem + b);
      return rem;
    }
  }
}

// Python's ZeroDivisionError checks for operations on Python scalars.
template <typename T>
inline T div_checked(T a, T b, plait_context* ctx, int line, int col) {
  if (b == 0) {
    raise_error(ctx, PLAIT_ZERO_DIVISION_ERROR, line, col, "float division by zero");
    return 0;
  }
  return a / b;
}

template <typename T>
inline T floordiv_checked(T a, T b, plait_context* ctx, int line, int col) {
  if (b == 0) {
    raise_error(ctx, PLAIT_ZERO_DIVISION_ERROR, line, col,
                std::is_floating_point_v<T> ? "float floor division by zero" : "integer division or modulo by zero");
    return 0;
  }
  return floordiv(a, b);
}

template <typename T>
inline T mod_checked(T a, T b, plait_context* ctx, int line, int col) {
  if (b == 0) {
    raise_error(ctx, PLAIT_ZERO_DIVISION_ERROR, line, col,
                std::is_floating_point_v<T> ? "float modulo" : "integer modulo by zero");
    return 0;
  }
  return mod(a, b);
}

// Integer power by squaring with wrap-around (NumPy). A negative exponent is
// NumPy's ValueError.
template <typename T>
inline T pow_int(T base, T exponent, plait_context* ctx, int line, int col) {
  if (std::is_signed_v<T> && exponent < T(0)) {
    raise_error(ctx, PLAIT_VALUE_ERROR, line, col, "Integers to negative integer powers are not allowed.");
    return 0;
  }
  using U = std::make_unsigned_t<T>;
  U result = 1;
  U factor = static_cast<U>(base);
  for (U e = static_cast<U>(exponent); e != 0; e >>= 1) {
    if (e & 1) result = static_cast<U>(result * factor);
    factor = static_cast<U>(factor * factor);
  }
  return static_cast<T>(result);
}

// Float power; `checked` adds Python's ZeroDivisionError for 0.0 ** negative.
// A power of two Python ints whose exponent is known only at run time. The
// kernel types it int (a static type cannot follow Python, whose result is a
// float exactly when the exponent is negative), so a negative exponent raises
// instead of giving a wrong int.
template <typename T>
inline T pow_python_int(T base, T exponent, plait_context* ctx, int line, int col) {
  if (exponent < T(0)) {
    raise_error(ctx, PLAIT_VALUE_ERROR, line, col,
                "a negative exponent in a power of Python ints: Python gives a float, but the kernel typed this power "
                "as int (its exponent is not a constant); write 2.0 ** n or float(b) ** n for a float");
    return 0;
  }
  return pow_int(base, exponent, ctx, line, col);
}

template <typename T, typename E>
inline T pow_float(T base, E exponent) {
  return static_cast<T>(std::pow(base, static_cast<T>(exponent)));
}

template <typename T, typename E>
inline T pow_float_checked(T base, E exponent, plait_context* ctx, int line, int col) {
  if (base == 0 && exponent < 0) {
    raise_error(ctx, PLAIT_ZERO_DIVISION_ERROR, line, col, "0.0 cannot be raised to a negative power");
    return 0;
  }
  // Python's float power overflows with an error, not to inf.
  const T r = pow_float(base, exponent);
  if (std::isinf(r) && std::isfinite(base) && std::isfinite(static_cast<T>(exponent)))
    raise_error(ctx, PLAIT_OVERFLOW_ERROR, line, col, "(34, 'Numerical result out of range')");
  return r;
}

// np.minimum / np.maximum: NaN-propagating.
template <typename T>
inline T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}

template <typename T>
inline T maximum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b > a ? b : a;
}

// The builtins min(a, b) / max(a, b): the first argument unless the second
// compares strictly smaller/greater (so NaN handling follows Python).
template <typename T>
inline T py_min(T a, T b) { return b < a ? b : a; }

template <typename T>
inline T py_max(T a, T b) { return b > a ? b : a; }

// Shifts with Python results for counts in range; counts >= the width give
// 0 (left) or the sign (right), negative counts give 0 / the sign, as NumPy.
template <typename T, typename C>
inline T shl(T a, C count) {
  if (count < 0 || count >= static_cast<C>(sizeof(T) * 8)) return 0;
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << count);
}

template <typename T, typename C>
inline T shr(T a, C count) {
  if (count < 0 || count >= static_cast<C>(sizeof(T) * 8)) return std::is_signed_v<T> && a < T(0) ? T(-1) : T(0);
  return static_cast<T>(a >> count);
}

// |a| for ints, wrapping for the most negative value as NumPy does.
template <typename T>
inline T abs_int(T a) {
  if constexpr (std::is_unsigned_v<T>) return a;
  else return a < 0 ? static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a)) : a;
}

// ---------------------------------------------------------------- casts

// Float to int truncating toward zero, with NumPy's results on x86 instead of
// C++'s UB. int32 and int64: NaN and out-of-range values give the most
// negative value (what cvttsd2si yields). 8- and 16-bit ints go through
// int32 and uint32 through int64, keeping the low bits (-1.0 -> 255 for
// uint8, 4294967295 for uint32).
// uint64: values in [2^63, 2^64) convert exactly, larger ones give 0, the
// rest go through int64.
template <typename I, typename F>
inline I float_to_int(F x) {
  if constexpr (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>) {
    // 2^(bits-1) is exact in every float type; the range is [-2^(b-1), 2^(b-1)).
    constexpr F limit = static_cast<F>(static_cast<double>(uint64_t(1) << (sizeof(I) * 8 - 1)));
    if (!(x >= -limit && x < limit)) return std::numeric_limits<I>::min();
    return static_cast<I>(x);
  } else if constexpr (std::is_same_v<I, uint64_t>) {
    constexpr F half = static_cast<F>(9223372036854775808.0);
    if (x >= half) return x < half * F(2) ? static_cast<uint64_t>(x) : 0;
    return static_cast<uint64_t>(float_to_int<int64_t>(x));
  } else if constexpr (sizeof(I) < 4) {
    return static_cast<I>(float_to_int<int32_t>(x));
  } else {
    return static_cast<I>(float_to_int<int64_t>(x));
  }
}

// Python's int(x): NaN is a ValueError, infinities and values beyond the
// target range an OverflowError.
template <typename I, typename F>
inline I checked_float_to_int(F x, plait_context* ctx, int line, int col) {
  constexpr F limit = static_cast<F>(static_cast<double>(uint64_t(1) << (sizeof(I) * 8 - 1)));
  // One range test on the hot path (NaN and infinities fail it too); which
  // error it was is worked out only when it fails.
  if (__builtin_expect(x >= -limit && x < limit, 1)) return static_cast<I>(x);
  if (x != x) {
    raise_error(ctx, PLAIT_VALUE_ERROR, line, col, "cannot convert float NaN to integer");
    return 0;
  }
  if (std::isinf(x)) {
    raise_error(ctx, PLAIT_OVERFLOW_ERROR, line, col, "cannot convert float infinity to integer");
    return 0;
  }
  if (!(x >= -limit && x < limit)) {
    raise_error(ctx, PLAIT_OVERFLOW_ERROR, line, col,
                sizeof(I) == 4 ? "int too large to convert to int32" : "int too large to convert to int64");
    return 0;
  }
  return static_cast<I>(x);
}

// The NumPy name of an integer type, for messages.
template <typename I>
constexpr const char* int_dtype_name() {
  constexpr int bits = sizeof(I) * 8;
  if constexpr (std::is_unsigned_v<I>)
    return bits == 8 ? "uint8" : bits == 16 ? "uint16" : bits == 32 ? "uint32" : "uint64";
  else
    return bits == 8 ? "int8" : bits == 16 ? "int16" : bits == 32 ? "int32" : "int64";
}

// A Python int (held as int64) meeting a narrower or unsigned integer value
// (NEP 50): it must fit, or NumPy raises OverflowError.
template <typename I>
inline I checked_python_int(int64_t x, plait_context* ctx, int line, int col) {
  const bool fits = std::is_unsigned_v<I> ? x >= 0 && static_cast<uint64_t>(x) <= std::numeric_limits<I>::max()
                                          : x >= static_cast<int64_t>(std::numeric_limits<I>::min()) &&
                                                x <= static_cast<int64_t>(std::numeric_limits<I>::max());
  if (__builtin_expect(fits, 1)) return static_cast<I>(x);
  char message[96];
  std::snprintf(message, sizeof message, "Python integer %lld out of bounds for %s", static_cast<long long>(x),
                int_dtype_name<I>());
  raise_error(ctx, PLAIT_OVERFLOW_ERROR, line, col, message);
  return 0;
}

// ---------------------------------------------------------------- math.*

// What a math.* function raises when it produces an infinity from finite
// arguments (a NaN from non-NaN arguments is always "math domain error").
enum class math_inf : int {
  none,      // cannot overflow, or Python returns the infinity (atan2, floor...)
  overflow,  // OverflowError "math range error": exp, sinh, cosh
  domain,    // ValueError "math domain error": log(0), log2(0), log10(0)
  pow,       // pow: 0 ** negative is a domain error, anything else a range error
};

// Calls fn(args...) and applies Python's math-module error rules.
template <typename F, typename... A>
inline auto py_math(plait_context* ctx, int line, int col, math_inf on_inf, F fn, A... args) {
  auto result = fn(args...);
  if (std::isnan(result)) {
    if (!(std::isnan(args) || ...)) raise_error(ctx, PLAIT_VALUE_ERROR, line, col, "math domain error");
  } else if (std::isinf(result) && (std::isfinite(args) && ...)) {
    math_inf kind = on_inf;
    if (kind == math_inf::pow) {
      const double values[] = {static_cast<double>(args)...};
      kind = values[0] == 0 ? math_inf::domain : math_inf::overflow;
    }
    if (kind == math_inf::overflow) raise_error(ctx, PLAIT_OVERFLOW_ERROR, line, col, "math range error");
    if (kind == math_inf::domain) raise_error(ctx, PLAIT_VALUE_ERROR, line, col, "math domain error");
  }
  return result;
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

// The memory an array's elements reach, for ir::ArraysOverlap: the lowest
// and highest element offsets from its data pointer are sums over its
// dimensions of these (a negative stride reaches below the pointer).
inline int64_t lowest_offset(int64_t extent, int64_t stride) {
  return extent > 1 && stride < 0 ? (extent - 1) * stride : 0;
}
inline int64_t highest_offset(int64_t extent, int64_t stride) {
  return extent > 1 && stride > 0 ? (extent - 1) * stride : 0;
}

// Bytes [lo, hi) an array's elements occupy; lo == hi when it has none.
struct byte_range {
  uintptr_t lo, hi;
};
inline byte_range bytes_reached(const void* data, int64_t item_size, int64_t lowest, int64_t highest, bool empty) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  if (empty || !data) return {p, p};
  return {p + static_cast<uintptr_t>(lowest * item_size), p + static_cast<uintptr_t>((highest + 1) * item_size)};
}
inline bool memory_overlaps(byte_range a, byte_range b) {
  return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

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

// Allocates an array of `ndim` extents `shape`, 64-byte aligned, in C order
// (last dimension contiguous) or Fortran order, filled as `fill` says.
// Negative extents are NumPy's ValueError; sizes that overflow or cannot be
// allocated are a MemoryError.
template <typename T>
inline allocation<T> allocate_array(plait_context* ctx, int line, int col, int ndim, const int64_t* shape,
                                    bool fortran_order, fill_kind fill, T fill_value) {
  allocation<T> out;
  uint64_t count = 1;
  bool too_big = false;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0) {
      raise_error(ctx, PLAIT_VALUE_ERROR, line, col, "negative dimensions are not allowed");
      return out;
    }
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(shape[d]), &count)) too_big = true;
  }
  uint64_t bytes = 0;
  if (too_big || __builtin_mul_overflow(count, static_cast<uint64_t>(sizeof(T)), &bytes) ||
      bytes > (uint64_t(1) << 62)) {
    raise_error(ctx, PLAIT_MEMORY_ERROR, line, col, "array is too big; the size overflows");
    return out;
  }
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
  int64_t stride = 1;
  for (int k = 0; k < ndim; ++k) {
    const int d = fortran_order ? k : ndim - 1 - k;
    out.shape[d] = shape[d];
    out.strides[d] = stride;
    stride *= shape[d];
  }
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
