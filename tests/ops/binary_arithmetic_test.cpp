#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <type_traits>

#include "ir/scalar.hpp"
#include "op_test_util.hpp"
#include "ops/registry.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;

TEST(Add, BroadcastsRowOverMatrix_Opset14) {
  auto out = OneNode("Add", 14)
                 .input("A", make_tensor<float>(DataType::Float, {2, 3}, {1, 2, 3, 4, 5, 6}))
                 .input("B", make_tensor<float>(DataType::Float, {3}, {10, 20, 30}))
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  std::vector<float> got(y.data<float>(), y.data<float>() + 6);
  EXPECT_EQ(got, (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(Add, LegacyBroadcastAlignsAtAxis_Opset6) {
  auto out = OneNode("Add", 6)
                 .input("A", make_tensor<float>(DataType::Float, {2, 3}, {1, 2, 3, 4, 5, 6}))
                 .input("B", make_tensor<float>(DataType::Float, {2}, {10, 20}))
                 .attr_int("broadcast", 1)
                 .attr_int("axis", 0)
                 .run();
  const Tensor& y = out.at(0).tensor;
  std::vector<float> got(y.data<float>(), y.data<float>() + 6);
  EXPECT_EQ(got, (std::vector<float>{11, 12, 13, 24, 25, 26}));
}

TEST(Div, IntMinByMinusOneWrapsAndZeroIsAnError_Opset14) {
  const int32_t lo = std::numeric_limits<int32_t>::min();
  auto out = OneNode("Div", 14)
                 .input("A", make_tensor<int32_t>(DataType::Int32, {2}, {lo, -7}))
                 .input("B", make_tensor<int32_t>(DataType::Int32, {2}, {-1, 2}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.data<int32_t>()[0], lo);
  EXPECT_EQ(out.at(0).tensor.data<int32_t>()[1], -3);  // truncation toward zero
  EXPECT_THROW(OneNode("Div", 14)
                   .input("A", make_tensor<int32_t>(DataType::Int32, {1}, {1}))
                   .input("B", make_tensor<int32_t>(DataType::Int32, {1}, {0}))
                   .run(),
               Error);
}

// Integer Add, Sub and Mul wrap in every integer type, as two's complement does: int8 and int16 too, whose
// unsigned forms C++ promotes to int, where 65535 * 65535 overflows (found by fuzz_run). Under UBSan by
// sanitized_ops.
template <class T>
void expect_wrapping_arithmetic(DataType dt) {
  using L = std::numeric_limits<T>;
  using U = std::make_unsigned_t<T>;
  const std::vector<T> a{L::max(), L::min(), L::max(), static_cast<T>(L::max() / 2 + 1)};
  const std::vector<T> b{L::max(), L::max(), static_cast<T>(1), static_cast<T>(3)};
  for (const char* op : {"Add", "Sub", "Mul"}) {
    auto out = OneNode(op, 14).input("A", make_tensor<T>(dt, {4}, a)).input("B", make_tensor<T>(dt, {4}, b)).run();
    const T* y = out.at(0).tensor.template data<T>();
    for (size_t i = 0; i < a.size(); ++i) {
      // The expected value in the widest unsigned type, cut to T's width.
      const uint64_t x = static_cast<U>(a[i]), z = static_cast<U>(b[i]);
      const uint64_t wide = std::string(op) == "Add" ? x + z : std::string(op) == "Sub" ? x - z : x * z;
      EXPECT_EQ(y[i], static_cast<T>(static_cast<U>(wide))) << op << " " << dt << " element " << i;
    }
  }
}

TEST(Mul, IntegerOverflowWrapsInEveryIntegerType_Opset14) {
  testing::for_each_integer_type([]<class T>() { expect_wrapping_arithmetic<T>(dtype_of<T>()); });
}

TEST(Add, MismatchedShapesAreAClearError_Opset14) {
  try {
    OneNode("Add", 14)
        .input("A", make_tensor<float>(DataType::Float, {2}, {1, 2}))
        .input("B", make_tensor<float>(DataType::Float, {3}, {1, 2, 3}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(Add)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("do not broadcast"), std::string::npos) << e.what();
  }
}

TEST(Registry, OpBeforeItsFirstVersionIsRefused) {
  try {
    OneNode("Gelu", 17).input("X", make_tensor<float>(DataType::Float, {1}, {1})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Gelu' does not exist in opset 17"), std::string::npos) << e.what();
  }
}

TEST(Registry, UnimplementedVersionSaysWhatExistsAndNeverDowngrades) {
  ops::Registry r;
  r.add(ops::OpDef{"", "Relu", 6, {}, [](ops::InferContext&) {}, [](const ops::KernelInit&) -> std::unique_ptr<ops::Kernel> { return nullptr; }});
  Node n;
  n.op_type = "Relu";
  EXPECT_EQ(r.resolve(n, 13 - 1).since_version, 6);  // opset 12 binds Relu-6
  try {
    r.resolve(n, 14);  // opset 14 needs Relu-14, which this registry lacks
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Relu(14) (opset 14) is not implemented; implemented versions: 6"), std::string::npos)
        << e.what();
  }
  // A version that is not in the spec cannot be registered.
  EXPECT_THROW(r.add(ops::OpDef{"", "Relu", 7, {}, [](ops::InferContext&) {}, [](const ops::KernelInit&) -> std::unique_ptr<ops::Kernel> { return nullptr; }}), Error);
}

}  // namespace
}  // namespace onyx
