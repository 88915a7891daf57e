// int8 quantization (src/opt/quantize.cpp, include/onyx/quantize.hpp): the graphs ONNX Runtime's dynamic and
// static QDQ quantization write, their outputs against the float model's, and onyx's fusions of them into its
// integer kernels (MatMulIntegerToFloat, QLinearConv, QLinearAdd, QLinearMatMul).
#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "onyx/quantize.hpp"
#include "opt/opt_test_util.hpp"
#include "opt/quantize.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;
namespace fs = std::filesystem;

fs::path write_temp(const std::string& name, const std::string& bytes) {
  fs::path p = fs::path(::testing::TempDir()) / name;
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Largest |a - b| over the first outputs of two sessions on the same feeds, and the largest |a|.
std::pair<double, double> max_diff(const std::string& a, const std::string& b, const std::map<std::string, Datum>& feeds) {
  Session sa = session_at(a, 0), sb = session_at(b, 3);
  auto ra = sa.run(feeds), rb = sb.run(feeds);
  const Tensor& ta = ra[0].second.tensor;
  const Tensor& tb = rb[0].second.tensor;
  EXPECT_EQ(ta.dims(), tb.dims());
  double diff = 0, mag = 0;
  for (uint64_t i = 0; i < ta.element_count(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(ta.data<float>()[i]) - tb.data<float>()[i]));
    mag = std::max(mag, std::fabs(static_cast<double>(ta.data<float>()[i])));
  }
  return {diff, mag};
}

GraphSpec matmul_model(bool gemm) {
  GraphSpec g(14);
  if (gemm) {
    g.input("x", DataType::Float, {4, 16}).random("w", {12, 16}).random("c", {12});
    g.node("Gemm", {"x", "w", "c"}, {"y"}, {{"transB", 1}, {"alpha", 0.5f}});
  } else {
    g.input("x", DataType::Float, {2, 5, 16}).random("w", {16, 12});
    g.node("MatMul", {"x", "w"}, {"y"});
  }
  g.output("y");
  return g;  // by name: a copy of a GraphSpec would view the original's strings
}

TEST(Quantize, DynamicMatMulIsOrtsFormAndFusesInOnyx) {
  GraphSpec g = matmul_model(false);
  Model m = load_ir(g.bytes());
  opt::QuantizeReport r = opt::quantize_dynamic_graph(m, {});
  EXPECT_EQ(opt::verify_graph(*m.graph), "");
  EXPECT_EQ(op_list(m), (V{"DynamicQuantizeLinear", "MatMulInteger", "Mul", "Cast", "Mul"}));
  EXPECT_EQ(r.nodes["MatMul"], 1u);
  EXPECT_EQ(m.graph->initializers.count("w"), 0u);  // the float weight is gone
  EXPECT_EQ(m.graph->initializers.at("w_quantized").dtype(), DataType::Int8);
  const std::string q = serialize_ir(m);
  Model fused = load_ir(q);
  optimize_ir(fused, 2);
  EXPECT_EQ(op_list(fused), (V{"DynamicQuantizeLinear", "Mul", "ai.onyx.MatMulIntegerToFloat"}));
  Session s = session_at(g.bytes(), 0);
  const auto [diff, mag] = max_diff(g.bytes(), q, random_feeds(s));
  EXPECT_LT(diff, 0.03 * mag);
}

TEST(Quantize, DynamicGemmBecomesMatMulIntegerAndBias) {
  GraphSpec g = matmul_model(true);
  Model m = load_ir(g.bytes());
  opt::DynamicQuantizeOptions o;
  o.per_channel = true;
  opt::quantize_dynamic_graph(m, o);
  EXPECT_EQ(op_list(m), (V{"DynamicQuantizeLinear", "MatMulInteger", "Mul", "Cast", "Mul", "Add"}));
  EXPECT_EQ(m.graph->initializers.at("w_scale").dims(), std::vector<int64_t>{12});
  const std::string q = serialize_ir(m);
  Session s = session_at(g.bytes(), 0);
  const auto [diff, mag] = max_diff(g.bytes(), q, random_feeds(s));
  EXPECT_LT(diff, 0.03 * mag);
  Model fused = load_ir(q);
  optimize_ir(fused, 2);
  EXPECT_EQ(op_list(fused), (V{"DynamicQuantizeLinear", "Mul", "ai.onyx.MatMulIntegerToFloat"}));
}

