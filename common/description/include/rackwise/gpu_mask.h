// A node's GPUs as a 64-bit mask (bit i = GPU index i), and the few operations every face needs on it: the
// lowest free GPUs to give a job, and the indices a mask stands for. One place, so that every face picks and
// prints GPUs the same way.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace rackwise {

using GpuMask = uint64_t;  // bit i set = GPU index i; a node has at most 64 GPUs (kMaxGpusPerNode)

// How many GPUs `mask` holds. Not std::popcount: the build targets baseline x86-64, where that is a call into
// libgcc (no POPCNT instruction), and a placement counts masks a few hundred times; this is a dozen inline
// instructions on every target.
constexpr int GpuCount(GpuMask mask) {
  mask -= (mask >> 1) & 0x5555555555555555ULL;
  mask = (mask & 0x3333333333333333ULL) + ((mask >> 2) & 0x3333333333333333ULL);
  mask = (mask + (mask >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((mask * 0x0101010101010101ULL) >> 56);
}

// Every GPU of a node with `gpus` GPUs (0..64).
inline GpuMask FullGpuMask(int gpus) {
  if (gpus <= 0) return 0;
  return gpus >= 64 ? ~GpuMask{0} : (GpuMask{1} << gpus) - 1;
}

// The `count` lowest set bits of `free`; all of them when it has fewer.
inline GpuMask LowestGpus(GpuMask free, int64_t count) {
  GpuMask out = 0;
  for (; count > 0 && free != 0; --count) {
    const GpuMask bit = free & (~free + 1);
    out |= bit;
    free &= free - 1;
  }
  return out;
}

// The GPU indices of `mask`, ascending.
inline std::vector<int> GpuIndices(GpuMask mask) {
  std::vector<int> out;
  out.reserve(GpuCount(mask));
  for (; mask != 0; mask &= mask - 1) out.push_back(std::countr_zero(mask));
  return out;
}

}  // namespace rackwise
