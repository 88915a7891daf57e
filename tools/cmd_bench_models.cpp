// onyx bench-models DIR: writes the benchmark models with onyx's own writer: a BERT-base encoder, MobileNetV2
// (float, and statically quantized in the QDQ and QOperator forms), a stack of GPT-2 decoder blocks and a two-layer LSTM, in the shapes and op patterns PyTorch's exporter emits
// (opset 17), with deterministic weights scaled so that activations stay of order 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <numbers>
#include <set>
#include <sstream>

#include "base/error.hpp"
#include "cli.hpp"
#include "feeds.hpp"
#include "format/onnx_proto.hpp"
#include "format/save.hpp"
#include "base/dtype.hpp"

namespace onyx::cli {

const char* const kBenchModelsUsage =
    "usage: onyx bench-models DIR [--models LIST] [--bert-layers N] [--gpt2-layers N] [--hidden N] [--heads N]\n"
    "                             [--ffn N] [--seq N] [--image N] [--width F] [--classes N] [--lstm-input N]\n"
    "                             [--lstm-hidden N] [--lstm-layers N] [--decomposed-layernorm] [--seed N]\n"
    "\n"
    "Writes the benchmark models into DIR (created if missing), opset 17, float32, batch 1, weights drawn from a\n"
    "fixed-seed generator (N(0, 1/fan_in) for matrices), so the same options give the same bytes:\n"
    "  bert_base.onnx     BERT encoder: input `embeddings` float[1,seq,hidden] (the summed word+position+type\n"
    "                     embeddings: no Gather over a vocabulary), embedding LayerNorm, then per layer Q/K/V\n"
    "                     MatMul+Add, Reshape, Transpose, MatMul, Div by sqrt(head size), Add of a constant\n"
    "                     attention mask (the last seq/8 positions masked with -10000), Softmax, MatMul, Transpose,\n"
    "                     Reshape, MatMul+Add, residual Add, LayerNormalization, Erf-GELU feed-forward\n"
    "                     (default 12 layers, hidden 768, 12 heads, ffn 3072, seq 128); output `last_hidden_state`\n"
    "  mobilenet_v2.onnx  MobileNetV2: input `input` float[1,3,image,image]; Conv + BatchNormalization + Clip(0,6)\n"
    "                     unfused, depthwise convs, inverted residuals with Add, GlobalAveragePool, Flatten, Gemm\n"
    "                     (default width 1.0, image 224, 1000 classes); output `logits`\n"
    "  gpt2_stack.onnx    GPT-2 decoder blocks: input `inputs_embeds` float[1,seq,hidden]; pre-LN\n"
    "                     LayerNormalization, fused QKV MatMul+Add and Split, causal mask by Where with -10000,\n"
    "                     Softmax, tanh-GELU in its exported Pow/Tanh form, residual Adds, final LayerNorm\n"
    "                     (default 4 layers, same hidden/heads/ffn/seq as BERT); output `last_hidden_state`\n"
    "  lstm.onnx          two stacked unidirectional LSTM layers (LSTM, Squeeze, LSTM, Squeeze): input `input`\n"
    "                     float[seq,1,lstm-input]; output `output` float[seq,1,lstm-hidden] (default seq 128,\n"
    "                     input 256, hidden 512, 2 layers)\n"
    "  mobilenet_v2_qdq.onnx  MobileNetV2 statically quantized as ONNX Runtime's quantize_static writes it (QDQ):\n"
    "                     QuantizeLinear/DequantizeLinear (uint8, per tensor) around every activation, int8 weights\n"
    "                     per output channel, int32 biases, BatchNormalization and Clip folded; residual Adds and\n"
    "                     the pool between Q/DQ, the classifier in float; input and output as mobilenet_v2's\n"
    "  mobilenet_v2_qop.onnx  the same quantized MobileNetV2 in the QOperator form quantize_static also writes:\n"
    "                     QuantizeLinear of the input, QLinearConv, com.microsoft QLinearAdd for the residual sums\n"
    "                     and QLinearGlobalAveragePool, DequantizeLinear before the float classifier\n"
    "  bert_base_ort.onnx the BERT encoder as ONNX Runtime's transformer optimizer saves it: com.microsoft\n"
    "                     Attention (merged Q/K/V weight, mask_index of key lengths), SkipLayerNormalization taking\n"
    "                     the projections' biases and the residuals, BiasGelu; input and output as bert_base's\n"
    "  --models LIST      comma-separated subset of bert_base,mobilenet_v2,gpt2_stack,lstm,mobilenet_v2_qdq,\n"
    "                     mobilenet_v2_qop,bert_base_ort\n"
    "                     (default: all)\n"
    "  --ffn N            feed-forward size of both transformers (default 4 * hidden)\n"
    "  --seq N            sequence length of the transformers and the LSTM\n"
    "  --decomposed-layernorm  LayerNorm as ReduceMean/Sub/Pow/Add/Sqrt/Div/Mul/Add (older exporters' form)\n"
    "  --seed N           seed of the weight generator (default 1)\n";

namespace {

// Normal deviates from splitmix64 and Box-Muller, written out because std::normal_distribution's sequence
// differs between standard libraries, and the models should be the same everywhere.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  double uniform() { return static_cast<double>(bits() >> 11) * 0x1p-53; }  // [0, 1)
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(bits() >> 11) + 0.5) * 0x1p-53;  // (0, 1): log stays finite
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2 * std::numbers::pi * u2);
    has_spare_ = true;
    return r * std::cos(2 * std::numbers::pi * u2);
  }

 private:
  uint64_t bits() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

pb::Attribute attr_int(const char* name, int64_t v) {
  pb::Attribute a;
  a.name = name;
  a.type = static_cast<int32_t>(pb::AttrType::Int);
  a.i = v;
  return a;
}

