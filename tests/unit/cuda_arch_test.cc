// cudaArchFit: the CMake architecture list against a GPU's compute capability (native SASS, PTX only, none).
#include <gtest/gtest.h>

#include "runtime/gpu/cuda_arch.h"

using braid::ArchFit;
using braid::cudaArchFit;

TEST(CudaArch, SassRunsOnSameMajorSameOrHigherMinor) {
  EXPECT_EQ(cudaArchFit("90", 9, 0), ArchFit::Native);
  EXPECT_EQ(cudaArchFit("80", 8, 6), ArchFit::Native);
  EXPECT_EQ(cudaArchFit("86", 8, 0), ArchFit::None);   // no SASS for 8.0 and PTX 8.6 is newer than the GPU
  EXPECT_EQ(cudaArchFit("80", 9, 0), ArchFit::PtxOnly);  // a newer major: only the PTX
  EXPECT_EQ(cudaArchFit("100", 10, 0), ArchFit::Native);
  EXPECT_EQ(cudaArchFit("100", 9, 0), ArchFit::None);
}

TEST(CudaArch, TheCuda13DefaultOnHopperIsPtxOnly) {
  // CMake's default with CUDA 13 (what a build took before the top-level CMakeLists chose 90 itself).
  EXPECT_EQ(cudaArchFit("75", 9, 0), ArchFit::PtxOnly);
  EXPECT_EQ(cudaArchFit("75", 7, 5), ArchFit::Native);
}

TEST(CudaArch, ListsAndSuffixes) {
  EXPECT_EQ(cudaArchFit("75,90", 9, 0), ArchFit::Native);
  EXPECT_EQ(cudaArchFit("75;80", 9, 0), ArchFit::PtxOnly);
  EXPECT_EQ(cudaArchFit("90-virtual", 9, 0), ArchFit::PtxOnly);
  EXPECT_EQ(cudaArchFit("80-real", 9, 0), ArchFit::None);
  EXPECT_EQ(cudaArchFit("90a", 9, 0), ArchFit::Native);
  EXPECT_EQ(cudaArchFit("90a", 10, 0), ArchFit::None);  // arch-specific: no portable PTX either
  EXPECT_EQ(cudaArchFit("100f", 10, 3), ArchFit::Native);
  EXPECT_EQ(cudaArchFit("all-major", 9, 0), ArchFit::Native);
  EXPECT_EQ(cudaArchFit("native", 12, 0), ArchFit::Native);
  EXPECT_EQ(cudaArchFit("", 9, 0), ArchFit::None);
  EXPECT_EQ(cudaArchFit("junk,,", 9, 0), ArchFit::None);
  EXPECT_EQ(cudaArchFit(nullptr, 9, 0), ArchFit::None);
}

TEST(CudaArch, ThisBuildNamesItsList) {
  // The top-level CMakeLists passes the list in; a default build holds sm_90 code.
  EXPECT_STRNE(braid::builtCudaArchs(), "");
}
