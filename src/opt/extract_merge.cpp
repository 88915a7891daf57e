// Extraction of a sub-model (onyx extract, onyx.extract_model) and composition of two models (onyx merge,
// onyx.merge_models), on the decoded messages: what the tools do not touch is written back as it was read.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "format/model_read.hpp"
#include "onyx/model_tools.hpp"

namespace onyx::opt {
namespace {

std::string em_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s.empty() ? "none" : s;
}

template <class Items, class Name>
std::vector<std::string> em_names(const Items& items, Name name) {
  std::vector<std::string> r;
  for (const auto& i : items) r.emplace_back(name(i));
  return r;
}
std::string em_vi_name(const pb::ValueInfo& vi) { return std::string(vi.name.value_or("")); }

// Names a subgraph reads from enclosing scopes: used by its nodes or as its outputs, defined by none of its
// inputs, initializers and node outputs (nor by those of the subgraphs between).
void em_free_names(const pb::Graph& g, const std::unordered_set<std::string>& defined_above,
                   std::set<std::string>& out) {
  std::unordered_set<std::string> defined = defined_above;
  for (const pb::ValueInfo& vi : g.input) defined.insert(em_vi_name(vi));
  for (const pb::Tensor& t : g.initializer) defined.insert(std::string(t.name.value_or("")));
  for (const pb::SparseTensor& t : g.sparse_initializer)
    if (t.values) defined.insert(std::string(t.values->name.value_or("")));
  for (const pb::Node& n : g.node)
    for (pb::Str o : n.output) defined.insert(std::string(o));
  auto use = [&](std::string_view name) {
    if (!name.empty() && !defined.count(std::string(name))) out.insert(std::string(name));
  };
  for (const pb::Node& n : g.node) {
    for (pb::Str i : n.input) use(i);
    for (const pb::Attribute& a : n.attribute) {
      if (a.g) em_free_names(*a.g, defined, out);
      for (const pb::Graph& sg : a.graphs) em_free_names(sg, defined, out);
    }
  }
  for (const pb::ValueInfo& vi : g.output) use(em_vi_name(vi));
}

// What a node reads: its inputs and what its subgraphs read from its graph.
std::vector<std::string> em_reads(const pb::Node& n) {
  std::vector<std::string> r;
  for (pb::Str i : n.input)
    if (!i.empty()) r.emplace_back(i);
  std::set<std::string> free;
  for (const pb::Attribute& a : n.attribute) {
    if (a.g) em_free_names(*a.g, {}, free);
    for (const pb::Graph& sg : a.graphs) em_free_names(sg, {}, free);
  }
  r.insert(r.end(), free.begin(), free.end());
  return r;
}

// The model's tensors' data stays where the document's views point: the result keeps `from` alive.
void em_keep(pb::ModelDocument& to, const pb::ModelDocument& from) {
  if (from.source) to.arena->keep(from.source);
  if (from.arena && from.arena != to.arena) to.arena->keep(from.arena);
}

bool em_has_external(const pb::Graph& g) {
  for (const pb::Tensor& t : g.initializer)
    if (t.data_location.value_or(0) == 1) return true;
  for (const pb::SparseTensor& s : g.sparse_initializer)
    if ((s.values && s.values->data_location.value_or(0) == 1) || (s.indices && s.indices->data_location.value_or(0) == 1))
      return true;
  for (const pb::Node& n : g.node)
    for (const pb::Attribute& a : n.attribute) {
      if (a.t && a.t->data_location.value_or(0) == 1) return true;
      if (a.g && em_has_external(*a.g)) return true;
      for (const pb::Graph& sg : a.graphs)
        if (em_has_external(sg)) return true;
    }
  return false;
}

void em_check(const pb::ModelDocument& doc, const char* what) {
  try {
    check::check_model_or_throw(doc);
  } catch (const Error& e) {
    fail("the ", what, " model does not pass the checker: ", e.what());
  }
}

// ---- Renaming, for prefixes and for connecting the two models ----

// Returns the new name of a value, or nullopt to keep it.
using EmRename = std::function<std::optional<std::string>(std::string_view)>;

class EmRenamer {
 public:
  EmRenamer(pb::Arena& arena, EmRename values, std::string node_prefix)
      : arena_(arena), values_(std::move(values)), node_prefix_(std::move(node_prefix)) {}

