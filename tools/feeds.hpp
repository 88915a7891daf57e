// Inputs of a run from the command line (`onyx run`, `onyx bench`): files given with --input, the rest generated.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "cli.hpp"
#include "exec/datum.hpp"
#include "onyx/session.hpp"

namespace onyx::cli {

struct FeedOptions {
  std::map<std::string, std::string> files;  // --input NAME=FILE
  std::map<std::string, int64_t> dims;       // --dim SYMBOL=SIZE; other symbolic or unknown dims are 1
  bool dummy = false;                        // arange(n)/n rather than random values
  uint64_t seed = 0;                         // --seed N, for random values
};

// Reads --input, --dim, --dummy and --seed from `args` (the command declares them).
FeedOptions parse_feed_options(const Args& args);

// One value per model input, in the order of `session.inputs()`: loaded from its file or generated. Fails when a
// file names something that is not an input.
std::map<std::string, Datum> make_feeds(const Session& session, const FeedOptions& opts);

// An integer option's value, checked to lie in [lo, hi]; `option` names it in the error.
int64_t parse_int_option(const std::string& text, const std::string& option, int64_t lo, int64_t hi);

}  // namespace onyx::cli
