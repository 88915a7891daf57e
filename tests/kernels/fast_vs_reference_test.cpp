// Every fast kernel against its op's reference kernel, on random shapes and values from a fixed seed: the same
// one-node model runs in a session with fast kernels and in one with reference kernels only.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/blocked_gemm.hpp"
#include "kernels/conv.hpp"
#include "kernels/onednn_log.hpp"
#include "kernels/reference_compare.hpp"
#include "ops/op_kit.hpp"
#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::OneNode;
using testing::onednn_log;
using testing::reference_only;
using testing::values;

Tensor random_floats(std::mt19937& rng, std::vector<int64_t> dims, float scale = 1.0f) {
  Tensor t = Tensor::allocate(DataType::Float, std::move(dims));
  std::uniform_real_distribution<float> u(-scale, scale);
  float* p = t.mutable_data<float>();
  for (uint64_t i = 0; i < t.element_count(); ++i) p[i] = u(rng);
  return t;
}

// Random values of [-1, 1] in float type `dt` (float32 ones rounded to it).
Tensor random_of(DataType dt, std::mt19937& rng, std::vector<int64_t> dims) {
  const Tensor f = random_floats(rng, std::move(dims));
  if (dt == DataType::Float) return f;
  Tensor t = Tensor::allocate(dt, f.dims());
  for (uint64_t i = 0; i < f.element_count(); ++i) {
    const float v = f.data<float>()[i];
    if (dt == DataType::Double) t.mutable_data<double>()[i] = v;
    else if (dt == DataType::Float16) t.mutable_data<Float16>()[i] = Float16(v);
    else if (dt == DataType::BFloat16) t.mutable_data<BFloat16>()[i] = BFloat16(v);
    else ADD_FAILURE() << "random_of: no values of " << dt;
  }
  return t;
}

// How far a fast kernel's result may be from the reference's, relative to the largest |reference|. float32: sums of
// up to a few thousand products, rounded at every step in the fast kernel, against the reference's in double.
// float16 and bfloat16: the fast kernels sum in float32 and round to the type once, the reference in double: the
// two roundings of nearly the same sum are at most one unit in the last place apart, 2^-10 (float16) or 2^-7
// (bfloat16) of the value. double: a few hundred products summed in double stay far within 1e-12.
double tolerance(DataType dt) {
  switch (dt) {
    case DataType::Float16: return 1.0 / 1024;
    case DataType::BFloat16: return 1.0 / 128;
    case DataType::Double: return 1e-12;
    default: return 1e-5;
  }
}

// Relative to the largest magnitude of the reference (sums of many products round differently): tolerance(type).
void expect_close(const Datum& fast, const Datum& ref, const std::string& what) {
  ASSERT_EQ(fast.tensor.dtype(), ref.tensor.dtype()) << what;
  ASSERT_EQ(fast.tensor.dims(), ref.tensor.dims()) << what;
  const std::vector<double> f = ops::read_doubles(fast.tensor), r = ops::read_doubles(ref.tensor);
  double scale = 1e-6;
  for (double v : r) scale = std::max(scale, std::fabs(v));
  const double rel = tolerance(ref.tensor.dtype());
  for (size_t i = 0; i < r.size(); ++i)
    ASSERT_LE(std::fabs(f[i] - r[i]), rel * scale) << what << ": element " << i << " of " << r.size();
}

// `primitive`: the oneDNN primitive kind the fast kernel must execute ("matmul", "convolution").
void compare(OneNode node, const std::string& what, const std::string& primitive) {
  OneNode ref = node;
  std::vector<Datum> fast_out, ref_out;
  const std::string fast_log = onednn_log([&] { fast_out = node.run(); });
  const std::string ref_log = onednn_log([&] { ref_out = ref.options(reference_only()).run(); });
  EXPECT_NE(fast_log.find("exec,cpu," + primitive), std::string::npos) << what << ": no oneDNN " << primitive << " ran";
  EXPECT_EQ(ref_log.find("exec,cpu,"), std::string::npos) << what << ": the reference run used oneDNN";
  ASSERT_EQ(fast_out.size(), ref_out.size());
  for (size_t i = 0; i < ref_out.size(); ++i) expect_close(fast_out[i], ref_out[i], what);
}

// Fast and reference agree, and the fast session ran no oneDNN primitive: its fast path is onyx's own code, or
// (where that is the point of the case) the fast kernel handed the input to the reference path.
void compare_without_onednn(OneNode node, const std::string& what) {
  OneNode ref = node;
  std::vector<Datum> fast_out, ref_out;
  const std::string fast_log = onednn_log([&] { fast_out = node.run(); });
  ref_out = ref.options(reference_only()).run();
  EXPECT_EQ(fast_log.find("exec,cpu,"), std::string::npos) << what << ": a oneDNN primitive ran";
  ASSERT_EQ(fast_out.size(), ref_out.size());
  for (size_t i = 0; i < ref_out.size(); ++i) expect_close(fast_out[i], ref_out[i], what);
}

// The fast session computes with the blocked GEMM and no oneDNN primitive, the reference session without the
// blocked GEMM, and they agree: the float types and shapes that oneDNN's paths leave to onyx's own loops. Both at
// optimization level 1: from level 2 on, float16 and bfloat16 ops run in float32 (opt/half_promotion.cpp).
void compare_on_blocked_gemm(OneNode node, const std::string& what) {
  SessionOptions fast_options, ref_options = reference_only();
  fast_options.optimization_level = ref_options.optimization_level = 1;
  OneNode ref = node;
  std::vector<Datum> fast_out, ref_out;
  const uint64_t before = kernels::blocked_gemm_calls();
  const std::string log = onednn_log([&] { fast_out = node.options(fast_options).run(); });
  const uint64_t after = kernels::blocked_gemm_calls();
  ref_out = ref.options(ref_options).run();
  EXPECT_GT(after, before) << what << ": the blocked GEMM did not run";
  EXPECT_EQ(kernels::blocked_gemm_calls(), after) << what << ": the reference ran the blocked GEMM";
  EXPECT_EQ(log.find("exec,cpu,"), std::string::npos) << what << ": a oneDNN primitive ran";
  ASSERT_EQ(fast_out.size(), ref_out.size());
  for (size_t i = 0; i < ref_out.size(); ++i) expect_close(fast_out[i], ref_out[i], what);
}

// A float convolution's fast kernel computes small ones with its own direct loops and the others on oneDNN
// (kernels::conv_runs_direct). ConvPaths runs a convolution node both ways (fast and reference), checks that the
// fast run took the path its shape calls for, and counts the paths taken, so that a test can require both.
struct ConvPaths {
  int direct = 0, onednn = 0;
  // C, group and kernel (kh, kw; 1-D: {1, k}) of the node's convolution; `nhwc`: the output is (N, OH, OW, M).
  void compare(OneNode node, const std::string& what, int64_t C, int64_t group, std::array<int64_t, 2> kernel,
               bool nhwc = false) {
    OneNode ref = node;
    std::vector<Datum> fast_out, ref_out;
    const uint64_t direct_before = kernels::direct_conv_runs();
    const std::string log = onednn_log([&] { fast_out = node.run(); });
    const bool ran_direct = kernels::direct_conv_runs() > direct_before;
    ref_out = ref.options(reference_only()).run();
    ASSERT_EQ(fast_out.size(), ref_out.size());
    const std::vector<int64_t>& d = ref_out[0].tensor.dims();
    ASSERT_TRUE(d.size() == 3 || d.size() == 4) << what;
    const int64_t M = d.size() == 3 || !nhwc ? d[1] : d[3];
    const int64_t OH = d.size() == 3 ? 1 : nhwc ? d[1] : d[2], OW = d.size() == 3 ? d[2] : nhwc ? d[2] : d[3];
    kernels::ConvShape s;
    s.C = C, s.M = M, s.group = group, s.kernel = kernel;
    // Unit strides and no padding on an input the kernel's extent minus one larger: the same output size.
    const bool direct = kernels::conv_runs_direct(s, d[0], OH + kernel[0] - 1, OW + kernel[1] - 1);
    if (direct) {
      ++this->direct;
      EXPECT_TRUE(ran_direct) << what << ": the direct loops did not run";
      EXPECT_EQ(log.find("exec,cpu,"), std::string::npos) << what << ": a oneDNN primitive ran\n" << log;
    } else {
      ++onednn;
      EXPECT_FALSE(ran_direct) << what << ": the direct loops ran";
      EXPECT_NE(log.find("exec,cpu,convolution"), std::string::npos) << what << ": no oneDNN convolution ran";
    }
    for (size_t i = 0; i < ref_out.size(); ++i) expect_close(fast_out[i], ref_out[i], what);
  }
  void expect_both(const char* test) const {
    EXPECT_GT(direct, 0) << test << ": no case took the direct loops";
    EXPECT_GT(onednn, 0) << test << ": no case took oneDNN";
  }
};

