#include <gtest/gtest.h>

#include "base/dtype.hpp"
#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using Dims = std::vector<int64_t>;

TEST(Transpose, DefaultReversesAndPermMoves_Opset13) {
  auto d = OneNode("Transpose", 13).input("X", iota_f32({2, 3})).run();
  EXPECT_EQ(d.at(0).tensor.dims(), (Dims{3, 2}));
  EXPECT_EQ(values_of<float>(d[0].tensor), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  auto p = OneNode("Transpose", 13).input("X", iota_f32({2, 3, 4})).attr_ints("perm", {1, 2, 0}).run();
  EXPECT_EQ(p.at(0).tensor.dims(), (Dims{3, 4, 2}));
  EXPECT_EQ(values_of<float>(p[0].tensor)[1], 12.0f);  // [0,0,1] <- x[1,0,0]
}

TEST(Transpose, PackedInt4_Opset21) {
  // int4 [[1,2],[3,-4]] packed low nibble first -> transposed [[1,3],[2,-4]]
  Tensor x = Tensor::allocate(DataType::Int4, {2, 2});
  x.mutable_data<uint8_t>()[0] = pack_int4(1, 2);
  x.mutable_data<uint8_t>()[1] = pack_int4(3, -4);
  auto out = OneNode("Transpose", 21).input("X", x).run();
  const uint8_t* p = out.at(0).tensor.data<uint8_t>();
  EXPECT_EQ(unpack_int4(p[0], 0), 1);
  EXPECT_EQ(unpack_int4(p[0], 1), 3);
  EXPECT_EQ(unpack_int4(p[1], 0), 2);
  EXPECT_EQ(unpack_int4(p[1], 1), -4);
  EXPECT_THROW(OneNode("Transpose", 13).input("X", x).run(), Error);  // int4 needs Transpose-21
}

TEST(Transpose, BadPermIsAnError_Opset13) {
  try {
    OneNode("Transpose", 13).input("X", iota_f32({2, 3})).attr_ints("perm", {0, 0}).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a permutation"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
