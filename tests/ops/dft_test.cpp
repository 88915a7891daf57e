#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"
#include "ir/scalar.hpp"
#include "ops/signal/fft.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;
using testing::f32;
using testing::i64;

using testing::make_tensor;
using testing::OneNode;
using testing::values_of;
using D = DataType;

// Naive DFT of a real signal, for reference.
std::vector<std::complex<double>> naive(const std::vector<double>& x, bool inverse = false) {
  const size_t n = x.size();
  std::vector<std::complex<double>> y(n);
  for (size_t k = 0; k < n; ++k)
    for (size_t t = 0; t < n; ++t) y[k] += x[t] * std::polar(1.0, (inverse ? 2 : -2) * M_PI * double(k * t) / double(n));
  return y;
}

TEST(Fft, MatchesNaiveSumForPow2ShortAndBluesteinLengths) {
  for (size_t n : {1, 2, 8, 12, 64, 97, 200, 1000, 257, 262}) {
    std::vector<double> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = std::sin(0.3 * double(i)) + double(i % 7);
    std::vector<std::complex<double>> a(x.begin(), x.end());
    ops::signal::Fft(n).run(a, false);
    auto want = naive(x);
    for (size_t k = 0; k < n; ++k) EXPECT_NEAR(std::abs(a[k] - want[k]), 0.0, 1e-8 * double(n)) << n << " " << k;
    if (n != 257 && n != 262) {
      EXPECT_EQ(a[0].imag(), 0.0) << n;  // DC of a real signal stays exactly real (not with Bluestein)
    }
  }
}

TEST(DFT, RealInputAlongAxis1_Opset17) {
  // x: [1, 4, 1] = 0,1,2,3 -> [6, -2+2i, -2, -2-2i]
  auto out = OneNode("DFT", 17).input("x", f32({1, 4, 1}, {0, 1, 2, 3})).run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 4, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{6, 0, -2, 2, -2, 0, -2, -2}));
}

TEST(DFT, OnesidedAndDftLengthPadding_Opset17) {
  auto out = OneNode("DFT", 17)
                 .input("x", f32({1, 3, 1}, {1, 1, 1}))
                 .input("len", i64({}, {4}))
                 .attr_int("onesided", 1)
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{3, 0, 0, -1, 1, 0}));
}

TEST(DFT, AxisInputAndInverseOfComplex_Opset20) {
  // [2, 2, 2] complex: inverse along axis 0 (given as -3).
  auto out = OneNode("DFT", 20)
                 .input("x", f32({2, 2, 2}, {1, 1, 2, 0, 3, -1, 4, 2}))
                 .omitted_input()
                 .input("axis", i64({}, {-3}))
                 .attr_int("inverse", 1)
                 .run();
  // y[0] = (x0 + x1)/2, y[1] = (x0 - x1)/2 per column
  EXPECT_EQ(values_of<float>(out.at(0).tensor), (std::vector<float>{2, 0, 3, 1, -1, 1, -1, -1}));
}

TEST(DFT, IrfftRebuildsTheRealSignal_Opset20) {
  std::vector<float> sig = {0, 1, 2, 3, 4, 5};
  auto fwd = OneNode("DFT", 20).input("x", f32({1, 6, 1}, sig)).omitted_input().input("axis", i64({}, {1}))
                 .attr_int("onesided", 1).run();
  ASSERT_EQ(fwd.at(0).tensor.dims(), (std::vector<int64_t>{1, 4, 2}));
  auto inv = OneNode("DFT", 20).input("x", fwd.at(0).tensor).omitted_input().input("axis", i64({}, {1}))
                 .attr_int("onesided", 1).attr_int("inverse", 1).run();
  const Tensor& y = inv.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 6, 1}));
  auto got = values_of<float>(y);
  for (size_t i = 0; i < sig.size(); ++i) EXPECT_NEAR(got[i], sig[i], 1e-5);
}

TEST(DFT, DoubleAndFloat16Types_Opset20) {
  auto d = OneNode("DFT", 20).input("x", make_tensor<double>(D::Double, {1, 2, 1}, {1, 2})).run();
  EXPECT_EQ(values_of<double>(d.at(0).tensor), (std::vector<double>{3, 0, -1, 0}));
  Tensor h = Tensor::allocate(D::Float16, {1, 2, 1});
  h.mutable_data<Float16>()[0] = Float16(1.0f);
  h.mutable_data<Float16>()[1] = Float16(2.0f);
  auto hf = OneNode("DFT", 20).input("x", h).run();
  EXPECT_EQ(hf.at(0).tensor.dtype(), D::Float16);
  EXPECT_EQ(float(hf.at(0).tensor.data<Float16>()[2]), -1.0f);
}

TEST(DFT, BadAxisAndComplexOnesidedAreErrors_Opset20) {
  std::string e = error_of([] { OneNode("DFT", 20).input("x", f32({1, 2, 1}, {1, 2})).omitted_input().input("a", i64({}, {-1})).run(); });
  EXPECT_NE(e.find("axis -1 is out of range"), std::string::npos) << e;
  e = error_of([] { OneNode("DFT", 17).input("x", f32({1, 2, 2}, {1, 2, 3, 4})).attr_int("onesided", 1).run(); });
  EXPECT_NE(e.find("onesided output needs a real input"), std::string::npos) << e;
  e = error_of([] { OneNode("DFT", 17).input("x", f32({1, 2, 3}, {1, 2, 3, 4, 5, 6})).run(); });
  EXPECT_NE(e.find("last dim must be 1 (real) or 2 (complex)"), std::string::npos) << e;
}