TEST(FastKernels, MatMulWithConstantBMatchesReference) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> dim(1, 70);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t M = dim(rng), K = dim(rng), N = dim(rng);
    std::vector<int64_t> a_dims = trial % 3 == 0 ? std::vector<int64_t>{2, M, K} : std::vector<int64_t>{M, K};
    OneNode n("MatMul", 13);
    n.input("A", random_floats(rng, a_dims)).constant_input("B", random_floats(rng, {K, N}));
    compare(n, "MatMul " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N), "matmul");
  }
}

TEST(FastKernels, BatchedMatMulMatchesReference) {
  std::mt19937 rng(8);
  std::uniform_int_distribution<int64_t> dim(1, 40);
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t M = dim(rng), K = dim(rng), N = dim(rng), B = trial % 4 + 1;
    std::vector<int64_t> a_dims{B, 3, M, K}, b_dims{trial % 2 ? 1 : B, 3, K, N};
    OneNode n("MatMul", 13);
    n.input("A", random_floats(rng, a_dims)).input("B", random_floats(rng, b_dims));
    compare(n, "batched MatMul trial " + std::to_string(trial), "matmul");
  }
}

TEST(FastKernels, GemmWithConstantBAndBiasMatchesReference) {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int64_t> dim(1, 60);
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t M = dim(rng), K = dim(rng), N = dim(rng);
    const bool tb = trial % 2 == 1;
    OneNode n("Gemm", 13);
    n.input("A", random_floats(rng, {M, K}))
        .constant_input("B", random_floats(rng, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}))
        .constant_input("C", random_floats(rng, trial % 4 < 2 ? std::vector<int64_t>{N} : std::vector<int64_t>{1, N}))
        .attr_int("transB", tb)
        .attr_float("alpha", trial % 3 == 0 ? 0.5f : 1.0f)
        .attr_float("beta", trial % 3 == 1 ? 2.0f : 1.0f);
    // A single row is a matrix-vector product streamed from B as given: no oneDNN primitive.
    if (M == 1) compare_without_onednn(n, "Gemm trial " + std::to_string(trial));
    else compare(n, "Gemm trial " + std::to_string(trial), "matmul");
  }
}

// LRN in float32 (beta 0.75 through square roots, other betas through pow), odd and even window sizes.
TEST(FastKernels, LrnMatchesReference) {
  std::mt19937 rng(26);
  struct Case {
    std::vector<int64_t> dims;
    int64_t size;
    float alpha, beta, bias;
  };
  const Case cases[] = {{{2, 16, 9, 7}, 5, 1e-4f, 0.75f, 1.0f},
                        {{1, 7, 13, 13}, 3, 0.5f, 0.6f, 2.0f},
                        {{3, 5, 4}, 4, 0.2f, 0.75f, 1.5f},
                        {{1, 96, 55, 55}, 5, 1e-4f, 0.75f, 1.0f}};
  for (const Case& c : cases) {
    OneNode n("LRN", 13);
    n.input("X", random_floats(rng, c.dims, 4.0f))
        .attr_int("size", c.size)
        .attr_float("alpha", c.alpha)
        .attr_float("beta", c.beta)
        .attr_float("bias", c.bias);
    compare_without_onednn(n, "LRN size " + std::to_string(c.size) + " beta " + std::to_string(c.beta));
  }
}

// One row against a constant B (the fully connected layers of CNNs): the matrix-vector path, both layouts of B,
// with bias and alpha, long enough to split over threads and with tails of every length.
TEST(FastKernels, MatrixVectorMatchesReference) {
  std::mt19937 rng(25);
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{1, 1}, {17, 5}, {300, 1001}, {1024, 513}, {4096, 70}};
  for (const auto& [K, N] : sizes) {
    for (bool tb : {false, true}) {
      OneNode g("Gemm", 13);
      g.input("A", random_floats(rng, {1, K}))
          .constant_input("B", random_floats(rng, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}))
          .constant_input("C", random_floats(rng, {N}))
          .attr_int("transB", tb)
          .attr_float("alpha", 0.75f);
      compare_without_onednn(g, "Gemm 1x" + std::to_string(K) + "x" + std::to_string(N) + (tb ? " transB" : ""));
    }
    OneNode m("MatMul", 13);
    m.input("A", random_floats(rng, {K})).constant_input("B", random_floats(rng, {K, N}));
    compare_without_onednn(m, "MatMul [" + std::to_string(K) + "] x " + std::to_string(K) + "x" + std::to_string(N));
  }
}

TEST(FastKernels, ConvMatchesReference) {
  std::mt19937 rng(10);
  struct Case {
    int64_t C, M, H, W, k, stride, dilation, group, pad;
    const char* auto_pad;
  };
  const Case cases[] = {
      {3, 8, 17, 15, 3, 1, 1, 1, 1, ""},  {16, 16, 9, 9, 3, 2, 1, 16, 1, ""}, {8, 12, 10, 7, 1, 1, 1, 1, 0, ""},
      {4, 6, 11, 11, 5, 2, 2, 2, 2, ""},  {6, 6, 8, 8, 3, 1, 1, 3, 0, "SAME_UPPER"},
      {5, 7, 12, 9, 3, 2, 1, 1, 0, "SAME_LOWER"}, {2, 4, 6, 6, 2, 3, 1, 1, 0, "VALID"},
  };
  ConvPaths paths;
  for (const Case& c : cases) {
    for (bool bias : {false, true}) {
      OneNode n("Conv", 11);
      n.input("X", random_floats(rng, {2, c.C, c.H, c.W}))
          .constant_input("W", random_floats(rng, {c.M, c.C / c.group, c.k, c.k}));
      if (bias) n.constant_input("B", random_floats(rng, {c.M}));
      n.attr_ints("strides", {c.stride, c.stride}).attr_ints("dilations", {c.dilation, c.dilation}).attr_int("group", c.group);
      if (*c.auto_pad) n.attr_string("auto_pad", c.auto_pad);
      else n.attr_ints("pads", {c.pad, c.pad, c.pad + (c.k > 1 ? 1 : 0), c.pad});
      paths.compare(n, "Conv C" + std::to_string(c.C) + " k" + std::to_string(c.k) + " g" + std::to_string(c.group) +
                           (bias ? " +B" : ""),
                    c.C, c.group, {c.k, c.k});
    }
  }
  paths.expect_both("Conv");
}

