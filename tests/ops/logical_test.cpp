#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <random>
#include <array>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::expect_error;

std::vector<bool> bools(const Datum& d) {
  const Tensor& t = d.tensor;
  EXPECT_EQ(t.dtype(), DataType::Bool);
  const uint8_t* p = t.data<uint8_t>();
  std::vector<bool> v;
  for (uint64_t i = 0; i < t.element_count(); ++i) v.push_back(p[i] != 0);
  return v;
}

Tensor bool_tensor(std::vector<int64_t> dims, const std::vector<uint8_t>& v) {
  Tensor t = make_tensor<uint8_t>(DataType::UInt8, dims, v);
  return Tensor::owned("", DataType::Bool, dims, std::string(t.bytes()));
}

// Output type inferred for a one-node model whose inputs have the given element types and dims ("N" = symbol).
Type inferred(const std::string& op, int64_t opset, const std::vector<std::pair<DataType, std::vector<std::string>>>& ins) {
  pb::Arena arena;
  pb::Model m;
  m.ir_version = 10;
  m.opset_import.push_back({"", opset, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "g";
  pb::Node n;
  n.op_type = arena.save(op);
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    n.input.push_back(arena.save(name));
    pb::ValueInfo& vi = g.input.emplace_back();
    vi.name = arena.save(name);
    auto& tt = vi.type.emplace().tensor_type.emplace();
    tt.elem_type = static_cast<int32_t>(ins[i].first);
    auto& shape = tt.shape.emplace();
    for (const std::string& d : ins[i].second) {
      auto& dim = shape.dim.emplace_back();
      if (std::isdigit(static_cast<unsigned char>(d[0])))
        dim.dim_value = std::stoll(d);
      else
        dim.dim_param = arena.save(d);
    }
  }
  n.output.push_back(arena.save("out"));
  g.output.emplace_back().name = arena.save("out");
  g.node.push_back(n);
  Session s = Session::from_bytes(pb::serialize_model(m));
  return s.outputs().at(0).type;
}

TEST(Logical, AndOrXorTruthTables_Opset7) {
  auto a = [] { return bool_tensor({2, 2}, {0, 0, 1, 1}); };
  auto b = [] { return bool_tensor({2}, {0, 1}); };
  EXPECT_EQ(bools(OneNode("And", 7).input("A", a()).input("B", b()).run().at(0)), (std::vector<bool>{0, 0, 0, 1}));
  EXPECT_EQ(bools(OneNode("Or", 7).input("A", a()).input("B", b()).run().at(0)), (std::vector<bool>{0, 1, 1, 1}));
  EXPECT_EQ(bools(OneNode("Xor", 7).input("A", a()).input("B", b()).run().at(0)), (std::vector<bool>{0, 1, 1, 0}));
}

TEST(Logical, LegacyBroadcastAttribute_Opset1) {
  auto out = OneNode("Or", 1)
                 .input("A", bool_tensor({2, 2}, {0, 0, 1, 0}))
                 .input("B", bool_tensor({2}, {1, 0}))
                 .attr_int("broadcast", 1)
                 .attr_int("axis", 0)
                 .run();
  EXPECT_EQ(bools(out.at(0)), (std::vector<bool>{1, 1, 1, 0}));
  expect_error(OneNode("And", 1).input("A", bool_tensor({2, 2}, {0, 0, 1, 0})).input("B", bool_tensor({2}, {1, 0})),
               "broadcast is not set");
  auto less = OneNode("Less", 1)
                  .input("A", make_tensor<float>(DataType::Float, {2, 3}, {1, 2, 3, 4, 5, 6}))
                  .input("B", make_tensor<float>(DataType::Float, {3}, {2, 2, 5}))
                  .attr_int("broadcast", 1)
                  .run();
  EXPECT_EQ(bools(less.at(0)), (std::vector<bool>{1, 0, 1, 0, 0, 0}));
}

TEST(Compare, GreaterLessAndEqualVariants_Opset13) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = [&] { return make_tensor<float>(DataType::Float, {4}, {1, 2, 3, nan}); };
  auto b = [&] { return make_tensor<float>(DataType::Float, {4}, {2, 2, 2, nan}); };
  EXPECT_EQ(bools(OneNode("Greater", 13).input("A", a()).input("B", b()).run().at(0)), (std::vector<bool>{0, 0, 1, 0}));
  EXPECT_EQ(bools(OneNode("Less", 13).input("A", a()).input("B", b()).run().at(0)), (std::vector<bool>{1, 0, 0, 0}));
  EXPECT_EQ(bools(OneNode("Equal", 13).input("A", a()).input("B", b()).run().at(0)), (std::vector<bool>{0, 1, 0, 0}));
  EXPECT_EQ(bools(OneNode("GreaterOrEqual", 16).input("A", a()).input("B", b()).run().at(0)),
            (std::vector<bool>{0, 1, 1, 0}));
  EXPECT_EQ(bools(OneNode("LessOrEqual", 12).input("A", a()).input("B", b()).run().at(0)),
            (std::vector<bool>{1, 1, 0, 0}));
  auto u = OneNode("Greater", 9)
               .input("A", make_tensor<uint64_t>(DataType::UInt64, {2}, {~0ull, 1}))
               .input("B", make_tensor<uint64_t>(DataType::UInt64, {1}, {2}))
               .run();
  EXPECT_EQ(bools(u.at(0)), (std::vector<bool>{1, 0}));
}

