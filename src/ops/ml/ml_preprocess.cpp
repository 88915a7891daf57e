// ai.onnx.ml feature preprocessing: ArrayFeatureExtractor-1, Binarizer-1, CategoryMapper-1, FeatureVectorizer-1,
// Imputer-1, LabelEncoder-1/2/4, Normalizer-1, OneHotEncoder-1, Scaler-1.
// LabelEncoder versions:
//   v1: classes_strings; string -> int64 (position in the list, else default_int64) or int64 -> string (the label at
//       that position, else default_string).
//   v2: parallel keys_{strings,int64s,floats} / values_{strings,int64s,floats} with default_{string,int64,float};
//       input and output types string, int64, float.
//   v4: adds keys_tensor / values_tensor / default_tensor and the types int32, int16 (and double through tensors).
//   Float keys: NaN matches NaN, -0 matches 0; a repeated key: the last one wins.
// ArrayFeatureExtractor: Z = X[..., indices] with the indices flattened; a 1-D X gives [1, k].
// FeatureVectorizer: inputs as [N, C_i] (1-D: [1, C]), each cut or zero-padded to inputdimensions[i], concatenated.
// Normalizer: per row of [N,C] / [C]: MAX divides by max |x|, L1 by sum |x|, L2 by sqrt(sum x^2); a zero divisor
// leaves the row as is. Scaler: (x - offset) * scale along the last dim. Imputer: replaces replaced_value (NaN
// matches NaN) by the imputed value of the column. OneHotEncoder: appends a dim of size |cats|; float inputs are
// truncated to integers; an unknown category is all zeros (zeros=1) or an error (zeros=0).
#include <unordered_map>

#include "ops/ml/rows_and_labels.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
const char* kMlPreprocess = "ai.onnx.ml";
const std::vector<DataType> kNum4 = {D::Float, D::Double, D::Int64, D::Int32};

Shape shape_with_last(const Shape& s, Dim last) {
  Shape out = s;
  out.dims.push_back(std::move(last));
  return out;
}

// ---- Binarizer ----

void register_binarizer(Registry& r) {
  auto kernel = [](const KernelInit& init) {
    double th = init.attrs.get_float("threshold", 0.0f);
    return make_kernel([th](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
      visit_dtype(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
          const T* px = x.data<T>();
          T* py = y.mutable_data<T>();
          for (uint64_t i = 0; i < x.element_count(); ++i) py[i] = static_cast<double>(px[i]) > th ? T(1) : T(0);
        } else {
          ctx.error(cat("element type ", x.dtype(), " is not supported"));
        }
      });
    });
  };
  add_versions(r, kMlPreprocess, "Binarizer", {1}, {{{0}, kNum4}}, [](InferContext& ctx) { infer_same_as_input(ctx); }, kernel);
}

// ---- Scaler ----

void register_scaler(Registry& r) {
  auto infer = [](InferContext& ctx) { ctx.set_output(0, Type::tensor(D::Float, ctx.input_type(0).shape)); };
  auto kernel = [](const KernelInit& init) {
    std::vector<float> offset = init.attrs.get_floats("offset", std::vector<float>{});
    std::vector<float> scale = init.attrs.get_floats("scale", std::vector<float>{});
    return make_kernel([offset, scale](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const int64_t c = x.dims().empty() ? 1 : x.dims().back();
      for (const auto* v : {&offset, &scale})
        if (v->size() > 1 && static_cast<int64_t>(v->size()) != c)
          ctx.error(cat(v == &offset ? "offset" : "scale", " has ", v->size(), " values; expected 1 or the ", c,
                        " features of the last dimension"));
      std::vector<double> v = read_doubles(x);
      for (size_t i = 0; i < v.size(); ++i) {
        size_t k = c > 0 ? i % static_cast<size_t>(c) : 0;
        double o = offset.empty() ? 0.0 : offset[offset.size() == 1 ? 0 : k];
        double s = scale.empty() ? 1.0 : scale[scale.size() == 1 ? 0 : k];
        v[i] = (v[i] - o) * s;
      }
      store_doubles(ctx.allocate_output(0, D::Float, x.dims()), v);
    });
  };
  add_versions(r, kMlPreprocess, "Scaler", {1}, {{{0}, kNum4}}, infer, kernel);
}

