// SPDX-License-Identifier: GPL-2.0-or-later
// The ledger publisher: writes when the text changes (and only then), replaces the file by rename, skips busy
// rounds, logs a failing write once, and its thread publishes on its own and stops when destroyed.
#include "state_publisher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace rackwise::slurm {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ino_t Inode(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/rackwise_publisher_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

constexpr milliseconds kNever{3'600'000};  // the thread stays asleep: the test drives PublishOnce

TEST(StatePublisher, WritesOnlyWhenTheTextChanges) {
  TempDir dir;
  fs::path file = dir.path / "state.yaml";
  std::optional<std::string> text = "allocations: []\n";
  std::vector<std::string> logged;
  StatePublisher publisher(
      file.string(), kNever, [&] { return text; }, [&](const std::string& m) { logged.push_back(m); });
  publisher.PublishOnce();
  EXPECT_EQ(Read(file), "allocations: []\n");
  ino_t first = Inode(file);
  publisher.PublishOnce();  // same text: the file is left alone
  EXPECT_EQ(Inode(file), first);
  text = "allocations:\n  - id: '1'\n";
  publisher.PublishOnce();
  EXPECT_EQ(Read(file), *text);
  EXPECT_NE(Inode(file), first);  // a new file renamed over the old one, not rewritten in place
  EXPECT_FALSE(fs::exists(dir.path / "state.yaml.tmp"));
  text = std::nullopt;  // busy: keep what is there
  publisher.PublishOnce();
  EXPECT_EQ(Read(file), "allocations:\n  - id: '1'\n");
  EXPECT_TRUE(logged.empty());
}

TEST(StatePublisher, LogsAFailingWriteOnce) {
  std::vector<std::string> logged;
  int round = 0;
  StatePublisher publisher(
      "/nonexistent-dir/state.yaml", kNever, [&] { return std::to_string(++round); },
      [&](const std::string& m) { logged.push_back(m); });
  publisher.PublishOnce();
  publisher.PublishOnce();
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("/nonexistent-dir/state.yaml.tmp"), std::string::npos);
}

TEST(StatePublisher, ItsThreadPublishesAndStops) {
  TempDir dir;
  fs::path file = dir.path / "state.yaml";
  std::atomic<int> calls = 0;
  {
    StatePublisher publisher(
        file.string(), milliseconds(10), [&] { return "n: " + std::to_string(++calls / 1000); },
        [](const std::string&) {});
    for (int i = 0; i < 1000 && !fs::exists(file); ++i) std::this_thread::sleep_for(milliseconds(10));
    ASSERT_TRUE(fs::exists(file)) << "not published within 10 s";
  }
  int after_stop = calls;
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(calls, after_stop);  // the destructor joined the thread
}

TEST(StatePublisher, WritesEachFileOfOneSnapshotAndLeavesAnUnsetOneAlone) {
  TempDir dir;
  fs::path state = dir.path / "state.yaml", limits = dir.path / "limits";
  std::vector<std::optional<std::string>> texts = {"s1", "l1"};
  StatePublisher publisher(
      std::vector<std::string>{state.string(), limits.string()}, kNever, [&] { return texts; },
      [](const std::string&) {});
  publisher.PublishOnce();
  EXPECT_EQ(Read(state), "s1");
  EXPECT_EQ(Read(limits), "l1");
  texts = {"s2", std::nullopt};  // the limits are not known this round: the file keeps the last ones
  publisher.PublishOnce();
  EXPECT_EQ(Read(state), "s2");
  EXPECT_EQ(Read(limits), "l1");
  texts = {};  // busy: nothing written
  publisher.PublishOnce();
  EXPECT_EQ(Read(state), "s2");
}

TEST(StatePublisher, WakeRunsARoundBeforeTheInterval) {
  TempDir dir;
  fs::path file = dir.path / "state.yaml";
  std::atomic<int> calls = 0;
  StatePublisher publisher(
      file.string(), kNever, [&] { return "n: " + std::to_string(++calls); }, [](const std::string&) {});
  publisher.Wake();
  for (int i = 0; i < 1000 && !fs::exists(file); ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(fs::exists(file)) << "not woken within 10 s";
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace rackwise::slurm
