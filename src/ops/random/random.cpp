// ai.onnx random generators: RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike (1, 22),
// Multinomial (7, 22), Bernoulli (15, 22). Version 22 adds bfloat16 (outputs of the Random* ops; inputs of
// Multinomial and Bernoulli); nothing else changed.
// RandomNormal/RandomUniform: `shape` and `dtype` (default float) attributes; N(mean, scale) or U[low, high).
// *Like: the input's shape, `dtype` (default: the input's type, which must then be a float type).
// Multinomial: input [batch, classes] of unnormalized log-probabilities; output [batch, sample_size] of class
//   indices, int32 (default) or int64 (`dtype`).
// Bernoulli: 1 with probability p (the input), else 0; output type `dtype` (default the input's type).
// Each kernel owns a 64-bit Mersenne Twister: seeded from the `seed` attribute when given (the float's bit
// pattern, so the same seed gives the same values in every onyx session and platform, successive runs continuing
// the sequence), else from std::random_device. Uniforms take 53 random bits; normals use Box-Muller.
// Onyx's values are not numpy's, so backend tests whose expected outputs come from a random source (test_bernoulli,
// test_bernoulli_double, test_bernoulli_seed and their _expanded forms) can only check shape and type.
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

class Rng {
 public:
  explicit Rng(std::optional<float> seed) {
    if (seed) {
      uint32_t bits;
      std::memcpy(&bits, &*seed, sizeof bits);
      gen_.seed(bits);
    } else {
      std::random_device rd;
      gen_.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
    }
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = 1.0 - uniform();  // (0, 1]
    double u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }
  std::mutex& mutex() { return mu_; }

 private:
  std::mt19937_64 gen_;
  std::mutex mu_;
  bool has_spare_ = false;
  double spare_ = 0;
};

std::optional<float> seed_of(const AttributeView& attrs) {
  if (!attrs.has("seed")) return std::nullopt;
  return attrs.get_float("seed");
}

std::vector<DataType> float_outputs(int version) {
  std::vector<DataType> v = {D::Float16, D::Float, D::Double};
  if (version >= 22) v.push_back(D::BFloat16);
  return v;
}

DataType checked_dtype(int64_t v, const std::vector<DataType>& allowed, const char* what) {
  for (DataType d : allowed)
    if (static_cast<int64_t>(d) == v) return d;
  std::string names;
  for (DataType d : allowed) names += cat(names.empty() ? "" : ", ", d);
  fail(what, " ", v, " is not an allowed type (", names, ")");
}

// Writes f() converted to the tensor's type for every element.
template <class F>
void fill_random(Tensor& y, F&& f) {
  const int64_t n = static_cast<int64_t>(y.element_count());
  visit_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      bool* p = y.mutable_data<bool>();
      for (int64_t i = 0; i < n; ++i) p[i] = f() != 0.0;
    } else if constexpr (std::is_arithmetic_v<T>) {
      T* p = y.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(f());
    } else if constexpr (is_small_float_v<T>) {
      T* p = y.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) p[i] = from_double<T>(f());
    } else {
      fail("element type ", y.dtype(), " is not supported");
    }
  });
}

Dims checked_shape(const std::vector<int64_t>& shape) {
  check_data_sized(shape, DataType::Undefined, "attribute 'shape'");
  return shape;
}

enum class Dist { Normal, Uniform };

struct DistParams {
  Dist dist;
  double a, b;  // mean, scale or low, high
};

DistParams dist_params(Dist d, const AttributeView& attrs) {
  if (d == Dist::Normal) return {d, attrs.get_float("mean", 0.0f), attrs.get_float("scale", 1.0f)};
  return {d, attrs.get_float("low", 0.0f), attrs.get_float("high", 1.0f)};
}

double draw(Rng& rng, const DistParams& p) {
  if (p.dist == Dist::Normal) return p.a + p.b * rng.normal();
  return p.a + (p.b - p.a) * rng.uniform();
}

void fill_random(Tensor& y, Rng& rng, const DistParams& p) {
  std::lock_guard<std::mutex> lock(rng.mutex());
  if (p.dist == Dist::Uniform && y.dtype() == D::Float && p.b > p.a) {
    // Keep float results below `high` when rounding would reach it.
    const float hi = static_cast<float>(p.b);
    const float below = std::nextafter(hi, -INFINITY);
    float* py = y.mutable_data<float>();
    for (uint64_t i = 0; i < y.element_count(); ++i) {
      float v = static_cast<float>(draw(rng, p));
      py[i] = v >= hi ? below : v;
    }
    return;
  }
  fill_random(y, [&] { return draw(rng, p); });
}

