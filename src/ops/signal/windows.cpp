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

#include "base/run_limits.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

const std::vector<DataType> kOutTypes = {D::Float,  D::Float16, D::Double, D::BFloat16, D::Int8,   D::Int16,
                                         D::Int32,  D::Int64,   D::UInt8,  D::UInt16,   D::UInt32, D::UInt64};

DataType output_dtype(const AttributeView& attrs) {
  int64_t v = attrs.get_int("output_datatype", 1);
  for (DataType d : kOutTypes)
    if (static_cast<int64_t>(d) == v) return d;
  fail("output_datatype ", v, " is not one of float, float16, double, bfloat16 or an integer type");
}

double scalar_double(const Tensor& t, const char* what) {
  if (t.element_count() != 1) fail(what, " must be a scalar, got shape ", shape_of(t.dims()).to_string());
  return read_doubles(t)[0];
}

// Writes value(i) for i in [0, y's element count) into y in its element type, checking the run's limits between
// blocks: the outputs can have 2^31 elements, and nothing else is allocated for them (scratch would escape the
// session's memory limit).
template <class Value>
void write_values(Tensor& y, Value value) {
  const int64_t count = static_cast<int64_t>(y.element_count());
  visit_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr ((std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) || is_small_float_v<T>) {
      T* p = y.mutable_data<T>();
      for (int64_t i = 0; i < count; ++i) {
        if (i % (int64_t{1} << 16) == 0 && i) check_run_limits("in a window or filter bank");
        const double v = value(i);
        if constexpr (std::is_integral_v<T>) {
          double t = std::trunc(v);
          // Saturate: window and filter values lie in [0, 1], but stay defined whatever happens.
          if (!(t > static_cast<double>(std::numeric_limits<T>::min()))) p[i] = std::numeric_limits<T>::min();
          else if (t >= static_cast<double>(std::numeric_limits<T>::max())) p[i] = std::numeric_limits<T>::max();
          else p[i] = static_cast<T>(t);
        } else if constexpr (is_small_float_v<T>) {
          p[i] = from_double<T>(v);
        } else {
          p[i] = static_cast<T>(v);
        }
      }
    } else {
      fail("element type ", y.dtype(), " is not supported");
    }
  });
}

enum class Window { Hann, Hamming, Blackman };

double window_value(Window w, int64_t n, int64_t n_den) {
  if (n_den == 0) return 1.0;
  const double x = 2.0 * M_PI * static_cast<double>(n) / static_cast<double>(n_den);
  switch (w) {
    case Window::Hann: return 0.5 - 0.5 * std::cos(x);
    case Window::Hamming: return 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * std::cos(x);
    case Window::Blackman: break;
  }
  return 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2.0 * x);
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
          int64_t size = read_scalar_int(*v, "size");
          if (size >= 0) s.dims[0] = known_dim(size);
        }
        ctx.set_output(0, Type::tensor(dt, s));
      },
      [w](const KernelInit& init) {
        DataType dt = output_dtype(init.attrs);
        bool periodic = init.attrs.get_int("periodic", 1) != 0;
        return make_kernel([w, dt, periodic](KernelContext& ctx) {
          int64_t size = read_scalar_int(ctx.input(0), "size");
          if (size < 0) ctx.error(cat("size must be non-negative, got ", size));
          check_data_sized({size}, dt);
          Tensor& y = ctx.allocate_output(0, dt, {size});
          const int64_t n_den = periodic ? size : size - 1;
          write_values(y, [&](int64_t n) { return window_value(w, n, n_den); });
        });
      });
}

// ---- MelWeightMatrix ----

// The filter bank's spectrogram bins, one per point: held in a tensor, so that the session's memory limit counts
// them (num_mel_bins can be 2^31).
Tensor mel_bins(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower, double upper,
                int64_t& rows) {
  if (num_mel_bins < 1) fail("num_mel_bins must be positive, got ", num_mel_bins);
  if (dft_length < 1) fail("dft_length must be positive, got ", dft_length);
  if (sample_rate < 1) fail("sample_rate must be positive, got ", sample_rate);
  if (!(lower >= 0) || !(upper > lower)) fail("need 0 <= lower_edge_hertz < upper_edge_hertz, got ", lower, " and ", upper);
  rows = dft_length / 2 + 1;
  check_data_sized({rows, num_mel_bins});
  const int64_t points = num_mel_bins + 2;
  const double low_mel = 2595.0 * std::log10(1.0 + lower / 700.0);
  const double high_mel = 2595.0 * std::log10(1.0 + upper / 700.0);
  const double step = (high_mel - low_mel) / static_cast<double>(points);
  Tensor bins = Tensor::allocate(DataType::Int64, {points});
  int64_t* bin = bins.mutable_data<int64_t>();
  for (int64_t i = 0; i < points; ++i) {
    if (i % (int64_t{1} << 16) == 0 && i) check_run_limits("in MelWeightMatrix");
    double mel = static_cast<double>(i) * step + low_mel;
    double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    bin[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  return bins;
}

// Filter `i`'s weight at spectrogram row `j`: rising from bin[i] to 1 at bin[i + 1], falling to 0 at bin[i + 2] (the
// points are in increasing order, so both slopes are >= 0 bins long; a zero-length rise is 1 at its center).
double mel_weight(const int64_t* bin, int64_t j, int64_t i) {
  const int64_t left = bin[i], center = bin[i + 1], right = bin[i + 2];
  const int64_t rise = center - left, fall = right - center;
  if (fall > 0 && center <= j && j < right) return static_cast<double>(right - j) / static_cast<double>(fall);
  if (rise == 0) return j == center ? 1.0 : 0.0;
  if (left <= j && j <= center) return static_cast<double>(j - left) / static_cast<double>(rise);
  return 0.0;
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
          int64_t n = read_scalar_int(*v, "dft_length");
          if (n >= 1) s.dims[0] = known_dim(n / 2 + 1);
        }
        if (const Tensor* v = ctx.input_value(0)) {
          int64_t n = read_scalar_int(*v, "num_mel_bins");
          if (n >= 1) s.dims[1] = known_dim(n);
        }
        ctx.set_output(0, Type::tensor(dt, s));
      },
      [](const KernelInit& init) {
        DataType dt = output_dtype(init.attrs);
        return make_kernel([dt](KernelContext& ctx) {
          const int64_t bins = read_scalar_int(ctx.input(0), "num_mel_bins");
          int64_t rows = 0;
          const Tensor points =
              mel_bins(bins, read_scalar_int(ctx.input(1), "dft_length"), read_scalar_int(ctx.input(2), "sample_rate"),
                       scalar_double(ctx.input(3), "lower_edge_hertz"), scalar_double(ctx.input(4), "upper_edge_hertz"),
                       rows);
          Tensor& y = ctx.allocate_output(0, dt, {rows, bins});
          const int64_t* bin = points.data<int64_t>();
          write_values(y, [&](int64_t k) { return mel_weight(bin, k / bins, k % bins); });
        });
      });
}

}  // namespace onyx::ops
