#include "core/doc/preset.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/common/paths.h"
#include "core/doc/text_util.h"

namespace lector::doc {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::set<std::string>& knownModels()
{
    static const std::set<std::string> models{"ppocr-v4", "hunyuan-ocr"};
    return models;
}

// Thrown inside the loader only, turned into a "bad_preset" Error naming the file at the boundary.
struct PresetProblem {
    std::string what;
};

[[noreturn]] void problem(const std::string& what) { throw PresetProblem{what}; }

void checkKeys(const json& obj, const std::set<std::string>& allowed, const std::string& where)
{
    for (const auto& [key, value] : obj.items()) {
        if (allowed.count(key) == 0 && key != "comment")
            problem(where + "unknown key \"" + key + "\"");
    }
}

std::string getString(const json& obj, const char* key, const std::string& where, bool required)
{
    auto it = obj.find(key);
    if (it == obj.end()) {
        if (required) problem(where + "missing \"" + key + "\"");
        return {};
    }
    if (!it->is_string()) problem(where + "\"" + key + "\" must be a string");
    return it->get<std::string>();
}

std::vector<std::string> getStringList(const json& obj, const char* key, const std::string& where)
{
    std::vector<std::string> out;
    auto it = obj.find(key);
    if (it == obj.end()) return out;
    if (!it->is_array()) problem(where + "\"" + key + "\" must be an array of strings");
    for (const auto& v : *it) {
        if (!v.is_string() || v.get<std::string>().empty())
            problem(where + "\"" + key + "\" must hold non-empty strings");
        out.push_back(v.get<std::string>());
    }
    return out;
}

LocalizedText getLocalized(const json& obj, const char* key, const std::string& where, bool required)
{
    auto it = obj.find(key);
    if (it == obj.end()) {
        if (required) problem(where + "missing \"" + key + "\"");
        return {};
    }
    const std::string here = where + "\"" + key + "\": ";
    if (!it->is_object()) problem(here + "must be an object {\"en\": ..., \"zh\": ...}");
    checkKeys(*it, {"en", "zh"}, here);
    LocalizedText t{getString(*it, "en", here, true), getString(*it, "zh", here, true)};
    if (t.en.empty() || t.zh.empty()) problem(here + "\"en\" and \"zh\" must not be empty");
    return t;
}

OutputKind parseOutputKind(const std::string& s)
{
    if (s == "spotting") return OutputKind::Spotting;
    if (s == "markdown") return OutputKind::Markdown;
    if (s == "fields") return OutputKind::Fields;
    if (s == "text") return OutputKind::Text;
    if (s == "auto") return OutputKind::Auto;
    problem("\"output\": unknown kind \"" + s + "\" (spotting, markdown, fields, text, auto)");
}

FieldRule parseField(const json& f, std::size_t index)
{
    const std::string where = "fields[" + std::to_string(index) + "]: ";
    if (!f.is_object()) problem(where + "must be an object");
    checkKeys(f, {"name", "labels", "pattern", "stripPrefixes", "multiline", "fallback", "pick"}, where);
    FieldRule rule;
    rule.name = getString(f, "name", where, true);
    if (rule.name.empty()) problem(where + "\"name\" is empty");
    rule.labels = getStringList(f, "labels", where);
    rule.stripPrefixes = getStringList(f, "stripPrefixes", where);
    rule.pattern = getString(f, "pattern", where, false);
    if (!rule.pattern.empty()) {
        try {
            std::regex re(rule.pattern, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            problem(where + "\"pattern\" is not a valid regex (" + e.what() + "): " + rule.pattern);
        }
    }
    if (auto it = f.find("multiline"); it != f.end()) {
        if (!it->is_boolean()) problem(where + "\"multiline\" must be true or false");
        rule.multiline = it->get<bool>();
    }
    const std::string fallback = getString(f, "fallback", where, false);
    if (fallback == "pattern") rule.fallback = FieldRule::Fallback::Pattern;
    else if (fallback == "firstLine") rule.fallback = FieldRule::Fallback::FirstLine;
    else if (!fallback.empty()) problem(where + "\"fallback\" must be \"pattern\" or \"firstLine\"");
    if (rule.fallback == FieldRule::Fallback::Pattern && rule.pattern.empty())
        problem(where + "\"fallback\": \"pattern\" needs a \"pattern\"");
    const std::string pick = getString(f, "pick", where, false);
    if (pick == "last") rule.pick = FieldRule::Pick::Last;
    else if (pick == "largest") rule.pick = FieldRule::Pick::Largest;
    else if (!pick.empty() && pick != "first") problem(where + "\"pick\" must be \"first\", \"last\" or \"largest\"");
    return rule;
}

void checkPlaceholders(const Preset& p)
{
    for (const std::string* text : {&p.prompt.en, &p.prompt.zh}) {
        std::size_t pos = 0;
        while ((pos = text->find('{', pos)) != std::string::npos) {
            const std::size_t end = text->find('}', pos);
            const std::string name = end == std::string::npos ? text->substr(pos) : text->substr(pos, end - pos + 1);
            if (name != "{fields}" && name != "{target_language}")
                problem("\"prompt\": unknown placeholder " + name + " (use {fields} or {target_language})");
            pos = pos + 1;
        }
        if (p.output == OutputKind::Fields && text->find("{fields}") == std::string::npos)
            problem("\"prompt\": an extraction preset's prompt needs {fields}");
        if (text->find("{target_language}") != std::string::npos && p.targetLanguages.empty())
            problem("\"prompt\": {target_language} needs \"targetLanguages\"");
    }
}

void parseTargetLanguages(const json& root, Preset& p)
{
    auto it = root.find("targetLanguages");
    if (it == root.end()) return;
    if (!it->is_array() || it->empty()) problem("\"targetLanguages\" must be a non-empty array");
    for (std::size_t i = 0; i < it->size(); ++i) {
        const json& t = (*it)[i];
        const std::string where = "targetLanguages[" + std::to_string(i) + "]: ";
        if (!t.is_object()) problem(where + "must be an object");
        checkKeys(t, {"id", "name"}, where);
        TargetLanguage lang{getString(t, "id", where, true), getLocalized(t, "name", where, true)};
        for (const auto& other : p.targetLanguages)
            if (other.id == lang.id) problem(where + "duplicate id \"" + lang.id + "\"");
        p.targetLanguages.push_back(std::move(lang));
    }
    p.defaultTargetLanguage = getString(root, "defaultTargetLanguage", "", false);
    if (p.defaultTargetLanguage.empty()) p.defaultTargetLanguage = p.targetLanguages.front().id;
    const bool known = std::any_of(p.targetLanguages.begin(), p.targetLanguages.end(),
                                   [&](const TargetLanguage& t) { return t.id == p.defaultTargetLanguage; });
    if (!known) problem("\"defaultTargetLanguage\" \"" + p.defaultTargetLanguage + "\" is not in targetLanguages");
}

Preset parsePreset(const json& root, const fs::path& file)
{
    if (!root.is_object()) problem("the file must hold one JSON object");
    checkKeys(root, {"id", "order", "name", "description", "models", "output", "prompt", "promptFrom", "userPrompt",
                     "fields", "targetLanguages", "defaultTargetLanguage"}, "");
    Preset p;
    p.source = file;
    p.id = getString(root, "id", "", true);
    if (p.id != file.stem().string())
        problem("\"id\" \"" + p.id + "\" must equal the file name \"" + file.stem().string() + "\"");
    if (auto it = root.find("order"); it != root.end()) {
        if (!it->is_number_integer()) problem("\"order\" must be an integer");
        p.order = it->get<int>();
    }
    p.name = getLocalized(root, "name", "", true);
    p.description = getLocalized(root, "description", "", false);
    p.models = getStringList(root, "models", "");
    if (p.models.empty()) problem("\"models\" must list at least one model");
    for (const auto& m : p.models)
        if (knownModels().count(m) == 0) problem("\"models\": unknown model \"" + m + "\" (ppocr-v4, hunyuan-ocr)");
    p.output = parseOutputKind(getString(root, "output", "", true));
    p.prompt = getLocalized(root, "prompt", "", false);
    p.promptFrom = getString(root, "promptFrom", "", false);
    if (auto it = root.find("userPrompt"); it != root.end()) {
        if (!it->is_boolean()) problem("\"userPrompt\" must be true or false");
        p.userPrompt = it->get<bool>();
    }
    const int promptSources = int(!p.prompt.en.empty()) + int(!p.promptFrom.empty()) + int(p.userPrompt);
    if (p.supportsModel("hunyuan-ocr") && promptSources != 1)
        problem("a preset for hunyuan-ocr needs exactly one of \"prompt\", \"promptFrom\", \"userPrompt\": true");
    if (!p.supportsModel("hunyuan-ocr") && promptSources != 0)
        problem("a prompt is only used by hunyuan-ocr, which \"models\" does not list");
    if (auto it = root.find("fields"); it != root.end()) {
        if (!it->is_array()) problem("\"fields\" must be an array");
        std::set<std::string> names;
        for (std::size_t i = 0; i < it->size(); ++i) {
            p.fields.push_back(parseField((*it)[i], i));
            if (!names.insert(p.fields.back().name).second)
                problem("fields: duplicate name \"" + p.fields.back().name + "\"");
        }
    }
    if (p.output == OutputKind::Fields && p.fields.empty()) problem("an extraction preset needs \"fields\"");
    if (p.output != OutputKind::Fields && !p.fields.empty()) problem("\"fields\" only belong to \"output\": \"fields\"");
    parseTargetLanguages(root, p);
    checkPlaceholders(p);
    return p;
}

// Replaces every occurrence of `from` in `s`.
void replaceAll(std::string& s, std::string_view from, std::string_view to)
{
    std::size_t pos = 0;
    while ((pos = s.find(from, pos)) != std::string::npos) {
        s.replace(pos, from.size(), to);
        pos += to.size();
    }
}

std::string pythonStrRepr(std::string_view s)
{
    const bool hasSingle = s.find('\'') != std::string_view::npos;
    const bool hasDouble = s.find('"') != std::string_view::npos;
    const char quote = (hasSingle && !hasDouble) ? '"' : '\'';
    std::string out(1, quote);
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\\') out += "\\\\";
        else if (c == quote) (out += '\\') += c;
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (u < 0x20 || u == 0x7F) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    out += quote;
    return out;
}

}  // namespace

std::string_view outputKindName(OutputKind kind)
{
    switch (kind) {
    case OutputKind::Spotting: return "spotting";
    case OutputKind::Markdown: return "markdown";
    case OutputKind::Fields: return "fields";
    case OutputKind::Text: return "text";
    case OutputKind::Auto: return "auto";
    }
    return "text";
}

const std::string& LocalizedText::in(std::string_view language) const
{
    if (language == "en") return en.empty() ? zh : en;
    return zh.empty() ? en : zh;
}

bool Preset::supportsModel(std::string_view model) const
{
    for (const auto& m : models) {
        if (model == m) return true;
        if (model.size() > m.size() && model.substr(0, m.size()) == m && model[m.size()] == '-') return true;
    }
    return false;
}

std::vector<std::string> Preset::fieldNames() const
{
    std::vector<std::string> names;
    for (const auto& f : fields) names.push_back(f.name);
    return names;
}

const FieldRule* Preset::findField(std::string_view name) const
{
    for (const auto& f : fields)
        if (f.name == name) return &f;
    return nullptr;
}

Result<Preset> loadPreset(const fs::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) return makeError("bad_preset", file.string() + ": cannot read the preset file");
    std::ostringstream ss;
    ss << in.rdbuf();
    try {
        const json root = json::parse(ss.str());
        return parsePreset(root, file);
    } catch (const json::parse_error& e) {
        return makeError("bad_preset", file.string() + ": invalid JSON: " + e.what());
    } catch (const PresetProblem& p) {
        return makeError("bad_preset", file.string() + ": " + p.what);
    }
}

