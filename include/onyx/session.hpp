// onyx's C++ API: load a model into a session, inspect its inputs and outputs, run it.
#pragma once
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
  int optimization_level = 1;  // 0 off, 1 basic, 2 all
  int log_level = 2;           // 0 verbose .. 4 fatal
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
  const Model& model() const;

  // Runs the model. `feeds` names every graph input (inputs with an initializer may be omitted); `output_names`
  // selects outputs (empty: all, in graph order). Feeds are checked before anything runs.
  std::vector<std::pair<std::string, Datum>> run(const std::map<std::string, Datum>& feeds,
                                                 const std::vector<std::string>& output_names = {}) const;

  struct Impl;  // defined in src/exec/session.cpp

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
