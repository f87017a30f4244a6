// The topology XML reader and writer (src/topology/topo_xml.h): every canned topology file survives
// parse -> write -> parse -> write unchanged, attribute order and escapes are kept, and every malformed input is
// ncclInvalidArgument with a message naming the file and the line of the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/result.h"
#include "topology/topo_xml.h"
#include "topology_files.h"

using namespace braid;

namespace {

// The element trees equal, line numbers aside.
bool sameTree(const XmlNode& a, const XmlNode& b) {
  if (a.name != b.name || a.attrs != b.attrs || a.children.size() != b.children.size()) return false;
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!sameTree(a.children[i], b.children[i])) return false;
  return true;
}

// The message parseXml records for `text` (named "inline.xml"), after checking it fails as it should.
std::string parseError(const std::string& text) {
  clearPendingError();
  XmlNode root;
  root.name = "untouched";
  const ncclResult_t rc = parseXml(text, "inline.xml", &root);
  EXPECT_EQ(rc, ncclInvalidArgument) << text;
  EXPECT_EQ(root.name, "untouched") << "a failed parse must leave the output alone";
  std::string msg = pendingError();
  clearPendingError();
  return msg;
}

TEST(TopoXml, EveryCannedFileRoundTrips) {
  const std::vector<std::string> files = cannedTopologyFiles();
  ASSERT_GE(files.size(), 8u);
  for (const std::string& name : files) {
    SCOPED_TRACE(name);
    XmlNode first;
    ASSERT_EQ(readXmlFile(topologyDir() + "/" + name, &first), ncclSuccess) << pendingError();
    EXPECT_EQ(first.name, "system");
    const std::string text1 = writeXml(first);
    XmlNode second;
    ASSERT_EQ(parseXml(text1, name, &second), ncclSuccess) << pendingError();
    EXPECT_TRUE(sameTree(first, second));
    EXPECT_EQ(writeXml(second), text1);
  }
}

TEST(TopoXml, CannedFilesAreInWriterLayout) {
  // The canned files are written the way writeXml writes (less their leading comment), so a dump of one is the
  // file itself and a diff against it shows only real changes.
  for (const std::string& name : cannedTopologyFiles()) {
    SCOPED_TRACE(name);
    std::string text = readText(topologyDir() + "/" + name);
    const size_t open = text.find("<!--");
    const size_t close = text.find("-->\n");
    ASSERT_NE(open, std::string::npos);
    ASSERT_NE(close, std::string::npos);
    text.erase(open, close + 4 - open);
    XmlNode root;
    ASSERT_EQ(parseXml(text, name, &root), ncclSuccess) << pendingError();
    EXPECT_EQ(writeXml(root), text);
  }
}

TEST(TopoXml, AttributeOrderIsFileOrder) {
  XmlNode root;
  ASSERT_EQ(parseXml("<a zeta=\"1\" alpha=\"2\" mid=\"3\"><b y=\"1\" x=\"2\"/></a>", "t.xml", &root), ncclSuccess);
  ASSERT_EQ(root.attrs.size(), 3u);
  EXPECT_EQ(root.attrs[0].first, "zeta");
  EXPECT_EQ(root.attrs[1].first, "alpha");
  EXPECT_EQ(root.attrs[2].first, "mid");
  EXPECT_EQ(writeXml(root),
            "<?xml version=\"1.0\"?>\n<a zeta=\"1\" alpha=\"2\" mid=\"3\">\n  <b y=\"1\" x=\"2\"/>\n</a>\n");
  // set() keeps an attribute's place and appends a new one at the end.
  root.set("alpha", "9");
  root.set("new", "4");
  EXPECT_EQ(writeXml(root),
            "<?xml version=\"1.0\"?>\n<a zeta=\"1\" alpha=\"9\" mid=\"3\" new=\"4\">\n  <b y=\"1\" x=\"2\"/>\n</a>\n");
}

TEST(TopoXml, EscapesReadAndWritten) {
  XmlNode root;
  ASSERT_EQ(parseXml("<n v=\"a&amp;b&lt;c&gt;d&quot;e&apos;f\" w='say \"hi\"'/>", "t.xml", &root), ncclSuccess);
  EXPECT_EQ(*root.attr("v"), "a&b<c>d\"e'f");
  EXPECT_EQ(*root.attr("w"), "say \"hi\"");
  const std::string text = writeXml(root);
  EXPECT_NE(text.find("v=\"a&amp;b&lt;c&gt;d&quot;e&apos;f\""), std::string::npos) << text;
  EXPECT_NE(text.find("w=\"say &quot;hi&quot;\""), std::string::npos) << text;
  XmlNode again;
  ASSERT_EQ(parseXml(text, "t.xml", &again), ncclSuccess);
  EXPECT_TRUE(sameTree(root, again));
}

TEST(TopoXml, CommentsDeclarationsAndLines) {
  const std::string text =
      "<?xml version=\"1.0\"?>\n"   // 1
      "<!-- a comment\n"            // 2
      "     over lines -->\n"       // 3
      "<system version=\"1\">\n"    // 4
      "  <!-- inside -->\n"         // 5
      "  <cpu numaid=\"0\"\n"       // 6
      "       arch=\"x86_64\"/>\n"  // 7
      "  <cpu numaid=\"1\"/>\n"     // 8
      "</system>\n";
  XmlNode root;
  ASSERT_EQ(parseXml(text, "t.xml", &root), ncclSuccess) << pendingError();
  EXPECT_EQ(root.line, 4);
  ASSERT_EQ(root.children.size(), 2u);
  EXPECT_EQ(root.children[0].line, 6);
  EXPECT_EQ(*root.children[0].attr("arch"), "x86_64");
  EXPECT_EQ(root.children[1].line, 8);
  EXPECT_EQ(root.child("cpu"), &root.children[0]);
  EXPECT_EQ(root.child("gpu"), nullptr);
  EXPECT_EQ(root.attr("missing"), nullptr);
}

