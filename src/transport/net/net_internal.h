// NET transport internals (tests include this). The NET transport connects peers through a NetBackend
// (sockets today) driven by the communicator's NetProxy thread; each side's ConnInfo points at a
// process-local FIFO (host_fifo.h) that the proxy fills (receiver) or drains (sender).
#pragma once

#include "transport/net/net_backend.h"
#include "transport/transport.h"

namespace braid {

class NetTransport final : public Transport {
 public:
  const char* name() const override { return "NET"; }
  TransportKind kind() const override { return TransportKind::Net; }
  // Always possible; SHM comes first in hostTransports() where it applies.
  bool canConnect(const PeerInfo& me, const PeerInfo& peer) const override { return true; }
  ncclResult_t setup(Direction dir, const PeerInfo& me, const PeerInfo& peer, int channel, size_t buffBytes,
                     Connector* conn, ConnectHandle* myHandle) override;
  ncclResult_t connect(Direction dir, const ConnectHandle& peerHandle, Connector* conn) override;
};

Transport* netTransport();

}  // namespace braid
