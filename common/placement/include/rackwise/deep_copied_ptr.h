// An owning pointer that copies what it owns (a copyable unique_ptr), for a member whose type a public header
// only declares: the special members are declared here and defined where the type is complete
// (deep_copied_ptr_impl.h, in the owner's sources, with an explicit instantiation), so the owner's copy and move
// stay the defaults and a copy has its own object.
#pragma once

#include <memory>

namespace rackwise {

template <typename T>
class DeepCopiedPtr {
 public:
  DeepCopiedPtr();  // null
  explicit DeepCopiedPtr(std::unique_ptr<T> owned);
  DeepCopiedPtr(const DeepCopiedPtr& other);
  DeepCopiedPtr& operator=(const DeepCopiedPtr& other);
  DeepCopiedPtr(DeepCopiedPtr&& other) noexcept;
  DeepCopiedPtr& operator=(DeepCopiedPtr&& other) noexcept;
  ~DeepCopiedPtr();
  T* get() const { return owned_.get(); }
  T* operator->() const { return owned_.get(); }

 private:
  std::unique_ptr<T> owned_;
};

}  // namespace rackwise
