// P2P transport internals (tests include this): device buffers between GPUs of one host, over NVLink or
// PCIe. The receiver of a connection allocates the FIFO (a 4 KiB control page with tail and sizes[], then
// nSteps slots) in its own device memory, so the receiver polls tail locally; the sender allocates the
// head counter in its device memory, so the sender polls credits locally. Same process: the peer's
// pointers are used directly after cudaDeviceEnablePeerAccess; other processes: CUDA IPC handles.
#pragma once

#include <cstdint>

#include "transport/transport.h"

namespace braid {

// Control page of a P2P FIFO / head page (device memory).
constexpr size_t kP2pCtrlBytes = 4096;
constexpr size_t kP2pTailOffset = 0;
constexpr size_t kP2pSizesOffset = 256;
constexpr size_t kP2pHeadOffset = 0;

// "dddd:bb:dd.0" <-> PeerInfo::busId ((domain << 16) | (bus << 8) | device).
int64_t p2pBusIdFromString(const char* s);
void p2pBusIdToString(int64_t busId, char* out, size_t size);

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