// 1-D convolutions run as 2-D ones over one row: a spectrogram's strided filter bank over a signal, a depthwise
// audio block, padding on either side and auto_pad.
TEST(FastKernels, Conv1dMatchesReference) {
  std::mt19937 rng(13);
  struct Case {
    int64_t C, M, L, k, stride, dilation, group, pad_begin, pad_end;
    const char* auto_pad;
  };
  const Case cases[] = {
      {1, 20, 1280, 64, 16, 1, 1, 0, 0, ""}, {8, 8, 50, 3, 1, 1, 8, 1, 1, ""}, {6, 9, 33, 5, 2, 2, 3, 3, 0, ""},
      {4, 5, 17, 4, 1, 1, 1, 0, 0, "SAME_UPPER"},
  };
  ConvPaths paths;
  for (const Case& c : cases) {
    for (bool bias : {false, true}) {
      OneNode n("Conv", 11);
      n.input("X", random_floats(rng, {2, c.C, c.L})).constant_input("W", random_floats(rng, {c.M, c.C / c.group, c.k}));
      if (bias) n.constant_input("B", random_floats(rng, {c.M}));
      n.attr_ints("strides", {c.stride}).attr_ints("dilations", {c.dilation}).attr_int("group", c.group);
      if (*c.auto_pad) n.attr_string("auto_pad", c.auto_pad);
      else n.attr_ints("pads", {c.pad_begin, c.pad_end});
      paths.compare(n, "Conv1d C" + std::to_string(c.C) + " L" + std::to_string(c.L) + " k" + std::to_string(c.k) +
                           " g" + std::to_string(c.group) + (bias ? " +B" : ""),
                    c.C, c.group, {1, c.k});
    }
  }
  paths.expect_both("Conv1d");
}

// ai.onyx FusedConv (NCHW, 1-D and 2-D: the convolutions channels-last does not take, and those in subgraphs) with
// its activation as oneDNN post-ops inside the convolution: the same results as the reference Conv then activation.
TEST(FastKernels, FusedConvActivationInsideMatchesReference) {
  std::mt19937 rng(17);
  struct Act {
    const char* name;
    std::vector<float> params;
  };
  const Act acts[] = {{"Relu", {}},    {"LeakyRelu", {0.1f}},         {"Clip", {-0.5f, 0.25f}}, {"Sigmoid", {}},
                      {"Tanh", {}},    {"HardSigmoid", {0.3f, 0.4f}}, {"HardSwish", {}},        {"Elu", {0.7f}},
                      {"Gelu", {}}};
  int trial = 0;
  for (const Act& act : acts)
    for (bool one_d : {true, false})
      for (bool large : {false, true}) {
        // Small ones run the direct loops, which apply the activation themselves; large ones oneDNN, as post-ops.
        const int64_t group = trial++ % 3 == 0 ? 4 : 1;
        OneNode n("FusedConv", 1, "ai.onyx");
        const int64_t size = large ? 40 : 7;
        const std::vector<int64_t> x = one_d ? std::vector<int64_t>{1, 8, size * size} : std::vector<int64_t>{1, 8, size, size};
        const std::vector<int64_t> w = one_d ? std::vector<int64_t>{12, 8 / group, 5} : std::vector<int64_t>{12, 8 / group, 3, 3};
        n.input("X", random_floats(rng, x)).constant_input("W", random_floats(rng, w)).constant_input("B", random_floats(rng, {12}));
        n.attr_int("group", group).attr_string("activation", act.name);
        if (!act.params.empty()) n.attr_floats("activation_params", act.params);
        if (one_d) n.attr_ints("pads", {2, 2});
        else n.attr_ints("pads", {1, 1, 1, 1});
        OneNode ref = n;
        std::vector<Datum> fast_out, ref_out;
        const std::string what = cat("FusedConv ", act.name, one_d ? " 1-D" : " 2-D", " group ", group, large ? " large" : "");
        const uint64_t direct_before = kernels::direct_conv_runs();
        const std::string log = onednn_log([&] { fast_out = n.run(); });
        ref_out = ref.options(reference_only()).run();
        if (large) {
          EXPECT_NE(log.find("attr-post-ops:eltwise"), std::string::npos) << what << ": the activation ran outside\n" << log;
        } else {
          EXPECT_GT(kernels::direct_conv_runs(), direct_before) << what << ": the direct loops did not run";
          EXPECT_EQ(log.find("exec,cpu,"), std::string::npos) << what << ": a oneDNN primitive ran\n" << log;
        }
        ASSERT_EQ(fast_out.size(), 1u);
        expect_close(fast_out[0], ref_out[0], what);
      }
}

// Y = op(X, W) where W is an initializer and also a graph input (as in IR 3 models): the fast kernel packs W, and a
// run that feeds another W must use the fed one.
// A float graph input `name` of the given dims (a negative dim: the symbolic one named by `symbols`' next entry).
void add_float_input(pb::Graph& g, const char* name, const std::vector<int64_t>& dims,
                     std::vector<const char*> symbols = {}) {
  pb::ValueInfo& vi = g.input.emplace_back();
  vi.name = name;
  auto& tt = vi.type.emplace().tensor_type.emplace();
  tt.elem_type = static_cast<int32_t>(DataType::Float);
  auto& shape = tt.shape.emplace();
  size_t next = 0;
  for (int64_t d : dims) {
    if (d >= 0) shape.dim.emplace_back().dim_value = d;
    else shape.dim.emplace_back().dim_param = symbols.at(next++);
  }
}

void add_float_initializer(pb::Graph& g, pb::Arena& arena, const char* name, const Tensor& t) {
  pb::Tensor& init = g.initializer.emplace_back();
  init.name = name;
  init.data_type = static_cast<int32_t>(DataType::Float);
  init.dims = t.dims();
  init.raw_data = arena.save(std::string(t.bytes()));
}

