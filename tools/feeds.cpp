// Inputs for the commands that run a model: read from files or generated.
#include "feeds.hpp"

#include <charconv>
#include <random>

#include "base/error.hpp"
#include "exec/datum_io.hpp"
#include "ir/scalar.hpp"

namespace onyx::cli {

namespace {

Tensor generate(const IoInfo& in, bool dummy, std::mt19937_64& rng, const std::map<std::string, int64_t>& dims) {
  // A sparse_tensor input is fed dense (the session computes it dense).
  if (in.type.kind != Type::Kind::Tensor && in.type.kind != Type::Kind::SparseTensor)
    fail("input '", in.name, "' is ", in.type.to_string(), ": give it with --input NAME=FILE");
  std::vector<int64_t> shape;
  for (const Dim& d : in.type.shape.dims) {
    auto it = dims.find(d.param);
    shape.push_back(d.value ? *d.value : it != dims.end() ? it->second : 1);
  }
  Tensor t = Tensor::allocate(in.type.elem, shape);
  const uint64_t n = t.element_count();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  visit_dtype(in.type.elem, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::string>) {
      for (uint64_t i = 0; i < n; ++i) t.mutable_strings()[i] = "s" + std::to_string(dummy ? i : rng() % 10);
    } else if constexpr (std::is_same_v<T, bool>) {
      for (uint64_t i = 0; i < n; ++i) t.mutable_data<bool>()[i] = dummy ? (i % 2) : (rng() & 1);
    } else if constexpr (std::is_integral_v<T>) {
      for (uint64_t i = 0; i < n; ++i) t.mutable_data<T>()[i] = static_cast<T>(dummy ? i % 10 : rng() % 10);
    } else if constexpr (std::is_floating_point_v<T> || is_small_float_v<T>) {
      for (uint64_t i = 0; i < n; ++i) {
        double v = dummy ? static_cast<double>(i) / static_cast<double>(n) : unit(rng);
        t.mutable_data<T>()[i] = T(static_cast<float>(v));
      }
      if constexpr (std::is_same_v<T, double>)
        for (uint64_t i = 0; i < n; ++i) t.mutable_data<double>()[i] = dummy ? static_cast<double>(i) / static_cast<double>(n) : unit(rng);
    } else {
      fail("input '", in.name, "': cannot generate ", in.type.elem, " values; give it with --input");
    }
  });
  return t;
}

}  // namespace

int64_t parse_count(const std::string& option, const std::string& text) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0)
    fail(option, ": '", text, "' is not a non-negative integer");
  return v;
}

int64_t parse_int_option(const std::string& text, const std::string& option, int64_t lo, int64_t hi) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi)
    fail(option, " expects an integer from ", lo, " to ", hi, ", got '", text, "'");
  return v;
}

std::map<std::string, Datum> make_feeds(const Session& s, const Args& args) {
  return make_feeds(s, args, args.flag("--dummy"));
}

std::map<std::string, Datum> make_feeds(const Session& s, const Args& args, bool dummy) {
  std::map<std::string, std::string> files;
  for (const auto& spec : args.values("--input")) {
    auto eq = spec.find('=');
    if (eq == std::string::npos) fail("--input expects NAME=FILE, got '", spec, "'");
    files[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  std::map<std::string, int64_t> dims;
  for (const auto& spec : args.values("--dim")) {
    auto eq = spec.find('=');
    if (eq == std::string::npos) fail("--dim expects SYMBOL=SIZE, got '", spec, "'");
    // Bounded so that a typo cannot ask for an absurd allocation.
    dims[spec.substr(0, eq)] = parse_int_option(spec.substr(eq + 1), "--dim " + spec.substr(0, eq), 0, int64_t{1} << 31);
  }
  std::mt19937_64 rng(static_cast<uint64_t>(parse_count("--seed", args.value("--seed").value_or("0"))));
  std::map<std::string, Datum> feeds;
  for (const auto& in : s.inputs()) {
    auto it = files.find(in.name);
    if (it != files.end()) {
      try {
        feeds[in.name] = load_datum(it->second, in.type);
      } catch (const Error& e) {
        throw Error(cat("input '", in.name, "': ", e.what()), e.kind());
      }
      files.erase(it);
    } else {
      feeds[in.name] = Datum::of(generate(in, dummy, rng, dims));
    }
  }
  if (!files.empty()) fail("'", files.begin()->first, "' is not an input of the model");
  return feeds;
}

SessionOptions session_options(const Args& args) {
  SessionOptions options;
  options.accept_newer_versions = args.flag("--accept-newer-versions");
  if (auto mb = args.value("--memory-limit-mb"))
    options.memory_limit_mb = static_cast<uint64_t>(parse_int_option(*mb, "--memory-limit-mb", 1, int64_t{1} << 40));
  return options;
}

RunOptions run_options(const Args& args) {
  RunOptions options;
  if (auto ms = args.value("--timeout-ms"))
    options.timeout_ms = parse_int_option(*ms, "--timeout-ms", 1, int64_t{1} << 40);
  return options;
}

}  // namespace onyx::cli
