// compile_kernel end to end on a tiny kernel: build, disk cache reuse,
// no-cache builds, IR/C++ dumps, the explain report and the version string.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "jit/loader.h"
#include "runtime/abi.h"

namespace plait {
namespace {
namespace fs = std::filesystem;

class CompilerDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "plait-driver-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    source_.path = "/somewhere/kernels.py";
    source_.text = "def add(a, b):\n    return a + b\n";
    source_.first_line = 1;
    options_.cache_dir = root_ + "/cache";
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  // Calls a compiled add(a: f64, b: f64) -> f64.
  static double call_add(const CompiledKernel& kernel, double a, double b) {
    void* args[] = {&a, &b};
    plait_result results[1] = {};
    plait_context context = {};
    context.num_threads = 1;
    EXPECT_EQ(kernel.entry(args, results, &context), PLAIT_OK);
    EXPECT_EQ(results[0].is_array, 0);
    return results[0].f64;
  }
  std::string root_;
  SourceFile source_;
  CompileOptions options_;
};

TEST_F(CompilerDriver, BuildsThenReusesTheDiskCache) {
  Signature signature = Signature::parse("f64, f64");
  auto first = compile_kernel(source_, "add", signature, {}, options_);
  ASSERT_NE(first->entry, nullptr);
  EXPECT_FALSE(first->from_disk_cache);
  EXPECT_EQ(first->name, "add");
  EXPECT_EQ(first->results.size(), 1u);
  EXPECT_EQ(call_add(*first, 1.25, 2.25), 3.5);
  EXPECT_EQ(first->library_path.rfind(options_.cache_dir, 0), 0u) << first->library_path;
  EXPECT_TRUE(fs::exists(first->library_path));
  EXPECT_NE(first->source.find(PLAIT_ENTRY_SYMBOL), std::string::npos);
  EXPECT_NE(first->explain.find("kernel add("), std::string::npos) << first->explain;

  auto second = compile_kernel(source_, "add", signature, {}, options_);
  EXPECT_TRUE(second->from_disk_cache);
  EXPECT_EQ(second->library_path, first->library_path);
  EXPECT_NE(second->explain.find("from the disk cache"), std::string::npos) << second->explain;
  EXPECT_EQ(call_add(*second, -1.0, 0.5), -0.5);

  // Another signature is another kernel.
  auto ints = compile_kernel(source_, "add", Signature::parse("i64, i64"), {}, options_);
  EXPECT_FALSE(ints->from_disk_cache);
  EXPECT_NE(ints->library_path, first->library_path);
}

TEST_F(CompilerDriver, NoCacheBuildsPrivatelyAndLeavesNothingBehind) {
  options_.disk_cache = false;
  auto kernel = compile_kernel(source_, "add", Signature::parse("f64, f64"), {}, options_);
  EXPECT_EQ(call_add(*kernel, 2.0, 3.0), 5.0);
  EXPECT_TRUE(kernel->library_path.empty());
  EXPECT_FALSE(kernel->from_disk_cache);
  EXPECT_FALSE(fs::exists(options_.cache_dir));
}

TEST_F(CompilerDriver, DumpDirectoryGetsEveryPassAndTheSource) {
  options_.dump_dir = root_ + "/dump";
  auto kernel = compile_kernel(source_, "add", Signature::parse("f64, f64"), {}, options_);
  EXPECT_TRUE(fs::exists(options_.dump_dir + "/add.00.lower_to_ir.ir"));
  EXPECT_TRUE(fs::exists(options_.dump_dir + "/add.cpp"));
  // Every step is listed; the IR is written after those that changed it.
  std::ifstream steps(options_.dump_dir + "/add.passes");
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(steps, line)) lines.push_back(line);
  ASSERT_GE(lines.size(), 9U);
  EXPECT_EQ(lines[0], "00 lower_to_ir");
  EXPECT_EQ(lines[1], "01 split_variable_webs (unchanged)");
  EXPECT_EQ(lines[2], "02 hoist_invariant_arrays (unchanged)");
  EXPECT_EQ(lines[3], "03 fuse_loop_nests (unchanged)");
  EXPECT_FALSE(fs::exists(options_.dump_dir + "/add.03.fuse_loop_nests.ir"));
}

TEST_F(CompilerDriver, LowerKernelReportsUserErrors) {
  EXPECT_THROW(lower_kernel(source_, "no_such_function", Signature::parse("f64, f64"), {}, options_), CompileError);
}

TEST_F(CompilerDriver, CudaTargetGeneratesTheDevicePart) {
  LoweredKernel lowered = lower_kernel(source_, "add", Signature::parse("f64, f64"), {}, options_);
  EXPECT_FALSE(lowered.ir_text.empty());
  options_.target = Target::CUDA;
  EXPECT_NE(generate_source(lowered.function, options_).find("plait device runtime"), std::string::npos);
}

TEST(CudaLaunchConfig, AllowedValuesAndText) {
  CudaLaunchConfig config;
  EXPECT_EQ(launch_config_error(config), "");
  EXPECT_EQ(config.to_string(), "threads 256, row groups 4, largest team 256");
  for (int threads : {64, 128, 512, 1024}) {
    config.threads = threads;
    EXPECT_EQ(launch_config_error(config), "") << threads;
  }
  for (int threads : {0, 32, 96, 2048}) {
    config.threads = threads;
    EXPECT_NE(launch_config_error(config).find("threads (per block) must be 64, 128, 256, 512 or 1024"),
              std::string::npos);
  }
  config = CudaLaunchConfig{};
  config.row_groups = 3;
  EXPECT_NE(launch_config_error(config).find("row_groups must be 1, 2, 4 or 8, not 3"), std::string::npos);
  config = CudaLaunchConfig{};
  config.threads = 128;
  config.max_team = 256;
  EXPECT_NE(launch_config_error(config).find("max_team must be a power of two from 32 to threads (128)"),
            std::string::npos);
  config.max_team = 64;
  EXPECT_EQ(launch_config_error(config), "");
  EXPECT_EQ(config.to_string(), "threads 128, row groups 4, largest team 64");
}

TEST_F(CompilerDriver, LaunchConfigurationReachesTheDevicePart) {
  source_.text = "def inc(a):\n    #pragma parallel for\n    for i in range(a.shape[0]):\n        a[i] += 1.0\n";
  options_.target = Target::CUDA;
  LoweredKernel lowered = lower_kernel(source_, "inc", Signature::parse("f64[::1]"), {}, options_);
  EXPECT_NE(generate_source(lowered.function, options_).find("__launch_bounds__(256)"), std::string::npos);
  // The workers are planned for the configuration (transforms/gpu/plan_workers),
  // which the code generator must then have.
  options_.cuda_launch.threads = 1024;
  EXPECT_THROW(generate_source(lowered.function, options_), InternalError);
  lowered = lower_kernel(source_, "inc", Signature::parse("f64[::1]"), {}, options_);
  const std::string device = generate_source(lowered.function, options_);
  EXPECT_NE(device.find("__launch_bounds__(1024)"), std::string::npos);
  EXPECT_NE(device.find("// launch configuration: threads 1024, row groups 4, largest team 1024"),
            std::string::npos);
  options_.cuda_launch.threads = 100;
  EXPECT_THROW(generate_source(lowered.function, options_), InternalError);
}

TEST(CompilerVersion, CarriesTheAbiVersion) {
  std::string version = compiler_version();
  EXPECT_EQ(version, std::string(PLAIT_VERSION) + "+abi" + std::to_string(PLAIT_ABI_VERSION));
}

}  // namespace
}  // namespace plait
