#include "ir/spec_table.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace onyx::spec {
namespace ONYX_TEST_FILE {

TEST(SpecTable, ResolvesHighestSinceVersionNotAboveOpset) {
  EXPECT_EQ(resolve_since_version("", "Softmax", 21), 13);
  EXPECT_EQ(resolve_since_version("ai.onnx", "Softmax", 12), 11);
  EXPECT_EQ(resolve_since_version("", "Softmax", 13), 13);
  EXPECT_EQ(resolve_since_version("", "Add", 6), 6);
  EXPECT_EQ(resolve_since_version("", "Add", 1), 1);
  EXPECT_EQ(resolve_since_version("", "Add", 100), 14);
}

TEST(SpecTable, OpIntroducedAfterOpsetIsUnresolved) {
  EXPECT_EQ(resolve_since_version("", "Gelu", 19), std::nullopt);
  EXPECT_EQ(resolve_since_version("", "Gelu", 20), 20);
  EXPECT_EQ(resolve_since_version("", "Attention", 22), std::nullopt);
  EXPECT_EQ(resolve_since_version("", "Add", 0), std::nullopt);
  EXPECT_EQ(resolve_since_version("", "Add", -5), std::nullopt);
}

TEST(SpecTable, UnknownOpOrDomainIsUnresolved) {
  EXPECT_EQ(resolve_since_version("", "NoSuchOp", 21), std::nullopt);
  EXPECT_EQ(resolve_since_version("", "softmax", 21), std::nullopt);  // case-sensitive
  EXPECT_EQ(resolve_since_version("com.microsoft", "Softmax", 21), std::nullopt);
  EXPECT_TRUE(since_versions("", "NoSuchOp").empty());
  EXPECT_TRUE(since_versions("ai.onnx.ml", "Softmax").empty());
}

TEST(SpecTable, MlDomain) {
  EXPECT_EQ(resolve_since_version("ai.onnx.ml", "LabelEncoder", 3), 2);
  EXPECT_EQ(resolve_since_version("ai.onnx.ml", "LabelEncoder", 5), 4);
  EXPECT_EQ(resolve_since_version("ai.onnx.ml", "TreeEnsemble", 4), std::nullopt);
  EXPECT_EQ(resolve_since_version("ai.onnx.ml", "TreeEnsemble", 5), 5);
  EXPECT_EQ(since_versions("ai.onnx.ml", "LabelEncoder"), (std::vector<int>{1, 2, 4}));
  // ML ops do not exist in the default domain.
  EXPECT_EQ(resolve_since_version("", "LabelEncoder", 21), std::nullopt);
}

TEST(SpecTable, TrainingDomain) {
  EXPECT_EQ(resolve_since_version("ai.onnx.preview.training", "Adam", 1), 1);
}

TEST(SpecTable, SinceVersionsAreAscending) {
  EXPECT_EQ(since_versions("", "Softmax"), (std::vector<int>{1, 11, 13}));
  EXPECT_EQ(since_versions("ai.onnx", "Add"), (std::vector<int>{1, 6, 7, 13, 14}));
}

TEST(SpecTable, Domains) {
  EXPECT_EQ(canonical_domain(""), "ai.onnx");
  EXPECT_EQ(canonical_domain("ai.onnx"), "ai.onnx");
  EXPECT_EQ(canonical_domain("com.microsoft"), "com.microsoft");
  EXPECT_TRUE(is_known_domain(""));
  EXPECT_TRUE(is_known_domain("ai.onnx"));
  EXPECT_TRUE(is_known_domain("ai.onnx.ml"));
  EXPECT_TRUE(is_known_domain("ai.onnx.preview"));
  EXPECT_TRUE(is_known_domain("ai.onnx.preview.training"));
  EXPECT_FALSE(is_known_domain("com.microsoft"));
  EXPECT_FALSE(is_known_domain("ai.onnx.contrib"));
}

}  // namespace
}  // namespace onyx::spec
