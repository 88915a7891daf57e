#include <gtest/gtest.h>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;

TEST(Det, TwoByTwoAndBatched_Opset11) {
  auto out = OneNode("Det", 11).input("X", make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4})).run();
  EXPECT_EQ(out.at(0).tensor.dims(), std::vector<int64_t>{});
  EXPECT_NEAR(out.at(0).tensor.data<float>()[0], -2, 1e-6);
  auto nd = OneNode("Det", 22)
                .input("X", make_tensor<double>(DataType::Double, {2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 0, 0, 0, 3, 0, 1, 1, 4}))
                .run();
  ASSERT_EQ(nd.at(0).tensor.dims(), (std::vector<int64_t>{2}));
  EXPECT_NEAR(nd.at(0).tensor.data<double>()[0], 0, 1e-12);
  EXPECT_NEAR(nd.at(0).tensor.data<double>()[1], 24, 1e-12);
}

TEST(Det, NonSquareIsAnError_Opset22) {
  try {
    OneNode("Det", 22).input("X", make_tensor<float>(DataType::Float, {2, 3}, {1, 2, 3, 4, 5, 6})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be square"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
