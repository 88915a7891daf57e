// The default-domain opset converter (include/onyx/version_convert.hpp). Conversion walks one opset at a time;
// at each step, every node whose op has a version at the boundary (the higher of the two opsets) goes through
// that op/version's rule in kRules below: a rewrite up, a rewrite down, a plain bump (the schema change cannot
// affect a node: added types, clarified wording, a new attribute or input whose default is the old behaviour), or
// no rule, which refuses the conversion naming the node. After each step every node's attributes and input count
// must fit the signature of the version it now binds to (spec_table), which refuses a down-conversion of a node
// that uses a newer attribute no rule drops. Last, the converted model goes through the type inference sessions
// run, at the target opset: element types a lower version lacks (bump rules do not check them) and the like are
// refusals too. Constants that rules add are Constant nodes (valid at any IR version, unlike initializers of IR-3
// models, which must be graph inputs); inputs that must become attributes are read from Constant nodes and from
// initializers that are not graph inputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <numeric>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "format/model_read.hpp"
#include "format/model_write.hpp"
#include "infer/inference.hpp"
#include "ir/spec_table.hpp"
#include "onyx/version_convert.hpp"
#include "opt/graph_edit.hpp"
#include "ops/registry.hpp"

namespace onyx::opt {
namespace version_convert_impl {

// Element k of a tensor: constants may view the model's bytes at any offset, so typed reads go through memcpy.
template <class T>
T element(const Tensor& t, size_t k) {
  T v;
  std::memcpy(&v, t.bytes().data() + k * sizeof(T), sizeof(T));
  return v;
}

// The inference that checks the result reads constants through typed pointers (as kernels do): the graph's
// constants that view the model's bytes at an offset their type cannot be read at are copied first.
void align_constants(Graph& g) {
  auto align = [](Tensor& t) {
    const int bits = dtype_bits(t.dtype());
    const size_t need = bits >= 16 ? std::min<size_t>(static_cast<size_t>(bits) / 8, 8) : 1;
    if (need > 1 && reinterpret_cast<uintptr_t>(t.bytes().data()) % need != 0) t = t.clone();
  };
  for (auto& [name, t] : g.initializers) align(t);
  for (auto& n : g.nodes)
    for (Attribute& a : n->attributes) {
      if (a.t) align(*a.t);
      for (Tensor& t : a.tensors) align(t);
    }
}

// One step of the chain in one graph: from opset `from` to `to` (adjacent), with the edit context of the graph.
class Step {
 public:
  Step(Model& m, PassContext& c, int64_t from, int64_t to, VersionConvertReport& r)
      : model(m), ctx(c), from(from), to(to), boundary(std::max(from, to)), report(r) {}
  Model& model;
  PassContext& ctx;
  const int64_t from, to, boundary;
  VersionConvertReport& report;

  static std::string who(const Node& n) {
    return cat("node ", n.name.empty() ? cat("#", n.index) : cat("'", n.name, "'"), " (", n.op_type, ")");
  }
  [[noreturn]] void refuse(const Node& n, const std::string& why) const {
    fail(model.label.empty() ? std::string("model") : model.label, ": cannot convert opset ", report.from, " to ",
         report.to, ": ", who(n), " at the step ", from, " -> ", to, ": ", why);
  }
  void note(const Node& n, const std::string& what) {
    report.notes.push_back(cat("opset ", from, " -> ", to, ": ", who(n), ": ", what));
  }

  Attribute* attr(Node& n, std::string_view name) const {
    for (Attribute& a : n.attributes)
      if (a.name == name) return &a;
    return nullptr;
  }
  void erase_attr(Node& n, std::string_view name) const {
    std::erase_if(n.attributes, [&](const Attribute& a) { return a.name == name; });
  }
  void set_attr(Node& n, Attribute a) const {
    erase_attr(n, a.name);
    n.attributes.push_back(std::move(a));
  }
  int64_t int_attr(Node& n, std::string_view name, int64_t dflt) const {
    const Attribute* a = attr(n, name);
    return a && a->type == AttributeType::Int ? a->i : dflt;
  }
  std::string str_attr(Node& n, std::string_view name, const std::string& dflt) const {
    const Attribute* a = attr(n, name);
    return a && a->type == AttributeType::String ? a->s : dflt;
  }
  // Removes an attribute the target version lacks when it holds the value that version always has.
  void drop_default_int(Node& n, std::string_view name, int64_t dflt) const {
    int64_t v = int_attr(n, name, dflt);
    if (v != dflt)
      refuse(n, cat("attribute ", name, " = ", v, " has no equivalent before opset ", boundary));
    erase_attr(n, name);
  }
  void drop_default_str(Node& n, std::string_view name, const std::string& dflt) const {
    std::string v = str_attr(n, name, dflt);
    if (v != dflt)
      refuse(n, cat("attribute ", name, " = '", v, "' has no equivalent before opset ", boundary));
    erase_attr(n, name);
  }
  void drop_all_ones(Node& n, std::string_view name) const {
    if (const Attribute* a = attr(n, name))
      for (int64_t v : a->ints)
        if (v != 1)
          refuse(n, cat("attribute ", name, " with values other than 1 has no equivalent before opset ", boundary));
    erase_attr(n, name);
  }

  bool has_input(const Node& n, size_t i) const { return i < n.inputs.size() && n.inputs[i]; }
  bool output_used(const Node& n, size_t i) const {
    if (i >= n.outputs.size() || !n.outputs[i]) return false;
    return n.outputs[i]->is_graph_output || !n.outputs[i]->consumers.empty();
  }
  void set_input(Node& n, size_t i, Value* v) {
    if (i >= n.inputs.size()) {
      if (!v) return;
      n.inputs.resize(i + 1, nullptr);
    }
    Value* old = n.inputs[i];
    ctx.set_input(n, i, v);
    while (!n.inputs.empty() && !n.inputs.back()) n.inputs.pop_back();
    // A Constant node whose value became an attribute goes when nothing else reads it.
    if (old && old->consumers.empty() && !old->is_graph_output && old->producer &&
        old->producer->graph == &ctx.graph && old->producer->op_type == "Constant" &&
        old->producer->outputs.size() == 1)
      ctx.remove_node(*old->producer);
  }

