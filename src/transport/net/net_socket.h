// Socket backend internals shared with tests: how a message is split over the sockets of a connection.
#pragma once

#include <cstddef>

namespace braid {

constexpr int kNetMaxSocks = 16;          // cap on the sockets of one connection
constexpr size_t kNetMinPart = 64 << 10;  // smaller messages stay on socket 0

// Splits `size` bytes over `nSocks` sockets: contiguous page-rounded parts, part i at off[i] of len[i]
// (len 0 for unused sockets). Both sides compute it from the size alone.
void netSocketPartition(size_t size, int nSocks, size_t* off, size_t* len);

// Sockets per connection: NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD when either is set (NCCL's knobs;
// one proxy thread drives a connection's sockets here, so only the product matters), else BRAID_NSOCKS_PERPEER; clamped
// to [1, kNetMaxSocks]. Read by the listening side; the connecting side follows its handle.
int netSocketsPerConnection();

}  // namespace braid
