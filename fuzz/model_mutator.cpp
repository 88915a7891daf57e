// The structure-aware model mutator (model_mutator.hpp). Each edit works on the decoded pb::Model: the views of
// new strings point into `Edits::strings`, which outlives the re-encoding.
#include "model_mutator.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "format/onnx_proto.hpp"

namespace onyx::fuzz {
namespace {

using pb::Str;

// Op types a node may become: common ops of every area, control flow, and ops whose kernels take attributes or
// inputs that shape their output.
constexpr const char* kOpTypes[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt",
    "Identity", "Cast", "CastLike", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Split",
    "Slice", "Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "Expand", "Tile",
    "Pad", "Resize", "Shape", "Size", "ConstantOfShape", "Range", "Where", "Equal", "Less", "Greater", "Not",
    "And", "ReduceSum", "ReduceMean", "ReduceMax", "ArgMax", "TopK", "MatMul", "Gemm", "Conv", "ConvTranspose",
    "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "LayerNormalization", "Softmax",
    "LogSoftmax", "Einsum", "CumSum", "OneHot", "NonZero", "Compress", "Trilu", "DepthToSpace", "SpaceToDepth",
    "If", "Loop", "Scan", "SequenceConstruct", "SequenceAt", "SequenceInsert", "SplitToSequence",
    "ConcatFromSequence", "Optional", "OptionalGetElement", "Constant", "QuantizeLinear", "DequantizeLinear",
    "QLinearMatMul", "MatMulInteger", "ConvInteger", "LSTM", "GRU", "RNN", "NonMaxSuppression", "RoiAlign",
    "GridSample", "Col2Im", "DFT", "STFT", "Unique", "Det", "Einsum", "BitShift", "StringNormalizer",
    "RandomNormal", "Dropout", "Attention", "RotaryEmbedding", "ImageDecoder"};

constexpr const char* kStrings[] = {"",        "NOTSET",  "SAME_UPPER", "SAME_LOWER", "VALID",  "constant",
                                    "reflect", "edge",    "wrap",       "linear",     "nearest", "cubic",
                                    "half_pixel", "asymmetric", "round_prefer_floor", "RGB", "BGR", "Grayscale",
                                    "ij,jk->ik", "...ii->...i", "abc", "LOWER", "UPPER", "tanh", "sigmoid"};

class Edits {
 public:
  Edits(pb::Model& m, uint64_t seed) : m_(m), rng_(seed) {}

  void run() {
    int edits = 1 + static_cast<int>(below(4));
    for (int i = 0; i < edits; ++i) {
      collect();
      edit_once();
    }
  }

 private:
  pb::Model& m_;
  std::mt19937_64 rng_;
  std::deque<std::string> strings_;

  // What the current pass found; pointers stay valid until the next edit changes a container.
  std::vector<pb::Graph*> graphs_;
  std::vector<std::vector<pb::Node>*> node_lists_;
  std::vector<pb::Node*> nodes_;
  std::vector<pb::Attribute*> attrs_;
  std::vector<pb::TypeTensor*> tensor_types_;
  std::vector<pb::Tensor*> tensors_;
  std::vector<Str> names_;

  uint64_t below(uint64_t n) { return n ? rng_() % n : 0; }
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }
  template <class V>
  auto& pick(V& v) {
    return v[below(v.size())];
  }
  Str save(std::string s) { return strings_.emplace_back(std::move(s)); }
  // Grows a list by one value made by `make`, shrinks it by one, or replaces one of its values.
  template <class T, class Make>
  void edit_list(std::vector<T>& list, Make make) {
    if (list.empty() || chance(20)) {
      list.push_back(make());
    } else if (chance(20)) {
      list.pop_back();
    } else {
      pick(list) = make();
    }
  }