  // The value of `v` when it is a constant: a Constant node's output or an initializer no feed can replace.
  const Tensor* constant(const Value* v) {
    if (!v) return nullptr;
    if (v->initializer && !v->is_graph_input) return v->initializer;
    const Node* p = v->producer;
    if (!p || p->op_type != "Constant" || !(p->domain.empty() || p->domain == "ai.onnx")) return nullptr;
    for (const Attribute& a : p->attributes) {
      if (a.name == "value" && a.t) return &*a.t;
      if (a.name == "value_int") return &made_.emplace_back(int64_tensor({a.i}, {}));
      if (a.name == "value_ints")
        return &made_.emplace_back(int64_tensor(a.ints, {static_cast<int64_t>(a.ints.size())}));
      if (a.name == "value_float") return &made_.emplace_back(float_tensor({a.f}, {}));
      if (a.name == "value_floats")
        return &made_.emplace_back(float_tensor(a.floats, {static_cast<int64_t>(a.floats.size())}));
    }
    return nullptr;
  }
  std::vector<int64_t> const_ints(Node& n, size_t i, const char* what) {
    const Tensor* t = constant(n.inputs[i]);
    if (!t) refuse(n, cat("input ", i, " (", what, ") is not a constant, so it cannot become an attribute"));
    std::vector<int64_t> out(t->element_count());
    if (t->dtype() == DataType::Int64) {
      if (!out.empty()) std::memcpy(out.data(), t->bytes().data(), out.size() * sizeof(int64_t));
    } else if (t->dtype() == DataType::Int32) {
      for (size_t k = 0; k < out.size(); ++k) out[k] = element<int32_t>(*t, k);
    } else {
      refuse(n, cat("input ", i, " (", what, ") is not an int64 or int32 tensor"));
    }
    return out;
  }
  std::vector<double> const_doubles(Node& n, size_t i, const char* what) {
    const Tensor* t = constant(n.inputs[i]);
    if (!t) refuse(n, cat("input ", i, " (", what, ") is not a constant, so it cannot become an attribute"));
    std::vector<double> out(t->element_count());
    for (size_t k = 0; k < out.size(); ++k) {
      switch (t->dtype()) {
        case DataType::Float: out[k] = element<float>(*t, k); break;
        case DataType::Double: out[k] = element<double>(*t, k); break;
        case DataType::Float16: out[k] = half_to_float(element<uint16_t>(*t, k)); break;
        case DataType::BFloat16: out[k] = bfloat16_to_float(element<uint16_t>(*t, k)); break;
        case DataType::Int8: out[k] = element<int8_t>(*t, k); break;
        case DataType::UInt8: out[k] = element<uint8_t>(*t, k); break;
        case DataType::Int16: out[k] = element<int16_t>(*t, k); break;
        case DataType::UInt16: out[k] = element<uint16_t>(*t, k); break;
        case DataType::Int32: out[k] = element<int32_t>(*t, k); break;
        case DataType::UInt32: out[k] = element<uint32_t>(*t, k); break;
        case DataType::Int64: out[k] = static_cast<double>(element<int64_t>(*t, k)); break;
        case DataType::UInt64: out[k] = static_cast<double>(element<uint64_t>(*t, k)); break;
        default: refuse(n, cat("input ", i, " (", what, ") has an element type an attribute cannot hold"));
      }
    }
    return out;
  }

  static Tensor int64_tensor(const std::vector<int64_t>& v, std::vector<int64_t> dims) {
    Tensor t = Tensor::allocate(DataType::Int64, std::move(dims));
    if (!v.empty()) std::memcpy(t.mutable_data<int64_t>(), v.data(), v.size() * sizeof(int64_t));
    return t;
  }
  static Tensor float_tensor(const std::vector<float>& v, std::vector<int64_t> dims) {
    Tensor t = Tensor::allocate(DataType::Float, std::move(dims));
    if (!v.empty()) std::memcpy(t.mutable_data<float>(), v.data(), v.size() * sizeof(float));
    return t;
  }
  // A scalar of element type `dt` holding `x` (nullopt for types a converted attribute cannot have held).
  static std::optional<Tensor> scalar_tensor(DataType dt, double x) {
    Tensor t = Tensor::allocate(dt, {});
    switch (dt) {
      case DataType::Float: *t.mutable_data<float>() = static_cast<float>(x); break;
      case DataType::Double: *t.mutable_data<double>() = x; break;
      case DataType::Float16: *t.mutable_data<uint16_t>() = float_to_half(static_cast<float>(x)); break;
      case DataType::BFloat16: *t.mutable_data<uint16_t>() = float_to_bfloat16(static_cast<float>(x)); break;
      case DataType::Int8: *t.mutable_data<int8_t>() = static_cast<int8_t>(x); break;
      case DataType::UInt8: *t.mutable_data<uint8_t>() = static_cast<uint8_t>(x); break;
      case DataType::Int16: *t.mutable_data<int16_t>() = static_cast<int16_t>(x); break;
      case DataType::UInt16: *t.mutable_data<uint16_t>() = static_cast<uint16_t>(x); break;
      case DataType::Int32: *t.mutable_data<int32_t>() = static_cast<int32_t>(x); break;
      case DataType::UInt32: *t.mutable_data<uint32_t>() = static_cast<uint32_t>(x); break;
      case DataType::Int64: *t.mutable_data<int64_t>() = static_cast<int64_t>(x); break;
      case DataType::UInt64: *t.mutable_data<uint64_t>() = static_cast<uint64_t>(x); break;
      default: return std::nullopt;
    }
    return t;
  }

  // A Constant node placed before `before`, holding `t`; returns its output.
  Value* add_const(Node& before, const std::string& base, Tensor t) {
    Value& v = ctx.graph.add_value(ctx.fresh_name(before.name.empty() ? base : before.name + "_" + base));
    Node& c = ctx.insert_node(before, "Constant", "", {}, {&v}, v.name);
    Attribute a;
    a.name = "value";
    a.type = AttributeType::Tensor;
    t.set_name(v.name);
    a.t = std::move(t);
    c.attributes.push_back(std::move(a));
    return &v;
  }
  Value* new_value(const Node& near, const std::string& base) {
    return &ctx.graph.add_value(ctx.fresh_name(near.name.empty() ? base : near.name + "_" + base));
  }

  // Attribute `name` (ints, or one int) becomes a 1-D int64 input `i`; absent stays absent.
  void ints_attr_to_input(Node& n, const char* name, size_t i) {
    Attribute* a = attr(n, name);
    if (!a) return;
    std::vector<int64_t> v = a->type == AttributeType::Int ? std::vector<int64_t>{a->i} : a->ints;
    std::vector<int64_t> dims{static_cast<int64_t>(v.size())};
    erase_attr(n, name);
    set_input(n, i, add_const(n, name, int64_tensor(v, dims)));
    note(n, cat("attribute ", name, " -> input ", i));
  }
  // Constant int input `i` becomes attribute `name` (ints, or one int when `one`); absent stays absent.
  void input_to_ints_attr(Node& n, size_t i, const char* name, bool one = false) {
    if (!has_input(n, i)) return;
    std::vector<int64_t> v = const_ints(n, i, name);
    if (one && v.size() != 1) refuse(n, cat("input ", i, " (", name, ") does not hold one value"));
    set_attr(n, one ? make_attr_int(name, v[0]) : make_attr_ints(name, v));
    set_input(n, i, nullptr);
    note(n, cat("input ", i, " -> attribute ", name));
  }
  // Rank of a node input, -1 when unknown.
  int64_t rank(const Value* v) { return v ? ctx.analysis().rank(v) : -1; }
  std::optional<std::vector<int64_t>> dims(const Value* v) {
    return v ? ctx.analysis().static_dims(v) : std::nullopt;
  }
  DataType dtype(const Value* v) { return v ? ctx.analysis().dtype(v) : DataType::Undefined; }

