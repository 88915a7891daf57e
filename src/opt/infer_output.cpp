// Shape inference written into the model (onyx infer, onyx.infer_shapes): the types onyx's inference engine gives
// every node output, added as value_info to the decoded messages of the model, which are otherwise written back
// unchanged. And the comparison of such types with another inference's (onnx's), value by value.
#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "format/model_read.hpp"
#include "onyx/model_tools.hpp"
#include "opt/graph_edit.hpp"

namespace onyx::opt {
namespace {

// Whether `t` says enough to be written: ONNX wants an element type in every tensor type it declares.
bool mt_writable(const Type& t) {
  switch (t.kind) {
    case Type::Kind::Unknown: return false;
    case Type::Kind::Tensor:
    case Type::Kind::SparseTensor: return t.elem != DataType::Undefined;
    case Type::Kind::Sequence:
    case Type::Kind::Optional:
    case Type::Kind::Map: return t.inner && mt_writable(*t.inner);
    case Type::Kind::Opaque: return true;
  }
  return false;
}

bool mt_same_type(const Type& a, const Type& b) {
  if (a.kind != b.kind || a.elem != b.elem || a.key != b.key || a.shape != b.shape) return false;
  if (a.opaque_domain != b.opaque_domain || a.opaque_name != b.opaque_name) return false;
  if (!a.inner || !b.inner) return !a.inner && !b.inner;
  return mt_same_type(*a.inner, *b.inner);
}

std::optional<pb::Type> mt_type_to_proto(const Type& t, pb::Arena& arena) {
  if (t.kind == Type::Kind::Unknown) return std::nullopt;
  pb::Type r;
  if (!t.denotation.empty()) r.denotation = arena.save(t.denotation);
  auto inner = [&](pb::Box<pb::Type>& box) {
    if (!t.inner) return;
    if (auto in = mt_type_to_proto(*t.inner, arena)) box.emplace() = std::move(*in);
  };
  switch (t.kind) {
    case Type::Kind::Tensor:
    case Type::Kind::SparseTensor: {
      pb::TypeTensor tt;
      if (t.elem != DataType::Undefined) tt.elem_type = static_cast<int32_t>(t.elem);
      if (t.shape.rank_known) {
        pb::TensorShape& s = tt.shape.emplace();
        for (const Dim& d : t.shape.dims) {
          pb::Dimension& pd = s.dim.emplace_back();
          if (d.value) pd.dim_value = *d.value;
          else if (!d.param.empty()) pd.dim_param = arena.save(d.param);
          if (!d.denotation.empty()) pd.denotation = arena.save(d.denotation);
        }
      }
      if (t.kind == Type::Kind::Tensor) r.tensor_type = std::move(tt);
      else r.sparse_tensor_type = std::move(tt);
      break;
    }
    case Type::Kind::Sequence: inner(r.sequence_type.emplace().elem_type); break;
    case Type::Kind::Optional: inner(r.optional_type.emplace().elem_type); break;
    case Type::Kind::Map: {
      pb::TypeMap& m = r.map_type.emplace();
      m.key_type = static_cast<int32_t>(t.key);
      inner(m.value_type);
      break;
    }
    case Type::Kind::Opaque: {
      pb::TypeOpaque& o = r.opaque_type.emplace();
      if (!t.opaque_domain.empty()) o.domain = arena.save(t.opaque_domain);
      if (!t.opaque_name.empty()) o.name = arena.save(t.opaque_name);
      break;
    }
    case Type::Kind::Unknown: break;
  }
  return r;
}

// A node of a decoded graph and of the IR built from it are the same node when name and outputs agree (the IR's
// graph may have been sorted into topological order; its nodes are otherwise those of the messages).
std::string mt_node_key(const pb::Node& n) {
  std::string k(n.name.value_or(""));
  for (pb::Str o : n.output) k += cat("|", o);
  return k;
}
std::string mt_node_key(const Node& n) {
  std::string k = n.name;
  for (const Value* o : n.outputs) k += cat("|", o ? o->name : "");
  return k;
}

class MtAnnotator {
 public:
  MtAnnotator(const Model& model, pb::Arena& arena, InferShapesReport& report)
      : model_(model), arena_(arena), report_(report) {}