  int64_t interesting_int() {
    static constexpr int64_t values[] = {0,
                                         1,
                                         -1,
                                         2,
                                         3,
                                         -2,
                                         4,
                                         7,
                                         8,
                                         16,
                                         127,
                                         128,
                                         255,
                                         256,
                                         65535,
                                         65536,
                                         std::numeric_limits<int32_t>::max(),
                                         std::numeric_limits<int32_t>::min(),
                                         int64_t{1} << 31,
                                         int64_t{1} << 32,
                                         int64_t{1} << 40,
                                         int64_t{1} << 62,
                                         std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::min() + 1};
    if (chance(40)) return static_cast<int64_t>(below(21)) - 10;
    return values[below(std::size(values))];
  }
  float interesting_float() {
    static constexpr float values[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 1e-8f, 1e-45f, 3.4e38f, -3.4e38f,
                                       std::numeric_limits<float>::infinity(),
                                       -std::numeric_limits<float>::infinity(),
                                       std::numeric_limits<float>::quiet_NaN()};
    if (chance(30)) return static_cast<float>(static_cast<int64_t>(below(2001)) - 1000) / 100.0f;
    return values[below(std::size(values))];
  }
  int32_t interesting_dtype() {
    static constexpr int32_t common[] = {1, 1, 1, 7, 7, 6, 9, 10, 11, 16, 2, 3, 8};
    if (chance(25)) return static_cast<int32_t>(below(30)) - 1;  // every enumerator, and -1, 27, 28 beyond them
    return common[below(std::size(common))];
  }
  Str some_name() {
    if (!names_.empty() && chance(80)) return pick(names_);
    if (chance(30)) return Str();
    return save("fz" + std::to_string(below(8)));
  }

  // ---- collection ----
  void collect() {
    graphs_.clear();
    node_lists_.clear();
    nodes_.clear();
    attrs_.clear();
    tensor_types_.clear();
    tensors_.clear();
    names_.clear();
    if (m_.graph) visit(*m_.graph);
    for (auto& t : m_.training_info) {
      if (t.initialization) visit(*t.initialization);
      if (t.algorithm) visit(*t.algorithm);
    }
    for (auto& f : m_.functions) {
      for (Str s : f.input) names_.push_back(s);
      for (Str s : f.output) names_.push_back(s);
      visit_nodes(f.node);
      for (auto& v : f.value_info) visit(v);
      for (auto& a : f.attribute_proto) visit(a);
    }
  }
  void visit(pb::Graph& g) {
    graphs_.push_back(&g);
    visit_nodes(g.node);
    for (auto& t : g.initializer) visit(t);
    for (auto& s : g.sparse_initializer) visit(s);
    for (auto* list : {&g.input, &g.output, &g.value_info})
      for (auto& v : *list) visit(v);
  }
  void visit_nodes(std::vector<pb::Node>& list) {
    node_lists_.push_back(&list);
    for (auto& n : list) {
      nodes_.push_back(&n);
      for (Str s : n.input) names_.push_back(s);
      for (Str s : n.output) names_.push_back(s);
      for (auto& a : n.attribute) visit(a);
    }
  }
  void visit(pb::Attribute& a) {
    attrs_.push_back(&a);
    if (a.t) visit(*a.t);
    for (auto& t : a.tensors) visit(t);
    if (a.g) visit(*a.g);
    for (auto& g : a.graphs) visit(g);
    if (a.sparse_tensor) visit(*a.sparse_tensor);
    for (auto& s : a.sparse_tensors) visit(s);
    if (a.tp) visit(*a.tp);
    for (auto& t : a.type_protos) visit(t);
  }
  void visit(pb::Tensor& t) {
    tensors_.push_back(&t);
    if (t.name) names_.push_back(*t.name);
  }
  void visit(pb::SparseTensor& s) {
    if (s.values) visit(*s.values);
    if (s.indices) visit(*s.indices);
  }
  void visit(pb::ValueInfo& v) {
    if (v.name) names_.push_back(*v.name);
    if (v.type) visit(*v.type);
  }
  void visit(pb::Type& t) {
    if (t.tensor_type) tensor_types_.push_back(&*t.tensor_type);
    if (t.sparse_tensor_type) tensor_types_.push_back(&*t.sparse_tensor_type);
    if (t.sequence_type && t.sequence_type->elem_type) visit(*t.sequence_type->elem_type);
    if (t.optional_type && t.optional_type->elem_type) visit(*t.optional_type->elem_type);
    if (t.map_type && t.map_type->value_type) visit(*t.map_type->value_type);
  }

