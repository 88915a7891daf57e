// The opset converter (include/onyx/version_convert.hpp): adapters on small models, refusals naming the node, and
// the conformance node models converted to other opsets computing their expected outputs.
#include "onyx/version_convert.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/error.hpp"
#include "ir/spec_table.hpp"
#include "test_data.hpp"

#include "exec/datum_io.hpp"
#include "opt/opt_test_util.hpp"

namespace onyx::testing {
namespace {

// Under the sanitizers (3x slower) the conformance test takes every 4th model, to stay within seconds.
#if defined(__has_feature)
#define ONYX_VC_HAS_FEATURE(x) __has_feature(x)
#else
#define ONYX_VC_HAS_FEATURE(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || ONYX_VC_HAS_FEATURE(address_sanitizer)
constexpr size_t kModelStride = 4;
#else
constexpr size_t kModelStride = 1;
#endif

std::string read_file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

int64_t default_opset(const std::string& bytes) {
  pb::ModelDocument doc = pb::load_model_bytes(bytes, "m.onnx");
  return build_model(doc).opset("").value_or(0);
}

std::vector<std::string> op_types(const std::string& bytes) {
  Model m = load_ir(bytes);
  std::vector<std::string> ops;
  for (const auto& n : m.graph->nodes) ops.push_back(n->op_type);
  return ops;
}

// A model of one node at `opset` (textual syntax through the test helpers would tie us to the parser; build it).
std::string one_node_model(int64_t opset, const std::string& op, std::vector<Attribute> attrs,
                           const std::vector<int64_t>& x_dims, size_t outputs = 1) {
  Model m;
  m.ir_version = 7;
  m.opset_imports[""] = opset;
  m.graph = std::make_unique<Graph>();
  Graph& g = *m.graph;
  g.name = "g";
  Shape shape;
  shape.rank_known = true;
  for (int64_t d : x_dims) shape.dims.push_back(Dim{d, "", ""});
  Value& x = g.add_value("x");
  x.type = Type::tensor(DataType::Float, shape);
  x.is_graph_input = true;
  x.graph = &g;
  g.inputs.push_back(&x);
  auto n = std::make_unique<Node>();
  n->name = "n";
  n->op_type = op;
  n->graph = &g;
  n->inputs.push_back(&x);
  x.consumers.push_back(n.get());
  for (size_t k = 0; k < outputs; ++k) {
    Value& y = g.add_value(cat("y", k));
    y.graph = &g;
    y.producer = n.get();
    y.producer_output = static_cast<int>(k);
    y.is_graph_output = true;
    y.type = Type::tensor(op == "TopK" && k == 1 ? DataType::Int64 : DataType::Float);
    n->outputs.push_back(&y);
    g.outputs.push_back(&y);
  }
  n->attributes = std::move(attrs);
  g.nodes.push_back(std::move(n));
  return serialize_ir(m);
}

// Attributes are move-only, so no initializer list.
template <class... A>
std::vector<Attribute> attrs(A&&... a) {
  std::vector<Attribute> v;
  (v.push_back(std::forward<A>(a)), ...);
  return v;
}

Tensor ramp(const std::vector<int64_t>& dims) {
  Tensor t = Tensor::allocate(DataType::Float, dims);
  for (uint64_t i = 0; i < t.element_count(); ++i)
    t.mutable_data<float>()[i] = static_cast<float>(std::sin(static_cast<double>(i) * 0.7) * 3);
  return t;
}

// Both models give the same outputs on one input.
void expect_same_outputs(const std::string& a, const std::string& b, const std::vector<int64_t>& x_dims) {
  Session sa = Session::from_bytes(a), sb = Session::from_bytes(b);
  std::map<std::string, Datum> feeds = {{"x", Datum::of(ramp(x_dims))}};
  auto oa = sa.run(feeds), ob = sb.run(feeds);
  ASSERT_EQ(oa.size(), ob.size());
  for (size_t k = 0; k < oa.size(); ++k) {
    auto d = compare_datums(oa[k].second, ob[k].second, 1e-5, 1e-6);
    EXPECT_FALSE(d) << *d;
  }
}

std::string convert(const std::string& bytes, int64_t target, opt::VersionConvertReport* r = nullptr) {
  return opt::convert_version_bytes(bytes, target, r);
}

TEST(VersionConvert, SoftmaxAxisUpAndDown) {
  // Softmax-11 with axis 1 on a rank-3 input normalizes the flattened [2, 12] rows; Softmax-13 one axis.
  std::string m11 = one_node_model(11, "Softmax", {}, {2, 3, 4});
  std::string m13 = convert(m11, 13);
  EXPECT_EQ(default_opset(m13), 13);
  EXPECT_EQ(op_types(m13), (std::vector<std::string>{"Flatten", "Shape", "Softmax", "Reshape"}));
  expect_same_outputs(m11, m13, {2, 3, 4});
  // Softmax-13 along axis 1 of a rank-3 input, down to 12: Transpose around it.
  std::vector<Attribute> a;
  a.push_back(make_attr_int("axis", 1));
  std::string s13 = one_node_model(13, "LogSoftmax", std::move(a), {2, 3, 4});
  std::string s12 = convert(s13, 12);
  EXPECT_EQ(op_types(s12), (std::vector<std::string>{"Transpose", "LogSoftmax", "Transpose"}));
  expect_same_outputs(s13, s12, {2, 3, 4});
  // The last axis is the same in both: only the attribute changes.
  std::string last = convert(one_node_model(12, "Hardmax", attrs(make_attr_int("axis", 2)), {2, 3, 4}), 13);
  EXPECT_EQ(op_types(last), (std::vector<std::string>{"Hardmax"}));
}

TEST(VersionConvert, AttributesBecomeInputsAndBack) {
  std::vector<Attribute> a;
  a.push_back(make_attr_ints("axes", {0, 2}));
  std::string r12 = one_node_model(12, "ReduceMean", std::move(a), {2, 3, 4});
  std::string r18 = convert(r12, 18);
  EXPECT_EQ(op_types(r18), (std::vector<std::string>{"Constant", "ReduceMean"}));
  expect_same_outputs(r12, r18, {2, 3, 4});
  std::string back = convert(r18, 12);
  EXPECT_EQ(op_types(back), (std::vector<std::string>{"ReduceMean"}));  // the Constant read goes
  expect_same_outputs(r12, back, {2, 3, 4});

  std::string c6 = one_node_model(6, "Clip", attrs(make_attr_float("min", -1), make_attr_float("max", 0.5f)), {5});
  std::string c13 = convert(c6, 13);
  expect_same_outputs(c6, c13, {5});
  std::string p2 =
      one_node_model(9, "Pad", attrs(make_attr_ints("pads", {1, 0, 0, 2}), make_attr_float("value", 1.5f)), {2, 2});
  expect_same_outputs(p2, convert(p2, 19), {2, 2});
  std::string sl = one_node_model(9, "Slice", attrs(make_attr_ints("starts", {1}), make_attr_ints("ends", {3}),
                                               make_attr_ints("axes", {1})), {2, 4});
  expect_same_outputs(sl, convert(sl, 13), {2, 4});
  std::string tk = one_node_model(9, "TopK", attrs(make_attr_int("k", 2)), {2, 4}, 2);
  expect_same_outputs(tk, convert(tk, 11), {2, 4});
  opt::VersionConvertReport r;
  convert(tk, 11, &r);
  EXPECT_EQ(r.from, 9);
  EXPECT_EQ(r.to, 11);
  EXPECT_EQ(r.nodes_adapted, 1u);
}

TEST(VersionConvert, UpsampleBecomesResize) {
  std::string u9 = one_node_model(8, "Upsample", attrs(make_attr_floats("scales", {1, 1, 2, 2})), {1, 1, 2, 3});
  std::string r13 = convert(u9, 13);
  EXPECT_EQ(op_types(r13), (std::vector<std::string>{"Constant", "Constant", "Resize"}));
  expect_same_outputs(u9, r13, {1, 1, 2, 3});
  std::string back = convert(r13, 8);
  EXPECT_EQ(op_types(back), (std::vector<std::string>{"Upsample"}));
  expect_same_outputs(u9, back, {1, 1, 2, 3});
}

TEST(VersionConvert, RefusalsNameTheNode) {
  std::string hs = one_node_model(16, "HardSwish", {}, {1, 1, 2, 2});
  try {
    convert(hs, 13);
    FAIL() << "converted HardSwish below its introduction";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n' (HardSwish)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist before opset 14"), std::string::npos) << e.what();
  }
  // A non-constant input that must become an attribute.
  std::string rs = one_node_model(13, "Squeeze", {}, {1, 3});
  EXPECT_NO_THROW(convert(rs, 12));  // no axes input: squeeze all, as Squeeze-1 without axes
  // An attribute whose value the older version cannot express.
  std::string am = one_node_model(13, "ArgMax", attrs(make_attr_int("select_last_index", 1)), {3, 4});
  try {
    convert(am, 11);
    FAIL() << "dropped select_last_index = 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("select_last_index"), std::string::npos) << e.what();
  }
  EXPECT_THROW(convert(am, 0), Error);
  EXPECT_THROW(convert(am, 1000), Error);
}

// The conformance models (node, pytorch-converted, pytorch-operator and simple suites, each with test_data_set_0)
// that onyx runs at their own opset, converted to other opsets (two and one below, one above, the newest): every
// converted model must compute the expected outputs. Conversions the converter refuses are counted and listed
// with their reasons in onyx_version_convert_refusals.txt in the temporary folder (the path is printed).
TEST(VersionConvert, ConformanceModelsKeepTheirOutputs) {
  // The shared data when present (opsets to 28), else Debian's libonnx-testdata (to 17), which setup installs.
  const fs::path data = fs::is_directory(shared_onnx_tests() / "node") ? shared_onnx_tests() : kDebianOnnxTests;
  if (!fs::is_directory(data / "node")) ONYX_MISSING_INSTALLED_DATA(data << " is not present");
  std::vector<fs::path> dirs;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    fs::path root = data / suite;
    if (!fs::is_directory(root)) continue;
    for (const auto& e : fs::directory_iterator(root))
      if (fs::exists(e.path() / "model.onnx") && fs::is_directory(e.path() / "test_data_set_0"))
        dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  if (kModelStride > 1) {
    std::vector<fs::path> some;
    for (size_t i = 0; i < dirs.size(); i += kModelStride) some.push_back(dirs[i]);
    dirs = std::move(some);
  }
  const int64_t newest = spec::newest_opset("ai.onnx").value_or(0);
  SessionOptions so;
  so.threads = 1;
  so.optimization_level = 0;
  size_t models = 0, converted = 0, refused = 0, mismatched = 0;
  const fs::path refusals_path = fs::temp_directory_path() / "onyx_version_convert_refusals.txt";
  std::ofstream refusals(refusals_path);
  std::string first_mismatch;
  for (const auto& dir : dirs) {
    std::string bytes = read_file_bytes(dir / "model.onnx");
    std::map<std::string, Datum> feeds;
    std::vector<Datum> expected;
    int64_t source = 0;
    try {
      Session s = Session::from_bytes(bytes, so);
      const Graph& g = *s.model().graph;
      source = s.model().opset("").value_or(0);
      if (source == 0) continue;
      fs::path set = dir / "test_data_set_0";
      for (size_t k = 0; fs::exists(set / cat("input_", k, ".pb")); ++k) {
        if (k >= g.inputs.size()) throw Error("more inputs than graph inputs");
        feeds[g.inputs[k]->name] = load_datum(set / cat("input_", k, ".pb"), g.inputs[k]->type);
      }
      for (size_t k = 0; fs::exists(set / cat("output_", k, ".pb")); ++k)
        expected.push_back(load_datum(set / cat("output_", k, ".pb"), g.outputs.at(k)->type));
      auto out = s.run(feeds);
      if (out.size() != expected.size()) continue;
      bool ok = true;
      for (size_t k = 0; k < out.size() && ok; ++k) ok = !compare_datums(expected[k], out[k].second);
      if (!ok) continue;  // onyx does not pass it at its own opset (random or expected-failure cases)
    } catch (const std::exception&) {
      continue;
    }
    ++models;
    std::vector<int64_t> targets;
    for (int64_t t : {source - 2, source - 1, source + 1, newest})
      if (t >= 7 && t <= newest && t != source && std::find(targets.begin(), targets.end(), t) == targets.end())
        targets.push_back(t);
    for (int64_t t : targets) {
      std::string out_bytes;
      try {
        out_bytes = convert(bytes, t);
      } catch (const Error& e) {
        ++refused;
        refusals << dir.filename().string() << " " << source << " -> " << t << ": " << e.what() << "\n";
        continue;
      }
      ++converted;
      std::string problem;
      try {
        Session c = Session::from_bytes(out_bytes, so);
        auto out = c.run(feeds);
        if (out.size() != expected.size()) problem = "output count differs";
        for (size_t k = 0; k < out.size() && problem.empty(); ++k)
          if (auto d = compare_datums(expected[k], out[k].second)) problem = cat("output ", k, ": ", *d);
      } catch (const std::exception& e) {
        problem = e.what();
      }
      if (!problem.empty()) {
        ++mismatched;
        ADD_FAILURE() << dir.filename().string() << " " << source << " -> " << t << ": " << problem;
      }
    }
  }
  std::cout << "conformance models run at their opset: " << models << "; conversions: " << converted
            << " converted and run, " << refused << " refused (reasons in " << refusals_path.string() << "), "
            << mismatched << " mismatched\n";
  EXPECT_GT(models * kModelStride, 1000u);
  EXPECT_GT(converted, 2 * refused);
  EXPECT_EQ(mismatched, 0u);
}

// A real model at opset 9 (SqueezeNet, with the Softmax whose 2-D coercion changes at 13) converted up computes
// what the original does.
TEST(VersionConvert, LightSqueezeNetUp) {
  fs::path path = shared_onnx_tests() / "light" / "light_squeezenet.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not present";
  std::string bytes = read_file_bytes(path);
  SessionOptions so;
  so.threads = 1;
  Session s = Session::from_bytes(bytes, so);
  auto feeds = random_feeds(s);
  auto want = s.run(feeds);
  for (int64_t t : {int64_t{13}, int64_t{spec::newest_opset("ai.onnx").value_or(13)}}) {
    opt::VersionConvertReport r;
    Session c = Session::from_bytes(convert(bytes, t, &r), so);
    EXPECT_GT(r.nodes_adapted, 0u);
    auto got = c.run(feeds);
    auto d = compare_datums(want[0].second, got[0].second, 1e-4, 1e-6);
    EXPECT_FALSE(d) << "opset " << t << ": " << *d;
  }
}

}  // namespace
}  // namespace onyx::testing