// The graph of a model of `ir_version` importing ai.onnx 13.
pb::Graph& opset13_graph(pb::Model& m, int64_t ir_version, const char* name) {
  m.ir_version = ir_version;
  m.opset_import.push_back({"", 13, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = name;
  return g;
}

void expect_fed_initializer_used(const std::string& op, const Tensor& x, const Tensor& w, const Tensor& fed_w) {
  pb::Arena arena;
  pb::Model m;
  pb::Graph& g = opset13_graph(m, 3, "fed_initializer");
  add_float_input(g, "X", x.dims());
  add_float_input(g, "W", w.dims());
  add_float_initializer(g, arena, "W", w);
  pb::Node& n = g.node.emplace_back();
  n.op_type = arena.save(op);
  n.input = {"X", "W"};
  n.output = {"Y"};
  g.output.emplace_back().name = "Y";
  const std::string bytes = pb::serialize_model(m);
  Session fast = Session::from_bytes(bytes);
  Session ref = Session::from_bytes(bytes, reference_only());
  expect_close(fast.run({{"X", Datum::of(x)}})[0].second, ref.run({{"X", Datum::of(x)}})[0].second, "initializer W");
  const std::map<std::string, Datum> feeds = {{"X", Datum::of(x)}, {"W", Datum::of(fed_w)}};
  const Datum fed = fast.run(feeds)[0].second;
  expect_close(fed, ref.run(feeds)[0].second, "fed W");
  // And the fed W really changed the result (the test would not notice a kernel ignoring the feed otherwise).
  EXPECT_NE(values<float>(fed), values<float>(fast.run({{"X", Datum::of(x)}})[0].second));
}

TEST(FastKernels, AFedInitializerReplacesThePackedOne) {
  std::mt19937 rng(11);
  const Tensor w = random_floats(rng, {8, 5});
  const Tensor fed_w = random_floats(rng, {8, 5});
  expect_fed_initializer_used("MatMul", random_floats(rng, {3, 8}), w, fed_w);
  // ConvTranspose's W (C, M, kh, kw) is packed into oneDNN's deconvolution layout.
  const Tensor cw = random_floats(rng, {4, 3, 3, 3});
  const Tensor fed_cw = random_floats(rng, {4, 3, 3, 3});
  expect_fed_initializer_used("ConvTranspose", random_floats(rng, {2, 4, 5, 6}), cw, fed_cw);
}


// One Conv session run on several input sizes (symbolic H and W; SAME_UPPER pads vary with them), back and
// forth: each size gets its own window and packed convolution, remembered between runs, and every run equals the
// reference kernel's.
TEST(FastKernels, ConvOnChangingInputSizesMatchesReference) {
  std::mt19937 rng(12);
  const Tensor w = random_floats(rng, {6, 4, 3, 3});
  for (const char* auto_pad : {"NOTSET", "SAME_UPPER"}) {
    pb::Arena arena;
    pb::Model m;
    pb::Graph& g = opset13_graph(m, 8, "conv_sizes");
    add_float_input(g, "X", {1, 4, -1, -1}, {"h", "w"});
    add_float_initializer(g, arena, "W", w);
    pb::Node& n = g.node.emplace_back();
    n.op_type = "Conv";
    n.input = {"X", "W"};
    n.output = {"Y"};
    pb::Attribute& a = n.attribute.emplace_back();
    a.name = "auto_pad";
    a.type = 3;  // STRING
    a.s = arena.save(auto_pad);
    g.output.emplace_back().name = "Y";
    const std::string bytes = pb::serialize_model(m);
    Session fast = Session::from_bytes(bytes);
    Session ref = Session::from_bytes(bytes, reference_only());
    // The small sizes run the direct loops, the large ones oneDNN: either is the fast path, not the reference.
    for (auto [h, wd] : {std::pair<int64_t, int64_t>{40, 36}, {7, 9}, {12, 5}, {40, 36}, {3, 3}, {12, 5}}) {
      const Tensor x = random_floats(rng, {1, 4, h, wd});
      Datum y;
      const uint64_t direct_before = kernels::direct_conv_runs();
      const std::string log = onednn_log([&] { y = fast.run({{"X", Datum::of(x)}})[0].second; });
      const std::string what = std::string(auto_pad) + " " + std::to_string(h) + "x" + std::to_string(wd);
      if (h * wd > 100) EXPECT_NE(log.find("exec,cpu,convolution"), std::string::npos) << what;
      else EXPECT_GT(kernels::direct_conv_runs(), direct_before) << what;
      expect_close(y, ref.run({{"X", Datum::of(x)}})[0].second, what);
    }
  }
}

// ai.onyx NhwcConv (channels-last Conv with residual input Z and activation) on oneDNN against its reference
// (transposes around the standard Conv, Add and activation kernels).
TEST(FastKernels, NhwcConvMatchesReference) {
  std::mt19937 rng(21);
  struct Case {
    int64_t C, M, H, W, k, stride, dilation, group, pad;
    const char* auto_pad;
  };
  const Case cases[] = {
      {3, 8, 17, 15, 3, 1, 1, 1, 1, ""}, {16, 16, 9, 9, 3, 2, 1, 16, 1, ""}, {8, 12, 10, 7, 1, 1, 1, 1, 0, ""},
      {4, 6, 11, 11, 5, 2, 2, 2, 2, ""}, {6, 6, 8, 8, 3, 1, 1, 3, 0, "SAME_UPPER"}, {5, 7, 12, 9, 3, 2, 1, 1, 0, "VALID"},
  };
  struct Act {
    const char* name;
    std::vector<float> params;
  };
  const Act acts[] = {{"", {}},           {"Relu", {}},     {"LeakyRelu", {0.1f}}, {"Clip", {-0.5f, 0.25f}},
                      {"Sigmoid", {}},    {"Tanh", {}},     {"HardSigmoid", {0.3f, 0.4f}},
                      {"HardSwish", {}},  {"Elu", {0.7f}}};
  int trial = 0;
  ConvPaths paths;
  for (const Case& c : cases) {
    for (int variant = 0; variant < 3; ++variant, ++trial) {
      const Act& act = acts[trial % std::size(acts)];
      const bool bias = variant != 1, residual = variant != 0;
      OneNode n("NhwcConv", 1, "ai.onyx");
      n.input("X", random_floats(rng, {2, c.H, c.W, c.C}))
          .constant_input("W", random_floats(rng, {c.M, c.C / c.group, c.k, c.k}));
      if (bias) n.constant_input("B", random_floats(rng, {c.M}));
      else if (residual) n.omitted_input();
      if (residual) {
        // Z has the output's shape: compute it as the model's inference would.
        const int64_t span = (c.k - 1) * c.dilation + 1;
        int64_t oh = 0, ow = 0;
        if (std::string(c.auto_pad) == "SAME_UPPER") {
          oh = (c.H + c.stride - 1) / c.stride, ow = (c.W + c.stride - 1) / c.stride;
        } else if (std::string(c.auto_pad) == "VALID") {
          oh = (c.H - span) / c.stride + 1, ow = (c.W - span) / c.stride + 1;
        } else {
          const int64_t extra = c.k > 1 ? 1 : 0;
          oh = (c.H + 2 * c.pad + extra - span) / c.stride + 1, ow = (c.W + 2 * c.pad - span) / c.stride + 1;
        }
        n.input("Z", random_floats(rng, {2, oh, ow, c.M}));
      }
      n.attr_ints("strides", {c.stride, c.stride}).attr_ints("dilations", {c.dilation, c.dilation}).attr_int("group", c.group);
      if (*c.auto_pad) n.attr_string("auto_pad", c.auto_pad);
      else n.attr_ints("pads", {c.pad, c.pad, c.pad + (c.k > 1 ? 1 : 0), c.pad});
      if (*act.name) {
        n.attr_string("activation", act.name);
        if (!act.params.empty()) n.attr_floats("activation_params", act.params);
      }
      paths.compare(n, "NhwcConv C" + std::to_string(c.C) + " k" + std::to_string(c.k) + " g" + std::to_string(c.group) +
                           (bias ? " +B" : "") + (residual ? " +Z" : "") + " " + act.name,
                    c.C, c.group, {c.k, c.k}, true);
    }
  }
  paths.expect_both("NhwcConv");
}

// 3x3 stride-1 convolutions with C >= 16, M >= 64 and 3136 (56x56) output pixels or more run oneDNN's Winograd
// (on CPUs with AVX-512) in its blocked layout, NCHW (Conv) and NHWC (NhwcConv, with residual sum and activation)
// tensors converted around it; other shapes, smaller outputs and output channel blocks that Winograd handles badly
// (11 blocks of 16) keep the direct kernel.
TEST(FastKernels, WinogradConvMatchesReference) {
  std::mt19937 rng(23);
  const bool avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  struct Case {
    int64_t C, M, H, W;
    bool winograd;
  };
  // Two images: 2 * H * W output pixels, Winograd from 3136.
  const Case cases[] = {{16, 64, 40, 40, true},  {48, 80, 41, 39, true},   {20, 96, 40, 40, true}, {8, 64, 40, 40, false},
                        {16, 176, 40, 40, false}, {32, 32, 40, 40, false}, {32, 64, 28, 28, false}};
  for (const Case& c : cases) {
    for (bool nhwc : {false, true}) {
      OneNode n(nhwc ? "NhwcConv" : "Conv", nhwc ? 1 : 11, nhwc ? "ai.onyx" : "");
      n.input("X", random_floats(rng, nhwc ? std::vector<int64_t>{2, c.H, c.W, c.C} : std::vector<int64_t>{2, c.C, c.H, c.W}))
          .constant_input("W", random_floats(rng, {c.M, c.C, 3, 3}))
          .constant_input("B", random_floats(rng, {c.M}));
      if (nhwc) n.input("Z", random_floats(rng, {2, c.H, c.W, c.M})).attr_string("activation", "Relu");
      n.attr_ints("pads", {1, 1, 1, 1});
      const std::string what = std::string(nhwc ? "NhwcConv" : "Conv") + " C" + std::to_string(c.C) + " M" + std::to_string(c.M);
      OneNode ref = n;
      std::vector<Datum> fast_out, ref_out;
      const std::string log = onednn_log([&] { fast_out = n.run(); });
      ref_out = ref.options(reference_only()).run();
      EXPECT_NE(log.find("exec,cpu,convolution"), std::string::npos) << what;
      EXPECT_EQ(log.find("wino") != std::string::npos, c.winograd && avx512) << what << "\n" << log;
      expect_close(fast_out[0], ref_out[0], what);
    }
  }
}

TEST(FastKernels, NhwcConvFallsBackForWhatItDidNotPack) {
  std::mt19937 rng(22);
  // W fed at run time (not a constant): Conv's blocked GEMM computes, between the transposes.
  OneNode n("NhwcConv", 1, "ai.onyx");
  n.input("X", random_floats(rng, {1, 6, 5, 4})).input("W", random_floats(rng, {3, 4, 3, 3}));
  n.attr_ints("pads", {1, 1, 1, 1}).attr_string("activation", "Relu");
  compare_on_blocked_gemm(n, "NhwcConv with a fed W");
}

// ai.onyx FusedMatMul (MatMul + bias + residual Z + activation) on oneDNN with the epilogue as post-ops, against
// its reference (the standard MatMul, Add and activation kernels); one-row products included, which take the
// primitive (not the plain matrix x vector kernel) when there is an epilogue.
TEST(FastKernels, FusedMatMulMatchesReference) {
  std::mt19937 rng(24);
  std::uniform_int_distribution<int64_t> dim(2, 40);
  struct Act {
    const char* name;
    std::vector<float> params;
  };
  const Act acts[] = {{"", {}}, {"Gelu", {}}, {"Relu", {}}, {"Clip", {-0.5f, 0.25f}}, {"Tanh", {}}, {"LeakyRelu", {0.1f}}};
  for (int trial = 0; trial < 18; ++trial) {
    const int64_t M = trial % 6 == 1 || trial % 6 == 5 ? 1 : dim(rng), K = dim(rng), N = dim(rng);
    const bool bias = trial % 3 != 1, residual = trial % 3 != 0;
    const Act& act = acts[trial % std::size(acts)];
    const std::vector<int64_t> a_dims = trial % 2 ? std::vector<int64_t>{2, M, K} : std::vector<int64_t>{M, K};
    std::vector<int64_t> y_dims = a_dims;
    y_dims.back() = N;
    OneNode n("FusedMatMul", 1, "ai.onyx");
    n.input("A", random_floats(rng, a_dims)).constant_input("B", random_floats(rng, {K, N}));
    if (bias) n.constant_input("Bias", random_floats(rng, {N}));
    else if (residual) n.omitted_input();
    if (residual) n.input("Z", random_floats(rng, y_dims));
    if (*act.name) {
      n.attr_string("activation", act.name);
      if (!act.params.empty()) n.attr_floats("activation_params", act.params);
    }
    const std::string what = "FusedMatMul M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) +
                             (bias ? " +B" : "") + (residual ? " +Z" : "") + " " + act.name;
    compare(n, what, "matmul");
  }
}

TEST(FastKernels, FusedMatMulFallsBackForWhatItDidNotPack) {
  std::mt19937 rng(25);
  // B fed at run time, and a bias that is not [N]: the blocked GEMM, then the sums and the activation.
  OneNode fed("FusedMatMul", 1, "ai.onyx");
  fed.input("A", random_floats(rng, {3, 5})).input("B", random_floats(rng, {5, 4})).constant_input("Bias", random_floats(rng, {4}));
  fed.attr_string("activation", "Relu");
  compare_on_blocked_gemm(fed, "FusedMatMul with a fed B");
  OneNode wide("FusedMatMul", 1, "ai.onyx");
  wide.input("A", random_floats(rng, {3, 5})).constant_input("B", random_floats(rng, {5, 4}));
  wide.constant_input("Bias", random_floats(rng, {3, 4}));
  compare_on_blocked_gemm(wide, "FusedMatMul with a [M, N] bias");
  // float16: no oneDNN kernel at all.
  OneNode half("FusedMatMul", 1, "ai.onyx");
  half.input("A", random_of(DataType::Float16, rng, {2, 3, 7})).constant_input("B", random_of(DataType::Float16, rng, {7, 6}));
  half.constant_input("Bias", random_of(DataType::Float16, rng, {6})).attr_string("activation", "Tanh");
  compare_on_blocked_gemm(half, "float16 FusedMatMul");
}

TEST(FastKernels, NhwcPoolsMatchReference) {
  std::mt19937 rng(23);
  struct Case {
    const char* op;
    int64_t k, stride, pad, dilation;
    bool ceil, include_pad;
  };
  const Case cases[] = {
      {"MaxPool", 3, 2, 1, 1, false, false},     {"MaxPool", 2, 2, 0, 1, true, false},
      {"MaxPool", 3, 1, 1, 2, false, false},     {"AveragePool", 3, 2, 1, 1, false, false},
      {"AveragePool", 3, 2, 1, 1, false, true},  {"AveragePool", 2, 2, 0, 1, true, false},
      {"AveragePool", 5, 1, 2, 1, false, true},
  };
  for (const Case& c : cases) {
    OneNode n(std::string("Nhwc") + c.op, 1, "ai.onyx");
    n.input("X", random_floats(rng, {2, 11, 10, 5}));
    n.attr_ints("kernel_shape", {c.k, c.k}).attr_ints("strides", {c.stride, c.stride}).attr_ints("pads", {c.pad, c.pad, c.pad, c.pad});
    if (c.dilation > 1) n.attr_ints("dilations", {c.dilation, c.dilation});
    if (c.ceil) n.attr_int("ceil_mode", 1);
    if (c.include_pad) n.attr_int("count_include_pad", 1);
    compare(n, std::string(c.op) + " k" + std::to_string(c.k) + (c.ceil ? " ceil" : "") + (c.include_pad ? " incl" : ""),
            "pooling");
  }
  // ceil_mode adding positions past the end pads with count_include_pad: ONNX never counts them, oneDNN would.
  OneNode n("NhwcAveragePool", 1, "ai.onyx");
  n.input("X", random_floats(rng, {1, 10, 10, 3}));
  n.attr_ints("kernel_shape", {3, 3}).attr_ints("strides", {2, 2}).attr_int("ceil_mode", 1).attr_int("count_include_pad", 1);
  compare_without_onednn(n, "AveragePool ceil_mode + count_include_pad");
}

// Transposes that are batched 2-D transposes take a tiled path (or, for few rows of 4-byte elements, a vector
// interleave, or for three rows a column-by-column copy); any permutation must give the reference's bytes.
TEST(FastKernels, TransposeMatchesReference) {
  std::mt19937 rng(24);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 3, 37, 41}, {0, 2, 3, 1}}, {{2, 37, 41, 3}, {0, 3, 1, 2}}, {{65, 70}, {1, 0}},
      {{3, 1, 40, 50}, {0, 3, 2, 1}}, {{4, 33, 35}, {0, 2, 1}},       {{2, 3, 4, 50, 60}, {0, 1, 3, 4, 2}},
      {{5, 6, 7, 8}, {3, 1, 2, 0}},   {{1, 4, 29, 7, 9}, {0, 2, 1, 3, 4}}, {{6, 40, 5}, {1, 0, 2}},
      {{2, 3, 5, 7, 11}, {1, 0, 2, 3, 4}},
      // Few rows (2, 4, 8, 16) per matrix, as NHWC channel shuffles: whole 16-column blocks and a tail.
      {{1, 7, 9, 4, 37}, {0, 1, 2, 4, 3}}, {{3, 2, 50}, {0, 2, 1}}, {{5, 8, 16}, {0, 2, 1}}, {{2, 16, 33}, {0, 2, 1}},
      {{2, 5, 6, 3, 40}, {0, 1, 2, 4, 3}},
      // Three rows: RGB planes into pixels.
      {{1, 3, 224, 224}, {0, 2, 3, 1}}, {{3, 3, 5, 7}, {0, 2, 3, 1}},
      // 16 x 16 register blocks over several 64 x 64 tiles and ragged edges (NCHW <-> NHWC of feature maps).
      {{1, 70, 30, 31}, {0, 2, 3, 1}}, {{2, 29, 17, 130}, {0, 3, 1, 2}},
  };
  for (const auto& [dims, perm] : cases) {
    for (DataType dt : {DataType::Float, DataType::UInt8, DataType::Int16, DataType::Double}) {
      Tensor x = Tensor::allocate(dt, dims);
      char* p = x.mutable_data<char>();
      for (size_t i = 0; i < x.bytes().size(); ++i) p[i] = static_cast<char>(rng());
      OneNode n("Transpose", 13);
      n.input("X", x).attr_ints("perm", perm);
      OneNode ref = n;
      const Datum fast = n.run()[0], slow = ref.options(reference_only()).run()[0];
      ASSERT_EQ(fast.tensor.dims(), slow.tensor.dims());
      EXPECT_EQ(fast.tensor.bytes(), slow.tensor.bytes()) << "perm of rank " << perm.size() << ", " << dt;
    }
  }
}

