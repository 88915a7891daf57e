#include "flops.hpp"

#include <string_view>

namespace onyx::cli {
namespace {

double elements(const std::vector<int64_t>& d) {
  double n = 1;
  for (int64_t x : d) n *= static_cast<double>(x);
  return n;
}

const std::vector<int64_t>* dims(const std::vector<std::vector<int64_t>>& all, size_t i) {
  return i < all.size() && !all[i].empty() ? &all[i] : nullptr;
}

}  // namespace

double node_flops(const NodeTiming& t) {
  const std::string_view op = t.op_type;
  const auto* a = dims(t.input_dims, 0);
  const auto* y = dims(t.output_dims, 0);
  if (!a || !y) return 0;
  // Products: every output element is a dot product over K, A's last dim (Gemm: A's elements per output row).
  if (op == "MatMul" || op == "FusedMatMul" || op == "MatMulInteger" || op == "MatMulIntegerToFloat")
    return 2 * elements(*y) * static_cast<double>(a->back());
  if (op == "QLinearMatMul") return 2 * elements(*y) * static_cast<double>(a->back());
  if (op == "Gemm" && y->size() == 2 && (*y)[0] > 0) return 2 * elements(*y) * elements(*a) / static_cast<double>((*y)[0]);
  // Convolutions: every output element sums C/group * kernel products; W is [M, C/group, k...] (input 1, or 3 for
  // QLinearConv). ConvTranspose: every input element scatters into M/group * kernel outputs, W [C, M/group, k...].
  const bool conv = op == "Conv" || op == "FusedConv" || op == "NhwcConv" || op == "ConvInteger";
  if (conv || op == "QLinearConv") {
    const auto* w = dims(t.input_dims, conv ? 1 : 3);
    return w ? 2 * elements(*y) * elements(*w) / static_cast<double>(w->front() > 0 ? w->front() : 1) : 0;
  }
  if (op == "ConvTranspose") {
    const auto* w = dims(t.input_dims, 1);
    return w ? 2 * elements(*a) * elements(*w) / static_cast<double>(w->front() > 0 ? w->front() : 1) : 0;
  }
  // Attention on [B, H, S, D] (or [B, S, H*D]) inputs: Q K^T and the weighted sum of V, each 2 * S * Skv per
  // head dim.
  if (op == "Attention") {
    const auto* k = dims(t.input_dims, 1);
    const auto* v = dims(t.input_dims, 2);
    if (!k || !v || a->size() != k->size() || a->size() < 3) return 0;
    const double skv = static_cast<double>((*k)[k->size() - 2]);
    return 2 * elements(*a) * skv + 2 * elements(*y) * skv;
  }
  return 0;
}

double run_flops(const std::vector<NodeTiming>& profile) {
  double total = 0;
  for (const NodeTiming& t : profile) total += node_flops(t);
  return total;
}

}  // namespace onyx::cli