// ---- Normalizer ----

void register_normalizer(Registry& r) {
  auto infer = [](InferContext& ctx) {
    const Type& t = ctx.input_type(0);
    if (t.shape.rank_known && t.shape.dims.size() != 1 && t.shape.dims.size() != 2)
      ctx.error(cat("input must be [N,C] or [C], got ", t.shape.to_string()));
    ctx.set_output(0, Type::tensor(D::Float, t.shape));
  };
  auto kernel = [](const KernelInit& init) {
    std::string norm = init.attrs.get_string("norm", "MAX");
    if (norm != "MAX" && norm != "L1" && norm != "L2") fail("norm '", norm, "' is not one of MAX, L1, L2");
    return make_kernel([norm](KernelContext& ctx) {
      const Tensor& xt = ctx.input(0);
      ml::Rows x = ml::read_rows(xt);
      for (int64_t n = 0; n < x.n; ++n) {
        double* row = x.v.data() + n * x.c;
        double d = 0;
        for (int64_t c = 0; c < x.c; ++c) {
          if (norm == "MAX") d = std::max(d, std::abs(row[c]));
          else if (norm == "L1") d += std::abs(row[c]);
          else d += row[c] * row[c];
        }
        if (norm == "L2") d = std::sqrt(d);
        if (d != 0)
          for (int64_t c = 0; c < x.c; ++c) row[c] /= d;
      }
      store_doubles(ctx.allocate_output(0, D::Float, xt.dims()), x.v);
    });
  };
  add_versions(r, kMlPreprocess, "Normalizer", {1}, {{{0}, kNum4}}, infer, kernel);
}

// ---- Imputer ----

void register_imputer(Registry& r) {
  auto kernel = [](const KernelInit& init) {
    std::vector<float> fv = init.attrs.get_floats("imputed_value_floats", std::vector<float>{});
    std::vector<int64_t> iv = init.attrs.get_ints("imputed_value_int64s", std::vector<int64_t>{});
    float frep = init.attrs.get_float("replaced_value_float", 0.0f);
    int64_t irep = init.attrs.get_int("replaced_value_int64", 0);
    if (fv.empty() && iv.empty()) fail("one of imputed_value_floats or imputed_value_int64s must be set");
    return make_kernel([fv, iv, frep, irep](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const bool is_float = x.dtype() == D::Float || x.dtype() == D::Double;
      const size_t nvals = is_float ? fv.size() : iv.size();
      if (nvals == 0)
        ctx.error(cat(is_float ? "imputed_value_floats" : "imputed_value_int64s", " must be set for a ", x.dtype(),
                      " input"));
      const int64_t c = x.dims().empty() ? 1 : x.dims().back();
      if (nvals != 1 && static_cast<int64_t>(nvals) != c)
        ctx.error(cat("there are ", nvals, " imputed values; expected 1 or the ", c, " features of the last dimension"));
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
      visit_dtype(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
          const T* px = x.data<T>();
          T* py = y.mutable_data<T>();
          for (uint64_t i = 0; i < x.element_count(); ++i) {
            size_t k = nvals == 1 ? 0 : static_cast<size_t>(i % static_cast<uint64_t>(c));
            T v = px[i];
            bool hit;
            if constexpr (std::is_floating_point_v<T>)
              hit = std::isnan(frep) ? std::isnan(v) : v == static_cast<T>(frep);
            else
              hit = static_cast<int64_t>(v) == irep;
            py[i] = hit ? (is_float ? static_cast<T>(fv[k]) : static_cast<T>(iv[k])) : v;
          }
        } else {
          ctx.error(cat("element type ", x.dtype(), " is not supported"));
        }
      });
    });
  };
  add_versions(r, kMlPreprocess, "Imputer", {1}, {{{0}, kNum4}}, [](InferContext& ctx) { infer_same_as_input(ctx); }, kernel);
}

// ---- OneHotEncoder ----

// A float value as an integer category: truncated; NaN/inf/out of range match nothing.
std::optional<int64_t> as_category(double d) {
  if (!std::isfinite(d) || d >= 9.2e18 || d <= -9.2e18) return std::nullopt;
  return static_cast<int64_t>(d);
}

