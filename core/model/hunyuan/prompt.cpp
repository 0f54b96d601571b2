// Prompt layout and position ids (see prompt.h). The grid of an image starts one token after its first
// placeholder (that token holds image_begin), as in vLLM, Tencent's processor and transformers.
#include "core/model/hunyuan/prompt.h"

#include <string>

namespace lector::model::hunyuan {

int imageTokenCount(const ImageGrid& grid, int mergeSize)
{
    const int rows = grid.gridH / mergeSize;
    const int cols = grid.gridW / mergeSize;
    return rows * (cols + 1) + 2;
}

std::vector<int> buildInputIds(const TokenIds& tokens, const std::vector<int>& promptIds,
                               const std::vector<int>& imageTokenCounts, bool withSystemTurn)
{
    std::vector<int> ids;
    size_t total = 3 + promptIds.size();
    for (int n : imageTokenCounts) total += static_cast<size_t>(n) + 2;
    ids.reserve(total);
    ids.push_back(tokens.bos);
    if (withSystemTurn) ids.push_back(tokens.systemSep);
    for (int n : imageTokenCounts) {
        ids.push_back(tokens.imageStart);
        ids.insert(ids.end(), static_cast<size_t>(n), tokens.image);
        ids.push_back(tokens.imageEnd);
    }
    ids.insert(ids.end(), promptIds.begin(), promptIds.end());
    ids.push_back(tokens.user);
    return ids;
}

Result<at::Tensor> buildPositionIds(const std::vector<int>& ids, const TokenIds& tokens,
                                    const std::vector<ImageGrid>& grids, int mergeSize, int numAxes)
{
    if (numAxes < 3)
        return makeError("bad_input", "XD-RoPE needs at least 3 position axes, got " + std::to_string(numAxes));
    const int64_t length = static_cast<int64_t>(ids.size());
    at::Tensor positions = sequentialPositionIds(0, length, numAxes);  // [numAxes, L]
    auto acc = positions.accessor<int64_t, 2>();
    const int axisW = numAxes - 3, axisH = numAxes - 2, axisT = numAxes - 1;

    size_t imageIdx = 0;
    int64_t i = 0;
    while (i < length) {
        if (ids[static_cast<size_t>(i)] != tokens.image) {
            ++i;
            continue;
        }
        int64_t runEnd = i;
        while (runEnd < length && ids[static_cast<size_t>(runEnd)] == tokens.image) ++runEnd;
        if (imageIdx >= grids.size())
            return makeError("bad_input", "prompt has more image placeholder runs than the " +
                                              std::to_string(grids.size()) + " image grid(s) given");
        const ImageGrid& grid = grids[imageIdx];
        const int64_t expected = imageTokenCount(grid, mergeSize);
        if (runEnd - i != expected)
            return makeError("bad_input", "image " + std::to_string(imageIdx) + " has " +
                                              std::to_string(runEnd - i) + " placeholder tokens, its grid " +
                                              std::to_string(grid.gridH) + "x" + std::to_string(grid.gridW) +
                                              " needs " + std::to_string(expected));
        const int rows = grid.gridH / mergeSize;
        const int cols = grid.gridW / mergeSize + 1;  // + the newline column
        const int64_t gridStart = i + 1;              // token i carries image_begin
        for (int r = 0; r < rows; ++r) {
            for (int c = 0; c < cols; ++c) {
                const int64_t at = gridStart + static_cast<int64_t>(r) * cols + c;
                acc[axisW][at] = c;
                acc[axisH][at] = r;
                acc[axisT][at] = static_cast<int64_t>(imageIdx);
            }
        }
        ++imageIdx;
        i = runEnd;
    }
    if (imageIdx != grids.size())
        return makeError("bad_input", "prompt has " + std::to_string(imageIdx) +
                                          " image placeholder run(s) but " + std::to_string(grids.size()) +
                                          " image grid(s) were given");
    return positions;
}

at::Tensor sequentialPositionIds(int64_t start, int64_t n, int numAxes)
{
    // [numAxes, n]; contiguous so callers may write into it.
    return at::arange(start, start + n, at::kLong).unsqueeze(0).expand({numAxes, n}).contiguous();
}

Result<PromptLayout> imagePromptLayout(const HunyuanConfig& config, const std::vector<int>& promptTextIds,
                                       const ImageGrid& grid)
{
    const int merge = config.vision.spatialMergeSize;
    PromptLayout layout;
    layout.ids = buildInputIds(config.tokens, promptTextIds, {imageTokenCount(grid, merge)});
    auto positions = buildPositionIds(layout.ids, config.tokens, {grid}, merge);
    if (!positions.ok()) return positions.error();
    layout.positionIds = std::move(positions).value();
    return layout;
}

}  // namespace lector::model::hunyuan
