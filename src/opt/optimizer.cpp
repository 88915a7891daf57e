#include "opt/optimizer.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "base/error.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {

const std::vector<PassInfo>& passes() {
  // Folding first so later passes see constants; fusions before dead code so what they orphan goes in the same
  // round; fusions of bigger patterns before those of their parts (attention's scale/mask before MatMul+Add).
  static const std::vector<PassInfo> list = {
      // Before constant folding, which would fold DequantizeLinear(Wq) into a float weight.
      {"qdq-fusion", 2, fuse_qdq},
      {"constant-folding", 1, fold_constants},
      {"shape-folding", 1, fold_shape_computations},
      {"identity-elimination", 1, eliminate_identities},
      {"layout-cancellation", 1, cancel_layout_pairs},
      {"half-promotion", 2, promote_half_precision},
      {"attention-fusion", 2, fuse_attention},
      // Not in subgraphs: merged decoders keep their layers in If branches, where the normalized rows are single
      // tokens that DynamicQuantizeLinear reads; the fused kernel's sums round differently from the nodes', and
      // quantization turns those last bits into whole steps (a 1% change of the logits).
      {"layer-norm-fusion", 2, fuse_layer_norm, false},
      {"gelu-fusion", 2, fuse_gelu},
      {"hard-swish-fusion", 2, fuse_hard_swish},
      {"min-max-to-clip", 2, min_max_to_clip},
      {"batch-norm-folding", 2, fold_batch_norm},
      {"conv-mul-add-folding", 2, fold_conv_mul_add},
      {"pad-conv-fusion", 2, fuse_pad_into_conv},
      {"matmul-add-fusion", 2, fuse_matmul_add},
      {"matmul-epilogue-fusion", 2, fuse_matmul_epilogue},
      {"matmul-integer-fusion", 2, fuse_matmul_integer},
      {"conv-activation-fusion", 2, fuse_conv_activation},
      {"channels-last", 3, to_channels_last},
      {"nhwc-conv-fusion", 3, fuse_nhwc_conv_epilogue},
      {"dead-code-elimination", 1, eliminate_dead_code},
  };
  return list;
}

namespace {

// Kernels read raw_data through typed pointers, and a view into the file sits at any offset: passes that run
// kernels (folding) need the tensors they read aligned. Misaligned ones are copied, as the session does.
void align(Tensor& t) {
  const int bits = dtype_bits(t.dtype());
  const size_t need = bits >= 16 ? std::min<size_t>(static_cast<size_t>(bits) / 8, 8) : 1;
  if (need > 1 && reinterpret_cast<uintptr_t>(t.bytes().data()) % need != 0) t = t.clone();
}

void align_tensors(Graph& g) {
  for (auto& [name, t] : g.initializers) align(t);
  for (auto& n : g.nodes)
    for (Attribute& a : n->attributes) {
      if (a.t) align(*a.t);
      for (Tensor& t : a.tensors) align(t);
    }
}

// Runs the passes up to `level` on `g` in rounds until none changes anything; returns the rounds run.
int run_passes(Model& model, Graph& g, const OptimizeOptions& options, int level, bool subgraph, OptimizeReport& report,
               const Analysis::OuterTypes* outer = nullptr) {
  align_tensors(g);
  PassContext ctx(model, g, options, outer);
  // Each round runs every pass once; a pass only shrinks or fuses, so rounds end quickly. The bound guards
  // against two passes undoing each other forever.
  constexpr int kMaxRounds = 16;
  int rounds = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool any = false;
    for (const PassInfo& p : passes()) {
      if (p.level > level || (subgraph && !p.in_subgraphs)) continue;
      bool changed = p.run(ctx);
      // A pass that changed nothing leaves the analysis valid for the next one (it costs a whole-graph
      // inference to rebuild).
      if (changed || ctx.edited()) ctx.finish();
      if (!changed) continue;
      any = true;
      auto it = report.applied.begin();
      while (it != report.applied.end() && it->first != p.name) ++it;
      if (it == report.applied.end()) report.applied.emplace_back(p.name, 1);
      else ++it->second;
    }
    rounds = round + 1;
    if (!any) break;
  }
  return rounds;
}

// Subgraphs (If branches, Loop and Scan bodies, at any depth) get the passes up to level 2 that allow it: folding of
// what reads only constants (often the outer graph's weights: a merged decoder's whole model sits in an If branch
// and dequantizes or transposes its weights there), identities, dead code and the fusions. The layout pass
// (level 3) stays on the main graph.
// `outer`: the types of the values of the graphs enclosing `g`, which its subgraphs' analyses read.
void optimize_subgraphs(Model& model, Graph& g, const OptimizeOptions& options, OptimizeReport& report,
                        const Analysis::OuterTypes& outer) {
  std::optional<Analysis::OuterTypes> inner;  // g's types (after its passes) with the outer ones
  for (auto& n : g.nodes) {
    if (!n->graph) continue;  // removed
    for (Attribute& a : n->attributes) {
      std::vector<Graph*> subgraphs;
      if (a.g) subgraphs.push_back(a.g.get());
      for (auto& sg : a.graphs) subgraphs.push_back(sg.get());
      for (Graph* sg : subgraphs) {
        if (!inner) {
          inner = outer;
          const Analysis analysis(model, g, &outer);
          for (const Value& v : g.values()) (*inner)[&v] = analysis.type(&v);
        }
        run_passes(model, *sg, options, std::min(options.level, 2), true, report, &*inner);
        optimize_subgraphs(model, *sg, options, report, *inner);
      }
    }
  }
}

}  // namespace

OptimizeReport optimize(Model& model, const OptimizeOptions& options) {
  OptimizeReport report;
  if (!model.graph) return report;
  Graph& g = *model.graph;
  report.nodes_before = g.nodes.size();
  if (options.constant_initializer_inputs) {
    std::vector<Value*> kept;
    for (Value* v : g.inputs) {
      if (v->initializer) v->is_graph_input = false;
      else kept.push_back(v);
    }
    g.inputs = std::move(kept);
  }
  if (options.level > 0) {
    report.rounds = run_passes(model, g, options, options.level, false, report);
    optimize_subgraphs(model, g, options, report, {});
  }
  // IR 3 requires every initializer to be a graph input; folded values are constants, not inputs. IR 4 only
  // drops that requirement, so a model that gained such initializers is written as IR 4.
  if (model.ir_version < 4)
    for (const auto& [name, t] : g.initializers) {
      const Value* v = g.find_local(name);
      if (v && !v->is_graph_input) model.ir_version = 4;
    }
  report.nodes_after = g.nodes.size();
  return report;
}

int parse_level(const std::string& text) {
  if (text == "0" || text == "none" || text == "off") return 0;
  if (text == "1" || text == "basic") return 1;
  if (text == "2" || text == "extended") return 2;
  if (text == "3" || text == "layout" || text == "all") return 3;
  fail("optimization level '", text, "' is not one of basic, extended, all (or 0, 1, 2, 3)");
}

}  // namespace onyx::opt