void register_one_hot_encoder(Registry& r) {
  auto ncats = [](const AttributeView& a) -> int64_t {
    auto i = a.get_ints("cats_int64s", std::vector<int64_t>{});
    auto s = a.get_strings("cats_strings", std::vector<std::string>{});
    return static_cast<int64_t>(i.empty() ? s.size() : i.size());
  };
  auto infer = [ncats](InferContext& ctx) {
    const Type& t = ctx.input_type(0);
    Shape s = t.shape;
    if (s.rank_known) s = shape_with_last(s, known_dim(ncats(ctx.attrs)));
    ctx.set_output(0, Type::tensor(D::Float, s));
  };
  auto kernel = [](const KernelInit& init) {
    auto ints = init.attrs.get_ints("cats_int64s", std::vector<int64_t>{});
    auto strs = init.attrs.get_strings("cats_strings", std::vector<std::string>{});
    if (ints.empty() == strs.empty()) fail("exactly one of cats_int64s and cats_strings must be set (and not empty)");
    bool zeros = init.attrs.get_int("zeros", 1) != 0;
    auto imap = std::make_shared<std::unordered_map<int64_t, int64_t>>();
    auto smap = std::make_shared<std::unordered_map<std::string, int64_t>>();
    for (size_t k = 0; k < ints.size(); ++k) imap->emplace(ints[k], static_cast<int64_t>(k));
    for (size_t k = 0; k < strs.size(); ++k) smap->emplace(strs[k], static_cast<int64_t>(k));
    const int64_t k_count = static_cast<int64_t>(ints.empty() ? strs.size() : ints.size());
    return make_kernel([=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const bool str = x.dtype() == D::String;
      if (str && smap->empty()) ctx.error("a string input needs cats_strings");
      if (!str && imap->empty()) ctx.error(cat("a ", x.dtype(), " input needs cats_int64s"));
      Dims out = x.dims();
      out.push_back(k_count);
      Tensor& y = ctx.allocate_output(0, D::Float, out);
      float* py = y.mutable_data<float>();
      const uint64_t n = x.element_count();
      const bool integral = x.dtype() == D::Int64 || x.dtype() == D::Int32;
      std::vector<double> nums = (str || integral) ? std::vector<double>{} : read_doubles(x);
      std::vector<int64_t> whole = integral ? read_ints(x) : std::vector<int64_t>{};
      for (uint64_t i = 0; i < n; ++i) {
        int64_t k = -1;
        if (str) {
          auto it = smap->find(x.string_values()[i]);
          if (it != smap->end()) k = it->second;
        } else if (auto c = integral ? std::optional<int64_t>(whole[i]) : as_category(nums[i])) {
          auto it = imap->find(*c);
          if (it != imap->end()) k = it->second;
        }
        if (k >= 0)
          py[i * k_count + k] = 1.0f;
        else if (!zeros)
          ctx.error(cat("element ", i, " is not one of the categories (and zeros=0)"));
      }
    });
  };
  add_versions(r, kMlPreprocess, "OneHotEncoder", {1}, {{{0}, {D::String, D::Int64, D::Int32, D::Float, D::Double}}}, infer,
               kernel);
}

// ---- LabelEncoder / CategoryMapper: a key -> value lookup with a default ----

struct Lookup {
  enum class Kind { String, Int, Float };
  Kind kind = Kind::String;
  DataType key_dtype = D::String;
  std::unordered_map<std::string, size_t> smap;
  std::unordered_map<int64_t, size_t> imap;
  std::unordered_map<uint64_t, size_t> fmap;
  Tensor values;  // 1-D, the output element type
  Tensor dflt;    // one element of the same type

  static uint64_t float_key(double d) {
    if (std::isnan(d)) return 0x7ff8000000000000ull;
    if (d == 0) d = 0;  // -0 matches 0
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
  }