void add_generator(Registry& r, const char* name, Dist dist) {
  for (int version : {1, 22}) {
    const std::vector<DataType> outs = float_outputs(version);
    add_versions(
        r, "", name, {version}, {},
        [outs](InferContext& ctx) {
          DataType dt = checked_dtype(ctx.attrs.get_int("dtype", 1), outs, "dtype");
          ctx.set_output(0, tensor_type(dt, checked_shape(ctx.attrs.get_ints("shape"))));
        },
        [outs, dist](const KernelInit& init) {
          DataType dt = checked_dtype(init.attrs.get_int("dtype", 1), outs, "dtype");
          Dims shape = checked_shape(init.attrs.get_ints("shape"));
          DistParams p = dist_params(dist, init.attrs);
          auto rng = std::make_shared<Rng>(seed_of(init.attrs));
          return make_kernel([dt, shape, p, rng](KernelContext& ctx) {
            fill_random(ctx.allocate_output(0, dt, shape), *rng, p);
          });
        });
  }
}

void add_generator_like(Registry& r, const char* name, Dist dist) {
  for (int version : {1, 22}) {
    const std::vector<DataType> outs = float_outputs(version);
    std::vector<DataType> ins;
    for (DataType d : all_tensor_types()) {
      bool small = d == D::Float8E4M3FN || d == D::Float8E4M3FNUZ || d == D::Float8E5M2 || d == D::Float8E5M2FNUZ ||
                   d == D::Float8E8M0 || d == D::Int4 || d == D::UInt4 || d == D::Int2 || d == D::UInt2 ||
                   d == D::Float4E2M1;
      if (!small && (version >= 22 || d != D::BFloat16)) ins.push_back(d);
    }
    auto out_type = [outs](const AttributeView& attrs, DataType input) {
      if (attrs.has("dtype")) return checked_dtype(attrs.get_int("dtype"), outs, "dtype");
      return checked_dtype(static_cast<int64_t>(input), outs, "without dtype, the input's type");
    };
    add_versions(
        r, "", name, {version}, {{{0}, ins}},
        [out_type](InferContext& ctx) {
          DataType in = ctx.input_dtype(0);
          if (in == D::Undefined && !ctx.attrs.has("dtype")) return;
          ctx.set_output(0, Type::tensor(out_type(ctx.attrs, in), ctx.input_type(0).shape));
        },
        [outs, dist](const KernelInit& init) {
          DistParams p = dist_params(dist, init.attrs);
          auto rng = std::make_shared<Rng>(seed_of(init.attrs));
          std::optional<DataType> forced;
          if (init.attrs.has("dtype")) forced = checked_dtype(init.attrs.get_int("dtype"), outs, "dtype");
          return make_kernel([p, rng, outs, forced](KernelContext& ctx) {
            const Tensor& x = ctx.input(0);
            DataType dt = forced ? *forced : checked_dtype(static_cast<int64_t>(x.dtype()), outs, "without dtype, the input's type");
            fill_random(ctx.allocate_output(0, dt, x.dims()), *rng, p);
          });
        });
  }
}

// ---- Multinomial ----

void run_multinomial(KernelContext& ctx, Rng& rng, DataType dt, int64_t samples) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  if (xd.size() != 2) ctx.error(cat("input must have shape [batch_size, class_size], got ", shape_of(xd).to_string()));
  const int64_t batch = xd[0], classes = xd[1];
  check_data_sized({batch, samples}, dt);
  const std::vector<double> logits = read_doubles(x);
  Tensor& y = ctx.allocate_output(0, dt, {batch, samples});
  std::vector<double> cdf(static_cast<size_t>(classes));
  std::lock_guard<std::mutex> lock(rng.mutex());
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = logits.data() + b * classes;
    double mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) {
      if (std::isnan(row[c]) || row[c] == INFINITY) ctx.error(cat("row ", b, " has a NaN or +inf log-probability"));
      mx = std::max(mx, row[c]);
    }
    if (classes == 0 || mx == -INFINITY) ctx.error(cat("row ", b, " has no class with a finite log-probability"));
    double acc = 0;
    for (int64_t c = 0; c < classes; ++c) cdf[c] = acc += std::exp(row[c] - mx);
    for (int64_t s = 0; s < samples; ++s) {
      const double u = rng.uniform() * acc;
      int64_t k = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
      if (k >= classes) k = classes - 1;
      if (dt == D::Int32) y.mutable_data<int32_t>()[b * samples + s] = static_cast<int32_t>(k);
      else y.mutable_data<int64_t>()[b * samples + s] = k;
    }
  }
}

