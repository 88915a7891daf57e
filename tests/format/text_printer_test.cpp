// Golden outputs below were written by hand from the rules of onnx's ProtoPrinter (onnx/defs/printer.cc);
// each test names the rules it covers.
#include "format/text_printer.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "test_data.hpp"

namespace onyx::pb {
namespace ONYX_TEST_FILE {

constexpr int32_t kFloat = 1, kInt64 = 7, kString = 8, kBool = 9, kFloat16 = 10, kComplex64 = 14;

Dimension dim(int64_t v) {
  Dimension d;
  d.dim_value = v;
  return d;
}
Dimension dim(Str param) {
  Dimension d;
  d.dim_param = param;
  return d;
}

Type tensor_type(int32_t elem, std::optional<std::vector<Dimension>> dims) {
  Type t;
  t.tensor_type.emplace();
  t.tensor_type->elem_type = elem;
  if (dims) {
    t.tensor_type->shape.emplace();
    t.tensor_type->shape->dim = *dims;
  }
  return t;
}

ValueInfo vi(Str name, Type type) {
  ValueInfo v;
  v.name = name;
  v.type = std::move(type);
  return v;
}

Node node(Str op, std::vector<Str> inputs, std::vector<Str> outputs) {
  Node n;
  n.op_type = op;
  n.input = std::move(inputs);
  n.output = std::move(outputs);
  return n;
}

Attribute attr(Str name, AttrType type) {
  Attribute a;
  a.name = name;
  a.type = static_cast<int32_t>(type);
  return a;
}

Tensor tensor(Str name, int32_t dtype, std::vector<int64_t> dims) {
  Tensor t;
  if (!name.empty()) t.name = name;
  t.data_type = dtype;
  t.dims = std::move(dims);
  return t;
}

OperatorSetId opset(Str domain, int64_t version) {
  OperatorSetId o;
  o.domain = domain;
  o.version = version;
  return o;
}

template <class T>
std::string le_bytes(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(s.data(), values.data(), s.size());  // the test hosts are little-endian
  return s;
}

// Header rules: "<\n", then "   key: value" pairs joined by ",\n" (ir_version and opset_import always,
// the others only when present), strings quoted with \ and " escaped, opsets as `"domain" : version`
// joined by ", ", metadata as `"key": "value"` in [...], then "\n>\n".
// Graph rules: name, " (inputs) => (outputs) ", "{\n", nodes indented by 3, "}" with no trailing newline.
// Type rules: dims joined by "," without spaces; dim_param printed bare when it is an identifier, quoted
// otherwise; a dim with neither value nor param is "?"; no shape at all prints "[]"; a rank-0 shape prints
// nothing. Node rules: "[name] " when the node has a name, "domain." before op_type when the domain is not
// empty, attributes " <...>" before the inputs " (...)".
TEST(TextPrinter, ModelHeaderGraphAndTypes) {
  Model m;
  m.ir_version = 8;
  m.opset_import = {opset("", 13), opset("ai.onnx.ml", 3)};
  m.producer_name = "onyx-test";
  m.model_version = 2;
  m.doc_string = "say \"hi\" \\o/";
  StringStringEntry md;
  md.key = "k";
  md.value = "v";
  m.metadata_props = {md};
  Graph& g = m.graph.emplace();
  g.name = "main";
  Dimension unknown;
  g.input = {
      vi("X", tensor_type(kFloat, std::vector<Dimension>{dim("N"), dim(3)})),
      vi("B", tensor_type(kFloat, std::vector<Dimension>{unknown})),
      vi("U", tensor_type(kFloat, std::nullopt)),
      vi("S", tensor_type(kFloat, std::vector<Dimension>{})),
      vi("Q", tensor_type(kFloat, std::vector<Dimension>{dim("batch size")})),
  };
  g.output = {vi("Z", tensor_type(kFloat, std::vector<Dimension>{dim("N"), dim(3)}))};
  g.node.push_back(node("Add", {"X", "B"}, {"Z"}));
  Node ml = node("Normalizer", {"Z"}, {"W"});
  ml.name = "n1";
  ml.domain = "ai.onnx.ml";
  Attribute norm = attr("norm", AttrType::String);
  norm.s = "MAX";
  ml.attribute = {norm};
  g.node.push_back(ml);

  EXPECT_EQ(to_text(m),
            "<\n"
            "   ir_version: 8,\n"
            "   opset_import: [\"\" : 13, \"ai.onnx.ml\" : 3],\n"
            "   producer_name: \"onyx-test\",\n"
            "   model_version: 2,\n"
            "   doc_string: \"say \\\"hi\\\" \\\\o/\",\n"
            "   metadata_props: [\"k\": \"v\"]\n"
            ">\n"
            "main (float[N,3] X, float[?] B, float[] U, float S, float[\"batch size\"] Q) => (float[N,3] Z) {\n"
            "   Z = Add (X, B)\n"
            "   [n1] W = ai.onnx.ml.Normalizer <norm: string = \"MAX\"> (Z)\n"
            "}");
}

// An empty model still prints ir_version and opset_import (0 and []), and the absent graph prints as a
// graph with an empty name, which is not an identifier and so is quoted.
TEST(TextPrinter, EmptyModel) {
  EXPECT_EQ(to_text(Model{}),
            "<\n"
            "   ir_version: 0,\n"
            "   opset_import: []\n"
            ">\n"
            "\"\" () => () {\n"
            "}");
}

// Attribute rules: `name: type = value` joined by ", " inside " <...>"; ints/floats lists as [a, b] with
// ", "; strings quoted; floats in their shortest round-trip form (std::to_chars: 0.1, 1e-07, 1e+20,
// 1e+05, 123456, -0, inf, nan); a reference attribute as `name: type = @ref`; a tensor attribute as type,
// dims, its name when it has one, then " {v,v}"; type_proto attributes in the type syntax. An empty input
// name prints as "".
TEST(TextPrinter, NodeAttributes) {
  Node n = node("Foo", {"a", "", "b"}, {"y"});
  Attribute axis = attr("axis", AttrType::Int);
  axis.i = -1;
  Attribute alpha = attr("alpha", AttrType::Float);
  alpha.f = 0.1f;
  Attribute tiny = attr("tiny", AttrType::Float);
  tiny.f = 1e-7f;
  Attribute mode = attr("mode", AttrType::String);
  mode.s = "a\"b";
  Attribute pads = attr("pads", AttrType::Ints);
  pads.ints = {0, 1, -2};
  Attribute scales = attr("scales", AttrType::Floats);
  scales.floats = {1.0f, 2.5f, 1e20f, 100000.0f, 123456.0f, -0.0f, -std::numeric_limits<float>::infinity(),
                   std::numeric_limits<float>::quiet_NaN()};
  Attribute names = attr("names", AttrType::Strings);
  names.strings = {"x", "y"};
  Attribute value = attr("value", AttrType::Tensor);
  value.t = tensor("", kFloat, {2});
  value.t->float_data = {1.0f, 2.0f};
  Attribute named = attr("named", AttrType::Tensor);
  named.t = tensor("c", kInt64, {});
  named.t->int64_data = {7};
  Attribute ref = attr("ref", AttrType::Float);
  ref.ref_attr_name = "alpha";
  Attribute tp = attr("tp", AttrType::TypeProto);
  tp.tp.emplace().sequence_type.emplace().elem_type.emplace() =
      tensor_type(kFloat, std::vector<Dimension>{dim(2)});
  n.attribute = {axis, alpha, tiny, mode, pads, scales, names, value, named, ref, tp};

  EXPECT_EQ(to_text(n),
            "   y = Foo <axis: int = -1, alpha: float = 0.1, tiny: float = 1e-07, mode: string = \"a\\\"b\", "
            "pads: ints = [0, 1, -2], scales: floats = [1, 2.5, 1e+20, 1e+05, 123456, -0, -inf, nan], "
            "names: strings = [\"x\", \"y\"], value: tensor = float[2] {1,2}, named: tensor = int64 c {7}, "
            "ref: float = @alpha, tp: type_proto = seq(float[2])> (a, \"\", b)\n");
}

// Quirks kept from onnx: an empty strings list prints only the closing "]"; an attribute without a type
// is "undefined" with nothing after "= "; names and op types are printed as they are, outputs quoted when
// not identifiers; a node without outputs prints " = " right after the indentation.
TEST(TextPrinter, NodeEdgeCases) {
  Node n = node("Bar", {}, {});
  n.overload = "v2";
  Attribute empty = attr("empty", AttrType::Strings);
  Attribute untyped;
  untyped.name = "u";
  n.attribute = {empty, untyped};
  EXPECT_EQ(to_text(n), "    = Bar:v2 <empty: strings = ], u: undefined = > ()\n");

  Node q = node("Baz", {"in.0"}, {"out:1", "_ok"});
  EXPECT_EQ(to_text(q), "   \"out:1\", _ok = Baz (\"in.0\")\n");
}

// Type syntax: seq(...), map(key, value), optional(...), sparse_tensor(...), opaque(domain,name); a value
// without a type prints only " name".
TEST(TextPrinter, CompositeTypes) {
  Graph g;
  g.name = "types";
  Type seq;
  seq.sequence_type.emplace().elem_type.emplace() = tensor_type(kFloat, std::vector<Dimension>{dim(2)});
  Type map;
  map.map_type.emplace().key_type = kInt64;
  map.map_type->value_type.emplace() = tensor_type(kFloat, std::vector<Dimension>{});
  Type opt;
  opt.optional_type.emplace().elem_type.emplace().sequence_type.emplace().elem_type.emplace() =
      tensor_type(kInt64, std::nullopt);
  Type sparse;
  sparse.sparse_tensor_type.emplace().elem_type = kFloat;
  sparse.sparse_tensor_type->shape.emplace().dim = {dim(2), dim(3)};
  Type opaque;
  opaque.opaque_type.emplace().domain = "dom";
  opaque.opaque_type->name = "nm";
  ValueInfo untyped;
  untyped.name = "v";
  g.input = {vi("s", seq), vi("m", map), vi("o", opt), vi("sp", sparse), vi("op", opaque), untyped};
  g.output = {vi("b", tensor_type(kBool, std::vector<Dimension>{}))};
  EXPECT_EQ(to_text(g),
            "types (seq(float[2]) s, map(int64, float) m, optional(seq(int64[])) o, sparse_tensor(float[2,3]) sp, "
            "opaque(dom,nm) op,  v) => (bool b) {\n"
            "}");
}

// Initializer rules: when there are initializers or value_info, "\n" + indentation + "<", the initializers
// as `type[dims] name = ` followed by " {v,v}" (so two spaces after "="), then the value_info entries, all
// joined by ", ", then ">\n" before "{". The space printed after the outputs stays at the end of the line.
// raw_data is decoded for the printable types (float16 as its bit pattern); typed fields are printed
// otherwise; string data as {"a", "b"} with no leading space; external data as its [key: value] list;
// types without a printed form as "...".
TEST(TextPrinter, Initializers) {
  const std::string w_raw = le_bytes<float>({1.0f, 2.0f});
  const std::string h_raw = le_bytes<uint16_t>({0x3C00});
  Graph g;
  g.name = "g";
  g.input = {vi("X", tensor_type(kFloat, std::vector<Dimension>{dim(2)}))};
  g.output = {vi("Y", tensor_type(kFloat, std::vector<Dimension>{dim(2)}))};
  Tensor w = tensor("W", kFloat, {2});
  w.raw_data = w_raw;
  Tensor k = tensor("K", kInt64, {});
  k.int64_data = {5};
  Tensor s = tensor("S", kString, {2});
  s.string_data = {"a", "b\\"};
  Tensor h = tensor("H", kFloat16, {1});
  h.raw_data = h_raw;
  Tensor e = tensor("E", kFloat, {2});
  e.data_location = 1;
  StringStringEntry loc;
  loc.key = "location";
  loc.value = "w.bin";
  StringStringEntry off;
  off.key = "offset";
  off.value = "0";
  e.external_data = {loc, off};
  Tensor c = tensor("C", kComplex64, {1});
  c.float_data = {1.0f, 2.0f};
  g.initializer = {w, k, s, h, e, c};
  g.value_info = {vi("T", tensor_type(kFloat, std::vector<Dimension>{dim(2)}))};
  g.node = {node("Add", {"X", "W"}, {"T"}), node("Mul", {"T", "K"}, {"Y"})};

  EXPECT_EQ(to_text(g),
            "g (float[2] X) => (float[2] Y) \n"
            "   <float[2] W =  {1,2}, int64 K =  {5}, string[2] S = {\"a\", \"b\\\\\"}, float16[1] H =  {15360}, "
            "float[2] E = [\"location\": \"w.bin\", \"offset\": \"0\"], complex64[1] C = ..., float[2] T>\n"
            "{\n"
            "   T = Add (X, W)\n"
            "   Y = Mul (T, K)\n"
            "}");
}

// Like onnx's printer (ParseRawData with exact_fit), raw_data that does not hold exactly the elements the
// dims imply is an error.
TEST(TextPrinter, RawDataSizeMismatchThrows) {
  const std::string raw = le_bytes<float>({1.0f, 2.0f, 3.0f});
  Graph g;
  g.name = "g";
  Tensor w = tensor("W", kFloat, {2});
  w.raw_data = raw;
  g.initializer = {w};
  EXPECT_THROW(to_text(g), Error);
}

// Subgraph rules: a node with a graph attribute prints its attributes after the inputs; the graph is
// printed inline with the indentation raised by 3 for its nodes and its initializer line, and its closing
// "}" indented one level less than its nodes. The "{" after an initializer line is not indented at all.
TEST(TextPrinter, IfWithSubgraphs) {
  Graph then_g;
  then_g.name = "then_body";
  then_g.output = {vi("a", tensor_type(kFloat, std::vector<Dimension>{dim(1)}))};
  Node cst = node("Constant", {}, {"a"});
  Attribute value = attr("value", AttrType::Tensor);
  value.t = tensor("", kFloat, {1});
  value.t->float_data = {1.0f};
  cst.attribute = {value};
  then_g.node = {cst};

  Graph else_g;
  else_g.name = "else_body";
  else_g.output = {vi("b", tensor_type(kFloat, std::vector<Dimension>{dim(1)}))};
  Tensor bc = tensor("bc", kFloat, {1});
  bc.float_data = {2.0f};
  else_g.initializer = {bc};
  else_g.node = {node("Identity", {"bc"}, {"b"})};

  Node iff = node("If", {"cond"}, {"z"});
  Attribute then_a = attr("then_branch", AttrType::Graph);
  then_a.g.emplace() = then_g;
  Attribute else_a = attr("else_branch", AttrType::Graph);
  else_a.g.emplace() = else_g;
  iff.attribute = {then_a, else_a};

  Graph g;
  g.name = "main";
  g.input = {vi("cond", tensor_type(kBool, std::vector<Dimension>{}))};
  g.output = {vi("z", tensor_type(kFloat, std::vector<Dimension>{dim(1)}))};
  g.node = {iff};

  EXPECT_EQ(to_text(g),
            "main (bool cond) => (float[1] z) {\n"
            "   z = If (cond) <then_branch: graph = then_body () => (float[1] a) {\n"
            "      a = Constant <value: tensor = float[1] {1}> ()\n"
            "   }, else_branch: graph = else_body () => (float[1] b) \n"
            "      <float[1] bc =  {2}>\n"
            "{\n"
            "      b = Identity (bc)\n"
            "   }>\n"
            "}");
}

// Nested subgraphs and the graphs attribute: each level adds 3 spaces; a graphs list is [g, g].
TEST(TextPrinter, NestedSubgraphs) {
  Graph inner;
  inner.name = "inner";
  inner.node = {node("Identity", {"x"}, {"y"})};
  Node loop = node("Loop", {"", "c"}, {"y"});
  Attribute body = attr("body", AttrType::Graph);
  body.g.emplace() = inner;
  loop.attribute = {body};
  Graph middle;
  middle.name = "middle";
  middle.node = {loop};
  Node n = node("Multi", {"x"}, {"z"});
  n.domain = "custom";
  Attribute branches = attr("branches", AttrType::Graphs);
  branches.graphs = {middle, inner};
  n.attribute = {branches};

  EXPECT_EQ(to_text(n),
            "   z = custom.Multi (x) <branches: graphs = [middle () => () {\n"
            "      y = Loop (\"\", c) <body: graph = inner () => () {\n"
            "         y = Identity (x)\n"
            "      }>\n"
            "   }, inner () => () {\n"
            "      y = Identity (x)\n"
            "   }]>\n");
}

// Function rules: each function follows the graph after "\n": "<\n  domain: \"...\",\n" (overload only
// when set), "  opset_import: [...]" with opsets joined by "," (no space), "\n>\n", the name, " ", the
// attribute names as <a,b> directly followed by "(inputs) => (outputs)\n", then the node block.
TEST(TextPrinter, ModelLocalFunction) {
  Model m;
  m.ir_version = 10;
  m.opset_import = {opset("", 18), opset("local", 1)};
  Graph& g = m.graph.emplace();
  g.name = "main";
  g.input = {vi("x", tensor_type(kFloat, std::vector<Dimension>{dim(2)}))};
  g.output = {vi("y", tensor_type(kFloat, std::vector<Dimension>{dim(2)}))};
  Node call = node("Twice", {"x"}, {"y"});
  call.domain = "local";
  g.node = {call};

  Function f;
  f.name = "Twice";
  f.domain = "local";
  f.opset_import = {opset("", 18), opset("local", 1)};
  f.attribute = {"alpha", "beta"};
  f.input = {"x"};
  f.output = {"y"};
  Node two = node("Constant", {}, {"two"});
  Attribute ref = attr("value_float", AttrType::Float);
  ref.ref_attr_name = "alpha";
  two.attribute = {ref};
  f.node = {two, node("Mul", {"x", "two"}, {"y"})};
  Function plain;
  plain.name = "Plain";
  plain.domain = "local";
  plain.overload = "o1";
  plain.input = {"a"};
  plain.output = {"b"};
  plain.node = {node("Identity", {"a"}, {"b"})};
  m.functions = {f, plain};

  EXPECT_EQ(to_text(m),
            "<\n"
            "   ir_version: 10,\n"
            "   opset_import: [\"\" : 18, \"local\" : 1]\n"
            ">\n"
            "main (float[2] x) => (float[2] y) {\n"
            "   y = local.Twice (x)\n"
            "}\n"
            "<\n"
            "  domain: \"local\",\n"
            "  opset_import: [\"\" : 18,\"local\" : 1]\n"
            ">\n"
            "Twice <alpha,beta>(x) => (y)\n"
            "{\n"
            "   two = Constant <value_float: float = @alpha> ()\n"
            "   y = Mul (x, two)\n"
            "}\n"
            "<\n"
            "  domain: \"local\",\n"
            "  overload: \"o1\",\n"
            "  opset_import: []\n"
            ">\n"
            "Plain (a) => (b)\n"
            "{\n"
            "   b = Identity (a)\n"
            "}");
}

// Every model of the ONNX backend node tests prints without an exception and gives some text (the shared copy's
// when it is there, else Debian's).
TEST(TextPrinter, PrintsAllNodeTestModels) {
  namespace fs = std::filesystem;
  fs::path root = testing::shared_onnx_tests() / "node";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) root = testing::kDebianOnnxTests / "node";
  if (!fs::is_directory(root, ec)) ONYX_MISSING_INSTALLED_DATA(root << " is absent");
  int printed = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const fs::path path = entry.path() / "model.onnx";
    if (!fs::is_regular_file(path, ec)) continue;
    try {
      const ModelDocument doc = load_model_file(path);
      const std::string text = to_text(doc.model);
      EXPECT_FALSE(text.empty()) << path;
      ++printed;
    } catch (const std::exception& ex) {
      ADD_FAILURE() << path << ": " << ex.what();
    }
  }
  EXPECT_GT(printed, 0);
}

}  // namespace
}  // namespace onyx::pb
