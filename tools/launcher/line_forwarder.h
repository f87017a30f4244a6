// Forwards one rank's stdout or stderr pipe to braidrun's own, one whole line at a time with a "[r] "
// prefix, so lines of different ranks never interleave mid-line.
#pragma once

#include <string>

#include "unique_fd.h"

namespace braid {

class LineForwarder {
 public:
  LineForwarder(int rank, UniqueFd source, int destFd);

  int fd() const { return source_.get(); }
  bool open() const { return source_.valid(); }

  // Reads what is available (the source is nonblocking) and writes every complete line. At end of file,
  // writes the unterminated tail (with a newline added) and closes the source.
  void onReadable();
  // Reads whatever the pipe still holds without waiting, then flushes and closes: used once the rank is
  // gone, so a grandchild that keeps the pipe open cannot keep braidrun alive.
  void drainAndClose();

 private:
  void emitCompleteLines();
  void emitTail();
  void close();

  std::string prefix_;
  UniqueFd source_;
  int destFd_;
  std::string pending_;  // bytes after the last newline seen
};

// Writes all of `data` to `fd`, retrying short writes and EINTR. Errors (e.g. a closed terminal) are
// dropped: losing output must not stop braidrun from supervising the ranks.
void writeAll(int fd, const char* data, size_t size);

}  // namespace braid
