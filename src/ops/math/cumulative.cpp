// ai.onnx CumSum (versions 11, 14) and CumProd (version 26).
// Running sum / product of `x` along the axis given by input 1 (a 0-D int32/int64 tensor; a 1-element 1-D tensor
// is accepted too), in [-r, r-1]. `exclusive` (default 0): element j is the sum/product of the elements before j
// (the first is 0 / 1). `reverse` (default 0): runs from the end of the axis.
//  CumSum-11: float, double, int32, int64, uint32, uint64.  CumSum-14: adds float16 and bfloat16.
//  CumProd-26: the types of CumSum-14.
// Float types accumulate in double; integers wrap around in their own type.
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

struct CumConfig {
  bool product = false;
  bool exclusive = false;
  bool reverse = false;
};

template <class T, class Acc>
void cumulate(const CumConfig& c, const T* x, T* y, const Dims& dims, int64_t axis) {
  const int64_t outer = product(dims, 0, static_cast<size_t>(axis));
  const int64_t n = dims[axis];
  const int64_t inner = product(dims, static_cast<size_t>(axis) + 1);
  auto load = [](T v) -> Acc {
    if constexpr (is_small_float_v<T>) return static_cast<float>(v);
    else return static_cast<Acc>(v);
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * n * inner + in;
      Acc acc = c.product ? Acc(1) : Acc(0);
      for (int64_t step = 0; step < n; ++step) {
        const int64_t j = c.reverse ? n - 1 - step : step;
        const int64_t at = base + j * inner;
        Acc v = load(x[at]);
        Acc next = c.product ? static_cast<Acc>(acc * v) : static_cast<Acc>(acc + v);
        if constexpr (is_small_float_v<T>) y[at] = from_double<T>(c.exclusive ? acc : next);
        else y[at] = static_cast<T>(c.exclusive ? acc : next);
        acc = next;
      }
    }
  }
}

int64_t read_axis(const Tensor& a) {
  if (a.element_count() != 1 || a.dims().size() > 1)
    fail("axis must be a 0-D tensor (one value), got shape ", shape_of(a.dims()).to_string());
  return read_ints(a)[0];
}

void run_cum(const CumConfig& c, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  if (rank == 0) ctx.error("input must have rank 1 or more");
  const int64_t axis = normalize_axis(read_axis(ctx.input(1)), rank);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
  if (x.element_count() == 0) return;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_like_v<T>) {
      cumulate<T, double>(c, x.data<T>(), y.mutable_data<T>(), x.dims(), axis);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      cumulate<T, wide_unsigned_t<T>>(c, x.data<T>(), y.mutable_data<T>(), x.dims(), axis);
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

void infer_cum(InferContext& ctx) {
  const Type& in = ctx.input_type(0);
  if (in.shape.rank_known) {
    const int64_t rank = static_cast<int64_t>(in.shape.dims.size());
    if (rank == 0) ctx.error("input must have rank 1 or more");
    if (const Tensor* a = ctx.input_value(1)) normalize_axis(read_axis(*a), rank);
  }
  ctx.set_output(0, Type::tensor(in.elem, in.shape));
}

void add_cum(Registry& r, const char* name, bool is_product, int version, const std::vector<DataType>& types) {
  auto kernel = [is_product](const KernelInit& init) {
    CumConfig c;
    c.product = is_product;
    c.exclusive = init.attrs.get_int("exclusive", 0) != 0;
    c.reverse = init.attrs.get_int("reverse", 0) != 0;
    return make_kernel([c](KernelContext& ctx) { run_cum(c, ctx); });
  };
  r.add(OpDef{"", name, version, {{{0}, types}, {{1}, {DataType::Int32, DataType::Int64}}}, infer_cum, kernel});
}

}  // namespace

void register_cumulative(Registry& r) {
  using D = DataType;
  const std::vector<DataType> v11 = {D::Float, D::Double, D::Int32, D::Int64, D::UInt32, D::UInt64};
  std::vector<DataType> v14 = v11;
  v14.push_back(D::Float16);
  v14.push_back(D::BFloat16);
  add_cum(r, "CumSum", false, 11, v11);
  add_cum(r, "CumSum", false, 14, v14);
  add_cum(r, "CumProd", true, 26, v14);
}

}  // namespace onyx::ops