TEST(Compare, EqualOnStringsFromOpset19Only) {
  auto out = OneNode("Equal", 19)
                 .input("A", Tensor::strings("", {3}, {"a", "b", "c"}))
                 .input("B", Tensor::strings("", {1}, {"b"}))
                 .run();
  EXPECT_EQ(bools(out.at(0)), (std::vector<bool>{0, 1, 0}));
  expect_error(OneNode("Equal", 13)
                   .input("A", Tensor::strings("", {1}, {"a"}))
                   .input("B", Tensor::strings("", {1}, {"a"})),
               "allowed");
  // Equal before opset 11 has only bool and 32/64-bit integers.
  expect_error(OneNode("Equal", 7)
                   .input("A", make_tensor<float>(DataType::Float, {1}, {1}))
                   .input("B", make_tensor<float>(DataType::Float, {1}, {1})),
               "allowed");
}

TEST(Compare, MismatchedShapesAndTypesAreErrors_Opset16) {
  expect_error(OneNode("LessOrEqual", 16)
                   .input("A", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                   .input("B", make_tensor<float>(DataType::Float, {3}, {1, 2, 3})),
               "do not broadcast");
  expect_error(OneNode("Greater", 13)
                   .input("A", make_tensor<float>(DataType::Float, {1}, {1}))
                   .input("B", make_tensor<double>(DataType::Double, {1}, {1})),
               "different element types");
}

TEST(Where, SpecExampleWithBroadcast_Opset16) {
  auto out = OneNode("Where", 16)
                 .input("C", bool_tensor({2, 2}, {1, 0, 1, 1}))
                 .input("X", make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4}))
                 .input("Y", make_tensor<float>(DataType::Float, {2, 2}, {9, 8, 7, 6}))
                 .run();
  const Tensor& y = out.at(0).tensor;
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 4), (std::vector<float>{1, 8, 3, 4}));
  auto b = OneNode("Where", 9)
               .input("C", bool_tensor({2, 1}, {1, 0}))
               .input("X", make_tensor<int64_t>(DataType::Int64, {3}, {1, 2, 3}))
               .input("Y", make_tensor<int64_t>(DataType::Int64, {1}, {-1}))
               .run();
  const Tensor& z = b.at(0).tensor;
  ASSERT_EQ(z.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<int64_t>(z.data<int64_t>(), z.data<int64_t>() + 6), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

// Random broadcast patterns (the causal-mask shape among them) against element-by-element index arithmetic.
TEST(Where, BroadcastPatternsMatchIndexArithmetic) {
  std::mt19937 rng(31);
  const std::vector<std::array<std::vector<int64_t>, 3>> cases = {
      {{{1, 1, 5, 5}, {2, 3, 5, 5}, {}}},   {{{5, 1}, {1, 4}, {5, 4}}},       {{{3, 1, 4}, {2, 1, 1, 4}, {1, 3, 1}}},
      {{{1}, {2, 3}, {2, 1}}},             {{{4, 1, 1}, {1, 6, 1}, {1, 1, 7}}}, {{{2, 3, 4}, {4}, {}}},
  };
  for (const auto& dims : cases) {
    Tensor c = Tensor::allocate(DataType::Bool, dims[0]), x = Tensor::allocate(DataType::Float, dims[1]),
           y = Tensor::allocate(DataType::Float, dims[2]);
    for (uint64_t i = 0; i < c.element_count(); ++i) c.mutable_data<uint8_t>()[i] = rng() % 2;
    for (uint64_t i = 0; i < x.element_count(); ++i) x.mutable_data<float>()[i] = static_cast<float>(rng() % 1000);
    for (uint64_t i = 0; i < y.element_count(); ++i) y.mutable_data<float>()[i] = -static_cast<float>(rng() % 1000);
    const Tensor z = OneNode("Where", 16).input("C", c).input("X", x).input("Y", y).run().at(0).tensor;
    size_t rank = 0;
    for (const auto& d : dims) rank = std::max(rank, d.size());
    ASSERT_EQ(z.dims().size(), rank);
    // The element of `t` (dims right-aligned, size-1 dims repeating) at output index `idx`.
    auto at = [&](const std::vector<int64_t>& d, const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (size_t i = 0; i < d.size(); ++i) off = off * d[i] + (d[i] == 1 ? 0 : idx[rank - d.size() + i]);
      return off;
    };
    std::vector<int64_t> idx(rank, 0);
    for (uint64_t i = 0; i < z.element_count(); ++i) {
      const float want = c.data<uint8_t>()[at(dims[0], idx)] ? x.data<float>()[at(dims[1], idx)] : y.data<float>()[at(dims[2], idx)];
      ASSERT_EQ(z.data<float>()[i], want) << "element " << i;
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < z.dims()[d]) break;
        idx[d] = 0;
      }
    }
  }
}