Result<std::vector<Preset>> loadPresets(const fs::path& dir)
{
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return makeError("file_not_found", dir.string() + ": presets folder not found");
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) return makeError("file_not_found", dir.string() + ": no preset (*.json) in the folder");
    std::vector<Preset> presets;
    for (const auto& f : files) {
        auto p = loadPreset(f);
        if (!p.ok()) return p.error();
        presets.push_back(std::move(p).value());
    }
    for (auto& p : presets) {
        if (p.promptFrom.empty()) continue;
        const Preset* from = findPreset(presets, p.promptFrom);
        if (!from || from->prompt.en.empty())
            return makeError("bad_preset", p.source.string() + ": \"promptFrom\": no preset \"" + p.promptFrom +
                                               "\" with its own prompt in " + dir.string());
        p.prompt = from->prompt;
        if (from->output != p.output)
            return makeError("bad_preset", p.source.string() + ": \"output\" differs from that of \"" + p.promptFrom +
                                               "\", whose prompt it uses");
    }
    std::stable_sort(presets.begin(), presets.end(), [](const Preset& a, const Preset& b) {
        return a.order != b.order ? a.order < b.order : a.id < b.id;
    });
    return presets;
}

fs::path defaultPresetsDir() { return resourcesDir() / "presets"; }

