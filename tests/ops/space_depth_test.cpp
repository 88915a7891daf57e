#include <gtest/gtest.h>

#include <numeric>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;

Tensor iota_tensor(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  return make_tensor<float>(DataType::Float, dims, v);
}

TEST(DepthToSpace, DcrAndCrdModes_Opset11) {
  // [1, 4, 1, 1] -> [1, 1, 2, 2]: DCR reads depth as [b, b, C'], CRD as [C', b, b] — same for C' = 1.
  auto dcr = OneNode("DepthToSpace", 11).input("x", iota_tensor({1, 8, 1, 1})).attr_int("blocksize", 2).run();
  EXPECT_EQ(dcr.at(0).tensor.dims(), (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_EQ(values<float>(dcr.at(0)), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  auto crd = OneNode("DepthToSpace", 11).input("x", iota_tensor({1, 8, 1, 1})).attr_int("blocksize", 2).attr_string("mode", "CRD").run();
  EXPECT_EQ(values<float>(crd.at(0)), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(DepthToSpace, Version1IsDcr_Opset1) {
  auto out = OneNode("DepthToSpace", 1).input("x", iota_tensor({1, 8, 1, 1})).attr_int("blocksize", 2).run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(SpaceToDepth, InvertsDepthToSpaceDcr_Opset13) {
  Tensor x = iota_tensor({1, 2, 4, 6});
  auto s2d = OneNode("SpaceToDepth", 13).input("x", x).attr_int("blocksize", 2).run();
  EXPECT_EQ(s2d.at(0).tensor.dims(), (std::vector<int64_t>{1, 8, 2, 3}));
  auto back = OneNode("DepthToSpace", 13).input("x", s2d.at(0).tensor).attr_int("blocksize", 2).run();
  EXPECT_EQ(values<float>(back.at(0)), values<float>(Datum::of(x)));
  // Channel 1 of the result is the (0, 0) offset of input channel 1.
  EXPECT_EQ(values<float>(s2d.at(0))[6], 24.0f);
}

TEST(SpaceToDepth, IndivisibleSizeAndBadBlocksizeAreErrors_Opset13) {
  try {
    OneNode("SpaceToDepth", 13).input("x", iota_tensor({1, 1, 3, 4})).attr_int("blocksize", 2).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible by blocksize 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OneNode("DepthToSpace", 13).input("x", iota_tensor({1, 4, 1, 1})).attr_int("blocksize", 0).run(), Error);
}

TEST(DepthToSpace, StringsMove_Opset13) {
  auto out = OneNode("DepthToSpace", 13).input("x", Tensor::strings("", {1, 4, 1, 1}, {"a", "b", "c", "d"})).attr_int("blocksize", 2).run();
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"a", "b", "c", "d"}));
}

}  // namespace
}  // namespace onyx
