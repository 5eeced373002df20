// See dra_device_directory.h.
#include "dra_device_directory.h"

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {
namespace {

// attributes[name], or attributes["<driver>/<name>"].
const Json* Attribute(const Json& attributes, absl::string_view driver, absl::string_view name) {
  if (const Json* a = FindField(attributes, name)) return a;
  return FindField(attributes, absl::StrCat(driver, "/", name));
}

int IntAttribute(const Json& attributes, absl::string_view driver, absl::string_view name) {
  const Json* a = Attribute(attributes, driver, name);
  const Json* v = a != nullptr ? FindField(*a, "int") : nullptr;
  if (v == nullptr || !v->is_number_integer()) return -1;
  const int64_t i = v->get<int64_t>();
  return i >= 0 && i < 1024 ? static_cast<int>(i) : -1;
}

}  // namespace

std::string DeviceDirectory::DeviceKey(absl::string_view driver, absl::string_view pool, absl::string_view device) {
  return absl::StrCat(driver, "\x1f", pool, "\x1f", device);
}

void DeviceDirectory::ForgetSlice(const std::string& slice) {
  auto it = slices_.find(slice);
  if (it == slices_.end()) return;
  for (const std::string& key : it->second) {
    auto d = devices_.find(key);
    if (d != devices_.end() && d->second.slice == slice) devices_.erase(d);
  }
  slices_.erase(it);
}

void DeviceDirectory::ApplySlice(const Json& slice, bool deleted) {
  const Json* meta = FindField(slice, "metadata");
  const std::string name = meta != nullptr ? StringField(*meta, "name") : "";
  if (name.empty()) return;
  ForgetSlice(name);
  if (deleted) return;
  const Json* spec = FindField(slice, "spec");
  if (spec == nullptr) return;
  const std::string driver = StringField(*spec, "driver");
  const Json* pool_field = FindField(*spec, "pool");
  const std::string pool = pool_field != nullptr ? StringField(*pool_field, "name") : "";
  const std::string node = StringField(*spec, "nodeName");
  const Json* devices = FindField(*spec, "devices");
  if (devices == nullptr || !devices->is_array()) return;
  std::vector<std::string>& keys = slices_[name];
  static const Json kEmpty = Json::object();
  for (const Json& d : *devices) {
    SliceDevice out;
    out.slice = name;
    out.node = StringField(d, "nodeName");
    if (out.node.empty()) out.node = node;
    const Json* attributes = FindField(d, "attributes");
    const Json& attrs = attributes != nullptr ? *attributes : kEmpty;
    out.gpu_index = IntAttribute(attrs, driver, "parentIndex");
    out.partition = out.gpu_index >= 0;
    if (out.gpu_index < 0) out.gpu_index = IntAttribute(attrs, driver, "index");
    if (const Json* uuid = Attribute(attrs, driver, "uuid")) out.uuid = StringField(*uuid, "string");
    std::string key = DeviceKey(driver, pool, StringField(d, "name"));
    devices_[key] = std::move(out);
    keys.push_back(std::move(key));
  }
}

void DeviceDirectory::ReplaceSlices(const std::vector<Json>& items) {
  devices_.clear();
  slices_.clear();
  for (const Json& item : items) ApplySlice(item, false);
}

const SliceDevice* DeviceDirectory::Find(const std::string& driver, const std::string& pool,
                                         const std::string& device) const {
  auto it = devices_.find(DeviceKey(driver, pool, device));
  return it == devices_.end() ? nullptr : &it->second;
}

}  // namespace rackwise::k8s
