// core/library_info: finding the other NCCL libraries of a process in its maps text (own file excluded by
// device and inode, plugins and non-NCCL files ignored, each file once) and Braid's version string.
#include "core/library_info.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace braid {
namespace {

class LibraryInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/braid_libinfo_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(mkdir((dir_ + "/braid").c_str(), 0700), 0);
    ASSERT_EQ(mkdir((dir_ + "/nvidia").c_str(), 0700), 0);
    for (const char* f : {"/braid/libbraid.so", "/nvidia/libnccl.so.2", "/nvidia/libnccl-net.so", "/libcudart.so.13"})
      touch(dir_ + f);
    ASSERT_EQ(symlink("libbraid.so", (dir_ + "/braid/libnccl.so.2").c_str()), 0);
  }
  void TearDown() override {
    for (const char* f : {"/braid/libnccl.so.2", "/braid/libbraid.so", "/nvidia/libnccl.so.2", "/nvidia/libnccl-net.so",
                          "/libcudart.so.13"})
      unlink((dir_ + f).c_str());
    rmdir((dir_ + "/braid").c_str());
    rmdir((dir_ + "/nvidia").c_str());
    rmdir(dir_.c_str());
  }
  static void touch(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr) << path;
    std::fputs("x", f);
    std::fclose(f);
  }
  std::string line(const std::string& path) const {
    return "7f0000000000-7f0000001000 r-xp 00000000 08:01 1234                       " + path + "\n";
  }
  std::string dir_;
};

TEST_F(LibraryInfoTest, FindsOtherNcclButNotItselfPluginsOrOtherLibraries) {
  const std::string maps = line(dir_ + "/braid/libnccl.so.2") +  // our file under its soname link
                           line(dir_ + "/braid/libbraid.so") + line(dir_ + "/nvidia/libnccl.so.2") +
                           line(dir_ + "/nvidia/libnccl.so.2") +  // a second mapping of the same file
                           line(dir_ + "/nvidia/libnccl-net.so") + line(dir_ + "/libcudart.so.13") +
                           "7f0000002000-7f0000003000 rw-p 00000000 00:00 0 \n" +
                           "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n";
  const auto others = otherNcclLibrariesIn(maps, dir_ + "/braid/libnccl.so.2");
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0], dir_ + "/nvidia/libnccl.so.2");
  // Named by its real file, ours is still ours.
  EXPECT_EQ(otherNcclLibrariesIn(maps, dir_ + "/braid/libbraid.so"), others);
  EXPECT_TRUE(otherNcclLibrariesIn(line(dir_ + "/braid/libbraid.so"), dir_ + "/braid/libnccl.so.2").empty());
  EXPECT_TRUE(otherNcclLibrariesIn("", dir_ + "/braid/libbraid.so").empty());
}

TEST_F(LibraryInfoTest, PathsWithSpacesAreRead) {
  ASSERT_EQ(mkdir((dir_ + "/a b").c_str(), 0700), 0);
  touch(dir_ + "/a b/libnccl.so.2");
  const auto others = otherNcclLibrariesIn(line(dir_ + "/a b/libnccl.so.2"), dir_ + "/braid/libbraid.so");
  unlink((dir_ + "/a b/libnccl.so.2").c_str());
  rmdir((dir_ + "/a b").c_str());
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0], dir_ + "/a b/libnccl.so.2");
}

TEST(LibraryInfo, VersionStringNamesBraidAndTheProjectVersion) {
  const std::string v = braidVersionString();
  EXPECT_EQ(v.rfind("Braid ", 0), 0u) << v;
  EXPECT_NE(v.find_first_of("0123456789"), std::string::npos) << v;
  EXPECT_EQ(v.find("unknown"), std::string::npos) << "BRAID_VERSION was not passed to the build: " << v;
}

}  // namespace
}  // namespace braid
