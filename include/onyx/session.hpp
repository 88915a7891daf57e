// onyx's C++ API: load a model into a session, inspect its inputs and outputs, run it.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/datum.hpp"
#include "ir/model.hpp"

namespace onyx {

struct SessionOptions {
  int threads = 0;             // intra-op threads; 0 = physical cores
  int optimization_level = 3;  // 0 off, 1 basic, 2 extended (fusions), 3 all (channels-last layout too)
  int log_level = 2;           // 0 verbose .. 4 fatal
  bool reference_kernels = false;  // run every op with its reference kernel (tests compare fast kernels with them)
};

// One node's run, for profiles. Times are steady-clock nanoseconds since the run began.
struct NodeTiming {
  std::string graph;    // the graph's label: the main graph, or a subgraph's path
  std::string node;     // the node's label: its name quoted, or #index, with the op type
  std::string op_type;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
};

struct RunOptions {
  // Checked before each node (subgraph nodes included); once it reads true the run stops with an error.
  const std::atomic<bool>* terminate = nullptr;
  // When set, receives one entry per node run, in order of completion.
  std::vector<NodeTiming>* profile = nullptr;
};

struct IoInfo {
  std::string name;
  Type type;  // with symbolic dims as the model declares them
};

class Session {
 public:
  static Session from_file(const std::filesystem::path& path, const SessionOptions& opts = {});
  static Session from_bytes(std::string bytes, const SessionOptions& opts = {});
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  // The model as the session runs it (optimized). Initializers that every reader packed into its own layout at
  // creation have had their memory released: their tensors keep shape and type, and their data reads as zeros.
  const Model& model() const;
  const SessionOptions& options() const;

  // Runs the model. `feeds` names every graph input (inputs with an initializer may be omitted); `output_names`
  // selects outputs (empty: all, in graph order). Feeds are checked before anything runs.
  std::vector<std::pair<std::string, Datum>> run(const std::map<std::string, Datum>& feeds,
                                                 const std::vector<std::string>& output_names = {},
                                                 const RunOptions& options = {}) const;

  struct Impl;  // defined in src/exec/session.cpp

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
