// A small command-line parser for lector-cli (Qt-free: lector-cli also builds on the GPU machine).
// Options are declared once with their help text; parse() returns positional arguments and the option
// values, or a usage error message (exit code 2).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lector::cli {

struct OptionSpec {
    std::string name;        // without dashes: "format"
    std::string valueName;   // empty: a flag without value
    std::string help;
};

class Args {
public:
    explicit Args(std::vector<OptionSpec> specs) : m_specs(std::move(specs)) {}

    // Returns an error message, or nullopt on success.
    std::optional<std::string> parse(const std::vector<std::string>& argv);

    bool has(const std::string& name) const { return m_values.count(name) > 0; }
    std::string value(const std::string& name, const std::string& fallback = "") const;
    // Integer option; error message when not an integer in [min, max].
    std::optional<std::string> intValue(const std::string& name, int fallback, int min, int max, int& out) const;
    const std::vector<std::string>& positional() const { return m_positional; }
    std::string help() const;

private:
    const OptionSpec* find(const std::string& name) const;
    std::vector<OptionSpec> m_specs;
    std::map<std::string, std::string> m_values;
    std::vector<std::string> m_positional;
};

}  // namespace lector::cli
