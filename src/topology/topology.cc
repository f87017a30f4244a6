// topology: the graph built from NCCL's topology XML (topologyFromXml, loadTopologyFile), its lookups, and the
// names of node kinds and path classes. The paths and the ring search over the graph live in topo_paths.cc and
// topo_search.cc.
//
// The graph follows NCCL 2.30's reading of the same XML, so a file means the same in both libraries:
//  - a <pci> holding a <gpu> is a GPU node, one holding a <nic> a NIC node, a bridge (any class that is no device)
//    a PCI node; a device <pci> holding neither (a GPU no rank uses, an NVSwitch seen on PCI) makes no node;
//  - each of those joins its parent (PCI or CPU) by a PCI link of the element's own link_width x link_speed;
//  - each <net> with a dev (and not net="0") is a NET node joined to its NIC by a NET link of its speed;
//  - every NVLink to an NVSwitch (tclass 0x068000) goes to one shared NVS node, as NCCL does: a GPU's links are
//    spread over several switches (DGX H100: 5+5+4+4 to four), and only their sum says what a GPU can send to
//    another; one node per switch would make every GPU pair look as slow as a single switch's share;
//  - NVLink to a GPU goes to that GPU, and to the CPU (tclass 0x068001, POWER9) to the GPU's own CPU;
//  - every pair of CPUs is joined by SYS links whose bandwidth comes from the CPU model. All CPUs of a file are one
//    host: NCCL replaces every host_hash of a topology file by the local host's, so two hosts never share a file.
// <c2c> (Grace's chip-to-chip link) is checked and kept in the XML but makes no link: there is no C2C link kind,
// and the GPU's PCI link already joins it to its CPU.
#include "topology/topology.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "core/result.h"