TEST(Quantize, DynamicNeedsOpset11AndLeavesNonConstantWeights) {
  GraphSpec old(10);
  old.input("x", DataType::Float, {2, 16}).random("w", {16, 12}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  Model m = load_ir(old.bytes());
  try {
    opt::quantize_dynamic_graph(m, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opset 10"), std::string::npos) << e.what();
  }
  GraphSpec g(14);
  g.input("x", DataType::Float, {2, 16}).input("w", DataType::Float, {16, 12}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  Model m2 = load_ir(g.bytes());
  opt::QuantizeReport r = opt::quantize_dynamic_graph(m2, {});
  EXPECT_EQ(op_list(m2), (V{"MatMul"}));
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].find("not a constant"), std::string::npos) << r.skipped[0];
}

// x -> Conv(w1, b1) -> BatchNormalization -> Relu -> a; a -> Conv(w2, b2) -> c; Add(a, c) -> Relu -> y.
GraphSpec conv_model() {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 3, 8, 8}).random("w1", {8, 3, 3, 3}, -0.5f, 0.5f).random("b1", {8});
  g.random("bn_s", {8}, 0.5f, 1.5f).random("bn_b", {8}).random("bn_m", {8}).random("bn_v", {8}, 0.5f, 2.f);
  g.random("w2", {8, 8, 1, 1}, -0.5f, 0.5f).random("b2", {8});
  g.node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("BatchNormalization", {"c1", "bn_s", "bn_b", "bn_m", "bn_v"}, {"n1"})
      .node("Relu", {"n1"}, {"a"})
      .node("Conv", {"a", "w2", "b2"}, {"c"})
      .node("Add", {"a", "c"}, {"s"})
      .node("Relu", {"s"}, {"y"});
  g.output("y");
  return g;
}

std::vector<CalibrationSample> samples_for(const std::string& bytes, int n) {
  Session s = session_at(bytes, 0);
  std::vector<CalibrationSample> out;
  for (int k = 0; k < n; ++k) out.push_back(random_feeds(s, 100 + static_cast<uint32_t>(k)));
  return out;
}

TEST(Quantize, StaticQdqFormAndOnyxFusions) {
  GraphSpec g = conv_model();
  const fs::path in = write_temp("quantize_conv.onnx", g.bytes()), out = fs::path(::testing::TempDir()) / "quantize_conv_q.onnx";
  for (bool per_channel : {false, true}) {
    StaticQuantizeOptions o;
    o.per_channel = per_channel;
    QuantizeReport r = quantize_static(in, out, samples_for(g.bytes(), 4), o);
    EXPECT_EQ(r.nodes["Conv"], 2u);
    EXPECT_EQ(r.nodes["Add"], 1u);
    EXPECT_EQ(r.activations_folded, 1u);  // the Relu after the first Conv (the last one writes a graph output)
    EXPECT_EQ(r.samples, 4u);
    const std::string q = read_file(out);
    Model m = load_ir(q);
    std::map<std::string, int> count;
    for (const auto& n : m.graph->nodes) ++count[n->op_type];
    EXPECT_EQ(count["BatchNormalization"], 0);
    EXPECT_EQ(count["Relu"], 1);
    EXPECT_EQ(count["Conv"], 2);
    EXPECT_EQ(count["Add"], 1);
    EXPECT_EQ(count["QuantizeLinear"], 4);  // x, a, c, s
    EXPECT_EQ(count["DequantizeLinear"], 4 + 4);  // those and 2 weights + 2 biases
    EXPECT_EQ(m.graph->initializers.at("w2_quantized").dtype(), DataType::Int8);
    EXPECT_EQ(m.graph->initializers.at("b2_quantized").dtype(), DataType::Int32);
    Model fused = load_ir(q);
    optimize_ir(fused, 2);
    EXPECT_EQ(op_list(fused),
              (V{"QuantizeLinear", "QLinearConv", "QLinearConv", "ai.onyx.QLinearAdd", "DequantizeLinear", "Relu"}));
    Session s = session_at(g.bytes(), 0);
    const auto [diff, mag] = max_diff(g.bytes(), q, random_feeds(s, 100));
    EXPECT_LT(diff, 0.05 * mag) << "per_channel " << per_channel;
  }
}

