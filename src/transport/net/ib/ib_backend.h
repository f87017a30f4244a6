// The IB verbs backend of the NET transport (ib_backend.cc): reliable-connected queue pairs, credits as
// clear-to-send messages, messages as RDMA writes with immediate data. Chosen by selectNetBackend where a usable
// port exists.
#pragma once

#include <string>

#include "transport/net/net_backend.h"

namespace braid {

// The backend, or null with *why (no verbs library, no active port NCCL_IB_HCA allows, a build without verbs.h).
// Discovery runs once per process.
NetBackend* ibNetBackend(std::string* why);

}  // namespace braid
