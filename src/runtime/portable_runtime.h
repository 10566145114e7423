// The run-time functions that CPU kernels and CUDA device code share, written
// once: Python's and NumPy's arithmetic (floor division, modulo, powers,
// minima and maxima, shifts, abs), float-to-int casts with NumPy's results on
// x86, Python ints meeting narrower types, the math module's error rules,
// range trip counts, bounds checks and the memory an array reaches. The text
// compiles as host C++ (plait_runtime.h) and, under NVRTC and nvcc, as device
// code (cuda_device_runtime.cuh); each pastes it inside namespace plait where
// its #include of this file stands, after what the text uses:
// - the fixed-width integer types (NVRTC has no standard headers, so this
//   text includes none);
// - the enumerations error_kind_code (kind_index_error, ...) and
//   message_code (msg_index_out_of_bounds, ...), which the code generator
//   prints from abi.h and runtime/device_errors (codegen/runtime_text.cpp);
// - raise_error(errors, kind, line, col, message, a = 0, b = 0, c = 0) for
//   each error sink the raising functions are called with (plait_context on
//   the host, the device error record or a thread's view of it on the GPU):
//   it records the error whose text is the message's format over a, b and
//   c, and the function that raised returns a harmless value;
// - namespace fm: fmod, copysign, floor and pow on float and double, and
//   isnan, isinf and isfinite on any arithmetic type (the C++ library on the
//   host, CUDA's math library on the device).

#if defined(__CUDACC__)
#define PLAIT_FN __device__ __forceinline__
// Device code keeps the branch layout nvcc chooses.
#define PLAIT_LIKELY(condition) (condition)
#else
#define PLAIT_FN inline
// The checks on hot paths of CPU kernels (bounds, casts) are laid out for
// the case that passes.
#define PLAIT_LIKELY(condition) __builtin_expect(condition, 1)
#endif

// ---------------------------------------------------------------- types

// Type traits of the arithmetic types (NVRTC has no <type_traits>).
// unsigned_type is what wrapping arithmetic runs in: at least 32 bits, so
// that C++'s promotion of 8- and 16-bit values to int cannot overflow;
// `low` and `high` are an integer type's range.
template <typename T>
struct traits;
#define PLAIT_INT_TRAITS(T, U, S, LOW, HIGH)         \
  template <>                                        \
  struct traits<T> {                                 \
    static constexpr bool is_float = false;          \
    static constexpr bool is_signed = S;             \
    static constexpr bool is_bool = (HIGH) == 1;     \
    typedef U unsigned_type;                         \
    static PLAIT_FN T low() { return (T)(LOW); }     \
    static PLAIT_FN T high() { return (T)(HIGH); }   \
  };
PLAIT_INT_TRAITS(bool, uint32_t, false, 0, 1)
PLAIT_INT_TRAITS(int8_t, uint32_t, true, -128, 127)
PLAIT_INT_TRAITS(int16_t, uint32_t, true, -32768, 32767)
PLAIT_INT_TRAITS(int32_t, uint32_t, true, -2147483647 - 1, 2147483647)
PLAIT_INT_TRAITS(int64_t, uint64_t, true, -9223372036854775807LL - 1, 9223372036854775807LL)
PLAIT_INT_TRAITS(uint8_t, uint32_t, false, 0, 255)
PLAIT_INT_TRAITS(uint16_t, uint32_t, false, 0, 65535)
PLAIT_INT_TRAITS(uint32_t, uint32_t, false, 0, 4294967295u)
PLAIT_INT_TRAITS(uint64_t, uint64_t, false, 0, 18446744073709551615ull)
#undef PLAIT_INT_TRAITS
template <>
struct traits<float> {
  static constexpr bool is_float = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_bool = false;
  typedef uint32_t unsigned_type;
};
template <>
struct traits<double> {
  static constexpr bool is_float = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_bool = false;
  typedef uint64_t unsigned_type;
};

// x < 0 without a warning for unsigned types.
template <typename T>
PLAIT_FN bool is_negative(T x) {
  if constexpr (traits<T>::is_signed) return x < T(0);
  else return false;
}

// ---------------------------------------------------------------- bounds and loops

// True when 0 <= index < extent; otherwise raises NumPy's IndexError.
template <typename Errors>
PLAIT_FN bool index_ok(Errors* err, int line, int col, int64_t index, int axis, int64_t extent) {
  if (PLAIT_LIKELY(index >= 0 && index < extent)) return true;
  raise_error(err, kind_index_error, line, col, msg_index_out_of_bounds, index, axis, extent);
  return false;
}

