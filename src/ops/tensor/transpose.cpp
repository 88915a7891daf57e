// ai.onnx Transpose — versions 1, 13 (bfloat16), 21 (float8, int4/uint4), 23 (float4e2m1), 24 (float8e8m0),
// 25 (int2/uint2). perm defaults to the reversed axes; it must be a permutation of [0, rank).
// Output dim i is input dim perm[i]; inference permutes symbolic dims too.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "base/target_clones.hpp"
#include "ir/tensor_alloc.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/transpose.hpp"
#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {


std::vector<int64_t> transpose_perm(const std::optional<std::vector<int64_t>>& perm, size_t rank) {
  std::vector<int64_t> p;
  if (!perm) {
    for (size_t i = rank; i-- > 0;) p.push_back(static_cast<int64_t>(i));
    return p;
  }
  p = *perm;
  if (p.size() != rank) fail("perm ", shape_of(p).to_string(), " has ", p.size(), " entries for an input of rank ", rank);
  std::vector<bool> seen(rank, false);
  for (int64_t x : p) {
    if (x < 0 || x >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(x)])
      fail("perm ", shape_of(p).to_string(), " is not a permutation of [0, ", rank, ")");
    seen[static_cast<size_t>(x)] = true;
  }
  return p;
}

// Axes that stay neighbours, in order, move as one: [N, C, H, W] with perm [0, 2, 3, 1] is [N, C, H*W] with perm
// [0, 2, 1]. Size-1 axes are dropped first. Returns the merged input dims and perm.
std::pair<Dims, std::vector<int64_t>> merge_axes(const Dims& dims, const std::vector<int64_t>& perm) {
  std::vector<int64_t> kept_pos(dims.size(), -1);
  Dims kd;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) kept_pos[i] = static_cast<int64_t>(kd.size()), kd.push_back(dims[i]);
  std::vector<int64_t> kp;
  for (int64_t a : perm)
    if (kept_pos[static_cast<size_t>(a)] >= 0) kp.push_back(kept_pos[static_cast<size_t>(a)]);
  // Groups of output axes whose input axes are consecutive.
  std::vector<std::pair<int64_t, int64_t>> groups;  // (first input axis, size) in output order
  for (size_t i = 0; i < kp.size(); ++i) {
    if (i > 0 && kp[i] == kp[i - 1] + 1) groups.back().second *= kd[static_cast<size_t>(kp[i])];
    else groups.emplace_back(kp[i], kd[static_cast<size_t>(kp[i])]);
  }
  std::vector<size_t> by_input(groups.size());
  for (size_t i = 0; i < by_input.size(); ++i) by_input[i] = i;
  std::sort(by_input.begin(), by_input.end(), [&](size_t x, size_t y) { return groups[x].first < groups[y].first; });
  Dims md(groups.size());
  std::vector<int64_t> mp(groups.size());
  for (size_t j = 0; j < by_input.size(); ++j) {
    md[j] = groups[by_input[j]].second;
    mp[by_input[j]] = static_cast<int64_t>(j);
  }
  return {md, mp};
}

