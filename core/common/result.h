// Result<T> and Error: how core reports expected failures (missing files, bad images, bad presets).
// Unexpected failures (libtorch, loader bugs) are exceptions, caught at model load and in the engine
// step (docs/style.md §6.4). Error codes are stable strings: they end up in the result JSON.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace lector {

struct Error {
    std::string code;     // stable, snake_case: "decode_failed", "file_not_found", "bad_model" ...
    std::string message;  // for people: names the input ("photo.jpg: truncated JPEG data")
};

inline Error makeError(std::string code, std::string message)
{
    return Error{std::move(code), std::move(message)};
}

// A value or an Error, like std::expected (C++23) with the parts we use.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}

    bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(m_v); }
    const T& value() const& { return std::get<0>(m_v); }
    T&& value() && { return std::get<0>(std::move(m_v)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { return std::get<1>(m_v); }

private:
    std::variant<T, Error> m_v;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : m_error(std::move(error)), m_failed(true) {}
    bool ok() const { return !m_failed; }
    explicit operator bool() const { return ok(); }
    const Error& error() const { return m_error; }

private:
    Error m_error;
    bool m_failed = false;
};

}  // namespace lector
