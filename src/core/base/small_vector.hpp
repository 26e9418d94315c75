// A vector whose first N elements live inside it, so that the few limits
// of a request cost no heap allocation on the hot path (a request decided
// from a lease or the deny cache allocates nothing in the core); more than
// N move to the heap, all of them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace rrl {

template <typename T, std::size_t N>
class SmallVector {
   public:
    SmallVector() = default;
    explicit SmallVector(std::size_t n, const T& value = T()) {
        resize(n, value);
    }

    void push_back(const T& value) {
        if (size_ < N && heap_.empty()) {
            inline_[size_++] = value;
            return;
        }
        spill();
        heap_.push_back(value);
        size_++;
    }
    void push_back(T&& value) {
        if (size_ < N && heap_.empty()) {
            inline_[size_++] = std::move(value);
            return;
        }
        spill();
        heap_.push_back(std::move(value));
        size_++;
    }
    void resize(std::size_t n, const T& value = T()) {
        while (size_ > n) pop_back();
        while (size_ < n) push_back(value);
    }
    // n elements copied from first, in place of these
    void assign(const T* first, std::size_t n) {
        if (n <= N) {
            heap_.clear();
            std::copy(first, first + n, inline_.begin());
        } else {
            heap_.assign(first, first + n);
        }
        size_ = n;
    }
    void pop_back() {
        if (!heap_.empty()) heap_.pop_back();
        size_--;
    }
    void reserve(std::size_t n) {
        if (n > N) {
            spill();
            heap_.reserve(n);
        }
    }

    T* data() { return heap_.empty() ? inline_.data() : heap_.data(); }
    const T* data() const {
        return heap_.empty() ? inline_.data() : heap_.data();
    }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    T& at(std::size_t i) {
        if (i >= size_) throw std::out_of_range("SmallVector::at");
        return data()[i];
    }
    const T& at(std::size_t i) const {
        if (i >= size_) throw std::out_of_range("SmallVector::at");
        return data()[i];
    }
    T& operator[](std::size_t i) { return data()[i]; }
    const T& operator[](std::size_t i) const { return data()[i]; }
    T* begin() { return data(); }
    T* end() { return data() + size_; }
    const T* begin() const { return data(); }
    const T* end() const { return data() + size_; }
    T& back() { return data()[size_ - 1]; }
    const T& front() const { return data()[0]; }
    const T& back() const { return data()[size_ - 1]; }

   private:
    void spill() {
        if (heap_.empty())
            heap_.assign(inline_.begin(), inline_.begin() + size_);
    }

    std::array<T, N> inline_{};
    std::vector<T> heap_;
    std::size_t size_ = 0;
};

}  // namespace rrl
