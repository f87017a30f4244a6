// TCP socket helpers: address parsing/printing, interface selection (NCCL_SOCKET_IFNAME), and blocking
// operations (accept, connect, full send/recv) built on poll() in short slices, so every one of them
// notices the abort flag and its deadline. Data calls use MSG_DONTWAIT, so they work whether or not the
// descriptor is in non-blocking mode, and MSG_NOSIGNAL, so a dead peer is an error, never a SIGPIPE.
#include "core/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"

namespace braid {
namespace {

// Longest a blocking call sleeps before looking at the abort flag again.
constexpr int kPollSliceMs = 20;

class Deadline {
 public:
  explicit Deadline(double timeoutSec) : forever_(timeoutSec < 0) {
    if (!forever_)
      end_ = std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeoutSec));
  }
  bool expired() const { return !forever_ && std::chrono::steady_clock::now() >= end_; }
  // Milliseconds to poll for: a slice, shortened to what is left of the deadline.
  int sliceMs(int slice = kPollSliceMs) const {
    if (forever_) return slice;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now()).count();
    if (left <= 0) return 0;
    return left < slice ? static_cast<int>(left) : slice;
  }

 private:
  bool forever_;
  std::chrono::steady_clock::time_point end_{};
};

inline bool aborted(const std::atomic<uint32_t>* abortFlag) {
  return abortFlag != nullptr && abortFlag->load(std::memory_order_relaxed) != 0;
}

std::string errnoText(int err) {
  char buf[128];
  // GNU strerror_r returns the message pointer (which may not be buf).
  const char* s = strerror_r(err, buf, sizeof(buf));
  return std::string(s) + " (errno " + std::to_string(err) + ")";
}

std::string localName(int fd) {
  SockAddr a;
  memset(&a, 0, sizeof(a));
  socklen_t len = sizeof(a);
  if (fd < 0 || getsockname(fd, &a.sa, &len) != 0) return "<unbound socket>";
  return sockAddrToString(a);
}

bool retryableConnectError(int err) {
  // Refused: the listener is not up yet (ranks may start before the root). Reset: the listener's backlog
  // overflowed. Timed out: SYNs lost. All are worth another try until the deadline.
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == EAGAIN;
}

struct IfaddrsDeleter {
  void operator()(ifaddrs* p) const { freeifaddrs(p); }
};

// Appends every interface that is up and matches `spec` to `out`, one address each (the first of the first family
// in `families` it has), in the order of `families` then of the list; names already in `out` are left alone.
void collectInterfaces(ifaddrs* list, const std::string& spec, const std::vector<int>& families,
                       std::vector<SockIf>* out) {
  for (int family : families) {
    for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
      if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != family) continue;
      if ((ifa->ifa_flags & IFF_UP) == 0) continue;
      if (family == AF_INET6) {
        auto* s6 = reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr);
        // Link-local addresses need a scope id that means nothing on another host.
        if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) continue;
      }
      if (!matchIfName(ifa->ifa_name, spec)) continue;
      bool seen = false;
      for (const SockIf& have : *out) seen = seen || have.name == ifa->ifa_name;
      if (seen) continue;
      SockIf one;
      one.name = ifa->ifa_name;
      memset(&one.addr, 0, sizeof(one.addr));
      if (family == AF_INET) {
        memcpy(&one.addr.sin, ifa->ifa_addr, sizeof(sockaddr_in));
        one.addr.sin.sin_port = 0;
      } else {
        memcpy(&one.addr.sin6, ifa->ifa_addr, sizeof(sockaddr_in6));
        one.addr.sin6.sin6_port = 0;
      }
      out->push_back(std::move(one));
    }
  }
}

