// ai.onnx.ml ops on maps: CastMap-1, DictVectorizer-1, ZipMap-1 (the only versions).
// A map at run time is Datum{kind Map, map_keys: 1-D int64 or string tensor, map_values: a sequence of one-element
// tensors (as MapProto stores them); a single 1-D tensor of values is accepted too}.
// CastMap: map(int64, string|float) -> [1, n] tensor ordered by ascending key, cast to float/string/int64
// (cast_to TO_FLOAT, TO_STRING, TO_INT64); map_form SPARSE places each value at its key in [1, max_map] (keys must
// be in [0, max_map); missing keys give 0 / ""). Strings convert to numbers by full parse (an error otherwise);
// floats to strings as "%f" does.
// DictVectorizer: a map is spread over a [1, V] tensor by the position of each key in string_vocabulary or
// int64_vocabulary; absent keys give 0 / ""; keys outside the vocabulary are ignored.
// ZipMap: float [N,C] (or [C]) -> a sequence of N maps from classlabels_strings / classlabels_int64s (C of them) to
// the row's values.
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <unordered_map>

#include "ops/ml/rows_and_labels.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
const char* kMlMaps = "ai.onnx.ml";

// The values of a map as strings or doubles, with their element type.
struct MapValues {
  DataType dtype = D::Undefined;
  std::vector<std::string> s;
  std::vector<double> d;
  std::vector<int64_t> i;  // for int64 values (exact)
  size_t size() const { return dtype == D::String ? s.size() : d.size(); }
};

MapValues read_map_values(const Datum& m, const KernelContext& ctx) {
  MapValues v;
  auto add = [&](const Tensor& t) {
    if (v.dtype == D::Undefined) v.dtype = t.dtype();
    if (t.dtype() != v.dtype) ctx.error(cat("map values mix element types ", v.dtype, " and ", t.dtype()));
    if (t.dtype() == D::String) {
      v.s.insert(v.s.end(), t.string_values().begin(), t.string_values().end());
    } else {
      std::vector<double> dv = read_doubles(t);
      v.d.insert(v.d.end(), dv.begin(), dv.end());
      if (t.dtype() == D::Int64 || t.dtype() == D::Int32) {
        std::vector<int64_t> iv = read_ints(t);
        v.i.insert(v.i.end(), iv.begin(), iv.end());
      }
    }
  };
  if (m.map_values) {
    const Datum& mv = *m.map_values;
    if (mv.kind == Datum::Kind::Tensor) {
      add(mv.tensor);
    } else if (mv.kind == Datum::Kind::Sequence) {
      for (const Datum& e : mv.elements) {
        if (!e.is_tensor() || e.tensor.element_count() != 1)
          ctx.error(cat("a map value is ", e.describe(), ", expected a tensor of one element"));
        add(e.tensor);
      }
      if (v.dtype == D::Undefined && mv.elem_type.kind == Type::Kind::Tensor) v.dtype = mv.elem_type.elem;
    } else if (mv.kind != Datum::Kind::Empty) {
      ctx.error(cat("map values are ", mv.describe(), ", expected a sequence of tensors"));
    }
  }
  if (v.size() != m.map_keys.element_count())
    ctx.error(cat("the map has ", m.map_keys.element_count(), " keys and ", v.size(), " values"));
  return v;
}

const Datum& map_input(const KernelContext& ctx) {
  const Datum& m = ctx.input_datum(0);
  if (m.kind != Datum::Kind::Map) ctx.error(cat("input is ", m.describe(), ", expected a map"));
  return m;
}

const Type* map_type(InferContext& ctx) {
  if (!ctx.has_input(0)) return nullptr;
  const Type& t = ctx.input_type(0);
  if (t.kind == Type::Kind::Unknown) return nullptr;
  if (t.kind != Type::Kind::Map) ctx.error(cat("input is ", t.to_string(), ", expected a map"));
  return &t;
}

// ---- CastMap ----

double parse_double(const std::string& s, const KernelContext& ctx) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) ctx.error(cat("map value \"", s, "\" is not a number"));
  return v;
}

int64_t to_int64(double d, const KernelContext& ctx) {
  if (!std::isfinite(d) || d >= 9.2e18 || d <= -9.2e18) ctx.error(cat("map value ", d, " does not fit in int64"));
  return static_cast<int64_t>(d);
}

