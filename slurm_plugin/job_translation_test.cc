// SPDX-License-Identifier: GPL-2.0-or-later
// The select plugin's translation of Slurm records, on records built in memory the way slurmctld fills them
// (job_record_t, job_details_t, a GRES list of gres_job_state_t, node and GPU bitmaps), compiled against Slurm's
// headers and linked with libslurm for its bitmaps and lists: no daemon.
#include "job_translation.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {
namespace {

constexpr uint32_t kGpuId = 7696487;  // gres_build_id("gpu"); any id works as long as both sides agree
constexpr uint32_t kOtherId = 42;     // another GRES (a NIC, say), which must not count

// slurm.conf's node table: a login node without GPUs first, then two HGX nodes and three NVL trays.
constexpr char kDescription[] = R"(cluster: t
node_types:
  - {name: hgx, gpus: 8, nvlink: node, gpu_watts: 700, node_watts: 10200, idle_watts: 2500}
  - {name: nvl, gpus: 4, nvlink: rack, gpu_watts: 1200, node_watts: 6600, idle_watts: 1500}
racks:
  - {name: r1, type: hgx, nodes: "g[1-2]", power_cap_kw: 41}
  - {name: n1, type: nvl, nodes: "t[1-3]", power_cap_kw: 40}
)";
const std::vector<SlurmNode> kSlurmNodes = {{"login", 0}, {"g1", 8}, {"g2", 8}, {"t1", 4}, {"t2", 4}, {"t3", 4}};
constexpr int kNodeCount = 6;

// A job record as slurmctld keeps it, with the pieces it points at owned here.
class SlurmJob {
 public:
  SlurmJob() {
    job_.job_id = 17;
    job_.details = &details_;
    job_.gres_list_req = list_create(nullptr);
    job_.gres_list_alloc = list_create(nullptr);
  }
  ~SlurmJob() {
    FREE_NULL_LIST(job_.gres_list_req);
    FREE_NULL_LIST(job_.gres_list_alloc);
    for (bitstr_t*& b : bitmaps_) FREE_NULL_BITMAP(b);
  }
  SlurmJob(const SlurmJob&) = delete;
  SlurmJob& operator=(const SlurmJob&) = delete;

  job_record_t* job() { return &job_; }
  JobDetails& details() { return details_; }
  // The job's partition, holding `nodes` (Slurm node indices).
  void SetPartition(int size, std::vector<int> nodes) {
    partition_.node_bitmap = Bits(size, std::move(nodes));
    job_.part_ptr = &partition_;
  }
  // A GRES request entry (--gpus, --gpus-per-node, ...); the list does not own it.
  gres_job_state_t& Request(uint32_t plugin_id) { return AddState(job_.gres_list_req, plugin_id); }
  gres_job_state_t& Allocated(uint32_t plugin_id) { return AddState(job_.gres_list_alloc, plugin_id); }
  void SetEnv(std::vector<std::string> env) {
    env_ = std::move(env);
    env_ptrs_.clear();
    for (std::string& e : env_) env_ptrs_.push_back(e.data());
    job_.spank_job_env = env_ptrs_.data();
    job_.spank_job_env_size = static_cast<uint32_t>(env_ptrs_.size());
  }
  // A bitmap of `size` bits with `set` on, freed with the job.
  bitstr_t* Bits(int size, std::vector<int> set) {
    bitstr_t* b = bit_alloc(size);
    for (int i : set) bit_set(b, i);
    bitmaps_.push_back(b);
    return b;
  }
  // Per-node arrays of a gres_job_state_t (node_cnt or total_node_cnt entries), freed with the job.
  bitstr_t** BitsPerNode(std::vector<bitstr_t*> bits) {
    arrays_.push_back(std::move(bits));
    return arrays_.back().data();
  }
  uint64_t* Counts(std::vector<uint64_t> counts) {
    counts_.push_back(std::move(counts));
    return counts_.back().data();
  }

 private:
  gres_job_state_t& AddState(SlurmList list, uint32_t plugin_id) {
    auto& js = job_states_.emplace_back(std::make_unique<gres_job_state_t>());
    auto& state = states_.emplace_back(std::make_unique<gres_state_t>());
    state->plugin_id = plugin_id;
    state->gres_data = js.get();
    list_append(list, state.get());
    return *js;
  }

