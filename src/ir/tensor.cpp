#include "ir/tensor.hpp"
#include "ir/tensor_alloc.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <sys/mman.h>

#include "base/element_count.hpp"
#include "base/error.hpp"
#include "base/pages.hpp"

namespace onyx {

namespace {

// Large tensor buffers are kept for reuse when released: runs of a model allocate the same sizes every time, and
// memory handed back to the system costs a page fault per 4 KiB page when touched again. Sizes are rounded to
// whole pages; at most kMaxCachedBytes are kept (beyond that, buffers are freed). The pool is held by its users
// (BufferPoolUse: sessions): with none, released buffers are freed, and the last user's end empties it.
class BufferPool {
 public:
  static constexpr size_t kMinBytes = size_t{64} << 10, kMaxCachedBytes = size_t{256} << 20;

  static BufferPool& instance() {
    static BufferPool* pool = new BufferPool;  // never destroyed: tensors may be released during exit
    return *pool;
  }

  static size_t rounded(size_t bytes) { return bytes < kMinBytes ? (bytes + 63) / 64 * 64 : bytes; }

  // A buffer of at least `bytes`; `bytes` becomes its actual size. A kept buffer serves requests down to half its
  // size, so runs whose sizes differ a little still reuse memory instead of keeping one buffer per size.
  // (Sizes from kMinBytes up; smaller ones are SmallBuffers'.)
  void* take(size_t& bytes) {
    {
      std::lock_guard lock(mutex_);
      auto it = free_.lower_bound(bytes);
      if (it != free_.end() && it->first / 2 <= bytes) {
        void* p = it->second;
        bytes = it->first;
        free_.erase(it);
        cached_ -= bytes;
        return p;
      }
    }
    return allocate_pages(bytes);
  }

