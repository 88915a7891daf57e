// The optimizer driver: levels, the session's use of it, optimize_file, and the light models.
#include "opt/optimizer.hpp"

#include <unistd.h>

#include <filesystem>
#include <set>
#include <fstream>
#include <iostream>
#include <random>

#include "base/error.hpp"
#include "onyx/optimize.hpp"
#include "opt/opt_test_util.hpp"
#include "test_data.hpp"
#include "format/model_read.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;
namespace fs = std::filesystem;

// What level 2 makes of Conv + Relu: one channels-last convolution with the activation inside, between the
// layout conversions.
const V kChannelsLastConv = {"Transpose", "ai.onyx.NhwcConv", "Transpose"};

// Constant + Conv + Relu: level 1 folds the Constant, level 2 fuses too.
std::string conv_relu_model() {
  GraphSpec g(17);
  g.input("x", DataType::Float, {1, 2, 5, 5}).random("w", {3, 2, 3, 3});
  g.node("Constant", {}, {"b"}, {{"value_floats", std::vector<float>{0.1f, -0.2f, 0.3f}}})
      .node("Conv", {"x", "w", "b"}, {"c"})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  return g.bytes();
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / cat("onyx_opt_test_", ::getpid());
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(Optimizer, LevelsSelectThePasses) {
  for (int level : {0, 1, 2, 3}) {
    Model m = load_ir(conv_relu_model());
    opt::OptimizeReport r = optimize_ir(m, level);
    EXPECT_EQ(r.nodes_before, 3u);
    const V want = level == 0   ? V{"Constant", "Conv", "Relu"}
                   : level == 1 ? V{"Conv", "Relu"}
                   : level == 2 ? V{"ai.onyx.FusedConv"}
                                : kChannelsLastConv;
    EXPECT_EQ(op_list(m), want) << "level " << level;
    EXPECT_EQ(r.nodes_after, want.size());
    EXPECT_EQ(r.applied.empty(), level == 0);
  }
}

TEST(Optimizer, EveryPassHasANameAndLevel) {
  std::set<std::string> names;
  for (const auto& p : opt::passes()) {
    EXPECT_TRUE(p.level >= 1 && p.level <= 3) << p.name;
    EXPECT_NE(p.run, nullptr);
    EXPECT_TRUE(names.insert(p.name).second) << p.name << " twice";
  }
  EXPECT_EQ(opt::passes().size(), 21u);
}

TEST(Optimizer, ParsesLevels) {
  EXPECT_EQ(opt::parse_level("basic"), 1);
  EXPECT_EQ(opt::parse_level("extended"), 2);
  EXPECT_EQ(opt::parse_level("all"), 3);
  EXPECT_EQ(opt::parse_level("0"), 0);
  try {
    opt::parse_level("max");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'max' is not one of basic, extended, all"), std::string::npos) << e.what();
  }
}

TEST(Optimizer, SessionsOptimizeTheirOwnModel) {
  EXPECT_EQ(op_list(session_at(conv_relu_model(), 0).model()), (V{"Constant", "Conv", "Relu"}));
  EXPECT_EQ(op_list(Session::from_bytes(conv_relu_model()).model()), kChannelsLastConv);  // default: all
  EXPECT_EQ(op_list(session_at(conv_relu_model(), 1).model()), (V{"Conv", "Relu"}));
  EXPECT_EQ(op_list(session_at(conv_relu_model(), 2).model()), V{"ai.onyx.FusedConv"});
  EXPECT_EQ(op_list(session_at(conv_relu_model(), 3).model()), kChannelsLastConv);
  expect_same_outputs(conv_relu_model());
}

TEST(Optimizer, OptimizesFilesThatLoadAgain) {
  TempDir dir;
  const fs::path in = dir.path / "model.onnx", out = dir.path / "optimized.onnx";
  {
    std::ofstream f(in, std::ios::binary);
    std::string bytes = conv_relu_model();
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  opt::OptimizeReport r = opt::optimize_file(in, out, 2);
  EXPECT_EQ(r.nodes_before, 3u);
  EXPECT_EQ(r.nodes_after, 1u);
  // The saved model imports ai.onyx, passes the checker and computes what the original does.
  Session original = session_at(conv_relu_model(), 0);
  SessionOptions o;
  o.optimization_level = 0;
  Session saved = Session::from_file(out, o);
  EXPECT_EQ(op_list(saved.model()), V{"ai.onyx.FusedConv"});
  EXPECT_EQ(saved.model().opset("ai.onyx"), 1);
  auto feeds = random_feeds(original);
  EXPECT_FALSE(compare_datums(original.run(feeds)[0].second, saved.run(feeds)[0].second, 1e-5, 1e-6));
  // In place, with the weights moved to an external file.
  SaveOptions save;
  save.data = SaveOptions::Data::External;
  save.threshold = 16;
  opt::optimize_file(out, out, 1, save);
  EXPECT_TRUE(fs::exists(dir.path / "optimized.onnx.data"));
  Session again = Session::from_file(out, o);
  EXPECT_FALSE(compare_datums(original.run(feeds)[0].second, again.run(feeds)[0].second, 1e-5, 1e-6));
}

TEST(Optimizer, FileErrorsNameTheFile) {
  try {
    opt::optimize_file("/nonexistent/in.onnx", "/tmp/out.onnx", 1);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/in.onnx"), std::string::npos) << e.what();
  }
  try {
    opt::optimize_file("/nonexistent/in.onnx", "/tmp/out.onnx", 5);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("level 5"), std::string::npos) << e.what();
  }
}

TEST(Optimizer, InvalidNodesAreLeftForTheSession) {
  // Relu of a string tensor: inference fails; the optimizer must leave it and the session report it.
  GraphSpec g(17);
  g.input("x", DataType::String, {2}).node("Relu", {"x"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), V{"Relu"});
  try {
    session_at(g.bytes(), 2);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Relu"), std::string::npos) << e.what();
  }
}

// The light models (real CNNs, weights made by ConstantOfShape): every level leaves a consistent graph that
// passes the checker once written, and never grows it.
TEST(Optimizer, LightModels) {
  std::vector<fs::path> models;
  for (const auto& p : all_test_models())
    if (p.parent_path().filename() == "light") models.push_back(p);
  if (models.empty()) GTEST_SKIP() << "../shared/onnx-tests/light is not present";
  for (const auto& path : models) {
    std::ifstream f(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::string counts;
    for (int level : {1, 2, 3}) {
      Model m = load_ir(bytes);
      opt::OptimizeReport r = optimize_ir(m, level);
      EXPECT_LE(r.nodes_after, r.nodes_before) << path;
      counts += cat(" level ", level, ": ", r.nodes_before, " -> ", r.nodes_after);
      load_ir(serialize_ir(m));
    }
    std::cout << path.stem().string() << counts << "\n";
  }
}

// Every test model: optimizing at level 2 leaves a consistent graph that, written, passes the checker
// again, and a second run changes nothing.
TEST(Optimizer, TestModelsStayValid) {
  auto models = all_test_models();
  if (models.empty()) ONYX_MISSING_INSTALLED_DATA("no ONNX test data installed (scripts/setup.sh installs libonnx-testdata)");
  size_t tried = 0;
  for (size_t i = 0; i < models.size(); ++i) {
    pb::ModelDocument doc = pb::load_model_file(models[i]);
    if (!check::check_model(doc).empty()) continue;  // invalid on purpose
    Model m = build_model(doc);
    optimize_ir(m, 2);
    ASSERT_EQ(opt::verify_graph(*m.graph), "") << models[i];
    std::string bytes = serialize_ir(m);
    pb::ModelDocument written = pb::load_model_bytes(bytes, models[i].string());
    auto problems = check::check_model(written);
    ASSERT_TRUE(problems.empty()) << models[i] << ": " << problems.front();
    Model again = build_model(written);
    opt::OptimizeReport r = optimize_ir(again, 2);
    EXPECT_TRUE(r.applied.empty()) << models[i] << ": " << r.applied.front().first << " changed the graph again";
    ++tried;
  }
  EXPECT_GT(tried, 1000u);
}

// IR 3 lists every initializer as a graph input. Sessions optimize them as constants (w * s folds, Conv+Relu
// fuse); a run that feeds one of them computes with the fed value, as the unoptimized session does.
TEST(Optimizer, Ir3InitializersAreConstantsUnlessFed) {
  GraphSpec g(9);
  g.ir_version(3);
  g.input("x", DataType::Float, {1, 2, 5, 5})
      .input("w", DataType::Float, {3, 2, 3, 3})
      .random("w", {3, 2, 3, 3})
      .input("s", DataType::Float, {3, 1, 1, 1})
      .floats("s", {3, 1, 1, 1}, {0.5f, 2.0f, -1.0f})
      .node("Mul", {"w", "s"}, {"ws"})
      .node("Conv", {"x", "ws"}, {"c"})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  const std::string bytes = g.bytes();
  Session optimized = Session::from_bytes(bytes), plain = session_at(bytes, 0);
  EXPECT_EQ(op_list(optimized.model()), kChannelsLastConv);
  ASSERT_EQ(optimized.inputs().size(), 1u);
  EXPECT_EQ(optimized.inputs()[0].name, "x");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor x = Tensor::allocate(DataType::Float, {1, 2, 5, 5}), s = Tensor::allocate(DataType::Float, {3, 1, 1, 1});
  for (uint64_t i = 0; i < x.element_count(); ++i) x.mutable_data<float>()[i] = u(rng);
  for (uint64_t i = 0; i < s.element_count(); ++i) s.mutable_data<float>()[i] = u(rng);
  for (const auto& feeds : {std::map<std::string, Datum>{{"x", Datum::of(x)}},
                            std::map<std::string, Datum>{{"x", Datum::of(x)}, {"s", Datum::of(s)}}}) {
    auto diff = compare_datums(plain.run(feeds)[0].second, optimized.run(feeds)[0].second, 1e-5, 1e-6);
    EXPECT_FALSE(diff) << feeds.size() << " feeds: " << *diff;
  }
  // The fed value is used: the result differs from the run with the initializer's s.
  auto moved = compare_datums(optimized.run({{"x", Datum::of(x)}})[0].second,
                              optimized.run({{"x", Datum::of(x)}, {"s", Datum::of(s)}})[0].second, 1e-5, 1e-6);
  EXPECT_TRUE(moved);
}

// SqueezeNet with its initializers taken as constants (IR 3 lists them as inputs): weights fold, Conv+Relu fuse,
// and the result computes what the original does on the light models' input.
TEST(Optimizer, LightSqueezeNetWithConstantInitializers) {
  fs::path path;
  for (const auto& p : all_test_models())
    if (p.filename() == "light_squeezenet.onnx") path = p;
  if (path.empty()) GTEST_SKIP() << "../shared/onnx-tests/light is not present";
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Model m = load_ir(bytes);
  opt::OptimizeOptions o;
  o.level = 2;
  o.constant_initializer_inputs = true;
  opt::OptimizeReport r = opt::optimize(m, o);
  EXPECT_EQ(opt::verify_graph(*m.graph), "");
  EXPECT_LT(r.nodes_after, r.nodes_before / 2);
  std::cout << "light_squeezenet, initializers constant, level 2: " << r.nodes_before << " -> " << r.nodes_after << "\n";
  Session original = session_at(bytes, 0), optimized = session_at(serialize_ir(m), 0);
  ASSERT_EQ(optimized.inputs().size(), 1u);
  const IoInfo& in = optimized.inputs()[0];
  std::vector<int64_t> dims;
  for (const Dim& d : in.type.shape.dims) dims.push_back(d.value.value_or(1));
  Tensor x = Tensor::allocate(DataType::Float, dims);
  for (uint64_t i = 0; i < x.element_count(); ++i)
    x.mutable_data<float>()[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(x.element_count()));
  std::map<std::string, Datum> feeds = {{in.name, Datum::of(x)}};
  auto diff = compare_datums(original.run(feeds)[0].second, optimized.run(feeds)[0].second, 1e-4, 1e-6);
  EXPECT_FALSE(diff) << *diff;
}

}  // namespace
}  // namespace onyx
