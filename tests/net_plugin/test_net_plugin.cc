// A network plugin for the tests (libnccl-net-braidtest-vN.so, N = BRAID_TEST_NET_VERSION: 8, 9 or 10), exporting
// ncclNetPlugin_vN as NCCL's plugin headers lay it out (src/transport/net/net_plugin_abi.h). It moves messages over TCP
// and holds its caller to the plugin contract the way strict plugins do: connect() and accept() come back empty at
// least once, at most kMaxReqs requests per comm are taken (more get a null request), every buffer must lie in a
// registration of that comm, a receive's tag must be the send's, a receive too small for its message fails, and a
// request is tested only until it is done and only once every older request of its comm is (NCCL's order), and v10's
// profiler callback and handles are used as NCCL's own plugins use them (unchecked). Breaking a rule fails the call
// with ncclInternalError and a warning.
//   BRAID_TEST_NET_DEVICES   devices it reports (default 1)
//   BRAID_TEST_NET_FAIL_INIT 1: init fails (a plugin that loads but cannot serve)
//   BRAID_TEST_NET_STRICT_CLOSE 1: closing a comm with requests outstanding fails with a warning, as AWS OFI's does
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <type_traits>

#include "transport/net/net_plugin_abi.h"

using namespace braid::netabi;

namespace {

constexpr int kMaxReqs = 8;
constexpr uint32_t kHandleMagic = 0x54455354;  // "TEST"
constexpr int kLogWarn = 2, kLogInfo = 3;
constexpr unsigned long kSubNet = 16;

DebugLogger logger = nullptr;
ProfilerCallback profiler = nullptr;  // v10
#define TLOG(level, ...) \
  if (logger) logger(level, kSubNet, __FILE__, __LINE__, __VA_ARGS__)

struct Handle {
  uint32_t magic;
  sockaddr_in addr;
};
static_assert(sizeof(Handle) <= kHandleMaxSize, "handle fits");

struct Mr {
  void* comm;
  char* base;
  size_t size;
};

struct WireHdr {
  uint32_t size;
  int32_t tag;
};

struct Comm;
struct Req {
  Comm* comm = nullptr;
  bool send = false;
  bool done = false;
  char* data = nullptr;
  size_t size = 0;  // send: the message; receive: the room
  int tag = 0;
  WireHdr hdr{};
  size_t hdrMoved = 0, dataMoved = 0;
};

struct Comm {
  int fd = -1;
  bool send = false;
  bool connectReturnedEmpty = false;
  bool failed = false;
  std::deque<Req*> queue;   // in posting order; the head moves first
  std::deque<Req*> handed;  // handed out and not yet reported done, in posting order
  int live = 0;
};

struct Listen {
  int fd = -1;
  int acceptsEmpty = 0;
};

int envInt(const char* name, int def) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : def;
}

ncclResult_t violation(const char* what) {
  TLOG(kLogWarn, "BraidTest: contract broken: %s", what);
  return ncclInternalError;
}

// The first IPv4 address of an interface that is up and not loopback (a network namespace's veth), else loopback.
in_addr localAddress() {
  in_addr best{htonl(INADDR_LOOPBACK)};
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return best;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
      continue;
    best = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
    break;
  }
  freeifaddrs(ifs);
  return best;
}

void nonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Moves bytes of the queue's head requests while the socket takes or gives them; false where the connection broke.
bool progress(Comm* c) {
  while (!c->failed && !c->queue.empty()) {
    Req* r = c->queue.front();
    char* hdr = reinterpret_cast<char*>(&r->hdr);
    if (r->hdrMoved < sizeof(WireHdr)) {
      const ssize_t n = c->send ? ::send(c->fd, hdr + r->hdrMoved, sizeof(WireHdr) - r->hdrMoved, MSG_NOSIGNAL)
                                : ::recv(c->fd, hdr + r->hdrMoved, sizeof(WireHdr) - r->hdrMoved, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
      if (n <= 0) {
        c->failed = true;  // the peer closing between messages is how connections end: no warning for that
        TLOG(n == 0 && r->hdrMoved == 0 ? kLogInfo : kLogWarn, "BraidTest: connection lost (%s)",
             n == 0 ? "closed by the peer" : strerror(errno));
        return false;
      }
      r->hdrMoved += static_cast<size_t>(n);
      if (r->hdrMoved < sizeof(WireHdr)) return true;
      if (!c->send) {
        if (r->hdr.tag != r->tag || r->hdr.size > r->size) {
          c->failed = true;
          TLOG(kLogWarn, "BraidTest: %s (message tag %d, %u bytes; receive tag %d, room %zu)",
               r->hdr.tag != r->tag ? "tag mismatch" : "message truncated", r->hdr.tag, r->hdr.size, r->tag, r->size);
          return false;
        }
      }
    }
    const size_t total = c->send ? r->size : r->hdr.size;
    while (r->dataMoved < total) {
      const ssize_t n = c->send ? ::send(c->fd, r->data + r->dataMoved, total - r->dataMoved, MSG_NOSIGNAL)
                                : ::recv(c->fd, r->data + r->dataMoved, total - r->dataMoved, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
      if (n <= 0) {
        c->failed = true;
        TLOG(kLogWarn, "BraidTest: connection lost (%s)", n == 0 ? "closed by the peer" : strerror(errno));
        return false;
      }
      r->dataMoved += static_cast<size_t>(n);
    }
    r->done = true;
    c->queue.pop_front();
  }
  return !c->failed;
}

// ---- the calls, with v9/v10 widths ----

ncclResult_t tInit() {
  if (envInt("BRAID_TEST_NET_FAIL_INIT", 0) == 1) return ncclSystemError;
  TLOG(kLogInfo, "BraidTest: init, ncclNet_v%d, %d device(s)", BRAID_TEST_NET_VERSION,
       envInt("BRAID_TEST_NET_DEVICES", 1));
  return ncclSuccess;
}

ncclResult_t tDevices(int* n) {
  *n = envInt("BRAID_TEST_NET_DEVICES", 1);
  return ncclSuccess;
}

// v9's properties (v10 shares them) bound a message's size; NVIDIA NCCL refuses a device that leaves them at 0. Its
// largest allowed value (NCCL_MAX_NET_SIZE_BYTES): this plugin sends any size.
constexpr size_t kMaxNetBytes = size_t{1} << 40;
template <typename Props>
void setMaxBytes(Props* p) {
  if constexpr (std::is_same<Props, PropertiesV9>::value) {
    p->maxP2pBytes = kMaxNetBytes;
    p->maxCollBytes = kMaxNetBytes;
  }
}

template <typename Props>
ncclResult_t tProps(int dev, Props* p) {
  static char names[8][16];
  if (dev < 0 || dev >= 8) return violation("getProperties of a device that does not exist");
  snprintf(names[dev], sizeof(names[dev]), "braidtest%d", dev);
  std::memset(p, 0, sizeof(*p));
  p->name = names[dev];
  p->pciPath = nullptr;
  p->guid = static_cast<uint64_t>(dev);
  p->ptrSupport = kPtrHost;
  p->speed = 10000;
  p->maxComms = 1 << 16;
  p->maxRecvs = 1;
  setMaxBytes(p);
  return ncclSuccess;
}

ncclResult_t tListen(int dev, void* handle, void** lc) {
  int n = 0;
  tDevices(&n);
  if (dev < 0 || dev >= n) return violation("listen on a device that does not exist");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return ncclSystemError;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = localAddress();
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return ncclSystemError;
  }
  nonBlocking(fd);
  Handle h{kHandleMagic, a};
  std::memcpy(handle, &h, sizeof(h));
  auto* l = new Listen;
  l->fd = fd;
  *lc = l;
  return ncclSuccess;
}

ncclResult_t tConnect(int dev, void* handle, void** sc) {
  *sc = nullptr;
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic) return violation("connect to a handle this plugin did not make");
  // The handle's bytes after ours carry the comm being made between calls (NCCL's plugins keep such state in the
  // handle too).
  char* slot = static_cast<char*>(handle) + sizeof(Handle);
  Comm* c = nullptr;
  std::memcpy(&c, slot, sizeof(c));
  auto keep = [slot](Comm* v) { std::memcpy(slot, &v, sizeof(v)); };
  if (!c) {
    c = new Comm;
    c->send = true;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0) {
      delete c;
      return ncclSystemError;
    }
    nonBlocking(c->fd);
    if (::connect(c->fd, reinterpret_cast<sockaddr*>(&h.addr), sizeof(h.addr)) != 0 && errno != EINPROGRESS) {
      close(c->fd);
      delete c;
      return ncclSystemError;
    }
    keep(c);
    return ncclSuccess;  // always empty the first time
  }
  pollfd p{c->fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) return ncclSuccess;
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    TLOG(kLogWarn, "BraidTest: connect failed: %s", strerror(err));
    close(c->fd);
    delete c;
    keep(nullptr);
    return ncclSystemError;
  }
  keep(nullptr);
  *sc = c;
  return ncclSuccess;
}

