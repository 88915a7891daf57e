// A run's deadline (RunOptions::timeout_ms) and a session's memory limit (SessionOptions::memory_limit_mb): a run
// past either stops with an error that names the node, frees what it allocated, and the session runs again.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "base/error.hpp"
#include "base/run_limits.hpp"
#include "ops/graph_builder.hpp"
#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;
using testing::f32;
using testing::i64;
using testing::ModelBuilder;
using testing::values_of;
using D = DataType;

constexpr int64_t kForever = int64_t{1} << 62;

// y = Loop(M) over x: the body passes x on (through Identity, or with no node at all when `empty_body`), and
// with `scan` also gives it as a scan output each iteration.
pb::Graph loop_model(ModelBuilder& mb, bool empty_body, bool scan) {
  pb::Graph g;
  mb.input(g, "M", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{1024}));
  pb::Graph body;
  mb.input(body, "i", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(body, "x_in", mb.tensor_t(D::Float, std::vector<int64_t>{1024}));
  std::string carried = "x_in";
  if (!empty_body) {
    mb.node(body, "Identity", {"x_in"}, {"x_out"});
    carried = "x_out";
  }
  mb.output(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.output(body, carried, mb.tensor_t(D::Float, std::vector<int64_t>{1024}));
  if (scan) mb.output(body, carried + "_scan_source", mb.tensor_t(D::Float, std::vector<int64_t>{1024}));
  if (scan) mb.node(body, "Identity", {carried}, {carried + "_scan_source"});
  std::vector<std::string> outs{"y"};
  if (scan) outs.push_back("ys");
  pb::Node& n = mb.node(g, "Loop", {"M", "", "x"}, outs);
  mb.attr_graph(n, "body", std::move(body));
  for (const auto& o : outs) mb.output(g, o);
  return g;
}

std::map<std::string, Datum> loop_feeds(int64_t trips) {
  return {{"M", Datum::of(i64({}, {trips}))}, {"x", Datum::of(f32({1024}, std::vector<float>(1024, 1.5f)))}};
}

TEST(RunLimits, DeadlineStopsALoopOfHugeTripCount) {
  for (bool empty_body : {false, true}) {
    ModelBuilder mb;
    Session s = mb.session(loop_model(mb, empty_body, false), 21);
    RunOptions ro;
    ro.timeout_ms = 50;
    const std::string e = error_of([&] { s.run(loop_feeds(kForever), {}, ro); });
    EXPECT_NE(e.find("deadline (timeout of 50 ms)"), std::string::npos) << e;
    EXPECT_NE(e.find("(Loop)"), std::string::npos) << e;  // names the node it stopped in
    // The session runs again, with the deadline or without.
    auto out = s.run(loop_feeds(3), {}, ro);
    EXPECT_EQ(values_of<float>(out.at(0).second.tensor)[7], 1.5f);
    EXPECT_EQ(s.run(loop_feeds(3)).size(), 1u);
  }
}

TEST(RunLimits, TerminateFromAnotherThreadStopsALoop) {
  ModelBuilder mb;
  Session s = mb.session(loop_model(mb, true, false), 21);
  std::atomic<bool> stop{false};
  RunOptions ro;
  ro.terminate = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
  });
  const std::string e = error_of([&] { s.run(loop_feeds(kForever), {}, ro); });
  stopper.join();
  EXPECT_NE(e.find("run terminated by the caller"), std::string::npos) << e;
}

// Kernels' own checks (check_run_limits) see the run's limits on the thread that runs it, and nothing elsewhere.
TEST(RunLimits, ThreadLimitsAreScoped) {
  EXPECT_EQ(run_limits(), nullptr);
  check_run_limits();  // no limits: nothing to stop
  RunLimits past;
  past.timeout_ms = 1;
  past.deadline = RunLimits::Clock::now() - std::chrono::milliseconds(1);
  {
    RunLimitsScope scope(&past);
    EXPECT_TRUE(past.due());
    const std::string e = error_of([] { check_run_limits("in a test"); });
    EXPECT_NE(e.find("deadline (timeout of 1 ms) in a test"), std::string::npos) << e;
    std::thread([] { EXPECT_EQ(run_limits(), nullptr); }).join();
  }
  EXPECT_EQ(run_limits(), nullptr);
}

