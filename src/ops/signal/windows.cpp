// ai.onnx HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix (17, the only versions).
// Windows: input `size` (scalar int32/int64); output [size] of type output_datatype (default float).
//   With N = size (periodic=1, default) or size-1 (periodic=0), for n in [0, size):
//   Hann 0.5 - 0.5 cos(2 pi n/N); Hamming 25/46 - 21/46 cos(2 pi n/N);
//   Blackman 0.42 - 0.5 cos(2 pi n/N) + 0.08 cos(4 pi n/N). A symmetric window of size 1 is [1].
// MelWeightMatrix: inputs num_mel_bins, dft_length, sample_rate (integers), lower_edge_hertz, upper_edge_hertz
//   (floats); output [dft_length/2+1, num_mel_bins] of output_datatype: triangular filters on the mel scale
//   (mel = 2595 log10(1 + hz/700)) between num_mel_bins+2 points evenly spaced from lower to upper edge (in
//   steps of (upper-lower)/(num_mel_bins+2) mel, as the ONNX reference does), each point mapped to the
//   spectrogram bin floor((dft_length+1) * hz / sample_rate). Rows past the last bin are dropped.
// Computed in double and converted once; integer output types truncate toward zero.
#include <cmath>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

constexpr int64_t kMaxElements = int64_t{1} << 31;

const std::vector<DataType> kOutTypes = {D::Float,  D::Float16, D::Double, D::BFloat16, D::Int8,   D::Int16,
                                         D::Int32,  D::Int64,   D::UInt8,  D::UInt16,   D::UInt32, D::UInt64};

DataType output_dtype(const AttributeView& attrs) {
  int64_t v = attrs.get_int("output_datatype", 1);
  for (DataType d : kOutTypes)
    if (static_cast<int64_t>(d) == v) return d;
  fail("output_datatype ", v, " is not one of float, float16, double, bfloat16 or an integer type");
}

int64_t scalar_int(const Tensor& t, const char* what) {
  if (t.element_count() != 1) fail(what, " must be a scalar, got shape ", shape_of(t.dims()).to_string());
  return read_ints(t)[0];
}
double scalar_double(const Tensor& t, const char* what) {
  if (t.element_count() != 1) fail(what, " must be a scalar, got shape ", shape_of(t.dims()).to_string());
  return read_doubles(t)[0];
}

void write_values(Tensor& y, const std::vector<double>& v) {
  visit_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      T* p = y.mutable_data<T>();
      for (size_t i = 0; i < v.size(); ++i) {
        if constexpr (std::is_integral_v<T>) {
          double t = std::trunc(v[i]);
          // Saturate: window and filter values lie in [0, 1], but stay defined whatever happens.
          if (!(t > static_cast<double>(std::numeric_limits<T>::min()))) p[i] = std::numeric_limits<T>::min();
          else if (t >= static_cast<double>(std::numeric_limits<T>::max())) p[i] = std::numeric_limits<T>::max();
          else p[i] = static_cast<T>(t);
        } else {
          p[i] = static_cast<T>(v[i]);
        }
      }
    } else if constexpr (is_small_float_v<T>) {
      T* p = y.mutable_data<T>();
      for (size_t i = 0; i < v.size(); ++i) p[i] = T(static_cast<float>(v[i]));
    } else {
      fail("element type ", y.dtype(), " is not supported");
    }
  });
}

enum class Window { Hann, Hamming, Blackman };

std::vector<double> window_values(Window w, int64_t size, bool periodic) {
  std::vector<double> v(static_cast<size_t>(size));
  const int64_t n_den = periodic ? size : size - 1;
  for (int64_t n = 0; n < size; ++n) {
    if (n_den == 0) {
      v[n] = 1.0;
      continue;
    }
    const double x = 2.0 * M_PI * static_cast<double>(n) / static_cast<double>(n_den);
    switch (w) {
      case Window::Hann: v[n] = 0.5 - 0.5 * std::cos(x); break;
      case Window::Hamming: v[n] = 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * std::cos(x); break;
      case Window::Blackman: v[n] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2.0 * x); break;
    }
  }
  return v;
}

