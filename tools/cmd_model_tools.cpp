// onyx infer / extract / merge: onnx's model tools (shape inference output, extract_model, merge_models) on
// onyx's engine (include/onyx/model_tools.hpp).
#include <iostream>
#include <set>

#include "base/error.hpp"
#include "cli.hpp"
#include "onyx/model_tools.hpp"

namespace onyx::cli {

const char* const kInferUsage =
    "usage: onyx infer IN OUT\n"
    "       onyx infer IN [OUT] --check\n"
    "\n"
    "Writes IN as OUT with the types and shapes onyx infers for every node output (symbolic dims as dim_param) added\n"
    "as value_info, in the main graph and its subgraphs, as onnx.shape_inference.infer_shapes does; declared types\n"
    "are completed where inference knows more. Nothing else in the model changes.\n"
    "  --check   compare the value_info already in IN (e.g. written by onnx) with what onyx infers for IN stripped\n"
    "            of it; print the tally (agree, onyx more, reference more, mixed, disagree) and each disagreement.\n"
    "            Exit status 1 when some disagree.\n";

const char* const kExtractUsage =
    "usage: onyx extract IN OUT --inputs A,B,... --outputs C,D,...\n"
    "\n"
    "Writes the sub-model of IN that computes the outputs C, D... from the inputs A, B... (values of the main\n"
    "graph: graph inputs, initializers or node outputs), as onnx.utils.extract_model: the nodes needed, the\n"
    "initializers and value_info they use; the new inputs and outputs take the types inference gives them.\n"
    "An output that needs a graph input not listed, or a name the graph lacks, is an error naming it.\n"
    "--inputs and --outputs may also be repeated, one name each.\n";

const char* const kMergeUsage =
    "usage: onyx merge A B OUT --io-map OUT_A:IN_B,... [--prefix1 P] [--prefix2 P]\n"
    "\n"
    "Writes one model computing B on the outputs of A, as onnx.compose.merge_models: each OUT_A:IN_B pair feeds\n"
    "output OUT_A of A to input IN_B of B (--io-map may also be repeated). The result has A's nodes then B's, A's\n"
    "inputs then B's unconnected ones, A's unconnected outputs then B's outputs.\n"
    "  --prefix1 P, --prefix2 P   put P before every name (values, nodes, local functions) of A / B, so that\n"
    "                             names both use do not clash; the io map names are given without the prefixes\n"
    "Both models must import each domain at the same opset; the IR version is the higher of the two.\n";

namespace {

std::vector<std::string> names_option(const Args& args, const std::string& option) {
  std::vector<std::string> r;
  for (const std::string& v : args.values(option)) {
    size_t start = 0;
    for (;;) {
      size_t comma = v.find(',', start);
      std::string n = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (n.empty()) fail(option, ": empty name in '", v, "'");
      r.push_back(n);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return r;
}

}  // namespace

int cmd_infer(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"--check"});
  if (print_help_if_asked(args, kInferUsage)) return 0;
  const bool check = args.flag("--check");
  expect_positional(args, check ? 1 : 2, 2, kInferUsage);
  const auto& pos = args.positional();
  if (check) {
    pb::ModelDocument doc = pb::load_model_file(pos[0]);
    opt::ShapeTally t = opt::check_inferred_shapes(doc);
    std::cout << pos[0] << ": " << t.summary() << "\n";
    for (const std::string& d : t.disagreements) std::cout << "  disagree: " << d << "\n";
    for (const std::string& d : t.reference_extra) std::cout << "  reference more: " << d << "\n";
    if (pos.size() == 2) opt::infer_shapes_file(pos[0], pos[1]);
    return t.disagree ? 1 : 0;
  }
  opt::InferShapesReport r = opt::infer_shapes_file(pos[0], pos[1]);
  std::cout << "value_info: " << r.added << " added, " << r.refined << " completed; " << r.unknown
            << " node outputs without an inferred type\n";
  return 0;
}

int cmd_extract(const std::vector<std::string>& argv) {
  Args args(argv, {"--inputs", "--outputs"}, {});
  if (print_help_if_asked(args, kExtractUsage)) return 0;
  expect_positional(args, 2, 2, kExtractUsage);
  std::vector<std::string> inputs = names_option(args, "--inputs"), outputs = names_option(args, "--outputs");
  if (outputs.empty()) fail("--outputs: give at least one output name\n", kExtractUsage);
  opt::extract_model_file(args.positional()[0], args.positional()[1], inputs, outputs);
  return 0;
}

int cmd_merge(const std::vector<std::string>& argv) {
  Args args(argv, {"--io-map", "--prefix1", "--prefix2"}, {});
  if (print_help_if_asked(args, kMergeUsage)) return 0;
  expect_positional(args, 3, 3, kMergeUsage);
  const auto& pos = args.positional();
  pb::ModelDocument a = pb::load_model_file(pos[0]), b = pb::load_model_file(pos[1]);
  opt::MergeOptions options;
  options.prefix1 = args.value("--prefix1").value_or("");
  options.prefix2 = args.value("--prefix2").value_or("");
  // Names may hold ':' themselves (TensorFlow's "x:0"): each pair splits at the ':' that leaves an output of A on
  // the left and an input of B on the right, else at the first one (and merging then names what is missing).
  std::set<std::string> outs, ins;
  for (const pb::ValueInfo& vi : a.model.graph ? a.model.graph->output : std::vector<pb::ValueInfo>{})
    outs.emplace(vi.name.value_or(""));
  for (const pb::ValueInfo& vi : b.model.graph ? b.model.graph->input : std::vector<pb::ValueInfo>{})
    ins.emplace(vi.name.value_or(""));
  std::vector<std::pair<std::string, std::string>> io_map;
  for (const std::string& pair : names_option(args, "--io-map")) {
    size_t at = pair.find(':');
    if (at == std::string::npos) fail("--io-map: '", pair, "' is not OUT_A:IN_B");
    for (size_t c = at; c != std::string::npos; c = pair.find(':', c + 1))
      if (outs.count(pair.substr(0, c)) && ins.count(pair.substr(c + 1))) {
        at = c;
        break;
      }
    io_map.emplace_back(pair.substr(0, at), pair.substr(at + 1));
  }
  if (io_map.empty()) fail("--io-map: give at least one OUT_A:IN_B pair\n", kMergeUsage);
  save_model(opt::merge_models(a, b, io_map, options), pos[2]);
  return 0;
}

}  // namespace onyx::cli
