#include <gtest/gtest.h>

#include <cmath>

#include "ml_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
const char* kTraining = "ai.onnx.preview.training";

Tensor scalar_f(float v) { return make_tensor<float>(DataType::Float, {}, {v}); }
Tensor scalar_i(int64_t v) { return make_tensor<int64_t>(DataType::Int64, {}, {v}); }

TEST(Adagrad, SpecExample) {
  const double r = 0.1, norm = 0.001, eps = 1e-5, decay = 0.1;
  auto out = MlNode("Adagrad", 1, kTraining)
                 .input("R", scalar_f(0.1f))
                 .input("T", scalar_i(0))
                 .input("X", f32({1}, {1.0f}))
                 .input("G", f32({1}, {-1.0f}))
                 .input("H", f32({1}, {2.0f}))
                 .attr_float("norm_coefficient", 0.001f)
                 .attr_float("epsilon", 1e-5f)
                 .attr_float("decay_factor", 0.1f)
                 .outputs(2)
                 .run();
  double rr = r / (1 + 0 * decay), g = norm * 1.0 - 1.0, h = 2.0 + g * g;
  double x = 1.0 - rr * g / (std::sqrt(h) + eps);
  EXPECT_NEAR(vals<float>(out[0])[0], x, 1e-6);
  EXPECT_NEAR(vals<float>(out[1])[0], h, 1e-6);
}

TEST(Momentum, StandardAndNesterov) {
  auto run = [](const char* mode, int64_t t) {
    return MlNode("Momentum", 1, kTraining)
        .input("R", scalar_f(0.1f))
        .input("T", scalar_i(t))
        .input("X", f32({2}, {1.2f, 2.8f}))
        .input("G", f32({2}, {-0.94f, -2.5f}))
        .input("V", f32({2}, {1.7f, 3.6f}))
        .attr_float("norm_coefficient", 0.001f)
        .attr_float("alpha", 0.95f)
        .attr_float("beta", 0.1f)
        .attr_string("mode", mode)
        .outputs(2)
        .run();
  };
  auto std_out = run("standard", 0);
  double g0 = 0.001 * 1.2f + (-0.94f);
  double v0 = 0.95f * 1.7f + 1.0 * g0;  // beta is 1 at T = 0
  EXPECT_NEAR(vals<float>(std_out[1])[0], v0, 1e-5);
  EXPECT_NEAR(vals<float>(std_out[0])[0], 1.2f - 0.1f * v0, 1e-5);
  auto nest = run("nesterov", 1);
  double v1 = 0.95f * 1.7f + 0.1f * g0;
  EXPECT_NEAR(vals<float>(nest[0])[0], 1.2f - 0.1f * (g0 + 0.95f * v1), 1e-5);
}

TEST(Adam, TwoTensors) {
  auto out = MlNode("Adam", 1, kTraining)
                 .input("R", scalar_f(0.1f))
                 .input("T", scalar_i(1))
                 .input("X1", f32({1}, {1.0f}))
                 .input("X2", f64({2}, {2.0, 3.0}))
                 .input("G1", f32({1}, {0.5f}))
                 .input("G2", f64({2}, {-1.0, 1.0}))
                 .input("V1", f32({1}, {0.0f}))
                 .input("V2", f64({2}, {0.0, 0.0}))
                 .input("H1", f32({1}, {0.0f}))
                 .input("H2", f64({2}, {0.0, 0.0}))
                 .outputs(6)
                 .run();
  double alpha = 0.9f, beta = 0.999f, eps = 1e-6f;
  double v = (1 - alpha) * -1.0, h = (1 - beta) * 1.0;
  double r = 0.1f * std::sqrt(1 - beta) / (1 - alpha);
  EXPECT_EQ(out[1].tensor.dtype(), DataType::Double);
  EXPECT_NEAR(vals<double>(out[1])[0], 2.0 - r * v / (std::sqrt(h) + eps), 1e-9);
  EXPECT_NEAR(vals<double>(out[3])[0], v, 1e-12);
  EXPECT_NEAR(vals<double>(out[5])[0], h, 1e-12);
}

TEST(Adam, ShapeMismatchAndBadCountsAreErrors) {
  std::string e = error_of(MlNode("Adagrad", 1, kTraining)
                               .input("R", scalar_f(0.1f))
                               .input("T", scalar_i(0))
                               .input("X", f32({2}, {1, 2}))
                               .input("G", f32({1}, {1}))
                               .input("H", f32({2}, {1, 2}))
                               .outputs(2));
  EXPECT_NE(e.find("optimized tensor 0 is float[2]"), std::string::npos) << e;
  std::string c = error_of(MlNode("Adam", 1, kTraining)
                               .input("R", scalar_f(0.1f))
                               .input("T", scalar_i(0))
                               .input("X", f32({1}, {1}))
                               .input("G", f32({1}, {1}))
                               .input("V", f32({1}, {1}))
                               .outputs(1));
  EXPECT_NE(c.find("4 tensors per optimized tensor"), std::string::npos) << c;
}

}  // namespace
}  // namespace onyx
