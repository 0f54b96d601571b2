// Reading tokenizer.json with nlohmann's SAX interface: model.vocab (~150k entries) and model.merges
// (~150k entries) go straight into flat vectors, everything else into a normal (small) json DOM. This
// avoids building and freeing a 300k-node DOM, which was most of the load time.
#include "core/model/tokenizer_impl.h"

namespace lector::model::tokenizer_detail {

namespace {

using nlohmann::json;

class Handler : public nlohmann::json_sax<json> {
public:
    explicit Handler(TokenizerJson& out) : m_out(out) {}
    std::string error;

    bool null() override { return scalar(json()); }
    bool boolean(bool v) override { return scalar(json(v)); }
    bool number_integer(number_integer_t v) override { return scalar(json(v)); }
    bool number_unsigned(number_unsigned_t v) override { return scalar(json(v)); }
    bool number_float(number_float_t v, const string_t&) override { return scalar(json(v)); }
    bool string(string_t& v) override
    {
        if (m_capture == Capture::Merges && m_depth == 1) {  // "a b"
            m_out.merges.push_back({std::move(v), std::string(), true});
            ++m_mergeIndex;
            return true;
        }
        if (m_capture == Capture::Merges && m_depth == 2) {  // part of ["a", "b"]
            m_parts.push_back(std::move(v));
            return true;
        }
        return scalar(json(std::move(v)));
    }
    bool binary(binary_t&) override { return scalar(json()); }
    bool key(string_t& k) override
    {
        if (m_capture == Capture::None || (m_capture == Capture::Vocab && m_depth == 1)) m_key = std::move(k);
        return true;
    }
    bool start_object(std::size_t) override { return open(true); }
    bool start_array(std::size_t) override { return open(false); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override
    {
        error = e.what();
        return false;
    }

private:
    enum class Capture { None, Vocab, Merges };

    bool scalar(json v)
    {
        switch (m_capture) {
        case Capture::Vocab:
            if (m_depth == 1) {
                if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT32_MAX)
                    m_out.vocab.emplace_back(std::move(m_key), int32_t(v.get<int64_t>()));
                else if (m_out.badVocabKey.empty())
                    m_out.badVocabKey = m_key.empty() ? std::string("\"\"") : m_key;
            }
            return true;
        case Capture::Merges:
            if (m_depth == 1) badMerge(), ++m_mergeIndex;  // a number, null or bool as a merge
            else if (m_depth == 2) m_elementBad = true;    // ["a", 1]
            return true;
        case Capture::None:
            break;
        }
        insert(std::move(v));
        return true;
    }

    bool open(bool object)
    {
        if (m_capture != Capture::None) {
            ++m_depth;
            if (m_capture == Capture::Merges && m_depth == 2) m_parts.clear(), m_elementBad = object;  // an object is no merge
            if (m_capture == Capture::Merges && m_depth > 2) m_elementBad = true;
            if (m_capture == Capture::Vocab && m_depth == 2 && m_out.badVocabKey.empty()) m_out.badVocabKey = m_key;
            return true;
        }
        // model.vocab as an object and model.merges as an array are captured; any other shape goes into
        // the DOM, where BpeModel::parse reports it.
        const bool inModel = m_stack.size() == 2 && m_stack[1]->is_object() && m_modelOpen;
        if (inModel && object && m_key == "vocab") {
            m_capture = Capture::Vocab, m_depth = 1, m_out.hasVocab = true;
            return true;
        }
        if (inModel && !object && m_key == "merges") {
            m_capture = Capture::Merges, m_depth = 1, m_out.hasMerges = true;
            return true;
        }
        const bool opensModel = object && m_stack.size() == 1 && m_stack[0]->is_object() && m_key == "model";
        json* child = insert(object ? json::object() : json::array());
        m_stack.push_back(child);
        if (m_stack.size() == 2) m_modelOpen = opensModel;
        return true;
    }

    bool close()
    {
        if (m_capture != Capture::None) {
            if (m_capture == Capture::Merges && m_depth == 2) {
                if (!m_elementBad && m_parts.size() == 2)
                    m_out.merges.push_back({std::move(m_parts[0]), std::move(m_parts[1]), false});
                else
                    badMerge();
                ++m_mergeIndex;
            }
            if (--m_depth == 0) m_capture = Capture::None;
            return true;
        }
        m_stack.pop_back();
        return true;
    }

    json* insert(json v)
    {
        if (m_stack.empty()) {
            m_out.root = std::move(v);
            return &m_out.root;
        }
        json& top = *m_stack.back();
        if (top.is_object()) {
            json& slot = top[m_key];
            slot = std::move(v);
            return &slot;
        }
        top.push_back(std::move(v));
        return &top.back();
    }

    void badMerge()
    {
        if (m_out.badMergeIndex < 0) m_out.badMergeIndex = int64_t(m_mergeIndex);
    }

    TokenizerJson& m_out;
    std::vector<json*> m_stack;  // open containers of the DOM
    std::string m_key;
    bool m_modelOpen = false;  // m_stack[1] is the top-level "model" object
    Capture m_capture = Capture::None;
    int m_depth = 0;  // nesting inside the captured container (1 = its direct children)
    size_t m_mergeIndex = 0;
    std::vector<std::string> m_parts;
    bool m_elementBad = false;
};

}  // namespace

Result<TokenizerJson> parseTokenizerJson(const std::string& text, const std::string& file)
{
    TokenizerJson out;
    // Growing these vectors entry by entry was a third of the load time; one vocab entry plus one merge
    // take ~75 bytes of JSON in real files, so this is about right and never far too much.
    out.vocab.reserve(text.size() / 80);
    out.merges.reserve(text.size() / 80);
    Handler handler(out);
    bool ok = false;
    try {
        ok = json::sax_parse(text, &handler);
    } catch (const json::exception& e) {
        handler.error = e.what();
    }
    if (!ok) return badFile(file, "not valid JSON: " + (handler.error.empty() ? std::string("parse error") : handler.error));
    return out;
}

}  // namespace lector::model::tokenizer_detail