// Y[b][c][r] = X[b][r][c] for `batches` R x C matrices of `size`-byte elements: small matrices (they fit in
// the L1 cache) row by row of Y, larger ones in cache-sized tiles.
template <size_t kSize>
void transpose_batched(const char* x, char* y, int64_t batches, int64_t R, int64_t C) {
  struct E {
    char b[kSize];
  };
  const bool parallel = batches * R * C > (int64_t{1} << 18);
  // 4-byte elements on AVX-512: 16 x 16 blocks in registers, tiles of 64 x 64.
  static const bool avx512 = kernels::best_isa() == kernels::Isa::Avx512;
  if (kSize == 4 && avx512 && R >= 16 && C >= 16) {
    constexpr int64_t kBig = 64;
    const int64_t tiles_r = (R + kBig - 1) / kBig, tiles_c = (C + kBig - 1) / kBig;
    const int64_t work = batches * tiles_r * tiles_c;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t w = 0; w < work; ++w) {
      const int64_t b = w / (tiles_r * tiles_c), tr = w / tiles_c % tiles_r, tc = w % tiles_c;
      kernels::transpose_tile_32bit_avx512(reinterpret_cast<const uint32_t*>(x) + b * R * C,
                                           reinterpret_cast<uint32_t*>(y) + b * R * C, R, C, tr * kBig,
                                           std::min(R, (tr + 1) * kBig), tc * kBig, std::min(C, (tc + 1) * kBig));
    }
    return;
  }
  if (R * C * static_cast<int64_t>(kSize) <= (int64_t{16} << 10)) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t b = 0; b < batches; ++b) {
      const E* src = reinterpret_cast<const E*>(x) + b * R * C;
      E* dst = reinterpret_cast<E*>(y) + b * R * C;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < R; ++r) dst[c * R + r] = src[r * C + c];
    }
    return;
  }
  constexpr int64_t kTile = 32;
  const int64_t tiles_r = (R + kTile - 1) / kTile, tiles_c = (C + kTile - 1) / kTile;
  const int64_t work = batches * tiles_r * tiles_c;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t w = 0; w < work; ++w) {
    const int64_t b = w / (tiles_r * tiles_c), tr = w / tiles_c % tiles_r, tc = w % tiles_c;
    const E* src = reinterpret_cast<const E*>(x) + b * R * C;
    E* dst = reinterpret_cast<E*>(y) + b * R * C;
    const int64_t r1 = std::min(R, (tr + 1) * kTile), c1 = std::min(C, (tc + 1) * kTile);
    for (int64_t r = tr * kTile; r < r1; ++r)
      for (int64_t c = tc * kTile; c < c1; ++c) dst[c * R + r] = src[r * C + c];
  }
}

// Batched transposes of few rows (R = 2, 4, 8 or 16) of 4-byte elements: a channel shuffle over NHWC data is one
// per pixel, with R the group count. Per block of 16 columns the R rows are loaded as vectors and interleaved in
// log2(R) rounds of pairwise zips (rows r and r + n/2 of the n streams left), which leaves Y's 16 R elements in
// order. Elements move as 32-bit integers, bit for bit.
using Lanes = uint32_t __attribute__((vector_size(64)));

