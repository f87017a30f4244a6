// Which NCCL library this is, in a process that may hold several: the file Braid was loaded from, the other
// libnccl files mapped beside it (from /proc/self/maps), and the version banner of a first init.
#pragma once

#include <string>
#include <vector>

namespace braid {

// "Braid X.Y.Z": the project version this library was built as.
const char* braidVersionString();
// The file this library was loaded from, as the loader named it (dladdr), or "" where unknown.
std::string ownLibraryPath();
// The libnccl.so* files mapped into this process that are not this library's own file, each once.
std::vector<std::string> otherNcclLibraries();
// The same from the text of a maps file; `ownPath` names our file (compared by device and inode, so a
// symlink to it or another name of it does not count as another library).
std::vector<std::string> otherNcclLibrariesIn(const std::string& mapsText, const std::string& ownPath);
// Under NCCL_DEBUG=VERSION or above, once per process: NCCL's own version line ("NCCL version
// 2.28.9+cuda13.0", the line scripts grep for), then Braid's name, version and file, so a log shows which
// library served the job; under INFO also any other NCCL library mapped into the process.
void showVersionOnce();

}  // namespace braid
