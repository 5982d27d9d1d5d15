// Launch helpers shared by every gpu/**/*.cu (internal; needs the CUDA headers): the block size,
// grid sizing, pointer alignment tests, an owning device buffer, and the SM count of the current
// device, queried once per device. Defined here once so that no kernel file restates them.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "gpu/common/cuda_check.hpp"

namespace exmy::gpu {

// Threads per block of every kernel launched by gpu/: 8 warps. The block reductions of the optim
// kernels (shared arrays of kThreads / 32 warp results, the 256-leaf tree) are written for it.
inline constexpr int kThreads = 256;

// Grid-stride kernels cover any n; beyond 2^20 blocks (4G elements of 256 threads at one element
// each) more blocks buy nothing.
inline constexpr std::size_t kMaxBlocks = std::size_t{1} << 20;

// Blocks for n items at `per_block` items per block, clamped to [1, kMaxBlocks].
inline unsigned blocks_for(std::size_t n, std::size_t per_block) {
  const std::size_t b = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

// Blocks of kThreads threads for n items at `per_thread` items per thread
// (ceil(ceil(n / per_thread) / kThreads) = ceil(n / (per_thread * kThreads))).
inline unsigned grid_for(std::size_t n, std::size_t per_thread) {
  return blocks_for(n, per_thread * static_cast<std::size_t>(kThreads));
}

inline bool is_aligned(const void* p, std::uintptr_t bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1)) == 0;
}
// Every pointer 16-byte (float4 / uint4 access) or 8-byte (4 x 16-bit access) aligned; a null
// pointer counts as aligned, so optional operands may be passed as nullptr.
template <class... P>
bool aligned16(P... p) {
  return (is_aligned(p, 16) && ...);
}
template <class... P>
bool aligned8(P... p) {
  return (is_aligned(p, 8) && ...);
}

// One device allocation, freed on every exit path (a throwing check included). Zero bytes
// allocate nothing (get() is then nullptr).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes > 0) cuda_check(cudaMalloc(&p_, bytes), "cudaMalloc");
  }
  // Allocates and uploads `bytes` from host memory.
  DeviceBuffer(const void* host, std::size_t bytes) : DeviceBuffer(bytes) { upload(host, bytes); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }
  // Copies `bytes` from host memory into the buffer / from the buffer into host memory.
  void upload(const void* host, std::size_t bytes) {
    if (bytes > 0) cuda_check(cudaMemcpy(p_, host, bytes, cudaMemcpyHostToDevice), "upload");
  }
  void download(void* host, std::size_t bytes) const {
    if (bytes > 0) cuda_check(cudaMemcpy(host, p_, bytes, cudaMemcpyDeviceToHost), "download");
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  // The first `count` elements, copied to the host (synchronous).
  template <typename T>
  std::vector<T> download(std::size_t count) const {
    std::vector<T> v(count);
    download(v.data(), count * sizeof(T));
    return v;
  }

 private:
  void* p_ = nullptr;
};

inline int current_device() {
  int dev = 0;
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  return dev;
}

// A positive int computed once per device (an attribute, an occupancy) and then read without a
// lock. Thread-safe: threads that race on the first use of a device each compute the same value
// and store it; devices past the table are computed on every call.
class PerDeviceValue {
 public:
  template <class Compute>
  int get(Compute&& compute) {
    const int dev = current_device();
    if (dev < 0 || dev >= kSlots) return compute(dev);
    int v = slot_[dev].load(std::memory_order_acquire);
    if (v <= 0) {
      v = compute(dev);
      slot_[dev].store(v, std::memory_order_release);
    }
    return v;
  }

 private:
  static constexpr int kSlots = 64;
  std::atomic<int> slot_[kSlots] = {};
};

// A device buffer kept for the life of the process, one per device (constant tables, grown
// workspaces). Per device, because a pointer from one device is not valid on another (a process
// may step on several GPUs). Every buffer lives in one registry that is never destroyed, so the
// order of static destructors cannot matter; an atexit hook, registered after the CUDA runtime's
// own (the runtime is initialised before the first allocation), frees them, so leak checkers
// (compute-sanitizer --leak-check full) see a clean process. Thread-safe.
class PerDeviceBuffer {
 public:
  // This device's buffer of at least `bytes`. On the first use on a device, or when it must grow
  // (the old contents are then dropped), it is (re)allocated and `fill(ptr)` runs once on it; a
  // fill that throws frees the new allocation.
  template <class Fill>
  void* get(std::size_t bytes, Fill&& fill) {
    const int dev = current_device();
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const Slot& s : r.slots) {
      if (s.owner == this && s.dev == dev && s.bytes >= bytes) return s.p;
    }
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, bytes), "cudaMalloc (per-device buffer)");
    try {
      fill(p);
    } catch (...) {
      cudaFree(p);
      throw;
    }
    for (Slot& s : r.slots) {
      if (s.owner == this && s.dev == dev) {
        cudaFree(s.p);
        s.p = p;
        s.bytes = bytes;
        return p;
      }
    }
    r.slots.push_back({this, dev, p, bytes});
    return p;
  }

 private:
  struct Slot {
    const PerDeviceBuffer* owner;  // identity only, never dereferenced
    int dev;
    void* p;
    std::size_t bytes;
  };
  struct Registry {
    std::mutex mutex;
    std::vector<Slot> slots;
    Registry() { std::atexit(free_all); }
  };
  static Registry& registry() {
    static Registry* r = new Registry;  // deliberately never destroyed (see above)
    return *r;
  }
  static void free_all() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    int prev = 0;
    const bool have_prev = cudaGetDevice(&prev) == cudaSuccess;
    for (const Slot& s : r.slots) {
      if (cudaSetDevice(s.dev) == cudaSuccess) cudaFree(s.p);
    }
    r.slots.clear();
    if (have_prev) cudaSetDevice(prev);
  }
};

// Streaming multiprocessors of the current device (132 on an H100 SXM / H200), queried.
inline int sm_count() {
  static PerDeviceValue cache;
  return cache.get([](int dev) {
    int n = 0;
    cuda_check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev), "SM count");
    return n < 1 ? 1 : n;
  });
}

// The grid of a kernel that loops over its work (a grid-stride or span loop): at most `want`
// blocks of kThreads, no more than fit on the device at once with `smem` bytes of dynamic shared
// memory each (the cast kernels pipelined through shared memory, the sr floor kernels). The
// attribute and the occupancy are settled once per kernel and device: set before every launch,
// the attribute call waited for the kernels in flight (H200, 2^28 fp32 -> e5m2 sr:8: 394 us per
// cast against 337 us of kernel).
template <auto Kernel>
unsigned resident_grid(std::size_t smem, unsigned want) {
  static PerDeviceValue blocks_per_sm;
  const int per_sm = blocks_per_sm.get([&](int) {
    if (smem > 0) {
      cuda_check(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(smem)),
                 "resident grid: shared memory attribute");
    }
    int blocks = 0;
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, kThreads, smem),
               "resident grid: occupancy");
    return blocks < 1 ? 1 : blocks;
  });
  const std::size_t fit = static_cast<std::size_t>(per_sm) * sm_count();
  return static_cast<unsigned>(want < fit ? want : fit);
}

}  // namespace exmy::gpu
