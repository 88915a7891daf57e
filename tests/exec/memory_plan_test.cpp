// Static memory plans (exec/memory_plan) and in-place execution: planned runs give the same bits as unplanned ones,
// each input-shape signature gets its own plan, buffers with disjoint lifetimes share memory, a buffer kept longer
// than recorded makes the allocations that would overlap it fall back to the heap, and kernels write into inputs
// that die with them only when nothing else sees those buffers.
#include "exec/memory_plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <algorithm>

#include "base/error.hpp"
#include "ir/tensor_alloc.hpp"
#include "test_data.hpp"
#include "ops/graph_builder.hpp"
#include "ops/op_test_util.hpp"
#include "ops/registry.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using D = DataType;
using testing::make_tensor;
using testing::ModelBuilder;
using testing::values_of;

Session make_session(ModelBuilder& mb, pb::Graph g, int64_t opset, bool plan, int level = 3) {
  pb::Model m;
  m.ir_version = 10;
  m.opset_import.push_back({mb.arena.save(""), opset, {}});
  g.name = mb.arena.save("main");
  m.graph = std::move(g);
  SessionOptions o;
  o.memory_plan = plan;
  o.optimization_level = level;
  o.threads = 1;
  return Session::from_bytes(pb::serialize_model(m), o);
}

// Deterministic values in [-1, 1).
std::vector<float> pseudo_random(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

Datum arange(std::vector<int64_t> dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) / static_cast<float>(n);
  return Datum::of(make_tensor<float>(D::Float, std::move(dims), v));
}

void add_weight(ModelBuilder& mb, pb::Graph& g, const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
  pb::Tensor& t = g.initializer.emplace_back();
  t.name = mb.arena.save(name);
  t.data_type = static_cast<int32_t>(D::Float);
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  t.dims = std::move(dims);
  t.float_data = pseudo_random(n, seed);
  for (float& x : t.float_data) x *= 0.3f;
}

void expect_same_bits(const std::vector<std::pair<std::string, Datum>>& a,
                      const std::vector<std::pair<std::string, Datum>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].second.is_tensor() && b[i].second.is_tensor()) << a[i].first;
    EXPECT_EQ(a[i].second.tensor.dims(), b[i].second.tensor.dims()) << a[i].first;
    EXPECT_EQ(a[i].second.tensor.bytes(), b[i].second.tensor.bytes()) << a[i].first;
  }
}

// X [1, C, H, W] -> Conv -> Relu -> Conv, + the Relu output (a residual) -> Relu -> Conv -> Sigmoid -> Y.
pb::Graph residual_cnn(ModelBuilder& mb, int64_t c) {
  pb::Graph g;
  mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{1, c, 12, 12}));
  for (int k = 1; k <= 3; ++k) {
    add_weight(mb, g, "W" + std::to_string(k), {c, c, 3, 3}, 10u + static_cast<uint32_t>(k));
    add_weight(mb, g, "B" + std::to_string(k), {c}, 20u + static_cast<uint32_t>(k));
  }
  auto conv = [&](const std::string& in, int k, const std::string& out) {
    pb::Node& n = mb.node(g, "Conv", {in, "W" + std::to_string(k), "B" + std::to_string(k)}, {out});
    mb.attr_ints(n, "pads", {1, 1, 1, 1});
  };
  conv("X", 1, "c1");
  mb.node(g, "Relu", {"c1"}, {"r1"});
  conv("r1", 2, "c2");
  mb.node(g, "Add", {"c2", "r1"}, {"s"});
  mb.node(g, "Relu", {"s"}, {"r2"});
  conv("r2", 3, "c3");
  mb.node(g, "Sigmoid", {"c3"}, {"Y"});
  mb.output(g, "Y");
  return g;
}

