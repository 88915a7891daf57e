#include "ir/spec_table.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

#include "base/error.hpp"

namespace onyx::spec {
namespace {

// The text of spec/op_versions.tsv: a header line, then "domain<TAB>op_type<TAB>since_version", optionally
// followed by the version's signature (scripts/op_signatures.py): min/max inputs, min/max outputs, attributes.
static const char kTsv[] =
#include "op_versions_tsv.inc"
    ;

// Hash that lets the maps below be searched with a string_view without building a string.
struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

template <class V>
using ViewMap = std::unordered_map<std::string, V, ViewHash, std::equal_to<>>;

struct OpVersions {
  std::vector<int> since;                 // ascending
  std::map<int, Signature> signatures;    // the versions whose signature the table gives
};
using OpTable = ViewMap<ViewMap<OpVersions>>;  // domain -> op_type -> versions

// A count column: a number, or '*' for no maximum (-1).
bool parse_count(std::string_view v, int& out) {
  if (v == "*") {
    out = -1;
    return true;
  }
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && p == v.data() + v.size() && out >= 0;
}

// Splits `line` at tabs; a trailing '\r' (a file edited on Windows) is dropped.
std::vector<std::string_view> split_tabs(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

OpTable parse_table() {
  OpTable table;
  const std::string_view text(kTsv, sizeof(kTsv) - 1);
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty() || line == "\r") continue;
    const auto fields = split_tabs(line);
    if (line_no == 1 && !fields.empty() && fields[0] == "domain") continue;  // the header
    int version = 0;
    bool ok = (fields.size() == 3 || fields.size() == 8) && !fields[0].empty() && !fields[1].empty() && [&] {
      const auto& v = fields[2];
      const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), version);
      return ec == std::errc() && p == v.data() + v.size() && version >= 1;
    }();
    std::optional<Signature> sig;
    if (ok && fields.size() == 8 && fields[3] != "?") {
      sig.emplace();
      ok = parse_count(fields[3], sig->min_inputs) && parse_count(fields[4], sig->max_inputs) &&
           parse_count(fields[5], sig->min_outputs) && parse_count(fields[6], sig->max_outputs) && !fields[7].empty();
      for (size_t start = 0; ok && fields[7] != "-" && start <= fields[7].size();) {
        size_t comma = fields[7].find(',', start);
        if (comma == std::string_view::npos) comma = fields[7].size();
        sig->attributes.emplace_back(fields[7].substr(start, comma - start));
        start = comma + 1;
      }
    }
    if (!ok) fail("spec/op_versions.tsv line ", line_no, " is malformed: '", line, "'");
    OpVersions& op = table[std::string(fields[0])][std::string(fields[1])];
    op.since.push_back(version);
    if (sig) op.signatures[version] = std::move(*sig);
  }
  for (auto& [domain, ops] : table) {
    for (auto& [op, versions] : ops) {
      std::sort(versions.since.begin(), versions.since.end());
      versions.since.erase(std::unique(versions.since.begin(), versions.since.end()), versions.since.end());
    }
  }
  return table;
}

const OpTable& op_table() {
  static const OpTable table = parse_table();  // thread-safe initialization
  return table;
}

const OpVersions* find_op(std::string_view domain, std::string_view op_type) {
  const auto& table = op_table();
  const auto d = table.find(canonical_domain(domain));
  if (d == table.end()) return nullptr;
  const auto o = d->second.find(op_type);
  return o == d->second.end() ? nullptr : &o->second;
}

const std::vector<int>* find_versions(std::string_view domain, std::string_view op_type) {
  const OpVersions* op = find_op(domain, op_type);
  return op ? &op->since : nullptr;
}

}  // namespace

std::string_view canonical_domain(std::string_view domain) {
  return domain.empty() ? std::string_view("ai.onnx") : domain;
}

bool is_known_domain(std::string_view domain) {
  const std::string_view d = canonical_domain(domain);
  return d == "ai.onnx" || d == "ai.onnx.ml" || d == "ai.onnx.preview" ||
         d == "ai.onnx.preview.training";
}

std::optional<int> resolve_since_version(std::string_view domain, std::string_view op_type,
                                         int64_t opset) {
  const auto* versions = find_versions(domain, op_type);
  if (!versions) return std::nullopt;
  // Versions are ascending: the answer is the element before the first one above `opset`.
  const auto above = std::upper_bound(versions->begin(), versions->end(), opset,
                                      [](int64_t o, int v) { return o < v; });
  if (above == versions->begin()) return std::nullopt;
  return *(above - 1);
}

std::vector<int> since_versions(std::string_view domain, std::string_view op_type) {
  const auto* versions = find_versions(domain, op_type);
  return versions ? *versions : std::vector<int>{};
}

std::optional<int> newest_opset(std::string_view domain) {
  const OpTable& table = op_table();
  const auto d = table.find(canonical_domain(domain));
  if (d == table.end()) return std::nullopt;
  int newest = 0;
  for (const auto& [op, versions] : d->second) newest = std::max(newest, versions.since.back());
  return newest;
}

const Signature* signature(std::string_view domain, std::string_view op_type, int since_version) {
  const OpVersions* op = find_op(domain, op_type);
  if (!op) return nullptr;
  const auto it = op->signatures.find(since_version);
  return it == op->signatures.end() ? nullptr : &it->second;
}

}  // namespace onyx::spec
