// Decoding then encoding a model gives back the same bytes: every field, its presence and unknown fields survive.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "format/mapped_file.hpp"
#include "format/onnx_proto.hpp"
#include "test_data.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

TEST(RoundTrip, EveryTestModelReEncodesToTheSameBytes) {
  auto models = testing::all_test_models();
  if (models.empty()) ONYX_MISSING_INSTALLED_DATA("no ONNX test data installed (scripts/setup.sh installs libonnx-testdata)");
  size_t checked = 0;
  for (const auto& path : models) {
    pb::ModelDocument doc = pb::load_model_file(path);
    std::string out = pb::serialize_model(doc.model);
    EXPECT_EQ(out, doc.source->view()) << path;
    ++checked;
  }
  EXPECT_GT(checked, 1000u);
}

TEST(RoundTrip, UnknownFieldsAndPresenceSurvive) {
  pb::Model m;
  m.ir_version = 0;  // present although zero
  pb::Arena arena;
  // Field 99 (varint 5) is unknown to the reader.
  std::string bytes = pb::serialize_model(m) + std::string("\x98\x06\x05", 3);
  pb::Model back = pb::parse_model(bytes, "test");
  ASSERT_TRUE(back.ir_version.has_value());
  EXPECT_EQ(*back.ir_version, 0);
  ASSERT_EQ(back.unknown.size(), 1u);
  EXPECT_EQ(pb::serialize_model(back), bytes);
}

TEST(RoundTrip, WrongWireTypeForAKnownFieldIsKeptAsUnknown) {
  // ir_version (field 1) sent as length-delimited.
  std::string bytes("\x0a\x01x", 3);
  pb::Model m = pb::parse_model(bytes, "test");
  EXPECT_FALSE(m.ir_version.has_value());
  EXPECT_EQ(m.unknown.size(), 1u);
  EXPECT_EQ(pb::serialize_model(m), bytes);
}

TEST(RoundTrip, PackedAndUnpackedRepeatedFieldsDecodeAlike) {
  pb::Tensor t;
  t.dims = {2, 3};
  t.int64_data = {-1, 5, 1ll << 40};
  t.float_data = {1.5f, -2.f};
  std::string packed = pb::serialize_tensor(t);
  // dims are written unpacked, int64_data packed (as onnx.proto declares); read both back.
  pb::Tensor back = pb::parse_tensor(packed, "t");
  EXPECT_EQ(back.dims, t.dims);
  EXPECT_EQ(back.int64_data, t.int64_data);
  EXPECT_EQ(back.float_data, t.float_data);
  // dims given packed instead: field 1, length 2, values 2 and 3.
  pb::Tensor p = pb::parse_tensor(std::string("\x0a\x02\x02\x03", 4), "t");
  EXPECT_EQ(p.dims, (std::vector<int64_t>{2, 3}));
}

TEST(RoundTrip, NestingDepthIsBounded) {
  // A TypeProto nested 200 levels deep through sequence_type, deeper than the reader allows.
  pb::Type deep;
  pb::Type* cur = &deep;
  for (int i = 0; i < 200; ++i) {
    cur->sequence_type.emplace();
    cur = &cur->sequence_type->elem_type.emplace();
  }
  pb::ValueInfo vi;
  vi.type = deep;
  pb::Graph g;
  g.input.push_back(vi);
  pb::Model m;
  m.graph = g;
  std::string bytes = pb::serialize_model(m);
  try {
    pb::parse_model(bytes, "deep.onnx");
    FAIL() << "expected a depth error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
