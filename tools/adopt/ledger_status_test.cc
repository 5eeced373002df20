// `rackwise status --ledger`'s table and JSON from a ledger service's Status.
#include "ledger_status.h"

#include <gtest/gtest.h>

namespace rackwise::adopt {
namespace {

v1::StatusResponse TwoRacks() {
  v1::StatusResponse s;
  s.set_leader_id("a");
  s.set_leader_address("127.0.0.1:8890");
  s.set_replica_id("b");
  s.set_allocations(3);
  v1::RackDraw* r1 = s.add_racks();
  r1->set_rack("r1");
  r1->set_cap_kw(24);
  r1->set_idle_kw(8);
  r1->set_slurm_kw(8);
  r1->set_k8s_kw(6);
  v1::RackDraw* r2 = s.add_racks();
  r2->set_rack("r2");
  r2->set_cap_kw(24);
  r2->set_idle_kw(8);
  r2->set_other_kw(3);
  return s;
}

TEST(LedgerStatusTest, EachRackSplitsItsDrawByOwnerAndSaysWhatIsLeft) {
  const nlohmann::ordered_json j = LedgerStatusJson(TwoRacks(), "127.0.0.1:8891");
  ASSERT_EQ(j["racks"].size(), 2u);
  EXPECT_EQ(j["racks"][0]["rack"], "r1");
  EXPECT_DOUBLE_EQ(j["racks"][0]["slurm_kw"], 8);
  EXPECT_DOUBLE_EQ(j["racks"][0]["k8s_kw"], 6);
  EXPECT_DOUBLE_EQ(j["racks"][0]["draw_kw"], 22);
  EXPECT_DOUBLE_EQ(j["racks"][0]["left_kw"], 2);
  EXPECT_DOUBLE_EQ(j["racks"][1]["other_kw"], 3);
  EXPECT_DOUBLE_EQ(j["racks"][1]["left_kw"], 13);
  EXPECT_EQ(j["leader_id"], "a");
  EXPECT_EQ(j["allocations"], 3);
}

TEST(LedgerStatusTest, TableNamesTheLeaderAndOneLinePerRack) {
  const std::string table = LedgerStatusTable(TwoRacks(), "127.0.0.1:8891");
  EXPECT_NE(table.find("3 allocations, leader a at 127.0.0.1:8890"), std::string::npos) << table;
  EXPECT_NE(
      table.find("r1                            24.0       8.0       8.0       6.0       0.0      22.0       2.0"),
      std::string::npos)
      << table;
  v1::StatusResponse leaderless = TwoRacks();
  leaderless.clear_leader_id();
  EXPECT_NE(LedgerStatusTable(leaderless, "x").find("no leader"), std::string::npos);
}

}  // namespace
}  // namespace rackwise::adopt
