#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::f32;

using testing::make_tensor;
using testing::OneNode;

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count()); }

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(RNN, ForwardOneUnit_Opset7) {
  // X [seq 2, batch 1, input 1], W = R = 0.5, B = [0.1, 0.2].
  auto out = OneNode("RNN", 7)
                 .input("X", f32({2, 1, 1}, {1, 2}))
                 .input("W", f32({1, 1, 1}, {0.5f}))
                 .input("R", f32({1, 1, 1}, {0.5f}))
                 .input("B", f32({1, 2}, {0.1f, 0.2f}))
                 .attr_int("hidden_size", 1)
                 .outputs(2)
                 .run();
  const double h1 = std::tanh(0.5 + 0.3);
  const double h2 = std::tanh(1.0 + 0.5 * h1 + 0.3);
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_NEAR(values(y)[0], h1, 1e-6);
  EXPECT_NEAR(values(y)[1], h2, 1e-6);
  EXPECT_EQ(out.at(1).tensor.dims(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_NEAR(values(out.at(1).tensor)[0], h2, 1e-6);
}

TEST(RNN, LayoutOneIsBatchFirst_Opset14) {
  // Batch-first X [batch 1, seq 2, input 1]: Y is [batch, seq, dirs, hidden]; bidirectional gives 2 directions.
  auto out = OneNode("RNN", 14)
                 .input("X", f32({1, 2, 1}, {1, 2}))
                 .input("W", f32({2, 1, 1}, {0.5f, 0.5f}))
                 .input("R", f32({2, 1, 1}, {0.5f, 0.5f}))
                 .attr_int("hidden_size", 1)
                 .attr_int("layout", 1)
                 .attr_string("direction", "bidirectional")
                 .outputs(2)
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 2, 1}));
  const double f1 = std::tanh(0.5), f2 = std::tanh(1.0 + 0.5 * f1);
  const double r2 = std::tanh(1.0), r1 = std::tanh(0.5 + 0.5 * r2);  // reverse: step at t=1 first
  std::vector<float> v = values(y);
  EXPECT_NEAR(v[0], f1, 1e-6);  // t=0 forward
  EXPECT_NEAR(v[1], r1, 1e-6);  // t=0 reverse
  EXPECT_NEAR(v[2], f2, 1e-6);
  EXPECT_NEAR(v[3], r2, 1e-6);
  const Tensor& yh = out.at(1).tensor;
  ASSERT_EQ(yh.dims(), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_NEAR(values(yh)[0], f2, 1e-6);
  EXPECT_NEAR(values(yh)[1], r1, 1e-6);
}

TEST(RNN, SequenceLensZeroPadAndKeepLastState_Opset22) {
  auto out = OneNode("RNN", 22)
                 .input("X", f32({2, 2, 1}, {1, 1, 2, 2}))
                 .input("W", f32({1, 1, 1}, {0.5f}))
                 .input("R", f32({1, 1, 1}, {0.5f}))
                 .omitted_input()
                 .input("L", make_tensor<int32_t>(DataType::Int32, {2}, {2, 1}))
                 .attr_int("hidden_size", 1)
                 .outputs(2)
                 .run();
  std::vector<float> y = values(out.at(0).tensor);  // [seq, dir, batch, hidden]
  const double h1 = std::tanh(0.5);
  EXPECT_NEAR(y[0], h1, 1e-6);
  EXPECT_NEAR(y[1], h1, 1e-6);
  EXPECT_NEAR(y[2], std::tanh(1.0 + 0.5 * h1), 1e-6);
  EXPECT_EQ(y[3], 0.0f);  // past batch 1's length
  EXPECT_NEAR(values(out.at(1).tensor)[1], h1, 1e-6);
}

