// The integer fast paths (MatMulInteger, ConvInteger through kernels::int8_gemm) against their reference kernels on
// random shapes, element types and zero points: int32 results must be identical.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/int8_gemm.hpp"
#include "kernels/onednn_log.hpp"
#include "kernels/reference_compare.hpp"
#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::compare_with_reference;
using testing::OneNode;
using testing::onednn_log;

Tensor random_8bit(std::mt19937& rng, DataType dt, std::vector<int64_t> dims) {
  Tensor t = Tensor::allocate(dt, std::move(dims));
  std::uniform_int_distribution<int> u(0, 255);
  uint8_t* p = t.mutable_data<uint8_t>();
  for (uint64_t i = 0; i < t.element_count(); ++i) p[i] = static_cast<uint8_t>(u(rng));
  return t;
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

const char* name_of(DataType dt) { return dt == DataType::UInt8 ? "u8" : "s8"; }

TEST(Int8Gemm, ExtremeValuesAccumulateExactly) {
  // 255 * 127 products summed over a long K: the sums of VNNI-less 16-bit pairs would saturate.
  const int64_t M = 3, N = 5, K = 1000;
  std::vector<uint8_t> a(static_cast<size_t>(M * K), 255);
  std::vector<int8_t> b(static_cast<size_t>(K * N), 127);
  std::vector<int32_t> c(static_cast<size_t>(M * N));
  kernels::int8_gemm(false, a.data(), 0, b.data(), -128, M, N, K, c.data());
  for (int32_t v : c) EXPECT_EQ(v, 255 * 255 * K);
  std::vector<int8_t> sa(static_cast<size_t>(M * K), -128);
  kernels::int8_gemm(true, sa.data(), 127, b.data(), 0, M, N, K, c.data());
  for (int32_t v : c) EXPECT_EQ(v, -255 * 127 * K);
}

TEST(Int8FastVsReference, MatMulIntegerRandomShapesTypesAndZeroPoints) {
  std::mt19937 rng(7);
  const std::vector<std::vector<int64_t>> a_shapes = {{1, 64}, {7, 33}, {2, 5, 48}, {1, 1, 300}, {16, 256}};
  int cases = 0;
  for (const auto& ad : a_shapes)
    for (DataType at : {DataType::UInt8, DataType::Int8})
      for (DataType bt : {DataType::UInt8, DataType::Int8})
        for (int zp_kind = 0; zp_kind < 4; ++zp_kind)  // none, scalar, B per column, both scalar
          for (bool constant_b : {true, false}) {
            const int64_t K = ad.back(), N = 1 + static_cast<int64_t>(rng() % 40);
            OneNode node("MatMulInteger", 10);
            node.input("A", random_8bit(rng, at, ad));
            Tensor b = random_8bit(rng, bt, {K, N});
            if (constant_b) node.constant_input("B", b);
            else node.input("B", b);
            if (zp_kind == 0) {
              // no zero points
            } else if (zp_kind == 1) {
              node.omitted_input().input("b_zero_point", random_8bit(rng, bt, {}));
            } else if (zp_kind == 2) {
              node.input("a_zero_point", random_8bit(rng, at, {})).constant_input("b_zero_point", random_8bit(rng, bt, {N}));
            } else {
              node.input("a_zero_point", random_8bit(rng, at, {1})).input("b_zero_point", random_8bit(rng, bt, {1}));
            }
            compare_with_reference(node, cat("MatMulInteger A ", name_of(at), dims_text(ad), " B ",
                                             name_of(bt), " [", K, ",", N, "] zero points ", zp_kind,
                                             constant_b ? " constant B" : " fed B"),
                                   0);
            ++cases;
          }
  EXPECT_EQ(cases, 5 * 2 * 2 * 4 * 2);
}

TEST(Int8FastVsReference, MatMulIntegerShapesLeftToTheReference) {
  std::mt19937 rng(8);
  // 1-D operands, batched B and a per-row a_zero_point take the reference path and still agree.
  compare_with_reference(OneNode("MatMulInteger", 10)
                             .input("A", random_8bit(rng, DataType::UInt8, {6}))
                             .input("B", random_8bit(rng, DataType::Int8, {6, 3})),
                         "1-D A", 0);
  compare_with_reference(OneNode("MatMulInteger", 10)
                             .input("A", random_8bit(rng, DataType::UInt8, {2, 4, 6}))
                             .input("B", random_8bit(rng, DataType::Int8, {2, 6, 3})),
                         "batched B", 0);
  compare_with_reference(OneNode("MatMulInteger", 10)
                             .input("A", random_8bit(rng, DataType::UInt8, {4, 6}))
                             .input("B", random_8bit(rng, DataType::UInt8, {6, 3}))
                             .input("a_zero_point", random_8bit(rng, DataType::UInt8, {4})),
                         "per-row a_zero_point", 0);
}

TEST(Int8Gemm, PackedExtremeValuesAccumulateExactly) {
  // The packed kernel's products at the extremes, over a K that is no multiple of 4, with per-column zero points
  // and a float epilogue.
  const int64_t M = 7, N = 37, K = 1001;
  std::vector<int8_t> b(static_cast<size_t>(K * N), 127);
  kernels::PackedInt8 packed;
  kernels::pack_int8(b.data(), K, N, packed);
  std::vector<int32_t> zb(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) zb[static_cast<size_t>(n)] = n % 2 ? -128 : 0;
  std::vector<int32_t> c(static_cast<size_t>(M * N));
  kernels::Int8Output out;
  out.c = c.data();
  out.ldc = N;
  std::vector<uint8_t> a(static_cast<size_t>(M * K), 255);
  kernels::int8_gemm_packed(false, a.data(), M, 0, packed, zb.data(), N, out);
  for (int64_t i = 0; i < M * N; ++i) EXPECT_EQ(c[static_cast<size_t>(i)], (i % N) % 2 ? 255 * 255 * K : 255 * 127 * K);
  std::vector<int8_t> sa(static_cast<size_t>(M * K), -128);
  kernels::int8_gemm_packed(true, sa.data(), M, 127, packed, zb.data(), N, out);
  for (int64_t i = 0; i < M * N; ++i) EXPECT_EQ(c[static_cast<size_t>(i)], (i % N) % 2 ? -255 * 255 * K : -255 * 127 * K);
  std::vector<float> y(static_cast<size_t>(M * N)), bias(static_cast<size_t>(N), 0.25f);
  const float scale = 0.5f;
  kernels::Int8Output fo;
  fo.y = y.data();
  fo.ldc = N;
  fo.scale = &scale;
  fo.bias = bias.data();
  kernels::int8_gemm_packed(true, sa.data(), M, 127, packed, zb.data(), N, fo);
  for (int64_t i = 0; i < M * N; ++i)
    EXPECT_EQ(y[static_cast<size_t>(i)], static_cast<float>(c[static_cast<size_t>(i)]) * 0.5f + 0.25f);
}

Tensor random_floats(std::mt19937& rng, std::vector<int64_t> dims, float lo, float hi) {
  Tensor t = Tensor::allocate(DataType::Float, std::move(dims));
  float* p = t.mutable_data<float>();
  for (uint64_t i = 0; i < t.element_count(); ++i) p[i] = std::uniform_real_distribution<float>(lo, hi)(rng);
  return t;
}

// ai.onyx MatMulIntegerToFloat: the packed kernel's float epilogue rounds as the reference's Cast, Mul and Add.
TEST(Int8FastVsReference, MatMulIntegerToFloat) {
  std::mt19937 rng(21);
  const std::vector<std::vector<int64_t>> a_shapes = {{1, 288}, {40, 288}, {2, 13, 97}, {7, 1152}};
  int cases = 0;
  for (const auto& ad : a_shapes)
    for (DataType at : {DataType::UInt8, DataType::Int8})
      for (DataType bt : {DataType::UInt8, DataType::Int8})
        for (int form = 0; form < 3; ++form) {  // scalar scale; per-column scale and bias; [1, N] scale, fed B
          const int64_t K = ad.back(), N = 1 + static_cast<int64_t>(rng() % 150);
          OneNode node("MatMulIntegerToFloat", 1, "ai.onyx");
          node.input("A", random_8bit(rng, at, ad));
          if (form == 2) node.input("B", random_8bit(rng, bt, {K, N}));
          else node.constant_input("B", random_8bit(rng, bt, {K, N}));
          node.input("a_zero_point", random_8bit(rng, at, {}));
          node.constant_input("b_zero_point", random_8bit(rng, bt, form == 1 ? std::vector<int64_t>{N} : std::vector<int64_t>{}));
          node.input("scale", random_floats(rng, form == 0 ? std::vector<int64_t>{} : form == 1 ? std::vector<int64_t>{N} : std::vector<int64_t>{1, N}, 1e-4f, 1e-2f));
          if (form == 1) node.constant_input("bias", random_floats(rng, {N}, -1, 1));
          compare_with_reference(node, cat("MatMulIntegerToFloat A ", name_of(at), dims_text(ad), " B ", name_of(bt), " [", K, ",", N, "] form ", form), 0);
          ++cases;
        }
  EXPECT_EQ(cases, 4 * 2 * 2 * 3);
}

// QLinearMatMul on the packed kernel and a requantization against the reference: the same bytes.
TEST(Int8FastVsReference, QLinearMatMulRandomShapesTypesAndScales) {
  std::mt19937 rng(22);
  const std::vector<std::vector<int64_t>> a_shapes = {{1, 64}, {9, 33}, {2, 5, 128}};
  int cases = 0;
  for (const auto& ad : a_shapes)
    for (DataType at : {DataType::UInt8, DataType::Int8})
      for (DataType bt : {DataType::UInt8, DataType::Int8})
        for (bool per_column : {false, true}) {
          const int64_t K = ad.back(), N = 1 + static_cast<int64_t>(rng() % 90);
          const DataType yt = per_column ? at : bt;
          const std::vector<int64_t> bdims = per_column ? std::vector<int64_t>{N} : std::vector<int64_t>{};
          OneNode node("QLinearMatMul", 10);
          node.input("a", random_8bit(rng, at, ad))
              .input("a_scale", random_floats(rng, {}, 0.01f, 0.05f))
              .input("a_zero_point", random_8bit(rng, at, {}))
              .constant_input("b", random_8bit(rng, bt, {K, N}))
              .constant_input("b_scale", random_floats(rng, bdims, 0.001f, 0.01f))
              .constant_input("b_zero_point", random_8bit(rng, bt, bdims))
              .input("y_scale", random_floats(rng, {}, 0.05f, 0.2f))
              .input("y_zero_point", random_8bit(rng, yt, {}));
          compare_with_reference(node, cat("QLinearMatMul a ", name_of(at), dims_text(ad), " b ", name_of(bt), " [", K, ",", N, "]", per_column ? " per column" : ""), 0);
          ++cases;
        }
  EXPECT_EQ(cases, 3 * 2 * 2 * 2);
}

// QLinearConv on the ConvInteger fast path and a requantization against the reference: the same bytes.
TEST(Int8FastVsReference, QLinearConvRandomShapesTypesAndScales) {
  std::mt19937 rng(23);
  struct Case {
    std::vector<int64_t> x, w, pads, strides;
    int64_t group;
  };
  const std::vector<Case> shapes = {
      {{1, 3, 9, 11}, {4, 3, 3, 3}, {1, 1, 1, 1}, {1, 1}, 1},
      {{2, 8, 6, 6}, {8, 1, 3, 3}, {1, 1, 1, 1}, {2, 2}, 8},
      {{1, 16, 5, 7}, {12, 16, 1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
  };
  int cases = 0;
  for (const Case& c : shapes)
    for (DataType xt : {DataType::UInt8, DataType::Int8})
      for (DataType wt : {DataType::UInt8, DataType::Int8})
        for (bool per_channel : {false, true}) {
          const std::vector<int64_t> wdims = per_channel ? std::vector<int64_t>{c.w[0]} : std::vector<int64_t>{};
          OneNode node("QLinearConv", 10);
          node.input("x", random_8bit(rng, xt, c.x))
              .input("x_scale", random_floats(rng, {}, 0.01f, 0.05f))
              .input("x_zero_point", random_8bit(rng, xt, {}))
              .constant_input("w", random_8bit(rng, wt, c.w))
              .constant_input("w_scale", random_floats(rng, wdims, 0.001f, 0.01f))
              .constant_input("w_zero_point", random_8bit(rng, wt, wdims))
              .input("y_scale", random_floats(rng, {}, 0.1f, 0.5f))
              .input("y_zero_point", random_8bit(rng, xt, {}));
          if (per_channel) {
            Tensor bias = Tensor::allocate(DataType::Int32, {c.w[0]});
            for (int64_t i = 0; i < c.w[0]; ++i) bias.mutable_data<int32_t>()[i] = static_cast<int32_t>(rng() % 20001) - 10000;
            node.constant_input("B", bias);
          }
          node.attr_ints("pads", c.pads).attr_ints("strides", c.strides).attr_int("group", c.group);
          compare_with_reference(node, cat("QLinearConv x ", name_of(xt), dims_text(c.x), " w ", name_of(wt), dims_text(c.w), per_channel ? " per channel" : ""), 0);
          ++cases;
        }
  EXPECT_EQ(cases, 3 * 2 * 2 * 2);
}

// QLinearConv with constant int8 weights (zero point 0), scales, zero points and bias, as static quantization writes
// it, runs oneDNN's int8 convolution with the requantization inside (QLinearConv on NCHW tensors, converted around
// the kernel; ai.onyx NhwcQLinearConv on NHWC ones); it rounds scale * acc in float32 where the reference rounds in
// double, so an element may land one step off where the product falls within float32's rounding of a half-way
// point: at most one step, and rarely.
TEST(Int8FastVsReference, QLinearConvOnOneDnnMatchesReferenceWithinOneStep) {
  std::mt19937 rng(31);
  struct Case {
    std::vector<int64_t> x, w, pads, strides, dilations;
    int64_t group;
  };
  const std::vector<Case> shapes = {
      {{1, 3, 17, 19}, {16, 3, 7, 7}, {3, 3, 3, 3}, {2, 2}, {1, 1}, 1},
      {{2, 32, 9, 11}, {24, 32, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1},
      {{1, 16, 8, 8}, {16, 1, 3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 16},
      {{1, 8, 10, 10}, {12, 4, 3, 3}, {0, 1, 2, 0}, {1, 2}, {2, 1}, 2},
      {{1, 64, 5, 7}, {40, 64, 1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1},
  };
  int cases = 0;
  int64_t elements = 0, off_by_one = 0;
  for (const Case& c : shapes)
    for (DataType xt : {DataType::UInt8, DataType::Int8})
      for (DataType yt : {DataType::UInt8, DataType::Int8})
        for (bool per_channel : {false, true}) {
          const bool nhwc = (cases % 3) == 1;  // a third of the cases as NhwcQLinearConv
          const int64_t M = c.w[0];
          const std::vector<int64_t> wdims = per_channel ? std::vector<int64_t>{M} : std::vector<int64_t>{};
          Tensor w = random_8bit(rng, DataType::Int8, c.w);
          OneNode node(nhwc ? "NhwcQLinearConv" : "QLinearConv", nhwc ? 1 : 10, nhwc ? "ai.onyx" : "");
          node.input("x", random_8bit(rng, xt, nhwc ? std::vector<int64_t>{c.x[0], c.x[2], c.x[3], c.x[1]} : c.x))
              .constant_input("x_scale", random_floats(rng, {}, 0.01f, 0.05f))
              .constant_input("x_zero_point", random_8bit(rng, xt, {}))
              .constant_input("w", w)
              .constant_input("w_scale", random_floats(rng, wdims, 0.001f, 0.01f))
              .constant_input("w_zero_point", Tensor::allocate(DataType::Int8, wdims))
              .constant_input("y_scale", random_floats(rng, {}, 0.05f, 0.2f))
              .constant_input("y_zero_point", random_8bit(rng, yt, {}));
          if (per_channel) {
            Tensor bias = Tensor::allocate(DataType::Int32, {M});
            for (int64_t i = 0; i < M; ++i) bias.mutable_data<int32_t>()[i] = static_cast<int32_t>(rng() % 20001) - 10000;
            node.constant_input("B", bias);
          }
          node.attr_ints("pads", c.pads).attr_ints("strides", c.strides).attr_ints("dilations", c.dilations)
              .attr_int("group", c.group);
          const std::string what = cat(nhwc ? "NhwcQLinearConv" : "QLinearConv", " x ", name_of(xt), dims_text(c.x), " w", dims_text(c.w), " y ",
                                       name_of(yt), per_channel ? " per channel" : "");
          OneNode ref = node;
          std::vector<Datum> fast;
          const std::string log = onednn_log([&] { fast = node.run(); });
          EXPECT_NE(log.find("exec,cpu,convolution"), std::string::npos) << what << ": oneDNN's convolution did not run";
          const std::vector<Datum> want = ref.options(testing::reference_only()).run();
          const Tensor& f = fast[0].tensor;
          const Tensor& r = want[0].tensor;
          ASSERT_EQ(f.dtype(), yt) << what;
          ASSERT_EQ(f.dims(), r.dims()) << what;
          for (uint64_t i = 0; i < r.element_count(); ++i) {
            const int a = yt == DataType::Int8 ? f.data<int8_t>()[i] : f.data<uint8_t>()[i];
            const int b = yt == DataType::Int8 ? r.data<int8_t>()[i] : r.data<uint8_t>()[i];
            ASSERT_LE(std::abs(a - b), 1) << what << " element " << i;
            off_by_one += a != b;
          }
          elements += static_cast<int64_t>(r.element_count());
          ++cases;
        }
  EXPECT_EQ(cases, 5 * 2 * 2 * 2);
  EXPECT_LE(off_by_one * 1000, elements) << off_by_one << " of " << elements << " elements one step off";
}

// ai.onyx QLinearAdd: the one-pass kernel against the element-by-element reference, every signedness of A, B and C,
// with and without the Relu, lengths around the vector width: the same bytes.
TEST(Int8FastVsReference, QLinearAddRandomTypesAndScales) {
  std::mt19937 rng(41);
  const std::vector<std::vector<int64_t>> shapes = {{1, 8, 5, 7}, {3, 17}, {1, 64, 33, 31}, {16}};
  int cases = 0;
  for (const auto& dims : shapes)
    for (DataType at : {DataType::UInt8, DataType::Int8})
      for (DataType bt : {DataType::UInt8, DataType::Int8})
        for (DataType ct : {DataType::UInt8, DataType::Int8})
          for (int64_t relu : {0, 1}) {
            OneNode node("QLinearAdd", 1, "ai.onyx");
            node.input("A", random_8bit(rng, at, dims))
                .input("A_scale", random_floats(rng, {}, 0.01f, 0.1f))
                .input("A_zero_point", random_8bit(rng, at, {}))
                .input("B", random_8bit(rng, bt, dims))
                .input("B_scale", random_floats(rng, {}, 0.01f, 0.1f))
                .input("B_zero_point", random_8bit(rng, bt, {}))
                .input("C_scale", random_floats(rng, {}, 0.02f, 0.2f))
                .input("C_zero_point", random_8bit(rng, ct, {}))
                .attr_int("relu", relu);
            compare_with_reference(node, cat("QLinearAdd ", name_of(at), name_of(bt), name_of(ct), dims_text(dims), relu ? " relu" : ""), 0);
            ++cases;
          }
  EXPECT_EQ(cases, 4 * 2 * 2 * 2 * 2);
}

TEST(Int8FastVsReference, ConvIntegerRandomShapesTypesAndZeroPoints) {
  std::mt19937 rng(9);
  struct Case {
    std::vector<int64_t> x, w;
    std::vector<int64_t> pads, strides, dilations;
    int64_t group;
  };
  const std::vector<Case> shapes = {
      {{1, 3, 9, 11}, {4, 3, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1},
      {{2, 4, 8, 8}, {6, 2, 3, 3}, {0, 1, 2, 0}, {2, 1}, {1, 2}, 2},
      {{1, 8, 5, 5}, {8, 1, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 8},
      {{1, 16, 6, 7}, {5, 16, 1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1},
      {{1, 2, 40}, {3, 2, 5}, {2, 2}, {3}, {1}, 1},
      {{1, 3, 70, 70}, {2, 3, 7, 7}, {3, 3, 3, 3}, {2, 2}, {1, 1}, 1},
      // pads wider than the kernel (whole lines of padding) and a stride on the last axis
      {{1, 2, 6, 9}, {2, 2, 2, 2}, {3, 4, 3, 4}, {2, 3}, {1, 1}, 1},
      {{1, 2, 5, 6, 7}, {3, 2, 2, 3, 3}, {1, 0, 2, 1, 1, 0}, {1, 2, 3}, {2, 1, 1}, 1},
      // blocks of output positions shorter than a line and starting inside one
      {{1, 600, 3, 2000}, {1, 600, 1, 3}, {0, 1, 0, 1}, {1, 1}, {1, 1}, 1},
  };
  int cases = 0;
  for (const Case& c : shapes)
    for (DataType xt : {DataType::UInt8, DataType::Int8})
      for (DataType wt : {DataType::UInt8, DataType::Int8})
        for (int zp_kind = 0; zp_kind < 3; ++zp_kind) {  // none, scalar, W per output channel
          OneNode node("ConvInteger", 10);
          node.input("x", random_8bit(rng, xt, c.x)).constant_input("w", random_8bit(rng, wt, c.w));
          if (zp_kind == 1) node.input("x_zero_point", random_8bit(rng, xt, {})).input("w_zero_point", random_8bit(rng, wt, {}));
          if (zp_kind == 2) node.input("x_zero_point", random_8bit(rng, xt, {})).input("w_zero_point", random_8bit(rng, wt, {c.w[0]}));
          node.attr_ints("pads", c.pads).attr_ints("strides", c.strides).attr_ints("dilations", c.dilations).attr_int("group", c.group);
          compare_with_reference(node, cat("ConvInteger x ", name_of(xt), dims_text(c.x), " w ", name_of(wt),
                                           dims_text(c.w), " group ", c.group, " zero points ", zp_kind),
                                 0);
          ++cases;
        }
  EXPECT_EQ(cases, static_cast<int>(shapes.size()) * 2 * 2 * 3);
  // auto_pad resolves as in the reference.
  compare_with_reference(OneNode("ConvInteger", 10)
                             .input("x", random_8bit(rng, DataType::UInt8, {1, 2, 7, 6}))
                             .input("w", random_8bit(rng, DataType::UInt8, {3, 2, 3, 2}))
                             .attr_string("auto_pad", "SAME_UPPER")
                             .attr_ints("strides", {2, 2}),
                         "ConvInteger SAME_UPPER", 0);
}

// DynamicQuantizeLinear's vectorized loops against the reference: the same bytes, scale and zero point, for ranges
// on either side of zero, values that quantize to exact halves, NaN among the values, and an all-zero input.
TEST(Int8FastVsReference, DynamicQuantizeLinear) {
  std::mt19937 rng(14);
  std::vector<std::vector<float>> inputs;
  for (auto [lo, hi] : std::vector<std::pair<float, float>>{{-1, 1}, {0.5f, 3}, {-7, -0.25f}, {-1e-3f, 2e4f}}) {
    std::vector<float> v(1000);
    for (float& x : v) x = std::uniform_real_distribution<float>(lo, hi)(rng);
    inputs.push_back(v);
  }
  std::vector<float> halves;  // range [-127.5, 127.5]: scale 1, quotients at exact halves
  for (int i = -255; i <= 255; ++i) halves.push_back(0.5f * static_cast<float>(i));
  inputs.push_back(halves);
  std::vector<float> with_nan = inputs[0];
  with_nan[3] = NAN;
  with_nan[500] = NAN;
  inputs.push_back(with_nan);
  inputs.push_back(std::vector<float>(64, 0.0f));
  for (size_t k = 0; k < inputs.size(); ++k) {
    OneNode n("DynamicQuantizeLinear", 11);
    n.input("x", testing::f32({static_cast<int64_t>(inputs[k].size())}, inputs[k])).outputs(3);
    compare_with_reference(n, "DynamicQuantizeLinear input " + std::to_string(k), 0);
  }
}

// QuantizeLinear of float32 to uint8 / int8 in one pass against the reference: per tensor and per axis, with and
// without a zero point, quotients at exact halves, beyond the range on both sides, NaN and infinities; a blocked scale
// goes to the reference.
TEST(Int8FastVsReference, QuantizeLinear) {
  std::mt19937 rng(17);
  const std::vector<int64_t> dims = {3, 5, 37};
  auto values = [&]() {
    Tensor t = random_floats(rng, dims, -40, 40);
    float* p = t.mutable_data<float>();
    p[0] = NAN;
    p[1] = INFINITY;
    p[2] = -INFINITY;
    p[3] = 1e30f;
    for (int i = 4; i < 60; ++i) p[i] = 0.5f * static_cast<float>(i - 30);  // halves with scale 1
    return t;
  };
  for (int v : {13, 21})
    for (DataType dt : {DataType::UInt8, DataType::Int8})
      for (int64_t axis : {int64_t{-4}, int64_t{0}, int64_t{2}, int64_t{-2}})  // -4: per tensor
        for (bool with_zp : {false, true}) {
          if (!with_zp && dt == DataType::Int8 && v < 21) continue;  // without a zero point the output is uint8
          const int64_t c = axis == -4 ? 1 : dims[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
          std::vector<int64_t> sd = c == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{c};
          std::vector<float> sv(static_cast<size_t>(c));
          for (float& x : sv) x = std::uniform_real_distribution<float>(0.05f, 0.5f)(rng);
          sv[0] = 1.0f;
          OneNode n("QuantizeLinear", v);
          n.input("x", values()).input("y_scale", testing::f32(sd, sv));
          if (with_zp) n.input("y_zero_point", random_8bit(rng, dt, sd));
          else if (dt == DataType::Int8) n.attr_int("output_dtype", static_cast<int64_t>(DataType::Int8));
          if (axis != -4) n.attr_int("axis", axis);
          compare_with_reference(n, cat("QuantizeLinear-", v, " ", name_of(dt), " axis ", axis, with_zp ? " zp" : ""), 0);
        }
  OneNode blocked("QuantizeLinear", 21);
  blocked.input("x", random_floats(rng, {4, 6}, -3, 3)).input("y_scale", testing::f32({4, 2}, std::vector<float>(8, 0.5f)));
  blocked.attr_int("axis", 1).attr_int("block_size", 3);
  compare_with_reference(blocked, "QuantizeLinear blocked", 0);
}

// DequantizeLinear of uint8 / int8 to float32 in one pass against the reference: per tensor and per axis, with and
// without a zero point; a blocked scale goes to the reference.
TEST(Int8FastVsReference, DequantizeLinear) {
  std::mt19937 rng(16);
  auto scales = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = std::uniform_real_distribution<float>(1e-3f, 0.2f)(rng);
    return testing::f32(n == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{n}, v);
  };
  const std::vector<int64_t> dims = {3, 5, 7};
  for (DataType dt : {DataType::UInt8, DataType::Int8})
    for (int64_t axis : {int64_t{-4}, int64_t{0}, int64_t{1}, int64_t{-1}})  // -4: per tensor
      for (bool with_zp : {false, true}) {
        const int64_t c = axis == -4 ? 1 : dims[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
        OneNode n("DequantizeLinear", 21);
        n.input("x", random_8bit(rng, dt, dims)).input("scale", scales(c));
        if (with_zp) n.input("zero_point", random_8bit(rng, dt, c == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{c}));
        if (axis != -4) n.attr_int("axis", axis);
        compare_with_reference(n, "DequantizeLinear axis " + std::to_string(axis) + (with_zp ? " zp" : ""), 0);
      }
  OneNode blocked("DequantizeLinear", 21);
  blocked.input("x", random_8bit(rng, DataType::Int8, {4, 6})).input("scale", testing::f32({4, 2}, std::vector<float>(8, 0.5f)));
  blocked.attr_int("axis", 1).attr_int("block_size", 3);
  compare_with_reference(blocked, "DequantizeLinear blocked", 0);
}

// Cast of int32 / uint8 / int8 to float32 (the conversions after integer products): one rounding, as the exact
// conversion through double.
TEST(Int8FastVsReference, IntegerToFloatCasts) {
  std::mt19937 rng(15);
  std::vector<int32_t> v(4096);
  for (int32_t& x : v) x = static_cast<int32_t>(rng());
  v[0] = INT32_MIN;
  v[1] = INT32_MAX;
  v[2] = (1 << 24) + 1;  // the first integer float cannot hold
  const std::vector<Datum> out = OneNode("Cast", 21).input("x", testing::make_tensor<int32_t>(DataType::Int32, {4096}, v)).attr_int("to", 1).run();
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(out[0].tensor.data<float>()[i], static_cast<float>(static_cast<double>(v[i]))) << v[i];
  for (DataType dt : {DataType::UInt8, DataType::Int8}) {
    const Tensor t = random_8bit(rng, dt, {300});
    const std::vector<Datum> o = OneNode("Cast", 21).input("x", t).attr_int("to", 1).run();
    for (int64_t i = 0; i < 300; ++i) {
      const double want = dt == DataType::UInt8 ? t.data<uint8_t>()[i] : t.data<int8_t>()[i];
      ASSERT_EQ(o[0].tensor.data<float>()[i], static_cast<float>(want));
    }
  }
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
