#include "kernels/gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "base/target_clones.hpp"

namespace onyx::kernels {

using dnnl::memory;
using tag = memory::format_tag;

PackedGemm::PackedGemm(const float* b, int64_t K, int64_t N, bool b_transposed, std::vector<float> bias,
                       Epilogue epilogue, std::shared_ptr<const void> keep)
    : K_(K), N_(N), b_(b), b_transposed_(b_transposed), bias_(std::move(bias)), epilogue_(std::move(epilogue)),
      keep_(std::move(keep)),
      packs_(b, memory::desc({K, N}, memory::data_type::f32, b_transposed ? tag::ba : tag::ab)) {}

const PackedGemm::Plan& PackedGemm::plan(int64_t M) const {
  return plans_.get(M, [&] {
    auto& eng = cpu_engine();
    memory::desc a_md({M, K_}, memory::data_type::f32, tag::ab);
    memory::desc w_md({K_, N_}, memory::data_type::f32, tag::any);
    memory::desc y_md({M, N_}, memory::data_type::f32, tag::ab);
    std::unique_ptr<dnnl::matmul::desc> d;
    if (bias_.empty()) {
      d = std::make_unique<dnnl::matmul::desc>(a_md, w_md, y_md);
    } else {
      memory::desc bias_md({1, N_}, memory::data_type::f32, tag::ab);
      d = std::make_unique<dnnl::matmul::desc>(a_md, w_md, bias_md, y_md);
    }
    dnnl::matmul::primitive_desc pd(*d, own_scratchpad(epilogue_.attr()), eng);
    return Plan{dnnl::matmul(pd), packs_.get(pd.weights_desc()), pd.scratchpad_desc()};
  });
}

void PackedGemm::run(const float* a, int64_t M, float* y) const {
  if (M == 0) return;
  // One row without an epilogue: the hand-written matrix x vector product, faster than the library's there.
  if (M == 1 && epilogue_.empty()) return gemv(a, b_, K_, N_, b_transposed_, bias_.empty() ? nullptr : bias_.data(), y);
  const SerialScope serial(runs_serially(static_cast<double>(M) * static_cast<double>(K_) * static_cast<double>(N_)));
  const Plan& p = plan(M);
  auto& eng = cpu_engine();
  memory a_m({{M, K_}, memory::data_type::f32, tag::ab}, eng, const_cast<float*>(a));
  memory y_m({{M, N_}, memory::data_type::f32, tag::ab}, eng, y);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a_m}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, y_m}};
  if (!bias_.empty())
    args.emplace(DNNL_ARG_BIAS, memory({{1, N_}, memory::data_type::f32, tag::ab}, eng, const_cast<float*>(bias_.data())));
  run_primitive(p.primitive, p.scratchpad, std::move(args));
  thread_stream().wait();
}

namespace {

// 16 float lanes (GCC vector extension): one AVX-512 register in the x86-64-v4 clone, two or four narrower
// ones in the others.
typedef float Vec16 __attribute__((vector_size(64)));

// Unaligned loads through memcpy (a by-value helper would cross the ABI of each clone's vector width).
#define ONYX_LOAD16(p) \
  ({                                   \
    Vec16 v_;                          \
    std::memcpy(&v_, (p), sizeof v_);  \
    v_;                                \
  })

// y[n] = dot(b[n, :], x) for n in [n0, n1): rows of B read once, four at a time.
ONYX_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void gemv_rows(const float* x, const float* b, int64_t K, int64_t n0, int64_t n1, float* y) {
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    const float* r0 = b + n * K;
    const float* r1 = r0 + K;
    const float* r2 = r1 + K;
    const float* r3 = r2 + K;
    Vec16 s0 = {}, s1 = {}, s2 = {}, s3 = {};
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const Vec16 xv = ONYX_LOAD16(x + k);
      s0 += ONYX_LOAD16(r0 + k) * xv;
      s1 += ONYX_LOAD16(r1 + k) * xv;
      s2 += ONYX_LOAD16(r2 + k) * xv;
      s3 += ONYX_LOAD16(r3 + k) * xv;
    }
    float t[4] = {0, 0, 0, 0};
    for (int i = 0; i < 16; ++i) t[0] += s0[i], t[1] += s1[i], t[2] += s2[i], t[3] += s3[i];
    for (; k < K; ++k) t[0] += r0[k] * x[k], t[1] += r1[k] * x[k], t[2] += r2[k] * x[k], t[3] += r3[k] * x[k];
    for (int i = 0; i < 4; ++i) y[n + i] = t[i];
  }
  for (; n < n1; ++n) {
    const float* r = b + n * K;
    Vec16 s = {};
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) s += ONYX_LOAD16(r + k) * ONYX_LOAD16(x + k);
    float t = 0;
    for (int i = 0; i < 16; ++i) t += s[i];
    for (; k < K; ++k) t += r[k] * x[k];
    y[n] = t;
  }
}

