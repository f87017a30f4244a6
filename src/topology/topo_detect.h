// topo_detect: this host's topology read from the machine, written as NCCL's topology XML (topo_xml.h) so that
// detection and NCCL_TOPO_FILE feed the same builder (topology.h) and NCCL_TOPO_DUMP_FILE writes what was found.
// Sources: sysfs (the PCI tree with link speeds and widths, NUMA nodes and their CPUs, /sys/class/net and
// /sys/class/infiniband NICs with their PCI places and speeds) and NVML, loaded with dlopen so the library runs
// without it (NVLink peers, link counts and versions, NVSwitches). CUDA stays with the caller: it passes the GPUs
// it knows. A fact that cannot be read (a VM hiding the PCI tree, no NVML) is left out with one INFO line saying
// what the topology falls back to, never an error.
#pragma once

#include <string>
#include <vector>

#include "nccl.h"
#include "topology/topo_xml.h"

namespace braid {

struct TopoGpuFact {
  std::string busId;  // "dddd:bb:dd.f" (any case)
  int cudaDev = -1;
  int sm = 0;         // compute capability x 10
  int rank = -1;
};

struct TopoDetectOptions {
  std::string sysfsRoot = "/sys";    // tests point this at a fake tree
  bool useNvml = true;               // false: no NVLink facts (tests)
  std::vector<TopoGpuFact> gpus;     // the GPUs to place (e.g. every GPU CUDA shows this process)
  bool includeNics = true;
};

// The host's <system> element. Only the GPUs listed are placed; every NIC found is. *nvlinksKnown (if given):
// whether NVML answered for the GPUs' NVLinks (false: no NVML, not asked, or no GPU listed), so a caller can tell
// "no NVLink" from "NVLinks unknown".
ncclResult_t detectTopology(const TopoDetectOptions& opts, XmlNode* system, bool* nvlinksKnown = nullptr);

}  // namespace braid