  // Keys from a tensor (1-D); the last of repeated keys wins.
  void set_keys(const Tensor& k) {
    key_dtype = k.dtype();
    const uint64_t n = k.element_count();
    if (k.dtype() == D::String) {
      kind = Kind::String;
      for (uint64_t i = 0; i < n; ++i) smap.insert_or_assign(k.string_values()[i], static_cast<size_t>(i));
    } else if (k.dtype() == D::Float || k.dtype() == D::Double) {
      kind = Kind::Float;
      std::vector<double> v = read_doubles(k);
      for (uint64_t i = 0; i < n; ++i) fmap.insert_or_assign(float_key(v[i]), static_cast<size_t>(i));
    } else if (k.dtype() == D::Int64 || k.dtype() == D::Int32 || k.dtype() == D::Int16) {
      kind = Kind::Int;
      std::vector<int64_t> v = read_ints(k);
      for (uint64_t i = 0; i < n; ++i) imap.insert_or_assign(v[i], static_cast<size_t>(i));
    } else {
      fail("keys of element type ", k.dtype(), " are not supported");
    }
    if (values.element_count() != n) fail("there are ", n, " keys and ", values.element_count(), " values");
  }

  void copy(const Tensor& src, uint64_t si, Tensor& dst, uint64_t di) const {
    if (src.dtype() == D::String) {
      dst.mutable_strings()[di] = src.string_values()[si];
    } else {
      const size_t sz = static_cast<size_t>(dtype_bits(src.dtype()) / 8);
      std::memcpy(dst.mutable_data<char>() + di * sz, src.bytes().data() + si * sz, sz);
    }
  }

  void run(KernelContext& ctx) const {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != key_dtype) ctx.error(cat("input has element type ", x.dtype(), ", the keys are ", key_dtype));
    Tensor& y = ctx.allocate_output(0, values.dtype(), x.dims());
    const uint64_t n = x.element_count();
    std::vector<int64_t> ints = kind == Kind::Int ? read_ints(x) : std::vector<int64_t>{};
    std::vector<double> flts = kind == Kind::Float ? read_doubles(x) : std::vector<double>{};
    for (uint64_t i = 0; i < n; ++i) {
      std::optional<size_t> hit;
      if (kind == Kind::String) {
        auto it = smap.find(x.string_values()[i]);
        if (it != smap.end()) hit = it->second;
      } else if (kind == Kind::Int) {
        auto it = imap.find(ints[i]);
        if (it != imap.end()) hit = it->second;
      } else {
        auto it = fmap.find(float_key(flts[i]));
        if (it != fmap.end()) hit = it->second;
      }
      if (hit)
        copy(values, *hit, y, i);
      else
        copy(dflt, 0, y, i);
    }
  }
};

Tensor ints_tensor(const std::vector<int64_t>& v, DataType dt = D::Int64) {
  Tensor t = Tensor::allocate(dt, {static_cast<int64_t>(v.size())});
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>)
      for (size_t i = 0; i < v.size(); ++i) t.mutable_data<T>()[i] = static_cast<T>(v[i]);
  });
  return t;
}
Tensor floats_tensor(const std::vector<double>& v, DataType dt = D::Float) {
  Tensor t = Tensor::allocate(dt, {static_cast<int64_t>(v.size())});
  store_doubles(t, v);
  return t;
}
Tensor strings_tensor(std::vector<std::string> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::strings("", {n}, std::move(v));
}

// Which of a keys_*/values_* family is set (the list attributes, and for v4 the tensor); error unless exactly one.
enum class Which { None, Strings, Int64s, Floats, Tensor };
Which which_of(const AttributeView& a, const std::string& prefix, bool allow_tensor) {
  std::vector<Which> set;
  if (a.has(prefix + "strings")) set.push_back(Which::Strings);
  if (a.has(prefix + "int64s")) set.push_back(Which::Int64s);
  if (a.has(prefix + "floats")) set.push_back(Which::Floats);
  if (allow_tensor && a.has(prefix + "tensor")) set.push_back(Which::Tensor);
  if (set.size() != 1)
    fail("exactly one of the '", prefix, "*' attributes must be set, ", set.size(), " are");
  return set[0];
}