ncclResult_t tAccept(void* lc, void** rc) {
  *rc = nullptr;
  auto* l = static_cast<Listen*>(lc);
  if (l->acceptsEmpty++ == 0) return ncclSuccess;  // always empty the first time
  const int fd = ::accept(l->fd, nullptr, nullptr);
  if (fd < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? ncclSuccess : ncclSystemError;
  nonBlocking(fd);
  auto* c = new Comm;
  c->fd = fd;
  *rc = c;
  return ncclSuccess;
}

ncclResult_t tRegMr(void* comm, void* data, size_t size, int type, void** mh) {
  if (type != kPtrHost) return violation("regMr of memory that is not host memory");
  *mh = new Mr{comm, static_cast<char*>(data), size};
  return ncclSuccess;
}

ncclResult_t tRegMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) {
  return violation("regMrDmaBuf, which this plugin does not offer");
}

ncclResult_t tDeregMr(void*, void* mh) {
  delete static_cast<Mr*>(mh);
  return ncclSuccess;
}

ncclResult_t post(void* comm, void* data, size_t size, int tag, void* mh, void** request, bool send) {
  *request = nullptr;
  auto* c = static_cast<Comm*>(comm);
  auto* m = static_cast<Mr*>(mh);
  if (c->send != send) return violation(send ? "isend on a receive comm" : "irecv on a send comm");
  if (!m || m->comm != comm) return violation("a buffer without a registration of this comm");
  char* p = static_cast<char*>(data);
  if (p < m->base || p + size > m->base + m->size) return violation("a buffer outside its registration");
  if (c->failed) return ncclSystemError;
  if (c->live >= kMaxReqs) return ncclSuccess;  // no room: the caller posts again later
  auto* r = new Req;
  r->comm = c;
  r->send = send;
  r->data = p;
  r->size = size;
  r->tag = tag;
  if (send) r->hdr = WireHdr{static_cast<uint32_t>(size), tag};
  c->queue.push_back(r);
  c->handed.push_back(r);
  ++c->live;
  *request = r;
  return progress(c) ? ncclSuccess : ncclSystemError;
}

ncclResult_t tIsend(void* sc, void* data, size_t size, int tag, void* mh, void** req) {
  return post(sc, data, size, tag, mh, req, true);
}

ncclResult_t tIrecv(void* rc, int n, void** data, size_t* sizes, int* tags, void** mhs, void** req) {
  if (n != 1) return violation("a grouped receive (maxRecvs is 1)");
  return post(rc, data[0], sizes[0], tags[0], mhs[0], req, false);
}

ncclResult_t tIflush(void*, int, void**, int*, void**, void** req) {
  *req = nullptr;
  return violation("iflush of host memory");
}

ncclResult_t tTest(void* request, int* done, int* size) {
  auto* r = static_cast<Req*>(request);
  if (!r || !r->comm) return violation("test of a request that was not handed out or is done");
  if (r->comm->handed.front() != r) return violation("test of a request before an older one of its comm is done");
  if (!r->done && !progress(r->comm)) return ncclSystemError;
  *done = r->done ? 1 : 0;
  if (r->done) {
    if (size) *size = static_cast<int>(r->send ? r->size : r->hdr.size);
    --r->comm->live;
    r->comm->handed.pop_front();
    r->comm = nullptr;  // a later test of it is a violation (the memory is kept: tests are short)
  }
  return ncclSuccess;
}

ncclResult_t closeComm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  if (!c->handed.empty()) {
    const bool strict = envInt("BRAID_TEST_NET_STRICT_CLOSE", 0) == 1;
    TLOG(strict ? kLogWarn : kLogInfo, "BraidTest: %s comm closed with %zu request(s) outstanding",
         c->send ? "send" : "receive", c->handed.size());
    if (strict) return ncclInternalError;  // and the comm stays, as a plugin that refuses keeps it
  }
  if (c->fd >= 0) close(c->fd);
  delete c;  // requests still queued are dropped, as a closing connection drops them
  return ncclSuccess;
}

ncclResult_t tCloseListen(void* lc) {
  auto* l = static_cast<Listen*>(lc);
  close(l->fd);
  delete l;
  return ncclSuccess;
}

// ---- the exported table ----