// Concat of whole-byte elements copies one block per input and outer index (in parallel when large); any axis,
// element size and input count must give the reference's bytes.
TEST(FastKernels, ConcatMatchesReference) {
  std::mt19937 rng(28);
  struct Case {
    std::vector<std::vector<int64_t>> dims;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{{1, 55, 55, 64}, {1, 55, 55, 64}}, -1},           // NHWC channels, large: the parallel path
      {{{2, 5, 7, 3}, {2, 5, 7, 1}, {2, 5, 7, 6}}, 3},     // short blocks of three sizes
      {{{1, 32, 9, 9}, {1, 16, 9, 9}}, 1},                 // NCHW channels: one outer index
      {{{4, 3}, {0, 3}, {2, 3}}, 0},                       // an empty input
      {{{3, 1, 2}, {3, 4, 2}}, -2},
  };
  for (const Case& c : cases) {
    for (DataType dt : {DataType::Float, DataType::UInt8, DataType::Int16, DataType::Double}) {
      OneNode n("Concat", 13);
      for (size_t i = 0; i < c.dims.size(); ++i) {
        Tensor x = Tensor::allocate(dt, c.dims[i]);
        char* p = x.mutable_data<char>();
        for (size_t b = 0; b < x.bytes().size(); ++b) p[b] = static_cast<char>(rng());
        n.input("X" + std::to_string(i), x);
      }
      n.attr_int("axis", c.axis);
      OneNode ref = n;
      const Datum fast = n.run()[0], slow = ref.options(reference_only()).run()[0];
      ASSERT_EQ(fast.tensor.dims(), slow.tensor.dims());
      EXPECT_EQ(fast.tensor.bytes(), slow.tensor.bytes()) << "axis " << c.axis << ", " << dt;
    }
  }
}