  job_record_t job_{};
  JobDetails details_{};
  part_record_t partition_{};
  std::vector<std::unique_ptr<gres_job_state_t>> job_states_;
  std::vector<std::unique_ptr<gres_state_t>> states_;
  std::vector<std::string> env_;
  std::vector<char*> env_ptrs_;
  std::vector<bitstr_t*> bitmaps_;
  std::vector<std::vector<bitstr_t*>> arrays_;
  std::vector<std::vector<uint64_t>> counts_;
};

class JobTranslationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = ClusterModel::FromYaml(kDescription, "rackwise.yaml", kSlurmNodes);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
  }
  NodeId Node(const char* name) const { return *model_->topology().FindNode(name); }
  std::unique_ptr<ClusterModel> model_;
};

TEST_F(JobTranslationTest, GpusPerJobPerNodeAndPerTask) {
  {  // --gpus=12 (a per-node count beside it is the per-node split)
    SlurmJob j;
    j.Request(kGpuId).gres_per_job = 12;
    j.Request(kOtherId).gres_per_job = 2;  // not GPUs
    const GpuAsk ask = ReadGpuAsk(j.job(), kGpuId);
    EXPECT_EQ(ask.gpus, 12);
    EXPECT_EQ(ask.gpus_per_node, 0);
    EXPECT_TRUE(ask.translated);
  }
  {  // --gpus-per-node=4 -N 3
    SlurmJob j;
    j.details().min_nodes = 3;
    j.Request(kGpuId).gres_per_node = 4;
    const GpuAsk ask = ReadGpuAsk(j.job(), kGpuId);
    EXPECT_EQ(ask.gpus, 12);
    EXPECT_EQ(ask.gpus_per_node, 4);
  }
  {  // --gpus-per-task=2 -n 4 --ntasks-per-node=2
    SlurmJob j;
    j.details().num_tasks = 4;
    j.details().ntasks_per_node = 2;
    j.Request(kGpuId).gres_per_task = 2;
    const GpuAsk ask = ReadGpuAsk(j.job(), kGpuId);
    EXPECT_EQ(ask.gpus, 8);
    EXPECT_EQ(ask.gpus_per_node, 4);
  }
  {  // --gpus-per-task=2 without a task count: one task per node (min_nodes NO_VAL: one node)
    SlurmJob j;
    j.details().min_nodes = NO_VAL;
    j.details().ntasks_per_node = NO_VAL16;
    j.Request(kGpuId).gres_per_task = 2;
    const GpuAsk ask = ReadGpuAsk(j.job(), kGpuId);
    EXPECT_EQ(ask.gpus, 2);
    EXPECT_EQ(ask.gpus_per_node, 0);
  }
  {  // no GPUs at all: not a GPU job
    SlurmJob j;
    j.Request(kOtherId).gres_per_node = 1;
    EXPECT_EQ(ReadGpuAsk(j.job(), kGpuId).gpus, 0);
  }
}

TEST_F(JobTranslationTest, ShapesTheCoreDoesNotModelAreLeftToConsTres) {
  {  // --gpus-per-socket
    SlurmJob j;
    j.Request(kGpuId).gres_per_socket = 2;
    EXPECT_FALSE(ReadGpuAsk(j.job(), kGpuId).translated);
  }
  {  // --gpus=10 --gpus-per-node=4: does not divide
    SlurmJob j;
    j.Request(kGpuId).gres_per_job = 10;
    j.Request(kGpuId).gres_per_node = 4;
    const GpuAsk ask = ReadGpuAsk(j.job(), kGpuId);
    EXPECT_FALSE(ask.translated);
    EXPECT_EQ(ask.gpus, 10);
    EXPECT_EQ(ask.gpus_per_node, 0);
  }
  {  // an absurd count is clamped, never overflows an int
    SlurmJob j;
    j.Request(kGpuId).gres_per_job = uint64_t{1} << 40;
    const GpuAsk ask = ReadGpuAsk(j.job(), kGpuId);
    EXPECT_FALSE(ask.translated);
    EXPECT_EQ(ask.gpus, 1 << 20);
  }
}

