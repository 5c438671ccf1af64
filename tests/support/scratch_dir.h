#pragma once
// The test process's scratch folder under the test temporary directory (glass_<pid>), made on first
// use and removed with everything in it when the process exits: ctest runs each test in a process
// of its own, and every one of them left its folder behind before.
#include <filesystem>

namespace glass::test {

const std::filesystem::path& scratch_dir();

}  // namespace glass::test
