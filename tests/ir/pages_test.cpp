// Large buffers: page-aligned, rounded up in place, huge-page aligned from 4 MiB, and usable to their full size.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/pages.hpp"
#include "ir/tensor.hpp"

namespace ONYX_TEST_FILE {

TEST(Pages, AlignedAndRoundedInPlace) {
  struct Case {
    size_t asked, rounded, align;
  };
  const Case cases[] = {{1, 4096, 4096},
                        {4096, 4096, 4096},
                        {100000, 102400, 4096},
                        {(size_t{4} << 20) - 1, size_t{4} << 20, 4096},
                        {(size_t{4} << 20) + 1, size_t{6} << 20, size_t{2} << 20}};
  for (const Case& c : cases) {
    size_t bytes = c.asked;
    void* p = onyx::allocate_pages(bytes);
    ASSERT_NE(p, nullptr) << c.asked;
    EXPECT_EQ(bytes, c.rounded) << c.asked;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % c.align, 0u) << c.asked;
    std::memset(p, 0xab, bytes);  // every byte it reports is writable
    EXPECT_EQ(static_cast<unsigned char*>(p)[bytes - 1], 0xab);
    std::free(p);
  }
}

// Tensors of every size come back zeroed, including those reusing a released large buffer.
TEST(Pages, LargeTensorsStartZeroed) {
  for (int round = 0; round < 2; ++round) {
    onyx::Tensor t = onyx::Tensor::allocate(onyx::DataType::Float, {3, 1 << 20});
    const float* d = t.data<float>();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % (size_t{2} << 20), 0u);
    for (int64_t i = 0; i < 3 << 20; i += 4099) ASSERT_EQ(d[i], 0.0f) << i;
    std::memset(t.mutable_data<float>(), 0x7f, t.bytes().size());
  }
}

}  // namespace ONYX_TEST_FILE
