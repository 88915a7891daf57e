#include <gtest/gtest.h>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using Dims = std::vector<int64_t>;

TEST(Concat, TwoDimsOnBothAxes_Opset13) {
  auto a0 = OneNode("Concat", 13).input("A", f32({2, 2}, {1, 2, 3, 4})).input("B", f32({1, 2}, {5, 6})).attr_int("axis", 0).run();
  EXPECT_EQ(a0.at(0).tensor.dims(), (Dims{3, 2}));
  EXPECT_EQ(values_of<float>(a0[0].tensor), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  auto a1 = OneNode("Concat", 13).input("A", f32({2, 2}, {1, 2, 3, 4})).input("B", f32({2, 1}, {5, 6})).attr_int("axis", -1).run();
  EXPECT_EQ(values_of<float>(a1.at(0).tensor), (std::vector<float>{1, 2, 5, 3, 4, 6}));
}

TEST(Concat, StringsAndEmptyInputs_Opset11) {
  auto out = OneNode("Concat", 11)
                 .input("A", Tensor::strings("", {1}, {"a"}))
                 .input("E", Tensor::strings("", {0}, {}))
                 .input("B", Tensor::strings("", {2}, {"b", "c"}))
                 .attr_int("axis", 0)
                 .run();
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(Concat, MismatchedDimsAreAnError_Opset13) {
  try {
    OneNode("Concat", 13).input("A", f32({2, 2}, {1, 2, 3, 4})).input("B", f32({1, 3}, {5, 6, 7})).attr_int("axis", 0).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("differs from the others in dim 1"), std::string::npos) << e.what();
  }
}

TEST(Split, EqualAttributeAndInputSplits) {
  auto eq = OneNode("Split", 13).input("X", iota_f32({6})).outputs(3).run();
  ASSERT_EQ(eq.size(), 3u);
  EXPECT_EQ(values_of<float>(eq[2].tensor), (std::vector<float>{4, 5}));
  auto attr = OneNode("Split", 11).input("X", iota_f32({2, 6})).attr_int("axis", 1).attr_ints("split", {2, 4}).outputs(2).run();
  EXPECT_EQ(attr.at(0).tensor.dims(), (Dims{2, 2}));
  EXPECT_EQ(values_of<float>(attr[1].tensor), (std::vector<float>{2, 3, 4, 5, 8, 9, 10, 11}));
  auto in = OneNode("Split", 13).input("X", iota_f32({6})).input("S", i64({3}, {0, 2, 4})).outputs(3).run();
  EXPECT_EQ(in.at(0).tensor.dims(), (Dims{0}));
  EXPECT_EQ(values_of<float>(in[2].tensor), (std::vector<float>{2, 3, 4, 5}));
}

TEST(Split, NumOutputsLastChunkSmaller_Opset18) {
  auto out = OneNode("Split", 18).input("X", iota_f32({7})).attr_int("num_outputs", 4).outputs(4).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{2}));
  EXPECT_EQ(out.at(3).tensor.dims(), (Dims{1}));
  EXPECT_EQ(values_of<float>(out[3].tensor), (std::vector<float>{6}));
}

TEST(Split, UnevenOrWrongSizesAreErrors) {
  EXPECT_THROW(OneNode("Split", 13).input("X", iota_f32({7})).outputs(2).run(), Error);
  try {
    OneNode("Split", 13).input("X", iota_f32({6})).input("S", i64({2}, {2, 2})).outputs(2).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not add up"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
