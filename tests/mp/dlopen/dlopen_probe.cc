// A program that loads NCCL the way JAX's and CuPy's loaders do: dlopen("libnccl.so.2") by name, with no link
// to any NCCL. mp_dlopen_test runs it under LD_PRELOAD and LD_LIBRARY_PATH and reads what it prints.
//
//   dlopen_probe [--first PATH] [--foreign PATH] [--init]
//     --first PATH    dlopen PATH (RTLD_LOCAL) before the load by name, as JAX loads its pip NCCL by path
//     --foreign PATH  make a communicator with the library at PATH, hand it to the by-name library's
//                     ncclCommGetAsyncError and print the result and the error message it recorded
//     --init          create and destroy a 1-rank communicator through the by-name library
//
// Prints "resolved FILE" (the real path of the file holding ncclAllReduce), "version N", and with the options
// "init R", "async-result R" and "error MESSAGE". Exit 2: no libnccl.so.2 to load by name; 3: --first or
// --foreign could not be loaded.
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>

#include "nccl.h"  // types only: nothing here links an NCCL

namespace {

template <typename F>
F symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    std::printf("missing %s\n", name);
    std::exit(4);
  }
  return reinterpret_cast<F>(p);
}

}  // namespace

int main(int argc, char** argv) {
  const char* first = nullptr;
  const char* foreign = nullptr;
  bool init = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--first") == 0 && i + 1 < argc) {
      first = argv[++i];
    } else if (std::strcmp(argv[i], "--foreign") == 0 && i + 1 < argc) {
      foreign = argv[++i];
    } else if (std::strcmp(argv[i], "--init") == 0) {
      init = true;
    } else {
      std::fprintf(stderr, "usage: %s [--first PATH] [--foreign PATH] [--init]\n", argv[0]);
      return 1;
    }
  }
  if (first != nullptr && dlopen(first, RTLD_NOW | RTLD_LOCAL) == nullptr) {
    std::printf("first-failed %s\n", dlerror());
    return 3;
  }
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::printf("not-found %s\n", dlerror());
    return 2;
  }
  Dl_info info{};
  char real[PATH_MAX];
  if (dladdr(dlsym(lib, "ncclAllReduce"), &info) == 0 || info.dli_fname == nullptr) {
    std::printf("resolved ?\n");
  } else {
    std::printf("resolved %s\n", realpath(info.dli_fname, real) ? real : info.dli_fname);
  }
  int version = 0;
  symbol<ncclResult_t (*)(int*)>(lib, "ncclGetVersion")(&version);
  std::printf("version %d\n", version);
  std::fflush(stdout);

  if (init) {
    ncclUniqueId id;
    ncclComm_t comm = nullptr;
    ncclResult_t r = symbol<ncclResult_t (*)(ncclUniqueId*)>(lib, "ncclGetUniqueId")(&id);
    if (r == ncclSuccess)
      r = symbol<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(lib, "ncclCommInitRank")(&comm, 1, id, 0);
    if (r == ncclSuccess) r = symbol<ncclResult_t (*)(ncclComm_t)>(lib, "ncclCommDestroy")(comm);
    std::printf("init %d\n", static_cast<int>(r));
  }
  if (foreign != nullptr) {
    void* other = dlopen(foreign, RTLD_NOW | RTLD_LOCAL);
    if (other == nullptr) {
      std::printf("foreign-failed %s\n", dlerror());
      return 3;
    }
    ncclUniqueId id{};
    ncclComm_t comm = nullptr;
    symbol<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(other, "ncclCommInitRank")(&comm, 1, id, 0);
    ncclResult_t async = ncclSuccess;
    const ncclResult_t r =
        symbol<ncclResult_t (*)(ncclComm_t, ncclResult_t*)>(lib, "ncclCommGetAsyncError")(comm, &async);
    std::printf("async-result %d\n", static_cast<int>(r));
    std::printf("error %s\n", symbol<const char* (*)(ncclComm_t)>(lib, "ncclGetLastError")(nullptr));
    symbol<ncclResult_t (*)(ncclComm_t)>(other, "ncclCommDestroy")(comm);
  }
  return 0;
}
