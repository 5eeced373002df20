// Upstream-shaped DRA objects for the tests (resource.k8s.io/v1 as the API server serves them, ResourceSlices as
// NVIDIA's driver publishes them).
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dra_objects.h"
#include "json_fields.h"

namespace rackwise::k8s::testing {

// spec.devices.requests with one `exactly` request of `count` devices of `device_class`.
inline Json ClaimSpecJson(int count, const std::string& device_class = "gpu.nvidia.com",
                          const std::string& request = "gpus") {
  return {
      {"devices",
       {{"requests",
         {{{"name", request},
           {"exactly", {{"deviceClassName", device_class}, {"allocationMode", "ExactCount"}, {"count", count}}}}}}}}};
}

inline Json TemplateJson(const std::string& name, Json spec) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec", {{"spec", std::move(spec)}}}};
}

// A ResourceSlice of `gpus` GPUs on `node` (pool named after the node); with `mig`, one MIG slice per GPU too.
inline Json SliceJson(const std::string& node, int gpus, bool mig = false) {
  Json devices = Json::array();
  for (int i = 0; i < gpus; ++i) {
    Json attrs = {{"index", {{"int", i}}},
                  {"uuid", {{"string", "GPU-" + node + "-" + std::to_string(i)}}},
                  {"type", {{"string", "gpu"}}}};
    devices.push_back({{"name", "gpu-" + std::to_string(i)}, {"attributes", attrs}});
    if (mig) {
      devices.push_back({{"name", "gpu-" + std::to_string(i) + "-mig-1g"},
                         {"attributes", {{"index", {{"int", 0}}}, {"parentIndex", {{"int", i}}}}}});
    }
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-gpu.nvidia.com"}}},
          {"spec",
           {{"driver", "gpu.nvidia.com"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

// A ResourceClaim in namespace ml asking `count` GPUs; with `devices`, allocated those devices of `node`'s pool.
inline Json ClaimJson(const std::string& name, int count, const std::vector<std::string>& devices = {},
                      const std::string& node = "") {
  Json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}}},
                {"spec", ClaimSpecJson(count)}};
  if (!devices.empty()) {
    Json results = Json::array();
    for (const std::string& d : devices) {
      results.push_back({{"request", "gpus"}, {"driver", "gpu.nvidia.com"}, {"pool", node}, {"device", d}});
    }
    claim["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
  }
  return claim;
}

// A ComputeDomain (resource.nvidia.com/v1beta1) in namespace ml whose channel comes from `channel_template`.
inline Json ComputeDomainJson(const std::string& name, int num_nodes, const std::string& channel_template) {
  return {{"apiVersion", "resource.nvidia.com/v1beta1"},
          {"kind", "ComputeDomain"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec", {{"numNodes", num_nodes}, {"channel", {{"resourceClaimTemplate", {{"name", channel_template}}}}}}}};
}

// A service-level test's start: the gpu4 template (4 GPUs) and a ComputeDomain, applied to `service`.
template <typename Service>
void ApplyComputeDomainObjects(Service& service, const std::string& name, int num_nodes,
                               const std::string& channel_template) {
  EXPECT_TRUE(
      service.ApplyDraObject(DraKind::kResourceClaimTemplate, TemplateJson("gpu4", ClaimSpecJson(4)), false, 0).ok());
  EXPECT_TRUE(
      service.ApplyDraObject(DraKind::kComputeDomain, ComputeDomainJson(name, num_nodes, channel_template), false, 0)
          .ok());
}

// A pending pod in namespace ml with one claim per template in `templates` (its claim named <pod>-<template>, as
// the resourceclaim controller records in status.resourceClaimStatuses), and `gpus` nvidia.com/gpu when above 0.
inline Json DraPodJson(const std::string& name, const std::vector<std::string>& templates, int gpus = 0) {
  Json claims = Json::array(), refs = Json::array(), statuses = Json::array();
  for (const std::string& t : templates) {
    claims.push_back({{"name", t}, {"resourceClaimTemplateName", t}});
    refs.push_back({{"name", t}});
    statuses.push_back({{"name", t}, {"resourceClaimName", name + "-" + t}});
  }
  Json resources = {{"claims", refs}};
  if (gpus > 0) resources["limits"] = {{"nvidia.com/gpu", std::to_string(gpus)}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}}},
      {"spec",
       {{"containers", {{{"name", "main"}, {"image", "nvcr.io/nvidia/pytorch:25.01-py3"}, {"resources", resources}}}},
        {"resourceClaims", claims}}},
      {"status", {{"phase", "Pending"}, {"resourceClaimStatuses", statuses}}}};
}

}  // namespace rackwise::k8s::testing
