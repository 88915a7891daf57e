#include <gtest/gtest.h>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using Dims = std::vector<int64_t>;

TEST(Expand, BidirectionalBroadcast_Opset13) {
  // [3,1] expanded to [2,1,6] -> [2,3,6]
  auto out = OneNode("Expand", 13).input("X", f32({3, 1}, {1, 2, 3})).input("S", i64({3}, {2, 1, 6})).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{2, 3, 6}));
  auto v = values_of<float>(out[0].tensor);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[6], 2.0f);
  EXPECT_EQ(v[35], 3.0f);
  auto same = OneNode("Expand", 8).input("X", f32({3, 1}, {1, 2, 3})).input("S", i64({2}, {3, 4})).run();
  EXPECT_EQ(same.at(0).tensor.dims(), (Dims{3, 4}));
}

TEST(Expand, IncompatibleShapeIsAnError_Opset13) {
  try {
    OneNode("Expand", 13).input("X", f32({3}, {1, 2, 3})).input("S", i64({1}, {4})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not broadcast"), std::string::npos) << e.what();
  }
}

TEST(Tile, RepeatsPerAxis_Opset13) {
  auto out = OneNode("Tile", 13).input("X", f32({2, 2}, {0, 1, 2, 3})).input("R", i64({2}, {2, 2})).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{4, 4}));
  EXPECT_EQ(values_of<float>(out[0].tensor), (std::vector<float>{0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3}));
  auto zero = OneNode("Tile", 6).input("X", f32({2}, {0, 1})).input("R", i64({1}, {0})).run();
  EXPECT_EQ(zero.at(0).tensor.dims(), (Dims{0}));
}

TEST(Tile, Opset1TilesOneAxis) {
  auto out = OneNode("Tile", 1).input("X", f32({2, 2}, {0, 1, 2, 3})).input("T", f32({}, {3})).input("A", f32({}, {1})).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{2, 6}));
  EXPECT_EQ(values_of<float>(out[0].tensor), (std::vector<float>{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
}

TEST(Tile, BadRepeatsAreErrors_Opset13) {
  EXPECT_THROW(OneNode("Tile", 13).input("X", f32({2}, {0, 1})).input("R", i64({1}, {-1})).run(), Error);
  try {
    OneNode("Tile", 13).input("X", f32({2}, {0, 1})).input("R", i64({2}, {1, 1})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("repeats has 2 values"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
