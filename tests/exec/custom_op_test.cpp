// Custom ops from shared libraries (include/onyx/custom_op.h, SessionOptions::custom_op_libraries), with the test
// library tests/custom_op/custom_op_library.c: ONNX Runtime's custom_op_test.onnx, inference through the library's
// callbacks, attributes and kernel state, and the errors of loading, binding and running.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "base/error.hpp"
#include "format/onnx_proto.hpp"
#include "onyx/session.hpp"
#include "ops/op_test_util.hpp"
#include "test_data.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;
using testing::make_tensor;
namespace fs = std::filesystem;

// The test library, built in tests/custom_op/ of the build tree whose root holds the test program (or named by
// ONYX_CUSTOM_OP_LIBRARY); `name` picks the build lacking the entry point.
std::string library_path(const std::string& name = "libcustom_op_library.so") {
  if (const char* env = std::getenv("ONYX_CUSTOM_OP_LIBRARY"); env && *env)
    return (fs::path(env).parent_path() / name).string();
  return (fs::read_symlink("/proc/self/exe").parent_path() / "tests" / "custom_op" / name).string();
}

SessionOptions with_library(const std::string& path = library_path()) {
  SessionOptions o;
  o.custom_op_libraries = {path};
  return o;
}

const fs::path kOrtModel = testing::source_dir() / "tests/python/ort_compat/testdata/custom_op_library/custom_op_test.onnx";

Datum filled(float v, std::vector<int64_t> dims = {3, 5}) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return Datum::of(make_tensor<float>(DataType::Float, dims, std::vector<float>(n, v)));
}

struct NodeSpec {
  const char* op_type;
  std::vector<std::string_view> inputs, outputs;
  std::vector<pb::Attribute> attributes = {};
  const char* domain = "test.customop";
};

// A model with float inputs x, y: [3,5] and the given nodes, whose output `out` is declared `declared` (0: no type);
// `import` adds an opset_import of test.customop.
std::string model(std::vector<NodeSpec> nodes, int32_t declared = 0, std::optional<int64_t> import = std::nullopt) {
  pb::Model m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 17, {}});
  if (import) m.opset_import.push_back({"test.customop", *import, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "custom";
  for (const char* name : {"x", "y"}) {
    pb::ValueInfo& vi = g.input.emplace_back();
    vi.name = name;
    auto& tt = vi.type.emplace().tensor_type.emplace();
    tt.elem_type = 1;
    auto& shape = tt.shape.emplace();
    shape.dim.emplace_back().dim_param = "N";
    shape.dim.emplace_back().dim_value = 5;
  }
  for (NodeSpec& spec : nodes) {
    pb::Node& n = g.node.emplace_back();
    n.op_type = spec.op_type;
    n.domain = spec.domain;
    n.name = spec.outputs[0];
    n.input = spec.inputs;
    n.output = spec.outputs;
    n.attribute = std::move(spec.attributes);
  }
  pb::ValueInfo& out = g.output.emplace_back();
  out.name = "out";
  if (declared) out.type.emplace().tensor_type.emplace().elem_type = declared;
  return pb::serialize_model(m);
}

pb::Attribute float_attr(const char* name, float v) {
  pb::Attribute a;
  a.name = name;
  a.type = 1;
  a.f = v;
  return a;
}
pb::Attribute int_attr(const char* name, int64_t v) {
  pb::Attribute a;
  a.name = name;
  a.type = 2;
  a.i = v;
  return a;
}
pb::Attribute string_attr(const char* name, const char* v) {
  pb::Attribute a;
  a.name = name;
  a.type = 3;
  a.s = v;
  return a;
}

void expect_contains(const std::string& text, const std::string& fragment) {
  EXPECT_NE(text.find(fragment), std::string::npos) << text;
}

// ONNX Runtime's test model (no opset_import of test.customop): ones + zeros, rounded to int32, is ones.
TEST(CustomOps, RunsOrtCustomOpTestModel) {
  ASSERT_TRUE(fs::exists(library_path())) << library_path();
  Session s = Session::from_file(kOrtModel, with_library());
  auto out = s.run({{"input_1", filled(1)}, {"input_2", filled(0)}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "output");
  const Tensor& t = out[0].second.tensor;
  ASSERT_EQ(t.dtype(), DataType::Int32);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 5}));
  for (uint64_t k = 0; k < t.element_count(); ++k) EXPECT_EQ(t.data<int32_t>()[k], 1);
  // Rounding to nearest: 0.7 + 1.6 = 2.3 -> 2; -0.2 + -0.4 -> -1 (-0.6).
  out = s.run({{"input_1", filled(0.7f)}, {"input_2", filled(1.6f)}});
  EXPECT_EQ(out[0].second.tensor.data<int32_t>()[0], 2);
  out = s.run({{"input_1", filled(-0.2f)}, {"input_2", filled(-0.4f)}});
  EXPECT_EQ(out[0].second.tensor.data<int32_t>()[14], -1);
}

