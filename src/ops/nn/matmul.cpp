// ai.onnx MatMul (1, 9, 13) and Gemm (1, 6, 7, 9, 11, 13).
// MatMul: numpy matmul — 1-D A gets a leading 1 and 1-D B a trailing 1 (removed from the result), batch dims
//   broadcast. v1: float16/float/double; v9 adds int32/int64/uint32/uint64; v13 adds bfloat16.
// Gemm: Y = alpha * A' * B' + beta * C with A' = transA ? A^T : A, B' likewise. v1/v6: attribute `broadcast`
//   (C must have Y's shape unless broadcast=1; v1 also has consumed_inputs-era semantics only); v7: C broadcasts
//   unidirectionally to (M, N); v9 adds int32/int64/uint32/uint64; v11: C is optional; v13 adds bfloat16.
// Reference: plain loops (ops/nn/plain_product.hpp), float types summed in double and rounded once; integers wrap
// like the hardware.
// Fast kernels: float32 on oneDNN, a constant 2-D B (MatMul's B, Gemm's B without transA) packed once at session
// creation, other float32 MatMuls of rank 2..6 on oneDNN's batched matmul. Other float types and what those paths
// do not take run the blocked GEMM (kernels/blocked_gemm.hpp) in float (double for double); integers the
// reference's loops. The packed product with an epilogue and MatMul's own loops also serve ai.onyx FusedMatMul
// (ops/fused/fused_matmul.cpp, through matmul_epilogue.hpp).
#include <algorithm>
#include <cstring>

#include "kernels/blocked_gemm.hpp"
#include "kernels/gemm.hpp"
#include "ops/nn/compute_type.hpp"
#include "ops/nn/matmul_epilogue.hpp"
#include "ops/nn/plain_product.hpp"
#include "ops/gradient_rule.hpp"
#include "ops/op_kit.hpp"
#include "ir/tensor_alloc.hpp"

