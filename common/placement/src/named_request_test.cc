// Requests written with names (the CLI's flags, the gRPC message) and the locality spellings every face shares.
#include "rackwise/named_request.h"

#include <gtest/gtest.h>

#include "rackwise/locality.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

Topology Hgx() {
  auto t = Topology::Build(BuildSyntheticCluster({"n", {{ReferenceSystem::kHgxH100, 1, 4, 0, 8, 0, 0}}, 0}));
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

TEST(NamedRequest, ResolvesNamesAndHostlists) {
  Topology t = Hgx();
  NamedRequest named;
  named.id = "j";
  named.gpus = 16;
  named.gpus_per_node = 8;
  named.node_type = "hgx-h100";
  named.allowed_nodes = {"b0-r0000-n[01-03]"};
  named.excluded_nodes = {"b0-r0000-n02"};
  absl::StatusOr<PlacementRequest> r = ResolveRequest(t, named);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->allowed_nodes.size(), 3u);
  ASSERT_EQ(r->excluded_nodes.size(), 1u);
  EXPECT_EQ(t.nodes()[r->excluded_nodes[0]].name, "b0-r0000-n02");
  EXPECT_EQ(r->node_type, 0);
}

TEST(NamedRequest, NamesTheFieldOfEveryBadValue) {
  Topology t = Hgx();
  auto error = [&](NamedRequest n) { return std::string(ResolveRequest(t, n).status().message()); };
  NamedRequest ok;
  ok.gpus = 8;
  NamedRequest n = ok;
  n.allowed_nodes = {"nosuch"};
  EXPECT_EQ(error(n), "allowed_nodes: no node named 'nosuch' in the cluster");
  n = ok;
  n.excluded_nodes = {"x[3-1]"};
  EXPECT_EQ(error(n).rfind("excluded_nodes: ", 0), 0u);
  n = ok;
  n.node_type = "tpu";
  EXPECT_EQ(error(n), "node_type: no node type named 'tpu'");
  for (int64_t gpus : {int64_t{0}, int64_t{-1}, kMaxRequestGpus + 1}) {
    n = ok;
    n.gpus = gpus;
    EXPECT_EQ(error(n).rfind("gpus: ", 0), 0u) << gpus;
  }
  n = ok;
  n.gpus_per_node = 65;
  EXPECT_EQ(error(n).rfind("gpus_per_node: ", 0), 0u);
}

TEST(Locality, OneSpellingForEveryFace) {
  for (Locality l : {Locality::kRequired, Locality::kPreferred, Locality::kNone}) {
    EXPECT_EQ(ParseLocality(LocalityName(l)), l);
  }
  EXPECT_EQ(ParseLocality(" Required\t"), Locality::kRequired);
  EXPECT_EQ(ParseLocality("NONE"), Locality::kNone);
  for (const char* bad : {"", "require", "always", "required,none", "1"}) EXPECT_FALSE(ParseLocality(bad)) << bad;
}

}  // namespace
}  // namespace rackwise
