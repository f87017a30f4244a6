// topo_xml: the DOM, parser and writer of topology XML (see topo_xml.h).
#include "topology/topo_xml.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/result.h"

namespace braid {

const std::string* XmlNode::attr(const std::string& key) const {
  for (const auto& a : attrs)
    if (a.first == key) return &a.second;
  return nullptr;
}

void XmlNode::set(const std::string& key, const std::string& value) {
  for (auto& a : attrs) {
    if (a.first == key) {
      a.second = value;
      return;
    }
  }
  attrs.emplace_back(key, value);
}

const XmlNode* XmlNode::child(const std::string& n) const {
  for (const XmlNode& c : children)
    if (c.name == n) return &c;
  return nullptr;
}

XmlNode& XmlNode::add(const std::string& n) {
  children.emplace_back();
  children.back().name = n;
  return children.back();
}

namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  ncclResult_t document(XmlNode* root) {
    // A UTF-8 byte order mark, which editors on Windows put first in a hand-edited file.
    if (at("\xEF\xBB\xBF")) pos_ = 3;
    BRAID_CHECK(skipMiscChecked());
    if (!atElementStart()) return fail("no root element");
    BRAID_CHECK(element(root, 0));
    BRAID_CHECK(skipMiscChecked());
    if (pos_ < s_.size()) return fail(atElementStart() ? "a second root element" : "text after the root element");
    return ncclSuccess;
  }

 private:
  static constexpr int kMaxDepth = 64;

  ncclResult_t fail(const char* what, const std::string& detail = "") {
    return recordError(ncclInvalidArgument, "%s:%d: %s%s%s", file_.c_str(), line_, what, detail.empty() ? "" : ": ",
                       detail.c_str());
  }
  bool at(const char* lit) const { return s_.compare(pos_, std::strlen(lit), lit) == 0; }
  void advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i)
      if (s_[pos_++] == '\n') ++line_;
  }
  void skipSpace() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_])) advance(1);
  }
  bool atElementStart() const { return pos_ + 1 < s_.size() && s_[pos_] == '<' && isNameStart(s_[pos_ + 1]); }
  static bool isNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
  static bool isNameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' || c == '.';
  }
  // Whitespace, comments and the <?xml ...?> declaration (and other processing instructions) between elements.
  ncclResult_t skipMiscChecked() {
    for (;;) {
      skipSpace();
      if (at("<!--")) {
        const size_t end = s_.find("-->", pos_ + 4);
        if (end == std::string::npos) return fail("unterminated comment");
        advance(end + 3 - pos_);
      } else if (at("<?")) {
        const size_t end = s_.find("?>", pos_ + 2);
        if (end == std::string::npos) return fail("unterminated <? ... ?>");
        advance(end + 2 - pos_);
      } else {
        return ncclSuccess;
      }
    }
  }

  ncclResult_t name(std::string* out) {
    if (pos_ >= s_.size() || !isNameStart(s_[pos_])) return fail("expected a name");
    const size_t start = pos_;
    while (pos_ < s_.size() && isNameChar(s_[pos_])) ++pos_;
    *out = s_.substr(start, pos_ - start);
    return ncclSuccess;
  }

  ncclResult_t unescape(const std::string& raw, std::string* out) {
    out->clear();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '&') {
        out->push_back(raw[i]);
        continue;
      }
      const size_t semi = raw.find(';', i);
      if (semi == std::string::npos) return fail("'&' without ';'");
      const std::string ent = raw.substr(i + 1, semi - i - 1);
      if (ent == "amp") out->push_back('&');
      else if (ent == "lt") out->push_back('<');
      else if (ent == "gt") out->push_back('>');
      else if (ent == "quot") out->push_back('"');
      else if (ent == "apos") out->push_back('\'');
      else return fail("unknown entity", "&" + ent + ";");
      i = semi;
    }
    return ncclSuccess;
  }

  ncclResult_t element(XmlNode* node, int depth) {
    if (depth > kMaxDepth) return fail("elements nested too deep");
    node->line = line_;
    advance(1);  // '<'
    BRAID_CHECK(name(&node->name));
    for (;;) {
      const size_t before = pos_;
      skipSpace();
      if (pos_ >= s_.size()) return fail("unterminated element", "<" + node->name);
      if (at("/>")) {
        advance(2);
        return ncclSuccess;
      }
      if (s_[pos_] == '>') {
        advance(1);
        break;
      }
      if (pos_ == before) return fail("expected whitespace before an attribute of", "<" + node->name);
      std::string key, raw, value;
      BRAID_CHECK(name(&key));
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '=') return fail("expected '=' after attribute", key);
      advance(1);
      skipSpace();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) return fail("unquoted value of attribute", key);
      const char quote = s_[pos_];
      const size_t end = s_.find(quote, pos_ + 1);
      if (end == std::string::npos) return fail("unterminated value of attribute", key);
      raw = s_.substr(pos_ + 1, end - pos_ - 1);
      if (raw.find('<') != std::string::npos) return fail("'<' in the value of attribute", key);
      advance(end + 1 - pos_);
      BRAID_CHECK(unescape(raw, &value));
      if (node->attr(key)) return fail("duplicate attribute", key + " of <" + node->name + ">");
      node->attrs.emplace_back(key, value);
    }
    // Children until the matching end tag; only whitespace and comments between them.
    for (;;) {
      BRAID_CHECK(skipMiscChecked());
      if (pos_ >= s_.size()) return fail("no end tag for", "<" + node->name + "> of line " + std::to_string(node->line));
      if (at("</")) {
        advance(2);
        std::string closing;
        BRAID_CHECK(name(&closing));
        skipSpace();
        if (pos_ >= s_.size() || s_[pos_] != '>') return fail("unterminated end tag", "</" + closing);
        advance(1);
        if (closing != node->name)
          return fail("mismatched end tag", "</" + closing + "> closes <" + node->name + "> of line " +
                                                std::to_string(node->line));
        return ncclSuccess;
      }
      if (atElementStart()) {
        node->children.emplace_back();
        BRAID_CHECK(element(&node->children.back(), depth + 1));
        continue;
      }
      return fail("text inside", "<" + node->name + ">");
    }
  }

  const std::string& s_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
};