  void graph(pb::Graph& g) {
    for (pb::ValueInfo& vi : g.input) opt(vi.name);
    for (pb::ValueInfo& vi : g.output) opt(vi.name);
    for (pb::ValueInfo& vi : g.value_info) opt(vi.name);
    for (pb::Tensor& t : g.initializer) opt(t.name);
    for (pb::SparseTensor& s : g.sparse_initializer) {
      if (s.values) opt(s.values->name);
      if (s.indices) opt(s.indices->name);
    }
    for (pb::TensorAnnotation& q : g.quantization_annotation) {
      opt(q.tensor_name);
      for (pb::StringStringEntry& e : q.quant_parameter_tensor_names) opt(e.value);
    }
    for (pb::Node& n : g.node) {
      for (pb::Str& s : n.input) str(s);
      for (pb::Str& s : n.output) str(s);
      if (!node_prefix_.empty() && n.name && !n.name->empty()) n.name = arena_.save(node_prefix_ + std::string(*n.name));
      for (pb::Attribute& a : n.attribute) {
        if (a.g) graph(*a.g);
        for (pb::Graph& sg : a.graphs) graph(sg);
      }
    }
  }

 private:
  void str(pb::Str& s) {
    if (s.empty()) return;  // an omitted optional input or output
    if (auto r = values_(s)) s = arena_.save(std::move(*r));
  }
  void opt(pb::OptStr& s) {
    if (!s) return;
    pb::Str v = *s;
    str(v);
    s = v;
  }
  pb::Arena& arena_;
  EmRename values_;
  std::string node_prefix_;
};

// Every name of `m` (values, nodes, model-local functions and the calls of them) with `prefix` before it.
void em_prefix(pb::Model& m, const std::string& prefix, pb::Arena& arena) {
  if (prefix.empty()) return;
  EmRenamer r(arena, [&](std::string_view n) -> std::optional<std::string> { return prefix + std::string(n); }, prefix);
  if (m.graph) r.graph(*m.graph);
  std::set<std::pair<std::string, std::string>> functions;  // (domain, name)
  for (pb::Function& f : m.functions) {
    functions.emplace(std::string(f.domain.value_or("")), std::string(f.name.value_or("")));
    f.name = arena.save(prefix + std::string(f.name.value_or("")));
  }
  std::function<void(std::vector<pb::Node>&)> calls = [&](std::vector<pb::Node>& nodes) {
    for (pb::Node& n : nodes) {
      if (functions.count({std::string(n.domain.value_or("")), std::string(n.op_type.value_or(""))}))
        n.op_type = arena.save(prefix + std::string(n.op_type.value_or("")));
      for (pb::Attribute& a : n.attribute) {
        if (a.g) calls(a.g->node);
        for (pb::Graph& sg : a.graphs) calls(sg.node);
      }
    }
  };
  if (m.graph) calls(m.graph->node);
  for (pb::Function& f : m.functions) calls(f.node);
}

// Every value name of `g` and its subgraphs.
void em_value_names(const pb::Graph& g, std::set<std::string>& out) {
  for (const pb::ValueInfo& vi : g.input) out.insert(em_vi_name(vi));
  for (const pb::ValueInfo& vi : g.output) out.insert(em_vi_name(vi));
  for (const pb::ValueInfo& vi : g.value_info) out.insert(em_vi_name(vi));
  for (const pb::Tensor& t : g.initializer) out.insert(std::string(t.name.value_or("")));
  for (const pb::SparseTensor& s : g.sparse_initializer)
    if (s.values) out.insert(std::string(s.values->name.value_or("")));
  for (const pb::Node& n : g.node) {
    for (pb::Str s : n.input) out.emplace(s);
    for (pb::Str s : n.output) out.emplace(s);
    for (const pb::Attribute& a : n.attribute) {
      if (a.g) em_value_names(*a.g, out);
      for (const pb::Graph& sg : a.graphs) em_value_names(sg, out);
    }
  }
  out.erase("");
}

std::string em_domain(pb::OptStr d) {
  std::string s(d.value_or(""));
  return s == "ai.onnx" ? "" : s;
}

}  // namespace

