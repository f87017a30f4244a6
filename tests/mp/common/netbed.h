// A multi-node test bed on one machine: K "nodes", each a network namespace plus a UTS namespace with its own
// host name, joined through a Linux bridge (in a namespace of its own) by one veth pair per node, addresses
// 10.91.0.(k+1)/24, optionally shaped with tc netem (delay, rate) on each node's link. Forked ranks enter
// their node's namespaces before they initialise, so the library sees K hosts: SHM inside a node, sockets
// across nodes. Everything is torn down in the destructor (RAII), also when the test failed.
//
// Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN), iproute2's ip (and tc for shaping) and util-linux's unshare;
// where any of that is missing, ok() is false and why() says what, so a test can skip with the reason.
// Plain POSIX (no gtest), so tools can build the same bed.
#pragma once

#include <string>
#include <vector>

namespace mp {

// tc netem parameters applied to the egress of every node's end of its link (empty: unshaped). A packet from
// node a to node b leaves through a's link once, so `delay` is the one-way latency between two nodes and
// `rate` the bandwidth out of each node.
struct LinkShape {
  std::string delay;  // e.g. "2ms"
  std::string rate;   // e.g. "1gbit"
  bool any() const { return !delay.empty() || !rate.empty(); }
};

class NetBed {
 public:
  explicit NetBed(int nodes, LinkShape shape = {});
  ~NetBed();
  NetBed(const NetBed&) = delete;
  NetBed& operator=(const NetBed&) = delete;

  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }  // why the bed could not be built
  int nodes() const { return nodes_; }

  std::string hostName(int node) const;             // "braid-node<k>"
  std::string address(int node) const;              // "10.91.0.<k+1>"
  static const char* linkName() { return "bed0"; }  // the node's interface, in its namespace
  std::string netnsName(int node) const;            // as `ip netns` knows it
  std::string netnsPath(int node) const;            // its file, for setns(CLONE_NEWNET)
  std::string bridgeNetns() const { return prefix_ + "br"; }
  std::string bridgePort(int node) const;  // the node's link end on the bridge, in bridgeNetns()

  // In a forked, still single-threaded process: joins node's network and UTS namespaces. False with *why.
  bool enter(int node, std::string* why) const;
  // From the parent: takes node's link down (or up again) at the bridge side, as if its cable were pulled.
  bool setLinkUp(int node, bool up, std::string* why) const;

 private:
  bool build(const LinkShape& shape);
  bool step(const std::string& cmd);  // runs cmd; on failure sets why_ and returns false
  bool waitCarrier();
  std::string utsPath(int node) const;
  void teardown();

  int nodes_;
  bool ok_ = false;
  std::string why_;
  std::string prefix_;                // "bbed<pid>" (plus a sequence number): names every namespace of this bed
  std::vector<std::string> made_;     // namespaces created (ip netns names)
  std::vector<std::string> utsMade_;  // UTS namespace files bind-mounted
};

// Runs a shell command; returns its exit status (-1 if it could not run) and, with out, its stdout+stderr.
int shellStatus(const std::string& cmd, std::string* out = nullptr);

}  // namespace mp
