#include "check/topological_order.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "base/error.hpp"

namespace onyx::check {
namespace {

using pb::Str;
using Names = std::unordered_set<Str>;

void for_each_subgraph(pb::Attribute& a, const std::function<void(pb::Graph&)>& f) {
  if (a.g) f(*a.g);
  for (pb::Graph& g : a.graphs) f(g);
}

void for_each_subgraph(const pb::Attribute& a, const std::function<void(const pb::Graph&)>& f) {
  if (a.g) f(*a.g);
  for (const pb::Graph& g : a.graphs) f(g);
}

void add_outer_reads(const pb::Graph& g, Names& reads);

// What a node reads: its inputs, and the outer values its subgraphs read.
Names node_reads(const pb::Node& n) {
  Names reads;
  for (Str in : n.input)
    if (!in.empty()) reads.insert(in);
  for (const pb::Attribute& a : n.attribute) for_each_subgraph(a, [&](const pb::Graph& g) { add_outer_reads(g, reads); });
  return reads;
}

// Adds the names `g` reads without defining them: values of the enclosing scopes.
void add_outer_reads(const pb::Graph& g, Names& reads) {
  Names defined;
  for (const pb::ValueInfo& v : g.input)
    if (v.name) defined.insert(*v.name);
  for (const pb::Tensor& t : g.initializer)
    if (t.name) defined.insert(*t.name);
  for (const pb::SparseTensor& s : g.sparse_initializer)
    if (s.values && s.values->name) defined.insert(*s.values->name);
  for (const pb::Node& n : g.node)
    for (Str out : n.output)
      if (!out.empty()) defined.insert(out);
  Names used;
  for (const pb::Node& n : g.node) used.merge(node_reads(n));
  for (const pb::ValueInfo& v : g.output)
    if (v.name) used.insert(*v.name);
  for (Str name : used)
    if (!defined.count(name)) reads.insert(name);
}

std::string node_text(const pb::Node& n, size_t index) {
  const std::string who = n.name && !n.name->empty() ? cat("node '", *n.name, "'") : cat("node #", index);
  return cat(who, " (", n.op_type.value_or(""), ")");
}

class Sorter {
 public:
  explicit Sorter(std::vector<std::string>& notes) : notes_(notes) {}

  void graph(pb::Graph& g, const std::string& path) {
    nodes(g.node, path);
  }

  // Sorts the subgraphs of `list` first, then `list` itself.
  void nodes(std::vector<pb::Node>& list, const std::string& path) {
    for (size_t i = 0; i < list.size(); ++i)
      for (pb::Attribute& a : list[i].attribute)
        for_each_subgraph(a, [&](pb::Graph& g) {
          graph(g, cat(path, " > ", node_text(list[i], i), " attribute '", a.name.value_or(""), "'"));
        });
    sort(list, path);
  }

 private:
  void sort(std::vector<pb::Node>& list, const std::string& path) {
    const size_t n = list.size();
    std::unordered_map<Str, size_t> producer;
    for (size_t i = 0; i < n; ++i)
      for (Str out : list[i].output)
        if (!out.empty()) producer.try_emplace(out, i);
    std::vector<std::vector<size_t>> users(n);
    std::vector<size_t> waiting(n, 0);  // producers each node still waits for
    size_t first_late = n;
    const auto read = [&](size_t i, Str name) {
      const auto it = producer.find(name);
      if (it == producer.end() || it->second == i) return;  // defined outside, or a self-read the checker names
      users[it->second].push_back(i);
      ++waiting[i];
      if (it->second > i && first_late == n) first_late = it->second;
    };
    for (size_t i = 0; i < n; ++i) {
      const bool holds_graphs = std::any_of(list[i].attribute.begin(), list[i].attribute.end(),
                                            [](const pb::Attribute& a) { return a.g || !a.graphs.empty(); });
      if (holds_graphs) {
        for (Str name : node_reads(list[i])) read(i, name);
      } else {
        for (Str name : list[i].input)
          if (!name.empty()) read(i, name);
      }
    }
    if (first_late == n) return;
    // Kahn's algorithm, always taking the ready node that came first in the file.
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
      if (waiting[i] == 0) ready.push(i);
    std::vector<size_t> order;
    order.reserve(n);
    while (!ready.empty()) {
      const size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t u : users[i])
        if (--waiting[u] == 0) ready.push(u);
    }
    if (order.size() != n) return;  // a cycle
    const std::string late = node_text(list[first_late], first_late);
    std::vector<pb::Node> sorted;
    sorted.reserve(n);
    for (size_t i : order) sorted.push_back(std::move(list[i]));
    list = std::move(sorted);
    notes_.push_back(cat(path, ": nodes were not in topological order (", late,
                         " is listed after a node that reads its output); sorted them"));
  }

  std::vector<std::string>& notes_;
};

}  // namespace

std::vector<std::string> sort_nodes_topologically(pb::ModelDocument& doc) {
  std::vector<std::string> notes;
  Sorter sorter(notes);
  pb::Model& m = doc.model;
  if (m.graph) sorter.graph(*m.graph, cat(doc.label, ": graph '", m.graph->name.value_or(""), "'"));
  for (pb::TrainingInfo& t : m.training_info) {
    if (t.initialization) sorter.graph(*t.initialization, cat(doc.label, ": training initialization graph"));
    if (t.algorithm) sorter.graph(*t.algorithm, cat(doc.label, ": training algorithm graph"));
  }
  for (pb::Function& f : m.functions)
    sorter.nodes(f.node, cat(doc.label, ": function '", f.name.value_or(""), "' (domain '", f.domain.value_or(""), "')"));
  return notes;
}

void sort_nodes_topologically_with_warnings(pb::ModelDocument& doc, int log_level) {
  for (const std::string& note : sort_nodes_topologically(doc))
    if (log_level <= 2) std::fprintf(stderr, "onyx: warning: %s\n", note.c_str());
}

}  // namespace onyx::check
