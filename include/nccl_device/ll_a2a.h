/* Braid device API: ncclLLA2ASession, the low-latency all-to-all (LL A2A): small messages between the ranks of a team
 * inside the LSA team, written straight into peers' slots with a flag beside every 4 bytes of data.
 *
 * Each block of the resource buffer (ncclLLA2ACreateRequirement: nBlocks * (1 + 2*nSlots) lines of 16 bytes)
 * holds one line whose first word carries the epoch from one ncclLLA2ASession to the next, then two banks of
 * nSlots lines; epoch e uses bank e&1, so a peer already in the next epoch never overwrites slots still being
 * read. A line carries 8 payload bytes as {lo, epoch, hi, epoch}; a value larger than 8 bytes takes several lines
 * `pitch` (the ncclLLA2ASession's maxElts) apart. Epochs are never 0, so zeroed memory never reads as data, and
 * two consecutive epochs never share a bank, wrapping included. */
#ifndef NCCL_DEVICE_LL_A2A_H_
#define NCCL_DEVICE_LL_A2A_H_

#include <string.h>

#include "core.h"

#if defined(__CUDACC__)
template <typename Coop>
struct ncclLLA2ASession {
  Coop coop;
  ncclDevComm const& comm;
  ncclTeam team;
  ncclLLA2AHandle handle;
  int block;
  int pitch;
  bool multimem;
  ncclMultimemHandle mmHandle;
  uint32_t epoch;
  uint32_t slotsOffset;  // lines from the start of the resource buffer to this epoch's bank

  NCCL_DEVICE_INLINE ncclLLA2ASession(Coop c, ncclDevComm const& devComm, ncclTeam tm, ncclLLA2AHandle h,
                                      uint32_t blockIndex, int maxElts, bool useMultimem = false,
                                      ncclMultimemHandle mm = {})
      : coop(c),
        comm(devComm),
        team(tm),
        handle(h),
        block(int(blockIndex)),
        pitch(maxElts),
        multimem(useMultimem),
        mmHandle(mm),
        epoch(0),
        slotsOffset(0) {
    if (multimem) braidDeviceApiTrap("ncclLLA2ASession: multicast (NVLink SHARP) is not supported by Braid");
    epoch = localLines()[blockBase()].x + 1;  // saved as epoch-1: a zeroed buffer starts at epoch 1
    slotsOffset = bankOffset();
  }

  NCCL_DEVICE_INLINE ~ncclLLA2ASession() {
    if (coop.thread_rank() == 0) localLines()[blockBase()].x = epoch - 1;
    coop.sync();
  }

  ncclLLA2ASession(ncclLLA2ASession const&) = delete;

  /* Put `data` into slot `slot` of team rank `peer`. */
  template <typename T>
  NCCL_DEVICE_INLINE void send(int peer, int slot, T data) {
    uint4* lines = static_cast<uint4*>(ncclGetResourceBufferPeerPointer(comm, handle.bufHandle, team, peer));
    storeValue(lines + slotsOffset + slot, data);
  }

  /* Put `data` into slot `slot` of every rank of the team, this one included. */
  template <typename T>
  NCCL_DEVICE_INLINE void bcast(int slot, T data) {
    int peer = team.rank;  // start with self, then go round: ranks do not all hit rank 0 first
    for (int n = 0; n < team.nRanks; n++) {
      send(peer, slot, data);
      peer = peer + 1 == team.nRanks ? 0 : peer + 1;
    }
  }

  /* Wait for, then return, this epoch's value in slot `slot` of this rank. */
  template <typename T>
  NCCL_DEVICE_INLINE T recv(int slot) {
    T out[1];
    this->template recvUnrolled<1, 1>(slot, 1, 0, out);
    return out[0];
  }

