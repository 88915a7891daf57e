// The fast LSTM and GRU kernels against the reference kernel: one-node models with random shapes and values from fixed
// seeds, run in a session with fast kernels and in one with reference kernels only. Cases the fast kernel cannot
// take (varying sequence_lens, other activations, clip, fed weights) must fall back to the reference and still
// match; oneDNN's verbose log shows which path ran.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <oneapi/dnnl/dnnl.hpp>

#include "format/onnx_proto.hpp"
#include "kernels/onednn_log.hpp"
#include "onyx/session.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::onednn_log;

// The oneDNN primitive the fast kernels execute (the input products).
constexpr const char* kFastPrimitive = "exec,cpu,matmul";

Tensor random_floats(std::mt19937& rng, std::vector<int64_t> dims, float scale) {
  Tensor t = Tensor::allocate(DataType::Float, std::move(dims));
  std::uniform_real_distribution<float> u(-scale, scale);
  float* p = t.mutable_data<float>();
  for (uint64_t i = 0; i < t.element_count(); ++i) p[i] = u(rng);
  return t;
}

struct LstmCase {
  std::string op = "LSTM";                // or "GRU" (then no initial_c, P, Y_c)
  bool linear_before_reset = false;       // GRU
  std::string direction = "forward";
  int64_t seq = 5, batch = 1, input = 4, hidden = 3;
  int64_t layout = 0;
  int opset = 14;
  bool bias = true, h0 = false, c0 = false, peepholes = false;
  bool want_y = true, want_yh = true, want_yc = true;
  std::vector<int32_t> lens;              // sequence_lens when not empty
  std::vector<std::string> activations;   // attribute when not empty
  float clip = 0;                         // attribute when > 0
  bool feed_weights = false;              // W, R, B are graph inputs fed at run time, not initializers
  bool overridable_w = false;             // W is an initializer and also a graph input (a run may feed another)
  bool expect_fast = true;
  float x_special = 0;                    // when not 0: X's element 1 (NaN, infinities, large values)

  std::string name() const {
    std::string s = op + " " + direction + " seq" + std::to_string(seq) + " batch" + std::to_string(batch) + " in" +
                    std::to_string(input) + " hidden" + std::to_string(hidden) + " layout" + std::to_string(layout);
    if (linear_before_reset) s += " linear_before_reset";
    if (bias) s += " +B";
    if (h0) s += " +h0";
    if (c0) s += " +c0";
    if (peepholes) s += " +P";
    s += std::string(" outputs ") + (want_y ? "Y" : "-") + (want_yh ? "Yh" : "-") + (want_yc ? "Yc" : "-");
    if (!lens.empty()) s += " +lens";
    if (!activations.empty()) s += " +activations";
    if (clip > 0) s += " +clip";
    if (feed_weights) s += " fed weights";
    return s;
  }
};

struct Built {
  std::string bytes;
  std::map<std::string, Datum> feeds;
};