pb::Attribute attr_float(const char* name, float v) {
  pb::Attribute a;
  a.name = name;
  a.type = static_cast<int32_t>(pb::AttrType::Float);
  a.f = v;
  return a;
}

pb::Attribute attr_ints(const char* name, std::vector<int64_t> v) {
  pb::Attribute a;
  a.name = name;
  a.type = static_cast<int32_t>(pb::AttrType::Ints);
  a.ints = std::move(v);
  return a;
}

// Builds one model. Every name lives in the document's arena (the pb structs hold views); initializer bytes are
// counted against the 2 GB a protobuf message may hold, before they are allocated.
class Builder {
 public:
  Builder(pb::ModelDocument& doc, const std::string& graph_name, const std::string& description, uint64_t seed)
      : doc_(doc), rng_(seed) {
    doc.label = graph_name;
    pb::Model& m = doc.model;
    m.ir_version = 8;
    m.producer_name = "onyx bench-models";
    m.producer_version = "0.1.0";
    m.opset_import.push_back({"", 17, {}});
    graph_ = &m.graph.emplace();
    graph_->name = str(graph_name);
    graph_->doc_string = str(description);
  }

  pb::Str str(std::string s) { return doc_.arena->save(std::move(s)); }

  void input(const std::string& name, const std::vector<int64_t>& dims) { graph_->input.push_back(value(name, dims)); }
  void output(const std::string& name, const std::vector<int64_t>& dims) { graph_->output.push_back(value(name, dims)); }

  // Float initializers.
  std::string normal(const std::string& name, const std::vector<int64_t>& dims, double mean, double stddev) {
    return floats(name, dims, [&] { return mean + stddev * rng_.normal(); });
  }
  std::string uniform(const std::string& name, const std::vector<int64_t>& dims, double lo, double hi) {
    return floats(name, dims, [&] { return lo + (hi - lo) * rng_.uniform(); });
  }
  std::string values(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    size_t i = 0;
    return floats(name, dims, [&] { return v.at(i++); });
  }
  // A float scalar, shared by every use of the same value.
  std::string scalar(float v) {
    auto it = scalars_.find(v);
    if (it != scalars_.end()) return it->second;
    std::string name = cat("const_", scalars_.size());
    values(name, {}, {v});
    return scalars_[v] = name;
  }
  std::string int64s(const std::string& name, const std::vector<int64_t>& v) {
    pb::Tensor& t = initializer(name, {static_cast<int64_t>(v.size())}, DataType::Int64, v.size() * 8);
    t.raw_data = str(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
    return name;
  }
  // Deviates for weights the caller transforms itself (quantizes) before storing them with raw().
  std::vector<float> draw_normal(size_t n, double mean, double stddev) {
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(mean + stddev * rng_.normal());
    return v;
  }
  // An initializer of any fixed-size type from its little-endian bytes.
  std::string raw(const std::string& name, const std::vector<int64_t>& dims, DataType type, std::string bytes) {
    pb::Tensor& t = initializer(name, dims, type, bytes.size());
    t.raw_data = str(std::move(bytes));
    return name;
  }
  // A uint8 scalar (a zero point), shared by every use of the same value.
  std::string uint8_scalar(uint8_t v) {
    auto it = uint8_scalars_.find(v);
    if (it != uint8_scalars_.end()) return it->second;
    std::string name = cat("zero_point_", static_cast<int>(v));
    raw(name, {}, DataType::UInt8, std::string(1, static_cast<char>(v)));
    return uint8_scalars_[v] = name;
  }
  std::string bools(const std::string& name, const std::vector<int64_t>& dims, const std::vector<uint8_t>& v) {
    pb::Tensor& t = initializer(name, dims, DataType::Bool, v.size());
    t.raw_data = str(std::string(v.begin(), v.end()));
    return name;
  }

  // Adds a node and returns its outputs; `scope` prefixes node and value names the way the exporter does.
  std::vector<std::string> node(const char* op, const std::vector<std::string>& inputs, size_t n_outputs,
                                std::vector<pb::Attribute> attrs = {}, const char* domain = nullptr) {
    pb::Node& n = graph_->node.emplace_back();
    n.op_type = op;
    if (domain) n.domain = domain;
    std::string name = cat(scope, "/", op, "_", graph_->node.size());
    n.name = str(name);
    for (const auto& in : inputs) n.input.push_back(str(in));
    std::vector<std::string> outs;
    for (size_t i = 0; i < n_outputs; ++i) {
      outs.push_back(cat(name, "_output_", i));
      n.output.push_back(str(outs.back()));
    }
    n.attribute = std::move(attrs);
    return outs;
  }
  std::string op(const char* op, const std::vector<std::string>& inputs, std::vector<pb::Attribute> attrs = {},
                 const char* domain = nullptr) {
    return node(op, inputs, 1, std::move(attrs), domain)[0];
  }
  // Renames the first output of the last node (the model's output gets a plain name).
  std::string name_last_output(const std::string& name) {
    graph_->node.back().output[0] = str(name);
    return name;
  }

  std::string scope;

 private:
  static constexpr uint64_t kMaxBytes = 2'000'000'000;  // below protobuf's 2 GiB message limit, with room to spare

  pb::ValueInfo value(const std::string& name, const std::vector<int64_t>& dims) {
    pb::ValueInfo v;
    v.name = str(name);
    auto& tt = v.type.emplace().tensor_type.emplace();
    tt.elem_type = static_cast<int32_t>(DataType::Float);
    auto& shape = tt.shape.emplace();
    for (int64_t d : dims) shape.dim.emplace_back().dim_value = d;
    return v;
  }

  pb::Tensor& initializer(const std::string& name, const std::vector<int64_t>& dims, DataType type, uint64_t bytes) {
    if (bytes > kMaxBytes - bytes_)
      fail("model '", doc_.label, "': initializer '", name, "' would bring the weights over ", kMaxBytes,
           " bytes, more than one protobuf file holds; choose a smaller configuration");
    bytes_ += bytes;
    pb::Tensor& t = graph_->initializer.emplace_back();
    t.name = str(name);
    t.dims = dims;
    t.data_type = static_cast<int32_t>(type);
    return t;
  }

  template <class Gen>
  std::string floats(const std::string& name, const std::vector<int64_t>& dims, Gen gen) {
    uint64_t n = 1;
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);  // dims are bounded by the options: no overflow
    if (n > kMaxBytes / 4) fail("model '", doc_.label, "': initializer '", name, "' has ", n, " elements, too many");
    pb::Tensor& t = initializer(name, dims, DataType::Float, n * 4);
    std::string data(n * 4, '\0');
    for (uint64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(gen());
      std::memcpy(data.data() + i * 4, &v, 4);  // little-endian, as raw_data requires (x86/ARM hosts)
    }
    t.raw_data = str(std::move(data));
    return name;
  }

