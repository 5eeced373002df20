// DeepCopiedPtr's special members (rackwise/deep_copied_ptr.h), for the one source file where T is complete:
// include this there and instantiate `template class rackwise::DeepCopiedPtr<T>;`.
#pragma once

#include <memory>
#include <utility>

#include "rackwise/deep_copied_ptr.h"

namespace rackwise {

template <typename T>
DeepCopiedPtr<T>::DeepCopiedPtr() = default;
template <typename T>
DeepCopiedPtr<T>::DeepCopiedPtr(std::unique_ptr<T> owned) : owned_(std::move(owned)) {}
template <typename T>
DeepCopiedPtr<T>::DeepCopiedPtr(const DeepCopiedPtr& other)
    : owned_(other.owned_ ? std::make_unique<T>(*other.owned_) : nullptr) {}
template <typename T>
DeepCopiedPtr<T>& DeepCopiedPtr<T>::operator=(const DeepCopiedPtr& other) {
  if (this != &other) owned_ = other.owned_ ? std::make_unique<T>(*other.owned_) : nullptr;
  return *this;
}
template <typename T>
DeepCopiedPtr<T>::DeepCopiedPtr(DeepCopiedPtr&& other) noexcept = default;
template <typename T>
DeepCopiedPtr<T>& DeepCopiedPtr<T>::operator=(DeepCopiedPtr&& other) noexcept = default;
template <typename T>
DeepCopiedPtr<T>::~DeepCopiedPtr() = default;

}  // namespace rackwise