// Kernels that run long on one node check the deadline at their block boundaries: without those checks, a model
// of one such node would run to its end (the executor checks only between nodes) and succeed.
TEST(RunLimits, DeadlineStopsLongKernelsInsideANode) {
  struct Case {
    const char* op;
    std::vector<std::pair<std::string, Tensor>> inputs;
    bool reference;
    const char* where;
  };
  std::vector<Case> cases;
  {
    // The reference matrix product (what MatMul runs with reference_kernels): 2 x 2048^3 flops, seconds.
    const int64_t n = 2048;
    std::vector<float> a(static_cast<size_t>(n * n), 0.5f);
    cases.push_back({"MatMul", {{"A", f32({n, n}, a)}, {"B", f32({n, n}, a)}}, true, "in a matrix product"});
    // A double one: the blocked GEMM of a normal session.
    std::vector<double> d(a.begin(), a.end());
    cases.push_back({"MatMul",
                     {{"A", testing::make_tensor<double>(DataType::Double, {n, n}, d)},
                      {"B", testing::make_tensor<double>(DataType::Double, {n, n}, d)}},
                     false,
                     "in a matrix product"});
  }
  {
    // The reference convolution: 256 x 256 channels, 3 x 3 taps over 128 x 128 pixels, 10^10 multiply-adds.
    const std::vector<float> x(size_t{256} * 128 * 128, 0.5f), w(size_t{256} * 256 * 9, 0.25f);
    cases.push_back({"Conv", {{"X", f32({1, 256, 128, 128}, x)}, {"W", f32({256, 256, 3, 3}, w)}}, true,
                     "in a convolution"});
  }
  {
    // Det of a 2048 x 2048 matrix: 2048^3 / 3 multiply-adds in double.
    const int64_t n = 2048;
    std::vector<float> a(static_cast<size_t>(n * n));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 1013) / 1013.0f;
    cases.push_back({"Det", {{"X", f32({n, n}, a)}}, false, "in Det"});
  }
  {
    // NonMaxSuppression of 200,000 disjoint boxes, all kept: 2 x 10^10 overlap tests.
    const int64_t n = 200000;
    std::vector<float> boxes, scores;
    for (int64_t i = 0; i < n; ++i) {
      boxes.insert(boxes.end(), {static_cast<float>(2 * i), 0.0f, static_cast<float>(2 * i + 1), 1.0f});
      scores.push_back(static_cast<float>(n - i) / static_cast<float>(n));
    }
    cases.push_back({"NonMaxSuppression",
                     {{"boxes", f32({1, n, 4}, boxes)}, {"scores", f32({1, 1, n}, scores)}, {"max", i64({1}, {n})}},
                     false,
                     "in NonMaxSuppression"});
  }
  // A Hann window of 2^25 elements: a cosine each, written straight into its 128 MiB output.
  cases.push_back({"HannWindow", {{"size", i64({}, {int64_t{1} << 25})}}, false, "in a window or filter bank"});
  for (auto& c : cases) {
    ModelBuilder mb;
    pb::Graph g;
    std::vector<std::string> names;
    std::map<std::string, Datum> feeds;
    for (auto& [name, t] : c.inputs) {
      std::vector<int64_t> dims = t.dims();
      mb.input(g, name, mb.tensor_t(t.dtype(), dims));
      names.push_back(name);
      feeds.emplace(name, Datum::of(t));
    }
    mb.node(g, c.op, names, {"Y"});
    mb.output(g, "Y");
    SessionOptions so;
    so.reference_kernels = c.reference;
    so.threads = 1;
    Session s = mb.session(std::move(g), 21, so);
    RunOptions ro;
    ro.timeout_ms = 50;
    const std::string e = error_of([&] { s.run(feeds, {}, ro); });
    EXPECT_NE(e.find(std::string("deadline (timeout of 50 ms) ") + c.where), std::string::npos) << c.op << ": " << e;
  }
}

// Y = Expand(X, shape): the shape feed sets how much the run allocates.
pb::Graph expand_model(ModelBuilder& mb) {
  pb::Graph g;
  mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{1}));
  mb.input(g, "shape", mb.tensor_t(D::Int64, std::vector<int64_t>{1}));
  mb.node(g, "Exp", {"X"}, {"e"});
  mb.node(g, "Expand", {"e", "shape"}, {"Y"});
  mb.output(g, "Y");
  return g;
}