  pb::ModelDocument& doc_;
  pb::Graph* graph_ = nullptr;
  Random rng_;
  std::map<float, std::string> scalars_;
  std::map<uint8_t, std::string> uint8_scalars_;
  uint64_t bytes_ = 0;
};

struct TransformerConfig {
  int64_t layers, hidden, heads, ffn, seq;
  bool decomposed_layernorm;
  int64_t head_size() const { return hidden / heads; }
};

struct MobileNetConfig {
  int64_t image, classes;
  double width;
};

struct LstmConfig {
  int64_t seq, input, hidden, layers;
};

// MatMul by a [in, out] weight (the exporter stores nn.Linear's weight transposed) and Add of the bias.
std::string linear(Builder& b, const std::string& x, const std::string& prefix, int64_t in, int64_t out) {
  std::string w = b.normal(prefix + ".weight", {in, out}, 0.0, 1.0 / std::sqrt(static_cast<double>(in)));
  std::string bias = b.normal(prefix + ".bias", {out}, 0.0, 0.02);
  return b.op("Add", {b.op("MatMul", {x, w}), bias});
}

std::string layer_norm(Builder& b, const std::string& x, const std::string& prefix, int64_t hidden, float eps,
                       bool decomposed) {
  std::string gamma = b.normal(prefix + ".weight", {hidden}, 1.0, 0.05);
  std::string beta = b.normal(prefix + ".bias", {hidden}, 0.0, 0.05);
  if (!decomposed)
    return b.op("LayerNormalization", {x, gamma, beta}, {attr_int("axis", -1), attr_float("epsilon", eps)});
  std::string mean = b.op("ReduceMean", {x}, {attr_ints("axes", {-1})});
  std::string centered = b.op("Sub", {x, mean});
  std::string var = b.op("ReduceMean", {b.op("Pow", {centered, b.scalar(2.0f)})}, {attr_ints("axes", {-1})});
  std::string stddev = b.op("Sqrt", {b.op("Add", {var, b.scalar(eps)})});
  return b.op("Add", {b.op("Mul", {b.op("Div", {centered, stddev}), gamma}), beta});
}

// [1, seq, hidden] -> [1, heads, seq, head_size] (perm 0,2,1,3) or, for keys, [1, heads, head_size, seq].
std::string split_heads(Builder& b, const std::string& x, const std::string& shape, bool keys) {
  std::string r = b.op("Reshape", {x, shape});
  return b.op("Transpose", {r}, {attr_ints("perm", keys ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3})});
}

std::string merge_heads(Builder& b, const std::string& x, const std::string& shape) {
  return b.op("Reshape", {b.op("Transpose", {x}, {attr_ints("perm", {0, 2, 1, 3})}), shape});
}

pb::ModelDocument make_bert(const TransformerConfig& c, uint64_t seed) {
  pb::ModelDocument doc;
  Builder b(doc, "bert_base",
            cat("BERT encoder written by onyx bench-models: ", c.layers, " layers, hidden ", c.hidden, ", ", c.heads,
                " heads, ffn ", c.ffn, ", seq ", c.seq, ", batch 1; input: summed embeddings (no vocabulary Gather)"),
            seed);
  const int64_t S = c.seq, H = c.hidden;
  b.input("embeddings", {1, S, H});
  std::string heads_shape = b.int64s("shape_heads", {1, S, c.heads, c.head_size()});
  std::string hidden_shape = b.int64s("shape_hidden", {1, S, H});
  // Padding stand-in: the last seq/8 positions are masked out, as a tokenizer's attention mask would do.
  std::vector<float> mask(static_cast<size_t>(S), 0.0f);
  for (int64_t i = S - S / 8; i < S; ++i) mask[static_cast<size_t>(i)] = -10000.0f;
  std::string mask_name = b.values("extended_attention_mask", {1, 1, 1, S}, mask);
  std::string scale = b.scalar(std::sqrt(static_cast<float>(c.head_size())));
  b.scope = "/embeddings";
  std::string x = layer_norm(b, "embeddings", "embeddings.LayerNorm", H, 1e-12f, c.decomposed_layernorm);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = cat("encoder.layer.", l);
    b.scope = cat("/encoder/layer.", l, "/attention");
    std::string q = split_heads(b, linear(b, x, p + ".attention.self.query", H, H), heads_shape, false);
    std::string k = split_heads(b, linear(b, x, p + ".attention.self.key", H, H), heads_shape, true);
    std::string v = split_heads(b, linear(b, x, p + ".attention.self.value", H, H), heads_shape, false);
    std::string scores = b.op("Add", {b.op("Div", {b.op("MatMul", {q, k}), scale}), mask_name});
    std::string probs = b.op("Softmax", {scores}, {attr_int("axis", -1)});
    std::string context = merge_heads(b, b.op("MatMul", {probs, v}), hidden_shape);
    std::string attn = linear(b, context, p + ".attention.output.dense", H, H);
    x = layer_norm(b, b.op("Add", {attn, x}), p + ".attention.output.LayerNorm", H, 1e-12f, c.decomposed_layernorm);
    b.scope = cat("/encoder/layer.", l, "/ffn");
    std::string h = linear(b, x, p + ".intermediate.dense", H, c.ffn);
    // Erf-GELU as exported: x * 0.5 * (1 + erf(x / sqrt(2))), in the exporter's order of nodes.
    std::string erf = b.op("Erf", {b.op("Div", {h, b.scalar(std::numbers::sqrt2_v<float>)})});
    h = b.op("Mul", {b.op("Mul", {h, b.op("Add", {erf, b.scalar(1.0f)})}), b.scalar(0.5f)});
    std::string out = linear(b, h, p + ".output.dense", c.ffn, H);
    x = layer_norm(b, b.op("Add", {out, x}), p + ".output.LayerNorm", H, 1e-12f, c.decomposed_layernorm);
  }
  b.output(b.name_last_output("last_hidden_state"), {1, S, H});
  return doc;
}

