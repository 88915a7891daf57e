// `onyx bench` and `onyx bench-models`, run as a user would (the binary comes from ONYX_CLI, set by ctest). The
// generated models are small configurations, so that writing, checking and running them takes well under a second.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

namespace fs = std::filesystem;

struct Result {
  int status;
  std::string out;  // stdout and stderr together
};

// Runs the CLI with `args`; `env` (`env`'s arguments: VAR=VALUE, -u VAR) sets its environment.
Result onyx(const std::string& args, const std::string& env = "") {
  const char* cli = std::getenv("ONYX_CLI");
  if (!cli) throw Error("ONYX_CLI is not set: run these tests through ctest (or set it to the onyx binary)");
  FILE* p = popen(("env " + env + " " + std::string(cli) + " " + args + " 2>&1").c_str(), "r");
  if (!p) throw Error("popen failed");
  Result r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A scratch folder per test, removed afterwards.
class Bench : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           cat("onyx_bench_test_", getpid(), "_", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// Small versions of the four models: the same graphs, a fraction of the sizes.
const char* const kSmall =
    " --bert-layers 2 --gpt2-layers 2 --hidden 32 --heads 4 --seq 16 --image 32 --width 0.35 --classes 10"
    " --lstm-input 8 --lstm-hidden 16";

std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The number after "key": in a one-line JSON object; fails the test when the key is missing.
double json_number(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no key " << key << " in " << json;
    return -1;
  }
  return std::strtod(json.c_str() + at + key.size() + 4, nullptr);
}

TEST_F(Bench, JsonReportHasEveryKey) {
  ASSERT_EQ(onyx("bench-models " + dir_.string() + " --models lstm" + kSmall).status, 0);
  Result r = onyx("bench " + path("lstm.onnx") + " --runs 2 --warmup 1 --threads 1 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(r.out.front(), '{');
  for (const char* key : {"create_ms", "first_run_ms", "median_ms", "p90_ms", "min_ms", "cpu_median_ms", "peak_rss_mb"})
    EXPECT_GT(json_number(r.out, key), 0) << key;
  EXPECT_EQ(json_number(r.out, "runs"), 2);
  EXPECT_EQ(json_number(r.out, "warmup"), 1);
  EXPECT_EQ(json_number(r.out, "threads"), 1);
  EXPECT_LE(json_number(r.out, "min_ms"), json_number(r.out, "median_ms"));
  EXPECT_LE(json_number(r.out, "median_ms"), json_number(r.out, "p90_ms"));
  EXPECT_NE(r.out.find("\"model\": \"" + path("lstm.onnx") + "\""), std::string::npos) << r.out;
}

TEST_F(Bench, ReportsPlannedBytes) {
  ASSERT_EQ(onyx("bench-models " + dir_.string() + " --models mobilenet_v2" + kSmall).status, 0);
  Result r = onyx("bench " + path("mobilenet_v2.onnx") + " --runs 1 --warmup 0 --threads 1 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_GT(json_number(r.out, "planned_mb"), 0) << r.out;
  Result off = onyx("bench " + path("mobilenet_v2.onnx") + " --runs 1 --warmup 0 --threads 1 --json --no-plan");
  ASSERT_EQ(off.status, 0) << off.out;
  EXPECT_NE(off.out.find("\"planned_mb\": null,"), std::string::npos) << off.out;
  Result text = onyx("bench " + path("mobilenet_v2.onnx") + " --runs 1 --warmup 0 --threads 1");
  EXPECT_NE(text.out.find("planned "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" MB   (arena for "), std::string::npos) << text.out;
}

// The OpenMP workers sleep while they wait unless asked to spin (ONYX_SPIN_WAIT=1: libgomp's own policy); a
// policy the user set is kept.
TEST_F(Bench, WorkersSleepWhileWaitingUnlessAskedToSpin) {
  ASSERT_EQ(onyx("bench-models " + dir_.string() + " --models lstm" + kSmall).status, 0);
  const std::string bench = "bench " + path("lstm.onnx") + " --runs 1 --warmup 0 --threads 2 --json";
  const std::string clean = "-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u ONYX_SPIN_WAIT";
  struct Case {
    std::string env, policy;
  };
  for (const Case& c : {Case{clean, "\"PASSIVE\""}, Case{clean + " ONYX_SPIN_WAIT=1", "null"},
                        Case{clean + " OMP_WAIT_POLICY=active", "\"active\""}, Case{clean + " GOMP_SPINCOUNT=1000", "null"}}) {
    Result r = onyx(bench, c.env);
    ASSERT_EQ(r.status, 0) << c.env << ": " << r.out;
    EXPECT_NE(r.out.find("\"omp_wait_policy\": " + c.policy), std::string::npos) << c.env << ": " << r.out;
  }
}

TEST_F(Bench, TextReportAndInputFromFile) {
  ASSERT_EQ(onyx("bench-models " + dir_.string() + " --models lstm" + kSmall).status, 0);
  // The input given as a file must be used: a wrong shape is refused.
  Result run = onyx("run " + path("lstm.onnx") + " --dummy --output-dir " + path("out"));
  ASSERT_EQ(run.status, 0) << run.out;
  Result bad = onyx("bench " + path("lstm.onnx") + " --runs 1 --input input=" + path("out/output_0.pb"));
  EXPECT_EQ(bad.status, 1) << bad.out;
  Result r = onyx("bench " + path("lstm.onnx") + " --runs 3 --warmup 0");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* label : {"session create", "first run", "median", "p90", "min", "CPU median", "peak RSS"})
    EXPECT_NE(r.out.find(label), std::string::npos) << label << "\n" << r.out;
  EXPECT_NE(r.out.find("(3 runs after 0 warm-up)"), std::string::npos) << r.out;
}

TEST_F(Bench, RejectsBadOptions) {
  ASSERT_EQ(onyx("bench-models " + dir_.string() + " --models lstm" + kSmall).status, 0);
  const std::string m = path("lstm.onnx");
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::vector<Case>{{" --runs 0", "--runs expects an integer from 1"},
                                         {" --warmup -1", "--warmup expects an integer from 0"},
                                         {" --threads two", "--threads expects an integer"},
                                         {" --input nosuch=x.npy", "'nosuch' is not an input"},
                                         {" --dummy --seed 3", "--dummy and --seed exclude each other"}}) {
    Result r = onyx("bench " + m + c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
  Result missing = onyx("bench " + path("nothing.onnx"));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("nothing.onnx"), std::string::npos) << missing.out;
}

TEST_F(Bench, ModelsCheckRunAndHaveTheirOps) {
  Result gen = onyx("bench-models " + dir_.string() + kSmall);
  ASSERT_EQ(gen.status, 0) << gen.out;
  struct Expect {
    const char* model;
    std::vector<const char*> ops;
    const char* output;
  };
  const std::vector<Expect> expected = {
      {"bert_base", {"LayerNormalization", "Erf", "Softmax", "Transpose", "Reshape", "Div", "MatMul"},
       "last_hidden_state: tensor(float)[1,16,32]"},
      {"gpt2_stack", {"LayerNormalization", "Split", "Where", "Tanh", "Pow", "Softmax"},
       "last_hidden_state: tensor(float)[1,16,32]"},
      {"mobilenet_v2", {"Conv", "BatchNormalization", "Clip", "Add", "GlobalAveragePool", "Flatten", "Gemm"},
       "logits: tensor(float)[1,10]"},
      {"lstm", {"LSTM", "Squeeze"}, "output: tensor(float)[16,1,16]"},
      {"mobilenet_v2_qdq", {"QuantizeLinear", "DequantizeLinear", "Conv", "Add", "GlobalAveragePool", "Gemm"},
       "logits: tensor(float)[1,10]"},
      {"bert_base_ort",
       {"LayerNormalization", "com.microsoft.Attention", "com.microsoft.SkipLayerNormalization",
        "com.microsoft.BiasGelu", "MatMul"},
       "last_hidden_state: tensor(float)[1,16,32]"},
      {"mobilenet_v2_qop",
       {"QuantizeLinear", "QLinearConv", "com.microsoft.QLinearAdd", "com.microsoft.QLinearGlobalAveragePool",
        "DequantizeLinear", "Gemm"},
       "logits: tensor(float)[1,10]"},
  };
  for (const auto& e : expected) {
    const std::string m = path(std::string(e.model) + ".onnx");
    Result check = onyx("check " + m);
    EXPECT_EQ(check.status, 0) << e.model << "\n" << check.out;
    Result info = onyx("info " + m);
    ASSERT_EQ(info.status, 0) << info.out;
    for (const char* op : e.ops) EXPECT_NE(info.out.find(cat("  ", op, "\n")), std::string::npos) << e.model << " " << op << "\n" << info.out;
    Result run = onyx("run " + m + " --dummy");
    ASSERT_EQ(run.status, 0) << e.model << "\n" << run.out;
    EXPECT_NE(run.out.find(e.output), std::string::npos) << run.out;
    // Weights are scaled so activations stay finite and of order 1.
    EXPECT_EQ(run.out.find("nan"), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("inf"), std::string::npos) << run.out;
  }
  // Depthwise convolutions: a Conv's group equals its channels.
  Result text = onyx("print " + path("mobilenet_v2.onnx"));
  EXPECT_NE(text.out.find("group: int = 16"), std::string::npos) << text.out.substr(0, 3000);
}

TEST_F(Bench, DecomposedLayerNorm) {
  Result gen = onyx("bench-models " + dir_.string() + " --models bert_base --decomposed-layernorm" + kSmall);
  ASSERT_EQ(gen.status, 0) << gen.out;
  Result info = onyx("info " + path("bert_base.onnx"));
  EXPECT_EQ(info.out.find("LayerNormalization"), std::string::npos) << info.out;
  for (const char* op : {"ReduceMean", "Sqrt", "Pow"}) EXPECT_NE(info.out.find(op), std::string::npos) << op;
  Result run = onyx("run " + path("bert_base.onnx") + " --dummy");
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(Bench, SameOptionsWriteTheSameBytes) {
  const std::string opts = std::string(" --models lstm,mobilenet_v2") + kSmall;
  ASSERT_EQ(onyx("bench-models " + path("a") + opts).status, 0);
  ASSERT_EQ(onyx("bench-models " + path("b") + opts).status, 0);
  ASSERT_EQ(onyx("bench-models " + path("c") + opts + " --seed 7").status, 0);
  for (const char* m : {"lstm.onnx", "mobilenet_v2.onnx"}) {
    const std::string a = read_file(path(std::string("a/") + m));
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, read_file(path(std::string("b/") + m))) << m;
    EXPECT_NE(a, read_file(path(std::string("c/") + m))) << m;
  }
  EXPECT_FALSE(fs::exists(path("a/bert_base.onnx")));
}

TEST_F(Bench, ModelsRejectBadConfigurations) {
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::vector<Case>{
           {" --hidden 32 --heads 5", "--hidden 32 is not a multiple of --heads 5"},
           {" --models bert_base,resnet", "unknown model 'resnet'"},
           {" --width 0", "--width expects a number in (0, 4]"},
           {" --image 8", "--image expects an integer from 32"},
           {" --models bert_base --hidden 8184", "model 'bert_base' would need about"},
           {" --models lstm --lstm-hidden 16384 --lstm-layers 8", "model 'lstm' would need about"}}) {
    Result r = onyx("bench-models " + dir_.string() + c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(path("bert_base.onnx")));
}

TEST(BenchHelp, CommandsAnswerHelp) {
  for (const char* c : {"bench", "bench-models"}) {
    Result r = onyx(cat(c, " --help"));
    EXPECT_EQ(r.status, 0) << c;
    EXPECT_NE(r.out.find(cat("usage: onyx ", c, " ")), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace onyx