Tensor list_tensor(const AttributeView& a, const std::string& prefix, Which w) {
  switch (w) {
    case Which::Strings: return strings_tensor(a.get_strings(prefix + "strings"));
    case Which::Int64s: return ints_tensor(a.get_ints(prefix + "int64s"));
    case Which::Floats: {
      std::vector<double> d;
      for (float f : a.get_floats(prefix + "floats")) d.push_back(f);
      return floats_tensor(d);
    }
    case Which::Tensor: {
      const Tensor* t = a.get_tensor(prefix + "tensor");
      if (t->dims().size() > 1) fail(prefix, "tensor must be 1-D, got rank ", t->dims().size());
      return t->clone().reshaped({static_cast<int64_t>(t->element_count())});
    }
    case Which::None: break;
  }
  fail("no ", prefix, "* attribute");
}

// Element type of the keys/values of a LabelEncoder-2/4 node (for inference and type checks).
DataType list_dtype(const AttributeView& a, const std::string& prefix, bool allow_tensor) {
  switch (which_of(a, prefix, allow_tensor)) {
    case Which::Strings: return D::String;
    case Which::Int64s: return D::Int64;
    case Which::Floats: return D::Float;
    case Which::Tensor: return a.get_tensor(prefix + "tensor")->dtype();
    case Which::None: break;
  }
  return D::Undefined;
}

std::shared_ptr<Lookup> label_encoder_v1(const AttributeView& a, DataType input) {
  auto l = std::make_shared<Lookup>();
  std::vector<std::string> classes = a.get_strings("classes_strings", std::vector<std::string>{});
  std::vector<int64_t> positions(classes.size());
  for (size_t i = 0; i < classes.size(); ++i) positions[i] = static_cast<int64_t>(i);
  if (input == D::Int64) {
    l->values = strings_tensor(classes);
    l->dflt = strings_tensor({a.get_string("default_string", "_Unused")});
    l->set_keys(ints_tensor(positions));
  } else {
    l->values = ints_tensor(positions);
    l->dflt = ints_tensor({a.get_int("default_int64", -1)});
    // The first of repeated labels gives the position: insert in reverse so that it wins.
    l->set_keys(strings_tensor(classes));
    for (size_t i = classes.size(); i-- > 0;) l->smap[classes[i]] = i;
  }
  return l;
}

std::shared_ptr<Lookup> label_encoder_v2(const AttributeView& a, bool v4) {
  auto l = std::make_shared<Lookup>();
  Which kw = which_of(a, "keys_", v4);
  Which vw = which_of(a, "values_", v4);
  l->values = list_tensor(a, "values_", vw);
  const DataType vt = l->values.dtype();
  if (v4 && a.has("default_tensor")) {
    const Tensor* d = a.get_tensor("default_tensor");
    if (d->dtype() != vt) fail("default_tensor has element type ", d->dtype(), ", the values are ", vt);
    if (d->element_count() != 1) fail("default_tensor must hold one value, it holds ", d->element_count());
    l->dflt = d->clone().reshaped({1});
  } else if (vt == D::String) {
    l->dflt = strings_tensor({a.get_string("default_string", "_Unused")});
  } else if (vt == D::Float || vt == D::Double) {
    l->dflt = floats_tensor({vt == D::Float ? a.get_float("default_float", -0.0f) : -0.0}, vt);
  } else {
    l->dflt = ints_tensor({vt == D::Int64 ? a.get_int("default_int64", -1) : -1}, vt);
  }
  l->set_keys(list_tensor(a, "keys_", kw));
  return l;
}