namespace onyx::ops {
namespace {

using nn::acc_t;
using nn::AccIn;
using nn::AccOut;

// ---- MatMul ----

struct MatMulGeom {
  Dims out;          // result dims (after removing promoted 1-D dims)
  Dims batch;        // broadcast batch dims
  Dims a_batch, b_batch;
  int64_t M = 0, K = 0, N = 0;
};

MatMulGeom matmul_geom(const Dims& a_in, const Dims& b_in) {
  if (a_in.empty() || b_in.empty()) fail("MatMul inputs must have rank at least 1 (got ranks ", a_in.size(), " and ", b_in.size(), ")");
  Dims a = a_in, b = b_in;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulGeom g;
  g.M = a[a.size() - 2];
  g.K = a[a.size() - 1];
  g.N = b[b.size() - 1];
  if (b[b.size() - 2] != g.K)
    fail("MatMul inner dims differ: A is ", shape_of(a_in).to_string(), ", B is ", shape_of(b_in).to_string());
  g.a_batch.assign(a.begin(), a.end() - 2);
  g.b_batch.assign(b.begin(), b.end() - 2);
  g.batch = broadcast_dims(g.a_batch, g.b_batch);
  g.out = g.batch;
  if (a_in.size() > 1) g.out.push_back(g.M);
  if (b_in.size() > 1) g.out.push_back(g.N);
  return g;
}

void infer_matmul(InferContext& ctx) {
  const Type& ta = ctx.input_type(0);
  const Type& tb = ctx.input_type(1);
  Shape s;
  if (ta.shape.rank_known && tb.shape.rank_known) {
    std::vector<Dim> a = ta.shape.dims, b = tb.shape.dims;
    if (a.empty() || b.empty()) ctx.error("MatMul inputs must have rank at least 1");
    Dim one{1, {}, {}};
    const bool a1 = a.size() == 1, b1 = b.size() == 1;
    if (a1) a.insert(a.begin(), one);
    if (b1) b.push_back(one);
    const Dim& ka = a[a.size() - 1];
    const Dim& kb = b[b.size() - 2];
    if (ka.value && kb.value && *ka.value != *kb.value)
      ctx.error(cat("MatMul inner dims differ: A is ", ta.shape.to_string(), ", B is ", tb.shape.to_string()));
    Shape ba, bb;
    ba.rank_known = bb.rank_known = true;
    ba.dims.assign(a.begin(), a.end() - 2);
    bb.dims.assign(b.begin(), b.end() - 2);
    s = broadcast_shape(ba, bb);
    if (!a1) s.dims.push_back(a[a.size() - 2]);
    if (!b1) s.dims.push_back(b[b.size() - 1]);
  }
  ctx.set_output(0, Type::tensor(ta.elem, s));
}

void run_matmul(KernelContext& ctx, nn::Loops loops) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype()) ctx.error(cat("inputs have different element types ", a.dtype(), " and ", b.dtype()));
  MatMulGeom g = matmul_geom(a.dims(), b.dims());
  Tensor& y = ctx.allocate_output(0, a.dtype(), g.out);
  const int64_t batches = product(g.batch);
  if (batches == 0 || g.M == 0 || g.N == 0) return;
  // Offsets of each batch's matrices in A and B.
  std::vector<int64_t> off_a, off_b;
  off_a.reserve(batches);
  off_b.reserve(batches);
  for_each_broadcast(g.batch, {g.a_batch, g.b_batch}, [&](int64_t, const std::vector<int64_t>& o) {
    off_a.push_back(o[0]);
    off_b.push_back(o[1]);
  });
  const int64_t M = g.M, K = g.K, N = g.N;
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_like_v<T>) {
      if (loops == nn::Loops::Blocked) {
        using A = acc_t<T>;
        AccIn<A, T> ia(a), ib(b);
        AccOut<A, T> oy(y);
        for (int64_t bi = 0; bi < batches; ++bi)
          kernels::blocked_gemm(M, N, K, ia.data() + off_a[bi] * M * K, K, ib.data() + off_b[bi] * K * N, N,
                                oy.data() + bi * M * N, N);
        oy.commit();
        return;
      }
    }
    if constexpr (is_float_like_v<T> || (std::is_integral_v<T> && !std::is_same_v<T, bool>)) {
      // Integers take these loops on either path: their sums are exact.
      nn::SumIn<T> ia(a), ib(b);
      std::vector<nn::sum_t<T>> sums(static_cast<size_t>(M * N));
      nn::LimitsCheck limits("in a matrix product");
      T* py = y.mutable_data<T>();
      for (int64_t bi = 0; bi < batches; ++bi) {
        nn::plain_product(M, N, K, ia.data() + off_a[bi] * M * K, K, 1, ib.data() + off_b[bi] * K * N, N, 1,
                          sums.data(), limits);
        for (int64_t i = 0; i < M * N; ++i) py[bi * M * N + i] = nn::store_sum<T>(sums[i]);
      }
    } else {
      ctx.error(cat("element type ", a.dtype(), " is not supported"));
    }
  });
}

// ---- Gemm ----

void infer_gemm(InferContext& ctx) {
  const Type& ta = ctx.input_type(0);
  const Type& tb = ctx.input_type(1);
  const bool trans_a = ctx.attrs.get_int("transA", 0) != 0;
  const bool trans_b = ctx.attrs.get_int("transB", 0) != 0;
  Shape s;
  if (ta.shape.rank_known && tb.shape.rank_known) {
    if (ta.shape.dims.size() != 2 || tb.shape.dims.size() != 2)
      ctx.error(cat("Gemm inputs A and B must be 2-D, got ", ta.shape.to_string(), " and ", tb.shape.to_string()));
    const Dim& ka = ta.shape.dims[trans_a ? 0 : 1];
    const Dim& kb = tb.shape.dims[trans_b ? 1 : 0];
    if (ka.value && kb.value && *ka.value != *kb.value)
      ctx.error(cat("Gemm inner dims differ: A' has K=", *ka.value, ", B' has K=", *kb.value));
    s.rank_known = true;
    s.dims = {ta.shape.dims[trans_a ? 1 : 0], tb.shape.dims[trans_b ? 0 : 1]};
  }
  ctx.set_output(0, Type::tensor(ta.elem, s));
}

