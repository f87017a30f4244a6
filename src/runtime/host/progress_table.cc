// ProgressTable: where each rank of a host communicator is, readable by the ranks of its host; see
// progress_table.h.
#include "runtime/host/progress_table.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/log.h"
#include "core/peer_info.h"
#include "core/result.h"
#include "runtime/comm.h"
#include "transport/shm/shm_internal.h"

namespace braid {
namespace {
// Word layout: seq in bits 16-63, "several ops" in bit 15, the collective in bits 8-14, the state in 0-7.
constexpr int kSeqShift = 16;
constexpr uint64_t kMultiBit = uint64_t{1} << 15;

const char* stateText(ProgressTable::State s) {
  switch (s) {
    case ProgressTable::kRunning:
      return "in progress";
    case ProgressTable::kDone:
      return "done";
    case ProgressTable::kFailed:
      return "failed";
    default:
      return "idle";
  }
}

std::string opText(const ProgressTable::Entry& e) {
  char buf[96];
  snprintf(buf, sizeof(buf), "#%llu %s%s", static_cast<unsigned long long>(e.seq), collName(e.coll),
           e.multi ? " (group)" : "");
  return buf;
}

// "rank 2" or "ranks 0-1,3".
std::string rankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    char buf[32];
    if (j == i)
      snprintf(buf, sizeof(buf), "%s%d", i ? "," : "", ranks[i]);
    else
      snprintf(buf, sizeof(buf), "%s%d-%d", i ? "," : "", ranks[i], ranks[j]);
    out += buf;
    i = j + 1;
  }
  return out;
}

// True when /proc/<pid>/stat shows a stopped task (SIGSTOP, SIGTSTP) or one stopped by a tracer.
bool processStopped(int pid) {
  if (pid <= 0) return false;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return false;
  char buf[512];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* close = strrchr(buf, ')');  // the command name may hold spaces and parentheses
  if (!close || close[1] != ' ') return false;
  return close[2] == 'T' || close[2] == 't';
}
}  // namespace

uint64_t ProgressTable::pack(const Entry& e) {
  return (e.seq << kSeqShift) | (e.multi ? kMultiBit : 0) | (static_cast<uint64_t>(e.coll) & 0x7f) << 8 |
         static_cast<uint64_t>(e.state & 0xff);
}

ProgressTable::Entry ProgressTable::unpack(uint64_t w) {
  Entry e;
  e.seq = w >> kSeqShift;
  e.multi = (w & kMultiBit) != 0;
  e.coll = static_cast<CollType>((w >> 8) & 0x7f);
  e.state = static_cast<State>(w & 0xff);
  return e;
}

ProgressTable::ProgressTable(int rank, int nranks, std::atomic<uint64_t>* words, std::vector<uint8_t> observable,
                             std::vector<int> pids, std::shared_ptr<void> keepAlive)
    : rank_(rank),
      nranks_(nranks),
      words_(words),
      observable_(std::move(observable)),
      pids_(std::move(pids)),
      keepAlive_(std::move(keepAlive)) {}

void ProgressTable::begin(CollType coll, bool multi) {
  cur_.seq = ++seq_;
  cur_.coll = coll;
  cur_.multi = multi;
  cur_.state = kRunning;
  word(rank_).store(pack(cur_), std::memory_order_release);
}

bool ProgressTable::failedOwnOp(int r) const {
  return r >= 0 && r < nranks_ && observable_[static_cast<size_t>(r)] && read(r).state == kFailed;
}

void ProgressTable::end(bool ok) {
  cur_.state = ok ? kDone : kFailed;
  word(rank_).store(pack(cur_), std::memory_order_release);
}

ProgressTable::Entry ProgressTable::read(int r) const { return unpack(word(r).load(std::memory_order_acquire)); }