 private:
  std::deque<Tensor> made_;  // tensors made from Constant's value_int(s)/value_float(s)
};

using Fn = void (*)(Step&, Node&);
void bump(Step&, Node&) {}

// ---- Rewrites ----

void drop_consumed_inputs(Step& s, Node& n) { s.erase_attr(n, "consumed_inputs"); }

// Legacy broadcasting (opset < 7: attributes broadcast and axis) against numpy-style broadcasting.
void broadcast_up(Step& s, Node& n) {
  if (s.int_attr(n, "broadcast", 0) != 0 && s.attr(n, "axis")) {
    int64_t ra = s.rank(n.inputs[0]), rb = s.rank(n.inputs.size() > 1 ? n.inputs[1] : nullptr);
    if (ra < 0 || rb < 0 || s.int_attr(n, "axis", 0) != ra - rb)
      s.refuse(n, "legacy broadcast with an axis other than the trailing one is not converted");
  }
  s.erase_attr(n, "broadcast");
  s.erase_attr(n, "axis");
}
void broadcast_down(Step& s, Node& n) {
  if (n.inputs.size() < 2) return;
  auto a = s.dims(n.inputs[0]), b = s.dims(n.inputs[1]);
  if (!a || !b) s.refuse(n, "the input shapes are not known, so legacy broadcasting cannot be decided");
  if (*a == *b) return;
  const int64_t nb = std::accumulate(b->begin(), b->end(), int64_t{1}, std::multiplies<>());
  const bool suffix =
      b->size() <= a->size() && std::equal(b->begin(), b->end(), a->end() - static_cast<ptrdiff_t>(b->size()));
  if (nb != 1 && !suffix) s.refuse(n, "the shapes broadcast in a way legacy broadcasting (B a suffix of A) cannot");
  s.set_attr(n, make_attr_int("broadcast", 1));
  s.note(n, "broadcast = 1");
}
// Variadic ops whose inputs had to have one shape before opset 8.
void same_shapes_down(Step& s, Node& n) {
  std::optional<std::vector<int64_t>> first;
  for (Value* v : n.inputs) {
    auto d = s.dims(v);
    if (!d) s.refuse(n, "input shapes are not known, and before opset 8 they must be equal");
    if (first && *d != *first) s.refuse(n, "inputs of different shapes do not broadcast before opset 8");
    first = d;
  }
}
// PRelu before 7 applied a 1-D slope of C values along axis 1 (as PyTorch exports it); from 7 the slope broadcasts
// numpy-style, so it becomes [C, 1, ...].
void prelu_up(Step& s, Node& n) {
  if (n.inputs.size() < 2) return;
  const int64_t r = s.rank(n.inputs[0]);
  auto x = s.dims(n.inputs[0]), slope = s.dims(n.inputs[1]);
  if (!slope || slope->size() != 1 || r <= 2) return;
  const int64_t c = (*slope)[0];
  if (c == 1 || (x && (*x)[static_cast<size_t>(r - 1)] == c && (*x)[1] != c)) return;  // already broadcasts
  if (!x || (*x)[1] != c) s.refuse(n, "the slope's length is not the size of axis 1");
  std::vector<int64_t> dims(static_cast<size_t>(r - 1), 1);
  dims[0] = c;
  Value* shape = s.add_const(n, "slope_shape", Step::int64_tensor(dims, {static_cast<int64_t>(dims.size())}));
  Value* reshaped = s.new_value(n, "slope");
  s.ctx.insert_node(n, "Reshape", "", {n.inputs[1], shape}, {reshaped}, reshaped->name);
  s.set_input(n, 1, reshaped);
  s.note(n, "slope reshaped to broadcast along axis 1");
}
void prelu_down(Step& s, Node& n) {
  auto x = s.dims(n.inputs[0]), slope = s.dims(n.inputs[1]);
  if (!x || !slope) s.refuse(n, "the input shapes are not known");
  int64_t count = std::accumulate(slope->begin(), slope->end(), int64_t{1}, std::multiplies<>());
  if (count != 1 && *x != *slope) s.refuse(n, "slope does not have X's shape and is not one value");
}

void reshape_up(Step& s, Node& n) {
  if (!s.attr(n, "shape")) s.refuse(n, "Reshape has no shape attribute");
  s.ints_attr_to_input(n, "shape", 1);
}
void reshape_down(Step& s, Node& n) { s.input_to_ints_attr(n, 1, "shape"); }
void axes_up(Step& s, Node& n) { s.ints_attr_to_input(n, "axes", 1); }
void axes_down(Step& s, Node& n) { s.input_to_ints_attr(n, 1, "axes"); }
void reduce_down(Step& s, Node& n) {
  s.drop_default_int(n, "noop_with_empty_axes", 0);
  s.input_to_ints_attr(n, 1, "axes");
}
void split_up(Step& s, Node& n) { s.ints_attr_to_input(n, "split", 1); }
void split_down(Step& s, Node& n) { s.input_to_ints_attr(n, 1, "split"); }
// Split-18's num_outputs: the last part may be smaller, which Split-13 only expresses with explicit sizes.
void split18_down(Step& s, Node& n) {
  const Attribute* a = s.attr(n, "num_outputs");
  if (!a) return;
  const int64_t parts = a->i;
  s.erase_attr(n, "num_outputs");
  if (s.has_input(n, 1)) return;
  auto d = s.dims(n.inputs[0]);
  int64_t axis = s.int_attr(n, "axis", 0);
  if (!d) s.refuse(n, "num_outputs with an input of unknown shape has no equivalent before opset 18");
  if (axis < 0) axis += static_cast<int64_t>(d->size());
  if (axis < 0 || axis >= static_cast<int64_t>(d->size()) || parts <= 0)
    s.refuse(n, "axis or num_outputs out of range");
  const int64_t len = (*d)[static_cast<size_t>(axis)], chunk = (len + parts - 1) / parts;
  if (len % parts == 0) return;  // equal parts: Split-13's default
  std::vector<int64_t> sizes;
  for (int64_t left = len; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
  s.set_input(n, 1, s.add_const(n, "split", Step::int64_tensor(sizes, {static_cast<int64_t>(sizes.size())})));
  s.note(n, "num_outputs -> split sizes");
}

void slice_up(Step& s, Node& n) {
  if (!s.attr(n, "starts") || !s.attr(n, "ends")) s.refuse(n, "Slice lacks starts or ends");
  s.ints_attr_to_input(n, "starts", 1);
  s.ints_attr_to_input(n, "ends", 2);
  s.ints_attr_to_input(n, "axes", 3);
}
void slice_down(Step& s, Node& n) {
  if (s.has_input(n, 4)) {
    for (int64_t st : s.const_ints(n, 4, "steps"))
      if (st != 1) s.refuse(n, "steps other than 1 have no equivalent before opset 10");
    s.set_input(n, 4, nullptr);
  }
  s.input_to_ints_attr(n, 3, "axes");
  s.input_to_ints_attr(n, 2, "ends");
  s.input_to_ints_attr(n, 1, "starts");
}

// Slice-10's axes cannot be negative.
void slice11_down(Step& s, Node& n) {
  if (!s.has_input(n, 3)) return;
  std::vector<int64_t> axes = s.const_ints(n, 3, "axes");
  if (std::none_of(axes.begin(), axes.end(), [](int64_t a) { return a < 0; })) return;
  const int64_t r = s.rank(n.inputs[0]);
  if (r < 0) s.refuse(n, "negative axes with an input of unknown rank have no equivalent before opset 11");
  for (int64_t& a : axes)
    if (a < 0) a += r;
  s.set_input(n, 3, s.add_const(n, "axes", Step::int64_tensor(axes, {static_cast<int64_t>(axes.size())})));
  s.note(n, "negative axes made positive");
}

void topk_up(Step& s, Node& n) {
  if (!s.attr(n, "k")) s.refuse(n, "TopK has no k attribute");
  s.ints_attr_to_input(n, "k", 1);
}
void topk_down(Step& s, Node& n) { s.input_to_ints_attr(n, 1, "k", true); }
void topk11_down(Step& s, Node& n) {
  s.drop_default_int(n, "largest", 1);
  s.drop_default_int(n, "sorted", 1);
}

// Float attributes that became inputs of the data's element type.
void float_attr_to_input(Step& s, Node& n, const char* name, size_t i) {
  const Attribute* a = s.attr(n, name);
  if (!a) return;
  const double x = a->f;
  DataType dt = s.dtype(n.inputs[0]);
  std::optional<Tensor> t = Step::scalar_tensor(dt, x);
  if (!t) s.refuse(n, cat("the element type of input 0 is not known, so attribute ", name, " cannot become an input"));
  s.erase_attr(n, name);
  s.set_input(n, i, s.add_const(n, name, std::move(*t)));
  s.note(n, cat("attribute ", name, " -> input ", i));
}
void input_to_float_attr(Step& s, Node& n, size_t i, const char* name) {
  if (!s.has_input(n, i)) return;
  std::vector<double> v = s.const_doubles(n, i, name);
  if (v.size() != 1) s.refuse(n, cat("input ", i, " (", name, ") does not hold one value"));
  s.set_attr(n, make_attr_float(name, static_cast<float>(v[0])));
  s.set_input(n, i, nullptr);
  s.note(n, cat("input ", i, " -> attribute ", name));
}

void clip_up(Step& s, Node& n) {
  // Clip-6's absent bounds are -/+FLT_MAX for float types: absent inputs mean the same.
  float_attr_to_input(s, n, "min", 1);
  float_attr_to_input(s, n, "max", 2);
}
void clip_down(Step& s, Node& n) {
  input_to_float_attr(s, n, 2, "max");
  input_to_float_attr(s, n, 1, "min");
}

void pad2_up(Step& s, Node& n) {
  if (Attribute* a = s.attr(n, "paddings")) a->name = "pads";
}
void pad2_down(Step& s, Node& n) {
  if (Attribute* a = s.attr(n, "pads")) a->name = "paddings";
}
void pad_up(Step& s, Node& n) {
  if (!s.attr(n, "pads")) s.refuse(n, "Pad has no pads attribute");
  s.ints_attr_to_input(n, "pads", 1);
  if (const Attribute* v = s.attr(n, "value"); v && v->f == 0.0f) s.erase_attr(n, "value");  // the input's default
  float_attr_to_input(s, n, "value", 2);
}
void pad_down(Step& s, Node& n) {
  input_to_float_attr(s, n, 2, "value");
  s.input_to_ints_attr(n, 1, "pads");
}
void pad18_down(Step& s, Node& n) {
  if (s.has_input(n, 3)) s.refuse(n, "the axes input has no equivalent before opset 18");
}
void pad19_down(Step& s, Node& n) {
  if (s.str_attr(n, "mode", "constant") == "wrap") s.refuse(n, "mode 'wrap' does not exist before opset 19");
}

void dropout_is_test_up(Step& s, Node& n) { s.erase_attr(n, "is_test"); }
void dropout_is_test_down(Step& s, Node& n) {
  // Dropout-6 defaults to training (is_test = 0); Dropout-7 always infers.
  s.set_attr(n, make_attr_int("is_test", 1));
}
void dropout_mask(Step& s, Node& n) {
  if (s.output_used(n, 1)) s.refuse(n, "the mask output changes element type (to bool) at opset 10");
}
void dropout12_up(Step& s, Node& n) {
  if (const Attribute* a = s.attr(n, "ratio")) {
    const float r = a->f;
    s.erase_attr(n, "ratio");
    s.set_input(n, 1, s.add_const(n, "ratio", Step::float_tensor({r}, {})));
    s.note(n, "attribute ratio -> input 1");
  }
}
void dropout12_down(Step& s, Node& n) {
  if (s.has_input(n, 2)) {
    const Tensor* t = s.constant(n.inputs[2]);
    if (!t || t->dtype() != DataType::Bool || t->element_count() != 1 || element<uint8_t>(*t, 0) != 0)
      s.refuse(n, "training_mode is not the constant false");
    s.set_input(n, 2, nullptr);
  }
  s.erase_attr(n, "seed");  // only used in training mode
  input_to_float_attr(s, n, 1, "ratio");
}

void bn_is_test_up(Step& s, Node& n) {
  if (s.int_attr(n, "is_test", 0) == 0 && n.outputs.size() > 1)
    s.refuse(n, "training-mode BatchNormalization (is_test = 0 with statistics outputs) is not converted");
  s.erase_attr(n, "is_test");
}
void bn_is_test_down(Step& s, Node& n) {
  if (n.outputs.size() > 1) s.refuse(n, "BatchNormalization with statistics outputs is not converted");
  s.set_attr(n, make_attr_int("is_test", 1));
}
void bn_spatial_up(Step& s, Node& n) { s.drop_default_int(n, "spatial", 1); }
void bn14_up(Step& s, Node& n) {
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i]) s.refuse(n, "the statistics outputs change meaning at opset 14 (training mode)");
}
void bn14_down(Step& s, Node& n) {
  s.drop_default_int(n, "training_mode", 0);
  bn14_up(s, n);
}

void gemm7_up(Step& s, Node& n) { s.erase_attr(n, "broadcast"); }
void gemm7_down(Step& s, Node& n) { s.set_attr(n, make_attr_int("broadcast", 1)); }
void gemm11_down(Step& s, Node& n) {
  if (!s.has_input(n, 2)) s.refuse(n, "input C is required before opset 11");
}
void concat4_up(Step& s, Node& n) {
  if (!s.attr(n, "axis")) s.set_attr(n, make_attr_int("axis", 1));  // Concat-1's default
}
void rnn7_up(Step& s, Node& n) { s.drop_default_int(n, "output_sequence", 0); }
void gru3_down(Step& s, Node& n) { s.drop_default_int(n, "linear_before_reset", 0); }
void layout_down(Step& s, Node& n) { s.drop_default_int(n, "layout", 0); }
void select_last_down(Step& s, Node& n) { s.drop_default_int(n, "select_last_index", 0); }
void batch_dims_down(Step& s, Node& n) { s.drop_default_int(n, "batch_dims", 0); }
void d2s_mode_down(Step& s, Node& n) { s.drop_default_str(n, "mode", "DCR"); }
void reduction16_down(Step& s, Node& n) { s.drop_default_str(n, "reduction", "none"); }
void reduction18_down(Step& s, Node& n) {
  std::string r = s.str_attr(n, "reduction", "none");
  if (r == "min" || r == "max") s.refuse(n, cat("reduction '", r, "' does not exist before opset 18"));
}
void shape15_down(Step& s, Node& n) {
  s.drop_default_int(n, "start", 0);
  if (s.attr(n, "end")) s.refuse(n, "attribute end has no equivalent before opset 15");
}
// Identity took sequences from 14 and optionals from 16.
void identity14_down(Step& s, Node& n) {
  if (s.ctx.analysis().type(n.inputs[0]).kind == Type::Kind::Sequence) s.refuse(n, "sequences need Identity-14");
}
void identity16_down(Step& s, Node& n) {
  if (s.ctx.analysis().type(n.inputs[0]).kind == Type::Kind::Optional) s.refuse(n, "optionals need Identity-16");
}
void reshape14_down(Step& s, Node& n) { s.drop_default_int(n, "allowzero", 0); }
void saturate_down(Step& s, Node& n) { s.erase_attr(n, "saturate"); }  // only affects float8 targets
// Casts to the float8 types are refused below 24, where their rounding and saturation rules were revised.
void cast24_down(Step& s, Node& n) {
  s.drop_default_str(n, "round_mode", "up");
  DataType to = n.op_type == "Cast" ? static_cast<DataType>(s.int_attr(n, "to", 0))
                                    : s.dtype(n.inputs.size() > 1 ? n.inputs[1] : nullptr);
  if (to == DataType::Undefined && n.op_type == "CastLike") s.refuse(n, "the target element type is not known");
  if ((to >= DataType::Float8E4M3FN && to <= DataType::Float8E5M2FNUZ) || to == DataType::Float8E8M0)
    s.refuse(n, cat("casts to ", dtype_name(to), " changed at opset 24"));
}
void maxpool8_down(Step& s, Node& n) {
  if (n.outputs.size() > 1 && n.outputs[1]) s.refuse(n, "the Indices output does not exist before opset 8");
  s.drop_default_int(n, "storage_order", 0);
}
void pool_ceil_dil_down(Step& s, Node& n) {
  s.drop_default_int(n, "ceil_mode", 0);
  s.drop_all_ones(n, "dilations");
}
void count_include_pad_down(Step& s, Node& n) { s.drop_default_int(n, "count_include_pad", 0); }
void dilations_down(Step& s, Node& n) { s.drop_all_ones(n, "dilations"); }
void roialign16_up(Step& s, Node& n) {
  // RoiAlign-10 behaved as 'output_half_pixel'; RoiAlign-16's default is 'half_pixel'.
  if (!s.attr(n, "coordinate_transformation_mode"))
    s.set_attr(n, make_attr_string("coordinate_transformation_mode", "output_half_pixel"));
}
void roialign16_down(Step& s, Node& n) {
  s.drop_default_str(n, "coordinate_transformation_mode", "output_half_pixel");
}
void quant_axis_down(Step& s, Node& n) {
  auto d = s.dims(n.inputs.size() > 1 ? n.inputs[1] : nullptr);
  if (!d || std::accumulate(d->begin(), d->end(), int64_t{1}, std::multiplies<>()) != 1)
    s.refuse(n, "per-axis quantization (a scale of more than one value) does not exist before opset 13");
  s.erase_attr(n, "axis");
}
void quant21_down(Step& s, Node& n) {
  s.drop_default_int(n, "block_size", 0);
  s.drop_default_int(n, "output_dtype", 0);
}
void quant23_down(Step& s, Node& n) {
  s.drop_default_int(n, "precision", 0);
  s.drop_default_int(n, "output_dtype", 0);
}
void constant11_down(Step& s, Node& n) {
  if (s.attr(n, "sparse_value")) s.refuse(n, "a sparse_value does not exist before opset 11");
}
void constant12_down(Step& s, Node& n) {
  Attribute* a = nullptr;
  for (const char* k : {"value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings"})
    if ((a = s.attr(n, k))) break;
  if (!a) return;
  Tensor t;
  const std::string name = a->name;
  if (name == "value_float") t = Step::float_tensor({a->f}, {});
  if (name == "value_floats") t = Step::float_tensor(a->floats, {static_cast<int64_t>(a->floats.size())});
  if (name == "value_int") t = Step::int64_tensor({a->i}, {});
  if (name == "value_ints") t = Step::int64_tensor(a->ints, {static_cast<int64_t>(a->ints.size())});
  if (name == "value_string") t = Tensor::strings("", {}, {a->s});
  if (name == "value_strings") t = Tensor::strings("", {static_cast<int64_t>(a->strings.size())}, a->strings);
  s.erase_attr(n, name);
  t.set_name(n.outputs[0] ? n.outputs[0]->name : n.name);
  Attribute v;
  v.name = "value";
  v.type = AttributeType::Tensor;
  v.t = std::move(t);
  s.set_attr(n, std::move(v));
  s.note(n, cat(name, " -> value"));
}
void gridsample20_up(Step& s, Node& n) {
  if (Attribute* a = s.attr(n, "mode")) {
    if (a->s == "bilinear") a->s = "linear";
    if (a->s == "bicubic") a->s = "cubic";
  }
}
void gridsample20_down(Step& s, Node& n) {
  if (int64_t r = s.rank(n.inputs[0]); r != 4) s.refuse(n, "GridSample before opset 20 takes 4-D inputs only");
  if (Attribute* a = s.attr(n, "mode")) {
    if (a->s == "linear") a->s = "bilinear";
    if (a->s == "cubic") a->s = "bicubic";
  }
}

void upsample9_up(Step& s, Node& n) {
  const Attribute* a = s.attr(n, "scales");
  if (!a) s.refuse(n, "Upsample has no scales attribute");
  std::vector<float> sc = a->floats;
  s.erase_attr(n, "scales");
  s.set_input(n, 1, s.add_const(n, "scales", Step::float_tensor(sc, {static_cast<int64_t>(sc.size())})));
  s.note(n, "attribute scales -> input 1");
}
void upsample9_down(Step& s, Node& n) {
  std::vector<double> v = s.const_doubles(n, 1, "scales");
  s.set_attr(n, make_attr_floats("scales", std::vector<float>(v.begin(), v.end())));
  s.set_input(n, 1, nullptr);
  s.note(n, "input scales -> attribute");
}
void upsample_to_resize(Step& s, Node& n) {
  n.op_type = "Resize";  // Resize-10 is Upsample-9 under a new name
  s.note(n, "Upsample -> Resize");
}
void resize_to_upsample(Step& s, Node& n) {
  n.op_type = "Upsample";
  s.note(n, "Resize -> Upsample");
}
void resize11_up(Step& s, Node& n) {
  // Resize-10 maps output x to input x / scale and, for nearest, takes the floor.
  Value* scales = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  s.set_input(n, 2, scales);  // first: replacing input 1 would drop a Constant that nothing else reads
  s.set_input(n, 1, s.add_const(n, "roi", Step::float_tensor({}, {0})));
  s.set_attr(n, make_attr_string("coordinate_transformation_mode", "asymmetric"));
  if (s.str_attr(n, "mode", "nearest") == "nearest") s.set_attr(n, make_attr_string("nearest_mode", "floor"));
  s.note(n, "roi input added; coordinate_transformation_mode = asymmetric");
}
void resize11_down(Step& s, Node& n) {
  if (s.has_input(n, 3)) s.refuse(n, "the sizes input has no equivalent before opset 11");
  if (!s.has_input(n, 2)) s.refuse(n, "no scales input");
  const std::string mode = s.str_attr(n, "mode", "nearest");
  if (mode != "nearest" && mode != "linear") s.refuse(n, cat("mode '", mode, "' does not exist before opset 11"));
  s.drop_default_str(n, "coordinate_transformation_mode", "asymmetric");
  if (mode == "nearest") s.drop_default_str(n, "nearest_mode", "floor");
  s.erase_attr(n, "nearest_mode");
  s.drop_default_int(n, "exclude_outside", 0);
  s.erase_attr(n, "cubic_coeff_a");        // cubic only
  s.erase_attr(n, "extrapolation_value");  // tf_crop_and_resize only
  Value* scales = n.inputs[2];
  s.set_input(n, 1, scales);  // first: dropping input 2 would drop a Constant that nothing else reads
  s.set_input(n, 2, nullptr);
  s.note(n, "roi input dropped");
}
void resize13_down(Step& s, Node& n) {
  // Resize-11 requires roi and scales; empty tensors mean "not given".
  if (!s.has_input(n, 1)) s.set_input(n, 1, s.add_const(n, "roi", Step::float_tensor({}, {0})));
  if (!s.has_input(n, 2)) s.set_input(n, 2, s.add_const(n, "scales", Step::float_tensor({}, {0})));
}
void resize18_up(Step& s, Node& n) {
  if (s.str_attr(n, "coordinate_transformation_mode", "") == "tf_half_pixel_for_nn")
    s.refuse(n, "coordinate_transformation_mode 'tf_half_pixel_for_nn' does not exist from opset 18");
}
void resize18_down(Step& s, Node& n) {
  s.drop_default_int(n, "antialias", 0);
  if (s.attr(n, "axes")) s.refuse(n, "attribute axes has no equivalent before opset 18");
  s.drop_default_str(n, "keep_aspect_ratio_policy", "stretch");
}
void resize19_down(Step& s, Node& n) {
  if (s.str_attr(n, "coordinate_transformation_mode", "") == "half_pixel_symmetric")
    s.refuse(n, "coordinate_transformation_mode 'half_pixel_symmetric' does not exist before opset 19");
}
void scatter_to_elements(Step& s, Node& n) {
  n.op_type = "ScatterElements";
  s.note(n, "Scatter -> ScatterElements");
}
void elements_to_scatter(Step& s, Node& n) {
  n.op_type = "Scatter";
  s.note(n, "ScatterElements -> Scatter");
}

// Softmax, LogSoftmax and Hardmax before opset 13 flatten the input to 2-D at `axis` (default 1) and normalize
// each row; from 13 they normalize along the one axis (default -1).
void softmax13_up(Step& s, Node& n) {
  const int64_t axis = s.int_attr(n, "axis", 1), r = s.rank(n.inputs[0]);
  if (r >= 0 && (axis == r - 1 || axis == -1)) {
    s.set_attr(n, make_attr_int("axis", -1));
    return;
  }
  // Flatten(axis) -> op(axis = 1) -> Reshape to the input's shape.
  Value* x = n.inputs[0];
  Value* flat = s.new_value(n, "flat");
  Value* shape = s.new_value(n, "shape");
  Value* y = s.new_value(n, "2d");
  Node& f = s.ctx.insert_node(n, "Flatten", "", {x}, {flat}, flat->name);
  f.attributes.push_back(make_attr_int("axis", axis));
  s.ctx.insert_node(n, "Shape", "", {x}, {shape}, shape->name);
  Node& op = s.ctx.insert_node(n, n.op_type, "", {flat}, {y}, y->name);
  op.attributes.push_back(make_attr_int("axis", 1));
  Value* out = n.outputs[0];
  const std::string name = n.name, kind = n.op_type;
  s.note(n, "expressed as Flatten, " + kind + " and Reshape");
  s.ctx.replace_node(n, "Reshape", "", {y, shape}, {out}, name);
}
void softmax13_down(Step& s, Node& n) {
  const int64_t r = s.rank(n.inputs[0]);
  int64_t axis = s.int_attr(n, "axis", -1);
  if (axis == -1 || (r >= 0 && axis == r - 1)) {
    if (r < 0 && s.to < 11) s.refuse(n, "the input's rank is not known (needed below opset 11)");
    s.set_attr(n, make_attr_int("axis", s.to >= 11 ? -1 : r - 1));
    return;
  }
  if (r < 0) s.refuse(n, "the input's rank is not known, so the axis cannot be moved last");
  if (axis < 0) axis += r;
  // Transpose the axis last, normalize there, transpose back.
  std::vector<int64_t> perm, inverse(static_cast<size_t>(r));
  for (int64_t k = 0; k < r; ++k)
    if (k != axis) perm.push_back(k);
  perm.push_back(axis);
  for (int64_t k = 0; k < r; ++k) inverse[static_cast<size_t>(perm[static_cast<size_t>(k)])] = k;
  Value* t = s.new_value(n, "last");
  Value* y = s.new_value(n, "norm");
  Node& t1 = s.ctx.insert_node(n, "Transpose", "", {n.inputs[0]}, {t}, t->name);
  t1.attributes.push_back(make_attr_ints("perm", perm));
  Node& op = s.ctx.insert_node(n, n.op_type, "", {t}, {y}, y->name);
  op.attributes.push_back(make_attr_int("axis", r - 1));
  Value* out = n.outputs[0];
  const std::string name = n.name;
  s.note(n, "axis moved last with Transpose");
  Node& t2 = s.ctx.replace_node(n, "Transpose", "", {y}, {out}, name);
  t2.attributes.push_back(make_attr_ints("perm", inverse));
}

// ---- The table: for each op version, its rewrite up (from the previous opset) and down (to it) ----
// nullptr: refused in that direction. Bumps are versions whose schema change cannot alter a node of the older
// version (new element types, new optional inputs or attributes defaulting to the old behaviour, wording); their
// down direction relies on the signature check for newer attributes and inputs (element types are not checked).

struct Rule {
  int version;
  const char* ops;  // space-separated
  Fn up, down;
};

const Rule kRules[] = {
    {2, "Pad", pad2_up, pad2_down},
    {3, "GRU", bump, gru3_down},
    {4, "Concat", concat4_up, bump},
    {5, "Reshape", reshape_up, reshape_down},
    {6,
     "Abs Add BatchNormalization Ceil Clip Div Dropout Elu Exp Floor HardSigmoid InstanceNormalization LeakyRelu Log "
     "Max Mean Min Mul Neg PRelu Reciprocal Relu Selu Sigmoid Sqrt Sub Sum Tanh",
     drop_consumed_inputs, bump},
    {6, "Gemm", bump, bump},
    {7, "Add And Div Equal Greater Less Mul Or Pow Sub Xor", broadcast_up, broadcast_down},
    {7, "PRelu", prelu_up, prelu_down},
    {7, "AveragePool", bump, count_include_pad_down},
    {7, "BatchNormalization", bn_is_test_up, bn_is_test_down},
    {7, "Dropout", dropout_is_test_up, dropout_is_test_down},
    {7, "GRU LSTM RNN", rnn7_up, bump},
    {7, "Gemm", gemm7_up, gemm7_down},
    {8, "Max Mean Min Sum", bump, same_shapes_down},
    {8, "MaxPool", bump, maxpool8_down},
    {9, "Cast Constant Flatten Gemm Greater Less MatMul PRelu", bump, bump},
    {9, "BatchNormalization", bn_spatial_up, bump},
    {9, "Upsample", upsample9_up, upsample9_down},
    {10, "AveragePool MaxPool", bump, pool_ceil_dil_down},
    {10, "Dropout", dropout_mask, dropout_mask},
    {10, "Slice", slice_up, slice_down},
    {10, "TopK", topk_up, topk_down},
    {10, "Upsample", upsample_to_resize, bump},
    {10, "Resize", nullptr, resize_to_upsample},
    {11,
     "ArgMax ArgMin AveragePool Compress Concat Conv ConvTranspose Equal Flatten Gather Hardmax If LogSoftmax Loop "
     "LpPool MaxPool MaxUnpool NonMaxSuppression ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax "
     "ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Scan Softmax Split Squeeze Unsqueeze",
     bump, bump},
    {11, "Clip", clip_up, clip_down},
    {11, "Slice", bump, slice11_down},
    {11, "OneHot", bump, nullptr},  // negative indices count from the end from 11 on
    {11, "Pad", pad_up, pad_down},
    {11, "Gemm", bump, gemm11_down},
    {11, "Constant", bump, constant11_down},
    {11, "DepthToSpace", bump, d2s_mode_down},
    {11, "TopK", bump, topk11_down},
    {11, "Resize", resize11_up, resize11_down},
    {11, "Scatter", scatter_to_elements, bump},
    {11, "ScatterElements", nullptr, elements_to_scatter},
    {12, "Clip Max Min Pow ReduceMax ReduceMin MaxPool", bump, bump},
    {12, "ArgMax ArgMin", bump, select_last_down},
    {12, "Constant", bump, constant12_down},
    {12, "Dropout", dropout12_up, dropout12_down},
    {12, "GatherND", bump, batch_dims_down},
    {13,
     "Abs Add ArgMax ArgMin Cast Ceil Clip Concat Constant DepthToSpace Div Dropout Equal Erf Exp Expand Flatten Floor "
     "Gather GatherElements GatherND Gemm Greater Identity If IsNaN LRN Less Log Loop MatMul Max Mean "
     "MeanVarianceNormalization Min Mod Mul Neg NegativeLogLikelihoodLoss NonZero Pad Pow Reciprocal ReduceL1 ReduceL2 "
     "ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSumSquare Relu Reshape Resize "
     "ScatterElements ScatterND Shape Sigmoid Sign Size Slice SoftmaxCrossEntropyLoss SpaceToDepth Sqrt Sub Sum Tanh "
     "Tile Transpose",
     bump, bump},
    {13, "Softmax LogSoftmax Hardmax", softmax13_up, softmax13_down},
    {13, "Squeeze Unsqueeze", axes_up, axes_down},
    {13, "ReduceSum", axes_up, reduce_down},
    {13, "Split", split_up, split_down},
    {13, "QuantizeLinear DequantizeLinear", bump, quant_axis_down},
    {14, "Add CumSum Div Mul Relu Sub", bump, bump},
    {14, "Identity", bump, identity14_down},
    {14, "BatchNormalization", bn14_up, bn14_down},
    {14, "GRU LSTM RNN", bump, layout_down},
    {14, "Reshape", bump, reshape14_down},
    {15, "BatchNormalization Pow", bump, bump},
    {15, "Shape", bump, shape15_down},
    {16, "Identity", bump, identity16_down},
    {16, "GreaterOrEqual If LeakyRelu LessOrEqual Loop PRelu Scan Where", bump, bump},
    {16, "RoiAlign", roialign16_up, roialign16_down},
    {16, "ScatterElements ScatterND", bump, reduction16_down},
    {18, "OptionalGetElement OptionalHasElement", bump, bump},
    {18,
     "ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSumSquare",
     axes_up, reduce_down},
    {18, "LpPool", bump, pool_ceil_dil_down},
    {18, "Pad", bump, pad18_down},
    {18, "Resize", resize18_up, resize18_down},
    {18, "ScatterElements ScatterND", bump, reduction18_down},
    {18, "Split", bump, split18_down},
    {19, "Constant DequantizeLinear Equal Identity If Loop Reshape Scan Shape Size", bump, bump},
    {19, "AveragePool", bump, dilations_down},
    {19, "Cast CastLike QuantizeLinear", bump, saturate_down},
    {19, "Pad", bump, pad19_down},
    {19, "Resize", bump, resize19_down},
    {20, "ConstantOfShape IsInf IsNaN ReduceMax ReduceMin", bump, bump},
    {20, "GridSample", gridsample20_up, gridsample20_down},
    {21,
     "Cast CastLike Constant ConstantOfShape Flatten Identity If Loop Pad QLinearMatMul Reshape Scan Shape Size "
     "Squeeze Transpose Unsqueeze",
     bump, bump},
    {21, "QuantizeLinear DequantizeLinear", bump, quant21_down},
    {22,
     "Acos Acosh Asin Asinh Atan Atanh AveragePool Bernoulli Conv ConvTranspose Cos Cosh DeformConv Det Dropout Elu "
     "EyeLike GRU GlobalAveragePool GlobalLpPool GlobalMaxPool GridSample HardSigmoid HardSwish InstanceNormalization "
     "LSTM LpNormalization LpPool MaxPool MaxRoiPool MaxUnpool Mish Multinomial NegativeLogLikelihoodLoss RNN "
     "RandomNormal RandomNormalLike RandomUniform RandomUniformLike RoiAlign Round Selu Sin Sinh Softplus Softsign Tan "
     "ThresholdedRelu",
     bump, bump},
    {23,
     "Cast CastLike Constant ConstantOfShape Flatten Identity If Loop Pad Reshape Scan Shape Size Squeeze Transpose "
     "Unsqueeze",
     bump, bump},
    {23, "QuantizeLinear DequantizeLinear", bump, quant23_down},
    {24,
     "Constant ConstantOfShape DequantizeLinear Flatten Identity If Loop Pad QuantizeLinear Reshape Scan Shape Size "
     "SplitToSequence Squeeze TopK Transpose Unsqueeze",
     bump, bump},
    {24, "Cast CastLike", bump, cast24_down},
    {24, "Attention", bump, bump},  // an optional input (nonpad_kv_seqlen): the signature check refuses it going down
    {25,
     "Cast CastLike Constant ConstantOfShape DequantizeLinear Flatten Identity If Loop Pad QuantizeLinear Reshape Scan "
     "Shape Size Squeeze Transpose Unsqueeze",
     bump, bump},
    {27, "Range", bump, bump},  // float16 and bfloat16 added
    {28, "Celu", bump, bump},   // float16, bfloat16 and double added
};

const Rule* find_rule(const std::string& op, int version) {
  static const std::map<std::pair<std::string, int>, const Rule*> table = [] {
    std::map<std::pair<std::string, int>, const Rule*> t;
    for (const Rule& r : kRules) {
      std::string_view ops = r.ops;
      while (!ops.empty()) {
        size_t sp = ops.find(' ');
        std::string_view name = ops.substr(0, sp);
        if (!name.empty()) t[{std::string(name), r.version}] = &r;
        ops = sp == std::string_view::npos ? std::string_view() : ops.substr(sp + 1);
      }
    }
    return t;
  }();
  auto it = table.find({op, version});
  return it == table.end() ? nullptr : it->second;
}

bool default_domain(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

void collect_graphs(Graph& g, std::vector<Graph*>& out) {
  out.push_back(&g);
  for (auto& n : g.nodes)
    for (Attribute& a : n->attributes) {
      if (a.g) collect_graphs(*a.g, out);
      for (auto& sg : a.graphs) collect_graphs(*sg, out);
    }
}

// One step in one graph.
void step_graph(Model& model, Graph& g, int64_t from, int64_t to, VersionConvertReport& report) {
  OptimizeOptions options;
  PassContext ctx(model, g, options);
  Step s(model, ctx, from, to, report);
  const int boundary = static_cast<int>(std::max(from, to));
  const bool up = to > from;
  for (Node* n : ctx.node_order()) {
    if (!ctx.alive(n) || !default_domain(*n)) continue;
    std::vector<int> versions = spec::since_versions("ai.onnx", n->op_type);
    if (versions.empty()) s.refuse(*n, "no such operator in the default domain");
    if (!std::binary_search(versions.begin(), versions.end(), boundary)) continue;
    const Rule* rule = find_rule(n->op_type, boundary);
    Fn fn = rule ? (up ? rule->up : rule->down) : nullptr;
    if (!fn) {
      if (!up && versions.front() == boundary)
        s.refuse(*n, cat(n->op_type, " does not exist before opset ", boundary));
      s.refuse(*n, cat("no adapter converts ", n->op_type, "-", boundary, up ? " up from the previous version"
                                                                              : " down to the previous version"));
    }
    const size_t notes = report.notes.size();
    fn(s, *n);
    if (report.notes.size() != notes) ++report.nodes_adapted;
  }
  ctx.finish();
  // What each node binds to now must accept its attributes and inputs.
  for (auto& p : g.nodes) {
    Node& n = *p;
    if (!default_domain(n)) continue;
    std::optional<int> sv = spec::resolve_since_version("ai.onnx", n.op_type, to);
    if (!sv) s.refuse(n, cat(n.op_type, " does not exist at opset ", to));
    const spec::Signature* sig = spec::signature("ai.onnx", n.op_type, *sv);
    if (!sig) continue;
    for (const Attribute& a : n.attributes)
      if (std::find(sig->attributes.begin(), sig->attributes.end(), a.name) == sig->attributes.end())
        s.refuse(n, cat("attribute ", a.name, " does not exist in ", n.op_type, "-", *sv));
    if (sig->max_inputs >= 0 && static_cast<int>(n.inputs.size()) > sig->max_inputs)
      s.refuse(n, cat(n.op_type, "-", *sv, " takes at most ", sig->max_inputs, " inputs"));
    if (sig->max_outputs >= 0 && static_cast<int>(n.outputs.size()) > sig->max_outputs)
      s.refuse(n, cat(n.op_type, "-", *sv, " has at most ", sig->max_outputs, " outputs"));
  }
}

// The converted model's nodes must fit the op versions they now bind to (element types a lower version lacks,
// sequences and optionals in control flow, ...): the type inference sessions run, with its errors refusals.
void check_types(Model& model, VersionConvertReport& report) {
  infer::Inference inference(infer::Inference::Types::Beside);
  for (const auto& p : model.graph->nodes) {
    const Node& n = *p;
    auto imported = model.opset(n.domain);
    if (!imported) continue;
    const Function* fn = model.function(n.domain, n.op_type, n.overload);
    if (fn && (!spec::is_known_domain(n.domain) || ops::builtin_registry().versions(n.domain, n.op_type).empty()))
      continue;  // a model-local function: its outputs stay as declared
    const ops::OpDef* def = nullptr;
    try {
      def = &ops::builtin_registry().resolve(n, *imported);
    } catch (const Error&) {
      continue;  // an op onyx does not implement: nothing to check it against
    }
    try {
      inference.infer(n, *def, *imported, nullptr);
    } catch (const std::exception& e) {
      fail(model.label.empty() ? std::string("model") : model.label, ": cannot convert opset ", report.from, " to ",
           report.to, ": ", Step::who(n), " does not fit ", n.op_type, " at opset ", report.to, ": ", e.what());
    }
    try {
      inference.fold_small(n, *def, *imported, nullptr);
    } catch (const std::exception&) {
    }
  }
}

}  // namespace version_convert_impl

VersionConvertReport convert_version(Model& model, int64_t target) {
  namespace impl = version_convert_impl;
  const std::string label = model.label.empty() ? std::string("model") : model.label;
  std::optional<int64_t> source = model.opset("");
  if (!source) fail(label, ": the model does not import the default domain (ai.onnx)");
  const int64_t newest = spec::newest_opset("ai.onnx").value_or(0);
  if (target < 1 || target > newest) fail(label, ": target opset ", target, " is outside 1..", newest);
  if (*source < 1 || *source > newest) fail(label, ": the model's opset ", *source, " is outside 1..", newest);
  VersionConvertReport report;
  report.from = *source;
  report.to = target;
  int64_t& opset = model.opset_imports.count("") ? model.opset_imports[""] : model.opset_imports["ai.onnx"];
  {
    std::vector<Graph*> graphs;
    impl::collect_graphs(*model.graph, graphs);
    for (Graph* g : graphs) impl::align_constants(*g);
  }
  for (int64_t v = *source; v != target;) {
    const int64_t next = v < target ? v + 1 : v - 1;
    std::vector<Graph*> graphs;
    impl::collect_graphs(*model.graph, graphs);
    opset = v;  // the analysis rewrites consult binds nodes at the opset being converted from
    for (Graph* g : graphs) impl::step_graph(model, *g, v, next, report);
    v = next;
  }
  opset = target;
  impl::check_types(model, report);
  return report;
}

pb::ModelDocument convert_version(pb::ModelDocument& doc, int64_t target, VersionConvertReport* report) {
  check::accept_with_warnings(doc);
  check::check_model_or_throw(doc);
  auto model = std::make_shared<Model>(build_model(doc));
  if (model->label.empty()) model->label = doc.label;
  VersionConvertReport r = convert_version(*model, target);
  pb::ModelDocument out = model_to_document(*model);
  out.source = doc.source;
  out.arena->keep(doc.arena);
  out.arena->keep(model);
  out.dir = doc.dir;
  out.label = doc.label;
  out.memory_files = doc.memory_files;
  try {
    check::check_model_or_throw(out);
  } catch (const Error& e) {
    fail(doc.label, ": the model converted to opset ", target, " does not pass the checker: ", e.what());
  }
  if (report) *report = std::move(r);
  return out;
}

std::string convert_version_bytes(std::string model_bytes, int64_t target, VersionConvertReport* report) {
  pb::ModelDocument doc = pb::load_model_bytes(std::move(model_bytes));
  pb::ModelDocument out = convert_version(doc, target, report);
  return pb::serialize_model(out.model);
}

}  // namespace onyx::opt
