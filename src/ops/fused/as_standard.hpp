// How onyx's fused ops (ai.onyx) stand for standard ops: look one up at a fixed version, infer as it, make its
// kernel, run it on a fused node's inputs. Their results are the standard ops' results.
#pragma once
#include <algorithm>

#include "ops/op_kit.hpp"

namespace onyx::ops {

// The standard op a fused op runs, looked up when used (the registry is complete by then).
inline const OpDef& standard(const char* op_type, int version) {
  const OpDef* d = builtin_registry().find("", op_type, version);
  if (!d) fail(op_type, "(", version, ") is not registered");
  return *d;
}

// Inference of the standard op at its version, on this node.
inline void infer_as(InferContext& ctx, const OpDef& def) {
  InferContext inner = ctx;
  inner.opset = def.since_version;
  def.infer(inner);
  ctx.output_types = std::move(inner.output_types);
  ctx.output_values = std::move(inner.output_values);
  ctx.output_dim_values = std::move(inner.output_dim_values);
}

// Runs `kernel` (made for a standard op at `opset`) on `inputs` for `node`; returns its outputs.
inline std::vector<Datum> run_on(Kernel& kernel, const Node& node, int64_t opset, std::vector<const Datum*> inputs,
                                 size_t num_outputs) {
  KernelContext inner(node, opset, std::move(inputs), num_outputs, nullptr);
  kernel.run(inner);
  return std::move(inner.outputs());
}

// Runs `kernel` (made for the standard op at `opset`) on the inputs of ctx; returns its outputs.
inline std::vector<Datum> run_as(Kernel& kernel, const KernelContext& ctx, int64_t opset, size_t num_outputs) {
  std::vector<const Datum*> in;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) in.push_back(ctx.has_input(i) ? &ctx.input_datum(i) : nullptr);
  return run_on(kernel, ctx.node(), opset, std::move(in), num_outputs);
}

inline std::unique_ptr<Kernel> kernel_as(const KernelInit& init, const OpDef& def) {
  KernelInit inner = init;
  inner.opset = def.since_version;
  return def.kernel(inner);
}

// The standard op's reference kernel on the fused node's first `inputs` inputs (the fused node's own extra inputs,
// such as a residual Z, are not the standard op's).
inline std::unique_ptr<Kernel> reference_kernel_as(const KernelInit& init, const OpDef& def, size_t inputs) {
  KernelInit inner = init;
  inner.input_types.resize(std::min(inputs, init.input_types.size()));
  inner.input_values.resize(std::min(inputs, init.input_values.size()));
  inner.reference_only = true;
  return kernel_as(inner, def);
}

// Add-14 run on a fused node's behalf (the residual and bias sums of its reference path); errors name the node.
class AddStep {
 public:
  explicit AddStep(const Node& fused) {
    node_.op_type = "Add";
    node_.name = fused.name;
    node_.graph = fused.graph;
    node_.inputs = {nullptr, nullptr};
    node_.outputs = {nullptr};
    kernel_ = standard("Add", kVersion).kernel(KernelInit{node_, kVersion, AttributeView(node_), {}, {}});
  }
  Datum run(const Datum& a, const Datum& b) const {
    check_input_types(standard("Add", kVersion), node_, {a.tensor.dtype(), b.tensor.dtype()});
    std::vector<Datum> y = run_on(*kernel_, node_, kVersion, {&a, &b}, 1);
    if (y.empty() || !y[0].is_tensor()) fail("node '", node_.name, "': the sum gave no tensor");
    return std::move(y[0]);
  }

 private:
  static constexpr int kVersion = 14;
  Node node_;
  std::unique_ptr<Kernel> kernel_;
};

}  // namespace onyx::ops