void register_cast_map(Registry& r) {
  auto out_dtype = [](const AttributeView& a) {
    std::string c = a.get_string("cast_to", "TO_FLOAT");
    if (c == "TO_FLOAT") return D::Float;
    if (c == "TO_STRING") return D::String;
    if (c == "TO_INT64") return D::Int64;
    fail("cast_to '", c, "' is not one of TO_FLOAT, TO_STRING, TO_INT64");
  };
  auto infer = [out_dtype](InferContext& ctx) {
    if (const Type* t = map_type(ctx)) {
      if (t->key != D::Undefined && t->key != D::Int64) ctx.error(cat("map keys must be int64, got ", t->key));
    }
    std::string form = ctx.attrs.get_string("map_form", "DENSE");
    Dim n = form == "SPARSE" ? known_dim(ctx.attrs.get_int("max_map", 1)) : Dim{};
    ctx.set_output(0, Type::tensor(out_dtype(ctx.attrs), shape_from({known_dim(1), n})));
  };
  auto kernel = [out_dtype](const KernelInit& init) {
    DataType to = out_dtype(init.attrs);
    std::string form = init.attrs.get_string("map_form", "DENSE");
    if (form != "DENSE" && form != "SPARSE") fail("map_form '", form, "' is not one of DENSE, SPARSE");
    const bool sparse = form == "SPARSE";
    int64_t max_map = init.attrs.get_int("max_map", 1);
    if (sparse && max_map < 0) fail("max_map must be >= 0, got ", max_map);
    return make_kernel([to, sparse, max_map](KernelContext& ctx) {
      const Datum& m = map_input(ctx);
      if (m.map_keys.dtype() == D::String) ctx.error("map keys must be int64, got string");
      std::vector<int64_t> keys = read_ints(m.map_keys);
      MapValues v = read_map_values(m, ctx);
      if (v.dtype != D::Undefined && v.dtype != D::String && v.dtype != D::Float)
        ctx.error(cat("map values must be string or float, got ", v.dtype));
      const bool str = v.dtype == D::String;
      std::vector<size_t> order(keys.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
      const int64_t width = sparse ? max_map : static_cast<int64_t>(keys.size());
      Tensor& y = ctx.allocate_output(0, to, {1, width});
      for (size_t k = 0; k < order.size(); ++k) {
        const size_t src = order[k];
        int64_t pos = static_cast<int64_t>(k);
        if (sparse) {
          pos = keys[src];
          if (pos < 0 || pos >= max_map) ctx.error(cat("key ", pos, " is outside [0, max_map = ", max_map, ")"));
        }
        switch (to) {
          case D::String: {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%f", v.d.empty() ? 0.0 : v.d[src]);
            y.mutable_strings()[pos] = str ? v.s[src] : std::string(buf);
            break;
          }
          case D::Float:
            y.mutable_data<float>()[pos] = static_cast<float>(str ? parse_double(v.s[src], ctx) : v.d[src]);
            break;
          default:
            y.mutable_data<int64_t>()[pos] = to_int64(str ? parse_double(v.s[src], ctx) : v.d[src], ctx);
            break;
        }
      }
    });
  };
  add_versions(r, kMlMaps, "CastMap", {1}, {}, infer, kernel);
}

// ---- DictVectorizer ----

void register_dict_vectorizer(Registry& r) {
  auto vocab_size = [](const AttributeView& a) {
    auto s = a.get_strings("string_vocabulary", std::vector<std::string>{});
    auto i = a.get_ints("int64_vocabulary", std::vector<int64_t>{});
    if (s.empty() == i.empty()) fail("exactly one of string_vocabulary and int64_vocabulary must be set (and not empty)");
    return static_cast<int64_t>(s.empty() ? i.size() : s.size());
  };
  auto infer = [vocab_size](InferContext& ctx) {
    int64_t v = vocab_size(ctx.attrs);
    DataType dt = D::Undefined;
    if (const Type* t = map_type(ctx)) {
      bool string_vocab = ctx.attrs.has("string_vocabulary");
      if (t->key != D::Undefined && (t->key == D::String) != string_vocab)
        ctx.error(cat("map keys are ", t->key, ", the vocabulary is ", string_vocab ? "string" : "int64"));
      if (t->inner && t->inner->kind == Type::Kind::Tensor) dt = t->inner->elem;
    }
    ctx.set_output(0, Type::tensor(dt, shape_from({known_dim(1), known_dim(v)})));
  };
  auto kernel = [vocab_size](const KernelInit& init) {
    int64_t width = vocab_size(init.attrs);
    auto smap = std::make_shared<std::unordered_map<std::string, int64_t>>();
    auto imap = std::make_shared<std::unordered_map<int64_t, int64_t>>();
    auto s = init.attrs.get_strings("string_vocabulary", std::vector<std::string>{});
    auto i = init.attrs.get_ints("int64_vocabulary", std::vector<int64_t>{});
    for (size_t k = 0; k < s.size(); ++k) smap->emplace(s[k], static_cast<int64_t>(k));
    for (size_t k = 0; k < i.size(); ++k) imap->emplace(i[k], static_cast<int64_t>(k));
    DataType inferred = init.output_types.empty() || !init.output_types[0] ? D::Undefined : init.output_types[0]->elem;
    return make_kernel([=](KernelContext& ctx) {
      const Datum& m = map_input(ctx);
      const bool str_keys = m.map_keys.dtype() == D::String;
      if (str_keys && smap->empty()) ctx.error("map keys are strings, the vocabulary is int64");
      if (!str_keys && imap->empty()) ctx.error("map keys are integers, the vocabulary is strings");
      MapValues v = read_map_values(m, ctx);
      DataType dt = v.dtype != D::Undefined ? v.dtype : inferred != D::Undefined ? inferred : D::Float;
      if (dt != D::String && dt != D::Float && dt != D::Double && dt != D::Int64)
        ctx.error(cat("map values of element type ", dt, " are not supported"));
      Tensor& y = ctx.allocate_output(0, dt, {1, width});
      std::vector<int64_t> ikeys = str_keys ? std::vector<int64_t>{} : read_ints(m.map_keys);
      for (size_t k = 0; k < v.size(); ++k) {
        int64_t pos = -1;
        if (str_keys) {
          auto it = smap->find(m.map_keys.string_values()[k]);
          if (it != smap->end()) pos = it->second;
        } else {
          auto it = imap->find(ikeys[k]);
          if (it != imap->end()) pos = it->second;
        }
        if (pos < 0) continue;
        switch (dt) {
          case D::String: y.mutable_strings()[pos] = v.s[k]; break;
          case D::Float: y.mutable_data<float>()[pos] = static_cast<float>(v.d[k]); break;
          case D::Double: y.mutable_data<double>()[pos] = v.d[k]; break;
          default: y.mutable_data<int64_t>()[pos] = v.i.empty() ? static_cast<int64_t>(v.d[k]) : v.i[k]; break;
        }
      }
    });
  };
  add_versions(r, kMlMaps, "DictVectorizer", {1}, {}, infer, kernel);
}

// ---- ZipMap ----

void register_zip_map(Registry& r) {
  auto key_of = [](const AttributeView& a) {
    auto s = a.get_strings("classlabels_strings", std::vector<std::string>{});
    auto i = a.get_ints("classlabels_int64s", std::vector<int64_t>{});
    if (s.empty() == i.empty())
      fail("exactly one of classlabels_strings and classlabels_int64s must be set (and not empty)");
    return s.empty() ? D::Int64 : D::String;
  };
  auto infer = [key_of](InferContext& ctx) {
    Type map;
    map.kind = Type::Kind::Map;
    map.key = key_of(ctx.attrs);
    map.inner = std::make_shared<const Type>(Type::tensor(D::Float));
    Type seq;
    seq.kind = Type::Kind::Sequence;
    seq.inner = std::make_shared<const Type>(map);
    ctx.set_output(0, seq);
  };
  auto kernel = [key_of](const KernelInit& init) {
    DataType key = key_of(init.attrs);
    Tensor keys = key == D::String
                      ? Tensor::strings("", {static_cast<int64_t>(init.attrs.get_strings("classlabels_strings").size())},
                                        init.attrs.get_strings("classlabels_strings"))
                      : Tensor{};
    if (key == D::Int64) {
      auto i = init.attrs.get_ints("classlabels_int64s");
      keys = Tensor::allocate(D::Int64, {static_cast<int64_t>(i.size())});
      std::copy(i.begin(), i.end(), keys.mutable_data<int64_t>());
    }
    return make_kernel([keys](KernelContext& ctx) {
      const Tensor& xt = ctx.input(0);
      ml::Rows x = ml::read_rows(xt);
      const int64_t c = static_cast<int64_t>(keys.element_count());
      if (x.c != c) ctx.error(cat("input has ", x.c, " columns, there are ", c, " class labels"));
      std::vector<Datum> maps;
      maps.reserve(static_cast<size_t>(x.n));
      for (int64_t n = 0; n < x.n; ++n) {
        std::vector<Datum> vals;
        vals.reserve(static_cast<size_t>(c));
        for (int64_t k = 0; k < c; ++k) {
          Tensor t = Tensor::allocate(D::Float, {});
          t.mutable_data<float>()[0] = static_cast<float>(x.row(n)[k]);
          vals.push_back(Datum::of(std::move(t)));
        }
        Datum m;
        m.kind = Datum::Kind::Map;
        m.map_keys = keys;
        m.map_values = std::make_shared<Datum>(Datum::sequence(std::move(vals), Type::tensor(D::Float)));
        maps.push_back(std::move(m));
      }
      Type map;
      map.kind = Type::Kind::Map;
      map.key = keys.dtype();
      map.inner = std::make_shared<const Type>(Type::tensor(D::Float));
      ctx.set_output(0, Datum::sequence(std::move(maps), map));
    });
  };
  add_versions(r, kMlMaps, "ZipMap", {1}, {{{0}, {D::Float}}}, infer, kernel);
}

}  // namespace

void register_ml_maps(Registry& r) {
  register_cast_map(r);
  register_dict_vectorizer(r);
  register_zip_map(r);
}

}  // namespace onyx::ops
