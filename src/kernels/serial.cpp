#include "kernels/serial.hpp"

#include <omp.h>

namespace onyx::kernels {

SerialScope::SerialScope(bool serial) {
  if (!serial) return;
  previous_ = omp_get_max_threads();
  omp_set_num_threads(1);
}

SerialScope::~SerialScope() {
  if (previous_ > 0) omp_set_num_threads(previous_);
}

}  // namespace onyx::kernels
