#include <gtest/gtest.h>

#include <cmath>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::f32;

using testing::make_tensor;
using testing::OneNode;

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count()); }
double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(SwiGLU, GateTimesValueWithAlpha_Opset28) {
  auto y = values(OneNode("SwiGLU", 28)
                      .input("A", f32({2}, {0, 1}))
                      .input("B", f32({2}, {2, 3}))
                      .run()
                      .at(0)
                      .tensor);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 3 * sig(1.0), 1e-6);
  auto ya = values(OneNode("SwiGLU", 28)
                       .input("A", f32({2, 1}, {1, 2}))
                       .input("B", f32({2}, {1, 2}))
                       .attr_float("alpha", 1.702f)
                       .run()
                       .at(0)
                       .tensor);
  ASSERT_EQ(ya.size(), 4u);  // broadcast [2,1] x [2]
  EXPECT_NEAR(ya[3], 2 * sig(1.702 * 2) * 2, 1e-5);
}

TEST(SwiGLU, NotBeforeOpset28) {
  EXPECT_THROW(OneNode("SwiGLU", 27).input("A", f32({1}, {1})).input("B", f32({1}, {1})).run(), Error);
}

TEST(CausalConvWithState, ZeroStateThenCarriedState_Opset27) {
  auto out = OneNode("CausalConvWithState", 27)
                 .input("x", f32({1, 1, 3}, {1, 2, 3}))
                 .input("w", f32({1, 1, 2}, {1, 10}))
                 .outputs(2)
                 .run();
  EXPECT_EQ(values(out.at(0).tensor), (std::vector<float>{10, 21, 32}));
  EXPECT_EQ(values(out.at(1).tensor), (std::vector<float>{3}));
  // Decode one step with the carried state and a bias.
  auto step = OneNode("CausalConvWithState", 27)
                  .input("x", f32({1, 1, 1}, {4}))
                  .input("w", f32({1, 1, 2}, {1, 10}))
                  .input("b", f32({1}, {0.5f}))
                  .input("s", f32({1, 1, 1}, {3}))
                  .outputs(2)
                  .run();
  EXPECT_EQ(values(step.at(0).tensor), (std::vector<float>{43.5f}));
  EXPECT_EQ(values(step.at(1).tensor), (std::vector<float>{4}));
}

TEST(CausalConvWithState, SiluAndKernelSizeOne_Opset27) {
  auto out = OneNode("CausalConvWithState", 27)
                 .input("x", f32({1, 2, 1}, {1, -1}))
                 .input("w", f32({2, 1, 1}, {2, 2}))
                 .attr_string("activation", "silu")
                 .outputs(2)
                 .run();
  std::vector<float> y = values(out.at(0).tensor);
  EXPECT_NEAR(y[0], 2 * sig(2), 1e-6);
  EXPECT_NEAR(y[1], -2 * sig(-2), 1e-6);
  EXPECT_EQ(out.at(1).tensor.dims(), (std::vector<int64_t>{1, 2, 0}));
}

TEST(CausalConvWithState, BadStateShapeIsAnError_Opset27) {
  try {
    OneNode("CausalConvWithState", 27)
        .input("x", f32({1, 1, 2}, {1, 2}))
        .input("w", f32({1, 1, 3}, {1, 1, 1}))
        .omitted_input()
        .input("s", f32({1, 1, 1}, {0}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("past_state must have shape [1,1,2]"), std::string::npos) << e.what();
  }
}

TEST(CausalConvWithState, InfersStateShape_Opset27) {
  testing::GraphBuilder g(27);
  g.input("x", DataType::Float, {"B", "C", "L"}).output("y").output("s");
  g.initializer("w", f32({4, 1, 3}, std::vector<float>(12, 0.f)));
  g.node("CausalConvWithState", {"x", "w"}, {"y", "s"});
  Session s = g.session();
  EXPECT_EQ(testing::output_type(s, 0), "float[B,C,L]");
  EXPECT_EQ(testing::output_type(s, 1), "float[B,C,2]");
}

}  // namespace
}  // namespace onyx
