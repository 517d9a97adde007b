// xsprof C++ API: header-only over the C API (xsprof.h), C++14 or later.
//
//   xsprof::scope s(op_name);              // RAII region, ends at the closing brace
//   s.arg("n", 42).arg("lr", 1e-3).arg("x", tensor_shape);
//   XSPROF_FUNCTION();                     // qualified name: ns::Class::method
//   xsprof::observer obs([&](const xsprof_region_info &r) { ... }, nullptr);
//
// Nothing here throws: a refused name or argument is counted by the C API
// (xsprof_status) as it is from C. Names given to xsprof::scope are
// interned at each construction (right for names computed at run time);
// XSPROF_SCOPE("literal") caches the id per call site, the cheapest for
// literals.
#ifndef XSPROF_XSPROF_HPP
#define XSPROF_XSPROF_HPP

#include <xsprof/xsprof.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#if __cplusplus >= 201703L
#include <string_view>
#endif

namespace xsprof {

namespace detail {
template <class T, class = void> struct is_int_container : std::false_type {};
template <class T>
struct is_int_container<T, decltype(void(std::begin(std::declval<const T &>())), void(std::end(std::declval<const T &>())))>
    : std::is_integral<typename std::decay<decltype(*std::begin(std::declval<const T &>()))>::type> {};
} // namespace detail

// Arguments of the innermost open region of the calling thread.
inline xsprof_status arg(const char *key, const char *value) noexcept { return xsprof_region_arg_string(key, value); }
inline xsprof_status arg(const char *key, const std::string &value) noexcept {
    return xsprof_region_arg_string(key, value.c_str());
}
#if __cplusplus >= 201703L
inline xsprof_status arg(const char *key, std::string_view value) noexcept {
    char buf[XSPROF_NAME_MAX + 1]; // the C API takes a terminated string
    if (value.size() > XSPROF_NAME_MAX)
        return XSPROF_ERR_TOO_LONG;
    value.copy(buf, value.size());
    buf[value.size()] = '\0';
    return xsprof_region_arg_string(key, buf);
}
#endif
inline xsprof_status arg(const char *key, bool value) noexcept { return xsprof_region_arg_int(key, value ? 1 : 0); }
template <class T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
xsprof_status arg(const char *key, T value) noexcept {
    return xsprof_region_arg_int(key, static_cast<int64_t>(value));
}
template <class T, typename std::enable_if<std::is_floating_point<T>::value, int>::type = 0>
xsprof_status arg(const char *key, T value) noexcept {
    return xsprof_region_arg_double(key, static_cast<double>(value));
}
// A shape from any container of integers (std::vector<int>, std::array<long, 4>...).
template <class C, typename std::enable_if<detail::is_int_container<C>::value, int>::type = 0>
xsprof_status arg(const char *key, const C &dims) noexcept {
    int64_t d[8];
    int n = 0;
    for (auto it = std::begin(dims); it != std::end(dims); ++it) {
        if (n == 8)
            return XSPROF_ERR_TOO_LONG; // a shape has at most 8 dimensions
        d[n++] = static_cast<int64_t>(*it);
    }
    return xsprof_region_arg_shape(key, d, n);
}
inline xsprof_status arg(const char *key, std::initializer_list<int64_t> dims) noexcept {
    return arg<std::initializer_list<int64_t>>(key, dims);
}

// A region from construction to destruction (RAII), an exception unwinding
// through it included. Movable: the region then ends with the object moved
// into. Regions nest per thread; end them in reverse order of beginning.
class scope {
  public:
    explicit scope(const char *name) noexcept : open_(true) { xsprof_region_begin(name); }
    explicit scope(const std::string &name) noexcept : scope(name.c_str()) {}
#if __cplusplus >= 201703L
    explicit scope(std::string_view name) noexcept : open_(true) {
        char buf[XSPROF_NAME_MAX + 1];
        std::size_t n = name.size() < XSPROF_NAME_MAX ? name.size() : XSPROF_NAME_MAX;
        name.copy(buf, n);
        buf[n] = '\0';
        xsprof_region_begin(buf);
    }
#endif
    scope(scope &&other) noexcept : open_(other.open_) { other.open_ = false; }
    scope &operator=(scope &&other) noexcept {
        if (this != &other) {
            end();
            open_ = other.open_;
            other.open_ = false;
        }
        return *this;
    }
    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;
    ~scope() { end(); }

    // End the region now (the destructor then does nothing).
    void end() noexcept {
        if (open_) {
            open_ = false;
            xsprof_region_end();
        }
    }
    // An argument of the innermost open region: this one while no inner region is open.
    template <class T> scope &arg(const char *key, const T &value) noexcept {
        xsprof::arg(key, value);
        return *this;
    }
    scope &arg(const char *key, std::initializer_list<int64_t> dims) noexcept {
        xsprof::arg(key, dims);
        return *this;
    }

  private:
    bool open_;
};

// Region callbacks from any callable, lambdas with captures included;
// removed when the object is destroyed. A callback that throws has its
// exception dropped (it cannot cross the C library).
class observer {
  public:
    using callback = std::function<void(const xsprof_region_info &)>;
    observer(callback on_begin, callback on_end, double sample_rate = 1.0, bool this_thread_only = false)
        : state_(new state{std::move(on_begin), std::move(on_end)}) {
        status_ = xsprof_observer_add(state_->on_begin ? &call_begin : nullptr, state_->on_end ? &call_end : nullptr,
                                      state_.get(), sample_rate, this_thread_only ? 1 : 0, &handle_);
    }
    observer(observer &&) noexcept = default;
    observer &operator=(observer &&other) noexcept {
        if (this != &other) {
            remove();
            state_ = std::move(other.state_);
            handle_ = other.handle_;
            status_ = other.status_;
        }
        return *this;
    }
    ~observer() { remove(); }
    // XSPROF_OK once registered (XSPROF_ERR_NOMEM past 16 observers...).
    xsprof_status status() const noexcept { return status_; }

  private:
    struct state {
        callback on_begin, on_end;
    };
    static void call_begin(const xsprof_region_info *info, void *user) { call(static_cast<state *>(user)->on_begin, info); }
    static void call_end(const xsprof_region_info *info, void *user) { call(static_cast<state *>(user)->on_end, info); }
    static void call(const callback &fn, const xsprof_region_info *info) noexcept {
        try {
            fn(*info);
        } catch (...) {
        }
    }
    void remove() noexcept {
        if (state_ && status_ == XSPROF_OK)
            xsprof_observer_remove(handle_);
        state_.reset();
    }
    std::unique_ptr<state> state_;
    xsprof_observer_handle handle_ = 0;
    xsprof_status status_ = XSPROF_ERR_STATE;
};

inline xsprof_status instant(const char *name) noexcept { return xsprof_instant(name); }
inline xsprof_status instant(const std::string &name) noexcept { return xsprof_instant(name.c_str()); }
inline xsprof_status counter(const char *name, double value) noexcept { return xsprof_counter_set(name, value); }
inline xsprof_status counter(const std::string &name, double value) noexcept {
    return xsprof_counter_set(name.c_str(), value);
}
inline xsprof_status step() noexcept { return xsprof_step(); }

} // namespace xsprof

#endif
