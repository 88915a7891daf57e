// onyx ops: the operators onyx implements, from the built-in registry: versions, allowed element types, the fast
// kernels an op may run instead of its reference kernel, whether Gradient differentiates through it, and whether
// it is deterministic.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "base/error.hpp"
#include "cli.hpp"
#include "ops/registry.hpp"
#include "text_escape.hpp"

namespace onyx::cli {

const char* const kOpsUsage =
    "usage: onyx ops [--domain D] [--json]\n"
    "\n"
    "Lists the operators onyx implements, sorted by domain and op type: the since_versions registered (a model's\n"
    "opset binds to exactly one of them) and, per version, the element types each type constraint allows, with\n"
    "the inputs it applies to. Versions with the same constraints are shown together. Then, where they apply, the\n"
    "fast kernels the op may run instead of its reference kernel (\"fast:\", what runs and when), whether\n"
    "ai.onnx.preview.training's Gradient has a rule for it and whether it is random (never folded). Ends with a\n"
    "count line.\n"
    "  --domain D   only domain D (ai.onnx, ai.onnx.ml, ...; \"\" is ai.onnx)\n"
    "  --json       one JSON object: {\"operators\": [{\"domain\", \"op_type\", \"since_versions\": [...], \"versions\":\n"
    "               [{\"since_version\", \"type_constraints\": [{\"inputs\": [...] or \"all\", \"types\": [...]}]}],\n"
    "               \"fast_kernels\": [...], \"gradient\": bool, \"deterministic\": bool}],\n"
    "               \"operator_count\", \"version_count\", \"fast_operator_count\"}\n";

namespace {

std::string domain_name(const std::string& d) { return d.empty() ? "ai.onnx" : d; }

// Constraints with their types in enum order, so equal constraint sets compare equal and print the same.
std::vector<ops::TypeConstraint> normalized(const std::vector<ops::TypeConstraint>& list) {
  std::vector<ops::TypeConstraint> r = list;
  for (auto& c : r) std::sort(c.allowed.begin(), c.allowed.end());
  return r;
}

bool same(const std::vector<ops::TypeConstraint>& a, const std::vector<ops::TypeConstraint>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].inputs != b[i].inputs || a[i].allowed != b[i].allowed) return false;
  return true;
}

bool all_inputs(const ops::TypeConstraint& c) { return c.inputs.size() == 1 && c.inputs[0] == -1; }

std::string inputs_text(const ops::TypeConstraint& c) {
  if (all_inputs(c)) return "all inputs";
  std::string s = c.inputs.size() == 1 ? "input " : "inputs ";
  // Runs of consecutive indices as "2-257" (variadic ops list every index a model may use).
  for (size_t i = 0; i < c.inputs.size();) {
    size_t j = i;
    while (j + 1 < c.inputs.size() && c.inputs[j + 1] == c.inputs[j] + 1) ++j;
    s += cat(i ? "," : "", c.inputs[i]);
    if (j >= i + 2) s += cat("-", c.inputs[j]);
    else if (j == i + 1) s += cat(",", c.inputs[j]);
    i = j + 1;
  }
  return s;
}

struct Op {
  std::string domain, op_type;
  std::vector<std::pair<int, std::vector<ops::TypeConstraint>>> versions;
  std::vector<std::string> fast_kernels;  // the newest version's (families set them on every version alike)
  bool gradient = false, deterministic = true;
};

}  // namespace

