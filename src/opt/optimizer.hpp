// The graph optimizer: passes grouped by level (1 basic: folding and clean-up that keep the model's ops; 2
// extended: fusions into fewer, larger ops; 3 all: also the channels-last layout of convolutions), run in turn
// until none changes the graph. The session runs it on its own copy
// of the model at creation (SessionOptions::optimization_level); `onyx optimize` runs it on a file.
#pragma once
#include <string>
#include <vector>

#include "ir/model.hpp"
#include "opt/graph_edit.hpp"

namespace onyx::opt {

struct PassInfo {
  const char* name;
  int level;                     // the lowest level that runs it
  bool (*run)(PassContext& ctx);  // true when it changed the graph
  // Whether it also runs on subgraphs (If branches, Loop/Scan bodies), up to level 2 there.
  bool in_subgraphs = true;
};

// Every pass, in the order the driver runs them.
const std::vector<PassInfo>& passes();

struct OptimizeReport {
  size_t nodes_before = 0, nodes_after = 0;
  std::vector<std::pair<std::string, int>> applied;  // pass name, how many rounds it changed the graph
  int rounds = 0;
};

// Optimizes the model's main graph in place. Initializers the model maps are never written: passes make new
// tensors. Nodes the session could not bind or infer are left as they are, for the session to report.
OptimizeReport optimize(Model& model, const OptimizeOptions& options);

// Replaces every node of an op defined by other ops (ops::OpDef::expand: ONNX Runtime's contrib ops) by the nodes
// it expands to, in the main graph and its subgraphs; sessions (at every level) and `onyx optimize` run it before
// `optimize`. Errors name the model, graph and node. Returns whether anything changed.
bool expand_ops(Model& model);

// "basic" / "extended" / "all" (or "layout") / "0".."3" -> level; an error naming the accepted values otherwise.
int parse_level(const std::string& text);

}  // namespace onyx::opt