TEST(MemoryPlan, ResidualCnnGivesTheBitsOfUnplannedRuns) {
  for (int level : {0, 3}) {  // 3: channels-last convolutions with the residual as the sum post-op
    ModelBuilder mb;
    Session planned = make_session(mb, residual_cnn(mb, 8), 17, true, level);
    Session plain = make_session(mb, residual_cnn(mb, 8), 17, false, level);
    const std::map<std::string, Datum> feeds{{"X", arange({1, 8, 12, 12})}};
    auto want = plain.run(feeds);
    EXPECT_FALSE(planned.memory_plan(feeds)) << "no plan before the first run";
    for (int run = 0; run < 3; ++run) expect_same_bits(planned.run(feeds), want);
    auto info = planned.memory_plan(feeds);
    ASSERT_TRUE(info) << "level " << level;
    EXPECT_EQ(info->runs, 2u);
    EXPECT_GT(info->buffers, 0u);
    EXPECT_EQ(info->served, 2 * info->buffers) << "each replay serves every planned buffer";
    EXPECT_EQ(info->fallbacks, 0u);
    EXPECT_LE(info->arena_bytes, info->buffer_bytes);
    EXPECT_FALSE(plain.memory_plan(feeds));
  }
}

TEST(MemoryPlan, LightSqueezenetGivesTheBitsOfUnplannedRuns) {
  const std::filesystem::path model =
      testing::shared_onnx_tests() / "light" / "light_squeezenet.onnx";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is not there (the residual CNN test covers this)";
  SessionOptions on, off;
  on.threads = off.threads = 1;
  off.memory_plan = false;
  Session planned = Session::from_file(model, on), plain = Session::from_file(model, off);
  std::vector<int64_t> dims;
  for (const Dim& d : planned.inputs().at(0).type.shape.dims) dims.push_back(d.value.value_or(1));
  const std::map<std::string, Datum> feeds{{planned.inputs()[0].name, arange(dims)}};
  auto want = plain.run(feeds);
  for (int run = 0; run < 3; ++run) expect_same_bits(planned.run(feeds), want);
  auto info = planned.memory_plan(feeds);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->fallbacks, 0u);
  EXPECT_EQ(info->served, 2 * info->buffers);
  EXPECT_LT(info->arena_bytes, info->buffer_bytes / 2) << "lifetimes in a CNN are short: most buffers share memory";
}

// (Without convolutions: concurrent runs of one session with Conv already differ now and then without plans.)
TEST(MemoryPlan, ConcurrentRunsOfOneSessionEachTakeTheirOwnArena) {
  auto model = [](ModelBuilder& mb) {
    pb::Graph g;
    mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{32, 64}));
    mb.node(g, "Softmax", {"X"}, {"a"});
    mb.node(g, "Transpose", {"a"}, {"b"});
    mb.node(g, "Exp", {"b"}, {"c"});
    mb.node(g, "Softmax", {"c"}, {"d"});
    mb.node(g, "Transpose", {"d"}, {"e"});
    mb.node(g, "Add", {"e", "a"}, {"f"});
    mb.node(g, "Softmax", {"f"}, {"Y"});
    mb.output(g, "Y");
    return g;
  };
  ModelBuilder mb;
  Session planned = make_session(mb, model(mb), 17, true), plain = make_session(mb, model(mb), 17, false);
  const std::map<std::string, Datum> feeds{{"X", arange({32, 64})}};
  auto want = plain.run(feeds);
  planned.run(feeds);  // records
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto got = planned.run(feeds);
        if (got[0].second.tensor.bytes() != want[0].second.tensor.bytes()) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  auto info = planned.memory_plan(feeds);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->runs, 100u);
  EXPECT_EQ(info->served, 100 * info->buffers);
  EXPECT_EQ(info->fallbacks, 0u);
}

