#include "ops/registry.hpp"

#include <algorithm>
#include <atomic>
#include <climits>

#include "base/error.hpp"
#include "ir/scalar.hpp"
#include "ir/spec_table.hpp"

namespace onyx::ops {

// Messages here say what is wrong; the session prefixes them with the model, graph and node.

// ---- AttributeView ----

AttributeView::AttributeView(const Node& node, const std::vector<const Attribute*>* caller_scope)
    : node_(node), scope_(caller_scope) {}

const Attribute* AttributeView::find(std::string_view name) const {
  const Attribute* a = node_.attribute(name);
  if (!a || a->ref_attr_name.empty()) return a;
  if (scope_)
    for (const Attribute* c : *scope_)
      if (c && c->name == a->ref_attr_name) return c;
  return nullptr;  // a reference the caller did not set: the attribute is absent
}

const Attribute& AttributeView::require(std::string_view name, AttributeType type) const {
  const Attribute* a = find(name);
  if (!a) fail("required attribute '", name, "' is missing");
  if (a->type != type)
    fail("attribute '", name, "' is ", attribute_type_name(a->type), ", expected ",
         attribute_type_name(type));
  return *a;
}

int64_t AttributeView::get_int(std::string_view name, std::optional<int64_t> dflt) const {
  if (!find(name) && dflt) return *dflt;
  return require(name, AttributeType::Int).i;
}
float AttributeView::get_float(std::string_view name, std::optional<float> dflt) const {
  if (!find(name) && dflt) return *dflt;
  return require(name, AttributeType::Float).f;
}
std::string AttributeView::get_string(std::string_view name, std::optional<std::string> dflt) const {
  if (!find(name) && dflt) return *dflt;
  return require(name, AttributeType::String).s;
}
std::vector<int64_t> AttributeView::get_ints(std::string_view name, std::optional<std::vector<int64_t>> dflt) const {
  if (!find(name) && dflt) return *dflt;
  return require(name, AttributeType::Ints).ints;
}
std::vector<float> AttributeView::get_floats(std::string_view name, std::optional<std::vector<float>> dflt) const {
  if (!find(name) && dflt) return *dflt;
  return require(name, AttributeType::Floats).floats;
}
std::vector<std::string> AttributeView::get_strings(std::string_view name,
                                                    std::optional<std::vector<std::string>> dflt) const {
  if (!find(name) && dflt) return *dflt;
  return require(name, AttributeType::Strings).strings;
}
const Tensor* AttributeView::get_tensor(std::string_view name) const {
  if (!find(name)) return nullptr;
  return &*require(name, AttributeType::Tensor).t;
}
const Graph* AttributeView::get_graph(std::string_view name) const {
  if (!find(name)) return nullptr;
  return require(name, AttributeType::Graph).g.get();
}

// ---- InferContext ----

const Type& InferContext::input_type(size_t i) const {
  if (!has_input(i)) error(cat("input ", i, " is missing"));
  return *input_types[i];
}

DataType InferContext::input_dtype(size_t i) const {
  if (!has_input(i)) return DataType::Undefined;
  const Type& t = *input_types[i];
  return (t.kind == Type::Kind::Tensor || t.kind == Type::Kind::SparseTensor) ? t.elem : DataType::Undefined;
}

void InferContext::set_output(size_t i, Type t) {
  if (i >= output_types.size()) return;  // the node does not use this optional output
  output_types[i] = std::move(t);
}

std::optional<std::vector<Dim>> InferContext::input_as_dims(size_t i) const {
  if (const Tensor* t = input_value(i)) {
    if (t->dims().size() > 1 || t->dtype() == DataType::String || t->dtype() == DataType::Bool) return std::nullopt;
    std::vector<Dim> dims;
    visit_dtype(t->dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>)
        for (uint64_t k = 0; k < t->element_count(); ++k) dims.push_back(Dim{static_cast<int64_t>(t->data<T>()[k]), {}, {}});
    });
    if (dims.size() != t->element_count()) return std::nullopt;
    return dims;
  }
  if (!has_input_dim_values(i)) return std::nullopt;
  if (has_input(i)) {  // like a constant: only 0-D and 1-D tensors are lists of dims
    const Type& t = *input_types[i];
    if (t.kind == Type::Kind::Tensor && t.shape.rank_known && t.shape.dims.size() > 1) return std::nullopt;
  }
  return *input_dim_values[i];
}

void InferContext::set_output_dim_values(size_t i, std::vector<Dim> dims) {
  if (i >= output_dim_values.size() || dims.size() > kMaxDimValues) return;
  for (Dim& d : dims) d.denotation.clear();
  output_dim_values[i] = std::move(dims);
}

void InferContext::forward_dim_values(size_t in, size_t out) {
  if (has_input_dim_values(in)) set_output_dim_values(out, *input_dim_values[in]);
}

void InferContext::error(const std::string& what) const { fail(what); }

// ---- ExpandContext ----

bool ExpandContext::output_wanted(size_t i) const {
  const Value* v = output(i);
  return v && (v->is_graph_output || !v->consumers.empty());
}

