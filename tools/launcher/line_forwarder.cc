// Line-by-line forwarding of a rank's output with a rank prefix (see line_forwarder.h).
#include "line_forwarder.h"

#include <cerrno>

namespace braid {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
// A "line" longer than this is passed on in pieces rather than buffered without bound.
constexpr size_t kMaxPending = 1 << 20;

}  // namespace

void writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

LineForwarder::LineForwarder(int rank, UniqueFd source, int destFd)
    : prefix_("[" + std::to_string(rank) + "] "), source_(std::move(source)), destFd_(destFd) {}

void LineForwarder::onReadable() {
  char buf[kReadChunk];
  for (;;) {
    ssize_t n = ::read(source_.get(), buf, sizeof(buf));
    if (n > 0) {
      pending_.append(buf, static_cast<size_t>(n));
      emitCompleteLines();
      // One read per wake-up keeps one chatty rank from starving the others' pipes.
      return;
    }
    if (n == 0) {
      close();
      return;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) close();
    return;
  }
}

void LineForwarder::drainAndClose() {
  char buf[kReadChunk];
  while (source_.valid()) {
    ssize_t n = ::read(source_.get(), buf, sizeof(buf));
    if (n > 0) {
      pending_.append(buf, static_cast<size_t>(n));
      emitCompleteLines();
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EOF, nothing left for now (EAGAIN), or an error: in every case we are done
    }
  }
  close();
}

void LineForwarder::emitCompleteLines() {
  size_t last = pending_.rfind('\n');
  if (last == std::string::npos) {
    if (pending_.size() >= kMaxPending) emitTail();
    return;
  }
  // All complete lines of this chunk go out in one write, each with its prefix.
  std::string out;
  out.reserve(last + 1 + prefix_.size() * 8);
  size_t start = 0;
  while (start <= last) {
    size_t nl = pending_.find('\n', start);
    out += prefix_;
    out.append(pending_, start, nl - start + 1);
    start = nl + 1;
  }
  pending_.erase(0, last + 1);
  writeAll(destFd_, out.data(), out.size());
}

void LineForwarder::emitTail() {
  if (pending_.empty()) return;
  std::string out = prefix_ + pending_ + "\n";
  pending_.clear();
  writeAll(destFd_, out.data(), out.size());
}

void LineForwarder::close() {
  emitTail();
  source_.reset();
}

}  // namespace braid
