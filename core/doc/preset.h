// Presets: what the user picks in the GUI's preset panel or with `--preset`: one JSON file per preset in
// resources/presets/ (format in resources/presets/README.md). A preset says which models run it, the
// official HunyuanOCR prompt (Chinese and English), what kind of output to expect and, for extraction
// presets, the default fields with the printed labels PP-OCR results are searched for.
// Loaded once (engine start-up, GUI start-up) from any thread; Preset values are plain data.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace lector::doc {

// How the model's answer is read (output_parser.h).
enum class OutputKind {
    Spotting,  // text(x1,y1),(x2,y2) items -> lines with boxes
    Markdown,  // document parsing: Markdown (+ HTML tables, LaTeX) kept, plain text derived
    Fields,    // JSON object of field -> value
    Text,      // plain text (translation, subtitles)
    Auto,      // user prompt: whichever of the above the answer looks like
};
std::string_view outputKindName(OutputKind kind);

struct LocalizedText {
    std::string en;
    std::string zh;
    // The text in `language` ("zh" or "en"), else the other one.
    const std::string& in(std::string_view language) const;
};

// One field of an extraction preset, and how to find its value in PP-OCR lines.
struct FieldRule {
    std::string name;                  // the key asked for and reported ("姓名", "total")
    std::vector<std::string> labels;   // printed labels; ASCII ones match case-insensitively, as words
    std::string pattern;               // ECMAScript regex the value must contain; the match is the value
    std::vector<std::string> stripPrefixes;  // sub-labels removed from a value ("名称" in "名称：xx")
    bool multiline = false;            // the value may continue on the lines below (addresses)
    enum class Fallback { None, Pattern, FirstLine } fallback = Fallback::None;  // when no label is found
    enum class Pick { First, Last, Largest } pick = Pick::First;  // several label hits: which value wins
};

struct TargetLanguage {
    std::string id;     // "en", "zh"
    LocalizedText name; // how each prompt language names it: {"English", "英文"}
};

struct Preset {
    std::string id;                    // file name without .json; what Request::preset says
    int order = 0;                     // position in the GUI list
    LocalizedText name;
    LocalizedText description;
    std::vector<std::string> models;   // "ppocr-v4", "hunyuan-ocr"
    LocalizedText prompt;              // may hold {fields} and {target_language}; empty for custom
    std::string promptFrom;            // id of the preset whose prompt this one uses ("text" -> "spotting");
                                       // loadPresets() copies that prompt in
    bool userPrompt = false;           // the prompt comes from the user (custom)
    OutputKind output = OutputKind::Text;
    std::vector<FieldRule> fields;     // extraction presets: default fields, in prompt order
    std::vector<TargetLanguage> targetLanguages;  // translate
    std::string defaultTargetLanguage;            // id in targetLanguages
    std::filesystem::path source;      // the file it came from

    // True when `model` ("hunyuan-ocr", "hunyuan-ocr-1.0", "ppocr-v4") is listed (a listed id also
    // covers its versioned names: "hunyuan-ocr" covers "hunyuan-ocr-1.0").
    bool supportsModel(std::string_view model) const;
    std::vector<std::string> fieldNames() const;
    const FieldRule* findField(std::string_view name) const;
};

// Reads and validates one preset file. Error "bad_preset" naming the file and the problem (invalid JSON,
// missing or mistyped key, unknown output kind or model, a prompt without {fields} for an extraction
// preset, a bad regex, ...).
Result<Preset> loadPreset(const std::filesystem::path& file);
// Every *.json in `dir`, sorted by order then id; presets referring to another one ("promptFrom") are
// resolved. Errors: "bad_preset" (first bad file, or a duplicate id, or an unknown promptFrom),
// "file_not_found" (no such folder or no preset in it).
Result<std::vector<Preset>> loadPresets(const std::filesystem::path& dir);
// The folder the application ships: <resources>/presets.
std::filesystem::path defaultPresetsDir();
const Preset* findPreset(const std::vector<Preset>& presets, std::string_view id);

// What a request adds to a preset's prompt.
struct PromptArgs {
    std::vector<std::string> fields;   // empty: the preset's default fields
    std::string targetLanguage;        // id ("en"), or a name in either language; empty: the default
    std::string language = "zh";       // prompt language; Chinese prompts work better (spec §9.1)
    std::string userPrompt;            // non-empty: used as is, overriding the preset's prompt
};

// The prompt to send. Field lists are formatted like Python's repr of a list, as in the official
// examples: ['姓名', '性别']. An unknown target language is put in verbatim. Returns "" when there is
// nothing to send (custom preset without a user prompt); callers report that as a bad request.
std::string buildPrompt(const Preset& preset, const PromptArgs& args);
// Python repr() of a list of strings: ['a', 'b'], quotes chosen and escaped like Python does.
std::string pythonListRepr(const std::vector<std::string>& items);

}  // namespace lector::doc
