// libFuzzer target for the model reader and everything that consumes a decoded model.
//
// For each input:
//  - decode it as a ModelProto (pb::load_model_bytes);
//  - print it in the textual syntax (pb::to_text), as `onyx print` does with unchecked models;
//  - run the checker, and when it reports no problem build the IR (build_model);
//  - check that encoding is stable: serialize(parse(serialize(parse(x)))) == serialize(parse(x));
//  - decode the same bytes as the onnx-data.proto values (TensorProto, SequenceProto, MapProto,
//    OptionalProto) and check their encodings are stable the same way.
//
// onyx::Error is the expected outcome for malformed input and is swallowed. Any other exception
// (std::bad_alloc, std::length_error, std::out_of_range, ...) is a bug and is left to escape so
// that libFuzzer reports it; a broken round trip calls __builtin_trap().
//
// With the environment variable ONYX_FUZZ_STRICT=1, a model that the checker accepts but
// build_model rejects is also reported (by trapping).
//
// External data locations resolve against "." (load_model_bytes sets doc.dir to "."), so run this
// from an empty directory (scripts/fuzz.sh does) to keep the checker from reading real files.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "format/onnx_proto.hpp"
#include "format/text_printer.hpp"
#include "ir/model.hpp"
#include "format/model_read.hpp"

namespace {

using namespace onyx;

bool strict() {
  static const bool on = [] {
    const char* v = std::getenv("ONYX_FUZZ_STRICT");
    return v && *v && std::string_view(v) != "0";
  }();
  return on;
}

[[noreturn]] void round_trip_broken(const char* message, std::string_view first, std::string_view second) {
  std::fprintf(stderr, "fuzz_model: %s round trip is unstable: %zu bytes, then %zu bytes\n", message, first.size(),
               second.size());
  size_t n = first.size() < second.size() ? first.size() : second.size();
  size_t i = 0;
  while (i < n && first[i] == second[i]) ++i;
  std::fprintf(stderr, "fuzz_model: first difference at byte %zu\n", i);
  __builtin_trap();
}

// serialize(parse(serialize(m))) must equal serialize(m). `once` is serialize(m); the views of the
// re-parsed message point into `once`, which outlives them here.
template <class M, class Parse, class Serialize>
void check_stable(const char* message, const M& m, Parse parse, Serialize serialize) {
  std::string once = serialize(m);
  M again;
  try {
    again = parse(once);
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz_model: re-encoded %s does not decode: %s\n", message, e.what());
    __builtin_trap();
  }
  std::string twice = serialize(again);
  if (once != twice) round_trip_broken(message, once, twice);
}

void fuzz_model(std::string_view data) {
  pb::ModelDocument doc;
  try {
    doc = pb::load_model_bytes(std::string(data), "<fuzz>");
  } catch (const Error&) {
    return;
  }

  try {
    std::string text = pb::to_text(doc.model);
    (void)text;
  } catch (const Error&) {
  }

  try {
    // The checker reports problems in its result; an onyx::Error from it (an external data file
    // that cannot be opened, say) is still an expected outcome, not a bug.
    std::vector<std::string> problems = check::check_model(doc);
    if (problems.empty()) {
      // The builder re-checks what it relies on and may throw onyx::Error even for a checked model;
      // with ONYX_FUZZ_STRICT set, that disagreement between checker and builder is reported too.
      try {
        Model ir = build_model(doc);
        (void)ir;
      } catch (const Error& e) {
        if (strict()) {
          std::fprintf(stderr, "fuzz_model: the checker accepts the model, but build_model fails: %s\n", e.what());
          __builtin_trap();
        }
      }
    }
  } catch (const Error&) {
  }

  check_stable(
      "ModelProto", doc.model, [](std::string_view b) { return pb::parse_model(b, "<fuzz re-encoded>"); },
      [](const pb::Model& m) { return pb::serialize_model(m); });
}

template <class M, class Parse, class Serialize>
void fuzz_value(const char* message, std::string_view data, Parse parse, Serialize serialize) {
  M m;
  try {
    m = parse(data);
  } catch (const Error&) {
    return;
  }
  check_stable(message, m, parse, serialize);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);

  fuzz_model(bytes);

  fuzz_value<pb::Tensor>(
      "TensorProto", bytes, [](std::string_view b) { return pb::parse_tensor(b, "<fuzz>"); },
      [](const pb::Tensor& m) { return pb::serialize_tensor(m); });
  fuzz_value<pb::SequenceValue>(
      "SequenceProto", bytes, [](std::string_view b) { return pb::parse_sequence(b, "<fuzz>"); },
      [](const pb::SequenceValue& m) { return pb::serialize_sequence(m); });
  fuzz_value<pb::MapValue>(
      "MapProto", bytes, [](std::string_view b) { return pb::parse_map(b, "<fuzz>"); },
      [](const pb::MapValue& m) { return pb::serialize_map(m); });
  fuzz_value<pb::OptionalValue>(
      "OptionalProto", bytes, [](std::string_view b) { return pb::parse_optional(b, "<fuzz>"); },
      [](const pb::OptionalValue& m) { return pb::serialize_optional(m); });
  return 0;
}