TEST(RNN, DirectionMismatchIsAnError_Opset7) {
  try {
    OneNode("RNN", 7)
        .input("X", f32({1, 1, 1}, {1}))
        .input("W", f32({1, 1, 1}, {1}))
        .input("R", f32({1, 1, 1}, {1}))
        .attr_string("direction", "bidirectional")
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("directions"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OneNode("RNN", 7)
                   .input("X", f32({1, 1, 1}, {1}))
                   .input("W", f32({1, 1, 1}, {1}))
                   .input("R", f32({1, 1, 1}, {1}))
                   .input("B", f32({1, 2}, {0, 0}))
                   .input("L", make_tensor<int32_t>(DataType::Int32, {1}, {5}))
                   .run(),
               Error);
}

// GRU with one unit: W = [z, r, h] weights, R likewise.
OneNode gru(int opset, int lbr) {
  OneNode n("GRU", opset);
  n.input("X", f32({1, 1, 1}, {1}))
      .input("W", f32({1, 3, 1}, {0.2f, 0.3f, 0.4f}))
      .input("R", f32({1, 3, 1}, {0.5f, 0.6f, 0.7f}))
      .input("B", f32({1, 6}, {0, 0, 0, 0, 0, 0.1f}))
      .omitted_input()
      .input("H0", f32({1, 1, 1}, {1}))
      .attr_int("hidden_size", 1)
      .outputs(2);
  if (opset >= 3) n.attr_int("linear_before_reset", lbr);
  return n;
}

TEST(GRU, LinearBeforeResetChangesWhereTheResetApplies_Opset3And14) {
  const double z = sig(0.2 + 0.5), r = sig(0.3 + 0.6);
  const double h_before = std::tanh(0.4 + r * 1.0 * 0.7 + 0.1);  // (r*H)Rh + Rbh
  const double h_after = std::tanh(0.4 + r * (0.7 + 0.1));        // r*(H Rh + Rbh)
  auto a = gru(14, 0).run();
  EXPECT_NEAR(values(a.at(1).tensor)[0], (1 - z) * h_before + z * 1.0, 1e-6);
  auto b = gru(3, 1).run();
  EXPECT_NEAR(values(b.at(1).tensor)[0], (1 - z) * h_after + z * 1.0, 1e-6);
  auto c = gru(1, 0).run();  // GRU-1 has no linear_before_reset
  EXPECT_NEAR(values(c.at(1).tensor)[0], (1 - z) * h_before + z * 1.0, 1e-6);
}

TEST(LSTM, PeepholesAndCellOutput_Opset22) {
  // One unit; W = [i, o, f, c] = 0.1..0.4, R = 0; peepholes P = [i, o, f] = 0.5, 0.6, 0.7; C0 = 1.
  auto out = OneNode("LSTM", 22)
                 .input("X", f32({1, 1, 1}, {1}))
                 .input("W", f32({1, 4, 1}, {0.1f, 0.2f, 0.3f, 0.4f}))
                 .input("R", f32({1, 4, 1}, {0, 0, 0, 0}))
                 .omitted_input()
                 .omitted_input()
                 .omitted_input()
                 .input("C0", f32({1, 1, 1}, {1}))
                 .input("P", f32({1, 3}, {0.5f, 0.6f, 0.7f}))
                 .attr_int("hidden_size", 1)
                 .outputs(3)
                 .run();
  const double i = sig(0.1 + 0.5), f = sig(0.3 + 0.7), c = std::tanh(0.4);
  const double C = f * 1.0 + i * c;
  const double o = sig(0.2 + 0.6 * C);
  EXPECT_NEAR(values(out.at(2).tensor)[0], C, 1e-6);
  EXPECT_NEAR(values(out.at(1).tensor)[0], o * std::tanh(C), 1e-6);
  EXPECT_NEAR(values(out.at(0).tensor)[0], o * std::tanh(C), 1e-6);
}

// LSTM with string-list attributes, built through GraphBuilder (OneNode has no string lists).
std::vector<Datum> run_lstm(int opset, const std::vector<std::string>& acts, const std::vector<float>& alphas,
                            const std::vector<float>& betas, bool input_forget) {
  testing::GraphBuilder g(opset);
  g.input("X", DataType::Float, {"1", "1", "1"}).output("Y").output("Yh").output("Yc");
  g.initializer("W", f32({1, 4, 1}, {0.1f, 0.2f, 0.3f, 0.4f}));
  g.initializer("R", f32({1, 4, 1}, {0, 0, 0, 0}));
  g.initializer("C0", f32({1, 1, 1}, {1}));
  pb::Node& n = g.node("LSTM", {"X", "W", "R", "", "", "", "C0"}, {"Y", "Yh", "Yc"});
  g.attr_int(n, "hidden_size", 1);
  if (input_forget) g.attr_int(n, "input_forget", 1);
  g.attr_strings(n, "activations", acts);
  if (!alphas.empty()) g.attr(n, "activation_alpha", pb::AttrType::Floats).floats = alphas;
  if (!betas.empty()) g.attr(n, "activation_beta", pb::AttrType::Floats).floats = betas;
  Session s = g.session();
  std::vector<Datum> out;
  for (auto& [name, d] : s.run({{"X", Datum::of(f32({1, 1, 1}, {1}))}})) out.push_back(std::move(d));
  return out;
}

TEST(LSTM, ActivationsAndInputForget_Opset7) {
  auto out = run_lstm(7, {"HardSigmoid", "Relu", "Affine"}, {0.5f, 2.0f}, {0.25f, 1.0f}, true);
  auto hs = [](double x) { return std::max(0.0, std::min(1.0, 0.5 * x + 0.25)); };
  const double i = hs(0.1), f = 1 - i, c = 0.4;  // Relu
  const double C = f + i * c, o = hs(0.2);
  EXPECT_NEAR(values(out.at(2).tensor)[0], C, 1e-6);
  EXPECT_NEAR(values(out.at(1).tensor)[0], o * (2.0 * C + 1.0), 1e-6);
}

TEST(LSTM, UnknownActivationIsAnError_Opset14) {
  try {
    run_lstm(14, {"Sigmoid", "Tanh", "Cube"}, {}, {}, false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("activation 'Cube' is not supported"), std::string::npos) << e.what();
  }
}

TEST(GRU, InfersSymbolicShapes_Opset14) {
  testing::GraphBuilder g(14);
  g.input("X", DataType::Float, {"N", "T", "3"}).output("Y").output("Yh");
  g.initializer("W", f32({2, 12, 3}, std::vector<float>(72, 0.f)));
  g.initializer("R", f32({2, 12, 4}, std::vector<float>(96, 0.f)));
  pb::Node& n = g.node("GRU", {"X", "W", "R"}, {"Y", "Yh"});
  g.attr_int(n, "layout", 1);
  g.attr(n, "direction", pb::AttrType::String).s = g.s("bidirectional");
  Session s = g.session();
  EXPECT_EQ(testing::output_type(s, 0), "float[N,T,2,4]");
  EXPECT_EQ(testing::output_type(s, 1), "float[N,2,4]");
}

}  // namespace
}  // namespace onyx