// BERT as ONNX Runtime's transformer optimizer saves it (com.microsoft ops): per layer one Attention with the
// merged Q/K/V weight and a mask_index of key lengths, the output projection's MatMul feeding a
// SkipLayerNormalization that adds its bias and the residual, the feed-forward's MatMul, BiasGelu, MatMul and a
// second SkipLayerNormalization. Same sizes and mask as bert_base (its own weights).
pb::ModelDocument make_bert_ort(const TransformerConfig& c, uint64_t seed) {
  pb::ModelDocument doc;
  Builder b(doc, "bert_base_ort",
            cat("BERT encoder in ONNX Runtime's fused form (com.microsoft Attention, SkipLayerNormalization, "
                "BiasGelu) written by onyx bench-models: ", c.layers, " layers, hidden ", c.hidden, ", ", c.heads,
                " heads, ffn ", c.ffn, ", seq ", c.seq, ", batch 1; input: summed embeddings"),
            seed + 5);
  doc.model.opset_import.push_back({"com.microsoft", 1, {}});
  const int64_t S = c.seq, H = c.hidden;
  b.input("embeddings", {1, S, H});
  // The last seq/8 positions are padding: keys from there on are masked (mask_index as key lengths).
  const int32_t length = static_cast<int32_t>(S - S / 8);
  std::string lengths(4, '\0');
  std::memcpy(lengths.data(), &length, 4);
  const std::string mask_index = b.raw("mask_index", {1}, DataType::Int32, lengths);
  auto weight = [&](const std::string& name, int64_t in, int64_t out) {
    return b.normal(name, {in, out}, 0.0, 1.0 / std::sqrt(static_cast<double>(in)));
  };
  auto skip_norm = [&](const std::string& x, const std::string& skip, const std::string& prefix, const std::string& bias) {
    const std::string gamma = b.normal(prefix + ".weight", {H}, 1.0, 0.05);
    const std::string beta = b.normal(prefix + ".bias", {H}, 0.0, 0.05);
    return b.op("SkipLayerNormalization", {x, skip, gamma, beta, bias}, {attr_float("epsilon", 1e-12f)}, "com.microsoft");
  };
  b.scope = "/embeddings";
  std::string x = layer_norm(b, "embeddings", "embeddings.LayerNorm", H, 1e-12f, false);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = cat("encoder.layer.", l);
    b.scope = cat("/encoder/layer.", l, "/attention");
    const std::string qkv_w = weight(p + ".attention.qkv.weight", H, 3 * H);
    const std::string qkv_b = b.normal(p + ".attention.qkv.bias", {3 * H}, 0.0, 0.02);
    const std::string context = b.op("Attention", {x, qkv_w, qkv_b, mask_index}, {attr_int("num_heads", c.heads)},
                                     "com.microsoft");
    const std::string attn = b.op("MatMul", {context, weight(p + ".attention.output.dense.weight", H, H)});
    x = skip_norm(attn, x, p + ".attention.output.LayerNorm", b.normal(p + ".attention.output.dense.bias", {H}, 0.0, 0.02));
    b.scope = cat("/encoder/layer.", l, "/ffn");
    std::string h = b.op("MatMul", {x, weight(p + ".intermediate.dense.weight", H, c.ffn)});
    h = b.op("BiasGelu", {h, b.normal(p + ".intermediate.dense.bias", {c.ffn}, 0.0, 0.02)}, {}, "com.microsoft");
    const std::string out = b.op("MatMul", {h, weight(p + ".output.dense.weight", c.ffn, H)});
    x = skip_norm(out, x, p + ".output.LayerNorm", b.normal(p + ".output.dense.bias", {H}, 0.0, 0.02));
  }
  b.output(b.name_last_output("last_hidden_state"), {1, S, H});
  return doc;
}

