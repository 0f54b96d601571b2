#include "app/cli/args.h"

#include <charconv>
#include <sstream>

namespace lector::cli {

const OptionSpec* Args::find(const std::string& name) const
{
    for (const auto& s : m_specs)
        if (s.name == name) return &s;
    return nullptr;
}

std::optional<std::string> Args::parse(const std::vector<std::string>& argv)
{
    bool onlyPositional = false;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (onlyPositional || a.size() < 2 || a[0] != '-' || a == "-") {
            m_positional.push_back(a);
            continue;
        }
        if (a == "--") {
            onlyPositional = true;
            continue;
        }
        std::string name = a.substr(a[1] == '-' ? 2 : 1);
        std::optional<std::string> inlineValue;
        if (auto eq = name.find('='); eq != std::string::npos) {
            inlineValue = name.substr(eq + 1);
            name.resize(eq);
        }
        const OptionSpec* spec = find(name);
        if (!spec) return "unknown option " + a;
        if (spec->valueName.empty()) {
            if (inlineValue) return "option --" + name + " takes no value";
            m_values[name] = "1";
            continue;
        }
        if (inlineValue) {
            m_values[name] = *inlineValue;
        } else {
            if (i + 1 >= argv.size()) return "option --" + name + " needs a value (" + spec->valueName + ")";
            m_values[name] = argv[++i];
        }
    }
    return std::nullopt;
}

std::string Args::value(const std::string& name, const std::string& fallback) const
{
    auto it = m_values.find(name);
    return it == m_values.end() ? fallback : it->second;
}

std::optional<std::string> Args::intValue(const std::string& name, int fallback, int min, int max, int& out) const
{
    out = fallback;
    auto it = m_values.find(name);
    if (it == m_values.end()) return std::nullopt;
    const auto& s = it->second;
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max)
        return "--" + name + " expects an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
               "], got '" + s + "'";
    out = v;
    return std::nullopt;
}

std::string Args::help() const
{
    std::ostringstream s;
    for (const auto& spec : m_specs) {
        std::string left = "  --" + spec.name + (spec.valueName.empty() ? "" : " " + spec.valueName);
        if (left.size() < 28) left.resize(28, ' ');
        s << left << " " << spec.help << "\n";
    }
    return s.str();
}

}  // namespace lector::cli
