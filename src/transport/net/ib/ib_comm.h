// One side of an IB connection (ib_comm.cc): its queue pairs on one completion queue, the credits and the RDMA
// writes that carry the proxy's messages, and the failures that end it. ib_backend.cc sets connections up; the
// setup messages below travel over the socket whose address the receiver's handle carries.
#pragma once

#include <cstdint>
#include <memory>

#include "core/socket.h"
#include "nccl.h"
#include "transport/net/ib/ib_devices.h"
#include "transport/net/net_backend.h"

namespace braid {

#if BRAID_HAVE_IBVERBS

constexpr uint64_t kIbSetupMagic = 0x4272616964494231;  // "BraidIB1"
constexpr int kIbMaxQps = 16;                           // queue pairs of one connection

// One side's queue pairs as the other needs them to connect.
struct IbQpInfo {
  uint32_t nQps;
  uint32_t mtu;
  uint16_t lid;
  uint8_t roce;
  uint8_t reserved;
  uint32_t qpn[kIbMaxQps];
  uint8_t gid[16];
  uint64_t headerAddr;  // receiver: its header slots
  uint32_t headerRkey;
  uint32_t reserved2;
};

// The sender's first message on the setup socket.
struct IbPreamble {
  uint64_t magic;
  uint64_t nonce;
  NetConnIdent ident;
  IbQpInfo qp;
};

// The receiver's answer; then the sender confirms with kIbSetupMagic (8 bytes).
struct IbReply {
  uint64_t magic;
  int32_t status;  // 0: connected; else the receiver refused (reason[])
  uint32_t reserved;
  IbQpInfo qp;
  char reason[128];
};

// The sending side of a connection: created in INIT with its clear-to-send receives posted, then started on the
// setup socket that carried its preamble; progress reads the receiver's IbReply, connects and confirms.
class IbSendConn : public NetSendComm {
 public:
  static ncclResult_t create(const IbPort* port, int peer, int nQps, std::unique_ptr<IbSendConn>* out);
  virtual void describe(IbQpInfo* info) const = 0;
  virtual void start(Socket s, uint32_t nQps) = 0;
};

// The receiving side: created in INIT with a receive per possible message posted on each queue pair, connected to
// the sender's queue pairs, then started on the setup socket; no clear-to-send leaves before the sender confirms.
class IbRecvConn : public NetRecvComm {
 public:
  static ncclResult_t create(const IbPort* port, int peer, int nQps, std::unique_ptr<IbRecvConn>* out);
  virtual void describe(IbQpInfo* info) const = 0;  // with its header slots
  virtual ncclResult_t connect(const IbQpInfo& remote) = 0;
  virtual void start(Socket s) = 0;
};

#endif  // BRAID_HAVE_IBVERBS

}  // namespace braid
