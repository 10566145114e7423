/* The C ABI between a caller (the Python extension, plaitc's test harness,
 * an ahead-of-time user) and a compiled kernel. Plain C so that generated
 * C++ and CUDA host code include it as is. */
#ifndef PLAIT_RUNTIME_ABI_H
#define PLAIT_RUNTIME_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PLAIT_ABI_VERSION 1
#define PLAIT_MAX_NDIM 4

/* dtype codes, same order as plait::ScalarKind */
enum plait_dtype { PLAIT_BOOL = 0, PLAIT_INT32 = 1, PLAIT_INT64 = 2, PLAIT_FLOAT32 = 3, PLAIT_FLOAT64 = 4 };

/* A strided array view. Strides are in elements (not bytes) and may be
 * negative or zero. `owner` is null for borrowed arrays (arguments); for an
 * array the kernel allocated and returns it is a handle the caller releases
 * with plait_result::release once done with `data`. */
typedef struct plait_array {
  void* data;
  int64_t shape[PLAIT_MAX_NDIM];
  int64_t strides[PLAIT_MAX_NDIM];
} plait_array;

/* One returned value. */
typedef struct plait_result {
  int32_t is_array;   /* 1: `array` is set; 0: a scalar in i64/f64/b */
  int32_t dtype;      /* plait_dtype of the scalar or of the array elements */
  int64_t i64;        /* ints (int32 widened) */
  double f64;         /* floats (float32 widened) */
  int32_t b;          /* bools */
  int32_t ndim;
  plait_array array;
  void* owner;                 /* handle keeping array.data alive, or null */
  void (*release)(void* owner);/* frees `owner`; null when owner is null */
} plait_result;

/* Error kinds a kernel can raise at run time. */
enum plait_error_kind {
  PLAIT_OK = 0,
  PLAIT_INDEX_ERROR = 1,         /* IndexError */
  PLAIT_ZERO_DIVISION_ERROR = 2, /* ZeroDivisionError */
  PLAIT_VALUE_ERROR = 3,         /* ValueError (math domain, int(nan), bad shape) */
  PLAIT_OVERFLOW_ERROR = 4,      /* OverflowError */
  PLAIT_MEMORY_ERROR = 5,        /* MemoryError */
};

/* Per-call context. The first error wins; kernels keep running to the end
 * of the current parallel region after an error (results are discarded). */
typedef struct plait_context {
  int32_t num_threads;       /* threads for parallel loops; >= 1 */
  volatile int32_t error_kind;/* plait_error_kind */
  int32_t error_line;        /* user's file line */
  int32_t error_col;
  char error_message[240];
} plait_context;

/* The entry point every compiled kernel exports under the name
 * PLAIT_ENTRY_SYMBOL. args[i] points to the i-th argument: a plait_array
 * for arrays, an int64_t for ints of either width (int32 scalars too), a
 * double for floats (float32 too), an int32_t (0/1) for bools. `results`
 * has room for the function's results. Returns the error kind (0: ok). */
typedef int32_t (*plait_entry_fn)(void** args, plait_result* results, plait_context* ctx);

#define PLAIT_ENTRY_SYMBOL "plait_kernel_entry"

/* A kernel also exports this, so a loader can check that the ABI matches. */
#define PLAIT_ABI_SYMBOL "plait_kernel_abi_version"
typedef int32_t (*plait_abi_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PLAIT_RUNTIME_ABI_H */