  // Infers `g` and the subgraphs of its nodes (with the types of its enclosing graphs' values in `outer`) and
  // writes what it finds into `pg` and its subgraphs.
  void graph(const Graph& g, pb::Graph& pg, const Analysis::OuterTypes& outer) {
    // Subgraphs first: an If or Loop infers its outputs from its subgraphs' output types, which their own
    // inference (with what this graph's first analysis gives the values they read) completes. Then this graph
    // again, with those types.
    subgraphs(g, pg, outer);
    const Analysis analysis(model_, g, &outer);
    // The IR is this tool's own copy: its subgraph outputs take what inference found, for the enclosing node.
    if (g.parent)
      for (Value* o : g.outputs)
        if (o && mt_writable(analysis.type(o))) o->type = analysis.type(o);
    std::unordered_map<std::string, pb::ValueInfo*> declared;
    for (pb::ValueInfo& vi : pg.output)
      if (vi.name) declared.emplace(std::string(*vi.name), &vi);
    for (pb::ValueInfo& vi : pg.value_info)
      if (vi.name) declared.emplace(std::string(*vi.name), &vi);
    std::vector<pb::ValueInfo> added;
    for (const Value& v : g.values()) {
      if (!v.producer) continue;  // graph inputs and initializers: declared by the model
      const Type& t = analysis.type(&v);
      if (!mt_writable(t)) {
        ++report_.unknown;
        continue;
      }
      auto it = declared.find(v.name);
      if (it == declared.end()) {
        pb::ValueInfo& vi = added.emplace_back();
        vi.name = arena_.save(v.name);
        vi.type = mt_type_to_proto(t, arena_);
        ++report_.added;
        continue;
      }
      pb::ValueInfo& vi = *it->second;
      const Type before = vi.type ? type_from_proto(*vi.type) : Type{};
      // A declared kind stays (a sparse graph output is computed dense, but stays declared sparse).
      if (before.kind != Type::Kind::Unknown && before.kind != t.kind) continue;
      if (mt_same_type(before, t)) continue;
      vi.type = mt_type_to_proto(t, arena_);
      ++report_.refined;
    }
    for (pb::ValueInfo& vi : added) pg.value_info.push_back(std::move(vi));
  }

 private:
  // Annotates the subgraphs of `g`'s nodes; they see `g`'s values with what a first analysis gives them.
  void subgraphs(const Graph& g, pb::Graph& pg, const Analysis::OuterTypes& outer) {
    std::optional<Analysis> analysis;
    std::optional<Analysis::OuterTypes> inner;
    std::unordered_map<std::string, const Node*> nodes;
    for (const auto& n : g.nodes) nodes.emplace(mt_node_key(*n), n.get());
    for (pb::Node& pn : pg.node) {
      auto it = nodes.find(mt_node_key(pn));
      if (it == nodes.end()) continue;
      const Node& n = *it->second;
      for (pb::Attribute& pa : pn.attribute) {
        const Attribute* a = n.attribute(pa.name.value_or(""));
        if (!a) continue;
        auto sub = [&](const Graph& sg, pb::Graph& psg) {
          if (!inner) {
            analysis.emplace(model_, g, &outer);
            inner = outer;
            for (const Value& v : g.values()) (*inner)[&v] = analysis->type(&v);
          }
          graph(sg, psg, *inner);
        };
        if (pa.g && a->g) sub(*a->g, *pa.g);
        for (size_t i = 0; i < pa.graphs.size() && i < a->graphs.size(); ++i) sub(*a->graphs[i], pa.graphs[i]);
      }
    }
  }

