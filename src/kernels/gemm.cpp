#include "kernels/gemm.hpp"

#include <algorithm>

namespace onyx::kernels {

using dnnl::memory;
using tag = memory::format_tag;

PackedGemm::PackedGemm(const float* b, int64_t K, int64_t N, bool b_transposed, std::vector<float> bias,
                       std::shared_ptr<const void> keep)
    : K_(K), N_(N), bias_(std::move(bias)), keep_(std::move(keep)),
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
    dnnl::matmul::primitive_desc pd(*d, eng);
    return Plan{dnnl::matmul(pd), packs_.get(pd.weights_desc())};
  });
}

void PackedGemm::run(const float* a, int64_t M, float* y) const {
  if (M == 0) return;
  const Plan& p = plan(M);
  auto& eng = cpu_engine();
  memory a_m({{M, K_}, memory::data_type::f32, tag::ab}, eng, const_cast<float*>(a));
  memory y_m({{M, N_}, memory::data_type::f32, tag::ab}, eng, y);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a_m}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, y_m}};
  if (!bias_.empty())
    args.emplace(DNNL_ARG_BIAS, memory({{1, N_}, memory::data_type::f32, tag::ab}, eng, const_cast<float*>(bias_.data())));
  p.primitive.execute(thread_stream(), args);
  thread_stream().wait();
}

namespace {

memory::format_tag plain_tag(size_t rank) {
  static const tag tags[] = {tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde, tag::abcdef};
  return tags[rank - 1];
}

struct BatchedPlan {
  dnnl::matmul primitive;
  memory::desc a, b, c;
};

}  // namespace

void batched_matmul(const float* a, const std::vector<int64_t>& a_dims, const float* b,
                    const std::vector<int64_t>& b_dims, float* c) {
  static PrimitiveCache<std::vector<int64_t>, BatchedPlan> cache;
  const size_t r = a_dims.size();
  std::vector<int64_t> key = a_dims;
  key.insert(key.end(), b_dims.begin(), b_dims.end());
  const BatchedPlan& p = cache.get(key, [&] {
    memory::dims ad(a_dims.begin(), a_dims.end()), bd(b_dims.begin(), b_dims.end()), cd(r);
    for (size_t i = 0; i + 2 < r; ++i) cd[i] = std::max(ad[i], bd[i]);
    cd[r - 2] = ad[r - 2];
    cd[r - 1] = bd[r - 1];
    BatchedPlan bp{{}, {ad, memory::data_type::f32, plain_tag(r)}, {bd, memory::data_type::f32, plain_tag(r)},
                   {cd, memory::data_type::f32, plain_tag(r)}};
    bp.primitive = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(bp.a, bp.b, bp.c), cpu_engine()));
    return bp;
  });
  auto& eng = cpu_engine();
  memory am(p.a, eng, const_cast<float*>(a)), bm(p.b, eng, const_cast<float*>(b)), cm(p.c, eng, c);
  p.primitive.execute(thread_stream(), {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  thread_stream().wait();
}

}  // namespace onyx::kernels