TEST_F(JobTranslationTest, RequestCarriesOptionsWaitAndTheOfferedNodes) {
  SlurmJob j;
  j.SetEnv({"SOMETHING=else", "RACKWISE_NVLINK=required", "RACKWISE_GPU_WATTS=650"});
  j.details().submit_time = 1000;
  j.details().begin_time = 1200;  // held until then: the wait counts from the later of the two
  GpuAsk ask{8, 4, true};
  // Slurm offers the login node, g2, t1 and t3: the login node is not described.
  const bitstr_t* offered = j.Bits(kNodeCount, {0, 2, 3, 5});
  const PlacementRequest r = MakeRequest(j.job(), ask, offered, *model_, 1500).value();
  EXPECT_EQ(r.id, "17");
  EXPECT_EQ(r.gpus, 8);
  EXPECT_EQ(r.gpus_per_node, 4);
  EXPECT_EQ(r.locality, Locality::kRequired);
  EXPECT_DOUBLE_EQ(r.watts_per_gpu, 650);
  EXPECT_DOUBLE_EQ(r.waited_seconds, 300);
  EXPECT_EQ(r.allowed_nodes, (std::vector<NodeId>{Node("g2"), Node("t1"), Node("t3")}));
  // Before its begin time a job has not waited; a clock behind the submit time never gives a negative wait.
  EXPECT_DOUBLE_EQ(MakeRequest(j.job(), ask, offered, *model_, 1100)->waited_seconds, 0);
}

TEST_F(JobTranslationTest, MalformedOptionsAreIgnoredNotGuessed) {
  SlurmJob j;
  j.SetEnv({"RACKWISE_NVLINK=sometimes", "RACKWISE_GPU_WATTS=650"});
  const PlacementRequest r = MakeRequest(j.job(), GpuAsk{4, 0, true}, j.Bits(kNodeCount, {1}), *model_, 0).value();
  EXPECT_FALSE(r.locality.has_value());  // the policy's default applies
  EXPECT_DOUBLE_EQ(r.watts_per_gpu, 0);  // the node type's default draw: nothing half-read
  EXPECT_EQ(JobWatts(j.job()), 0);
}

TEST_F(JobTranslationTest, NamedNodesRestrictOnlyWhenTheyAreEnough) {
  SlurmJob j;
  const bitstr_t* offered = j.Bits(kNodeCount, {1, 2, 3, 4, 5});
  j.details().req_node_bitmap = j.Bits(kNodeCount, {2, 4});  // -w g2,t2
  j.details().min_nodes = 2;
  EXPECT_EQ(MakeRequest(j.job(), GpuAsk{8, 4, true}, offered, *model_, 0)->allowed_nodes,
            (std::vector<NodeId>{Node("g2"), Node("t2")}));
  // -w g2 with -N 2: Slurm adds a node of its choice, so every offered node stays possible.
  j.details().req_node_bitmap = j.Bits(kNodeCount, {2});
  EXPECT_EQ(MakeRequest(j.job(), GpuAsk{8, 4, true}, offered, *model_, 0)->allowed_nodes.size(), 5u);
  // A named node Slurm does not offer now (busy, down) is not offered to the core either.
  j.details().req_node_bitmap = j.Bits(kNodeCount, {0, 2, 4});
  EXPECT_EQ(MakeRequest(j.job(), GpuAsk{8, 4, true}, j.Bits(kNodeCount, {2, 3}), *model_, 0)->allowed_nodes,
            (std::vector<NodeId>{Node("g2")}));
}

