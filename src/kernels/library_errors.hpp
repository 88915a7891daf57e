// The exceptions of the libraries beneath the kernels, as onyx errors: oneDNN throws dnnl::error when it cannot
// create a primitive for a node's shapes and attributes (a dilated convolution larger than its input, say), and
// allocation can throw std::bad_alloc. Declared without oneDNN's headers, for the executor.
#pragma once
#include <string>

namespace onyx::kernels {

// Inside a catch handler: rethrows the exception being handled as onyx::Error, its message after `context`, when
// it is oneDNN's or std::bad_alloc (ErrorKind::MemoryLimit); any other exception is rethrown unchanged.
[[noreturn]] void rethrow_library_error(const std::string& context);

}  // namespace onyx::kernels
