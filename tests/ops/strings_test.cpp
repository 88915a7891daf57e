#include <gtest/gtest.h>

#include <functional>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"
#include "ops/text/re2_lite.hpp"
#include "ops/text/unicode.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;

using testing::make_tensor;
using testing::ModelBuilder;
using testing::OneNode;
using testing::values_of;
using D = DataType;

Tensor strs(std::vector<int64_t> dims, std::vector<std::string> v) { return Tensor::strings("", std::move(dims), std::move(v)); }

// One node with tensor inputs and any attributes, string lists included.
struct TextNode {
  ModelBuilder mb;
  pb::Graph g;
  std::map<std::string, Datum> feeds;
  pb::Node* node;
  TextNode(const std::string& op, std::vector<std::string> ins, int outputs = 1) {
    std::vector<std::string> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back("out" + std::to_string(i));
    node = &mb.node(g, op, ins, outs);
    for (auto& o : outs) mb.output(g, o);
  }
  TextNode& tensor(const std::string& name, Tensor t) {
    mb.input(g, name, mb.tensor_t(t.dtype(), t.dims()));
    feeds[name] = Datum::of(std::move(t));
    return *this;
  }
  TextNode& str(const std::string& name, const std::string& v) {
    mb.attr(*node, name, pb::AttrType::String).s = mb.arena.save(v);
    return *this;
  }
  TextNode& strings(const std::string& name, const std::vector<std::string>& v) {
    auto& a = mb.attr(*node, name, pb::AttrType::Strings);
    for (const auto& s : v) a.strings.push_back(mb.arena.save(s));
    return *this;
  }
  TextNode& integer(const std::string& name, int64_t v) {
    mb.attr_int(*node, name, v);
    return *this;
  }
  std::vector<Datum> run(int64_t opset) { return mb.run(g, opset, feeds); }
};

// ---- StringNormalizer ----

TEST(StringNormalizer, DropsStopwordsCaseInsensitivelyAndUppercases_Opset10) {
  auto out = TextNode("StringNormalizer", {"x"})
                 .tensor("x", strs({1, 6}, {"Monday", "tuesday", "wednesday", "Monday", "tuesday", "wednesday"}))
                 .str("case_change_action", "UPPER")
                 .strings("stopwords", {"monday"})
                 .run(10);
  const Tensor& y = out.at(0).tensor;
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(y.string_values(), (std::vector<std::string>{"TUESDAY", "WEDNESDAY", "TUESDAY", "WEDNESDAY"}));
}

TEST(StringNormalizer, CaseSensitiveStopwordsKeepOtherCases_Opset10) {
  auto out = TextNode("StringNormalizer", {"x"})
                 .tensor("x", strs({3}, {"monday", "Monday", "x"}))
                 .integer("is_case_sensitive", 1)
                 .strings("stopwords", {"monday"})
                 .run(10);
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"Monday", "x"}));
}

TEST(StringNormalizer, AllDroppedGivesOneEmptyString_Opset10) {
  auto out = TextNode("StringNormalizer", {"x"})
                 .tensor("x", strs({2}, {"monday", "MONDAY"}))
                 .strings("stopwords", {"Monday"})
                 .run(10);
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1}));
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{""}));
}

TEST(StringNormalizer, MapsLatinGreekAndCyrillicWithoutLocales_Opset10) {
  auto out = TextNode("StringNormalizer", {"x"})
                 .tensor("x", strs({3}, {"Ça Été Ÿ", "ΣΟΦΊΑ", "Привет Ёж"}))
                 .str("case_change_action", "LOWER")
                 .run(10);
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"ça été ÿ", "σοφία", "привет ёж"}));
  auto up = TextNode("StringNormalizer", {"x"})
                .tensor("x", strs({2}, {"straße ĳ ǆ", "ıi"}))
                .str("case_change_action", "UPPER")
                .run(10);
  EXPECT_EQ(up.at(0).tensor.string_values(), (std::vector<std::string>{"STRAßE Ĳ Ǆ", "II"}));
  auto tr = TextNode("StringNormalizer", {"x"})
                .tensor("x", strs({1}, {"Iiİı"}))
                .str("case_change_action", "UPPER")
                .str("locale", "tr_TR.UTF-8")
                .run(10);
  EXPECT_EQ(tr.at(0).tensor.string_values(), (std::vector<std::string>{"IİİI"}));
}

TEST(StringNormalizer, RejectsBadShapesAndActions_Opset10) {
  std::string e = error_of([] { TextNode("StringNormalizer", {"x"}).tensor("x", strs({2, 2}, {"a", "b", "c", "d"})).run(10); });
  EXPECT_NE(e.find("[C] or [1, C]"), std::string::npos) << e;
  e = error_of([] { TextNode("StringNormalizer", {"x"}).tensor("x", strs({1}, {"a"})).str("case_change_action", "TITLE").run(10); });
  EXPECT_NE(e.find("LOWER, UPPER or NONE"), std::string::npos) << e;
}

// ---- RegexFullMatch ----