Value* ExpandContext::int64s(const std::vector<int64_t>& values) {
  Tensor t = Tensor::allocate(DataType::Int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.mutable_data<int64_t>());
  return constant(std::move(t));
}

Value* ExpandContext::scalar(DataType dt, double v) {
  Tensor t = Tensor::allocate(dt, {});
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T>) t.mutable_data<T>()[0] = static_cast<T>(v);
    else if constexpr (is_small_float_v<T>) t.mutable_data<T>()[0] = from_double<T>(v);
    else fail("a constant of element type ", dt, " is not supported");
  });
  return constant(std::move(t));
}

void ExpandContext::error(const std::string& what) const { fail(what); }

// ---- KernelContext ----

KernelContext::KernelContext(const Node& node, int64_t opset, std::vector<const Datum*> inputs, size_t num_outputs,
                             SubgraphRunner* subgraphs)
    : node_(node), opset_(opset), inputs_(std::move(inputs)), outputs_(num_outputs), subgraphs_(subgraphs) {}

const Datum& KernelContext::input_datum(size_t i) const {
  if (!has_input(i)) error(cat("input ", i, " is missing"));
  return *inputs_[i];
}

const Tensor& KernelContext::input(size_t i) const {
  const Datum& d = input_datum(i);
  if (!d.is_tensor()) error(cat("input ", i, " is ", d.describe(), ", expected a tensor"));
  return d.tensor;
}

bool KernelContext::output_wanted(size_t i) const {
  return i < node_.outputs.size() && node_.outputs[i] != nullptr;
}

Tensor& KernelContext::allocate_output(size_t i, DataType dtype, std::vector<int64_t> dims) {
  if (i >= outputs_.size()) error(cat("output ", i, " does not exist"));
  outputs_[i] = Datum::of(Tensor::allocate(dtype, std::move(dims)));
  return outputs_[i].tensor;
}

namespace {
std::atomic<uint64_t> g_reuse_count{0};
}

void KernelContext::allow_reuse(size_t i, Datum* d) {
  if (i >= inputs_.size() || inputs_[i] != d) fail("allow_reuse: input ", i, " is not that value");
  if (reusable_.size() <= i) reusable_.resize(inputs_.size(), nullptr);
  reusable_[i] = d;
}

Tensor* KernelContext::reuse_input(size_t in, size_t out, DataType dtype, const std::vector<int64_t>& dims) {
  if (in >= reusable_.size() || !reusable_[in] || out >= outputs_.size() || !reusable_[in]->is_tensor()) return nullptr;
  const Tensor& x = reusable_[in]->tensor;
  uint64_t n = 1;
  for (int64_t d : dims) n *= static_cast<uint64_t>(d);
  // Alone: no other value, output or caller sees the buffer, so writing it changes nothing anyone else reads.
  if (x.dtype() != dtype || x.element_count() != n || !x.is_writable() || x.is_view() || !x.owns_buffer_alone())
    return nullptr;
  outputs_[out] = Datum::of(x.reshaped(dims));
  outputs_[out].tensor.set_name({});
  reusable_[in] = nullptr;  // one output per input buffer
  g_reuse_count.fetch_add(1, std::memory_order_relaxed);
  return &outputs_[out].tensor;
}

uint64_t KernelContext::reuse_count() { return g_reuse_count.load(std::memory_order_relaxed); }

void KernelContext::set_output(size_t i, Datum d) {
  if (i >= outputs_.size()) error(cat("output ", i, " does not exist"));
  outputs_[i] = std::move(d);
}

SubgraphRunner& KernelContext::subgraphs() const {
  if (!subgraphs_) error("subgraphs cannot run here");
  return *subgraphs_;
}

void KernelContext::error(const std::string& what) const { fail(what); }

// ---- Registry ----

void Registry::add(OpDef def) {
  if (!def.infer || (!def.kernel && !def.expand))
    fail("op ", def.op_type, "(", def.since_version, ") registered without inference, or without kernel or expansion");
  auto spec = spec::since_versions(def.domain, def.op_type);
  if (spec::is_known_domain(def.domain) && std::find(spec.begin(), spec.end(), def.since_version) == spec.end())
    fail("op ", def.domain.empty() ? "" : def.domain + ".", def.op_type, "(", def.since_version,
         ") is not a version of the ONNX spec");
  auto key = std::make_tuple(def.domain, def.op_type, def.since_version);
  if (defs_.count(key)) fail("op ", def.op_type, "(", def.since_version, ") registered twice");
  defs_.emplace(std::move(key), std::move(def));
}

const OpDef* Registry::find(std::string_view domain, std::string_view op_type, int since_version) const {
  auto it = defs_.find(std::make_tuple(std::string(domain), std::string(op_type), since_version));
  return it == defs_.end() ? nullptr : &it->second;
}

