/* The C ABI between a caller (the Python extension, plaitc's test harness,
 * an ahead-of-time user) and a compiled kernel. Plain C so that generated
 * C++ and CUDA host code include it as is. */
#ifndef PLAIT_RUNTIME_ABI_H
#define PLAIT_RUNTIME_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PLAIT_ABI_VERSION 12
#define PLAIT_MAX_NDIM 4

/* dtype codes, same order as plait::ScalarKind */
enum plait_dtype {
  PLAIT_BOOL = 0,
  PLAIT_INT8 = 1,
  PLAIT_INT16 = 2,
  PLAIT_INT32 = 3,
  PLAIT_INT64 = 4,
  PLAIT_UINT8 = 5,
  PLAIT_UINT16 = 6,
  PLAIT_UINT32 = 7,
  PLAIT_UINT64 = 8,
  PLAIT_FLOAT32 = 9,
  PLAIT_FLOAT64 = 10
};

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
  int64_t i64;        /* ints (narrower ones widened; uint64 as its bit pattern) */
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
  PLAIT_RUNTIME_ERROR = 6,       /* RuntimeError (a CUDA call failed) */
  PLAIT_UNBOUND_LOCAL_ERROR = 7, /* UnboundLocalError (a local read before any assignment) */
  PLAIT_KEYBOARD_INTERRUPT = 8,  /* KeyboardInterrupt (SIGINT during the call) */
  PLAIT_KEY_ERROR = 9,           /* KeyError (a key not in a dict or set) */
};

struct plait_context;

/* The BLAS entries the CUDA and CPU tables share (plait_cuda_api describes
 * them; plait_blas_api). */
typedef int32_t (*plait_gemm_fn)(struct plait_context* ctx, int32_t dtype, int64_t m, int64_t n, int64_t k,
                                 double alpha, const void* a, int64_t a_row_stride, int64_t a_col_stride,
                                 const void* b, int64_t b_row_stride, int64_t b_col_stride, double beta,
                                 int32_t beta_reads_c, void* c, int64_t c_row_stride, int64_t c_col_stride);
typedef int32_t (*plait_gemmt_fn)(struct plait_context* ctx, int32_t dtype, int32_t upper, int64_t n, int64_t k,
                                  double alpha, const void* a, int64_t a_row_stride, int64_t a_col_stride,
                                  const void* b, int64_t b_row_stride, int64_t b_col_stride, double alpha2,
                                  const void* a2, int64_t a2_row_stride, int64_t a2_col_stride, const void* b2,
                                  int64_t b2_row_stride, int64_t b2_col_stride, double beta, int32_t beta_reads_c,
                                  void* c, int64_t c_row_stride, int64_t c_col_stride);
typedef int32_t (*plait_trsv_fn)(struct plait_context* ctx, int32_t dtype, int64_t n, const void* a,
                                 int64_t a_row_stride, int64_t a_col_stride, const void* b, int64_t b_stride, void* x,
                                 int64_t x_stride);

/* ---- CUDA target (begin) ----
 * The host part of a CUDA kernel reaches the GPU only through this table,
 * which the caller fills for each call; so the kernel library links against
 * nothing from CUDA. Every function reports failures by recording an error
 * in ctx (first error wins) and returning nonzero / null. */
