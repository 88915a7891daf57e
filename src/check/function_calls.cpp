#include "check/function_calls.hpp"

#include <map>
#include <string_view>
#include <tuple>

#include "base/error.hpp"
#include "ir/spec_table.hpp"

namespace onyx::check {

namespace {

using Key = std::tuple<std::string_view, std::string_view, std::string_view>;  // domain, name, overload

// The functions of the model that the nodes of `f` (and of every subgraph below them) call, by index.
std::vector<size_t> callees(const pb::Function& f, const std::map<Key, size_t>& index) {
  std::vector<size_t> out;
  std::vector<const std::vector<pb::Node>*> pending{&f.node};
  while (!pending.empty()) {
    const std::vector<pb::Node>* nodes = pending.back();
    pending.pop_back();
    for (const pb::Node& n : *nodes) {
      const auto it = index.find({spec::canonical_domain(n.domain.value_or("")), n.op_type.value_or(""),
                                  n.overload.value_or("")});
      if (it != index.end()) out.push_back(it->second);
      for (const pb::Attribute& a : n.attribute) {
        if (a.g) pending.push_back(&a.g->node);
        for (const pb::Graph& g : a.graphs) pending.push_back(&g.node);
      }
    }
  }
  return out;
}

std::string name_of(const pb::Function& f) {
  std::string s(f.name.value_or(""));
  if (f.overload && !f.overload->empty()) s += cat(" (overload '", *f.overload, "')");
  return s;
}

}  // namespace

std::vector<std::string> function_call_cycles(const pb::Model& model) {
  const std::vector<pb::Function>& fs = model.functions;
  std::map<Key, size_t> index;
  for (size_t i = 0; i < fs.size(); ++i)
    if (fs[i].name && !fs[i].name->empty())
      index.emplace(Key{spec::canonical_domain(fs[i].domain.value_or("")), *fs[i].name, fs[i].overload.value_or("")}, i);
  std::vector<std::vector<size_t>> calls(fs.size());
  for (size_t i = 0; i < fs.size(); ++i) calls[i] = callees(fs[i], index);

  // Depth-first search with an explicit stack; a call to a function on the current path closes a cycle.
  enum class Mark { New, OnPath, Done };
  std::vector<Mark> mark(fs.size(), Mark::New);
  std::vector<std::string> out;
  for (size_t root = 0; root < fs.size(); ++root) {
    if (mark[root] != Mark::New) continue;
    std::vector<std::pair<size_t, size_t>> path{{root, 0}};  // function, next callee to visit
    mark[root] = Mark::OnPath;
    while (!path.empty()) {
      auto& [f, next] = path.back();
      if (next == calls[f].size()) {
        mark[f] = Mark::Done;
        path.pop_back();
        continue;
      }
      const size_t callee = calls[f][next++];
      if (mark[callee] == Mark::New) {
        mark[callee] = Mark::OnPath;
        path.push_back({callee, 0});
      } else if (mark[callee] == Mark::OnPath) {
        size_t start = 0;
        while (path[start].first != callee) ++start;
        // The chain in full up to 8 functions; a longer one by its first 4 and last 3.
        const size_t length = path.size() - start;
        std::string chain;
        for (size_t k = start; k < path.size(); ++k) {
          if (length > 8 && k == start + 4) {
            chain += cat("... (", length - 7, " more) -> ");
            k = path.size() - 4;
            continue;
          }
          chain += name_of(fs[path[k].first]) + " -> ";
        }
        out.push_back(cat("function '", name_of(fs[callee]), "' (domain '", fs[callee].domain.value_or(""),
                          "') calls itself: ", chain, name_of(fs[callee])));
      }
    }
  }
  return out;
}

}  // namespace onyx::check
