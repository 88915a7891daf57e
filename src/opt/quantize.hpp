// int8 quantization of a model's graph, in the forms ONNX Runtime's quantization tools write, so that the result
// runs in ONNX Runtime and in onyx (whose QDQ and MatMulInteger fusions turn them into integer kernels):
// - dynamic (ORT's quantize_dynamic): a MatMul or Gemm with a constant float weight becomes
//     DynamicQuantizeLinear(A) -> MatMulInteger(A_q, W_q, A_zero, W_zero) -> Cast(float) -> Mul(A_scale * W_scale)
//     [-> Add(bias)]
//   with W_q int8, symmetric (zero point 0: ORT's default weight type QInt8 and WeightSymmetric), per tensor or
//   per column; activations uint8 (DynamicQuantizeLinear's only type). A Gemm becomes MatMul + Add this way.
// - static QDQ (ORT's quantize_static, QuantFormat.QDQ): QuantizeLinear -> DequantizeLinear pairs on the
//   activations that Conv, MatMul, Gemm and Add read and write (scale and zero point from calibrated ranges),
//   int8 symmetric weights behind DequantizeLinear (per tensor, or per output channel), int32 biases at scale
//   x_scale * w_scale behind DequantizeLinear. A Relu, or a Clip from 0, after such a node is folded into the
//   quantization of its output (the saturation of QuantizeLinear at a zero point of 0 is that activation, as
//   ORT's QDQ quantizer removes it).
// The file-level entry points (loading, calibration in sessions, writing) are in include/onyx/quantize.hpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/model.hpp"

namespace onyx::opt {

struct DynamicQuantizeOptions {
  bool per_channel = false;  // one weight scale per output column instead of one per tensor
  // Op types to quantize (MatMul and Gemm are the ones this pass knows).
  std::vector<std::string> op_types = {"MatMul", "Gemm"};
};

enum class CalibrationMethod { MinMax, Percentile };

struct StaticQuantizeOptions {
  bool per_channel = false;                     // Conv weights per output channel (axis 0), MatMul's per column
  DataType activation_type = DataType::UInt8;   // UInt8 or Int8 (asymmetric either way)
  CalibrationMethod method = CalibrationMethod::MinMax;
  double percentile = 99.999;  // Percentile: the range keeps this share (%) of each tensor's values, both tails cut
  // Op types to quantize (of Conv, MatMul, Gemm, Add).
  std::vector<std::string> op_types = {"Conv", "MatMul", "Gemm", "Add"};
  int threads = 0;  // calibration sessions' intra-op threads (0: physical cores)
};

// The calibrated range of one tensor.
struct TensorRange {
  double min = 0, max = 0;
};

struct QuantizeReport {
  std::map<std::string, size_t> nodes;  // op type -> nodes quantized
  size_t activations = 0;               // tensors given QuantizeLinear/DequantizeLinear (static) or
                                        // DynamicQuantizeLinear (dynamic)
  size_t weights = 0;                   // weight tensors stored as int8
  size_t activations_folded = 0;        // Relu/Clip nodes folded into a quantization (static)
  size_t samples = 0;                   // calibration samples run (static)
  std::vector<std::string> skipped;     // "node (Op): why" for nodes of a quantized op type left in float
};

// What quantization expects of the float graph: constants folded (weights written as Constant or ConstantOfShape
// nodes become initializers), Identity removed, BatchNormalization and per-channel Mul/Add folded into the
// convolutions (as ORT's quant_pre_process does); in an IR 3 model, initializers listed as graph inputs become
// constants (the model becomes IR 4). The graph keeps standard ops only.
void prepare_for_quantization(Model& model);

// Rewrites the main graph (see above). Errors name the model and what is wrong (an opset below 11, for
// DynamicQuantizeLinear). Nodes that do not fit (a non-constant weight, a Gemm with transA) stay float and are
// listed in the report.
QuantizeReport quantize_dynamic_graph(Model& model, const DynamicQuantizeOptions& options);

// The values whose ranges quantize_static_graph needs, for calibration (float tensors of the main graph).
std::vector<std::string> calibration_tensors(Model& model, const StaticQuantizeOptions& options);

// Inserts the QDQ form, given the ranges of every value calibration_tensors names (an error names one missing).
QuantizeReport quantize_static_graph(Model& model, const std::map<std::string, TensorRange>& ranges,
                                     const StaticQuantizeOptions& options);

// The scale and zero point ORT computes for an activation range: the range widened to include 0, scale
// (max - min) / (qmax - qmin) (1 for an empty range), zero point round(qmin - min / scale) clamped to the type.
std::pair<float, int32_t> activation_quant_params(TensorRange r, DataType type);

}  // namespace onyx::opt