  // ---- edits ----
  void edit_once() {
    for (int attempt = 0; attempt < 8; ++attempt) {
      switch (below(12)) {
        case 0:
          if (edit_dim()) return;
          break;
        case 1:
          if (edit_elem_type()) return;
          break;
        case 2:
          if (edit_tensor()) return;
          break;
        case 3:
        case 4:
          if (edit_attribute()) return;
          break;
        case 5:
          if (edit_op_type()) return;
          break;
        case 6:
        case 7:
          if (edit_edge()) return;
          break;
        case 8:
          if (edit_nodes()) return;
          break;
        case 9:
          if (edit_graph_io()) return;
          break;
        case 10:
          if (edit_subgraph()) return;
          break;
        case 11:
          if (edit_versions()) return;
          break;
      }
    }
  }

  bool edit_dim() {
    if (tensor_types_.empty()) return false;
    pb::TypeTensor& t = *pick(tensor_types_);
    if (!t.shape || chance(10)) {
      if (t.shape && chance(50)) {
        t.shape.reset();
      } else {
        t.shape.emplace();
        for (uint64_t i = below(5); i > 0; --i) t.shape->dim.emplace_back().dim_value = 1 + static_cast<int64_t>(below(4));
      }
      return true;
    }
    auto& dims = t.shape->dim;
    if (dims.empty() || chance(15)) {
      auto at = dims.begin() + static_cast<ptrdiff_t>(below(dims.size() + 1));
      dims.insert(at, pb::Dimension{})->dim_value = interesting_int();
      return true;
    }
    if (chance(15)) {
      dims.erase(dims.begin() + static_cast<ptrdiff_t>(below(dims.size())));
      return true;
    }
    pb::Dimension& d = pick(dims);
    switch (below(3)) {
      case 0:
        d.dim_param.reset();
        d.dim_value = interesting_int();
        break;
      case 1:
        d.dim_value.reset();
        d.dim_param = chance(50) ? save("N") : save("d" + std::to_string(below(4)));
        break;
      default:
        d.dim_value.reset();
        d.dim_param.reset();
        break;
    }
    return true;
  }

  bool edit_elem_type() {
    if (tensor_types_.empty()) return false;
    pick(tensor_types_)->elem_type = interesting_dtype();
    return true;
  }

  bool edit_tensor() {
    if (tensors_.empty()) return false;
    pb::Tensor& t = *pick(tensors_);
    switch (below(6)) {
      case 0:
        t.data_type = interesting_dtype();
        break;
      case 1:
        edit_list(t.dims, [&] { return chance(50) ? interesting_int() : static_cast<int64_t>(below(5)); });
        break;
      case 2:
        if (t.raw_data && !t.raw_data->empty()) {
          t.raw_data = t.raw_data->substr(0, below(t.raw_data->size()));
        } else {
          t.raw_data = save(std::string(below(64), static_cast<char>(below(256))));
        }
        break;
      case 3:
        // Values at the edges of their types, through the typed fields.
        if (!t.int64_data.empty()) {
          pick(t.int64_data) = interesting_int();
        } else if (!t.int32_data.empty()) {
          pick(t.int32_data) = static_cast<int32_t>(interesting_int());
        } else if (!t.float_data.empty()) {
          pick(t.float_data) = interesting_float();
        } else if (!t.double_data.empty()) {
          pick(t.double_data) = interesting_float();
        } else {
          t.int64_data.push_back(interesting_int());
        }
        break;
      case 4:
        // A raw tensor whose values are read as the edge cases of the kernels: bytes of NaN, Inf, INT_MIN.
        if (t.raw_data && !t.raw_data->empty()) {
          std::string raw(*t.raw_data);
          size_t at = below(raw.size());
          static constexpr unsigned char patterns[][4] = {
              {0x00, 0x00, 0xc0, 0x7f}, {0x00, 0x00, 0x80, 0x7f}, {0x00, 0x00, 0x00, 0x80}, {0xff, 0xff, 0xff, 0xff}};
          const unsigned char* p = patterns[below(std::size(patterns))];
          for (size_t i = 0; i < 4 && at + i < raw.size(); ++i) raw[at + i] = static_cast<char>(p[i]);
          t.raw_data = save(std::move(raw));
        } else {
          return false;
        }
        break;
      default:
        t.data_location = chance(50) ? 1 : 0;
        break;
    }
    return true;
  }

