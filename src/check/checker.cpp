// The model-level checks: header, operator sets, model-local functions, training info; and the entry points.
#include "check/checker_parts.hpp"

#include "check/function_calls.hpp"

namespace onyx::check {
namespace detail {

std::vector<std::string> Checker::run() {
  check_header();
  build_model_opsets();
  index_functions();
  for (std::string& cycle : function_call_cycles(doc_.model)) problem(cycle);
  const auto& model = doc_.model;
  if (!model.graph) {
    problem("the model has no graph");
  } else {
    const pb::Graph& g = *model.graph;
    std::string path = g.name && !g.name->empty() ? cat("graph ", quote(*g.name)) : "main graph";
    check_graph(g, nullptr, std::move(path), Context{&model_opsets_, "the model", nullptr});
  }
  for (const auto& f : model.functions) check_function(f);
  for (size_t k = 0; k < model.training_info.size(); ++k) check_training(model.training_info[k], k);
  return std::move(problems_);
}

void Checker::check_header() {
  const auto& ir = doc_.model.ir_version;
  if (!ir) {
    problem("the model has no ir_version");
  } else if (*ir < 1) {
    problem("ir_version ", *ir, " is invalid (IR versions start at 1)");
  } else {
    ir_version_ = *ir;
  }
}

OpsetMap Checker::build_opsets(const std::vector<pb::OperatorSetId>& imports, std::string_view where) {
  OpsetMap map;
  for (size_t k = 0; k < imports.size(); ++k) {
    const auto& imp = imports[k];
    const Str domain = spec::canonical_domain(imp.domain.value_or(""));
    if (!imp.version) {
      problem(where, ": opset_import #", k, " (domain ", quote(domain), ") has no version");
      continue;
    }
    const auto [it, inserted] = map.emplace(domain, *imp.version);
    if (!inserted) {
      problem(where, ": domain ", quote(domain), " is imported twice (versions ", it->second, " and ",
              *imp.version, ")");
    } else if (*imp.version < 1 && spec::is_known_domain(domain)) {
      problem(where, ": opset_import of domain ", quote(domain), " has version ", *imp.version,
              " (versions start at 1)");
    }
  }
  return map;
}

void Checker::build_model_opsets() {
  const auto& imports = doc_.model.opset_import;
  if (imports.empty()) {
    if (ir_version_ >= 3) {
      problem("the model has no opset_import (required since IR version 3)");
    } else {
      model_opsets_.emplace("ai.onnx", 1);  // models before IR version 3 used operator set 1
    }
    return;
  }
  model_opsets_ = build_opsets(imports, "the model");
}

std::string function_label(const pb::Function& f) {
  std::string out = cat("function ", quote(f.name.value_or("")), " (domain ", quote(f.domain.value_or("")));
  if (f.overload && !f.overload->empty()) out += cat(", overload ", quote(*f.overload));
  return out + ")";
}

void Checker::index_functions() {
  const auto& functions = doc_.model.functions;
  for (size_t k = 0; k < functions.size(); ++k) {
    const auto& f = functions[k];
    if (!f.name || f.name->empty()) continue;  // reported by check_function
    auto& overloads = functions_[spec::canonical_domain(f.domain.value_or(""))][*f.name];
    if (!overloads.insert(f.overload.value_or("")).second) {
      problem(function_label(f), " is defined more than once");
    }
  }
}

void Checker::check_function(const pb::Function& f) {
  FunctionInfo info{function_label(f), {}};
  const std::string& where = info.label;
  if (!f.name || f.name->empty()) problem("model function #", &f - doc_.model.functions.data(), " has no name");
  if (!f.domain) problem(where, ": the function has no domain");

  for (size_t k = 0; k < f.attribute.size(); ++k) {
    if (f.attribute[k].empty()) {
      problem(where, ": attribute #", k, " has an empty name");
    } else if (!info.attribute_names.insert(f.attribute[k]).second) {
      problem(where, ": attribute ", quote(f.attribute[k]), " is declared twice");
    }
  }
  const OpsetMap opsets = build_opsets(f.opset_import, where);
  Scope scope;
  scope.path = where;
  scope.nodes = &f.node;
  for (size_t k = 0; k < f.attribute_proto.size(); ++k) {
    const auto& a = f.attribute_proto[k];
    if (!a.name || a.name->empty()) {
      problem(where, ": attribute_proto #", k, " has no name");
      continue;
    }
    if (!info.attribute_names.insert(*a.name).second) {
      problem(where, ": attribute ", quote(*a.name), " is declared twice");
    }
    // A default value: checked like a node attribute outside any function.
    check_attribute(scope, a, k, [&] { return cat(where, ": default of attribute ", quote(*a.name)); },
                    [&] { return where; }, Context{&opsets, where, nullptr});
  }

  for (size_t k = 0; k < f.input.size(); ++k) {
    const Str name = f.input[k];
    if (name.empty()) {
      problem(where, ": input #", k, " has an empty name");
    } else if (!scope.defined.emplace(name, Definition{DefKind::FunctionInput}).second) {
      problem(where, ": input ", quote(name), " is listed twice");
    }
  }
  for (size_t i = 0; i < f.node.size(); ++i) {
    for (const Str out : f.node[i].output) {
      if (!out.empty()) scope.producer.emplace(out, i);
    }
  }
  const Context ctx{&opsets, where, &info};
  check_nodes(scope, ctx);

  std::unordered_set<Str> outputs;
  for (size_t k = 0; k < f.output.size(); ++k) {
    const Str name = f.output[k];
    if (name.empty()) {
      problem(where, ": output #", k, " has an empty name");
    } else if (!outputs.insert(name).second) {
      problem(where, ": output ", quote(name), " is listed twice");
    } else if (!scope.defined.count(name)) {
      problem(where, ": output ", quote(name), " is not computed by any node of the function nor is it an input");
    }
  }
}

void Checker::check_training(const pb::TrainingInfo& info, size_t index) {
  // The training graphs may read the main graph's inputs and initializers (onnx.proto,
  // TrainingInfoProto): they form the outer scope, and (leniently) may be redefined.
  Scope outer;
  outer.path = "main graph";
  outer.allow_redefinition = true;
  if (doc_.model.graph) {
    const auto& g = *doc_.model.graph;
    for (const auto& vi : g.input) {
      if (vi.name) outer.defined.emplace(*vi.name, Definition{DefKind::Outer});
    }
    for (const auto& t : g.initializer) {
      if (t.name) outer.defined.emplace(*t.name, Definition{DefKind::Outer});
    }
    for (const auto& sp : g.sparse_initializer) {
      if (sp.values && sp.values->name) outer.defined.emplace(*sp.values->name, Definition{DefKind::Outer});
    }
  }
  const Context ctx{&model_opsets_, "the model", nullptr};
  const std::string base = cat("training_info[", index, "]");
  if (info.initialization) check_graph(*info.initialization, &outer, base + " initialization graph", ctx);
  if (info.algorithm) check_graph(*info.algorithm, &outer, base + " algorithm graph", ctx);

  auto check_bindings = [&](const pb::Metadata& bindings, const std::optional<pb::Graph>& g,
                            std::string_view field, std::string_view graph_name) {
    std::unordered_set<Str> outputs, keys;
    if (g) {
      for (const auto& vi : g->output) {
        if (vi.name) outputs.insert(*vi.name);
      }
    }
    for (size_t k = 0; k < bindings.size(); ++k) {
      const Str key = bindings[k].key.value_or("");
      const Str value = bindings[k].value.value_or("");
      const std::string where = cat(base, " ", field, " #", k);
      if (key.empty() || value.empty()) {
        problem(where, ": the binding needs both a key (an initializer) and a value (a graph output)");
        continue;
      }
      if (!keys.insert(key).second) problem(where, ": initializer ", quote(key), " is bound twice");
      if (!outputs.count(value)) {
        problem(where, ": ", quote(value), " is not an output of the ", graph_name, " graph");
      }
    }
  };
  check_bindings(info.initialization_binding, info.initialization, "initialization_binding", "initialization");
  check_bindings(info.update_binding, info.algorithm, "update_binding", "algorithm");
}

}  // namespace detail

std::vector<std::string> check_model(const pb::ModelDocument& doc, const CheckOptions& opts) {
  return detail::Checker(doc, opts).run();
}

void check_model_or_throw(const pb::ModelDocument& doc, const CheckOptions& opts) {
  const auto problems = check_model(doc, opts);
  if (problems.empty()) return;
  if (problems.size() == 1) throw Error(problems.front());
  fail(problems.front(), " (and ", problems.size() - 1, " more)");
}

}  // namespace onyx::check
