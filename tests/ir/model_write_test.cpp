// The IR written back to protobuf: test models (a sample of every suite) survive IR -> proto -> IR with the same
// nodes, attributes, values, types and tensor data, and a second write gives the same bytes.
#include "format/model_write.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "format/onnx_proto.hpp"
#include "test_data.hpp"
#include "format/model_read.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

// One line per node, value and tensor: what must survive the round trip.
void describe(const Graph& g, std::string& out) {
  for (const Value* v : g.inputs) out += "in " + v->name + " " + v->type.to_string_with_shape() + "\n";
  for (const Value* v : g.outputs) out += "out " + v->name + " " + v->type.to_string_with_shape() + "\n";
  for (const auto& [name, t] : g.initializers) {
    out += cat("init ", name, " ", t.dtype(), " ", t.element_count(), " [");
    for (int64_t d : t.dims()) out += cat(d, ",");
    out += "] ";
    if (t.dtype() == DataType::String) for (const auto& s : t.string_values()) out += s + ",";
    else out += std::string(t.bytes());
    out += "\n";
  }
  for (const auto& n : g.nodes) {
    out += cat("node ", n->name, " ", n->domain, ".", n->op_type, " (");
    for (const Value* v : n->inputs) out += (v ? v->name + ":" + v->type.to_string_with_shape() : "-") + " ";
    out += ") -> (";
    for (const Value* v : n->outputs) out += (v ? v->name + ":" + v->type.to_string_with_shape() : "-") + " ";
    out += ")\n";
    for (const Attribute& a : n->attributes) {
      out += cat("  attr ", a.name, " ", attribute_type_name(a.type), " ", a.i, " ", a.f, " ", a.s, " ", a.ints.size(), " ",
                 a.floats.size(), " ", a.strings.size(), " ", a.ref_attr_name, "\n");
      if (a.t) out += cat("  tensor ", a.t->dtype(), " ", a.t->element_count(), "\n");
      if (a.g) describe(*a.g, out);
      for (const auto& sg : a.graphs) describe(*sg, out);
    }
  }
}

std::string describe(const Model& m) {
  std::string out = cat("ir ", m.ir_version, " producer ", m.producer_name, "\n");
  for (const auto& [d, v] : m.opset_imports) out += cat("opset '", d, "' ", v, "\n");
  describe(*m.graph, out);
  for (const Function& f : m.functions) {
    out += cat("function ", f.domain, ".", f.name, " ", f.inputs.size(), " ", f.outputs.size(), "\n");
    describe(*f.body, out);
  }
  return out;
}

TEST(ModelWrite, RoundTripsTestModels) {
  auto models = testing::all_test_models();
  if (models.empty()) ONYX_MISSING_INSTALLED_DATA("no ONNX test data installed (scripts/setup.sh installs libonnx-testdata)");
  size_t tried = 0;
  for (size_t i = 0; i < models.size(); ++i) {
    // Every light model, and a sample of the rest (keeps the test to seconds).
    if (models[i].parent_path().filename() != "light" && i % 7 != 0) continue;
    pb::ModelDocument doc = pb::load_model_file(models[i]);
    if (!check::check_model(doc).empty()) continue;  // models that are invalid on purpose
    Model m = build_model(doc);
    pb::ModelDocument written = model_to_document(m);
    std::string bytes = pb::serialize_model(written.model);
    pb::ModelDocument reread = pb::load_model_bytes(bytes, models[i].string());
    ASSERT_NO_THROW(check::check_model_or_throw(reread)) << models[i];
    Model back = build_model(reread);
    EXPECT_EQ(describe(back), describe(m)) << models[i];
    EXPECT_EQ(pb::serialize_model(model_to_document(back).model), bytes) << models[i];
    ++tried;
  }
  EXPECT_GT(tried, 100u);
}

TEST(ModelWrite, WritesWhatTheIrHolds) {
  pb::Model pm;
  pm.ir_version = 9;
  pm.producer_name = "test";
  pm.opset_import.push_back({"", 17, {}});
  pm.opset_import.push_back({"ai.onyx", 1, {}});
  pm.metadata_props.push_back({"k", "v", {}});
  pb::Graph& g = pm.graph.emplace();
  g.name = "g";
  auto& in = g.input.emplace_back();
  in.name = "x";
  auto& tt = in.type.emplace().tensor_type.emplace();
  tt.elem_type = 1;
  auto& shape = tt.shape.emplace();
  shape.dim.emplace_back().dim_param = "N";
  shape.dim.emplace_back().dim_value = 2;
  shape.dim.emplace_back();  // unknown
  pb::Node& n = g.node.emplace_back();
  n.op_type = "Relu";
  n.name = "r";
  n.input = {"x"};
  n.output = {"h"};
  pb::ValueInfo& vi = g.value_info.emplace_back();
  vi.name = "h";
  vi.type = in.type;
  pb::Node& n2 = g.node.emplace_back();
  n2.op_type = "Neg";
  n2.input = {"h"};
  n2.output = {"y"};
  g.output.emplace_back().name = "y";
  pb::ModelDocument doc;
  doc.model = pm;
  Model m = build_model(doc);
  const pb::ModelDocument written = model_to_document(m);  // its arena holds the strings `w` views
  const pb::Model& w = written.model;
  EXPECT_EQ(*w.ir_version, 9);
  EXPECT_EQ(w.producer_name.value_or(""), "test");
  ASSERT_EQ(w.opset_import.size(), 2u);
  ASSERT_EQ(w.metadata_props.size(), 1u);
  ASSERT_TRUE(w.graph);
  ASSERT_EQ(w.graph->node.size(), 2u);
  EXPECT_EQ(w.graph->node[0].name.value_or(""), "r");
  EXPECT_FALSE(w.graph->node[1].name);  // unnamed stays unnamed
  ASSERT_EQ(w.graph->value_info.size(), 1u);
  const auto& dims = w.graph->value_info[0].type->tensor_type->shape->dim;
  ASSERT_EQ(dims.size(), 3u);
  EXPECT_EQ(dims[0].dim_param.value_or(""), "N");
  EXPECT_EQ(dims[1].dim_value.value_or(0), 2);
  EXPECT_FALSE(dims[2].dim_value || dims[2].dim_param);
  ASSERT_EQ(w.graph->output.size(), 1u);
  EXPECT_FALSE(w.graph->output[0].type);  // declared without a type
}

}  // namespace
}  // namespace onyx
