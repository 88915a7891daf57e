#include <gtest/gtest.h>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using Dims = std::vector<int64_t>;

TEST(Gather, Axis0And1WithNegativeIndices_Opset13) {
  // data [[1,1.2],[2.3,3.4],[4.5,5.7]], indices [[0,1],[1,2]] -> shape [2,2,2]
  Tensor data = f32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  auto a = OneNode("Gather", 13).input("D", data).input("I", i64({2, 2}, {0, 1, 1, 2})).run();
  EXPECT_EQ(a.at(0).tensor.dims(), (Dims{2, 2, 2}));
  EXPECT_EQ(values_of<float>(a[0].tensor), (std::vector<float>{1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f}));
  auto b = OneNode("Gather", 13).input("D", iota_f32({3, 3})).input("I", make_tensor<int32_t>(DataType::Int32, {1, 2}, {0, -1})).attr_int("axis", 1).run();
  EXPECT_EQ(b.at(0).tensor.dims(), (Dims{3, 1, 2}));
  EXPECT_EQ(values_of<float>(b[0].tensor), (std::vector<float>{0, 2, 3, 5, 6, 8}));
  auto scalar = OneNode("Gather", 11).input("D", iota_f32({3, 2})).input("I", i64({}, {2})).run();
  EXPECT_EQ(scalar.at(0).tensor.dims(), (Dims{2}));
}

TEST(Gather, OutOfRangeIndexIsAnError_Opset13) {
  try {
    OneNode("Gather", 13).input("D", iota_f32({3})).input("I", i64({1}, {3})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 3 is out of range"), std::string::npos) << e.what();
  }
}

TEST(GatherElements, SpecExamples_Opset13) {
  auto a = OneNode("GatherElements", 13).input("D", f32({2, 2}, {1, 2, 3, 4})).input("I", i64({2, 2}, {0, 0, 1, 0})).attr_int("axis", 1).run();
  EXPECT_EQ(values_of<float>(a.at(0).tensor), (std::vector<float>{1, 1, 4, 3}));
  auto b = OneNode("GatherElements", 11).input("D", f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})).input("I", i64({2, 3}, {1, 2, 0, 2, 0, -3})).run();
  EXPECT_EQ(values_of<float>(b.at(0).tensor), (std::vector<float>{4, 8, 3, 7, 2, 3}));
  EXPECT_THROW(OneNode("GatherElements", 13).input("D", iota_f32({2, 2})).input("I", i64({2}, {0, 1})).run(), Error);
}

TEST(GatherND, ExamplesWithAndWithoutBatchDims) {
  auto a = OneNode("GatherND", 11).input("D", make_tensor<int32_t>(DataType::Int32, {2, 2}, {0, 1, 2, 3})).input("I", i64({2, 1}, {1, 0})).run();
  EXPECT_EQ(a.at(0).tensor.dims(), (Dims{2, 2}));
  EXPECT_EQ(values_of<int32_t>(a[0].tensor), (std::vector<int32_t>{2, 3, 0, 1}));
  auto b = OneNode("GatherND", 12)
               .input("D", make_tensor<int32_t>(DataType::Int32, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}))
               .input("I", i64({2, 1}, {1, 0}))
               .attr_int("batch_dims", 1)
               .run();
  EXPECT_EQ(b.at(0).tensor.dims(), (Dims{2, 2}));
  EXPECT_EQ(values_of<int32_t>(b[0].tensor), (std::vector<int32_t>{2, 3, 4, 5}));
  EXPECT_THROW(OneNode("GatherND", 13).input("D", iota_f32({2, 2})).input("I", i64({1, 3}, {0, 0, 0})).run(), Error);
}

}  // namespace
}  // namespace onyx
