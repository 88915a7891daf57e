// onyx optimize IN OUT: runs the graph optimizer on a model file and writes the result.
#include <charconv>
#include <iostream>

#include "base/error.hpp"
#include "cli.hpp"
#include "onyx/optimize.hpp"

namespace onyx::cli {

const char* const kOptimizeUsage =
    "usage: onyx optimize IN OUT [--level basic|extended|all] [--constant-initializer-inputs]\n"
    "                             [--external-data-threshold BYTES]\n"
    "\n"
    "Optimizes the model IN and writes it as OUT (OUT may be IN). Tensor data is written inline.\n"
    "  --level basic   (default) constant and shape-computation folding, Identity and dead code elimination,\n"
    "                  cancelling Transpose/Reshape/Squeeze-Unsqueeze pairs\n"
    "  --level extended  also folds BatchNormalization into Conv/Gemm/MatMul, fuses MatMul+Add into Gemm, Conv +\n"
    "                  activation, LayerNorm, GELU and attention patterns (ops ONNX lacks at the model's opset go\n"
    "                  to onyx's domain \"ai.onyx\", which onyx loads again)\n"
    "  --level all     also runs convolutions and pools channels-last (ai.onyx NhwcConv, NhwcMaxPool,\n"
    "                  NhwcAveragePool), with residual sums and activations fused into the convolution\n"
    "  --constant-initializer-inputs    initializers that are also graph inputs (as IR version < 4 requires)\n"
    "                   stop being inputs and are folded as constants; without it a feed could replace them, so\n"
    "                   they stay variables\n"
    "  --external-data-threshold BYTES  move initializers of at least BYTES bytes to OUT's external data file\n"
    "Prints the node count before and after and the passes that changed the graph.\n";

int cmd_optimize(const std::vector<std::string>& argv) {
  Args args(argv, {"--level", "--external-data-threshold"}, {"--constant-initializer-inputs"});
  if (print_help_if_asked(args, kOptimizeUsage)) return 0;
  expect_positional(args, 2, 2, kOptimizeUsage);
  opt::OptimizeOptions options;
  options.level = opt::parse_level(args.value("--level").value_or("basic"));
  options.constant_initializer_inputs = args.flag("--constant-initializer-inputs");
  SaveOptions save;
  if (auto t = args.value("--external-data-threshold")) {
    auto [p, ec] = std::from_chars(t->data(), t->data() + t->size(), save.threshold);
    if (ec != std::errc() || p != t->data() + t->size()) fail("--external-data-threshold: '", *t, "' is not a byte count");
    save.data = SaveOptions::Data::External;
  }
  opt::OptimizeReport r = opt::optimize_file(args.positional()[0], args.positional()[1], options, save);
  std::cout << "nodes: " << r.nodes_before << " -> " << r.nodes_after << "\n";
  for (const auto& [name, rounds] : r.applied) std::cout << "  " << name << " (changed the graph in " << rounds
                                                         << (rounds == 1 ? " round)\n" : " rounds)\n");
  return 0;
}

}  // namespace onyx::cli
