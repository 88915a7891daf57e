// Errors: every failure in onyx is an onyx::Error whose message names what is wrong and where.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace onyx {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
