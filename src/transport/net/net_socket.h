// Socket backend internals shared with tests: how a message is split over the sockets of a connection.
#pragma once

#include <cstddef>

namespace braid {

constexpr int kNetMaxSocks = 16;          // cap on BRAID_NSOCKS_PERPEER
constexpr size_t kNetMinPart = 64 << 10;  // smaller messages stay on socket 0

// Splits `size` bytes over `nSocks` sockets: contiguous page-rounded parts, part i at off[i] of len[i]
// (len 0 for unused sockets). Both sides compute it from the size alone.
void netSocketPartition(size_t size, int nSocks, size_t* off, size_t* len);

}  // namespace braid