TEST_F(JobTranslationTest, OfferingEveryUsableNodeNamesNone) {
  SlurmJob j;
  const bitstr_t* usable = j.Bits(kNodeCount, {1, 2, 4});
  // Every usable node offered (and a down one besides): the request names no nodes.
  EXPECT_TRUE(MakeRequest(j.job(), GpuAsk{8, 4, true}, j.Bits(kNodeCount, {1, 2, 3, 4}), *model_, 0, usable)
                  ->allowed_nodes.empty());
  // One usable node held back by Slurm (busy, reserved, completing): the offered ones are named.
  EXPECT_EQ(
      MakeRequest(j.job(), GpuAsk{8, 4, true}, j.Bits(kNodeCount, {1, 2, 3}), *model_, 0, usable)->allowed_nodes.size(),
      3u);
  // "Every node" is not "no node": an offer of every usable node is the core's to place, and only an offer
  // without a described node is not (the login node alone here).
  EXPECT_TRUE(MakeRequest(j.job(), GpuAsk{8, 4, true}, j.Bits(kNodeCount, {1, 2, 3, 4}), *model_, 0, usable));
  EXPECT_FALSE(MakeRequest(j.job(), GpuAsk{8, 4, true}, j.Bits(kNodeCount, {0}), *model_, 0, usable));
  EXPECT_FALSE(MakeRequest(j.job(), GpuAsk{8, 4, true}, j.Bits(kNodeCount, {0}), *model_, 0));
  // A job that names its nodes keeps them, whatever is offered.
  j.details().req_node_bitmap = j.Bits(kNodeCount, {2, 4});
  j.details().min_nodes = 2;
  EXPECT_EQ(
      MakeRequest(j.job(), GpuAsk{8, 4, true}, j.Bits(kNodeCount, {1, 2, 3, 4}), *model_, 0, usable)->allowed_nodes,
      (std::vector<NodeId>{Node("g2"), Node("t2")}));
}

TEST_F(JobTranslationTest, RequiredCountsItsFewestDomainsOverThePartitionNotTheFreeNodes) {
  SlurmJob j;
  // A partition of every node; Slurm offers the two HGX nodes only (the trays are busy now).
  j.SetPartition(kNodeCount, {0, 1, 2, 3, 4, 5});
  const bitstr_t* offered = j.Bits(kNodeCount, {1, 2});
  std::optional<PlacementRequest> r = MakeRequest(j.job(), GpuAsk{8, 0, true}, offered, *model_, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->allowed_nodes, (std::vector<NodeId>{Node("g1"), Node("g2")}));
  EXPECT_EQ(r->eligible_nodes,
            (std::vector<NodeId>{Node("g1"), Node("g2"), Node("t1"), Node("t2"), Node("t3")}));  // not the login node
  // Nodes the job excludes are not eligible.
  j.details().exc_node_bitmap = j.Bits(kNodeCount, {4});
  EXPECT_EQ(MakeRequest(j.job(), GpuAsk{8, 0, true}, offered, *model_, 0)->eligible_nodes,
            (std::vector<NodeId>{Node("g1"), Node("g2"), Node("t1"), Node("t3")}));
  // Features narrow the partition in ways only slurmctld evaluates: counted over the offered nodes, as before.
  std::string features = "hgx";
  j.details().features = features.data();
  EXPECT_TRUE(MakeRequest(j.job(), GpuAsk{8, 0, true}, offered, *model_, 0)->eligible_nodes.empty());
  j.details().features = nullptr;
}

TEST_F(JobTranslationTest, WaitIsEstimatedOverEveryNodeTheJobMayUseBusyOrNot) {
  SlurmJob j;
  j.SetPartition(kNodeCount, {0, 1, 2, 3, 4, 5});
  // Only g1 and g2 are offered now (the trays are busy): the wait counts the busy trays too.
  const bitstr_t* offered = j.Bits(kNodeCount, {1, 2});
  PlacementRequest r = MakeRequest(j.job(), GpuAsk{8, 0, true}, offered, *model_, 0).value();
  EXPECT_EQ(NodesToWaitFor(j.job(), r, *model_),
            (std::vector<NodeId>{Node("g1"), Node("g2"), Node("t1"), Node("t2"), Node("t3")}));
  // Excluded nodes are never waited for.
  j.details().exc_node_bitmap = j.Bits(kNodeCount, {3, 4});
  r = MakeRequest(j.job(), GpuAsk{8, 0, true}, offered, *model_, 0).value();
  EXPECT_EQ(NodesToWaitFor(j.job(), r, *model_), (std::vector<NodeId>{Node("g1"), Node("g2"), Node("t3")}));
  j.details().exc_node_bitmap = nullptr;
  // -w g2,t2 with -N 2: only those two, though t2 is busy now and g1 is free.
  j.details().req_node_bitmap = j.Bits(kNodeCount, {2, 4});
  j.details().min_nodes = 2;
  r = MakeRequest(j.job(), GpuAsk{8, 4, true}, offered, *model_, 0).value();
  EXPECT_EQ(NodesToWaitFor(j.job(), r, *model_), (std::vector<NodeId>{Node("g2"), Node("t2")}));
  // -w naming only an undescribed node: nothing to wait for, never "every node".
  j.details().req_node_bitmap = j.Bits(kNodeCount, {0});
  j.details().min_nodes = 1;
  EXPECT_FALSE(NodesToWaitFor(j.job(), r, *model_).has_value());
  j.details().req_node_bitmap = nullptr;
  // Node features narrow the partition as only slurmctld knows: the offered nodes.
  std::string features = "hgx";
  j.details().features = features.data();
  r = MakeRequest(j.job(), GpuAsk{8, 0, true}, offered, *model_, 0).value();
  EXPECT_EQ(NodesToWaitFor(j.job(), r, *model_), (std::vector<NodeId>{Node("g1"), Node("g2")}));
  j.details().features = nullptr;
}

