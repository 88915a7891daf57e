// float32 -> float16 conversion of a whole model (include/onyx/float16.hpp), after onnxconverter-common's
// convert_float_to_float16. Three steps:
//   1. plan, on the model as it is: which values are float32 tensors (from inference, so values without a declared
//      type count too) and which nodes stay float32 (the block lists, and nodes whose op in onyx's registry takes no
//      float16 where the node has a float input: a float16 model must still run here);
//   2. rewrite: those values become float16 (initializers converted, clamped into float16's range; declared types
//      changed), Constant values, Cast `to` and the dtype attributes that make float32 outputs say float16, and
//      each blocked node reads Casts to float32 of its float16 inputs and writes float32 values Cast back;
//   3. check the main graph by inference: a node that still makes float32 where float16 is now expected (an op
//      whose float output does not follow its inputs, such as TfIdfVectorizer) gets a Cast after it.
#include "onyx/float16.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "format/model_read.hpp"
#include "format/model_write.hpp"
#include "kernels/half.hpp"
#include "ops/registry.hpp"
#include "opt/graph_edit.hpp"

namespace onyx::opt {

const std::vector<std::string>& default_float16_op_block_list() {
  static const std::vector<std::string> ops = {
      "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer",
      "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder",
      "RandomUniformLike", "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsembleClassifier",
      "TreeEnsembleRegressor", "ZipMap", "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Range", "CumSum", "Min",
      "Max", "Upsample"};
  return ops;
}

namespace {

constexpr int64_t kToFloat = static_cast<int64_t>(DataType::Float);
constexpr int64_t kToFloat16 = static_cast<int64_t>(DataType::Float16);

bool is_float32_tensor(const Type& t) { return t.kind == Type::Kind::Tensor && t.elem == DataType::Float; }

bool has_subgraphs(const Node& n) {
  for (const Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

// What step 1 decided for one graph.
struct Float16Plan {
  std::unordered_set<const Value*> half;      // values that hold float16 once converted
  std::unordered_set<const Node*> blocked;    // nodes that compute in float32
};

class Float16Converter {
 public:
  Float16Converter(Model& m, const Float16Options& o) : model_(m), options_(o) {
    if (!(o.min_positive_val >= 5.96e-8f) || !(o.min_positive_val <= 1.0f))
      fail(m.label, ": min_positive_val ", o.min_positive_val, " is outside float16's range [5.96e-08, 1]");
    if (!(o.max_finite_val <= 65504.0f) || !(o.max_finite_val >= 1.0f))
      fail(m.label, ": max_finite_val ", o.max_finite_val, " is outside float16's range [1, 65504]");
    for (const std::string& s : o.op_block_list ? *o.op_block_list : default_float16_op_block_list())
      block_ops_.insert(s);
    block_nodes_.insert(o.node_block_list.begin(), o.node_block_list.end());
  }

  Float16Report run() {
    if (!model_.graph) fail(model_.label, ": the model has no graph");
    collect_names(*model_.graph);
    for (const Function& f : model_.functions)
      if (f.body) collect_names(*f.body);
    plan(*model_.graph, nullptr);
    for (const std::string& name : block_nodes_)
      if (!named_nodes_.count(name))
        fail(model_.label, ": the node block list names node '", name, "', which the model lacks");
    Graph& g = *model_.graph;
    PassContext ctx(model_, g, opt_options_);
    if (options_.keep_io_types) keep_io(ctx);
    rewrite(ctx);
    check_main_graph(ctx);
    return std::move(report_);
  }

 private:
  // ---- step 1 ----

  void plan(const Graph& g, const Analysis::OuterTypes* outer) {
    const Analysis a(model_, g, outer);
    Float16Plan& p = plans_[&g];
    for (const Value& v : g.values())
      if (is_float32_tensor(a.type(&v))) p.half.insert(&v);
    std::optional<Analysis::OuterTypes> inner;
    for (const auto& n : g.nodes) {
      if (!n->name.empty()) named_nodes_.insert(n->name);
      if (keeps_float32(*n, a)) {
        p.blocked.insert(n.get());
        continue;
      }
      for (const Attribute& at : n->attributes) {
        std::vector<const Graph*> subs;
        if (at.g) subs.push_back(at.g.get());
        for (const auto& sg : at.graphs) subs.push_back(sg.get());
        for (const Graph* sg : subs) {
          if (!inner) {
            inner = outer ? *outer : Analysis::OuterTypes{};
            for (const Value& v : g.values()) (*inner)[&v] = a.type(&v);
          }
          plan(*sg, &*inner);
        }
      }
    }
  }

  // Whether `v` holds float16 once converted, by the plan of the graph that defines it (a subgraph's node may
  // read a value of an enclosing graph).
  bool is_half(const Value* v) const {
    if (!v) return false;
    auto it = plans_.find(v->graph);
    return it != plans_.end() && it->second.half.count(v) > 0;
  }

  bool touches_half(const Node& n) const {
    for (const Value* v : n.inputs)
      if (is_half(v)) return true;
    for (const Value* v : n.outputs)
      if (is_half(v)) return true;
    return false;
  }

  bool keeps_float32(const Node& n, const Analysis& a) const {
    const bool listed = block_ops_.count(n.op_type) || (!n.name.empty() && block_nodes_.count(n.name));
    if (listed && has_subgraphs(n))
      fail(model_.label, ": node ", n.label(), " in the ", n.graph->label(),
           " has subgraphs and cannot stay float32 (its subgraphs read float16 values); unblock it");
    if (!touches_half(n)) return false;
    if (listed) return true;
    if (has_subgraphs(n)) return false;  // control flow passes any type through
    const ops::OpDef* def = a.def(&n);
    if (!def) return true;  // a model-local function, or an op onyx cannot bind: Casts keep it as it was
    // The registry's element types: a float input whose type constraint has no float16 keeps the node float32.
    for (const ops::TypeConstraint& c : def->types) {
      if (std::find(c.allowed.begin(), c.allowed.end(), DataType::Float16) != c.allowed.end()) continue;
      const bool all = std::find(c.inputs.begin(), c.inputs.end(), -1) != c.inputs.end();
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const bool covered = all || std::find(c.inputs.begin(), c.inputs.end(), static_cast<int>(i)) != c.inputs.end();
        if (covered && is_half(n.inputs[i])) return true;
      }
    }
    return false;
  }

  // ---- step 2 ----

  // Names are unique across the whole model (a subgraph's value must not shadow an outer one), so one set serves
  // every graph's edits rather than each PassContext's own.
  void collect_names(const Graph& g) {
    for (const Value& v : g.values()) names_.insert(v.name);
    for (const auto& n : g.nodes) {
      names_.insert(n->name);
      for (const Attribute& a : n->attributes) {
        if (a.g) collect_names(*a.g);
        for (const auto& sg : a.graphs) collect_names(*sg);
      }
    }
  }

  std::string fresh_name(const std::string& base) {
    if (names_.insert(base).second) return base;
    for (;;) {
      std::string name = cat(base, "_", ++name_counter_);
      if (names_.insert(name).second) return name;
    }
  }

  Value& new_value(PassContext& ctx, const Value& like, const std::string& suffix, DataType elem) {
    Value& v = ctx.graph.add_value(fresh_name(like.name + suffix));
    if (like.type.kind == Type::Kind::Tensor) v.type = Type::tensor(elem, like.type.shape);
    return v;
  }

  Node& add_cast(PassContext& ctx, const Node& before, Value* in, Value* out, int64_t to) {
    Node& c = ctx.insert_node(before, "Cast", "", {in}, {out}, fresh_name(out->name + "_cast"));
    c.attributes.push_back(make_attr_int("to", to));
    inserted_.insert(&c);
    ++report_.casts_inserted;
    return c;
  }

  static void rewire_readers(PassContext& ctx, Value* from, Value* to) {
    const std::vector<Node*> readers = from->consumers;
    for (Node* r : readers)
      for (size_t i = 0; i < r->inputs.size(); ++i)
        if (r->inputs[i] == from) ctx.set_input(*r, i, to);
  }

  // `v` stays float32; what reads it reads a float16 copy.
  void stay_float32(PassContext& ctx, Float16Plan& p, Value* v) {
    p.half.erase(v);
    if (v->consumers.empty() || ctx.graph.nodes.empty()) return;
    Value& h = new_value(ctx, *v, "_fp16", DataType::Float16);
    rewire_readers(ctx, v, &h);
    add_cast(ctx, *ctx.graph.nodes.front(), v, &h, kToFloat16);
    p.half.insert(&h);
  }

  // --keep-io-types: float32 graph inputs and outputs keep their type; Casts at the edges of the graph.
  void keep_io(PassContext& ctx) {
    Graph& g = ctx.graph;
    Float16Plan& p = plans_[&g];
    // Initializers listed as inputs (IR 3) are weights, converted as the others: only fed inputs keep float32.
    for (Value* v : std::vector<Value*>(g.inputs))
      if (p.half.count(v) && !v->initializer) stay_float32(ctx, p, v);
    for (Value* v : std::vector<Value*>(g.outputs)) {
      if (!p.half.count(v)) continue;
      Node* prod = v->producer;
      if (!prod || p.blocked.count(prod)) {  // already float32 where it is made
        stay_float32(ctx, p, v);
        continue;
      }
      Value& h = new_value(ctx, *v, "_fp16", DataType::Float16);
      rewire_readers(ctx, v, &h);
      ctx.set_output(*prod, static_cast<size_t>(v->producer_output), &h);
      add_cast(ctx, *prod, &h, v, kToFloat);
      p.half.erase(v);
      p.half.insert(&h);
    }
  }

  Tensor to_half(const Tensor& t) {
    const size_t n = t.element_count();
    std::vector<float> f(n);
    if (n) std::memcpy(f.data(), t.bytes().data(), n * sizeof(float));  // raw data may sit unaligned in the file
    const float lo = options_.min_positive_val, hi = options_.max_finite_val;
    for (float& x : f) {
      const float m = std::fabs(x);
      if (m > 0 && m < lo) {
        x = std::copysign(lo, x);
        ++report_.clamped_small;
      } else if (m > hi && std::isfinite(m)) {
        x = std::copysign(hi, x);
        ++report_.clamped_large;
      }
    }
    Tensor h = Tensor::allocate(DataType::Float16, t.dims());
    kernels::float_to_half_array(f.data(), h.mutable_data<uint16_t>(), n);
    h.set_name(t.name());
    ++report_.tensors_converted;
    report_.float32_bytes += t.bytes().size();
    report_.float16_bytes += h.bytes().size();
    return h;
  }

  void convert_attribute_tensors(Attribute& a) {
    if (a.t && a.t->dtype() == DataType::Float) a.t = to_half(*a.t);
    for (Tensor& t : a.tensors)
      if (t.dtype() == DataType::Float) t = to_half(t);
    if (a.sparse_tensor && a.sparse_tensor->values.dtype() == DataType::Float)
      a.sparse_tensor->values = to_half(a.sparse_tensor->values);
    for (SparseTensor& s : a.sparse_tensors)
      if (s.values.dtype() == DataType::Float) s.values = to_half(s.values);
  }

  static Attribute tensor_attr(const std::string& name, Tensor t) {
    Attribute a;
    a.name = name;
    a.type = AttributeType::Tensor;
    a.t = std::move(t);
    return a;
  }

  static void set_int_attr(Node& n, const char* name, int64_t v) {
    for (Attribute& a : n.attributes)
      if (a.name == name) {
        a.type = AttributeType::Int;
        a.i = v;
        return;
      }
    n.attributes.push_back(make_attr_int(name, v));
  }

  // The attributes of a converted node that make float32 outputs say float16.
  void convert_node(Node& n) {
    const bool half_out = !n.outputs.empty() && is_half(n.outputs[0]);
    const bool onnx = n.domain.empty() || n.domain == "ai.onnx";
    if (!half_out) return;
    for (Attribute& a : n.attributes)
      if (a.ref_attr_name.empty()) convert_attribute_tensors(a);
    if (!onnx) return;
    const std::string& op = n.op_type;
    auto int_attr = [&](const char* name) -> std::optional<int64_t> {
      const Attribute* a = n.attribute(name);
      return a && a->type == AttributeType::Int ? std::optional<int64_t>(a->i) : std::nullopt;
    };
    if (op == "Cast") {
      if (int_attr("to") == kToFloat) set_int_attr(n, "to", kToFloat16);
    } else if (op == "RandomNormal" || op == "RandomUniform") {  // dtype defaults to float
      if (int_attr("dtype").value_or(kToFloat) == kToFloat) set_int_attr(n, "dtype", kToFloat16);
    } else if (op == "RandomNormalLike" || op == "RandomUniformLike" || op == "EyeLike" || op == "Bernoulli") {
      if (int_attr("dtype") == kToFloat) set_int_attr(n, "dtype", kToFloat16);  // else it follows the input
    } else if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow" || op == "MelWeightMatrix") {
      if (int_attr("output_datatype").value_or(kToFloat) == kToFloat) set_int_attr(n, "output_datatype", kToFloat16);
    } else if (op == "ConstantOfShape") {
      if (!n.attribute("value")) n.attributes.push_back(tensor_attr("value", Tensor::allocate(DataType::Float16, {1})));
    } else if (op == "Constant") {
      for (Attribute& a : n.attributes) {
        if (a.name == "value_float" && a.type == AttributeType::Float && a.ref_attr_name.empty()) {
          Tensor t = Tensor::allocate(DataType::Float, {});
          *t.mutable_data<float>() = a.f;
          a = tensor_attr("value", to_half(t));
        } else if (a.name == "value_floats" && a.type == AttributeType::Floats && a.ref_attr_name.empty()) {
          Tensor t = Tensor::allocate(DataType::Float, {static_cast<int64_t>(a.floats.size())});
          std::copy(a.floats.begin(), a.floats.end(), t.mutable_data<float>());
          a = tensor_attr("value", to_half(t));
        }
      }
    }
  }

  // A blocked node reads float32 copies of its float16 inputs and writes float32 values that Casts make float16.
  void cast_around(PassContext& ctx, Node& n, std::unordered_map<Value*, Value*>& as_float32) {
    ++report_.blocked_ops[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      Value* v = n.inputs[i];
      if (!is_half(v)) continue;
      Value*& f = as_float32[v];
      if (!f) {
        f = &new_value(ctx, *v, "_fp32", DataType::Float);
        add_cast(ctx, n, v, f, kToFloat);
      }
      ctx.set_input(n, i, f);
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      Value* v = n.outputs[i];
      if (!is_half(v)) continue;
      Value& f = new_value(ctx, *v, "_fp32", DataType::Float);
      ctx.set_output(n, i, &f);
      add_cast(ctx, n, &f, v, kToFloat16);
    }
  }

  void rewrite(PassContext& ctx) {
    Graph& g = ctx.graph;
    Float16Plan& p = plans_[&g];
    for (auto& [name, t] : g.initializers) {
      const Value* v = g.find_local(name);
      if (v && p.half.count(v) && t.dtype() == DataType::Float) t = to_half(t);  // Value::initializer stays valid
    }
    for (auto& [name, s] : g.sparse_initializers) {
      const Value* v = g.find_local(name);
      if (v && p.half.count(v) && s.values.dtype() == DataType::Float) s.values = to_half(s.values);
    }
    std::unordered_map<Value*, Value*> as_float32;
    for (Node* n : ctx.node_order()) {
      if (inserted_.count(n)) continue;
      if (p.blocked.count(n)) {
        cast_around(ctx, *n, as_float32);
        continue;
      }
      convert_node(*n);
      for (Attribute& a : n->attributes) {
        std::vector<Graph*> subs;
        if (a.g) subs.push_back(a.g.get());
        for (auto& sg : a.graphs) subs.push_back(sg.get());
        for (Graph* sg : subs) {
          PassContext sub(model_, *sg, opt_options_);
          rewrite(sub);
        }
      }
    }
    // Declared types last: the main graph's node outputs get theirs after the check (check_main_graph).
    for (const Value* cv : p.half) {
      Value* v = const_cast<Value*>(cv);
      if (v->type.kind == Type::Kind::Tensor && v->type.elem == DataType::Float) v->type.elem = DataType::Float16;
    }
    ctx.finish();
    if (std::string problem = verify_graph(g); !problem.empty())
      fail(model_.label, ": float16 conversion left the ", g.label(), " inconsistent (a converter bug): ", problem);
  }

  // ---- step 3 ----

  void check_main_graph(PassContext& ctx) {
    Graph& g = ctx.graph;
    Float16Plan& p = plans_[&g];
    // Node outputs lose their declared element type for a moment, so that inference says what each node makes.
    std::vector<Value*> declared;
    for (const Value* cv : p.half) {
      Value* v = const_cast<Value*>(cv);
      if (v->producer && v->type.kind == Type::Kind::Tensor && v->type.elem == DataType::Float16) {
        v->type.elem = DataType::Undefined;
        declared.push_back(v);
      }
    }
    for (int round = 0;; ++round) {
      const Analysis a(model_, g);
      std::unordered_set<const Value*> wrong_set;
      for (const auto& n : g.nodes)
        for (Value* v : n->outputs)
          if (v && p.half.count(v) && a.dtype(v) == DataType::Float) wrong_set.insert(v);
      // Only where the node's own inputs are right: what reads a wrong value may be right once that is fixed.
      std::vector<Value*> wrong;
      for (const auto& n : g.nodes) {
        bool reads_wrong = false;
        for (const Value* in : n->inputs) reads_wrong |= in && wrong_set.count(in) > 0;
        for (Value* v : n->outputs)
          if (v && wrong_set.count(v) && !reads_wrong) wrong.push_back(v);
      }
      if (wrong.empty()) break;
      if (round == 64)
        fail(model_.label, ": float16 conversion: '", wrong.front()->name, "' (made by ",
             wrong.front()->producer->label(), ") stays float32 (a converter bug)");
      for (Value* v : wrong) {
        Node& prod = *v->producer;
        Value& f = new_value(ctx, *v, "_fp32", DataType::Float);
        ctx.set_output(prod, static_cast<size_t>(v->producer_output), &f);
        add_cast(ctx, prod, &f, v, kToFloat16);
      }
      ctx.finish();
    }
    for (Value* v : declared) v->type.elem = DataType::Float16;
  }

  Model& model_;
  const Float16Options& options_;
  OptimizeOptions opt_options_;
  std::unordered_set<std::string> block_ops_, block_nodes_, named_nodes_, names_;
  uint64_t name_counter_ = 0;
  std::unordered_map<const Graph*, Float16Plan> plans_;
  std::unordered_set<const Node*> inserted_;
  Float16Report report_;
};

}  // namespace

Float16Report convert_float_to_float16(Model& model, const Float16Options& options) {
  return Float16Converter(model, options).run();
}

std::string convert_float_to_float16(const pb::ModelDocument& doc, const Float16Options& options,
                                     Float16Report* report) {
  pb::ModelDocument src = doc;
  check::accept_with_warnings(src);
  check::check_model_or_throw(src);
  Model model = build_model(src);
  Float16Report r = convert_float_to_float16(model, options);
  pb::ModelDocument out = model_to_document(model);
  out.dir = src.dir;
  out.label = src.label;
  try {
    check::check_model_or_throw(out);
  } catch (const Error& e) {
    fail(src.label, ": the float16 model does not pass the checker (a converter bug): ", e.what());
  }
  std::string bytes = pb::serialize_model(out.model);
  if (report) *report = std::move(r);
  return bytes;
}

}  // namespace onyx::opt