TEST(TopoXml, EveryParseErrorNamesFileAndLine) {
  struct Case {
    const char* what;
    const char* text;
    const char* expect;  // the whole message starts with this
  };
  const Case cases[] = {
      {"unclosed tag", "<system>\n  <cpu>\n  </cpu>\n", "inline.xml:4: no end tag for: <system> of line 1"},
      {"mismatched end tag", "<system>\n  <cpu>\n  </pci>\n</system>\n",
       "inline.xml:3: mismatched end tag: </pci> closes <cpu> of line 2"},
      {"duplicate attribute", "<system>\n<cpu numaid=\"0\"\n numaid=\"1\"/>\n</system>",
       "inline.xml:3: duplicate attribute: numaid of <cpu>"},
      {"unknown entity", "<a>\n<b v=\"&nbsp;\"/></a>", "inline.xml:2: unknown entity: &nbsp;"},
      {"ampersand without ';'", "<a v=\"fish & chips\"/>", "inline.xml:1: '&' without ';'"},
      {"text inside element", "<a>\n  <b/>\n  hello\n</a>", "inline.xml:3: text inside: <a>"},
      {"second root", "<a/>\n\n<b/>\n", "inline.xml:3: a second root element"},
      {"text after root", "<a/>\nzzz", "inline.xml:2: text after the root element"},
      {"unterminated comment", "<a>\n<!-- never\nclosed\n</a>", "inline.xml:2: unterminated comment"},
      {"no root", "<!-- only -->\n", "inline.xml:2: no root element"},
      {"empty text", "", "inline.xml:1: no root element"},
      {"unterminated value", "<a\n v=\"open/>", "inline.xml:2: unterminated value of attribute: v"},
      {"unquoted value", "<a v=1/>", "inline.xml:1: unquoted value of attribute: v"},
      {"'<' in a value", "<a v=\"<\"/>", "inline.xml:1: '<' in the value of attribute: v"},
      {"no '=' after a name", "<a v/>", "inline.xml:1: expected '=' after attribute: v"},
      {"no space between attributes", "<a v=\"1\"w=\"2\"/>",
       "inline.xml:1: expected whitespace before an attribute of: <a"},
      {"unterminated start tag", "<a v=\"1\"", "inline.xml:1: unterminated element: <a"},
      {"unterminated end tag", "<a>\n</a", "inline.xml:2: unterminated end tag: </a"},
      {"unterminated declaration", "<?xml version=\"1.0\"\n<a/>", "inline.xml:1: unterminated <? ... ?>"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg = parseError(c.text);
    EXPECT_EQ(msg.rfind(c.expect, 0), 0u) << "got: " << msg;
  }
}

TEST(TopoXml, NestingDepthIsBounded) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  for (int i = 0; i < 100; ++i) deep += "</a>";
  EXPECT_NE(parseError(deep).find("nested too deep"), std::string::npos);
}

TEST(TopoXml, MissingFileIsNamed) {
  clearPendingError();
  XmlNode root;
  const std::string path = "/nonexistent/dir/topo.xml";
  EXPECT_EQ(readXmlFile(path, &root), ncclInvalidArgument);
  EXPECT_EQ(pendingError().rfind(path + ": cannot open the file", 0), 0u) << pendingError();
  clearPendingError();
}

TEST(TopoXml, UnreadableFileIsNamed) {
  // A directory opens but cannot be read: that must not pass as an empty file.
  clearPendingError();
  XmlNode root;
  EXPECT_EQ(readXmlFile("/tmp", &root), ncclInvalidArgument);
  EXPECT_EQ(pendingError().rfind("/tmp: cannot read the file", 0), 0u) << pendingError();
  clearPendingError();
}

TEST(TopoXml, ByteOrderMarkIsSkipped) {
  XmlNode root;
  ASSERT_EQ(parseXml("\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<system version=\"1\"/>\n", "bom.xml", &root), ncclSuccess)
      << pendingError();
  EXPECT_EQ(root.name, "system");
  EXPECT_EQ(root.line, 2);
  // Only first: elsewhere those bytes are text.
  EXPECT_EQ(parseError("<a>\xEF\xBB\xBF</a>").rfind("inline.xml:1: text inside: <a>", 0), 0u);
}

TEST(TopoXml, FileWriteAndReadBack) {
  char dir[] = "/tmp/braid_topo_xml_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/out.xml";
  XmlNode root;
  root.name = "system";
  root.set("version", "1");
  root.add("cpu").set("numaid", "0");
  ASSERT_EQ(writeXmlFile(path, root), ncclSuccess) << pendingError();
  EXPECT_EQ(readText(path), writeXml(root));
  XmlNode back;
  ASSERT_EQ(readXmlFile(path, &back), ncclSuccess) << pendingError();
  EXPECT_TRUE(sameTree(root, back));
  EXPECT_EQ(back.children[0].line, 3);

  clearPendingError();
  const std::string bad = std::string(dir) + "/no/such/dir/out.xml";
  EXPECT_EQ(writeXmlFile(bad, root), ncclSystemError);
  EXPECT_EQ(pendingError().rfind(bad + ": cannot write the file", 0), 0u) << pendingError();
  clearPendingError();
  std::remove(path.c_str());
  rmdir(dir);
}

}  // namespace