  bool edit_attribute() {
    if (attrs_.empty()) return add_attribute();
    pb::Attribute& a = *pick(attrs_);
    if (chance(8)) {
      a.type = static_cast<int32_t>(below(16));
      return true;
    }
    if (chance(5)) {
      a.ref_attr_name = chance(50) ? save("alpha") : Str();
      return true;
    }
    if (chance(5)) {
      a.name = save(chance(50) ? "axis" : "fz");
      return true;
    }
    switch (a.type.value_or(0)) {
      case 1:
        a.f = interesting_float();
        return true;
      case 2:
        a.i = interesting_int();
        return true;
      case 3:
        a.s = save(kStrings[below(std::size(kStrings))]);
        return true;
      case 6:
        edit_list(a.floats, [&] { return interesting_float(); });
        return true;
      case 7:
        edit_list(a.ints, [&] { return interesting_int(); });
        return true;
      case 8:
        edit_list(a.strings, [&] { return save(kStrings[below(std::size(kStrings))]); });
        return true;
      default:
        return add_attribute();
    }
  }

  // Moves a copy of an attribute onto another node (its name and value out of place), or deletes one.
  bool add_attribute() {
    if (nodes_.empty()) return false;
    pb::Node& n = *pick(nodes_);
    if (!n.attribute.empty() && chance(40)) {
      n.attribute.erase(n.attribute.begin() + static_cast<ptrdiff_t>(below(n.attribute.size())));
      return true;
    }
    if (!attrs_.empty() && chance(60)) {
      pb::Attribute copy = *pick(attrs_);
      n.attribute.push_back(std::move(copy));
      return true;
    }
    pb::Attribute a;
    static constexpr const char* names[] = {"axis", "axes", "perm", "keepdims", "to", "alpha", "mode", "group",
                                            "kernel_shape", "pads", "strides", "dilations", "k", "largest"};
    a.name = save(names[below(std::size(names))]);
    if (chance(50)) {
      a.type = 2;
      a.i = interesting_int();
    } else {
      a.type = 7;
      for (uint64_t i = below(5); i > 0; --i) a.ints.push_back(interesting_int());
    }
    n.attribute.push_back(std::move(a));
    return true;
  }

  bool edit_op_type() {
    if (nodes_.empty()) return false;
    pb::Node& n = *pick(nodes_);
    if (!m_.functions.empty() && chance(20)) {
      // A call to a model-local function, from anywhere: a function body calling itself is a cycle.
      pb::Function& f = pick(m_.functions);
      n.op_type = f.name;
      n.domain = f.domain;
      return true;
    }
    if (chance(10)) {
      n.domain = save(chance(50) ? "ai.onnx.ml" : "com.microsoft");
      return true;
    }
    n.op_type = save(kOpTypes[below(std::size(kOpTypes))]);
    return true;
  }

  bool edit_edge() {
    if (nodes_.empty()) return false;
    pb::Node& n = *pick(nodes_);
    switch (below(6)) {
      case 0:
      case 1:
        if (n.input.empty()) return false;
        pick(n.input) = some_name();
        return true;
      case 2:
        if (n.output.empty()) return false;
        pick(n.output) = some_name();
        return true;
      case 3:
        n.input.push_back(some_name());
        return true;
      case 4:
        if (n.input.empty()) return false;
        n.input.pop_back();
        return true;
      default:
        if (chance(50) && n.output.size() > 1) {
          n.output.pop_back();
        } else {
          n.output.push_back(save("fz_out" + std::to_string(below(4))));
        }
        return true;
    }
  }