  void give(void* p, size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      if (users_ > 0 && cached_ + bytes <= kMaxCachedBytes) {
        free_.emplace(bytes, p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }

  void add_user() {
    std::lock_guard lock(mutex_);
    ++users_;
  }
  void remove_user() {
    std::multimap<size_t, void*> gone;
    {
      std::lock_guard lock(mutex_);
      if (--users_ > 0) return;
      gone.swap(free_);
      cached_ = 0;
    }
    for (auto& [bytes, p] : gone) std::free(p);
  }
  size_t cached() {
    std::lock_guard lock(mutex_);
    return cached_;
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
  size_t users_ = 0;
};

// Buffers under BufferPool::kMinBytes, kept per thread by 64-byte size class: each run of a model asks for the same
// small sizes again (a voice model's frames, shape tensors), and malloc's 64-byte-aligned allocation and free cost
// more than the small kernels that use them. At most kKeepPerClass buffers of a class and kMaxBytes in all per
// thread; the rest go back to malloc. A buffer freed on another thread joins that thread's cache, and one freed
// after its thread's cache is gone (tensors released while the thread exits) goes to free.
thread_local bool small_buffers_gone = false;

class SmallBuffers {
 public:
  static constexpr size_t kClasses = BufferPool::kMinBytes / 64, kKeepPerClass = 8, kMaxBytes = size_t{4} << 20;

  static SmallBuffers& mine() {
    thread_local std::unique_ptr<SmallBuffers> buffers(new SmallBuffers);  // on the heap: threads that never
    return *buffers;                                                        // allocate keep no 72 KiB of it
  }
  ~SmallBuffers() {
    small_buffers_gone = true;
    for (size_t c = 0; c < kClasses; ++c)
      for (uint8_t i = 0; i < count_[c]; ++i) std::free(slots_[c][i]);
  }
  // `bytes`: a multiple of 64 below kMinBytes.
  void* take(size_t bytes) {
    const size_t c = bytes / 64;
    if (count_[c] == 0) return std::aligned_alloc(64, bytes);
    kept_ -= bytes;
    return slots_[c][--count_[c]];
  }
  void give(void* p, size_t bytes) {
    const size_t c = bytes / 64;
    if (count_[c] == kKeepPerClass || kept_ + bytes > kMaxBytes) return std::free(p);
    slots_[c][count_[c]++] = p;
    kept_ += bytes;
  }

 private:
  void* slots_[kClasses][kKeepPerClass] = {};
  uint8_t count_[kClasses] = {};
  size_t kept_ = 0;
};

// The allocator of the buffers' shared_ptr control blocks (all of one type): a short free list per thread, for the
// same reason.
template <class T>
struct ControlBlocks {
  using value_type = T;
  ControlBlocks() = default;
  template <class U>
  ControlBlocks(const ControlBlocks<U>&) {}
  struct FreeList {
    static constexpr int kKeep = 64;
    void* slots[kKeep] = {};
    int count = 0;
    ~FreeList() {
      gone = true;
      for (int i = 0; i < count; ++i) ::operator delete(slots[i]);
    }
  };
  static thread_local inline bool gone = false;  // the thread's list was destroyed (the thread is exiting)
  static FreeList& free_list() {
    thread_local FreeList list;
    return list;
  }
  T* allocate(size_t n) {
    if (n == 1 && !gone) {
      FreeList& l = free_list();
      if (l.count > 0) return static_cast<T*>(l.slots[--l.count]);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n == 1 && !gone) {
      FreeList& l = free_list();
      if (l.count < FreeList::kKeep) {
        l.slots[l.count++] = p;
        return;
      }
    }
    ::operator delete(p);
  }
  template <class U>
  bool operator==(const ControlBlocks<U>&) const { return true; }
};

// Set while allocate_for_overwrite runs Tensor::allocate on this thread.
thread_local bool skip_zero_fill = false;
thread_local AllocationHook* allocation_hook = nullptr;
constexpr uint64_t kBookkeepingBytes = 256;

// Wraps a charged buffer: its release refunds the budget, then releases the buffer as it would have been.
struct Refund {
  std::shared_ptr<MemoryBudget> budget;
  std::shared_ptr<void> buffer;
  uint64_t bytes;
  void operator()(void*) {
    buffer.reset();
    budget->refund(bytes);
  }
};

std::string describe(DataType dtype, const std::vector<int64_t>& dims) {
  std::string s = cat(dtype, " [");
  for (size_t i = 0; i < dims.size(); ++i) s += cat(i ? "," : "", dims[i]);
  return s + "]";
}

struct ReturnBuffer {
  size_t bytes;
  void operator()(void* p) const {
    if (bytes >= BufferPool::kMinBytes) BufferPool::instance().give(p, bytes);
    else if (small_buffers_gone) std::free(p);
    else SmallBuffers::mine().give(p, bytes);
  }
};

std::shared_ptr<void> pooled_buffer(size_t& bytes) {
  void* p = bytes >= BufferPool::kMinBytes ? BufferPool::instance().take(bytes)
            : small_buffers_gone            ? std::aligned_alloc(64, bytes)
                                            : SmallBuffers::mine().take(bytes);
  if (!p) fail("out of memory allocating ", bytes, " bytes");
  return std::shared_ptr<void>(p, ReturnBuffer{bytes}, ControlBlocks<char>());
}

}  // namespace

AllocationHook* set_allocation_hook(AllocationHook* hook) {
  AllocationHook* was = allocation_hook;
  allocation_hook = hook;
  return was;
}

std::shared_ptr<void> allocate_buffer(size_t bytes) {
  size_t rounded = BufferPool::rounded(bytes);
  return pooled_buffer(rounded);
}

Tensor allocate_for_overwrite(DataType dtype, std::vector<int64_t> dims) {
  skip_zero_fill = true;
  try {
    Tensor t = Tensor::allocate(dtype, std::move(dims));
    skip_zero_fill = false;
    return t;
  } catch (...) {
    skip_zero_fill = false;
    throw;
  }
}

bool release_pages(const Tensor& t) {
  if (t.is_view() || !t.is_writable() || !t.owns_buffer_alone() || t.dtype() == DataType::String) return false;
  const uintptr_t page = 4096, begin = reinterpret_cast<uintptr_t>(t.bytes().data());
  const uintptr_t first = (begin + page - 1) / page * page, last = (begin + t.bytes().size()) / page * page;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return true;
}

Tensor Tensor::view(std::string name, DataType dtype, std::vector<int64_t> dims, std::string_view bytes,
                    std::shared_ptr<const void> keep, bool mapped) {
  Tensor t;
  t.name_ = std::move(name);
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.bytes_ = bytes;
  t.keep_ = std::move(keep);
  t.is_view_ = mapped;
  return t;
}

Tensor Tensor::owned(std::string name, DataType dtype, std::vector<int64_t> dims, std::string bytes) {
  auto buf = std::make_shared<const std::string>(std::move(bytes));
  return view(std::move(name), dtype, std::move(dims), *buf, buf, false);
}

Tensor Tensor::strings(std::string name, std::vector<int64_t> dims, std::vector<std::string> values) {
  Tensor t;
  t.name_ = std::move(name);
  t.dtype_ = DataType::String;
  t.dims_ = std::move(dims);
  t.strings_ = std::move(values);
  t.writable_ = true;
  return t;
}

Tensor Tensor::allocate(DataType dtype, std::vector<int64_t> dims) {
  MemoryBudget* const memory_budget = current_memory_budget();
  for (int64_t d : dims)
    if (d < 0) fail("cannot allocate a tensor with negative dimension ", d);
  const auto count = checked_element_count(dims);
  if (!count) fail("cannot allocate a ", describe(dtype, dims), " tensor: its element count overflows int64");
  const uint64_t n = *count;
  if (dtype == DataType::String) {
    // The strings' own characters are not counted: they start empty.
    if (n > (UINT64_MAX - kBookkeepingBytes) / sizeof(std::string)) fail("a tensor of ", n, " strings is too large");
    const uint64_t charged = n * sizeof(std::string) + kBookkeepingBytes;
    if (memory_budget) memory_budget->charge(charged, describe(dtype, dims));
    Tensor t = strings({}, std::move(dims), std::vector<std::string>(n));
    if (memory_budget)
      t.keep_ = std::shared_ptr<void>(nullptr, Refund{memory_budget->shared_from_this(), nullptr, charged},
                                      ControlBlocks<char>());
    return t;
  }
  auto bytes = raw_byte_size(dtype, n);
  if (!bytes) fail("cannot allocate a tensor of ", n, " ", dtype, " elements");
  size_t size = static_cast<size_t>(*bytes);
  // A tensor costs more than its bytes: its buffer's size class and its bookkeeping (the Tensor, the shared
  // buffer's control block, the list that holds it), counted so that millions of tiny tensors hit the limit too.
  const uint64_t charged = size ? BufferPool::rounded(size) + kBookkeepingBytes : 0;
  if (charged && memory_budget) memory_budget->charge(charged, describe(dtype, dims));
  std::shared_ptr<void> keep;
  try {
    if (size && allocation_hook) keep = allocation_hook->allocate(size);
    if (size && !keep) {
      size_t rounded = BufferPool::rounded(size);
      keep = pooled_buffer(rounded);
    }
  } catch (...) {
    if (charged && memory_budget) memory_budget->refund(charged);
    throw;
  }
  if (charged && memory_budget) {
    void* p = keep.get();
    keep = std::shared_ptr<void>(p, Refund{memory_budget->shared_from_this(), std::move(keep), charged},
                                 ControlBlocks<char>());
  }
  void* p = keep.get();
  if (size && !skip_zero_fill) std::memset(p, 0, size);
  Tensor t = view({}, dtype, std::move(dims), std::string_view(static_cast<const char*>(p), size), std::move(keep));
  t.is_view_ = false;
  t.writable_ = true;
  return t;
}

void Tensor::check_writable() const {
  if (!writable_) fail("tensor '", name_, "' is read-only (a view of the model or an input)");
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  Tensor t = *this;
  t.dims_ = std::move(dims);
  if (t.element_count() != element_count()) fail("cannot reshape ", element_count(), " elements to ", t.element_count());
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = dtype_ == DataType::String ? allocate(dtype_, dims_) : allocate_for_overwrite(dtype_, dims_);
  t.name_ = name_;
  if (dtype_ == DataType::String)
    t.strings_ = strings_;
  else if (!bytes_.empty())
    std::memcpy(const_cast<char*>(t.bytes_.data()), bytes_.data(), bytes_.size());
  return t;
}

uint64_t Tensor::element_count() const {
  uint64_t n = 1;
  for (int64_t d : dims_) n *= static_cast<uint64_t>(d);
  return n;
}

bool is_aligned_for_kernels(const Tensor& t) {
  const int bits = dtype_bits(t.dtype());
  const size_t align = bits >= 16 ? std::min<size_t>(static_cast<size_t>(bits) / 8, 8) : 1;
  return reinterpret_cast<uintptr_t>(t.bytes().data()) % align == 0;
}

std::optional<InvalidBool> invalid_bool(const Tensor& t) {
  if (t.dtype() != DataType::Bool) return std::nullopt;
  const std::string_view b = t.bytes();
  for (size_t i = 0; i < b.size(); ++i)
    if (static_cast<unsigned char>(b[i]) > 1) return InvalidBool{i, static_cast<unsigned char>(b[i])};
  return std::nullopt;
}

Tensor densify(const SparseTensor& s, const std::string& what) {
  const Tensor& values = s.values;
  const std::vector<int64_t>& dims = s.dims;
  const DataType dt = values.dtype();
  if (values.dims().size() != 1) fail(what, ": values must have rank 1 ([NNZ]), not ", values.dims().size());
  if (dt != DataType::String && dtype_bits(dt) % 8 != 0) fail(what, ": sparse ", dt, " tensors are not supported");
  const int64_t nnz = values.dims()[0];
  for (int64_t d : dims)
    if (d < 0) fail(what, ": dims have the negative size ", d);
  const auto dense_count = checked_element_count(dims);
  if (!dense_count) fail(what, ": its dense element count overflows int64");
  const uint64_t total = *dense_count;
  const uint64_t element_bytes = dt == DataType::String ? sizeof(std::string) : static_cast<uint64_t>(dtype_bits(dt)) / 8;
  if (total > kMaxDenseBytes / std::max<uint64_t>(element_bytes, 1))
    fail(what, ": its dense form (", total, " elements) would exceed ", kMaxDenseBytes >> 30, " GiB");
  const Tensor& indices = s.indices;
  const std::vector<int64_t>& id = indices.dims();
  const size_t rank = dims.size();
  const bool linear = id.size() == 1 && id[0] == nnz;
  const bool coordinates = id.size() == 2 && id[0] == nnz && id[1] == static_cast<int64_t>(rank);
  if (nnz > 0 && (indices.dtype() != DataType::Int64 || (!linear && !coordinates)))
    fail(what, ": indices must be int64 of shape [", nnz, "] or [", nnz, ", ", rank, "] for ", nnz,
         " values of a rank-", rank, " tensor");
  // Linear positions, checked in range, then for duplicates.
  std::vector<uint64_t> at(static_cast<size_t>(nnz));
  // The indices are read through memcpy: a view into the model's bytes need not be aligned for int64.
  const char* ix_bytes = nnz > 0 ? indices.bytes().data() : nullptr;
  auto ix = [ix_bytes](size_t i) {
    int64_t v;
    std::memcpy(&v, ix_bytes + i * sizeof v, sizeof v);
    return v;
  };
  for (int64_t k = 0; k < nnz; ++k) {
    uint64_t lin = 0;
    if (linear) {
      const int64_t v = ix(static_cast<size_t>(k));
      if (v < 0 || static_cast<uint64_t>(v) >= total)
        fail(what, ": index ", v, " of value ", k, " is outside the ", total, " elements of the dense tensor");
      lin = static_cast<uint64_t>(v);
    } else {
      for (size_t j = 0; j < rank; ++j) {
        const int64_t v = ix(static_cast<size_t>(k) * rank + j);
        if (v < 0 || v >= dims[j])
          fail(what, ": index ", v, " of value ", k, " is outside axis ", j, " of size ", dims[j]);
        lin = lin * static_cast<uint64_t>(dims[j]) + static_cast<uint64_t>(v);
      }
    }
    at[static_cast<size_t>(k)] = lin;
  }
  std::vector<uint64_t> sorted = at;
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) fail(what, ": two values are at the same position (linear index ", *dup, ")");
  Tensor out = Tensor::allocate(dt, dims);
  if (dt == DataType::String) {
    for (int64_t k = 0; k < nnz; ++k) out.mutable_strings()[at[static_cast<size_t>(k)]] = values.string_values()[static_cast<size_t>(k)];
  } else {
    const char* from = values.bytes().data();
    char* to = out.mutable_data<char>();
    for (int64_t k = 0; k < nnz; ++k)
      std::memcpy(to + at[static_cast<size_t>(k)] * element_bytes, from + static_cast<uint64_t>(k) * element_bytes, element_bytes);
  }
  return out;
}

BufferPoolUse::BufferPoolUse() { BufferPool::instance().add_user(); }
BufferPoolUse::~BufferPoolUse() { BufferPool::instance().remove_user(); }
size_t pooled_buffer_bytes() { return BufferPool::instance().cached(); }

}  // namespace onyx