#if BRAID_TEST_NET_VERSION == 8
ncclResult_t init8(DebugLogger log) {
  logger = log;
  return tInit();
}
ncclResult_t props8(int dev, PropertiesV8* p) { return tProps(dev, p); }
ncclResult_t connect8(int dev, void* h, void** sc, DeviceHandle**) { return tConnect(dev, h, sc); }
ncclResult_t accept8(void* lc, void** rc, DeviceHandle**) { return tAccept(lc, rc); }
ncclResult_t isend8(void* sc, void* data, int size, int tag, void* mh, void** req) {
  return tIsend(sc, data, static_cast<size_t>(size), tag, mh, req);
}
ncclResult_t irecv8(void* rc, int n, void** data, int* sizes, int* tags, void** mhs, void** req) {
  if (n != 1) return violation("a grouped receive (maxRecvs is 1)");
  size_t s = static_cast<size_t>(sizes[0]);
  return tIrecv(rc, 1, data, &s, tags, mhs, req);
}
#elif BRAID_TEST_NET_VERSION == 9
ncclResult_t init9(DebugLogger log) {
  logger = log;
  return tInit();
}
ncclResult_t props9(int dev, PropertiesV9* p) { return tProps(dev, p); }
ncclResult_t connect9(int dev, void* h, void** sc, DeviceHandle**) { return tConnect(dev, h, sc); }
ncclResult_t accept9(void* lc, void** rc, DeviceHandle**) { return tAccept(lc, rc); }
#else
ncclResult_t init10(DebugLogger log, ProfilerCallback prof) {
  logger = log;
  profiler = prof;
  if (!prof) return violation("init without a profiler callback (NCCL always gives one)");
  return tInit();
}
ncclResult_t props10(int dev, PropertiesV9* p) { return tProps(dev, p); }
ncclResult_t connect10(int dev, CommConfigV10* config, void* h, void** sc, DeviceHandle**) {
  if (!config) return violation("connect without a config (v10)");
  return tConnect(dev, h, sc);
}
ncclResult_t accept10(void* lc, void** rc, DeviceHandle**) { return tAccept(lc, rc); }
// As NCCL's IB code does: an event started through the profiler callback with the caller's handle (type 0), and
// stopped (type 1) where the callback made one: NVIDIA NCCL makes one only with a profiler plugin loaded, Braid never.
ncclResult_t profile(void* pHandle) {
  if (!pHandle) return violation("a null profiler handle");
  void* event = nullptr;
  const ncclResult_t r = profiler(&event, 0, pHandle, 0, nullptr);
  if (r != ncclSuccess || event == nullptr) return r;
  return profiler(&event, 1, nullptr, 0, nullptr);
}
ncclResult_t isend10(void* sc, void* data, size_t size, int tag, void* mh, void* pHandle, void** req) {
  const ncclResult_t r = profile(pHandle);
  return r != ncclSuccess ? r : tIsend(sc, data, size, tag, mh, req);
}
ncclResult_t irecv10(void* rc, int n, void** data, size_t* sizes, int* tags, void** mhs, void** pHandles, void** req) {
  const ncclResult_t r = profile(pHandles ? pHandles[0] : nullptr);
  return r != ncclSuccess ? r : tIrecv(rc, n, data, sizes, tags, mhs, req);
}
#endif

}  // namespace

extern "C" {
#if BRAID_TEST_NET_VERSION == 8
__attribute__((visibility("default"))) NetV8 ncclNetPlugin_v8 = {
    "BraidTest", init8,    tDevices,   props8,    tListen,   connect8,  accept8,      tRegMr, tRegMrDmaBuf, tDeregMr,
    isend8,      irecv8,   tIflush,    tTest,     closeComm, closeComm, tCloseListen, nullptr, nullptr};
#elif BRAID_TEST_NET_VERSION == 9
__attribute__((visibility("default"))) NetV9 ncclNetPlugin_v9 = {
    "BraidTest", init9,  tDevices, props9,    tListen,   connect9,     accept9, tRegMr,  tRegMrDmaBuf, tDeregMr,
    tIsend,      tIrecv, tIflush,  tTest,     closeComm, closeComm,    tCloseListen, nullptr, nullptr, nullptr};
#else
__attribute__((visibility("default"))) NetV10 ncclNetPlugin_v10 = {
    "BraidTest", init10,  tDevices, props10,   tListen,   connect10,    accept10, tRegMr,  tRegMrDmaBuf, tDeregMr,
    isend10,     irecv10, tIflush,  tTest,     closeComm, closeComm,    tCloseListen, nullptr, nullptr, nullptr};
#endif
}