// Split of whole-byte elements copies one block per output and outer index, as Concat.
TEST(FastKernels, SplitMatchesReference) {
  std::mt19937 rng(29);
  struct Case {
    std::vector<int64_t> dims, sizes;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{1, 16, 96}, {32, 32, 32}, 2},  // a fused QKV projection into Q, K and V
      {{2, 7, 5}, {1, 0, 6}, 1},       // an empty part
      {{5, 3}, {4, 1}, 0},
  };
  for (const Case& c : cases) {
    for (DataType dt : {DataType::Float, DataType::UInt8, DataType::Int16, DataType::Double}) {
      Tensor x = Tensor::allocate(dt, c.dims);
      char* p = x.mutable_data<char>();
      for (size_t b = 0; b < x.bytes().size(); ++b) p[b] = static_cast<char>(rng());
      OneNode n("Split", 13);
      n.input("X", x).constant_input("split", testing::make_tensor(DataType::Int64, {static_cast<int64_t>(c.sizes.size())}, c.sizes));
      n.attr_int("axis", c.axis).outputs(static_cast<int>(c.sizes.size()));
      OneNode ref = n;
      const std::vector<Datum> fast = n.run(), slow = ref.options(reference_only()).run();
      ASSERT_EQ(fast.size(), slow.size());
      for (size_t i = 0; i < slow.size(); ++i) {
        ASSERT_EQ(fast[i].tensor.dims(), slow[i].tensor.dims());
        EXPECT_EQ(fast[i].tensor.bytes(), slow[i].tensor.bytes()) << "output " << i << ", " << dt;
      }
    }
  }
}

// NCHW MaxPool (onyx's loop) and AveragePool (oneDNN) against the reference; with Indices requested, or ceil_mode
// padding counted by count_include_pad, the reference computes.
TEST(FastKernels, PoolsMatchReference) {
  std::mt19937 rng(27);
  struct Case {
    const char* op;
    int64_t k, stride, pad;
    bool ceil, include_pad;
    const char* auto_pad;
  };
  // MaxPool k3 s2 on width 12 leaves the last column in no window (no end padding at all).
  const Case cases[] = {{"MaxPool", 3, 2, 0, true, false, ""},       {"MaxPool", 3, 1, 1, false, false, ""},
                        {"MaxPool", 3, 2, 0, false, false, ""},      {"AveragePool", 3, 2, 0, false, true, ""},
                        {"MaxPool", 2, 2, 0, false, false, "SAME_UPPER"}, {"AveragePool", 3, 2, 1, false, true, ""},
                        {"AveragePool", 5, 3, 0, true, false, ""},   {"AveragePool", 2, 1, 0, false, false, "SAME_LOWER"}};
  for (const Case& c : cases) {
    OneNode n(c.op, 19);
    n.input("X", random_floats(rng, {2, 6, 13, 12}));
    n.attr_ints("kernel_shape", {c.k, c.k}).attr_ints("strides", {c.stride, c.stride});
    if (*c.auto_pad) n.attr_string("auto_pad", c.auto_pad);
    else n.attr_ints("pads", {c.pad, c.pad, c.pad, c.pad});
    if (c.ceil) n.attr_int("ceil_mode", 1);
    if (c.include_pad) n.attr_int("count_include_pad", 1);
    const std::string what = std::string(c.op) + " k" + std::to_string(c.k) + " s" + std::to_string(c.stride);
    if (std::string(c.op) == "MaxPool") compare_without_onednn(n, what);  // onyx's own NCHW max pool
    else compare(n, what, "pooling");
  }
  // The max pool's loop: dilations, windows entirely in the padding (the lowest float), NaN among the values.
  OneNode dilated("MaxPool", 12);
  dilated.input("X", random_floats(rng, {1, 2, 11, 9})).attr_ints("kernel_shape", {3, 2}).attr_ints("dilations", {2, 3});
  dilated.attr_ints("strides", {1, 2}).attr_ints("pads", {2, 1, 1, 2});
  compare_without_onednn(dilated, "MaxPool dilated");
  std::vector<float> values(2 * 5 * 5, 0.25f);
  values[7] = NAN;
  values[30] = NAN;
  values[31] = 3.0f;
  OneNode padded("MaxPool", 12);
  padded.input("X", testing::f32({1, 2, 5, 5}, values)).attr_ints("kernel_shape", {2, 2}).attr_ints("pads", {3, 3, 3, 3});
  padded.attr_ints("strides", {2, 2});
  {
    OneNode ref = padded;
    const std::vector<Datum> fast = padded.run(), want = ref.options(reference_only()).run();
    const Tensor& f = fast[0].tensor;
    const Tensor& r = want[0].tensor;
    ASSERT_EQ(f.dims(), r.dims());
    for (uint64_t i = 0; i < r.element_count(); ++i) {
      const float a = f.data<float>()[i], b = r.data<float>()[i];
      EXPECT_TRUE(std::isnan(b) ? std::isnan(a) : a == b) << "MaxPool all-padding windows and NaN, element " << i;
    }
  }
  OneNode with_indices("MaxPool", 12);
  with_indices.input("X", random_floats(rng, {1, 3, 8, 8})).attr_ints("kernel_shape", {2, 2}).outputs(2);
  compare_without_onednn(with_indices, "MaxPool with Indices");
  OneNode counted("AveragePool", 19);
  counted.input("X", random_floats(rng, {1, 3, 10, 10}));
  counted.attr_ints("kernel_shape", {3, 3}).attr_ints("strides", {2, 2}).attr_int("ceil_mode", 1).attr_int("count_include_pad", 1);
  compare_without_onednn(counted, "AveragePool ceil_mode + count_include_pad");
}