// Loop over y += x (x from the outer scope), between planned steps of the main graph.
TEST(MemoryPlan, GraphWithALoopGivesTheBitsOfUnplannedRuns) {
  auto model = [](ModelBuilder& mb) {
    pb::Graph g;
    mb.input(g, "M", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
    mb.input(g, "x0", mb.tensor_t(D::Float, std::vector<int64_t>{64}));
    mb.node(g, "Exp", {"x0"}, {"x"});
    mb.node(g, "Tanh", {"x"}, {"y0"});
    pb::Graph body;
    mb.input(body, "i", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
    mb.input(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
    mb.input(body, "y_in", mb.tensor_t(D::Float, std::vector<int64_t>{64}));
    mb.node(body, "Add", {"y_in", "x"}, {"t"});
    mb.node(body, "Sigmoid", {"t"}, {"y_out"});
    mb.output(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
    mb.output(body, "y_out", mb.tensor_t(D::Float, std::vector<int64_t>{64}));
    pb::Node& n = mb.node(g, "Loop", {"M", "", "y0"}, {"y"});
    mb.attr_graph(n, "body", std::move(body));
    mb.node(g, "Mul", {"y", "x"}, {"z"});
    mb.node(g, "Relu", {"z"}, {"Z"});
    mb.output(g, "Z");
    return g;
  };
  ModelBuilder mb;
  Session planned = make_session(mb, model(mb), 17, true), plain = make_session(mb, model(mb), 17, false);
  Tensor m = Tensor::allocate(D::Int64, {});
  m.mutable_data<int64_t>()[0] = 5;
  const std::map<std::string, Datum> feeds{{"M", Datum::of(m)}, {"x0", arange({64})}};
  auto want = plain.run(feeds);
  for (int run = 0; run < 3; ++run) expect_same_bits(planned.run(feeds), want);
  auto info = planned.memory_plan(feeds);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->fallbacks, 0u);
}

// Outputs that alias intermediates (Reshape views, Identity copies of a value read later) are never planned: the
// caller keeps them while later runs use the arena.
TEST(MemoryPlan, OutputsThatAliasIntermediatesSurviveLaterRuns) {
  auto model = [](ModelBuilder& mb) {
    pb::Graph g;
    mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{4, 16}));
    add_weight(mb, g, "shape", {}, 1);
    g.initializer.back().data_type = static_cast<int32_t>(D::Int64);
    g.initializer.back().dims = {2};
    g.initializer.back().float_data.clear();
    g.initializer.back().int64_data = {8, 8};
    mb.node(g, "Exp", {"X"}, {"e"});
    mb.node(g, "Softmax", {"e"}, {"s"});
    mb.node(g, "Reshape", {"s", "shape"}, {"R"});
    mb.node(g, "Identity", {"e"}, {"I"});
    mb.node(g, "Softmax", {"e"}, {"t"});
    mb.node(g, "Neg", {"t"}, {"N"});
    mb.output(g, "R");
    mb.output(g, "I");
    mb.output(g, "N");
    return g;
  };
  ModelBuilder mb;
  Session planned = make_session(mb, model(mb), 17, true), plain = make_session(mb, model(mb), 17, false);
  const std::map<std::string, Datum> feeds{{"X", arange({4, 16})}};
  auto want = plain.run(feeds);
  std::vector<std::vector<std::pair<std::string, Datum>>> kept;
  for (int run = 0; run < 4; ++run) kept.push_back(planned.run(feeds));
  for (const auto& k : kept) expect_same_bits(k, want);
  auto info = planned.memory_plan(feeds);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->fallbacks, 0u);
}

TEST(MemoryPlan, EachSignatureGetsItsOwnPlan) {
  auto model = [](ModelBuilder& mb) {
    pb::Graph g;
    pb::Type t = mb.tensor_t(D::Float, std::vector<int64_t>{0, 32});
    t.tensor_type->shape->dim[0].dim_value.reset();
    t.tensor_type->shape->dim[0].dim_param = mb.arena.save("N");
    mb.input(g, "X", t);
    mb.node(g, "Softmax", {"X"}, {"a"});
    mb.node(g, "Softmax", {"a"}, {"b"});
    mb.node(g, "Softmax", {"b"}, {"Y"});
    mb.output(g, "Y");
    return g;
  };
  ModelBuilder mb;
  Session s = make_session(mb, model(mb), 17, true);
  const std::map<std::string, Datum> small{{"X", arange({2, 32})}}, big{{"X", arange({64, 32})}};
  s.run(small);
  s.run(big);
  s.run(big);
  auto a = s.memory_plan(small), b = s.memory_plan(big);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->arena_bytes, 2u * 256) << "2 x 32 floats, one buffer each for a and b, at different places";
  EXPECT_EQ(b->arena_bytes, 2u * 64 * 32 * 4);
  EXPECT_EQ(a->runs, 0u);
  EXPECT_EQ(b->runs, 1u);
  EXPECT_FALSE(s.memory_plan({{"X", arange({3, 32})}})) << "a signature not run yet has no plan";
}

