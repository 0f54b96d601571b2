// Tokenizer: a Hugging Face `tokenizer.json` byte-level BPE tokenizer (HunyuanOCR, Qwen, GPT-2 style),
// re-implemented to give exactly the ids of the Rust `tokenizers` library for the parts those files use:
// NFC/NFD/NFKC/NFKD normalizers, Split (PCRE2 regex) / ByteLevel / Digits pre-tokenizers, the BPE model
// (both merges formats, ignore_merges, byte_fallback, unk), added/special tokens, the ByteLevel decoder.
// Callers: the HunyuanOCR prompt builder (encode) and the generation loop (StreamingDecoder, decode).
// Thread-safety: a loaded Tokenizer is immutable and may be used from any number of threads at once
// (the BPE word cache inside is locked). Copies are cheap and share the loaded tables.
// Not done here: post-processing (BOS etc. are added by the prompt builder), padding, truncation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace lector::model {

class Tokenizer {
public:
    // Reads and validates a tokenizer.json. Error codes (the message always names the file):
    //   "file_not_found", "read_failed"   the file cannot be opened or read
    //   "bad_tokenizer"                   malformed JSON, missing model/vocab/merges, merges naming
    //                                     tokens not in the vocab, a regex that does not compile ...
    //   "unsupported_tokenizer"           a normalizer, pre-tokenizer, model or decoder type (or option)
    //                                     that this implementation does not handle
    // Loading the 11 MB Qwen3 file takes a few hundred ms; do it once, off the UI thread.
    static Result<Tokenizer> load(const std::filesystem::path& tokenizerJson);

    // Text -> token ids, like `tokenizer.encode(text, add_special_tokens=False)` of Hugging Face:
    // added/special tokens written literally in the text (e.g. "<｜hy_User｜>") become their ids, the rest
    // is normalized, pre-tokenized and BPE-encoded. No BOS/EOS is added. With parseSpecialTokens false,
    // special tokens in the text are encoded as plain text (HF's encode_special_tokens): use that for
    // user-supplied text that must not inject control tokens. Invalid UTF-8 in `text` is replaced by
    // U+FFFD first (never an error).
    std::vector<int32_t> encode(std::string_view text, bool parseSpecialTokens = true) const;

    // Ids -> UTF-8 text (always valid UTF-8: incomplete or invalid byte sequences become U+FFFD, as
    // Rust's from_utf8_lossy does). With skipSpecialTokens, added tokens marked special are dropped.
    // Unknown ids are ignored. Matches HF `decode(ids, skip_special_tokens=...)`; no space clean-up.
    std::string decode(std::span<const int32_t> ids, bool skipSpecialTokens) const;

    // Size of the id space: the largest id (vocab or added token) + 1. HunyuanOCR: 120818.
    int32_t vocabSize() const;
    // Id of a token string: added tokens by content ("<｜hy_User｜>"), vocab tokens in their byte-level
    // form ("Ġworld"). nullopt when there is no such token.
    std::optional<int32_t> tokenId(std::string_view token) const;
    // The token string of an id (added token content or byte-level vocab entry); empty if unknown.
    std::string_view token(int32_t id) const;
    // The raw bytes one token decodes to (may be part of a multi-byte UTF-8 character); empty if unknown.
    std::string_view tokenBytes(int32_t id) const;
    // True for added tokens flagged "special" (what skipSpecialTokens drops).
    bool isSpecial(int32_t id) const;
    // True for any entry of "added_tokens" (special or not).
    bool isAddedToken(int32_t id) const;

    const std::filesystem::path& path() const;

    struct Impl;

private:
    explicit Tokenizer(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}
    std::shared_ptr<const Impl> m_impl;
    friend class StreamingDecoder;
};

// Turns generated ids into text one id at a time, emitting only complete UTF-8 characters: bytes of a
// character split over several tokens are held back until it is complete. Concatenating every push()
// and the final finish() gives exactly Tokenizer::decode(allIds, skipSpecialTokens).
// One instance per generation stream; not thread-safe (use it from the thread that generates).
// Keeps the tokenizer's tables alive by itself.
class StreamingDecoder {
public:
    explicit StreamingDecoder(const Tokenizer& tokenizer, bool skipSpecialTokens = true);

    // Appends one id; returns the text completed by it (often empty, never partial UTF-8).
    std::string push(int32_t id);
    // Ends the stream: returns what is still held back (an unfinished character becomes U+FFFD).
    std::string finish();
    // Drops held-back bytes and starts a new stream.
    void reset();
    // Bytes held back waiting for the rest of a character (0..3).
    size_t pendingBytes() const { return m_pending.size(); }

private:
    std::shared_ptr<const Tokenizer::Impl> m_impl;
    bool m_skipSpecialTokens;
    std::string m_pending;
};

}  // namespace lector::model
