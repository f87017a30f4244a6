// Point-to-point part of a host batch: Send/Recv, and AllToAll/Gather/Scatter built from them. All
// transfers of the batch progress together in one nonblocking loop, so any pairing order across ranks
// completes; transfers to the same peer and direction go in issue order over one connection.
#pragma once

#include <vector>

#include "algo/op_desc.h"
#include "core/wait.h"
#include "nccl.h"
#include "transport/conn_info.h"

namespace braid {

// `ops` holds only p2p-kind ops (Send, Recv, AllToAll, Gather, Scatter), in issue order.
ncclResult_t runHostP2p(ConnProvider* conns, const WaitContext* wait, int rank, int nranks,
                        const std::vector<const OpDesc*>& ops);

}  // namespace braid
