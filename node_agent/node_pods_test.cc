// AnnotatedPods: which of the API server's pods ask for a limit, read with the extender's pod parser.
#include "node_pods.h"

#include <gtest/gtest.h>

namespace rackwise::node_agent {
namespace {

k8s::Json Pod(const std::string& name, const std::string& node, const std::string& annotations,
              const std::string& phase = "Running") {
  return k8s::Json::parse(R"({"metadata":{"name":")" + name + R"(","namespace":"ml","uid":"uid-)" + name +
                          R"(","annotations":{)" + annotations + R"(}},"spec":{"nodeName":")" + node +
                          R"(","containers":[{"resources":{"limits":{"nvidia.com/gpu":"2"}}}]},"status":{"phase":")" +
                          phase + R"("}})");
}

TEST(AnnotatedPods, KeepsThisNodesRunningAnnotatedPods) {
  std::vector<k8s::Json> items = {
      Pod("a", "gpu001", R"("rackwise.io/gpu-watts":"450")"),
      Pod("b", "gpu002", R"("rackwise.io/gpu-watts":"450")"),  // another node
      Pod("c", "gpu001", ""),                                  // no annotation
      Pod("d", "gpu001", R"("rackwise.io/gpu-watts":"450")", "Succeeded"),
      Pod("e", "gpu001", R"("rackwise.io/gpu-watts":" 312.5 ")", "Pending"),
  };
  std::vector<PodWatts> pods = AnnotatedPods(items, "gpu001");
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].Owner(), "ml/a/uid-a");
  EXPECT_EQ(pods[0].milliwatts_per_gpu, 450'000);
  EXPECT_TRUE(pods[0].error.empty());
  EXPECT_EQ(pods[1].name, "e");
  EXPECT_EQ(pods[1].milliwatts_per_gpu, 312'500);
}

TEST(AnnotatedPods, BadValuesAreRefusedWithTheFieldNamed) {
  for (const char* value : {"lots", "-3", "0", "", "nan", "inf", "1e17", "450W"}) {
    std::vector<PodWatts> pods =
        AnnotatedPods({Pod("a", "gpu001", std::string(R"("rackwise.io/gpu-watts":")") + value + "\"")}, "gpu001");
    ASSERT_EQ(pods.size(), 1u) << value;
    EXPECT_EQ(pods[0].milliwatts_per_gpu, 0) << value;
    EXPECT_NE(pods[0].error.find("rackwise.io/gpu-watts"), std::string::npos) << value << ": " << pods[0].error;
  }
}

}  // namespace
}  // namespace rackwise::node_agent
