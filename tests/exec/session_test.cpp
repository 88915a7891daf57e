// Session: inputs/outputs, feed checks (each a clear error before anything runs), named outputs.
#include "onyx/session.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "base/error.hpp"
#include "format/onnx_proto.hpp"
#include "ir/tensor_alloc.hpp"
#include "ops/graph_builder.hpp"
#include "test_data.hpp"
#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;

// Y = A + B with A, B: float[N,3] (N symbolic), of the given IR version and default-domain opset, plus `extra`
// imports.
std::string add_model(int64_t ir_version = 10, int64_t opset = 21, std::vector<pb::OperatorSetId> extra = {},
                      std::optional<int64_t> function_opset = std::nullopt) {
  pb::Model m;
  m.ir_version = ir_version;
  m.opset_import.push_back({"", opset, {}});
  for (pb::OperatorSetId& imp : extra) m.opset_import.push_back(std::move(imp));
  if (function_opset) {
    // A model-local function (unused) importing that opset.
    pb::Function& f = m.functions.emplace_back();
    f.name = "Twice";
    f.domain = "local";
    f.input = {"x"};
    f.output = {"y"};
    pb::Node& n = f.node.emplace_back();
    n.op_type = "Add";
    n.input = {"x", "x"};
    n.output = {"y"};
    f.opset_import.push_back({"", *function_opset, {}});
    m.opset_import.push_back({"local", 1, {}});
  }
  pb::Graph& g = m.graph.emplace();
  g.name = "adder";
  for (const char* name : {"A", "B"}) {
    pb::ValueInfo& vi = g.input.emplace_back();
    vi.name = name;
    auto& tt = vi.type.emplace().tensor_type.emplace();
    tt.elem_type = 1;
    auto& shape = tt.shape.emplace();
    shape.dim.emplace_back().dim_param = "N";
    shape.dim.emplace_back().dim_value = 3;
  }
  pb::Node& n = g.node.emplace_back();
  n.op_type = "Add";
  n.input = {"A", "B"};
  n.output = {"Y"};
  g.output.emplace_back().name = "Y";
  return pb::serialize_model(m);
}

Datum floats(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return Datum::of(make_tensor<float>(DataType::Float, dims, std::vector<float>(n, 1.5f)));
}

