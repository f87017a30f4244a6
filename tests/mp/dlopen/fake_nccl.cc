// A stand-in for another NCCL library (NVIDIA's, say) in mp_dlopen_test, built as libnccl.so.2 in a folder
// of its own: a version that is not Braid's, and communicator handles that Braid did not create.
#include <cstdlib>
#include <cstring>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {
constexpr int kFakeVersion = 29901;  // no NCCL release: shows which library answered
constexpr size_t kFakeCommBytes = 4096;
struct FakeUniqueId {  // ncclUniqueId's size: the argument is passed by value
  char internal[128];
};
}  // namespace

FAKE_API int ncclGetVersion(int* version) {
  *version = kFakeVersion;
  return 0;
}

FAKE_API int ncclAllReduce() { return 5; }  // ncclInvalidUsage: only its address matters to the test

// A handle shaped like nobody's communicator: a block of 0x5a bytes.
FAKE_API int ncclCommInitRank(void** comm, int /*nranks*/, FakeUniqueId /*id*/, int /*rank*/) {
  void* block = std::malloc(kFakeCommBytes);
  if (block == nullptr) return 1;
  std::memset(block, 0x5a, kFakeCommBytes);
  *comm = block;
  return 0;
}

FAKE_API int ncclCommDestroy(void* comm) {
  std::free(comm);
  return 0;
}