int cmd_ops(const std::vector<std::string>& argv) {
  Args args(argv, {"--domain"}, {"--json"});
  if (print_help_if_asked(args, kOpsUsage)) return 0;
  expect_positional(args, 0, 0, kOpsUsage);
  std::optional<std::string> want = args.value("--domain");
  if (want) *want = domain_name(*want);

  std::map<std::pair<std::string, std::string>, Op> by_name;  // sorted by the domain as shown, then op type
  std::set<std::string> domains;
  size_t version_count = 0;
  for (const auto& [key, def] : ops::builtin_registry().all()) {
    std::string d = domain_name(def.domain);
    domains.insert(d);
    if (want && d != *want) continue;
    Op& op = by_name[{d, def.op_type}];
    op.domain = d;
    op.op_type = def.op_type;
    op.versions.emplace_back(def.since_version, normalized(def.types));
    op.fast_kernels = def.fast_kernels;
    op.gradient = op.gradient || def.gradient;
    op.deterministic = op.deterministic && def.deterministic;
    ++version_count;
  }
  if (want && by_name.empty()) {
    std::string known;
    for (const auto& d : domains) known += (known.empty() ? "" : ", ") + d;
    fail("no operators in domain '", printable(*want), "'; domains: ", known);
  }
  size_t fast_count = 0;
  for (const auto& [k, op] : by_name) fast_count += !op.fast_kernels.empty();
  for (auto& [k, op] : by_name) std::sort(op.versions.begin(), op.versions.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  if (args.flag("--json")) {
    std::cout << "{\"operators\":[";
    bool first_op = true;
    for (const auto& [k, op] : by_name) {
      std::cout << (first_op ? "\n" : ",\n") << "{\"domain\":" << json_quote(op.domain) << ",\"op_type\":" << json_quote(op.op_type)
                << ",\"since_versions\":[";
      first_op = false;
      for (size_t i = 0; i < op.versions.size(); ++i) std::cout << (i ? "," : "") << op.versions[i].first;
      std::cout << "],\"versions\":[";
      for (size_t i = 0; i < op.versions.size(); ++i) {
        std::cout << (i ? "," : "") << "{\"since_version\":" << op.versions[i].first << ",\"type_constraints\":[";
        const auto& cs = op.versions[i].second;
        for (size_t j = 0; j < cs.size(); ++j) {
          std::cout << (j ? "," : "") << "{\"inputs\":";
          if (all_inputs(cs[j])) {
            std::cout << "\"all\"";
          } else {
            std::cout << "[";
            for (size_t k2 = 0; k2 < cs[j].inputs.size(); ++k2) std::cout << (k2 ? "," : "") << cs[j].inputs[k2];
            std::cout << "]";
          }
          std::cout << ",\"types\":[";
          for (size_t t = 0; t < cs[j].allowed.size(); ++t) std::cout << (t ? "," : "") << json_quote(dtype_name(cs[j].allowed[t]));
          std::cout << "]}";
        }
        std::cout << "]}";
      }
      std::cout << "],\"fast_kernels\":[";
      for (size_t i = 0; i < op.fast_kernels.size(); ++i) std::cout << (i ? "," : "") << json_quote(op.fast_kernels[i]);
      std::cout << "],\"gradient\":" << (op.gradient ? "true" : "false")
                << ",\"deterministic\":" << (op.deterministic ? "true" : "false") << "}";
    }
    std::cout << "\n],\"operator_count\":" << by_name.size() << ",\"version_count\":" << version_count
              << ",\"fast_operator_count\":" << fast_count << "}\n";
    return 0;
  }

  for (const auto& [k, op] : by_name) {
    std::string versions;
    for (const auto& v : op.versions) versions += cat(versions.empty() ? "" : ", ", v.first);
    std::printf("%-24s %-28s %s\n", op.domain.c_str(), op.op_type.c_str(), versions.c_str());
    // Consecutive versions with the same constraints share one block.
    for (size_t i = 0; i < op.versions.size();) {
      size_t j = i + 1;
      while (j < op.versions.size() && same(op.versions[j].second, op.versions[i].second)) ++j;
      std::string which;
      for (size_t v = i; v < j; ++v) which += cat(v > i ? "," : "", op.versions[v].first);
      const auto& cs = op.versions[i].second;
      if (cs.empty()) std::printf("    %-10s (no element type constraint registered)\n", which.c_str());
      for (size_t c = 0; c < cs.size(); ++c) {
        std::string types;
        for (DataType t : cs[c].allowed) types += cat(types.empty() ? "" : " ", t);
        std::printf("    %-10s %s: %s\n", c == 0 ? which.c_str() : "", inputs_text(cs[c]).c_str(), types.c_str());
      }
      i = j;
    }
    for (const std::string& f : op.fast_kernels) std::printf("    fast: %s\n", f.c_str());
    if (op.gradient) std::printf("    gradient rule\n");
    if (!op.deterministic) std::printf("    random: never folded\n");
  }
  std::string where = want ? cat(" in domain ", *want) : cat(" in ", domains.size(), " domains");
  std::printf("%zu operators, %zu versions%s; %zu with fast kernels\n", by_name.size(), version_count, where.c_str(),
              fast_count);
  return 0;
}

}  // namespace onyx::cli