const Preset* findPreset(const std::vector<Preset>& presets, std::string_view id)
{
    for (const auto& p : presets)
        if (p.id == id) return &p;
    return nullptr;
}

std::string pythonListRepr(const std::vector<std::string>& items)
{
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += pythonStrRepr(items[i]);
    }
    return out + "]";
}

std::string buildPrompt(const Preset& preset, const PromptArgs& args)
{
    if (!args.userPrompt.empty()) return args.userPrompt;
    if (preset.userPrompt) return {};
    std::string prompt = preset.prompt.in(args.language);
    replaceAll(prompt, "{fields}", pythonListRepr(args.fields.empty() ? preset.fieldNames() : args.fields));
    if (prompt.find("{target_language}") != std::string::npos) {
        const std::string wanted = args.targetLanguage.empty() ? preset.defaultTargetLanguage : args.targetLanguage;
        std::string name = wanted;
        const std::string lower = asciiLower(wanted);
        for (const auto& t : preset.targetLanguages) {
            if (lower == asciiLower(t.id) || lower == asciiLower(t.name.en) || wanted == t.name.zh) {
                name = t.name.in(args.language);
                break;
            }
        }
        replaceAll(prompt, "{target_language}", name);
    }
    return prompt;
}

}  // namespace lector::doc
