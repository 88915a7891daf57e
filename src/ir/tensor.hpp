// A tensor value: element type, dims and data. The data is either a view (into the memory-mapped model or an
// external data file, kept alive by `keep`) or owned; string tensors own their strings.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.hpp"

namespace onyx {

class Tensor {
 public:
  Tensor() = default;
  // A view of `bytes` (little-endian raw layout); `keep` owns or maps them. `mapped`: the bytes are a mapped
  // file's (is_view()), not a buffer decoded for this tensor.
  static Tensor view(std::string name, DataType dtype, std::vector<int64_t> dims, std::string_view bytes,
                     std::shared_ptr<const void> keep, bool mapped = true);
  static Tensor owned(std::string name, DataType dtype, std::vector<int64_t> dims, std::string bytes);
  static Tensor strings(std::string name, std::vector<int64_t> dims, std::vector<std::string> values);
  // A new zero-filled, 64-byte aligned, writable tensor (empty strings for string tensors). Errors on negative
  // dims and on sizes that overflow.
  static Tensor allocate(DataType dtype, std::vector<int64_t> dims);

  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  uint64_t element_count() const;
  // Raw bytes (empty for string tensors).
  std::string_view bytes() const { return bytes_; }
  const std::vector<std::string>& string_values() const { return strings_; }
  // True when the bytes are a view into a mapped file rather than an owned copy.
  bool is_view() const { return is_view_; }
  bool is_writable() const { return writable_; }
  // True when no other Tensor, model or mapping shares this tensor's buffer (so it can be handed over as is).
  bool owns_buffer_alone() const { return keep_ && keep_.use_count() == 1; }

  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }
  // Writable data: only for tensors made by allocate() (views of mapped files are read-only).
  template <class T>
  T* mutable_data() {
    check_writable();
    return reinterpret_cast<T*>(const_cast<char*>(bytes_.data()));
  }
  std::vector<std::string>& mutable_strings() { return strings_; }
  // The same data under other dims (element count must match); shares the buffer.
  Tensor reshaped(std::vector<int64_t> dims) const;
  void set_name(std::string n) { name_ = std::move(n); }
  // A deep copy into a new writable buffer.
  Tensor clone() const;

 private:
  std::string name_;
  DataType dtype_ = DataType::Undefined;
  std::vector<int64_t> dims_;
  std::string_view bytes_;
  std::shared_ptr<const void> keep_;
  std::vector<std::string> strings_;
  bool is_view_ = false;
  bool writable_ = false;
  void check_writable() const;
};

// For a bool tensor, the first element whose byte is neither 0 nor 1 (C++ gives reading any other byte as a bool
// no meaning), with that byte; nullopt when every element is valid or the tensor is not bool.
struct InvalidBool {
  uint64_t index;
  int byte;
};
std::optional<InvalidBool> invalid_bool(const Tensor& t);

// raw_data inside a protobuf file sits at any byte offset, while kernels read elements through typed pointers:
// whether t's data may be read so (aligned to its element size, up to 8 bytes; strings and bytes always are).
bool is_aligned_for_kernels(const Tensor& t);

struct SparseTensor {
  Tensor values, indices;
  std::vector<int64_t> dims;
};

// The dense tensor a sparse one stands for: zeros (empty strings) but at its indices, which must be int64, of
// shape [NNZ] (linear) or [NNZ, rank] (coordinates), in range and distinct, with values of shape [NNZ]. A dense
// form above kMaxDenseBytes is refused rather than allocated. `what` starts every error message.
inline constexpr uint64_t kMaxDenseBytes = uint64_t{1} << 34;
Tensor densify(const SparseTensor& s, const std::string& what);

}  // namespace onyx