// The number of values of range(begin, end, step), step != 0, as an
// unsigned count: extreme bounds cannot overflow it (at most 2**64 - 1).
PLAIT_FN uint64_t range_length(int64_t begin, int64_t end, int64_t step) {
  if (step > 0) {
    if (end <= begin) return 0;
    return (static_cast<uint64_t>(end) - static_cast<uint64_t>(begin) - 1) / static_cast<uint64_t>(step) + 1;
  }
  if (begin <= end) return 0;
  return (static_cast<uint64_t>(begin) - static_cast<uint64_t>(end) - 1) / (0 - static_cast<uint64_t>(step)) + 1;
}

// The trip count of a range that the caller knows is valid: a nonzero step
// and at most 2**63 - 1 values (the host's checked_trip_count checks both).
PLAIT_FN int64_t trip_count(int64_t begin, int64_t end, int64_t step) {
  return static_cast<int64_t>(range_length(begin, end, step));
}

// The memory an array's elements reach, for ir::ArraysOverlap: the lowest
// and highest element offsets from its data pointer are sums over its
// dimensions of these (a negative stride reaches below the pointer).
PLAIT_FN int64_t lowest_offset(int64_t extent, int64_t stride) {
  return extent > 1 && stride < 0 ? (extent - 1) * stride : 0;
}
PLAIT_FN int64_t highest_offset(int64_t extent, int64_t stride) {
  return extent > 1 && stride > 0 ? (extent - 1) * stride : 0;
}