void expect_error(const Session& s, const std::map<std::string, Datum>& feeds, const std::string& fragment) {
  try {
    s.run(feeds);
    ADD_FAILURE() << "expected an error containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Session, ListsInputsAndOutputsWithSymbolicShapes) {
  Session s = Session::from_bytes(add_model());
  ASSERT_EQ(s.inputs().size(), 2u);
  EXPECT_EQ(s.inputs()[0].name, "A");
  EXPECT_EQ(s.inputs()[0].type.to_string_with_shape(), "float[N,3]");
  ASSERT_EQ(s.outputs().size(), 1u);
  EXPECT_EQ(s.outputs()[0].type.to_string_with_shape(), "float[N,3]");  // inferred through Add
}

TEST(Session, RunsAndReturnsNamedOutputs) {
  Session s = Session::from_bytes(add_model());
  auto out = s.run({{"A", floats({2, 3})}, {"B", floats({2, 3})}}, {"Y"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "Y");
  EXPECT_EQ(out[0].second.tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out[0].second.tensor.data<float>()[5], 3.0f);
}

TEST(Session, BuffersKeptForReuseGoWithTheLastSession) {
  {
    Datum big = floats({100000, 3});  // no session: its buffer goes back to the system when released
  }
  EXPECT_EQ(pooled_buffer_bytes(), 0u);
  {
    Session s = Session::from_bytes(add_model());
    s.run({{"A", floats({100000, 3})}, {"B", floats({100000, 3})}});
    EXPECT_GE(pooled_buffer_bytes(), uint64_t{100000} * 3 * 4);  // the feeds and the output, released
    Session other = Session::from_bytes(add_model());
  }
  EXPECT_EQ(pooled_buffer_bytes(), 0u);
}

std::string creation_error(const std::string& bytes, const SessionOptions& options = {}) {
  return testing::error_of([&] { Session::from_bytes(bytes, options); });
}

// A model of a newer IR version or importing a newer opset of a standard domain than onyx implements is refused,
// naming the newest onyx supports, unless the caller accepts it; its ops then run as their newest versions.
TEST(Session, NewerVersionsThanOnyxKnowsAreRefusedUnlessAccepted) {
  SessionOptions accept;
  accept.accept_newer_versions = true;
  const std::string newer_ir = add_model(14);
  EXPECT_NE(creation_error(newer_ir).find("ir_version is 14; onyx supports IR versions up to 13"), std::string::npos)
      << creation_error(newer_ir);
  const std::string newer_opset = add_model(10, 29);
  EXPECT_NE(creation_error(newer_opset).find("imports opset 29 of domain 'ai.onnx'; onyx supports that domain up to opset 28"),
            std::string::npos)
      << creation_error(newer_opset);
  const std::string newer_ml = add_model(10, 21, {{"ai.onnx.ml", 6, {}}});
  EXPECT_NE(creation_error(newer_ml).find("opset 6 of domain 'ai.onnx.ml'; onyx supports that domain up to opset 5"),
            std::string::npos)
      << creation_error(newer_ml);
  const std::string newer_in_function = add_model(10, 21, {}, 30);
  EXPECT_NE(creation_error(newer_in_function).find("function 'Twice' of the model imports opset 30"), std::string::npos)
      << creation_error(newer_in_function);
  for (const std::string& bytes : {newer_ir, newer_opset, newer_ml, newer_in_function}) {
    Session s = Session::from_bytes(bytes, accept);
    EXPECT_EQ(s.run({{"A", floats({1, 3})}, {"B", floats({1, 3})}})[0].second.tensor.data<float>()[0], 3.0f);
  }
  // The newest versions onyx knows load without the option; other domains have no limit onyx could know.
  EXPECT_EQ(creation_error(add_model(13, 28)), "(no error)");
  EXPECT_EQ(creation_error(add_model(10, 21, {{"com.example", 99, {}}})), "(no error)");
}

// Y = X + W with W a sparse initializer of dims [2, 4] holding `values` at `indices` (dims `index_dims`).
std::string sparse_add_model(const std::vector<float>& values, const std::vector<int64_t>& indices,
                             std::vector<int64_t> index_dims) {
  pb::Model m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 17, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "sparse";
  pb::ValueInfo& vi = g.input.emplace_back();
  vi.name = "X";
  auto& tt = vi.type.emplace().tensor_type.emplace();
  tt.elem_type = 1;
  auto& shape = tt.shape.emplace();
  shape.dim.emplace_back().dim_value = 2;
  shape.dim.emplace_back().dim_value = 4;
  pb::SparseTensor& s = g.sparse_initializer.emplace_back();
  s.dims = {2, 4};
  pb::Tensor& v = s.values.emplace();
  v.name = "W";
  v.data_type = 1;
  v.dims = {static_cast<int64_t>(values.size())};
  v.float_data = values;
  pb::Tensor& ix = s.indices.emplace();
  ix.name = "W_indices";
  ix.data_type = 7;
  ix.dims = std::move(index_dims);
  ix.int64_data = indices;
  pb::Node& n = g.node.emplace_back();
  n.op_type = "Add";
  n.input = {"X", "W"};
  n.output = {"Y"};
  g.output.emplace_back().name = "Y";
  return pb::serialize_model(m);
}

// Sparse initializers run as the dense tensors they stand for (linear and coordinate indices, in any order);
// indices out of range or repeated are refused at creation, naming the model, the initializer and the index.
TEST(Session, SparseInitializersAreDensifiedAndValidated) {
  const std::map<std::string, Datum> feeds = {{"X", floats({2, 4})}};
  const std::vector<float> want = {1.5f + 2, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f + 3, 1.5f, 1.5f + 1};
  for (const std::string& bytes : {sparse_add_model({1, 2, 3}, {7, 0, 5}, {3}),
                                   sparse_add_model({1, 2, 3}, {1, 3, 0, 0, 1, 1}, {3, 2})}) {
    Session s = Session::from_bytes(bytes);
    EXPECT_EQ(testing::values_of<float>(s.run(feeds)[0].second.tensor), want);
  }
  EXPECT_NE(creation_error(sparse_add_model({1, 2}, {0, 8}, {2})).find(
                "sparse initializer 'W': index 8 of value 1 is outside the 8 elements of the dense tensor"),
            std::string::npos)
      << creation_error(sparse_add_model({1, 2}, {0, 8}, {2}));
  EXPECT_NE(creation_error(sparse_add_model({1, 2}, {0, 4, 1, 0}, {2, 2})).find("index 4 of value 0 is outside axis 1 of size 4"),
            std::string::npos)
      << creation_error(sparse_add_model({1, 2}, {0, 4, 1, 0}, {2, 2}));
  EXPECT_NE(creation_error(sparse_add_model({1, 2}, {5, 5}, {2})).find("two values are at the same position (linear index 5)"),
            std::string::npos)
      << creation_error(sparse_add_model({1, 2}, {5, 5}, {2}));
}

// A bool is one byte, 0 or 1: a feed or an initializer holding any other byte is refused, naming the value and the
// element (the kernels read bools as C++ bool, for which other bytes have no meaning; found by fuzz_run).
TEST(Session, BoolsStoredAsOtherBytesAreRefused) {
  testing::ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "X", mb.tensor_t(DataType::Bool, std::vector<int64_t>{3}));
  mb.node(g, "Not", {"X"}, {"Y"});
  mb.output(g, "Y");
  Session s = mb.session(std::move(g), 13);
  const std::string bytes("\x01\x05\x00", 3);
  expect_error(s, {{"X", Datum::of(Tensor::owned("X", DataType::Bool, {3}, bytes))}},
               "input 'X': bool element 1 is the byte 5 (a bool must be 0 or 1)");
  auto ok = s.run({{"X", Datum::of(Tensor::owned("X", DataType::Bool, {3}, std::string("\x01\x00\x01", 3)))}});
  EXPECT_EQ(ok[0].second.tensor.bytes(), std::string("\x00\x01\x00", 3));

  testing::ModelBuilder mb2;
  pb::Graph h;
  pb::Tensor& init = h.initializer.emplace_back();
  init.name = mb2.arena.save("C");
  init.data_type = static_cast<int32_t>(DataType::Bool);
  init.dims = {3};
  init.raw_data = mb2.arena.save(bytes);
  mb2.node(h, "Not", {"C"}, {"Y"});
  mb2.output(h, "Y");
  const std::string error = testing::error_of([&] { mb2.session(std::move(h), 13); });
  EXPECT_NE(error.find("bool element 1 is stored as the byte 5"), std::string::npos) << error;
  EXPECT_NE(error.find("'C'"), std::string::npos) << error;
}

// Declared dims whose element count overflows int64 are an error at creation, not undefined arithmetic in shape
// inference (found by fuzz_session: Size of a [2^62, 5] input).
TEST(Session, DeclaredShapesWhoseSizeOverflowsAreRefused) {
  testing::ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "X", mb.tensor_t(DataType::Float, std::vector<int64_t>{int64_t{1} << 62, 5}));
  mb.node(g, "Size", {"X"}, {"Y"});
  mb.output(g, "Y");
  const std::string error = testing::error_of([&] { mb.session(std::move(g), 13); });
  EXPECT_NE(error.find("overflows int64"), std::string::npos) << error;
}

