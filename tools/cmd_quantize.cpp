// onyx quantize IN OUT --dynamic | --static --calibration DIR: int8 quantization in ONNX Runtime's forms.
#include <cstdlib>
#include <iostream>

#include "base/error.hpp"
#include "cli.hpp"
#include "feeds.hpp"
#include "onyx/quantize.hpp"
#include "progress.hpp"

namespace onyx::cli {

const char* const kQuantizeUsage =
    "usage: onyx quantize IN OUT --dynamic [--per-channel] [--op-types LIST]\n"
    "       onyx quantize IN OUT --static --calibration DIR [--method minmax|percentile] [--percentile P]\n"
    "                            [--per-channel] [--activation-type uint8|int8] [--op-types LIST] [--threads N]\n"
    "\n"
    "Quantizes the float model IN to int8 and writes OUT, in the forms ONNX Runtime's quantize_dynamic and\n"
    "quantize_static (QDQ) write, so OUT runs in onyx (on its integer kernels) and in ONNX Runtime. Constants are\n"
    "folded and BatchNormalization folded into convolutions first.\n"
    "  --dynamic            MatMul and Gemm with constant float weights become DynamicQuantizeLinear + MatMulInteger\n"
    "                       (int8 symmetric weights, uint8 activations quantized at run time) -> Cast -> Mul by the\n"
    "                       scales [-> Add bias]; no calibration\n"
    "  --static             QuantizeLinear/DequantizeLinear pairs on the activations that Conv, MatMul, Gemm and Add\n"
    "                       read and write, int8 symmetric weights and int32 biases behind DequantizeLinear; a\n"
    "                       Relu (or Clip from 0) after them folds into the quantization\n"
    "  --calibration DIR    static: one sample per sub-folder of DIR (or DIR itself), as ONNX test data:\n"
    "                       input_K.pb (TensorProto of the K-th graph input), or NAME.pb / NAME.npy per input\n"
    "  --method M           static ranges: minmax (default) or percentile\n"
    "  --percentile P       percentile: keep P% of each tensor's values, cutting both tails (default 99.999)\n"
    "  --per-channel        weights per output channel (Conv) or column (MatMul) instead of per tensor\n"
    "  --activation-type T  static activations: uint8 (default) or int8\n"
    "  --op-types LIST      comma-separated op types to quantize (default: MatMul,Gemm dynamic;\n"
    "                       Conv,MatMul,Gemm,Add static)\n"
    "  --threads N          calibration sessions' threads (default: physical cores)\n";

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void print_report(const QuantizeReport& r, const std::string& out) {
  std::cout << "wrote " << out << ": ";
  size_t total = 0;
  for (const auto& [op, n] : r.nodes) {
    std::cout << (total ? ", " : "") << n << " " << op;
    total += n;
  }
  if (!total) std::cout << "no node";
  std::cout << " quantized; " << r.weights << " weight tensors in int8/int32, " << r.activations
            << " activations quantized";
  if (r.activations_folded) std::cout << ", " << r.activations_folded << " Relu/Clip folded";
  if (r.samples) std::cout << "; " << r.samples << " calibration samples";
  std::cout << "\n";
  // The first few only: a transformer has two products of activations per layer, which stay float by design.
  constexpr size_t kShown = 4;
  for (size_t k = 0; k < r.skipped.size() && k < kShown; ++k) std::cout << "  left in float: " << r.skipped[k] << "\n";
  if (r.skipped.size() > kShown) std::cout << "  ... and " << r.skipped.size() - kShown << " more left in float\n";
}

}  // namespace

int cmd_quantize(const std::vector<std::string>& argv) {
  Args args(argv, {"--calibration", "--method", "--percentile", "--activation-type", "--op-types", "--threads"},
            {"--dynamic", "--static", "--per-channel"});
  if (print_help_if_asked(args, kQuantizeUsage)) return 0;
  expect_positional(args, 2, 2, kQuantizeUsage);
  const bool dynamic = args.flag("--dynamic"), stat = args.flag("--static");
  if (dynamic == stat) fail("give one of --dynamic and --static (see onyx quantize --help)");
  const std::string in = args.positional()[0], out = args.positional()[1];
  std::vector<std::string> op_types;
  if (auto ops = args.value("--op-types")) {
    op_types = split_list(*ops);
    if (op_types.empty()) fail("--op-types: '", *ops, "' names no op type");
  }
  Progress progress("onyx quantize");
  if (dynamic) {
    for (const char* o : {"--calibration", "--method", "--percentile", "--activation-type", "--threads"})
      if (args.value(o)) fail(o, " applies to --static only");
    DynamicQuantizeOptions options;
    options.per_channel = args.flag("--per-channel");
    if (!op_types.empty()) options.op_types = op_types;
    progress.set_item("quantizing " + in);
    const QuantizeReport r = quantize_dynamic(in, out, options);
    progress.stop();
    print_report(r, out);
    return 0;
  }
  StaticQuantizeOptions options;
  options.per_channel = args.flag("--per-channel");
  if (!op_types.empty()) options.op_types = op_types;
  const auto dir = args.value("--calibration");
  if (!dir) fail("--static needs --calibration DIR");
  const std::string method = args.value("--method").value_or("minmax");
  if (method == "minmax") options.method = CalibrationMethod::MinMax;
  else if (method == "percentile") options.method = CalibrationMethod::Percentile;
  else fail("--method: '", method, "' is not minmax or percentile");
  if (auto p = args.value("--percentile")) {
    if (options.method != CalibrationMethod::Percentile) fail("--percentile needs --method percentile");
    char* end = nullptr;
    options.percentile = std::strtod(p->c_str(), &end);
    if (p->empty() || *end || !(options.percentile > 0 && options.percentile <= 100))
      fail("--percentile: '", *p, "' is not a number in (0, 100]");
  }
  const std::string at = args.value("--activation-type").value_or("uint8");
  if (at == "uint8") options.activation_type = DataType::UInt8;
  else if (at == "int8") options.activation_type = DataType::Int8;
  else fail("--activation-type: '", at, "' is not uint8 or int8");
  if (auto t = args.value("--threads")) options.threads = static_cast<int>(parse_int_option(*t, "--threads", 0, 1024));
  progress.set_item("reading calibration data " + *dir);
  const std::vector<CalibrationSample> samples = read_calibration_dir(*dir, in);
  progress.set_item("calibrating and quantizing " + in);
  const QuantizeReport r = quantize_static(in, out, samples, options);
  progress.stop();
  print_report(r, out);
  return 0;
}

}  // namespace onyx::cli
