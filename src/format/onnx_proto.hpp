// The messages of onnx.proto (IR version 10) and onnx-data.proto, decoded from the wire.
// Strings and bytes are views into the source (a memory-mapped file) or into the document's arena; nothing is
// copied on load. Optional scalars keep their presence (proto2 semantics) so that a re-written model is equal to
// the original, and fields this reader does not know are kept verbatim in `unknown` and written back.
#pragma once
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onyx {
class MappedFile;
}

namespace onyx::pb {

using Str = std::string_view;
using OptStr = std::optional<std::string_view>;
using Unknown = std::vector<std::string_view>;  // raw bytes of unknown fields (tag + value)

// Owning pointer with value semantics, for the recursive messages (a graph inside an attribute inside a node).
template <class T>
class Box {
 public:
  Box() = default;
  Box(const Box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Box(Box&&) noexcept = default;
  Box& operator=(const Box& o) {
    p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Box& operator=(Box&&) noexcept = default;
  explicit operator bool() const { return p_ != nullptr; }
  T& emplace() {
    p_ = std::make_unique<T>();
    return *p_;
  }
  void reset() { p_.reset(); }
  T& operator*() const { return *p_; }
  T* operator->() const { return p_.get(); }
  T* get() const { return p_.get(); }

 private:
  std::unique_ptr<T> p_;
};

struct StringStringEntry {
  OptStr key, value;
  Unknown unknown;
};
using Metadata = std::vector<StringStringEntry>;

struct OperatorSetId {
  OptStr domain;
  std::optional<int64_t> version;
  Unknown unknown;
};

struct TensorSegment {
  std::optional<int64_t> begin, end;
  Unknown unknown;
};

struct Tensor {
  std::vector<int64_t> dims;
  std::optional<int32_t> data_type;
  std::optional<TensorSegment> segment;
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;
  std::vector<Str> string_data;
  std::vector<int64_t> int64_data;
  OptStr name;
  OptStr doc_string;
  OptStr raw_data;
  Metadata external_data;
  std::optional<int32_t> data_location;  // 0 DEFAULT, 1 EXTERNAL
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  Metadata metadata_props;
  Unknown unknown;
};

struct SparseTensor {
  std::optional<Tensor> values, indices;
  std::vector<int64_t> dims;
  Unknown unknown;
};

struct Dimension {
  std::optional<int64_t> dim_value;  // oneof value { dim_value, dim_param }
  OptStr dim_param;
  OptStr denotation;
  Unknown unknown;
};

struct TensorShape {
  std::vector<Dimension> dim;
  Unknown unknown;
};

struct Type;
struct TypeTensor {  // also used for sparse_tensor_type: same fields
  std::optional<int32_t> elem_type;
  std::optional<TensorShape> shape;
  Unknown unknown;
};
struct TypeElem {  // sequence_type and optional_type
  Box<Type> elem_type;
  Unknown unknown;
};
struct TypeMap {
  std::optional<int32_t> key_type;
  Box<Type> value_type;
  Unknown unknown;
};
struct TypeOpaque {
  OptStr domain, name;
  Unknown unknown;
};
struct Type {
  // oneof value: at most one of these is set (the last one read wins, as in protobuf).
  std::optional<TypeTensor> tensor_type;
  std::optional<TypeElem> sequence_type;
  std::optional<TypeMap> map_type;
  std::optional<TypeElem> optional_type;
  std::optional<TypeTensor> sparse_tensor_type;
  std::optional<TypeOpaque> opaque_type;
  OptStr denotation;
  Unknown unknown;
  void clear_value();
};

struct ValueInfo {
  OptStr name;
  std::optional<Type> type;
  OptStr doc_string;
  Metadata metadata_props;
  Unknown unknown;
};

enum class AttrType : int32_t {
  Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Graph = 5, Floats = 6, Ints = 7, Strings = 8,
  Tensors = 9, Graphs = 10, SparseTensor = 11, SparseTensors = 12, TypeProto = 13, TypeProtos = 14,
};

struct Graph;
struct Attribute {
  OptStr name;
  OptStr ref_attr_name;
  OptStr doc_string;
  std::optional<int32_t> type;
  std::optional<float> f;
  std::optional<int64_t> i;
  OptStr s;
  std::optional<Tensor> t;
  Box<Graph> g;
  std::optional<SparseTensor> sparse_tensor;
  std::optional<Type> tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<Str> strings;
  std::vector<Tensor> tensors;
  std::vector<Graph> graphs;
  std::vector<SparseTensor> sparse_tensors;
  std::vector<Type> type_protos;
  Unknown unknown;
};

struct Node {
  std::vector<Str> input, output;
  OptStr name, op_type, domain, overload;
  std::vector<Attribute> attribute;
  OptStr doc_string;
  Metadata metadata_props;
  Unknown unknown;
};

struct TensorAnnotation {
  OptStr tensor_name;
  Metadata quant_parameter_tensor_names;
  Unknown unknown;
};

struct Graph {
  std::vector<Node> node;
  OptStr name;
  std::vector<Tensor> initializer;
  std::vector<SparseTensor> sparse_initializer;
  OptStr doc_string;
  std::vector<ValueInfo> input, output, value_info;
  std::vector<TensorAnnotation> quantization_annotation;
  Metadata metadata_props;
  Unknown unknown;
};

struct TrainingInfo {
  std::optional<Graph> initialization, algorithm;
  Metadata initialization_binding, update_binding;
  Unknown unknown;
};

struct Function {
  OptStr name;
  std::vector<Str> input, output, attribute;
  std::vector<Attribute> attribute_proto;
  std::vector<Node> node;
  OptStr doc_string;
  std::vector<OperatorSetId> opset_import;
  OptStr domain, overload;
  std::vector<ValueInfo> value_info;
  Metadata metadata_props;
  Unknown unknown;
};

struct Model {
  std::optional<int64_t> ir_version;
  std::vector<OperatorSetId> opset_import;
  OptStr producer_name, producer_version, domain;
  std::optional<int64_t> model_version;
  OptStr doc_string;
  std::optional<Graph> graph;
  Metadata metadata_props;
  std::vector<TrainingInfo> training_info;
  std::vector<Function> functions;
  Unknown unknown;
};

// onnx-data.proto: values used by test data.
struct MapValue;
struct OptionalValue;
struct SequenceValue {
  OptStr name;
  std::optional<int32_t> elem_type;  // 0 undefined, 1 tensor, 2 sparse tensor, 3 sequence, 4 map, 5 optional
  std::vector<Tensor> tensor_values;
  std::vector<SparseTensor> sparse_tensor_values;
  std::vector<SequenceValue> sequence_values;
  std::vector<MapValue> map_values;
  std::vector<OptionalValue> optional_values;
  Unknown unknown;
};
struct MapValue {
  OptStr name;
  std::optional<int32_t> key_type;
  std::vector<int64_t> keys;
  std::vector<Str> string_keys;
  Box<SequenceValue> values;
  Unknown unknown;
};
struct OptionalValue {
  OptStr name;
  std::optional<int32_t> elem_type;
  std::optional<Tensor> tensor_value;
  std::optional<SparseTensor> sparse_tensor_value;
  Box<SequenceValue> sequence_value;
  Box<MapValue> map_value;
  Box<OptionalValue> optional_value;
  Unknown unknown;
};

// Storage for strings and buffers created in memory (by the writer, converters, tests); views into it stay valid
// for the arena's life.
class Arena {
 public:
  Str save(std::string s) { return strings_.emplace_back(std::move(s)); }
  void keep(std::shared_ptr<const void> p) { keep_.push_back(std::move(p)); }

 private:
  std::deque<std::string> strings_;
  std::vector<std::shared_ptr<const void>> keep_;
};

// A decoded model together with what its views point into.
struct ModelDocument {
  std::shared_ptr<const MappedFile> source;
  std::shared_ptr<Arena> arena = std::make_shared<Arena>();
  std::filesystem::path dir;   // folder that external data paths are relative to
  std::string label;           // the file name or "<bytes>", used in error messages
  Model model;
  // External data files the caller serves from memory, by location (SessionOptions::external_data_files): the
  // checker and the builder read these buffers instead of files in `dir`.
  std::map<std::string, std::shared_ptr<const std::string>> memory_files;
};

struct ParseLimits {
  int max_depth = 256;  // nesting of messages (graphs in attributes, types in types): some 80 subgraphs deep
};

// Decoders. `what` names the source in errors. They throw onyx::Error on malformed input.
Model parse_model(std::string_view bytes, std::string_view what, const ParseLimits& limits = {});
Tensor parse_tensor(std::string_view bytes, std::string_view what, const ParseLimits& limits = {});
SequenceValue parse_sequence(std::string_view bytes, std::string_view what, const ParseLimits& limits = {});
MapValue parse_map(std::string_view bytes, std::string_view what, const ParseLimits& limits = {});
OptionalValue parse_optional(std::string_view bytes, std::string_view what, const ParseLimits& limits = {});

// Encoders, writing fields in field-number order (as protobuf does), then the kept unknown fields.
std::string serialize_model(const Model& m);
std::string serialize_tensor(const Tensor& t);
std::string serialize_sequence(const SequenceValue& s);
std::string serialize_map(const MapValue& m);
std::string serialize_optional(const OptionalValue& o);
// Streams the encoded model to `out` piece by piece; tensor data is passed from its views, never copied.
void serialize_model_to(const Model& m, const std::function<void(std::string_view)>& out);
// Streams the model to a file without first building it in memory (tensor data is written from its views).
void write_model_file(const Model& m, const std::filesystem::path& path);

// Loads a model file: maps it and decodes it (no tensor data is copied or touched).
ModelDocument load_model_file(const std::filesystem::path& path, const ParseLimits& limits = {});
ModelDocument load_model_bytes(std::string bytes, std::string label = "<bytes>", const ParseLimits& limits = {});

}  // namespace onyx::pb