std::string listInterfaces(ifaddrs* list) {
  std::string names;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    int fam = ifa->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    SockAddr a;
    memset(&a, 0, sizeof(a));
    memcpy(&a, ifa->ifa_addr, fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    if (!names.empty()) names += ", ";
    names += std::string(ifa->ifa_name) + "=" + sockAddrToString(a) + ((ifa->ifa_flags & IFF_UP) ? "" : " (down)");
  }
  return names.empty() ? "none" : names;
}

}  // namespace

socklen_t sockAddrLen(const SockAddr& a) {
  switch (a.sa.sa_family) {
    case AF_INET:
      return sizeof(sockaddr_in);
    case AF_INET6:
      return sizeof(sockaddr_in6);
    default:
      return 0;
  }
}

std::string sockAddrToString(const SockAddr& a) {
  char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {0};
  if (a.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a.sin.sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(a.sin.sin_port));
  }
  if (a.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &a.sin6.sin6_addr, host, INET6_ADDRSTRLEN);
    std::string h(host);
    char ifn[IF_NAMESIZE] = {0};
    if (a.sin6.sin6_scope_id != 0 && if_indextoname(a.sin6.sin6_scope_id, ifn) != nullptr) h += std::string("%") + ifn;
    return "[" + h + "]:" + std::to_string(ntohs(a.sin6.sin6_port));
  }
  if (a.sa.sa_family == AF_UNSPEC) return "<no address>";
  return "<address family " + std::to_string(a.sa.sa_family) + ">";
}

std::string socketPeerAddr(int fd) {
  SockAddr a;
  memset(&a, 0, sizeof(a));
  socklen_t len = sizeof(a);
  if (getpeername(fd, &a.sa, &len) != 0) return "<unknown peer>";
  return sockAddrToString(a);
}

ncclResult_t parseSockAddr(const char* text, SockAddr* out) {
  if (text == nullptr || *text == '\0')
    return recordError(ncclInvalidArgument, "empty socket address (expected <ip>:<port>)");
  std::string s(text), host, port;
  if (s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':')
      return recordError(ncclInvalidArgument, "cannot parse socket address '%s': expected [ipv6]:port", text);
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    // One colon: host:port. Several: a bare IPv6 address whose last group is the port.
    size_t colon = s.rfind(':');
    if (colon == std::string::npos)
      return recordError(ncclInvalidArgument, "cannot parse socket address '%s': missing ':<port>'", text);
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
  }
  char* end = nullptr;
  errno = 0;
  long p = strtol(port.c_str(), &end, 10);
  if (port.empty() || errno != 0 || *end != '\0' || p < 0 || p > 65535)
    return recordError(ncclInvalidArgument, "cannot parse socket address '%s': bad port '%s'", text, port.c_str());
  if (host.empty()) return recordError(ncclInvalidArgument, "cannot parse socket address '%s': missing host", text);

  addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    return recordError(ncclInvalidArgument, "cannot resolve host '%s' of socket address '%s': %s", host.c_str(), text,
                       gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);
  const addrinfo* pick = nullptr;
  for (const addrinfo* r = res; r; r = r->ai_next)
    if (r->ai_family == AF_INET) {
      pick = r;
      break;
    }
  if (!pick)
    for (const addrinfo* r = res; r; r = r->ai_next)
      if (r->ai_family == AF_INET6) {
        pick = r;
        break;
      }
  if (!pick) return recordError(ncclInvalidArgument, "host '%s' of '%s' has no IPv4/IPv6 address", host.c_str(), text);
  memset(out, 0, sizeof(*out));
  memcpy(out, pick->ai_addr, pick->ai_addrlen < sizeof(*out) ? pick->ai_addrlen : sizeof(*out));
  if (out->sa.sa_family == AF_INET)
    out->sin.sin_port = htons(static_cast<uint16_t>(p));
  else
    out->sin6.sin6_port = htons(static_cast<uint16_t>(p));
  return ncclSuccess;
}