// A chain: each intermediate dies as the next is made, so two buffers' worth of memory serve them all.
TEST(MemoryPlan, ChainNeedsFarLessThanItsIntermediates) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{16, 64}));
  std::string prev = "X";
  for (int i = 0; i < 10; ++i) {
    const std::string out = i == 9 ? "Y" : "v" + std::to_string(i);
    mb.node(g, i % 2 ? "Softmax" : "Transpose", {prev}, {out});
    prev = out;
  }
  mb.output(g, "Y");
  Session s = make_session(mb, std::move(g), 17, true, 0);
  const std::map<std::string, Datum> feeds{{"X", arange({16, 64})}};
  s.run(feeds);
  auto info = s.memory_plan(feeds);
  ASSERT_TRUE(info);
  const uint64_t one = 16 * 64 * 4;
  EXPECT_EQ(info->buffers, 9u);
  EXPECT_EQ(info->buffer_bytes, 9 * one);
  EXPECT_EQ(info->arena_bytes, 2 * one);
}

// The planner on its own, as the executor drives it: two steps whose buffers the recording saw one after the
// other share one slot; a replay that keeps the first buffer alive gets the second from the heap.
TEST(MemoryPlan, BufferKeptLongerThanRecordedFallsBackToTheHeap) {
  exec::MemoryPlanner planner;
  const std::vector<int64_t> sig{1, 2, 3};
  exec::AllocationHookScope scope;
  {
    auto rec = planner.begin_run(sig);
    ASSERT_TRUE(rec);
    EXPECT_FALSE(planner.begin_run(sig)) << "one recording per signature at a time";
    rec->begin_step(0, true);
    { Tensor a = Tensor::allocate(D::Float, {1000}); }
    rec->begin_step(1, true);
    { Tensor b = Tensor::allocate(D::Float, {1000}); }
    set_allocation_hook(nullptr);
    rec->finish();
  }
  auto info = planner.info(sig);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->buffers, 2u);
  EXPECT_EQ(info->arena_bytes, 4032u) << "one 4000-byte slot, rounded to 64 bytes";
  {  // as recorded: b takes a's memory, zero-filled
    auto run = planner.begin_run(sig);
    ASSERT_TRUE(run);
    run->begin_step(0, true);
    const void* pa;
    {
      Tensor a = Tensor::allocate(D::Float, {1000});
      pa = a.bytes().data();
      a.mutable_data<float>()[7] = 5;
    }
    run->begin_step(1, true);
    Tensor b = Tensor::allocate(D::Float, {1000});
    set_allocation_hook(nullptr);
    EXPECT_EQ(static_cast<const void*>(b.bytes().data()), pa);
    EXPECT_EQ(b.data<float>()[7], 0.0f);
  }
  EXPECT_EQ(planner.info(sig)->served, 2u);
  {  // a kept past its recorded end: b must not get its memory
    auto run = planner.begin_run(sig);
    run->begin_step(0, true);
    Tensor a = Tensor::allocate(D::Float, {1000});
    std::vector<float> ones(1000, 1.0f);
    std::memcpy(a.mutable_data<float>(), ones.data(), 4000);
    run->begin_step(1, true);
    Tensor b = Tensor::allocate(D::Float, {1000});
    Tensor other_size = Tensor::allocate(D::Float, {999});  // not in the plan: heap
    set_allocation_hook(nullptr);
    EXPECT_NE(b.bytes().data(), a.bytes().data());
    std::memset(b.mutable_data<float>(), 0xff, 4000);
    EXPECT_EQ(values_of<float>(a), ones);
  }
  info = planner.info(sig);
  EXPECT_EQ(info->served, 3u);
  EXPECT_EQ(info->fallbacks, 1u);
  EXPECT_EQ(info->runs, 2u);
}