void run_gemm(KernelContext& ctx, nn::Loops loops, float alpha, float beta, bool trans_a, bool trans_b,
              bool legacy_strict) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dims().size() != 2 || b.dims().size() != 2)
    ctx.error(cat("Gemm inputs A and B must be 2-D, got ", shape_of(a.dims()).to_string(), " and ",
                  shape_of(b.dims()).to_string()));
  if (a.dtype() != b.dtype()) ctx.error(cat("inputs have different element types ", a.dtype(), " and ", b.dtype()));
  const int64_t M = a.dims()[trans_a ? 1 : 0], K = a.dims()[trans_a ? 0 : 1];
  const int64_t N = b.dims()[trans_b ? 0 : 1];
  if (b.dims()[trans_b ? 1 : 0] != K)
    ctx.error(cat("Gemm inner dims differ: A' is ", M, "x", K, ", B' is ", b.dims()[trans_b ? 1 : 0], "x", N));
  const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Dims cs;  // C's strides as seen from (M, N)
  if (c) {
    if (c->dtype() != a.dtype()) ctx.error(cat("C has element type ", c->dtype(), ", A has ", a.dtype()));
    if (c->dims().size() > 2) ctx.error(cat("C has rank ", c->dims().size(), ", expected at most 2"));
    if (legacy_strict && c->dims() != Dims{M, N})
      ctx.error(cat("C has shape ", shape_of(c->dims()).to_string(), "; without broadcast=1 it must be [", M, ",", N, "]"));
    Dims out{M, N};
    if (broadcast_dims(out, c->dims()) != out)
      ctx.error(cat("C of shape ", shape_of(c->dims()).to_string(), " does not broadcast to [", M, ",", N, "]"));
    cs = broadcast_strides(c->dims(), out);
  }
  Tensor& y = ctx.allocate_output(0, a.dtype(), {M, N});
  if (M == 0 || N == 0) return;
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_like_v<T>) {
      if (loops == nn::Loops::Blocked) {
        using A = acc_t<T>;
        AccIn<A, T> ia(a), ib(b);
        AccOut<A, T> oy(y);
        A* yp = oy.data();
        const A* ap = ia.data();
        std::vector<A> at;
        if (trans_a) {  // A is stored (K, M): transpose it once
          at.resize(static_cast<size_t>(M * K));
          for (int64_t k = 0; k < K; ++k)
            for (int64_t i = 0; i < M; ++i) at[i * K + k] = ap[k * M + i];
          ap = at.data();
        }
        if (trans_b) kernels::blocked_gemm_bt(M, N, K, ap, K, ib.data(), K, yp, N);
        else kernels::blocked_gemm(M, N, K, ap, K, ib.data(), N, yp, N);
        const A al = static_cast<A>(alpha), be = static_cast<A>(beta);
        std::optional<AccIn<A, T>> ic;
        if (c) ic.emplace(*c);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            A v = al * yp[i * N + j];
            if (c) v += be * ic->data()[i * cs[0] + j * cs[1]];
            yp[i * N + j] = v;
          }
        oy.commit();
        return;
      }
    }
    if constexpr (is_float_like_v<T> || (std::is_integral_v<T> && !std::is_same_v<T, bool>)) {
      // Integers take these loops on either path: their sums are exact.
      using S = nn::sum_t<T>;
      nn::SumIn<T> ia(a), ib(b);
      std::vector<S> sums(static_cast<size_t>(M * N));
      nn::LimitsCheck limits("in a matrix product");
      // a(i, k) and b(k, j) through the strides of the stored layouts.
      nn::plain_product(M, N, K, ia.data(), trans_a ? 1 : K, trans_a ? M : 1, ib.data(), trans_b ? 1 : N,
                        trans_b ? K : 1, sums.data(), limits);
      std::optional<nn::SumIn<T>> ic;
      if (c) ic.emplace(*c);
      // Integer products scale by alpha and beta truncated to T (the product's type is the inputs').
      auto scalar = [](float v) -> S {
        if constexpr (is_float_like_v<T>) return v;
        else return static_cast<T>(v);
      };
      const S al = scalar(alpha), be = scalar(beta);
      T* py = y.mutable_data<T>();
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          S v = nn::mul_add(S(0), al, sums[i * N + j]);
          if (c) v = nn::mul_add(v, be, ic->data()[i * cs[0] + j * cs[1]]);
          py[i * N + j] = nn::store_sum<T>(v);
        }
    } else {
      ctx.error(cat("element type ", a.dtype(), " is not supported"));
    }
  });
}

}  // namespace

// ---- Fast kernels ----

// A constant float32 2-D B, packed for oneDNN, with the bytes it was packed from (a run whose B is other bytes,
// e.g. a feed replacing an initializer, does not use it).
struct PackedB {
  std::unique_ptr<kernels::PackedGemm> gemm;
  const char* source = nullptr;
  // Packed for A's static shape (float32, more than one row): runs compute from the pack alone.
  bool prepared = false;
  bool matches(const Tensor& b) const { return gemm && b.bytes().data() == source; }
};

