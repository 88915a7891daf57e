// Elementwise kernels: the portable scalar build, the choice of build, the split of large work over the OpenMP team,
// and the collapse of numpy broadcasting into runs the builds handle.
#include "kernels/elementwise.hpp"

#include <algorithm>
#include <atomic>

#include "kernels/elementwise_impl.hpp"

namespace {

// One lane of plain floats; the comparisons spell out the x86 min/max semantics the algorithms rely on.
struct Scalar {
  using R = float;
  using M = bool;
  static constexpr int64_t N = 1;
  static R set1(float v) { return v; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R v) { *p = v; }
  static R load_n(const float* p, int64_t, float) { return *p; }  // never called: N = 1 leaves no tail
  static void store_n(float* p, R v, int64_t) { *p = v; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R div(R a, R b) { return a / b; }
  static R sqrt(R a) { return __builtin_sqrtf(a); }
  static R fma(R a, R b, R c) { return __builtin_fmaf(a, b, c); }  // fused: gelu relies on exact residuals
  static R min(R a, R b) { return a < b ? a : b; }
  static R max(R a, R b) { return a > b ? a : b; }
  static M lt(R a, R b) { return a < b; }
  static M gt(R a, R b) { return a > b; }
  static M ge(R a, R b) { return a >= b; }
  static M eq(R a, R b) { return a == b; }
  static M isnan(R a) { return a != a; }
  static R select(M m, R a, R b) { return m ? a : b; }
  static R abs(R a) { return __builtin_fabsf(a); }
  static R copysign(R mag, R sgn) { return __builtin_copysignf(mag, sgn); }
  static R scale2(R p, R n) {
    const int32_t ni = static_cast<int32_t>(n);
    const int32_t n1 = ni >> 1, n2 = ni - n1;
    const float s1 = __builtin_bit_cast(float, static_cast<uint32_t>(n1 + 127) << 23);
    const float s2 = __builtin_bit_cast(float, static_cast<uint32_t>(n2 + 127) << 23);
    return p * s1 * s2;
  }
  static R split(R x, R& mantissa) {
    const uint32_t bits = __builtin_bit_cast(uint32_t, x);
    mantissa = __builtin_bit_cast(float, (bits & 0x7fffffu) | 0x3f800000u);
    return static_cast<float>(static_cast<int32_t>(bits >> 23) - 127);
  }
  static float hsum(R v) { return v; }
  static float hmax(R v) { return v; }
};

}  // namespace

namespace onyx::kernels {
namespace ew {

const Table& scalar_table() {
  static const Table table = make_table<Scalar>();
  return table;
}

}  // namespace ew

namespace {

bool supported(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
  }
  return false;
}

const ew::Table& table_of(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return ew::avx512_table();
    case Isa::Avx2: return ew::avx2_table();
    case Isa::Scalar: break;
  }
  return ew::scalar_table();
}

std::atomic<int> g_isa{-1};  // -1: not chosen yet

Isa current() {
  int v = g_isa.load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(best_isa());
    g_isa.store(v, std::memory_order_relaxed);
  }
  return static_cast<Isa>(v);
}

const ew::Table& table() { return table_of(current()); }

// Work below this many elements stays on the calling thread (waking the team costs more than it saves): 64K for
// the transcendental functions and the row kernels, 256K for the ops that only move memory (one add or compare per
// element runs at memory speed on one core: about 10 us per 100K floats with AVX2/AVX-512).
constexpr int64_t kParallelThreshold = 1 << 16;
constexpr int64_t kCheapParallelThreshold = 1 << 18;
// Elements per parallel task of a long contiguous run.
constexpr int64_t kChunk = 1 << 14;

}  // namespace

Isa best_isa() {
  if (supported(Isa::Avx512)) return Isa::Avx512;
  if (supported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Scalar;
}

Isa active_isa() { return current(); }

bool use_isa(Isa isa) {
  if (!supported(isa)) return false;
  g_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Scalar: break;
  }
  return "scalar";
}

const ew::Table& ew::active_table() { return table(); }

void binary_same(BinaryOp op, const float* a, const float* b, float* y, int64_t n) {
  const ew::Table& t = table();
  // Small inputs run without a parallel region: entering one costs a microsecond or two even when its if clause
  // keeps it to one thread, more than the work of a few thousand elements.
  if (n <= kCheapParallelThreshold) {
    t.binary(op, a, 1, b, 1, y, n);
    return;
  }
  const int64_t tasks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < tasks; ++k) {
    const int64_t begin = k * kChunk, len = std::min(kChunk, n - begin);
    t.binary(op, a + begin, 1, b + begin, 1, y + begin, len);
  }
}