// A slot that starts inside a kept buffer's memory (not at its start) is refused too.
TEST(MemoryPlan, PartialOverlapWithAKeptBufferFallsBackToTheHeap) {
  exec::MemoryPlanner planner;
  const std::vector<int64_t> sig{7};
  exec::AllocationHookScope scope;
  auto record = [&](exec::RunMemory& run, std::optional<Tensor>& keep, bool keep_past_step_0) {
    run.begin_step(0, true);
    keep = Tensor::allocate(D::Float, {2000});  // 8000 bytes at offset 0
    const void* p0 = keep->bytes().data();
    if (!keep_past_step_0) keep.reset();
    run.begin_step(1, true);
    Tensor y1 = Tensor::allocate(D::Float, {1000});  // 4032 bytes (rounded): offset 0
    Tensor y2 = Tensor::allocate(D::Float, {1000});  // offset 4032, inside the 8000 bytes
    set_allocation_hook(nullptr);
    return std::vector<const void*>{p0, y1.bytes().data(), y2.bytes().data()};
  };
  {
    auto rec = planner.begin_run(sig);
    std::optional<Tensor> x;
    record(*rec, x, false);
    rec->finish();
  }
  ASSERT_TRUE(planner.info(sig));
  EXPECT_EQ(planner.info(sig)->arena_bytes, 8064u);
  auto run = planner.begin_run(sig);
  std::optional<Tensor> x;
  const auto p = record(*run, x, true);  // x still alive in step 1
  EXPECT_NE(p[1], p[0]);
  EXPECT_NE(p[2], static_cast<const char*>(p[0]) + 4032);
  EXPECT_EQ(planner.info(sig)->fallbacks, 2u);
  EXPECT_EQ(planner.info(sig)->served, 1u);
}

TEST(MemoryPlan, KeepsAtMostEightSignatures) {
  exec::MemoryPlanner planner;
  exec::AllocationHookScope scope;
  for (int64_t i = 0; i < 9; ++i) {
    auto rec = planner.begin_run({i});
    ASSERT_TRUE(rec);
    rec->begin_step(0, true);
    { Tensor a = Tensor::allocate(D::Float, {16}); }
    set_allocation_hook(nullptr);
    rec->finish();
    if (i == 1) planner.begin_run({0});  // used again: {1} becomes the least recently used
  }
  EXPECT_TRUE(planner.info({0}));
  EXPECT_FALSE(planner.info({1}));
  for (int64_t i = 2; i < 9; ++i) EXPECT_TRUE(planner.info({i})) << i;
}

TEST(MemoryPlan, AFailedRecordingLeavesNoPlan) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{4}));
  mb.input(g, "S", mb.tensor_t(D::Int64, std::vector<int64_t>{1}));
  mb.node(g, "Exp", {"X"}, {"e"});
  mb.node(g, "Reshape", {"e", "S"}, {"Y"});
  mb.output(g, "Y");
  Session s = make_session(mb, std::move(g), 17, true);
  Tensor bad = Tensor::allocate(D::Int64, {1}), good = Tensor::allocate(D::Int64, {1});
  bad.mutable_data<int64_t>()[0] = 5;
  good.mutable_data<int64_t>()[0] = 4;
  std::map<std::string, Datum> feeds{{"X", arange({4})}, {"S", Datum::of(bad)}};
  EXPECT_THROW(s.run(feeds), Error);
  EXPECT_FALSE(s.memory_plan(feeds));
  feeds["S"] = Datum::of(good);
  s.run(feeds);
  EXPECT_TRUE(s.memory_plan(feeds));
}

// ---- In place ----

TEST(InPlace, KernelsWriteIntoInputsThatDieWithThem) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{2, 8}));
  mb.input(g, "B", mb.tensor_t(D::Float, std::vector<int64_t>{8}));
  mb.node(g, "Exp", {"X"}, {"e"});    // X is the caller's: never written
  mb.node(g, "Relu", {"e"}, {"r"});   // in place into e
  mb.node(g, "Add", {"B", "r"}, {"a"});  // in place into r (input 1, the output's shape)
  mb.node(g, "Tanh", {"a"}, {"Y"});   // in place into a
  mb.output(g, "Y");
  Session s = make_session(mb, std::move(g), 17, false, 0);
  Datum x = arange({2, 8});
  Datum b = Datum::of(make_tensor<float>(D::Float, {8}, pseudo_random(8, 3)));
  const std::vector<float> x_before = values_of<float>(x.tensor), b_before = values_of<float>(b.tensor);
  const uint64_t before = ops::KernelContext::reuse_count();
  auto out = s.run({{"X", x}, {"B", b}});
  EXPECT_EQ(ops::KernelContext::reuse_count() - before, 3u);
  EXPECT_EQ(values_of<float>(x.tensor), x_before);
  EXPECT_EQ(values_of<float>(b.tensor), b_before);
  const std::vector<float> y = values_of<float>(out[0].second.tensor);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_NEAR(y[i], std::tanh(b_before[i % 8] + std::max(0.0f, std::exp(x_before[i]))), 1e-5);
}

