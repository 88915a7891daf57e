#include <cmath>

#include "nn_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(Softmax, CoercedTo2DBeforeOpset13AxisOnlyFrom13) {
  // X (1, 2, 2), axis 1: v11 normalizes over the 4 trailing elements, v13 over dim 1 only.
  auto x = ftensor({1, 2, 2}, {0, 0, 0, 0});
  auto v11 = OneNode("Softmax", 11).input("X", x).attr_int("axis", 1).run();
  expect_near(floats(v11.at(0).tensor), {0.25f, 0.25f, 0.25f, 0.25f});
  auto v13 = OneNode("Softmax", 13).input("X", x).attr_int("axis", 1).run();
  expect_near(floats(v13.at(0).tensor), {0.5f, 0.5f, 0.5f, 0.5f});
}

TEST(Softmax, LargeNumbersAndDefaultAxis_Opset13) {
  auto out = OneNode("Softmax", 13).input("X", ftensor({1, 2}, {10000, 10001})).run();
  const float a = 1 / (1 + std::exp(1.0f));
  expect_near(floats(out.at(0).tensor), {a, 1 - a});
}

TEST(LogSoftmax, SpecExample_Opset13) {
  auto out = OneNode("LogSoftmax", 13).input("X", ftensor({1, 3}, {-1, 0, 1})).run();
  expect_near(floats(out.at(0).tensor), {-2.40760596f, -1.40760596f, -0.40760596f});
}

TEST(Hardmax, FirstMaximumWins) {
  auto out = OneNode("Hardmax", 13).input("X", ftensor({2, 3}, {3, 0, 3, 1, 2, 0})).run();
  expect_near(floats(out.at(0).tensor), {1, 0, 0, 0, 1, 0});
  auto v1 = OneNode("Hardmax", 1).input("X", ftensor({2, 2}, {1, 2, 3, 0})).attr_int("axis", 0).run();
  expect_near(floats(v1.at(0).tensor), {0, 0, 1, 0});  // the whole tensor is one row
}

TEST(Softmax, AxisOutOfRangeIsAnError) {
  expect_error([] { OneNode("Softmax", 13).input("X", ftensor({2}, {1, 2})).attr_int("axis", 1).run(); }, "out of range");
}

}  // namespace
}  // namespace onyx
