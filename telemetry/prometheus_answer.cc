// Prometheus instant-query answers -> readings. See prometheus_answer.h.
#include "prometheus_answer.h"

#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace rackwise::telemetry {
namespace {

using nlohmann::json;

absl::Status Bad(std::string what) { return absl::InvalidArgumentError(absl::StrCat("prometheus answer: ", what)); }

// Prometheus writes sample values as strings ("123.4", "NaN", "+Inf").
absl::StatusOr<double> SampleValue(const json& v) {
  if (!v.is_string()) return Bad("a sample value is not a string");
  const std::string& s = v.get_ref<const std::string&>();
  if (s == "NaN") return std::nan("");
  if (s == "+Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  double d = 0;
  if (!absl::SimpleAtod(s, &d)) return Bad(absl::StrCat("sample value '", s.substr(0, 40), "' is not a number"));
  return d;
}

absl::StatusOr<PowerReading> Reading(const json& result, size_t i, std::string_view label, double now_unix_s) {
  const std::string where = absl::StrCat("result ", i);
  if (!result.is_object()) return Bad(absl::StrCat(where, " is not an object"));
  auto metric = result.find("metric");
  if (metric == result.end() || !metric->is_object()) return Bad(absl::StrCat(where, " has no metric labels"));
  auto name = metric->find(std::string(label));
  if (name == metric->end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return Bad(absl::StrCat(where, " has no label '", std::string(label), "' (does the query keep it, e.g. sum by (",
                            std::string(label), ")?)"));
  auto value = result.find("value");
  if (value == result.end() || !value->is_array() || value->size() != 2)
    return Bad(absl::StrCat(where, " has no [timestamp, value] pair"));
  if (!(*value)[0].is_number()) return Bad(absl::StrCat(where, ": the timestamp is not a number"));
  absl::StatusOr<double> watts = SampleValue((*value)[1]);
  if (!watts.ok()) return watts.status();
  const double ts = (*value)[0].get<double>();
  return PowerReading{name->get<std::string>(), *watts, now_unix_s - ts};
}

}  // namespace

absl::StatusOr<std::vector<PowerReading>> ParseQueryAnswer(std::string_view body, std::string_view label,
                                                           double now_unix_s) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad("not JSON");
  if (!doc.is_object()) return Bad("not a JSON object");
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_string()) return Bad("no status");
  if (*status != "success") {
    std::string error = "(no error given)";
    if (auto e = doc.find("error"); e != doc.end() && e->is_string()) error = e->get<std::string>().substr(0, 300);
    return Bad(absl::StrCat("status ", status->get<std::string>(), ": ", error));
  }
  auto data = doc.find("data");
  if (data == doc.end() || !data->is_object()) return Bad("no data");
  auto type = data->find("resultType");
  if (type == data->end() || !type->is_string()) return Bad("no resultType");
  if (*type != "vector")
    return Bad(absl::StrCat("resultType is ", type->get<std::string>(), ", want vector (an instant query by a label)"));
  auto result = data->find("result");
  if (result == data->end() || !result->is_array()) return Bad("no result list");
  std::vector<PowerReading> out;
  out.reserve(result->size());
  for (size_t i = 0; i < result->size(); ++i) {
    absl::StatusOr<PowerReading> r = Reading((*result)[i], i, label, now_unix_s);
    if (!r.ok()) return r.status();
    out.push_back(*std::move(r));
  }
  return out;
}

}  // namespace rackwise::telemetry