TEST(RegexFullMatch, MatchesWholeStringsWithRe2Syntax_Opset20) {
  auto out = TextNode("RegexFullMatch", {"x"})
                 .tensor("x", strs({2, 2}, {"account@gmail.com", "account@hotmail.com", "not email", "account2@yahoo.com"}))
                 .str("pattern", R"((\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$))")
                 .run(20);
  const Tensor& y = out.at(0).tensor;
  EXPECT_EQ(y.dtype(), D::Bool);
  EXPECT_EQ(values_of<bool>(y), (std::vector<bool>{true, false, false, true}));
}

TEST(RegexFullMatch, EngineFollowsRe2Semantics) {
  using ops::text::Regex;
  EXPECT_TRUE(Regex("a.c").full_match("a\xE4\xB8\xAD" "c"));  // . is one code point
  EXPECT_FALSE(Regex("a.c").full_match("a\nc"));
  EXPECT_TRUE(Regex("(?s)a.c").full_match("a\nc"));
  EXPECT_TRUE(Regex("(?i)straSSe|ПРИВЕТ").full_match("привет"));
  EXPECT_FALSE(Regex("a\\s").full_match("a\v"));  // RE2's \s has no \v
  EXPECT_TRUE(Regex("x{2,3}").full_match("xxx"));
  EXPECT_FALSE(Regex("x{2,3}").full_match("xxxx"));
  EXPECT_TRUE(Regex("a{,2}").full_match("a{,2}"));  // not a repeat in RE2
  EXPECT_TRUE(Regex("\\Qa.b\\E").full_match("a.b"));
  EXPECT_TRUE(Regex("(?P<word>[[:alpha:]]+)\\b").full_match("hello"));
  // Linear time: this would take forever with a backtracking matcher.
  std::string many(20000, 'a');
  EXPECT_FALSE(Regex("(a*)*(a|aa)*b").full_match(many));
}

TEST(RegexFullMatch, RefusesWhatRe2Refuses_Opset20) {
  for (const char* p : {"(a)\\1", "(?=a)a", "a**", "(", "[a", "x{1001}", "\\C"}) {
    std::string e = error_of([&] { ops::text::Regex r(p); });
    EXPECT_NE(e.find("regex pattern"), std::string::npos) << p << ": " << e;
  }
  std::string e = error_of([] { TextNode("RegexFullMatch", {"x"}).tensor("x", strs({1}, {"a"})).str("pattern", "(a)\\1").run(20); });
  EXPECT_NE(e.find("backreferences are not supported"), std::string::npos) << e;
}

// ---- StringSplit ----

TEST(StringSplit, SplitsOnDelimiterPaddingWithEmptyStrings_Opset20) {
  auto out = TextNode("StringSplit", {"x"}, 2)
                 .tensor("x", strs({2}, {"o-n-n--x-", "a"}))
                 .str("delimiter", "-")
                 .run(20);
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(out.at(0).tensor.string_values(),
            (std::vector<std::string>{"o", "n", "n", "", "x", "", "a", "", "", "", "", ""}));
  EXPECT_EQ(values_of<int64_t>(out.at(1).tensor), (std::vector<int64_t>{6, 1}));
}

TEST(StringSplit, WhitespaceModeWithMaxsplitKeepsTheRest_Opset20) {
  auto out = TextNode("StringSplit", {"x"}, 2)
                 .tensor("x", strs({2, 2}, {"hello world", "  ", "o n  n x ", "the\tquick brown fox"}))
                 .integer("maxsplit", 2)
                 .run(20);
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"hello", "world", "", "", "", "", "o", "n",
                                                                        "n x ", "the", "quick", "brown fox"}));
  EXPECT_EQ(values_of<int64_t>(out.at(1).tensor), (std::vector<int64_t>{2, 0, 3, 3}));
}

TEST(StringSplit, EmptyInputGivesEmptyOutputs_Opset20) {
  auto out = TextNode("StringSplit", {"x"}, 2).tensor("x", strs({0}, {})).run(20);
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(out.at(1).tensor.dims(), (std::vector<int64_t>{0}));
}

// ---- StringConcat ----

TEST(StringConcat, BroadcastsAndKeepsUtf8_Opset20) {
  auto out = OneNode("StringConcat", 20)
                 .input("x", strs({3}, {"cat", "dog", "中"}))
                 .input("y", strs({1}, {"s"}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"cats", "dogs", "中s"}));
  auto scalar = OneNode("StringConcat", 20).input("x", strs({}, {"a"})).input("y", strs({}, {""})).run();
  EXPECT_EQ(scalar.at(0).tensor.dims(), (std::vector<int64_t>{}));
}

TEST(StringConcat, MismatchedShapesAndNonStringsAreErrors_Opset20) {
  std::string e = error_of([] { OneNode("StringConcat", 20).input("x", strs({2}, {"a", "b"})).input("y", strs({3}, {"a", "b", "c"})).run(); });
  EXPECT_NE(e.find("do not broadcast"), std::string::npos) << e;
  e = error_of([] {
    OneNode("StringConcat", 20).input("x", make_tensor<float>(D::Float, {1}, {1})).input("y", strs({1}, {"a"})).run();
  });
  EXPECT_NE(e.find("StringConcat"), std::string::npos) << e;
  e = error_of([] { OneNode("StringConcat", 19).input("x", strs({1}, {"a"})).input("y", strs({1}, {"a"})).run(); });
  EXPECT_NE(e.find("does not exist in opset 19"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
