// A complex FFT of any length in double precision, for DFT and STFT: recursive mixed-radix Cooley-Tukey over the
// length's prime factors (a direct sum for each factor up to 128) and Bluestein's chirp-z algorithm for lengths whose
// smallest prime factor is larger. O(n log n) for smooth lengths, O(n * p) per radix-p stage.
// Twiddle factors at multiples of a quarter turn are exact and the zero-frequency term of every stage multiplies by
// exactly 1, so exact zeros (the imaginary part of the DC bin of a real signal, for instance) stay exact outside
// Bluestein's case. Not normalized: the caller divides by n for the inverse.
#pragma once
#include <cmath>
#include <complex>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace onyx::ops::signal {

using cd = std::complex<double>;

// exp(-2*pi*i*j/n), exact at quarter turns.
inline cd unit_root(uint64_t j, uint64_t n) {
  j %= n;
  if ((4 * j) % n == 0) {
    switch ((4 * j) / n) {
      case 0: return {1.0, 0.0};
      case 1: return {0.0, -1.0};
      case 2: return {-1.0, 0.0};
      default: return {0.0, 1.0};
    }
  }
  const double a = 2.0 * M_PI * static_cast<double>(j) / static_cast<double>(n);
  return {std::cos(a), -std::sin(a)};
}

class Fft {
 public:
  explicit Fft(size_t n) : n_(n) {
    if (n_ <= 1) return;
    size_t rest = n_;
    for (size_t p = 2; p * p <= rest; ++p)
      while (rest % p == 0) factors_.push_back(p), rest /= p;
    if (rest > 1) factors_.push_back(rest);
    // Levels whose smallest factor is large run Bluestein over their whole length.
    size_t size = n_;
    for (size_t f : factors_) {
      if (f > kDirectMax) {
        bluestein_ = std::make_unique<Bluestein>(size);
        break;
      }
      size /= f;
    }
    roots_.resize(n_);
    for (size_t j = 0; j < n_; ++j) roots_[j] = unit_root(j, n_);
  }

  // In place; inverse uses exp(+2*pi*i*j*k/n) (no 1/n).
  void run(std::vector<cd>& a, bool inverse) const {
    if (n_ <= 1) return;
    if (inverse)
      for (cd& v : a) v = std::conj(v);
    std::vector<cd> out(n_), scratch;
    transform(a.data(), 1, n_, out.data(), 0, scratch);
    a.swap(out);
    if (inverse)
      for (cd& v : a) v = std::conj(v);
  }

 private:
  static constexpr size_t kDirectMax = 128;

  // Plain complex product (std::complex's operator* adds NaN/inf recovery we do not need, and is slower).
  static cd mul(const cd& x, const cd& y) {
    return {x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real()};
  }

  struct Bluestein {
    size_t n;
    std::unique_ptr<Fft> inner;
    std::vector<cd> chirp, filter;
    explicit Bluestein(size_t len) : n(len) {
      size_t m = 1;
      while (m < 2 * n - 1) m <<= 1;
      inner = std::make_unique<Fft>(m);
      chirp.resize(n);
      for (size_t k = 0; k < n; ++k) chirp[k] = unit_root((static_cast<uint64_t>(k) * k) % (2 * n), 2 * n);
      filter.assign(m, cd{});
      filter[0] = std::conj(chirp[0]);
      for (size_t k = 1; k < n; ++k) filter[k] = filter[m - k] = std::conj(chirp[k]);
      inner->run(filter, false);
    }
    void run(const cd* in, size_t stride, cd* out) const {
      const size_t m = filter.size();
      std::vector<cd> b(m, cd{});
      for (size_t k = 0; k < n; ++k) b[k] = mul(in[k * stride], chirp[k]);
      inner->run(b, false);
      for (size_t k = 0; k < m; ++k) b[k] = mul(b[k], filter[k]);
      inner->run(b, true);
      const double scale = 1.0 / static_cast<double>(m);
      for (size_t k = 0; k < n; ++k) out[k] = mul(b[k] * scale, chirp[k]);
    }
  };

  // out[0..n) = DFT of in[0], in[stride], ..., splitting on factors_[fi].
  void transform(const cd* in, size_t stride, size_t n, cd* out, size_t fi, std::vector<cd>& scratch) const {
    if (n == 1) {
      out[0] = in[0];
      return;
    }
    const size_t p = factors_[fi];
    if (p > kDirectMax) {
      bluestein_->run(in, stride, out);
      return;
    }
    const size_t m = n / p;
    for (size_t r = 0; r < p; ++r) transform(in + r * stride, stride * p, m, out + r * m, fi + 1, scratch);
    const size_t step = n_ / n;  // roots_[j * step] = exp(-2 pi i j / n)
    if (p == 2) {
      for (size_t k = 0; k < m; ++k) {
        const cd y0 = out[k], y1 = mul(out[m + k], roots_[k * step]);
        out[k] = y0 + y1;
        out[k + m] = y0 - y1;
      }
      return;
    }
    scratch.resize(p);
    for (size_t k = 0; k < m; ++k) {
      for (size_t r = 0; r < p; ++r) scratch[r] = out[r * m + k];
      for (size_t q = 0; q < p; ++q) {
        const size_t kk = k + m * q;
        cd acc = scratch[0];
        for (size_t r = 1; r < p; ++r) acc += mul(scratch[r], roots_[((r * kk) % n) * step]);
        out[kk] = acc;
      }
    }
  }

  size_t n_;
  std::vector<size_t> factors_;
  std::vector<cd> roots_;
  std::unique_ptr<Bluestein> bluestein_;
};

}  // namespace onyx::ops::signal