TEST(CustomOps, WithoutTheLibraryTheModelIsRefusedAsBefore) {
  expect_contains(error_of([] { Session::from_file(kOrtModel); }), "domain 'test.customop' is not imported");
}

TEST(CustomOps, SecondSessionReusesTheLibrary) {
  auto first = std::make_unique<Session>(Session::from_file(kOrtModel, with_library()));
  Session second = Session::from_file(kOrtModel, with_library());
  // The first session going does not unload the library the second runs.
  first.reset();
  auto out = second.run({{"input_1", filled(2)}, {"input_2", filled(1)}});
  EXPECT_EQ(out[0].second.tensor.data<int32_t>()[0], 3);
  // Listing a library twice registers its ops twice: an error naming the op.
  SessionOptions twice = with_library();
  twice.custom_op_libraries.push_back(library_path());
  expect_contains(error_of([&] { Session::from_file(kOrtModel, twice); }), "test.customop.CustomOpOne(1) is registered already");
}

// Output types and shapes come from the library's inference callback (symbolic dims included), as the session's
// outputs show when the model declares none.
TEST(CustomOps, InferenceComesFromTheCallback) {
  Session s = Session::from_bytes(
      model({{"CustomOpOne", {"x", "y"}, {"sum"}}, {"CustomOpTwo", {"sum"}, {"out"}}}), with_library());
  ASSERT_EQ(s.outputs().size(), 1u);
  EXPECT_EQ(s.outputs()[0].type.to_string_with_shape(), "int32[N,5]");
  auto out = s.run({{"x", filled(1, {2, 5})}, {"y", filled(2, {2, 5})}});
  EXPECT_EQ(out[0].second.tensor.dims(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(out[0].second.tensor.data<int32_t>()[9], 3);
  // A standard op after a custom one binds to the type inference gave it.
  Session chained = Session::from_bytes(
      model({{"CustomOpTwo", {"x"}, {"r"}}, {"Neg", {"r"}, {"out"}, {}, ""}}), with_library());
  EXPECT_EQ(chained.outputs()[0].type.to_string_with_shape(), "int32[N,5]");
  // A declared type that disagrees with the callback's is an error naming the output.
  expect_contains(error_of([] { Session::from_bytes(model({{"CustomOpTwo", {"x"}, {"out"}}}, 1), with_library()); }),
                  "output 'out' is tensor(int32), but the model declares it tensor(float)");
  // The callback's own error names the model, the node, the op and the library.
  const std::string msg = error_of([] {
    Session::from_bytes(model({{"CustomOpOne", {"x", "y"}, {"s"}}, {"CustomOpTwo", {"s"}, {"i"}},
                               {"CustomOpTwo", {"i"}, {"out"}}}),
                        with_library());
  });
  expect_contains(msg, "<bytes>: main graph 'custom': node 'out' (CustomOpTwo): ");
  expect_contains(msg, "custom op test.customop.CustomOpTwo(1) of '" + library_path() + "': inference: input 0 must be float");
}

TEST(CustomOps, AttributesAndKernelState) {
  const std::string scale = model({{"ScaleShift", {"x"}, {"out"}, {float_attr("scale", 2), float_attr("shift", 0.5f)}}});
  using LiveKernels = int (*)();
  void* lib = dlopen(library_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  {
    Session s = Session::from_bytes(scale, with_library());
    if (!lib) lib = dlopen(library_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(lib, nullptr);
    auto live = reinterpret_cast<LiveKernels>(dlsym(lib, "custom_op_library_live_kernels"));
    ASSERT_NE(live, nullptr);
    EXPECT_EQ(live(), 1);
    auto out = s.run({{"x", filled(3, {1, 5})}, {"y", filled(0, {1, 5})}});
    EXPECT_EQ(out[0].second.tensor.data<float>()[4], 6.5f);
    Session other = Session::from_bytes(scale, with_library());
    EXPECT_EQ(live(), 2);
  }
  // Both sessions' kernels were destroyed through destroy_kernel (the library stays loaded: the test holds it).
  auto live = reinterpret_cast<LiveKernels>(dlsym(lib, "custom_op_library_live_kernels"));
  EXPECT_EQ(live(), 0);
  dlclose(lib);
  // create_kernel's errors: a missing attribute, and one it refuses.
  expect_contains(error_of([] { Session::from_bytes(model({{"ScaleShift", {"x"}, {"out"}}}), with_library()); }),
                  "create_kernel: attribute 'scale' is missing");
  expect_contains(error_of([] {
                    Session::from_bytes(model({{"ScaleShift", {"x"}, {"out"}, {float_attr("scale", 1), string_attr("mode", "log")}}}),
                                        with_library());
                  }),
                  "create_kernel: mode must be \"linear\"");
  expect_contains(error_of([] {
                    Session::from_bytes(model({{"ScaleShift", {"x"}, {"out"}, {string_attr("scale", "big")}}}), with_library());
                  }),
                  "attribute 'scale' is string, expected float");
}

TEST(CustomOps, ComputeErrorsNameTheNode) {
  // CustomOpOne refuses inputs of two shapes: x and y concatenated.
  Session s = Session::from_bytes(
      model({{"Concat", {"y", "y"}, {"yy"}, {int_attr("axis", 0)}, ""}, {"CustomOpOne", {"x", "yy"}, {"out"}}}),
      with_library());
  const std::string msg = error_of([&] { s.run({{"x", filled(1, {2, 5})}, {"y", filled(1, {2, 5})}}); });
  expect_contains(msg, "<bytes>: main graph 'custom': node 'out' (CustomOpOne): ");
  expect_contains(msg, "custom op test.customop.CustomOpOne(1) of '" + library_path() + "': compute: inputs must have one shape");
  // Input counts are checked against the registration.
  expect_contains(error_of([] { Session::from_bytes(model({{"CustomOpOne", {"x"}, {"out"}}}), with_library()); }),
                  "custom op test.customop.CustomOpOne(1) takes 2 inputs, the node has 1");
}

TEST(CustomOps, LoadingErrors) {
  const std::string missing = "/nonexistent/libnothing.so";
  std::string msg = error_of([&] { Session::from_file(kOrtModel, with_library(missing)); });
  expect_contains(msg, "custom op library '" + missing + "' cannot be loaded: ");
  expect_contains(msg, "/nonexistent/libnothing.so: cannot open shared object file");  // dlerror()'s words
  const std::string no_entry = library_path("libcustom_op_library_no_entry.so");
  ASSERT_TRUE(fs::exists(no_entry)) << no_entry;
  msg = error_of([&] { Session::from_file(kOrtModel, with_library(no_entry)); });
  expect_contains(msg, "custom op library '" + no_entry + "' does not export onyx_register_custom_ops");
}

// An op the library does not register gets the error an unknown op always got; a model that imports the domain
// binds at its version (the highest since_version up to it).
TEST(CustomOps, UnregisteredOpsAndVersions) {
  std::string msg = error_of([] { Session::from_bytes(model({{"CustomOpThree", {"x"}, {"out"}}}), with_library()); });
  expect_contains(msg, "node 'out' (CustomOpThree)");
  expect_contains(msg, "test.customop.CustomOpThree does not exist at opset 1 of domain 'test.customop'");
  Session imported = Session::from_bytes(model({{"CustomOpTwo", {"x"}, {"out"}}}, 0, 3), with_library());
  EXPECT_EQ(imported.outputs()[0].type.to_string_with_shape(), "int32[N,5]");
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
