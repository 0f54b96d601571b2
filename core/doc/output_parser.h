// Turns a prompt-driven model's answer (HunyuanOCR) into the result schema: spotting items into lines
// with pixel boxes, JSON fields, Markdown (+ its plain text), plain text; the raw answer is always kept.
// Called by the engine thread when a sequence finishes (and by tests); pure functions otherwise.
//
// Spotting (docs/hunyuanocr-spec.md §9.2): items back to back, `TEXT(x1,y1),(x2,y2)`, coordinates
// normalised to 0..1000 of the original image. Items are found by their coordinate tail, so text that
// itself holds parentheses ("Total (USD)") still parses; the raw token form
// `<ref>TEXT</ref><quad>(x1,y1),(x2,y2)</quad>` (also with the placeholder-token spellings) and
// four-point quads are accepted too. Pixels: X = int(x * W / 1000), Y = int(y * H / 1000).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/doc/lenient_json.h"
#include "core/doc/ocr_result.h"
#include "core/doc/preset.h"

namespace lector::doc {

// Tencent's post-processing (spec §8): for outputs of at least 8000 characters (code points), finds the
// shortest tail of 2..n/10 characters repeated back to back at least 10 times at the end and keeps one
// copy of it. Shorter texts come back unchanged. Invalid UTF-8 bytes count as one character each and
// are kept.
std::string cleanRepeatedSubstrings(std::string_view text);

// Replaces the placeholder-token spellings of <ref> </ref> <quad> </quad> <pFig> </pFig>
// (<｜hy_place▁holder▁no▁110｜> ...) by those tags and drops every other <｜...｜> special token.
std::string normalizeSpecialTokens(std::string_view text);

struct SpottingParse {
    std::vector<TextLine> lines;   // items with a complete coordinate tail, in model order
    std::string trailingText;      // text after the last item that has no coordinates (cut-off output)
};
// Parses spotting output for an image of width x height pixels.
SpottingParse parseSpotting(std::string_view text, int width, int height);

// Plain text of a Markdown/HTML/LaTeX document: headings and emphasis markers dropped, table rows as
// tab-separated lines (HTML and pipe tables), figure coordinates removed, entities decoded, LaTeX kept.
std::string markdownToText(std::string_view markdown);

// The fields of an extraction answer: lenient JSON first, "key: value" lines second; nullopt when
// neither is there.
std::optional<FieldList> parseFields(std::string_view text);

// What an answer looks like, for presets with OutputKind::Auto (the custom prompt).
OutputKind detectOutputKind(std::string_view text);

// Fills result.lines, text, fields, markdown and raw from the model's answer `raw` for `preset`.
// width/height: the original (oriented) image size, for spotting boxes. Never fails: an answer that
// does not have the expected form is kept as text (and in raw). cleanRepeatedSubstrings runs first.
void applyModelOutput(const Preset& preset, const std::string& raw, int width, int height, OcrResult& result);

}  // namespace lector::doc
