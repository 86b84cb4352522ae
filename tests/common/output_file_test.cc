#include "hyperpipe/common/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe {
namespace {

namespace fs = std::filesystem;
using hyperpipe::testing::temp_path;

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A fresh directory holding a file that must never change.
struct Scene {
  std::string dir = temp_path("output-file");
  std::string victim = dir + "/victim";
  std::string out = dir + "/plan.json";
  Scene() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(victim) << "precious";
  }
  ~Scene() { fs::remove_all(dir); }
};

TEST(WriteFileAtomically, WritesWithTheUsualPermissionsAndLeavesNoTemporary) {
  Scene scene;
  write_file_atomically(scene.out, "{}");
  EXPECT_EQ(read(scene.out), "{}");
  struct stat info {};
  ASSERT_EQ(stat(scene.out.c_str(), &info), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(info.st_mode & 0777, 0666 & ~mask);
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(scene.dir)) ++entries;
  EXPECT_EQ(entries, 2);  // the victim and the output
}

TEST(WriteFileAtomically, APlantedLinkAtTheOldTemporaryNameRedirectsNothing) {
  // Temporaries were once `<out>.tmp.<pid>`, opened following links: a link planted there
  // sent the output into another file.
  Scene scene;
  fs::create_symlink(scene.victim, scene.out + ".tmp." + std::to_string(getpid()));
  write_file_atomically(scene.out, "the plan");
  EXPECT_EQ(read(scene.victim), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(scene.out)));
  EXPECT_EQ(read(scene.out), "the plan");
}

TEST(WriteFileAtomically, AnOutputThatIsALinkIsReplacedNotFollowed) {
  Scene scene;
  fs::create_symlink(scene.victim, scene.out);
  write_file_atomically(scene.out, "the plan");
  EXPECT_EQ(read(scene.victim), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(scene.out)));
}

TEST(WriteFileAtomically, AMissingDirectoryIsAnInputError) {
  Scene scene;
  EXPECT_THROW(write_file_atomically(scene.dir + "/no/such/plan.json", "x"), InputError);
}

TEST(AtomicFileWriter, WritesPieceByPieceAndShowsNothingUntilCommitted) {
  Scene scene;
  {
    AtomicFileWriter file(scene.out);
    file.write("{\"a\": ");
    file.write("1}");
    EXPECT_EQ(file.bytes_written(), 8U);
    EXPECT_FALSE(fs::exists(scene.out));
    file.commit();
  }
  EXPECT_EQ(read(scene.out), "{\"a\": 1}");
}

TEST(AtomicFileWriter, AbandonedItLeavesTheOldFileAndNoTemporary) {
  Scene scene;
  std::ofstream(scene.out) << "old";
  {
    AtomicFileWriter file(scene.out);
    file.write("new, but never committed");
  }
  EXPECT_EQ(read(scene.out), "old");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(scene.dir)) ++entries;
  EXPECT_EQ(entries, 2);
}

}  // namespace
}  // namespace hyperpipe
