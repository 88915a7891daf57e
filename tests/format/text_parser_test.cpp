// The textual syntax parser: print -> parse gives the model back for every test model (text and bytes, the bytes
// after dropping what the text does not carry), errors name line and column, and hostile texts end in errors.
#include "format/text_parser.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "format/text_printer.hpp"
#include "onyx/parse.hpp"
#include "test_data.hpp"

namespace onyx::pb {
namespace ONYX_TEST_FILE {

namespace fs = std::filesystem;

// ---- What the text does not carry, dropped from an original so that it can be compared byte for byte ----

template <class T>
void canon_nan(std::vector<T>& v) {
  for (T& x : v)
    if (std::isnan(x)) x = std::signbit(x) ? -std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::quiet_NaN();
}

template <class T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // the test hosts are little-endian, as the format
  return v;
}

// raw_data -> the typed field the parser fills, as the printer decodes it; data it writes as `...` is dropped.
void raw_to_typed(Tensor& t) {
  const Str raw = *t.raw_data;
  t.raw_data.reset();
  const int32_t dt = t.data_type.value_or(0);
  auto each = [&](size_t size, auto put) {
    for (size_t i = 0; i + size <= raw.size(); i += size) put(raw.data() + i);
  };
  switch (dt) {
    case 3: each(1, [&](const char* p) { t.int32_data.push_back(load_le<int8_t>(p)); }); break;
    case 2: case 9: case 17: case 18: case 19: case 20: case 24:
      each(1, [&](const char* p) { t.int32_data.push_back(load_le<uint8_t>(p)); });
      break;
    case 5: each(2, [&](const char* p) { t.int32_data.push_back(load_le<int16_t>(p)); }); break;
    case 4: case 10: case 16: each(2, [&](const char* p) { t.int32_data.push_back(load_le<uint16_t>(p)); }); break;
    case 6: each(4, [&](const char* p) { t.int32_data.push_back(load_le<int32_t>(p)); }); break;
    case 12: each(4, [&](const char* p) { t.uint64_data.push_back(load_le<uint32_t>(p)); }); break;
    case 7: each(8, [&](const char* p) { t.int64_data.push_back(load_le<int64_t>(p)); }); break;
    case 13: each(8, [&](const char* p) { t.uint64_data.push_back(load_le<uint64_t>(p)); }); break;
    case 1: each(4, [&](const char* p) { t.float_data.push_back(load_le<float>(p)); }); break;
    case 11: each(8, [&](const char* p) { t.double_data.push_back(load_le<double>(p)); }); break;
    default: break;  // printed as `...`: the values are not in the text
  }
}

void canon_entries(Metadata& md) {
  for (auto& e : md) {
    if (!e.key) e.key = "";
    if (!e.value) e.value = "";
    e.unknown.clear();
  }
}

void canon_tensor(Tensor& t, bool initializer) {
  t.doc_string.reset();
  t.metadata_props.clear();
  t.segment.reset();
  t.unknown.clear();
  if (!t.data_type) t.data_type = 0;
  const bool external = t.data_location && *t.data_location == 1;
  if (external) {
    t.raw_data.reset();
    t.float_data.clear(); t.int32_data.clear(); t.string_data.clear(); t.int64_data.clear();
    t.double_data.clear(); t.uint64_data.clear();
    canon_entries(t.external_data);
  } else {
    t.data_location.reset();
    t.external_data.clear();
    if (t.raw_data) raw_to_typed(t);
  }
  canon_nan(t.float_data);
  canon_nan(t.double_data);
  if (initializer) {
    if (!t.name) t.name = "";
  } else if (t.name && t.name->empty()) {
    t.name.reset();
  }
}

void canon_type(Type& t);
void canon_box(Box<Type>& b) {
  if (!b) return;
  canon_type(*b);
  if (!b->tensor_type && !b->sequence_type && !b->map_type && !b->optional_type && !b->sparse_tensor_type &&
      !b->opaque_type)
    b.reset();
}
void canon_tensor_type(TypeTensor& tt) {
  tt.unknown.clear();
  if (!tt.elem_type) tt.elem_type = 0;
  if (tt.shape) {
    tt.shape->unknown.clear();
    for (Dimension& d : tt.shape->dim) {
      d.denotation.reset();
      d.unknown.clear();
      if (d.dim_value) d.dim_param.reset();
    }
  }
}
void canon_type(Type& t) {
  t.denotation.reset();
  t.unknown.clear();
  if (t.tensor_type) canon_tensor_type(*t.tensor_type);
  if (t.sparse_tensor_type) canon_tensor_type(*t.sparse_tensor_type);
  if (t.sequence_type) { t.sequence_type->unknown.clear(); canon_box(t.sequence_type->elem_type); }
  if (t.optional_type) { t.optional_type->unknown.clear(); canon_box(t.optional_type->elem_type); }
  if (t.map_type) {
    t.map_type->unknown.clear();
    if (!t.map_type->key_type) t.map_type->key_type = 0;
    canon_box(t.map_type->value_type);
  }
  if (t.opaque_type) {
    t.opaque_type->unknown.clear();
    if (t.opaque_type->domain && t.opaque_type->domain->empty()) t.opaque_type->domain.reset();
    if (t.opaque_type->name && t.opaque_type->name->empty()) t.opaque_type->name.reset();
  }
}

void canon_value_info(ValueInfo& vi) {
  vi.doc_string.reset();
  vi.metadata_props.clear();
  vi.unknown.clear();
  if (!vi.name) vi.name = "";
  if (vi.type) {
    canon_type(*vi.type);
    const Type& t = *vi.type;
    if (!t.tensor_type && !t.sequence_type && !t.map_type && !t.optional_type && !t.sparse_tensor_type &&
        !t.opaque_type)
      vi.type.reset();
  }
}

void canon_graph(Graph& g);
void canon_opsets(std::vector<OperatorSetId>& v) {
  for (auto& o : v) {
    if (!o.domain) o.domain = "";
    if (!o.version) o.version = 0;
    o.unknown.clear();
  }
}

void canon_attribute(Attribute& a) {
  a.doc_string.reset();
  a.unknown.clear();
  if (!a.type) a.type = 0;
  Attribute k;  // only what the printer writes for the attribute's type
  k.name = a.name;
  k.type = a.type;
  if (a.ref_attr_name) {
    k.ref_attr_name = a.ref_attr_name;
    a = std::move(k);
    return;
  }
  switch (static_cast<AttrType>(*a.type)) {
    case AttrType::Float: k.f = a.f.value_or(0.0f); if (std::isnan(*k.f)) { std::vector<float> v{*k.f}; canon_nan(v); k.f = v[0]; } break;
    case AttrType::Int: k.i = a.i.value_or(0); break;
    case AttrType::String: k.s = a.s.value_or(""); break;
    case AttrType::Tensor: k.t = a.t ? *a.t : Tensor{}; canon_tensor(*k.t, false); break;
    case AttrType::Graph: k.g.emplace() = a.g ? *a.g : Graph{}; canon_graph(*k.g); break;
    case AttrType::TypeProto: if (a.tp) { k.tp = a.tp; canon_type(*k.tp); } break;
    case AttrType::Floats: k.floats = a.floats; canon_nan(k.floats); break;
    case AttrType::Ints: k.ints = a.ints; break;
    case AttrType::Strings: k.strings = a.strings; break;
    case AttrType::Tensors: k.tensors = a.tensors; for (auto& t : k.tensors) canon_tensor(t, false); break;
    case AttrType::Graphs: k.graphs = a.graphs; for (auto& g : k.graphs) canon_graph(g); break;
    case AttrType::TypeProtos: k.type_protos = a.type_protos; for (auto& t : k.type_protos) canon_type(t); break;
    default: break;  // undefined and sparse tensors: no value in the text
  }
  a = std::move(k);
}

void canon_node(Node& n) {
  n.doc_string.reset();
  n.metadata_props.clear();
  n.unknown.clear();
  if (n.domain && n.domain->empty()) n.domain.reset();
  if (n.overload && n.overload->empty()) n.overload.reset();
  for (Attribute& a : n.attribute) canon_attribute(a);
}

void canon_graph(Graph& g) {
  g.doc_string.reset();
  g.metadata_props.clear();
  g.sparse_initializer.clear();
  g.quantization_annotation.clear();
  g.unknown.clear();
  if (!g.name) g.name = "";
  for (Node& n : g.node) canon_node(n);
  for (Tensor& t : g.initializer) canon_tensor(t, true);
  for (auto* list : {&g.input, &g.output, &g.value_info})
    for (ValueInfo& vi : *list) canon_value_info(vi);
}

void canon_model(Model& m) {
  m.unknown.clear();
  m.training_info.clear();
  if (!m.ir_version) m.ir_version = 0;
  canon_opsets(m.opset_import);
  canon_entries(m.metadata_props);
  if (!m.graph) m.graph.emplace();
  canon_graph(*m.graph);
  for (Function& f : m.functions) {
    f.doc_string.reset();
    f.attribute_proto.clear();
    f.value_info.clear();
    f.metadata_props.clear();
    f.unknown.clear();
    if (!f.name) f.name = "";
    if (!f.domain) f.domain = "";
    if (f.overload && f.overload->empty()) f.overload.reset();
    canon_opsets(f.opset_import);
    for (Node& n : f.node) canon_node(n);
  }
}

// ---- Round trip of every test model ----

TEST(TextParser, RoundTripsEveryTestModel) {
  const auto models = onyx::testing::all_test_models();
  if (models.empty()) GTEST_SKIP() << "no test models (shared conformance data) next to the checkout";
  size_t done = 0, exact = 0, unprintable = 0;
  for (const fs::path& path : models) {
    SCOPED_TRACE(path.string());
    ModelDocument doc = load_model_file(path);
    std::string text;
    try {
      text = to_text(doc.model);
    } catch (const Error&) {
      ++unprintable;  // the printer refuses tensors whose raw_data size disagrees with their dims
      continue;
    }
    ModelDocument parsed;
    try {
      parsed = parse_model_text(text, path.string());
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    // The text again, character for character.
    ASSERT_EQ(to_text(parsed.model), text);
    // The bytes: equal to the original's once what the text cannot carry is dropped from it.
    const std::string got = serialize_model(parsed.model);
    const std::string original = serialize_model(doc.model);
    if (got == original) ++exact;
    Model canon = doc.model;
    canon_model(canon);
    EXPECT_EQ(got, serialize_model(canon)) << "parsed model differs from the original beyond what the text drops";
    // What the parser writes decodes again.
    EXPECT_NO_THROW(parse_model(got, "parsed"));
    ++done;
  }
  EXPECT_LE(unprintable, 2u);
  std::printf("[ text round trip ] %zu models, %zu byte-identical without any normalization, %zu unprintable\n", done,
              exact, unprintable);
}

// ---- Texts as onnx's own parser reads them ----

TEST(TextParser, ReadsOnnxSyntax) {
  const char* text = R"(
    <ir_version: 8, opset_import: ["" : 18, "custom" : 1], producer_name: "hand", model_version: 3,
     metadata_props: ["k": "v"]>
    agraph (float[N, 128] X, float[128, 10] W = {1, 2.5}, int64 shape) => (float[N, 10] C)
    <float[10] B = {0, -1e-3, nan, -inf}, float[N,?] T>
    {
      # a comment
      T = MatMul(X, W)
      [add] C, "" = custom.Foo:v2 <alpha = 0.5, n = 3, s = "x\"y", fl = [1, 2.0], is = [1, 2],
          ss = ["a", "b"], t = int32[2] {7, 8}, tp = seq(float[2]), e: ints = [], r: float = @ralpha> (T, , B)
      D = If (cond) <then_branch = g1 () => (float y) { y = Identity(X) },
                     else_branch = g2 () => (float y) { y = Identity(X) }>
    }
    <domain: "custom", opset_import: ["" : 18]>
    Foo <alpha, beta: float = 2.0> (x, float[2] y) => (z) { z = Add(x, y) }
  )";
  ModelDocument doc = parse_model_text(text, "hand.txt");
  const Model& m = doc.model;
  EXPECT_EQ(m.ir_version, 8);
  ASSERT_EQ(m.opset_import.size(), 2u);
  EXPECT_EQ(m.metadata_props.at(0).value, "v");
  const Graph& g = *m.graph;
  EXPECT_EQ(g.name, "agraph");
  ASSERT_EQ(g.input.size(), 3u);
  ASSERT_EQ(g.initializer.size(), 2u);
  EXPECT_EQ(g.initializer[0].name, "W");
  EXPECT_EQ(g.initializer[0].float_data, (std::vector<float>{1, 2.5f}));
  EXPECT_TRUE(std::isnan(g.initializer[1].float_data[2]));
  EXPECT_TRUE(std::isinf(g.initializer[1].float_data[3]));
  ASSERT_EQ(g.value_info.size(), 1u);
  EXPECT_FALSE(g.value_info[0].type->tensor_type->shape->dim[1].dim_value);
  ASSERT_EQ(g.node.size(), 3u);
  const Node& n = g.node[1];
  EXPECT_EQ(n.name, "add");
  EXPECT_EQ(n.domain, "custom");
  EXPECT_EQ(n.overload, "v2");
  EXPECT_EQ(n.input, (std::vector<Str>{"T", "", "B"}));
  EXPECT_EQ(n.output, (std::vector<Str>{"C", ""}));
  ASSERT_EQ(n.attribute.size(), 10u);
  EXPECT_EQ(n.attribute[0].type, static_cast<int32_t>(AttrType::Float));
  EXPECT_EQ(n.attribute[1].i, 3);
  EXPECT_EQ(n.attribute[2].s, "x\"y");
  EXPECT_EQ(n.attribute[3].floats, (std::vector<float>{1, 2}));
  EXPECT_EQ(n.attribute[4].ints, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n.attribute[5].strings.size(), 2u);
  EXPECT_EQ(n.attribute[6].t->int32_data, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(n.attribute[7].type, static_cast<int32_t>(AttrType::TypeProto));
  EXPECT_TRUE(n.attribute[7].tp->sequence_type);
  EXPECT_EQ(n.attribute[8].type, static_cast<int32_t>(AttrType::Ints));
  EXPECT_EQ(n.attribute[9].ref_attr_name, "ralpha");
  EXPECT_EQ(g.node[2].attribute.size(), 2u);
  EXPECT_EQ(g.node[2].attribute[0].g->name, "g1");
  ASSERT_EQ(m.functions.size(), 1u);
  const Function& f = m.functions[0];
  EXPECT_EQ(f.attribute, (std::vector<Str>{"alpha"}));
  ASSERT_EQ(f.attribute_proto.size(), 1u);
  EXPECT_EQ(f.attribute_proto[0].f, 2.0f);
  EXPECT_EQ(f.input, (std::vector<Str>{"x", "y"}));
  EXPECT_EQ(f.value_info.size(), 1u);
}

// ---- Errors ----

std::string error_of(const std::string& text) {
  try {
    parse_model_text(text, "m.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TextParser, ErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("<ir_version: 8>\ng (float x) => (float y) {\n  y = Relu(x\n}"),
            "m.txt:4:1: expected ')' after the inputs of node 'Relu', found '}'");
  EXPECT_EQ(error_of(""), "m.txt:1:1: expected a graph name, found the end of the text");
  EXPECT_EQ(error_of("<ir_version: 99999999999999999999>"),
            "m.txt:1:14: ir_version: 99999999999999999999 is out of the range of int64");
  EXPECT_EQ(error_of("g () => () <float[2] w = {1e999}> {}"),
            "m.txt:1:27: a value of element type float: 1e999 is out of the range of float");
  EXPECT_EQ(error_of("g () => () { y = Foo <a: wrong = 1> () }"), "m.txt:1:26: unknown attribute type 'wrong'");
  EXPECT_EQ(error_of("g () => (float y) { y = Foo <s = \"abc> () }"),
            "m.txt:1:34: unterminated string literal (no closing '\"')");
  EXPECT_NE(error_of("g () => () {} trailing"), "");
}

TEST(TextParser, HostileTextsEndInErrors) {
  // Deep nesting of types and of graphs: an error, not a stack overflow.
  std::string deep_type = "g (";
  for (int i = 0; i < 100000; ++i) deep_type += "seq(";
  EXPECT_NE(error_of(deep_type).find("nesting deeper than"), std::string::npos);
  std::string deep_graph;
  for (int i = 0; i < 100000; ++i) deep_graph += "g () => () { x = If <b = ";
  EXPECT_NE(error_of(deep_graph).find("nesting deeper than"), std::string::npos);
  // Huge numbers and dims: errors or plain values, no allocation from them.
  EXPECT_NE(error_of("g () => () <float[99999999999999999999] w = {1}> {}"), "");
  EXPECT_EQ(error_of("g () => () <float[9223372036854775807,9223372036854775807] w = {1}> {}"), "");

  // Every prefix and random mutations of a printed model: errors or models that decode again; never a crash.
  const char* base = R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[N] x, seq(map(int64, optional(float[2]))) s) => (float y) <float[2] w = {1, 2}, string[1] n = {"a\"b"}> {
   [n1] y = If <then_branch: graph = t () => (float z) { z = Identity (x) }, f: floats = [1.5, -2], i: int = -3> (x)
   z = Foo <t: tensor = int64[2] {1, 2}, tp: type_proto = sparse_tensor(float[?, M]), g: graphs = []> ("", x)
}
<domain: "d", opset_import: ["" : 18]>
F <a> (x) => (y) { y = Neg (x) })";
  const std::string text = base;
  size_t models = 0;
  auto attempt = [&](const std::string& t) {
    try {
      const ModelDocument d = parse_model_text(t, "fuzz");
      parse_model(serialize_model(d.model), "fuzz");
      ++models;
    } catch (const Error&) {
    }
  };
  for (size_t n = 0; n <= text.size(); ++n) attempt(text.substr(0, n));
  std::mt19937 rng(17);
  const std::string alphabet = "()[]{}<>,:=@\"\\#.-?0123456789eEnaf x\n";
  for (int i = 0; i < 3000; ++i) {
    std::string t = text;
    for (int k = 0; k < 3; ++k) {
      const size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: t.erase(at, 1 + rng() % 8); break;
        default: t.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (t.empty()) t = "x";
    }
    attempt(t);
  }
  EXPECT_GE(models, 1u);
}

TEST(TextParser, PublicApiWritesBytes) {
  const std::string bytes = onyx::parse_model_text("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                                                   "g (float x) => (float y) { y = Relu(x) }");
  const Model m = parse_model(bytes, "bytes");
  ASSERT_TRUE(m.graph);
  EXPECT_EQ(m.graph->node.at(0).op_type, "Relu");
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx::pb
