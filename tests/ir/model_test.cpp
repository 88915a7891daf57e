#include "ir/model.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "base/error.hpp"
#include "format/mapped_file.hpp"
#include "format/onnx_proto.hpp"
#include "format/save.hpp"
#include "test_data.hpp"
#include "format/model_read.hpp"
#include "check/load_model.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / cat("onyx-model-test-", ::getpid(), "-", name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}


// A model with one float initializer W of `count` elements feeding Identity, for external data tests.
pb::ModelDocument one_initializer_model(pb::Arena& arena, uint64_t count, std::optional<std::string> raw) {
  pb::ModelDocument doc;
  doc.label = "test";
  pb::Model& m = doc.model;
  m.ir_version = 8;
  m.opset_import.push_back({"", 17, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "g";
  pb::Tensor& w = g.initializer.emplace_back();
  w.name = "W";
  w.data_type = 1;
  w.dims = {static_cast<int64_t>(count)};
  if (raw) w.raw_data = arena.save(*raw);
  pb::Node& n = g.node.emplace_back();
  n.op_type = "Identity";
  n.input = {"W"};
  n.output = {"Y"};
  pb::ValueInfo& out = g.output.emplace_back();
  out.name = "Y";
  return doc;
}

pb::Graph branch(const char* name, const char* op, const char* out) {
  pb::Graph g;
  g.name = name;
  pb::Node& n = g.node.emplace_back();
  n.op_type = op;
  n.input = {"X"};  // defined in the enclosing graph
  n.output = {out};
  g.output.emplace_back().name = out;
  return g;
}

TEST(Model, SubgraphsResolveOuterScopeValues) {
  pb::ModelDocument doc;
  doc.label = "if.onnx";
  pb::Model& m = doc.model;
  m.ir_version = 8;
  m.opset_import.push_back({"", 17, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "main";
  g.input.emplace_back().name = "X";
  g.input.emplace_back().name = "cond";
  pb::Node& n = g.node.emplace_back();
  n.op_type = "If";
  n.name = "choose";
  n.input = {"cond"};
  n.output = {"Y"};
  pb::Attribute& then_branch = n.attribute.emplace_back();
  then_branch.name = "then_branch";
  then_branch.type = static_cast<int32_t>(pb::AttrType::Graph);
  then_branch.g.emplace() = branch("then", "Identity", "T");
  pb::Attribute& else_branch = n.attribute.emplace_back();
  else_branch.name = "else_branch";
  else_branch.type = static_cast<int32_t>(pb::AttrType::Graph);
  else_branch.g.emplace() = branch("else", "Neg", "E");
  g.output.emplace_back().name = "Y";

  Model model = build_model(doc);
  const Node& node = *model.graph->nodes.at(0);
  const Value* x = model.graph->find("X");
  ASSERT_NE(x, nullptr);
  for (const char* attr : {"then_branch", "else_branch"}) {
    const Attribute* a = node.attribute(attr);
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(a->g);
    EXPECT_EQ(a->g->parent, model.graph.get());
    EXPECT_EQ(a->g->owner, &node);
    EXPECT_EQ(a->g->nodes.at(0)->inputs.at(0), x) << "the branch reads the outer X";
    EXPECT_EQ(a->g->find_local("X"), nullptr);
  }
  EXPECT_EQ(x->consumers.size(), 2u);  // one use in each branch
  EXPECT_NE(node.attribute("then_branch")->g->label().find("'choose' (If)"), std::string::npos);
}

TEST(Model, InitializersAreViewsIntoTheMappedFile) {
  fs::path dir = fresh_dir("views");
  pb::Arena arena;
  pb::ModelDocument made = one_initializer_model(arena, 1024, std::string(4096, '\x01'));
  pb::write_model_file(made.model, dir / "m.onnx");
  pb::ModelDocument doc = pb::load_model_file(dir / "m.onnx");
  Model m = build_model(doc);
  const char* begin = reinterpret_cast<const char*>(doc.source->data());
  const Tensor& w = m.graph->initializers.at("W");
  EXPECT_TRUE(w.is_view());
  EXPECT_GE(w.bytes().data(), begin);
  EXPECT_LE(w.bytes().data() + w.bytes().size(), begin + doc.source->size());
  EXPECT_EQ(w.bytes(), std::string(4096, '\x01'));
  fs::remove_all(dir);
}

TEST(Model, TypesAndSymbolicShapesComeFromTheGraph) {
  pb::Arena arena;
  pb::ModelDocument doc = one_initializer_model(arena, 2, std::string(8, '\0'));
  pb::ValueInfo& in = doc.model.graph->input.emplace_back();
  in.name = "X";
  auto& tt = in.type.emplace().tensor_type.emplace();
  tt.elem_type = 7;
  tt.shape.emplace().dim.emplace_back().dim_param = "batch";
  tt.shape->dim.emplace_back().dim_value = 3;
  Model m = build_model(doc);
  ASSERT_EQ(m.graph->inputs.size(), 1u);
  EXPECT_EQ(m.graph->inputs[0]->type.to_string(), "tensor(int64)");
  EXPECT_EQ(m.graph->inputs[0]->type.to_string_with_shape(), "int64[batch,3]");
  const Value* w = m.graph->find("W");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->type.to_string_with_shape(), "float[2]");
  ASSERT_EQ(w->consumers.size(), 1u);
  EXPECT_EQ(w->consumers[0]->op_type, "Identity");
}

TEST(Model, ExternalDataIsMappedNotCopied) {
  fs::path dir = fresh_dir("ext");
  pb::Arena arena;
  std::string values(16 * sizeof(float), '\0');
  for (int i = 0; i < 16; ++i) {
    float f = static_cast<float>(i) * 0.5f;
    std::memcpy(values.data() + i * 4, &f, 4);
  }
  pb::ModelDocument doc = one_initializer_model(arena, 16, values);
  SaveOptions opts;
  opts.data = SaveOptions::Data::External;
  opts.threshold = 0;
  SaveReport r = save_model(doc, dir / "m.onnx", opts);
  EXPECT_EQ(r.tensors_external, 1u);
  Model m = load_model((dir / "m.onnx").string());
  ASSERT_EQ(m.external_files, std::vector<std::string>{"m.onnx.data"});
  const Tensor& w = m.graph->initializers.at("W");
  EXPECT_TRUE(w.is_view());
  EXPECT_EQ(w.bytes(), values);
  fs::remove_all(dir);
}

// The reader has no 2 GB limit: a 3 GB external tensor (a sparse file, so no disk is used) loads without reading it.
TEST(Model, ExternalDataBeyondTwoGigabytesLoads) {
  fs::path dir = fresh_dir("big");
  const uint64_t count = (3ull << 30) / 4;
  {
    int fd = ::open((dir / "big.bin").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(count * 4)), 0);
    ::close(fd);
  }
  pb::Arena arena;
  pb::ModelDocument doc = one_initializer_model(arena, count, std::nullopt);
  pb::Tensor& w = doc.model.graph->initializer[0];
  w.data_location = 1;
  w.external_data.push_back({"location", "big.bin", {}});
  w.external_data.push_back({"length", arena.save(std::to_string(count * 4)), {}});
  pb::write_model_file(doc.model, dir / "big.onnx");
  Model m = load_model((dir / "big.onnx").string());
  EXPECT_EQ(m.graph->initializers.at("W").bytes().size(), count * 4);
  fs::remove_all(dir);
}

void expect_load_error(const fs::path& model, const std::string& fragment) {
  try {
    load_model(model.string());
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'W'"), std::string::npos) << "names the tensor: " << e.what();
  }
}

// The traversal cases are refused when loading a model, with the tensor named.
TEST(Model, ExternalDataOutsideTheModelFolderIsRefused) {
  fs::path dir = fresh_dir("refuse");
  fs::create_directories(dir / "model");
  std::ofstream(dir / "secret.bin") << std::string(64, 'x');
  fs::create_symlink(dir / "secret.bin", dir / "model" / "link.bin");
  fs::create_directory_symlink(dir, dir / "model" / "up");
  fs::create_hard_link(dir / "secret.bin", dir / "model" / "hard.bin");
  std::ofstream(dir / "model" / "short.bin") << std::string(8, 'x');
  struct Case {
    std::string location, fragment;
  };
  for (const Case& c : {Case{"../secret.bin", ".."}, Case{(dir / "secret.bin").string(), "absolute"},
                        Case{"link.bin", "outside"}, Case{"up/secret.bin", "outside"}, Case{"hard.bin", "link"},
                        Case{"short.bin", "length"}}) {
    pb::Arena arena;
    pb::ModelDocument doc = one_initializer_model(arena, 16, std::nullopt);
    pb::Tensor& w = doc.model.graph->initializer[0];
    w.data_location = 1;
    w.external_data.push_back({"location", arena.save(c.location), {}});
    pb::write_model_file(doc.model, dir / "model" / "m.onnx");
    SCOPED_TRACE(c.location);
    expect_load_error(dir / "model" / "m.onnx", c.fragment);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace onyx
