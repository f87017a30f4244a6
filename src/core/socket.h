// TCP socket helpers shared by the bootstrap and the socket network backend: interface selection
// (NCCL_SOCKET_IFNAME semantics), address parsing/printing, connect with retry and deadline, full
// reads/writes with deadline and abort checks. Sockets are RAII (Socket closes on destruction).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace braid {

union SockAddr {
  sockaddr sa;
  sockaddr_in sin;
  sockaddr_in6 sin6;
};
socklen_t sockAddrLen(const SockAddr& a);
std::string sockAddrToString(const SockAddr& a);
// The connected peer of socket `fd` as sockAddrToString prints it, or "<unknown peer>".
std::string socketPeerAddr(int fd);
// "<ip>:<port>", "[ipv6]:port" or "host:port" (resolved).
ncclResult_t parseSockAddr(const char* text, SockAddr* out);
// The address to listen on / advertise: first interface matching NCCL_SOCKET_IFNAME (default: skip
// "lo" and "docker*" unless nothing else exists), port 0.
ncclResult_t findInterfaceAddr(SockAddr* out, std::string* ifName);
// Every interface findInterfaceAddr could pick, in its order (the first is its pick), one address each: those
// NCCL_SOCKET_IFNAME matches, else all but docker, lo and virbr, else lo. Errors as findInterfaceAddr's.
struct SockIf {
  std::string name;
  SockAddr addr;
};
ncclResult_t findInterfaces(std::vector<SockIf>* out);
// NCCL_SOCKET_IFNAME matching (exposed for tests): `spec` is a comma-separated list of name prefixes; a
// leading '^' excludes the listed names instead, a leading '=' (after any '^') compares whole names.
bool matchIfName(const char* ifName, const std::string& spec);

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept : fd_(o.release()) {}
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void close();

  // Listen on `addr` (port 0 = any); `addr` is updated with the bound port. A port already in use is
  // ncclRemoteError (the holder may go away: callers with a fixed port may retry), else ncclSystemError.
  ncclResult_t listen(SockAddr* addr, int backlog = 256);
  // Accept with a deadline (seconds, <0 = forever but still abortable).
  ncclResult_t accept(Socket* out, double timeoutSec, const std::atomic<uint32_t>* abortFlag);
  // Connect, retrying refused/timed-out attempts until the deadline.
  ncclResult_t connect(const SockAddr& addr, double timeoutSec, const std::atomic<uint32_t>* abortFlag);
  // Full transfers. A closed connection is ncclRemoteError ("connection closed by <what>").
  ncclResult_t sendAll(const void* data, size_t size, double timeoutSec, const std::atomic<uint32_t>* abortFlag,
                       const char* what);
  ncclResult_t recvAll(void* data, size_t size, double timeoutSec, const std::atomic<uint32_t>* abortFlag,
                       const char* what);
  ncclResult_t setNonBlocking(bool on);
  ncclResult_t setNoDelay();

 private:
  int fd_ = -1;
};

}  // namespace braid
