#include <gtest/gtest.h>

#include <functional>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;

using testing::make_tensor;
using testing::ModelBuilder;
using testing::values_of;
using D = DataType;

struct TfIdf {
  ModelBuilder mb;
  pb::Graph g;
  pb::Node* node;
  Tensor x;
  TfIdf(Tensor input, int64_t min_n, int64_t max_n, int64_t skip, const std::string& mode) : x(std::move(input)) {
    node = &mb.node(g, "TfIdfVectorizer", {"x"}, {"y"});
    mb.input(g, "x", mb.tensor_t(x.dtype(), x.dims()));
    mb.output(g, "y");
    mb.attr_int(*node, "min_gram_length", min_n);
    mb.attr_int(*node, "max_gram_length", max_n);
    mb.attr_int(*node, "max_skip_count", skip);
    mb.attr(*node, "mode", pb::AttrType::String).s = mb.arena.save(mode);
  }
  TfIdf& ints(const std::string& name, std::vector<int64_t> v) {
    mb.attr_ints(*node, name, std::move(v));
    return *this;
  }
  TfIdf& strings(const std::string& name, const std::vector<std::string>& v) {
    auto& a = mb.attr(*node, name, pb::AttrType::Strings);
    for (const auto& s : v) a.strings.push_back(mb.arena.save(s));
    return *this;
  }
  TfIdf& floats(const std::string& name, std::vector<float> v) {
    mb.attr(*node, name, pb::AttrType::Floats).floats = std::move(v);
    return *this;
  }
  Tensor run() { return mb.run(g, 9, {{"x", Datum::of(x)}}).at(0).tensor; }
};

Tensor i32(std::vector<int64_t> dims, std::vector<int32_t> v) { return make_tensor<int32_t>(D::Int32, std::move(dims), v); }

const std::vector<int32_t> kInput = {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8};

// The ONNX spec example pool: unigrams 2,3,5,4 then bigrams 5-6, 7-8, 6-7.
TfIdf spec_example(Tensor x, int64_t min_n, int64_t max_n, int64_t skip) {
  TfIdf t(std::move(x), min_n, max_n, skip, "TF");
  t.ints("ngram_counts", {0, 4}).ints("ngram_indexes", {0, 1, 2, 3, 4, 5, 6}).ints("pool_int64s", {2, 3, 5, 4, 5, 6, 7, 8, 6, 7});
  return t;
}

TEST(TfIdfVectorizer, UniAndBigramsWithSkips_Opset9) {
  Tensor y = spec_example(i32({12}, kInput), 1, 2, 5).run();
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{7}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 3, 1, 0, 1, 3, 1}));
}

TEST(TfIdfVectorizer, OnlyBigramsPerRow_Opset9) {
  Tensor y = spec_example(i32({2, 6}, kInput), 2, 2, 0).run();
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}));
}

TEST(TfIdfVectorizer, StringPoolWithIdfAndTfidfWeights_Opset9) {
  Tensor x = Tensor::strings("", {5}, {"a", "b", "a", "c", "a"});
  auto make = [&](const std::string& mode) {
    TfIdf t(x, 1, 1, 0, mode);
    t.ints("ngram_counts", {0}).ints("ngram_indexes", {1, 0, 2}).strings("pool_strings", {"a", "b", "z"})
        .floats("weights", {0.5f, 2.0f, 4.0f});
    return t.run();
  };
  // columns: 0 <- "b", 1 <- "a", 2 <- "z"
  EXPECT_EQ(values_of<float>(make("TF")), (std::vector<float>{1, 3, 0}));
  EXPECT_EQ(values_of<float>(make("IDF")), (std::vector<float>{0.5f, 2, 0}));
  EXPECT_EQ(values_of<float>(make("TFIDF")), (std::vector<float>{0.5f, 6, 0}));
}

TEST(TfIdfVectorizer, BadAttributesAreErrors_Opset9) {
  std::string e = error_of([] {
    TfIdf t(i32({2}, {1, 2}), 1, 1, 0, "TF");
    t.ints("ngram_counts", {0}).ints("ngram_indexes", {0}).run();
  });
  EXPECT_NE(e.find("exactly one of pool_int64s and pool_strings"), std::string::npos) << e;
  e = error_of([] {
    TfIdf t(i32({2}, {1, 2}), 1, 2, 0, "TF");
    t.ints("ngram_counts", {0, 1}).ints("ngram_indexes", {0, 1}).ints("pool_int64s", {1, 2, 3, 4}).run();
  });
  EXPECT_NE(e.find("not a multiple of 2"), std::string::npos) << e;
  e = error_of([] {
    TfIdf t(i32({2}, {1, 2}), 1, 1, 0, "BM25");
    t.ints("ngram_counts", {0}).ints("ngram_indexes", {0}).ints("pool_int64s", {1}).run();
  });
  EXPECT_NE(e.find("mode must be TF, IDF or TFIDF"), std::string::npos) << e;
  e = error_of([] {
    TfIdf t(Tensor::strings("", {1}, {"a"}), 1, 1, 0, "TF");
    t.ints("ngram_counts", {0}).ints("ngram_indexes", {0}).ints("pool_int64s", {1}).run();
  });
  EXPECT_NE(e.find("pool_int64s needs an integer input"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
