#include "nn_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(MatMul, Plain2DAndBatchedBroadcast_Opset13) {
  auto out = OneNode("MatMul", 13)
                 .input("A", ftensor({2, 3}, {1, 2, 3, 4, 5, 6}))
                 .input("B", ftensor({3, 2}, {7, 8, 9, 10, 11, 12}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{2, 2}));
  expect_near(floats(out.at(0).tensor), {58, 64, 139, 154});
  // A (2,1,2,2) x B (3,2,1) -> (2,3,2,1): batch dims broadcast.
  std::vector<float> a(8), b(6);
  for (int i = 0; i < 8; ++i) a[i] = float(i);
  for (int i = 0; i < 6; ++i) b[i] = float(i + 1);
  auto bc = OneNode("MatMul", 13).input("A", ftensor({2, 1, 2, 2}, a)).input("B", ftensor({3, 2, 1}, b)).run();
  EXPECT_EQ(bc.at(0).tensor.dims(), (Dims{2, 3, 2, 1}));
  std::vector<float> got = floats(bc.at(0).tensor);
  EXPECT_FLOAT_EQ(got[0], 0 * 1 + 1 * 2);   // batch (0,0): A[0] rows x B[0]
  EXPECT_FLOAT_EQ(got[11], 6 * 5 + 7 * 6);  // batch (1,2): A[1] row 1 x B[2]
}

TEST(MatMul, OneDimensionalPromotion_Opset13) {
  auto vv = OneNode("MatMul", 13).input("A", ftensor({3}, {1, 2, 3})).input("B", ftensor({3}, {4, 5, 6})).run();
  EXPECT_TRUE(vv.at(0).tensor.dims().empty());
  expect_near(floats(vv.at(0).tensor), {32});
  auto vm = OneNode("MatMul", 13).input("A", ftensor({2}, {1, 2})).input("B", ftensor({2, 2, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1})).run();
  EXPECT_EQ(vm.at(0).tensor.dims(), (Dims{2, 3}));
  expect_near(floats(vm.at(0).tensor), {1, 2, 0, 2, 2, 3});
}

TEST(MatMul, IntegersFromOpset9Only) {
  auto out = OneNode("MatMul", 9)
                 .input("A", make_tensor<int32_t>(DataType::Int32, {1, 2}, {3, -4}))
                 .input("B", make_tensor<int32_t>(DataType::Int32, {2, 1}, {5, 6}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.data<int32_t>()[0], -9);
  expect_error([] {
    OneNode("MatMul", 1)
        .input("A", make_tensor<int32_t>(DataType::Int32, {1, 1}, {1}))
        .input("B", make_tensor<int32_t>(DataType::Int32, {1, 1}, {1}))
        .run();
  }, "allowed");
}

TEST(MatMul, MismatchedInnerDimsAreAnError) {
  expect_error([] { OneNode("MatMul", 13).input("A", ftensor({2, 3}, std::vector<float>(6))).input("B", ftensor({2, 2}, std::vector<float>(4))).run(); },
               "inner dims differ");
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastC_Opset13) {
  // A^T is [[1,2],[3,4]] (A stored transposed), B^T is identity*2.
  auto out = OneNode("Gemm", 13)
                 .input("A", ftensor({2, 2}, {1, 3, 2, 4}))
                 .input("B", ftensor({2, 2}, {2, 0, 0, 2}))
                 .input("C", ftensor({2}, {10, 20}))
                 .attr_int("transA", 1)
                 .attr_int("transB", 1)
                 .attr_float("alpha", 0.5f)
                 .attr_float("beta", 2.0f)
                 .run();
  expect_near(floats(out.at(0).tensor), {21, 42, 23, 44});
}

TEST(Gemm, COptionalFromOpset11) {
  auto out = OneNode("Gemm", 11).input("A", ftensor({1, 2}, {1, 2})).input("B", ftensor({2, 1}, {3, 4})).run();
  expect_near(floats(out.at(0).tensor), {11});
  expect_error([] { OneNode("Gemm", 9).input("A", ftensor({1, 2}, {1, 2})).input("B", ftensor({2, 1}, {3, 4})).run(); },
               "2 inputs, but Gemm-9 takes 3");  // the schema's count, at load
}

TEST(Gemm, LegacyWithoutBroadcastNeedsFullC_Opset6) {
  auto run = [](int64_t bc) {
    return OneNode("Gemm", 6)
        .input("A", ftensor({1, 2}, {1, 2}))
        .input("B", ftensor({2, 2}, {1, 0, 0, 1}))
        .input("C", ftensor({1}, {5}))
        .attr_int("broadcast", bc)
        .run();
  };
  expect_near(floats(run(1).at(0).tensor), {6, 7});
  expect_error([&] { run(0); }, "without broadcast=1");
}

}  // namespace
}  // namespace onyx