PackedB pack_b(const Tensor* b, bool transposed, std::vector<float> bias, float alpha,
               kernels::Epilogue epilogue = {}) {
  PackedB p;
  if (!b || b->dtype() != DataType::Float || b->dims().size() != 2) return p;
  const int64_t K = b->dims()[transposed ? 1 : 0], N = b->dims()[transposed ? 0 : 1];
  if (K == 0 || N == 0) return p;
  if (alpha == 1.0f) {
    p.gemm = std::make_unique<kernels::PackedGemm>(b->data<float>(), K, N, transposed, std::move(bias),
                                                  std::move(epilogue));
  } else {
    // alpha * (A B) as A (alpha B): the same up to rounding, and free at run time.
    auto scaled = std::make_shared<std::vector<float>>(b->data<float>(), b->data<float>() + K * N);
    for (float& v : *scaled) v *= alpha;
    p.gemm = std::make_unique<kernels::PackedGemm>(scaled->data(), K, N, transposed, std::move(bias),
                                                  std::move(epilogue), scaled);
  }
  p.source = b->bytes().data();
  return p;
}

// The rows of A (all dims but the last, multiplied) when A's shape is static at creation, else 0.
int64_t static_rows(const KernelInit& init) {
  const Type* a = init.input_types.empty() ? nullptr : init.input_types[0];
  if (!a || !a->shape.rank_known || a->shape.dims.empty()) return 0;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < a->shape.dims.size(); ++i) {
    const auto& v = a->shape.dims[i].value;
    if (!v || *v <= 0 || rows > (int64_t{1} << 40) / *v) return 0;
    rows *= *v;
  }
  return rows;
}

// A packed B with its primitive for A's static shape made now, so that no run pays for it.
PackedB prepared(PackedB b, const KernelInit& init, bool a_is_2d, bool epilogue = false) {
  const int64_t rows = static_rows(init);
  const Type* a = init.input_types.empty() ? nullptr : init.input_types[0];
  if (b.gemm && rows > 0 && (!a_is_2d || a->shape.dims.size() == 2)) {
    const auto& k = a->shape.dims.back().value;
    if (k && *k == b.gemm->K()) {
      b.gemm->prepare(rows);
      // One row runs gemv on the source B, unless an epilogue makes it take the primitive.
      b.prepared = (rows > 1 || epilogue) && a->elem == DataType::Float;
    }
  }
  return b;
}

class FastMatMul : public Kernel {
 public:
  explicit FastMatMul(PackedB b) : b_(std::move(b)) {}
  bool keeps_copy_of_input(size_t i) const override { return i == 1 && b_.prepared; }
  void run(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != DataType::Float || b.dtype() != DataType::Float || a.dims().empty() || b.dims().empty())
      return run_matmul(ctx, nn::Loops::Blocked);
    const MatMulGeom g = matmul_geom(a.dims(), b.dims());
    if (b_.matches(b)) {
      // Every row of every batch of A against the one B: a single [rows, K] x [K, N] product.
      ctx.set_output(0, allocate_for_overwrite(DataType::Float, g.out));
      Tensor& y = ctx.outputs()[0].tensor;
      b_.gemm->run(a.data<float>(), product(a.dims()) / g.K, y.mutable_data<float>());
      return;
    }
    const size_t rank = std::max(a.dims().size(), b.dims().size());
    if (a.dims().size() < 2 || b.dims().size() < 2 || rank > 6 || g.M == 0 || g.N == 0 || g.K == 0)
      return run_matmul(ctx, nn::Loops::Blocked);
    Dims ad = a.dims(), bd = b.dims();
    ad.insert(ad.begin(), rank - ad.size(), 1);
    bd.insert(bd.begin(), rank - bd.size(), 1);
    ctx.set_output(0, allocate_for_overwrite(DataType::Float, g.out));
    Tensor& y = ctx.outputs()[0].tensor;
    kernels::batched_matmul(a.data<float>(), ad, b.data<float>(), bd, y.mutable_data<float>());
  }

 private:
  PackedB b_;
};