std::string ProgressTable::describe() const {
  const Entry me = read(rank_);
  std::vector<int> behind, inside, stopped;  // behind: between calls; inside: still in an earlier one
  // Each distinct last operation with the ranks at it, in order of first appearance.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  auto addTo = [&](const std::string& text, int r) {
    for (auto& g : groups)
      if (g.first == text) {
        g.second.push_back(r);
        return;
      }
    groups.push_back({text, {r}});
  };
  for (int r = 0; r < nranks_; ++r) {
    if (!observable_[r]) {
      addTo("not observable from this host", r);
      continue;
    }
    const Entry e = read(r);
    if (r != rank_ && e.seq < me.seq) (e.state == kRunning ? inside : behind).push_back(r);
    if (r != rank_ && r < static_cast<int>(pids_.size()) && processStopped(pids_[r])) stopped.push_back(r);
    addTo(e.seq == 0 ? std::string("no operation yet") : opText(e) + " " + stateText(e.state), r);
  }
  std::string out;
  // A rank between calls behind this one is where to look; ranks still inside an earlier operation are most
  // likely waiting on it (over sockets its last sends may sit unsent in its stopped proxy thread).
  if (!behind.empty())
    out += rankList(behind) + " did not reach this rank's operation " + opText(me) + " and " +
           (behind.size() == 1 ? "is" : "are") + " in no call of this communicator (stalled, or busy elsewhere); ";
  if (!inside.empty())
    out += rankList(inside) + (inside.size() == 1 ? " is" : " are") + " still inside an earlier operation; ";
  if (behind.empty() && inside.empty() && me.seq > 0) out += "every observable rank reached " + opText(me) + "; ";
  if (!stopped.empty()) {
    char buf[64];
    std::string pids;
    for (int r : stopped) {
      snprintf(buf, sizeof(buf), "%s%d", pids.empty() ? "" : ",", pids_[r]);
      pids += buf;
    }
    out += rankList(stopped) + " (pid " + pids + ") " + (stopped.size() == 1 ? "is" : "are") +
           " stopped (SIGSTOP or a debugger); ";
  }
  out += "last operation of each rank: ";
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i) out += "; ";
    out += rankList(groups[i].second) + ": " + groups[i].first;
  }
  return out;
}

ncclResult_t setupProgressTable(ncclComm* comm) {
  const int nranks = comm->nranks;
  const int rank = comm->rank;
  if (nranks < 2) return ncclSuccess;
  int leader = rank;
  for (int r = 0; r < nranks; ++r)
    if (sameShmDomain(comm->self, comm->peers[r])) {
      leader = r;
      break;
    }
  const size_t bytes = std::max<size_t>(4096, (nranks * ProgressTable::kSlotBytes + 4095) / 4096 * 4096);
  struct Name {
    char s[96];
  };
  std::vector<Name> names(nranks);
  memset(names.data(), 0, names.size() * sizeof(Name));
  auto seg = std::make_shared<ShmSegment>();
  auto warnWithout = [&](const char* what) {
    BRAID_WARN("rank %d: %s the progress table (%s); a timeout will name only the peer it waited on", rank, what,
               pendingError().c_str());
    clearPendingError();
    seg->reset();
  };
  if (leader == rank) {
    if (ShmSegment::create(bytes, rank, seg.get()) == ncclSuccess) {
      snprintf(names[rank].s, sizeof(names[rank].s), "%s", seg->name().c_str());
    } else {
      warnWithout("cannot create");
    }
  }
  // If the creator dies before the barrier, its name would outlive it: remove what it left.
  auto sweep = [&](ncclResult_t res) {
    const PeerInfo& lp = comm->peers[leader];
    if (res != ncclSuccess && leader != rank && !peerProcessAlive(comm->self, lp)) unlinkSegmentsOf(lp.pid);
    return res;
  };
  BRAID_CHECK(sweep(comm->bootstrap->allGather(names.data(), sizeof(Name))));
  names[leader].s[sizeof(names[leader].s) - 1] = 0;
  if (leader != rank && names[leader].s[0] != 0) {
    if (ShmSegment::open(names[leader].s, bytes, leader, seg.get()) != ncclSuccess) warnWithout("cannot map");
  }
  BRAID_CHECK(sweep(comm->bootstrap->barrier()));
  if (seg->base() == nullptr) return ncclSuccess;
  if (leader == rank) seg->unlink();  // every local rank has it mapped (or gave up): nothing left to leak

  std::vector<uint8_t> observable(nranks);
  std::vector<int> pids(nranks, 0);
  for (int r = 0; r < nranks; ++r) {
    const PeerInfo& p = comm->peers[r];
    observable[r] = sameShmDomain(comm->self, p) ? 1 : 0;
    if (observable[r] && p.pidNsHash == comm->self.pidNsHash) pids[r] = p.pid;
  }
  auto* words = static_cast<std::atomic<uint64_t>*>(seg->base());
  comm->progress = std::make_unique<ProgressTable>(rank, nranks, words, std::move(observable), std::move(pids),
                                                   std::static_pointer_cast<void>(seg));
  comm->wait.stall = comm->progress.get();
  return ncclSuccess;
}

}  // namespace braid