TEST(STFT, FramesWithWindowOnesided_Opset17) {
  // signal 0..7, frame 4, step 2 -> 3 frames of 3 bins
  std::vector<float> sig = {0, 1, 2, 3, 4, 5, 6, 7};
  auto out = OneNode("STFT", 17)
                 .input("s", f32({1, 8, 1}, sig))
                 .input("step", i64({}, {2}))
                 .input("w", f32({4}, {1, 1, 1, 1}))
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 3, 3, 2}));
  auto v = values_of<float>(y);
  // frame 1 = 2,3,4,5: [14, -2+2i, -2]
  EXPECT_EQ(std::vector<float>(v.begin() + 6, v.begin() + 12), (std::vector<float>{14, 0, -2, 2, -2, 0}));
}

TEST(STFT, FrameLengthMustFit_Opset17) {
  std::string e = error_of([] {
    OneNode("STFT", 17).input("s", f32({1, 4, 1}, {1, 2, 3, 4})).input("step", i64({}, {1})).omitted_input()
        .input("len", i64({}, {8})).run();
  });
  EXPECT_NE(e.find("longer than the signal"), std::string::npos) << e;
  e = error_of([] {
    OneNode("STFT", 17).input("s", f32({1, 4, 1}, {1, 2, 3, 4})).input("step", i64({}, {0})).run();
  });
  EXPECT_NE(e.find("frame_step must be positive"), std::string::npos) << e;
}

// ---- windows and MelWeightMatrix ----

TEST(HannWindow, PeriodicAndSymmetric_Opset17) {
  auto p = OneNode("HannWindow", 17).input("n", i64({}, {4})).run();
  EXPECT_EQ(values_of<float>(p.at(0).tensor), (std::vector<float>{0, 0.5f, 1, 0.5f}));
  auto s = OneNode("HannWindow", 17).input("n", i64({}, {3})).attr_int("periodic", 0).run();
  EXPECT_EQ(values_of<float>(s.at(0).tensor), (std::vector<float>{0, 1, 0}));
  auto one = OneNode("HannWindow", 17).input("n", i64({}, {1})).attr_int("periodic", 0).run();
  EXPECT_EQ(values_of<float>(one.at(0).tensor), (std::vector<float>{1}));
}

TEST(HammingAndBlackmanWindow, ValuesAndOutputTypes_Opset17) {
  auto h = OneNode("HammingWindow", 17).input("n", i64({}, {2})).attr_int("output_datatype", 11).run();
  auto hv = values_of<double>(h.at(0).tensor);
  EXPECT_NEAR(hv[0], 25.0 / 46 - 21.0 / 46, 1e-15);
  EXPECT_NEAR(hv[1], 1.0, 1e-15);
  auto b = OneNode("BlackmanWindow", 17).input("n", make_tensor<int32_t>(D::Int32, {}, {4})).run();
  auto bv = values_of<float>(b.at(0).tensor);
  ASSERT_EQ(bv.size(), 4u);
  EXPECT_NEAR(bv[0], 0.0f, 1e-7);
  EXPECT_NEAR(bv[1], 0.34f, 1e-7);
  EXPECT_NEAR(bv[2], 1.0f, 1e-7);
  auto hi = OneNode("HannWindow", 17).input("n", i64({}, {4})).attr_int("output_datatype", 7).run();
  EXPECT_EQ(values_of<int64_t>(hi.at(0).tensor), (std::vector<int64_t>{0, 0, 1, 0}));
  std::string e = error_of([] { OneNode("HannWindow", 17).input("n", i64({}, {-1})).run(); });
  EXPECT_NE(e.find("size must be non-negative"), std::string::npos) << e;
  e = error_of([] { OneNode("HannWindow", 17).input("n", i64({}, {3})).attr_int("output_datatype", 8).run(); });
  EXPECT_NE(e.find("output_datatype 8"), std::string::npos) << e;
}

TEST(MelWeightMatrix, TriangularFilters_Opset17) {
  auto out = OneNode("MelWeightMatrix", 17)
                 .input("bins", i64({}, {8}))
                 .input("dft", i64({}, {16}))
                 .input("sr", i64({}, {8192}))
                 .input("lo", f32({}, {0}))
                 .input("hi", f32({}, {4096}))
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{9, 8}));
  auto v = values_of<float>(y);
  // Row 0 is the first filter's lower half-triangle; every filter's weights are in [0, 1].
  EXPECT_EQ(v[0], 1.0f);
  for (float x : v) EXPECT_TRUE(x >= 0 && x <= 1);
  std::string e = error_of([] {
    OneNode("MelWeightMatrix", 17).input("bins", i64({}, {8})).input("dft", i64({}, {16})).input("sr", i64({}, {8192}))
        .input("lo", f32({}, {100})).input("hi", f32({}, {50})).run();
  });
  EXPECT_NE(e.find("lower_edge_hertz < upper_edge_hertz"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