template <int R>
__attribute__((always_inline)) inline void interleave_rows(const uint32_t* src, int64_t C, int64_t c0, uint32_t* dst) {
  Lanes s[R], t[R];
  for (int r = 0; r < R; ++r) std::memcpy(&s[r], src + r * C + c0, sizeof(Lanes));
  for (int n = R; n > 1; n /= 2) {
    const int m = R / n;  // vectors per stream
    for (int i = 0; i < n / 2; ++i)
      for (int j = 0; j < m; ++j) {
        const Lanes x = s[i * m + j], y = s[(i + n / 2) * m + j];
        t[2 * i * m + 2 * j] = __builtin_shufflevector(x, y, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        t[2 * i * m + 2 * j + 1] =
            __builtin_shufflevector(x, y, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      }
    for (int r = 0; r < R; ++r) s[r] = t[r];
  }
  std::memcpy(dst + c0 * R, s, sizeof s);
}

template <int R>
__attribute__((always_inline)) inline void transpose_rows_of_batch(const uint32_t* src, uint32_t* dst, int64_t C) {
  int64_t c = 0;
  for (; c + 16 <= C; c += 16) interleave_rows<R>(src, C, c, dst);
  for (; c < C; ++c)
    for (int r = 0; r < R; ++r) dst[c * R + r] = src[r * C + c];
}

// R (2, 4, 8 or 16) is an argument rather than a template parameter, since clang cannot clone templates; each
// clone inlines the four instances of the batch loop's body.
ONYX_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void transpose_few_rows(int R, const uint32_t* x, uint32_t* y, int64_t batches, int64_t C) {
#pragma omp parallel for schedule(static) if (batches * R * C > (int64_t{1} << 18))
  for (int64_t b = 0; b < batches; ++b) {
    const uint32_t* src = x + b * R * C;
    uint32_t* dst = y + b * R * C;
    switch (R) {
      case 2: transpose_rows_of_batch<2>(src, dst, C); break;
      case 4: transpose_rows_of_batch<4>(src, dst, C); break;
      case 8: transpose_rows_of_batch<8>(src, dst, C); break;
      default: transpose_rows_of_batch<16>(src, dst, C); break;
    }
  }
}

// Three rows: an image's RGB planes into pixels (NCHW -> NHWC at a CNN's input). Column by column, the three rows
// read as streams and Y written in order; the tiled path's bookkeeping costs more than these copies.
void transpose_three_rows(const uint32_t* x, uint32_t* y, int64_t batches, int64_t C) {
#pragma omp parallel for schedule(static) if (batches * 3 * C > (int64_t{1} << 18))
  for (int64_t b = 0; b < batches; ++b) {
    const uint32_t* s0 = x + b * 3 * C;
    const uint32_t *s1 = s0 + C, *s2 = s1 + C;
    uint32_t* dst = y + b * 3 * C;
    for (int64_t c = 0; c < C; ++c) {
      dst[3 * c] = s0[c];
      dst[3 * c + 1] = s1[c];
      dst[3 * c + 2] = s2[c];
    }
  }
}

// True when transpose_few_rows (or transpose_three_rows) took the transpose.
bool few_rows(const char* x, char* y, int64_t batches, int64_t R, int64_t C) {
  if (C < 16) return false;
  const auto* src = reinterpret_cast<const uint32_t*>(x);
  auto* dst = reinterpret_cast<uint32_t*>(y);
  switch (R) {
    case 2: transpose_few_rows(2, src, dst, batches, C); return true;
    case 3: transpose_three_rows(src, dst, batches, C); return true;
    case 4: transpose_few_rows(4, src, dst, batches, C); return true;
    case 8: transpose_few_rows(8, src, dst, batches, C); return true;
    case 16: transpose_few_rows(16, src, dst, batches, C); return true;
    default: return false;
  }
}

// Y[b][c][r] = X[b][r][c] for `batches` R x C matrices whose elements are runs of `bytes` bytes.
void transpose_runs(const char* x, char* y, int64_t batches, int64_t R, int64_t C, size_t bytes) {
  constexpr int64_t kTile = 16;
  const int64_t tiles_r = (R + kTile - 1) / kTile, tiles_c = (C + kTile - 1) / kTile;
  const int64_t work = batches * tiles_r * tiles_c;
#pragma omp parallel for schedule(static) if (batches * R * C * static_cast<int64_t>(bytes) > (int64_t{1} << 20))
  for (int64_t w = 0; w < work; ++w) {
    const int64_t b = w / (tiles_r * tiles_c), tr = w / tiles_c % tiles_r, tc = w % tiles_c;
    const char* src = x + b * R * C * static_cast<int64_t>(bytes);
    char* dst = y + b * R * C * static_cast<int64_t>(bytes);
    const int64_t r1 = std::min(R, (tr + 1) * kTile), c1 = std::min(C, (tc + 1) * kTile);
    for (int64_t r = tr * kTile; r < r1; ++r)
      for (int64_t c = tc * kTile; c < c1; ++c)
        std::memcpy(dst + (c * R + r) * static_cast<int64_t>(bytes), src + (r * C + c) * static_cast<int64_t>(bytes), bytes);
  }
}

// Permutations that are batched 2-D transposes, of single elements or of contiguous runs of them: after merging,
// [1, 0], [0, 2, 1], [1, 0, 2] or [0, 2, 1, 3] (channels-first <-> channels-last, channel shuffles). False when
// the permutation is another one, for the general path.
// `out`: Y's dims; Y is allocated here (unfilled: the fast paths write every element) when one applies.
bool transpose_fast(const Tensor& x, const std::vector<int64_t>& perm, const Dims& out, KernelContext& ctx) {
  const int bits = dtype_bits(x.dtype());
  if (bits % 8 != 0 || x.element_count() < 1024) return false;
  auto [md, mp] = merge_axes(x.dims(), perm);
  using P = std::vector<int64_t>;
  int64_t batches = 1, R = 0, C = 0, run = 1;
  if (mp == P{1, 0}) R = md[0], C = md[1];
  else if (mp == P{0, 2, 1}) batches = md[0], R = md[1], C = md[2];
  else if (mp == P{1, 0, 2}) R = md[0], C = md[1], run = md[2];
  else if (mp == P{0, 2, 1, 3}) batches = md[0], R = md[1], C = md[2], run = md[3];
  else return false;
  ctx.set_output(0, allocate_for_overwrite(x.dtype(), out));
  const char* src = x.bytes().data();
  char* dst = ctx.outputs()[0].tensor.mutable_data<char>();
  const size_t bytes = static_cast<size_t>(bits / 8) * static_cast<size_t>(run);
  switch (run == 1 ? bytes : 0) {
    case 1: transpose_batched<1>(src, dst, batches, R, C); return true;
    case 2: transpose_batched<2>(src, dst, batches, R, C); return true;
    case 4:
      if (!few_rows(src, dst, batches, R, C)) transpose_batched<4>(src, dst, batches, R, C);
      return true;
    case 8: transpose_batched<8>(src, dst, batches, R, C); return true;
    default: transpose_runs(src, dst, batches, R, C, bytes); return true;
  }
}

std::optional<std::vector<int64_t>> perm_attr(const AttributeView& a) {
  if (!a.has("perm")) return std::nullopt;
  return a.get_ints("perm");
}

void add_transpose(Registry& r) {
  for (int v : {1, 13, 21, 23, 24, 25}) {
    auto infer = [](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      auto perm = perm_attr(ctx.attrs);
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        ctx.set_output(0, Type::tensor(t.elem, perm ? unknown_dims(perm->size()) : Shape{}));
        return;
      }
      auto p = transpose_perm(perm, t.shape.dims.size());
      Shape s = unknown_dims(p.size());
      for (size_t i = 0; i < p.size(); ++i) s.dims[i] = t.shape.dims[static_cast<size_t>(p[i])];
      ctx.set_output(0, Type::tensor(t.elem, s));
    };
    auto kernel = [](const KernelInit& init) {
      auto perm = perm_attr(init.attrs);
      const bool init_reference = init.reference_only;
      return make_kernel([perm, init_reference](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        const Dims& xd = x.dims();
        auto p = transpose_perm(perm, xd.size());
        const Dims xs = strides_of(xd);
        Dims out(p.size()), strides(p.size());
        for (size_t i = 0; i < p.size(); ++i) {
          out[i] = xd[static_cast<size_t>(p[i])];
          strides[i] = xs[static_cast<size_t>(p[i])];
        }
        if (!init_reference && transpose_fast(x, p, out, ctx)) return;
        gather_strided(x, ctx.allocate_output(0, x.dtype(), out), out, strides);
      });
    };
    add_versions(r, "", "Transpose", {v}, {{{0}, all_tensor_types(v)}}, infer, kernel);
  }
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

void rule_transpose(grad::Args& a) {
  const int64_t rank = static_cast<int64_t>(a.in_dims(0).size());
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = a.attrs.get_ints("perm", perm);
  if (static_cast<int64_t>(perm.size()) != rank) fail("Transpose perm has ", perm.size(), " entries for rank ", rank);
  std::vector<int64_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[static_cast<size_t>(normalize_axis(perm[k], rank, "perm"))] = static_cast<int64_t>(k);
  const grad::Grad g = a.dy();
  a.set(0, grad::transposed(g.v, g.dims, inverse));
}

}  // namespace

void register_transpose(Registry& r) {
  add_transpose(r);
  r.set_gradient("", "Transpose", rule_transpose);
  r.set_fast_kernels("", "Transpose", {"runs of the last axis copied whole; 2-D transposes of 4-byte elements in 16 x 16 AVX-512 blocks"});
}

}  // namespace onyx::ops