pb::ModelDocument make_gpt2(const TransformerConfig& c, uint64_t seed) {
  pb::ModelDocument doc;
  Builder b(doc, "gpt2_stack",
            cat("GPT-2 decoder blocks written by onyx bench-models: ", c.layers, " layers, hidden ", c.hidden, ", ",
                c.heads, " heads, ffn ", c.ffn, ", seq ", c.seq, ", batch 1; input: summed token+position embeddings"),
            seed + 2);
  const int64_t S = c.seq, H = c.hidden;
  b.input("inputs_embeds", {1, S, H});
  std::string heads_shape = b.int64s("shape_heads", {1, S, c.heads, c.head_size()});
  std::string hidden_shape = b.int64s("shape_hidden", {1, S, H});
  std::string qkv_split = b.int64s("qkv_split", {H, H, H});
  std::vector<uint8_t> tril(static_cast<size_t>(S * S));
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < S; ++j) tril[static_cast<size_t>(i * S + j)] = j <= i;
  std::string causal = b.bools("causal_mask", {1, 1, S, S}, tril);
  std::string masked_value = b.scalar(-10000.0f);
  std::string scale = b.scalar(std::sqrt(static_cast<float>(c.head_size())));
  std::string x = "inputs_embeds";
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = cat("h.", l);
    b.scope = cat("/h.", l, "/attn");
    std::string h = layer_norm(b, x, p + ".ln_1", H, 1e-5f, c.decomposed_layernorm);
    std::string qkv = linear(b, h, p + ".attn.c_attn", H, 3 * H);
    std::vector<std::string> parts = b.node("Split", {qkv, qkv_split}, 3, {attr_int("axis", 2)});
    std::string q = split_heads(b, parts[0], heads_shape, false);
    std::string k = split_heads(b, parts[1], heads_shape, true);
    std::string v = split_heads(b, parts[2], heads_shape, false);
    std::string scores = b.op("Div", {b.op("MatMul", {q, k}), scale});
    scores = b.op("Where", {causal, scores, masked_value});
    std::string probs = b.op("Softmax", {scores}, {attr_int("axis", -1)});
    std::string context = merge_heads(b, b.op("MatMul", {probs, v}), hidden_shape);
    x = b.op("Add", {x, linear(b, context, p + ".attn.c_proj", H, H)});
    b.scope = cat("/h.", l, "/mlp");
    h = linear(b, layer_norm(b, x, p + ".ln_2", H, 1e-5f, c.decomposed_layernorm), p + ".mlp.c_fc", H, c.ffn);
    // tanh-GELU as GPT-2 exports it: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
    std::string half = b.op("Mul", {b.scalar(0.5f), h});
    std::string cube = b.op("Mul", {b.scalar(0.044715f), b.op("Pow", {h, b.scalar(3.0f)})});
    std::string inner = b.op("Mul", {b.scalar(static_cast<float>(std::sqrt(2.0 / std::numbers::pi))), b.op("Add", {h, cube})});
    h = b.op("Mul", {half, b.op("Add", {b.scalar(1.0f), b.op("Tanh", {inner})})});
    x = b.op("Add", {x, linear(b, h, p + ".mlp.c_proj", c.ffn, H)});
  }
  b.scope = "/ln_f";
  layer_norm(b, x, "ln_f", H, 1e-5f, c.decomposed_layernorm);
  b.output(b.name_last_output("last_hidden_state"), {1, S, H});
  return doc;
}

// Channels rounded to a multiple of 8, never more than 10% below the scaled value (torchvision's rule).
int64_t divisible_by_8(double v) {
  int64_t r = std::max<int64_t>(8, static_cast<int64_t>(v + 4) / 8 * 8);
  if (static_cast<double>(r) < 0.9 * v) r += 8;
  return r;
}

// Conv (no bias) + BatchNormalization, then Clip(0, 6) unless it is a projection.
std::string conv_bn(Builder& b, const std::string& x, const std::string& prefix, int64_t cin, int64_t cout,
                    int64_t kernel, int64_t stride, int64_t group, bool relu6) {
  const int64_t fan_in = cin / group * kernel * kernel;
  std::string w = b.normal(prefix + ".conv.weight", {cout, cin / group, kernel, kernel}, 0.0,
                           1.0 / std::sqrt(static_cast<double>(fan_in)));
  const int64_t pad = kernel / 2;
  std::string y = b.op("Conv", {x, w},
                       {attr_ints("dilations", {1, 1}), attr_int("group", group), attr_ints("kernel_shape", {kernel, kernel}),
                        attr_ints("pads", {pad, pad, pad, pad}), attr_ints("strides", {stride, stride})});
  std::string gamma = b.normal(prefix + ".bn.weight", {cout}, 1.0, 0.1);
  std::string beta = b.normal(prefix + ".bn.bias", {cout}, 0.0, 0.1);
  std::string mean = b.normal(prefix + ".bn.running_mean", {cout}, 0.0, 0.1);
  std::string var = b.uniform(prefix + ".bn.running_var", {cout}, 0.5, 1.5);
  y = b.op("BatchNormalization", {y, gamma, beta, mean, var}, {attr_float("epsilon", 1e-5f), attr_float("momentum", 0.9f)});
  if (relu6) y = b.op("Clip", {y, b.scalar(0.0f), b.scalar(6.0f)});
  return y;
}

// Static quantization as ONNX Runtime's quantize_static writes it. Weights int8 symmetric per output channel (zero
// points 0), biases int32 at scale x_scale * w_scale, BatchNormalization folded into the convolution, Clip(0, 6)
// folded into the quantization range of the convolution's output ([0, 6] at scale 6/255); activations uint8 per
// tensor. In the QDQ form each activation goes through QuantizeLinear -> DequantizeLinear and the ops stay float;
// in the QOperator form the ops are QLinearConv and ONNX Runtime's com.microsoft QLinearAdd and
// QLinearGlobalAveragePool on the 8-bit tensors.
enum class MobileNetForm { Float, Qdq, QOperator };

struct QTensor {
  std::string dq;  // QDQ form: the float tensor the next op reads; QOperator form: the uint8 tensor
  float scale;
  uint8_t zero = 0;
};

QTensor qdq(Builder& b, const std::string& x, float scale, uint8_t zero) {
  const std::string q = b.op("QuantizeLinear", {x, b.scalar(scale), b.uint8_scalar(zero)});
  return {b.op("DequantizeLinear", {q, b.scalar(scale), b.uint8_scalar(zero)}), scale, zero};
}

