// `onyx convert IN OUT --float16 ...`: converts the model to float16 (include/onyx/float16.hpp) before it is written.
#include "convert_float16.hpp"

#include <iomanip>
#include <iostream>
#include <sstream>

#include "base/error.hpp"
#include "onyx/float16.hpp"

namespace onyx::cli {

namespace {

const std::vector<std::string> kFloat16ValuedOptions = {"--op-block-list", "--node-block-list", "--min-positive-val",
                                                        "--max-finite-val"};
const std::vector<std::string> kFloat16FlagOptions = {"--float16", "--keep-io-types"};

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    size_t start = 0;
    for (;;) {
      size_t comma = v.find(',', start);
      std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!item.empty()) out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

float parse_float(const std::string& name, const std::string& s) {
  try {
    size_t used = 0;
    float f = std::stof(s, &used);
    if (used == s.size()) return f;
  } catch (const std::exception&) {
  }
  fail(name, ": '", s, "' is not a number");
}

std::string megabytes(uint64_t bytes) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(bytes < 100000 ? 3 : 1) << static_cast<double>(bytes) / 1e6 << " MB";
  return o.str();
}

}  // namespace

std::vector<std::string> with_float16_valued(std::vector<std::string> valued) {
  valued.insert(valued.end(), kFloat16ValuedOptions.begin(), kFloat16ValuedOptions.end());
  return valued;
}

std::vector<std::string> with_float16_flags(std::vector<std::string> flags) {
  flags.insert(flags.end(), kFloat16FlagOptions.begin(), kFloat16FlagOptions.end());
  return flags;
}

void convert_float16_from_args(const Args& args, pb::ModelDocument& doc) {
  if (!args.flag("--float16")) {
    for (const auto& name : kFloat16ValuedOptions)
      if (args.value(name)) fail(name, " needs --float16");
    if (args.flag("--keep-io-types")) fail("--keep-io-types needs --float16");
    return;
  }
  opt::Float16Options o;
  o.keep_io_types = args.flag("--keep-io-types");
  if (!args.values("--op-block-list").empty()) o.op_block_list = split_list(args.values("--op-block-list"));
  o.node_block_list = split_list(args.values("--node-block-list"));
  if (auto v = args.value("--min-positive-val")) o.min_positive_val = parse_float("--min-positive-val", *v);
  if (auto v = args.value("--max-finite-val")) o.max_finite_val = parse_float("--max-finite-val", *v);
  opt::Float16Report r;
  std::string bytes = opt::convert_float_to_float16(doc, o, &r);
  std::filesystem::path dir = doc.dir;
  std::string label = doc.label;
  doc = pb::load_model_bytes(std::move(bytes), label);
  doc.dir = dir;
  std::cout << "float16: " << r.tensors_converted << " tensors converted (" << megabytes(r.float32_bytes) << " -> "
            << megabytes(r.float16_bytes) << "), " << r.clamped_small << " values raised to " << o.min_positive_val
            << ", " << r.clamped_large << " lowered to " << o.max_finite_val << ", " << r.casts_inserted
            << " Casts inserted\n";
  if (!r.blocked_ops.empty()) {
    std::cout << "float16: kept float32:";
    for (const auto& [op, count] : r.blocked_ops) std::cout << " " << op << " x" << count;
    std::cout << "\n";
  }
}

}  // namespace onyx::cli