namespace braid {
namespace {

// Bandwidths in GB/s, one direction: NCCL 2.30's constants, so both libraries weigh a file alike.
constexpr double kLocBw = 5000.0;  // a link inside one device (a NIC under its CPU, a pcilink between switch halves)
// One NVLink, by the compute capability of the GPU it starts from.
double nvlinkBw(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm == 86) return 12.0;
  if (sm >= 80) return 20.0;
  if (sm >= 70) return 20.0;
  if (sm >= 60) return 18.0;
  return 20.0;  // unknown (sm missing or older): NCCL assumes an Ampere link
}

enum class CpuArch { X86, Arm, Power };

// Between two CPU sockets: the interconnect of the CPU the link starts from.
double interCpuBw(CpuArch arch, const std::string& vendor, int family, int model) {
  if (arch == CpuArch::Power) return 32.0;  // POWER9 X-bus
  if (arch == CpuArch::Arm) return 6.0;
  if (vendor.rfind("GenuineIntel", 0) == 0) {
    if (family == 6 && model >= 0xCF) return 40.0;  // Emerald Rapids
    if (family == 6 && model >= 0x8F) return 22.0;  // Sapphire Rapids
    if (family == 6 && model >= 0x55) return 10.0;  // Skylake
    return 6.0;                                     // Broadwell and older QPI
  }
  if (vendor.rfind("AuthenticAMD", 0) == 0) return 16.0;
  if (vendor.rfind("CentaurHauls", 0) == 0 || vendor.rfind("  Shanghai  ", 0) == 0)
    return family == 7 && model == 0x5B ? 9.0 : 6.0;  // Zhaoxin: Yongfeng, or older ZPI
  return kLocBw;                                      // an x86 vendor NCCL does not know: no penalty, as NCCL
}

// ---- value syntax ----

bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Decimal with an optional '-', or 0x-hex (what NCCL's strtol(.., 0) reads, less octal and trailing junk).
bool parseLong(const std::string& s, long long* out) {
  if (s.empty()) return false;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  size_t i = hex ? 2 : (s[0] == '-' ? 1 : 0);
  if (i >= s.size()) return false;
  for (size_t j = i; j < s.size(); ++j)
    if (hex ? !isHex(s[j]) : !std::isdigit(static_cast<unsigned char>(s[j]))) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, hex ? 16 : 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

// Hex with or without 0x (NCCL reads guid and host_hash with strtoull(.., 16)).
bool parseHex64(const std::string& s, uint64_t* out) {
  const size_t i = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 2 : 0;
  if (i >= s.size() || s.size() - i > 16) return false;
  for (size_t j = i; j < s.size(); ++j)
    if (!isHex(s[j])) return false;
  *out = std::strtoull(s.c_str() + i, nullptr, 16);
  return true;
}

bool parseDouble(const std::string& s, double* out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// A PCI class as NCCL writes it: "0x" and 2 to 6 hex digits ("0x03" when sysfs had none, "0x030200" otherwise).
bool isPciClass(const std::string& s) {
  if (s.size() < 4 || s.size() > 8 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  for (size_t i = 2; i < s.size(); ++i)
    if (!isHex(s[i])) return false;
  return true;
}

// What a class makes of its element, by NCCL's prefixes.
enum class PciRole { Bridge, Gpu, Nic, Nvswitch, Cpu };
PciRole pciRole(std::string cls) {
  for (char& c : cls) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (cls.rfind("0x068000", 0) == 0) return PciRole::Nvswitch;
  if (cls.rfind("0x068001", 0) == 0) return PciRole::Cpu;
  if (cls.rfind("0x03", 0) == 0) return PciRole::Gpu;
  if (cls.rfind("0x02", 0) == 0) return PciRole::Nic;
  return PciRole::Bridge;  // 0x060400 bridges, 0x080100 (CX8 data direct) and anything else, as NCCL
}

// NCCL's placeholder target for an NVLink whose far end NVML cannot name (an NVSwitch hidden from a VM). Newer
// NCCL writes "fffffff:ff:ff.0", which is a well-formed bus id.
constexpr const char* kHiddenNvlinkTarget = "fffffff:ffff:ff";

// ---- the structure NCCL's schema allows ----

struct ElementRule {
  const char* name;
  std::vector<const char*> attrs;
  std::vector<const char*> children;
};

const std::vector<ElementRule>& schema() {
  static const std::vector<ElementRule> rules = {
      {"system", {"version", "name"}, {"cpu"}},
      {"cpu", {"numaid", "affinity", "arch", "vendor", "familyid", "modelid", "host_hash"}, {"pci", "nic"}},
      {"pci",
       {"busid", "class", "vendor", "device", "subsystem_vendor", "subsystem_device", "link_speed", "link_width"},
       {"pci", "gpu", "nic", "pcilink"}},
      {"gpu", {"dev", "sm", "rank", "gdr", "keep"}, {"nvlink", "c2c"}},
      {"nvlink", {"target", "count", "tclass"}, {}},
      {"c2c", {"bw", "count"}, {}},
      {"nic", {}, {"net"}},
      {"net",
       {"name", "dev", "latency", "speed", "port", "guid", "maxconn", "gdr", "coll", "net", "gin", "rma", "rail",
        "plane", "keep"},
       {}},
      {"pcilink", {"target"}, {}},
  };
  return rules;
}

const ElementRule* ruleFor(const std::string& name) {
  for (const ElementRule& r : schema())
    if (name == r.name) return &r;
  return nullptr;
}

bool listed(const std::vector<const char*>& list, const std::string& s) {
  for (const char* x : list)
    if (s == x) return true;
  return false;
}

class Builder {
 public:
  Builder(const std::string& source, Topology* topo) : source_(source), t_(*topo) {}

  ncclResult_t build(const XmlNode& system) {
    if (system.name != "system") return fail(system, "the root element must be <system> (NCCL's topology schema)");
    BRAID_CHECK(checkShape(system, nullptr));
    const std::string* version = system.attr("version");
    if (!version) return fail(system, "no version attribute (NCCL's topology files are version=\"1\")");
    long long v = 0;
    if (!parseLong(*version, &v) || v != 1) return fail(system, "version \"" + *version + "\" is not 1");
    for (const XmlNode& cpu : system.children) BRAID_CHECK(addCpu(cpu));
    for (const Pending& p : nvlinks_) BRAID_CHECK(addNvlink(*p.xml, p.node));
    mirrorGpuNvlinks();
    for (const Pending& p : pcilinks_) BRAID_CHECK(addPcilink(*p.xml, p.node));
    joinCpus();
    t_.xml = system;
    return ncclSuccess;
  }

 private:
  struct Pending {
    const XmlNode* xml;
    int node;  // the GPU (nvlink) or PCI switch (pcilink) the element belongs to
  };

  ncclResult_t fail(const XmlNode& at, const std::string& what) {
    const std::string where = at.line > 0 ? source_ + ":" + std::to_string(at.line) : source_;
    return recordError(ncclInvalidArgument, "%s: <%s>: %s", where.c_str(), at.name.c_str(), what.c_str());
  }
  ncclResult_t failAttr(const XmlNode& at, const char* key, const std::string& value, const char* expected) {
    return fail(at, std::string("attribute ") + key + "=\"" + value + "\" is not " + expected);
  }

  // Element names, their places and their attribute names, before any value is read: an unknown attribute is
  // most often a typo, and silently ignoring it would build a different machine than the file's author meant.
  ncclResult_t checkShape(const XmlNode& x, const XmlNode* parent) {
    const ElementRule* rule = ruleFor(x.name);
    if (!rule)
      return fail(x,
                  "unknown element (NCCL's topology schema has system, cpu, pci, gpu, nvlink, c2c, nic, "
                  "net, pcilink)");
    if (parent) {
      const ElementRule* up = ruleFor(parent->name);
      if (!listed(up->children, x.name)) {
        if (x.name == "gpu") return fail(x, "a <gpu> must be inside a <pci> element, not <" + parent->name + ">");
        if (x.name == "nic")
          return fail(x, "a <nic> must be inside a <pci> or <cpu> element, not <" + parent->name + ">");
        return fail(x, "cannot be inside <" + parent->name + ">");
      }
    }
    for (const auto& a : x.attrs)
      if (!listed(rule->attrs, a.first)) return fail(x, "unknown attribute '" + a.first + "'");
    for (const XmlNode& c : x.children) BRAID_CHECK(checkShape(c, &x));
    return ncclSuccess;
  }

  ncclResult_t required(const XmlNode& x, const char* key, const std::string** out) {
    *out = x.attr(key);
    if (!*out) return fail(x, std::string("no ") + key + " attribute");
    return ncclSuccess;
  }
  // An integer attribute in [lo, hi]; absent: *out keeps its default.
  ncclResult_t optionalInt(const XmlNode& x, const char* key, long long lo, long long hi, int* out) {
    const std::string* s = x.attr(key);
    if (!s) return ncclSuccess;
    long long v = 0;
    if (!parseLong(*s, &v)) return failAttr(x, key, *s, "a number");
    if (v < lo || v > hi)
      return failAttr(x, key, *s, ("in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]").c_str());
    *out = static_cast<int>(v);
    return ncclSuccess;
  }
  ncclResult_t requiredInt(const XmlNode& x, const char* key, long long lo, long long hi, int* out) {
    const std::string* s = nullptr;
    BRAID_CHECK(required(x, key, &s));
    return optionalInt(x, key, lo, hi, out);
  }
  ncclResult_t optionalHex(const XmlNode& x, const char* key, uint64_t* out) {
    const std::string* s = x.attr(key);
    if (!s) return ncclSuccess;
    if (!parseHex64(*s, out)) return failAttr(x, key, *s, "a hex number");
    return ncclSuccess;
  }
  ncclResult_t optionalFlag(const XmlNode& x, const char* key, bool* out) {
    int v = *out ? 1 : 0;
    BRAID_CHECK(optionalInt(x, key, 0, 1, &v));
    *out = v != 0;
    return ncclSuccess;
  }

  int addNode(TopoKind kind, const std::string& busId, int numa, int cpu) {
    t_.nodes.emplace_back();
    t_.nodes.back().kind = kind;
    t_.nodes.back().busId = busId;
    t_.nodes.back().numa = numa;
    cpuOf_.push_back(cpu);
    return static_cast<int>(t_.nodes.size()) - 1;
  }
  // One direction; a second link of the same kind between the same nodes adds to the first (several <nvlink>
  // elements to NVSwitches are one NVLink port group, as NCCL sums them).
  void link(int from, int to, TopoLinkKind kind, double bw) {
    for (TopoLink& l : t_.nodes[from].links) {
      if (l.peer == to && l.kind == kind) {
        l.bw += bw;
        return;
      }
    }
    t_.nodes[from].links.push_back(TopoLink{to, kind, bw});
  }
  void linkBoth(int a, int b, TopoLinkKind kind, double bw) {
    link(a, b, kind, bw);
    link(b, a, kind, bw);
  }

  ncclResult_t addCpu(const XmlNode& x) {
    int numa = -1;
    BRAID_CHECK(requiredInt(x, "numaid", -1, 1 << 20, &numa));
    for (int c : t_.all(TopoKind::Cpu)) {
      if (t_.nodes[c].numa == numa)
        return fail(x, "numaid " + std::to_string(numa) + " again (also at line " + std::to_string(cpuLine_[c]) + ")");
    }
    const std::string* archText = nullptr;
    BRAID_CHECK(required(x, "arch", &archText));
    CpuArch arch;
    if (*archText == "x86_64")
      arch = CpuArch::X86;
    else if (*archText == "arm64")
      arch = CpuArch::Arm;
    else if (*archText == "ppc64")
      arch = CpuArch::Power;
    else
      return failAttr(x, "arch", *archText, "one of x86_64, arm64, ppc64");
    std::string vendor;
    if (const std::string* v = x.attr("vendor"))
      vendor = *v;
    else if (arch == CpuArch::X86)
      return fail(x, "no vendor attribute (an x86_64 CPU's SYS bandwidth depends on it)");
    int family = -1, model = -1;
    const bool needModel =
        arch == CpuArch::X86 && (vendor.rfind("GenuineIntel", 0) == 0 || vendor.rfind("CentaurHauls", 0) == 0 ||
                                 vendor.rfind("  Shanghai  ", 0) == 0);
    if (needModel) {
      BRAID_CHECK(requiredInt(x, "familyid", 0, 1 << 16, &family));
      BRAID_CHECK(requiredInt(x, "modelid", 0, 1 << 16, &model));
    } else {
      BRAID_CHECK(optionalInt(x, "familyid", 0, 1 << 16, &family));
      BRAID_CHECK(optionalInt(x, "modelid", 0, 1 << 16, &model));
    }
    if (const std::string* aff = x.attr("affinity")) {
      // A cpuset as sysfs prints it: 32-bit hex words joined by commas.
      bool ok = !aff->empty();
      for (char c : *aff) ok = ok && (isHex(c) || c == ',');
      if (!ok) return failAttr(x, "affinity", *aff, "a cpuset (hex words joined by commas)");
    }
    uint64_t hostHash = 0;
    BRAID_CHECK(optionalHex(x, "host_hash", &hostHash));

    const int cpu = addNode(TopoKind::Cpu, "", numa, -1);
    cpuOf_[cpu] = cpu;
    cpuLine_[cpu] = x.line;
    sysBw_[cpu] = interCpuBw(arch, vendor, family, model);
    for (const XmlNode& c : x.children) {
      if (c.name == "pci")
        BRAID_CHECK(addPci(c, cpu, cpu));
      else
        BRAID_CHECK(addNic(c, cpu, cpu, "", kLocBw));  // a NIC with no PCI place (a virtual one), as NCCL
    }
    return ncclSuccess;
  }

  // link_width x link_speed in GB/s, as NCCL: per-lane rates in 100 Mb/s units (8 GT/s: 60, i.e. 6 Gb/s of
  // payload per lane) over 80; an unknown width counts as x16 and an unknown speed as Gen3.
  ncclResult_t pciBw(const XmlNode& x, double* bw) {
    const std::string* speed = nullptr;
    const std::string* width = nullptr;
    BRAID_CHECK(required(x, "link_speed", &speed));
    BRAID_CHECK(required(x, "link_width", &width));
    long long lanes = 0;
    if (!width->empty() && (!parseLong(*width, &lanes) || lanes < 0 || lanes > 32))
      return failAttr(x, "link_width", *width, "a lane count in [0, 32]");
    if (lanes == 0) lanes = 16;
    double perLane = 60;
    if (!speed->empty() && speed->rfind("Unknown", 0) != 0) {
      const size_t gt = speed->find(" GT/s");
      const std::string tail = gt == std::string::npos ? "" : speed->substr(gt);
      double rate = 0;
      if (gt == std::string::npos || (tail != " GT/s" && tail != " GT/s PCIe") ||
          !parseDouble(speed->substr(0, gt), &rate) || rate <= 0)
        return failAttr(x, "link_speed", *speed, "a PCIe speed such as \"32.0 GT/s PCIe\"");
      // 2.5 and 5 GT/s lose 20% to 8b/10b coding; NCCL counts 6 of 8 Gb/s at 8 GT/s and above.
      perLane = rate < 8 ? rate * 6 : rate * 7.5;
    }
    *bw = static_cast<double>(lanes) * perLane / 80.0;
    return ncclSuccess;
  }

  ncclResult_t addPci(const XmlNode& x, int parent, int cpu) {
    const std::string* busText = nullptr;
    BRAID_CHECK(required(x, "busid", &busText));
    const std::string busId = topoBusId(*busText);
    if (busId.empty()) return failAttr(x, "busid", *busText, "a PCI address (dddd:bb:dd.f)");
    const auto seen = busLines_.find(busId);
    if (seen != busLines_.end())
      return fail(x, "bus id " + busId + " again (also at line " + std::to_string(seen->second) + ")");
    busLines_[busId] = x.line;
    const std::string* cls = nullptr;
    BRAID_CHECK(required(x, "class", &cls));
    if (!isPciClass(*cls)) return failAttr(x, "class", *cls, "a PCI class such as 0x060400");
    for (const char* key : {"vendor", "device", "subsystem_vendor", "subsystem_device"}) {
      uint64_t unused = 0;
      BRAID_CHECK(optionalHex(x, key, &unused));
    }
    double bw = 0;
    BRAID_CHECK(pciBw(x, &bw));

    const XmlNode* gpu = nullptr;
    const XmlNode* nic = nullptr;
    const XmlNode* pcilink = nullptr;
    bool subPci = false;
    for (const XmlNode& c : x.children) {
      if (c.name == "gpu") {
        if (gpu)
          return fail(c, "a second <gpu> in the <pci> of line " + std::to_string(x.line) +
                             " (one rank per GPU: GPU partitions are not supported)");
        gpu = &c;
      } else if (c.name == "nic") {
        if (nic) return fail(c, "a second <nic> in the <pci> of line " + std::to_string(x.line));
        nic = &c;
      } else if (c.name == "pci") {
        subPci = true;
      } else if (c.name == "pcilink" && !pcilink) {
        pcilink = &c;
      }
    }
    if (gpu && nic) return fail(*nic, "a <pci> holds a <gpu> and a <nic>");
    const int numa = t_.nodes[cpu].numa;
    if (gpu || nic || pciRole(*cls) != PciRole::Bridge) {
      // An endpoint: NCCL reads nothing below it, so a PCI tree there would be lost without a word.
      if (subPci) return fail(x, "a device (class " + *cls + ") cannot hold <pci> elements");
      if (pcilink)
        return fail(*pcilink, "only a PCI switch has pcilinks; the <pci> of line " + std::to_string(x.line) +
                                  " is a device (class " + *cls + ")");
      if (gpu) return addGpu(*gpu, busId, parent, cpu, bw);
      if (nic) return addNic(*nic, parent, cpu, busId, bw);
      return ncclSuccess;  // a device nobody uses (or an NVSwitch, reached through NVLink)
    }
    const int node = addNode(TopoKind::Pci, busId, numa, cpu);
    linkBoth(node, parent, TopoLinkKind::Pci, bw);
    for (const XmlNode& c : x.children) {
      if (c.name == "pci")
        BRAID_CHECK(addPci(c, node, cpu));
      else if (c.name == "pcilink")
        pcilinks_.push_back({&c, node});
    }
    return ncclSuccess;
  }

  ncclResult_t addGpu(const XmlNode& x, const std::string& busId, int parent, int cpu, double bw) {
    const int node = addNode(TopoKind::Gpu, busId, t_.nodes[cpu].numa, cpu);
    TopoNode& g = t_.nodes[node];
    BRAID_CHECK(optionalInt(x, "dev", 0, 1 << 16, &g.cudaDev));
    BRAID_CHECK(optionalInt(x, "sm", 0, 10000, &g.sm));
    BRAID_CHECK(optionalInt(x, "rank", 0, 1 << 30, &g.rank));
    BRAID_CHECK(optionalFlag(x, "gdr", &g.gdr));
    bool keep = true;
    BRAID_CHECK(optionalFlag(x, "keep", &keep));
    linkBoth(node, parent, TopoLinkKind::Pci, bw);
    for (const XmlNode& c : x.children) {
      if (c.name == "nvlink") {
        nvlinks_.push_back({&c, node});
      } else {
        int unused = 0;
        BRAID_CHECK(requiredInt(c, "bw", 0, 1 << 30, &unused));
        BRAID_CHECK(requiredInt(c, "count", 0, 1 << 10, &unused));
      }
    }
    return ncclSuccess;
  }

  ncclResult_t addNic(const XmlNode& x, int parent, int cpu, const std::string& busId, double bw) {
    const int nic = addNode(TopoKind::Nic, busId, t_.nodes[cpu].numa, cpu);
    linkBoth(nic, parent, TopoLinkKind::Pci, bw);
    for (const XmlNode& n : x.children) BRAID_CHECK(addNet(n, nic, cpu));
    return ncclSuccess;
  }

  ncclResult_t addNet(const XmlNode& x, int nic, int cpu) {
    TopoNode net;
    BRAID_CHECK(optionalInt(x, "dev", 0, 1 << 20, &net.dev));
    int mbps = 0, isNet = 1, unused = 0;
    BRAID_CHECK(optionalInt(x, "speed", -1, 1 << 30, &mbps));
    BRAID_CHECK(optionalInt(x, "port", 0, 1 << 16, &net.port));
    BRAID_CHECK(optionalInt(x, "maxconn", 0, 1 << 30, &net.maxConn));
    BRAID_CHECK(optionalHex(x, "guid", &net.guid));
    BRAID_CHECK(optionalFlag(x, "gdr", &net.gdr));
    BRAID_CHECK(optionalInt(x, "net", 0, 1, &isNet));
    for (const char* key : {"coll", "gin", "rma", "keep"}) BRAID_CHECK(optionalInt(x, key, 0, 1, &unused));
    for (const char* key : {"rail", "plane"}) BRAID_CHECK(optionalInt(x, key, -1, 1 << 20, &unused));
    if (const std::string* lat = x.attr("latency")) {
      double l = 0;
      if (!parseDouble(*lat, &l) || l < 0) return failAttr(x, "latency", *lat, "a latency in microseconds");
    }
    if (const std::string* name = x.attr("name")) net.name = *name;
    // NCCL places a <net> only with a dev and as a network device (net="0" marks one only collectives or GIN use).
    if (net.dev < 0 || !isNet) return ncclSuccess;
    for (int other : t_.all(TopoKind::Net)) {
      if (t_.nodes[other].dev == net.dev)
        return fail(x, "net dev " + std::to_string(net.dev) + " again (also " + t_.nodes[other].name + ")");
    }
    if (mbps <= 0) mbps = 10000;  // NICs that report no speed (-1): NCCL assumes 10 Gb/s
    net.speedGBs = mbps / 8000.0;
    const int node = addNode(TopoKind::Net, "", t_.nodes[cpu].numa, cpu);
    net.kind = TopoKind::Net;
    net.numa = t_.nodes[node].numa;
    t_.nodes[node] = std::move(net);
    linkBoth(node, nic, TopoLinkKind::Net, t_.nodes[node].speedGBs);
    return ncclSuccess;
  }

  ncclResult_t addNvlink(const XmlNode& x, int gpu) {
    const std::string *target = nullptr, *tclass = nullptr;
    int count = 0;
    BRAID_CHECK(required(x, "target", &target));
    BRAID_CHECK(required(x, "tclass", &tclass));
    BRAID_CHECK(requiredInt(x, "count", 1, 1024, &count));
    if (!isPciClass(*tclass)) return failAttr(x, "tclass", *tclass, "a PCI class such as 0x068000");
    const double bw = count * nvlinkBw(t_.nodes[gpu].sm);
    const std::string busId = topoBusId(*target);
    switch (pciRole(*tclass)) {
      case PciRole::Gpu: {
        if (busId.empty()) return failAttr(x, "target", *target, "a PCI address (dddd:bb:dd.f)");
        const int peer = t_.find(TopoKind::Gpu, busId);
        if (peer < 0) return fail(x, "nvlink target " + busId + " is no GPU of this file");
        if (peer == gpu) return fail(x, "nvlink target " + busId + " is the GPU itself");
        link(gpu, peer, TopoLinkKind::Nvl, bw);
        return ncclSuccess;
      }
      case PciRole::Nvswitch: {
        if (busId.empty() && *target != kHiddenNvlinkTarget)
          return failAttr(x, "target", *target, "a PCI address (dddd:bb:dd.f)");
        if (nvs_ < 0) nvs_ = addNode(TopoKind::Nvs, "", -1, -1);
        linkBoth(gpu, nvs_, TopoLinkKind::Nvl, bw);
        return ncclSuccess;
      }
      case PciRole::Cpu:
        if (busId.empty()) return failAttr(x, "target", *target, "a PCI address (dddd:bb:dd.f)");
        linkBoth(gpu, cpuOf_[gpu], TopoLinkKind::Nvl, bw);
        return ncclSuccess;
      default:
        return fail(x, "nvlink target class " + *tclass +
                           " is neither a GPU (0x03...), an NVSwitch (0x068000) nor a CPU (0x068001)");
    }
  }

  // A GPU's file entry lists its own NVLinks; a peer that lists none back still has them (links are both ways).
  void mirrorGpuNvlinks() {
    for (int g : t_.all(TopoKind::Gpu)) {
      for (size_t i = 0; i < t_.nodes[g].links.size(); ++i) {
        const TopoLink l = t_.nodes[g].links[i];
        if (l.kind != TopoLinkKind::Nvl || t_.nodes[l.peer].kind != TopoKind::Gpu) continue;
        bool back = false;
        for (const TopoLink& r : t_.nodes[l.peer].links) back = back || (r.peer == g && r.kind == TopoLinkKind::Nvl);
        if (!back) t_.nodes[l.peer].links.push_back(TopoLink{g, TopoLinkKind::Nvl, l.bw});
      }
    }
  }

  // Broadcom switches that show one switch as two levels list their sibling halves; a target NCCL trimmed from a
  // dump (a switch with nothing used under it) is skipped, as NCCL does.
  ncclResult_t addPcilink(const XmlNode& x, int pci) {
    const std::string* target = nullptr;
    BRAID_CHECK(required(x, "target", &target));
    const std::string busId = topoBusId(*target);
    if (busId.empty()) return failAttr(x, "target", *target, "a PCI address (dddd:bb:dd.f)");
    const int peer = t_.find(TopoKind::Pci, busId);
    if (peer < 0 || peer == pci) return ncclSuccess;
    for (const TopoLink& l : t_.nodes[pci].links)
      if (l.peer == peer && l.kind == TopoLinkKind::Loc) return ncclSuccess;
    linkBoth(pci, peer, TopoLinkKind::Loc, kLocBw);
    return ncclSuccess;
  }

  void joinCpus() {
    const std::vector<int> cpus = t_.all(TopoKind::Cpu);
    for (int a : cpus)
      for (int b : cpus)
        if (a != b) link(a, b, TopoLinkKind::Sys, sysBw_[a]);
  }

  const std::string& source_;
  Topology& t_;
  std::vector<int> cpuOf_;       // per node: the CPU node it hangs under (-1: NVS)
  std::map<int, int> cpuLine_;   // CPU node -> its line, for duplicate messages
  std::map<int, double> sysBw_;  // CPU node -> bandwidth of its SYS links
  std::map<std::string, int> busLines_;
  std::vector<Pending> nvlinks_, pcilinks_;
  int nvs_ = -1;
};

}  // namespace

const char* topoKindName(TopoKind k) {
  switch (k) {
    case TopoKind::Gpu:
      return "GPU";
    case TopoKind::Pci:
      return "PCI";
    case TopoKind::Nvs:
      return "NVS";
    case TopoKind::Cpu:
      return "CPU";
    case TopoKind::Nic:
      return "NIC";
    case TopoKind::Net:
      return "NET";
  }
  return "?";
}

const char* pathClassName(PathClass c) {
  switch (c) {
    case PathClass::Loc:
      return "LOC";
    case PathClass::Nvl:
      return "NVL";
    case PathClass::Nvb:
      return "NVB";
    case PathClass::Pix:
      return "PIX";
    case PathClass::Pxb:
      return "PXB";
    case PathClass::Phb:
      return "PHB";
    case PathClass::Sys:
      return "SYS";
    case PathClass::Net:
      return "NET";
    case PathClass::Dis:
      return "DIS";
  }
  return "?";
}

bool parsePathLevel(const std::string& text, PathClass* out) {
  static const PathClass kNamed[] = {PathClass::Loc, PathClass::Nvl, PathClass::Nvb, PathClass::Pix,
                                     PathClass::Pxb, PathClass::Phb, PathClass::Sys};
  for (PathClass c : kNamed) {
    if (text == pathClassName(c)) {
      *out = c;
      return true;
    }
  }
  // NCCL's numbers from before the names; beyond 5 NCCL clamps to the last (SYS).
  if (text.empty() || text.size() > 9) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  static const PathClass kOld[] = {PathClass::Loc, PathClass::Pix, PathClass::Pxb,
                                   PathClass::Phb, PathClass::Sys, PathClass::Sys};
  const long n = std::strtol(text.c_str(), nullptr, 10);
  *out = kOld[n > 5 ? 5 : n];
  return true;
}

std::string topoBusId(const std::string& text) {
  // [domain:]bus:device[.function]: a domain of up to 8 hex digits (NVML writes 8, sysfs 4), two for bus and
  // device, one function 0-7.
  auto hexField = [&](size_t from, size_t to, unsigned long* v) {
    if (to <= from) return false;
    for (size_t i = from; i < to; ++i)
      if (!isHex(text[i])) return false;
    *v = std::strtoul(text.substr(from, to - from).c_str(), nullptr, 16);
    return true;
  };
  const size_t c1 = text.find(':');
  if (c1 == std::string::npos) return "";
  const size_t c2 = text.find(':', c1 + 1);
  size_t busStart = 0;
  unsigned long domain = 0, bus = 0, dev = 0, fn = 0;
  if (c2 != std::string::npos) {
    if (c1 > 8 || !hexField(0, c1, &domain)) return "";
    busStart = c1 + 1;
  }
  const size_t busEnd = c2 != std::string::npos ? c2 : c1;
  if (busEnd - busStart != 2 || !hexField(busStart, busEnd, &bus)) return "";
  const size_t dot = text.find('.', busEnd + 1);
  const size_t devEnd = dot == std::string::npos ? text.size() : dot;
  if (devEnd - (busEnd + 1) != 2 || !hexField(busEnd + 1, devEnd, &dev)) return "";
  if (dot != std::string::npos) {
    if (text.size() != dot + 2 || !hexField(dot + 1, dot + 2, &fn) || fn > 7) return "";
  }
  char out[32];
  std::snprintf(out, sizeof(out), "%04lx:%02lx:%02lx.%lx", domain, bus, dev, fn);
  return out;
}

int Topology::find(TopoKind kind, const std::string& busId) const {
  const std::string id = topoBusId(busId);
  if (id.empty()) return -1;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].kind == kind && nodes[i].busId == id) return static_cast<int>(i);
  return -1;
}

std::vector<int> Topology::all(TopoKind kind) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].kind == kind) out.push_back(static_cast<int>(i));
  return out;
}

ncclResult_t topologyFromXml(const XmlNode& system, const std::string& source, Topology* out) {
  Topology built;
  Builder b(source, &built);
  BRAID_CHECK(b.build(system));
  *out = std::move(built);
  return ncclSuccess;
}

ncclResult_t loadTopologyFile(const std::string& path, Topology* out) {
  XmlNode root;
  BRAID_CHECK(readXmlFile(path, &root));
  return topologyFromXml(root, path, out);
}

}  // namespace braid
