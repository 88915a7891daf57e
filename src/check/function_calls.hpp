// Model-local functions that call themselves, directly or through other functions (a call inside a subgraph of
// a body counts). Expanding such a call never ends, so a model with one is invalid; the check walks bodies and
// nested subgraphs with explicit stacks, so no depth of nesting can exhaust the C++ stack.
#pragma once
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"

namespace onyx::check {

// One message per cycle found, naming the functions in calling order, e.g.
// "function 'A' (domain 'local') calls itself: A -> B -> A".
std::vector<std::string> function_call_cycles(const pb::Model& model);

}  // namespace onyx::check
