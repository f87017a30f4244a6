// P2P transport internals (tests include this): device buffers between GPUs of one host, over NVLink or
// PCIe. Each side allocates a 4 KiB control page in its own device memory holding the counter it polls:
// the receiver tail and sizes[], the sender head. The FIFO's nSteps slots follow the receiver's page
// (write mode: the sender's stores cross the link) or the sender's (read mode: the receiver's loads
// cross it; NCCL_P2P_READ_ENABLE). Same process: the peer's pointers are used directly after
// cudaDeviceEnablePeerAccess; other processes: CUDA IPC handles.
#pragma once

#include <cstdint>

#include "transport/p2p/nvlink.h"
#include "transport/transport.h"

namespace braid {

// Control page of a P2P FIFO / head page (device memory).
constexpr size_t kP2pCtrlBytes = 4096;
constexpr size_t kP2pTailOffset = 0;
constexpr size_t kP2pSizesOffset = 256;
constexpr size_t kP2pHeadOffset = 0;
// The LL slots (ll_protocol.h) follow the receiver's control page and SIMPLE FIFO, whatever the SIMPLE mode:
// the receiver polls them, so they live in its memory. 8 slots of 64 KiB (32 KiB of data each).
constexpr uint32_t kP2pLlSlotBytes = 64 << 10;

// The LL128 slots (ll128_protocol.h) follow the LL slots: 8 slots of 128 KiB (120 KiB of data each), only
// where the two GPUs share an NVLink (p2pNvlinkBetween): 1 MiB per receiving connection.
constexpr uint32_t kP2pLl128SlotBytes = 128 << 10;


// The mode when NCCL_P2P_READ_ENABLE is unset (-2); both ranks of a connection must agree.
constexpr bool kP2pReadDefault = false;
bool p2pReadMode(const PeerInfo& me, const PeerInfo& peer);


class P2pTransport final : public Transport {
 public:
  const char* name() const override { return "P2P"; }
  TransportKind kind() const override { return TransportKind::P2p; }
  // Same host, both GPU ranks on different GPUs, peer access possible (cudaDeviceCanAccessPeer), and
  // neither NCCL_P2P_DISABLE=1 nor NCCL_P2P_LEVEL=LOC.
  bool canConnect(const PeerInfo& me, const PeerInfo& peer) const override;
  ncclResult_t setup(Direction dir, const PeerInfo& me, const PeerInfo& peer, int channel, size_t buffBytes,
                     Connector* conn, ConnectHandle* myHandle) override;
  ncclResult_t connect(Direction dir, const ConnectHandle& peerHandle, Connector* conn) override;
};

Transport* p2pTransport();

}  // namespace braid
