// Plain-text and Markdown renderings of one result, for `recognize --format text|markdown`, the GUI's
// copy buttons and "Export Markdown". Pure functions, any thread.
//
// Plain text: the result's text; for an extraction result without text, "name: value" lines; for a
// failed result, the empty string (the caller reports the error).
// Markdown: the model's Markdown when there is one (document parsing), else the fields as a two-column
// table (+ the text below it when any), else the text with Markdown's special characters escaped and
// each line kept as its own line (hard breaks); a failed result gives one italic "error" line.
#pragma once

#include <string>
#include <string_view>

#include "core/doc/ocr_result.h"

namespace lector::doc {

std::string toPlainText(const OcrResult& result);
std::string toMarkdown(const OcrResult& result);

// Escapes characters that would turn plain text into Markdown markup (emphasis, links, headings,
// list markers at the line start, table pipes, HTML tags).
std::string escapeMarkdown(std::string_view text);

}  // namespace lector::doc