QTensor qconv(Builder& b, const QTensor& x, const std::string& prefix, int64_t cin, int64_t cout, int64_t kernel,
              int64_t stride, int64_t group, bool relu6, MobileNetForm form) {
  const int64_t fan_in = cin / group * kernel * kernel, per = fan_in;
  const std::vector<float> w = b.draw_normal(static_cast<size_t>(cout * per), 0.0, 1.0 / std::sqrt(static_cast<double>(fan_in)));
  const std::vector<float> bias = b.draw_normal(static_cast<size_t>(cout), 0.0, 0.1);
  std::string wq(static_cast<size_t>(cout * per), '\0'), bq(static_cast<size_t>(cout) * 4, '\0');
  std::vector<float> ws(static_cast<size_t>(cout)), bs(static_cast<size_t>(cout));
  for (int64_t o = 0; o < cout; ++o) {
    float mx = 0;
    for (int64_t i = 0; i < per; ++i) mx = std::max(mx, std::fabs(w[static_cast<size_t>(o * per + i)]));
    const float scale = mx > 0 ? mx / 127.f : 1.f;
    ws[static_cast<size_t>(o)] = scale;
    for (int64_t i = 0; i < per; ++i)
      wq[static_cast<size_t>(o * per + i)] = static_cast<char>(static_cast<int8_t>(std::lround(w[static_cast<size_t>(o * per + i)] / scale)));
    bs[static_cast<size_t>(o)] = x.scale * scale;
    const int32_t v = static_cast<int32_t>(std::lround(bias[static_cast<size_t>(o)] / bs[static_cast<size_t>(o)]));
    std::memcpy(bq.data() + o * 4, &v, 4);
  }
  const std::string weight = b.raw(prefix + ".weight_quantized", {cout, cin / group, kernel, kernel}, DataType::Int8, wq);
  const std::string weight_scale = b.values(prefix + ".weight_scale", {cout}, ws);
  const std::string weight_zero = b.raw(prefix + ".weight_zero_point", {cout}, DataType::Int8, std::string(static_cast<size_t>(cout), '\0'));
  const std::string bias_q = b.raw(prefix + ".bias_quantized", {cout}, DataType::Int32, bq);
  const int64_t pad = kernel / 2;
  std::vector<pb::Attribute> conv_attrs = {attr_ints("dilations", {1, 1}), attr_int("group", group),
                                           attr_ints("kernel_shape", {kernel, kernel}), attr_ints("pads", {pad, pad, pad, pad}),
                                           attr_ints("strides", {stride, stride})};
  const QTensor out = relu6 ? QTensor{"", 6.f / 255.f, 0} : QTensor{"", 0.05f, 128};
  if (form == MobileNetForm::QOperator) {
    const std::string y = b.op("QLinearConv", {x.dq, b.scalar(x.scale), b.uint8_scalar(x.zero), weight, weight_scale,
                                               weight_zero, b.scalar(out.scale), b.uint8_scalar(out.zero), bias_q},
                               std::move(conv_attrs));
    return {y, out.scale, out.zero};
  }
  const std::vector<pb::Attribute> axis0{attr_int("axis", 0)};
  const std::string wd = b.op("DequantizeLinear", {weight, weight_scale, weight_zero}, axis0);
  const std::string bd = b.op("DequantizeLinear", {bias_q, b.values(prefix + ".bias_scale", {cout}, bs)}, axis0);
  const std::string y = b.op("Conv", {x.dq, wd, bd}, std::move(conv_attrs));
  return qdq(b, y, out.scale, out.zero);
}

