// For tests that measure memory: the bytes glibc's allocator has handed out, and a skip for builds where those
// statistics mean nothing (AddressSanitizer replaces glibc's allocator).
#pragma once

#include <malloc.h>

#include <cstddef>

namespace rackwise::testing {

inline size_t HeapBytesInUse() { return mallinfo2().uordblks; }

}  // namespace rackwise::testing

// At the top of a TEST body that reads HeapBytesInUse().
#if defined(__SANITIZE_ADDRESS__)
#define RACKWISE_SKIP_WITHOUT_HEAP_STATISTICS() \
  GTEST_SKIP() << "AddressSanitizer replaces glibc's allocator, whose statistics this test reads"
#else
#define RACKWISE_SKIP_WITHOUT_HEAP_STATISTICS() static_cast<void>(0)
#endif
