// onyx run MODEL: runs a model on inputs from files, or on generated ones, and summarizes (or saves) the outputs.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "base/error.hpp"
#include "cli.hpp"
#include "exec/datum_io.hpp"
#include "feeds.hpp"
#include "ir/scalar.hpp"
#include "onyx/session.hpp"
#include "progress.hpp"

namespace onyx::cli {

const char* const kRunUsage =
    "usage: onyx run MODEL [--input NAME=FILE ...] [--dummy | --seed N] [--dim SYMBOL=SIZE ...] [--output-dir DIR]\n"
    "                [--timeout-ms MS] [--memory-limit-mb MB]\n"
    "\n"
    "Runs MODEL once and prints a summary of each output (type, shape, first values, min/max/mean).\n"
    ONYX_CLI_FEED_HELP
    "  --output-dir DIR    write each output as DIR/output_K.pb in the matching message\n";

namespace {

void summarize(const std::string& name, const Datum& d, const std::string& indent = "") {
  std::cout << indent << name << ": " << d.describe();
  if (d.is_tensor() && d.tensor.dtype() != DataType::String && dtype_bits(d.tensor.dtype()) >= 8 &&
      d.tensor.dtype() != DataType::Complex64 && d.tensor.dtype() != DataType::Complex128) {
    const Tensor& t = d.tensor;
    uint64_t n = t.element_count();
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    std::string first;
    for (uint64_t i = 0; i < n; ++i) {
      double v = double_of(t.dtype(), t.bytes().data(), i);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      if (i < 6) first += cat(i ? ", " : "", v);
    }
    std::cout << "  [" << first << (n > 6 ? ", ..." : "") << "]";
    if (n) std::cout << "  min " << lo << " max " << hi << " mean " << sum / static_cast<double>(n);
  } else if (d.is_tensor() && d.tensor.dtype() == DataType::String) {
    std::cout << "  [";
    for (uint64_t i = 0; i < d.tensor.element_count() && i < 4; ++i) std::cout << (i ? ", " : "") << '"' << d.tensor.string_values()[i] << '"';
    std::cout << (d.tensor.element_count() > 4 ? ", ...]" : "]");
  }
  std::cout << "\n";
  if (d.kind == Datum::Kind::Sequence || d.kind == Datum::Kind::Optional)
    for (size_t i = 0; i < d.elements.size() && i < 4; ++i) summarize(cat("[", i, "]"), d.elements[i], indent + "  ");
}

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  std::vector<std::string> valued = kFeedValuedOptions;
  valued.push_back("--output-dir");
  Args args(argv, valued, kFeedFlags);
  if (print_help_if_asked(args, kRunUsage)) return 0;
  expect_positional(args, 1, 1, kRunUsage);
  Progress progress("onyx run");
  progress.set_item("loading " + args.positional()[0]);
  Session s = Session::from_file(args.positional()[0], session_options(args));
  std::map<std::string, Datum> feeds = make_feeds(s, args);
  progress.above([&] {
    for (const auto& in : s.inputs()) summarize("input " + in.name, feeds[in.name]);
  });
  progress.set_item("running");
  auto t0 = std::chrono::steady_clock::now();
  auto outputs = s.run(feeds, {}, run_options(args));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  progress.stop();
  for (const auto& [name, d] : outputs) summarize("output " + name, d);
  std::printf("ran in %.2f ms\n", ms);
  if (auto dir = args.value("--output-dir")) {
    std::filesystem::create_directories(*dir);
    for (size_t k = 0; k < outputs.size(); ++k)
      save_datum(outputs[k].second, outputs[k].first, std::filesystem::path(*dir) / cat("output_", k, ".pb"));
    std::cout << "wrote " << outputs.size() << " outputs to " << *dir << "\n";
  }
  return 0;
}

}  // namespace onyx::cli