bool matchIfName(const char* ifName, const std::string& spec) {
  const char* p = spec.c_str();
  bool exclude = false, exact = false;
  if (*p == '^') {
    exclude = true;
    ++p;
  }
  if (*p == '=') {
    exact = true;
    ++p;
  }
  bool matched = false;
  while (*p != '\0' && !matched) {
    const char* comma = strchr(p, ',');
    size_t len = comma ? static_cast<size_t>(comma - p) : strlen(p);
    if (len > 0) {
      if (exact)
        matched = strlen(ifName) == len && strncmp(ifName, p, len) == 0;
      else
        matched = strncmp(ifName, p, len) == 0;
    }
    if (!comma) break;
    p = comma + 1;
  }
  return exclude ? !matched : matched;
}

ncclResult_t findInterfaces(std::vector<SockIf>* out) {
  out->clear();
  // IPv4 first (unless NCCL_SOCKET_FAMILY says): what NCCL prefers, reachable without scope ids.
  std::vector<int> families{AF_INET, AF_INET6};
  const std::string family = params::SocketFamily();
  if (family == "AF_INET") {
    families = {AF_INET};
  } else if (family == "AF_INET6") {
    families = {AF_INET6};
  } else if (!family.empty()) {
    return recordError(ncclInvalidArgument, "NCCL_SOCKET_FAMILY=%s is not AF_INET or AF_INET6", family.c_str());
  }
  ifaddrs* raw = nullptr;
  BRAID_SYS_CHECK(getifaddrs(&raw), "getifaddrs");
  std::unique_ptr<ifaddrs, IfaddrsDeleter> list(raw);
  const std::string spec = params::SocketIfname();
  if (!spec.empty()) {
    collectInterfaces(list.get(), spec, families, out);
    if (out->empty())
      return recordError(ncclInvalidArgument,
                         "no network interface that is up matches NCCL_SOCKET_IFNAME=%s%s%s (interfaces: %s)",
                         spec.c_str(), family.empty() ? "" : " with NCCL_SOCKET_FAMILY=", family.c_str(),
                         listInterfaces(list.get()).c_str());
    return ncclSuccess;
  }
  collectInterfaces(list.get(), "^docker,lo,virbr", families, out);
  // Single-machine runs (CI, tests) live on loopback when nothing else is up.
  if (out->empty()) collectInterfaces(list.get(), "lo", families, out);
  if (out->empty())
    return recordError(ncclSystemError, "no usable network interface%s%s (interfaces: %s); set NCCL_SOCKET_IFNAME",
                       family.empty() ? "" : " for NCCL_SOCKET_FAMILY=", family.c_str(),
                       listInterfaces(list.get()).c_str());
  return ncclSuccess;
}

ncclResult_t findInterfaceAddr(SockAddr* out, std::string* ifName) {
  std::vector<SockIf> all;
  BRAID_CHECK(findInterfaces(&all));
  *out = all[0].addr;
  const std::string spec = params::SocketIfname();
  BRAID_INFO(kSubBootstrap | kSubNet, "using interface %s address %s%s", all[0].name.c_str(),
             sockAddrToString(*out).c_str(), spec.empty() ? "" : (" (NCCL_SOCKET_IFNAME=" + spec + ")").c_str());
  if (ifName) *ifName = all[0].name;
  return ncclSuccess;
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.release();
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

ncclResult_t Socket::setNonBlocking(bool on) {
  int flags = fcntl(fd_, F_GETFL);
  BRAID_SYS_CHECK(flags, "fcntl(F_GETFL)");
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  BRAID_SYS_CHECK(fcntl(fd_, F_SETFL, flags), "fcntl(F_SETFL)");
  return ncclSuccess;
}

ncclResult_t Socket::setNoDelay() {
  int one = 1;
  BRAID_SYS_CHECK(setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), "setsockopt(TCP_NODELAY)");
  return ncclSuccess;
}