// ConvTranspose on oneDNN's deconvolution against the reference (GEMM + col2im): 1-D to 3-D, groups, strides,
// dilations, uneven pads, auto_pad, output_padding and output_shape; each case with and without B, and with W
// constant (packed at creation) or fed at run time (reordered at each run; B then fed too). Random spatial sizes.
// A ConvTranspose whose windows tile the output (kernel = stride: a decoder's upsampling) runs as one matrix
// product per image and a scatter: 1-D to 3-D, one or several output channels, with and without bias.
TEST(FastKernels, NonOverlappingConvTransposeMatchesReference) {
  std::mt19937 rng(29);
  struct Case {
    std::vector<int64_t> x, k;
    int64_t M;
  };
  const Case cases[] = {{{1, 24, 6, 7}, {2, 2}, 1}, {{2, 5, 4, 3}, {2, 2}, 3}, {{1, 4, 9}, {3}, 2},
                        {{1, 3, 2, 3, 4}, {2, 2, 2}, 2}, {{1, 6, 3, 5}, {3, 2}, 4}};
  for (const Case& c : cases)
    for (bool bias : {false, true}) {
      std::vector<int64_t> w_dims{c.x[1], c.M};
      w_dims.insert(w_dims.end(), c.k.begin(), c.k.end());
      OneNode n("ConvTranspose", 11);
      n.input("X", random_floats(rng, c.x)).constant_input("W", random_floats(rng, w_dims));
      if (bias) n.constant_input("B", random_floats(rng, {c.M}));
      n.attr_ints("strides", c.k);
      compare(n, "ConvTranspose kernel = stride, M" + std::to_string(c.M) + " rank " + std::to_string(c.k.size()) +
                     (bias ? " +B" : ""),
              "matmul");
    }
}

TEST(FastKernels, ConvTransposeMatchesReference) {
  std::mt19937 rng(28);
  struct Case {
    int rank;
    int64_t C, M, group, k, stride, dilation;
    std::vector<int64_t> pads, output_padding, output_shape;  // pads: begins then ends; empty: attribute absent
    const char* auto_pad;
  };
  const Case cases[] = {
      {2, 3, 5, 1, 3, 1, 1, {}, {}, {}, ""},
      {2, 8, 6, 2, 3, 2, 1, {1, 0, 2, 1}, {}, {}, ""},
      {2, 6, 9, 3, 4, 2, 1, {1, 1, 1, 1}, {1, 1}, {}, ""},
      {2, 4, 4, 4, 3, 2, 1, {1, 1, 1, 1}, {1, 0}, {}, ""},
      {2, 5, 3, 1, 3, 3, 2, {0, 2, 1, 0}, {2, 1}, {}, ""},
      {2, 4, 6, 2, 3, 2, 1, {}, {}, {}, "SAME_UPPER"},
      {2, 4, 3, 1, 4, 3, 1, {}, {}, {}, "SAME_LOWER"},
      {2, 3, 4, 1, 3, 2, 1, {}, {}, {}, "VALID"},
      {2, 6, 4, 2, 3, 2, 2, {}, {}, {0, 0}, ""},  // output_shape filled in from the input size below
      {1, 5, 7, 1, 5, 2, 1, {2, 1}, {1}, {}, ""},
      {1, 6, 6, 3, 3, 3, 2, {}, {}, {}, "SAME_UPPER"},
      {3, 4, 3, 1, 3, 2, 1, {1, 0, 1, 1, 1, 0}, {1, 0, 1}, {}, ""},
      {3, 4, 4, 2, 2, 1, 2, {}, {}, {0, 0, 0}, ""},
  };
  std::uniform_int_distribution<int64_t> size(2, 9);
  int trial = 0;
  for (const Case& c : cases) {
    for (int variant = 0; variant < 4; ++variant, ++trial) {
      const bool bias = variant % 2 == 1, fed_w = variant >= 2;
      std::vector<int64_t> x_dims{2, c.C}, w_dims{c.C, c.M / c.group};
      for (int i = 0; i < c.rank; ++i) {
        x_dims.push_back(size(rng));
        w_dims.push_back(c.k);
      }
      OneNode n("ConvTranspose", 11);
      n.input("X", random_floats(rng, x_dims));
      if (fed_w) n.input("W", random_floats(rng, w_dims));
      else n.constant_input("W", random_floats(rng, w_dims));
      if (bias && fed_w) n.input("B", random_floats(rng, {c.M}));
      else if (bias) n.constant_input("B", random_floats(rng, {c.M}));
      n.attr_ints("strides", std::vector<int64_t>(c.rank, c.stride))
          .attr_ints("dilations", std::vector<int64_t>(c.rank, c.dilation))
          .attr_int("group", c.group);
      if (!c.pads.empty()) n.attr_ints("pads", c.pads);
      if (!c.output_padding.empty()) n.attr_ints("output_padding", c.output_padding);
      if (!c.output_shape.empty()) {
        // Between the smallest output the pads can give and the full one: pads split the difference.
        std::vector<int64_t> out;
        for (int i = 0; i < c.rank; ++i) {
          const int64_t full = c.stride * (x_dims[2 + i] - 1) + (c.k - 1) * c.dilation + 1;
          out.push_back(full - (trial + i) % 3);
        }
        n.attr_ints("output_shape", out);
      }
      if (*c.auto_pad) n.attr_string("auto_pad", c.auto_pad);
      compare(n, "ConvTranspose " + std::to_string(c.rank) + "-D C" + std::to_string(c.C) + " M" + std::to_string(c.M) +
                     " g" + std::to_string(c.group) + " k" + std::to_string(c.k) + " s" + std::to_string(c.stride) +
                     " d" + std::to_string(c.dilation) + " " + c.auto_pad + (bias ? " +B" : "") +
                     (fed_w ? " fed W" : ""),
              "deconvolution");
    }
  }
}

// What oneDNN's deconvolution does not express runs the blocked GEMM: an output_shape larger than the full output
// (negative leading pads).
TEST(FastKernels, ConvTransposeFallsBackToTheBlockedGemm) {
  std::mt19937 rng(29);
  OneNode wide("ConvTranspose", 11);
  wide.input("X", random_floats(rng, {1, 2, 3, 4})).constant_input("W", random_floats(rng, {2, 3, 3, 3}));
  wide.attr_ints("strides", {2, 2}).attr_ints("output_shape", {10, 11});
  compare_on_blocked_gemm(wide, "ConvTranspose with output_shape past the full output");
}

// The float types oneDNN's paths do not take run the blocked GEMM in normal sessions: double, and float16 and
// bfloat16 where the optimizer does not promote them to float32.
const DataType kOtherFloats[] = {DataType::Float16, DataType::BFloat16, DataType::Double};

std::string dims_str(const std::vector<int64_t>& dims) { return ops::shape_of(dims).to_string(); }

TEST(FastKernels, OtherFloatTypesMatMulOnTheBlockedGemm) {
  std::mt19937 rng(30);
  struct Case {
    std::vector<int64_t> a, b;
    bool constant_b;
  };
  // 2-D; broadcast batch dims; 1-D A; 1-D B; sizes off the 4x8 tile.
  const Case cases[] = {{{13, 21}, {21, 9}, true},
                        {{2, 1, 5, 7}, {3, 7, 11}, false},
                        {{19}, {2, 19, 6}, false},
                        {{3, 6, 33}, {33}, true}};
  for (DataType dt : kOtherFloats)
    for (const Case& c : cases) {
      OneNode n("MatMul", 13);
      n.input("A", random_of(dt, rng, c.a));
      if (c.constant_b) n.constant_input("B", random_of(dt, rng, c.b));
      else n.input("B", random_of(dt, rng, c.b));
      compare_on_blocked_gemm(n, cat(dt, " MatMul ", dims_str(c.a), " x ", dims_str(c.b)));
    }
  // float32 beyond oneDNN's batched matmul (rank 7).
  OneNode deep("MatMul", 13);
  deep.input("A", random_floats(rng, {1, 2, 1, 1, 1, 3, 5, 4})).input("B", random_floats(rng, {2, 1, 1, 1, 1, 1, 4, 6}));
  compare_on_blocked_gemm(deep, "float MatMul of rank 8");
}