void escapeInto(const std::string& v, std::string* out) {
  for (char c : v) {
    switch (c) {
      case '&': *out += "&amp;"; break;
      case '<': *out += "&lt;"; break;
      case '>': *out += "&gt;"; break;
      case '"': *out += "&quot;"; break;
      case '\'': *out += "&apos;"; break;
      default: out->push_back(c);
    }
  }
}

void writeElement(const XmlNode& n, int depth, std::string* out) {
  out->append(static_cast<size_t>(depth) * 2, ' ');
  *out += "<" + n.name;
  for (const auto& a : n.attrs) {
    *out += " " + a.first + "=\"";
    escapeInto(a.second, out);
    *out += "\"";
  }
  if (n.children.empty()) {
    *out += "/>\n";
    return;
  }
  *out += ">\n";
  for (const XmlNode& c : n.children) writeElement(c, depth + 1, out);
  out->append(static_cast<size_t>(depth) * 2, ' ');
  *out += "</" + n.name + ">\n";
}

}  // namespace

ncclResult_t parseXml(const std::string& text, const std::string& fileName, XmlNode* root) {
  XmlNode parsed;
  Parser p(text, fileName);
  BRAID_CHECK(p.document(&parsed));
  *root = std::move(parsed);
  return ncclSuccess;
}

ncclResult_t readXmlFile(const std::string& path, XmlNode* root) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    const int e = errno;
    return recordError(ncclInvalidArgument, "%s: cannot open the file: %s", path.c_str(), std::strerror(e));
  }
  // Read errors must be seen as such: a directory opens, then fails every read (EISDIR), and would otherwise
  // read as an empty file ("no root element").
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  errno = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int e = errno;
  std::fclose(f);
  if (failed)
    return recordError(ncclInvalidArgument, "%s: cannot read the file: %s", path.c_str(),
                       std::strerror(e != 0 ? e : EIO));
  return parseXml(text, path, root);
}

std::string writeXml(const XmlNode& root) {
  std::string out = "<?xml version=\"1.0\"?>\n";
  writeElement(root, 0, &out);
  return out;
}

ncclResult_t writeXmlFile(const std::string& path, const XmlNode& root) {
  const std::string text = writeXml(root);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    const int e = errno;
    return recordError(ncclSystemError, "%s: cannot write the file: %s", path.c_str(), std::strerror(e));
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return recordError(ncclSystemError, "%s: writing the file failed", path.c_str());
  return ncclSuccess;
}

}  // namespace braid
