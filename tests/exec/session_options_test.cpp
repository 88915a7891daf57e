// SessionOptions that change the model (free dimension overrides, initializer overrides, external data files in
// memory) and the models ONNX Runtime loads beyond the spec that sessions accept (IR 3 initializers outside the
// inputs, sparse Constant `value`s, sparse graph inputs and outputs, com.microsoft.SparseToDenseMatMul).
#include <gtest/gtest.h>

#include <cstring>

#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "format/onnx_proto.hpp"
#include "onyx/session.hpp"
#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;
using testing::f32;
using testing::values_of;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

pb::ValueInfo tensor_info(pb::Str name, int32_t elem, std::vector<pb::Dimension> dims, bool sparse = false) {
  pb::ValueInfo vi;
  vi.name = name;
  pb::Type& t = vi.type.emplace();
  pb::TypeTensor& tt = sparse ? t.sparse_tensor_type.emplace() : t.tensor_type.emplace();
  tt.elem_type = elem;
  tt.shape.emplace().dim = std::move(dims);
  return vi;
}

pb::Dimension fixed(int64_t v) {
  pb::Dimension d;
  d.dim_value = v;
  return d;
}

pb::Dimension symbol(pb::Str param, pb::OptStr denotation = std::nullopt) {
  pb::Dimension d;
  d.dim_param = param;
  d.denotation = denotation;
  return d;
}