// An exception of a library beneath the kernels becomes an onyx::Error naming the node: here oneDNN refuses a
// convolution whose padding (2^31) makes its output too wide (found by fuzz_run; the model is the regression input).
TEST(Session, OneDnnRefusalsAreErrorsNamingTheNode) {
  std::ifstream f(testing::source_dir() / "fuzz" / "corpora" / "run" / "regression-dnnl-error-dilated-conv", std::ios::binary);
  ASSERT_TRUE(f) << "the regression input is missing";
  std::string input((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GE(input.size(), 4u);
  uint32_t n = 0;
  std::memcpy(&n, input.data(), 4);  // fuzz_run's input: [model size][model][feed bytes]
  ASSERT_LE(n, input.size() - 4);
  const std::string error = creation_error(input.substr(4, n));
  EXPECT_NE(error.find("Conv): oneDNN cannot run it"), std::string::npos) << error;
}

TEST(Session, FeedsAreCheckedBeforeRunning) {
  Session s = Session::from_bytes(add_model());
  expect_error(s, {{"A", floats({2, 3})}}, "input 'B' is missing");
  expect_error(s, {{"A", floats({2, 3})}, {"B", floats({2, 3})}, {"C", floats({1})}}, "'C' is not an input");
  expect_error(s, {{"A", floats({2, 3})}, {"B", Datum::of(make_tensor<int64_t>(DataType::Int64, {2, 3}, std::vector<int64_t>(6)))}},
               "expected element type float, got int64");
  expect_error(s, {{"A", floats({6})}, {"B", floats({2, 3})}}, "expected rank 2");
  expect_error(s, {{"A", floats({2, 4})}, {"B", floats({2, 4})}}, "dimension 1 must be 3");
  expect_error(s, {{"A", floats({2, 3})}, {"B", floats({4, 3})}}, "another input set 'N' to 2");
  EXPECT_THROW(s.run({{"A", floats({2, 3})}, {"B", floats({2, 3})}}, {"Z"}), Error);
}

TEST(Session, InferenceErrorsAreReportedAtCreation) {
  std::string bytes = add_model();  // the parsed model views these bytes
  pb::Model m = pb::parse_model(bytes, "adder");
  // Make B float[N,4]: it cannot broadcast with A float[N,3].
  m.graph->input[1].type->tensor_type->shape->dim[1].dim_value = 4;
  try {
    Session::from_bytes(pb::serialize_model(m));
    FAIL() << "expected an inference error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node #0 (Add)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("do not broadcast"), std::string::npos) << e.what();
  }
}

TEST(Session, ProfileRecordsEachNodeRun) {
  Session s = Session::from_bytes(add_model());
  std::vector<NodeTiming> profile;
  RunOptions ro;
  ro.profile = &profile;
  s.run({{"A", floats({2, 3})}, {"B", floats({2, 3})}}, {}, ro);
  ASSERT_EQ(profile.size(), 1u);
  EXPECT_EQ(profile[0].op_type, "Add");
  EXPECT_EQ(profile[0].graph, "main graph 'adder'");
  EXPECT_GE(profile[0].start_ns, 0);
  EXPECT_GE(profile[0].duration_ns, 0);
  s.run({{"A", floats({2, 3})}, {"B", floats({2, 3})}}, {}, ro);
  EXPECT_EQ(profile.size(), 2u);  // appended, never cleared
}

TEST(Session, TerminateFlagStopsTheRun) {
  Session s = Session::from_bytes(add_model());
  std::atomic<bool> stop{true};
  RunOptions ro;
  ro.terminate = &stop;
  try {
    s.run({{"A", floats({2, 3})}, {"B", floats({2, 3})}}, {}, ro);
    ADD_FAILURE() << "expected the run to stop";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("terminated"), std::string::npos) << e.what();
  }
  stop = false;
  EXPECT_EQ(s.run({{"A", floats({2, 3})}, {"B", floats({2, 3})}}, {}, ro).size(), 1u);
}

TEST(Session, KeepsItsOptions) {
  SessionOptions o;
  o.threads = 1;
  o.optimization_level = 0;
  Session s = Session::from_bytes(add_model(), o);
  EXPECT_EQ(s.options().threads, 1);
  EXPECT_EQ(s.options().optimization_level, 0);
}

TEST(Session, BadModelBytesAreAClearError) {
  EXPECT_THROW(Session::from_bytes("\x0a\xff"), Error);
}

}  // namespace
}  // namespace onyx
