// Where the canned topology files of tests/topology are, and which they are: shared by the XML and the topology
// tests so that a file added there is round-tripped and built by both.
#pragma once

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace braid {

// tests/topology of the tree this test was compiled from (BRAID_SOURCE_DIR, if set, names another tree).
inline std::string topologyDir() {
  if (const char* src = std::getenv("BRAID_SOURCE_DIR")) return std::string(src) + "/tests/topology";
  std::string here = __FILE__;  // <source>/tests/unit/topology_files.h
  for (int up = 0; up < 2; ++up) {
    const size_t slash = here.find_last_of('/');
    here = slash == std::string::npos ? "." : here.substr(0, slash);
  }
  return here + "/topology";
}

// The *.xml files directly in `dir`, sorted.
inline std::vector<std::string> xmlFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".xml") == 0) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every well-formed machine in tests/topology (the malformed ones are in tests/topology/malformed).
inline std::vector<std::string> cannedTopologyFiles() { return xmlFilesIn(topologyDir()); }

inline std::string readText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace braid
