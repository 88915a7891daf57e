// libFuzzer target for the text printer (onyx print): every model that decodes is printed whole, and so is each
// of its graphs and nodes on its own, as pb::to_text's overloads allow. Built with the structure-aware mutator
// (mutate_model_hook.cpp), so the printer sees well-formed models with odd contents: every attribute and type
// kind, nested subgraphs, names that need quoting, values at the edges of their types.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "format/onnx_proto.hpp"
#include "format/text_printer.hpp"

namespace {

void print_graph(const onyx::pb::Graph& g) {
  (void)onyx::pb::to_text(g);
  for (const auto& n : g.node) (void)onyx::pb::to_text(n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onyx::pb::ModelDocument doc;
  try {
    doc = onyx::pb::load_model_bytes(std::string(reinterpret_cast<const char*>(data), size), "<fuzz>");
  } catch (const onyx::Error&) {
    return 0;
  }
  try {
    (void)onyx::pb::to_text(doc.model);
    if (doc.model.graph) print_graph(*doc.model.graph);
    for (const auto& t : doc.model.training_info) {
      if (t.initialization) print_graph(*t.initialization);
      if (t.algorithm) print_graph(*t.algorithm);
    }
  } catch (const onyx::Error&) {
  }
  return 0;
}
