// The `onyx` command line, run as a user would (the binary comes from ONYX_CLI, set by ctest).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

#include "base/error.hpp"
#include "exec/datum_io.hpp"
#include "format/onnx_proto.hpp"
#include "ops/op_test_util.hpp"
#include "ops/registry.hpp"
#include "test_data.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

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
  for (const char* c : {"info", "check", "convert", "print", "demo", "run", "test-onnx", "profile", "graph", "ops"}) {
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

// y = op(x) with x float[n], importing the default domain at `opset`.
std::string one_op_model(const char* op, int64_t opset, int64_t n) {
  pb::Model m;
  m.ir_version = 10;
  m.opset_import.push_back({"", opset, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "one_op";
  pb::ValueInfo& vi = g.input.emplace_back();
  vi.name = "x";
  auto& tt = vi.type.emplace().tensor_type.emplace();
  tt.elem_type = 1;
  tt.shape.emplace().dim.emplace_back().dim_value = n;
  pb::Node& node = g.node.emplace_back();
  node.op_type = op;
  node.input = {"x"};
  node.output = {"y"};
  g.output.emplace_back().name = "y";
  return pb::serialize_model(m);
}

// A shape-only conformance test (outputs from a random source) still fails when an output leaves the expected
// range: the model is Identity, so a wrong "expected" range stands for a wrong output.
TEST(Cli, ShapeOnlyTestsCheckTheValueRange) {
  fs::path dir = fs::temp_directory_path() / cat("onyx-cli-range-", ::getpid());
  fs::path test = dir / "suite" / "test_identity_draw";
  fs::create_directories(test / "test_data_set_0");
  std::ofstream(test / "model.onnx", std::ios::binary) << one_op_model("Identity", 21, 4);
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


// run, bench and profile refuse a model of a newer opset than onyx implements, and load it with
// --accept-newer-versions.
TEST(Cli, NewerOpsetsNeedTheAcceptOption) {
  fs::path dir = fs::temp_directory_path() / cat("onyx-cli-newer-", ::getpid());
  fs::create_directories(dir);
  const std::string path = (dir / "newer.onnx").string();
  std::ofstream(path, std::ios::binary) << one_op_model("Relu", 29, 3);
  for (const char* cmd : {"run", "bench", "profile"}) {
    CliRun refused = onyx(cat(cmd, " ", path));
    EXPECT_NE(refused.status, 0) << cmd;
    EXPECT_NE(refused.out.find("onyx supports that domain up to opset 28"), std::string::npos) << cmd << ": " << refused.out;
    CliRun accepted = onyx(cat(cmd, " ", path, " --accept-newer-versions"));
    EXPECT_EQ(accepted.status, 0) << cmd << ": " << accepted.out;
  }
  fs::remove_all(dir);
}

// ---- onyx ops, profile, graph ----

// A fresh folder for one test's files, removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) : path(fs::temp_directory_path() / cat("onyx-cli-", tag, "-", ::getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

TEST(Cli, OpsListsEveryRegisteredVersion) {
  CliRun r = onyx("ops");
  ASSERT_EQ(r.status, 0) << r.out.substr(0, 2000);
  // Add's line carries exactly the versions the registry holds.
  std::string versions;
  for (int v : ops::builtin_registry().versions("", "Add")) versions += cat(versions.empty() ? "" : ", ", v);
  ASSERT_FALSE(versions.empty());
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nai\\.onnx +Add +" + versions + "\n"))) << versions;
  EXPECT_NE(r.out.find("inputs 0,1: "), std::string::npos);
  EXPECT_NE(r.out.find("float16 double"), std::string::npos);  // element types in enum order
  std::set<std::pair<std::string, std::string>> names;
  for (const auto& [key, def] : ops::builtin_registry().all()) names.insert({def.domain, def.op_type});
  EXPECT_NE(r.out.find(cat("\n", names.size(), " operators, ", ops::builtin_registry().all().size(), " versions in ")),
            std::string::npos);
  // What runs besides the reference kernels, what Gradient differentiates, what is random.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nai\\.onnx +Conv +[0-9, ]+\n(    .*\n)*    fast: oneDNN convolution")));
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nai\\.onnx +Add +[0-9, ]+\n(    .*\n)*    gradient rule\n")));
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nai\\.onnx +RandomNormal +[0-9, ]+\n(    .*\n)*    random: never folded\n")));

  CliRun ml = onyx("ops --domain ai.onnx.ml");
  ASSERT_EQ(ml.status, 0) << ml.out;
  EXPECT_EQ(ml.out.find("\nai.onnx "), std::string::npos);
  EXPECT_NE(ml.out.find("in domain ai.onnx.ml; 0 with fast kernels\n"), std::string::npos) << ml.out;
  CliRun none = onyx("ops --domain no.such.domain");
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(std::count(none.out.begin(), none.out.end(), '\n'), 1) << none.out;
  EXPECT_NE(none.out.find("ai.onnx.ml"), std::string::npos) << none.out;  // lists the domains there are
}

TEST(Cli, ProfilePrintsATablePerOpType) {
  TempDir dir("profile");
  ASSERT_EQ(onyx("demo " + dir / "demo.onnx").status, 0);
  CliRun r = onyx(cat("profile ", dir / "demo.onnx", " --dummy --dim N=4 --runs 3 --level basic -o ", dir / "trace.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  // The demo has 2 MatMul, 2 Add, 1 Relu, 1 Softmax: per op type, count = nodes x runs.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nMatMul +6 +[0-9.]+ +[0-9.]+ +[0-9.]+\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nAdd +6 "))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nRelu +3 "))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nSoftmax +3 "))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nall nodes +18 "))) << r.out;
  EXPECT_NE(r.out.find("wrote 18 node events (3 runs)"), std::string::npos) << r.out;
  std::string trace = read_text(dir / "trace.json");
  EXPECT_EQ(trace.rfind("{\"displayTimeUnit\"", 0), 0u) << trace.substr(0, 200);
  EXPECT_NE(trace.find("\"cat\":\"MatMul\""), std::string::npos);
  EXPECT_NE(trace.find("\"input_types\":[\"float[N,16]\",\"float[16,32]\"]"), std::string::npos) << trace.substr(0, 2000);

  CliRun bad = onyx(cat("profile ", dir / "demo.onnx", " --runs 0"));
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("--runs"), std::string::npos) << bad.out;
  CliRun bad_dim = onyx(cat("profile ", dir / "demo.onnx", " --dim N=x"));
  EXPECT_EQ(bad_dim.status, 1);
  EXPECT_NE(bad_dim.out.find("--dim N expects an integer from 0 to 2147483648, got 'x'"), std::string::npos) << bad_dim.out;
}

// The id Graphviz knows the node by whose label line is `label` (the DOT text names each node once).
std::string dot_id(const std::string& dot, const std::string& label) {
  size_t at = dot.find("label=" + label + "]");
  if (at == std::string::npos) return "<no node labelled " + label + ">";
  size_t begin = dot.find_first_not_of(' ', dot.rfind('\n', at) + 1);
  return dot.substr(begin, dot.find(' ', begin) - begin);
}

TEST(Cli, GraphDrawsTheDemoWithInferredTypes) {
  TempDir dir("graph");
  ASSERT_EQ(onyx("demo " + dir / "demo.onnx").status, 0);
  CliRun r = onyx("graph " + dir / "demo.onnx");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string& dot = r.out;
  EXPECT_EQ(dot.rfind("digraph onyx {", 0), 0u) << dot;
  std::string x = dot_id(dot, "\"X\\nfloat[N,16]\"");
  std::string w1 = dot_id(dot, "\"W1\\nfloat[16,32]\"");
  std::string matmul = dot_id(dot, "\"MatMul\\n#0\"");
  std::string add = dot_id(dot, "\"Add\\n#1\"");
  std::string softmax = dot_id(dot, "\"Softmax\\n#5\"");
  std::string out = dot_id(dot, "\"probabilities\\nfloat[N,10]\"");
  // Edges carry the type inference gave each value: h0 = X @ W1 is float[N,32].
  EXPECT_NE(dot.find(x + " -> " + matmul + " [label=\"float[N,16]\""), std::string::npos) << dot;
  EXPECT_NE(dot.find(w1 + " -> " + matmul + " [label=\"float[16,32]\""), std::string::npos) << dot;
  EXPECT_NE(dot.find(matmul + " -> " + add + " [label=\"float[N,32]\""), std::string::npos) << dot;
  EXPECT_NE(dot.find(softmax + " -> " + out + " [label=\"float[N,10]\""), std::string::npos) << dot;
  size_t edges = 0;
  for (size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1)) ++edges;
  EXPECT_EQ(edges, 11u) << dot;  // 6 nodes reading 10 values (4 of them initializers), and the output
  // Above the initializer limit they go into the readers' labels instead of boxes.
  CliRun folded = onyx("graph --max-initializers 2 " + dir / "demo.onnx");
  ASSERT_EQ(folded.status, 0) << folded.out;
  EXPECT_NE(folded.out.find("label=\"MatMul\\n#0\\nW1: float[16,32]\""), std::string::npos) << folded.out;
  EXPECT_EQ(folded.out.find("label=\"W1\\n"), std::string::npos) << folded.out;

  CliRun file = onyx(cat("graph ", dir / "demo.onnx", " -o ", dir / "demo.gv"));
  ASSERT_EQ(file.status, 0) << file.out;
  EXPECT_EQ(read_text(dir / "demo.gv"), dot);
  EXPECT_EQ(onyx(cat("graph ", dir / "demo.onnx", " --format pdf -o x.pdf")).status, 1);
  EXPECT_EQ(onyx(cat("graph ", dir / "demo.onnx", " --format svg")).status, 1);  // svg needs -o
}