  const Model& model_;
  pb::Arena& arena_;
  InferShapesReport& report_;
};

// The IR of a copy of `doc`, loaded as sessions load models (sorted, ONNX Runtime's leniencies) and checked.
// `work` (a copy of the model's document) must outlive the IR, which may view it.
Model mt_build_checked(pb::ModelDocument& work) {
  check::accept_with_warnings(work, 3);
  check::CheckOptions options;
  options.initializers_need_not_be_inputs = check::accept_runtime_models(work, 3).initializers_need_not_be_inputs;
  check::check_model_or_throw(work, options);
  return build_model(work);
}

// ---- Comparison ----

bool mt_symbol(const Dim& d) {
  // onnx names the dims it cannot know "unk__N": no more than an unknown dim.
  return !d.value && !d.param.empty() && d.param.rfind("unk__", 0) != 0;
}

struct MtVerdict {
  bool onyx_more = false, ref_more = false, disagree = false;
};

void mt_compare(const Type& ref, const Type& got, MtVerdict& v) {
  if (ref.kind == Type::Kind::Unknown || got.kind == Type::Kind::Unknown) {
    if (ref.kind != got.kind) (ref.kind == Type::Kind::Unknown ? v.onyx_more : v.ref_more) = true;
    return;
  }
  if (ref.kind != got.kind) {
    v.disagree = true;
    return;
  }
  auto known = [&](bool r, bool g) {  // one side knows, the other does not
    if (r && !g) v.ref_more = true;
    if (g && !r) v.onyx_more = true;
  };
  switch (ref.kind) {
    case Type::Kind::Tensor:
    case Type::Kind::SparseTensor: {
      const bool re = ref.elem != DataType::Undefined, ge = got.elem != DataType::Undefined;
      if (re && ge && ref.elem != got.elem) v.disagree = true;
      known(re, ge);
      known(ref.shape.rank_known, got.shape.rank_known);
      if (!ref.shape.rank_known || !got.shape.rank_known) return;
      if (ref.shape.dims.size() != got.shape.dims.size()) {
        v.disagree = true;
        return;
      }
      for (size_t i = 0; i < ref.shape.dims.size(); ++i) {
        const Dim& r = ref.shape.dims[i];
        const Dim& g = got.shape.dims[i];
        if (r.value && g.value) {
          if (*r.value != *g.value) v.disagree = true;
          continue;
        }
        // A known size says more than a symbol, which says more than nothing.
        const int rk = r.value ? 2 : mt_symbol(r) ? 1 : 0, gk = g.value ? 2 : mt_symbol(g) ? 1 : 0;
        known(rk > gk, gk > rk);
      }
      return;
    }
    case Type::Kind::Map:
      if (ref.key != got.key) v.disagree = true;
      [[fallthrough]];
    case Type::Kind::Sequence:
    case Type::Kind::Optional:
      mt_compare(ref.inner ? *ref.inner : Type{}, got.inner ? *got.inner : Type{}, v);
      return;
    case Type::Kind::Opaque:
    case Type::Kind::Unknown: return;
  }
}

// The declared types of a graph and its subgraphs, keyed by where they are ("" for the main graph, then
// "/node key/attribute/index" per level) and name.
using MtDeclaredTypes = std::map<std::string, Type>;

void mt_collect(const pb::Graph& g, const std::string& where, bool outputs, MtDeclaredTypes& out) {
  for (const pb::ValueInfo& vi : g.value_info)
    if (vi.name && vi.type) out[cat(where, "/", *vi.name)] = type_from_proto(*vi.type);
  if (outputs)
    for (const pb::ValueInfo& vi : g.output)
      if (vi.name && vi.type) out[cat(where, "/", *vi.name)] = type_from_proto(*vi.type);
  for (const pb::Node& n : g.node)
    for (const pb::Attribute& a : n.attribute) {
      std::string at = cat(where, "/", mt_node_key(n), "/", a.name.value_or(""));
      if (a.g) mt_collect(*a.g, at + "/0", false, out);
      for (size_t i = 0; i < a.graphs.size(); ++i) mt_collect(a.graphs[i], cat(at, "/", i), false, out);
    }
}

void mt_strip(pb::Graph& g, bool output_shapes) {
  g.value_info.clear();
  if (output_shapes)
    for (pb::ValueInfo& vi : g.output)
      if (vi.type && vi.type->tensor_type) vi.type->tensor_type->shape.reset();
  for (pb::Node& n : g.node)
    for (pb::Attribute& a : n.attribute) {
      if (a.g) mt_strip(*a.g, false);
      for (pb::Graph& sg : a.graphs) mt_strip(sg, false);
    }
}

}  // namespace

InferShapesReport infer_shapes(pb::ModelDocument& doc) {
  InferShapesReport report;
  if (!doc.model.graph) fail(doc.label, ": the model has no graph");
  pb::ModelDocument work = doc;
  Model model = mt_build_checked(work);
  // IR 3 lists every initializer as a graph input, seldom meaning it to be fed: inference takes their values, as
  // onnx's does (shapes of ConstantOfShape, Reshape... read them). From IR 4 such an input is a default a feed
  // may replace, and inference leaves its value unknown.
  if (model.ir_version < 4)
    for (Value* v : model.graph->inputs)
      if (v->initializer) v->is_graph_input = false;
  MtAnnotator(model, *doc.arena, report).graph(*model.graph, *doc.model.graph, {});
  // The IR views the tensors of `doc` and its arena; nothing of it stays in the messages written.
  return report;
}

InferShapesReport infer_shapes_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                    const SaveOptions& save) {
  pb::ModelDocument doc = pb::load_model_file(in);
  InferShapesReport report = infer_shapes(doc);
  save_model(doc, out, save);
  return report;
}