TEST(Where, StringsAndErrors) {
  auto out = OneNode("Where", 16)
                 .input("C", bool_tensor({2}, {0, 1}))
                 .input("X", Tensor::strings("", {2}, {"x0", "x1"}))
                 .input("Y", Tensor::strings("", {1}, {"y"}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"y", "x1"}));
  expect_error(OneNode("Where", 16)
                   .input("C", make_tensor<int32_t>(DataType::Int32, {1}, {1}))
                   .input("X", make_tensor<float>(DataType::Float, {1}, {1}))
                   .input("Y", make_tensor<float>(DataType::Float, {1}, {1})),
               "allowed");
  expect_error(OneNode("Where", 16)
                   .input("C", bool_tensor({1}, {1}))
                   .input("X", make_tensor<float>(DataType::Float, {1}, {1}))
                   .input("Y", make_tensor<int32_t>(DataType::Int32, {1}, {1})),
               "different element types");
  // bfloat16 only from opset 16.
  expect_error(OneNode("Where", 9)
                   .input("C", bool_tensor({1}, {1}))
                   .input("X", make_tensor<uint16_t>(DataType::BFloat16, {1}, {0}))
                   .input("Y", make_tensor<uint16_t>(DataType::BFloat16, {1}, {0})),
               "allowed");
}

TEST(Logical, EmptyTensorsBroadcast) {
  auto out = OneNode("Equal", 13)
                 .input("A", make_tensor<int32_t>(DataType::Int32, {0, 3}, {}))
                 .input("B", make_tensor<int32_t>(DataType::Int32, {3}, {1, 2, 3}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{0, 3}));
  auto w = OneNode("Where", 16)
               .input("C", bool_tensor({1, 0}, {}))
               .input("X", Tensor::strings("", {2, 1}, {"a", "b"}))
               .input("Y", Tensor::strings("", {1}, {"c"}))
               .run();
  EXPECT_EQ(w.at(0).tensor.dims(), (std::vector<int64_t>{2, 0}));
}

TEST(Logical, InferenceKeepsSymbolicDims) {
  Type w = inferred("Where", 16, {{DataType::Bool, {"N", "1"}}, {DataType::Float, {"1", "M"}}, {DataType::Float, {"M"}}});
  EXPECT_EQ(w.elem, DataType::Float);
  EXPECT_EQ(w.shape.to_string(), "[N,M]");
  Type e = inferred("Equal", 19, {{DataType::String, {"B", "3"}}, {DataType::String, {"3"}}});
  EXPECT_EQ(e.elem, DataType::Bool);
  EXPECT_EQ(e.shape.to_string(), "[B,3]");
  Type l = inferred("Greater", 1, {{DataType::Float, {"B", "3"}}, {DataType::Float, {"B", "3"}}});
  EXPECT_EQ(l.elem, DataType::Bool);
  EXPECT_EQ(l.shape.to_string(), "[B,3]");
  Type p = inferred("Pow", 15, {{DataType::Int32, {"B", "1"}}, {DataType::Float, {"4"}}});
  EXPECT_EQ(p.elem, DataType::Int32);
  EXPECT_EQ(p.shape.to_string(), "[B,4]");
  Type m = inferred("Max", 13, {{DataType::Float, {"B", "1"}}, {DataType::Float, {"5"}}, {DataType::Float, {"1", "1"}}});
  EXPECT_EQ(m.shape.to_string(), "[B,5]");
  EXPECT_THROW(inferred("Sum", 6, {{DataType::Float, {"B", "1"}}, {DataType::Float, {"B", "5"}}}), Error);
}

}  // namespace
}  // namespace onyx