  /* Receive eltCount (MinEltCount <= eltCount <= MaxEltCount) values from slots eltStart + i*eltStride, all
   * loads of one polling round in flight together. */
  template <int MinEltCount, int MaxEltCount, typename T>
  NCCL_DEVICE_INLINE void recvUnrolled(int eltStart, int eltCount, int eltStride, T (&vals)[MaxEltCount]) {
    constexpr int kLines = int((sizeof(T) + 7) / 8);
    uint4* base = localLines() + slotsOffset + eltStart;
    uint4 got[MaxEltCount][kLines];
    bool ready;
    do {
      ready = true;
#pragma unroll
      for (int e = 0; e < MaxEltCount; e++) {
        if (e >= MinEltCount && e >= eltCount) continue;
#pragma unroll
        for (int l = 0; l < kLines; l++) {
          got[e][l] = loadLine(base + e * eltStride + l * pitch);
          ready = ready && got[e][l].y == epoch && got[e][l].w == epoch;
        }
      }
    } while (!ready);
#pragma unroll
    for (int e = 0; e < MaxEltCount; e++) {
      if (e >= MinEltCount && e >= eltCount) continue;
      vals[e] = valueOf<T, kLines>(got[e]);
    }
  }

  /* Receive eltCount values as recvUnrolled does, Unroll at a time, and fold them: reduce(eltToAcc(v0), ...). */
  template <int Unroll, typename Elt, typename EltToAcc, typename Reduce>
  NCCL_DEVICE_INLINE auto recvReduce(int eltStart, int eltCount, int eltStride, EltToAcc eltToAcc, Reduce reduce)
      -> decltype(eltToAcc(nccl::utility::declval<Elt>())) {
    using Acc = decltype(eltToAcc(nccl::utility::declval<Elt>()));
    Acc acc{};
    bool first = true;
    for (int i = 0; i < eltCount; i += Unroll) {
      Elt got[Unroll];
      const int n = eltCount - i < Unroll ? eltCount - i : Unroll;
      this->template recvUnrolled<1, Unroll>(eltStart + i * eltStride, n, eltStride, got);
#pragma unroll
      for (int j = 0; j < Unroll; j++) {
        if (j >= n) break;
        acc = first ? eltToAcc(got[j]) : reduce(acc, eltToAcc(got[j]));
        first = false;
      }
    }
    return acc;
  }

  /* Close this epoch. Before calling, every peer of the team has been sent at least one value, and a value from
   * every peer has been received. Before the epoch counter wraps, the bank just read is cleared so that old
   * flags cannot match a new epoch. */
  NCCL_DEVICE_INLINE void endEpoch(Coop) {
    if (epoch >= 0xfffffffeu) {
      coop.sync();
      uint4* bank = localLines() + slotsOffset;
      for (uint32_t i = coop.thread_rank(); i < handle.nSlots; i += coop.size()) bank[i] = make_uint4(0, 0, 0, 0);
    }
    coop.sync();
    epoch = epoch == 0xffffffffu ? 2u : epoch + 1;  // skip 0; 2 keeps the banks alternating
    slotsOffset = bankOffset();
  }

 private:
  NCCL_DEVICE_INLINE uint4* localLines() const {
    return static_cast<uint4*>(ncclGetResourceBufferLocalPointer(comm, handle.bufHandle));
  }
  NCCL_DEVICE_INLINE uint32_t blockBase() const { return uint32_t(block) * (1 + 2 * handle.nSlots); }
  NCCL_DEVICE_INLINE uint32_t bankOffset() const { return blockBase() + 1 + (epoch & 1) * handle.nSlots; }

  template <typename T>
  NCCL_DEVICE_INLINE void storeValue(uint4* line, T data) const {
    constexpr int kLines = int((sizeof(T) + 7) / 8);
    uint32_t w[kLines][2] = {};
    memcpy(w, &data, sizeof(T));
#pragma unroll
    for (int l = 0; l < kLines; l++) {
      asm volatile("st.volatile.v4.u32 [%0], {%1, %2, %3, %2};" ::"l"(line + l * pitch), "r"(w[l][0]), "r"(epoch),
                   "r"(w[l][1])
                   : "memory");
    }
  }
  NCCL_DEVICE_INLINE static uint4 loadLine(const uint4* line) {
    uint4 v;
    asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(line)
                 : "memory");
    return v;
  }
  template <typename T, int kLines>
  NCCL_DEVICE_INLINE static T valueOf(const uint4 (&lines)[kLines]) {
    uint32_t w[kLines][2];
#pragma unroll
    for (int l = 0; l < kLines; l++) {
      w[l][0] = lines[l].x;
      w[l][1] = lines[l].z;
    }
    T v;
    memcpy(&v, w, sizeof(T));
    return v;
  }
};
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_LL_A2A_H_ */