// y[n0:n1] = sum over k of x[k] * b[k, n0:n1]: each row of B streamed once, the column block kept in y.
ONYX_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void gemv_cols(const float* x, const float* b, int64_t K, int64_t N, int64_t n0, int64_t n1, float* y) {
  for (int64_t n = n0; n < n1; ++n) y[n] = 0;
  for (int64_t k = 0; k < K; ++k) {
    const float xk = x[k];
    const float* r = b + k * N;
    int64_t n = n0;
    for (; n + 16 <= n1; n += 16) {
      Vec16 acc = ONYX_LOAD16(y + n);
      acc += xk * ONYX_LOAD16(r + n);
      std::memcpy(y + n, &acc, sizeof acc);
    }
    for (; n < n1; ++n) y[n] += xk * r[n];
  }
}

memory::format_tag plain_tag(size_t rank) {
  static const tag tags[] = {tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde, tag::abcdef};
  return tags[rank - 1];
}

struct BatchedPlan {
  dnnl::matmul primitive;
  memory::desc a, b, c, scratchpad;
};

}  // namespace

void batched_matmul(const float* a, const std::vector<int64_t>& a_dims, const float* b,
                    const std::vector<int64_t>& b_dims, float* c) {
  static PrimitiveCache<std::vector<int64_t>, BatchedPlan> cache;
  const size_t r = a_dims.size();
  std::vector<int64_t> key = a_dims;
  key.insert(key.end(), b_dims.begin(), b_dims.end());
  double macs = static_cast<double>(a_dims[r - 2]) * static_cast<double>(a_dims[r - 1]) * static_cast<double>(b_dims[r - 1]);
  for (size_t i = 0; i + 2 < r; ++i) macs *= static_cast<double>(std::max(a_dims[i], b_dims[i]));
  const SerialScope serial(runs_serially(macs));
  const BatchedPlan& p = cache.get(key, [&] {
    memory::dims ad(a_dims.begin(), a_dims.end()), bd(b_dims.begin(), b_dims.end()), cd(r);
    for (size_t i = 0; i + 2 < r; ++i) cd[i] = std::max(ad[i], bd[i]);
    cd[r - 2] = ad[r - 2];
    cd[r - 1] = bd[r - 1];
    BatchedPlan bp{{}, {ad, memory::data_type::f32, plain_tag(r)}, {bd, memory::data_type::f32, plain_tag(r)},
                   {cd, memory::data_type::f32, plain_tag(r)}, {}};
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(bp.a, bp.b, bp.c), own_scratchpad(), cpu_engine());
    bp.primitive = dnnl::matmul(pd);
    bp.scratchpad = pd.scratchpad_desc();
    return bp;
  });
  auto& eng = cpu_engine();
  memory am(p.a, eng, const_cast<float*>(a)), bm(p.b, eng, const_cast<float*>(b)), cm(p.c, eng, c);
  run_primitive(p.primitive, p.scratchpad, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  thread_stream().wait();
}

void gemv(const float* x, const float* b, int64_t K, int64_t N, bool b_transposed, const float* bias, float* y) {
  // Blocks of columns (a multiple of 16) split over the team. The row-streaming form reads B's rows in long runs:
  // one block per thread, up to 64K floats of y (kept in L2); short blocks would read B in strided pieces, which
  // the prefetchers follow worse (a [288, 32768] B took 1.6x the time of a plain stream in 2K-column blocks).
  const int64_t threads = K * N > (int64_t{1} << 16) ? std::max(1, omp_get_max_threads()) : 1;
  const int64_t per_thread = ((N + threads - 1) / threads + 15) / 16 * 16;
  const int64_t block = b_transposed ? 64 : std::clamp<int64_t>(per_thread, 2048, int64_t{1} << 16);
  const int64_t blocks = (N + block - 1) / block;
#pragma omp parallel for schedule(static) if (K * N > (int64_t{1} << 16) && blocks > 1)
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t n0 = i * block, n1 = std::min(N, n0 + block);
    if (b_transposed) gemv_rows(x, b, K, n0, n1, y);
    else gemv_cols(x, b, K, N, n0, n1, y);
    if (bias)
      for (int64_t n = n0; n < n1; ++n) y[n] += bias[n];
  }
}

}  // namespace onyx::kernels
