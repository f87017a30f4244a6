/* Braid: NCCL 2.28.9's device API (nccl_device.h), so that programs written against it build against Braid.
 *
 * What is here: the device API's types with NCCL 2.28.9's struct layouts byte for byte (ncclDevComm is 200
 * bytes; see nccl_device/core.h), the host entry points libnccl.so exports (device communicators, teams,
 * requirement helpers), and the load/store-accessible (LSA) device code as inline functions: teams,
 * cooperative groups, window and resource pointers, ncclSymPtr, the LSA barrier and the LL all-to-all. NVLink
 * multicast and GPU-initiated networking (ncclGin, the GIN barrier) are declared with bodies that trap with a
 * message. NCCL states this API is not ABI-stable across minor versions: these are 2.28.9's layouts.
 *
 * Braid has no device-initiated communication yet: ncclDevCommCreate returns ncclInvalidUsage with a message,
 * so kernels written against this API compile but cannot be given a device communicator. */
#ifndef NCCL_DEVICE_H_
#define NCCL_DEVICE_H_

#include "nccl.h"
#include "nccl_device/barrier.h"
#include "nccl_device/coop.h"
#include "nccl_device/core.h"
#include "nccl_device/gin.h"
#include "nccl_device/ll_a2a.h"
#include "nccl_device/lsa_barrier.h"
#include "nccl_device/ptr.h"
#include "nccl_device/utility.h"

#endif /* NCCL_DEVICE_H_ */
