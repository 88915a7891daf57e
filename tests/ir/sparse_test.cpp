// Sparse tensors made dense (densify): indices and values may be views into a model's bytes at any offset.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "ir/tensor.hpp"

namespace ONYX_TEST_FILE {

using onyx::DataType;
using onyx::Tensor;

// A view of `bytes` placed one byte past an 8-byte boundary, as raw_data often is inside a model file (found by
// fuzz_session: the int64 indices were read in place, a misaligned load).
Tensor unaligned_view(DataType dt, std::vector<int64_t> dims, const std::string& bytes) {
  auto buffer = std::make_shared<std::string>(bytes.size() + 9, '\0');
  char* at = buffer->data() + (8 - reinterpret_cast<uintptr_t>(buffer->data()) % 8) + 1;
  std::memcpy(at, bytes.data(), bytes.size());
  return Tensor::view("t", dt, std::move(dims), std::string_view(at, bytes.size()), buffer);
}

template <class T>
std::string raw(std::initializer_list<T> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * sizeof(T));
}

TEST(Sparse, DensifiesIndicesAndValuesAtAnyAlignment) {
  onyx::SparseTensor s;
  s.values = unaligned_view(DataType::Float, {2}, raw<float>({1.5f, -2.0f}));
  s.dims = {2, 3};
  for (bool coordinates : {false, true}) {
    s.indices = coordinates ? unaligned_view(DataType::Int64, {2, 2}, raw<int64_t>({0, 2, 1, 1}))
                            : unaligned_view(DataType::Int64, {2}, raw<int64_t>({2, 4}));
    Tensor d = onyx::densify(s, "sparse 'S'");
    ASSERT_EQ(d.dims(), (std::vector<int64_t>{2, 3}));
    const float* p = d.data<float>();
    EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{0, 0, 1.5f, 0, -2.0f, 0})) << coordinates;
  }
}

}  // namespace ONYX_TEST_FILE