  bool edit_nodes() {
    if (node_lists_.empty()) return false;
    std::vector<pb::Node>& list = *pick(node_lists_);
    switch (below(4)) {
      case 0:
        if (list.empty()) return false;
        list.erase(list.begin() + static_cast<ptrdiff_t>(below(list.size())));
        return true;
      case 1: {
        if (nodes_.empty()) return false;
        pb::Node copy = *pick(nodes_);  // from anywhere, into this list
        list.insert(list.begin() + static_cast<ptrdiff_t>(below(list.size() + 1)), std::move(copy));
        return true;
      }
      case 2:
        if (list.size() < 2) return false;
        std::swap(pick(list), pick(list));
        return true;
      default:
        if (list.empty()) return false;
        std::reverse(list.begin(), list.end());
        return true;
    }
  }

  bool edit_graph_io() {
    if (graphs_.empty()) return false;
    pb::Graph& g = *pick(graphs_);
    switch (below(5)) {
      case 0:
        if (g.input.empty()) return false;
        g.input.erase(g.input.begin() + static_cast<ptrdiff_t>(below(g.input.size())));
        return true;
      case 1:
        if (g.output.empty()) return false;
        g.output.erase(g.output.begin() + static_cast<ptrdiff_t>(below(g.output.size())));
        return true;
      case 2: {
        if (g.output.empty()) return false;
        pb::ValueInfo v = pick(g.output);
        v.name = some_name();
        g.output.push_back(std::move(v));
        return true;
      }
      case 3:
        if (g.initializer.empty()) return false;
        if (chance(50)) {
          g.initializer.erase(g.initializer.begin() + static_cast<ptrdiff_t>(below(g.initializer.size())));
        } else {
          pick(g.initializer).name = some_name();
        }
        return true;
      default:
        if (g.input.empty()) return false;
        pick(g.input).name = some_name();
        return true;
    }
  }

  bool edit_subgraph() {
    std::vector<pb::Attribute*> with_graph;
    for (pb::Attribute* a : attrs_)
      if (a->g) with_graph.push_back(a);
    if (with_graph.empty() || graphs_.empty()) return false;
    pb::Attribute& a = *pick(with_graph);
    pb::Graph& donor = *pick(graphs_);
    if (&donor == a.g.get()) return false;
    // A copy of a graph that may hold this attribute itself: the model grows a level deeper each time.
    pb::Graph copy = donor;
    *a.g = std::move(copy);
    return true;
  }

  bool edit_versions() {
    switch (below(3)) {
      case 0: {
        if (m_.opset_import.empty()) return false;
        static constexpr int64_t versions[] = {1, 6, 7, 9, 10, 11, 12, 13, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 28,
                                               29, 1000, 0, -1};
        pick(m_.opset_import).version = versions[below(std::size(versions))];
        return true;
      }
      case 1:
        m_.ir_version = static_cast<int64_t>(below(14));
        return true;
      default:
        if (m_.functions.empty()) return false;
        pick(m_.functions).domain = chance(50) ? save("") : save("local");
        return true;
    }
  }
};

}  // namespace

std::optional<std::string> mutate_model(std::string_view bytes, uint64_t seed) {
  // The decoded model's views point into `source`, which lives until the model is re-encoded.
  std::string source(bytes);
  pb::Model m;
  try {
    m = pb::parse_model(source, "<mutator>");
  } catch (const Error&) {
    return std::nullopt;
  }
  Edits edits(m, seed);
  edits.run();
  return pb::serialize_model(m);
}

bool split_run_input(std::string_view data, RunInput& out) {
  if (data.size() < 4) return false;
  uint32_t n = 0;
  std::memcpy(&n, data.data(), 4);  // little-endian hosts only, as the rest of onyx
  if (n > data.size() - 4) return false;
  out.model = data.substr(4, n);
  out.feeds = data.substr(4 + n);
  return true;
}

std::string join_run_input(std::string_view model, std::string_view feeds) {
  uint32_t n = static_cast<uint32_t>(model.size());
  std::string out(4, '\0');
  std::memcpy(out.data(), &n, 4);
  out.append(model);
  out.append(feeds);
  return out;
}

}  // namespace onyx::fuzz
