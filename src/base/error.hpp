// Errors: every failure in onyx is an onyx::Error whose message names what is wrong and where.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace onyx {

// Why a run stopped when it is not the model's or the input's fault: the faces report these apart (the C API's
// status codes), and code that adds context to an error's message keeps its kind.
enum class ErrorKind { Failure, Terminated, Deadline, MemoryLimit };

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorKind kind = ErrorKind::Failure) : std::runtime_error(what), kind_(kind) {}
  explicit Error(const char* what, ErrorKind kind = ErrorKind::Failure) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Concatenates any streamable values into one string.
template <class... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <class... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(cat(std::forward<Args>(args)...));
}

}  // namespace onyx
