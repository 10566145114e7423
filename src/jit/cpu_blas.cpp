// The CPU's BLAS (cpu_blas.h).
#include "jit/cpu_blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jit/blas_layout.h"

namespace plait::jit {

namespace {

// CBLAS's enumerations and its LP64 (int) interface.
constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112, kUpper = 121, kLower = 122, kNonUnit = 131;
using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*,
                       int);
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
template <typename T>
using Trsv = void (*)(int, int, int, int, int, const T*, int, T*, int);
template <typename T>
using Syrk = void (*)(int, int, int, int, int, T, const T*, int, T, T*, int);
template <typename T>
using Syr2k = void (*)(int, int, int, int, int, T, const T*, int, const T*, int, T, T*, int);
template <typename T>
using Copy = void (*)(int, const T*, int, T*, int);

struct Library {
  Dgemm dgemm = nullptr;
  Sgemm sgemm = nullptr;
  Trsv<double> dtrsv = nullptr;
  Trsv<float> strsv = nullptr;
  Copy<double> dcopy = nullptr;
  Copy<float> scopy = nullptr;
  Syrk<double> dsyrk = nullptr;
  Syrk<float> ssyrk = nullptr;
  Syr2k<double> dsyr2k = nullptr;
  Syr2k<float> ssyr2k = nullptr;
  bool loaded = false;
  std::string description;
};

int32_t gemm(plait_context* /*ctx*/, int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
             int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double beta, int32_t beta_reads_c,
             void* c, int64_t c_rs, int64_t c_cs);
int32_t trsv(plait_context* /*ctx*/, int32_t dtype, int64_t n, const void* a, int64_t a_rs, int64_t a_cs, const void* b,
             int64_t b_stride, void* x, int64_t x_stride);
int32_t gemmt(plait_context* /*ctx*/, int32_t dtype, int32_t upper, int64_t n, int64_t k, double alpha, const void* a,
              int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double alpha2, const void* a2,
              int64_t a2_rs, int64_t a2_cs, const void* b2, int64_t b2_rs, int64_t b2_cs, double beta,
              int32_t beta_reads_c, void* c, int64_t c_rs, int64_t c_cs);

template <typename F>
bool bind(void* handle, F& slot, const char* symbol) {
  slot = reinterpret_cast<F>(::dlsym(handle, symbol));
  return slot != nullptr;
}

Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string wanted = std::getenv("PLAIT_BLAS") ? std::getenv("PLAIT_BLAS") : "";
    if (wanted == "none" || wanted == "0") wanted.clear();  // off for now (turned_off); the default if turned on later
    const std::vector<std::string> candidates = wanted.empty()
                                                    ? std::vector<std::string>{"libopenblas.so.0", "libblis.so.4"}
                                                    : std::vector<std::string>{wanted};
    std::string tried;
    for (const std::string& name : candidates) {
      void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        tried += (tried.empty() ? "" : ", ") + name;
        continue;
      }
      const bool complete = bind(handle, lib.dgemm, "cblas_dgemm") && bind(handle, lib.sgemm, "cblas_sgemm") &&
                            bind(handle, lib.dtrsv, "cblas_dtrsv") && bind(handle, lib.strsv, "cblas_strsv") &&
                            bind(handle, lib.dcopy, "cblas_dcopy") && bind(handle, lib.scopy, "cblas_scopy") &&
                            bind(handle, lib.dsyrk, "cblas_dsyrk") && bind(handle, lib.ssyrk, "cblas_ssyrk") &&
                            bind(handle, lib.dsyr2k, "cblas_dsyr2k") && bind(handle, lib.ssyr2k, "cblas_ssyr2k");
      if (!complete) {
        tried += (tried.empty() ? "" : ", ") + name + " (without the CBLAS entries)";
        ::dlclose(handle);
        continue;
      }
      lib.description = name;
      using Config = const char* (*)();
      using Parallel = int (*)();
      if (auto config = reinterpret_cast<Config>(::dlsym(handle, "openblas_get_config")))
        lib.description = std::string(config()) + " from " + name;
      if (auto parallel = reinterpret_cast<Parallel>(::dlsym(handle, "openblas_get_parallel"))) {
        const int mode = parallel();
        lib.description += mode == 2 ? " (OpenMP threads)" : mode == 1 ? " (its own threads)" : " (one thread)";
      }
      lib.loaded = true;
      return;
    }
    lib.description = "none (" + (tried.empty() ? std::string("nothing to load") : "cannot load " + tried) + ")";
  });
  return lib;
}

int32_t gemm(plait_context* /*ctx*/, int32_t dtype, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
             int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double beta, int32_t beta_reads_c,
             void* c, int64_t c_rs, int64_t c_cs) {
  if (m <= 0 || n <= 0) return kBlasDone;
  const std::optional<ColumnMajorGemm> g =
      column_major_gemm(dtype, m, n, k, alpha, {a, m, k, a_rs, a_cs}, {b, k, n, b_rs, b_cs}, beta, beta_reads_c != 0,
                        {c, m, n, c_rs, c_cs});
  const Library& lib = library();
  if (!g || !lib.loaded) return kBlasDeclined;
  const int first = g->transpose_first ? kTrans : kNoTrans, second = g->transpose_second ? kTrans : kNoTrans;
  if (dtype == PLAIT_FLOAT64) {
    lib.dgemm(kColMajor, first, second, g->rows, g->cols, g->k, alpha, static_cast<const double*>(g->first),
              g->ld_first, static_cast<const double*>(g->second), g->ld_second, g->beta, static_cast<double*>(c),
              g->ld_out);
  } else {
    lib.sgemm(kColMajor, first, second, g->rows, g->cols, g->k, static_cast<float>(alpha),
              static_cast<const float*>(g->first), g->ld_first, static_cast<const float*>(g->second), g->ld_second,
              static_cast<float>(g->beta), static_cast<float*>(c), g->ld_out);
  }
  return kBlasDone;
}

