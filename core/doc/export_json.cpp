#include "core/doc/export_json.h"

#include <algorithm>
#include <cmath>

#include "core/doc/text_util.h"

namespace lector::doc {
namespace {

Json str(const std::string& s) { return Json(utf8::sanitize(s)); }

Json lineToJson(const TextLine& line)
{
    Json j = Json::object();
    j["text"] = str(line.text);
    j["box"] = Json::array({line.box[0], line.box[1], line.box[2], line.box[3]});
    Json poly = Json::array();
    for (const auto& p : line.polygon) {
        poly.push_back(Json::array({std::lround(p.x), std::lround(p.y)}));
    }
    j["polygon"] = std::move(poly);
    if (line.confidence) j["confidence"] = roundTo(*line.confidence, 4);
    return j;
}

// --- reading back: small typed accessors that turn a wrong type into a message ---

struct Reader {
    std::string_view source;
    std::string problem;  // first problem found; empty while fine

    void fail(const std::string& what)
    {
        if (problem.empty()) problem = what;
    }
    std::string getString(const Json& o, const char* key, const std::string& where)
    {
        auto it = o.find(key);
        if (it == o.end() || it->is_null()) return {};
        if (!it->is_string()) {
            fail(where + "\"" + key + "\" is not a string");
            return {};
        }
        return it->get<std::string>();
    }
    int getInt(const Json& v, const std::string& what)
    {
        if (!v.is_number()) {
            fail(what + " is not a number");
            return 0;
        }
        return static_cast<int>(std::lround(v.get<double>()));
    }
    double getDouble(const Json& v, const std::string& what)
    {
        if (!v.is_number()) {
            fail(what + " is not a number");
            return 0;
        }
        return v.get<double>();
    }
};

TextLine lineFromJson(const Json& j, Reader& rd, const std::string& where)
{
    TextLine line;
    if (!j.is_object()) {
        rd.fail(where + " is not an object");
        return line;
    }
    line.text = rd.getString(j, "text", where);
    if (auto it = j.find("box"); it != j.end()) {
        if (!it->is_array() || it->size() != 4) rd.fail(where + "\"box\" is not [x0, y0, x1, y1]");
        else
            for (int k = 0; k < 4; ++k) line.box[k] = rd.getInt((*it)[k], where + "box value");
    }
    if (auto it = j.find("polygon"); it != j.end()) {
        if (!it->is_array() || it->size() != 4) {
            rd.fail(where + "\"polygon\" is not four [x, y] points");
        } else {
            for (int k = 0; k < 4; ++k) {
                const Json& p = (*it)[k];
                if (!p.is_array() || p.size() != 2) {
                    rd.fail(where + "\"polygon\" point is not [x, y]");
                    break;
                }
                line.polygon[k] = {static_cast<float>(rd.getDouble(p[0], where + "polygon x")),
                                   static_cast<float>(rd.getDouble(p[1], where + "polygon y"))};
            }
        }
    } else {
        // No polygon stored: the box's corners, clockwise from top-left.
        const auto& b = line.box;
        line.polygon = {PointF{float(b[0]), float(b[1])}, PointF{float(b[2]), float(b[1])},
                        PointF{float(b[2]), float(b[3])}, PointF{float(b[0]), float(b[3])}};
    }
    if (auto it = j.find("confidence"); it != j.end() && !it->is_null()) {
        line.confidence = static_cast<float>(rd.getDouble(*it, where + "\"confidence\""));
    }
    return line;
}

void readFieldsAndTimings(const Json& j, OcrResult& r, Reader& rd)
{
    if (auto it = j.find("fields"); it != j.end() && !it->is_null()) {
        if (!it->is_object()) {
            rd.fail("\"fields\" is not an object");
        } else {
            for (const auto& [k, v] : it->items()) {
                r.fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
            }
        }
    }
    if (auto it = j.find("timing_ms"); it != j.end() && !it->is_null()) {
        if (!it->is_object()) rd.fail("\"timing_ms\" is not an object");
        else
            for (const auto& [k, v] : it->items()) r.timingMs.emplace_back(k, rd.getDouble(v, "timing_ms." + k));
    }
    if (auto it = j.find("tokens"); it != j.end() && !it->is_null()) {
        if (!it->is_object()) {
            rd.fail("\"tokens\" is not an object");
        } else {
            TokenCounts t;
            if (it->contains("prompt")) t.prompt = rd.getInt((*it)["prompt"], "tokens.prompt");
            if (it->contains("generated")) t.generated = rd.getInt((*it)["generated"], "tokens.generated");
            r.tokens = t;
        }
    }
}

}  // namespace

Json toJson(const OcrResult& r)
{
    Json j = Json::object();
    j["image"] = str(r.image);
    if (r.width > 0 && r.height > 0) {
        j["width"] = r.width;
        j["height"] = r.height;
    }
    if (!r.model.empty()) j["model"] = str(r.model);
    if (!r.device.empty()) j["device"] = str(r.device);
    if (!r.dtype.empty()) j["dtype"] = str(r.dtype);
    if (!r.preset.empty()) j["preset"] = str(r.preset);
    if (r.prompt) j["prompt"] = str(*r.prompt);
    if (!r.failed()) {
        Json lines = Json::array();
        for (const auto& line : r.lines) lines.push_back(lineToJson(line));
        j["lines"] = std::move(lines);
        j["text"] = str(r.text);
        if (!r.fields.empty()) {
            Json fields = Json::object();
            for (const auto& [k, v] : r.fields) fields[utf8::sanitize(k)] = str(v);
            j["fields"] = std::move(fields);
        }
        if (r.markdown) j["markdown"] = str(*r.markdown);
    }
    if (r.raw) j["raw"] = str(*r.raw);
    if (!r.timingMs.empty()) {
        Json t = Json::object();
        for (const auto& [stage, ms] : r.timingMs) t[utf8::sanitize(stage)] = roundTo(ms, 1);
        j["timing_ms"] = std::move(t);
    }
    if (r.tokens) j["tokens"] = Json{{"prompt", r.tokens->prompt}, {"generated", r.tokens->generated}};
    if (r.error) j["error"] = Json{{"code", str(r.error->code)}, {"message", str(r.error->message)}};
    else j["error"] = nullptr;
    return j;
}

Json toJsonArray(const std::vector<OcrResult>& results)
{
    Json a = Json::array();
    for (const auto& r : results) a.push_back(toJson(r));
    return a;
}

std::string toJsonLine(const OcrResult& result) { return toJson(result).dump(); }

namespace {

// Pretty printing for people: nlohmann's dump(2) puts every coordinate on its own line, so one result
// becomes hundreds of lines. Here arrays of numbers (box, polygon) stay on one line, each entry of
// "lines" is one line, and small flat objects (timing_ms, tokens, error) are one line; the rest is
// indented as usual. The text parses to exactly the same JSON as dump().
bool isScalar(const Json& j) { return !j.is_structured(); }
bool isScalarArray(const Json& j)
{
    return j.is_array() && std::all_of(j.begin(), j.end(), [](const Json& e) { return isScalar(e); });
}
bool isInlineValue(const Json& j)
{
    if (isScalar(j) || isScalarArray(j)) return true;
    return j.is_array() && std::all_of(j.begin(), j.end(), [](const Json& e) { return isScalarArray(e); });
}
bool isInlineObject(const Json& j, bool inArray)
{
    if (!j.is_object()) return false;
    size_t length = 0;
    for (const auto& [k, v] : j.items()) {
        if (!(inArray ? isInlineValue(v) : isScalar(v))) return false;
        length += k.size() + (isScalar(v) ? v.dump().size() : 0) + 4;
    }
    return inArray || length <= 100;
}

void writeInline(const Json& j, std::string& out)
{
    if (j.is_object()) {
        out += '{';
        bool first = true;
        for (const auto& [k, v] : j.items()) {
            out += first ? "" : ", ";
            first = false;
            out += Json(k).dump() + ": ";
            writeInline(v, out);
        }
        out += '}';
    } else if (j.is_array()) {
        out += '[';
        for (size_t i = 0; i < j.size(); ++i) {
            if (i) out += ", ";
            writeInline(j[i], out);
        }
        out += ']';
    } else {
        out += j.dump();
    }
}

void writePretty(const Json& j, int indent, int level, bool inArray, std::string& out)
{
    const bool empty = j.is_structured() && j.empty();
    if (empty || isInlineValue(j) || isInlineObject(j, inArray)) return writeInline(j, out);
    const std::string pad(size_t(indent) * (level + 1), ' '), closePad(size_t(indent) * level, ' ');
    out += j.is_object() ? "{\n" : "[\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
        out += pad;
        if (j.is_object()) out += Json(it.key()).dump() + ": ";
        writePretty(*it, indent, level + 1, j.is_array(), out);
        out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += closePad + (j.is_object() ? "}" : "]");
}

}  // namespace

std::string toJsonText(const std::vector<OcrResult>& results, int indent)
{
    std::string out;
    writePretty(results.size() == 1 ? toJson(results[0]) : toJsonArray(results), std::max(indent, 0), 0, false, out);
    return out + "\n";
}

Result<OcrResult> fromJson(const Json& j, std::string_view source)
{
    const std::string prefix = source.empty() ? std::string() : std::string(source) + ": ";
    if (!j.is_object()) return makeError("bad_result", prefix + "a result is not a JSON object");
    Reader rd{source, {}};
    OcrResult r;
    auto it = j.find("image");
    if (it == j.end() || !it->is_string()) return makeError("bad_result", prefix + "result without an \"image\" string");
    r.image = it->get<std::string>();
    if (j.contains("width")) r.width = rd.getInt(j["width"], "\"width\"");
    if (j.contains("height")) r.height = rd.getInt(j["height"], "\"height\"");
    r.model = rd.getString(j, "model", "");
    r.device = rd.getString(j, "device", "");
    r.dtype = rd.getString(j, "dtype", "");
    r.preset = rd.getString(j, "preset", "");
    if (j.contains("prompt") && !j["prompt"].is_null()) r.prompt = rd.getString(j, "prompt", "");
    if (auto li = j.find("lines"); li != j.end() && !li->is_null()) {
        if (!li->is_array()) rd.fail("\"lines\" is not an array");
        else
            for (std::size_t k = 0; k < li->size(); ++k)
                r.lines.push_back(lineFromJson((*li)[k], rd, "lines[" + std::to_string(k) + "] "));
    }
    r.text = rd.getString(j, "text", "");
    if (j.contains("markdown") && !j["markdown"].is_null()) r.markdown = rd.getString(j, "markdown", "");
    if (j.contains("raw") && !j["raw"].is_null()) r.raw = rd.getString(j, "raw", "");
    readFieldsAndTimings(j, r, rd);
    if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
        if (!e->is_object()) rd.fail("\"error\" is neither null nor an object");
        else r.error = Error{rd.getString(*e, "code", "error."), rd.getString(*e, "message", "error.")};
    }
    if (!rd.problem.empty()) return makeError("bad_result", prefix + r.image + ": " + rd.problem);
    return r;
}

Result<std::vector<OcrResult>> resultsFromJsonText(std::string_view text, std::string_view source)
{
    std::vector<OcrResult> out;
    Json whole = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!whole.is_discarded()) {
        if (whole.is_array()) {
            for (std::size_t k = 0; k < whole.size(); ++k) {
                auto r = fromJson(whole[k], std::string(source) + " [" + std::to_string(k) + "]");
                if (!r.ok()) return r.error();
                out.push_back(std::move(r).value());
            }
            return out;
        }
        auto r = fromJson(whole, source);
        if (!r.ok()) return r.error();
        out.push_back(std::move(r).value());
        return out;
    }
    // JSON Lines.
    std::size_t pos = 0, lineNo = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = trimText(text.substr(pos, end - pos));
        pos = end + 1;
        ++lineNo;
        if (line.empty()) continue;
        const std::string where = std::string(source) + ":" + std::to_string(lineNo);
        Json j = Json::parse(line.begin(), line.end(), nullptr, false);
        if (j.is_discarded()) return makeError("bad_result", where + ": not valid JSON");
        auto r = fromJson(j, where);
        if (!r.ok()) return r.error();
        out.push_back(std::move(r).value());
    }
    return out;
}

}  // namespace lector::doc