class FastGemm : public Kernel {
 public:
  // `blocked`: the blocked GEMM's kernel, for the runs the packed product does not take.
  FastGemm(PackedB b, const Tensor* c, std::function<void(KernelContext&)> blocked)
      : b_(std::move(b)), c_(c), blocked_(std::move(blocked)) {}
  bool keeps_copy_of_input(size_t i) const override { return i == 1 && b_.prepared; }
  void run(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    // The packed bias came from the constant C: a run must see the same C (or none when there was none).
    const bool same_c = c ? (c_ && c->bytes().data() == c_->bytes().data()) : !c_;
    if (a.dtype() != DataType::Float || a.dims().size() != 2 || !b_.matches(ctx.input(1)) || !same_c ||
        a.dims()[1] != b_.gemm->K())
      return blocked_(ctx);
    ctx.set_output(0, allocate_for_overwrite(DataType::Float, {a.dims()[0], b_.gemm->N()}));
    Tensor& y = ctx.outputs()[0].tensor;
    b_.gemm->run(a.data<float>(), a.dims()[0], y.mutable_data<float>());
  }

 private:
  PackedB b_;
  const Tensor* c_;
  std::function<void(KernelContext&)> blocked_;
};

// FusedMatMul's product on oneDNN: B and Bias packed at creation, Z added by the sum post-op, the activation by
// eltwise post-ops.
class PackedMatMulWithEpilogue : public MatMulWithEpilogue {
 public:
  PackedMatMulWithEpilogue(const KernelInit& init, std::vector<kernels::Eltwise> activation) {
    const Tensor* b = init.input_value(1);
    if (!b || b->dtype() != DataType::Float || b->dims().size() != 2) return;
    const int64_t N = b->dims()[1];
    std::vector<float> bias;
    if (has(init, 2)) {
      bias_ = init.input_value(2);
      if (!bias_ || bias_->dtype() != DataType::Float || bias_->dims() != Dims{N}) return;
      bias.assign(bias_->data<float>(), bias_->data<float>() + N);
    }
    kernels::Epilogue epilogue;
    epilogue.sum = sum_ = has(init, 3);
    epilogue.eltwise = std::move(activation);
    const bool has_epilogue = !epilogue.empty();
    b_ = prepared(pack_b(b, false, std::move(bias), 1.0f, std::move(epilogue)), init, false, has_epilogue);
    // Packed at creation, a run reads only the pack, provided it takes the fast path: Z's shape must be known to
    // be the product's too.
    if (b_.prepared && sum_) {
      const Type* a = init.input_types[0];
      const Type* z = init.input_types.size() > 3 ? init.input_types[3] : nullptr;
      std::optional<Dims> ad = static_dims(*a), zd = z && z->elem == DataType::Float ? static_dims(*z) : std::nullopt;
      if (!ad || !zd || ad->size() < 2) {
        b_.prepared = false;
      } else {
        ad->back() = N;
        b_.prepared = *ad == *zd;
      }
    }
  }

  bool packed() const { return b_.gemm != nullptr; }

  bool keeps_copy_of_input(size_t i) const override { return i == 1 && b_.prepared; }

  bool run(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const kernels::PackedGemm& gemm = *b_.gemm;
    // Empty products are the reference's (it handles every empty shape).
    if (a.dtype() != DataType::Float || a.dims().size() < 2 || a.dims().back() != gemm.K() || a.element_count() == 0 ||
        !b_.matches(ctx.input(1)) || ctx.has_input(3) != sum_)
      return false;
    const bool same_bias = ctx.has_input(2) ? (bias_ && ctx.input(2).bytes().data() == bias_->bytes().data()) : !bias_;
    if (!same_bias) return false;
    Dims out = a.dims();
    out.back() = gemm.N();
    if (sum_ && (ctx.input(3).dtype() != DataType::Float || ctx.input(3).dims() != out)) return false;
    // The sum post-op adds the product to what y holds: Z. A Z that dies here is y itself; otherwise y starts as
    // a copy of Z.
    Tensor* y = sum_ ? ctx.reuse_input(3, 0, DataType::Float, out) : nullptr;
    if (!y) {
      ctx.set_output(0, allocate_for_overwrite(DataType::Float, out));
      y = &ctx.outputs()[0].tensor;
      if (sum_) std::memcpy(y->mutable_data<char>(), ctx.input(3).bytes().data(), y->bytes().size());
    }
    gemm.run(a.data<float>(), static_cast<int64_t>(a.element_count()) / gemm.K(), y->mutable_data<float>());
    return true;
  }

 private:
  static bool has(const KernelInit& init, size_t i) { return init.node.inputs.size() > i && init.node.inputs[i]; }