// A projection shortcut: Conv(t) + Conv(X), which the channels-last pass fuses into one NhwcConv with the shortcut
// as Z; Z dies there, so the sum post-op runs in Z's buffer instead of a copy of it.
TEST(InPlace, ChannelsLastConvSumsIntoADyingResidual) {
  auto model = [](ModelBuilder& mb) {
    pb::Graph g;
    mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{1, 8, 10, 10}));
    for (int k = 1; k <= 3; ++k) {
      add_weight(mb, g, "W" + std::to_string(k), {8, 8, 3, 3}, 30u + static_cast<uint32_t>(k));
      add_weight(mb, g, "B" + std::to_string(k), {8}, 40u + static_cast<uint32_t>(k));
    }
    auto conv = [&](const std::string& in, int k, const std::string& out) {
      pb::Node& n = mb.node(g, "Conv", {in, "W" + std::to_string(k), "B" + std::to_string(k)}, {out});
      mb.attr_ints(n, "pads", {1, 1, 1, 1});
    };
    conv("X", 1, "shortcut");
    conv("X", 2, "c2");
    mb.node(g, "Relu", {"c2"}, {"t"});
    conv("t", 3, "c3");
    mb.node(g, "Add", {"c3", "shortcut"}, {"s"});
    mb.node(g, "Relu", {"s"}, {"Y"});
    mb.output(g, "Y");
    return g;
  };
  ModelBuilder mb;
  Session fused = make_session(mb, model(mb), 17, false, 3), plain = make_session(mb, model(mb), 17, false, 0);
  const std::map<std::string, Datum> feeds{{"X", arange({1, 8, 10, 10})}};
  size_t fused_ops = 0;
  for (const auto& n : fused.model().graph->nodes) fused_ops += n->op_type == "NhwcConv" && n->inputs.size() > 3;
  ASSERT_EQ(fused_ops, 1u) << "the optimizer no longer makes the shortcut Z of an NhwcConv";
  const uint64_t before = ops::KernelContext::reuse_count();
  auto got = fused.run(feeds);
  EXPECT_GE(ops::KernelContext::reuse_count() - before, 1u);
  auto want = plain.run(feeds);
  const std::vector<float> a = values_of<float>(got[0].second.tensor), b = values_of<float>(want[0].second.tensor);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4f * (1 + std::abs(b[i]))) << i;
}

TEST(InPlace, NotIntoValuesReadAgainOrReturned) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "X", mb.tensor_t(D::Float, std::vector<int64_t>{8}));
  mb.node(g, "Exp", {"X"}, {"e"});
  mb.node(g, "Add", {"e", "e"}, {"d"});  // e read twice by one node
  mb.node(g, "Relu", {"d"}, {"r"});      // d also an output
  mb.node(g, "Sigmoid", {"r"}, {"s"});   // r still read below
  mb.node(g, "Mul", {"s", "r"}, {"Y"});  // s dies here: the one reuse
  mb.output(g, "d");
  mb.output(g, "Y");
  Session s = make_session(mb, std::move(g), 17, false, 0);
  Datum x = arange({8});
  const uint64_t before = ops::KernelContext::reuse_count();
  auto out = s.run({{"X", x}});
  EXPECT_EQ(ops::KernelContext::reuse_count() - before, 1u);
  for (size_t i = 0; i < 8; ++i) {
    const float xi = x.tensor.data<float>()[i], d = std::exp(xi) + std::exp(xi);
    EXPECT_NEAR(out[0].second.tensor.data<float>()[i], d, 1e-5 * d);
    EXPECT_NEAR(out[1].second.tensor.data<float>()[i], d / (1 + std::exp(-d)), 1e-5 * d);
  }
}

}  // namespace
}  // namespace onyx