// MobileNetV2 in float (Conv, BatchNormalization and Clip unfused, as PyTorch exports it) or statically quantized
// (QDQ or QOperator, as above).
pb::ModelDocument make_mobilenet(const MobileNetConfig& c, uint64_t seed, MobileNetForm form) {
  pb::ModelDocument doc;
  const bool quantized = form != MobileNetForm::Float, qop = form == MobileNetForm::QOperator;
  const char* name = form == MobileNetForm::Float ? "mobilenet_v2" : qop ? "mobilenet_v2_qop" : "mobilenet_v2_qdq";
  Builder b(doc, name,
            cat(form == MobileNetForm::Float ? "MobileNetV2"
                : qop ? "MobileNetV2 statically quantized (QOperator: QLinearConv, com.microsoft QLinearAdd and "
                        "QLinearGlobalAveragePool; uint8 activations, int8 per-channel weights)"
                      : "MobileNetV2 statically quantized (QDQ, uint8 activations, int8 per-channel weights)",
                " written by onyx bench-models: width ", c.width, ", image ", c.image, "x", c.image, ", ", c.classes,
                " classes, batch 1", quantized ? "" : "; Conv, BatchNormalization and Clip unfused"),
            // The QOperator form draws the QDQ form's weights: the two models compute the same.
            seed + (quantized ? 4 : 1));
  if (qop) doc.model.opset_import.push_back({"com.microsoft", 1, {}});
  b.input("input", {1, 3, c.image, c.image});
  // Each layer's output: the float tensor the next layer reads (with its quantization scale when quantized).
  auto conv = [&](const QTensor& x, const std::string& prefix, int64_t cin, int64_t cout, int64_t kernel,
                  int64_t stride, int64_t group, bool relu6) {
    return quantized ? qconv(b, x, prefix, cin, cout, kernel, stride, group, relu6, form)
                     : QTensor{conv_bn(b, x.dq, prefix, cin, cout, kernel, stride, group, relu6), 0.f};
  };
  auto add = [&](const QTensor& x, const QTensor& y) {
    if (qop)
      return QTensor{b.op("QLinearAdd", {x.dq, b.scalar(x.scale), b.uint8_scalar(x.zero), y.dq, b.scalar(y.scale),
                                         b.uint8_scalar(y.zero), b.scalar(0.05f), b.uint8_scalar(128)},
                          {}, "com.microsoft"),
                     0.05f, 128};
    const std::string sum = b.op("Add", {x.dq, y.dq});
    return quantized ? qdq(b, sum, 0.05f, 128) : QTensor{sum, 0.f};
  };
  // (expansion t, channels c, repeats n, first stride s) of the paper's table 2.
  const int64_t blocks[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t channels = divisible_by_8(32 * c.width);
  b.scope = "/features.0";
  QTensor input{"input", 0.f};
  if (qop) input = QTensor{b.op("QuantizeLinear", {"input", b.scalar(1.f / 255.f), b.uint8_scalar(0)}), 1.f / 255.f, 0};
  else if (quantized) input = qdq(b, "input", 1.f / 255.f, 0);
  QTensor x = conv(input, "features.0", 3, channels, 3, 2, 1, true);
  int feature = 1;
  for (const auto& [t, ch, n, s] : blocks) {
    const int64_t out = divisible_by_8(static_cast<double>(ch) * c.width);
    for (int64_t i = 0; i < n; ++i, ++feature) {
      const std::string p = cat("features.", feature);
      b.scope = "/" + p;
      const int64_t stride = i == 0 ? s : 1, hidden = channels * t;
      QTensor y = x;
      if (t != 1) y = conv(y, p + ".expand", channels, hidden, 1, 1, 1, true);
      y = conv(y, p + ".depthwise", hidden, hidden, 3, stride, hidden, true);
      y = conv(y, p + ".project", hidden, out, 1, 1, 1, false);
      x = stride == 1 && channels == out ? add(x, y) : y;
      channels = out;
    }
  }
  const int64_t last = divisible_by_8(1280 * std::max(1.0, c.width));
  b.scope = cat("/features.", feature);
  x = conv(x, cat("features.", feature), channels, last, 1, 1, 1, true);
  b.scope = "/classifier";
  std::string pooled;
  if (qop) {
    const std::string q = b.op("QLinearGlobalAveragePool", {x.dq, b.scalar(x.scale), b.uint8_scalar(x.zero),
                                                            b.scalar(6.f / 255.f), b.uint8_scalar(0)},
                               {attr_int("channels_last", 0)}, "com.microsoft");
    pooled = b.op("DequantizeLinear", {q, b.scalar(6.f / 255.f), b.uint8_scalar(0)});
  } else {
    pooled = b.op("GlobalAveragePool", {x.dq});
    if (quantized) pooled = qdq(b, pooled, 6.f / 255.f, 0).dq;
  }
  const std::string flat = b.op("Flatten", {pooled}, {attr_int("axis", 1)});
  std::string w = b.normal("classifier.weight", {c.classes, last}, 0.0, 1.0 / std::sqrt(static_cast<double>(last)));
  std::string bias = b.normal("classifier.bias", {c.classes}, 0.0, 0.02);
  b.op("Gemm", {flat, w, bias}, {attr_float("alpha", 1.0f), attr_float("beta", 1.0f), attr_int("transB", 1)});
  b.output(b.name_last_output("logits"), {1, c.classes});
  return doc;
}

pb::ModelDocument make_lstm(const LstmConfig& c, uint64_t seed) {
  pb::ModelDocument doc;
  Builder b(doc, "lstm",
            cat("LSTM written by onyx bench-models: ", c.layers, " stacked unidirectional layers, seq ", c.seq,
                ", batch 1, input ", c.input, ", hidden ", c.hidden),
            seed + 3);
  b.input("input", {c.seq, 1, c.input});
  std::string axes = b.int64s("squeeze_axes", {1});
  // PyTorch's initialization: U(-1/sqrt(hidden), 1/sqrt(hidden)) for every weight and bias.
  const double k = 1.0 / std::sqrt(static_cast<double>(c.hidden));
  std::string x = "input";
  int64_t in = c.input;
  for (int64_t l = 0; l < c.layers; ++l) {
    b.scope = cat("/lstm/layer.", l);
    // Gates in ONNX's order (input, output, forget, cell); one direction.
    std::string w = b.uniform(cat("lstm.weight_ih_l", l), {1, 4 * c.hidden, in}, -k, k);
    std::string r = b.uniform(cat("lstm.weight_hh_l", l), {1, 4 * c.hidden, c.hidden}, -k, k);
    std::string bias = b.uniform(cat("lstm.bias_l", l), {1, 8 * c.hidden}, -k, k);
    std::string y = b.op("LSTM", {x, w, r, bias}, {attr_int("hidden_size", c.hidden)});  // Y: [seq, 1, 1, hidden]
    x = b.op("Squeeze", {y, axes});
    in = c.hidden;
  }
  b.output(b.name_last_output("output"), {c.seq, 1, c.hidden});
  return doc;
}

// The bytes of a configuration's big matrices, to refuse an oversized one before allocating anything (the builder
// checks the exact total as it goes).
uint64_t transformer_bytes(const TransformerConfig& c) {
  const auto h = static_cast<uint64_t>(c.hidden), f = static_cast<uint64_t>(c.ffn);
  return 4 * static_cast<uint64_t>(c.layers) * (4 * h * h + 2 * h * f);
}

uint64_t mobilenet_bytes(const MobileNetConfig& c) {
  const double scale = std::max(1.0, c.width) * std::max(1.0, c.width);
  return 4 * (static_cast<uint64_t>(c.classes) * static_cast<uint64_t>(divisible_by_8(1280 * std::max(1.0, c.width))) +
              static_cast<uint64_t>(2.3e6 * scale));
}

uint64_t lstm_bytes(const LstmConfig& c) {
  const auto in = static_cast<uint64_t>(std::max(c.input, c.hidden)), h = static_cast<uint64_t>(c.hidden);
  return 4 * static_cast<uint64_t>(c.layers) * 4 * h * (in + h);
}

double parse_width(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0.0 && v <= 4.0)) fail("--width expects a number in (0, 4], got '", text, "'");
  return v;
}

}  // namespace

