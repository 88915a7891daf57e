// ai.onnx ArgMax, ArgMin — versions 1, 11, 12, 13.
// The index (int64) of the largest / smallest element along `axis` (default 0); `keepdims` (default 1) keeps the
// reduced axis with size 1.
//  v1:  axis in [0, r-1] (onyx accepts negative axes here too, as v11 defines them).
//  v11: negative axes.
//  v12: `select_last_index` (default 0): on ties, the last index instead of the first.
//  v13: bfloat16.
// NaN counts as the extreme value (as numpy): the first NaN (the last with select_last_index) wins. An axis of size
// zero is an error (no index to return).
#include <cmath>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

struct ArgConfig {
  bool is_max = true;
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last = false;
};

ArgConfig read_arg_config(bool is_max, int version, const AttributeView& attrs) {
  ArgConfig c;
  c.is_max = is_max;
  c.axis = attrs.get_int("axis", 0);
  c.keepdims = attrs.get_int("keepdims", 1) != 0;
  c.select_last = version >= 12 && attrs.get_int("select_last_index", 0) != 0;
  return c;
}

// Compares in the element's own type for integers (exact for 64-bit), in double for float types.
template <class T>
auto arg_key_of(T v) {
  if constexpr (is_float_like_v<T>) return to_double(v);
  else return v;
}

template <class K>
bool is_nan_key(K k) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(k);
  else return false;
}

template <class T>
void arg_reduce(const ArgConfig& c, const T* x, const Dims& dims, int64_t axis, int64_t* y) {
  const int64_t outer = product(dims, 0, static_cast<size_t>(axis));
  const int64_t n = dims[axis];
  const int64_t inner = product(dims, static_cast<size_t>(axis) + 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const T* base = x + o * n * inner + in;
      auto best = arg_key_of(base[0]);
      int64_t best_i = 0;
      for (int64_t j = 1; j < n; ++j) {
        auto v = arg_key_of(base[j * inner]);
        bool better, equal;
        if (is_nan_key(best)) {
          better = false;
          equal = is_nan_key(v);
        } else if (is_nan_key(v)) {
          better = true;
          equal = false;
        } else {
          better = c.is_max ? v > best : v < best;
          equal = v == best;
        }
        if (better || (equal && c.select_last)) {
          best = v;
          best_i = j;
        }
      }
      y[o * inner + in] = best_i;
    }
  }
}

void run_arg(const ArgConfig& c, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  const int64_t axis = normalize_axis(c.axis, rank);
  if (x.dims()[axis] == 0) ctx.error(cat("cannot take the index over axis ", c.axis, " of size 0"));
  Dims out;
  for (int64_t k = 0; k < rank; ++k) {
    if (k != axis) out.push_back(x.dims()[k]);
    else if (c.keepdims) out.push_back(1);
  }
  Tensor& y = ctx.allocate_output(0, DataType::Int64, out);
  if (product(out) == 0) return;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr ((std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) || is_small_float_v<T>) {
      arg_reduce<T>(c, x.data<T>(), x.dims(), axis, y.mutable_data<int64_t>());
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

void infer_arg(const ArgConfig& c, InferContext& ctx) {
  const Type& in = ctx.input_type(0);
  if (!in.shape.rank_known) {
    ctx.set_output(0, Type::tensor(DataType::Int64));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in.shape.dims.size());
  const int64_t axis = normalize_axis(c.axis, rank);
  const Dim& ad = in.shape.dims[axis];
  if (ad.value && *ad.value == 0) ctx.error(cat("cannot take the index over axis ", c.axis, " of size 0"));
  Shape out;
  out.rank_known = true;
  for (int64_t k = 0; k < rank; ++k) {
    if (k != axis) out.dims.push_back(in.shape.dims[k]);
    else if (c.keepdims) out.dims.push_back(known_dim(1));
  }
  ctx.set_output(0, Type::tensor(DataType::Int64, out));
}

void add_arg(Registry& r, const char* name, bool is_max, int version, const std::vector<DataType>& types) {
  auto infer = [is_max, version](InferContext& ctx) { infer_arg(read_arg_config(is_max, version, ctx.attrs), ctx); };
  auto kernel = [is_max, version](const KernelInit& init) {
    ArgConfig c = read_arg_config(is_max, version, init.attrs);
    return make_kernel([c](KernelContext& ctx) { run_arg(c, ctx); });
  };
  r.add(OpDef{"", name, version, {{{0}, types}}, infer, kernel});
}

}  // namespace

void register_argmax(Registry& r) {
  using D = DataType;
  const std::vector<DataType> v1 = {D::UInt8, D::UInt16, D::UInt32, D::UInt64, D::Int8,  D::Int16,
                                    D::Int32, D::Int64,  D::Float16, D::Float, D::Double};
  std::vector<DataType> v13 = v1;
  v13.push_back(D::BFloat16);
  for (auto [name, is_max] : {std::pair<const char*, bool>{"ArgMax", true}, {"ArgMin", false}}) {
    add_arg(r, name, is_max, 1, v1);
    add_arg(r, name, is_max, 11, v1);
    add_arg(r, name, is_max, 12, v1);
    add_arg(r, name, is_max, 13, v13);
  }
}

}  // namespace onyx::ops