typedef struct plait_cuda_api {
  void* state; /* the caller's: module, stream, scratch buffer */
  /* Launches device kernel number `kernel` of the kernel's module with
   * `grid` blocks of `block` threads; `params` as cuLaunchKernel takes them. */
  int32_t (*launch)(struct plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, void** params);
  void* (*alloc)(struct plait_context* ctx, uint64_t bytes); /* device memory */
  void (*free)(void* device_pointer);                        /* never fails; callable after the call */
  int32_t (*copy_to_device)(struct plait_context* ctx, void* device_dst, const void* host_src, uint64_t bytes);
  /* Waits for the stream's work, then copies. */
  int32_t (*copy_to_host)(struct plait_context* ctx, void* host_dst, const void* device_src, uint64_t bytes);
  int32_t (*zero)(struct plait_context* ctx, void* device_dst, uint64_t bytes);
  /* Device memory of PLAIT_CUDA_SCRATCH_BYTES for reductions and scalars
   * exchanged with single-thread device regions; the first
   * PLAIT_CUDA_ERROR_BYTES hold the device error record (zeroed by the caller). */
  void* scratch;
  /* The most blocks of `block` threads of kernel `kernel` that can be resident
   * on the GPU at once, for a cooperative launch; 0 when the GPU cannot launch
   * cooperative kernels. */
  uint32_t (*cooperative_grid)(struct plait_context* ctx, int32_t kernel, uint32_t block);
  /* Launches like `launch`, as a cooperative kernel: all `grid` blocks are
   * resident at once, so they can wait for each other (grid <= cooperative_grid). */
  int32_t (*launch_cooperative)(struct plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block,
                                void** params);
  /* Launches like `launch`, with `shared_bytes` of dynamic shared memory.
   * Returns 0 when launched; 1 when the GPU or driver cannot give the kernel
   * that much (the caller launches another way); -1 when the launch failed
   * (error in ctx). */
  int32_t (*launch_shared)(struct plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block,
                           uint64_t shared_bytes, void** params);
  /* The most dynamic shared memory launch_shared can give a kernel without
   * shared arrays of its own (the device's opt-in limit; 0: none). */
  uint64_t shared_bytes_limit;
  /* C = alpha * A @ B + beta * C with the GPU's BLAS library, in the call's
   * stream order. A is m x k, B k x n, C m x n, each given by its data and
   * its row and column strides in elements; dtype is PLAIT_FLOAT32 or
   * PLAIT_FLOAT64. beta_reads_c == 0: C's old values are not used (beta is
   * ignored). Returns 0 when done; 1 when the library cannot compute
   * exactly this (none loaded, layouts it cannot describe, C overlapping A
   * or B, sizes beyond its int, alpha 0 or not finite, beta 0 with C read:
   * the library skips reads whose NaNs the loops would propagate), and the
   * caller runs its loops instead; -1 when the library failed (error in ctx). */
  plait_gemm_fn gemm;
  /* The triangle of C (n x n) with j <= i (upper == 0) or j >= i (upper ==
   * 1), diagonal included, of alpha * A @ B + alpha2 * A2 @ B2 + beta * C;
   * the other elements of C are neither read nor written. A and A2 are
   * n x k, B and B2 k x n; a2 == null: no second product (alpha2, b2 and
   * their strides are ignored). Returns as gemm does, and declines in the
   * same cases (for either product) and when the two products' operands
   * cannot be given to the library in one orientation. */
  plait_gemmt_fn gemmt;
  /* B = B + strict_upper(A) @ B in place (A m x m, B m x n): each row of B
   * gains the products of A's row with the rows below it, as they were.
   * Returns and declines as gemm does. */
  int32_t (*trmm)(struct plait_context* ctx, int32_t dtype, int64_t m, int64_t n, const void* a, int64_t a_row_stride,
                  int64_t a_col_stride, void* b, int64_t b_row_stride, int64_t b_col_stride);
  /* C = alpha * S @ B + beta * C (B and C m x n) with S the m x m symmetric
   * matrix whose lower triangle, diagonal included, is A's; A's strict
   * upper triangle is not read. Returns and declines as gemm does, and
   * declines when B and C cannot be given to the library in one
   * orientation. */
  int32_t (*symm)(struct plait_context* ctx, int32_t dtype, int64_t m, int64_t n, double alpha, const void* a,
                  int64_t a_row_stride, int64_t a_col_stride, const void* b, int64_t b_row_stride, int64_t b_col_stride,
                  double beta, int32_t beta_reads_c, void* c, int64_t c_row_stride, int64_t c_col_stride);
  /* x = solve(lower(A), b) (A n x n, its strict upper triangle not read; b
   * and x n elements): x is b itself (same data and stride: in place) or
   * does not share memory with it. Returns as gemm does, and declines when
   * A shares memory with x or b with x (other than in place), and for
   * strides cuBLAS cannot take (a vector's must be positive). */
  plait_trsv_fn trsv;
  /* The most blocks of `block` threads of kernel `kernel` that can be
   * resident on the GPU at once (0: not known). */
  uint32_t (*resident_grid)(struct plait_context* ctx, int32_t kernel, uint32_t block);
  uint64_t l2_bytes; /* the GPU's L2 cache (0: not known) */
} plait_cuda_api;

