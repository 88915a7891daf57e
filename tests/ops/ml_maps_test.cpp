#include <gtest/gtest.h>

#include "ml_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

Tensor scalar_f(float v) { return make_tensor<float>(DataType::Float, {}, {v}); }

TEST(ZipMap, RowsBecomeMaps) {
  auto out = MlNode("ZipMap", 1)
                 .input("X", f32({2, 3}, {1, 2, 3, 4, 5, 6}))
                 .attr_strings("classlabels_strings", {"a", "b", "c"})
                 .run();
  ASSERT_EQ(out[0].kind, Datum::Kind::Sequence);
  ASSERT_EQ(out[0].elements.size(), 2u);
  const Datum& m = out[0].elements[1];
  ASSERT_EQ(m.kind, Datum::Kind::Map);
  EXPECT_EQ(m.map_keys.string_values(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_TRUE(m.map_values);
  ASSERT_EQ(m.map_values->elements.size(), 3u);
  EXPECT_EQ(m.map_values->elements[2].tensor.data<float>()[0], 6.0f);
  auto ints = MlNode("ZipMap", 1).input("X", f32({2}, {0.5f, 0.25f})).attr_ints("classlabels_int64s", {7, 9}).run();
  ASSERT_EQ(ints[0].elements.size(), 1u);
  EXPECT_EQ(ints[0].elements[0].map_keys.data<int64_t>()[1], 9);
}

TEST(ZipMap, ColumnCountMustMatchLabels) {
  std::string e = error_of(MlNode("ZipMap", 1).input("X", f32({1, 2}, {1, 2})).attr_ints("classlabels_int64s", {1, 2, 3}));
  EXPECT_NE(e.find("there are 3 class labels"), std::string::npos) << e;
}

TEST(CastMap, DenseAndSparse) {
  Datum m = make_map(i64({2}, {3, 1}), {scalar_f(1.5f), scalar_f(2.5f)});
  auto dense = MlNode("CastMap", 1).map_input("X", m, DataType::Int64, DataType::Float).run();
  EXPECT_EQ(dense[0].tensor.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(vals<float>(dense[0]), (std::vector<float>{2.5f, 1.5f}));
  auto sparse = MlNode("CastMap", 1)
                    .map_input("X", m, DataType::Int64, DataType::Float)
                    .attr_string("map_form", "SPARSE")
                    .attr_int("max_map", 5)
                    .attr_string("cast_to", "TO_INT64")
                    .run();
  EXPECT_EQ(vals<int64_t>(sparse[0]), (std::vector<int64_t>{0, 2, 0, 1, 0}));
  auto str = MlNode("CastMap", 1).map_input("X", m, DataType::Int64, DataType::Float).attr_string("cast_to", "TO_STRING").run();
  EXPECT_EQ(str[0].tensor.string_values(), (std::vector<std::string>{"2.500000", "1.500000"}));
}

TEST(CastMap, SparseKeyBeyondMaxMapIsAnError) {
  Datum m = make_map(i64({1}, {9}), {scalar_f(1)});
  std::string e = error_of(MlNode("CastMap", 1)
                               .map_input("X", m, DataType::Int64, DataType::Float)
                               .attr_string("map_form", "SPARSE")
                               .attr_int("max_map", 3));
  EXPECT_NE(e.find("key 9 is outside [0, max_map = 3)"), std::string::npos) << e;
}

TEST(DictVectorizer, SpecExample) {
  Datum m = make_map(strs({2}, {"a", "c"}), {make_tensor<double>(DataType::Double, {}, {4}),
                                            make_tensor<double>(DataType::Double, {}, {8})});
  auto out = MlNode("DictVectorizer", 1)
                 .map_input("X", m, DataType::String, DataType::Double)
                 .attr_strings("string_vocabulary", {"a", "c", "b", "z"})
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), DataType::Double);
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(vals<double>(out[0]), (std::vector<double>{4, 8, 0, 0}));
}

TEST(DictVectorizer, IntKeysToStringsAndKeyTypeMismatch) {
  Datum m = make_map(i64({2}, {20, 10}), {strs({}, {"x"}), strs({}, {"y"})});
  auto out = MlNode("DictVectorizer", 1)
                 .map_input("X", m, DataType::Int64, DataType::String)
                 .attr_ints("int64_vocabulary", {10, 20, 30})
                 .run();
  EXPECT_EQ(out[0].tensor.string_values(), (std::vector<std::string>{"y", "x", ""}));
  std::string e = error_of(MlNode("DictVectorizer", 1)
                               .map_input("X", m, DataType::Int64, DataType::String)
                               .attr_strings("string_vocabulary", {"a"}));
  EXPECT_NE(e.find("the vocabulary is string"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
