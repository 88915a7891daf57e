// Integer GEMM on AVX512-VNNI with B packed once (see int8_gemm.hpp). vpdpbusd multiplies 4 unsigned bytes of A
// by 4 signed bytes of B and adds the 4 products to a 32-bit lane without saturation, so the sums wrap exactly as
// the reference's int32 accumulation. Zero points are applied after the product from row and column sums.
// Built with -mavx512vnni and -ffp-contract=off (CMakeLists.txt): the float epilogue rounds the product and the
// sum separately, as the Cast/Mul/Add nodes it replaces do.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/int8_gemm.hpp"

namespace onyx::kernels {
namespace {

constexpr int64_t kLanes = 16;       // int32 lanes of a zmm: the columns of one panel
constexpr int64_t kPanelsPerBlock = 4;  // panels a micro-kernel covers (64 columns)
constexpr int64_t kRowsPerBlock = 6;    // rows a micro-kernel covers: 24 accumulators + 4 B registers

// What a call needs besides the packed B: A in unsigned bytes padded to Kp, the per-row correction and the
// per-column constant of the zero points.
struct Call {
  const uint8_t* a;  // [M][lda]
  int64_t lda;
  const PackedInt8& b;
  const int32_t* row_term;  // [M]: rowsum(A) (multiplied by each column's b_zero)
  const int32_t* col_term;  // [N]: K*a_zero*b_zero[n] - a_zero*colsum[n]
  const int32_t* b_zero;    // [N]
  const Int8Output& out;
};

template <int MR, int NV>
void micro_kernel(const Call& c, int64_t m0, int64_t panel0, int64_t n_valid) {
  const int64_t KG = c.b.K_padded / 4;
  // The loops over MR and NV are unrolled so that the accumulators live in registers.
  __m512i acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_si512();
  const int8_t* bp = c.b.data.data() + panel0 * KG * 64;
  const int64_t panel_stride = KG * 64;
  const uint8_t* a0 = c.a + m0 * c.lda;
  const int64_t lda = c.lda;
  for (int64_t g = 0; g < KG; ++g) {
    __m512i bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(bp + v * panel_stride + g * 64);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      int32_t four;
      std::memcpy(&four, a0 + r * lda + g * 4, 4);
      const __m512i av = _mm512_set1_epi32(four);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, bv[v]);
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t n0 = (panel0 + v) * kLanes;
    const int64_t cols = std::min<int64_t>(kLanes, n_valid - v * kLanes);
    if (cols <= 0) break;
    const __mmask16 mask = static_cast<__mmask16>(cols == kLanes ? 0xFFFF : (1u << cols) - 1);
    const __m512i col_term = _mm512_maskz_loadu_epi32(mask, c.col_term + n0);
    const __m512i b_zero = _mm512_maskz_loadu_epi32(mask, c.b_zero + n0);
    const Int8Output& o = c.out;
    __m512 scale = _mm512_set1_ps(o.scale ? o.scale[0] : 1.0f);
    if (o.scale && o.scale_per_column) scale = _mm512_maskz_loadu_ps(mask, o.scale + n0);
    const __m512 bias = o.bias ? _mm512_maskz_loadu_ps(mask, o.bias + n0) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const int64_t m = m0 + r;
      __m512i x = _mm512_add_epi32(acc[r][v], col_term);
      x = _mm512_sub_epi32(x, _mm512_mullo_epi32(_mm512_set1_epi32(c.row_term[m]), b_zero));
      if (o.c) {
        _mm512_mask_storeu_epi32(o.c + m * o.ldc + n0, mask, x);
      } else {
        __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(x), scale);
        if (o.bias) y = _mm512_add_ps(y, bias);
        _mm512_mask_storeu_ps(o.y + m * o.ldc + n0, mask, y);
      }
    }
  }
}

// Rows [m0, m1) of one column block (m1 - m0 a multiple of kRowsPerBlock unless m1 == M).
template <int NV>
void column_block(const Call& c, int64_t m0, int64_t m1, int64_t panel0, int64_t n_valid) {
  int64_t m = m0;
  for (; m + kRowsPerBlock <= m1; m += kRowsPerBlock) micro_kernel<kRowsPerBlock, NV>(c, m, panel0, n_valid);
  switch (m1 - m) {
    case 5: micro_kernel<5, NV>(c, m, panel0, n_valid); break;
    case 4: micro_kernel<4, NV>(c, m, panel0, n_valid); break;
    case 3: micro_kernel<3, NV>(c, m, panel0, n_valid); break;
    case 2: micro_kernel<2, NV>(c, m, panel0, n_valid); break;
    case 1: micro_kernel<1, NV>(c, m, panel0, n_valid); break;
    default: break;
  }
}

}  // namespace

void int8_gemm_packed_vnni(const uint8_t* a, int64_t lda, int64_t M, const int32_t* row_sum, const int32_t* col_term,
                           const int32_t* b_zero, const PackedInt8& b, const Int8Output& out, bool parallel) {
  const Call c{a, lda, b, row_sum, col_term, b_zero, out};
  const int64_t panels = (b.N + kLanes - 1) / kLanes;
  const int64_t blocks = (panels + kPanelsPerBlock - 1) / kPanelsPerBlock;
  // Tiles of one column block by a run of rows: enough of them (about 4 per thread) that the threads finish
  // together when the columns are few; each tile reads its column block of B once per 6 rows.
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
  const int64_t row_groups = (M + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t splits = std::clamp<int64_t>((4 * threads + blocks - 1) / blocks, 1, row_groups);
  const int64_t rows_per_split = (row_groups + splits - 1) / splits * kRowsPerBlock;
  const int64_t tiles = blocks * splits;
  auto run_tile = [&](int64_t tile) {
    const int64_t blk = tile / splits, m0 = tile % splits * rows_per_split;
    const int64_t m1 = std::min(M, m0 + rows_per_split);
    if (m0 >= m1) return;
    const int64_t p0 = blk * kPanelsPerBlock;
    const int64_t np = std::min(kPanelsPerBlock, panels - p0);
    const int64_t n_valid = b.N - p0 * kLanes;
    switch (np) {
      case 4: column_block<4>(c, m0, m1, p0, n_valid); break;
      case 3: column_block<3>(c, m0, m1, p0, n_valid); break;
      case 2: column_block<2>(c, m0, m1, p0, n_valid); break;
      default: column_block<1>(c, m0, m1, p0, n_valid); break;
    }
  };
#pragma omp parallel for schedule(static) if (threads > 1 && tiles > 1)
  for (int64_t t = 0; t < tiles; ++t) run_tile(t);
}

void every_other_byte_avx512(const uint8_t* src, int64_t n, uint8_t flip, uint8_t* dst) {
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  int64_t i = 0;
  // 16 outputs from 32 input bytes: the low byte of each 16-bit word (vpmovwb). The last block's 32nd byte is
  // one past src[2 * (n - 1)]: while i + 16 < n it is still inside what the copy reads.
  for (; i + 16 < n; i += 16) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_xor_si128(_mm256_cvtepi16_epi8(w), f));
  }
  for (; i < n; ++i) dst[i] = static_cast<uint8_t>(src[2 * i] ^ flip);
}

}  // namespace onyx::kernels
