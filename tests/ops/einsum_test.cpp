#include <gtest/gtest.h>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count()); }

TEST(Einsum, BatchMatmulSpecExample_Opset12) {
  auto out = OneNode("Einsum", 12)
                 .input("A", make_tensor<float>(DataType::Float, {2, 1, 2}, {1, 2, 3, 4}))
                 .input("B", make_tensor<float>(DataType::Float, {2, 2, 1}, {1, 1, 2, 3}))
                 .attr_string("equation", "bij, bjk -> bik")
                 .run();
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(values(out.at(0).tensor), (std::vector<float>{3, 18}));
}

TEST(Einsum, ImplicitOutputTraceDiagonalAndEllipsis_Opset12) {
  Tensor m = make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4});
  auto trace = OneNode("Einsum", 12).input("X", m).attr_string("equation", "ii").run();
  EXPECT_EQ(trace.at(0).tensor.dims(), std::vector<int64_t>{});
  EXPECT_EQ(values(trace.at(0).tensor), (std::vector<float>{5}));
  auto diag = OneNode("Einsum", 12).input("X", m).attr_string("equation", "ii->i").run();
  EXPECT_EQ(values(diag.at(0).tensor), (std::vector<float>{1, 4}));
  auto implicit = OneNode("Einsum", 12).input("X", m).attr_string("equation", "ji").run();  // output "ij": transpose
  EXPECT_EQ(values(implicit.at(0).tensor), (std::vector<float>{1, 3, 2, 4}));
  auto ell = OneNode("Einsum", 12)
                 .input("X", make_tensor<int32_t>(DataType::Int32, {2, 1, 2}, {1, 2, 3, 4}))
                 .input("Y", make_tensor<int32_t>(DataType::Int32, {3, 2}, {1, 0, 0, 1, 1, 1}))
                 .attr_string("equation", "...j,kj->...k")
                 .run();
  const Tensor& y = ell.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(std::vector<int32_t>(y.data<int32_t>(), y.data<int32_t>() + 6), (std::vector<int32_t>{1, 2, 3, 3, 4, 7}));
}

TEST(Einsum, MismatchedLabelSizesAreAnError_Opset12) {
  try {
    OneNode("Einsum", 12)
        .input("A", make_tensor<float>(DataType::Float, {2}, {1, 2}))
        .input("B", make_tensor<float>(DataType::Float, {3}, {1, 2, 3}))
        .attr_string("equation", "i,i->")
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 'i' has size"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