// ---- Extraction ----

pb::ModelDocument extract_model(const pb::ModelDocument& doc, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs) {
  const std::string& label = doc.label;
  if (!doc.model.graph) fail(label, ": the model has no graph");
  if (outputs.empty()) fail(label, ": no outputs to extract");
  // Inference first, as onnx.utils.extract_model does: the new inputs and outputs take its types, and the kept
  // values keep its value_info.
  pb::ModelDocument typed = doc;
  infer_shapes(typed);
  const pb::Graph& g = *typed.model.graph;

  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.node.size(); ++i)
    for (pb::Str o : g.node[i].output)
      if (!o.empty()) producer.emplace(std::string(o), i);
  std::unordered_map<std::string, const pb::ValueInfo*> graph_inputs, graph_outputs, value_infos;
  for (const pb::ValueInfo& vi : g.input) graph_inputs.emplace(em_vi_name(vi), &vi);
  for (const pb::ValueInfo& vi : g.output) graph_outputs.emplace(em_vi_name(vi), &vi);
  for (const pb::ValueInfo& vi : g.value_info) value_infos.emplace(em_vi_name(vi), &vi);
  std::unordered_map<std::string, const pb::Tensor*> initializers;
  for (const pb::Tensor& t : g.initializer) initializers.emplace(std::string(t.name.value_or("")), &t);
  std::unordered_set<std::string> sparse;
  for (const pb::SparseTensor& s : g.sparse_initializer)
    if (s.values) sparse.insert(std::string(s.values->name.value_or("")));

  auto known = [&](const std::string& n) {
    return producer.count(n) || graph_inputs.count(n) || initializers.count(n) || sparse.count(n);
  };
  std::unordered_set<std::string> seen;
  for (const auto* list : {&inputs, &outputs}) {
    const char* what = list == &inputs ? "input" : "output";
    seen.clear();
    for (const std::string& n : *list) {
      if (!known(n))
        fail(label, ": ", what, " '", n, "' is not a value of the main graph (a graph input, initializer or node output)");
      if (!seen.insert(n).second) fail(label, ": ", what, " '", n, "' is named twice");
    }
  }

  // Walk back from each output to the given inputs; what a node reads from a graph input not given makes the
  // output impossible to compute.
  const std::unordered_set<std::string> given(inputs.begin(), inputs.end());
  std::vector<bool> keep(g.node.size(), false);
  std::unordered_set<std::string> used_constants, visited;
  for (const std::string& out : outputs) {
    std::vector<std::string> stack{out};
    while (!stack.empty()) {
      std::string n = std::move(stack.back());
      stack.pop_back();
      if (!visited.insert(n).second) continue;
      if (initializers.count(n) || sparse.count(n)) used_constants.insert(n);
      if (given.count(n) || initializers.count(n) || sparse.count(n)) continue;
      auto p = producer.find(n);
      if (p != producer.end()) {
        keep[p->second] = true;
        for (std::string& r : em_reads(g.node[p->second])) stack.push_back(std::move(r));
        continue;
      }
      if (graph_inputs.count(n))
        fail(label, ": output '", out, "' cannot be computed from the inputs ", em_list(inputs), ": it needs graph input '",
             n, "'");
      fail(label, ": output '", out, "' needs '", n, "', which nothing in the main graph defines");
    }
  }

  pb::ModelDocument result = typed;
  pb::Graph& ng = *result.model.graph;
  ng.node.clear();
  ng.input.clear();
  ng.output.clear();
  ng.initializer.clear();
  ng.sparse_initializer.clear();
  ng.value_info.clear();
  ng.quantization_annotation.clear();
  result.model.training_info.clear();  // its bindings name values the sub-model may no longer have

  std::unordered_set<std::string> kept_names;
  for (size_t i = 0; i < g.node.size(); ++i)
    if (keep[i]) {
      ng.node.push_back(g.node[i]);
      for (pb::Str s : g.node[i].output) kept_names.emplace(s);
      for (std::string& s : em_reads(g.node[i])) kept_names.insert(std::move(s));
    }
  // A value's declaration: as a graph input or output, else what inference gave it, else an initializer's type.
  auto declaration = [&](const std::string& n, const char* what) {
    for (const auto* m : {&graph_inputs, &graph_outputs, &value_infos})
      if (auto it = m->find(n); it != m->end() && it->second->type) return *it->second;
    if (auto it = initializers.find(n); it != initializers.end()) {
      pb::ValueInfo vi;
      vi.name = it->second->name;
      pb::TypeTensor& tt = vi.type.emplace().tensor_type.emplace();
      tt.elem_type = it->second->data_type;
      for (int64_t d : it->second->dims) tt.shape.emplace().dim.emplace_back().dim_value = d;
      if (it->second->dims.empty()) tt.shape.emplace();
      return vi;
    }
    fail(label, ": the new ", what, " '", n, "' has no type: the model declares none and inference finds none");
  };
  std::unordered_set<std::string> io;
  for (const std::string& n : inputs) {
    ng.input.push_back(declaration(n, "input"));
    io.insert(n);
  }
  for (const std::string& n : outputs) {
    ng.output.push_back(declaration(n, "output"));
    io.insert(n);
  }
  for (const pb::Tensor& t : g.initializer)
    if (used_constants.count(std::string(t.name.value_or("")))) {
      ng.initializer.push_back(t);
      // IR 3 wants every initializer listed as a graph input.
      std::string n(t.name.value_or(""));
      if (result.model.ir_version.value_or(0) < 4 && !given.count(n) && graph_inputs.count(n)) {
        ng.input.push_back(*graph_inputs.at(n));
        io.insert(n);
      }
    }
  for (const pb::SparseTensor& s : g.sparse_initializer)
    if (s.values && used_constants.count(std::string(s.values->name.value_or("")))) ng.sparse_initializer.push_back(s);
  for (const pb::ValueInfo& vi : g.value_info)
    if (kept_names.count(em_vi_name(vi)) && !io.count(em_vi_name(vi))) ng.value_info.push_back(vi);
  for (const pb::TensorAnnotation& q : g.quantization_annotation)
    if (q.tensor_name && (kept_names.count(std::string(*q.tensor_name)) || io.count(std::string(*q.tensor_name))))
      ng.quantization_annotation.push_back(q);
  em_check(result, "extracted");
  return result;
}

