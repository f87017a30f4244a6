// topo_xml: the XML that topology files are written in (NCCL's topology and graph files: NCCL_TOPO_FILE,
// NCCL_TOPO_DUMP_FILE, NCCL_GRAPH_DUMP_FILE). A small DOM that keeps elements and attributes in file order, so a
// file read and written back is the same text (writeXml's layout), a parser that names the file and line of
// every problem, and a writer. No DTD, namespaces, CDATA or processing instructions beyond the `<?xml ...?>`
// declaration: NCCL's files use none.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nccl.h"

namespace braid {

struct XmlNode {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;  // in file order
  std::vector<XmlNode> children;                           // in file order
  int line = 0;                                            // where the element starts (1-based; 0: built in code)

  // The attribute's value, or nullptr.
  const std::string* attr(const std::string& key) const;
  // Sets (or adds, at the end) an attribute.
  void set(const std::string& key, const std::string& value);
  // The first child named `name`, or nullptr.
  const XmlNode* child(const std::string& name) const;
  XmlNode& add(const std::string& name);  // appends an empty child and returns it
};

// Parses `text` (the contents of `fileName`, used in messages) into its root element. Errors:
// ncclInvalidArgument with "<file>:<line>: <problem>" recorded (unclosed or mismatched tags, a second root,
// bad attribute syntax, a duplicate attribute, unknown entities, text where only elements may be).
ncclResult_t parseXml(const std::string& text, const std::string& fileName, XmlNode* root);
// Reads and parses a file; a missing or unreadable file is ncclInvalidArgument naming it.
ncclResult_t readXmlFile(const std::string& path, XmlNode* root);
// The element as text: the `<?xml version="1.0"?>` declaration, then one element per line, two spaces of
// indent per level, attributes in order, &amp; &lt; &gt; &quot; &apos; escaped; childless elements as `<x .../>`.
std::string writeXml(const XmlNode& root);
// Writes writeXml(root) to `path` (replacing it); ncclSystemError naming the file when it cannot.
ncclResult_t writeXmlFile(const std::string& path, const XmlNode& root);

}  // namespace braid