TEST(MemoryLimit, AnAllocationPastTheLimitFailsTheRunNamingTheNode) {
  ModelBuilder mb;
  SessionOptions o;
  o.memory_limit_mb = 16;
  Session s = mb.session(expand_model(mb), 21, o);
  auto feeds = [](int64_t n) {
    return std::map<std::string, Datum>{{"X", Datum::of(f32({1}, {0}))}, {"shape", Datum::of(i64({1}, {n}))}};
  };
  const std::string e = error_of([&] { s.run(feeds(int64_t{8} << 20)); });  // 32 MiB of floats
  EXPECT_NE(e.find("memory limit of 16 MiB exceeded"), std::string::npos) << e;
  EXPECT_NE(e.find("(Expand)"), std::string::npos) << e;
  EXPECT_EQ(s.memory_in_use(), 0u);  // what the run had allocated is freed
  {
    auto out = s.run(feeds(int64_t{1} << 20));  // 4 MiB fits, and stays charged while the caller keeps it
    EXPECT_EQ(values_of<float>(out.at(0).second.tensor)[12345], 1.0f);
    EXPECT_GE(s.memory_in_use(), uint64_t{4} << 20);
    // Three such outputs kept at once are 12 MiB: a fourth run's two tensors (Exp's and Expand's) do not fit.
    auto out2 = s.run(feeds(int64_t{1} << 20));
    auto out3 = s.run(feeds(int64_t{1} << 20));
    EXPECT_NE(error_of([&] { s.run(feeds(int64_t{1} << 20)); }).find("memory limit"), std::string::npos);
  }
  EXPECT_EQ(s.memory_in_use(), 0u);
  EXPECT_EQ(s.run(feeds(int64_t{1} << 20)).size(), 1u);
}

TEST(MemoryLimit, AScanOutputGrowingWithoutBoundHitsTheLimit) {
  ModelBuilder mb;
  SessionOptions o;
  o.memory_limit_mb = 8;
  Session s = mb.session(loop_model(mb, false, true), 21, o);
  const std::string e = error_of([&] { s.run(loop_feeds(kForever)); });
  EXPECT_NE(e.find("memory limit of 8 MiB"), std::string::npos) << e;
  EXPECT_NE(e.find("(Loop)"), std::string::npos) << e;
  EXPECT_EQ(s.memory_in_use(), 0u);
  auto out = s.run(loop_feeds(4));
  EXPECT_EQ(out.at(1).second.tensor.dims(), (std::vector<int64_t>{4, 1024}));
}

// What oneDNN needs beyond the tensors (its scratchpad, copies of the input and output in its blocked layouts) is
// charged while the node runs: a convolution whose output fits the limit, but not with those copies, fails naming
// the node, and runs under a limit that holds them.
TEST(MemoryLimit, OneDnnScratchMemoryCounts) {
  auto run_under = [](int64_t limit_mb) {
    ModelBuilder mb;
    pb::Graph g;
    mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{1, 64, 128, 128}));
    pb::Tensor& w = g.initializer.emplace_back();  // constant weights: the kernel oneDNN runs, prepacked
    w.name = mb.arena.save("W");
    w.data_type = static_cast<int32_t>(D::Float);
    w.dims = {64, 64, 3, 3};
    w.float_data.assign(64 * 64 * 9, 0.25f);
    pb::Node& conv = mb.node(g, "Conv", {"X", "W"}, {"Y"});
    mb.attr_ints(conv, "pads", {1, 1, 1, 1});
    mb.output(g, "Y");
    SessionOptions o;
    o.memory_limit_mb = limit_mb;
    o.threads = 1;
    o.optimization_level = 0;  // the Conv as it is, in NCHW: oneDNN converts its input and output
    Session s = mb.session(std::move(g), 21, o);
    const std::map<std::string, Datum> feeds{
        {"X", Datum::of(f32({1, 64, 128, 128}, std::vector<float>(64 * 128 * 128, 0.5f)))}};
    // oneDNN may pick Winograd here, whose transforms round: near, not equal.
    return error_of([&] { EXPECT_NEAR(s.run(feeds).at(0).second.tensor.data<float>()[129], 64 * 9 * 0.125f, 1e-3f); });
  };
  const std::string e = run_under(6);  // the 4 MiB output fits; with a 4 MiB copy of the input it does not
  EXPECT_NE(e.find("memory limit of 6 MiB exceeded"), std::string::npos) << e;
  EXPECT_NE(e.find("oneDNN"), std::string::npos) << e;
  EXPECT_NE(e.find("(Conv)"), std::string::npos) << e;
  EXPECT_EQ(run_under(64), "(no error)");
}

TEST(MemoryLimit, NoneByDefault) {
  ModelBuilder mb;
  Session s = mb.session(expand_model(mb), 21);
  auto out = s.run({{"X", Datum::of(f32({1}, {0}))}, {"shape", Datum::of(i64({1}, {int64_t{1} << 20}))}});
  EXPECT_EQ(s.memory_in_use(), 0u);
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