template <typename T>
void solve(Trsv<T> trsv, Copy<T> copy, const ColumnMajorTrsv& t, const void* a, const void* b, void* x) {
  if (t.copy) copy(t.n, static_cast<const T*>(b), t.incb, static_cast<T*>(x), t.incx);
  trsv(kColMajor, t.upper ? kUpper : kLower, t.transpose ? kTrans : kNoTrans, kNonUnit, t.n, static_cast<const T*>(a),
       t.lda, static_cast<T*>(x), t.incx);
}

int32_t trsv(plait_context* /*ctx*/, int32_t dtype, int64_t n, const void* a, int64_t a_rs, int64_t a_cs, const void* b,
             int64_t b_stride, void* x, int64_t x_stride) {
  if (n <= 0) return kBlasDone;
  const std::optional<ColumnMajorTrsv> t = column_major_trsv(dtype, n, {a, n, n, a_rs, a_cs}, b, b_stride, x, x_stride);
  const Library& lib = library();
  if (!t || !lib.loaded) return kBlasDeclined;
  if (dtype == PLAIT_FLOAT64) {
    solve(lib.dtrsv, lib.dcopy, *t, a, b, x);
  } else {
    solve(lib.strsv, lib.scopy, *t, a, b, x);
  }
  return kBlasDone;
}

// One product X X^T is a syrk; two, alpha X Y^T + alpha Y X^T, a syr2k
// (the BLAS has no general triangle of products before gemmt, which
// Debian's OpenBLAS lacks).
template <typename T>
int32_t triangle(Syrk<T> syrk, Syr2k<T> syr2k, int64_t n, int64_t k, const ColumnMajorTriangle& t, void* c) {
  auto same = [](const void* p, int64_t ldp, const void* q, int64_t ldq) { return p == q && ldp == ldq; };
  const TriangleProduct& first = t.products[0];
  const int uplo = t.upper ? kUpper : kLower, trans = first.transposed ? kTrans : kNoTrans;
  const int ni = static_cast<int>(n), ki = static_cast<int>(k), ld = static_cast<int>(t.ld_out);
  if (t.products.size() == 1 && same(first.x, first.ldx, first.y, first.ldy)) {
    syrk(kColMajor, uplo, trans, ni, ki, static_cast<T>(first.alpha), static_cast<const T*>(first.x),
         static_cast<int>(first.ldx), static_cast<T>(t.beta), static_cast<T*>(c), ld);
    return kBlasDone;
  }
  if (t.products.size() == 2) {
    const TriangleProduct& second = t.products[1];
    if (second.alpha == first.alpha && second.transposed == first.transposed &&
        same(second.x, second.ldx, first.y, first.ldy) && same(second.y, second.ldy, first.x, first.ldx)) {
      syr2k(kColMajor, uplo, trans, ni, ki, static_cast<T>(first.alpha), static_cast<const T*>(first.x),
            static_cast<int>(first.ldx), static_cast<const T*>(first.y), static_cast<int>(first.ldy),
            static_cast<T>(t.beta), static_cast<T*>(c), ld);
      return kBlasDone;
    }
  }
  return kBlasDeclined;
}

int32_t gemmt(plait_context* /*ctx*/, int32_t dtype, int32_t upper, int64_t n, int64_t k, double alpha, const void* a,
              int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, double alpha2, const void* a2,
              int64_t a2_rs, int64_t a2_cs, const void* b2, int64_t b2_rs, int64_t b2_cs, double beta,
              int32_t beta_reads_c, void* c, int64_t c_rs, int64_t c_cs) {
  if (n <= 0) return kBlasDone;
  const std::optional<ColumnMajorTriangle> t = column_major_triangle(
      dtype, upper != 0, n, k, alpha, {a, n, k, a_rs, a_cs}, {b, k, n, b_rs, b_cs}, alpha2, {a2, n, k, a2_rs, a2_cs},
      {b2, k, n, b2_rs, b2_cs}, beta, beta_reads_c != 0, {c, n, n, c_rs, c_cs});
  const Library& lib = library();
  if (!t || !lib.loaded) return kBlasDeclined;
  return dtype == PLAIT_FLOAT64 ? triangle(lib.dsyrk, lib.dsyr2k, n, k, *t, c)
                                : triangle(lib.ssyrk, lib.ssyr2k, n, k, *t, c);
}

// PLAIT_BLAS=none (or 0), read at each call: a getenv costs far less than a
// call, and tests and users can turn the library off and on in a process.
const char* turned_off() {
  const char* wanted = std::getenv("PLAIT_BLAS");
  return wanted && (std::strcmp(wanted, "none") == 0 || std::strcmp(wanted, "0") == 0) ? wanted : nullptr;
}

// The entries load the library when a kernel first calls one (about 4 ms
// and the library's memory, which a process whose kernels multiply no
// matrices does not pay), and decline without one.
constexpr plait_blas_api kEntries{gemm, gemmt, trsv};

}  // namespace

const plait_blas_api* cpu_blas_api() {
  return turned_off() ? nullptr : &kEntries;
}

std::string cpu_blas_description() {
  if (const char* off = turned_off()) return "none (PLAIT_BLAS=" + std::string(off) + ")";
  return library().description;
}

}  // namespace plait::jit