void register_label_encoder(Registry& r) {
  auto infer_v1 = [](InferContext& ctx) {
    DataType in = ctx.input_dtype(0);
    DataType out = in == D::String ? D::Int64 : in == D::Int64 ? D::String : D::Undefined;
    ctx.set_output(0, Type::tensor(out, ctx.input_type(0).shape));
  };
  auto kernel_v1 = [](const KernelInit& init) {
    // The direction depends on the input type, known for sure only at run time: build both.
    auto from_str = label_encoder_v1(init.attrs, D::String);
    auto from_int = label_encoder_v1(init.attrs, D::Int64);
    return make_kernel([from_str, from_int](KernelContext& ctx) {
      (ctx.input(0).dtype() == D::String ? from_str : from_int)->run(ctx);
    });
  };
  add_versions(r, kMlPreprocess, "LabelEncoder", {1}, {{{0}, {D::String, D::Int64}}}, infer_v1, kernel_v1);

  auto infer = [](InferContext& ctx) {
    const bool v4 = ctx.opset >= 4;
    DataType kt = list_dtype(ctx.attrs, "keys_", v4);
    DataType vt = list_dtype(ctx.attrs, "values_", v4);
    DataType in = ctx.input_dtype(0);
    if (in != D::Undefined && in != kt) ctx.error(cat("input has element type ", in, ", the keys are ", kt));
    ctx.set_output(0, Type::tensor(vt, ctx.input_type(0).shape));
  };
  auto kernel = [](const KernelInit& init) {
    auto l = label_encoder_v2(init.attrs, init.opset >= 4);
    return make_kernel([l](KernelContext& ctx) { l->run(ctx); });
  };
  const std::vector<DataType> v2 = {D::String, D::Int64, D::Float};
  const std::vector<DataType> v4 = {D::String, D::Int64, D::Float, D::Int32, D::Int16, D::Double};
  add_versions(r, kMlPreprocess, "LabelEncoder", {2}, {{{0}, v2}}, infer, kernel);
  add_versions(r, kMlPreprocess, "LabelEncoder", {4}, {{{0}, v4}}, infer, kernel);
}

void register_category_mapper(Registry& r) {
  auto infer = [](InferContext& ctx) {
    DataType in = ctx.input_dtype(0);
    DataType out = in == D::String ? D::Int64 : in == D::Int64 ? D::String : D::Undefined;
    ctx.set_output(0, Type::tensor(out, ctx.input_type(0).shape));
  };
  auto kernel = [](const KernelInit& init) {
    auto strs = init.attrs.get_strings("cats_strings", std::vector<std::string>{});
    auto ints = init.attrs.get_ints("cats_int64s", std::vector<int64_t>{});
    if (strs.size() != ints.size())
      fail("cats_strings has ", strs.size(), " values and cats_int64s ", ints.size(), "; they must be equally long");
    auto to_int = std::make_shared<Lookup>();
    to_int->values = ints_tensor(ints);
    to_int->dflt = ints_tensor({init.attrs.get_int("default_int64", -1)});
    to_int->set_keys(strings_tensor(strs));
    auto to_str = std::make_shared<Lookup>();
    to_str->values = strings_tensor(strs);
    to_str->dflt = strings_tensor({init.attrs.get_string("default_string", "_Unused")});
    to_str->set_keys(ints_tensor(ints));
    return make_kernel([to_int, to_str](KernelContext& ctx) {
      (ctx.input(0).dtype() == D::String ? to_int : to_str)->run(ctx);
    });
  };
  add_versions(r, kMlPreprocess, "CategoryMapper", {1}, {{{0}, {D::String, D::Int64}}}, infer, kernel);
}

// ---- ArrayFeatureExtractor ----

void register_array_feature_extractor(Registry& r) {
  auto infer = [](InferContext& ctx) {
    const Type& x = ctx.input_type(0);
    Dim k;
    if (ctx.has_input(1)) {
      const Type& it = ctx.input_type(1);
      if (auto d = static_dims(it)) k = known_dim(product(*d));
    }
    Shape s;
    if (x.shape.rank_known) {
      s.rank_known = true;
      if (x.shape.dims.size() <= 1) {
        s.dims = {known_dim(1), k};
      } else {
        s.dims.assign(x.shape.dims.begin(), x.shape.dims.end() - 1);
        s.dims.push_back(k);
      }
    }
    ctx.set_output(0, Type::tensor(x.elem, s));
  };
  auto kernel = [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      std::vector<int64_t> idx = read_ints(ctx.input(1));
      if (x.dims().empty()) ctx.error("X must have at least one dimension");
      const int64_t last = x.dims().back();
      for (int64_t i : idx)
        if (i < 0 || i >= last) ctx.error(cat("index ", i, " is out of range [0, ", last, ") of the last dimension"));
      const int64_t k = static_cast<int64_t>(idx.size());
      Dims out;
      if (x.dims().size() == 1) out = {1, k};
      else {
        out.assign(x.dims().begin(), x.dims().end() - 1);
        out.push_back(k);
      }
      Tensor& y = ctx.allocate_output(0, x.dtype(), out);
      const int64_t rows = last == 0 ? product(out) / std::max<int64_t>(k, 1) : static_cast<int64_t>(x.element_count()) / last;
      if (x.dtype() == D::String) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < k; ++j) y.mutable_strings()[r * k + j] = x.string_values()[r * last + idx[j]];
      } else {
        const size_t sz = static_cast<size_t>(dtype_bits(x.dtype()) / 8);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < k; ++j)
            std::memcpy(y.mutable_data<char>() + (r * k + j) * sz, x.bytes().data() + (r * last + idx[j]) * sz, sz);
      }
    });
  };
  add_versions(r, kMlPreprocess, "ArrayFeatureExtractor", {1},
               {{{0}, {D::Float, D::Double, D::Int64, D::Int32, D::String}}, {{1}, {D::Int64}}}, infer, kernel);
}