void binary(BinaryOp op, const float* a, const std::vector<int64_t>& a_dims, const float* b,
            const std::vector<int64_t>& b_dims, float* y, const std::vector<int64_t>& out) {
  const int64_t n = [&] {
    int64_t p = 1;
    for (int64_t d : out) p *= d;
    return p;
  }();
  if (n == 0) return;
  // Axes of the output (dims of 1 dropped), each with whether a and b run along it (1) or repeat (0); neighbours
  // with the same pattern merge into one axis.
  struct Axis {
    int64_t size;
    bool a_runs, b_runs;
  };
  std::vector<Axis> axes;
  const size_t rank = out.size();
  for (size_t i = 0; i < rank; ++i) {
    if (out[i] == 1) continue;
    auto dim_of = [&](const std::vector<int64_t>& d) {
      const size_t off = rank - d.size();  // right-aligned
      return i < off ? int64_t{1} : d[i - off];
    };
    const bool ar = dim_of(a_dims) != 1, br = dim_of(b_dims) != 1;
    if (!axes.empty() && axes.back().a_runs == ar && axes.back().b_runs == br)
      axes.back().size *= out[i];
    else
      axes.push_back({out[i], ar, br});
  }
  if (axes.empty()) axes.push_back({1, true, true});
  const Axis inner = axes.back();
  axes.pop_back();
  // Strides of the outer axes in a and b (0 where the side repeats).
  const size_t outer_rank = axes.size();
  std::vector<int64_t> a_stride(outer_rank), b_stride(outer_rank);
  int64_t as = inner.a_runs ? inner.size : 1, bs = inner.b_runs ? inner.size : 1;
  for (size_t k = outer_rank; k-- > 0;) {
    a_stride[k] = axes[k].a_runs ? as : 0;
    b_stride[k] = axes[k].b_runs ? bs : 0;
    if (axes[k].a_runs) as *= axes[k].size;
    if (axes[k].b_runs) bs *= axes[k].size;
  }
  const int64_t len = inner.size, outer = n / len;
  const int64_t chunks = (len + kChunk - 1) / kChunk;
  const int64_t tasks = outer * chunks;
  const ew::Table& t = table();
#pragma omp parallel for schedule(static) if (n > kCheapParallelThreshold)
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t o = task / chunks;
    const int64_t c = task % chunks;
    int64_t ao = 0, bo = 0;
    for (size_t k = outer_rank; k-- > 0;) {
      const int64_t idx = o % axes[k].size;
      o /= axes[k].size;
      ao += idx * a_stride[k];
      bo += idx * b_stride[k];
    }
    const int64_t begin = c * kChunk, count = std::min(kChunk, len - begin);
    const int64_t yo = (task / chunks) * len + begin;
    t.binary(op, a + ao + (inner.a_runs ? begin : 0), inner.a_runs ? 1 : 0, b + bo + (inner.b_runs ? begin : 0),
             inner.b_runs ? 1 : 0, y + yo, count);
  }
}

void unary(const UnaryParams& p, const float* x, float* y, int64_t n) {
  const ew::Table& t = table();
  const int64_t tasks = (n + kChunk - 1) / kChunk;
  const bool cheap = p.op == UnaryOp::Relu || p.op == UnaryOp::LeakyRelu || p.op == UnaryOp::Clip;
#pragma omp parallel for schedule(static) if (n > (cheap ? kCheapParallelThreshold : kParallelThreshold))
  for (int64_t k = 0; k < tasks; ++k) {
    const int64_t begin = k * kChunk;
    t.unary(p, x + begin, y + begin, std::min(kChunk, n - begin));
  }
}

void softmax(const float* x, float* y, int64_t rows, int64_t len, bool log) {
  if (len == 0) return;
  const ew::Table& t = table();
#pragma omp parallel for schedule(static) if (rows > 1 && rows * len > kParallelThreshold)
  for (int64_t r = 0; r < rows; ++r) t.softmax_row(x + r * len, y + r * len, len, log);
}

void layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t len, float eps,
                float* mean, float* inv_std) {
  const ew::Table& t = table();
#pragma omp parallel for schedule(static) if (rows > 1 && rows * len > kParallelThreshold)
  for (int64_t r = 0; r < rows; ++r)
    t.layer_norm_row(x + r * len, scale, bias, y + r * len, len, eps, mean ? mean + r : nullptr,
                     inv_std ? inv_std + r : nullptr);
}

void channel_affine(const float* x, const float* mul, const float* add, float* y, int64_t outer, int64_t channels,
                    int64_t inner) {
  const ew::Table& t = table();
  const int64_t planes = outer * channels;
#pragma omp parallel for schedule(static) if (planes > 1 && planes * inner > kCheapParallelThreshold)
  for (int64_t p = 0; p < planes; ++p) {
    const int64_t c = p % channels;
    t.affine(x + p * inner, y + p * inner, inner, mul[c], add[c]);
  }
}

}  // namespace onyx::kernels