ncclResult_t Socket::listen(SockAddr* addr, int backlog) {
  close();
  socklen_t len = sockAddrLen(*addr);
  if (len == 0) return recordError(ncclInternalError, "listen: address family %d is not IPv4/IPv6", addr->sa.sa_family);
  int fd = ::socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    int err = errno;
    return recordError(ncclSystemError, "socket() for a listener on %s failed: %s", sockAddrToString(*addr).c_str(),
                       errnoText(err).c_str());
  }
  Socket s(fd);
  int one = 1;
  BRAID_SYS_CHECK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), "setsockopt(SO_REUSEADDR)");
  if (::bind(fd, &addr->sa, len) != 0) {
    int err = errno;
    // EADDRINUSE is the caller's to retry (a fixed NCCL_COMM_ID port may still be held by a previous root).
    return recordError(err == EADDRINUSE ? ncclRemoteError : ncclSystemError, "bind to %s failed: %s",
                       sockAddrToString(*addr).c_str(), errnoText(err).c_str());
  }
  if (::listen(fd, backlog) != 0) {
    int err = errno;
    return recordError(ncclSystemError, "listen on %s failed: %s", sockAddrToString(*addr).c_str(),
                       errnoText(err).c_str());
  }
  SockAddr bound;
  memset(&bound, 0, sizeof(bound));
  socklen_t blen = sizeof(bound);
  BRAID_SYS_CHECK(getsockname(fd, &bound.sa, &blen), "getsockname");
  *addr = bound;
  *this = std::move(s);
  return ncclSuccess;
}

ncclResult_t Socket::accept(Socket* out, double timeoutSec, const std::atomic<uint32_t>* abortFlag) {
  Deadline dl(timeoutSec);
  for (;;) {
    if (aborted(abortFlag)) return recordError(ncclInvalidUsage, "accept on %s: aborted", localName(fd_).c_str());
    pollfd pfd = {fd_, POLLIN, 0};
    int n = ::poll(&pfd, 1, dl.sliceMs());
    if (n < 0 && errno != EINTR) {
      int err = errno;
      return recordError(ncclSystemError, "poll on listener %s failed: %s", localName(fd_).c_str(),
                         errnoText(err).c_str());
    }
    if (n > 0) {
      int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        *out = Socket(fd);
        return out->setNoDelay();
      }
      int err = errno;
      // The connection may have gone between poll and accept; the listener is non-blocking.
      if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR && err != ECONNABORTED && err != EPROTO)
        return recordError(ncclSystemError, "accept on %s failed: %s", localName(fd_).c_str(), errnoText(err).c_str());
    }
    if (dl.expired())
      return recordError(ncclRemoteError, "accept on %s: no connection within %.0f s", localName(fd_).c_str(),
                         timeoutSec);
  }
}