  PackedB b_;
  const Tensor* bias_ = nullptr;
  bool sum_ = false;
};

std::unique_ptr<MatMulWithEpilogue> make_matmul_with_epilogue(const KernelInit& init,
                                                              std::vector<kernels::Eltwise> activation) {
  auto k = std::make_unique<PackedMatMulWithEpilogue>(init, std::move(activation));
  if (!k->packed()) return nullptr;
  return k;
}

std::unique_ptr<Kernel> make_unpacked_matmul(const KernelInit& init) {
  const nn::Loops loops = init.reference_only ? nn::Loops::Plain : nn::Loops::Blocked;
  return make_kernel([loops](KernelContext& ctx) { run_matmul(ctx, loops); });
}

// Gemm's beta * C as a per-column bias when C is constant float32 of shape [], [1], [N] or [1, N]; nullopt otherwise.
std::optional<std::vector<float>> gemm_bias(const Tensor* c, int64_t N, float beta) {
  if (!c) return std::vector<float>{};
  if (c->dtype() != DataType::Float) return std::nullopt;
  const Dims& d = c->dims();
  const int64_t n = static_cast<int64_t>(c->element_count());
  const bool row = (d.size() == 1 && (d[0] == N || d[0] == 1)) || (d.size() == 2 && d[0] == 1 && (d[1] == N || d[1] == 1)) ||
                   d.empty();
  if (!row) return std::nullopt;
  std::vector<float> bias(static_cast<size_t>(N));
  for (int64_t j = 0; j < N; ++j) bias[j] = beta * c->data<float>()[n == 1 ? 0 : j];
  return bias;
}

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

// MatMul with numpy semantics: 1-D operands are promoted to a row (A) / column (B) matrix, batch dims broadcast.
void rule_matmul(grad::Args& a) {
  const Dims &ad = a.in_dims(0), &bd = a.in_dims(1);
  if (ad.empty() || bd.empty()) fail("MatMul operands must have rank >= 1");
  const int64_t M = ad.size() > 1 ? ad[ad.size() - 2] : 1, K = ad.back();
  const int64_t N = bd.size() > 1 ? bd.back() : 1;
  const Dims ab = ad.size() > 2 ? Dims(ad.begin(), ad.end() - 2) : Dims{};
  const Dims bb = bd.size() > 2 ? Dims(bd.begin(), bd.end() - 2) : Dims{};
  const Dims batch = broadcast_dims(ab, bb);
  const std::vector<double> A = a.x(0), B = a.x(1);
  const grad::Grad g = a.dy();
  grad::Grad ga = grad::zeros(ad), gb = grad::zeros(bd);
  for_each_broadcast(batch, {ab, bb}, [&](int64_t bi, const Dims& off) {
    const size_t ao = static_cast<size_t>(off[0] * M * K), bo = static_cast<size_t>(off[1] * K * N),
                 yo = static_cast<size_t>(bi * M * N);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const double gy = g.v[yo + static_cast<size_t>(m * N + n)];
        if (gy == 0) continue;
        for (int64_t k = 0; k < K; ++k) {
          ga.v[ao + static_cast<size_t>(m * K + k)] += gy * B[bo + static_cast<size_t>(k * N + n)];
          gb.v[bo + static_cast<size_t>(k * N + n)] += gy * A[ao + static_cast<size_t>(m * K + k)];
        }
      }
  });
  a.set(0, std::move(ga));
  a.set(1, std::move(gb));
}

// Gemm: Y = alpha * op(A) op(B) + beta * C, op transposing when transA / transB.
void rule_gemm(grad::Args& a) {
  const Dims &ad = a.in_dims(0), &bd = a.in_dims(1);
  if (ad.size() != 2 || bd.size() != 2) fail("Gemm operands must be 2-D");
  const bool ta = a.attrs.get_int("transA", 0) != 0, tb = a.attrs.get_int("transB", 0) != 0;
  const double alpha = a.attrs.get_float("alpha", 1.0f), beta = a.attrs.get_float("beta", 1.0f);
  const int64_t M = ta ? ad[1] : ad[0], K = ta ? ad[0] : ad[1], N = tb ? bd[0] : bd[1];
  auto ai = [&](int64_t m, int64_t k) { return static_cast<size_t>(ta ? k * M + m : m * K + k); };
  auto bi = [&](int64_t k, int64_t n) { return static_cast<size_t>(tb ? n * K + k : k * N + n); };
  const std::vector<double> A = a.x(0), B = a.x(1);
  const grad::Grad g = a.dy();
  grad::Grad ga = grad::zeros(ad), gb = grad::zeros(bd);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double gy = alpha * g.v[static_cast<size_t>(m * N + n)];
      if (gy == 0) continue;
      for (int64_t k = 0; k < K; ++k) {
        ga.v[ai(m, k)] += gy * B[bi(k, n)];
        gb.v[bi(k, n)] += gy * A[ai(m, k)];
      }
    }
  a.set(0, std::move(ga));
  a.set(1, std::move(gb));
  if (a.wants(2)) {
    grad::Grad gc = grad::sum_to(g, a.in_dims(2));
    for (double& v : gc.v) v *= beta;
    a.set(2, std::move(gc));
  }
}

}  // namespace

