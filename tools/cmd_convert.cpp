// onyx convert IN OUT: re-writes a model; moves tensor data to an external file or back inline; converts its
// default-domain opset (--opset).
#include <charconv>
#include <iostream>

#include "base/error.hpp"
#include "cli.hpp"
#include "convert_float16.hpp"
#include "format/onnx_proto.hpp"
#include "format/save.hpp"
#include "onyx/version_convert.hpp"
#include "progress.hpp"

namespace onyx::cli {

const char* const kConvertUsage =
    "usage: onyx convert IN OUT [--external-data-threshold BYTES | --inline] [--external-data-file NAME]\n"
    "       [--opset N]\n"
    "       [--float16 [--keep-io-types] [--op-block-list A,B] [--node-block-list n1,n2]]\n"
    "\n"
    "Re-writes the model IN as OUT. By default tensor data stays where it is (inline, or external; external data\n"
    "is copied into OUT's data file when OUT is in another folder).\n"
    "  --external-data-threshold BYTES  move initializers of at least BYTES bytes to an external data file\n"
    "  --inline                         bring all external data back into the model file\n"
    "  --external-data-file NAME        name of the external data file in OUT's folder (default: OUT's name + .data)\n"
    "  --opset N                        convert the default domain (ai.onnx) to operator set N, up or down, one\n"
    "                                   version at a time (as onnx.version_converter); a node no adapter converts\n"
    "                                   is an error naming it. A converted model's tensor data is written inline\n"
    "                                   unless --external-data-threshold is given\n"
    ONYX_FLOAT16_USAGE;

int cmd_convert(const std::vector<std::string>& argv) {
  Args args(argv, with_float16_valued({"--external-data-threshold", "--external-data-file", "--opset"}),
            with_float16_flags({"--inline"}));
  if (print_help_if_asked(args, kConvertUsage)) return 0;
  expect_positional(args, 2, 2, kConvertUsage);
  SaveOptions opts;
  opts.data_file = args.value("--external-data-file");
  if (auto t = args.value("--external-data-threshold")) {
    if (args.flag("--inline")) fail("--external-data-threshold and --inline exclude each other");
    auto [p, ec] = std::from_chars(t->data(), t->data() + t->size(), opts.threshold);
    if (ec != std::errc() || p != t->data() + t->size()) fail("--external-data-threshold: '", *t, "' is not a byte count");
    opts.data = SaveOptions::Data::External;
  } else if (args.flag("--inline")) {
    opts.data = SaveOptions::Data::Inline;
  }
  Progress progress("onyx convert");
  progress.set_item("reading " + args.positional()[0]);
  pb::ModelDocument doc = pb::load_model_file(args.positional()[0]);
  // Transforms of the model, each optional, in this order.
  if (auto o = args.value("--opset")) {
    int64_t target = 0;
    auto [p, ec] = std::from_chars(o->data(), o->data() + o->size(), target);
    if (ec != std::errc() || p != o->data() + o->size()) fail("--opset: '", *o, "' is not an operator set version");
    progress.set_item("converting to opset " + *o);
    opt::VersionConvertReport vr;
    doc = opt::convert_version(doc, target, &vr);
    std::cout << "opset " << vr.from << " -> " << vr.to << ": " << vr.nodes_adapted << " node rewrites\n";
    for (const std::string& note : vr.notes) std::cout << "  " << note << "\n";
  }
  convert_float16_from_args(args, doc);
  progress.set_item("writing " + args.positional()[1]);
  SaveReport r = save_model(doc, args.positional()[1], opts);
  progress.stop();
  if (!r.data_file.empty())
    std::cout << "wrote " << r.tensors_external << " tensors (" << r.external_bytes << " bytes) to " << r.data_file.string()
              << "\n";
  if (r.tensors_inlined) std::cout << "brought " << r.tensors_inlined << " tensors inline\n";
  return 0;
}

}  // namespace onyx::cli
