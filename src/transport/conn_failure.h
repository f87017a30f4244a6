// Why a transport marked a connection broken (its ConnInfo::errorFlag), for the error of the executor that finds the
// flag set: the NET proxy records the backend's own message (device, port, peer, what failed), so the error the
// application gets says more than "the transport reported an error". Forgotten when the connection is released.
#pragma once

#include <cstdint>
#include <string>

#include "nccl.h"

namespace braid {

void setConnFailure(const uint32_t* errorFlag, ncclResult_t code, const std::string& why);
void clearConnFailure(const uint32_t* errorFlag);
// The recorded reason, with its code in *code; "" (and *code untouched) where none was recorded.
std::string connFailure(const uint32_t* errorFlag, ncclResult_t* code);
// For an executor whose wait found errorFlag set: `deadPeer` (what checkPeersAlive returned) with the pending message
// extended by the recorded reason, if any: a peer that exited after its own failure is named as gone, and the
// failure this rank saw first is kept beside it. Returns deadPeer.
ncclResult_t addConnFailure(ncclResult_t deadPeer, const uint32_t* errorFlag, int peer);

}  // namespace braid
