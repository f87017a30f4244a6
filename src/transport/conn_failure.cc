// The recorded reasons of broken connections (conn_failure.h), keyed by the connection's errorFlag.
#include "transport/conn_failure.h"

#include <map>
#include <mutex>
#include <utility>

#include "core/result.h"

namespace braid {
namespace {

std::mutex gMu;
std::map<const uint32_t*, std::pair<ncclResult_t, std::string>>& failures() {
  static auto* m = new std::map<const uint32_t*, std::pair<ncclResult_t, std::string>>;  // outlives static teardown
  return *m;
}

}  // namespace

void setConnFailure(const uint32_t* errorFlag, ncclResult_t code, const std::string& why) {
  if (!errorFlag) return;
  std::lock_guard<std::mutex> lk(gMu);
  failures().emplace(errorFlag, std::make_pair(code, why));  // the first reason stays
}

void clearConnFailure(const uint32_t* errorFlag) {
  std::lock_guard<std::mutex> lk(gMu);
  failures().erase(errorFlag);
}

std::string connFailure(const uint32_t* errorFlag, ncclResult_t* code) {
  std::lock_guard<std::mutex> lk(gMu);
  auto it = failures().find(errorFlag);
  if (it == failures().end()) return "";
  if (code) *code = it->second.first;
  return it->second.second;
}

ncclResult_t addConnFailure(ncclResult_t deadPeer, const uint32_t* errorFlag, int peer) {
  if (deadPeer == ncclSuccess) return deadPeer;
  const std::string why = connFailure(errorFlag, nullptr);
  if (why.empty()) return deadPeer;
  const std::string inner = pendingError();
  clearPendingError();
  return recordError(deadPeer, "%s (the connection with rank %d had failed here: %s)", inner.c_str(), peer,
                     why.c_str());
}

}  // namespace braid
