// The inference engine (infer/inference.hpp) that the optimizer's analysis and the session share: where types
// go, how they meet the model's declarations, what becomes a known value.
#include "infer/inference.hpp"

#include <cstring>
#include <memory>
#include <string>

#include "base/error.hpp"
#include "ops/registry.hpp"
#include "opt/opt_test_util.hpp"
#include "format/model_read.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

Dim known(int64_t v) {
  Dim d;
  d.value = v;
  return d;
}
Dim named(const char* p) {
  Dim d;
  d.param = p;
  return d;
}
Type tensor_type(DataType dt, std::optional<std::vector<Dim>> dims) {
  Type t;
  t.kind = Type::Kind::Tensor;
  t.elem = dt;
  if (dims) {
    t.shape.rank_known = true;
    t.shape.dims = *dims;
  }
  return t;
}

// Infers and folds every node of the main graph in order, as the session and the analysis do.
void infer_all(infer::Inference& inference, const Model& m) {
  for (const auto& n : m.graph->nodes) {
    const int64_t opset = *m.opset(n->domain);
    const ops::OpDef& def = ops::builtin_registry().resolve(*n, opset);
    inference.infer(*n, def, opset, nullptr);
    inference.fold_small(*n, def, opset, nullptr);
  }
}

TEST(Inference, InferredDimsWinAndDeclaredOnesFillTheGaps) {
  const Type declared = tensor_type(DataType::Float, std::vector<Dim>{named("N"), known(3), known(7)});
  const Type inferred = tensor_type(DataType::Float, std::vector<Dim>{known(2), Dim{}, known(5)});
  const Type t = infer::refine_declared(declared, inferred);
  ASSERT_EQ(t.shape.dims.size(), 3u);
  EXPECT_EQ(t.shape.dims[0].value, 2);  // a symbol inference resolved
  EXPECT_EQ(t.shape.dims[1].value, 3);  // unknown to inference: as declared
  EXPECT_EQ(t.shape.dims[2].value, 5);  // a stale declaration loses
  // Without a rank, the declared shape stays; without an element type, the declared one.
  const Type t2 = infer::refine_declared(declared, tensor_type(DataType::Undefined, std::nullopt));
  EXPECT_EQ(t2.elem, DataType::Float);
  EXPECT_EQ(t2.shape.dims.size(), 3u);
  EXPECT_EQ(infer::refine_declared(declared, Type{}).to_string(), declared.to_string());
}

Model relu_model() {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3}).node("Relu", {"x"}, {"y"}).output("y", DataType::Float, {2, -1});
  return load_ir(g.bytes());
}

TEST(Inference, BesideTheIrLeavesTheModelAsDeclared) {
  Model m = relu_model();
  infer::Inference inference(infer::Inference::Types::Beside);
  infer_all(inference, m);
  const Value* y = m.graph->find_local("y");
  EXPECT_EQ(inference.type(y).to_string_with_shape(), "float[2,3]");
  EXPECT_EQ(y->type.to_string_with_shape(), "float[2,N]");
}

TEST(Inference, IntoTheIrRefinesTheModelsValues) {
  Model m = relu_model();
  infer::Inference inference(infer::Inference::Types::IntoIr);
  infer_all(inference, m);
  EXPECT_EQ(m.graph->find_local("y")->type.to_string_with_shape(), "float[2,3]");
}

TEST(Inference, ASessionDescribesItsOutputsAsDeclared) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3}).node("Relu", {"x"}, {"y"}).output("y", DataType::Float, {2, -1});
  g.node("Neg", {"x"}, {"z"}).output("z");
  Session s = Session::from_bytes(g.bytes());
  ASSERT_EQ(s.outputs().size(), 2u);
  EXPECT_EQ(s.outputs()[0].type.to_string_with_shape(), "float[2,N]");  // the interface, not what inference saw
  EXPECT_EQ(s.outputs()[1].type.to_string_with_shape(), "float[2,3]");  // declared without a type: as inferred
}

TEST(Inference, AContradictedDeclarationIsAnError) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2}).node("Relu", {"x"}, {"y"}).output("y", DataType::Int64, {2});
  pb::ModelDocument doc = pb::load_model_bytes(g.bytes(), "test.onnx");
  Model m = build_model(doc);  // unchecked: the engine is what must find it
  for (auto where : {infer::Inference::Types::Beside, infer::Inference::Types::IntoIr}) {
    infer::Inference inference(where);
    try {
      infer_all(inference, m);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("output 'y' is tensor(float), but the model declares it tensor(int64)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Inference, SmallResultsBecomeKnownValuesButNotAFeedsDefault) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3})
      .input("d", DataType::Int64, {2})
      .ints("d", {2}, {3, 2})  // a default a feed may replace
      .ints("a", {2}, {10, 20})
      .ints("b", {2}, {1, 2})
      .node("Shape", {"x"}, {"s"})
      .node("Add", {"a", "b"}, {"sum"})
      .node("Add", {"a", "d"}, {"with_default"})
      .node("Reshape", {"x", "s"}, {"y"})
      .output("y")
      .output("sum")
      .output("with_default");
  Model m = load_ir(g.bytes());
  infer::Inference inference(infer::Inference::Types::Beside);
  infer_all(inference, m);
  auto values = [&](const char* name) {
    const Tensor* t = inference.constant(m.graph->find_local(name));
    return t ? std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->element_count())
             : std::vector<int64_t>{-1};
  };
  EXPECT_EQ(values("s"), (std::vector<int64_t>{2, 3}));      // from inference
  EXPECT_EQ(values("sum"), (std::vector<int64_t>{11, 22}));  // folded
  EXPECT_EQ(values("with_default"), (std::vector<int64_t>{-1}));
  EXPECT_EQ(inference.constant(m.graph->find_local("d")), nullptr);
  EXPECT_EQ(inference.type(m.graph->find_local("y")).to_string_with_shape(), "float[2,3]");
}

// A model's initializers view its file at any byte offset; onyx optimize folds on them as they are, so folding
// reads a misaligned one through an aligned copy (the sanitized build reports a misaligned read otherwise).
TEST(Inference, FoldsMisalignedInitializers) {
  GraphSpec g(17);
  g.ints("a", {2}, {10, 20}).ints("b", {2}, {1, 2}).node("Add", {"a", "b"}, {"sum"}).output("sum");
  Model m = load_ir(g.bytes());
  for (auto& [name, t] : m.graph->initializers) {
    auto buffer = std::make_shared<std::string>(t.bytes().size() + 1, '\0');
    std::memcpy(buffer->data() + 1, t.bytes().data(), t.bytes().size());
    t = Tensor::view(name, t.dtype(), t.dims(), std::string_view(*buffer).substr(1), buffer);
    ASSERT_FALSE(is_aligned_for_kernels(t));
  }
  infer::Inference inference(infer::Inference::Types::Beside);
  infer_all(inference, m);
  const Tensor* sum = inference.constant(m.graph->find_local("sum"));
  ASSERT_NE(sum, nullptr);
  ASSERT_TRUE(is_aligned_for_kernels(*sum));
  EXPECT_EQ(std::vector<int64_t>(sum->data<int64_t>(), sum->data<int64_t>() + 2), (std::vector<int64_t>{11, 22}));
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