// Bytes [lo, hi) an array's elements occupy; lo == hi when it has none.
struct byte_range {
  uint64_t lo, hi;
};
PLAIT_FN byte_range bytes_reached(const void* data, int64_t item_size, int64_t lowest, int64_t highest, bool empty) {
  const uint64_t p = reinterpret_cast<uint64_t>(data);
  if (empty || !data) return {p, p};
  return {p + static_cast<uint64_t>(lowest * item_size), p + static_cast<uint64_t>((highest + 1) * item_size)};
}
PLAIT_FN bool memory_overlaps(byte_range a, byte_range b) {
  return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

// ---------------------------------------------------------------- arithmetic

// Floor division rounding toward negative infinity (Python //). Integer
// division by zero gives 0 as NumPy does; INT_MIN // -1 wraps to INT_MIN.
// Unsigned division needs no rounding fix-up.
template <typename T>
PLAIT_FN T floordiv(T a, T b) {
  if constexpr (traits<T>::is_float) {
    if (b == 0) return a / b;
    T rem = fm::fmod(a, b);
    T quot = (a - rem) / b;
    if (rem != 0 && ((b < 0) != (rem < 0))) quot -= 1;
    if (quot == 0) return fm::copysign(T(0), a / b);
    // (a - rem) / b is an integer up to rounding; snap it to the nearest one.
    T whole = fm::floor(quot);
    if (quot - whole > T(0.5)) whole += 1;
    return whole;
  } else if constexpr (!traits<T>::is_signed) {
    if (b == 0) return 0;
    return static_cast<T>(a / b);
  } else {
    if (b == 0) return 0;
    if (b == -1) return static_cast<T>(0 - static_cast<typename traits<T>::unsigned_type>(a));
    T quot = static_cast<T>(a / b);
    if ((a % b != 0) && ((a < 0) != (b < 0))) --quot;
    return quot;
  }
}

// Remainder with the sign of the divisor (Python %, np.mod). Integer modulo
// by zero gives 0 (NumPy); float modulo by zero gives NaN.
template <typename T>
PLAIT_FN T mod(T a, T b) {
  if constexpr (traits<T>::is_float) {
    if (b == 0) return fm::fmod(a, b);
    T rem = fm::fmod(a, b);
    if (rem != 0) {
      if ((b < 0) != (rem < 0)) rem += b;
    } else {
      rem = fm::copysign(T(0), b);
    }
    return rem;
  } else if constexpr (!traits<T>::is_signed) {
    if (b == 0) return 0;
    return static_cast<T>(a % b);
  } else {
    if (b == 0 || b == -1) return 0;
    T rem = static_cast<T>(a % b);
    if (rem != 0 && ((rem < 0) != (b < 0))) rem = static_cast<T>(rem + b);
    return rem;
  }
}

// Python's ZeroDivisionError checks for operations on Python scalars.
template <typename T, typename Errors>
PLAIT_FN T div_checked(T a, T b, Errors* err, int line, int col) {
  if (b == 0) {
    raise_error(err, kind_zero_division_error, line, col, msg_float_division_by_zero);
    return 0;
  }
  return a / b;
}

template <typename T, typename Errors>
PLAIT_FN T floordiv_checked(T a, T b, Errors* err, int line, int col) {
  if (b == 0) {
    raise_error(err, kind_zero_division_error, line, col,
                traits<T>::is_float ? msg_float_floor_division_by_zero : msg_integer_division_by_zero);
    return 0;
  }
  return floordiv(a, b);
}

template <typename T, typename Errors>
PLAIT_FN T mod_checked(T a, T b, Errors* err, int line, int col) {
  if (b == 0) {
    raise_error(err, kind_zero_division_error, line, col,
                traits<T>::is_float ? msg_float_modulo : msg_integer_modulo_by_zero);
    return 0;
  }
  return mod(a, b);
}

// Integer power by squaring with wrap-around (NumPy). A negative exponent is
// NumPy's ValueError.
template <typename T, typename Errors>
PLAIT_FN T pow_int(T base, T exponent, Errors* err, int line, int col) {
  if (is_negative(exponent)) {
    raise_error(err, kind_value_error, line, col, msg_negative_integer_power);
    return 0;
  }
  typedef typename traits<T>::unsigned_type U;
  U result = 1;
  U factor = static_cast<U>(base);
  for (U e = static_cast<U>(exponent); e != 0; e >>= 1) {
    if (e & 1) result = static_cast<U>(result * factor);
    factor = static_cast<U>(factor * factor);
  }
  return static_cast<T>(result);
}

// A power of two Python ints whose exponent is known only at run time. The
// kernel types it int (a static type cannot follow Python, whose result is a
// float exactly when the exponent is negative), so a negative exponent raises
// instead of giving a wrong int.
template <typename T, typename Errors>
PLAIT_FN T pow_python_int(T base, T exponent, Errors* err, int line, int col) {
  if (is_negative(exponent)) {
    raise_error(err, kind_value_error, line, col, msg_negative_python_int_power);
    return 0;
  }
  return pow_int(base, exponent, err, line, col);
}

// Float power; `checked` adds Python's ZeroDivisionError for 0.0 ** negative
// and OverflowError for a finite power that overflows.
template <typename T, typename E>
PLAIT_FN T pow_float(T base, E exponent) {
  return static_cast<T>(fm::pow(base, static_cast<T>(exponent)));
}

template <typename T, typename E, typename Errors>
PLAIT_FN T pow_float_checked(T base, E exponent, Errors* err, int line, int col) {
  if (base == 0 && exponent < 0) {
    raise_error(err, kind_zero_division_error, line, col, msg_zero_to_negative_power);
    return 0;
  }
  // Python's float power overflows with an error, not to inf.
  const T r = pow_float(base, exponent);
  if (fm::isinf(r) && fm::isfinite(base) && fm::isfinite(static_cast<T>(exponent)))
    raise_error(err, kind_overflow_error, line, col, msg_float_power_overflow);
  return r;
}

// np.minimum / np.maximum: NaN-propagating.
template <typename T>
PLAIT_FN T minimum(T a, T b) {
  if constexpr (traits<T>::is_float) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}

template <typename T>
PLAIT_FN T maximum(T a, T b) {
  if constexpr (traits<T>::is_float) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b > a ? b : a;
}

// The builtins min(a, b) / max(a, b): the first argument unless the second
// compares strictly smaller/greater (so NaN handling follows Python).
template <typename T>
PLAIT_FN T py_min(T a, T b) {
  return b < a ? b : a;
}

template <typename T>
PLAIT_FN T py_max(T a, T b) {
  return b > a ? b : a;
}

// Shifts with Python results for counts in range; counts >= the width give
// 0 (left) or the sign (right), negative counts give 0 / the sign, as NumPy.
template <typename T, typename C>
PLAIT_FN T shl(T a, C count) {
  if (is_negative(count) || count >= static_cast<C>(sizeof(T) * 8)) return 0;
  return static_cast<T>(static_cast<typename traits<T>::unsigned_type>(a) << count);
}

template <typename T, typename C>
PLAIT_FN T shr(T a, C count) {
  if (is_negative(count) || count >= static_cast<C>(sizeof(T) * 8)) return is_negative(a) ? T(-1) : T(0);
  return static_cast<T>(a >> count);
}

// |a| for ints, wrapping for the most negative value as NumPy does.
template <typename T>
PLAIT_FN T abs_int(T a) {
  if constexpr (!traits<T>::is_signed) return a;
  else return a < 0 ? static_cast<T>(0 - static_cast<typename traits<T>::unsigned_type>(a)) : a;
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
PLAIT_FN I float_to_int(F x) {
  if constexpr (traits<I>::is_signed && sizeof(I) >= 4) {
    // 2^(bits-1) is exact in every float type; the range is [-2^(b-1), 2^(b-1)).
    constexpr F limit = static_cast<F>(static_cast<double>(uint64_t(1) << (sizeof(I) * 8 - 1)));
    if (!(x >= -limit && x < limit)) return traits<I>::low();
    return static_cast<I>(x);
  } else if constexpr (sizeof(I) == 8) {
    constexpr F half = static_cast<F>(9223372036854775808.0);
    if (x >= half) return x < half * F(2) ? static_cast<I>(x) : I(0);
    return static_cast<I>(float_to_int<int64_t>(x));
  } else if constexpr (sizeof(I) < 4) {
    return static_cast<I>(float_to_int<int32_t>(x));
  } else {
    return static_cast<I>(float_to_int<int64_t>(x));
  }
}

// Python's int(x) into int32 or int64: NaN is a ValueError, infinities and
// values beyond the target range an OverflowError.
template <typename I, typename F, typename Errors>
PLAIT_FN I checked_float_to_int(F x, Errors* err, int line, int col) {
  constexpr F limit = static_cast<F>(static_cast<double>(uint64_t(1) << (sizeof(I) * 8 - 1)));
  // One range test on the hot path (NaN and infinities fail it too); which
  // error it was is worked out only when it fails.
  if (PLAIT_LIKELY(x >= -limit && x < limit)) return static_cast<I>(x);
  if (x != x) {
    raise_error(err, kind_value_error, line, col, msg_float_nan_to_integer);
    return 0;
  }
  if (fm::isinf(x)) {
    raise_error(err, kind_overflow_error, line, col, msg_float_infinity_to_integer);
    return 0;
  }
  raise_error(err, kind_overflow_error, line, col,
              sizeof(I) == 4 ? msg_int_too_large_for_int32 : msg_int_too_large_for_int64);
  return 0;
}

// A Python int (held as int64) meeting a narrower or unsigned integer value
// (NEP 50): it must fit, or NumPy raises OverflowError.
template <typename I, typename Errors>
PLAIT_FN I checked_python_int(int64_t x, Errors* err, int line, int col) {
  const bool fits = traits<I>::is_signed ? x >= static_cast<int64_t>(traits<I>::low()) &&
                                               x <= static_cast<int64_t>(traits<I>::high())
                                         : x >= 0 && static_cast<uint64_t>(x) <= static_cast<uint64_t>(traits<I>::high());
  if (PLAIT_LIKELY(fits)) return static_cast<I>(x);
  message_code message = msg_python_int_out_of_int32;
  if (traits<I>::is_signed) {
    if (sizeof(I) == 1) message = msg_python_int_out_of_int8;
    if (sizeof(I) == 2) message = msg_python_int_out_of_int16;
  } else {
    message = sizeof(I) == 1   ? msg_python_int_out_of_uint8
              : sizeof(I) == 2 ? msg_python_int_out_of_uint16
              : sizeof(I) == 4 ? msg_python_int_out_of_uint32
                               : msg_python_int_out_of_uint64;
  }
  raise_error(err, kind_overflow_error, line, col, message, x);
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
template <typename Errors, typename F, typename... A>
PLAIT_FN auto py_math(Errors* err, int line, int col, math_inf on_inf, F fn, A... args) {
  auto result = fn(args...);
  if (fm::isnan(result)) {
    if (!(fm::isnan(args) || ...)) raise_error(err, kind_value_error, line, col, msg_math_domain_error);
  } else if (fm::isinf(result) && (fm::isfinite(args) && ...)) {
    math_inf kind = on_inf;
    if (kind == math_inf::pow) {
      const double values[] = {static_cast<double>(args)...};
      kind = values[0] == 0 ? math_inf::domain : math_inf::overflow;
    }
    if (kind == math_inf::overflow) raise_error(err, kind_overflow_error, line, col, msg_math_range_error);
    if (kind == math_inf::domain) raise_error(err, kind_value_error, line, col, msg_math_domain_error);
  }
  return result;
}

#undef PLAIT_FN
#undef PLAIT_LIKELY