TEST_F(JobTranslationTest, SelectedGpusReadBitsOrCountOntoFreeGpus) {
  SlurmJob j;
  j.SetEnv({"RACKWISE_GPU_WATTS=500"});
  gres_job_state_t& js = j.Request(kGpuId);
  js.total_node_cnt = kNodeCount;
  // cons_tres picked GPUs 4-7 on g1 by index and counted 2 on t1 (a GRES without device files).
  js.gres_bit_select = j.BitsPerNode({nullptr, j.Bits(8, {4, 5, 6, 7}), nullptr, nullptr, nullptr, nullptr});
  js.gres_cnt_node_select = j.Counts({0, 0, 0, 2, 0, 0});
  // GPU 0 of t1 is already held by another job: the count lands on the lowest free ones.
  Allocation other;
  other.id = "other";
  other.nodes.push_back({Node("t1"), GpuMask{0x1}});
  other.per_gpu = WattsToMilliwatts(1000);
  ASSERT_TRUE(model_->ledger().Commit(other).ok());

  std::optional<Allocation> a = SelectedGpus(j.job(), j.Bits(kNodeCount, {0, 1, 3}), *model_, kGpuId);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->id, "17");
  EXPECT_EQ(a->per_gpu, WattsToMilliwatts(500));
  EXPECT_EQ(a->nodes, (std::vector<NodeGpus>{{Node("g1"), GpuMask{0xF0}}, {Node("t1"), GpuMask{0x6}}}));
  // Nodes outside the selection, or with nothing selected, give nothing.
  EXPECT_FALSE(SelectedGpus(j.job(), j.Bits(kNodeCount, {0, 2}), *model_, kGpuId).has_value());
}

TEST_F(JobTranslationTest, AllocatedGpusFollowTheJobsNodeBitmap) {
  SlurmJob j;
  // The job runs on t3 and g2 (Slurm index order: g2 first); gres_list_alloc is indexed by the job's j-th node.
  j.job()->node_bitmap = j.Bits(kNodeCount, {2, 5});
  gres_job_state_t& js = j.Allocated(kGpuId);
  js.node_cnt = 2;
  js.gres_bit_alloc = j.BitsPerNode({j.Bits(8, {0, 1}), nullptr});
  js.gres_cnt_node_alloc = j.Counts({0, 3});
  std::optional<Allocation> a = AllocatedGpus(j.job(), *model_, kGpuId);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->nodes, (std::vector<NodeGpus>{{Node("g2"), GpuMask{0x3}}, {Node("t3"), GpuMask{0x7}}}));
  EXPECT_EQ(a->per_gpu, 0);  // no --gpu-watts: the ledger charges the node type's default
  // A job on nodes without GPUs holds nothing the ledger counts.
  SlurmJob login;
  login.job()->node_bitmap = login.Bits(kNodeCount, {0});
  EXPECT_FALSE(AllocatedGpus(login.job(), *model_, kGpuId).has_value());
}

}  // namespace
}  // namespace rackwise::slurm
