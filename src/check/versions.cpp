#include "check/versions.hpp"

#include <string>

#include "base/error.hpp"
#include "ir/spec_table.hpp"

namespace onyx::check {

namespace {

void refuse_newer_opsets(const std::vector<pb::OperatorSetId>& imports, const std::string& who) {
  for (const pb::OperatorSetId& imp : imports) {
    if (!imp.version) continue;  // the checker reports it
    const std::string_view domain = spec::canonical_domain(imp.domain.value_or(""));
    const std::optional<int> newest = spec::newest_opset(domain);
    if (newest && *imp.version > *newest)
      fail(who, " imports opset ", *imp.version, " of domain '", domain, "'; onyx supports that domain up to opset ",
           *newest, " (SessionOptions::accept_newer_versions loads it anyway, running each op as its newest version)");
  }
}

}  // namespace

void refuse_newer_versions(const pb::ModelDocument& doc) {
  const pb::Model& m = doc.model;
  if (m.ir_version && *m.ir_version > kNewestIrVersion)
    fail("the model's ir_version is ", *m.ir_version, "; onyx supports IR versions up to ", kNewestIrVersion,
         " (SessionOptions::accept_newer_versions loads it anyway)");
  refuse_newer_opsets(m.opset_import, "the model");
  for (const pb::Function& f : m.functions)
    refuse_newer_opsets(f.opset_import, "function '" + std::string(f.name.value_or("")) + "' of the model");
}

}  // namespace onyx::check
