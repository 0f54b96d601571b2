// Prompt token layout and 4-axis XD-RoPE position ids of HunyuanOCR 1.0 (docs/hunyuanocr-spec.md §4.1, §5.1).
// buildInputIds() turns the tokenised prompt text and each image's token count into the prefill ids
//   BOS, [systemSep], (imageStart, image x T_img, imageEnd) per image, prompt ids, user
// and buildPositionIds() gives their positions [4, L] on the axes (p, w, h, t). Called by the model
// runner on the engine thread, and by tests; pure functions, thread-safe.
// NOTE(hytext): the image placeholder expands to T_img = R*(C+1)+2 tokens (R, C = the merged grid): the
// first carries the vision tower's image_begin row, then R rows of C cells and one newline, then image_end.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "core/common/result.h"
#include "core/model/hunyuan/config.h"

namespace lector::model::hunyuan {

// Patch grid of one image as the vision tower sees it (image_grid_thw without t): gridH x gridW
// patches of 16x16 pixels; both even.
struct ImageGrid {
    int gridH = 0;
    int gridW = 0;
};

// Number of decoder tokens of one image: (gridH/merge) * (gridW/merge + 1) + 2 (spec §3 step 4).
int imageTokenCount(const ImageGrid& grid, int mergeSize = 2);

// The prefill ids of one user turn whose images come before the text (the OCR layout, spec §4.1):
//   bos, systemSep (when withSystemTurn: 1.0's empty system message), then per image
//   imageStart, image x imageTokenCounts[k], imageEnd; then promptIds; then user.
// promptIds are the tokenizer's ids of the prompt text, without specials.
std::vector<int> buildInputIds(const TokenIds& tokens, const std::vector<int>& promptIds,
                               const std::vector<int>& imageTokenCounts, bool withSystemTurn = true);

// Position ids [numAxes, L] int64 of a prefill (spec §5.1). Every axis starts as the sequence index;
// inside the k-th run of image tokens (id tokens.image), the R*(C+1) grid tokens after the first one get
// w = column (C = the row's newline), h = row, t = k on the last three axes; p (and any further leading
// axis) stays sequential. The run's last token (image_end row) and everything after stay sequential.
// grids[k] is the k-th image's patch grid. Errors "bad_input": the number of image runs differs from
// grids.size(), or a run's length is not imageTokenCount(grids[k]) (message gives both counts).
Result<at::Tensor> buildPositionIds(const std::vector<int>& ids, const TokenIds& tokens,
                                    const std::vector<ImageGrid>& grids, int mergeSize = 2,
                                    int numAxes = 4);

// The prefill of one image followed by the prompt text (the OCR layout, with 1.0's empty system turn):
// buildInputIds() for the image's token count and buildPositionIds() for its grid, with the config's
// merge size and special ids. Errors as buildPositionIds().
struct PromptLayout {
    std::vector<int> ids;
    at::Tensor positionIds;  // [numAxes, ids.size()] int64
};
Result<PromptLayout> imagePromptLayout(const HunyuanConfig& config, const std::vector<int>& promptTextIds,
                                       const ImageGrid& grid);

// Position ids [numAxes, n] of n tokens appended at sequence indices start..start+n-1 during decoding:
// every axis equals the sequence index (spec §5.2).
at::Tensor sequentialPositionIds(int64_t start, int64_t n, int numAxes = 4);

}  // namespace lector::model::hunyuan