void register_matmul(Registry& r) {
  using D = DataType;
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> fi = {D::Float16, D::Float, D::Double, D::Int32, D::Int64, D::UInt32, D::UInt64};
  std::vector<DataType> fib = fi;
  fib.push_back(D::BFloat16);

  auto mm_kernel = [](const KernelInit& init) -> std::unique_ptr<Kernel> {
    if (init.reference_only) return make_kernel([](KernelContext& ctx) { run_matmul(ctx, nn::Loops::Plain); });
    return std::make_unique<FastMatMul>(prepared(pack_b(init.input_value(1), false, {}, 1.0f), init, false));
  };
  add_versions(r, "", "MatMul", {1}, {{{0, 1}, f}}, infer_matmul, mm_kernel);
  add_versions(r, "", "MatMul", {9}, {{{0, 1}, fi}}, infer_matmul, mm_kernel);
  add_versions(r, "", "MatMul", {13}, {{{0, 1}, fib}}, infer_matmul, mm_kernel);

  auto gemm_kernel = [](const KernelInit& init) -> std::unique_ptr<Kernel> {
    const float alpha = init.attrs.get_float("alpha", 1.0f), beta = init.attrs.get_float("beta", 1.0f);
    const bool ta = init.attrs.get_int("transA", 0) != 0, tb = init.attrs.get_int("transB", 0) != 0;
    const bool strict = init.opset < 7 && init.attrs.get_int("broadcast", 0) == 0;
    const bool c_optional = init.opset >= 11;
    // onyx's own loops: the reference's, or the blocked GEMM for what oneDNN's path does not take.
    const nn::Loops loops = init.reference_only ? nn::Loops::Plain : nn::Loops::Blocked;
    auto own = [=](KernelContext& ctx) {
      if (!c_optional && !ctx.has_input(2)) ctx.error("input C is required before opset 11");
      run_gemm(ctx, loops, alpha, beta, ta, tb, strict);
    };
    const Tensor* b = init.input_value(1);
    const Tensor* c = init.node.inputs.size() > 2 ? init.input_value(2) : nullptr;
    const bool c_given = init.node.inputs.size() > 2 && init.node.inputs[2];
    if (init.reference_only || ta || !b || b->dims().size() != 2 || (c_given && !c) || (!c_optional && !c_given))
      return make_kernel(own);
    auto bias = gemm_bias(c, b->dims()[tb ? 0 : 1], beta);
    if (!bias) return make_kernel(own);
    return std::make_unique<FastGemm>(prepared(pack_b(b, tb, std::move(*bias), alpha), init, true), c, own);
  };
  add_versions(r, "", "Gemm", {1, 6, 7}, {{{0, 1, 2}, f}}, infer_gemm, gemm_kernel);
  add_versions(r, "", "Gemm", {9, 11}, {{{0, 1, 2}, fi}}, infer_gemm, gemm_kernel);
  add_versions(r, "", "Gemm", {13}, {{{0, 1, 2}, fib}}, infer_gemm, gemm_kernel);

  r.set_gradient("", "MatMul", rule_matmul);
  r.set_gradient("", "Gemm", rule_gemm);
  r.set_fast_kernels("", "MatMul",
                     {"oneDNN matmul for float32 (a constant B packed once at creation); one-row products stream B",
                      kBlockedMatMulKernel});
  r.set_fast_kernels("", "Gemm",
                     {"oneDNN matmul for float32 with a constant 2-D B (packed once) and a constant or absent C",
                      kBlockedMatMulKernel});
}

}  // namespace onyx::ops