void add_window(Registry& r, const char* name, Window w) {
  add_versions(
      r, "", name, {17}, {{{0}, {D::Int32, D::Int64}}},
      [](InferContext& ctx) {
        DataType dt = output_dtype(ctx.attrs);
        Shape s;
        s.rank_known = true;
        s.dims.push_back(Dim{});
        if (const Tensor* v = ctx.input_value(0)) {
          int64_t size = scalar_int(*v, "size");
          if (size >= 0) s.dims[0] = Dim{size, {}, {}};
        }
        ctx.set_output(0, Type::tensor(dt, s));
      },
      [w](const KernelInit& init) {
        DataType dt = output_dtype(init.attrs);
        bool periodic = init.attrs.get_int("periodic", 1) != 0;
        return make_kernel([w, dt, periodic](KernelContext& ctx) {
          int64_t size = scalar_int(ctx.input(0), "size");
          if (size < 0) ctx.error(cat("size must be non-negative, got ", size));
          if (size > kMaxElements) ctx.error(cat("size ", size, " is too large"));
          Tensor& y = ctx.allocate_output(0, dt, {size});
          write_values(y, window_values(w, size, periodic));
        });
      });
}

// ---- MelWeightMatrix ----

std::vector<double> mel_matrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower, double upper,
                               int64_t& rows) {
  if (num_mel_bins < 1) fail("num_mel_bins must be positive, got ", num_mel_bins);
  if (dft_length < 1) fail("dft_length must be positive, got ", dft_length);
  if (sample_rate < 1) fail("sample_rate must be positive, got ", sample_rate);
  if (!(lower >= 0) || !(upper > lower)) fail("need 0 <= lower_edge_hertz < upper_edge_hertz, got ", lower, " and ", upper);
  rows = dft_length / 2 + 1;
  if (num_mel_bins > kMaxElements / rows) fail("output is too large");
  const int64_t points = num_mel_bins + 2;
  const double low_mel = 2595.0 * std::log10(1.0 + lower / 700.0);
  const double high_mel = 2595.0 * std::log10(1.0 + upper / 700.0);
  const double step = (high_mel - low_mel) / static_cast<double>(points);
  std::vector<int64_t> bin(static_cast<size_t>(points));
  for (int64_t i = 0; i < points; ++i) {
    double mel = static_cast<double>(i) * step + low_mel;
    double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    bin[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  std::vector<double> out(static_cast<size_t>(rows * num_mel_bins), 0.0);
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row >= 0 && row < rows) out[static_cast<size_t>(row * num_mel_bins + col)] = v;
  };
  for (int64_t i = 0; i < num_mel_bins; ++i) {
    const int64_t left = bin[i], center = bin[i + 1], right = bin[i + 2];
    const int64_t rise = center - left, fall = right - center;
    if (rise == 0) set(center, i, 1.0);
    else
      for (int64_t j = std::max<int64_t>(left, 0); j <= std::min(center, rows - 1); ++j)
        set(j, i, static_cast<double>(j - left) / static_cast<double>(rise));
    if (fall > 0)
      for (int64_t j = std::max<int64_t>(center, 0); j < std::min(right, rows); ++j)
        set(j, i, static_cast<double>(right - j) / static_cast<double>(fall));
  }
  return out;
}

}  // namespace

void register_windows(Registry& r) {
  add_window(r, "HannWindow", Window::Hann);
  add_window(r, "HammingWindow", Window::Hamming);
  add_window(r, "BlackmanWindow", Window::Blackman);

  add_versions(
      r, "", "MelWeightMatrix", {17}, {{{0, 1, 2}, {D::Int32, D::Int64}}, {{3, 4}, kFloatTypes}},
      [](InferContext& ctx) {
        DataType dt = output_dtype(ctx.attrs);
        Shape s;
        s.rank_known = true;
        s.dims.assign(2, Dim{});
        if (const Tensor* v = ctx.input_value(1)) {
          int64_t n = scalar_int(*v, "dft_length");
          if (n >= 1) s.dims[0] = Dim{n / 2 + 1, {}, {}};
        }
        if (const Tensor* v = ctx.input_value(0)) {
          int64_t n = scalar_int(*v, "num_mel_bins");
          if (n >= 1) s.dims[1] = Dim{n, {}, {}};
        }
        ctx.set_output(0, Type::tensor(dt, s));
      },
      [](const KernelInit& init) {
        DataType dt = output_dtype(init.attrs);
        return make_kernel([dt](KernelContext& ctx) {
          const int64_t bins = scalar_int(ctx.input(0), "num_mel_bins");
          int64_t rows = 0;
          std::vector<double> m =
              mel_matrix(bins, scalar_int(ctx.input(1), "dft_length"), scalar_int(ctx.input(2), "sample_rate"),
                         scalar_double(ctx.input(3), "lower_edge_hertz"), scalar_double(ctx.input(4), "upper_edge_hertz"),
                         rows);
          Tensor& y = ctx.allocate_output(0, dt, {rows, bins});
          write_values(y, m);
        });
      });
}

}  // namespace onyx::ops
