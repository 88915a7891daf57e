// 16 x 16 transposes of 32-bit elements (see transpose.hpp).
#include <immintrin.h>

#include "kernels/transpose.hpp"

namespace onyx::kernels {
namespace {

// The 16 x 16 block at x (row stride ldx) into y (row stride ldy), transposed.
void block16(const uint32_t* x, int64_t ldx, uint32_t* y, int64_t ldy) {
  __m512i r[16], t[16], u[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(x + i * ldx);
  // Within each 128-bit lane L: t[2k] = rows 2k, 2k+1 at columns 4L, 4L+1; t[2k+1] at 4L+2, 4L+3.
  for (int k = 0; k < 8; ++k) {
    t[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
  }
  // u[4q + j]: rows 4q..4q+3 of column 4L + j, in lane L.
  for (int q = 0; q < 4; ++q) {
    u[4 * q + 0] = _mm512_unpacklo_epi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 1] = _mm512_unpackhi_epi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 2] = _mm512_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
    u[4 * q + 3] = _mm512_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
  }
  // Lanes regrouped: x[j] (j < 4) holds columns j and 8 + j of rows 0..7, x[4 + j] columns 4 + j and 12 + j;
  // x[8 + ...] the same for rows 8..15.
  __m512i v[16];
  for (int j = 0; j < 4; ++j) {
    v[j] = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
    v[4 + j] = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);
    v[8 + j] = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    v[12 + j] = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
  }
  for (int j = 0; j < 8; ++j) {
    _mm512_storeu_si512(y + j * ldy, _mm512_shuffle_i32x4(v[j], v[8 + j], 0x88));
    _mm512_storeu_si512(y + (8 + j) * ldy, _mm512_shuffle_i32x4(v[j], v[8 + j], 0xDD));
  }
}

}  // namespace

void transpose_tile_32bit_avx512(const uint32_t* x, uint32_t* y, int64_t R, int64_t C, int64_t r0, int64_t r1,
                                 int64_t c0, int64_t c1) {
  int64_t r = r0;
  for (; r + 16 <= r1; r += 16) {
    int64_t c = c0;
    for (; c + 16 <= c1; c += 16) block16(x + r * C + c, C, y + c * R + r, R);
    for (; c < c1; ++c)
      for (int64_t i = r; i < r + 16; ++i) y[c * R + i] = x[i * C + c];
  }
  for (; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) y[c * R + r] = x[r * C + c];
}

}  // namespace onyx::kernels