TEST(FastKernels, OtherFloatTypesGemmOnTheBlockedGemm) {
  std::mt19937 rng(31);
  const int64_t M = 9, K = 13, N = 10;
  // C: none, [N], [M, 1], [M, N], a scalar.
  const std::vector<std::optional<std::vector<int64_t>>> c_shapes = {
      std::nullopt, std::vector<int64_t>{N}, std::vector<int64_t>{M, 1}, std::vector<int64_t>{M, N}, std::vector<int64_t>{}};
  size_t trial = 0;
  for (DataType dt : kOtherFloats)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const auto& cs = c_shapes[trial++ % c_shapes.size()];
        OneNode n("Gemm", 13);
        n.input("A", random_of(dt, rng, ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}))
            .constant_input("B", random_of(dt, rng, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}));
        if (cs) n.input("C", random_of(dt, rng, *cs));
        n.attr_int("transA", ta).attr_int("transB", tb).attr_float("alpha", 0.75f).attr_float("beta", 1.5f);
        compare_on_blocked_gemm(n, cat(dt, " Gemm transA ", ta, " transB ", tb, " C ", cs ? dims_str(*cs) : "none"));
      }
  // float32 with transA, and with a fed B (both layouts): not the packed product.
  for (bool tb : {false, true}) {
    OneNode t("Gemm", 13);
    t.input("A", random_floats(rng, {K, M})).constant_input("B", random_floats(rng, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}));
    t.attr_int("transA", 1).attr_int("transB", tb);
    compare_on_blocked_gemm(t, cat("float Gemm transA transB ", tb));
    OneNode fed("Gemm", 13);
    fed.input("A", random_floats(rng, {M, K})).input("B", random_floats(rng, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}));
    fed.input("C", random_floats(rng, {N})).attr_int("transB", tb);
    compare_on_blocked_gemm(fed, cat("float Gemm with a fed B, transB ", tb));
  }
}

// Conv-22 in the other float types: 1-D to 3-D, groups (depthwise among them), strides, dilations, uneven pads,
// auto_pad, pointwise (1x1, which skips im2col), with and without B.
struct ConvCase {
  std::vector<int64_t> x;  // N, C, spatial...
  int64_t M, k, stride, dilation, group;
  std::vector<int64_t> pads;  // empty: auto_pad
  const char* auto_pad;
};
const ConvCase kConvCases[] = {
    {{2, 4, 23}, 6, 3, 2, 2, 2, {2, 1}, ""},
    {{1, 3, 9, 8}, 5, 3, 1, 1, 1, {1, 0, 2, 1}, ""},
    {{2, 6, 7, 9}, 6, 3, 2, 1, 6, {}, "SAME_UPPER"},
    {{1, 8, 6, 5}, 12, 1, 1, 1, 2, {0, 0, 0, 0}, ""},
    {{1, 2, 5, 4, 6}, 3, 2, 1, 2, 1, {}, "SAME_LOWER"},
};

OneNode conv_node(const char* op, DataType dt, const ConvCase& c, bool bias, std::mt19937& rng) {
  const size_t r = c.x.size() - 2;
  const bool transpose = std::string(op) == "ConvTranspose";
  std::vector<int64_t> w{transpose ? c.x[1] : c.M, transpose ? c.M / c.group : c.x[1] / c.group};
  w.insert(w.end(), r, c.k);
  OneNode n(op, 22);
  n.input("X", random_of(dt, rng, c.x)).constant_input("W", random_of(dt, rng, w));
  if (bias) n.input("B", random_of(dt, rng, {c.M}));
  n.attr_ints("strides", std::vector<int64_t>(r, c.stride))
      .attr_ints("dilations", std::vector<int64_t>(r, c.dilation))
      .attr_int("group", c.group);
  if (*c.auto_pad) n.attr_string("auto_pad", c.auto_pad);
  else n.attr_ints("pads", c.pads);
  return n;
}

TEST(FastKernels, OtherFloatTypesConvOnTheBlockedGemm) {
  std::mt19937 rng(32);
  for (DataType dt : kOtherFloats)
    for (const ConvCase& c : kConvCases)
      for (bool bias : {false, true})
        compare_on_blocked_gemm(conv_node("Conv", dt, c, bias, rng),
                                cat(dt, " Conv ", dims_str(c.x), " k", c.k, " g", c.group, bias ? " +B" : ""));
  // float32 where oneDNN's Conv does not apply: 3-D, and a fed W.
  compare_on_blocked_gemm(conv_node("Conv", DataType::Float, kConvCases[4], true, rng), "float 3-D Conv");
  OneNode fed("Conv", 22);
  fed.input("X", random_floats(rng, {1, 4, 6, 7})).input("W", random_floats(rng, {5, 4, 3, 3})).attr_ints("pads", {1, 1, 1, 1});
  compare_on_blocked_gemm(fed, "float Conv with a fed W");
  // FusedConv in float16: Conv's own kernel, then the activation.
  OneNode fused("FusedConv", 1, "ai.onyx");
  fused.input("X", random_of(DataType::Float16, rng, {1, 4, 6, 7})).constant_input("W", random_of(DataType::Float16, rng, {5, 4, 3, 3}));
  fused.attr_string("activation", "Relu");
  compare_on_blocked_gemm(fused, "float16 FusedConv");
}

TEST(FastKernels, OtherFloatTypesConvTransposeOnTheBlockedGemm) {
  std::mt19937 rng(33);
  for (DataType dt : kOtherFloats)
    for (const ConvCase& c : kConvCases)
      for (bool bias : {false, true}) {
        OneNode n = conv_node("ConvTranspose", dt, c, bias, rng);
        if (c.x.size() == 4 && c.stride > 1) n.attr_ints("output_padding", {1, 0});
        compare_on_blocked_gemm(n, cat(dt, " ConvTranspose ", dims_str(c.x), " k", c.k, " g", c.group,
                                       bias ? " +B" : ""));
      }
}

}  // namespace
}  // namespace onyx

namespace onyx {
namespace ONYX_TEST_FILE {

// Attention-23 in float32 on the matrix-product kernels (oneDNN matmuls for Q.K^T and the weighted sum of V)
// against the reference (double): no mask, a key-padding mask [B, 1, 1, Skv] with a fully masked row's worth of
// -inf for one batch, a [Sq, Skv] mask, and an explicit scale.
TEST(FastKernels, AttentionMatchesReference) {
  std::mt19937 rng(41);
  const int64_t B = 2, H = 3, Sq = 5, Skv = 7, Dh = 8, Dv = 6;
  for (int form = 0; form < 4; ++form) {
    OneNode node("Attention", 23);
    node.input("Q", random_floats(rng, {B, H, Sq, Dh}))
        .input("K", random_floats(rng, {B, H, Skv, Dh}))
        .input("V", random_floats(rng, {B, H, Skv, Dv}));
    if (form == 1) {
      Tensor m = random_floats(rng, {B, 1, 1, Skv});
      float* p = m.mutable_data<float>();
      for (int64_t j = 0; j < Skv; ++j) p[Skv + j] = -std::numeric_limits<float>::infinity();  // batch 1: all masked
      p[2] = -std::numeric_limits<float>::infinity();
      node.input("attn_mask", m);
    } else if (form == 2) {
      node.input("attn_mask", random_floats(rng, {Sq, Skv}, 3.0f));
    } else if (form == 3) {
      node.attr_float("scale", 0.25f);
    }
    compare(node, "Attention form " + std::to_string(form), "matmul");
  }
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