// ---- FeatureVectorizer ----

void register_feature_vectorizer(Registry& r) {
  auto infer = [](InferContext& ctx) {
    std::vector<int64_t> dims = ctx.attrs.get_ints("inputdimensions", std::vector<int64_t>{});
    Dim width;
    if (!dims.empty()) {
      int64_t s = 0;
      for (int64_t d : dims) s += d;
      width = known_dim(s);
    }
    Dim n;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      const Type& t = ctx.input_type(i);
      if (!t.shape.rank_known) continue;
      n = t.shape.dims.size() == 1 ? known_dim(1) : t.shape.dims.empty() ? Dim{} : t.shape.dims[0];
      break;
    }
    ctx.set_output(0, Type::tensor(D::Float, shape_from({n, width})));
  };
  auto kernel = [](const KernelInit& init) {
    std::vector<int64_t> dims = init.attrs.get_ints("inputdimensions", std::vector<int64_t>{});
    for (int64_t d : dims)
      if (d < 0) fail("inputdimensions holds a negative size ", d);
    return make_kernel([dims](KernelContext& ctx) {
      const size_t k = ctx.num_inputs();
      if (!dims.empty() && dims.size() != k)
        ctx.error(cat("inputdimensions has ", dims.size(), " sizes for ", k, " inputs"));
      int64_t n = -1, total = 0;
      std::vector<int64_t> widths(k);
      for (size_t i = 0; i < k; ++i) {
        const Tensor& t = ctx.input(i);
        if (t.dims().empty()) ctx.error(cat("input ", i, " is a scalar; expected [N,C] or [C]"));
        int64_t rows = t.dims().size() == 1 ? 1 : t.dims()[0];
        if (n >= 0 && rows != n) ctx.error(cat("input ", i, " has ", rows, " rows, the first input ", n));
        n = rows;
        widths[i] = rows == 0 ? 0 : static_cast<int64_t>(t.element_count()) / rows;
        total += dims.empty() ? widths[i] : dims[i];
      }
      if (n < 0) n = 0;
      Tensor& y = ctx.allocate_output(0, D::Float, {n, total});
      float* py = y.mutable_data<float>();
      int64_t col = 0;
      for (size_t i = 0; i < k; ++i) {
        std::vector<double> v = read_doubles(ctx.input(i));
        const int64_t w = dims.empty() ? widths[i] : dims[i];
        const int64_t copy = std::min(w, widths[i]);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t c = 0; c < copy; ++c) py[r * total + col + c] = static_cast<float>(v[r * widths[i] + c]);
        col += w;
      }
    });
  };
  add_versions(r, kMlPreprocess, "FeatureVectorizer", {1}, {{{-1}, kNum4}}, infer, kernel);
}

}  // namespace

void register_ml_preprocess(Registry& r) {
  register_binarizer(r);
  register_scaler(r);
  register_normalizer(r);
  register_imputer(r);
  register_one_hot_encoder(r);
  register_label_encoder(r);
  register_category_mapper(r);
  register_array_feature_extractor(r);
  register_feature_vectorizer(r);
}

}  // namespace onyx::ops
