// What the P2P transport knows of the GPUs of this host, for the layers above it: PCI bus ids and whether two
// GPUs share an NVLink (which decides LL128 and the FIFO sizes of an NVLink ring).
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid {

// Whether two GPUs of this host (PeerInfo::busId) reach each other over NVLink (NVML's P2P status of the pair,
// asked both ways; NVML is loaded at run time; false when it cannot tell). Symmetric; cached.
bool p2pNvlinkBetween(int64_t busA, int64_t busB);

// "dddd:bb:dd.0" <-> PeerInfo::busId ((domain << 16) | (bus << 8) | device).
int64_t p2pBusIdFromString(const char* s);
void p2pBusIdToString(int64_t busId, char* out, size_t size);

}  // namespace braid