TEST(Quantize, StaticMatMulPercentileAndErrors) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {2, 5, 16}).random("w", {16, 12}).random("w2", {12, 4});
  g.node("MatMul", {"x", "w"}, {"h"}).node("MatMul", {"h", "w2"}, {"y"}).output("y");
  const fs::path in = write_temp("quantize_mm.onnx", g.bytes()), out = fs::path(::testing::TempDir()) / "quantize_mm_q.onnx";
  StaticQuantizeOptions o;
  o.method = CalibrationMethod::Percentile;
  o.percentile = 99.9;
  o.per_channel = true;
  quantize_static(in, out, samples_for(g.bytes(), 3), o);
  const std::string q = read_file(out);
  Model fused = load_ir(q);
  optimize_ir(fused, 2);
  // The second product writes the graph output, which stays float (no QuantizeLinear after it).
  EXPECT_EQ(op_list(fused), (V{"QuantizeLinear", "QLinearMatMul", "DequantizeLinear", "MatMul"}));
  Session s = session_at(g.bytes(), 0);
  const auto [diff, mag] = max_diff(g.bytes(), q, random_feeds(s, 100));
  EXPECT_LT(diff, 0.05 * mag);
  // No samples; a missing range; an op type it does not know.
  EXPECT_THROW(quantize_static(in, out, {}, {}), Error);
  Model m = load_ir(g.bytes());
  EXPECT_THROW(opt::quantize_static_graph(m, {}, {}), Error);
  o.op_types = {"Softmax"};
  EXPECT_THROW(quantize_static(in, out, samples_for(g.bytes(), 1), o), Error);
}

TEST(Quantize, ActivationParamsAsOrt) {
  EXPECT_EQ(opt::activation_quant_params({0, 2.55}, DataType::UInt8), (std::pair<float, int32_t>{0.01f, 0}));
  const auto [s, z] = opt::activation_quant_params({-1, 1}, DataType::UInt8);
  EXPECT_FLOAT_EQ(s, 2.f / 255.f);
  EXPECT_TRUE(z == 127 || z == 128) << z;  // 127.5 in exact arithmetic; the float scale decides
  EXPECT_EQ(opt::activation_quant_params({0, 0}, DataType::Int8), (std::pair<float, int32_t>{1.f, -128}));
  EXPECT_EQ(opt::activation_quant_params({1, 3}, DataType::Int8).second, -128);  // the range includes 0
}

TEST(Quantize, CalibrationFolderInOnnxLayout) {
  GraphSpec g = matmul_model(false);
  const fs::path dir = fs::path(::testing::TempDir()) / "quantize_calib";
  fs::remove_all(dir);
  const fs::path model = write_temp("quantize_calib_model.onnx", g.bytes());
  Session s = session_at(g.bytes(), 0);
  for (int k = 0; k < 2; ++k) {
    fs::create_directories(dir / cat("test_data_set_", k));
    auto feeds = random_feeds(s, static_cast<uint32_t>(k));
    save_datum(feeds.at("x"), "x", dir / cat("test_data_set_", k) / "input_0.pb");
  }
  auto samples = read_calibration_dir(dir, model);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[1].at("x").tensor.dims(), (std::vector<int64_t>{2, 5, 16}));
  fs::create_directories(dir / "test_data_set_2");
  std::ofstream(dir / "test_data_set_2" / "other.pb") << "x";
  try {
    read_calibration_dir(dir, model);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 'x'"), std::string::npos) << e.what();
  }
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