// Y = Relu(X), X: float[N (denotation DATA_BATCH), 3].
std::string relu_model() {
  pb::Model m;
  m.ir_version = 10;
  m.opset_import.push_back({"", 21, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "relu";
  g.input.push_back(tensor_info("X", 1, {symbol("N", "DATA_BATCH"), fixed(3)}));
  pb::Node& n = g.node.emplace_back();
  n.op_type = "Relu";
  n.input = {"X"};
  n.output = {"Y"};
  g.output.push_back(tensor_info("Y", 1, {symbol("N"), fixed(3)}));
  return pb::serialize_model(m);
}

Datum ones(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return Datum::of(f32(std::move(dims), std::vector<float>(static_cast<size_t>(n), 1.0f)));
}

TEST(SessionOptions, FreeDimensionOverrideByNameFixesInputsAndRuns) {
  SessionOptions o;
  o.free_dimension_overrides_by_name = {{"N", 2}, {"unused", 7}};  // a key that matches nothing is ignored
  Session s = Session::from_bytes(relu_model(), o);
  EXPECT_EQ(s.inputs()[0].type.to_string_with_shape(), "float[2,3]");
  const auto out = s.run({{"X", ones({2, 3})}});
  EXPECT_EQ(out[0].second.tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(contains(error_of([&] { s.run({{"X", ones({4, 3})}}); }), "X"));  // the dim is fixed now
}

TEST(SessionOptions, FreeDimensionOverrideByDenotation) {
  SessionOptions o;
  o.free_dimension_overrides_by_denotation = {{"DATA_BATCH", 5}};
  Session s = Session::from_bytes(relu_model(), o);
  EXPECT_EQ(s.inputs()[0].type.shape.dims[0].value, std::optional<int64_t>(5));
  EXPECT_EQ(s.run({{"X", ones({5, 3})}})[0].second.tensor.dims(), (std::vector<int64_t>{5, 3}));
}

TEST(SessionOptions, NegativeFreeDimensionOverrideIsAnError) {
  SessionOptions o;
  o.free_dimension_overrides_by_name = {{"N", -1}};
  const std::string e = error_of([&] { Session::from_bytes(relu_model(), o); });
  EXPECT_TRUE(contains(e, "free dimension override by name 'N' is -1")) << e;
}

// Y = X * W, X: float[2], W: a float[2] initializer stored externally (location `location`, offset 4, 8 bytes).
std::string external_weight_model(pb::Str location) {
  pb::Model m;
  m.ir_version = 10;
  m.opset_import.push_back({"", 21, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "scale";
  g.input.push_back(tensor_info("X", 1, {fixed(2)}));
  pb::Tensor& w = g.initializer.emplace_back();
  w.name = "W";
  w.data_type = 1;
  w.dims = {2};
  w.data_location = 1;
  w.external_data.push_back({"location", location, {}});
  w.external_data.push_back({"offset", "4", {}});
  w.external_data.push_back({"length", "8", {}});
  pb::Node& n = g.node.emplace_back();
  n.op_type = "Mul";
  n.input = {"X", "W"};
  n.output = {"Y"};
  g.output.push_back(tensor_info("Y", 1, {fixed(2)}));
  return pb::serialize_model(m);
}

std::vector<float> scaled(const Session& s) {
  return values_of<float>(s.run({{"X", Datum::of(f32({2}, {1.0f, 10.0f}))}})[0].second.tensor);
}

TEST(SessionOptions, InitializerOverrideReplacesDataAndSkipsMissingExternalFile) {
  const std::string model = external_weight_model("no_such_weights.bin");
  EXPECT_TRUE(contains(error_of([&] { Session::from_bytes(model); }), "no_such_weights.bin"));
  SessionOptions o;
  o.initializer_overrides.emplace("W", f32({2}, {3.0f, 4.0f}));
  Session s = Session::from_bytes(model, o);
  EXPECT_EQ(scaled(s), (std::vector<float>{3.0f, 40.0f}));
  EXPECT_TRUE(s.inputs().size() == 1 && s.inputs()[0].name == "X");
}

TEST(SessionOptions, InitializerOverrideErrorsNameTheValue) {
  const std::string model = external_weight_model("no_such_weights.bin");
  SessionOptions wrong_name;
  wrong_name.initializer_overrides.emplace("Q", f32({2}, {3.0f, 4.0f}));
  std::string e = error_of([&] { Session::from_bytes(model, wrong_name); });
  EXPECT_TRUE(contains(e, "<bytes>: initializer override 'Q': not an initializer of the main graph")) << e;
  SessionOptions wrong_type;
  wrong_type.initializer_overrides.emplace("W", testing::i64({2}, {3, 4}));
  e = error_of([&] { Session::from_bytes(model, wrong_type); });
  EXPECT_TRUE(contains(e, "initializer override 'W' is int64, but the model's initializer is float")) << e;
}

TEST(SessionOptions, ExternalDataFileServedFromMemory) {
  const std::string model = external_weight_model("weights.bin");
  std::string file(12, '\0');
  const float w[2] = {5.0f, 6.0f};
  std::memcpy(file.data() + 4, w, sizeof w);
  SessionOptions o;
  o.external_data_files["weights.bin"] = std::make_shared<const std::string>(file);
  Session s = Session::from_bytes(model, o);
  EXPECT_EQ(scaled(s), (std::vector<float>{5.0f, 60.0f}));
  // The range is checked as for a file.
  o.external_data_files["weights.bin"] = std::make_shared<const std::string>(8, '\0');
  const std::string e = error_of([&] { Session::from_bytes(model, o); });
  EXPECT_TRUE(contains(e, "offset 4 + length 8 is beyond the end of the file (8 bytes)")) << e;
}

// IR 3: Y = MatMul(X, W) with the initializer W not listed as a graph input.
TEST(SessionLeniency, Ir3InitializerOutsideInputsIsAConstant) {
  pb::Model m;
  m.ir_version = 3;
  m.opset_import.push_back({"", 7, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "matmul";
  g.input.push_back(tensor_info("X", 1, {fixed(3), fixed(2)}));
  const float w[2] = {1.0f, 2.0f};
  pb::Tensor& t = g.initializer.emplace_back();
  t.name = "W";
  t.data_type = 1;
  t.dims = {2, 1};
  t.raw_data = pb::Str(reinterpret_cast<const char*>(w), sizeof w);
  pb::Node& n = g.node.emplace_back();
  n.op_type = "MatMul";
  n.input = {"X", "W"};
  n.output = {"Y"};
  g.output.push_back(tensor_info("Y", 1, {fixed(3), fixed(1)}));
  const std::string bytes = pb::serialize_model(m);
  // The checker (`onyx check`) still reports it.
  const auto problems = check::check_model(pb::load_model_bytes(bytes));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(contains(problems[0], "initializer 'W' is not a graph input")) << problems[0];
  SessionOptions quiet;
  quiet.log_level = 3;
  Session s = Session::from_bytes(bytes, quiet);
  ASSERT_EQ(s.inputs().size(), 1u);
  const auto y = s.run({{"X", Datum::of(f32({3, 2}, {1, 1, 2, 0, 0, 3}))}})[0].second.tensor;
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{3, 2, 6}));
}

// A Constant whose `value` holds a sparse float[3,3] (1.5 at 2, 2.5 at 4), output declared sparse_tensor.
TEST(SessionLeniency, SparseConstantValueAndSparseOutputRunDense) {
  pb::Model m;
  m.ir_version = 7;
  m.opset_import.push_back({"", 12, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "constant";
  pb::Node& n = g.node.emplace_back();
  n.op_type = "Constant";
  n.name = "C";
  n.output = {"values"};
  pb::Attribute& a = n.attribute.emplace_back();
  a.name = "value";
  a.type = static_cast<int32_t>(pb::AttrType::SparseTensor);
  pb::SparseTensor& sp = a.sparse_tensor.emplace();
  sp.dims = {3, 3};
  pb::Tensor& v = sp.values.emplace();
  v.data_type = 1;
  v.dims = {2};
  v.float_data = {1.5f, 2.5f};
  pb::Tensor& i = sp.indices.emplace();
  i.data_type = 7;
  i.dims = {2};
  i.int64_data = {2, 4};
  g.output.push_back(tensor_info("values", 1, {fixed(3), fixed(3)}, true));
  const std::string bytes = pb::serialize_model(m);
  pb::ModelDocument doc = pb::load_model_bytes(bytes);
  const auto lenient = check::accept_runtime_models(doc, 4);
  ASSERT_EQ(lenient.spec_problems.size(), 1u);  // what `onyx check` reports
  EXPECT_TRUE(contains(lenient.spec_problems[0], "node 'C' (Constant): attribute 'value' is sparse_tensor, expected tensor"))
      << lenient.spec_problems[0];
  SessionOptions quiet;
  quiet.log_level = 3;
  Session s = Session::from_bytes(bytes, quiet);
  EXPECT_EQ(s.outputs()[0].type.kind, Type::Kind::SparseTensor);  // as declared, for the caller to re-sparsify
  const Datum out = s.run({})[0].second;
  ASSERT_EQ(out.kind, Datum::Kind::Tensor);
  EXPECT_EQ(out.tensor.dims(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values_of<float>(out.tensor), (std::vector<float>{0, 0, 1.5f, 0, 2.5f, 0, 0, 0, 0}));
}

// com.microsoft.SparseToDenseMatMul(A, B), A declared sparse_tensor, in a model importing only com.microsoft.
std::string sparse_matmul_model(int64_t a0, int64_t a1, int64_t b0, int64_t b1, float alpha, int64_t trans_a,
                                int64_t trans_b) {
  pb::Model m;
  m.ir_version = 7;
  m.opset_import.push_back({"com.microsoft", 1, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "spmm";
  g.input.push_back(tensor_info("A", 1, {fixed(a0), fixed(a1)}, true));
  g.input.push_back(tensor_info("B", 1, {fixed(b0), fixed(b1)}));
  pb::Node& n = g.node.emplace_back();
  n.op_type = "SparseToDenseMatMul";
  n.domain = "com.microsoft";
  n.input = {"A", "B"};
  n.output = {"Y"};
  pb::Attribute& al = n.attribute.emplace_back();
  al.name = "alpha";
  al.type = static_cast<int32_t>(pb::AttrType::Float);
  al.f = alpha;
  for (auto [name, value] : {std::pair<pb::Str, int64_t>{"transA", trans_a}, {"transB", trans_b}}) {
    pb::Attribute& t = n.attribute.emplace_back();
    t.name = name;
    t.type = static_cast<int32_t>(pb::AttrType::Int);
    t.i = value;
  }
  g.output.emplace_back().name = "Y";
  return pb::serialize_model(m);
}

// alpha * op(A) @ op(B), by hand: a is [a0, a1] row-major, b is [b0, b1].
std::vector<float> product(const std::vector<float>& a, int64_t a0, int64_t a1, bool ta, const std::vector<float>& b,
                           int64_t b0, int64_t b1, bool tb, float alpha) {
  const int64_t m = ta ? a1 : a0, k = ta ? a0 : a1, n = tb ? b0 : b1;
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += a[static_cast<size_t>(ta ? p * a1 + i : i * a1 + p)] * b[static_cast<size_t>(tb ? j * b1 + p : p * b1 + j)];
      y[static_cast<size_t>(i * n + j)] = alpha * sum;
    }
  return y;
}

TEST(SessionLeniency, SparseToDenseMatMulWithSparseInput) {
  const std::vector<float> a = {1, 0, 2, 0, 3, 0};    // 6 values: [2,3] or [3,2]
  const std::vector<float> b = {1, 2, 3, 4, 5, 6};    // [3,2] or [2,3]
  SessionOptions quiet;
  quiet.log_level = 3;
  struct Case {
    int64_t a0, a1, b0, b1;
    float alpha;
    bool ta, tb;
  };
  for (const Case& c : {Case{2, 3, 3, 2, 1.0f, false, false}, Case{2, 3, 3, 2, 2.0f, false, false},
                        Case{3, 2, 3, 2, 1.0f, true, false}, Case{2, 3, 2, 3, 0.5f, false, true},
                        Case{3, 2, 2, 3, -1.0f, true, true}}) {
    SCOPED_TRACE(cat("alpha ", c.alpha, " transA ", c.ta, " transB ", c.tb));
    Session s = Session::from_bytes(sparse_matmul_model(c.a0, c.a1, c.b0, c.b1, c.alpha, c.ta, c.tb), quiet);
    EXPECT_EQ(s.inputs()[0].type.kind, Type::Kind::SparseTensor);  // as declared; fed dense
    EXPECT_EQ(s.inputs()[1].type.kind, Type::Kind::Tensor);
    const auto out = s.run({{"A", Datum::of(f32({c.a0, c.a1}, a))}, {"B", Datum::of(f32({c.b0, c.b1}, b))}});
    const Tensor& y = out[0].second.tensor;
    const int64_t m = c.ta ? c.a1 : c.a0, n = c.tb ? c.b0 : c.b1;
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{m, n}));
    EXPECT_EQ(values_of<float>(y), product(a, c.a0, c.a1, c.ta, b, c.b0, c.b1, c.tb, c.alpha));
  }
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
