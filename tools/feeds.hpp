// Inputs for the commands that run a model (run, profile, bench): values read from files given with --input, or
// generated (random with --seed, or arange with --dummy), with --dim fixing symbolic sizes.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "ir/datum.hpp"
#include "onyx/session.hpp"

namespace onyx::cli {

// The options make_feeds reads; a command adds them to its own lists for Args.
inline const std::vector<std::string> kFeedValuedOptions = {"--input", "--seed", "--dim", "--timeout-ms",
                                                             "--memory-limit-mb"};
inline const std::vector<std::string> kFeedFlags = {"--dummy", "--accept-newer-versions"};

// Help lines for those options (a literal, so usage texts can be concatenated at compile time).
#define ONYX_CLI_FEED_HELP                                                                                            \
  "  --input NAME=FILE   an input from a .pb (TensorProto, SequenceProto, MapProto, OptionalProto) or .npy file\n"   \
  "  inputs not given are generated: random (uniform [0,1) for floats, [0,10) for integers; --seed N, default 0),\n" \
  "  or with --dummy arange(n)/n (as the ONNX light models expect); symbolic or unknown dims are 1 unless\n"        \
  "  --dim SYMBOL=SIZE\n"                                                                                      \
  "  --accept-newer-versions  load a model of a newer IR version or opset than onyx implements (refused\n"          \
  "                      otherwise); its ops run as the newest versions onyx has\n"                                \
  "  --timeout-ms MS      stop each run that passes MS milliseconds, with an error (default: no deadline)\n"       \
  "  --memory-limit-mb MB fail a run whose tensors would hold more than MB MiB at once (default: no limit)\n"

// One value per input of the session (inputs backed by an initializer included), keyed by name. Errors name the
// option or the input that is wrong.
std::map<std::string, Datum> make_feeds(const Session& session, const Args& args);
// The same with generated values arange(n)/n when `dummy` (for commands where that is the default).
std::map<std::string, Datum> make_feeds(const Session& session, const Args& args, bool dummy);

// The session options those commands share (--accept-newer-versions, --memory-limit-mb).
SessionOptions session_options(const Args& args);
// The run options they share (--timeout-ms).
RunOptions run_options(const Args& args);

// A non-negative integer option value; an error naming the option otherwise.
int64_t parse_count(const std::string& option, const std::string& text);
// An integer option's value, checked to lie in [lo, hi]; `option` names it in the error.
int64_t parse_int_option(const std::string& text, const std::string& option, int64_t lo, int64_t hi);

}  // namespace onyx::cli
