#include "nn_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

std::vector<float> iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = float(i);
  return v;
}

TEST(MaxPool, IndicesRowAndColumnMajor_Opset12) {
  auto run = [](int64_t order) {
    return OneNode("MaxPool", 12)
        .input("X", ftensor({1, 1, 4, 4}, iota(16)))
        .attr_ints("kernel_shape", {2, 2})
        .attr_ints("strides", {2, 2})
        .attr_int("storage_order", order)
        .outputs(2)
        .run();
  };
  auto row = run(0);
  expect_near(floats(row.at(0).tensor), {5, 7, 13, 15});
  const int64_t* ri = row.at(1).tensor.data<int64_t>();
  EXPECT_EQ((std::vector<int64_t>(ri, ri + 4)), (std::vector<int64_t>{5, 7, 13, 15}));
  auto col = run(1);
  const int64_t* ci = col.at(1).tensor.data<int64_t>();
  EXPECT_EQ((std::vector<int64_t>(ci, ci + 4)), (std::vector<int64_t>{5, 13, 7, 15}));
}

TEST(MaxPool, CeilModeAndDilations_Opset10) {
  auto floor_mode = OneNode("MaxPool", 10).input("X", ftensor({1, 1, 4, 4}, iota(16))).attr_ints("kernel_shape", {3, 3}).attr_ints("strides", {2, 2}).run();
  EXPECT_EQ(floor_mode.at(0).tensor.dims(), (Dims{1, 1, 1, 1}));
  auto ceil_mode = OneNode("MaxPool", 10)
                       .input("X", ftensor({1, 1, 4, 4}, iota(16)))
                       .attr_ints("kernel_shape", {3, 3})
                       .attr_ints("strides", {2, 2})
                       .attr_int("ceil_mode", 1)
                       .run();
  EXPECT_EQ(ceil_mode.at(0).tensor.dims(), (Dims{1, 1, 2, 2}));
  expect_near(floats(ceil_mode.at(0).tensor), {10, 11, 14, 15});
  auto dil = OneNode("MaxPool", 10).input("X", ftensor({1, 1, 4}, {1, 9, 2, 3})).attr_ints("kernel_shape", {2}).attr_ints("dilations", {2}).run();
  expect_near(floats(dil.at(0).tensor), {2, 9});
}

TEST(MaxPool, Int8FromOpset12) {
  auto x = make_tensor<int8_t>(DataType::Int8, {1, 1, 3}, {-5, 7, -100});
  auto out = OneNode("MaxPool", 12).input("X", x).attr_ints("kernel_shape", {2}).run();
  EXPECT_EQ(out.at(0).tensor.data<int8_t>()[0], 7);
  EXPECT_EQ(out.at(0).tensor.data<int8_t>()[1], 7);
  expect_error([&] { OneNode("MaxPool", 11).input("X", x).attr_ints("kernel_shape", {2}).run(); }, "allowed");
}

TEST(AveragePool, CountIncludePadFromOpset7) {
  auto run = [](int64_t opset, int64_t include) {
    return OneNode("AveragePool", opset)
        .input("X", ftensor({1, 1, 3}, {1, 2, 3}))
        .attr_ints("kernel_shape", {2})
        .attr_ints("pads", {1, 1})
        .attr_int("count_include_pad", include)
        .run();
  };
  expect_near(floats(run(11, 0).at(0).tensor), {1, 1.5f, 2.5f, 3});
  expect_near(floats(run(11, 1).at(0).tensor), {0.5f, 1.5f, 2.5f, 1.5f});
}

TEST(AveragePool, SameLowerPadsAtTheStart_Opset19) {
  auto out = OneNode("AveragePool", 19)
                 .input("X", ftensor({1, 1, 4}, {1, 2, 3, 4}))
                 .attr_ints("kernel_shape", {2})
                 .attr_string("auto_pad", "SAME_LOWER")
                 .run();
  expect_near(floats(out.at(0).tensor), {1, 1.5f, 2.5f, 3.5f});
}

TEST(LpPool, PIsFloatInV1AndIntFromV2) {
  auto v1 = OneNode("LpPool", 1).input("X", ftensor({1, 1, 2}, {3, -4})).attr_ints("kernel_shape", {2}).attr_float("p", 1.0f).run();
  expect_near(floats(v1.at(0).tensor), {7});
  auto v18 = OneNode("LpPool", 18).input("X", ftensor({1, 1, 2}, {3, -4})).attr_ints("kernel_shape", {2}).run();
  expect_near(floats(v18.at(0).tensor), {5});  // default p = 2
}

TEST(GlobalPools, ReduceAllSpatialDims) {
  auto avg = OneNode("GlobalAveragePool", 1).input("X", ftensor({1, 2, 2, 2}, iota(8))).run();
  EXPECT_EQ(avg.at(0).tensor.dims(), (Dims{1, 2, 1, 1}));
  expect_near(floats(avg.at(0).tensor), {1.5f, 5.5f});
  auto mx = OneNode("GlobalMaxPool", 22).input("X", ftensor({1, 2, 2, 2}, iota(8))).run();
  expect_near(floats(mx.at(0).tensor), {3, 7});
  auto lp = OneNode("GlobalLpPool", 2).input("X", ftensor({1, 1, 2}, {3, 4})).run();
  expect_near(floats(lp.at(0).tensor), {5});
}

TEST(Pool, WindowLargerThanInputIsAnError) {
  expect_error([] { OneNode("MaxPool", 12).input("X", ftensor({1, 1, 2}, {1, 2})).attr_ints("kernel_shape", {3}).run(); },
               "does not fit");
  expect_error([] { OneNode("AveragePool", 11).input("X", ftensor({1, 1, 2}, {1, 2})).run(); }, "kernel_shape");
}

}  // namespace
}  // namespace onyx