ncclResult_t Socket::connect(const SockAddr& addr, double timeoutSec, const std::atomic<uint32_t>* abortFlag) {
  close();
  const std::string where = sockAddrToString(addr);
  socklen_t len = sockAddrLen(addr);
  if (len == 0) return recordError(ncclInternalError, "connect: address %s is not IPv4/IPv6", where.c_str());
  Deadline dl(timeoutSec);
  int backoffMs = 5;
  int attempts = 0;
  int lastErr = 0;
  for (;;) {
    if (aborted(abortFlag)) return recordError(ncclInvalidUsage, "connect to %s: aborted", where.c_str());
    ++attempts;
    int fd = ::socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      int err = errno;
      return recordError(ncclSystemError, "socket() to connect to %s failed: %s", where.c_str(),
                         errnoText(err).c_str());
    }
    Socket s(fd);
    int err = ::connect(fd, &addr.sa, len) == 0 ? 0 : errno;
    if (err == EINPROGRESS || err == EINTR) {
      err = ETIMEDOUT;
      for (;;) {
        if (aborted(abortFlag)) return recordError(ncclInvalidUsage, "connect to %s: aborted", where.c_str());
        pollfd pfd = {fd, POLLOUT, 0};
        int n = ::poll(&pfd, 1, dl.sliceMs());
        if (n > 0) {
          int soErr = 0;
          socklen_t sl = sizeof(soErr);
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soErr, &sl) != 0) soErr = errno;
          err = soErr;
          break;
        }
        if (n < 0 && errno != EINTR) {
          err = errno;
          break;
        }
        if (dl.expired()) break;
      }
    }
    if (err == 0) {
      BRAID_CHECK(s.setNonBlocking(false));  // data calls pass MSG_DONTWAIT; other users may want blocking
      BRAID_CHECK(s.setNoDelay());
      *this = std::move(s);
      if (attempts > 1)
        BRAID_INFO(kSubBootstrap | kSubNet, "connected to %s after %d attempts", where.c_str(), attempts);
      return ncclSuccess;
    }
    lastErr = err;
    if (!retryableConnectError(err))
      return recordError(err == EHOSTUNREACH || err == ENETUNREACH ? ncclRemoteError : ncclSystemError,
                         "connect to %s failed: %s", where.c_str(), errnoText(err).c_str());
    if (dl.expired()) break;
    s.close();
    int sleepMs = dl.sliceMs(backoffMs);
    if (sleepMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
    backoffMs = backoffMs * 2 > 100 ? 100 : backoffMs * 2;
  }
  return recordError(ncclRemoteError, "could not connect to %s within %.0f s (%d attempts; last error: %s)",
                     where.c_str(), timeoutSec, attempts, errnoText(lastErr).c_str());
}

ncclResult_t Socket::sendAll(const void* data, size_t size, double timeoutSec, const std::atomic<uint32_t>* abortFlag,
                             const char* what) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  Deadline dl(timeoutSec);
  while (done < size) {
    ssize_t n = ::send(fd_, p + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    int err = n < 0 ? errno : EAGAIN;
    if (err == EINTR) continue;
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN)
      return recordError(ncclRemoteError, "connection closed by %s (%s) after sending %zu of %zu bytes", what,
                         errnoText(err).c_str(), done, size);
    if (err != EAGAIN && err != EWOULDBLOCK)
      return recordError(ncclSystemError, "send to %s failed: %s", what, errnoText(err).c_str());
    if (aborted(abortFlag)) return recordError(ncclInvalidUsage, "send to %s: aborted", what);
    if (dl.expired())
      return recordError(ncclRemoteError, "send to %s timed out after %.0f s (%zu of %zu bytes sent; is it stalled?)",
                         what, timeoutSec, done, size);
    pollfd pfd = {fd_, POLLOUT, 0};
    ::poll(&pfd, 1, dl.sliceMs());
  }
  return ncclSuccess;
}

ncclResult_t Socket::recvAll(void* data, size_t size, double timeoutSec, const std::atomic<uint32_t>* abortFlag,
                             const char* what) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  Deadline dl(timeoutSec);
  while (done < size) {
    ssize_t n = ::recv(fd_, p + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      return recordError(ncclRemoteError, "connection closed by %s after receiving %zu of %zu bytes", what, done, size);
    int err = errno;
    if (err == EINTR) continue;
    if (err == ECONNRESET || err == ENOTCONN)
      return recordError(ncclRemoteError, "connection closed by %s (%s) after receiving %zu of %zu bytes", what,
                         errnoText(err).c_str(), done, size);
    if (err != EAGAIN && err != EWOULDBLOCK)
      return recordError(ncclSystemError, "recv from %s failed: %s", what, errnoText(err).c_str());
    if (aborted(abortFlag)) return recordError(ncclInvalidUsage, "receive from %s: aborted", what);
    if (dl.expired())
      return recordError(ncclRemoteError, "receive from %s timed out after %.0f s (%zu of %zu bytes received)", what,
                         timeoutSec, done, size);
    pollfd pfd = {fd_, POLLIN, 0};
    ::poll(&pfd, 1, dl.sliceMs());
  }
  return ncclSuccess;
}

}  // namespace braid
