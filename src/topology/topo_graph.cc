// NCCL's graph XML: writing and reading the channels of rings and trees (topo_graph.h).
#include "topology/topo_graph.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "core/result.h"

namespace braid {
namespace {

// NCCL's graph files name link types with their own table (kvDictLinkType): the same names as the path classes.
const char* graphTypeName(PathClass c) { return pathClassName(c); }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

ncclResult_t bad(const XmlNode& n, const char* what, const std::string& detail) {
  return recordError(ncclInvalidArgument, "NCCL graph XML line %d: <%s> %s%s", n.line, n.name.c_str(), what,
                     detail.c_str());
}

ncclResult_t intAttr(const XmlNode& n, const char* key, long lo, long hi, long* out) {
  const std::string* v = n.attr(key);
  if (!v) return bad(n, "lacks the attribute ", key);
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v->c_str(), &end, 0);
  if (v->empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
    return bad(n, "has a bad number in ", std::string(key) + "=\"" + *v + "\"");
  *out = x;
  return ncclSuccess;
}

ncclResult_t doubleAttr(const XmlNode& n, const char* key, double* out) {
  const std::string* v = n.attr(key);
  if (!v) return bad(n, "lacks the attribute ", key);
  char* end = nullptr;
  const double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || !(x >= 0))
    return bad(n, "has a bad number in ", std::string(key) + "=\"" + *v + "\"");
  *out = x;
  return ncclSuccess;
}

ncclResult_t typeAttr(const XmlNode& n, const char* key, PathClass* out) {
  const std::string* v = n.attr(key);
  if (!v) return bad(n, "lacks the attribute ", key);
  for (int c = 0; c <= static_cast<int>(PathClass::Dis); ++c)
    if (*v == pathClassName(static_cast<PathClass>(c))) return *out = static_cast<PathClass>(c), ncclSuccess;
  return bad(n, "has an unknown link type in ", std::string(key) + "=\"" + *v + "\"");
}

ncclResult_t parseChannel(const XmlNode& x, GraphChannel* ch) {
  bool sawGpu = false, sawOut = false;
  for (const XmlNode& e : x.children) {
    long dev = 0;
    if (e.name == "gpu") {
      if (sawOut) return bad(e, "follows the channel's closing <net>", "");
      BRAID_CHECK(intAttr(e, "dev", -1, 1L << 30, &dev));
      ch->gpus.push_back(static_cast<int>(dev));
      sawGpu = true;
    } else if (e.name == "net") {
      BRAID_CHECK(intAttr(e, "dev", -1, 1L << 62, &dev));
      if (!sawGpu && ch->netIn < 0 && !sawOut) {
        ch->netIn = static_cast<int>(dev);
      } else if (sawGpu && !sawOut) {
        ch->netOut = static_cast<int>(dev);
        sawOut = true;
      } else {
        return bad(e, "is a third NIC in one channel", "");
      }
    } else {
      return bad(e, "is not an element of a channel (gpu, net)", "");
    }
  }
  if (ch->gpus.empty()) return bad(x, "names no GPU", "");
  return ncclSuccess;
}

}  // namespace

XmlNode graphsXml(const std::vector<TopoGraph>& graphs) {
  XmlNode root;
  root.name = "graphs";
  root.set("version", "1");
  for (const TopoGraph& in : graphs) {
    XmlNode& g = root.add("graph");
    bool same = true;
    for (const GraphChannel& c : in.channels) same = same && c == in.channels[0];
    g.set("id", std::to_string(in.id));
    g.set("pattern", std::to_string(in.pattern));
    g.set("crossnic", in.crossNic ? "1" : "0");
    g.set("nchannels", std::to_string(in.channels.size()));
    g.set("speedintra", number(in.speedIntra));
    g.set("speedinter", number(in.speedInter));
    g.set("latencyinter", "0");
    g.set("typeintra", graphTypeName(in.typeIntra));
    g.set("typeinter", graphTypeName(in.typeInter));
    g.set("samechannels", same ? "1" : "0");
    for (const GraphChannel& c : in.channels) {
      XmlNode& ch = g.add("channel");
      if (c.netIn >= 0) ch.add("net").set("dev", std::to_string(c.netIn));
      for (int d : c.gpus) ch.add("gpu").set("dev", std::to_string(d));
      if (c.netOut >= 0) ch.add("net").set("dev", std::to_string(c.netOut));
    }
  }
  return root;
}

ncclResult_t parseGraphsXml(const XmlNode& root, std::vector<TopoGraph>* graphs) {
  graphs->clear();
  if (root.name != "graphs") return bad(root, "is not <graphs>", "");
  for (const XmlNode& g : root.children) {
    if (g.name != "graph") return bad(g, "is not a <graph>", "");
    TopoGraph out;
    long v = 0;
    BRAID_CHECK(intAttr(g, "id", 0, 1 << 20, &v));
    out.id = static_cast<int>(v);
    BRAID_CHECK(intAttr(g, "pattern", 0, 1 << 20, &v));
    out.pattern = static_cast<int>(v);
    BRAID_CHECK(intAttr(g, "crossnic", 0, 2, &v));
    out.crossNic = v != 0;
    long nch = 0;
    BRAID_CHECK(intAttr(g, "nchannels", 0, 1 << 20, &nch));
    BRAID_CHECK(doubleAttr(g, "speedintra", &out.speedIntra));
    BRAID_CHECK(doubleAttr(g, "speedinter", &out.speedInter));
    BRAID_CHECK(typeAttr(g, "typeintra", &out.typeIntra));
    BRAID_CHECK(typeAttr(g, "typeinter", &out.typeInter));
    for (const XmlNode& c : g.children) {
      if (c.name != "channel") return bad(c, "is not a <channel>", "");
      out.channels.emplace_back();
      BRAID_CHECK(parseChannel(c, &out.channels.back()));
    }
    if (static_cast<long>(out.channels.size()) != nch)
      return bad(g, "says nchannels=", std::to_string(nch) + " but has " + std::to_string(out.channels.size()));
    graphs->push_back(std::move(out));
  }
  return ncclSuccess;
}

}  // namespace braid