int cmd_bench_models(const std::vector<std::string>& argv) {
  Args args(argv,
            {"--models", "--bert-layers", "--gpt2-layers", "--hidden", "--heads", "--ffn", "--seq", "--image", "--width",
             "--classes", "--lstm-input", "--lstm-hidden", "--lstm-layers", "--seed"},
            {"--decomposed-layernorm"});
  if (print_help_if_asked(args, kBenchModelsUsage)) return 0;
  expect_positional(args, 1, 1, kBenchModelsUsage);
  auto num = [&](const char* option, int64_t fallback, int64_t lo, int64_t hi) {
    auto v = args.value(option);
    return v ? parse_int_option(*v, option, lo, hi) : fallback;
  };
  TransformerConfig bert{};
  bert.layers = num("--bert-layers", 12, 1, 256);
  bert.hidden = num("--hidden", 768, 1, 16384);
  bert.heads = num("--heads", 12, 1, 1024);
  bert.ffn = num("--ffn", 4 * bert.hidden, 1, 65536);
  bert.seq = num("--seq", 128, 1, 8192);
  bert.decomposed_layernorm = args.flag("--decomposed-layernorm");
  if (bert.hidden % bert.heads != 0)
    fail("--hidden ", bert.hidden, " is not a multiple of --heads ", bert.heads, " (each head gets hidden/heads)");
  TransformerConfig gpt2 = bert;
  gpt2.layers = num("--gpt2-layers", 4, 1, 256);
  MobileNetConfig mobilenet{};
  mobilenet.image = num("--image", 224, 32, 4096);  // five stride-2 stages: smaller images vanish
  mobilenet.classes = num("--classes", 1000, 1, 1000000);
  mobilenet.width = args.value("--width") ? parse_width(*args.value("--width")) : 1.0;
  LstmConfig lstm{};
  lstm.seq = bert.seq;
  lstm.input = num("--lstm-input", 256, 1, 16384);
  lstm.hidden = num("--lstm-hidden", 512, 1, 16384);
  lstm.layers = num("--lstm-layers", 2, 1, 64);
  const uint64_t seed = static_cast<uint64_t>(num("--seed", 1, 0, INT64_MAX));

  const std::vector<std::string> all = {"bert_base", "mobilenet_v2", "gpt2_stack", "lstm", "mobilenet_v2_qdq",
                                        "mobilenet_v2_qop", "bert_base_ort"};
  std::vector<std::string> chosen;
  if (auto list = args.value("--models")) {
    std::stringstream ss(*list);
    std::string name;
    std::set<std::string> seen;
    while (std::getline(ss, name, ',')) {
      if (std::find(all.begin(), all.end(), name) == all.end())
        fail("--models: unknown model '", name,
             "' (choose from bert_base,mobilenet_v2,gpt2_stack,lstm,mobilenet_v2_qdq,mobilenet_v2_qop,bert_base_ort)");
      if (seen.insert(name).second) chosen.push_back(name);
    }
    if (chosen.empty()) fail("--models: the list is empty");
  } else {
    chosen = all;
  }

  for (const auto& name : chosen) {
    const uint64_t bytes = name == "bert_base" || name == "bert_base_ort"       ? transformer_bytes(bert)
                           : name.rfind("mobilenet_v2", 0) == 0 ? mobilenet_bytes(mobilenet)
                           : name == "gpt2_stack"   ? transformer_bytes(gpt2)
                                                    : lstm_bytes(lstm);
    if (bytes > 2'000'000'000)
      fail("model '", name, "' would need about ", bytes / 1'000'000, " MB of weights, more than one protobuf file ",
           "holds (2 GB); choose a smaller configuration");
  }

  const std::filesystem::path dir = args.positional()[0];
  std::filesystem::create_directories(dir);
  for (const auto& name : chosen) {
    // One model in memory at a time: BERT-base alone holds about 440 MB of weights.
    pb::ModelDocument doc = name == "bert_base"      ? make_bert(bert, seed)
                            : name == "bert_base_ort" ? make_bert_ort(bert, seed)
                            : name == "mobilenet_v2" ? make_mobilenet(mobilenet, seed, MobileNetForm::Float)
                            : name == "gpt2_stack"   ? make_gpt2(gpt2, seed)
                            : name == "lstm"         ? make_lstm(lstm, seed)
                            : name == "mobilenet_v2_qdq" ? make_mobilenet(mobilenet, seed, MobileNetForm::Qdq)
                                                         : make_mobilenet(mobilenet, seed, MobileNetForm::QOperator);
    const std::filesystem::path out = dir / (name + ".onnx");
    SaveOptions inline_data;
    inline_data.data = SaveOptions::Data::Inline;
    save_model(doc, out, inline_data);
    uint64_t params = 0;
    for (const auto& t : doc.model.graph->initializer)
      if (t.data_type == static_cast<int32_t>(DataType::Float)) {
        uint64_t n = 1;
        for (int64_t d : t.dims) n *= static_cast<uint64_t>(d);
        params += n;
      }
    std::printf("wrote %s: %zu nodes, %.2f M parameters, %.1f MB\n", out.string().c_str(), doc.model.graph->node.size(),
                static_cast<double>(params) / 1e6, static_cast<double>(std::filesystem::file_size(out)) / 1e6);
  }
  return 0;
}

}  // namespace onyx::cli
