// Bootstrap authentication primitives: the keyed hash (SipHash-2-4) behind every challenge answer, random
// keys and nonces, the NCCL_COMM_ID key derivation, and the challenge a listener sends on accept. The
// protocol itself is described in bootstrap_internal.h.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_internal.h"
#include "core/result.h"

namespace braid {
namespace {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline uint64_t load64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// SipHash-2-4 (Aumasson and Bernstein), a keyed hash designed as a MAC for short messages.
uint64_t sipHash24(const uint8_t key[16], const uint8_t* in, size_t len) {
  const uint64_t k0 = load64(key), k1 = load64(key + 8);
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  auto round = [&] {
    v0 += v1, v1 = rotl(v1, 13), v1 ^= v0, v0 = rotl(v0, 32);
    v2 += v3, v3 = rotl(v3, 16), v3 ^= v2;
    v0 += v3, v3 = rotl(v3, 21), v3 ^= v0;
    v2 += v1, v1 = rotl(v1, 17), v1 ^= v2, v2 = rotl(v2, 32);
  };
  const size_t whole = len - len % 8;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m = load64(in + i);
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t b = static_cast<uint64_t>(len) << 56;
  for (size_t i = 0; i < len % 8; ++i) b |= static_cast<uint64_t>(in[whole + i]) << (8 * i);
  v3 ^= b;
  round();
  round();
  v0 ^= b;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

void append(std::vector<uint8_t>* buf, const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  buf->insert(buf->end(), b, b + n);
}

}  // namespace

uint64_t bootstrapMac(const uint8_t key[kBootstrapKeyBytes], AuthPurpose purpose, uint64_t listenerNonce,
                      uint64_t connectorNonce, const void* data, size_t len) {
  std::vector<uint8_t> buf;
  buf.reserve(24 + len);
  uint64_t p = purpose;
  append(&buf, &p, sizeof(p));
  append(&buf, &listenerNonce, sizeof(listenerNonce));
  append(&buf, &connectorNonce, sizeof(connectorNonce));
  if (len) append(&buf, data, len);
  return sipHash24(key, buf.data(), buf.size());
}

uint64_t peerHelloMac(const uint8_t key[kBootstrapKeyBytes], uint64_t listenerNonce, const PeerPreamble& p) {
  int32_t ranks[2] = {p.srcRank, p.dstRank};
  return bootstrapMac(key, kAuthPeerHello, listenerNonce, p.nonce, ranks, sizeof(ranks));
}

uint64_t peerAckMac(const uint8_t key[kBootstrapKeyBytes], uint64_t listenerNonce, const PeerPreamble& p) {
  int32_t ranks[2] = {p.srcRank, p.dstRank};
  return bootstrapMac(key, kAuthPeerAck, listenerNonce, p.nonce, ranks, sizeof(ranks));
}

uint64_t rootFrameMac(const uint8_t key[kBootstrapKeyBytes], AuthPurpose purpose, uint64_t rootNonce,
                      uint64_t rankNonce, const RootFrameHeader& h, const void* payload, size_t len) {
  std::vector<uint8_t> buf;
  buf.reserve(sizeof(h) + len);
  RootFrameHeader z = h;
  z.mac = 0;
  append(&buf, &z, sizeof(z));
  if (len) append(&buf, payload, len);
  return bootstrapMac(key, purpose, rootNonce, rankNonce, buf.data(), buf.size());
}

bool macEqual(uint64_t a, uint64_t b) {
  volatile uint64_t d = a ^ b;
  return d == 0;
}

ncclResult_t bootstrapRandomBytes(void* out, size_t len) {
  uint8_t* p = static_cast<uint8_t*>(out);
  size_t done = 0;
  while (done < len) {
    ssize_t n = getrandom(p + done, len - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (done == len) return ncclSuccess;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return recordError(ncclSystemError,
                       "cannot get random bytes for the bootstrap key: getrandom and /dev/urandom failed (%s)",
                       strerror(err));
  }
  while (done < len) {
    ssize_t n = ::read(fd, p + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      return recordError(ncclSystemError, "cannot read /dev/urandom for the bootstrap key: %s", strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return ncclSuccess;
}

uint64_t bootstrapNonce() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == static_cast<ssize_t>(sizeof(v))) return v;
  // Not secret, only fresh: a replayed proof must not match.
  static std::atomic<uint64_t> counter{0};
  const uint8_t salt[16] = {'b', 'r', 'a', 'i', 'd', '-', 'n', 'o', 'n', 'c', 'e'};
  uint64_t in[3] = {static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()),
                    counter.fetch_add(1), static_cast<uint64_t>(getpid())};
  return sipHash24(salt, reinterpret_cast<const uint8_t*>(in), sizeof(in));
}

bool sendChallenge(int fd, uint64_t magic, uint64_t nonce) {
  AuthChallenge c{magic, nonce};
  return ::send(fd, &c, sizeof(c), MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(c));
}

bool isLocalResourceErrno(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }

void commIdKey(const SockAddr& root, const std::string& jobSecret, uint8_t key[kBootstrapKeyBytes]) {
  // A fixed salt as the SipHash key: this is a derivation both ends repeat, not a secret of its own. The root's
  // address as parsed, not the NCCL_COMM_ID text: ranks may spell one address differently (a host name or its
  // IP, "[::1]" or "[0::1]").
  const uint8_t salt[16] = {'B', 'r', 'a', 'i', 'd', 'C', 'o', 'm', 'm', 'I', 'd', 'K', 'e', 'y', '0', '1'};
  const WireAddr w = toWireAddr(root);
  std::string in(reinterpret_cast<const char*>(w.bytes), w.len);
  in.push_back('\0');
  in += jobSecret;
  for (int half = 0; half < 2; ++half) {
    std::string h = in;
    h.push_back(static_cast<char>(half));
    uint64_t v = sipHash24(salt, reinterpret_cast<const uint8_t*>(h.data()), h.size());
    memcpy(key + 8 * half, &v, 8);
  }
}

uint64_t bootstrapCommHash(const UniqueIdData& id) { return bootstrapMac(id.key, kAuthCommHash, 0, 0, nullptr, 0); }

}  // namespace braid
