// onyx's C++ API: load a model into a session, inspect its inputs and outputs, run it.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/datum.hpp"
#include "ir/model.hpp"

namespace onyx {

struct SessionOptions {
  int threads = 0;             // intra-op threads; 0 = physical cores
  int optimization_level = 3;  // 0 off, 1 basic, 2 extended (fusions), 3 all (channels-last layout too)
  int log_level = 2;           // 0 verbose .. 4 fatal
  bool reference_kernels = false;  // run every op with its reference kernel (tests compare fast kernels with them)
  // Static memory plan per input-shape signature: the first run of a signature records its tensor buffers' sizes
  // and lifetimes, later runs take the intermediates from one arena (see src/exec/memory_plan.hpp).
  bool memory_plan = true;
  // Load a model of a newer IR version, or importing a newer opset of a standard domain, than onyx implements
  // (refused by default, naming what onyx supports); its ops then run as the newest versions onyx has.
  bool accept_newer_versions = false;
  // The most memory, in MiB, that the tensors this session allocates may hold at once (0: no limit): those of
  // its runs, from the first allocation until the caller drops the last output, and the constants it folds at
  // creation. An allocation past it fails with an error naming the node; the run's tensors are freed and the
  // session keeps working. Kernels' scratch memory and oneDNN's are not counted.
  uint64_t memory_limit_mb = 0;
  // Shared libraries of custom ops (include/onyx/custom_op.h; onnxruntime's register_custom_ops_library): each is
  // loaded at session creation and its ops bind for this session only. Errors name the path and what failed.
  std::vector<std::string> custom_op_libraries;

  // Free (symbolic) dims of graph inputs fixed before inference and planning: a dim whose dim_param is a key of
  // the first map, or whose denotation is a key of the second, becomes that size (onnxruntime's
  // add_free_dimension_override_by_name / _by_denotation). A key that matches nothing is ignored; a value < 0 is an error.
  std::map<std::string, int64_t> free_dimension_overrides_by_name;
  std::map<std::string, int64_t> free_dimension_overrides_by_denotation;
  // Initializers replaced by these tensors (onnxruntime's add_initializer / add_external_initializers): the name
  // must be an initializer of the main graph, with the same element type (error otherwise, naming it); its own
  // data (inline or external) is then never read, so an external file that does not exist is fine.
  std::map<std::string, Tensor> initializer_overrides;
  // External data files served from memory (onnxruntime's add_external_initializers_from_files_in_memory): a
  // tensor whose external-data location equals a key reads its bytes from that buffer (offset/length checked
  // as for files) instead of the disk.
  std::map<std::string, std::shared_ptr<const std::string>> external_data_files;
};

// A memory plan of a session for one input-shape signature.
struct MemoryPlanInfo {
  uint64_t arena_bytes = 0;   // planned bytes: the arena one run takes
  uint64_t buffer_bytes = 0;  // the planned buffers' sizes added up (what they would take without sharing)
  size_t buffers = 0;         // allocations the plan places
  uint64_t runs = 0;          // runs that used the plan so far
  uint64_t served = 0;        // allocations those runs took from their arena
  uint64_t fallbacks = 0;     // planned allocations that went to the heap (memory they share still in use)
};

// One node's run, for profiles. Times are steady-clock nanoseconds since the run began.
struct NodeTiming {
  std::string graph;    // the graph's label: the main graph, or a subgraph's path
  std::string node;     // the node's label: its name quoted, or #index, with the op type
  std::string op_type;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  // The dims of the tensors the node read and wrote in this run (empty for absent or non-tensor values).
  std::vector<std::vector<int64_t>> input_dims, output_dims;
};

struct RunOptions {
  // Checked before each node (subgraph nodes included); once it reads true the run stops with an error.
  const std::atomic<bool>* terminate = nullptr;
  // The run's deadline, in milliseconds from its start (0: none). It is checked where terminate is, and inside
  // long-running kernels at their block boundaries; a run past it stops with an error.
  int64_t timeout_ms = 0;
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
  // With a memory limit, the bytes its tensors hold now (runs' outputs the caller keeps included); 0 without one.
  uint64_t memory_in_use() const;

  // Runs the model. `feeds` names every graph input (inputs with an initializer may be omitted); `output_names`
  // selects outputs (empty: all, in graph order). Feeds are checked before anything runs.
  std::vector<std::pair<std::string, Datum>> run(const std::map<std::string, Datum>& feeds,
                                                 const std::vector<std::string>& output_names = {},
                                                 const RunOptions& options = {}) const;

  // The memory plan runs with these feeds' shapes use (what run() takes as `feeds`); none before the first run of
  // that signature, with memory_plan off, or for feeds that are not all tensors.
  std::optional<MemoryPlanInfo> memory_plan(const std::map<std::string, Datum>& feeds) const;

  struct Impl;  // defined in src/exec/session.cpp

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