ShapeTally& ShapeTally::operator+=(const ShapeTally& o) {
  agree += o.agree;
  onyx_more += o.onyx_more;
  reference_more += o.reference_more;
  mixed += o.mixed;
  disagree += o.disagree;
  disagreements.insert(disagreements.end(), o.disagreements.begin(), o.disagreements.end());
  reference_extra.insert(reference_extra.end(), o.reference_extra.begin(), o.reference_extra.end());
  return *this;
}

std::string ShapeTally::summary() const {
  return cat("agree ", agree, ", onyx more ", onyx_more, ", reference more ", reference_more, ", mixed ", mixed,
             ", disagree ", disagree);
}

ShapeTally check_inferred_shapes(const pb::ModelDocument& reference, bool outputs_too) {
  if (!reference.model.graph) fail(reference.label, ": the model has no graph");
  pb::ModelDocument mine = reference;
  mt_strip(*mine.model.graph, outputs_too);
  infer_shapes(mine);
  MtDeclaredTypes ref, got;
  mt_collect(*reference.model.graph, "", outputs_too, ref);
  mt_collect(*mine.model.graph, "", outputs_too, got);
  ShapeTally tally;
  auto where = [&](const std::string& key) {  // "value" in the main graph, "node/attr/i/value" below
    return cat(reference.label, ": ", key.substr(1));
  };
  std::map<std::string, std::pair<Type, Type>> both;
  for (auto& [k, t] : ref) both[k].first = t;
  for (auto& [k, t] : got) both[k].second = t;
  for (auto& [k, p] : both) {
    MtVerdict v;
    mt_compare(p.first, p.second, v);
    if (v.disagree) {
      ++tally.disagree;
      tally.disagreements.push_back(cat(where(k), ": reference ", p.first.to_string_with_shape(), ", onyx ",
                                        p.second.to_string_with_shape()));
    } else if (v.onyx_more && v.ref_more) {
      ++tally.mixed;
    } else if (v.onyx_more) {
      ++tally.onyx_more;
    } else if (v.ref_more) {
      ++tally.reference_more;
    } else {
      ++tally.agree;
    }
    if (v.ref_more && !v.disagree)
      tally.reference_extra.push_back(cat(where(k), ": reference ", p.first.to_string_with_shape(), ", onyx ",
                                          p.second.to_string_with_shape()));
  }
  return tally;
}

}  // namespace onyx::opt
