// The tuning agreement: what every rank of a communicator must decide alike to run a collective the same way
// on both sides of each connection (protocol, schedule, channel split), agreed once at init over the
// bootstrap, for host and GPU communicators alike. Per-call plans are then pure functions of the call and
// this agreement, never of one rank's environment.
#pragma once

#include <cstdint>

#include "tuner/tuner.h"
#include "nccl.h"

namespace braid {


// Facts of the GPU path agreed with the environment (host communicators leave the defaults).
struct TuningFacts {
  uint32_t llPath = 0;    // every ring connection of the rank has LL slots (AND over ranks)
  uint32_t ll128Path = 0; // every ring connection is NVLink P2P with LL128 slots, on sm_90+ (AND over ranks)
  int32_t transport = 0;  // TransportClass of the rank's ring, the slowest of its connections (max over ranks)
  // TransportClass of the rank's ring hops to a peer on its own node, the slowest (max over ranks; P2pNvlink where
  // it has none): across nodes the tuner prices a ring's steps inside a node by it.
  int32_t ringIntra = 0;
  int32_t tunerOn = 1;    // BRAID_DEVICE_TUNER (rank 0's)
  uint32_t p2pLlThreshold = 0;  // NCCL_P2P_LL_THRESHOLD (rank 0's): both sides of a transfer pick its protocol
  uint32_t p2pChannelBytes = 65536;  // BRAID_P2P_CHANNEL_BYTES (rank 0's): both sides cut a transfer alike
  uint32_t p2pPieces = 4;            // BRAID_P2P_PIECES (rank 0's): both sides cut a share into the same steps
  uint32_t p2pBalanceBytes = 0;      // BRAID_P2P_BALANCE_BYTES (rank 0's): both sides balance the same transfers
  int32_t p2pPeerChannels = 0;       // BRAID_P2P_PEER_CHANNELS (rank 0's): both sides connect and cut peers alike
  // The one-shot of more than two ranks (kDevAllReduceOneShotPeers): every peer of the rank is reached over P2P or
  // SHM and the ranks are few enough (AND over ranks); some peer of the rank is over SHM (OR: the one-shot's
  // channels are then those SHM peers get); BRAID_ONESHOT_PEERS_BYTES, BRAID_TWOSHOT_PEERS_BYTES (the two-shot
  // over the same connections) and BRAID_PEERS_CHANNEL_BYTES (rank 0's: both sides cut the buffer alike).
  uint32_t peersReachable = 0;
  uint32_t peersShm = 0;
  uint32_t oneShotPeersBytes = 0;
  uint32_t twoShotPeersBytes = 0;
  uint32_t peersChannelBytes = 4096;
  // The rank launches its ring collectives on Simple over NVLink P2P in thread-block clusters (a cluster size
  // of 2 or more that fits, and every ring connection NVLink P2P); AND over ranks: the tuner runs the clustered
  // ring instead of the unsplit one-shot only where every rank's ring is clustered
  // (clusteredRingOverUnsplitOneShot), and both sides must run the same algorithm.
  uint32_t clusterRing = 0;
  // The rank launches those rings in clusters of 3 on 24-32 channels (clusterForLaunch: the user set no size
  // and 3 fit, or the user set 3); AND over ranks. Elsewhere 24-31 channels run in clusters of 4, where the
  // ring loses to the unsplit one-shot from 128 MiB (tuner_model.def).
  uint32_t clusterThree = 0;
  // The rank's CTAs can run a p2p channel's send and receive on two warp groups (NCCL_NTHREADS a multiple of
  // 64, at least 128); AND over ranks: under a small CTA bound the p2p cut counts on pairing (p2pCtaBudget),
  // and both sides must cut alike.
  uint32_t p2pPair = 0;
  // The tuner plugin the rank loaded (tunerPluginId: its name and table version; 0: none); agreed only where every
  // rank loaded the same one, else 0 (none anywhere), with a warning: ranks tuned apart could run a collective
  // two ways.
  uint32_t tunerPlugin = 0;
};

// A tuner plugin's identity for TuningFacts::tunerPlugin (never 0).
uint32_t tunerPluginId(const char* name, int version);

// Agrees `local` (this rank's loadTunerConfig) and `facts` with every rank: per collective the protocols and
// algorithms all ranks allow (AND; an empty result falls back to Simple / Ring), the largest
// NCCL_MIN_NCHANNELS, rank 0's NCCL_BUFFSIZE, BRAID_PIPELINE_STEPS and BRAID_ONESHOT_SPLIT, `overridden` from the
// agreed masks.
// Warns once when ranks' settings differed. Collective over the communicator's bootstrap.
ncclResult_t agreeTuning(ncclComm_t comm, const TunerConfig& local, const TuningFacts& facts, TunerConfig* cfg,
                         TuningFacts* agreed);

}  // namespace braid