void extract_model_file(const std::filesystem::path& in, const std::filesystem::path& out,
                        const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                        const SaveOptions& save) {
  pb::ModelDocument doc = pb::load_model_file(in);
  save_model(extract_model(doc, inputs, outputs), out, save);
}

// ---- Composition ----

pb::ModelDocument merge_models(const pb::ModelDocument& a, const pb::ModelDocument& b,
                               const std::vector<std::pair<std::string, std::string>>& io_map,
                               const MergeOptions& options) {
  const std::string la = a.label, lb = b.label;
  if (!a.model.graph) fail(la, ": the model has no graph");
  if (!b.model.graph) fail(lb, ": the model has no graph");

  pb::ModelDocument result;
  result.label = cat(la, " + ", lb);
  result.dir = a.dir;
  em_keep(result, a);
  em_keep(result, b);
  pb::Arena& arena = *result.arena;
  if (em_has_external(*b.model.graph) && std::filesystem::absolute(a.dir) != std::filesystem::absolute(b.dir))
    fail(lb, ": has external data in another folder than ", la,
         "'s; bring it inline first (onyx convert --inline) or put both models in one folder");

  // Opsets: one version per domain.
  pb::Model& m = result.model;
  std::map<std::string, int64_t> opsets;
  for (const pb::OperatorSetId& o : a.model.opset_import) {
    opsets[em_domain(o.domain)] = o.version.value_or(0);
    m.opset_import.push_back(o);
  }
  for (const pb::OperatorSetId& o : b.model.opset_import) {
    std::string d = em_domain(o.domain);
    auto it = opsets.find(d);
    if (it == opsets.end()) {
      opsets[d] = o.version.value_or(0);
      m.opset_import.push_back(o);
    } else if (it->second != o.version.value_or(0)) {
      fail("cannot merge ", la, " and ", lb, ": domain '", d.empty() ? "ai.onnx" : d, "' is imported at opset ",
           it->second, " by the first and ", o.version.value_or(0), " by the second (convert one to the other's)");
    }
  }
  // The IR version of the newer model: its rules are a superset of the older one's for what a model holds.
  m.ir_version = std::max(a.model.ir_version.value_or(0), b.model.ir_version.value_or(0));
  m.producer_name = "onyx merge";

  pb::Model ma = a.model, mb = b.model;
  em_prefix(ma, options.prefix1, arena);
  em_prefix(mb, options.prefix2, arena);
  pb::Graph& ga = *ma.graph;
  pb::Graph& gb = *mb.graph;

  std::vector<std::pair<std::string, std::string>> links;
  std::unordered_map<std::string, const pb::ValueInfo*> outs_a, ins_b;
  for (const pb::ValueInfo& vi : ga.output) outs_a.emplace(em_vi_name(vi), &vi);
  for (const pb::ValueInfo& vi : gb.input) ins_b.emplace(em_vi_name(vi), &vi);
  std::unordered_map<std::string, std::string> b_from_a;  // input of b -> output of a feeding it
  std::unordered_set<std::string> linked_outs;
  for (const auto& [out, in] : io_map) {
    std::string o = options.prefix1 + out, i = options.prefix2 + in;
    auto ao = outs_a.find(o);
    if (ao == outs_a.end())
      fail(la, ": '", out, "' is not an output of the first model (its outputs: ",
           em_list(em_names(a.model.graph->output, em_vi_name)), ")");
    auto bi = ins_b.find(i);
    if (bi == ins_b.end())
      fail(lb, ": '", in, "' is not an input of the second model (its inputs: ",
           em_list(em_names(b.model.graph->input, em_vi_name)), ")");
    if (!b_from_a.emplace(i, o).second) fail(lb, ": input '", in, "' is connected twice in the io map");
    linked_outs.insert(o);
    // Element types and static dims must agree across the connection.
    if (ao->second->type && bi->second->type) {
      const Type to = type_from_proto(*ao->second->type), ti = type_from_proto(*bi->second->type);
      bool clash = to.kind != Type::Kind::Unknown && ti.kind != Type::Kind::Unknown && to.kind != ti.kind;
      if (to.kind == Type::Kind::Tensor && ti.kind == Type::Kind::Tensor) {
        clash |= to.elem != DataType::Undefined && ti.elem != DataType::Undefined && to.elem != ti.elem;
        if (to.shape.rank_known && ti.shape.rank_known) {
          clash |= to.shape.dims.size() != ti.shape.dims.size();
          for (size_t k = 0; !clash && k < to.shape.dims.size(); ++k)
            clash |= to.shape.dims[k].value && ti.shape.dims[k].value && *to.shape.dims[k].value != *ti.shape.dims[k].value;
        }
      }
      if (clash)
        fail("cannot connect output '", out, "' of ", la, " (", to.to_string_with_shape(), ") to input '", in, "' of ",
             lb, " (", ti.to_string_with_shape(), ")");
    }
  }

  // Names both graphs use, but for the inputs of b that become a's outputs.
  std::set<std::string> names_a, names_b;
  em_value_names(ga, names_a);
  em_value_names(gb, names_b);
  std::vector<std::string> clashes;
  for (const std::string& n : names_b)
    if (!b_from_a.count(n) && names_a.count(n)) clashes.push_back(n);
  if (!clashes.empty()) {
    if (clashes.size() > 8) clashes.resize(8);
    fail("cannot merge ", la, " and ", lb, ": both use the names ", em_list(clashes),
         "; give one model a prefix (--prefix1 / --prefix2, Python prefix1= / prefix2=)");
  }

  // b's connected inputs and what declares them go; its nodes read a's outputs instead.
  auto linked = [&](pb::OptStr n) { return n && b_from_a.count(std::string(*n)); };
  std::erase_if(gb.input, [&](const pb::ValueInfo& vi) { return linked(vi.name); });
  std::erase_if(gb.value_info, [&](const pb::ValueInfo& vi) { return linked(vi.name); });
  std::erase_if(gb.initializer, [&](const pb::Tensor& t) { return linked(t.name); });
  std::erase_if(gb.sparse_initializer, [&](const pb::SparseTensor& s) { return s.values && linked(s.values->name); });
  EmRenamer(arena,
          [&](std::string_view n) -> std::optional<std::string> {
            auto it = b_from_a.find(std::string(n));
            if (it == b_from_a.end()) return std::nullopt;
            return it->second;
          },
          "")
      .graph(gb);

  pb::Graph& g = m.graph.emplace();
  g.name = arena.save(cat(ga.name.value_or(""), "_", gb.name.value_or("")));
  g.doc_string = arena.save(cat("Graph combining ", ga.name.value_or(""), " and ", gb.name.value_or("")));
  auto append = [](auto& to, auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  append(g.node, ga.node);
  append(g.node, gb.node);
  append(g.input, ga.input);
  append(g.input, gb.input);
  for (const pb::ValueInfo& vi : ga.output)
    if (!linked_outs.count(em_vi_name(vi))) g.output.push_back(vi);
  append(g.output, gb.output);
  append(g.initializer, ga.initializer);
  append(g.initializer, gb.initializer);
  append(g.sparse_initializer, ga.sparse_initializer);
  append(g.sparse_initializer, gb.sparse_initializer);
  append(g.value_info, ga.value_info);
  append(g.value_info, gb.value_info);
  append(g.quantization_annotation, ga.quantization_annotation);
  append(g.quantization_annotation, gb.quantization_annotation);
  if (g.output.empty()) fail("cannot merge ", la, " and ", lb, ": the merged model would have no outputs");

  // Metadata: a key both models set must have one value.
  std::map<std::string, std::string> props;
  for (const pb::Model* src : {&a.model, &b.model})
    for (const pb::StringStringEntry& e : src->metadata_props) {
      std::string k(e.key.value_or("")), v(e.value.value_or(""));
      auto [it, fresh] = props.emplace(k, v);
      if (fresh) m.metadata_props.push_back(e);
      else if (it->second != v)
        fail("cannot merge ", la, " and ", lb, ": metadata '", k, "' is '", it->second, "' in the first and '", v,
             "' in the second");
    }
  // Model-local functions: one definition per (domain, name, overload).
  std::set<std::tuple<std::string, std::string, std::string>> functions;
  for (pb::Model* src : {&ma, &mb})
    for (pb::Function& f : src->functions) {
      if (!functions
               .emplace(std::string(f.domain.value_or("")), std::string(f.name.value_or("")),
                        std::string(f.overload.value_or("")))
               .second)
        fail("cannot merge ", la, " and ", lb, ": both define the model-local function '", f.domain.value_or(""), ".",
             f.name.value_or(""), "'; give one model a prefix (--prefix1 / --prefix2)");
      m.functions.push_back(std::move(f));
    }
  em_check(result, "merged");
  return result;
}

void merge_model_files(const std::filesystem::path& a, const std::filesystem::path& b, const std::filesystem::path& out,
                       const std::vector<std::pair<std::string, std::string>>& io_map, const MergeOptions& options,
                       const SaveOptions& save) {
  pb::ModelDocument da = pb::load_model_file(a), db = pb::load_model_file(b);
  save_model(merge_models(da, db, io_map, options), out, save);
}

}  // namespace onyx::opt