template <class Map>
auto Registry::versions_of(Map& defs, std::string_view domain, std::string_view op_type) {
  // The map orders by (domain, op_type, version): one op's versions are adjacent, ascending.
  auto first = defs.lower_bound(std::make_tuple(std::string(domain), std::string(op_type), INT_MIN));
  auto last = first;
  while (last != defs.end() && std::get<0>(last->first) == domain && std::get<1>(last->first) == op_type) ++last;
  // A plain pair of iterators: clang 14 cannot check std::ranges::subrange's concepts against libstdc++ 12's map.
  struct Versions {
    decltype(first) first_, last_;
    auto begin() const { return first_; }
    auto end() const { return last_; }
    bool empty() const { return first_ == last_; }
  };
  return Versions{first, last};
}

std::vector<int> Registry::versions(std::string_view domain, std::string_view op_type) const {
  std::vector<int> v;
  for (const auto& [key, def] : versions_of(defs_, domain, op_type)) v.push_back(std::get<2>(key));
  return v;
}

namespace {

// Applies `amend` to each of an op's registered versions (`defs`, from versions_of); an error, saying what the op
// was being (`what`), when it has none.
template <class Defs, class Amend>
void amend_versions(Defs defs, std::string_view op_type, const char* what, Amend amend) {
  if (defs.empty()) fail("op ", op_type, " is ", what, " before any version of it is registered");
  for (auto& [key, def] : defs) amend(def);
}

}  // namespace

void Registry::set_nondeterministic(std::string_view domain, std::string_view op_type) {
  amend_versions(versions_of(defs_, domain, op_type), op_type, "marked not deterministic",
                 [](OpDef& def) { def.deterministic = false; });
}

void Registry::set_fast_kernels(std::string_view domain, std::string_view op_type, std::vector<std::string> kernels) {
  amend_versions(versions_of(defs_, domain, op_type), op_type, "given fast kernels",
                 [&](OpDef& def) { def.fast_kernels = kernels; });
}

void Registry::set_gradient(std::string_view domain, std::string_view op_type, GradientRule rule) {
  amend_versions(versions_of(defs_, domain, op_type), op_type, "given a gradient rule",
                 [rule](OpDef& def) { def.gradient = rule; });
}

bool Registry::deterministic(std::string_view domain, std::string_view op_type) const {
  for (const auto& [key, def] : versions_of(defs_, domain == "ai.onnx" ? "" : domain, op_type))
    if (!def.deterministic) return false;
  return true;
}

const OpDef& Registry::resolve(const Node& node, int64_t opset) const {
  std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
  auto since = spec::resolve_since_version(domain, node.op_type, opset);
  std::string qualified = (domain.empty() ? "" : domain + ".") + node.op_type;
  if (!since) {
    // Not an ONNX op at this opset: an op of another domain is looked up by the highest version <= opset.
    if (!spec::is_known_domain(domain)) {
      auto v = versions(domain, node.op_type);
      int best = -1;
      for (int x : v)
        if (x <= opset) best = std::max(best, x);
      if (best >= 0) return *find(domain, node.op_type, best);
    }
    fail(qualified, " does not exist at opset ", opset, " of domain '",
         domain.empty() ? "ai.onnx" : domain, "'");
  }
  if (const OpDef* d = find(domain, node.op_type, *since)) return *d;
  auto have = versions(domain, node.op_type);
  std::string list;
  for (int x : have) list += (list.empty() ? "" : ", ") + std::to_string(x);
  fail(qualified, "(", *since, ") (opset ", opset, ") is not implemented",
       have.empty() ? std::string("; no version of it is") : "; implemented versions: " + list);
}

void check_input_types(const OpDef& def, const Node& node, const std::vector<DataType>& dtypes) {
  for (const auto& c : def.types) {
    // {-1}: every input. (Runs check every node: no allocation here.)
    const bool all = c.inputs.size() == 1 && c.inputs[0] == -1;
    const size_t count = all ? dtypes.size() : c.inputs.size();
    for (size_t at = 0; at < count; ++at) {
      const int i = all ? static_cast<int>(at) : c.inputs[at];
      if (i < 0 || static_cast<size_t>(i) >= dtypes.size() || dtypes[i] == DataType::Undefined) continue;
      if (std::find(c.allowed.begin(), c.allowed.end(), dtypes[i]) != c.allowed.end()) continue;
      std::string list;
      for (DataType t : c.allowed) list += (list.empty() ? "" : ", ") + std::string(dtype_name(t));
      fail(def.op_type, "(", def.since_version, ") input ", i,
           (static_cast<size_t>(i) < node.inputs.size() && node.inputs[i] ? " '" + node.inputs[i]->name + "'" : ""),
           " has element type ", dtypes[i], "; allowed: ", list);
    }
  }
}

// ---- The built-in registry ----

#define ONYX_OP_FAMILY(f) void register_##f(Registry&);
#include "ops/families.def"
#undef ONYX_OP_FAMILY

const Registry& builtin_registry() {
  static const Registry r = [] {
    Registry reg;
#define ONYX_OP_FAMILY(f) register_##f(reg);
#include "ops/families.def"
#undef ONYX_OP_FAMILY
    return reg;
  }();
  return r;
}

}  // namespace onyx::ops