const std::vector<DataType> kBernoulliOut = {D::Float16, D::Float, D::Double, D::BFloat16, D::Int8,  D::Int16, D::Int32,
                                             D::Int64,   D::UInt8, D::UInt16, D::UInt32,   D::UInt64, D::Bool};

}  // namespace

void register_random(Registry& r) {
  add_generator(r, "RandomNormal", Dist::Normal);
  add_generator(r, "RandomUniform", Dist::Uniform);
  add_generator_like(r, "RandomNormalLike", Dist::Normal);
  add_generator_like(r, "RandomUniformLike", Dist::Uniform);

  for (int version : {7, 22}) {
    std::vector<DataType> ins = {D::Float16, D::Float, D::Double};
    if (version >= 22) ins.push_back(D::BFloat16);
    add_versions(
        r, "", "Multinomial", {version}, {{{0}, ins}},
        [](InferContext& ctx) {
          DataType dt = checked_dtype(ctx.attrs.get_int("dtype", 6), {D::Int32, D::Int64}, "dtype");
          int64_t samples = ctx.attrs.get_int("sample_size", 1);
          if (samples < 0) ctx.error(cat("sample_size must be non-negative, got ", samples));
          Shape s;
          s.rank_known = true;
          s.dims = {Dim{}, known_dim(samples)};
          const Type& t = ctx.input_type(0);
          if (t.shape.rank_known) {
            if (t.shape.dims.size() != 2) ctx.error(cat("input must have rank 2, got ", t.shape.to_string()));
            s.dims[0] = t.shape.dims[0];
          }
          ctx.set_output(0, Type::tensor(dt, s));
        },
        [](const KernelInit& init) {
          DataType dt = checked_dtype(init.attrs.get_int("dtype", 6), {D::Int32, D::Int64}, "dtype");
          int64_t samples = init.attrs.get_int("sample_size", 1);
          if (samples < 0) fail("sample_size must be non-negative, got ", samples);
          auto rng = std::make_shared<Rng>(seed_of(init.attrs));
          return make_kernel([dt, samples, rng](KernelContext& ctx) { run_multinomial(ctx, *rng, dt, samples); });
        });
  }

  for (int version : {15, 22}) {
    std::vector<DataType> ins = {D::Float16, D::Float, D::Double};
    if (version >= 22) ins.push_back(D::BFloat16);
    auto out_type = [](const AttributeView& attrs, DataType input) {
      return attrs.has("dtype") ? checked_dtype(attrs.get_int("dtype"), kBernoulliOut, "dtype") : input;
    };
    add_versions(
        r, "", "Bernoulli", {version}, {{{0}, ins}},
        [out_type](InferContext& ctx) {
          DataType in = ctx.input_dtype(0);
          if (in == D::Undefined && !ctx.attrs.has("dtype")) return;
          ctx.set_output(0, Type::tensor(out_type(ctx.attrs, in), ctx.input_type(0).shape));
        },
        [](const KernelInit& init) {
          auto rng = std::make_shared<Rng>(seed_of(init.attrs));
          std::optional<DataType> forced;
          if (init.attrs.has("dtype")) forced = checked_dtype(init.attrs.get_int("dtype"), kBernoulliOut, "dtype");
          return make_kernel([rng, forced](KernelContext& ctx) {
            const Tensor& x = ctx.input(0);
            const std::vector<double> p = read_doubles(x);
            Tensor& y = ctx.allocate_output(0, forced ? *forced : x.dtype(), x.dims());
            std::lock_guard<std::mutex> lock(rng->mutex());
            size_t i = 0;
            fill_random(y, [&] { return rng->uniform() < p[i++] ? 1.0 : 0.0; });
          });
        });
  }
  for (const char* op : {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"})
    r.set_nondeterministic("", op);
}

}  // namespace onyx::ops
