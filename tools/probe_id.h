// probe_id.h: the unique-id hand-over of the two-process probes (iter_probe.cu, launch_cost.cu,
// overlap_probe.cu), one process per GPU started side by side: rank 0 writes the id to a file (whole, by
// rename), rank 1 waits for the file and reads it. Rank 0 unlinks it once both have joined.
#pragma once

#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

inline ncclUniqueId probeUniqueId(int rank, const char* path) {
  ncclUniqueId id{};
  if (rank == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) {
      fprintf(stderr, "ncclGetUniqueId failed\n");
      exit(1);
    }
    const std::string tmp = std::string(path) + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    rename(tmp.c_str(), path);
  } else {
    while (access(path, R_OK) != 0) usleep(1000);
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&id), sizeof id);
  }
  return id;
}