TEST(Cli, GraphWithoutDotIsOneClearError) {
  TempDir dir("graph-nodot");
  ASSERT_EQ(onyx("demo " + dir / "demo.onnx").status, 0);
  const char* cli = std::getenv("ONYX_CLI");
  ASSERT_TRUE(cli);
  std::string cmd = cat("env PATH=", dir.path.string(), " ", cli, " graph ", dir / "demo.onnx", " -o ", dir / "demo.svg", " 2>&1");
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 1) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("'dot' program is not on PATH"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "demo.svg"));
}

// A model whose names try to break out of DOT strings and labels, with an If whose branches become clusters.
std::string hostile_model() {
  static const std::string x = "x\"}; evil [label=\"pwned", relu = "a\\Nb&amp;<i>", y = "y\\", z = "z\"",
                           branch = "branch\nline2", t = "t_out", e = "e_out";
  pb::Model m;
  m.ir_version = 10;
  m.opset_import.push_back({"", 21, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "hostile";
  auto tensor_info = [](pb::ValueInfo& vi, const std::string& name, int32_t elem, std::vector<int64_t> dims) {
    vi.name = name;
    auto& tt = vi.type.emplace().tensor_type.emplace();
    tt.elem_type = elem;
    auto& shape = tt.shape.emplace();
    for (int64_t d : dims) shape.dim.emplace_back().dim_value = d;
  };
  static const std::string cond = "cond";
  tensor_info(g.input.emplace_back(), x, 1, {2});
  tensor_info(g.input.emplace_back(), cond, 9, {});
  pb::Node& r = g.node.emplace_back();
  r.op_type = "Relu";
  r.name = relu;
  r.input = {x};
  r.output = {y};
  pb::Node& n = g.node.emplace_back();
  n.op_type = "If";
  n.name = branch;
  n.input = {cond};
  n.output = {z};
  auto body = [&](const char* attr, const char* op, const std::string& out) {
    pb::Attribute& a = n.attribute.emplace_back();
    a.name = attr;
    a.type = static_cast<int32_t>(pb::AttrType::Graph);
    pb::Graph& b = a.g.emplace();
    b.name = attr;
    pb::Node& bn = b.node.emplace_back();
    bn.op_type = op;
    bn.input = {y};
    bn.output = {out};
    b.output.emplace_back().name = out;
  };
  body("then_branch", "Identity", t);
  body("else_branch", "Neg", e);
  g.output.emplace_back().name = z;
  g.output.emplace_back().name = y;
  return pb::serialize_model(m);
}

TEST(Cli, GraphEscapesHostileNames) {
  if (!fs::exists("/usr/bin/dot")) ONYX_MISSING_INSTALLED_DATA("Graphviz is not installed (scripts/setup.sh installs it)");
  TempDir dir("graph-hostile");
  std::ofstream(dir / "hostile.onnx", std::ios::binary) << hostile_model();
  CliRun r = onyx(cat("graph ", dir / "hostile.onnx", " -o ", dir / "hostile.svg"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("note:"), std::string::npos) << r.out;  // inference went through the If
  std::string svg = read_text(dir / "hostile.svg");
  ASSERT_NE(svg.find("</svg>"), std::string::npos) << svg.substr(0, 500);
  auto count = [&](const std::string& s) {
    size_t c = 0;
    for (size_t at = svg.find(s); at != std::string::npos; at = svg.find(s, at + 1)) ++c;
    return c;
  };
  // 2 inputs, Relu, If, Identity, Neg, 2 outputs of the graph and 1 of each branch: nothing injected.
  EXPECT_EQ(count("class=\"node\""), 10u) << svg;
  EXPECT_EQ(count("class=\"cluster\""), 2u) << svg;
  // Each name shows exactly as written (SVG escapes it as XML).
  EXPECT_NE(svg.find(">x&quot;}; evil [label=&quot;pwned</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">a\\Nb&amp;amp;&lt;i&gt;</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">y\\</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">z&quot;</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">branch</text>"), std::string::npos) << svg;  // a line break in a name breaks the label
  EXPECT_NE(svg.find(">line2</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">float[2]</text>"), std::string::npos) << svg;  // y = Relu(x), inferred
  EXPECT_NE(svg.find(">then_branch of branch"), std::string::npos) << svg;
}

}  // namespace
}  // namespace onyx
