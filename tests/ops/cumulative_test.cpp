#include <gtest/gtest.h>

#include <limits>

#include "ir/scalar.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;

Tensor axis0(int32_t a) { return make_tensor<int32_t>(DataType::Int32, {}, {a}); }

TEST(CumSum, SpecExamples_Opset14) {
  Tensor x = make_tensor<double>(DataType::Double, {5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(values<double>(OneNode("CumSum", 14).input("x", x).input("axis", axis0(0)).run().at(0)),
            (std::vector<double>{1, 3, 6, 10, 15}));
  EXPECT_EQ(values<double>(OneNode("CumSum", 14).input("x", x).input("axis", axis0(0)).attr_int("exclusive", 1).run().at(0)),
            (std::vector<double>{0, 1, 3, 6, 10}));
  EXPECT_EQ(values<double>(OneNode("CumSum", 14).input("x", x).input("axis", axis0(0)).attr_int("reverse", 1).run().at(0)),
            (std::vector<double>{15, 14, 12, 9, 5}));
  EXPECT_EQ(values<double>(OneNode("CumSum", 14)
                               .input("x", x)
                               .input("axis", axis0(0))
                               .attr_int("reverse", 1)
                               .attr_int("exclusive", 1)
                               .run()
                               .at(0)),
            (std::vector<double>{14, 12, 9, 5, 0}));
}

TEST(CumSum, NegativeAxis2D_Opset11) {
  auto out = OneNode("CumSum", 11)
                 .input("x", make_tensor<float>(DataType::Float, {2, 3}, {1, 2, 3, 4, 5, 6}))
                 .input("axis", make_tensor<int64_t>(DataType::Int64, {}, {-1}))
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{1, 3, 6, 4, 9, 15}));
}

TEST(CumSum, Float16FromOpset14Only) {
  std::vector<Float16> v = {Float16(1.0f), Float16(2.0f)};
  auto out = OneNode("CumSum", 14).input("x", make_tensor<Float16>(DataType::Float16, {2}, v)).input("axis", axis0(0)).run();
  EXPECT_EQ(static_cast<float>(out.at(0).tensor.data<Float16>()[1]), 3.0f);
  try {
    OneNode("CumSum", 11).input("x", make_tensor<Float16>(DataType::Float16, {2}, v)).input("axis", axis0(0)).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has element type float16"), std::string::npos) << e.what();
  }
}

TEST(CumSum, IntegersWrap_Opset14) {
  const int32_t hi = std::numeric_limits<int32_t>::max();
  auto out = OneNode("CumSum", 14).input("x", make_tensor<int32_t>(DataType::Int32, {2}, {hi, 1})).input("axis", axis0(0)).run();
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{hi, std::numeric_limits<int32_t>::min()}));
}

TEST(CumProd, SpecExamples_Opset26) {
  Tensor x = make_tensor<float>(DataType::Float, {3}, {1, 2, 3});
  EXPECT_EQ(values<float>(OneNode("CumProd", 26).input("x", x).input("axis", axis0(0)).run().at(0)),
            (std::vector<float>{1, 2, 6}));
  EXPECT_EQ(values<float>(OneNode("CumProd", 26).input("x", x).input("axis", axis0(0)).attr_int("exclusive", 1).run().at(0)),
            (std::vector<float>{1, 1, 2}));
  EXPECT_EQ(values<float>(OneNode("CumProd", 26)
                              .input("x", x)
                              .input("axis", axis0(0))
                              .attr_int("exclusive", 1)
                              .attr_int("reverse", 1)
                              .run()
                              .at(0)),
            (std::vector<float>{6, 3, 1}));
  auto ints = OneNode("CumProd", 26)
                  .input("x", make_tensor<uint32_t>(DataType::UInt32, {2, 2}, {2, 3, 4, 5}))
                  .input("axis", axis0(0))
                  .run();
  EXPECT_EQ(values<uint32_t>(ints.at(0)), (std::vector<uint32_t>{2, 3, 8, 15}));
}

TEST(CumSum, BadAxisIsAClearError_Opset14) {
  Tensor x = make_tensor<float>(DataType::Float, {2}, {1, 2});
  try {
    OneNode("CumSum", 14).input("x", x).input("axis", axis0(1)).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(CumSum)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OneNode("CumSum", 14).input("x", x).input("axis", make_tensor<int32_t>(DataType::Int32, {2}, {0, 0})).run(),
               Error);
}

}  // namespace
}  // namespace onyx
