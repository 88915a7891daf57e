// The `onyx` command line, run as a user would (the binary comes from ONYX_CLI, set by ctest).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "base/error.hpp"
#include "exec/datum_io.hpp"
#include "format/onnx_proto.hpp"
#include "ops/op_test_util.hpp"
#include "test_data.hpp"

namespace onyx {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int status;
  std::string out;  // stdout and stderr together
};

CliRun onyx(const std::string& args) {
  const char* cli = std::getenv("ONYX_CLI");
  if (!cli) throw Error("ONYX_CLI is not set: run these tests through ctest (or set it to the onyx binary)");
  std::string cmd = std::string(cli) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw Error("popen failed");
  CliRun r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

fs::path model(const std::string& suffix) {
  for (const auto& p : testing::all_test_models())
    if (p.string().ends_with(suffix)) return p;
  return {};
}

TEST(Cli, EveryCommandAnswersHelp) {
  for (const char* c : {"info", "check", "convert", "print", "demo"}) {
    CliRun r = onyx(cat(c, " --help"));
    EXPECT_EQ(r.status, 0) << c;
    EXPECT_NE(r.out.find(cat("usage: onyx ", c)), std::string::npos) << r.out;
  }
  CliRun r = onyx("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("convert"), std::string::npos);
}

TEST(Cli, ErrorsAreOneLineAndNonZero) {
  CliRun r = onyx("info /nonexistent/model.onnx");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/model.onnx"), std::string::npos) << r.out;
  CliRun bad_opt = onyx("info --frobnicate x.onnx");
  EXPECT_EQ(bad_opt.status, 1);
  EXPECT_NE(bad_opt.out.find("--frobnicate"), std::string::npos) << bad_opt.out;
  CliRun missing = onyx("convert only_one_argument.onnx");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("usage: onyx convert"), std::string::npos) << missing.out;
  EXPECT_EQ(onyx("nosuchcommand").status, 2);
}

TEST(Cli, InfoShowsResNet50) {
  fs::path p = model("light/light_resnet50.onnx");
  if (p.empty()) GTEST_SKIP() << "the light models come with ../shared/onnx-tests only";
  CliRun r = onyx("info " + p.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("    53  Conv\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu_0/data_0: float[1,3,224,224]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ai.onnx 9"), std::string::npos) << r.out;
}

TEST(Cli, DemoWritesAModelThatChecks) {
  fs::path dir = fs::temp_directory_path() / cat("onyx-cli-demo-", ::getpid());
  fs::create_directories(dir);
  CliRun r = onyx("demo " + (dir / "demo.onnx").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("demo.onnx: ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("X: float[N,16]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("probabilities = Softmax <axis: int = -1> (logits)"), std::string::npos) << r.out;
  CliRun check = onyx("check " + (dir / "demo.onnx").string());
  EXPECT_EQ(check.status, 0) << check.out;
  fs::remove_all(dir);
}

TEST(Cli, ConvertMovesDataOutAndBack) {
  fs::path dir = fs::temp_directory_path() / cat("onyx-cli-convert-", ::getpid());
  fs::create_directories(dir);
  ASSERT_EQ(onyx("demo " + (dir / "demo.onnx").string()).status, 0);
  CliRun out = onyx(cat("convert ", (dir / "demo.onnx").string(), " ", (dir / "ext.onnx").string(),
                     " --external-data-threshold 100"));
  ASSERT_EQ(out.status, 0) << out.out;
  EXPECT_NE(out.out.find("wrote 3 tensors"), std::string::npos) << out.out;  // W1, W2 and B1 (B2 is 40 bytes)
  EXPECT_TRUE(fs::exists(dir / "ext.onnx.data"));
  CliRun info = onyx("info " + (dir / "ext.onnx").string());
  EXPECT_NE(info.out.find("ext.onnx.data"), std::string::npos) << info.out;
  CliRun back = onyx(cat("convert ", (dir / "ext.onnx").string(), " ", (dir / "back.onnx").string(), " --inline"));
  ASSERT_EQ(back.status, 0) << back.out;
  std::ifstream a(dir / "demo.onnx", std::ios::binary), b(dir / "back.onnx", std::ios::binary);
  std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
  EXPECT_GE(sb.size(), sa.size());  // all data is back inline (plus an explicit data_location per tensor)
  CliRun check = onyx("check " + (dir / "back.onnx").string());
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_EQ(onyx(cat("convert ", (dir / "demo.onnx").string(), " x.onnx --inline --external-data-threshold 5")).status, 1);
  fs::remove_all(dir);
}

// A shape-only conformance test (outputs from a random source) still fails when an output leaves the expected
// range: the model is Identity, so a wrong "expected" range stands for a wrong output.
TEST(Cli, ShapeOnlyTestsCheckTheValueRange) {
  fs::path dir = fs::temp_directory_path() / cat("onyx-cli-range-", ::getpid());
  fs::path test = dir / "suite" / "test_identity_draw";
  fs::create_directories(test / "test_data_set_0");
  pb::Model m;
  m.ir_version = 10;
  m.opset_import.push_back({"", 21, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "draw";
  pb::ValueInfo& vi = g.input.emplace_back();
  vi.name = "x";
  auto& tt = vi.type.emplace().tensor_type.emplace();
  tt.elem_type = 1;
  tt.shape.emplace().dim.emplace_back().dim_value = 4;
  pb::Node& n = g.node.emplace_back();
  n.op_type = "Identity";
  n.input = {"x"};
  n.output = {"y"};
  g.output.emplace_back().name = "y";
  std::ofstream(test / "model.onnx", std::ios::binary) << pb::serialize_model(m);
  auto floats = [](std::vector<float> v) { return Datum::of(testing::make_tensor<float>(DataType::Float, {4}, v)); };
  save_datum(floats({0.25f, 1, 0, 0.5f}), "x", test / "test_data_set_0" / "input_0.pb");
  std::ofstream(dir / "expect") << "suite/test_identity_draw  shape-only  a random draw\n";
  const std::string cmd = cat("test-onnx ", test.string(), " --expectations ", (dir / "expect").string());
  // Another draw: other values in the same range pass.
  save_datum(floats({1, 0, 0.5f, 0.75f}), "y", test / "test_data_set_0" / "output_0.pb");
  CliRun same_range = onyx(cmd);
  EXPECT_EQ(same_range.status, 0) << same_range.out;
  // Expected values in [2, 3]: onyx's 0.25 is outside.
  save_datum(floats({2, 3, 2.5f, 2}), "y", test / "test_data_set_0" / "output_0.pb");
  CliRun wrong = onyx(cmd);
  EXPECT_EQ(wrong.status, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("element 0 of 4: got 0.25, outside the expected range [2, 3]"), std::string::npos) << wrong.out;
  fs::remove_all(dir);
}

TEST(Cli, CheckReportsProblemsWithExitOne) {
  fs::path dir = fs::temp_directory_path() / cat("onyx-cli-check-", ::getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "garbage.onnx") << "this is not a model";
  CliRun r = onyx("check " + (dir / "garbage.onnx").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("garbage.onnx"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace onyx