Built build(const LstmCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const bool lstm = c.op == "LSTM";
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1, H = c.hidden, G = lstm ? 4 : 3;
  const float k = 1.0f / std::sqrt(static_cast<float>(H));
  const std::vector<int64_t> state = c.layout == 0 ? std::vector<int64_t>{dirs, c.batch, H}
                                                   : std::vector<int64_t>{c.batch, dirs, H};
  struct In {
    std::string name;
    Tensor value;
    bool constant;
  };
  std::vector<In> ins;
  ins.push_back({"X", random_floats(rng, c.layout == 0 ? std::vector<int64_t>{c.seq, c.batch, c.input}
                                                       : std::vector<int64_t>{c.batch, c.seq, c.input}, 1.0f),
                 false});
  if (c.x_special != 0) ins.back().value.mutable_data<float>()[1] = c.x_special;
  ins.push_back({"W", random_floats(rng, {dirs, G * H, c.input}, k), !c.feed_weights});
  ins.push_back({"R", random_floats(rng, {dirs, G * H, H}, k), !c.feed_weights});
  ins.push_back({c.bias ? "B" : "", c.bias ? random_floats(rng, {dirs, 2 * G * H}, k) : Tensor{}, !c.feed_weights});
  if (!c.lens.empty()) {
    Tensor lens = Tensor::allocate(DataType::Int32, {c.batch});
    std::copy(c.lens.begin(), c.lens.end(), lens.mutable_data<int32_t>());
    ins.push_back({"sequence_lens", lens, false});
  } else {
    ins.push_back({"", Tensor{}, false});
  }
  ins.push_back({c.h0 ? "initial_h" : "", c.h0 ? random_floats(rng, state, 1.0f) : Tensor{}, false});
  if (lstm) {
    ins.push_back({c.c0 ? "initial_c" : "", c.c0 ? random_floats(rng, state, 1.0f) : Tensor{}, false});
    ins.push_back({c.peepholes ? "P" : "", c.peepholes ? random_floats(rng, {dirs, 3 * H}, k) : Tensor{}, true});
  }
  while (!ins.empty() && ins.back().name.empty()) ins.pop_back();

  pb::Arena arena;
  pb::Model m;
  m.ir_version = 8;
  m.opset_import.push_back({"", c.opset, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "rnn";
  pb::Node& n = g.node.emplace_back();
  n.op_type = arena.save(c.op);
  Built out;
  for (const In& in : ins) {
    n.input.push_back(arena.save(in.name));
    if (in.name.empty()) continue;
    const bool overridable = c.overridable_w && in.name == "W";
    if (in.constant) {
      pb::Tensor& init = g.initializer.emplace_back();
      init.name = arena.save(in.name);
      init.data_type = static_cast<int32_t>(in.value.dtype());
      init.dims = in.value.dims();
      init.raw_data = arena.save(std::string(in.value.bytes()));
      if (!overridable) continue;
    }
    pb::ValueInfo& vi = g.input.emplace_back();
    vi.name = arena.save(in.name);
    auto& tt = vi.type.emplace().tensor_type.emplace();
    tt.elem_type = static_cast<int32_t>(in.value.dtype());
    auto& shape = tt.shape.emplace();
    for (int64_t d : in.value.dims()) shape.dim.emplace_back().dim_value = d;
    if (!overridable) out.feeds[in.name] = Datum::of(in.value);
  }
  const std::pair<const char*, bool> outs[] = {{"Y", c.want_y}, {"Y_h", c.want_yh}, {"Y_c", lstm && c.want_yc}};
  int last = -1;
  for (int i = 0; i < 3; ++i)
    if (outs[i].second) last = i;
  for (int i = 0; i <= last; ++i) {
    n.output.push_back(arena.save(outs[i].second ? outs[i].first : ""));
    if (outs[i].second) g.output.emplace_back().name = arena.save(outs[i].first);
  }
  const auto attr = [&](const char* name, pb::AttrType t) -> pb::Attribute& {
    pb::Attribute& a = n.attribute.emplace_back();
    a.name = arena.save(name);
    a.type = static_cast<int32_t>(t);
    return a;
  };
  attr("hidden_size", pb::AttrType::Int).i = H;
  attr("direction", pb::AttrType::String).s = arena.save(c.direction);
  if (c.layout != 0) attr("layout", pb::AttrType::Int).i = c.layout;
  if (c.linear_before_reset) attr("linear_before_reset", pb::AttrType::Int).i = 1;
  if (c.clip > 0) attr("clip", pb::AttrType::Float).f = c.clip;
  if (!c.activations.empty()) {
    pb::Attribute& a = attr("activations", pb::AttrType::Strings);
    for (const std::string& s : c.activations) a.strings.push_back(arena.save(s));
  }
  out.bytes = pb::serialize_model(m);
  return out;
}


void expect_close(const Datum& fast, const Datum& ref, const std::string& what) {
  ASSERT_EQ(fast.tensor.dims(), ref.tensor.dims()) << what;
  const float* f = fast.tensor.data<float>();
  const float* r = ref.tensor.data<float>();
  const uint64_t n = ref.tensor.element_count();
  for (uint64_t i = 0; i < n; ++i) {
    if (std::isnan(r[i])) ASSERT_TRUE(std::isnan(f[i])) << what << ": element " << i << " is " << f[i] << ", not NaN";
    else ASSERT_NEAR(f[i], r[i], 2e-5f) << what << ": element " << i << " of " << n;
  }
}

void compare(const LstmCase& c, uint32_t seed) {
  const std::string what = c.name();
  SCOPED_TRACE(what);
  Built b = build(c, seed);
  SessionOptions ref_opts;
  ref_opts.reference_kernels = true;
  std::vector<std::pair<std::string, Datum>> fast_out, ref_out;
  // Sessions are made outside the logs: the fast kernel may prepare its primitives at creation.
  Session fast = Session::from_bytes(b.bytes), ref = Session::from_bytes(b.bytes, ref_opts);
  const std::string fast_log = onednn_log([&] { fast_out = fast.run(b.feeds); });
  const std::string ref_log = onednn_log([&] { ref_out = ref.run(b.feeds); });
  // One time step of one sequence projects its input as a matrix-vector product, which is onyx's own code: the
  // log cannot show the fast path there.
  if (c.expect_fast && c.seq * c.batch > 1) {
    EXPECT_NE(fast_log.find(kFastPrimitive), std::string::npos) << "the fast LSTM did not run";
  } else if (!c.expect_fast) {
    EXPECT_EQ(fast_log.find("exec,cpu,"), std::string::npos) << "expected the reference, but oneDNN ran";
  }
  EXPECT_EQ(ref_log.find("exec,cpu,"), std::string::npos) << "the reference run used oneDNN";
  ASSERT_EQ(fast_out.size(), ref_out.size());
  ASSERT_EQ(fast_out.size(), static_cast<size_t>(c.want_y + c.want_yh + (c.op == "LSTM" && c.want_yc)));
  for (size_t i = 0; i < ref_out.size(); ++i) {
    EXPECT_EQ(fast_out[i].first, ref_out[i].first);
    expect_close(fast_out[i].second, ref_out[i].second, what + " output " + ref_out[i].first);
  }
}

TEST(FastLstm, RandomShapesMatchReference) {
  std::mt19937 rng(21);
  std::uniform_int_distribution<int64_t> small(1, 9);
  const char* directions[] = {"forward", "reverse", "bidirectional"};
  uint32_t seed = 100;
  for (int trial = 0; trial < 36; ++trial) {
    LstmCase c;
    c.direction = directions[trial % 3];
    c.seq = trial % 7 == 0 ? 1 : small(rng);
    c.batch = trial % 4 == 0 ? 1 : small(rng);
    c.input = small(rng) * 3;
    c.hidden = small(rng) * (trial % 5 == 0 ? 9 : 2);
    c.layout = trial % 6 == 5 ? 1 : 0;
    c.opset = trial % 6 == 5 ? 14 : (trial % 2 ? 7 : 22);
    c.bias = trial % 8 != 1;
    c.h0 = (trial / 3) % 2 == 0;
    c.c0 = (trial / 2) % 3 != 0;
    c.peepholes = trial % 4 == 3;
    c.want_y = trial % 9 != 4;
    c.want_yh = trial % 5 != 2;
    c.want_yc = trial % 3 != 1 || !(c.want_y || c.want_yh);
    compare(c, seed++);
  }
}

TEST(FastLstm, SequenceLensEqualToTheSequenceTakesTheFastPath) {
  LstmCase c;
  c.direction = "bidirectional";
  c.batch = 3;
  c.seq = 4;
  c.lens = {4, 4, 4};
  compare(c, 7);
}

TEST(FastLstm, LayoutOneBidirectionalWithStates) {
  LstmCase c;
  c.direction = "bidirectional";
  c.layout = 1;
  c.batch = 3;
  c.seq = 6;
  c.h0 = c.c0 = c.peepholes = true;
  compare(c, 8);
}

TEST(FastLstm, BenchmarkShapeMatchesReference) {
  LstmCase c;
  c.seq = 16;
  c.input = 64;
  c.hidden = 128;
  compare(c, 9);
}

TEST(FastLstm, UnsupportedConfigurationsFallBackToTheReference) {
  LstmCase lens;
  lens.batch = 3;
  lens.lens = {5, 2, 0};
  lens.expect_fast = false;
  compare(lens, 11);

  LstmCase acts;
  acts.direction = "bidirectional";
  acts.activations = {"Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Tanh", "Relu"};
  acts.expect_fast = false;
  compare(acts, 12);

  LstmCase clip;
  clip.clip = 0.5f;
  clip.expect_fast = false;
  compare(clip, 13);

  LstmCase fed;
  fed.feed_weights = true;
  fed.expect_fast = false;
  compare(fed, 14);
}

TEST(FastGru, RandomShapesMatchReference) {
  std::mt19937 rng(22);
  std::uniform_int_distribution<int64_t> small(1, 9);
  const char* directions[] = {"forward", "reverse", "bidirectional"};
  uint32_t seed = 200;
  for (int trial = 0; trial < 24; ++trial) {
    LstmCase c;
    c.op = "GRU";
    c.linear_before_reset = trial % 2 == 1;
    c.direction = directions[trial % 3];
    c.seq = trial % 7 == 0 ? 1 : small(rng);
    c.batch = trial % 4 == 0 ? 1 : small(rng);
    c.input = small(rng) * 3;
    c.hidden = small(rng) * (trial % 5 == 0 ? 9 : 2);
    c.layout = trial % 6 == 5 ? 1 : 0;
    c.opset = trial % 6 == 5 ? 14 : (trial % 4 < 2 ? 7 : 22);
    c.bias = trial % 8 != 1;
    c.h0 = (trial / 3) % 2 == 0;
    c.want_y = trial % 9 != 4;
    c.want_yh = trial % 5 != 2 || !c.want_y;
    compare(c, seed++);
  }
}

TEST(FastGru, BenchmarkSizedMatchesReference) {
  for (bool lbr : {false, true}) {
    LstmCase c;
    c.op = "GRU";
    c.linear_before_reset = lbr;
    c.seq = 12;
    c.input = 64;
    c.hidden = 160;  // 3H = 480: the last column panel is partial
    c.h0 = true;
    compare(c, lbr ? 41 : 40);
  }
}

TEST(FastGru, UnsupportedConfigurationsFallBackToTheReference) {
  LstmCase lens;
  lens.op = "GRU";
  lens.batch = 2;
  lens.lens = {5, 3};
  lens.expect_fast = false;
  compare(lens, 42);

  LstmCase acts;
  acts.op = "GRU";
  acts.activations = {"HardSigmoid", "Tanh"};
  acts.expect_fast = false;
  compare(acts, 43);
}

// NaN propagates as in the reference; infinities and large inputs saturate the gates.
TEST(FastLstm, SpecialValuesMatchReference) {
  uint32_t seed = 30;
  for (float v : {std::nanf(""), INFINITY, -INFINITY, 1e30f, -500.0f}) {
    LstmCase c;
    c.direction = "bidirectional";
    c.batch = 2;
    c.x_special = v;
    compare(c, seed++);
  }
}

// W is an initializer that is also a graph input: runs that do not feed it take the fast path with the packed W;
// a run that feeds another W must compute with the fed one.
TEST(FastLstm, AFedInitializerReplacesThePackedWeights) {
  LstmCase c;
  c.overridable_w = true;
  c.batch = 2;
  compare(c, 50);
  Built b = build(c, 50);
  std::mt19937 rng(51);
  std::map<std::string, Datum> feeds = b.feeds;
  feeds["W"] = Datum::of(random_floats(rng, {1, 4 * c.hidden, c.input}, 0.5f));
  SessionOptions ref_opts;
  ref_opts.reference_kernels = true;
  Session fast = Session::from_bytes(b.bytes), ref = Session::from_bytes(b.bytes, ref_opts);
  std::vector<std::pair<std::string, Datum>> fast_out, ref_out;
  const std::string log = onednn_log([&] { fast_out = fast.run(feeds); });
  EXPECT_EQ(log.find("exec,cpu,"), std::string::npos) << "a fed W must not take the packed one's fast path";
  ref_out = ref.run(feeds);
  ASSERT_EQ(fast_out.size(), ref_out.size());
  for (size_t i = 0; i < ref_out.size(); ++i) expect_close(fast_out[i].second, ref_out[i].second, "fed W");
  // And the fed W really changes the result: the case is not degenerate.
  const std::vector<std::pair<std::string, Datum>> packed_out = fast.run(b.feeds);
  const float* a = fast_out[0].second.tensor.data<float>();
  const float* p = packed_out[0].second.tensor.data<float>();
  bool differs = false;
  for (uint64_t i = 0; i < fast_out[0].second.tensor.element_count(); ++i) differs = differs || a[i] != p[i];
  EXPECT_TRUE(differs);
}

// Default activations spelled out (any case) are still the fast path.
TEST(FastLstm, ExplicitDefaultActivationsTakeTheFastPath) {
  LstmCase c;
  c.direction = "reverse";
  c.activations = {"sigmoid", "TANH", "Tanh"};
  compare(c, 15);
}

}  // namespace
}  // namespace onyx
