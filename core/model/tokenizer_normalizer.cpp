// Normalizer of tokenizer.json: none, NFC, NFD, NFKC, NFKD and Sequence of those, via utf8proc.
// HF applies it to the text between added tokens whose "normalized" flag is false.
#include <cstdlib>

#include <utf8proc.h>

#include "core/model/tokenizer_impl.h"

namespace lector::model::tokenizer_detail {

namespace {

Result<void> parseInto(const nlohmann::json& j, const std::string& file, std::vector<Normalizer::Form>& forms)
{
    if (j.is_null()) return {};
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
        return badFile(file, "normalizer has no \"type\"");
    const std::string type = j["type"].get<std::string>();
    if (type == "NFC") {
        forms.push_back(Normalizer::Form::Nfc);
    } else if (type == "NFD") {
        forms.push_back(Normalizer::Form::Nfd);
    } else if (type == "NFKC") {
        forms.push_back(Normalizer::Form::Nfkc);
    } else if (type == "NFKD") {
        forms.push_back(Normalizer::Form::Nfkd);
    } else if (type == "Sequence") {
        const auto it = j.find("normalizers");
        if (it == j.end() || !it->is_array()) return badFile(file, "normalizer Sequence has no \"normalizers\" array");
        for (const auto& sub : *it) {
            auto r = parseInto(sub, file, forms);
            if (!r) return r;
        }
    } else {
        return unsupported(file, "normalizer type '" + type + "' is not supported (supported: NFC, NFD, NFKC, NFKD, Sequence)");
    }
    return {};
}

bool isAscii(std::string_view s)
{
    for (char c : s)
        if (static_cast<uint8_t>(c) >= 0x80) return false;
    return true;
}

}  // namespace

Result<Normalizer> Normalizer::parse(const nlohmann::json& j, const std::string& file)
{
    Normalizer n;
    auto r = parseInto(j, file, n.m_forms);
    if (!r) return r.error();
    return n;
}

std::string Normalizer::apply(std::string_view text) const
{
    std::string cur(text);
    // All four forms leave ASCII unchanged, and they are idempotent on ASCII-only results.
    if (m_forms.empty() || isAscii(cur)) return cur;
    for (Form f : m_forms) {
        int options = UTF8PROC_STABLE;
        switch (f) {
        case Form::Nfc: options |= UTF8PROC_COMPOSE; break;
        case Form::Nfd: options |= UTF8PROC_DECOMPOSE; break;
        case Form::Nfkc: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
        case Form::Nfkd: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
        }
        utf8proc_uint8_t* dst = nullptr;
        const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(cur.data()),
                                                static_cast<utf8proc_ssize_t>(cur.size()), &dst,
                                                static_cast<utf8proc_option_t>(options));
        // The input is valid UTF-8 (sanitized before), so utf8proc cannot fail short of running out of
        // memory; keep the text unnormalized rather than lose it in that case.
        if (n >= 0 && dst) cur.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
        std::free(dst);
    }
    return cur;
}

}  // namespace lector::model::tokenizer_detail