#define PLAIT_CUDA_SCRATCH_BYTES 4096
#define PLAIT_CUDA_ERROR_BYTES 64
/* ---- CUDA target (end) ---- */

/* Where kernels take large arrays from (see plait_host_memory_large_bytes).
 * The caller's pool keeps freed blocks for the next call, so a kernel that
 * returns a fresh large array does not fault its pages in (and have the
 * operating system zero them) on every call. */
typedef struct plait_host_memory {
  /* A block of `bytes` (a multiple of 2 MiB) aligned to 2 MiB, or null. */
  void* (*allocate)(uint64_t bytes);
  /* Gives back a block from `allocate` with the same `bytes`; any thread. */
  void (*release)(void* block, uint64_t bytes);
} plait_host_memory;

/* The CPU's BLAS (the caller's: a library it loaded). gemm is C = alpha * A
 * @ B + beta * C, gemmt a triangle of products and trsv x = solve(lower(A),
 * b), with the arguments and returns of plait_cuda_api's (gemmt declines
 * what is not a syrk, alpha A A^T, or a syr2k, alpha (A B^T + B A^T): the
 * library may have no general triangle), on the calling thread, which the
 * library may parallelise over the process's OpenMP threads (called outside
 * a parallel loop). */
typedef struct plait_blas_api {
  plait_gemm_fn gemm;
  plait_gemmt_fn gemmt;
  plait_trsv_fn trsv;
} plait_blas_api;

/* Arrays of at least this many bytes come from plait_context::memory (when
 * set) and are aligned to 2 MiB with huge pages advised, as NumPy does. */
#define PLAIT_HOST_MEMORY_LARGE_BYTES (4u << 20)

/* Per-call context. The first error wins and stops the kernel as Python
 * would: the statements after it do not run. In a parallel loop the error of
 * the earliest failing iteration wins; threads stop at their next iteration
 * after it, so later iterations of that loop may have run. */
typedef struct plait_context {
  int32_t num_threads;       /* threads for parallel loops; >= 1 */
  volatile int32_t error_kind;/* plait_error_kind */
  int32_t error_line;        /* user's file line */
  int32_t error_col;         /* 0-based, in characters (code points), as Python counts */
  char error_message[240];
  const plait_cuda_api* cuda; /* CUDA target only; null for CPU kernels */
  /* A parallel loop starts its threads only when trip count x body cost
   * (IR nodes) reaches this; 0 always starts them. Waking a thread team costs
   * 10-60 us on small machines, so small loops run serially. */
  int64_t parallel_work_threshold;
  /* Large arrays' memory; null: aligned_alloc and free. */
  const plait_host_memory* memory;
  /* Set nonzero (by the caller's SIGINT handler) to ask the kernel to stop;
   * long-running loops read it and stop with PLAIT_KEYBOARD_INTERRUPT. Null:
   * the kernel is not interruptible. */
  const volatile int32_t* interrupt;
  /* With error_kind set: the iteration of the parallel loop that raised it
   * (-1: not in one); see plait::raise_error. */
  int64_t error_iteration;
  /* CPU kernels' matrix products; null: their loops run. */
  const plait_blas_api* blas;
} plait_context;

/* The default for parallel_work_threshold (PLAIT_PARALLEL_THRESHOLD overrides). */
#define PLAIT_DEFAULT_PARALLEL_WORK 2000000

/* The entry point every compiled kernel exports under the name
 * PLAIT_ENTRY_SYMBOL. args[i] points to the i-th argument: a plait_array
 * for arrays, an int64_t for ints of any width (uint64 as its bit pattern), a
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
